//! `RedriveExecution`: a FAILED, TIMED_OUT or ABORTED Standard execution runs again from the
//! states that did not succeed (the store's `redrive_execution`, the runtime's redrive reruns),
//! and the `redrive*` members of DescribeExecution and ListExecutions.

use serde_json::{Map, Value, json};
use wfc_runtime::durable::{ExecutionRecord, ExecutionStatus, StoreError, not_redrivable};

use crate::api::{Service, opt_str, seconds};
use crate::error::ApiError;
use crate::machines::MachineType;

/// AWS's redrivable period: 14 days from the end of the execution.
const REDRIVABLE_PERIOD_MS: i64 = 14 * 24 * 3600 * 1000;
/// AWS's history limit: a redrive needs room for `ExecutionRedriven` and one more event.
const MAX_HISTORY_EVENTS: u64 = 24_999;
/// Why `record` cannot be redriven now (AWS's `redriveStatusReason`), or `None`.
fn reason(record: &ExecutionRecord, now: i64) -> Option<&'static str> {
    not_redrivable(record.status).or_else(|| {
        (now - record.updated_at_ms > REDRIVABLE_PERIOD_MS).then_some("Execution redrivable period exceeded")
    })
}

/// Whether something that ended at `stopped_ms` is past AWS's redrivable period now (a Map
/// Run's children: `failuresNotRedrivable`).
pub(crate) fn period_exceeded(stopped_ms: i64) -> bool {
    crate::api::now_ms() - stopped_ms > REDRIVABLE_PERIOD_MS
}

/// Adds `redriveCount`, `redriveDate` (once redriven) and, with `status`, `redriveStatus` and
/// `redriveStatusReason` to a DescribeExecution or ListExecutions item.
pub(crate) fn put_redrive(out: &mut Value, record: &ExecutionRecord, status: bool) {
    out["redriveCount"] = json!(record.redrive_count);
    if let Some(date) = record.redrive_date_ms {
        out["redriveDate"] = seconds(date);
    }
    if status {
        match reason(record, crate::api::now_ms()) {
            None => out["redriveStatus"] = json!("REDRIVABLE"),
            Some(why) => {
                out["redriveStatus"] = json!("NOT_REDRIVABLE");
                out["redriveStatusReason"] = json!(why);
            }
        }
    }
}

/// ListExecutions' `redriveFilter`: whether to keep `record`.
pub(crate) fn filter(body: &Map<String, Value>) -> Result<Option<bool>, ApiError> {
    match opt_str(body, "redriveFilter")? {
        None => Ok(None),
        Some("REDRIVEN") => Ok(Some(true)),
        Some("NOT_REDRIVEN") => Ok(Some(false)),
        Some(other) => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{other}' at 'redriveFilter' failed to satisfy constraint: Member must satisfy enum value set: [REDRIVEN, NOT_REDRIVEN]"
        ))),
    }
}

fn not_redrivable_error(arn: &str, why: &str) -> ApiError {
    ApiError::client("ExecutionNotRedrivable", format!("Execution '{arn}' cannot be redriven: {why}"))
}

impl Service {
    pub(crate) async fn redrive_execution(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let token = opt_str(body, "clientToken")?;
        if let Some(t) = token
            && (t.is_empty() || t.len() > 64 || !t.bytes().all(|b| (b'!'..=b'~').contains(&b)))
        {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{t}' at 'clientToken' failed to satisfy constraint: Member must have length between 1 and 64 and match [!-~]+"
            )));
        }
        let (record, arn, machine) = self.record(body).await?;
        if let Some(t) = token
            && let Some(date) = self.redrives.answered(&record.name, t).await?
        {
            return Ok(json!({ "redriveDate": seconds(date) }));
        }
        // EXPRESS executions are not redriven (AWS: only Standard ones).
        if let Some(version) = &record.version_id
            && let Some(m) = self.machines.version(&machine, version).await?
            && m.machine_type == MachineType::Express
        {
            return Err(not_redrivable_error(&arn, "Execution of an EXPRESS state machine cannot be redriven"));
        }
        if let Some(why) = reason(&record, crate::api::now_ms()) {
            return Err(not_redrivable_error(&arn, why));
        }
        // Event ids run from 1 without gaps: the last one's is the count (read by the index).
        let last = self.store.read_history_page(&record.name, 0, 1, true).await?.first().map_or(0, |e| e.id);
        if last >= MAX_HISTORY_EVENTS {
            return Err(not_redrivable_error(&arn, "Execution history event limit exceeded"));
        }
        // Tasks an earlier run left (stopped through the CLI while its server was dead): its
        // redriven Tasks queue new ones.
        self.activities.forget_execution(&record.name).await?;
        let redriven = match self.store.redrive_execution(&record.name).await {
            Ok(r) => r,
            // Another request redrove it (or it changed) meanwhile.
            Err(StoreError::InvalidUpdate { message, .. }) => return Err(not_redrivable_error(&arn, &message)),
            Err(e) => return Err(e.into()),
        };
        debug_assert_eq!(redriven.status, ExecutionStatus::Running);
        let date = redriven.redrive_date_ms.unwrap_or(redriven.updated_at_ms);
        if let Some(t) = token {
            self.redrives.remember(&record.name, t, date).await?;
        }
        Ok(json!({ "redriveDate": seconds(date) }))
    }
}
