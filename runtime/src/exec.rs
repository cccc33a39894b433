//! The per-state semantics, shared by generated code and the interpreter.
//!
//! CONTRACT: generated code (wfc-core codegen) and [`crate::interp`] call exactly these functions.
//! Each takes the state's IR spec and its raw input and returns the effective output (or where to
//! go). Control flow (the state enum, the loop, which handler method to call) belongs to the
//! caller; data processing, retries, waits, timeouts and history belong here.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::Instrument;
use wfc_ir::{
    Assign, ChoiceState, ComputedString, FailState, InputPath, JsonataTemplate, MapState, OutputPath, ParallelState,
    PassState, ResultPath, Seconds, StateId, SucceedState, TaskState, Template, WaitDuration, WaitState,
};

#[cfg(feature = "durable")]
use crate::durable::Journal;
use crate::jsonata::{self, Bindings};
use crate::limits::Limits;
use crate::retry::{self, RetryDecision, RetryState};
use crate::task::Attempt;
use crate::variables::{self, Variables};
use crate::{Clock, Details, EventType, Failure, History, HistoryEvent, HistoryLevel, TaskContext, choice, io};

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
    /// How much history to keep: every event ([`HistoryLevel::Full`], the default) or none
    /// ([`HistoryLevel::Express`], as AWS Express workflows). Outputs and errors are the same.
    pub history: HistoryLevel,
    /// Serverless Workflow events: consumed events are delivered here, produced ones collected.
    pub events: crate::events::EventBus,
    /// The durable journal (feature `durable`): completed operations replay from it and new
    /// ones are checkpointed to its store. `None`: nothing is persisted.
    #[cfg(feature = "durable")]
    pub journal: Option<Arc<Journal>>,
    /// The in-memory handle that completes `.waitForTaskToken` tasks (SendTaskSuccess, ...);
    /// `None`: a private one (only a durable store can then complete them).
    pub callbacks: Option<crate::Callbacks>,
    /// Where a DISTRIBUTED Map's `ItemReader` reads and its `ResultWriter` writes
    /// ([`crate::distributed`]): local directories unless another store is plugged in.
    pub objects: crate::distributed::Objects,
    /// Who starts the execution: a direct start, or the scheduler (Serverless Workflow
    /// `directInvoke: deny` admits only the latter; see [`crate::schedule`]).
    pub started_by: crate::schedule::StartedBy,
    /// The state machine's type and how the execution was started: what `$$.Execution.Id`
    /// looks like and whether `$$.Execution.RedriveCount` exists (see [`MachineType`]).
    pub machine_type: MachineType,
    /// The state machine's name in ARNs and `$$.StateMachine.Name`; `None`: the workflow's
    /// name. A run-time parameter, so one compiled module serves every name it is run under.
    pub state_machine_name: Option<String>,
    /// The region and account that ARNs are minted in; `None`: [`DEFAULT_REGION`] and
    /// [`DEFAULT_ACCOUNT`] (there is no AWS account locally).
    pub account: Option<(String, String)>,
    /// How a service names the execution ([`Identity`]); `None`: from the fields above (and a
    /// journaled execution's name is its store name).
    pub identity: Option<Identity>,
    /// Fields laid over every context object (`$$`) the execution builds
    /// ([`crate::io::overlay_context`]): `wfc serve`'s TestState `context`.
    pub context_overlay: Option<Value>,
}

/// The identity a service gives an execution (`wfc serve`: its Step Functions name and ARNs),
/// which `$$.Execution.Name`/`Id`/`RoleArn`, `$$.StateMachine.Id`/`Name` and the history show.
/// It wins over the other naming options, and over a journaled execution's store name (which
/// command handlers still see as `WFC_EXECUTION_NAME`, [`TaskContext::execution_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The execution's name (`$$.Execution.Name`).
    pub name: String,
    /// The state machine's name in ARNs and `$$.StateMachine.Name`.
    pub state_machine: String,
    /// The region of the ARNs.
    pub region: String,
    /// The account of the ARNs.
    pub account: String,
    /// `$$.Execution.RoleArn`; `None`: the local default role of the account.
    pub role_arn: Option<String>,
}

/// The uuid at the end of an EXPRESS execution's ARN (`...:express:MACHINE:NAME:UUID`) for a
/// run with `seed`: a service that names the execution to its caller (`wfc serve`'s
/// StartSyncExecution) gives the same ARN as the execution sees in `$$.Execution.Id`.
pub fn express_execution_uuid(seed: u64) -> String {
    let mut bytes = [0u8; 16];
    StdRng::seed_from_u64(seed ^ 0x6578_7072_6573_7321).fill_bytes(&mut bytes);
    crate::intrinsics::uuid_v4(bytes)
}

/// A state machine's type, as AWS distinguishes them in what an execution sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MachineType {
    /// `STANDARD` (the default): execution ARN `...:execution:MACHINE:NAME`, and
    /// `$$.Execution.RedriveCount` (0: wfc never redrives).
    #[default]
    Standard,
    /// `EXPRESS` started asynchronously (`StartExecution`): execution ARN
    /// `...:express:MACHINE:NAME:UUID`, with `RedriveCount` 0, as recorded.
    Express,
    /// `EXPRESS` started with `StartSyncExecution`: the express ARN, and no `RedriveCount` in
    /// the context object (recorded).
    ExpressSync,
}

impl MachineType {
    /// The name [`MachineType::from_str`](std::str::FromStr) reads back.
    pub fn name(self) -> &'static str {
        match self {
            MachineType::Standard => "standard",
            MachineType::Express => "express",
            MachineType::ExpressSync => "express-sync",
        }
    }
}

impl std::str::FromStr for MachineType {
    type Err = String;

    /// `standard`, `express` or `express-sync` (any case; `_` for `-`).
    fn from_str(s: &str) -> Result<MachineType, String> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "standard" => Ok(MachineType::Standard),
            "express" => Ok(MachineType::Express),
            "express-sync" => Ok(MachineType::ExpressSync),
            _ => Err(format!("unknown state machine type `{s}` (standard, express, express-sync)")),
        }
    }
}

impl RunOptions {
    /// Real time, the default name, seed 0.
    pub fn real() -> RunOptions {
        RunOptions {
            clock: Clock::real(),
            name: None,
            seed: 0,
            limits: Limits::default(),
            history: HistoryLevel::Full,
            events: crate::events::EventBus::new(),
            #[cfg(feature = "durable")]
            journal: None,
            callbacks: None,
            objects: crate::distributed::Objects::default(),
            started_by: crate::schedule::StartedBy::Direct,
            machine_type: MachineType::Standard,
            state_machine_name: None,
            account: None,
            identity: None,
            context_overlay: None,
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
            history: HistoryLevel::Full,
            events: crate::events::EventBus::new(),
            #[cfg(feature = "durable")]
            journal: None,
            callbacks: None,
            objects: crate::distributed::Objects::default(),
            started_by: crate::schedule::StartedBy::Direct,
            machine_type: MachineType::Standard,
            state_machine_name: None,
            account: None,
            identity: None,
            context_overlay: None,
        }
    }

    /// Sets the identity a service gives the execution ([`Identity`]).
    pub fn with_identity(mut self, identity: Identity) -> RunOptions {
        self.identity = Some(identity);
        self
    }

    /// Sets who starts the execution (the scheduler passes [`crate::schedule::StartedBy::Scheduler`]).
    pub fn with_started_by(mut self, started_by: crate::schedule::StartedBy) -> RunOptions {
        self.started_by = started_by;
        self
    }

    /// Sets the state machine type ([`MachineType`]).
    pub fn with_machine_type(mut self, machine_type: MachineType) -> RunOptions {
        self.machine_type = machine_type;
        self
    }

    /// Sets the state machine's name (ARNs, `$$.StateMachine.Name`) instead of the workflow's.
    pub fn with_state_machine_name(mut self, name: impl Into<String>) -> RunOptions {
        self.state_machine_name = Some(name.into());
        self
    }

    /// Mints ARNs in `region` and `account` (`arn:aws:states:<region>:<account>:...`).
    pub fn with_account(mut self, region: impl Into<String>, account: impl Into<String>) -> RunOptions {
        self.account = Some((region.into(), account.into()));
        self
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

    /// Completes this execution's `.waitForTaskToken` tasks through `callbacks`.
    pub fn with_callbacks(mut self, callbacks: crate::Callbacks) -> RunOptions {
        self.callbacks = Some(callbacks);
        self
    }

    /// Reads a DISTRIBUTED Map's `ItemReader` objects from `<root>/<Bucket>/<Key>`.
    pub fn with_item_root(mut self, root: impl Into<std::path::PathBuf>) -> RunOptions {
        self.objects.item_root = Some(root.into());
        self
    }

    /// Writes a DISTRIBUTED Map's `ResultWriter` files under `<root>/<Bucket>/<Prefix>/`.
    pub fn with_result_root(mut self, root: impl Into<std::path::PathBuf>) -> RunOptions {
        self.objects.result_root = Some(root.into());
        self
    }

    /// Reads and writes a DISTRIBUTED Map's objects through `store` (an S3 client, say)
    /// instead of local directories.
    pub fn with_object_store(mut self, store: Arc<dyn crate::distributed::ObjectStore>) -> RunOptions {
        self.objects.store = Some(store);
        self
    }

    /// Sets how much history the execution keeps.
    pub fn with_history(mut self, level: HistoryLevel) -> RunOptions {
        self.history = level;
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
    /// The error when it failed (`None` when it timed out: AWS records no error or cause then).
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
            Status::Failed => {
                Err(self.error.unwrap_or_else(|| Failure::runtime("the execution ended without recording its error")))
            }
            // AWS gives a timed-out execution no error; to a Rust caller it is `States.Timeout`.
            Status::TimedOut => Err(self.error.unwrap_or_else(|| Failure::new(wfc_ir::errors::TIMEOUT, ""))),
        }
    }
}

/// The region that identifiers are minted in by default: there is no AWS region locally.
pub const DEFAULT_REGION: &str = "local";
/// The account that identifiers are minted in by default: there is no AWS account locally.
pub const DEFAULT_ACCOUNT: &str = "000000000000";

/// One running execution: its clock, history, context object and random source. Cheap to clone;
/// clones share state (Parallel branches record into the same history).
#[derive(Debug, Clone)]
pub struct Execution {
    shared: Arc<Shared>,
    /// The id of the last event recorded along this line of control, the `previousEventId` of
    /// the next. Clones share it; [`Execution::branch`] starts a new line for a Parallel branch.
    cursor: Arc<Line>,
    /// The variables scope of this line of control: the top level, or a Parallel branch's or
    /// Map iteration's own scope (see [`crate::variables`]).
    variables: Arc<Variables>,
    /// Whether this line of control runs in a Parallel branch (directly, not inside a Map
    /// iteration of it): a Task failing there records `TaskStateAborted`, as AWS does.
    in_parallel_branch: bool,
    /// Where this line of control is, for deterministic durable operation ids.
    #[cfg(feature = "durable")]
    scope: Arc<Scope>,
}

/// What the states of one line of control (the top level, a Parallel branch, a Map iteration)
/// share in sequence. Clones of an [`Execution`] share it.
#[derive(Debug)]
struct Line {
    /// The id of the last event recorded along the line, the `previousEventId` of the next.
    last: AtomicU64,
    /// Whether the next state entered on this line gets an input no payload check has seen: the
    /// line's first state (a branch's or iteration's input is the Parallel's or Map's
    /// Parameters or item; a machine may be resumed from any state with any input). Every later
    /// state's input is the output of the state before it, which that state checked, so a
    /// state may skip checking what it passes on unchanged (see `Visit::input_checked`).
    unchecked_input: AtomicBool,
}

impl Line {
    fn new(last: u64, unchecked_input: bool) -> Line {
        Line { last: AtomicU64::new(last), unchecked_input: AtomicBool::new(unchecked_input) }
    }

    /// Whether the input of the state entering now was checked; it is the last unchecked one.
    fn take_input_checked(&self) -> bool {
        // A load first: on the common path (checked) nothing is written.
        !(self.unchecked_input.load(Ordering::Relaxed) && self.unchecked_input.swap(false, Ordering::Relaxed))
    }
}

/// A line of control's position for operation ids: its path (`""` at the top, `Par#1.0/2/` in
/// branch 2 of the first visit's first attempt of Parallel `Par`), how often each state was
/// visited on it, and how many branches were created from it.
#[cfg(feature = "durable")]
#[derive(Debug, Default)]
struct Scope {
    path: String,
    visits: Mutex<std::collections::HashMap<String, u32>>,
    /// The redrive generation of a state visit that a redrive runs again (see
    /// [`Execution::rerun_for_redrive`]): its operations' ids carry it (`Task#1!1.0`). Absent: 0.
    generations: Mutex<std::collections::HashMap<(String, u32), u32>>,
    branches: std::sync::atomic::AtomicU32,
    /// The CONTEXT operation enclosing this line's operations (`None` at the top level).
    context: Option<String>,
    /// On a Parallel or Map attempt's scope: what its lines are (see [`BranchOf`]).
    owner: Option<BranchOf>,
    /// On a branch or iteration line: which state it belongs to, as a CONTEXT of its own.
    branch_of: Option<BranchOf>,
    /// The event captures of the CONTEXTs this line runs in, outermost first (the last is this
    /// line's own on a branch line or a Parallel/Map attempt's scope). A capture collects the
    /// ids of the events recorded while its CONTEXT runs (`None`: not running), which the
    /// CONTEXT stores when it finishes so a replay can skip it.
    captures: Vec<EventCapture>,
    /// Under a Parallel or Map attempt that a redrive reopened: the mute flags of this line and
    /// of the lines it runs in, outermost first. While one is set, the line records no history
    /// event: it replays a branch or iteration whose events the reopened attempt recorded again
    /// already (see [`Execution::in_state_context`]), until the failed Task it leads to runs
    /// again and unmutes its path ([`Execution::unmute`]).
    mute: Vec<Arc<std::sync::atomic::AtomicBool>>,
}

/// See [`Scope::captures`].
#[cfg(feature = "durable")]
type EventCapture = Arc<Mutex<Option<Vec<u64>>>>;

/// The CONTEXT operation of a Parallel branch or a Map iteration: the state's name, the subtype
/// (`ParallelBranch`, `MapIteration`) and the state attempt's CONTEXT (its parent).
#[cfg(feature = "durable")]
#[derive(Debug, Clone)]
struct BranchOf {
    state: String,
    subtype: &'static str,
    parent: Option<String>,
}

#[cfg(feature = "durable")]
impl Scope {
    /// The scope of the next line made from this one: under a Parallel or Map attempt, a
    /// branch or iteration with a CONTEXT of its own; elsewhere, the same context.
    fn branch_scope(&self) -> Scope {
        let path = format!("{}{}/", self.path, self.branches.fetch_add(1, Ordering::SeqCst));
        match &self.owner {
            Some(owner) => Scope {
                context: Some(path.trim_end_matches('/').to_owned()),
                branch_of: Some(owner.clone()),
                path,
                captures: self.captures.iter().cloned().chain([EventCapture::default()]).collect(),
                mute: self.mute.clone(),
                ..Scope::default()
            },
            None => Scope {
                context: self.context.clone(),
                path,
                captures: self.captures.clone(),
                mute: self.mute.clone(),
                ..Scope::default()
            },
        }
    }

    /// Whether this line records no history events now (see [`Scope::mute`]).
    fn muted(&self) -> bool {
        self.mute.iter().any(|m| m.load(Ordering::SeqCst))
    }
}

#[derive(Debug)]
struct Shared {
    clock: Clock,
    history: History,
    workflow_name: String,
    name: String,
    /// The name command handlers and callback listings see when a service's [`Identity`]
    /// renamed the execution: its store name. `None`: [`Shared::name`].
    task_name: Option<String>,
    id: String,
    state_machine_id: String,
    /// `arn:aws:states:<region>:<account>`, the start of every ARN the execution mints.
    arn_prefix: String,
    role_arn: String,
    machine_type: MachineType,
    /// The execution input (`$$.Execution.Input`), shared with `ExecutionStarted`.
    input: Arc<Value>,
    start_time: String,
    started_at: Instant,
    rng: Mutex<StdRng>,
    limits: Limits,
    events: crate::events::EventBus,
    /// Why the execution input was refused (too large or too deep), if it was.
    input_failure: Option<Failure>,
    #[cfg(feature = "durable")]
    journal: Option<Arc<Journal>>,
    callbacks: crate::Callbacks,
    objects: crate::distributed::Objects,
    sw: crate::sw::SwShared,
    /// [`RunOptions::context_overlay`].
    context_overlay: Option<Value>,
}

impl Execution {
    /// The execution's event bus (Serverless Workflow).
    pub fn events(&self) -> &crate::events::EventBus {
        &self.shared.events
    }

    /// Starts an execution of the workflow named `workflow` on `input`, recording
    /// `ExecutionStarted`. Only the name is needed: generated code carries no IR, and the
    /// workflow's `TimeoutSeconds` is [`Execution::finish`]'s.
    pub fn start(workflow: &str, input: &Value, options: RunOptions) -> Execution {
        let RunOptions {
            clock,
            name,
            seed,
            limits,
            history,
            events,
            #[cfg(feature = "durable")]
            journal,
            callbacks,
            objects,
            started_by,
            machine_type,
            state_machine_name,
            account,
            identity,
            context_overlay,
        } = options;
        let started_at = Instant::now();
        let start_time = clock.now_rfc3339();
        // A resumed execution keeps the name and `$$.Execution.StartTime` of its first start.
        #[cfg(feature = "durable")]
        let (name, start_time) = match &journal {
            Some(j) => (Some(j.name().to_owned()), j.start_time().to_owned()),
            None => (name, start_time),
        };
        // A service's identity wins; command handlers keep seeing the store name.
        let (task_name, name, state_machine_name, account, role_arn) = match identity {
            Some(id) => (name, Some(id.name), Some(id.state_machine), Some((id.region, id.account)), id.role_arn),
            None => (None, name, state_machine_name, account, None),
        };
        let machine = state_machine_name.unwrap_or_else(|| workflow.to_owned());
        let (region, account) = account.unwrap_or_else(|| (DEFAULT_REGION.to_owned(), DEFAULT_ACCOUNT.to_owned()));
        let arn_prefix = format!("arn:aws:states:{region}:{account}");
        let name = name.unwrap_or_else(|| format!("{machine}-{seed:016x}"));
        // Checked before the input is copied anywhere: cloning or serializing a document deeper
        // than the limit would recurse past the end of the stack. A refused input is kept as
        // `null`, and `finish` fails the execution before its first state.
        let input_failure = limits.check_payload(&name, input).err();
        let input = if input_failure.is_some() { &Value::Null } else { input };
        let id = match machine_type {
            MachineType::Standard => format!("{arn_prefix}:execution:{machine}:{name}"),
            // AWS adds a uuid after the name; it comes from the seed, so runs stay reproducible
            // (a source of its own: the execution's random draws are the same in both types).
            MachineType::Express | MachineType::ExpressSync => {
                format!("{arn_prefix}:express:{machine}:{name}:{}", express_execution_uuid(seed))
            }
        };
        let history = History::with_level(history);
        // A durable run's history goes to the store as it grows, with its checkpoints.
        #[cfg(feature = "durable")]
        if let Some(journal) = &journal {
            journal.attach_history(&history);
        }
        let shared = Shared {
            id,
            machine_type,
            state_machine_id: format!("{arn_prefix}:stateMachine:{machine}"),
            role_arn: role_arn.unwrap_or_else(|| format!("arn:aws:iam::{account}:role/wfc-local")),
            workflow_name: machine,
            arn_prefix,
            name,
            task_name,
            input: Arc::new(input.clone()),
            start_time,
            started_at,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            limits,
            events,
            input_failure,
            clock,
            history,
            #[cfg(feature = "durable")]
            journal,
            callbacks: callbacks.unwrap_or_default(),
            objects,
            sw: crate::sw::SwShared::new(started_by),
            context_overlay,
        };
        let exec = Execution {
            shared: Arc::new(shared),
            // The input was checked above, but a machine may be resumed in it from any state
            // with any input (generated `resume`, a durable replay): the first state checks.
            cursor: Arc::new(Line::new(0, true)),
            variables: Variables::root(),
            in_parallel_branch: false,
            #[cfg(feature = "durable")]
            scope: Arc::new(Scope::default()),
        };
        exec.record_with(EventType::ExecutionStarted, || exec.started_details());
        exec
    }

