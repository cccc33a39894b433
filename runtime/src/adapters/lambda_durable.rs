//! A compiled workflow as an AWS Lambda durable function: the invocation protocol of
//! shared/specs/lambda-durable-functions-sdk.md, over the same journal replay as `wfc run --store`.
//!
//! One invocation: read `{DurableExecutionArn, CheckpointToken, InitialExecutionState}` (paging
//! through `GetDurableExecutionState` while there is a `NextMarker`), replay the workflow from its
//! start over the recorded operations, run every Task attempt that has no outcome yet as a `STEP`
//! (checkpointed through `CheckpointDurableExecution`, each call rotating the token), start each
//! new timer as a `WAIT` and stop there. The answer is `SUCCEEDED` with the result, `FAILED` with
//! the error, or `PENDING` when every line of control waits for a timer the service will fire.
//!
//! Operation ids are the journal's positional ids (`Charge#1.0`, `Both#1.0/1/R#1.0`), stable
//! across replays; on the wire the `Id` is their SHA-256 (64 hex digits, what the service
//! accepts) and the `Name` is the readable id, which is how a replay finds them again.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use sha2::Digest;

use crate::durable::suspend::{SuspendPolicy, Suspender, run_until_suspended};
pub use crate::durable::{ChainedConfigError, ChainedFunction, ChainedInvokes, MapRunChildren};
use crate::durable::{
    CheckpointToken, Claim, Completion, ExecutionRecord, Journal, NewExecution, OpStatus, OpType, Opened, Operation,
    OperationUpdate, Store, StoreError,
};
use crate::{ExecutionResult, RunOptions, Status};

/// The largest `Result` an invocation returns inline (Lambda's 6 MB response, less 50 bytes of
/// envelope, as the AWS SDKs use); a larger one is checkpointed on the `EXECUTION` operation.
pub const MAX_INLINE_RESULT: usize = 6 * 1024 * 1024 - 50;

/// The REST API version prefix of the durable execution endpoints.
const API: &str = "/2025-12-01/durable-executions";

/// Why a call to the durable execution service failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// `InvalidParameterValueException` "Invalid checkpoint token...": the token was used, or
    /// another invocation moved on. Propagated (the invocation errors and the service retries).
    #[error("invalid checkpoint token: {0}")]
    InvalidToken(String),
    /// A payload or batch over the service's size limits: the execution fails with this message.
    #[error("request too large: {0}")]
    TooLarge(String),
    /// Any other refusal or transport failure.
    #[error("durable execution service error: {0}")]
    Service(String),
}

/// What `CheckpointDurableExecution` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpointed {
    /// The token for the next checkpoint.
    pub token: String,
    /// The operations that changed (`NewExecutionState.Operations`).
    pub operations: Vec<Value>,
}

/// One page of `GetDurableExecutionState`.
#[derive(Debug, Clone, PartialEq)]
pub struct StatePage {
    /// Operations, in the service's shape.
    pub operations: Vec<Value>,
    /// The marker of the next page, if any.
    pub next_marker: Option<String>,
}

/// The two calls a durable function makes. [`HttpClient`] speaks the REST API; tests can
/// substitute their own.
pub trait DurableClient: Send + Sync + fmt::Debug {
    /// `CheckpointDurableExecution` with `updates` (OperationUpdate objects).
    fn checkpoint<'a>(
        &'a self,
        arn: &'a str,
        token: &'a str,
        updates: Vec<Value>,
    ) -> BoxFuture<'a, Result<Checkpointed, ClientError>>;

    /// `GetDurableExecutionState`, one page from `marker`.
    fn state<'a>(
        &'a self,
        arn: &'a str,
        token: &'a str,
        marker: &'a str,
    ) -> BoxFuture<'a, Result<StatePage, ClientError>>;
}

/// The REST API over plain HTTP/1.1 (a local endpoint such as `dex-local-runner`, or a signing
/// proxy in front of the real service: this client does not sign requests with SigV4).
#[derive(Debug, Clone)]
pub struct HttpClient {
    host: String,
    port: u16,
}

