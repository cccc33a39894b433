//! Map Runs of DISTRIBUTED Map states: `DescribeMapRun`, `ListMapRuns`, `UpdateMapRun`.
//!
//! A Map Run is what its execution's history says of it: `MapRunStarted` (its ARN and, in wfc's
//! details, the limits it started with) and `MapRunSucceeded`/`MapRunFailed`/`MapRunAborted`
//! (the limits and the item and child execution counts it ended with). Nothing else is stored,
//! so Map Runs survive a restart with their execution. A Map Run's ARN names its state machine
//! (`...:mapRun:<machine>/<label>:<id>`), not its execution: `DescribeMapRun` looks through
//! that machine's executions (the newest first) and remembers where it found each run.
//!
//! `UpdateMapRun` changes a running Map Run's `maxConcurrency` and tolerated failures through
//! the runtime ([`wfc_runtime::distributed::update_map_run`]): children not started yet wait for
//! the new limit, and the next child that finishes is checked against the new tolerance. The
//! change lives in the server running the execution: a run resumed after a restart (or on
//! another server sharing the store) starts again from its definition's limits.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use wfc_runtime::durable::{ExecutionRecord, ExecutionStatus};
use wfc_runtime::{EventType, HistoryEvent};

use crate::api::{Service, member, opt_str, page, req_str, seconds};
use crate::error::ApiError;

/// Where each Map Run seen so far is: its execution's store name (a run never moves).
#[derive(Debug, Default)]
pub(crate) struct Found {
    by_arn: Mutex<HashMap<String, String>>,
}

/// One Map Run, as its execution's history tells it.
struct MapRun {
    arn: String,
    started: HistoryEvent,
    ended: Option<HistoryEvent>,
}

fn millis(event: &HistoryEvent) -> i64 {
    event.timestamp.parse::<jiff::Timestamp>().map_or(0, |t| t.as_millisecond())
}

