//! `wfc-bench --durable`: durable steps per second on each store at full durability.
//!
//! ```text
//! cargo run --release -p wfc-bench -- --durable [--quick] [--json] [--executions N]
//! ```
//!
//! Every row runs queued executions of a 10-Task chain (`workflows/durable_chain.asl.json`, a
//! trivial handler) through the runtime's `Worker`, as `wfc worker` does, and reports:
//! - `steps_per_sec`: Tasks finished per second of the workers' wall time;
//! - `commits_per_sec`: flushes of the store's log per second: SQLite's syncs of its log at FULL
//!   (`SqliteStore::log_syncs`, each serving every commit made before it began) and its committed
//!   write transactions at NORMAL, PostgreSQL's WAL syncs
//!   (`pg_stat_wal.wal_sync`; the server's group commit lets one sync serve many transactions);
//! - `p50_ms`/`p99_ms`: step latency, the time between one Task's handler call and the next
//!   one's in the same execution (the checkpoint of the step between them, and any wait for the
//!   store);
//! - `fsync_per_sec`: this disk's own rate of 4 KiB writes each followed by `fdatasync`, measured
//!   in the same run on the same file system, so `commits_per_sec / fsync_per_sec` and steps per
//!   commit can be compared across machines.
//!
//! SQLite runs in this process at FULL (`durability: "full"`) and NORMAL; PostgreSQL (default
//! `synchronous_commit`, so full) is a throw-away server this process starts, as the tests do,
//! with 1 and 4 worker processes: this binary started again with `--durable-worker`, each with
//! its own connections, started together once all have connected. `concurrency` is the number
//! of executions running at once in all workers together.
//!
//! Since the machine is shared and its load moves, each row also reports the CPU time a step
//! costs (which load barely changes): `cpu_us_per_step` in the process(es) running the
//! executions (SQLite: this process; PostgreSQL: the worker processes) and
//! `server_cpu_us_per_step`, the PostgreSQL server's (the postmaster and every process under it,
//! read from `/proc`; 0 for SQLite, absent where `/proc` is not).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wfc_interp::Handlers;
use wfc_runtime::durable::{self, NewExecution, Store};
use wfc_sqlite::{SqliteStore, Synchronous};
use wfc_worker::{Worker, WorkerConfig, Workflows};

// The throw-away PostgreSQL server of wfc-cli's tests, shared rather than copied.
#[path = "../../wfc-cli/tests/support/pg.rs"]
#[allow(dead_code, unreachable_pub)]
mod pg;

/// The benchmark workflow: 10 Tasks in a chain.
const CHAIN: &str = include_str!("../workflows/durable_chain.asl.json");
/// The Tasks per execution of [`CHAIN`].
const STEPS_PER_EXECUTION: usize = 10;
/// Concurrent executions per row.
const CONCURRENCY: [usize; 4] = [1, 8, 32, 128];