impl HttpClient {
    /// A client for `http://HOST:PORT` (no path, no TLS).
    pub fn new(endpoint: &str) -> Result<HttpClient, ClientError> {
        let rest = endpoint
            .strip_prefix("http://")
            .ok_or_else(|| ClientError::Service(format!("endpoint '{endpoint}' must start with http://")))?;
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| ClientError::Service(format!("bad port in '{endpoint}'")))?),
            None => (rest, 80),
        };
        Ok(HttpClient { host: host.to_owned(), port })
    }

    async fn request(&self, method: &'static str, path: String, body: Option<String>) -> Result<Value, ClientError> {
        let (host, port) = (self.host.clone(), self.port);
        let exchange = move || -> Result<(u16, String), String> {
            use std::io::{Read, Write};
            let mut stream = std::net::TcpStream::connect((host.as_str(), port)).map_err(|e| e.to_string())?;
            stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).map_err(|e| e.to_string())?;
            let body = body.unwrap_or_default();
            let head = format!(
                "{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.write_all(body.as_bytes()))
                .map_err(|e| e.to_string())?;
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&raw).into_owned();
            let (head, body) = text.split_once("\r\n\r\n").ok_or("malformed HTTP response")?;
            let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("malformed status line")?;
            let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
                dechunk(body)
            } else {
                body.to_owned()
            };
            Ok((status, body))
        };
        let (status, body) = tokio::task::spawn_blocking(exchange)
            .await
            .map_err(|e| ClientError::Service(e.to_string()))?
            .map_err(ClientError::Service)?;
        let value: Value = if body.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&body).unwrap_or(json!({ "message": body }))
        };
        if (200..300).contains(&status) {
            return Ok(value);
        }
        let message = ["message", "Message"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        let kind =
            ["Type", "__type", "code"].iter().find_map(|k| value.get(*k).and_then(Value::as_str)).unwrap_or_default();
        if message.starts_with("Invalid checkpoint token") {
            Err(ClientError::InvalidToken(message))
        } else if status == 413 || kind.contains("TooLarge") || message.to_ascii_lowercase().contains("size") {
            Err(ClientError::TooLarge(format!("{status} {kind} {message}")))
        } else {
            Err(ClientError::Service(format!("{status} {kind} {message}")))
        }
    }
}

/// The callback completion API, which the external system that holds a callback id calls (not
/// the function itself): `wfc lambda-callback` uses it.
impl HttpClient {
    fn callback_path(callback_id: &str, action: &str) -> String {
        format!("/2025-12-01/durable-execution-callbacks/{}/{action}", encode(callback_id))
    }

    /// `SendDurableExecutionCallbackSuccess`: the CALLBACK succeeds with `result`.
    pub async fn callback_success(&self, callback_id: &str, result: &Value) -> Result<(), ClientError> {
        self.request("POST", HttpClient::callback_path(callback_id, "succeed"), Some(result.to_string()))
            .await
            .map(drop)
    }

    /// `SendDurableExecutionCallbackFailure`: the CALLBACK fails with `error` and `cause`
    /// (`ErrorType`, `ErrorMessage`), which Retry and Catch see.
    pub async fn callback_failure(&self, callback_id: &str, error: &str, cause: &str) -> Result<(), ClientError> {
        let body = json!({ "ErrorType": error, "ErrorMessage": cause }).to_string();
        self.request("POST", HttpClient::callback_path(callback_id, "fail"), Some(body)).await.map(drop)
    }

