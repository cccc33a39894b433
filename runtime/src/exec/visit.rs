//! One visit to a state: its Entered/Exited events, its context object, the `States.Runtime`
//! prefix, and the abort guard every state type shares.

use std::cell::Cell;
use std::sync::Arc;

use serde_json::{Value, json};
use wfc_ir::{Assign, JsonataTemplate};

use super::Execution;
use crate::jsonata::{self, Bindings};
use crate::variables;
use crate::{Details, EventType, Failure};

/// One visit to a state: records Entered/Exited and builds the context object on demand.
pub(super) struct Visit<'a> {
    pub(super) exec: &'a Execution,
    pub(super) name: &'a str,
    pub(super) state_type: &'static str,
    /// When the state was entered (its Entered event's timestamp and `$$.State.EnteredTime`),
    /// formatted only when something reads it. `None` when nothing will read it (see
    /// [`Visit::start_timed`]): then not even the clock is read.
    pub(super) entered_at: Option<jiff::Timestamp>,
    pub(super) entered_id: u64,
    pub(super) retry_count: u32,
    /// `$$.Task.Token` of the current attempt of a `.waitForTaskToken` Task.
    pub(super) task_token: Option<String>,
    /// Whether the state's input passed a payload check already (see [`Line`]): then what the
    /// state passes on unchanged needs none.
    pub(super) input_checked: bool,
    /// The name and input its Entered event shares (when the history keeps events): its Exited
    /// event shares the same name, and the same document when the output is the input
    /// unchanged, without looking either up again.
    entered: EnteredParts,
    /// Whether the state awaits nothing between its Entered and Exited events (Pass, Choice,
    /// Succeed): then its Exited event is stamped with the instant read for its Entered event
    /// instead of reading the clock again (see [`Visit::start_synchronous`]).
    synchronous: bool,
}

/// The name and document a state's Entered event shares (`None` at the express level, which
/// builds no details).
type Parts = Option<(Arc<Value>, Arc<Value>)>;

/// [`Parts`] whose drop costs a visit at the express level one test: a field with drop glue
/// of its own made the visit's drop an out-of-line call on every state (+15 instructions).
struct EnteredParts(std::mem::ManuallyDrop<Parts>);

impl EnteredParts {
    fn get(&self) -> Option<&(Arc<Value>, Arc<Value>)> {
        self.0.as_ref()
    }
}

impl Drop for EnteredParts {
    #[inline]
    fn drop(&mut self) {
        if self.0.is_some() {
            release(&mut self.0);
        }
    }
}

/// Drops the parts (taken out, so the `ManuallyDrop` is left holding `None`: nothing leaks).
#[inline(never)]
fn release(parts: &mut Parts) {
    drop(parts.take());
}

/// What a state's output is to its input, for sharing it into the Exited event.
#[derive(Clone, Copy)]
enum Output {
    /// Anything: shared when it is the same JSON as the last document shared, else copied.
    Any,
    /// The input unchanged (moved on): the Entered event's document.
    Unchanged,
}

impl<'a> Visit<'a> {
    pub(super) fn enter(exec: &'a Execution, name: &'a str, state_type: &'static str, input: &Value) -> Visit<'a> {
        Visit::enter_timed(exec, name, state_type, input, true, false)
    }

    /// [`Visit::enter`]; `timed` false says the state will not build its context object, so
    /// unless the history stamps the Entered event, the clock is not read at all; `synchronous`
    /// says the state awaits nothing before its Exited event (see [`Visit::start_synchronous`]).
    #[inline]
    fn enter_timed(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
        timed: bool,
        synchronous: bool,
    ) -> Visit<'a> {
        let entered_at = (timed || exec.keeps_history()).then(|| exec.clock().now());
        let mut entered = None;
        let entered_id = match EventType::entered(state_type) {
            Some(ty) => exec.record_at(
                ty,
                || entered_at,
                || {
                    let details = history_details(exec, name, "input", input);
                    entered = details.named_parts().map(|(name, doc)| (Arc::clone(name), Arc::clone(doc)));
                    details
                },
            ),
            None => 0,
        };
        #[cfg(feature = "durable")]
        exec.note_entered(entered_id);
        tracing::debug!(state = name, r#type = state_type, "entered");
        let input_checked = exec.cursor.take_input_checked();
        Visit {
            exec,
            name,
            state_type,
            entered_at,
            entered_id,
            retry_count: 0,
            task_token: None,
            input_checked,
            entered: EnteredParts(std::mem::ManuallyDrop::new(entered)),
            synchronous,
        }
    }

    /// [`Visit::enter`] after checking the history limit, so every state entry is bounded.
    pub(super) fn start(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
    ) -> Result<Visit<'a>, Failure> {
        exec.check_history()?;
        Ok(Visit::enter(exec, name, state_type, input))
    }

