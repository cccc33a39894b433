//! JSONPath in the Jayway dialect that ASL uses, with the result shapes AWS produces.
//!
//! PUBLIC API CONTRACT (other crates rely on exactly these names):
//! - [`Path::parse`], [`Path::as_str`], [`Path::root`], [`Path::is_definite`], [`Path::is_identity`],
//!   [`Path::select`]
//! - [`ReferencePath::parse`], [`ReferencePath::as_str`], [`ReferencePath::get`], [`ReferencePath::set`],
//!   [`ReferencePath::is_identity`]
//! - [`PathError`] (with a byte offset into the path text), [`SelectError`], [`SetError`], [`Root`].
//!
//! Both path types serialize as their text and re-parse on deserialize.
//!
//! Additions for code generation and tools: [`Path::segments`] (the syntax tree, see [`ast`]),
//! [`Path::is_singular`], [`Path::select_nodes`] (the RFC 9535 node list), [`Path::canonical`],
//! [`ReferencePath::steps`] and [`ReferencePath::as_path`].
//!
//! # Dialect
//!
//! The syntax is RFC 9535 plus what Jayway (the library behind AWS Step Functions) accepts:
//! `$$` for the context object, a dot before a bracket (`$.a.['b c']`), and dot-notation names
//! with any character that has no syntactic meaning (`$.key-dash`, `$.2`). Filters support
//! `== != < <= > >= && || !`, parentheses, literals, existence tests, `$` and `@` queries,
//! RFC 9535's `length()`, `count()` and `value()`, and Jayway's word operators `in nin subsetof
//! anyof noneof size empty contains` with array literals (`@.size in ['S', 'M']`). A path (or a
//! query inside a filter) may end in a Jayway path function: `length() size() min() max() avg()
//! stddev() sum() keys() first() last()`. Not supported yet (rejected with a message saying so):
//! regular expressions (Jayway's `=~`, RFC 9535's `match()`/`search()`) and path functions that
//! take arguments (`concat()`, `append()`, `index()`).
//!
//! # Result shapes (Jayway)
//!
//! A *definite* path (names and single indices only) gives its node, or
//! [`SelectError::NotFound`]. Jayway's "merge" case, a final bracket of several names
//! (`$.a['b','c']`), is definite too and gives an object of the named members that exist; after
//! an indefinite part (`$.items[*]['id','name']`) it gives an array of such objects, one per
//! object matched. Any other path gives an array of every match, possibly empty. A filter applied to an object
//! (rather than an array) tests the object itself, as Jayway does.

pub mod ast;
mod eval;
pub mod fields;
mod parser;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use ast::{PathFunction, Segment, Selector, SingularStep};
use fields::FieldPath;

/// What a path starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// `$`: the state's input (or whatever document the caller gives).
    Input,
    /// `$$`: the context object.
    Context,
    /// `$name`: the workflow variable `name` (ASL `Assign`). Callers pass the same document
    /// as for `$$`: the context object carries the variables in scope under [`VARIABLES_KEY`].
    Variable(String),
}

/// The member of the context-object document under which the variables in scope travel
/// (an object of name → value). It starts with a NUL character, so no ASL path can name it,
/// and `$$` paths never show it.
pub const VARIABLES_KEY: &str = "\u{0}variables";

/// The value of variable `name` in a context-object document that carries variables.
pub fn variable<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc.get(VARIABLES_KEY)?.get(name)
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

/// How [`Path::select`] shapes its result, decided once at parse time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Names and single indices only: the node itself.
    Singular,
    /// Singular up to a final bracket of two or more names: an object of those members.
    Merge,
    /// Indefinite up to a final bracket of two or more names: an array with, for each object
    /// the rest selects, an object of those members (Jayway merges a final multi-name bracket
    /// per node).
    IndefiniteMerge,
    /// Anything else: an array of all matches.
    Indefinite,
}

/// A JSONPath (ASL "Path").
#[derive(Debug, Clone)]
pub struct Path {
    text: String,
    root: Root,
    segments: Vec<Segment>,
    /// Byte offset of each segment in `text`.
    offsets: Vec<usize>,
    /// The shape of what the segments select.
    shape: Shape,
    /// A final Jayway path function, and the byte offset of its `.`.
    function: Option<(PathFunction, usize)>,
    /// The compiled direct-access form, set by [`Path::compile_direct`] (the optimizer).
    direct: Option<FieldPath>,
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.text == other.text
    }
}

