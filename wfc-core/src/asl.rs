//! The Amazon States Language front end: spanned tree → validation → [`wfc_ir::Workflow`].
//!
//! Scope: the 2016 spec plus the AWS additions the IR has room for (payload templates with `.$`
//! paths, `ResultSelector`, `TimeoutSecondsPath`/`HeartbeatSecondsPath`, the Wait `*Path` forms,
//! the Choice `*Path` operands, `Is*` and `StringMatches`, `MaxDelaySeconds`/`JitterStrategy`,
//! Fail `ErrorPath`/`CausePath`, intrinsic functions in `.$` template values). JSONata is rejected
//! with its own code rather than crashing or being silently ignored.
//!
//! How it works: one pass walks the tree, checks every field against a per-state-type whitelist
//! ([`STATE_FIELDS`]), validates values and builds IR directly. State names of a machine are
//! collected before its states are read, so `Next` targets resolve to indices on the spot; a
//! target the scope lacks is kept and reported at the end, when every scope is known (so a
//! transition into another Parallel branch gets its own message). Reachability runs per scope
//! after that. Every problem is collected; the IR is returned only when there are no errors.
//! Recursion (Choice rule nesting, Parallel branches, templates) is bounded by explicit limits
//! and by the syntax tree's own depth limit.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;
use wfc_ir::{
    Assign, Catcher, ChoiceBranch, ChoiceState, Comparison, ComputedString, Condition, FailState, Jitter, JsonataExpr,
    JsonataTemplate, Location, MapState, Operand, Operator, ParallelState, PassState, Path, ReferencePath, Retrier,
    Root, Seconds, State, StateId, StateKind, StateMachine, SucceedState, TaskState, Template, Transition,
    WaitDuration, WaitState, Workflow,
};

use crate::diagnostics::{Diagnostic, codes};
use crate::syntax::{self, LineIndex, SpannedKey, SpannedValue, ValueKind};
use crate::{Diagnostics, Features, Format, Loaded, Source};

mod credentials;
mod map_fields;

/// Deepest nesting of Choice rules (`And`/`Or`/`Not`) accepted. AWS rejects deep nesting too
/// (TOO_DEEPLY_NESTED) without documenting the limit; 128 is far beyond any real condition.
pub const MAX_CHOICE_DEPTH: usize = 128;
/// Deepest nesting of Parallel states accepted (a Parallel inside a branch of a Parallel ...).
pub const MAX_PARALLEL_DEPTH: usize = 32;
/// Longest state name accepted, in characters (2016 spec).
pub const MAX_STATE_NAME_CHARS: usize = 128;
/// Largest TimeoutSeconds/HeartbeatSeconds/IntervalSeconds/MaxAttempts AWS accepts.
const MAX_SECONDS: u64 = 99_999_999;
/// Largest MaxDelaySeconds AWS accepts.
const MAX_DELAY_SECONDS: u64 = 31_622_400;

/// The fields each state type accepts: the whitelist behind "unknown field" diagnostics.
/// A new AWS field is a one-line change here (plus reading it in the state's lowering).
pub const STATE_FIELDS: &[(&str, &[&str])] = &[
    (
        "Pass",
        &[
            "Type",
            "Comment",
            "QueryLanguage",
            "InputPath",
            "OutputPath",
            "Parameters",
            "Result",
            "ResultPath",
            "Next",
            "End",
            "Assign",
            "Output",
        ],
    ),
    (
        "Task",
        &[
            "Type",
            "Comment",
            "QueryLanguage",
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Resource",
            "TimeoutSeconds",
            "TimeoutSecondsPath",
            "HeartbeatSeconds",
            "HeartbeatSecondsPath",
            "Retry",
            "Catch",
            "Next",
            "End",
            "Assign",
            "Arguments",
            "Output",
            "Credentials",
        ],
    ),
    (
        "Choice",
        &["Type", "Comment", "QueryLanguage", "InputPath", "OutputPath", "Choices", "Default", "Assign", "Output"],
    ),
    (
        "Wait",
        &[
            "Type",
            "Comment",
            "QueryLanguage",
            "InputPath",
            "OutputPath",
            "Seconds",
            "Timestamp",
            "SecondsPath",
            "TimestampPath",
            "Next",
            "End",
            "Assign",
            "Output",
        ],
    ),
    ("Succeed", &["Type", "Comment", "QueryLanguage", "InputPath", "OutputPath", "Output"]),
    ("Fail", &["Type", "Comment", "QueryLanguage", "Error", "Cause", "ErrorPath", "CausePath"]),
    (
        "Parallel",
        &[
            "Type",
            "Comment",
            "QueryLanguage",
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Branches",
            "Retry",
            "Catch",
            "Next",
            "End",
            "Assign",
            "Arguments",
            "Output",
        ],
    ),
    (
        "Map",
        &[
            "Type",
            "Comment",
            "QueryLanguage",
            "InputPath",
            "OutputPath",
            "ItemsPath",
            "ItemSelector",
            "Parameters",
            "ItemProcessor",
            "Iterator",
            "MaxConcurrency",
            "ResultSelector",
            "ResultPath",
            "Retry",
            "Catch",
            "Next",
            "End",
            "Assign",
            "Items",
            "Output",
            "MaxConcurrencyPath",
            "ItemReader",
            "ItemBatcher",
            "ResultWriter",
            "Label",
            "ToleratedFailureCount",
            "ToleratedFailureCountPath",
            "ToleratedFailurePercentage",
            "ToleratedFailurePercentagePath",
        ],
    ),
];

/// The fields of a Map's `ItemProcessor` (or legacy `Iterator`).
const PROCESSOR_FIELDS: &[&str] = &["StartAt", "States", "Comment", "ProcessorConfig"];

const TOP_FIELDS: &[&str] = &["StartAt", "States", "Comment", "Version", "TimeoutSeconds", "QueryLanguage"];
const BRANCH_FIELDS: &[&str] = &["StartAt", "States", "Comment"];
const RETRIER_FIELDS: &[&str] =
    &["ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment"];
const CATCHER_FIELDS: &[&str] = &["ErrorEquals", "Next", "ResultPath", "Comment", "Assign", "Output"];
/// Fields that exist only in JSONPath states (AWS rejects them in JSONata states).
const JSONPATH_ONLY_FIELDS: &[&str] = &[
    "InputPath",
    "OutputPath",
    "Parameters",
    "ResultSelector",
    "ResultPath",
    "Result",
    "TimeoutSecondsPath",
    "HeartbeatSecondsPath",
    "SecondsPath",
    "TimestampPath",
    "ItemsPath",
    "ErrorPath",
    "CausePath",
    "MaxConcurrencyPath",
    "ToleratedFailureCountPath",
    "ToleratedFailurePercentagePath",
];
/// Fields that exist only in JSONata states.
const JSONATA_ONLY_FIELDS: &[&str] = &["Arguments", "Output", "Items"];
/// Longest variable name AWS accepts.
const MAX_VARIABLE_NAME_CHARS: usize = 80;
/// The intrinsic functions AWS allows in Fail `ErrorPath`/`CausePath`: those returning a string.
const STRING_INTRINSICS: &[&str] = &[
    "States.ArrayGetItem",
    "States.Base64Encode",
    "States.Base64Decode",
    "States.Format",
    "States.JsonToString",
    "States.Hash",
    "States.UUID",
];
/// Fields of AWS features that exist but that wfc does not support yet, with the reason.
const UNSUPPORTED_FIELDS: &[(&str, &str)] = &[];

/// The predefined error names (`States.*`) accepted in `ErrorEquals`.
const PREDEFINED_ERRORS: &[&str] = wfc_ir::errors::PREDEFINED;

/// Parses, validates and lowers an ASL definition (JSON, or YAML for `.yaml`/`.yml` paths).
/// Every problem is collected before this fails; warnings of a valid definition come back in
/// [`Loaded::warnings`].
pub fn load(source: Source<'_>) -> Result<Loaded, Diagnostics> {
    load_with(source, Features::COMPILED)
}

/// [`load`], accepting only the optional languages in `features` (a JSONata definition is error
/// `WFC0230` without `features.jsonata`).
pub fn load_with(source: Source<'_>, features: Features) -> Result<Loaded, Diagnostics> {
    let format = Format::from_path(source.path);
    // Recoverable syntax problems (duplicate keys, ...) are reported together with validation's.
    let (tree, syntax_diags) = syntax::parse_recovering(source.text, format);
    let Some(tree) = tree else {
        return Err(Diagnostics::new(source.path, source.text, syntax_diags));
    };
    let mut cx = Cx::new(source.text);
    cx.diags = syntax_diags;
    cx.jsonata_available = features.and_compiled().jsonata;
    let workflow = cx.workflow(&tree, workflow_name(source.path));
    cx.finish();
    let diags = Diagnostics::new(source.path, source.text, cx.diags);
    match workflow {
        Some(workflow) if !diags.has_errors() => Ok(Loaded { workflow, warnings: diags }),
        _ => Err(diags),
    }
}

/// The file stem up to the first `.`: `workflows/order.asl.json` → `order`.
fn workflow_name(path: &str) -> String {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    if stem.is_empty() { "workflow".to_owned() } else { stem.to_owned() }
}

/// One `States` block: the top level or a Parallel branch.
#[derive(Debug, Default)]
struct Scope {
    /// State names in definition order, with the span of their key.
    names: Vec<(String, Range<usize>)>,
    index: HashMap<String, StateId>,
    /// Transitions out of each state (for reachability).
    edges: Vec<Vec<StateId>>,
    start: Option<StateId>,
    /// Some state could not be understood (unknown type, ...): its transitions are unknown, so
    /// reachability would only produce noise.
    broken: bool,
    /// Some state ends the machine (End, Succeed, Fail).
    has_terminal: bool,
    /// States whose name duplicates an earlier one (already reported; not also "unreachable").
    duplicates: Vec<StateId>,
    states_span: Range<usize>,
    /// The scope this one is nested in (a Parallel branch's or Map processor's enclosing scope).
    parent: Option<usize>,
    /// Variables assigned by this scope's states, with where.
    assigned: Vec<(String, Range<usize>)>,
    /// Variables read by this scope's states, with where.
    reads: Vec<(String, Range<usize>)>,
}

/// A transition target that its scope does not have, reported once every scope is known.
#[derive(Debug)]
struct Dangling {
    scope: usize,
    name: String,
    span: Range<usize>,
    field: &'static str,
}

struct Cx<'t> {
    text: &'t str,
    lines: LineIndex,
    diags: Vec<Diagnostic>,
    scopes: Vec<Scope>,
    /// Every state name of the whole machine: (scope, key span), for duplicates and hints.
    all_names: HashMap<String, (usize, Range<usize>)>,
    dangling: Vec<Dangling>,
    /// Scopes being lowered, innermost last (variables are recorded in the last).
    scope_stack: Vec<usize>,
    /// The machine's `QueryLanguage` is JSONata.
    jsonata_machine: bool,
    /// The state being lowered is a JSONata state.
    jsonata: bool,
    /// JSONata can be used (the `jsonata` feature); when not, the first use is error WFC0230.
    jsonata_available: bool,
    /// WFC0230 has been reported for JSONata (once per definition: it is one fix).
    jsonata_off_reported: bool,
}

/// An object's entries, for field lookups.
#[derive(Clone, Copy)]
struct Obj<'a> {
    value: &'a SpannedValue,
    entries: &'a [(SpannedKey, SpannedValue)],
}

impl<'a> Obj<'a> {
    fn get(&self, key: &str) -> Option<&'a SpannedValue> {
        self.entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v)
    }
    fn key(&self, key: &str) -> Option<&'a SpannedKey> {
        self.entries.iter().find(|(k, _)| k.name == key).map(|(k, _)| k)
    }
    fn span(&self) -> Range<usize> {
        self.value.span.clone()
    }
    /// A short span at the start of the object (its opening brace), so "missing field" points at
    /// one place instead of underlining a whole multi-line object.
    fn head(&self) -> Range<usize> {
        let s = self.value.span.start;
        s..(s + 1).min(self.value.span.end.max(s))
    }
}