    /// [`Visit::start`] for a state that knows on entry whether it builds its context object
    /// (`needs_context`) and awaits nothing before it would: Pass, Choice, Succeed, and a Task
    /// that never builds it. At the express level such a state reads no clock when it does not
    /// need `$$`.
    #[inline]
    pub(super) fn start_timed(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
        needs_context: bool,
    ) -> Result<Visit<'a>, Failure> {
        exec.check_history()?;
        Ok(Visit::enter_timed(exec, name, state_type, input, needs_context, false))
    }

    /// [`Visit::start_timed`] for a state whose work awaits nothing (Pass, Choice, Succeed: it
    /// runs within one poll, taking no time on a virtual clock and well under a millisecond,
    /// the timestamps' resolution, on the real one): its Exited event is stamped with the
    /// instant its Entered event was, read once. At the full history level that is one clock
    /// read a state instead of two.
    #[inline]
    pub(super) fn start_synchronous(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        input: &Value,
        needs_context: bool,
    ) -> Result<Visit<'a>, Failure> {
        exec.check_history()?;
        Ok(Visit::enter_timed(exec, name, state_type, input, needs_context, true))
    }

    /// [`Visit::exit`] after checking the output against the payload and depth limits. The
    /// next state's input is this output, so inputs need no second check.
    #[inline]
    pub(super) fn finish(&self, output: &Value) -> Result<(), Failure> {
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))?;
        self.exit(output);
        Ok(())
    }

    /// [`Visit::finish`] for an output known, when the state was compiled, to serialize to at
    /// most `max_bytes` bytes nested at most `max_depth` levels: under the execution's limits,
    /// it needs no check.
    /// `input` is the state's input, no longer needed: the history's copy of the output is
    /// made in its allocations (see [`crate::History::named_new_into`]).
    #[inline]
    pub(super) fn finish_within(
        &self,
        output: &Value,
        max_bytes: usize,
        max_depth: usize,
        input: Value,
    ) -> Result<(), Failure> {
        let limits = self.exec.limits();
        if !(max_bytes < limits.max_payload_bytes && max_depth < limits.max_json_depth) {
            self.limits_check(output)?;
        }
        self.exit_new(output, input);
        Ok(())
    }

    /// [`Visit::exit`] for an output the state built whole just now, its history copy made in
    /// `spare` (see [`crate::History::named_new_into`]): not compared with the last document
    /// shared, which it rarely is.
    #[inline]
    fn exit_new(&self, output: &Value, spare: Value) {
        if let Some(ty) = EventType::exited(self.state_type) {
            self.exec.record_at(
                ty,
                || self.exit_time(),
                || match self.entered.get() {
                    Some((name, _)) => {
                        self.exec.shared.history.named_new_into(Arc::clone(name), "output", output, spare)
                    }
                    None => history_details(self.exec, self.name, "output", output),
                },
            );
        }
    }

    /// [`Visit::finish`] for an output that is the state's input unchanged: when that input
    /// was checked (see [`Line`]), it needs no second check.
    #[inline]
    pub(super) fn finish_unchanged(&self, output: &Value) -> Result<(), Failure> {
        if !self.input_checked {
            self.limits_check(output)?;
        }
        self.exit_as(output, Output::Unchanged);
        Ok(())
    }

    /// The payload and depth limits' check of an output.
    #[inline]
    fn limits_check(&self, output: &Value) -> Result<(), Failure> {
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))
    }

    #[inline]
    pub(super) fn exit(&self, output: &Value) {
        self.exit_as(output, Output::Any);
    }

    #[inline]
    fn exit_as(&self, output: &Value, kind: Output) {
        if let Some(ty) = EventType::exited(self.state_type) {
            self.exec.record_at(ty, || self.exit_time(), || self.exited_details(output, kind));
        }
    }

    /// The instant to stamp the Exited event with: the Entered event's for a state that awaits
    /// nothing, else `None` (now).
    #[inline]
    fn exit_time(&self) -> Option<jiff::Timestamp> {
        if self.synchronous { self.entered_at } else { None }
    }

    /// `{"name", "output"}` of the Exited event, sharing the Entered event's name (and its
    /// document, when `kind` says the output is the input unchanged).
    fn exited_details(&self, output: &Value, kind: Output) -> Details {
        let history = &self.exec.shared.history;
        match (self.entered.get(), kind) {
            (Some((name, input)), Output::Unchanged) => {
                Details::named_shared(Arc::clone(name), "output", Arc::clone(input))
            }
            (Some((name, _)), Output::Any) => history.named_as(Arc::clone(name), "output", output),
            (None, _) => history_details(self.exec, self.name, "output", output),
        }
    }

    /// [`finish`](Self::finish) for a state that evaluated an `Assign` block (its own, a Choice
    /// rule's or a catcher's): the Exited event also records the values, as AWS's
    /// `assignedVariables`, then they become visible from the next state on.
    pub(super) fn finish_assigned(
        &self,
        output: &Value,
        assigned: Option<Vec<(String, Value)>>,
    ) -> Result<(), Failure> {
        let Some(values) = assigned else {
            return self.finish(output);
        };
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))?;
        if let Some(ty) = EventType::exited(self.state_type) {
            self.exec.record_at(
                ty,
                || self.exit_time(),
                || {
                    let mut details = self.exited_details(output, Output::Any);
                    crate::variables::record_assigned(&mut details, &values);
                    details
                },
            );
        }
        self.commit(Some(values)).map_err(|f| self.runtime(f))
    }

    /// The context object, carrying the variables in scope (as of now: called before this
    /// state commits its own `Assign`) for `$name` paths and JSONata.
    pub(super) fn context(&self) -> Value {
        // Only a state entered with `timed` false lacks the time, and it builds no context; if
        // one ever did, now is the best reading there is (nothing was awaited since entry).
        let entered_at = self.entered_at.unwrap_or_else(|| self.exec.clock().now());
        let entered_time = crate::clock::format_timestamp(entered_at);
        // Only the states with `Retry` have a retry count in their context object.
        let retry_count = matches!(self.state_type, "Task" | "Parallel" | "Map").then_some(self.retry_count);
        let mut ctx = self.exec.context_object(self.name, &entered_time, retry_count);
        if let Some(token) = &self.task_token {
            ctx["Task"] = json!({ "Token": token });
        }
        if !self.exec.variables.is_empty()
            && let Some(m) = ctx.as_object_mut()
        {
            m.insert(wfc_ir::jsonpath::VARIABLES_KEY.to_owned(), Value::Object(self.exec.variables.visible()));
        }
        ctx
    }

    /// Evaluates an `Assign` block against the variables as of state entry (see
    /// [`crate::variables`]); `dollar` is what `$` means for a JSONPath Assign.
    pub(super) fn assign(
        &self,
        assign: Option<&Assign>,
        dollar: &Value,
        bindings: &Bindings<'_>,
    ) -> Result<Option<Vec<(String, Value)>>, Failure> {
        let Some(assign) = assign else { return Ok(None) };
        self.exec.with_rng(|rng| variables::evaluate(assign, dollar, bindings, bindings.context, rng)).map(Some)
    }

    /// Makes assigned values visible from the next state on.
    fn commit(&self, assigned: Option<Vec<(String, Value)>>) -> Result<(), Failure> {
        match assigned {
            Some(values) => self.exec.variables.commit(self.name, values),
            None => Ok(()),
        }
    }

    /// A JSONata `Output`-like template evaluated with `bindings`.
    pub(super) fn jsonata(&self, t: &JsonataTemplate, field: &str, bindings: &Bindings<'_>) -> Result<Value, Failure> {
        self.exec.with_rng(|rng| jsonata::template(t, field, bindings, rng))
    }

    /// The context object if `needed`, else `null` (nothing will read it).
    #[inline]
    pub(super) fn context_if(&self, needed: bool) -> Value {
        if needed { self.context() } else { Value::Null }
    }

    /// Adds AWS's prefix to a `States.Runtime` failure raised by this state's own processing.
    pub(super) fn runtime(&self, failure: Failure) -> Failure {
        runtime_failure(self.exec, self.name, self.entered_id, failure)
    }
}

