//! An order that waits for a person's approval, durably, on the embedded SQLite store.
//!
//! ```sh
//! approval-durable run --db approvals.db --order 42 --amount 1200   # validates, asks, waits...
//! # (kill it, reboot, deploy: the execution is in approvals.db)
//! approval-durable pending --db approvals.db                          # the tokens waiting
//! approval-durable approve --db approvals.db --token wfc1-...         # or --reject
//! approval-durable run --db approvals.db --order 42 --amount 1200   # resumes: ships, once
//! approval-durable demo                                               # all of the above, narrated
//! ```
//!
//! `run` starts execution `order-<ID>` or resumes it. Completed tasks are never run again: each
//! one appends a line to `<db>.log` (the side effects), which the test in tests/restart.rs reads.
//! The approval can come from this process (while `run` waits it polls the store) or from any
//! other one, since the answer goes through the store.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{CallbackCompletion, OpStatus, OpType, Store};
use wfc_runtime::{Clock, Failure, RunOptions, TaskContext, Value, json};
use wfc_sqlite::{SqliteStore, Synchronous};

wfc_runtime::include_workflow!("workflows/approval.asl.json");

/// The shop's side effects, recorded in a log file next to the store.
struct Shop {
    log: PathBuf,
}

impl Shop {
    fn record(&self, line: &str) -> Result<(), Failure> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| Failure::new("Shop.LogFailed", e.to_string()))?;
        writeln!(f, "{line}").map_err(|e| Failure::new("Shop.LogFailed", e.to_string()))
    }
}

impl approval::Handler for Shop {
    async fn validate(&self, input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
        let amount = input["amount"].as_f64().ok_or_else(|| Failure::new("Order.Invalid", "no amount"))?;
        self.record(&format!("validate {}", input["order"]))?;
        Ok(json!({ "valid": amount > 0.0 }))
    }

    /// Sends the approval request (here: a line in the log, as an email would be) with the task
    /// token the approver answers with. Its return value is ignored: the state then waits.
    async fn request_approval_wait_for_task_token(&self, input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
        let token = input["token"].as_str().ok_or_else(|| Failure::new("Approval.NoToken", "no token"))?;
        self.record(&format!("request {} {token}", input["order"]))?;
        Ok(Value::Null)
    }

    async fn ship(&self, input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
        self.record(&format!("ship {}", input["order"]))?;
        Ok(json!({ "carrier": "wfc-post", "order": input["order"] }))
    }
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned()
}

fn open(db: &Path) -> Result<Arc<dyn Store>, String> {
    Ok(Arc::new(SqliteStore::open(db, Synchronous::Full).map_err(|e| e.to_string())?))
}

async fn run(db: &Path, order: u64, amount: f64) -> Result<Value, String> {
    let store = open(db)?;
    let input = json!({ "order": order, "amount": amount });
    let name = format!("order-{order}");
    let definition = &approval::DEFINITION_ID;
    let journal = match Journal::open_definition_id(Arc::clone(&store), &name, definition, &input, &Clock::real())
        .await
        .map_err(|e| e.to_string())?
    {
        Opened::Finished(record) => {
            return Ok(json!({ "status": record.status.as_str(), "output": record.output, "error": record.error }));
        }
        Opened::Running(journal) => journal,
    };
    let shop = Shop { log: db.with_extension("log") };
    let options = RunOptions::real().with_journal(journal.clone());
    let result = tokio::select! {
        result = approval::run_with(&shop, input, options) => result,
        e = journal.hold_lease("approval-durable", wfc_runtime::durable::DEFAULT_LEASE) => return Err(e.to_string()),
    };
    Ok(json!({
        "status": format!("{:?}", result.status).to_uppercase(),
        "output": result.output,
        "error": result.error.map(|f| f.error),
    }))
}

async fn pending(db: &Path) -> Result<Value, String> {
    let store = open(db)?;
    let mut waiting = Vec::new();
    for record in store.list_executions().await.map_err(|e| e.to_string())? {
        for op in store.load_journal(&record.name).await.map_err(|e| e.to_string())? {
            if op.op_type == OpType::Callback && op.status == OpStatus::Started {
                waiting.push(json!({ "execution": record.name, "input": record.input, "token": op.callback_token }));
            }
        }
    }
    Ok(Value::Array(waiting))
}

