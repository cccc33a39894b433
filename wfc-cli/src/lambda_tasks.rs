//! `--lambda-endpoint URL` (`wfc run`, `wfc worker`, `wfc serve`): Lambda Task resources
//! (`arn:aws:lambda:...:function:...`, `arn:aws:states:::lambda:invoke` and its
//! `.waitForTaskToken` form) invoked through the Lambda `Invoke` API at URL, as Step Functions
//! Local's `LAMBDA_ENDPOINT`: LocalStack, `sam local start-lambda` or AWS itself answer.
//!
//! The client is aws-sdk-lambda with aws-config's credential and region chain (the runtime's
//! [`SdkClient`], its retries off: a Task's `Retry` decides). What the function gets is what the
//! runtime hands a Lambda Task's handler: the effective input for a function ARN, the request's
//! `Payload` for `lambda:invoke` (the runtime wraps the function's result in the Invoke
//! response). A function error (`FunctionError` in the answer) fails the Task as Step Functions
//! records it: the error is the payload's `errorType` (`Lambda.Unknown` without one) and the
//! cause the payload's text. A refusal of the service is `Lambda.<its error code>` (e.g.
//! `Lambda.ResourceNotFoundException`) and no answer is `Lambda.SdkClientException`, each with a
//! cause that names the function, the Task state and the endpoint.
//!
//! Calls run on a runtime of their own, with a real clock: an execution on virtual time
//! (`--virtual-time`) has tokio's clock paused, which would fire the SDK's timeouts at once; the
//! call is waited for on the blocking pool, which holds that clock still, as for commands.

use std::sync::OnceLock;

use aws_sdk_lambda::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_lambda::primitives::Blob;
use futures::future::BoxFuture;
use serde_json::Value;
use wfc_aws::lambda_durable::client::SdkClient;
use wfc_interp::DynHandler;
use wfc_runtime::{Failure, TaskContext};

/// The `.waitForTaskToken` form of the Lambda integration: the handler gets the whole request.
const INVOKE_CALLBACK: &str = "arn:aws:states:::lambda:invoke.waitForTaskToken";

/// The runtime the Lambda calls run on (real time, one worker thread, for the process's life).
fn calls_runtime() -> Result<&'static tokio::runtime::Handle, String> {
    static HANDLE: OnceLock<Result<tokio::runtime::Handle, String>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("wfc-lambda-calls".into())
                .spawn(move || {
                    match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
                        Ok(rt) => {
                            let _ = tx.send(Ok(rt.handle().clone()));
                            rt.block_on(std::future::pending::<()>());
                        }
                        Err(e) => {
                            let _ = tx.send(Err(format!("cannot start the Lambda calls' runtime: {e}")));
                        }
                    }
                })
                .map_err(|e| format!("cannot start the Lambda calls' thread: {e}"))?;
            rx.recv().map_err(|e| format!("the Lambda calls' runtime did not start: {e}"))?
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Lambda resources to the endpoint, anything else to `fallback`.
pub(crate) struct LambdaTasks<F> {
    client: aws_sdk_lambda::Client,
    endpoint: String,
    fallback: F,
    virtual_time: bool,
}

impl<F: DynHandler> LambdaTasks<F> {
    /// A client of `endpoint` from aws-config's chain; not called from inside a runtime.
    pub(crate) fn new(endpoint: &str, fallback: F, virtual_time: bool) -> Result<LambdaTasks<F>, String> {
        let handle = calls_runtime()?;
        let client = handle
            .block_on(SdkClient::from_env(Some(endpoint)))
            .map_err(|e| format!("--lambda-endpoint {endpoint}: {e}"))?;
        Ok(LambdaTasks { client: client.sdk().clone(), endpoint: endpoint.to_owned(), fallback, virtual_time })
    }
}

/// The function a Lambda Task calls and the event it sends; `None` for other resources.
fn target(resource: &str, input: Value, ctx: &TaskContext) -> Option<Result<(String, Value), Failure>> {
    if wfc_runtime::lambda::is_invoke(resource) {
        // The runtime evaluated the request: the handler gets its Payload.
        let function = ctx.function_name()?.to_owned();
        return Some(Ok((function, input)));
    }
    if resource == INVOKE_CALLBACK {
        return Some(wfc_runtime::lambda::request(&input).and_then(|r| Ok((r.function_name, r.event?))));
    }
    if wfc_runtime::lambda::is_function_arn(resource) {
        return Some(Ok((resource.to_owned(), input)));
    }
    None
}

