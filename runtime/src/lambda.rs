//! The optimized Lambda integration, `arn:aws:states:::lambda:invoke`: the state's Parameters
//! (or Arguments) are the Lambda `Invoke` request, the handler is the function, and the task's
//! result is the `Invoke` response as Step Functions returns it (asl-anchor §15, recorded):
//! `{"ExecutedVersion", "Payload", "SdkHttpMetadata", "SdkResponseMetadata", "StatusCode"}`.
//!
//! A plain Lambda ARN (`arn:aws:lambda:...:function:name`) is not this integration: its handler
//! gets the effective input and its result is the task's result, unwrapped.

use serde_json::{Value, json};

use crate::Failure;

/// The resource of the request-response Lambda integration (the `.waitForTaskToken` form is a
/// callback, not covered here).
pub const INVOKE_RESOURCE: &str = "arn:aws:states:::lambda:invoke";

/// Whether `resource` is the request-response `lambda:invoke` integration.
pub fn is_invoke(resource: &str) -> bool {
    resource == INVOKE_RESOURCE
}

/// Whether `resource` is a bare Lambda function ARN (`arn:aws:lambda:<region>:<account>:function:
/// <name>[:<qualifier>]`): AWS records such a Task's attempts as `LambdaFunction*` events, not
/// `Task*` ones.
pub fn is_function_arn(resource: &str) -> bool {
    let parts: Vec<&str> = resource.split(':').collect();
    parts.len() >= 7 && parts[0] == "arn" && parts[2] == "lambda" && parts[5] == "function" && !parts[6].is_empty()
}

/// What the function receives from an `Invoke` request: its `Payload` (`{}` when the request
/// has none, as Lambda invokes with an empty event). A request without `FunctionName` is refused
/// before the call, as the Lambda API refuses it.
pub fn payload(request: &Value) -> Result<Value, Failure> {
    let Some(fields) = request.as_object() else {
        return Err(Failure::runtime(format!(
            "The Parameters of a '{INVOKE_RESOURCE}' task must be an object with 'FunctionName', got {request}"
        )));
    };
    match fields.get("FunctionName") {
        Some(Value::String(_)) => {}
        _ => {
            return Err(Failure::runtime(format!(
                "The Parameters of a '{INVOKE_RESOURCE}' task must have a string field 'FunctionName'"
            )));
        }
    }
    Ok(fields.get("Payload").cloned().unwrap_or_else(|| json!({})))
}

/// The `Invoke` response Step Functions hands on, around the function's return value. The
/// metadata is fixed (there is no HTTP call locally): version `$LATEST`, status 200, and a request
/// id that is the same for every call, so runs stay reproducible.
pub fn response(function_result: Value) -> Value {
    const REQUEST_ID: &str = "00000000-0000-0000-0000-000000000000";
    json!({
        "ExecutedVersion": "$LATEST",
        "Payload": function_result,
        "SdkHttpMetadata": {
            "AllHttpHeaders": {
                "X-Amz-Executed-Version": ["$LATEST"],
                "x-amzn-Remapped-Content-Length": ["0"],
                "Connection": ["keep-alive"],
                "x-amzn-RequestId": [REQUEST_ID],
                "Content-Type": ["application/json"],
            },
            "HttpHeaders": {
                "Connection": "keep-alive",
                "Content-Type": "application/json",
                "X-Amz-Executed-Version": "$LATEST",
                "x-amzn-Remapped-Content-Length": "0",
                "x-amzn-RequestId": REQUEST_ID,
            },
            "HttpStatusCode": 200,
        },
        "SdkResponseMetadata": { "RequestId": REQUEST_ID },
        "StatusCode": 200,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_and_response() {
        assert_eq!(payload(&json!({"FunctionName": "f", "Payload": {"a": 1}})).unwrap(), json!({"a": 1}));
        assert_eq!(payload(&json!({"FunctionName": "f"})).unwrap(), json!({}));
        assert_eq!(payload(&json!({"Payload": 1})).unwrap_err().error, "States.Runtime");
        assert!(is_function_arn("arn:aws:lambda:us-east-1:111111111111:function:f"));
        assert!(is_function_arn("arn:aws:lambda:us-east-1:111111111111:function:f:live"));
        assert!(!is_function_arn(INVOKE_RESOURCE));
        assert!(!is_function_arn("arn:aws:states:::lambda:invoke.waitForTaskToken"));
        let r = response(json!("hi"));
        assert_eq!(r["Payload"], json!("hi"));
        assert_eq!(r["StatusCode"], json!(200));
        assert_eq!(r["ExecutedVersion"], json!("$LATEST"));
    }
}
