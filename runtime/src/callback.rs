//! Task-token callbacks: a Task whose `Resource` ends in `.waitForTaskToken` calls its handler
//! with a task token (`$$.Task.Token`, also [`crate::TaskContext::task_token`]), ignores what the
//! handler returns, and then waits until someone completes the token with SendTaskSuccess,
//! SendTaskFailure or SendTaskHeartbeat.
//!
//! Completion comes from:
//! - the execution's in-memory [`Callbacks`] handle ([`crate::RunOptions::with_callbacks`]), on
//!   both engines, for callers in the same process;
//! - the durable store (feature `durable`): a `CALLBACK` operation holds the token, and
//!   [`crate::durable::Store::complete_callback`] completes it from any process (`wfc callback`).
//!
//! While it waits, `TimeoutSeconds` (counted from the attempt's start) and `HeartbeatSeconds`
//! (counted from the last heartbeat, or the start) apply. Either fails the attempt with
//! `States.Timeout` and no cause, as AWS records both (asl-aws `timeouts/test_heartbeats__*`:
//! `TaskTimedOut` with `States.Timeout`; the 2016 text's `States.HeartbeatTimeout` never comes).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, watch};

use crate::Failure;

/// The suffix that makes a Task resource a callback (`arn:aws:states:::sqs:sendMessage.waitForTaskToken`).
pub const WAIT_FOR_TASK_TOKEN: &str = ".waitForTaskToken";

/// Whether a Task with this `Resource` waits for a task token.
pub fn is_callback_resource(resource: &str) -> bool {
    resource.ends_with(WAIT_FOR_TASK_TOKEN)
}

/// The task token of one attempt: a hash of the execution id and the attempt's position, so it is
/// the same on both engines and on every replay of the same execution, and unguessable from
/// outside without the execution id.
pub fn task_token(execution_id: &str, position: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(execution_id.as_bytes());
    hasher.update(b"\n");
    hasher.update(position.as_bytes());
    let digest = hasher.finalize();
    let mut token = String::with_capacity(70);
    token.push_str("wfc1-");
    for byte in digest {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// How a callback ended, as sent by SendTaskSuccess / SendTaskFailure.
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackOutcome {
    /// SendTaskSuccess: the task's result.
    Success(Value),
    /// SendTaskFailure: the task's error.
    Failure(Failure),
}

/// Why a send was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// No task waits for this token (AWS `TaskDoesNotExist`).
    #[error("no task is waiting for the task token '{0}' (TaskDoesNotExist)")]
    UnknownToken(String),
    /// The task already completed or timed out (AWS `TaskTimedOut`).
    #[error("the task of token '{0}' has already completed or timed out (TaskTimedOut)")]
    AlreadyCompleted(String),
}

/// A task that is waiting for its token (announced to [`Callbacks::subscribe`]rs).
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingTask {
    /// The task token.
    pub token: String,
    /// The Task state's name.
    pub state_name: String,
    /// The execution's name.
    pub execution_name: String,
    /// The effective input the handler was called with (after Parameters).
    pub input: Value,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct SlotState {
    pub(crate) outcome: Option<CallbackOutcome>,
    pub(crate) beats: u64,
}

#[derive(Default)]
struct Registry {
    slots: HashMap<String, watch::Sender<SlotState>>,
    waiting: HashMap<String, WaitingTask>,
    subscribers: Vec<mpsc::UnboundedSender<WaitingTask>>,
}

/// The in-memory callback handle of one or more executions: SendTaskSuccess, SendTaskFailure
/// and SendTaskHeartbeat by token. Cheap to clone; clones share the registry. Pass it with
/// [`crate::RunOptions::with_callbacks`]; an execution without one gets a private registry (only
/// the durable store can then complete its callbacks).
#[derive(Clone, Default)]
pub struct Callbacks {
    inner: Arc<Mutex<Registry>>,
}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registry = self.lock();
        f.debug_struct("Callbacks").field("waiting", &registry.waiting.len()).finish()
    }
}

