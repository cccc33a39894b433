//! Durable executions: the SQLite store's contract, and checkpoint/replay on both engines (the
//! interpreter and generated code), with the process "crash" simulated by dropping the running
//! execution while a task is in flight.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;
use wfc_interp::{self as interp, Handlers};
use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{
    CheckpointToken, Completion, ExecutionStatus, HistoryWrite, NewExecution, OpStatus, OpType, OperationUpdate, Store,
    StoreError,
};
use wfc_runtime::{Clock, Failure, RunOptions, Status, TaskContext};
use wfc_sqlite::{SqliteStore, Synchronous};

wfc_runtime::include_workflow!("tests/durable/two_steps.asl.json");
wfc_runtime::include_workflow!("tests/durable/nap.asl.json");
wfc_runtime::include_workflow!("tests/durable/fanout.asl.json");
wfc_runtime::include_workflow!("tests/durable/flaky.asl.json");
wfc_runtime::include_workflow!("tests/durable/beat.asl.json");
wfc_runtime::include_workflow!("tests/durable/fan8.asl.json");
wfc_runtime::include_workflow!("tests/durable/redrive_nested.asl.json");
wfc_runtime::include_workflow!("tests/durable/redrive_cancelled.asl.json");
wfc_runtime::include_workflow!("tests/durable/redrive_distributed.asl.json");
wfc_runtime::include_workflow!("tests/durable/redrive_stateless.asl.json");
wfc_runtime::include_workflow!("tests/durable/redrive_top.asl.json");

/// The IR `include_workflow!` lowered `tests/durable/<name>.asl.json` to (generated code carries
/// none), for the interpreter's runs of the same definitions.
fn lowered(name: &str) -> wfc_runtime::ir::Workflow {
    let path = format!("tests/durable/{name}.asl.json");
    wfc_build::load_file(&path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

fn store() -> Arc<dyn Store> {
    Arc::new(SqliteStore::in_memory().expect("an in-memory store opens"))
}

fn new_exec(name: &str, input: Value) -> NewExecution {
    NewExecution {
        name: name.into(),
        workflow: "wf".into(),
        input,
        start_time: "2024-01-01T00:00:00.000Z".into(),
        definition_hash: None,
        version_id: None,
    }
}

fn step(id: &str, status: OpStatus, result: Option<Value>) -> OperationUpdate {
    OperationUpdate {
        id: id.into(),
        op_type: OpType::Step,
        subtype: "Task".into(),
        name: "S".into(),
        status,
        result,
        error: None,
        cause: None,
        due_at_ms: None,
        callback_token: None,
        parent_id: None,
        heartbeat_seconds: None,
        function_name: None,
    }
}

async fn open(store: &Arc<dyn Store>, name: &str, workflow: &wfc_runtime::ir::Workflow, input: &Value) -> Arc<Journal> {
    match Journal::open(Arc::clone(store), name, &workflow.name, input, &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("expected a running execution, got {other:?}"),
    }
}

// ---------------------------------------------------------------- the store's contract

#[tokio::test]
async fn executions_are_idempotent_by_name_and_input() {
    let s = store();
    let first = s.open_execution(new_exec("e1", json!({"a": 1}))).await.unwrap();
    assert!(!first.existed);
    assert_eq!(first.record.status, ExecutionStatus::Running);
    let again = s.open_execution(new_exec("e1", json!({"a": 1}))).await.unwrap();
    assert!(again.existed);
    assert_eq!(again.token.epoch, first.token.epoch + 1, "every open fences the previous owner");
    let err = s.open_execution(new_exec("e1", json!({"a": 2}))).await.unwrap_err();
    assert_eq!(err, StoreError::InputMismatch("e1".into()));
    assert_eq!(s.list_executions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn checkpoint_tokens_are_single_use_and_fence_older_owners() {
    let s = store();
    let claim = s.open_execution(new_exec("e", json!({}))).await.unwrap();
    let t1 = s.checkpoint("e", claim.token, vec![step("A#1.0", OpStatus::Started, None)]).await.unwrap();
    assert_eq!(t1, CheckpointToken { epoch: claim.token.epoch, seq: claim.token.seq + 1 });
    // Reusing the consumed token is rejected.
    let stale = s.checkpoint("e", claim.token, vec![]).await.unwrap_err();
    assert_eq!(stale, StoreError::StaleToken("e".into()));
    // A second process opens the execution: the first one's current token is now stale too.
    let claim2 = s.open_execution(new_exec("e", json!({}))).await.unwrap();
    assert!(matches!(s.checkpoint("e", t1, vec![]).await, Err(StoreError::StaleToken(_))));
    assert!(s.checkpoint("e", claim2.token, vec![]).await.is_ok());
    assert!(matches!(s.checkpoint("nobody", claim2.token, vec![]).await, Err(StoreError::NotFound(_))));
}

#[tokio::test]
async fn a_checkpoint_batch_is_atomic() {
    let s = store();
    let claim = s.open_execution(new_exec("e", json!({}))).await.unwrap();
    let t = s.checkpoint("e", claim.token, vec![step("A#1.0", OpStatus::Succeeded, Some(json!(1)))]).await.unwrap();
    // The second update rewrites a finished operation: the whole batch, B included, is refused.
    let err = s
        .checkpoint(
            "e",
            t,
            vec![step("B#1.0", OpStatus::Started, None), step("A#1.0", OpStatus::Succeeded, Some(json!(2)))],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidUpdate { .. }), "{err:?}");
    let ops = s.load_journal("e").await.unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0].result, Some(json!(1)));
    // The failed batch did not consume the token.
    assert!(s.checkpoint("e", t, vec![]).await.is_ok());
}

#[tokio::test]
async fn finishing_and_history_are_recorded() {
    let s = store();
    let claim = s.open_execution(new_exec("e", json!({"x": 1}))).await.unwrap();
    let completion =
        Completion { status: ExecutionStatus::Succeeded, output: Some(json!({"ok": true})), error: None, cause: None };
    s.finish("e", claim.token, completion).await.unwrap();
    let events = vec![wfc_runtime::HistoryEvent {
        id: 1,
        previous_event_id: 0,
        timestamp: "t".into(),
        event_type: wfc_runtime::EventType::ExecutionStarted,
        details: json!({}).into(),
    }];
    s.append_history("e", events.clone()).await.unwrap();
    assert_eq!(s.read_history("e").await.unwrap(), events);
    let record = s.describe_execution("e").await.unwrap().unwrap();
    assert_eq!(record.status, ExecutionStatus::Succeeded);
    assert_eq!(record.output, Some(json!({"ok": true})));
    assert!(s.describe_execution("other").await.unwrap().is_none());
    // Opening a finished execution does not restart it.
    assert_eq!(
        s.open_execution(new_exec("e", json!({"x": 1}))).await.unwrap().record.status,
        ExecutionStatus::Succeeded
    );
}

/// The SQLite store keeps a commit's events in one row (schema 9): writes that replace stored
/// ids inside and across rows, a truncated tail, and pages read forward and backward from ids
/// inside rows all see the events one by one, as when each had its own row.
#[tokio::test]
async fn history_rows_of_many_events_read_and_replace_event_by_event() {
    let s = store();
    let claim = s.open_execution(new_exec("h", json!({}))).await.unwrap();
    let event = |id: u64, tag: &str| wfc_runtime::HistoryEvent {
        id,
        previous_event_id: id - 1,
        timestamp: tag.into(),
        event_type: wfc_runtime::EventType::PassStateEntered,
        details: json!({ "name": tag }).into(),
    };
    let events = |ids: std::ops::RangeInclusive<u64>, tag: &str| ids.map(|i| event(i, tag)).collect::<Vec<_>>();
    let ids = |events: Vec<wfc_runtime::HistoryEvent>| {
        events.into_iter().map(|e| (e.id, e.timestamp.to_string())).collect::<Vec<_>>()
    };
    let tagged = |spans: &[(std::ops::RangeInclusive<u64>, &str)]| {
        spans.iter().flat_map(|(r, t)| r.clone().map(move |i| (i, t.to_string()))).collect::<Vec<_>>()
    };
    s.append_history("h", events(1..=5, "a")).await.unwrap();
    s.append_history("h", events(6..=10, "b")).await.unwrap();
    // Ids 4 to 7 again: the end of the first row and the start of the second are replaced.
    s.append_history("h", events(4..=7, "c")).await.unwrap();
    let all = tagged(&[(1..=3, "a"), (4..=7, "c"), (8..=10, "b")]);
    assert_eq!(ids(s.read_history("h").await.unwrap()), all);
    assert_eq!(ids(s.read_history_page("h", 2, 4, false).await.unwrap()), all[2..6].to_vec());
    assert_eq!(ids(s.read_history_page("h", 9, 4, false).await.unwrap()), all[9..].to_vec());
    let newest: Vec<_> = all.iter().rev().take(3).cloned().collect();
    assert_eq!(ids(s.read_history_page("h", 0, 3, true).await.unwrap()), newest);
    let before_six: Vec<_> = all[..5].iter().rev().cloned().collect();
    assert_eq!(ids(s.read_history_page("h", 6, 10, true).await.unwrap()), before_six);
    // A resumed run that recorded differently from id 3 on replaces the tail.
    let rewrite = HistoryWrite { events: events(3..=4, "d"), truncate_after: Some(2) };
    s.checkpoint_with_history("h", claim.token, vec![], rewrite).await.unwrap();
    assert_eq!(ids(s.read_history("h").await.unwrap()), tagged(&[(1..=2, "a"), (3..=4, "d")]));
    // Events not in id order are still stored one by one.
    s.append_history("h", vec![event(6, "e"), event(5, "e")]).await.unwrap();
    assert_eq!(ids(s.read_history("h").await.unwrap()), tagged(&[(1..=2, "a"), (3..=4, "d"), (5..=6, "e")]));
    assert!(matches!(s.append_history("none", events(1..=1, "x")).await, Err(StoreError::NotFound(_))));
}

#[tokio::test]
async fn a_file_store_survives_reopening_in_both_durability_modes() {
    let dir = std::env::temp_dir().join(format!("wfc-durable-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, sync) in [("full.db", Synchronous::Full), ("normal.db", Synchronous::Normal)] {
        let path = dir.join(file);
        let _ = std::fs::remove_file(&path);
        {
            let s = SqliteStore::open(&path, sync).unwrap();
            let claim = s.open_execution(new_exec("e", json!({}))).await.unwrap();
            s.checkpoint("e", claim.token, vec![step("A#1.0", OpStatus::Succeeded, Some(json!("r")))]).await.unwrap();
        }
        // Reopening runs the migrations again: they must be a no-op on a current schema.
        let s = SqliteStore::open(&path, sync).unwrap();
        let ops = s.load_journal("e").await.unwrap();
        assert_eq!(ops.len(), 1, "{file}");
        assert_eq!(ops[0].result, Some(json!("r")));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// At FULL on a file, commits are made at `synchronous=NORMAL` and the log is synced beside
/// them: every write (grouped or not) is answered only after a sync that began after it
/// committed, so writes made one after the other cannot share a sync. At NORMAL nothing syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_store_answers_each_write_after_a_sync_of_its_log() {
    let dir = std::env::temp_dir().join(format!("wfc-durable-sync-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("full.db");
    let _ = std::fs::remove_file(&path);
    let s = SqliteStore::open(&path, Synchronous::Full).unwrap();
    let syncs = || s.log_syncs().expect("a FULL file store syncs its log itself");
    let before = syncs();
    // Not grouped: its own transaction, answered after a sync.
    let claim = s.open_execution(new_exec("e", json!({}))).await.unwrap();
    assert!(syncs() > before, "opening an execution was answered before a sync");
    let mut token = claim.token;
    for i in 1..=3 {
        let before = syncs();
        let update = step(&format!("A#{i}.0"), OpStatus::Succeeded, Some(json!(i)));
        token = s.checkpoint("e", token, vec![update]).await.unwrap();
        assert!(syncs() > before, "checkpoint {i} was answered before a sync");
    }
    assert_eq!(s.load_journal("e").await.unwrap().len(), 3);
    assert_eq!(SqliteStore::open(dir.join("normal.db"), Synchronous::Normal).unwrap().log_syncs(), None);
    assert_eq!(SqliteStore::in_memory().unwrap().log_syncs(), None);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- replay

/// Counts real invocations per resource; a resource in `block` signals `blocked` and never
/// returns (the process "crashes" while it is in flight).
#[derive(Clone, Default)]
struct Counting {
    calls: Arc<Mutex<HashMap<String, usize>>>,
}

impl Counting {
    fn count(&self, function: &str) -> usize {
        self.calls.lock().unwrap().get(function).copied().unwrap_or(0)
    }

    fn handlers(&self, block: Option<&'static str>, blocked: Arc<Notify>) -> Handlers {
        let calls = Arc::clone(&self.calls);
        Handlers::new().fallback(move |resource: String, input: Value, _ctx: TaskContext| {
            let calls = Arc::clone(&calls);
            let blocked = Arc::clone(&blocked);
            async move {
                let function = resource.rsplit(':').next().unwrap_or_default().to_owned();
                *calls.lock().unwrap().entry(function.clone()).or_default() += 1;
                if block == Some(function.as_str()) {
                    blocked.notify_one();
                    futures::future::pending::<()>().await;
                }
                Ok::<Value, Failure>(json!({ "from": function, "saw": input }))
            }
        })
    }
}

/// Runs the interpreter until `block`'s handler starts, then drops the execution: what a crash
/// leaves behind is exactly what was checkpointed.
async fn crash_interp(
    workflow: &wfc_runtime::ir::Workflow,
    journal: Arc<Journal>,
    counting: &Counting,
    block: &'static str,
    input: Value,
) {
    let blocked = Arc::new(Notify::new());
    let handlers = counting.handlers(Some(block), Arc::clone(&blocked));
    let run = interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal));
    tokio::select! {
        result = run => panic!("the execution should not finish: {result:?}"),
        () = blocked.notified() => {}
    }
}

#[tokio::test]
async fn interp_resume_does_not_rerun_a_completed_task_and_reruns_the_in_flight_one() {
    let workflow = &lowered("two_steps");
    let s = store();
    let input = json!({"order": 7});
    let counting = Counting::default();
    let journal = open(&s, "order-7", workflow, &input).await;
    assert!(!journal.is_resume());
    crash_interp(workflow, journal, &counting, "Second", input.clone()).await;
    assert_eq!((counting.count("First"), counting.count("Second")), (1, 1));
    // The history of the running execution is in the store as far as its journal: Second's
    // STARTED checkpoint wrote the events up to its start (with First's outcome).
    let running = s.read_history("order-7").await.unwrap();
    let kinds: Vec<String> = running.iter().map(|e| e.event_type.to_string()).collect();
    assert_eq!(
        kinds,
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "LambdaFunctionScheduled",
            "LambdaFunctionStarted",
            "LambdaFunctionSucceeded",
            "TaskStateExited",
            "TaskStateEntered",
            "LambdaFunctionScheduled",
            "LambdaFunctionStarted"
        ]
    );

    // "Restart the process": reopen the same execution and run it to the end.
    let journal = open(&s, "order-7", workflow, &input).await;
    assert!(journal.is_resume());
    let handlers = counting.handlers(None, Arc::new(Notify::new()));
    let result = interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal)).await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!(counting.count("First"), 1, "a completed task is replayed, not re-run");
    assert_eq!(counting.count("Second"), 2, "the in-flight task runs again (at-least-once)");
    let output = result.output.unwrap();
    assert_eq!(output["first"], json!({"from": "First", "saw": {"order": 7}}));
    assert_eq!(output["second"]["from"], json!("Second"));

    // The journal says the same: First started once, Second twice.
    let ops = s.load_journal("order-7").await.unwrap();
    let by_id: HashMap<_, _> = ops.iter().map(|o| (o.id.as_str(), o)).collect();
    assert_eq!(by_id["First#1.0"].starts, 1);
    assert_eq!(by_id["Second#1.0"].starts, 2);
    assert!(ops.iter().all(|o| o.status == OpStatus::Succeeded));
    // The stored history is the resumed run's, which replays the whole execution; the events
    // the first run had written keep the instants they happened at (the replay stamps them anew).
    let history = s.read_history("order-7").await.unwrap();
    assert_eq!(unstamped(&history), unstamped(&result.history));
    assert_eq!(history[..running.len()], running[..], "the events written before the crash are kept as they were");
    assert_eq!(s.describe_execution("order-7").await.unwrap().unwrap().status, ExecutionStatus::Succeeded);

    // A finished execution is not run again.
    let opened = Journal::open(Arc::clone(&s), "order-7", &workflow.name, &input, &Clock::real()).await.unwrap();
    assert!(matches!(opened, Opened::Finished(r) if r.output == Some(output)));
}

#[tokio::test]
async fn a_resumed_history_matches_an_uninterrupted_one() {
    let workflow = &lowered("two_steps");
    let input = json!({});
    let plain = {
        let counting = Counting::default();
        let handlers = counting.handlers(None, Arc::new(Notify::new()));
        interp::run(workflow, &handlers, input.clone(), RunOptions::real()).await
    };
    let s = store();
    let counting = Counting::default();
    crash_interp(workflow, open(&s, "h", workflow, &input).await, &counting, "Second", input.clone()).await;
    let handlers = counting.handlers(None, Arc::new(Notify::new()));
    let resumed = interp::run(
        workflow,
        &handlers,
        input.clone(),
        RunOptions::real().with_journal(open(&s, "h", workflow, &input).await),
    )
    .await;
    let types = |r: &wfc_runtime::ExecutionResult| r.history.iter().map(|e| e.event_type).collect::<Vec<_>>();
    assert_eq!(types(&plain), types(&resumed));
    assert_eq!(plain.output, resumed.output);
}

#[tokio::test]
async fn parallel_branches_replay_their_completed_tasks() {
    let workflow = &lowered("fanout");
    let s = store();
    let input = json!({"n": 1});
    let counting = Counting::default();
    // Left finishes (and is checkpointed) while Right blocks; then the process dies.
    let journal = open(&s, "fan", workflow, &input).await;
    let blocked = Arc::new(Notify::new());
    let handlers = counting.handlers(Some("Right"), Arc::clone(&blocked));
    let run = interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal));
    // Boxed, so dropping it below really drops the execution (a "crash").
    let mut run = Box::pin(run);
    tokio::select! {
        result = &mut run => panic!("should block: {result:?}"),
        () = blocked.notified() => {}
    }
    // Give Left's completion checkpoint time to commit before the "crash".
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tokio::select! {
            result = &mut run => panic!("should block: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let ops = s.load_journal("fan").await.unwrap();
        if ops.iter().any(|o| o.name == "L" && o.status == OpStatus::Succeeded) {
            break;
        }
        assert!(Instant::now() < deadline, "Left never checkpointed: {ops:?}");
    }
    drop(run);
    let handlers = counting.handlers(None, Arc::new(Notify::new()));
    let result = interp::run(
        workflow,
        &handlers,
        input.clone(),
        RunOptions::real().with_journal(open(&s, "fan", workflow, &input).await),
    )
    .await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!((counting.count("Left"), counting.count("Right")), (1, 2));
    let ids: Vec<String> = s.load_journal("fan").await.unwrap().into_iter().map(|o| o.id).collect();
    assert!(ids.contains(&"Both#1.0/0/L#1.0".to_owned()), "{ids:?}");
    assert!(ids.contains(&"Both#1.0/1/R#1.0".to_owned()), "{ids:?}");
}

