//! The Pass state.

use serde_json::Value;

use super::Execution;
use super::visit::{CountedVisit, Visit, state_span};
use crate::{EventType, Failure};

/// One visit of a Pass state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` with an `Output`): its Entered event, `body` (the output and the assigned values,
/// `None` without an `Assign`, from the raw input and the context object, which carries the
/// variables as of entry), then the Exited event (with AWS's `assignedVariables` when there
/// are some), after which the values are visible. A `States.Runtime` or
/// `States.QueryEvaluationError` failure of `body` gets AWS's prefix naming the state (and the
/// latter its `EvaluationFailed` event).
///
/// The interpreter's `wfc_interp::pass` and generated code (which compiles `body` from the state's
/// JSONata `Output` and `Assign`) both go through here.
pub fn pass_language_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Option<Assigned>), Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_synchronous(exec, name, "Pass", &input, true)?;
        let ctx = visit.context();
        let (output, assigned) = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(output)
    })
}

/// One visit of a JSONPath Pass state without `Assign`: records its Entered and Exited events
/// around `body`, which computes the output from the raw input and the context object (`null`
/// unless `needs_ctx`). A `States.Runtime` failure of `body` gets AWS's prefix naming the state.
///
/// The interpreter's `wfc_interp::pass` and generated code (which compiles `body` from the state's paths
/// and Parameters) both go through here, so their histories are the same.
pub fn pass_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    plain_visit(exec, name, "Pass", needs_ctx, input, body)
}

/// [`pass_with`] for a Pass whose output is built whole by its `Result` or Parameters (ResultPath
/// and OutputPath `$`) from parts whose serialized size is known when the state is compiled: at
/// most `max_bytes` bytes and `max_depth` levels deep (literals, and intrinsics that give a
/// number). Unless the execution's limits are that low, the output cannot exceed them, so it is
/// not walked to check (the counting loop's `{"i": States.MathAdd(...)}`). `body` only reads
/// the input, which is then spent on the history's copy of the output (its allocations
/// reused, see [`crate::History::named_new_into`]) instead of being freed.
///
/// The interpreter calls it for every Pass whose output its `Result` or Parameters build whole,
/// with `usize::MAX` for both bounds (so the output is checked as [`pass_with`] checks it).
/// Generated code calls [`pass_built_with`], which also lets the output reuse the input's
/// allocations. The events are the same.
pub fn pass_bounded_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    max_bytes: usize,
    max_depth: usize,
    body: impl FnOnce(&Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    pass_built_with(exec, name, needs_ctx, input, max_bytes, max_depth, body, |output, _spare| output)
}

/// [`pass_bounded_with`] in two steps: `read` computes the output's parts from the input (and
/// the context object, `null` unless `needs_ctx`), then `build` puts them together, given a
/// spare value whose allocations it may reuse: the state's input, no longer needed, when no
/// history keeps a copy of the output (the express level); else none, and the input is spent
/// on the history's copy instead. So a loop's Pass that rebuilds `{"i": …}` from `{"i": …}`
/// allocates nothing at the express level (see `object_in`), where the interpreter's
/// and the hand-written loop's allocate a new object each time. Events and failures are those
/// of [`pass_bounded_with`]: `build` cannot fail.
///
/// Generated code calls it for a Pass whose output is a Parameters object of known size.
#[allow(clippy::too_many_arguments)] // The visit's fields, then its two steps.
pub fn pass_built_with<P>(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    max_bytes: usize,
    max_depth: usize,
    read: impl FnOnce(&Value, &Value) -> Result<P, Failure>,
    build: impl FnOnce(P, Option<Value>) -> Value,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        if !needs_ctx && exec.counts_only() {
            let visit = CountedVisit::deferred(exec, name, "Pass", EventType::PassStateEntered)?;
            let parts = read(&input, &Value::Null).map_err(|f| visit.runtime(f))?;
            let output = build(parts, Some(input));
            let limits = exec.limits();
            if !(max_bytes < limits.max_payload_bytes && max_depth < limits.max_json_depth) {
                visit.limits_check(&output)?;
            }
            visit.exit(EventType::PassStateExited);
            return Ok(output);
        }
        let visit = Visit::start_synchronous(exec, name, "Pass", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let parts = read(&input, &ctx).map_err(|f| visit.runtime(f))?;
        // One call of `build` (each call is a copy of the generated code).
        let (spare, history_spare) = if exec.keeps_history() { (None, input) } else { (Some(input), Value::Null) };
        let output = build(parts, spare);
        visit.finish_within(&output, max_bytes, max_depth, history_spare)?;
        Ok(output)
    })
}

/// [`pass_with`] for a Pass that outputs its input unchanged whenever `kept` says so (InputPath
/// and ResultPath naming the same node, which exists, and OutputPath `$`): then `body` is not
/// run, and the output, being the input, is not checked against the payload limits again
/// unless this is the first state of its line (see [`Line`](super::Line)). Every state's output is checked
/// once, and a 100 KB document carried through such states is not walked at each.
///
/// The interpreter's `wfc_interp::pass` and generated code both go through here for such a Pass.
pub fn pass_kept_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    kept: impl FnOnce(&Value) -> bool,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_synchronous(exec, name, "Pass", &input, needs_ctx)?;
        if kept(&input) {
            visit.finish_unchanged(&input)?;
            return Ok(input);
        }
        let ctx = visit.context_if(needs_ctx);
        let output = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}

/// Variables a state assigns, `(name, value)` in the order written.
pub type Assigned = Vec<(String, Value)>;

/// One visit of a JSONPath Pass state with `Assign` (and no JSONata `Output`): its Entered
/// event, `body` (the output and the assigned values, from the raw input and the context
/// object, which carries the variables as of entry), then the Exited event with AWS's
/// `assignedVariables`, after which the values are visible. A `States.Runtime` failure of
/// `body` gets AWS's prefix naming the state.
///
/// The interpreter's `wfc_interp::pass` and generated code (which compiles `body` from the state's paths,
/// Parameters and Assign) both go through here.
pub fn pass_assign_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Assigned), Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_synchronous(exec, name, "Pass", &input, true)?;
        let ctx = visit.context();
        let (output, assigned) = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, Some(assigned))?;
        Ok(output)
    })
}

/// One visit of a state whose work is `body` on its input and context object: its Entered and
/// Exited events around it, a `States.Runtime` failure prefixed with the state's name. What
/// [`pass_with`] and [`succeed_with`] share.
pub(super) fn plain_visit(
    exec: &Execution,
    name: &str,
    state_type: &'static str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    state_span(name, state_type).in_scope(|| {
        let visit = Visit::start_synchronous(exec, name, state_type, &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let output = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}