    /// `SendDurableExecutionCallbackHeartbeat`: restarts the callback's heartbeat countdown.
    pub async fn callback_heartbeat(&self, callback_id: &str) -> Result<(), ClientError> {
        self.request("POST", HttpClient::callback_path(callback_id, "heartbeat"), None).await.map(drop)
    }
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encodes what is not safe in a URL path segment or query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl DurableClient for HttpClient {
    fn checkpoint<'a>(
        &'a self,
        arn: &'a str,
        token: &'a str,
        updates: Vec<Value>,
    ) -> BoxFuture<'a, Result<Checkpointed, ClientError>> {
        Box::pin(async move {
            let body = json!({ "CheckpointToken": token, "Updates": updates }).to_string();
            let v = self.request("POST", format!("{API}/{}/checkpoint", encode(arn)), Some(body)).await?;
            let token = v
                .get("CheckpointToken")
                .and_then(Value::as_str)
                .ok_or_else(|| ClientError::Service("the checkpoint response has no CheckpointToken".into()))?
                .to_owned();
            let operations =
                v.pointer("/NewExecutionState/Operations").and_then(Value::as_array).cloned().unwrap_or_default();
            Ok(Checkpointed { token, operations })
        })
    }

    fn state<'a>(
        &'a self,
        arn: &'a str,
        token: &'a str,
        marker: &'a str,
    ) -> BoxFuture<'a, Result<StatePage, ClientError>> {
        Box::pin(async move {
            let path = format!(
                "{API}/{}/state?CheckpointToken={}&Marker={}&MaxItems=1000",
                encode(arn),
                encode(token),
                encode(marker)
            );
            let v = self.request("GET", path, None).await?;
            Ok(StatePage {
                operations: v.get("Operations").and_then(Value::as_array).cloned().unwrap_or_default(),
                next_marker: v.get("NextMarker").and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_owned),
            })
        })
    }
}

