//! `wfc serve`: the AWS Step Functions API (the AWS JSON 1.0 protocol) on a local port, so the
//! AWS CLI, boto3 and the AWS SDKs drive wfc unchanged (docs/serve.md).
//!
//! - [`http`]: the protocol (`POST /`, `X-Amz-Target`, AWS error bodies, body limit);
//! - [`api`]: the operations;
//! - [`machines`]: state machines in the store's workflow registry (they survive restarts;
//!   executions stay pinned to the definition they started with);
//! - [`tasks`]: activities (answered by `GetActivityTask` workers) and the Task handler;
//! - [`history`]: wfc's history in AWS's `HistoryEvent` shape;
//! - [`arn`]: the ARNs of state machines, executions and activities;
//! - [`sigv4`]: SigV4 verification of requests (required with `--credentials`);
//! - [`identity`]: the executions' Step Functions name and ARNs in `$$`.
//! - [`test_state`]: `TestState`, one state run on the interpreter;
//! - [`tags`]: tags of state machines and activities, in the store;
//! - [`mock_config`]: `--mock-config`, Step Functions Local's mocked test cases;
//! - [`versions`]: state machine versions;
//! - [`aliases`]: state machine aliases, and what an execution was started by;
//! - [`redrive`]: RedriveExecution (its client tokens: `redrive_tokens`, in the store);
//! - [`ui`]: the execution viewer on `GET /ui` (issue 23).
//!
//! Executions are durable: `StartExecution` creates them in the store, and the runtime's
//! durable [`Worker`] running inside the server claims and runs them, resuming any that were
//! running when the server (or another process on the same store) stopped.

pub mod aliases;
pub mod api;
pub mod arn;
mod deleting;
pub mod error;
pub mod history;
pub mod http;
pub mod identity;
pub mod machines;
pub mod map_runs;
pub mod mock_config;
pub mod redrive;
mod redrive_tokens;
mod registry_doc;
pub mod sigv4;
pub mod sqlite_wake;
pub mod tags;
pub mod tasks;
pub mod test_state;
pub mod ui;
pub mod versions;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use wfc_interp::DynHandler;
use wfc_runtime::durable::Store;
use wfc_worker::{Worker, WorkerConfig, Workflows};

pub use api::{OPERATIONS, Service};

/// The operations implemented beyond the core [`OPERATIONS`] (tested by their own suite,
/// wfc-cli/tests/serve_more.rs).
pub const MORE_OPERATIONS: &[&str] = &[
    "TestState",
    "TagResource",
    "UntagResource",
    "ListTagsForResource",
    "PublishStateMachineVersion",
    "ListStateMachineVersions",
    "DeleteStateMachineVersion",
    "CreateStateMachineAlias",
    "DescribeStateMachineAlias",
    "UpdateStateMachineAlias",
    "DeleteStateMachineAlias",
    "ListStateMachineAliases",
    "RedriveExecution",
    "DescribeMapRun",
    "ListMapRuns",
    "UpdateMapRun",
];
pub use arn::Arns;
pub use error::ApiError;
pub use tasks::NoHandler;

/// How a server runs.
pub struct Config {
    /// The region and account of its ARNs.
    pub arns: Arns,
    /// The store of its state machines and executions.
    pub store: Arc<dyn Store>,
    /// Task resources that are not activities (`--handlers`; [`NoHandler`] fails them).
    pub handler: Arc<dyn DynHandler>,
    /// The largest request body accepted (default 1 MiB; execution input is limited to
    /// 256 KiB separately, as on AWS).
    pub max_body: usize,
    /// How long `GetActivityTask` waits for a task (AWS: 60 s).
    pub activity_poll: Duration,
    /// The in-server worker (its owner name, concurrency, poll interval, ...).
    pub worker: WorkerConfig,
    /// When set, every request must carry a valid SigV4 signature for one of its credentials
    /// (default: none, which [`check_listen`] allows on loopback only).
    pub auth: Option<Arc<sigv4::Verifier>>,
    /// `--mock-config`: Step Functions Local's mocked test cases (`#TestCase` ARNs).
    pub mock_config: Option<Arc<mock_config::MockConfig>>,
    /// `--virtual-time`: every execution runs on its own clock that skips its waits
    /// ([`wfc_runtime::Clock::skipping`]); set `worker.skip_waits` with it for durable ones.
    pub virtual_time: bool,
    /// The UI's token (`/ui?token=...`): required when set. Without it the UI is open on a
    /// server without `auth`, and closed on one with it.
    pub ui_token: Option<String>,
    /// On a SQLite store, the watch of its file ([`sqlite_wake::StoreChanges::watch`]), so that
    /// another server's commits wake this one's long polls and waiting Tasks.
    pub store_changes: Option<Arc<sqlite_wake::StoreChanges>>,
}

