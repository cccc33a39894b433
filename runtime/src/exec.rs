//! The per-state semantics, shared by generated code and the interpreter.
//!
//! CONTRACT: generated code (wfc-core codegen) and [`crate::interp`] call exactly these functions.
//! Each takes the state's IR spec and its raw input and returns the effective output (or where to
//! go). Control flow (the state enum, the loop, which handler method to call) belongs to the
//! caller; data processing, retries, waits, timeouts and history belong here.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::Instrument;
use wfc_ir::{
    ChoiceState, FailState, MapState, OutputPath, ParallelState, PassState, ResultPath, Seconds, StateId, SucceedState,
    TaskState, Template, WaitDuration, WaitState, Workflow,
};

#[cfg(feature = "durable")]
use crate::durable::Journal;
use crate::limits::Limits;
use crate::retry::{self, RetryDecision, RetryState};
use crate::task::Attempt;
use crate::{Clock, EventType, Failure, History, HistoryEvent, TaskContext, choice, io};

/// How to run an execution.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The clock: real time, or virtual time (see [`crate::block_on_virtual`]).
    pub clock: Clock,
    /// The execution name (`$$.Execution.Name`); a deterministic default when `None`.
    pub name: Option<String>,
    /// Seed for jitter and other randomness, so runs are reproducible.
    pub seed: u64,
    /// Payload, history and nesting limits; [`Limits::default`] is what AWS enforces.
    pub limits: Limits,
    /// Serverless Workflow events: consumed events are delivered here, produced ones collected.
    pub events: crate::events::EventBus,
    /// The durable journal (feature `durable`): completed operations replay from it and new
    /// ones are checkpointed to its store. `None`: nothing is persisted.
    #[cfg(feature = "durable")]
    pub journal: Option<Arc<Journal>>,
}

impl RunOptions {
    /// Real time, the default name, seed 0.
    pub fn real() -> RunOptions {
        RunOptions {
            clock: Clock::real(),
            name: None,
            seed: 0,
            limits: Limits::default(),
            events: crate::events::EventBus::new(),
            #[cfg(feature = "durable")]
            journal: None,
        }
    }

    /// Virtual time from 2024-01-01T00:00:00Z (run under [`crate::block_on_virtual`]), the
    /// default name, seed 0: fully deterministic.
    pub fn virtual_time() -> RunOptions {
        RunOptions {
            clock: Clock::virtual_default(),
            name: None,
            seed: 0,
            limits: Limits::default(),
            events: crate::events::EventBus::new(),
            #[cfg(feature = "durable")]
            journal: None,
        }
    }

    /// Sets the execution name.
    pub fn with_name(mut self, name: impl Into<String>) -> RunOptions {
        self.name = Some(name.into());
        self
    }

    /// Sets the random seed.
    pub fn with_seed(mut self, seed: u64) -> RunOptions {
        self.seed = seed;
        self
    }

    /// Sets the event bus (Serverless Workflow events in and out).
    pub fn with_events(mut self, events: crate::events::EventBus) -> RunOptions {
        self.events = events;
        self
    }

    /// Sets the payload, history and nesting limits.
    pub fn with_limits(mut self, limits: Limits) -> RunOptions {
        self.limits = limits;
        self
    }

    /// Runs durably on `journal` (from [`crate::durable::Journal::open`]): the execution takes the
    /// journal's name and original start time, replays what it recorded and checkpoints the rest.
    #[cfg(feature = "durable")]
    pub fn with_journal(mut self, journal: Arc<Journal>) -> RunOptions {
        self.name = Some(journal.name().to_owned());
        self.journal = Some(journal);
        self
    }
}

impl Default for RunOptions {
    /// [`RunOptions::real`].
    fn default() -> RunOptions {
        RunOptions::real()
    }
}

/// How an execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Reached a terminal state normally.
    Succeeded,
    /// Ended with an error.
    Failed,
    /// Exceeded the workflow's TimeoutSeconds.
    TimedOut,
}

/// The outcome of a whole execution.
#[derive(Debug, Clone)]
pub struct ExecutionResult {
    /// How it ended.
    pub status: Status,
    /// The output when it succeeded.
    pub output: Option<Value>,
    /// The error when it failed or timed out.
    pub error: Option<Failure>,
    /// Every history event, in order.
    pub history: Vec<HistoryEvent>,
    /// Time from start to end on the execution's clock (virtual time on a virtual clock).
    pub elapsed: Duration,
}

impl ExecutionResult {
    /// `Ok(output)` when it succeeded, else the failure.
    pub fn into_result(self) -> Result<Value, Failure> {
        match self.status {
            Status::Succeeded => Ok(self.output.unwrap_or(Value::Null)),
            Status::Failed | Status::TimedOut => {
                Err(self.error.unwrap_or_else(|| Failure::runtime("the execution ended without recording its error")))
            }
        }
    }
}

/// The account and region that identifiers are minted in: there is no AWS account locally.
const ARN_PREFIX: &str = "arn:aws:states:local:000000000000";

/// One running execution: its clock, history, context object and random source. Cheap to clone;
/// clones share state (Parallel branches record into the same history).
#[derive(Debug, Clone)]
pub struct Execution {
    shared: Arc<Shared>,
    /// The id of the last event recorded along this line of control, the `previousEventId` of
    /// the next. Clones share it; [`Execution::branch`] starts a new line for a Parallel branch.
    cursor: Arc<AtomicU64>,
    /// Where this line of control is, for deterministic durable operation ids.
    #[cfg(feature = "durable")]
    scope: Arc<Scope>,
}

