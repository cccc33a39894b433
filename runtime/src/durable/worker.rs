//! [`Worker`]: runs executions from a shared [`Store`] with bounded concurrency.
//!
//! A worker claims runnable executions (new ones, ones whose timer is due, ones whose callback
//! was answered, ones whose holder's lease expired after a crash), runs each on its registered
//! workflow with a [`Journal`] (so completed work replays), keeps its lease while it runs, and
//! releases an execution that waits for a long timer or a callback until it is due. Shutdown
//! (a future, e.g. SIGTERM) stops new claims; in-flight executions get `shutdown_grace` to
//! finish, and are then released (their in-flight step runs again on the next worker).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::task::JoinSet;

use super::{Claim, Journal, Store, StoreError};
use crate::interp::DynHandler;
use crate::{ExecutionResult, RunOptions};

type RunFn = dyn Fn(Value, RunOptions) -> BoxFuture<'static, ExecutionResult> + Send + Sync;

/// One registered workflow: how to run it, and the hash of its definition.
#[derive(Clone)]
struct Registered {
    hash: String,
    run: Arc<RunFn>,
}

/// The workflows a worker can run, by workflow name.
#[derive(Clone, Default)]
pub struct Workflows {
    by_name: HashMap<String, Registered>,
}

impl fmt::Debug for Workflows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.by_name.keys().collect();
        names.sort();
        f.debug_struct("Workflows").field("names", &names).finish()
    }
}

impl Workflows {
    /// No workflows.
    pub fn new() -> Workflows {
        Workflows::default()
    }

    /// Registers a workflow run by the interpreter with `handler`.
    pub fn interpreted(mut self, workflow: Arc<wfc_ir::Workflow>, handler: Arc<dyn DynHandler>) -> Workflows {
        let hash = super::definition_hash(&workflow);
        let name = workflow.name.clone();
        let run = move |input: Value, options: RunOptions| -> BoxFuture<'static, ExecutionResult> {
            let (workflow, handler) = (Arc::clone(&workflow), Arc::clone(&handler));
            Box::pin(async move { crate::interp::run(&workflow, handler.as_ref(), input, options).await })
        };
        self.by_name.insert(name, Registered { hash, run: Arc::new(run) });
        self
    }

    /// Registers a compiled workflow: `workflow` is its module's `ir()`, and `run` calls its
    /// `run_with`, e.g. `move |input, options| { let h = Arc::clone(&shop); async move { order::run_with(&*h, input, options).await } }`.
    pub fn compiled<F, Fut>(mut self, workflow: &wfc_ir::Workflow, run: F) -> Workflows
    where
        F: Fn(Value, RunOptions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ExecutionResult> + Send + 'static,
    {
        let hash = super::definition_hash(workflow);
        let boxed = move |input: Value, options: RunOptions| -> BoxFuture<'static, ExecutionResult> {
            Box::pin(run(input, options))
        };
        self.by_name.insert(workflow.name.clone(), Registered { hash, run: Arc::new(boxed) });
        self
    }

    /// The registered workflow names.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.by_name.keys().cloned().collect();
        names.sort();
        names
    }

    /// The definition hash of a registered workflow.
    pub fn definition_hash(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(|r| r.hash.as_str())
    }
}

/// How a worker behaves.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker's name in the store's `owner` column (default: `worker-<pid>`).
    pub owner: String,
    /// How many executions run at once.
    pub concurrency: usize,
    /// The lease of a claimed execution; renewed every third of it while it runs.
    pub lease: Duration,
    /// How often to look for work when nothing wakes the worker.
    pub poll_interval: Duration,
    /// A timer or callback wait longer than this releases the execution until it is due.
    pub suspend_after: Duration,
    /// After shutdown is requested, how long in-flight executions may run before they are
    /// released.
    pub shutdown_grace: Duration,
    /// Stop when no execution is runnable or running, instead of waiting for more (for batch
    /// runs and tests); timers further away than `poll_interval` do not keep it alive.
    pub exit_when_idle: bool,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            owner: format!("worker-{}", std::process::id()),
            concurrency: 8,
            lease: super::DEFAULT_LEASE,
            poll_interval: Duration::from_millis(500),
            suspend_after: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
            exit_when_idle: false,
        }
    }
}

/// What a worker did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Executions claimed.
    pub claimed: u64,
    /// Executions that ended (any status) under this worker.
    pub finished: u64,
    /// Executions released because they wait for a timer or callback.
    pub suspended: u64,
    /// Executions whose lease was lost (stopped, or taken over by another process).
    pub lost: u64,
    /// Executions failed because their stored state or definition was unusable.
    pub rejected: u64,
    /// Executions released at shutdown before they finished.
    pub released_at_shutdown: u64,
}

/// Runs executions from a store.
#[derive(Debug)]
pub struct Worker {
    store: Arc<dyn Store>,
    workflows: Workflows,
    config: WorkerConfig,
}