    /// Runs the machine future under the workflow's TimeoutSeconds, records the closing event
    /// (`ExecutionSucceeded`/`Failed`/`TimedOut`) and returns the result.
    ///
    /// The machine future is moved to the heap here, before anything awaits it: a whole
    /// workflow's future is tens of kilobytes, and in a debug build every layer that holds it
    /// inline (this one, the timeout, the panic guard, the caller's `run_with`, the caller's own
    /// async code) reserves stack for copies of it when polled, which overflowed a 2 MiB thread.
    /// Boxed, each layer holds a pointer. One allocation per execution.
    pub fn finish<F>(&self, timeout_seconds: Option<u64>, machine: F) -> impl Future<Output = ExecutionResult>
    where
        F: Future<Output = Result<Value, Failure>>,
    {
        self.finish_boxed(timeout_seconds, Box::pin(machine))
    }

    async fn finish_boxed<F>(&self, timeout_seconds: Option<u64>, machine: std::pin::Pin<Box<F>>) -> ExecutionResult
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
            // On the execution's clock: with a skipping clock, skipped waits count towards it.
            Some(secs) => self.shared.clock.timeout(Duration::from_secs(secs), guarded).await,
            None => Some(guarded.await),
        };
        let (status, output, error) = match outcome {
            None => {
                // AWS records a timed-out execution with neither an error nor a cause.
                self.record(EventType::ExecutionTimedOut, json!({}));
                (Status::TimedOut, None, None)
            }
            Some(Ok(Ok(output))) => {
                self.record_with(EventType::ExecutionSucceeded, || {
                    Details::with_capacity(1).with_shared("output", self.share(&output))
                });
                (Status::Succeeded, Some(output), None)
            }
            Some(Ok(Err(failure))) => {
                self.record(EventType::ExecutionFailed, failure_details(&failure));
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
        // A Map Run child's end is its CHAINED_INVOKE's, not the journaled execution's.
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && self.scope.context.is_none()
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

    /// Serverless Workflow state shared by all lines of control (who started the execution,
    /// subflows started without waiting).
    pub fn sw(&self) -> &crate::sw::SwShared {
        &self.shared.sw
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

    /// The name Task handlers see (`TaskContext::execution_name`): the store name of a
    /// journaled execution a service renamed with an [`Identity`], else [`Execution::name`].
    pub fn task_execution_name(&self) -> &str {
        self.shared.task_name.as_deref().unwrap_or(&self.shared.name)
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
        let at = self.cursor.last.load(Ordering::SeqCst);
        Execution {
            shared: Arc::clone(&self.shared),
            // The branch's or iteration's input (Parameters, an item) was not checked.
            cursor: Arc::new(Line::new(at, true)),
            // A branch or iteration reads the variables of the line it started from.
            variables: self.variables.child(),
            in_parallel_branch: self.in_parallel_branch,
            // Branches are created in definition order by both engines, so the index is stable
            // across runs and so are the operation ids inside the branch.
            #[cfg(feature = "durable")]
            scope: Arc::new(self.muted_if_replayed(self.scope.branch_scope())),
        }
    }

    /// `line` (a new branch or iteration line of this scope), muted when this is a Parallel or
    /// Map attempt that a redrive reopened and the line ran before: its events up to how it
    /// ended are among those the reopened attempt records again (see [`Scope::mute`]). A line
    /// that never ran (an iteration the failure kept from starting) records its events. A line
    /// the failure cancelled in flight (its CONTEXT dropped by the redrive, operations of it
    /// recorded) is muted too: its finished Tasks replay silently, and it records again from
    /// the first attempt not recorded ([`Execution::unmute_if_live`]).
    #[cfg(feature = "durable")]
    fn muted_if_replayed(&self, mut line: Scope) -> Scope {
        if let (Some(journal), Some(owner), Some(id)) = (&self.shared.journal, &self.scope.context, &line.context)
            && line.branch_of.is_some()
            && journal.is_reopened(owner)
            && (journal.recorded(id).is_some() || journal.ran_under(id))
        {
            line.mute.push(Arc::new(std::sync::atomic::AtomicBool::new(true)));
        }
        line
    }

    /// After a redrive moved visit `visit_no` of Task `name` to its next generation
    /// ([`Execution::rerun_for_redrive`]), or as attempt `attempt_no` of it is scheduled: when
    /// nothing of that attempt is recorded, the visit runs from here, so a muted line records
    /// again ([`Execution::unmute`]). A generation an earlier redrive ran is replayed muted (its
    /// events are the reopened attempt's), and so is an attempt that finished before a branch
    /// was cancelled.
    fn unmute_if_live(&self, name: &str, visit_no: u32, attempt_no: u32) {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && self.scope.muted()
            && journal.recorded(&self.op_id(name, visit_no, &format!(".{attempt_no}"))).is_none()
        {
            self.unmute();
        }
        let _ = (name, visit_no, attempt_no);
    }

    /// A Fail state reached on a line a redrive runs muted (a branch or iteration of a reopened
    /// Parallel or Map, replaying up to where it ended): AWS "reenters the Fail state and fails
    /// again", so the line records again from the Fail state's entry.
    fn unmute_at_fail_state(&self) {
        #[cfg(feature = "durable")]
        if self.scope.muted() {
            self.unmute();
        }
    }

    /// Lets this line and the lines it runs in record history events again (see
    /// [`Scope::mute`]): the redriven failure runs again here, so what follows is new.
    #[cfg(feature = "durable")]
    fn unmute(&self) {
        for m in &self.scope.mute {
            m.store(false, Ordering::SeqCst);
        }
    }

    /// Whether this line records no history events now (see [`Scope::mute`]).
    fn muted(&self) -> bool {
        #[cfg(feature = "durable")]
        {
            self.scope.muted()
        }
        #[cfg(not(feature = "durable"))]
        {
            false
        }
    }

    /// A child execution of a DISTRIBUTED Map run: its own history, name, id, input and random
    /// source (`seed`, drawn from this execution's), on the same clock, limits and object store.
    /// It records `ExecutionStarted`; [`Execution::finish`] ends it. With `op` (from
    /// [`Execution::map_run_op`], when journaled) the child's operations have ids under `op` and
    /// it as parent; [`Execution::journaled_map_child`] runs the child as that operation.
    pub(crate) fn child(
        &self,
        workflow_name: String,
        name: String,
        state_machine_id: String,
        input: &Value,
        op: Option<String>,
        seed: u64,
    ) -> Execution {
        let input_failure = self.shared.limits.check_payload(&name, input).err();
        let input = Arc::new(if input_failure.is_some() { Value::Null } else { input.clone() });
        let shared = Shared {
            clock: self.shared.clock.clone(),
            history: History::new(),
            id: format!("{}:execution:{workflow_name}:{name}", self.shared.arn_prefix),
            arn_prefix: self.shared.arn_prefix.clone(),
            workflow_name,
            name,
            task_name: None,
            state_machine_id,
            role_arn: self.shared.role_arn.clone(),
            // A Map Run child is a STANDARD or EXPRESS execution of its own; wfc runs both the
            // same way, with a standard ARN.
            machine_type: MachineType::Standard,
            input,
            start_time: self.shared.clock.now_rfc3339(),
            started_at: Instant::now(),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            limits: self.shared.limits,
            input_failure,
            #[cfg(feature = "durable")]
            journal: op.as_ref().and(self.shared.journal.clone()),
            objects: self.shared.objects.clone(),
            // Task tokens of a child's tasks are answered through the parent's handle.
            callbacks: self.shared.callbacks.clone(),
            events: self.shared.events.clone(),
            sw: crate::sw::SwShared::default(),
            context_overlay: None,
        };
        let child = Execution {
            shared: Arc::new(shared),
            // As in `start`: the first state checks its input.
            cursor: Arc::new(Line::new(0, true)),
            // A child is an execution of its own: it sees none of the parent's variables, as
            // AWS's Distributed Map child workflows do not.
            variables: Variables::root(),
            in_parallel_branch: false,
            #[cfg(feature = "durable")]
            scope: Arc::new(match op {
                Some(id) => Scope { path: format!("{id}/"), context: Some(id), ..Scope::default() },
                None => Scope::default(),
            }),
        };
        #[cfg(not(feature = "durable"))]
        let _ = op;
        child.record(EventType::ExecutionStarted, child.started_details());
        child
    }

    /// The details of `ExecutionStarted`: the input (shared with the history's documents, so
    /// the first state's Entered event shares it too), the name and the ARNs.
    fn started_details(&self) -> Details {
        Details::with_capacity(4)
            .with_shared("input", self.shared.history.adopt(Arc::clone(&self.shared.input)))
            .with("name", Value::String(self.shared.name.clone()))
            .with("roleArn", Value::String(self.shared.role_arn.clone()))
            .with("stateMachineArn", Value::String(self.shared.state_machine_id.clone()))
    }

    /// The execution's start time (`$$.Execution.StartTime`).
    pub fn start_time(&self) -> &str {
        &self.shared.start_time
    }

    /// `arn:aws:states:<region>:<account>`: the start of the ARNs this execution mints.
    pub(crate) fn arn_prefix(&self) -> &str {
        &self.shared.arn_prefix
    }

    /// The state machine's id (`$$.StateMachine.Id`).
    pub fn state_machine_id(&self) -> &str {
        &self.shared.state_machine_id
    }

    /// Where a DISTRIBUTED Map reads and writes its objects.
    pub fn objects(&self) -> &crate::distributed::Objects {
        &self.shared.objects
    }

    /// Records an event now, chained to the previous event of this line of control, and
    /// returns its id.
    pub fn record(&self, event_type: EventType, details: impl Into<Details>) -> u64 {
        self.record_at(event_type, None, || details)
    }

    /// [`Execution::record`] with details built only when the history keeps events (at
    /// [`HistoryLevel::Express`] neither the details nor the timestamp are computed).
    pub fn record_with<D: Into<Details>>(&self, event_type: EventType, details: impl FnOnce() -> D) -> u64 {
        self.record_at(event_type, None, details)
    }

    /// A document for an event's details, shared with the events before it while it is the
    /// same JSON instead of copied (see [`History::share`]).
    pub fn share(&self, document: &Value) -> Arc<Value> {
        self.shared.history.share(document)
    }

    /// Whether this execution keeps its history's events ([`HistoryLevel::Full`]).
    pub fn keeps_history(&self) -> bool {
        self.shared.history.keeps_events()
    }

    /// Records an event stamped `at` (now when `None`).
    fn record_at<D: Into<Details>>(
        &self,
        event_type: EventType,
        at: Option<jiff::Timestamp>,
        details: impl FnOnce() -> D,
    ) -> u64 {
        if self.muted() {
            return self.cursor.last.load(Ordering::SeqCst);
        }
        let id = match self.shared.history.count() {
            Some(id) => id,
            None => {
                let previous = self.cursor.last.load(Ordering::SeqCst);
                let timestamp = crate::clock::format_timestamp(at.unwrap_or_else(|| self.shared.clock.now()));
                self.shared.history.record(event_type, details(), timestamp, previous)
            }
        };
        self.cursor.last.store(id, Ordering::SeqCst);
        #[cfg(feature = "durable")]
        self.capture(id);
        id
    }

    /// Adds event `id` to the captures of the CONTEXTs running around this line.
    #[cfg(feature = "durable")]
    fn capture(&self, id: u64) {
        for capture in &self.scope.captures {
            if let Some(ids) = capture.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                ids.push(id);
            }
        }
    }

    /// Runs `f` with the execution's seeded random source (retry jitter, `States.UUID`,
    /// unseeded `States.MathRandom`). The source is behind a lock, so `f` must not call
    /// `with_rng` again (it would deadlock); pass the `rng` it receives down instead.
    pub fn with_rng<R>(&self, f: impl FnOnce(&mut StdRng) -> R) -> R {
        let mut rng = self.shared.rng.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut rng)
    }

    /// The context object (`$$`) as seen by state `state_name`, entered at `entered_time`, on its
    /// `retry_count`-th retry (`None` for a state that cannot retry: AWS gives a Pass, Choice,
    /// Wait, Succeed or Fail state no `RetryCount`, recorded).
    ///
    /// `Execution.RedriveCount` is how often a durable execution was redriven (0 otherwise), and
    /// absent from an Express execution started synchronously, as recorded.
    pub fn context_object(&self, state_name: &str, entered_time: &str, retry_count: Option<u32>) -> Value {
        let mut ctx = json!({
            "Execution": {
                "Id": self.shared.id,
                "Input": *self.shared.input,
                "Name": self.shared.name,
                "StartTime": self.shared.start_time,
                "RoleArn": self.shared.role_arn,
            },
            "State": {
                "Name": state_name,
                "EnteredTime": entered_time,
            },
            "StateMachine": {
                "Id": self.shared.state_machine_id,
                "Name": self.shared.workflow_name,
            },
        });
        if self.shared.machine_type != MachineType::ExpressSync {
            ctx["Execution"]["RedriveCount"] = json!(self.redrive_count());
        }
        if let Some(n) = retry_count {
            ctx["State"]["RetryCount"] = json!(n);
        }
        if let Some(overlay) = &self.shared.context_overlay {
            crate::io::overlay_context(&mut ctx, overlay);
        }
        ctx
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

/// The longest Wait AWS accepts, [`wfc_ir::MAX_WAIT_SECONDS`] (2³¹ − 1 s, about 68 years:
/// AWS's recorded boundary). Longer is `States.Runtime` "Wait state delay is too long." as on AWS.
pub const MAX_WAIT: Duration = Duration::from_secs(wfc_ir::MAX_WAIT_SECONDS);

/// One visit to a state: records Entered/Exited and builds the context object on demand.
struct Visit<'a> {
    exec: &'a Execution,
    name: &'a str,
    state_type: &'static str,
    /// When the state was entered (its Entered event's timestamp and `$$.State.EnteredTime`),
    /// formatted only when something reads it. `None` when nothing will read it (see
    /// [`Visit::start_timed`]): then not even the clock is read.
    entered_at: Option<jiff::Timestamp>,
    entered_id: u64,
    retry_count: u32,
    /// `$$.Task.Token` of the current attempt of a `.waitForTaskToken` Task.
    task_token: Option<String>,
    /// Whether the state's input passed a payload check already (see [`Line`]): then what the
    /// state passes on unchanged needs none.
    input_checked: bool,
}

impl<'a> Visit<'a> {
    fn enter(exec: &'a Execution, name: &'a str, state_type: &'static str, input: &Value) -> Visit<'a> {
        Visit::enter_timed(exec, name, state_type, input, true)
    }

    /// [`Visit::enter`]; `timed` false says the state will not build its context object, so
    /// unless the history stamps the Entered event, the clock is not read at all.
    fn enter_timed(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
        timed: bool,
    ) -> Visit<'a> {
        let entered_at = (timed || exec.keeps_history()).then(|| exec.clock().now());
        let entered_id = match EventType::entered(state_type) {
            Some(ty) => exec.record_at(ty, entered_at, || history_details(exec, name, "input", input)),
            None => 0,
        };
        tracing::debug!(state = name, r#type = state_type, "entered");
        let input_checked = exec.cursor.take_input_checked();
        Visit { exec, name, state_type, entered_at, entered_id, retry_count: 0, task_token: None, input_checked }
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

    /// [`Visit::start`] for a state that knows on entry whether it builds its context object
    /// (`needs_context`) and awaits nothing before it would: Pass, Choice, Succeed, and a Task
    /// that never builds it. At the express level such a state reads no clock when it does not
    /// need `$$`.
    fn start_timed(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
        needs_context: bool,
    ) -> Result<Visit<'a>, Failure> {
        exec.check_history()?;
        Ok(Visit::enter_timed(exec, name, state_type, input, needs_context))
    }

    /// [`Visit::exit`] after checking the output against the payload and depth limits. The
    /// next state's input is this output, so inputs need no second check.
    fn finish(&self, output: &Value) -> Result<(), Failure> {
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))?;
        self.exit(output);
        Ok(())
    }

    /// [`Visit::finish`] for an output that is the state's input unchanged: when that input
    /// was checked (see [`Line`]), it needs no second check.
    fn finish_unchanged(&self, output: &Value) -> Result<(), Failure> {
        if self.input_checked {
            self.exit(output);
            Ok(())
        } else {
            self.finish(output)
        }
    }

    fn exit(&self, output: &Value) {
        if let Some(ty) = EventType::exited(self.state_type) {
            self.exec.record_with(ty, || history_details(self.exec, self.name, "output", output));
        }
    }

    /// [`finish`](Self::finish) for a state that evaluated an `Assign` block (its own, a Choice
    /// rule's or a catcher's): the Exited event also records the values, as AWS's
    /// `assignedVariables`, then they become visible from the next state on.
    fn finish_assigned(&self, output: &Value, assigned: Option<Vec<(String, Value)>>) -> Result<(), Failure> {
        let Some(values) = assigned else {
            return self.finish(output);
        };
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))?;
        if let Some(ty) = EventType::exited(self.state_type) {
            self.exec.record_with(ty, || {
                let mut details = history_details(self.exec, self.name, "output", output);
                crate::variables::record_assigned(&mut details, &values);
                details
            });
        }
        self.commit(Some(values)).map_err(|f| self.runtime(f))
    }

    /// The context object, carrying the variables in scope (as of now: called before this
    /// state commits its own `Assign`) for `$name` paths and JSONata.
    fn context(&self) -> Value {
        // Only a state entered with `timed` false lacks the time, and it builds no context; if
        // one ever did, now is the best reading there is (nothing was awaited since entry).
        let entered_at = self.entered_at.unwrap_or_else(|| self.exec.clock().now());
        let entered_time = crate::clock::format_timestamp(entered_at);
        // Only the states with `Retry` have a retry count in their context object.
        let retry_count = matches!(self.state_type, "Task" | "Parallel" | "Map").then_some(self.retry_count);
        let mut ctx = self.exec.context_object(self.name, &entered_time, retry_count);
        if let Some(token) = &self.task_token {
            ctx["Task"] = json!({ "Token": token });
        }
        if !self.exec.variables.is_empty()
            && let Some(m) = ctx.as_object_mut()
        {
            m.insert(wfc_ir::jsonpath::VARIABLES_KEY.to_owned(), Value::Object(self.exec.variables.visible()));
        }
        ctx
    }

    /// Evaluates an `Assign` block against the variables as of state entry (see
    /// [`crate::variables`]); `dollar` is what `$` means for a JSONPath Assign.
    fn assign(
        &self,
        assign: Option<&Assign>,
        dollar: &Value,
        bindings: &Bindings<'_>,
    ) -> Result<Option<Vec<(String, Value)>>, Failure> {
        let Some(assign) = assign else { return Ok(None) };
        self.exec.with_rng(|rng| variables::evaluate(assign, dollar, bindings, bindings.context, rng)).map(Some)
    }

    /// Makes assigned values visible from the next state on.
    fn commit(&self, assigned: Option<Vec<(String, Value)>>) -> Result<(), Failure> {
        match assigned {
            Some(values) => self.exec.variables.commit(self.name, values),
            None => Ok(()),
        }
    }

    /// A JSONata `Output`-like template evaluated with `bindings`.
    fn jsonata(&self, t: &JsonataTemplate, field: &str, bindings: &Bindings<'_>) -> Result<Value, Failure> {
        self.exec.with_rng(|rng| jsonata::template(t, field, bindings, rng))
    }

    /// The context object if `needed`, else `null` (nothing will read it).
    fn context_if(&self, needed: bool) -> Value {
        if needed { self.context() } else { Value::Null }
    }

    /// Adds AWS's prefix to a `States.Runtime` failure raised by this state's own processing.
    fn runtime(&self, failure: Failure) -> Failure {
        let prefixed = failure.cause.starts_with("An error occurred while executing the state '");
        if (failure.error == wfc_ir::errors::RUNTIME || failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR)
            && !prefixed
        {
            let failure = Failure {
                error: failure.error,
                cause: format!(
                    "An error occurred while executing the state '{}' (entered at the event id #{}). {}",
                    self.name, self.entered_id, failure.cause
                ),
            };
            if failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR {
                self.evaluation_failed(&failure);
            }
            failure
        } else {
            failure
        }
    }

    /// Records `EvaluationFailed`: a JSONata evaluation failed the state for good (AWS records
    /// it before the state's own failure events and `ExecutionFailed`), with the field it failed
    /// in (`location`) when the cause names one.
    fn evaluation_failed(&self, failure: &Failure) {
        self.exec.record_with(EventType::EvaluationFailed, || {
            let mut details = json!({ "error": failure.error, "cause": failure.cause, "state": self.name });
            let field =
                failure.cause.split_once("specified for the field '").and_then(|(_, rest)| rest.split_once('\''));
            if let Some((location, _)) = field {
                details["location"] = json!(location);
            }
            details
        });
    }
}

