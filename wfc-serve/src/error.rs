//! AWS's error shape for the JSON 1.0 protocol: HTTP 400 (client errors) or 500, a body
//! `{"__type": "<Code>", "message": "..."}`. The SDKs read the code from `__type` (botocore
//! strips any `namespace#` prefix, so the bare code is what AWS clients match on).

use serde_json::{Value, json};
use wfc_runtime::durable::StoreError;

/// One API error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// The AWS error code (`StateMachineDoesNotExist`, `ValidationException`, ...).
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl ApiError {
    /// A client error (HTTP 400).
    pub fn client(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status: 400, code, message: message.into() }
    }

    /// `ValidationException`: a missing or malformed member.
    pub fn validation(message: impl Into<String>) -> ApiError {
        ApiError::client("ValidationException", message)
    }

    /// A server-side failure (HTTP 500): the store failed.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: 500, code: "InternalFailure", message: message.into() }
    }

    /// The response body.
    pub fn body(&self) -> Value {
        json!({ "__type": self.code, "message": self.message })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl From<StoreError> for ApiError {
    /// Store errors that reach the API unmapped are the store's own failures.
    fn from(e: StoreError) -> ApiError {
        ApiError::internal(e.to_string())
    }
}
