//! `TestState`: runs one state, alone (`definition` is a state) or taken from a full definition
//! (`stateName`), with the given input, and answers as AWS does: `output`, `error`/`cause`,
//! `nextState`, `status` (`SUCCEEDED`, `FAILED`, `RETRIABLE`, `CAUGHT_ERROR`) and, at the
//! `DEBUG`/`TRACE` inspection levels, `inspectionData`.
//!
//! The state runs on the runtime's interpreter, not on a second one: it is wrapped in a small
//! machine whose other states are `Succeed` placeholders standing for the states it can go to,
//! so the runtime's own state execution decides the output and the transition, and the
//! placeholder entered names `nextState` (its input is the tested state's output).
//!
//! A Map or Parallel state runs only with a `mock` (as on AWS): its result (an array: one
//! element per item, or per branch) or its error stands for its iterations or branches, which
//! do not run; the state's own data flow (InputPath, ResultSelector, ResultPath, OutputPath,
//! Assign, Output, Retry, Catch) applies to it. `stateConfiguration` says what a whole run would
//! have reached: `retrierRetryCount` (the retries already made), `mapIterationFailureCount`
//! (failed iterations, against the Map's tolerated failure count or percentage),
//! `mapItemReaderData` (the items a Distributed Map's ItemReader read, for the inspection data
//! and the percentage) and `errorCausedByState` (which state inside the Map or Parallel raised
//! the mocked error). `context` is laid over the context object the state sees as `$$`
//! ([`wfc_runtime::io::overlay_context`]).
//!
//! AWS does not retry inside TestState: a failure that a retrier with attempts left matches is
//! `RETRIABLE` (with the retrier's index and back-off). So the state runs without its `Retry`;
//! when it has one, it runs first without its `Catch` too, to see the raw error; only if no
//! retrier takes it does it run again with its `Catch`, and the Task's calls of the first run are
//! replayed, not made again (a handler runs once per TestState, as AWS calls a service once).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use wfc_interp::DynHandler;
use wfc_runtime::{ExecutionResult, Failure, RunOptions, Status, TaskContext};

use crate::api::{Service, document, json_text, member, opt_bool, opt_str, req_str, validated};
use crate::error::ApiError;
use crate::machines::load_definition;

/// The name a lone state (no `stateName`) runs under.
const LONE_STATE: &str = "TestState";
/// The placeholder standing for a transition of the tested state back to itself.
const SELF_PLACEHOLDER: &str = "__wfc_test_state_self";
/// The resource a mocked Task runs under: the mock stands for the whole service call (a
/// `lambda:invoke` mock is the `Invoke` response, a `.waitForTaskToken` mock the callback's
/// answer), so the runtime must not wrap it in an integration's envelope or wait for a token.
const MOCK_RESOURCE: &str = "wfc:TestState:mock";
/// The Pass state that assigns the request's `variables` before the tested state runs.
const VARIABLES_STATE: &str = "__wfc_test_state_variables";
/// The members of a Map or Parallel state that run its iterations or branches: a mocked one runs
/// as a Task without them.
const ITERATION_MEMBERS: &[&str] = &[
    "ItemsPath",
    "ItemSelector",
    "Parameters",
    "Arguments",
    "Items",
    "ItemProcessor",
    "Iterator",
    "MaxConcurrency",
    "MaxConcurrencyPath",
    "ItemReader",
    "ItemBatcher",
    "ResultWriter",
    "Label",
    "ToleratedFailureCount",
    "ToleratedFailureCountPath",
    "ToleratedFailurePercentage",
    "ToleratedFailurePercentagePath",
    "Branches",
];
/// AWS's error when a Map's failed iterations exceed what it tolerates.
const EXCEEDED: &str = "States.ExceedToleratedFailureThreshold";

/// `mock`: what the Task's service call returns instead of being made.
#[derive(Debug, Clone)]
enum Mock {
    Result(Value),
    Error(Failure),
}

/// The Task handler of a test: the mock, else the server's handler; it records every call (for
/// `inspectionData` and to replay them in a second run).
struct TestHandler {
    mock: Option<Mock>,
    inner: Arc<dyn DynHandler>,
    /// Calls of this test so far: (effective input, outcome).
    calls: Mutex<Vec<(Value, Result<Value, Failure>)>>,
    /// Calls of a first run, answered again in order without calling anything.
    replay: Mutex<std::collections::VecDeque<Result<Value, Failure>>>,
}

impl DynHandler for TestHandler {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(async move {
            let replayed = self.replay.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
            let outcome = match (replayed, &self.mock) {
                (Some(outcome), _) => outcome,
                (None, Some(Mock::Result(v))) => Ok(v.clone()),
                (None, Some(Mock::Error(f))) => Err(f.clone()),
                (None, None) => self.inner.call(resource, input.clone(), ctx).await,
            };
            self.calls.lock().unwrap_or_else(|p| p.into_inner()).push((input, outcome.clone()));
            outcome
        })
    }
}

fn validation(message: impl Into<String>) -> ApiError {
    ApiError::validation(message)
}

/// Every state name `state` can go to (Next, Default, each Choice rule's and catcher's Next).
fn targets(state: &Map<String, Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |v: Option<&Value>| {
        if let Some(Value::String(s)) = v {
            out.insert(s.clone());
        }
    };
    add(state.get("Next"));
    add(state.get("Default"));
    for key in ["Choices", "Catch"] {
        if let Some(Value::Array(items)) = state.get(key) {
            for item in items {
                add(item.get("Next"));
            }
        }
    }
    out
}

/// Replaces transitions to `from` by transitions to `to` (a state that goes to itself).
fn retarget(state: &mut Map<String, Value>, from: &str, to: &str) {
    let fix = |v: &mut Value| {
        if v.as_str() == Some(from) {
            *v = json!(to);
        }
    };
    for key in ["Next", "Default"] {
        if let Some(v) = state.get_mut(key) {
            fix(v);
        }
    }
    for key in ["Choices", "Catch"] {
        if let Some(Value::Array(items)) = state.get_mut(key) {
            for item in items {
                if let Some(v) = item.get_mut("Next") {
                    fix(v);
                }
            }
        }
    }
}

