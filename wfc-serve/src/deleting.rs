//! `DeleteStateMachine` as AWS's API reference documents it: "an asynchronous operation. It sets
//! the state machine's status to `DELETING` and begins the deletion process. A state machine is
//! deleted only when all its executions are completed. On the next state transition, the state
//! machine's executions are terminated. [...] For `EXPRESS` state machines, the deletion happens
//! eventually [...]. Running executions may emit logs after DeleteStateMachine API is called."
//!
//! So, on both stores:
//! - a **STANDARD** machine's running executions fail at once with `States.Runtime`, "State
//!   machine NAME has been deleted." (the failure AWS records, per its knowledge center article
//!   on machines stuck in `DELETING`): the execution becomes FAILED with an `ExecutionFailed`
//!   event, and the process running it is fenced out at its next checkpoint, i.e. it makes no
//!   further state transition. (AWS waits for that next transition, so there an execution in a
//!   long Wait keeps the machine `DELETING` until the wait ends; wfc does not wait for it.)
//! - an **EXPRESS** machine's running executions run on to their end; meanwhile the machine is
//!   `DELETING` (the key/value row `serve/machine-deleting/<name>`): DescribeStateMachine says
//!   `status: DELETING`; StartExecution, StartSyncExecution, CreateStateMachine (same name),
//!   UpdateStateMachine, PublishStateMachineVersion and CreateStateMachineAlias answer
//!   `StateMachineDeleting`; DescribeExecution shows the executions as
//!   they are. The first look at the machine after its last execution ended deletes it (its
//!   tombstone, versions and aliases, as a deletion without running executions does at once).

use serde_json::{Map, Value, json};
use wfc_runtime::durable::ExecutionStatus;
use wfc_runtime::{EventType, Failure, HistoryEvent};

use crate::api::Service;
use crate::error::ApiError;
use crate::machines::{Machine, MachineType};

/// The key/value rows of machines being deleted.
const DELETING_PREFIX: &str = "serve/machine-deleting/";

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
        let running = self.running_executions(&machine).await?;
        match machine.machine_type {
            MachineType::Standard => {
                for execution in &running {
                    self.end_for_deletion(execution, &machine.name).await?;
                }
                self.finish_deletion(&machine.name).await?;
            }
            MachineType::Express if running.is_empty() => self.finish_deletion(&machine.name).await?,
            MachineType::Express => {
                let since = jiff::Timestamp::now().as_millisecond();
                self.store.kv_put(&deleting_key(&machine.name), json!({ "since_ms": since })).await?;
            }
        }
        Ok(json!({}))
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
    /// epoch bumped (the process running it is fenced out at its next checkpoint), an
    /// `ExecutionFailed` event, and its activity tasks gone.
    async fn end_for_deletion(&self, execution: &str, machine: &str) -> Result<(), ApiError> {
        let failure = Failure::runtime(deleted_cause(machine));
        self.store.fail_execution(execution, &failure.error, &failure.cause).await?;
        let last = self.store.read_history_page(execution, 0, 1, true).await?.first().map_or(0, |e| e.id);
        let stamp = wfc_runtime::Clock::real().now_rfc3339();
        let event = HistoryEvent {
            id: last + 1,
            previous_event_id: last,
            timestamp: stamp,
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
        self.store.kv_delete(&deleting_key(name)).await?;
        Ok(())
    }
}
