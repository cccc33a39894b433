//! A Map Run beyond the memory of the process running it, when its execution is journaled in a
//! store with a key/value table ([`crate::journal::JournalHooks::kv_get`]; wfc's SQLite and PostgreSQL
//! stores):
//!
//! - **Limits** (`UpdateMapRun`): the row [`limits_key`] holds the run's `maxConcurrency` and
//!   tolerated failures when they were changed. The run reads it when it starts (also when it
//!   resumes after a restart, or on another process of the store) and again every
//!   [`sync_interval`] while it runs, so a change written by any process reaches the one
//!   running it; on a store that signals, at once ([`limits_changed_topic`]).
//! - **Progress**: while it runs, the run writes its item and child execution counts and the
//!   documents of its running children to the row [`progress_key`] (at most every
//!   [`SYNC_INTERVAL`], when they changed), so `DescribeMapRun` and `ListExecutions` answer from
//!   any process; the row is deleted when the run ends (its end event has the counts). On a
//!   store that signals ([`crate::journal::JournalHooks::kv_signals`]: PostgreSQL's NOTIFY, SQLite's
//!   signal rows between the processes on one file), a reader that wants
//!   the counts as they are now signals [`progress_wanted_topic`]: the run writes the row at
//!   once and answers with [`progress_written_topic`], so a read through any process is current.
//! - **Redrive**: a redriven execution whose Map Run failed runs only the children that did not
//!   succeed again ([`RedrivePlan`]).
//!
//! Without a journal, or on a store without the table (an adapter's), the run is in memory only.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use super::{MapRunControl, MapRunLimits};
use crate::Execution;

/// How often a running Map Run reads its limits and writes its progress (by default: see
/// [`sync_interval`]); also how long a reader waits for the answer to
/// [`progress_wanted_topic`].
pub const SYNC_INTERVAL: Duration = Duration::from_millis(400);

/// How often a running Map Run reads its limits and writes its progress: [`SYNC_INTERVAL`], or
/// `WFC_MAP_RUN_SYNC_MS` milliseconds (the tests make it an hour, so that what another process
/// asks or changes can reach the run only through the store's signals).
pub fn sync_interval() -> Duration {
    static INTERVAL: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *INTERVAL.get_or_init(|| {
        std::env::var("WFC_MAP_RUN_SYNC_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(SYNC_INTERVAL, Duration::from_millis)
    })
}

/// The topic with which a process that changed Map Run `arn`'s [`limits_key`] row
/// (`UpdateMapRun`) tells the process running it to read the row now.
pub fn limits_changed_topic(arn: &str) -> String {
    format!("wfc/map-run/limits-changed/{arn}")
}

/// The topic ([`crate::durable::Store::kv_signal`]) asking the process running Map Run `arn`
/// to write its progress row now.
pub fn progress_wanted_topic(arn: &str) -> String {
    format!("wfc/map-run/progress-wanted/{arn}")
}

/// The topic with which the process running Map Run `arn` says it wrote its progress row as
/// [`progress_wanted_topic`] asked.
pub fn progress_written_topic(arn: &str) -> String {
    format!("wfc/map-run/progress-written/{arn}")
}

/// Waits for `topic` on `signals` (returns at once when topics were missed: it may have been
/// one); never returns when the store does not signal.
#[cfg(feature = "durable")]
pub async fn signalled(signals: &mut Option<tokio::sync::broadcast::Receiver<String>>, topic: &str) {
    signalled_any(signals, &[topic]).await;
}

/// Waits for one of `topics` on `signals`: `Some(topic)`, or `None` when topics were missed (it
/// may have been any of them); never returns when the store does not signal.
#[cfg(feature = "durable")]
async fn signalled_any(
    signals: &mut Option<tokio::sync::broadcast::Receiver<String>>,
    topics: &[&str],
) -> Option<String> {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let Some(receiver) = signals.as_mut() else { return std::future::pending().await };
        match receiver.recv().await {
            Ok(t) if topics.contains(&t.as_str()) => return Some(t),
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => return None,
            Err(RecvError::Closed) => *signals = None,
        }
    }
}

