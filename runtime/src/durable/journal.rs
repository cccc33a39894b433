//! [`Journal`]: one execution's view of its store while it runs, and the replay rules that
//! [`crate::exec`] applies through it.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::suspend::{Pending, Suspender};
use super::{
    CheckpointToken, Completion, ExecutionRecord, NewExecution, OpStatus, OpType, Operation, OperationUpdate, Store,
    StoreError,
};
use crate::task::{Attempt, StepRequest};
use crate::{Clock, ExecutionResult, Failure};

/// What [`Journal::open`] found.
#[derive(Debug)]
pub enum Opened {
    /// The execution is new or unfinished: run it with this journal attached
    /// ([`crate::RunOptions::with_journal`]); completed operations will be replayed.
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
    /// Held across a checkpoint so concurrent Parallel branches write one batch at a time, each
    /// with the token the previous one returned.
    token: tokio::sync::Mutex<CheckpointToken>,
    /// Replay-only runs (the adapters): park at unrecorded operations instead of running them.
    suspender: Option<Arc<Suspender>>,
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal").field("execution", &self.record.name).field("store", &self.store).finish()
    }
}

fn store_failure(e: StoreError) -> Failure {
    Failure::runtime(format!("the durable store rejected a checkpoint: {e}"))
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
        Journal::open_suspending(store, name, workflow, input, clock, None).await
    }

    /// [`Journal::open`] for a replay-only run: with a `suspender`, the operations its policy
    /// names are parked when they have no recorded outcome (see [`super::suspend`]).
    pub async fn open_suspending(
        store: Arc<dyn Store>,
        name: &str,
        workflow: &str,
        input: &Value,
        clock: &Clock,
        suspender: Option<Arc<Suspender>>,
    ) -> Result<Opened, StoreError> {
        let new = NewExecution {
            name: name.to_owned(),
            workflow: workflow.to_owned(),
            input: input.clone(),
            start_time: clock.now_rfc3339(),
        };
        let claim = store.open_execution(new).await?;
        if claim.record.status != super::ExecutionStatus::Running {
            return Ok(Opened::Finished(Box::new(claim.record)));
        }
        let recorded = claim.operations.into_iter().map(|op| (op.id.clone(), op)).collect();
        Ok(Opened::Running(Arc::new(Journal {
            store,
            record: claim.record,
            existed: claim.existed,
            recorded: Mutex::new(recorded),
            token: tokio::sync::Mutex::new(claim.token),
            suspender,
        })))
    }

    /// The execution name.
    pub fn name(&self) -> &str {
        &self.record.name
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

    /// The recorded operation `id`, if any.
    pub fn recorded(&self, id: &str) -> Option<Operation> {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// Writes `updates` as one atomic checkpoint, then mirrors them in memory.
    pub async fn checkpoint(&self, updates: Vec<OperationUpdate>) -> Result<(), StoreError> {
        let _in_flight = self.suspender.as_ref().map(|s| s.in_flight());
        let mut token = self.token.lock().await;
        *token = self.store.checkpoint(&self.record.name, *token, updates.clone()).await?;
        let mut recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        for u in updates {
            let starts = recorded.get(&u.id).map_or(0, |op| op.starts) + u32::from(u.status == OpStatus::Started);
            let due_at_ms = u.due_at_ms.or_else(|| recorded.get(&u.id).and_then(|op| op.due_at_ms));
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
                },
            );
        }
        Ok(())
    }

    /// Records how the execution ended and its history. A failure here (a stale token) means
    /// another process owns the execution now; the caller reports it.
    pub async fn complete(&self, result: &ExecutionResult) -> Result<(), StoreError> {
        let mut token = self.token.lock().await;
        self.store.append_history(&self.record.name, result.history.clone()).await?;
        let completion = Completion {
            status: result.status.into(),
            output: result.output.clone(),
            error: result.error.as_ref().map(|f| f.error.clone()),
            cause: result.error.as_ref().map(|f| f.cause.clone()),
        };
        *token = self.store.finish(&self.record.name, *token, completion).await?;
        Ok(())
    }

    /// One Task attempt: replayed if its outcome is recorded; otherwise checkpointed as STARTED,
    /// run, and its outcome checkpointed before the state goes on.
    ///
    /// `request` (given when [`Journal::wants_step_requests`]) is what a suspending journal
    /// reports when it parks the attempt instead of running it.
    pub(crate) async fn step<Fut>(
        &self,
        id: String,
        name: &str,
        request: Option<StepRequest>,
        run: Fut,
    ) -> Result<Attempt, Failure>
    where
        Fut: Future<Output = Attempt>,
    {
        let recorded = self.recorded(&id);
        if let Some(op) = recorded.clone() {
            match op.status {
                OpStatus::Succeeded => return Ok(Attempt::Succeeded(op.result.unwrap_or(Value::Null))),
                OpStatus::Failed => {
                    return Ok(Attempt::Failed(Failure::new(
                        op.error.unwrap_or_default(),
                        op.cause.unwrap_or_default(),
                    )));
                }
                OpStatus::TimedOut => {
                    return Ok(Attempt::TimedOut(Failure::new(
                        op.error.unwrap_or_default(),
                        op.cause.unwrap_or_default(),
                    )));
                }
                // In flight when the process stopped (or abandoned): run it again.
                OpStatus::Started | OpStatus::Cancelled => {}
            }
        }
        if let (Some(suspender), Some(request)) = (&self.suspender, request)
            && suspender.policy().steps
        {
            let started = recorded.is_some_and(|op| op.status == OpStatus::Started);
            match suspender.park(Pending::Step { id, name: name.to_owned(), request, started }).await {}
        }
        let update = |status, result, failure: Option<&Failure>| OperationUpdate {
            id: id.clone(),
            op_type: OpType::Step,
            subtype: "Task".into(),
            name: name.to_owned(),
            status,
            result,
            error: failure.map(|f| f.error.clone()),
            cause: failure.map(|f| f.cause.clone()),
            due_at_ms: None,
        };
        self.checkpoint(vec![update(OpStatus::Started, None, None)]).await.map_err(store_failure)?;
        let attempt = {
            let _in_flight = self.suspender.as_ref().map(|s| s.in_flight());
            run.await
        };
        let done = match &attempt {
            Attempt::Succeeded(v) => update(OpStatus::Succeeded, Some(v.clone()), None),
            Attempt::Failed(f) => update(OpStatus::Failed, None, Some(f)),
            Attempt::TimedOut(f) => update(OpStatus::TimedOut, None, Some(f)),
        };
        self.checkpoint(vec![done]).await.map_err(store_failure)?;
        Ok(attempt)
    }

    /// A durable timer (a Wait, or a retry back-off): a fired one is not waited again, a pending
    /// one waits only until its recorded fire-at instant, a new one is checkpointed with its
    /// fire-at instant before it starts waiting.
    pub(crate) async fn sleep(
        &self,
        clock: &Clock,
        id: String,
        name: &str,
        subtype: &str,
        delay: Duration,
    ) -> Result<(), Failure> {
        let update = |status, due_at_ms| OperationUpdate {
            id: id.clone(),
            op_type: OpType::Wait,
            subtype: subtype.to_owned(),
            name: name.to_owned(),
            status,
            result: None,
            error: None,
            cause: None,
            due_at_ms,
        };
        let recorded = self.recorded(&id);
        let parking = self.suspender.as_ref().filter(|s| s.policy().timers);
        let remaining = match &recorded {
            Some(op) if op.status.is_terminal() => return Ok(()),
            Some(op) => match op.due_at_ms.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()) {
                Some(due) => clock.until(due),
                None => delay,
            },
            None => {
                if delay.is_zero() {
                    return Ok(());
                }
                let due = jiff::SignedDuration::try_from(delay)
                    .ok()
                    .and_then(|d| clock.now().checked_add(d).ok())
                    .ok_or_else(|| Failure::runtime("Wait state delay is too long."))?;
                self.checkpoint(vec![update(OpStatus::Started, Some(due.as_millisecond()))])
                    .await
                    .map_err(store_failure)?;
                delay
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
        clock.sleep(remaining).await;
        self.checkpoint(vec![update(OpStatus::Succeeded, None)]).await.map_err(store_failure)
    }
}