/// A line of control's position for operation ids: its path (`""` at the top, `Par#1.0/2/` in
/// branch 2 of the first visit's first attempt of Parallel `Par`), how often each state was
/// visited on it, and how many branches were created from it.
#[cfg(feature = "durable")]
#[derive(Debug, Default)]
struct Scope {
    path: String,
    visits: Mutex<std::collections::HashMap<String, u32>>,
    branches: std::sync::atomic::AtomicU32,
}

#[derive(Debug)]
struct Shared {
    clock: Clock,
    history: History,
    workflow_name: String,
    name: String,
    id: String,
    state_machine_id: String,
    role_arn: String,
    input: Value,
    start_time: String,
    started_at: Instant,
    rng: Mutex<StdRng>,
    limits: Limits,
    events: crate::events::EventBus,
    /// Why the execution input was refused (too large or too deep), if it was.
    input_failure: Option<Failure>,
    #[cfg(feature = "durable")]
    journal: Option<Arc<Journal>>,
}

impl Execution {
    /// The execution's event bus (Serverless Workflow).
    pub fn events(&self) -> &crate::events::EventBus {
        &self.shared.events
    }

    /// Starts an execution of `workflow` on `input`, recording `ExecutionStarted`.
    pub fn start(workflow: &Workflow, input: &Value, options: RunOptions) -> Execution {
        let RunOptions {
            clock,
            name,
            seed,
            limits,
            events,
            #[cfg(feature = "durable")]
            journal,
        } = options;
        let started_at = Instant::now();
        let start_time = clock.now_rfc3339();
        // A resumed execution keeps the name and `$$.Execution.StartTime` of its first start.
        #[cfg(feature = "durable")]
        let (name, start_time) = match &journal {
            Some(j) => (Some(j.name().to_owned()), j.start_time().to_owned()),
            None => (name, start_time),
        };
        let name = name.unwrap_or_else(|| format!("{}-{seed:016x}", workflow.name));
        // Checked before the input is copied anywhere: cloning or serializing a document deeper
        // than the limit would recurse past the end of the stack. A refused input is kept as
        // `null`, and `finish` fails the execution before its first state.
        let input_failure = limits.check_payload(&name, input).err();
        let input = if input_failure.is_some() { &Value::Null } else { input };
        let shared = Shared {
            id: format!("{ARN_PREFIX}:execution:{}:{name}", workflow.name),
            state_machine_id: format!("{ARN_PREFIX}:stateMachine:{}", workflow.name),
            role_arn: "arn:aws:iam::000000000000:role/wfc-local".to_owned(),
            workflow_name: workflow.name.clone(),
            name,
            input: input.clone(),
            start_time,
            started_at,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            limits,
            events,
            input_failure,
            clock,
            history: History::new(),
            #[cfg(feature = "durable")]
            journal,
        };
        let exec = Execution {
            shared: Arc::new(shared),
            cursor: Arc::new(AtomicU64::new(0)),
            #[cfg(feature = "durable")]
            scope: Arc::new(Scope::default()),
        };
        exec.record(
            EventType::ExecutionStarted,
            json!({
                "input": input,
                "name": exec.shared.name,
                "roleArn": exec.shared.role_arn,
                "stateMachineArn": exec.shared.state_machine_id,
            }),
        );
        exec
    }

    /// Runs the machine future under the workflow's TimeoutSeconds, records the closing event
    /// (`ExecutionSucceeded`/`Failed`/`TimedOut`) and returns the result.
    pub async fn finish<F>(&self, timeout_seconds: Option<u64>, machine: F) -> ExecutionResult
    where
        F: Future<Output = Result<Value, Failure>>,
    {
        // A panic below the state functions (they already turn handler panics into failures)
        // would be a bug in generated code or here; it still ends the execution, not the process.
        // The execution input is a payload like any other: too large or too deep fails the
        // execution before its first state, as AWS rejects it at StartExecution.
        let input_ok = match &self.shared.input_failure {
            Some(failure) => Err(failure.clone()),
            None => Ok(()),
        };
        let guarded = AssertUnwindSafe(async move {
            input_ok?;
            machine.await
        })
        .catch_unwind();
        let outcome = match timeout_seconds {
            Some(secs) => tokio::time::timeout(Duration::from_secs(secs), guarded).await.ok(),
            None => Some(guarded.await),
        };
        let (status, output, error) = match outcome {
            None => {
                let secs = timeout_seconds.unwrap_or_default();
                let failure = Failure::new(
                    wfc_ir::errors::TIMEOUT,
                    format!("The execution did not finish within its TimeoutSeconds of {secs} s"),
                );
                self.record(EventType::ExecutionTimedOut, json!({ "error": failure.error, "cause": failure.cause }));
                (Status::TimedOut, None, Some(failure))
            }
            Some(Ok(Ok(output))) => {
                self.record(EventType::ExecutionSucceeded, json!({ "output": output }));
                (Status::Succeeded, Some(output), None)
            }
            Some(Ok(Err(failure))) => {
                self.record(EventType::ExecutionFailed, json!({ "error": failure.error, "cause": failure.cause }));
                (Status::Failed, None, Some(failure))
            }
            Some(Err(panic)) => {
                let message = crate::task::panic_failure(panic.as_ref()).cause;
                let failure = Failure::runtime(format!("the execution panicked: {message}"));
                self.record(EventType::ExecutionFailed, json!({ "error": failure.error, "cause": failure.cause }));
                (Status::Failed, None, Some(failure))
            }
        };
        #[allow(unused_mut)] // mutated only with feature `durable`
        let mut result = ExecutionResult {
            status,
            output,
            error,
            // The execution is over (its closing event is recorded), so the result takes the
            // events instead of copying them.
            history: self.history().take(),
            elapsed: Instant::now().saturating_duration_since(self.shared.started_at),
        };
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && let Err(e) = journal.complete(&result).await
        {
            // The outcome could not be made durable (another process owns the execution now):
            // reporting success would claim a result the store does not have.
            result.status = Status::Failed;
            result.output = None;
            result.error = Some(Failure::runtime(format!("the execution's end could not be checkpointed: {e}")));
        }
        result
    }

