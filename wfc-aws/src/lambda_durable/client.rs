//! The durable execution API through **aws-sdk-lambda** (feature `lambda-sdk`): what a deployed
//! function talks to AWS with. Credentials and region come from aws-config's chain (in Lambda:
//! the role's session credentials in the environment), requests are SigV4-signed and sent over
//! rustls; an endpoint override (`AWS_ENDPOINT_URL_LAMBDA`, or [`SdkClient::from_env`]'s
//! `endpoint`) points the same client at a local service such as `dex-local-runner`.
//!
//! Retries (spec §15.2/§15.3) are this module's, not the SDK's (its retry policy is disabled, so
//! that one place decides): `ThrottlingException`, `TooManyRequestsException`,
//! `ServiceException`, any 429 or 5xx answer, and transport failures (no answer, a timeout) are
//! retried with exponential back-off and jitter while the invocation's remaining time allows;
//! anything else propagates at once, classified for [`super`]: an invalid
//! checkpoint token, a size limit, or a terminal refusal (`ResourceNotFoundException`, ...).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_sdk_lambda::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{
    CallbackOptions, ChainedInvokeOptions, ContextOptions, ErrorObject, Operation, OperationAction, OperationType,
    OperationUpdate, StepOptions, WaitOptions,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{Checkpointed, ClientError, DurableClient, StatePage};

/// How transient errors are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay; each retry doubles it.
    pub initial: Duration,
    /// The longest delay between two tries.
    pub max: Duration,
    /// How long retries may go on when the invocation's deadline is unknown (`wfc lambda-serve`).
    pub budget: Duration,
    /// What is kept of the invocation's remaining time for answering: no retry starts later.
    pub margin: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
            budget: Duration::from_secs(60),
            margin: Duration::from_secs(2),
        }
    }
}

/// The durable execution API client on aws-sdk-lambda.
#[derive(Debug, Clone)]
pub struct SdkClient {
    client: aws_sdk_lambda::Client,
    backoff: Backoff,
    /// When the invocation ends (Lambda's deadline): no retry is started past it.
    deadline: Option<SystemTime>,
}

/// Why [`SdkClient::from_env`] could not make a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl SdkClient {
    /// A client from aws-config's chain (environment, shared files, container and instance
    /// credentials; `AWS_REGION`...), sent to `endpoint` when given (`http://` or `https://`),
    /// else to the chain's endpoint (`AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL`, or AWS's).
    pub async fn from_env(endpoint: Option<&str>) -> Result<SdkClient, ConfigError> {
        // rustls on ring, trusting the platform's roots and the certificates of AWS_CA_BUNDLE.
        let http = crate::aws_http::https_client().map_err(ConfigError)?;
        let mut loader =
            aws_config::defaults(BehaviorVersion::latest()).http_client(http).retry_config(RetryConfig::disabled());
        if let Some(endpoint) = endpoint {
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                return Err(ConfigError(format!("the endpoint '{endpoint}' must start with http:// or https://")));
            }
            loader = loader.endpoint_url(endpoint);
        }
        let config = loader.load().await;
        if config.region().is_none() {
            return Err(ConfigError("no AWS region: set AWS_REGION (Lambda sets it) or a profile's region".to_owned()));
        }
        if config.credentials_provider().is_none() {
            return Err(ConfigError("no AWS credentials provider".to_owned()));
        }
        Ok(SdkClient { client: aws_sdk_lambda::Client::new(&config), backoff: Backoff::default(), deadline: None })
    }

    /// The same client retrying with `backoff`.
    pub fn with_backoff(mut self, backoff: Backoff) -> SdkClient {
        self.backoff = backoff;
        self
    }

    /// The SDK's client, for other Lambda calls.
    pub fn sdk(&self) -> &aws_sdk_lambda::Client {
        &self.client
    }

    /// Runs `call` until it succeeds, fails for good, or the time for retries is spent.
    async fn retrying<T, E, F, Fut>(&self, what: &str, mut call: F) -> Result<T, ClientError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SdkError<E, aws_sdk_lambda::config::http::HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let started = std::time::Instant::now();
        let mut delay = self.backoff.initial;
        let mut tries = 0u32;
        loop {
            tries += 1;
            let message = match call().await {
                Ok(v) => return Ok(v),
                Err(e) => match classify(what, &e) {
                    Retry::Transient(message) => message,
                    Retry::Final(e) => return Err(e),
                },
            };
            // Full jitter over the doubled delay, as the AWS SDKs do.
            let wait = delay.mul_f64(0.5 + rand::random::<f64>() * 0.5);
            let time_left = match self.deadline {
                Some(deadline) => {
                    deadline.duration_since(SystemTime::now()).unwrap_or_default().saturating_sub(self.backoff.margin)
                }
                None => self.backoff.budget.saturating_sub(started.elapsed()),
            };
            if wait >= time_left {
                return Err(ClientError::Service(format!(
                    "{message} (gave up after {tries} tries: no time left for another)"
                )));
            }
            tracing::warn!(operation = what, tries, delay_ms = wait.as_millis() as u64, "retrying: {message}");
            tokio::time::sleep(wait).await;
            delay = (delay * 2).min(self.backoff.max);
        }
    }
}

