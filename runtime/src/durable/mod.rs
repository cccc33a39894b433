//! Durable executions' store side: the [`Store`] trait an execution's journal is checkpointed
//! to, its types, the shared store format ([`migrations`]), the registry of versions
//! ([`registry`]) and the helpers both stores (`wfc-sqlite`, `wfc-postgres`) share.
//!
//! The journal itself (`Journal`, replay, suspension, the in-memory `ReplayStore`) is the
//! `wfc-journal` crate, outside the runtime every generated program links; the runtime asks it
//! through [`crate::journal::JournalHooks`]. The model mirrors the AWS Lambda durable functions
//! `Operation` model (see docs/durable.md):
//!
//! - An execution is created **idempotently by name** ([`Store::open_execution`]): the same name
//!   and input return the existing execution (resume); the same name with a different input is
//!   an error.
//! - Every side-effecting step of an execution is an [`Operation`] with a deterministic id derived
//!   from its state path and visit counter, so a replay finds the same ids in the same places.
//! - Updates are written in atomic batches ([`Store::checkpoint`]) guarded by a single-use
//!   [`CheckpointToken`]: each checkpoint returns the next token, and a stale token (a second
//!   process resumed the execution meanwhile) is rejected.

pub mod migrations;
mod no_records;
pub mod registry;

pub use registry::{Definition, Language, Registry, Syntax, WorkflowVersion};
// The operation model is the vocabulary of the journal hooks, so the runtime defines it.
pub use crate::journal::{OpStatus, OpType, Operation};

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::HistoryEvent;

/// An operation row as both stores read it, before its enums and JSON are checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOperation {
    /// `op_id`.
    pub id: String,
    /// `type`.
    pub op_type: String,
    /// `subtype`.
    pub subtype: String,
    /// `name`.
    pub name: String,
    /// `status`.
    pub status: String,
    /// `starts`.
    pub starts: i64,
    /// `result` (JSON text).
    pub result: Option<String>,
    /// `error`.
    pub error: Option<String>,
    /// `cause`.
    pub cause: Option<String>,
    /// `due_at`.
    pub due_at_ms: Option<i64>,
    /// `callback_token`.
    pub callback_token: Option<String>,
    /// `heartbeats`.
    pub heartbeats: i64,
}

/// Checks a stored operation row: every field that replay relies on must be well formed, so
/// corrupt or foreign state fails with a clear error instead of replaying nonsense.
pub fn parse_operation(raw: RawOperation) -> Result<Operation, StoreError> {
    let corrupt = |what: String| StoreError::Backend(format!("operation '{}' is corrupt: {what}", raw.id));
    let op_type =
        OpType::parse(&raw.op_type).ok_or_else(|| corrupt(format!("unknown operation type '{}'", raw.op_type)))?;
    let status =
        OpStatus::parse(&raw.status).ok_or_else(|| corrupt(format!("unknown operation status '{}'", raw.status)))?;
    let result = match raw.result.as_deref() {
        Some(text) => Some(serde_json::from_str(text).map_err(|e| corrupt(format!("its result is not JSON: {e}")))?),
        None => None,
    };
    let starts = u32::try_from(raw.starts).map_err(|_| corrupt(format!("starts is {}", raw.starts)))?;
    let heartbeats = u64::try_from(raw.heartbeats).map_err(|_| corrupt(format!("heartbeats is {}", raw.heartbeats)))?;
    if raw.id.is_empty() || raw.name.is_empty() {
        return Err(corrupt("it has an empty id or state name".into()));
    }
    if matches!(status, OpStatus::Failed | OpStatus::TimedOut) && raw.error.is_none() {
        return Err(corrupt(format!("it is {} with no error name", status.as_str())));
    }
    if op_type == OpType::Callback && raw.callback_token.is_none() {
        return Err(corrupt("a CALLBACK with no task token".into()));
    }
    Ok(Operation {
        op_type,
        status,
        result,
        starts,
        heartbeats,
        id: raw.id,
        subtype: raw.subtype,
        name: raw.name,
        error: raw.error,
        cause: raw.cause,
        due_at_ms: raw.due_at_ms,
        callback_token: raw.callback_token,
    })
}

/// A requested change to one operation, applied as part of an atomic batch.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationUpdate {
    /// The operation's id.
    pub id: String,
    /// Its type (used when the update creates the row).
    pub op_type: OpType,
    /// Its subtype.
    pub subtype: String,
    /// The state's name.
    pub name: String,
    /// The new status. `STARTED` on a row increments [`Operation::starts`].
    pub status: OpStatus,
    /// The result, for `SUCCEEDED`.
    pub result: Option<Value>,
    /// The error name, for `FAILED`/`TIMED_OUT`.
    pub error: Option<String>,
    /// The cause, for `FAILED`/`TIMED_OUT`.
    pub cause: Option<String>,
    /// A WAIT's fire-at instant, or a CALLBACK's timeout (milliseconds since the Unix epoch).
    pub due_at_ms: Option<i64>,
    /// A CALLBACK's task token (set when it starts; unique in the store).
    pub callback_token: Option<String>,
    /// The CONTEXT operation this one belongs to (a Parallel branch or Map iteration, or the
    /// Parallel or Map state itself), `None` at the top level. The stores do not keep it (it is
    /// the id's scope prefix); the Lambda adapter sends it as `ParentId`.
    pub parent_id: Option<String>,
    /// A CALLBACK's HeartbeatSeconds, when it starts (the Lambda adapter's
    /// `CallbackOptions.HeartbeatTimeoutSeconds`; the stores count heartbeats instead).
    pub heartbeat_seconds: Option<u64>,
    /// A CHAINED_INVOKE's target function, when it starts on a service's journal (the Lambda
    /// adapter's `ChainedInvokeOptions.FunctionName`, its `result` then being the payload the
    /// target gets); `None` in wfc's stores, where the child runs in the parent's process.
    pub function_name: Option<String>,
}

