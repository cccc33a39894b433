//! `--mock-config F`: a Step Functions Local `MockConfigFile`, so its users' mocked test cases
//! run unchanged.
//!
//! The file is read by [`wfc_runtime::mock_config`], as `wfc run`, `wfc worker` and `wfc test`
//! read it (one parser, one model; its errors name the bad field's JSON path).
//!
//! `StartExecution` on `...:stateMachine:<name>#<TestCase>` runs the execution under that test
//! case: each Task of a state the case names answers with its mocked response instead of
//! running; the other states run as usual (as Step Functions Local calls the real service for
//! them). The case an execution runs under is kept in the store's registry (workflow
//! `wfc-serve-mockcase:<execution>`) so that it survives a restart, and so are the invocation
//! counters ([`InvocationCounter`]: the key/value rows `mock-count/<execution>/<state>`): after a restart, or on
//! another server of the store, an execution goes on with the next answer. A Task in flight when
//! a server stops runs again (at least once, as every step), and counts again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use wfc_interp::DynHandler;
use wfc_runtime::durable::{Definition, Language, Registry, Store, Syntax};
pub use wfc_runtime::mock_config::MockConfig;
use wfc_runtime::mock_config::{InvocationCounter, MockedAnswer};
use wfc_runtime::{Failure, TaskContext};

const CASE_PREFIX: &str = "wfc-serve-mockcase:";
const CASE_ORIGIN: &str = "wfc-serve:MOCKCASE";

/// The task handler of a server with a mock config: a state its execution's test case names
/// gets its mocked answer; everything else goes to `inner`.
pub struct MockHandler {
    config: Arc<MockConfig>,
    registry: Registry,
    inner: Arc<dyn DynHandler>,
    /// Executions known to run under a test case (store name → (machine, case)); `None`: none.
    cases: Mutex<HashMap<String, Option<(String, String)>>>,
    /// The invocation counters, in the store.
    counter: InvocationCounter,
}

impl MockHandler {
    /// Mocks of `config` over `inner`, with the test cases of executions kept in `store`.
    pub fn new(config: Arc<MockConfig>, store: Arc<dyn Store>, inner: Arc<dyn DynHandler>) -> MockHandler {
        MockHandler {
            config,
            registry: Registry::new(Arc::clone(&store)),
            inner,
            cases: Mutex::new(HashMap::new()),
            counter: InvocationCounter::new(store),
        }
    }

    /// The number of this invocation of `state` in `execution` (from 0), counted in the store.
    async fn invocation(&self, execution: &str, state: &str) -> Result<u32, Failure> {
        let n = self.counter.next(execution, state).await.map_err(|e| {
            Failure::new("States.Runtime", format!("cannot count the invocations of mocked state '{state}': {e}"))
        })?;
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
            let doc: serde_json::Value = serde_json::from_str(&v.definition.source).ok()?;
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
        Some(c) if c.test_case(machine, case).is_none() => Err(crate::ApiError::validation(format!(
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
                // wfc's own complaint about the file says where; a function's failure
                // (`FunctionError`) keeps its payload as the cause, as on AWS.
                Some(Ok(MockedAnswer::Return(v))) => wfc_runtime::lambda::mocked_response_result(resource, v.clone())
                    .map_err(|f| {
                        if f.error == "States.Runtime" {
                            let cause = format!("--mock-config, test case '{case}', state '{state}': {}", f.cause);
                            Failure::new(f.error, cause)
                        } else {
                            f
                        }
                    }),
                Some(Ok(MockedAnswer::Throw { error, cause })) => Err(Failure::new(error.as_str(), cause.as_str())),
                Some(Err(e)) => Err(Failure::new("States.Runtime", format!("--mock-config, test case '{case}': {e}"))),
                None => self.inner.call(resource, input, ctx).await,
            }
        })
    }
}