impl Path {
    /// Parses a path: `$` (the input) or `$$` (the context object) followed by segments.
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let parsed = parser::parse(text)?;
        let shape = shape_of(&parsed.segments);
        Ok(Path {
            text: text.to_owned(),
            root: parsed.root,
            segments: parsed.segments,
            offsets: parsed.offsets,
            shape,
            function: parsed.function,
            direct: None,
        })
    }

    /// The path's text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the path starts from.
    pub fn root(&self) -> Root {
        self.root.clone()
    }

    /// The path's segments (its syntax tree after the root), without a final path function.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The Jayway path function the path ends with (`$.items.length()`), if any.
    pub fn function(&self) -> Option<PathFunction> {
        self.function.map(|(f, _)| f)
    }

    /// Whether the path can only ever select one node (Jayway "definite"): then [`Path::select`]
    /// returns that node rather than an array. True for names and single indices, for
    /// Jayway's merge case (a final `['a','b']`), whose result is one object, and for any path
    /// ending in a path function, whose result is one value.
    pub fn is_definite(&self) -> bool {
        self.function.is_some() || matches!(self.shape, Shape::Singular | Shape::Merge)
    }

    /// Whether the path uses only names and single indices (RFC 9535 "singular query"): it
    /// identifies at most one node and can be compiled to a chain of `get`s.
    pub fn is_singular(&self) -> bool {
        self.function.is_none() && self.shape == Shape::Singular
    }

    /// Whether the path is exactly `$` (selects the whole document; callers skip the work).
    pub fn is_identity(&self) -> bool {
        self.root == Root::Input && self.segments.is_empty()
    }

    /// Compiles a `$` path of names and indices only (not `$` itself) into direct field access
    /// ([`fields`]), which [`Path::select`], [`Path::select_ref`] and [`FieldPath::take`] then follow.
    /// Returns whether it compiled something (false for other paths and when already compiled).
    pub fn compile_direct(&mut self) -> bool {
        if self.direct.is_some() || self.root != Root::Input || !self.is_singular() {
            return false;
        }
        self.direct = FieldPath::compile(&self.segments);
        self.direct.is_some()
    }

    /// The compiled direct-access form, if [`Path::compile_direct`] made one.
    pub fn direct(&self) -> Option<&FieldPath> {
        self.direct.as_ref()
    }

    /// The node a direct path names in `doc`, by reference (no copy); `None` when it is
    /// missing or the path has no direct form, and the caller uses [`Path::select`].
    #[inline]
    pub fn select_ref<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        self.direct.as_ref()?.get(doc)
    }

    /// Selects from `doc` with Jayway's result shape: a definite path gives its node (or
    /// [`SelectError::NotFound`]), an indefinite path gives an array of every match.
    ///
    /// `doc` is what the root means: the input for `$` paths, the context object for `$$` paths.
    ///
    /// A final path function applies to what the rest of the path gives: the node for a definite
    /// path, else the array of matches (so `$..price.sum()` sums every price). One Jayway rule is
    /// kept: `length()`/`size()` after a path that starts with `..` counts the children of every
    /// match (`$..book.length()` is the number of books). When the function has no value (the
    /// sum of no numbers, the length of a number, or a definite path that is missing) the result
    /// is [`SelectError::NotFound`].
    pub fn select(&self, doc: &Value) -> Result<Value, SelectError> {
        if let Some(direct) = &self.direct {
            return direct.get(doc).cloned().ok_or_else(|| self.not_found(doc));
        }
        match &self.root {
            Root::Input => self.select_root(doc),
            Root::Variable(name) => match variable(doc, name) {
                Some(value) => self.select_root(value),
                None => Err(SelectError::NotFound { path: self.text.clone(), input: format!("${name}") }),
            },
            // The variables are an implementation detail of the document: `$$` shows only the
            // context object.
            Root::Context if doc.get(VARIABLES_KEY).is_some() => {
                let mut ctx = doc.clone();
                if let Some(m) = ctx.as_object_mut() {
                    m.shift_remove(VARIABLES_KEY);
                }
                self.select_root(&ctx)
            }
            Root::Context => self.select_root(doc),
        }
    }

    /// The document this path's root names: `input` for `$` paths, `context` for `$$` and
    /// variable paths (the context-object document carries the variables).
    pub fn root_doc<'a>(&self, input: &'a Value, context: &'a Value) -> &'a Value {
        match self.root {
            Root::Input => input,
            Root::Context | Root::Variable(_) => context,
        }
    }

    /// [`Path::select`] from the document its root names ([`Path::root_doc`]).
    pub fn select_in(&self, input: &Value, context: &Value) -> Result<Value, SelectError> {
        self.select(self.root_doc(input, context))
    }

    fn select_root(&self, doc: &Value) -> Result<Value, SelectError> {
        let Some((f, _)) = self.function else { return self.select_segments(doc) };
        let starts_with_search = matches!(self.segments.first(), Some(Segment::Descendant(_)));
        let value = if self.shape == Shape::Singular {
            // Walk without cloning what the function reads.
            eval::walk_singular(&self.segments, doc).and_then(|v| eval::path_function(f, v))
        } else if starts_with_search && matches!(f, PathFunction::Length | PathFunction::Size) {
            // Jayway rewrites `$..x.length()` as `length($..x.*)`: it counts the children of every
            // match, so `$..book.length()` is the number of books.
            let nodes = eval::select_nodes(&self.segments, doc, doc);
            let children = nodes.iter().map(|n| n.as_array().map_or(0, Vec::len) + n.as_object().map_or(0, Map::len));
            Some(Value::from(children.sum::<usize>()))
        } else {
            eval::path_function(f, &self.select_segments(doc)?)
        };
        value.ok_or_else(|| self.not_found(doc))
    }

    fn select_segments(&self, doc: &Value) -> Result<Value, SelectError> {
        match self.shape {
            Shape::Singular => eval::walk_singular(&self.segments, doc).cloned().ok_or_else(|| self.not_found(doc)),
            Shape::Merge => {
                let (last, parent_path) = self.segments.split_last().ok_or_else(|| self.not_found(doc))?;
                let parent = eval::walk_singular(parent_path, doc).and_then(Value::as_object);
                let parent = parent.ok_or_else(|| self.not_found(doc))?;
                Ok(merge(parent, last))
            }
            Shape::IndefiniteMerge => {
                let Some((last, init)) = self.segments.split_last() else { return Ok(Value::Array(Vec::new())) };
                let parents = eval::select_nodes(init, doc, doc);
                Ok(Value::Array(parents.into_iter().filter_map(Value::as_object).map(|m| merge(m, last)).collect()))
            }
            Shape::Indefinite => Ok(Value::Array(self.select_nodes(doc).into_iter().cloned().collect())),
        }
    }

    /// The RFC 9535 node list: every node the path selects, in order, by reference, without
    /// Jayway's shaping (a definite path gives zero or one node; the merge case gives the named
    /// members one by one). A final path function is not applied (its result is not a node of
    /// the document): this gives the nodes it would apply to.
    pub fn select_nodes<'a>(&self, doc: &'a Value) -> Vec<&'a Value> {
        let doc = match &self.root {
            Root::Variable(name) => match variable(doc, name) {
                Some(v) => v,
                None => return Vec::new(),
            },
            _ => doc,
        };
        if self.shape == Shape::Singular {
            return eval::walk_singular(&self.segments, doc).into_iter().collect();
        }
        eval::select_nodes(&self.segments, doc, doc)
    }

    /// A canonical text for the path: bracket notation with single-quoted names
    /// (`$['a'][0][*]`), which parses back to the same segments.
    pub fn canonical(&self) -> String {
        self.to_string()
    }

    fn not_found(&self, doc: &Value) -> SelectError {
        SelectError::NotFound { path: self.text.clone(), input: preview(doc) }
    }
}