/// What to do after a failed call.
enum Retry {
    Transient(String),
    Final(ClientError),
}

/// The error codes the service answers for a passing condition (spec §15.2).
const TRANSIENT_CODES: &[&str] =
    &["ThrottlingException", "TooManyRequestsException", "ServiceException", "ServiceUnavailableException"];

fn classify<E>(what: &str, e: &SdkError<E, aws_sdk_lambda::config::http::HttpResponse>) -> Retry
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match e {
        SdkError::ServiceError(ctx) => {
            let status = ctx.raw().status().as_u16();
            let code = ctx.err().code().unwrap_or_default().to_owned();
            let message = ctx.err().message().unwrap_or_default().to_owned();
            let text = format!("{what} failed with HTTP {status}: {code}: {message}");
            if message.starts_with("Invalid checkpoint token") {
                Retry::Final(ClientError::InvalidToken(message))
            } else if TRANSIENT_CODES.contains(&code.as_str()) || status == 429 || status >= 500 {
                Retry::Transient(text)
            } else if status == 413 || code.contains("TooLarge") || code.contains("EntityTooLarge") {
                Retry::Final(ClientError::TooLarge(text))
            } else {
                Retry::Final(ClientError::Terminal(text))
            }
        }
        // No answer, or one that could not be read: the service may answer the next try.
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            Retry::Transient(format!("{what} failed: {}", error_chain(e)))
        }
        // The request could not be made (no credentials, a bad parameter): no try will do better.
        _ => Retry::Final(ClientError::Terminal(format!("{what} failed: {}", error_chain(e)))),
    }
}

/// An error and its sources on one line (the SDK's top-level message alone says little).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl DurableClient for SdkClient {
    fn checkpoint<'a>(
        &'a self,
        arn: &'a str,
        token: &'a str,
        updates: Vec<Value>,
    ) -> BoxFuture<'a, Result<Checkpointed, ClientError>> {
        Box::pin(async move {
            let updates = updates.iter().map(update_from_wire).collect::<Result<Vec<_>, _>>()?;
            let out = self
                .retrying("CheckpointDurableExecution", || {
                    self.client
                        .checkpoint_durable_execution()
                        .durable_execution_arn(arn)
                        .checkpoint_token(token)
                        .set_updates(Some(updates.clone()))
                        .send()
                })
                .await?;
            let token = out.checkpoint_token().filter(|t| !t.is_empty()).ok_or_else(|| {
                ClientError::Service("the CheckpointDurableExecution answer has no CheckpointToken".into())
            })?;
            let operations = out.new_execution_state().map(|s| s.operations().iter().map(operation_to_wire).collect());
            Ok(Checkpointed { token: token.to_owned(), operations: operations.unwrap_or_default() })
        })
    }

    fn state<'a>(
        &'a self,
        arn: &'a str,
        token: &'a str,
        marker: &'a str,
    ) -> BoxFuture<'a, Result<StatePage, ClientError>> {
        Box::pin(async move {
            let out = self
                .retrying("GetDurableExecutionState", || {
                    self.client
                        .get_durable_execution_state()
                        .durable_execution_arn(arn)
                        .checkpoint_token(token)
                        .set_marker(Some(marker.to_owned()).filter(|m| !m.is_empty()))
                        .max_items(1000)
                        .send()
                })
                .await?;
            Ok(StatePage {
                operations: out.operations().iter().map(operation_to_wire).collect(),
                next_marker: out.next_marker().filter(|m| !m.is_empty()).map(str::to_owned),
            })
        })
    }

    fn with_deadline(&self, deadline: SystemTime) -> Option<Arc<dyn DurableClient>> {
        Some(Arc::new(SdkClient { deadline: Some(deadline), ..self.clone() }))
    }
}

/// The callback completion API, which the external system holding a callback id calls (not the
/// function itself): `wfc lambda-callback` uses it.
impl SdkClient {
    /// `SendDurableExecutionCallbackSuccess`: the CALLBACK succeeds with `result`.
    pub async fn callback_success(&self, callback_id: &str, result: &Value) -> Result<(), ClientError> {
        let blob = Blob::new(result.to_string().into_bytes());
        self.retrying("SendDurableExecutionCallbackSuccess", || {
            self.client.send_durable_execution_callback_success().callback_id(callback_id).result(blob.clone()).send()
        })
        .await
        .map(drop)
    }

