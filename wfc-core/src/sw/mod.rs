//! The Serverless Workflow front end (the 2020-08 working draft, released with small changes as
//! v0.5): spanned tree → validation with located diagnostics → [`wfc_ir::Workflow`] of
//! [`wfc_ir::StateKind::Sw`] states.
//!
//! One pass walks the spanned tree ([`crate::syntax`]), checks each field and builds the IR
//! directly (the spanned tree is the AST: every value keeps its byte range, so every diagnostic
//! points at what it is about). State names are collected first so transitions resolve to
//! indices on the spot. Function and event references are resolved against the definition's
//! `functions` and `events`; a subflow's `workflowId` is resolved against the registry of SW
//! workflows compiled together ([`crate::Settings::sw_workflow`]), and the referenced workflow is
//! lowered and embedded (a cycle of subflows is an error).

mod states;
pub mod time;

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;
use wfc_ir::sw::{Correlation, EventDef, Expr, ExprPart, Schedule, SwKind, SwNext, SwWorkflowMeta};
use wfc_ir::{Location, Path, State, StateKind, StateMachine, Workflow};

use crate::diagnostics::{Diagnostic, codes};
use crate::syntax::{self, LineIndex, SpannedValue, ValueKind};
use crate::{Diagnostics, Features, FileReader, Format, Loaded, Source};

/// Deepest chain of subflows (a workflow embedding a workflow embedding ...) accepted.
pub const MAX_SUBFLOW_DEPTH: usize = 16;

/// Whether `tree` looks like an SW definition: an object with a lowercase `states` array and
/// no ASL `States`.
pub fn looks_like_sw(path: &str, text: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".sw.json") || lower.ends_with(".sw.yaml") || lower.ends_with(".sw.yml") {
        return true;
    }
    if lower.ends_with(".asl.json") || lower.ends_with(".asl.yaml") || lower.ends_with(".asl.yml") {
        return false;
    }
    match syntax::parse(text, Format::from_path(path)) {
        Ok(tree) => tree.get("states").is_some() && tree.get("States").is_none(),
        Err(_) => false,
    }
}

/// Parses, validates and lowers an SW definition; `registry` holds the other SW workflows it may
/// reference by `workflowId`. Schema URIs cannot be read (see [`load_with`]).
pub fn load(source: Source<'_>, registry: &[(String, String)]) -> Result<Loaded, Diagnostics> {
    load_with(source, registry, None, Features::COMPILED)
}

/// [`load`], reading the files the definition names (`dataInputSchema` URIs) with `reader`, and
/// accepting only the optional languages in `features` (a schema is error `WFC0230` without
/// `features.json_schema`).
pub fn load_with(
    source: Source<'_>,
    registry: &[(String, String)],
    reader: Option<&FileReader>,
    features: Features,
) -> Result<Loaded, Diagnostics> {
    load_nested(source, registry, reader, features.and_compiled(), &mut Vec::new())
}

fn load_nested(
    source: Source<'_>,
    registry: &[(String, String)],
    reader: Option<&FileReader>,
    features: Features,
    stack: &mut Vec<String>,
) -> Result<Loaded, Diagnostics> {
    let format = Format::from_path(source.path);
    let (tree, syntax_diags) = syntax::parse_recovering(source.text, format);
    let Some(tree) = tree else {
        return Err(Diagnostics::new(source.path, source.text, syntax_diags));
    };
    let mut cx = Cx {
        text: source.text,
        lines: LineIndex::new(source.text),
        diags: syntax_diags,
        registry,
        reader,
        path: source.path,
        features,
        schema_off_reported: false,
        stack,
        state_spans: Vec::new(),
    };
    let workflow = cx.workflow(&tree, source.path);
    let diags = Diagnostics::new(source.path, source.text, cx.diags);
    match workflow {
        Some(workflow) if !diags.has_errors() => Ok(Loaded { workflow, warnings: diags }),
        _ => Err(diags),
    }
}

