//! [`Journal`]: one execution's view of its store while it runs, and the replay rules that
//! [`wfc_runtime::exec`] applies through it (`wfc_runtime::journal::JournalHooks`, see `hooks.rs`).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use wfc_runtime::callback::{self, CallbackOutcome, Observed, Registration, WaitingTask};
use wfc_runtime::durable::{
    CheckpointToken, Claim, Completion, ExecutionRecord, NewExecution, OpStatus, OpType, Operation, OperationUpdate,
    Store, StoreError,
};
use wfc_runtime::journal::{ContextEvents, EventWait, FinishedContext};
use wfc_runtime::task::{Attempt, StepRequest};
use wfc_runtime::{Clock, ExecutionResult, Failure};

use crate::ChainedInvokes;
use crate::live_history::{LiveHistory, Pending as HistoryPending};
use crate::suspend::{Pending, SubflowRef, Suspender};

/// What [`Journal::open`] found.
#[derive(Debug)]
pub enum Opened {
    /// The execution is new or unfinished: run it with this journal attached
    /// ([`wfc_runtime::RunOptions::with_journal`]); completed operations will be replayed.
    Running(Arc<Journal>),
    /// The execution had already finished: nothing to run; this is how it ended.
    Finished(Box<ExecutionRecord>),
}

/// The journal of one running execution: the operations recorded so far (loaded when it was
/// opened) and the checkpoint token. Shared by every line of control of the execution.
pub struct Journal {
    store: Arc<dyn Store>,
    record: ExecutionRecord,
    existed: bool,
    recorded: Mutex<HashMap<String, Operation>>,
    /// The operations that had ended (failed, timed out or succeeded) when the journal was
    /// opened: on a redriven execution, the attempts whose visit ended it (see
    /// [`wfc_runtime::Execution`]'s redrive reruns).
    ended_before_run: std::collections::HashSet<String>,
    /// The CONTEXT operations that failed before a redrive and run again in this one (see
    /// [`Journal::reopen`]).
    reopened: Mutex<std::collections::HashSet<String>>,
    /// Held across a checkpoint so concurrent Parallel branches write one batch at a time, each
    /// with the token the previous one returned.
    token: tokio::sync::Mutex<CheckpointToken>,
    /// The fencing epoch of this hold (constant: only a new open or claim changes it).
    epoch: i64,
    /// Worker mode: a timer or callback wait longer than this suspends the execution (the worker
    /// releases it until it is due) instead of holding it. `None`: wait in place.
    suspend_after: Option<Duration>,
    /// Set when the run suspended: when the execution is due again (`None`: on a callback).
    suspended: Mutex<Option<Option<i64>>>,
    /// Replay-only runs (the adapters): park at unrecorded operations instead of running them.
    suspender: Option<Arc<Suspender>>,
    /// Held while a Serverless Workflow event wait picks events from the inbox and records them
    /// consumed, so two concurrent waits of one execution never take the same event.
    event_claims: tokio::sync::Mutex<()>,
    /// Updates whose commit is deferred to the next checkpoint of this execution (see
    /// [`Journal::defer`]); already mirrored in `recorded`.
    deferred: Mutex<Vec<OperationUpdate>>,
    /// Whether a flush of `deferred` is scheduled.
    flush_scheduled: std::sync::atomic::AtomicBool,
    /// Checkpoints waiting for the token, committed together (see [`Journal::checkpoint`]).
    queue: Mutex<CheckpointQueue>,
    /// Whether outcomes may be deferred ([`Journal::set_batching`]).
    batching: std::sync::atomic::AtomicBool,
    /// This journal, for the flush task.
    this: std::sync::Weak<Journal>,
    /// On a service's journal, the functions mapped subflows are invoked as (see
    /// [`Journal::set_chained_invokes`]); unset: every subflow runs in this process.
    chained: std::sync::OnceLock<ChainedInvokes>,
    /// The run's history, written to the store with the checkpoints as it grows (see
    /// [`crate::live_history`]); unset until the execution attaches it, or when not kept.
    live: std::sync::OnceLock<LiveHistory>,
    /// Whether the history is written while the run goes ([`Journal::set_live_history`]).
    live_on: std::sync::atomic::AtomicBool,
    /// Asked before each commit and the end (see [`TransitionGuard`]); set by the worker.
    transition_guard: std::sync::OnceLock<Arc<TransitionGuard>>,
    /// Whether the guard ended the execution: this run is fenced out from then on.
    guard_ended: std::sync::atomic::AtomicBool,
}

/// Asked before each commit of a run (a state transition made durable: a Task's start or
/// outcome, a Wait's start or end, ...) and before its end, with the execution's record:
/// `None` (the cheap answer, an in-memory look-up) lets it go on; `Some(future)` may end the
/// execution from outside (`wfc serve`: its state machine is being deleted). When the future
/// answers `true` it has ended the execution in the store (its epoch bumped), and the transition
/// is refused as a stale token, as any fenced-out run's is.
pub type TransitionGuard = dyn Fn(&ExecutionRecord) -> Option<futures::future::BoxFuture<'static, bool>> + Send + Sync;

/// Checkpoints waiting for the token: their tickets and updates, and the results of those a
/// leader committed for them.
#[derive(Default)]
struct CheckpointQueue {
    next: u64,
    waiting: Vec<(u64, Vec<OperationUpdate>)>,
    done: HashMap<u64, Result<(), StoreError>>,
}

/// How long a deferred outcome waits for the next checkpoint of its execution before it is
/// committed alone: longer than the deterministic work between two operations (Pass, Choice,
/// paths), short enough that a step whose outcome is lost to a crash was in flight moments ago.
const BATCH_LINGER: Duration = Duration::from_millis(20);

/// Crash testing: `WFC_CRASH_AT=<operation id>:<phase>` aborts the process (as `kill -9` would
/// stop it) at that point of that operation. Phases: `before-start` (nothing of the operation is
/// committed), `after-start` (STARTED is committed; the work has not run, or a timer waits),
/// `before-finish` (the work ran; its outcome is not committed), `after-finish` (the outcome is
/// committed; the state has not gone on). Read once; unset in normal use.
fn crash_point(id: &str, phase: &str) {
    static CRASH_AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let target = CRASH_AT.get_or_init(|| std::env::var("WFC_CRASH_AT").ok().filter(|v| !v.is_empty()));
    if let Some(target) = target
        && target.strip_suffix(phase).and_then(|rest| rest.strip_suffix(':')) == Some(id)
    {
        eprintln!("wfc: WFC_CRASH_AT={target}: aborting");
        std::process::abort();
    }
}

/// How often a callback wait looks at the store for an answer from another process.
const CALLBACK_POLL: Duration = Duration::from_millis(200);

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal").field("execution", &self.record.name).field("store", &self.store).finish()
    }
}

fn store_failure(e: StoreError) -> Failure {
    Failure::runtime(format!("the durable store rejected a checkpoint: {e}"))
}

/// The failure that unwinds a suspended run (States.Runtime, so no Catch intercepts it).
fn suspension() -> Failure {
    Failure::runtime("the execution was suspended until its timer or callback is due (a worker resumes it)")
}

/// A recorded operation that does not fit the definition being replayed.
fn determinism_violation(op: &Operation, expected: OpType, name: &str) -> Failure {
    Failure::runtime(format!(
        "determinism violation: the journal has {} operation '{}' of state '{}' where the definition runs a {} of state '{name}'; the definition or the code changed under a running execution",
        op.op_type.as_str(),
        op.id,
        op.name,
        expected.as_str()
    ))
}

/// The attempt a finished STEP or CALLBACK operation replays as.
fn replayed(op: Operation) -> Option<Attempt> {
    let failure = || Failure::new(op.error.clone().unwrap_or_default(), op.cause.clone().unwrap_or_default());
    match op.status {
        OpStatus::Succeeded => Some(Attempt::Succeeded(op.result.clone().unwrap_or(Value::Null))),
        OpStatus::Failed => Some(Attempt::Failed(failure())),
        OpStatus::TimedOut => Some(Attempt::TimedOut(failure())),
        // In flight when the process stopped (or abandoned): run it again.
        OpStatus::Started | OpStatus::Cancelled => None,
    }
}

impl Journal {
    /// Creates execution `name` of `workflow` on `input`, or resumes it if it exists with the same
    /// input. Opening fences out any other process still running it (its next checkpoint fails).
    pub async fn open(
        store: Arc<dyn Store>,
        name: &str,
        workflow: &str,
        input: &Value,
        clock: &Clock,
    ) -> Result<Opened, StoreError> {
        Journal::open_checked(store, name, workflow, (None, None), input, clock, None).await
    }

    /// [`Journal::open`] that also records the definition's IR hash ([`wfc_runtime::durable::definition_hash`])
    /// and refuses to resume an execution started with another one
    /// ([`StoreError::OtherVersion`], the execution left as it is). For callers that have no
    /// source text to register; [`Journal::open_version`] pins executions to a version.
    pub async fn open_definition(
        store: Arc<dyn Store>,
        name: &str,
        workflow: &wfc_ir::Workflow,
        input: &Value,
        clock: &Clock,
    ) -> Result<Opened, StoreError> {
        Journal::open_definition_id(store, name, &wfc_runtime::DefinitionId::of(workflow), input, clock).await
    }

    /// [`Journal::open_definition`] by the definition's id: what generated code has (its
    /// `DEFINITION_ID`, the name and IR hash written out by the compiler) instead of the IR.
    pub async fn open_definition_id(
        store: Arc<dyn Store>,
        name: &str,
        definition: &wfc_runtime::DefinitionId<'_>,
        input: &Value,
        clock: &Clock,
    ) -> Result<Opened, StoreError> {
        let hash = Some(definition.hash.clone().into_owned());
        Journal::open_checked(store, name, &definition.workflow, (hash, None), input, clock, None).await
    }

    /// Starts execution `name` pinned to the registered version `version_id` of `workflow`
    /// (see [`wfc_runtime::durable::Registry`]), or resumes it if it is pinned to that version. An execution
    /// pinned to another version is refused ([`StoreError::OtherVersion`]) and left as it is;
    /// an unpinned one (started before versions existed) whose IR hash is `workflow`'s is
    /// adopted: pinned to `version_id`.
    pub async fn open_version(
        store: Arc<dyn Store>,
        name: &str,
        workflow: &wfc_ir::Workflow,
        version_id: &str,
        input: &Value,
        clock: &Clock,
    ) -> Result<Opened, StoreError> {
        Journal::open_version_id(store, name, &wfc_runtime::DefinitionId::of(workflow), version_id, input, clock).await
    }