impl<'t> Cx<'t> {
    fn new(text: &'t str) -> Cx<'t> {
        Cx {
            text,
            lines: LineIndex::new(text),
            diags: Vec::new(),
            scopes: Vec::new(),
            all_names: HashMap::new(),
            dangling: Vec::new(),
            scope_stack: Vec::new(),
            jsonata_machine: false,
            jsonata: false,
            jsonata_available: wfc_ir::jsonata::AVAILABLE,
            jsonata_off_reported: false,
        }
    }

    fn error(&mut self, code: &'static str, message: impl Into<String>, span: Range<usize>) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(code, message, span));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn warn(&mut self, code: &'static str, message: impl Into<String>, span: Range<usize>) -> &mut Diagnostic {
        self.diags.push(Diagnostic::warning(code, message, span));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn location(&self, offset: usize) -> Location {
        let (line, column) = self.lines.line_col(self.text, offset);
        Location { line: u32::try_from(line).unwrap_or(u32::MAX), column: u32::try_from(column).unwrap_or(u32::MAX) }
    }

    // -----------------------------------------------------------------------------------------
    // Generic field helpers

    fn object<'a>(&mut self, v: &'a SpannedValue, what: &str) -> Option<Obj<'a>> {
        match v.as_object() {
            Some(entries) => Some(Obj { value: v, entries }),
            None => {
                self.error(
                    codes::WRONG_TYPE,
                    format!("{what} must be an object, found {}", v.kind.type_name()),
                    v.span.clone(),
                );
                None
            }
        }
    }

    /// Reports every field of `obj` not in `allowed`. `context` names the object in messages.
    fn check_fields(&mut self, obj: Obj<'_>, allowed: &[&str], context: &str) {
        for (k, _) in obj.entries {
            if allowed.contains(&k.name.as_str()) {
                continue;
            }
            if let Some((_, why)) = UNSUPPORTED_FIELDS.iter().find(|(f, _)| *f == k.name) {
                self.error(
                    codes::UNKNOWN_FIELD,
                    format!("field `{}` is not supported in {context}", k.name),
                    k.span.clone(),
                )
                .help = Some(format!("{why}; remove the field"));
                continue;
            }
            let d =
                self.error(codes::UNKNOWN_FIELD, format!("unknown field `{}` in {context}", k.name), k.span.clone());
            d.help = Some(match suggest(&k.name, allowed.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("{context} accepts: {}", allowed.join(", ")),
            });
        }
    }

