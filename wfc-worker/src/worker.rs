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

use wfc_journal::{Journal, TransitionGuard};
use wfc_runtime::durable::registry::{Definition, Registry, WorkflowVersion};
use wfc_runtime::durable::{self, Claim, ClaimFilter, Store, StoreError};
use wfc_runtime::handlers::DynHandler;
use wfc_runtime::{ExecutionResult, RunOptions};

type RunFn = dyn Fn(Value, RunOptions) -> BoxFuture<'static, ExecutionResult> + Send + Sync;

/// Loads a stored workflow version into the IR (parse, validate, lower, optimize with the
/// version's recorded passes): the runtime has no front end, so the caller (`wfc worker`)
/// provides it.
pub type Loader = dyn Fn(&WorkflowVersion) -> Result<wfc_ir::Workflow, String> + Send + Sync;

/// How a service names the executions it runs ([`Workflows::identity`]).
pub type IdentityFn = dyn Fn(&durable::ExecutionRecord) -> Option<wfc_runtime::Identity> + Send + Sync;

/// One registered workflow: its IR, how to run it, and its version when registered with its
/// source.
#[derive(Clone)]
struct Registered {
    workflow: Arc<wfc_ir::Workflow>,
    /// The IR hash ([`durable::definition_hash`]): matches executions started before versions.
    hash: String,
    /// The version, when registered with its source (stored in the registry at start).
    definition: Option<Definition>,
    version_id: Option<String>,
    run: Arc<RunFn>,
}

/// The workflows a worker can run: the versions it was deployed with and, for workflows run on
/// the interpreter, every stored version of them when a [`Workflows::loader`] is set.
#[derive(Clone, Default)]
pub struct Workflows {
    registered: Vec<Registered>,
    /// The interpreter's task handler of each interpreted workflow, for its stored versions.
    interpreters: HashMap<String, Arc<dyn DynHandler>>,
    /// The interpreter's task handler of every other workflow ([`Workflows::interpret_stored`]):
    /// a server whose workflows are created at run time (`wfc serve`'s state machines).
    any_interpreter: Option<Arc<dyn DynHandler>>,
    loader: Option<Arc<Loader>>,
    identity: Option<Arc<IdentityFn>>,
    transition_guard: Option<Arc<TransitionGuard>>,
    on_finished: Option<Arc<FinishedFn>>,
}

/// What runs after an execution this worker ran ended (see [`Workflows::on_finished`]).
type FinishedFn = dyn Fn(&durable::ExecutionRecord, &ExecutionResult) -> BoxFuture<'static, ()> + Send + Sync;

impl fmt::Debug for Workflows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflows").field("names", &self.names()).field("versions", &self.versions()).finish()
    }
}

impl Workflows {
    /// No workflows.
    pub fn new() -> Workflows {
        Workflows::default()
    }

    fn add(mut self, workflow: Arc<wfc_ir::Workflow>, definition: Option<Definition>, run: Arc<RunFn>) -> Workflows {
        let hash = durable::definition_hash(&workflow);
        let version_id = definition.as_ref().map(Definition::version_id);
        // One registration per version (or per IR, without a source): the last one wins.
        self.registered.retain(|r| {
            if version_id.is_some() { r.version_id != version_id } else { r.hash != hash || r.version_id.is_some() }
        });
        self.registered.push(Registered { workflow, hash, definition, version_id, run });
        self
    }