async fn approve(db: &Path, token: &str, approved: bool) -> Result<Value, String> {
    let store = open(db)?;
    let answer = CallbackCompletion::Success(json!({ "approved": approved }));
    let execution = store.complete_callback(token, answer).await.map_err(|e| e.to_string())?;
    Ok(json!({ "execution": execution, "approved": approved }))
}

fn log_lines(db: &Path) -> Vec<String> {
    std::fs::read_to_string(db.with_extension("log")).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// The whole story in one command, with a real crash: a worker process starts order 42 and
/// waits for the approval; it is killed (SIGKILL) while it waits; the approval goes into the
/// store; a new run resumes the execution and ships without validating or asking again.
/// `--db PATH` keeps the store; the default is a fresh file in the system temp directory.
fn demo(db: Option<PathBuf>) -> Result<(), String> {
    let db = db.unwrap_or_else(|| std::env::temp_dir().join(format!("wfc-approval-demo-{}.db", std::process::id())));
    for stale in [db.clone(), db.with_extension("log"), db.with_extension("db-wal"), db.with_extension("db-shm")] {
        let _ = std::fs::remove_file(stale);
    }
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let db_arg = db.display().to_string();
    let run_args = ["run", "--db", db_arg.as_str(), "--order", "42", "--amount", "1200"];
    println!("1. store: {} (embedded SQLite, synchronous=FULL)", db.display());

    let mut worker = std::process::Command::new(&me)
        .args(run_args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the worker: {e}"))?;
    println!("2. worker {} started execution order-42: validate, then ask for approval and wait", worker.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !log_lines(&db).iter().any(|l| l.starts_with("request")) {
        if let Ok(Some(status)) = worker.try_wait() {
            return Err(format!("the worker ended before asking for approval ({status})"));
        }
        if std::time::Instant::now() > deadline {
            let _ = worker.kill();
            return Err("the worker did not ask for approval within 120 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    worker.kill().map_err(|e| format!("cannot kill the worker: {e}"))?;
    let _ = worker.wait();
    println!("3. killed the worker (SIGKILL) while it waited: the execution lives on in the store");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let waiting = pending(&db).await?;
        let token = waiting[0]["token"].as_str().ok_or("no approval is pending in the store")?.to_owned();
        approve(&db, &token, true).await?;
        println!("4. approved through the store (token {token})");
        let done = run(&db, 42, 1200.0).await?;
        println!("5. a new run resumed order-42: {done}");
        Ok::<_, String>(())
    })?;
    let effects = log_lines(&db);
    println!("6. side effects across both processes ({}):", db.with_extension("log").display());
    for line in &effects {
        println!("     {line}");
    }
    let kinds: Vec<&str> = effects.iter().filter_map(|l| l.split(' ').next()).collect();
    if kinds != ["validate", "request", "ship"] {
        return Err(format!("expected validate, request and ship once each, got {kinds:?}"));
    }
    println!("   each task ran exactly once.");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: approval-durable [demo [--db PATH]] | run --db PATH --order ID --amount N | pending --db PATH | approve --db PATH --token T [--reject]";
    if matches!(args.get(1).map(String::as_str), None | Some("demo")) {
        return match demo(arg(&args, "--db").map(PathBuf::from)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        };
    }
    let Some(db) = arg(&args, "--db").map(PathBuf::from) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match args.get(1).map(String::as_str) {
            Some("run") => {
                let order = arg(&args, "--order").and_then(|o| o.parse().ok()).ok_or("--order ID (a number)")?;
                let amount = arg(&args, "--amount").and_then(|a| a.parse().ok()).ok_or("--amount N")?;
                run(&db, order, amount).await
            }
            Some("pending") => pending(&db).await,
            Some("approve") => {
                let token = arg(&args, "--token").ok_or("--token T")?;
                approve(&db, &token, !args.iter().any(|a| a == "--reject")).await
            }
            _ => Err(usage.to_owned()),
        }
    });
    match result {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
