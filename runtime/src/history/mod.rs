//! Execution history in the shape of AWS `GetExecutionHistory`: numbered events, each pointing at
//! the event that led to it.

mod details;
mod time;

pub use details::{Details, DocumentCache, EventWriter, same_json};
pub use time::EventTime;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of a history event. Serializes as AWS's name (`TaskStateEntered`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)] // Each variant is the AWS history event type of the same name.
pub enum EventType {
    ExecutionStarted,
    ExecutionSucceeded,
    ExecutionFailed,
    ExecutionTimedOut,
    ExecutionAborted,
    ExecutionRedriven,
    PassStateEntered,
    PassStateExited,
    TaskStateEntered,
    TaskStateExited,
    TaskStateAborted,
    ChoiceStateEntered,
    ChoiceStateExited,
    WaitStateEntered,
    WaitStateExited,
    WaitStateAborted,
    SucceedStateEntered,
    SucceedStateExited,
    FailStateEntered,
    ParallelStateEntered,
    ParallelStateExited,
    ParallelStateStarted,
    ParallelStateSucceeded,
    ParallelStateFailed,
    ParallelStateAborted,
    MapStateEntered,
    MapStateExited,
    MapStateStarted,
    MapStateSucceeded,
    MapStateFailed,
    MapStateAborted,
    MapIterationStarted,
    MapIterationSucceeded,
    MapIterationFailed,
    MapIterationAborted,
    MapRunStarted,
    MapRunSucceeded,
    MapRunFailed,
    MapRunAborted,
    MapRunRedriven,
    TaskScheduled,
    TaskStarted,
    TaskSucceeded,
    TaskFailed,
    TaskTimedOut,
    LambdaFunctionScheduled,
    LambdaFunctionStarted,
    LambdaFunctionSucceeded,
    LambdaFunctionFailed,
    LambdaFunctionTimedOut,
    EvaluationFailed,
    SwStateEntered,
    SwStateExited,
    SwStateRetried,
    SwStateTimedOut,
    SwIterationStarted,
    SwBranchStarted,
    SwSubflowStarted,
    SwSubflowSucceeded,
    SwSubflowFailed,
    EventConsumed,
    EventProduced,
}

