//! PostgreSQL with many workers: 1,000 executions run by 4 `wfc worker` processes (one of them
//! killed with SIGKILL mid-run and replaced) finish exactly once each, none lost; a zombie
//! worker whose lease was taken over has its writes rejected by the fencing epoch. The same
//! fencing is checked on SQLite. Skipped (with a printed reason) when PostgreSQL is not
//! installed, unless WFC_REQUIRE_POSTGRES=1. `WFC_PG_EXECUTIONS` changes the count.

mod support;

use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{json_of, ledger_counts, ledger_handlers, scratch, wfc, write};
use wfc_runtime::durable::{
    CheckpointToken, ClaimFilter, Completion, ExecutionStatus, HistoryWrite, NewExecution, OpStatus, OpType,
    OperationUpdate, Store, StoreError,
};

const DEFINITION: &str = r#"{
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Next": "Work"},
    "Work": {"Type": "Task", "Resource": "res:Work", "ResultPath": "$.r", "End": true}
  }
}"#;

/// A `wfc worker` process; its stdout (the final stats) is piped, its stderr (a log line per
/// execution, warnings) goes to `OWNER.stderr` beside `handlers`: a pipe nobody reads until
/// the worker ends fills up and blocks it mid-run (the test reads the workers one at a time).
fn worker(store: &str, def: &str, handlers: &str, owner: &str) -> Child {
    let log = std::path::Path::new(handlers).with_file_name(format!("{owner}.stderr"));
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("a worker's log file");
    wfc()
        .args([
            "worker",
            "--store",
            store,
            def,
            "--handlers",
            handlers,
            "--concurrency",
            "8",
            "--exit-when-idle",
            "--poll-ms",
            "100",
            "--lease-seconds",
            "3",
            "--owner",
            owner,
        ])
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("wfc worker starts")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

fn new_execution(name: &str, input: Value) -> NewExecution {
    NewExecution {
        name: name.into(),
        workflow: "many".into(),
        input,
        start_time: "2024-01-01T00:00:00.000Z".into(),
        definition_hash: None,
        version_id: None,
    }
}

fn step(id: &str, status: OpStatus) -> OperationUpdate {
    OperationUpdate {
        id: id.into(),
        op_type: OpType::Step,
        subtype: "Task".into(),
        name: "Work".into(),
        status,
        result: None,
        error: None,
        cause: None,
        due_at_ms: None,
        callback_token: None,
        parent_id: None,
        heartbeat_seconds: None,
        function_name: None,
    }
}

/// A worker that lost its lease (it paused, its lease expired, another worker claimed the
/// execution) is a zombie: its next checkpoint, lease renewal and finish are all rejected.
async fn zombie_is_fenced(store: Arc<dyn Store>) {
    store.create_execution(new_execution("zombie-1", json!({}))).await.unwrap();
    let zombie = store.claim_runnable("zombie", Duration::from_millis(50), 1, &ClaimFilter::All).await.unwrap();
    let zombie = zombie.into_iter().next().expect("one claim").expect("loadable");
    let token = store.checkpoint("zombie-1", zombie.token, vec![step("Work#1.0", OpStatus::Started)]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let rescuer = store.claim_runnable("rescuer", Duration::from_secs(30), 10, &ClaimFilter::All).await.unwrap();
    let rescuer = rescuer.into_iter().find_map(|c| c.ok().filter(|c| c.record.name == "zombie-1")).expect("taken over");
    assert_eq!(rescuer.token.epoch, zombie.token.epoch + 1);
    let late = store.checkpoint("zombie-1", token, vec![step("Work#1.0", OpStatus::Succeeded)]).await;
    assert!(matches!(late, Err(StoreError::StaleToken(_))), "{late:?}");
    let renew = store.renew_lease("zombie-1", zombie.token.epoch, "zombie", Duration::from_secs(30)).await;
    assert!(matches!(renew, Err(StoreError::StaleToken(_))), "{renew:?}");
    // The rescuer's writes go through, and the zombie's did not land.
    store.checkpoint("zombie-1", rescuer.token, vec![step("Work#1.0", OpStatus::Started)]).await.unwrap();
    let op = store.load_operation("zombie-1", "Work#1.0").await.unwrap().unwrap();
    assert_eq!((op.status, op.starts), (OpStatus::Started, 2));
}

/// A lease renewal that races the release of the same hold (the renewal task fires just after
/// the worker gave the execution back) must not take the execution back: it would stay owned,
/// unclaimable, until the lease ran out.
async fn a_late_renewal_leaves_a_released_execution_alone(store: Arc<dyn Store>) {
    store.create_execution(new_execution("released-1", json!({}))).await.unwrap();
    let held = store.claim_runnable("holder", Duration::from_secs(30), 1, &ClaimFilter::All).await.unwrap();
    let held = held.into_iter().next().expect("one claim").expect("loadable");
    let wake = durable_now_ms() + 60_000;
    store.release("released-1", held.token.epoch, Some(wake), held.record.signals).await.unwrap();
    store.renew_lease("released-1", held.token.epoch, "holder", Duration::from_secs(30)).await.unwrap();
    let d = store.describe_execution("released-1").await.unwrap().unwrap();
    assert_eq!((d.owner.as_deref(), d.lease_until_ms, d.wake_at_ms), (None, None, Some(wake)), "{d:?}");
}

fn event(id: u64, state: &str) -> wfc_runtime::HistoryEvent {
    wfc_runtime::HistoryEvent {
        id,
        previous_event_id: id - 1,
        timestamp: "2024-01-01T00:00:00.000Z".into(),
        event_type: wfc_runtime::EventType::PassStateEntered,
        details: json!({ "name": state }).into(),
    }
}

/// Checkpoints and finishes of many executions sent at once share group commits (on
/// PostgreSQL one `wfc_commit_group` statement for the group): each is still written or refused
/// alone, exactly as if it had been committed by itself, and a refused one writes nothing and
/// keeps its token.
async fn a_group_commit_answers_each_write_alone(store: Arc<dyn Store>) {
    let mut tokens = std::collections::HashMap::new();
    for name in ["g-ok", "g-stale", "g-finished", "g-twice", "g-merged", "g-end", "g-holder", "g-dup"] {
        let claim = store.open_execution(new_execution(name, json!({}))).await.unwrap();
        tokens.insert(name, claim.token);
    }
    let done = |id: &str, result: Value| OperationUpdate { result: Some(result), ..step(id, OpStatus::Succeeded) };
    let stale = tokens["g-stale"];
    tokens.insert("g-stale", store.checkpoint("g-stale", stale, vec![]).await.unwrap());
    let finished = store.checkpoint("g-finished", tokens["g-finished"], vec![done("A#1.0", json!(1))]).await.unwrap();
    tokens.insert("g-finished", finished);
    // A task token is unique in the store: a second CALLBACK with it fails in the database
    // itself, after its checkpoint's token and first operation were written.
    let callback = |id: &str| OperationUpdate {
        op_type: OpType::Callback,
        callback_token: Some("tok-dup".into()),
        ..step(id, OpStatus::Started)
    };
    let held = store.checkpoint("g-holder", tokens["g-holder"], vec![callback("C#1.0")]).await.unwrap();
    tokens.insert("g-holder", held);
    let history = |events: Vec<wfc_runtime::HistoryEvent>, truncate_after| HistoryWrite { events, truncate_after };
    let end = Completion {
        status: ExecutionStatus::Succeeded,
        output: Some(json!({"done": true})),
        error: None,
        cause: None,
    };
    let s = &store;
    let (ok, stale, finished, twice, merged, end, missing, dup) = tokio::join!(
        s.checkpoint_with_history(
            "g-ok",
            tokens["g-ok"],
            vec![step("A#1.0", OpStatus::Started)],
            history(vec![event(1, "P"), event(2, "Q")], None)
        ),
        s.checkpoint("g-stale", stale, vec![step("A#1.0", OpStatus::Started)]),
        // Rewrites a finished operation: refused whole, B included.
        s.checkpoint(
            "g-finished",
            tokens["g-finished"],
            vec![step("B#1.0", OpStatus::Started), done("A#1.0", json!(2))]
        ),
        // Updates an operation again after finishing it in the same batch: refused whole.
        s.checkpoint("g-twice", tokens["g-twice"], vec![done("A#1.0", json!(1)), step("A#1.0", OpStatus::Started)]),
        // An operation started and finished in one batch (as a CONTEXT's start and end).
        s.checkpoint(
            "g-merged",
            tokens["g-merged"],
            vec![step("A#1.0", OpStatus::Started), step("B#1.0", OpStatus::Started), done("A#1.0", json!(7))]
        ),
        s.finish_with_history("g-end", tokens["g-end"], end, history(vec![event(1, "P")], None)),
        s.checkpoint("g-missing", CheckpointToken { epoch: 1, seq: 0 }, vec![step("A#1.0", OpStatus::Started)]),
        // Fails in the database after writing part of itself: rolled back alone (SQLite runs
        // the group again with a savepoint per write), the others still commit.
        s.checkpoint("g-dup", tokens["g-dup"], vec![step("A#1.0", OpStatus::Started), callback("C#1.0")]),
    );
    let next = |t: CheckpointToken| CheckpointToken { epoch: t.epoch, seq: t.seq + 1 };
    assert_eq!(ok, Ok(next(tokens["g-ok"])));
    assert_eq!(stale, Err(StoreError::StaleToken("g-stale".into())));
    for (name, refused) in [("g-finished", finished), ("g-twice", twice)] {
        match refused {
            Err(StoreError::InvalidUpdate { execution, message }) => {
                assert_eq!(execution, name);
                assert_eq!(message, "operation 'A#1.0' already finished (SUCCEEDED)", "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(merged, Ok(next(tokens["g-merged"])));
    assert_eq!(end, Ok(next(tokens["g-end"])));
    assert_eq!(missing, Err(StoreError::NotFound("g-missing".into())));
    assert!(matches!(dup, Err(StoreError::Backend(_))), "{dup:?}");
    // What each wrote, or did not.
    let journal = |name: &'static str| async move {
        let ops = s.load_journal(name).await.unwrap();
        ops.into_iter().map(|o| (o.id, o.status, o.starts, o.result)).collect::<Vec<_>>()
    };
    assert_eq!(journal("g-ok").await, vec![("A#1.0".into(), OpStatus::Started, 1, None)]);
    assert_eq!(s.read_history("g-ok").await.unwrap(), vec![event(1, "P"), event(2, "Q")]);
    assert!(journal("g-stale").await.is_empty());
    assert_eq!(journal("g-finished").await, vec![("A#1.0".into(), OpStatus::Succeeded, 0, Some(json!(1)))]);
    assert!(journal("g-twice").await.is_empty());
    assert!(journal("g-dup").await.is_empty());
    assert_eq!(
        journal("g-merged").await,
        vec![("A#1.0".into(), OpStatus::Succeeded, 1, Some(json!(7))), ("B#1.0".into(), OpStatus::Started, 1, None)]
    );
    let ended = s.describe_execution("g-end").await.unwrap().unwrap();
    assert_eq!(
        (ended.status, ended.output, ended.owner),
        (ExecutionStatus::Succeeded, Some(json!({"done": true})), None)
    );
    assert_eq!(s.read_history("g-end").await.unwrap(), vec![event(1, "P")]);
    // A refused write kept its token; a resumed run's history replaces the stored tail.
    s.checkpoint("g-finished", tokens["g-finished"], vec![]).await.unwrap();
    s.checkpoint("g-twice", tokens["g-twice"], vec![]).await.unwrap();
    s.checkpoint("g-dup", tokens["g-dup"], vec![]).await.unwrap();
    let replaced = history(vec![event(2, "R"), event(3, "S")], Some(1));
    s.checkpoint_with_history("g-ok", next(tokens["g-ok"]), vec![], replaced).await.unwrap();
    assert_eq!(s.read_history("g-ok").await.unwrap(), vec![event(1, "P"), event(2, "R"), event(3, "S")]);
    // History is appended only to an execution that exists (both stores check it).
    assert!(s.append_history("g-none", vec![event(1, "P")]).await.is_err());
}

/// The history is stored a row per commit (SQLite schema 9, PostgreSQL 10: a JSON array of
/// consecutive events), yet reads and writes see events one by one: ids written again inside and
/// across rows (by `append_history`, and by a group commit's checkpoint), a replaced tail, and
/// pages read forward and backward from ids inside rows.
async fn history_rows_of_many_events_read_and_replace_event_by_event(s: Arc<dyn Store>) {
    let claim = s.open_execution(new_execution("h-rows", json!({}))).await.unwrap();
    // Tagged by their timestamps.
    let event = |id: u64, tag: &str| wfc_runtime::HistoryEvent { timestamp: tag.into(), ..event(id, "P") };
    let events = |ids: std::ops::RangeInclusive<u64>, tag: &str| ids.map(|i| event(i, tag)).collect::<Vec<_>>();
    let ids = |events: Vec<wfc_runtime::HistoryEvent>| {
        events.into_iter().map(|e| (e.id, e.timestamp.to_string())).collect::<Vec<_>>()
    };
    let tagged = |spans: &[(std::ops::RangeInclusive<u64>, &str)]| {
        spans.iter().flat_map(|(r, t)| r.clone().map(move |i| (i, t.to_string()))).collect::<Vec<_>>()
    };
    s.append_history("h-rows", events(1..=5, "a")).await.unwrap();
    s.append_history("h-rows", events(6..=10, "b")).await.unwrap();
    // Ids 4 to 7 again: the end of the first row and the start of the second are replaced.
    s.append_history("h-rows", events(4..=7, "c")).await.unwrap();
    let all = tagged(&[(1..=3, "a"), (4..=7, "c"), (8..=10, "b")]);
    assert_eq!(ids(s.read_history("h-rows").await.unwrap()), all);
    assert_eq!(ids(s.read_history_page("h-rows", 2, 4, false).await.unwrap()), all[2..6].to_vec());
    assert_eq!(ids(s.read_history_page("h-rows", 9, 4, false).await.unwrap()), all[9..].to_vec());
    assert_eq!(ids(s.read_history_page("h-rows", 0, 20, false).await.unwrap()), all);
    let newest: Vec<_> = all.iter().rev().take(3).cloned().collect();
    assert_eq!(ids(s.read_history_page("h-rows", 0, 3, true).await.unwrap()), newest);
    let before_six: Vec<_> = all[..5].iter().rev().cloned().collect();
    assert_eq!(ids(s.read_history_page("h-rows", 6, 10, true).await.unwrap()), before_six);
    // A resumed run that recorded differently from id 3 on replaces the tail (a group commit).
    let rewrite = HistoryWrite { events: events(3..=4, "d"), truncate_after: Some(2) };
    let token = s.checkpoint_with_history("h-rows", claim.token, vec![], rewrite).await.unwrap();
    assert_eq!(ids(s.read_history("h-rows").await.unwrap()), tagged(&[(1..=2, "a"), (3..=4, "d")]));
    // A checkpoint that writes stored ids again, inside one row and past its end.
    let again = HistoryWrite { events: events(2..=5, "f"), truncate_after: None };
    s.checkpoint_with_history("h-rows", token, vec![], again).await.unwrap();
    assert_eq!(ids(s.read_history("h-rows").await.unwrap()), tagged(&[(1..=1, "a"), (2..=5, "f")]));
    // Events not in id order (one given twice: the last one counts) are stored by id.
    s.append_history("h-rows", vec![event(7, "e"), event(6, "x"), event(6, "e")]).await.unwrap();
    assert_eq!(ids(s.read_history("h-rows").await.unwrap()), tagged(&[(1..=1, "a"), (2..=5, "f"), (6..=7, "e")]));
    assert!(matches!(s.append_history("h-none", events(1..=1, "x")).await, Err(StoreError::NotFound(_))));
}

#[test]
fn sqlite_history_rows_read_and_replace_event_by_event() {
    let dir = scratch("history-rows-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        history_rows_of_many_events_read_and_replace_event_by_event(wfc_stores::connect(&url).await.unwrap()).await
    });
}

/// An execution's operations load in the order they were first recorded (PostgreSQL numbers
/// them from a sequence since schema 11), whatever other executions write between its
/// checkpoints and however their updates interleave with new ones, also across a reopen.
async fn operations_load_in_the_order_they_were_recorded(s: Arc<dyn Store>) {
    let a = s.open_execution(new_execution("order-a", json!({}))).await.unwrap();
    let b = s.open_execution(new_execution("order-b", json!({}))).await.unwrap();
    let ta = s.checkpoint("order-a", a.token, vec![step("z", OpStatus::Started), step("m", OpStatus::Started)]).await;
    let tb = s.checkpoint("order-b", b.token, vec![step("y", OpStatus::Started)]).await.unwrap();
    let ta = s
        .checkpoint("order-a", ta.unwrap(), vec![step("z", OpStatus::Succeeded), step("a", OpStatus::Started)])
        .await
        .unwrap();
    s.checkpoint("order-b", tb, vec![step("x", OpStatus::Started)]).await.unwrap();
    s.checkpoint("order-a", ta, vec![step("m", OpStatus::Succeeded), step("b", OpStatus::Started)]).await.unwrap();
    let again = s.open_execution(new_execution("order-a", json!({}))).await.unwrap();
    s.checkpoint("order-a", again.token, vec![step("c", OpStatus::Started)]).await.unwrap();
    let ids = |ops: Vec<wfc_runtime::durable::Operation>| ops.into_iter().map(|o| o.id).collect::<Vec<_>>();
    assert_eq!(ids(s.load_journal("order-a").await.unwrap()), ["z", "m", "a", "b", "c"]);
    assert_eq!(ids(s.load_journal("order-b").await.unwrap()), ["y", "x"]);
}

#[test]
fn sqlite_operations_load_in_the_order_they_were_recorded() {
    let dir = scratch("order-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        operations_load_in_the_order_they_were_recorded(wfc_stores::connect(&url).await.unwrap()).await
    });
}

/// StopExecution of a redriven execution whose run had not yet recorded that redrive's
/// `ExecutionRedriven` (a FAILED execution's redriven run records it where its replay reaches
/// the failure) adds it before its `ExecutionAborted`, in the stop's transaction, as AWS appends
/// it at the redrive; a stop after the run recorded it adds only the `ExecutionAborted`.
async fn a_stop_adds_the_redrive_its_run_had_not_recorded(s: Arc<dyn Store>) {
    let failed =
        Completion { status: ExecutionStatus::Failed, output: None, error: Some("E".into()), cause: Some("c".into()) };
    let types = |events: &[wfc_runtime::HistoryEvent]| {
        events.iter().map(|e| (e.event_type.name(), e.details["redriveCount"].as_i64())).collect::<Vec<_>>()
    };
    for (name, recorded) in [("cut-short", false), ("recorded", true)] {
        let claim = s.open_execution(new_execution(name, json!({}))).await.unwrap();
        s.append_history(name, vec![event(1, "P")]).await.unwrap();
        s.finish(name, claim.token, failed.clone()).await.unwrap();
        s.redrive_execution(name).await.unwrap();
        if recorded {
            let redriven = wfc_runtime::HistoryEvent {
                event_type: wfc_runtime::EventType::ExecutionRedriven,
                details: json!({ "redriveCount": 1 }).into(),
                ..event(2, "P")
            };
            s.append_history(name, vec![redriven]).await.unwrap();
        }
        let stopped = s.stop_execution(name, None, None).await.unwrap();
        assert_eq!((stopped.status, stopped.redrive_count), (ExecutionStatus::Aborted, 1), "{name}");
        let history = s.read_history(name).await.unwrap();
        assert_eq!(
            types(&history[1..]),
            [("ExecutionRedriven", Some(1)), ("ExecutionAborted", None)],
            "{name}: the redrive's event once, then the stop's"
        );
        let ids: Vec<u64> = history.iter().map(|e| e.id).collect();
        assert_eq!(ids, [1, 2, 3], "{name}");
    }
}

/// A redriven run cut short by the execution's TimeoutSeconds before it recorded that redrive's
/// `ExecutionRedriven` (here before its replay went past `ExecutionStarted`) ends the stored
/// history with it and then its `ExecutionTimedOut`, after the run before the redrive, whole;
/// a run that recorded it (the replayed `ExecutionFailed`, then it) ends with the same history.
/// Without the addition the timeout's end replaced the stored events after the replayed ones.
async fn a_timeout_adds_the_redrive_its_run_had_not_recorded(s: Arc<dyn Store>) {
    use wfc_runtime::{EventType, Execution, RunOptions, Status};
    let types = |events: &[wfc_runtime::HistoryEvent]| {
        events.iter().map(|e| (e.event_type.name(), e.details["redriveCount"].as_i64())).collect::<Vec<_>>()
    };
    let journal = |name: &str| {
        let s = Arc::clone(&s);
        let name = name.to_owned();
        async move {
            match wfc_journal::Journal::open(s, &name, "many", &json!({}), &wfc_runtime::Clock::real()).await {
                Ok(wfc_journal::Opened::Running(j)) => j,
                other => panic!("{name}: expected a running execution, got {other:?}"),
            }
        }
    };
    for (name, recorded) in [("timed-out-cut-short", false), ("timed-out-recorded", true)] {
        let exec = Execution::start("many", &json!({}), RunOptions::real().with_journal(journal(name).await));
        let failed = exec.finish(None, async { Err(wfc_runtime::Failure::new("E", "c")) }).await;
        assert_eq!(failed.status, Status::Failed, "{name}");
        s.redrive_execution(name).await.unwrap();
        let exec = Execution::start("many", &json!({}), RunOptions::real().with_journal(journal(name).await));
        let redriven = async {
            if recorded {
                exec.record(EventType::ExecutionFailed, json!({ "error": "E", "cause": "c" }));
                exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": 1 }));
            }
            std::future::pending::<Result<Value, wfc_runtime::Failure>>().await
        };
        let timed_out = exec.finish(Some(1), redriven).await;
        assert_eq!(timed_out.status, Status::TimedOut, "{name}");
        let record = s.describe_execution(name).await.unwrap().unwrap();
        assert_eq!((record.status, record.redrive_count), (ExecutionStatus::TimedOut, 1), "{name}");
        let history = s.read_history(name).await.unwrap();
        assert_eq!(
            types(&history),
            [
                ("ExecutionStarted", None),
                ("ExecutionFailed", None),
                ("ExecutionRedriven", Some(1)),
                ("ExecutionTimedOut", None)
            ],
            "{name}: the run before the redrive, the redrive's event once, then the timeout"
        );
        let ids: Vec<u64> = history.iter().map(|e| e.id).collect();
        assert_eq!(ids, [1, 2, 3, 4], "{name}");
    }
}

#[test]
fn sqlite_a_timeout_adds_the_redrive_its_run_had_not_recorded() {
    let dir = scratch("timeout-redriven-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        a_timeout_adds_the_redrive_its_run_had_not_recorded(wfc_stores::connect(&url).await.unwrap()).await
    });
}

#[test]
fn sqlite_a_stop_adds_the_redrive_its_run_had_not_recorded() {
    let dir = scratch("stop-redriven-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        a_stop_adds_the_redrive_its_run_had_not_recorded(wfc_stores::connect(&url).await.unwrap()).await
    });
}

/// A workflow's current version replaced only from the one a writer read (`wfc serve`'s version
/// and alias lists are written this way): from "none" once, and of two writers that read the same
/// version exactly one wins.
async fn registry_current_is_replaced_only_from_what_was_read(s: Arc<dyn Store>) {
    use wfc_runtime::durable::{Definition, Language, Registry, Syntax};
    let registry = Registry::new(Arc::clone(&s));
    let doc = |n: u32| Definition {
        workflow: "replaced-list".into(),
        origin: "test".into(),
        source: format!("{{\"n\": {n}}}"),
        language: Language::Asl,
        syntax: Syntax::Json,
        passes: Vec::new(),
        siblings: Vec::new(),
    };
    let (v1, _) = registry.store(doc(1), None).await.unwrap();
    let (v2, _) = registry.store(doc(2), None).await.unwrap();
    let (v3, _) = registry.store(doc(3), None).await.unwrap();
    assert!(registry.current("replaced-list").await.unwrap().is_none(), "stored versions are not current");
    assert!(registry.replace_current("replaced-list", None, &v1.version_id).await.unwrap());
    assert!(!registry.replace_current("replaced-list", None, &v2.version_id).await.unwrap(), "it has one now");
    let (a, b) = tokio::join!(
        registry.replace_current("replaced-list", Some(&v1.version_id), &v2.version_id),
        registry.replace_current("replaced-list", Some(&v1.version_id), &v3.version_id)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a ^ b, "exactly one of two writers that read v1 wins");
    let winner = if a { &v2.version_id } else { &v3.version_id };
    assert_eq!(&registry.current("replaced-list").await.unwrap().unwrap().version_id, winner);
    assert!(!registry.replace_current("replaced-list", Some(&v1.version_id), &v1.version_id).await.unwrap());
}

#[test]
fn sqlite_registry_current_is_replaced_only_from_what_was_read() {
    let dir = scratch("registry-replace-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        registry_current_is_replaced_only_from_what_was_read(wfc_stores::connect(&url).await.unwrap()).await
    });
}

