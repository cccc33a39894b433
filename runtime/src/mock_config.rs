//! Step Functions Local's `MockConfigFile`: the one parser and model that `wfc run`, `wfc worker`,
//! `wfc test` and `wfc serve --mock-config` read it with.
//!
//! The format (Step Functions Local's, "Configuration file for mocked service integrations"):
//! `StateMachines` → machine name → `TestCases` → test case → state name → the name of a mocked
//! response; `MockedResponses` → response name → invocation key (`"0"`, or an inclusive range
//! `"1-2"`, counted from 0 per state and execution) → exactly one of `{"Return": value}` (the
//! service call's whole response) or `{"Throw": {"Error", "Cause"}}`. The keys of a response run
//! from 0 without gaps or overlaps, as Step Functions Local numbers them consecutively; an
//! invocation beyond them has no answer ([`beyond_keys_cause`]).
//!
//! Every error names where the bad field is, as a JSON path (`$.MockedResponses.Retry["1-2"].Throw`):
//! callers put the file's name in front.
//!
//! What a `Return` becomes for a Task is [`crate::lambda::mocked_response_result`]'s concern; how
//! invocations are counted per execution in a durable store is [`InvocationCounter`]'s.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// A loaded MockConfigFile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MockConfig {
    /// machine → test case → its states' responses.
    machines: BTreeMap<String, BTreeMap<String, TestCase>>,
    /// response name → its answers by invocation.
    responses: BTreeMap<String, MockedResponse>,
}

/// One test case: which mocked response each named state answers with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestCase {
    states: BTreeMap<String, String>,
}

/// One mocked response: its answers by invocation number, in ranges that run from 0 without gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct MockedResponse {
    /// (first invocation, last invocation, answer), sorted, contiguous from 0.
    ranges: Vec<(u32, u32, MockedAnswer)>,
}

/// What one mocked invocation answers.
#[derive(Debug, Clone, PartialEq)]
pub enum MockedAnswer {
    /// The service call's whole response (for Lambda, the `Invoke` response).
    Return(Value),
    /// The Task fails with this error and cause.
    Throw {
        /// The error name.
        error: String,
        /// The cause (empty when the file gives none).
        cause: String,
    },
}

/// A bad MockConfigFile: where (a JSON path from the document's root, `$`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockConfigError {
    /// The JSON path of the bad field, e.g. `$.MockedResponses.Retry["1-2"].Throw.Error`.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for MockConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for MockConfigError {}

fn error(path: &str, message: impl Into<String>) -> MockConfigError {
    MockConfigError { path: path.to_owned(), message: message.into() }
}

/// `path` extended by the member `key`: `.key` for a plain name, `["key"]` otherwise.
fn member(path: &str, key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain { format!("{path}.{key}") } else { format!("{path}[{}]", Value::String(key.to_owned())) }
}

fn object<'a>(v: &'a Value, path: &str, what: &str) -> Result<&'a Map<String, Value>, MockConfigError> {
    v.as_object()
        .ok_or_else(|| error(path, format!("must be an object ({what}), found {}", crate::error::value_kind(v))))
}

/// Refuses members other than `allowed`: a misspelt field would otherwise be ignored silently.
fn only(map: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), MockConfigError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(error(&member(path, k), format!("unknown field (expected {})", allowed.join(" or ")))),
        None => Ok(()),
    }
}

fn range(key: &str, path: &str) -> Result<(u32, u32), MockConfigError> {
    let bad = || {
        error(path, format!("the key \"{key}\" is not an invocation number (\"0\") or an inclusive range (\"1-2\")"))
    };
    let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    match key.split_once('-') {
        None => number(key).map(|n| (n, n)),
        Some((a, b)) => {
            let (a, b) = (number(a)?, number(b)?);
            if a > b { Err(error(path, format!("the range \"{key}\" ends before it starts"))) } else { Ok((a, b)) }
        }
    }
}