/// Most running children the progress row lists (in item order): a run of up to 10,000
/// children at once would otherwise rewrite megabytes every [`SYNC_INTERVAL`].
pub const MAX_LISTED_RUNNING: usize = 1_000;

/// The key/value row of Map Run `arn`'s limits as `UpdateMapRun` set them last
/// (`{"maxConcurrency", "toleratedFailurePercentage", "toleratedFailureCount"}`).
pub fn limits_key(arn: &str) -> String {
    format!("wfc/map-run/limits/{arn}")
}

/// The key/value row of Map Run `arn`'s redrive levels and size: `{"starts": [0, 1],
/// "itemTotal", "executionTotal"}`, `starts` being the execution's redrive count when each
/// level started (level 0 in the first run, level 1 after the first redrive). How each level
/// that ended by itself ended is journaled ([`LevelEnd`]; rows written before that keep it in
/// `"ends": [{"exceeded", "limits"}, ...]`, still read). A level that started before the
/// execution's last redrive and did not exceed its tolerance was ended by its execution's end
/// (stopped, timed out, or failed elsewhere): a redrive runs its unsuccessful children again in
/// the next level, as AWS's Map Run redrive does.
pub fn levels_key(arn: &str) -> String {
    format!("wfc/map-run/levels/{arn}")
}

/// The key/value row of running Map Run `arn`'s progress: `{"itemCounts", "executionCounts",
/// "running": [child execution documents], "pendingRedrive": [child indexes]}`.
pub fn progress_key(arn: &str) -> String {
    format!("wfc/map-run/progress/{arn}")
}

/// How a level of a Map Run ended by itself, journaled as the STEP [`end_op`] (subtype
/// `MapRunEnd`) before the run goes on from it: whether its children's failures exceeded its
/// tolerance, the limits it ended with (an `UpdateMapRun` while it ran may have changed them),
/// and, when it stopped at its tolerance, the children it had counted then (the others were
/// aborted or never started). A resume after the process stopped replays the level as it ended
/// (its counted children only, its limits, its outcome), and a redrive judges the level by it,
/// whatever the tolerance is then.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LevelEnd {
    /// Whether the children's failures exceeded the tolerance.
    pub(crate) exceeded: bool,
    /// The limits the level ended with.
    pub(crate) limits: MapRunLimits,
    /// The children counted when it ended, as `[first, last]` index ranges in order; `None`:
    /// every child.
    pub(crate) counted: Option<Vec<(usize, usize)>>,
}

impl LevelEnd {
    /// The end of a level whose counted children are `counted` (every child when it did not
    /// stop at its tolerance).
    #[cfg(feature = "durable")]
    fn new(exceeded: bool, limits: MapRunLimits, mut counted: Vec<usize>) -> LevelEnd {
        let counted = exceeded.then(|| {
            counted.sort_unstable();
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            for i in counted {
                match ranges.last_mut() {
                    Some((_, last)) if *last + 1 == i => *last = i,
                    _ => ranges.push((i, i)),
                }
            }
            ranges
        });
        LevelEnd { exceeded, limits, counted }
    }

    /// Whether child `index` was counted when the level ended.
    pub(crate) fn counted(&self, index: usize) -> bool {
        self.counted.as_ref().is_none_or(|ranges| ranges.iter().any(|&(first, last)| (first..=last).contains(&index)))
    }

    /// The journaled result.
    #[cfg(feature = "durable")]
    pub(crate) fn to_json(&self) -> Value {
        let mut end = json!({ "exceeded": self.exceeded, "limits": self.limits.to_json() });
        if let Some(ranges) = &self.counted {
            end["counted"] = json!(ranges.iter().map(|&(a, b)| [a, b]).collect::<Vec<_>>());
        }
        end
    }

    /// The end a journaled result (or an `"ends"` entry of an older levels row, which has no
    /// `counted`) holds; `None` when it is not one.
    #[cfg(feature = "durable")]
    pub(crate) fn from_json(value: &Value) -> Option<LevelEnd> {
        let counted = match value.get("counted") {
            None | Some(Value::Null) => None,
            Some(ranges) => Some(serde_json::from_value::<Vec<(usize, usize)>>(ranges.clone()).ok()?),
        };
        Some(LevelEnd {
            exceeded: value.get("exceeded")?.as_bool()?,
            limits: MapRunLimits::from_json(value.get("limits")?)?,
            counted,
        })
    }
}