/// A Parallel branch whose CONTEXT finished replays from the CONTEXT's recorded result: its
/// handlers are not called and its operations are not even looked up (they are removed from
/// the resumed journal here: a branch that re-ran would call Left again, and its checkpoint of
/// the already finished step would be refused). The history still has the branch's events.
#[tokio::test]
async fn a_finished_branch_replays_from_its_context_without_running() {
    let workflow = &lowered("fanout");
    let input = json!({"n": 2});
    let plain = {
        let counting = Counting::default();
        let options = RunOptions::real().with_name("skip");
        interp::run(workflow, &counting.handlers(None, Arc::new(Notify::new())), input.clone(), options).await
    };
    let s = store();
    let counting = Counting::default();
    let journal = open(&s, "skip", workflow, &input).await;
    let blocked = Arc::new(Notify::new());
    let handlers = counting.handlers(Some("Right"), Arc::clone(&blocked));
    let mut run = Box::pin(interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal)));
    tokio::select! {
        result = &mut run => panic!("should block: {result:?}"),
        () = blocked.notified() => {}
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tokio::select! {
            result = &mut run => panic!("should block: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let ops = s.load_journal("skip").await.unwrap();
        if ops.iter().any(|o| o.id == "Both#1.0/0" && o.status == OpStatus::Succeeded) {
            break;
        }
        assert!(Instant::now() < deadline, "Left's branch never finished: {ops:?}");
    }
    drop(run);
    assert_eq!(counting.count("Left"), 1);

    let new = NewExecution {
        name: "skip".into(),
        workflow: workflow.name.clone(),
        input: input.clone(),
        start_time: "2024-01-01T00:00:00.000Z".into(),
        definition_hash: None,
        version_id: None,
    };
    let mut claim = s.open_execution(new).await.unwrap();
    let before = claim.operations.len();
    claim.operations.retain(|op| !op.id.starts_with("Both#1.0/0/"));
    assert_eq!(claim.operations.len(), before - 1, "Left's step was recorded inside its branch");
    let journal = Journal::from_claim(Arc::clone(&s), claim, None);
    let handlers = counting.handlers(None, Arc::new(Notify::new()));
    let result = interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal)).await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!((counting.count("Left"), counting.count("Right")), (1, 2), "the finished branch did not run");
    assert_eq!(result.output, plain.output);
    // The history has every event of an uninterrupted run (branches interleave, so compare as
    // multisets), numbered from 1 and chained to earlier events only.
    let types = |r: &wfc_runtime::ExecutionResult| {
        let mut t: Vec<String> = r.history.iter().map(|e| format!("{:?} {}", e.event_type, e.details)).collect();
        t.sort();
        t
    };
    assert_eq!(types(&result), types(&plain));
    for (i, e) in result.history.iter().enumerate() {
        assert_eq!(e.id, i as u64 + 1);
        assert!(e.previous_event_id < e.id, "{e:?}");
    }
    assert_eq!(unstamped(&s.read_history("skip").await.unwrap()), unstamped(&result.history));
}

/// History events without their timestamps: a replayed event is stamped anew in the run's
/// memory, while the store keeps the instant it was first written at.
fn unstamped(events: &[wfc_runtime::HistoryEvent]) -> Vec<wfc_runtime::HistoryEvent> {
    events.iter().map(|e| wfc_runtime::HistoryEvent { timestamp: Default::default(), ..e.clone() }).collect()
}

