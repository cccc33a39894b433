//! What generated code calls. Not a public API: names here change without notice.
//! Generated code refers to [`ABI_V1`] so that code generated for another runtime version fails
//! to compile with a clear name rather than misbehaving.

pub use ::futures::FutureExt;
pub use ::futures::future::BoxFuture;
pub use ::serde;
pub use ::serde_json;
pub use ::serde_json::Value;
pub use ::std::sync::LazyLock;
pub use ::wfc_ir as ir;

pub use ::futures::future::try_join_all;
pub use ::tracing;

pub use crate::exec::{self, Chosen, Step, join_branches};
pub use crate::interp::DynHandler;
pub use crate::{
    Clock, EventType, Execution, ExecutionResult, Failure, History, HistoryEvent, RunOptions, Status, TaskContext,
    block_on_virtual,
};
pub use crate::{abi, choice, io, retry, sw, task};

/// The generated-code/runtime handshake. Generated code contains `const _: () = ...::ABI_V1;`.
pub const ABI_V1: () = ();

/// Deserializes the IR that generated code embeds as JSON. It was produced by the same
/// `wfc-ir` version (the ABI handshake and the `=` version pins guarantee it), so failure here
/// means a corrupted build; it is reported as a `States.Runtime` failure, never a panic.
pub fn load_ir(json: &str) -> Result<ir::Workflow, Failure> {
    serde_json::from_str(json)
        .map_err(|e| Failure::runtime(format!("the embedded workflow definition could not be loaded: {e}")))
}
