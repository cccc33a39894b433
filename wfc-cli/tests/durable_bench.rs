//! Durable step benchmark (ignored by default; run it with
//! `cargo test --release -p wfc-cli --test durable_bench -- --ignored --nocapture`).
//!
//! On the same disk (CARGO_TARGET_TMPDIR, and PostgreSQL's data directory in the system temp
//! directory): a raw 4 KiB write + fsync; SQLite FULL and NORMAL (single commits in sequence, a
//! 100-step chain run durably vs not, and 32 executions at once, which the group committer
//! batches); PostgreSQL with 1 and 4 workers (in-process `Worker`s, each with its own connection
//! pool, as separate processes would have). A "step" is one Task: two commits (STARTED, then the
//! outcome). Figures go to docs/durable.md and docs/benchmarks.md.

mod support;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wfc_interp::Handlers;
use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{NewExecution, OpStatus, OpType, OperationUpdate, Store};
use wfc_runtime::{Clock, RunOptions};
use wfc_worker::{Worker, WorkerConfig, Workflows};

fn chain(n: usize) -> wfc_runtime::ir::Workflow {
    let mut states = serde_json::Map::new();
    for i in 0..n {
        let mut s = json!({"Type": "Task", "Resource": "res:Step", "ResultPath": "$.last"});
        if i + 1 == n {
            s["End"] = json!(true);
        } else {
            s["Next"] = json!(format!("S{}", i + 1));
        }
        states.insert(format!("S{i}"), s);
    }
    let text = json!({"StartAt": "S0", "States": states}).to_string();
    wfc_core::load(wfc_core::Source { path: "chain.asl.json", text: &text }).expect("a valid chain").workflow
}

