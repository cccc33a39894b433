//! The history of a running execution, kept in the store as it grows (as AWS's
//! `GetExecutionHistory` shows a running execution's events), not only when it ends.
//!
//! The rule that keeps the stored history consistent with the journal through a crash: the events
//! a commit writes are those recorded **before** the commit's operation updates were taken (the
//! journal snapshots the history, then takes its deferred and queued updates). An event recorded
//! after an operation's update was queued (a `TaskSucceeded` after its outcome was deferred) is
//! then always written with, or after, that update; the events that need no operation (Pass,
//! Choice) are true whenever they were recorded. So after a `kill -9` the store has the events up
//! to some commit and the journal at least that commit's operations.
//!
//! A resumed run replays the execution and records its history again from the first event. The
//! stored events are loaded once (at the run's first write) and each replayed event is compared
//! with the stored one of the same id, timestamps aside: equal ones are not written again (they
//! keep the instants they happened at), so a resume costs one read of the history and no
//! rewrite. Where the replay recorded something else (Parallel branches interleave differently,
//! or a redriven execution goes on past its old end), the run's events are written from there on
//! and the stored events beyond them are deleted, so the history never holds both versions.
//! Writes are appends (or, after such a divergence, one rewrite of the tail): never the whole
//! history per checkpoint.

use std::sync::Mutex;

use wfc_runtime::durable::HistoryWrite;
use wfc_runtime::{EventType, History, HistoryEvent};

/// One execution's history as the store has it, seen from the run recording it.
#[derive(Debug)]
pub(super) struct LiveHistory {
    history: History,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Events `1..=written` of this run are in the store (written, or found there as recorded).
    written: u64,
    /// On a resume, the stored events not yet compared with the replay's (all of them, indexed
    /// by id - 1); `None` once the replay diverged or went past them, or for a new execution.
    stored: Option<Vec<HistoryEvent>>,
    /// Whether `stored` was loaded (it is loaded lazily, at the first write).
    loaded: bool,
    /// The replay's events from id `.0` on are stored `.1` ids later: they come after the end
    /// and redrive events of a redriven ABORTED or TIMED_OUT execution (see [`redrive_tail`]).
    shift: Option<(u64, u64)>,
    /// Set when the replay of a redriven execution diverged before the stop's events (see
    /// [`Matching`]).
    matching: Option<Matching>,
}

/// How the replay of a redriven ABORTED or TIMED_OUT execution is written when it diverges
/// from the stored history before the stop's `ExecutionAborted`/`ExecutionTimedOut` and the
/// store's `ExecutionRedriven` (Parallel branches replayed in another order than they ran):
/// what happened before the redrive is AWS's history and is never rewritten. Each replayed
/// event is looked up among the stored events not yet matched, up to the last redrive (the
/// `pool`), by type and details; one found is the stored one (not written again), any other is
/// new and goes after the stored history, its id and `previousEventId` taken to the stored ids.
#[derive(Debug, Clone)]
struct Matching {
    /// The first replayed id handled here; earlier ones are stored at their own ids.
    base: u64,
    /// The stored id of each replayed event from `base` on.
    ids: Vec<u64>,
    /// The stored events from `base` up to the last redrive that a replay can record again,
    /// `None` once matched.
    pool: Vec<Option<HistoryEvent>>,
    /// The id of the next new event.
    next: u64,
}

impl Matching {
    /// The stored id of replayed id `id`.
    fn stored_id(&self, id: u64) -> u64 {
        match id.checked_sub(self.base).and_then(|i| self.ids.get(usize::try_from(i).ok()?)) {
            Some(&stored) => stored,
            None => id,
        }
    }

    /// Takes replayed `event` (the next one): `Some` with the event to write when it is new.
    fn take(&mut self, mut event: HistoryEvent) -> Option<HistoryEvent> {
        let found = self
            .pool
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|s| s.event_type == event.event_type && s.details == event.details));
        if let Some(slot) = found {
            self.ids.push(slot.take().map_or(event.id, |s| s.id));
            return None;
        }
        event.previous_event_id = self.stored_id(event.previous_event_id);
        event.id = self.next;
        self.next += 1;
        self.ids.push(event.id);
        Some(event)
    }
}

