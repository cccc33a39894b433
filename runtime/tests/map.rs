//! The inline Map state on the interpreter: item order, the concurrency bound, failure
//! propagation, ItemSelector with `$$.Map.Item`, and the history it records.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use wfc_runtime::ir::*;
use wfc_runtime::{EventType as E, ExecutionResult, Failure, Handlers, Status, TaskContext};

const WORK: &str = "work";

/// A Map over `$.items` whose item processor is one Task calling [`WORK`].
fn map_state(max_concurrency: u64) -> MapState {
    MapState {
        jsonata: false,
        assign: None,
        item_selector_jsonata: None,
        items: None,
        output: None,
        input_path: dollar(),
        items_path: path("$.items"),
        item_selector: None,
        item_processor: sm(vec![("Work", StateKind::Task(task_state(WORK)))]),
        max_concurrency,
        max_concurrency_path: None,
        max_concurrency_jsonata: None,
        distributed: None,
        result_selector: None,
        result_path: Some(rpath("$")),
        output_path: dollar(),
        retry: vec![],
        catch: vec![],
        transition: end(),
    }
}

fn map_workflow(spec: MapState) -> Workflow {
    workflow(vec![("M", StateKind::Map(spec))])
}

/// Sleeps `input.secs` virtual seconds, tracking how many calls are in flight at once, then
/// answers `input.out` (or fails with `input.fail` when present).
fn tracking(in_flight: Arc<AtomicUsize>, peak: Arc<AtomicUsize>, calls: Arc<AtomicUsize>) -> Handlers {
    Handlers::new().on(WORK, move |input: Value, _ctx: TaskContext| {
        let (in_flight, peak, calls) = (Arc::clone(&in_flight), Arc::clone(&peak), Arc::clone(&calls));
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(input["secs"].as_u64().unwrap_or(0))).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            match input["fail"].as_str() {
                Some(error) => Err(Failure::new(error, "item failed")),
                None => Ok(input["out"].clone()),
            }
        }
    })
}

struct Probe {
    peak: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
    result: ExecutionResult,
}