/// `{"name": name, <key>: value}`, the details of an Entered/Exited event, the value shared
/// (not copied) with the events around it while it is the same document.
fn history_details(exec: &Execution, name: &str, key: &'static str, value: &Value) -> Details {
    Details::named(name, key, exec.share(value))
}

/// `{"name": name}`, the details of a state's events that carry nothing else.
fn name_details(name: &str) -> Details {
    Details::with_capacity(1).with("name", Value::String(name.to_owned()))
}

fn state_span(name: &str, state_type: &'static str) -> tracing::Span {
    tracing::info_span!("state", name = name, r#type = state_type)
}

/// A Pass state.
pub async fn pass(exec: &Execution, name: &str, spec: &PassState, input: Value) -> Result<Value, Failure> {
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || spec.parameters.as_ref().is_some_and(io::uses_context)
        || spec.assign.is_some()
        || spec.output.is_some();
    if spec.assign.is_none() && spec.output.is_none() {
        let body = |input, ctx: &Value| exec.with_rng(|rng| pass_io(spec, input, ctx, rng));
        if spec.result.is_none()
            && spec.parameters.is_none()
            && spec.output_path.as_ref().is_some_and(wfc_ir::Path::is_identity)
        {
            return pass_kept_with(exec, name, needs_ctx, input, |input| writes_back_in_place(spec, input), body);
        }
        return pass_with(exec, name, needs_ctx, input, body);
    }
    if let (Some(assign @ Assign::JsonPath(_)), None) = (&spec.assign, &spec.output) {
        return pass_assign_with(exec, name, input, |input, ctx| {
            let result = pass_result(exec, spec, &input, ctx)?;
            let assigned = assign_jsonpath(exec, assign, &result, ctx)?;
            let output = io::result_path(&spec.result_path, input, result)?;
            Ok((io::output_path(&spec.output_path, output, ctx)?, assigned))
        });
    }
    pass_language_with(exec, name, input, |input, ctx| pass_assign(exec, spec, input, ctx))
}

/// One visit of a Pass state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` with an `Output`): its Entered event, `body` (the output and the assigned values,
/// `None` without an `Assign`, from the raw input and the context object, which carries the
/// variables as of entry), then the Exited event (with AWS's `assignedVariables` when there
/// are some), after which the values are visible. A `States.Runtime` or
/// `States.QueryEvaluationError` failure of `body` gets AWS's prefix naming the state (and the
/// latter its `EvaluationFailed` event).
///
/// The interpreter's [`pass`] and generated code (which compiles `body` from the state's
/// JSONata `Output` and `Assign`) both go through here.
pub fn pass_language_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Option<Assigned>), Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, true)?;
        let ctx = visit.context();
        let (output, assigned) = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(output)
    })
}

/// One visit of a JSONPath Pass state without `Assign`: records its Entered and Exited events
/// around `body`, which computes the output from the raw input and the context object (`null`
/// unless `needs_ctx`). A `States.Runtime` failure of `body` gets AWS's prefix naming the state.
///
/// The interpreter's [`pass`] and generated code (which compiles `body` from the state's paths
/// and Parameters) both go through here, so their histories are the same.
pub fn pass_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    plain_visit(exec, name, "Pass", needs_ctx, input, body)
}

/// [`pass_with`] for a Pass that outputs its input unchanged whenever `kept` says so (InputPath
/// and ResultPath naming the same node, which exists, and OutputPath `$`): then `body` is not
/// run, and the output, being the input, is not checked against the payload limits again
/// unless this is the first state of its line (see [`Line`]). Every state's output is checked
/// once, and a 100 KB document carried through such states is not walked at each.
///
/// The interpreter's [`pass`] and generated code both go through here for such a Pass.
pub fn pass_kept_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    kept: impl FnOnce(&Value) -> bool,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, needs_ctx)?;
        if kept(&input) {
            visit.finish_unchanged(&input)?;
            return Ok(input);
        }
        let ctx = visit.context_if(needs_ctx);
        let output = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}

/// Variables a state assigns, `(name, value)` in the order written.
pub type Assigned = Vec<(String, Value)>;

/// One visit of a JSONPath Pass state with `Assign` (and no JSONata `Output`): its Entered
/// event, `body` (the output and the assigned values, from the raw input and the context
/// object, which carries the variables as of entry), then the Exited event with AWS's
/// `assignedVariables`, after which the values are visible. A `States.Runtime` failure of
/// `body` gets AWS's prefix naming the state.
///
/// The interpreter's [`pass`] and generated code (which compiles `body` from the state's paths,
/// Parameters and Assign) both go through here.
pub fn pass_assign_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Assigned), Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, true)?;
        let ctx = visit.context();
        let (output, assigned) = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, Some(assigned))?;
        Ok(output)
    })
}

/// A JSONPath `Assign` block evaluated on `dollar` (what `$` means for the state) with the
/// context object `ctx` (`$$`, and `$name` for the variables as of entry).
fn assign_jsonpath(exec: &Execution, assign: &Assign, dollar: &Value, ctx: &Value) -> Result<Assigned, Failure> {
    // A JSONPath block reads no JSONata bindings; these only satisfy the evaluator's signature.
    let bindings = Bindings::new(dollar, ctx);
    exec.with_rng(|rng| variables::evaluate(assign, dollar, &bindings, ctx, rng))
}

/// A JSONPath Pass state's result before ResultPath: its `Result`, else Parameters (or the
/// effective input itself) over InputPath.
fn pass_result(exec: &Execution, spec: &PassState, input: &Value, ctx: &Value) -> Result<Value, Failure> {
    Ok(match (&spec.result, &spec.parameters) {
        (Some(result), _) => result.clone(),
        (None, parameters) => {
            let effective = io::input_path(&spec.input_path, input, ctx)?;
            match parameters {
                Some(t) => exec.with_rng(|rng| io::template(t, &effective, ctx, rng))?,
                None => effective.into_owned(),
            }
        }
    })
}

/// One visit of a state whose work is `body` on its input and context object: its Entered and
/// Exited events around it, a `States.Runtime` failure prefixed with the state's name. What
/// [`pass_with`] and [`succeed_with`] share.
fn plain_visit(
    exec: &Execution,
    name: &str,
    state_type: &'static str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    state_span(name, state_type).in_scope(|| {
        let visit = Visit::start_timed(exec, name, state_type, &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let output = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}

/// A Pass state with `Assign` or a JSONata `Output`. In a JSONPath Pass, `$` in Assign is the
/// state's result (its `Result`, else Parameters over the effective input); in a JSONata Pass,
/// `Output` (default: the input) and Assign see `$states.input`.
#[allow(clippy::type_complexity)]
fn pass_assign(
    exec: &Execution,
    spec: &PassState,
    input: Value,
    ctx: &Value,
) -> Result<(Value, Option<Vec<(String, Value)>>), Failure> {
    let b = Bindings::new(&input, ctx);
    let assign = |dollar: &Value| -> Result<Option<Assigned>, Failure> {
        match &spec.assign {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, &b, ctx, rng)).map(Some),
            None => Ok(None),
        }
    };
    let jsonata = spec.output.is_some() || matches!(spec.assign, Some(Assign::Jsonata(_)));
    if jsonata {
        let assigned = assign(&input)?;
        let output = match &spec.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
            None => input.clone(),
        };
        return Ok((output, assigned));
    }
    let result = pass_result(exec, spec, &input, ctx)?;
    let assigned = assign(&result)?;
    let output = io::output_path(&spec.output_path, io::result_path(&spec.result_path, input.clone(), result)?, ctx)?;
    Ok((output, assigned))
}

fn pass_io(spec: &PassState, input: Value, ctx: &Value, rng: &mut StdRng) -> Result<Value, Failure> {
    let replaces_input = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    let output = match (&spec.result, &spec.parameters) {
        (Some(result), _) => io::result_path(&spec.result_path, input, result.clone())?,
        // The common `{"Type": "Pass"}`: the raw input is not needed afterwards, so it moves
        // through InputPath without a copy.
        (None, None) if replaces_input => io::input_path_owned(&spec.input_path, input, ctx)?,
        // InputPath and ResultPath name the same node that exists: writing what InputPath
        // selects back where it came from leaves the input as it is, so nothing is copied.
        (None, None) if writes_back_in_place(spec, &input) => input,
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

/// Whether a Pass state without Parameters or Result has an InputPath and a ResultPath naming
/// the same node of `input`, and that node exists: then its output before OutputPath is `input`
/// itself (InputPath cannot fail, and ResultPath replaces the node with its own value).
fn writes_back_in_place(spec: &PassState, input: &Value) -> bool {
    match (&spec.input_path, &spec.result_path) {
        (Some(selected), Some(written)) => {
            selected.root() == wfc_ir::Root::Input
                && selected.is_singular()
                && selected.segments() == written.as_path().segments()
                && written.get(input).is_some()
        }
        _ => false,
    }
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
        Some(Seconds::Jsonata(e)) => jsonata_seconds(e, field.trim_end_matches("Path"), input, ctx).map(Some),
        Some(Seconds::Path(p)) => seconds_at(p, field, input, ctx).map(Some),
    }
}

/// A JSONata TimeoutSeconds or HeartbeatSeconds (`field`) on the state input: a positive
/// integer, else `States.QueryEvaluationError`.
pub(crate) fn jsonata_seconds(
    expr: &wfc_ir::JsonataExpr,
    field: &str,
    input: &Value,
    ctx: &Value,
) -> Result<Duration, Failure> {
    // Evaluated with a fixed seed: a timeout is not the place for randomness.
    let mut rng = <StdRng as SeedableRng>::seed_from_u64(0);
    let value = jsonata::evaluate(expr, field, &Bindings::new(input, ctx), &mut rng)?;
    match value.as_u64() {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(jsonata::unexpected_type(expr.as_str(), field, "positive integer", &value)),
    }
}

/// A TimeoutSecondsPath or HeartbeatSecondsPath (`field`) on the effective input `input`.
pub(crate) fn seconds_at(p: &wfc_ir::Path, field: &str, input: &Value, ctx: &Value) -> Result<Duration, Failure> {
    let Some(value) = io::select_opt(p, input, ctx) else {
        let doc = if p.root() == wfc_ir::Root::Context { ctx } else { input };
        return Err(Failure::runtime(io::invalid_path_message(p, doc)));
    };
    positive_seconds(field, p.as_str(), &value)
}

/// The value a TimeoutSecondsPath or HeartbeatSecondsPath (`field`, whose path is `text`)
/// selected, as a duration: a positive integer, else `States.Runtime`.
pub(crate) fn positive_seconds(field: &str, text: &str, value: &Value) -> Result<Duration, Failure> {
    match value.as_u64() {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(Failure::runtime(format!(
            "The {field} field refers to value {value} which is not a valid positive integer: {text}"
        ))),
    }
}

fn seconds_json(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs()))
}

/// A Task state: input processing, the handler call under TimeoutSeconds/HeartbeatSeconds with
/// panics caught, Retry, ResultSelector/ResultPath/OutputPath, and Catch.
///
/// `invoke` is called once per attempt with the effective input (after Parameters).
pub async fn task<'a, F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &TaskState,
    input: Value,
    invoke: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, TaskContext) -> Fut + Send + 'a,
    Fut: Future<Output = Result<Value, Failure>> + Send + 'a,
{
    task_with(exec, name, &Interpreted(spec), input, invoke).await
}

/// [`task`] for the interpreter, whose handlers return a boxed future already: it is used as it
/// is, where [`task_with`] would box it again (an allocation per attempt).
pub(crate) async fn task_boxed<'a, F>(
    exec: &Execution,
    name: &str,
    spec: &TaskState,
    input: Value,
    invoke: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, TaskContext) -> BoxFuture<'a, Result<Value, Failure>> + Send,
{
    task_visit(exec, name, Erased(Interpreted(spec)), input, invoke).await
}

/// One visit of a Task state whose data processing is `code`: its events, the retry loop with
/// its back-offs on the execution's clock, TimeoutSeconds and HeartbeatSeconds, callbacks
/// (`.waitForTaskToken`), `lambda:invoke` wrapping, Credentials, the payload limits, and Catch.
///
/// The interpreter's [`task`] (whose `code` reads the IR) and generated code (whose `code` is
/// compiled from the state's paths, templates and Retry/Catch tables) both run through here,
/// so their histories and failures are the same.
///
/// Not an `async fn`: the future it returns is [`task_visit`]'s, so the visit's (large) future
/// is built once where the caller awaits it rather than moved into a wrapper's.
pub fn task_with<'v, 'a, C, F, Fut>(
    exec: &'v Execution,
    name: &'v str,
    code: &'v C,
    input: Value,
    mut invoke: F,
) -> impl Future<Output = Result<Step, Failure>> + 'v
where
    C: TaskCode + Sync,
    F: FnMut(Value, TaskContext) -> Fut + Send + 'v,
    Fut: Future<Output = Result<Value, Failure>> + Send + 'a,
    'a: 'v,
{
    // The types are erased here, so the visit's body ([`task_inner`]) is one function whatever
    // the state: a machine of a hundred generated Tasks runs one copy of it, not a hundred.
    let invoke =
        move |input: Value, ctx: TaskContext| -> BoxFuture<'a, Result<Value, Failure>> { Box::pin(invoke(input, ctx)) };
    task_visit(exec, name, Erased(code), input, invoke)
}

/// A handler call with its type erased (one boxed future per attempt, as the interpreter's
/// handlers already are).
type Invoke<'i, 'a> = dyn FnMut(Value, TaskContext) -> BoxFuture<'a, Result<Value, Failure>> + Send + 'i;

/// [`task_with`] after type erasure: the span and the abort guard around [`task_inner`] (thin,
/// so its copies per Task type cost little).
async fn task_visit<'a, E, I>(
    exec: &Execution,
    name: &str,
    code: E,
    input: Value,
    mut invoke: I,
) -> Result<Step, Failure>
where
    E: ErasedTask + Sync,
    I: FnMut(Value, TaskContext) -> BoxFuture<'a, Result<Value, Failure>> + Send,
{
    let mut guard = AbortGuard { exec, name, event: EventType::TaskStateAborted, armed: true };
    // Without a subscriber for the span, the visit's future is awaited where it is built:
    // wrapping it moves it (a memcpy of the whole future, ~1,200 instructions a visit).
    let span = state_span(name, "Task");
    let outcome = if span.is_disabled() {
        task_inner(exec, name, &code, input, &mut invoke).await
    } else {
        // Boxed, so that the common path's future is the only one built in place.
        let instrumented = Box::pin(task_inner(exec, name, &code, input, &mut invoke).instrument(span));
        instrumented.await
    };
    // A Task whose failure leaves its Parallel branch is aborted with the branch, as AWS records
    // it; elsewhere the failure goes straight to the enclosing state or the execution.
    guard.armed = outcome.is_err() && exec.in_parallel_branch;
    drop(guard);
    outcome
}

/// A [`TaskCode`] seen without its table types, so [`task_inner`] is not generic.
struct Erased<C>(C);

/// What [`task_inner`] asks of a Task: [`TaskCode`], with Retry and Catch behind methods.
trait ErasedTask {
    fn code(&self) -> &(dyn TaskCodeView + Sync);
    fn decide(&self, retries: &mut RetryState, error: &str, rng: &mut StdRng) -> RetryDecision;
    fn retry_state(&self) -> RetryState;
    fn caught(&self, visit: &Visit<'_>, raw_input: Value, failure: Failure) -> Result<Step, Failure>;
    fn catches(&self, error: &str) -> bool;
    fn has_catchers(&self) -> bool;
}

/// The table-free part of [`TaskCode`], as a trait object.
trait TaskCodeView {
    fn resource(&self) -> &str;
    fn is_lambda_function(&self) -> bool;
    fn needs_context(&self) -> bool;
    fn shape(&self) -> TaskShape;
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure>;
    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure>;
    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure>;
    fn parameters_form(&self) -> ParametersForm;
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure>;
    fn finish_needs_context(&self) -> bool;
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure>;
    fn has_credentials(&self) -> bool;
    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure>;
    fn has_arguments(&self) -> bool;
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure>;
    fn assigns(&self) -> bool;
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure>;
    fn has_output(&self) -> bool;
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure>;
}

impl<C: TaskCode + ?Sized> TaskCodeView for C {
    fn resource(&self) -> &str {
        TaskCode::resource(self)
    }
    fn is_lambda_function(&self) -> bool {
        TaskCode::is_lambda_function(self)
    }
    fn needs_context(&self) -> bool {
        TaskCode::needs_context(self)
    }
    fn shape(&self) -> TaskShape {
        TaskCode::shape(self)
    }
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        TaskCode::input_path(self, raw, ctx)
    }
    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        TaskCode::timeout(self, effective, ctx)
    }
    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        TaskCode::heartbeat(self, effective, ctx)
    }
    fn parameters_form(&self) -> ParametersForm {
        TaskCode::parameters_form(self)
    }
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        TaskCode::parameters(self, exec, effective, ctx)
    }
    fn finish_needs_context(&self) -> bool {
        TaskCode::finish_needs_context(self)
    }
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        TaskCode::finish(self, exec, raw_input, result, ctx)
    }
    fn has_credentials(&self) -> bool {
        TaskCode::has_credentials(self)
    }
    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure> {
        TaskCode::role_arn(self, exec, effective, ctx)
    }
    fn has_arguments(&self) -> bool {
        TaskCode::has_arguments(self)
    }
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        TaskCode::arguments(self, exec, states)
    }
    fn assigns(&self) -> bool {
        TaskCode::assigns(self)
    }
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        TaskCode::assigned(self, exec, dollar, states)
    }
    fn has_output(&self) -> bool {
        TaskCode::has_output(self)
    }
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        TaskCode::output(self, exec, states)
    }
}

/// What [`Erased`] holds: a Task's code, by reference (generated code's) or by value (the
/// interpreter's, itself a reference to the IR), so the visit's future can own it.
trait HoldsCode {
    type Code: TaskCode + Sync;
    fn held(&self) -> &Self::Code;
}

impl<C: TaskCode + Sync> HoldsCode for &C {
    type Code = C;
    fn held(&self) -> &C {
        self
    }
}

impl<'s> HoldsCode for Interpreted<'s> {
    type Code = Interpreted<'s>;
    fn held(&self) -> &Interpreted<'s> {
        self
    }
}

impl<H: HoldsCode> ErasedTask for Erased<H> {
    fn code(&self) -> &(dyn TaskCodeView + Sync) {
        self.0.held()
    }
    fn decide(&self, retries: &mut RetryState, error: &str, rng: &mut StdRng) -> RetryDecision {
        retries.decide(self.0.held().retriers(), error, rng)
    }
    fn retry_state(&self) -> RetryState {
        RetryState::new(self.0.held().retriers())
    }
    fn caught(&self, visit: &Visit<'_>, raw_input: Value, failure: Failure) -> Result<Step, Failure> {
        caught(visit, self.0.held().catchers(), raw_input, failure)
    }
    fn catches(&self, error: &str) -> bool {
        retry::find_catcher(self.0.held().catchers(), error).is_some()
    }
    fn has_catchers(&self) -> bool {
        !self.0.held().catchers().is_empty()
    }
}

