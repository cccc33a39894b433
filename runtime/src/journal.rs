//! What a line of control asks its durable journal: the [`JournalHooks`] trait (feature
//! `durable`), and the operation model its answers are given in.
//!
//! The journal itself (`Journal`, with the `Store` trait its operations are checkpointed to) is
//! the `wfc-journal` crate; the runtime sees it only through this trait, as
//! [`crate::RunOptions::with_journal`] holds it (`Arc<dyn JournalHooks>`), so a generated
//! program links no journal unless it attaches one. Each method is one question or record of
//! the hooks in `exec/hooks.rs` (and of the Serverless Workflow engine, the Map Runs and the
//! callbacks); the replay rules behind them are docs/durable.md's. Methods that run a piece of
//! the execution inside an operation (a Task attempt, a subflow, a callback's handler) take it
//! as a boxed future: the box is made only when a journal is attached.

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::callback::{Limits, Registration, WaitingTask};
use crate::events::EventBus;
use crate::task::{Attempt, StepRequest};
use crate::{Clock, ExecutionResult, Failure, History};

/// An error of the journal's store, as the hooks report it (the runtime only shows it).
pub type StoreFailure = Box<dyn std::error::Error + Send + Sync>;

/// What an execution asks its durable journal (see the module documentation). Operation ids
/// are built by the runtime (`<state>#<visit>.<attempt>` under the line's CONTEXT path), and
/// `parent` is the CONTEXT or CHAINED_INVOKE an operation belongs to.
pub trait JournalHooks: Send + Sync + fmt::Debug {
    // The execution's facts.

    /// The execution's stored name (a resumed execution keeps it).
    fn name(&self) -> &str;
    /// `$$.Execution.StartTime` of the execution's first start.
    fn start_time(&self) -> &str;
    /// How often the execution was redriven.
    fn redrive_count(&self) -> u32;
    /// `Some` when a suspending journal parked the run (with the instant it wants to be resumed
    /// at, if any): what unwinds the lines of control then is not the execution's failure.
    fn suspended(&self) -> Option<Option<i64>>;
    /// Whether a Task attempt must say what it asks for ([`StepRequest`]): a suspending
    /// journal reports an attempt instead of running it.
    fn wants_step_requests(&self) -> bool;
    /// Keeps `history` (the execution's, as it grows) to write it with the checkpoints.
    fn attach_history(&self, history: &History);
    /// Records the execution's end.
    fn complete<'a>(&'a self, result: &'a ExecutionResult) -> BoxFuture<'a, Result<(), StoreFailure>>;

    // Looking up what was recorded, and what a redrive reopened.

    /// The recorded operation `id`, if any.
    fn recorded(&self, id: &str) -> Option<Operation>;
    /// Whether operation `id` ended before this run (a redrive runs its state again).
    fn ended_before_run(&self, id: &str) -> bool;
    /// Whether CONTEXT `id` had failed when the execution was redriven (it may be reopened).
    fn may_reopen(&self, id: &str) -> bool;
    /// Reopens CONTEXT `id`: its failed lines run again.
    fn reopen(&self, id: &str);
    /// Whether an operation under `context` was recorded.
    fn ran_under(&self, context: &str) -> bool;
    /// Whether `id` was reopened.
    fn is_reopened(&self, id: &str) -> bool;
    /// The execution's history as the store holds it (with the events a stop and its redrive
    /// appended, which the replay does not record): a re-entry on redrive numbers itself by it.
    fn stored_history(&self) -> BoxFuture<'_, Result<Vec<crate::HistoryEvent>, StoreFailure>>;

    // Task attempts and timers.

