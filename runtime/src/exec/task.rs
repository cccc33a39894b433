//! The Task state: the visit around a handler call (retries, timeouts, callbacks, Catch).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Fuse};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use tracing::Instrument;

use super::catch::caught;
use super::finish::{AssignRef, Finish, Language, OutputRef, finish_success};
use super::parameters::{Parameters, ParametersForm};
use super::pass::Assigned;
use super::visit::{AbortGuard, CountedVisit, Visit, failure_details, runtime_failure, state_span};
use super::{Execution, Step};
use crate::jsonata::{self, Bindings};
use crate::retry::{self, RetryDecision, RetryState};
use crate::task::Attempt;
use crate::{Details, EventType, Failure, TaskContext, io};

/// A JSONata TimeoutSeconds or HeartbeatSeconds (`field`) on the state input: a positive
/// integer, else `States.QueryEvaluationError`.
pub fn jsonata_seconds(
    expr: &wfc_ir::JsonataExpr,
    field: &str,
    input: &Value,
    ctx: &Value,
) -> Result<Duration, Failure> {
    // Evaluated with a fixed seed: a timeout is not the place for randomness.
    let mut rng = <StdRng as SeedableRng>::seed_from_u64(0);
    let value = jsonata::evaluate(expr, field, &Bindings::new(input, ctx), &mut rng)?;
    match value.as_u64() {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(jsonata::unexpected_type(expr.as_str(), field, "positive integer", &value)),
    }
}

/// A TimeoutSecondsPath or HeartbeatSecondsPath (`field`) on the effective input `input`.
pub fn seconds_at(p: &wfc_ir::Path, field: &str, input: &Value, ctx: &Value) -> Result<Duration, Failure> {
    let Some(value) = io::select_opt(p, input, ctx) else {
        let doc = if p.root() == wfc_ir::Root::Context { ctx } else { input };
        return Err(Failure::runtime(io::invalid_path_message(p, doc)));
    };
    positive_seconds(field, p.as_str(), &value)
}

/// The value a TimeoutSecondsPath or HeartbeatSecondsPath (`field`, whose path is `text`)
/// selected, as a duration: a positive integer, else `States.Runtime`.
pub(crate) fn positive_seconds(field: &str, text: &str, value: &Value) -> Result<Duration, Failure> {
    match value.as_u64() {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(Failure::runtime(format!(
            "The {field} field refers to value {value} which is not a valid positive integer: {text}"
        ))),
    }
}

fn seconds_json(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(d.as_secs()))
}

/// One visit of a Task state whose data processing is `code`: its events, the retry loop with
/// its back-offs on the execution's clock, TimeoutSeconds and HeartbeatSeconds, callbacks
/// (`.waitForTaskToken`), `lambda:invoke` wrapping, Credentials, the payload limits, and Catch.
///
/// The interpreter's `task` (whose `code` reads the IR) and generated code (whose `code` is
/// compiled from the state's paths, templates and Retry/Catch tables) both run through here,
/// so their histories and failures are the same.
///
/// Not an `async fn`: the future it returns is [`task_visit`]'s, so the visit's future
/// is built once where the caller awaits it rather than moved into a wrapper's.
pub fn task_with<'v, 'a, C, F, Fut>(
    exec: &'v Execution,
    name: &'v str,
    code: &'v C,
    input: Value,
    invoke: F,
) -> impl Future<Output = Result<Step, Failure>> + 'v
where
    C: TaskCode + Sync,
    F: FnMut(Value, TaskContext) -> Fut + Send + 'v,
    Fut: Future<Output = Result<Value, Failure>> + Send + 'a,
    'a: 'v,
{
    // The types are erased in `task_visit`, so the visit's body ([`task_inner`]) is one function
    // whatever the state: a machine of a hundred generated Tasks runs one copy of it, not a
    // hundred.
    task_visit(exec, name, Erased(code), input, invoke)
}

/// [`task_with`] for a caller whose handler returns a boxed future already (the interpreter's
/// `task`). `code` is held by value (the interpreter's is itself a reference to the IR).
///
/// Not an `async fn`, as [`task_with`] is not.
pub fn task_boxed_with<'v, 'a, C, F>(
    exec: &'v Execution,
    name: &'v str,
    code: C,
    input: Value,
    invoke: F,
) -> impl Future<Output = Result<Step, Failure>> + 'v
where
    C: TaskCode + Sync + 'v,
    F: FnMut(Value, TaskContext) -> BoxFuture<'a, Result<Value, Failure>> + Send + 'v,
    'a: 'v,
{
    task_visit(exec, name, Erased(Owned(code)), input, invoke)
}

/// A Task's handler calls, as [`task_inner`] makes them without knowing their future's type:
/// each attempt's future is stored in a slot of the (typed) visit that owns this, and polled
/// through a reference, so an attempt costs no allocation of its own.
trait Call: Send {
    /// Calls the handler (a panic here is the handler's) and gives its future, stored in the slot.
    fn start(&mut self, input: Value, ctx: TaskContext) -> Pin<&mut (dyn Future<Output = HandlerResult> + Send + '_)>;
    /// Drops the last attempt's future (finished, timed out or abandoned), as its owner would.
    fn clear(&mut self);
}

type HandlerResult = Result<Value, Failure>;

/// [`Call`] over a handler closure and the pinned slot its futures live in.
struct Slot<'s, F, Fut> {
    invoke: F,
    /// Empty (terminated) between attempts.
    future: Pin<&'s mut Fuse<Fut>>,
}

impl<F, Fut> Call for Slot<'_, F, Fut>
where
    F: FnMut(Value, TaskContext) -> Fut + Send,
    Fut: Future<Output = HandlerResult> + Send,
{
    fn start(&mut self, input: Value, ctx: TaskContext) -> Pin<&mut (dyn Future<Output = HandlerResult> + Send + '_)> {
        self.future.set((self.invoke)(input, ctx).fuse());
        self.future.as_mut()
    }

    fn clear(&mut self) {
        self.future.set(Fuse::terminated());
    }
}