/// The key/value table (schema 8): rows by key and by prefix in key order, replaced in place,
/// and deleted by exactly one of two claimants.
async fn kv_rows(store: Arc<dyn Store>) {
    assert_eq!(store.kv_get("q/a/1").await.unwrap(), None);
    store.kv_put("q/a/2", json!({"n": 2})).await.unwrap();
    store.kv_put("q/a/1", json!({"n": 1})).await.unwrap();
    store.kv_put("q/b/1", json!("other queue")).await.unwrap();
    store.kv_put("q/a/1", json!({"n": 10})).await.unwrap();
    assert_eq!(store.kv_get("q/a/1").await.unwrap(), Some(json!({"n": 10})));
    let listed = store.kv_list("q/a/").await.unwrap();
    assert_eq!(listed, vec![("q/a/1".to_owned(), json!({"n": 10})), ("q/a/2".to_owned(), json!({"n": 2}))]);
    assert_eq!(store.kv_list("q/").await.unwrap().len(), 3);
    assert!(store.kv_list("q/c").await.unwrap().is_empty());
    let (first, second) = tokio::join!(store.kv_delete("q/a/1"), store.kv_delete("q/a/1"));
    assert!(first.unwrap() ^ second.unwrap(), "exactly one delete claims the row");
    assert_eq!(store.kv_get("q/a/1").await.unwrap(), None);
}

