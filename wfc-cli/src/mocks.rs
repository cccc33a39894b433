//! Mocked task responses: what a Task returns (or throws) when `wfc run` and `wfc test` execute a
//! workflow without real handlers.
//!
//! Two file formats are read:
//!
//! - wfc's own, as in a case file's `mocks` field: `{"<state name or resource>": [entry, ...]}`
//!   where an entry is `{"return": <json>}`, `{"throw": {"error", "cause"}}` or `{"echo": true}`,
//!   optionally with `"delay_seconds": <n>` (see docs/case-format.md);
//! - Step Functions Local's `MockConfigFile.json`, one test case of it: read by the parser every
//!   engine shares (`wfc_runtime::mock_config`, which `wfc serve --mock-config` reads it with too)
//!   and expanded here into one entry per invocation.
//!
//! This file depends only on `std`, `serde_json` and `wfc_runtime`: the compiled engine copies it
//! verbatim into the crate it generates, so both engines answer task calls with exactly the same
//! code.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Mutex;

use serde_json::Value;

/// The error name a Task fails with when no mock answers it. It does not start with `States.`, so
/// Retry and Catch treat it like any task error; tests should not rely on catching it.
pub(crate) const NO_MOCK_ERROR: &str = "Wfc.NoMock";

/// The most invocations a MockConfigFile response's keys may cover under `wfc run`, `worker` and
/// `test`, which expand them one entry per invocation.
const MAX_EXPANDED: u64 = 10_000;

/// The longest mock delay: AWS's longest task timeout (99,999,999 s). Bounding it keeps every
/// delay convertible to a `Duration`.
pub(crate) const MAX_DELAY_SECONDS: f64 = 99_999_999.0;

/// What one mocked invocation does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MockAction {
    /// Return this value.
    Return(Value),
    /// The service call's whole response (Step Functions Local's MockConfigFile `Return`): for a
    /// Lambda resource the `Invoke` response, whose `Payload` is the function's result. The
    /// caller turns it into the handler's result knowing the resource (`service_response` of
    /// [`MockSet::answer`]: `wfc_runtime::lambda::mocked_response_result`, which `wfc serve`
    /// answers with too).
    Response(Value),
    /// Fail with this error name and cause.
    Throw {
        /// The error name.
        error: String,
        /// The cause.
        cause: String,
    },
    /// Return the task's effective input unchanged (shows what Parameters/InputPath produced).
    Echo,
    /// A `lambda:invoke` whose `FunctionName` is known only at run time: the response of the
    /// function it names (by function ARN), or Lambda's `ResourceNotFoundException` when it
    /// names none of them, as Lambda answers for a function that does not exist.
    ByFunction(Vec<(String, MockEntry)>),
}

/// The function name in a `FunctionName` (a name, a partial or a full ARN, maybe qualified).
fn function_name(function: &str) -> &str {
    let name = function.rsplit_once(":function:").map_or(function, |(_, n)| n);
    name.split(':').next().unwrap_or(name)
}

/// Lambda's answer for a function that does not exist. A bare name resolves in the account and
/// region of the functions the mock lists (Lambda resolves it in the caller's).
fn function_not_found(requested: &str, functions: &[(String, MockEntry)]) -> (String, String) {
    let arn = if requested.starts_with("arn:") {
        requested.to_owned()
    } else {
        let prefix = functions
            .first()
            .and_then(|(arn, _)| arn.rsplit_once(":function:").map(|(p, _)| p.to_owned()))
            .unwrap_or_else(|| "arn:aws:lambda:us-east-1:123456789012".to_owned());
        format!("{prefix}:function:{}", function_name(requested))
    };
    let qualified = if arn.matches(':').count() >= 7 { arn } else { format!("{arn}:$LATEST") };
    let cause = format!(
        "Function not found: {qualified} (Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException; Request ID: 00000000-0000-0000-0000-000000000000; Proxy: null)"
    );
    ("Lambda.ResourceNotFoundException".to_owned(), cause)
}