/// [`task_with`] after type erasure: the span, the abort guard and the handler's future slot
/// around [`task_inner`] (thin, so its copies per Task type cost little).
///
/// Only the counted visit's future is built in place. The full one ([`task_inner`], ~1,000
/// bytes) is boxed: held inline it made every Parallel branch and Map item future that holds a
/// Task (each boxed in turn) over the 1,024 bytes glibc's thread cache serves, so each took
/// glibc's slow path, even at the express level where the full visit never runs. The box costs
/// the full visit one allocation from that cache.
///
/// Not an `async fn`: an `async fn` keeps a second copy of its arguments (the input among them)
/// in its future; a returned `async move` block uses them in place. The same holds for
/// [`task_counted`] and [`task_inner`], and for `abi::drive` and the generated `step`.
fn task_visit<'f, E, F, Fut>(
    exec: &'f Execution,
    name: &'f str,
    code: E,
    input: Value,
    invoke: F,
) -> impl Future<Output = Result<Step, Failure>> + 'f
where
    E: ErasedTask + Sync + 'f,
    F: FnMut(Value, TaskContext) -> Fut + Send + 'f,
    Fut: Future<Output = HandlerResult> + Send + 'f,
{
    async move {
        let future = std::pin::pin!(Fuse::terminated());
        let mut invoke = Slot { invoke, future };
        let mut guard = AbortGuard { exec, name, event: EventType::TaskStateAborted, armed: true };
        let outcome = if let Some(span) = enabled_state_span(name, "Task") {
            let instrumented = Box::pin(task_inner(exec, name, &code, input, &mut invoke).instrument(span));
            instrumented.await
        } else if counted(exec, &code) {
            task_counted(exec, name, code.code(), input, &mut invoke).await
        } else {
            let inner = Box::pin(task_inner(exec, name, &code, input, &mut invoke));
            inner.await
        };
        // A Task whose failure leaves its Parallel branch is aborted with the branch, as AWS
        // records it; elsewhere the failure goes straight to the enclosing state or the execution.
        guard.armed = outcome.is_err() && exec.in_parallel_branch;
        drop(guard);
        outcome
    }
}

/// The state's span when a subscriber wants it, else `None` (and nothing held across the visit).
/// Always inlined, as `state_span` is: returned through memory, the span was read back before
/// its stores had landed.
#[inline(always)]
fn enabled_state_span(name: &str, state_type: &'static str) -> Option<tracing::Span> {
    let span = state_span(name, state_type);
    (!span.is_disabled()).then_some(span)
}

/// Whether a visit of the Task `code` can be [`task_counted`]: the execution only numbers its
/// events ([`Execution::counts_only`]), and the Task is plain (see [`TaskCode::is_plain`]) with
/// no Retry, no Catch, and a resource that is neither a callback (`.waitForTaskToken`) nor
/// `lambda:invoke`.
fn counted<E: ErasedTask>(exec: &Execution, code: &E) -> bool {
    let view = code.code();
    let shape = view.shape();
    exec.counts_only()
        && view.is_plain()
        && shape == TaskShape { input_moves: true, single_attempt: true, result_is_output: true }
        && !code.has_catchers()
        && !crate::callback::is_callback_resource(view.resource())
        && !crate::lambda::is_invoke(view.resource())
}

/// A Task's visit as generated code runs it: each handler method's generated visit function
/// returns this, so every Task calling the method shares it. A visit that only counts its events
/// and meets nothing unusual (see [`counted_entry`]) runs here around the handler's own future,
/// through steps that return nothing larger than an id or a `bool` on the way a Task succeeds;
/// any other is [`task_with`]'s whole visit. The same events, ids and failures as
/// [`task_counted`] gives.
///
/// Why: a `Result<_, Failure>` returned through memory at each step and read back at once cost
/// the Task chain more than the steps' work (wfc-bench `--floors`: these steps around the
/// handler 0.54 of hand-written code, the runtime's whole visit 0.39; docs/benchmarks.md).
pub fn counted_task_with<'v, 'a, C, F, Fut>(
    exec: &'v Execution,
    name: &'v str,
    code: &'v C,
    input: Value,
    mut invoke: F,
) -> impl Future<Output = Result<Step, Failure>> + 'v
where
    C: TaskCode + Sync,
    F: FnMut(Value, TaskContext) -> Fut + Send + 'v,
    Fut: Future<Output = Result<Value, Failure>> + Send + 'a,
    'a: 'v,
{
    async move {
        let Some(entered) = counted_entry(exec, name, code, &input) else {
            return task_with(exec, name, code, input, invoke).await;
        };
        let guard = CountedGuard::new(exec, name);
        let ctx = counted_context(exec, name, code);
        // A panic while making the handler's future fails the attempt as one while it runs does.
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| invoke(input, ctx))) {
            Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        match outcome {
            Ok(Ok(result)) if counted_success(exec, code, &result) => {
                guard.disarm();
                Ok(Step::Next(result))
            }
            outcome => Err(counted_failure(exec, name, code, entered, outcome, guard)),
        }
    }
}

/// Enters a Task visit that [`counted_task_with`] runs around its handler's future, when the
/// visit can be [`task_counted`] and nothing unusual is on its way: no tracing subscriber wants
/// `INFO` (so no span would be entered), the history limit is not near, and the state's input
/// (`input`, the request) passes its payload check if no state checked it before. Then this counts the Entered, Scheduled and
/// Started events, as [`task_counted`] does, and gives the Entered event's id; else `None`, and
/// the whole visit ([`task_with`]) runs, which decides all of that as always.
#[inline]
fn counted_entry<C: TaskCode + Sync>(exec: &Execution, name: &str, code: &C, input: &Value) -> Option<u64> {
    if tracing::level_enabled!(tracing::Level::INFO)
        || !counted(exec, &Erased(code))
        || exec.check_history().is_err()
        || exec.check_history_after(1).is_err()
    {
        return None;
    }
    // The line's first state (a branch's or an iteration's) checks its input; one that fails
    // the check is left to the whole visit, which fails it (and takes the flag) as always.
    if exec.cursor.input_unchecked() {
        if exec.limits().check_payload(name, input).is_err() {
            return None;
        }
        exec.cursor.take_input_checked();
    }
    let events = AttemptEvents::of(TaskCode::is_lambda_function(code));
    Some(exec.count_back_to_back(&[EventType::TaskStateEntered, events.scheduled, events.started]) - 2)
}