#[test]
fn sqlite_group_commit_answers_each_write_alone() {
    let dir = scratch("sqlite-group");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async { a_group_commit_answers_each_write_alone(wfc_stores::connect(&url).await.unwrap()).await });
}

#[test]
fn sqlite_kv_rows() {
    let dir = scratch("kv-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async { kv_rows(wfc_stores::connect(&url).await.unwrap()).await });
}

/// A key/value row replaced only over what a writer read (`wfc serve`'s `UpdateMapRun` writes a
/// Map Run's limits row this way): from "no row" once, of two writers that read the same row
/// exactly one wins, and writers that each change one member of the row, reading again after a
/// lost race, all land (8 members changed at once; with `kv_put` the last write of the whole row
/// wins and drops the others).
async fn kv_rows_are_replaced_only_from_what_was_read(store: Arc<dyn Store>) {
    let key = "t/limits/run";
    assert!(store.kv_replace(key, None, json!({"a": 0})).await.unwrap());
    assert!(!store.kv_replace(key, None, json!({"a": 1})).await.unwrap(), "the row exists now");
    let read = json!({"a": 0});
    let (x, y) = tokio::join!(
        store.kv_replace(key, Some(&read), json!({"a": 2})),
        store.kv_replace(key, Some(&read), json!({"a": 3}))
    );
    assert!(x.unwrap() ^ y.unwrap(), "exactly one of two writers that read the same row wins");
    let members: Vec<String> = (0..8).map(|i| format!("m{i}")).collect();
    let change = |member: String| {
        let store = Arc::clone(&store);
        async move {
            loop {
                let row = store.kv_get(key).await.unwrap();
                let mut new = row.clone().unwrap_or_else(|| json!({}));
                new[member.as_str()] = json!(true);
                if store.kv_replace(key, row.as_ref(), new).await.unwrap() {
                    return;
                }
            }
        }
    };
    futures::future::join_all(members.iter().cloned().map(change)).await;
    let row = store.kv_get(key).await.unwrap().unwrap();
    for m in &members {
        assert_eq!(row[m.as_str()], json!(true), "{m} was lost: {row}");
    }
}

#[test]
fn sqlite_kv_rows_are_replaced_only_from_what_was_read() {
    let dir = scratch("kv-replace-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        kv_rows_are_replaced_only_from_what_was_read(wfc_stores::connect(&url).await.unwrap()).await
    });
}