    /// `SendDurableExecutionCallbackFailure`: the CALLBACK fails with `error` and `cause`
    /// (`ErrorType`, `ErrorMessage`), which Retry and Catch see.
    pub async fn callback_failure(&self, callback_id: &str, error: &str, cause: &str) -> Result<(), ClientError> {
        let object = ErrorObject::builder().error_type(error).error_message(cause).build();
        self.retrying("SendDurableExecutionCallbackFailure", || {
            self.client.send_durable_execution_callback_failure().callback_id(callback_id).error(object.clone()).send()
        })
        .await
        .map(drop)
    }

    /// `SendDurableExecutionCallbackHeartbeat`: restarts the callback's heartbeat countdown.
    pub async fn callback_heartbeat(&self, callback_id: &str) -> Result<(), ClientError> {
        self.retrying("SendDurableExecutionCallbackHeartbeat", || {
            self.client.send_durable_execution_callback_heartbeat().callback_id(callback_id).send()
        })
        .await
        .map(drop)
    }
}

/// An `OperationUpdate` as [`super`] writes it (the REST API's JSON shape) as
/// the SDK's type. A field of the wrong type is an error, not dropped.
fn update_from_wire(u: &Value) -> Result<OperationUpdate, ClientError> {
    let bad = |what: &str| ClientError::Service(format!("internal: an operation update has no valid {what}: {u}"));
    let text = |k: &str| u.get(k).and_then(Value::as_str).map(str::to_owned);
    let int = |v: Option<&Value>, what: &str| -> Result<Option<i32>, ClientError> {
        v.map(|n| n.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| bad(what))).transpose()
    };
    let mut b = OperationUpdate::builder()
        .id(text("Id").ok_or_else(|| bad("Id"))?)
        .r#type(OperationType::from(text("Type").ok_or_else(|| bad("Type"))?.as_str()))
        .action(OperationAction::from(text("Action").ok_or_else(|| bad("Action"))?.as_str()))
        .set_name(text("Name"))
        .set_parent_id(text("ParentId"))
        .set_sub_type(text("SubType").filter(|s| !s.is_empty()))
        .set_payload(text("Payload"));
    if let Some(e) = u.get("Error") {
        let stack = match e.get("StackTrace") {
            None => None,
            Some(Value::Array(frames)) => Some(
                frames
                    .iter()
                    .map(|f| f.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("Error.StackTrace"))?,
            ),
            Some(_) => return Err(bad("Error.StackTrace")),
        };
        let field = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        b = b.error(
            ErrorObject::builder()
                .set_error_type(field("ErrorType"))
                .set_error_message(field("ErrorMessage"))
                .set_error_data(field("ErrorData"))
                .set_stack_trace(stack)
                .build(),
        );
    }
    if let Some(o) = u.get("ContextOptions") {
        b = b.context_options(
            ContextOptions::builder().set_replay_children(o.get("ReplayChildren").and_then(Value::as_bool)).build(),
        );
    }
    if let Some(o) = u.get("StepOptions") {
        let delay = int(o.get("NextAttemptDelaySeconds"), "StepOptions.NextAttemptDelaySeconds")?;
        b = b.step_options(StepOptions::builder().set_next_attempt_delay_seconds(delay).build());
    }
    if let Some(o) = u.get("WaitOptions") {
        let secs = int(o.get("WaitSeconds"), "WaitOptions.WaitSeconds")?;
        b = b.wait_options(WaitOptions::builder().set_wait_seconds(secs).build());
    }
    if let Some(o) = u.get("CallbackOptions") {
        let timeout = int(o.get("TimeoutSeconds"), "CallbackOptions.TimeoutSeconds")?;
        let heartbeat = int(o.get("HeartbeatTimeoutSeconds"), "CallbackOptions.HeartbeatTimeoutSeconds")?;
        b = b.callback_options(
            CallbackOptions::builder().set_timeout_seconds(timeout).set_heartbeat_timeout_seconds(heartbeat).build(),
        );
    }
    if let Some(o) = u.get("ChainedInvokeOptions") {
        let function = o.get("FunctionName").and_then(Value::as_str).ok_or_else(|| bad("FunctionName"))?;
        let options = ChainedInvokeOptions::builder()
            .function_name(function)
            .set_tenant_id(o.get("TenantId").and_then(Value::as_str).map(str::to_owned))
            .build()
            .map_err(|e| bad(&e.to_string()))?;
        b = b.chained_invoke_options(options);
    }
    b.build().map_err(|e| bad(&e.to_string()))
}