/// The canonical form (see [`Path::canonical`]); use [`Path::as_str`] for the text as written.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.root {
            Root::Input => f.write_str("$")?,
            Root::Context => f.write_str("$$")?,
            Root::Variable(name) => write!(f, "${name}")?,
        }
        ast::write_segments(f, &self.segments)?;
        match self.function {
            Some((func, _)) => write!(f, "{func}"),
            None => Ok(()),
        }
    }
}

fn shape_of(segments: &[Segment]) -> Shape {
    let Some((last, init)) = segments.split_last() else {
        return Shape::Singular;
    };
    let init_singular = init.iter().all(|s| s.as_singular().is_some());
    let last_merges = matches!(last, Segment::Child(sels)
        if sels.len() > 1 && sels.iter().all(|s| matches!(s, Selector::Name(_))));
    match (init_singular, last.as_singular().is_some(), last_merges) {
        (true, true, _) => Shape::Singular,
        (true, false, true) => Shape::Merge,
        (false, _, true) => Shape::IndefiniteMerge,
        _ => Shape::Indefinite,
    }
}

/// Jayway's merge of a final multi-name bracket: the named members that exist, in the order the
/// path names them.
fn merge(parent: &Map<String, Value>, last: &Segment) -> Value {
    let mut merged = Map::new();
    for sel in last.selectors() {
        if let Selector::Name(n) = sel
            && let Some(v) = parent.get(n)
        {
            merged.insert(n.clone(), v.clone());
        }
    }
    Value::Object(merged)
}

