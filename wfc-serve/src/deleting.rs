//! `DeleteStateMachine` as AWS's API reference documents it: "an asynchronous operation. It sets
//! the state machine's status to `DELETING` and begins the deletion process. A state machine is
//! deleted only when all its executions are completed. On the next state transition, the state
//! machine's executions are terminated. [...] For `EXPRESS` state machines, the deletion happens
//! eventually [...]. Running executions may emit logs after DeleteStateMachine API is called."
//!
//! So, on both stores, the machine is `DELETING` while it has running executions (the
//! key/value row `serve/machine-deleting/<name>`): DescribeStateMachine says `status:
//! DELETING`; StartExecution, StartSyncExecution, CreateStateMachine (same name),
//! UpdateStateMachine, PublishStateMachineVersion and CreateStateMachineAlias answer
//! `StateMachineDeleting`; DescribeExecution shows the executions as they are. The first look at
//! the machine after its last execution ended deletes it (its tombstone, versions and aliases,
//! as a deletion without running executions does at once), and so does the end of its last
//! STANDARD execution below.
//! - a **STANDARD** machine's running executions fail at their next state transition (the next
//!   commit of their journal, or their end: `wfc_journal::TransitionGuard`) with
//!   `States.Runtime`, "State machine NAME has been deleted." (the failure AWS records, per its
//!   knowledge center article on machines stuck in `DELETING`): the execution becomes FAILED
//!   with an `ExecutionFailed` event, and the transition is not made (the run is fenced out).
//!   A waiting state's transition is its end: a Wait ends when its time comes, then the
//!   execution fails; a Task waiting on a callback or an activity when it is answered (or times
//!   out). Until then the machine stays `DELETING`. The check at each transition is an
//!   in-memory look-up ([`DeletingMachines`]); the server that takes the deletion sets it, and
//!   the other servers on the store read the rows again when told ([`wfc_runtime::durable::Store::kv_signal`]:
//!   PostgreSQL's NOTIFY, SQLite's signal rows) or every [`DELETING_POLL`] (a store that cannot signal).
//! - an **EXPRESS** machine's running executions run on to their end.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use wfc_runtime::durable::{ExecutionRecord, ExecutionStatus};
use wfc_runtime::{EventType, Failure, HistoryEvent};

use crate::api::Service;
use crate::error::ApiError;
use crate::machines::{Machine, MachineType};

/// The key/value rows of machines being deleted.
const DELETING_PREFIX: &str = "serve/machine-deleting/";

/// The topic of [`wfc_runtime::durable::Store::kv_signal`] telling the other servers that those rows changed.
const DELETING_TOPIC: &str = "serve/machine-deleting";

/// How often a server reads those rows when the store cannot signal: only executions
/// another server on the store holds in memory at the deletion wait for it.
const DELETING_POLL: Duration = Duration::from_secs(1);

/// The STANDARD machines being deleted, as this server knows them: looked up at every state
/// transition of the executions it runs, so in memory.
#[derive(Debug, Default)]
pub(crate) struct DeletingMachines(RwLock<HashSet<String>>);

impl DeletingMachines {
    fn contains(&self, machine: &str) -> bool {
        let names = self.0.read().unwrap_or_else(|p| p.into_inner());
        !names.is_empty() && names.contains(machine)
    }

    fn insert(&self, machine: &str) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).insert(machine.to_owned());
    }

    fn remove(&self, machine: &str) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).remove(machine);
    }

    fn replace(&self, machines: HashSet<String>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = machines;
    }
}

/// Whether a `serve/machine-deleting/` row is a STANDARD machine's (rows written before they
/// said so are EXPRESS machines': STANDARD ones were deleted at once).
fn is_standard_row(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some(MachineType::Standard.as_str())
}

/// The cause of an execution ended by its machine's deletion (AWS's wording).
pub(crate) fn deleted_cause(machine: &str) -> String {
    format!("State machine {machine} has been deleted.")
}

