//! `wfc decide`, `wfc lambda-invoke`, `wfc lambda-serve`: the workflow as an Amazon SWF decider
//! and as an AWS Lambda durable function (docs/adapters.md).

use std::io::{Read, Write};
use std::path::PathBuf;

use serde_json::Value;
use wfc_runtime::adapters::lambda_durable;
use wfc_runtime::adapters::swf::{self, SwfConfig};

use crate::check::{DefinitionText, definition_error};
use crate::{ColorChoice, Exit, fatal};

/// `wfc decide`.
#[derive(Debug, clap::Args)]
pub(crate) struct DecideArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// The decider's configuration (activity types, task list, timeouts, Lambda functions) as
    /// JSON; every field has a default (docs/adapters.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Read the decision task from this file instead of standard input.
    #[arg(long, value_name = "FILE")]
    pub(crate) task: Option<PathBuf>,
}

fn read_json(path: Option<&PathBuf>, what: &str) -> Result<Value, String> {
    let (text, from) = match path {
        Some(p) => (
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?,
            p.display().to_string(),
        ),
        None => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| format!("cannot read standard input: {e}"))?;
            (text, "standard input".to_owned())
        }
    };
    serde_json::from_str(&text).map_err(|e| format!("the {what} in {from} is not valid JSON: {e}"))
}

/// The definition a decider runs and its configuration (`--config`, else the defaults): for
/// `wfc decide` and `wfc swf-decider`. A bad definition is reported with its diagnostics.
pub(crate) fn load_decider(
    file: &std::path::Path,
    config: Option<&PathBuf>,
) -> Result<(wfc_core::Loaded, SwfConfig), Exit> {
    let def = DefinitionText::read(file).map_err(fatal)?;
    let loaded = def.load().map_err(|diags| definition_error(&def.path, &diags, ColorChoice::Auto.enabled()))?;
    let swf_config = match config {
        None => SwfConfig::default(),
        Some(path) => read_json(Some(path), "decider configuration")
            .and_then(|v| {
                serde_json::from_value(v).map_err(|e| format!("{}: invalid decider configuration: {e}", path.display()))
            })
            .map_err(fatal)?,
    };
    // A `subflows` key the definition never uses is a mistake, not a no-op.
    if let (Some(path), Err(e)) = (config, swf_config.check_subflows(&loaded.workflow)) {
        return Err(fatal(format!("{}: {e}", path.display())));
    }
    Ok((loaded, swf_config))
}

/// Reads the definition, the config and the decision task, and prints the
/// RespondDecisionTaskCompleted request.
pub(crate) fn decide(args: &DecideArgs) -> Exit {
    let (loaded, config) = match load_decider(&args.file, args.config.as_ref()) {
        Ok(both) => both,
        Err(exit) => return exit,
    };
    let task = match read_json(args.task.as_ref(), "decision task") {
        Ok(t) => t,
        Err(e) => return fatal(e),
    };
    match swf::decide(&loaded.workflow, &task, &config) {
        Ok(response) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(&response).unwrap_or_default());
            Exit::Success
        }
        Err(e) => fatal(e),
    }
}

/// The chained-invoke flags of `wfc lambda-invoke` and `wfc lambda-serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ChainedArgs {
    /// Invoke the Serverless Workflow subflows of WORKFLOW_ID (optionally only those whose
    /// workflow has VERSION) as a Lambda CHAINED_INVOKE of FUNCTION (a function name or ARN,
    /// with an optional `:QUALIFIER`) instead of running them in this invocation; repeatable
    /// (docs/adapters.md).
    #[arg(long = "chained-function", value_name = "WORKFLOW_ID[@VERSION]=FUNCTION")]
    pub(crate) chained_functions: Vec<String>,
    /// Run each child of a DISTRIBUTED Map Run as a Lambda CHAINED_INVOKE of FUNCTION (default:
    /// this function itself), which runs the Map's ItemProcessor as a durable execution of its
    /// own, instead of in this invocation (docs/adapters.md).
    #[arg(long = "chained-map-runs", value_name = "FUNCTION", num_args = 0..=1, default_missing_value = "")]
    pub(crate) chained_map_runs: Option<String>,
}

/// `wfc lambda-invoke`.
#[derive(Debug, clap::Args)]
pub(crate) struct LambdaInvokeArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// The durable execution API endpoint, `http://HOST:PORT` (e.g. dex-local-runner).
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: String,
    /// Mocked task responses (wfc's format): the Task attempts this invocation runs.
    #[arg(long, value_name = "FILE")]
    pub(crate) mocks: Option<PathBuf>,
    /// Read the invocation event from this file instead of standard input.
    #[arg(long, value_name = "FILE")]
    pub(crate) event: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) chained: ChainedArgs,
}