/// A Reference Path: a path that identifies exactly one node, usable as a write target.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencePath(Path);

impl ReferencePath {
    /// Parses a reference path (names, quoted names and indices only, starting at `$`).
    pub fn parse(text: &str) -> Result<ReferencePath, PathError> {
        let path = Path::parse(text)?;
        if path.root == Root::Context {
            return Err(PathError {
                offset: 0,
                message: "a Reference Path cannot start with `$$`: the context object is read-only".into(),
            });
        }
        if let Root::Variable(name) = &path.root {
            return Err(PathError {
                offset: 0,
                message: format!(
                    "a Reference Path cannot start with the variable `${name}`; assign variables with `Assign`"
                ),
            });
        }
        if let Some((f, offset)) = path.function {
            return Err(PathError {
                offset,
                message: format!(
                    "not a Reference Path: `{}()` computes a value rather than naming a node; a Reference Path may only use `.name`, `['name']` and `[index]`",
                    f.name()
                ),
            });
        }
        for (i, seg) in path.segments.iter().enumerate() {
            if seg.as_singular().is_some() {
                continue;
            }
            let offset = path.offsets.get(i).copied().unwrap_or(0);
            let what = match seg {
                Segment::Descendant(_) => "`..` (descendant search) can select many nodes",
                Segment::Child(sels) if sels.len() > 1 => "`,` (a union of selectors) selects several nodes",
                Segment::Child(sels) => match sels.first() {
                    Some(Selector::Wildcard) => "`*` (wildcard) can select many nodes",
                    Some(Selector::Slice(_)) => "`:` (a slice) can select many nodes",
                    Some(Selector::Filter(_)) => "`?` (a filter) can select many nodes",
                    _ => "this segment can select many nodes",
                },
            };
            return Err(PathError {
                offset,
                message: format!(
                    "not a Reference Path: {what}; a Reference Path must identify a single node, so it may only use `.name`, `['name']` and `[index]`"
                ),
            });
        }
        Ok(ReferencePath(path))
    }

    /// The path's text as written.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The same path as a general [`Path`].
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path's steps after `$`, in order (for code generation).
    pub fn steps(&self) -> impl Iterator<Item = SingularStep<'_>> + Clone {
        self.0.segments.iter().filter_map(Segment::as_singular)
    }

    /// Whether the path is exactly `$`.
    pub fn is_identity(&self) -> bool {
        self.0.is_identity()
    }

    /// [`Path::compile_direct`] for this path (every Reference Path other than `$` compiles).
    pub fn compile_direct(&mut self) -> bool {
        self.0.compile_direct()
    }

    /// The node the path names, if present.
    pub fn get<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        if let Some(direct) = &self.0.direct {
            return direct.get(doc);
        }
        eval::walk_singular(&self.0.segments, doc)
    }

    /// Writes `value` at the path, creating missing parent objects. `$` replaces the whole
    /// document. Fails, leaving `doc` unchanged, when a step meets a value that is not an object
    /// (for a name) or an array (for an index), including `null`, or an index is out of range.
    pub fn set(&self, doc: &mut Value, value: Value) -> Result<(), SetError> {
        set_steps(doc, self.steps(), &self.0.text, value)
    }
}

/// Writes `value` at the node `steps` name in `doc` (the steps of a Reference Path whose text is
/// `text`), as [`ReferencePath::set`] does: missing parent objects are created; a step that meets
/// a value that is not an object (for a name) or an array (for an index), or an index out of
/// range, fails and leaves `doc` unchanged. Generated code calls it with the steps of its
/// ResultPath built at compile time; the interpreter through [`ReferencePath::set`].
pub fn set_steps<'s, I>(doc: &mut Value, steps: I, text: &str, value: Value) -> Result<(), SetError>
where
    I: Iterator<Item = SingularStep<'s>> + Clone,
{
    // Check first, without touching `doc`, so that a failure leaves it as it was (and the
    // error can show it) without cloning the document on the success path.
    if !can_set(doc, steps.clone()) {
        return Err(SetError::NotAContainer { path: text.to_owned(), input: preview(doc) });
    }
    let mut cur = doc;
    for st in steps {
        cur = match (st, cur) {
            (SingularStep::Name(n), Value::Object(m)) => m.entry(n).or_insert_with(|| Value::Object(Map::new())),
            (SingularStep::Index(i), Value::Array(a)) => {
                let len = a.len();
                match eval::resolve_index(len, i).and_then(|at| a.get_mut(at)) {
                    Some(v) => v,
                    // Unreachable after `can_set`; kept as an error rather than a panic.
                    None => {
                        return Err(SetError::NotAContainer { path: text.to_owned(), input: String::new() });
                    }
                }
            }
            (_, _) => return Err(SetError::NotAContainer { path: text.to_owned(), input: String::new() }),
        };
    }
    *cur = value;
    Ok(())
}

