//! Measurements for docs/durable.md (ignored by default; they write to disk and take seconds).
//! A debug build is fine: dependencies (SQLite included) are built with opt-level 1 and a
//! commit costs an fsync, not CPU:
//!
//! ```sh
//! cargo test -p wfc-journal --test durable_bench -- --ignored --nocapture
//! ```
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;
use wfc_interp::{self as interp, Handlers};
use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{OpStatus, OpType, OperationUpdate, Store};
use wfc_runtime::ir::{StateKind, Transition, Workflow};
use wfc_runtime::{Clock, Failure, RunOptions, Status, TaskContext};
use wfc_sqlite::{SqliteStore, Synchronous};

wfc_runtime::include_workflow!("tests/durable/two_steps.asl.json");

/// The IR `include_workflow!` lowered `tests/durable/<name>.asl.json` to (generated code carries
/// none), for the interpreter's runs of the same definitions.
fn lowered(name: &str) -> wfc_runtime::ir::Workflow {
    let path = format!("tests/durable/{name}.asl.json");
    wfc_build::load_file(&path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

fn db_path(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("durable-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// One checkpoint = one Task attempt's completion (an operation row + the token CAS), the
/// commit every durable step pays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn checkpoint_commits_per_second() {
    for (label, sync, n) in [("FULL", Synchronous::Full, 300), ("NORMAL", Synchronous::Normal, 3000)] {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db_path(&format!("commits-{label}.db")), sync).unwrap());
        let claim = store
            .open_execution(wfc_runtime::durable::NewExecution {
                name: "bench".into(),
                workflow: "bench".into(),
                input: json!({}),
                start_time: "2024-01-01T00:00:00.000Z".into(),
                definition_hash: None,
                version_id: None,
            })
            .await
            .unwrap();
        let mut token = claim.token;
        let mut latencies = Vec::with_capacity(n);
        let started = Instant::now();
        for i in 0..n {
            let update = OperationUpdate {
                id: format!("S#{i}.0"),
                op_type: OpType::Step,
                subtype: "Task".into(),
                name: "S".into(),
                status: OpStatus::Succeeded,
                result: Some(json!({"payload": "x".repeat(200)})),
                error: None,
                cause: None,
                due_at_ms: None,
                callback_token: None,
                parent_id: None,
                heartbeat_seconds: None,
                function_name: None,
            };
            let t = Instant::now();
            token = store.checkpoint("bench", token, vec![update]).await.unwrap();
            latencies.push(t.elapsed());
        }
        let total = started.elapsed();
        latencies.sort();
        println!(
            "synchronous={label}: {n} checkpoints in {:.2} s = {:.0} commits/s; p50 {:.2} ms, p99 {:.2} ms",
            total.as_secs_f64(),
            n as f64 / total.as_secs_f64(),
            percentile(&latencies, 0.5).as_secs_f64() * 1e3,
            percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        );
    }
}

/// A 101-Task chain: the first 100 complete, the process stops in the 101st, and the resume
/// replays 100 recorded steps (and runs the last one for real: 2 more commits).
fn chain(steps: usize) -> Workflow {
    let mut workflow = lowered("two_steps");
    let template = workflow.machine.states[0].clone();
    workflow.machine.states = (0..steps)
        .map(|i| {
            let mut state = template.clone();
            state.name = format!("S{i}");
            if let StateKind::Task(task) = &mut state.kind {
                task.transition = if i + 1 == steps { Transition::End } else { Transition::Next(i + 1) };
            }
            state
        })
        .collect();
    workflow.machine.start_at = 0;
    workflow
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn replay_of_a_100_step_journal() {
    let workflow = chain(101);
    for (label, sync) in [("FULL", Synchronous::Full), ("NORMAL", Synchronous::Normal)] {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db_path(&format!("replay-{label}.db")), sync).unwrap());
        let input = json!({});
        let open = || async {
            match Journal::open(Arc::clone(&store), "chain", &workflow.name, &input, &Clock::real()).await.unwrap() {
                Opened::Running(j) => j,
                Opened::Finished(r) => panic!("finished: {r:?}"),
            }
        };
        let blocked = Arc::new(Notify::new());
        let block = Arc::clone(&blocked);
        let handlers = Handlers::new().fallback(move |_r: String, _i: Value, ctx: TaskContext| {
            let block = Arc::clone(&block);
            async move {
                if ctx.state_name() == "S100" {
                    block.notify_one();
                    futures::future::pending::<()>().await;
                }
                Ok::<Value, Failure>(json!({"n": 1}))
            }
        });
        let first = Instant::now();
        tokio::select! {
            r = interp::run(&workflow, &handlers, input.clone(), RunOptions::real().with_journal(open().await)) => panic!("{r:?}"),
            () = blocked.notified() => {}
        }
        let first = first.elapsed();
        let plain = Handlers::new()
            .fallback(|_r: String, _i: Value, _c: TaskContext| async { Ok::<Value, Failure>(json!({"n": 1})) });
        let started = Instant::now();
        let journal = open().await;
        let loaded = started.elapsed();
        let result = interp::run(&workflow, &plain, input.clone(), RunOptions::real().with_journal(journal)).await;
        let total = started.elapsed();
        assert_eq!(result.status, Status::Succeeded);
        println!(
            "synchronous={label}: first run of 100 steps (200 commits) {:.1} ms; resume: open+load journal {:.2} ms, \
             replay 100 steps + 1 new step + finish {:.1} ms",
            first.as_secs_f64() * 1e3,
            loaded.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
        );
    }
}