/// The handler's context in a counted visit: no heartbeat, no Credentials, no journal (so no
/// stored name), as [`task_counted`] makes it.
#[inline]
fn counted_context<C: TaskCode + Sync>(exec: &Execution, name: &str, code: &C) -> TaskContext {
    match static_names_under(code, name) {
        Some((state, resource)) => TaskContext::plain(state, resource, 0, exec.task_execution_name_shared()),
        None => TaskContext::new(name, TaskCode::resource(code), 0, exec.task_execution_name()),
    }
}

/// Whether a counted visit's handler `result` passes its payload check; if so its
/// Succeeded and `TaskStateExited` events are counted and the visit is over.
#[inline]
fn counted_success<C: TaskCode + Sync>(exec: &Execution, code: &C, result: &Value) -> bool {
    if exec.limits().check_payload(TaskCode::resource(code), result).is_err() {
        return false;
    }
    let events = AttemptEvents::of(TaskCode::is_lambda_function(code));
    exec.count_back_to_back(&[events.succeeded, EventType::TaskStateExited]);
    true
}

/// A counted visit's `TaskStateAborted` guard: dropped armed (the visit cancelled with its
/// Parallel branch), it records the event, as [`task_visit`]'s guard does.
struct CountedGuard<'e>(AbortGuard<'e>);

impl<'e> CountedGuard<'e> {
    /// Armed, for state `name`.
    #[inline]
    fn new(exec: &'e Execution, name: &'e str) -> CountedGuard<'e> {
        CountedGuard(AbortGuard { exec, name, event: EventType::TaskStateAborted, armed: true })
    }

    /// The visit succeeded: nothing is recorded.
    #[inline]
    fn disarm(mut self) {
        self.0.armed = false;
    }
}

/// The failure that ends a counted visit whose handler `outcome` was not a success
/// [`counted_success`] accepted (entered as event `entered`), with its event, as
/// [`task_counted`] ends it: the result's failed payload check, or the handler's failure (or
/// panic) after its Failed event. No retrier and no catcher: the failure leaves the state, and
/// in a Parallel branch the visit is aborted with it.
#[cold]
#[inline(never)]
fn counted_failure<C: TaskCode + Sync>(
    exec: &Execution,
    name: &str,
    code: &C,
    entered: u64,
    outcome: std::thread::Result<HandlerResult>,
    guard: CountedGuard<'_>,
) -> Failure {
    let events = AttemptEvents::of(TaskCode::is_lambda_function(code));
    let failure = match crate::task::attempt_of(outcome) {
        Attempt::Succeeded(result) => match exec.limits().check_payload(TaskCode::resource(code), &result) {
            Err(f) => runtime_failure(exec, name, entered, f),
            // Not reached: a result that passes the check is a success.
            Ok(()) => Failure::runtime("a counted Task's result passed its check but was not accepted"),
        },
        Attempt::Failed(f) => {
            exec.record_with(events.failed, Details::default);
            f
        }
        Attempt::TimedOut(f) => {
            exec.record_with(events.timed_out, Details::default);
            f
        }
    };
    let failure = match &failure {
        f if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => runtime_failure(exec, name, entered, failure),
        _ => failure,
    };
    let CountedGuard(mut guard) = guard;
    guard.armed = exec.in_parallel_branch;
    drop(guard);
    failure
}

/// [`task_inner`] for a Task [`counted`] allows: what [`task_inner`] does for it, step for
/// step, where its journal, retry, timer, context and Catch steps have nothing to do and the
/// events are only counted. The same events in the same order (so the same ids in failure
/// causes), the same payload checks of the request and the result, the same failures; without
/// the visit's clock, context object, retry state and boxed fallbacks (task-chain-100: the
/// visit was ~2,100 instructions a Task besides the handler's own work).
///
/// Not an `async fn`, as [`task_visit`] is not.
fn task_counted<'f>(
    exec: &'f Execution,
    name: &'f str,
    code: &'f (dyn TaskCodeView + Sync),
    input: Value,
    invoke: &'f mut (dyn Call + '_),
) -> impl Future<Output = Result<Step, Failure>> + 'f {
    async move {
        let resource = code.resource();
        let visit = CountedVisit::deferred(exec, name, "Task", EventType::TaskStateEntered)?;
        // The request is the state's input: checked unless it was already (see `Line`).
        let request = if visit.input_checked { Ok(()) } else { exec.limits().check_payload(name, &input) };
        let events = AttemptEvents::of(code.is_lambda_function());
        if request.is_ok() && exec.check_history_after(1).is_ok() {
            // Entered, Scheduled and Started, back to back (nothing between them can fail here):
            // one atomic add for the three.
            visit.enter_with([events.scheduled, events.started]);
        } else {
            // One by one, as `task_inner`: Entered, the history limit, the request's check.
            visit.entered_id();
            exec.check_history()?;
            request.map_err(|f| visit.runtime(f))?;
            exec.count_back_to_back(&[events.scheduled, events.started]);
        }
        // No heartbeat, no Credentials, no journal (so no stored name): the plain context.
        let task_ctx = match static_names_under(code, name) {
            Some((state, resource)) => TaskContext::plain(state, resource, 0, exec.task_execution_name_shared()),
            None => TaskContext::new(name, resource, 0, exec.task_execution_name()),
        };
        let outcome = match crate::task::start_attempt(|| invoke.start(input, task_ctx)) {
            Ok(future) => crate::task::attempt_of(AssertUnwindSafe(future).catch_unwind().await),
            Err(failed) => failed,
        };
        invoke.clear();
        let failure = match outcome {
            Attempt::Succeeded(result) => {
                exec.limits().check_payload(resource, &result).map_err(|f| visit.runtime(f))?;
                visit.exit_after(events.succeeded, EventType::TaskStateExited);
                return Ok(Step::Next(result));
            }
            Attempt::Failed(f) => {
                exec.record_with(events.failed, Details::default);
                f
            }
            Attempt::TimedOut(f) => {
                exec.record_with(events.timed_out, Details::default);
                f
            }
        };
        // No retrier and no catcher: the failure leaves the state, a JSONata one with AWS's prefix
        // (as `caught` gives it).
        Err(if failure.error == wfc_ir::errors::QUERY_EVALUATION_ERROR { visit.runtime(failure) } else { failure })
    }
}