    /// The execution's clock.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// The execution's history.
    pub fn history(&self) -> &History {
        &self.shared.history
    }

    /// The limits this execution runs under.
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// `States.Runtime` once the history has reached its limit: called before each state and
    /// each retry, so no loop (a Choice back-edge, a Retry with a huge MaxAttempts) can grow
    /// the history, and the process's memory, without bound.
    pub fn check_history(&self) -> Result<(), Failure> {
        self.shared.limits.check_history(self.shared.history.len())
    }

    /// The execution's name (`$$.Execution.Name`).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The execution's id (`$$.Execution.Id`), an ARN-shaped identifier.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The workflow's name (`$$.StateMachine.Name`).
    pub fn workflow_name(&self) -> &str {
        &self.shared.workflow_name
    }

    /// The execution's original input (`$$.Execution.Input`).
    pub fn input(&self) -> &Value {
        &self.shared.input
    }

    /// The same execution on a new line of control, for one Parallel branch: it shares the
    /// clock, history and random source, but its events chain (`previousEventId`) on their own.
    pub fn branch(&self) -> Execution {
        let at = self.cursor.load(Ordering::SeqCst);
        Execution {
            shared: Arc::clone(&self.shared),
            cursor: Arc::new(AtomicU64::new(at)),
            // Branches are created in definition order by both engines, so the index is stable
            // across runs and so are the operation ids inside the branch.
            #[cfg(feature = "durable")]
            scope: Arc::new(Scope {
                path: format!("{}{}/", self.scope.path, self.scope.branches.fetch_add(1, Ordering::SeqCst)),
                ..Scope::default()
            }),
        }
    }

    /// Records an event now, chained to the previous event of this line of control, and
    /// returns its id.
    pub fn record(&self, event_type: EventType, details: Value) -> u64 {
        let previous = self.cursor.load(Ordering::SeqCst);
        let id = self.shared.history.record(event_type, details, self.shared.clock.now_rfc3339(), previous);
        self.cursor.store(id, Ordering::SeqCst);
        id
    }

    /// Runs `f` with the execution's seeded random source (retry jitter, `States.UUID`,
    /// unseeded `States.MathRandom`). The source is behind a lock, so `f` must not call
    /// `with_rng` again (it would deadlock); pass the `rng` it receives down instead.
    pub fn with_rng<R>(&self, f: impl FnOnce(&mut StdRng) -> R) -> R {
        let mut rng = self.shared.rng.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut rng)
    }

    /// The context object (`$$`) as seen by state `state_name`, entered at `entered_time`, on its
    /// `retry_count`-th retry.
    pub fn context_object(&self, state_name: &str, entered_time: &str, retry_count: u32) -> Value {
        json!({
            "Execution": {
                "Id": self.shared.id,
                "Input": self.shared.input,
                "Name": self.shared.name,
                "StartTime": self.shared.start_time,
                "RoleArn": self.shared.role_arn,
            },
            "State": {
                "Name": state_name,
                "EnteredTime": entered_time,
                "RetryCount": retry_count,
            },
            "StateMachine": {
                "Id": self.shared.state_machine_id,
                "Name": self.shared.workflow_name,
            },
        })
    }
}

/// Where a Task or Parallel state sends its output.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Follow the state's own transition (`Next` or `End`) with this effective output.
    Next(Value),
    /// A catcher matched: go to state `target` of the same machine with this output.
    Goto {
        /// The catcher's `Next`.
        target: StateId,
        /// The raw input with the Error Output placed at the catcher's ResultPath.
        output: Value,
    },
}

/// Which Choice rule matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Index into `Choices` of the first rule that matched; `None` means `Default`.
    pub branch: Option<usize>,
    /// The effective output (OutputPath applied).
    pub output: Value,
}

/// The longest Wait: a year, the longest a Standard execution may run. Longer is
/// `States.Runtime` "Wait state delay is too long." as on AWS.
pub const MAX_WAIT: Duration = Duration::from_secs(365 * 86_400);

/// One visit to a state: records Entered/Exited and builds the context object on demand.
struct Visit<'a> {
    exec: &'a Execution,
    name: &'a str,
    state_type: &'static str,
    entered_time: String,
    entered_id: u64,
    retry_count: u32,
}

