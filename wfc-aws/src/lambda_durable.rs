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

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use sha2::Digest;

use wfc_journal::suspend::{Pending, SuspendPolicy, Suspender, run_until_suspended};
pub use wfc_journal::{ChainedConfigError, ChainedFunction, ChainedInvokes, MapRunChildren};
use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{
    CheckpointToken, Claim, Completion, ExecutionRecord, NewExecution, OpStatus, OpType, Operation, OperationUpdate,
    Store, StoreError,
};
use wfc_runtime::{ExecutionResult, RunOptions, Status};

#[cfg(feature = "lambda-sdk")]
pub mod client;
#[cfg(feature = "lambda")]
pub mod function;

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

/// The two calls a durable function makes. [`client::SdkClient`] (feature `lambda-sdk`)
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

/// `ErrorData`'s list of the earlier attempts' error names, on a STEP that holds several
/// attempts of one Task (a `RETRY`, and the `FAIL` that ends the chain).
const RETRIED_ERRORS: &str = "RetriedErrors";
/// The `Result` of a STEP that succeeded after retries: `{"wfc:result": R, "wfc:retriedErrors":
/// [...]}` (a `SUCCEED` carries no `Error`, and the service keeps no earlier one once it
/// succeeded, while a replay needs each attempt's error name to choose and count retriers).
const WRAPPED_RESULT: &str = "wfc:result";
const WRAPPED_ERRORS: &str = "wfc:retriedErrors";
/// The cause of an attempt before the last of a chain: only its error name travels (the
/// retriers match names; no output shows an earlier attempt's cause).
const EARLIER_CAUSE: &str = "(the cause of an attempt before the last is not kept by the service)";

/// A Task attempt's journal id `<base>.<attempt>` split (`Charge#1.2` → (`Charge#1`, 2)).
fn attempt_parts(id: &str) -> Option<(&str, u32)> {
    let (base, k) = id.rsplit_once('.')?;
    if base.is_empty() || k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, k.parse().ok()?))
}

/// A retry back-off's journal id `<base>.retry<n>` split (`Charge#1.retry2` → (`Charge#1`, 2)).
fn retry_parts(id: &str) -> Option<(&str, u32)> {
    let (base, n) = id.rsplit_once(".retry")?;
    if base.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, n.parse().ok()?))
}

fn error_names(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array()?.iter().map(|n| n.as_str().map(str::to_owned)).collect()
}

/// The consecutive attempts of one Task visit that one wire STEP holds (spec §4.4.5: a retry is
/// the STEP's `RETRY`, not a new STEP): attempts `first..` of journal base `<base>`, the wire
/// operation named by attempt `head`, the error names of its failed attempts so far.
#[derive(Debug, Clone, PartialEq)]
struct Chain {
    head: String,
    first: u32,
    errors: Vec<String>,
    /// `RETRY` was its last action (the service has it PENDING or READY): the next attempt runs
    /// on it, without a START (spec A.2).
    open: bool,
}

impl Chain {
    fn fresh(head: &str, first: u32) -> Chain {
        Chain { head: head.to_owned(), first, errors: Vec::new(), open: false }
    }

    /// The attempt the chain's wire STEP takes next.
    fn next_attempt(&self) -> u32 {
        self.first + self.errors.len() as u32
    }
}

