//! Runtime limits: payload size, history length and JSON nesting depth end an execution with
//! AWS's error (terminal: never retried or caught), never with a crash or unbounded growth.

mod common;

use common::*;
use serde_json::{Value, json};
use wfc_interp::{self as interp, DynHandler, Handlers};
use wfc_runtime::ir::*;
use wfc_runtime::limits::{self, Limits, MAX_PAYLOAD_BYTES};
use wfc_runtime::{ExecutionResult, RunOptions, Status, block_on_virtual};

const RESOURCE: &str = "arn:aws:lambda:us-east-1:123456789012:function:Big";

fn run_with(wf: &Workflow, handler: &dyn DynHandler, input: Value, limits: Limits) -> ExecutionResult {
    block_on_virtual(interp::run(wf, handler, input, RunOptions::virtual_time().with_limits(limits)))
}

fn failure(result: &ExecutionResult) -> (String, String) {
    assert_eq!(result.status, Status::Failed, "expected a failure, got {:?}", result.output);
    let f = result.error.clone().unwrap_or_else(|| panic!("failed without an error"));
    (f.error, f.cause)
}

fn nested(levels: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..levels {
        v = json!({ "a": v });
    }
    v
}

/// A Task whose handler returns `result`, with a catch-all catcher and retrier that must not apply.
fn catch_all_task(result: Value) -> (Workflow, Handlers) {
    let mut task = task_state(RESOURCE);
    task.retry = vec![retrier(&["States.ALL"])];
    task.catch = vec![catcher(&["States.ALL"], Some("$.error"), 1)];
    task.transition = next(2);
    let wf = workflow(vec![
        ("Call", StateKind::Task(task)),
        ("Caught", StateKind::Succeed(succeed_state())),
        ("Done", StateKind::Succeed(succeed_state())),
    ]);
    let handlers = Handlers::new().on(RESOURCE, move |_input, _ctx| {
        let result = result.clone();
        async move { Ok(result) }
    });
    (wf, handlers)
}

#[test]
fn oversized_task_result_is_data_limit_exceeded_naming_the_resource_and_not_caught() {
    let (wf, handlers) = catch_all_task(json!({ "blob": "x".repeat(MAX_PAYLOAD_BYTES) }));
    let result = run(&wf, &handlers, json!({}));
    let (error, cause) = failure(&result);
    assert_eq!(error, "States.DataLimitExceeded");
    assert_eq!(
        cause,
        format!(
            "The state/task '{RESOURCE}' returned a result with a size exceeding the maximum number of bytes service limit."
        )
    );
    // Neither the retrier nor the catcher ran: one attempt, no state after the Task.
    // RESOURCE is a bare Lambda function ARN: its attempts are LambdaFunction* events, as on AWS.
    let entered =
        result.history.iter().filter(|e| e.event_type == wfc_runtime::EventType::LambdaFunctionStarted).count();
    assert_eq!(entered, 1);
    assert!(!result.history.iter().any(|e| e.event_type == wfc_runtime::EventType::SucceedStateEntered));
}

#[test]
fn task_result_just_under_the_limit_passes() {
    // {"b":"xxx..."} is 8 bytes of framing; the payload must be strictly below 256 KiB.
    let (wf, handlers) = catch_all_task(json!({ "b": "x".repeat(MAX_PAYLOAD_BYTES - 9) }));
    let result = run(&wf, &handlers, json!({}));
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let (wf, handlers) = catch_all_task(json!({ "b": "x".repeat(MAX_PAYLOAD_BYTES - 8) }));
    assert_eq!(failure(&run(&wf, &handlers, json!({}))).0, "States.DataLimitExceeded");
}

/// Tasks in a row whose requests are their inputs as they came: after the first, a Task skips
/// checking its request (its input is the checked output of the state before it), but the first
/// state of a Parallel branch gets an input nothing checked (the Parallel's Parameters) and
/// must check it. Here the Parameters double a document of 60% of the limit.
#[test]
fn a_branch_first_task_checks_the_request_its_parallel_built() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let handlers = Handlers::new().on(RESOURCE, move |input, _ctx| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move { Ok(input) }
    });
    let chain = |first: &'static str| {
        let mut call = task_state(RESOURCE);
        call.transition = next(1);
        vec![(first, StateKind::Task(call)), ("Again", StateKind::Task(task_state(RESOURCE)))]
    };
    let par =
        |parameters: Option<Template>| ParallelState { parameters, ..parallel_state(vec![sm(chain("BranchCall"))]) };
    let doubled = Some(tpl(json!({ "a.$": "$", "b.$": "$" })));
    let input = json!({ "s": "x".repeat(MAX_PAYLOAD_BYTES * 6 / 10) });

    let wf = workflow(vec![("P", StateKind::Parallel(par(doubled)))]);
    let (error, cause) = failure(&run(&wf, &handlers, input.clone()));
    assert_eq!(error, "States.DataLimitExceeded");
    assert!(cause.contains("'BranchCall'"), "{cause}");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0, "the handler ran on an oversized request");

    // The same document unchanged passes through both Tasks of the branch and of the top level.
    let wf = workflow(vec![("P", StateKind::Parallel(par(None)))]);
    assert_eq!(ok(&run(&wf, &handlers, input.clone())), json!([input.clone()]));
    assert_eq!(ok(&run(&workflow(chain("Call")), &handlers, input.clone())), input);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4);
}

#[test]
fn oversized_state_output_names_the_state() {
    let mut pass = pass_state();
    pass.result = Some(json!("y".repeat(MAX_PAYLOAD_BYTES)));
    let wf = workflow(vec![("Grow", StateKind::Pass(pass))]);
    let (error, cause) = failure(&run(&wf, &no_handlers(), json!({})));
    assert_eq!(error, "States.DataLimitExceeded");
    assert_eq!(
        cause,
        "The state/task 'Grow' returned a result with a size exceeding the maximum number of bytes service limit."
    );
}