    /// [`Journal::open_version`] by the definition's id (generated code's `DEFINITION_ID`).
    pub async fn open_version_id(
        store: Arc<dyn Store>,
        name: &str,
        definition: &wfc_runtime::DefinitionId<'_>,
        version_id: &str,
        input: &Value,
        clock: &Clock,
    ) -> Result<Opened, StoreError> {
        let ids = (Some(definition.hash.clone().into_owned()), Some(version_id.to_owned()));
        Journal::open_checked(store, name, &definition.workflow, ids, input, clock, None).await
    }

    /// [`Journal::open`] for a replay-only run: with a `suspender`, the operations its policy
    /// names are parked when they have no recorded outcome (see [`crate::suspend`]).
    pub async fn open_suspending(
        store: Arc<dyn Store>,
        name: &str,
        workflow: &str,
        input: &Value,
        clock: &Clock,
        suspender: Option<Arc<Suspender>>,
    ) -> Result<Opened, StoreError> {
        Journal::open_checked(store, name, workflow, (None, None), input, clock, suspender).await
    }

    async fn open_checked(
        store: Arc<dyn Store>,
        name: &str,
        workflow: &str,
        (definition_hash, version_id): (Option<String>, Option<String>),
        input: &Value,
        clock: &Clock,
        suspender: Option<Arc<Suspender>>,
    ) -> Result<Opened, StoreError> {
        let new = NewExecution {
            name: name.to_owned(),
            workflow: workflow.to_owned(),
            input: input.clone(),
            start_time: clock.now_rfc3339(),
            definition_hash,
            version_id,
        };
        let claim = store.open_execution(new).await?;
        if claim.record.status != wfc_runtime::durable::ExecutionStatus::Running {
            return Ok(Opened::Finished(Box::new(claim.record)));
        }
        Ok(Opened::Running(Journal::from_claim_with(store, claim, None, suspender)))
    }

    /// The journal of an execution claimed by a worker ([`Store::claim_runnable`]). With
    /// `suspend_after`, long timers and callback waits suspend the run (see
    /// [`Journal::suspended`]) so the worker can release the execution until it is due.
    pub fn from_claim(store: Arc<dyn Store>, claim: Claim, suspend_after: Option<Duration>) -> Arc<Journal> {
        Journal::from_claim_with(store, claim, suspend_after, None)
    }