pub(crate) const USAGE: &str = "usage: wfc-bench --durable [--quick] [--json] [--executions N] [--store STORE]
                    [--concurrency N] [--workers N] [--pg-url URL]
  --quick            fewer executions per row (about a quarter)
  --store STORE      only `sqlite` or only `postgres` (e.g. to profile one store)
  --json             print {\"durable\": [...]} instead of a table
  --executions N     exactly N executions per row (CI smoke runs)
  --concurrency N    only the rows of N concurrent executions
  --workers N        only the PostgreSQL rows with N worker processes
  --pg-url URL       a running PostgreSQL server (its `postgres` database) instead of one the
                     benchmark starts; each row creates a database of its own there";

/// One measured configuration.
#[derive(Debug)]
struct Row {
    store: &'static str,
    durability: &'static str,
    concurrency: usize,
    workers: usize,
    executions: usize,
    steps_per_sec: f64,
    commits_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    fsync_per_sec: f64,
    cpu_us_per_step: Option<f64>,
    server_cpu_us_per_step: Option<f64>,
}

impl Row {
    fn to_json(&self) -> Value {
        json!({
            "store": self.store,
            "durability": self.durability,
            "concurrency": self.concurrency,
            "workers": self.workers,
            "executions": self.executions,
            "steps_per_sec": round(self.steps_per_sec),
            "commits_per_sec": round(self.commits_per_sec),
            "p50_ms": round(self.p50_ms),
            "p99_ms": round(self.p99_ms),
            "fsync_per_sec": round(self.fsync_per_sec),
            "cpu_us_per_step": self.cpu_us_per_step.map(round),
            "server_cpu_us_per_step": self.server_cpu_us_per_step.map(round),
        })
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What the parent needs from one run of workers: wall time, step latencies, commits.
struct Measured {
    wall: Duration,
    gaps_ms: Vec<f64>,
    commits: u64,
    /// CPU seconds of the process(es) that ran the executions, and of the database server.
    cpu_secs: Option<f64>,
    server_cpu_secs: Option<f64>,
}

/// What rows to run, beyond the store.
#[derive(Default)]
struct Selection {
    concurrency: Option<usize>,
    workers: Option<usize>,
    pg_url: Option<String>,
}

/// The entry point for `--durable` and `--durable-worker` (the rest of `args` after them).
pub(crate) fn main(worker: bool, args: Vec<String>) -> ExitCode {
    if worker {
        return match worker_main(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("wfc-bench --durable-worker: {message}");
                ExitCode::FAILURE
            }
        };
    }
    let mut quick = false;
    let mut as_json = false;
    let mut exact = None;
    let mut stores = vec!["sqlite", "postgres"];
    let mut selection = Selection::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--json" => as_json = true,
            "--executions" => match args.next().map(|n| n.parse::<usize>()) {
                Some(Ok(n)) if n > 0 => exact = Some(n),
                _ => return usage_error("`--executions` needs a positive number"),
            },
            "--concurrency" => match args.next().map(|n| n.parse::<usize>()) {
                Some(Ok(n)) if n > 0 => selection.concurrency = Some(n),
                _ => return usage_error("`--concurrency` needs a positive number"),
            },
            "--workers" => match args.next().map(|n| n.parse::<usize>()) {
                Some(Ok(n)) if n > 0 => selection.workers = Some(n),
                _ => return usage_error("`--workers` needs a positive number"),
            },
            "--pg-url" => match args.next() {
                Some(url) => selection.pg_url = Some(url),
                None => return usage_error("`--pg-url` needs a URL"),
            },
            "--store" => match args.next().as_deref() {
                Some("sqlite") => stores = vec!["sqlite"],
                Some("postgres") => stores = vec!["postgres"],
                _ => return usage_error("`--store` needs `sqlite` or `postgres`"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown argument `{other}`")),
        }
    }
    // Per row: enough executions that the concurrency is reached and held for a while.
    let executions =
        |concurrency: usize| exact.unwrap_or(if quick { (2 * concurrency).max(16) } else { (8 * concurrency).max(64) });
    match run(executions, &stores, &selection, as_json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("wfc-bench --durable: {message}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}\n{USAGE}");
    ExitCode::from(2)
}

fn run(
    executions: impl Fn(usize) -> usize,
    stores: &[&str],
    selection: &Selection,
    as_json: bool,
) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("wfc-bench-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _cleanup = RemoveOnDrop(dir.clone());
    let rt = runtime()?;
    let fsync = disk_fsync_rate(&dir)?;
    let mut rows = Vec::new();
    let sqlite_rows = if stores.contains(&"sqlite") {
        &[(Synchronous::Full, "full"), (Synchronous::Normal, "normal")][..]
    } else {
        &[]
    };
    let concurrencies = || CONCURRENCY.into_iter().filter(|&c| selection.concurrency.is_none_or(|only| only == c));
    for &(sync, durability) in sqlite_rows {
        for concurrency in concurrencies() {
            let n = executions(concurrency);
            let path = dir.join(format!("bench-{durability}-{concurrency}.db"));
            let m = rt.block_on(sqlite_row(&path, sync, concurrency, n))?;
            rows.push(row("sqlite", durability, concurrency, 1, n, &m, fsync));
            progress(as_json, rows.last());
        }
    }
    let server = match &selection.pg_url {
        _ if !stores.contains(&"postgres") => None,
        Some(url) => Some((url.clone(), None)),
        None => pg::TempPostgres::start("bench").map(|server| (server.url.clone(), Some(server))),
    };
    match server {
        Some((url, _server)) => {
            for workers in [1, 4].into_iter().filter(|&w| selection.workers.is_none_or(|only| only == w)) {
                for concurrency in concurrencies().filter(|&c| c >= workers) {
                    let n = executions(concurrency);
                    let prefix = format!("w{workers}c{concurrency}_{}", std::process::id());
                    let m = rt.block_on(pg_row(&url, workers, concurrency, n, &prefix))?;
                    rows.push(row("postgres", "full", concurrency, workers, n, &m, fsync));
                    progress(as_json, rows.last());
                }
            }
        }
        None if stores.contains(&"postgres") => {
            eprintln!("PostgreSQL rows skipped: no server could be started (see above)")
        }
        None => {}
    }
    if as_json {
        let doc = json!({"durable": rows.iter().map(Row::to_json).collect::<Vec<_>>()});
        println!("{doc:#}");
    }
    Ok(())
}

fn row(
    store: &'static str,
    durability: &'static str,
    concurrency: usize,
    workers: usize,
    executions: usize,
    m: &Measured,
    fsync: f64,
) -> Row {
    let secs = m.wall.as_secs_f64().max(f64::EPSILON);
    let steps = (executions * STEPS_PER_EXECUTION) as f64;
    let per_step_us = |cpu: Option<f64>| cpu.map(|s| s * 1e6 / steps);
    Row {
        store,
        durability,
        concurrency,
        workers,
        executions,
        steps_per_sec: (executions * STEPS_PER_EXECUTION) as f64 / secs,
        commits_per_sec: m.commits as f64 / secs,
        p50_ms: percentile(&m.gaps_ms, 0.50),
        p99_ms: percentile(&m.gaps_ms, 0.99),
        fsync_per_sec: fsync,
        cpu_us_per_step: per_step_us(m.cpu_secs),
        server_cpu_us_per_step: per_step_us(m.server_cpu_secs),
    }
}

/// Prints a row of the table as soon as it is measured (the JSON comes at the end).
fn progress(as_json: bool, row: Option<&Row>) {
    let Some(r) = row else { return };
    if as_json {
        return;
    }
    static HEADER: std::sync::Once = std::sync::Once::new();
    HEADER.call_once(|| {
        println!(
            "{:<9} {:<7} {:>7} {:>5} {:>6} {:>10} {:>10} {:>11} {:>8} {:>8} {:>9} {:>9} {:>9}",
            "store",
            "durab.",
            "concur.",
            "wkrs",
            "execs",
            "steps/s",
            "commits/s",
            "steps/commit",
            "p50 ms",
            "p99 ms",
            "fsync/s",
            "cpu us/st",
            "srv us/st"
        );
    });
    let per_commit = if r.commits_per_sec > 0.0 { r.steps_per_sec / r.commits_per_sec } else { f64::NAN };
    let us = |x: Option<f64>| x.map_or_else(|| "-".to_owned(), |x| format!("{x:.0}"));
    println!(
        "{:<9} {:<7} {:>7} {:>5} {:>6} {:>10.0} {:>10.0} {:>11.1} {:>8.2} {:>8.2} {:>9.0} {:>9} {:>9}",
        r.store,
        r.durability,
        r.concurrency,
        r.workers,
        r.executions,
        r.steps_per_sec,
        r.commits_per_sec,
        per_commit,
        r.p50_ms,
        r.p99_ms,
        r.fsync_per_sec,
        us(r.cpu_us_per_step),
        us(r.server_cpu_us_per_step)
    );
}

fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index]
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))
}