/// The `id` of an SW definition text, if it has one.
fn workflow_id(path: &str, text: &str) -> Option<String> {
    let tree = syntax::parse(text, Format::from_path(path)).ok()?;
    tree.get("id")?.as_str().map(str::to_owned)
}

struct Cx<'a, 's> {
    text: &'a str,
    lines: LineIndex,
    diags: Vec<Diagnostic>,
    registry: &'a [(String, String)],
    /// Reads the files the definition names (schemas), relative to [`Cx::path`].
    reader: Option<&'a FileReader>,
    /// The definition's path, which relative schema paths are resolved against.
    path: &'a str,
    /// The optional languages available (JSON Schema); subflows compiled together share them.
    features: Features,
    /// WFC0230 has been reported for a schema (once per definition: it is one fix).
    schema_off_reported: bool,
    stack: &'s mut Vec<String>,
    /// The span of each top-level state, for messages about whole states.
    state_spans: Vec<Range<usize>>,
}

/// What the definition declares, for resolving references.
#[derive(Default)]
struct Defs {
    functions: HashMap<String, String>,
    events: HashMap<String, EventDef>,
    states: HashMap<String, usize>,
}

const STATE_COMMON: &[&str] = &[
    "name",
    "type",
    "start",
    "end",
    "transition",
    "stateDataFilter",
    "retry",
    "onError",
    "onErrors",
    "metadata",
    "dataInputSchema",
    "dataOutputSchema",
];

impl Cx<'_, '_> {
    fn error(&mut self, code: &'static str, message: impl Into<String>, span: Range<usize>) {
        self.diags.push(Diagnostic::error(code, message, span));
    }

    fn location(&self, offset: usize) -> Location {
        let (line, column) = self.lines.line_col(self.text, offset);
        Location { line: u32::try_from(line).unwrap_or(u32::MAX), column: u32::try_from(column).unwrap_or(u32::MAX) }
    }

