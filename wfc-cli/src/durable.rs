//! Durable runs and the store commands (docs/durable.md):
//!
//! - `wfc run FILE --store URL --name EXEC` (start or resume), also with `--handlers FILE`;
//! - `wfc executions --store URL list|describe|history|start|stop`;
//! - `wfc callback --store URL --token T (--success JSON | --failure ERROR CAUSE | --heartbeat)`;
//! - `wfc worker --store URL FILE...`.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wfc_runtime::durable::{
    self, CallbackCompletion, ExecutionRecord, ExecutionStatus, Journal, NewExecution, Opened, Store, Worker,
    WorkerConfig, Workflows,
};
use wfc_runtime::interp::DynHandler;
use wfc_runtime::{Clock, RunOptions};

use crate::check::{DefinitionText, definition_error};
use crate::engine::{MockHandler, outcome_of};
use crate::handlers::CommandHandlers;
use crate::outcome::Outcome;
use crate::{
    CallbackArgs, ColorChoice, EngineChoice, ExecutionsArgs, ExecutionsCommand, Exit, RunArgs, WorkerArgs, fatal,
};

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

async fn open(url: &str) -> Result<Arc<dyn Store>, String> {
    durable::connect(url).await.map_err(|e| e.to_string())
}

fn print_json(value: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).map_err(|e| format!("cannot print the result: {e}"))
}

