//! The journal hooks of an [`Execution`].

use std::future::Future;
#[cfg(feature = "durable")]
use std::sync::Arc;
#[cfg(feature = "durable")]
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
#[cfg(feature = "durable")]
use serde_json::json;
use tokio::time::Instant;

use super::Execution;
#[cfg(feature = "durable")]
use super::visit::failure_details;
#[cfg(feature = "durable")]
use super::{BranchOf, EventCapture, Scope};
#[cfg(feature = "durable")]
use crate::EventType;
use crate::Failure;
#[cfg(feature = "durable")]
use crate::journal::JournalHooks;
use crate::task::Attempt;

/// The journal hooks: each runs the plain behaviour when the execution has no journal (or the
/// crate is built without feature `durable`), and the replay rules of [`crate::durable`] when it
/// has one.
impl Execution {
    /// The durable journal, if this execution has one.
    #[cfg(feature = "durable")]
    pub fn journal(&self) -> Option<&Arc<dyn JournalHooks>> {
        self.shared.journal.as_ref()
    }

    /// Counts a visit to state `name` on this line of control and returns its 1-based number
    /// (0 without a journal: nothing needs it, so nothing is counted).
    pub(crate) fn next_visit(&self, name: &str) -> u32 {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            let mut visits = self.scope.visits.lock().unwrap_or_else(|p| p.into_inner());
            let n = visits.entry(name.to_owned()).or_insert(0);
            *n += 1;
            return *n;
        }
        let _ = name;
        0
    }

    /// The deterministic operation id of `name`'s `visit_no`-th visit on this line of control.
    #[cfg(feature = "durable")]
    pub(crate) fn op_id(&self, name: &str, visit_no: u32, suffix: &str) -> String {
        let generation = {
            let generations = self.scope.generations.lock().unwrap_or_else(|p| p.into_inner());
            generations.get(&(name.to_owned(), visit_no)).copied().unwrap_or(0)
        };
        match generation {
            0 => format!("{}{name}#{visit_no}{suffix}", self.scope.path),
            g => format!("{}{name}#{visit_no}!{g}{suffix}", self.scope.path),
        }
    }

    /// The redrive generation visit `visit_no` of `name` runs in (0: not run again).
    pub(crate) fn redrive_generation(&self, name: &str, visit_no: u32) -> u32 {
        #[cfg(feature = "durable")]
        {
            let generations = self.scope.generations.lock().unwrap_or_else(|p| p.into_inner());
            generations.get(&(name.to_owned(), visit_no)).copied().unwrap_or(0)
        }
        #[cfg(not(feature = "durable"))]
        {
            let _ = (name, visit_no);
            0
        }
    }

    /// `$$.Execution.RedriveCount`: how often the journaled execution was redriven (0 without a
    /// journal).
    pub(crate) fn redrive_count(&self) -> u32 {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            return journal.redrive_count();
        }
        0
    }

    /// RedriveExecution runs again the states that did not succeed: called when attempt
    /// `attempt_no` of visit `visit_no` of Task `name` ended the visit with a failure no
    /// catcher takes. When that attempt ended before this run (its failure, or a failure of its
    /// result's processing, a path error in `ResultSelector` or `ResultPath`, ended the
    /// execution, which was redriven since: AWS then schedules and starts the Task state
    /// again) and the visit has not yet been run again for every redrive, the
    /// visit moves to its next redrive generation (new operation ids, so its attempts run
    /// again, retries counted from zero) and this returns `true`. A failure of this run returns
    /// `false`: it is the execution's failure.
    pub(crate) fn rerun_for_redrive(&self, name: &str, visit_no: u32, attempt_no: u32) -> bool {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let redrives = journal.redrive_count();
            let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            let mut generations = self.scope.generations.lock().unwrap_or_else(|p| p.into_inner());
            let generation = generations.entry((name.to_owned(), visit_no)).or_insert(0);
            if *generation < redrives && journal.ended_before_run(&id) {
                *generation += 1;
                return true;
            }
            return false;
        }
        let _ = (name, visit_no, attempt_no);
        false
    }

    /// The CONTEXT operation the operations of this line of control belong to.
    #[cfg(feature = "durable")]
    pub(crate) fn op_parent(&self) -> Option<String> {
        self.scope.context.clone()
    }

    /// Runs one Parallel branch or Map iteration (`line` from [`Execution::branch`] on the
    /// state's branch scope) as a CONTEXT operation when journaled: started before the branch
    /// runs, finished with its output or failure and the history events it recorded. A replay
    /// that finds the CONTEXT finished does not run the branch (`branch` is dropped unpolled):
    /// it records the stored events again and returns the recorded outcome. Both engines call it.
    ///
    /// Not an `async fn`: without a journal the branch's own future is returned and polled where
    /// it lies. An `async fn` moved it (a whole branch machine, kilobytes) into its own state on
    /// the first poll, two copies a branch that a callgrind profile of parallel-10 showed.
    ///
    /// The journaled side is boxed: its `async fn` holds the branch twice (its argument and the
    /// local it becomes), and an `Either` is as large as its larger side, so unboxed it doubled
    /// every branch's future, journaled or not (parallel-10's branch boxes: 4,816 bytes).
    ///
    /// Always inlined: where the caller boxes what this returns (generated Parallel branches),
    /// the compiler then copies the branch's future once, into the box, instead of twice
    /// (parallel-10 compiled: 7,934 -> 7,678 instructions a transition).
    #[inline(always)]
    pub fn in_branch_context<Fut>(&self, branch: Fut) -> impl Future<Output = Result<Value, Failure>>
    where
        Fut: Future<Output = Result<Value, Failure>>,
    {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() && self.scope.branch_of.is_some() && self.scope.context.is_some() {
            return futures::future::Either::Left(Box::pin(self.in_journaled_branch_context(branch)));
        }
        #[cfg(feature = "durable")]
        return futures::future::Either::Right(branch);
        #[cfg(not(feature = "durable"))]
        branch
    }

    /// [`Execution::in_branch_context`] under a journal.
    #[cfg(feature = "durable")]
    async fn in_journaled_branch_context<Fut>(&self, branch: Fut) -> Result<Value, Failure>
    where
        Fut: Future<Output = Result<Value, Failure>>,
    {
        if let (Some(journal), Some(of), Some(id)) = (&self.shared.journal, &self.scope.branch_of, &self.scope.context)
        {
            // Under a reopened attempt, a branch or iteration that failed runs again (its
            // events are the attempt's, recorded again already: its line is muted).
            if of.parent.as_deref().is_some_and(|attempt| journal.is_reopened(attempt)) && journal.may_reopen(id) {
                journal.reopen(id);
            }
            if let Some(done) = journal.finished_context(id, &of.state, self.keeps_history())? {
                if !self.muted() {
                    let last = self.replay_context_events(&done.events);
                    self.cursor.last.store(last, Ordering::SeqCst);
                }
                return done.outcome;
            }
            journal.context_start(id, of.parent.clone(), &of.state, of.subtype).await?;
            let capture = self.scope.captures.last().filter(|_| journal.keeps_context_events());
            Self::arm(capture);
            let outcome = match branch.await {
                // Reopened, failing again as it did (see `reenter_muted`).
                Err(failure) if self.muted() && journal.is_reopened(id) => Err(self.reenter_muted(failure)),
                outcome => outcome,
            };
            let events = self.captured(capture);
            journal.context_end_with_events(id, of.parent.clone(), &of.state, of.subtype, &outcome, events).await?;
            return outcome;
        }
        branch.await
    }

    /// Starts collecting the events of a CONTEXT about to run.
    #[cfg(feature = "durable")]
    fn arm(capture: Option<&EventCapture>) {
        if let Some(capture) = capture {
            *capture.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
        }
    }

    /// The events a CONTEXT recorded since [`Execution::arm`], and stops collecting.
    #[cfg(feature = "durable")]
    fn captured(&self, capture: Option<&EventCapture>) -> Option<crate::journal::ContextEvents> {
        let ids = capture?.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        Some(if self.keeps_history() {
            crate::journal::ContextEvents::Kept(self.shared.history.events_with_ids(&ids))
        } else {
            crate::journal::ContextEvents::Counted(ids.len() as u64)
        })
    }

    /// Records again the events of a skipped CONTEXT (a finished branch, iteration or attempt),
    /// renumbered after the events recorded so far and chained as they were: an event whose
    /// previous event is outside the CONTEXT chains to this line's current event. Returns the
    /// id of the last one (the line's current event when there were none).
    #[cfg(feature = "durable")]
    fn replay_context_events(&self, events: &crate::journal::ContextEvents) -> u64 {
        let start = self.cursor.last.load(Ordering::SeqCst);
        let mut last = start;
        match events {
            crate::journal::ContextEvents::Kept(events) => {
                let mut renumbered = std::collections::HashMap::with_capacity(events.len());
                for e in events {
                    let previous = renumbered.get(&e.previous_event_id).copied().unwrap_or(start);
                    last = self.shared.history.record(e.event_type, e.details.clone(), e.timestamp.clone(), previous);
                    renumbered.insert(e.id, last);
                    self.capture(last);
                }
            }
            crate::journal::ContextEvents::Counted(n) => {
                for _ in 0..*n {
                    last = self.shared.history.count().unwrap_or(last);
                    self.capture(last);
                }
            }
        }
        last
    }

    /// Runs a Parallel or Map attempt (`scope` from [`Execution::parallel_scope`]) as a
    /// CONTEXT operation when journaled; the outer error is a store failure.
    pub(super) async fn in_state_context<Fut>(
        &self,
        scope: &Execution,
        name: &str,
        subtype: &str,
        attempt: Fut,
    ) -> Result<Result<Vec<Value>, Failure>, Failure>
    where
        Fut: Future<Output = Result<Vec<Value>, Failure>>,
    {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id)) = (&self.shared.journal, &scope.scope.context)
            && scope.scope.owner.is_some()
        {
            if let Some(done) = journal.finished_context(id, name, self.keeps_history())? {
                // The attempt's branches record on lines of their own: this line's current
                // event stays where it is, as after a run.
                scope.replay_context_events(&done.events);
                return Ok(match done.outcome {
                    Ok(Value::Array(outputs)) => Ok(outputs),
                    Ok(other) => Err(Failure::runtime(format!(
                        "the journal's CONTEXT operation '{id}' of state '{name}' holds {other} where its branches' outputs (an array) belong"
                    ))),
                    Err(failure) => Err(failure),
                });
            }
            journal.context_start(id, self.op_parent(), name, subtype).await?;
            let capture = scope.scope.captures.last().filter(|_| journal.keeps_context_events());
            Self::arm(capture);
            if journal.is_reopened(id) && !scope.muted() {
                scope.record_reopened(&**journal, id, name, subtype)?;
            }
            let outcome = attempt.await;
            let recorded = outcome.clone().map(Value::Array);
            let events = scope.captured(capture);
            journal.context_end_with_events(id, self.op_parent(), name, subtype, &recorded, events).await?;
            return Ok(outcome);
        }
        let _ = (scope, name, subtype);
        Ok(attempt.await)
    }

    /// The history of a Parallel or Map attempt that a redrive reopened (on the outermost one;
    /// those inside it are in its events), recorded on the attempt's `scope` so the attempt's
    /// CONTEXT keeps it: the attempt's events as they were, how the state and the execution
    /// failed, then `ExecutionRedriven`. The branches then run muted up to the failed Task
    /// that runs again (see [`Scope::mute`]), so the history is AWS's: what happened, the
    /// redrive, what the redrive ran.
    #[cfg(feature = "durable")]
    fn record_reopened(&self, journal: &dyn JournalHooks, id: &str, name: &str, subtype: &str) -> Result<(), Failure> {
        let Some(done) = journal.reopened_context(id, name, self.keeps_history())? else {
            return Ok(());
        };
        self.replay_context_events(&done.events);
        let failure = done.outcome.err().unwrap_or_else(|| Failure::runtime("the reopened attempt had not failed"));
        let failed = if subtype == "Map" { EventType::MapStateFailed } else { EventType::ParallelStateFailed };
        self.record(failed, json!({ "name": name }));
        self.record(EventType::ExecutionFailed, failure_details(&failure));
        self.record(EventType::ExecutionRedriven, json!({ "redriveCount": journal.redrive_count() }));
        Ok(())
    }

    /// Reopens attempt `attempt_no` of visit `visit_no` of Parallel or Map `name` (its CONTEXT is
    /// `scope`'s, from [`Execution::parallel_scope`]) when a redrive runs it again: it failed
    /// before the redrive, on this run's redriven path (this line is the top level or a branch
    /// the redrive reopened), it was the state's last attempt (no retry followed it) and
    /// `uncaught` says no catcher took its failure. So the failure ended the execution and its
    /// failed branches or iterations run again (the others replay their results); a failure
    /// that was caught or retried replays as it ended. Called before the attempt's lines are
    /// made, so they know they run under a reopened attempt.
    pub(super) fn reopen_for_redrive(
        &self,
        scope: &Execution,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        uncaught: impl FnOnce(&str) -> bool,
    ) {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id)) = (&self.shared.journal, &scope.scope.context)
            && journal.redrive_count() > 0
            && journal.may_reopen(id)
        {
            let on_path = match &self.scope.context {
                None => true,
                Some(line) => journal.is_reopened(line),
            };
            let retried = [format!(".{}", attempt_no + 1), format!(".retry{}", attempt_no + 1)]
                .iter()
                .any(|suffix| journal.recorded(&self.op_id(name, visit_no, suffix)).is_some());
            let error = journal.recorded(id).and_then(|op| op.error).unwrap_or_default();
            if on_path && !retried && uncaught(&error) {
                journal.reopen(id);
            }
        }
        #[cfg(not(feature = "durable"))]
        let _ = (scope, name, visit_no, attempt_no, uncaught);
    }

    /// Marks attempt `attempt_no` of visit `visit_no` of DISTRIBUTED Map `name` (its children's
    /// operation prefix) for a redrive to run its children that did not succeed again, as
    /// [`Execution::reopen_for_redrive`] reopens a Parallel or inline Map attempt: on this run's
    /// redriven path (the top level, a branch the redrive reopened, or a branch that was still
    /// running when the execution ended: stopped or timed out, AWS redrives a Map state with no
    /// `MapStateExited`), the state's last attempt, and its Map Run's failure (a tolerance
    /// exceeded) not caught. The Map Run then checks, from the journal, whether it had failed
    /// or was ended by its execution (`distributed::store_sync::RedrivePlan`).
    pub(super) fn reopen_map_run_for_redrive(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        uncaught: impl FnOnce(&str) -> bool,
    ) {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && journal.redrive_count() > 0
        {
            let on_path = match &self.scope.context {
                None => true,
                Some(line) => {
                    journal.is_reopened(line)
                        || journal.recorded(line).is_none_or(|op| !op.status.is_terminal() && op.error.is_none())
                }
            };
            let retried = [format!(".{}/0", attempt_no + 1), format!(".retry{}", attempt_no + 1)]
                .iter()
                .any(|suffix| journal.recorded(&self.op_id(name, visit_no, suffix)).is_some());
            // A Map state that exited (its Map Run within its tolerance) is left as it ended, as
            // AWS redrives a Map Run only when its Map state failed.
            let exited = journal
                .recorded(&self.op_id(name, visit_no, &format!(".exited{attempt_no}")))
                .is_some_and(|op| op.status == crate::journal::OpStatus::Succeeded);
            if on_path && !retried && !exited && uncaught(wfc_ir::errors::EXCEED_TOLERATED_FAILURE_THRESHOLD) {
                journal.reopen(&self.op_id(name, visit_no, &format!(".{attempt_no}")));
            }
        }
        #[cfg(not(feature = "durable"))]
        let _ = (name, visit_no, attempt_no, uncaught);
    }

    /// Journals that attempt `attempt_no` of visit `visit_no` of DISTRIBUTED Map `name` exited
    /// (its `MapStateExited`): a redrive then leaves its Map Run alone (see
    /// [`Execution::reopen_map_run_for_redrive`]). The Map Run's own end cannot tell: a stop
    /// arriving as its last child ends records it though the Map state never exits.
    pub(super) async fn journal_map_state_exited(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
    ) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".exited{attempt_no}"));
            let exited = async { crate::task::Attempt::Succeeded(Value::Null) };
            journal.step(id, self.op_parent(), name, None, Box::pin(exited)).await?;
        }
        #[cfg(not(feature = "durable"))]
        let _ = (name, visit_no, attempt_no);
        Ok(())
    }

    /// The journal's execution name when it differs from [`Execution::task_execution_name`] (a
    /// DISTRIBUTED Map Run's child, journaled in its parent's execution).
    pub(crate) fn stored_execution_name(&self) -> Option<String> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal
            && journal.name() != self.task_execution_name()
        {
            return Some(journal.name().to_owned());
        }
        None
    }

    /// Notes that the state entered on this line now has Entered event `id` (see
    /// [`Scope::entered`]).
    #[cfg(feature = "durable")]
    #[inline]
    pub(super) fn note_entered(&self, id: u64) {
        self.scope.entered.store(id, Ordering::Relaxed);
    }

    /// Keeps an event a muted line does not record (see [`MutedState`]): from the entry of each
    /// state on, the last state's only.
    #[cfg(feature = "durable")]
    #[cold]
    pub(super) fn keep_muted<D: Into<crate::Details>>(&self, event_type: EventType, details: impl FnOnce() -> D) {
        if !self.keeps_history() {
            return;
        }
        if event_type == EventType::MapIterationStarted {
            // A rerun iteration is started again when it goes live (see `Mute::restart`).
            if let Some(own) = &self.scope.own_mute {
                *own.restart.lock().unwrap_or_else(|p| p.into_inner()) = Some(super::Restart {
                    line: Arc::clone(&self.cursor),
                    captures: self.scope.captures.clone(),
                    event_type,
                    details: details().into(),
                });
            }
            return;
        }
        let mut muted = self.scope.muted_state.lock().unwrap_or_else(|p| p.into_inner());
        if event_type.name().ends_with("StateEntered") {
            muted.entered_as = self.cursor.last.load(Ordering::SeqCst);
            muted.events.clear();
        } else if muted.events.is_empty() {
            // Not a state's (a Map iteration's `MapIterationStarted`).
            return;
        }
        muted.events.push((event_type, details().into()));
    }

    /// A branch or iteration that a redrive reopened failed again while still muted: nothing on
    /// it ran live (a failed Task runs again and a Fail state records its entry, both
    /// unmuting it), so its last state failed as it did before the redrive, by a path error, a
    /// Choice with no match or a Pass failure. AWS re-enters such a state and fails again
    /// ("Redrive behavior of individual states"), so the line records again from that state's
    /// entry: the events it kept while muted, and `failure` naming the new Entered event.
    #[cfg(feature = "durable")]
    fn reenter_muted(&self, failure: Failure) -> Failure {
        let muted = std::mem::take(&mut *self.scope.muted_state.lock().unwrap_or_else(|p| p.into_inner()));
        self.unmute();
        let mut entered = None;
        for (event_type, details) in muted.events {
            let details = match entered {
                Some(to) => entry_moved_in(details, muted.entered_as, to),
                None => details,
            };
            entered.get_or_insert(self.record(event_type, details));
        }
        match entered {
            Some(to) => Failure { cause: entry_moved(&failure.cause, muted.entered_as, to), ..failure },
            None => failure,
        }
    }

    /// RedriveExecution of an execution whose failure ends it at the top level again without
    /// a Task attempt: a Fail state, or a state failing by a path error, a Choice with no match
    /// or a Pass failure (nothing of it is journaled, so the replay reaches it and fails again,
    /// as AWS's "Redrive behavior of individual states" says: it "reenters the Fail state and
    /// fails again", "reevaluates the Choice state rules"). On AWS each such redrive shows in
    /// the history as the run's end, `ExecutionRedriven`, then the state entered and failing
    /// again; the replay recorded the state once, so each redrive the history does not hold yet
    /// is recorded here: `ExecutionFailed`, `ExecutionRedriven`, then the state's events again
    /// (its Entered event on), and the returned failure names the last Entered event.
    ///
    /// Which redrives, read from the stored history after the state's first entry (the runs
    /// before it failed elsewhere, and the replay records their `ExecutionRedriven` where it
    /// passes them): each later redrive `k` has its `ExecutionRedriven` there, recorded by a run
    /// (then this replay records it again, after the failure it redrove), or appended by the
    /// store after a stop or a timeout (`ExecutionAborted`/`ExecutionTimedOut`, then it: the
    /// live history keeps both and writes this run's events after them), or, for this run's
    /// own redrive of a FAILED execution, not yet. Run `k` re-entered the state and failed
    /// again unless a stop or a timeout cut it short first: the next redrive is then one the
    /// store appended, and redrive `k`'s own `ExecutionRedriven` was added by the stop or the
    /// timeout (`durable::cut_short_redriven_event`), or, in a history stored before stops
    /// added it, is missing (the stop's `ExecutionAborted` follows the end of run `k - 1`).
    /// This run re-enters it now. A re-entry's cause names its Entered event by its stored id
    /// (the replay's id plus the events the store appended before it). A state whose own
    /// events hold an `ExecutionRedriven` (a Task run again, a reopened attempt) is left as is.
    #[cfg(feature = "durable")]
    pub(super) async fn reenter_for_redrive(&self, failure: Failure) -> Failure {
        use crate::EventType::{ExecutionAborted, ExecutionRedriven, ExecutionTimedOut};
        let Some(journal) = &self.shared.journal else { return failure };
        let redrives = u64::from(journal.redrive_count());
        let entered = self.scope.entered.load(Ordering::SeqCst);
        if redrives == 0 || entered == 0 || self.scope.context.is_some() || !self.keeps_history() {
            return failure;
        }
        let state = self.shared.history.events_from(entered - 1);
        if state.iter().any(|e| e.event_type == ExecutionRedriven) {
            return failure;
        }
        let stored = match journal.stored_history().await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the stored history: the redrives of a failure re-entered are not recorded");
                return failure;
            }
        };
        // The state's first entry as stored (stored ids are the replay's, or later by the
        // events a stop and its redrive appended); none: this run is the first to fail here.
        let Some(first) = state.first() else { return failure };
        let Some(at) = stored
            .iter()
            .position(|e| e.id >= entered && e.event_type == first.event_type && e.details == first.details)
        else {
            return failure;
        };
        let redrive_of = |e: &crate::HistoryEvent| -> Option<u64> {
            (e.event_type == ExecutionRedriven).then(|| e.details["redriveCount"].as_u64()).flatten()
        };
        let ended = |e: &crate::HistoryEvent| matches!(e.event_type, ExecutionAborted | ExecutionTimedOut);
        let find = |k: u64| stored[at..].iter().position(|e| redrive_of(e) == Some(k)).map(|i| at + i);
        let appended = |k: u64| find(k).is_some_and(|q| q > 0 && ended(&stored[q - 1]));
        let after_stop = |k: u64| find(k).is_some_and(|q| q > 0 && stored[q - 1].event_type == ExecutionAborted);
        // The redrive whose run failed here first.
        let first_failure = stored[..at].iter().filter_map(redrive_of).max().unwrap_or(0);
        let mut offset = stored[at].id - entered;
        let mut current = failure.clone();
        for k in first_failure + 1..=redrives {
            match find(k) {
                Some(q) if appended(k) => {
                    offset += 1 + stored[..q].iter().rev().take_while(|e| ended(e)).count() as u64;
                }
                // A history stored before stops added the redrive they cut short: redrive `k`
                // (of the FAILED execution) has no event, and a stop's end and the next
                // redrive's event follow the end of run `k - 1`. That end is stored (this run
                // records it again); the redrive's event is not (none recorded, so the ids
                // after it are the stored ones). (A timeout that cut such a run short before
                // `durable::cut_short_by_timeout` deleted the stored events after its replay:
                // that end is not stored, so it is not recorded again.)
                None if k < redrives && after_stop(k + 1) => {
                    self.record(EventType::ExecutionFailed, failure_details(&current));
                }
                // Not a history wfc writes (a later redrive recorded by a run, this one
                // missing): nothing recorded for it.
                None if k < redrives => {}
                _ => {
                    self.record(EventType::ExecutionFailed, failure_details(&current));
                    self.record(ExecutionRedriven, json!({ "redriveCount": k }));
                }
            }
            if k < redrives && appended(k + 1) {
                continue;
            }
            let mut again = None;
            for event in &state {
                let details = match again {
                    Some(to) => entry_moved_in(event.details.clone(), entered, to + offset),
                    None => event.details.clone(),
                };
                again.get_or_insert(self.record(event.event_type, details));
            }
            if let Some(to) = again {
                current = Failure { cause: entry_moved(&failure.cause, entered, to + offset), ..failure.clone() };
            }
        }
        current
    }

    /// Lets this line record history events again when a redrive muted it (see [`Scope::mute`]):
    /// a DISTRIBUTED Map Run that the redrive runs again records from there.
    #[cfg(feature = "durable")]
    pub(crate) fn unmute_for_redrive(&self) {
        if self.scope.muted() {
            self.unmute();
        }
    }

    /// What a Task attempt (or a Serverless Workflow function call) asks for, when a
    /// suspending journal needs it (a replay-only run reports the attempt instead of running
    /// it; see `wfc_journal::suspend`).
    pub(crate) fn step_request(
        &self,
        resource: &str,
        params: &Value,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Option<crate::task::StepRequest> {
        #[cfg(feature = "durable")]
        if self.shared.journal.as_ref().is_some_and(|j| j.wants_step_requests()) {
            return Some(crate::task::StepRequest {
                resource: resource.to_owned(),
                input: params.clone(),
                timeout,
                heartbeat,
            });
        }
        let _ = (resource, params, timeout, heartbeat);
        None
    }

    /// One Task attempt: replayed from the journal when recorded, else run (and checkpointed).
    pub(super) fn journaled_attempt<'a, Fut>(
        &'a self,
        name: &'a str,
        visit_no: u32,
        attempt_no: u32,
        request: Option<crate::task::StepRequest>,
        run: Fut,
    ) -> impl Future<Output = Result<Attempt, Failure>>
    where
        Fut: Future<Output = Attempt> + Send + 'a,
    {
        // Not an `async fn`: that would hold `run` twice (as its argument and while awaiting
        // it), and every Task visit's future holds this one. The caller awaits it at once.
        #[cfg(feature = "durable")]
        {
            if let Some(journal) = &self.shared.journal {
                let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
                // Boxed at the trait boundary (the store's future is large anyway).
                let step = journal.step(id, self.op_parent(), name, request, Box::pin(run));
                return futures::future::Either::Left(step);
            }
            futures::future::Either::Right(run.map(Ok))
        }
        #[cfg(not(feature = "durable"))]
        {
            let _ = (name, visit_no, attempt_no, request);
            run.map(Ok)
        }
    }

    /// The in-memory callback handle of this execution (SendTaskSuccess/Failure/Heartbeat).
    pub fn callbacks(&self) -> &crate::Callbacks {
        &self.shared.callbacks
    }

    /// `$$.Task.Token` of an attempt: derived from the execution id and the attempt's position
    /// (its durable operation id when journaled, else the state and its entered event), so both
    /// engines and every replay compute the same token.
    /// When the journal's service issues callback ids (a Lambda durable function), the token
    /// is that id (`wfc_journal::Journal::callback_token`).
    pub(super) async fn task_token(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        entered_id: u64,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Result<String, Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            let own = crate::callback::task_token(self.id(), &id);
            // Boxed at the trait boundary, as in `journaled_attempt`.
            return journal.callback_token(self.clock(), &id, self.op_parent(), name, own, timeout, heartbeat).await;
        }
        let _ = (visit_no, timeout, heartbeat);
        Ok(crate::callback::task_token(self.id(), &format!("{name}@{entered_id}.{attempt_no}")))
    }

    /// One attempt of a `.waitForTaskToken` Task: `handler` (which hands `token` on), then the
    /// wait for SendTaskSuccess/Failure, in memory and, when journaled, through the store.
    #[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
    pub(super) async fn callback_attempt<Fut>(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        token: &str,
        params: Value,
        handler: Fut,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Result<Attempt, Failure>
    where
        Fut: Future<Output = Attempt> + Send,
    {
        let registration = self.shared.callbacks.register(token);
        let waiting = crate::callback::WaitingTask {
            token: token.to_owned(),
            state_name: name.to_owned(),
            execution_name: self.task_execution_name().to_owned(),
            input: params,
        };
        let limits = crate::callback::Limits { timeout_at: timeout.map(|t| Instant::now() + t), heartbeat, timeout };
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            return journal
                .callback(self.clock(), id, self.op_parent(), name, registration, waiting, limits, Box::pin(handler))
                .await;
        }
        let _ = (visit_no, attempt_no);
        Ok(crate::callback::run(registration, waiting, limits, handler).await)
    }

    /// The back-off before retry `retry_no`, as a durable timer.
    pub(super) async fn backoff(
        &self,
        name: &str,
        visit_no: u32,
        retry_no: u32,
        delay: Duration,
    ) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, &format!(".retry{retry_no}"));
            return journal.sleep(self.clock(), id, self.op_parent(), name, "Retry", delay).await;
        }
        let _ = (name, visit_no, retry_no);
        self.clock().sleep(delay).await;
        Ok(())
    }

    /// A Wait state's delay, as a durable timer.
    pub(super) async fn durable_wait(&self, name: &str, visit_no: u32, delay: Duration) -> Result<(), Failure> {
        #[cfg(feature = "durable")]
        if let Some(journal) = &self.shared.journal {
            let id = self.op_id(name, visit_no, "");
            // A branch a redrive runs again after another's failure cancelled it during this
            // Wait records from here (see `Execution::muted_if_replayed`).
            if self.scope.muted() && journal.recorded(&id).is_none() {
                self.unmute();
            }
            return journal.sleep(self.clock(), id, self.op_parent(), name, "Wait", delay).await;
        }
        let _ = (name, visit_no);
        self.clock().sleep(delay).await;
        Ok(())
    }

    /// A new line of control (as [`Execution::branch`]) whose operations belong to the
    /// operation `context` (a Serverless Workflow subflow's CHAINED_INVOKE): their ids start
    /// with `<context>/`, and `context` is their parent.
    #[cfg(feature = "durable")]
    pub(crate) fn sub_scope(&self, context: String) -> Execution {
        let line = self.branch();
        Execution {
            scope: Arc::new(Scope { path: format!("{context}/"), context: Some(context), ..Scope::default() }),
            ..line
        }
    }

    /// The operation-id prefix of a DISTRIBUTED Map attempt's children when journaled
    /// (`<State>#<visit>.<attempt>`; child `i` is the CHAINED_INVOKE `<prefix>/<i>`).
    pub(crate) fn map_run_op(&self, name: &str, visit_no: u32, attempt_no: u32) -> Option<String> {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            return Some(self.op_id(name, visit_no, &format!(".{attempt_no}")));
        }
        let _ = (name, visit_no, attempt_no);
        None
    }

    /// Runs a Map Run child (`run`: its whole execution, ending in the value the Map Run keeps
    /// of it) as the CHAINED_INVOKE `op` when journaled, as a Serverless Workflow subflow is: a
    /// finished child replays that value without running, an unfinished one runs again with
    /// its own operations replayed. On a Lambda durable function configured to chain Map Run
    /// children, `run` is not run: the function invokes itself with `envelope` (see
    /// `distributed::run_chained_child`) and the value is that invocation's result. The error
    /// is a store failure, a suspension, or a chained child that failed to run.
    pub(crate) async fn journaled_map_child<Fut>(
        &self,
        op: Option<String>,
        name: &str,
        envelope: impl FnOnce() -> Value,
        run: Fut,
    ) -> Result<Value, Failure>
    where
        Fut: Future<Output = Value> + Send,
    {
        #[cfg(feature = "durable")]
        if let (Some(journal), Some(id)) = (&self.shared.journal, op.as_deref()) {
            if let Some(function) = journal.map_run_function() {
                return journal.chained_map_run_child(id, self.op_parent(), name, &function, &envelope()).await;
            }
            let child = async {
                let kept = run.await;
                // A suspended worker run unwinds through the child's lines with a failure that is
                // not the child's: the Map Run stops with it instead of counting a failed child
                // (and the CHAINED_INVOKE stays STARTED).
                match journal.suspended() {
                    Some(_) => Err(Failure::runtime("the execution was suspended inside a Map Run child")),
                    None => Ok(kept),
                }
            };
            return journal.subflow_as(id, self.op_parent(), name, "MapRunChild", Box::pin(child)).await;
        }
        let _ = (op, name, envelope);
        Ok(run.await)
    }

    /// The execution handed to a Parallel attempt's branches: the same line of control, in a
    /// scope named after the attempt, so each [`Execution::branch`] gets a stable path.
    /// Its lines are CONTEXT operations of `branch_subtype`, children of the attempt's own.
    pub(super) fn parallel_scope(
        &self,
        name: &str,
        visit_no: u32,
        attempt_no: u32,
        branch_subtype: &'static str,
    ) -> Execution {
        #[cfg(feature = "durable")]
        if self.shared.journal.is_some() {
            let context = self.op_id(name, visit_no, &format!(".{attempt_no}"));
            return Execution {
                shared: Arc::clone(&self.shared),
                cursor: Arc::clone(&self.cursor),
                variables: Arc::clone(&self.variables),
                in_parallel_branch: branch_subtype == "ParallelBranch",
                scope: Arc::new(Scope {
                    captures: self.scope.captures.iter().cloned().chain([EventCapture::default()]).collect(),
                    mute: self.scope.mute.clone(),
                    path: format!("{context}/"),
                    owner: Some(BranchOf {
                        state: name.to_owned(),
                        subtype: branch_subtype,
                        parent: Some(context.clone()),
                    }),
                    context: Some(context),
                    ..Scope::default()
                }),
            };
        }
        let _ = (name, visit_no, attempt_no);
        Execution { in_parallel_branch: branch_subtype == "ParallelBranch", ..self.clone() }
    }
}

/// `cause` naming Entered event `to` where it named `from` as its state's entry (AWS's prefix of
/// a state's runtime failure, see `Visit::runtime`): a state entered again fails naming its new
/// entry.
#[cfg(feature = "durable")]
fn entry_moved(cause: &str, from: u64, to: u64) -> String {
    cause.replacen(&format!("(entered at the event id #{from})"), &format!("(entered at the event id #{to})"), 1)
}

/// An event's details with [`entry_moved`] applied to their `cause`.
#[cfg(feature = "durable")]
fn entry_moved_in(mut details: crate::Details, from: u64, to: u64) -> crate::Details {
    if let Some(Value::String(cause)) = details.get("cause") {
        let moved = entry_moved(cause, from, to);
        details.insert("cause", Value::String(moved));
    }
    details
}
