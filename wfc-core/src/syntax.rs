//! JSON and YAML parsed into one spanned value tree.
//!
//! Why our own tree: validation must point at the exact key or value that is wrong, in either
//! concrete syntax, and it must see duplicate keys (which `serde_json` and YAML loaders silently
//! collapse or reject without the first position). Both parsers feed [`SpannedValue`], whose nodes
//! and keys carry byte ranges into the source text; [`LineIndex`] turns those into line/column.
//!
//! Limits: documents nest at most [`MAX_DEPTH`] levels (jsonc-parser stops at 512; YAML is
//! measured here), so every recursive walk of the tree is bounded. YAML alias expansion is bounded by
//! saphyr's node budget (a "billion laughs" document fails with a limit diagnostic instead of
//! exhausting memory).

use std::ops::Range;

use saphyr::{LoadableYamlNode, MarkedYaml, Marker, Scalar, YamlData};

use crate::Format;
use crate::diagnostics::{Diagnostic, codes};

/// The deepest nesting a document may have. jsonc-parser counts an object and each of its
/// properties as a level, so JSON objects nest at most about 255 deep (arrays 512); YAML
/// collections, measured here, at most 512.
pub const MAX_DEPTH: usize = 512;

/// A parsed JSON/YAML value with the byte range it was written at.
#[derive(Debug, Clone, PartialEq)]
pub struct SpannedValue {
    /// What the value is.
    pub kind: ValueKind,
    /// Byte range of the value in the source text (quotes included for strings).
    pub span: Range<usize>,
}

/// An object key with the byte range it was written at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpannedKey {
    /// The key, unescaped.
    pub name: String,
    /// Byte range of the key in the source text (quotes included).
    pub span: Range<usize>,
}

/// The JSON data model. Objects keep their entries in source order, duplicates included.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, exactly as `serde_json` would hold it.
    Number(serde_json::Number),
    /// A string, unescaped.
    String(String),
    /// An array.
    Array(Vec<SpannedValue>),
    /// An object, entries in source order (duplicates kept; [`parse`] reports them).
    Object(Vec<(SpannedKey, SpannedValue)>),
}

impl ValueKind {
    /// The JSON type name, for messages ("expected a string, found an array").
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueKind::Null => "null",
            ValueKind::Bool(_) => "a Boolean",
            ValueKind::Number(_) => "a number",
            ValueKind::String(_) => "a string",
            ValueKind::Array(_) => "an array",
            ValueKind::Object(_) => "an object",
        }
    }
}