/// `wfc lambda-serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct LambdaServeArgs {
    /// The definition files: an Invoke of function NAME runs the file whose name starts with
    /// `NAME.` (a single file answers every function name).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Where to answer Lambda `Invoke` calls (`POST /2015-03-31/functions/NAME/invocations`).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:3011")]
    pub(crate) listen: String,
    /// The durable execution API endpoint, `http://HOST:PORT`.
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: String,
    /// Mocked task responses (wfc's format), shared by every invocation this process serves.
    #[arg(long, value_name = "FILE")]
    pub(crate) mocks: Option<PathBuf>,
    /// Append one line per Task attempt actually run (`<state> <retry count>`, then the task
    /// token for a callback task) to this file: a ledger that shows replayed steps are not run
    /// again.
    #[arg(long, value_name = "FILE")]
    pub(crate) ledger: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) chained: ChainedArgs,
}

/// `wfc lambda-callback`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("answer").required(true).args(["success", "failure", "heartbeat"])))]
pub(crate) struct LambdaCallbackArgs {
    /// The durable execution API endpoint, `http://HOST:PORT`.
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: String,
    /// The callback id (the task token the `.waitForTaskToken` task's handler was given).
    #[arg(long, value_name = "ID")]
    pub(crate) id: String,
    /// Succeed the callback with this JSON result.
    #[arg(long, value_name = "JSON")]
    pub(crate) success: Option<String>,
    /// Fail the callback with this error name and cause.
    #[arg(long, num_args = 2, value_names = ["ERROR", "CAUSE"])]
    pub(crate) failure: Option<Vec<String>>,
    /// Send a heartbeat (restarts the HeartbeatSeconds countdown).
    #[arg(long)]
    pub(crate) heartbeat: bool,
}

/// Sends a callback answer to the durable execution service.
pub(crate) fn lambda_callback(args: &LambdaCallbackArgs) -> Exit {
    let client = match lambda_durable::HttpClient::new(&args.endpoint) {
        Ok(c) => c,
        Err(e) => return fatal(e),
    };
    let success = match args.success.as_deref().map(serde_json::from_str::<Value>).transpose() {
        Ok(v) => v,
        Err(e) => return fatal(format!("--success is not valid JSON: {e}")),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fatal(e),
    };
    let sent = runtime.block_on(async {
        match (&success, &args.failure) {
            (Some(result), _) => client.callback_success(&args.id, result).await,
            (None, Some(failure)) => {
                let (error, cause) =
                    (failure.first().map_or("", String::as_str), failure.get(1).map_or("", String::as_str));
                client.callback_failure(&args.id, error, cause).await
            }
            (None, None) => client.callback_heartbeat(&args.id).await,
        }
    });
    match sent {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}

/// Answers from mocks, and appends each real call to the ledger file if there is one.
struct LedgerHandler {
    mocks: crate::engine::MockHandler,
    ledger: Option<PathBuf>,
}

impl wfc_runtime::DynHandler for LedgerHandler {
    fn call<'a>(
        &'a self,
        resource: &'a str,
        input: Value,
        ctx: wfc_runtime::TaskContext,
    ) -> futures::future::BoxFuture<'a, Result<Value, wfc_runtime::Failure>> {
        if let Some(path) = &self.ledger {
            // A callback task's line also names the token it was given (what an external
            // system would use to answer it).
            let line = match ctx.task_token() {
                Some(token) => format!("{} {} {token}\n", ctx.state_name(), ctx.retry_count()),
                None => format!("{} {}\n", ctx.state_name(), ctx.retry_count()),
            };
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()));
            if let Err(e) = written {
                eprintln!("wfc: cannot append to the ledger {}: {e}", path.display());
            }
        }
        self.mocks.call(resource, input, ctx)
    }
}

struct LambdaSetup {
    workflows: Vec<(String, wfc_ir::Workflow)>,
    handler: LedgerHandler,
    client: std::sync::Arc<dyn lambda_durable::DurableClient>,
    chained: lambda_durable::ChainedInvokes,
}

impl LambdaSetup {
    fn workflow(&self, function: &str) -> Option<&wfc_ir::Workflow> {
        match self.workflows.as_slice() {
            [(_, only)] => Some(only),
            all => all.iter().find(|(stem, _)| stem == function).map(|(_, w)| w),
        }
    }
}

