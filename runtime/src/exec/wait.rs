//! The Wait state.

use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use super::Execution;
use super::pass::Assigned;
use super::visit::{AbortGuard, Visit, state_span};
use crate::jsonata::{self, Bindings};
use crate::{EventType, Failure};

/// The longest Wait AWS accepts, [`wfc_ir::MAX_WAIT_SECONDS`] (2³¹ − 1 s, about 68 years:
/// AWS's recorded boundary). Longer is `States.Runtime` "Wait state delay is too long." as on AWS.
pub const MAX_WAIT: Duration = Duration::from_secs(wfc_ir::MAX_WAIT_SECONDS);

/// The value of a path as AWS prints it after `==` in Wait messages: strings bare, the rest JSON.
fn bare(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A Wait's JSONata `Seconds`: a non-negative integer, else `States.QueryEvaluationError`.
pub fn wait_seconds_jsonata(
    exec: &Execution,
    expr: &wfc_ir::JsonataExpr,
    b: &Bindings<'_>,
) -> Result<Duration, Failure> {
    let value = exec.with_rng(|rng| jsonata::evaluate(expr, "Seconds", b, rng))?;
    match value.as_u64() {
        Some(s) => Ok(Duration::from_secs(s)),
        None => Err(jsonata::unexpected_type(expr.as_str(), "Seconds", "non-negative integer", &value)),
    }
}

/// A Wait's JSONata `Timestamp`: the time from now until then on the execution's clock; a value
/// that is not an ASL timestamp is `States.QueryEvaluationError`.
pub fn wait_timestamp_jsonata(
    exec: &Execution,
    expr: &wfc_ir::JsonataExpr,
    b: &Bindings<'_>,
) -> Result<Duration, Failure> {
    let value = exec.with_rng(|rng| jsonata::evaluate(expr, "Timestamp", b, rng))?;
    match value.as_str().map(wfc_ir::timestamp::parse) {
        Some(Ok(ts)) => Ok(exec.clock().until(ts)),
        _ => Err(jsonata::query_error(format!(
            "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {}",
            bare(&value)
        ))),
    }
}

/// A Wait's delay within [`MAX_WAIT`], else AWS's `States.Runtime`.
pub fn wait_limit(delay: Duration) -> Result<Duration, Failure> {
    if delay > MAX_WAIT {
        return Err(Failure::runtime("Wait state delay is too long."));
    }
    Ok(delay)
}

/// What a `SecondsPath` (whose text is `text`) selected, `None` when nothing: the delay.
pub fn wait_seconds_at(text: &str, value: Option<&Value>) -> Result<Duration, Failure> {
    let Some(value) = value else {
        return Err(Failure::runtime(format!("The SecondsPath parameter does not reference an input value: {text}")));
    };
    match (value.as_u64(), value.as_i64()) {
        (Some(s), _) => Ok(Duration::from_secs(s)),
        (None, Some(_)) => Err(Failure::runtime(format!(
            "The SecondsPath parameter references a negative value: {} == {}",
            text,
            bare(value)
        ))),
        (None, None) => Err(Failure::runtime(format!(
            "The SecondsPath parameter cannot be parsed as a long value: {} == {}",
            text,
            bare(value)
        ))),
    }
}

/// What a `TimestampPath` (whose text is `text`) selected, `None` when nothing: the time from
/// now on the execution's clock until then.
pub fn wait_timestamp_at(exec: &Execution, text: &str, value: Option<&Value>) -> Result<Duration, Failure> {
    let Some(value) = value else {
        return Err(Failure::runtime(format!("The TimestampPath parameter does not reference an input value: {text}")));
    };
    match value.as_str().map(wfc_ir::timestamp::parse) {
        Some(Ok(ts)) => Ok(exec.clock().until(ts)),
        _ => Err(Failure::runtime(format!(
            "The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: {} == {}",
            text,
            bare(value)
        ))),
    }
}

/// One visit of a Wait state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` with an `Output`): as [`wait_with`], with `body` also giving the assigned values
/// (`None` without an `Assign`; evaluated before the wait, against the variables as of entry),
/// which the Exited event records and which are visible from the next state on. A failure of
/// `body` gets AWS's prefix naming the state (and a `States.QueryEvaluationError` its
/// `EvaluationFailed` event).
///
/// The interpreter's `wfc_interp::wait` and generated code (which compiles `body` from the state's
/// JSONata `Seconds`/`Timestamp`, `Output` and `Assign`) both go through here.
pub async fn wait_language_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Option<Assigned>, Duration), Failure>,
) -> Result<Value, Failure> {
    wait_visit(exec, name, needs_ctx, input, |visit, input, ctx| body(input, ctx).map_err(|f| visit.runtime(f))).await
}

/// One visit of a JSONPath Wait state without `Assign`: its events around `body`, which gives
/// the output and the delay from the raw input and the context object (`null` unless
/// `needs_ctx`), then the wait on the execution's clock (durable when journaled). A
/// `States.Runtime` failure of `body` gets AWS's prefix naming the state.
///
/// The interpreter's `wfc_interp::wait` and generated code (which compiles `body` from the state's paths
/// and its Seconds/Timestamp/SecondsPath/TimestampPath) both go through here.
pub async fn wait_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Duration), Failure>,
) -> Result<Value, Failure> {
    wait_visit(exec, name, needs_ctx, input, |visit, input, ctx| {
        let (output, delay) = body(input, ctx).map_err(|f| visit.runtime(f))?;
        Ok((output, None, delay))
    })
    .await
}

/// One visit of a JSONPath Wait state with `Assign` (and no JSONata `Output`): as
/// [`wait_with`], with `body` also giving the assigned values (evaluated before the wait, on
/// the effective input, against the variables as of entry), which the Exited event records and
/// which are visible from the next state on.
///
/// The interpreter's `wfc_interp::wait` and generated code both go through here.
pub async fn wait_assign_with(
    exec: &Execution,
    name: &str,
    input: Value,
    body: impl FnOnce(Value, &Value) -> Result<(Value, Assigned, Duration), Failure>,
) -> Result<Value, Failure> {
    wait_visit(exec, name, true, input, |visit, input, ctx| {
        let (output, assigned, delay) = body(input, ctx).map_err(|f| visit.runtime(f))?;
        Ok((output, Some(assigned), delay))
    })
    .await
}

/// The visit every Wait shares: entry, `body` (output, assigned variables, delay), the wait,
/// exit; a Wait aborted mid-wait records `WaitStateAborted`.
#[allow(clippy::type_complexity)]
async fn wait_visit(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(&Visit<'_>, Value, &Value) -> Result<(Value, Option<Vec<(String, Value)>>, Duration), Failure>,
) -> Result<Value, Failure> {
    let mut guard = AbortGuard { exec, name, event: EventType::WaitStateAborted, armed: true };
    let outcome = async {
        let visit = Visit::start(exec, name, "Wait", &input)?;
        let visit_no = exec.next_visit(name);
        let ctx = visit.context_if(needs_ctx);
        let (output, assigned, delay) = body(&visit, input, &ctx)?;
        exec.durable_wait(name, visit_no, delay).await.map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(output)
    }
    .instrument(state_span(name, "Wait"))
    .await;
    guard.armed = false;
    outcome
}