/// Deletes the benchmark's scratch directory however the run ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// 4 KiB writes each followed by `fdatasync`, for about a second: the disk's commit ceiling
/// for one writer that waits for each flush.
fn disk_fsync_rate(dir: &Path) -> Result<f64, String> {
    let path = dir.join("fsync.bin");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let block = [7u8; 4096];
    let start = Instant::now();
    let mut n = 0u32;
    while n < 20 || (start.elapsed() < Duration::from_secs(1) && n < 2000) {
        file.write_all(&block).and_then(|()| file.sync_data()).map_err(|e| format!("fsync test: {e}"))?;
        n += 1;
    }
    Ok(f64::from(n) / start.elapsed().as_secs_f64())
}

fn chain() -> Result<Arc<wfc_runtime::ir::Workflow>, String> {
    wfc_core::load(wfc_core::Source { path: "durable_chain.asl.json", text: CHAIN })
        .map(|loaded| Arc::new(loaded.workflow))
        .map_err(|e| format!("the benchmark workflow does not load: {e:?}"))
}

/// The step-latency recorder the handler feeds: per execution, when its last Task ran.
#[derive(Default)]
struct Latencies {
    last: HashMap<String, Instant>,
    gaps_ms: Vec<f64>,
}

/// The trivial task handler, recording step latencies in `latencies`.
fn handlers(latencies: Arc<Mutex<Latencies>>) -> Arc<Handlers> {
    Arc::new(Handlers::new().on("res:Step", move |_input: Value, ctx| {
        let now = Instant::now();
        let mut l = latencies.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(before) = l.last.insert(ctx.execution_name().to_owned(), now) {
            l.gaps_ms.push(now.duration_since(before).as_secs_f64() * 1e3);
        }
        async move { Ok(json!({"ok": true})) }
    }))
}