    fn from_claim_with(
        store: Arc<dyn Store>,
        claim: Claim,
        suspend_after: Option<Duration>,
        suspender: Option<Arc<Suspender>>,
    ) -> Arc<Journal> {
        let ended_before_run = claim
            .operations
            .iter()
            .filter(|op| matches!(op.status, OpStatus::Failed | OpStatus::TimedOut | OpStatus::Succeeded))
            .map(|op| op.id.clone())
            .collect();
        let recorded = claim.operations.into_iter().map(|op| (op.id.clone(), op)).collect();
        // The adapters' services keep the history themselves.
        let live_on = suspender.is_none();
        Arc::new_cyclic(|this| Journal {
            ended_before_run,
            reopened: Mutex::new(std::collections::HashSet::new()),
            deferred: Mutex::new(Vec::new()),
            queue: Mutex::new(CheckpointQueue::default()),
            flush_scheduled: std::sync::atomic::AtomicBool::new(false),
            // The adapters' services take one checkpoint call at a time, in order.
            batching: std::sync::atomic::AtomicBool::new(suspender.is_none()),
            this: this.clone(),
            store,
            record: claim.record,
            existed: claim.existed,
            recorded: Mutex::new(recorded),
            epoch: claim.token.epoch,
            token: tokio::sync::Mutex::new(claim.token),
            suspend_after,
            suspended: Mutex::new(None),
            suspender,
            event_claims: tokio::sync::Mutex::new(()),
            chained: std::sync::OnceLock::new(),
            live: std::sync::OnceLock::new(),
            live_on: std::sync::atomic::AtomicBool::new(live_on),
            transition_guard: std::sync::OnceLock::new(),
            guard_ended: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// How often the execution was redriven (`$$.Execution.RedriveCount`).
    pub fn redrive_count(&self) -> u32 {
        u32::try_from(self.record.redrive_count).unwrap_or(u32::MAX)
    }

    /// Whether operation `id` had ended before this run (when it was opened): failed or timed
    /// out, or succeeded (a Task attempt whose result then failed the state, in its
    /// `ResultSelector` or `ResultPath`).
    pub(crate) fn ended_before_run(&self, id: &str) -> bool {
        self.ended_before_run.contains(id)
    }

    /// Whether the CONTEXT operation `id` failed before a redrive and may run again in this
    /// run: `Store::redrive_execution` sets a failed CONTEXT back to STARTED and keeps its
    /// failure and events, so a redriven run can either replay it as it ended (a failure that
    /// was caught, or retried) or reopen it ([`Journal::reopen`]) to run its failed branch
    /// again. Not once it was reopened.
    pub(crate) fn may_reopen(&self, id: &str) -> bool {
        self.recorded(id).is_some_and(|op| failed_before_redrive(&op)) && !self.is_reopened(id)
    }

    /// Runs the CONTEXT operation `id` (see [`Journal::may_reopen`]) again in this run: it is no
    /// longer replayed as it ended ([`Journal::finished_context`]), and its end is recorded anew.
    pub(crate) fn reopen(&self, id: &str) {
        self.reopened.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_owned());
    }

    /// Whether any operation of the CONTEXT `context` (a branch or iteration line, whose
    /// operation ids start with `context/`) is recorded: the line ran before this run, also when
    /// its own CONTEXT was dropped by a redrive (a branch cancelled in flight by another's failure).
    pub(crate) fn ran_under(&self, context: &str) -> bool {
        let prefix = format!("{context}/");
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).keys().any(|id| id.starts_with(&prefix))
    }

    /// Whether the CONTEXT operation `id` was reopened in this run.
    pub(crate) fn is_reopened(&self, id: &str) -> bool {
        self.reopened.lock().unwrap_or_else(|p| p.into_inner()).contains(id)
    }

    /// The execution name.
    pub fn name(&self) -> &str {
        &self.record.name
    }

    /// The execution's record as it was when opened or claimed.
    pub fn record(&self) -> &ExecutionRecord {
        &self.record
    }

    /// The fencing epoch of this hold.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// `$$.Execution.StartTime` of the first start (a resume keeps it).
    pub fn start_time(&self) -> &str {
        &self.record.start_time
    }

    /// Whether this run resumes an execution that already existed.
    pub fn is_resume(&self) -> bool {
        self.existed
    }

    /// Whether Task attempts must pass a [`StepRequest`] to [`Journal::step`]: a suspending
    /// journal reports it when it parks the attempt.
    pub fn wants_step_requests(&self) -> bool {
        self.suspender.as_ref().is_some_and(|s| s.policy().steps)
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// When the run suspended (worker mode), when the execution is due again: `Some(Some(ms))`
    /// for a timer, `Some(None)` for a callback. `None`: it did not suspend.
    pub fn suspended(&self) -> Option<Option<i64>> {
        *self.suspended.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn suspend(&self, due_at_ms: Option<i64>) -> Failure {
        let mut suspended = self.suspended.lock().unwrap_or_else(|p| p.into_inner());
        // Several Parallel branches may suspend: the execution is due at the earliest.
        let earliest = match (*suspended, due_at_ms) {
            (Some(Some(a)), Some(b)) => Some(a.min(b)),
            (Some(Some(a)), None) => Some(a),
            (_, b) => b,
        };
        *suspended = Some(earliest);
        suspension()
    }

    /// The recorded operation `id`, if any.
    pub fn recorded(&self, id: &str) -> Option<Operation> {
        if let Some(s) = &self.suspender {
            s.note_lookup(id);
        }
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// Keeps the lease of this hold for `owner` until the future is dropped; returns the error
    /// when the lease is lost (the execution was stopped, or another process took it over).
    pub async fn hold_lease(&self, owner: &str, lease: Duration) -> StoreError {
        // A lease this owner was just given (a worker's claim, which wrote `lease_until`) is
        // renewed when a third of it has passed, as every later one is, not at once: a renewal
        // then would be one more write of the few a short execution makes (one of 13 for 10
        // Tasks). A lease ending sooner than that (or none) is renewed at once.
        if self.record.owner.as_deref() == Some(owner)
            && let Some(until) = self.record.lease_until_ms
        {
            let renew_at = until.saturating_sub(i64::try_from((lease * 2 / 3).as_millis()).unwrap_or(i64::MAX));
            // Never later than a third of the lease from now (another clock may have written it).
            let wait = Duration::from_millis(
                u64::try_from(renew_at.saturating_sub(wfc_runtime::durable::now_ms())).unwrap_or(0),
            );
            if !wait.is_zero() {
                tokio::time::sleep(wait.min(lease / 3)).await;
            }
        }
        loop {
            if let Err(e) = self.store.renew_lease(&self.record.name, self.epoch, owner, lease).await {
                return e;
            }
            tokio::time::sleep(lease / 3).await;
        }
    }

    /// Attaches the run's history (by [`wfc_runtime::Execution::start`]): from now on the events it
    /// records are written with the checkpoints, so the store shows a running execution's history
    /// as it grows. A history that keeps no events (express level) is not attached.
    pub(crate) fn attach_history(&self, history: &wfc_runtime::History) {
        if history.keeps_events() && self.live_on.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = self.live.set(LiveHistory::new(history.clone()));
        }
    }

    /// Turns the writing of the history while the run goes on or off (on by default, except for
    /// the adapters' journals). Off, the history is written when the execution ends, as the
    /// benchmark's "history at the end" figure measures. Set it before the run starts.
    pub fn set_live_history(&self, on: bool) {
        self.live_on.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// The history events the next commit writes. Taken **before** the operation updates that
    /// commit takes, so an event recorded after its operation's update was queued is never
    /// written without it (see [`crate::live_history`]). Called with the token held.
    async fn history_snapshot(&self) -> Result<Option<HistoryPending>, StoreError> {
        let Some(live) = self.live.get() else { return Ok(None) };
        if live.needs_load() {
            // A resumed run compares its replay with what the store has (read once).
            let stored = if self.existed { self.store.read_history(&self.record.name).await? } else { Vec::new() };
            live.loaded(stored);
        }
        Ok(Some(live.snapshot()))
    }

    /// Sets the [`TransitionGuard`] of this run (once; later calls are ignored).
    pub fn set_transition_guard(&self, guard: Arc<TransitionGuard>) {
        let _ = self.transition_guard.set(guard);
    }

    /// Asks the [`TransitionGuard`] whether the next transition may be made.
    async fn guard_transition(&self) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        let stale = || Err(StoreError::StaleToken(self.record.name.clone()));
        if self.guard_ended.load(Ordering::SeqCst) {
            return stale();
        }
        let Some(end) = self.transition_guard.get().and_then(|guard| guard(&self.record)) else { return Ok(()) };
        if end.await {
            self.guard_ended.store(true, Ordering::SeqCst);
            return stale();
        }
        Ok(())
    }

    /// One commit of `batch` with the history events of `history`, if any.
    async fn commit(
        &self,
        token: CheckpointToken,
        batch: Vec<OperationUpdate>,
        history: &mut Option<HistoryPending>,
    ) -> Result<CheckpointToken, StoreError> {
        self.guard_transition().await?;
        let next = match history.as_mut().filter(|h| !h.is_empty()) {
            Some(h) => {
                let write = std::mem::take(&mut h.write);
                self.store.checkpoint_with_history(&self.record.name, token, batch, write).await?
            }
            None => self.store.checkpoint(&self.record.name, token, batch).await?,
        };
        if let (Some(live), Some(h)) = (self.live.get(), history.as_ref()) {
            live.committed(h);
        }
        Ok(next)
    }

    /// Writes `updates` as one atomic checkpoint, together with the deferred updates (written
    /// first) and the history recorded since the last one, then mirrors them in memory.
    pub async fn checkpoint(&self, updates: Vec<OperationUpdate>) -> Result<(), StoreError> {
        self.checkpoint_with(updates, false).await
    }

    /// [`Journal::checkpoint`]; with `history_alone`, the history recorded since the last
    /// checkpoint is written even when there is no update to go with it.
    async fn checkpoint_with(&self, updates: Vec<OperationUpdate>, history_alone: bool) -> Result<(), StoreError> {
        let _in_flight = self.suspender.as_ref().map(|s| s.in_flight());
        if !self.batching.load(std::sync::atomic::Ordering::SeqCst) {
            return self.commit_alone(updates, history_alone).await;
        }
        // Concurrent checkpoints (Parallel branches, Map iterations) share one commit: each
        // queues its updates; whoever gets the token next commits everything queued, and the
        // others find their result when they get it.
        let ticket = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.next += 1;
            let ticket = queue.next;
            queue.waiting.push((ticket, updates));
            ticket
        };
        let mut token = self.token.lock().await;
        if let Some(result) = self.queue.lock().unwrap_or_else(|p| p.into_inner()).done.remove(&ticket) {
            return result;
        }
        let mut history = self.history_snapshot().await?;
        let waiting = std::mem::take(&mut self.queue.lock().unwrap_or_else(|p| p.into_inner()).waiting);
        let deferred = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|p| p.into_inner()));
        let batch: Vec<OperationUpdate> =
            deferred.iter().cloned().chain(waiting.iter().flat_map(|(_, u)| u.iter().cloned())).collect();
        let history_to_write = history_alone && history.as_ref().is_some_and(|h| !h.is_empty());
        if batch.is_empty() && !history_to_write {
            return Ok(());
        }
        let results: Vec<(u64, Result<(), StoreError>)> = match self.commit(*token, batch, &mut history).await {
            Ok(next) => {
                *token = next;
                self.committed(&deferred);
                let results = waiting.iter().map(|(t, _)| (*t, Ok(()))).collect();
                for (_, u) in waiting {
                    self.mirror_updates(u);
                }
                results
            }
            Err(e) if waiting.len() == 1 => {
                self.requeue(deferred);
                waiting.iter().map(|(t, _)| (*t, Err(e.clone()))).collect()
            }
            Err(_) => {
                // One of them may be refused on its own (a callback answered meanwhile):
                // each again in its own commit, so the others are not refused with it.
                self.requeue(deferred);
                let mut results = Vec::with_capacity(waiting.len());
                for (t, u) in waiting {
                    let mut history = match self.history_snapshot().await {
                        Ok(h) => h,
                        Err(e) => {
                            results.push((t, Err(e)));
                            continue;
                        }
                    };
                    let deferred = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|p| p.into_inner()));
                    let batch: Vec<OperationUpdate> = deferred.iter().cloned().chain(u.iter().cloned()).collect();
                    if batch.is_empty() {
                        results.push((t, Ok(())));
                        continue;
                    }
                    match self.commit(*token, batch, &mut history).await {
                        Ok(next) => {
                            *token = next;
                            self.committed(&deferred);
                            self.mirror_updates(u);
                            results.push((t, Ok(())));
                        }
                        Err(e) => {
                            self.requeue(deferred);
                            results.push((t, Err(e)));
                        }
                    }
                }
                results
            }
        };
        let mut mine = Ok(());
        {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            for (t, result) in results {
                if t == ticket {
                    mine = result;
                } else {
                    queue.done.insert(t, result);
                }
            }
        }
        drop(token);
        mine
    }

    /// Deferred updates a refused commit did not write: they go with the next checkpoint (a
    /// refused callback answer must not take an earlier step's outcome down with it).
    fn requeue(&self, deferred: Vec<OperationUpdate>) {
        let mut queued = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        let later = std::mem::replace(&mut *queued, deferred);
        queued.extend(later);
    }

    /// Deferred updates that were just committed: a step's outcome is now durable.
    fn committed(&self, deferred: &[OperationUpdate]) {
        for u in deferred {
            if u.op_type == OpType::Step {
                crash_point(&u.id, "after-finish");
            }
        }
    }

    /// One checkpoint in its own commit, with the deferred updates (batching off).
    async fn commit_alone(&self, updates: Vec<OperationUpdate>, history_alone: bool) -> Result<(), StoreError> {
        let mut token = self.token.lock().await;
        let mut history = self.history_snapshot().await?;
        let deferred = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|p| p.into_inner()));
        let history_to_write = history_alone && history.as_ref().is_some_and(|h| !h.is_empty());
        if updates.is_empty() && deferred.is_empty() && !history_to_write {
            return Ok(());
        }
        let batch = deferred.iter().cloned().chain(updates.iter().cloned()).collect();
        match self.commit(*token, batch, &mut history).await {
            Ok(next) => *token = next,
            Err(e) => {
                // They go with the next checkpoint (a refused callback answer must not take
                // an earlier step's outcome down with it).
                let mut queued = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
                let later = std::mem::replace(&mut *queued, deferred);
                queued.extend(later);
                return Err(e);
            }
        }
        drop(token);
        for u in &deferred {
            if u.op_type == OpType::Step {
                crash_point(&u.id, "after-finish");
            }
        }
        self.mirror_updates(updates);
        Ok(())
    }

    /// Commits the deferred updates and the history recorded since the last checkpoint now, if
    /// there are any: before the run waits (a timer, a callback), so the store shows where it is.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.checkpoint_with(Vec::new(), true).await
    }

    /// Turns the batching of an outcome with the next checkpoint on or off (on by default,
    /// except for the adapters' journals). Off, every checkpoint commits alone, as the
    /// benchmark's "unbatched" figure measures.
    pub fn set_batching(&self, on: bool) {
        self.batching.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Defers `update` (a step's outcome, a CONTEXT's start or end) to the next checkpoint of
    /// this execution, which commits it first in the same atomic batch: a Task chain then
    /// costs one commit per step (its outcome with the next step's STARTED) instead of two.
    /// The guarantees hold: a STARTED is still committed before its step runs, so a step
    /// whose outcome a crash loses was in flight and may run again, and one whose outcome is
    /// committed never runs again. Nothing waits on a deferred update for long: a timer or a
    /// callback wait flushes first, the execution's end flushes, and a flush is scheduled
    /// [`BATCH_LINGER`] later in case nothing else checkpoints by then. Gives `update` back
    /// (the caller commits it now) when batching is off or there is no runtime to flush from.
    fn defer(&self, update: OperationUpdate) -> Option<OperationUpdate> {
        use std::sync::atomic::Ordering;
        if !self.batching.load(Ordering::SeqCst) {
            return Some(update);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Some(update);
        };
        self.mirror_updates(vec![update.clone()]);
        self.deferred.lock().unwrap_or_else(|p| p.into_inner()).push(update);
        if !self.flush_scheduled.swap(true, Ordering::SeqCst) {
            let this = self.this.clone();
            runtime.spawn(async move {
                tokio::time::sleep(BATCH_LINGER).await;
                if let Some(journal) = this.upgrade() {
                    journal.flush_scheduled.store(false, Ordering::SeqCst);
                    // The deferred outcomes (with the history so far); history alone waits for
                    // the next checkpoint, so a fast run does not commit every linger.
                    if let Err(e) = journal.checkpoint(Vec::new()).await {
                        // The run learns it at its next checkpoint (a fenced-out process).
                        tracing::warn!(execution = %journal.record.name, error = %e, "could not commit a deferred outcome");
                    }
                }
            });
        }
        None
    }

    /// Mirrors committed (or deferred) updates in memory.
    fn mirror_updates(&self, updates: Vec<OperationUpdate>) {
        let mut recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        for u in updates {
            let previous = recorded.get(&u.id);
            let starts = previous.map_or(0, |op| op.starts) + u32::from(u.status == OpStatus::Started);
            let due_at_ms = u.due_at_ms.or_else(|| previous.and_then(|op| op.due_at_ms));
            let callback_token = u.callback_token.or_else(|| previous.and_then(|op| op.callback_token.clone()));
            let heartbeats = previous.map_or(0, |op| op.heartbeats);
            recorded.insert(
                u.id.clone(),
                Operation {
                    id: u.id,
                    op_type: u.op_type,
                    subtype: u.subtype,
                    name: u.name,
                    status: u.status,
                    starts,
                    result: u.result,
                    error: u.error,
                    cause: u.cause,
                    due_at_ms,
                    callback_token,
                    heartbeats,
                },
            );
        }
    }

    fn mirror(&self, op: Operation) {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).insert(op.id.clone(), op);
    }

    /// Records how the execution ended and its history. A failure here (a stale token) means
    /// another process owns the execution now; the caller reports it.
    pub async fn complete(&self, result: &ExecutionResult) -> Result<(), StoreError> {
        if self.suspended().is_some() {
            // Not the end: the worker releases the execution until it is due. Deferred outcomes
            // first: a resumed run must find them.
            self.flush().await?;
            return Err(StoreError::InvalidUpdate {
                execution: self.record.name.clone(),
                message: "the run suspended; the execution is not finished".into(),
            });
        }
        self.guard_transition().await?;
        let mut token = self.token.lock().await;
        let completion = Completion {
            status: result.status.into(),
            output: result.output.clone(),
            error: result.error.as_ref().map(|f| f.error.clone()),
            cause: result.error.as_ref().map(|f| f.cause.clone()),
        };
        // A redriven run cut short by the execution's timeout before it recorded its redrive:
        // the stored history stays, then the redrive's event and the timeout (see the function).
        let cut_short = match (result.status, self.record.redrive_count) {
            (wfc_runtime::Status::TimedOut, 1..) => {
                let stored = self.store.read_history(&self.record.name).await?;
                wfc_runtime::durable::cut_short_by_timeout(
                    &self.record,
                    &stored,
                    &result.history,
                    wfc_runtime::durable::now_ms(),
                )
            }
            _ => None,
        };
        // The events since the last checkpoint (the closing one at least), in the transaction
        // that ends the execution; without a live history, the whole history, as it was.
        let (write, pending) = match (cut_short, self.live.get()) {
            (Some(write), _) => (write, None),
            (None, Some(live)) => {
                if live.needs_load() {
                    let stored =
                        if self.existed { self.store.read_history(&self.record.name).await? } else { Vec::new() };
                    live.loaded(stored);
                }
                let mut pending = live.last(&result.history);
                (std::mem::take(&mut pending.write), Some(pending))
            }
            (None, None) => {
                (wfc_runtime::durable::HistoryWrite { events: result.history.clone(), truncate_after: None }, None)
            }
        };
        // The deferred outcomes (the last step's at least) go in the same commit as the end: one
        // commit, not a flush and then the finish.
        let deferred = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|p| p.into_inner()));
        match self.store.finish_with_updates(&self.record.name, *token, deferred.clone(), completion, write).await {
            Ok(next) => {
                *token = next;
                self.committed(&deferred);
            }
            Err(e) => {
                self.requeue(deferred);
                return Err(e);
            }
        }
        if let (Some(live), Some(pending)) = (self.live.get(), pending) {
            live.committed(&pending);
        }
        Ok(())
    }

    /// The recorded operation `id`, checked to be of `op_type` for state `name`. An empty stored
    /// name is not compared: the adapters' services (SWF, Lambda) keep only the operation id,
    /// which already begins with the state's name.
    fn recorded_as(&self, id: &str, op_type: OpType, name: &str) -> Result<Option<Operation>, Failure> {
        match self.recorded(id) {
            Some(op) if op.op_type != op_type || (!op.name.is_empty() && op.name != name) => {
                if let Some(s) = &self.suspender {
                    s.note_violation(&op, op_type, name);
                }
                Err(determinism_violation(&op, op_type, name))
            }
            other => Ok(other),
        }
    }

    /// One Task attempt: replayed if its outcome is recorded; otherwise checkpointed as STARTED,
    /// run, and its outcome checkpointed before the state goes on.
    ///
    /// `request` (given when [`Journal::wants_step_requests`]) is what a suspending journal
    /// reports when it parks the attempt instead of running it.
    pub(crate) async fn step<Fut>(
        &self,
        id: String,
        parent: Option<String>,
        name: &str,
        request: Option<StepRequest>,
        run: Fut,
    ) -> Result<Attempt, Failure>
    where
        Fut: Future<Output = Attempt>,
    {
        let recorded = self.recorded_as(&id, OpType::Step, name)?;
        if let Some(attempt) = recorded.clone().and_then(replayed) {
            return Ok(attempt);
        }
        if let (Some(suspender), Some(request)) = (&self.suspender, request)
            && suspender.policy().steps
        {
            let started = recorded.is_some_and(|op| op.status == OpStatus::Started);
            match suspender.park(Pending::Step { id, name: name.to_owned(), request, started }).await {}
        }
        let update = |status, result, failure: Option<&Failure>| {
            outcome_update(OpType::Step, &id, parent.clone(), name, "Task", status, result, failure)
        };
        crash_point(&id, "before-start");
        self.checkpoint(vec![update(OpStatus::Started, None, None)]).await.map_err(store_failure)?;
        crash_point(&id, "after-start");
        let attempt = {
            let _in_flight = self.suspender.as_ref().map(|s| s.in_flight());
            run.await
        };
        crash_point(&id, "before-finish");
        let done = match &attempt {
            Attempt::Succeeded(v) => update(OpStatus::Succeeded, Some(v.clone()), None),
            Attempt::Failed(f) => update(OpStatus::Failed, None, Some(f)),
            Attempt::TimedOut(f) => update(OpStatus::TimedOut, None, Some(f)),
        };
        // Committed with the next checkpoint (the crash point fires then), or now.
        if let Some(done) = self.defer(done) {
            self.checkpoint(vec![done]).await.map_err(store_failure)?;
            crash_point(&id, "after-finish");
        }
        Ok(attempt)
    }

    /// Records the finished STEP `id` with `result` now, in a checkpoint of its own (with the
    /// outcomes deferred until then): what the run decided (a DISTRIBUTED Map Run level's end),
    /// committed before the run goes on from it, so a resume replays the decision instead of
    /// taking it again. No STARTED first: nothing runs. Nothing when `id` is recorded.
    pub(crate) async fn record_step(
        &self,
        id: String,
        parent: Option<String>,
        name: &str,
        subtype: &str,
        result: Value,
    ) -> Result<(), Failure> {
        if self.recorded_as(&id, OpType::Step, name)?.is_some_and(|op| op.status.is_terminal()) {
            return Ok(());
        }
        crash_point(&id, "before-finish");
        let done = outcome_update(OpType::Step, &id, parent, name, subtype, OpStatus::Succeeded, Some(result), None);
        self.checkpoint(vec![done]).await.map_err(store_failure)?;
        crash_point(&id, "after-finish");
        Ok(())
    }

    /// A durable timer (a Wait, or a retry back-off): a fired one is not waited again, a pending
    /// one waits only until its recorded fire-at instant, a new one is checkpointed with its
    /// fire-at instant before it starts waiting.
    pub(crate) async fn sleep(
        &self,
        clock: &Clock,
        id: String,
        parent: Option<String>,
        name: &str,
        subtype: &str,
        delay: Duration,
    ) -> Result<(), Failure> {
        let update = |status, due_at_ms| OperationUpdate {
            due_at_ms,
            ..outcome_update(OpType::Wait, &id, parent.clone(), name, subtype, status, None, None)
        };
        let recorded = self.recorded_as(&id, OpType::Wait, name)?;
        let parking = self.suspender.as_ref().filter(|s| s.policy().timers);
        let (remaining, due_ms) = match &recorded {
            Some(op) if op.status.is_terminal() => {
                // A skipping clock goes on from the instant a replayed wait fired at.
                if let Some(due) = op.due_at_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()) {
                    clock.catch_up(due);
                }
                return Ok(());
            }
            Some(op) => match op.due_at_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()) {
                Some(due) => (clock.until(due), Some(due.as_millisecond())),
                None => (delay, None),
            },
            None => {
                if delay.is_zero() {
                    return Ok(());
                }
                let due = jiff::SignedDuration::try_from(delay)
                    .ok()
                    .and_then(|d| clock.now().checked_add(d).ok())
                    .ok_or_else(|| Failure::runtime("Wait state delay is too long."))?;
                crash_point(&id, "before-start");
                self.checkpoint(vec![update(OpStatus::Started, Some(due.as_millisecond()))])
                    .await
                    .map_err(store_failure)?;
                crash_point(&id, "after-start");
                (delay, Some(due.as_millisecond()))
            }
        };
        if let Some(suspender) = parking {
            let pending = Pending::Timer {
                id: id.clone(),
                name: name.to_owned(),
                subtype: subtype.to_owned(),
                delay: remaining,
                started: recorded.is_some(),
            };
            match suspender.park(pending).await {}
        }
        // Nothing deferred waits for a timer.
        self.flush().await.map_err(store_failure)?;
        let until = due_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
        tracing::info!(
            execution = %self.record.name,
            state = name,
            kind = subtype,
            until = %until.map(|t| t.to_string()).unwrap_or_default(),
            seconds = remaining.as_secs_f64(),
            "waiting for a timer"
        );
        // A skipped wait returns at once: releasing the execution would only delay it.
        if let Some(limit) = self.suspend_after
            && remaining > limit
            && !clock.skips_waits()
        {
            return Err(self.suspend(due_ms));
        }
        clock.sleep(remaining).await;
        crash_point(&id, "before-finish");
        self.checkpoint(vec![update(OpStatus::Succeeded, None)]).await.map_err(store_failure)?;
        crash_point(&id, "after-finish");
        Ok(())
    }

    /// One attempt of a `.waitForTaskToken` Task. A CALLBACK operation holding the token is
    /// checkpointed before the handler runs (so an answer through the store is never lost); the
    /// handler call is a STEP `<id>.send` (exactly once once it completed); then the answer is
    /// awaited in memory and in the store. A recorded answer is replayed without calling anything.
    #[allow(clippy::too_many_arguments)] // one call site, in exec.rs
    pub(crate) async fn callback<Fut>(
        &self,
        clock: &Clock,
        id: String,
        parent: Option<String>,
        name: &str,
        mut registration: Registration,
        waiting: WaitingTask,
        mut limits: callback::Limits,
        handler: Fut,
    ) -> Result<Attempt, Failure>
    where
        Fut: Future<Output = Attempt>,
    {
        let heartbeat_seconds = limits.heartbeat.map(|h| h.as_secs());
        // With HeartbeatSeconds, the countdown's deadline is a WAIT operation `<id>.heartbeat`
        // (subtype `Heartbeat`), rewritten at each heartbeat, so a resumed wait keeps it.
        let heartbeat_id = format!("{id}.heartbeat");
        let mut last_beat_at = None;
        let update = |status, result, failure: Option<&Failure>, due_at_ms, token: Option<String>| OperationUpdate {
            due_at_ms,
            callback_token: token,
            heartbeat_seconds: if status == OpStatus::Started { heartbeat_seconds } else { None },
            ..outcome_update(OpType::Callback, &id, parent.clone(), name, "TaskToken", status, result, failure)
        };
        match self.recorded_as(&id, OpType::Callback, name)? {
            Some(op) if op.status.is_terminal() => {
                return Ok(
                    replayed(op).unwrap_or_else(|| Attempt::Failed(Failure::runtime("the callback was cancelled")))
                );
            }
            Some(op) => {
                // Resumed while waiting: the timeout runs to the recorded deadline.
                if let Some(due) = op.due_at_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()) {
                    limits.timeout_at = Some(tokio::time::Instant::now() + clock.until(due));
                }
                // And the heartbeat countdown to the recorded one, unless heartbeats came through
                // the store after it was recorded (when is unknown: the countdown restarts now).
                if let (Some(heartbeat), Some(marker)) = (limits.heartbeat, self.recorded(&heartbeat_id))
                    && marker.status == OpStatus::Started
                    && op.heartbeats <= stored_beats(&marker)
                    && let Some(due) = marker.due_at_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
                {
                    last_beat_at = (tokio::time::Instant::now() + clock.until(due)).checked_sub(heartbeat);
                }
            }
            None => {
                let due_ms = limits.timeout.and_then(|t| {
                    let d = jiff::SignedDuration::try_from(t).ok()?;
                    Some(clock.now().checked_add(d).ok()?.as_millisecond())
                });
                self.checkpoint(vec![update(OpStatus::Started, None, None, due_ms, Some(waiting.token.clone()))])
                    .await
                    .map_err(store_failure)?;
            }
        }
        let sent = self.step(format!("{id}.send"), parent.clone(), name, None, handler).await?;
        let outcome = match sent {
            Attempt::Succeeded(_) => {
                if let Some(suspender) = self.suspender.as_ref().filter(|s| s.policy().callbacks || s.is_dry_run()) {
                    // The service records the answer (or the timeout) and invokes again.
                    let token = waiting.token.clone();
                    match suspender.park(Pending::Callback { id, name: name.to_owned(), token }).await {}
                }
                // Nothing deferred (the handler call's outcome) waits for the answer.
                self.flush().await.map_err(store_failure)?;
                // What an operator answers with `wfc callback --token`.
                tracing::info!(execution = %self.record.name, state = name, token = %waiting.token, "waiting for a callback");
                registration.announce(waiting);
                // The adapters' services keep their own countdowns: no marker in their journals.
                let beats = match limits.heartbeat.filter(|_| self.suspender.is_none()) {
                    Some(heartbeat) => {
                        let marker = HeartbeatMarker {
                            journal: self,
                            clock: clock.clone(),
                            id: heartbeat_id.clone(),
                            parent: parent.clone(),
                            name: name.to_owned(),
                            heartbeat,
                            stored: self.recorded(&id).map_or(0, |op| op.heartbeats),
                        };
                        if last_beat_at.is_none() {
                            // The countdown starts at the handler's return (or at this resume).
                            marker.record().await.map_err(store_failure)?;
                        }
                        Some(marker)
                    }
                    None => None,
                };
                let poll = StorePoll {
                    store: Arc::clone(&self.store),
                    execution: self.record.name.clone(),
                    id: id.clone(),
                    beats,
                };
                let wait = callback::wait_from(&mut registration, &limits, Some(CALLBACK_POLL), poll, last_beat_at);
                match self.suspend_after {
                    // A worker does not hold an execution that may wait for days; one with a
                    // heartbeat is held, since the countdown lives in this process.
                    Some(limit) if limits.heartbeat.is_none() => match tokio::time::timeout(limit, wait).await {
                        Ok(outcome) => outcome,
                        Err(_) => {
                            let due = self.recorded(&id).and_then(|op| op.due_at_ms);
                            return Err(self.suspend(due));
                        }
                    },
                    _ => wait.await,
                }
            }
            // The handler could not hand the token on: the attempt fails with its error.
            Attempt::Failed(f) => Ok(CallbackOutcome::Failure(f)),
            Attempt::TimedOut(f) => Err(f),
        };
        // An answer through the store is already recorded; one in memory (or a timeout) is
        // checkpointed here, unless the store got an answer meanwhile (then that one counts).
        if let Some(op) = self.store.load_operation(&self.record.name, &id).await.map_err(store_failure)?
            && op.status.is_terminal()
        {
            self.mirror(op.clone());
            self.close_heartbeat(&heartbeat_id).await?;
            return Ok(replayed(op).unwrap_or_else(|| Attempt::Failed(Failure::runtime("the callback was cancelled"))));
        }
        let attempt = callback::into_attempt(outcome);
        let done = match &attempt {
            Attempt::Succeeded(v) => update(OpStatus::Succeeded, Some(v.clone()), None, None, None),
            Attempt::Failed(f) => update(OpStatus::Failed, None, Some(f), None, None),
            Attempt::TimedOut(f) => update(OpStatus::TimedOut, None, Some(f), None, None),
        };
        // The heartbeat countdown ends with the attempt, in the same batch.
        let batch: Vec<OperationUpdate> =
            [Some(done), self.heartbeat_closed(&heartbeat_id)].into_iter().flatten().collect();
        match self.checkpoint(batch).await {
            Ok(()) => Ok(attempt),
            Err(StoreError::InvalidUpdate { .. }) => {
                // Answered through the store between the look and the write.
                let op = self
                    .store
                    .load_operation(&self.record.name, &id)
                    .await
                    .map_err(store_failure)?
                    .ok_or_else(|| Failure::runtime(format!("the callback operation '{id}' disappeared")))?;
                self.mirror(op.clone());
                self.close_heartbeat(&heartbeat_id).await?;
                Ok(replayed(op).unwrap_or_else(|| Attempt::Failed(Failure::runtime("the callback was cancelled"))))
            }
            Err(e) => Err(store_failure(e)),
        }
    }

    /// The task token of a `.waitForTaskToken` attempt. When the service owns callbacks
    /// ([`crate::suspend::SuspendPolicy::callbacks`], a Lambda durable function), the token is
    /// the callback id the service issues when the CALLBACK starts: so the CALLBACK is started
    /// here, before the attempt's parameters (which may hold `$$.Task.Token`) are evaluated,
    /// and a replay reads the id back from the recorded operation. Otherwise `own` (the
    /// journal's deterministic token) is the token and [`Journal::callback`] starts the CALLBACK.
    #[allow(clippy::too_many_arguments)] // one call site, in exec.rs
    pub(crate) async fn callback_token(
        &self,
        clock: &Clock,
        id: &str,
        parent: Option<String>,
        name: &str,
        own: String,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Result<String, Failure> {
        if !self.suspender.as_ref().is_some_and(|s| s.policy().callbacks) {
            return Ok(own);
        }
        let no_id = || Failure::runtime(format!("the service recorded the callback '{id}' with no callback id"));
        if let Some(op) = self.recorded_as(id, OpType::Callback, name)? {
            return op.callback_token.ok_or_else(no_id);
        }
        let due_at_ms = timeout.and_then(|t| {
            let d = jiff::SignedDuration::try_from(t).ok()?;
            Some(clock.now().checked_add(d).ok()?.as_millisecond())
        });
        let start = OperationUpdate {
            due_at_ms,
            heartbeat_seconds: heartbeat.map(|h| h.as_secs()),
            ..outcome_update(OpType::Callback, id, parent, name, "TaskToken", OpStatus::Started, None, None)
        };
        self.checkpoint(vec![start]).await.map_err(store_failure)?;
        let op = self.store.load_operation(&self.record.name, id).await.map_err(store_failure)?.ok_or_else(no_id)?;
        let token = op.callback_token.clone().ok_or_else(no_id)?;
        self.mirror(op);
        Ok(token)
    }

    /// Starts the CONTEXT operation `id` (a Parallel or Map attempt, or one of its branches or
    /// iterations) unless the journal has it already.
    pub(crate) async fn context_start(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        subtype: &str,
    ) -> Result<(), Failure> {
        self.scope_start(OpType::Context, id, parent, name, subtype).await
    }

    /// Starts a CONTEXT or CHAINED_INVOKE operation unless the journal has it already. A
    /// CONTEXT's start may ride along with the next checkpoint ([`Journal::defer`]): replaying
    /// a lost start only starts it again.
    async fn scope_start(
        &self,
        op_type: OpType,
        id: &str,
        parent: Option<String>,
        name: &str,
        subtype: &str,
    ) -> Result<(), Failure> {
        if self.recorded_as(id, op_type, name)?.is_some() {
            return Ok(());
        }
        let start = outcome_update(op_type, id, parent, name, subtype, OpStatus::Started, None, None);
        crash_point(id, "before-start");
        let start = if op_type == OpType::Context { self.defer(start) } else { Some(start) };
        if let Some(start) = start {
            self.checkpoint(vec![start]).await.map_err(store_failure)?;
        }
        crash_point(id, "after-start");
        Ok(())
    }

    /// Whether a finished CONTEXT stores the history events its branch recorded, so that a
    /// replay can skip the branch ([`Journal::finished_context`]). The stores wfc owns do; the
    /// adapters' services (a suspending journal) keep the plain result the service expects.
    pub(crate) fn keeps_context_events(&self) -> bool {
        self.suspender.is_none()
    }

    /// The recorded outcome of the CONTEXT operation `id` when it finished (SUCCEEDED or FAILED)
    /// with the events its branch recorded: the replay returns it without running the branch,
    /// as the Lambda durable SDK does. `None` (run the branch, replaying its operations one by
    /// one) when it is unfinished, or was recorded without its events (an older journal, or
    /// events kept at another history level than `keeps_history` asks for).
    pub(crate) fn finished_context(
        &self,
        id: &str,
        name: &str,
        keeps_history: bool,
    ) -> Result<Option<FinishedContext>, Failure> {
        if self.is_reopened(id) {
            return Ok(None);
        }
        self.stored_context(id, name, keeps_history)
    }

    /// How the reopened CONTEXT operation `id` had ended before the redrive, with its events
    /// (see [`Journal::reopen`]): the redriven run records them again before it runs it.
    pub(crate) fn reopened_context(
        &self,
        id: &str,
        name: &str,
        keeps_history: bool,
    ) -> Result<Option<FinishedContext>, Failure> {
        self.stored_context(id, name, keeps_history)
    }

    fn stored_context(&self, id: &str, name: &str, keeps_history: bool) -> Result<Option<FinishedContext>, Failure> {
        let Some(op) = self.recorded_as(id, OpType::Context, name)? else {
            return Ok(None);
        };
        let Some(Value::Object(stored)) = &op.result else {
            return Ok(None);
        };
        let known = [CONTEXT_OUTPUT, CONTEXT_EVENTS, CONTEXT_EVENT_COUNT];
        if !stored.keys().all(|k| known.contains(&k.as_str())) {
            return Ok(None);
        }
        let events = match (stored.get(CONTEXT_EVENTS), stored.get(CONTEXT_EVENT_COUNT)) {
            (Some(events), None) => match serde_json::from_value::<Vec<wfc_runtime::HistoryEvent>>(events.clone()) {
                Ok(events) if keeps_history => ContextEvents::Kept(events),
                Ok(events) => ContextEvents::Counted(events.len() as u64),
                Err(_) => return Ok(None),
            },
            (None, Some(count)) if !keeps_history => match count.as_u64() {
                Some(n) => ContextEvents::Counted(n),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let outcome = match (op.status, stored.get(CONTEXT_OUTPUT)) {
            (OpStatus::Succeeded, Some(output)) => Ok(output.clone()),
            // Or failed before a redrive (see [`Journal::may_reopen`]), and not reopened.
            (OpStatus::Failed, None) | (OpStatus::Started, None)
                if op.status == OpStatus::Failed || failed_before_redrive(&op) =>
            {
                Err(Failure::new(op.error.clone().unwrap_or_default(), op.cause.clone().unwrap_or_default()))
            }
            _ => return Ok(None),
        };
        Ok(Some(FinishedContext { outcome, events }))
    }

    /// Records how the CONTEXT operation `id` ended (its output, or its failure), unless the
    /// journal has it finished already (a replay). With `events`, the history events the branch
    /// recorded are stored with the outcome (`{"wfc:output": ..., "wfc:events": [...]}`), so a
    /// replay can skip the finished branch and still rebuild the whole history; without, a
    /// replay re-runs the branch over its recorded operations.
    pub(crate) async fn context_end_with_events(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        subtype: &str,
        outcome: &Result<Value, Failure>,
        events: Option<ContextEvents>,
    ) -> Result<(), Failure> {
        self.scope_end(OpType::Context, id, parent, name, subtype, outcome, events).await
    }

    /// Records how a CONTEXT or CHAINED_INVOKE operation ended, with the events its scope
    /// recorded when given, unless the journal has it finished already. A CONTEXT's end may
    /// ride along with the next checkpoint ([`Journal::defer`]).
    #[allow(clippy::too_many_arguments)] // one private function behind the CONTEXT and subflow ones
    async fn scope_end(
        &self,
        op_type: OpType,
        id: &str,
        parent: Option<String>,
        name: &str,
        subtype: &str,
        outcome: &Result<Value, Failure>,
        events: Option<ContextEvents>,
    ) -> Result<(), Failure> {
        // A worker's run that suspended unwinds through its branches with a failure that is not
        // theirs: the CONTEXT stays STARTED until the resumed run finishes it.
        if self.suspended().is_some() || self.recorded_as(id, op_type, name)?.is_some_and(|op| op.status.is_terminal())
        {
            return Ok(());
        }
        let stored = |output: Option<&Value>| -> Option<Value> {
            let events = events.as_ref()?;
            let mut stored = serde_json::Map::new();
            if let Some(output) = output {
                stored.insert(CONTEXT_OUTPUT.into(), output.clone());
            }
            match events {
                ContextEvents::Kept(events) => {
                    stored.insert(CONTEXT_EVENTS.into(), serde_json::to_value(events).unwrap_or_default())
                }
                ContextEvents::Counted(n) => stored.insert(CONTEXT_EVENT_COUNT.into(), Value::from(*n)),
            };
            Some(Value::Object(stored))
        };
        let update = match outcome {
            Ok(output) => outcome_update(
                op_type,
                id,
                parent,
                name,
                subtype,
                OpStatus::Succeeded,
                Some(stored(Some(output)).unwrap_or_else(|| output.clone())),
                None,
            ),
            Err(f) => outcome_update(op_type, id, parent, name, subtype, OpStatus::Failed, stored(None), Some(f)),
        };
        crash_point(id, "before-finish");
        let update = if op_type == OpType::Context { self.defer(update) } else { Some(update) };
        if let Some(update) = update {
            self.checkpoint(vec![update]).await.map_err(store_failure)?;
        }
        crash_point(id, "after-finish");
        Ok(())
    }
}

/// Serverless Workflow operations: subflows and event waits (see [`wfc_runtime::sw`]).
impl Journal {
    /// The operation type of a subflow the parent waits for and runs itself: CHAINED_INVOKE in
    /// wfc's stores; a CONTEXT on a service's journal (a Lambda CHAINED_INVOKE invokes another
    /// deployed function: only a subflow mapped to one is, see [`Journal::subflow`]).
    fn subflow_type(&self) -> OpType {
        if self.suspender.is_some() { OpType::Context } else { OpType::ChainedInvoke }
    }

    /// On a service's journal (a Lambda durable function), invokes the subflows these mappings
    /// name as CHAINED_INVOKE operations of the mapped functions instead of running them here.
    /// Set once, before the run; a second call is refused (returns the mappings back).
    pub fn set_chained_invokes(&self, targets: ChainedInvokes) -> Result<(), ChainedInvokes> {
        self.chained.set(targets)
    }

    /// Runs a subflow of `workflow_id` (whose workflow has `version`) on `input` as the
    /// operation `id`. Mapped to a function ([`Journal::set_chained_invokes`]), it is that
    /// function's CHAINED_INVOKE and `child` is not run here; otherwise (see
    /// [`Journal::subflow_type`]) a finished one replays its recorded output or failure without
    /// running `child`, and an unfinished one is started (unless it was already: a resume
    /// inside the child), `child` runs (its operations have ids under `id`), and its outcome is
    /// recorded.
    #[allow(clippy::too_many_arguments)] // one call site, in sw.rs
    pub(crate) async fn subflow<Fut>(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        workflow_id: &str,
        version: Option<&str>,
        input: &Value,
        child: Fut,
    ) -> Result<Value, Failure>
    where
        Fut: Future<Output = Result<Value, Failure>>,
    {
        let target = self.chained.get().and_then(|c| c.subflow_target(workflow_id, version));
        match target {
            Some(function) if self.suspender.is_some() => {
                let subflow = SubflowRef { workflow_id: workflow_id.to_owned(), version: version.map(str::to_owned) };
                self.chained_invoke(id, parent, name, "Subflow", &function, input, Some(subflow)).await
            }
            _ => self.subflow_as(id, parent, name, "Subflow", child).await,
        }
    }

    /// The function a DISTRIBUTED Map Run's children are invoked as (this function itself),
    /// when the mappings ask for it and this is a service's journal.
    pub(crate) fn map_run_function(&self) -> Option<String> {
        self.suspender.as_ref()?;
        self.chained.get()?.map_run_function().map(str::to_owned)
    }

    /// A Map Run child as a CHAINED_INVOKE (subtype `MapRunChild`) of `function` with
    /// `envelope` as payload; its result is what the Map Run keeps of the child.
    pub(crate) async fn chained_map_run_child(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        function: &str,
        envelope: &Value,
    ) -> Result<Value, Failure> {
        self.chained_invoke(id, parent, name, "MapRunChild", function, envelope, None).await
    }

    /// A subflow of `workflow_id` started without waiting (`waitForCompletion: false`) as the
    /// operation `id`, when the mappings apply to such subflows and name it (an SWF decider's
    /// child workflows, see [`crate::ChainedInvokes::with_detached`]): unless the journal has
    /// it already, it is noted for the service to start ([`crate::suspend::Suspender::start_detached`]),
    /// and nothing of the child runs here. `Ok(false)`: not mapped, the caller runs it itself.
    pub(crate) fn detached_subflow(
        &self,
        id: &str,
        name: &str,
        workflow_id: &str,
        version: Option<&str>,
        input: &Value,
    ) -> Result<bool, Failure> {
        let (Some(suspender), Some(function)) =
            (&self.suspender, self.chained.get().and_then(|c| c.detached_target(workflow_id, version)))
        else {
            return Ok(false);
        };
        // Recorded: the service started it (or refused to), which the parent does not wait for;
        // CANCELLED: refused for a passing reason, so started again.
        let recorded = self.recorded_as(id, OpType::ChainedInvoke, name)?;
        if recorded.is_none_or(|op| op.status == OpStatus::Cancelled) {
            suspender.start_detached(Pending::Invoke {
                id: id.to_owned(),
                name: name.to_owned(),
                function,
                input: input.clone(),
                started: false,
                subflow: Some(SubflowRef { workflow_id: workflow_id.to_owned(), version: version.map(str::to_owned) }),
            });
        }
        Ok(true)
    }

    /// A CHAINED_INVOKE of the function `function` on a service's journal: a finished one
    /// replays the target's result or error; a new one is started with `input` as its payload;
    /// then, while the service has it STARTED, the line of control parks (the function answers
    /// PENDING) until the target's end invokes the function again.
    #[allow(clippy::too_many_arguments)] // private, two callers (subflows and Map Run children)
    async fn chained_invoke(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        subtype: &str,
        function: &str,
        input: &Value,
        subflow: Option<SubflowRef>,
    ) -> Result<Value, Failure> {
        let recorded = self.recorded_as(id, OpType::ChainedInvoke, name)?;
        // On an SWF decider's journal, CANCELLED is a child start SWF refused for a passing
        // reason: it is started again (a Lambda service never cancels a chained invoke).
        let restart = recorded.as_ref().is_some_and(|op| op.status == OpStatus::Cancelled)
            && self.suspender.as_ref().is_some_and(|s| s.policy().steps);
        let recorded = recorded.filter(|_| !restart);
        let started = recorded.is_some();
        let op = match recorded {
            Some(op) => op,
            None => {
                let start = OperationUpdate {
                    function_name: Some(function.to_owned()),
                    ..outcome_update(
                        OpType::ChainedInvoke,
                        id,
                        parent,
                        name,
                        subtype,
                        OpStatus::Started,
                        Some(input.clone()),
                        None,
                    )
                };
                crash_point(id, "before-start");
                self.checkpoint(vec![start]).await.map_err(store_failure)?;
                crash_point(id, "after-start");
                // The service may end it at once (a target it cannot resolve fails the START).
                match self.store.load_operation(&self.record.name, id).await.map_err(store_failure)? {
                    Some(op) if op.status.is_terminal() => {
                        self.mirror(op.clone());
                        op
                    }
                    _ => self.recorded(id).ok_or_else(|| {
                        Failure::runtime(format!("the chained invoke '{id}' is not in the journal after its start"))
                    })?,
                }
            }
        };
        if op.status.is_terminal() {
            return match replayed(op) {
                Some(Attempt::Succeeded(v)) => Ok(v),
                Some(Attempt::Failed(f)) | Some(Attempt::TimedOut(f)) => Err(f),
                None => Err(Failure::runtime(format!("the chained invoke '{id}' was cancelled"))),
            };
        }
        match self.suspender.as_ref() {
            // The target's end (recorded by the service) invokes this function again.
            Some(suspender) => {
                let pending = Pending::Invoke {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    function: function.to_owned(),
                    input: input.clone(),
                    started,
                    subflow,
                };
                match suspender.park(pending).await {}
            }
            None => Err(Failure::runtime(format!("the chained invoke '{id}' needs a service that runs its target"))),
        }
    }

    /// [`Journal::subflow`] with the operation's subtype (`MapRunChild` for a DISTRIBUTED Map
    /// Run's child execution).
    pub(crate) async fn subflow_as<Fut>(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        subtype: &str,
        child: Fut,
    ) -> Result<Value, Failure>
    where
        Fut: Future<Output = Result<Value, Failure>>,
    {
        let op_type = self.subflow_type();
        if let Some(op) = self.recorded_as(id, op_type, name)?
            && op.status.is_terminal()
        {
            return match replayed(op) {
                Some(Attempt::Succeeded(v)) => Ok(v),
                Some(Attempt::Failed(f)) | Some(Attempt::TimedOut(f)) => Err(f),
                None => Err(Failure::runtime(format!("the subflow operation '{id}' was cancelled"))),
            };
        }
        self.scope_start(op_type, id, parent.clone(), name, subtype).await?;
        let outcome = child.await;
        self.scope_end(op_type, id, parent, name, subtype, &outcome, None).await?;
        outcome
    }

    /// A produced event (a transition's `produceEvents`, an event action's trigger) as a STEP of
    /// subtype `Produce` whose result is the event: a recorded one is returned and not published
    /// again (`bus` only learns its id, so later events get new ids); otherwise `publish` builds
    /// and publishes it and it is checkpointed in one checkpoint. A crash between publishing and
    /// that checkpoint publishes it again on resume (at least once, as a STEP's work).
    ///
    /// A recorded failure (an SWF decider's signal that SWF refused) is returned as the produce's
    /// error. With a suspender whose [`SignalFilter`](crate::suspend::SignalFilter) selects the
    /// event (`event_name` is its definition's name), the line of control parks as a
    /// [`Pending::Signal`] until the service records the delivery's outcome.
    pub(crate) async fn produce(
        &self,
        id: String,
        parent: Option<String>,
        name: &str,
        event_name: &str,
        bus: &wfc_runtime::events::EventBus,
        publish: impl FnOnce() -> Value,
    ) -> Result<Value, Failure> {
        let recorded = self.recorded_as(&id, OpType::Step, name)?;
        // CANCELLED (a delivery the service refused for a passing reason) is produced again.
        if let Some(op) = &recorded
            && op.status.is_terminal()
            && op.status != OpStatus::Cancelled
        {
            return match replayed(op.clone()) {
                Some(Attempt::Succeeded(event)) => {
                    bus.replayed(&event);
                    Ok(event)
                }
                Some(Attempt::Failed(f)) | Some(Attempt::TimedOut(f)) => Err(f),
                None => Err(Failure::runtime(format!("the produced event operation '{id}' did not record its event"))),
            };
        }
        crash_point(&id, "before-start");
        let event = publish();
        if let Some(suspender) = &self.suspender
            && let Some(signals) = suspender.signals()
            && signals.selects(event_name, &event)
        {
            let started = recorded.is_some_and(|op| op.status == OpStatus::Started);
            let pending =
                Pending::Signal { id, name: name.to_owned(), event_name: event_name.to_owned(), event, started };
            match suspender.park(pending).await {}
        }
        crash_point(&id, "before-finish");
        let done = outcome_update(
            OpType::Step,
            &id,
            parent,
            name,
            PRODUCE_SUBTYPE,
            OpStatus::Succeeded,
            Some(event.clone()),
            None,
        );
        self.checkpoint(vec![done]).await.map_err(store_failure)?;
        crash_point(&id, "after-finish");
        Ok(event)
    }

    /// The inbox numbers of the events that recorded event waits consumed.
    fn consumed_events(&self) -> std::collections::HashSet<i64> {
        let recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        recorded
            .values()
            .filter(|op| op.op_type == OpType::Callback && op.subtype == EVENT_SUBTYPE)
            .filter_map(|op| op.result.as_ref()?.get("events")?.as_array().cloned())
            .flatten()
            .filter_map(|e| e.get("seq")?.as_i64())
            .collect()
    }

    /// A Serverless Workflow event wait (an event state, a switch on events, a callback state's
    /// event, an action's result event) as a CALLBACK operation completed through the store:
    /// checkpointed STARTED with its timeout instant, then the execution's inbox
    /// ([`Store::load_events`]; events queued on the in-memory bus are moved there first) is
    /// read every 200 ms until the events the wait needs are there (see [`wfc_runtime::events::pick`]);
    /// they are recorded consumed in the same checkpoint that finishes the operation. A finished
    /// wait replays its events (and fixes their correlation values again). Returns the events
    /// consumed, with their index in `wait.defs`, and whether the wait got what it needed
    /// (`false`: the timeout passed first; a wait for all of `defs` then consumed, and recorded
    /// in its TIMED_OUT result, the events that had arrived, as the in-memory wait does).
    pub(crate) async fn event_wait(
        &self,
        clock: &Clock,
        bus: &wfc_runtime::events::EventBus,
        wait: EventWait<'_>,
    ) -> Result<(Vec<(usize, Value)>, bool), Failure> {
        let EventWait { id, parent, name, token, defs, all, timeout } = wait;
        let deadline_ms = match self.recorded_as(&id, OpType::Callback, name)? {
            Some(op) if op.status.is_terminal() => return replay_events(bus, defs, op),
            Some(op) => {
                // A replay check stops at a wait that is still waiting.
                if let Some(suspender) = self.suspender.as_ref().filter(|s| s.is_dry_run()) {
                    let timer = format!("{id}.timeout");
                    let pending = Pending::Event { id, name: name.to_owned(), timeout, timer, started: true };
                    match suspender.park(pending).await {}
                }
                op.due_at_ms
            }
            None => {
                if let Some(suspender) = &self.suspender {
                    if suspender.signals().is_some() {
                        let wait = EventWait { id, parent, name, token, defs, all, timeout };
                        return self.event_wait_delivered(suspender, bus, wait).await;
                    }
                    return Err(Failure::runtime(format!(
                        "state '{name}' waits for an event, which this service's journal cannot deliver (run Serverless Workflow event waits on a wfc store)"
                    )));
                }
                let due_ms = timeout.and_then(|t| {
                    let d = jiff::SignedDuration::try_from(t).ok()?;
                    Some(clock.now().checked_add(d).ok()?.as_millisecond())
                });
                let start = OperationUpdate {
                    due_at_ms: due_ms,
                    callback_token: Some(token),
                    ..outcome_update(
                        OpType::Callback,
                        &id,
                        parent.clone(),
                        name,
                        EVENT_SUBTYPE,
                        OpStatus::Started,
                        None,
                        None,
                    )
                };
                crash_point(&id, "before-start");
                self.checkpoint(vec![start]).await.map_err(store_failure)?;
                crash_point(&id, "after-start");
                due_ms
            }
        };
        let waiting_since = tokio::time::Instant::now();
        loop {
            for event in bus.drain_inbox() {
                self.store.deliver_event(&self.record.name, event).await.map_err(store_failure)?;
            }
            let remaining =
                deadline_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()).map(|due| clock.until(due));
            let timed_out = remaining.is_some_and(|r| r.is_zero());
            {
                let _claim = self.event_claims.lock().await;
                let inbox = self.store.load_events(&self.record.name).await.map_err(store_failure)?;
                let consumed = self.consumed_events();
                let queue: Vec<(i64, &Value)> =
                    inbox.iter().filter(|(seq, _)| !consumed.contains(seq)).map(|(seq, e)| (*seq, e)).collect();
                let fixed = bus.correlation();
                let finished = match wfc_runtime::events::pick(defs, all, &queue, &fixed) {
                    Some(picked) => Some((picked, true)),
                    None if timed_out => Some((wfc_runtime::events::take(defs, all, &queue, &fixed), false)),
                    None => None,
                };
                if let Some((picked, complete)) = finished {
                    let finished = FinishedEventWait { id: &id, parent, name, defs, picked, complete };
                    return self.finish_event_wait(bus, &queue, finished).await;
                }
            }
            // A worker does not hold an execution that may wait for days: it releases it until
            // the timeout, or until an event is delivered (which makes it runnable at once).
            if let Some(limit) = self.suspend_after
                && waiting_since.elapsed() >= limit
            {
                return Err(self.suspend(deadline_ms));
            }
            clock.sleep(remaining.map_or(CALLBACK_POLL, |r| r.min(CALLBACK_POLL))).await;
        }
    }
}

impl Journal {
    /// An event wait on a service that delivers the events and keeps the timeout's timer (an SWF
    /// decider: signals are the store's inbox, in history order, and the timeout is the WAIT
    /// `<id>.timeout` whose result `{"eventId"}` says where in the history it fired). Nothing
    /// here is recorded by the service: every replay derives again which events each wait
    /// takes, from the same history, in the same order. An event counts for a wait only if it
    /// came before the wait's timeout fired, so later events never change a past outcome.
    /// Without the events it needs, the line of control parks as [`Pending::Event`].
    async fn event_wait_delivered(
        &self,
        suspender: &Suspender,
        bus: &wfc_runtime::events::EventBus,
        wait: EventWait<'_>,
    ) -> Result<(Vec<(usize, Value)>, bool), Failure> {
        let EventWait { id, parent, name, defs, all, timeout, .. } = wait;
        let timer = format!("{id}{EVENT_TIMEOUT_SUFFIX}");
        let timer_op = self.recorded(&timer);
        let fired_at = timer_op
            .as_ref()
            .filter(|op| op.status == OpStatus::Succeeded)
            .map(|op| op.result.as_ref().and_then(|r| r.get("eventId")).and_then(Value::as_i64).unwrap_or(i64::MAX));
        let inbox = self.store.load_events(&self.record.name).await.map_err(store_failure)?;
        let consumed = self.consumed_events();
        let queue: Vec<(i64, &Value)> = inbox
            .iter()
            .filter(|(seq, _)| !consumed.contains(seq) && fired_at.is_none_or(|at| *seq < at))
            .map(|(seq, e)| (*seq, e))
            .collect();
        let fixed = bus.correlation();
        let (picked, complete) = match wfc_runtime::events::pick(defs, all, &queue, &fixed) {
            Some(picked) => (picked, true),
            None if fired_at.is_some() => (wfc_runtime::events::take(defs, all, &queue, &fixed), false),
            None => {
                let pending = Pending::Event {
                    id,
                    name: name.to_owned(),
                    timeout,
                    timer,
                    started: timer_op.is_some_and(|op| op.status == OpStatus::Started),
                };
                match suspender.park(pending).await {}
            }
        };
        self.finish_event_wait(bus, &queue, FinishedEventWait { id: &id, parent, name, defs, picked, complete }).await
    }

    /// Finishes an event wait with the events it `picked` from `queue` (their index in `defs`
    /// and inbox sequence number): records them, consumed, in the CALLBACK's result (SUCCEEDED,
    /// or TIMED_OUT when the wait did not get what it needed) and returns them with their index,
    /// their correlation values fixed on `bus`.
    async fn finish_event_wait(
        &self,
        bus: &wfc_runtime::events::EventBus,
        queue: &[(i64, &Value)],
        wait: FinishedEventWait<'_>,
    ) -> Result<(Vec<(usize, Value)>, bool), Failure> {
        let FinishedEventWait { id, parent, name, defs, picked, complete } = wait;
        let taken: Vec<(usize, i64, Value)> = picked
            .into_iter()
            .filter_map(|(i, seq)| queue.iter().find(|(s, _)| *s == seq).map(|(_, e)| (i, seq, (*e).clone())))
            .collect();
        let result = serde_json::json!({
            "events": taken.iter().map(|(i, seq, e)| serde_json::json!({"index": i, "seq": seq, "event": e})).collect::<Vec<_>>()
        });
        let failure = (!complete).then(|| {
            Failure::new(wfc_runtime::sw::TIMEOUT, format!("no matching event arrived for state '{name}' in time"))
        });
        let status = if complete { OpStatus::Succeeded } else { OpStatus::TimedOut };
        let done =
            outcome_update(OpType::Callback, id, parent, name, EVENT_SUBTYPE, status, Some(result), failure.as_ref());
        crash_point(id, "before-finish");
        self.checkpoint(vec![done]).await.map_err(store_failure)?;
        crash_point(id, "after-finish");
        let mut out = Vec::with_capacity(taken.len());
        for (i, _, event) in taken {
            if let Some(def) = defs.get(i) {
                bus.fix_correlation(def, &event);
            }
            out.push((i, event));
        }
        Ok((out, complete))
    }
}

/// How an event wait ends (see [`Journal::finish_event_wait`]).
struct FinishedEventWait<'a> {
    id: &'a str,
    parent: Option<String>,
    name: &'a str,
    defs: &'a [&'a wfc_ir::sw::EventDef],
    /// The events taken: (index in `defs`, inbox sequence number).
    picked: Vec<(usize, i64)>,
    /// Whether the wait got what it needed (else its timeout passed first).
    complete: bool,
}