/// The data processing of one Task state, which [`task_with`] runs its visit around: what the
/// interpreter reads from the IR ([`task`]) and generated code compiles (`wfc_runtime::abi`).
/// Each method is one step of the state's pipeline; none of them records events.
pub trait TaskCode {
    /// A retrier of its `Retry` table.
    type Retrier: retry::RetryRule;
    /// A catcher of its `Catch` table.
    type Catcher: retry::CatchRule;
    /// `Resource`.
    fn resource(&self) -> &str;
    /// Whether `Resource` is a bare Lambda function ARN, whose attempts AWS records as
    /// `LambdaFunction*` events ([`crate::lambda::is_function_arn`]). Generated code answers
    /// with a constant, decided when the definition is compiled.
    fn is_lambda_function(&self) -> bool {
        crate::lambda::is_function_arn(self.resource())
    }
    /// `Retry`, in order.
    fn retriers(&self) -> &[Self::Retrier];
    /// `Catch`, in order.
    fn catchers(&self) -> &[Self::Catcher];
    /// Whether the state's processing (InputPath, OutputPath, the timeouts, JSONata Arguments,
    /// Output and Assign, Credentials) reads the context object on entry.
    fn needs_context(&self) -> bool {
        false
    }
    /// What the visit may skip, decided from the state's fields.
    fn shape(&self) -> TaskShape;
    /// InputPath on the raw input: the effective input (by default `$`, a copy).
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = ctx;
        Ok(raw.clone())
    }
    /// `TimeoutSeconds` or `TimeoutSecondsPath` (on the effective input); by default none.
    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// `HeartbeatSeconds` or `HeartbeatSecondsPath` (on the effective input); by default none.
    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// Whether there are Parameters, and when they are evaluated; by default there are none.
    fn parameters_form(&self) -> ParametersForm {
        ParametersForm::None
    }
    /// Parameters on the effective input (`ctx` is `null` unless the form reads it).
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, ctx);
        Ok(effective.clone())
    }
    /// Whether [`finish`](Self::finish) reads the context object beyond
    /// [`needs_context`](Self::needs_context) (a ResultSelector with `$$`).
    fn finish_needs_context(&self) -> bool {
        false
    }
    /// ResultSelector on the result, ResultPath into the raw input, OutputPath; by default none
    /// of them (ResultPath and OutputPath `$`): the result.
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, raw_input, ctx);
        Ok(result)
    }
    /// Whether the state has `Credentials` ([`role_arn`](Self::role_arn)).
    fn has_credentials(&self) -> bool {
        false
    }
    /// `Credentials`' role ARN, evaluated per attempt on the effective input (`$states.input`
    /// in a JSONata state) with the context object `ctx`; called only when
    /// [`has_credentials`](Self::has_credentials).
    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure> {
        let _ = (exec, effective, ctx);
        Err(Failure::runtime("the Task has no Credentials"))
    }
    /// Whether the state has JSONata `Arguments` ([`arguments`](Self::arguments)).
    fn has_arguments(&self) -> bool {
        false
    }
    /// JSONata `Arguments`, evaluated with `states` (`$states.input` is the raw input,
    /// `states.context` the context object of the attempt); called only when
    /// [`has_arguments`](Self::has_arguments).
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        let _ = exec;
        Ok(states.input.clone())
    }
    /// Whether the state has an `Assign` ([`assigned`](Self::assigned)).
    fn assigns(&self) -> bool {
        false
    }
    /// The `Assign` block's values, in the order written: a JSONPath block on `dollar` (the
    /// result) with the context object `states.context` (the variables as of entry); a JSONata
    /// block with `states` (`$states.input`, `$states.result`, `$states.context`).
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        let _ = (exec, dollar, states);
        Ok(Vec::new())
    }
    /// Whether the state has a JSONata `Output` ([`output`](Self::output)).
    fn has_output(&self) -> bool {
        false
    }
    /// JSONata `Output`, evaluated with `states` (as for [`assigned`](Self::assigned)); called
    /// only when [`has_output`](Self::has_output).
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        let _ = exec;
        Ok(states.result.cloned().unwrap_or(Value::Null))
    }
}

/// When a Task's Parameters are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParametersForm {
    /// No Parameters: the effective input is sent.
    None,
    /// Evaluated once per visit, without the context object.
    Once,
    /// Evaluated per attempt: the template reads the context object (`$$.State.RetryCount`,
    /// when `context`) or draws random values (`States.UUID`).
    PerAttempt {
        /// Whether it reads the context object.
        context: bool,
    },
}

/// The interpreter's [`TaskCode`]: the state's IR spec, evaluated by [`io`].
struct Interpreted<'s>(&'s TaskState);

impl TaskCode for Interpreted<'_> {
    type Retrier = wfc_ir::Retrier;
    type Catcher = wfc_ir::Catcher;

    fn resource(&self) -> &str {
        &self.0.resource
    }

    fn retriers(&self) -> &[wfc_ir::Retrier] {
        &self.0.retry
    }

    fn catchers(&self) -> &[wfc_ir::Catcher] {
        &self.0.catch
    }

    fn needs_context(&self) -> bool {
        let spec = self.0;
        io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
            || spec.arguments.is_some()
            || spec.output.is_some()
            || spec.assign.is_some()
            || matches!(spec.timeout, Some(Seconds::Jsonata(_)))
            || matches!(spec.heartbeat, Some(Seconds::Jsonata(_)))
            || spec.credentials.is_some()
    }

    fn shape(&self) -> TaskShape {
        TaskShape::of(self.0)
    }

    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        io::input_path(&self.0.input_path, raw, ctx).map(std::borrow::Cow::into_owned)
    }

    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        resolve_seconds(&self.0.timeout, "TimeoutSecondsPath", effective, ctx)
    }

    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        resolve_seconds(&self.0.heartbeat, "HeartbeatSecondsPath", effective, ctx)
    }

    fn parameters_form(&self) -> ParametersForm {
        match &self.0.parameters {
            None => ParametersForm::None,
            // A random intrinsic (States.UUID) gives each attempt a fresh value, as `$$` does.
            Some(t) if io::uses_context(t) || io::uses_randomness(t) => {
                ParametersForm::PerAttempt { context: io::uses_context(t) }
            }
            Some(_) => ParametersForm::Once,
        }
    }

    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        match &self.0.parameters {
            Some(t) => exec.with_rng(|rng| io::template(t, effective, ctx, rng)),
            None => Ok(effective.clone()),
        }
    }

    fn finish_needs_context(&self) -> bool {
        self.0.result_selector.as_ref().is_some_and(io::uses_context)
    }

    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let spec = self.0;
        finish_paths(exec, &spec.result_selector, &spec.result_path, &spec.output_path, raw_input, result, ctx)
    }

    fn has_credentials(&self) -> bool {
        self.0.credentials.is_some()
    }

    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure> {
        match &self.0.credentials {
            Some(c) => exec.with_rng(|rng| crate::credentials::role_arn(c, effective, ctx, rng)),
            None => Err(Failure::runtime("the Task has no Credentials")),
        }
    }

    fn has_arguments(&self) -> bool {
        self.0.arguments.is_some()
    }

    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match &self.0.arguments {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Arguments", states, rng)),
            None => Ok(states.input.clone()),
        }
    }

    fn assigns(&self) -> bool {
        self.0.assign.is_some()
    }

    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        match &self.0.assign {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, states, states.context, rng)),
            None => Ok(Vec::new()),
        }
    }

    fn has_output(&self) -> bool {
        self.0.output.is_some()
    }

    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match &self.0.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", states, rng)),
            None => Ok(states.result.cloned().unwrap_or(Value::Null)),
        }
    }
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
            self.exec.record_with(self.event, || name_details(self.name));
        }
    }
}

async fn task_inner(
    exec: &Execution,
    name: &str,
    erased: &(dyn ErasedTask + Sync),
    input: Value,
    invoke: &mut Invoke<'_, '_>,
) -> Result<Step, Failure> {
    let code = erased.code();
    let io_ctx = code.needs_context();
    // A Task that never builds its context object (nothing reads `$$` or the variables: no
    // context-reading path or template, no Credentials, no JSONata, no Assign, no catcher) has
    // no use for its entered time, so at the express level it reads no clock on entry.
    let builds_context = io_ctx
        || code.finish_needs_context()
        || code.has_credentials()
        || code.has_arguments()
        || code.assigns()
        || code.has_output()
        || matches!(code.parameters_form(), ParametersForm::PerAttempt { context: true })
        || erased.has_catchers();
    let mut visit = Visit::start_timed(exec, name, "Task", &input, builds_context)?;
    let visit_no = exec.next_visit(name);
    let resource = code.resource();
    let ctx = visit.context_if(io_ctx);
    let shape = code.shape();
    let mut input = input;
    let mut effective = if shape.input_moves {
        // Nothing reads the raw input after InputPath `$`: move it instead of copying it.
        std::mem::take(&mut input)
    } else {
        code.input_path(&input, &ctx).map_err(|f| visit.runtime(f))?
    };
    let timeout = code.timeout(&effective, &ctx).map_err(|f| visit.runtime(f))?;
    let heartbeat = code.heartbeat(&effective, &ctx).map_err(|f| visit.runtime(f))?;
    let parameters = Parameters::new(code, &effective, exec).map_err(|f| visit.runtime(f))?;
    let mut retries = erased.retry_state();
    let callback = crate::callback::is_callback_resource(resource);
    let events = AttemptEvents::of(code.is_lambda_function());
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        if callback {
            // Callbacks are boxed, so that the common visit's future does not carry their
            // (large) futures inline. (Bound first: a temporary in the awaited expression
            // would keep its space in this future.)
            let token =
                Box::pin(exec.task_token(name, visit_no, visit.retry_count, visit.entered_id, timeout, heartbeat));
            let token = token.await;
            visit.task_token = Some(token.map_err(|f| visit.runtime(f))?);
        }
        // Before the parameters: a single attempt may move the effective input into them.
        let role_arn = if code.has_credentials() {
            let ctx = visit.context();
            code.role_arn(exec, &effective, &ctx).map(Some)
        } else {
            Ok(None)
        };
        let params = role_arn.and_then(|role_arn| {
            if code.has_arguments() {
                let ctx = visit.context();
                code.arguments(exec, &Bindings::new(&input, &ctx))
            } else if shape.single_attempt && matches!(parameters, Parameters::None) && exec.redrive_count() == 0 {
                // No Retry: this is the only attempt, so the effective input itself is sent
                // (a redriven execution may run the visit again: see `rerun_for_redrive`).
                Ok(std::mem::take(&mut effective))
            } else {
                parameters.for_attempt(code, &effective, &visit)
            }
            .map(|params| (role_arn, params))
        });
        let (role_arn, params) = match params {
            Ok(evaluated) => evaluated,
            // A JSONata failure can be retried and caught, unlike a path failure.
            Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                let decision = exec.with_rng(|rng| erased.decide(&mut retries, &f.error, rng));
                // Boxed: a failed attempt's path, whose (large) future the common visit need not
                // carry (bound first, as the callback's).
                let decided = Box::pin(visit.retry_decided(visit_no, &retries, decision, f));
                if let Some(failure) = decided.await? {
                    return erased.caught(&visit, input, failure);
                }
                continue;
            }
            Err(f) => return Err(visit.runtime(f)),
        };
        // AWS limits the request a task is sent as it limits results. A request that is the
        // state's input as it came (InputPath `$`, no Parameters or Arguments) needs no second
        // check when that input had one.
        let request_is_input = shape.input_moves && matches!(parameters, Parameters::None) && !code.has_arguments();
        if !(request_is_input && visit.input_checked) {
            exec.limits().check_payload(name, &params).map_err(|f| visit.runtime(f))?;
        }
        // `lambda:invoke`: the parameters are the Invoke request; the function gets its Payload.
        // Boxed: rare, and held across the attempt's await.
        let lambda_invoke = if crate::lambda::is_invoke(resource) {
            Some(Box::new(crate::lambda::request(&params).map_err(|f| visit.runtime(f))?))
        } else {
            None
        };
        // A Payload Lambda refuses (text that is not JSON) fails the attempt without a call.
        let (lambda_payload, refused) = match lambda_invoke.as_ref().map(|i| i.event.clone()) {
            Some(Ok(event)) => (Some(event), None),
            Some(Err(f)) => (None, Some(f)),
            None => (None, None),
        };
        // A branch a redrive runs again after another's failure cancelled it records from its
        // first attempt that had not finished (see `Execution::muted_if_replayed`).
        exec.unmute_if_live(name, visit_no, visit.retry_count);
        exec.record_with(events.scheduled, || {
            let details = Details::with_capacity(5).with("resource", json!(resource));
            let mut details = if events.lambda {
                // AWS's LambdaFunctionScheduled: the function's input, and only the limits set.
                let d = details.with_shared("input", exec.share(&params));
                match timeout {
                    Some(t) => d.with("timeoutInSeconds", json!(t.as_secs())),
                    None => d,
                }
            } else {
                details
                    .with_shared("parameters", exec.share(&params))
                    .with("timeoutInSeconds", seconds_json(timeout))
                    .with("heartbeatInSeconds", seconds_json(heartbeat))
            };
            if let Some(arn) = &role_arn {
                details.insert("taskCredentials", json!({ "roleArn": arn }));
            }
            details
        });
        let task_ctx = TaskContext::new(name, resource, visit.retry_count, exec.task_execution_name());
        let task_ctx = match role_arn {
            Some(arn) => task_ctx.with_role_arn(arn),
            None => task_ctx,
        };
        let task_ctx = match exec.stored_execution_name() {
            Some(stored) => task_ctx.with_stored_execution(stored),
            None => task_ctx,
        };
        let task_ctx = match &lambda_invoke {
            Some(invoke) => task_ctx.with_function_name(invoke.function_name.clone()),
            None => task_ctx,
        };
        exec.record_with(events.started, || {
            if events.lambda { Details::new() } else { Details::with_capacity(1).with("resource", json!(resource)) }
        });
        let outcome = match &visit.task_token {
            Some(token) => {
                // A callback: the handler only hands the token on (its result is ignored); the
                // heartbeat applies to the wait for the answer that follows.
                let task_ctx = task_ctx.with_task_token(token.clone());
                let call_ctx = task_ctx.clone();
                let sent = lambda_payload.unwrap_or_else(|| params.clone());
                let handler = crate::task::run_attempt(|| invoke(sent, call_ctx), &task_ctx, timeout, None);
                let waited = Box::pin(exec.callback_attempt(
                    name,
                    visit_no,
                    visit.retry_count,
                    token,
                    params,
                    handler,
                    timeout,
                    heartbeat,
                ));
                waited.await.map_err(|f| visit.runtime(f))?
            }
            None => {
                // Built in a block of its own: what goes into the attempt's future is moved
                // there, and its locals end before the await, so this (large) visit's future
                // keeps no room for them.
                let journaled = {
                    let call_ctx = task_ctx.clone();
                    // What the handler gets (for `lambda:invoke`, the Payload) is also what a
                    // suspending journal reports, so an SWF activity receives the same input.
                    let sent = lambda_payload.unwrap_or(params);
                    // A refused Payload fails before any call: there is nothing for a remote
                    // worker (an SWF activity, a Lambda step) to run, so the attempt fails here,
                    // journaled like any other.
                    let request = match refused {
                        Some(_) => None,
                        None => exec.step_request(resource, &sent, timeout, heartbeat),
                    };
                    let attempt = match refused {
                        Some(f) => futures::future::Either::Left(std::future::ready(Attempt::Failed(f))),
                        None => futures::future::Either::Right(crate::task::run_attempt(
                            || invoke(sent, call_ctx),
                            &task_ctx,
                            timeout,
                            heartbeat,
                        )),
                    };
                    exec.journaled_attempt(name, visit_no, visit.retry_count, request, attempt)
                };
                journaled.await.map_err(|f| visit.runtime(f))?
            }
        };
        let failure = match outcome {
            Attempt::Succeeded(result) => {
                let result = match &lambda_invoke {
                    Some(request) => crate::lambda::response(result, request, exec.clock().now()),
                    None => result,
                };
                // Checked before the result is recorded or processed: a result that is too
                // large or too deep is terminal, and AWS names the resource that returned it.
                exec.limits().check_payload(resource, &result).map_err(|f| visit.runtime(f))?;
                exec.record_with(events.succeeded, || {
                    events.details(resource, Details::with_capacity(2).with_shared("output", exec.share(&result)))
                });
                let assign_code = |dollar: &Value, states: &Bindings<'_>| code.assigned(exec, dollar, states);
                let output_code = |states: &Bindings<'_>| code.output(exec, states);
                let language = Language {
                    assign: code.assigns().then_some(AssignRef::Code(&assign_code)),
                    output: code.has_output().then_some(OutputRef::Code(&output_code)),
                };
                if language.is_plain() && shape.result_is_output {
                    // The output is the result just checked against the same limits.
                    visit.exit(&result);
                    return Ok(Step::Next(result));
                }
                let finish = Finish {
                    needs_ctx: io_ctx || code.finish_needs_context(),
                    run: &|raw: Value, result: Value, ctx: &Value| code.finish(exec, raw, result, ctx),
                };
                // The state's input, kept for a rerun in a redriven execution (the processing
                // takes it).
                let kept_input = (exec.redrive_count() > 0).then(|| input.clone());
                match finish_success(&visit, language, finish, &mut input, result) {
                    Ok(Ok(output)) => return Ok(Step::Next(output)),
                    Ok(Err(failure)) => failure,
                    // A path error in the result's processing ended the execution (no retrier or
                    // catcher takes `States.Runtime`): redriven, the Task state runs again.
                    Err(failure) if exec.rerun_for_redrive(name, visit_no, visit.retry_count) => {
                        input = kept_input.unwrap_or(input);
                        let generation = exec.redrive_generation(name, visit_no);
                        exec.record(EventType::ExecutionFailed, failure_details(&failure));
                        exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": generation }));
                        exec.unmute_if_live(name, visit_no, 0);
                        retries = erased.retry_state();
                        continue;
                    }
                    Err(failure) => return Err(failure),
                }
            }
            Attempt::Failed(f) => {
                exec.record_with(events.failed, || events.details(resource, failure_details(&f)));
                f
            }
            Attempt::TimedOut(f) => {
                exec.record_with(events.timed_out, || events.details(resource, failure_details(&f)));
                f
            }
        };
        let decision = exec.with_rng(|rng| erased.decide(&mut retries, &failure.error, rng));
        // Boxed, as above.
        let decided = Box::pin(visit.retry_decided(visit_no, &retries, decision, failure));
        if let Some(failure) = decided.await? {
            // A redriven execution runs this visit again when its failure ended the execution.
            if !erased.catches(&failure.error) && exec.rerun_for_redrive(name, visit_no, visit.retry_count) {
                // The history goes on as it was: how the execution ended, then its redrive (the
                // generation this visit now runs in). Inside a reopened Parallel or Map, the
                // attempt recorded them (see `Execution::record_reopened`): this line records
                // again from the redrive it was rerun for last.
                let generation = exec.redrive_generation(name, visit_no);
                exec.record(EventType::ExecutionFailed, failure_details(&failure));
                exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": generation }));
                exec.unmute_if_live(name, visit_no, 0);
                retries = erased.retry_state();
                continue;
            }
            return erased.caught(&visit, input, failure);
        }
    }
}

/// The events a Task attempt records: `LambdaFunction*` for a bare Lambda function ARN, as AWS
/// records them (no `resource` in the outcome events, `input` instead of `parameters`), else
/// `Task*`.
#[derive(Clone, Copy)]
struct AttemptEvents {
    lambda: bool,
    scheduled: EventType,
    started: EventType,
    succeeded: EventType,
    failed: EventType,
    timed_out: EventType,
}

impl AttemptEvents {
    fn of(lambda_function: bool) -> AttemptEvents {
        if lambda_function {
            AttemptEvents {
                lambda: true,
                scheduled: EventType::LambdaFunctionScheduled,
                started: EventType::LambdaFunctionStarted,
                succeeded: EventType::LambdaFunctionSucceeded,
                failed: EventType::LambdaFunctionFailed,
                timed_out: EventType::LambdaFunctionTimedOut,
            }
        } else {
            AttemptEvents {
                lambda: false,
                scheduled: EventType::TaskScheduled,
                started: EventType::TaskStarted,
                succeeded: EventType::TaskSucceeded,
                failed: EventType::TaskFailed,
                timed_out: EventType::TaskTimedOut,
            }
        }
    }