fn new_execution(workflow: &str, name: String, i: usize) -> NewExecution {
    NewExecution {
        name,
        workflow: workflow.to_owned(),
        input: json!({"n": i}),
        start_time: "2026-01-01T00:00:00.000Z".into(),
        definition_hash: None,
        version_id: None,
    }
}

fn worker_config(owner: String, concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        owner,
        concurrency,
        exit_when_idle: true,
        poll_interval: Duration::from_millis(20),
        ..WorkerConfig::default()
    }
}

/// Runs `workflow`'s queued executions on one in-process worker until none is left.
async fn run_worker(
    store: Arc<dyn Store>,
    workflow: Arc<wfc_runtime::ir::Workflow>,
    owner: String,
    concurrency: usize,
    latencies: Arc<Mutex<Latencies>>,
) -> Result<(), String> {
    let flows = Workflows::new().interpreted(workflow, handlers(latencies));
    let stats = Worker::new(store, flows, worker_config(owner, concurrency))
        .run(std::future::pending())
        .await
        .map_err(|e| format!("the worker failed: {e}"))?;
    if stats.rejected > 0 || stats.lost > 0 {
        return Err(format!("the worker lost or rejected executions: {stats:?}"));
    }
    Ok(())
}

async fn sqlite_row(path: &Path, sync: Synchronous, concurrency: usize, executions: usize) -> Result<Measured, String> {
    let _ = std::fs::remove_file(path);
    let sqlite = Arc::new(SqliteStore::open(path, sync).map_err(|e| e.to_string())?);
    let store: Arc<dyn Store> = sqlite.clone();
    let workflow = chain()?;
    for i in 0..executions {
        store.create_execution(new_execution(&workflow.name, format!("e{i}"), i)).await.map_err(|e| e.to_string())?;
    }
    let latencies = Arc::new(Mutex::new(Latencies::default()));
    // At FULL the store syncs its log beside its commits: the syncs are what the disk paid.
    let commits_now = || sqlite.log_syncs().unwrap_or_else(|| sqlite.commits());
    let commits_before = commits_now();
    let cpu_before = cpu::own_secs();
    let start = Instant::now();
    run_worker(store.clone(), workflow, "bench".into(), concurrency, latencies.clone()).await?;
    let wall = start.elapsed();
    let cpu_secs = cpu::own_secs().zip(cpu_before).map(|(after, before)| after - before);
    let commits = commits_now() - commits_before;
    check_all_succeeded(store.as_ref(), executions).await?;
    let gaps_ms = std::mem::take(&mut latencies.lock().unwrap_or_else(|p| p.into_inner()).gaps_ms);
    Ok(Measured { wall, gaps_ms, commits, cpu_secs, server_cpu_secs: Some(0.0) })
}