#[tokio::test]
async fn a_pending_wait_waits_only_the_remainder_and_a_fired_one_not_at_all() {
    let workflow = &lowered("nap");
    let s = store();
    let input = json!({"seconds": 2});
    // Stop the execution 1.2 s into its 2 s Wait.
    let journal = open(&s, "nap", workflow, &input).await;
    let handlers = Handlers::new();
    let run = interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal));
    assert!(tokio::time::timeout(Duration::from_millis(1200), run).await.is_err());
    let ops = s.load_journal("nap").await.unwrap();
    assert_eq!((ops[0].op_type, ops[0].status), (OpType::Wait, OpStatus::Started));
    assert!(ops[0].due_at_ms.is_some());

    let started = Instant::now();
    let result = interp::run(
        workflow,
        &handlers,
        input.clone(),
        RunOptions::real().with_journal(open(&s, "nap", workflow, &input).await),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(result.output, Some(json!({"seconds": 2, "status": "rested"})));
    assert!(took < Duration::from_millis(1700), "waited the whole delay again: {took:?}");
    assert!(took >= Duration::from_millis(500), "did not wait the remainder: {took:?}");

    // A timer that fired while the process was down does not wait again.
    let input = json!({"seconds": 1});
    let run = interp::run(
        workflow,
        &handlers,
        input.clone(),
        RunOptions::real().with_journal(open(&s, "nap2", workflow, &input).await),
    );
    assert!(tokio::time::timeout(Duration::from_millis(300), run).await.is_err());
    tokio::time::sleep(Duration::from_millis(900)).await;
    let started = Instant::now();
    let result = interp::run(
        workflow,
        &handlers,
        input.clone(),
        RunOptions::real().with_journal(open(&s, "nap2", workflow, &input).await),
    )
    .await;
    assert_eq!(result.status, Status::Succeeded);
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
}

#[test]
fn recorded_failures_replay_through_retries_on_virtual_time() {
    // Attempts 0 and 1 fail with Boom and are checkpointed; the "crash" happens during the
    // back-off before attempt 2. On resume, the failures replay (the handler is not called for
    // them), the same jittered back-off is taken, and the hour-long Wait is a durable timer too.
    let workflow = &lowered("flaky");
    let s = store();
    let calls = Arc::new(AtomicUsize::new(0));
    let handlers = {
        let calls = Arc::clone(&calls);
        Handlers::new().fallback(move |_r: String, _i: Value, _c: TaskContext| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move { if n < 2 { Err(Failure::new("Boom", format!("attempt {n}"))) } else { Ok(json!("fine")) } }
        })
    };
    let input = json!({});
    let first = wfc_runtime::block_on_virtual(async {
        let journal = open(&s, "flaky", workflow, &input).await;
        let run = interp::run(workflow, &handlers, input.clone(), RunOptions::virtual_time().with_journal(journal));
        // 60 s + 120 s of back-off: stop at 150 s of virtual time, during the second back-off.
        tokio::time::timeout(Duration::from_secs(150), run).await.is_err()
    });
    assert!(first);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let result = wfc_runtime::block_on_virtual(async {
        let journal = open(&s, "flaky", workflow, &input).await;
        interp::run(workflow, &handlers, input.clone(), RunOptions::virtual_time().with_journal(journal)).await
    });
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "only the attempt that never ran is invoked");
    // A bare Lambda function ARN: AWS records its failures as LambdaFunctionFailed.
    let failed: Vec<_> =
        result.history.iter().filter(|e| e.event_type == wfc_runtime::EventType::LambdaFunctionFailed).collect();
    assert_eq!(failed.len(), 2, "the recorded failures are part of the resumed history");
}

// ---------------------------------------------------------------- generated code

struct Shop {
    counting: Counting,
    block_second: Option<Arc<Notify>>,
}

impl two_steps::Handler for Shop {
    async fn first(&self, input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry("First".into()).or_default() += 1;
        Ok(json!({"saw": input}))
    }

    async fn second(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry("Second".into()).or_default() += 1;
        if let Some(blocked) = &self.block_second {
            blocked.notify_one();
            futures::future::pending::<()>().await;
        }
        Ok(json!("done"))
    }
}

#[tokio::test]
async fn generated_code_is_durable_through_the_same_journal() {
    let workflow = &lowered("two_steps");
    let s = store();
    let input = json!({"k": 1});
    let counting = Counting::default();
    let blocked = Arc::new(Notify::new());
    let shop = Shop { counting: counting.clone(), block_second: Some(Arc::clone(&blocked)) };
    let journal = open(&s, "gen", workflow, &input).await;
    tokio::select! {
        result = two_steps::run_with(&shop, input.clone(), RunOptions::real().with_journal(journal)) => {
            panic!("should block: {result:?}")
        }
        () = blocked.notified() => {}
    }
    let shop = Shop { counting: counting.clone(), block_second: None };
    let journal = open(&s, "gen", workflow, &input).await;
    let result = two_steps::run_with(&shop, input.clone(), RunOptions::real().with_journal(journal)).await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!((counting.count("First"), counting.count("Second")), (1, 2));
    assert_eq!(result.output, Some(json!({"k": 1, "first": {"saw": {"k": 1}}, "second": "done"})));
}

/// A `.waitForTaskToken` task's HeartbeatSeconds countdown survives a resume: a heartbeat at
/// 6 s (through the store), a "crash" at 8 s, and the resumed wait times out 10 s after that
/// heartbeat (about 16.2 s, the store being polled every 200 ms), not 10 s after the resume.
/// On virtual time; the second run's clock starts where the first one stopped.
#[test]
fn a_resumed_callback_keeps_its_heartbeat_countdown() {
    let workflow = &lowered("beat");
    let s = store();
    let input = json!({});
    let t0 = jiff::Timestamp::from_second(1_704_067_200).unwrap();
    let handlers = Handlers::new().fallback(|_r: String, _i: Value, _c: TaskContext| async { Ok(json!(null)) });
    wfc_runtime::block_on_virtual(async {
        let journal = open(&s, "beat", workflow, &input).await;
        let callbacks = wfc_runtime::Callbacks::default();
        let mut waiting = callbacks.subscribe();
        let options = RunOptions { clock: Clock::virtual_from(t0), ..RunOptions::virtual_time() }
            .with_callbacks(callbacks.clone())
            .with_journal(journal);
        let run = interp::run(workflow, &handlers, input.clone(), options);
        let beat = async {
            let task = waiting.recv().await.expect("the task waits");
            tokio::time::sleep(Duration::from_secs(6)).await;
            s.heartbeat_callback(&task.token).await.expect("the heartbeat is taken");
            tokio::time::sleep(Duration::from_secs(2)).await;
        };
        tokio::select! {
            result = run => panic!("should wait: {result:?}"),
            () = beat => {}
        }
    });
    let resumed_at = t0.checked_add(jiff::SignedDuration::from_secs(8)).unwrap();
    let result = wfc_runtime::block_on_virtual(async {
        let journal = open(&s, "beat", workflow, &input).await;
        let options =
            RunOptions { clock: Clock::virtual_from(resumed_at), ..RunOptions::virtual_time() }.with_journal(journal);
        interp::run(workflow, &handlers, input.clone(), options).await
    });
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.error.as_ref().map(|f| f.error.as_str()), Some("States.Timeout"), "{:?}", result.error);
    let timed_out = result
        .history
        .iter()
        .find(|e| e.event_type == wfc_runtime::EventType::TaskTimedOut)
        .expect("a TaskTimedOut event");
    let at: jiff::Timestamp = timed_out.timestamp.parse().unwrap();
    let after = at.duration_since(t0);
    assert!(
        after >= jiff::SignedDuration::from_secs(16) && after < jiff::SignedDuration::from_secs(17),
        "timed out {after:?} after the start, at {}; the heartbeat at 6 s should have set the deadline to 16 s",
        timed_out.timestamp
    );
}

/// Concurrent Map iterations' checkpoints share commits when batching is on (STARTEDs queued
/// while another commit holds the token go in the next one, with the deferred outcomes and
/// CONTEXTs): far fewer commits than one per checkpoint, same output and journal.
#[tokio::test]
async fn concurrent_checkpoints_share_commits() {
    let workflow = &lowered("fan8");
    let s = store();
    let input = json!({"items": [1, 2, 3, 4, 5, 6, 7, 8]});
    let mut seen = Vec::new();
    for (name, batching) in [("alone", false), ("shared", true)] {
        let counting = Counting::default();
        let journal = open(&s, name, workflow, &input).await;
        journal.set_batching(batching);
        let handlers = counting.handlers(None, Arc::new(Notify::new()));
        let result = interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal)).await;
        assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
        assert_eq!(counting.count("Work"), 8);
        let commits = s.describe_execution(name).await.unwrap().unwrap().checkpoint_seq;
        let ops = s.load_journal(name).await.unwrap();
        assert_eq!(ops.len(), 1 + 8 * 2, "the Map's CONTEXT, each iteration's and its step: {ops:?}");
        assert!(ops.iter().all(|o| o.status == OpStatus::Succeeded && o.starts == 1), "{ops:?}");
        seen.push((commits, result.output));
    }
    assert_eq!(seen[0].1, seen[1].1);
    println!("Map of 8 Tasks: {} commits alone, {} shared", seen[0].0, seen[1].0);
    assert!(seen[1].0 * 3 < seen[0].0, "commits alone {} and shared {}", seen[0].0, seen[1].0);
}

/// An execution ends in one commit: its last step's deferred outcome, its last history events
/// and its end together (`Store::finish_with_updates`), not a flush of the outcome and then the
/// finish. Two Tasks: the first's STARTED, its outcome with the second's STARTED, then the end.
#[tokio::test]
async fn an_execution_ends_in_one_commit_with_its_last_outcome() {
    let workflow = &lowered("two_steps");
    let s = store();
    let input = json!({"order": 1});
    let counting = Counting::default();
    let journal = open(&s, "one-end", workflow, &input).await;
    let handlers = counting.handlers(None, Arc::new(Notify::new()));
    let result = interp::run(workflow, &handlers, input.clone(), RunOptions::real().with_journal(journal)).await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let record = s.describe_execution("one-end").await.unwrap().unwrap();
    assert_eq!(record.status, ExecutionStatus::Succeeded);
    assert_eq!(record.checkpoint_seq, 3, "commits: STARTED, outcome + STARTED, outcome + end");
    let ops = s.load_journal("one-end").await.unwrap();
    assert!(ops.iter().all(|o| o.status == OpStatus::Succeeded && o.starts == 1), "{ops:?}");
    let stored: Vec<u64> = s.read_history("one-end").await.unwrap().iter().map(|e| e.id).collect();
    assert_eq!(stored, result.history.iter().map(|e| e.id).collect::<Vec<_>>());
}

// ---------------------------------------------------------------- redrive

/// `Second` fails until `fixed` is set; each call is counted.
struct Redrivable {
    counting: Counting,
    fixed: bool,
}

impl two_steps::Handler for Redrivable {
    async fn first(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry("First".into()).or_default() += 1;
        Ok(json!("first"))
    }

    async fn second(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry("Second".into()).or_default() += 1;
        if self.fixed { Ok(json!("second")) } else { Err(Failure::new("Not.Fixed", "not fixed yet")) }
    }
}

