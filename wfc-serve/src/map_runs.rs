//! Map Runs of DISTRIBUTED Map states: `DescribeMapRun`, `ListMapRuns`, `UpdateMapRun`, and
//! `ListExecutions` by `mapRunArn`.
//!
//! A Map Run is what its execution's history says of it: `MapRunStarted` (its ARN and, in wfc's
//! details, the limits it started with), `MapRunRedriven` when a redrive ran it again, and
//! `MapRunSucceeded`/`MapRunFailed`/`MapRunAborted` (the limits and the item and child
//! execution counts it ended with). A Map Run's ARN names its state machine
//! (`...:mapRun:<machine>/<label>:<id>`), not its execution: `DescribeMapRun` looks through
//! that machine's executions (the newest first) and remembers where it found each run.
//!
//! While a run runs, what is not in its history yet comes from the store's key/value table,
//! which the run itself keeps (`wfc_runtime::distributed::limits_key`/`progress_key`): its
//! limits as `UpdateMapRun` set them, its counts and its running children, so every server of
//! the store answers the same, also after a restart. The server running it answers from its
//! memory (the runtime's `distributed::map_run_counts`), which is newer.
//!
//! `UpdateMapRun` writes the limits row, changes the run at once when this server runs it
//! ([`wfc_runtime::distributed::update_map_run`]), and signals; the run, on this server or
//! another (or resumed after a restart), reads the row when the signal reaches it (so a row it
//! read before this write is never the last it applies)
//! (`wfc_runtime::distributed::limits_changed_topic`: PostgreSQL's NOTIFY, SQLite's signal rows),
//! else within `wfc_runtime::distributed::sync_interval()`, or when it starts.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use wfc_runtime::distributed::MapRunLimits;
use wfc_runtime::durable::{ExecutionRecord, ExecutionStatus};
use wfc_runtime::{EventType, HistoryEvent};

use crate::api::{Service, member, opt_str, page, req_str, seconds};
use crate::error::ApiError;

/// Where each Map Run seen so far is: its execution's store name (a run never moves); and per
/// execution read so far, the last event read and its Map Run events, so a later read takes
/// only the events stored since (by the history's index), not the whole history.
#[derive(Debug, Default)]
pub(crate) struct Found {
    by_arn: Mutex<HashMap<String, String>>,
    events: Mutex<HashMap<String, Kept>>,
}

/// What a server keeps of an execution's history: the last event read (`None`: nothing read
/// yet) and the Map Run events up to it.
type Kept = (Option<HistoryEvent>, Vec<HistoryEvent>);

/// Most executions whose Map Run events a server keeps (beyond, it forgets them all and reads
/// again as needed).
const MAX_KEPT_EXECUTIONS: usize = 10_000;

/// Events read per page when catching up with a history.
const EVENT_PAGE: usize = 1_000;

