//! The Map state (INLINE, and DISTRIBUTED through a Map Run).

use std::future::Future;

use serde_json::{Value, json};
use tracing::Instrument;
use wfc_ir::{Assign, JsonataTemplate, MapState};

use super::catch::{caught, state_failed};
use super::finish::{AssignRef, Finish, Language, OutputRef, finish_success};
use super::nested::MapCode;
use super::visit::{AbortGuard, Visit, failure_details, name_details, state_span};
use super::{Execution, Step};
use crate::jsonata::{self, Bindings};
use crate::retry::{self, RetryState};
use crate::{EventType, Failure};

/// One visit of a Map state whose data processing is `code`: its events, MaxConcurrency, the
/// iterations (each on its own line of control and, when journaled, its own CONTEXT operation,
/// through [`crate::map::run_iterations`]), the item-count limit, the retry loop with its
/// back-offs on the execution's clock, the history limit, and Catch.
///
/// The interpreter's `wfc_interp::map` (whose `code` reads the IR) and generated code (whose `code` is
/// compiled from the state's paths, ItemSelector and Retry/Catch tables, and whose item
/// processor is a generated machine) both run through here, so their histories are the same.
pub async fn map_with<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    input: Value,
    run_iteration: F,
) -> Result<Step, Failure>
where
    C: MapCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    let mut guard = AbortGuard { exec, name, event: EventType::MapStateAborted, armed: true };
    let outcome = map_inner(exec, name, code, input, run_iteration).instrument(state_span(name, "Map")).await;
    guard.armed = false;
    outcome
}

async fn map_inner<C, F, Fut>(
    exec: &Execution,
    name: &str,
    code: &C,
    mut input: Value,
    mut run_iteration: F,
) -> Result<Step, Failure>
where
    C: MapCode,
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    let mut visit = Visit::start(exec, name, "Map", &input)?;
    let visit_no = exec.next_visit(name);
    let io_ctx = code.needs_context();
    let ctx = visit.context_if(io_ctx);
    // A Map that reads its input no more once it has the items moves them out of it (below)
    // and needs no effective input: its InputPath is `$` and nothing else reads one.
    let takes_items = code.takes_items() && code.distributed().is_none();
    let effective =
        if takes_items { Value::Null } else { code.input_path(&input, &ctx).map_err(|f| visit.runtime(f))? };
    let attempt_ctx = code.attempt_needs_context();
    let mut retries = RetryState::new(code.retriers());
    loop {
        visit.retry_count = retries.retry_count();
        exec.check_history()?;
        // Per attempt: the context object (and so `$$.State.RetryCount` in ItemSelector) changes.
        let state_ctx = visit.context_if(io_ctx || attempt_ctx);
        let max_concurrency = match code.max_concurrency(&effective, &state_ctx) {
            Ok(n) => n,
            // A JSONata `MaxConcurrency` failing is catchable and retriable, like any JSONata field.
            Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), f).await? {
                    return caught(&visit, code.catchers(), input, failure);
                }
                continue;
            }
            Err(f) => return Err(visit.runtime(f)),
        };
        let outcome = if let Some(dist) = code.distributed() {
            // A Map Run records its own MapRunStarted/Succeeded/Failed; its children have
            // histories of their own.
            exec.reopen_map_run_for_redrive(name, visit_no, visit.retry_count, |error| {
                retry::find_catcher(code.catchers(), error).is_none()
            });
            match crate::distributed::map_run(
                exec,
                name,
                exec.map_run_op(name, visit_no, visit.retry_count),
                dist,
                &input,
                &effective,
                &state_ctx,
                max_concurrency,
                &mut run_iteration,
            )
            .await
            {
                Err(f) if wfc_ir::errors::is_terminal(&f.error) => return Err(visit.runtime(f)),
                other => other,
            }
        } else {
            let inputs = if takes_items {
                code.take_items(&mut input)
            } else {
                code.iteration_inputs(exec, &input, &effective, &state_ctx)
            };
            let inputs = match inputs {
                Ok(inputs) => inputs,
                // A JSONata failure can be retried and caught, unlike a path failure. AWS
                // records the Map as failed (after EvaluationFailed) although it never started.
                Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                    if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), f).await? {
                        return state_failed(&visit, EventType::MapStateFailed, code.catchers(), input, failure);
                    }
                    continue;
                }
                Err(f) => return Err(visit.runtime(f)),
            };
            let length = inputs.len();
            crate::map::check_item_count(exec.limits(), length).map_err(|f| visit.runtime(f))?;
            exec.record(EventType::MapStateStarted, json!({ "name": name, "length": length }));
            let iterations_exec = exec.parallel_scope(name, visit_no, visit.retry_count, "MapIteration");
            exec.reopen_for_redrive(&iterations_exec, name, visit_no, visit.retry_count, |error| {
                retry::find_catcher(code.catchers(), error).is_none()
            });
            let iterations =
                crate::map::run_iterations(&iterations_exec, name, inputs, max_concurrency, &mut run_iteration);
            let outcome =
                exec.in_state_context(&iterations_exec, name, "Map", iterations).await.map_err(|f| visit.runtime(f))?;
            outcome.map(Value::Array)
        };
        let (failure, iterations_failed) = match outcome {
            Ok(result) => {
                exec.record_with(EventType::MapStateSucceeded, || name_details(name));
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
                    Ok(output) => {
                        if code.distributed().is_some() {
                            exec.journal_map_state_exited(name, visit_no, visit.retry_count).await?;
                        }
                        return Ok(Step::Next(output));
                    }
                    Err(failure) => (failure, false),
                }
            }
            Err(f) => (f, true),
        };
        if let Some(failure) = visit.retry_after(visit_no, &mut retries, code.retriers(), failure).await? {
            // A Map Run whose ItemReader or ResultWriter failure ended the execution: redriven,
            // the state runs again as a new Map Run (see `distributed::journaled_run_failure`).
            if code.distributed().is_some()
                && [wfc_ir::errors::ITEM_READER_FAILED, wfc_ir::errors::RESULT_WRITER_FAILED]
                    .contains(&failure.error.as_str())
                && retry::find_catcher(code.catchers(), &failure.error).is_none()
                && exec.rerun_for_redrive(name, visit_no, visit.retry_count)
            {
                let generation = exec.redrive_generation(name, visit_no);
                exec.record_with(EventType::MapStateFailed, || name_details(name));
                exec.record(EventType::ExecutionFailed, failure_details(&failure));
                exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": generation }));
                exec.unmute_if_live(name, visit_no, 0);
                retries = RetryState::new(code.retriers());
                continue;
            }
            if iterations_failed {
                return state_failed(&visit, EventType::MapStateFailed, code.catchers(), input, failure);
            }
            return caught(&visit, code.catchers(), input, failure);
        }
    }
}