    fn string<'a>(&mut self, obj: Obj<'a>, key: &str) -> Option<(&'a str, &'a SpannedValue)> {
        let v = obj.get(key)?;
        match v.as_str() {
            Some(s) => Some((s, v)),
            None => {
                self.error(
                    codes::WRONG_TYPE,
                    format!("`{key}` must be a string, found {}", v.kind.type_name()),
                    v.span.clone(),
                );
                None
            }
        }
    }

    fn required_string<'a>(&mut self, obj: Obj<'a>, key: &str, context: &str) -> Option<(&'a str, &'a SpannedValue)> {
        if obj.get(key).is_none() {
            // A misspelt key already got "unknown field ... did you mean"; don't say it twice.
            if !has_typo_of(obj, key) {
                self.error(
                    codes::MISSING_FIELD,
                    format!("{context} is missing the required field `{key}`"),
                    obj.head(),
                );
            }
            return None;
        }
        self.string(obj, key)
    }

    fn comment(&mut self, obj: Obj<'_>) -> Option<String> {
        let (s, v) = self.string(obj, "Comment")?;
        if s.is_empty() {
            self.warn(codes::EMPTY_COMMENT, "`Comment` is empty", v.span.clone()).help =
                Some("remove it or say something".to_owned());
        }
        Some(s.to_owned())
    }

    /// An unsigned integer field. `code` is used for range problems, WRONG_TYPE for non-numbers.
    fn integer(&mut self, v: &SpannedValue, key: &str, code: &'static str, min: u64, max: u64) -> Option<u64> {
        let n = match &v.kind {
            ValueKind::Number(n) => n,
            other => {
                self.error(
                    codes::WRONG_TYPE,
                    format!("`{key}` must be an integer, found {}", other.type_name()),
                    v.span.clone(),
                );
                return None;
            }
        };
        let requirement = if min == 0 { "a non-negative integer" } else { "a positive integer" };
        match n.as_u64() {
            Some(i) if i >= min && i <= max => Some(i),
            Some(i) if i > max => {
                self.error(code, format!("`{key}` must be at most {max}, found {i}"), v.span.clone());
                None
            }
            _ => {
                let d = self.error(code, format!("`{key}` must be {requirement}, found {n}"), v.span.clone());
                if n.as_f64().is_some_and(|f| f.fract() == 0.0 && f >= min as f64) {
                    d.help = Some(format!("write it without a fraction: `{}`", n.as_f64().unwrap_or_default() as u64));
                }
                None
            }
        }
    }

    /// Where a `PathError` offset points in the source: exact when the string is written without
    /// escapes (quoted JSON or a plain YAML scalar), otherwise the whole string.
    fn inner_span(&self, v: &SpannedValue, s: &str, offset: usize) -> Range<usize> {
        let raw = self.text.get(v.span.clone()).unwrap_or("");
        let base = if raw.len() >= 2 && raw.get(1..raw.len() - 1) == Some(s) {
            Some(v.span.start + 1)
        } else if raw == s {
            Some(v.span.start)
        } else {
            None
        };
        match base {
            // Point at the offending character; at the very end of the path (nothing there to
            // underline), the whole value is clearer than an empty span.
            Some(b) if offset < s.len() => {
                let at = b + offset;
                let end = s.get(offset..).and_then(|r| r.chars().next()).map_or(at, |c| at + c.len_utf8());
                if end > at { at..end } else { v.span.clone() }
            }
            _ => v.span.clone(),
        }
    }

    /// Parses a Path string; `field` names it in messages.
    fn path_str(&mut self, s: &str, v: &SpannedValue, field: &str) -> Option<Path> {
        if s.starts_with("States.") {
            self.error(
                codes::INTRINSIC_UNSUPPORTED,
                format!("an intrinsic function cannot be used in `{field}`, which takes a path"),
                v.span.clone(),
            )
            .help = Some(
                "intrinsic functions work in `.$` values of Parameters and ResultSelector; compute the value there"
                    .to_owned(),
            );
            return None;
        }
        match Path::parse(s) {
            Ok(p) => {
                if let Root::Variable(name) = p.root() {
                    self.read_var(name, v.span.clone());
                }
                Some(p)
            }
            Err(e) => {
                let span = self.inner_span(v, s, e.offset);
                let d = self.error(codes::BAD_PATH, format!("invalid path in `{field}`: {}", e.message), span);
                if !s.starts_with('$') {
                    d.help = Some(format!("paths start with `$`, e.g. `$.{s}`"));
                }
                None
            }
        }
    }

    /// A Path-valued field that must be a string (no `null`).
    fn path_field(&mut self, obj: Obj<'_>, key: &str) -> Option<Path> {
        let v = obj.get(key)?;
        match &v.kind {
            ValueKind::String(s) => self.path_str(s, v, key),
            ValueKind::Null => {
                self.error(codes::NULL_PATH, format!("`{key}` cannot be null"), v.span.clone()).help =
                    Some("give a path such as `$.field`, or remove the field".to_owned());
                None
            }
            other => {
                self.error(
                    codes::WRONG_TYPE,
                    format!("`{key}` must be a path string, found {}", other.type_name()),
                    v.span.clone(),
                );
                None
            }
        }
    }

    /// InputPath/OutputPath: absent → `$`, `null` → `None`, a string → its path.
    fn io_path(&mut self, obj: Obj<'_>, key: &str) -> Option<Path> {
        match obj.get(key) {
            None => Path::parse("$").ok(),
            Some(v) if matches!(v.kind, ValueKind::Null) => None,
            Some(_) => self.path_field(obj, key),
        }
    }

    /// ResultPath (a Reference Path): absent → `$`, `null` → `None`.
    fn result_path(&mut self, obj: Obj<'_>) -> Option<ReferencePath> {
        let v = match obj.get("ResultPath") {
            None => return ReferencePath::parse("$").ok(),
            Some(v) => v,
        };
        match &v.kind {
            ValueKind::Null => None,
            ValueKind::String(s) => {
                if s.starts_with("States.") {
                    self.error(
                        codes::INTRINSIC_UNSUPPORTED,
                        "`ResultPath` cannot be an intrinsic function",
                        v.span.clone(),
                    );
                    return None;
                }
                match ReferencePath::parse(s) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        let span = self.inner_span(v, s, e.offset);
                        let d = self.error(
                            codes::BAD_REFERENCE_PATH,
                            // The parser's message already says "not a Reference Path: why";
                            // only the why follows here.
                            format!(
                                "`ResultPath` must be a Reference Path: {}",
                                e.message.strip_prefix("not a Reference Path: ").unwrap_or(&e.message)
                            ),
                            span,
                        );
                        d.help = Some(if s.starts_with("$$") {
                            "ResultPath writes into the state's input; it cannot target the context object `$$`"
                                .to_owned()
                        } else {
                            "a Reference Path names one node with `.field`, `['field']` and `[index]` steps only"
                                .to_owned()
                        });
                        None
                    }
                }
            }
            other => {
                self.error(
                    codes::WRONG_TYPE,
                    format!("`ResultPath` must be a path string or null, found {}", other.type_name()),
                    v.span.clone(),
                );
                None
            }
        }
    }

    /// An intrinsic function call (`States.Format(...)`) in the `.$` value `field`, with arity
    /// and literal argument types checked; errors point into the call where the string is
    /// written without escapes.
    fn intrinsic(&mut self, s: &str, v: &SpannedValue, field: &str) -> Option<wfc_ir::intrinsics::Intrinsic> {
        match wfc_ir::intrinsics::Intrinsic::parse(s) {
            Ok(i) => {
                fn walk(call: &wfc_ir::intrinsics::Call, out: &mut Vec<String>) {
                    for arg in &call.args {
                        match arg {
                            wfc_ir::intrinsics::Arg::Path(p) => {
                                if let Root::Variable(n) = p.root() {
                                    out.push(n);
                                }
                            }
                            wfc_ir::intrinsics::Arg::Call(c) => walk(c, out),
                            _ => {}
                        }
                    }
                }
                let mut names = Vec::new();
                walk(i.call(), &mut names);
                for n in names {
                    self.read_var(n, v.span.clone());
                }
                Some(i)
            }
            Err(e) => {
                let span = self.inner_span(v, s, e.offset);
                self.error(
                    codes::BAD_INTRINSIC,
                    format!("invalid intrinsic function in `{field}`: {}", e.message),
                    span,
                );
                None
            }
        }
    }

    /// A payload template (`Parameters`, `ResultSelector`). Bounded by the tree's depth limit.
    fn template(&mut self, v: &SpannedValue) -> Template {
        match &v.kind {
            ValueKind::Object(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                let mut dynamic = false;
                for (k, val) in entries {
                    if let Some(name) = k.name.strip_suffix(".$") {
                        dynamic = true;
                        let t = match &val.kind {
                            ValueKind::String(s) if s.starts_with("States.") => match self.intrinsic(s, val, &k.name) {
                                Some(i) => Template::Intrinsic(i),
                                None => Template::Literal(Value::Null),
                            },
                            ValueKind::String(s) => match self.path_str(s, val, &k.name) {
                                Some(p) => Template::Path(p),
                                None => Template::Literal(Value::Null),
                            },
                            other => {
                                let d = self.error(
                                    codes::BAD_TEMPLATE_PATH,
                                    format!(
                                        "the value of `{}` must be a path string, found {}",
                                        k.name,
                                        other.type_name()
                                    ),
                                    val.span.clone(),
                                );
                                d.help = Some(format!(
                                    "a key ending in `.$` takes a path; for a literal value, name the key `{name}`"
                                ));
                                Template::Literal(Value::Null)
                            }
                        };
                        out.push((name.to_owned(), t));
                    } else {
                        if let Some(text) = val.as_str()
                            && (text == "$"
                                || text.starts_with("$.")
                                || text.starts_with("$$.")
                                || text.starts_with("$["))
                        {
                            // AWS's NO_DOLLAR warning: almost always a forgotten `.$`.
                            let d = self.warn(
                                codes::PATH_WITHOUT_DOLLAR_KEY,
                                format!("`{}` looks like a path but is passed as a literal string", k.name),
                                val.span.clone(),
                            );
                            d.labels.push((k.span.clone(), "this key has no `.$` suffix".to_owned()));
                            d.help = Some(format!("to select the value at the path, name the key `{}.$`", k.name));
                        }
                        let t = self.template(val);
                        dynamic |= !matches!(t, Template::Literal(_));
                        out.push((k.name.clone(), t));
                    }
                }
                if dynamic { Template::Object(out) } else { Template::Literal(v.to_json()) }
            }
            ValueKind::Array(items) => {
                let ts: Vec<Template> = items.iter().map(|i| self.template(i)).collect();
                if ts.iter().all(|t| matches!(t, Template::Literal(_))) {
                    Template::Literal(v.to_json())
                } else {
                    Template::Array(ts)
                }
            }
            _ => Template::Literal(v.to_json()),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Machines

    fn workflow(&mut self, tree: &SpannedValue, name: String) -> Option<Workflow> {
        let Some(top) = tree.as_object().map(|entries| Obj { value: tree, entries }) else {
            self.error(
                codes::WRONG_TYPE,
                format!("a state machine definition must be a JSON object, found {}", tree.kind.type_name()),
                tree.span.clone(),
            )
            .help = Some(
                "start from `{\"StartAt\": \"First\", \"States\": {\"First\": {\"Type\": \"Succeed\"}}}`".to_owned(),
            );
            return None;
        };
        self.check_fields(top, TOP_FIELDS, "a state machine");
        self.jsonata_machine = self.query_language(top) == Some(true);
        let comment = self.comment(top);
        let version = self.string(top, "Version").map(|(s, v)| {
            if s != "1.0" {
                self.error(codes::BAD_VERSION, format!("unsupported `Version` \"{s}\""), v.span.clone()).help =
                    Some("the only ASL version is \"1.0\"".to_owned());
            }
            s.to_owned()
        });
        let timeout_seconds = top
            .get("TimeoutSeconds")
            .and_then(|v| self.integer(v, "TimeoutSeconds", codes::BAD_MACHINE_TIMEOUT, 1, MAX_SECONDS));
        let machine = self.machine(top, 0, "a state machine")?;
        Some(Workflow { name, comment, version, timeout_seconds, machine })
    }

    /// `QueryLanguage`: `Some(true)` for JSONata, `Some(false)` for JSONPath, `None` when absent
    /// (or invalid, which is reported).
    fn query_language(&mut self, obj: Obj<'_>) -> Option<bool> {
        let (s, v) = self.string(obj, "QueryLanguage")?;
        match s {
            "JSONPath" => Some(false),
            "JSONata" => {
                self.require_jsonata(v.span.clone());
                Some(true)
            }
            other => {
                self.error(codes::BAD_QUERY_LANGUAGE, format!("unknown `QueryLanguage` \"{other}\""), v.span.clone())
                    .help = Some("the query languages are \"JSONPath\" (the default) and \"JSONata\"".to_owned());
                None
            }
        }
    }

    /// A state's query language: its own `QueryLanguage`, else the machine's. A JSONata machine
    /// cannot have JSONPath states (AWS: "'QueryLanguage' can not be 'JSONPath' if set to
    /// 'JSONata' for whole state machine"). Also reports the other language's fields.
    fn state_language(&mut self, obj: Obj<'_>, ty: &str) -> bool {
        let own = self.query_language(obj);
        if own == Some(false) && self.jsonata_machine {
            let span = obj.get("QueryLanguage").map_or(obj.head(), |v| v.span.clone());
            self.error(
                codes::QUERY_LANGUAGE_DOWNGRADE,
                "`QueryLanguage` cannot be \"JSONPath\" in a state machine whose `QueryLanguage` is \"JSONata\"",
                span,
            )
            .help = Some("remove the state's `QueryLanguage`, or the machine's, and use JSONPath per state".to_owned());
        }
        let jsonata = own.unwrap_or(self.jsonata_machine);
        let (forbidden, lang, other) = if jsonata {
            (JSONPATH_ONLY_FIELDS, "JSONata", "JSONPath")
        } else {
            (JSONATA_ONLY_FIELDS, "JSONPath", "JSONata")
        };
        for (k, _) in obj.entries {
            let name = k.name.as_str();
            // Map's legacy `Parameters` is its ItemSelector; Result only exists on Pass.
            if forbidden.contains(&name) {
                let help = match (jsonata, name) {
                    (true, "Parameters") => "use `Arguments` (Task, Parallel) or `ItemSelector` (Map)".to_owned(),
                    (true, "InputPath" | "ResultSelector" | "ResultPath" | "OutputPath" | "Result") => {
                        "use `Output` (with `$states.input` and `$states.result`) and `Assign`".to_owned()
                    }
                    (true, "ItemsPath") => "use `Items`".to_owned(),
                    (true, _) => format!("give `{}` as a `{{% %}}` expression", name.trim_end_matches("Path")),
                    (false, _) => {
                        "set `\"QueryLanguage\": \"JSONata\"` on the state (or the machine) to use it".to_owned()
                    }
                };
                self.error(
                    codes::WRONG_LANGUAGE_FIELD,
                    format!("`{name}` is a {other} field; this {ty} state uses {lang}"),
                    k.span.clone(),
                )
                .help = Some(help);
            }
        }
        jsonata
    }

    // -----------------------------------------------------------------------------------------
    // Variables and JSONata

    /// Records that the current scope reads variable `name` (checked in [`Cx::finish`]).
    fn read_var(&mut self, name: String, span: Range<usize>) {
        if let Some(&scope) = self.scope_stack.last()
            && let Some(s) = self.scopes.get_mut(scope)
        {
            s.reads.push((name, span));
        }
    }

    /// Reports, once per definition, that JSONata is needed at `span` and this build has none.
    /// Returns whether JSONata is available.
    fn require_jsonata(&mut self, span: Range<usize>) -> bool {
        if self.jsonata_available {
            return true;
        }
        if !self.jsonata_off_reported {
            self.jsonata_off_reported = true;
            self.error(
                codes::FEATURE_OFF,
                "this definition uses JSONata, which this build of wfc leaves out (cargo feature `jsonata`)",
                span,
            )
            .help = Some(
                "enable it on the runtime: `wfc-runtime = { version = \"0.1\", features = [\"jsonata\"] }` \
                 (for wfc-build in build.rs, on wfc-build as well); the `wfc` command has it"
                    .to_owned(),
            );
        }
        false
    }

    /// A `{% %}` expression (the text between the delimiters of string `s`, the value `v`).
    fn jsonata_expr(&mut self, s: &str, v: &SpannedValue, field: &str) -> Option<JsonataExpr> {
        let text = wfc_ir::jsonata::expression_text(s)?;
        if !self.require_jsonata(v.span.clone()) {
            return None;
        }
        match JsonataExpr::parse(text) {
            Ok(e) => {
                for name in e.variables_read() {
                    self.read_var(name, v.span.clone());
                }
                Some(e)
            }
            Err(e) => {
                let span = match e.offset {
                    Some(o) => self.inner_span(v, s, o + 2),
                    None => v.span.clone(),
                };
                self.error(
                    codes::BAD_JSONATA,
                    format!("invalid JSONata expression in `{field}`: {}", e.message),
                    span,
                )
                .help =
                    Some("JSONata strings are `{% expression %}`; quote strings inside with single quotes".to_owned());
                None
            }
        }
    }

    /// A JSONata template (`Arguments`, `Output`, `Items`, `ItemSelector`, Assign values): any
    /// string leaf that is a whole `{% %}` is an expression.
    fn jsonata_template(&mut self, v: &SpannedValue, field: &str) -> JsonataTemplate {
        match &v.kind {
            ValueKind::String(s) if wfc_ir::jsonata::expression_text(s).is_some() => {
                match self.jsonata_expr(s, v, field) {
                    Some(e) => JsonataTemplate::Expr(e),
                    None => JsonataTemplate::Literal(Value::Null),
                }
            }
            ValueKind::Object(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for (k, val) in entries {
                    // AWS keeps such a key and its value literally (recorded), so this is a
                    // warning: the definition is valid, but the `.$` is most likely a mistake.
                    if k.name.ends_with(".$") {
                        self.warn(
                            codes::WRONG_LANGUAGE_FIELD,
                            format!(
                                "`{}`: a key ending in `.$` means nothing in a JSONata state; the key and its value are kept as they are",
                                k.name
                            ),
                            k.span.clone(),
                        )
                        .help = Some(format!(
                            "to compute it, name the key `{}` and give its value as a `{{% %}}` expression",
                            k.name.trim_end_matches(".$")
                        ));
                    }
                    out.push((k.name.clone(), self.jsonata_template(val, &format!("{field}/{}", k.name))));
                }
                if out.iter().all(|(_, t)| matches!(t, JsonataTemplate::Literal(_))) {
                    JsonataTemplate::Literal(v.to_json())
                } else {
                    JsonataTemplate::Object(out)
                }
            }
            ValueKind::Array(items) => {
                let ts: Vec<JsonataTemplate> =
                    items.iter().enumerate().map(|(i, t)| self.jsonata_template(t, &format!("{field}/{i}"))).collect();
                if ts.iter().all(|t| matches!(t, JsonataTemplate::Literal(_))) {
                    JsonataTemplate::Literal(v.to_json())
                } else {
                    JsonataTemplate::Array(ts)
                }
            }
            _ => JsonataTemplate::Literal(v.to_json()),
        }
    }

    /// A JSONata-only template field (`Output`, `Arguments`, `Items`), read in JSONata states.
    fn jsonata_field(&mut self, obj: Obj<'_>, key: &str) -> Option<JsonataTemplate> {
        if !self.jsonata {
            return None;
        }
        obj.get(key).map(|v| self.jsonata_template(v, key))
    }

    /// `Assign`: an object of variable name → value, in the state's query language. The names
    /// are recorded for the scope checks in [`Cx::finish`].
    fn assign(&mut self, obj: Obj<'_>) -> Option<Assign> {
        let v = obj.get("Assign")?;
        let Some(entries) = v.as_object() else {
            self.error(
                codes::BAD_ASSIGN,
                format!("`Assign` must be an object of variable names and values, found {}", v.kind.type_name()),
                v.span.clone(),
            );
            return None;
        };
        let jsonata = self.jsonata;
        let mut path_entries = Vec::new();
        let mut jsonata_entries = Vec::new();
        for (k, val) in entries {
            let (name, dynamic) = match k.name.strip_suffix(".$") {
                Some(n) if !jsonata => (n, true),
                _ => (k.name.as_str(), false),
            };
            if !self.variable_name(name, k) {
                continue;
            }
            if let Some(&scope) = self.scope_stack.last()
                && let Some(s) = self.scopes.get_mut(scope)
            {
                s.assigned.push((name.to_owned(), k.span.clone()));
            }
            if jsonata {
                jsonata_entries.push((name.to_owned(), self.jsonata_template(val, &format!("Assign/{name}"))));
            } else if dynamic {
                let t = match val.as_str() {
                    Some(s) if s.starts_with("States.") => self.intrinsic(s, val, &k.name).map(Template::Intrinsic),
                    Some(s) => self.path_str(s, val, &k.name).map(Template::Path),
                    None => {
                        self.error(
                            codes::BAD_TEMPLATE_PATH,
                            format!("the value of `{}` must be a path string, found {}", k.name, val.kind.type_name()),
                            val.span.clone(),
                        );
                        None
                    }
                };
                path_entries.push((name.to_owned(), t.unwrap_or(Template::Literal(Value::Null))));
            } else {
                path_entries.push((name.to_owned(), self.template(val)));
            }
        }
        Some(if jsonata { Assign::Jsonata(jsonata_entries) } else { Assign::JsonPath(path_entries) })
    }

    /// Checks a variable name: an identifier of at most 80 characters, not `states`, no sub-path.
    fn variable_name(&mut self, name: &str, k: &SpannedKey) -> bool {
        let mut chars = name.chars();
        let identifier = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && chars.all(|c| c.is_alphanumeric() || c == '_');
        let problem = if !identifier {
            Some(if name.contains(['.', '[']) {
                "a variable cannot be assigned by sub-path; assign the whole value".to_owned()
            } else {
                "a variable name is a letter or `_` followed by letters, digits and `_`".to_owned()
            })
        } else if name == "states" {
            Some("`states` is reserved for `$states`".to_owned())
        } else if name.chars().count() > MAX_VARIABLE_NAME_CHARS {
            Some(format!("a variable name has at most {MAX_VARIABLE_NAME_CHARS} characters"))
        } else {
            None
        };
        match problem {
            Some(why) => {
                self.error(codes::BAD_VARIABLE_NAME, format!("invalid variable name `{name}`"), k.span.clone()).help =
                    Some(why);
                false
            }
            None => true,
        }
    }

    /// A `{StartAt, States}` object: the top level or a branch. `depth` counts Parallel nesting.
    fn machine(&mut self, obj: Obj<'_>, depth: usize, context: &str) -> Option<StateMachine> {
        let scope_id = self.scopes.len();
        let parent = self.scope_stack.last().copied();
        self.scopes.push(Scope { parent, ..Scope::default() });
        self.scope_stack.push(scope_id);
        let machine = self.machine_states(scope_id, obj, depth, context);
        self.scope_stack.pop();
        machine
    }

    fn machine_states(&mut self, scope_id: usize, obj: Obj<'_>, depth: usize, context: &str) -> Option<StateMachine> {
        let start = self.required_string(obj, "StartAt", context);
        let states_obj = match obj.get("States") {
            None => {
                self.error(
                    codes::MISSING_FIELD,
                    format!("{context} is missing the required field `States`"),
                    obj.head(),
                );
                None
            }
            Some(v) => self.object(v, "`States`"),
        };
        let states_obj = states_obj?;
        self.scopes[scope_id].states_span = states_obj.span();
        if states_obj.entries.is_empty() {
            self.error(codes::NO_STATES, "`States` must contain at least one state", states_obj.span());
            self.scopes[scope_id].broken = true;
        }
        // Names first, so transitions resolve in one pass.
        for (i, (k, _)) in states_obj.entries.iter().enumerate() {
            let chars = k.name.chars().count();
            if k.name.is_empty() {
                self.error(codes::BAD_STATE_NAME, "a state name cannot be empty", k.span.clone());
            } else if chars > MAX_STATE_NAME_CHARS {
                self.error(
                    codes::BAD_STATE_NAME,
                    format!("state name is {chars} characters long; at most {MAX_STATE_NAME_CHARS} are allowed"),
                    k.span.clone(),
                );
            }
            if let Some((first_scope, first)) = self.all_names.get(&k.name) {
                let (first_scope, first) = (*first_scope, first.clone());
                self.scopes[scope_id].duplicates.push(i);
                // The same key twice in one `States` object is already a duplicate-key error.
                if first_scope != scope_id {
                    let d = self.error(
                        codes::DUPLICATE_STATE,
                        format!("duplicate state name `{}`", k.name),
                        k.span.clone(),
                    );
                    d.labels.push((first, "first defined here".to_owned()));
                    d.help = Some(
                        "state names must be unique across the whole state machine, including Parallel branches"
                            .to_owned(),
                    );
                }
            } else {
                self.all_names.insert(k.name.clone(), (scope_id, k.span.clone()));
            }
            let scope = &mut self.scopes[scope_id];
            scope.names.push((k.name.clone(), k.span.clone()));
            scope.index.entry(k.name.clone()).or_insert(i);
            scope.edges.push(Vec::new());
        }
        let start_at = match start {
            // With no states at all, "StartAt names no state" would only repeat WFC0310.
            Some((name, v)) if !states_obj.entries.is_empty() => self.resolve(scope_id, name, v, "StartAt"),
            _ => None,
        };
        if start_at.is_none() {
            self.scopes[scope_id].broken = true;
        }
        self.scopes[scope_id].start = start_at;
        let mut states = Vec::with_capacity(states_obj.entries.len());
        for (i, (k, v)) in states_obj.entries.iter().enumerate() {
            let kind = self.state(scope_id, i, k, v, depth);
            let kind = match kind {
                Some(kind) => kind,
                None => {
                    // Keeps indices aligned; never returned, since an error was reported.
                    StateKind::Succeed(SucceedState { input_path: None, output_path: None, output: None })
                }
            };
            let comment = v.as_object().and_then(|entries| {
                let o = Obj { value: v, entries };
                o.get("Comment").and_then(|c| c.as_str()).map(str::to_owned)
            });
            states.push(State { name: k.name.clone(), comment, location: Some(self.location(k.span.start)), kind });
        }
        Some(StateMachine { start_at: start_at.unwrap_or(0), states })
    }

    /// Resolves a target name in `scope`; unknown names are reported once all scopes are known.
    fn resolve(&mut self, scope: usize, name: &str, v: &SpannedValue, field: &'static str) -> Option<StateId> {
        match self.scopes.get(scope).and_then(|s| s.index.get(name)).copied() {
            Some(id) => Some(id),
            None => {
                self.dangling.push(Dangling { scope, name: name.to_owned(), span: v.span.clone(), field });
                None
            }
        }
    }

    /// A transition target field (`Next`, `Default`, a rule's or catcher's `Next`) of state `from`.
    fn link(&mut self, scope: usize, from: StateId, v: &SpannedValue, field: &'static str) -> Option<StateId> {
        let Some(name) = v.as_str() else {
            self.error(
                codes::WRONG_TYPE,
                format!("`{field}` must be a state name (a string), found {}", v.kind.type_name()),
                v.span.clone(),
            );
            return None;
        };
        let id = self.resolve(scope, name, v, field)?;
        if let Some(edges) = self.scopes.get_mut(scope).and_then(|s| s.edges.get_mut(from)) {
            edges.push(id);
        }
        Some(id)
    }

    /// `Next` xor `End: true`, for Pass, Task, Wait and Parallel.
    fn transition(
        &mut self,
        scope: usize,
        from: StateId,
        obj: Obj<'_>,
        name_span: &Range<usize>,
    ) -> Option<Transition> {
        let next = obj.get("Next");
        let end = obj.get("End");
        match (next, end) {
            // AWS accepts an explicit `"End": false` beside `Next`; it means the same as no `End`.
            (Some(n), Some(e)) if matches!(e.kind, ValueKind::Bool(false)) => {
                self.link(scope, from, n, "Next").map(Transition::Next)
            }
            (Some(n), Some(e)) => {
                let end_key = obj.key("End").map_or(e.span.clone(), |k| k.span.clone());
                let d = self.error(codes::NEXT_AND_END, "a state cannot have both `Next` and `End`", end_key);
                d.labels.push((n.span.clone(), "`Next` is here".to_owned()));
                d.help =
                    Some("remove `End` to continue with the `Next` state, or remove `Next` to end here".to_owned());
                // Still resolve Next, so its target counts as reachable.
                self.link(scope, from, n, "Next");
                None
            }
            (Some(n), None) => self.link(scope, from, n, "Next").map(Transition::Next),
            (None, Some(e)) => match e.kind {
                ValueKind::Bool(true) => {
                    self.scopes[scope].has_terminal = true;
                    Some(Transition::End)
                }
                ValueKind::Bool(false) => {
                    self.error(codes::END_NOT_TRUE, "`End` must be `true`", e.span.clone()).help =
                        Some("to continue, replace `\"End\": false` with `\"Next\": \"<state>\"`".to_owned());
                    None
                }
                ref other => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`End` must be `true`, found {}", other.type_name()),
                        e.span.clone(),
                    );
                    None
                }
            },
            (None, None) => {
                if !has_typo_of(obj, "Next") && !has_typo_of(obj, "End") {
                    self.error(codes::NO_TRANSITION, "this state has neither `Next` nor `End`", name_span.clone())
                        .help = Some(
                        "add `\"Next\": \"<state>\"` to continue, or `\"End\": true` to end the machine here"
                            .to_owned(),
                    );
                }
                // Unknown successor: don't guess reachability for this scope.
                self.scopes[scope].broken = true;
                None
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // States

    fn state(
        &mut self,
        scope: usize,
        id: StateId,
        key: &SpannedKey,
        v: &SpannedValue,
        depth: usize,
    ) -> Option<StateKind> {
        let Some(obj) = self.object(v, &format!("state `{}`", key.name)) else {
            self.scopes[scope].broken = true;
            return None;
        };
        let ty = match obj.get("Type") {
            None => {
                let typo = obj.entries.iter().find(|(k, _)| suggest(&k.name, ["Type"]).is_some()).map(|(k, _)| k);
                let help = match typo {
                    Some(k) => format!("`{}` is not a field; did you mean `Type`?", k.name),
                    None => "add `\"Type\"`: one of Pass, Task, Choice, Wait, Succeed, Fail, Parallel, Map".to_owned(),
                };
                self.error(
                    codes::MISSING_FIELD,
                    format!("state `{}` is missing the required field `Type`", key.name),
                    key.span.clone(),
                )
                .help = Some(help);
                self.scopes[scope].broken = true;
                return None;
            }
            Some(t) => match t.as_str() {
                Some(s) => (s, t),
                None => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`Type` must be a string, found {}", t.kind.type_name()),
                        t.span.clone(),
                    );
                    self.scopes[scope].broken = true;
                    return None;
                }
            },
        };
        let (ty, ty_value) = ty;
        let Some((_, allowed)) = STATE_FIELDS.iter().find(|(t, _)| *t == ty) else {
            let d = self.error(codes::UNKNOWN_STATE_TYPE, format!("unknown state type `{ty}`"), ty_value.span.clone());
            d.help = Some(match suggest(ty, STATE_FIELDS.iter().map(|(t, _)| *t)) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "the state types are Pass, Task, Choice, Wait, Succeed, Fail, Parallel and Map".to_owned(),
            });
            self.scopes[scope].broken = true;
            return None;
        };
        // Next/End on a state type that never has them gets its own code rather than "unknown field".
        if matches!(ty, "Choice" | "Succeed" | "Fail") {
            for field in ["Next", "End"] {
                if let Some(k) = obj.key(field) {
                    let help = if ty == "Choice" {
                        "a Choice state transitions through its rules' `Next` and `Default`; remove this field"
                    } else {
                        "this state always ends the machine (or branch); remove this field"
                    };
                    self.error(
                        codes::TERMINAL_HAS_TRANSITION,
                        format!("a {ty} state cannot have `{field}`"),
                        k.span.clone(),
                    )
                    .help = Some(help.to_owned());
                }
            }
            let filtered: Vec<&str> = allowed.iter().copied().chain(["Next", "End"]).collect();
            self.check_fields(obj, &filtered, &format!("a {ty} state"));
        } else {
            self.check_fields(obj, allowed, &format!("a {ty} state"));
        }
        self.comment(obj);
        let saved = self.jsonata;
        self.jsonata = self.state_language(obj, ty);
        if matches!(ty, "Succeed" | "Fail")
            && let Some(k) = obj.key("Assign")
        {
            self.error(codes::BAD_ASSIGN, format!("a {ty} state cannot have `Assign`"), k.span.clone()).help =
                Some("assign variables in an earlier state".to_owned());
        }
        let kind = self.state_kind(ty, scope, id, obj, key, depth);
        self.jsonata = saved;
        kind
    }

    fn state_kind(
        &mut self,
        ty: &str,
        scope: usize,
        id: StateId,
        obj: Obj<'_>,
        key: &SpannedKey,
        depth: usize,
    ) -> Option<StateKind> {
        match ty {
            "Pass" => self.pass(scope, id, obj, key),
            "Task" => self.task(scope, id, obj, key),
            "Choice" => self.choice(scope, id, obj, key),
            "Wait" => self.wait(scope, id, obj, key),
            "Succeed" => {
                self.scopes[scope].has_terminal = true;
                let input_path = self.io_path(obj, "InputPath");
                let output_path = self.io_path(obj, "OutputPath");
                let output = self.jsonata_field(obj, "Output");
                Some(StateKind::Succeed(SucceedState { input_path, output_path, output }))
            }
            "Fail" => self.fail(scope, obj),
            "Parallel" => self.parallel(scope, id, obj, key, depth),
            "Map" => self.map(scope, id, obj, key, depth),
            _ => None,
        }
    }

    fn pass(&mut self, scope: usize, id: StateId, obj: Obj<'_>, key: &SpannedKey) -> Option<StateKind> {
        let input_path = self.io_path(obj, "InputPath");
        let output_path = self.io_path(obj, "OutputPath");
        let parameters = obj.get("Parameters").map(|v| self.template(v));
        let result = obj.get("Result").map(SpannedValue::to_json);
        let result_path = self.result_path(obj);
        let assign = self.assign(obj);
        let output = self.jsonata_field(obj, "Output");
        let transition = self.transition(scope, id, obj, &key.span)?;
        Some(StateKind::Pass(PassState {
            input_path,
            parameters,
            result,
            result_path,
            output_path,
            transition,
            assign,
            output,
        }))
    }

    fn task(&mut self, scope: usize, id: StateId, obj: Obj<'_>, key: &SpannedKey) -> Option<StateKind> {
        let resource = match self.required_string(obj, "Resource", &format!("Task state `{}`", key.name)) {
            Some((r, v)) if r.trim().is_empty() => {
                self.error(codes::BAD_RESOURCE, "`Resource` cannot be empty", v.span.clone()).help = Some(
                    "name the handler, e.g. \"arn:aws:lambda:...:function:CheckStock\" or \"check-stock\"".to_owned(),
                );
                None
            }
            Some((r, v)) if r.starts_with("{%") => {
                self.error(codes::BAD_RESOURCE, "`Resource` must be a constant string", v.span.clone());
                None
            }
            Some((r, _)) => Some(r.to_owned()),
            None => None,
        };
        let input_path = self.io_path(obj, "InputPath");
        let output_path = self.io_path(obj, "OutputPath");
        let parameters = obj.get("Parameters").map(|v| self.template(v));
        let result_selector = obj.get("ResultSelector").map(|v| self.template(v));
        let result_path = self.result_path(obj);
        let timeout = self.seconds(obj, "TimeoutSeconds", codes::BAD_TIMEOUT);
        let heartbeat = self.seconds(obj, "HeartbeatSeconds", codes::BAD_HEARTBEAT);
        if let (Some(Seconds::Fixed(t)), Some(Seconds::Fixed(h))) = (&timeout, &heartbeat)
            && h >= t
        {
            let hv = obj.get("HeartbeatSeconds").map_or(obj.head(), |v| v.span.clone());
            let tv = obj.get("TimeoutSeconds").map_or(obj.head(), |v| v.span.clone());
            let d = self.error(
                codes::HEARTBEAT_NOT_BELOW_TIMEOUT,
                format!("`HeartbeatSeconds` ({h}) must be less than `TimeoutSeconds` ({t})"),
                hv,
            );
            d.labels.push((tv, "`TimeoutSeconds` is here".to_owned()));
            d.help = Some("a heartbeat interval at or above the timeout could never fire".to_owned());
        }
        let assign = self.assign(obj);
        let arguments = self.jsonata_field(obj, "Arguments");
        let output = self.jsonata_field(obj, "Output");
        let credentials = self.credentials(obj);
        let (retry, catch) = self.retry_catch(scope, id, obj);
        let transition = self.transition(scope, id, obj, &key.span);
        Some(StateKind::Task(TaskState {
            assign,
            arguments,
            output,
            credentials: credentials.ok()?,
            resource: resource?,
            input_path,
            parameters,
            result_selector,
            result_path,
            output_path,
            timeout,
            heartbeat,
            retry,
            catch,
            transition: transition?,
        }))
    }

    /// `TimeoutSeconds`/`TimeoutSecondsPath` (or the heartbeat pair): at most one of the two.
    fn seconds(&mut self, obj: Obj<'_>, key: &'static str, code: &'static str) -> Option<Seconds> {
        let path_key = if key == "TimeoutSeconds" { "TimeoutSecondsPath" } else { "HeartbeatSecondsPath" };
        let fixed = obj.get(key);
        let path = obj.get(path_key);
        if let (Some(_), Some(p)) = (fixed, path) {
            let pk = obj.key(path_key).map_or(p.span.clone(), |k| k.span.clone());
            let d = self.error(codes::TIMEOUT_EXCLUSIVE, format!("`{key}` and `{path_key}` cannot both be given"), pk);
            if let Some(k) = obj.key(key) {
                d.labels.push((k.span.clone(), format!("`{key}` is here")));
            }
            d.help = Some(format!("keep `{key}` for a fixed value or `{path_key}` to read it from the input"));
            return None;
        }
        if let Some(v) = fixed {
            if self.jsonata
                && let Some(s) = v.as_str()
                && wfc_ir::jsonata::expression_text(s).is_some()
            {
                return self.jsonata_expr(s, v, key).map(Seconds::Jsonata);
            }
            return self.integer(v, key, code, 1, MAX_SECONDS).map(Seconds::Fixed);
        }
        if path.is_some() {
            return self.path_field(obj, path_key).map(Seconds::Path);
        }
        None
    }

    fn retry_catch(&mut self, scope: usize, id: StateId, obj: Obj<'_>) -> (Vec<Retrier>, Vec<Catcher>) {
        let mut retry = Vec::new();
        if let Some(v) = obj.get("Retry") {
            match v.as_array() {
                Some(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(r) = self.retrier(item, i + 1 == items.len()) {
                            retry.push(r);
                        }
                    }
                }
                None => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`Retry` must be an array of retriers, found {}", v.kind.type_name()),
                        v.span.clone(),
                    );
                }
            }
        }
        let mut catch = Vec::new();
        if let Some(v) = obj.get("Catch") {
            match v.as_array() {
                Some(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(c) = self.catcher(scope, id, item, i + 1 == items.len()) {
                            catch.push(c);
                        }
                    }
                }
                None => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`Catch` must be an array of catchers, found {}", v.kind.type_name()),
                        v.span.clone(),
                    );
                }
            }
        }
        (retry, catch)
    }

    /// `ErrorEquals` of a retrier or catcher (`what`), with the States.ALL placement rules.
    fn error_equals(&mut self, obj: Obj<'_>, last: bool, what: &str) -> Option<Vec<String>> {
        let Some(v) = obj.get("ErrorEquals") else {
            self.error(
                codes::MISSING_FIELD,
                format!("a {what} is missing the required field `ErrorEquals`"),
                obj.head(),
            )
            .help = Some("list the error names it handles, e.g. `\"ErrorEquals\": [\"States.ALL\"]`".to_owned());
            return None;
        };
        let Some(items) = v.as_array() else {
            self.error(
                codes::WRONG_TYPE,
                format!("`ErrorEquals` must be an array of error names, found {}", v.kind.type_name()),
                v.span.clone(),
            );
            return None;
        };
        if items.is_empty() {
            self.error(codes::EMPTY_ERROR_EQUALS, "`ErrorEquals` cannot be empty", v.span.clone()).help =
                Some("name at least one error, e.g. `\"States.ALL\"`".to_owned());
            return None;
        }
        let mut names = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items {
            let Some(name) = item.as_str() else {
                self.error(
                    codes::WRONG_TYPE,
                    format!("error names must be strings, found {}", item.kind.type_name()),
                    item.span.clone(),
                );
                ok = false;
                continue;
            };
            if name == wfc_ir::errors::ALL {
                if items.len() > 1 {
                    self.error(
                        codes::ALL_NOT_ALONE,
                        "`States.ALL` must be the only name in its `ErrorEquals`",
                        item.span.clone(),
                    )
                    .help = Some("`States.ALL` already matches every error; remove the other names".to_owned());
                    ok = false;
                }
                if !last {
                    self.error(
                        codes::ALL_NOT_LAST,
                        format!("`States.ALL` may only appear in the last {what}"),
                        item.span.clone(),
                    )
                    .help = Some(format!("move this {what} to the end; the ones after it could never apply"));
                    ok = false;
                }
            } else if name.starts_with("States.") {
                if !PREDEFINED_ERRORS.contains(&name) {
                    let d = self.error(
                        codes::UNKNOWN_STATES_ERROR,
                        format!("unknown predefined error `{name}`"),
                        item.span.clone(),
                    );
                    d.help = Some(match suggest(name, PREDEFINED_ERRORS.iter().copied()) {
                        // AWS documents this matcher, but reports an expired heartbeat as States.Timeout,
                        // and so does the wfc runtime.
                        _ if name == "States.HeartbeatTimeout" => {
                            "an expired heartbeat fails the task with `States.Timeout`; match that instead".to_owned()
                        }
                        Some(s) => format!("did you mean `{s}`? (names starting with `States.` are reserved)"),
                        None => {
                            "names starting with `States.` are reserved for predefined errors; rename the custom error"
                                .to_owned()
                        }
                    });
                    ok = false;
                } else if wfc_ir::errors::is_terminal(name) {
                    self.warn(
                        codes::UNMATCHABLE_ERROR,
                        format!("`{name}` can never be retried or caught"),
                        item.span.clone(),
                    )
                    .help =
                        Some("AWS treats it as terminal: the execution fails regardless of Retry and Catch".to_owned());
                }
            }
            names.push(name.to_owned());
        }
        ok.then_some(names)
    }

    fn retrier(&mut self, v: &SpannedValue, last: bool) -> Option<Retrier> {
        let obj = self.object(v, "a retrier")?;
        self.check_fields(obj, RETRIER_FIELDS, "a retrier");
        self.comment(obj);
        let error_equals = self.error_equals(obj, last, "retrier");
        let mut r = Retrier::new(Vec::new());
        let mut ok = true;
        if let Some(v) = obj.get("IntervalSeconds") {
            match self.integer(v, "IntervalSeconds", codes::BAD_INTERVAL, 1, MAX_SECONDS) {
                Some(i) => r.interval_seconds = i,
                None => ok = false,
            }
        }
        if let Some(v) = obj.get("MaxAttempts") {
            match self
                .integer(v, "MaxAttempts", codes::BAD_MAX_ATTEMPTS, 0, MAX_SECONDS)
                .and_then(|i| u32::try_from(i).ok())
            {
                Some(i) => r.max_attempts = i,
                None => ok = false,
            }
        }
        if let Some(v) = obj.get("BackoffRate") {
            match &v.kind {
                ValueKind::Number(n) => match n.as_f64() {
                    Some(f) if f >= 1.0 && f.is_finite() => r.backoff_rate = f,
                    _ => {
                        self.error(
                            codes::BAD_BACKOFF,
                            format!("`BackoffRate` must be a number of at least 1.0, found {n}"),
                            v.span.clone(),
                        )
                        .help = Some("1.0 keeps the interval constant; 2.0 doubles it after each retry".to_owned());
                        ok = false;
                    }
                },
                other => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`BackoffRate` must be a number, found {}", other.type_name()),
                        v.span.clone(),
                    );
                    ok = false;
                }
            }
        }
        if let Some(v) = obj.get("MaxDelaySeconds") {
            match self.integer(v, "MaxDelaySeconds", codes::BAD_MAX_DELAY, 1, MAX_DELAY_SECONDS) {
                Some(i) => r.max_delay_seconds = Some(i),
                None => ok = false,
            }
        }
        if let Some((s, v)) = self.string(obj, "JitterStrategy") {
            match s {
                "FULL" => r.jitter = Jitter::Full,
                "NONE" => r.jitter = Jitter::None,
                other => {
                    let d = self.error(
                        codes::BAD_JITTER,
                        format!("`JitterStrategy` must be \"FULL\" or \"NONE\", found \"{other}\""),
                        v.span.clone(),
                    );
                    if other.eq_ignore_ascii_case("full") || other.eq_ignore_ascii_case("none") {
                        d.help = Some(format!("write it in upper case: \"{}\"", other.to_ascii_uppercase()));
                    }
                    ok = false;
                }
            }
        } else if obj.get("JitterStrategy").is_some() {
            ok = false;
        }
        r.error_equals = error_equals?;
        ok.then_some(r)
    }

    fn catcher(&mut self, scope: usize, id: StateId, v: &SpannedValue, last: bool) -> Option<Catcher> {
        let obj = self.object(v, "a catcher")?;
        self.check_fields(obj, CATCHER_FIELDS, "a catcher");
        self.comment(obj);
        let error_equals = self.error_equals(obj, last, "catcher");
        let result_path = self.result_path(obj);
        let next = match obj.get("Next") {
            Some(n) => self.link(scope, id, n, "Next"),
            None => {
                self.error(codes::MISSING_FIELD, "a catcher is missing the required field `Next`", obj.head()).help =
                    Some("name the state to go to when this catcher matches".to_owned());
                None
            }
        };
        let assign = self.assign(obj);
        let output = self.jsonata_field(obj, "Output");
        if self.jsonata
            && let Some(k) = obj.key("ResultPath")
        {
            self.error(
                codes::WRONG_LANGUAGE_FIELD,
                "`ResultPath` is a JSONPath field; this catcher is in a JSONata state",
                k.span.clone(),
            )
            .help = Some("use `Output` with `$states.errorOutput`".to_owned());
        }
        if !self.jsonata
            && let Some(k) = obj.key("Output")
        {
            self.error(
                codes::WRONG_LANGUAGE_FIELD,
                "`Output` is a JSONata field; this catcher is in a JSONPath state",
                k.span.clone(),
            )
            .help = Some("use `ResultPath`".to_owned());
        }
        Some(Catcher { error_equals: error_equals?, result_path, next: next?, assign, output })
    }

    fn wait(&mut self, scope: usize, id: StateId, obj: Obj<'_>, key: &SpannedKey) -> Option<StateKind> {
        let input_path = self.io_path(obj, "InputPath");
        let output_path = self.io_path(obj, "OutputPath");
        let forms = ["Seconds", "Timestamp", "SecondsPath", "TimestampPath"];
        let present: Vec<&SpannedKey> = forms.iter().filter_map(|f| obj.key(f)).collect();
        let duration = match present.as_slice() {
            [] => {
                self.error(
                    codes::WAIT_NO_DURATION,
                    "a Wait state needs one of `Seconds`, `Timestamp`, `SecondsPath` or `TimestampPath`",
                    key.span.clone(),
                )
                .help = Some("e.g. `\"Seconds\": 10`".to_owned());
                None
            }
            [only] => {
                let v = obj.get(&only.name)?;
                match only.name.as_str() {
                    "Seconds" if self.jsonata && v.as_str().is_some_and(|s| s.starts_with("{%")) => self
                        .jsonata_expr(v.as_str().unwrap_or_default(), v, "Seconds")
                        .map(WaitDuration::SecondsJsonata),
                    "Timestamp" if self.jsonata && v.as_str().is_some_and(|s| s.starts_with("{%")) => self
                        .jsonata_expr(v.as_str().unwrap_or_default(), v, "Timestamp")
                        .map(WaitDuration::TimestampJsonata),
                    "Seconds" => self
                        .integer(v, "Seconds", codes::BAD_SECONDS, 0, wfc_ir::MAX_WAIT_SECONDS)
                        .map(WaitDuration::Seconds),
                    "Timestamp" => match v.as_str() {
                        Some(s) => self.timestamp(s, v).map(|()| WaitDuration::Timestamp(s.to_owned())),
                        None => {
                            self.error(
                                codes::WRONG_TYPE,
                                format!("`Timestamp` must be a string, found {}", v.kind.type_name()),
                                v.span.clone(),
                            );
                            None
                        }
                    },
                    "SecondsPath" => self.path_field(obj, "SecondsPath").map(WaitDuration::SecondsPath),
                    _ => self.path_field(obj, "TimestampPath").map(WaitDuration::TimestampPath),
                }
            }
            [first, rest @ ..] => {
                for k in rest {
                    let d = self.error(codes::WAIT_MANY_DURATIONS, format!("a Wait state takes only one of `Seconds`, `Timestamp`, `SecondsPath` and `TimestampPath`; `{}` is already given", first.name), k.span.clone());
                    d.labels.push((first.span.clone(), format!("`{}` is here", first.name)));
                }
                None
            }
        };
        let assign = self.assign(obj);
        let output = self.jsonata_field(obj, "Output");
        let transition = self.transition(scope, id, obj, &key.span);
        Some(StateKind::Wait(WaitState {
            input_path,
            output_path,
            duration: duration?,
            transition: transition?,
            assign,
            output,
        }))
    }

    fn timestamp(&mut self, s: &str, v: &SpannedValue) -> Option<()> {
        match wfc_ir::timestamp::parse(s) {
            Ok(_) => Some(()),
            Err(e) => {
                self.error(codes::BAD_TIMESTAMP, format!("invalid timestamp: {}", e.reason), v.span.clone()).help =
                    Some("use RFC 3339 with an uppercase T and Z, e.g. \"2016-03-14T01:59:00Z\"".to_owned());
                None
            }
        }
    }

    fn fail(&mut self, scope: usize, obj: Obj<'_>) -> Option<StateKind> {
        self.scopes[scope].has_terminal = true;
        let mut ok = true;
        for (lit, path) in [("Error", "ErrorPath"), ("Cause", "CausePath")] {
            if let (Some(a), Some(b)) = (obj.key(lit), obj.key(path)) {
                let d = self.error(
                    codes::FAIL_EXCLUSIVE,
                    format!("`{lit}` and `{path}` cannot both be given"),
                    b.span.clone(),
                );
                d.labels.push((a.span.clone(), format!("`{lit}` is here")));
                d.help = Some(format!("keep `{lit}` for a fixed value or `{path}` to read it from the input"));
                ok = false;
            }
        }
        let mut computed = [None, None];
        let mut literal = [None, None];
        let mut paths = [None, None];
        for (i, (lit, path)) in [("Error", "ErrorPath"), ("Cause", "CausePath")].into_iter().enumerate() {
            match self.string(obj, lit) {
                Some((s, v)) if self.jsonata && wfc_ir::jsonata::expression_text(s).is_some() => {
                    match self.jsonata_expr(s, v, lit) {
                        Some(e) => computed[i] = Some(ComputedString::Jsonata(e)),
                        None => ok = false,
                    }
                }
                Some((s, _)) => literal[i] = Some(s.to_owned()),
                None => {}
            }
            match obj.get(path) {
                Some(v) if v.as_str().is_some_and(|s| s.starts_with("States.")) => {
                    let s = v.as_str().unwrap_or_default();
                    match self.intrinsic(s, v, path) {
                        Some(call) => {
                            let name = call.call().function.name();
                            if !STRING_INTRINSICS.contains(&name) {
                                self.error(
                                    codes::FAIL_INTRINSIC_NOT_STRING,
                                    format!("`{name}` cannot be used in `{path}`: it does not return a string"),
                                    v.span.clone(),
                                )
                                .help = Some(format!("`{path}` takes one of {}", STRING_INTRINSICS.join(", ")));
                                ok = false;
                            }
                            computed[i] = Some(ComputedString::Intrinsic(call));
                        }
                        None => ok = false,
                    }
                }
                Some(_) => paths[i] = self.path_field(obj, path),
                None => {}
            }
        }
        let [error, cause] = literal;
        let [error_path, cause_path] = paths;
        let [error_computed, cause_computed] = computed;
        ok.then_some(StateKind::Fail(FailState {
            error,
            cause,
            error_path,
            cause_path,
            error_computed,
            cause_computed,
        }))
    }

    fn parallel(
        &mut self,
        scope: usize,
        id: StateId,
        obj: Obj<'_>,
        key: &SpannedKey,
        depth: usize,
    ) -> Option<StateKind> {
        let input_path = self.io_path(obj, "InputPath");
        let output_path = self.io_path(obj, "OutputPath");
        let parameters = obj.get("Parameters").map(|v| self.template(v));
        let result_selector = obj.get("ResultSelector").map(|v| self.template(v));
        let result_path = self.result_path(obj);
        let mut branches = Vec::new();
        let mut ok = true;
        match obj.get("Branches") {
            None => {
                self.error(
                    codes::MISSING_FIELD,
                    format!("Parallel state `{}` is missing the required field `Branches`", key.name),
                    key.span.clone(),
                );
                ok = false;
            }
            Some(v) => match v.as_array() {
                Some([]) => {
                    self.error(codes::NO_BRANCHES, "`Branches` must contain at least one branch", v.span.clone());
                    ok = false;
                }
                Some(_) if depth + 1 > MAX_PARALLEL_DEPTH => {
                    self.error(
                        codes::PARALLEL_TOO_DEEP,
                        format!("Parallel states nest more than {MAX_PARALLEL_DEPTH} levels deep"),
                        v.span.clone(),
                    );
                    ok = false;
                }
                Some(items) => {
                    for item in items {
                        let Some(b) = self.object(item, "a branch") else {
                            ok = false;
                            continue;
                        };
                        self.check_fields(b, BRANCH_FIELDS, "a branch");
                        self.comment(b);
                        match self.machine(b, depth + 1, "a branch") {
                            Some(m) => branches.push(m),
                            None => ok = false,
                        }
                    }
                }
                None => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`Branches` must be an array, found {}", v.kind.type_name()),
                        v.span.clone(),
                    );
                    ok = false;
                }
            },
        }
        let assign = self.assign(obj);
        let arguments = self.jsonata_field(obj, "Arguments");
        let output = self.jsonata_field(obj, "Output");
        let (retry, catch) = self.retry_catch(scope, id, obj);
        let transition = self.transition(scope, id, obj, &key.span);
        if !ok {
            return None;
        }
        Some(StateKind::Parallel(ParallelState {
            assign,
            arguments,
            output,
            input_path,
            parameters,
            result_selector,
            result_path,
            output_path,
            branches,
            retry,
            catch,
            transition: transition?,
        }))
    }

    /// A Map state (INLINE or DISTRIBUTED, see `map_fields`). Its `ItemProcessor` (or legacy `Iterator`) is a closed scope, like a
    /// Parallel branch, and counts toward the same nesting limit.
    fn map(&mut self, scope: usize, id: StateId, obj: Obj<'_>, key: &SpannedKey, depth: usize) -> Option<StateKind> {
        // Read before the item processor's states change it.
        let jsonata = self.jsonata;
        let mut ok = true;
        let mode = self.map_mode(obj);
        let distributed = match mode {
            Some(mode) => self.distributed_fields(obj, mode),
            None => None,
        };
        ok &= distributed.is_some();
        for (new, legacy) in [("ItemSelector", "Parameters"), ("ItemProcessor", "Iterator")] {
            if let (Some(n), Some(l)) = (obj.key(new), obj.key(legacy)) {
                let d = self.error(
                    codes::MAP_EXCLUSIVE,
                    format!("`{new}` and its legacy name `{legacy}` cannot both be given"),
                    l.span.clone(),
                );
                d.labels.push((n.span.clone(), format!("`{new}` is here")));
                d.help = Some(format!("keep `{new}` and remove `{legacy}`"));
                ok = false;
            }
        }
        let input_path = self.io_path(obj, "InputPath");
        let output_path = self.io_path(obj, "OutputPath");
        let items_path = match obj.get("ItemsPath") {
            None => Path::parse("$").ok(),
            Some(v) => match self.path_field(obj, "ItemsPath") {
                Some(p) if !p.is_singular() || p.function().is_some() => {
                    self.error(
                        codes::BAD_REFERENCE_PATH,
                        "`ItemsPath` must be a Reference Path (one node, no wildcards, filters or functions)",
                        v.span.clone(),
                    )
                    .help = Some("name the array with `.field`, `['field']` and `[index]` steps only".to_owned());
                    None
                }
                p => p,
            },
        };
        let (item_selector, item_selector_jsonata) = if self.jsonata {
            (None, obj.get("ItemSelector").map(|v| self.jsonata_template(v, "ItemSelector")))
        } else {
            (obj.get("ItemSelector").or_else(|| obj.get("Parameters")).map(|v| self.template(v)), None)
        };
        let items = self.jsonata_field(obj, "Items");
        let assign = self.assign(obj);
        let output = self.jsonata_field(obj, "Output");
        let result_selector = obj.get("ResultSelector").map(|v| self.template(v));
        let result_path = self.result_path(obj);
        let concurrency = self.map_concurrency(obj);
        let processor = match (obj.get("ItemProcessor"), obj.get("Iterator")) {
            (Some(v), _) => Some(("ItemProcessor", v)),
            (None, Some(v)) => Some(("Iterator", v)),
            (None, None) => {
                self.error(
                    codes::MISSING_FIELD,
                    format!("Map state `{}` is missing the required field `ItemProcessor`", key.name),
                    key.span.clone(),
                )
                .help = Some("add `\"ItemProcessor\": {\"StartAt\": ..., \"States\": {...}}`".to_owned());
                None
            }
        };
        let item_processor = match processor {
            None => None,
            Some((_, v)) if depth + 1 > MAX_PARALLEL_DEPTH => {
                self.error(
                    codes::PARALLEL_TOO_DEEP,
                    format!("Parallel and Map states nest more than {MAX_PARALLEL_DEPTH} levels deep"),
                    v.span.clone(),
                );
                None
            }
            Some((field, v)) => {
                let context = format!("`{field}`");
                match self.object(v, &context) {
                    None => None,
                    Some(p) => {
                        self.check_fields(p, PROCESSOR_FIELDS, &context);
                        self.comment(p);
                        self.machine(p, depth + 1, &context)
                    }
                }
            }
        };
        let (retry, catch) = self.retry_catch(scope, id, obj);
        let transition = self.transition(scope, id, obj, &key.span);
        if !ok {
            return None;
        }
        Some(StateKind::Map(MapState {
            jsonata,
            assign,
            items,
            item_selector_jsonata,
            output,
            input_path,
            items_path: items_path?,
            item_selector,
            item_processor: item_processor?,
            max_concurrency: concurrency.as_ref()?.fixed,
            max_concurrency_jsonata: concurrency.as_ref()?.jsonata.clone(),
            max_concurrency_path: concurrency?.path,
            distributed: distributed?,
            result_selector,
            result_path,
            output_path,
            retry,
            catch,
            transition: transition?,
        }))
    }

    // -----------------------------------------------------------------------------------------
    // Choice

    fn choice(&mut self, scope: usize, id: StateId, obj: Obj<'_>, key: &SpannedKey) -> Option<StateKind> {
        let input_path = self.io_path(obj, "InputPath");
        let output_path = self.io_path(obj, "OutputPath");
        let mut choices = Vec::new();
        let mut ok = true;
        match obj.get("Choices") {
            None => {
                self.error(
                    codes::MISSING_FIELD,
                    format!("Choice state `{}` is missing the required field `Choices`", key.name),
                    key.span.clone(),
                );
                ok = false;
            }
            Some(v) => match v.as_array() {
                Some([]) => {
                    self.error(codes::NO_CHOICES, "`Choices` must contain at least one rule", v.span.clone());
                    ok = false;
                }
                Some(items) => {
                    for item in items {
                        let rule = if self.jsonata {
                            self.jsonata_rule(scope, id, item)
                        } else {
                            self.rule(scope, id, item, true, 1)
                        };
                        // The rule's own Assign and Output (checked by `rule`/`jsonata_rule`'s fields).
                        let (assign, output) = match item.as_object() {
                            Some(entries) => {
                                let o = Obj { value: item, entries };
                                (self.assign(o), self.jsonata_field(o, "Output"))
                            }
                            None => (None, None),
                        };
                        match rule {
                            Some((condition, Some(next))) => {
                                choices.push(ChoiceBranch { condition, next, assign, output })
                            }
                            _ => ok = false,
                        }
                    }
                }
                None => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`Choices` must be an array of rules, found {}", v.kind.type_name()),
                        v.span.clone(),
                    );
                    ok = false;
                }
            },
        }
        let default = match obj.get("Default") {
            Some(d) => {
                let r = self.link(scope, id, d, "Default");
                if r.is_none() {
                    ok = false;
                }
                r
            }
            None => {
                self.warn(codes::NO_DEFAULT, format!("Choice state `{}` has no `Default`", key.name), key.span.clone()).help =
                    Some("when no rule matches, the execution fails with States.NoChoiceMatched; add `\"Default\": \"<state>\"`".to_owned());
                None
            }
        };
        let assign = self.assign(obj);
        let output = self.jsonata_field(obj, "Output");
        ok.then_some(StateKind::Choice(ChoiceState { input_path, output_path, choices, default, assign, output }))
    }

    /// A rule of a JSONata Choice: `Condition` (a `{% %}` expression or a Boolean) and `Next`,
    /// with optional `Assign`, `Output` and `Comment`.
    fn jsonata_rule(&mut self, scope: usize, id: StateId, v: &SpannedValue) -> Option<(Condition, Option<StateId>)> {
        let obj = self.object(v, "a Choice rule")?;
        self.check_fields(obj, &["Condition", "Next", "Comment", "Assign", "Output"], "a JSONata Choice rule");
        self.comment(obj);
        let next = match obj.get("Next") {
            Some(n) => self.link(scope, id, n, "Next"),
            None => {
                self.error(codes::RULE_WITHOUT_NEXT, "a Choice rule needs `Next`", obj.head());
                None
            }
        };
        let condition = match obj.get("Condition") {
            None => {
                self.error(codes::BAD_CONDITION, "a JSONata Choice rule needs `Condition`", obj.head()).help =
                    Some("e.g. `\"Condition\": \"{% $states.input.n > 1 %}\"`".to_owned());
                None
            }
            Some(c) => match &c.kind {
                ValueKind::Bool(b) => {
                    JsonataExpr::parse(if *b { "true" } else { "false" }).ok().map(Condition::Jsonata)
                }
                ValueKind::String(s) if wfc_ir::jsonata::expression_text(s).is_some() => {
                    self.jsonata_expr(s, c, "Condition").map(Condition::Jsonata)
                }
                other => {
                    self.error(
                        codes::BAD_CONDITION,
                        format!("`Condition` must be a `{{% %}}` expression or a Boolean, found {}", other.type_name()),
                        c.span.clone(),
                    );
                    None
                }
            },
        };
        Some((condition?, Some(next?)))
    }

    /// One Choice rule. Returns the condition and, for a top-level rule, its resolved `Next`.
    fn rule(
        &mut self,
        scope: usize,
        id: StateId,
        v: &SpannedValue,
        top: bool,
        depth: usize,
    ) -> Option<(Condition, Option<StateId>)> {
        let obj = self.object(v, "a Choice rule")?;
        if depth > MAX_CHOICE_DEPTH {
            self.error(
                codes::CHOICE_TOO_DEEP,
                format!("Choice rules nest more than {MAX_CHOICE_DEPTH} levels deep"),
                obj.head(),
            )
            .help = Some("split the condition over several Choice states".to_owned());
            return None;
        }
        self.check_fields(obj, rule_fields(), "a Choice rule");
        self.comment(obj);
        for field in ["Condition", "Output"] {
            if let Some(k) = obj.key(field) {
                self.error(
                    codes::WRONG_LANGUAGE_FIELD,
                    format!("`{field}` is a JSONata field; this Choice state uses JSONPath"),
                    k.span.clone(),
                )
                .help = Some("set `\"QueryLanguage\": \"JSONata\"` on the state to use JSONata rules".to_owned());
            }
        }
        if !top && let Some(k) = obj.key("Assign") {
            self.error(codes::BAD_ASSIGN, "a rule nested in `And`, `Or` or `Not` cannot have `Assign`", k.span.clone());
        }

        let next = match (top, obj.get("Next"), obj.key("Next")) {
            // An unresolved Next is remembered as `Some(None)`: the condition is still checked,
            // since its own problems are worth reporting in the same run.
            (true, Some(n), _) => Some(self.link(scope, id, n, "Next")),
            (true, None, _) => {
                self.error(codes::RULE_WITHOUT_NEXT, "a Choice rule needs `Next`", obj.head()).help =
                    Some("name the state to go to when this rule matches".to_owned());
                Some(None)
            }
            (false, Some(_), Some(k)) => {
                self.error(
                    codes::NESTED_RULE_NEXT,
                    "a rule nested in `And`, `Or` or `Not` cannot have `Next`",
                    k.span.clone(),
                )
                .help = Some("only top-level rules transition; move `Next` to the enclosing rule".to_owned());
                None
            }
            _ => None,
        };

        // The operator keys of this rule.
        let ops: Vec<&SpannedKey> = obj
            .entries
            .iter()
            .map(|(k, _)| k)
            .filter(|k| matches!(k.name.as_str(), "And" | "Or" | "Not") || operator_of(&k.name).is_some())
            .collect();
        let op_key = match ops.as_slice() {
            [] => {
                let d = self.error(
                    codes::NO_OPERATOR,
                    "a Choice rule needs a comparison operator (or `And`, `Or`, `Not`)",
                    obj.head(),
                );
                d.help = Some("e.g. `\"Variable\": \"$.x\", \"NumericEquals\": 1`".to_owned());
                return None;
            }
            [one] => *one,
            [first, rest @ ..] => {
                for k in rest {
                    let d = self.error(
                        codes::MANY_OPERATORS,
                        format!("a Choice rule takes exactly one operator; `{}` is already given", first.name),
                        k.span.clone(),
                    );
                    d.labels.push((first.span.clone(), "first operator".to_owned()));
                    d.help = Some("combine several tests with `And` or `Or`".to_owned());
                }
                return None;
            }
        };
        let operand = obj.get(&op_key.name)?;
        let condition = match op_key.name.as_str() {
            "And" | "Or" => {
                if let Some(var) = obj.key("Variable") {
                    self.error(
                        codes::UNKNOWN_FIELD,
                        format!("`Variable` has no meaning next to `{}`", op_key.name),
                        var.span.clone(),
                    )
                    .help = Some("put `Variable` in the nested rules".to_owned());
                }
                let items = match operand.as_array() {
                    Some(items) if !items.is_empty() => items,
                    Some(_) => {
                        self.error(
                            codes::BAD_AND_OR,
                            format!("`{}` needs at least one rule", op_key.name),
                            operand.span.clone(),
                        );
                        return None;
                    }
                    None => {
                        self.error(
                            codes::BAD_AND_OR,
                            format!("`{}` must be an array of rules, found {}", op_key.name, operand.kind.type_name()),
                            operand.span.clone(),
                        );
                        return None;
                    }
                };
                let mut subs = Vec::with_capacity(items.len());
                let mut ok = true;
                for item in items {
                    match self.rule(scope, id, item, false, depth + 1) {
                        Some((c, _)) => subs.push(c),
                        None => ok = false,
                    }
                }
                if !ok {
                    return None;
                }
                if op_key.name == "And" { Condition::And(subs) } else { Condition::Or(subs) }
            }
            "Not" => {
                if let Some(var) = obj.key("Variable") {
                    self.error(codes::UNKNOWN_FIELD, "`Variable` has no meaning next to `Not`", var.span.clone())
                        .help = Some("put `Variable` in the nested rule".to_owned());
                }
                if operand.as_object().is_none() {
                    let d = self.error(
                        codes::BAD_NOT,
                        format!("`Not` must be a single rule object, found {}", operand.kind.type_name()),
                        operand.span.clone(),
                    );
                    if operand.as_array().is_some() {
                        d.help = Some("`Not` takes one rule; to negate several, wrap them in `And` or `Or`".to_owned());
                    }
                    return None;
                }
                let (c, _) = self.rule(scope, id, operand, false, depth + 1)?;
                Condition::Not(Box::new(c))
            }
            name => {
                let (op, path_form) = operator_of(name)?;
                self.comparison(obj, op, path_form, op_key, operand).map(Condition::Compare)?
            }
        };
        match next {
            Some(Some(n)) => Some((condition, Some(n))),
            Some(None) => None,
            None => Some((condition, None)),
        }
    }

    fn comparison(
        &mut self,
        obj: Obj<'_>,
        op: Operator,
        path_form: bool,
        op_key: &SpannedKey,
        operand: &SpannedValue,
    ) -> Option<Comparison> {
        let variable = match obj.get("Variable") {
            None => {
                self.error(
                    codes::NO_VARIABLE,
                    format!("`{}` needs a `Variable` to compare", op_key.name),
                    op_key.span.clone(),
                )
                .help = Some("add `\"Variable\": \"$.field\"`".to_owned());
                None
            }
            Some(_) => self.path_field(obj, "Variable"),
        };
        let operand = if path_form {
            match operand.as_str() {
                Some(s) => self.path_str(s, operand, &op_key.name).map(Operand::Path),
                None => {
                    self.error(
                        codes::BAD_OPERAND,
                        format!("`{}` takes a path string, found {}", op_key.name, operand.kind.type_name()),
                        operand.span.clone(),
                    );
                    None
                }
            }
        } else {
            let (expected, ok) = match op {
                Operator::StringEquals
                | Operator::StringLessThan
                | Operator::StringGreaterThan
                | Operator::StringLessThanEquals
                | Operator::StringGreaterThanEquals
                | Operator::StringMatches => ("a string", matches!(operand.kind, ValueKind::String(_))),
                Operator::NumericEquals
                | Operator::NumericLessThan
                | Operator::NumericGreaterThan
                | Operator::NumericLessThanEquals
                | Operator::NumericGreaterThanEquals => ("a number", matches!(operand.kind, ValueKind::Number(_))),
                Operator::TimestampEquals
                | Operator::TimestampLessThan
                | Operator::TimestampGreaterThan
                | Operator::TimestampLessThanEquals
                | Operator::TimestampGreaterThanEquals => {
                    ("a timestamp string", matches!(operand.kind, ValueKind::String(_)))
                }
                Operator::BooleanEquals
                | Operator::IsNull
                | Operator::IsPresent
                | Operator::IsNumeric
                | Operator::IsString
                | Operator::IsBoolean
                | Operator::IsTimestamp => ("a Boolean", matches!(operand.kind, ValueKind::Bool(_))),
            };
            if !ok {
                let d = self.error(
                    codes::BAD_OPERAND,
                    format!("`{}` compares with {expected}, found {}", op_key.name, operand.kind.type_name()),
                    operand.span.clone(),
                );
                if let ValueKind::String(s) = &operand.kind
                    && op.has_path_form()
                    && s.starts_with('$')
                {
                    d.help = Some(format!("to compare with a value from the input, use `{}Path`", op_key.name));
                }
                None
            } else {
                let valid_ts = match (&operand.kind, expected) {
                    (ValueKind::String(s), "a timestamp string") => self.timestamp(s, operand).is_some(),
                    _ => true,
                };
                valid_ts.then(|| Operand::Literal(operand.to_json()))
            }
        };
        Some(Comparison { variable: variable?, operator: op, operand: operand? })
    }

    // -----------------------------------------------------------------------------------------
    // Whole-machine checks

    fn finish(&mut self) {
        let dangling = std::mem::take(&mut self.dangling);
        for d in dangling {
            let elsewhere = self.all_names.get(&d.name).map(|(s, span)| (*s, span.clone()));
            match elsewhere {
                Some((other, span)) if other != d.scope => {
                    let diag = self.error(
                        codes::CROSS_SCOPE_TARGET,
                        format!("`{}` target `{}` is in a different Parallel branch or level", d.field, d.name),
                        d.span.clone(),
                    );
                    diag.labels.push((span, "defined here".to_owned()));
                    diag.help = Some(
                        "transitions cannot leave or enter a Parallel branch; each branch is a closed state machine"
                            .to_owned(),
                    );
                }
                _ => {
                    let names: Vec<String> = self
                        .scopes
                        .get(d.scope)
                        .map(|s| s.names.iter().map(|(n, _)| n.clone()).collect())
                        .unwrap_or_default();
                    let diag = self.error(
                        codes::UNKNOWN_TARGET,
                        format!("`{}` target `{}` is not a state", d.field, d.name),
                        d.span.clone(),
                    );
                    diag.help = match suggest(&d.name, names.iter().map(String::as_str)) {
                        Some(s) => Some(format!("did you mean `{s}`?")),
                        None if names.is_empty() => None,
                        None => Some(format!(
                            "the states here are: {}",
                            names.iter().take(10).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        )),
                    };
                }
            }
            // A broken link makes reachability in this scope unreliable.
            if let Some(s) = self.scopes.get_mut(d.scope) {
                s.broken = true;
            }
        }
        self.check_variables();
        let scopes = std::mem::take(&mut self.scopes);
        for scope in &scopes {
            if scope.broken {
                continue;
            }
            let Some(start) = scope.start else { continue };
            let mut seen = vec![false; scope.names.len()];
            let mut stack = vec![start];
            while let Some(s) = stack.pop() {
                if s >= seen.len() || seen[s] {
                    continue;
                }
                seen[s] = true;
                if let Some(out) = scope.edges.get(s) {
                    stack.extend(out.iter().copied());
                }
            }
            for (i, (name, span)) in scope.names.iter().enumerate() {
                // Duplicate names share one index; only the first occurrence is a real state.
                if !seen.get(i).copied().unwrap_or(true)
                    && scope.index.get(name) == Some(&i)
                    && !scope.duplicates.contains(&i)
                {
                    self.error(codes::UNREACHABLE, format!("state `{name}` is unreachable"), span.clone()).help = Some(
                        "no `StartAt`, `Next`, `Default` or `Catch` leads here; add a transition to it or remove it"
                            .to_owned(),
                    );
                }
            }
            if !scope.has_terminal {
                self.error(
                    codes::NO_TERMINAL,
                    "this state machine has no terminal state, so it can never finish",
                    scope.states_span.start..scope.states_span.start + 1,
                )
                .help = Some("end some state with `\"End\": true`, or add a Succeed or Fail state".to_owned());
            }
        }
        self.scopes = scopes;
    }
}