/// The Task's static state name and resource ([`TaskCode::static_names`]) when its visit runs
/// under that name, so the handler's context can borrow them. Generated code passes the same
/// `&'static str` it put in its static: equal pointers settle it without comparing the text.
#[inline]
fn static_names_under(code: &(dyn TaskCodeView + Sync), name: &str) -> Option<(&'static str, &'static str)> {
    code.static_names().filter(|(state, _)| std::ptr::eq(*state, name) || *state == name)
}

/// A [`TaskCode`] seen without its table types, so [`task_inner`] is not generic.
struct Erased<C>(C);

/// What [`task_inner`] asks of a Task: [`TaskCode`], with Retry and Catch behind methods.
trait ErasedTask {
    fn code(&self) -> &(dyn TaskCodeView + Sync);
    fn decide(&self, retries: &mut RetryState, error: &str, rng: &mut StdRng) -> RetryDecision;
    fn retry_state(&self) -> RetryState;
    fn caught(&self, visit: &Visit<'_>, raw_input: Value, failure: Failure) -> Result<Step, Failure>;
    fn catches(&self, error: &str) -> bool;
    fn has_catchers(&self) -> bool;
}

/// The table-free part of [`TaskCode`], as a trait object.
pub(super) trait TaskCodeView {
    fn is_plain(&self) -> bool;
    fn resource(&self) -> &str;
    fn static_names(&self) -> Option<(&'static str, &'static str)>;
    fn is_lambda_function(&self) -> bool;
    fn needs_context(&self) -> bool;
    fn shape(&self) -> TaskShape;
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure>;
    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure>;
    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure>;
    fn parameters_form(&self) -> ParametersForm;
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure>;
    fn finish_needs_context(&self) -> bool;
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure>;
    fn has_credentials(&self) -> bool;
    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure>;
    fn has_arguments(&self) -> bool;
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure>;
    fn assigns(&self) -> bool;
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure>;
    fn has_output(&self) -> bool;
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure>;
}

impl<C: TaskCode + ?Sized> TaskCodeView for C {
    fn is_plain(&self) -> bool {
        TaskCode::is_plain(self)
    }
    fn resource(&self) -> &str {
        TaskCode::resource(self)
    }
    fn static_names(&self) -> Option<(&'static str, &'static str)> {
        TaskCode::static_names(self)
    }
    fn is_lambda_function(&self) -> bool {
        TaskCode::is_lambda_function(self)
    }
    fn needs_context(&self) -> bool {
        TaskCode::needs_context(self)
    }
    fn shape(&self) -> TaskShape {
        TaskCode::shape(self)
    }
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        TaskCode::input_path(self, raw, ctx)
    }
    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        TaskCode::timeout(self, effective, ctx)
    }
    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        TaskCode::heartbeat(self, effective, ctx)
    }
    fn parameters_form(&self) -> ParametersForm {
        TaskCode::parameters_form(self)
    }
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        TaskCode::parameters(self, exec, effective, ctx)
    }
    fn finish_needs_context(&self) -> bool {
        TaskCode::finish_needs_context(self)
    }
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        TaskCode::finish(self, exec, raw_input, result, ctx)
    }
    fn has_credentials(&self) -> bool {
        TaskCode::has_credentials(self)
    }
    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure> {
        TaskCode::role_arn(self, exec, effective, ctx)
    }
    fn has_arguments(&self) -> bool {
        TaskCode::has_arguments(self)
    }
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        TaskCode::arguments(self, exec, states)
    }
    fn assigns(&self) -> bool {
        TaskCode::assigns(self)
    }
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        TaskCode::assigned(self, exec, dollar, states)
    }
    fn has_output(&self) -> bool {
        TaskCode::has_output(self)
    }
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        TaskCode::output(self, exec, states)
    }
}

/// What [`Erased`] holds: a Task's code, by reference (generated code's) or by value (the
/// interpreter's, itself a reference to the IR), so the visit's future can own it.
trait HoldsCode {
    type Code: TaskCode + Sync;
    fn held(&self) -> &Self::Code;
}

/// A Task's code held by value (see [`task_boxed_with`]).
struct Owned<C>(C);

impl<C: TaskCode + Sync> HoldsCode for Owned<C> {
    type Code = C;
    fn held(&self) -> &C {
        &self.0
    }
}

impl<C: TaskCode + Sync> HoldsCode for &C {
    type Code = C;
    fn held(&self) -> &C {
        self
    }
}

impl<H: HoldsCode> ErasedTask for Erased<H> {
    fn code(&self) -> &(dyn TaskCodeView + Sync) {
        self.0.held()
    }
    fn decide(&self, retries: &mut RetryState, error: &str, rng: &mut StdRng) -> RetryDecision {
        retries.decide(self.0.held().retriers(), error, rng)
    }
    fn retry_state(&self) -> RetryState {
        RetryState::new(self.0.held().retriers())
    }
    fn caught(&self, visit: &Visit<'_>, raw_input: Value, failure: Failure) -> Result<Step, Failure> {
        caught(visit, self.0.held().catchers(), raw_input, failure)
    }
    fn catches(&self, error: &str) -> bool {
        retry::find_catcher(self.0.held().catchers(), error).is_some()
    }
    fn has_catchers(&self) -> bool {
        !self.0.held().catchers().is_empty()
    }
}