/// The suffix of the WAIT that times out an event wait delivered by a service
/// ([`Pending::Event`]'s timer).
const EVENT_TIMEOUT_SUFFIX: &str = ".timeout";

/// The CALLBACK subtype of a Serverless Workflow event wait.
const EVENT_SUBTYPE: &str = "Event";

/// The STEP subtype of a Serverless Workflow produced event.
const PRODUCE_SUBTYPE: &str = "Produce";

/// The events a finished event wait consumed, as the wait returns them.
fn replay_events(
    bus: &wfc_runtime::events::EventBus,
    defs: &[&wfc_ir::sw::EventDef],
    op: Operation,
) -> Result<(Vec<(usize, Value)>, bool), Failure> {
    let complete = match op.status {
        // Recorded before timed-out waits kept the events they took: none.
        OpStatus::TimedOut if op.result.is_none() => return Ok((Vec::new(), false)),
        OpStatus::TimedOut => false,
        OpStatus::Failed => {
            return Err(Failure::new(op.error.unwrap_or_default(), op.cause.unwrap_or_default()));
        }
        OpStatus::Cancelled => return Err(Failure::runtime(format!("the event wait '{}' was cancelled", op.id))),
        OpStatus::Succeeded | OpStatus::Started => true,
    };
    let corrupt = || Failure::runtime(format!("the event wait '{}' has a corrupt recorded result", op.id));
    let events = op.result.as_ref().and_then(|r| r.get("events")).and_then(Value::as_array).ok_or_else(corrupt)?;
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        let i = e.get("index").and_then(Value::as_u64).and_then(|i| usize::try_from(i).ok()).ok_or_else(corrupt)?;
        let event = e.get("event").cloned().ok_or_else(corrupt)?;
        let def = defs.get(i).ok_or_else(|| {
            Failure::runtime(format!(
                "determinism violation: the journal's event wait '{}' of state '{}' consumed an event for event definition {i}, which the definition does not have there; the definition or the code changed under a running execution",
                op.id, op.name
            ))
        })?;
        bus.fix_correlation(def, &event);
        out.push((i, event));
    }
    Ok((out, complete))
}