    fn interpreter_run(workflow: Arc<wfc_ir::Workflow>, handler: Arc<dyn DynHandler>) -> Arc<RunFn> {
        Arc::new(move |input: Value, options: RunOptions| -> BoxFuture<'static, ExecutionResult> {
            let (workflow, handler) = (Arc::clone(&workflow), Arc::clone(&handler));
            Box::pin(async move { wfc_interp::run(&workflow, handler.as_ref(), input, options).await })
        })
    }

    /// Registers a workflow run by the interpreter with `handler`, without its source: its
    /// executions are not pinned to a version, only matched by IR hash. Prefer
    /// [`Workflows::interpreted_version`].
    pub fn interpreted(mut self, workflow: Arc<wfc_ir::Workflow>, handler: Arc<dyn DynHandler>) -> Workflows {
        self.interpreters.insert(workflow.name.clone(), Arc::clone(&handler));
        let run = Workflows::interpreter_run(Arc::clone(&workflow), handler);
        self.add(workflow, None, run)
    }

    /// Registers the version `definition` of a workflow (`workflow` is its IR), run by the
    /// interpreter with `handler`. The version is stored in the store's registry when the worker
    /// starts, and executions started on it are pinned to it. With a [`Workflows::loader`], the
    /// worker also runs this workflow's other stored versions on the interpreter, with `handler`.
    pub fn interpreted_version(
        mut self,
        definition: Definition,
        workflow: Arc<wfc_ir::Workflow>,
        handler: Arc<dyn DynHandler>,
    ) -> Workflows {
        self.interpreters.insert(workflow.name.clone(), Arc::clone(&handler));
        let run = Workflows::interpreter_run(Arc::clone(&workflow), handler);
        self.add(workflow, Some(definition), run)
    }

    fn compiled_run<F, Fut>(run: F) -> Arc<RunFn>
    where
        F: Fn(Value, RunOptions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ExecutionResult> + Send + 'static,
    {
        Arc::new(move |input: Value, options: RunOptions| -> BoxFuture<'static, ExecutionResult> {
            Box::pin(run(input, options))
        })
    }

    /// Registers a compiled workflow without its source: `workflow` is its module's `ir()`, and
    /// `run` calls its `run_with`, e.g. `move |input, options| { let h = Arc::clone(&shop); async move { order::run_with(&*h, input, options).await } }`.
    /// Prefer [`Workflows::compiled_version`].
    pub fn compiled<F, Fut>(self, workflow: &wfc_ir::Workflow, run: F) -> Workflows
    where
        F: Fn(Value, RunOptions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ExecutionResult> + Send + 'static,
    {
        self.add(Arc::new(workflow.clone()), None, Workflows::compiled_run(run))
    }

    /// Registers the version `definition` of a compiled workflow (`workflow` is its module's
    /// `ir()`, `run` calls its `run_with`). Compiled code runs only its own version: executions
    /// pinned to another version are left for a process that runs theirs (see docs/durable.md).
    pub fn compiled_version<F, Fut>(self, definition: Definition, workflow: &wfc_ir::Workflow, run: F) -> Workflows
    where
        F: Fn(Value, RunOptions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ExecutionResult> + Send + 'static,
    {
        self.add(Arc::new(workflow.clone()), Some(definition), Workflows::compiled_run(run))
    }

    /// Lets the worker run any stored version of its interpreted workflows: `loader` turns a
    /// stored version's source into the IR.
    pub fn loader(
        mut self,
        loader: impl Fn(&WorkflowVersion) -> Result<wfc_ir::Workflow, String> + Send + Sync + 'static,
    ) -> Workflows {
        self.loader = Some(Arc::new(loader));
        self
    }

    /// Lets the worker run every stored version of **every** workflow in the store on the
    /// interpreter with `handler` (with a [`Workflows::loader`]), including workflows registered
    /// after it started: for a server whose workflows are created at run time (`wfc serve`).
    /// Such a worker claims any runnable execution.
    pub fn interpret_stored(mut self, handler: Arc<dyn DynHandler>) -> Workflows {
        self.any_interpreter = Some(handler);
        self
    }

    /// Gives each execution the identity `identity` returns for it (`wfc serve`: the Step
    /// Functions name and ARNs in `$$` and the history, instead of the store name and local
    /// ARNs). Called for every run, after its version is loaded.
    pub fn identity(
        mut self,
        identity: impl Fn(&durable::ExecutionRecord) -> Option<wfc_runtime::Identity> + Send + Sync + 'static,
    ) -> Workflows {
        self.identity = Some(Arc::new(identity));
        self
    }

    /// Asks `guard` before each transition of every execution this worker runs (see
    /// [`TransitionGuard`]): `wfc serve` ends the executions of a STANDARD state machine
    /// being deleted at their next transition, as AWS does.
    pub fn transition_guard(
        mut self,
        guard: impl Fn(&durable::ExecutionRecord) -> Option<BoxFuture<'static, bool>> + Send + Sync + 'static,
    ) -> Workflows {
        self.transition_guard = Some(Arc::new(guard));
        self
    }

    /// Runs `finished` after each execution this worker runs has ended (not when it suspends,
    /// is left or lost): `wfc serve` and `wfc worker` delete the mock invocation counters of an
    /// execution that succeeded.
    pub fn on_finished(
        mut self,
        finished: impl Fn(&durable::ExecutionRecord, &ExecutionResult) -> BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Workflows {
        self.on_finished = Some(Arc::new(finished));
        self
    }

    /// The registered workflow names.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.registered.iter().map(|r| r.workflow.name.clone()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// The registered version ids.
    pub fn versions(&self) -> Vec<String> {
        self.registered.iter().filter_map(|r| r.version_id.clone()).collect()
    }

    /// The IR hash of the (last) registered definition of a workflow.
    pub fn definition_hash(&self, name: &str) -> Option<&str> {
        self.registered.iter().rev().find(|r| r.workflow.name == name).map(|r| r.hash.as_str())
    }

    /// Which executions this worker can run.
    fn claim_filter(&self) -> ClaimFilter {
        if self.loader.is_some() && self.any_interpreter.is_some() {
            return ClaimFilter::All;
        }
        let workflows = if self.loader.is_some() {
            let mut names: Vec<String> = self.interpreters.keys().cloned().collect();
            names.sort();
            names
        } else {
            Vec::new()
        };
        ClaimFilter::Only { versions: self.versions(), workflows, unpinned: self.names() }
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
    /// Run each execution on its own [`wfc_runtime::Clock::skipping`] clock (`wfc serve
    /// --virtual-time`): its Waits and retry back-offs are skipped (never released), while its
    /// Tasks, callbacks and activities take real time.
    pub skip_waits: bool,
    /// Where the executions' DISTRIBUTED Maps read `ItemReader` objects and write
    /// `ResultWriter` files (`wfc serve --item-root/--result-root`); none by default.
    pub objects: wfc_runtime::distributed::Objects,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            owner: format!("worker-{}", std::process::id()),
            concurrency: 8,
            lease: durable::DEFAULT_LEASE,
            poll_interval: Duration::from_millis(500),
            suspend_after: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
            exit_when_idle: false,
            skip_waits: false,
            objects: wfc_runtime::distributed::Objects::default(),
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
    /// Executions left for another process: pinned to a version this worker cannot load, or
    /// started before versions existed with a journal none of its definitions replays.
    pub left: u64,
}

/// Runs executions from a store.
#[derive(Debug)]
pub struct Worker {
    store: Arc<dyn Store>,
    workflows: Workflows,
    config: WorkerConfig,
    /// Stored versions loaded for the interpreter, by version id.
    loaded: Arc<std::sync::Mutex<HashMap<String, Arc<wfc_ir::Workflow>>>>,
    /// One run of an execution at a time in this worker (see [`Worker::job`]).
    runs: Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

/// How one run ended, for the stats.
enum RunEnd {
    Finished,
    Suspended,
    Lost,
    Left,
}

/// How long an execution this worker cannot run waits before a worker looks at it again (one
/// that can run it may be deployed meanwhile; workers that cannot do not claim pinned ones).
const LEAVE_FOR: Duration = Duration::from_secs(60);

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Worker {
    /// A worker on `store` for `workflows`.
    pub fn new(store: Arc<dyn Store>, workflows: Workflows, config: WorkerConfig) -> Worker {
        Worker { store, workflows, config, loaded: Arc::default(), runs: Arc::default() }
    }

    /// Runs until `shutdown` completes (or, with `exit_when_idle`, until there is no work).
    /// Store errors while claiming are retried at the next poll; they end the worker only if
    /// they persist for ten polls in a row.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<WorkerStats, StoreError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut stats = WorkerStats::default();
        // The versions this worker runs are stored first, so every execution it starts or adopts
        // is pinned to a version the store can give back to any later process.
        let registry = Registry::new(Arc::clone(&self.store));
        for r in &self.workflows.registered {
            if let Some(definition) = &r.definition {
                registry.register(definition.clone(), Some(r.hash.clone())).await?;
            }
        }
        let filter = self.workflows.claim_filter();
        let mut running: JoinSet<(String, i64, RunEnd)> = JoinSet::new();
        let mut in_flight: HashMap<String, i64> = HashMap::new();
        let mut claim_errors = 0;
        let concurrency = self.config.concurrency.max(1);
        loop {
            let free = concurrency.saturating_sub(running.len());
            let mut claimed_now = 0;
            if free > 0 {
                match self.store.claim_runnable(&self.config.owner, self.config.lease, free, &filter).await {
                    Ok(claims) => {
                        claim_errors = 0;
                        for claim in claims {
                            claimed_now += 1;
                            stats.claimed += 1;
                            match claim {
                                Ok(claim) => {
                                    tracing::info!(execution = %claim.record.name, owner = %self.config.owner, "claimed");
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
                    // Every run that has ended by now, not only the first: the next claim then
                    // fills all their places in one write. (Taking one a loop claimed one
                    // execution per commit, which bounded the executions running at once at
                    // claims per second times an execution's duration, far below `concurrency`.)
                    let mut done = Some(done);
                    while let Some(one) = done.take().or_else(|| running.try_join_next()) {
                        if let Ok((name, epoch, end)) = one {
                            forget_run(&mut in_flight, &name, epoch);
                            count(&mut stats, end);
                        }
                    }
                }
                () = self.store.wait_for_work(self.config.poll_interval) => {}
            }
        }
        // Graceful shutdown: no new claims; in-flight executions may finish within the grace.
        let deadline = tokio::time::Instant::now() + self.config.shutdown_grace;
        while !running.is_empty() {
            match tokio::time::timeout_at(deadline, running.join_next()).await {
                Ok(Some(Ok((name, epoch, end)))) => {
                    forget_run(&mut in_flight, &name, epoch);
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

    /// The run of `claim`. A claim may take over an execution this worker still runs: its lease
    /// ran out while the process was too busy to renew it (a short `lease` on a loaded
    /// machine). The new run then waits for the old one to end (its next write is refused as
    /// stale, so it stops at its next step) and replays what it committed; running both at once
    /// would run the old run's later steps a second time.
    fn job(&self, claim: Claim) -> impl Future<Output = (String, i64, RunEnd)> + Send + 'static {
        let runs = Arc::clone(&self.runs);
        let one_at_a_time = {
            let mut runs = runs.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(runs.entry(claim.record.name.clone()).or_default())
        };
        let shared = Shared {
            store: Arc::clone(&self.store),
            workflows: self.workflows.clone(),
            config: self.config.clone(),
            loaded: Arc::clone(&self.loaded),
        };
        async move {
            let name = claim.record.name.clone();
            let epoch = claim.token.epoch;
            let end = {
                let _running = one_at_a_time.lock().await;
                run_claimed(&shared, claim).await
            };
            let mut runs = runs.lock().unwrap_or_else(|p| p.into_inner());
            // The map's and this run's references only: no later claim waits on it.
            if Arc::strong_count(&one_at_a_time) == 2 {
                runs.remove(&name);
            }
            (name, epoch, end)
        }
    }
}

/// What a job needs from its worker.
struct Shared {
    store: Arc<dyn Store>,
    workflows: Workflows,
    config: WorkerConfig,
    loaded: Arc<std::sync::Mutex<HashMap<String, Arc<wfc_ir::Workflow>>>>,
}

/// Forgets the ended run of `name` with `epoch`, unless a later claim of it runs now.
fn forget_run(in_flight: &mut HashMap<String, i64>, name: &str, epoch: i64) {
    if in_flight.get(name) == Some(&epoch) {
        in_flight.remove(name);
    }
}

fn count(stats: &mut WorkerStats, end: RunEnd) {
    match end {
        RunEnd::Finished => stats.finished += 1,
        RunEnd::Suspended => stats.suspended += 1,
        RunEnd::Lost => stats.lost += 1,
        RunEnd::Left => stats.left += 1,
    }
}

impl Shared {
    /// How to run an execution pinned to `version_id`: the registered version, or the stored
    /// one loaded for the interpreter. `Err`: why this worker cannot.
    async fn pinned(&self, workflow: &str, version_id: &str) -> Result<Arc<RunFn>, String> {
        if let Some(r) = self.workflows.registered.iter().find(|r| r.version_id.as_deref() == Some(version_id)) {
            return Ok(Arc::clone(&r.run));
        }
        let handler = self.workflows.interpreters.get(workflow).or(self.workflows.any_interpreter.as_ref());
        let (Some(loader), Some(handler)) = (&self.workflows.loader, handler) else {
            return Err(format!("version {version_id} is not one this worker runs, and it loads no stored versions"));
        };
        let cached = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).get(version_id).cloned();
        let ir = match cached {
            Some(ir) => ir,
            None => {
                let version = Registry::new(Arc::clone(&self.store))
                    .version(version_id)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("version {version_id} is not in the store's registry"))?;
                let ir = loader(&version).map_err(|e| format!("version {version_id} cannot be loaded: {e}"))?;
                if ir.name != workflow {
                    return Err(format!("version {version_id} is of workflow '{}', not '{workflow}'", ir.name));
                }
                let ir = Arc::new(ir);
                self.loaded.lock().unwrap_or_else(|p| p.into_inner()).insert(version_id.to_owned(), Arc::clone(&ir));
                ir
            }
        };
        tracing::info!(workflow, version = version_id, "running a stored version on the interpreter");
        Ok(Workflows::interpreter_run(ir, Arc::clone(handler)))
    }

    /// Which registration adopts an execution started before versions existed: the one whose
    /// IR hash it was started with, else the first whose definition replays its journal cleanly
    /// ([`crate::replay::check`]).
    async fn adopt(&self, claim: &Claim) -> Option<Registered> {
        let record = &claim.record;
        let mut candidates: Vec<&Registered> =
            self.workflows.registered.iter().filter(|r| r.workflow.name == record.workflow).collect();
        // Versioned registrations first: adopting one pins the execution.
        candidates.sort_by_key(|r| r.version_id.is_none());
        if let Some(r) = candidates.iter().find(|r| record.definition_hash.as_deref().is_none_or(|h| h == r.hash)) {
            return Some((*r).clone());
        }
        for r in candidates {
            match crate::replay::check(&r.workflow, record, &claim.operations).await {
                Ok(_) => return Some(r.clone()),
                Err(d) => {
                    tracing::info!(execution = %record.name, version = ?r.version_id, divergence = %d, "not adopted")
                }
            }
        }
        None
    }
}

/// Gives the execution back for another process (see [`LEAVE_FOR`]).
async fn leave(shared: &Shared, claim: &Claim, why: &str) -> RunEnd {
    tracing::warn!(execution = %claim.record.name, reason = why, "left for a process that runs its version");
    let wake = durable::now_ms() + i64::try_from(LEAVE_FOR.as_millis()).unwrap_or(60_000);
    let _ = shared.store.release(&claim.record.name, claim.token.epoch, Some(wake), claim.record.signals).await;
    RunEnd::Left
}

async fn run_claimed(shared: &Shared, claim: Claim) -> RunEnd {
    let store = Arc::clone(&shared.store);
    let config = &shared.config;
    let record = claim.record.clone();
    let run = match &record.version_id {
        Some(version_id) => match shared.pinned(&record.workflow, version_id).await {
            Ok(run) => run,
            Err(why) => return leave(shared, &claim, &why).await,
        },
        None => match shared.adopt(&claim).await {
            Some(r) => {
                if let Some(version_id) = &r.version_id {
                    // Pinned under this claim's epoch: a process that took it meanwhile wins.
                    let guard =
                        durable::PinGuard { from: None, held_epoch: Some(claim.token.epoch), checkpoint_seq: None };
                    if store.pin_execution(&record.name, version_id, &guard).await.is_err() {
                        return RunEnd::Lost;
                    }
                }
                r.run
            }
            None => {
                let why =
                    "it was started before versions existed, and none of this worker's definitions replays its journal";
                return leave(shared, &claim, why).await;
            }
        },
    };
    // Started: nothing recorded yet (a claim of an execution `executions start` created);
    // resumed: it has a journal to replay.
    let fresh = claim.operations.is_empty();
    let journal = Journal::from_claim(Arc::clone(&store), claim, Some(config.suspend_after));
    if let Some(guard) = &shared.workflows.transition_guard {
        journal.set_transition_guard(Arc::clone(guard));
    }
    tracing::info!(
        execution = %record.name,
        workflow = %record.workflow,
        version = record.version_id.as_deref().unwrap_or("-"),
        "{}",
        if fresh { "started" } else { "resumed" }
    );
    let mut options = RunOptions::real().with_journal(journal.clone());
    if config.skip_waits {
        options.clock = wfc_runtime::Clock::skipping();
    }
    options.objects = config.objects.clone();
    if let Some(identity) = shared.workflows.identity.as_ref().and_then(|f| f(&record)) {
        options = options.with_identity(identity);
    }
    let run = run(record.input.clone(), options);
    let result = tokio::select! {
        result = run => result,
        e = journal.hold_lease(&config.owner, config.lease) => {
            tracing::warn!(execution = %record.name, error = %e, "lease lost; abandoning the run");
            return RunEnd::Lost;
        }
    };
    if let Some(due) = journal.suspended() {
        return match store.release(&record.name, journal.epoch(), due, record.signals).await {
            Ok(()) => {
                let until = due.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
                tracing::info!(
                    execution = %record.name,
                    until = %until.map(|t| t.to_string()).unwrap_or_else(|| "an answer".into()),
                    "suspended (released until it is due)"
                );
                RunEnd::Suspended
            }
            Err(e) => {
                // Never silent: a release that keeps failing leaves every suspended execution
                // leased until its lease runs out (see the PostgreSQL fixture of 35a205a).
                tracing::warn!(execution = %record.name, error = %e, "could not release a suspended execution; it waits for its lease to expire");
                RunEnd::Lost
            }
        };
    }
    let error = result.error.as_ref().map(|e| e.error.as_str());
    tracing::info!(execution = %record.name, status = ?result.status, error, "finished");
    if let Some(finished) = &shared.workflows.on_finished {
        finished(&record, &result).await;
    }
    RunEnd::Finished
}
