//! Running an execution on one of the two engines, and the mock-answering task handler the
//! interpreter uses.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use wfc_interp::DynHandler;
use wfc_runtime::{Failure, RunOptions, Status, TaskContext};

use crate::EngineChoice;
use crate::callback_answers::CallbackAnswers;
use crate::check::DefinitionText;
use crate::compiled;
use crate::mocks::MockSet;
use crate::outcome::Outcome;

/// Everything an engine needs to run one execution.
pub(crate) struct Execution<'a> {
    /// The validated workflow.
    pub(crate) workflow: &'a wfc_ir::Workflow,
    /// Its definition text (the compiled engine compiles it again).
    pub(crate) definition: &'a DefinitionText,
    /// The execution input.
    pub(crate) input: Value,
    /// Mocked task responses.
    pub(crate) mocks: MockSet,
    /// Virtual time instead of real time.
    pub(crate) virtual_time: bool,
    /// Seed for jitter.
    pub(crate) seed: u64,
    /// Execution name.
    pub(crate) name: Option<String>,
    /// Scripted answers to `.waitForTaskToken` tasks (a case's `callbacks`).
    pub(crate) callbacks: Option<Value>,
    /// Where a DISTRIBUTED Map's ItemReader reads (`<root>/<Bucket>/<Key>`).
    pub(crate) item_root: Option<std::path::PathBuf>,
    /// Where a DISTRIBUTED Map's ResultWriter writes (`<root>/<Bucket>/<Prefix>/...`).
    pub(crate) result_root: Option<std::path::PathBuf>,
    /// How much history the execution keeps.
    pub(crate) history_level: wfc_runtime::HistoryLevel,
    /// The state machine type (`$$.Execution.Id`'s form, `RedriveCount`).
    pub(crate) machine_type: wfc_runtime::MachineType,
    /// Serverless Workflow events to deliver: (seconds after the start, CloudEvent).
    pub(crate) events: Vec<(f64, Value)>,
    /// The optimizer passes `workflow` was loaded with; the compiled engine builds with them.
    pub(crate) passes: wfc_core::optimize::Passes,
    /// The execution's start instant (RFC 3339) on virtual time; `None`: the clock's default.
    pub(crate) start_time: Option<String>,
    /// The state machine's name in ARNs; `None`: the workflow's name.
    pub(crate) state_machine_name: Option<String>,
    /// The region and account ARNs are minted in; `None`: the runtime's local default.
    pub(crate) account: Option<(String, String)>,
}

impl Execution<'_> {
    /// The state machine's name the execution runs under. Always passed to the runtime as a
    /// parameter: a compiled module is shared by every definition with the same text, whatever
    /// the name it was first built under.
    pub(crate) fn machine_name(&self) -> &str {
        self.state_machine_name.as_deref().unwrap_or(&self.workflow.name)
    }
}

/// The virtual clock starting at `start` (RFC 3339), or the default one.
pub(crate) fn virtual_clock(start: Option<&str>) -> Result<wfc_runtime::Clock, String> {
    match start {
        None => Ok(wfc_runtime::Clock::virtual_default()),
        Some(text) => wfc_runtime::Clock::virtual_from_rfc3339(text),
    }
}

/// Runs one execution.
pub(crate) fn execute(engine: EngineChoice, execution: &Execution<'_>) -> Result<Outcome, String> {
    match engine {
        EngineChoice::Interp => interp(execution),
        EngineChoice::Compiled => compiled::execute(execution),
    }
}

/// Builds the compiled engine's program for these definitions up front, so the executions that
/// follow share one build.
pub(crate) fn prepare_compiled(
    definitions: &[(&DefinitionText, &wfc_ir::Workflow)],
    passes: wfc_core::optimize::Passes,
) -> Result<(), String> {
    compiled::prepare(definitions, passes)
}

/// Answers every task from a [`MockSet`]: the state name is looked up first, then the resource.
/// A mock's `delay_seconds` is slept on tokio's clock, which is the execution's clock (virtual
/// time jumps over it), so TimeoutSeconds and HeartbeatSeconds can be exercised.
pub(crate) struct MockHandler {
    mocks: MockSet,
    /// Whether invocations are counted per execution (a handler serving many executions, as
    /// `wfc worker`'s) rather than once for the handler (one execution's, as `wfc run`'s).
    per_execution: bool,
    /// Where per-execution counts are kept: in the durable store the executions run in, so a
    /// restarted worker (or another one) goes on with an execution's next answer; `None`: in
    /// memory.
    counter: Option<std::sync::Arc<wfc_runtime::mock_config::InvocationCounter>>,
}

impl MockHandler {
    /// A handler answering one execution from `mocks`.
    pub(crate) fn new(mocks: MockSet) -> MockHandler {
        MockHandler { mocks, per_execution: false, counter: None }
    }