/// Whether a JSONPath `Assign` of `value` would evaluate something (a `.$` key): the request's
/// `variables` are values, so they are assigned only when they are taken literally.
fn has_path_key(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.iter().any(|(k, v)| k.ends_with(".$") || has_path_key(v)),
        Value::Array(items) => items.iter().any(has_path_key),
        _ => false,
    }
}

/// The retrier (index, definition) whose `ErrorEquals` matches `error` first, as the runtime
/// chooses it.
fn matching_retrier<'a>(retry: &'a [Value], error: &str) -> Option<(usize, &'a Value)> {
    retry.iter().enumerate().find(|(_, r)| {
        let equals: Vec<String> = r
            .get("ErrorEquals")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|e| e.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        wfc_runtime::retry::error_matches(&equals, error)
    })
}

/// The back-off before retry `n` (1-based) of a retrier, in seconds, as the runtime computes it.
fn backoff_seconds(retrier: &Value, n: u32) -> u64 {
    let mut r = wfc_ir::Retrier::new(Vec::new());
    if let Some(i) = retrier.get("IntervalSeconds").and_then(Value::as_u64) {
        r.interval_seconds = i;
    }
    if let Some(b) = retrier.get("BackoffRate").and_then(Value::as_f64) {
        r.backoff_rate = b;
    }
    r.max_delay_seconds = retrier.get("MaxDelaySeconds").and_then(Value::as_u64);
    wfc_runtime::retry::backoff_delay(&r, n).as_secs()
}

/// What one run of the wrapper machine gave.
struct Outcome {
    result: ExecutionResult,
    /// The placeholder entered after the tested state (its original name) and its input.
    next: Option<(String, Value)>,
    /// The tested state's own Exited output.
    exited: Option<Value>,
}

/// The request, checked.
struct Request {
    /// The tested state's name and its definition.
    name: String,
    state: Map<String, Value>,
    /// The machine's `QueryLanguage` (a full definition's), if any.
    query_language: Option<Value>,
    input: Value,
    mock: Option<Mock>,
    variables: Option<Map<String, Value>>,
    retrier_retry_count: u32,
    /// `context`: laid over the context object.
    context: Option<Value>,
    /// `stateConfiguration.mapItemReaderData`: the items a Distributed Map's ItemReader read.
    item_reader_data: Option<Vec<Value>>,
    /// The items its `ReaderConfig.ItemsPointer` selected in `mapItemReaderData`
    /// (`inspectionData.afterItemsPointer`).
    after_items_pointer: Option<Value>,
    debug: bool,
}

/// The state types a `mock` applies to.
fn mockable(state_type: &str) -> bool {
    matches!(state_type, "Task" | "Map" | "Parallel")
}

/// Every state name inside a Map's processor or a Parallel's branches, at any depth.
fn inner_states(state: &Map<String, Value>, out: &mut BTreeSet<String>) {
    let mut machines: Vec<&Value> = Vec::new();
    for key in ["ItemProcessor", "Iterator"] {
        machines.extend(state.get(key));
    }
    if let Some(Value::Array(branches)) = state.get("Branches") {
        machines.extend(branches);
    }
    for machine in machines {
        if let Some(Value::Object(states)) = machine.get("States") {
            for (name, inner) in states {
                out.insert(name.clone());
                if let Value::Object(inner) = inner {
                    inner_states(inner, out);
                }
            }
        }
    }
}

fn config_error(member: &str, why: impl std::fmt::Display) -> ApiError {
    validation(format!("Invalid 'stateConfiguration.{member}': {why}"))
}

fn count_member(config: &Map<String, Value>, name: &str) -> Result<Option<u32>, ApiError> {
    match member(config, name) {
        None => Ok(None),
        Some(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).map(Some).ok_or_else(|| {
            validation(format!(
                "1 validation error detected: Value '{n}' at 'stateConfiguration.{name}' failed to satisfy constraint: Member must have value greater than or equal to 0"
            ))
        }),
    }
}