impl<'a> Visit<'a> {
    fn enter(exec: &'a Execution, name: &'a str, state_type: &'static str, input: &Value) -> Visit<'a> {
        let entered_time = exec.clock().now_rfc3339();
        let entered_id = match EventType::entered(state_type) {
            Some(ty) => exec.record(ty, json!({ "name": name, "input": input })),
            None => 0,
        };
        tracing::debug!(state = name, r#type = state_type, "entered");
        Visit { exec, name, state_type, entered_time, entered_id, retry_count: 0 }
    }

    /// [`Visit::enter`] after checking the history limit, so every state entry is bounded.
    fn start(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
    ) -> Result<Visit<'a>, Failure> {
        exec.check_history()?;
        Ok(Visit::enter(exec, name, state_type, input))
    }

    /// [`Visit::exit`] after checking the output against the payload and depth limits. The
    /// next state's input is this output, so inputs need no second check.
    fn finish(&self, output: &Value) -> Result<(), Failure> {
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))?;
        self.exit(output);
        Ok(())
    }

    fn exit(&self, output: &Value) {
        if let Some(ty) = EventType::exited(self.state_type) {
            self.exec.record(ty, json!({ "name": self.name, "output": output }));
        }
    }

    fn context(&self) -> Value {
        self.exec.context_object(self.name, &self.entered_time, self.retry_count)
    }

    /// The context object if `needed`, else `null` (nothing will read it).
    fn context_if(&self, needed: bool) -> Value {
        if needed { self.context() } else { Value::Null }
    }

    /// Adds AWS's prefix to a `States.Runtime` failure raised by this state's own processing.
    fn runtime(&self, failure: Failure) -> Failure {
        if failure.error == wfc_ir::errors::RUNTIME {
            Failure {
                error: failure.error,
                cause: format!(
                    "An error occurred while executing the state '{}' (entered at the event id #{}). {}",
                    self.name, self.entered_id, failure.cause
                ),
            }
        } else {
            failure
        }
    }
}

fn state_span(name: &str, state_type: &'static str) -> tracing::Span {
    tracing::info_span!("state", name = name, r#type = state_type)
}

/// A Pass state.
pub async fn pass(exec: &Execution, name: &str, spec: &PassState, input: Value) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start(exec, name, "Pass", &input)?;
        let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
            || spec.parameters.as_ref().is_some_and(io::uses_context);
        let ctx = visit.context_if(needs_ctx);
        let output = exec.with_rng(|rng| pass_io(spec, input, &ctx, rng)).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}

fn pass_io(spec: &PassState, input: Value, ctx: &Value, rng: &mut StdRng) -> Result<Value, Failure> {
    let replaces_input = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    let output = match (&spec.result, &spec.parameters) {
        (Some(result), _) => io::result_path(&spec.result_path, input, result.clone())?,
        // The common `{"Type": "Pass"}`: the raw input is not needed afterwards, so it moves
        // through InputPath without a copy.
        (None, None) if replaces_input => io::input_path_owned(&spec.input_path, input, ctx)?,
        (None, parameters) => {
            let result = {
                let effective = io::input_path(&spec.input_path, &input, ctx)?;
                match parameters {
                    Some(template) => io::template(template, &effective, ctx, rng)?,
                    None => effective.into_owned(),
                }
            };
            io::result_path(&spec.result_path, input, result)?
        }
    };
    io::output_path(&spec.output_path, output, ctx)
}

/// Reads a TimeoutSeconds/HeartbeatSeconds value: a literal, or a path that must select a
/// positive integer.
fn resolve_seconds(
    seconds: &Option<Seconds>,
    field: &str,
    input: &Value,
    ctx: &Value,
) -> Result<Option<Duration>, Failure> {
    match seconds {
        None => Ok(None),
        Some(Seconds::Fixed(s)) => Ok(Some(Duration::from_secs(*s))),
        Some(Seconds::Path(p)) => {
            let Some(value) = io::select_opt(p, input, ctx) else {
                let doc = if p.root() == wfc_ir::Root::Context { ctx } else { input };
                return Err(Failure::runtime(io::invalid_path_message(p, doc)));
            };
            match value.as_u64() {
                Some(s) if s > 0 => Ok(Some(Duration::from_secs(s))),
                _ => Err(Failure::runtime(format!(
                    "The {field} field refers to value {value} which is not a valid positive integer: {}",
                    p.as_str()
                ))),
            }
        }
    }
}

fn seconds_json(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs()))
}

/// A Task state: input processing, the handler call under TimeoutSeconds/HeartbeatSeconds with
/// panics caught, Retry, ResultSelector/ResultPath/OutputPath, and Catch.
///
/// `invoke` is called once per attempt with the effective input (after Parameters).
pub async fn task<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &TaskState,
    input: Value,
    invoke: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, TaskContext) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let mut guard = AbortGuard { exec, name, event: EventType::TaskStateAborted, armed: true };
    let outcome = task_inner(exec, name, spec, input, invoke).instrument(state_span(name, "Task")).await;
    guard.armed = false;
    outcome
}

/// Records `<Type>StateAborted` when a running state's future is dropped before it finishes:
/// a sibling Parallel branch failed, or the execution timed out.
struct AbortGuard<'a> {
    exec: &'a Execution,
    name: &'a str,
    event: EventType,
    armed: bool,
}

impl Drop for AbortGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.exec.record(self.event, json!({ "name": self.name }));
        }
    }
}