#[test]
fn oversized_execution_input_fails_before_the_first_state() {
    let wf = workflow(vec![("Only", StateKind::Pass(pass_state()))]);
    let result = run(&wf, &no_handlers(), json!("z".repeat(MAX_PAYLOAD_BYTES)));
    assert_eq!(failure(&result).0, "States.DataLimitExceeded");
    assert!(!result.history.iter().any(|e| e.event_type == wfc_runtime::EventType::PassStateEntered));
}

#[test]
fn payload_limit_is_configurable() {
    let mut pass = pass_state();
    pass.result = Some(json!("0123456789"));
    let wf = workflow(vec![("Small", StateKind::Pass(pass))]);
    let tight = Limits { max_payload_bytes: 10, ..Limits::default() };
    assert_eq!(failure(&run_with(&wf, &no_handlers(), json!(1), tight)).0, "States.DataLimitExceeded");
    let roomy = Limits { max_payload_bytes: 13, ..Limits::default() };
    assert_eq!(run_with(&wf, &no_handlers(), json!(1), roomy).status, Status::Succeeded);
}

/// A Pass state that loops to itself forever.
fn endless_loop() -> Workflow {
    let mut pass = pass_state();
    pass.transition = next(0);
    workflow(vec![("Again", StateKind::Pass(pass))])
}

#[test]
fn an_endless_loop_stops_at_the_history_limit() {
    let result = run(&endless_loop(), &no_handlers(), json!({"n": 1}));
    let (error, cause) = failure(&result);
    assert_eq!(error, "States.Runtime");
    assert!(cause.contains("history reached the limit of 25000 events"), "{cause}");
    // The limit is checked before each state: at most one state's events past it, plus the end.
    assert!(result.history.len() >= 25_000 && result.history.len() <= 25_003, "{}", result.history.len());
}

#[test]
fn history_limit_is_configurable_and_bounds_retries() {
    let limits = Limits { max_history_events: 50, ..Limits::default() };
    let result = run_with(&endless_loop(), &no_handlers(), json!({}), limits);
    assert_eq!(failure(&result).0, "States.Runtime");
    assert!(result.history.len() <= 53);

    // A retrier with a huge MaxAttempts cannot grow the history without bound either.
    let mut task = task_state(RESOURCE);
    let mut r = retrier(&["States.ALL"]);
    r.max_attempts = 99_999_999;
    task.retry = vec![r];
    let wf = workflow(vec![("Flaky", StateKind::Task(task))]);
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let result = run_with(&wf, &failing("Boom", calls), json!({}), limits);
    let (error, cause) = failure(&result);
    assert_eq!(error, "States.Runtime");
    assert!(cause.contains("limit of 50 events"), "{cause}");
}

#[test]
fn too_deep_task_result_is_a_runtime_error() {
    let (wf, handlers) = catch_all_task(nested(limits::MAX_JSON_DEPTH + 1));
    let (error, cause) = failure(&run(&wf, &handlers, json!({})));
    assert_eq!(error, "States.Runtime");
    assert!(cause.contains("nested more than 512 levels"), "{cause}");
    let (wf, handlers) = catch_all_task(nested(limits::MAX_JSON_DEPTH - 1));
    assert_eq!(run(&wf, &handlers, json!({})).status, Status::Succeeded);
}

#[test]
fn too_deep_execution_input_is_a_runtime_error() {
    let wf = workflow(vec![("Only", StateKind::Pass(pass_state()))]);
    let (error, _) = failure(&run(&wf, &no_handlers(), nested(limits::MAX_JSON_DEPTH + 100)));
    assert_eq!(error, "States.Runtime");
}

#[test]
fn a_loop_that_nests_its_input_deeper_each_time_stops_at_the_depth_limit() {
    // {"a.$": "$"} wraps the input one level deeper per iteration (6 bytes more), so the depth
    // limit, not the payload or history limit, is what ends it.
    let mut pass = pass_state();
    pass.parameters = Some(tpl(json!({ "a.$": "$" })));
    pass.transition = next(0);
    let wf = workflow(vec![("Wrap", StateKind::Pass(pass))]);
    let result = run(&wf, &no_handlers(), json!(0));
    let (error, cause) = failure(&result);
    assert_eq!(error, "States.Runtime");
    assert!(cause.starts_with("An error occurred while executing the state 'Wrap'"), "{cause}");
    assert!(cause.contains("nested more than 512 levels"), "{cause}");
    // The failed execution's history still serializes (nothing in it is deeper than the limit).
    assert!(serde_json::to_string(&result.history).is_ok());
}

#[test]
fn descendant_search_on_the_deepest_allowed_document_does_not_overflow() {
    // `..` and filters walk with explicit stacks; run them on a thread with a tokio-sized
    // (2 MiB) stack to prove a document at the depth limit is safe to search.
    let doc = nested(limits::MAX_JSON_DEPTH);
    let handle = std::thread::Builder::new().stack_size(2 * 1024 * 1024).spawn(move || {
        let found = path("$..a").select(&doc).map(|v| v.as_array().map_or(0, Vec::len));
        let filtered = path("$..[?(@.a == 1)]").select(&doc).map(|v| v.as_array().map_or(0, Vec::len));
        std::mem::forget(doc); // dropping is recursive in serde_json; not what this test measures
        (found, filtered)
    });
    let (found, filtered) = handle.ok().and_then(|h| h.join().ok()).unwrap_or_else(|| panic!("thread died"));
    assert_eq!(found.ok(), Some(limits::MAX_JSON_DEPTH));
    assert_eq!(filtered.ok(), Some(1));
}