impl Cx<'_> {
    /// Variable scoping, as AWS checks it: every variable read must be assigned somewhere in its
    /// scope or an enclosing one (a Parallel branch or Map iteration reads outer variables), and
    /// an inner scope may not assign a name an enclosing scope assigns.
    fn check_variables(&mut self) {
        let ancestors = |scopes: &[Scope], mut at: Option<usize>| {
            let mut out = Vec::new();
            while let Some(i) = at {
                out.push(i);
                at = scopes.get(i).and_then(|s| s.parent);
            }
            out
        };
        let mut problems = Vec::new();
        for (i, scope) in self.scopes.iter().enumerate() {
            let visible = ancestors(&self.scopes, Some(i));
            for (name, span) in &scope.reads {
                let assigned = visible.iter().any(|&j| self.scopes[j].assigned.iter().any(|(n, _)| n == name));
                if !assigned {
                    let elsewhere = self
                        .scopes
                        .iter()
                        .flat_map(|s| s.assigned.iter())
                        .find(|(n, _)| n == name)
                        .map(|(_, sp)| sp.clone());
                    problems.push((codes::UNDEFINED_VARIABLE, name.clone(), span.clone(), elsewhere));
                }
            }
            for (name, span) in &scope.assigned {
                let outer = ancestors(&self.scopes, scope.parent);
                if let Some(first) = outer
                    .iter()
                    .find_map(|&j| self.scopes[j].assigned.iter().find(|(n, _)| n == name).map(|(_, sp)| sp.clone()))
                {
                    problems.push((codes::OUTER_VARIABLE_WRITE, name.clone(), span.clone(), Some(first)));
                }
            }
        }
        // Both are warnings: AWS accepts such definitions (recorded) and fails at run time
        // where a read finds nothing (`States.QueryEvaluationError` "returned nothing
        // (undefined)" in JSONata, the path failure `States.Runtime` in JSONPath).
        for (code, name, span, other) in problems {
            if code == codes::UNDEFINED_VARIABLE {
                let d = self.warn(
                    code,
                    format!("variable `${name}` is read but never assigned; reading it fails at run time"),
                    span,
                );
                match other {
                    Some(sp) => {
                        d.labels.push((sp, "assigned here, in a scope this state cannot see".to_owned()));
                        d.help = Some(
                            "a Parallel branch or Map iteration sees only its own and enclosing variables".to_owned(),
                        );
                    }
                    None => d.help = Some(format!("assign it first with `\"Assign\": {{\"{name}\": ...}}`")),
                }
            } else {
                let d = self.warn(
                    code,
                    format!(
                        "`{name}` is a variable of an enclosing scope; assigned here, it is a new variable of this scope only"
                    ),
                    span,
                );
                if let Some(sp) = other {
                    d.labels.push((sp, "assigned in the enclosing scope here".to_owned()));
                }
                d.help = Some("a Parallel branch or Map iteration reads outer variables but cannot write them; return the value in the output and assign it after the state".to_owned());
            }
        }
    }
}

