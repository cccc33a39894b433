//! The Fail state.

use serde_json::Value;
use wfc_ir::{ComputedString, FailState};

use super::Execution;
use super::visit::{Visit, state_span};
use crate::jsonata::{self, Bindings};
use crate::{Failure, io};

/// A Fail state: the failure that ends the machine (or is caught by an enclosing Parallel's Catch).
pub fn fail(exec: &Execution, name: &str, spec: &FailState, input: Value) -> Failure {
    let needs_ctx = io::paths_use_context([spec.error_path.as_ref(), spec.cause_path.as_ref()])
        || spec.error_computed.is_some()
        || spec.cause_computed.is_some();
    fail_with(exec, name, needs_ctx, input, |input, ctx| {
        let computed = |value: &ComputedString, field: &str| -> Result<String, Failure> {
            match value {
                ComputedString::Intrinsic(i) => {
                    computed_string(field, exec.with_rng(|rng| crate::intrinsics::evaluate(i, field, input, ctx, rng))?)
                }
                ComputedString::Jsonata(e) => fail_jsonata(exec, e, field, &Bindings::new(input, ctx)),
            }
        };
        let read = |literal: &Option<String>, path: &Option<wfc_ir::Path>, field: &str| -> Result<String, Failure> {
            match path {
                Some(p) => fail_string(field, p.as_str(), io::select_field(p, field, input, ctx)?),
                // AWS leaves an absent Error/Cause out of the event; the Error Output uses "".
                None => Ok(literal.clone().unwrap_or_default()),
            }
        };
        let error = match &spec.error_computed {
            Some(c) => computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Error" } else { "ErrorPath" }),
            None => read(&spec.error, &spec.error_path, "ErrorPath"),
        };
        let cause = match &spec.cause_computed {
            Some(c) => computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Cause" } else { "CausePath" }),
            None => read(&spec.cause, &spec.cause_path, "CausePath"),
        };
        match (error, cause) {
            (Ok(error), Ok(cause)) => Ok(Failure { error, cause }),
            (Err(f), _) | (_, Err(f)) => Err(f),
        }
    })
}

/// One visit of a Fail state: its entry event, then `body`, which gives the failure (its Error
/// and Cause) from the raw input and the context object (`null` unless `needs_ctx`); a
/// failure of `body` itself (a path that selects nothing or not a string) is the state's
/// failure, with AWS's prefix when it is `States.Runtime`.
///
/// The interpreter's [`fail`] and generated code (which compiles `body` from Error/Cause and
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
pub(crate) fn fail_jsonata(
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
pub(crate) fn computed_string(field: &str, value: Value) -> Result<String, Failure> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(Failure::runtime(format!("The {field} must be a string, but it was {other}"))),
    }
}

/// What a Fail state's ErrorPath or CausePath (`field`, whose path is `text`) selected: a
/// string, else `States.Runtime`.
pub(crate) fn fail_string(field: &str, text: &str, value: Value) -> Result<String, Failure> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(Failure::runtime(format!("The {field} '{text}' must select a string, but it selected {other}"))),
    }
}