impl Request {
    fn parse(body: &Map<String, Value>) -> Result<Request, ApiError> {
        let text = req_str(body, "definition")?;
        if let Some(role) = opt_str(body, "roleArn")?
            && !role.starts_with("arn:")
        {
            return Err(ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{role}' (roleArn must be an IAM role ARN)"),
            ));
        }
        let input = document(opt_str(body, "input")?, "input", "InvalidExecutionInput")?;
        let debug = match opt_str(body, "inspectionLevel")? {
            None | Some("INFO") => false,
            Some("DEBUG" | "TRACE") => true,
            Some(other) => {
                return Err(validation(format!(
                    "1 validation error detected: Value '{other}' at 'inspectionLevel' failed to satisfy constraint: Member must satisfy enum value set: [INFO, DEBUG, TRACE]"
                )));
            }
        };
        opt_bool(body, "revealSecrets")?;
        let context = match opt_str(body, "context")? {
            None => None,
            Some(text) => match document(Some(text), "context", "InvalidExecutionInput")? {
                v @ Value::Object(_) => Some(v),
                _ => return Err(ApiError::client("InvalidExecutionInput", "'context' must be a JSON object")),
            },
        };
        let variables = match opt_str(body, "variables")? {
            None => None,
            Some(text) => match document(Some(text), "variables", "InvalidExecutionInput")? {
                Value::Object(m) if !has_path_key(&Value::Object(m.clone())) => Some(m),
                Value::Object(_) => {
                    return Err(validation(
                        "wfc serve cannot assign 'variables' whose objects have keys ending in '.$'",
                    ));
                }
                _ => return Err(ApiError::client("InvalidExecutionInput", "'variables' must be a JSON object")),
            },
        };
        let empty = Map::new();
        let config = match member(body, "stateConfiguration") {
            None => &empty,
            Some(c) => c
                .as_object()
                .ok_or_else(|| ApiError::client("SerializationException", "'stateConfiguration' must be an object"))?,
        };
        let retrier_retry_count = count_member(config, "retrierRetryCount")?.unwrap_or(0);
        let map_failures = count_member(config, "mapIterationFailureCount")?;
        let error_caused_by = opt_str(config, "errorCausedByState")?;
        // The data as found in its source: an array, or with the reader's ItemsPointer the
        // object holding it (checked once the state is known).
        let reader_data = match opt_str(config, "mapItemReaderData")? {
            None => None,
            Some(text) => Some(document(Some(text), "stateConfiguration.mapItemReaderData", "ValidationException")?),
        };
        let (mut mock, validation_mode) = match member(body, "mock") {
            None => (None, "STRICT"),
            Some(m) => {
                let (mock, mode) = Self::mock(m)?;
                (Some(mock), mode)
            }
        };
        let parsed: Value = serde_json::from_str(text).map_err(|e| {
            ApiError::client("InvalidDefinition", format!("Invalid State Machine Definition: not valid JSON: {e}"))
        })?;
        let Value::Object(definition) = parsed else {
            return Err(ApiError::client("InvalidDefinition", "Invalid State Machine Definition: not a JSON object"));
        };
        let (name, state, query_language) = match opt_str(body, "stateName")? {
            Some(name) => {
                // A full definition: validate it as it is, so diagnostics are located in it.
                validated("TestState", text)?;
                let state =
                    definition.get("States").and_then(|s| s.get(name)).and_then(Value::as_object).ok_or_else(|| {
                        validation(format!("stateName '{name}' is not a state of the definition's top level 'States'"))
                    })?;
                (name.to_owned(), state.clone(), definition.get("QueryLanguage").cloned())
            }
            None => {
                if definition.contains_key("States") {
                    return Err(validation(
                        "the definition is a state machine ('States'): give 'stateName' to say which state to test",
                    ));
                }
                // A lone state: validated inside a machine that starts with its text on line 1,
                // so the line of every diagnostic is the line in the request.
                let mut placeholders = String::new();
                for t in targets(&definition) {
                    let t = if t == LONE_STATE { SELF_PLACEHOLDER.to_owned() } else { t };
                    placeholders.push_str(&format!(",{}:{{\"Type\":\"Succeed\"}}", json!(t)));
                }
                let wrapper =
                    format!("{{\"StartAt\":\"{LONE_STATE}\",\"States\":{{\"{LONE_STATE}\":{text}{placeholders}}}}}");
                validated("TestState", &wrapper)?;
                (LONE_STATE.to_owned(), definition, None)
            }
        };
        let state_type = state.get("Type").and_then(Value::as_str).unwrap_or_default();
        if mock.is_some() && !mockable(state_type) {
            return Err(validation(format!(
                "'mock' is for Task, Map and Parallel states; '{name}' is a {state_type} state"
            )));
        }
        if mock.is_none() && matches!(state_type, "Map" | "Parallel") {
            return Err(validation(format!(
                "TestState runs a {state_type} state only with a 'mock' (its result or error stands for its iterations or branches, as on AWS): '{name}'"
            )));
        }
        Self::check_mocked_result(&name, &state, state_type, mock.as_ref(), validation_mode)?;
        if let Some(caused_by) = error_caused_by {
            if !matches!(state_type, "Map" | "Parallel") || !matches!(mock, Some(Mock::Error(_))) {
                return Err(config_error(
                    "errorCausedByState",
                    "it names the state inside a Map or Parallel state that raised the mocked error ('mock.errorOutput')",
                ));
            }
            let mut inner = BTreeSet::new();
            inner_states(&state, &mut inner);
            if !inner.contains(caused_by) {
                return Err(config_error(
                    "errorCausedByState",
                    format!("'{caused_by}' is not a state of the {state_type} state '{name}'"),
                ));
            }
        }
        if reader_data.is_some() && (state_type != "Map" || !state.contains_key("ItemReader")) {
            return Err(config_error("mapItemReaderData", "it is for a Map state with an ItemReader"));
        }
        let (item_reader_data, after_items_pointer) = Self::reader_items(&state, reader_data)?;
        if let Some(failures) = map_failures {
            if state_type != "Map" || !matches!(mock, Some(Mock::Result(_))) {
                return Err(config_error("mapIterationFailureCount", "it is for a Map state with a 'mock.result'"));
            }
            let total = item_reader_data.as_ref().map(Vec::len).or_else(|| Self::item_count(&state, &input));
            let exceeded =
                Self::tolerance(&state, &input).and_then(|t| Self::exceeded(t, failures, total).map_or(Ok(()), Err));
            if let Err(f) = exceeded {
                mock = Some(Mock::Error(f));
            }
        }
        if retrier_retry_count > 0 && !state.contains_key("Retry") {
            return Err(config_error("retrierRetryCount", format!("state '{name}' has no Retry")));
        }
        if mock.is_none() && state_type == "Task" {
            let resource = state.get("Resource").and_then(Value::as_str).unwrap_or_default();
            if resource.contains(":activity:") || resource.ends_with(".waitForTaskToken") || resource.ends_with(".sync")
            {
                return Err(validation(format!(
                    "TestState does not run activity Tasks or the .sync and .waitForTaskToken patterns without a 'mock' (as on AWS): '{resource}'"
                )));
            }
        }
        Ok(Request {
            name,
            state,
            query_language,
            input,
            mock,
            variables,
            retrier_retry_count,
            context,
            item_reader_data,
            after_items_pointer,
            debug,
        })
    }

    /// The items of `mapItemReaderData` (`data`): the array itself, or, when the Map's
    /// `ItemReader` has a `ReaderConfig.ItemsPointer`, the array the pointer selects in it
    /// (also returned as the `afterItemsPointer` inspection value).
    #[allow(clippy::type_complexity)]
    fn reader_items(
        state: &Map<String, Value>,
        data: Option<Value>,
    ) -> Result<(Option<Vec<Value>>, Option<Value>), ApiError> {
        let pointer = state
            .get("ItemReader")
            .and_then(|r| r.get("ReaderConfig"))
            .and_then(|c| c.get("ItemsPointer"))
            .and_then(Value::as_str);
        match (data, pointer) {
            (None, _) => Ok((None, None)),
            (Some(Value::Array(items)), None) => Ok((Some(items), None)),
            (Some(_), None) => Err(config_error("mapItemReaderData", "it must be a JSON array (the items read)")),
            (Some(doc), Some(pointer)) => match doc.pointer(pointer) {
                Some(Value::Array(items)) => Ok((Some(items.clone()), Some(Value::Array(items.clone())))),
                _ => Err(config_error(
                    "mapItemReaderData",
                    format!("the ItemReader's ItemsPointer \"{pointer}\" does not select an array in it"),
                )),
            },
        }
    }

    /// Whether the tested state is a Map or Parallel state.
    fn iterates(&self) -> bool {
        matches!(self.state.get("Type").and_then(Value::as_str), Some("Map" | "Parallel"))
    }

    /// A mocked result of a Map is an array (one result per item), of a Parallel an array of
    /// one result per branch; `fieldValidationMode` `NONE` checks nothing.
    fn check_mocked_result(
        name: &str,
        state: &Map<String, Value>,
        state_type: &str,
        mock: Option<&Mock>,
        mode: &str,
    ) -> Result<(), ApiError> {
        let Some(Mock::Result(result)) = mock else { return Ok(()) };
        if mode == "NONE" {
            return Ok(());
        }
        match (state_type, result) {
            ("Map", Value::Array(_)) => Ok(()),
            ("Map", _) => Err(validation(format!(
                "the mocked result of Map state '{name}' must be a JSON array (one result per item)"
            ))),
            ("Parallel", Value::Array(results)) => {
                let branches = state.get("Branches").and_then(Value::as_array).map_or(0, Vec::len);
                if results.len() == branches {
                    Ok(())
                } else {
                    Err(validation(format!(
                        "the mocked result of Parallel state '{name}' has {} elements; it must have one per branch ({branches})",
                        results.len()
                    )))
                }
            }
            ("Parallel", _) => Err(validation(format!(
                "the mocked result of Parallel state '{name}' must be a JSON array (one result per branch)"
            ))),
            _ => Ok(()),
        }
    }

    /// How many items a JSONPath Map iterates over: the array at its ItemsPath (after its
    /// InputPath) in `input`; `None` when that is not a literal path to an array.
    fn item_count(state: &Map<String, Value>, input: &Value) -> Option<usize> {
        let select = |key: &str, doc: &Value| -> Option<Value> {
            match state.get(key).and_then(Value::as_str) {
                None => Some(doc.clone()),
                Some(text) => {
                    let path = wfc_ir::Path::parse(text).ok()?;
                    wfc_runtime::io::select_path(&path, doc, &Value::Null).ok()
                }
            }
        };
        let after_input = select("InputPath", input)?;
        match state.get("Items") {
            Some(Value::Array(items)) => Some(items.len()),
            Some(_) => None,
            None => select("ItemsPath", &after_input)?.as_array().map(Vec::len),
        }
    }

    /// What a Map tolerates: `ToleratedFailureCount` and `ToleratedFailurePercentage`, or what
    /// their `...Path` forms select from the input (after `InputPath`), checked as the runtime
    /// checks them when the state runs (`States.Runtime` with AWS's message otherwise).
    fn tolerance(state: &Map<String, Value>, input: &Value) -> Result<(Option<u64>, Option<f64>), Failure> {
        let null = Value::Null;
        let path = |key: &str| -> Result<Option<wfc_ir::Path>, Failure> {
            match state.get(key).and_then(Value::as_str) {
                None => Ok(None),
                Some(text) => wfc_ir::Path::parse(text)
                    .map(Some)
                    .map_err(|e| Failure::runtime(format!("{key} is not a valid path: {e:?}"))),
            }
        };
        let selected = |p: &wfc_ir::Path, doc: &Value| {
            wfc_runtime::io::select_path(p, doc, &null)
                .map_err(|_| Failure::runtime(wfc_runtime::io::invalid_path_message(p, doc)))
        };
        let effective = match path("InputPath")? {
            None if state.get("InputPath").is_some_and(Value::is_null) => json!({}),
            None => input.clone(),
            Some(p) => selected(&p, input)?,
        };
        let count =
            match (state.get("ToleratedFailureCount").and_then(Value::as_u64), path("ToleratedFailureCountPath")?) {
                (Some(n), _) => Some(n),
                (None, Some(p)) => {
                    let n = wfc_runtime::distributed::path_integer(&p, "ToleratedFailureCountPath", &effective, &null)?;
                    Some(u64::try_from(n).map_err(|_| Failure::runtime("ToleratedFailureCount cannot be negative."))?)
                }
                (None, None) => None,
            };
        let literal = state.get("ToleratedFailurePercentage").and_then(Value::as_f64);
        let percentage = match (literal, path("ToleratedFailurePercentagePath")?) {
            (Some(p), _) => Some(p),
            (None, Some(path)) => {
                let value = selected(&path, &effective)?;
                let p = match &value {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
                    _ => None,
                };
                let p = p.ok_or_else(|| {
                    Failure::runtime(format!(
                        "The ToleratedFailurePercentagePath field refers to value \"{}\" which is not a valid float: {}",
                        value.as_str().map_or_else(|| value.to_string(), str::to_owned),
                        path.as_str()
                    ))
                })?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(Failure::runtime("ToleratedFailurePercentage must be between 0 and 100."));
                }
                Some(p)
            }
            (None, None) => None,
        };
        Ok((count, percentage))
    }

    /// The failure of a Map whose `failures` failed iterations exceed what it tolerates
    /// (`tolerance`: the count and percentage of `total` items from [`Request::tolerance`];
    /// none: 0).
    fn exceeded(tolerance: (Option<u64>, Option<f64>), failures: u32, total: Option<usize>) -> Option<Failure> {
        let (count, percentage) = tolerance;
        let over_count = count.is_some_and(|c| u64::from(failures) > c);
        let over_percentage =
            percentage.is_some_and(|p| total.is_some_and(|t| t > 0 && f64::from(failures) * 100.0 / t as f64 > p));
        let tolerated_none = count.is_none() && percentage.is_none() && failures > 0;
        (over_count || over_percentage || tolerated_none)
            .then(|| Failure::new(EXCEEDED, "The specified tolerated failure threshold was exceeded"))
    }

    fn mock(m: &Value) -> Result<(Mock, &str), ApiError> {
        let m = m.as_object().ok_or_else(|| ApiError::client("SerializationException", "'mock' must be an object"))?;
        let mode = match opt_str(m, "fieldValidationMode")? {
            // wfc has no service response shapes to check a mocked Task result against: every
            // mode checks that it is JSON, and for a Map or Parallel state, STRICT and PRESENT
            // its shape (docs/serve.md).
            None => "STRICT",
            Some(mode @ ("STRICT" | "PRESENT" | "NONE")) => mode,
            Some(other) => {
                return Err(validation(format!(
                    "1 validation error detected: Value '{other}' at 'mock.fieldValidationMode' failed to satisfy constraint: Member must satisfy enum value set: [STRICT, PRESENT, NONE]"
                )));
            }
        };
        let mock = match (opt_str(m, "result")?, member(m, "errorOutput")) {
            (Some(_), Some(_)) => return Err(validation("'mock' takes either 'result' or 'errorOutput', not both")),
            (None, None) => return Err(validation("'mock' needs 'result' or 'errorOutput'")),
            (Some(text), None) => Mock::Result(document(Some(text), "mock result", "ValidationException")?),
            (None, Some(e)) => {
                let e = e.as_object().ok_or_else(|| {
                    ApiError::client("SerializationException", "'mock.errorOutput' must be an object")
                })?;
                Mock::Error(Failure::new(
                    opt_str(e, "error")?.unwrap_or_default(),
                    opt_str(e, "cause")?.unwrap_or_default(),
                ))
            }
        };
        Ok((mock, mode))
    }

    /// The wrapper machine's definition: the state (without `Retry`, and without `Catch` if
    /// `catch` is false), placeholders for its transitions, and the variables' Pass state.
    fn machine(&self, catch: bool) -> (String, Vec<(String, String)>) {
        self.machine_of(catch, self.mock.is_some())
    }

    /// [`Request::machine`], with the state mocked (a Task on the mock) or as it is.
    fn machine_of(&self, catch: bool, mocked: bool) -> (String, Vec<(String, String)>) {
        let mut state = self.state.clone();
        state.remove("Retry");
        if mocked {
            // A mocked Map or Parallel runs as a Task: its result (or error) is the mock's.
            if self.iterates() {
                for key in ITERATION_MEMBERS {
                    state.remove(*key);
                }
                state.insert("Type".into(), json!("Task"));
                if self.state.contains_key("ItemBatcher") {
                    // The mocked Task gets the state's input with the context object it saw, for
                    // `afterItemBatcher` to evaluate the batcher as a run would (see
                    // [`Request::inspection`]).
                    let (key, captured) = if self.jsonata() {
                        ("Arguments", json!({ "Input": "{% $states.input %}", "Context": "{% $states.context %}" }))
                    } else {
                        ("Parameters", json!({ "Input.$": "$", "Context.$": "$$" }))
                    };
                    state.insert(key.into(), captured);
                }
            }
            state.insert("Resource".into(), json!(MOCK_RESOURCE));
        }
        if !catch {
            state.remove("Catch");
        }
        if targets(&state).contains(&self.name) {
            retarget(&mut state, &self.name, SELF_PLACEHOLDER);
        }
        let mut states = Map::new();
        let mut start = self.name.clone();
        if let Some(vars) = &self.variables {
            start = VARIABLES_STATE.to_owned();
            states.insert(
                VARIABLES_STATE.to_owned(),
                json!({ "Type": "Pass", "QueryLanguage": "JSONPath", "Assign": vars, "Next": self.name }),
            );
        }
        let mut placeholders = Vec::new();
        for t in targets(&state) {
            let shown = if t == SELF_PLACEHOLDER { self.name.clone() } else { t.clone() };
            states.insert(t.clone(), json!({ "Type": "Succeed" }));
            placeholders.push((t, shown));
        }
        states.insert(self.name.clone(), Value::Object(state));
        let mut machine = json!({ "StartAt": start, "States": states });
        if let Some(ql) = &self.query_language {
            machine["QueryLanguage"] = ql.clone();
        }
        (json_text(&machine), placeholders)
    }

    /// Runs the wrapper machine on the interpreter. Virtual time (waits skipped) unless a real
    /// handler may be called, whose time must be real.
    async fn run(&self, handler: Arc<TestHandler>, catch: bool) -> Result<Outcome, ApiError> {
        let (text, placeholders) = self.machine(catch);
        let workflow = load_definition("TestState", &text).map_err(|d| {
            let first = d.first_error().map(|d| format!("{}: {}", d.code, d.message)).unwrap_or_default();
            ApiError::client("InvalidDefinition", format!("Invalid State Machine Definition: '{first}'"))
        })?;
        let workflow = workflow.workflow;
        let input = self.input.clone();
        let is_task = self.state.get("Type").and_then(Value::as_str) == Some("Task");
        let result = if is_task && self.mock.is_none() {
            let options =
                RunOptions { context_overlay: self.context.clone(), ..RunOptions::real() }.with_name("TestState");
            wfc_interp::run(&workflow, handler.as_ref(), input, options).await
        } else {
            let start = jiff::Timestamp::now();
            let h = Arc::clone(&handler);
            let context_overlay = self.context.clone();
            tokio::task::spawn_blocking(move || {
                let options = RunOptions {
                    clock: wfc_runtime::Clock::virtual_from(start),
                    context_overlay,
                    ..RunOptions::virtual_time()
                }
                .with_name("TestState");
                wfc_runtime::block_on_virtual(wfc_interp::run(&workflow, h.as_ref(), input, options))
            })
            .await
            .map_err(|e| ApiError::internal(format!("the test run failed: {e}")))?
        };
        let mut exited = None;
        let mut next = None;
        for e in &result.history {
            let name = e.details.get("name").and_then(Value::as_str);
            let is_exit = format!("{:?}", e.event_type).ends_with("StateExited");
            let is_enter = format!("{:?}", e.event_type).ends_with("StateEntered");
            if is_exit && name == Some(self.name.as_str()) {
                exited = e.details.get("output").cloned();
            }
            if is_enter
                && let Some(n) = name
                && let Some((_, shown)) = placeholders.iter().find(|(p, _)| p == n)
            {
                next = Some((shown.clone(), e.details.get("input").cloned().unwrap_or(Value::Null)));
            }
        }
        Ok(Outcome { result, next, exited })
    }

    /// `inspectionData` (DEBUG, TRACE): the raw input, and for a Task what the runtime passed to
    /// and got from its handler; for JSONPath states the steps in between that do not read `$$`
    /// or draw random values (which would differ from the run's).
    fn inspection(&self, calls: &[(Value, Result<Value, Failure>)]) -> Value {
        // A mocked Map with an ItemBatcher ran as a Task given `{"Input", "Context"}` (see
        // [`Request::machine_of`]): its input, and the context object it saw.
        let captured = self.mock.is_some() && self.iterates() && self.state.contains_key("ItemBatcher");
        let (calls, context) = if captured {
            let context = calls.first().map_or(Value::Null, |(given, _)| given["Context"].clone());
            let calls: Vec<_> =
                calls.iter().map(|(given, outcome)| (given["Input"].clone(), outcome.clone())).collect();
            (calls, context)
        } else {
            (calls.to_vec(), Value::Null)
        };
        let mut data = self.flow_inspection(&calls);
        if self.iterates()
            && let Value::Object(data) = &mut data
        {
            // The mocked Task it ran as had parameters; a Map or Parallel state has none.
            data.remove("afterParameters");
            data.remove("afterArguments");
            self.map_inspection(data, &context);
        }
        data
    }

    /// Whether the state is evaluated as JSONata (its own `QueryLanguage`, else the machine's).
    fn jsonata(&self) -> bool {
        self.state.get("QueryLanguage").or(self.query_language.as_ref()).and_then(Value::as_str) == Some("JSONata")
    }

    /// The Map-specific `inspectionData`: its items (from ItemsPath, or the ItemReader's
    /// `mapItemReaderData`), what ItemSelector makes of them when it reads neither `$$` nor
    /// randomness, and its concurrency and tolerated failures as written.
    fn map_inspection(&self, data: &mut Map<String, Value>, context: &Value) {
        if let Some(v) = self.state.get("MaxConcurrency").filter(|v| v.is_number()) {
            data.insert("maxConcurrency".into(), v.clone());
        }
        // As written, or as their `...Path` forms select them from the input.
        if let Ok((count, percentage)) = Self::tolerance(&self.state, &self.input) {
            if let Some(n) = count {
                data.insert("toleratedFailureCount".into(), json!(n));
            }
            if let Some(p) = percentage {
                data.insert("toleratedFailurePercentage".into(), json!(p));
            }
        }
        let Ok(loaded) = load_definition("TestState", &self.machine_of(true, false).0) else { return };
        let machine = &loaded.workflow.machine;
        let Some(wfc_ir::StateKind::Map(m)) = machine.find(&self.name).map(|id| &machine.states[id].kind) else {
            return;
        };
        if !m.jsonata && wfc_runtime::io::paths_use_context([m.input_path.as_ref()]) {
            return; // a path that reads `$$`
        }
        let null = Value::Null;
        let Ok(after_input) = wfc_runtime::io::input_path(&m.input_path, &self.input, &null) else { return };
        if let Some(pointed) = &self.after_items_pointer {
            data.insert("afterItemsPointer".into(), json!(json_text(pointed)));
        }
        let items = match &self.item_reader_data {
            Some(items) => Value::Array(items.clone()),
            None if self.state.contains_key("ItemReader") => return,
            // A JSONata Map's `Items` (else its input), evaluated as a run does.
            None if m.jsonata => match &m.items {
                None if after_input.is_array() => after_input.as_ref().clone(),
                None => return,
                Some(t) => {
                    let bindings = wfc_runtime::jsonata::Bindings::new(&after_input, context);
                    match wfc_runtime::jsonata::template(t, "Items", &bindings, &mut rand::rng()) {
                        Ok(items @ Value::Array(_)) => items,
                        _ => return,
                    }
                }
            },
            None => match wfc_runtime::io::select_path(&m.items_path, &after_input, &null) {
                Ok(items @ Value::Array(_)) => {
                    data.insert("afterItemsPath".into(), json!(json_text(&items)));
                    items
                }
                _ => return,
            },
        };
        let selected = match (&m.item_selector, &m.item_selector_jsonata) {
            // A JSONata ItemSelector, per item with `$states.context.Map.Item` as a run sees it.
            (_, Some(t)) => items
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, item)| {
                    let item_ctx = wfc_runtime::map::item_context(context, i, item);
                    let bindings = wfc_runtime::jsonata::Bindings::new(&after_input, &item_ctx);
                    wfc_runtime::jsonata::template(t, "ItemSelector", &bindings, &mut rand::rng()).ok()
                })
                .collect::<Option<Vec<_>>>()
                .map(Value::Array),
            (None, None) => Some(items),
            (Some(s), None) if !wfc_runtime::io::uses_context(s) && !wfc_runtime::io::uses_randomness(s) => {
                let n = items.as_array().map_or(0, Vec::len);
                wfc_runtime::io::template(s, &after_input, &null, &mut rand::rng())
                    .ok()
                    .map(|one| Value::Array(vec![one; n]))
            }
            (Some(_), None) => None,
        };
        if let Some(selected) = selected {
            data.insert("afterItemSelector".into(), json!(json_text(&selected)));
            if let Some(batcher) = m.distributed.as_ref().and_then(|d| d.item_batcher.as_ref())
                && let Some(batches) = after_item_batcher(batcher, selected, &after_input, context)
            {
                data.insert("afterItemBatcher".into(), json!(json_text(&batches)));
            }
        }
    }

    /// `inspectionData`'s data flow (see [`Request::inspection`]).
    fn flow_inspection(&self, calls: &[(Value, Result<Value, Failure>)]) -> Value {
        let mut data = Map::new();
        data.insert("input".into(), json!(json_text(&self.input)));
        let jsonata = self.jsonata();
        let Ok(loaded) = load_definition("TestState", &self.machine(true).0) else { return Value::Object(data) };
        let machine = &loaded.workflow.machine;
        let Some(spec) = machine.find(&self.name).map(|id| &machine.states[id].kind) else {
            return Value::Object(data);
        };
        let null = Value::Null;
        let put = |data: &mut Map<String, Value>, key: &str, v: &Value| {
            data.insert(key.into(), json!(json_text(v)));
        };
        match spec {
            wfc_ir::StateKind::Task(t) => {
                if let Some((effective, result)) = calls.first() {
                    if jsonata {
                        put(&mut data, "afterArguments", effective);
                    } else {
                        if !wfc_runtime::io::paths_use_context([t.input_path.as_ref()])
                            && let Ok(v) = wfc_runtime::io::input_path(&t.input_path, &self.input, &null)
                        {
                            put(&mut data, "afterInputPath", &v);
                        }
                        put(&mut data, "afterParameters", effective);
                    }
                    if let Ok(result) = result {
                        put(&mut data, "result", result);
                        if !jsonata {
                            let selected = match &t.result_selector {
                                None => Some(result.clone()),
                                Some(s)
                                    if !wfc_runtime::io::uses_context(s) && !wfc_runtime::io::uses_randomness(s) =>
                                {
                                    wfc_runtime::io::template(s, result, &null, &mut rand::rng()).ok()
                                }
                                Some(_) => None,
                            };
                            if let Some(selected) = selected {
                                put(&mut data, "afterResultSelector", &selected);
                                if let Ok(v) =
                                    wfc_runtime::io::result_path(&t.result_path, self.input.clone(), selected)
                                {
                                    put(&mut data, "afterResultPath", &v);
                                }
                            }
                        }
                    }
                }
            }
            wfc_ir::StateKind::Pass(p) if !jsonata => {
                if !wfc_runtime::io::paths_use_context([p.input_path.as_ref()])
                    && let Ok(after_input) = wfc_runtime::io::input_path(&p.input_path, &self.input, &null)
                {
                    put(&mut data, "afterInputPath", &after_input);
                    let effective = match &p.parameters {
                        None => Some(after_input.into_owned()),
                        Some(s) if !wfc_runtime::io::uses_context(s) && !wfc_runtime::io::uses_randomness(s) => {
                            wfc_runtime::io::template(s, &after_input, &null, &mut rand::rng()).ok()
                        }
                        Some(_) => None,
                    };
                    if let Some(effective) = effective {
                        put(&mut data, "afterParameters", &effective);
                        let result = p.result.clone().unwrap_or(effective);
                        put(&mut data, "result", &result);
                        if let Ok(v) = wfc_runtime::io::result_path(&p.result_path, self.input.clone(), result) {
                            put(&mut data, "afterResultPath", &v);
                        }
                    }
                }
            }
            _ => {}
        }
        Value::Object(data)
    }
}

