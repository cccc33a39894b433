//! The diagnostic model and its rustc-style renderer.
//!
//! Every problem a front end finds is a [`Diagnostic`] at a byte range of the source, with a
//! stable code from [`codes`]. A [`Diagnostics`] value carries the source text so it can render
//! itself (`error[WFC0301]: ...` with a source excerpt, via `annotate-snippets`) or give
//! line/column positions ([`Diagnostics::located`]) for machine-readable output.

use std::ops::Range;

use crate::syntax::LineIndex;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The definition is invalid.
    Error,
    /// Valid, but probably not what was meant.
    Warning,
    /// Valid and meant; worth knowing (how something the file cannot settle alone is settled).
    Note,
}

/// One problem, at a byte range of the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Stable code, e.g. `WFC0101`.
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// Byte range of the offending node in the source text.
    pub span: Range<usize>,
    /// Secondary spans with their labels.
    pub labels: Vec<(Range<usize>, String)>,
    /// How to fix it, where that is known.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with `code` at `span`.
    pub fn error(code: &'static str, message: impl Into<String>, span: Range<usize>) -> Diagnostic {
        Diagnostic { code, severity: Severity::Error, message: message.into(), span, labels: Vec::new(), help: None }
    }

    /// A note with `code` at `span`.
    pub fn note(code: &'static str, message: impl Into<String>, span: Range<usize>) -> Diagnostic {
        Diagnostic { code, severity: Severity::Note, message: message.into(), span, labels: Vec::new(), help: None }
    }

    /// A warning with `code` at `span`.
    pub fn warning(code: &'static str, message: impl Into<String>, span: Range<usize>) -> Diagnostic {
        Diagnostic { code, severity: Severity::Warning, message: message.into(), span, labels: Vec::new(), help: None }
    }

    /// Adds a secondary span with a label (builder style).
    pub fn with_label(mut self, span: Range<usize>, label: impl Into<String>) -> Diagnostic {
        self.labels.push((span, label.into()));
        self
    }

    /// Sets the help text (builder style).
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
}

/// All diagnostics of one source file, with the text needed to render them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diagnostics {
    /// The path shown in messages.
    pub path: String,
    /// The source text.
    pub text: String,
    /// The diagnostics, in source order.
    pub items: Vec<Diagnostic>,
}

/// A diagnostic with 1-based line/column positions, as `wfc check --format json` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LocatedDiagnostic {
    /// Stable code.
    pub code: String,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// The file.
    pub file: String,
    /// 1-based start line.
    pub line: usize,
    /// 1-based start column (characters).
    pub column: usize,
    /// 1-based end line.
    pub end_line: usize,
    /// 1-based end column (exclusive).
    pub end_column: usize,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostics {
    /// Diagnostics for `path`/`text`, sorted by position (then code) so output is deterministic.
    pub fn new(path: impl Into<String>, text: impl Into<String>, mut items: Vec<Diagnostic>) -> Diagnostics {
        items.sort_by(source_order);
        items.dedup();
        Diagnostics { path: path.into(), text: text.into(), items }
    }

    /// The items in source order, whether or not `items` was built sorted (callers may push
    /// diagnostics into the public field directly).
    fn sorted(&self) -> Vec<&Diagnostic> {
        let mut items: Vec<&Diagnostic> = self.items.iter().collect();
        items.sort_by(|a, b| source_order(a, b));
        items
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.first_error().is_some()
    }

    /// The first error, if any: what a one-line message about a definition that does not load
    /// names.
    pub fn first_error(&self) -> Option<&Diagnostic> {
        self.items.iter().find(|d| d.severity == Severity::Error)
    }

    /// Whether there are no diagnostics at all.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Renders all diagnostics rustc-style, with source excerpts, separated by blank lines.
    /// `color` adds ANSI styling (for terminals).
    pub fn render(&self, color: bool) -> String {
        use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
        let renderer = if color { Renderer::styled() } else { Renderer::plain() };
        let len = self.text.len();
        let clamp = |r: &Range<usize>| {
            let mut s = r.start.min(len);
            while !self.text.is_char_boundary(s) {
                s -= 1;
            }
            let mut e = r.end.clamp(s, len);
            while !self.text.is_char_boundary(e) {
                e += 1;
            }
            s..e
        };
        let mut out = Vec::new();
        for d in self.sorted() {
            let level = match d.severity {
                Severity::Error => Level::ERROR,
                Severity::Warning => Level::WARNING,
                Severity::Note => Level::NOTE,
            };
            let mut snippet = Snippet::source(self.text.as_str())
                .path(self.path.as_str())
                .annotation(AnnotationKind::Primary.span(clamp(&d.span)));
            for (span, label) in &d.labels {
                snippet = snippet.annotation(AnnotationKind::Context.span(clamp(span)).label(label.as_str()));
            }
            let mut group = Group::with_title(level.primary_title(d.message.as_str()).id(d.code)).element(snippet);
            if let Some(help) = &d.help {
                group = group.element(Level::HELP.message(help.as_str()));
            }
            out.push(renderer.render(&[group]));
        }
        let mut s = out.join("\n\n");
        if !s.is_empty() {
            s.push('\n');
        }
        s
    }

    /// Every diagnostic with 1-based line/column positions.
    pub fn located(&self) -> Vec<LocatedDiagnostic> {
        let index = LineIndex::new(&self.text);
        self.sorted()
            .into_iter()
            .map(|d| {
                let (line, column) = index.line_col(&self.text, d.span.start);
                let (end_line, end_column) = index.line_col(&self.text, d.span.end.max(d.span.start));
                LocatedDiagnostic {
                    code: d.code.to_owned(),
                    severity: d.severity,
                    message: d.message.clone(),
                    file: self.path.clone(),
                    line,
                    column,
                    end_line,
                    end_column,
                    help: d.help.clone(),
                }
            })
            .collect()
    }
}