    /// One Task attempt as the STEP `id`: replayed when recorded, else `run` (checkpointed).
    fn step<'a>(
        &'a self,
        id: String,
        parent: Option<String>,
        name: &'a str,
        request: Option<StepRequest>,
        run: BoxFuture<'a, Attempt>,
    ) -> BoxFuture<'a, Result<Attempt, Failure>>;
    /// Records the finished STEP `id` (of `subtype`) with `result` in a checkpoint of its own,
    /// committed before this returns (with the outcomes deferred until then): a fact the run
    /// decided, not work it ran, so no STARTED precedes it. Nothing when `id` is recorded.
    fn record_step<'a>(
        &'a self,
        id: String,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        result: Value,
    ) -> BoxFuture<'a, Result<(), Failure>>;
    /// A durable timer (`subtype` `Wait` or `Retry`, ...) of `delay` on `clock`.
    #[allow(clippy::too_many_arguments)] // each is one field of the operation
    fn sleep<'a>(
        &'a self,
        clock: &'a Clock,
        id: String,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        delay: Duration,
    ) -> BoxFuture<'a, Result<(), Failure>>;
    /// One `.waitForTaskToken` attempt as the CALLBACK `id`: `handler`, then the wait for its
    /// completion, in memory (`registration`) and through the store.
    #[allow(clippy::too_many_arguments)] // each is one field of the operation
    fn callback<'a>(
        &'a self,
        clock: &'a Clock,
        id: String,
        parent: Option<String>,
        name: &'a str,
        registration: Registration,
        waiting: WaitingTask,
        limits: Limits,
        handler: BoxFuture<'a, Attempt>,
    ) -> BoxFuture<'a, Result<Attempt, Failure>>;
    /// `$$.Task.Token` of the attempt `id`: `own` unless the journal's service issues callback
    /// ids (a Lambda durable function).
    #[allow(clippy::too_many_arguments)] // each is one field of the operation
    fn callback_token<'a>(
        &'a self,
        clock: &'a Clock,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        own: String,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> BoxFuture<'a, Result<String, Failure>>;

    // Scopes: Parallel and Map attempts, branches and iterations (CONTEXT operations).

    /// Starts CONTEXT `id`.
    fn context_start<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
    ) -> BoxFuture<'a, Result<(), Failure>>;
    /// Whether a CONTEXT keeps the history events its line recorded.
    fn keeps_context_events(&self) -> bool;
    /// CONTEXT `id` when it finished (a replay skips it).
    fn finished_context(&self, id: &str, name: &str, keeps_history: bool) -> Result<Option<FinishedContext>, Failure>;
    /// CONTEXT `id` as it had failed before a redrive reopened it.
    fn reopened_context(&self, id: &str, name: &str, keeps_history: bool) -> Result<Option<FinishedContext>, Failure>;
    /// Finishes CONTEXT `id` with `outcome` and the `events` its line recorded.
    #[allow(clippy::too_many_arguments)] // each is one field of the operation
    fn context_end_with_events<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        outcome: &'a Result<Value, Failure>,
        events: Option<ContextEvents>,
    ) -> BoxFuture<'a, Result<(), Failure>>;

    // Subflows and Map Run children (CHAINED_INVOKE operations).

    /// A Serverless Workflow subflow the state waits for, as the CHAINED_INVOKE `id`.
    #[allow(clippy::too_many_arguments)] // each is one field of the operation
    fn subflow<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        workflow_id: &'a str,
        version: Option<&'a str>,
        input: &'a Value,
        child: BoxFuture<'a, Result<Value, Failure>>,
    ) -> BoxFuture<'a, Result<Value, Failure>>;
    /// A subflow started without waiting: whether this call started it (else it was already).
    fn detached_subflow(
        &self,
        id: &str,
        name: &str,
        workflow_id: &str,
        version: Option<&str>,
        input: &Value,
    ) -> Result<bool, Failure>;
    /// `child` as the CHAINED_INVOKE `id` of `subtype` (a Map Run child).
    fn subflow_as<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        child: BoxFuture<'a, Result<Value, Failure>>,
    ) -> BoxFuture<'a, Result<Value, Failure>>;
    /// The Lambda function a Map Run child is chained to, when configured.
    fn map_run_function(&self) -> Option<String>;
    /// A Map Run child run by invoking `function` with `envelope`, as the CHAINED_INVOKE `id`.
    fn chained_map_run_child<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        function: &'a str,
        envelope: &'a Value,
    ) -> BoxFuture<'a, Result<Value, Failure>>;

    // Serverless Workflow events.

    /// A produced event (`publish` builds and publishes it), replayed when recorded.
    #[allow(clippy::too_many_arguments)] // each is one field of the operation
    fn produce<'a>(
        &'a self,
        id: String,
        parent: Option<String>,
        name: &'a str,
        event_name: &'a str,
        bus: &'a EventBus,
        publish: Box<dyn FnOnce() -> Value + Send + 'a>,
    ) -> BoxFuture<'a, Result<Value, Failure>>;
    /// A wait for events through the store's inbox: the events taken (index in `wait.defs`,
    /// event) and whether the wait is complete.
    fn event_wait<'a>(
        &'a self,
        clock: &'a Clock,
        bus: &'a EventBus,
        wait: EventWait<'a>,
    ) -> BoxFuture<'a, Result<(Vec<(usize, Value)>, bool), Failure>>;

    // The store's key/value rows (a DISTRIBUTED Map Run's limits and progress).

    /// The row `key`, or `None`; an error when the store has no key/value table.
    fn kv_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreFailure>>;
    /// Writes the row `key`.
    fn kv_put<'a>(&'a self, key: &'a str, value: Value) -> BoxFuture<'a, Result<(), StoreFailure>>;
    /// Deletes the row `key`; whether there was one.
    fn kv_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreFailure>>;
    /// Tells the other processes on the store that rows about `topic` changed.
    fn kv_signal<'a>(&'a self, topic: &'a str) -> BoxFuture<'a, Result<(), StoreFailure>>;
    /// The topics signalled from now on, or `None` when the store cannot tell.
    fn kv_signals(&self) -> BoxFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>>;
}

