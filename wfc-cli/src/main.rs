//! `wfc`: check, compile, graph, run and test workflow definitions.
//!
//! Exit codes (all commands): 0 success; 1 the thing checked failed (invalid definition, failed
//! or timed-out execution, failing test cases); 2 usage, I/O or definition error. See docs/cli.md.

mod adapters;
mod callback_answers;
mod case;
mod check;
mod compiled;
mod event_cmd;

mod diff;
mod durable;
mod emit;
mod engine;
mod handlers;
mod lambda_tasks;
mod mocks;
mod outcome;
mod placeholders;
mod recorded;
mod recorded_trace;
mod run;
mod schedule_cmd;
mod serve_cmd;
mod swf_decider;
mod test_cmd;
mod unmatched;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Compile workflow definitions (Amazon States Language) into typed async Rust, and run them.
#[derive(Debug, Parser)]
#[command(name = "wfc", version, about, propagate_version = true)]
struct Cli {
    /// Log only errors (no progress of durable runs and workers); RUST_LOG overrides.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate definitions and print rustc-style diagnostics.
    Check(CheckArgs),
    /// Print the Rust module generated for a definition.
    Compile(CompileArgs),
    /// Print the state graph as Mermaid, Graphviz dot or an SVG drawing.
    Graph(GraphArgs),
    /// Execute a definition once with mocked tasks and print the result as JSON.
    Run(RunArgs),
    /// Run every case file (`*.case.json`) under the given paths.
    Test(TestArgs),
    /// Inspect, start and stop durable executions in a store (see `wfc run --store`).
    Executions(ExecutionsArgs),
    /// Run executions from a shared store (SQLite or PostgreSQL) until SIGTERM.
    Worker(WorkerArgs),
    /// Complete a `.waitForTaskToken` task through the store: SendTaskSuccess/Failure/Heartbeat.
    Callback(CallbackArgs),
    /// Deliver a CloudEvent to a running durable Serverless Workflow execution through the store.
    Event(event_cmd::EventArgs),
    /// Answer an Amazon SWF decision task (PollForDecisionTask JSON on stdin) with the
    /// RespondDecisionTaskCompleted request.
    Decide(adapters::DecideArgs),
    /// Poll Amazon SWF for decision tasks and answer them (SigV4-signed) until SIGTERM/Ctrl-C.
    SwfDecider(swf_decider::SwfDeciderArgs),
    /// Handle one AWS Lambda durable function invocation (the event JSON on stdin) against a
    /// durable execution endpoint, and print the invocation output.
    LambdaInvoke(adapters::LambdaInvokeArgs),
    /// Serve Lambda Invoke calls locally, each a durable invocation of the definition (for
    /// dex-local-runner).
    LambdaServe(adapters::LambdaServeArgs),
    /// Complete a Lambda durable function's callback through the durable execution service
    /// (SendDurableExecutionCallbackSuccess/Failure/Heartbeat).
    LambdaCallback(adapters::LambdaCallbackArgs),
    /// Start a Serverless Workflow's instances at the times its `start.schedule` gives (interval,
    /// or cron with time zone) and print each instance's result as a JSON line.
    Schedule(schedule_cmd::ScheduleArgs),
    /// Serve the AWS Step Functions API (AWS JSON 1.0) on a local port, over a durable store,
    /// for the AWS CLI, boto3 and the AWS SDKs.
    Serve(serve_cmd::ServeArgs),
}