/// Source position first, then code and message, so output is deterministic.
fn source_order(a: &Diagnostic, b: &Diagnostic) -> std::cmp::Ordering {
    (a.span.start, a.span.end, a.code, &a.message).cmp(&(b.span.start, b.span.end, b.code, &b.message))
}

impl std::fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(false))
    }
}

impl std::error::Error for Diagnostics {}

/// Stable diagnostic codes. A code never changes meaning; retired codes are not reused.
///
/// | Code | Meaning |
/// |------|---------|
/// | **WFC01xx** | **Syntax** |
/// | WFC0101 | invalid JSON (strict: no comments, no trailing commas, no control characters in strings) |
/// | WFC0102 | invalid YAML (syntax, tags, several documents, empty document) |
/// | WFC0103 | the document nests too deeply (more than 512 levels) |
/// | WFC0104 | YAML alias expansion exceeds the node budget ("billion laughs") |
/// | WFC0105 | duplicate key in an object |
/// | WFC0106 | a YAML mapping key that is not a string |
/// | **WFC02xx** | **Structure and fields** |
/// | WFC0201 | a field has the wrong JSON type |
/// | WFC0202 | a required field is missing |
/// | WFC0203 | unknown field |
/// | WFC0204 | unknown state `Type` |
/// | WFC0205 | a Map feature wfc does not support (an S3 request member that is not one) |
/// | WFC0206 | JSONata (`QueryLanguage`) is not supported yet |
/// | WFC0207 | unsupported `Version` |
/// | WFC0208 | invalid top-level `TimeoutSeconds` |
/// | WFC0209 | `Parallel` needs a non-empty `Branches` array |
/// | WFC0210 | Parallel branches nest too deeply |
/// | WFC0211 | Fail: `Error`/`ErrorPath` or `Cause`/`CausePath` both given |
/// | WFC0212 | empty `Comment` |
/// | WFC0220 | a DISTRIBUTED-only Map field on an INLINE Map |
/// | WFC0221 | a Map field given both literally and as a path, or under its new and legacy names |
/// | WFC0222 | missing or invalid `ProcessorConfig.ExecutionType` |
/// | WFC0223 | invalid ToleratedFailureCount or ToleratedFailurePercentage |
/// | WFC0224 | invalid ItemReader (resource, Parameters or Arguments); as a warning, an ItemsPath the reader makes ignored |
/// | WFC0225 | invalid ItemReader ReaderConfig (InputType, CSV headers and delimiter, ItemsPointer, Transformation, ManifestType, MaxItems) |
/// | WFC0226 | invalid ItemBatcher |
/// | WFC0227 | invalid ResultWriter |
/// | WFC0228 | invalid Map Label |
/// | WFC0230 | the definition needs a feature this build of wfc leaves out (JSONata, JSON Schema) |
/// | **WFC03xx** | **Graph: transitions, reachability, names** |
/// | WFC0301 | a transition target (`StartAt`, `Next`, `Default`) names no state |
/// | WFC0302 | a transition leaves or enters a Parallel branch |
/// | WFC0303 | duplicate state name |
/// | WFC0304 | invalid state name (empty or longer than 128 characters) |
/// | WFC0305 | neither `Next` nor `End` |
/// | WFC0306 | both `Next` and `End` |
/// | WFC0307 | `End` is not `true` |
/// | WFC0308 | `Next`/`End` on a Choice, Succeed or Fail state |
/// | WFC0309 | unreachable state |
/// | WFC0310 | `States` is empty |
/// | WFC0311 | no terminal state: the machine can never finish |
/// | **WFC04xx** | **Paths and payload templates** |
/// | WFC0401 | invalid Path |
/// | WFC0402 | invalid Reference Path (`ResultPath`) |
/// | WFC0403 | an intrinsic function where only a path is allowed |
/// | WFC0404 | a `.$` template value is not a path string |
/// | WFC0405 | `null` is not allowed for this path |
/// | WFC0406 | warning: a template value looks like a path but its key has no `.$` suffix |
/// | WFC0407 | invalid intrinsic function call (syntax, unknown function, arity, literal argument) |
/// | **WFC05xx** | **Choice** |
/// | WFC0501 | `Choices` is empty |
/// | WFC0502 | a top-level rule has no `Next` |
/// | WFC0503 | a nested rule (inside And/Or/Not) has `Next` |
/// | WFC0504 | a rule has no comparison operator |
/// | WFC0505 | a rule has more than one comparison operator |
/// | WFC0506 | `And`/`Or` is not a non-empty array |
/// | WFC0507 | `Not` is not a single rule object |
/// | WFC0508 | a comparison value has the wrong type |
/// | WFC0509 | `Variable` is missing |
/// | WFC0510 | Choice rules nest too deeply |
/// | WFC0511 | warning: a Choice has no `Default` (no match fails with States.NoChoiceMatched) |
/// | **WFC06xx** | **Retry and Catch** |
/// | WFC0601 | `ErrorEquals` is empty |
/// | WFC0602 | `States.ALL` is not alone in its `ErrorEquals` |
/// | WFC0603 | `States.ALL` is not in the last retrier/catcher |
/// | WFC0604 | unknown `States.` error name |
/// | WFC0605 | invalid `IntervalSeconds` |
/// | WFC0606 | invalid `MaxAttempts` |
/// | WFC0607 | invalid `BackoffRate` |
/// | WFC0608 | invalid `MaxDelaySeconds` |
/// | WFC0609 | invalid `JitterStrategy` |
/// | WFC0610 | warning: an error name that Retry/Catch can never match (States.Runtime, States.DataLimitExceeded) |
/// | **WFC07xx** | **Wait and timestamps** |
/// | WFC0701 | Wait without any of Seconds/Timestamp/SecondsPath/TimestampPath |
/// | WFC0702 | invalid timestamp |
/// | WFC0703 | invalid `Seconds` |
/// | WFC0704 | Wait with more than one of Seconds/Timestamp/SecondsPath/TimestampPath |
/// | **WFC08xx** | **Task** |
/// | WFC0801 | invalid `Resource` |
/// | WFC0802 | invalid `TimeoutSeconds` |
/// | WFC0803 | invalid `HeartbeatSeconds` |
/// | WFC0804 | `HeartbeatSeconds` is not less than `TimeoutSeconds` |
/// | WFC0805 | both a literal and a `*Path` form of a timeout or heartbeat |
pub mod codes {
    /// Invalid JSON.
    pub const JSON_SYNTAX: &str = "WFC0101";
    /// Invalid YAML.
    pub const YAML_SYNTAX: &str = "WFC0102";
    /// The document nests too deeply.
    pub const TOO_DEEP: &str = "WFC0103";
    /// YAML alias expansion exceeds the node budget.
    pub const YAML_ALIAS_LIMIT: &str = "WFC0104";
    /// Duplicate key in an object.
    pub const DUPLICATE_KEY: &str = "WFC0105";
    /// A YAML mapping key that is not a string.
    pub const NON_STRING_KEY: &str = "WFC0106";