impl Service {
    /// TestState (see the module documentation).
    pub(crate) async fn test_state(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let req = Request::parse(body)?;
        let retry: Vec<Value> = req.state.get("Retry").and_then(Value::as_array).cloned().unwrap_or_default();
        let handler = Arc::new(TestHandler {
            mock: req.mock.clone(),
            inner: Arc::clone(&self.handler),
            calls: Mutex::new(Vec::new()),
            replay: Mutex::new(Default::default()),
        });
        let has_catch = req.state.get("Catch").is_some_and(|c| c.as_array().is_some_and(|a| !a.is_empty()));
        // With a Retry or a Catch, the first run has neither, to see the raw error.
        let outcome = req.run(Arc::clone(&handler), retry.is_empty() && !has_catch).await?;
        let mut out = Map::new();
        let mut catch_index = None;
        let raw_failure = (outcome.result.status != Status::Succeeded).then(|| outcome.result.error.clone()).flatten();
        let mut outcome = outcome;
        if let Some(failure) = raw_failure.filter(|_| !retry.is_empty() || has_catch) {
            // Does a retrier with attempts left take it?
            if let Some((index, retrier)) = matching_retrier(&retry, &failure.error) {
                let max = retrier.get("MaxAttempts").and_then(Value::as_u64).unwrap_or(3);
                if u64::from(req.retrier_retry_count) < max {
                    out.insert("status".into(), json!("RETRIABLE"));
                    out.insert("error".into(), json!(failure.error));
                    out.insert("cause".into(), json!(failure.cause));
                    if req.debug {
                        let calls = handler.calls.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        let mut data = req.inspection(&calls);
                        data["errorDetails"] = json!({
                            "retryIndex": index,
                            "retryBackoffIntervalSeconds": backoff_seconds(retrier, req.retrier_retry_count + 1),
                        });
                        out.insert("inspectionData".into(), data);
                    }
                    return Ok(Value::Object(out));
                }
            }
            if has_catch {
                // Run again with the Catch, answering the Task with the first run's outcomes.
                let calls: Vec<_> = handler.calls.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
                *handler.replay.lock().unwrap_or_else(|p| p.into_inner()) =
                    calls.into_iter().map(|(_, outcome)| outcome).collect();
                outcome = req.run(Arc::clone(&handler), true).await?;
                if outcome.result.status == Status::Succeeded
                    && let Some((next, output)) = &outcome.next
                {
                    let catchers: Vec<Value> =
                        req.state.get("Catch").and_then(Value::as_array).cloned().unwrap_or_default();
                    catch_index = matching_retrier(&catchers, &failure.error).map(|(i, _)| i);
                    out.insert("status".into(), json!("CAUGHT_ERROR"));
                    out.insert("nextState".into(), json!(next));
                    out.insert("output".into(), json!(json_text(output)));
                    out.insert("error".into(), json!(failure.error));
                    out.insert("cause".into(), json!(failure.cause));
                }
            }
        }
        if !out.contains_key("status") {
            if outcome.result.status == Status::Succeeded {
                out.insert("status".into(), json!("SUCCEEDED"));
                let output = match &outcome.next {
                    Some((name, input)) => {
                        out.insert("nextState".into(), json!(name));
                        input.clone()
                    }
                    None => outcome.exited.clone().or_else(|| outcome.result.output.clone()).unwrap_or(Value::Null),
                };
                out.insert("output".into(), json!(json_text(&output)));
            } else {
                out.insert("status".into(), json!("FAILED"));
                if let Some(f) = &outcome.result.error {
                    out.insert("error".into(), json!(f.error));
                    out.insert("cause".into(), json!(f.cause));
                }
            }
        }
        let calls = handler.calls.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if req.debug {
            let mut data = req.inspection(&calls);
            if let Some(i) = catch_index {
                data["errorDetails"] = json!({ "catchIndex": i });
            }
            out.insert("inspectionData".into(), data);
        }
        Ok(Value::Object(out))
    }
}