/// RedriveExecution through the journal, on both engines: a redriven execution replays the Task
/// that succeeded, runs the failed one again (a new generation each redrive), records its
/// earlier ending and `ExecutionRedriven`, and only FAILED/TIMED_OUT/ABORTED ones are redriven.
#[tokio::test]
async fn a_redriven_execution_reruns_only_the_failed_task_on_both_engines() {
    let workflow = &lowered("two_steps");
    let s = store();
    let input = json!({});
    for engine in ["interp", "generated"] {
        let name = format!("redrive-{engine}");
        let counting = Counting::default();
        let run = |fixed: bool, journal: Arc<Journal>| {
            let counting = counting.clone();
            async move {
                let handler = Redrivable { counting: counting.clone(), fixed };
                if engine == "interp" {
                    let handlers = Handlers::new().fallback(move |resource: String, input: Value, ctx: TaskContext| {
                        let handler = Redrivable { counting: counting.clone(), fixed };
                        async move {
                            use two_steps::Handler;
                            if resource.ends_with(":First") {
                                handler.first(input, ctx).await
                            } else {
                                handler.second(input, ctx).await
                            }
                        }
                    });
                    interp::run(workflow, &handlers, json!({}), RunOptions::real().with_journal(journal)).await
                } else {
                    two_steps::run_with(&handler, json!({}), RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let result = run(false, open(&s, &name, workflow, &input).await).await;
        assert_eq!(result.status, Status::Failed, "{engine}");
        // Only an ended, unsuccessful execution is redriven.
        let redriven = s.redrive_execution(&name).await.unwrap();
        assert_eq!((redriven.status, redriven.redrive_count), (ExecutionStatus::Running, 1), "{engine}");
        assert!(matches!(s.redrive_execution(&name).await, Err(StoreError::InvalidUpdate { .. })), "{engine}");
        let result = run(false, open(&s, &name, workflow, &input).await).await;
        assert_eq!(result.status, Status::Failed, "{engine}");
        assert_eq!((counting.count("First"), counting.count("Second")), (1, 2), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let result = run(true, open(&s, &name, workflow, &input).await).await;
        assert_eq!(result.status, Status::Succeeded, "{engine}: {:?}", result.error);
        assert_eq!(result.output, Some(json!({"first": "first", "second": "second"})), "{engine}");
        assert_eq!((counting.count("First"), counting.count("Second")), (1, 3), "{engine}");
        let kinds: Vec<&str> = result.history.iter().map(|e| e.event_type.name()).collect();
        let redrives: Vec<&Value> = result
            .history
            .iter()
            .filter(|e| e.event_type.name() == "ExecutionRedriven")
            .map(|e| &e.details["redriveCount"])
            .collect();
        assert_eq!(redrives, [&json!(1), &json!(2)], "{engine}: {kinds:?}");
        assert_eq!(kinds.iter().filter(|k| **k == "ExecutionFailed").count(), 2, "{engine}: {kinds:?}");
        assert_eq!(kinds.last(), Some(&"ExecutionSucceeded"), "{engine}");
        // The journal: the failed attempt of each generation, then the successful one.
        let ops = s.load_journal(&name).await.unwrap();
        let status: HashMap<&str, OpStatus> = ops.iter().map(|o| (o.id.as_str(), o.status)).collect();
        assert_eq!(status["First#1.0"], OpStatus::Succeeded, "{engine}");
        assert_eq!(
            (status["Second#1.0"], status["Second#1!1.0"], status["Second#1!2.0"]),
            (OpStatus::Failed, OpStatus::Failed, OpStatus::Succeeded),
            "{engine}"
        );
        let record = s.describe_execution(&name).await.unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (ExecutionStatus::Succeeded, 2), "{engine}");
        assert!(record.redrive_date_ms.is_some(), "{engine}");
        assert!(matches!(s.redrive_execution(&name).await, Err(StoreError::InvalidUpdate { .. })), "{engine}");
    }
    assert!(matches!(s.redrive_execution("nobody").await, Err(StoreError::NotFound(_))));
}

/// `Right` fails until `right_fixed`, `Item` fails on item 2 until `item_fixed`; each call is
/// counted (`Item` per item: `Item2`).
#[derive(Clone)]
struct NestedRedrivable {
    counting: Counting,
    right_fixed: bool,
    item_fixed: bool,
}

impl NestedRedrivable {
    fn called(&self, function: &str) {
        *self.counting.calls.lock().unwrap().entry(function.into()).or_default() += 1;
    }
}

impl redrive_nested::Handler for NestedRedrivable {
    async fn left(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        self.called("Left");
        Ok(json!("left"))
    }

    async fn right(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        self.called("Right");
        // Left's branch finishes first (its handler returns at once; a few polls finish its
        // branch), so the failure finds it SUCCEEDED rather than cancelling it.
        while self.counting.count("Left") == 0 {
            tokio::task::yield_now().await;
        }
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        if self.right_fixed { Ok(json!("right")) } else { Err(Failure::new("Right.Broken", "not fixed yet")) }
    }

    async fn item(&self, input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        self.called(&format!("Item{input}"));
        match input.as_i64() {
            Some(2) if !self.item_fixed => Err(Failure::new("Item.Broken", "item 2 is not fixed yet")),
            _ => Ok(json!({ "item": input })),
        }
    }
}

/// RedriveExecution of failures inside a Parallel branch and a Map iteration, on both engines:
/// the failed branch's and iteration's Tasks run again, the succeeded branch and iteration
/// replay their results (their Tasks do not run), the iteration the failure kept from starting
/// runs, and the history is the earlier one (unchanged), then `ExecutionRedriven`, then the
/// rerun's events.
#[tokio::test]
async fn a_redrive_reruns_only_the_failed_parallel_branch_and_map_iteration_on_both_engines() {
    let workflow = &lowered("redrive_nested");
    let s = store();
    let input = json!({"items": [1, 2, 3]});
    for engine in ["interp", "generated"] {
        let name = format!("redrive-nested-{engine}");
        let counting = Counting::default();
        let run = |right_fixed: bool, item_fixed: bool, journal: Arc<Journal>| {
            let handler = NestedRedrivable { counting: counting.clone(), right_fixed, item_fixed };
            let input = input.clone();
            async move {
                if engine == "interp" {
                    let handlers = Handlers::new().fallback(move |resource: String, input: Value, ctx: TaskContext| {
                        let handler = handler.clone();
                        async move {
                            use redrive_nested::Handler;
                            match resource.rsplit(':').next() {
                                Some("Left") => handler.left(input, ctx).await,
                                Some("Right") => handler.right(input, ctx).await,
                                _ => handler.item(input, ctx).await,
                            }
                        }
                    });
                    interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_nested::run_with(&handler, input, RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let calls = |c: &Counting| ["Left", "Right", "Item1", "Item2", "Item3"].map(|f| c.count(f));
        let kinds = |r: &wfc_runtime::ExecutionResult| -> Vec<String> {
            r.history.iter().map(|e| format!("{} {}", e.event_type.name(), e.details)).collect()
        };
        // Right fails: the Parallel fails, Left succeeded.
        let first = run(false, false, open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.status, Status::Failed, "{engine}");
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("Right.Broken"), "{engine}");
        assert_eq!(calls(&counting), [1, 1, 0, 0, 0], "{engine}");
        // Redriven: only Right runs again; then item 2 fails (item 3 never started).
        s.redrive_execution(&name).await.unwrap();
        let second = run(true, false, open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.status, Status::Failed, "{engine}: {:?}", second.error);
        assert_eq!(second.error.as_ref().map(|f| f.error.as_str()), Some("Item.Broken"), "{engine}");
        assert_eq!(calls(&counting), [1, 2, 1, 1, 0], "{engine}");
        // Redriven again: item 2 runs again and item 3 for the first time; nothing else runs.
        s.redrive_execution(&name).await.unwrap();
        let third = run(true, true, open(&s, &name, workflow, &input).await).await;
        assert_eq!(third.status, Status::Succeeded, "{engine}: {:?}", third.error);
        assert_eq!(calls(&counting), [1, 2, 1, 2, 1], "{engine}");
        assert_eq!(
            third.output,
            Some(json!({
                "items": [1, 2, 3],
                "fan": ["left", "right"],
                "each": [{"item": 1}, {"item": 2}, {"item": 3}],
            })),
            "{engine}"
        );
        // The history: each run's is the previous one's, then `ExecutionRedriven`, then what ran.
        let (first, second, third) = (kinds(&first), kinds(&second), kinds(&third));
        assert_eq!(second[..first.len()], first[..], "{engine}");
        assert_eq!(third[..second.len()], second[..], "{engine}");
        assert!(second[first.len()].starts_with("ExecutionRedriven {\"redriveCount\":1}"), "{engine}: {second:#?}");
        assert!(third[second.len()].starts_with("ExecutionRedriven {\"redriveCount\":2}"), "{engine}: {third:#?}");
        let count = |history: &[String], prefix: &str| history.iter().filter(|e| e.starts_with(prefix)).count();
        assert_eq!(
            [
                "LambdaFunctionScheduled",
                "ParallelStateFailed",
                "MapStateFailed",
                "ExecutionFailed",
                "MapIterationStarted"
            ]
            .map(|kind| count(&third, kind)),
            // Item 2's iteration starts again when the second redrive reruns it.
            [1 + 2 + 4, 1, 1, 2, 4],
            "{engine}: {third:#?}"
        );
        // What the store keeps is the run's history.
        let stored: Vec<String> = s
            .read_history(&name)
            .await
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e.event_type.name(), e.details))
            .collect();
        assert_eq!(stored, third, "{engine}");
        let ops = s.load_journal(&name).await.unwrap();
        assert!(ops.iter().all(|o| o.status != OpStatus::Started), "{engine}: {ops:?}");
    }
}

/// `L2` never ends and `Right` fails once `L2` runs, until `fixed`; each call is counted.
#[derive(Clone)]
struct CancelledRedrivable {
    counting: Counting,
    fixed: bool,
}

impl CancelledRedrivable {
    async fn call(&self, function: &str) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry(function.into()).or_default() += 1;
        match function {
            // Right's failure cancels L2's branch while L2 runs.
            "L2" if !self.fixed => futures::future::pending().await,
            "Right" if !self.fixed => {
                while self.counting.count("L2") == 0 {
                    tokio::task::yield_now().await;
                }
                Err(Failure::new("Right.Broken", "not fixed yet"))
            }
            other => Ok(json!(other)),
        }
    }
}

impl redrive_cancelled::Handler for CancelledRedrivable {
    async fn l1(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        self.call("L1").await
    }

    async fn l2(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        self.call("L2").await
    }

    async fn right(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        self.call("Right").await
    }
}

/// RedriveExecution of a Parallel branch that another's failure cancelled in flight, on both
/// engines: Left's `L1` had finished and `L2` was running when `Right` failed. Redriven, `L1`
/// replays its result without running and without recording its events again (they are among
/// the reopened attempt's), `L2` and `Right` run again, and the history records each of `L1`'s
/// events once.
#[tokio::test]
async fn a_redrive_replays_the_finished_tasks_of_a_cancelled_branch_silently() {
    let workflow = &lowered("redrive_cancelled");
    let s = store();
    let input = json!({});
    for engine in ["interp", "generated"] {
        let name = format!("redrive-cancelled-{engine}");
        let counting = Counting::default();
        let run = |fixed: bool, journal: Arc<Journal>| {
            let handler = CancelledRedrivable { counting: counting.clone(), fixed };
            let input = input.clone();
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |resource: String, _input: Value, _ctx: TaskContext| {
                            let handler = handler.clone();
                            async move { handler.call(resource.rsplit(':').next().unwrap_or_default()).await }
                        });
                    interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_cancelled::run_with(&handler, input, RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let kinds = |r: &wfc_runtime::ExecutionResult| -> Vec<String> {
            r.history.iter().map(|e| format!("{} {}", e.event_type.name(), e.details)).collect()
        };
        let calls = |c: &Counting| ["L1", "L2", "Right"].map(|f| c.count(f));
        let first = run(false, open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("Right.Broken"), "{engine}");
        assert_eq!(calls(&counting), [1, 1, 1], "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(true, open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.status, Status::Succeeded, "{engine}: {:?}", second.error);
        assert_eq!(second.output, Some(json!(["L2", "Right"])), "{engine}");
        assert_eq!(calls(&counting), [1, 2, 2], "{engine}");
        let (first, second) = (kinds(&first), kinds(&second));
        assert_eq!(second[..first.len()], first[..], "{engine}");
        // As AWS's redrive: the first run's events once, then `ExecutionRedriven`, then what the
        // redrive ran (the cancelled branch gone live again records only what it runs again).
        assert!(second[first.len()].starts_with("ExecutionRedriven"), "{engine}: {second:#?}");
        // L1 ran once: its events are recorded once; L2 and Right were scheduled in each run.
        let scheduled = |function: &str| {
            let resource = format!("function:{function}\"");
            second.iter().filter(|e| e.starts_with("LambdaFunctionScheduled") && e.contains(&resource)).count()
        };
        assert_eq!(["L1", "L2", "Right"].map(scheduled), [1, 2, 2], "{engine}: {second:#?}");
        let succeeded = |function: &str| {
            let output = format!("\"{function}\"");
            second.iter().filter(|e| e.starts_with("LambdaFunctionSucceeded") && e.contains(&output)).count()
        };
        assert_eq!(["L1", "L2", "Right"].map(succeeded), [1, 1, 1], "{engine}: {second:#?}");
        let stored: Vec<String> = s
            .read_history(&name)
            .await
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e.event_type.name(), e.details))
            .collect();
        assert_eq!(stored, second, "{engine}");
    }
}

/// As above, the branch cancelled during a Wait (interp; the Wait's code is the engines'
/// shared `exec.rs`): `Right` fails once `Pause`'s timer is journaled. Redriven, `L1` replays
/// silently, `Pause` waits again (1 s) and records from its end, `L2` runs for the first time.
#[tokio::test]
async fn a_redrive_reruns_the_wait_a_cancelled_branch_was_in() {
    let workflow = &lowered("redrive_cancelled_wait");
    let s = store();
    let input = json!({});
    let name = "redrive-cancelled-wait";
    let counting = Counting::default();
    let run = |fixed: bool, journal: Arc<Journal>| {
        let counting = counting.clone();
        let store = Arc::clone(&s);
        let handlers = Handlers::new().fallback(move |resource: String, _input: Value, _ctx: TaskContext| {
            let counting = counting.clone();
            let store = Arc::clone(&store);
            async move {
                let function = resource.rsplit(':').next().unwrap_or_default().to_owned();
                *counting.calls.lock().unwrap().entry(function.clone()).or_default() += 1;
                if function == "Right" && !fixed {
                    // Fails once Left's branch is in its Wait (the timer journaled STARTED).
                    loop {
                        let ops = store.load_journal(name).await.unwrap();
                        if ops.iter().any(|o| o.op_type == OpType::Wait && o.status == OpStatus::Started) {
                            break;
                        }
                        tokio::task::yield_now().await;
                    }
                    return Err(Failure::new("Right.Broken", "not fixed yet"));
                }
                Ok(json!(function))
            }
        });
        let input = input.clone();
        async move { interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await }
    };
    let kinds = |r: &wfc_runtime::ExecutionResult| -> Vec<String> {
        r.history.iter().map(|e| format!("{} {}", e.event_type.name(), e.details)).collect()
    };
    let first = run(false, open(&s, name, workflow, &input).await).await;
    assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("Right.Broken"));
    s.redrive_execution(name).await.unwrap();
    let second = run(true, open(&s, name, workflow, &input).await).await;
    assert_eq!(second.status, Status::Succeeded, "{:?}", second.error);
    assert_eq!(second.output, Some(json!(["L2", "Right"])));
    assert_eq!(["L1", "L2", "Right"].map(|f| counting.count(f)), [1, 1, 2]);
    let (first, second) = (kinds(&first), kinds(&second));
    assert_eq!(second[..first.len()], first[..]);
    // The first run's events once, then `ExecutionRedriven`, then what the redrive ran.
    assert!(second[first.len()].starts_with("ExecutionRedriven"), "{second:#?}");
    assert_eq!(second.iter().filter(|e| e.starts_with("ExecutionRedriven")).count(), 1, "{second:#?}");
    let count = |prefix: &str| second.iter().filter(|e| e.starts_with(prefix)).count();
    // L1's events once; Pause entered in the first run, exited in the redrive; L2 entered once
    // and R once (its rerun records from its scheduling on).
    assert_eq!(
        ["LambdaFunctionScheduled", "WaitStateEntered", "WaitStateExited", "TaskStateEntered"].map(count),
        [1 + 1 + 2, 1, 1, 1 + 1 + 1],
        "{second:#?}"
    );
    let stored: Vec<String> =
        s.read_history(name).await.unwrap().iter().map(|e| format!("{} {}", e.event_type.name(), e.details)).collect();
    assert_eq!(stored, second);
}

/// `Get` answers `{}` until `answer` is set, then `{"value": answer}`; its calls are counted.
#[derive(Clone)]
struct StatelessRedrivable {
    counting: Counting,
    answer: Option<i64>,
}

impl StatelessRedrivable {
    async fn get(&self) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry("Get".into()).or_default() += 1;
        Ok(self.answer.map_or(json!({}), |v| json!({ "value": v })))
    }
}

impl redrive_stateless::Handler for StatelessRedrivable {
    async fn get(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        StatelessRedrivable::get(self).await
    }
}

/// RedriveExecution of failures without a failed Task attempt, as AWS documents them
/// ("Redrive behavior of individual states"), in a Map iteration on both engines. A Task whose
/// result processing failed (Get's ResultSelector: a path error after the Task succeeded) is the
/// unsuccessful state: the redrive schedules and starts it again (Task: "Schedules and starts
/// the Task state again"). A Fail state: the redrive re-enters it and the execution fails again
/// ("Reenters the Fail state and fails again"), the Choice before it reevaluated ("Reevaluates
/// the Choice state rules") on Get's recorded result (Get does not run again).
#[tokio::test]
async fn a_redrive_reruns_a_task_whose_result_failed_and_reenters_a_fail_state() {
    let workflow = &lowered("redrive_stateless");
    let s = store();
    let input = json!({"items": [{"id": 1}]});
    for engine in ["interp", "generated"] {
        let name = format!("redrive-stateless-{engine}");
        let counting = Counting::default();
        let run = |answer: Option<i64>, journal: Arc<Journal>| {
            let handler = StatelessRedrivable { counting: counting.clone(), answer };
            let input = input.clone();
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, _input: Value, _ctx: TaskContext| {
                            let handler = handler.clone();
                            async move { StatelessRedrivable::get(&handler).await }
                        });
                    interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_stateless::run_with(&handler, input, RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let kinds = |r: &wfc_runtime::ExecutionResult| -> Vec<String> {
            r.history.iter().map(|e| format!("{} {}", e.event_type.name(), e.details)).collect()
        };
        let first = run(None, open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(Some(2), open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.error.as_ref().map(|f| f.error.as_str()), Some("Item.Stopped"), "{engine}");
        assert_eq!(counting.count("Get"), 2, "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let third = run(Some(1), open(&s, &name, workflow, &input).await).await;
        assert_eq!(third.error.as_ref().map(|f| f.error.as_str()), Some("Item.Stopped"), "{engine}");
        assert_eq!(counting.count("Get"), 2, "{engine}");
        let (first, second, third) = (kinds(&first), kinds(&second), kinds(&third));
        assert_eq!(second[..first.len()], first[..], "{engine}");
        assert_eq!(third[..second.len()], second[..], "{engine}");
        let types = |events: &[String]| -> Vec<String> {
            events.iter().map(|e| e.split_once(' ').map_or(e.as_str(), |(t, _)| t).to_owned()).collect()
        };
        // The first redrive: how the execution ended, its redrive, then the iteration started
        // again and Get scheduled again (its result processed with the state's input:
        // ResultPath keeps the item).
        assert_eq!(
            types(&second[first.len()..first.len() + 5]),
            [
                "ExecutionRedriven",
                "MapIterationStarted",
                "LambdaFunctionScheduled",
                "LambdaFunctionStarted",
                "LambdaFunctionSucceeded"
            ],
            "{engine}: {second:#?}"
        );
        let exited = second.iter().find(|e| e.starts_with("TaskStateExited")).unwrap();
        assert!(exited.contains(r#""got":{"v":2}"#) && exited.contains(r#""id":1"#), "{engine}: {exited}");
        // The second: the iteration started again, the Fail state re-entered, failing the
        // iteration, the Map and the execution again.
        assert_eq!(
            types(&third[second.len()..]),
            [
                "ExecutionRedriven",
                "MapIterationStarted",
                "FailStateEntered",
                "MapIterationFailed",
                "MapStateFailed",
                "ExecutionFailed"
            ],
            "{engine}: {third:#?}"
        );
        let stored: Vec<String> = s
            .read_history(&name)
            .await
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e.event_type.name(), e.details))
            .collect();
        assert_eq!(stored, third, "{engine}");
    }
}

/// A Map iteration whose Pass state fails by a path error (Bad's Parameters), redriven, on both
/// engines: the iteration is reopened and replays Get's result; the path error fails it again
/// and the history re-enters Bad (`PassStateEntered`), its failure naming that new Entered
/// event, as a Fail state is re-entered above.
#[tokio::test]
async fn a_redrive_reenters_a_state_failing_by_a_path_error_in_a_map_iteration() {
    let workflow = &lowered("redrive_stateless");
    let s = store();
    let input = json!({"items": [{"id": 1}]});
    for engine in ["interp", "generated"] {
        let name = format!("redrive-path-{engine}");
        let counting = Counting::default();
        let run = |journal: Arc<Journal>| {
            let handler = StatelessRedrivable { counting: counting.clone(), answer: Some(3) };
            let input = input.clone();
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, _input: Value, _ctx: TaskContext| {
                            let handler = handler.clone();
                            async move { StatelessRedrivable::get(&handler).await }
                        });
                    interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_stateless::run_with(&handler, input, RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let first = run(open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        assert_eq!(counting.count("Get"), 1, "{engine}");
        let (first, second) = (&first.history, &second.history);
        assert_eq!(unstamped(&second[..first.len()]), unstamped(first), "{engine}");
        let tail: Vec<&str> = second[first.len()..].iter().map(|e| e.event_type.name()).collect();
        assert_eq!(
            tail,
            [
                "ExecutionRedriven",
                "MapIterationStarted",
                "PassStateEntered",
                "MapIterationFailed",
                "MapStateFailed",
                "ExecutionFailed"
            ],
            "{engine}"
        );
        // The rerun iteration starts again (its index, after the redrive), and its events chain
        // from that start.
        let (redriven, restarted) = (&second[first.len()], &second[first.len() + 1]);
        assert_eq!(restarted.details, json!({"name": "Each", "index": 0}), "{engine}");
        assert_eq!(restarted.previous_event_id, redriven.id, "{engine}");
        let entered = &second[first.len() + 2];
        assert_eq!(entered.previous_event_id, restarted.id, "{engine}");
        assert_eq!(entered.details["name"], json!("Bad"), "{engine}");
        // The failure names its state's new entry (the first run's named the first).
        let cause = |e: &wfc_runtime::HistoryEvent| e.details["cause"].as_str().unwrap_or_default().to_owned();
        let again = format!("(entered at the event id #{})", entered.id);
        let last = second.last().unwrap();
        assert!(cause(last).contains(&again), "{engine}: {}", cause(last));
        assert!(!cause(first.last().unwrap()).contains(&again), "{engine}");
        let stored = s.read_history(&name).await.unwrap();
        assert_eq!(unstamped(&stored), unstamped(second), "{engine}");
    }
}

/// `Get` fails until `answer` is set, then answers `{"value": answer}`; its calls are counted.
#[derive(Clone)]
struct TopRedrivable {
    counting: Counting,
    answer: Option<i64>,
}

impl TopRedrivable {
    async fn get(&self) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry("Get".into()).or_default() += 1;
        match self.answer {
            Some(v) => Ok(json!({ "value": v })),
            None => Err(Failure::new("Get.Broken", "no value yet")),
        }
    }
}

impl redrive_top::Handler for TopRedrivable {
    async fn get(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        TopRedrivable::get(self).await
    }
}

/// RedriveExecution of failures re-entered at the top level, on both engines, as AWS's
/// "Redrive behavior of individual states" and its histories have them: each redrive records
/// `ExecutionRedriven`, the state entered again and its failure, then `ExecutionFailed`.
/// Execution `fail`: Get fails, is run again by the first redrive and leads to the Fail state
/// Stop (entered once: that redrive's `ExecutionRedriven` is Get's); the second redrive
/// re-enters Stop. Execution `path`: Pick's Parameters fail by a path error; redriven, Pick is
/// re-entered and the failure names its new Entered event.
#[tokio::test]
async fn a_redrive_reenters_a_top_level_state_that_fails_again() {
    let workflow = &lowered("redrive_top");
    let s = store();
    let input = json!({});
    for engine in ["interp", "generated"] {
        let counting = Counting::default();
        let run = |answer: Option<i64>, journal: Arc<Journal>| {
            let handler = TopRedrivable { counting: counting.clone(), answer };
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, _input: Value, _ctx: TaskContext| {
                            let handler = handler.clone();
                            async move { TopRedrivable::get(&handler).await }
                        });
                    interp::run(workflow, &handlers, json!({}), RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_top::run_with(&handler, json!({}), RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let types = |events: &[wfc_runtime::HistoryEvent]| -> Vec<&'static str> {
            events.iter().map(|e| e.event_type.name()).collect()
        };
        let redriven = |events: &[wfc_runtime::HistoryEvent]| -> Vec<Value> {
            events
                .iter()
                .filter(|e| e.event_type.name() == "ExecutionRedriven")
                .map(|e| e.details["redriveCount"].clone())
                .collect()
        };

        let name = format!("redrive-top-fail-{engine}");
        let first = run(None, open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("Get.Broken"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(Some(5), open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.error.as_ref().map(|f| f.error.as_str()), Some("Top.Stopped"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let third = run(Some(5), open(&s, &name, workflow, &input).await).await;
        assert_eq!(third.error.as_ref().map(|f| f.error.as_str()), Some("Top.Stopped"), "{engine}");
        assert_eq!(counting.count("Get"), 2, "{engine}");
        let (first, second, third) = (&first.history, &second.history, &third.history);
        assert_eq!(unstamped(&second[..first.len()]), unstamped(first), "{engine}");
        assert_eq!(unstamped(&third[..second.len()]), unstamped(second), "{engine}");
        assert_eq!(redriven(second), [json!(1)], "{engine}: {:?}", types(second));
        assert_eq!(types(&second[second.len() - 2..]), ["FailStateEntered", "ExecutionFailed"], "{engine}");
        assert_eq!(
            types(&third[second.len()..]),
            ["ExecutionRedriven", "FailStateEntered", "ExecutionFailed"],
            "{engine}: {:?}",
            types(third)
        );
        assert_eq!(redriven(third), [json!(1), json!(2)], "{engine}");
        assert_eq!(unstamped(&s.read_history(&name).await.unwrap()), unstamped(third), "{engine}");
        let record = s.describe_execution(&name).await.unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (ExecutionStatus::Failed, 2), "{engine}");

        let name = format!("redrive-top-path-{engine}");
        let first = run(Some(2), open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(Some(2), open(&s, &name, workflow, &input).await).await;
        s.redrive_execution(&name).await.unwrap();
        let third = run(Some(2), open(&s, &name, workflow, &input).await).await;
        assert_eq!(counting.count("Get"), 3, "{engine}");
        let (first_error, third_error) = (first.error.clone().unwrap(), third.error.clone().unwrap());
        let (first, second, third) = (&first.history, &second.history, &third.history);
        assert_eq!(unstamped(&second[..first.len()]), unstamped(first), "{engine}");
        assert_eq!(unstamped(&third[..second.len()]), unstamped(second), "{engine}");
        assert_eq!(
            types(&third[first.len()..]),
            [
                "ExecutionRedriven",
                "PassStateEntered",
                "ExecutionFailed",
                "ExecutionRedriven",
                "PassStateEntered",
                "ExecutionFailed"
            ],
            "{engine}: {:?}",
            types(third)
        );
        assert_eq!(redriven(third), [json!(1), json!(2)], "{engine}");
        // Each failure names its own entry of Pick.
        let entered = |at: usize| format!("(entered at the event id #{})", third[at].id);
        let cause = |at: usize| third[at].details["cause"].as_str().unwrap_or_default().to_owned();
        assert!(cause(first.len() - 1).contains(&entered(first.len() - 2)), "{engine}: {}", cause(first.len() - 1));
        assert!(cause(first.len() + 2).contains(&entered(first.len() + 1)), "{engine}: {}", cause(first.len() + 2));
        assert!(cause(third.len() - 1).contains(&entered(third.len() - 2)), "{engine}: {}", cause(third.len() - 1));
        assert_eq!(third_error.cause, cause(third.len() - 1), "{engine}");
        assert_ne!(third_error.cause, first_error.cause, "{engine}");
        let record = s.describe_execution(&name).await.unwrap().unwrap();
        assert_eq!(record.cause.as_deref(), Some(third_error.cause.as_str()), "{engine}");
        assert_eq!(unstamped(&s.read_history(&name).await.unwrap()), unstamped(third), "{engine}");

        // A redrive stopped before its replay reached the failure (here before anything ran):
        // the stop adds that redrive's `ExecutionRedriven` before its `ExecutionAborted` (AWS
        // appends it at the redrive), and the next redrive re-enters the state after the
        // stop's events, as redrive 2, its cause naming the re-entry by its stored id.
        let name = format!("redrive-top-cut-short-{engine}");
        let first = run(Some(2), open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        s.stop_execution(&name, None, None).await.unwrap();
        s.redrive_execution(&name).await.unwrap();
        let third = run(Some(2), open(&s, &name, workflow, &input).await).await;
        let third_error = third.error.clone().unwrap();
        let first = &first.history;
        let stored = s.read_history(&name).await.unwrap();
        assert_eq!(unstamped(&stored[..first.len()]), unstamped(first), "{engine}");
        assert_eq!(
            types(&stored[first.len()..]),
            ["ExecutionRedriven", "ExecutionAborted", "ExecutionRedriven", "PassStateEntered", "ExecutionFailed"],
            "{engine}: {:?}",
            types(&stored)
        );
        assert_eq!(redriven(&stored), [json!(1), json!(2)], "{engine}");
        let entered = format!("(entered at the event id #{})", stored[stored.len() - 2].id);
        assert!(third_error.cause.contains(&entered), "{engine}: {} lacks {entered}", third_error.cause);
        assert_eq!(stored[stored.len() - 1].details["cause"], json!(third_error.cause), "{engine}");
        let record = s.describe_execution(&name).await.unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (ExecutionStatus::Failed, 2), "{engine}");
    }
}

/// A redriven run cut short by the execution's TimeoutSeconds before its replay reached the
/// failure it redrove (here before anything ran: the run's machine never ends, its timeout is
/// a second), on both engines: the stored history keeps the run before the redrive whole, then
/// that redrive's `ExecutionRedriven` and the `ExecutionTimedOut`, as AWS appends the event at
/// the redrive (without it the timeout's end replaced the stored events after the replayed
/// ones, `ExecutionFailed` included, and the redrive had no event). The next redrive re-enters
/// Pick as redrive 2, after the store's events, its cause naming the re-entry by its stored id.
/// Then a stopped redrive as histories stored before stops added the redrive they cut short
/// have it (`ExecutionFailed`, `ExecutionAborted`, then the next redrive's event): the next
/// redrive still names its re-entry by its stored id.
#[tokio::test]
async fn a_redrive_after_a_cut_short_run_reenters_at_the_stored_ids() {
    let workflow = &lowered("redrive_top");
    let s = store();
    let input = json!({});
    for engine in ["interp", "generated"] {
        let run = |journal: Arc<Journal>| {
            let handler = TopRedrivable { counting: Counting::default(), answer: Some(2) };
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, _input: Value, _ctx: TaskContext| {
                            let handler = handler.clone();
                            async move { TopRedrivable::get(&handler).await }
                        });
                    interp::run(workflow, &handlers, json!({}), RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_top::run_with(&handler, json!({}), RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let types = |events: &[wfc_runtime::HistoryEvent]| -> Vec<&'static str> {
            events.iter().map(|e| e.event_type.name()).collect()
        };
        let redriven = |events: &[wfc_runtime::HistoryEvent]| -> Vec<Value> {
            events
                .iter()
                .filter(|e| e.event_type.name() == "ExecutionRedriven")
                .map(|e| e.details["redriveCount"].clone())
                .collect()
        };
        // The re-entry's cause names the stored id of the re-entered `PassStateEntered`.
        let names_its_entry = |stored: &[wfc_runtime::HistoryEvent], error: &Failure| {
            let entered = format!("(entered at the event id #{})", stored[stored.len() - 2].id);
            assert!(error.cause.contains(&entered), "{engine}: {} lacks {entered}", error.cause);
            assert_eq!(stored[stored.len() - 1].details["cause"], json!(error.cause), "{engine}");
        };

        let name = format!("redrive-top-timed-out-{engine}");
        let first = run(open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let journal = open(&s, &name, workflow, &input).await;
        let exec = wfc_runtime::Execution::start(&workflow.name, &input, RunOptions::real().with_journal(journal));
        let cut_short = exec.finish(Some(1), std::future::pending::<Result<Value, Failure>>()).await;
        assert_eq!(cut_short.status, Status::TimedOut, "{engine}");
        let first = &first.history;
        let stored = s.read_history(&name).await.unwrap();
        assert!(stored.len() > first.len(), "{engine}: the run before the redrive was cut: {:?}", types(&stored));
        assert_eq!(unstamped(&stored[..first.len()]), unstamped(first), "{engine}: the run before the redrive stays");
        assert_eq!(types(&stored[first.len()..]), ["ExecutionRedriven", "ExecutionTimedOut"], "{engine}");
        assert_eq!(redriven(&stored), [json!(1)], "{engine}");
        let ids: Vec<u64> = stored.iter().map(|e| e.id).collect();
        assert_eq!(ids, (1..=stored.len() as u64).collect::<Vec<_>>(), "{engine}");
        let record = s.describe_execution(&name).await.unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (ExecutionStatus::TimedOut, 1), "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let third = run(open(&s, &name, workflow, &input).await).await;
        let third_error = third.error.clone().unwrap();
        let stored = s.read_history(&name).await.unwrap();
        assert_eq!(unstamped(&stored[..first.len()]), unstamped(first), "{engine}");
        assert_eq!(
            types(&stored[first.len()..]),
            ["ExecutionRedriven", "ExecutionTimedOut", "ExecutionRedriven", "PassStateEntered", "ExecutionFailed"],
            "{engine}: {:?}",
            types(&stored)
        );
        assert_eq!(redriven(&stored), [json!(1), json!(2)], "{engine}");
        names_its_entry(&stored, &third_error);

        let name = format!("redrive-top-old-stop-{engine}");
        let first = run(open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), Some("States.Runtime"), "{engine}");
        let first = &first.history;
        let record = s.redrive_execution(&name).await.unwrap();
        // The stop as it was written before it added the redrive it cut short.
        let claim = s.open_execution(new_exec(&name, input.clone())).await.unwrap();
        let aborted = wfc_runtime::durable::aborted_events(&record, first.len() as u64, 0);
        let stopped = Completion { status: ExecutionStatus::Aborted, output: None, error: None, cause: None };
        let write = HistoryWrite { events: aborted, truncate_after: None };
        s.finish_with_history(&name, claim.token, stopped, write).await.unwrap();
        s.redrive_execution(&name).await.unwrap();
        let third = run(open(&s, &name, workflow, &input).await).await;
        let third_error = third.error.clone().unwrap();
        let stored = s.read_history(&name).await.unwrap();
        assert_eq!(unstamped(&stored[..first.len()]), unstamped(first), "{engine}");
        assert_eq!(
            types(&stored[first.len()..]),
            ["ExecutionAborted", "ExecutionRedriven", "PassStateEntered", "ExecutionFailed"],
            "{engine}: {:?}",
            types(&stored)
        );
        assert_eq!(redriven(&stored), [json!(2)], "{engine}");
        names_its_entry(&stored, &third_error);
    }
}

/// `Item` fails for the items in `broken`; each call is counted per item (`Item2`).
#[derive(Clone)]
struct MapRunRedrivable {
    counting: Counting,
    broken: Vec<i64>,
}

impl redrive_distributed::Handler for MapRunRedrivable {
    async fn item(&self, input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        *self.counting.calls.lock().unwrap().entry(format!("Item{input}")).or_default() += 1;
        match input.as_i64() {
            Some(n) if self.broken.contains(&n) => Err(Failure::new("Item.Broken", format!("item {n} is broken"))),
            _ => Ok(json!({ "item": input })),
        }
    }
}

/// AWS's hard limit on a Map Run's redrives (1,000; 1 here): the redrive past it fails the Map
/// state with `States.Runtime`, records no `MapRunRedriven` and runs no child again, on both
/// engines.
#[tokio::test]
async fn a_map_run_is_redriven_at_most_its_limit() {
    let workflow = &lowered("redrive_distributed");
    let s = store();
    let input = json!({"items": [1, 2, 3, 4]});
    let limits = wfc_runtime::Limits { max_map_run_redrives: 1, ..wfc_runtime::Limits::default() };
    for engine in ["interp", "generated"] {
        let name = format!("redrive-limit-{engine}");
        let counting = Counting::default();
        let run = |broken: Vec<i64>, journal: Arc<Journal>| {
            let handler = MapRunRedrivable { counting: counting.clone(), broken };
            let input = input.clone();
            let options = RunOptions::real().with_journal(journal).with_limits(limits);
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, input: Value, ctx: TaskContext| {
                            let handler = handler.clone();
                            async move {
                                use redrive_distributed::Handler;
                                handler.item(input, ctx).await
                            }
                        });
                    interp::run(workflow, &handlers, input, options).await
                } else {
                    redrive_distributed::run_with(&handler, input, options).await
                }
            }
        };
        let calls = |c: &Counting| ["Item1", "Item2", "Item3", "Item4"].map(|f| c.count(f));
        let threshold = Some("States.ExceedToleratedFailureThreshold");
        let first = run(vec![2, 3], open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), threshold, "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(vec![3], open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.error.as_ref().map(|f| f.error.as_str()), threshold, "{engine}");
        assert_eq!(calls(&counting), [1, 2, 1, 0], "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let third = run(vec![], open(&s, &name, workflow, &input).await).await;
        let error = third.error.clone().unwrap();
        assert_eq!(error.error, "States.Runtime", "{engine}: {error:?}");
        assert!(error.cause.contains("reached the limit of 1 redrives of a Map Run"), "{engine}: {error:?}");
        assert_eq!(calls(&counting), [1, 2, 1, 0], "{engine}: no child ran again");
        let types: Vec<&str> = third.history.iter().map(|e| e.event_type.name()).collect();
        assert_eq!(types.iter().filter(|t| **t == "MapRunRedriven").count(), 1, "{engine}: {types:?}");
        assert_eq!(types.iter().filter(|t| **t == "ExecutionRedriven").count(), 2, "{engine}: {types:?}");
        let record = s.describe_execution(&name).await.unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (ExecutionStatus::Failed, 2), "{engine}");
    }
}

/// RedriveExecution of a DISTRIBUTED Map Run, on both engines: the run fails on item 2 (no
/// failure tolerated, one child at a time, so items 3 and 4 never start); redriven, only item 2
/// runs again (item 1's child replays its result) and item 3 fails, so the run fails again;
/// redriven again, item 3 runs again and item 4 for the first time. Each run's history is the
/// previous one's, then `ExecutionRedriven` and `MapRunRedriven` (the Map Run's own count), then
/// what ran; the Map Run's ARN stays the same.
#[tokio::test]
async fn a_redrive_reruns_only_the_failed_children_of_a_distributed_map_run_on_both_engines() {
    let workflow = &lowered("redrive_distributed");
    let s = store();
    let input = json!({"items": [1, 2, 3, 4]});
    for engine in ["interp", "generated"] {
        let name = format!("redrive-distributed-{engine}");
        let counting = Counting::default();
        let run = |broken: Vec<i64>, journal: Arc<Journal>| {
            let handler = MapRunRedrivable { counting: counting.clone(), broken };
            let input = input.clone();
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, input: Value, ctx: TaskContext| {
                            let handler = handler.clone();
                            async move {
                                use redrive_distributed::Handler;
                                handler.item(input, ctx).await
                            }
                        });
                    interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_distributed::run_with(&handler, input, RunOptions::real().with_journal(journal)).await
                }
            }
        };
        let calls = |c: &Counting| ["Item1", "Item2", "Item3", "Item4"].map(|f| c.count(f));
        let kinds = |r: &wfc_runtime::ExecutionResult| -> Vec<String> {
            r.history.iter().map(|e| format!("{} {}", e.event_type.name(), e.details)).collect()
        };
        let threshold = Some("States.ExceedToleratedFailureThreshold");
        let first = run(vec![2, 3], open(&s, &name, workflow, &input).await).await;
        assert_eq!(first.error.as_ref().map(|f| f.error.as_str()), threshold, "{engine}");
        assert_eq!(calls(&counting), [1, 1, 0, 0], "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let second = run(vec![3], open(&s, &name, workflow, &input).await).await;
        assert_eq!(second.error.as_ref().map(|f| f.error.as_str()), threshold, "{engine}");
        assert_eq!(calls(&counting), [1, 2, 1, 0], "{engine}");
        s.redrive_execution(&name).await.unwrap();
        let third = run(vec![], open(&s, &name, workflow, &input).await).await;
        assert_eq!(third.status, Status::Succeeded, "{engine}: {:?}", third.error);
        assert_eq!(calls(&counting), [1, 2, 2, 1], "{engine}");
        let each: Vec<Value> = (1..=4).map(|n| json!({ "item": n })).collect();
        assert_eq!(third.output, Some(json!({"items": [1, 2, 3, 4], "each": each})), "{engine}");
        let (first, second, third) = (kinds(&first), kinds(&second), kinds(&third));
        assert_eq!(second[..first.len()], first[..], "{engine}");
        assert_eq!(third[..second.len()], second[..], "{engine}");
        let arn = |history: &[String]| -> Vec<String> {
            history.iter().filter(|e| e.starts_with("MapRunStarted")).cloned().collect()
        };
        assert_eq!(arn(&third).len(), 1, "{engine}: one Map Run, redriven: {third:#?}");
        assert!(second[first.len()].starts_with("ExecutionRedriven {\"redriveCount\":1}"), "{engine}: {second:#?}");
        assert!(second[first.len() + 1].starts_with("MapRunRedriven {\"mapRunArn\":"), "{engine}: {second:#?}");
        assert!(second[first.len() + 1].ends_with("\"redriveCount\":1}"), "{engine}: {second:#?}");
        assert!(third[second.len()].starts_with("ExecutionRedriven {\"redriveCount\":2}"), "{engine}: {third:#?}");
        assert!(third[second.len() + 1].ends_with("\"redriveCount\":2}"), "{engine}: {third:#?}");
        let count = |history: &[String], prefix: &str| history.iter().filter(|e| e.starts_with(prefix)).count();
        assert_eq!(
            ["MapRunFailed", "MapStateFailed", "ExecutionFailed", "MapRunRedriven", "MapRunSucceeded"]
                .map(|kind| count(&third, kind)),
            [2, 2, 2, 2, 1],
            "{engine}: {third:#?}"
        );
        // The run's end counts every child where it ended last.
        let end = third.iter().find(|e| e.starts_with("MapRunSucceeded")).unwrap();
        assert!(end.contains("\"executionCounts\":{\"pending\":0,\"running\":0,\"succeeded\":4,"), "{engine}: {end}");
        let stored: Vec<String> = s
            .read_history(&name)
            .await
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e.event_type.name(), e.details))
            .collect();
        assert_eq!(stored, third, "{engine}");
        // The journal: one CHAINED_INVOKE per child and run it had (`!<level>`), none in flight.
        let ops = s.load_journal(&name).await.unwrap();
        assert!(ops.iter().all(|o| o.status != OpStatus::Started), "{engine}: {ops:?}");
        let mut children: Vec<&str> =
            ops.iter().filter(|o| o.subtype == "MapRunChild").map(|o| o.id.as_str()).collect();
        children.sort();
        assert_eq!(
            children,
            ["Fan#1.0/0", "Fan#1.0/1", "Fan#1.0/1!1", "Fan#1.0/2!1", "Fan#1.0/2!2", "Fan#1.0/3!2"],
            "{engine}"
        );
    }
}

type StoreFut<'a, T> = futures::future::BoxFuture<'a, Result<T, StoreError>>;

/// A store whose execution end never commits while `hang` is set: the process "dies" there
/// (the test drops the run once `reached` fires), after everything the run checkpointed before
/// its end, as a `kill -9` between a Map Run level's end and the execution's end leaves it.
#[derive(Debug)]
struct DiesAtTheEnd {
    inner: Arc<dyn Store>,
    hang: std::sync::atomic::AtomicBool,
    reached: Notify,
}

impl DiesAtTheEnd {
    fn dies(&self) -> StoreFut<'_, CheckpointToken> {
        self.reached.notify_one();
        Box::pin(futures::future::pending())
    }
}

impl Store for DiesAtTheEnd {
    fn open_execution(&self, new: NewExecution) -> StoreFut<'_, wfc_runtime::durable::Claim> {
        self.inner.open_execution(new)
    }
    fn load_journal<'a>(&'a self, name: &'a str) -> StoreFut<'a, Vec<wfc_runtime::durable::Operation>> {
        self.inner.load_journal(name)
    }
    fn checkpoint<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
    ) -> StoreFut<'a, CheckpointToken> {
        self.inner.checkpoint(name, token, updates)
    }
    fn checkpoint_with_history<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
        history: HistoryWrite,
    ) -> StoreFut<'a, CheckpointToken> {
        self.inner.checkpoint_with_history(name, token, updates, history)
    }
    fn finish<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
    ) -> StoreFut<'a, CheckpointToken> {
        if self.hang.load(Ordering::SeqCst) {
            return self.dies();
        }
        self.inner.finish(name, token, completion)
    }
    fn finish_with_history<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
        history: HistoryWrite,
    ) -> StoreFut<'a, CheckpointToken> {
        if self.hang.load(Ordering::SeqCst) {
            return self.dies();
        }
        self.inner.finish_with_history(name, token, completion, history)
    }
    fn finish_with_updates<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
        completion: Completion,
        history: HistoryWrite,
    ) -> StoreFut<'a, CheckpointToken> {
        if self.hang.load(Ordering::SeqCst) {
            return self.dies();
        }
        self.inner.finish_with_updates(name, token, updates, completion, history)
    }
    fn list_executions(&self) -> StoreFut<'_, Vec<wfc_runtime::durable::ExecutionRecord>> {
        self.inner.list_executions()
    }
    fn describe_execution<'a>(&'a self, name: &'a str) -> StoreFut<'a, Option<wfc_runtime::durable::ExecutionRecord>> {
        self.inner.describe_execution(name)
    }
    fn append_history<'a>(&'a self, name: &'a str, events: Vec<wfc_runtime::HistoryEvent>) -> StoreFut<'a, ()> {
        self.inner.append_history(name, events)
    }
    fn read_history<'a>(&'a self, name: &'a str) -> StoreFut<'a, Vec<wfc_runtime::HistoryEvent>> {
        self.inner.read_history(name)
    }
    fn load_operation<'a>(
        &'a self,
        name: &'a str,
        id: &'a str,
    ) -> StoreFut<'a, Option<wfc_runtime::durable::Operation>> {
        self.inner.load_operation(name, id)
    }
    fn complete_callback<'a>(
        &'a self,
        token: &'a str,
        completion: wfc_runtime::durable::CallbackCompletion,
    ) -> StoreFut<'a, String> {
        self.inner.complete_callback(token, completion)
    }
    fn heartbeat_callback<'a>(&'a self, token: &'a str) -> StoreFut<'a, String> {
        self.inner.heartbeat_callback(token)
    }
    fn stop_execution<'a>(
        &'a self,
        name: &'a str,
        error: Option<String>,
        cause: Option<String>,
    ) -> StoreFut<'a, wfc_runtime::durable::ExecutionRecord> {
        self.inner.stop_execution(name, error, cause)
    }
    fn redrive_execution<'a>(&'a self, name: &'a str) -> StoreFut<'a, wfc_runtime::durable::ExecutionRecord> {
        self.inner.redrive_execution(name)
    }
    fn create_execution(&self, new: NewExecution) -> StoreFut<'_, (wfc_runtime::durable::ExecutionRecord, bool)> {
        self.inner.create_execution(new)
    }
    fn claim_runnable<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
        limit: usize,
        filter: &'a wfc_runtime::durable::ClaimFilter,
    ) -> StoreFut<'a, Vec<wfc_runtime::durable::ClaimResult>> {
        self.inner.claim_runnable(owner, lease, limit, filter)
    }
    fn renew_lease<'a>(&'a self, name: &'a str, epoch: i64, owner: &'a str, lease: Duration) -> StoreFut<'a, ()> {
        self.inner.renew_lease(name, epoch, owner, lease)
    }
    fn release<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        wake_at_ms: Option<i64>,
        signals_seen: i64,
    ) -> StoreFut<'a, ()> {
        self.inner.release(name, epoch, wake_at_ms, signals_seen)
    }
    fn fail_execution<'a>(&'a self, name: &'a str, error: &'a str, cause: &'a str) -> StoreFut<'a, ()> {
        self.inner.fail_execution(name, error, cause)
    }
    fn kv_get<'a>(&'a self, key: &'a str) -> StoreFut<'a, Option<Value>> {
        self.inner.kv_get(key)
    }
    fn kv_put<'a>(&'a self, key: &'a str, value: Value) -> StoreFut<'a, ()> {
        self.inner.kv_put(key, value)
    }
    fn kv_delete<'a>(&'a self, key: &'a str) -> StoreFut<'a, bool> {
        self.inner.kv_delete(key)
    }
    fn kv_list<'a>(&'a self, prefix: &'a str) -> StoreFut<'a, Vec<(String, Value)>> {
        self.inner.kv_list(prefix)
    }
}