    /// A field has the wrong JSON type.
    pub const WRONG_TYPE: &str = "WFC0201";
    /// A required field is missing.
    pub const MISSING_FIELD: &str = "WFC0202";
    /// Unknown field.
    pub const UNKNOWN_FIELD: &str = "WFC0203";
    /// Unknown state `Type`.
    pub const UNKNOWN_STATE_TYPE: &str = "WFC0204";
    /// A Map feature that is not supported yet (the DISTRIBUTED mode and its fields).
    pub const MAP_UNSUPPORTED: &str = "WFC0205";
    /// JSONata is not supported yet.
    pub const JSONATA_UNSUPPORTED: &str = "WFC0206";
    /// Unsupported `Version`.
    pub const BAD_VERSION: &str = "WFC0207";
    /// Invalid top-level `TimeoutSeconds`.
    pub const BAD_MACHINE_TIMEOUT: &str = "WFC0208";
    /// Parallel without branches.
    pub const NO_BRANCHES: &str = "WFC0209";
    /// Parallel branches nest too deeply.
    pub const PARALLEL_TOO_DEEP: &str = "WFC0210";
    /// Fail: a literal and a path form of the same field.
    pub const FAIL_EXCLUSIVE: &str = "WFC0211";
    /// Empty `Comment`.
    pub const EMPTY_COMMENT: &str = "WFC0212";
    /// A DISTRIBUTED-only Map field on an INLINE Map.
    pub const MAP_DISTRIBUTED_ONLY: &str = "WFC0220";
    /// A Map field given both literally and as a path, or under its new and legacy names.
    pub const MAP_EXCLUSIVE: &str = "WFC0221";
    /// Missing or invalid `ProcessorConfig.ExecutionType`.
    pub const BAD_EXECUTION_TYPE: &str = "WFC0222";
    /// Invalid ToleratedFailureCount or ToleratedFailurePercentage.
    pub const BAD_TOLERATED_FAILURE: &str = "WFC0223";
    /// Invalid ItemReader (resource, Parameters or Arguments); a warning for an ItemsPath beside it.
    pub const BAD_ITEM_READER: &str = "WFC0224";
    /// Invalid ItemReader ReaderConfig (InputType, CSV headers and delimiter, ItemsPointer, Transformation, ManifestType, MaxItems).
    pub const BAD_READER_CONFIG: &str = "WFC0225";
    /// Invalid ItemBatcher.
    pub const BAD_ITEM_BATCHER: &str = "WFC0226";
    /// Invalid ResultWriter.
    pub const BAD_RESULT_WRITER: &str = "WFC0227";
    /// Invalid Map Label.
    pub const BAD_MAP_LABEL: &str = "WFC0228";
    /// The definition needs a cargo feature this build of wfc was compiled without (JSONata,
    /// JSON Schema): the message names the feature and how to enable it.
    pub const FEATURE_OFF: &str = "WFC0230";

