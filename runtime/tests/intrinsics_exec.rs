//! Intrinsics inside executions: random ones are evaluated afresh per attempt, from the
//! execution's seeded random source, so a seed reproduces a run.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use wfc_interp::Handlers;
use wfc_runtime::ir::intrinsics::Intrinsic;
use wfc_runtime::ir::*;
use wfc_runtime::{Failure, TaskContext};

const WORK: &str = "arn:aws:lambda:us-east-1:123456789012:function:Work";

/// A Task whose Parameters hold a UUID and a MathAdd, retried once; the handler records what
/// each attempt received and fails the first.
fn run_recording(seed: u64) -> (Value, Vec<Value>) {
    let mut task = task_state(WORK);
    task.parameters = Some(Template::Object(vec![
        ("id".into(), Template::Intrinsic(Intrinsic::parse("States.UUID()").expect("uuid"))),
        ("next".into(), Template::Intrinsic(Intrinsic::parse("States.MathAdd($.n, 1)").expect("add"))),
    ]));
    task.retry = vec![retrier(&["Flaky"])];
    let wf = workflow(vec![("Work", StateKind::Task(task))]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = Arc::clone(&seen);
    let handlers = Handlers::new().on(WORK, move |input: Value, ctx: TaskContext| {
        let recorder = Arc::clone(&recorder);
        async move {
            recorder.lock().expect("lock").push(input.clone());
            if ctx.retry_count() == 0 { Err(Failure::new("Flaky", "first attempt")) } else { Ok(input) }
        }
    });
    let result = run_seeded(&wf, &handlers, json!({"n": 41}), seed);
    let seen = seen.lock().expect("lock").clone();
    (ok(&result), seen)
}

#[test]
fn random_parameters_are_fresh_per_attempt_and_reproducible() {
    let (output, seen) = run_recording(3);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["next"], json!(42));
    assert_ne!(seen[0]["id"], seen[1]["id"], "each attempt draws a new UUID");
    assert_eq!(output, seen[1]);
    let (again, _) = run_recording(3);
    assert_eq!(again, output, "the same seed gives the same run");
    let (other, _) = run_recording(4);
    assert_ne!(other["id"], output["id"]);
}