/// One execution of a 100-Task chain, with a checkpoint per operation (batching off: STARTED
/// and the outcome of each step commit alone, two commits per step) and with a step's outcome
/// batched with the next step's STARTED (one commit per step), in the same run on the same disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn one_execution_batched_and_unbatched() {
    let workflow = chain(100);
    let handlers = Handlers::new()
        .fallback(|_r: String, _i: Value, _c: TaskContext| async { Ok::<Value, Failure>(json!({"n": 1})) });
    for (label, sync) in [("FULL", Synchronous::Full), ("NORMAL", Synchronous::Normal)] {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db_path(&format!("batch-{label}.db")), sync).unwrap());
        let mut rates = Vec::new();
        let mut commits = Vec::new();
        for (name, batching) in [("warm", true), ("unbatched", false), ("batched", true)] {
            let journal = match Journal::open(Arc::clone(&store), name, &workflow.name, &json!({}), &Clock::real())
                .await
                .unwrap()
            {
                Opened::Running(j) => j,
                Opened::Finished(r) => panic!("finished: {r:?}"),
            };
            journal.set_batching(batching);
            let started = Instant::now();
            let result = interp::run(&workflow, &handlers, json!({}), RunOptions::real().with_journal(journal)).await;
            let elapsed = started.elapsed();
            assert_eq!(result.status, Status::Succeeded);
            rates.push(100.0 / elapsed.as_secs_f64());
            // Each checkpoint (commit) bumps the sequence once.
            commits.push(store.describe_execution(name).await.unwrap().unwrap().checkpoint_seq);
        }
        println!(
            "synchronous={label}: one execution of 100 Tasks: unbatched {:.0} steps/s ({} commits), batched {:.0} steps/s ({} commits): {:.2}x",
            rates[1],
            commits[1],
            rates[2],
            commits[2],
            rates[2] / rates[1]
        );
    }
}

/// The cost of writing a running execution's history as it grows (each checkpoint also writes
/// the events recorded since the last one) against writing it when the execution ends, in the
/// same run on the same store: one execution of a 100-Task chain, batched, each way three times
/// alternately (the best of each is printed, the machine being shared).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn one_execution_live_history() {
    let workflow = chain(100);
    let handlers = Handlers::new()
        .fallback(|_r: String, _i: Value, _c: TaskContext| async { Ok::<Value, Failure>(json!({"n": 1})) });
    for (label, sync) in [("FULL", Synchronous::Full), ("NORMAL", Synchronous::Normal)] {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db_path(&format!("live-{label}.db")), sync).unwrap());
        let mut best = [0.0f64; 2];
        let runs = [("warm", true)].into_iter().chain([("end", false), ("live", true)].repeat(3));
        for (i, (kind, live)) in runs.enumerate() {
            let name = format!("{kind}-{i}");
            let journal = match Journal::open(Arc::clone(&store), &name, &workflow.name, &json!({}), &Clock::real())
                .await
                .unwrap()
            {
                Opened::Running(j) => j,
                Opened::Finished(r) => panic!("finished: {r:?}"),
            };
            journal.set_live_history(live);
            let started = Instant::now();
            let result = interp::run(&workflow, &handlers, json!({}), RunOptions::real().with_journal(journal)).await;
            let rate = 100.0 / started.elapsed().as_secs_f64();
            assert_eq!(result.status, Status::Succeeded);
            assert_eq!(store.read_history(&name).await.unwrap().len(), result.history.len());
            if kind != "warm" {
                let slot = &mut best[usize::from(live)];
                *slot = slot.max(rate);
            }
        }
        println!(
            "synchronous={label}: one execution of 100 Tasks (batched): history at the end {:.0} steps/s ({:.3} ms/step), live history {:.0} steps/s ({:.3} ms/step): {:+.3} ms per step",
            best[0],
            1e3 / best[0],
            best[1],
            1e3 / best[1],
            1e3 / best[1] - 1e3 / best[0]
        );
    }
}