fn durable_now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

#[test]
fn sqlite_a_late_renewal_leaves_a_released_execution_alone() {
    let dir = scratch("released-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async {
        a_late_renewal_leaves_a_released_execution_alone(wfc_stores::connect(&url).await.unwrap()).await
    });
}

/// At SQLite FULL on a file a claim is answered at its group's commit, before the log's sync
/// (nothing the claimer does depends on it until a write of its own, which waits for a sync
/// that covers the claim too): the claim is answered with no sync at all, and the claimed
/// execution's first checkpoint only after one.
#[test]
fn sqlite_answers_a_claim_at_its_commit_and_the_next_write_after_a_sync() {
    let dir = scratch("claim-at-commit-sqlite");
    let store = wfc_sqlite::SqliteStore::open(dir.join("store.db"), wfc_sqlite::Synchronous::Full).unwrap();
    let syncs = || store.log_syncs().expect("a FULL file store syncs its log itself");
    rt().block_on(async {
        store.create_execution(new_execution("claimed-1", json!({}))).await.unwrap();
        let before = syncs();
        let claims = store.claim_runnable("claimer", Duration::from_secs(30), 1, &ClaimFilter::All).await.unwrap();
        let claim = claims.into_iter().next().expect("one claim").expect("loadable");
        assert_eq!(syncs(), before, "the claim waited for a sync of the log");
        store.checkpoint("claimed-1", claim.token, vec![step("Work#1.0", OpStatus::Started)]).await.unwrap();
        assert!(syncs() > before, "the claimed execution's first write was answered before a sync");
        let d = store.describe_execution("claimed-1").await.unwrap().unwrap();
        assert_eq!((d.owner.as_deref(), d.epoch), (Some("claimer"), claim.token.epoch), "{d:?}");
    });
}

