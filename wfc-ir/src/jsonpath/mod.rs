//! JSONPath in the Jayway dialect that ASL uses, with the result shapes AWS produces.
//!
//! PUBLIC API CONTRACT (other crates rely on exactly these names):
//! - [`Path::parse`], [`Path::as_str`], [`Path::root`], [`Path::is_definite`], [`Path::is_identity`],
//!   [`Path::select`]
//! - [`ReferencePath::parse`], [`ReferencePath::as_str`], [`ReferencePath::get`], [`ReferencePath::set`],
//!   [`ReferencePath::is_identity`]
//! - [`PathError`] (with a byte offset into the path text), [`SelectError`], [`SetError`], [`Root`].
//! Both path types serialize as their text and re-parse on deserialize.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// What a path starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// `$`: the state's input (or whatever document the caller gives).
    Input,
    /// `$$`: the context object.
    Context,
}

/// A path that failed to parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset} of the path)")]
pub struct PathError {
    /// Byte offset into the path text where the problem is.
    pub offset: usize,
    /// What is wrong, and how to fix it where that is clear.
    pub message: String,
}

/// A path that could not select from a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// A definite path named something the document does not have.
    #[error("the JSONPath '{path}' could not be found in the input '{input}'")]
    NotFound {
        /// The path text.
        path: String,
        /// The document, compact JSON (truncated for very large documents).
        input: String,
    },
}

/// A reference path that could not write into a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// A step of the path met a value that is not an object (or array, for an index).
    #[error("unable to apply ReferencePath {path} to input {input}")]
    NotAContainer {
        /// The path text.
        path: String,
        /// The document, compact JSON (truncated for very large documents).
        input: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Name(String),
    Index(i64),
}

/// A JSONPath (ASL "Path").
#[derive(Debug, Clone)]
pub struct Path {
    text: String,
    root: Root,
    steps: Vec<Step>,
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.text == other.text
    }
}

impl Path {
    /// Parses a path. PLACEHOLDER: only `$`, `$$`, `.name`, `['name']` and `[n]` steps so far.
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let (root, rest, base) = if let Some(r) = text.strip_prefix("$$") {
            (Root::Context, r, 2)
        } else if let Some(r) = text.strip_prefix('$') {
            (Root::Input, r, 1)
        } else {
            return Err(PathError { offset: 0, message: "a path must begin with `$`".into() });
        };
        let steps = parse_steps(rest, base)?;
        Ok(Path { text: text.to_owned(), root, steps })
    }

    /// The path's text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the path starts from.
    pub fn root(&self) -> Root {
        self.root.clone()
    }

    /// Whether the path can only ever select one node (Jayway "definite"): then [`Path::select`]
    /// returns that node rather than an array.
    pub fn is_definite(&self) -> bool {
        true
    }

    /// Whether the path is exactly `$` (selects the whole document; callers skip the work).
    pub fn is_identity(&self) -> bool {
        self.root == Root::Input && self.steps.is_empty()
    }

    /// Selects from `doc` with Jayway's result shape: a definite path gives its node (or
    /// [`SelectError::NotFound`]), an indefinite path gives an array of every match.
    pub fn select(&self, doc: &Value) -> Result<Value, SelectError> {
        get(&self.steps, doc).cloned().ok_or_else(|| SelectError::NotFound { path: self.text.clone(), input: preview(doc) })
    }
}

/// A Reference Path: a path that identifies exactly one node, usable as a write target.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencePath(Path);

impl ReferencePath {
    /// Parses a reference path (names, quoted names and indices only).
    pub fn parse(text: &str) -> Result<ReferencePath, PathError> {
        Path::parse(text).map(ReferencePath)
    }

    /// The path's text as written.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// Whether the path is exactly `$`.
    pub fn is_identity(&self) -> bool {
        self.0.is_identity()
    }

    /// The node the path names, if present.
    pub fn get<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        get(&self.0.steps, doc)
    }

    /// Writes `value` at the path, creating missing parent objects. `$` replaces the whole document.
    pub fn set(&self, doc: &mut Value, value: Value) -> Result<(), SetError> {
        let err = |doc: &Value| SetError::NotAContainer { path: self.0.text.clone(), input: preview(doc) };
        let mut cur = &mut *doc;
        let snapshot = cur.clone();
        for step in &self.0.steps {
            cur = match step {
                Step::Name(n) => match cur {
                    Value::Object(m) => m.entry(n.clone()).or_insert(Value::Null),
                    Value::Null => {
                        *cur = Value::Object(Default::default());
                        cur.as_object_mut().map(|m| m.entry(n.clone()).or_insert(Value::Null)).ok_or_else(|| err(&snapshot))?
                    }
                    _ => return Err(err(&snapshot)),
                },
                Step::Index(i) => match cur {
                    Value::Array(a) if *i >= 0 && (*i as usize) < a.len() => &mut a[*i as usize],
                    _ => return Err(err(&snapshot)),
                },
            };
        }
        *cur = value;
        Ok(())
    }
}

fn get<'a>(steps: &[Step], doc: &'a Value) -> Option<&'a Value> {
    let mut cur = doc;
    for step in steps {
        cur = match step {
            Step::Name(n) => cur.as_object()?.get(n)?,
            Step::Index(i) => cur.as_array()?.get(usize::try_from(*i).ok()?)?,
        };
    }
    Some(cur)
}

fn parse_steps(mut rest: &str, mut offset: usize) -> Result<Vec<Step>, PathError> {
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return Err(PathError { offset: offset + 1, message: "expected a field name after `.`".into() });
            }
            steps.push(Step::Name(r[..end].to_owned()));
            offset += 1 + end;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").ok_or(PathError { offset, message: "unclosed `['`".into() })?;
            steps.push(Step::Name(r[..end].to_owned()));
            offset += 2 + end + 2;
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or(PathError { offset, message: "unclosed `[`".into() })?;
            let i = r[..end].trim().parse::<i64>().map_err(|_| PathError { offset: offset + 1, message: "expected an array index".into() })?;
            steps.push(Step::Index(i));
            offset += 1 + end + 1;
            rest = &r[end + 1..];
        } else {
            return Err(PathError { offset, message: "expected `.` or `[`".into() });
        }
    }
    Ok(steps)
}

/// Compact JSON of `doc`, cut to a readable length for error messages.
pub fn preview(doc: &Value) -> String {
    let mut s = doc.to_string();
    if s.len() > 1024 {
        let mut cut = 1024;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

impl Serialize for Path {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Path, D::Error> {
        let text = String::deserialize(d)?;
        Path::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Serialize for ReferencePath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ReferencePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ReferencePath, D::Error> {
        let text = String::deserialize(d)?;
        ReferencePath::parse(&text).map_err(serde::de::Error::custom)
    }
}
