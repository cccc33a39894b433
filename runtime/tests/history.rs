//! History event sequences, ids, and timestamps on the virtual clock.

mod common;

use common::*;
use serde_json::{Value, json};
use wfc_interp::Handlers;
use wfc_runtime::EventType as E;
use wfc_runtime::ir::*;
use wfc_runtime::{Failure, TaskContext};

fn types(r: &wfc_runtime::ExecutionResult) -> Vec<E> {
    r.history.iter().map(|e| e.event_type).collect()
}

fn small_machine() -> Workflow {
    workflow(vec![
        ("Start", StateKind::Pass(PassState { transition: next(1), ..pass_state() })),
        (
            "Work",
            StateKind::Task(TaskState { retry: vec![retrier(&["Flaky"])], transition: next(2), ..task_state("work") }),
        ),
        (
            "Decide",
            StateKind::Choice(choice_state(vec![(cmp("$.ok", Operator::BooleanEquals, json!(true)), 3)], Some(4))),
        ),
        ("Pause", StateKind::Wait(WaitState { transition: next(5), ..wait_state(WaitDuration::Seconds(2)) })),
        ("Bad", StateKind::Fail(fail_state("NotOk", "the task said no"))),
        ("Done", StateKind::Succeed(succeed_state())),
    ])
}

fn work_handler() -> Handlers {
    Handlers::new().on("work", |input: Value, ctx: TaskContext| async move {
        if ctx.retry_count() == 0 { Err(Failure::new("Flaky", "first try")) } else { Ok(json!({"ok": input["want"]})) }
    })
}

#[test]
fn event_sequence_of_a_successful_run() {
    let r = run(&small_machine(), &work_handler(), json!({"want": true}));
    assert_eq!(ok(&r), json!({"ok": true}));
    assert_eq!(
        types(&r),
        vec![
            E::ExecutionStarted,
            E::PassStateEntered,
            E::PassStateExited,
            E::TaskStateEntered,
            E::TaskScheduled,
            E::TaskStarted,
            E::TaskFailed,
            E::TaskScheduled,
            E::TaskStarted,
            E::TaskSucceeded,
            E::TaskStateExited,
            E::ChoiceStateEntered,
            E::ChoiceStateExited,
            E::WaitStateEntered,
            E::WaitStateExited,
            E::SucceedStateEntered,
            E::SucceedStateExited,
            E::ExecutionSucceeded,
        ]
    );
    // Ids count from 1 and each event points at the one before it.
    for (i, e) in r.history.iter().enumerate() {
        assert_eq!(e.id, i as u64 + 1);
        assert_eq!(e.previous_event_id, i as u64);
    }
    let by_type = |t: E| r.history.iter().find(|e| e.event_type == t).cloned();
    let entered = by_type(E::TaskStateEntered).map(|e| e.details.to_value());
    assert_eq!(entered, Some(json!({"name": "Work", "input": {"want": true}})));
    let exited = by_type(E::TaskStateExited).map(|e| e.details.to_value());
    assert_eq!(exited, Some(json!({"name": "Work", "output": {"ok": true}})));
    let failed = by_type(E::TaskFailed).map(|e| e.details.to_value());
    assert_eq!(failed, Some(json!({"resource": "work", "error": "Flaky", "cause": "first try"})));
    let scheduled = by_type(E::TaskScheduled).map(|e| e.details.to_value());
    assert_eq!(scheduled.as_ref().map(|d| d["parameters"].clone()), Some(json!({"want": true})));
    // Timestamps follow the virtual clock: 1 s of back-off, then a 2 s Wait.
    let stamp = |t: E| by_type(t).map(|e| e.timestamp).unwrap_or_default();
    assert_eq!(stamp(E::ExecutionStarted), "2024-01-01T00:00:00.000Z");
    assert_eq!(stamp(E::TaskSucceeded), "2024-01-01T00:00:01.000Z");
    assert_eq!(stamp(E::WaitStateExited), "2024-01-01T00:00:03.000Z");
    assert_eq!(stamp(E::ExecutionSucceeded), "2024-01-01T00:00:03.000Z");
}