/// The id of the last `ExecutionRedriven` in `stored` that the store appended after a stop or a
/// timeout (not one a FAILED execution's redriven run recorded), if there is one.
fn last_stop_redrive(stored: &[HistoryEvent]) -> Option<usize> {
    use wfc_runtime::EventType::{ExecutionAborted, ExecutionRedriven, ExecutionTimedOut};
    stored
        .windows(2)
        .rposition(|w| {
            matches!(w[0].event_type, ExecutionAborted | ExecutionTimedOut) && w[1].event_type == ExecutionRedriven
        })
        .map(|i| i + 1)
}

/// Whether `tail` (the stored events from where the replay differs) is how a stopped or timed-out
/// execution ended and was redriven: `ExecutionAborted`/`ExecutionTimedOut`, then the
/// `ExecutionRedriven` the store appended (`Store::redrive_execution`), as the last events. The
/// redriven run's events then go after them, as on AWS, instead of replacing them.
fn redrive_tail(tail: &[HistoryEvent]) -> bool {
    use wfc_runtime::EventType::{ExecutionAborted, ExecutionRedriven, ExecutionTimedOut};
    match tail.split_last() {
        Some((last, ended)) => {
            last.event_type == ExecutionRedriven
                && !ended.is_empty()
                && ended
                    .iter()
                    .all(|e| matches!(e.event_type, ExecutionAborted | ExecutionTimedOut | ExecutionRedriven))
        }
        None => false,
    }
}

/// The events one commit writes, and what the live history becomes once it is committed.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// What the store writes.
    pub(super) write: HistoryWrite,
    /// The number of events the run had recorded at the snapshot.
    upto: u64,
    /// The replay diverged from (or went past) the stored events: stop comparing.
    done_comparing: bool,
    /// A shift found by this snapshot (see `State::shift`).
    shift: Option<(u64, u64)>,
    /// The matching as this snapshot leaves it (see `State::matching`).
    matching: Option<Matching>,
}

impl Pending {
    /// Whether the store has nothing to write.
    pub(super) fn is_empty(&self) -> bool {
        self.write.events.is_empty() && self.write.truncate_after.is_none()
    }
}

/// Whether a replayed event is the stored one (its timestamp aside: the replay stamps it anew).
fn same(stored: &HistoryEvent, replayed: &HistoryEvent) -> bool {
    stored.id == replayed.id
        && stored.event_type == replayed.event_type
        && stored.previous_event_id == replayed.previous_event_id
        && stored.details == replayed.details
}

