//! The durable host: what runs stored executions of wfc workflows, outside the runtime every
//! generated program links (issue 20's thin runtime; docs/durable.md, "Crates").
//!
//! - [`Worker`]: claims runnable executions from a [`Store`](wfc_runtime::durable::Store) and
//!   runs each on its registered workflow (compiled, or on the interpreter) with a journal,
//!   holding its lease, suspending long waits and adopting executions started before versions.
//! - [`replay`]: whether an execution's journal replays cleanly on a definition (`wfc executions
//!   upgrade`, and the worker's adoption), on the interpreter over an in-memory copy of it.
//! - `testing` (hidden): the stored-state loader the fuzz target `durable_state` and its
//!   proptest smoke test replay arbitrary rows with.
//!
//! The journal is `wfc-journal`, and the `Store` trait and the registry of versions stay in
//! `wfc-runtime` (feature `durable`): a program that runs its own executions
//! (`wfc_journal::Journal::open`) needs no worker.

pub mod replay;
#[doc(hidden)]
pub mod testing;
mod worker;

pub use worker::{IdentityFn, Loader, Worker, WorkerConfig, WorkerStats, Workflows};