/// The fields of a Choice rule: structure fields plus every operator and its `*Path` form.
fn rule_fields() -> &'static [&'static str] {
    static FIELDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    FIELDS.get_or_init(|| {
        const PATH_FORMS: &[&str] = &[
            "StringEqualsPath",
            "StringLessThanPath",
            "StringGreaterThanPath",
            "StringLessThanEqualsPath",
            "StringGreaterThanEqualsPath",
            "NumericEqualsPath",
            "NumericLessThanPath",
            "NumericGreaterThanPath",
            "NumericLessThanEqualsPath",
            "NumericGreaterThanEqualsPath",
            "BooleanEqualsPath",
            "TimestampEqualsPath",
            "TimestampLessThanPath",
            "TimestampGreaterThanPath",
            "TimestampLessThanEqualsPath",
            "TimestampGreaterThanEqualsPath",
        ];
        // `Assign` (both languages), `Output` and `Condition` (JSONata; the other language's
        // fields are reported by `state_language`/`jsonata_rule`).
        let mut fields = vec!["Variable", "Next", "Comment", "And", "Or", "Not", "Assign", "Output", "Condition"];
        fields.extend(Operator::ALL.iter().map(|op| op.name()));
        // Only the forms the IR knows (`has_path_form`), spelled out as static strings.
        fields.extend(PATH_FORMS.iter().copied().filter(|f| operator_of(f).is_some_and(|(_, path)| path)));
        fields
    })
}