fn run_tracked(spec: MapState, input: Value) -> Probe {
    let (in_flight, peak, calls) = (Arc::default(), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let handlers = tracking(in_flight, Arc::clone(&peak), Arc::clone(&calls));
    let result = run(&map_workflow(spec), &handlers, input);
    Probe { peak, calls, result }
}

fn items(secs: &[u64]) -> Value {
    let items: Vec<Value> = secs.iter().enumerate().map(|(i, s)| json!({"secs": s, "out": i})).collect();
    json!({ "items": items })
}

#[test]
fn results_keep_item_order_whatever_order_iterations_finish_in() {
    // The later the item, the sooner it finishes.
    let probe = run_tracked(map_state(0), items(&[5, 4, 3, 2, 1]));
    assert_eq!(ok(&probe.result), json!([0, 1, 2, 3, 4]));
    // Unbounded: every item runs at once, so the Map takes as long as its slowest item.
    assert_eq!(probe.result.elapsed, Duration::from_secs(5));
    assert_eq!(probe.peak.load(Ordering::SeqCst), 5);
    let succeeded: Vec<Value> = probe
        .result
        .history
        .iter()
        .filter(|e| e.event_type == E::MapIterationSucceeded)
        .map(|e| e.details["index"].clone())
        .collect();
    assert_eq!(succeeded, vec![json!(4), json!(3), json!(2), json!(1), json!(0)], "completion order");
}

#[test]
fn max_concurrency_bounds_the_iterations_in_flight() {
    let probe = run_tracked(map_state(2), items(&[1, 1, 1, 1, 1]));
    assert_eq!(ok(&probe.result), json!([0, 1, 2, 3, 4]));
    assert_eq!(probe.peak.load(Ordering::SeqCst), 2);
    // Two at a time, one second each: 1 s, 1 s, then the fifth alone.
    assert_eq!(probe.result.elapsed, Duration::from_secs(3));

    let probe = run_tracked(map_state(1), items(&[2, 1, 3]));
    assert_eq!(probe.peak.load(Ordering::SeqCst), 1);
    assert_eq!(probe.result.elapsed, Duration::from_secs(6));
    assert_eq!(ok(&probe.result), json!([0, 1, 2]));
}

#[test]
fn a_slot_is_reused_as_soon_as_any_iteration_ends() {
    // Items 0 (3 s) and 1 (1 s) start together; item 2 (2 s) takes item 1's slot at 1 s.
    let probe = run_tracked(map_state(2), items(&[3, 1, 2]));
    assert_eq!(probe.result.elapsed, Duration::from_secs(3));
    let started: Vec<(Value, String)> = probe
        .result
        .history
        .iter()
        .filter(|e| e.event_type == E::MapIterationStarted)
        .map(|e| (e.details["index"].clone(), e.timestamp.to_string()))
        .collect();
    assert_eq!(started[2], (json!(2), "2024-01-01T00:00:01.000Z".to_owned()));
}

#[test]
fn the_first_failing_iteration_fails_the_map_with_its_own_error_and_cancels_the_rest() {
    let input = json!({"items": [
        {"secs": 10, "out": 0},
        {"secs": 1, "fail": "Item.Bad"},
        {"secs": 10, "out": 2},
        {"secs": 10, "out": 3},
    ]});
    let probe = run_tracked(map_state(3), input);
    assert_eq!(probe.result.status, Status::Failed);
    let failure = err(&probe.result);
    assert_eq!((failure.error.as_str(), failure.cause.as_str()), ("Item.Bad", "item failed"));
    // The failure ends the Map at 1 s; the 10-second iterations are aborted, and item 3 never
    // starts (only three could be in flight).
    assert_eq!(probe.result.elapsed, Duration::from_secs(1));
    assert_eq!(probe.calls.load(Ordering::SeqCst), 3);
    let count = |t: E| probe.result.history.iter().filter(|e| e.event_type == t).count();
    assert_eq!(count(E::MapIterationStarted), 3);
    assert_eq!(count(E::MapIterationFailed), 1);
    assert_eq!(count(E::MapIterationAborted), 2);
    assert_eq!(count(E::TaskStateAborted), 2);
    assert_eq!(count(E::MapStateFailed), 1);
}

#[test]
fn catch_handles_an_iteration_failure() {
    let mut spec = map_state(0);
    spec.catch = vec![catcher(&["Item.Bad"], Some("$.caught"), 1)];
    let wf = workflow(vec![("M", StateKind::Map(spec)), ("After", StateKind::Succeed(succeed_state()))]);
    let (in_flight, peak, calls) = (Arc::default(), Arc::default(), Arc::default());
    let input = json!({"items": [{"secs": 0, "fail": "Item.Bad"}]});
    let r = run(&wf, &tracking(in_flight, peak, calls), input);
    assert_eq!(ok(&r)["caught"], json!({"Error": "Item.Bad", "Cause": "item failed"}));
}

#[test]
fn retry_reruns_every_iteration() {
    let mut spec = map_state(0);
    spec.retry = vec![retrier(&["States.ALL"])];
    let calls = Arc::new(AtomicUsize::new(0));
    let handler_calls = Arc::clone(&calls);
    // Only the very first call fails: that fails the first attempt, and the retry re-runs both
    // items, which then succeed.
    let handlers = Handlers::new().on(WORK, move |input: Value, _ctx: TaskContext| {
        let calls = Arc::clone(&handler_calls);
        async move {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n <= 1 { Err(Failure::new("Flaky", "first call")) } else { Ok(input) }
        }
    });
    let r = run(&map_workflow(spec), &handlers, json!({"items": ["a", "b"]}));
    assert_eq!(ok(&r), json!(["a", "b"]));
    let starts = r.history.iter().filter(|e| e.event_type == E::MapStateStarted).count();
    assert_eq!(starts, 2, "the retry re-runs the whole Map");
    assert_eq!(r.elapsed, Duration::from_secs(1), "the default IntervalSeconds");
}

#[test]
fn an_empty_array_gives_an_empty_array() {
    let probe = run_tracked(map_state(0), json!({"items": []}));
    assert_eq!(ok(&probe.result), json!([]));
    assert_eq!(probe.calls.load(Ordering::SeqCst), 0);
    let started = probe.result.history.iter().find(|e| e.event_type == E::MapStateStarted);
    assert_eq!(started.map(|e| e.details["length"].clone()), Some(json!(0)));
}

#[test]
fn items_path_must_select_an_array() {
    let probe = run_tracked(map_state(0), json!({"items": {"a": 1}}));
    let failure = err(&probe.result);
    assert_eq!(failure.error, "States.Runtime");
    assert_eq!(bare_cause(&failure), "Reference path \"$.items\" must point to array.");

    let probe = run_tracked(map_state(0), json!({"other": []}));
    let failure = err(&probe.result);
    assert_eq!(failure.error, "States.Runtime");
    assert!(bare_cause(&failure).starts_with("Invalid path '$.items'"), "{}", failure.cause);
}

#[test]
fn item_selector_sees_the_effective_input_and_the_map_item() {
    let mut spec = map_state(0);
    spec.item_processor = sm(vec![("Echo", StateKind::Pass(pass_state()))]);
    spec.item_selector = Some(tpl(json!({
        "index.$": "$$.Map.Item.Index",
        "value.$": "$$.Map.Item.Value",
        "tag.$": "$.tag",
        "state.$": "$$.State.Name",
        "fixed": 1
    })));
    let r = run(&map_workflow(spec), &no_handlers(), json!({"items": ["x", "y"], "tag": "T"}));
    assert_eq!(
        ok(&r),
        json!([
            {"index": 0, "value": "x", "tag": "T", "state": "M", "fixed": 1},
            {"index": 1, "value": "y", "tag": "T", "state": "M", "fixed": 1},
        ])
    );
}

#[test]
fn result_selector_result_path_and_output_path_apply_to_the_results() {
    let mut spec = map_state(0);
    spec.item_processor = sm(vec![("Echo", StateKind::Pass(pass_state()))]);
    spec.result_selector = Some(tpl(json!({"all.$": "$"})));
    spec.result_path = Some(rpath("$.out"));
    spec.output_path = Some(path("$.out"));
    let r = run(&map_workflow(spec), &no_handlers(), json!({"items": [1, 2]}));
    assert_eq!(ok(&r), json!({"all": [1, 2]}));
}

#[test]
fn each_iteration_chains_its_events_from_map_state_started() {
    let probe = run_tracked(map_state(0), items(&[0, 0]));
    let h = &probe.result.history;
    let started = h.iter().find(|e| e.event_type == E::MapStateStarted).map(|e| e.id);
    for e in h.iter().filter(|e| e.event_type == E::MapIterationStarted) {
        assert_eq!(Some(e.previous_event_id), started);
        let entered = h.iter().find(|x| x.previous_event_id == e.id).map(|x| x.event_type);
        assert_eq!(entered, Some(E::TaskStateEntered));
    }
    let types: Vec<E> = h.iter().map(|e| e.event_type).collect();
    assert_eq!(&types[..3], &[E::ExecutionStarted, E::MapStateEntered, E::MapStateStarted]);
    assert_eq!(&types[types.len() - 3..], &[E::MapStateSucceeded, E::MapStateExited, E::ExecutionSucceeded]);
}