fn action_json(action: &MockAction) -> (&'static str, Value) {
    match action {
        MockAction::Return(v) => ("return", v.clone()),
        MockAction::Response(v) => ("response", v.clone()),
        MockAction::Throw { error, cause } => ("throw", serde_json::json!({"error": error, "cause": cause})),
        MockAction::Echo => ("echo", Value::Bool(true)),
        MockAction::ByFunction(functions) => (
            "functions",
            Value::Object(
                functions
                    .iter()
                    .map(|(arn, e)| {
                        let (k, v) = action_json(&e.action);
                        let mut obj = serde_json::Map::new();
                        obj.insert(k.into(), v);
                        if e.delay_seconds > 0.0 {
                            obj.insert("delay_seconds".into(), serde_json::json!(e.delay_seconds));
                        }
                        (arn.clone(), Value::Object(obj))
                    })
                    .collect(),
            ),
        ),
    }
}

/// One mocked invocation: an action, after an optional delay on the execution's clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MockEntry {
    /// What the invocation does.
    pub(crate) action: MockAction,
    /// How long the task "runs" before it answers, in seconds (virtual seconds on virtual time).
    pub(crate) delay_seconds: f64,
}

/// A problem with a mocks document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MockError(pub String);

impl fmt::Display for MockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MockError {}

/// The mocks of one execution: per key (state name or resource), the responses in invocation
/// order. Each key has its own invocation counter; when the responses run out, the last one
/// repeats (so `[{"throw": ...}, {"return": ...}]` means "fail once, then succeed").
#[derive(Debug, Default)]
pub(crate) struct MockSet {
    by_key: BTreeMap<String, Vec<MockEntry>>,
    calls: Mutex<HashMap<String, usize>>,
    /// How to add a missing mock, in the command the user ran (the end of the NoMock cause);
    /// `None`: a case file's, `add one to the case's "mocks"`.
    hint: Option<String>,
}

impl Clone for MockSet {
    fn clone(&self) -> MockSet {
        // A clone starts with fresh counters: it is a new execution's view of the same mocks.
        MockSet { by_key: self.by_key.clone(), calls: Mutex::new(HashMap::new()), hint: self.hint.clone() }
    }
}

/// Which format a mocks document is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MockFormat {
    /// wfc's own `{"<key>": [entries]}`.
    Wfc,
    /// Step Functions Local's MockConfigFile.
    StepFunctionsLocal,
}

impl MockSet {
    /// No mocks: every task fails with [`NO_MOCK_ERROR`].
    pub(crate) fn empty() -> MockSet {
        MockSet::default()
    }

    /// These mocks, with `hint` ending the cause of a task no mock answers: how to add one with
    /// the option actually used (`add one to m.json (--mocks)`).
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> MockSet {
        self.hint = Some(hint.into());
        self
    }