/// Whether `op` is a CONTEXT that had failed when its execution was redriven: the store set it
/// back to STARTED and kept its failure (see [`Journal::may_reopen`]).
fn failed_before_redrive(op: &Operation) -> bool {
    op.op_type == OpType::Context && op.status == OpStatus::Started && op.error.is_some()
}

/// The keys of a finished CONTEXT's stored result when it keeps its branch's events.
const CONTEXT_OUTPUT: &str = "wfc:output";
const CONTEXT_EVENTS: &str = "wfc:events";
const CONTEXT_EVENT_COUNT: &str = "wfc:eventCount";

/// An update of an operation: its status, and its result or failure (the other fields empty;
/// callers that need a deadline, token or heartbeat set them with struct update syntax).
#[allow(clippy::too_many_arguments)] // each is one field of the update
fn outcome_update(
    op_type: OpType,
    id: &str,
    parent: Option<String>,
    name: &str,
    subtype: &str,
    status: OpStatus,
    result: Option<Value>,
    failure: Option<&Failure>,
) -> OperationUpdate {
    OperationUpdate {
        id: id.to_owned(),
        op_type,
        subtype: subtype.to_owned(),
        name: name.to_owned(),
        status,
        result,
        error: failure.map(|f| f.error.clone()),
        cause: failure.map(|f| f.cause.clone()),
        due_at_ms: None,
        callback_token: None,
        parent_id: parent,
        heartbeat_seconds: None,
        function_name: None,
    }
}