/// `wfc worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    /// The store: `sqlite:PATH` or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// The definitions whose executions this worker runs.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Task handlers: `{"<resource>": {"command": [PROGRAM, ARGS...]}}` (see docs/cli.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) handlers: Option<PathBuf>,
    /// Invoke Lambda Task resources (`arn:aws:lambda:...:function:...`, `lambda:invoke`)
    /// through the Lambda Invoke API at this URL (LocalStack, `sam local start-lambda`, AWS),
    /// as Step Functions Local's LAMBDA_ENDPOINT; credentials and region from the AWS chain.
    #[arg(long, value_name = "URL")]
    pub(crate) lambda_endpoint: Option<String>,
    /// Mocked task responses for resources without a handler: wfc's mocks format or a Step
    /// Functions Local MockConfigFile (with `--test-case`).
    #[arg(long, value_name = "FILE")]
    pub(crate) mocks: Option<PathBuf>,
    /// The MockConfigFile test case every execution this worker runs uses (required with one).
    #[arg(long, value_name = "NAME")]
    pub(crate) test_case: Option<String>,
    /// The MockConfigFile state machine (default: the only one, or the one named like each
    /// workflow).
    #[arg(long, value_name = "NAME")]
    pub(crate) state_machine: Option<String>,
    /// How many executions run at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) concurrency: usize,
    /// Exit when no execution is runnable or running.
    #[arg(long)]
    pub(crate) exit_when_idle: bool,
    /// The worker's name in the store (default `worker-<pid>`).
    #[arg(long, value_name = "NAME")]
    pub(crate) owner: Option<String>,
    /// How often to look for work when nothing wakes the worker, in milliseconds (default 500).
    #[arg(long, value_name = "MS")]
    pub(crate) poll_ms: Option<u64>,
    /// The lease of a claimed execution in seconds (default 30).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) lease_seconds: Option<u64>,
    /// A Wait, back-off or callback wait longer than this releases the execution until it is
    /// due, instead of holding it (default 5).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) suspend_after_seconds: Option<f64>,
    /// On SIGTERM, how long in-flight executions may finish before they are released (default 10).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) shutdown_grace_seconds: Option<f64>,
    /// Directory a DISTRIBUTED Map's ItemReader reads from: `Bucket` and `Key` name the file
    /// `DIR/<Bucket>/<Key>` (never outside DIR), as `wfc run --item-root`.
    #[arg(long, value_name = "DIR")]
    pub(crate) item_root: Option<PathBuf>,
    /// Directory a DISTRIBUTED Map's ResultWriter writes to: `DIR/<Bucket>/<Prefix>/<run id>/`.
    #[arg(long, value_name = "DIR")]
    pub(crate) result_root: Option<PathBuf>,
}

/// `wfc callback`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("answer").required(true).args(["success", "failure", "heartbeat"])))]
pub(crate) struct CallbackArgs {
    /// The store: `sqlite:PATH` or `postgres://...`.
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// The task token (`$$.Task.Token`, `WFC_TASK_TOKEN` for command handlers).
    #[arg(long, value_name = "T")]
    pub(crate) token: String,
    /// SendTaskSuccess with this output (JSON).
    #[arg(long, value_name = "JSON")]
    pub(crate) success: Option<String>,
    /// SendTaskFailure with this error name and cause.
    #[arg(long, num_args = 2, value_names = ["ERROR", "CAUSE"])]
    pub(crate) failure: Vec<String>,
    /// SendTaskHeartbeat.
    #[arg(long)]
    pub(crate) heartbeat: bool,
}

/// `wfc executions`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecutionsArgs {
    /// The store: `sqlite:PATH` (add `?synchronous=normal` for faster, less durable commits) or
    /// `postgres://USER@HOST:PORT/DB`.
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: ExecutionsCommand,
}

/// `wfc executions` subcommands; each prints JSON on stdout.
#[derive(Debug, Subcommand)]
pub(crate) enum ExecutionsCommand {
    /// Every execution, newest first.
    List,
    /// One execution and its journal of operations.
    Describe {
        /// The execution name.
        name: String,
    },
    /// The history of a finished execution.
    History {
        /// The execution name.
        name: String,
    },
    /// Create an execution for workers to run (idempotent by name); runs nothing itself.
    Start {
        /// The definition.
        file: PathBuf,
        /// The execution name.
        #[arg(long, value_name = "NAME")]
        name: String,
        /// The input, as JSON text (default `{}`).
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
    },
    /// Move a running execution to FILE's version, only if its journal replays cleanly on it
    /// (else refused, naming the first diverging operation).
    Upgrade {
        /// The execution name.
        name: String,
        /// The new definition.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
        /// Check only: replay the journal on FILE and report, without moving the execution.
        #[arg(long)]
        dry_run: bool,
    },
    /// The workflow versions stored in the registry (newest first), without their sources.
    Versions {
        /// Only this workflow's.
        #[arg(long, value_name = "NAME")]
        workflow: Option<String>,
    },
    /// Stop (abort) a running execution; the process running it is fenced out.
    Stop {
        /// The execution name.
        name: String,
        /// The error to record.
        #[arg(long, value_name = "ERROR")]
        error: Option<String>,
        /// The cause to record.
        #[arg(long, value_name = "CAUSE")]
        cause: Option<String>,
    },
}