/// One Map Run, as its execution's history tells it.
struct MapRun {
    arn: String,
    started: HistoryEvent,
    ended: Option<HistoryEvent>,
    /// How often it was redriven (`MapRunRedriven`), and when last.
    redrive_count: u64,
    redriven: Option<HistoryEvent>,
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
                out.push(MapRun {
                    arn: arn.to_owned(),
                    started: event.clone(),
                    ended: None,
                    redrive_count: 0,
                    redriven: None,
                });
            }
            // Redriven, it runs again until its next end.
            EventType::MapRunRedriven => {
                if let Some(run) = out.iter_mut().rev().find(|r| r.arn == arn) {
                    run.ended = None;
                    run.redrive_count = event.details.get("redriveCount").and_then(Value::as_u64).unwrap_or(0);
                    run.redriven = Some(event.clone());
                }
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

/// Adds `pendingRedrive` and `failuresNotRedrivable` to an `itemCounts`/`executionCounts`
/// object, as AWS counts them ("Redriving Map Runs", `MapRunExecutionCounts`):
/// `pendingRedrive` are the unsuccessful children of an earlier attempt that a redriven run
/// runs again and that wait for a place under its concurrency limit (what the running run
/// counts, `running`), "reset to 0" when the run completes or is aborted; `failuresNotRedrivable`
/// the failed, timed-out and aborted children whose own redrive is no longer possible: none
/// while the run runs, all of them once the run ended longer ago than the redrivable period
/// (`expired`; a child ends no later than its run), else none.
fn split_unsuccessful(counts: &mut Value, running: bool, expired: bool) {
    let n = |k: &str| counts.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (failed, timed_out, aborted) = (n("failed"), n("timedOut"), n("aborted"));
    let pending = if running { n("pendingRedrive") } else { 0 };
    let not_redrivable = if !running && expired { failed + timed_out + aborted } else { 0 };
    counts["pendingRedrive"] = json!(pending);
    counts["failuresNotRedrivable"] = json!(not_redrivable);
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

/// `kept` (the last event read, and the Map Run events up to it) with the Map Run events
/// stored after it, read by `read_page(after)` ([`EVENT_PAGE`] events after id `after`). The
/// first page starts at the last event read: when the store no longer has that event as it
/// was, the history was rewritten since (a resumed or redriven run whose replay differs, e.g.
/// Parallel branches interleaved otherwise, writes its events from there: docs/durable.md
/// "A resume appends; it does not rewrite"), and it is read again from its start.
async fn catch_up<F, Fut, E>(kept: Kept, mut read_page: F) -> Result<Kept, E>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<HistoryEvent>, E>>,
{
    let (mut last, mut events) = kept;
    // The page after the event before the last one read, whose first event must be that one.
    let mut after = last.as_ref().map_or(0, |e| e.id - 1);
    loop {
        let mut page = read_page(after).await?;
        let full = page.len() == EVENT_PAGE;
        if let Some(seen) = last.as_ref().filter(|e| e.id == after + 1) {
            if page.first() != Some(seen) {
                (last, events, after) = (None, Vec::new(), 0);
                continue;
            }
            page.remove(0);
        }
        for event in page {
            if event.details.get("mapRunArn").is_some() {
                events.push(event.clone());
            }
            after = event.id;
            last = Some(event);
        }
        if !full {
            return Ok((last, events));
        }
    }
}

impl Service {
    /// The Map Run events of execution `name` (store name), in event order: those read before,
    /// then the events stored since, read a page at a time by the history's index.
    async fn map_run_events(&self, name: &str) -> Result<Vec<HistoryEvent>, ApiError> {
        let kept = self.map_runs.events.lock().unwrap_or_else(|p| p.into_inner()).get(name).cloned();
        let (last, events) =
            catch_up(kept.unwrap_or_default(), |after| self.store.read_history_page(name, after, EVENT_PAGE, false))
                .await?;
        let mut all = self.map_runs.events.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= MAX_KEPT_EXECUTIONS && !all.contains_key(name) {
            all.clear();
        }
        all.insert(name.to_owned(), (last, events.clone()));
        Ok(events)
    }

    /// The execution holding Map Run `arn`, and that run.
    async fn map_run(&self, arn: &str) -> Result<(ExecutionRecord, MapRun), ApiError> {
        let machine = machine_of(self, arn)?;
        let known = self.map_runs.by_arn.lock().unwrap_or_else(|p| p.into_inner()).get(arn).cloned();
        if let Some(name) = known
            && let Some(record) = self.store.describe_execution(&name).await?
        {
            let history = self.map_run_events(&name).await?;
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
                let history = self.map_run_events(&record.name).await?;
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

    /// A running Map Run's key/value row `key` (see the module documentation).
    async fn map_run_row(&self, key: String) -> Result<Option<Value>, ApiError> {
        Ok(self.store.kv_get(&key).await?)
    }

    /// The progress row of Map Run `arn`, which runs on another server (or is about to resume):
    /// on a store that signals (PostgreSQL, SQLite), the server running it is asked to write
    /// the row now and answers when it did (`distributed::progress_wanted_topic`), so the
    /// counts read are those of this instant; without an answer within `SYNC_INTERVAL` (no
    /// server runs it now, or the store does not signal), the row as the run last wrote it.
    async fn progress_row(&self, arn: &str) -> Result<Option<Value>, ApiError> {
        use wfc_runtime::distributed as d;
        // Listening before asking, so the answer is not missed.
        let mut signals = self.store.kv_signals().await;
        if signals.is_some() {
            match self.store.kv_signal(&d::progress_wanted_topic(arn)).await {
                Ok(()) => {
                    let answer = d::progress_written_topic(arn);
                    let _ = tokio::time::timeout(d::SYNC_INTERVAL, d::signalled(&mut signals, &answer)).await;
                }
                Err(e) => tracing::warn!(error = %e, arn, "cannot ask for a Map Run's progress"),
            }
        }
        self.map_run_row(d::progress_key(arn)).await
    }

    /// The counts of a Map Run whose execution ended while it ran (no end event): each child
    /// as the parent's journal has it last (its finished CHAINED_INVOKE), the others aborted;
    /// the totals from the run's levels row (`distributed::levels_key`, written when it
    /// started), else the children the journal has. With batches, the items of the finished
    /// children are not kept (their documents do not have their item count): the items are
    /// then counted as aborted but for one per finished child.
    async fn stopped_counts(&self, record: &ExecutionRecord, arn: &str) -> Result<(Value, Value), ApiError> {
        let short = arn.rsplit(':').next().and_then(|id| id.get(..8)).unwrap_or_default();
        let child_prefix = format!("{short}-");
        let mut last: std::collections::BTreeMap<u64, (u32, String)> = Default::default();
        for op in self.store.load_journal(&record.name).await? {
            if op.subtype != "MapRunChild" {
                continue;
            }
            let Some(doc) = op.result.as_ref().and_then(|r| r.get("document")) else { continue };
            let Some(i) =
                doc.get("Name").and_then(Value::as_str).and_then(|n| n.strip_prefix(&child_prefix)?.parse().ok())
            else {
                continue;
            };
            let level = wfc_runtime::distributed::child_level(&op.id);
            let status = doc.get("Status").and_then(Value::as_str).unwrap_or("FAILED").to_owned();
            if last.get(&i).is_none_or(|(l, _)| level >= *l) {
                last.insert(i, (level, status));
            }
        }
        let row = self.map_run_row(wfc_runtime::distributed::levels_key(arn)).await?;
        let total = |k: &str| row.as_ref().and_then(|r| r.get(k)).and_then(Value::as_u64);
        let executions_total = total("executionTotal").unwrap_or(last.len() as u64).max(last.len() as u64);
        let items_total = total("itemTotal").unwrap_or(executions_total);
        let mut counts = json!({"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "timedOut": 0, "aborted": 0,
            "total": executions_total, "resultsWritten": 0});
        for (_, status) in last.values() {
            let key = match status.as_str() {
                "SUCCEEDED" => "succeeded",
                "TIMED_OUT" => "timedOut",
                "ABORTED" => "aborted",
                _ => "failed",
            };
            counts[key] = json!(counts[key].as_u64().unwrap_or(0) + 1);
        }
        counts["aborted"] = json!(counts["aborted"].as_u64().unwrap_or(0) + executions_total - last.len() as u64);
        let mut items = counts.clone();
        if items_total != executions_total {
            // Batched: which items each finished child held is not kept; the rest are aborted.
            let finished: u64 = ["succeeded", "failed", "timedOut"].iter().filter_map(|k| items[k].as_u64()).sum();
            items["total"] = json!(items_total);
            items["aborted"] = json!(items_total.saturating_sub(finished));
        }
        Ok((items, counts))
    }

    /// The limits of a running Map Run: this server's, else the store's row, else those its
    /// history has.
    async fn running_limits(&self, arn: &str, run: &MapRun) -> Result<MapRunLimits, ApiError> {
        if let Some(live) = wfc_runtime::distributed::map_run_limits(arn) {
            return Ok(live);
        }
        if let Some(row) = self.map_run_row(wfc_runtime::distributed::limits_key(arn)).await?
            && let Some(limits) = MapRunLimits::from_json(&row)
        {
            return Ok(limits);
        }
        Ok(recorded_limits(&run.started))
    }

    pub(crate) async fn describe_map_run(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "mapRunArn")?;
        let (record, run) = self.map_run(arn).await?;
        let (machine, name) = record.name.split_once(':').unwrap_or((record.workflow.as_str(), record.name.as_str()));
        // A run with no end event is running, unless its execution has ended (then it was
        // stopped with it).
        let status = match run.ended.as_ref().map(|e| e.event_type) {
            Some(EventType::MapRunSucceeded) => "SUCCEEDED",
            Some(EventType::MapRunFailed) => "FAILED",
            Some(_) => "ABORTED",
            None if record.status == ExecutionStatus::Running => "RUNNING",
            None => "ABORTED",
        };
        let running = status == "RUNNING";
        let limits = match &run.ended {
            Some(end) => recorded_limits(end),
            None if running => self.running_limits(arn, &run).await?,
            None => recorded_limits(&run.started),
        };
        // The counts are recorded when the run ends; while it runs, the server running it
        // counts its children, and the run keeps them in the store for the others.
        let zero = json!({"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "timedOut": 0, "aborted": 0,
            "total": 0, "resultsWritten": 0, "failuresNotRedrivable": 0, "pendingRedrive": 0});
        let counts: (Value, Value) = match &run.ended {
            Some(end) => (object(&end.details, "itemCounts"), object(&end.details, "executionCounts")),
            None if running => match wfc_runtime::distributed::map_run_counts(arn) {
                Some(live) => live,
                None => match self.progress_row(arn).await? {
                    Some(row) => (object(&row, "itemCounts"), object(&row, "executionCounts")),
                    None => (Value::Null, Value::Null),
                },
            },
            None => self.stopped_counts(&record, arn).await?,
        };
        let stopped_ms = match &run.ended {
            Some(end) => Some(millis(end)),
            None if running => None,
            None => Some(record.updated_at_ms),
        };
        let expired = stopped_ms.is_some_and(crate::redrive::period_exceeded);
        let or_zero = |v: Value| {
            let mut v = if v.is_object() { v } else { zero.clone() };
            split_unsuccessful(&mut v, running, expired);
            v
        };
        let mut out = json!({
            "mapRunArn": arn,
            "executionArn": self.arns.execution_arn(machine, name),
            "status": status,
            "startDate": seconds(millis(&run.started)),
            "maxConcurrency": limits.max_concurrency,
            "toleratedFailurePercentage": limits.tolerated_failure_percentage.unwrap_or(0.0),
            "toleratedFailureCount": limits.tolerated_failure_count.unwrap_or(0),
            "itemCounts": or_zero(counts.0),
            "executionCounts": or_zero(counts.1),
            "redriveCount": run.redrive_count,
        });
        if let Some(redriven) = &run.redriven {
            out["redriveDate"] = seconds(millis(redriven));
        }
        match &run.ended {
            Some(end) => out["stopDate"] = seconds(millis(end)),
            None if status == "ABORTED" => out["stopDate"] = seconds(record.updated_at_ms),
            None => {}
        }
        Ok(out)
    }

    /// `ListExecutions` with `mapRunArn`: the Map Run's child executions, in index order, with
    /// `statusFilter` and paging. Those that finished are read from the parent's journal (each
    /// child is a CHAINED_INVOKE operation keeping the child's document; its name is the run
    /// id's first 8 characters and its index; a child a redrive ran again has one operation per
    /// run, `<op>!<level>`, the last one counts); those running, from this server's memory or
    /// the run's row in the store.
    pub(crate) async fn list_map_run_executions(
        &self,
        arn: &str,
        body: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let (record, run) = self.map_run(arn).await?;
        let status = opt_str(body, "statusFilter")?;
        // AWS's statuses; PENDING_REDRIVE (only with mapRunArn): the children a redrive of the
        // run runs again that wait for a place under its concurrency limit.
        if let Some(s) = status
            && !["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"].contains(&s)
        {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{s}' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set: [RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, PENDING_REDRIVE]"
            )));
        }
        let redriven = crate::redrive::filter(body)?;
        let short = arn.rsplit(':').next().and_then(|id| id.get(..8)).unwrap_or_default();
        let child_prefix = format!("{short}-");
        let index =
            |doc: &Value| doc.get("Name")?.as_str()?.strip_prefix(&child_prefix).and_then(|i| i.parse::<u64>().ok());
        // Per child: its latest document, its first start and how often it was redriven.
        struct Child {
            doc: Value,
            level: u32,
            first_start: Option<Value>,
            runs: u64,
        }
        let mut children: std::collections::BTreeMap<u64, Child> = Default::default();
        for op in self.store.load_journal(&record.name).await? {
            if op.subtype != "MapRunChild" {
                continue;
            }
            let Some(doc) = op.result.as_ref().and_then(|r| r.get("document")).cloned() else { continue };
            let Some(i) = index(&doc) else { continue };
            let level = wfc_runtime::distributed::child_level(&op.id);
            let start = doc.get("StartDate").cloned();
            let child = children.entry(i).or_insert(Child { doc: Value::Null, level: 0, first_start: None, runs: 0 });
            child.runs += 1;
            if child.doc.is_null() || level >= child.level {
                child.doc = doc;
                child.level = level;
            }
            if level == 0 || child.first_start.is_none() {
                child.first_start = start;
            }
        }
        if run.ended.is_none() && record.status == ExecutionStatus::Running {
            let local = wfc_runtime::distributed::map_run_running_children(arn)
                .zip(wfc_runtime::distributed::map_run_pending_redrive(arn));
            let (running, pending_redrive) = match local {
                Some(local) => local,
                None => {
                    let row = self.progress_row(arn).await?;
                    let list =
                        |key: &str| row.as_ref().and_then(|r| r.get(key)?.as_array().cloned()).unwrap_or_default();
                    let pending =
                        list("pendingRedrive").iter().filter_map(|i| i.as_u64()).map(|i| i as usize).collect();
                    (list("running"), pending)
                }
            };
            // A child the journal has finished in the run's current level (its redrive count)
            // is not running any more, whatever a row written before says.
            let finished_now = |c: &Child| c.runs > 0 && u64::from(c.level) >= run.redrive_count;
            // Children a redrive runs again, waiting for a place: AWS's PENDING_REDRIVE.
            for i in pending_redrive {
                if let Some(child) = children.get_mut(&(i as u64))
                    && !finished_now(child)
                    && let Some(doc) = child.doc.as_object_mut()
                {
                    doc.insert("Status".into(), json!("PENDING_REDRIVE"));
                    doc.remove("StopDate");
                }
            }
            for doc in running {
                let Some(i) = index(&doc) else { continue };
                let child =
                    children.entry(i).or_insert(Child { doc: Value::Null, level: 0, first_start: None, runs: 0 });
                if finished_now(child) {
                    continue;
                }
                if child.first_start.is_none() {
                    child.first_start = doc.get("StartDate").cloned();
                }
                child.doc = doc;
            }
        }
        // How often a child was redriven: its earlier runs (one more while it runs again).
        let redrives = |c: &Child| c.runs.saturating_sub(1) + u64::from(c.doc["Status"] == "RUNNING" && c.runs > 0);
        let children: Vec<Child> = children
            .into_values()
            .filter(|c| status.is_none_or(|s| c.doc.get("Status").and_then(Value::as_str) == Some(s)))
            .filter(|c| redriven.is_none_or(|wanted| (redrives(c) > 0) == wanted))
            .collect();
        let (children, next) = page(children, body)?;
        let date = |doc: Option<&Value>| {
            doc.and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| seconds(t.as_millisecond()))
        };
        let items: Vec<Value> = children
            .iter()
            .map(|c| {
                let doc = &c.doc;
                let mut item = json!({
                    "executionArn": doc["ExecutionArn"],
                    "stateMachineArn": doc["StateMachineArn"],
                    "name": doc["Name"],
                    "status": doc["Status"],
                    "mapRunArn": arn,
                    // As before this session: a batch's child counts as one (the journal's
                    // documents of finished children do not keep their item count).
                    "itemCount": 1,
                });
                // A rerun child keeps its first start; its redrive is the latest run's start.
                let redrives = redrives(c);
                if let Some(start) = date(c.first_start.as_ref()) {
                    item["startDate"] = start;
                }
                if redrives > 0 {
                    item["redriveCount"] = json!(redrives);
                    if let Some(redriven) = date(doc.get("StartDate")) {
                        item["redriveDate"] = redriven;
                    }
                }
                if let Some(stop) = date(doc.get("StopDate")) {
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
        let history = self.map_run_events(&record.name).await?;
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
                match &run.ended {
                    Some(end) => item["stopDate"] = seconds(millis(end)),
                    // Ended with its execution (stopped, timed out), as DescribeMapRun says.
                    None if record.status != ExecutionStatus::Running => {
                        item["stopDate"] = seconds(record.updated_at_ms)
                    }
                    None => {}
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
        // Kept in the store (the run, on whichever server, reads it). The row holds every limit:
        // a change is written only over the row read, else read and made again, so two updates
        // of different limits at once both land (`registry_doc`'s pattern, with the row's
        // conditional write).
        let key = wfc_runtime::distributed::limits_key(arn);
        let mut written = false;
        for _ in 0..crate::registry_doc::WRITE_ATTEMPTS {
            let row = self.store.kv_get(&key).await?;
            let mut limits = match row.as_ref().and_then(MapRunLimits::from_json) {
                Some(limits) => limits,
                None => self.running_limits(arn, &run).await?,
            };
            if let Some(n) = max_concurrency {
                limits.max_concurrency = n;
            }
            if percentage.is_some() {
                limits.tolerated_failure_percentage = percentage;
            }
            if count.is_some() {
                limits.tolerated_failure_count = count;
            }
            if self.store.kv_replace(&key, row.as_ref(), limits.to_json()).await? {
                written = true;
                break;
            }
        }
        if !written {
            return Err(ApiError::internal(format!(
                "the limits of Map Run '{arn}' were changed by other writers {} times while this request wrote them",
                crate::registry_doc::WRITE_ATTEMPTS
            )));
        }
        // Applied at once here when this server runs it. The server running it is told to read
        // the row now, this one included: its run may have read an older row (another server's
        // update) before this write and apply it after this change, and only a read after this
        // write makes the latest row the one that stays.
        let _ = wfc_runtime::distributed::update_map_run(arn, max_concurrency, percentage, count);
        crate::tasks::signal(self.store.as_ref(), &wfc_runtime::distributed::limits_changed_topic(arn)).await;
        Ok(json!({}))
    }
}

/// The limits an event of a run records (wfc's details of `MapRunStarted` and its end).
fn recorded_limits(event: &HistoryEvent) -> MapRunLimits {
    let number = |key: &str| event.details.get(key).and_then(Value::as_f64);
    MapRunLimits {
        max_concurrency: number("maxConcurrency").map_or(0, |n| n as u64),
        tolerated_failure_percentage: number("toleratedFailurePercentage"),
        tolerated_failure_count: number("toleratedFailureCount").map(|n| n as u64),
    }
}

/// Member `key` of `details` when it is an object, else `null`.
fn object(details: &impl std::ops::Index<&'static str, Output = Value>, key: &'static str) -> Value {
    let v = &details[key];
    if v.is_object() { v.clone() } else { Value::Null }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64, event_type: EventType, arn: &str) -> HistoryEvent {
        HistoryEvent {
            id,
            previous_event_id: id - 1,
            timestamp: format!("2024-01-01T00:00:0{id}.000Z").into(),
            event_type,
            details: json!({ "mapRunArn": arn }).into(),
        }
    }

    /// The Map Run events of a history are read once: a later read asks only for the events
    /// after the last one read (pages of EVENT_PAGE by the index), not the whole history.
    #[test]
    fn map_run_events_are_read_from_where_the_last_read_ended() {
        let mut history: Vec<HistoryEvent> = (1..=2_500)
            .map(|id| {
                let mut e = event(id, EventType::TaskStateEntered, "");
                e.details = json!({ "name": "T" }).into();
                e
            })
            .collect();
        history[9] = event(10, EventType::MapRunStarted, "a");
        history[2_099] = event(2_100, EventType::MapRunSucceeded, "a");
        let block_on = |f| tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f);
        let asked = std::cell::RefCell::new(Vec::new());
        let read = |history: &Vec<HistoryEvent>| {
            let history = history.clone();
            let asked = &asked;
            move |after: u64| {
                asked.borrow_mut().push(after);
                let page: Vec<HistoryEvent> =
                    history.iter().filter(|e| e.id > after).take(EVENT_PAGE).cloned().collect();
                std::future::ready(Ok::<_, ()>(page))
            }
        };
        let kept = block_on(catch_up((None, Vec::new()), read(&history))).unwrap();
        assert_eq!(*asked.borrow(), [0, 1_000, 2_000]);
        assert_eq!(kept.0.as_ref().map(|e| e.id), Some(2_500));
        assert_eq!(kept.1.iter().map(|e| e.id).collect::<Vec<_>>(), [10, 2_100]);
        history.push(event(2_501, EventType::MapRunStarted, "b"));
        asked.borrow_mut().clear();
        // From the last event read (to see it is still there as it was).
        let kept = block_on(catch_up(kept, read(&history))).unwrap();
        assert_eq!(*asked.borrow(), [2_499]);
        assert_eq!(kept.1.iter().map(|e| e.id).collect::<Vec<_>>(), [10, 2_100, 2_501]);
        let found = runs(&kept.1);
        assert_eq!((found.len(), found[0].ended.as_ref().map(|e| e.id)), (2, Some(2_100)));
        // Rewritten from event 2,000 on (a replay that differs there): read again from the start.
        history.truncate(1_999);
        history.push(event(2_000, EventType::MapRunRedriven, "a"));
        history.push(event(2_001, EventType::MapRunSucceeded, "a"));
        asked.borrow_mut().clear();
        let kept = block_on(catch_up(kept, read(&history))).unwrap();
        assert_eq!(*asked.borrow(), [2_500, 0, 1_000, 2_000]);
        assert_eq!(kept.1.iter().map(|e| e.id).collect::<Vec<_>>(), [10, 2_000, 2_001]);
        let found = runs(&kept.1);
        assert!(found[0].redriven.is_some() && found[0].ended.as_ref().map(|e| e.id) == Some(2_001));
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