/// The journal operation recording how level `level` of the Map Run whose children's
/// operations are under `prefix` ended ([`LevelEnd`]).
#[cfg(feature = "durable")]
pub(crate) fn end_op(prefix: &str, level: u32) -> String {
    match level {
        0 => format!("{prefix}.end"),
        l => format!("{prefix}.end!{l}"),
    }
}

impl MapRunLimits {
    /// The row [`limits_key`] holds.
    pub fn to_json(&self) -> Value {
        json!({
            "maxConcurrency": self.max_concurrency,
            "toleratedFailurePercentage": self.tolerated_failure_percentage,
            "toleratedFailureCount": self.tolerated_failure_count,
        })
    }

    /// The limits a [`limits_key`] row holds (`None` when it is not such a row).
    pub fn from_json(value: &Value) -> Option<MapRunLimits> {
        Some(MapRunLimits {
            max_concurrency: value.get("maxConcurrency")?.as_u64()?,
            tolerated_failure_percentage: value.get("toleratedFailurePercentage").and_then(Value::as_f64),
            tolerated_failure_count: value.get("toleratedFailureCount").and_then(Value::as_u64),
        })
    }
}

/// A child's execution document while it runs (`ListExecutions` of its Map Run).
pub(super) fn running_document(child: &Execution, items: usize) -> Value {
    json!({
        "ExecutionArn": child.id(),
        "Name": child.name(),
        "StartDate": child.start_time(),
        "StateMachineArn": child.state_machine_id(),
        "Status": "RUNNING",
        "ItemCount": items,
    })
}

impl MapRunControl {
    /// The item and child execution counts now: `running` are the children holding a place,
    /// `pending` those neither running nor finished.
    pub(super) fn counts_now(&self) -> (Value, Value) {
        let (executions_running, items_running) = *self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let (mut items, mut executions) = *self.progress.lock().unwrap_or_else(|p| p.into_inner());
        for (c, running) in [(&mut items, items_running), (&mut executions, executions_running as u64)] {
            c.running = running;
            c.pending = c.total.saturating_sub(c.succeeded + c.failed + c.timed_out + c.aborted + running);
        }
        let (mut items, mut executions) = (items.json(), executions.json());
        // Of the pending ones, those a redrive runs again (AWS's `pendingRedrive`).
        let waiting = self.pending_redrive.lock().unwrap_or_else(|p| p.into_inner());
        items["pendingRedrive"] = json!(waiting.values().sum::<u64>());
        executions["pendingRedrive"] = json!(waiting.len());
        (items, executions)
    }

    /// Sets the limits (an `UpdateMapRun`, possibly made on another server, read from the store).
    #[cfg(feature = "durable")]
    fn apply(&self, limits: &MapRunLimits) {
        if self.ended.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        self.set_limits(limits);
    }

    /// Sets the limits, ended or not.
    #[cfg(feature = "durable")]
    fn set_limits(&self, limits: &MapRunLimits) {
        if self.max_concurrency.swap(limits.max_concurrency, std::sync::atomic::Ordering::SeqCst)
            != limits.max_concurrency
        {
            self.freed.notify_waiters();
        }
        let mut tolerance = self.tolerance.lock().unwrap_or_else(|p| p.into_inner());
        tolerance.percentage = limits.tolerated_failure_percentage;
        tolerance.count = limits.tolerated_failure_count;
    }

    /// The row [`progress_key`] holds (the first [`MAX_LISTED_RUNNING`] running children).
    #[cfg(feature = "durable")]
    fn snapshot(&self) -> Value {
        let (items, executions) = self.counts_now();
        let running: Vec<Value> = self
            .running_children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .take(MAX_LISTED_RUNNING)
            .cloned()
            .collect();
        let pending_redrive: Vec<usize> =
            self.pending_redrive.lock().unwrap_or_else(|p| p.into_inner()).keys().copied().collect();
        json!({ "itemCounts": items, "executionCounts": executions, "running": running, "pendingRedrive": pending_redrive })
    }
}