/// The wire `Id` of journal operation `id`: SHA-256, 64 hex digits.
pub fn wire_id(id: &str) -> String {
    sha2::Sha256::digest(id.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The wire `Name` of journal operation `id` (printable ASCII, at most 256): the id with `%`
/// and anything else percent-encoded, so [`journal_id`] recovers it.
pub fn wire_name(id: &str) -> String {
    id.bytes()
        .map(|b| if (0x20..0x7f).contains(&b) && b != b'%' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The journal id a wire `Name` stands for.
pub fn journal_id(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = name.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn millis(v: Option<&Value>) -> Option<i64> {
    match v? {
        // Epoch seconds (REST bodies) or milliseconds (the Python local runner's events).
        Value::Number(n) => {
            let f = n.as_f64()?;
            Some(if f > 1e11 { f as i64 } else { (f * 1000.0) as i64 })
        }
        Value::String(s) => s.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond()),
        _ => None,
    }
}

/// Reads a service `Operation` into the journal's model (`None` for the EXECUTION operation,
/// and for operations wfc did not write).
fn from_wire(op: &Value) -> Option<Operation> {
    let op_type = OpType::parse(op.get("Type")?.as_str()?)?;
    let id = journal_id(op.get("Name")?.as_str()?)?;
    if op.get("Id").and_then(Value::as_str) != Some(wire_id(&id).as_str()) {
        return None;
    }
    let status_text = op.get("Status").and_then(Value::as_str).unwrap_or("STARTED");
    let details = match op_type {
        OpType::Step => op.get("StepDetails"),
        OpType::Wait => op.get("WaitDetails"),
        OpType::Callback => op.get("CallbackDetails"),
        OpType::ChainedInvoke => op.get("ChainedInvokeDetails"),
        OpType::Context => op.get("ContextDetails"),
    }
    .cloned()
    .unwrap_or(Value::Null);
    let error = details.get("Error");
    let mut error_type = error.and_then(|e| e.get("ErrorType")).and_then(Value::as_str).map(str::to_owned);
    let mut cause = error.and_then(|e| e.get("ErrorMessage")).and_then(Value::as_str).map(str::to_owned);
    let status = match status_text {
        "SUCCEEDED" => OpStatus::Succeeded,
        "FAILED" if error_type.as_deref() == Some(wfc_ir::errors::TIMEOUT) => OpStatus::TimedOut,
        "FAILED" => OpStatus::Failed,
        "TIMED_OUT" => OpStatus::TimedOut,
        "CANCELLED" | "STOPPED" => OpStatus::Cancelled,
        _ => OpStatus::Started,
    };
    if op_type == OpType::Callback {
        match status {
            // The service timed the callback out (`Callback.Timeout` / `Callback.Heartbeat` in
            // dex-local-runner): `States.Timeout` either way, as AWS records an expired
            // TimeoutSeconds and a missed heartbeat alike; Retry and Catch see it.
            OpStatus::TimedOut => {
                let heartbeat = error_type.as_deref().is_some_and(|t| t.contains("Heartbeat"));
                let text = if heartbeat {
                    "the task did not send a heartbeat within HeartbeatSeconds"
                } else {
                    "the task did not finish within TimeoutSeconds"
                };
                error_type = Some(wfc_ir::errors::TIMEOUT.to_owned());
                cause = Some(cause.map_or_else(|| text.to_owned(), |c| format!("{text}: {c}")));
            }
            // SendDurableExecutionCallbackFailure with no error type.
            OpStatus::Failed if error_type.as_deref().is_none_or(str::is_empty) => {
                error_type = Some(wfc_ir::errors::TASK_FAILED.to_owned());
            }
            _ => {}
        }
    }
    let mut status = status;
    if op_type == OpType::ChainedInvoke {
        // The target's end, as the subflow's error (which onErrors and Catch see): its own
        // error for FAILED (a target that could not be invoked: the service's error), the
        // States Language timeout for TIMED_OUT, and a stopped target as a failure.
        let what = match status_text {
            "TIMED_OUT" => Some("the chained invoke timed out"),
            "STOPPED" => Some("the chained invoke's target execution was stopped"),
            _ => None,
        };
        match status_text {
            "TIMED_OUT" => error_type = Some(wfc_ir::errors::TIMEOUT.to_owned()),
            "STOPPED" => status = OpStatus::Failed,
            _ => {}
        }
        if matches!(status, OpStatus::Failed) && error_type.as_deref().is_none_or(str::is_empty) {
            error_type = Some(wfc_ir::errors::TASK_FAILED.to_owned());
        }
        if let Some(what) = what {
            cause = Some(cause.filter(|c| !c.is_empty()).map_or_else(|| what.to_owned(), |c| format!("{what}: {c}")));
        }
    }
    let result = details
        .get("Result")
        .and_then(Value::as_str)
        .map(|s| serde_json::from_str(s).unwrap_or(Value::String(s.to_owned())));
    Some(Operation {
        id,
        op_type,
        subtype: op.get("SubType").and_then(Value::as_str).unwrap_or_default().to_owned(),
        // The wire `Name` encodes the journal id, not the state name (see Journal::recorded_as).
        name: String::new(),
        status,
        starts: 1,
        result,
        error: error_type,
        cause,
        due_at_ms: millis(details.get("ScheduledEndTimestamp")),
        callback_token: details.get("CallbackId").and_then(Value::as_str).map(str::to_owned),
        heartbeats: 0,
    })
}

/// The journal's update as service `OperationUpdate`s (none for what the service owns: a WAIT
/// is finished by the service, a CALLBACK by SendDurableExecutionCallback* or its timeout; the
/// function only starts them).
fn to_wire(u: &OperationUpdate, now_ms: i64) -> Option<Value> {
    let mut w =
        json!({ "Id": wire_id(&u.id), "Name": wire_name(&u.id), "Type": u.op_type.as_str(), "SubType": u.subtype });
    if let Some(parent) = &u.parent_id {
        w["ParentId"] = json!(wire_id(parent));
    }
    match (u.op_type, u.status) {
        (OpType::Callback, OpStatus::Started) => {
            w["Action"] = json!("START");
            let mut options = serde_json::Map::new();
            if let Some(due) = u.due_at_ms {
                // Whole seconds, rounded up (0 means no timeout to the service).
                options.insert("TimeoutSeconds".into(), json!((((due - now_ms).max(0) + 999) / 1000).max(1)));
            }
            if let Some(h) = u.heartbeat_seconds.filter(|h| *h > 0) {
                options.insert("HeartbeatTimeoutSeconds".into(), json!(h));
            }
            if !options.is_empty() {
                w["CallbackOptions"] = Value::Object(options);
            }
        }
        (OpType::Callback, _) => return None,
        (OpType::Context, OpStatus::Started) => {
            w["Action"] = json!("START");
            // wfc re-runs a branch on replay: its children must stay in the execution state.
            w["ContextOptions"] = json!({ "ReplayChildren": true });
        }
        (OpType::Wait, OpStatus::Started) => {
            let due = u.due_at_ms.unwrap_or(now_ms);
            // Whole seconds, rounded up so the timer never fires early; at least 1.
            let secs = ((due - now_ms).max(0) + 999) / 1000;
            w["Action"] = json!("START");
            w["WaitOptions"] = json!({ "WaitSeconds": secs.max(1) });
        }
        (OpType::Wait, _) => return None,
        (OpType::ChainedInvoke, OpStatus::Started) => {
            // A mapped subflow (see `durable::ChainedInvokes`): the payload is the child's input.
            w["Action"] = json!("START");
            w["ChainedInvokeOptions"] = json!({ "FunctionName": u.function_name.clone().unwrap_or_default() });
            w["Payload"] = json!(u.result.clone().unwrap_or(Value::Null).to_string());
        }
        // The target's end is the service's to record.
        (OpType::ChainedInvoke, _) => return None,
        (_, OpStatus::Started) => w["Action"] = json!("START"),
        (_, OpStatus::Succeeded) => {
            w["Action"] = json!("SUCCEED");
            w["Payload"] = json!(u.result.clone().unwrap_or(Value::Null).to_string());
        }
        (_, OpStatus::Failed | OpStatus::TimedOut) => {
            w["Action"] = json!("FAIL");
            w["Error"] = json!({ "ErrorType": u.error.clone().unwrap_or_default(), "ErrorMessage": u.cause.clone().unwrap_or_default() });
        }
        (_, OpStatus::Cancelled) => w["Action"] = json!("CANCEL"),
    }
    Some(w)
}

/// The journal's store for one invocation: the operations the service sent, and checkpoints
/// sent back to it.
#[derive(Debug)]
struct LambdaStore {
    client: Arc<dyn DurableClient>,
    arn: String,
    start_time: String,
    input: Value,
    operations: Vec<Operation>,
    /// Operations as the checkpoint responses returned them during this invocation (a
    /// CALLBACK's `CallbackId` is issued when it starts), by journal id.
    changed: Mutex<std::collections::HashMap<String, Operation>>,
    token: Mutex<String>,
    error: Mutex<Option<ClientError>>,
}

impl LambdaStore {
    fn fail(&self, e: ClientError) -> StoreError {
        let out = match &e {
            ClientError::InvalidToken(m) => StoreError::StaleToken(m.clone()),
            other => StoreError::Backend(other.to_string()),
        };
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        out
    }
}

impl Store for LambdaStore {
    fn open_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<Claim, StoreError>> {
        let record = ExecutionRecord::running(new.name, new.workflow, self.input.clone(), self.start_time.clone());
        let claim = Claim {
            record,
            operations: self.operations.clone(),
            token: CheckpointToken { epoch: 1, seq: 0 },
            existed: true,
        };
        Box::pin(async move { Ok(claim) })
    }

    fn load_journal<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, Result<Vec<Operation>, StoreError>> {
        Box::pin(async move { Ok(self.operations.clone()) })
    }

    fn checkpoint<'a>(
        &'a self,
        _name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        Box::pin(async move {
            let now_ms = jiff::Timestamp::now().as_millisecond();
            // A step the service already has as STARTED (its invocation was interrupted) runs
            // again without a second START, which the service refuses; SUCCEED/FAIL follow it.
            let already_started = |u: &OperationUpdate| {
                u.op_type == OpType::Step
                    && u.status == OpStatus::Started
                    && self.operations.iter().any(|op| op.id == u.id && op.status == OpStatus::Started)
            };
            let wire: Vec<Value> =
                updates.iter().filter(|u| !already_started(u)).filter_map(|u| to_wire(u, now_ms)).collect();
            if wire.is_empty() {
                return Ok(token);
            }
            let current = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let done = self.client.checkpoint(&self.arn, &current, wire).await.map_err(|e| self.fail(e))?;
            *self.token.lock().unwrap_or_else(|p| p.into_inner()) = done.token;
            let mut changed = self.changed.lock().unwrap_or_else(|p| p.into_inner());
            for op in done.operations.iter().filter_map(from_wire) {
                changed.insert(op.id.clone(), op);
            }
            Ok(CheckpointToken { epoch: token.epoch, seq: token.seq + 1 })
        })
    }

    fn finish<'a>(
        &'a self,
        _name: &'a str,
        token: CheckpointToken,
        _c: Completion,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        // The invocation's answer carries the end (see `invoke_with`).
        Box::pin(async move { Ok(token) })
    }

    fn load_operation<'a>(
        &'a self,
        _name: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Operation>, StoreError>> {
        Box::pin(async move {
            if let Some(op) = self.changed.lock().unwrap_or_else(|p| p.into_inner()).get(id) {
                return Ok(Some(op.clone()));
            }
            let known = self.operations.iter().find(|op| op.id == id).cloned();
            if known.as_ref().is_some_and(|op| op.op_type != OpType::Callback || op.callback_token.is_some()) {
                return Ok(known);
            }
            // A CALLBACK started in this invocation whose id the checkpoint response did not
            // carry (a response holds one page of changes): read the execution state.
            let token = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let mut marker = String::new();
            loop {
                let page = self.client.state(&self.arn, &token, &marker).await.map_err(|e| self.fail(e))?;
                if let Some(op) = page.operations.iter().filter_map(from_wire).find(|op| op.id == id) {
                    return Ok(Some(op));
                }
                match page.next_marker {
                    Some(m) => marker = m,
                    None => return Ok(known),
                }
            }
        })
    }

    super::replay_store_keeps_no_records!();
}

/// Why an invocation produced no answer: the service retries the invocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    /// The event is not a durable invocation.
    #[error("invalid durable invocation event: {0}")]
    BadEvent(String),
    /// The checkpoint token was refused (§3.4: propagated so the invocation is retried).
    #[error("{0}")]
    InvalidToken(ClientError),
    /// The service could not be reached or refused a call.
    #[error("{0}")]
    Service(ClientError),
}

/// Handles one durable invocation with any engine: `run` starts the workflow on an input with
/// the given options (`interp::run` with the task handlers, or a generated module's
/// `run_with`). Returns the invocation output (`{"Status": ...}`). Every Serverless Workflow
/// subflow runs in this invocation (as a CONTEXT); see [`invoke_with_chained`].
pub async fn invoke_with<R, Fut>(
    event: &Value,
    client: Arc<dyn DurableClient>,
    workflow_name: &str,
    run: R,
) -> Result<Value, InvocationError>
where
    R: FnOnce(Value, RunOptions) -> Fut,
    Fut: Future<Output = ExecutionResult>,
{
    invoke_with_chained(event, client, workflow_name, &ChainedInvokes::none(), run).await
}

/// [`invoke_with`] where the Serverless Workflow subflows that `chained` maps to a function
/// are CHAINED_INVOKE operations of that function: started with the child's input as payload,
/// `PENDING` while the service has them STARTED, and replayed with the target's result or
/// error. Check the mappings against the definition once with [`ChainedInvokes::check`].
///
/// A Map Run child's invocation ([`MapRunChildren::Chained`]) runs on the interpreter only
/// ([`invoke_chained`]): here its envelope fails the execution with `Wfc.MapRunChildUnsupported`,
/// and so does a `chained` that asks for chained Map Run children (before anything is started,
/// rather than starting children that would all fail).
pub async fn invoke_with_chained<R, Fut>(
    event: &Value,
    client: Arc<dyn DurableClient>,
    workflow_name: &str,
    chained: &ChainedInvokes,
    run: R,
) -> Result<Value, InvocationError>
where
    R: FnOnce(Value, RunOptions) -> Fut,
    Fut: Future<Output = ExecutionResult>,
{
    if matches!(chained.map_runs(), MapRunChildren::Chained(_)) {
        return Ok(failed(
            "Wfc.MapRunChildUnsupported",
            "Map Run children chained to a function run only on the interpreter's entry point (lambda_durable::invoke_chained, wfc lambda-serve); generated code runs them in its own invocation: leave MapRunChildren unchained",
        ));
    }
    invoke_inner(event, client, workflow_name, chained, false, run).await
}

/// The function's own name for Map Run children that chain to it: from the durable execution
/// ARN (`arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]/durable-execution/...` or
/// `...:durable-execution:NAME:...`), else `AWS_LAMBDA_FUNCTION_NAME`.
fn own_function_name(arn: &str) -> Option<String> {
    let head = arn.split('/').next().unwrap_or(arn);
    let parts: Vec<&str> = head.split(':').collect();
    let after = |key: &str| parts.iter().position(|p| *p == key).and_then(|i| parts.get(i + 1));
    let from_arn = match after("function") {
        Some(name) => {
            let qualifier = parts.iter().skip_while(|p| **p != *name).nth(1).filter(|q| **q != "$LATEST");
            Some(qualifier.map_or_else(|| (*name).to_owned(), |q| format!("{name}:{q}")))
        }
        None => after("durable-execution").map(|n| (*n).to_owned()),
    };
    from_arn
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::var("AWS_LAMBDA_FUNCTION_NAME").ok().filter(|n| !n.is_empty()))
}