/// The data processing of one Task state, which [`task_with`] runs its visit around: what the
/// interpreter reads from the IR (`wfc_interp::task`) and generated code compiles (`wfc_runtime::abi`).
/// Each method is one step of the state's pipeline; none of them records events.
pub trait TaskCode {
    /// A retrier of its `Retry` table.
    type Retrier: retry::RetryRule;
    /// A catcher of its `Catch` table.
    type Catcher: retry::CatchRule;
    /// Whether every data-processing method below is the trait's default (no InputPath,
    /// Parameters, ResultSelector, ResultPath or OutputPath other than `$`, no timeouts,
    /// Credentials, Arguments, Assign or Output), so that with no Retry and no Catch the visit
    /// is the handler call alone. By default `false`; [`PlainTask`] (and the interpreter, for
    /// such a state) says `true`.
    fn is_plain(&self) -> bool {
        false
    }
    /// `Resource`.
    fn resource(&self) -> &str;
    /// The state's name and `Resource` as `'static` text, when they are (generated code's
    /// literals): each attempt's [`TaskContext`] then borrows them instead of copying them. The
    /// name must be the one the visit runs under. By default `None`: they are copied.
    fn static_names(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// Whether `Resource` is a bare Lambda function ARN, whose attempts AWS records as
    /// `LambdaFunction*` events ([`crate::lambda::is_function_arn`]). Generated code answers
    /// with a constant, decided when the definition is compiled.
    fn is_lambda_function(&self) -> bool {
        crate::lambda::is_function_arn(self.resource())
    }
    /// `Retry`, in order.
    fn retriers(&self) -> &[Self::Retrier];
    /// `Catch`, in order.
    fn catchers(&self) -> &[Self::Catcher];
    /// Whether the state's processing (InputPath, OutputPath, the timeouts, JSONata Arguments,
    /// Output and Assign, Credentials) reads the context object on entry.
    fn needs_context(&self) -> bool {
        false
    }
    /// What the visit may skip, decided from the state's fields.
    fn shape(&self) -> TaskShape;
    /// InputPath on the raw input: the effective input (by default `$`, a copy).
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = ctx;
        Ok(raw.clone())
    }
    /// `TimeoutSeconds` or `TimeoutSecondsPath` (on the effective input); by default none.
    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// `HeartbeatSeconds` or `HeartbeatSecondsPath` (on the effective input); by default none.
    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// Whether there are Parameters, and when they are evaluated; by default there are none.
    fn parameters_form(&self) -> ParametersForm {
        ParametersForm::None
    }
    /// Parameters on the effective input (`ctx` is `null` unless the form reads it).
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, ctx);
        Ok(effective.clone())
    }
    /// Whether [`finish`](Self::finish) reads the context object beyond
    /// [`needs_context`](Self::needs_context) (a ResultSelector with `$$`).
    fn finish_needs_context(&self) -> bool {
        false
    }
    /// ResultSelector on the result, ResultPath into the raw input, OutputPath; by default none
    /// of them (ResultPath and OutputPath `$`): the result.
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, raw_input, ctx);
        Ok(result)
    }
    /// Whether the state has `Credentials` ([`role_arn`](Self::role_arn)).
    fn has_credentials(&self) -> bool {
        false
    }
    /// `Credentials`' role ARN, evaluated per attempt on the effective input (`$states.input`
    /// in a JSONata state) with the context object `ctx`; called only when
    /// [`has_credentials`](Self::has_credentials).
    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure> {
        let _ = (exec, effective, ctx);
        Err(Failure::runtime("the Task has no Credentials"))
    }
    /// Whether the state has JSONata `Arguments` ([`arguments`](Self::arguments)).
    fn has_arguments(&self) -> bool {
        false
    }
    /// JSONata `Arguments`, evaluated with `states` (`$states.input` is the raw input,
    /// `states.context` the context object of the attempt); called only when
    /// [`has_arguments`](Self::has_arguments).
    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        let _ = exec;
        Ok(states.input.clone())
    }
    /// Whether the state has an `Assign` ([`assigned`](Self::assigned)).
    fn assigns(&self) -> bool {
        false
    }
    /// The `Assign` block's values, in the order written: a JSONPath block on `dollar` (the
    /// result) with the context object `states.context` (the variables as of entry); a JSONata
    /// block with `states` (`$states.input`, `$states.result`, `$states.context`).
    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        let _ = (exec, dollar, states);
        Ok(Vec::new())
    }
    /// Whether the state has a JSONata `Output` ([`output`](Self::output)).
    fn has_output(&self) -> bool {
        false
    }
    /// JSONata `Output`, evaluated with `states` (as for [`assigned`](Self::assigned)); called
    /// only when [`has_output`](Self::has_output).
    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        let _ = exec;
        Ok(states.result.cloned().unwrap_or(Value::Null))
    }
}