#[test]
fn sqlite_fences_a_zombie() {
    let dir = scratch("zombie-sqlite");
    let url = format!("sqlite:{}", dir.join("store.db").display());
    rt().block_on(async { zombie_is_fenced(wfc_stores::connect(&url).await.unwrap()).await });
}

#[test]
fn postgres_many_workers_run_each_execution_exactly_once() {
    let Some(server) = support::pg::TempPostgres::start("many") else { return };
    let total: usize = std::env::var("WFC_PG_EXECUTIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let dir = scratch("pg-many");
    let ledger = dir.join("ledger.txt");
    let handlers = ledger_handlers(&dir, &ledger, &[("res:Work", 0.0)]);
    let def = write(&dir, "many.asl.json", DEFINITION);
    let url = server.url.clone();

    let runtime = rt();
    runtime.block_on(async {
        let store = wfc_stores::connect(&url).await.expect("connect");
        zombie_is_fenced(Arc::clone(&store)).await;
        a_late_renewal_leaves_a_released_execution_alone(Arc::clone(&store)).await;
        kv_rows(Arc::clone(&store)).await;
        a_group_commit_answers_each_write_alone(Arc::clone(&store)).await;
        history_rows_of_many_events_read_and_replace_event_by_event(Arc::clone(&store)).await;
        operations_load_in_the_order_they_were_recorded(Arc::clone(&store)).await;
        a_stop_adds_the_redrive_its_run_had_not_recorded(Arc::clone(&store)).await;
        a_timeout_adds_the_redrive_its_run_had_not_recorded(Arc::clone(&store)).await;
        registry_current_is_replaced_only_from_what_was_read(Arc::clone(&store)).await;
        kv_rows_are_replaced_only_from_what_was_read(Arc::clone(&store)).await;
        for i in 0..total {
            store.create_execution(new_execution(&format!("e{i:04}"), json!({"i": i}))).await.expect("create");
        }
    });
    // One start through the CLI too (idempotent by name: it exists already).
    let o = wfc()
        .args(["executions", "--store", &url, "start", &def, "--name", "e0000", "--input", r#"{"i": 0}"#])
        .output()
        .unwrap();
    assert_eq!(json_of(&o)["existed"], true, "{}", String::from_utf8_lossy(&o.stderr));

    let started = Instant::now();
    let mut workers: Vec<Child> = (0..4).map(|w| worker(&url, &def, &handlers, &format!("w{w}"))).collect();
    // Kill one worker abruptly once work is under way; a replacement joins.
    let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
    while ledger_counts(&ledger).len() < total / 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    workers[0].kill().expect("SIGKILL worker 0");
    let _ = workers[0].wait();
    workers.push(worker(&url, &def, &handlers, "w4"));
    let mut stats = Vec::new();
    for w in workers.iter_mut().skip(1) {
        let out = w.wait_with_output_ref();
        stats.push(out);
    }
    // Executions leased by the killed worker become claimable when the lease (3 s) expires;
    // a last worker picks up whatever is left.
    for _ in 0..10 {
        let left = runtime.block_on(async {
            let store = wfc_stores::connect(&url).await.unwrap();
            store.list_executions().await.unwrap().into_iter().filter(|r| r.status.as_str() == "RUNNING").count()
        });
        if left == 0 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
        let mut last = worker(&url, &def, &handlers, "w-last");
        stats.push(last.wait_with_output_ref());
    }
    let elapsed = started.elapsed();

    let records = runtime.block_on(async { wfc_stores::connect(&url).await.unwrap().list_executions().await.unwrap() });
    let executions: Vec<_> = records.iter().filter(|r| r.name.starts_with('e')).collect();
    assert_eq!(executions.len(), total, "none lost");
    for r in &executions {
        assert_eq!(r.status.as_str(), "SUCCEEDED", "{}: {:?} {:?}", r.name, r.error, r.cause);
        let i = r.input["i"].clone();
        assert_eq!(r.output, Some(json!({"i": i, "r": {"state": "Work"}})), "{}", r.name);
    }
    let counts = ledger_counts(&ledger);
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    for r in &executions {
        assert!(counts.contains_key(&(r.name.clone(), "Work".to_owned())), "{} never ran its task", r.name);
    }
    // Only a task in flight in the killed worker (8 at most) may have run twice.
    assert!(twice.len() <= 8, "tasks ran twice beyond the killed worker's in-flight ones: {twice:?}");
    eprintln!(
        "{total} executions on 4 workers (one killed and replaced) in {:.1} s; {} task(s) in flight at the kill ran again; worker stats: {stats:?}",
        elapsed.as_secs_f64(),
        twice.len()
    );
}

trait WaitOutput {
    fn wait_with_output_ref(&mut self) -> Value;
}

impl WaitOutput for Child {
    fn wait_with_output_ref(&mut self) -> Value {
        let mut stdout = String::new();
        let mut stderr = String::new();
        use std::io::Read;
        if let Some(mut s) = self.stdout.take() {
            let _ = s.read_to_string(&mut stdout);
        }
        if let Some(mut s) = self.stderr.take() {
            let _ = s.read_to_string(&mut stderr);
        }
        let status = self.wait().expect("wait for a worker");
        assert!(
            status.success(),
            "a worker failed ({status}): {stdout}\n{stderr}(its log: OWNER.stderr in the scratch directory)"
        );
        serde_json::from_str(&stdout).unwrap_or(Value::Null)
    }
}

/// TLS to PostgreSQL: a server with `ssl=on`, a self-signed certificate made here (rcgen) and
/// only `hostssl` entries in pg_hba.conf (so a connection that works used TLS), reached with
/// `sslmode=require`, with `verify-full` against that certificate and with `verify-ca` (which
/// checks the chain, not the name); refused with a clear error when the root certificate is
/// another one, when `verify-full` names a host the certificate does not, and when the server
/// has no TLS.
#[test]
fn postgres_over_tls() {
    let dir = scratch("tls");
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("a self-signed certificate");
    let cert_pem = certified.cert.pem();
    let key_pem = certified.signing_key.serialize_pem();
    let Some(server) = support::pg::TempPostgres::start_with("tls", |server, data| {
        server.write_private(&data.join("server.crt"), &cert_pem);
        server.write_private(&data.join("server.key"), &key_pem);
        let hba = data.join("pg_hba.conf");
        let text = std::fs::read_to_string(&hba).expect("initdb wrote pg_hba.conf");
        let tls_only: Vec<String> = text
            .lines()
            .map(|l| match l.strip_prefix("host ") {
                Some(rest) => format!("hostssl {rest}"),
                None => l.to_owned(),
            })
            .collect();
        server.write_private(&hba, &tls_only.join("\n"));
        "-c ssl=on".to_owned()
    }) else {
        return;
    };
    let root = write(&dir, "root.pem", &cert_pem);
    let list = |url: &str| wfc().args(["executions", "--store", url, "list"]).output().expect("wfc runs");
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let require = format!("{}?sslmode=require", server.url);
    let out = list(&require);
    assert!(out.status.success(), "sslmode=require: {}", stderr(&out));
    assert_eq!(json_of(&out), json!([]));
    // The certificate names `localhost` only: verify-full needs that name in the URL ...
    let by_name = server.url.replacen("@127.0.0.1:", "@localhost:", 1);
    let verified = format!("{by_name}?sslmode=verify-full&sslrootcert={root}");
    let out = list(&verified);
    assert!(out.status.success(), "sslmode=verify-full: {}", stderr(&out));
    let out = list(&format!("{}?sslmode=verify-full&sslrootcert={root}", server.url));
    assert_eq!(out.status.code(), Some(2), "verify-full by address: {}", stderr(&out));
    assert!(stderr(&out).contains("sslmode=verify-full") && stderr(&out).contains("certificate"), "{}", stderr(&out));
    // ... and verify-ca checks the chain only, so the address will do.
    let out = list(&format!("{}?sslmode=verify-ca&sslrootcert={root}", server.url));
    assert!(out.status.success(), "sslmode=verify-ca: {}", stderr(&out));
    // A durable run over TLS.
    let def = write(&dir, "one.asl.json", r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#);
    let out = wfc()
        .args(["run", &def, "--input", r#"{"x": 1}"#, "--store", &verified, "--name", "over-tls"])
        .output()
        .expect("wfc runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out), json!({"status": "SUCCEEDED", "output": {"x": 1}}));
    // Without TLS this server refuses the connection: the ones above used TLS.
    let out = list(&format!("{}?sslmode=disable", server.url));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Another root certificate: the server's certificate is refused.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("another certificate");
    let wrong = write(&dir, "other.pem", &other.cert.pem());
    let out = list(&format!("{by_name}?sslmode=verify-full&sslrootcert={wrong}"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sslmode=verify-full") && stderr(&out).contains("certificate"), "{}", stderr(&out));
    let out = list(&format!("{}?sslmode=verify-ca&sslrootcert={wrong}", server.url));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sslmode=verify-ca") && stderr(&out).contains("certificate"), "{}", stderr(&out));
    drop(server);

    // A server without TLS, and sslmode=require: a clear error.
    let Some(plain) = support::pg::TempPostgres::start("notls") else { return };
    let out = list(&format!("{}?sslmode=require", plain.url));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("sslmode=require") && stderr(&out).contains("does not support TLS"),
        "{}",
        stderr(&out)
    );
    // The default (prefer) still connects to it.
    assert!(list(&plain.url).status.success());
}
