//! The Succeed state.

use serde_json::Value;
use wfc_ir::SucceedState;

use super::Execution;
use super::pass::plain_visit;
use crate::jsonata::{self, Bindings};
use crate::{Failure, io};

/// A Succeed state.
pub fn succeed(exec: &Execution, name: &str, spec: &SucceedState, input: Value) -> Result<Value, Failure> {
    let needs_ctx =
        io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()]) || spec.output.is_some();
    succeed_with(exec, name, needs_ctx, input, |input, ctx| match &spec.output {
        Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &Bindings::new(&input, ctx), rng)),
        None => io::input_path_owned(&spec.input_path, input, ctx)
            .and_then(|effective| io::output_path(&spec.output_path, effective, ctx)),
    })
}

/// One visit of a Succeed state: records its Entered and Exited events around `body`
/// (InputPath then OutputPath, or a JSONata `Output` with the context object: `needs_ctx`), as
/// [`pass_with`](super::pass_with) does for a Pass state. The interpreter's [`succeed`] and generated code both
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