fn error_to_wire(e: &ErrorObject) -> Value {
    let mut w = Map::new();
    for (k, v) in [("ErrorType", e.error_type()), ("ErrorMessage", e.error_message()), ("ErrorData", e.error_data())] {
        if let Some(v) = v {
            w.insert(k.into(), json!(v));
        }
    }
    if !e.stack_trace().is_empty() {
        w.insert("StackTrace".into(), json!(e.stack_trace()));
    }
    Value::Object(w)
}

/// The SDK's `Operation` in the REST API's JSON shape, which [`super`] reads
/// (timestamps as epoch seconds).
fn operation_to_wire(op: &Operation) -> Value {
    let mut w = json!({
        "Id": op.id(),
        "Type": op.r#type().as_str(),
        "Status": op.status().as_str(),
        "StartTimestamp": op.start_timestamp().as_secs_f64(),
    });
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            w[k] = v;
        }
    };
    put("Name", op.name().map(|n| json!(n)));
    put("ParentId", op.parent_id().map(|n| json!(n)));
    put("SubType", op.sub_type().map(|n| json!(n)));
    put("EndTimestamp", op.end_timestamp().map(|t| json!(t.as_secs_f64())));
    let with_error = |mut d: Value, e: Option<&ErrorObject>| {
        if let Some(e) = e {
            d["Error"] = error_to_wire(e);
        }
        d
    };
    put(
        "ExecutionDetails",
        op.execution_details().map(|d| json!({ "InputPayload": d.input_payload().unwrap_or_default() })),
    );
    put(
        "StepDetails",
        op.step_details().map(|d| {
            let mut v = json!({ "Attempt": d.attempt() });
            if let Some(r) = d.result() {
                v["Result"] = json!(r);
            }
            if let Some(t) = d.next_attempt_timestamp() {
                v["NextAttemptTimestamp"] = json!(t.as_secs_f64());
            }
            with_error(v, d.error())
        }),
    );
    put(
        "WaitDetails",
        op.wait_details().map(|d| match d.scheduled_end_timestamp() {
            Some(t) => json!({ "ScheduledEndTimestamp": t.as_secs_f64() }),
            None => json!({}),
        }),
    );
    put(
        "CallbackDetails",
        op.callback_details().map(|d| {
            let mut v = json!({});
            if let Some(id) = d.callback_id() {
                v["CallbackId"] = json!(id);
            }
            if let Some(r) = d.result() {
                v["Result"] = json!(r);
            }
            with_error(v, d.error())
        }),
    );
    put(
        "ChainedInvokeDetails",
        op.chained_invoke_details().map(|d| {
            let v = d.result().map_or_else(|| json!({}), |r| json!({ "Result": r }));
            with_error(v, d.error())
        }),
    );
    put(
        "ContextDetails",
        op.context_details().map(|d| {
            let v = d.result().map_or_else(|| json!({}), |r| json!({ "Result": r }));
            with_error(v, d.error())
        }),
    );
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_keep_every_field_the_adapter_writes() {
        let wire = json!({
            "Id": "a", "Name": "P#1.0/0", "ParentId": "p", "Type": "STEP", "SubType": "Task", "Action": "RETRY",
            "Error": { "ErrorType": "E", "ErrorMessage": "m", "ErrorData": "{}", "StackTrace": ["P#1.0", "P#1.0/0"] },
            "StepOptions": { "NextAttemptDelaySeconds": 3 },
        });
        let u = update_from_wire(&wire).unwrap();
        assert_eq!(u.action(), &OperationAction::Retry);
        assert_eq!(u.step_options().and_then(StepOptions::next_attempt_delay_seconds), Some(3));
        let e = u.error().unwrap();
        assert_eq!((e.error_type(), e.error_data()), (Some("E"), Some("{}")));
        assert_eq!(e.stack_trace(), ["P#1.0", "P#1.0/0"]);
        let chained = json!({ "Id": "c", "Type": "CHAINED_INVOKE", "Action": "START",
            "ChainedInvokeOptions": { "FunctionName": "f", "TenantId": "t-1" } });
        let u = update_from_wire(&chained).unwrap();
        assert_eq!(u.chained_invoke_options().and_then(ChainedInvokeOptions::tenant_id), Some("t-1"));
    }

    #[test]
    fn malformed_updates_are_errors_not_dropped_fields() {
        for bad in [
            json!({ "Type": "STEP", "Action": "START" }),
            json!({ "Id": "a", "Type": "WAIT", "Action": "START", "WaitOptions": { "WaitSeconds": "5" } }),
            json!({ "Id": "a", "Type": "STEP", "Action": "FAIL", "Error": { "StackTrace": [1] } }),
            json!({ "Id": "a", "Type": "CHAINED_INVOKE", "Action": "START", "ChainedInvokeOptions": {} }),
        ] {
            assert!(update_from_wire(&bad).is_err(), "{bad}");
        }
    }
}