async fn check_all_succeeded(store: &dyn Store, executions: usize) -> Result<(), String> {
    let records = store.list_executions().await.map_err(|e| e.to_string())?;
    let done = records.iter().filter(|r| r.status == durable::ExecutionStatus::Succeeded).count();
    if done < executions {
        return Err(format!("only {done} of {executions} executions succeeded"));
    }
    Ok(())
}

/// One PostgreSQL row: `executions` queued on a fresh database, `workers` worker processes
/// sharing `concurrency`.
async fn pg_row(
    server_url: &str,
    workers: usize,
    concurrency: usize,
    executions: usize,
    prefix: &str,
) -> Result<Measured, String> {
    // A database per row, so the rows do not read each other's finished executions.
    let admin = pg_client(server_url).await?;
    let db = format!("bench_{prefix}");
    admin.batch_execute(&format!("CREATE DATABASE {db}")).await.map_err(|e| format!("create database: {e}"))?;
    let url = server_url.rsplit_once('/').map_or_else(|| server_url.to_owned(), |(base, _)| format!("{base}/{db}"));
    let store = wfc_stores::connect(&url).await.map_err(|e| e.to_string())?;
    let workflow = chain()?;
    for i in 0..executions {
        store.create_execution(new_execution(&workflow.name, format!("e{i}"), i)).await.map_err(|e| e.to_string())?;
    }
    let per_worker = concurrency.div_ceil(workers);
    let mut children = Vec::new();
    for w in 0..workers {
        children.push(spawn_worker(&url, &format!("{prefix}-{w}"), per_worker)?);
    }
    // Every worker has connected and waits on its stdin: start them together.
    for child in &mut children {
        wait_for_line(child, "ready")?;
    }
    let syncs_before = wal_syncs(&admin).await?;
    let postmaster = postmaster_pid(&admin).await;
    let server_before = postmaster.and_then(cpu::tree_secs);
    let start = Instant::now();
    for child in &mut children {
        child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(b"go\n"))
            .transpose()
            .map_err(|e| format!("start a worker: {e}"))?;
    }
    let mut gaps_ms = Vec::new();
    let mut cpu_secs = Some(0.0);
    for child in children {
        let output = child.wait_with_output().map_err(|e| format!("wait for a worker: {e}"))?;
        if !output.status.success() {
            return Err(format!("a worker failed: {}", String::from_utf8_lossy(&output.stderr)));
        }
        let report: Value = serde_json::from_slice(&output.stdout).map_err(|e| format!("a worker's report: {e}"))?;
        gaps_ms.extend(report["gaps_ms"].as_array().into_iter().flatten().filter_map(Value::as_f64));
        cpu_secs = cpu_secs.zip(report["cpu_secs"].as_f64()).map(|(sum, secs)| sum + secs);
    }
    let wall = start.elapsed();
    // Backends report their WAL statistics when they exit; give the last ones a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let commits = wal_syncs(&admin).await? - syncs_before;
    let server_cpu_secs = postmaster.and_then(cpu::tree_secs).zip(server_before).map(|(after, before)| after - before);
    check_all_succeeded(store.as_ref(), executions).await?;
    Ok(Measured { wall, gaps_ms, commits, cpu_secs, server_cpu_secs })
}

async fn pg_client(url: &str) -> Result<tokio_postgres::Client, String> {
    let (client, connection) =
        tokio_postgres::connect(url, tokio_postgres::NoTls).await.map_err(|e| format!("connect to {url}: {e}"))?;
    tokio::spawn(connection);
    Ok(client)
}

/// The server's postmaster: the parent of this connection's backend (a server on this machine).
async fn postmaster_pid(client: &tokio_postgres::Client) -> Option<u32> {
    let row = client.query_one("SELECT pg_backend_pid()", &[]).await.ok()?;
    let backend: i32 = row.get(0);
    cpu::parent_of(u32::try_from(backend).ok()?)
}