    /// The hint given with [`MockSet::with_hint`], if any.
    pub(crate) fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The keys (state names or resources) that have responses.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.by_key.keys().map(String::as_str)
    }

    /// The responses in wfc's own format (what [`MockSet::from_wfc`] reads back), so another
    /// process (the compiled engine's program) can answer the same way. Counters are not carried.
    pub(crate) fn to_wfc_json(&self) -> Value {
        let map = self
            .by_key
            .iter()
            .map(|(key, entries)| {
                let list = entries
                    .iter()
                    .map(|e| {
                        let mut obj = serde_json::Map::new();
                        let (key, value) = action_json(&e.action);
                        obj.insert(key.into(), value);
                        if e.delay_seconds > 0.0 {
                            obj.insert("delay_seconds".into(), serde_json::json!(e.delay_seconds));
                        }
                        Value::Object(obj)
                    })
                    .collect();
                (key.clone(), Value::Array(list))
            })
            .collect();
        Value::Object(map)
    }

    /// Guesses a document's format: Step Functions Local's has `StateMachines` or
    /// `MockedResponses` at the top level.
    pub(crate) fn detect(doc: &Value) -> MockFormat {
        match doc {
            Value::Object(map) if map.contains_key("StateMachines") || map.contains_key("MockedResponses") => {
                MockFormat::StepFunctionsLocal
            }
            _ => MockFormat::Wfc,
        }
    }

    /// Reads wfc's own format: an object from state name or resource to one entry or a list.
    pub(crate) fn from_wfc(doc: &Value) -> Result<MockSet, MockError> {
        let Value::Object(map) = doc else {
            return Err(MockError(format!(
                "mocks must be an object from state name or resource to responses, found {}",
                wfc_runtime::error::value_kind(doc)
            )));
        };
        let mut by_key = BTreeMap::new();
        for (key, value) in map {
            let entries = match value {
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| parse_entry(item).map_err(|e| MockError(format!("mocks[{key:?}][{i}]: {e}"))))
                    .collect::<Result<Vec<_>, _>>()?,
                other => vec![parse_entry(other).map_err(|e| MockError(format!("mocks[{key:?}]: {e}")))?],
            };
            if entries.is_empty() {
                return Err(MockError(format!("mocks[{key:?}]: the list of responses is empty")));
            }
            by_key.insert(key.clone(), entries);
        }
        Ok(MockSet { by_key, calls: Mutex::new(HashMap::new()), hint: None })
    }

    /// One test case of a Step Functions Local MockConfigFile, read by the parser every engine
    /// shares ([`wfc_runtime::mock_config`]; its errors name the bad field's JSON path).
    ///
    /// `state_machine` names the entry of `StateMachines`; it may be omitted when there is exactly
    /// one, and otherwise falls back to `workflow_name` when that names an entry.
    pub(crate) fn from_mock_config(
        config: &wfc_runtime::mock_config::MockConfig,
        state_machine: Option<&str>,
        workflow_name: &str,
        test_case: &str,
    ) -> Result<MockSet, MockError> {
        use wfc_runtime::mock_config::{MockedAnswer, beyond_keys_cause};
        let machines: Vec<&str> = config.machines().collect();
        let machine_name = match state_machine {
            Some(name) => name,
            None if machines.len() == 1 => machines[0],
            None if machines.contains(&workflow_name) => workflow_name,
            None => {
                return Err(MockError(format!(
                    "$.StateMachines: the mock config has several state machines ({}); choose one with --state-machine",
                    machines.join(", ")
                )));
            }
        };
        let cases = config.test_cases(machine_name).ok_or_else(|| {
            MockError(format!("$.StateMachines: the mock config has no state machine {machine_name:?}"))
        })?;
        let case = cases.get(test_case).ok_or_else(|| {
            let names: Vec<&str> = cases.keys().map(String::as_str).collect();
            MockError(format!(
                "$.StateMachines.{machine_name}.TestCases: state machine {machine_name:?} has no test case {test_case:?} (it has: {})",
                names.join(", ")
            ))
        })?;
        let mut by_key = BTreeMap::new();
        for (state, response_name) in case.states() {
            // The parser checked that every named response exists.
            let Some(response) = config.response(response_name) else { continue };
            // Expanded one entry per invocation (what the compiled engine's program is handed),
            // so the keys may cover at most MAX_EXPANDED invocations here.
            let covered = response.invocations();
            if covered > MAX_EXPANDED {
                return Err(MockError(format!(
                    "$.MockedResponses.{response_name}: its keys cover {covered} invocations; wfc run, worker and test take at most {MAX_EXPANDED}"
                )));
            }
            let mut entries = Vec::new();
            for (lo, hi, answer) in response.ranges() {
                let action = match answer {
                    // Step Functions Local's Return is the service's whole response, not a
                    // function's result: for Lambda, the Invoke response around the Payload.
                    MockedAnswer::Return(v) => MockAction::Response(v.clone()),
                    MockedAnswer::Throw { error, cause } => {
                        MockAction::Throw { error: error.clone(), cause: cause.clone() }
                    }
                };
                for _ in lo..=hi {
                    entries.push(MockEntry { action: action.clone(), delay_seconds: 0.0 });
                }
            }
            // An invocation beyond the response's keys has no answer: the Task fails with
            // States.Runtime saying so, as under `wfc serve --mock-config` (and Step Functions
            // Local, which has no answer for it either), not with the last answer again. The
            // failure is the last entry, so it is what every later invocation gets.
            let beyond = u32::try_from(covered).unwrap_or(u32::MAX);
            let cause = format!(
                "--mocks, test case '{test_case}': {}",
                beyond_keys_cause(response_name, state, beyond, covered)
            );
            entries.push(MockEntry {
                action: MockAction::Throw { error: "States.Runtime".to_owned(), cause },
                delay_seconds: 0.0,
            });
            by_key.insert(state.to_owned(), entries);
        }
        Ok(MockSet { by_key, calls: Mutex::new(HashMap::new()), hint: None })
    }

    /// The response for the next invocation of the task in state `state` (when known) calling
    /// `resource`. The state name is looked up first, then the resource. `None`: no mock.
    pub(crate) fn next(&self, state: Option<&str>, resource: &str) -> Option<MockEntry> {
        self.next_counted(None, state, resource)
    }

    /// [`MockSet::next`] for a handler that serves many executions (`wfc worker`): each
    /// execution counts its invocations from 0, as one execution of `wfc run` does and as
    /// `wfc serve --mock-config` counts them.
    pub(crate) fn next_for(&self, execution: &str, state: Option<&str>, resource: &str) -> Option<MockEntry> {
        self.next_counted(Some(execution), state, resource)
    }

    /// The key that answers a task in state `state` (when known) calling `resource`: the state
    /// name first, then the resource. `None`: no mock.
    pub(crate) fn key_for(&self, state: Option<&str>, resource: &str) -> Option<&str> {
        state
            .and_then(|s| self.by_key.get_key_value(s))
            .or_else(|| self.by_key.get_key_value(resource))
            .map(|(k, _)| k.as_str())
    }

    /// The response to invocation `invocation` (from 0) of `key`, counted by the caller (in a
    /// durable store, for `wfc worker`): when the responses run out, the last one repeats.
    pub(crate) fn entry_at(&self, key: &str, invocation: u64) -> Option<MockEntry> {
        let entries = self.by_key.get(key)?;
        let index = usize::try_from(invocation).unwrap_or(usize::MAX).min(entries.len().saturating_sub(1));
        entries.get(index).cloned()
    }

    fn next_counted(&self, execution: Option<&str>, state: Option<&str>, resource: &str) -> Option<MockEntry> {
        let (key, entries) =
            state.and_then(|s| self.by_key.get_key_value(s)).or_else(|| self.by_key.get_key_value(resource))?;
        let counter = match execution {
            // NUL cannot occur in an execution name, so no two (execution, key) pairs collide.
            Some(execution) => format!("{execution}\0{key}"),
            None => key.clone(),
        };
        // A poisoned lock only means another task panicked mid-update; the counts are still usable.
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let n = calls.entry(counter).or_insert(0);
        let index = (*n).min(entries.len().saturating_sub(1));
        *n += 1;
        entries.get(index).cloned()
    }

    /// Answers one invocation without delay handling: the value, or `(error, cause)`.
    /// The caller applies [`MockEntry::delay_seconds`] on its own clock first.
    /// `service_response` turns a [`MockAction::Response`] (a service's whole response) into the
    /// handler's result for the Task's resource.
    pub(crate) fn answer(
        entry: &MockEntry,
        input: &Value,
        service_response: impl FnOnce(Value) -> Result<Value, (String, String)>,
    ) -> Result<Value, (String, String)> {
        match &entry.action {
            MockAction::Return(v) => Ok(v.clone()),
            MockAction::Response(v) => service_response(v.clone()),
            MockAction::Echo => Ok(input.clone()),
            MockAction::Throw { error, cause } => Err((error.clone(), cause.clone())),
            // Resolved by the caller first (it knows the request's FunctionName).
            MockAction::ByFunction(_) => Self::answer(&Self::resolve(entry.clone(), None), input, service_response),
        }
    }

    /// The entry that really answers a call: for [`MockAction::ByFunction`], the response (and
    /// delay) of the function the `lambda:invoke` request's `FunctionName` names
    /// ([`TaskContext::function_name`](wfc_runtime::TaskContext::function_name)), or Lambda's
    /// `ResourceNotFoundException` at once. Callers resolve before applying the delay.
    pub(crate) fn resolve(entry: MockEntry, function: Option<&str>) -> MockEntry {
        let MockAction::ByFunction(functions) = &entry.action else { return entry };
        let Some(requested) = function else {
            let cause = "a \"functions\" mock answers only arn:aws:states:::lambda:invoke Tasks (it picks the \
                         function the request's FunctionName names); this Task has no FunctionName";
            return MockEntry {
                action: MockAction::Throw { error: NO_MOCK_ERROR.to_owned(), cause: cause.to_owned() },
                delay_seconds: 0.0,
            };
        };
        let name = function_name(requested);
        match functions.iter().find(|(arn, _)| arn == requested || function_name(arn) == name) {
            Some((_, chosen)) => chosen.clone(),
            None => {
                let (error, cause) = function_not_found(requested, functions);
                MockEntry { action: MockAction::Throw { error, cause }, delay_seconds: 0.0 }
            }
        }
    }

    /// The `(error, cause)` of a task that no mock answers; the cause ends with how to add one.
    pub(crate) fn no_mock(&self, state: Option<&str>, resource: &str) -> (String, String) {
        let hint = self.hint.as_deref().unwrap_or("add one to the case's \"mocks\"");
        let cause = match state {
            Some(s) => format!("no mock for state {s:?} (resource {resource:?}); {hint}"),
            None => format!("no mock for resource {resource:?}; {hint}"),
        };
        (NO_MOCK_ERROR.to_owned(), cause)
    }
}

