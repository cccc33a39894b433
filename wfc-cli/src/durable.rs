//! Durable runs: `wfc run FILE --store sqlite:PATH --name EXEC` (start or resume), and
//! `wfc executions --store URL list|describe NAME|history NAME`. See docs/durable.md.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};
use wfc_runtime::durable::{self, ExecutionRecord, ExecutionStatus, Journal, Opened, Store};
use wfc_runtime::{Clock, RunOptions};

use crate::check::{DefinitionText, definition_error};
use crate::engine::{MockHandler, outcome_of};
use crate::outcome::Outcome;
use crate::{ColorChoice, EngineChoice, ExecutionsArgs, ExecutionsCommand, Exit, RunArgs, fatal};

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

fn open(url: &str) -> Result<Arc<dyn Store>, String> {
    durable::open_store(url).map_err(|e| e.to_string())
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

/// `wfc run FILE --store URL --name EXEC`: runs EXEC on the interpreter with a journal, so a
/// rerun of the same command after a crash resumes it; a finished EXEC prints how it ended.
pub(crate) fn run(args: &RunArgs, url: &str) -> Exit {
    let Some(name) = args.name.as_deref() else {
        return fatal("--store needs --name EXEC: the execution name is what a rerun resumes");
    };
    if args.engine == EngineChoice::Compiled {
        return fatal(
            "--store runs on the interpreter only (--engine interp); generated code is durable through RunOptions::with_journal",
        );
    }
    let color = ColorChoice::Auto.enabled();
    let def = match DefinitionText::read(&args.file) {
        Ok(d) => d,
        Err(e) => return fatal(e),
    };
    let loaded = match def.load() {
        Ok(l) => l,
        Err(diags) => return definition_error(&def.path, &diags, color),
    };
    crate::check::print_human(&def.path, &loaded.warnings, color);
    let input = match crate::run::read_input(args) {
        Ok(v) => v,
        Err(e) => return fatal(e),
    };
    let mocks = match crate::run::read_mocks(
        args.mocks.as_deref(),
        args.test_case.as_deref(),
        args.state_machine.as_deref(),
        &loaded.workflow.name,
    ) {
        Ok(m) => m,
        Err(e) => return fatal(e),
    };
    let store = match open(url) {
        Ok(s) => s,
        Err(e) => return fatal(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    let virtual_time = args.virtual_time;
    let outcome = rt.block_on(async {
        let clock = if virtual_time { Clock::virtual_default() } else { Clock::real() };
        let opened = Journal::open(Arc::clone(&store), name, &loaded.workflow.name, &input, &clock)
            .await
            .map_err(|e| e.to_string())?;
        match opened {
            Opened::Finished(record) => {
                let history = store.read_history(name).await.map_err(|e| e.to_string())?;
                stored_outcome(&record, history)
            }
            Opened::Running(journal) => {
                let mut options = if virtual_time { RunOptions::virtual_time() } else { RunOptions::real() };
                options.clock = clock;
                let options = options.with_seed(args.seed).with_journal(journal);
                let handler = MockHandler::new(mocks);
                let result = wfc_runtime::interp::run(&loaded.workflow, &handler, input, options).await;
                outcome_of(result, virtual_time)
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
        ExecutionStatus::Failed | ExecutionStatus::TimedOut => {
            v["error"] = json!(record.error);
            v["cause"] = json!(record.cause);
        }
        ExecutionStatus::Running => {}
    }
    v
}

/// `wfc executions --store URL list|describe NAME|history NAME`.
pub(crate) fn executions(args: &ExecutionsArgs) -> Exit {
    let store = match open(&args.store) {
        Ok(s) => s,
        Err(e) => return fatal(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    let result: Result<Value, String> = rt.block_on(async {
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
                Ok(v)
            }
            ExecutionsCommand::History { name } => {
                let events = store.read_history(name).await.map_err(|e| e.to_string())?;
                serde_json::to_value(&events).map_err(|e| e.to_string())
            }
        }
    });
    match result.and_then(|v| print_json(&v)) {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}
