//! `wfc decide`, `wfc lambda-invoke`, `wfc lambda-serve`: the workflow as an Amazon SWF decider
//! and as an AWS Lambda durable function (docs/adapters.md).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use wfc_aws::lambda_durable;
use wfc_aws::lambda_durable::client::SdkClient;
use wfc_aws::swf::{self, SwfConfig};

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
    /// The durable execution API endpoint (`http://` or `https://`, e.g. dex-local-runner);
    /// default: aws-config's (`AWS_ENDPOINT_URL_LAMBDA`, else AWS's for the region).
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: Option<String>,
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
    /// The durable execution API endpoint (`http://` or `https://`); default: aws-config's
    /// (`AWS_ENDPOINT_URL_LAMBDA`, else AWS's for the region).
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: Option<String>,
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
    /// The durable execution API endpoint (`http://` or `https://`); default: aws-config's
    /// (`AWS_ENDPOINT_URL_LAMBDA`, else AWS's for the region).
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: Option<String>,
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

/// A runtime for the Lambda commands, and the service client made on it (its connections
/// belong to this runtime).
fn lambda_runtime_and_client(endpoint: Option<&str>) -> Result<(tokio::runtime::Runtime, SdkClient), Exit> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(fatal)?;
    let client = runtime.block_on(SdkClient::from_env(endpoint)).map_err(fatal)?;
    Ok((runtime, client))
}

/// Sends a callback answer to the durable execution service.
pub(crate) fn lambda_callback(args: &LambdaCallbackArgs) -> Exit {
    let success = match args.success.as_deref().map(serde_json::from_str::<Value>).transpose() {
        Ok(v) => v,
        Err(e) => return fatal(format!("--success is not valid JSON: {e}")),
    };
    let (runtime, client) = match lambda_runtime_and_client(args.endpoint.as_deref()) {
        Ok(both) => both,
        Err(exit) => return exit,
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
    Ok(LambdaSetup { workflows, handler, chained })
}

/// Handles one durable invocation event and prints the invocation output.
pub(crate) fn lambda_invoke(args: &LambdaInvokeArgs) -> Exit {
    let files = std::slice::from_ref(&args.file);
    let setup = match lambda_setup(files, args.mocks.as_ref(), None, &args.chained) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let event = match read_json(args.event.as_ref(), "invocation event") {
        Ok(e) => e,
        Err(e) => return fatal(e),
    };
    let (runtime, client) = match lambda_runtime_and_client(args.endpoint.as_deref()) {
        Ok(both) => both,
        Err(exit) => return exit,
    };
    let workflow = &setup.workflows[0].1;
    let client: Arc<dyn lambda_durable::DurableClient> = Arc::new(client);
    let answer = runtime.block_on(lambda_durable::invoke_interpreted(
        workflow,
        &setup.handler,
        &event,
        client,
        &setup.chained,
        None,
    ));
    match answer {
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

/// Serves Lambda `Invoke` calls on `--listen` over hyper, one at a time (as Lambda hands one
/// event at a time to an execution environment), each a durable invocation.
pub(crate) fn lambda_serve(args: &LambdaServeArgs) -> Exit {
    let setup = match lambda_setup(&args.files, args.mocks.as_ref(), args.ledger.clone(), &args.chained) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let (runtime, client) = match lambda_runtime_and_client(args.endpoint.as_deref()) {
        Ok(both) => both,
        Err(exit) => return exit,
    };
    let client: Arc<dyn lambda_durable::DurableClient> = Arc::new(client);
    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(&args.listen).await {
            Ok(l) => l,
            Err(e) => return fatal(format!("cannot listen on {}: {e}", args.listen)),
        };
        let names: Vec<&str> = setup.workflows.iter().map(|(stem, _)| stem.as_str()).collect();
        eprintln!("wfc lambda-serve: answering Invoke on http://{} for {}", args.listen, names.join(", "));
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    eprintln!("wfc lambda-serve: {e}");
                    continue;
                }
            };
            let setup = &setup;
            let client = &client;
            let service = hyper::service::service_fn(move |request| answer(setup, client, request));
            // Connections are served one after the other (one invocation at a time), each for
            // one request: a kept-alive idle connection would hold up the next caller's.
            let served = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                eprintln!("wfc lambda-serve: {e}");
            }
        }
    })
}

type Response = hyper::Response<http_body_util::Full<hyper::body::Bytes>>;

fn json_response(status: u16, function_error: bool, body: &Value) -> Result<Response, std::convert::Infallible> {
    let mut response = hyper::Response::new(http_body_util::Full::new(hyper::body::Bytes::from(body.to_string())));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    if function_error {
        // As Lambda reports a function error: 200 with X-Amz-Function-Error.
        headers.insert("x-amz-function-error", hyper::header::HeaderValue::from_static("Unhandled"));
    }
    Ok(response)
}

/// One request: `GET /health`, or a Lambda `Invoke` (`POST /2015-03-31/functions/NAME/invocations`,
/// NAME possibly with a `:qualifier`; the tenant of a tenant-isolated function in `X-Amz-Tenant-Id`).
async fn answer(
    setup: &LambdaSetup,
    client: &Arc<dyn lambda_durable::DurableClient>,
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<Response, std::convert::Infallible> {
    use http_body_util::BodyExt;
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    if method == hyper::Method::GET && path.starts_with("/health") {
        return json_response(200, false, &serde_json::json!({}));
    }
    if !(method == hyper::Method::POST && path.ends_with("/invocations")) {
        return json_response(404, false, &serde_json::json!({ "message": format!("no route {method} {path}") }));
    }
    let function = path.rsplit('/').nth(1).unwrap_or_default();
    let function = function.split(['%', ':']).next().unwrap_or_default().to_owned();
    let tenant = request.headers().get("x-amz-tenant-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = match request.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return json_response(
                400,
                false,
                &serde_json::json!({ "message": format!("cannot read the request: {e}") }),
            );
        }
    };
    let outcome = async {
        let workflow =
            setup.workflow(&function).ok_or_else(|| format!("no definition is served for function '{function}'"))?;
        let event = serde_json::from_slice::<Value>(&body).map_err(|e| format!("the event is not JSON: {e}"))?;
        // Map Run children chain to the function this route serves, unless named.
        let chained = setup.chained.for_function(&function);
        lambda_durable::invoke_interpreted(
            workflow,
            &setup.handler,
            &event,
            Arc::clone(client),
            &chained,
            tenant.as_deref(),
        )
        .await
        .map_err(|e| e.to_string())
    };
    match outcome.await {
        Ok(output) => json_response(200, false, &output),
        Err(e) => {
            json_response(200, true, &serde_json::json!({ "errorType": "Wfc.InvocationError", "errorMessage": e }))
        }
    }
}