/// Where a machine's deletion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deletion {
    /// Not being deleted.
    None,
    /// `DELETING`: waiting for its running executions to end.
    Deleting,
    /// Its deletion finished just now, as this request looked.
    Deleted,
}

fn deleting_key(machine: &str) -> String {
    format!("{DELETING_PREFIX}{machine}")
}

impl Service {
    pub(crate) async fn delete_state_machine(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = crate::api::req_str(body, "stateMachineArn")?;
        let r = self.arns.state_machine(arn)?;
        // Deleting what does not exist (or is being deleted) succeeds, as on AWS.
        let Some(machine) = self.machines.get(&r.name).await? else { return Ok(json!({})) };
        if self.deleting(&machine.name).await? {
            return Ok(json!({}));
        }
        if self.running_executions(&machine).await?.is_empty() {
            self.finish_deletion(&machine.name).await?;
            return Ok(json!({}));
        }
        let since = jiff::Timestamp::now().as_millisecond();
        let row = json!({ "since_ms": since, "type": machine.machine_type.as_str() });
        self.store.kv_put(&deleting_key(&machine.name), row).await?;
        if machine.machine_type == MachineType::Standard {
            self.deleting_machines.insert(&machine.name);
            crate::tasks::signal(self.store.as_ref(), DELETING_TOPIC).await;
        }
        Ok(json!({}))
    }

