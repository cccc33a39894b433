//! The per-state semantics, shared by generated code and the interpreter.
//!
//! CONTRACT: generated code (wfc-core codegen, through [`crate::abi`]) and `wfc_interp` call
//! exactly these functions. Each visit (`pass_with`, `task_with`, ...) takes the state's code (a
//! closure or a [`TaskCode`]/[`NestedCode`]: compiled in generated code, reading the IR in the
//! interpreter) and its raw input, and returns the effective output (or where to go). Control flow
//! (the state enum, the loop, which handler method to call) belongs to the caller; data
//! processing, retries, waits, timeouts and history belong here. Nothing here reads a state's IR
//! but the DISTRIBUTED Map's helpers that `crate::distributed` shares.
//!
//! Layout: this module holds the execution ([`Execution`], [`RunOptions`], its lines of control
//! and durable scopes); `visit` is one state visit (its events, context object, `States.Runtime`
//! prefix, abort guard); `parameters`, `finish` and `catch` are the steps Task, Parallel and Map
//! share (Parameters, the end of a successful attempt, Retry back-offs and Catch); then one
//! module per state type (`pass`, `task`, `choice`, `wait`, `succeed`, `fail`, `parallel`, `map`,
//! with `nested` for what Parallel and Map share), and `hooks`, the journal hooks.

mod catch;
mod choice;
mod fail;
mod finish;
mod hooks;
mod map;
mod nested;
mod parallel;
mod parameters;
mod pass;
mod succeed;
mod task;
mod visit;
mod wait;

pub use choice::{Chosen, choice_assign_with, choice_kept_with, choice_language_with, choice_with};
pub use fail::fail_with;
pub use map::map_with;
pub use nested::{MapCode, NestedCode, ParallelCode};
pub use parallel::{join_branches, parallel_with};
pub use parameters::ParametersForm;
pub use pass::{
    Assigned, pass_assign_with, pass_bounded_with, pass_built_with, pass_kept_with, pass_language_with, pass_with,
};
pub use succeed::succeed_with;
pub use task::{PlainTask, TaskCode, TaskShape, counted_task_with, task_boxed_with, task_with};
pub use wait::{MAX_WAIT, wait_assign_with, wait_language_with, wait_with};

// The pieces of a state's processing that the interpreter's IR adapters (`wfc_interp`) are
// made of, beyond the visits above: what generated code gets through `crate::abi` instead.
pub use fail::{computed_string, fail_jsonata, fail_string};
pub use finish::finish_paths;
pub use map::{is_jsonata_map, jsonata_map_inputs};
pub use task::{jsonata_seconds, seconds_at};
pub use wait::{wait_limit, wait_seconds_at, wait_seconds_jsonata, wait_timestamp_at, wait_timestamp_jsonata};

pub(crate) use map::{jsonata_map_items, jsonata_map_select};
pub(crate) use task::positive_seconds;
pub(crate) use visit::failure_details;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::time::Instant;
use wfc_ir::StateId;

#[cfg(feature = "durable")]
use crate::journal::JournalHooks;
use crate::limits::Limits;
use crate::variables::Variables;
use crate::{Clock, Details, EventType, Failure, History, HistoryEvent, HistoryLevel};

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
    pub journal: Option<Arc<dyn JournalHooks>>,
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
/// command handlers still see as `WFC_EXECUTION_NAME`, [`TaskContext::execution_name`](crate::TaskContext::execution_name)).
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

/// `parts` joined in one allocation. Every execution names itself in five strings (its ARN, its
/// machine's, its role's...): through `format!` they were 6,000 instructions an execution, a
/// tenth of a ten-branch Parallel's whole run.
fn concat(parts: &[&str]) -> String {
    let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        text.push_str(part);
    }
    text
}