/// The outcome of an execution that had already finished, from its stored record and history.
fn stored_outcome(record: &ExecutionRecord, history: Vec<wfc_runtime::HistoryEvent>) -> Result<Outcome, String> {
    let history = history
        .iter()
        .map(|e| serde_json::to_value(e).map_err(|e| format!("cannot serialize the history: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome {
        status: record.status.as_str().to_owned(),
        output: record.output.clone(),
        error: record.error.clone(),
        cause: record.cause.clone(),
        elapsed_seconds: None,
        history,
    })
}

/// A definition loaded for a durable run or a worker.
fn load_definition(path: &std::path::Path, color: bool) -> Result<wfc_ir::Workflow, Exit> {
    let def = DefinitionText::read(path).map_err(fatal)?;
    let loaded = def.load().map_err(|diags| definition_error(&def.path, &diags, color))?;
    crate::check::print_human(&def.path, &loaded.warnings, color);
    Ok(loaded.workflow)
}

/// The task handler of the CLI: `--handlers` commands first, then `--mocks`.
fn handler_for(
    handlers: Option<&std::path::Path>,
    mocks: crate::mocks::MockSet,
) -> Result<Arc<dyn DynHandler>, String> {
    let commands = match handlers {
        Some(path) => crate::handlers::load(path)?,
        None => Default::default(),
    };
    Ok(Arc::new(CommandHandlers::new(commands, MockHandler::new(mocks))))
}

/// `wfc run FILE --store URL --name EXEC` runs EXEC on the interpreter with a journal, so a
/// rerun of the same command after a crash resumes it; a finished EXEC prints how it ended.
/// Without `--store` (only `--handlers`) it runs once, with nothing persisted.
pub(crate) fn run(args: &RunArgs, url: Option<&str>) -> Exit {
    let name = args.name.as_deref();
    if url.is_some() && name.is_none() {
        return fatal("--store needs --name EXEC: the execution name is what a rerun resumes");
    }
    if args.engine == EngineChoice::Compiled {
        if args.handlers.is_some() {
            return fatal(
                "--handlers runs on the interpreter only (--engine interp); the compiled engine answers tasks from --mocks",
            );
        }
        if let (Some(url), Some(name)) = (url, name) {
            return run_compiled(args, url, name);
        }
    }
    let color = ColorChoice::Auto.enabled();
    let workflow = match load_definition(&args.file, color) {
        Ok(w) => w,
        Err(exit) => return exit,
    };
    let input = match crate::run::read_input(args) {
        Ok(v) => v,
        Err(e) => return fatal(e),
    };
    let mocks = match crate::run::read_mocks(
        args.mocks.as_deref(),
        args.test_case.as_deref(),
        args.state_machine.as_deref(),
        &workflow.name,
    ) {
        Ok(m) => m,
        Err(e) => return fatal(e),
    };
    let handler = match handler_for(args.handlers.as_deref(), mocks) {
        Ok(h) => h,
        Err(e) => return fatal(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    let virtual_time = args.virtual_time;
    let clock = if virtual_time {
        match crate::engine::virtual_clock(args.start_time.as_deref()) {
            Ok(clock) => clock,
            Err(e) => return fatal(e),
        }
    } else {
        Clock::real()
    };
    let outcome = rt.block_on(async {
        let mut options = if virtual_time { RunOptions::virtual_time() } else { RunOptions::real() };
        options.clock = clock.clone();
        let mut options = options.with_seed(args.seed);
        if let Some(root) = &args.item_root {
            options = options.with_item_root(root.clone());
        }
        if let Some(root) = &args.result_root {
            options = options.with_result_root(root.clone());
        }
        let (Some(url), Some(name)) = (url, name) else {
            let options = match name {
                Some(n) => options.with_name(n),
                None => options,
            };
            let result = wfc_runtime::interp::run(&workflow, handler.as_ref(), input, options).await;
            return outcome_of(result, virtual_time);
        };
        let store = open(url).await?;
        let opened = Journal::open_definition(Arc::clone(&store), name, &workflow, &input, &clock)
            .await
            .map_err(|e| e.to_string())?;
        match opened {
            Opened::Finished(record) => {
                let history = store.read_history(name).await.map_err(|e| e.to_string())?;
                stored_outcome(&record, history)
            }
            Opened::Running(journal) => {
                let options = options.with_journal(Arc::clone(&journal));
                let owner = format!("run-{}", std::process::id());
                let run = wfc_runtime::interp::run(&workflow, handler.as_ref(), input, options);
                tokio::select! {
                    result = run => outcome_of(result, virtual_time),
                    e = journal.hold_lease(&owner, durable::DEFAULT_LEASE) => {
                        Err(format!("execution '{name}' was taken away from this process: {e}"))
                    }
                }
            }
        }
    });
    match outcome {
        Ok(outcome) => {
            if let Err(e) = print_json(&outcome.to_json(args.history)) {
                return fatal(e);
            }
            if outcome.succeeded() { Exit::Success } else { Exit::Failure }
        }
        Err(e) => fatal(e),
    }
}

/// `wfc run FILE --store URL --name EXEC --engine compiled`: the generated code runs EXEC with a
/// journal (a program built with the runtime's stores), so it resumes like the interpreter.
fn run_compiled(args: &RunArgs, url: &str, name: &str) -> Exit {
    crate::run::run_with(args, Some(name.to_owned()), |execution| crate::compiled::execute_durable(execution, url, name))
}

fn record_json(record: &ExecutionRecord) -> Value {
    let mut v = json!({
        "name": record.name,
        "workflow": record.workflow,
        "status": record.status.as_str(),
        "input": record.input,
        "start_time": record.start_time,
        "epoch": record.epoch,
        "checkpoint_seq": record.checkpoint_seq,
        "created_at_ms": record.created_at_ms,
        "updated_at_ms": record.updated_at_ms,
    });
    match record.status {
        ExecutionStatus::Succeeded => v["output"] = record.output.clone().unwrap_or(Value::Null),
        ExecutionStatus::Failed | ExecutionStatus::TimedOut | ExecutionStatus::Aborted => {
            v["error"] = json!(record.error);
            v["cause"] = json!(record.cause);
        }
        ExecutionStatus::Running => {
            v["owner"] = json!(record.owner);
            v["lease_until_ms"] = json!(record.lease_until_ms);
            v["wake_at_ms"] = json!(record.wake_at_ms);
        }
    }
    v
}

/// `wfc executions --store URL list|describe NAME|history NAME|start FILE|stop NAME`.
pub(crate) fn executions(args: &ExecutionsArgs) -> Exit {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    // A definition error is reported like `wfc check` does, before the store is opened.
    let start_workflow = match &args.command {
        ExecutionsCommand::Start { file, .. } => match load_definition(file, ColorChoice::Auto.enabled()) {
            Ok(w) => Some(w),
            Err(exit) => return exit,
        },
        _ => None,
    };
    let result: Result<Value, String> = rt.block_on(async {
        let store = open(&args.store).await?;
        match &args.command {
            ExecutionsCommand::List => {
                let records = store.list_executions().await.map_err(|e| e.to_string())?;
                Ok(Value::Array(records.iter().map(record_json).collect()))
            }
            ExecutionsCommand::Describe { name } => {
                let record = store
                    .describe_execution(name)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("no execution is named '{name}'"))?;
                let operations = store.load_journal(name).await.map_err(|e| e.to_string())?;
                let mut v = record_json(&record);
                v["operations"] = serde_json::to_value(&operations).map_err(|e| e.to_string())?;
                // Serverless Workflow events delivered and not consumed yet.
                let inbox = store.load_events(name).await.map_err(|e| e.to_string())?;
                v["inbox"] = inbox.into_iter().map(|(seq, event)| json!({ "seq": seq, "event": event })).collect();
                Ok(v)
            }
            ExecutionsCommand::History { name } => {
                let events = store.read_history(name).await.map_err(|e| e.to_string())?;
                serde_json::to_value(&events).map_err(|e| e.to_string())
            }
            ExecutionsCommand::Stop { name, error, cause } => {
                let record =
                    store.stop_execution(name, error.clone(), cause.clone()).await.map_err(|e| e.to_string())?;
                Ok(record_json(&record))
            }
            ExecutionsCommand::Start { name, input, .. } => {
                let workflow = start_workflow.as_ref().ok_or("internal error: no definition")?;
                let input: Value = match input {
                    Some(text) => serde_json::from_str(text).map_err(|e| format!("--input is not valid JSON: {e}"))?,
                    None => json!({}),
                };
                let new = NewExecution {
                    name: name.clone(),
                    workflow: workflow.name.clone(),
                    input,
                    start_time: Clock::real().now_rfc3339(),
                    definition_hash: Some(durable::definition_hash(workflow)),
                };
                let (record, existed) = store.create_execution(new).await.map_err(|e| e.to_string())?;
                let mut v = record_json(&record);
                v["existed"] = json!(existed);
                Ok(v)
            }
        }
    });
    match result.and_then(|v| print_json(&v)) {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}

/// `wfc callback --store URL --token T (--success JSON | --failure ERROR CAUSE | --heartbeat)`.
pub(crate) fn callback(args: &CallbackArgs) -> Exit {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    let result: Result<Value, String> = rt.block_on(async {
        let store = open(&args.store).await?;
        let (sent, execution) = if let Some(text) = &args.success {
            let output: Value = serde_json::from_str(text).map_err(|e| format!("--success is not valid JSON: {e}"))?;
            let name = store
                .complete_callback(&args.token, CallbackCompletion::Success(output))
                .await
                .map_err(|e| e.to_string())?;
            ("SendTaskSuccess", name)
        } else if let [error, cause] = args.failure.as_slice() {
            let completion = CallbackCompletion::Failure { error: error.clone(), cause: cause.clone() };
            let name = store.complete_callback(&args.token, completion).await.map_err(|e| e.to_string())?;
            ("SendTaskFailure", name)
        } else if args.heartbeat {
            let name = store.heartbeat_callback(&args.token).await.map_err(|e| e.to_string())?;
            ("SendTaskHeartbeat", name)
        } else {
            return Err("give one of --success JSON, --failure ERROR CAUSE, --heartbeat".into());
        };
        Ok(json!({ "sent": sent, "execution": execution }))
    });
    match result.and_then(|v| print_json(&v)) {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}

/// `wfc worker --store URL FILE...`: runs executions of these workflows from the store until
/// SIGTERM or SIGINT (or, with `--exit-when-idle`, until none is runnable).
pub(crate) fn worker(args: &WorkerArgs) -> Exit {
    let color = ColorChoice::Auto.enabled();
    let mocks = match crate::run::read_mocks(args.mocks.as_deref(), None, None, "") {
        Ok(m) => m,
        Err(e) => return fatal(e),
    };
    let handler = match handler_for(args.handlers.as_deref(), mocks) {
        Ok(h) => h,
        Err(e) => return fatal(e),
    };
    let mut workflows = Workflows::new();
    for file in &args.files {
        let workflow = match load_definition(file, color) {
            Ok(w) => w,
            Err(exit) => return exit,
        };
        workflows = workflows.interpreted(Arc::new(workflow), Arc::clone(&handler));
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    let mut config =
        WorkerConfig { concurrency: args.concurrency, exit_when_idle: args.exit_when_idle, ..Default::default() };
    if let Some(owner) = &args.owner {
        config.owner = owner.clone();
    }
    if let Some(ms) = args.poll_ms {
        config.poll_interval = Duration::from_millis(ms);
    }
    if let Some(secs) = args.lease_seconds {
        config.lease = Duration::from_secs(secs.max(1));
    }
    let seconds = |s: f64, flag: &str| {
        Duration::try_from_secs_f64(s).map_err(|_| format!("{flag} must be a number of seconds, not {s}"))
    };
    if let Some(s) = args.suspend_after_seconds {
        match seconds(s, "--suspend-after-seconds") {
            Ok(d) => config.suspend_after = d,
            Err(e) => return fatal(e),
        }
    }
    if let Some(s) = args.shutdown_grace_seconds {
        match seconds(s, "--shutdown-grace-seconds") {
            Ok(d) => config.shutdown_grace = d,
            Err(e) => return fatal(e),
        }
    }
    let result = rt.block_on(async {
        // Installed before any work is claimed, so a SIGTERM is never the default "terminate".
        let shutdown = shutdown_signal()?;
        let store = open(&args.store).await?;
        let worker = Worker::new(store, workflows, config);
        let stats = worker.run(shutdown).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(json!({
            "claimed": stats.claimed,
            "finished": stats.finished,
            "suspended": stats.suspended,
            "lost": stats.lost,
            "rejected": stats.rejected,
            "released_at_shutdown": stats.released_at_shutdown,
        }))
    });
    match result.and_then(|v| print_json(&v)) {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}

/// Installs SIGTERM and SIGINT handlers now; the returned future completes on either.
pub(crate) fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("cannot handle SIGINT: {e}"))?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