/// A service `Operation` as the journal's operations: [`from_wire`], and for a STEP holding
/// retried attempts, each attempt (`<base>.<k>`, failed with its error name) and each back-off
/// between them (the WAIT `<base>.retry<k>` the journal expects, fired, or STARTED until the
/// STEP's `NextAttemptTimestamp` while the service has it PENDING). Also the chain it is.
fn expand(op: &Value) -> (Vec<Operation>, Option<(String, Chain)>) {
    let Some(last) = from_wire(op) else { return (Vec::new(), None) };
    let parts = if last.op_type == OpType::Step { attempt_parts(&last.id) } else { None };
    let Some((base, j)) = parts.map(|(b, k)| (b.to_owned(), k)) else { return (vec![last], None) };
    let details = op.get("StepDetails");
    let retried = details
        .and_then(|d| d.pointer("/Error/ErrorData"))
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|d| error_names(d.get(RETRIED_ERRORS)));
    let failed = |k: u32, error: &str, cause: &str| Operation {
        id: format!("{base}.{k}"),
        status: if error == wfc_ir::errors::TIMEOUT { OpStatus::TimedOut } else { OpStatus::Failed },
        result: None,
        error: Some(error.to_owned()),
        cause: Some(cause.to_owned()),
        ..last.clone()
    };
    let backoff = |n: u32, due_at_ms: Option<i64>| Operation {
        id: format!("{base}.retry{n}"),
        op_type: OpType::Wait,
        subtype: "Retry".to_owned(),
        status: if due_at_ms.is_some() { OpStatus::Started } else { OpStatus::Succeeded },
        result: None,
        error: None,
        cause: None,
        due_at_ms,
        callback_token: None,
        ..last.clone()
    };
    // The earlier attempts (failed) and the back-offs after them (fired).
    let history = |errors: &[String]| -> Vec<Operation> {
        let mut ops = Vec::new();
        for (i, e) in errors.iter().enumerate() {
            ops.push(failed(j + i as u32, e, EARLIER_CAUSE));
            ops.push(backoff(j + i as u32 + 1, None));
        }
        ops
    };
    let mut chain = Chain::fresh(&last.id, j);
    let status = op.get("Status").and_then(Value::as_str).unwrap_or("STARTED");
    let ops = match status {
        // RETRY was its last action: every attempt so far failed; the next one waits for its
        // back-off (PENDING) or may run (READY).
        "PENDING" | "READY" => {
            let mut errors = retried.unwrap_or_default();
            let error = last.error.clone().unwrap_or_default();
            let mut ops = history(&errors);
            let k = j + errors.len() as u32;
            ops.push(failed(k, &error, last.cause.as_deref().unwrap_or_default()));
            let due = details.and_then(|d| millis(d.get("NextAttemptTimestamp")));
            ops.push(backoff(k + 1, if status == "PENDING" { Some(due.unwrap_or(0)) } else { None }));
            errors.push(error);
            chain.errors = errors;
            chain.open = true;
            ops
        }
        "FAILED" | "TIMED_OUT" => {
            let errors = retried.unwrap_or_default();
            let mut ops = history(&errors);
            let k = j + errors.len() as u32;
            chain.errors = errors;
            chain.errors.push(last.error.clone().unwrap_or_default());
            ops.push(Operation { id: format!("{base}.{k}"), ..last });
            ops
        }
        "SUCCEEDED" => {
            let wrapped = last.result.as_ref().and_then(Value::as_object).filter(|o| {
                o.len() == 2 && o.contains_key(WRAPPED_RESULT) && error_names(o.get(WRAPPED_ERRORS)).is_some()
            });
            match wrapped {
                Some(o) => {
                    let errors = error_names(o.get(WRAPPED_ERRORS)).unwrap_or_default();
                    let result = o.get(WRAPPED_RESULT).cloned();
                    let mut ops = history(&errors);
                    let k = j + errors.len() as u32;
                    chain.errors = errors;
                    ops.push(Operation { id: format!("{base}.{k}"), result, ..last });
                    ops
                }
                None => vec![last],
            }
        }
        _ => vec![last],
    };
    (ops, Some((base, chain)))
}