/// Runs `work` (the run's children) with Map Run `arn`'s limits and progress kept in the
/// execution's store (see the module documentation).
pub(super) async fn synced<T>(
    exec: &Execution,
    arn: &str,
    control: &MapRunControl,
    work: impl Future<Output = T>,
) -> T {
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        // The key/value rows of the journal's store.
        let store = std::sync::Arc::clone(journal);
        let limits = limits_key(arn);
        match store.kv_get(&limits).await {
            // No key/value table (an adapter's store): in memory only.
            Err(_) => return work.await,
            Ok(row) => {
                if let Some(l) = row.as_ref().and_then(MapRunLimits::from_json) {
                    control.apply(&l);
                }
            }
        }
        let progress = progress_key(arn);
        // Whether a progress row was written (a run shorter than one interval writes none).
        let wrote = std::sync::atomic::AtomicBool::new(false);
        // A reader on another process asks for the progress as it is now, and one that
        // changed the limits says so (see the module documentation); without signals (an
        // adapter's store), the row is written and the limits read every interval only.
        let mut signals = store.kv_signals().await;
        let (wanted, answer) = (progress_wanted_topic(arn), progress_written_topic(arn));
        let changed = limits_changed_topic(arn);
        let refresh = async {
            let mut written: Option<Value> = None;
            let mut tick = tokio::time::interval(sync_interval());
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            let topics = [wanted.as_str(), changed.as_str()];
            loop {
                // (asked for the progress, the limits may have changed)
                let (asked, limits_changed) = tokio::select! {
                    _ = tick.tick() => (false, true),
                    topic = signalled_any(&mut signals, &topics) => match topic {
                        Some(t) if t == wanted => (true, false),
                        Some(_) => (false, true),
                        None => (true, true), // missed topics: maybe both
                    },
                };
                if limits_changed
                    && let Ok(Some(row)) = store.kv_get(&limits).await
                    && let Some(l) = MapRunLimits::from_json(&row)
                    && l != control.limits()
                {
                    control.apply(&l);
                }
                let now = control.snapshot();
                if written.as_ref() != Some(&now) && store.kv_put(&progress, now.clone()).await.is_ok() {
                    written = Some(now);
                    wrote.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                if asked && let Err(e) = store.kv_signal(&answer).await {
                    tracing::warn!(error = %e, arn, "cannot signal that a Map Run's progress was written");
                }
            }
        };
        futures::pin_mut!(work, refresh);
        let out = match futures::future::select(work, refresh).await {
            futures::future::Either::Left((out, _)) => out,
            futures::future::Either::Right(((), work)) => work.await,
        };
        // Best effort: a row left behind is read only while the execution is RUNNING without
        // this run's end event.
        if wrote.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = store.kv_delete(&progress).await;
        }
        return out;
    }
    let _ = (exec, arn, control);
    work.await
}

/// How a redriven execution runs the children of a DISTRIBUTED Map Run whose failure (its
/// tolerance exceeded) ended the execution before, or that was running when the execution
/// ended otherwise (stopped, timed out; see [`levels_key`]) (AWS's Map Run redrive): the children that
/// succeeded replay their results, the others (failed, timed out, aborted, never started) run
/// again, each as a new CHAINED_INVOKE operation of the run's *redrive level* (child `i` of
/// level `L` > 0 is `<prefix>/<i>!<L>`) whose child execution keeps its operations under
/// `<prefix>/<i>/`, so a rerun child replays what succeeded in it and runs its failed Task again
/// (as a redriven execution does). Level `L` is the run after `L` redrives of the Map Run: a
/// level whose children, as the journal has them, exceed the tolerance failed and was redriven
/// (while the execution's redrive count allows). The history records, for each such level, the
/// run's failure as it ended then (`MapRunFailed`, `MapStateFailed`, `ExecutionFailed`), the
/// `ExecutionRedriven` and AWS's `MapRunRedriven` (`redriveCount`: the level).
#[derive(Debug, Default)]
pub(super) struct RedrivePlan {
    /// The operation each child runs as (empty when the run is not redriven).
    ops: Vec<String>,
    /// The children this level runs again after they ended unsuccessfully in an earlier one
    /// (AWS's `pendingRedrive` until each gets a place under the concurrency limit).
    reruns: Vec<usize>,
    /// The operation journaling this run's level's end ([`end_op`]; `None`: no journal).
    #[cfg(feature = "durable")]
    end_op: Option<String>,
    /// This level's end as journaled, when it had ended before this run (a resume).
    ended: Option<LevelEnd>,
}