impl Journal {
    /// The update that finishes a callback's heartbeat countdown `id`, if one is running.
    fn heartbeat_closed(&self, id: &str) -> Option<OperationUpdate> {
        let marker = self.recorded(id).filter(|op| op.status == OpStatus::Started)?;
        Some(OperationUpdate {
            status: OpStatus::Succeeded,
            due_at_ms: None,
            ..heartbeat_update(id, &marker.name, None, None, 0)
        })
    }

    /// Finishes a callback's heartbeat countdown `id`, if one is running.
    async fn close_heartbeat(&self, id: &str) -> Result<(), Failure> {
        match self.heartbeat_closed(id) {
            Some(update) => self.checkpoint(vec![update]).await.map_err(store_failure),
            None => Ok(()),
        }
    }
}

/// The heartbeat countdown's WAIT operation, STARTED with its deadline and the number of
/// heartbeats the store had counted when it was written.
fn heartbeat_update(
    id: &str,
    name: &str,
    parent: Option<String>,
    due_at_ms: Option<i64>,
    stored: u64,
) -> OperationUpdate {
    let marker = serde_json::json!({ "storedHeartbeats": stored });
    OperationUpdate {
        due_at_ms,
        ..outcome_update(OpType::Wait, id, parent, name, "Heartbeat", OpStatus::Started, Some(marker), None)
    }
}