fn handlers() -> Arc<Handlers> {
    Arc::new(Handlers::new().on("res:Step", |input: Value, _ctx| async move { Ok(json!({"n": input["n"]})) }))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn per_second(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn raw_fsync(dir: &std::path::Path) -> f64 {
    let path = dir.join("fsync.bin");
    let mut f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(&path).unwrap();
    let block = [7u8; 4096];
    let n = 200;
    let start = Instant::now();
    for _ in 0..n {
        f.write_all(&block).unwrap();
        f.sync_data().unwrap();
    }
    per_second(n, start.elapsed())
}

fn step_update(i: usize) -> OperationUpdate {
    OperationUpdate {
        id: format!("S{i}#1.0"),
        op_type: OpType::Step,
        subtype: "Task".into(),
        name: format!("S{i}"),
        status: OpStatus::Succeeded,
        result: Some(json!({"payload": "x".repeat(200)})),
        error: None,
        cause: None,
        due_at_ms: None,
        callback_token: None,
        parent_id: None,
        heartbeat_seconds: None,
        function_name: None,
    }
}

/// Single commits in sequence (one execution, one checkpoint at a time).
async fn single_commits(store: Arc<dyn Store>, n: usize) -> f64 {
    let new = NewExecution {
        name: "commits".into(),
        workflow: "bench".into(),
        input: json!({}),
        start_time: "2024-01-01T00:00:00.000Z".into(),
        definition_hash: None,
        version_id: None,
    };
    let claim = store.open_execution(new).await.unwrap();
    let mut token = claim.token;
    let start = Instant::now();
    for i in 0..n {
        token = store.checkpoint("commits", token, vec![step_update(i)]).await.unwrap();
    }
    per_second(n, start.elapsed())
}

/// One execution of `workflow`, durably (with a store) or not; returns its wall time.
async fn one_run(store: Option<Arc<dyn Store>>, workflow: &wfc_runtime::ir::Workflow, name: &str) -> Duration {
    one_run_batched(store, workflow, name, true).await
}

/// [`one_run`] with the journal's batching of a step's outcome with the next checkpoint on or
/// off (off: two commits per step, as before batching).
async fn one_run_batched(
    store: Option<Arc<dyn Store>>,
    workflow: &wfc_runtime::ir::Workflow,
    name: &str,
    batching: bool,
) -> Duration {
    let handler = handlers();
    let start = Instant::now();
    let mut options = RunOptions::real();
    if let Some(store) = store {
        let Opened::Running(journal) =
            Journal::open(store, name, &workflow.name, &json!({"n": 1}), &Clock::real()).await.unwrap()
        else {
            panic!("a new execution")
        };
        journal.set_batching(batching);
        options = options.with_journal(journal);
    }
    let result = wfc_interp::run(workflow, handler.as_ref(), json!({"n": 1}), options).await;
    assert_eq!(result.status, wfc_runtime::Status::Succeeded);
    start.elapsed()
}

/// `executions` runs of `workflow` at once on one store; returns steps per second.
async fn concurrent_runs(
    store: Arc<dyn Store>,
    workflow: Arc<wfc_runtime::ir::Workflow>,
    executions: usize,
    prefix: &str,
) -> f64 {
    let steps = workflow.machine.states.len() * executions;
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..executions {
        let (store, workflow, name) = (Arc::clone(&store), Arc::clone(&workflow), format!("{prefix}-{i}"));
        set.spawn(async move { one_run(Some(store), &workflow, &name).await });
    }
    while set.join_next().await.is_some() {}
    per_second(steps, start.elapsed())
}

fn sqlite(dir: &std::path::Path, label: &str, sync: wfc_sqlite::Synchronous) -> Arc<dyn Store> {
    let path = dir.join(format!("bench-{label}.db"));
    let _ = std::fs::remove_file(&path);
    Arc::new(wfc_sqlite::SqliteStore::open(path, sync).unwrap())
}

/// Runs `executions` queued executions of `workflow` on `workers` in-process workers.
async fn pg_workers(
    url: &str,
    workflow: Arc<wfc_runtime::ir::Workflow>,
    workers: usize,
    executions: usize,
    prefix: &str,
) -> f64 {
    let store = wfc_stores::connect(url).await.unwrap();
    for i in 0..executions {
        let new = NewExecution {
            name: format!("{prefix}-{i}"),
            workflow: workflow.name.clone(),
            input: json!({"n": i}),
            start_time: "2024-01-01T00:00:00.000Z".into(),
            definition_hash: None,
            version_id: None,
        };
        store.create_execution(new).await.unwrap();
    }
    let steps = workflow.machine.states.len() * executions;
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for w in 0..workers {
        let store = wfc_stores::connect(url).await.unwrap();
        let flows = Workflows::new().interpreted(Arc::clone(&workflow), handlers());
        let config = WorkerConfig {
            owner: format!("{prefix}-w{w}"),
            concurrency: 8,
            exit_when_idle: true,
            poll_interval: Duration::from_millis(20),
            ..WorkerConfig::default()
        };
        set.spawn(async move { Worker::new(store, flows, config).run(futures::future::pending()).await.unwrap() });
    }
    while set.join_next().await.is_some() {}
    per_second(steps, start.elapsed())
}

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn durable_steps() {
    let dir = support::scratch("bench");
    let rt = rt();
    let chain100 = chain(100);
    let chain20 = Arc::new(chain(20));
    let fsyncs = raw_fsync(&dir);
    println!("raw 4 KiB write + fdatasync: {fsyncs:.0}/s ({:.2} ms each)", 1000.0 / fsyncs);
    rt.block_on(async {
        // Warm up (page cache, allocator) and measure the plain run.
        one_run(None, &chain100, "warm").await;
        let plain = one_run(None, &chain100, "plain").await;
        println!("100-step chain without a store: {:.1} ms", plain.as_secs_f64() * 1e3);
        for (label, sync) in [("FULL", wfc_sqlite::Synchronous::Full), ("NORMAL", wfc_sqlite::Synchronous::Normal)] {
            let n = if label == "FULL" { 300 } else { 3000 };
            let commits = single_commits(sqlite(&dir, &format!("commits-{label}"), sync), n).await;
            let store = sqlite(&dir, label, sync);
            let unbatched = one_run_batched(Some(Arc::clone(&store)), &chain100, "seq-unbatched", false).await;
            let unbatched = per_second(100, unbatched);
            let durable = one_run(Some(Arc::clone(&store)), &chain100, "seq").await;
            let overhead = (durable.as_secs_f64() - plain.as_secs_f64()) / 100.0 * 1e3;
            let seq = per_second(100, durable);
            let conc = concurrent_runs(Arc::clone(&store), Arc::clone(&chain20), 32, "conc").await;
            println!(
                "SQLite {label}: single commits {commits:.0}/s; one execution unbatched {unbatched:.0} steps/s, batched {seq:.0} steps/s ({:.1}x; overhead {overhead:.2} ms/step); 32 executions at once {conc:.0} steps/s ({:.1}x one execution)",
                seq / unbatched,
                conc / seq
            );
        }
    });
    let Some(server) = support::pg::TempPostgres::start("bench") else { return };
    let url = server.url.clone();
    rt.block_on(async {
        let store = wfc_stores::connect(&url).await.unwrap();
        let commits = single_commits(Arc::clone(&store), 300).await;
        let unbatched = per_second(100, one_run_batched(Some(Arc::clone(&store)), &chain100, "pg-unbatched", false).await);
        let durable = one_run(Some(Arc::clone(&store)), &chain100, "pg-seq").await;
        let seq = per_second(100, durable);
        println!(
            "PostgreSQL: single commits {commits:.0}/s; one execution unbatched {unbatched:.0} steps/s, batched {seq:.0} steps/s ({:.2} ms/step, {:.1}x)",
            1000.0 / seq,
            seq / unbatched
        );
        for workers in [1, 4] {
            let rate = pg_workers(&url, Arc::clone(&chain20), workers, 200, &format!("pg{workers}")).await;
            println!(
                "PostgreSQL, {workers} worker(s) x 8 executions at once, 200 executions of 20 steps: {rate:.0} steps/s ({:.1}x one execution)",
                rate / seq
            );
        }
    });
}