impl RedrivePlan {
    /// The plan of the children (of `sizes` items each) of the attempt whose operations are
    /// under `prefix`, when [`Execution::reopen_map_run_for_redrive`] marked it (and records the
    /// redrive's events); else an empty plan.
    /// The levels' starts are kept in the row [`levels_key`] (this run's level is added when
    /// it starts), their ends in the journal ([`RedrivePlan::record_end`]); a level whose end is
    /// journaled already (a resume) gets the limits it ended with.
    pub(super) async fn make(
        exec: &Execution,
        name: &str,
        arn: &str,
        prefix: Option<&str>,
        sizes: &[usize],
        control: &MapRunControl,
        has_result_writer: bool,
    ) -> Result<RedrivePlan, crate::Failure> {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(prefix)) = (exec.journal(), prefix) {
            let key = levels_key(arn);
            // `None`: no key/value table (an adapter's store).
            let row: Option<Value> = journal.kv_get(&key).await.ok().map(|row| row.unwrap_or_else(|| json!({})));
            let starts: Option<Vec<u32>> = row
                .as_ref()
                .map(|r| r.get("starts").and_then(|s| serde_json::from_value(s.clone()).ok()).unwrap_or_default());
            let ends: Vec<Value> = row.as_ref().and_then(|r| r.get("ends")?.as_array().cloned()).unwrap_or_default();
            let (mut plan, level) = if journal.is_reopened(prefix) {
                plan(exec, &**journal, name, arn, prefix, sizes, control, has_result_writer, starts.as_deref(), &ends)?
            } else {
                (RedrivePlan::default(), 0)
            };
            let end = end_op(prefix, level);
            plan.ended = journal
                .recorded(&end)
                .filter(|op| op.status.is_terminal())
                .and_then(|op| LevelEnd::from_json(op.result.as_ref()?));
            if let Some(ended) = &plan.ended {
                control.set_limits(&ended.limits);
                control.ended.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            plan.end_op = Some(end);
            if let (Some(mut row), Some(mut starts)) = (row, starts) {
                if starts.len() <= level as usize {
                    starts.resize(level as usize + 1, journal.redrive_count());
                    row["starts"] = json!(starts);
                    row["itemTotal"] = json!(sizes.iter().sum::<usize>());
                    row["executionTotal"] = json!(sizes.len());
                    journal.kv_put(&key, row).await.map_err(|e| {
                        crate::Failure::new(
                            "States.Runtime",
                            format!("cannot record the start of Map Run {arn}'s redrive level {level}: {e}"),
                        )
                    })?;
                }
            }
            return Ok(plan);
        }
        let _ = (exec, name, arn, prefix, sizes, control, has_result_writer);
        Ok(RedrivePlan::default())
    }

    /// Journals how this run's level ended by itself ([`LevelEnd`]: `exceeded`, the limits
    /// `control` has, the children `counted`) before the run goes on from it, unless it was
    /// journaled before (a resume replays it); from then on the run's limits change no more.
    /// A store that cannot record it fails the run, as a checkpoint that cannot be written does.
    pub(super) async fn record_end(
        &self,
        exec: &Execution,
        name: &str,
        control: &MapRunControl,
        exceeded: bool,
        counted: Vec<usize>,
    ) -> Result<(), crate::Failure> {
        control.ended.store(true, std::sync::atomic::Ordering::SeqCst);
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id), None) = (exec.journal(), &self.end_op, &self.ended) {
            let end = LevelEnd::new(exceeded, control.limits(), counted);
            journal.record_step(id.clone(), exec.op_parent(), name, "MapRunEnd", end.to_json()).await?;
        }
        #[cfg(not(feature = "durable"))]
        let _ = (exec, name, exceeded, counted);
        Ok(())
    }

    /// This level's end as journaled before this run, if it had ended (see [`LevelEnd`]).
    pub(super) fn ended(&self) -> Option<&LevelEnd> {
        self.ended.as_ref()
    }

    /// The operation child `index` runs as: `op` unless the plan says otherwise.
    pub(super) fn run_op(&self, index: usize, op: Option<String>) -> Option<String> {
        self.ops.get(index).cloned().or(op)
    }

    /// The children run again after an unsuccessful end in an earlier level.
    pub(super) fn reruns(&self) -> &[usize] {
        &self.reruns
    }
}