impl EventType {
    /// The AWS name of the event type.
    pub fn name(self) -> &'static str {
        match self {
            EventType::ExecutionStarted => "ExecutionStarted",
            EventType::ExecutionSucceeded => "ExecutionSucceeded",
            EventType::ExecutionFailed => "ExecutionFailed",
            EventType::ExecutionTimedOut => "ExecutionTimedOut",
            EventType::ExecutionAborted => "ExecutionAborted",
            EventType::ExecutionRedriven => "ExecutionRedriven",
            EventType::PassStateEntered => "PassStateEntered",
            EventType::PassStateExited => "PassStateExited",
            EventType::TaskStateEntered => "TaskStateEntered",
            EventType::TaskStateExited => "TaskStateExited",
            EventType::TaskStateAborted => "TaskStateAborted",
            EventType::ChoiceStateEntered => "ChoiceStateEntered",
            EventType::ChoiceStateExited => "ChoiceStateExited",
            EventType::WaitStateEntered => "WaitStateEntered",
            EventType::WaitStateExited => "WaitStateExited",
            EventType::WaitStateAborted => "WaitStateAborted",
            EventType::SucceedStateEntered => "SucceedStateEntered",
            EventType::SucceedStateExited => "SucceedStateExited",
            EventType::FailStateEntered => "FailStateEntered",
            EventType::ParallelStateEntered => "ParallelStateEntered",
            EventType::ParallelStateExited => "ParallelStateExited",
            EventType::ParallelStateStarted => "ParallelStateStarted",
            EventType::ParallelStateSucceeded => "ParallelStateSucceeded",
            EventType::ParallelStateFailed => "ParallelStateFailed",
            EventType::ParallelStateAborted => "ParallelStateAborted",
            EventType::MapStateEntered => "MapStateEntered",
            EventType::MapStateExited => "MapStateExited",
            EventType::MapStateStarted => "MapStateStarted",
            EventType::MapStateSucceeded => "MapStateSucceeded",
            EventType::MapStateFailed => "MapStateFailed",
            EventType::MapStateAborted => "MapStateAborted",
            EventType::MapIterationStarted => "MapIterationStarted",
            EventType::MapIterationSucceeded => "MapIterationSucceeded",
            EventType::MapIterationFailed => "MapIterationFailed",
            EventType::MapIterationAborted => "MapIterationAborted",
            EventType::MapRunStarted => "MapRunStarted",
            EventType::MapRunSucceeded => "MapRunSucceeded",
            EventType::MapRunFailed => "MapRunFailed",
            EventType::MapRunAborted => "MapRunAborted",
            EventType::MapRunRedriven => "MapRunRedriven",
            EventType::TaskScheduled => "TaskScheduled",
            EventType::TaskStarted => "TaskStarted",
            EventType::TaskSucceeded => "TaskSucceeded",
            EventType::TaskFailed => "TaskFailed",
            EventType::TaskTimedOut => "TaskTimedOut",
            EventType::LambdaFunctionScheduled => "LambdaFunctionScheduled",
            EventType::LambdaFunctionStarted => "LambdaFunctionStarted",
            EventType::LambdaFunctionSucceeded => "LambdaFunctionSucceeded",
            EventType::LambdaFunctionFailed => "LambdaFunctionFailed",
            EventType::LambdaFunctionTimedOut => "LambdaFunctionTimedOut",
            EventType::EvaluationFailed => "EvaluationFailed",
            EventType::SwStateEntered => "SwStateEntered",
            EventType::SwStateExited => "SwStateExited",
            EventType::SwStateRetried => "SwStateRetried",
            EventType::SwStateTimedOut => "SwStateTimedOut",
            EventType::SwIterationStarted => "SwIterationStarted",
            EventType::SwBranchStarted => "SwBranchStarted",
            EventType::SwSubflowStarted => "SwSubflowStarted",
            EventType::SwSubflowSucceeded => "SwSubflowSucceeded",
            EventType::SwSubflowFailed => "SwSubflowFailed",
            EventType::EventConsumed => "EventConsumed",
            EventType::EventProduced => "EventProduced",
        }
    }

    /// The `<Type>StateEntered` event of an ASL state type name (`"Task"`), if it has one.
    pub fn entered(state_type: &str) -> Option<EventType> {
        Some(match state_type {
            "Pass" => EventType::PassStateEntered,
            "Task" => EventType::TaskStateEntered,
            "Choice" => EventType::ChoiceStateEntered,
            "Wait" => EventType::WaitStateEntered,
            "Succeed" => EventType::SucceedStateEntered,
            "Fail" => EventType::FailStateEntered,
            "Parallel" => EventType::ParallelStateEntered,
            "Map" => EventType::MapStateEntered,
            _ => return None,
        })
    }

    /// The `<Type>StateExited` event of an ASL state type name, if it has one (Fail has none).
    pub fn exited(state_type: &str) -> Option<EventType> {
        Some(match state_type {
            "Pass" => EventType::PassStateExited,
            "Task" => EventType::TaskStateExited,
            "Choice" => EventType::ChoiceStateExited,
            "Wait" => EventType::WaitStateExited,
            "Succeed" => EventType::SucceedStateExited,
            "Parallel" => EventType::ParallelStateExited,
            "Map" => EventType::MapStateExited,
            _ => return None,
        })
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One history event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    /// 1-based, in recording order.
    pub id: u64,
    /// The event that led to this one (0 for the first).
    pub previous_event_id: u64,
    /// When it happened, RFC 3339 on the execution's clock (`2024-01-01T00:00:00.000Z`):
    /// reads and serializes as that text, written only when read (see [`EventTime`]).
    pub timestamp: EventTime,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// Event-specific data: `{"name","input"}` for Entered, `{"name","output"}` for Exited,
    /// `{"error","cause"}` for failures. Documents in it are shared, not copied (see
    /// [`Details`]).
    pub details: Details,
}

/// How much history an execution keeps ([`crate::RunOptions::history`]).
///
/// AWS has the same choice: Standard workflows keep every event (`GetExecutionHistory`), Express
/// workflows keep none (their history goes, at most, to logs). Both levels run exactly the same
/// semantics: events are still numbered, so error messages that cite an event id, the history
/// limit ([`crate::Limits::max_history_events`]) and every output and error are identical; only
/// the events themselves (their details and timestamps) are neither built nor kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryLevel {
    /// Every event, with its details and timestamp (the default; AWS Standard workflows).
    #[default]
    Full,
    /// No events are kept: [`crate::ExecutionResult::history`] is empty. AWS Express workflows
    /// keep no execution history either. Cheaper still: no event is built or timestamped
    /// (the full history shares each state's documents, see [`Details`], but builds every event).
    Express,
}

