//! `wfc schedule`: run a Serverless Workflow's scheduled starts (`start.schedule`: an ISO 8601
//! interval, or cron with a time zone) with the runtime's scheduler, and print each instance's
//! result as one JSON line as it ends.
//!
//! Every instance is started by the scheduler ([`StartedBy::Scheduler`]), so a workflow with
//! `directInvoke: deny` runs here although `wfc run` refuses it. Instances run concurrently on
//! the interpreter, each with its own mock counters and its own virtual clock starting at its
//! fire time. `wfc schedule` delivers no events: each instance's event bus is closed, so a state
//! that waits for an event without a timeout fails with `Wfc.NoEvent` instead of hanging.

use std::io::Write;
use std::path::PathBuf;

use jiff::Timestamp;
use serde_json::{Value, json};
use wfc_runtime::schedule::{Bounds, StartedBy};
use wfc_runtime::{Clock, RunOptions};

use crate::check::{DefinitionText, definition_error};
use crate::engine::{MockHandler, outcome_of};
use crate::handlers::CommandHandlers;
use crate::{ColorChoice, Exit, fatal};

/// `wfc schedule`.
#[derive(Debug, clap::Args)]
pub(crate) struct ScheduleArgs {
    /// The Serverless Workflow definition (its start state has `start.kind: scheduled`).
    pub(crate) file: PathBuf,
    /// The input of every instance, as JSON text (default `{}`).
    #[arg(long, value_name = "JSON")]
    pub(crate) input: Option<String>,
    /// Run on virtual time: the scheduler jumps from one fire time to the next at once, and each
    /// instance's waits and timeouts take no real time. Needs `--until` or `--count`.
    #[arg(long)]
    pub(crate) virtual_time: bool,
    /// With `--virtual-time`, the moment the scheduler starts at, RFC 3339 (default
    /// 2024-01-01T00:00:00Z).
    #[arg(long, value_name = "TIME", requires = "virtual_time")]
    pub(crate) from: Option<String>,
    /// Start no instance for a fire time after TIME (RFC 3339, e.g. 2024-01-02T00:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub(crate) until: Option<String>,
    /// Start at most N instances.
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<usize>,
    /// Include each instance's history in its line.
    #[arg(long)]
    pub(crate) history: bool,
    /// Functions run as commands: `{"<function name>": {"command": [PROGRAM, ARGS...]}}` (see
    /// docs/cli.md, `--handlers`).
    #[arg(long, value_name = "FILE")]
    pub(crate) handlers: Option<PathBuf>,
    /// Mocked function responses for functions without a handler (wfc's mocks format).
    #[arg(long, value_name = "FILE")]
    pub(crate) mocks: Option<PathBuf>,
}

fn timestamp(flag: &str, text: &str) -> Result<Timestamp, String> {
    text.parse::<Timestamp>().map_err(|e| format!("{flag} {text:?} is not an RFC 3339 time: {e}"))
}

/// `wfc schedule FILE ...`.
pub(crate) fn run(args: &ScheduleArgs) -> Exit {
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
    let workflow = &loaded.workflow;
    let Some(schedule) = wfc_runtime::sw::meta(workflow).and_then(|m| m.schedule.clone()) else {
        return fatal(format!(
            "{} has no `start.schedule` (a start state with `\"start\": {{\"kind\": \"scheduled\", \"schedule\": ...}}`): nothing to schedule; use `wfc run` to start it once",
            def.path
        ));
    };
    let parsed = (|| -> Result<_, String> {
        let input: Value = match &args.input {
            Some(text) => serde_json::from_str(text).map_err(|e| format!("--input is not valid JSON: {e}"))?,
            None => json!({}),
        };
        let until = args.until.as_deref().map(|t| timestamp("--until", t)).transpose()?;
        let from = args.from.as_deref().map(|t| timestamp("--from", t)).transpose()?;
        let mocks = crate::run::read_mocks(args.mocks.as_deref(), None, None, &workflow.name)?;
        let commands = match &args.handlers {
            Some(path) => crate::handlers::load(path)?,
            None => Default::default(),
        };
        Ok((input, until, from, mocks, commands))
    })();
    let (input, until, from, mocks, commands) = match parsed {
        Ok(p) => p,
        Err(e) => return fatal(e),
    };
    let bounds = Bounds { until, count: args.count };
    if args.virtual_time && bounds.is_unbounded() {
        return fatal(
            "--virtual-time needs --until TIME or --count N: on virtual time an unbounded schedule never ends",
        );
    }
    let clock = match (args.virtual_time, from) {
        (true, Some(from)) => Clock::virtual_from(from),
        (true, None) => Clock::virtual_default(),
        (false, _) => Clock::real(),
    };
    let virtual_time = args.virtual_time;
    let mut failed = 0usize;
    let mut print_error = None;
    let scheduler = wfc_runtime::schedule::serve(
        &schedule,
        &clock,
        bounds,
        |n, fire_time| {
            let handler =
                CommandHandlers::new(commands.clone(), MockHandler::new(mocks.clone())).on_virtual_time(virtual_time);
            let mut options = if virtual_time { RunOptions::virtual_time() } else { RunOptions::real() };
            if virtual_time {
                // The instance's clock reads its fire time when it starts.
                options.clock = Clock::virtual_from(fire_time);
            }
            // No events are delivered: waits without a timeout end with Wfc.NoEvent.
            let bus = wfc_runtime::events::EventBus::new();
            bus.close();
            let options = options
                .with_name(format!("{}-{n}", workflow.name))
                .with_started_by(StartedBy::Scheduler { fire_time })
                .with_events(bus);
            let input = input.clone();
            async move { wfc_interp::run(workflow, &handler, input, options).await }
        },
        |n, fire_time, result| {
            let line = outcome_of(result, virtual_time).map(|outcome| {
                if !outcome.succeeded() {
                    failed += 1;
                }
                let mut line = json!({
                    "instance": n,
                    "scheduledAt": wfc_runtime::clock::format_timestamp(fire_time),
                });
                if let (Value::Object(line), Value::Object(rest)) = (&mut line, outcome.to_json(args.history)) {
                    line.extend(rest);
                }
                line
            });
            let printed = line.and_then(|line| {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| format!("cannot print a result: {e}"))
            });
            if let Err(e) = printed {
                print_error.get_or_insert(e);
            }
        },
    );
    // I/O for `--handlers` commands; on virtual time the clock is paused and jumps to the next
    // timer whenever nothing can run (so it can also jump while a command runs).
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all().start_paused(virtual_time);
    let started = match builder.build() {
        Ok(runtime) => runtime.block_on(scheduler),
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    if let Some(e) = print_error {
        return fatal(e);
    }
    match started {
        Ok(started) => {
            eprintln!("wfc schedule: {started} instance(s) started, {failed} failed");
            if failed == 0 { Exit::Success } else { Exit::Failure }
        }
        Err(e) => fatal(format!("{}: the schedule cannot be evaluated: {e}", def.path)),
    }
}