async fn wal_syncs(client: &tokio_postgres::Client) -> Result<u64, String> {
    client.batch_execute("SELECT pg_stat_clear_snapshot()").await.map_err(|e| e.to_string())?;
    let row = client
        .query_one("SELECT wal_sync FROM pg_stat_wal", &[])
        .await
        .map_err(|e| format!("read pg_stat_wal: {e}"))?;
    let syncs: i64 = row.get(0);
    Ok(u64::try_from(syncs).unwrap_or(0))
}

fn spawn_worker(url: &str, owner: &str, concurrency: usize) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    Command::new(exe)
        .args(["--durable-worker", url, owner, &concurrency.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start a worker process: {e}"))
}

/// Reads one line of the child's stdout and checks it is `expected`; the pipe stays open for
/// the report the child prints at the end.
fn wait_for_line(child: &mut Child, expected: &str) -> Result<(), String> {
    let stdout = child.stdout.take().ok_or("a worker has no stdout")?;
    let mut reader = std::io::BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| format!("read a worker: {e}"))?;
    if line.trim() != expected {
        return Err(format!("a worker said {line:?} instead of {expected:?}"));
    }
    child.stdout = Some(reader.into_inner());
    Ok(())
}

/// `--durable-worker URL OWNER CONCURRENCY`: connects, says `ready`, waits for a line on stdin,
/// runs the store's executions until none is left, then prints `{"gaps_ms": [...]}`.
fn worker_main(args: &[String]) -> Result<(), String> {
    let [url, owner, concurrency] = args else {
        return Err("usage: wfc-bench --durable-worker URL OWNER CONCURRENCY".into());
    };
    let concurrency: usize = concurrency.parse().map_err(|e| format!("concurrency {concurrency}: {e}"))?;
    let rt = runtime()?;
    rt.block_on(async {
        let store = wfc_stores::connect(url).await.map_err(|e| e.to_string())?;
        let workflow = chain()?;
        println!("ready");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).map_err(|e| e.to_string())?;
        let latencies = Arc::new(Mutex::new(Latencies::default()));
        let cpu_before = cpu::own_secs();
        run_worker(store, workflow, owner.clone(), concurrency, latencies.clone()).await?;
        let cpu_secs = cpu::own_secs().zip(cpu_before).map(|(after, before)| after - before);
        let gaps_ms = std::mem::take(&mut latencies.lock().unwrap_or_else(|p| p.into_inner()).gaps_ms);
        println!("{}", json!({ "gaps_ms": gaps_ms, "cpu_secs": cpu_secs }));
        Ok(())
    })
}

/// CPU time from Linux's `/proc` (`None` elsewhere): user + system, in seconds.
mod cpu {
    /// `/proc/<pid>/stat`'s fields after the command name (which may hold spaces): the state is
    /// field 0 here (3 in proc(5)), the parent 1, utime 11, stime 12, cutime 13, cstime 14.
    fn fields(pid: &str) -> Option<Vec<u64>> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        // The state is a letter: kept as 0 so the indexes stay those above.
        Some(rest.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect())
    }

    /// `/proc`'s clock ticks (USER_HZ), 100 on Linux's supported architectures.
    const TICKS_PER_SEC: f64 = 100.0;

    fn secs(ticks: u64) -> f64 {
        ticks as f64 / TICKS_PER_SEC
    }

    /// This process's CPU time (every thread's, ended ones included).
    pub(super) fn own_secs() -> Option<f64> {
        let f = fields("self")?;
        Some(secs(f.get(11)? + f.get(12)?))
    }

    pub(super) fn parent_of(pid: u32) -> Option<u32> {
        let f = fields(&pid.to_string())?;
        u32::try_from(*f.get(1)?).ok()
    }

    /// The CPU time of `root`, of its children that ended (reaped by it), and of its living
    /// children: for a PostgreSQL postmaster, the whole server.
    pub(super) fn tree_secs(root: u32) -> Option<f64> {
        let f = fields(&root.to_string())?;
        let mut ticks = f.get(11)? + f.get(12)? + f.get(13)? + f.get(14)?;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else { continue };
            if let Some(child) = fields(pid).filter(|c| c.get(1) == Some(&u64::from(root))) {
                ticks += child.get(11).unwrap_or(&0) + child.get(12).unwrap_or(&0);
            }
        }
        Some(secs(ticks))
    }
}