/// Whether a Map state is a JSONata state (the IR keeps no query language, so this looks for
/// JSONata-only fields): its items then come from `Items` (or the input) and `ItemSelector` is
/// JSONata.
pub fn is_jsonata_map(spec: &MapState) -> bool {
    let jsonata_count =
        |c: &Option<wfc_ir::distributed::Count>| matches!(c, Some(wfc_ir::distributed::Count::Jsonata(_)));
    spec.jsonata
        || spec.items.is_some()
        || spec.item_selector_jsonata.is_some()
        || matches!(spec.assign, Some(Assign::Jsonata(_)))
        || spec.output.is_some()
        || spec.max_concurrency_jsonata.is_some()
        || spec.distributed.as_ref().is_some_and(|d| {
            jsonata_count(&d.tolerated_failure_count)
                || matches!(d.tolerated_failure_percentage, Some(wfc_ir::distributed::Percentage::Jsonata(_)))
        })
}

/// A JSONata Map's iteration inputs: the items (`Items`, else the state input, which must then
/// be an array), each through `ItemSelector` with `$states.context.Map.Item`.
pub fn jsonata_map_inputs(
    exec: &Execution,
    spec: &MapState,
    input: &Value,
    state_ctx: &Value,
) -> Result<Vec<Value>, Failure> {
    let items = jsonata_map_items(exec, spec, input, state_ctx)?;
    jsonata_map_select(exec, spec, input, state_ctx, items)
}

/// A JSONata Map's items: `Items`, else the state input, which must then be an array.
pub(crate) fn jsonata_map_items(
    exec: &Execution,
    spec: &MapState,
    input: &Value,
    state_ctx: &Value,
) -> Result<Vec<Value>, Failure> {
    match &spec.items {
        Some(t) => {
            let b = Bindings::new(input, state_ctx);
            let expr = match t {
                JsonataTemplate::Expr(e) => Some(e.as_str()),
                _ => None,
            };
            let items = exec.with_rng(|rng| jsonata::template(t, "Items", &b, rng))?;
            crate::map::jsonata_items(items, expr)
        }
        None => crate::map::input_items(input),
    }
}

/// A JSONata Map's `ItemSelector` on each item, with `$states.context.Map.Item`; without one,
/// the items.
pub(crate) fn jsonata_map_select(
    exec: &Execution,
    spec: &MapState,
    input: &Value,
    state_ctx: &Value,
    items: Vec<Value>,
) -> Result<Vec<Value>, Failure> {
    let Some(selector) = &spec.item_selector_jsonata else { return Ok(items) };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let ctx = crate::map::item_context(state_ctx, index, item);
            exec.with_rng(|rng| jsonata::template(selector, "ItemSelector", &Bindings::new(input, &ctx), rng))
        })
        .collect()
}