    /// Unknown transition target.
    pub const UNKNOWN_TARGET: &str = "WFC0301";
    /// A transition crosses a Parallel branch boundary.
    pub const CROSS_SCOPE_TARGET: &str = "WFC0302";
    /// Duplicate state name.
    pub const DUPLICATE_STATE: &str = "WFC0303";
    /// Invalid state name.
    pub const BAD_STATE_NAME: &str = "WFC0304";
    /// Neither `Next` nor `End`.
    pub const NO_TRANSITION: &str = "WFC0305";
    /// Both `Next` and `End`.
    pub const NEXT_AND_END: &str = "WFC0306";
    /// `End` is not `true`.
    pub const END_NOT_TRUE: &str = "WFC0307";
    /// `Next`/`End` on a state that cannot have them.
    pub const TERMINAL_HAS_TRANSITION: &str = "WFC0308";
    /// Unreachable state.
    pub const UNREACHABLE: &str = "WFC0309";
    /// `States` is empty.
    pub const NO_STATES: &str = "WFC0310";
    /// The machine has no terminal state.
    pub const NO_TERMINAL: &str = "WFC0311";

    /// Invalid Path.
    pub const BAD_PATH: &str = "WFC0401";
    /// Invalid Reference Path.
    pub const BAD_REFERENCE_PATH: &str = "WFC0402";
    /// An intrinsic function where only a path is allowed (InputPath, ResultPath, ...).
    pub const INTRINSIC_UNSUPPORTED: &str = "WFC0403";
    /// A `.$` template value is not a path string.
    pub const BAD_TEMPLATE_PATH: &str = "WFC0404";
    /// `null` is not allowed for this path.
    pub const NULL_PATH: &str = "WFC0405";
    /// Warning: a template value looks like a path but its key has no `.$` suffix.
    pub const PATH_WITHOUT_DOLLAR_KEY: &str = "WFC0406";
    /// Invalid intrinsic function call: syntax, unknown function, arity or a literal argument.
    pub const BAD_INTRINSIC: &str = "WFC0407";