    /// A handler answering many executions from `mocks`, each counting its invocations from 0
    /// (as `wfc serve --mock-config` counts them). A DISTRIBUTED Map Run's child executions
    /// count with their parent (the stored execution they are journaled in), as under `wfc run`.
    pub(crate) fn per_execution(mocks: MockSet) -> MockHandler {
        MockHandler { mocks, per_execution: true, counter: None }
    }

    /// [`MockHandler::per_execution`] with the counts in a durable store.
    pub(crate) fn counted_in(
        mut self,
        counter: std::sync::Arc<wfc_runtime::mock_config::InvocationCounter>,
    ) -> MockHandler {
        self.counter = Some(counter);
        self
    }
}

impl DynHandler for MockHandler {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(async move {
            let entry = if let Some(counter) = self.counter.as_ref().filter(|_| self.per_execution) {
                let execution = ctx.stored_execution().unwrap_or(ctx.execution_name());
                match self.mocks.key_for(Some(ctx.state_name()), resource) {
                    Some(key) => {
                        let invocation = counter.next(execution, key).await.map_err(|e| {
                            Failure::new("States.Runtime", format!("cannot count the invocations of mock '{key}': {e}"))
                        })?;
                        self.mocks.entry_at(key, invocation)
                    }
                    None => None,
                }
            } else if self.per_execution {
                let execution = ctx.stored_execution().unwrap_or(ctx.execution_name());
                self.mocks.next_for(execution, Some(ctx.state_name()), resource)
            } else {
                self.mocks.next(Some(ctx.state_name()), resource)
            };
            let Some(entry) = entry else {
                let (error, cause) = self.mocks.no_mock(Some(ctx.state_name()), resource);
                return Err(Failure::new(error, cause));
            };
            let entry = MockSet::resolve(entry, ctx.function_name());
            if entry.delay_seconds > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(entry.delay_seconds)).await;
            }
            MockSet::answer(&entry, &input, |response| {
                wfc_runtime::lambda::mocked_response_result(resource, response).map_err(|f| (f.error, f.cause))
            })
            .map_err(|(error, cause)| Failure::new(error, cause))
        })
    }
}

/// Converts the runtime's result into the engine-independent outcome.
pub(crate) fn outcome_of(result: wfc_runtime::ExecutionResult, virtual_time: bool) -> Result<Outcome, String> {
    let status = match result.status {
        Status::Succeeded => "SUCCEEDED",
        Status::Failed => "FAILED",
        Status::TimedOut => "TIMED_OUT",
    };
    let history = result
        .history
        .iter()
        .map(|e| serde_json::to_value(e).map_err(|e| format!("cannot serialize the history: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome {
        status: status.to_owned(),
        output: result.output,
        error: result.error.as_ref().map(|f| f.error.clone()),
        cause: result.error.as_ref().map(|f| f.cause.clone()),
        // Real-time durations vary run to run; only virtual time is worth printing and checking.
        elapsed_seconds: virtual_time.then_some(result.elapsed.as_secs_f64()),
        history,
    })
}

/// The run options of an execution.
pub(crate) fn run_options(execution: &Execution<'_>) -> Result<RunOptions, String> {
    let options = if execution.virtual_time {
        RunOptions { clock: virtual_clock(execution.start_time.as_deref())?, ..RunOptions::virtual_time() }
    } else {
        RunOptions::real()
    };
    let mut options = options.with_seed(execution.seed).with_state_machine_name(execution.machine_name());
    if let Some((region, account)) = &execution.account {
        options = options.with_account(region.clone(), account.clone());
    }
    if let Some(root) = &execution.item_root {
        options = options.with_item_root(root.clone());
    }
    if let Some(root) = &execution.result_root {
        options = options.with_result_root(root.clone());
    }
    let options = options.with_history(execution.history_level).with_machine_type(execution.machine_type);
    Ok(match &execution.name {
        Some(name) => options.with_name(name.clone()),
        None => options,
    })
}

fn interp(execution: &Execution<'_>) -> Result<Outcome, String> {
    let handler = MockHandler::new(execution.mocks.clone());
    let callbacks = wfc_runtime::Callbacks::new();
    let bus = wfc_runtime::events::EventBus::new();
    let options = run_options(execution)?.with_callbacks(callbacks.clone()).with_events(bus.clone());
    let answers = match &execution.callbacks {
        Some(doc) => CallbackAnswers::from_json(doc).map_err(|e| format!("callbacks: {e}"))?,
        None => CallbackAnswers::default(),
    };
    let run = wfc_interp::run(execution.workflow, &handler, execution.input.clone(), options);
    let run = wfc_runtime::events::with_deliveries(&bus, execution.events.clone(), run);
    let run = answers.serve(&callbacks, run);
    let result = if execution.virtual_time {
        wfc_runtime::block_on_virtual(run)
    } else {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        runtime.block_on(run)
    };
    outcome_of(result, execution.virtual_time)
}