impl<F: DynHandler> DynHandler for LambdaTasks<F> {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        let (function, event) = match target(resource, input.clone(), &ctx) {
            None => return self.fallback.call(resource, input, ctx),
            Some(Err(f)) => return Box::pin(std::future::ready(Err(f))),
            Some(Ok(both)) => both,
        };
        let call = invoke(self.client.clone(), self.endpoint.clone(), function, event, ctx.state_name().to_owned());
        let virtual_time = self.virtual_time;
        Box::pin(async move {
            let handle = calls_runtime().map_err(|e| Failure::new(wfc_ir::errors::TASK_FAILED, e))?;
            let lost = |e: String| Failure::new(wfc_ir::errors::TASK_FAILED, format!("the Lambda call failed: {e}"));
            if virtual_time {
                let handle = handle.clone();
                tokio::task::spawn_blocking(move || handle.block_on(call)).await.map_err(|e| lost(e.to_string()))?
            } else {
                // Dropped with the Task (a timeout): the call is dropped with it.
                let task = handle.spawn(call);
                let abort = task.abort_handle();
                let _guard = AbortOnDrop(abort);
                task.await.map_err(|e| lost(e.to_string()))?
            }
        })
    }
}

/// Aborts the call when the Task's future is dropped (a TimeoutSeconds, a stopped execution).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One `Invoke` of `function` with `event`; its payload as JSON, or the Task's failure.
async fn invoke(
    client: aws_sdk_lambda::Client,
    endpoint: String,
    function: String,
    event: Value,
    state: String,
) -> Result<Value, Failure> {
    let whose = format!("function '{function}' of Task state '{state}', Lambda endpoint {endpoint}");
    let answer = client.invoke().function_name(&function).payload(Blob::new(event.to_string())).send().await;
    let output = match answer {
        Ok(output) => output,
        Err(SdkError::ServiceError(e)) => {
            let status = e.raw().status().as_u16();
            let err = e.err();
            let code = err.code().unwrap_or("AWSLambdaException").to_owned();
            let message = err.message().unwrap_or("").to_owned();
            let request_id = e
                .raw()
                .headers()
                .get("x-amzn-requestid")
                .or_else(|| e.raw().headers().get("x-amz-request-id"))
                .unwrap_or("")
                .to_owned();
            // AWS's wording (Step Functions quotes the Java SDK's exception), then where.
            let cause = format!(
                "{message} (Service: AWSLambda; Status Code: {status}; Error Code: {code}; Request ID: {request_id}; Proxy: null) [{whose}]"
            );
            return Err(Failure::new(format!("Lambda.{code}"), cause));
        }
        Err(e) => {
            let cause = format!("Unable to execute HTTP request: {} [{whose}]", DisplayErrorContext(&e));
            return Err(Failure::new("Lambda.SdkClientException", cause));
        }
    };
    let bytes = output.payload().map(|b| b.as_ref().to_vec()).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let parsed: Option<Value> =
        if text.trim().is_empty() { Some(Value::Null) } else { serde_json::from_str(&text).ok() };
    if output.function_error().is_some() {
        // Step Functions names the failure by the function's error document.
        return Err(wfc_runtime::lambda::function_error(&Value::String(text)));
    }
    parsed.ok_or_else(|| {
        Failure::new(
            wfc_ir::errors::TASK_FAILED,
            format!("the {whose} returned a payload that is not JSON: {}", text.chars().take(200).collect::<String>()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lambda_resources_are_told_apart() {
        let ctx = TaskContext::new("S", "arn:aws:states:::lambda:invoke", 0, "e").with_function_name("f");
        let (f, e) = target("arn:aws:states:::lambda:invoke", json!({"a": 1}), &ctx).unwrap().unwrap();
        assert_eq!((f.as_str(), e), ("f", json!({"a": 1})));
        let arn = "arn:aws:lambda:us-east-1:123456789012:function:g";
        let ctx = TaskContext::new("S", arn, 0, "e");
        assert_eq!(target(arn, json!(1), &ctx).unwrap().unwrap(), (arn.to_owned(), json!(1)));
        let request = json!({"FunctionName": "h", "Payload": {"token": "t"}});
        let ctx = TaskContext::new("S", INVOKE_CALLBACK, 0, "e");
        assert_eq!(target(INVOKE_CALLBACK, request, &ctx).unwrap().unwrap(), ("h".to_owned(), json!({"token": "t"})));
        assert!(target("arn:aws:states:::sqs:sendMessage", json!({}), &ctx).is_none());
        assert!(target("arn:aws:states:us-east-1:123456789012:activity:a", json!({}), &ctx).is_none());
    }
}