/// What kind of operation a journal entry is (the AWS `OperationType` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpType {
    /// A unit of work with a result: one Task attempt.
    Step,
    /// A durable timer: a Wait state or a retry back-off.
    Wait,
    /// Waiting for an external completion by task token (`.waitForTaskToken`).
    Callback,
    /// An invocation of another workflow: a Serverless Workflow subflow that the parent waits
    /// for (its operations' ids start with the CHAINED_INVOKE's id and `/`).
    ChainedInvoke,
    /// A scope grouping other operations: a Parallel or Map state's attempt, and each of its
    /// branches or iterations (their operations' ids start with the context's id and `/`).
    Context,
}

/// Where an operation is (the AWS `OperationStatus` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpStatus {
    /// Started and not finished: a Task in flight, or a timer not yet fired.
    Started,
    /// Finished with a result.
    Succeeded,
    /// Finished with an error.
    Failed,
    /// Finished by exceeding its timeout.
    TimedOut,
    /// Abandoned.
    Cancelled,
}

impl OpType {
    /// The name stored and printed (`STEP`, `WAIT`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OpType::Step => "STEP",
            OpType::Wait => "WAIT",
            OpType::Callback => "CALLBACK",
            OpType::ChainedInvoke => "CHAINED_INVOKE",
            OpType::Context => "CONTEXT",
        }
    }

    /// Parses [`OpType::as_str`].
    pub fn parse(text: &str) -> Option<OpType> {
        [OpType::Step, OpType::Wait, OpType::Callback, OpType::ChainedInvoke, OpType::Context]
            .into_iter()
            .find(|t| t.as_str() == text)
    }
}

impl OpStatus {
    /// The name stored and printed (`STARTED`, `SUCCEEDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OpStatus::Started => "STARTED",
            OpStatus::Succeeded => "SUCCEEDED",
            OpStatus::Failed => "FAILED",
            OpStatus::TimedOut => "TIMED_OUT",
            OpStatus::Cancelled => "CANCELLED",
        }
    }

    /// Parses [`OpStatus::as_str`].
    pub fn parse(text: &str) -> Option<OpStatus> {
        [OpStatus::Started, OpStatus::Succeeded, OpStatus::Failed, OpStatus::TimedOut, OpStatus::Cancelled]
            .into_iter()
            .find(|s| s.as_str() == text)
    }

    /// Whether the operation has finished (its outcome can be replayed).
    pub fn is_terminal(self) -> bool {
        !matches!(self, OpStatus::Started)
    }
}

/// One journal entry, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// Deterministic id: state path, visit and attempt (see docs/durable.md).
    pub id: String,
    /// STEP, WAIT, ...
    #[serde(rename = "type")]
    pub op_type: OpType,
    /// Finer kind: `Task`, `Wait`, `Retry`.
    pub subtype: String,
    /// The state's name.
    pub name: String,
    /// Where it is.
    pub status: OpStatus,
    /// How many times this operation was started for real (not replayed): more than 1 means the
    /// process stopped while it was in flight and it ran again.
    pub starts: u32,
    /// The result of a succeeded STEP.
    pub result: Option<Value>,
    /// The error name of a failed or timed-out STEP.
    pub error: Option<String>,
    /// The error cause.
    pub cause: Option<String>,
    /// When a WAIT fires (or a CALLBACK times out), in milliseconds since the Unix epoch on the
    /// execution's clock.
    pub due_at_ms: Option<i64>,
    /// The task token of a CALLBACK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_token: Option<String>,
    /// How many SendTaskHeartbeat a CALLBACK received through the store.
    #[serde(default)]
    pub heartbeats: u64,
}

/// What [`JournalHooks::event_wait`] waits for.
pub struct EventWait<'a> {
    /// The operation id.
    pub id: String,
    /// The enclosing CONTEXT or CHAINED_INVOKE.
    pub parent: Option<String>,
    /// The state's name.
    pub name: &'a str,
    /// The CALLBACK's token (unique in the store).
    pub token: String,
    /// The events it accepts.
    pub defs: &'a [&'a wfc_ir::sw::EventDef],
    /// Whether it needs one event of each definition (else the first match of any).
    pub all: bool,
    /// How long it waits at most.
    pub timeout: Option<Duration>,
}

/// The history events a Parallel branch or Map iteration (or a whole Parallel or Map attempt)
/// recorded, stored with its CONTEXT so a replay that skips it records them again.
#[derive(Debug, Clone)]
pub enum ContextEvents {
    /// The events themselves (history level full).
    Kept(Vec<crate::HistoryEvent>),
    /// Only how many there were (history level express keeps no events, but numbers them).
    Counted(u64),
}

/// A finished CONTEXT operation, as a replay returns it without running its branch.
#[derive(Debug, Clone)]
pub struct FinishedContext {
    /// The branch's output, or its failure.
    pub outcome: Result<Value, Failure>,
    /// The events it recorded.
    pub events: ContextEvents,
}