/// The single-use right to write the next checkpoint of one execution. Every successful
/// checkpoint returns the next token; presenting an old one is [`StoreError::StaleToken`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointToken {
    /// Bumped each time a process opens (claims) the execution: fences out an older process.
    pub epoch: i64,
    /// Bumped by each checkpoint.
    pub seq: i64,
}

/// History events written with a checkpoint ([`Store::checkpoint_with_history`]): a running
/// execution's history as it grows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryWrite {
    /// Events to insert (an id already stored is replaced).
    pub events: Vec<HistoryEvent>,
    /// First delete the stored events with greater ids: a resumed run whose replay recorded the
    /// history differently from the run before it replaces that run's tail.
    pub truncate_after: Option<u64>,
}

/// Where an execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionStatus {
    /// Started (or resumed) and not finished.
    Running,
    /// Finished successfully.
    Succeeded,
    /// Finished with an error.
    Failed,
    /// Exceeded the workflow's TimeoutSeconds.
    TimedOut,
    /// Stopped by `StopExecution` (`wfc executions stop`).
    Aborted,
}

impl ExecutionStatus {
    /// The name stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Succeeded => "SUCCEEDED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::TimedOut => "TIMED_OUT",
            ExecutionStatus::Aborted => "ABORTED",
        }
    }

    /// Parses [`ExecutionStatus::as_str`].
    pub fn parse(text: &str) -> Option<ExecutionStatus> {
        [
            ExecutionStatus::Running,
            ExecutionStatus::Succeeded,
            ExecutionStatus::Failed,
            ExecutionStatus::TimedOut,
            ExecutionStatus::Aborted,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

impl From<crate::Status> for ExecutionStatus {
    fn from(status: crate::Status) -> ExecutionStatus {
        match status {
            crate::Status::Succeeded => ExecutionStatus::Succeeded,
            crate::Status::Failed => ExecutionStatus::Failed,
            crate::Status::TimedOut => ExecutionStatus::TimedOut,
        }
    }
}

/// One execution, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// The execution name (unique in the store).
    pub name: String,
    /// The workflow's name.
    pub workflow: String,
    /// Where it is.
    pub status: ExecutionStatus,
    /// The input it was started with.
    pub input: Value,
    /// The output, once succeeded.
    pub output: Option<Value>,
    /// The error name, once failed or timed out.
    pub error: Option<String>,
    /// The error cause.
    pub cause: Option<String>,
    /// `$$.Execution.StartTime` of the first start, kept so a resumed execution sees the same.
    pub start_time: String,
    /// The current fencing epoch (how many times the execution was opened).
    pub epoch: i64,
    /// How many checkpoints were written.
    pub checkpoint_seq: i64,
    /// Creation time, milliseconds since the Unix epoch (wall clock).
    pub created_at_ms: i64,
    /// Last update, milliseconds since the Unix epoch (wall clock).
    pub updated_at_ms: i64,
    /// The worker (or `wfc run` process) holding the execution's lease, if any.
    #[serde(default)]
    pub owner: Option<String>,
    /// When the lease ends (ms since the Unix epoch); after it, a worker may claim the execution.
    #[serde(default)]
    pub lease_until_ms: Option<i64>,
    /// When a released execution is due to run again (a timer, ms since the Unix epoch);
    /// `i64::MAX`: only when a callback completes.
    #[serde(default)]
    pub wake_at_ms: Option<i64>,
    /// The IR hash ([`definition_hash`]) of the definition it was started with. The only
    /// identification of the definition for executions started before versions existed.
    #[serde(default)]
    pub definition_hash: Option<String>,
    /// The workflow version it is pinned to ([`registry`]): every process resumes it on that
    /// version. `None`: started by a wfc without versions (or a caller without a source); the
    /// first process whose definition fits adopts it (see docs/durable.md).
    #[serde(default)]
    pub version_id: Option<String>,
    /// Counts callback completions through the store, so a worker releasing the execution knows
    /// whether one arrived while it held it.
    #[serde(default)]
    pub signals: i64,
    /// How many times the execution was redriven ([`Store::redrive_execution`]):
    /// `$$.Execution.RedriveCount`, and the generation of the states a redrive runs again.
    #[serde(default)]
    pub redrive_count: i64,
    /// When it was last redriven (ms since the Unix epoch).
    #[serde(default)]
    pub redrive_date_ms: Option<i64>,
}

impl ExecutionRecord {
    /// A running execution's record as it stands before any store has touched it (epoch 1, no
    /// checkpoint, no owner, no timers): what in-memory stores and test harnesses start from.
    pub fn running(name: String, workflow: String, input: Value, start_time: String) -> ExecutionRecord {
        ExecutionRecord {
            name,
            workflow,
            status: ExecutionStatus::Running,
            input,
            output: None,
            error: None,
            cause: None,
            start_time,
            epoch: 1,
            checkpoint_seq: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
            owner: None,
            lease_until_ms: None,
            wake_at_ms: None,
            definition_hash: None,
            version_id: None,
            signals: 0,
            redrive_count: 0,
            redrive_date_ms: None,
        }
    }
}

/// What [`Store::open_execution`] asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewExecution {
    /// The execution name.
    pub name: String,
    /// The workflow's name.
    pub workflow: String,
    /// The input.
    pub input: Value,
    /// `$$.Execution.StartTime` to record if the execution is new.
    pub start_time: String,
    /// The IR hash of the definition ([`definition_hash`]): a resume of an unpinned execution
    /// (started before versions existed) with the same hash adopts `version_id`.
    pub definition_hash: Option<String>,
    /// The version this process runs (registered in the store's [`Registry`]). A new execution
    /// is pinned to it; an existing one pinned to another version is left as it is
    /// ([`StoreError::OtherVersion`]).
    pub version_id: Option<String>,
}