/// Whether [`set_steps`] would succeed: every existing step is a container of the right kind,
/// and the steps past the first missing name are all names (they will be created as objects; an
/// index into a new object can never be in range).
fn can_set<'s>(doc: &Value, mut steps: impl Iterator<Item = SingularStep<'s>>) -> bool {
    let mut cur = doc;
    while let Some(st) = steps.next() {
        match (st, cur) {
            (SingularStep::Name(n), Value::Object(m)) => match m.get(n) {
                Some(v) => cur = v,
                None => return steps.all(|s| matches!(s, SingularStep::Name(_))),
            },
            (SingularStep::Index(i), Value::Array(a)) => match eval::resolve_index(a.len(), i).and_then(|at| a.get(at))
            {
                Some(v) => cur = v,
                None => return false,
            },
            _ => return false,
        }
    }
    true
}

/// The node `steps` (the steps of a singular `$` path) lead to in `doc`, by reference; `None`
/// when a step is missing. The same walk as a singular [`Path::select`], for generated code,
/// which builds the steps at compile time.
#[inline]
pub fn get_steps<'a>(doc: &'a Value, steps: &[SingularStep<'_>]) -> Option<&'a Value> {
    let mut cur = doc;
    for st in steps {
        cur = eval::step(cur, *st)?;
    }
    Some(cur)
}

/// The node `steps` lead to, mutably (as [`get_steps`] finds it); `None` when a step is missing.
pub fn get_steps_mut<'a>(doc: &'a mut Value, steps: &[SingularStep<'_>]) -> Option<&'a mut Value> {
    let mut cur = doc;
    for st in steps {
        cur = match (st, cur) {
            (SingularStep::Name(n), Value::Object(m)) => m.get_mut(*n)?,
            (SingularStep::Index(i), Value::Array(a)) => {
                let at = eval::resolve_index(a.len(), *i)?;
                a.get_mut(at)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// The node `steps` lead to, moved out of `doc` (which is consumed) instead of copied;
/// `Err(doc)` gives the document back, untouched, when a step is missing.
pub fn take_steps(mut doc: Value, steps: &[SingularStep<'_>]) -> Result<Value, Value> {
    if get_steps(&doc, steps).is_none() {
        return Err(doc);
    }
    let mut cur = &mut doc;
    for st in steps {
        let next = match (st, cur) {
            (SingularStep::Name(n), Value::Object(m)) => m.get_mut(*n),
            (SingularStep::Index(i), Value::Array(a)) => {
                let len = a.len();
                eval::resolve_index(len, *i).and_then(|at| a.get_mut(at))
            }
            _ => None,
        };
        // `get_steps` found every step, so this is never `None`; `Null` rather than a panic.
        match next {
            Some(v) => cur = v,
            None => return Ok(Value::Null),
        }
    }
    Ok(std::mem::take(cur))
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

/// A path serializes as its text; one compiled for direct access as `{"path": text, "direct":
/// true}`, so that the compiled form survives the IR's trip into generated code.
impl Serialize for Path {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.direct {
            None => s.serialize_str(&self.text),
            Some(_) => SerializedPath::Compiled { path: self.text.clone(), direct: true }.serialize(s),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SerializedPath {
    Text(String),
    Compiled { path: String, direct: bool },
}

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Path, D::Error> {
        let (text, direct) = match SerializedPath::deserialize(d)? {
            SerializedPath::Text(text) => (text, false),
            SerializedPath::Compiled { path, direct } => (path, direct),
        };
        let mut path = Path::parse(&text).map_err(serde::de::Error::custom)?;
        if direct && !path.compile_direct() {
            return Err(serde::de::Error::custom(format!(
                "the path `{text}` is marked for direct access but is not a `$` path of names and indices"
            )));
        }
        Ok(path)
    }
}

impl Serialize for ReferencePath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ReferencePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ReferencePath, D::Error> {
        let path = Path::deserialize(d)?;
        let mut reference = ReferencePath::parse(path.as_str()).map_err(serde::de::Error::custom)?;
        reference.0.direct = path.direct;
        Ok(reference)
    }
}

#[cfg(test)]
mod tests;
