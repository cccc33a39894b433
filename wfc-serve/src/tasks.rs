//! How Tasks run inside `wfc serve`:
//!
//! - a `Resource` that is an activity ARN of this server waits for a worker: the task is queued
//!   for `GetActivityTask` with a task token, and `SendTaskSuccess`/`SendTaskFailure` with that
//!   token answers it (`SendTaskHeartbeat` is accepted). Activities are kept in the store's
//!   registry (workflow `wfc-serve-activity:<name>`, source `{"created": ms}`, or
//!   `{"deleted": ms}` once deleted), so they survive a restart and servers sharing a store see
//!   the same ones. Their task queues are in the store's key/value table too (see
//!   [`Activities`]): a task queued by one server is handed to a worker polling another server on
//!   the same store, answered through any of them, and a task queued (or handed out) before a
//!   restart is the same task after it;
//! - anything else goes to the handler the server was given (`wfc serve --handlers`, then Lambda
//!   resources at `--lambda-endpoint`; the last fallback fails the Task with an error naming the
//!   resource, [`NoHandler`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use wfc_interp::DynHandler;
use wfc_runtime::durable::{Definition, ExecutionStatus, Language, Registry, Store, StoreError, Syntax};
use wfc_runtime::{Failure, TaskContext};

use crate::arn::Arns;

/// The error of a Task whose resource nothing answers.
pub const NO_HANDLER_ERROR: &str = "Wfc.NoTaskHandler";

/// The prefix of activity task tokens (callback tokens of `.waitForTaskToken` start `wfc1-`).
pub const ACTIVITY_TOKEN_PREFIX: &str = "wfc-act-";

/// The fallback handler: fails the Task, naming the resource and how to answer it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

impl DynHandler for NoHandler {
    fn call<'a>(&'a self, resource: &'a str, _input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        let cause = format!(
            "wfc serve has no handler for the resource '{resource}' of Task state '{}': give one in --handlers FILE, make the resource an activity ARN answered by GetActivityTask workers, or, for a Lambda resource, give --lambda-endpoint URL",
            ctx.state_name()
        );
        Box::pin(async move { Err(Failure::new(NO_HANDLER_ERROR, cause)) })
    }
}

// The key/value rows of activity tasks (Store::kv_*). Names and tokens hold no '/'.
/// `QUEUE<activity>/<queued ms, 15 digits>-<token>` → `{"token"}`: the tasks not handed out
/// yet, oldest first; a poller claims one by deleting its row.
const QUEUE: &str = "serve/activity-queue/";
/// `TASK<token>` → the task (activity, execution, state, retry, input, the execution's epoch
/// when it was queued, its queue row): there until it is answered or its Task stops waiting.
const TASK: &str = "serve/activity-task/";
/// `BY_EXECUTION<execution>/<token>` → `{}`: an execution's tasks, for a resumed run to find
/// the one its interrupted attempt queued.
const BY_EXECUTION: &str = "serve/activity-by-execution/";
/// `ANSWER<token>` → `{"output"}` or `{"error", "cause"}`: SendTaskSuccess/Failure, through
/// any server; the server whose Task waits takes it.
const ANSWER: &str = "serve/activity-answer/";
/// `BEAT<token>` → `{}`: a SendTaskHeartbeat through another server than the waiting one.
const BEAT: &str = "serve/activity-beat/";

/// The topics of [`Store::kv_signal`] that tell the other servers on a store (PostgreSQL's
/// `NOTIFY`) what one did: a task queued for an activity (`<QUEUED><activity>`, wakes long
/// polls), an answer or a heartbeat given for a token (`<ANSWERED><token>`, `<BEATEN><token>`,
/// wakes the Task that waits for it on another server).
const QUEUED: &str = "serve/activity-queued/";
const ANSWERED: &str = "serve/activity-answered/";
const BEATEN: &str = "serve/activity-beaten/";

/// How often a server looks in the store for what another server did (a task queued there,
/// an answer given there) when the store cannot signal it (SQLite: one host, one server).
const STORE_POLL: Duration = Duration::from_millis(200);