/// `inspectionData.afterItemBatcher`: the child inputs `batcher` makes of the `selected` items
/// (`{"Items": [...], "BatchInput": ...}`), as a run makes them: its limits literal, selected by
/// their `*Path` forms from the input (after InputPath) or `$$`, or JSONata expressions, and its
/// `BatchInput` evaluated with the `context` object the state saw (the request's `context` laid
/// over it) and random values drawn (`States.UUID`, `$random()`), as each run draws its own.
/// `None` when a limit or `BatchInput` fails (the run would fail the state; the mocked state did
/// not run them, so there is nothing to show).
fn after_item_batcher(
    batcher: &wfc_ir::distributed::ItemBatcher,
    selected: Value,
    after_input: &Value,
    context: &Value,
) -> Option<Value> {
    use wfc_ir::distributed::Count;
    use wfc_runtime::distributed::{CountField, count_at, count_jsonata};
    let limit = |count: &Option<Count>, field: CountField| -> Option<Option<u64>> {
        match count {
            None => Some(None),
            Some(Count::Fixed(n)) => Some(Some(*n)),
            Some(Count::Path(p)) => count_at(p, field, after_input, context).ok().map(Some),
            Some(Count::Jsonata(e)) => count_jsonata(e, field, after_input, context).ok().map(Some),
        }
    };
    let max_items = limit(&batcher.max_items_per_batch, CountField::MaxItemsPerBatch)?;
    let max_bytes = limit(&batcher.max_input_bytes_per_batch, CountField::MaxInputBytesPerBatch)?;
    if max_items == Some(0) || max_bytes == Some(0) {
        return None;
    }
    let batch_input = match (&batcher.batch_input, &batcher.batch_input_jsonata) {
        (_, Some(t)) => {
            // A JSONata Map's `$states.input` is the state input (`after_input`: no InputPath).
            let bindings = wfc_runtime::jsonata::Bindings::new(after_input, context);
            let value = wfc_runtime::jsonata::template(t, "BatchInput", &bindings, &mut rand::rng()).ok()?;
            Some(wfc_runtime::distributed::jsonata_batch_input(value, None).ok()?)
        }
        (Some(t), None) => Some(wfc_runtime::io::template(t, after_input, context, &mut rand::rng()).ok()?),
        (None, None) => None,
    };
    let Value::Array(items) = selected else { return None };
    let batches = wfc_runtime::distributed::batches(items, max_items, max_bytes, batch_input.as_ref()).ok()?;
    Some(Value::Array(batches.into_iter().map(|(_, batch)| batch).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_are_found_and_retargeted() {
        let mut s = json!({"Type": "Choice", "Choices": [{"Next": "A"}, {"Next": "S"}], "Default": "S",
            "Catch": [{"Next": "C"}]})
        .as_object()
        .cloned()
        .unwrap();
        assert_eq!(targets(&s).into_iter().collect::<Vec<_>>(), ["A", "C", "S"]);
        retarget(&mut s, "S", SELF_PLACEHOLDER);
        assert!(targets(&s).contains(SELF_PLACEHOLDER) && !targets(&s).contains("S"));
    }

    #[test]
    fn backoff_follows_the_retrier() {
        let r = json!({"IntervalSeconds": 2, "BackoffRate": 3.0, "MaxDelaySeconds": 10});
        assert_eq!([1, 2, 3].map(|n| backoff_seconds(&r, n)), [2, 6, 10]);
        assert!(has_path_key(&json!({"a": [{"b.$": "$.x"}]})) && !has_path_key(&json!({"a": "$.x"})));
    }
}