fn answer(v: &Value, path: &str) -> Result<MockedAnswer, MockConfigError> {
    let map = object(v, path, "with \"Return\" or \"Throw\"")?;
    only(map, path, &["Return", "Throw"])?;
    match (map.get("Return"), map.get("Throw")) {
        (Some(r), None) => Ok(MockedAnswer::Return(r.clone())),
        (None, Some(t)) => {
            let at = member(path, "Throw");
            let t = object(t, &at, "{\"Error\": ..., \"Cause\": ...}")?;
            only(t, &at, &["Error", "Cause"])?;
            let error_name = match t.get("Error") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(other) => {
                    return Err(error(&member(&at, "Error"), format!("must be a non-empty string, found {other}")));
                }
                None => return Err(error(&at, "needs an \"Error\" name")),
            };
            let cause = match t.get("Cause") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => return Err(error(&member(&at, "Cause"), format!("must be a string, found {other}"))),
            };
            Ok(MockedAnswer::Throw { error: error_name, cause })
        }
        _ => Err(error(path, "must have exactly one of \"Return\" or \"Throw\"")),
    }
}

fn response(v: &Value, path: &str) -> Result<MockedResponse, MockConfigError> {
    let map = object(v, path, "keyed by invocation number")?;
    let mut ranges = Vec::with_capacity(map.len());
    for (key, value) in map {
        let at = member(path, key);
        let (lo, hi) = range(key, &at)?;
        ranges.push((lo, hi, answer(value, &at)?));
    }
    ranges.sort_by_key(|(lo, _, _)| *lo);
    let mut next = 0u64;
    for (lo, hi, _) in &ranges {
        if u64::from(*lo) != next {
            return Err(error(
                path,
                format!(
                    "the invocation keys must run from 0 without gaps or overlaps, as Step Functions Local numbers them: expected {next}, found {lo}"
                ),
            ));
        }
        next = u64::from(*hi) + 1;
    }
    if ranges.is_empty() {
        return Err(error(path, "a mocked response needs at least invocation \"0\""));
    }
    Ok(MockedResponse { ranges })
}

impl MockConfig {
    /// Parses a MockConfigFile's text.
    pub fn parse(text: &str) -> Result<MockConfig, MockConfigError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| error("$", format!("not valid JSON: {e}")))?;
        MockConfig::from_value(&doc)
    }

    /// Reads a MockConfigFile's JSON document.
    pub fn from_value(doc: &Value) -> Result<MockConfig, MockConfigError> {
        let root = object(doc, "$", "with \"StateMachines\" and \"MockedResponses\"")?;
        only(root, "$", &["StateMachines", "MockedResponses"])?;
        let mut config = MockConfig::default();
        let responses = root
            .get("MockedResponses")
            .ok_or_else(|| error("$", "missing \"MockedResponses\" (the mocked responses by name)"))?;
        for (name, r) in object(responses, "$.MockedResponses", "mocked responses by name")? {
            config.responses.insert(name.clone(), response(r, &member("$.MockedResponses", name))?);
        }
        let machines = root
            .get("StateMachines")
            .ok_or_else(|| error("$", "missing \"StateMachines\" (the state machines' test cases)"))?;
        for (machine, m) in object(machines, "$.StateMachines", "state machines by name")? {
            let at = member("$.StateMachines", machine);
            let m = object(m, &at, "with \"TestCases\"")?;
            only(m, &at, &["TestCases"])?;
            let at = member(&at, "TestCases");
            let cases = object(m.get("TestCases").ok_or_else(|| error(&at, "missing"))?, &at, "test cases by name")?;
            let mut by_case = BTreeMap::new();
            for (case, states) in cases {
                let at = member(&at, case);
                let mut by_state = BTreeMap::new();
                for (state, name) in object(states, &at, "from state name to mocked response name")? {
                    let at = member(&at, state);
                    let name = name.as_str().ok_or_else(|| {
                        error(
                            &at,
                            format!("must name a mocked response (a string), found {}", crate::error::value_kind(name)),
                        )
                    })?;
                    if !config.responses.contains_key(name) {
                        return Err(error(
                            &at,
                            format!("names the mocked response '{name}', which MockedResponses does not define"),
                        ));
                    }
                    by_state.insert(state.clone(), name.to_owned());
                }
                by_case.insert(case.clone(), TestCase { states: by_state });
            }
            config.machines.insert(machine.clone(), by_case);
        }
        Ok(config)
    }

    /// The state machines' names, in order.
    pub fn machines(&self) -> impl Iterator<Item = &str> {
        self.machines.keys().map(String::as_str)
    }

    /// The test cases of `machine` by name, or `None` when the file has no such machine.
    pub fn test_cases(&self, machine: &str) -> Option<&BTreeMap<String, TestCase>> {
        self.machines.get(machine)
    }

    /// The test case `case` of `machine`.
    pub fn test_case(&self, machine: &str, case: &str) -> Option<&TestCase> {
        self.machines.get(machine)?.get(case)
    }

    /// The mocked response named `name`.
    pub fn response(&self, name: &str) -> Option<&MockedResponse> {
        self.responses.get(name)
    }

    /// The answer to invocation `invocation` (from 0) of `state` in test case `case` of
    /// `machine`: `None` when the case does not mock that state (the Task runs as usual),
    /// `Some(Err(cause))` when the state's response has no answer for that invocation.
    pub fn answer(
        &self,
        machine: &str,
        case: &str,
        state: &str,
        invocation: u32,
    ) -> Option<Result<&MockedAnswer, String>> {
        let name = self.test_case(machine, case)?.response_name(state)?;
        let response = self.responses.get(name)?;
        Some(
            response
                .answer(invocation)
                .ok_or_else(|| beyond_keys_cause(name, state, invocation, response.invocations())),
        )
    }
}

