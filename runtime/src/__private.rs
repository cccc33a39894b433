//! What generated code calls. Not a public API: names here change without notice.
//! Generated code refers to [`ABI_V1`] so that code generated for another runtime version fails
//! to compile with a clear name rather than misbehaving.

pub use ::futures::FutureExt;
pub use ::futures::future::BoxFuture;
pub use ::serde;
pub use ::serde_json;
pub use ::serde_json::Value;
pub use ::std::sync::LazyLock;

pub use ::futures::future::try_join_all;
pub use ::tracing;

pub use crate::exec::{self, Chosen, Step, join_branches};
pub use crate::handlers::DynHandler;
pub use crate::{
    Clock, DefinitionId, EventType, Execution, ExecutionResult, Failure, History, HistoryEvent, RunOptions, Status,
    TaskContext, block_on_virtual,
};
pub use crate::{abi, choice, io, retry, sw, task};

/// The generated-code/runtime handshake. Generated code contains `const _: () = ...::ABI_V1;`.
pub const ABI_V1: () = ();