    /// An outcome event's details: `fields`, plus the resource on `Task*` events.
    fn details(&self, resource: &str, fields: Details) -> Details {
        if self.lambda { fields } else { fields.with("resource", json!(resource)) }
    }
}

/// `{"error", "cause"}` of a failure event, leaving out an empty error or cause as AWS leaves
/// out an absent one (a Fail state without `Error`, a timeout without a cause).
pub(crate) fn failure_details(f: &Failure) -> Details {
    let mut details = Details::with_capacity(3);
    if !f.error.is_empty() {
        details.insert("error", json!(f.error));
    }
    if !f.cause.is_empty() {
        details.insert("cause", json!(f.cause));
    }
    details
}

/// What a Task's fields let [`task_with`] skip (generated code builds it at compile time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskShape {
    /// InputPath `$`, and nothing reads the raw input afterwards (ResultPath `$` discards it,
    /// and there is no catcher to place an error in it).
    pub input_moves: bool,
    /// No Retry: one attempt at most.
    pub single_attempt: bool,
    /// No ResultSelector, ResultPath `$` and OutputPath `$`: the output is the task's result.
    pub result_is_output: bool,
}

impl TaskShape {
    fn of(spec: &TaskState) -> TaskShape {
        let identity = |p: &Option<wfc_ir::Path>| p.as_ref().is_some_and(wfc_ir::Path::is_identity);
        let result_replaces = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
        // JSONata Arguments/Output and Assign read the raw input (`$states.input`).
        let plain = spec.arguments.is_none() && spec.output.is_none() && spec.assign.is_none();
        TaskShape {
            input_moves: plain && identity(&spec.input_path) && result_replaces && spec.catch.is_empty(),
            single_attempt: spec.retry.is_empty(),
            result_is_output: spec.result_selector.is_none() && result_replaces && identity(&spec.output_path),
        }
    }
}

/// Parameters for each attempt: evaluated once when the template cannot change between
/// attempts, or per attempt when it reads `$$` (for `$$.State.RetryCount`).
enum Parameters {
    /// No Parameters: the effective input itself.
    None,
    /// Evaluated once.
    Fixed(Value),
    /// Evaluated per attempt, with the context object when it reads it.
    PerAttempt { context: bool },
}

impl Parameters {
    fn new<C: ParametersCode + ?Sized>(code: &C, effective: &Value, exec: &Execution) -> Result<Parameters, Failure> {
        Ok(match code.form() {
            ParametersForm::None => Parameters::None,
            ParametersForm::PerAttempt { context } => Parameters::PerAttempt { context },
            ParametersForm::Once => Parameters::Fixed(code.evaluate(exec, effective, &Value::Null)?),
        })
    }

    fn for_attempt<C: ParametersCode + ?Sized>(
        &self,
        code: &C,
        effective: &Value,
        visit: &Visit<'_>,
    ) -> Result<Value, Failure> {
        match self {
            Parameters::None => Ok(effective.clone()),
            Parameters::Fixed(v) => Ok(v.clone()),
            Parameters::PerAttempt { context } => {
                let ctx = visit.context_if(*context);
                code.evaluate(visit.exec, effective, &ctx)
            }
        }
    }
}

/// Where [`Parameters`] come from: a Task's [`TaskCode`], or a Parallel's or Map's template.
trait ParametersCode {
    fn form(&self) -> ParametersForm;
    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure>;
}

impl ParametersCode for dyn TaskCodeView + Sync + '_ {
    fn form(&self) -> ParametersForm {
        self.parameters_form()
    }

    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        self.parameters(exec, effective, ctx)
    }
}

/// A Parallel's or Map's Parameters template, evaluated by [`io`].
struct TemplateParameters<'t>(Option<&'t Template>);

impl ParametersCode for TemplateParameters<'_> {
    fn form(&self) -> ParametersForm {
        match self.0 {
            None => ParametersForm::None,
            Some(t) if io::uses_context(t) || io::uses_randomness(t) => {
                ParametersForm::PerAttempt { context: io::uses_context(t) }
            }
            Some(_) => ParametersForm::Once,
        }
    }

    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        match self.0 {
            Some(t) => exec.with_rng(|rng| io::template(t, effective, ctx, rng)),
            None => Ok(effective.clone()),
        }
    }
}

/// ResultSelector (on the raw result), ResultPath (into the raw input), OutputPath, as the IR
/// says: what an interpreted Task, and every Parallel and Map, finish with.
fn finish_paths(
    exec: &Execution,
    selector: &Option<Template>,
    result_path: &ResultPath,
    output_path: &OutputPath,
    raw_input: Value,
    result: Value,
    ctx: &Value,
) -> Result<Value, Failure> {
    let result = match selector {
        Some(t) => exec.with_rng(|rng| io::template(t, &result, ctx, rng))?,
        None => result,
    };
    let output = io::result_path(result_path, raw_input, result)?;
    io::output_path(output_path, output, ctx)
}

/// How a successful attempt's result becomes the state's output (ResultSelector, ResultPath,
/// OutputPath), for [`finish_success`].
#[derive(Clone, Copy)]
struct Finish<'f> {
    /// Whether `run` reads the context object.
    needs_ctx: bool,
    /// From the raw input, the result and the context object (`null` unless `needs_ctx`).
    run: &'f dyn Fn(Value, Value, &Value) -> Result<Value, Failure>,
}

impl Finish<'_> {
    fn output(&self, visit: &Visit<'_>, raw_input: Value, result: Value) -> Result<Value, Failure> {
        let ctx = visit.context_if(self.needs_ctx);
        (self.run)(raw_input, result, &ctx)
    }
}

/// A state's `Assign` and JSONata `Output`, for [`finish_success`].
#[derive(Clone, Copy)]
struct Language<'s> {
    assign: Option<AssignRef<'s>>,
    output: Option<OutputRef<'s>>,
}

/// A function of the `$states` bindings, for [`AssignRef`] and [`OutputRef`].
type StatesFn<'s, T> = dyn Fn(&Bindings<'_>) -> Result<T, Failure> + 's;

/// A Task's, Parallel's or Map's `Assign` block as its visit evaluates it: the state's code
/// (`TaskCode::assigned`, `NestedCode::assigned`, reading the IR in the interpreter, compiled in
/// generated code), called with what `$` means and the `$states` bindings (whose `context` is
/// the context object).
#[derive(Clone, Copy)]
enum AssignRef<'s> {
    Code(&'s (dyn Fn(&Value, &Bindings<'_>) -> Result<Assigned, Failure> + 's)),
}

/// A Task's, Parallel's or Map's JSONata `Output` as its visit evaluates it: the state's code
/// (`TaskCode::output`, `NestedCode::output`).
#[derive(Clone, Copy)]
enum OutputRef<'s> {
    Code(&'s StatesFn<'s, Value>),
}

impl Language<'_> {
    /// Neither Assign nor Output: the plain JSONPath pipeline.
    fn is_plain(&self) -> bool {
        self.assign.is_none() && self.output.is_none()
    }
}

/// The end of a successful Task, Parallel or Map attempt: ResultSelector, ResultPath and
/// OutputPath, or (with `Assign` or a JSONata `Output`) [`finish_with_language`].
///
/// `Ok(Ok(output))` ends the state. `Ok(Err(failure))` is a JSONata failure, which (unlike a
/// path failure) goes through Retry and Catch, so the attempt loop still needs the raw input:
/// it is taken (not copied) only on the plain path, which always ends the state. `Err` is
/// terminal.
fn finish_success(
    visit: &Visit<'_>,
    language: Language<'_>,
    finish: Finish<'_>,
    raw_input: &mut Value,
    result: Value,
) -> Result<Result<Value, Failure>, Failure> {
    if language.is_plain() {
        let raw_input = std::mem::take(raw_input);
        let output = finish.output(visit, raw_input, result).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        return Ok(Ok(output));
    }
    match finish_with_language(visit, language, finish, raw_input, result) {
        Ok(output) => Ok(Ok(output)),
        Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => Ok(Err(f)),
        Err(f) => Err(f),
    }
}

/// `Assign` (against the variables as of entry; `$` is the raw result), then the output (JSONata
/// `Output`, or ResultSelector, ResultPath and OutputPath), then the new variables are committed
/// and the state exits.
fn finish_with_language(
    visit: &Visit<'_>,
    language: Language<'_>,
    finish: Finish<'_>,
    raw_input: &Value,
    result: Value,
) -> Result<Value, Failure> {
    let ctx = visit.context();
    let b = Bindings { result: Some(&result), ..Bindings::new(raw_input, &ctx) };
    let assigned = match language.assign {
        Some(AssignRef::Code(code)) => Some(code(&result, &b)?),
        None => None,
    };
    let output = match language.output {
        Some(OutputRef::Code(code)) => code(&b)?,
        None => finish.output(visit, raw_input.clone(), result.clone()).map_err(|f| visit.runtime(f))?,
    };
    visit.finish_assigned(&output, assigned)?;
    Ok(output)
}

impl Visit<'_> {
    /// After a failed attempt of a Task, Parallel or Map: when a retrier matches, waits out its
    /// back-off on the execution's clock and returns `None` (run the attempt again); otherwise
    /// hands the failure back for [`caught`].
    async fn retry_after<R: retry::RetryRule>(
        &self,
        visit_no: u32,
        retries: &mut RetryState,
        retriers: &[R],
        failure: Failure,
    ) -> Result<Option<Failure>, Failure> {
        let decision = self.exec.with_rng(|rng| retries.decide(retriers, &failure.error, rng));
        self.retry_decided(visit_no, retries, decision, failure).await
    }

    /// [`retry_after`](Self::retry_after) once the retry driver has decided.
    async fn retry_decided(
        &self,
        visit_no: u32,
        retries: &RetryState,
        decision: RetryDecision,
        failure: Failure,
    ) -> Result<Option<Failure>, Failure> {
        match decision {
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

/// After a Parallel's branches or a Map's iterations failed and retries are exhausted: records
/// the state's `ParallelStateFailed`/`MapStateFailed` (after `EvaluationFailed` when a JSONata
/// failure ends the execution, as AWS orders them), then [`caught`]. Only the last attempt
/// records it: AWS records none for an attempt that is retried.
fn state_failed<C: retry::CatchRule>(
    visit: &Visit<'_>,
    event: EventType,
    catchers: &[C],
    raw_input: Value,
    failure: Failure,
) -> Result<Step, Failure> {
    let uncaught = retry::find_catcher(catchers, &failure.error).is_none();
    let failure = if uncaught && failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR {
        visit.runtime(failure)
    } else {
        failure
    };
    visit.exec.record_with(event, || name_details(visit.name));
    caught(visit, catchers, raw_input, failure)
}

/// After retries are exhausted: the first matching catcher, or the failure itself.
fn caught<C: retry::CatchRule>(
    visit: &Visit<'_>,
    catchers: &[C],
    raw_input: Value,
    failure: Failure,
) -> Result<Step, Failure> {
    let Some(catcher) = retry::find_catcher(catchers, &failure.error) else {
        // A JSONata failure that nothing caught ends the execution with AWS's prefix.
        return Err(if failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR {
            visit.runtime(failure)
        } else {
            failure
        });
    };
    if let Some(assign) = catcher.assign_code() {
        // As below: the Assign on the Error Output first, then the catcher's ResultPath.
        let error_output = failure.to_error_output();
        let ctx = visit.context();
        let assigned = assign(visit.exec, &error_output, &ctx).map_err(|f| visit.runtime(f))?;
        let output = catcher.output(raw_input, &failure).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, Some(assigned))?;
        return Ok(Step::Goto { target: catcher.next(), output });
    }
    if let Some(code) = catcher.jsonata_code() {
        return caught_language(
            visit,
            code.catcher.next,
            raw_input,
            failure,
            |_, b| code.assign.map(|assign| assign(visit.exec, b)).transpose(),
            |b| code.output.map(|output| output(visit.exec, b)),
            |raw, failure| retry::CatchRule::output(&code.catcher, raw, failure),
        );
    }
    let Some(catcher) = catcher.with_language() else {
        let output = catcher.output(raw_input, &failure).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        return Ok(Step::Goto { target: catcher.next(), output });
    };
    caught_language(
        visit,
        catcher.next,
        raw_input,
        failure,
        |error_output, b| visit.assign(catcher.assign.as_ref(), error_output, b),
        |b| catcher.output.as_ref().map(|t| visit.jsonata(t, "Output", b)),
        |raw, failure| retry::catch_output(catcher, raw, failure),
    )
}

/// A catcher with `Assign` or a JSONata `Output`, the IR's or compiled: `assign` (on the Error
/// Output, `$`, and the `$states` bindings; `None` without an `Assign`), then `output` (`None`
/// without an `Output`: `result_path` places the Error Output in the raw input), then the
/// Exited event and the new variables. The state's own Assign is not evaluated.
fn caught_language(
    visit: &Visit<'_>,
    next: StateId,
    raw_input: Value,
    failure: Failure,
    assign: impl FnOnce(&Value, &Bindings<'_>) -> Result<Option<Assigned>, Failure>,
    output: impl FnOnce(&Bindings<'_>) -> Option<Result<Value, Failure>>,
    result_path: impl FnOnce(Value, &Failure) -> Result<Value, Failure>,
) -> Result<Step, Failure> {
    // A catcher's Assign and Output see the Error Output (`$`, `$states.errorOutput`).
    let error_output = failure.to_error_output();
    let ctx = visit.context();
    let b = Bindings { error_output: Some(&error_output), ..Bindings::new(&raw_input, &ctx) };
    let assigned = assign(&error_output, &b).map_err(|f| visit.runtime(f))?;
    let output = match output(&b) {
        Some(evaluated) => evaluated.map_err(|f| visit.runtime(f))?,
        None => result_path(raw_input.clone(), &failure).map_err(|f| visit.runtime(f))?,
    };
    visit.finish_assigned(&output, assigned)?;
    Ok(Step::Goto { target: next, output })
}

/// The index of the first rule of `spec` that matches the effective input, in the order written.
fn first_matching_rule(spec: &ChoiceState, effective: &Value, ctx: &Value) -> Result<Option<usize>, Failure> {
    for (i, rule) in spec.choices.iter().enumerate() {
        if choice::evaluate(&rule.condition, effective, ctx)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// A Choice state. No match and no Default is `States.NoChoiceMatched`.
pub fn choice(exec: &Execution, name: &str, spec: &ChoiceState, input: Value) -> Result<Chosen, Failure> {
    let language = spec.assign.is_some()
        || spec.output.is_some()
        || spec.choices.iter().any(|c| c.assign.is_some() || c.output.is_some());
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || spec.choices.iter().any(|c| choice::uses_context(&c.condition))
        || language;
    let identity = |p: &Option<wfc_ir::Path>| p.as_ref().is_some_and(wfc_ir::Path::is_identity);
    if !language && identity(&spec.input_path) && identity(&spec.output_path) {
        return choice_kept_with(exec, name, needs_ctx, input, spec.default.is_some(), |input, ctx| {
            first_matching_rule(spec, input, ctx)
        });
    }
    if !language {
        return choice_with(
            exec,
            name,
            needs_ctx,
            input,
            spec.default.is_some(),
            |input, ctx| io::input_path_owned(&spec.input_path, input, ctx),
            |effective, ctx| first_matching_rule(spec, effective, ctx),
            |effective, ctx| io::output_path(&spec.output_path, effective, ctx),
        );
    }
    choice_language_with(
        exec,
        name,
        needs_ctx,
        input,
        spec.default.is_some(),
        |input, ctx| io::input_path_owned(&spec.input_path, input, ctx),
        |effective, ctx| first_matching_rule(spec, effective, ctx),
        |branch, raw, effective, ctx| {
            // The matched rule's Assign and Output; the state's own only on the Default path.
            let (assign, output_template) = match branch.and_then(|i| spec.choices.get(i)) {
                Some(rule) => (rule.assign.as_ref(), rule.output.as_ref()),
                None => (spec.assign.as_ref(), spec.output.as_ref()),
            };
            let b = Bindings::new(raw, ctx);
            let assigned = match assign {
                Some(assign) => Some(exec.with_rng(|rng| variables::evaluate(assign, &effective, &b, ctx, rng))?),
                None => None,
            };
            let output = match output_template {
                Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
                None => io::output_path(&spec.output_path, effective, ctx)?,
            };
            Ok((output, assigned))
        },
    )
}

/// One visit of a Choice state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` or `Output`): as [`choice_with`], then `finish`, given the chosen rule (`None`: the
/// Default), the raw input (`$states.input`), the effective input and the context object,
/// gives the output and the chosen block's assigned values (`None`: it has no `Assign`), which
/// the Exited event records and which are visible from the next state on.
///
/// The interpreter's [`choice`] and generated code (whose `rules` are Rust conditions and
/// JSONata `Condition`s, and whose `finish` is compiled from each rule's `Output` and
/// `Assign`) both go through here.
#[allow(clippy::too_many_arguments, clippy::type_complexity)] // each argument is one step of the state, in order
pub fn choice_language_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    finish: impl FnOnce(Option<usize>, &Value, Value, &Value) -> Result<(Value, Option<Assigned>), Failure>,
) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Choice", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        // A JSONata Output or Assign sees the raw input as `$states.input`.
        let raw = input.clone();
        let effective = input_path(input, &ctx).map_err(|f| visit.runtime(f))?;
        let branch = rules(&effective, &ctx).map_err(|f| visit.runtime(f))?;
        if branch.is_none() && !has_default {
            return Err(no_choice_matched(name));
        }
        let (output, assigned) = finish(branch, &raw, effective, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(Chosen { branch, output })
    })
}

fn no_choice_matched(name: &str) -> Failure {
    Failure::new(
        wfc_ir::errors::NO_CHOICE_MATCHED,
        format!("No Choice rule matched the input of state '{name}', and it has no Default"),
    )
}

/// One visit of a Choice state without `Assign` or JSONata `Output`: records its Entered and
/// Exited events around the three steps, each given the context object (`null` unless
/// `needs_ctx`): `input_path` makes the effective input from the raw one, `rules` returns the
/// index of the first rule that holds for it (`None`: none does), and `output_path` makes the
/// output. No match without a Default (`has_default` false) is `States.NoChoiceMatched`.
///
/// The interpreter's [`choice`] and generated code (whose `rules` are Rust conditions) both go
/// through here, so their histories are the same.
#[allow(clippy::too_many_arguments)] // each argument is one step of the state, in order
pub fn choice_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    output_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Chosen, Failure> {
    let no_assign: Option<fn(Option<usize>, &Value, &Value) -> Result<Option<Assigned>, Failure>> = None;
    choice_visit(exec, name, needs_ctx, input, has_default, input_path, rules, no_assign, output_path)
}

/// [`choice_with`] for a Choice with InputPath and OutputPath `$` (and no `Assign`): its output
/// is its input, so unless this is the first state of its line (see [`Line`]) the output is not
/// checked against the payload limits again.
///
/// The interpreter's [`choice`] and generated code both go through here for such a Choice.
pub fn choice_kept_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Choice", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let branch = rules(&input, &ctx).map_err(|f| visit.runtime(f))?;
        if branch.is_none() && !has_default {
            return Err(no_choice_matched(name));
        }
        visit.finish_unchanged(&input)?;
        Ok(Chosen { branch, output: input })
    })
}

/// One visit of a JSONPath Choice state with `Assign` (its own, or a rule's): as
/// [`choice_with`], with `assign` giving, for the chosen rule (`None`: the Default), the values
/// of its `Assign` block (`None` when it has none) on the effective input, evaluated after the
/// rules and before OutputPath, as [`choice`] does. The Exited event records them as
/// `assignedVariables`; they are visible from the next state on.
#[allow(clippy::too_many_arguments)] // each argument is one step of the state, in order
pub fn choice_assign_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    assign: impl FnOnce(Option<usize>, &Value, &Value) -> Result<Option<Assigned>, Failure>,
    output_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Chosen, Failure> {
    choice_visit(exec, name, needs_ctx, input, has_default, input_path, rules, Some(assign), output_path)
}