/// How one run ended, for the stats.
enum RunEnd {
    Finished,
    Suspended,
    Lost,
    Rejected,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Worker {
    /// A worker on `store` for `workflows`.
    pub fn new(store: Arc<dyn Store>, workflows: Workflows, config: WorkerConfig) -> Worker {
        Worker { store, workflows, config }
    }

    /// Runs until `shutdown` completes (or, with `exit_when_idle`, until there is no work).
    /// Store errors while claiming are retried at the next poll; they end the worker only if
    /// they persist for ten polls in a row.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<WorkerStats, StoreError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut stats = WorkerStats::default();
        let mut running: JoinSet<(String, i64, RunEnd)> = JoinSet::new();
        let mut in_flight: HashMap<String, i64> = HashMap::new();
        let mut claim_errors = 0;
        let concurrency = self.config.concurrency.max(1);
        loop {
            let free = concurrency.saturating_sub(running.len());
            let mut claimed_now = 0;
            if free > 0 {
                match self.store.claim_runnable(&self.config.owner, self.config.lease, free).await {
                    Ok(claims) => {
                        claim_errors = 0;
                        for claim in claims {
                            claimed_now += 1;
                            stats.claimed += 1;
                            match claim {
                                Ok(claim) => {
                                    in_flight.insert(claim.record.name.clone(), claim.token.epoch);
                                    let job = self.job(claim);
                                    running.spawn(job);
                                }
                                Err((name, e)) => {
                                    stats.rejected += 1;
                                    tracing::warn!(execution = %name, error = %e, "stored state is unusable");
                                    let cause = format!("the execution's stored state cannot be loaded: {e}");
                                    self.store.fail_execution(&name, "Wfc.CorruptState", &cause).await?;
                                }
                            }
                        }
                    }
                    Err(e) => {
                        claim_errors += 1;
                        tracing::warn!(error = %e, "claiming executions failed");
                        if claim_errors >= 10 {
                            return Err(e);
                        }
                    }
                }
            }
            if self.config.exit_when_idle && running.is_empty() && claimed_now == 0 {
                return Ok(stats);
            }
            if claimed_now > 0 && running.len() < concurrency {
                continue;
            }
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                Some(done) = running.join_next(), if !running.is_empty() => {
                    if let Ok((name, _, end)) = done {
                        in_flight.remove(&name);
                        count(&mut stats, end);
                    }
                }
                () = self.store.wait_for_work(self.config.poll_interval) => {}
            }
        }
        // Graceful shutdown: no new claims; in-flight executions may finish within the grace.
        let deadline = tokio::time::Instant::now() + self.config.shutdown_grace;
        while !running.is_empty() {
            match tokio::time::timeout_at(deadline, running.join_next()).await {
                Ok(Some(Ok((name, _, end)))) => {
                    in_flight.remove(&name);
                    count(&mut stats, end);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        running.abort_all();
        while running.join_next().await.is_some() {}
        for (name, epoch) in in_flight {
            // Runnable at once by another worker; a step in flight there runs again.
            if self.store.release(&name, epoch, Some(now_ms()), i64::MIN).await.is_ok() {
                stats.released_at_shutdown += 1;
            }
        }
        Ok(stats)
    }

    fn job(&self, claim: Claim) -> impl Future<Output = (String, i64, RunEnd)> + Send + 'static {
        let store = Arc::clone(&self.store);
        let registered = self.workflows.by_name.get(&claim.record.workflow).cloned();
        let config = self.config.clone();
        async move {
            let name = claim.record.name.clone();
            let epoch = claim.token.epoch;
            let end = run_claimed(store, registered, claim, &config).await;
            (name, epoch, end)
        }
    }
}

fn count(stats: &mut WorkerStats, end: RunEnd) {
    match end {
        RunEnd::Finished => stats.finished += 1,
        RunEnd::Suspended => stats.suspended += 1,
        RunEnd::Lost => stats.lost += 1,
        RunEnd::Rejected => stats.rejected += 1,
    }
}

async fn run_claimed(
    store: Arc<dyn Store>,
    registered: Option<Registered>,
    claim: Claim,
    config: &WorkerConfig,
) -> RunEnd {
    let record = claim.record.clone();
    let Some(registered) = registered else {
        let cause = format!("no workflow named '{}' is registered with this worker", record.workflow);
        let _ = store.fail_execution(&record.name, "Wfc.UnknownWorkflow", &cause).await;
        return RunEnd::Rejected;
    };
    if let Some(stored) = &record.definition_hash
        && *stored != registered.hash
    {
        let cause = StoreError::DefinitionChanged(record.name.clone()).to_string();
        let _ = store.fail_execution(&record.name, "Wfc.DefinitionChanged", &cause).await;
        return RunEnd::Rejected;
    }
    let journal = Journal::from_claim(Arc::clone(&store), claim, Some(config.suspend_after));
    let options = RunOptions::real().with_journal(Arc::clone(&journal));
    let run = (registered.run)(record.input.clone(), options);
    let result = tokio::select! {
        result = run => result,
        e = journal.hold_lease(&config.owner, config.lease) => {
            tracing::warn!(execution = %record.name, error = %e, "lease lost; abandoning the run");
            return RunEnd::Lost;
        }
    };
    if let Some(due) = journal.suspended() {
        return match store.release(&record.name, journal.epoch(), due, record.signals).await {
            Ok(()) => RunEnd::Suspended,
            Err(e) => {
                // Never silent: a release that keeps failing leaves every suspended execution
                // leased until its lease runs out (see the PostgreSQL fixture of 35a205a).
                tracing::warn!(execution = %record.name, error = %e, "could not release a suspended execution; it waits for its lease to expire");
                RunEnd::Lost
            }
        };
    }
    let _ = result;
    RunEnd::Finished
}