/// Adds AWS's prefix to a `States.Runtime` (or `States.QueryEvaluationError`) failure raised by
/// the processing of state `name`, entered as event `entered_id`; a JSONata evaluation failure
/// also records `EvaluationFailed`.
#[cold]
pub(super) fn runtime_failure(exec: &Execution, name: &str, entered_id: u64, failure: Failure) -> Failure {
    let prefixed = failure.cause.starts_with("An error occurred while executing the state '");
    if (failure.error == wfc_ir::errors::RUNTIME || failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR)
        && !prefixed
    {
        let failure = Failure {
            error: failure.error,
            cause: format!(
                "An error occurred while executing the state '{name}' (entered at the event id #{entered_id}). {}",
                failure.cause
            ),
        };
        if failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR {
            evaluation_failed(exec, name, &failure);
        }
        failure
    } else {
        failure
    }
}

/// Records `EvaluationFailed`: a JSONata evaluation failed the state for good (AWS records it
/// before the state's own failure events and `ExecutionFailed`), with the field it failed in
/// (`location`) when the cause names one.
fn evaluation_failed(exec: &Execution, name: &str, failure: &Failure) {
    exec.record_with(EventType::EvaluationFailed, || {
        let mut details = json!({ "error": failure.error, "cause": failure.cause, "state": name });
        let field = failure.cause.split_once("specified for the field '").and_then(|(_, rest)| rest.split_once('\''));
        if let Some((location, _)) = field {
            details["location"] = json!(location);
        }
        details
    });
}

