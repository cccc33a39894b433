//! The Pass state.

use rand::rngs::StdRng;
use serde_json::Value;
use wfc_ir::{Assign, PassState};

use super::Execution;
use super::visit::{Visit, state_span};
use crate::jsonata::{self, Bindings};
use crate::variables;
use crate::{Failure, io};

/// A Pass state.
pub async fn pass(exec: &Execution, name: &str, spec: &PassState, input: Value) -> Result<Value, Failure> {
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || spec.parameters.as_ref().is_some_and(io::uses_context)
        || spec.assign.is_some()
        || spec.output.is_some();
    if spec.assign.is_none() && spec.output.is_none() {
        let body = |input, ctx: &Value| exec.with_rng(|rng| pass_io(spec, input, ctx, rng));
        if spec.result.is_none()
            && spec.parameters.is_none()
            && spec.output_path.as_ref().is_some_and(wfc_ir::Path::is_identity)
        {
            return pass_kept_with(exec, name, needs_ctx, input, |input| writes_back_in_place(spec, input), body);
        }
        return pass_with(exec, name, needs_ctx, input, body);
    }
    if let (Some(assign @ Assign::JsonPath(_)), None) = (&spec.assign, &spec.output) {
        return pass_assign_with(exec, name, input, |input, ctx| {
            let result = pass_result(exec, spec, &input, ctx)?;
            let assigned = assign_jsonpath(exec, assign, &result, ctx)?;
            let output = io::result_path(&spec.result_path, input, result)?;
            Ok((io::output_path(&spec.output_path, output, ctx)?, assigned))
        });
    }
    pass_language_with(exec, name, input, |input, ctx| pass_assign(exec, spec, input, ctx))
}

/// One visit of a Pass state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` with an `Output`): its Entered event, `body` (the output and the assigned values,
/// `None` without an `Assign`, from the raw input and the context object, which carries the
/// variables as of entry), then the Exited event (with AWS's `assignedVariables` when there
/// are some), after which the values are visible. A `States.Runtime` or
/// `States.QueryEvaluationError` failure of `body` gets AWS's prefix naming the state (and the
/// latter its `EvaluationFailed` event).
///
/// The interpreter's [`pass`] and generated code (which compiles `body` from the state's
/// JSONata `Output` and `Assign`) both go through here.
pub fn pass_language_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Option<Assigned>), Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, true)?;
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
/// The interpreter's [`pass`] and generated code (which compiles `body` from the state's paths
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
/// not walked to check (the counting loop's `{"i": States.MathAdd(...)}`).
///
/// Generated code calls it for such a Pass (the interpreter's [`pass`] checks as
/// [`pass_with`] does); the events are the same.
pub fn pass_bounded_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    max_bytes: usize,
    max_depth: usize,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let output = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_within(&output, max_bytes, max_depth)?;
        Ok(output)
    })
}

/// [`pass_with`] for a Pass that outputs its input unchanged whenever `kept` says so (InputPath
/// and ResultPath naming the same node, which exists, and OutputPath `$`): then `body` is not
/// run, and the output, being the input, is not checked against the payload limits again
/// unless this is the first state of its line (see [`Line`](super::Line)). Every state's output is checked
/// once, and a 100 KB document carried through such states is not walked at each.
///
/// The interpreter's [`pass`] and generated code both go through here for such a Pass.
pub fn pass_kept_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    kept: impl FnOnce(&Value) -> bool,
    body: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, needs_ctx)?;
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
/// The interpreter's [`pass`] and generated code (which compiles `body` from the state's paths,
/// Parameters and Assign) both go through here.
pub fn pass_assign_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Assigned), Failure>,
) -> Result<Value, Failure> {
    state_span(name, "Pass").in_scope(|| {
        let visit = Visit::start_timed(exec, name, "Pass", &input, true)?;
        let ctx = visit.context();
        let (output, assigned) = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, Some(assigned))?;
        Ok(output)
    })
}