/// `wfc check`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// Definition files (`.asl.json`, `.json`, `.yaml`, `.yml`).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Output format of the diagnostics.
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub(crate) format: CheckFormat,
    /// When to color human output (auto: when stderr is a terminal and NO_COLOR is unset).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub(crate) color: ColorChoice,
}

/// Diagnostic output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CheckFormat {
    /// rustc-style text on stderr.
    Human,
    /// One JSON object per diagnostic per line, on stdout.
    Json,
}

/// When to use color.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// When stderr is a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    pub(crate) fn enabled(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

/// `wfc compile`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompileArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// Write the generated Rust here instead of stdout.
    #[arg(short, long, value_name = "OUT.rs")]
    pub(crate) output: Option<PathBuf>,
    /// Name of the generated module (default: the file stem in snake case).
    #[arg(long, value_name = "NAME")]
    pub(crate) module_name: Option<String>,
    /// Path of the runtime crate in generated code (default `::wfc_runtime`).
    #[arg(long, value_name = "PATH")]
    pub(crate) runtime_path: Option<String>,
    /// Optimizer passes.
    #[command(flatten)]
    pub(crate) opt: OptArgs,
}

/// `--no-opt PASS` / `--opt PASS`: which optimizer passes run (see docs/cli.md).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct OptArgs {
    /// Turn off an optimizer pass (repeatable): fold-intrinsics, paths, unreachable, direct-paths,
    /// native-choice, fold-pass, thread-choice, or all.
    #[arg(long = "no-opt", value_name = "PASS", value_parser = pass_name)]
    pub(crate) no_opt: Vec<String>,
    /// Turn on a pass that is off by default because it changes histories (fold-pass,
    /// thread-choice, or all); repeatable. A named `--no-opt PASS` wins over `--opt PASS`.
    #[arg(long = "opt", value_name = "PASS", value_parser = pass_name)]
    pub(crate) opt: Vec<String>,
}

impl OptArgs {
    /// The passes to run: none if `--no-opt=all`, else the defaults; plus `--opt`; minus the
    /// other `--no-opt` names. So `--no-opt=all --opt=fold-pass` runs fold-pass alone.
    pub(crate) fn passes(&self) -> wfc_core::optimize::Passes {
        let mut passes = if self.no_opt.iter().any(|n| n == "all") {
            wfc_core::optimize::Passes::none()
        } else {
            wfc_core::optimize::Passes::default()
        };
        // Names were validated by `pass_name` when parsing, so these cannot fail.
        for name in &self.opt {
            let _ = passes.enable_named(name);
        }
        for name in self.no_opt.iter().filter(|n| *n != "all") {
            let _ = passes.disable_named(name);
        }
        passes
    }
}

/// Validates a pass name for clap (`all` or one of the optimizer's passes).
fn pass_name(name: &str) -> Result<String, String> {
    if name == "all" {
        return Ok(name.to_owned());
    }
    name.parse::<wfc_core::optimize::Pass>().map(|_| name.to_owned()).map_err(|e| e.to_string())
}

/// `wfc graph`.
#[derive(Debug, clap::Args)]
pub(crate) struct GraphArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// Graph language.
    #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
    pub(crate) format: GraphFormat,
}

/// Graph language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GraphFormat {
    /// Mermaid `stateDiagram-v2`.
    Mermaid,
    /// Graphviz dot.
    Dot,
    /// A self-contained SVG drawing, laid out by wfc (no Graphviz needed).
    Svg,
}