/// How many store heartbeats a heartbeat countdown had seen when it was written.
fn stored_beats(marker: &Operation) -> u64 {
    marker.result.as_ref().and_then(|r| r.get("storedHeartbeats")).and_then(Value::as_u64).unwrap_or(0)
}

/// Keeps a callback's heartbeat countdown in the journal while it waits.
struct HeartbeatMarker<'a> {
    journal: &'a Journal,
    clock: Clock,
    id: String,
    parent: Option<String>,
    name: String,
    heartbeat: Duration,
    /// Heartbeats the store has counted so far (as last polled).
    stored: u64,
}

impl HeartbeatMarker<'_> {
    /// Checkpoints the countdown's deadline: HeartbeatSeconds from now.
    async fn record(&self) -> Result<(), StoreError> {
        let due = jiff::SignedDuration::try_from(self.heartbeat)
            .ok()
            .and_then(|d| self.clock.now().checked_add(d).ok())
            .map(|t| t.as_millisecond());
        let update = heartbeat_update(&self.id, &self.name, self.parent.clone(), due, self.stored);
        self.journal.checkpoint(vec![update]).await
    }
}

/// Reads a CALLBACK operation from the store while its task waits (and, with HeartbeatSeconds,
/// keeps the countdown's deadline in the journal).
struct StorePoll<'a> {
    store: Arc<dyn Store>,
    execution: String,
    id: String,
    beats: Option<HeartbeatMarker<'a>>,
}

