//! The Fail state.

use serde_json::Value;

use super::Execution;
use super::visit::{Visit, state_span};
use crate::Failure;
use crate::jsonata::{self, Bindings};

/// One visit of a Fail state: its entry event, then `body`, which gives the failure (its Error
/// and Cause) from the raw input and the context object (`null` unless `needs_ctx`); a
/// failure of `body` itself (a path that selects nothing or not a string) is the state's
/// failure, with AWS's prefix when it is `States.Runtime`.
///
/// The interpreter's `wfc_interp::fail` and generated code (which compiles `body` from Error/Cause and
/// ErrorPath/CausePath) both go through here.
pub fn fail_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    body: impl FnOnce(&Value, &Value) -> Result<Failure, Failure>,
) -> Failure {
    state_span(name, "Fail").in_scope(|| {
        if let Err(f) = exec.check_history() {
            return f;
        }
        exec.unmute_at_fail_state();
        let visit = Visit::enter(exec, name, "Fail", &input);
        let ctx = visit.context_if(needs_ctx);
        body(&input, &ctx).unwrap_or_else(|f| visit.runtime(f))
    })
}

/// A Fail state's JSONata `Error` or `Cause` (`field`): a string, else
/// `States.QueryEvaluationError` with AWS's wording.
pub fn fail_jsonata(
    exec: &Execution,
    expr: &wfc_ir::JsonataExpr,
    field: &str,
    b: &Bindings<'_>,
) -> Result<String, Failure> {
    match exec.with_rng(|rng| jsonata::evaluate(expr, field, b, rng))? {
        Value::String(s) => Ok(s),
        other => Err(jsonata::unexpected_type(expr.as_str(), field, "string", &other)),
    }
}

/// What a Fail state's intrinsic ErrorPath or CausePath (`field`) gave: a string, else
/// `States.Runtime`.
pub fn computed_string(field: &str, value: Value) -> Result<String, Failure> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(Failure::runtime(format!("The {field} must be a string, but it was {other}"))),
    }
}

/// What a Fail state's ErrorPath or CausePath (`field`, whose path is `text`) selected: a
/// string, else `States.Runtime`.
pub fn fail_string(field: &str, text: &str, value: Value) -> Result<String, Failure> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(Failure::runtime(format!("The {field} '{text}' must select a string, but it selected {other}"))),
    }
}
