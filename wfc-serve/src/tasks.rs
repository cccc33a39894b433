//! How Tasks run inside `wfc serve`:
//!
//! - a `Resource` that is an activity ARN of this server waits for a worker: the task is queued
//!   for `GetActivityTask` with a task token, and `SendTaskSuccess`/`SendTaskFailure` with that
//!   token answers it (`SendTaskHeartbeat` is accepted). Activities are kept in the store's
//!   registry (workflow `wfc-serve-activity:<name>`, source `{"created": ms}`, or
//!   `{"deleted": ms}` once deleted), so they survive a restart and servers sharing a store see
//!   the same ones; their queues live in the server's memory: a task in flight when the server
//!   stops runs again (is queued again) when its execution resumes, like any step in flight (at
//!   least once);
//! - anything else goes to the handler the server was given (`wfc serve --handlers`, then Lambda
//!   resources at `--lambda-endpoint`; the last fallback fails the Task with an error naming the
//!   resource, [`NoHandler`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use wfc_runtime::durable::{Definition, Language, Registry, Store, StoreError, Syntax};
use wfc_runtime::interp::DynHandler;
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

/// One task waiting for an activity worker.
#[derive(Debug)]
struct Queued {
    token: String,
    input: Value,
}

/// One activity.
#[derive(Debug)]
struct Activity {
    created_at_ms: i64,
    queue: VecDeque<Queued>,
}

#[derive(Debug, Default)]
struct Inner {
    activities: HashMap<String, Activity>,
    /// Tasks handed to a worker (or queued), by token: how to answer them.
    waiting: HashMap<String, oneshot::Sender<Result<Value, Failure>>>,
}

/// The activities of a server and their task queues.
#[derive(Debug)]
pub struct Activities {
    inner: Mutex<Inner>,
    /// Wakes long polls when a task is queued.
    queued: Notify,
    /// Where activities are kept (the registry); memory holds the ones seen and their queues.
    registry: Registry,
}

const ACTIVITY_PREFIX: &str = "wfc-serve-activity:";
const ACTIVITY_ORIGIN: &str = "wfc-serve:ACTIVITY";

/// How a task answer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The waiting Task got it.
    Delivered,
    /// No activity task has this token (answered, timed out or unknown).
    Unknown,
}

impl Activities {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The activities of `store`.
    pub fn new(store: Arc<dyn Store>) -> Activities {
        Activities { inner: Mutex::default(), queued: Notify::new(), registry: Registry::new(store) }
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
        if let Some(created) = self.lock().activities.get(name).map(|a| a.created_at_ms) {
            return Ok(Some(created));
        }
        let Some(created) = self.stored(name).await? else { return Ok(None) };
        Ok(Some(
            self.lock()
                .activities
                .entry(name.to_owned())
                .or_insert(Activity { created_at_ms: created, queue: VecDeque::new() })
                .created_at_ms,
        ))
    }

    /// CreateActivity: idempotent by name; returns the creation time and whether it was created
    /// now.
    pub async fn create(&self, name: &str, now_ms: i64) -> Result<(i64, bool), StoreError> {
        if let Some(created) = self.describe(name).await? {
            return Ok((created, false));
        }
        self.keep(name, Some(now_ms)).await?;
        let created = self
            .lock()
            .activities
            .entry(name.to_owned())
            .or_insert(Activity { created_at_ms: now_ms, queue: VecDeque::new() })
            .created_at_ms;
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
    /// error).
    pub async fn delete(&self, name: &str) -> Result<(), StoreError> {
        if self.stored(name).await?.is_some() {
            self.keep(name, None).await?;
        }
        let mut inner = self.lock();
        if let Some(activity) = inner.activities.remove(name) {
            for q in activity.queue {
                if let Some(tx) = inner.waiting.remove(&q.token) {
                    let _ = tx.send(Err(Failure::new("States.TaskFailed", format!("activity '{name}' was deleted"))));
                }
            }
        }
        Ok(())
    }

    /// GetActivityTask: the next queued task (token, input) of `name`, waiting up to `wait` for
    /// one. `None` when none came (AWS then answers with no token). Tasks whose Task state
    /// stopped waiting (timed out, execution stopped) are skipped.
    pub async fn poll(&self, name: &str, wait: Duration) -> Option<(String, Value)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.queued.notified();
            {
                let mut inner = self.lock();
                let inner = &mut *inner;
                let activity = inner.activities.get_mut(name)?;
                while let Some(q) = activity.queue.pop_front() {
                    if inner.waiting.get(&q.token).is_some_and(|tx| !tx.is_closed()) {
                        return Some((q.token, q.input));
                    }
                    inner.waiting.remove(&q.token);
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    /// SendTaskSuccess / SendTaskFailure for an activity token.
    pub fn answer(&self, token: &str, result: Result<Value, Failure>) -> Answer {
        let waiting = self.lock().waiting.remove(token);
        match waiting.map(|tx| tx.send(result)) {
            Some(Ok(())) => Answer::Delivered,
            _ => Answer::Unknown,
        }
    }

    /// SendTaskHeartbeat for an activity token.
    pub fn heartbeat(&self, token: &str) -> Answer {
        match self.lock().waiting.get(token) {
            Some(tx) if !tx.is_closed() => Answer::Delivered,
            _ => Answer::Unknown,
        }
    }

    /// Queues a task for `name` and waits for its answer. `Err` if there is no such activity.
    async fn run(&self, name: &str, input: Value) -> Result<Value, Failure> {
        // Known to the store (created before a restart, or by another server): into memory.
        self.describe(name).await.map_err(|e| {
            Failure::new("States.Runtime", format!("cannot read activity '{name}' from the store: {e}"))
        })?;
        let token = format!("{ACTIVITY_TOKEN_PREFIX}{:032x}", rand::random::<u128>());
        let (tx, rx) = oneshot::channel();
        {
            let mut inner = self.lock();
            let Some(activity) = inner.activities.get_mut(name) else {
                return Err(Failure::new(
                    "States.Runtime",
                    format!(
                        "the activity '{name}' does not exist (create it with CreateActivity before starting executions that use it)"
                    ),
                ));
            };
            activity.queue.push_back(Queued { token: token.clone(), input });
            inner.waiting.insert(token.clone(), tx);
        }
        self.queued.notify_waiters();
        // If the Task stops waiting (timeout, stop), the token is forgotten.
        let guard = Forget { activities: self, token: &token };
        let answer = rx.await;
        drop(guard);
        answer.unwrap_or_else(|_| Err(Failure::new("States.TaskFailed", format!("activity '{name}' went away"))))
    }
}

/// Removes a task's token when its Task stops waiting.
struct Forget<'a> {
    activities: &'a Activities,
    token: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.activities.lock().waiting.remove(self.token);
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
            Some(Ok(name)) => Box::pin(async move { self.activities.run(&name, input).await }),
            Some(Err(e)) => Box::pin(async move { Err(Failure::new("States.Runtime", e.message)) }),
            None => self.inner.call(resource, input, ctx),
        }
    }
}