/// A hash of a definition's IR as JSON: what wfc stored with executions before versions existed
/// (it changes with the IR, the optimizer or wfc itself; versions do not, see [`registry`]).
/// Still stored, to match executions of older stores to the definition that started them.
/// Generated code carries it as a constant ([`crate::DefinitionId`]), computed by the compiler
/// with the same function ([`wfc_ir::Workflow::definition_hash`]).
pub fn definition_hash(workflow: &wfc_ir::Workflow) -> String {
    workflow.definition_hash()
}

/// The default lease of a claimed execution: a holder renews it every third of it.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// One claimed execution, or the name of one whose stored state could not be loaded and why.
pub type ClaimResult = Result<Claim, (String, StoreError)>;

/// How a callback is completed through the store (SendTaskSuccess / SendTaskFailure).
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackCompletion {
    /// SendTaskSuccess with this output.
    Success(Value),
    /// SendTaskFailure with this error and cause.
    Failure {
        /// The error name.
        error: String,
        /// The cause.
        cause: String,
    },
}

/// An opened execution: its record, its journal and the token for its next checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The execution (status RUNNING unless it had already finished).
    pub record: ExecutionRecord,
    /// Every operation recorded so far.
    pub operations: Vec<Operation>,
    /// The token for the next checkpoint (the epoch was bumped by this open).
    pub token: CheckpointToken,
    /// Whether the execution already existed (this open is a resume).
    pub existed: bool,
}

/// How an execution ended, for [`Store::finish`].
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The final status (not RUNNING).
    pub status: ExecutionStatus,
    /// The output when succeeded.
    pub output: Option<Value>,
    /// The error name when failed.
    pub error: Option<String>,
    /// The cause when failed.
    pub cause: Option<String>,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The execution exists with another input (names are idempotency keys).
    #[error(
        "execution '{0}' already exists with a different input (an execution name can be reused only with the same input)"
    )]
    InputMismatch(String),
    /// No execution has that name.
    #[error("no execution is named '{0}'")]
    NotFound(String),
    /// The token was already used, or another process opened the execution since.
    #[error("stale checkpoint token for execution '{0}': another process resumed it, or the token was already used")]
    StaleToken(String),
    /// An update is not allowed (for instance it changes a finished operation).
    #[error("invalid checkpoint for execution '{execution}': {message}")]
    InvalidUpdate {
        /// The execution.
        execution: String,
        /// What is wrong.
        message: String,
    },
    /// The store URL is not understood.
    #[error("invalid store URL '{0}': expected sqlite:PATH or postgres://...")]
    BadUrl(String),
    /// `wfc_stores::connect_existing` found no SQLite database at this path (nothing was created).
    #[error("no store at {0}: the file does not exist")]
    NoStore(String),
    /// No CALLBACK waits for this token (never issued, or already completed or timed out).
    #[error("no task is waiting for the task token '{0}' (unknown, completed or timed out)")]
    UnknownToken(String),
    /// The execution is pinned to another version of its workflow than the one this process
    /// runs: it was left as it is, for a process that runs its version (or an upgrade).
    #[error(
        "execution '{execution}' is pinned to version {pinned} of its workflow, not to version {given} that this process runs; it was left as it is: resume it with a process that runs its version (`wfc worker` or `wfc run` load it from the store), or move it with `wfc executions upgrade`"
    )]
    OtherVersion {
        /// The execution.
        execution: String,
        /// The version it is pinned to (`legacy:<hash>` for an unpinned one).
        pinned: String,
        /// The version the caller runs.
        given: String,
    },
    /// The store was written by a newer wfc.
    #[error(
        "the store has schema version {found}, newer than this wfc understands ({supported}); it was not changed: use a newer wfc"
    )]
    SchemaTooNew {
        /// The store's schema version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// The store was built without support for this URL's backend.
    #[error("this build of wfc has no support for '{0}' (for a postgres:// URL: the wfc-stores feature `postgres`)")]
    Unsupported(String),
    /// The database failed (I/O, corruption, an unknown schema version).
    #[error("store error: {0}")]
    Backend(String),
}

/// The change [`Store::gather_start_event`] applies to a workflow's stored start groups: the
/// groups, changed, and the instance (with its events) an event completed, if any.
pub type StartGather = Box<
    dyn FnOnce(Vec<crate::starts::StartGroup>) -> (Vec<crate::starts::StartGroup>, Option<(NewExecution, Vec<Value>)>)
        + Send,
>;

/// A durable store of executions, their operation journals and histories. Object safe, so a
/// journal holds `Arc<dyn Store>`; every method is async and implementations keep blocking I/O
/// off the async threads.
pub trait Store: Send + Sync + fmt::Debug {
    /// Creates the execution named `new.name`, or opens it if it exists with the same input
    /// (different input: [`StoreError::InputMismatch`]). Opening bumps the fencing epoch, so a
    /// token held by an older process becomes stale. A finished execution is returned as is.
    fn open_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<Claim, StoreError>>;

    /// Every operation of an execution, in the order they were first recorded.
    fn load_journal<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<Operation>, StoreError>>;

    /// Applies `updates` atomically if `token` is current, and returns the next token.
    fn checkpoint<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>>;

    /// Records the end of the execution (guarded by `token`, like a checkpoint).
    fn finish<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>>;

    /// Every execution, newest first.
    fn list_executions(&self) -> BoxFuture<'_, Result<Vec<ExecutionRecord>, StoreError>>;

    /// The newest executions first (then by name), at most `limit`: of `workflow` if given, of
    /// `status` if given, whose name contains `name_contains` (ASCII case-insensitive) if given,
    /// and with `after` = the `(created_at_ms, name)` of the last record of the previous page,
    /// those that come after it in that order (keyset paging: a page costs the same however
    /// deep it is, and executions started meanwhile do not shift it). What a listing shows,
    /// read with the store's indexes and a limit instead of every record. The default filters
    /// [`Store::list_executions`].
    fn list_executions_page<'a>(
        &'a self,
        workflow: Option<&'a str>,
        status: Option<ExecutionStatus>,
        name_contains: Option<&'a str>,
        after: Option<(i64, &'a str)>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ExecutionRecord>, StoreError>> {
        Box::pin(async move {
            let needle = name_contains.map(str::to_ascii_lowercase);
            let mut records = self.list_executions().await?;
            records.retain(|r| {
                workflow.is_none_or(|w| r.workflow == w)
                    && status.is_none_or(|s| r.status == s)
                    && needle.as_deref().is_none_or(|n| r.name.to_ascii_lowercase().contains(n))
                    && after.is_none_or(|(at, name)| {
                        r.created_at_ms < at || (r.created_at_ms == at && r.name.as_str() > name)
                    })
            });
            records.truncate(limit);
            Ok(records)
        })
    }