/// The visit [`choice_with`] and [`choice_assign_with`] share. Inlined into both, so a Choice
/// without `Assign` (`assign` is `None`) compiles to no Assign step at all (no no-op closure
/// call, no `finish_assigned`): the hot path of the counting loop stays as it was.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // as choice_assign_with
fn choice_visit(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    assign: Option<impl FnOnce(Option<usize>, &Value, &Value) -> Result<Option<Assigned>, Failure>>,
    output_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Choice", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let effective = input_path(input, &ctx).map_err(|f| visit.runtime(f))?;
        let branch = rules(&effective, &ctx).map_err(|f| visit.runtime(f))?;
        if branch.is_none() && !has_default {
            return Err(no_choice_matched(name));
        }
        let Some(assign) = assign else {
            let output = output_path(effective, &ctx).map_err(|f| visit.runtime(f))?;
            visit.finish(&output)?;
            return Ok(Chosen { branch, output });
        };
        let assigned = assign(branch, &effective, &ctx).map_err(|f| visit.runtime(f))?;
        let output = output_path(effective, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
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
        WaitDuration::SecondsJsonata(e) => wait_seconds_jsonata(exec, e, &Bindings::new(input, ctx))?,
        WaitDuration::TimestampJsonata(e) => wait_timestamp_jsonata(exec, e, &Bindings::new(input, ctx))?,
        WaitDuration::Seconds(s) => Duration::from_secs(*s),
        WaitDuration::Timestamp(text) => match wfc_ir::timestamp::parse(text) {
            Ok(ts) => exec.clock().until(ts),
            Err(_) => {
                return Err(Failure::runtime(format!(
                    "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {text}"
                )));
            }
        },
        WaitDuration::SecondsPath(p) => wait_seconds_at(p.as_str(), io::select_opt(p, input, ctx).as_ref())?,
        WaitDuration::TimestampPath(p) => wait_timestamp_at(exec, p.as_str(), io::select_opt(p, input, ctx).as_ref())?,
    };
    wait_limit(delay)
}

/// A Wait's JSONata `Seconds`: a non-negative integer, else `States.QueryEvaluationError`.
pub(crate) fn wait_seconds_jsonata(
    exec: &Execution,
    expr: &wfc_ir::JsonataExpr,
    b: &Bindings<'_>,
) -> Result<Duration, Failure> {
    let value = exec.with_rng(|rng| jsonata::evaluate(expr, "Seconds", b, rng))?;
    match value.as_u64() {
        Some(s) => Ok(Duration::from_secs(s)),
        None => Err(jsonata::unexpected_type(expr.as_str(), "Seconds", "non-negative integer", &value)),
    }
}

/// A Wait's JSONata `Timestamp`: the time from now until then on the execution's clock; a value
/// that is not an ASL timestamp is `States.QueryEvaluationError`.
pub(crate) fn wait_timestamp_jsonata(
    exec: &Execution,
    expr: &wfc_ir::JsonataExpr,
    b: &Bindings<'_>,
) -> Result<Duration, Failure> {
    let value = exec.with_rng(|rng| jsonata::evaluate(expr, "Timestamp", b, rng))?;
    match value.as_str().map(wfc_ir::timestamp::parse) {
        Some(Ok(ts)) => Ok(exec.clock().until(ts)),
        _ => Err(jsonata::query_error(format!(
            "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {}",
            bare(&value)
        ))),
    }
}

/// A Wait's delay within [`MAX_WAIT`], else AWS's `States.Runtime`.
pub(crate) fn wait_limit(delay: Duration) -> Result<Duration, Failure> {
    if delay > MAX_WAIT {
        return Err(Failure::runtime("Wait state delay is too long."));
    }
    Ok(delay)
}

/// What a `SecondsPath` (whose text is `text`) selected, `None` when nothing: the delay.
pub(crate) fn wait_seconds_at(text: &str, value: Option<&Value>) -> Result<Duration, Failure> {
    let Some(value) = value else {
        return Err(Failure::runtime(format!("The SecondsPath parameter does not reference an input value: {text}")));
    };
    match (value.as_u64(), value.as_i64()) {
        (Some(s), _) => Ok(Duration::from_secs(s)),
        (None, Some(_)) => Err(Failure::runtime(format!(
            "The SecondsPath parameter references a negative value: {} == {}",
            text,
            bare(value)
        ))),
        (None, None) => Err(Failure::runtime(format!(
            "The SecondsPath parameter cannot be parsed as a long value: {} == {}",
            text,
            bare(value)
        ))),
    }
}

/// What a `TimestampPath` (whose text is `text`) selected, `None` when nothing: the time from
/// now on the execution's clock until then.
pub(crate) fn wait_timestamp_at(exec: &Execution, text: &str, value: Option<&Value>) -> Result<Duration, Failure> {
    let Some(value) = value else {
        return Err(Failure::runtime(format!("The TimestampPath parameter does not reference an input value: {text}")));
    };
    match value.as_str().map(wfc_ir::timestamp::parse) {
        Some(Ok(ts)) => Ok(exec.clock().until(ts)),
        _ => Err(Failure::runtime(format!(
            "The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: {} == {}",
            text,
            bare(value)
        ))),
    }
}

/// A Wait state, on the execution's clock.
pub async fn wait(exec: &Execution, name: &str, spec: &WaitState, input: Value) -> Result<Value, Failure> {
    let language = spec.assign.is_some() || spec.output.is_some();
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || matches!(&spec.duration, WaitDuration::SecondsPath(p) | WaitDuration::TimestampPath(p) if p.root() != wfc_ir::Root::Input)
        || matches!(&spec.duration, WaitDuration::SecondsJsonata(_) | WaitDuration::TimestampJsonata(_))
        || language;
    if !language {
        return wait_with(exec, name, needs_ctx, input, |input, ctx| {
            let effective = io::input_path_owned(&spec.input_path, input, ctx)?;
            let delay = wait_delay(exec, &spec.duration, &effective, ctx)?;
            Ok((io::output_path(&spec.output_path, effective, ctx)?, delay))
        })
        .await;
    }
    if let (Some(assign @ Assign::JsonPath(_)), None) = (&spec.assign, &spec.output) {
        return wait_assign_with(exec, name, input, |input, ctx| {
            let effective = io::input_path_owned(&spec.input_path, input, ctx)?;
            let delay = wait_delay(exec, &spec.duration, &effective, ctx)?;
            // Assign is computed before the wait, against the variables as of entry.
            let assigned = assign_jsonpath(exec, assign, &effective, ctx)?;
            Ok((io::output_path(&spec.output_path, effective, ctx)?, assigned, delay))
        })
        .await;
    }
    wait_language_with(exec, name, needs_ctx, input, |input, ctx| {
        let raw = input.clone();
        let effective = io::input_path_owned(&spec.input_path, input, ctx)?;
        let delay = wait_delay(exec, &spec.duration, &effective, ctx)?;
        // Assign and Output are computed before the wait, against the variables as of entry.
        let b = Bindings::new(&raw, ctx);
        let assigned = match &spec.assign {
            Some(assign) => Some(exec.with_rng(|rng| variables::evaluate(assign, &effective, &b, ctx, rng))?),
            None => None,
        };
        let output = match &spec.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
            None => io::output_path(&spec.output_path, effective, ctx)?,
        };
        Ok((output, assigned, delay))
    })
    .await
}

/// One visit of a Wait state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` with an `Output`): as [`wait_with`], with `body` also giving the assigned values
/// (`None` without an `Assign`; evaluated before the wait, against the variables as of entry),
/// which the Exited event records and which are visible from the next state on. A failure of
/// `body` gets AWS's prefix naming the state (and a `States.QueryEvaluationError` its
/// `EvaluationFailed` event).
///
/// The interpreter's [`wait`] and generated code (which compiles `body` from the state's
/// JSONata `Seconds`/`Timestamp`, `Output` and `Assign`) both go through here.
pub async fn wait_language_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Option<Assigned>, Duration), Failure>,
) -> Result<Value, Failure> {
    wait_visit(exec, name, needs_ctx, input, |visit, input, ctx| body(input, ctx).map_err(|f| visit.runtime(f))).await
}

/// One visit of a JSONPath Wait state without `Assign`: its events around `body`, which gives
/// the output and the delay from the raw input and the context object (`null` unless
/// `needs_ctx`), then the wait on the execution's clock (durable when journaled). A
/// `States.Runtime` failure of `body` gets AWS's prefix naming the state.
///
/// The interpreter's [`wait`] and generated code (which compiles `body` from the state's paths
/// and its Seconds/Timestamp/SecondsPath/TimestampPath) both go through here.
pub async fn wait_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Duration), Failure>,
) -> Result<Value, Failure> {
    wait_visit(exec, name, needs_ctx, input, |visit, input, ctx| {
        let (output, delay) = body(input, ctx).map_err(|f| visit.runtime(f))?;
        Ok((output, None, delay))
    })
    .await
}

/// One visit of a JSONPath Wait state with `Assign` (and no JSONata `Output`): as
/// [`wait_with`], with `body` also giving the assigned values (evaluated before the wait, on
/// the effective input, against the variables as of entry), which the Exited event records and
/// which are visible from the next state on.
///
/// The interpreter's [`wait`] and generated code both go through here.
pub async fn wait_assign_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Assigned, Duration), Failure>,
) -> Result<Value, Failure> {
    wait_visit(exec, name, true, input, |visit, input, ctx| {
        let (output, assigned, delay) = body(input, ctx).map_err(|f| visit.runtime(f))?;
        Ok((output, Some(assigned), delay))
    })
    .await
}

/// The visit every Wait shares: entry, `body` (output, assigned variables, delay), the wait,
/// exit; a Wait aborted mid-wait records `WaitStateAborted`.
#[allow(clippy::type_complexity)]
async fn wait_visit(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(&Visit<'_>, Value, &Value) -> Result<(Value, Option<Vec<(String, Value)>>, Duration), Failure>,
) -> Result<Value, Failure> {
    let mut guard = AbortGuard { exec, name, event: EventType::WaitStateAborted, armed: true };
    let outcome = async {
        let visit = Visit::start(exec, name, "Wait", &input)?;
        let visit_no = exec.next_visit(name);
        let ctx = visit.context_if(needs_ctx);
        let (output, assigned, delay) = body(&visit, input, &ctx)?;
        exec.durable_wait(name, visit_no, delay).await.map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(output)
    }
    .instrument(state_span(name, "Wait"))
    .await;
    guard.armed = false;
    outcome
}

/// A Succeed state.
pub fn succeed(exec: &Execution, name: &str, spec: &SucceedState, input: Value) -> Result<Value, Failure> {
    let needs_ctx =
        io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()]) || spec.output.is_some();
    succeed_with(exec, name, needs_ctx, input, |input, ctx| match &spec.output {
        Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &Bindings::new(&input, ctx), rng)),
        None => io::input_path_owned(&spec.input_path, input, ctx)
            .and_then(|effective| io::output_path(&spec.output_path, effective, ctx)),
    })
}

/// One visit of a Succeed state: records its Entered and Exited events around `body`
/// (InputPath then OutputPath, or a JSONata `Output` with the context object: `needs_ctx`), as
/// [`pass_with`] does for a Pass state. The interpreter's [`succeed`] and generated code both
/// go through here.
pub fn succeed_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    plain_visit(exec, name, "Succeed", needs_ctx, input, body)
}

/// A Fail state: the failure that ends the machine (or is caught by an enclosing Parallel's Catch).
pub fn fail(exec: &Execution, name: &str, spec: &FailState, input: Value) -> Failure {
    let needs_ctx = io::paths_use_context([spec.error_path.as_ref(), spec.cause_path.as_ref()])
        || spec.error_computed.is_some()
        || spec.cause_computed.is_some();
    fail_with(exec, name, needs_ctx, input, |input, ctx| {
        let computed = |value: &ComputedString, field: &str| -> Result<String, Failure> {
            match value {
                ComputedString::Intrinsic(i) => {
                    computed_string(field, exec.with_rng(|rng| crate::intrinsics::evaluate(i, field, input, ctx, rng))?)
                }
                ComputedString::Jsonata(e) => fail_jsonata(exec, e, field, &Bindings::new(input, ctx)),
            }
        };
        let read = |literal: &Option<String>, path: &Option<wfc_ir::Path>, field: &str| -> Result<String, Failure> {
            match path {
                Some(p) => fail_string(field, p.as_str(), io::select_field(p, field, input, ctx)?),
                // AWS leaves an absent Error/Cause out of the event; the Error Output uses "".
                None => Ok(literal.clone().unwrap_or_default()),
            }
        };
        let error = match &spec.error_computed {
            Some(c) => computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Error" } else { "ErrorPath" }),
            None => read(&spec.error, &spec.error_path, "ErrorPath"),
        };
        let cause = match &spec.cause_computed {
            Some(c) => computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Cause" } else { "CausePath" }),
            None => read(&spec.cause, &spec.cause_path, "CausePath"),
        };
        match (error, cause) {
            (Ok(error), Ok(cause)) => Ok(Failure { error, cause }),
            (Err(f), _) | (_, Err(f)) => Err(f),
        }
    })
}

/// One visit of a Fail state: its entry event, then `body`, which gives the failure (its Error
/// and Cause) from the raw input and the context object (`null` unless `needs_ctx`); a
/// failure of `body` itself (a path that selects nothing or not a string) is the state's
/// failure, with AWS's prefix when it is `States.Runtime`.
///
/// The interpreter's [`fail`] and generated code (which compiles `body` from Error/Cause and
/// ErrorPath/CausePath) both go through here.
pub fn fail_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(&Value, &Value) -> Result<Failure, Failure>,
) -> Failure {
    state_span(name, "Fail").in_scope(|| {
        if let Err(f) = exec.check_history() {
            return f;
        }
        exec.unmute_at_fail_state();
        let visit = Visit::enter(exec, name, "Fail", &input);
        let ctx = visit.context_if(needs_ctx);
        body(&input, &ctx).unwrap_or_else(|f| visit.runtime(f))
    })
}

/// A Fail state's JSONata `Error` or `Cause` (`field`): a string, else
/// `States.QueryEvaluationError` with AWS's wording.
pub(crate) fn fail_jsonata(
    exec: &Execution,
    expr: &wfc_ir::JsonataExpr,
    field: &str,
    b: &Bindings<'_>,
) -> Result<String, Failure> {
    match exec.with_rng(|rng| jsonata::evaluate(expr, field, b, rng))? {
        Value::String(s) => Ok(s),
        other => Err(jsonata::unexpected_type(expr.as_str(), field, "string", &other)),
    }
}

/// What a Fail state's intrinsic ErrorPath or CausePath (`field`) gave: a string, else
/// `States.Runtime`.
pub(crate) fn computed_string(field: &str, value: Value) -> Result<String, Failure> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(Failure::runtime(format!("The {field} must be a string, but it was {other}"))),
    }
}

/// What a Fail state's ErrorPath or CausePath (`field`, whose path is `text`) selected: a
/// string, else `States.Runtime`.
pub(crate) fn fail_string(field: &str, text: &str, value: Value) -> Result<String, Failure> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(Failure::runtime(format!("The {field} '{text}' must select a string, but it selected {other}"))),
    }
}

/// The data processing a Parallel or Map state shares, which [`parallel_with`] and [`map_with`]
/// run their visits around: what the interpreter reads from the IR ([`parallel`], [`map`]) and
/// generated code compiles (`wfc_runtime::abi`). Each method is one step of the state's
/// pipeline; none of them records events.
pub trait NestedCode {
    /// A retrier of its `Retry` table.
    type Retrier: retry::RetryRule;
    /// A catcher of its `Catch` table.
    type Catcher: retry::CatchRule;
    /// `Retry`, in order.
    fn retriers(&self) -> &[Self::Retrier];
    /// `Catch`, in order.
    fn catchers(&self) -> &[Self::Catcher];
    /// Whether the state's processing on entry (InputPath, OutputPath; for a Map ItemsPath and
    /// MaxConcurrencyPath; and the interpreted JSONata forms) reads the context object.
    fn needs_context(&self) -> bool {
        false
    }
    /// InputPath on the raw input: the effective input (by default `$`, a copy).
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = ctx;
        Ok(raw.clone())
    }
    /// Whether [`finish`](Self::finish) reads the context object beyond
    /// [`needs_context`](Self::needs_context) (a ResultSelector with `$$`).
    fn finish_needs_context(&self) -> bool {
        false
    }
    /// ResultSelector on the result (the array of branch or iteration outputs), ResultPath into
    /// the raw input, OutputPath; by default none of them: the result.
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, raw_input, ctx);
        Ok(result)
    }
    /// Whether the state has an `Assign` ([`assigned`](Self::assigned)).
    fn assigns(&self) -> bool {
        false
    }
    /// The `Assign` block's values, in the order written: a JSONPath block on `dollar` (the
    /// result) with the context object `states.context` (the variables as of entry); a JSONata
    /// block with `states` (`$states.input`, `$states.result`, `$states.context`).
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        let _ = (exec, dollar, states);
        Ok(Vec::new())
    }
    /// Whether the state has a JSONata `Output` ([`output`](Self::output)).
    fn has_output(&self) -> bool {
        false
    }
    /// JSONata `Output`, evaluated with `states` (as for [`assigned`](Self::assigned)); called
    /// only when [`has_output`](Self::has_output).
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        let _ = exec;
        Ok(states.result.cloned().unwrap_or(Value::Null))
    }
}

/// A Parallel state's own data processing, beyond [`NestedCode`]: what its branches get.
pub trait ParallelCode: NestedCode {
    /// Whether there are Parameters, and when they are evaluated; by default there are none.
    fn parameters_form(&self) -> ParametersForm {
        ParametersForm::None
    }
    /// Parameters on the effective input (`ctx` is `null` unless the form reads it).
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, ctx);
        Ok(effective.clone())
    }
    /// Whether the state has JSONata `Arguments` ([`arguments`](Self::arguments)).
    fn has_arguments(&self) -> bool {
        false
    }
    /// JSONata `Arguments`, evaluated with `states` (`$states.input` is the raw input,
    /// `states.context` the context object of the attempt); called only when
    /// [`has_arguments`](Self::has_arguments).
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        let _ = exec;
        Ok(states.input.clone())
    }
}

/// A Map state's own data processing, beyond [`NestedCode`]: its items and their inputs.
pub trait MapCode: NestedCode {
    /// Whether each attempt's iteration inputs read the context object beyond
    /// [`needs_context`](NestedCode::needs_context) (an ItemSelector with `$$`, for
    /// `$$.Map.Item.*` and `$$.State.RetryCount`; a DISTRIBUTED Map's fields).
    fn attempt_needs_context(&self) -> bool {
        false
    }
    /// `MaxConcurrency` or `MaxConcurrencyPath` (on the effective input); 0 is no limit.
    fn max_concurrency(&self, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
        let _ = (effective, ctx);
        Ok(0)
    }
    /// ItemsPath, then ItemSelector on each item (with `$$.Map.Item.Index`/`Value` in the
    /// context object): each iteration's input, in item order. `ctx` is the state's context
    /// object (`null` unless one of the two `needs_context` methods asks for it).
    fn iteration_inputs(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
    ) -> Result<Vec<Value>, Failure>;
    /// A DISTRIBUTED Map's own fields (ItemReader, ItemBatcher, ResultWriter, tolerance,
    /// Label): its iterations are then a Map Run's children ([`crate::distributed::map_run`]).
    fn distributed(&self) -> Option<&dyn crate::distributed::DistributedCode> {
        None
    }
}

/// The interpreter's [`ParallelCode`] and [`MapCode`]: the state's IR spec, evaluated by [`io`].
struct InterpretedNested<'s, S>(&'s S);

/// The fields a Parallel and a Map state share in the IR, so one [`NestedCode`] implementation
/// (below) serves both; each state type adds only what the context object check needs of its
/// own fields.
trait NestedSpec {
    fn input_path(&self) -> &InputPath;
    fn result_selector(&self) -> &Option<Template>;
    fn result_path(&self) -> &ResultPath;
    fn output_path(&self) -> &OutputPath;
    fn retry(&self) -> &[wfc_ir::Retrier];
    fn catch(&self) -> &[wfc_ir::Catcher];
    fn assign(&self) -> Option<&Assign>;
    fn output(&self) -> Option<&JsonataTemplate>;
    /// Whether the state's own fields (beyond the shared paths, `Assign` and `Output`) read the
    /// context object on entry.
    fn own_fields_use_context(&self) -> bool;
}

