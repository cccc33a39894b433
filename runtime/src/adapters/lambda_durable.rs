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

use crate::durable::suspend::{Pending, SuspendPolicy, Suspender, run_until_suspended};
pub use crate::durable::{ChainedConfigError, ChainedFunction, ChainedInvokes, MapRunChildren};
use crate::durable::{
    CheckpointToken, Claim, Completion, ExecutionRecord, Journal, NewExecution, OpStatus, OpType, Opened, Operation,
    OperationUpdate, Store, StoreError,
};
use crate::{ExecutionResult, RunOptions, Status};

/// The largest `Result` an invocation returns inline (Lambda's 6 MB response, less 50 bytes of
/// envelope, as the AWS SDKs use); a larger one is checkpointed on the `EXECUTION` operation.
pub const MAX_INLINE_RESULT: usize = 6 * 1024 * 1024 - 50;

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
    /// A transient failure (throttling, a service error, no answer) that outlasted its retries:
    /// propagated, so that Lambda invokes the function again.
    #[error("durable execution service error: {0}")]
    Service(String),
    /// A refusal no retry changes (`ResourceNotFoundException`, an invalid parameter, no
    /// credentials): the execution fails at once (spec §8.2.1, §15.3).
    #[error("durable execution service error: {0}")]
    Terminal(String),
    /// A checkpointed result that is not JSON (spec §9.3: a terminal failure).
    #[error("{0}")]
    Undeserializable(String),
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

/// The two calls a durable function makes. `lambda_client::SdkClient` (feature `lambda-sdk`)
/// makes them through aws-sdk-lambda; tests can substitute their own.
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

    /// This client for one invocation that must answer by `deadline` (Lambda's): retries stop
    /// in time. `None`: the client has no retries to bound.
    fn with_deadline(&self, _deadline: std::time::SystemTime) -> Option<Arc<dyn DurableClient>> {
        None
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
        // A WAIT cancelled because its branch was abandoned (see `abandoned_updates`): the
        // replay parks at it again, as it did when the branch was dropped, and never passes it.
        "CANCELLED" if op_type == OpType::Wait => OpStatus::Started,
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
        due_at_ms: if status_text == "CANCELLED" { None } else { millis(details.get("ScheduledEndTimestamp")) },
        callback_token: details.get("CallbackId").and_then(Value::as_str).map(str::to_owned),
        heartbeats: 0,
    })
}

/// Why an operation wfc wrote carries a `Result` that is not JSON (spec §9.3: deserialization
/// errors are terminal), or `None`. wfc checkpoints JSON only: such a result came from
/// elsewhere (a callback answered with plain text, a chained target's non-JSON output).
fn undeserializable(op: &Value) -> Option<String> {
    let name = op.get("Name").and_then(Value::as_str)?;
    let id = journal_id(name)?;
    if op.get("Id").and_then(Value::as_str) != Some(wire_id(&id).as_str()) {
        return None;
    }
    ["StepDetails", "CallbackDetails", "ChainedInvokeDetails", "ContextDetails"].iter().find_map(|k| {
        let text = op.get(*k)?.get("Result")?.as_str()?;
        let e = serde_json::from_str::<Value>(text).err()?;
        let mut shown: String = text.chars().take(80).collect();
        if shown.len() < text.len() {
            shown.push_str("...");
        }
        Some(format!("the result of operation '{id}' is not JSON ({e}): {shown:?}"))
    })
}

/// The `Error` object of an update (spec §8.3.3): `ErrorType` and `ErrorMessage`, and the
/// SHOULDs: `ErrorData` (the error and cause as JSON, for machines) and `StackTrace` (the
/// operation's scopes, innermost first: `P#1.0/0/Work#1.0`, `P#1.0/0`, `P#1.0`).
fn error_object(error: &str, cause: &str, id: Option<&str>) -> Value {
    let mut e = json!({
        "ErrorType": error,
        "ErrorMessage": cause,
        "ErrorData": json!({ "Error": error, "Cause": cause }).to_string(),
    });
    if let Some(id) = id {
        let frames: Vec<&str> = id.char_indices().filter(|(_, c)| *c == '/').map(|(i, _)| &id[..i]).collect();
        let mut stack = vec![id];
        stack.extend(frames.into_iter().rev());
        e["StackTrace"] = json!(stack);
    }
    e
}

/// The journal's update as service `OperationUpdate`s (none for what the service owns: a WAIT
/// is finished by the service, a CALLBACK by SendDurableExecutionCallback* or its timeout; the
/// function only starts them).
fn to_wire(u: &OperationUpdate, now_ms: i64, tenant: Option<&str>) -> Option<Value> {
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
            // A tenant-isolated function's chained invokes run in the invocation's tenant.
            if let Some(tenant) = tenant {
                w["ChainedInvokeOptions"]["TenantId"] = json!(tenant);
            }
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
            w["Error"] = error_object(
                u.error.as_deref().unwrap_or_default(),
                u.cause.as_deref().unwrap_or_default(),
                Some(&u.id),
            );
        }
        (_, OpStatus::Cancelled) => w["Action"] = json!("CANCEL"),
    }
    Some(w)
}