impl LiveHistory {
    /// The live history of `history`, the run's (Full level) history.
    pub(super) fn new(history: History) -> LiveHistory {
        LiveHistory { history, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the stored history must be loaded before the first [`LiveHistory::snapshot`].
    pub(super) fn needs_load(&self) -> bool {
        !self.lock().loaded
    }

    /// Gives the stored history of a resumed execution (empty for a new one).
    pub(super) fn loaded(&self, stored: Vec<HistoryEvent>) {
        let mut state = self.lock();
        if !state.loaded {
            state.loaded = true;
            state.stored = (!stored.is_empty()).then_some(stored);
        }
    }

    /// The events recorded since the last committed write, minus those found stored as they
    /// are.
    pub(super) fn snapshot(&self) -> Pending {
        let written = self.lock().written;
        let upto = self.history.len() as u64;
        let fresh = if upto > written { self.history.events_from(written) } else { Vec::new() };
        self.pending(fresh, upto, false)
    }

    /// [`LiveHistory::snapshot`] at the end of the run, from its whole history (`events`, which
    /// the run has taken out of its [`History`]): stored events beyond it are deleted.
    pub(super) fn last(&self, events: &[HistoryEvent]) -> Pending {
        let written = self.lock().written;
        let fresh = events.get(usize::try_from(written).unwrap_or(usize::MAX)..).map(<[_]>::to_vec);
        self.pending(fresh.unwrap_or_default(), events.len() as u64, true)
    }

    fn pending(&self, fresh: Vec<HistoryEvent>, upto: u64, last: bool) -> Pending {
        let state = self.lock();
        let mut pending = Pending { upto, ..Pending::default() };
        if let Some(matching) = &state.matching {
            let mut matching = matching.clone();
            pending.write.events = fresh.into_iter().filter_map(|e| matching.take(e)).collect();
            pending.matching = Some(matching);
            return pending;
        }
        let mut first = state.written + 1;
        let mut shift = state.shift;
        if let Some(stored) = &state.stored {
            let mut diverged = false;
            for event in &fresh {
                match usize::try_from(event.id).ok().and_then(|id| stored.get(id.checked_sub(1)?)) {
                    Some(s) if same(s, event) => first = event.id + 1,
                    Some(_) => {
                        diverged = true;
                        break;
                    }
                    None => break,
                }
            }
            let stored_len = stored.len() as u64;
            let from = usize::try_from(first - 1).unwrap_or(usize::MAX);
            let stop = stored.get(from..).and_then(last_stop_redrive).map(|i| from + i);
            if diverged
                && !stored.get(from..).is_some_and(redrive_tail)
                && let Some(stop) = stop
            {
                // Diverged before a stop and its redrive: they and what came before them stay.
                let pool = stored[from..=stop]
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        // The store's events, which no replay records.
                        let ended = |e: &HistoryEvent| {
                            matches!(e.event_type, EventType::ExecutionAborted | EventType::ExecutionTimedOut)
                        };
                        let appended = ended(e)
                            || (e.event_type == EventType::ExecutionRedriven
                                && (from + i).checked_sub(1).and_then(|j| stored.get(j)).is_some_and(ended));
                        (!appended).then(|| e.clone())
                    })
                    .collect();
                let end = stop as u64 + 1;
                let mut matching = Matching { base: first, ids: Vec::new(), pool, next: end + 1 };
                if stored_len > end {
                    // The events a run of this redrive wrote before (a resumed redriven run):
                    // written again after the stop, as this run records them.
                    pending.write.truncate_after = Some(end);
                }
                pending.write.events =
                    fresh.into_iter().filter(|e| e.id >= first).filter_map(|e| matching.take(e)).collect();
                pending.matching = Some(matching);
                pending.done_comparing = true;
                return pending;
            }
            if diverged && stored.get(from..).is_some_and(redrive_tail) {
                // After the redrive's events: the run goes on from there.
                shift = Some((first, stored_len - (first - 1)));
                pending.shift = shift;
                pending.done_comparing = true;
            } else if diverged || (last && stored_len > upto) {
                // The stored tail is another version of what this run recorded: replaced.
                pending.write.truncate_after = Some(upto);
                pending.done_comparing = true;
            } else if upto >= stored_len {
                pending.done_comparing = true;
            }
        }
        pending.write.events = fresh
            .into_iter()
            .filter(|e| e.id >= first)
            .map(|mut e| {
                if let Some((from, by)) = shift {
                    e.id += by;
                    if e.previous_event_id >= from {
                        e.previous_event_id += by;
                    }
                }
                e
            })
            .collect();
        pending
    }

