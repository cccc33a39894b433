//! The journal of durable executions: a record of operations checkpointed to a
//! [`Store`](wfc_runtime::durable::Store), so an execution that stops (crash, kill, deploy)
//! resumes where it was without re-running completed work. It lives outside the runtime every
//! generated program links (issue 20's thin runtime; docs/durable.md, "Crates"): the runtime asks
//! its journal through the [`JournalHooks`](wfc_runtime::journal::JournalHooks) trait, which
//! [`Journal`] implements, and a program links this crate only when it runs durably.
//!
//! The model mirrors the AWS Lambda durable functions `Operation` model (see docs/durable.md and
//! `wfc_runtime::durable`, which holds the `Store` trait, its types and the operation model):
//!
//! - An execution is created **idempotently by name**: the same name and input return the existing
//!   execution (resume); the same name with a different input is an error.
//! - Every side-effecting step of an execution is an operation with a deterministic id derived
//!   from its state path and visit counter, so a replay finds the same ids in the same places.
//!   A Task attempt is a `STEP`, a Wait (and a retry back-off) is a `WAIT` with a fire-at instant.
//! - Updates are written in atomic batches (`Store::checkpoint`) guarded by a single-use
//!   checkpoint token: each checkpoint returns the next token, and a stale token (a second
//!   process resumed the execution meanwhile) is rejected.
//!
//! Replay semantics (both engines, since both ask the journal through the runtime's hooks):
//!
//! - A Task attempt whose result (success, failure or timeout) was checkpointed is **not** run
//!   again: its recorded outcome is replayed.
//! - A Task attempt that was checkpointed as `STARTED` but never completed was in flight when the
//!   process stopped: it **is** run again. Durability is at-least-once for the in-flight step and
//!   exactly-once for every completed one.
//! - A Wait whose timer fired is not waited again; a pending one waits only the remainder.
//!
//! Attach a journal with [`wfc_runtime::RunOptions::with_journal`] after [`Journal::open`].
//!
//! Besides the journal: [`suspend`], the replay-only runs of the adapters (`wfc-aws`) and the
//! replay check (`wfc-worker`); [`ReplayStore`], the in-memory store such a run replays on; and
//! the [`ChainedInvokes`] a service's journal maps subflows and Map Run children to.

mod chained;
mod hooks;
mod journal;
mod live_history;
mod replay_store;
pub mod suspend;

pub use chained::{
    ANY_WORKFLOW, ChainedConfigError, ChainedFunction, ChainedInvokes, MapRunChildren, parse_key as parse_mapping_key,
};
pub use journal::{Journal, Opened, TransitionGuard};
pub use replay_store::ReplayStore;