/// What [`LambdaStore`] knows of one operation wfc wrote.
#[derive(Debug, Clone)]
struct OpenOp {
    op_type: OpType,
    /// The service's status (`STARTED`, `SUCCEEDED`, `CANCELLED`, ...).
    status: String,
    /// The wire `ParentId`, if any.
    parent: Option<String>,
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
    /// Every operation wfc wrote, by journal id: its type and its status on the service as
    /// far as this invocation knows (the state it was given, then each update it sent and each
    /// checkpoint answer), to find what abandoned branches left open (`abandoned_updates`).
    open: Mutex<std::collections::BTreeMap<String, OpenOp>>,
    /// The invocation's tenant (a tenant-isolated function), given to chained invokes.
    tenant: Option<String>,
}

impl LambdaStore {
    /// Notes the service's operations (the state, or a checkpoint's answer) in `open`.
    fn note_wire(&self, ops: &[Value]) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        for op in ops {
            let text = |k: &str| op.get(k).and_then(Value::as_str);
            let (Some(t), Some(name), Some(wire), Some(status)) =
                (text("Type"), text("Name"), text("Id"), text("Status"))
            else {
                continue;
            };
            if let (Some(op_type), Some(id)) = (OpType::parse(t), journal_id(name))
                && wire_id(&id) == wire
            {
                let parent = text("ParentId").map(str::to_owned);
                open.insert(id, OpenOp { op_type, status: status.to_owned(), parent });
            }
        }
    }

    /// Notes the updates this invocation sends in `open`.
    fn note_sent(&self, updates: &[Value]) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        for u in updates {
            let text = |k: &str| u.get(k).and_then(Value::as_str);
            let (Some(t), Some(name), Some(action)) = (text("Type"), text("Name"), text("Action")) else {
                continue;
            };
            let status = match action {
                "START" => "STARTED",
                "SUCCEED" => "SUCCEEDED",
                "FAIL" => "FAILED",
                "CANCEL" => "CANCELLED",
                _ => "STARTED",
            };
            if let (Some(op_type), Some(id)) = (OpType::parse(t), journal_id(name)) {
                let parent = text("ParentId").map(str::to_owned);
                let parent = parent.or_else(|| open.get(&id).and_then(|o| o.parent.clone()));
                open.insert(id, OpenOp { op_type, status: status.to_owned(), parent });
            }
        }
    }

    /// The updates that close what no line of control waits for any more (spec §4.5.2(6),
    /// §8.3.2): each STARTED WAIT not in `waiting` is cancelled, and each STARTED CONTEXT with
    /// nothing in `waiting` under it (an abandoned Parallel branch or Map iteration, or any
    /// scope left when the execution ended) fails with `Wfc.BranchAbandoned`, innermost first.
    /// CALLBACK and CHAINED_INVOKE have no action but START: the service ends them (a timeout,
    /// the target's end), and the replay ignores their outcome, as it ignores the branch.
    fn abandoned_updates(&self, waiting: &[String]) -> Vec<Value> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let started = |t: OpType| open.iter().filter(move |(_, o)| o.op_type == t && o.status == "STARTED");
        let with_parent = |mut w: Value, o: &OpenOp| {
            if let Some(p) = &o.parent {
                w["ParentId"] = json!(p);
            }
            w
        };
        let mut updates: Vec<Value> = started(OpType::Wait)
            .filter(|(id, _)| !waiting.contains(id))
            .map(|(id, o)| {
                with_parent(json!({ "Id": wire_id(id), "Name": wire_name(id), "Type": "WAIT", "Action": "CANCEL" }), o)
            })
            .collect();
        let mut contexts: Vec<(&String, &OpenOp)> = started(OpType::Context)
            .filter(|(id, _)| {
                let under = format!("{id}/");
                !waiting.iter().any(|w| w == *id || w.starts_with(&under))
            })
            .collect();
        // Innermost first: a longer id is nested deeper.
        contexts.sort_by_key(|(id, _)| std::cmp::Reverse(id.matches('/').count()));
        for (id, o) in contexts {
            let w = json!({
                "Id": wire_id(id), "Name": wire_name(id), "Type": "CONTEXT", "Action": "FAIL",
                "Error": error_object(
                    "Wfc.BranchAbandoned",
                    "no line of control waits for this scope any more (a sibling branch failed, or the execution ended)",
                    Some(id),
                ),
            });
            updates.push(with_parent(w, o));
        }
        updates
    }

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
            let wire: Vec<Value> = updates
                .iter()
                .filter(|u| !already_started(u))
                .filter_map(|u| to_wire(u, now_ms, self.tenant.as_deref()))
                .collect();
            if wire.is_empty() {
                return Ok(token);
            }
            let current = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
            self.note_sent(&wire);
            let done = self.client.checkpoint(&self.arn, &current, wire).await.map_err(|e| self.fail(e))?;
            *self.token.lock().unwrap_or_else(|p| p.into_inner()) = done.token;
            if let Some(why) = done.operations.iter().find_map(undeserializable) {
                return Err(self.fail(ClientError::Undeserializable(why)));
            }
            self.note_wire(&done.operations);
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
                if let Some(why) = page.operations.iter().find_map(undeserializable) {
                    return Err(self.fail(ClientError::Undeserializable(why)));
                }
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
    invoke_for_tenant(event, client, workflow_name, chained, None, run).await
}