/// `seed` as 16 lowercase hex digits (`format!("{seed:016x}")`, without the formatter).
fn seed_hex(seed: u64) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    (0..16).rev().map(|i| char::from(DIGITS[((seed >> (i * 4)) & 0xf) as usize])).collect()
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

    /// Runs durably on `journal` (`wfc_journal::Journal::open`): the execution takes the
    /// journal's name and original start time, replays what it recorded and checkpoints the rest.
    #[cfg(feature = "durable")]
    pub fn with_journal(mut self, journal: Arc<dyn JournalHooks>) -> RunOptions {
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

    /// Whether the next state entered on this line gets an input no check has seen (nothing
    /// taken: [`Line::take_input_checked`] is what a visit that checks it calls).
    fn input_unchecked(&self) -> bool {
        self.unchecked_input.load(Ordering::Relaxed)
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
    mute: Vec<Arc<Mute>>,
    /// This line's own entry of `mute` (the last), when the line is a branch or iteration that
    /// ran before the redrive that reopened its attempt ([`Execution::muted_if_replayed`]).
    own_mute: Option<Arc<Mute>>,
    /// The Entered event id of the state last entered on this line (0: none yet): at the top
    /// level, the state whose failure ends the execution ([`Execution::reenter_for_redrive`]).
    entered: AtomicU64,
    /// What this line did not record while muted, from the last state it entered on (see
    /// [`MutedState`]).
    muted_state: Mutex<MutedState>,
}

/// The events of the state a muted line entered last (see [`Scope::mute`]), not recorded: a
/// line a redrive reopened that fails again without running anything live (a path error, a
/// Choice with no match) re-enters that state in the history with them
/// ([`Execution::reenter_muted`]).
#[cfg(feature = "durable")]
#[derive(Debug, Default)]
struct MutedState {
    /// The id the state's failure names as its Entered event (`Visit::runtime`): the line's
    /// last event when the muted Entered event was not recorded.
    entered_as: u64,
    /// The state's events, its Entered event first.
    events: Vec<(EventType, Details)>,
}

/// See [`Scope::captures`].
#[cfg(feature = "durable")]
type EventCapture = Arc<Mutex<Option<Vec<u64>>>>;

/// One line's mute flag (see [`Scope::mute`]), shared by the lines made from it.
#[cfg(feature = "durable")]
#[derive(Debug)]
struct Mute {
    /// Set while the line replays what the reopened attempt records again.
    on: std::sync::atomic::AtomicBool,
    /// What the line records first when it goes live again ([`Execution::unmute`]): a Map
    /// iteration's `MapIterationStarted`, not recorded while muted (the first run's is among the
    /// attempt's events). A redrive reruns a failed or aborted iteration ("reschedules and
    /// redrives only the iterations ... that failed or aborted"), and AWS starts each run of an
    /// iteration with its own `MapIterationStarted` (a retried Map records one per attempt for
    /// every iteration), so the rerun iteration is started again in the history before what it
    /// runs (docs/serve.md "RedriveExecution").
    restart: Mutex<Option<Restart>>,
}

/// An event a muted line records when it goes live again (see [`Mute::restart`]), on that
/// line: its position and the captures of the CONTEXTs it runs in.
#[cfg(feature = "durable")]
#[derive(Debug)]
struct Restart {
    line: Arc<Line>,
    captures: Vec<EventCapture>,
    event_type: EventType,
    details: Details,
}

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
    #[inline]
    fn muted(&self) -> bool {
        self.mute.iter().any(|m| m.on.load(Ordering::SeqCst))
    }
}