async fn invoke_inner<R, Fut>(
    event: &Value,
    client: Arc<dyn DurableClient>,
    workflow_name: &str,
    chained: &ChainedInvokes,
    map_run_children: bool,
    run: R,
) -> Result<Value, InvocationError>
where
    R: FnOnce(Value, RunOptions) -> Fut,
    Fut: Future<Output = ExecutionResult>,
{
    let text = |k: &str| event.get(k).and_then(Value::as_str).map(str::to_owned);
    let arn = text("DurableExecutionArn")
        .ok_or_else(|| InvocationError::BadEvent("`DurableExecutionArn` is missing".into()))?;
    let token =
        text("CheckpointToken").ok_or_else(|| InvocationError::BadEvent("`CheckpointToken` is missing".into()))?;
    let state = event.get("InitialExecutionState").cloned().unwrap_or(json!({}));
    let mut wire: Vec<Value> = state.get("Operations").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut marker = state.get("NextMarker").and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_owned);
    while let Some(m) = marker {
        let page = client.state(&arn, &token, &m).await.map_err(|e| match e {
            ClientError::InvalidToken(_) => InvocationError::InvalidToken(e),
            other => InvocationError::Service(other),
        })?;
        wire.extend(page.operations);
        marker = page.next_marker;
    }
    let execution = wire
        .iter()
        .find(|op| op.get("Type").and_then(Value::as_str) == Some("EXECUTION"))
        .ok_or_else(|| InvocationError::BadEvent("no EXECUTION operation in the execution state".into()))?;
    let input = match execution.pointer("/ExecutionDetails/InputPayload").and_then(Value::as_str) {
        None | Some("") => json!({}),
        Some(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned())),
    };
    if !map_run_children && crate::distributed::chained_child(&input).is_some() {
        return Ok(failed(
            "Wfc.MapRunChildUnsupported",
            "this execution is a chained Map Run child, which only the interpreter's entry point (lambda_durable::invoke_chained, wfc lambda-serve) runs",
        ));
    }
    let chained = match chained.map_runs() {
        MapRunChildren::Chained(None) => match own_function_name(&arn) {
            Some(own) => chained.for_function(&own),
            None => {
                return Ok(failed(
                    "Wfc.MapRunFunctionUnknown",
                    "Map Run children are to chain to this function, but its name is not in the durable execution ARN and AWS_LAMBDA_FUNCTION_NAME is not set: name it in the configuration",
                ));
            }
        },
        _ => chained.clone(),
    };
    let start_ms = millis(execution.get("StartTimestamp")).unwrap_or_else(|| jiff::Timestamp::now().as_millisecond());
    let start_time =
        jiff::Timestamp::from_millisecond(start_ms).map(crate::clock::format_timestamp).unwrap_or_default();
    let execution_id = execution.get("Id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let operations: Vec<Operation> = wire.iter().filter_map(from_wire).collect();
    let store = Arc::new(LambdaStore {
        client: Arc::clone(&client),
        arn: arn.clone(),
        start_time,
        input: input.clone(),
        operations,
        changed: Mutex::default(),
        token: Mutex::new(token),
        error: Mutex::new(None),
    });
    let suspender = Suspender::new(SuspendPolicy { steps: false, timers: true, callbacks: true });
    // The execution's name is the last segment of its ARN.
    let name = arn.rsplit('/').next().unwrap_or(&arn).to_owned();
    let clock = crate::Clock::real();
    let opened = Journal::open_suspending(store.clone(), &name, workflow_name, &input, &clock, Some(suspender.clone()))
        .await
        .map_err(|e| InvocationError::Service(ClientError::Service(e.to_string())))?;
    let Opened::Running(journal) = opened else {
        return Err(InvocationError::Service(ClientError::Service("the execution is already finished".into())));
    };
    if !chained.is_empty() {
        // A new journal: nothing has set it.
        let _ = journal.set_chained_invokes(chained);
    }
    let options = RunOptions::real().with_journal(journal);
    let outcome = run_until_suspended(&suspender, run(input, options)).await;
    if let Some(e) = store.error.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        return match e {
            ClientError::InvalidToken(_) => Err(InvocationError::InvalidToken(e)),
            // §3.4: a size limit fails the execution with a clear message, no retry.
            ClientError::TooLarge(m) => Ok(failed("Wfc.CheckpointTooLarge", &m)),
            other => Err(InvocationError::Service(other)),
        };
    }
    let Ok(result) = outcome else {
        return Ok(json!({ "Status": "PENDING" }));
    };
    match result.status {
        Status::Succeeded => {
            let text = result.output.unwrap_or(Value::Null).to_string();
            if text.len() <= MAX_INLINE_RESULT {
                return Ok(json!({ "Status": "SUCCEEDED", "Result": text }));
            }
            // Too large for the response: checkpointed on the EXECUTION operation instead.
            let update = json!({ "Id": execution_id, "Type": "EXECUTION", "Action": "SUCCEED", "Payload": text });
            let current = store.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
            match client.checkpoint(&arn, &current, vec![update]).await {
                Ok(_) => Ok(json!({ "Status": "SUCCEEDED", "Result": "" })),
                Err(e @ ClientError::InvalidToken(_)) => Err(InvocationError::InvalidToken(e)),
                Err(e) => Ok(failed("Wfc.ResultTooLarge", &e.to_string())),
            }
        }
        Status::Failed | Status::TimedOut => {
            let (error, cause) =
                result.error.map_or((wfc_ir::errors::RUNTIME.to_owned(), String::new()), |f| (f.error, f.cause));
            Ok(failed(&error, &cause))
        }
    }
}