/// The same when the store signals (PostgreSQL's LISTEN/NOTIFY): only a fallback, for a
/// signal lost with the listening connection or sent before this server listened (a Task
/// that took over a task after a restart). `WFC_SERVE_FALLBACK_POLL_MS` sets it (the tests
/// make it an hour, so that only the signals can pass them).
pub(crate) fn signalled_poll() -> Duration {
    std::env::var("WFC_SERVE_FALLBACK_POLL_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(2), Duration::from_millis)
}

/// Waits for the next topic starting with one of `prefixes` from `signals`: `Some(topic)`, or
/// `None` when topics were missed (the receiver lagged) and the store must be read. Never ends
/// if there are no signals (the caller's fallback poll does); stops listening if they end.
pub(crate) async fn next_topic(
    signals: &mut Option<tokio::sync::broadcast::Receiver<String>>,
    prefixes: &[&str],
) -> Option<String> {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let Some(receiver) = signals.as_mut() else { return std::future::pending().await };
        match receiver.recv().await {
            Ok(topic) if prefixes.iter().any(|p| topic.starts_with(p)) => return Some(topic),
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => return None,
            Err(RecvError::Closed) => {
                tracing::warn!("the store's signals stopped; reading it every {STORE_POLL:?}");
                *signals = None;
            }
        }
    }
}

/// [`Store::kv_signal`], best effort: a signal not sent is made up for by the fallback poll.
pub(crate) async fn signal(store: &dyn Store, topic: &str) {
    if let Err(e) = store.kv_signal(topic).await {
        tracing::warn!(error = %e, topic, "cannot signal the other servers on the store");
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// Creation times of the activities seen (the store's registry is the truth).
    created: HashMap<String, i64>,
    /// The Tasks of this server waiting for an answer, by token.
    waiting: HashMap<String, Waiter>,
}

/// A Task of this server waiting for its activity task's answer.
#[derive(Debug)]
struct Waiter {
    answer: oneshot::Sender<Result<Value, Failure>>,
    /// Its context: a heartbeat resets its `HeartbeatSeconds` countdown.
    ctx: TaskContext,
}

/// The activities of a server; their task queues are rows of the store's key/value table
/// (`serve/activity-*`), shared by the servers on one store and kept across restarts:
///
/// - a Task queues a row and waits; `GetActivityTask` on any server claims the oldest queued
///   row of its activity (deleting it; of two pollers, one gets it), skipping those of
///   executions that are no longer running;
/// - `SendTaskSuccess`/`Failure` on any server writes the answer row; the waiting server gets
///   it at once if it is the same one, else when the store's signal reaches it (PostgreSQL's
///   LISTEN/NOTIFY, [`Store::kv_signal`]) or within [`STORE_POLL`] (SQLite); queuing a task
///   signals too, for the long polls of the other servers;
/// - a Task run again after a restart (the step was in flight: at least once, as every step)
///   takes over the task its interrupted attempt queued, found by its execution, state, retry
///   count and input with an older fencing epoch: a worker that got it before the restart
///   answers it after, and a queued one keeps its place; an answer given meanwhile is there.
#[derive(Debug)]
pub struct Activities {
    inner: Mutex<Inner>,
    /// Wakes this server's long polls when it queues a task.
    queued: Notify,
    /// Where activities are kept (the registry).
    registry: Registry,
    store: Arc<dyn Store>,
    /// Set when the server stops: the Tasks it drops then keep their rows (a restart takes them
    /// over); otherwise a Task that stops waiting (timeout, stop) deletes its rows.
    stopping: AtomicBool,
    /// One takeover at a time (the identical tasks of a Map each take a different row).
    takeover: tokio::sync::Mutex<()>,
    /// On SQLite, the store file's changes: another server's commits wake this one's long polls
    /// and waiting Tasks (see [`crate::sqlite_wake`]).
    changes: Option<Arc<crate::sqlite_wake::StoreChanges>>,
}

const ACTIVITY_PREFIX: &str = "wfc-serve-activity:";
const ACTIVITY_ORIGIN: &str = "wfc-serve:ACTIVITY";

/// How a task answer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The waiting Task got it (or will, on the server where it waits).
    Delivered,
    /// No activity task has this token (answered, timed out or unknown).
    Unknown,
}

fn answer_row(result: &Result<Value, Failure>) -> Value {
    match result {
        Ok(output) => json!({ "output": output }),
        Err(f) => json!({ "error": f.error, "cause": f.cause }),
    }
}

