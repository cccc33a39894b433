//! `--mock-config F`: a Step Functions Local `MockConfigFile`, so its users' mocked test cases
//! run unchanged.
//!
//! The format (Step Functions Local's): `StateMachines` → machine name → `TestCases` → test
//! case → state name → the name of a mocked response; `MockedResponses` → response name →
//! invocation key (`"0"`, or a range `"1-2"`, counted from 0 per state and execution) → exactly
//! one of `{"Return": value}` (the service call's result) or `{"Throw": {"Error", "Cause"}}`.
//!
//! `StartExecution` on `...:stateMachine:<name>#<TestCase>` runs the execution under that test
//! case: each Task of a state the case names answers with its mocked response instead of
//! running; the other states run as usual (as Step Functions Local calls the real service for
//! them). The case an execution runs under is kept in the store's registry (workflow
//! `wfc-serve-mockcase:<execution>`) so that it survives a restart, and so are the invocation
//! counters (the key/value rows `serve/mock-count/<execution>/<state>`): after a restart, or on
//! another server of the store, an execution goes on with the next answer. A Task in flight when
//! a server stops runs again (at least once, as every step), and counts again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use wfc_runtime::durable::{Definition, Language, Registry, Store, Syntax};
use wfc_runtime::interp::DynHandler;
use wfc_runtime::{Failure, TaskContext};

const CASE_PREFIX: &str = "wfc-serve-mockcase:";
const CASE_ORIGIN: &str = "wfc-serve:MOCKCASE";
const COUNT_PREFIX: &str = "serve/mock-count/";

/// One mocked answer.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Return(Value),
    Throw(Failure),
}

/// A loaded MockConfigFile.
#[derive(Debug, Default)]
pub struct MockConfig {
    /// machine → test case → state → response name.
    cases: HashMap<String, HashMap<String, HashMap<String, String>>>,
    /// response name → (first invocation, last invocation, answer).
    responses: HashMap<String, Vec<(u32, u32, Answer)>>,
}

fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object().ok_or_else(|| format!("{at} must be a JSON object"))
}

fn range(key: &str, at: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{at}: '{key}' is not an invocation number (\"0\") or range (\"1-2\")");
    let parse = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    match key.split_once('-') {
        None => parse(key).map(|n| (n, n)),
        Some((a, b)) => {
            let (a, b) = (parse(a)?, parse(b)?);
            if a > b { Err(bad()) } else { Ok((a, b)) }
        }
    }
}

impl MockConfig {
    /// Parses a MockConfigFile's text; every error names where it is.
    pub fn parse(text: &str) -> Result<MockConfig, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        let doc = object(&doc, "the mock config")?;
        for key in doc.keys() {
            if key != "StateMachines" && key != "MockedResponses" {
                return Err(format!("unknown top-level field '{key}' (StateMachines, MockedResponses)"));
            }
        }
        let mut config = MockConfig::default();
        let empty = Value::Object(Map::new());
        for (name, answers) in object(doc.get("MockedResponses").unwrap_or(&empty), "MockedResponses")? {
            let at = format!("MockedResponses.{name}");
            let mut list = Vec::new();
            for (key, answer) in object(answers, &at)? {
                let at = format!("{at}.\"{key}\"");
                let (lo, hi) = range(key, &at)?;
                let answer = object(answer, &at)?;
                let parsed = match (answer.get("Return"), answer.get("Throw"), answer.len()) {
                    (Some(v), None, 1) => Answer::Return(v.clone()),
                    (None, Some(t), 1) => {
                        let t = object(t, &format!("{at}.Throw"))?;
                        let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
                        Answer::Throw(Failure::new(text("Error"), text("Cause")))
                    }
                    _ => return Err(format!("{at} must have exactly one of Return or Throw")),
                };
                if list.iter().any(|(a, b, _)| lo <= *b && *a <= hi) {
                    return Err(format!("{at} overlaps another invocation range"));
                }
                list.push((lo, hi, parsed));
            }
            config.responses.insert(name.clone(), list);
        }
        for (machine, m) in object(doc.get("StateMachines").unwrap_or(&empty), "StateMachines")? {
            let at = format!("StateMachines.{machine}");
            let m = object(m, &at)?;
            let cases = object(m.get("TestCases").unwrap_or(&empty), &format!("{at}.TestCases"))?;
            let mut by_case = HashMap::new();
            for (case, states) in cases {
                let at = format!("{at}.TestCases.{case}");
                let mut by_state = HashMap::new();
                for (state, response) in object(states, &at)? {
                    let response =
                        response.as_str().ok_or_else(|| format!("{at}.{state} must name a mocked response"))?;
                    if !config.responses.contains_key(response) {
                        return Err(format!("{at}.{state} names '{response}', which MockedResponses does not define"));
                    }
                    by_state.insert(state.clone(), response.to_owned());
                }
                by_case.insert(case.clone(), by_state);
            }
            config.cases.insert(machine.clone(), by_case);
        }
        Ok(config)
    }

    /// Whether `machine` has the test case `case`.
    pub fn has_case(&self, machine: &str, case: &str) -> bool {
        self.cases.get(machine).is_some_and(|c| c.contains_key(case))
    }

    fn answer(&self, machine: &str, case: &str, state: &str, invocation: u32) -> Option<Result<Answer, String>> {
        let response = self.cases.get(machine)?.get(case)?.get(state)?;
        let found = self.responses.get(response).and_then(|list| {
            list.iter().find(|(lo, hi, _)| (*lo..=*hi).contains(&invocation)).map(|(_, _, a)| a.clone())
        });
        Some(found.ok_or_else(|| {
            format!("the mocked response '{response}' has no answer for invocation {invocation} of state '{state}'")
        }))
    }
}