    /// `pending` was committed.
    pub(super) fn committed(&self, pending: &Pending) {
        let mut state = self.lock();
        state.written = state.written.max(pending.upto);
        if pending.done_comparing {
            state.stored = None;
        }
        if pending.shift.is_some() {
            state.shift = pending.shift;
        }
        if pending.matching.is_some() {
            state.matching = pending.matching.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use wfc_runtime::EventType;

    fn record(h: &History, t: EventType, name: &str, stamp: &str) {
        let previous = h.len() as u64;
        h.record(t, json!({ "name": name }), stamp, previous);
    }

    #[test]
    fn appends_only_what_is_new() {
        let h = History::new();
        let live = LiveHistory::new(h.clone());
        live.loaded(Vec::new());
        record(&h, EventType::ExecutionStarted, "x", "t1");
        record(&h, EventType::PassStateEntered, "P", "t1");
        let p = live.snapshot();
        assert_eq!(p.write.events.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 2]);
        live.committed(&p);
        record(&h, EventType::PassStateExited, "P", "t1");
        let p = live.snapshot();
        assert_eq!(p.write.events.iter().map(|e| e.id).collect::<Vec<_>>(), [3]);
        assert_eq!(p.write.truncate_after, None);
        // Not committed (a refused checkpoint): the next snapshot has it again.
        let p = live.snapshot();
        assert_eq!(p.write.events.len(), 1);
        live.committed(&p);
        assert!(live.last(&h.events()).is_empty());
    }

    #[test]
    fn a_replay_skips_stored_events_and_replaces_a_diverged_tail() {
        let first = History::new();
        for (t, n) in
            [(EventType::ExecutionStarted, "x"), (EventType::PassStateEntered, "A"), (EventType::PassStateEntered, "B")]
        {
            record(&first, t, n, "old");
        }
        let stored = first.events();
        // The same events replayed with new timestamps: nothing to write.
        let h = History::new();
        let live = LiveHistory::new(h.clone());
        live.loaded(stored.clone());
        record(&h, EventType::ExecutionStarted, "x", "new");
        record(&h, EventType::PassStateEntered, "A", "new");
        let p = live.snapshot();
        assert!(p.is_empty(), "{p:?}");
        live.committed(&p);
        // Then another event where the store has B: written from there, the stored tail deleted.
        record(&h, EventType::PassStateEntered, "C", "new");
        record(&h, EventType::PassStateEntered, "D", "new");
        let p = live.snapshot();
        assert_eq!(p.write.events.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(p.write.truncate_after, Some(4));
        live.committed(&p);
        record(&h, EventType::PassStateEntered, "E", "new");
        let p = live.last(&h.take());
        assert_eq!(p.write.events.iter().map(|e| e.id).collect::<Vec<_>>(), [5]);
        assert_eq!(p.write.truncate_after, None);
    }

    #[test]
    fn a_redriven_stop_keeps_its_end_and_redrive_events() {
        let first = History::new();
        record(&first, EventType::ExecutionStarted, "x", "old");
        record(&first, EventType::WaitStateEntered, "W", "old");
        record(&first, EventType::ExecutionAborted, "", "old");
        record(&first, EventType::ExecutionRedriven, "", "old");
        let h = History::new();
        let live = LiveHistory::new(h.clone());
        live.loaded(first.events());
        record(&h, EventType::ExecutionStarted, "x", "new");
        record(&h, EventType::WaitStateEntered, "W", "new");
        record(&h, EventType::WaitStateExited, "W", "new");
        let p = live.snapshot();
        let written: Vec<(u64, u64)> = p.write.events.iter().map(|e| (e.id, e.previous_event_id)).collect();
        assert_eq!(written, [(5, 2)], "after the redrive's events, chained to what it follows");
        assert_eq!(p.write.truncate_after, None);
        live.committed(&p);
        record(&h, EventType::ExecutionSucceeded, "", "new");
        let p = live.last(&h.take());
        let written: Vec<(u64, u64)> = p.write.events.iter().map(|e| (e.id, e.previous_event_id)).collect();
        assert_eq!(written, [(6, 5)]);
    }

    #[test]
    fn a_redriven_stop_replayed_in_another_order_keeps_every_stored_event() {
        let first = History::new();
        for (t, n) in [
            (EventType::ExecutionStarted, "x"),
            (EventType::ParallelStateStarted, "P"),
            (EventType::PassStateEntered, "A1"),
            (EventType::PassStateEntered, "B1"),
            (EventType::TaskScheduled, "A2"),
            (EventType::ExecutionAborted, ""),
            (EventType::ExecutionRedriven, ""),
        ] {
            record(&first, t, n, "old");
        }
        let h = History::new();
        let live = LiveHistory::new(h.clone());
        live.loaded(first.events());
        // The branches replay in the other order, then the redriven run goes on.
        for (t, n) in [
            (EventType::ExecutionStarted, "x"),
            (EventType::ParallelStateStarted, "P"),
            (EventType::PassStateEntered, "B1"),
            (EventType::PassStateEntered, "A1"),
            (EventType::TaskScheduled, "A2"),
            (EventType::TaskSucceeded, "A3"),
        ] {
            record(&h, t, n, "new");
        }
        let p = live.snapshot();
        let written: Vec<(u64, u64)> = p.write.events.iter().map(|e| (e.id, e.previous_event_id)).collect();
        assert_eq!(written, [(8, 5)], "only the new event, after the redrive, chained to the stored A2");
        assert_eq!(p.write.truncate_after, None, "nothing stored is deleted");
        live.committed(&p);
        record(&h, EventType::PassStateExited, "B2", "new");
        record(&h, EventType::ExecutionSucceeded, "", "new");
        let p = live.last(&h.take());
        let written: Vec<(u64, u64)> = p.write.events.iter().map(|e| (e.id, e.previous_event_id)).collect();
        assert_eq!(written, [(9, 8), (10, 9)]);
        assert_eq!(p.write.truncate_after, None);
    }

    #[test]
    fn a_shorter_ending_deletes_the_stored_rest() {
        let first = History::new();
        for n in ["a", "b", "c"] {
            record(&first, EventType::PassStateEntered, n, "old");
        }
        let h = History::new();
        let live = LiveHistory::new(h.clone());
        live.loaded(first.events());
        record(&h, EventType::PassStateEntered, "a", "new");
        let p = live.last(&h.take());
        assert!(p.write.events.is_empty());
        assert_eq!(p.write.truncate_after, Some(1));
    }
}
