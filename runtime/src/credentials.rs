//! Task `Credentials`: the role ARN a Task's call would run under on AWS (cross-account access),
//! evaluated per attempt.
//!
//! Locally there is no IAM: nothing is assumed. The evaluated ARN is recorded as AWS records it
//! (`taskCredentials.roleArn` in `TaskScheduled`) and handed to the handler in its
//! [`TaskContext`](crate::TaskContext) (`role_arn()`), so a handler that calls AWS itself can
//! assume the role. Bad values fail the Task rather than being dropped.

use rand::Rng;
use serde_json::Value;
use wfc_ir::{JsonataTemplate, TaskCredentials};

use crate::jsonata::{self, Bindings};
use crate::{Failure, io};

/// The role ARN of `credentials`, evaluated against the effective input and the context object
/// (which carries the variables). A path that selects nothing is `States.Runtime` with AWS's
/// cause (`The JSONPath '$.x' specified for the field 'RoleArn.$' could not be found in the
/// input '...'`); a JSONata failure is `States.QueryEvaluationError`. A `RoleArn` that is not a
/// string is `States.Runtime` in a JSONPath state and `States.QueryEvaluationError` (AWS's
/// "unexpected result type") in a JSONata one.
pub fn role_arn(
    credentials: &TaskCredentials,
    effective: &Value,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<String, Failure> {
    match credentials {
        TaskCredentials::JsonPath(t) => jsonpath_role_arn(io::template(t, effective, context, rng)?),
        TaskCredentials::Jsonata(t) => {
            let value = jsonata::template(t, "Credentials", &Bindings::new(effective, context), rng)?;
            let expr = match t {
                JsonataTemplate::Object(entries) => match entries.iter().find(|(k, _)| k == "RoleArn") {
                    Some((_, JsonataTemplate::Expr(e))) => Some(e.as_str()),
                    _ => None,
                },
                _ => None,
            };
            jsonata_role_arn(value, expr)
        }
    }
}

/// The role ARN of a JSONPath state's evaluated `Credentials` object (generated code builds the
/// object itself): its `RoleArn` string, else `States.Runtime`.
pub fn jsonpath_role_arn(credentials: Value) -> Result<String, Failure> {
    match credentials.get("RoleArn") {
        Some(Value::String(arn)) => Ok(arn.clone()),
        other => Err(Failure::runtime(format!(
            "The field 'RoleArn' of 'Credentials' must be a string, but was: {}",
            other.unwrap_or(&Value::Null)
        ))),
    }
}

/// The role ARN of a JSONata state's evaluated `Credentials` object: its `RoleArn` string, else
/// `States.QueryEvaluationError` naming `expr` (the text of `RoleArn`'s `{% %}` expression, when
/// it is one; otherwise the value).
pub fn jsonata_role_arn(credentials: Value, expr: Option<&str>) -> Result<String, Failure> {
    match credentials.get("RoleArn") {
        Some(Value::String(arn)) => Ok(arn.clone()),
        other => {
            let other = other.cloned().unwrap_or(Value::Null);
            let text = expr.map_or_else(|| other.to_string(), str::to_owned);
            Err(jsonata::unexpected_type(&text, "Credentials/RoleArn", "string", &other))
        }
    }
}