/// The task handler of a server with a mock config: a state its execution's test case names
/// gets its mocked answer; everything else goes to `inner`.
pub struct MockHandler {
    config: Arc<MockConfig>,
    registry: Registry,
    inner: Arc<dyn DynHandler>,
    /// Executions known to run under a test case (store name → (machine, case)); `None`: none.
    cases: Mutex<HashMap<String, Option<(String, String)>>>,
    /// Where the invocation counters are.
    store: Arc<dyn Store>,
}

impl MockHandler {
    /// Mocks of `config` over `inner`, with the test cases of executions kept in `store`.
    pub fn new(config: Arc<MockConfig>, store: Arc<dyn Store>, inner: Arc<dyn DynHandler>) -> MockHandler {
        MockHandler {
            config,
            registry: Registry::new(Arc::clone(&store)),
            inner,
            cases: Mutex::new(HashMap::new()),
            store,
        }
    }

    /// The number of this invocation of `state` in `execution` (from 0), counted in the store.
    /// One server runs an execution at a time, so reading and writing it back is safe.
    async fn invocation(&self, execution: &str, state: &str) -> Result<u32, Failure> {
        let key = format!("{COUNT_PREFIX}{execution}/{state}");
        let failed = |e: wfc_runtime::durable::StoreError| {
            Failure::new("States.Runtime", format!("cannot count the invocations of mocked state '{state}': {e}"))
        };
        let n = self.store.kv_get(&key).await.map_err(failed)?.and_then(|v| v.as_u64()).unwrap_or(0);
        self.store.kv_put(&key, Value::from(n + 1)).await.map_err(failed)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The test case of execution `execution` (store name), from memory or the store.
    async fn case_of(&self, execution: &str) -> Result<Option<(String, String)>, Failure> {
        if let Some(known) = self.cases.lock().unwrap_or_else(|p| p.into_inner()).get(execution) {
            return Ok(known.clone());
        }
        let current =
            self.registry.current(&format!("{CASE_PREFIX}{execution}")).await.map_err(|e| {
                Failure::new("States.Runtime", format!("cannot read the execution's mock test case: {e}"))
            })?;
        let case = current.and_then(|v| {
            let doc: Value = serde_json::from_str(&v.definition.source).ok()?;
            Some((doc["machine"].as_str()?.to_owned(), doc["case"].as_str()?.to_owned()))
        });
        self.cases.lock().unwrap_or_else(|p| p.into_inner()).insert(execution.to_owned(), case.clone());
        Ok(case)
    }
}

/// Checks a `#TestCase` of StartExecution: the server has a mock config with that case.
pub fn check_case(config: Option<&MockConfig>, machine: &str, case: &str, arn: &str) -> Result<(), crate::ApiError> {
    match config {
        None => Err(crate::ApiError::validation(format!(
            "'{arn}' names the mock test case '{case}', but the server has no --mock-config"
        ))),
        Some(c) if !c.has_case(machine, case) => Err(crate::ApiError::validation(format!(
            "'{arn}' names the test case '{case}', which the mock config does not define for state machine '{machine}'"
        ))),
        Some(_) => Ok(()),
    }
}

/// Records that execution `execution` (store name) of `machine` runs under test case `case`.
pub async fn record_case(store: Arc<dyn Store>, execution: &str, machine: &str, case: &str) -> Result<(), String> {
    let registry = Registry::new(store);
    let definition = Definition {
        workflow: format!("{CASE_PREFIX}{execution}"),
        origin: CASE_ORIGIN.to_owned(),
        source: serde_json::json!({ "machine": machine, "case": case }).to_string(),
        language: Language::Asl,
        syntax: Syntax::Json,
        passes: Vec::new(),
        siblings: Vec::new(),
    };
    let (version, _) = registry.register(definition, None).await.map_err(|e| e.to_string())?;
    registry.publish(&version.version_id).await.map_err(|e| e.to_string())
}

impl DynHandler for MockHandler {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(async move {
            let execution = ctx.execution_name().to_owned();
            let Some((machine, case)) = self.case_of(&execution).await? else {
                return self.inner.call(resource, input, ctx).await;
            };
            let state = ctx.state_name().to_owned();
            if self.config.answer(&machine, &case, &state, 0).is_none() {
                return self.inner.call(resource, input, ctx).await;
            }
            let invocation = self.invocation(&execution, &state).await?;
            match self.config.answer(&machine, &case, &state, invocation) {
                // The service's whole response: for Lambda (`lambda:invoke` or a function ARN)
                // the Invoke response, whose Payload the handler gives (the one code path that
                // `wfc run`, `wfc worker` and `wfc test` answer MockConfigFile Returns with too).
                Some(Ok(Answer::Return(v))) => wfc_runtime::lambda::mocked_response_result(resource, v).map_err(|f| {
                    Failure::new(f.error, format!("--mock-config, test case '{case}', state '{state}': {}", f.cause))
                }),
                Some(Ok(Answer::Throw(f))) => Err(f),
                Some(Err(e)) => Err(Failure::new("States.Runtime", format!("--mock-config, test case '{case}': {e}"))),
                None => self.inner.call(resource, input, ctx).await,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_configs_parse_and_answer_by_invocation() {
        let text = r#"{"StateMachines": {"M": {"TestCases": {"Happy": {"A": "R"}}}},
            "MockedResponses": {"R": {"0": {"Throw": {"Error": "E", "Cause": "C"}}, "1-2": {"Return": {"ok": 1}}}}}"#;
        let c = MockConfig::parse(text).unwrap();
        assert!(c.has_case("M", "Happy") && !c.has_case("M", "Sad"));
        assert_eq!(c.answer("M", "Happy", "A", 0), Some(Ok(Answer::Throw(Failure::new("E", "C")))));
        assert_eq!(c.answer("M", "Happy", "A", 2), Some(Ok(Answer::Return(serde_json::json!({"ok": 1})))));
        assert!(matches!(c.answer("M", "Happy", "A", 3), Some(Err(_))));
        assert_eq!(c.answer("M", "Happy", "B", 0), None);
        for bad in [
            r#"{"MockedResponses": {"R": {"x": {"Return": 1}}}}"#,
            r#"{"MockedResponses": {"R": {"0": {"Return": 1, "Throw": {}}}}}"#,
            r#"{"MockedResponses": {"R": {"0-2": {"Return": 1}, "2": {"Return": 1}}}}"#,
            r#"{"StateMachines": {"M": {"TestCases": {"H": {"A": "Missing"}}}}}"#,
            r#"{"Other": {}}"#,
        ] {
            assert!(MockConfig::parse(bad).is_err(), "{bad}");
        }
    }
}