/// A JSONPath `Assign` block evaluated on `dollar` (what `$` means for the state) with the
/// context object `ctx` (`$$`, and `$name` for the variables as of entry).
pub(super) fn assign_jsonpath(
    exec: &Execution,
    assign: &Assign,
    dollar: &Value,
    ctx: &Value,
) -> Result<Assigned, Failure> {
    // A JSONPath block reads no JSONata bindings; these only satisfy the evaluator's signature.
    let bindings = Bindings::new(dollar, ctx);
    exec.with_rng(|rng| variables::evaluate(assign, dollar, &bindings, ctx, rng))
}

/// A JSONPath Pass state's result before ResultPath: its `Result`, else Parameters (or the
/// effective input itself) over InputPath.
fn pass_result(exec: &Execution, spec: &PassState, input: &Value, ctx: &Value) -> Result<Value, Failure> {
    Ok(match (&spec.result, &spec.parameters) {
        (Some(result), _) => result.clone(),
        (None, parameters) => {
            let effective = io::input_path(&spec.input_path, input, ctx)?;
            match parameters {
                Some(t) => exec.with_rng(|rng| io::template(t, &effective, ctx, rng))?,
                None => effective.into_owned(),
            }
        }
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
        let visit = Visit::start_timed(exec, name, state_type, &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let output = body(input, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        Ok(output)
    })
}

/// A Pass state with `Assign` or a JSONata `Output`. In a JSONPath Pass, `$` in Assign is the
/// state's result (its `Result`, else Parameters over the effective input); in a JSONata Pass,
/// `Output` (default: the input) and Assign see `$states.input`.
#[allow(clippy::type_complexity)]
fn pass_assign(
    exec: &Execution,
    spec: &PassState,
    input: Value,
    ctx: &Value,
) -> Result<(Value, Option<Vec<(String, Value)>>), Failure> {
    let b = Bindings::new(&input, ctx);
    let assign = |dollar: &Value| -> Result<Option<Assigned>, Failure> {
        match &spec.assign {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, &b, ctx, rng)).map(Some),
            None => Ok(None),
        }
    };
    let jsonata = spec.output.is_some() || matches!(spec.assign, Some(Assign::Jsonata(_)));
    if jsonata {
        let assigned = assign(&input)?;
        let output = match &spec.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
            None => input.clone(),
        };
        return Ok((output, assigned));
    }
    let result = pass_result(exec, spec, &input, ctx)?;
    let assigned = assign(&result)?;
    let output = io::output_path(&spec.output_path, io::result_path(&spec.result_path, input.clone(), result)?, ctx)?;
    Ok((output, assigned))
}

fn pass_io(spec: &PassState, input: Value, ctx: &Value, rng: &mut StdRng) -> Result<Value, Failure> {
    let replaces_input = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    let output = match (&spec.result, &spec.parameters) {
        (Some(result), _) => io::result_path(&spec.result_path, input, result.clone())?,
        // The common `{"Type": "Pass"}`: the raw input is not needed afterwards, so it moves
        // through InputPath without a copy.
        (None, None) if replaces_input => io::input_path_owned(&spec.input_path, input, ctx)?,
        // InputPath and ResultPath name the same node that exists: writing what InputPath
        // selects back where it came from leaves the input as it is, so nothing is copied.
        (None, None) if writes_back_in_place(spec, &input) => input,
        (None, parameters) => {
            let result = {
                let effective = io::input_path(&spec.input_path, &input, ctx)?;
                match parameters {
                    Some(template) => io::template(template, &effective, ctx, rng)?,
                    None => effective.into_owned(),
                }
            };
            io::result_path(&spec.result_path, input, result)?
        }
    };
    io::output_path(&spec.output_path, output, ctx)
}

/// Whether a Pass state without Parameters or Result has an InputPath and a ResultPath naming
/// the same node of `input`, and that node exists: then its output before OutputPath is `input`
/// itself (InputPath cannot fail, and ResultPath replaces the node with its own value).
fn writes_back_in_place(spec: &PassState, input: &Value) -> bool {
    match (&spec.input_path, &spec.result_path) {
        (Some(selected), Some(written)) => {
            selected.root() == wfc_ir::Root::Input
                && selected.is_singular()
                && selected.segments() == written.as_path().segments()
                && written.get(input).is_some()
        }
        _ => false,
    }
}