impl HistoryLevel {
    /// The level's name (`full`, `express`), as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            HistoryLevel::Full => "full",
            HistoryLevel::Express => "express",
        }
    }
}

impl std::str::FromStr for HistoryLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<HistoryLevel, String> {
        match s {
            "full" => Ok(HistoryLevel::Full),
            "express" => Ok(HistoryLevel::Express),
            other => Err(format!("unknown history level `{other}`; expected `full` or `express`")),
        }
    }
}

/// An execution's history. Cheap to clone; clones share the same events (Parallel branches
/// record into the one history).
#[derive(Debug, Clone, Default)]
pub struct History {
    events: Arc<Mutex<Vec<HistoryEvent>>>,
    /// `Some` at [`HistoryLevel::Express`]: events are only counted (for their ids and the
    /// history limit), never stored.
    counted: Option<Arc<AtomicU64>>,
    /// How many events the `Vec` holds, kept beside it (under its lock) so that [`History::len`],
    /// which every state entry asks for the history limit, reads it without taking the lock.
    kept: Arc<AtomicU64>,
    /// The documents events share (see [`History::share`]).
    documents: Arc<DocumentCache>,
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// An empty history at `level`: [`HistoryLevel::Express`] numbers events but keeps none.
    pub fn with_level(level: HistoryLevel) -> History {
        match level {
            HistoryLevel::Full => History::default(),
            HistoryLevel::Express => History { counted: Some(Arc::new(AtomicU64::new(0))), ..History::default() },
        }
    }

    /// Whether recorded events are kept ([`HistoryLevel::Full`]). When not, callers can skip
    /// building event details and timestamps: [`History::record`] would drop them.
    #[inline]
    pub fn keeps_events(&self) -> bool {
        self.counted.is_none()
    }