impl TestCase {
    /// The name of the mocked response state `state` answers with, if the case mocks it.
    pub fn response_name(&self, state: &str) -> Option<&str> {
        self.states.get(state).map(String::as_str)
    }

    /// Each mocked state and its response's name, in state order.
    pub fn states(&self) -> impl Iterator<Item = (&str, &str)> {
        self.states.iter().map(|(s, r)| (s.as_str(), r.as_str()))
    }
}

impl MockedResponse {
    /// The answer to invocation `invocation` (from 0), if a key covers it.
    pub fn answer(&self, invocation: u32) -> Option<&MockedAnswer> {
        self.ranges.iter().find(|(lo, hi, _)| (*lo..=*hi).contains(&invocation)).map(|(_, _, a)| a)
    }

    /// How many invocations the keys cover (they run from 0 without gaps).
    pub fn invocations(&self) -> u64 {
        self.ranges.last().map_or(0, |(_, hi, _)| u64::from(*hi) + 1)
    }

    /// The ranges: (first invocation, last invocation, answer), in order.
    pub fn ranges(&self) -> impl Iterator<Item = (u32, u32, &MockedAnswer)> {
        self.ranges.iter().map(|(lo, hi, a)| (*lo, *hi, a))
    }
}

/// The cause of a Task whose invocation is beyond its mocked response's keys: it fails with
/// `States.Runtime` (Step Functions Local has no answer for it either), under every engine.
pub fn beyond_keys_cause(response: &str, state: &str, invocation: u32, covered: u64) -> String {
    format!(
        "the mocked response '{response}' has no answer for invocation {invocation} of state '{state}' (its keys cover invocations 0 to {})",
        covered.saturating_sub(1)
    )
}

/// Counts mocked invocations per execution and state in a durable store (its key/value rows
/// `mock-count/<execution>/<state>`), so that after a restart, or on another process of the
/// store, an execution goes on with its next answer (`wfc serve --mock-config`, `wfc worker
/// --mocks`). One process runs an execution at a time (its lease), so a read and a write back
/// are enough across processes; within the process a lock keeps concurrent invocations of one
/// state (Map iterations, Parallel branches) from reading the same count. A Task in flight when
/// a process stops runs again and counts again (at least once, like every step).
#[cfg(feature = "durable")]
pub struct InvocationCounter {
    store: std::sync::Arc<dyn crate::durable::Store>,
    lock: tokio::sync::Mutex<()>,
}