    /// One execution, or `None`.
    fn describe_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ExecutionRecord>, StoreError>>;

    /// Appends history events (an event id already stored is replaced: a resumed run
    /// re-records the history from its start).
    fn append_history<'a>(&'a self, name: &'a str, events: Vec<HistoryEvent>) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The stored history, in event-id order.
    fn read_history<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>>;

    /// [`Store::checkpoint`] that also writes `history` (the events of the running execution
    /// that this checkpoint makes true, see docs/durable.md "Live history") in the same
    /// transaction. The default writes them after the checkpoint, for stores that keep no
    /// history of their own.
    fn checkpoint_with_history<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
        history: HistoryWrite,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        Box::pin(async move {
            let next = self.checkpoint(name, token, updates).await?;
            if !history.events.is_empty() {
                self.append_history(name, history.events).await?;
            }
            Ok(next)
        })
    }

    /// [`Store::finish`] that also writes the last `history` events in the same transaction.
    /// The default writes them first, then finishes.
    fn finish_with_history<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
        history: HistoryWrite,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        Box::pin(async move {
            if !history.events.is_empty() {
                self.append_history(name, history.events).await?;
            }
            self.finish(name, token, completion).await
        })
    }

    /// [`Store::finish_with_history`] that first applies `updates` (the run's outcomes deferred to
    /// its next checkpoint, see `Journal::complete`), guarded by `token`. The stores write it all
    /// in one transaction, so an execution's end is one commit instead of a checkpoint and then
    /// its finish; the default does those two.
    fn finish_with_updates<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
        completion: Completion,
        history: HistoryWrite,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        Box::pin(async move {
            let token = if updates.is_empty() { token } else { self.checkpoint(name, token, updates).await? };
            self.finish_with_history(name, token, completion, history).await
        })
    }

    /// The stored events with ids greater than `after`, in event-id order, at most `limit`
    /// (`reverse`: the events with ids less than `after`, `0` meaning from the last, newest
    /// first): a page of a long history, or what a viewer has not seen yet, read by the index
    /// instead of the whole history. The default filters [`Store::read_history`].
    fn read_history_page<'a>(
        &'a self,
        name: &'a str,
        after: u64,
        limit: usize,
        reverse: bool,
    ) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>> {
        Box::pin(async move {
            let mut events = self.read_history(name).await?;
            if reverse {
                events.reverse();
                events.retain(|e| after == 0 || e.id < after);
            } else {
                events.retain(|e| e.id > after);
            }
            events.truncate(limit);
            Ok(events)
        })
    }

    /// One operation of an execution, or `None`.
    fn load_operation<'a>(&'a self, name: &'a str, id: &'a str)
    -> BoxFuture<'a, Result<Option<Operation>, StoreError>>;

    /// SendTaskSuccess / SendTaskFailure from any process: finishes the STARTED CALLBACK holding
    /// `token` and makes its execution runnable; returns the execution's name.
    fn complete_callback<'a>(
        &'a self,
        token: &'a str,
        completion: CallbackCompletion,
    ) -> BoxFuture<'a, Result<String, StoreError>>;

    /// SendTaskHeartbeat from any process; returns the execution's name.
    fn heartbeat_callback<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<String, StoreError>>;

    /// StopExecution: a RUNNING execution becomes ABORTED with `error`/`cause`, and its epoch is
    /// bumped so the process running it is fenced out at its next checkpoint.
    fn stop_execution<'a>(
        &'a self,
        name: &'a str,
        error: Option<String>,
        cause: Option<String>,
    ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>>;

    /// RedriveExecution: a FAILED, TIMED_OUT or ABORTED execution becomes RUNNING again, its
    /// `redrive_count` one more and its `redrive_date_ms` now, runnable at once; its journal
    /// keeps every finished operation (the redriven run replays what succeeded and runs again
    /// the states that did not, see [`crate::durable`]), except those that were in flight when
    /// it ended (STARTED or CANCELLED), which run again. Its epoch is bumped. Another status is
    /// [`StoreError::InvalidUpdate`] saying it; no such execution: [`StoreError::NotFound`].
    fn redrive_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        Box::pin(async move { Err(StoreError::Unsupported(format!("redriving execution '{name}'"))) })
    }

    /// Creates the execution for workers to run (idempotent by name like
    /// [`Store::open_execution`], but claims nothing). Returns the record and whether it existed.
    fn create_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<(ExecutionRecord, bool), StoreError>>;

    /// Creates the execution `new.name` with `events` already in its inbox, in one transaction:
    /// an event-started Serverless Workflow instance, whose start state consumes them (`wfc event`
    /// without `--execution`). Idempotent by name: when the execution exists, nothing is added
    /// (its events came with it), so delivering the same start event again starts nothing new.
    /// Returns the record and whether it existed.
    fn create_execution_with_events(
        &self,
        new: NewExecution,
        events: Vec<Value>,
    ) -> BoxFuture<'_, Result<(ExecutionRecord, bool), StoreError>> {
        let _ = events;
        Box::pin(
            async move { Err(StoreError::Unsupported(format!("starting execution '{}' with its events", new.name))) },
        )
    }

    /// The groups of events gathered towards instances of `workflow`'s non-exclusive start
    /// state, changed by `gather` in one transaction: `gather` gets the stored groups (none at
    /// first) and returns them changed, with the instance to create when an event completed a
    /// group (created as [`Store::create_execution_with_events`] does, in the same transaction,
    /// so a crash loses neither the group nor the instance). Returns the created instance's
    /// record and whether it existed.
    fn gather_start_event(
        &self,
        workflow: &str,
        gather: StartGather,
    ) -> BoxFuture<'_, Result<Option<(ExecutionRecord, bool)>, StoreError>> {
        let _ = gather;
        let workflow = workflow.to_owned();
        Box::pin(async move { Err(StoreError::Unsupported(format!("gathering the start events of '{workflow}'"))) })
    }

    /// Claims up to `limit` runnable executions that `filter` selects for `owner` for `lease`:
    /// RUNNING, not leased (or the lease expired), and due (`wake_at` passed). Each claim bumps the epoch. An
    /// execution whose stored state cannot be read is returned as an `Err` with its name.
    fn claim_runnable<'a>(
        &'a self,
        owner: &'a str,
        lease: std::time::Duration,
        limit: usize,
        filter: &'a ClaimFilter,
    ) -> BoxFuture<'a, Result<Vec<ClaimResult>, StoreError>>;

    /// Extends the lease of a held execution; [`StoreError::StaleToken`] if it was lost.
    fn renew_lease<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        owner: &'a str,
        lease: std::time::Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Gives a held execution back: no owner, runnable again at `wake_at_ms` (`None`: only when
    /// a callback completes). `signals_seen` is [`ExecutionRecord::signals`] when it was
    /// claimed: if a callback completed since, it is runnable at once (no lost wake-up).
    fn release<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        wake_at_ms: Option<i64>,
        signals_seen: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Waits until new work may be runnable (PostgreSQL: a NOTIFY), or `max` at most.
    fn wait_for_work(&self, max: std::time::Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(max))
    }

    /// Fails an execution whose stored state is unusable (guarded by nothing: it is not running).
    fn fail_execution<'a>(
        &'a self,
        name: &'a str,
        error: &'a str,
        cause: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Delivers a CloudEvent to the RUNNING execution `name` from any process (`wfc event`): it is
    /// queued in the execution's inbox, where a waiting Serverless Workflow state takes the first
    /// event that matches (events that arrive before the wait stay queued), and the execution is
    /// made runnable at once, as a callback completion does. Returns the event's inbox number.
    /// No such execution: [`StoreError::NotFound`]; a finished one: [`StoreError::InvalidUpdate`].
    fn deliver_event<'a>(&'a self, name: &'a str, event: Value) -> BoxFuture<'a, Result<i64, StoreError>> {
        let _ = event;
        Box::pin(async move { Err(StoreError::Unsupported(format!("event delivery to execution '{name}'"))) })
    }

    /// The events delivered to execution `name` through [`Store::deliver_event`] and not consumed
    /// yet, in delivery order, with their inbox numbers. A checkpoint that finishes an event wait
    /// removes the events it consumed from the inbox in the same transaction (see
    /// [`consumed_events`]). Stores without an inbox have none.
    fn load_events<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<(i64, Value)>, StoreError>> {
        let _ = name;
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Stores a workflow version unless one with its id exists; with `current_if_new`, a new one
    /// becomes its workflow's current version. Returns whether it was new. (The [`Registry`] API wraps this.)
    fn put_version(&self, version: WorkflowVersion, current_if_new: bool) -> BoxFuture<'_, Result<bool, StoreError>> {
        let _ = (version, current_if_new);
        Box::pin(async { Err(StoreError::Unsupported("a workflow registry in this store".into())) })
    }

    /// One stored version.
    fn get_version<'a>(&'a self, version_id: &'a str) -> BoxFuture<'a, Result<Option<WorkflowVersion>, StoreError>> {
        let _ = version_id;
        Box::pin(async { Ok(None) })
    }

    /// The stored versions of `workflow` (of all workflows if `None`), newest first.
    fn list_versions<'a>(
        &'a self,
        workflow: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<WorkflowVersion>, StoreError>> {
        let _ = workflow;
        Box::pin(async { Ok(Vec::new()) })
    }

    /// The id of the current version of `workflow`.
    fn current_version<'a>(&'a self, workflow: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let _ = workflow;
        Box::pin(async { Ok(None) })
    }

    /// Makes `version_id` the current version of `workflow`.
    fn set_current_version<'a>(
        &'a self,
        workflow: &'a str,
        version_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = (workflow, version_id);
        Box::pin(async { Err(StoreError::Unsupported("a workflow registry in this store".into())) })
    }

    /// Makes `version_id` (stored already) the current version of `workflow` only if its current
    /// version is still `expected` (`None`: it has none yet), in one statement; returns whether it
    /// did. A reader that changes a document kept as a workflow's versions (`wfc serve`'s version
    /// and alias lists, written whole) writes its change with this and, on `false`, reads and
    /// changes it again, so two processes on one store cannot both win.
    fn replace_current_version<'a>(
        &'a self,
        workflow: &'a str,
        expected: Option<&'a str>,
        version_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let _ = (workflow, expected, version_id);
        Box::pin(async { Err(StoreError::Unsupported("a workflow registry in this store".into())) })
    }

    /// The row `key` of the store's key/value table (schema 8), or `None`. The table keeps what
    /// a process serving the store would otherwise keep only in memory, so that it survives a
    /// restart and is shared by the processes on one store (`wfc serve`'s activity task queues,
    /// client tokens, mock invocation counters). Keys are namespaced by their users (`"a/b/"`
    /// prefixes); values are JSON.
    fn kv_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        let _ = key;
        Box::pin(async { Err(StoreError::Unsupported("a key/value table in this store".into())) })
    }

    /// Writes the row `key` (replacing the one there).
    fn kv_put<'a>(&'a self, key: &'a str, value: Value) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = (key, value);
        Box::pin(async { Err(StoreError::Unsupported("a key/value table in this store".into())) })
    }

    /// Writes the row `key` only if it still holds `expected` (`None`: there is no such row),
    /// atomically; returns whether it did. A reader that changes part of a row (`wfc serve`'s
    /// `UpdateMapRun` of one limit of a Map Run) writes its change with this and, on `false`,
    /// reads and changes it again, so two processes changing different parts both land.
    fn kv_replace<'a>(
        &'a self,
        key: &'a str,
        expected: Option<&'a Value>,
        value: Value,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let _ = (key, expected, value);
        Box::pin(async { Err(StoreError::Unsupported("a key/value table in this store".into())) })
    }

    /// Deletes the row `key`; whether there was one. Of several processes deleting the same row,
    /// exactly one gets `true`: deleting is how a row is claimed (a queued task handed out once).
    fn kv_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let _ = key;
        Box::pin(async { Err(StoreError::Unsupported("a key/value table in this store".into())) })
    }

    /// The rows whose key starts with `prefix`, in key order (bytewise).
    fn kv_list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<(String, Value)>, StoreError>> {
        let _ = prefix;
        Box::pin(async { Err(StoreError::Unsupported("a key/value table in this store".into())) })
    }

    /// Tells the other processes on this store that key/value rows about `topic` changed (a
    /// user's name for what it wrote, e.g. `serve/activity-queued/<activity>`), after the write:
    /// PostgreSQL sends it with `NOTIFY`, SQLite writes a signal row that the processes on the
    /// same file read when the file changes. A store of one process has nobody to tell.
    fn kv_signal<'a>(&'a self, topic: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = topic;
        Box::pin(async { Ok(()) })
    }

    /// The topics other processes (and this one) [`Store::kv_signal`] from now on, or `None`
    /// when the store cannot tell (its users then read the store again from time to time).
    /// Subscribe before reading the rows the wait is for, so a signal sent in between is kept.
    fn kv_signals(&self) -> BoxFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>> {
        Box::pin(async { None })
    }

    /// Pins the RUNNING execution `name` to the stored version `to` if `guard` holds (see
    /// [`PinGuard`]). Without `guard.held_epoch` the execution is made runnable at once, so a
    /// worker resumes it on `to`. A change that does not apply (finished, held, moved or grown
    /// meanwhile) is [`StoreError::InvalidUpdate`] saying why.
    fn pin_execution<'a>(
        &'a self,
        name: &'a str,
        to: &'a str,
        guard: &'a PinGuard,
    ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        let _ = (to, guard);
        Box::pin(async move { Err(StoreError::Unsupported(format!("pinning execution '{name}' to a version"))) })
    }
}