fn lambda_setup(
    files: &[PathBuf],
    mocks: Option<&PathBuf>,
    endpoint: &str,
    ledger: Option<PathBuf>,
    chained: &ChainedArgs,
) -> Result<LambdaSetup, Exit> {
    let mut workflows = Vec::new();
    for file in files {
        let def = DefinitionText::read(file).map_err(fatal)?;
        let loaded = def.load().map_err(|diags| definition_error(&def.path, &diags, ColorChoice::Auto.enabled()))?;
        let stem =
            file.file_name().and_then(|n| n.to_str()).and_then(|n| n.split('.').next()).unwrap_or_default().to_owned();
        workflows.push((stem, loaded.workflow));
    }
    let name = workflows.first().map(|(_, w)| w.name.clone()).unwrap_or_default();
    let mocks = crate::run::read_mocks(mocks.map(PathBuf::as_path), None, None, &name).map_err(fatal)?;
    let client = lambda_durable::HttpClient::new(endpoint).map_err(fatal)?;
    let handler = LedgerHandler { mocks: crate::engine::MockHandler::new(mocks), ledger };
    // Every mapping must name a subflow one of the served definitions waits for.
    let map_runs = match chained.chained_map_runs.as_deref() {
        None => lambda_durable::MapRunChildren::InParent,
        Some(f) => lambda_durable::MapRunChildren::chained(f).map_err(|e| fatal(format!("--chained-map-runs: {e}")))?,
    };
    let chained = lambda_durable::ChainedInvokes::parse(chained.chained_functions.iter().map(String::as_str))
        .map(|c| c.with_map_runs(map_runs))
        .and_then(|c| c.check(workflows.iter().map(|(_, w)| w)).map(|()| c))
        .map_err(|e| fatal(format!("--chained-function/--chained-map-runs: {e}")))?;
    Ok(LambdaSetup { workflows, handler, client: std::sync::Arc::new(client), chained })
}

/// Handles one durable invocation event and prints the invocation output.
pub(crate) fn lambda_invoke(args: &LambdaInvokeArgs) -> Exit {
    let files = std::slice::from_ref(&args.file);
    let setup = match lambda_setup(files, args.mocks.as_ref(), &args.endpoint, None, &args.chained) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let event = match read_json(args.event.as_ref(), "invocation event") {
        Ok(e) => e,
        Err(e) => return fatal(e),
    };
    let workflow = &setup.workflows[0].1;
    match lambda_durable::invoke_chained(workflow, &setup.handler, &event, setup.client.clone(), &setup.chained) {
        Ok(output) => {
            println!("{output}");
            Exit::Success
        }
        Err(e) => {
            eprintln!("error: the invocation failed (the service retries it): {e}");
            Exit::Failure
        }
    }
}

/// Serves Lambda `Invoke` calls on `--listen`, one at a time, each a durable invocation.
pub(crate) fn lambda_serve(args: &LambdaServeArgs) -> Exit {
    let setup = match lambda_setup(&args.files, args.mocks.as_ref(), &args.endpoint, args.ledger.clone(), &args.chained)
    {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let listener = match std::net::TcpListener::bind(&args.listen) {
        Ok(l) => l,
        Err(e) => return fatal(format!("cannot listen on {}: {e}", args.listen)),
    };
    let names: Vec<&str> = setup.workflows.iter().map(|(stem, _)| stem.as_str()).collect();
    eprintln!("wfc lambda-serve: answering Invoke on http://{} for {}", args.listen, names.join(", "));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if let Err(e) = serve_one(&setup, &mut stream) {
            eprintln!("wfc lambda-serve: {e}");
        }
    }
    Exit::Success
}

fn serve_one(setup: &LambdaSetup, stream: &mut std::net::TcpStream) -> Result<(), String> {
    let request = read_request(stream)?;
    let (status, headers, body) = match request {
        (method, path, _) if method == "GET" && path.starts_with("/health") => (200, "", "{}".to_owned()),
        (method, path, body) if method == "POST" && path.ends_with("/invocations") => {
            // /2015-03-31/functions/NAME/invocations (NAME may carry a :qualifier).
            let function = path.rsplit('/').nth(1).unwrap_or_default();
            let function = function.split(['%', ':']).next().unwrap_or_default();
            match setup
                .workflow(function)
                .ok_or_else(|| format!("no definition is served for function '{function}'"))
                .and_then(|workflow| {
                    let event =
                        serde_json::from_slice::<Value>(&body).map_err(|e| format!("the event is not JSON: {e}"))?;
                    // Map Run children chain to the function this route serves, unless named.
                    let chained = setup.chained.for_function(function);
                    lambda_durable::invoke_chained(workflow, &setup.handler, &event, setup.client.clone(), &chained)
                        .map_err(|e| e.to_string())
                }) {
                Ok(output) => (200, "", output.to_string()),
                // As Lambda reports a function error: 200 with X-Amz-Function-Error.
                Err(e) => (
                    200,
                    "X-Amz-Function-Error: Unhandled\r\n",
                    serde_json::json!({ "errorType": "Wfc.InvocationError", "errorMessage": e }).to_string(),
                ),
            }
        }
        (method, path, _) => {
            (404, "", serde_json::json!({ "message": format!("no route {method} {path}") }).to_string())
        }
    };
    let reason = if status == 200 { "OK" } else { "Not Found" };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).map_err(|e| e.to_string())
}

/// Reads one HTTP/1.1 request: method, path and body (by Content-Length).
fn read_request(stream: &mut std::net::TcpStream) -> Result<(String, String, Vec<u8>), String> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before a request".into());
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..header_end]).into_owned();
    let mut first = head.lines().next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or_default().to_owned();
    let length = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .map(|(_, v)| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = raw[header_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Ok((method, path, body))
}
