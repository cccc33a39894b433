//! Loading stored durable state from arbitrary bytes, for the fuzz target `durable_state` and
//! its proptest smoke test: stored rows are checked ([`durable::parse_operation`]) and the journal
//! they make is replayed on a fixed workflow. Whatever the rows hold, this must end in an
//! execution result or a load error, never a panic or a hang.

use std::sync::Arc;

use serde_json::{Value, json};

use wfc_journal::{Journal, ReplayStore};
use wfc_runtime::durable::{self, CheckpointToken, Claim, ExecutionRecord, RawOperation, Store};
use wfc_runtime::{Clock, RunOptions, Status};

/// The workflow stored journals are replayed on (its IR, as `wfc compile` embeds it): a Task
/// with Retry (`A`), a Wait (`Nap`), a Parallel with a Task per branch (`Both`: `L`, `R`) and a
/// callback Task with timeouts (`Ask`), so journals can hit every replay rule.
const DEFINITION: &str = r#"{"name":"stored","comment":null,"version":null,"timeout_seconds":null,"machine":{"start_at":0,"states":[{"name":"A","comment":null,"location":{"line":2,"column":3},"kind":{"Task":{"resource":"res:A","input_path":"$","parameters":null,"result_selector":null,"result_path":"$.a","output_path":"$","timeout":null,"heartbeat":null,"retry":[{"error_equals":["States.ALL"],"interval_seconds":1,"max_attempts":2,"backoff_rate":2.0,"max_delay_seconds":null,"jitter":"None"}],"catch":[],"transition":{"Next":1}}}},{"name":"Nap","comment":null,"location":{"line":3,"column":3},"kind":{"Wait":{"input_path":"$","output_path":"$","duration":{"Seconds":5},"transition":{"Next":2}}}},{"name":"Both","comment":null,"location":{"line":4,"column":3},"kind":{"Parallel":{"input_path":"$","parameters":null,"result_selector":null,"result_path":"$.both","output_path":"$","branches":[{"start_at":0,"states":[{"name":"L","comment":null,"location":{"line":5,"column":33},"kind":{"Task":{"resource":"res:L","input_path":"$","parameters":null,"result_selector":null,"result_path":"$","output_path":"$","timeout":null,"heartbeat":null,"retry":[],"catch":[],"transition":"End"}}}]},{"start_at":0,"states":[{"name":"R","comment":null,"location":{"line":6,"column":33},"kind":{"Task":{"resource":"res:R","input_path":"$","parameters":null,"result_selector":null,"result_path":"$","output_path":"$","timeout":null,"heartbeat":null,"retry":[],"catch":[],"transition":"End"}}}]}],"retry":[],"catch":[],"transition":{"Next":3}}}},{"name":"Ask","comment":null,"location":{"line":7,"column":3},"kind":{"Task":{"resource":"res:Ask.waitForTaskToken","input_path":"$","parameters":null,"result_selector":null,"result_path":"$.ask","output_path":"$","timeout":{"Fixed":30},"heartbeat":{"Fixed":10},"retry":[],"catch":[],"transition":"End"}}}]}}"#;

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn number(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// Reads `{"operations": [{"id", "type", "subtype", "name", "status", "starts", "result", "error",
/// "cause", "due_at", "callback_token", "heartbeats"}, ...]}` as stored rows (any field may be
/// missing or of any type), checks them, and replays the journal on the fixed workflow on
/// virtual time. Returns how the execution ended and how many operations the replay had to
/// write (0: everything replayed from the rows), or why the state was refused.
pub fn replay_stored_state(data: &[u8]) -> Result<(Status, usize), String> {
    let doc: Value = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let rows = doc.get("operations").and_then(Value::as_array).ok_or("no operations array")?;
    let mut operations = Vec::new();
    for row in rows.iter().take(64) {
        let raw = RawOperation {
            id: text(row, "id").unwrap_or_default(),
            op_type: text(row, "type").unwrap_or_default(),
            subtype: text(row, "subtype").unwrap_or_default(),
            name: text(row, "name").unwrap_or_default(),
            status: text(row, "status").unwrap_or_default(),
            starts: number(row, "starts").unwrap_or(0),
            result: text(row, "result"),
            error: text(row, "error"),
            cause: text(row, "cause"),
            due_at_ms: number(row, "due_at"),
            callback_token: text(row, "callback_token"),
            heartbeats: number(row, "heartbeats").unwrap_or(0),
        };
        operations.push(durable::parse_operation(raw).map_err(|e| e.to_string())?);
    }
    let workflow: wfc_ir::Workflow =
        serde_json::from_str(DEFINITION).map_err(|e| format!("the fixed workflow: {e}"))?;
    wfc_runtime::block_on_virtual(async move {
        // A fresh store holding the execution but none of the rows: replayed operations need
        // nothing from it, and what the replay writes shows what was not replayed. An in-memory
        // replay store, as the runtime links no database (the stores are wfc-sqlite and
        // wfc-postgres).
        let store: Arc<dyn Store> = ReplayStore::new(Vec::new(), "2024-01-01T00:00:00.000Z");
        let new = durable::NewExecution {
            name: "stored".into(),
            workflow: "stored".into(),
            input: json!({}),
            start_time: "2024-01-01T00:00:00.000Z".into(),
            definition_hash: None,
            version_id: None,
        };
        let opened = store.open_execution(new).await.map_err(|e| e.to_string())?;
        let record =
            ExecutionRecord::running("stored".into(), "stored".into(), json!({}), "2024-01-01T00:00:00.000Z".into());
        let token = CheckpointToken { epoch: opened.token.epoch, seq: opened.token.seq };
        let claim = Claim { record, operations, token, existed: true };
        let journal = Journal::from_claim(Arc::clone(&store), claim, None);
        let handler = |_resource: String, input: Value, _ctx: wfc_runtime::TaskContext| async move { Ok(input) };
        let options =
            RunOptions { clock: Clock::virtual_default(), ..RunOptions::virtual_time() }.with_journal(journal);
        let result = wfc_interp::run(&workflow, &handler, json!({}), options).await;
        let written = store.load_journal("stored").await.map_err(|e| e.to_string())?.len();
        Ok((result.status, written))
    })
}
