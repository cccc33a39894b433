//! The Succeed state.

use serde_json::Value;

use super::Execution;
use super::pass::plain_visit;
use crate::Failure;

/// One visit of a Succeed state: records its Entered and Exited events around `body`
/// (InputPath then OutputPath, or a JSONata `Output` with the context object: `needs_ctx`), as
/// [`pass_with`](super::pass_with) does for a Pass state. The interpreter's `wfc_interp::succeed` and generated code both
/// go through here.
pub fn succeed_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    plain_visit(exec, name, "Succeed", needs_ctx, input, body)
}