/// [`invoke_with_chained`] for an invocation of a tenant-isolated function: its CHAINED_INVOKE
/// operations carry the invocation's `tenant` (`ChainedInvokeOptions.TenantId`).
pub async fn invoke_for_tenant<R, Fut>(
    event: &Value,
    client: Arc<dyn DurableClient>,
    workflow_name: &str,
    chained: &ChainedInvokes,
    tenant: Option<&str>,
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
    invoke_inner(event, client, workflow_name, chained, tenant, false, run).await
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

#[allow(clippy::too_many_arguments)] // private; the public entry points each fix some
async fn invoke_inner<R, Fut>(
    event: &Value,
    client: Arc<dyn DurableClient>,
    workflow_name: &str,
    chained: &ChainedInvokes,
    tenant: Option<&str>,
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
        let page = match client.state(&arn, &token, &m).await {
            Ok(page) => page,
            Err(e) => return answer_for(e),
        };
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
    if let Some(why) = wire.iter().find_map(undeserializable) {
        return Ok(failed("Wfc.ResultNotDeserializable", &why));
    }
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
        open: Mutex::default(),
        tenant: tenant.map(str::to_owned),
    });
    store.note_wire(&wire);
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
        return answer_for(e);
    }
    // What no line of control waits for any more is closed before the answer (§4.5.2(6)):
    // everything, when the execution ended; else all but what the parked lines wait for.
    let waiting: Vec<String> = match &outcome {
        Ok(_) => Vec::new(),
        Err(pending) => pending
            .iter()
            .flat_map(|p| match p {
                // An event wait's timeout is a WAIT of its own.
                Pending::Event { id, timer, .. } => vec![id.clone(), timer.clone()],
                other => vec![other.id().to_owned()],
            })
            .collect(),
    };
    let abandoned = store.abandoned_updates(&waiting);
    if !abandoned.is_empty() {
        let current = store.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match client.checkpoint(&arn, &current, abandoned).await {
            Ok(done) => *store.token.lock().unwrap_or_else(|p| p.into_inner()) = done.token,
            Err(e) => return answer_for(e),
        }
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

/// The invocation's answer to a service error: an error (the invocation is retried) for an
/// invalid token or a transient failure, a FAILED execution for what no retry changes.
fn answer_for(e: ClientError) -> Result<Value, InvocationError> {
    match e {
        ClientError::InvalidToken(_) => Err(InvocationError::InvalidToken(e)),
        // §3.4: a size limit fails the execution with a clear message, no retry.
        ClientError::TooLarge(m) => Ok(failed("Wfc.CheckpointTooLarge", &m)),
        // §8.2.1, §15.3: a terminal refusal fails the execution at once.
        ClientError::Terminal(m) => Ok(failed("Wfc.DurableServiceError", &m)),
        // §9.3: a result that does not deserialize is a terminal failure.
        ClientError::Undeserializable(m) => Ok(failed("Wfc.ResultNotDeserializable", &m)),
        other @ ClientError::Service(_) => Err(InvocationError::Service(other)),
    }
}

fn failed(error: &str, message: &str) -> Value {
    json!({ "Status": "FAILED", "Error": error_object(error, message, None) })
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
    invoke_chained_for_tenant(workflow, handlers, event, client, chained, None)
}

/// [`invoke_chained`] for an invocation of a tenant-isolated function (see
/// [`invoke_for_tenant`]).
pub fn invoke_chained_for_tenant(
    workflow: &wfc_ir::Workflow,
    handlers: &dyn crate::DynHandler,
    event: &Value,
    client: Arc<dyn DurableClient>,
    chained: &ChainedInvokes,
    tenant: Option<&str>,
) -> Result<Value, InvocationError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| InvocationError::Service(ClientError::Service(e.to_string())))?;
    runtime.block_on(invoke_interpreted(workflow, handlers, event, client, chained, tenant))
}

/// [`invoke_chained_for_tenant`] on the caller's runtime (a server that keeps one runtime, so
/// that the service client's connections live across invocations).
pub async fn invoke_interpreted(
    workflow: &wfc_ir::Workflow,
    handlers: &dyn crate::DynHandler,
    event: &Value,
    client: Arc<dyn DurableClient>,
    chained: &ChainedInvokes,
    tenant: Option<&str>,
) -> Result<Value, InvocationError> {
    invoke_inner(event, client, &workflow.name, chained, tenant, true, |input, options| async move {
        // A chained Map Run child (this function invoked by itself): the Map's ItemProcessor.
        match crate::distributed::chained_child(&input) {
            Some(envelope) => crate::distributed::run_chained_child(workflow, handlers, envelope, options).await,
            None => crate::interp::run(workflow, handlers, input, options).await,
        }
    })
    .await
}