/// What must still be true for [`Store::pin_execution`] to apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinGuard {
    /// The version the execution is pinned to now (`None`: unpinned).
    pub from: Option<String>,
    /// The caller holds the execution with this epoch (a worker adopting what it claimed).
    /// `None`: nobody may hold it (an upgrade).
    pub held_epoch: Option<i64>,
    /// The journal is still the one checked: no checkpoint since.
    pub checkpoint_seq: Option<i64>,
}

/// Which executions [`Store::claim_runnable`] may claim: a worker claims only those it can run
/// on their own version, and leaves the others to processes that can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimFilter {
    /// Any runnable execution.
    All,
    /// Executions pinned to one of `versions`, or of one of `workflows` (any version: the
    /// worker loads stored versions), or unpinned and of one of `unpinned` (the worker adopts
    /// them, see [`registry`]).
    Only {
        /// Version ids.
        versions: Vec<String>,
        /// Workflow names whose every version the worker runs.
        workflows: Vec<String>,
        /// Workflow names whose unpinned executions the worker may adopt.
        unpinned: Vec<String>,
    },
}

/// Checks that `new` may open the existing execution `record` (the same input; for a running
/// one, the version this process runs), for both stores' `open_execution`/`create_execution`:
///
/// - pinned to a version: only a process running that version resumes it; any other gets
///   [`StoreError::OtherVersion`] and the execution is left untouched;
/// - unpinned (started before versions existed): a process whose definition has the hash it
///   was started with adopts it (returns `true`: pin it to `new.version_id` in the same
///   transaction); another gets [`StoreError::OtherVersion`];
/// - a caller that names neither a version nor a hash (`wfc_journal::Journal::open`) is not checked.
pub fn check_version(record: &ExecutionRecord, new: &NewExecution) -> Result<bool, StoreError> {
    if record.input != new.input {
        return Err(StoreError::InputMismatch(new.name.clone()));
    }
    if record.status != ExecutionStatus::Running {
        return Ok(false);
    }
    let other = |pinned: String| {
        let given = match (&new.version_id, &new.definition_hash) {
            (Some(v), _) => v.clone(),
            (None, Some(h)) => format!("ir:{h}"),
            (None, None) => "-".into(),
        };
        Err(StoreError::OtherVersion { execution: new.name.clone(), pinned, given })
    };
    match (&record.version_id, &new.version_id) {
        (Some(pinned), Some(given)) if pinned == given => Ok(false),
        (Some(pinned), Some(_)) => other(pinned.clone()),
        (Some(pinned), None) => match (&record.definition_hash, &new.definition_hash) {
            (Some(stored), Some(given)) if stored != given => other(pinned.clone()),
            _ => Ok(false),
        },
        (None, _) => match (&record.definition_hash, &new.definition_hash) {
            (Some(stored), Some(given)) if stored != given => other(format!("legacy:{stored}")),
            (Some(_), None) => Ok(false),
            _ => Ok(new.version_id.is_some()),
        },
    }
}