/// Which engine executes the workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineChoice {
    /// The IR interpreter inside `wfc` (fast to start).
    Interp,
    /// The generated Rust, built with cargo in a cache directory.
    Compiled,
}

/// `wfc run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// The execution input, as JSON text (default `{}`).
    #[arg(long, value_name = "JSON", conflicts_with = "input_file")]
    pub(crate) input: Option<String>,
    /// Read the execution input from this JSON file.
    #[arg(long, value_name = "FILE")]
    pub(crate) input_file: Option<PathBuf>,
    /// Which engine runs the workflow.
    #[arg(long, value_enum, default_value_t = EngineChoice::Interp)]
    pub(crate) engine: EngineChoice,
    /// Mocked task responses: wfc's mocks format or a Step Functions Local MockConfigFile.
    #[arg(long, value_name = "FILE")]
    pub(crate) mocks: Option<PathBuf>,
    /// The MockConfigFile test case to use (required with a MockConfigFile).
    #[arg(long, value_name = "NAME")]
    pub(crate) test_case: Option<String>,
    /// The MockConfigFile state machine (default: the only one, or the workflow's name).
    #[arg(long, value_name = "NAME")]
    pub(crate) state_machine: Option<String>,
    /// Run on virtual time: waits, retries and timeouts take no real time; prints elapsed_seconds.
    #[arg(long)]
    pub(crate) virtual_time: bool,
    /// With --virtual-time: the execution starts at this RFC 3339 instant
    /// (`2025-01-01T00:00:00Z`; default 2024-01-01T00:00:00Z), which `$$.Execution.StartTime`,
    /// the history's timestamps and timestamp Waits see.
    #[arg(long, value_name = "RFC3339", requires = "virtual_time")]
    pub(crate) start_time: Option<String>,
    /// Include the execution history in the output.
    #[arg(long)]
    pub(crate) history: bool,
    /// Also write the execution as one self-contained HTML page: the state graph colored by
    /// what each state did, the path taken, the history, each state's input and output (for a
    /// definition that does not validate: its diagnostics, located in its source).
    #[arg(long, value_name = "FILE.html")]
    pub(crate) report: Option<PathBuf>,
    /// How much history the execution keeps: `full` (every event, as AWS Standard workflows) or
    /// `express` (none, as AWS Express workflows: faster, same output and errors).
    #[arg(long, value_name = "LEVEL", default_value = "full")]
    pub(crate) history_level: wfc_runtime::HistoryLevel,
    /// The state machine type: `standard`, `express` (an Express execution: its
    /// `$$.Execution.Id` is `arn:...:express:MACHINE:NAME:UUID`) or `express-sync` (also
    /// without `$$.Execution.RedriveCount`, as a StartSyncExecution).
    #[arg(long = "type", value_name = "TYPE", default_value = "standard")]
    pub(crate) machine_type: wfc_runtime::MachineType,
    /// Seed for retry jitter.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) seed: u64,
    /// Execution name (`$$.Execution.Name`).
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// Directory a DISTRIBUTED Map's ItemReader reads from: `Bucket` and `Key` name the file
    /// `DIR/<Bucket>/<Key>` (never outside DIR).
    #[arg(long, value_name = "DIR")]
    pub(crate) item_root: Option<PathBuf>,
    /// Directory a DISTRIBUTED Map's ResultWriter writes to: `DIR/<Bucket>/<Prefix>/<run id>/`.
    #[arg(long, value_name = "DIR")]
    pub(crate) result_root: Option<PathBuf>,
    /// Run durably in this store (`sqlite:PATH` or `postgres://...`), on either engine: starts
    /// execution `--name` or resumes it where it stopped; a finished one prints how it ended.
    #[arg(long, value_name = "URL", requires = "name")]
    pub(crate) store: Option<String>,
    /// Task handlers run as commands: `{"<resource>": {"command": [PROGRAM, ARGS...]}}`; the
    /// command reads the input on stdin and prints the result (see docs/cli.md). Interpreter only.
    #[arg(long, value_name = "FILE")]
    pub(crate) handlers: Option<PathBuf>,
    /// Invoke Lambda Task resources (`arn:aws:lambda:...:function:...`, `lambda:invoke`)
    /// through the Lambda Invoke API at this URL (LocalStack, `sam local start-lambda`, AWS),
    /// as Step Functions Local's LAMBDA_ENDPOINT; credentials and region from the AWS chain.
    /// Interpreter only.
    #[arg(long, value_name = "URL")]
    pub(crate) lambda_endpoint: Option<String>,
    /// Optimizer passes.
    #[command(flatten)]
    pub(crate) opt: OptArgs,
}