/// Whether `obj` has an unknown key that looks like a misspelling of `key` (which it lacks).
fn has_typo_of(obj: Obj<'_>, key: &str) -> bool {
    obj.entries.iter().any(|(k, _)| !is_known_field(&k.name) && suggest(&k.name, [key]) == Some(key))
}

/// Whether `name` is a field of some ASL object we read (so it is not a typo of another one).
fn is_known_field(name: &str) -> bool {
    STATE_FIELDS.iter().any(|(_, fields)| fields.contains(&name))
        || TOP_FIELDS.contains(&name)
        || RETRIER_FIELDS.contains(&name)
        || CATCHER_FIELDS.contains(&name)
        || operator_of(name).is_some()
        || matches!(name, "Variable" | "And" | "Or" | "Not")
}

/// The operator a rule key names, and whether it is the `*Path` form.
fn operator_of(key: &str) -> Option<(Operator, bool)> {
    if let Some(op) = Operator::from_name(key) {
        return Some((op, false));
    }
    let base = key.strip_suffix("Path")?;
    Operator::from_name(base).filter(|op| op.has_path_form()).map(|op| (op, true))
}

/// The candidate closest to `word` by edit distance, if close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let d = if c.eq_ignore_ascii_case(word) { 0 } else { levenshtein(word, c) };
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    // A third of the longer word, rounded up: "Tsak" → "Task" (2 edits in 4) still counts.
    let limit = word.chars().count().max(c.chars().count()).div_ceil(3);
    (d <= limit).then_some(c)
}

/// Levenshtein distance over characters (case-sensitive), in O(len(a) × len(b)) time and
/// O(len(b)) space. Inputs are capped so a 100,000-character name cannot make this quadratic.
fn levenshtein(a: &str, b: &str) -> usize {
    const CAP: usize = 256;
    let a: Vec<char> = a.chars().take(CAP).collect();
    let b: Vec<char> = b.chars().take(CAP).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
