//! The end of a successful Task, Parallel or Map attempt: ResultSelector, ResultPath,
//! OutputPath, or `Assign` and a JSONata `Output`.

use serde_json::Value;
use wfc_ir::{OutputPath, ResultPath, Template};

use super::Execution;
use super::pass::Assigned;
use super::visit::Visit;
use crate::jsonata::Bindings;
use crate::{Failure, io};

/// ResultSelector (on the raw result), ResultPath (into the raw input), OutputPath, as the IR
/// says: what an interpreted Task, and every Parallel and Map, finish with.
pub fn finish_paths(
    exec: &Execution,
    selector: &Option<Template>,
    result_path: &ResultPath,
    output_path: &OutputPath,
    raw_input: Value,
    result: Value,
    ctx: &Value,
) -> Result<Value, Failure> {
    let result = match selector {
        Some(t) => exec.with_rng(|rng| io::template(t, &result, ctx, rng))?,
        None => result,
    };
    let output = io::result_path(result_path, raw_input, result)?;
    io::output_path(output_path, output, ctx)
}

/// How a successful attempt's result becomes the state's output (ResultSelector, ResultPath,
/// OutputPath), for [`finish_success`].
#[derive(Clone, Copy)]
pub(super) struct Finish<'f> {
    /// Whether `run` reads the context object.
    pub(super) needs_ctx: bool,
    /// From the raw input, the result and the context object (`null` unless `needs_ctx`).
    pub(super) run: &'f dyn Fn(Value, Value, &Value) -> Result<Value, Failure>,
}

impl Finish<'_> {
    fn output(&self, visit: &Visit<'_>, raw_input: Value, result: Value) -> Result<Value, Failure> {
        let ctx = visit.context_if(self.needs_ctx);
        (self.run)(raw_input, result, &ctx)
    }
}

/// A state's `Assign` and JSONata `Output`, for [`finish_success`].
#[derive(Clone, Copy)]
pub(super) struct Language<'s> {
    pub(super) assign: Option<AssignRef<'s>>,
    pub(super) output: Option<OutputRef<'s>>,
}

/// A function of the `$states` bindings, for [`AssignRef`] and [`OutputRef`].
type StatesFn<'s, T> = dyn Fn(&Bindings<'_>) -> Result<T, Failure> + 's;

/// A Task's, Parallel's or Map's `Assign` block as its visit evaluates it: the state's code
/// (`TaskCode::assigned`, `NestedCode::assigned`, reading the IR in the interpreter, compiled in
/// generated code), called with what `$` means and the `$states` bindings (whose `context` is
/// the context object).
#[derive(Clone, Copy)]
pub(super) enum AssignRef<'s> {
    Code(&'s (dyn Fn(&Value, &Bindings<'_>) -> Result<Assigned, Failure> + 's)),
}

/// A Task's, Parallel's or Map's JSONata `Output` as its visit evaluates it: the state's code
/// (`TaskCode::output`, `NestedCode::output`).
#[derive(Clone, Copy)]
pub(super) enum OutputRef<'s> {
    Code(&'s StatesFn<'s, Value>),
}

impl Language<'_> {
    /// Neither Assign nor Output: the plain JSONPath pipeline.
    pub(super) fn is_plain(&self) -> bool {
        self.assign.is_none() && self.output.is_none()
    }
}

/// The end of a successful Task, Parallel or Map attempt: ResultSelector, ResultPath and
/// OutputPath, or (with `Assign` or a JSONata `Output`) [`finish_with_language`].
///
/// `Ok(Ok(output))` ends the state. `Ok(Err(failure))` is a JSONata failure, which (unlike a
/// path failure) goes through Retry and Catch, so the attempt loop still needs the raw input:
/// it is taken (not copied) only on the plain path, which always ends the state. `Err` is
/// terminal.
pub(super) fn finish_success(
    visit: &Visit<'_>,
    language: Language<'_>,
    finish: Finish<'_>,
    raw_input: &mut Value,
    result: Value,
) -> Result<Result<Value, Failure>, Failure> {
    if language.is_plain() {
        let raw_input = std::mem::take(raw_input);
        let output = finish.output(visit, raw_input, result).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        return Ok(Ok(output));
    }
    match finish_with_language(visit, language, finish, raw_input, result) {
        Ok(output) => Ok(Ok(output)),
        Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => Ok(Err(f)),
        Err(f) => Err(f),
    }
}

/// `Assign` (against the variables as of entry; `$` is the raw result), then the output (JSONata
/// `Output`, or ResultSelector, ResultPath and OutputPath), then the new variables are committed
/// and the state exits.
fn finish_with_language(
    visit: &Visit<'_>,
    language: Language<'_>,
    finish: Finish<'_>,
    raw_input: &Value,
    result: Value,
) -> Result<Value, Failure> {
    let ctx = visit.context();
    let b = Bindings { result: Some(&result), ..Bindings::new(raw_input, &ctx) };
    let assigned = match language.assign {
        Some(AssignRef::Code(code)) => Some(code(&result, &b)?),
        None => None,
    };
    let output = match language.output {
        Some(OutputRef::Code(code)) => code(&b)?,
        None => finish.output(visit, raw_input.clone(), result.clone()).map_err(|f| visit.runtime(f))?,
    };
    visit.finish_assigned(&output, assigned)?;
    Ok(output)
}