/// Reads a field under either spelling (`return`/`Return`): case files follow Step Functions'
/// capitalisation or ours, whichever the author is used to.
fn field<'a>(map: &'a serde_json::Map<String, Value>, lower: &str, upper: &str) -> Option<&'a Value> {
    map.get(lower).or_else(|| map.get(upper))
}

fn parse_entry(v: &Value) -> Result<MockEntry, String> {
    let Value::Object(map) = v else {
        return Err(format!(
            "a response must be an object like {{\"return\": ...}} or {{\"throw\": {{\"error\": ...}}}}, found {}",
            wfc_runtime::error::value_kind(v)
        ));
    };
    for key in map.keys() {
        if !matches!(
            key.as_str(),
            "return" | "Return" | "response" | "throw" | "Throw" | "echo" | "functions" | "delay_seconds"
        ) {
            return Err(format!(
                "unknown field {key:?} (expected one of \"return\", \"response\", \"throw\", \"echo\", \"functions\", \"delay_seconds\")"
            ));
        }
        if key == "functions" && map.len() > 1 {
            return Err("\"functions\" stands alone: each function's response is inside it".into());
        }
    }
    let delay_seconds = match map.get("delay_seconds") {
        None => 0.0,
        Some(d) => match d.as_f64() {
            Some(s) if (0.0..=MAX_DELAY_SECONDS).contains(&s) => s,
            _ => {
                return Err(format!(
                    "\"delay_seconds\" must be a number from 0 to {MAX_DELAY_SECONDS} (AWS's longest task timeout), found {d}"
                ));
            }
        },
    };
    if let Some(functions) = map.get("functions") {
        let Value::Object(functions) = functions else {
            return Err(format!(
                "\"functions\" must be an object from function ARN to a response, found {}",
                wfc_runtime::error::value_kind(functions)
            ));
        };
        let mut out = Vec::new();
        for (arn, response) in functions {
            let entry = parse_entry(response).map_err(|e| format!("\"functions\"[{arn:?}]: {e}"))?;
            if matches!(entry.action, MockAction::ByFunction(_)) {
                return Err(format!("\"functions\"[{arn:?}]: a function's response cannot hold \"functions\""));
            }
            out.push((arn.clone(), entry));
        }
        return Ok(MockEntry { action: MockAction::ByFunction(out), delay_seconds: 0.0 });
    }
    let ret = field(map, "return", "Return");
    let throw = field(map, "throw", "Throw");
    let response = map.get("response");
    let echo = match map.get("echo") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(other) => return Err(format!("\"echo\" must be true or false, found {other}")),
    };
    let action = match (ret, throw, response, echo) {
        (Some(v), None, None, false) => MockAction::Return(v.clone()),
        (None, Some(t), None, false) => parse_throw(t)?,
        (None, None, Some(v), false) => MockAction::Response(v.clone()),
        (None, None, None, true) => MockAction::Echo,
        (None, None, None, false) => {
            return Err("a response needs one of \"return\", \"response\", \"throw\" or \"echo\"".into());
        }
        _ => return Err("a response has exactly one of \"return\", \"response\", \"throw\" or \"echo\"".into()),
    };
    Ok(MockEntry { action, delay_seconds })
}