    fn required<'v>(&mut self, obj: &'v SpannedValue, key: &str, what: &str) -> Option<&'v SpannedValue> {
        let v = obj.get(key);
        if v.is_none() {
            self.error(codes::SW_MISSING_FIELD, format!("{what} has no `{key}`"), obj.span.clone());
        }
        v
    }

    fn string(&mut self, v: &SpannedValue, what: &str) -> Option<String> {
        match v.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.error(
                    codes::SW_WRONG_TYPE,
                    format!("{what} must be a string, not {}", v.kind.type_name()),
                    v.span.clone(),
                );
                None
            }
        }
    }

    fn opt_string(&mut self, obj: &SpannedValue, key: &str, what: &str) -> Option<String> {
        let v = obj.get(key)?;
        self.string(v, &format!("{what} `{key}`"))
    }

    fn array<'v>(&mut self, v: &'v SpannedValue, what: &str) -> &'v [SpannedValue] {
        match v.as_array() {
            Some(a) => a,
            None => {
                self.error(
                    codes::SW_WRONG_TYPE,
                    format!("{what} must be an array, not {}", v.kind.type_name()),
                    v.span.clone(),
                );
                &[]
            }
        }
    }

    fn is_object(&mut self, v: &SpannedValue, what: &str) -> bool {
        if v.as_object().is_some() {
            return true;
        }
        self.error(
            codes::SW_WRONG_TYPE,
            format!("{what} must be an object, not {}", v.kind.type_name()),
            v.span.clone(),
        );
        false
    }

    fn unknown_fields(&mut self, obj: &SpannedValue, allowed: &[&str], extra: &[&str], what: &str) {
        let Some(entries) = obj.as_object() else { return };
        for (k, _) in entries {
            if !allowed.contains(&k.name.as_str()) && !extra.contains(&k.name.as_str()) {
                self.diags.push(Diagnostic::warning(
                    codes::SW_UNKNOWN_FIELD,
                    format!("{what} has an unknown field `{}`; it is ignored", k.name),
                    k.span.clone(),
                ));
            }
        }
    }

    /// An expression string: literal text and `{{ JsonPath }}` parts.
    fn expr(&mut self, v: &SpannedValue, what: &str) -> Option<Expr> {
        let text = self.string(v, what)?;
        match parse_expr(&text) {
            Ok(e) => Some(e),
            Err(msg) => {
                self.error(codes::SW_BAD_EXPRESSION, format!("{what}: {msg}"), v.span.clone());
                None
            }
        }
    }

    /// An expression that must select data (one `{{ }}` and nothing else but spaces).
    fn path_expr(&mut self, v: &SpannedValue, what: &str) -> Option<Expr> {
        let e = self.expr(v, what)?;
        if e.as_path().is_none() {
            self.error(
                codes::SW_BAD_EXPRESSION,
                format!("{what} must be exactly one `{{{{ JsonPath }}}}` expression"),
                v.span.clone(),
            );
            return None;
        }
        Some(e)
    }

    /// A condition: at least one `{{ }}` expression.
    fn condition(&mut self, v: &SpannedValue, what: &str) -> Option<Expr> {
        let e = self.expr(v, what)?;
        if !e.parts.iter().any(|p| matches!(p, ExprPart::Path(_))) {
            self.error(
                codes::SW_BAD_EXPRESSION,
                format!("{what} holds no `{{{{ JsonPath }}}}` expression"),
                v.span.clone(),
            );
            return None;
        }
        if e.as_path().is_none() {
            self.diags.push(Diagnostic::warning(
                codes::SW_CONDITION_TEXT,
                format!("{what} has text outside its `{{{{ }}}}`; only the expressions decide it"),
                v.span.clone(),
            ));
        }
        Some(e)
    }

    /// Checks every expression in a JSON template (parameters, event data).
    fn template(&mut self, v: &SpannedValue, what: &str) -> Value {
        match &v.kind {
            ValueKind::String(_) => {
                self.expr(v, what);
            }
            ValueKind::Array(items) => {
                for i in items {
                    self.template(i, what);
                }
            }
            ValueKind::Object(entries) => {
                for (_, i) in entries {
                    self.template(i, what);
                }
            }
            _ => {}
        }
        v.to_json()
    }

    fn duration(&mut self, v: &SpannedValue, what: &str) -> Option<f64> {
        let text = self.string(v, what)?;
        match time::parse_duration(&text) {
            Ok(d) => Some(d),
            Err(msg) => {
                self.error(codes::SW_BAD_DURATION, format!("{what}: {msg}"), v.span.clone());
                None
            }
        }
    }

    fn opt_duration(&mut self, obj: &SpannedValue, key: &str, what: &str) -> Option<f64> {
        let v = obj.get(key)?;
        self.duration(v, &format!("{what} `{key}`"))
    }

    // ---------------------------------------------------------------------------------------
    // The workflow

    fn workflow(&mut self, tree: &SpannedValue, path: &str) -> Option<Workflow> {
        if !self.is_object(tree, "an SW workflow definition") {
            return None;
        }
        self.unknown_fields(
            tree,
            &[
                "id",
                "name",
                "description",
                "version",
                "schemaVersion",
                "metadata",
                "functions",
                "events",
                "states",
                "dataInputSchema",
                "dataOutputSchema",
                "expressionLanguage",
                "extensions",
            ],
            &[],
            "the workflow",
        );
        let id = self.required(tree, "id", "the workflow").and_then(|v| self.string(v, "`id`"));
        let name = self.required(tree, "name", "the workflow").and_then(|v| self.string(v, "`name`"));
        let description = self.opt_string(tree, "description", "the workflow");
        let version = self.opt_string(tree, "version", "the workflow");
        if let Some(v) = tree.get("schemaVersion") {
            self.string(v, "`schemaVersion`");
        }
        let mut defs = Defs::default();
        let mut functions = Vec::new();
        if let Some(fs) = tree.get("functions") {
            for f in self.array(fs, "`functions`") {
                if !self.is_object(f, "a function definition") {
                    continue;
                }
                self.unknown_fields(
                    f,
                    &["name", "resource", "type", "metadata", "operation"],
                    &[],
                    "a function definition",
                );
                let fname =
                    self.required(f, "name", "a function definition").and_then(|v| self.string(v, "a function `name`"));
                let resource = self
                    .opt_string(f, "resource", "a function")
                    .or_else(|| self.opt_string(f, "operation", "a function"));
                if f.get("resource").is_none() && f.get("operation").is_none() {
                    self.error(codes::SW_MISSING_FIELD, "a function definition has no `resource`", f.span.clone());
                }
                if let Some(n) = fname {
                    if defs.functions.contains_key(&n) {
                        self.error(
                            codes::SW_DUPLICATE_NAME,
                            format!("the function `{n}` is defined twice"),
                            f.get("name").map_or(f.span.clone(), |v| v.span.clone()),
                        );
                    }
                    let resource = resource.unwrap_or_default();
                    defs.functions.insert(n.clone(), resource.clone());
                    functions.push((n, resource));
                }
            }
        }
        if let Some(es) = tree.get("events") {
            for e in self.array(es, "`events`") {
                if let Some(def) = self.event_def(e) {
                    if defs.events.contains_key(&def.name) {
                        self.error(
                            codes::SW_DUPLICATE_NAME,
                            format!("the event `{}` is defined twice", def.name),
                            e.span.clone(),
                        );
                    }
                    defs.events.insert(def.name.clone(), def);
                }
            }
        }
        let input_schema = self.schema(tree, "dataInputSchema");
        let output_schema = self.schema(tree, "dataOutputSchema");
        let states_v = self.required(tree, "states", "the workflow")?;
        let states = self.array(states_v, "`states`");
        if states.is_empty() {
            self.error(
                codes::SW_MISSING_FIELD,
                "`states` is empty: a workflow needs at least one state",
                states_v.span.clone(),
            );
            return None;
        }
        // Names first, so transitions resolve on the spot.
        for (i, s) in states.iter().enumerate() {
            if let Some(n) = s.get("name").and_then(SpannedValue::as_str) {
                if defs.states.contains_key(n) {
                    self.error(
                        codes::SW_DUPLICATE_NAME,
                        format!("two states are named `{n}`"),
                        s.get("name").map_or(s.span.clone(), |v| v.span.clone()),
                    );
                } else {
                    defs.states.insert(n.to_owned(), i);
                }
            }
        }
        let mut start: Option<(usize, Range<usize>)> = None;
        let mut schedule = None;
        for (i, s) in states.iter().enumerate() {
            if let Some(st) = s.get("start") {
                if let Some((_, first)) = &start {
                    let first = first.clone();
                    self.diags.push(
                        Diagnostic::error(codes::SW_MANY_STARTS, "more than one state has `start`", st.span.clone())
                            .with_label(first, "the first start state"),
                    );
                } else {
                    start = Some((i, st.span.clone()));
                    schedule = self.start_def(st);
                }
            }
        }
        let Some((start_at, _)) = start else {
            // At the `states` key: in YAML the array's own span starts at its first item.
            let at = tree
                .as_object()
                .and_then(|entries| entries.iter().find(|(k, _)| k.name == "states"))
                .map_or(states_v.span.clone(), |(k, _)| k.span.start..states_v.span.end);
            self.error(
                codes::SW_NO_START,
                "no state has `start`: mark the first state with `\"start\": {\"kind\": \"default\"}`",
                at,
            );
            return None;
        };
        self.state_spans = states.iter().map(|s| s.span.clone()).collect();
        let mut out = Vec::new();
        for s in states {
            out.push(self.state(s, &defs));
        }
        let mut states: Vec<State> = out.into_iter().collect::<Option<_>>()?;
        self.reachability(&states, start_at, tree);
        let id = id.unwrap_or_default();
        if let Some(State { kind: StateKind::Sw(sw), .. }) = states.get_mut(start_at) {
            sw.workflow =
                Some(Box::new(SwWorkflowMeta { id: id.clone(), input_schema, output_schema, schedule, functions }));
        }
        let file_name = {
            let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
            file.split('.').next().unwrap_or(file).to_owned()
        };
        let _ = name;
        Some(Workflow {
            name: if file_name.is_empty() { id } else { file_name },
            comment: description,
            version,
            timeout_seconds: None,
            machine: StateMachine { start_at, states },
        })
    }

    /// A `dataInputSchema`/`dataOutputSchema` (of the workflow or a state): the draft's URI, read
    /// now as a file relative to the definition (the compiled program carries the schema, so it
    /// does no I/O at run time), or an inline JSON Schema object.
    pub(super) fn schema(&mut self, obj: &SpannedValue, key: &str) -> Option<Value> {
        let v = obj.get(key)?;
        let (schema, span) = match &v.kind {
            ValueKind::Object(_) => (v.to_json(), v.span.clone()),
            ValueKind::String(uri) => (self.read_schema(uri, key, v)?, v.span.clone()),
            _ => {
                self.error(
                    codes::SW_WRONG_TYPE,
                    format!("`{key}` must be a URI (a file path relative to this definition) or a JSON Schema object"),
                    v.span.clone(),
                );
                return None;
            }
        };
        self.check_schema(schema, key, span)
    }

    /// Validates a schema itself, with the `json-schema` feature; without it a schema is error
    /// WFC0230 (the program could not check data against it), reported once per definition.
    #[cfg(feature = "json-schema")]
    fn check_schema(&mut self, schema: Value, key: &str, span: Range<usize>) -> Option<Value> {
        if !self.features.json_schema {
            return self.schema_off(key, span);
        }
        if let Err(e) = jsonschema::validator_for(&schema) {
            self.error(codes::SW_BAD_SCHEMA, format!("`{key}` is not a valid JSON Schema: {e}"), span);
            return None;
        }
        Some(schema)
    }

    #[cfg(not(feature = "json-schema"))]
    fn check_schema(&mut self, _schema: Value, key: &str, span: Range<usize>) -> Option<Value> {
        self.schema_off(key, span)
    }

    fn schema_off(&mut self, key: &str, span: Range<usize>) -> Option<Value> {
        if !self.schema_off_reported {
            self.schema_off_reported = true;
            self.diags.push(
                Diagnostic::error(
                    codes::FEATURE_OFF,
                    format!(
                        "`{key}` needs JSON Schema validation, which this build of wfc leaves out (cargo feature `json-schema`)"
                    ),
                    span,
                )
                .with_help(
                    "enable it on the runtime: `wfc-runtime = { version = \"0.1\", features = [\"json-schema\"] }` \
                     (for wfc-build in build.rs, on wfc-build as well); the `wfc` command has it",
                ),
            );
        }
        None
    }

    /// Reads a schema URI: a path (or `file:` URI) relative to the definition's directory.
    fn read_schema(&mut self, uri: &str, key: &str, at: &SpannedValue) -> Option<Value> {
        let relative = uri.strip_prefix("file://").or_else(|| uri.strip_prefix("file:")).unwrap_or(uri);
        if relative.contains("://") || relative.is_empty() {
            self.diags.push(
                Diagnostic::error(
                    codes::SW_BAD_SCHEMA,
                    format!("`{key}` is `{uri}`: wfc reads a schema from a file at build time, not from the network"),
                    at.span.clone(),
                )
                .with_help(
                    "save the schema beside the definition and name it by a relative path (`schemas/input.json`)",
                ),
            );
            return None;
        }
        let base = std::path::Path::new(self.path).parent().unwrap_or(std::path::Path::new(""));
        let full = base.join(relative);
        let Some(reader) = self.reader else {
            self.error(
                codes::SW_BAD_SCHEMA,
                format!("`{key}` names the file `{}`, but this compilation reads no files", full.display()),
                at.span.clone(),
            );
            return None;
        };
        let text = match reader.read(&full) {
            Ok(t) => t,
            Err(e) => {
                self.error(
                    codes::SW_BAD_SCHEMA,
                    format!("`{key}`: cannot read `{}`: {e}", full.display()),
                    at.span.clone(),
                );
                return None;
            }
        };
        let parsed = syntax::parse(&text, Format::from_path(&full.to_string_lossy()))
            .map(|t| t.to_json())
            .map_err(|d| d.first().map(|d| d.message.clone()).unwrap_or_default());
        match parsed {
            Ok(schema) => Some(schema),
            Err(e) => {
                self.error(
                    codes::SW_BAD_SCHEMA,
                    format!("`{key}`: `{}` is not a JSON (or YAML) document: {e}", full.display()),
                    at.span.clone(),
                );
                None
            }
        }
    }

    fn event_def(&mut self, e: &SpannedValue) -> Option<EventDef> {
        if !self.is_object(e, "an event definition") {
            return None;
        }
        self.unknown_fields(
            e,
            &["name", "source", "type", "kind", "correlation", "metadata"],
            &[],
            "an event definition",
        );
        let name = self.required(e, "name", "an event definition").and_then(|v| self.string(v, "an event `name`"));
        // The draft requires `type`, but its *Event Based Service Invocation* example (and the
        // v0.5 vet appointment example) leave it out. One rule for both kinds: the type is the
        // event's name, said in a warning, so a produced event has a type and a consumed one
        // is matched by the type a producer following the same rule gives it.
        let event_type = match e.get("type") {
            Some(v) => self.string(v, "an event `type`"),
            None => {
                let n = name.clone();
                if let Some(n) = &n {
                    self.diags.push(
                        Diagnostic::warning(
                            codes::SW_EVENT_TYPE_DEFAULTED,
                            format!("the event `{n}` has no `type`: its CloudEvent type is taken to be `{n}`"),
                            e.span.clone(),
                        )
                        .with_help("give the event a `type` (the draft requires one)"),
                    );
                }
                n
            }
        };
        let source = self.opt_string(e, "source", "an event");
        let produced = match e.get("kind") {
            None => false,
            Some(k) => match k.as_str() {
                Some("consumed") => false,
                Some("produced") => true,
                _ => {
                    self.error(codes::SW_BAD_VALUE, "an event `kind` is `consumed` or `produced`", k.span.clone());
                    false
                }
            },
        };
        let mut correlation = Vec::new();
        if let Some(c) = e.get("correlation") {
            for item in self.array(c, "`correlation`") {
                if !self.is_object(item, "a correlation definition") {
                    continue;
                }
                let Some(n) = self
                    .required(item, "contextAttributeName", "a correlation definition")
                    .and_then(|v| self.string(v, "`contextAttributeName`"))
                else {
                    continue;
                };
                let value = self.opt_string(item, "contextAttributeValue", "a correlation");
                correlation.push(Correlation { name: n, value });
            }
        }
        Some(EventDef { name: name?, source, event_type: event_type?, produced, correlation })
    }

    fn start_def(&mut self, st: &SpannedValue) -> Option<Schedule> {
        if matches!(st.kind, ValueKind::Bool(true)) {
            return None;
        }
        if !self.is_object(st, "`start`") {
            return None;
        }
        let kind = self.required(st, "kind", "`start`").and_then(|v| v.as_str().map(str::to_owned).or_else(|| None));
        match kind.as_deref() {
            Some("default") | None => None,
            Some("scheduled") => {
                let Some(sch) = self.required(st, "schedule", "a scheduled `start`") else { return None };
                if !self.is_object(sch, "`schedule`") {
                    return None;
                }
                let interval = sch.get("interval").and_then(|v| {
                    let text = self.string(v, "`interval`")?;
                    match time::parse_interval(&text) {
                        Ok(i) => Some(i),
                        Err(msg) => {
                            self.error(codes::SW_BAD_DURATION, format!("`interval`: {msg}"), v.span.clone());
                            None
                        }
                    }
                });
                let cron = sch.get("cron").and_then(|v| {
                    let text = self.string(v, "`cron`")?;
                    if let Err(msg) = time::check_cron(&text) {
                        self.error(codes::SW_BAD_CRON, format!("`cron`: {msg}"), v.span.clone());
                    }
                    Some(text)
                });
                let timezone = sch.get("timezone").and_then(|v| {
                    let text = self.string(v, "`timezone`")?;
                    if jiff::tz::TimeZone::get(&text).is_err() {
                        self.error(
                            codes::SW_BAD_CRON,
                            format!("`timezone`: `{text}` is not an IANA time zone"),
                            v.span.clone(),
                        );
                    }
                    Some(text)
                });
                if sch.get("interval").is_none() && sch.get("cron").is_none() {
                    self.error(codes::SW_MISSING_FIELD, "a `schedule` needs `interval` or `cron`", sch.span.clone());
                }
                let direct_invoke = match sch.get("directInvoke").map(|v| (v.as_str(), v.span.clone())) {
                    None | Some((Some("allow" | "enabled"), _)) => true,
                    Some((Some("deny" | "disabled"), _)) => false,
                    Some((_, span)) => {
                        self.error(codes::SW_BAD_VALUE, "`directInvoke` is `allow` or `deny`", span);
                        true
                    }
                };
                Some(Schedule { interval, cron, timezone, direct_invoke })
            }
            Some(_) => {
                let span = st.get("kind").map_or(st.span.clone(), |v| v.span.clone());
                self.error(codes::SW_BAD_VALUE, "a `start` `kind` is `default` or `scheduled`", span);
                None
            }
        }
    }

    fn reachability(&mut self, states: &[State], start: usize, _tree: &SpannedValue) {
        let mut seen = vec![false; states.len()];
        let mut todo = vec![start];
        while let Some(i) = todo.pop() {
            if i >= seen.len() || seen[i] {
                continue;
            }
            seen[i] = true;
            if let Some(State { kind: StateKind::Sw(sw), .. }) = states.get(i) {
                let mut push = |n: &SwNext| {
                    if let SwNext::Transition { target, .. } = n {
                        todo.push(*target);
                    }
                };
                push(&sw.next);
                for e in &sw.on_error {
                    push(&e.next);
                }
                if let SwKind::Switch { data, events, default, .. } = &sw.kind {
                    data.iter().for_each(|c| push(&c.next));
                    events.iter().for_each(|c| push(&c.next));
                    if let Some(d) = default {
                        push(d);
                    }
                }
            }
        }
        for (i, s) in states.iter().enumerate() {
            if !seen[i] {
                let span = self.state_spans.get(i).cloned().unwrap_or(0..0);
                self.diags.push(Diagnostic::warning(
                    codes::SW_UNREACHABLE,
                    format!("the state `{}` is never reached", s.name),
                    span,
                ));
            }
        }
    }
}

/// Splits a string into literal text and `{{ JsonPath }}` parts, parsing each path.
pub fn parse_expr(text: &str) -> Result<Expr, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            parts.push(ExprPart::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| "a `{{` has no closing `}}`".to_owned())?;
        let inner = after[..close].trim();
        if inner.is_empty() {
            return Err("an empty `{{ }}` expression".to_owned());
        }
        let path = Path::parse(inner).map_err(|e| format!("`{inner}` is not a JsonPath: {e}"))?;
        parts.push(ExprPart::Path(path));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        parts.push(ExprPart::Text(rest.to_owned()));
    }
    Ok(Expr { text: text.to_owned(), parts })
}