impl NestedSpec for ParallelState {
    fn input_path(&self) -> &InputPath {
        &self.input_path
    }
    fn result_selector(&self) -> &Option<Template> {
        &self.result_selector
    }
    fn result_path(&self) -> &ResultPath {
        &self.result_path
    }
    fn output_path(&self) -> &OutputPath {
        &self.output_path
    }
    fn retry(&self) -> &[wfc_ir::Retrier] {
        &self.retry
    }
    fn catch(&self) -> &[wfc_ir::Catcher] {
        &self.catch
    }
    fn assign(&self) -> Option<&Assign> {
        self.assign.as_ref()
    }
    fn output(&self) -> Option<&JsonataTemplate> {
        self.output.as_ref()
    }
    fn own_fields_use_context(&self) -> bool {
        self.arguments.is_some()
    }
}

impl NestedSpec for MapState {
    fn input_path(&self) -> &InputPath {
        &self.input_path
    }
    fn result_selector(&self) -> &Option<Template> {
        &self.result_selector
    }
    fn result_path(&self) -> &ResultPath {
        &self.result_path
    }
    fn output_path(&self) -> &OutputPath {
        &self.output_path
    }
    fn retry(&self) -> &[wfc_ir::Retrier] {
        &self.retry
    }
    fn catch(&self) -> &[wfc_ir::Catcher] {
        &self.catch
    }
    fn assign(&self) -> Option<&Assign> {
        self.assign.as_ref()
    }
    fn output(&self) -> Option<&JsonataTemplate> {
        self.output.as_ref()
    }
    fn own_fields_use_context(&self) -> bool {
        io::paths_use_context([Some(&self.items_path), self.max_concurrency_path.as_ref()])
            || self.items.is_some()
            || self.item_selector_jsonata.is_some()
            || self.max_concurrency_jsonata.is_some()
    }
}

impl<S: NestedSpec> NestedCode for InterpretedNested<'_, S> {
    type Retrier = wfc_ir::Retrier;
    type Catcher = wfc_ir::Catcher;

    fn retriers(&self) -> &[wfc_ir::Retrier] {
        self.0.retry()
    }

    fn catchers(&self) -> &[wfc_ir::Catcher] {
        self.0.catch()
    }

    fn needs_context(&self) -> bool {
        let spec = self.0;
        io::paths_use_context([spec.input_path().as_ref(), spec.output_path().as_ref()])
            || spec.own_fields_use_context()
            || spec.output().is_some()
            || spec.assign().is_some()
    }

    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        io::input_path(self.0.input_path(), raw, ctx).map(std::borrow::Cow::into_owned)
    }

    fn finish_needs_context(&self) -> bool {
        self.0.result_selector().as_ref().is_some_and(io::uses_context)
    }

    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let spec = self.0;
        finish_paths(exec, spec.result_selector(), spec.result_path(), spec.output_path(), raw_input, result, ctx)
    }

    fn assigns(&self) -> bool {
        self.0.assign().is_some()
    }

    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        match self.0.assign() {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, states, states.context, rng)),
            None => Ok(Vec::new()),
        }
    }

    fn has_output(&self) -> bool {
        self.0.output().is_some()
    }

    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match self.0.output() {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", states, rng)),
            None => Ok(states.result.cloned().unwrap_or(Value::Null)),
        }
    }
}

impl ParallelCode for InterpretedNested<'_, ParallelState> {
    fn parameters_form(&self) -> ParametersForm {
        TemplateParameters(self.0.parameters.as_ref()).form()
    }

    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        TemplateParameters(self.0.parameters.as_ref()).evaluate(exec, effective, ctx)
    }

    fn has_arguments(&self) -> bool {
        self.0.arguments.is_some()
    }

    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match &self.0.arguments {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Arguments", states, rng)),
            None => Ok(states.input.clone()),
        }
    }
}

impl MapCode for InterpretedNested<'_, MapState> {
    fn attempt_needs_context(&self) -> bool {
        // A DISTRIBUTED Map's reader, batcher and writer parameters may use `$$` too.
        self.0.item_selector.as_ref().is_some_and(io::uses_context) || self.0.distributed.is_some()
    }

    fn max_concurrency(&self, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
        crate::distributed::max_concurrency(self.0, effective, ctx)
    }

    fn iteration_inputs(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
    ) -> Result<Vec<Value>, Failure> {
        let spec = self.0;
        if is_jsonata_map(spec) {
            return jsonata_map_inputs(exec, spec, raw_input, ctx);
        }
        let items = crate::map::items(&spec.items_path, effective, ctx)?;
        exec.with_rng(|rng| crate::map::iteration_inputs(spec.item_selector.as_ref(), effective, items, ctx, rng))
    }

    fn distributed(&self) -> Option<&dyn crate::distributed::DistributedCode> {
        self.0.distributed.is_some().then_some(self.0 as &dyn crate::distributed::DistributedCode)
    }
}

/// A [`ParallelCode`]'s Parameters, for [`Parameters`].
struct ParallelParameters<'c, C>(&'c C);

impl<C: ParallelCode> ParametersCode for ParallelParameters<'_, C> {
    fn form(&self) -> ParametersForm {
        self.0.parameters_form()
    }

    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        self.0.parameters(exec, effective, ctx)
    }
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
    parallel_with(exec, name, &InterpretedNested(spec), input, run_branches).await
}

/// One visit of a Parallel state whose data processing is `code`: its events, the branches'
/// line of control and CONTEXT operation (durable), the retry loop with its back-offs on the
/// execution's clock, the history limit, and Catch. `run_branches` is called once per attempt
/// with the branches' input (after Parameters) and must run every branch on it concurrently
/// (see [`join_branches`]) and return their outputs in order.
///
/// The interpreter's [`parallel`] (whose `code` reads the IR) and generated code (whose `code`
/// is compiled from the state's paths, templates and Retry/Catch tables, and whose branches are
/// generated machines) both run through here, so their histories and failures are the same.
pub async fn parallel_with<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    input: Value,
    run_branches: F,
) -> Result<Step, Failure>
where
    C: ParallelCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    let mut guard = AbortGuard { exec, name, event: EventType::ParallelStateAborted, armed: true };
    let outcome = parallel_inner(exec, name, code, input, run_branches).instrument(state_span(name, "Parallel")).await;
    guard.armed = false;
    outcome
}

async fn parallel_inner<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    mut input: Value,
    mut run_branches: F,
) -> Result<Step, Failure>
where
    C: ParallelCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    let mut visit = Visit::start(exec, name, "Parallel", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = code.needs_context();
    let ctx = visit.context_if(io_ctx);
    let effective = code.input_path(&input, &ctx).map_err(|f| visit.runtime(f))?;
    let template = ParallelParameters(code);
    let parameters = Parameters::new(&template, &effective, exec).map_err(|f| visit.runtime(f))?;
    let mut retries = RetryState::new(code.retriers());
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        let branch_input = if code.has_arguments() {
            let ctx = visit.context();
            code.arguments(exec, &Bindings::new(&input, &ctx))
        } else {
            parameters.for_attempt(&template, &effective, &visit)
        };
        let branch_input = match branch_input {
            Ok(v) => v,
            Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), f).await? {
                    return caught(&visit, code.catchers(), input, failure);
                }
                continue;
            }
            Err(f) => return Err(visit.runtime(f)),
        };
        exec.record_with(EventType::ParallelStateStarted, || name_details(name));
        let branches_exec = exec.parallel_scope(name, visit_no, visit.retry_count, "ParallelBranch");
        exec.reopen_for_redrive(&branches_exec, name, visit_no, visit.retry_count, |error| {
            retry::find_catcher(code.catchers(), error).is_none()
        });
        let branches = run_branches(branch_input, branches_exec.clone());
        let outcome = exec.in_state_context(&branches_exec, name, "Parallel", branches).await;
        let (failure, branches_failed) = match outcome.map_err(|f| visit.runtime(f))? {
            Ok(outputs) => {
                exec.record_with(EventType::ParallelStateSucceeded, || name_details(name));
                let result = Value::Array(outputs);
                let assign_code = |dollar: &Value, states: &Bindings<'_>| code.assigned(exec, dollar, states);
                let output_code = |states: &Bindings<'_>| code.output(exec, states);
                let language = Language {
                    assign: code.assigns().then_some(AssignRef::Code(&assign_code)),
                    output: code.has_output().then_some(OutputRef::Code(&output_code)),
                };
                let finish = Finish {
                    needs_ctx: io_ctx || code.finish_needs_context(),
                    run: &|raw: Value, result: Value, ctx: &Value| code.finish(exec, raw, result, ctx),
                };
                match finish_success(&visit, language, finish, &mut input, result)? {
                    Ok(output) => return Ok(Step::Next(output)),
                    Err(failure) => (failure, false),
                }
            }
            Err(f) => (f, true),
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), failure).await? {
            if branches_failed {
                return state_failed(&visit, EventType::ParallelStateFailed, code.catchers(), input, failure);
            }
            return caught(&visit, code.catchers(), input, failure);
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

/// A Map state (INLINE, or DISTRIBUTED through a Map Run). `run_iteration` is called once per
/// item per attempt with the item's input (after `ItemSelector`) and the iteration's own line of
/// control, and must run the item processor on it; [`crate::map::run_iterations`] bounds the
/// concurrency, records the iteration events and keeps the results in item order. A Retry
/// re-runs every iteration.
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
    map_with(exec, name, &InterpretedNested(spec), input, run_iteration).await
}

/// One visit of a Map state whose data processing is `code`: its events, MaxConcurrency, the
/// iterations (each on its own line of control and, when journaled, its own CONTEXT operation,
/// through [`crate::map::run_iterations`]), the item-count limit, the retry loop with its
/// back-offs on the execution's clock, the history limit, and Catch.
///
/// The interpreter's [`map`] (whose `code` reads the IR) and generated code (whose `code` is
/// compiled from the state's paths, ItemSelector and Retry/Catch tables, and whose item
/// processor is a generated machine) both run through here, so their histories are the same.
pub async fn map_with<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    input: Value,
    run_iteration: F,
) -> Result<Step, Failure>
where
    C: MapCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let mut guard = AbortGuard { exec, name, event: EventType::MapStateAborted, armed: true };
    let outcome = map_inner(exec, name, code, input, run_iteration).instrument(state_span(name, "Map")).await;
    guard.armed = false;
    outcome
}

async fn map_inner<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    mut input: Value,
    mut run_iteration: F,
) -> Result<Step, Failure>
where
    C: MapCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let mut visit = Visit::start(exec, name, "Map", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = code.needs_context();
    let ctx = visit.context_if(io_ctx);
    let effective = code.input_path(&input, &ctx).map_err(|f| visit.runtime(f))?;
    let attempt_ctx = code.attempt_needs_context();
    let mut retries = RetryState::new(code.retriers());
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        // Per attempt: the context object (and so `$$.State.RetryCount` in ItemSelector) changes.
        let state_ctx = visit.context_if(io_ctx || attempt_ctx);
        let max_concurrency = match code.max_concurrency(&effective, &state_ctx) {
            Ok(n) => n,
            // A JSONata `MaxConcurrency` failing is catchable and retriable, like any JSONata field.
            Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), f).await? {
                    return caught(&visit, code.catchers(), input, failure);
                }
                continue;
            }
            Err(f) => return Err(visit.runtime(f)),
        };
        let outcome = if let Some(dist) = code.distributed() {
            // A Map Run records its own MapRunStarted/Succeeded/Failed; its children have
            // histories of their own.
            exec.reopen_map_run_for_redrive(name, visit_no, visit.retry_count, |error| {
                retry::find_catcher(code.catchers(), error).is_none()
            });
            match crate::distributed::map_run(
                exec,
                name,
                exec.map_run_op(name, visit_no, visit.retry_count),
                dist,
                &input,
                &effective,
                &state_ctx,
                max_concurrency,
                &mut run_iteration,
            )
            .await
            {
                Err(f) if wfc_ir::errors::is_terminal(&f.error) => return Err(visit.runtime(f)),
                other => other,
            }
        } else {
            let inputs = match code.iteration_inputs(exec, &input, &effective, &state_ctx) {
                Ok(inputs) => inputs,
                // A JSONata failure can be retried and caught, unlike a path failure. AWS
                // records the Map as failed (after EvaluationFailed) although it never started.
                Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                    if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), f).await? {
                        return state_failed(&visit, EventType::MapStateFailed, code.catchers(), input, failure);
                    }
                    continue;
                }
                Err(f) => return Err(visit.runtime(f)),
            };
            let length = inputs.len();
            crate::map::check_item_count(exec.limits(), length).map_err(|f| visit.runtime(f))?;
            exec.record(EventType::MapStateStarted, json!({ "name": name, "length": length }));
            let iterations_exec = exec.parallel_scope(name, visit_no, visit.retry_count, "MapIteration");
            exec.reopen_for_redrive(&iterations_exec, name, visit_no, visit.retry_count, |error| {
                retry::find_catcher(code.catchers(), error).is_none()
            });
            let iterations =
                crate::map::run_iterations(&iterations_exec, name, inputs, max_concurrency, &mut run_iteration);
            let outcome =
                exec.in_state_context(&iterations_exec, name, "Map", iterations).await.map_err(|f| visit.runtime(f))?;
            outcome.map(Value::Array)
        };
        let (failure, iterations_failed) = match outcome {
            Ok(result) => {
                exec.record_with(EventType::MapStateSucceeded, || name_details(name));
                let assign_code = |dollar: &Value, states: &Bindings<'_>| code.assigned(exec, dollar, states);
                let output_code = |states: &Bindings<'_>| code.output(exec, states);
                let language = Language {
                    assign: code.assigns().then_some(AssignRef::Code(&assign_code)),
                    output: code.has_output().then_some(OutputRef::Code(&output_code)),
                };
                let finish = Finish {
                    needs_ctx: io_ctx || code.finish_needs_context(),
                    run: &|raw: Value, result: Value, ctx: &Value| code.finish(exec, raw, result, ctx),
                };
                match finish_success(&visit, language, finish, &mut input, result)? {
                    Ok(output) => {
                        if code.distributed().is_some() {
                            exec.journal_map_state_exited(name, visit_no, visit.retry_count).await?;
                        }
                        return Ok(Step::Next(output));
                    }
                    Err(failure) => (failure, false),
                }
            }
            Err(f) => (f, true),
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), failure).await? {
            // A Map Run whose ItemReader or ResultWriter failure ended the execution: redriven,
            // the state runs again as a new Map Run (see `distributed::journaled_run_failure`).
            if code.distributed().is_some()
                && [wfc_ir::errors::ITEM_READER_FAILED, wfc_ir::errors::RESULT_WRITER_FAILED]
                    .contains(&failure.error.as_str())
                && retry::find_catcher(code.catchers(), &failure.error).is_none()
                && exec.rerun_for_redrive(name, visit_no, visit.retry_count)
            {
                let generation = exec.redrive_generation(name, visit_no);
                exec.record_with(EventType::MapStateFailed, || name_details(name));
                exec.record(EventType::ExecutionFailed, failure_details(&failure));
                exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": generation }));
                exec.unmute_if_live(name, visit_no, 0);
                retries = RetryState::new(code.retriers());
                continue;
            }
            if iterations_failed {
                return state_failed(&visit, EventType::MapStateFailed, code.catchers(), input, failure);
            }
            return caught(&visit, code.catchers(), input, failure);
        }
    }
}

/// Whether a Map state is a JSONata state (the IR keeps no query language, so this looks for
/// JSONata-only fields): its items then come from `Items` (or the input) and `ItemSelector` is
/// JSONata.
pub(crate) fn is_jsonata_map(spec: &MapState) -> bool {
    let jsonata_count =
        |c: &Option<wfc_ir::distributed::Count>| matches!(c, Some(wfc_ir::distributed::Count::Jsonata(_)));
    spec.jsonata
        || spec.items.is_some()
        || spec.item_selector_jsonata.is_some()
        || matches!(spec.assign, Some(Assign::Jsonata(_)))
        || spec.output.is_some()
        || spec.max_concurrency_jsonata.is_some()
        || spec.distributed.as_ref().is_some_and(|d| {
            jsonata_count(&d.tolerated_failure_count)
                || matches!(d.tolerated_failure_percentage, Some(wfc_ir::distributed::Percentage::Jsonata(_)))
        })
}

/// A JSONata Map's iteration inputs: the items (`Items`, else the state input, which must then
/// be an array), each through `ItemSelector` with `$states.context.Map.Item`.
pub(crate) fn jsonata_map_inputs(
    exec: &Execution,
    spec: &MapState,
    input: &Value,
    state_ctx: &Value,
) -> Result<Vec<Value>, Failure> {
    let items = jsonata_map_items(exec, spec, input, state_ctx)?;
    jsonata_map_select(exec, spec, input, state_ctx, items)
}

/// A JSONata Map's items: `Items`, else the state input, which must then be an array.
pub(crate) fn jsonata_map_items(
    exec: &Execution,
    spec: &MapState,
    input: &Value,
    state_ctx: &Value,
) -> Result<Vec<Value>, Failure> {
    match &spec.items {
        Some(t) => {
            let b = Bindings::new(input, state_ctx);
            let expr = match t {
                JsonataTemplate::Expr(e) => Some(e.as_str()),
                _ => None,
            };
            let items = exec.with_rng(|rng| jsonata::template(t, "Items", &b, rng))?;
            crate::map::jsonata_items(items, expr)
        }
        None => crate::map::input_items(input),
    }
}