/// The `Error` object of an update (spec §8.3.3): `ErrorType` and `ErrorMessage`, and the
/// SHOULDs: `ErrorData` (the error and cause as JSON, for machines) and `StackTrace` (the
/// operation's scopes, innermost first: `P#1.0/0/Work#1.0`, `P#1.0/0`, `P#1.0`). A STEP's
/// `ErrorData` also lists the error names of the attempts before this one that it held
/// (`RetriedErrors`, see [`Chain`]).
fn error_object(error: &str, cause: &str, id: Option<&str>, retried: &[String]) -> Value {
    let mut data = json!({ "Error": error, "Cause": cause });
    if !retried.is_empty() {
        data[RETRIED_ERRORS] = json!(retried);
    }
    let mut e = json!({ "ErrorType": error, "ErrorMessage": cause, "ErrorData": data.to_string() });
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
            // A mapped subflow (see `wfc_journal::ChainedInvokes`): the payload is the child's input.
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
                &[],
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
    changed: Mutex<HashMap<String, Operation>>,
    token: Mutex<String>,
    error: Mutex<Option<ClientError>>,
    /// Every operation wfc wrote, by journal id: its type and its status on the service as
    /// far as this invocation knows (the state it was given, then each update it sent and each
    /// checkpoint answer), to find what abandoned branches left open (`abandoned_updates`).
    open: Mutex<std::collections::BTreeMap<String, OpenOp>>,
    /// The invocation's tenant (a tenant-isolated function), given to chained invokes.
    tenant: Option<String>,
    /// The latest wire STEP of each Task visit (journal base `<State>#<visit>`): where its next
    /// attempt goes (see [`Chain`]).
    chains: Mutex<HashMap<String, Chain>>,
    /// Failed attempts not sent yet: a retry back-off that follows makes the failure the STEP's
    /// `RETRY` (spec §4.4.5); anything else on the same line of control, or the invocation's
    /// end, makes it the `FAIL` it is.
    held: Mutex<Vec<OperationUpdate>>,
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
                    &[],
                ),
            });
            updates.push(with_parent(w, o));
        }
        updates
    }

    /// A STEP START the service already has as STARTED (its invocation was interrupted): the
    /// step runs again without a second START, which the service refuses; SUCCEED/FAIL follow.
    fn already_started(&self, u: &OperationUpdate) -> bool {
        u.op_type == OpType::Step
            && u.status == OpStatus::Started
            && self.operations.iter().any(|op| op.id == u.id && op.status == OpStatus::Started)
    }

    /// The wire update ending attempt `h` (failed) of its chain: `RETRY` after `retry_seconds`
    /// of back-off, else `FAIL`. Either carries the chain's earlier error names.
    fn step_end(&self, h: &OperationUpdate, retry_seconds: Option<i64>, chains: &mut HashMap<String, Chain>) -> Value {
        let (base, k) = attempt_parts(&h.id).unwrap_or((h.id.as_str(), 0));
        let chain = chains.entry(base.to_owned()).or_insert_with(|| Chain::fresh(&h.id, k));
        if chain.next_attempt() != k {
            // Not the attempt the chain expects (cannot happen: its START made the chain).
            *chain = Chain::fresh(&h.id, k);
        }
        let error = h.error.clone().unwrap_or_default();
        let mut w = json!({
            "Id": wire_id(&chain.head), "Name": wire_name(&chain.head), "Type": "STEP", "SubType": h.subtype,
            "Error": error_object(&error, h.cause.as_deref().unwrap_or_default(), Some(&h.id), &chain.errors),
        });
        if let Some(parent) = &h.parent_id {
            w["ParentId"] = json!(wire_id(parent));
        }
        match retry_seconds {
            Some(seconds) => {
                w["Action"] = json!("RETRY");
                w["StepOptions"] = json!({ "NextAttemptDelaySeconds": seconds });
            }
            None => w["Action"] = json!("FAIL"),
        }
        chain.errors.push(error);
        chain.open = retry_seconds.is_some();
        w
    }

    /// The wire update for a STEP attempt's START or SUCCEED (`None`: nothing to send).
    fn step_update(&self, u: &OperationUpdate, now_ms: i64, chains: &mut HashMap<String, Chain>) -> Option<Value> {
        let (base, k) = attempt_parts(&u.id)?;
        let chain = chains.get(base).filter(|c| c.next_attempt() == k && (c.open || c.head == u.id)).cloned();
        match u.status {
            OpStatus::Started => {
                if chain.as_ref().is_some_and(|c| c.open) {
                    // The service made the STEP READY: the attempt runs without a START (A.2).
                    return None;
                }
                chains.insert(base.to_owned(), Chain::fresh(&u.id, k));
                if self.already_started(u) {
                    return None;
                }
                to_wire(u, now_ms, self.tenant.as_deref())
            }
            OpStatus::Succeeded => {
                let chain = chain.unwrap_or_else(|| Chain::fresh(&u.id, k));
                let mut w = to_wire(u, now_ms, self.tenant.as_deref())?;
                w["Id"] = json!(wire_id(&chain.head));
                w["Name"] = json!(wire_name(&chain.head));
                if !chain.errors.is_empty() {
                    let result = u.result.clone().unwrap_or(Value::Null);
                    w["Payload"] = json!(json!({ WRAPPED_RESULT: result, WRAPPED_ERRORS: chain.errors }).to_string());
                }
                chains.insert(base.to_owned(), Chain { open: false, ..chain });
                Some(w)
            }
            _ => to_wire(u, now_ms, self.tenant.as_deref()),
        }
    }

    /// The journal's updates as wire updates, holding failed attempts until it is known whether
    /// a retry follows them (see `held`).
    fn wire_updates(&self, updates: &[OperationUpdate], now_ms: i64) -> Vec<Value> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let mut chains = self.chains.lock().unwrap_or_else(|p| p.into_inner());
        let mut wire = Vec::new();
        for u in updates {
            let retried = (u.op_type == OpType::Wait && u.status == OpStatus::Started && u.subtype == "Retry")
                .then(|| retry_parts(&u.id))
                .flatten()
                .and_then(|(base, n)| {
                    held.iter().position(|h| attempt_parts(&h.id).is_some_and(|(b, k)| b == base && k + 1 == n))
                });
            if let Some(i) = retried {
                let h = held.remove(i);
                // Whole seconds, rounded up so the attempt never comes early; at least 1.
                let seconds = ((u.due_at_ms.unwrap_or(now_ms) - now_ms).max(0) + 999) / 1000;
                wire.push(self.step_end(&h, Some(seconds.max(1)), &mut chains));
                continue;
            }
            // The line of control of a held failure went on without a retry: it is final. (A
            // sibling line's update, under another parent, says nothing about it.)
            let (done, keep): (Vec<_>, Vec<_>) = held.drain(..).partition(|h| {
                h.parent_id == u.parent_id || h.id.strip_prefix(u.id.as_str()).is_some_and(|r| r.starts_with('/'))
            });
            *held = keep;
            for h in &done {
                wire.push(self.step_end(h, None, &mut chains));
            }
            let attempt = u.op_type == OpType::Step && attempt_parts(&u.id).is_some();
            match u.status {
                OpStatus::Failed | OpStatus::TimedOut if attempt => held.push(u.clone()),
                _ if attempt => wire.extend(self.step_update(u, now_ms, &mut chains)),
                _ if self.already_started(u) => {}
                _ => wire.extend(to_wire(u, now_ms, self.tenant.as_deref())),
            }
        }
        wire
    }

    /// Sends the failures still held (the invocation is answering): each is its STEP's `FAIL`.
    async fn flush_held(&self) -> Result<(), ClientError> {
        let wire: Vec<Value> = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let mut chains = self.chains.lock().unwrap_or_else(|p| p.into_inner());
            held.drain(..).collect::<Vec<_>>().iter().map(|h| self.step_end(h, None, &mut chains)).collect()
        };
        if wire.is_empty() {
            return Ok(());
        }
        self.note_sent(&wire);
        let current = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let done = self.client.checkpoint(&self.arn, &current, wire).await?;
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = done.token;
        self.note_wire(&done.operations);
        Ok(())
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
            let wire = self.wire_updates(&updates, now_ms);
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
            for op in done.operations.iter().flat_map(|op| expand(op).0) {
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
                if let Some(op) = page.operations.iter().flat_map(|op| expand(op).0).find(|op| op.id == id) {
                    return Ok(Some(op));
                }
                match page.next_marker {
                    Some(m) => marker = m,
                    None => return Ok(known),
                }
            }
        })
    }

    wfc_runtime::replay_store_keeps_no_records!();
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
    if !map_run_children && wfc_runtime::distributed::chained_child(&input).is_some() {
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
        jiff::Timestamp::from_millisecond(start_ms).map(wfc_runtime::clock::format_timestamp).unwrap_or_default();
    let execution_id = execution.get("Id").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Some(why) = wire.iter().find_map(undeserializable) {
        return Ok(failed("Wfc.ResultNotDeserializable", &why));
    }
    let mut operations: Vec<Operation> = Vec::new();
    let mut chains: HashMap<String, Chain> = HashMap::new();
    for op in &wire {
        let (ops, chain) = expand(op);
        operations.extend(ops);
        // A visit's latest wire STEP is the one its next attempt may go on.
        if let Some((base, chain)) = chain
            && chains.get(&base).is_none_or(|c| c.first < chain.first)
        {
            chains.insert(base, chain);
        }
    }
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
        chains: Mutex::new(chains),
        held: Mutex::default(),
    });
    store.note_wire(&wire);
    let suspender = Suspender::new(SuspendPolicy { steps: false, timers: true, callbacks: true });
    // The execution's name is the last segment of its ARN.
    let name = arn.rsplit('/').next().unwrap_or(&arn).to_owned();
    let clock = wfc_runtime::Clock::real();
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
    // Failed attempts no retry followed are their STEPs' FAIL, before anything else is closed.
    if store.error.lock().unwrap_or_else(|p| p.into_inner()).is_none()
        && let Err(e) = store.flush_held().await
    {
        return answer_for(e);
    }
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
    json!({ "Status": "FAILED", "Error": error_object(error, message, None, &[]) })
}