#[test]
fn event_sequence_of_a_failed_run() {
    let r = run(&small_machine(), &work_handler(), json!({"want": false}));
    let t = types(&r);
    assert_eq!(
        &t[t.len() - 4..],
        &[E::ChoiceStateEntered, E::ChoiceStateExited, E::FailStateEntered, E::ExecutionFailed]
    );
    assert_eq!(
        r.history.last().map(|e| e.details.to_value()),
        Some(json!({"error": "NotOk", "cause": "the task said no"}))
    );
}

#[test]
fn history_serializes_like_aws() {
    let r = run(&small_machine(), &work_handler(), json!({"want": true}));
    let first = serde_json::to_value(&r.history[0]).unwrap_or_default();
    assert_eq!(first["type"], "ExecutionStarted");
    assert_eq!(first["id"], 1);
    assert_eq!(first["previousEventId"], 0);
    assert_eq!(first["timestamp"], "2024-01-01T00:00:00.000Z");
    assert_eq!(first["details"]["input"], json!({"want": true}));
}

#[test]
fn parallel_branches_record_into_one_history_with_their_own_chains() {
    let par = parallel_state(vec![
        sm(vec![("A", StateKind::Pass(pass_state()))]),
        sm(vec![("B", StateKind::Pass(pass_state()))]),
    ]);
    let wf = workflow(vec![("P", StateKind::Parallel(par))]);
    let r = run(&wf, &no_handlers(), json!(1));
    assert_eq!(ok(&r), json!([1, 1]));
    let t = types(&r);
    assert_eq!(&t[..3], &[E::ExecutionStarted, E::ParallelStateEntered, E::ParallelStateStarted]);
    assert_eq!(&t[t.len() - 3..], &[E::ParallelStateSucceeded, E::ParallelStateExited, E::ExecutionSucceeded]);
    let started = r.history.iter().find(|e| e.event_type == E::ParallelStateStarted).map(|e| e.id);
    // Each branch's first event follows ParallelStateStarted.
    for name in ["A", "B"] {
        let entered = r.history.iter().find(|e| e.event_type == E::PassStateEntered && e.details["name"] == name);
        assert_eq!(entered.map(|e| e.previous_event_id), started, "branch {name}");
    }
    assert_eq!(r.history.iter().filter(|e| e.event_type == E::PassStateExited).count(), 2);
}

#[test]
fn events_share_each_document_instead_of_copying_it() {
    // Input {"want": true} passes through Start, Work's first attempt and its retry; Work's
    // result {"ok": true} is its output and goes through Decide, Pause and Done unchanged.
    let r = run(&small_machine(), &work_handler(), json!({"want": true}));
    let mut documents: Vec<&std::sync::Arc<Value>> = Vec::new();
    for e in &r.history {
        for key in ["input", "output", "parameters"] {
            if e.details.get(key).is_none() {
                continue;
            }
            let shared = e.details.shared(key);
            assert!(shared.is_some(), "event {} ({:?}) copies its {key}", e.id, e.event_type);
            if let Some(doc) = shared.filter(|d| !documents.iter().any(|seen| std::sync::Arc::ptr_eq(seen, d))) {
                documents.push(doc);
            }
        }
    }
    // Fifteen events carry a document; the history holds two.
    let carrying =
        r.history.iter().filter(|e| ["input", "output", "parameters"].iter().any(|k| e.details.get(k).is_some()));
    assert_eq!(carrying.count(), 15);
    let held: Vec<Value> = documents.iter().map(|d| Value::clone(d)).collect();
    assert_eq!(held, vec![json!({"want": true}), json!({"ok": true})]);
    // And serializes as before: a shared document is written out in full in each event.
    let exited =
        serde_json::to_value(r.history.iter().find(|e| e.event_type == E::ChoiceStateExited)).unwrap_or_default();
    assert_eq!(exited["details"], json!({"name": "Decide", "output": {"ok": true}}));
}