#[derive(Debug)]
struct Shared {
    clock: Clock,
    history: History,
    workflow_name: String,
    name: String,
    /// The name Task handlers, command handlers and callback listings see: the store name
    /// when a service's [`Identity`] renamed the execution, else [`Shared::name`]. Shared, so
    /// an attempt's [`crate::TaskContext`] holds it without copying it.
    task_name: Arc<str>,
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
    journal: Option<Arc<dyn JournalHooks>>,
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
        let arn_prefix = concat(&["arn:aws:states:", &region, ":", &account]);
        let name = name.unwrap_or_else(|| concat(&[&machine, "-", &seed_hex(seed)]));
        // Checked before the input is copied anywhere: cloning or serializing a document deeper
        // than the limit would recurse past the end of the stack. A refused input is kept as
        // `null`, and `finish` fails the execution before its first state.
        let input_failure = limits.check_payload(&name, input).err();
        let input = if input_failure.is_some() { &Value::Null } else { input };
        let id = match machine_type {
            MachineType::Standard => concat(&[&arn_prefix, ":execution:", &machine, ":", &name]),
            // AWS adds a uuid after the name; it comes from the seed, so runs stay reproducible
            // (a source of its own: the execution's random draws are the same in both types).
            MachineType::Express | MachineType::ExpressSync => {
                concat(&[&arn_prefix, ":express:", &machine, ":", &name, ":", &express_execution_uuid(seed)])
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
            state_machine_id: concat(&[&arn_prefix, ":stateMachine:", &machine]),
            role_arn: role_arn.unwrap_or_else(|| concat(&["arn:aws:iam::", &account, ":role/wfc-local"])),
            workflow_name: machine,
            arn_prefix,
            task_name: Arc::from(task_name.as_deref().unwrap_or(&name)),
            name,
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
                #[cfg(feature = "durable")]
                let failure = self.reenter_for_redrive(failure).await;
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
    #[inline]
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
        &self.shared.task_name
    }

    /// [`Execution::task_execution_name`], shared.
    pub(crate) fn task_execution_name_shared(&self) -> Arc<str> {
        Arc::clone(&self.shared.task_name)
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
            //
            // Without a journal a scope is never read (no operation ids, CONTEXTs, captures or
            // redrives), so the branch shares this line's instead of formatting a path of its own.
            #[cfg(feature = "durable")]
            scope: match self.shared.journal {
                Some(_) => Arc::new(self.muted_if_replayed(self.scope.branch_scope())),
                None => Arc::clone(&self.scope),
            },
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
            let own = Arc::new(Mute { on: std::sync::atomic::AtomicBool::new(true), restart: Mutex::default() });
            line.mute.push(Arc::clone(&own));
            line.own_mute = Some(own);
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
    /// [`Scope::mute`]): the redriven failure runs again here, so what follows is new. Each line
    /// that goes live records its restart event first ([`Mute::restart`]), outermost first.
    #[cfg(feature = "durable")]
    fn unmute(&self) {
        for m in &self.scope.mute {
            if m.on.swap(false, Ordering::SeqCst)
                && let Some(restart) = m.restart.lock().unwrap_or_else(|p| p.into_inner()).take()
            {
                self.record_restart(restart);
            }
        }
    }

    /// Records `restart` on its own line (see [`Mute::restart`]).
    #[cfg(feature = "durable")]
    #[cold]
    fn record_restart(&self, restart: Restart) {
        let Restart { line, captures, event_type, details } = restart;
        let previous = line.last.load(Ordering::SeqCst);
        let at = crate::history::EventTime::at(self.shared.clock.now());
        let id = self.shared.history.record(event_type, details, at, previous);
        line.last.store(id, Ordering::SeqCst);
        for capture in &captures {
            if let Some(ids) = capture.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                ids.push(id);
            }
        }
    }

    /// Whether this line records no history events now (see [`Scope::mute`]).
    #[inline]
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
            task_name: Arc::from(name.as_str()),
            name,
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
        self.record_at(event_type, || None, || details)
    }

    /// [`Execution::record`] with details built only when the history keeps events (at
    /// [`HistoryLevel::Express`] neither the details nor the timestamp are computed).
    #[inline]
    pub fn record_with<D: Into<Details>>(&self, event_type: EventType, details: impl FnOnce() -> D) -> u64 {
        self.record_at(event_type, || None, details)
    }

    /// A document for an event's details, shared with the events before it while it is the
    /// same JSON instead of copied (see [`History::share`]).
    pub fn share(&self, document: &Value) -> Arc<Value> {
        self.shared.history.share(document)
    }

