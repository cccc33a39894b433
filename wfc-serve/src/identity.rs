//! The executions' own identity: inside an execution the server runs, `$$.Execution.Name` is
//! its Step Functions name, `$$.Execution.Id` its execution ARN, `$$.StateMachine.Id`/`Name`
//! its state machine's ARN and name, and `$$.Execution.RoleArn` the machine's `roleArn`, as on
//! AWS, rather than the store name (`<machine>:<name>`) and the runtime's local ARNs.
//!
//! The worker asks [`Identities::of`] for each execution it runs; the role comes from the
//! version the execution is pinned to, which the worker loads through [`Identities::loader`]
//! first (the role rides in the version's origin, see [`crate::machines`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wfc_runtime::Identity;
use wfc_runtime::durable::{ExecutionRecord, WorkflowVersion};

use crate::arn::Arns;

/// The roles of the versions the worker loaded, and the server's region and account.
#[derive(Debug, Default)]
pub struct Identities {
    arns: Arns,
    roles: Mutex<HashMap<String, String>>,
}

impl Identities {
    /// For a server answering with `arns`.
    pub fn new(arns: Arns) -> Arc<Identities> {
        Arc::new(Identities { arns, roles: Mutex::default() })
    }

    /// The worker's loader ([`crate::machines::load_version`]), noting each version's role.
    pub fn loader(
        self: &Arc<Self>,
    ) -> impl Fn(&WorkflowVersion) -> Result<wfc_ir::Workflow, String> + Send + Sync + 'static {
        let this = Arc::clone(self);
        move |version: &WorkflowVersion| {
            let workflow = crate::machines::load_version(version)?;
            if let Some((_, role)) = crate::machines::metadata(version) {
                this.roles
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(version.version_id.clone(), role);
            }
            Ok(workflow)
        }
    }

    /// The identity of a stored execution: its store name is `<machine>:<name>`
    /// (docs/serve.md). `None` for a name of another shape (not one this server started).
    pub fn of(&self, record: &ExecutionRecord) -> Option<Identity> {
        let (machine, name) = record.name.split_once(':')?;
        let role_arn = record
            .version_id
            .as_ref()
            .and_then(|v| self.roles.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(v).cloned());
        Some(Identity {
            name: name.to_owned(),
            state_machine: machine.to_owned(),
            region: self.arns.region.clone(),
            account: self.arns.account.clone(),
            role_arn,
        })
    }
}