impl Config {
    /// Defaults for `store` and `handler`: us-east-1 / 123456789012, 1 MiB bodies, 60 s
    /// activity polls, a worker of 64 executions at once polling every 100 ms.
    pub fn new(store: Arc<dyn Store>, handler: Arc<dyn DynHandler>) -> Config {
        let worker = WorkerConfig {
            owner: format!("serve-{}", std::process::id()),
            concurrency: 64,
            poll_interval: Duration::from_millis(100),
            // Activity and callback waits would otherwise hold a stopping server for the default
            // 10 s; what is released runs again elsewhere (at least once, as after a crash).
            shutdown_grace: Duration::from_secs(2),
            ..WorkerConfig::default()
        };
        Config {
            arns: Arns::default(),
            store,
            handler,
            max_body: 1024 * 1024,
            activity_poll: Duration::from_secs(60),
            worker,
            auth: None,
            mock_config: None,
            virtual_time: false,
            ui_token: None,
            store_changes: None,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("arns", &self.arns)
            .field("max_body", &self.max_body)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// Whether a server may listen on `addr`: on loopback always; elsewhere only when asked
/// explicitly (`allow_remote`, `wfc serve --allow-remote`) and with signatures verified
/// (`signed`), since `StartExecution` can run `--handlers` commands.
pub fn check_listen(addr: &SocketAddr, allow_remote: bool, signed: bool) -> Result<(), String> {
    if addr.ip().is_loopback() {
        Ok(())
    } else if !allow_remote {
        Err(format!(
            "wfc serve listens on loopback unless told otherwise ({addr} is not loopback): pass --allow-remote, with --credentials so that every request must be SigV4-signed (StartExecution can run --handlers commands)"
        ))
    } else if !signed {
        Err(format!(
            "--allow-remote needs --credentials (or WFC_SERVE_CREDENTIALS): beyond loopback ({addr}) every request must carry a valid SigV4 signature"
        ))
    } else {
        Ok(())
    }
}

/// How often a running server deletes the mock invocation counters no redrive needs any more.
const COUNTER_SWEEP: Duration = Duration::from_secs(3600);

/// Deletes the mock invocation counters no redrive can need (see
/// [`wfc_runtime::mock_config::InvocationCounter::forget_ended`]); a failure is logged.
async fn sweep_counters(counters: &wfc_runtime::mock_config::InvocationCounter) {
    match counters.forget_ended(api::now_ms()).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(rows = n, "deleted the mock invocation counters no redrive needs"),
        Err(e) => tracing::warn!(error = %e, "cannot sweep the mock invocation counters"),
    }
}

/// Serves the API on `listener` until `shutdown` completes, with the durable worker running
/// the store's executions. On shutdown the worker releases what it holds (another server or
/// `wfc worker` on the same store resumes it).
pub async fn serve(listener: TcpListener, config: Config, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let activities =
        Arc::new(tasks::Activities::new(Arc::clone(&config.store)).with_store_changes(config.store_changes.clone()));
    let answers = tokio::spawn(Arc::clone(&activities).deliver_remote_answers());
    // Tasks of executions stopped or ended while no server ran them.
    match activities.forget_ended().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(tasks = n, "deleted the activity tasks of executions no longer running"),
        Err(e) => tracing::warn!(error = %e, "cannot sweep the activity tasks of ended executions"),
    }
    // Mock invocation counters no redrive can need (their execution succeeded, is gone, or
    // ended longer ago than the redrivable period): ended while no server ran it, or before;
    // then every hour, for those whose redrivable period ends while the server runs.
    let counters = Arc::new(wfc_runtime::mock_config::InvocationCounter::new(Arc::clone(&config.store)));
    sweep_counters(&counters).await;
    let counter_sweeps = tokio::spawn({
        let counters = Arc::clone(&counters);
        async move {
            let mut hourly = tokio::time::interval_at(tokio::time::Instant::now() + COUNTER_SWEEP, COUNTER_SWEEP);
            loop {
                hourly.tick().await;
                sweep_counters(&counters).await;
            }
        }
    });
    let mut handler: Arc<dyn DynHandler> =
        Arc::new(tasks::ServeHandler::new(config.arns.clone(), Arc::clone(&activities), Arc::clone(&config.handler)));
    if let Some(mocks) = &config.mock_config {
        handler = Arc::new(mock_config::MockHandler::new(Arc::clone(mocks), Arc::clone(&config.store), handler));
    }
    let service = Arc::new(Service {
        arns: config.arns.clone(),
        store: Arc::clone(&config.store),
        machines: machines::Machines::new(Arc::clone(&config.store)),
        activities,
        handler: Arc::clone(&handler),
        activity_poll: config.activity_poll,
        mocks: config.mock_config.clone(),
        virtual_time: config.virtual_time,
        redrives: redrive_tokens::Tokens::new(Arc::clone(&config.store)),
        map_runs: Default::default(),
        objects: config.worker.objects.clone(),
        deleting_machines: Default::default(),
    });
    let deleting_watch = tokio::spawn(Arc::clone(&service).watch_deleting_machines());
    let identities = identity::Identities::new(config.arns.clone());
    let mut workflows = Workflows::new()
        .loader(identities.loader())
        .interpret_stored(handler)
        .identity({
            let identities = Arc::clone(&identities);
            move |record| identities.of(record)
        })
        .transition_guard({
            let service = Arc::clone(&service);
            move |record| service.deletion_guard(record)
        });
    if config.mock_config.is_some() {
        // A succeeded execution is never redriven: its counters go with its end.
        workflows = workflows.on_finished(move |record, result| {
            let (counters, execution) = (Arc::clone(&counters), record.name.clone());
            let succeeded = result.status == wfc_runtime::Status::Succeeded;
            Box::pin(async move {
                if succeeded && let Err(e) = counters.forget(&execution).await {
                    tracing::warn!(execution, error = %e, "cannot delete the mock invocation counters");
                }
            })
        });
    }
    let worker = Worker::new(Arc::clone(&config.store), workflows, config.worker.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let worker_task = tokio::spawn(async move {
        let mut rx = stop_rx;
        worker.run(async move { while rx.changed().await.is_ok() && !*rx.borrow() {} }).await
    });
    let mut shutdown = std::pin::pin!(shutdown);
    let max_body = config.max_body;
    let auth = config.auth.clone();
    let ui = Arc::new(match (&config.ui_token, &auth) {
        (Some(token), _) => ui::Access::Token(token.clone()),
        (None, None) => ui::Access::Open,
        (None, Some(_)) => ui::Access::Closed,
    });
    let mut connections = tokio::task::JoinSet::new();
    let result = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(()),
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait and go on.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let service = Arc::clone(&service);
                let auth = auth.clone();
                let ui = Arc::clone(&ui);
                connections.spawn(async move {
                    let svc = service_fn(move |req| {
                        http::handle(Arc::clone(&service), max_body, auth.clone(), Arc::clone(&ui), req)
                    });
                    if let Err(e) = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    };
    connections.abort_all();
    // The Tasks the worker drops now keep their activity tasks for the next server.
    service.activities.stop();
    answers.abort();
    deleting_watch.abort();
    counter_sweeps.abort();
    let _ = stop_tx.send(true);
    match worker_task.await {
        Ok(Ok(_stats)) => result,
        Ok(Err(e)) => Err(format!("the worker stopped: {e}")),
        Err(e) => Err(format!("the worker failed: {e}")),
    }
}