    /// `Choices` is empty.
    pub const NO_CHOICES: &str = "WFC0501";
    /// Top-level rule without `Next`.
    pub const RULE_WITHOUT_NEXT: &str = "WFC0502";
    /// Nested rule with `Next`.
    pub const NESTED_RULE_NEXT: &str = "WFC0503";
    /// Rule without operator.
    pub const NO_OPERATOR: &str = "WFC0504";
    /// Rule with several operators.
    pub const MANY_OPERATORS: &str = "WFC0505";
    /// `And`/`Or` not a non-empty array.
    pub const BAD_AND_OR: &str = "WFC0506";
    /// `Not` not a single object.
    pub const BAD_NOT: &str = "WFC0507";
    /// Comparison value of the wrong type.
    pub const BAD_OPERAND: &str = "WFC0508";
    /// `Variable` missing.
    pub const NO_VARIABLE: &str = "WFC0509";
    /// Choice rules nest too deeply.
    pub const CHOICE_TOO_DEEP: &str = "WFC0510";
    /// Warning: Choice without `Default`.
    pub const NO_DEFAULT: &str = "WFC0511";

    /// `ErrorEquals` empty.
    pub const EMPTY_ERROR_EQUALS: &str = "WFC0601";
    /// `States.ALL` not alone.
    pub const ALL_NOT_ALONE: &str = "WFC0602";
    /// `States.ALL` not last.
    pub const ALL_NOT_LAST: &str = "WFC0603";
    /// Unknown `States.` error name.
    pub const UNKNOWN_STATES_ERROR: &str = "WFC0604";
    /// Invalid `IntervalSeconds`.
    pub const BAD_INTERVAL: &str = "WFC0605";
    /// Invalid `MaxAttempts`.
    pub const BAD_MAX_ATTEMPTS: &str = "WFC0606";
    /// Invalid `BackoffRate`.
    pub const BAD_BACKOFF: &str = "WFC0607";
    /// Invalid `MaxDelaySeconds`.
    pub const BAD_MAX_DELAY: &str = "WFC0608";
    /// Invalid `JitterStrategy`.
    pub const BAD_JITTER: &str = "WFC0609";
    /// Warning: an error name Retry/Catch can never match.
    pub const UNMATCHABLE_ERROR: &str = "WFC0610";

    /// Wait without a duration.
    pub const WAIT_NO_DURATION: &str = "WFC0701";
    /// Invalid timestamp.
    pub const BAD_TIMESTAMP: &str = "WFC0702";
    /// Invalid `Seconds`.
    pub const BAD_SECONDS: &str = "WFC0703";
    /// Wait with several durations.
    pub const WAIT_MANY_DURATIONS: &str = "WFC0704";

    /// Invalid `Resource`.
    pub const BAD_RESOURCE: &str = "WFC0801";
    /// Invalid `TimeoutSeconds`.
    pub const BAD_TIMEOUT: &str = "WFC0802";
    /// Invalid `HeartbeatSeconds`.
    pub const BAD_HEARTBEAT: &str = "WFC0803";
    /// `HeartbeatSeconds` not below `TimeoutSeconds`.
    pub const HEARTBEAT_NOT_BELOW_TIMEOUT: &str = "WFC0804";
    /// Literal and path form both given.
    pub const TIMEOUT_EXCLUSIVE: &str = "WFC0805";