fn answer_of(row: &Value) -> Result<Value, Failure> {
    match row.get("output") {
        Some(output) => Ok(output.clone()),
        None => Err(Failure::new(row["error"].as_str().unwrap_or_default(), row["cause"].as_str().unwrap_or_default())),
    }
}

fn store_failure(what: &str, e: &StoreError) -> Failure {
    Failure::new("States.Runtime", format!("{what}: {e}"))
}

impl Activities {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The activities of `store`.
    pub fn new(store: Arc<dyn Store>) -> Activities {
        Activities {
            inner: Mutex::default(),
            queued: Notify::new(),
            registry: Registry::new(Arc::clone(&store)),
            store,
            stopping: AtomicBool::new(false),
            takeover: tokio::sync::Mutex::new(()),
            changes: None,
        }
    }

    /// These activities, woken by the SQLite store file's changes (`None`: by nothing but the
    /// periodic read, or PostgreSQL's signals).
    pub fn with_store_changes(mut self, changes: Option<Arc<crate::sqlite_wake::StoreChanges>>) -> Activities {
        self.changes = changes;
        self
    }

    /// The server stops: Tasks dropped from now on keep their rows for the next one.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Deletes the rows of every task of `execution` (stored name): it was stopped, or is
    /// redriven (a redriven Task queues a new task, with a new token). Its tokens are then
    /// answered `TaskDoesNotExist`, and no poller is handed them. The server running it (if
    /// any) drops its waiting Task when the stop reaches it. Returns how many tasks went.
    pub async fn forget_execution(&self, execution: &str) -> Result<usize, StoreError> {
        forget_execution_tasks(self.store.as_ref(), execution).await
    }

    /// Deletes the rows of the tasks whose execution is no longer running (or no longer
    /// exists): one stopped or ended while the server running it was dead, or through the
    /// CLI. A server sweeps when it starts.
    pub async fn forget_ended(&self) -> Result<usize, StoreError> {
        let mut executions: Vec<String> = Vec::new();
        for (key, _) in self.store.kv_list(BY_EXECUTION).await? {
            let Some((execution, _token)) = key.strip_prefix(BY_EXECUTION).and_then(|k| k.rsplit_once('/')) else {
                continue;
            };
            if executions.last().map(String::as_str) != Some(execution) {
                executions.push(execution.to_owned());
            }
        }
        let mut forgotten = 0;
        for execution in executions {
            let running =
                self.store.describe_execution(&execution).await?.is_some_and(|r| r.status == ExecutionStatus::Running);
            if !running {
                forgotten += self.forget_execution(&execution).await?;
            }
        }
        Ok(forgotten)
    }

    /// The creation time the store keeps for activity `name`, if it exists there.
    async fn stored(&self, name: &str) -> Result<Option<i64>, StoreError> {
        let Some(current) = self.registry.current(&format!("{ACTIVITY_PREFIX}{name}")).await? else {
            return Ok(None);
        };
        let doc: Value = serde_json::from_str(&current.definition.source).unwrap_or_default();
        Ok(doc["created"].as_i64())
    }

    /// Writes activity `name` to the store: created at `created_ms`, or deleted (`None`).
    async fn keep(&self, name: &str, created_ms: Option<i64>) -> Result<(), StoreError> {
        let source = match created_ms {
            Some(ms) => json!({ "created": ms }),
            None => json!({ "deleted": jiff::Timestamp::now().as_millisecond() }),
        };
        let definition = Definition {
            workflow: format!("{ACTIVITY_PREFIX}{name}"),
            origin: ACTIVITY_ORIGIN.to_owned(),
            source: source.to_string(),
            language: Language::Asl,
            syntax: Syntax::Json,
            passes: Vec::new(),
            siblings: Vec::new(),
        };
        let (version, _) = self.registry.register(definition, None).await?;
        self.registry.publish(&version.version_id).await
    }

    /// The creation time of activity `name`, if it exists: in memory, else in the store (one
    /// created before a restart, or by another server on the same store).
    pub async fn describe(&self, name: &str) -> Result<Option<i64>, StoreError> {
        if let Some(created) = self.lock().created.get(name) {
            return Ok(Some(*created));
        }
        let Some(created) = self.stored(name).await? else { return Ok(None) };
        Ok(Some(*self.lock().created.entry(name.to_owned()).or_insert(created)))
    }