/// Why [`Store::pin_execution`] did not apply, from the record as it is now.
pub fn pin_refused(record: Option<&ExecutionRecord>, name: &str, guard: &PinGuard, now: i64) -> StoreError {
    let from = guard.from.as_deref();
    let message = match record {
        None => return StoreError::NotFound(name.to_owned()),
        Some(r) if r.status != ExecutionStatus::Running => {
            format!("it has finished ({}); only running executions move to another version", r.status.as_str())
        }
        Some(r) if r.version_id.as_deref() != from => format!(
            "it is pinned to {} now, not to {} (it moved meanwhile)",
            r.version_id.as_deref().unwrap_or("no version"),
            from.unwrap_or("no version")
        ),
        Some(r) if guard.checkpoint_seq.is_some_and(|seq| seq != r.checkpoint_seq) => {
            "its journal grew since it was checked (it ran meanwhile); check it again".to_owned()
        }
        Some(r) if guard.held_epoch.is_none() && r.lease_until_ms.is_some_and(|until| until >= now) => format!(
            "it is held by '{}' (a process is running it); a worker releases an execution that waits for a timer or a callback, or stop that process, then try again",
            r.owner.as_deref().unwrap_or("?")
        ),
        Some(_) => "its holder changed meanwhile".to_owned(),
    };
    StoreError::InvalidUpdate { execution: name.to_owned(), message }
}

