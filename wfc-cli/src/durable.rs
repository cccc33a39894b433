//! Durable runs and the store commands (docs/durable.md):
//!
//! - `wfc run FILE --store URL --name EXEC` (start or resume), also with `--handlers FILE`;
//! - `wfc executions --store URL list|describe|history|start|stop|upgrade|versions`;
//! - `wfc callback --store URL --token T (--success JSON | --failure ERROR CAUSE | --heartbeat)`;
//! - `wfc worker --store URL FILE...`.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wfc_interp::DynHandler;
use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{
    self, CallbackCompletion, Definition, ExecutionRecord, ExecutionStatus, Language, NewExecution, PinGuard, Registry,
    Store, Syntax, WorkflowVersion,
};
use wfc_runtime::{Clock, RunOptions};
use wfc_worker::{Worker, WorkerConfig, Workflows};

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

/// A current-thread runtime whose clock starts paused (virtual time; it advances only when
/// every task waits on a timer).
fn paused_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Opens the store at `url`, creating a SQLite file that does not exist: for the commands that
/// write (`wfc run --store`, `wfc executions start`, `wfc worker`).
async fn open(url: &str) -> Result<Arc<dyn Store>, String> {
    wfc_stores::connect(url).await.map_err(|e| e.to_string())
}

/// Opens the store at `url` only if it exists: for the commands that read or change existing
/// executions, so that a misspelt path is an error instead of a new, empty store.
pub(crate) async fn open_existing(url: &str) -> Result<Arc<dyn Store>, String> {
    wfc_stores::connect_existing(url).await.map_err(|e| match e {
        durable::StoreError::NoStore(_) => format!(
            "{e} (only `wfc run --store`, `wfc executions start` and `wfc worker` create a store; check the path)"
        ),
        e => e.to_string(),
    })
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

/// A definition loaded for a durable run or a worker (default passes), with its source.
fn load_definition(path: &std::path::Path, color: bool) -> Result<(wfc_ir::Workflow, Definition), Exit> {
    let def = DefinitionText::read(path).map_err(fatal)?;
    let loaded = def.load().map_err(|diags| definition_error(&def.path, &diags, color))?;
    crate::check::print_human(&def.path, &loaded.warnings, color);
    let definition = definition_of(&def, &loaded.workflow, wfc_core::optimize::Passes::default());
    Ok((loaded.workflow, definition))
}

/// The definition as the store keeps it (docs/durable.md, "Deploys and versions"): the source
/// text and where it came from, its language and syntax, the passes it is loaded with, and
/// for a Serverless Workflow the subflow files beside it.
pub(crate) fn definition_of(
    text: &DefinitionText,
    workflow: &wfc_ir::Workflow,
    passes: wfc_core::optimize::Passes,
) -> Definition {
    let language = if wfc_runtime::sw::is_sw(workflow) { Language::Sw } else { Language::Asl };
    let syntax = match wfc_core::Format::from_path(&text.path) {
        wfc_core::Format::Yaml => Syntax::Yaml,
        wfc_core::Format::Json => Syntax::Json,
    };
    Definition {
        workflow: workflow.name.clone(),
        origin: text.path.clone(),
        source: text.text.clone(),
        language,
        syntax,
        passes: passes.enabled().into_iter().map(|p| p.name().to_owned()).collect(),
        siblings: if language == Language::Sw { text.sw_siblings() } else { Vec::new() },
    }
}

/// Loads a stored version again from its source text, with its recorded passes (a pass this
/// wfc no longer has is skipped: passes preserve behaviour, they only simplify the IR).
pub(crate) fn load_version(version: &WorkflowVersion) -> Result<wfc_ir::Workflow, String> {
    let d = &version.definition;
    let mut passes = wfc_core::optimize::Passes::none();
    for name in &d.passes {
        let _ = passes.enable_named(name);
    }
    let mut settings = wfc_core::Settings::new();
    settings.passes(passes);
    for (path, text) in &d.siblings {
        settings.sw_workflow(path.clone(), text.clone());
    }
    let source = wfc_core::Source { path: &d.origin, text: &d.source };
    let loaded = wfc_core::load_with(source, &settings).map_err(|diags| {
        let first = diags.first_error().map(|d| format!("{}: {}", d.code, d.message));
        format!(
            "the stored definition of version {} ({}) does not load: {}",
            version.version_id,
            d.origin,
            first.unwrap_or_else(|| "no error message".into())
        )
    })?;
    Ok(loaded.workflow)
}

/// Registers `definition` (a deploy: a new version becomes the workflow's current one) and
/// returns its version id.
async fn register(
    store: &Arc<dyn Store>,
    definition: &Definition,
    workflow: &wfc_ir::Workflow,
) -> Result<String, String> {
    let hash = durable::definition_hash(workflow);
    let (version, _) =
        Registry::new(Arc::clone(store)).register(definition.clone(), Some(hash)).await.map_err(|e| e.to_string())?;
    Ok(version.version_id)
}

/// Which version execution `name` runs on, for a process that runs version `mine` of
/// `workflow` (see docs/durable.md, "Deploys and versions"):
///
/// - a new or finished execution, or one pinned to `mine`: `mine`;
/// - one pinned to another version: that version, loaded from the store (`Ok(Err(version))`
///   when `load_others` is false: the compiled engine runs only its own version);
/// - one started before versions existed: `mine` if its IR hash is this definition's or its
///   journal replays cleanly on it (then it is pinned to `mine` now); else it is refused.
async fn resume_on(
    store: &Arc<dyn Store>,
    name: &str,
    workflow: &wfc_ir::Workflow,
    mine: &str,
    load_others: bool,
) -> Result<Result<Option<wfc_ir::Workflow>, WorkflowVersion>, String> {
    let Some(record) = store.describe_execution(name).await.map_err(|e| e.to_string())? else {
        return Ok(Ok(None));
    };
    if record.status != ExecutionStatus::Running {
        return Ok(Ok(None));
    }
    match &record.version_id {
        Some(v) if v == mine => Ok(Ok(None)),
        Some(v) => {
            let version = Registry::new(Arc::clone(store))
                .version(v)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("execution '{name}' is pinned to version {v}, which is not in the store"))?;
            if !load_others {
                return Ok(Err(version));
            }
            eprintln!(
                "wfc: execution '{name}' is pinned to version {v} (from {}); it resumes on that version",
                version.definition.origin
            );
            Ok(Ok(Some(load_version(&version)?)))
        }
        None if record.definition_hash.as_deref().is_none_or(|h| h == durable::definition_hash(workflow)) => {
            Ok(Ok(None))
        }
        None => {
            let operations = store.load_journal(name).await.map_err(|e| e.to_string())?;
            if let Err(d) = wfc_worker::replay::check(workflow, &record, &operations).await {
                return Err(format!(
                    "execution '{name}' was started by an older wfc with another definition, and its journal does not replay on this one ({d}); it was left as it is: run it with the definition that started it, or move it with `wfc executions upgrade`"
                ));
            }
            // Adopted: this process fences any holder when it opens the execution anyway.
            let guard =
                PinGuard { from: None, held_epoch: Some(record.epoch), checkpoint_seq: Some(record.checkpoint_seq) };
            store.pin_execution(name, mine, &guard).await.map_err(|e| e.to_string())?;
            Ok(Ok(None))
        }
    }
}