    /// CreateActivity: idempotent by name; returns the creation time and whether it was created
    /// now.
    pub async fn create(&self, name: &str, now_ms: i64) -> Result<(i64, bool), StoreError> {
        if let Some(created) = self.describe(name).await? {
            return Ok((created, false));
        }
        self.keep(name, Some(now_ms)).await?;
        let created = *self.lock().created.entry(name.to_owned()).or_insert(now_ms);
        Ok((created, true))
    }

    /// Every activity (name, creation time), by name: the store's.
    pub async fn list(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let mut names: Vec<String> = self
            .registry
            .versions(None)
            .await?
            .into_iter()
            .filter(|v| v.definition.origin == ACTIVITY_ORIGIN)
            .filter_map(|v| v.definition.workflow.strip_prefix(ACTIVITY_PREFIX).map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        let mut out = Vec::new();
        for name in names {
            if let Some(created) = self.stored(&name).await? {
                out.push((name, created));
            }
        }
        Ok(out)
    }

    /// DeleteActivity: gone from the store; its queued tasks fail (their executions see the
    /// error, on whichever server they wait).
    pub async fn delete(&self, name: &str) -> Result<(), StoreError> {
        if self.stored(name).await?.is_some() {
            self.keep(name, None).await?;
        }
        self.lock().created.remove(name);
        for (key, row) in self.store.kv_list(&format!("{QUEUE}{name}/")).await? {
            if self.store.kv_delete(&key).await?
                && let Some(token) = row["token"].as_str()
            {
                let failure = Failure::new("States.TaskFailed", format!("activity '{name}' was deleted"));
                self.answer(token, Err(failure)).await?;
            }
        }
        Ok(())
    }

    /// Claims the oldest queued task of `name` that still has a running execution.
    async fn take(&self, name: &str) -> Result<Option<(String, Value)>, StoreError> {
        for (key, row) in self.store.kv_list(&format!("{QUEUE}{name}/")).await? {
            if !self.store.kv_delete(&key).await? {
                continue; // another poller got it
            }
            let Some(token) = row["token"].as_str() else { continue };
            let Some(task) = self.store.kv_get(&format!("{TASK}{token}")).await? else { continue };
            let execution = task["execution"].as_str().unwrap_or_default();
            // A task of an execution that is known to the store but no longer runs is dropped
            // (the execution was stopped or failed while its Task waited on a stopped server).
            if task["epoch"].is_i64() {
                let running = self.store.describe_execution(execution).await?;
                if running.is_none_or(|r| r.status != ExecutionStatus::Running) {
                    forget_rows(self.store.as_ref(), token, execution).await;
                    continue;
                }
            }
            return Ok(Some((token.to_owned(), task["input"].clone())));
        }
        Ok(None)
    }

    /// GetActivityTask: the next queued task (token, input) of `name`, waiting up to `wait` for
    /// one (queued here: at once; on another server: when its signal comes, PostgreSQL, or
    /// within [`STORE_POLL`], SQLite). `None` when none came (AWS then answers with no token).
    pub async fn poll(&self, name: &str, wait: Duration) -> Result<Option<(String, Value)>, StoreError> {
        let deadline = tokio::time::Instant::now() + wait;
        // Listening before the first look, so a task queued in between wakes this poll.
        let mut signals = self.store.kv_signals().await;
        let mut changes = self.changes.as_ref().map(|c| c.subscribe());
        let every = if signals.is_some() || changes.is_some() { signalled_poll() } else { STORE_POLL };
        let topic = format!("{QUEUED}{name}");
        loop {
            let notified = self.queued.notified();
            if let Some(task) = self.take(name).await? {
                return Ok(Some(task));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let queued_elsewhere =
                async { while next_topic(&mut signals, &[QUEUED]).await.is_some_and(|t| t != topic) {} };
            tokio::select! {
                _ = tokio::time::sleep_until(deadline.min(now + every)) => {}
                () = notified => {}
                () = queued_elsewhere => {}
                // Another process committed (SQLite): read again once its write has settled.
                () = crate::sqlite_wake::changed(&mut changes) => tokio::time::sleep(crate::sqlite_wake::MIN_SPACING).await,
            }
        }
    }

    /// SendTaskSuccess / SendTaskFailure for an activity token, through any server.
    pub async fn answer(&self, token: &str, result: Result<Value, Failure>) -> Result<Answer, StoreError> {
        if self.store.kv_get(&format!("{TASK}{token}")).await?.is_none() {
            return Ok(Answer::Unknown);
        }
        // Stored first: a Task that waits on another server (or runs again after a restart)
        // finds it there.
        self.store.kv_put(&format!("{ANSWER}{token}"), answer_row(&result)).await?;
        let waiter = self.lock().waiting.remove(token);
        match waiter {
            Some(waiter) => {
                let _ = waiter.answer.send(result);
            }
            None => signal(self.store.as_ref(), &format!("{ANSWERED}{token}")).await,
        }
        Ok(Answer::Delivered)
    }

    /// SendTaskHeartbeat for an activity token: resets the waiting Task's `HeartbeatSeconds`
    /// countdown, at once on this server, else through the store (with a signal).
    pub async fn heartbeat(&self, token: &str) -> Result<Answer, StoreError> {
        if self.store.kv_get(&format!("{TASK}{token}")).await?.is_none() {
            return Ok(Answer::Unknown);
        }
        let local = self.lock().waiting.get(token).map(|w| w.ctx.clone());
        match local {
            Some(ctx) => ctx.heartbeat(),
            None => {
                self.store.kv_put(&format!("{BEAT}{token}"), json!({})).await?;
                signal(self.store.as_ref(), &format!("{BEATEN}{token}")).await;
            }
        }
        Ok(Answer::Delivered)
    }

    /// Hands the answers and heartbeats given on other servers to this server's waiting Tasks,
    /// until the server stops: each as its signal comes (PostgreSQL), and all those in the
    /// store every [`STORE_POLL`] (SQLite) or [`signalled_poll`] (PostgreSQL, a fallback).
    pub async fn deliver_remote_answers(self: Arc<Self>) {
        let mut signals = self.store.kv_signals().await;
        // An interval, not a sleep renewed after each signal: a steady stream of signals does
        // not put off the fallback read.
        let scans = |every| {
            let mut scans = tokio::time::interval(every);
            scans.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            scans
        };
        let mut changes = self.changes.as_ref().map(|c| c.subscribe());
        let mut scan = scans(if signals.is_some() || changes.is_some() { signalled_poll() } else { STORE_POLL });
        loop {
            let topic = tokio::select! {
                _ = scan.tick() => None,
                topic = next_topic(&mut signals, &[ANSWERED, BEATEN]) => topic,
                // Another process committed (SQLite): read the store once its write has settled.
                () = crate::sqlite_wake::changed(&mut changes) => {
                    tokio::time::sleep(crate::sqlite_wake::MIN_SPACING).await;
                    None
                }
            };
            if signals.is_none() && changes.is_none() && scan.period() != STORE_POLL {
                scan = scans(STORE_POLL); // the signals stopped: read the store as SQLite does
            }
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            if self.lock().waiting.is_empty() {
                continue;
            }
            if let Some(topic) = topic {
                self.deliver_one(&topic).await;
                continue;
            }
            let (answers, beats) = match (self.store.kv_list(ANSWER).await, self.store.kv_list(BEAT).await) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(error = %e, "cannot read activity answers from the store");
                    continue;
                }
            };
            let mut taken = Vec::new();
            {
                let mut inner = self.lock();
                for (key, row) in answers {
                    if let Some(waiter) = key.strip_prefix(ANSWER).and_then(|token| inner.waiting.remove(token)) {
                        let _ = waiter.answer.send(answer_of(&row));
                    }
                }
                for (key, _) in beats {
                    if let Some(waiter) = key.strip_prefix(BEAT).and_then(|token| inner.waiting.get(token)) {
                        waiter.ctx.heartbeat();
                        taken.push(key);
                    }
                }
            }
            for key in taken {
                let _ = self.store.kv_delete(&key).await;
            }
        }
    }

