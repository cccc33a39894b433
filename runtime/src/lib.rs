//! The runtime that wfc-generated workflow code links against, and the interpreter that `wfc run`
//! uses. Both engines call the same functions in [`exec`], so there is one semantics.
//!
//! Users depend on this crate only: it re-exports [`include_workflow!`] (feature `macros`, on by
//! default). Generated code reaches everything through the hidden [`__private`] module with
//! `::`-rooted paths.

pub mod clock;
pub mod error;
pub mod exec;
pub mod history;
pub mod interp;
pub mod io;
pub mod choice;
pub mod retry;
pub mod task;

#[doc(hidden)]
pub mod __private;

pub use clock::{Clock, block_on_virtual};
pub use error::{Failure, TaskError};
pub use exec::{Execution, ExecutionResult, RunOptions, Status};
pub use history::{EventType, History, HistoryEvent};
pub use task::TaskContext;
pub use serde_json::{Value, json};
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