fn failed(error: &str, message: &str) -> Value {
    json!({ "Status": "FAILED", "Error": { "ErrorType": error, "ErrorMessage": message } })
}

/// [`invoke_with`] on the interpreter with `handlers` for the Tasks, on a new current-thread
/// runtime (for the CLI and a `lambda_runtime` handler alike; see docs/adapters.md).
pub fn invoke(
    workflow: &wfc_ir::Workflow,
    handlers: &dyn crate::DynHandler,
    event: &Value,
    client: Arc<dyn DurableClient>,
) -> Result<Value, InvocationError> {
    invoke_chained(workflow, handlers, event, client, &ChainedInvokes::none())
}

/// [`invoke`] with subflows mapped to functions (see [`invoke_with_chained`]).
pub fn invoke_chained(
    workflow: &wfc_ir::Workflow,
    handlers: &dyn crate::DynHandler,
    event: &Value,
    client: Arc<dyn DurableClient>,
    chained: &ChainedInvokes,
) -> Result<Value, InvocationError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| InvocationError::Service(ClientError::Service(e.to_string())))?;
    runtime.block_on(invoke_inner(event, client, &workflow.name, chained, true, |input, options| async move {
        // A chained Map Run child (this function invoked by itself): the Map's ItemProcessor.
        match crate::distributed::chained_child(&input) {
            Some(envelope) => crate::distributed::run_chained_child(workflow, handlers, envelope, options).await,
            None => crate::interp::run(workflow, handlers, input, options).await,
        }
    }))
}