impl Callbacks {
    /// An empty registry.
    pub fn new() -> Callbacks {
        Callbacks::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn send(&self, token: &str, change: impl FnOnce(&mut SlotState)) -> Result<(), CallbackError> {
        let registry = self.lock();
        let Some(slot) = registry.slots.get(token) else {
            return Err(CallbackError::UnknownToken(token.to_owned()));
        };
        if slot.borrow().outcome.is_some() {
            return Err(CallbackError::AlreadyCompleted(token.to_owned()));
        }
        slot.send_modify(change);
        Ok(())
    }

    /// SendTaskSuccess: the waiting task succeeds with `output` as its result.
    pub fn send_success(&self, token: &str, output: Value) -> Result<(), CallbackError> {
        self.send(token, |s| s.outcome = Some(CallbackOutcome::Success(output)))
    }

    /// SendTaskFailure: the waiting task fails with `error` and `cause` (Retry and Catch apply).
    pub fn send_failure(&self, token: &str, error: &str, cause: &str) -> Result<(), CallbackError> {
        let failure = Failure::new(error, cause);
        self.send(token, |s| s.outcome = Some(CallbackOutcome::Failure(failure)))
    }

    /// SendTaskHeartbeat: restarts the task's HeartbeatSeconds countdown.
    pub fn send_heartbeat(&self, token: &str) -> Result<(), CallbackError> {
        self.send(token, |s| s.beats += 1)
    }

    /// The tasks waiting right now (their handler has returned), in no particular order.
    pub fn waiting(&self) -> Vec<WaitingTask> {
        self.lock().waiting.values().cloned().collect()
    }

    /// Every task that starts waiting from now on is sent to the returned receiver.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<WaitingTask> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().subscribers.push(tx);
        rx
    }

    /// Opens the slot of `token` before its handler runs, so an answer that comes back before
    /// the handler has even returned is not lost.
    pub(crate) fn register(&self, token: &str) -> Registration {
        let (tx, rx) = watch::channel(SlotState::default());
        self.lock().slots.insert(token.to_owned(), tx);
        Registration { callbacks: self.clone(), token: token.to_owned(), rx }
    }

    /// Announces that the handler returned and the task now waits.
    fn announce(&self, task: WaitingTask) {
        let mut registry = self.lock();
        registry.subscribers.retain(|s| s.send(task.clone()).is_ok());
        registry.waiting.insert(task.token.clone(), task);
    }
}

/// A token's slot while its task runs; dropping it closes the slot (later sends are
/// [`CallbackError::UnknownToken`]).
pub struct Registration {
    callbacks: Callbacks,
    token: String,
    rx: watch::Receiver<SlotState>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut registry = self.callbacks.lock();
        registry.slots.remove(&self.token);
        registry.waiting.remove(&self.token);
    }
}

impl Registration {
    /// Lists `task` among the waiting ones ([`Callbacks::waiting`], [`Callbacks::subscribe`]):
    /// its handler has handed the token on and the attempt now waits for an answer.
    pub fn announce(&self, task: WaitingTask) {
        self.callbacks.announce(task);
    }

    pub(crate) fn current(&self) -> SlotState {
        self.rx.borrow().clone()
    }

    /// Completes when a send changes the slot.
    pub(crate) async fn changed(&mut self) {
        if self.rx.changed().await.is_err() {
            futures::future::pending::<()>().await;
        }
    }
}

/// What the wait observed from outside (a send in memory or a row in the store): the answer of
/// an [`AsyncPoll`] (the durable journal's look at its store, in `wfc-journal`).
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// Still waiting; `beats` counts heartbeats so far.
    Waiting {
        /// Heartbeats so far.
        beats: u64,
    },
    /// Completed (only the durable store observes a completion from outside).
    Done(CallbackOutcome),
}

/// The deadlines of a wait: `timeout` is absolute (on tokio's clock), `heartbeat` an interval.
pub struct Limits {
    /// When the wait times out.
    pub timeout_at: Option<tokio::time::Instant>,
    /// How long it may go without a heartbeat.
    pub heartbeat: Option<Duration>,
    /// The TimeoutSeconds the deadline was computed from, which the durable journal records
    /// (so a resumed wait keeps its deadline).
    pub timeout: Option<Duration>,
}

/// Why a wait ended without an answer: an expired TimeoutSeconds and a missed heartbeat alike
/// are `States.Timeout` with no cause, as AWS records them.
pub(crate) fn timeout_failure() -> Failure {
    Failure::new(wfc_ir::errors::TIMEOUT, "")
}

/// Waits for the answer: `poll` is called at every change and every `poll_every` (for the
/// store; `None`: changes in memory only) and reports what it sees. Returns the outcome, or the
/// timeout failure (`Err`).
pub(crate) async fn wait<P>(
    registration: &mut Registration,
    limits: &Limits,
    poll_every: Option<Duration>,
    poll: P,
) -> Result<CallbackOutcome, Failure>
where
    P: AsyncPoll,
{
    wait_from(registration, limits, poll_every, poll, None).await
}