    /// Invalid JSONata expression.
    pub const BAD_JSONATA: &str = "WFC0901";
    /// Field of the other query language.
    pub const WRONG_LANGUAGE_FIELD: &str = "WFC0902";
    /// JSONPath state in a JSONata state machine.
    pub const QUERY_LANGUAGE_DOWNGRADE: &str = "WFC0903";
    /// Unknown QueryLanguage.
    pub const BAD_QUERY_LANGUAGE: &str = "WFC0904";
    /// Invalid variable name in Assign.
    pub const BAD_VARIABLE_NAME: &str = "WFC0905";
    /// Variable read but never assigned.
    pub const UNDEFINED_VARIABLE: &str = "WFC0906";
    /// Inner scope assigns an outer variable.
    pub const OUTER_VARIABLE_WRITE: &str = "WFC0907";
    /// Invalid Assign.
    pub const BAD_ASSIGN: &str = "WFC0908";
    /// ErrorPath/CausePath intrinsic that does not return a string.
    pub const FAIL_INTRINSIC_NOT_STRING: &str = "WFC0909";
    /// Invalid JSONata Choice rule.
    pub const BAD_CONDITION: &str = "WFC0910";
    /// Invalid Task `Credentials`.
    pub const BAD_CREDENTIALS: &str = "WFC0911";
    // Serverless Workflow front end (WFC2xxx).
    /// SW: a field has the wrong JSON type.
    pub const SW_WRONG_TYPE: &str = "WFC2001";
    /// SW: a required field is missing.
    pub const SW_MISSING_FIELD: &str = "WFC2002";
    /// SW: unknown field (warning).
    pub const SW_UNKNOWN_FIELD: &str = "WFC2003";
    /// SW: a value outside the allowed set.
    pub const SW_BAD_VALUE: &str = "WFC2004";
    /// SW: duplicate state, function or event name.
    pub const SW_DUPLICATE_NAME: &str = "WFC2005";
    /// SW: undefined function reference.
    pub const SW_UNKNOWN_FUNCTION: &str = "WFC2010";
    /// SW: undefined event reference.
    pub const SW_UNKNOWN_EVENT: &str = "WFC2011";
    /// SW: undefined state reference.
    pub const SW_UNKNOWN_STATE: &str = "WFC2012";
    /// SW: subflow workflowId not compiled together (or invalid).
    pub const SW_UNKNOWN_WORKFLOW: &str = "WFC2013";
    /// SW: subflows form a cycle.
    pub const SW_SUBFLOW_CYCLE: &str = "WFC2014";
    /// SW: more than one start state.
    pub const SW_MANY_STARTS: &str = "WFC2020";
    /// SW: no start state.
    pub const SW_NO_START: &str = "WFC2021";
    /// SW: a switch used as an end state.
    pub const SW_SWITCH_END: &str = "WFC2022";
    /// SW: a switch with its own transition.
    pub const SW_SWITCH_TRANSITION: &str = "WFC2023";
    /// SW: neither transition nor end.
    pub const SW_NO_TRANSITION: &str = "WFC2024";
    /// SW: both transition and end.
    pub const SW_TRANSITION_AND_END: &str = "WFC2025";
    /// SW: unreachable state (warning).
    pub const SW_UNREACHABLE: &str = "WFC2026";
    /// SW: invalid `{{ }}` expression or JsonPath.
    pub const SW_BAD_EXPRESSION: &str = "WFC2030";
    /// SW: text outside a condition's expression (warning).
    pub const SW_CONDITION_TEXT: &str = "WFC2031";
    /// SW: invalid ISO 8601 duration or interval.
    pub const SW_BAD_DURATION: &str = "WFC2040";
    /// SW: invalid cron expression or time zone.
    pub const SW_BAD_CRON: &str = "WFC2041";
    /// SW: invalid dataInputSchema/dataOutputSchema.
    pub const SW_BAD_SCHEMA: &str = "WFC2050";
    /// SW: an event definition without `type` (warning): its type is its name.
    pub const SW_EVENT_TYPE_DEFAULTED: &str = "WFC2006";
    /// SW: a subflow's `workflowId` is not compiled together (note): the handler runs it.
    pub const SW_HANDLER_SUBFLOW: &str = "WFC2015";
    /// SW: v0.5 `onErrors` field this draft's error model has no counterpart for (`code`, `retryRef`).
    pub const SW_UNSUPPORTED_FIELD: &str = "WFC2007";