/// The task handler of the CLI: `--handlers` commands first, then Lambda resources at
/// `--lambda-endpoint`, then `--mocks`. Keys of either file that match nothing in `workflows`
/// are warned about.
fn handler_for(
    handlers: Option<&std::path::Path>,
    lambda_endpoint: Option<&str>,
    mocks_file: Option<&std::path::Path>,
    mocks: crate::mocks::MockSet,
    workflows: &[&wfc_ir::Workflow],
    virtual_time: bool,
    counter: Option<Arc<wfc_runtime::mock_config::InvocationCounter>>,
) -> Result<Arc<dyn DynHandler>, String> {
    let commands = match handlers {
        Some(path) => crate::handlers::load(path)?,
        None => Default::default(),
    };
    if let Some(path) = handlers {
        crate::unmatched::warn(
            "handlers key",
            &path.display().to_string(),
            commands.keys().map(String::as_str),
            workflows,
        );
    }
    if let Some(path) = mocks_file {
        crate::unmatched::warn("mocks key", &path.display().to_string(), mocks.keys(), workflows);
    }
    // A task neither file answers fails with Wfc.NoMock; its cause says where to add an answer.
    let mocks = match (handlers, mocks_file) {
        (Some(h), Some(m)) => mocks.with_hint(format!(
            "add a command for it to {} (--handlers) or a mock to {} (--mocks)",
            h.display(),
            m.display()
        )),
        (Some(h), None) => mocks.with_hint(format!(
            "add a command for it to {} (--handlers), or a mock in a file given with --mocks FILE",
            h.display()
        )),
        _ => mocks,
    };
    // One handler serves every execution the process runs: each counts its own invocations,
    // in the store when there is one (so a restart goes on with an execution's next answer).
    let mocks = match counter {
        Some(counter) => MockHandler::per_execution(mocks).counted_in(counter),
        None => MockHandler::per_execution(mocks),
    };
    Ok(match lambda_endpoint {
        Some(endpoint) => {
            let lambda = crate::lambda_tasks::LambdaTasks::new(endpoint, mocks, virtual_time)?;
            Arc::new(CommandHandlers::new(commands, lambda).on_virtual_time(virtual_time))
        }
        None => Arc::new(CommandHandlers::new(commands, mocks).on_virtual_time(virtual_time)),
    })
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
        if args.lambda_endpoint.is_some() {
            return fatal(
                "--lambda-endpoint runs on the interpreter only (--engine interp); the compiled engine answers tasks from --mocks",
            );
        }
        if let (Some(url), Some(name)) = (url, name) {
            return run_compiled(args, url, name);
        }
    }
    let color = ColorChoice::Auto.enabled();
    let (workflow, definition) = match load_definition(&args.file, color) {
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
    let virtual_time = args.virtual_time;
    // On virtual time tokio's clock is paused, as `wfc run` without --store/--handlers has it:
    // waits take no real time and elapsed_seconds counts only virtual time.
    let rt = match if virtual_time { paused_runtime() } else { runtime() } {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    // With a store, mock invocations are counted in it: a rerun that resumes the execution
    // goes on with its next answer.
    let opened = match url.map(|url| rt.block_on(open(url))).transpose() {
        Ok(store) => store,
        Err(e) => return fatal(e),
    };
    let counter =
        opened.as_ref().map(|store| Arc::new(wfc_runtime::mock_config::InvocationCounter::new(Arc::clone(store))));
    let handler = match handler_for(
        args.handlers.as_deref(),
        args.lambda_endpoint.as_deref(),
        args.mocks.as_deref(),
        mocks,
        &[&workflow],
        args.virtual_time,
        counter.clone(),
    ) {
        Ok(h) => h,
        Err(e) => return fatal(e),
    };
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
            let result = wfc_interp::run(&workflow, handler.as_ref(), input, options).await;
            return outcome_of(result, virtual_time);
        };
        let store = match opened {
            Some(store) => store,
            None => open(url).await?,
        };
        let mine = register(&store, &definition, &workflow).await?;
        // An execution pinned to another version resumes on it, loaded from the store.
        let (workflow, version) = match resume_on(&store, name, &workflow, &mine, true).await? {
            Ok(Some(pinned)) => {
                let record = store.describe_execution(name).await.map_err(|e| e.to_string())?;
                (pinned, record.and_then(|r| r.version_id).unwrap_or(mine))
            }
            _ => (workflow, mine),
        };
        let workflow = &workflow;
        let opened = Journal::open_version(Arc::clone(&store), name, workflow, &version, &input, &clock)
            .await
            .map_err(|e| e.to_string())?;
        match opened {
            Opened::Finished(record) => {
                let history = store.read_history(name).await.map_err(|e| e.to_string())?;
                stored_outcome(&record, history)
            }
            Opened::Running(journal) => {
                let options = options.with_journal(journal.clone());
                let owner = format!("run-{}", std::process::id());
                let verb = if journal.is_resume() { "resumed" } else { "started" };
                tracing::info!(execution = name, workflow = %workflow.name, version = %version, "{verb}");
                let run = wfc_interp::run(workflow, handler.as_ref(), input, options);
                tokio::select! {
                    result = run => {
                        let error = result.error.as_ref().map(|e| e.error.as_str());
                        tracing::info!(execution = name, status = ?result.status, error, "finished");
                        if served_execution(name) {
                            forget_activity_tasks(&store, name).await;
                        }
                        // Succeeded: no redrive needs its mock invocation counters.
                        if let Some(counter) = counter.as_ref().filter(|_| result.status == wfc_runtime::Status::Succeeded)
                            && let Err(e) = counter.forget(name).await
                        {
                            tracing::warn!(execution = name, error = %e, "cannot delete the mock invocation counters");
                        }
                        outcome_of(result, virtual_time)
                    }
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
///
/// Compiled code runs only its own version: an execution pinned to another version is left as
/// it is (refused, exit 2) for a process that runs its version (docs/durable.md).
fn run_compiled(args: &RunArgs, url: &str, name: &str) -> Exit {
    crate::run::run_with(args, Some(name.to_owned()), |execution| {
        let definition = definition_of(execution.definition, execution.workflow, execution.passes);
        let version = runtime()?.block_on(async {
            let store = open(url).await?;
            let mine = register(&store, &definition, execution.workflow).await?;
            match resume_on(&store, name, execution.workflow, &mine, false).await? {
                Ok(_) => Ok(mine),
                Err(pinned) => Err(format!(
                    "execution '{name}' is pinned to version {} (from {}), and the compiled engine runs only its own version ({mine}): it was left as it is; resume it with `wfc run {} --store ... --name {name}` (the interpreter loads its version from the store) or a `wfc worker`",
                    pinned.version_id, pinned.definition.origin, pinned.definition.origin
                )),
            }
        })?;
        crate::compiled::execute_durable(execution, url, name, &version)
    })
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
        // The version it is pinned to; an execution started before versions has none, only the
        // IR hash of the definition that started it.
        "version": record.version_id,
    });
    if record.version_id.is_none() {
        v["legacy_hash"] = json!(record.definition_hash);
    }
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
        ExecutionsCommand::Start { file, .. } | ExecutionsCommand::Upgrade { to: file, .. } => {
            match load_definition(file, ColorChoice::Auto.enabled()) {
                Ok(w) => Some(w),
                Err(exit) => return exit,
            }
        }
        _ => None,
    };
    let result: Result<Value, String> = rt.block_on(async {
        // Only `start` creates the store; every other subcommand needs executions to exist.
        let store = match &args.command {
            ExecutionsCommand::Start { .. } => open(&args.store).await?,
            _ => open_existing(&args.store).await?,
        };
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
                // Its activity tasks go now (no server may be running to do it): their tokens
                // are TaskDoesNotExist and no poller is handed them.
                forget_activity_tasks(&store, name).await;
                Ok(record_json(&record))
            }
            ExecutionsCommand::Start { name, input, .. } => {
                let (workflow, definition) = start_workflow.as_ref().ok_or("internal error: no definition")?;
                let input: Value = match input {
                    Some(text) => serde_json::from_str(text).map_err(|e| format!("--input is not valid JSON: {e}"))?,
                    None => json!({}),
                };
                let version = register(&store, definition, workflow).await?;
                let new = NewExecution {
                    name: name.clone(),
                    workflow: workflow.name.clone(),
                    input,
                    start_time: Clock::real().now_rfc3339(),
                    definition_hash: Some(durable::definition_hash(workflow)),
                    version_id: Some(version),
                };
                let (record, existed) = store.create_execution(new).await.map_err(|e| e.to_string())?;
                let mut v = record_json(&record);
                v["existed"] = json!(existed);
                Ok(v)
            }
            ExecutionsCommand::Upgrade { name, to, dry_run } => {
                let (workflow, definition) = start_workflow.as_ref().ok_or("internal error: no definition")?;
                upgrade(&store, name, &to.display().to_string(), workflow, definition, *dry_run).await
            }
            ExecutionsCommand::Versions { workflow } => {
                let registry = Registry::new(Arc::clone(&store));
                let versions = registry.versions(workflow.as_deref()).await.map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                for v in versions {
                    let current = store.current_version(&v.definition.workflow).await.map_err(|e| e.to_string())?;
                    out.push(json!({
                        "version": v.version_id,
                        "workflow": v.definition.workflow,
                        "origin": v.definition.origin,
                        "language": v.definition.language.as_str(),
                        "syntax": v.definition.syntax.as_str(),
                        "passes": v.definition.passes,
                        "created_at_ms": v.created_at_ms,
                        "current": current.as_deref() == Some(v.version_id.as_str()),
                    }));
                }
                Ok(Value::Array(out))
            }
        }
    });
    match result.and_then(|v| print_json(&v)) {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}