impl SpannedValue {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            ValueKind::String(s) => Some(s),
            _ => None,
        }
    }

    /// The object entries, if this is an object.
    pub fn as_object(&self) -> Option<&[(SpannedKey, SpannedValue)]> {
        match &self.kind {
            ValueKind::Object(entries) => Some(entries),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[SpannedValue]> {
        match &self.kind {
            ValueKind::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The first entry named `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&SpannedValue> {
        self.as_object()?.iter().find(|(k, _)| k.name == key).map(|(_, v)| v)
    }

    /// Converts to a `serde_json::Value` (the last of duplicate keys wins, as in serde_json).
    ///
    /// Recursion is bounded by [`MAX_DEPTH`], which every tree built by [`parse`] respects.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            ValueKind::Null => Value::Null,
            ValueKind::Bool(b) => Value::Bool(*b),
            ValueKind::Number(n) => Value::Number(n.clone()),
            ValueKind::String(s) => Value::String(s.clone()),
            ValueKind::Array(items) => Value::Array(items.iter().map(SpannedValue::to_json).collect()),
            ValueKind::Object(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.name.clone(), v.to_json())).collect())
            }
        }
    }
}

/// Maps byte offsets to 1-based line and column numbers (columns count characters).
#[derive(Debug, Clone)]
pub struct LineIndex {
    /// Byte offset at which each line starts.
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text`. Lines end at `\n` (a preceding `\r` stays part of the line's text).
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The 1-based (line, column) of byte `offset` in `text`. Offsets past the end, or inside a
    /// multi-byte character, are clamped to the nearest preceding character boundary.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let column = text.get(start..offset).map_or(0, |s| s.chars().count());
        (line + 1, column + 1)
    }

    /// The byte range of 1-based `line`, without its line terminator.
    pub fn line_range(&self, text: &str, line: usize) -> Option<Range<usize>> {
        let start = *self.starts.get(line.checked_sub(1)?)?;
        let end = self.starts.get(line).map_or(text.len(), |next| next - 1);
        let end = if text.as_bytes().get(end.wrapping_sub(1)) == Some(&b'\r') && end > start { end - 1 } else { end };
        Some(start..end)
    }
}

/// Parses `text` in the given format. Every syntax problem (and every duplicate key) becomes a
/// diagnostic; a tree is returned only when there are none.
pub fn parse(text: &str, format: Format) -> Result<SpannedValue, Vec<Diagnostic>> {
    match parse_recovering(text, format) {
        (Some(v), diags) if diags.is_empty() => Ok(v),
        (_, diags) => Err(diags),
    }
}

/// Like [`parse`], but keeps the tree when the problems found do not stop it from being built
/// (duplicate keys, non-string YAML keys, JSON numbers out of range, ...), so that validation can
/// still report everything else in the same run. The tree is `None` after a fatal syntax error.
pub fn parse_recovering(text: &str, format: Format) -> (Option<SpannedValue>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let value = match format {
        Format::Json => parse_json(text, &mut diags),
        Format::Yaml => parse_yaml(text, &mut diags),
    };
    if let Some(v) = &value {
        check_duplicates(v, &mut diags);
    }
    (value, diags)
}

/// Reports duplicate keys in every object of the tree, pointing at the later key and labelling
/// the first one. Iterative, so it does not depend on the depth limit.
fn check_duplicates(root: &SpannedValue, diags: &mut Vec<Diagnostic>) {
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        match &v.kind {
            ValueKind::Array(items) => stack.extend(items.iter()),
            ValueKind::Object(entries) => {
                let mut seen: std::collections::HashMap<&str, &SpannedKey> = Default::default();
                for (k, child) in entries {
                    if let Some(first) = seen.get(k.name.as_str()) {
                        diags.push(
                            Diagnostic::error(
                                codes::DUPLICATE_KEY,
                                format!("duplicate key `{}`", k.name),
                                k.span.clone(),
                            )
                            .with_label(first.span.clone(), "first defined here")
                            .with_help("remove one of the two entries; JSON objects cannot repeat a key"),
                        );
                    } else {
                        seen.insert(&k.name, k);
                    }
                    stack.push(child);
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON

fn parse_json(text: &str, diags: &mut Vec<Diagnostic>) -> Option<SpannedValue> {
    use jsonc_parser::{CollectOptions, CommentCollectionStrategy, ParseOptions, parse_to_ast};
    let strict = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let collect = CollectOptions { comments: CommentCollectionStrategy::Off, tokens: false };
    match parse_to_ast(text, &collect, &strict) {
        Ok(result) => match result.value {
            Some(v) => Some(from_jsonc(text, &v, diags)),
            None => {
                diags.push(
                    Diagnostic::error(codes::JSON_SYNTAX, "the document is empty", 0..0)
                        .with_help("a workflow definition is a JSON object: `{\"StartAt\": ..., \"States\": {...}}`"),
                );
                None
            }
        },
        Err(e) => {
            let range = e.range();
            let (code, help) = match e.kind() {
                jsonc_parser::errors::ParseErrorKind::NestingDepthExceeded => {
                    (codes::TOO_DEEP, Some(format!("documents may nest at most {MAX_DEPTH} levels")))
                }
                jsonc_parser::errors::ParseErrorKind::CommentsNotAllowed => {
                    (codes::JSON_SYNTAX, Some("JSON has no comments; use a `Comment` field instead".to_owned()))
                }
                jsonc_parser::errors::ParseErrorKind::TrailingCommasNotAllowed => {
                    (codes::JSON_SYNTAX, Some("remove the trailing comma".to_owned()))
                }
                _ => (codes::JSON_SYNTAX, None),
            };
            let start = range.start.min(text.len());
            let end = range.end.clamp(start, text.len());
            let mut d = Diagnostic::error(
                code,
                format!("invalid JSON: {}", lowercase_first(&e.kind().to_string())),
                start..end,
            );
            d.help = help;
            diags.push(d);
            None
        }
    }
}

fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn from_jsonc(text: &str, v: &jsonc_parser::ast::Value<'_>, diags: &mut Vec<Diagnostic>) -> SpannedValue {
    use jsonc_parser::ast::Value as J;
    // jsonc-parser limits nesting to 512 levels, so this recursion is bounded.
    match v {
        J::StringLit(s) => {
            let span = s.range.start..s.range.end;
            check_control_chars(text, &span, diags);
            SpannedValue { kind: ValueKind::String(s.value.clone().into_owned()), span }
        }
        J::NumberLit(n) => {
            let span = n.range.start..n.range.end;
            let kind = match n.value.parse::<serde_json::Number>() {
                Ok(num) => ValueKind::Number(num),
                Err(e) => {
                    diags.push(Diagnostic::error(
                        codes::JSON_SYNTAX,
                        format!("invalid JSON number `{}`: {e}", n.value),
                        span.clone(),
                    ));
                    ValueKind::Null
                }
            };
            SpannedValue { kind, span }
        }
        J::BooleanLit(b) => SpannedValue { kind: ValueKind::Bool(b.value), span: b.range.start..b.range.end },
        J::NullKeyword(n) => SpannedValue { kind: ValueKind::Null, span: n.range.start..n.range.end },
        J::Array(a) => SpannedValue {
            kind: ValueKind::Array(a.elements.iter().map(|e| from_jsonc(text, e, diags)).collect()),
            span: a.range.start..a.range.end,
        },
        J::Object(o) => {
            let entries = o
                .properties
                .iter()
                .map(|p| {
                    let key = match &p.name {
                        jsonc_parser::ast::ObjectPropName::String(s) => {
                            let span = s.range.start..s.range.end;
                            check_control_chars(text, &span, diags);
                            SpannedKey { name: s.value.clone().into_owned(), span }
                        }
                        jsonc_parser::ast::ObjectPropName::Word(w) => {
                            // Unreachable with strict options, but a word key is still a clear error.
                            let span = w.range.start..w.range.end;
                            diags.push(Diagnostic::error(
                                codes::JSON_SYNTAX,
                                "invalid JSON: object keys must be double-quoted strings",
                                span.clone(),
                            ));
                            SpannedKey { name: w.value.to_owned(), span }
                        }
                    };
                    (key, from_jsonc(text, &p.value, diags))
                })
                .collect();
            SpannedValue { kind: ValueKind::Object(entries), span: o.range.start..o.range.end }
        }
    }
}

/// Strict JSON forbids raw control characters inside strings; jsonc-parser lets them through.
fn check_control_chars(text: &str, span: &Range<usize>, diags: &mut Vec<Diagnostic>) {
    if let Some(i) = text.get(span.clone()).and_then(|raw| raw.bytes().position(|b| b < 0x20)) {
        let at = span.start + i;
        diags.push(
            Diagnostic::error(codes::JSON_SYNTAX, "invalid JSON: control character inside a string", at..at + 1)
                .with_help("escape it (`\\n`, `\\t`, `\\u0000`)"),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// YAML
//
// saphyr's `MarkedYaml` gives every node a span. Its loader builds the tree without recursion and
// bounds alias expansion (a node budget of 100,000), but cloning, hashing and dropping the tree
// recurse. So the load runs on a thread with a large stack (untouched stack pages cost nothing),
// the tree is measured and torn down iteratively, and only trees within `MAX_DEPTH` are converted.

/// Stack reserved for the YAML loading thread; only the pages actually used are committed.
const YAML_STACK: usize = 256 << 20;

fn parse_yaml(text: &str, diags: &mut Vec<Diagnostic>) -> Option<SpannedValue> {
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("wfc-yaml".to_owned())
            .stack_size(YAML_STACK)
            .spawn_scoped(scope, || {
                let mut local = Vec::new();
                let v = parse_yaml_here(text, &mut local);
                (v, local)
            })
            .ok()
            .map(|h| h.join())
    });
    match outcome {
        Some(Ok((v, local))) => {
            diags.extend(local);
            v
        }
        // Could not spawn a thread (or it failed): parse on this one.
        Some(Err(_)) | None => parse_yaml_here(text, diags),
    }
}

fn parse_yaml_here(text: &str, diags: &mut Vec<Diagnostic>) -> Option<SpannedValue> {
    let offsets = CharOffsets::new(text);
    let docs = match MarkedYaml::load_from_str(text) {
        Ok(docs) => docs,
        Err(e) => {
            let at = offsets.byte(e.marker());
            let info = e.info();
            let (code, help) = if info.contains("alias expansion") {
                (
                    codes::YAML_ALIAS_LIMIT,
                    Some("YAML anchors and aliases may expand to at most 100,000 nodes in total".to_owned()),
                )
            } else if info.contains("duplicated key") {
                (codes::DUPLICATE_KEY, Some("remove one of the entries with this key".to_owned()))
            } else if info.contains("recursion limit") {
                (codes::TOO_DEEP, Some("flow collections may nest at most 255 levels".to_owned()))
            } else {
                (codes::YAML_SYNTAX, None)
            };
            let mut d = if code == codes::DUPLICATE_KEY {
                match yaml_duplicate_key(text, at) {
                    Some((key, first)) => Diagnostic::error(code, format!("duplicate key `{}`", key.name), key.span)
                        .with_label(first, "first defined here"),
                    None => Diagnostic::error(code, "duplicate key", at..next_char_end(text, at)),
                }
            } else {
                Diagnostic::error(code, format!("invalid YAML: {info}"), at..next_char_end(text, at))
            };
            d.help = help;
            diags.push(d);
            return None;
        }
    };
    let mut docs = docs.into_iter();
    let result = match docs.next() {
        None => {
            diags.push(
                Diagnostic::error(codes::YAML_SYNTAX, "the document is empty", 0..0)
                    .with_help("a workflow definition is a mapping with `StartAt` and `States`"),
            );
            None
        }
        Some(first) => {
            let depth = yaml_depth(&first);
            let v = if depth > MAX_DEPTH {
                diags.push(
                    Diagnostic::error(
                        codes::TOO_DEEP,
                        format!("the document nests {depth} levels deep; at most {MAX_DEPTH} are allowed"),
                        offsets.range(&first.span.start, &first.span.end),
                    )
                    .with_help("flatten the definition"),
                );
                None
            } else if matches!(first.data, YamlData::BadValue) {
                diags.push(
                    Diagnostic::error(codes::YAML_SYNTAX, "the document is empty", 0..0)
                        .with_help("a workflow definition is a mapping with `StartAt` and `States`"),
                );
                None
            } else {
                Some(from_yaml(&first, &offsets, diags))
            };
            teardown(first);
            v
        }
    };
    for extra in docs {
        if result.is_some() && !matches!(extra.data, YamlData::BadValue) {
            let r = offsets.range(&extra.span.start, &extra.span.end);
            diags.push(
                Diagnostic::error(codes::YAML_SYNTAX, "a definition file must hold exactly one YAML document", r)
                    .with_help("remove the `---` and everything after it, or move it to its own file"),
            );
        }
        teardown(extra);
    }
    result
}

/// saphyr reports a duplicate key only where it repeats. For the usual block style, the key
/// and its first occurrence can be recovered from the text: the first occurrence is the nearest
/// earlier line with the same key at the same column, before indentation drops below it (which
/// would leave the mapping). Returns the repeated key and the first occurrence's span.
fn yaml_duplicate_key(text: &str, at: usize) -> Option<(SpannedKey, Range<usize>)> {
    let line_start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let col = at - line_start;
    let line_end = text.get(at..)?.find('\n').map_or(text.len(), |i| at + i);
    let rest = text.get(at..line_end)?;
    let key = plain_key(rest)?;
    let is_key_at = |line: &str| line.get(col..).and_then(plain_key) == Some(key);
    let mut end = line_start;
    while end > 0 {
        let start = text.get(..end - 1)?.rfind('\n').map_or(0, |i| i + 1);
        let line = text.get(start..end - 1)?;
        end = start;
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let prefix_ok = line.get(..col).is_some_and(|p| p.chars().all(|c| c == ' ' || c == '-'));
        if prefix_ok && is_key_at(line) {
            let first = start + col;
            return Some((SpannedKey { name: key.to_owned(), span: at..at + key.len() }, first..first + key.len()));
        }
        if indent < col {
            return None;
        }
    }
    None
}

/// The key of a block mapping entry at the start of `line` (`key: ...` or `key:`), unquoted only.
fn plain_key(line: &str) -> Option<&str> {
    let colon = line.find(": ").or_else(|| line.trim_end().ends_with(':').then(|| line.trim_end().len() - 1))?;
    let key = line.get(..colon)?.trim_end();
    (!key.is_empty() && !key.starts_with(['"', '\'', '{', '[', '-', '#', '?'])).then_some(key)
}

fn next_char_end(text: &str, at: usize) -> usize {
    text.get(at..).and_then(|rest| rest.chars().next()).map_or(at, |c| at + c.len_utf8())
}

/// The nesting depth of a YAML tree, measured without recursion.
fn yaml_depth(root: &MarkedYaml<'_>) -> usize {
    let mut max = 0;
    let mut stack = vec![(root, 0usize)];
    while let Some((node, d)) = stack.pop() {
        max = max.max(d);
        match &node.data {
            YamlData::Sequence(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            YamlData::Mapping(map) => {
                for (k, v) in map.iter() {
                    stack.push((k, d + 1));
                    stack.push((v, d + 1));
                }
            }
            YamlData::Tagged(_, inner) => stack.push((inner, d + 1)),
            _ => {}
        }
    }
    max
}

/// Drops a YAML tree without recursion (the derived drop would recurse once per level).
fn teardown(root: MarkedYaml<'_>) {
    let mut stack = vec![root];
    while let Some(mut node) = stack.pop() {
        match std::mem::replace(&mut node.data, YamlData::BadValue) {
            YamlData::Sequence(items) => stack.extend(items),
            YamlData::Mapping(map) => {
                for (k, v) in map {
                    stack.push(k);
                    stack.push(v);
                }
            }
            YamlData::Tagged(_, inner) => stack.push(*inner),
            _ => {}
        }
    }
}

/// Converts saphyr's character-indexed markers to byte offsets.
struct CharOffsets<'t> {
    text: &'t str,
    /// Byte offset of each character; empty when the text is ASCII (offsets are then identical).
    offsets: Vec<usize>,
}

impl<'t> CharOffsets<'t> {
    fn new(text: &'t str) -> CharOffsets<'t> {
        let offsets = if text.is_ascii() { Vec::new() } else { text.char_indices().map(|(i, _)| i).collect() };
        CharOffsets { text, offsets }
    }

    fn byte(&self, m: &Marker) -> usize {
        if self.offsets.is_empty() {
            m.index().min(self.text.len())
        } else {
            self.offsets.get(m.index()).copied().unwrap_or(self.text.len())
        }
    }

    /// A node's byte range, with trailing whitespace trimmed (block collections end where the
    /// next token starts, which may be lines later).
    fn range(&self, start: &Marker, end: &Marker) -> Range<usize> {
        let s = self.byte(start);
        let mut e = self.byte(end).max(s);
        while e > s && self.text.as_bytes().get(e - 1).is_some_and(u8::is_ascii_whitespace) {
            e -= 1;
        }
        s..e
    }
}

/// Converts a YAML tree of depth at most `MAX_DEPTH` (checked by the caller).
fn from_yaml(node: &MarkedYaml<'_>, offsets: &CharOffsets<'_>, diags: &mut Vec<Diagnostic>) -> SpannedValue {
    let span = offsets.range(&node.span.start, &node.span.end);
    let kind = match &node.data {
        YamlData::Value(Scalar::Null) => ValueKind::Null,
        YamlData::Value(Scalar::Boolean(b)) => ValueKind::Bool(*b),
        YamlData::Value(Scalar::Integer(i)) => ValueKind::Number((*i).into()),
        YamlData::Value(Scalar::FloatingPoint(f)) => match serde_json::Number::from_f64(f.0) {
            Some(n) => ValueKind::Number(n),
            None => {
                diags.push(
                    Diagnostic::error(
                        codes::YAML_SYNTAX,
                        "infinite and NaN numbers cannot be represented in JSON",
                        span.clone(),
                    )
                    .with_help("quote the value if it is meant as a string"),
                );
                ValueKind::Null
            }
        },
        YamlData::Value(Scalar::String(s)) => ValueKind::String(s.to_string()),
        YamlData::Sequence(items) => ValueKind::Array(items.iter().map(|i| from_yaml(i, offsets, diags)).collect()),
        YamlData::Mapping(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map.iter() {
                let kspan = offsets.range(&k.span.start, &k.span.end);
                let name = match &k.data {
                    YamlData::Value(Scalar::String(s)) => s.to_string(),
                    other => {
                        let what = match other {
                            YamlData::Value(Scalar::Null) => "null",
                            YamlData::Value(Scalar::Boolean(_)) => "a Boolean",
                            YamlData::Value(Scalar::Integer(_) | Scalar::FloatingPoint(_)) => "a number",
                            YamlData::Sequence(_) => "a sequence",
                            YamlData::Mapping(_) => "a mapping",
                            _ => "not a string",
                        };
                        let raw = offsets.text.get(kspan.clone()).unwrap_or("");
                        let mut d = Diagnostic::error(
                            codes::NON_STRING_KEY,
                            format!("mapping keys must be strings, but this key is {what}"),
                            kspan.clone(),
                        );
                        if !matches!(other, YamlData::Sequence(_) | YamlData::Mapping(_)) {
                            d = d.with_help(format!("quote the key: `\"{}\"`", raw.replace('"', "\\\"")));
                        }
                        diags.push(d);
                        raw.to_owned()
                    }
                };
                entries.push((SpannedKey { name, span: kspan }, from_yaml(v, offsets, diags)));
            }
            ValueKind::Object(entries)
        }
        YamlData::Tagged(tag, _) => {
            diags.push(
                Diagnostic::error(
                    codes::YAML_SYNTAX,
                    format!("YAML tag `{}{}` is not supported", tag.handle, tag.suffix),
                    span.clone(),
                )
                .with_help("remove the tag; definitions use plain JSON-compatible values"),
            );
            ValueKind::Null
        }
        YamlData::Representation(..) => {
            diags.push(
                Diagnostic::error(codes::YAML_SYNTAX, "this tagged YAML scalar is not supported", span.clone())
                    .with_help("remove the tag"),
            );
            ValueKind::Null
        }
        YamlData::Alias(_) | YamlData::BadValue => {
            diags.push(Diagnostic::error(codes::YAML_SYNTAX, "invalid YAML value", span.clone()));
            ValueKind::Null
        }
    };
    SpannedValue { kind, span }
}
