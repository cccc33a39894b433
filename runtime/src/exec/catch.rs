//! Retry back-offs and Catch, shared by Task, Parallel and Map.

use serde_json::Value;
use wfc_ir::StateId;

use super::Step;
use super::pass::Assigned;
use super::visit::{Visit, name_details};
use crate::jsonata::Bindings;
use crate::retry::{self, RetryDecision, RetryState};
use crate::{EventType, Failure};

impl Visit<'_> {
    /// After a failed attempt of a Task, Parallel or Map: when a retrier matches, waits out its
    /// back-off on the execution's clock and returns `None` (run the attempt again); otherwise
    /// hands the failure back for [`caught`].
    pub(super) async fn retry_after<R: retry::RetryRule>(
        &self,
        visit_no: u32,
        retries: &mut RetryState,
        retriers: &[R],
        failure: Failure,
    ) -> Result<Option<Failure>, Failure> {
        let decision = self.exec.with_rng(|rng| retries.decide(retriers, &failure.error, rng));
        self.retry_decided(visit_no, retries, decision, failure).await
    }

    /// [`retry_after`](Self::retry_after) once the retry driver has decided.
    pub(super) async fn retry_decided(
        &self,
        visit_no: u32,
        retries: &RetryState,
        decision: RetryDecision,
        failure: Failure,
    ) -> Result<Option<Failure>, Failure> {
        match decision {
            RetryDecision::Retry { delay, .. } => {
                self.exec
                    .backoff(self.name, visit_no, retries.retry_count(), delay)
                    .await
                    .map_err(|f| self.runtime(f))?;
                Ok(None)
            }
            RetryDecision::GiveUp => Ok(Some(failure)),
        }
    }
}

/// After a Parallel's branches or a Map's iterations failed and retries are exhausted: records
/// the state's `ParallelStateFailed`/`MapStateFailed` (after `EvaluationFailed` when a JSONata
/// failure ends the execution, as AWS orders them), then [`caught`]. Only the last attempt
/// records it: AWS records none for an attempt that is retried.
pub(super) fn state_failed<C: retry::CatchRule>(
    visit: &Visit<'_>,
    event: EventType,
    catchers: &[C],
    raw_input: Value,
    failure: Failure,
) -> Result<Step, Failure> {
    let uncaught = retry::find_catcher(catchers, &failure.error).is_none();
    let failure = if uncaught && failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR {
        visit.runtime(failure)
    } else {
        failure
    };
    visit.exec.record_with(event, || name_details(visit.name));
    caught(visit, catchers, raw_input, failure)
}

/// After retries are exhausted: the first matching catcher, or the failure itself.
pub(super) fn caught<C: retry::CatchRule>(
    visit: &Visit<'_>,
    catchers: &[C],
    raw_input: Value,
    failure: Failure,
) -> Result<Step, Failure> {
    let Some(catcher) = retry::find_catcher(catchers, &failure.error) else {
        // A JSONata failure that nothing caught ends the execution with AWS's prefix.
        return Err(if failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR {
            visit.runtime(failure)
        } else {
            failure
        });
    };
    if let Some(assign) = catcher.assign_code() {
        // As below: the Assign on the Error Output first, then the catcher's ResultPath.
        let error_output = failure.to_error_output();
        let ctx = visit.context();
        let assigned = assign(visit.exec, &error_output, &ctx).map_err(|f| visit.runtime(f))?;
        let output = catcher.output(raw_input, &failure).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, Some(assigned))?;
        return Ok(Step::Goto { target: catcher.next(), output });
    }
    if let Some(code) = catcher.jsonata_code() {
        return caught_language(
            visit,
            code.catcher.next,
            raw_input,
            failure,
            |_, b| code.assign.map(|assign| assign(visit.exec, b)).transpose(),
            |b| code.output.map(|output| output(visit.exec, b)),
            |raw, failure| retry::CatchRule::output(&code.catcher, raw, failure),
        );
    }
    let Some(catcher) = catcher.with_language() else {
        let output = catcher.output(raw_input, &failure).map_err(|f| visit.runtime(f))?;
        visit.finish(&output)?;
        return Ok(Step::Goto { target: catcher.next(), output });
    };
    caught_language(
        visit,
        catcher.next,
        raw_input,
        failure,
        |error_output, b| visit.assign(catcher.assign.as_ref(), error_output, b),
        |b| catcher.output.as_ref().map(|t| visit.jsonata(t, "Output", b)),
        |raw, failure| retry::catch_output(catcher, raw, failure),
    )
}

/// A catcher with `Assign` or a JSONata `Output`, the IR's or compiled: `assign` (on the Error
/// Output, `$`, and the `$states` bindings; `None` without an `Assign`), then `output` (`None`
/// without an `Output`: `result_path` places the Error Output in the raw input), then the
/// Exited event and the new variables. The state's own Assign is not evaluated.
fn caught_language(
    visit: &Visit<'_>,
    next: StateId,
    raw_input: Value,
    failure: Failure,
    assign: impl FnOnce(&Value, &Bindings<'_>) -> Result<Option<Assigned>, Failure>,
    output: impl FnOnce(&Bindings<'_>) -> Option<Result<Value, Failure>>,
    result_path: impl FnOnce(Value, &Failure) -> Result<Value, Failure>,
) -> Result<Step, Failure> {
    // A catcher's Assign and Output see the Error Output (`$`, `$states.errorOutput`).
    let error_output = failure.to_error_output();
    let ctx = visit.context();
    let b = Bindings { error_output: Some(&error_output), ..Bindings::new(&raw_input, &ctx) };
    let assigned = assign(&error_output, &b).map_err(|f| visit.runtime(f))?;
    let output = match output(&b) {
        Some(evaluated) => evaluated.map_err(|f| visit.runtime(f))?,
        None => result_path(raw_input.clone(), &failure).map_err(|f| visit.runtime(f))?,
    };
    visit.finish_assigned(&output, assigned)?;
    Ok(Step::Goto { target: next, output })
}