/// The full visit of a Task (see [`task_with`]); [`task_visit`] boxes its future.
///
/// Not an `async fn`, as [`task_visit`] is not. Its future is 1,008 bytes (rustc 1.95), within the
/// 1,024 of glibc's thread cache, so its box is a cheap one: locals that end before an await
/// (the attempt's request as evaluated, a `lambda:invoke` Payload) are kept out of the awaits'
/// scopes, and the rare attempts with a timer, a journal or `lambda:invoke` are boxed.
fn task_inner<'f>(
    exec: &'f Execution,
    name: &'f str,
    erased: &'f (dyn ErasedTask + Sync),
    mut input: Value,
    invoke: &'f mut (dyn Call + '_),
) -> impl Future<Output = Result<Step, Failure>> + 'f {
    async move {
        let code = erased.code();
        let io_ctx = code.needs_context();
        // A Task that never builds its context object (nothing reads `$$` or the variables: no
        // context-reading path or template, no Credentials, no JSONata, no Assign, no catcher) has
        // no use for its entered time, so at the express level it reads no clock on entry.
        let builds_context = io_ctx
            || code.finish_needs_context()
            || code.has_credentials()
            || code.has_arguments()
            || code.assigns()
            || code.has_output()
            || matches!(code.parameters_form(), ParametersForm::PerAttempt { context: true })
            || erased.has_catchers();
        let mut visit = Visit::start_timed(exec, name, "Task", &input, builds_context)?;
        let visit_no = exec.next_visit(name);
        let resource = code.resource();
        let ctx = visit.context_if(io_ctx);
        let shape = code.shape();
        let mut effective = if shape.input_moves {
            // Nothing reads the raw input after InputPath `$`: move it instead of copying it.
            std::mem::take(&mut input)
        } else {
            code.input_path(&input, &ctx).map_err(|f| visit.runtime(f))?
        };
        let timeout = code.timeout(&effective, &ctx).map_err(|f| visit.runtime(f))?;
        let heartbeat = code.heartbeat(&effective, &ctx).map_err(|f| visit.runtime(f))?;
        let parameters = Parameters::new(code, &effective, exec).map_err(|f| visit.runtime(f))?;
        let mut retries = erased.retry_state();
        let callback = crate::callback::is_callback_resource(resource);
        let events = AttemptEvents::of(code.is_lambda_function());
        loop {
            visit.retry_count = retries.retry_count();
            exec.check_history()?;
            if callback {
                // Callbacks are boxed, so that the common visit's future does not carry their
                // (large) futures inline. (Bound first: a temporary in the awaited expression
                // would keep its space in this future.)
                let token =
                    Box::pin(exec.task_token(name, visit_no, visit.retry_count, visit.entered_id, timeout, heartbeat));
                let token = token.await;
                visit.task_token = Some(token.map_err(|f| visit.runtime(f))?);
            }
            // Before the parameters: a single attempt may move the effective input into them.
            let role_arn = if code.has_credentials() {
                let ctx = visit.context();
                code.role_arn(exec, &effective, &ctx).map(Some)
            } else {
                Ok(None)
            };
            // Matched without a name for the result, so its room in this future ends here.
            let attempt_request = role_arn.and_then(|role_arn| {
                if code.has_arguments() {
                    let ctx = visit.context();
                    code.arguments(exec, &Bindings::new(&input, &ctx))
                } else if shape.single_attempt && matches!(parameters, Parameters::None) && exec.redrive_count() == 0 {
                    // No Retry: this is the only attempt, so the effective input itself is sent
                    // (a redriven execution may run the visit again: see `rerun_for_redrive`).
                    Ok(std::mem::take(&mut effective))
                } else {
                    parameters.for_attempt(code, &effective, &visit)
                }
                .map(|params| (role_arn, params))
            });
            let (role_arn, params) = match attempt_request {
                Ok(evaluated) => evaluated,
                // A JSONata failure can be retried and caught, unlike a path failure.
                Err(f) if f.error == wfc_ir::errors::QUERY_EVALUATION_ERROR => {
                    let decision = exec.with_rng(|rng| erased.decide(&mut retries, &f.error, rng));
                    // Boxed: a failed attempt's path, whose (large) future the common visit need not
                    // carry (bound first, as the callback's).
                    let decided = Box::pin(visit.retry_decided(visit_no, &retries, decision, f));
                    if let Some(failure) = decided.await? {
                        return erased.caught(&visit, input, failure);
                    }
                    continue;
                }
                Err(f) => return Err(visit.runtime(f)),
            };
            // AWS limits the request a task is sent as it limits results. A request that is the
            // state's input as it came (InputPath `$`, no Parameters or Arguments) needs no second
            // check when that input had one.
            let request_is_input = shape.input_moves && matches!(parameters, Parameters::None) && !code.has_arguments();
            if !(request_is_input && visit.input_checked) {
                exec.limits().check_payload(name, &params).map_err(|f| visit.runtime(f))?;
            }
            // `lambda:invoke`: the parameters are the Invoke request; the function gets its Payload.
            // Boxed: rare, and held across the attempt's await.
            let lambda_invoke = if crate::lambda::is_invoke(resource) {
                Some(Box::new(crate::lambda::request(&params).map_err(|f| visit.runtime(f))?))
            } else {
                None
            };
            // A branch a redrive runs again after another's failure cancelled it records from its
            // first attempt that had not finished (see `Execution::muted_if_replayed`).
            exec.unmute_if_live(name, visit_no, visit.retry_count);
            exec.record_with(events.scheduled, || {
                let details = Details::with_capacity(5).with("resource", json!(resource));
                let mut details = if events.lambda {
                    // AWS's LambdaFunctionScheduled: the function's input, and only the limits set.
                    let d = details.with_shared("input", exec.share(&params));
                    match timeout {
                        Some(t) => d.with("timeoutInSeconds", json!(t.as_secs())),
                        None => d,
                    }
                } else {
                    details
                        .with_shared("parameters", exec.share(&params))
                        .with("timeoutInSeconds", seconds_json(timeout))
                        .with("heartbeatInSeconds", seconds_json(heartbeat))
                };
                if let Some(arn) = &role_arn {
                    details.insert("taskCredentials", json!({ "roleArn": arn }));
                }
                details
            });
            let task_ctx = match static_names_under(code, name) {
                // No countdown to keep (the context's only shared, mutable part): nothing allocated.
                Some((state, resource)) if heartbeat.is_none() => {
                    TaskContext::plain(state, resource, visit.retry_count, exec.task_execution_name_shared())
                }
                Some((state, resource)) => TaskContext::with_static_names(
                    state,
                    resource,
                    visit.retry_count,
                    exec.task_execution_name_shared(),
                ),
                _ => TaskContext::new(name, resource, visit.retry_count, exec.task_execution_name()),
            };
            let task_ctx = match role_arn {
                Some(arn) => task_ctx.with_role_arn(arn),
                None => task_ctx,
            };
            let task_ctx = match exec.stored_execution_name() {
                Some(stored) => task_ctx.with_stored_execution(stored),
                None => task_ctx,
            };
            let task_ctx = match &lambda_invoke {
                Some(invoke) => task_ctx.with_function_name(invoke.function_name.clone()),
                None => task_ctx,
            };
            exec.record_with(events.started, || {
                if events.lambda { Details::new() } else { Details::with_capacity(1).with("resource", json!(resource)) }
            });
            // The common attempt (not a callback, below): no journal to record it in, no timers to
            // race it against, no `lambda:invoke` request to unwrap. The handler is called and
            // awaited here, without `run_attempt`'s and the journal's future layers.
            let plain_attempt = timeout.is_none() && heartbeat.is_none() && lambda_invoke.is_none() && !journaled(exec);
            let outcome = match &visit.task_token {
                None if plain_attempt => {
                    // A panic while the handler builds its future, or while it runs, fails the
                    // attempt, as in `run_attempt` (the same two steps, without its timers).
                    match crate::task::start_attempt(|| invoke.start(params, task_ctx)) {
                        Ok(future) => crate::task::attempt_of(AssertUnwindSafe(future).catch_unwind().await),
                        Err(failed) => failed,
                    }
                }
                Some(token) => {
                    // A callback: the handler only hands the token on (its result is ignored); the
                    // heartbeat applies to the wait for the answer that follows.
                    let task_ctx = task_ctx.with_task_token(token.clone());
                    let call_ctx = task_ctx.clone();
                    let sent = lambda_payload(&lambda_invoke).0.unwrap_or_else(|| params.clone());
                    let handler = crate::task::run_attempt(|| invoke.start(sent, call_ctx), &task_ctx, timeout, None);
                    let waited = Box::pin(exec.callback_attempt(
                        name,
                        visit_no,
                        visit.retry_count,
                        token,
                        params,
                        handler,
                        timeout,
                        heartbeat,
                    ));
                    waited.await.map_err(|f| visit.runtime(f))?
                }
                None => {
                    // Built in a block of its own: what goes into the attempt's future is moved
                    // there, and its locals end before the await, so this visit's future keeps
                    // no room for them. Boxed: an attempt with a timer, a `lambda:invoke`
                    // request or a journal is the rare one, and its future is larger than the
                    // rest of the visit's.
                    let journaled = {
                        let call_ctx = task_ctx.clone();
                        // What the handler gets (for `lambda:invoke`, the Payload) is also what a
                        // suspending journal reports, so an SWF activity receives the same input.
                        let (payload, refused) = lambda_payload(&lambda_invoke);
                        let sent = payload.unwrap_or(params);
                        // A refused Payload fails before any call: there is nothing for a remote
                        // worker (an SWF activity, a Lambda step) to run, so the attempt fails here,
                        // journaled like any other.
                        let request = match refused {
                            Some(_) => None,
                            None => exec.step_request(resource, &sent, timeout, heartbeat),
                        };
                        let attempt = match refused {
                            Some(f) => futures::future::Either::Left(std::future::ready(Attempt::Failed(f))),
                            None => futures::future::Either::Right(crate::task::run_attempt(
                                || invoke.start(sent, call_ctx),
                                &task_ctx,
                                timeout,
                                heartbeat,
                            )),
                        };
                        Box::pin(exec.journaled_attempt(name, visit_no, visit.retry_count, request, attempt))
                    };
                    journaled.await.map_err(|f| visit.runtime(f))?
                }
            };
            // The attempt is over (or was never run): its future goes now, as a boxed one would.
            invoke.clear();
            let failure = match outcome {
                Attempt::Succeeded(result) => {
                    let result = match &lambda_invoke {
                        Some(request) => crate::lambda::response(result, request, exec.clock().now()),
                        None => result,
                    };
                    // Checked before the result is recorded or processed: a result that is too
                    // large or too deep is terminal, and AWS names the resource that returned it.
                    exec.limits().check_payload(resource, &result).map_err(|f| visit.runtime(f))?;
                    exec.record_with(events.succeeded, || {
                        events.details(resource, Details::with_capacity(2).with_shared("output", exec.share(&result)))
                    });
                    let assign_code = |dollar: &Value, states: &Bindings<'_>| code.assigned(exec, dollar, states);
                    let output_code = |states: &Bindings<'_>| code.output(exec, states);
                    let language = Language {
                        assign: code.assigns().then_some(AssignRef::Code(&assign_code)),
                        output: code.has_output().then_some(OutputRef::Code(&output_code)),
                    };
                    if language.is_plain() && shape.result_is_output {
                        // The output is the result just checked against the same limits.
                        visit.exit(&result);
                        return Ok(Step::Next(result));
                    }
                    let finish = Finish {
                        needs_ctx: io_ctx || code.finish_needs_context(),
                        run: &|raw: Value, result: Value, ctx: &Value| code.finish(exec, raw, result, ctx),
                    };
                    // The state's input, kept for a rerun in a redriven execution (the processing
                    // takes it).
                    let kept_input = (exec.redrive_count() > 0).then(|| input.clone());
                    match finish_success(&visit, language, finish, &mut input, result) {
                        Ok(Ok(output)) => return Ok(Step::Next(output)),
                        Ok(Err(failure)) => failure,
                        // A path error in the result's processing ended the execution (no retrier or
                        // catcher takes `States.Runtime`): redriven, the Task state runs again.
                        Err(failure) if exec.rerun_for_redrive(name, visit_no, visit.retry_count) => {
                            input = kept_input.unwrap_or(input);
                            record_rerun(exec, name, visit_no, &failure);
                            retries = erased.retry_state();
                            continue;
                        }
                        Err(failure) => return Err(failure),
                    }
                }
                Attempt::Failed(f) => {
                    exec.record_with(events.failed, || events.details(resource, failure_details(&f)));
                    f
                }
                Attempt::TimedOut(f) => {
                    exec.record_with(events.timed_out, || events.details(resource, failure_details(&f)));
                    f
                }
            };
            let decision = exec.with_rng(|rng| erased.decide(&mut retries, &failure.error, rng));
            // Boxed, as above.
            let decided = Box::pin(visit.retry_decided(visit_no, &retries, decision, failure));
            if let Some(failure) = decided.await? {
                // A redriven execution runs this visit again when its failure ended the execution.
                if !erased.catches(&failure.error) && exec.rerun_for_redrive(name, visit_no, visit.retry_count) {
                    // The history goes on as it was: how the execution ended, then its redrive (the
                    // generation this visit now runs in). Inside a reopened Parallel or Map, the
                    // attempt recorded them (see `Execution::record_reopened`): this line records
                    // again from the redrive it was rerun for last.
                    record_rerun(exec, name, visit_no, &failure);
                    retries = erased.retry_state();
                    continue;
                }
                return erased.caught(&visit, input, failure);
            }
        }
    }
}

