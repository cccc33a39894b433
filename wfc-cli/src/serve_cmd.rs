//! `wfc serve`: the AWS Step Functions API on a local port (docs/serve.md), over a durable store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wfc_interp::DynHandler;

use crate::handlers::CommandHandlers;
use crate::{Exit, fatal};

/// `wfc serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (loopback unless --allow-remote).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8083")]
    listen: SocketAddr,
    /// Allow a --listen address that is not loopback (requires --credentials).
    #[arg(long)]
    allow_remote: bool,
    /// Require every request to be SigV4-signed (or presigned) with one of these credentials: a
    /// file of `ACCESS_KEY_ID:SECRET_ACCESS_KEY` lines, temporary ones followed by
    /// ` token=SESSION_TOKEN [expires=RFC3339]` (else the environment variable
    /// WFC_SERVE_CREDENTIALS, same format, may hold them).
    #[arg(long, value_name = "FILE")]
    credentials: Option<PathBuf>,
    /// The store of state machines and executions: `sqlite:PATH` or `postgres://...`.
    #[arg(long, value_name = "URL", default_value = "sqlite:wfc-serve.db")]
    store: String,
    /// Task handlers: `{"<resource>": {"command": [PROGRAM, ARGS...]}}` (see docs/cli.md).
    #[arg(long, value_name = "FILE")]
    handlers: Option<PathBuf>,
    /// Invoke Lambda Task resources (`arn:aws:lambda:...:function:...`, `lambda:invoke`)
    /// through the Lambda Invoke API at this URL (LocalStack, `sam local start-lambda`, AWS),
    /// as Step Functions Local's LAMBDA_ENDPOINT; credentials and region from the AWS chain.
    #[arg(long, value_name = "URL")]
    lambda_endpoint: Option<String>,
    /// A Step Functions Local MockConfigFile: `StartExecution` on `<state machine ARN>#<TestCase>`
    /// runs with that test case's mocked Task answers (docs/serve.md).
    #[arg(long, value_name = "FILE")]
    mock_config: Option<PathBuf>,
    /// Run each execution on its own virtual clock that skips its waits (Wait states, retry
    /// back-off), while Tasks, callbacks and activities take real time (docs/serve.md).
    #[arg(long)]
    virtual_time: bool,
    /// Directory a DISTRIBUTED Map's ItemReader reads from: `Bucket` and `Key` name the file
    /// `DIR/<Bucket>/<Key>` (never outside DIR), as `wfc run --item-root`.
    #[arg(long, value_name = "DIR")]
    item_root: Option<PathBuf>,
    /// Directory a DISTRIBUTED Map's ResultWriter writes to: `DIR/<Bucket>/<Prefix>/<run id>/`.
    #[arg(long, value_name = "DIR")]
    result_root: Option<PathBuf>,
    /// The region in ARNs.
    #[arg(long, value_name = "REGION", default_value = "us-east-1")]
    region: String,
    /// The account id in ARNs.
    #[arg(long, value_name = "ID", default_value = "123456789012")]
    account: String,
    /// How long GetActivityTask waits for a task, in seconds (AWS: 60).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    activity_poll_seconds: u64,
}

/// The credentials requests must be signed with: `--credentials FILE`, else
/// `WFC_SERVE_CREDENTIALS`, else none (requests are not authenticated).
fn credentials(args: &ServeArgs) -> Result<Option<wfc_serve::sigv4::Credentials>, String> {
    if let Some(path) = &args.credentials {
        return wfc_serve::sigv4::Credentials::load(path).map(Some);
    }
    match std::env::var("WFC_SERVE_CREDENTIALS") {
        Ok(text) => wfc_serve::sigv4::Credentials::parse(&text, "WFC_SERVE_CREDENTIALS").map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err("WFC_SERVE_CREDENTIALS is not UTF-8".into()),
    }
}

/// Runs the server until SIGTERM or SIGINT. Prints `{"listening": ADDR, "store": URL, "ui": ...}` once it
/// accepts connections (with `--listen 127.0.0.1:0`, ADDR has the port chosen).
pub(crate) fn run(args: &ServeArgs) -> Exit {
    let mock_config = match &args.mock_config {
        None => None,
        Some(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => return fatal(format!("cannot read the mock config {}: {e}", path.display())),
            };
            match wfc_serve::mock_config::MockConfig::parse(&text) {
                Ok(c) => Some(Arc::new(c)),
                Err(e) => return fatal(format!("{}: {e}", path.display())),
            }
        }
    };
    let credentials = match credentials(args) {
        Ok(c) => c,
        Err(e) => return fatal(e),
    };
    if let Err(e) = wfc_serve::check_listen(&args.listen, args.allow_remote, credentials.is_some()) {
        return fatal(e);
    }
    let commands = match &args.handlers {
        Some(path) => match crate::handlers::load(path) {
            Ok(c) => c,
            Err(e) => return fatal(e),
        },
        None => Default::default(),
    };
    // Commands first, then Lambda resources at --lambda-endpoint, then NoHandler's error.
    let handler: Arc<dyn DynHandler> = match &args.lambda_endpoint {
        Some(endpoint) => {
            match crate::lambda_tasks::LambdaTasks::new(endpoint, wfc_serve::NoHandler, args.virtual_time) {
                Ok(lambda) => Arc::new(CommandHandlers::new(commands, lambda)),
                Err(e) => return fatal(e),
            }
        }
        None => Arc::new(CommandHandlers::new(commands, wfc_serve::NoHandler)),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    let result = rt.block_on(async {
        let shutdown = crate::durable::shutdown_signal()?;
        let store = wfc_stores::connect(&args.store).await.map_err(|e| e.to_string())?;
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let mut config = wfc_serve::Config::new(store, handler);
        config.arns = wfc_serve::Arns { region: args.region.clone(), account: args.account.clone() };
        config.activity_poll = Duration::from_secs(args.activity_poll_seconds);
        config.auth = credentials.map(|c| Arc::new(wfc_serve::sigv4::Verifier::new(c, args.region.clone())));
        let signed = config.auth.is_some();
        config.mock_config = mock_config;
        // Other servers on the same SQLite file wake this one through the file's changes.
        config.store_changes = wfc_serve::sqlite_wake::StoreChanges::watch(&args.store).map(Arc::new);
        config.virtual_time = args.virtual_time;
        config.worker.skip_waits = args.virtual_time;
        config.worker.objects.item_root = args.item_root.clone();
        config.worker.objects.result_root = args.result_root.clone();
        // With SigV4 required, the UI needs its own credential: a token printed here only.
        let ui = if signed {
            let token = wfc_serve::ui::new_token();
            config.ui_token = Some(token.clone());
            format!("http://{local}/ui?token={token}")
        } else {
            format!("http://{local}/ui")
        };
        println!(
            "{}",
            serde_json::json!({ "listening": local.to_string(), "store": args.store, "sigv4": signed, "virtual_time": args.virtual_time, "ui": ui })
        );
        wfc_serve::serve(listener, config, shutdown).await
    });
    match result {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}