async fn task_inner<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &TaskState,
    input: Value,
    mut invoke: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, TaskContext) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let mut visit = Visit::start(exec, name, "Task", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()]);
    let ctx = visit.context_if(io_ctx);
    let effective = io::input_path(&spec.input_path, &input, &ctx).map_err(|f| visit.runtime(f))?.into_owned();
    let timeout =
        resolve_seconds(&spec.timeout, "TimeoutSecondsPath", &effective, &ctx).map_err(|f| visit.runtime(f))?;
    let heartbeat =
        resolve_seconds(&spec.heartbeat, "HeartbeatSecondsPath", &effective, &ctx).map_err(|f| visit.runtime(f))?;
    let parameters = Parameters::new(spec.parameters.as_ref(), &effective, exec).map_err(|f| visit.runtime(f))?;
    let mut retries = RetryState::new(&spec.retry);
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        let params = parameters.for_attempt(&effective, &visit).map_err(|f| visit.runtime(f))?;
        // AWS limits the request a task is sent as it limits results.
        exec.limits().check_payload(name, &params).map_err(|f| visit.runtime(f))?;
        exec.record(
            EventType::TaskScheduled,
            json!({
                "resource": spec.resource,
                "parameters": params,
                "timeoutInSeconds": seconds_json(timeout),
                "heartbeatInSeconds": seconds_json(heartbeat),
            }),
        );
        let task_ctx = TaskContext::new(name, spec.resource.as_str(), visit.retry_count, exec.name());
        exec.record(EventType::TaskStarted, json!({ "resource": spec.resource }));
        let call_ctx = task_ctx.clone();
        let attempt = crate::task::run_attempt(|| invoke(params, call_ctx), &task_ctx, timeout, heartbeat);
        let outcome =
            exec.journaled_attempt(name, visit_no, visit.retry_count, attempt).await.map_err(|f| visit.runtime(f))?;
        let failure = match outcome {
            Attempt::Succeeded(result) => {
                // Checked before the result is recorded or processed: a result that is too
                // large or too deep is terminal, and AWS names the resource that returned it.
                exec.limits().check_payload(spec.resource.as_str(), &result).map_err(|f| visit.runtime(f))?;
                exec.record(EventType::TaskSucceeded, json!({ "resource": spec.resource, "output": result }));
                let output = finish_result(
                    &visit,
                    &spec.result_selector,
                    &spec.result_path,
                    &spec.output_path,
                    input,
                    result,
                    io_ctx,
                )
                .map_err(|f| visit.runtime(f))?;
                visit.finish(&output)?;
                return Ok(Step::Next(output));
            }
            Attempt::Failed(f) => {
                exec.record(
                    EventType::TaskFailed,
                    json!({ "resource": spec.resource, "error": f.error, "cause": f.cause }),
                );
                f
            }
            Attempt::TimedOut(f) => {
                exec.record(
                    EventType::TaskTimedOut,
                    json!({ "resource": spec.resource, "error": f.error, "cause": f.cause }),
                );
                f
            }
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, &spec.retry, failure).await? {
            return caught(&visit, &spec.catch, input, failure);
        }
    }
}

/// Parameters for each attempt: evaluated once when the template cannot change between
/// attempts, or per attempt when it reads `$$` (for `$$.State.RetryCount`).
enum Parameters<'t> {
    /// No Parameters: the effective input itself.
    None,
    /// Evaluated once.
    Fixed(Value),
    /// Reads the context object: evaluated per attempt.
    PerAttempt(&'t Template),
}

impl<'t> Parameters<'t> {
    fn new(template: Option<&'t Template>, effective: &Value, exec: &Execution) -> Result<Parameters<'t>, Failure> {
        Ok(match template {
            None => Parameters::None,
            // A random intrinsic (States.UUID) gives each attempt a fresh value, as `$$` does.
            Some(t) if io::uses_context(t) || io::uses_randomness(t) => Parameters::PerAttempt(t),
            Some(t) => Parameters::Fixed(exec.with_rng(|rng| io::template(t, effective, &Value::Null, rng))?),
        })
    }

    fn for_attempt(&self, effective: &Value, visit: &Visit<'_>) -> Result<Value, Failure> {
        match self {
            Parameters::None => Ok(effective.clone()),
            Parameters::Fixed(v) => Ok(v.clone()),
            Parameters::PerAttempt(t) => {
                let ctx = visit.context_if(io::uses_context(t));
                visit.exec.with_rng(|rng| io::template(t, effective, &ctx, rng))
            }
        }
    }
}

/// ResultSelector (on the raw result), ResultPath (into the raw input), OutputPath.
fn finish_result(
    visit: &Visit<'_>,
    selector: &Option<Template>,
    result_path: &ResultPath,
    output_path: &OutputPath,
    raw_input: Value,
    result: Value,
    io_ctx: bool,
) -> Result<Value, Failure> {
    let needs_ctx = io_ctx || selector.as_ref().is_some_and(io::uses_context);
    let ctx = visit.context_if(needs_ctx);
    let result = match selector {
        Some(t) => visit.exec.with_rng(|rng| io::template(t, &result, &ctx, rng))?,
        None => result,
    };
    let output = io::result_path(result_path, raw_input, result)?;
    io::output_path(output_path, output, &ctx)
}

impl Visit<'_> {
    /// After a failed attempt of a Task, Parallel or Map: when a retrier matches, waits out its
    /// back-off on the execution's clock and returns `None` (run the attempt again); otherwise
    /// hands the failure back for [`caught`].
    async fn retry_after(
        &self,
        visit_no: u32,
        retries: &mut RetryState,
        retriers: &[wfc_ir::Retrier],
        failure: Failure,
    ) -> Result<Option<Failure>, Failure> {
        match self.exec.with_rng(|rng| retries.decide(retriers, &failure.error, rng)) {
            RetryDecision::Retry { delay, .. } => {
                self.exec
                    .backoff(self.name, visit_no, retries.retry_count(), delay)
                    .await
                    .map_err(|f| self.runtime(f))?;
                Ok(None)
            }
            RetryDecision::GiveUp => Ok(Some(failure)),
        }
    }
}