/// The visit of a state that reads no context object (a Pass, a Choice, a plain Task) in an
/// execution whose events are only numbered ([`Execution::counts_only`]: the express level, no
/// journal). Its events have ids and nothing else, so where a [`Visit`] reads the clock, keeps
/// the Entered event's parts for the Exited one and matches the state type to its events, this
/// counts the events and keeps the entered id for failure causes: the same ids, causes, payload
/// checks and tracing, at about half the instructions a state (the counting loop: ~250 of a
/// transition's ~1,100 were the `Visit`).
///
/// The Entered event is counted late, with the events that follow it without a pause (one
/// atomic add for all: the Exited one of a Pass or Choice that succeeds, a Task's Scheduled and
/// Started), or on the way out of a state that fails (in [`CountedVisit::runtime`], or when the
/// visit is dropped). Nothing in between records or reads an event, so the ids are the ones
/// counting each at once would give.
pub(super) struct CountedVisit<'a> {
    exec: &'a Execution,
    name: &'a str,
    entered: EventType,
    /// The Entered event's id, once counted.
    entered_id: Cell<Option<u64>>,
    /// As [`Visit::input_checked`].
    pub(super) input_checked: bool,
}

impl<'a> CountedVisit<'a> {
    /// Checks the history limit; the Entered event `entered` is counted later (see above),
    /// before anything that awaits.
    #[inline]
    pub(super) fn deferred(
        exec: &'a Execution,
        name: &'a str,
        state_type: &'static str,
        entered: EventType,
    ) -> Result<CountedVisit<'a>, Failure> {
        exec.check_history()?;
        tracing::debug!(state = name, r#type = state_type, "entered");
        let input_checked = exec.cursor.take_input_checked();
        Ok(CountedVisit { exec, name, entered, entered_id: Cell::new(None), input_checked })
    }