#[cfg(feature = "durable")]
impl InvocationCounter {
    /// Counts in `store`.
    pub fn new(store: std::sync::Arc<dyn crate::durable::Store>) -> InvocationCounter {
        InvocationCounter { store, lock: tokio::sync::Mutex::new(()) }
    }

    /// The number of this invocation (from 0) of the mocked key `key` (a state name or a
    /// resource) in the stored execution `execution`, counted.
    pub async fn next(&self, execution: &str, key: &str) -> Result<u64, crate::durable::StoreError> {
        let row = format!("{COUNTER_PREFIX}{execution}/{key}");
        let _held = self.lock.lock().await;
        let n = self.store.kv_get(&row).await?.and_then(|v| v.as_u64()).unwrap_or(0);
        self.store.kv_put(&row, Value::from(n + 1)).await?;
        Ok(n)
    }
}

/// The key/value rows of the invocation counters: `mock-count/<execution>/<key>`.
#[cfg(feature = "durable")]
const COUNTER_PREFIX: &str = "mock-count/";

/// How long an ended execution may be redriven (AWS's redrivable period: 14 days from its end),
/// and so how long its invocation counters are kept (see [`InvocationCounter::forget_ended`]).
#[cfg(feature = "durable")]
pub const REDRIVABLE_PERIOD_MS: i64 = 14 * 24 * 3600 * 1000;

#[cfg(feature = "durable")]
impl InvocationCounter {
    /// Deletes the counters of `execution` (stored name): it succeeded, so no redrive can run
    /// its mocked states again. Returns how many rows went.
    pub async fn forget(&self, execution: &str) -> Result<usize, crate::durable::StoreError> {
        let _held = self.lock.lock().await;
        let mut forgotten = 0;
        for (key, _) in self.store.kv_list(&format!("{COUNTER_PREFIX}{execution}/")).await? {
            forgotten += usize::from(self.store.kv_delete(&key).await?);
        }
        Ok(forgotten)
    }

    /// Deletes the counters no redrive can need any more, as of `now_ms`: those of executions
    /// that succeeded, that are no longer stored, or that ended (failed, timed out, aborted)
    /// longer than [`REDRIVABLE_PERIOD_MS`] ago. A running execution's are kept, and so are an
    /// ended one's while it may still be redriven (a redrive goes on with the next answers).
    /// The process that runs an execution forgets its counters when it succeeds; this sweep
    /// catches the rest (a server starting). Returns how many rows went.
    pub async fn forget_ended(&self, now_ms: i64) -> Result<usize, crate::durable::StoreError> {
        use crate::durable::ExecutionStatus;
        let mut executions: Vec<String> = Vec::new();
        for (key, _) in self.store.kv_list(COUNTER_PREFIX).await? {
            // Names may hold '/' (none do today); the key is the last part, as written.
            let Some((execution, _key)) = key.strip_prefix(COUNTER_PREFIX).and_then(|k| k.rsplit_once('/')) else {
                continue;
            };
            if executions.last().map(String::as_str) != Some(execution) {
                executions.push(execution.to_owned());
            }
        }
        let mut forgotten = 0;
        for execution in executions {
            let needed = self.store.describe_execution(&execution).await?.is_some_and(|r| match r.status {
                ExecutionStatus::Running => true,
                ExecutionStatus::Succeeded => false,
                _ => now_ms - r.updated_at_ms <= REDRIVABLE_PERIOD_MS,
            });
            if !needed {
                forgotten += self.forget(&execution).await?;
            }
        }
        Ok(forgotten)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(doc: Value) -> Result<MockConfig, MockConfigError> {
        MockConfig::from_value(&doc)
    }

    #[test]
    fn answers_by_invocation_in_ranges() {
        let c = MockConfig::parse(
            r#"{"StateMachines": {"M": {"TestCases": {"Happy": {"A": "R"}}}},
            "MockedResponses": {"R": {"0": {"Throw": {"Error": "E", "Cause": "C"}}, "1-2": {"Return": {"ok": 1}}}}}"#,
        )
        .unwrap();
        let throw = MockedAnswer::Throw { error: "E".into(), cause: "C".into() };
        assert_eq!(c.answer("M", "Happy", "A", 0), Some(Ok(&throw)));
        assert_eq!(c.answer("M", "Happy", "A", 2), Some(Ok(&MockedAnswer::Return(json!({"ok": 1})))));
        assert_eq!(
            c.answer("M", "Happy", "A", 3),
            Some(Err("the mocked response 'R' has no answer for invocation 3 of state 'A' (its keys cover invocations 0 to 2)".into()))
        );
        assert_eq!(c.answer("M", "Happy", "B", 0), None);
        assert_eq!(c.answer("M", "Sad", "A", 0), None);
        assert_eq!(c.machines().collect::<Vec<_>>(), ["M"]);
        assert_eq!(c.test_case("M", "Happy").unwrap().states().collect::<Vec<_>>(), [("A", "R")]);
    }