/// Before a redriven execution runs visit `visit_no` of Task `name` again: how the execution
/// ended (`failure`) and its redrive, the generation the visit now runs in, and the line
/// recording again from its first attempt.
fn record_rerun(exec: &Execution, name: &str, visit_no: u32, failure: &Failure) {
    let generation = exec.redrive_generation(name, visit_no);
    exec.record(EventType::ExecutionFailed, failure_details(failure));
    exec.record(EventType::ExecutionRedriven, json!({ "redriveCount": generation }));
    exec.unmute_if_live(name, visit_no, 0);
}

/// For `lambda:invoke`, what the function gets (its Payload), or the failure of a Payload Lambda
/// refuses (text that is not JSON: the attempt fails without a call). Computed where an attempt
/// uses it, so the visit's future keeps no room for it across the plain attempt's await.
fn lambda_payload(invoke: &Option<Box<crate::lambda::Invoke>>) -> (Option<Value>, Option<Failure>) {
    match invoke.as_ref().map(|i| i.event.clone()) {
        Some(Ok(event)) => (Some(event), None),
        Some(Err(f)) => (None, Some(f)),
        None => (None, None),
    }
}

/// Whether the execution records its steps in a durable journal (which [`Execution::journaled_attempt`]
/// runs each attempt through).
#[cfg(feature = "durable")]
fn journaled(exec: &Execution) -> bool {
    exec.journal().is_some()
}

