//! Retry, Catch, timeouts, Parallel failure and cancellation, panics — on virtual time.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use wfc_interp::Handlers;
use wfc_runtime::ir::*;
use wfc_runtime::{EventType, Failure, Status, TaskContext};

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[test]
fn max_attempts_3_means_4_calls_and_backoff_1_2_4() {
    let calls = counter();
    let task = TaskState { retry: vec![retrier(&["Flaky"])], ..task_state("t") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let r = run(&wf, &failing("Flaky", calls.clone()), json!({}));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(r.status, Status::Failed);
    assert_eq!(err(&r).error, "Flaky");
    assert_eq!(r.elapsed, Duration::from_secs(1 + 2 + 4));
}

#[test]
fn max_attempts_0_never_retries() {
    let calls = counter();
    let task = TaskState { retry: vec![Retrier { max_attempts: 0, ..retrier(&["Flaky"]) }], ..task_state("t") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    run(&wf, &failing("Flaky", calls.clone()), json!({}));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn max_delay_seconds_caps_each_interval() {
    let calls = counter();
    let r = Retrier {
        interval_seconds: 2,
        backoff_rate: 3.0,
        max_attempts: 4,
        max_delay_seconds: Some(10),
        ..retrier(&["States.ALL"])
    };
    let wf = workflow(vec![("T", StateKind::Task(TaskState { retry: vec![r], ..task_state("t") }))]);
    let result = run(&wf, &failing("E", calls.clone()), json!({}));
    // 2, 6, min(18,10), min(54,10)
    assert_eq!(result.elapsed, Duration::from_secs(2 + 6 + 10 + 10));
    assert_eq!(calls.load(Ordering::SeqCst), 5);
}

#[test]
fn full_jitter_stays_within_bounds_and_is_reproducible_by_seed() {
    let r =
        Retrier { interval_seconds: 10, backoff_rate: 1.0, max_attempts: 3, jitter: Jitter::Full, ..retrier(&["E"]) };
    let wf = workflow(vec![("T", StateKind::Task(TaskState { retry: vec![r], ..task_state("t") }))]);
    let mut seen = Vec::new();
    for seed in 0..6 {
        let a = run_seeded(&wf, &failing("E", counter()), json!({}), seed).elapsed;
        let b = run_seeded(&wf, &failing("E", counter()), json!({}), seed).elapsed;
        assert_eq!(a, b, "same seed, same delays");
        assert!(a <= Duration::from_secs(30), "{a:?}");
        seen.push(a);
    }
    seen.dedup();
    assert!(seen.len() > 1, "different seeds should give different jitter: {seen:?}");
}

#[test]
fn spec_retry_on_timeout_waits_3_then_4_5_seconds() {
    let calls = counter();
    let c = calls.clone();
    let handlers = Handlers::new().on("slow", move |_input: Value, _ctx: TaskContext| {
        let c = c.clone();
        async move {
            c.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(json!("late"))
        }
    });
    let r = Retrier { interval_seconds: 3, max_attempts: 2, backoff_rate: 1.5, ..retrier(&["States.Timeout"]) };
    let task = TaskState { timeout: Some(Seconds::Fixed(1)), retry: vec![r], ..task_state("slow") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let result = run(&wf, &handlers, json!({}));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(err(&result).error, "States.Timeout");
    // 1 s per timed-out attempt, plus 3 s and 4.5 s of back-off.
    assert_eq!(result.elapsed, Duration::from_millis(1000 + 3000 + 1000 + 4500 + 1000));
    let timed_out = result.history.iter().filter(|e| e.event_type == EventType::TaskTimedOut).count();
    assert_eq!(timed_out, 3);
}

#[test]
fn spec_retry_everything_except_timeout() {
    let retry = vec![Retrier { max_attempts: 0, ..retrier(&["States.Timeout"]) }, retrier(&["States.ALL"])];
    let wf = workflow(vec![("T", StateKind::Task(TaskState { retry, ..task_state("t") }))]);
    let calls = counter();
    run(&wf, &failing("States.Timeout", calls.clone()), json!({}));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let calls = counter();
    run(&wf, &failing("Other", calls.clone()), json!({}));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn spec_complex_retry_scenario_counts_per_retrier_then_catches() {
    let errors = Arc::new(Mutex::new(vec!["ErrorA", "ErrorB", "ErrorC", "ErrorB", "ErrorB"].into_iter()));
    let handlers = Handlers::new().on("X", move |_input: Value, _ctx: TaskContext| {
        let next = errors.lock().ok().and_then(|mut it| it.next()).unwrap_or("Exhausted");
        async move { Err::<Value, _>(Failure::new(next, "")) }
    });
    let task = TaskState {
        retry: vec![
            Retrier { interval_seconds: 1, backoff_rate: 2.0, max_attempts: 2, ..retrier(&["ErrorA", "ErrorB"]) },
            Retrier { interval_seconds: 5, ..retrier(&["ErrorC"]) },
        ],
        catch: vec![catcher(&["States.ALL"], Some("$"), 1)],
        transition: next(2),
        ..task_state("X")
    };
    let wf = workflow(vec![
        ("X", StateKind::Task(task)),
        (
            "Z",
            StateKind::Pass(PassState { result_path: Some(rpath("$.atZ")), result: Some(json!(true)), ..pass_state() }),
        ),
        ("Y", StateKind::Succeed(succeed_state())),
    ]);
    let r = run(&wf, &handlers, json!({}));
    assert_eq!(ok(&r), json!({"Error": "ErrorB", "Cause": "", "atZ": true}));
    // The spec's prose has a fourth wait of 4 s and catches the fifth error, which contradicts its
    // own MaxAttempts of 2 (two retries). AWS counts retries: ErrorA and ErrorB use up the first
    // retrier (waits 1 and 2 s), ErrorC waits 5 s on the second, and the next ErrorB finds the
    // first retrier exhausted, so it is caught at once (no fall-through to other retriers).
    assert_eq!(r.elapsed, Duration::from_secs(1 + 2 + 5));
    let failed = r.history.iter().filter(|e| e.event_type == EventType::TaskFailed).count();
    assert_eq!(failed, 4);
}

#[test]
fn retry_counters_reset_when_the_state_is_reentered() {
    // T fails twice per visit at most once retried; a Choice loops back to T a second time.
    let calls = counter();
    let c = calls.clone();
    let handlers = Handlers::new().on("t", move |input: Value, ctx: TaskContext| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move {
            // Every first attempt of a visit fails; every retry succeeds.
            if ctx.retry_count() == 0 {
                Err(Failure::new("Once", format!("call {n}")))
            } else {
                Ok(json!({"round": input["round"].as_i64().unwrap_or(0) + 1}))
            }
        }
    });
    let task = TaskState {
        retry: vec![Retrier { max_attempts: 1, ..retrier(&["Once"]) }],
        transition: next(1),
        ..task_state("t")
    };
    let choice = choice_state(vec![(cmp("$.round", Operator::NumericLessThan, json!(2)), 0)], Some(2));
    let wf = workflow(vec![
        ("T", StateKind::Task(task)),
        ("Again", StateKind::Choice(choice)),
        ("Done", StateKind::Succeed(succeed_state())),
    ]);
    let r = run(&wf, &handlers, json!({"round": 0}));
    assert_eq!(ok(&r), json!({"round": 2}));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn retry_count_reaches_parameters_and_the_task_context() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let handlers = Handlers::new().on("t", move |input: Value, ctx: TaskContext| {
        if let Ok(mut v) = s.lock() {
            v.push((input["rc"].clone(), ctx.retry_count(), ctx.state_name().to_owned(), ctx.resource().to_owned()));
        }
        async move { if input["rc"] == json!(2) { Ok(json!("done")) } else { Err(Failure::new("Again", "")) } }
    });
    let task = TaskState {
        parameters: Some(tpl(json!({"rc.$": "$$.State.RetryCount"}))),
        retry: vec![Retrier { interval_seconds: 1, ..retrier(&["Again"]) }],
        ..task_state("t")
    };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    assert_eq!(ok(&run(&wf, &handlers, json!({}))), json!("done"));
    let seen = seen.lock().map(|v| v.clone()).unwrap_or_default();
    let expected: Vec<(Value, u32, String, String)> =
        (0..3).map(|i| (json!(i), i, "T".to_owned(), "t".to_owned())).collect();
    assert_eq!(seen, expected);
}

#[test]
fn states_runtime_is_never_retried_or_caught() {
    let calls = counter();
    let task = TaskState {
        parameters: Some(tpl(json!({"x.$": "$.missing"}))),
        retry: vec![retrier(&["States.ALL"])],
        catch: vec![catcher(&["States.Runtime"], Some("$"), 1), catcher(&["States.ALL"], Some("$"), 1)],
        ..task_state("t")
    };
    let wf = workflow(vec![("T", StateKind::Task(task)), ("S", StateKind::Succeed(succeed_state()))]);
    let r = run(&wf, &failing("E", calls.clone()), json!({}));
    assert_eq!(r.status, Status::Failed);
    assert_eq!(err(&r).error, "States.Runtime");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // A handler that raises States.Runtime itself: passed through as is, and terminal too.
    let calls = counter();
    let task = TaskState {
        retry: vec![retrier(&["States.ALL"])],
        catch: vec![catcher(&["States.ALL"], Some("$"), 1)],
        ..task_state("t")
    };
    let wf = workflow(vec![("T", StateKind::Task(task)), ("S", StateKind::Succeed(succeed_state()))]);
    let r = run(&wf, &failing("States.Runtime", calls.clone()), json!({}));
    assert_eq!(err(&r), Failure::new("States.Runtime", "it failed"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

fn sleeper(secs: u64, beat_every: Option<u64>) -> Handlers {
    Handlers::new().on("sleep", move |_input: Value, ctx: TaskContext| async move {
        let step = beat_every.unwrap_or(secs).max(1);
        let mut slept = 0;
        while slept < secs {
            tokio::time::sleep(Duration::from_secs(step)).await;
            slept += step;
            ctx.heartbeat();
        }
        Ok(json!({"slept": slept}))
    })
}

#[test]
fn task_timeout_on_virtual_time() {
    let task = TaskState { timeout: Some(Seconds::Fixed(5)), ..task_state("sleep") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let r = run(&wf, &sleeper(100, None), json!({}));
    assert_eq!(err(&r).error, "States.Timeout");
    assert_eq!(r.elapsed, Duration::from_secs(5));
    assert!(
        r.history.iter().any(|e| e.event_type == EventType::TaskTimedOut && e.details["error"] == "States.Timeout")
    );

    let ok_run = run(&wf, &sleeper(4, None), json!({}));
    assert_eq!(ok(&ok_run), json!({"slept": 4}));
}

/// A timed-out attempt's handler future is dropped as the attempt ends (what it holds goes with
/// it, as with any cancelled future), before a retry calls the handler again: the visit keeps
/// each attempt's future in a slot of its own rather than a box per attempt, and empties it.
#[test]
fn a_timed_out_attempt_is_dropped_before_its_retry_calls_the_handler() {
    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let seen_at_call: Arc<Mutex<Vec<bool>>> = Arc::default();
    let handlers = {
        let (dropped, seen_at_call) = (dropped.clone(), seen_at_call.clone());
        Handlers::new().on("hang", move |_input: Value, _ctx: TaskContext| {
            // Whether the previous attempt's future was dropped, read when the handler is called.
            seen_at_call.lock().unwrap_or_else(|p| p.into_inner()).push(dropped.swap(false, Ordering::SeqCst));
            let flag = DropFlag(dropped.clone());
            async move {
                let _held = flag;
                std::future::pending::<Result<Value, Failure>>().await
            }
        })
    };
    let task = TaskState {
        timeout: Some(Seconds::Fixed(5)),
        retry: vec![Retrier { max_attempts: 2, ..retrier(&["States.Timeout"]) }],
        ..task_state("hang")
    };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let r = run(&wf, &handlers, json!({}));
    assert_eq!(err(&r).error, "States.Timeout");
    assert_eq!(*seen_at_call.lock().unwrap_or_else(|p| p.into_inner()), [false, true, true]);
    assert!(dropped.load(Ordering::SeqCst), "the last attempt's future outlived the execution");
}

#[test]
fn timeout_seconds_path_reads_the_input() {
    let task = TaskState { timeout: Some(Seconds::Path(path("$.limit"))), ..task_state("sleep") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let r = run(&wf, &sleeper(100, None), json!({"limit": 7}));
    assert_eq!(r.elapsed, Duration::from_secs(7));
    assert_eq!(err(&r).error, "States.Timeout");

    let task = TaskState { timeout: Some(Seconds::Path(path("$.NoSuchTimeoutSecondsPath"))), ..task_state("sleep") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let f = err(&run(&wf, &sleeper(1, None), json!({})));
    assert_eq!(f.error, "States.Runtime");
    assert_eq!(
        bare_cause(&f),
        "Invalid path '$.NoSuchTimeoutSecondsPath' : No results for path: $['NoSuchTimeoutSecondsPath']"
    );
    let f = err(&run(&wf, &sleeper(1, None), json!({"NoSuchTimeoutSecondsPath": "ten"})));
    assert_eq!(f.error, "States.Runtime");
}

#[test]
fn heartbeats_keep_a_task_alive_and_a_missed_one_times_it_out() {
    let task =
        TaskState { timeout: Some(Seconds::Fixed(60)), heartbeat: Some(Seconds::Fixed(3)), ..task_state("sleep") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let r = run(&wf, &sleeper(10, Some(2)), json!({}));
    assert_eq!(ok(&r), json!({"slept": 10}));
    assert_eq!(r.elapsed, Duration::from_secs(10));

    let r = run(&wf, &sleeper(10, Some(4)), json!({}));
    let f = err(&r);
    assert_eq!(f.error, "States.Timeout", "heartbeat expiry is States.Timeout");
    assert_eq!(r.elapsed, Duration::from_secs(3));
    assert!(r.history.iter().any(|e| e.event_type == EventType::TaskTimedOut));
}

#[test]
fn workflow_timeout_seconds_times_the_execution_out() {
    let mut wf = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::Seconds(100))))]);
    wf.timeout_seconds = Some(10);
    let r = run(&wf, &no_handlers(), json!({}));
    assert_eq!(r.status, Status::TimedOut);
    // AWS records a timed-out execution with neither an error nor a cause.
    assert_eq!(r.error, None);
    assert_eq!(r.elapsed, Duration::from_secs(10));
    let last = r.history.last().expect("a history");
    assert_eq!(last.event_type, EventType::ExecutionTimedOut);
    assert_eq!(last.details, json!({}));
    // A Rust caller still gets an error: States.Timeout, no cause.
    assert_eq!(r.clone().into_result(), Err(Failure::new("States.Timeout", "")));
}

#[test]
fn parallel_failure_keeps_the_branch_error_and_cancels_siblings() {
    let finished = Arc::new(AtomicBool::new(false));
    let f = finished.clone();
    let handlers = Handlers::new().on("slow", move |_input: Value, _ctx: TaskContext| {
        let f = f.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(100)).await;
            f.store(true, Ordering::SeqCst);
            Ok(json!("slow done"))
        }
    });
    let failing_branch = sm(vec![
        ("Pause", StateKind::Wait(WaitState { transition: next(1), ..wait_state(WaitDuration::Seconds(1)) })),
        ("Boom", StateKind::Fail(fail_state("FailureType", "branch failed"))),
    ]);
    let slow_branch = sm(vec![("Slow", StateKind::Task(task_state("slow")))]);
    let par = parallel_state(vec![slow_branch, failing_branch]);
    let wf = workflow(vec![("P", StateKind::Parallel(par))]);
    let r = run(&wf, &handlers, json!({}));
    assert_eq!(err(&r), Failure::new("FailureType", "branch failed"));
    assert_eq!(r.elapsed, Duration::from_secs(1));
    assert!(!finished.load(Ordering::SeqCst), "the sibling branch was cancelled");
    assert!(!r.history.iter().any(|e| e.event_type == EventType::TaskSucceeded));
    assert!(r.history.iter().any(|e| e.event_type == EventType::ParallelStateFailed && e.details["name"] == "P"));
    let aborted: Vec<_> =
        r.history.iter().filter(|e| e.event_type == EventType::TaskStateAborted).map(|e| e.details.clone()).collect();
    assert_eq!(aborted, vec![json!({"name": "Slow"})]);
}

#[test]
fn an_execution_timeout_aborts_the_running_state() {
    let inner = sm(vec![("Nap", StateKind::Wait(wait_state(WaitDuration::Seconds(50))))]);
    let mut wf = workflow(vec![("P", StateKind::Parallel(parallel_state(vec![inner])))]);
    wf.timeout_seconds = Some(5);
    let r = run(&wf, &no_handlers(), json!({}));
    assert_eq!(r.status, Status::TimedOut);
    let tail: Vec<EventType> = r.history.iter().rev().take(3).map(|e| e.event_type).collect();
    assert_eq!(tail, vec![EventType::ExecutionTimedOut, EventType::ParallelStateAborted, EventType::WaitStateAborted]);
}

#[test]
fn parallel_retry_reruns_every_branch_and_catch_sees_the_branch_error() {
    let calls = counter();
    let c = calls.clone();
    let handlers = Handlers::new().on("ok", move |_input: Value, _ctx: TaskContext| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!("fine")) }
    });
    let par = ParallelState {
        retry: vec![Retrier { max_attempts: 2, ..retrier(&["BranchError"]) }],
        catch: vec![catcher(&["BranchError"], Some("$.error"), 1)],
        ..parallel_state(vec![
            sm(vec![("Ok", StateKind::Task(task_state("ok")))]),
            sm(vec![("Bad", StateKind::Fail(fail_state("BranchError", "nope")))]),
        ])
    };
    let wf = workflow(vec![("P", StateKind::Parallel(par)), ("Recover", StateKind::Succeed(succeed_state()))]);
    let r = run(&wf, &handlers, json!({"k": 1}));
    assert_eq!(ok(&r), json!({"k": 1, "error": {"Error": "BranchError", "Cause": "nope"}}));
    let started = r.history.iter().filter(|e| e.event_type == EventType::ParallelStateStarted).count();
    assert_eq!(started, 3, "one attempt and two retries");
    assert!(calls.load(Ordering::SeqCst) <= 3);
}

#[test]
fn a_handler_panic_becomes_a_failure_not_a_crash() {
    let handlers = Handlers::new()
        .on("panics", |_input: Value, _ctx: TaskContext| async move {
            let v: Vec<u8> = Vec::new();
            if v.is_empty() {
                panic!("boom in handler");
            }
            Ok(json!(null))
        })
        .on("panics-early", |_input: Value, _ctx: TaskContext| -> std::future::Ready<Result<Value, Failure>> {
            panic!("boom before the future")
        });
    let wf = workflow(vec![("T", StateKind::Task(task_state("panics")))]);
    let r = run(&wf, &handlers, json!({}));
    assert_eq!(r.status, Status::Failed);
    assert_eq!(err(&r), Failure::new("States.TaskFailed", "handler panicked: boom in handler"));

    let wf = workflow(vec![("T", StateKind::Task(task_state("panics-early")))]);
    assert_eq!(
        err(&run(&wf, &handlers, json!({}))),
        Failure::new("States.TaskFailed", "handler panicked: boom before the future")
    );

    // And it is an ordinary task failure: catchable.
    let task = TaskState { catch: vec![catcher(&["States.TaskFailed"], Some("$.e"), 1)], ..task_state("panics") };
    let wf = workflow(vec![("T", StateKind::Task(task)), ("S", StateKind::Succeed(succeed_state()))]);
    assert_eq!(ok(&run(&wf, &handlers, json!({})))["e"]["Error"], "States.TaskFailed");
}

#[test]
fn states_task_failed_catches_handler_errors_but_not_timeouts() {
    let task = TaskState { catch: vec![catcher(&["States.TaskFailed"], Some("$.caught"), 1)], ..task_state("t") };
    let wf = workflow(vec![("T", StateKind::Task(task)), ("S", StateKind::Succeed(succeed_state()))]);
    let out = ok(&run(&wf, &failing("PaymentDeclined", counter()), json!({})));
    assert_eq!(out["caught"]["Error"], "PaymentDeclined");

    let task = TaskState {
        timeout: Some(Seconds::Fixed(1)),
        catch: vec![catcher(&["States.TaskFailed"], Some("$.caught"), 1)],
        ..task_state("sleep")
    };
    let wf = workflow(vec![("T", StateKind::Task(task)), ("S", StateKind::Succeed(succeed_state()))]);
    assert_eq!(err(&run(&wf, &sleeper(10, None), json!({}))).error, "States.Timeout");
}