    #[test]
    fn errors_name_the_bad_field() {
        let ok_machines = json!({"M": {"TestCases": {"T": {"S": "R"}}}});
        let cases: Vec<(Value, &str, &str)> = vec![
            (json!([]), "$", "must be an object"),
            (json!({"StateMachines": {}, "MockedResponses": {}, "Other": 1}), "$.Other", "unknown field"),
            (json!({"StateMachines": {}}), "$", "missing \"MockedResponses\""),
            (json!({"MockedResponses": {}}), "$", "missing \"StateMachines\""),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"x": {"Return": 1}}}}),
                "$.MockedResponses.R.x",
                "not an invocation number",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"0": {"Return": 1, "Throw": {"Error": "E"}}}}}),
                "$.MockedResponses.R[\"0\"]",
                "exactly one of",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"0": {"Throw": {"Cause": "c"}}}}}),
                "$.MockedResponses.R[\"0\"].Throw",
                "needs an \"Error\"",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"0": {"Throw": {"Error": 5}}}}}),
                "$.MockedResponses.R[\"0\"].Throw.Error",
                "non-empty string",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"0": {"Retrun": 1}}}}),
                "$.MockedResponses.R[\"0\"].Retrun",
                "unknown field",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"0": {"Return": 1}, "2": {"Return": 2}}}}),
                "$.MockedResponses.R",
                "expected 1, found 2",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"0-2": {"Return": 1}, "2": {"Return": 1}}}}),
                "$.MockedResponses.R",
                "without gaps or overlaps",
            ),
            (
                json!({"StateMachines": ok_machines, "MockedResponses": {"R": {"2-1": {"Return": 1}}}}),
                "$.MockedResponses.R[\"2-1\"]",
                "ends before it starts",
            ),
            (
                json!({"StateMachines": {"M": {"TestCases": {"T": {"My State": "Missing"}}}}, "MockedResponses": {}}),
                "$.StateMachines.M.TestCases.T[\"My State\"]",
                "names the mocked response 'Missing'",
            ),
            (json!({"StateMachines": {"M": {}}, "MockedResponses": {}}), "$.StateMachines.M.TestCases", "missing"),
            (
                json!({"StateMachines": {"M": {"TestCases": {"T": {"S": 1}}}}, "MockedResponses": {}}),
                "$.StateMachines.M.TestCases.T.S",
                "must name",
            ),
        ];
        for (doc, path, says) in cases {
            let e = parse(doc.clone()).unwrap_err();
            assert_eq!(e.path, path, "{doc}: {e}");
            assert!(e.message.contains(says), "{doc}: {e}");
        }
        let e = MockConfig::parse("{\"StateMachines\": ").unwrap_err();
        assert_eq!(e.path, "$");
        assert!(e.to_string().starts_with("$: not valid JSON: EOF while parsing"), "{e}");
    }

    #[test]
    fn huge_ranges_are_kept_as_ranges() {
        let c = parse(json!({"StateMachines": {"M": {"TestCases": {"T": {"S": "H"}}}},
            "MockedResponses": {"H": {"0-4000000000": {"Return": 1}}}}))
        .unwrap();
        assert_eq!(c.response("H").unwrap().invocations(), 4_000_000_001);
        assert_eq!(c.answer("M", "T", "S", 3_999_999_999), Some(Ok(&MockedAnswer::Return(json!(1)))));
    }
}