/// The Map Runs of a history, in the order they started.
fn runs(history: &[HistoryEvent]) -> Vec<MapRun> {
    let mut out: Vec<MapRun> = Vec::new();
    for event in history {
        let Some(arn) = event.details.get("mapRunArn").and_then(Value::as_str) else { continue };
        match event.event_type {
            EventType::MapRunStarted => {
                out.push(MapRun { arn: arn.to_owned(), started: event.clone(), ended: None });
            }
            EventType::MapRunSucceeded | EventType::MapRunFailed | EventType::MapRunAborted => {
                // A redriven run records its start again: the last start ends here.
                if let Some(run) = out.iter_mut().rev().find(|r| r.arn == arn) {
                    run.ended = Some(event.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// `arn:aws:states:<region>:<account>:mapRun:<machine>/<label>:<id>`: the machine's name.
fn machine_of(service: &Service, arn: &str) -> Result<String, ApiError> {
    let invalid =
        || ApiError::client("InvalidArn", format!("Invalid Arn: 'Resource type not valid in this context: {arn}'"));
    let prefix = format!("arn:aws:states:{}:{}:mapRun:", service.arns.region, service.arns.account);
    let rest = arn.strip_prefix(&prefix).ok_or_else(invalid)?;
    let (machine, run) = rest.split_once('/').ok_or_else(invalid)?;
    let (label, id) = run.rsplit_once(':').ok_or_else(invalid)?;
    if machine.is_empty() || label.is_empty() || id.is_empty() || arn.len() > 2000 {
        return Err(invalid());
    }
    Ok(machine.to_owned())
}

fn not_found(arn: &str) -> ApiError {
    ApiError::client("ResourceNotFound", format!("Resource not found: '{arn}'"))
}

impl Service {
    /// The execution holding Map Run `arn`, and that run.
    async fn map_run(&self, arn: &str) -> Result<(ExecutionRecord, MapRun), ApiError> {
        let machine = machine_of(self, arn)?;
        let known = self.map_runs.by_arn.lock().unwrap_or_else(|p| p.into_inner()).get(arn).cloned();
        if let Some(name) = known
            && let Some(record) = self.store.describe_execution(&name).await?
        {
            let history = self.store.read_history(&name).await?;
            if let Some(run) = runs(&history).into_iter().rev().find(|r| r.arn == arn) {
                return Ok((record, run));
            }
        }
        // Every execution of the machine, a page at a time, the newest first.
        let mut after: Option<(i64, String)> = None;
        loop {
            let page = self
                .store
                .list_executions_page(Some(&machine), None, None, after.as_ref().map(|(m, n)| (*m, n.as_str())), 200)
                .await?;
            let Some(last) = page.last() else { return Err(not_found(arn)) };
            after = Some((last.created_at_ms, last.name.clone()));
            for record in page {
                let history = self.store.read_history(&record.name).await?;
                let mut found = None;
                for run in runs(&history) {
                    self.map_runs
                        .by_arn
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(run.arn.clone(), record.name.clone());
                    if run.arn == arn {
                        found = Some(run);
                    }
                }
                if let Some(run) = found {
                    return Ok((record, run));
                }
            }
        }
    }

    pub(crate) async fn describe_map_run(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "mapRunArn")?;
        let (record, run) = self.map_run(arn).await?;
        let (machine, name) = record.name.split_once(':').unwrap_or((record.workflow.as_str(), record.name.as_str()));
        // A run with no end event is running, unless its execution has ended (then it was
        // stopped with it).
        let live = wfc_runtime::distributed::map_run_limits(arn);
        let status = match run.ended.as_ref().map(|e| e.event_type) {
            Some(EventType::MapRunSucceeded) => "SUCCEEDED",
            Some(EventType::MapRunFailed) => "FAILED",
            Some(_) => "ABORTED",
            None if record.status == ExecutionStatus::Running => "RUNNING",
            None => "ABORTED",
        };
        let details = run.ended.as_ref().map_or(&run.started.details, |e| &e.details);
        let number = |key: &str| details.get(key).and_then(Value::as_f64);
        let (max_concurrency, percentage, count) = match &live {
            Some(l) => (l.max_concurrency, l.tolerated_failure_percentage, l.tolerated_failure_count),
            None => (
                number("maxConcurrency").map_or(0, |n| n as u64),
                number("toleratedFailurePercentage"),
                number("toleratedFailureCount").map(|n| n as u64),
            ),
        };
        // The counts are recorded when the run ends; while it runs in this server, the runtime
        // counts its children (elsewhere, as after a restart before it resumes, they are zeros).
        let zero = json!({"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "timedOut": 0, "aborted": 0,
            "total": 0, "resultsWritten": 0});
        let live_counts = if run.ended.is_none() { wfc_runtime::distributed::map_run_counts(arn) } else { None };
        let counts = |key: &str| {
            if let Some((items, executions)) = &live_counts {
                return if key == "itemCounts" { items.clone() } else { executions.clone() };
            }
            details.get(key).filter(|v| v.is_object()).cloned().unwrap_or_else(|| zero.clone())
        };
        let mut out = json!({
            "mapRunArn": arn,
            "executionArn": self.arns.execution_arn(machine, name),
            "status": status,
            "startDate": seconds(millis(&run.started)),
            "maxConcurrency": max_concurrency,
            "toleratedFailurePercentage": percentage.unwrap_or(0.0),
            "toleratedFailureCount": count.unwrap_or(0),
            "itemCounts": counts("itemCounts"),
            "executionCounts": counts("executionCounts"),
            "redriveCount": 0,
        });
        match &run.ended {
            Some(end) => out["stopDate"] = seconds(millis(end)),
            None if status == "ABORTED" => out["stopDate"] = seconds(record.updated_at_ms),
            None => {}
        }
        Ok(out)
    }

    /// `ListExecutions` with `mapRunArn`: the Map Run's child executions that finished, from
    /// the parent's journal (each child is a CHAINED_INVOKE operation keeping the child's
    /// document; its name is the run id's first 8 characters and its index), in index order,
    /// with `statusFilter` and paging. A child still running is not listed (its document is
    /// written when it ends).
    pub(crate) async fn list_map_run_executions(
        &self,
        arn: &str,
        body: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let (record, _) = self.map_run(arn).await?;
        let status = opt_str(body, "statusFilter")?;
        let short = arn.rsplit(':').next().and_then(|id| id.get(..8)).unwrap_or_default();
        let child_prefix = format!("{short}-");
        let index = |name: &str| name.strip_prefix(&child_prefix).and_then(|i| i.parse::<u64>().ok());
        let mut children: Vec<(u64, Value)> = self
            .store
            .load_journal(&record.name)
            .await?
            .into_iter()
            .filter(|op| op.subtype == "MapRunChild")
            .filter_map(|op| op.result?.get("document").cloned())
            .filter_map(|doc| Some((index(doc.get("Name")?.as_str()?)?, doc)))
            .filter(|(_, doc)| status.is_none_or(|s| doc.get("Status").and_then(Value::as_str) == Some(s)))
            .collect();
        children.sort_by_key(|(i, _)| *i);
        let (children, next) = page(children, body)?;
        let date = |doc: &Value, key: &str| {
            doc.get(key)
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| seconds(t.as_millisecond()))
        };
        let items: Vec<Value> = children
            .iter()
            .map(|(_, doc)| {
                let mut item = json!({
                    "executionArn": doc["ExecutionArn"],
                    "stateMachineArn": doc["StateMachineArn"],
                    "name": doc["Name"],
                    "status": doc["Status"],
                    "mapRunArn": arn,
                    "itemCount": 1,
                });
                if let Some(start) = date(doc, "StartDate") {
                    item["startDate"] = start;
                }
                if let Some(stop) = date(doc, "StopDate") {
                    item["stopDate"] = stop;
                }
                item
            })
            .collect();
        let mut out = json!({ "executions": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    pub(crate) async fn list_map_runs(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (record, arn, machine) = self.record(body).await?;
        let history = self.store.read_history(&record.name).await?;
        let items: Vec<Value> = runs(&history)
            .into_iter()
            .map(|run| {
                self.map_runs
                    .by_arn
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(run.arn.clone(), record.name.clone());
                let mut item = json!({
                    "executionArn": arn,
                    "mapRunArn": run.arn,
                    "stateMachineArn": self.arns.machine_arn(&machine),
                    "startDate": seconds(millis(&run.started)),
                });
                if let Some(end) = &run.ended {
                    item["stopDate"] = seconds(millis(end));
                }
                item
            })
            .collect();
        let (items, next) = page(items, body)?;
        let mut out = json!({ "mapRuns": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    pub(crate) async fn update_map_run(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "mapRunArn")?;
        let constraint = |name: &str, value: &Value, what: &str| {
            ApiError::validation(format!(
                "1 validation error detected: Value '{value}' at '{name}' failed to satisfy constraint: {what}"
            ))
        };
        let max_concurrency =
            match member(body, "maxConcurrency") {
                None => None,
                Some(v) => Some(v.as_u64().ok_or_else(|| {
                    constraint("maxConcurrency", v, "Member must have value greater than or equal to 0")
                })?),
            };
        let percentage = match member(body, "toleratedFailurePercentage") {
            None => None,
            Some(v) => Some(v.as_f64().filter(|p| (0.0..=100.0).contains(p)).ok_or_else(|| {
                constraint("toleratedFailurePercentage", v, "Member must have value between 0 and 100")
            })?),
        };
        let count = match member(body, "toleratedFailureCount") {
            None => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                constraint("toleratedFailureCount", v, "Member must have value greater than or equal to 0")
            })?),
        };
        if max_concurrency.is_none() && percentage.is_none() && count.is_none() {
            return Err(ApiError::validation(
                "At least one of maxConcurrency, toleratedFailurePercentage or toleratedFailureCount must be given",
            ));
        }
        let (record, run) = self.map_run(arn).await?;
        if run.ended.is_some() || record.status != ExecutionStatus::Running {
            return Err(ApiError::validation(format!(
                "Map Run '{arn}' is not running: only a running Map Run can be updated"
            )));
        }
        match wfc_runtime::distributed::update_map_run(arn, max_concurrency, percentage, count) {
            Some(_) => Ok(json!({})),
            // Running, but not in this server (another server sharing the store runs it, or it
            // has not resumed since a restart).
            None => Err(ApiError::validation(format!(
                "Map Run '{arn}' is not running in this server: update it on the server that runs its execution"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64, event_type: EventType, arn: &str) -> HistoryEvent {
        HistoryEvent {
            id,
            previous_event_id: id - 1,
            timestamp: format!("2024-01-01T00:00:0{id}.000Z"),
            event_type,
            details: json!({ "mapRunArn": arn }).into(),
        }
    }

    #[test]
    fn runs_pair_starts_with_their_ends() {
        let history = vec![
            event(1, EventType::MapRunStarted, "a"),
            event(2, EventType::MapRunStarted, "b"),
            event(3, EventType::MapRunFailed, "a"),
        ];
        let found = runs(&history);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].ended.as_ref().map(|e| e.id), Some(3));
        assert!(found[1].ended.is_none());
        assert_eq!(millis(&found[1].started), 1_704_067_202_000);
    }
}