/// After retries are exhausted: the first matching catcher, or the failure itself.
fn caught(
    visit: &Visit<'_>,
    catchers: &[wfc_ir::Catcher],
    raw_input: Value,
    failure: Failure,
) -> Result<Step, Failure> {
    let Some(catcher) = retry::find_catcher(catchers, &failure.error) else {
        return Err(failure);
    };
    let output = retry::catch_output(catcher, raw_input, &failure).map_err(|f| visit.runtime(f))?;
    visit.finish(&output)?;
    Ok(Step::Goto { target: catcher.next, output })
}

/// A Choice state. No match and no Default is `States.NoChoiceMatched`.
pub fn choice(exec: &Execution, name: &str, spec: &ChoiceState, input: Value) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        let visit = Visit::start(exec, name, "Choice", &input)?;
        let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
            || spec.choices.iter().any(|c| choice::uses_context(&c.condition));
        let ctx = visit.context_if(needs_ctx);
        let effective = io::input_path_owned(&spec.input_path, input, &ctx).map_err(|f| visit.runtime(f))?;
        let mut branch = None;
        for (i, rule) in spec.choices.iter().enumerate() {
            if choice::evaluate(&rule.condition, &effective, &ctx).map_err(|f| visit.runtime(f))? {
                branch = Some(i);
                break;
            }
        }
        if branch.is_none() && spec.default.is_none() {
            return Err(Failure::new(
                wfc_ir::errors::NO_CHOICE_MATCHED,
                format!("No Choice rule matched the input of state '{name}', and it has no Default"),
            ));
        }
        let output = io::output_path(&spec.output_path, effective, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(Chosen { branch, output })
    })
}

