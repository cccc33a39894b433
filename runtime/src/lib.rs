//! The runtime that wfc-generated workflow code links against, and the primitives the IR
//! interpreter (the `wfc-interp` crate) is built on. Both engines call the same functions in
//! [`exec`], so there is one semantics.
//!
//! Users depend on this crate only: it re-exports `include_workflow!` (feature `macros`, on by
//! default). Generated code reaches everything through the hidden `__private` module with
//! `::`-rooted paths.
//!
//! - [`exec`]: one module per state type; each state's visit (input/output processing, retries,
//!   timeouts, Catch, history) runs over the state's code, which generated code compiles (through
//!   [`abi`]) and `wfc-interp` reads from the IR. [`handlers`]: the [`DynHandler`] trait and
//!   [`Handlers`] table the interpreter, the SW engine and the worker call Tasks by.
//! - [`io`], [`choice`], [`retry`], [`task`]: the pieces those functions are made of.
//! - [`clock`]: real or virtual time. Under [`block_on_virtual`] with [`Clock::virtual_default`],
//!   Waits, back-off and timeouts take no real time and every timestamp is reproducible.
//! - [`history`]: AWS-shaped execution history.
//! - `durable` (feature `durable`): what durable execution needs of the runtime: the
//!   `journal::JournalHooks` a line of control asks its journal through, and the `Store` trait
//!   with its types (docs/durable.md). The journal that checkpoints to a store and replays, so
//!   an execution resumes after a crash without re-running completed tasks, is the
//!   `wfc-journal` crate; the worker that runs executions from a store is `wfc-worker`.
//! - The same workflow as an Amazon SWF decider or an AWS Lambda durable function: the `wfc-aws`
//!   crate, on `durable` (docs/adapters.md).
//! - [`limits`]: payload, history and nesting limits ([`RunOptions::limits`]), with AWS's errors.
//! - [`distributed`]: the DISTRIBUTED Map's Map Runs, child executions, and the [`distributed::ObjectStore`]
//!   its ItemReader and ResultWriter use (local directories by default).

pub mod abi;
pub mod callback;
pub mod choice;
pub mod clock;
pub mod credentials;
pub mod definition;
pub mod distributed;
#[cfg(feature = "durable")]
pub mod durable;
pub mod error;
pub mod events;
pub mod exec;
pub mod handlers;
pub mod history;
pub mod intrinsics;
pub mod io;
#[cfg(feature = "durable")]
pub mod journal;
pub mod jsonata;
pub mod lambda;
pub mod limits;
pub mod map;
pub mod mock_config;
pub mod retry;
pub mod schedule;
pub mod starts;
pub mod sw;
pub mod task;
pub mod typed;
pub mod variables;

#[doc(hidden)]
pub mod __private;

pub use callback::Callbacks;
pub use clock::{Clock, block_on_virtual};
pub use definition::DefinitionId;
pub use error::{Failure, TaskError};
pub use exec::{Execution, ExecutionResult, Identity, MachineType, RunOptions, Status, express_execution_uuid};
pub use handlers::{DynHandler, Handlers};
pub use history::{Details, EventTime, EventType, History, HistoryEvent, HistoryLevel};
pub use limits::Limits;
pub use serde_json::{Value, json};
pub use task::TaskContext;
pub use wfc_ir as ir;

#[cfg(feature = "macros")]
pub use wfc_macro::include_workflow;

/// Includes a workflow module that `wfc-build` wrote to `OUT_DIR` from build.rs:
/// `wfc_runtime::include_workflow_out!("order");` expands to `include!(concat!(env!("OUT_DIR"), "/order.rs"))`.
#[macro_export]
macro_rules! include_workflow_out {
    ($name:literal) => {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/", $name, ".rs"));
    };
}