/// The operation of child `index` at redrive level `level`.
#[cfg(feature = "durable")]
fn op_at(prefix: &str, index: usize, level: u32) -> String {
    match level {
        0 => format!("{prefix}/{index}"),
        l => format!("{prefix}/{index}!{l}"),
    }
}

/// The redrive level of a Map Run child's operation id (`...!<level>`, else 0).
pub fn child_level(op_id: &str) -> u32 {
    let last = op_id.rsplit('/').next().unwrap_or(op_id);
    last.split_once('!').and_then(|(_, l)| l.parse().ok()).unwrap_or(0)
}

#[cfg(feature = "durable")]
#[allow(clippy::too_many_arguments)] // the pieces of `RedrivePlan::make`
fn plan(
    exec: &Execution,
    journal: &dyn crate::journal::JournalHooks,
    name: &str,
    arn: &str,
    prefix: &str,
    sizes: &[usize],
    control: &MapRunControl,
    writes_results: bool,
    starts: Option<&[u32]>,
    ends: &[Value],
) -> Result<(RedrivePlan, u32), crate::Failure> {
    use super::Counts;
    use crate::EventType;
    let redrives = journal.redrive_count();
    let total_items: u64 = sizes.iter().map(|s| *s as u64).sum();
    // How level `level` ended by itself: journaled, else in an older levels row.
    let level_end = |level: u32| -> Option<LevelEnd> {
        journal
            .recorded(&end_op(prefix, level))
            .filter(|op| op.status.is_terminal())
            .and_then(|op| LevelEnd::from_json(op.result.as_ref()?))
            .or_else(|| ends.get(level as usize).and_then(LevelEnd::from_json))
    };
    // How child `index` had ended as of `level`: the level of its last finished operation, and
    // the child's status.
    let end = |index: usize, level: u32| -> Option<(u32, String)> {
        (0..=level).rev().find_map(|l| {
            let op = journal.recorded(&op_at(prefix, index, l)).filter(|op| op.status.is_terminal())?;
            let kept = op.result.as_ref();
            let status = if kept.and_then(|k| k.get("succeeded")) == Some(&Value::Bool(true)) {
                "SUCCEEDED".to_owned()
            } else {
                kept.and_then(|k| k.pointer("/document/Status")).and_then(Value::as_str).unwrap_or("FAILED").to_owned()
            };
            Some((l, status))
        })
    };
    // Each level that ended before this run: its counts, and whether the execution's end (not
    // its tolerance) ended it.
    let mut failed_levels: Vec<((Counts, Counts), bool, MapRunLimits)> = Vec::new();
    let mut level = 0u32;
    while level < redrives {
        let mut counts = (Counts::default(), Counts::default());
        counts.0.total = total_items;
        counts.1.total = sizes.len() as u64;
        let mut failed_items = 0u64;
        let level_ended = level_end(level);
        for (index, size) in sizes.iter().enumerate() {
            let size = *size as u64;
            // A child the level did not count when it ended was aborted then.
            let status =
                end(index, level).map(|(_, s)| s).filter(|_| level_ended.as_ref().is_none_or(|e| e.counted(index)));
            let (items, executions) = (&mut counts.0, &mut counts.1);
            let (item_slot, execution_slot) = match status.as_deref() {
                None | Some("ABORTED") => (&mut items.aborted, &mut executions.aborted),
                Some("SUCCEEDED") => (&mut items.succeeded, &mut executions.succeeded),
                Some("TIMED_OUT") => (&mut items.timed_out, &mut executions.timed_out),
                Some(_) => (&mut items.failed, &mut executions.failed),
            };
            *item_slot += size;
            *execution_slot += 1;
            if status.as_deref().is_some_and(|s| s != "SUCCEEDED") {
                failed_items += size;
            }
            if writes_results && status.is_some() {
                counts.0.results_written += size;
                counts.1.results_written += 1;
            }
        }
        // Within its tolerance, the run at this level did not fail: it is the one to go on with,
        // unless it started before the execution's last redrive (the execution ended while it
        // ran: stopped, timed out, or failed elsewhere).
        // Judged as it ended (its end recorded in the levels row), else by the tolerance now.
        // A level that started before the execution's last redrive and did not exceed its
        // tolerance was ended by its execution (stopped, timed out, or failed elsewhere): its
        // end may have been recorded in a race with a stop, so the record does not say that
        // its Map state exited.
        let exceeded = match &level_ended {
            Some(e) => e.exceeded,
            None => control.exceeded(failed_items, total_items),
        };
        let stopped = starts.and_then(|s| s.get(level as usize)).is_some_and(|&started| started < redrives);
        if !exceeded && !stopped {
            break;
        }
        let limits = level_ended.map_or_else(|| control.limits(), |e| e.limits);
        failed_levels.push((counts, !exceeded, limits));
        level += 1;
    }
    if level == 0 {
        return Ok((RedrivePlan::default(), 0));
    }
    // AWS's hard limit on a Map Run's redrives: the redrive past it is not a Map Run redrive
    // (no `MapRunRedriven`) but the Map state's `States.Runtime`.
    let most = exec.limits().max_map_run_redrives;
    // How each failed level ended, and its redrive (the execution was redriven once per level,
    // the last time by this run's redrive).
    let failure = super::threshold_exceeded();
    for (k, (counts, stopped, limits)) in failed_levels.iter().enumerate() {
        if *stopped {
            // Its end (`ExecutionAborted`, `ExecutionTimedOut`...) and the `ExecutionRedriven`
            // are in the stored history already, written by the stop and the redrive.
            exec.unmute_for_redrive();
            if k < most as usize {
                exec.record(EventType::MapRunRedriven, json!({ "mapRunArn": arn, "redriveCount": k + 1 }));
            }
            continue;
        }
        let mut details = json!({
            "mapRunArn": arn,
            "maxConcurrency": limits.max_concurrency,
            "toleratedFailurePercentage": limits.tolerated_failure_percentage,
            "toleratedFailureCount": limits.tolerated_failure_count,
        });
        details["itemCounts"] = counts.0.json();
        details["executionCounts"] = counts.1.json();
        details["error"] = json!(failure.error);
        details["cause"] = json!(failure.cause);
        exec.record(EventType::MapRunFailed, details);
        exec.record(EventType::MapStateFailed, json!({ "name": name }));
        exec.record(EventType::ExecutionFailed, crate::exec::failure_details(&failure));
        // The redrive that started the next level as recorded, else one redrive per level.
        let execution_redrive = starts.and_then(|s| s.get(k + 1).copied()).unwrap_or(redrives - level + k as u32 + 1);
        exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": execution_redrive }));
        // Under an attempt a redrive reopened, the events up to here were its own (muted here).
        exec.unmute_for_redrive();
        if k < most as usize {
            exec.record(EventType::MapRunRedriven, json!({ "mapRunArn": arn, "redriveCount": k + 1 }));
        }
    }
    if level > most {
        return Err(crate::Failure::new(
            "States.Runtime",
            format!("The Map Run {arn} cannot be redriven again: it reached the limit of {most} redrives of a Map Run"),
        ));
    }
    let mut reruns = Vec::new();
    let ops = (0..sizes.len())
        .map(|index| match end(index, level) {
            Some((l, status)) if status == "SUCCEEDED" => op_at(prefix, index, l),
            Some((l, _)) if l < level => {
                // Rerun: a Parallel or Map inside it that failed may reopen (see
                // `Execution::reopen_for_redrive`).
                journal.reopen(&op_at(prefix, index, 0));
                reruns.push(index);
                op_at(prefix, index, level)
            }
            _ => op_at(prefix, index, level),
        })
        .collect();
    Ok((RedrivePlan { ops, reruns, ..RedrivePlan::default() }, level))
}