impl callback::AsyncPoll for StorePoll<'_> {
    async fn beat(&mut self) {
        if let Some(marker) = &self.beats
            && let Err(e) = marker.record().await
        {
            // A fenced-out process learns it at its next checkpoint; the wait goes on meanwhile.
            tracing::warn!(execution = %self.execution, error = %e, "could not checkpoint a heartbeat");
        }
    }

    async fn poll(&mut self) -> Observed {
        match self.store.load_operation(&self.execution, &self.id).await {
            Ok(Some(op)) if op.status.is_terminal() => match replayed(op) {
                Some(Attempt::Succeeded(v)) => Observed::Done(CallbackOutcome::Success(v)),
                Some(Attempt::Failed(f)) | Some(Attempt::TimedOut(f)) => Observed::Done(CallbackOutcome::Failure(f)),
                None => Observed::Done(CallbackOutcome::Failure(Failure::runtime("the callback was cancelled"))),
            },
            Ok(Some(op)) => {
                if let Some(marker) = &mut self.beats {
                    marker.stored = op.heartbeats;
                }
                Observed::Waiting { beats: op.heartbeats }
            }
            // A store that cannot be read now is asked again at the next poll.
            Ok(None) | Err(_) => Observed::Waiting { beats: 0 },
        }
    }
}