/// `wfc executions upgrade NAME --to FILE [--dry-run]`: moves a running execution to FILE's
/// version only if its journal replays cleanly on it (a replay check first, then the move,
/// guarded so that a journal that grew meanwhile is not moved unchecked); otherwise refuses,
/// naming the first diverging operation. The execution must not be held by a process.
async fn upgrade(
    store: &Arc<dyn Store>,
    name: &str,
    file: &str,
    workflow: &wfc_ir::Workflow,
    definition: &Definition,
    dry_run: bool,
) -> Result<Value, String> {
    let record = store
        .describe_execution(name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no execution is named '{name}'"))?;
    if record.status != ExecutionStatus::Running {
        return Err(format!(
            "execution '{name}' has finished ({}); only running executions move to another version",
            record.status.as_str()
        ));
    }
    if record.workflow != workflow.name {
        return Err(format!(
            "execution '{name}' is of workflow '{}', and {file} defines workflow '{}'",
            record.workflow, workflow.name
        ));
    }
    let to = definition.version_id();
    let from = record.version_id.clone();
    let mut v = json!({ "execution": name, "from": from, "to": to, "dry_run": dry_run });
    if from.as_deref() == Some(to.as_str()) {
        v["upgraded"] = json!(false);
        v["note"] = json!("the execution is already on this version");
        return Ok(v);
    }
    let operations = store.load_journal(name).await.map_err(|e| e.to_string())?;
    let report = wfc_worker::replay::check(workflow, &record, &operations).await.map_err(|d| {
        let at = d.operation.as_deref().map(|op| format!(" at operation '{op}'")).unwrap_or_default();
        format!("cannot upgrade execution '{name}' to version {to} ({file}): its journal diverges{at}: {d}")
    })?;
    v["compatible"] = json!(true);
    v["replayed"] = json!(report.reached);
    v["waiting"] = json!(report.waiting);
    if dry_run {
        v["upgraded"] = json!(false);
        return Ok(v);
    }
    // Stored without becoming the workflow's current version: new executions are not affected.
    let hash = durable::definition_hash(workflow);
    Registry::new(Arc::clone(store)).store(definition.clone(), Some(hash)).await.map_err(|e| e.to_string())?;
    let guard = PinGuard { from, held_epoch: None, checkpoint_seq: Some(record.checkpoint_seq) };
    store
        .pin_execution(name, &to, &guard)
        .await
        .map_err(|e| format!("cannot upgrade execution '{name}' to version {to}: {e}"))?;
    v["upgraded"] = json!(true);
    Ok(v)
}

/// Whether `name` is the store name of an execution `wfc serve` started (`<machine>:<name>`;
/// AWS names never contain `:`): only those can have activity task rows.
fn served_execution(name: &str) -> bool {
    name.contains(':')
}

/// Deletes the activity task rows of execution `name`, which ended outside `wfc serve` (see
/// [`wfc_serve::tasks::forget_execution_tasks`]); a failure is logged (the next server's
/// start-up sweep deletes them then).
async fn forget_activity_tasks(store: &Arc<dyn Store>, name: &str) {
    if let Err(e) = wfc_serve::tasks::forget_execution_tasks(store.as_ref(), name).await {
        tracing::warn!(execution = name, error = %e, "cannot delete the activity task rows of the ended execution");
    }
}

/// `wfc callback --store URL --token T (--success JSON | --failure ERROR CAUSE | --heartbeat)`.
pub(crate) fn callback(args: &CallbackArgs) -> Exit {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fatal(e),
    };
    let result: Result<Value, String> = rt.block_on(async {
        let store = open_existing(&args.store).await?;
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
    let mut loaded = Vec::new();
    for file in &args.files {
        match load_definition(file, color) {
            Ok(w) => loaded.push(w),
            Err(exit) => return exit,
        }
    }
    // With `--test-case` (a MockConfigFile) the state machine is chosen per workflow
    // (`--state-machine`, the file's only one, or the one named like the workflow), so each
    // workflow gets its own handler; otherwise one handler serves them all (its unmatched keys
    // are warned about once, against every workflow).
    let all: Vec<&wfc_ir::Workflow> = loaded.iter().map(|(w, _)| w).collect();
    let groups: Vec<(&str, Vec<&wfc_ir::Workflow>)> = match args.test_case {
        Some(_) => all.iter().map(|w| (w.name.as_str(), vec![*w])).collect(),
        None => vec![("", all.clone())],
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    let store = match rt.block_on(open(&args.store)) {
        Ok(store) => store,
        Err(e) => return fatal(e),
    };
    // Mock invocations are counted in the store: a restarted worker, or another one, goes on
    // with an execution's next answer.
    let counter = Arc::new(wfc_runtime::mock_config::InvocationCounter::new(Arc::clone(&store)));
    let mut handlers = Vec::new();
    for (name, workflows) in &groups {
        let mocks = match crate::run::read_mocks(
            args.mocks.as_deref(),
            args.test_case.as_deref(),
            args.state_machine.as_deref(),
            name,
        ) {
            Ok(m) => m,
            Err(e) => return fatal(e),
        };
        match handler_for(
            args.handlers.as_deref(),
            args.lambda_endpoint.as_deref(),
            args.mocks.as_deref(),
            mocks,
            workflows,
            false,
            Some(Arc::clone(&counter)),
        ) {
            Ok(h) => handlers.push(h),
            Err(e) => return fatal(e),
        }
    }
    drop(groups);
    drop(all);
    // The versions in FILE... run as they are; any other stored version of these workflows is
    // loaded from the store's source text (executions keep the version they started on).
    let mut workflows = Workflows::new().loader(load_version);
    for (i, (workflow, definition)) in loaded.into_iter().enumerate() {
        let handler = Arc::clone(&handlers[i.min(handlers.len() - 1)]);
        workflows = workflows.interpreted_version(definition, Arc::new(workflow), handler);
    }
    let mocks = args.mocks.is_some();
    let tasks_store = Arc::clone(&store);
    workflows = workflows.on_finished(move |record, result| {
        let (counter, execution) = (Arc::clone(&counter), record.name.clone());
        // A succeeded execution is never redriven: its mock invocation counters go with its end.
        let succeeded = result.status == wfc_runtime::Status::Succeeded;
        let store = Arc::clone(&tasks_store);
        Box::pin(async move {
            if mocks
                && succeeded
                && let Err(e) = counter.forget(&execution).await
            {
                tracing::warn!(execution, error = %e, "cannot delete the mock invocation counters");
            }
            if served_execution(&execution) {
                forget_activity_tasks(&store, &execution).await;
            }
        })
    });
    let mut config =
        WorkerConfig { concurrency: args.concurrency, exit_when_idle: args.exit_when_idle, ..Default::default() };
    if let Some(owner) = &args.owner {
        config.owner = owner.clone();
    }
    config.objects.item_root = args.item_root.clone();
    config.objects.result_root = args.result_root.clone();
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
        let worker = Worker::new(store, workflows, config);
        let stats = worker.run(shutdown).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(json!({
            "claimed": stats.claimed,
            "finished": stats.finished,
            "suspended": stats.suspended,
            "lost": stats.lost,
            "rejected": stats.rejected,
            "released_at_shutdown": stats.released_at_shutdown,
            "left": stats.left,
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
