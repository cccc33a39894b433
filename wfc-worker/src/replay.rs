//! Replay checks: whether an execution's journal replays cleanly on a definition, without running
//! anything or writing to the store.
//!
//! The definition runs on the interpreter over an in-memory copy of the journal
//! ([`ReplayStore`]): every recorded operation replays its outcome, and every
//! operation with no outcome (a task attempt to run, a timer or a callback or event wait still
//! pending) parks its line of control instead of running or waiting. The journal replays
//! cleanly when
//!
//! - every operation the definition reaches that the journal has is of the same type and state
//!   (else a determinism violation: the first one is the divergence);
//! - every recorded operation is reached (one that is not means the definition takes another
//!   path through the journal: the first such one, in journal order, is the divergence); the
//!   operations inside a finished Parallel branch or Map iteration count as reached with it;
//! - the run does not end in a failure of its own (a changed path or expression failing on a
//!   recorded value; reported first, since it explains the operations it leaves unreached).
//!
//! `wfc executions upgrade` moves an execution to a new version only after this check, and a
//! worker adopts an execution started before versions existed with it (see docs/durable.md).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use wfc_journal::suspend::{Suspender, run_until_suspended};
use wfc_journal::{Journal, Opened, ReplayStore};
use wfc_runtime::durable::{ExecutionRecord, Operation, StoreError};
use wfc_runtime::task::TaskContext;
use wfc_runtime::{Clock, Failure, RunOptions, Status};

/// A clean replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// How many recorded operations the replay reached.
    pub reached: usize,
    /// The operations it stopped at (ids), still to run or to wait for on the new version.
    pub waiting: Vec<String>,
    /// Whether the replay finished the execution (everything it needs is recorded).
    pub finished: bool,
}

/// Where a journal stops fitting a definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Divergence {
    /// The first diverging operation's id, when one is to blame.
    pub operation: Option<String>,
    /// What diverges, naming the operation and its state.
    pub reason: String,
}

/// How long a check may take: it runs nothing and waits for nothing, so only a definition that
/// loops without operations could reach it.
const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// Replays `operations`, the journal of execution `record`, on `workflow` (see the module
/// documentation). Writes nothing anywhere.
pub async fn check(
    workflow: &wfc_ir::Workflow,
    record: &ExecutionRecord,
    operations: &[Operation],
) -> Result<ReplayReport, Divergence> {
    let store = ReplayStore::new(operations.to_vec(), record.start_time.clone());
    let suspender = Suspender::dry_run();
    let now = jiff::Timestamp::now();
    let clock = Clock::virtual_from(now);
    let unusable =
        |e: StoreError| Divergence { operation: None, reason: format!("the journal cannot be replayed: {e}") };
    let opened = Journal::open_suspending(
        store,
        &record.name,
        &workflow.name,
        &record.input,
        &clock,
        Some(Arc::clone(&suspender)),
    )
    .await
    .map_err(unusable)?;
    let Opened::Running(journal) = opened else {
        return Err(Divergence { operation: None, reason: "the replay store reported a finished execution".into() });
    };
    let mut options = RunOptions::virtual_time().with_journal(journal);
    options.clock = clock;
    // Never called: every task attempt without a recorded outcome parks before its handler.
    let handler = |resource: String, _input: Value, _ctx: TaskContext| async move {
        Err::<Value, _>(Failure::runtime(format!("a replay check does not run tasks ({resource})")))
    };
    let run = wfc_interp::run(workflow, &handler, record.input.clone(), options);
    let outcome = tokio::time::timeout(CHECK_LIMIT, run_until_suspended(&suspender, run)).await;
    let observed = suspender.take_dry_run();
    if let Some((operation, reason)) = observed.violation {
        return Err(Divergence { operation: Some(operation), reason });
    }
    let outcome = outcome.map_err(|_| Divergence {
        operation: None,
        reason: format!("the replay did not settle within {} s", CHECK_LIMIT.as_secs()),
    })?;
    let reached = |id: &str| {
        observed.lookups.contains(id)
            || observed.lookups.iter().any(|seen| {
                id.len() > seen.len()
                    && id.starts_with(seen.as_str())
                    && matches!(id.as_bytes()[seen.len()], b'/' | b'.')
            })
    };
    let unreached = operations.iter().find(|op| !reached(&op.id));
    if let Ok(result) = &outcome
        && result.status != Status::Succeeded
    {
        // A failure explains the operations it leaves unreached: it is reported first.
        let failure = result.error.clone().unwrap_or_else(|| Failure::runtime("no error recorded"));
        let before = unreached
            .map(|op| {
                format!(" before the journal's {} operation '{}' of state '{}'", op.op_type.as_str(), op.id, op.name)
            })
            .unwrap_or_default();
        return Err(Divergence {
            operation: unreached.map(|op| op.id.clone()),
            reason: format!(
                "replaying the journal on the new version fails the execution{before}: {}: {}",
                failure.error, failure.cause
            ),
        });
    }
    if let Some(op) = unreached {
        return Err(Divergence {
            operation: Some(op.id.clone()),
            reason: format!(
                "the journal's {} operation '{}' of state '{}' is not reached by the new version (it takes another path)",
                op.op_type.as_str(),
                op.id,
                op.name
            ),
        });
    }
    match outcome {
        Err(pending) => Ok(ReplayReport {
            reached: operations.len(),
            waiting: pending.iter().map(|p| p.id().to_owned()).collect(),
            finished: false,
        }),
        Ok(_) => Ok(ReplayReport { reached: operations.len(), waiting: Vec::new(), finished: true }),
    }
}