/// Without the `durable` feature no execution has a journal.
#[cfg(not(feature = "durable"))]
fn journaled(_exec: &Execution) -> bool {
    false
}

/// The events a Task attempt records: `LambdaFunction*` for a bare Lambda function ARN, as AWS
/// records them (no `resource` in the outcome events, `input` instead of `parameters`), else
/// `Task*`.
#[derive(Clone, Copy)]
struct AttemptEvents {
    lambda: bool,
    scheduled: EventType,
    started: EventType,
    succeeded: EventType,
    failed: EventType,
    timed_out: EventType,
}

impl AttemptEvents {
    fn of(lambda_function: bool) -> AttemptEvents {
        if lambda_function {
            AttemptEvents {
                lambda: true,
                scheduled: EventType::LambdaFunctionScheduled,
                started: EventType::LambdaFunctionStarted,
                succeeded: EventType::LambdaFunctionSucceeded,
                failed: EventType::LambdaFunctionFailed,
                timed_out: EventType::LambdaFunctionTimedOut,
            }
        } else {
            AttemptEvents {
                lambda: false,
                scheduled: EventType::TaskScheduled,
                started: EventType::TaskStarted,
                succeeded: EventType::TaskSucceeded,
                failed: EventType::TaskFailed,
                timed_out: EventType::TaskTimedOut,
            }
        }
    }

    /// An outcome event's details: `fields`, plus the resource on `Task*` events.
    fn details(&self, resource: &str, fields: Details) -> Details {
        if self.lambda { fields } else { fields.with("resource", json!(resource)) }
    }
}

/// What a Task's fields let [`task_with`] skip (generated code builds it at compile time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskShape {
    /// InputPath `$`, and nothing reads the raw input afterwards (ResultPath `$` discards it,
    /// and there is no catcher to place an error in it).
    pub input_moves: bool,
    /// No Retry: one attempt at most.
    pub single_attempt: bool,
    /// No ResultSelector, ResultPath `$` and OutputPath `$`: the output is the task's result.
    pub result_is_output: bool,
}

/// The [`TaskCode`] of a Task whose data processing is all the trait's defaults (no InputPath
/// other than `$`, no Parameters, ResultSelector, timeouts, Assign, Arguments, Output or
/// Credentials, catchers without `Assign` or `Output`): only its names, its Retry and Catch
/// tables and its shape, as data. Generated code builds one as a `static` per such state, so
/// every such Task of a workflow has the same code type: the visit around it is compiled once
/// per handler method, not once per state (a hundred copies of it were as many copies of its
/// code to fetch, one per state visited).
#[derive(Debug, Clone, Copy)]
pub struct PlainTask {
    /// The state's name (the one its visit runs under).
    pub name: &'static str,
    /// `Resource`.
    pub resource: &'static str,
    /// Whether `Resource` is a bare Lambda function ARN (`abi::is_function_arn`, evaluated when
    /// the definition is compiled).
    pub lambda_function: bool,
    /// `Retry`, in order.
    pub retriers: &'static [crate::retry::StaticRetrier],
    /// `Catch`, in order.
    pub catchers: &'static [crate::retry::StaticCatcher],
    /// What the visit may skip.
    pub shape: TaskShape,
}

impl TaskCode for PlainTask {
    type Retrier = crate::retry::StaticRetrier;
    type Catcher = crate::retry::StaticCatcher;

    fn is_plain(&self) -> bool {
        true
    }

    fn resource(&self) -> &str {
        self.resource
    }

    fn static_names(&self) -> Option<(&'static str, &'static str)> {
        Some((self.name, self.resource))
    }

    fn is_lambda_function(&self) -> bool {
        self.lambda_function
    }

    fn retriers(&self) -> &[Self::Retrier] {
        self.retriers
    }

    fn catchers(&self) -> &[Self::Catcher] {
        self.catchers
    }

    fn shape(&self) -> TaskShape {
        self.shape
    }
}