    /// The `wfc_journal::TransitionGuard` of the executions this server runs: `None`
    /// unless the execution's machine is a STANDARD one being deleted; then a future that fails
    /// the execution (see the module documentation) and answers whether it did.
    pub(crate) fn deletion_guard(self: &Arc<Self>, record: &ExecutionRecord) -> Option<BoxFuture<'static, bool>> {
        if !self.deleting_machines.contains(&record.workflow)
            || !record.name.starts_with(&format!("{}:", record.workflow))
        {
            return None;
        }
        let (service, execution, machine) = (Arc::clone(self), record.name.clone(), record.workflow.clone());
        Some(Box::pin(async move {
            match service.end_at_transition(&execution, &machine).await {
                Ok(ended) => ended,
                Err(e) => {
                    tracing::warn!(execution, machine, error = %e.message, "cannot end the execution of a machine being deleted; it goes on");
                    false
                }
            }
        }))
    }

    /// Fails `execution` if its machine is still a STANDARD one being deleted (the store's row
    /// says so: the in-memory flag may be stale), and finishes the deletion if it was the last.
    async fn end_at_transition(&self, execution: &str, machine: &str) -> Result<bool, ApiError> {
        let row = self.store.kv_get(&deleting_key(machine)).await?;
        if !row.as_ref().is_some_and(is_standard_row) {
            self.deleting_machines.remove(machine);
            return Ok(false);
        }
        let running =
            self.store.describe_execution(execution).await?.is_some_and(|r| r.status == ExecutionStatus::Running);
        if running {
            self.end_for_deletion(execution, machine).await?;
            tracing::info!(execution, machine, "ended at its transition: its state machine is being deleted");
        }
        self.deletion(machine).await?;
        Ok(true)
    }

    /// Keeps [`DeletingMachines`] as the store's rows say, for deletions taken by other servers
    /// on the store: read at start, then when signalled (PostgreSQL, SQLite; with the fallback poll) or
    /// every [`DELETING_POLL`] (a store that cannot signal). Runs until the server stops.
    pub(crate) async fn watch_deleting_machines(self: Arc<Self>) {
        let mut signals = self.store.kv_signals().await;
        let every = if signals.is_some() { crate::tasks::signalled_poll() } else { DELETING_POLL };
        loop {
            match self.store.kv_list(DELETING_PREFIX).await {
                Ok(rows) => self.deleting_machines.replace(
                    rows.into_iter()
                        .filter(|(_, value)| is_standard_row(value))
                        .filter_map(|(key, _)| key.strip_prefix(DELETING_PREFIX).map(str::to_owned))
                        .collect(),
                ),
                Err(e) => tracing::warn!(error = %e, "cannot read the state machines being deleted"),
            }
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                _ = crate::tasks::next_topic(&mut signals, &[DELETING_TOPIC]) => {}
            }
        }
    }

    /// Whether the machine `name` is `DELETING`: its deletion waits for running executions. One
    /// whose executions have all ended is deleted now (by whichever request looks first), and
    /// is [`Deletion::Deleted`] to the request that looked.
    pub(crate) async fn deletion(&self, name: &str) -> Result<Deletion, ApiError> {
        let key = deleting_key(name);
        if self.store.kv_get(&key).await?.is_none() {
            return Ok(Deletion::None);
        }
        let Some(machine) = self.machines.get(name).await? else {
            self.store.kv_delete(&key).await?;
            self.deleting_machines.remove(name);
            return Ok(Deletion::Deleted);
        };
        if !self.running_executions(&machine).await?.is_empty() {
            return Ok(Deletion::Deleting);
        }
        self.finish_deletion(name).await?;
        Ok(Deletion::Deleted)
    }

    async fn deleting(&self, name: &str) -> Result<bool, ApiError> {
        Ok(self.deletion(name).await? == Deletion::Deleting)
    }

    /// For a request on the machine `name` (by `arn`): `StateMachineDeleting` while it is being
    /// deleted, `StateMachineDoesNotExist` when its deletion just finished; with `created`
    /// (CreateStateMachine), a finished deletion is no obstacle.
    pub(crate) async fn refuse_deleting(&self, name: &str, arn: &str, created: bool) -> Result<(), ApiError> {
        match self.deletion(name).await? {
            Deletion::Deleting => Err(ApiError::client(
                "StateMachineDeleting",
                format!("State machine is being deleted: '{arn}' (it waits for its running executions to end)"),
            )),
            Deletion::Deleted if !created => Err(crate::machines::does_not_exist(arn)),
            _ => Ok(()),
        }
    }

    /// The store names of `machine`'s running executions.
    async fn running_executions(&self, machine: &Machine) -> Result<Vec<String>, ApiError> {
        let prefix = format!("{}:", machine.name);
        Ok(self
            .store
            .list_executions()
            .await?
            .into_iter()
            .filter(|r| r.workflow == machine.name && r.name.starts_with(&prefix))
            .filter(|r| r.status == ExecutionStatus::Running)
            .map(|r| r.name)
            .collect())
    }

    /// Fails the running execution `execution` because its machine was deleted: FAILED, its
    /// epoch bumped (the process running it is fenced out: the transition it was making is
    /// refused), an `ExecutionFailed` event, and its activity tasks gone.
    async fn end_for_deletion(&self, execution: &str, machine: &str) -> Result<(), ApiError> {
        let failure = Failure::runtime(deleted_cause(machine));
        self.store.fail_execution(execution, &failure.error, &failure.cause).await?;
        let last = self.store.read_history_page(execution, 0, 1, true).await?.first().map_or(0, |e| e.id);
        let stamp = wfc_runtime::Clock::real().now_rfc3339();
        let event = HistoryEvent {
            id: last + 1,
            previous_event_id: last,
            timestamp: stamp.into(),
            event_type: EventType::ExecutionFailed,
            details: json!({ "error": failure.error, "cause": failure.cause }).into(),
        };
        self.store.append_history(execution, vec![event]).await?;
        self.activities.forget_execution(execution).await?;
        Ok(())
    }

    /// The deletion itself: a tombstone becomes the machine's current version, and its versions
    /// and aliases go.
    async fn finish_deletion(&self, name: &str) -> Result<(), ApiError> {
        self.machines.delete(name).await?;
        self.forget_aliases(name).await?;
        self.forget_versions(name).await?;
        if self.store.kv_delete(&deleting_key(name)).await? {
            crate::tasks::signal(self.store.as_ref(), DELETING_TOPIC).await;
        }
        self.deleting_machines.remove(name);
        Ok(())
    }
}