/// The value of a path as AWS prints it after `==` in Wait messages: strings bare, the rest JSON.
fn bare(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// How long a Wait waits, with AWS's messages for bad values.
fn wait_delay(exec: &Execution, duration: &WaitDuration, input: &Value, ctx: &Value) -> Result<Duration, Failure> {
    let delay = match duration {
        WaitDuration::Seconds(s) => Duration::from_secs(*s),
        WaitDuration::Timestamp(text) => match wfc_ir::timestamp::parse(text) {
            Ok(ts) => exec.clock().until(ts),
            Err(_) => {
                return Err(Failure::runtime(format!(
                    "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {text}"
                )));
            }
        },
        WaitDuration::SecondsPath(p) => {
            let Some(value) = io::select_opt(p, input, ctx) else {
                return Err(Failure::runtime(format!(
                    "The SecondsPath parameter does not reference an input value: {}",
                    p.as_str()
                )));
            };
            match (value.as_u64(), value.as_i64()) {
                (Some(s), _) => Duration::from_secs(s),
                (None, Some(_)) => {
                    return Err(Failure::runtime(format!(
                        "The SecondsPath parameter references a negative value: {} == {}",
                        p.as_str(),
                        bare(&value)
                    )));
                }
                (None, None) => {
                    return Err(Failure::runtime(format!(
                        "The SecondsPath parameter cannot be parsed as a long value: {} == {}",
                        p.as_str(),
                        bare(&value)
                    )));
                }
            }
        }
        WaitDuration::TimestampPath(p) => {
            let Some(value) = io::select_opt(p, input, ctx) else {
                return Err(Failure::runtime(format!(
                    "The TimestampPath parameter does not reference an input value: {}",
                    p.as_str()
                )));
            };
            match value.as_str().map(wfc_ir::timestamp::parse) {
                Some(Ok(ts)) => exec.clock().until(ts),
                _ => {
                    return Err(Failure::runtime(format!(
                        "The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: {} == {}",
                        p.as_str(),
                        bare(&value)
                    )));
                }
            }
        }
    };
    if delay > MAX_WAIT {
        return Err(Failure::runtime("Wait state delay is too long."));
    }
    Ok(delay)
}

/// A Wait state, on the execution's clock.
pub async fn wait(exec: &Execution, name: &str, spec: &WaitState, input: Value) -> Result<Value, Failure> {
    let mut guard = AbortGuard { exec, name, event: EventType::WaitStateAborted, armed: true };
    let outcome = wait_inner(exec, name, spec, input).instrument(state_span(name, "Wait")).await;
    guard.armed = false;
    outcome
}

async fn wait_inner(exec: &Execution, name: &str, spec: &WaitState, input: Value) -> Result<Value, Failure> {
    let visit = Visit::start(exec, name, "Wait", &input)?;
    let visit_no = exec.next_visit(name);
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || matches!(&spec.duration, WaitDuration::SecondsPath(p) | WaitDuration::TimestampPath(p) if p.root() == wfc_ir::Root::Context);
    let ctx = visit.context_if(needs_ctx);
    let effective = io::input_path_owned(&spec.input_path, input, &ctx).map_err(|f| visit.runtime(f))?;
    let delay = wait_delay(exec, &spec.duration, &effective, &ctx).map_err(|f| visit.runtime(f))?;
    exec.durable_wait(name, visit_no, delay).await.map_err(|f| visit.runtime(f))?;
    let output = io::output_path(&spec.output_path, effective, &ctx).map_err(|f| visit.runtime(f))?;
    visit.finish(&output)?;
    Ok(output)
}

/// A Succeed state.
pub fn succeed(exec: &Execution, name: &str, spec: &SucceedState, input: Value) -> Result<Value, Failure> {
    state_span(name, "Succeed").in_scope(|| {
        let visit = Visit::start(exec, name, "Succeed", &input)?;
        let ctx = visit.context_if(io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()]));
        let output = io::input_path_owned(&spec.input_path, input, &ctx)
            .and_then(|effective| io::output_path(&spec.output_path, effective, &ctx))
            .map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}

/// A Fail state: the failure that ends the machine (or is caught by an enclosing Parallel's Catch).
pub fn fail(exec: &Execution, name: &str, spec: &FailState, input: Value) -> Failure {
    state_span(name, "Fail").in_scope(|| {
        if let Err(f) = exec.check_history() {
            return f;
        }
        let visit = Visit::enter(exec, name, "Fail", &input);
        let ctx = visit.context_if(io::paths_use_context([spec.error_path.as_ref(), spec.cause_path.as_ref()]));
        let read = |literal: &Option<String>, path: &Option<wfc_ir::Path>, field: &str| -> Result<String, Failure> {
            match path {
                Some(p) => match io::select_field(p, field, &input, &ctx)? {
                    Value::String(s) => Ok(s),
                    other => Err(Failure::runtime(format!(
                        "The {field} '{}' must select a string, but it selected {other}",
                        p.as_str()
                    ))),
                },
                // AWS leaves an absent Error/Cause out of the event; the Error Output uses "".
                None => Ok(literal.clone().unwrap_or_default()),
            }
        };
        let error = read(&spec.error, &spec.error_path, "ErrorPath");
        let cause = read(&spec.cause, &spec.cause_path, "CausePath");
        match (error, cause) {
            (Ok(error), Ok(cause)) => Failure { error, cause },
            (Err(f), _) | (_, Err(f)) => visit.runtime(f),
        }
    })
}

/// A Parallel state. `run_branches` is called once per attempt with the effective input and must
/// run every branch on it concurrently (see [`join_branches`]) and return their outputs in order.
pub async fn parallel<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &ParallelState,
    input: Value,
    run_branches: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    let mut guard = AbortGuard { exec, name, event: EventType::ParallelStateAborted, armed: true };
    let outcome = parallel_inner(exec, name, spec, input, run_branches).instrument(state_span(name, "Parallel")).await;
    guard.armed = false;
    outcome
}

async fn parallel_inner<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &ParallelState,
    input: Value,
    mut run_branches: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    let mut visit = Visit::start(exec, name, "Parallel", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()]);
    let ctx = visit.context_if(io_ctx);
    let effective = io::input_path(&spec.input_path, &input, &ctx).map_err(|f| visit.runtime(f))?.into_owned();
    let parameters = Parameters::new(spec.parameters.as_ref(), &effective, exec).map_err(|f| visit.runtime(f))?;
    let mut retries = RetryState::new(&spec.retry);
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        let branch_input = parameters.for_attempt(&effective, &visit).map_err(|f| visit.runtime(f))?;
        exec.record(EventType::ParallelStateStarted, json!({ "name": name }));
        let branches_exec = exec.parallel_scope(name, visit_no, visit.retry_count);
        let failure = match run_branches(branch_input, branches_exec).await {
            Ok(outputs) => {
                exec.record(EventType::ParallelStateSucceeded, json!({ "name": name }));
                let result = Value::Array(outputs);
                let output = finish_result(
                    &visit,
                    &spec.result_selector,
                    &spec.result_path,
                    &spec.output_path,
                    input,
                    result,
                    io_ctx,
                )
                .map_err(|f| visit.runtime(f))?;
                visit.finish(&output)?;
                return Ok(Step::Next(output));
            }
            Err(f) => {
                exec.record(
                    EventType::ParallelStateFailed,
                    json!({ "name": name, "error": f.error, "cause": f.cause }),
                );
                f
            }
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, &spec.retry, failure).await? {
            return caught(&visit, &spec.catch, input, failure);
        }
    }
}

/// Runs branch futures concurrently; the first failure cancels (drops) the others and is returned
/// with its own error name, as AWS does.
pub async fn join_branches<'a>(
    branches: Vec<futures::future::BoxFuture<'a, Result<Value, Failure>>>,
) -> Result<Vec<Value>, Failure> {
    futures::future::try_join_all(branches).await
}

