//! The Parallel state.

use std::future::Future;

use serde_json::Value;
use tracing::Instrument;

use super::catch::{caught, state_failed};
use super::finish::{AssignRef, Finish, Language, OutputRef, finish_success};
use super::nested::ParallelCode;
use super::parameters::{Parameters, ParametersCode, ParametersForm};
use super::visit::{AbortGuard, Visit, name_details, state_span};
use super::{Execution, Step};
use crate::jsonata::Bindings;
use crate::retry::{self, RetryState};
use crate::{EventType, Failure};

/// A [`ParallelCode`]'s Parameters, for [`Parameters`].
struct ParallelParameters<'c, C>(&'c C);

impl<C: ParallelCode> ParametersCode for ParallelParameters<'_, C> {
    fn form(&self) -> ParametersForm {
        self.0.parameters_form()
    }

    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        self.0.parameters(exec, effective, ctx)
    }
}

/// One visit of a Parallel state whose data processing is `code`: its events, the branches'
/// line of control and CONTEXT operation (durable), the retry loop with its back-offs on the
/// execution's clock, the history limit, and Catch. `run_branches` is called once per attempt
/// with the branches' input (after Parameters) and must run every branch on it concurrently
/// (see [`join_branches`]) and return their outputs in order.
///
/// The interpreter's `wfc_interp::parallel` (whose `code` reads the IR) and generated code (whose `code`
/// is compiled from the state's paths, templates and Retry/Catch tables, and whose branches are
/// generated machines) both run through here, so their histories and failures are the same.
pub async fn parallel_with<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    input: Value,
    run_branches: F,
) -> Result<Step, Failure>
where
    C: ParallelCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    let mut guard = AbortGuard { exec, name, event: EventType::ParallelStateAborted, armed: true };
    let outcome = parallel_inner(exec, name, code, input, run_branches).instrument(state_span(name, "Parallel")).await;
    guard.armed = false;
    outcome
}

async fn parallel_inner<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    mut input: Value,
    mut run_branches: F,
) -> Result<Step, Failure>
where
    C: ParallelCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    let mut visit = Visit::start(exec, name, "Parallel", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = code.needs_context();
    let ctx = visit.context_if(io_ctx);
    let effective = code.input_path(&input, &ctx).map_err(|f| visit.runtime(f))?;
    let template = ParallelParameters(code);
    let parameters = Parameters::new(&template, &effective, exec).map_err(|f| visit.runtime(f))?;
    let mut retries = RetryState::new(code.retriers());
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        let branch_input = if code.has_arguments() {
            let ctx = visit.context();
            code.arguments(exec, &Bindings::new(&input, &ctx))
        } else {
            parameters.for_attempt(&template, &effective, &visit)
        };
        let branch_input = match branch_input {
            Ok(v) => v,
            Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), f).await? {
                    return caught(&visit, code.catchers(), input, failure);
                }
                continue;
            }
            Err(f) => return Err(visit.runtime(f)),
        };
        exec.record_with(EventType::ParallelStateStarted, || name_details(name));
        let branches_exec = exec.parallel_scope(name, visit_no, visit.retry_count, "ParallelBranch");
        exec.reopen_for_redrive(&branches_exec, name, visit_no, visit.retry_count, |error| {
            retry::find_catcher(code.catchers(), error).is_none()
        });
        let branches = run_branches(branch_input, branches_exec.clone());
        let outcome = exec.in_state_context(&branches_exec, name, "Parallel", branches).await;
        let (failure, branches_failed) = match outcome.map_err(|f| visit.runtime(f))? {
            Ok(outputs) => {
                exec.record_with(EventType::ParallelStateSucceeded, || name_details(name));
                let result = Value::Array(outputs);
                let assign_code = |dollar: &Value, states: &Bindings<'_>| code.assigned(exec, dollar, states);
                let output_code = |states: &Bindings<'_>| code.output(exec, states);
                let language = Language {
                    assign: code.assigns().then_some(AssignRef::Code(&assign_code)),
                    output: code.has_output().then_some(OutputRef::Code(&output_code)),
                };
                let finish = Finish {
                    needs_ctx: io_ctx || code.finish_needs_context(),
                    run: &|raw: Value, result: Value, ctx: &Value| code.finish(exec, raw, result, ctx),
                };
                match finish_success(&visit, language, finish, &mut input, result)? {
                    Ok(output) => return Ok(Step::Next(output)),
                    Err(failure) => (failure, false),
                }
            }
            Err(f) => (f, true),
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), failure).await? {
            if branches_failed {
                return state_failed(&visit, EventType::ParallelStateFailed, code.catchers(), input, failure);
            }
            return caught(&visit, code.catchers(), input, failure);
        }
    }
}

/// Runs branch futures concurrently; the first failure cancels (drops) the others and is returned
/// with its own error name, as AWS does.
pub async fn join_branches<'a>(
    branches: Vec<futures::future::BoxFuture<'a, Result<Value, Failure>>>,
) -> Result<Vec<Value>, Failure> {
    futures::future::try_join_all(branches).await
}
