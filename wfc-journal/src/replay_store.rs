//! An in-memory [`Store`] for one replay: it starts from the operations a replay reads from
//! somewhere else (a store's journal for a replay check, `wfc_worker::replay::check`; an SWF history
//! in the `wfc-aws` decider) and keeps what the run checkpoints and how it ends, for the caller to
//! turn into its answer.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use wfc_runtime::durable::{
    CheckpointToken, Claim, Completion, ExecutionRecord, NewExecution, OpStatus, Operation, OperationUpdate, Store,
    StoreError,
};

/// One execution's operations, in memory.
#[derive(Debug)]
pub struct ReplayStore {
    start_time: String,
    /// The events the service delivered (an SWF decider's signals): the event inbox.
    events: Vec<(i64, serde_json::Value)>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    operations: Vec<Operation>,
    checkpoints: Vec<Vec<OperationUpdate>>,
    completion: Option<Completion>,
    seq: i64,
}

impl ReplayStore {
    /// A store holding `operations`, for an execution first started at `start_time`
    /// (`$$.Execution.StartTime`, RFC 3339).
    pub fn new(operations: Vec<Operation>, start_time: impl Into<String>) -> Arc<ReplayStore> {
        ReplayStore::with_events(operations, start_time, Vec::new())
    }

    /// [`ReplayStore::new`] whose event inbox ([`Store::load_events`]) holds `events`
    /// (`(sequence number, CloudEvent)` in delivery order).
    pub fn with_events(
        operations: Vec<Operation>,
        start_time: impl Into<String>,
        events: Vec<(i64, serde_json::Value)>,
    ) -> Arc<ReplayStore> {
        Arc::new(ReplayStore {
            start_time: start_time.into(),
            events,
            inner: Mutex::new(Inner { operations, ..Inner::default() }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How the execution ended, if it did during the run.
    pub fn completion(&self) -> Option<Completion> {
        self.lock().completion.clone()
    }

    /// Every checkpoint batch written during the run, in order.
    pub fn checkpoints(&self) -> Vec<Vec<OperationUpdate>> {
        self.lock().checkpoints.clone()
    }

    fn record(&self, name: &str, input: serde_json::Value, workflow: &str) -> ExecutionRecord {
        ExecutionRecord {
            checkpoint_seq: self.lock().seq,
            ..ExecutionRecord::running(name.to_owned(), workflow.to_owned(), input, self.start_time.clone())
        }
    }
}

impl Store for ReplayStore {
    fn open_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<Claim, StoreError>> {
        let record = self.record(&new.name, new.input, &new.workflow);
        let operations = self.lock().operations.clone();
        let token = CheckpointToken { epoch: 1, seq: record.checkpoint_seq };
        Box::pin(async move { Ok(Claim { record, operations, token, existed: true }) })
    }

    fn load_journal<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, Result<Vec<Operation>, StoreError>> {
        let operations = self.lock().operations.clone();
        Box::pin(async move { Ok(operations) })
    }

    fn checkpoint<'a>(
        &'a self,
        _name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        let mut inner = self.lock();
        for u in &updates {
            let op = Operation {
                id: u.id.clone(),
                op_type: u.op_type,
                subtype: u.subtype.clone(),
                name: u.name.clone(),
                status: u.status,
                starts: u32::from(u.status == OpStatus::Started),
                result: u.result.clone(),
                error: u.error.clone(),
                cause: u.cause.clone(),
                due_at_ms: u.due_at_ms,
                callback_token: u.callback_token.clone(),
                heartbeats: 0,
            };
            match inner.operations.iter_mut().find(|o| o.id == u.id) {
                Some(existing) => *existing = op,
                None => inner.operations.push(op),
            }
        }
        inner.checkpoints.push(updates);
        inner.seq += 1;
        let next = CheckpointToken { epoch: token.epoch, seq: inner.seq };
        Box::pin(async move { Ok(next) })
    }

    fn finish<'a>(
        &'a self,
        _name: &'a str,
        token: CheckpointToken,
        completion: Completion,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        self.lock().completion = Some(completion);
        Box::pin(async move { Ok(token) })
    }

    fn load_operation<'a>(
        &'a self,
        _name: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Operation>, StoreError>> {
        let op = self.lock().operations.iter().find(|op| op.id == id).cloned();
        Box::pin(async move { Ok(op) })
    }

    fn load_events<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, Result<Vec<(i64, serde_json::Value)>, StoreError>> {
        let events = self.events.clone();
        Box::pin(async move { Ok(events) })
    }

    wfc_runtime::replay_store_keeps_no_records!();
}