/// Why an execution of this status cannot be redriven (AWS's `redriveStatusReason`), or
/// `None` when it can (FAILED, TIMED_OUT, ABORTED).
pub fn not_redrivable(status: ExecutionStatus) -> Option<&'static str> {
    match status {
        ExecutionStatus::Running => Some("Execution is RUNNING and cannot be redriven"),
        ExecutionStatus::Succeeded => Some("Execution is SUCCEEDED and cannot be redriven"),
        ExecutionStatus::Failed | ExecutionStatus::TimedOut | ExecutionStatus::Aborted => None,
    }
}

/// The refusal of [`Store::redrive_execution`] for `record`.
pub fn redrive_refused(record: &ExecutionRecord) -> StoreError {
    StoreError::InvalidUpdate {
        execution: record.name.clone(),
        message: not_redrivable(record.status).unwrap_or("it changed meanwhile").to_owned(),
    }
}

/// The events StopExecution adds to the stored history of `record` (just stopped), whose last
/// stored event is `last` (0: none): `ExecutionStarted` when the run never wrote its history,
/// then `ExecutionAborted` with the stop's error and cause, as AWS records them.
pub fn aborted_events(record: &ExecutionRecord, last: u64, now: i64) -> Vec<HistoryEvent> {
    use crate::EventType;
    let stamp = jiff::Timestamp::from_millisecond(now).map(crate::clock::format_timestamp).unwrap_or_default();
    let mut events = Vec::new();
    if last == 0 {
        events.push(HistoryEvent {
            id: 1,
            previous_event_id: 0,
            timestamp: record.start_time.clone().into(),
            event_type: EventType::ExecutionStarted,
            details: serde_json::json!({ "input": record.input, "name": record.name }).into(),
        });
    }
    let mut details = serde_json::Map::new();
    if let Some(error) = &record.error {
        details.insert("error".into(), Value::String(error.clone()));
    }
    if let Some(cause) = &record.cause {
        details.insert("cause".into(), Value::String(cause.clone()));
    }
    let previous = last.max(events.len() as u64);
    events.push(HistoryEvent {
        id: previous + 1,
        previous_event_id: previous,
        timestamp: stamp.into(),
        event_type: EventType::ExecutionAborted,
        details: details.into(),
    });
    events
}

/// The `ExecutionRedriven` StopExecution adds before its `ExecutionAborted` to `stored` (the
/// stored history of `record`, just stopped) when the execution was redriven and its run was
/// stopped before recording that redrive's `ExecutionRedriven` (a FAILED execution's redriven
/// run records it where its replay reaches the failure it runs again, and this one had not got
/// there): on AWS each RedriveExecution appends its `ExecutionRedriven` at once, so the next
/// redrive's count and the replay's history go on from it (`Execution::reenter_for_redrive`).
/// Stamped at the redrive (`redrive_date_ms`; `now` for a record without one), as AWS's is.
/// `None` when the history holds it already. A run cut short by the execution's timeout gets it
/// the same way ([`cut_short_by_timeout`]).
pub fn cut_short_redriven_event(record: &ExecutionRecord, stored: &[HistoryEvent], now: i64) -> Option<HistoryEvent> {
    let last = stored.last()?;
    let count = record.redrive_count;
    if count == 0 || holds_redrive(stored, count) {
        return None;
    }
    let at = record.redrive_date_ms.unwrap_or(now);
    let stamp = jiff::Timestamp::from_millisecond(at).map(crate::clock::format_timestamp).unwrap_or_default();
    Some(HistoryEvent {
        id: last.id + 1,
        previous_event_id: last.id,
        timestamp: stamp.into(),
        event_type: crate::EventType::ExecutionRedriven,
        details: serde_json::json!({ "redriveCount": count }).into(),
    })
}

/// Whether `events` hold the `ExecutionRedriven` of redrive `count`.
fn holds_redrive(events: &[HistoryEvent], count: i64) -> bool {
    events.iter().any(|e| {
        e.event_type == crate::EventType::ExecutionRedriven && e.details["redriveCount"].as_i64() == Some(count)
    })
}

/// The history write that ends a redriven run of `record` cut short by the execution's
/// `TimeoutSeconds` before it recorded its redrive's `ExecutionRedriven` (`run`: the run's
/// history, its `ExecutionTimedOut` last; `stored`: the stored history). Such a run had only
/// replayed the history before the redrive: the redriven run records that event before anything
/// it runs again (a Task's new generation, a reopened Parallel or Map attempt, a Map Run's
/// plan, a re-entered Fail state), so every event it recorded is stored already, and its
/// replay stopped short of the stored end. Written as the run's own events would be, its
/// `ExecutionTimedOut` would replace the stored events after it (the end of the run before the
/// redrive, its `ExecutionFailed` included) and the redrive would have no event. So, as
/// StopExecution does ([`cut_short_redriven_event`]): the stored history stays whole, then the
/// redrive's `ExecutionRedriven`, then the run's `ExecutionTimedOut`, which is where AWS has
/// them (RedriveExecution appends its event at once, before anything the redriven run records).
/// `None` when the run is not such a run (not redriven, not timed out, or its redrive's event is
/// recorded or stored).
pub fn cut_short_by_timeout(
    record: &ExecutionRecord,
    stored: &[HistoryEvent],
    run: &[HistoryEvent],
    now: i64,
) -> Option<HistoryWrite> {
    let timed_out = run.last().filter(|e| e.event_type == crate::EventType::ExecutionTimedOut)?;
    if holds_redrive(run, record.redrive_count) {
        return None;
    }
    let redriven = cut_short_redriven_event(record, stored, now)?;
    let end = HistoryEvent { id: redriven.id + 1, previous_event_id: redriven.id, ..timed_out.clone() };
    Some(HistoryWrite { events: vec![redriven, end], truncate_after: None })
}