    /// Delivers the answer or heartbeat a signal names, if its Task waits here.
    async fn deliver_one(&self, topic: &str) {
        if let Some(token) = topic.strip_prefix(ANSWERED) {
            if !self.lock().waiting.contains_key(token) {
                return;
            }
            match self.store.kv_get(&format!("{ANSWER}{token}")).await {
                Ok(Some(row)) => {
                    if let Some(waiter) = self.lock().waiting.remove(token) {
                        let _ = waiter.answer.send(answer_of(&row));
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read an activity answer from the store"),
            }
        } else if let Some(token) = topic.strip_prefix(BEATEN) {
            let ctx = self.lock().waiting.get(token).map(|w| w.ctx.clone());
            if let Some(ctx) = ctx {
                ctx.heartbeat();
                let _ = self.store.kv_delete(&format!("{BEAT}{token}")).await;
            }
        }
    }

    /// The task an interrupted attempt of this same Task queued (an older epoch of its
    /// execution), taken over: its token, and its answer if one came meanwhile.
    async fn take_over(
        &self,
        task: &Value,
        epoch: i64,
    ) -> Result<Option<(String, Option<Result<Value, Failure>>)>, StoreError> {
        let execution = task["execution"].as_str().unwrap_or_default();
        for (key, _) in self.store.kv_list(&format!("{BY_EXECUTION}{execution}/")).await? {
            let Some(token) = key.rsplit('/').next() else { continue };
            let Some(mut old) = self.store.kv_get(&format!("{TASK}{token}")).await? else { continue };
            // Not across a redrive: a redriven Task's task is a new one (its rows were deleted).
            let same = ["activity", "execution", "child", "state", "retry", "input", "redrive"]
                .iter()
                .all(|k| old[k] == task[k]);
            if !same || old["epoch"].as_i64().is_none_or(|e| e >= epoch) {
                continue;
            }
            old["epoch"] = json!(epoch);
            self.store.kv_put(&format!("{TASK}{token}"), old).await?;
            let answer = self.store.kv_get(&format!("{ANSWER}{token}")).await?.map(|row| answer_of(&row));
            return Ok(Some((token.to_owned(), answer)));
        }
        Ok(None)
    }

    /// Queues a task for `name` (or takes over the one an interrupted attempt queued) and waits
    /// for its answer. `Err` if there is no such activity.
    async fn run(&self, name: &str, input: Value, ctx: &TaskContext) -> Result<Value, Failure> {
        // Known to the store (created before a restart, or by another server): into memory.
        let exists = self
            .describe(name)
            .await
            .map_err(|e| store_failure(&format!("cannot read activity '{name}' from the store"), &e))?;
        if exists.is_none() {
            return Err(Failure::new(
                "States.Runtime",
                format!(
                    "the activity '{name}' does not exist (create it with CreateActivity before starting executions that use it)"
                ),
            ));
        }
        // The stored execution (a Map Run child's is its parent's): its epoch fences the task,
        // and a resumed run finds its tasks by it (and by the child's own name).
        let execution = ctx.stored_execution().unwrap_or(ctx.execution_name()).to_owned();
        let child = ctx.stored_execution().map(|_| ctx.execution_name().to_owned());
        let queue_failure = |e: StoreError| store_failure(&format!("cannot queue a task of activity '{name}'"), &e);
        // The fencing epoch this server holds the execution at (executions outside the store,
        // StartSyncExecution's, have none).
        let record = self.store.describe_execution(&execution).await.map_err(queue_failure)?;
        let epoch = record.as_ref().map(|r| r.epoch);
        let mut task = json!({
            "activity": name,
            "execution": execution,
            "child": child,
            "state": ctx.state_name(),
            "retry": ctx.retry_count(),
            "input": input,
            "epoch": epoch,
            "redrive": record.as_ref().map(|r| r.redrive_count),
        });
        let (tx, rx) = oneshot::channel();
        let taken = match epoch {
            Some(epoch) => {
                let _one = self.takeover.lock().await;
                self.take_over(&task, epoch).await.map_err(queue_failure)?
            }
            None => None,
        };
        let token = match taken {
            Some((token, Some(answer))) => {
                forget_rows(self.store.as_ref(), &token, &execution).await;
                return answer;
            }
            Some((token, None)) => {
                self.lock().waiting.insert(token.clone(), Waiter { answer: tx, ctx: ctx.clone() });
                token
            }
            None => {
                let token = format!("{ACTIVITY_TOKEN_PREFIX}{:032x}", rand::random::<u128>());
                let queued_ms = jiff::Timestamp::now().as_millisecond();
                task["queue"] = json!(format!("{QUEUE}{name}/{queued_ms:015}-{token}"));
                self.lock().waiting.insert(token.clone(), Waiter { answer: tx, ctx: ctx.clone() });
                // The task, then its index, then its queue row: a poller that sees the queue
                // row finds the task.
                let written = async {
                    self.store.kv_put(&format!("{TASK}{token}"), task.clone()).await?;
                    self.store.kv_put(&format!("{BY_EXECUTION}{execution}/{token}"), json!({})).await?;
                    self.store.kv_put(task["queue"].as_str().unwrap_or_default(), json!({ "token": token })).await
                };
                if let Err(e) = written.await {
                    self.lock().waiting.remove(&token);
                    forget_rows(self.store.as_ref(), &token, &execution).await;
                    return Err(queue_failure(e));
                }
                self.queued.notify_waiters();
                signal(self.store.as_ref(), &format!("{QUEUED}{name}")).await;
                token
            }
        };
        // If the Task stops waiting (timeout, stop), its rows go, unless the server is stopping.
        let mut guard = Forget { activities: self, token: &token, execution: &execution, armed: true };
        let answer = rx.await;
        guard.armed = false;
        forget_rows(self.store.as_ref(), &token, &execution).await;
        answer.unwrap_or_else(|_| Err(Failure::new("States.TaskFailed", format!("activity '{name}' went away"))))
    }
}

/// Deletes the rows of every activity task of `execution` (stored name) in `store`, without a
/// server: what [`Activities::forget_execution`] does, for the processes that end an execution
/// outside `wfc serve` (`wfc executions stop`, and `wfc run --store` or `wfc worker` running an
/// execution `wfc serve` started), so its tokens are `TaskDoesNotExist` at once rather than
/// when the next server starts and sweeps. Returns how many tasks went.
pub async fn forget_execution_tasks(store: &dyn Store, execution: &str) -> Result<usize, StoreError> {
    let mut forgotten = 0;
    for (key, _) in store.kv_list(&format!("{BY_EXECUTION}{execution}/")).await? {
        let Some(token) = key.rsplit('/').next() else { continue };
        forget_rows(store, token, execution).await;
        forgotten += 1;
    }
    Ok(forgotten)
}

/// Deletes a task's rows (best effort: what is left is skipped or taken over later).
async fn forget_rows(store: &dyn Store, token: &str, execution: &str) {
    let task = store.kv_get(&format!("{TASK}{token}")).await.ok().flatten();
    let mut keys = vec![
        format!("{TASK}{token}"),
        format!("{BY_EXECUTION}{execution}/{token}"),
        format!("{ANSWER}{token}"),
        format!("{BEAT}{token}"),
    ];
    if let Some(queue) = task.as_ref().and_then(|t| t["queue"].as_str()) {
        keys.push(queue.to_owned());
    }
    for key in keys {
        if let Err(e) = store.kv_delete(&key).await {
            tracing::warn!(error = %e, key, "cannot delete an activity task row");
        }
    }
}

/// Forgets a task when its Task stops waiting: its token here, and its rows in the store unless
/// the server is stopping (the next one takes them over).
struct Forget<'a> {
    activities: &'a Activities,
    token: &'a str,
    execution: &'a str,
    armed: bool,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.activities.lock().waiting.remove(self.token);
        if self.activities.stopping.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = Arc::clone(&self.activities.store);
            let (token, execution) = (self.token.to_owned(), self.execution.to_owned());
            runtime.spawn(async move { forget_rows(store.as_ref(), &token, &execution).await });
        }
    }
}

/// The server's task handler: activities first, then the configured handler.
pub struct ServeHandler {
    arns: Arns,
    activities: Arc<Activities>,
    inner: Arc<dyn DynHandler>,
}

impl ServeHandler {
    /// Activities of this server's ARNs, else `inner`.
    pub fn new(arns: Arns, activities: Arc<Activities>, inner: Arc<dyn DynHandler>) -> ServeHandler {
        ServeHandler { arns, activities, inner }
    }
}

impl DynHandler for ServeHandler {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        let activity = resource.contains(":activity:").then(|| self.arns.activity(resource));
        match activity {
            Some(Ok(name)) => Box::pin(async move { self.activities.run(&name, input, &ctx).await }),
            Some(Err(e)) => Box::pin(async move { Err(Failure::new("States.Runtime", e.message)) }),
            None => self.inner.call(resource, input, ctx),
        }
    }
}
