//! Errors as workflows see them: an error name and a cause.
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An error raised by a state or a task: the ASL Error Output `{"Error", "Cause"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct Failure {
    /// The error name (`States.Timeout`, or a task's own name such as `PaymentDeclined`).
    #[serde(rename = "Error")]
    pub error: String,
    /// A human-readable cause.
    #[serde(rename = "Cause")]
    pub cause: String,
}

/// What a task handler returns when it fails. The same shape as [`Failure`].
pub type TaskError = Failure;

impl Failure {
    /// A failure with this error name and cause.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Failure {
        Failure { error: error.into(), cause: cause.into() }
    }

    /// A `States.Runtime` failure: terminal, never retried or caught.
    pub fn runtime(cause: impl Into<String>) -> Failure {
        Failure::new(wfc_ir::errors::RUNTIME, cause)
    }

    /// The Error Output document a Catch passes on: `{"Error": ..., "Cause": ...}`.
    pub fn to_error_output(&self) -> Value {
        serde_json::json!({ "Error": self.error, "Cause": self.cause })
    }
}

/// What kind of JSON value `v` is, as error messages name it ("a string", "an object", ...).
pub fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a Boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