/// Waits for the answer, as the in-memory wait does, with the HeartbeatSeconds countdown started
/// at `last_beat_at` (a durable wait resumed after a restart: the last heartbeat, or the
/// handler's return, before it), now when `None`. `poll` is called at every change and every
/// `poll_every` (for the store; `None`: changes in memory only).
/// Each heartbeat seen while waiting is reported to `poll` ([`AsyncPoll::beat`]). The durable
/// journal (`wfc-journal`) waits with it, polling its store.
pub async fn wait_from<P>(
    registration: &mut Registration,
    limits: &Limits,
    poll_every: Option<Duration>,
    mut poll: P,
    last_beat_at: Option<tokio::time::Instant>,
) -> Result<CallbackOutcome, Failure>
where
    P: AsyncPoll,
{
    let mut last_beats: Option<u64> = None;
    let mut last_beat_at = last_beat_at.unwrap_or_else(tokio::time::Instant::now);
    loop {
        let memory = registration.current();
        if let Some(outcome) = memory.outcome {
            return Ok(outcome);
        }
        let mut beats = memory.beats;
        if poll_every.is_some() {
            match poll.poll().await {
                Observed::Done(outcome) => return Ok(outcome),
                Observed::Waiting { beats: stored } => beats += stored,
            }
        }
        let now = tokio::time::Instant::now();
        if last_beats != Some(beats) {
            if last_beats.is_some() {
                last_beat_at = now;
                poll.beat().await;
            }
            last_beats = Some(beats);
        }
        let heartbeat_at = limits.heartbeat.map(|h| last_beat_at + h);
        if let Some(t) = limits.timeout_at
            && now >= t
        {
            return Err(timeout_failure());
        }
        if let Some(h) = heartbeat_at
            && now >= h
        {
            return Err(timeout_failure());
        }
        let wake = [limits.timeout_at, heartbeat_at, poll_every.map(|p| now + p)].into_iter().flatten().min();
        tokio::select! {
            () = registration.changed() => {}
            () = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => futures::future::pending().await,
                }
            } => {}
        }
    }
}

/// Looks at the store for an answer (see [`wait_from`]): implemented by the durable journal
/// (`wfc-journal`), whose answers may also arrive through its store from another process.
pub trait AsyncPoll {
    /// What the store shows now.
    fn poll(&mut self) -> impl std::future::Future<Output = Observed> + Send;

    /// A heartbeat was seen (in memory or in the store): the countdown restarts now.
    fn beat(&mut self) -> impl std::future::Future<Output = ()> + Send {
        async {}
    }
}

/// Runs one attempt of a callback Task without a store: the handler (`handler`, already under
/// TimeoutSeconds), then the wait for an answer in memory.
pub(crate) async fn run<Fut>(
    mut registration: Registration,
    waiting: WaitingTask,
    limits: Limits,
    handler: Fut,
) -> crate::task::Attempt
where
    Fut: std::future::Future<Output = crate::task::Attempt>,
{
    match handler.await {
        crate::task::Attempt::Succeeded(_) => {}
        other => return other,
    }
    registration.announce(waiting);
    into_attempt(wait(&mut registration, &limits, None, NoPoll).await)
}

/// The attempt a wait's result makes.
pub fn into_attempt(outcome: Result<CallbackOutcome, Failure>) -> crate::task::Attempt {
    match outcome {
        Ok(CallbackOutcome::Success(v)) => crate::task::Attempt::Succeeded(v),
        Ok(CallbackOutcome::Failure(f)) => crate::task::Attempt::Failed(f),
        Err(f) => crate::task::Attempt::TimedOut(f),
    }
}

/// A poll for executions without a store: nothing outside memory.
pub(crate) struct NoPoll;

impl AsyncPoll for NoPoll {
    async fn poll(&mut self) -> Observed {
        Observed::Waiting { beats: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_deterministic_and_distinct() {
        let a = task_token("exec-1", "Ask#1.0");
        assert_eq!(a, task_token("exec-1", "Ask#1.0"));
        assert_ne!(a, task_token("exec-1", "Ask#1.1"));
        assert_ne!(a, task_token("exec-2", "Ask#1.0"));
        assert!(a.starts_with("wfc1-") && a.len() == 69);
    }

    #[test]
    fn sends_need_a_waiting_token() {
        let callbacks = Callbacks::new();
        assert_eq!(callbacks.send_success("t", Value::Null), Err(CallbackError::UnknownToken("t".into())));
        let registration = callbacks.register("t");
        callbacks.send_heartbeat("t").unwrap();
        callbacks.send_success("t", Value::Bool(true)).unwrap();
        assert_eq!(callbacks.send_failure("t", "E", "c"), Err(CallbackError::AlreadyCompleted("t".into())));
        assert_eq!(registration.current().beats, 1);
        drop(registration);
        assert!(matches!(callbacks.send_heartbeat("t"), Err(CallbackError::UnknownToken(_))));
    }
}