    /// Counts the Entered event and then `then`, back to back (a Task's Scheduled and Started
    /// events), for a visit that has not counted it yet.
    #[inline]
    pub(super) fn enter_with(&self, then: [EventType; 2]) {
        let last = self.exec.count_back_to_back(&[self.entered, then[0], then[1]]);
        self.entered_id.set(Some(last - 2));
    }

    /// The Entered event's id, counting the event if it was not yet.
    #[inline]
    pub(super) fn entered_id(&self) -> u64 {
        match self.entered_id.get() {
            Some(id) => id,
            None => {
                let id = self.exec.record_with(self.entered, Details::default);
                self.entered_id.set(Some(id));
                id
            }
        }
    }

    /// As [`Visit::runtime`].
    pub(super) fn runtime(&self, failure: Failure) -> Failure {
        runtime_failure(self.exec, self.name, self.entered_id(), failure)
    }

    /// As [`Visit::limits_check`].
    #[inline]
    pub(super) fn limits_check(&self, output: &Value) -> Result<(), Failure> {
        self.exec.limits().check_payload(self.name, output).map_err(|f| self.runtime(f))
    }

    /// Counts the Exited event `exited` (with the Entered one, if that is still to count).
    #[inline]
    pub(super) fn exit(&self, exited: EventType) {
        if self.entered_id.get().is_none() {
            let id = self.exec.count_back_to_back(&[self.entered, exited]);
            self.entered_id.set(Some(id - 1));
        } else {
            self.exec.record_with(exited, Details::default);
        }
    }

    /// Counts `last` and then the Exited event `exited`, back to back (a Task's Succeeded and
    /// Exited events), after the Entered one.
    #[inline]
    pub(super) fn exit_after(&self, last: EventType, exited: EventType) {
        self.entered_id();
        self.exec.count_back_to_back(&[last, exited]);
    }
}

impl Drop for CountedVisit<'_> {
    /// A visit that neither exited nor failed through [`CountedVisit::runtime`] (a Choice whose
    /// rules matched nothing, a failure passed up as it is) still entered its state.
    fn drop(&mut self) {
        self.entered_id();
    }
}

/// `{"name": name, <key>: value}`, the details of an Entered/Exited event, the value shared
/// (not copied) with the events around it while it is the same document.
fn history_details(exec: &Execution, name: &str, key: &'static str, value: &Value) -> Details {
    exec.shared.history.named(name, key, value)
}

/// `{"name": name}`, the details of a state's events that carry nothing else.
pub(super) fn name_details(name: &str) -> Details {
    Details::with_capacity(1).with("name", Value::String(name.to_owned()))
}

/// The span of one state visit. Always inlined: returned from a call, the span came back
/// through memory and every visit's first read of it waited on the stores (a store-forwarding
/// stall, the hottest instruction of a Task visit in `perf`); inlined, a span no subscriber
/// wants is known to be `Span::none()` where it is used, and `in_scope` does nothing with it.
#[inline(always)]
pub(super) fn state_span(name: &str, state_type: &'static str) -> tracing::Span {
    tracing::info_span!("state", name = name, r#type = state_type)
}

/// Records `<Type>StateAborted` when a running state's future is dropped before it finishes:
/// a sibling Parallel branch failed, or the execution timed out.
pub(super) struct AbortGuard<'a> {
    pub(super) exec: &'a Execution,
    pub(super) name: &'a str,
    pub(super) event: EventType,
    pub(super) armed: bool,
}

impl Drop for AbortGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.exec.record_with(self.event, || name_details(self.name));
        }
    }
}

/// `{"error", "cause"}` of a failure event, leaving out an empty error or cause as AWS leaves
/// out an absent one (a Fail state without `Error`, a timeout without a cause).
pub(crate) fn failure_details(f: &Failure) -> Details {
    let mut details = Details::with_capacity(3);
    if !f.error.is_empty() {
        details.insert("error", json!(f.error));
    }
    if !f.cause.is_empty() {
        details.insert("cause", json!(f.cause));
    }
    details
}