    /// The next event's id without storing anything, at [`HistoryLevel::Express`]; `None` when
    /// events are kept (use [`History::record`]).
    #[inline]
    pub fn count(&self) -> Option<u64> {
        self.counted.as_ref().map(|n| n.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// The ids of `n` events recorded back to back, as [`History::count`] gives them one at a
    /// time: the last one. One atomic add for all of them (a locked instruction each on x86).
    #[inline]
    pub fn count_many(&self, n: u64) -> Option<u64> {
        self.counted.as_ref().map(|c| c.fetch_add(n, Ordering::SeqCst) + n)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<HistoryEvent>> {
        // A panic while the lock was held cannot leave the Vec half-written (push is the only
        // mutation), so a poisoned lock is still consistent.
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends an event and returns its id.
    pub fn record(
        &self,
        event_type: EventType,
        details: impl Into<Details>,
        timestamp: impl Into<EventTime>,
        previous_event_id: u64,
    ) -> u64 {
        if let Some(id) = self.count() {
            return id;
        }
        let (details, timestamp) = (details.into(), timestamp.into());
        let mut events = self.lock();
        let id = events.len() as u64 + 1;
        events.push(HistoryEvent { id, previous_event_id, timestamp, event_type, details });
        self.kept.store(id, Ordering::Release);
        id
    }

    /// A document for an event's [`Details`], shared instead of copied: the same `Arc` as the
    /// last document shared while this one is the same JSON (a state's input is the previous
    /// state's output), else a copy (see [`DocumentCache`]).
    pub fn share(&self, document: &Value) -> Arc<Value> {
        self.documents.share(document)
    }

    /// The details of a state's Entered (`key` `input`) or Exited (`output`) event,
    /// `{"name": name, <key>: document}`, with the document shared as [`History::share`] does
    /// and the name shared with the other events of the same state.
    pub fn named(&self, name: &str, key: &'static str, document: &Value) -> Details {
        self.documents.named(name, key, document)
    }

    /// [`History::named`] for a state whose name is already shared (by its Entered event's
    /// details, [`Details::named_parts`]): only the document is shared as [`History::share`]
    /// does.
    pub fn named_as(&self, name: Arc<Value>, key: &'static str, document: &Value) -> Details {
        self.documents.named_as(name, key, document)
    }

    /// [`History::named_as`] for a document the state has just built, copied without being
    /// compared with the last one (see [`DocumentCache::named_new`]).
    pub fn named_new(&self, name: Arc<Value>, key: &'static str, document: &Value) -> Details {
        self.documents.named_new(name, key, document)
    }

    /// [`History::named_new`] copying the document into `spare`'s allocations (see
    /// [`DocumentCache::named_new_into`]).
    pub fn named_new_into(&self, name: Arc<Value>, key: &'static str, document: &Value, spare: Value) -> Details {
        self.documents.named_new_into(name, key, document, spare)
    }

    /// `document` for an event's [`Details`], made the one the next [`History::share`]
    /// compares with: for a document that is already shared (the execution input).
    pub fn adopt(&self, document: Arc<Value>) -> Arc<Value> {
        self.documents.adopt(document)
    }

    /// A snapshot of every event so far, in order.
    pub fn events(&self) -> Vec<HistoryEvent> {
        self.lock().clone()
    }

    /// Moves every event out, leaving the history empty: for the end of an execution, when the
    /// result takes the history and nothing records any more. Unlike [`History::events`] it does
    /// not copy every event's input and output (for large documents, the biggest cost of a run).
    pub fn take(&self) -> Vec<HistoryEvent> {
        let mut events = self.lock();
        self.kept.store(0, Ordering::Release);
        std::mem::take(&mut *events)
    }

    /// The number of events so far (at [`HistoryLevel::Express`], the number recorded, although
    /// none is kept).
    #[inline]
    pub fn len(&self) -> usize {
        match &self.counted {
            Some(n) => usize::try_from(n.load(Ordering::SeqCst)).unwrap_or(usize::MAX),
            None => usize::try_from(self.kept.load(Ordering::Acquire)).unwrap_or(usize::MAX),
        }
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events with these ids (those still kept), in the order given: a durable Parallel
    /// branch or Map iteration stores the events it recorded with its result.
    pub fn events_with_ids(&self, ids: &[u64]) -> Vec<HistoryEvent> {
        let events = self.lock();
        ids.iter()
            .filter_map(|id| usize::try_from(*id).ok().and_then(|i| i.checked_sub(1)).and_then(|i| events.get(i)))
            .cloned()
            .collect()
    }

    /// Copies of the events after the first `skip`, in order: what a durable run has recorded
    /// since it last wrote its history to the store.
    pub fn events_from(&self, skip: u64) -> Vec<HistoryEvent> {
        let events = self.lock();
        events.get(usize::try_from(skip).unwrap_or(usize::MAX)..).map(<[HistoryEvent]>::to_vec).unwrap_or_default()
    }

    /// The event types so far, in order (handy in tests and logs).
    pub fn event_types(&self) -> Vec<EventType> {
        self.lock().iter().map(|e| e.event_type).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_with_aws_names() {
        let h = History::new();
        let id = h.record(EventType::TaskStateEntered, serde_json::json!({"name": "A", "input": {}}), "t", 0);
        assert_eq!(id, 1);
        let json = serde_json::to_value(&h.events()[0]).unwrap_or_default();
        assert_eq!(json["type"], "TaskStateEntered");
        assert_eq!(json["previousEventId"], 0);
        assert_eq!(EventType::entered("Fail"), Some(EventType::FailStateEntered));
        assert_eq!(EventType::exited("Fail"), None);
    }

    #[test]
    fn len_counts_the_kept_events_without_the_lock() {
        let h = History::new();
        assert_eq!(h.len(), 0);
        h.record(EventType::PassStateEntered, Value::Null, String::new(), 0);
        let branch = h.clone();
        branch.record(EventType::PassStateExited, Value::Null, String::new(), 1);
        assert_eq!((h.len(), branch.len(), h.events().len()), (2, 2, 2));
        assert_eq!(h.take().len(), 2);
        assert_eq!((h.len(), h.is_empty()), (0, true));
        assert_eq!(h.record(EventType::PassStateEntered, Value::Null, String::new(), 0), 1);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn express_level_numbers_events_but_keeps_none() {
        let h = History::with_level(HistoryLevel::Express);
        assert!(!h.keeps_events());
        assert_eq!(h.record(EventType::PassStateEntered, Value::Null, String::new(), 0), 1);
        assert_eq!(h.record(EventType::PassStateExited, Value::Null, String::new(), 1), 2);
        assert_eq!(h.len(), 2);
        assert!(h.events().is_empty());
        assert!(h.take().is_empty());
        assert_eq!("express".parse::<HistoryLevel>(), Ok(HistoryLevel::Express));
        assert!("none".parse::<HistoryLevel>().is_err());
        assert!(History::new().keeps_events());
    }
}