/// What [`Store::redrive_execution`] drops of a journal (`?1`, PostgreSQL's `$1`: the execution): the operations
/// in flight when it ended, which the redriven run starts again. Not a CONTEXT that had failed
/// before an earlier redrive (STARTED with its failure kept, see below): it is still how that
/// branch ended.
pub const REDRIVE_DROP_IN_FLIGHT: &str = "DELETE FROM operations WHERE execution = ?1
     AND status IN ('STARTED', 'CANCELLED') AND NOT (type = 'CONTEXT' AND error IS NOT NULL)";

/// How [`Store::redrive_execution`] lets the redriven run reopen a failed Parallel or Map attempt
/// and its failed branch or iteration (`?1`: the execution): a finished operation cannot be
/// rewritten, so a FAILED CONTEXT becomes STARTED, keeping its failure and stored events. The
/// run replays it as it ended unless the failure is the one that ended the execution; then it
/// runs it again (`Journal::may_reopen`).
pub const REDRIVE_REOPEN_CONTEXTS: &str =
    "UPDATE operations SET status = 'STARTED' WHERE execution = ?1 AND type = 'CONTEXT' AND status = 'FAILED'";

/// The `ExecutionRedriven` event [`Store::redrive_execution`] appends to the stored history of
/// `record` (as it was before the redrive) whose last stored event is `last`: for an ABORTED or
/// TIMED_OUT execution, whose end is in the history before it, so the redriven run's events go
/// after both (see `wfc-journal`'s `live_history`). A FAILED execution's redriven run records its own
/// `ExecutionFailed` and `ExecutionRedriven` where the failed Task runs again (`exec.rs`).
pub fn redriven_event(record: &ExecutionRecord, last: u64, now: i64) -> Option<HistoryEvent> {
    if !matches!(record.status, ExecutionStatus::Aborted | ExecutionStatus::TimedOut) || last == 0 {
        return None;
    }
    let stamp = jiff::Timestamp::from_millisecond(now).map(crate::clock::format_timestamp).unwrap_or_default();
    Some(HistoryEvent {
        id: last + 1,
        previous_event_id: last,
        timestamp: stamp.into(),
        event_type: crate::EventType::ExecutionRedriven,
        details: serde_json::json!({ "redriveCount": record.redrive_count + 1 }).into(),
    })
}

/// The crash tests' point inside a group commit: `WFC_CRASH_AT=group:<N>:<phase>` aborts the
/// process (exactly as `kill -9` would) in the first group commit that carries at least `N`
/// writes, at `phase`: `before-commit` (SQLite: every write of the group applied in its
/// transaction, not committed; PostgreSQL: the group's statements and its COMMIT handed to the
/// connection, no answer read) or `after-commit` (committed, no caller answered yet). Read once;
/// unset in normal use.
pub fn group_crash_point(size: usize, phase: &str) {
    static CRASH_AT: std::sync::OnceLock<Option<(usize, String)>> = std::sync::OnceLock::new();
    let target = CRASH_AT.get_or_init(|| {
        let value = std::env::var("WFC_CRASH_AT").ok()?;
        let (n, phase) = value.strip_prefix("group:")?.split_once(':')?;
        Some((n.parse().ok()?, phase.to_owned()))
    });
    if let Some((n, at)) = target
        && size >= *n
        && at == phase
    {
        eprintln!("wfc: WFC_CRASH_AT=group:{n}:{phase}: aborting in a group commit of {size} writes");
        std::process::abort();
    }
}

/// The end of the key range of [`Store::kv_list`]'s `prefix` (exclusive): every key that starts
/// with `prefix` sorts below it bytewise, as no key holds U+10FFFF (the largest character).
pub fn kv_prefix_end(prefix: &str) -> String {
    format!("{prefix}\u{10FFFF}")
}

/// Milliseconds since the Unix epoch (wall clock).
pub fn now_ms() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The inbox numbers of the events `update` records consumed: those listed (`seq`) in the result
/// of a finished Serverless Workflow event wait (a CALLBACK of subtype `Event`). A store with an
/// event inbox deletes them in the checkpoint that writes `update`, so an event is consumed
/// exactly when its consumption is recorded, and the inbox holds only unconsumed events.
pub fn consumed_events(update: &OperationUpdate) -> Vec<i64> {
    if update.op_type != OpType::Callback || update.subtype != "Event" || !update.status.is_terminal() {
        return Vec::new();
    }
    let events = update.result.as_ref().and_then(|r| r.get("events")).and_then(Value::as_array);
    events.into_iter().flatten().filter_map(|e| e.get("seq")?.as_i64()).collect()
}

/// Why an event cannot be delivered to a finished execution.
pub fn not_running(record: &ExecutionRecord) -> StoreError {
    StoreError::InvalidUpdate {
        execution: record.name.clone(),
        message: format!(
            "it has finished ({}); events are delivered only to running executions",
            record.status.as_str()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [OpType::Step, OpType::Wait, OpType::Callback, OpType::ChainedInvoke, OpType::Context] {
            assert_eq!(OpType::parse(t.as_str()), Some(t));
        }
        for s in [OpStatus::Started, OpStatus::Succeeded, OpStatus::Failed, OpStatus::TimedOut, OpStatus::Cancelled] {
            assert_eq!(OpStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(OpType::parse("step"), None);
    }
}
