//! Durable executions: a journal of operations checkpointed to a [`Store`], so an execution that
//! stops (crash, kill, deploy) resumes where it was without re-running completed work.
//!
//! The model mirrors the AWS Lambda durable functions `Operation` model (see docs/durable.md):
//!
//! - An execution is created **idempotently by name**: the same name and input return the existing
//!   execution (resume); the same name with a different input is an error.
//! - Every side-effecting step of an execution is an [`Operation`] with a deterministic id derived
//!   from its state path and visit counter, so a replay finds the same ids in the same places.
//!   A Task attempt is a `STEP`, a Wait (and a retry back-off) is a `WAIT` with a fire-at instant.
//! - Updates are written in atomic batches ([`Store::checkpoint`]) guarded by a single-use
//!   [`CheckpointToken`]: each checkpoint returns the next token, and a stale token (a second
//!   process resumed the execution meanwhile) is rejected.
//!
//! Replay semantics (both engines, since both go through [`crate::exec`]):
//!
//! - A Task attempt whose result (success, failure or timeout) was checkpointed is **not** run
//!   again: its recorded outcome is replayed.
//! - A Task attempt that was checkpointed as `STARTED` but never completed was in flight when the
//!   process stopped: it **is** run again. Durability is at-least-once for the in-flight step and
//!   exactly-once for every completed one.
//! - A Wait whose timer fired is not waited again; a pending one waits only the remainder.
//!
//! Attach a journal with [`crate::RunOptions::with_journal`] after [`Journal::open`].

mod journal;
mod sqlite;
pub mod suspend;

pub use journal::{Journal, Opened};
pub use sqlite::{SqliteStore, Synchronous};

use std::fmt;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::HistoryEvent;

/// What kind of operation a journal entry is (the AWS `OperationType` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpType {
    /// A unit of work with a result: one Task attempt.
    Step,
    /// A durable timer: a Wait state or a retry back-off.
    Wait,
    /// Waiting for an external completion by token (`.waitForTaskToken`; not yet journaled).
    Callback,
    /// An invocation of another execution (not yet journaled).
    ChainedInvoke,
    /// A scope grouping other operations (a Parallel branch).
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
    /// When a WAIT fires, in milliseconds since the Unix epoch on the execution's clock.
    pub due_at_ms: Option<i64>,
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
    /// A WAIT's fire-at instant (milliseconds since the Unix epoch).
    pub due_at_ms: Option<i64>,
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
}

impl ExecutionStatus {
    /// The name stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Succeeded => "SUCCEEDED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::TimedOut => "TIMED_OUT",
        }
    }

    /// Parses [`ExecutionStatus::as_str`].
    pub fn parse(text: &str) -> Option<ExecutionStatus> {
        [ExecutionStatus::Running, ExecutionStatus::Succeeded, ExecutionStatus::Failed, ExecutionStatus::TimedOut]
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
    #[error("invalid store URL '{0}': expected sqlite:PATH")]
    BadUrl(String),
    /// The database failed (I/O, corruption, an unknown schema version).
    #[error("store error: {0}")]
    Backend(String),
}

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

    /// One execution, or `None`.
    fn describe_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ExecutionRecord>, StoreError>>;

    /// Appends history events (an event id already stored is replaced: a resumed run
    /// re-records the history from its start).
    fn append_history<'a>(&'a self, name: &'a str, events: Vec<HistoryEvent>) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The stored history, in event-id order.
    fn read_history<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>>;
}

/// Opens a store from a URL: `sqlite:PATH` (durability FULL), or `sqlite:PATH?synchronous=normal`.
pub fn open_store(url: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    let Some(rest) = url.strip_prefix("sqlite:") else {
        return Err(StoreError::BadUrl(url.to_owned()));
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    if path.is_empty() {
        return Err(StoreError::BadUrl(url.to_owned()));
    }
    let synchronous = match query {
        None | Some("synchronous=full") | Some("synchronous=FULL") => Synchronous::Full,
        Some("synchronous=normal") | Some("synchronous=NORMAL") => Synchronous::Normal,
        Some(_) => return Err(StoreError::BadUrl(url.to_owned())),
    };
    Ok(std::sync::Arc::new(SqliteStore::open(path, synchronous)?))
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

    #[test]
    fn bad_urls_are_rejected() {
        assert!(matches!(open_store("postgres://x"), Err(StoreError::BadUrl(_))));
        assert!(matches!(open_store("sqlite:"), Err(StoreError::BadUrl(_))));
        assert!(matches!(open_store("sqlite:/tmp/x.db?synchronous=off"), Err(StoreError::BadUrl(_))));
    }
}