/// An inline Map state. `run_iteration` is called once per item per attempt with the item's
/// input (after `ItemSelector`) and the iteration's own line of control, and must run the item
/// processor on it; [`crate::map::run_iterations`] bounds the concurrency, records the iteration
/// events and keeps the results in item order. A Retry re-runs every iteration.
pub async fn map<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &MapState,
    input: Value,
    run_iteration: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let mut guard = AbortGuard { exec, name, event: EventType::MapStateAborted, armed: true };
    let outcome = map_inner(exec, name, spec, input, run_iteration).instrument(state_span(name, "Map")).await;
    guard.armed = false;
    outcome
}

async fn map_inner<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &MapState,
    input: Value,
    mut run_iteration: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let mut visit = Visit::start(exec, name, "Map", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref(), Some(&spec.items_path)]);
    let ctx = visit.context_if(io_ctx);
    let effective = io::input_path(&spec.input_path, &input, &ctx).map_err(|f| visit.runtime(f))?.into_owned();
    let selector_ctx = spec.item_selector.as_ref().is_some_and(io::uses_context);
    let mut retries = RetryState::new(&spec.retry);
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        // Per attempt: the context object (and so `$$.State.RetryCount` in ItemSelector) changes.
        let state_ctx = visit.context_if(io_ctx || selector_ctx);
        let items = crate::map::items(&spec.items_path, &effective, &state_ctx).map_err(|f| visit.runtime(f))?;
        let length = items.len();
        let inputs = exec
            .with_rng(|rng| {
                crate::map::iteration_inputs(spec.item_selector.as_ref(), &effective, items, &state_ctx, rng)
            })
            .map_err(|f| visit.runtime(f))?;
        exec.record(EventType::MapStateStarted, json!({ "name": name, "length": length }));
        let iterations_exec = exec.parallel_scope(name, visit_no, visit.retry_count);
        let outcome =
            crate::map::run_iterations(&iterations_exec, name, inputs, spec.max_concurrency, &mut run_iteration).await;
        let failure = match outcome {
            Ok(outputs) => {
                exec.record(EventType::MapStateSucceeded, json!({ "name": name }));
                let output = finish_result(
                    &visit,
                    &spec.result_selector,
                    &spec.result_path,
                    &spec.output_path,
                    input,
                    Value::Array(outputs),
                    io_ctx,
                )
                .map_err(|f| visit.runtime(f))?;
                visit.finish(&output)?;
                return Ok(Step::Next(output));
            }
            Err(f) => {
                exec.record(EventType::MapStateFailed, json!({ "name": name, "error": f.error, "cause": f.cause }));
                f
            }
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, &spec.retry, failure).await? {
            return caught(&visit, &spec.catch, input, failure);
        }
    }
}

/// The journal hooks: each runs the plain behaviour when the execution has no journal (or the
/// crate is built without feature `durable`), and the replay rules of [`crate::durable`] when it
/// has one.
impl Execution {
    /// The durable journal, if this execution has one.
    #[cfg(feature = "durable")]
    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.shared.journal.as_ref()
    }

    /// Counts a visit to state `name` on this line of control and returns its 1-based number
    /// (0 without a journal: nothing needs it, so nothing is counted).
    fn next_visit(&self, name: &str) -> u32 {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            let mut visits = self.scope.visits.lock().unwrap_or_else(|p| p.into_inner());
            let n = visits.entry(name.to_owned()).or_insert(0);
            *n += 1;
            return *n;
        }
        let _ = name;
        0
    }

    /// The deterministic operation id of `name`'s `visit_no`-th visit on this line of control.
    #[cfg(feature = "durable")]
    fn op_id(&self, name: &str, visit_no: u32, suffix: &str) -> String {
        format!("{}{name}#{visit_no}{suffix}", self.scope.path)
    }

    /// One Task attempt: replayed from the journal when recorded, else run (and checkpointed).
    async fn journaled_attempt<Fut>(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        run: Fut,
    ) -> Result<Attempt, Failure>
    where
        Fut: Future<Output = Attempt>,
    {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            return journal.step(self.op_id(name, visit_no, &format!(".{attempt_no}")), name, run).await;
        }
        let _ = (name, visit_no, attempt_no);
        Ok(run.await)
    }

    /// The back-off before retry `retry_no`, as a durable timer.
    async fn backoff(&self, name: &str, visit_no: u32, retry_no: u32, delay: Duration) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".retry{retry_no}"));
            return journal.sleep(self.clock(), id, name, "Retry", delay).await;
        }
        let _ = (name, visit_no, retry_no);
        self.clock().sleep(delay).await;
        Ok(())
    }

    /// A Wait state's delay, as a durable timer.
    async fn durable_wait(&self, name: &str, visit_no: u32, delay: Duration) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            return journal.sleep(self.clock(), self.op_id(name, visit_no, ""), name, "Wait", delay).await;
        }
        let _ = (name, visit_no);
        self.clock().sleep(delay).await;
        Ok(())
    }

    /// The execution handed to a Parallel attempt's branches: the same line of control, in a
    /// scope named after the attempt, so each [`Execution::branch`] gets a stable path.
    fn parallel_scope(&self, name: &str, visit_no: u32, attempt_no: u32) -> Execution {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            return Execution {
                shared: Arc::clone(&self.shared),
                cursor: Arc::clone(&self.cursor),
                scope: Arc::new(Scope {
                    path: self.op_id(name, visit_no, &format!(".{attempt_no}/")),
                    ..Scope::default()
                }),
            };
        }
        let _ = (name, visit_no, attempt_no);
        self.clone()
    }
}