/// A DISTRIBUTED Map Run level that ended is not run again by a resume, nor judged by a
/// tolerance it did not end with, on both engines. The run tolerates no failure and runs one
/// child at a time: item 2 fails, so the level stops there (items 3 and 4 never start) and the
/// execution fails; the process dies as it records the execution's end, and the Map Run's
/// tolerance is raised (`UpdateMapRun`'s row) before the resume. The resume ends the level as
/// it ended (items 3 and 4 still not run, the execution FAILED), both for the first run's level
/// and for the level a redrive reruns; a last redrive then judges the rerun level by its
/// journaled end (exceeded) and reruns what did not succeed. Without the level's journaled end,
/// each resume went on with the raised tolerance: items 3 and 4 ran and the execution succeeded.
#[tokio::test]
async fn a_map_run_level_that_ended_is_not_run_again_on_resume() {
    let workflow = &lowered("redrive_distributed");
    let inner = store();
    let dying = Arc::new(DiesAtTheEnd {
        inner: Arc::clone(&inner),
        hang: std::sync::atomic::AtomicBool::new(false),
        reached: Notify::new(),
    });
    let dying_store: Arc<dyn Store> = Arc::clone(&dying) as Arc<dyn Store>;
    let input = json!({"items": [1, 2, 3, 4]});
    for engine in ["interp", "generated"] {
        let name = format!("level-end-{engine}");
        let counting = Counting::default();
        let run = |broken: Vec<i64>, journal: Arc<Journal>| {
            let handler = MapRunRedrivable { counting: counting.clone(), broken };
            let input = input.clone();
            async move {
                if engine == "interp" {
                    let handlers =
                        Handlers::new().fallback(move |_resource: String, input: Value, ctx: TaskContext| {
                            let handler = handler.clone();
                            async move {
                                use redrive_distributed::Handler;
                                handler.item(input, ctx).await
                            }
                        });
                    interp::run(workflow, &handlers, input, RunOptions::real().with_journal(journal)).await
                } else {
                    redrive_distributed::run_with(&handler, input, RunOptions::real().with_journal(journal)).await
                }
            }
        };
        // Runs until the execution's end, which is never recorded: the process dies there.
        let dies_at_the_end = |broken: Vec<i64>| {
            let run = &run;
            let dying = &dying;
            let dying_store = &dying_store;
            let name = &name;
            let input = &input;
            async move {
                dying.hang.store(true, Ordering::SeqCst);
                let journal = open(dying_store, name, workflow, input).await;
                tokio::select! {
                    result = run(broken, journal) => panic!("{engine}: the end should not be recorded: {result:?}"),
                    () = dying.reached.notified() => {}
                }
                dying.hang.store(false, Ordering::SeqCst);
            }
        };
        let calls = |c: &Counting| ["Item1", "Item2", "Item3", "Item4"].map(|f| c.count(f));
        let threshold = Some("States.ExceedToleratedFailureThreshold");
        // The Map Run's ARN, from its `MapRunStarted` in the stored history.
        let arn = || async {
            let stored = inner.read_history(&name).await.unwrap();
            let started = stored.iter().find(|e| e.event_type.name() == "MapRunStarted").expect("MapRunStarted");
            started.details["mapRunArn"].as_str().expect("a Map Run ARN").to_owned()
        };
        let tolerate = |arn: String, count: Option<u64>| {
            let inner = Arc::clone(&inner);
            async move {
                let key = wfc_runtime::distributed::limits_key(&arn);
                match count {
                    Some(n) => {
                        inner.kv_put(&key, json!({"maxConcurrency": 1, "toleratedFailureCount": n})).await.unwrap()
                    }
                    None => {
                        inner.kv_delete(&key).await.unwrap();
                    }
                }
            }
        };

        // The first run's level ends at item 2; the process dies; the tolerance is raised.
        dies_at_the_end(vec![2]).await;
        assert_eq!(calls(&counting), [1, 1, 0, 0], "{engine}");
        let arn = arn().await;
        tolerate(arn.clone(), Some(10)).await;
        let resumed = run(vec![2], open(&inner, &name, workflow, &input).await).await;
        assert_eq!(resumed.error.as_ref().map(|f| f.error.as_str()), threshold, "{engine}: {:?}", resumed.output);
        assert_eq!(calls(&counting), [1, 1, 0, 0], "{engine}: the level that ended was run again");
        // The run's end event has the limits it ended with, not the raised ones.
        let failed = resumed.history.iter().find(|e| e.event_type.name() == "MapRunFailed").unwrap();
        assert_eq!(failed.details["toleratedFailureCount"], json!(null), "{engine}: {}", failed.details);

        // Redriven: the rerun level (item 2 again) ends at item 2; the process dies; raised again.
        tolerate(arn.clone(), None).await;
        inner.redrive_execution(&name).await.unwrap();
        dies_at_the_end(vec![2]).await;
        assert_eq!(calls(&counting), [1, 2, 0, 0], "{engine}");
        tolerate(arn.clone(), Some(10)).await;
        let resumed = run(vec![2], open(&inner, &name, workflow, &input).await).await;
        assert_eq!(resumed.error.as_ref().map(|f| f.error.as_str()), threshold, "{engine}: {:?}", resumed.output);
        assert_eq!(calls(&counting), [1, 2, 0, 0], "{engine}: the rerun level that ended was run again");

        // Redriven again, with the tolerance still raised: the rerun level is judged by its end
        // (exceeded), so its unsuccessful children run in the next level.
        inner.redrive_execution(&name).await.unwrap();
        let last = run(vec![], open(&inner, &name, workflow, &input).await).await;
        assert_eq!(last.status, Status::Succeeded, "{engine}: {:?}", last.error);
        assert_eq!(calls(&counting), [1, 3, 1, 1], "{engine}");
        let types: Vec<&str> = last.history.iter().map(|e| e.event_type.name()).collect();
        assert_eq!(types.iter().filter(|t| **t == "MapRunRedriven").count(), 2, "{engine}: {types:?}");
        assert_eq!(types.iter().filter(|t| **t == "MapRunFailed").count(), 2, "{engine}: {types:?}");
        // Each level's end is journaled once.
        let ops = inner.load_journal(&name).await.unwrap();
        let mut ends: Vec<&str> = ops.iter().filter(|o| o.subtype == "MapRunEnd").map(|o| o.id.as_str()).collect();
        ends.sort();
        assert_eq!(ends, ["Fan#1.0.end", "Fan#1.0.end!1", "Fan#1.0.end!2"], "{engine}");
        tolerate(arn, None).await;
    }
}