    /// Whether this execution keeps its history's events ([`HistoryLevel::Full`]).
    #[inline]
    pub fn keeps_history(&self) -> bool {
        self.shared.history.keeps_events()
    }

    /// Whether recording an event only gives it an id: the express level, where no event is
    /// kept, without a journal (which mutes replayed lines and captures events for CONTEXTs).
    /// States that await nothing then visit through a [`visit::CountedVisit`].
    #[inline]
    pub(super) fn counts_only(&self) -> bool {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            return false;
        }
        !self.shared.history.keeps_events()
    }

    /// Records an event stamped `at` (now when it gives `None`; asked only when the history
    /// keeps events, so the express level pays nothing to decide the instant).
    #[inline]
    fn record_at<D: Into<Details>>(
        &self,
        event_type: EventType,
        at: impl FnOnce() -> Option<jiff::Timestamp>,
        details: impl FnOnce() -> D,
    ) -> u64 {
        if self.muted() {
            #[cfg(feature = "durable")]
            self.keep_muted(event_type, details);
            return self.cursor.last.load(Ordering::SeqCst);
        }
        let id = match self.shared.history.count() {
            Some(id) => id,
            None => {
                let previous = self.cursor.last.load(Ordering::Acquire);
                // The instant only: its text is written when something reads it (EventTime).
                let at = at().unwrap_or_else(|| self.shared.clock.now());
                self.shared.history.record(event_type, details(), crate::history::EventTime::at(at), previous)
            }
        };
        // Release, not SeqCst: a line of control records its events one after another (its
        // states run in sequence, and a task that moves between threads is synchronized by the
        // scheduler), so nothing needs this store in a total order with other atomics. On x86
        // a SeqCst store is an `xchg`, a locked instruction (two a state), where a Release
        // store is a plain `mov`: the instruction counts do not show it, the clock does
        // (docs/benchmarks.md, twenty-third session).
        self.cursor.last.store(id, Ordering::Release);
        // Only a journaled line runs in CONTEXTs that capture events: elsewhere the test is all
        // an event pays (the loop is out of line).
        #[cfg(feature = "durable")]
        if !self.scope.captures.is_empty() {
            self.capture(id);
        }
        id
    }

    /// Counts events recorded back to back on a line that only counts (see
    /// [`Execution::counts_only`]): the ids that one [`Execution::record_with`] call each would
    /// give, with one atomic add for all of them. Returns the last id. The caller must not await
    /// or record anything between the events it stands for; elsewhere (a journaled line, which
    /// may be muted or capture its events) they are recorded one by one.
    #[inline]
    pub(super) fn count_back_to_back(&self, events: &[EventType]) -> u64 {
        if self.counts_only()
            && let Some(id) = self.shared.history.count_many(events.len() as u64)
        {
            self.cursor.last.store(id, Ordering::Release);
            return id;
        }
        let mut last = self.cursor.last.load(Ordering::Acquire);
        for event in events {
            last = self.record_with(*event, Details::default);
        }
        last
    }

    /// [`Execution::check_history`] as it will be once `more` events are recorded.
    pub(super) fn check_history_after(&self, more: usize) -> Result<(), Failure> {
        self.shared.limits.check_history(self.shared.history.len().saturating_add(more))
    }

    /// Adds event `id` to the captures of the CONTEXTs running around this line.
    #[cfg(feature = "durable")]
    #[inline(never)]
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

#[cfg(test)]
mod tests {
    use super::{concat, seed_hex};

    #[test]
    fn names_are_written_as_format_wrote_them() {
        for seed in [0, 1, 0xabc, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(seed_hex(seed), format!("{seed:016x}"));
        }
        assert_eq!(concat(&["arn:aws:states:", "us-east-1", ":", "123"]), "arn:aws:states:us-east-1:123");
        assert_eq!(concat(&[]), "");
    }
}