/// Engines `wfc test` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TestEngine {
    /// The interpreter.
    Interp,
    /// The generated Rust.
    Compiled,
    /// Both; a case passes only when both pass with the same history.
    Both,
}

/// `wfc test`.
#[derive(Debug, clap::Args)]
pub(crate) struct TestArgs {
    /// Case files or directories searched recursively for `*.case.json`.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Which engine(s) run the cases.
    #[arg(long, value_enum, default_value_t = TestEngine::Interp)]
    pub(crate) engine: TestEngine,
    /// Only run cases whose name or file path contains this text.
    #[arg(long, value_name = "TEXT")]
    pub(crate) filter: Option<String>,
    /// Also write a JSON report of every case to this file.
    #[arg(long, value_name = "REPORT")]
    pub(crate) json: Option<PathBuf>,
    /// Optimizer passes.
    #[command(flatten)]
    pub(crate) opt: OptArgs,
}

/// Exit statuses shared by every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0.
    Success,
    /// 1: invalid definition, failed execution, failing cases.
    Failure,
    /// 2: usage, I/O or definition error.
    Error,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        match e {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            Exit::Error => ExitCode::from(2),
        }
    }
}

/// Prints `error: message` to stderr and returns [`Exit::Error`].
pub(crate) fn fatal(message: impl std::fmt::Display) -> Exit {
    eprintln!("error: {message}");
    Exit::Error
}

/// What is logged on stderr unless RUST_LOG says otherwise: warnings, and the progress of
/// durable executions (claimed, started, resumed, waiting for a timer or a callback with its
/// token, finished) from workers and `wfc run --store`.
const DEFAULT_LOG: &str = "warn,wfc_journal=info,wfc_worker=info,wfc=info";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.is_empty() => tracing_subscriber::EnvFilter::new(directives),
        _ if cli.quiet => tracing_subscriber::EnvFilter::new("error"),
        _ => tracing_subscriber::EnvFilter::new(DEFAULT_LOG),
    };
    // Colors only where a person reads them (as for diagnostics: a terminal, NO_COLOR unset).
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(ColorChoice::Auto.enabled())
        .with_target(false)
        .with_env_filter(filter)
        .try_init();
    let exit = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Compile(args) => emit::compile(&args),
        Command::Graph(args) => emit::graph(&args),
        Command::Run(args) => match (&args.store, args.handlers.is_some() || args.lambda_endpoint.is_some()) {
            (Some(url), _) => durable::run(&args, Some(url)),
            (None, true) => durable::run(&args, None),
            (None, false) => run::run(&args),
        },
        Command::Executions(args) => durable::executions(&args),
        Command::Worker(args) => durable::worker(&args),
        Command::Serve(args) => serve_cmd::run(&args),
        Command::Callback(args) => durable::callback(&args),
        Command::Event(args) => event_cmd::run(&args),
        Command::Test(args) => test_cmd::run(&args),
        Command::Decide(args) => adapters::decide(&args),
        Command::SwfDecider(args) => swf_decider::run(&args),
        Command::LambdaInvoke(args) => adapters::lambda_invoke(&args),
        Command::LambdaServe(args) => adapters::lambda_serve(&args),
        Command::LambdaCallback(args) => adapters::lambda_callback(&args),
        Command::Schedule(args) => schedule_cmd::run(&args),
    };
    exit.into()
}