fn parse_throw(t: &Value) -> Result<MockAction, String> {
    let Value::Object(map) = t else {
        return Err(format!(
            "\"throw\" must be an object {{\"error\": ..., \"cause\": ...}}, found {}",
            wfc_runtime::error::value_kind(t)
        ));
    };
    let error = match field(map, "error", "Error") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(other) => return Err(format!("\"throw\".\"error\" must be a non-empty string, found {other}")),
        None => return Err("\"throw\" needs an \"error\" name".into()),
    };
    let cause = match field(map, "cause", "Cause") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("\"throw\".\"cause\" must be a string, found {other}")),
    };
    Ok(MockAction::Throw { error, cause })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wfc_format_consumes_in_order_and_repeats_the_last() {
        let m = MockSet::from_wfc(&json!({
            "Flaky": [{"throw": {"error": "E", "cause": "c"}}, {"return": 1}],
            "arn:r": {"return": "by-resource"}
        }))
        .unwrap();
        assert_eq!(
            m.next(Some("Flaky"), "x").unwrap().action,
            MockAction::Throw { error: "E".into(), cause: "c".into() }
        );
        assert_eq!(m.next(Some("Flaky"), "x").unwrap().action, MockAction::Return(json!(1)));
        assert_eq!(m.next(Some("Flaky"), "x").unwrap().action, MockAction::Return(json!(1)));
        assert_eq!(m.next(Some("Other"), "arn:r").unwrap().action, MockAction::Return(json!("by-resource")));
        assert!(m.next(Some("Other"), "arn:none").is_none());
    }

    #[test]
    fn the_no_mock_cause_says_how_to_add_one() {
        let case = MockSet::empty();
        assert_eq!(
            case.no_mock(Some("S"), "r").1,
            r#"no mock for state "S" (resource "r"); add one to the case's "mocks""#
        );
        let run = MockSet::empty().with_hint("add one to m.json (--mocks)");
        assert_eq!(run.clone().no_mock(None, "r").1, r#"no mock for resource "r"; add one to m.json (--mocks)"#);
    }

    #[test]
    fn wfc_json_round_trips() {
        let m = MockSet::from_wfc(&json!({
            "A": [{"throw": {"error": "E", "cause": "c"}, "delay_seconds": 1.5}, {"return": null}],
            "B": {"echo": true}
        }))
        .unwrap();
        let back = MockSet::from_wfc(&m.to_wfc_json()).unwrap();
        assert_eq!(back.by_key, m.by_key);
    }

    #[test]
    fn wfc_format_rejects_bad_entries() {
        assert!(MockSet::from_wfc(&json!([])).is_err());
        assert!(MockSet::from_wfc(&json!({"A": []})).is_err());
        assert!(MockSet::from_wfc(&json!({"A": {"return": 1, "throw": {"error": "E"}}})).is_err());
        assert!(MockSet::from_wfc(&json!({"A": {"throw": {"cause": "no name"}}})).is_err());
        assert!(MockSet::from_wfc(&json!({"A": {"retrun": 1}})).is_err());
        assert!(MockSet::from_wfc(&json!({"A": {"return": 1, "delay_seconds": -1}})).is_err());
        assert!(MockSet::from_wfc(&json!({"A": {"return": 1, "delay_seconds": 1e300}})).is_err());
        assert!(MockSet::from_wfc(&json!({"A": {"return": 1, "delay_seconds": "5"}})).is_err());
        let m = MockSet::from_wfc(&json!({"A": {"Throw": {"Error": "E"}, "delay_seconds": 2}})).unwrap();
        let e = m.next(Some("A"), "r").unwrap();
        assert_eq!(e.delay_seconds, 2.0);
        assert_eq!(e.action, MockAction::Throw { error: "E".into(), cause: String::new() });
    }

    /// One test case of a MockConfigFile document, read as every engine reads it.
    fn sfn(doc: &Value, state_machine: Option<&str>, workflow: &str, case: &str) -> Result<MockSet, MockError> {
        let config = wfc_runtime::mock_config::MockConfig::from_value(doc).map_err(|e| MockError(e.to_string()))?;
        MockSet::from_mock_config(&config, state_machine, workflow, case)
    }

    #[test]
    fn step_functions_local_ranges_expand() {
        let doc = json!({
            "StateMachines": {"M": {"TestCases": {"RetryPath": {"LambdaState": "Retry"}}}},
            "MockedResponses": {"Retry": {
                "0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "not ready"}},
                "1-2": {"Throw": {"Error": "Lambda.TimeoutException", "Cause": "timed out"}},
                "3": {"Return": {"ok": true}}
            }}
        });
        assert_eq!(MockSet::detect(&doc), MockFormat::StepFunctionsLocal);
        let m = sfn(&doc, None, "whatever", "RetryPath").unwrap();
        let errors: Vec<MockAction> = (0..5).map(|_| m.next(Some("LambdaState"), "r").unwrap().action).collect();
        assert_eq!(
            errors[0],
            MockAction::Throw { error: "Lambda.ResourceNotReadyException".into(), cause: "not ready".into() }
        );
        assert_eq!(errors[2], MockAction::Throw { error: "Lambda.TimeoutException".into(), cause: "timed out".into() });
        assert_eq!(errors[3], MockAction::Response(json!({"ok": true})));
        // Invocation 4 is beyond the keys: no answer (as `wfc serve` answers), not the last again.
        let MockAction::Throw { error, cause } = &errors[4] else { panic!("{:?}", errors[4]) };
        assert_eq!(error, "States.Runtime");
        assert_eq!(
            cause,
            "--mocks, test case 'RetryPath': the mocked response 'Retry' has no answer for invocation 4 of state 'LambdaState' (its keys cover invocations 0 to 3)"
        );
        // A Return is the service's whole response: the caller makes the handler's result of it
        // (for Lambda its Payload), and the compiled engine's program reads it back as such.
        let payload = |v: Value| v.get("Payload").cloned().ok_or(("E".to_owned(), "no Payload".to_owned()));
        let lambda = json!({"StateMachines": {"M": {"TestCases": {"T": {"S": "R"}}}},
            "MockedResponses": {"R": {"0": {"Return": {"StatusCode": 200, "Payload": {"v": 1}}}}}});
        let m = sfn(&lambda, None, "x", "T").unwrap();
        let entry = m.next(Some("S"), "r").unwrap();
        assert_eq!(MockSet::answer(&entry, &json!({}), payload), Ok(json!({"v": 1})));
        let back = MockSet::from_wfc(&m.to_wfc_json()).unwrap();
        assert_eq!(back.by_key, m.by_key);
        assert_eq!(m.to_wfc_json()["S"][0], json!({"response": {"StatusCode": 200, "Payload": {"v": 1}}}));
    }

    #[test]
    fn step_functions_local_errors_are_reported() {
        let doc = json!({
            "StateMachines": {"M": {"TestCases": {"T": {"S": "R"}}}, "N": {"TestCases": {}}},
            "MockedResponses": {"R": {"0": {"Return": 1}}}
        });
        assert!(sfn(&doc, None, "x", "T").unwrap_err().0.contains("--state-machine"));
        assert!(sfn(&doc, Some("O"), "x", "T").unwrap_err().0.contains("no state machine \"O\""));
        assert_eq!(
            sfn(&doc, Some("M"), "x", "Nope").unwrap_err().0,
            "$.StateMachines.M.TestCases: state machine \"M\" has no test case \"Nope\" (it has: T)"
        );
        let missing = json!({"StateMachines": {"M": {"TestCases": {"T": {"S": "Missing"}}}}, "MockedResponses": {}});
        assert!(
            sfn(&missing, None, "x", "T")
                .unwrap_err()
                .0
                .starts_with("$.StateMachines.M.TestCases.T.S: names the mocked response 'Missing'")
        );
        let gap = json!({"StateMachines": {"M": {"TestCases": {"T": {"S": "Gap"}}}}, "MockedResponses": {"Gap": {"0": {"Return": 1}, "2": {"Return": 2}}}});
        assert!(sfn(&gap, None, "x", "T").unwrap_err().0.contains("gaps"));
        let huge = json!({"StateMachines": {"M": {"TestCases": {"T": {"S": "H"}}}}, "MockedResponses": {"H": {"0-99999999": {"Return": 1}}}});
        assert!(
            sfn(&huge, None, "x", "T")
                .unwrap_err()
                .0
                .starts_with("$.MockedResponses.H: its keys cover 100000000 invocations")
        );
    }

    #[test]
    fn functions_answer_by_the_requested_name_and_refuse_unknown_ones() {
        let doc = json!({"arn:aws:states:::lambda:invoke": {"functions": {
            "arn:aws:lambda:eu-west-1:111111111111:function:f1": {"return": 1, "delay_seconds": 2},
            "arn:aws:lambda:eu-west-1:111111111111:function:f2": {"echo": true}
        }}});
        let m = MockSet::from_wfc(&doc).unwrap();
        let entry = m.next(Some("S"), "arn:aws:states:::lambda:invoke").unwrap();
        let f1 = MockSet::resolve(entry.clone(), Some("f1"));
        assert_eq!((f1.action.clone(), f1.delay_seconds), (MockAction::Return(json!(1)), 2.0));
        // The function answers the Payload it is sent.
        let f2 = MockSet::resolve(entry.clone(), Some("arn:aws:lambda:eu-west-1:111111111111:function:f2"));
        assert_eq!(MockSet::answer(&f2, &json!({"p": 1}), Ok), Ok(json!({"p": 1})));
        let nope = MockSet::resolve(entry.clone(), Some("nope"));
        let (error, cause) = MockSet::answer(&nope, &json!({}), Ok).unwrap_err();
        assert_eq!(error, "Lambda.ResourceNotFoundException");
        assert!(cause.starts_with("Function not found: arn:aws:lambda:eu-west-1:111111111111:function:nope:$LATEST (Service: AWSLambda; Status Code: 404;"), "{cause}");
        // A Task that is not lambda:invoke has no FunctionName: a clear NoMock, not a guess.
        let (error, cause) = MockSet::answer(&entry, &json!({}), Ok).unwrap_err();
        assert_eq!(error, NO_MOCK_ERROR);
        assert!(cause.contains("only arn:aws:states:::lambda:invoke"), "{cause}");
        // The compiled engine's program reads the same responses back.
        assert_eq!(MockSet::from_wfc(&m.to_wfc_json()).unwrap().to_wfc_json(), m.to_wfc_json());
        assert!(MockSet::from_wfc(&json!({"A": {"functions": {"f": {"return": 1}}, "return": 2}})).is_err());
    }
}