    /// Every code with a short title, in code order (for docs and `wfc explain`).
    pub const TABLE: &[(&str, &str)] = &[
        (JSON_SYNTAX, "invalid JSON"),
        (YAML_SYNTAX, "invalid YAML"),
        (TOO_DEEP, "document nests too deeply"),
        (YAML_ALIAS_LIMIT, "YAML alias expansion limit exceeded"),
        (DUPLICATE_KEY, "duplicate key"),
        (NON_STRING_KEY, "YAML mapping key is not a string"),
        (WRONG_TYPE, "field has the wrong type"),
        (MISSING_FIELD, "required field missing"),
        (UNKNOWN_FIELD, "unknown field"),
        (UNKNOWN_STATE_TYPE, "unknown state type"),
        (
            MAP_UNSUPPORTED,
            "a Map feature that is not supported: an ItemReader parameter its S3 request does not take, a ResultWriter parameter other than `Bucket`, `Prefix` (see the message)",
        ),
        (JSONATA_UNSUPPORTED, "a JSONata feature that is not supported yet"),
        (BAD_VERSION, "unsupported Version"),
        (BAD_MACHINE_TIMEOUT, "invalid top-level TimeoutSeconds"),
        (NO_BRANCHES, "Parallel without branches"),
        (PARALLEL_TOO_DEEP, "Parallel branches nest too deeply"),
        (FAIL_EXCLUSIVE, "Fail field given both literally and as a path"),
        (EMPTY_COMMENT, "empty Comment"),
        (MAP_DISTRIBUTED_ONLY, "a DISTRIBUTED-only Map field on an INLINE Map"),
        (MAP_EXCLUSIVE, "a Map field given both literally and as a path, or under its new and legacy names"),
        (BAD_EXECUTION_TYPE, "missing or invalid `ProcessorConfig.ExecutionType`"),
        (BAD_TOLERATED_FAILURE, "invalid ToleratedFailureCount or ToleratedFailurePercentage"),
        (
            BAD_ITEM_READER,
            "invalid ItemReader (resource, Parameters or Arguments); as a warning, an ItemsPath the reader makes ignored",
        ),
        (
            BAD_READER_CONFIG,
            "invalid ItemReader ReaderConfig (InputType, CSV headers and delimiter, ItemsPointer, Transformation, ManifestType, MaxItems)",
        ),
        (BAD_ITEM_BATCHER, "invalid ItemBatcher"),
        (BAD_RESULT_WRITER, "invalid ResultWriter (Resource, Parameters or Arguments, WriterConfig)"),
        (BAD_MAP_LABEL, "invalid Map Label"),
        (FEATURE_OFF, "the definition needs a feature this build of wfc leaves out (JSONata, JSON Schema)"),
        (UNKNOWN_TARGET, "unknown transition target"),
        (CROSS_SCOPE_TARGET, "transition crosses a Parallel branch boundary"),
        (DUPLICATE_STATE, "duplicate state name"),
        (BAD_STATE_NAME, "invalid state name"),
        (NO_TRANSITION, "neither Next nor End"),
        (NEXT_AND_END, "both Next and End"),
        (END_NOT_TRUE, "End is not true"),
        (TERMINAL_HAS_TRANSITION, "Next/End on a Choice, Succeed or Fail state"),
        (UNREACHABLE, "unreachable state"),
        (NO_STATES, "States is empty"),
        (NO_TERMINAL, "no terminal state"),
        (BAD_PATH, "invalid Path"),
        (BAD_REFERENCE_PATH, "invalid Reference Path"),
        (INTRINSIC_UNSUPPORTED, "intrinsic function where only a path is allowed"),
        (BAD_TEMPLATE_PATH, "template path value is not a path string"),
        (NULL_PATH, "null not allowed for this path"),
        (PATH_WITHOUT_DOLLAR_KEY, "path-like template value without a `.$` key"),
        (BAD_INTRINSIC, "invalid intrinsic function call"),
        (NO_CHOICES, "Choices is empty"),
        (RULE_WITHOUT_NEXT, "top-level Choice rule without Next"),
        (NESTED_RULE_NEXT, "nested Choice rule with Next"),
        (NO_OPERATOR, "Choice rule without an operator"),
        (MANY_OPERATORS, "Choice rule with several operators"),
        (BAD_AND_OR, "And/Or is not a non-empty array"),
        (BAD_NOT, "Not is not a single rule"),
        (BAD_OPERAND, "comparison value of the wrong type"),
        (NO_VARIABLE, "Variable missing"),
        (CHOICE_TOO_DEEP, "Choice rules nest too deeply"),
        (NO_DEFAULT, "Choice without Default"),
        (EMPTY_ERROR_EQUALS, "ErrorEquals is empty"),
        (ALL_NOT_ALONE, "States.ALL is not alone"),
        (ALL_NOT_LAST, "States.ALL is not last"),
        (UNKNOWN_STATES_ERROR, "unknown States. error name"),
        (BAD_INTERVAL, "invalid IntervalSeconds"),
        (BAD_MAX_ATTEMPTS, "invalid MaxAttempts"),
        (BAD_BACKOFF, "invalid BackoffRate"),
        (BAD_MAX_DELAY, "invalid MaxDelaySeconds"),
        (BAD_JITTER, "invalid JitterStrategy"),
        (UNMATCHABLE_ERROR, "error name Retry/Catch can never match"),
        (WAIT_NO_DURATION, "Wait without a duration"),
        (BAD_TIMESTAMP, "invalid timestamp"),
        (BAD_SECONDS, "invalid Seconds"),
        (WAIT_MANY_DURATIONS, "Wait with several durations"),
        (BAD_RESOURCE, "invalid Resource"),
        (BAD_TIMEOUT, "invalid TimeoutSeconds"),
        (BAD_HEARTBEAT, "invalid HeartbeatSeconds"),
        (HEARTBEAT_NOT_BELOW_TIMEOUT, "HeartbeatSeconds not below TimeoutSeconds"),
        (TIMEOUT_EXCLUSIVE, "literal and path form both given"),
        (BAD_JSONATA, "invalid JSONata expression"),
        (WRONG_LANGUAGE_FIELD, "field of the other query language"),
        (QUERY_LANGUAGE_DOWNGRADE, "JSONPath state in a JSONata state machine"),
        (BAD_QUERY_LANGUAGE, "unknown QueryLanguage"),
        (BAD_VARIABLE_NAME, "invalid variable name in Assign"),
        (UNDEFINED_VARIABLE, "variable read but never assigned"),
        (OUTER_VARIABLE_WRITE, "inner scope assigns an outer variable"),
        (BAD_ASSIGN, "invalid Assign"),
        (FAIL_INTRINSIC_NOT_STRING, "ErrorPath/CausePath intrinsic that does not return a string"),
        (BAD_CONDITION, "invalid JSONata Choice rule"),
        (BAD_CREDENTIALS, "invalid Task Credentials"),
        (SW_WRONG_TYPE, "SW: a field has the wrong JSON type"),
        (SW_MISSING_FIELD, "SW: a required field is missing"),
        (SW_UNKNOWN_FIELD, "SW: unknown field (warning)"),
        (SW_BAD_VALUE, "SW: a value outside the allowed set"),
        (SW_DUPLICATE_NAME, "SW: duplicate state, function or event name"),
        (SW_UNKNOWN_FUNCTION, "SW: undefined function reference"),
        (SW_UNKNOWN_EVENT, "SW: undefined event reference"),
        (SW_UNKNOWN_STATE, "SW: undefined state reference"),
        (SW_UNKNOWN_WORKFLOW, "SW: subflow workflowId not compiled together (or invalid)"),
        (SW_SUBFLOW_CYCLE, "SW: subflows form a cycle"),
        (SW_MANY_STARTS, "SW: more than one start state"),
        (SW_NO_START, "SW: no start state"),
        (SW_SWITCH_END, "SW: a switch used as an end state"),
        (SW_SWITCH_TRANSITION, "SW: a switch with its own transition"),
        (SW_NO_TRANSITION, "SW: neither transition nor end"),
        (SW_TRANSITION_AND_END, "SW: both transition and end"),
        (SW_UNREACHABLE, "SW: unreachable state (warning)"),
        (SW_BAD_EXPRESSION, "SW: invalid `{{ }}` expression or JsonPath"),
        (SW_CONDITION_TEXT, "SW: text outside a condition's expression (warning)"),
        (SW_BAD_DURATION, "SW: invalid ISO 8601 duration or interval"),
        (SW_BAD_CRON, "SW: invalid cron expression or time zone"),
        (SW_BAD_SCHEMA, "SW: invalid or unreadable dataInputSchema/dataOutputSchema"),
        (SW_EVENT_TYPE_DEFAULTED, "SW: event without `type`: its type is its name (warning)"),
        (SW_UNSUPPORTED_FIELD, "SW: a field wfc cannot honour (v0.5 `onErrors` `code`/`retryRef`)"),
        (SW_HANDLER_SUBFLOW, "SW: subflow not compiled together: run by the handler (note)"),
    ];

    /// The short title of `code`, if it is one of ours.
    pub fn title(code: &str) -> Option<&'static str> {
        TABLE.iter().find(|(c, _)| *c == code).map(|(_, t)| *t)
    }
}