/// [`invoke_with`] on the interpreter with `handlers` for the Tasks, on a new current-thread
/// runtime (for the CLI and a `lambda_runtime` handler alike; see docs/adapters.md).
pub fn invoke(
    workflow: &wfc_ir::Workflow,
    handlers: &dyn wfc_runtime::DynHandler,
    event: &Value,
    client: Arc<dyn DurableClient>,
) -> Result<Value, InvocationError> {
    invoke_chained(workflow, handlers, event, client, &ChainedInvokes::none())
}

/// [`invoke`] with subflows mapped to functions (see [`invoke_with_chained`]).
pub fn invoke_chained(
    workflow: &wfc_ir::Workflow,
    handlers: &dyn wfc_runtime::DynHandler,
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
    handlers: &dyn wfc_runtime::DynHandler,
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
    handlers: &dyn wfc_runtime::DynHandler,
    event: &Value,
    client: Arc<dyn DurableClient>,
    chained: &ChainedInvokes,
    tenant: Option<&str>,
) -> Result<Value, InvocationError> {
    invoke_inner(event, client, &workflow.name, chained, tenant, true, |input, options| async move {
        // A chained Map Run child (this function invoked by itself): the Map's ItemProcessor.
        match wfc_runtime::distributed::chained_child(&input) {
            Some(envelope) => {
                // The interpreter runs the Map's item processor (the runtime does not depend on it).
                wfc_runtime::distributed::run_chained_child(workflow, envelope, options, |child, processor, item| async move {
                    wfc_interp::run_machine(&child, processor, handlers, item).await
                })
                .await
            }
            None => wfc_interp::run(workflow, handlers, input, options).await,
        }
    })
    .await
}