/// A JSONata Map's `ItemSelector` on each item, with `$states.context.Map.Item`; without one,
/// the items.
pub(crate) fn jsonata_map_select(
    exec: &Execution,
    spec: &MapState,
    input: &Value,
    state_ctx: &Value,
    items: Vec<Value>,
) -> Result<Vec<Value>, Failure> {
    let Some(selector) = &spec.item_selector_jsonata else { return Ok(items) };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let ctx = crate::map::item_context(state_ctx, index, item);
            exec.with_rng(|rng| jsonata::template(selector, "ItemSelector", &Bindings::new(input, &ctx), rng))
        })
        .collect()
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
    pub(crate) fn next_visit(&self, name: &str) -> u32 {
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
    pub(crate) fn op_id(&self, name: &str, visit_no: u32, suffix: &str) -> String {
        let generation = {
            let generations = self.scope.generations.lock().unwrap_or_else(|p| p.into_inner());
            generations.get(&(name.to_owned(), visit_no)).copied().unwrap_or(0)
        };
        match generation {
            0 => format!("{}{name}#{visit_no}{suffix}", self.scope.path),
            g => format!("{}{name}#{visit_no}!{g}{suffix}", self.scope.path),
        }
    }

    /// The redrive generation visit `visit_no` of `name` runs in (0: not run again).
    pub(crate) fn redrive_generation(&self, name: &str, visit_no: u32) -> u32 {
        #[cfg(feature = "durable")]
        {
            let generations = self.scope.generations.lock().unwrap_or_else(|p| p.into_inner());
            generations.get(&(name.to_owned(), visit_no)).copied().unwrap_or(0)
        }
        #[cfg(not(feature = "durable"))]
        {
            let _ = (name, visit_no);
            0
        }
    }

    /// `$$.Execution.RedriveCount`: how often the journaled execution was redriven (0 without a
    /// journal).
    pub(crate) fn redrive_count(&self) -> u32 {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            return journal.redrive_count();
        }
        0
    }

    /// RedriveExecution runs again the states that did not succeed: called when attempt
    /// `attempt_no` of visit `visit_no` of Task `name` ended the visit with a failure no
    /// catcher takes. When that attempt ended before this run (its failure, or a failure of its
    /// result's processing, a path error in `ResultSelector` or `ResultPath`, ended the
    /// execution, which was redriven since: AWS then schedules and starts the Task state
    /// again) and the visit has not yet been run again for every redrive, the
    /// visit moves to its next redrive generation (new operation ids, so its attempts run
    /// again, retries counted from zero) and this returns `true`. A failure of this run returns
    /// `false`: it is the execution's failure.
    pub(crate) fn rerun_for_redrive(&self, name: &str, visit_no: u32, attempt_no: u32) -> bool {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let redrives = journal.redrive_count();
            let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            let mut generations = self.scope.generations.lock().unwrap_or_else(|p| p.into_inner());
            let generation = generations.entry((name.to_owned(), visit_no)).or_insert(0);
            if *generation < redrives && journal.ended_before_run(&id) {
                *generation += 1;
                return true;
            }
            return false;
        }
        let _ = (name, visit_no, attempt_no);
        false
    }

    /// The CONTEXT operation the operations of this line of control belong to.
    #[cfg(feature = "durable")]
    pub(crate) fn op_parent(&self) -> Option<String> {
        self.scope.context.clone()
    }

    /// Runs one Parallel branch or Map iteration (`line` from [`Execution::branch`] on the
    /// state's branch scope) as a CONTEXT operation when journaled: started before the branch
    /// runs, finished with its output or failure and the history events it recorded. A replay
    /// that finds the CONTEXT finished does not run the branch (`branch` is dropped unpolled):
    /// it records the stored events again and returns the recorded outcome. Both engines call it.
    pub async fn in_branch_context<Fut>(&self, branch: Fut) -> Result<Value, Failure>
    where
        Fut: Future<Output = Result<Value, Failure>>,
    {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(of), Some(id)) = (&self.shared.journal, &self.scope.branch_of, &self.scope.context)
        {
            // Under a reopened attempt, a branch or iteration that failed runs again (its
            // events are the attempt's, recorded again already: its line is muted).
            if of.parent.as_deref().is_some_and(|attempt| journal.is_reopened(attempt)) && journal.may_reopen(id) {
                journal.reopen(id);
            }
            if let Some(done) = journal.finished_context(id, &of.state, self.keeps_history())? {
                if !self.muted() {
                    let last = self.replay_context_events(&done.events);
                    self.cursor.last.store(last, Ordering::SeqCst);
                }
                return done.outcome;
            }
            journal.context_start(id, of.parent.clone(), &of.state, of.subtype).await?;
            let capture = self.scope.captures.last().filter(|_| journal.keeps_context_events());
            Self::arm(capture);
            let outcome = branch.await;
            let events = self.captured(capture);
            journal.context_end_with_events(id, of.parent.clone(), &of.state, of.subtype, &outcome, events).await?;
            return outcome;
        }
        branch.await
    }

    /// Starts collecting the events of a CONTEXT about to run.
    #[cfg(feature = "durable")]
    fn arm(capture: Option<&EventCapture>) {
        if let Some(capture) = capture {
            *capture.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
        }
    }

    /// The events a CONTEXT recorded since [`Execution::arm`], and stops collecting.
    #[cfg(feature = "durable")]
    fn captured(&self, capture: Option<&EventCapture>) -> Option<crate::durable::ContextEvents> {
        let ids = capture?.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        Some(if self.keeps_history() {
            crate::durable::ContextEvents::Kept(self.shared.history.events_with_ids(&ids))
        } else {
            crate::durable::ContextEvents::Counted(ids.len() as u64)
        })
    }

    /// Records again the events of a skipped CONTEXT (a finished branch, iteration or attempt),
    /// renumbered after the events recorded so far and chained as they were: an event whose
    /// previous event is outside the CONTEXT chains to this line's current event. Returns the
    /// id of the last one (the line's current event when there were none).
    #[cfg(feature = "durable")]
    fn replay_context_events(&self, events: &crate::durable::ContextEvents) -> u64 {
        let start = self.cursor.last.load(Ordering::SeqCst);
        let mut last = start;
        match events {
            crate::durable::ContextEvents::Kept(events) => {
                let mut renumbered = std::collections::HashMap::with_capacity(events.len());
                for e in events {
                    let previous = renumbered.get(&e.previous_event_id).copied().unwrap_or(start);
                    last = self.shared.history.record(e.event_type, e.details.clone(), e.timestamp.clone(), previous);
                    renumbered.insert(e.id, last);
                    self.capture(last);
                }
            }
            crate::durable::ContextEvents::Counted(n) => {
                for _ in 0..*n {
                    last = self.shared.history.count().unwrap_or(last);
                    self.capture(last);
                }
            }
        }
        last
    }

    /// Runs a Parallel or Map attempt (`scope` from [`Execution::parallel_scope`]) as a
    /// CONTEXT operation when journaled; the outer error is a store failure.
    async fn in_state_context<Fut>(
        &self,
        scope: &Execution,
        name: &str,
        subtype: &str,
        attempt: Fut,
    ) -> Result<Result<Vec<Value>, Failure>, Failure>
    where
        Fut: Future<Output = Result<Vec<Value>, Failure>>,
    {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id)) = (&self.shared.journal, &scope.scope.context)
            && scope.scope.owner.is_some()
        {
            if let Some(done) = journal.finished_context(id, name, self.keeps_history())? {
                // The attempt's branches record on lines of their own: this line's current
                // event stays where it is, as after a run.
                scope.replay_context_events(&done.events);
                return Ok(match done.outcome {
                    Ok(Value::Array(outputs)) => Ok(outputs),
                    Ok(other) => Err(Failure::runtime(format!(
                        "the journal's CONTEXT operation '{id}' of state '{name}' holds {other} where its branches' outputs (an array) belong"
                    ))),
                    Err(failure) => Err(failure),
                });
            }
            journal.context_start(id, self.op_parent(), name, subtype).await?;
            let capture = scope.scope.captures.last().filter(|_| journal.keeps_context_events());
            Self::arm(capture);
            if journal.is_reopened(id) && !scope.muted() {
                scope.record_reopened(journal, id, name, subtype)?;
            }
            let outcome = attempt.await;
            let recorded = outcome.clone().map(Value::Array);
            let events = scope.captured(capture);
            journal.context_end_with_events(id, self.op_parent(), name, subtype, &recorded, events).await?;
            return Ok(outcome);
        }
        let _ = (scope, name, subtype);
        Ok(attempt.await)
    }

    /// The history of a Parallel or Map attempt that a redrive reopened (on the outermost one;
    /// those inside it are in its events), recorded on the attempt's `scope` so the attempt's
    /// CONTEXT keeps it: the attempt's events as they were, how the state and the execution
    /// failed, then `ExecutionRedriven`. The branches then run muted up to the failed Task
    /// that runs again (see [`Scope::mute`]), so the history is AWS's: what happened, the
    /// redrive, what the redrive ran.
    #[cfg(feature = "durable")]
    fn record_reopened(&self, journal: &Journal, id: &str, name: &str, subtype: &str) -> Result<(), Failure> {
        let Some(done) = journal.reopened_context(id, name, self.keeps_history())? else {
            return Ok(());
        };
        self.replay_context_events(&done.events);
        let failure = done.outcome.err().unwrap_or_else(|| Failure::runtime("the reopened attempt had not failed"));
        let failed = if subtype == "Map" { EventType::MapStateFailed } else { EventType::ParallelStateFailed };
        self.record(failed, json!({ "name": name }));
        self.record(EventType::ExecutionFailed, failure_details(&failure));
        self.record(EventType::ExecutionRedriven, json!({ "redriveCount": journal.redrive_count() }));
        Ok(())
    }

    /// Reopens attempt `attempt_no` of visit `visit_no` of Parallel or Map `name` (its CONTEXT is
    /// `scope`'s, from [`Execution::parallel_scope`]) when a redrive runs it again: it failed
    /// before the redrive, on this run's redriven path (this line is the top level or a branch
    /// the redrive reopened), it was the state's last attempt (no retry followed it) and
    /// `uncaught` says no catcher took its failure. So the failure ended the execution and its
    /// failed branches or iterations run again (the others replay their results); a failure
    /// that was caught or retried replays as it ended. Called before the attempt's lines are
    /// made, so they know they run under a reopened attempt.
    fn reopen_for_redrive(
        &self,
        scope: &Execution,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        uncaught: impl FnOnce(&str) -> bool,
    ) {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id)) = (&self.shared.journal, &scope.scope.context)
            && journal.redrive_count() > 0
            && journal.may_reopen(id)
        {
            let on_path = match &self.scope.context {
                None => true,
                Some(line) => journal.is_reopened(line),
            };
            let retried = [format!(".{}", attempt_no + 1), format!(".retry{}", attempt_no + 1)]
                .iter()
                .any(|suffix| journal.recorded(&self.op_id(name, visit_no, suffix)).is_some());
            let error = journal.recorded(id).and_then(|op| op.error).unwrap_or_default();
            if on_path && !retried && uncaught(&error) {
                journal.reopen(id);
            }
        }
        #[cfg(not(feature = "durable"))]
        let _ = (scope, name, visit_no, attempt_no, uncaught);
    }

    /// Marks attempt `attempt_no` of visit `visit_no` of DISTRIBUTED Map `name` (its children's
    /// operation prefix) for a redrive to run its children that did not succeed again, as
    /// [`Execution::reopen_for_redrive`] reopens a Parallel or inline Map attempt: on this run's
    /// redriven path (the top level, a branch the redrive reopened, or a branch that was still
    /// running when the execution ended: stopped or timed out, AWS redrives a Map state with no
    /// `MapStateExited`), the state's last attempt, and its Map Run's failure (a tolerance
    /// exceeded) not caught. The Map Run then checks, from the journal, whether it had failed
    /// or was ended by its execution (`distributed::store_sync::RedrivePlan`).
    fn reopen_map_run_for_redrive(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        uncaught: impl FnOnce(&str) -> bool,
    ) {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && journal.redrive_count() > 0
        {
            let on_path = match &self.scope.context {
                None => true,
                Some(line) => {
                    journal.is_reopened(line)
                        || journal.recorded(line).is_none_or(|op| !op.status.is_terminal() && op.error.is_none())
                }
            };
            let retried = [format!(".{}/0", attempt_no + 1), format!(".retry{}", attempt_no + 1)]
                .iter()
                .any(|suffix| journal.recorded(&self.op_id(name, visit_no, suffix)).is_some());
            // A Map state that exited (its Map Run within its tolerance) is left as it ended, as
            // AWS redrives a Map Run only when its Map state failed.
            let exited = journal
                .recorded(&self.op_id(name, visit_no, &format!(".exited{attempt_no}")))
                .is_some_and(|op| op.status == crate::durable::OpStatus::Succeeded);
            if on_path && !retried && !exited && uncaught(wfc_ir::errors::EXCEED_TOLERATED_FAILURE_THRESHOLD) {
                journal.reopen(&self.op_id(name, visit_no, &format!(".{attempt_no}")));
            }
        }
        #[cfg(not(feature = "durable"))]
        let _ = (name, visit_no, attempt_no, uncaught);
    }

    /// Journals that attempt `attempt_no` of visit `visit_no` of DISTRIBUTED Map `name` exited
    /// (its `MapStateExited`): a redrive then leaves its Map Run alone (see
    /// [`Execution::reopen_map_run_for_redrive`]). The Map Run's own end cannot tell: a stop
    /// arriving as its last child ends records it though the Map state never exits.
    async fn journal_map_state_exited(&self, name: &str, visit_no: u32, attempt_no: u32) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".exited{attempt_no}"));
            let exited = async { crate::task::Attempt::Succeeded(Value::Null) };
            journal.step(id, self.op_parent(), name, None, exited).await?;
        }
        #[cfg(not(feature = "durable"))]
        let _ = (name, visit_no, attempt_no);
        Ok(())
    }

    /// The journal's execution name when it differs from [`Execution::task_execution_name`] (a
    /// DISTRIBUTED Map Run's child, journaled in its parent's execution).
    pub(crate) fn stored_execution_name(&self) -> Option<String> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && journal.name() != self.task_execution_name()
        {
            return Some(journal.name().to_owned());
        }
        None
    }

    /// Lets this line record history events again when a redrive muted it (see [`Scope::mute`]):
    /// a DISTRIBUTED Map Run that the redrive runs again records from there.
    #[cfg(feature = "durable")]
    pub(crate) fn unmute_for_redrive(&self) {
        if self.scope.muted() {
            self.unmute();
        }
    }

    /// What a Task attempt (or a Serverless Workflow function call) asks for, when a
    /// suspending journal needs it (a replay-only run reports the attempt instead of running
    /// it; see [`crate::durable::suspend`]).
    pub(crate) fn step_request(
        &self,
        resource: &str,
        params: &Value,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Option<crate::task::StepRequest> {
        #[cfg(feature = "durable")]
        if self.shared.journal.as_ref().is_some_and(|j| j.wants_step_requests()) {
            return Some(crate::task::StepRequest {
                resource: resource.to_owned(),
                input: params.clone(),
                timeout,
                heartbeat,
            });
        }
        let _ = (resource, params, timeout, heartbeat);
        None
    }

    /// One Task attempt: replayed from the journal when recorded, else run (and checkpointed).
    fn journaled_attempt<Fut>(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        request: Option<crate::task::StepRequest>,
        run: Fut,
    ) -> impl Future<Output = Result<Attempt, Failure>>
    where
        Fut: Future<Output = Attempt>,
    {
        // Not an `async fn`: that would hold `run` twice (as its argument and while awaiting
        // it), and every Task visit's future holds this one. The caller awaits it at once.
        #[cfg(feature = "durable")]
        {
            if let Some(journal) = &self.shared.journal {
                let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
                // Boxed: the store's future is large.
                let step = journal.step(id, self.op_parent(), name, request, run);
                return futures::future::Either::Left(Box::pin(step));
            }
            futures::future::Either::Right(run.map(Ok))
        }
        #[cfg(not(feature = "durable"))]
        {
            let _ = (name, visit_no, attempt_no, request);
            run.map(Ok)
        }
    }

    /// The in-memory callback handle of this execution (SendTaskSuccess/Failure/Heartbeat).
    pub fn callbacks(&self) -> &crate::Callbacks {
        &self.shared.callbacks
    }

    /// `$$.Task.Token` of an attempt: derived from the execution id and the attempt's position
    /// (its durable operation id when journaled, else the state and its entered event), so both
    /// engines and every replay compute the same token.
    /// When the journal's service issues callback ids (a Lambda durable function), the token
    /// is that id ([`Journal::callback_token`]).
    async fn task_token(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        entered_id: u64,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Result<String, Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            let own = crate::callback::task_token(self.id(), &id);
            // Boxed, as in `journaled_attempt`.
            let token =
                Box::pin(journal.callback_token(self.clock(), &id, self.op_parent(), name, own, timeout, heartbeat));
            return token.await;
        }
        let _ = (visit_no, timeout, heartbeat);
        Ok(crate::callback::task_token(self.id(), &format!("{name}@{entered_id}.{attempt_no}")))
    }

    /// One attempt of a `.waitForTaskToken` Task: `handler` (which hands `token` on), then the
    /// wait for SendTaskSuccess/Failure, in memory and, when journaled, through the store.
    #[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
    async fn callback_attempt<Fut>(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        token: &str,
        params: Value,
        handler: Fut,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Result<Attempt, Failure>
    where
        Fut: Future<Output = Attempt>,
    {
        let registration = self.shared.callbacks.register(token);
        let waiting = crate::callback::WaitingTask {
            token: token.to_owned(),
            state_name: name.to_owned(),
            execution_name: self.task_execution_name().to_owned(),
            input: params,
        };
        let limits = crate::callback::Limits { timeout_at: timeout.map(|t| Instant::now() + t), heartbeat, timeout };
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            return journal
                .callback(self.clock(), id, self.op_parent(), name, registration, waiting, limits, handler)
                .await;
        }
        let _ = (visit_no, attempt_no);
        Ok(crate::callback::run(registration, waiting, limits, handler).await)
    }

    /// The back-off before retry `retry_no`, as a durable timer.
    async fn backoff(&self, name: &str, visit_no: u32, retry_no: u32, delay: Duration) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".retry{retry_no}"));
            return journal.sleep(self.clock(), id, self.op_parent(), name, "Retry", delay).await;
        }
        let _ = (name, visit_no, retry_no);
        self.clock().sleep(delay).await;
        Ok(())
    }

    /// A Wait state's delay, as a durable timer.
    async fn durable_wait(&self, name: &str, visit_no: u32, delay: Duration) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, "");
            // A branch a redrive runs again after another's failure cancelled it during this
            // Wait records from here (see `Execution::muted_if_replayed`).
            if self.scope.muted() && journal.recorded(&id).is_none() {
                self.unmute();
            }
            return journal.sleep(self.clock(), id, self.op_parent(), name, "Wait", delay).await;
        }
        let _ = (name, visit_no);
        self.clock().sleep(delay).await;
        Ok(())
    }

    /// A new line of control (as [`Execution::branch`]) whose operations belong to the
    /// operation `context` (a Serverless Workflow subflow's CHAINED_INVOKE): their ids start
    /// with `<context>/`, and `context` is their parent.
    #[cfg(feature = "durable")]
    pub(crate) fn sub_scope(&self, context: String) -> Execution {
        let line = self.branch();
        Execution {
            scope: Arc::new(Scope { path: format!("{context}/"), context: Some(context), ..Scope::default() }),
            ..line
        }
    }

    /// The operation-id prefix of a DISTRIBUTED Map attempt's children when journaled
    /// (`<State>#<visit>.<attempt>`; child `i` is the CHAINED_INVOKE `<prefix>/<i>`).
    pub(crate) fn map_run_op(&self, name: &str, visit_no: u32, attempt_no: u32) -> Option<String> {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            return Some(self.op_id(name, visit_no, &format!(".{attempt_no}")));
        }
        let _ = (name, visit_no, attempt_no);
        None
    }

    /// Runs a Map Run child (`run`: its whole execution, ending in the value the Map Run keeps
    /// of it) as the CHAINED_INVOKE `op` when journaled, as a Serverless Workflow subflow is: a
    /// finished child replays that value without running, an unfinished one runs again with
    /// its own operations replayed. On a Lambda durable function configured to chain Map Run
    /// children, `run` is not run: the function invokes itself with `envelope` (see
    /// `distributed::run_chained_child`) and the value is that invocation's result. The error
    /// is a store failure, a suspension, or a chained child that failed to run.
    pub(crate) async fn journaled_map_child<Fut>(
        &self,
        op: Option<String>,
        name: &str,
        envelope: impl FnOnce() -> Value,
        run: Fut,
    ) -> Result<Value, Failure>
    where
        Fut: Future<Output = Value>,
    {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id)) = (&self.shared.journal, op.as_deref()) {
            if let Some(function) = journal.map_run_function() {
                return journal.chained_map_run_child(id, self.op_parent(), name, &function, &envelope()).await;
            }
            let child = async {
                let kept = run.await;
                // A suspended worker run unwinds through the child's lines with a failure that is
                // not the child's: the Map Run stops with it instead of counting a failed child
                // (and the CHAINED_INVOKE stays STARTED).
                match journal.suspended() {
                    Some(_) => Err(Failure::runtime("the execution was suspended inside a Map Run child")),
                    None => Ok(kept),
                }
            };
            return journal.subflow_as(id, self.op_parent(), name, "MapRunChild", child).await;
        }
        let _ = (op, name, envelope);
        Ok(run.await)
    }

    /// The execution handed to a Parallel attempt's branches: the same line of control, in a
    /// scope named after the attempt, so each [`Execution::branch`] gets a stable path.
    /// Its lines are CONTEXT operations of `branch_subtype`, children of the attempt's own.
    fn parallel_scope(&self, name: &str, visit_no: u32, attempt_no: u32, branch_subtype: &'static str) -> Execution {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            let context = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            return Execution {
                shared: Arc::clone(&self.shared),
                cursor: Arc::clone(&self.cursor),
                variables: Arc::clone(&self.variables),
                in_parallel_branch: branch_subtype == "ParallelBranch",
                scope: Arc::new(Scope {
                    captures: self.scope.captures.iter().cloned().chain([EventCapture::default()]).collect(),
                    mute: self.scope.mute.clone(),
                    path: format!("{context}/"),
                    owner: Some(BranchOf {
                        state: name.to_owned(),
                        subtype: branch_subtype,
                        parent: Some(context.clone()),
                    }),
                    context: Some(context),
                    ..Scope::default()
                }),
            };
        }
        let _ = (name, visit_no, attempt_no);
        Execution { in_parallel_branch: branch_subtype == "ParallelBranch", ..self.clone() }
    }
}
