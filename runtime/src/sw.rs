//! Serverless Workflow state semantics, shared by generated code and the interpreter.
//!
//! CONTRACT: generated code calls [`step`] once per top-level state and [`run_top`] around the
//! whole execution; the interpreter calls the same two through [`run`]. Nested machines
//! (subflows, parallel branches and foreach bodies given by `workflowId`) run through
//! [`run_machine`], which loops over [`step`]. The choices this module makes where the draft is
//! ambiguous are listed in docs/semantics-sw.md.
//!
//! [`run_top`] also enforces `directInvoke: deny` and runs the subflows started with
//! `waitForCompletion: false` alongside the parent: [`step`] queues them in the execution's
//! [`SwShared`], and the top-level run polls them with its own machine and does not return before
//! they have ended.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value, json};
use wfc_ir::sw::{
    Action, ActionCall, ActionMode, Body, Completion, ErrorMatch, EventDef, Expr, ExprPart, ProduceEvent, SwKind,
    SwNext, SwState, SwWorkflowMeta,
};
use wfc_ir::{StateId, StateKind, StateMachine, Workflow};

use crate::exec::{Execution, ExecutionResult, RunOptions, Status};
use crate::handlers::DynHandler;
use crate::schedule::{DIRECT_INVOKE_DENIED, StartedBy};
use crate::task::{Attempt, run_attempt};
use crate::{Details, EventType, Failure, TaskContext};

/// The error name an `end` of kind `terminate` travels under out of nested machines; the top
/// level turns it back into a successful end.
pub const TERMINATE: &str = "Wfc.Terminate";
/// A transition's `expression` guard did not hold.
pub const GUARD_FAILED: &str = "Wfc.TransitionGuardFailed";
/// A switch matched no condition and has no `default`.
pub const NO_CONDITION: &str = "Wfc.NoConditionMatched";
/// An event, callback or switch-on-events wait (or an action) ran out of time.
pub const TIMEOUT: &str = "Wfc.Timeout";
/// Input or output does not satisfy `dataInputSchema`/`dataOutputSchema`.
pub const SCHEMA: &str = "Wfc.SchemaValidation";
/// An expression selected the wrong kind of value (a collection that is not an array ...).
pub const DATA: &str = "Wfc.DataError";

/// Serverless Workflow state of one execution that all its lines of control share: who started
/// it, and the subflows started with `waitForCompletion: false` that the top-level run has not
/// picked up yet.
#[derive(Default)]
pub struct SwShared {
    started_by: StartedBy,
    /// Queued detached subflows; [`run_top`] takes them as soon as they are queued.
    detached: Mutex<Vec<Detached>>,
    /// Whether a [`run_top`] is running the execution (and so will pick queued subflows up).
    runner: AtomicBool,
}

impl std::fmt::Debug for SwShared {
    // The queued subflows hold executions, which hold this: print the count, not the queue.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwShared")
            .field("started_by", &self.started_by)
            .field("detached", &lock(&self.detached).len())
            .finish()
    }
}

impl SwShared {
    /// The shared state of an execution started by `started_by`.
    pub fn new(started_by: StartedBy) -> SwShared {
        SwShared { started_by, ..SwShared::default() }
    }

    /// Who started the execution.
    pub fn started_by(&self) -> StartedBy {
        self.started_by
    }

    fn take_detached(&self) -> Vec<Detached> {
        std::mem::take(&mut *lock(&self.detached))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A subflow started with `waitForCompletion: false`, waiting to be run.
struct Detached {
    /// The subflow state that started it.
    state: String,
    workflow_id: String,
    /// Runs the child machine.
    run: DetachedRun,
    input: Value,
    /// Its own line of control.
    line: Execution,
}

/// How a subflow started without waiting runs its machine, on its own line of control, calling
/// functions through the top-level run's by-name handler: the interpreter's run of the child's
/// IR, or generated code's child machine. It borrows nothing of the state that started it (it
/// is queued in the execution until the top-level run picks it up), hence `'static`.
pub type DetachedRun =
    Box<dyn for<'a> FnOnce(&'a Execution, &'a dyn DynHandler, Value) -> BoxFuture<'a, Result<Value, Failure>> + Send>;

/// Where a state sends control.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Go to state `target` of the same machine with this input.
    Next {
        /// The target state.
        target: StateId,
        /// Its input.
        output: Value,
    },
    /// The machine ends with this output.
    End(Value),
    /// `end` of kind `terminate`: the whole instance ends with this output.
    Terminate(Value),
}

/// Whether `workflow` is a Serverless Workflow (its states are SW states).
pub fn is_sw(workflow: &Workflow) -> bool {
    matches!(workflow.machine.states.first().map(|s| &s.kind), Some(StateKind::Sw(_)))
}

/// The workflow-wide settings, kept on the start state.
pub fn meta(workflow: &Workflow) -> Option<&SwWorkflowMeta> {
    match workflow.machine.states.get(workflow.machine.start_at).map(|s| &s.kind) {
        Some(StateKind::Sw(s)) => s.workflow.as_deref(),
        _ => None,
    }
}

/// Runs a whole SW workflow with the interpreter.
pub async fn run(
    workflow: &Workflow,
    functions: &dyn DynHandler,
    input: Value,
    options: RunOptions,
) -> ExecutionResult {
    let exec = Execution::start(&workflow.name, &input, options);
    let machine = &workflow.machine;
    let body = |input| run_machine_top(&exec, machine, functions, input);
    run_top(meta(workflow), workflow.timeout_seconds, &exec, functions, input, body).await
}

async fn run_machine_top(
    exec: &Execution,
    machine: &StateMachine,
    functions: &dyn DynHandler,
    input: Value,
) -> Result<Value, Failure> {
    run_machine(exec, machine, functions, input).await
}

/// The frame around a top-level run: `directInvoke: deny`, input and output schema validation,
/// the subflows started without waiting (run alongside `body` with `functions`, and awaited
/// before the end), `terminate`, the execution's end in the history. `meta` and
/// `timeout_seconds` are the workflow's settings: the interpreter's from the IR ([`meta`]),
/// generated code's written out by the compiler.
pub async fn run_top<'a, F, Fut>(
    meta: Option<&'a SwWorkflowMeta>,
    timeout_seconds: Option<u64>,
    exec: &'a Execution,
    functions: &'a dyn DynHandler,
    input: Value,
    body: F,
) -> ExecutionResult
where
    F: FnOnce(Value) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + 'a,
{
    let machine = async move {
        if let Some(m) = meta
            && let Some(schedule) = &m.schedule
        {
            check_direct_start(&m.id, schedule, exec)?;
        }
        if let Some(schema) = meta.and_then(|m| m.input_schema.as_ref()) {
            validate(schema, &input, "the workflow input", "dataInputSchema")?;
        }
        let output = match with_detached(exec, functions, body(input)).await {
            Ok(v) => v,
            Err(f) if f.error == TERMINATE => serde_json::from_str(&f.cause).unwrap_or(Value::Null),
            Err(f) => return Err(f),
        };
        if let Some(schema) = meta.and_then(|m| m.output_schema.as_ref()) {
            validate(schema, &output, "the workflow output", "dataOutputSchema")?;
        }
        Ok(output)
    };
    exec.finish(timeout_seconds, machine).await
}

/// `directInvoke: deny`: only the scheduler may start an instance (see
/// [`crate::schedule::accepts_direct_start`] for the one exception, an availability window).
fn check_direct_start(id: &str, schedule: &wfc_ir::sw::Schedule, exec: &Execution) -> Result<(), Failure> {
    if exec.sw().started_by() != StartedBy::Direct
        || crate::schedule::accepts_direct_start(schedule, exec.clock().now())
    {
        return Ok(());
    }
    let when = match &schedule.interval {
        Some(i) if i.repeat.is_none() && i.start.is_some() && i.end.is_some() => format!(
            " outside its window {}/{}",
            i.start.as_deref().unwrap_or_default(),
            i.end.as_deref().unwrap_or_default()
        ),
        _ => String::new(),
    };
    Err(Failure::new(
        DIRECT_INVOKE_DENIED,
        format!(
            "the workflow {id:?} has `start.schedule.directInvoke: deny`, so only its scheduler may start an instance{when}; start it with `wfc schedule`, or from Rust with `RunOptions::with_started_by(StartedBy::Scheduler {{ .. }})` as `wfc_runtime::schedule::serve` does"
        ),
    ))
}

/// Runs `body` (the top-level machine) and, alongside it, every subflow queued with
/// `waitForCompletion: false` (including those the subflows queue); returns `body`'s output
/// once all of them have ended. The children are polled here, on the parent's task, because
/// they borrow the parent's handler: there is nothing `'static` to spawn.
async fn with_detached<'a, T>(
    exec: &'a Execution,
    functions: &'a dyn DynHandler,
    body: impl Future<Output = T> + 'a,
) -> T {
    let sw = exec.sw();
    sw.runner.store(true, Ordering::SeqCst);
    let _runner = RunnerGuard(sw);
    let mut body = pin!(body);
    let mut result = None;
    let mut children: FuturesUnordered<BoxFuture<'a, ()>> = FuturesUnordered::new();
    let out = std::future::poll_fn(|cx| {
        if result.is_none()
            && let Poll::Ready(r) = body.as_mut().poll(cx)
        {
            result = Some(r);
        }
        // Children are only queued while this task polls `body` or a child, so draining after
        // each round misses none.
        loop {
            for child in sw.take_detached() {
                children.push(Box::pin(run_detached(functions, child)));
            }
            while let Poll::Ready(Some(())) = children.poll_next_unpin(cx) {}
            if lock(&sw.detached).is_empty() {
                break;
            }
        }
        match result.take() {
            Some(r) if children.is_empty() => Poll::Ready(r),
            r => {
                result = r;
                Poll::Pending
            }
        }
    })
    .await;
    out
}

/// Ends a [`with_detached`] run, also when it is cancelled (the execution's `TimeoutSeconds`):
/// later subflows run in place, and children still queued are dropped with the parent (they hold
/// the execution, so keeping them would keep it alive).
struct RunnerGuard<'a>(&'a SwShared);

impl Drop for RunnerGuard<'_> {
    fn drop(&mut self) {
        self.0.runner.store(false, Ordering::SeqCst);
        drop(self.0.take_detached());
    }
}

/// Runs a detached subflow to its end and records how it ended on its line: its output is
/// nobody's input, and its failure does not fail the parent, which did not wait for it.
async fn run_detached(functions: &dyn DynHandler, child: Detached) {
    let Detached { state, workflow_id, run, input, line } = child;
    let ended = run(&line, functions, input).await;
    record_detached_end(&line, &state, &workflow_id, ended);
}

/// `{"name", "workflowId", <key>: document}`: a subflow's start or successful end, the document
/// shared with the history's others.
fn subflow_details(line: &Execution, name: &str, workflow_id: &str, key: &'static str, document: &Value) -> Details {
    Details::with_capacity(3)
        .with("name", json!(name))
        .with("workflowId", json!(workflow_id))
        .with_shared(key, line.share(document))
}

/// Records how an unwaited subflow ended on its own line.
fn record_detached_end(line: &Execution, state: &str, workflow_id: &str, ended: Result<Value, Failure>) {
    match ended {
        Ok(output) => {
            line.record_with(EventType::SwSubflowSucceeded, || {
                subflow_details(line, state, workflow_id, "output", &output)
            });
        }
        // `terminate` ends the subflow's own instance, which nothing else waits on.
        Err(f) if f.error == TERMINATE => {
            let output: Value = serde_json::from_str(&f.cause).unwrap_or(Value::Null);
            line.record_with(EventType::SwSubflowSucceeded, || {
                subflow_details(line, state, workflow_id, "output", &output)
            });
        }
        Err(f) => {
            line.record(
                EventType::SwSubflowFailed,
                json!({ "name": state, "workflowId": workflow_id, "error": f.error, "cause": f.cause }),
            );
        }
    }
}

/// Starts a subflow without waiting for it: queued for [`run_top`] to run alongside the parent,
/// or, when no top-level run is there to pick it up (a state machine driven by `resume`), run
/// to its end here so it is not lost.
async fn start_detached(
    exec: &Execution,
    name: &str,
    workflow_id: &str,
    run: DetachedRun,
    input: Value,
    functions: &dyn DynHandler,
) {
    let line = exec.branch();
    line.record_with(EventType::SwSubflowStarted, || subflow_details(&line, name, workflow_id, "input", &input));
    let child = Detached { state: name.to_owned(), workflow_id: workflow_id.to_owned(), run, input, line };
    if exec.sw().runner.load(Ordering::SeqCst) {
        lock(&exec.sw().detached).push(child);
    } else {
        run_detached(functions, child).await;
    }
}

/// Without the `json-schema` feature a definition with a schema does not compile (WFC0230); an IR
/// loaded from elsewhere with one fails here, naming the feature, rather than going unchecked.
#[cfg(not(feature = "json-schema"))]
fn validate(_schema: &Value, _value: &Value, what: &str, field: &str) -> Result<(), Failure> {
    Err(Failure::new(
        SCHEMA,
        format!(
            "the {field} of {what} cannot be checked: JSON Schema is not compiled into this build of wfc: enable the \
             `json-schema` feature of wfc-runtime"
        ),
    ))
}

#[cfg(feature = "json-schema")]
fn validate(schema: &Value, value: &Value, what: &str, field: &str) -> Result<(), Failure> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| Failure::new(SCHEMA, format!("the {field} of {what} is not a valid JSON Schema: {e}")))?;
    let problems: Vec<String> =
        validator.iter_errors(value).map(|e| format!("{} (at `{}`)", e, e.instance_path)).take(5).collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(SCHEMA, format!("{what} does not match its {field}: {}", problems.join("; "))))
    }
}

/// Runs one SW machine (top level or nested) from its start state to its end.
pub fn run_machine<'a>(
    exec: &'a Execution,
    machine: &'a StateMachine,
    functions: &'a dyn DynHandler,
    input: Value,
) -> BoxFuture<'a, Result<Value, Failure>> {
    Box::pin(async move {
        let mut id = machine.start_at;
        let mut input = input;
        loop {
            let Some(state) = machine.states.get(id) else {
                return Err(Failure::runtime(format!(
                    "the state machine has no state number {id} (a corrupted definition)"
                )));
            };
            let StateKind::Sw(spec) = &state.kind else {
                return Err(Failure::runtime(format!("state {:?} is not a Serverless Workflow state", state.name)));
            };
            match step(exec, &state.name, spec, input, functions).await? {
                Step::Next { target, output } => {
                    id = target;
                    input = output;
                }
                Step::End(output) => return Ok(output),
                Step::Terminate(output) => return Err(terminate(output)),
            }
        }
    })
}

fn terminate(output: Value) -> Failure {
    Failure::new(TERMINATE, output.to_string())
}

// -------------------------------------------------------------------------------------------
// Expressions

/// What a `{{ }}` path selects from `data`: `None` when it selects nothing.
fn select(path: &wfc_ir::Path, data: &Value) -> Option<Value> {
    let v = path.select(data).ok()?;
    if path.is_definite() { Some(v) } else { non_empty(v) }
}

fn non_empty(v: Value) -> Option<Value> {
    match &v {
        Value::Array(a) if a.is_empty() => None,
        _ => Some(v),
    }
}

/// Evaluates an expression string: one `{{ }}` selects JSON (`null` when it selects nothing);
/// anything else interpolates into a string.
pub fn eval_expr(expr: &Expr, data: &Value) -> Value {
    if let Some(p) = expr.as_path() {
        return select(p, data).unwrap_or(Value::Null);
    }
    let mut out = String::new();
    for part in &expr.parts {
        match part {
            ExprPart::Text(t) => out.push_str(t),
            ExprPart::Path(p) => match select(p, data) {
                Some(Value::String(s)) => out.push_str(&s),
                Some(Value::Null) | None => {}
                Some(v) => out.push_str(&v.to_string()),
            },
        }
    }
    Value::String(out)
}

/// A condition holds when every expression in it selects something that is not empty: not
/// nothing, `null`, `false`, `[]` or `{}`.
pub fn holds(expr: &Expr, data: &Value) -> bool {
    let mut any = false;
    for part in &expr.parts {
        if let ExprPart::Path(p) = part {
            any = true;
            let truthy = match select(p, data) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Object(o)) => !o.is_empty(),
                Some(_) => true,
            };
            if !truthy {
                return false;
            }
        }
    }
    any
}

/// Evaluates every expression string inside a JSON template against `data`.
fn eval_template(template: &Value, data: &Value) -> Value {
    match template {
        Value::String(s) if s.contains("{{") => match crate_expr(s) {
            Some(e) => eval_expr(&e, data),
            None => template.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|i| eval_template(i, data)).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), eval_template(v, data))).collect()),
        other => other.clone(),
    }
}

/// Parses a template string's expressions (the compiler checked them already).
fn crate_expr(s: &str) -> Option<Expr> {
    let mut parts = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            parts.push(ExprPart::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + 2..];
        let close = after.find("}}")?;
        parts.push(ExprPart::Path(wfc_ir::Path::parse(after[..close].trim()).ok()?));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        parts.push(ExprPart::Text(rest.to_owned()));
    }
    Some(Expr { text: s.to_owned(), parts })
}

/// A state or action data filter (`dataInputPath`/`dataOutputPath`): what it selects, kept under
/// its name when the path names one place (`{{ $.order.id }}` gives `{"id": ...}`), or the data
/// unchanged when it selects nothing. Every SW filter keeps the name of what it selects, so state
/// data stays an object (see docs/semantics-sw.md).
pub fn state_filter(filter: Option<&Expr>, data: Value) -> Value {
    let Some(p) = filter.and_then(Expr::as_path) else { return data };
    let Some(selected) = select(p, &data) else { return data };
    match last_name(p) {
        Some(name) if p.is_singular() => json!({ name: selected }),
        _ => selected,
    }
}

/// Merges `addition` into the state data `data` through a merge filter (`dataResultsPath`,
/// `eventDataFilter`, `errorDataFilter`): the filter's selection goes in under the last name of
/// its path (`{{ $.data.greet }}` adds `greet`); an object selection of a path without a final
/// name is merged key by key. Without a filter, an object is merged key by key and anything else
/// is dropped (state data stays an object).
pub fn merge_filtered(data: &mut Value, filter: Option<&Expr>, addition: Value) {
    let Some(path) = filter.and_then(Expr::as_path) else {
        merge(data, addition);
        return;
    };
    let Some(selected) = select(path, &addition) else { return };
    match last_name(path) {
        Some(name) => {
            if let Value::Object(m) = data {
                m.insert(name, selected);
            } else {
                *data = json!({ name: selected });
            }
        }
        None => merge(data, selected),
    }
}

fn last_name(path: &wfc_ir::Path) -> Option<String> {
    use wfc_ir::jsonpath::ast::SingularStep;
    if path.function().is_some() {
        return None;
    }
    match path.segments().last()?.as_singular()? {
        SingularStep::Name(n) => Some(n.to_owned()),
        SingularStep::Index(_) => None,
    }
}

/// Shallow merge: an object's keys overwrite the data's; anything else is dropped. Nothing to
/// merge (`{}`) leaves the data as it is, also when that is not an object (a filter may have made
/// it an array).
fn merge(data: &mut Value, addition: Value) {
    if let Value::Object(add) = addition
        && !add.is_empty()
    {
        match data {
            Value::Object(m) => m.extend(add),
            _ => *data = Value::Object(add),
        }
    }
}

// -------------------------------------------------------------------------------------------
// States

/// Which way a state leaves, as its [`SwCode::work`] or its `onError` decided: the state's own
/// `transition`/`end`, a switch's data condition or event condition (by index), a switch's
/// `default`, or an `onError` entry (by index). The interpreter turns it into the IR's
/// [`SwNext`]; generated code into a variant of its `State` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The state's own `transition` or `end`.
    Next,
    /// A switch's `dataConditions` entry.
    Condition(usize),
    /// A switch's `eventConditions` entry.
    Event(usize),
    /// A switch's `default`.
    Default,
    /// An `onError` entry.
    OnError(usize),
}

/// A state's visit up to its transition: the visit number (for durable operation ids), the way
/// out, and the state's output (after `dataOutputPath` and `dataOutputSchema`).
#[derive(Debug)]
pub struct Visited {
    /// The visit to the state on its line of control.
    pub visit: u32,
    /// Which way the state leaves.
    pub exit: Exit,
    /// The state's output.
    pub output: Value,
}

/// The `retry` entry that applies to an error: its index, and how it waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retrier {
    /// Its index among the state's `retry` entries.
    pub index: usize,
    /// `interval` in seconds.
    pub interval_seconds: f64,
    /// `multiplier` in seconds, added on each retry.
    pub increment_seconds: f64,
    /// `maxAttempts`.
    pub max_attempts: u32,
}

/// One SW state's data handling and work, as [`step_with`] runs it: the interpreter implements
/// it from the IR ([`SwState`]), generated code with generated functions over `static` parsed
/// expressions. Everything else of the visit (events, retries and their back-offs, `onError`,
/// schemas, durable operation ids) is [`step_with`]'s, so both engines run one code path.
pub trait SwCode: Sync {
    /// The SW `type` (`operation`, `switch` ...), for `SwStateEntered`.
    fn type_name(&self) -> &'static str;
    /// `dataInputSchema`, resolved.
    fn input_schema(&self) -> Option<&Value> {
        None
    }
    /// `dataOutputSchema`, resolved.
    fn output_schema(&self) -> Option<&Value> {
        None
    }
    /// `stateDataFilter.dataInputPath` on the state's input.
    fn input_filter(&self, data: Value) -> Result<Value, Failure> {
        Ok(data)
    }
    /// `stateDataFilter.dataOutputPath` on the state data after its work.
    fn output_filter(&self, data: Value) -> Result<Value, Failure> {
        Ok(data)
    }
    /// How many `retry` entries the state has.
    fn retries(&self) -> usize {
        0
    }
    /// The first `retry` entry whose expression holds on `error_data`.
    fn retry(&self, error_data: &Value) -> Result<Option<Retrier>, Failure> {
        let _ = error_data;
        Ok(None)
    }
    /// The first `onError` entry that handles `failure` (seen as `error_data` by expressions).
    fn on_error(&self, failure: &Failure, error_data: &Value) -> Result<Option<usize>, Failure> {
        let _ = (failure, error_data);
        Ok(None)
    }
    /// Merges the error data into the state data through entry `handler`'s `errorDataFilter`.
    fn error_filter(&self, handler: usize, data: &mut Value, error_data: Value) -> Result<(), Failure> {
        let _ = handler;
        merge(data, error_data);
        Ok(())
    }
    /// The state's own work on the (filtered) state data: the new data and the way out.
    fn work<'a>(
        &'a self,
        exec: &'a Execution,
        name: &'a str,
        data: Value,
        site: &'a Site,
    ) -> BoxFuture<'a, Result<(Value, Exit), Failure>>;
}

/// The interpreter's [`SwCode`]: the state's IR, and the handler its actions call by name.
struct IrCode<'s> {
    spec: &'s SwState,
    functions: &'s dyn DynHandler,
}

impl SwCode for IrCode<'_> {
    fn type_name(&self) -> &'static str {
        self.spec.type_name()
    }

    fn input_schema(&self) -> Option<&Value> {
        self.spec.input_schema.as_ref()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.spec.output_schema.as_ref()
    }

    fn input_filter(&self, data: Value) -> Result<Value, Failure> {
        Ok(state_filter(self.spec.input_filter.as_ref(), data))
    }

    fn output_filter(&self, data: Value) -> Result<Value, Failure> {
        Ok(state_filter(self.spec.output_filter.as_ref(), data))
    }

    fn retries(&self) -> usize {
        self.spec.retry.len()
    }

    fn retry(&self, error_data: &Value) -> Result<Option<Retrier>, Failure> {
        Ok(self.spec.retry.iter().enumerate().find(|(_, r)| holds(&r.expression, error_data)).map(|(index, r)| {
            Retrier {
                index,
                interval_seconds: r.interval_seconds,
                increment_seconds: r.increment_seconds,
                max_attempts: r.max_attempts,
            }
        }))
    }

    fn on_error(&self, failure: &Failure, error_data: &Value) -> Result<Option<usize>, Failure> {
        Ok(self.spec.on_error.iter().position(|e| handles(&e.matcher, failure, error_data)))
    }

    fn error_filter(&self, handler: usize, data: &mut Value, error_data: Value) -> Result<(), Failure> {
        match self.spec.on_error.get(handler).and_then(|h| h.error_filter.as_ref()) {
            Some(filter) => merge_filtered(data, Some(filter), error_data),
            None => merge(data, error_data),
        }
        Ok(())
    }

    fn work<'a>(
        &'a self,
        exec: &'a Execution,
        name: &'a str,
        data: Value,
        site: &'a Site,
    ) -> BoxFuture<'a, Result<(Value, Exit), Failure>> {
        Box::pin(work(exec, name, self.spec, data, self.functions, site))
    }
}

/// Runs one SW state on `input` with the interpreter: [`step_with`] on its IR, then the
/// transition's guard and produced events.
pub async fn step(
    exec: &Execution,
    name: &str,
    spec: &SwState,
    input: Value,
    functions: &dyn DynHandler,
) -> Result<Step, Failure> {
    let visited = step_with(exec, name, &IrCode { spec, functions }, input).await?;
    let next = ir_next(name, spec, visited.exit)?;
    follow(exec, name, visited.visit, next, visited.output).await
}

/// The IR's transition for a way out of `spec`.
fn ir_next<'s>(name: &str, spec: &'s SwState, exit: Exit) -> Result<&'s SwNext, Failure> {
    let next = match (exit, &spec.kind) {
        (Exit::Next, _) => Some(&spec.next),
        (Exit::Condition(i), SwKind::Switch { data, .. }) => data.get(i).map(|c| &c.next),
        (Exit::Event(i), SwKind::Switch { events, .. }) => events.get(i).map(|c| &c.next),
        (Exit::Default, SwKind::Switch { default, .. }) => default.as_ref(),
        (Exit::OnError(i), _) => spec.on_error.get(i).map(|e| &e.next),
        _ => None,
    };
    next.ok_or_else(|| Failure::runtime(format!("state {name:?} has no way out {exit:?} (a corrupted definition)")))
}

/// Runs one SW state on `input` up to its transition: `SwStateEntered`, `dataInputSchema`, the
/// input filter, the state's work (`code`) with its retries and `onError`, the output filter,
/// `dataOutputSchema`, `SwStateExited`. The state's code is a trait object so one copy of the
/// visit runs for every state of every machine, interpreted or generated.
pub async fn step_with(exec: &Execution, name: &str, code: &dyn SwCode, input: Value) -> Result<Visited, Failure> {
    exec.check_history()?;
    exec.record_with(EventType::SwStateEntered, || {
        Details::with_capacity(3)
            .with("name", json!(name))
            .with("type", json!(code.type_name()))
            .with_shared("input", exec.share(&input))
    });
    // Counted as the ASL states count theirs, so durable operation ids are stable across replays.
    let visit = exec.next_visit(name);
    if let Some(schema) = code.input_schema() {
        validate(schema, &input, &format!("the input of state {name:?}"), "dataInputSchema")?;
    }
    let data = code.input_filter(input)?;
    let mut retries = vec![0u32; code.retries()];
    let (data, exit) = loop {
        let site = Site { visit, attempt: retries.iter().sum(), group: String::new() };
        match code.work(exec, name, data.clone(), &site).await {
            Ok(done) => break done,
            Err(f) if f.error == TERMINATE => return Err(f),
            Err(f) => {
                let error_data = error_data(&f);
                if let Some(r) = code.retry(&error_data)?
                    && let Some(count) = retries.get_mut(r.index)
                    && *count < r.max_attempts
                {
                    // The draft's `multiplier` is a duration added on each retry: `R4/PT1M` with
                    // `PT2M` waits 1, 3, 5, 7 minutes.
                    let delay = r.interval_seconds + r.increment_seconds * f64::from(*count);
                    *count += 1;
                    exec.record(
                        EventType::SwStateRetried,
                        json!({ "name": name, "error": f.error, "attempt": *count, "delaySeconds": delay }),
                    );
                    let retry_no: u32 = retries.iter().sum();
                    timer(exec, name, visit, &format!(".retry{retry_no}"), "Retry", secs(delay)).await?;
                    continue;
                }
                match code.on_error(&f, &error_data)? {
                    Some(handler) => {
                        let mut data = data.clone();
                        code.error_filter(handler, &mut data, error_data)?;
                        break (data, Exit::OnError(handler));
                    }
                    None => return Err(f),
                }
            }
        }
    };
    let output = code.output_filter(data)?;
    if let Some(schema) = code.output_schema() {
        validate(schema, &output, &format!("the output of state {name:?}"), "dataOutputSchema")?;
    }
    exec.record_with(EventType::SwStateExited, || Details::named(name, "output", exec.share(&output)));
    Ok(Visited { visit, exit, output })
}

/// A transition's `expression` guard: `Wfc.TransitionGuardFailed` when it does not hold on the
/// state's output.
pub fn guard(name: &str, guard: &Expr, output: &Value) -> Result<(), Failure> {
    if holds(guard, output) {
        return Ok(());
    }
    Err(Failure::new(
        GUARD_FAILED,
        format!(
            "the transition out of state {name:?} is guarded by {:?}, which does not hold on the state's output",
            guard.text
        ),
    ))
}

/// Takes a transition or end: checks the guard, produces the event.
async fn follow(exec: &Execution, name: &str, visit: u32, next: &SwNext, output: Value) -> Result<Step, Failure> {
    match next {
        SwNext::Transition { target, guard, produce } => {
            if let Some(g) = guard {
                self::guard(name, g, &output)?;
            }
            produce_events(exec, name, visit, produce, &output).await?;
            Ok(Step::Next { target: *target, output })
        }
        SwNext::End { terminate, produce } => {
            produce_events(exec, name, visit, produce, &output).await?;
            Ok(if *terminate { Step::Terminate(output) } else { Step::End(output) })
        }
        SwNext::None => Err(Failure::runtime(format!("state {name:?} has no transition (a corrupted definition)"))),
    }
}

/// A transition's produced events, in order; journaled, the STEPs `<State>#<visit>.produce`,
/// then `.produce1`, `.produce2` … for v0.5's further `produceEvents`.
async fn produce_events(
    exec: &Execution,
    name: &str,
    visit: u32,
    produce: &[ProduceEvent],
    output: &Value,
) -> Result<(), Failure> {
    for (i, p) in produce.iter().enumerate() {
        let data = event_payload(p.data.as_ref(), output);
        let attributes: Vec<(String, String)> =
            p.context_attributes.iter().map(|(k, v)| (k.clone(), attribute(eval_template(v, output)))).collect();
        produce_event(exec, name, visit, i, &p.event, data, attributes).await?;
    }
    Ok(())
}

/// A `contextAttributes` value as the attribute's string: a string as it is, anything else as
/// JSON.
pub fn attribute(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// Produces the `index`-th event of a transition or end (`produceEvent(s)`), its payload and
/// attributes evaluated by the caller on the state's output: published to the execution's sink
/// and recorded (`EventProduced`); journaled, the STEP `<State>#<visit>.produce`, then
/// `.produce1`, `.produce2` ….
pub async fn produce_event(
    exec: &Execution,
    name: &str,
    visit: u32,
    index: usize,
    event: &EventDef,
    data: Value,
    attributes: Vec<(String, String)>,
) -> Result<(), Failure> {
    let suffix = if index == 0 { ".produce".to_owned() } else { format!(".produce{index}") };
    let publish = || exec.events().produce(event, data, &attributes, exec.clock().now_rfc3339());
    let event = produce(exec, name, visit, &suffix, &event.name, publish).await?;
    exec.record_with(EventType::EventProduced, || Details::with_capacity(1).with_shared("event", exec.share(&event)));
    Ok(())
}

/// An event's payload from its `data`: a whole-payload expression selects from the state data
/// like a filter does, keeping the name of what it selects (`{{ $.provisionedOrders }}` →
/// `{"provisionedOrders": …}`); an object is a template; absent, the state data itself.
fn event_payload(template: Option<&Value>, data: &Value) -> Value {
    match template {
        Some(Value::String(s)) => match crate_expr(s) {
            Some(e) if e.as_path().is_some() => state_filter(Some(&e), data.clone()),
            _ => eval_template(&Value::String(s.clone()), data),
        },
        Some(t) => eval_template(t, data),
        None => data.clone(),
    }
}

/// Whether an `onError` entry handles the failure `f` (seen as `error_data` by expressions).
fn handles(matcher: &ErrorMatch, f: &Failure, error_data: &Value) -> bool {
    match matcher {
        ErrorMatch::Expression(e) => holds(e, error_data),
        ErrorMatch::Name(n) => n == "*" || *n == f.error,
    }
}

/// The error data expressions see: the draft's spellings of one error (`$.error`, `$.errors[…]`,
/// `$.exceptions[…]`, and the Error Data Filter section's `$.exception`).
fn error_data(f: &Failure) -> Value {
    let e = json!({ "name": f.error, "message": f.cause });
    json!({ "error": e, "errors": [e], "exceptions": [e], "exception": e })
}

/// The state's own work; returns the state data and, for a switch, where to go.
async fn work(
    exec: &Execution,
    name: &str,
    spec: &SwState,
    mut data: Value,
    functions: &dyn DynHandler,
    site: &Site,
) -> Result<(Value, Exit), Failure> {
    match &spec.kind {
        SwKind::Operation { mode, actions } => {
            let data = run_actions(exec, name, *mode, actions, data, functions, site).await?;
            Ok((data, Exit::Next))
        }
        SwKind::Inject { data: add } => {
            inject(&mut data, add.clone());
            Ok((data, Exit::Next))
        }
        SwKind::Delay { seconds } => {
            delay(exec, name, site, *seconds).await?;
            Ok((data, Exit::Next))
        }
        SwKind::Switch { data: conditions, events, event_timeout, default } => {
            if !events.is_empty() {
                let defs: Vec<&EventDef> = events.iter().map(|c| &c.event).collect();
                return match wait_first(exec, name, site, &defs, *event_timeout).await? {
                    Some((i, event)) => {
                        let Some(cond) = events.get(i) else {
                            return Err(Failure::runtime("event condition out of range"));
                        };
                        merge_event(&mut data, cond.filter.as_ref(), &event, &cond.event);
                        Ok((data, Exit::Event(i)))
                    }
                    None => match default {
                        Some(_) => Ok((data, Exit::Default)),
                        None => Err(event_timeout_failure(name)),
                    },
                };
            }
            for (i, c) in conditions.iter().enumerate() {
                if holds(&c.condition, &data) {
                    return Ok((data, Exit::Condition(i)));
                }
            }
            match default {
                Some(_) => Ok((data, Exit::Default)),
                None => Err(no_condition(name)),
            }
        }
        SwKind::Event { exclusive, on_events, timeout } => {
            // The draft: when the events do not arrive in time, the state goes on without
            // performing any actions.
            let timed_out = |data: Value| {
                events_timed_out(exec, name);
                Ok((data, Exit::Next))
            };
            let defs: Vec<(usize, &EventDef)> =
                on_events.iter().enumerate().flat_map(|(i, o)| o.events.iter().map(move |e| (i, e))).collect();
            let refs: Vec<&EventDef> = defs.iter().map(|(_, e)| *e).collect();
            // The draft: an exclusive starting event state's events create the instance, so its
            // `timeout` is ignored there (a workflow's start state is the one holding the
            // workflow's settings).
            let starting = spec.workflow.is_some();
            let timeout = if starting && *exclusive { None } else { timeout.map(secs) };
            // Exclusive: the first event of any entry; else every event of every entry must
            // arrive (in any order), then each entry's actions run, in definition order.
            let Some(got) = wait_events(exec, name, site, "event", &refs, !*exclusive, timeout).await? else {
                return timed_out(data);
            };
            // (Generated code makes the same wait through `wait_all_or_any`.)
            for (j, on) in on_events.iter().enumerate() {
                let mine: Vec<&(usize, Value)> =
                    got.iter().filter(|(k, _)| defs.get(*k).is_some_and(|(entry, _)| *entry == j)).collect();
                // Exclusive: only the entry whose event came runs its actions.
                if mine.is_empty() && *exclusive {
                    continue;
                }
                for (k, event) in mine {
                    let Some((_, def)) = defs.get(*k) else { return Err(Failure::runtime("event out of range")) };
                    merge_event(&mut data, on.filter.as_ref(), event, def);
                }
                let site = site.on_events(j);
                data = run_actions(exec, name, on.mode, &on.actions, data, functions, &site).await?;
            }
            Ok((data, Exit::Next))
        }
        SwKind::Callback { action, event, event_filter, timeout } => {
            data = run_action(exec, name, action, data, functions, site, "a0").await?;
            let Some((_, ev)) = wait_first(exec, name, site, &[event], *timeout).await? else {
                return Err(callback_timeout(name));
            };
            merge_event(&mut data, event_filter.as_ref(), &ev, event);
            Ok((data, Exit::Next))
        }
        SwKind::Subflow { wait: true, workflow: Some(workflow), workflow_id } => {
            let out = subflow(exec, name, site, workflow_id, workflow, functions, data.clone()).await?;
            merge(&mut data, out);
            Ok((data, Exit::Next))
        }
        // Not compiled together: the handler runs it, like a function named after the id.
        SwKind::Subflow { wait: true, workflow: None, workflow_id } => {
            let out = handler_subflow(exec, name, workflow_id, data.clone(), functions, site, "sub").await?;
            merge(&mut data, out);
            Ok((data, Exit::Next))
        }
        // The parent goes on at once with its data unchanged; the child runs alongside it.
        SwKind::Subflow { wait: false, workflow: None, workflow_id } => {
            // Unwaited, the handler's call still runs to its end (its outcome is recorded, not
            // used), as a compiled-in child would.
            let invoke = |input, ctx| functions.call(workflow_id, input, ctx);
            unawaited_handler_subflow(exec, name, site, workflow_id, &data, invoke).await;
            Ok((data, Exit::Next))
        }
        SwKind::Subflow { wait: false, workflow: Some(workflow), workflow_id } => {
            let child = Arc::new(workflow.as_ref().clone());
            let run: DetachedRun = Box::new(move |line, functions, input| {
                Box::pin(async move { run_machine(line, &child.machine, functions, input).await })
            });
            let version = workflow.version.as_deref();
            unawaited_subflow(exec, name, site, workflow_id, version, &data, functions, run).await?;
            Ok((data, Exit::Next))
        }
        SwKind::ForEach { input_collection, output_collection, iteration_param, max, body } => {
            let body = |_: usize, line: Execution, iteration: Value| async move {
                run_body(&line, name, body, iteration, functions, site).await
            };
            let each =
                ForEach { input_collection, output_collection: output_collection.as_ref(), iteration_param, max: *max };
            Ok((foreach(exec, name, data, each, body).await?, Exit::Next))
        }
        SwKind::Parallel { completion, branches } => {
            let names: Vec<&str> = branches.iter().map(|b| b.name.as_str()).collect();
            let body = |i: usize, line: Execution, input: Value| async move {
                match branches.get(i) {
                    Some(b) => run_body_output(&line, name, &b.body, input, functions, site).await,
                    None => Err(Failure::runtime("a parallel branch out of range")),
                }
            };
            Ok((parallel(exec, name, data, *completion, &names, body).await?, Exit::Next))
        }
    }
}

/// A foreach state's settings, as [`foreach`] reads them.
#[derive(Debug, Clone, Copy)]
pub struct ForEach<'a> {
    /// `inputCollection`.
    pub input_collection: &'a Expr,
    /// `outputCollection`.
    pub output_collection: Option<&'a Expr>,
    /// `iterationParam`.
    pub iteration_param: &'a str,
    /// `max`.
    pub max: Option<u64>,
}

/// A foreach state's work: `body(index, line, iteration)` per element of the input collection
/// (on its own line of control, `SwIterationStarted` first), at most `max` in flight, the
/// results stored at `outputCollection` in input order; the first failure (in completion order)
/// fails the state. The body is the interpreter's run of the IR's actions or subflow, or
/// generated code's.
pub async fn foreach<'a, F, Fut>(
    exec: &'a Execution,
    name: &'a str,
    mut data: Value,
    each: ForEach<'_>,
    body: F,
) -> Result<Value, Failure>
where
    F: Fn(usize, Execution, Value) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + 'a,
{
    let ForEach { input_collection, output_collection, iteration_param, max } = each;
    let items = match eval_expr(input_collection, &data) {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => {
            return Err(Failure::new(
                DATA,
                format!(
                    "state {name:?}: inputCollection {:?} selects {}, not an array",
                    input_collection.text,
                    crate::error::value_kind(&other)
                ),
            ));
        }
    };
    // `max` 0 (the draft's default) means no limit.
    let limit = match max {
        None | Some(0) => usize::MAX,
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
    };
    let mut results: Vec<Option<Value>> = vec![None; items.len()];
    let mut in_flight = FuturesUnordered::new();
    let mut pending = items.into_iter().enumerate();
    let body = &body;
    loop {
        while in_flight.len() < limit {
            let Some((i, item)) = pending.next() else { break };
            // An iteration sees only its element, under the iteration parameter.
            let iteration = json!({ iteration_param: item });
            let line = exec.branch();
            in_flight.push(async move {
                line.record(EventType::SwIterationStarted, json!({ "name": name, "index": i }));
                (i, body(i, line, iteration).await)
            });
        }
        let Some((i, out)) = in_flight.next().await else { break };
        if let Some(slot) = results.get_mut(i) {
            *slot = Some(out?);
        }
    }
    if let Some(oc) = output_collection
        && let Some(path) = oc.as_path()
    {
        let results = Value::Array(results.into_iter().map(|r| r.unwrap_or(Value::Null)).collect());
        set_at(&mut data, path, results);
    }
    Ok(data)
}

/// A parallel state's work: `body(index, line, data)` per branch (named `branches`, each on its
/// own line of control, `SwBranchStarted` first), until `completion` is met; the others are
/// cancelled. Each finished branch's output merges into the data (for `and` in branch order,
/// else in completion order). The body is the interpreter's run of the IR's branch, or
/// generated code's.
pub async fn parallel<'a, F, Fut>(
    exec: &'a Execution,
    name: &'a str,
    mut data: Value,
    completion: Completion,
    branches: &[&str],
    body: F,
) -> Result<Value, Failure>
where
    F: Fn(usize, Execution, Value) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + 'a,
{
    let mut in_flight = FuturesUnordered::new();
    let body = &body;
    for (i, branch) in branches.iter().enumerate() {
        let line = exec.branch();
        let input = data.clone();
        in_flight.push(async move {
            line.record(EventType::SwBranchStarted, json!({ "name": name, "branch": branch }));
            (i, body(i, line, input).await)
        });
    }
    let needed = match completion {
        Completion::And => branches.len(),
        Completion::Xor => 1,
        Completion::NOfM(n) => usize::try_from(n).unwrap_or(usize::MAX).min(branches.len()),
    };
    let mut done: Vec<(usize, Value)> = Vec::new();
    let mut failures = Vec::new();
    while done.len() < needed {
        let Some((i, out)) = in_flight.next().await else { break };
        match out {
            Ok(v) => done.push((i, v)),
            Err(f) if f.error == TERMINATE || completion == Completion::And => return Err(f),
            Err(f) => failures.push(f),
        }
    }
    // The branches still running are cancelled by dropping them.
    drop(in_flight);
    if done.len() < needed {
        let first = failures.into_iter().next().unwrap_or_else(|| Failure::runtime("a branch failed"));
        return Err(first);
    }
    if completion == Completion::And {
        done.sort_by_key(|(i, _)| *i);
    }
    for (_, out) in done {
        merge(&mut data, out);
    }
    Ok(data)
}

/// What a foreach iteration's action gives as the iteration's result: its result through its
/// `dataResultsPath` (the selection itself), or the whole result.
pub fn action_result_filtered(filter: Option<&Expr>, result: &Value) -> Value {
    match filter.and_then(Expr::as_path) {
        Some(p) => select(p, result).unwrap_or(Value::Null),
        None => result.clone(),
    }
}

/// A switch state's failure when no data condition holds and it has no `default`.
pub fn no_condition(name: &str) -> Failure {
    Failure::new(NO_CONDITION, format!("state {name:?}: no condition holds and there is no default"))
}

/// An inject state's work: `data` merged into the state data.
pub fn inject(data: &mut Value, add: Value) {
    merge(data, add);
}

/// A delay state's work: `timeDelay` on the execution's clock (a durable WAIT when journaled).
pub async fn delay(exec: &Execution, name: &str, site: &Site, seconds: f64) -> Result<(), Failure> {
    timer(exec, name, site.visit, &format!(".{}", site.attempt), "Wait", secs(seconds)).await
}

/// A callback state's failure when its event does not arrive within its `timeout`.
pub fn callback_timeout(name: &str) -> Failure {
    Failure::new(TIMEOUT, format!("state {name:?}: the callback event did not arrive within its timeout"))
}

/// A switch on events' failure when no event arrives within its `eventTimeout` and it has no
/// `default`.
pub fn event_timeout_failure(name: &str) -> Failure {
    Failure::new(TIMEOUT, format!("state {name:?}: no event arrived within the eventTimeout"))
}

/// Waits for the first event matching any of `defs` (a callback's event, a switch's event
/// conditions): its index among `defs` and the event, recorded as consumed; `None` when
/// `timeout_seconds` pass first. Journaled, a CALLBACK `<State>#<visit>.<attempt>.<group>event`.
pub async fn wait_first(
    exec: &Execution,
    name: &str,
    site: &Site,
    defs: &[&EventDef],
    timeout_seconds: Option<f64>,
) -> Result<Option<(usize, Value)>, Failure> {
    Ok(wait_events(exec, name, site, "event", defs, false, timeout_seconds.map(secs)).await?.and_then(first))
}

/// An event state whose events did not arrive within its `timeout`: `SwStateTimedOut`; the
/// state goes on without performing any actions.
pub fn events_timed_out(exec: &Execution, name: &str) {
    exec.record(EventType::SwStateTimedOut, json!({ "name": name }));
}

/// An event state's wait: with `all`, one event of each of `defs` (in any order), else the first
/// of any; each with its index among `defs`, recorded as consumed; `None` when
/// `timeout_seconds` pass first. Journaled, a CALLBACK `<State>#<visit>.<attempt>.event`.
pub async fn wait_all_or_any(
    exec: &Execution,
    name: &str,
    site: &Site,
    defs: &[&EventDef],
    all: bool,
    timeout_seconds: Option<f64>,
) -> Result<Option<Vec<(usize, Value)>>, Failure> {
    wait_events(exec, name, site, "event", defs, all, timeout_seconds.map(secs)).await
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

fn consumed(exec: &Execution, name: &str, event: &Value) {
    exec.record_with(EventType::EventConsumed, || Details::named(name, "event", exec.share(event)));
}

/// Merges a consumed event through an event data filter: the filter applies to the whole
/// CloudEvent, or to its `data` when it selects nothing there. Without a filter, `data` merges.
/// Without a filter, the event's correlation attributes (those its definition names) are merged
/// too, so actions can use the correlation key (`{{ $.patientId }}`).
pub fn merge_event(data: &mut Value, filter: Option<&Expr>, event: &Value, def: &EventDef) {
    let payload = event.get("data").cloned().unwrap_or(Value::Null);
    match filter.and_then(Expr::as_path) {
        Some(p) if select(p, event).is_some() => merge_filtered(data, filter, event.clone()),
        Some(_) => merge_filtered(data, filter, payload),
        None => {
            merge(data, payload);
            let attributes: Map<String, Value> = def
                .correlation
                .iter()
                .filter_map(|c| event.get(&c.name).map(|v| (c.name.clone(), v.clone())))
                .collect();
            merge(data, Value::Object(attributes));
        }
    }
}

fn set_at(data: &mut Value, path: &wfc_ir::Path, value: Value) {
    if let Ok(r) = wfc_ir::ReferencePath::parse(path.as_str()) {
        if r.is_identity() {
            *data = value;
        } else {
            let _ = r.set(data, value);
        }
    }
}

/// Runs a subflow's machine on `input` on its own line of control.
async fn run_sub(
    exec: &Execution,
    workflow: &Workflow,
    functions: &dyn DynHandler,
    input: Value,
) -> Result<Value, Failure> {
    let line = exec.branch();
    run_machine(&line, &workflow.machine, functions, input).await
}

/// A foreach iteration: the last action's filtered result (or the subflow's output).
async fn run_body(
    exec: &Execution,
    name: &str,
    body: &Body,
    input: Value,
    functions: &dyn DynHandler,
    site: &Site,
) -> Result<Value, Failure> {
    match body {
        Body::Actions(actions) => {
            let mut data = input;
            let mut last = Value::Null;
            for (i, a) in actions.iter().enumerate() {
                let (new_data, result) =
                    action_with_result(exec, name, a, data, functions, site, &format!("a{i}")).await?;
                data = new_data;
                last = result;
            }
            Ok(last)
        }
        Body::Workflow(w) => run_sub(exec, w, functions, input).await,
        Body::Handler(id) => handler_subflow(exec, name, id, input, functions, site, "sub").await,
    }
}

/// A parallel branch: the data after its actions (or the subflow's output).
async fn run_body_output(
    exec: &Execution,
    name: &str,
    body: &Body,
    input: Value,
    functions: &dyn DynHandler,
    site: &Site,
) -> Result<Value, Failure> {
    match body {
        Body::Actions(actions) => {
            run_actions(exec, name, ActionMode::Sequential, actions, input, functions, site).await
        }
        Body::Workflow(w) => run_sub(exec, w, functions, input).await,
        Body::Handler(id) => handler_subflow(exec, name, id, input, functions, site, "sub").await,
    }
}

/// A subflow whose workflow was not compiled together with this one: the handler runs it as a
/// function named after its `workflowId` (the generated handler has a method for it; a case
/// mocks it by the id), on the subflow's input; its result is the subflow's output. Journaled
/// like a function action.
async fn handler_subflow(
    exec: &Execution,
    name: &str,
    workflow_id: &str,
    input: Value,
    functions: &dyn DynHandler,
    site: &Site,
    key: &str,
) -> Result<Value, Failure> {
    let call = Action {
        name: None,
        call: ActionCall::Function { function: workflow_id.to_owned(), parameters: None },
        input_filter: None,
        results_filter: None,
        timeout: None,
    };
    action_result(exec, name, &call, input, functions, site, key).await
}

async fn run_actions(
    exec: &Execution,
    name: &str,
    mode: ActionMode,
    actions: &[Action],
    mut data: Value,
    functions: &dyn DynHandler,
    site: &Site,
) -> Result<Value, Failure> {
    match mode {
        ActionMode::Sequential => {
            for (i, a) in actions.iter().enumerate() {
                data = run_action(exec, name, a, data, functions, site, &format!("a{i}")).await?;
            }
            Ok(data)
        }
        ActionMode::Parallel => {
            let calls = actions.iter().enumerate().map(|(i, a)| {
                let line = exec.branch();
                let input = data.clone();
                async move { action_result(&line, name, a, input, functions, site, &format!("a{i}")).await }
            });
            let results = futures::future::join_all(calls).await;
            for (a, r) in actions.iter().zip(results) {
                merge_filtered(&mut data, a.results_filter.as_ref(), r?);
            }
            Ok(data)
        }
    }
}

async fn run_action(
    exec: &Execution,
    name: &str,
    action: &Action,
    data: Value,
    functions: &dyn DynHandler,
    site: &Site,
    key: &str,
) -> Result<Value, Failure> {
    Ok(action_with_result(exec, name, action, data, functions, site, key).await?.0)
}

/// Runs an action and merges its result: returns the new data and the filtered result.
async fn action_with_result(
    exec: &Execution,
    name: &str,
    action: &Action,
    mut data: Value,
    functions: &dyn DynHandler,
    site: &Site,
    key: &str,
) -> Result<(Value, Value), Failure> {
    let result = action_result(exec, name, action, data.clone(), functions, site, key).await?;
    let filtered = action_result_filtered(action.results_filter.as_ref(), &result);
    merge_filtered(&mut data, action.results_filter.as_ref(), result);
    Ok((data, filtered))
}

/// Runs an action on the state data and returns its raw result.
async fn action_result(
    exec: &Execution,
    name: &str,
    action: &Action,
    data: Value,
    functions: &dyn DynHandler,
    site: &Site,
    key: &str,
) -> Result<Value, Failure> {
    let input = state_filter(action.input_filter.as_ref(), data);
    match &action.call {
        ActionCall::Function { function, parameters } => {
            let params = match parameters {
                Some(t) => eval_template(t, &input),
                None => input,
            };
            call(exec, name, function, params, action.timeout, site, key, |params, ctx| {
                functions.call(function, params, ctx)
            })
            .await
        }
        ActionCall::Event { trigger, result, data: template, context_attributes } => {
            let payload = event_payload(template.as_ref(), &input);
            let action = EventAction {
                trigger,
                attributes: context_attributes,
                result: result.as_ref(),
                timeout: action.timeout,
            };
            event_action(exec, name, site, key, action, payload).await
        }
    }
}

/// An event action (`eventRef`) as [`event_action`] runs it.
#[derive(Debug, Clone, Copy)]
pub struct EventAction<'a> {
    /// `triggerEventRef`, resolved.
    pub trigger: &'a EventDef,
    /// `contextAttributes` added to the trigger event.
    pub attributes: &'a [(String, String)],
    /// `resultEventRef`, resolved.
    pub result: Option<&'a EventDef>,
    /// The action's `timeout` in seconds.
    pub timeout: Option<f64>,
}

/// An event action's run: produces its trigger event with `payload` (the action's `data`,
/// evaluated by the caller on the action's input) and, with a result event, waits for it: its
/// `data` is the action's result (`{}` without one); `Wfc.Timeout` when it does not arrive
/// within the action's timeout. Journaled, the trigger is a STEP
/// `<State>#<visit>.<attempt>.<group><key>.trigger` and the wait a CALLBACK.
pub async fn event_action(
    exec: &Execution,
    name: &str,
    site: &Site,
    key: &str,
    action: EventAction<'_>,
    payload: Value,
) -> Result<Value, Failure> {
    let EventAction { trigger, attributes, result, timeout } = action;
    let publish = || exec.events().produce(trigger, payload, attributes, exec.clock().now_rfc3339());
    let suffix = format!(".{}.{}{key}.trigger", site.attempt, site.group);
    let event = produce(exec, name, site.visit, &suffix, &trigger.name, publish).await?;
    exec.record_with(EventType::EventProduced, || Details::named(name, "event", exec.share(&event)));
    match result {
        None => Ok(Value::Object(Map::new())),
        Some(def) => {
            match wait_events(exec, name, site, key, &[def], false, timeout.map(secs)).await?.and_then(first) {
                Some((_, ev)) => Ok(ev.get("data").cloned().unwrap_or(Value::Null)),
                None => Err(Failure::new(
                    TIMEOUT,
                    format!(
                        "state {name:?}: the result event {:?} did not arrive within the action's timeout",
                        def.name
                    ),
                )),
            }
        }
    }
}

/// A function action's call of `function` with `params` (its parameters, evaluated): the
/// `TaskScheduled`/`TaskSucceeded`/`TaskFailed`/`TaskTimedOut` events, the action's `timeout`,
/// the payload limit, and (journaled) the durable STEP `<State>#<visit>.<attempt>.<group><key>`.
/// `invoke` runs the handler: the interpreter's calls the handler by the function's name,
/// generated code's calls the generated handler method directly.
#[allow(clippy::too_many_arguments)] // the call's identity (state, site, key) and its parts
pub async fn call<F, Fut>(
    exec: &Execution,
    name: &str,
    function: &str,
    params: Value,
    timeout: Option<f64>,
    site: &Site,
    key: &str,
    invoke: F,
) -> Result<Value, Failure>
where
    F: FnOnce(Value, TaskContext) -> Fut + Send,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    exec.record_with(EventType::TaskScheduled, || {
        Details::with_capacity(3)
            .with("name", json!(name))
            .with("resource", json!(function))
            .with_shared("parameters", exec.share(&params))
    });
    // An SWF decider schedules the call as an activity whose type is the function's name.
    let request = exec.step_request(function, &params, timeout.map(secs), None);
    let ctx = TaskContext::new(name, function, 0, exec.task_execution_name());
    let run = run_attempt(|| invoke(params, ctx.clone()), &ctx, timeout.map(secs), None);
    let attempt = function_attempt(exec, name, site, key, request, run).await?;
    match attempt {
        Attempt::Succeeded(v) => {
            exec.limits().check_payload(name, &v)?;
            exec.record_with(EventType::TaskSucceeded, || {
                Details::with_capacity(3)
                    .with("name", json!(name))
                    .with("resource", json!(function))
                    .with_shared("output", exec.share(&v))
            });
            Ok(v)
        }
        Attempt::Failed(f) => {
            exec.record(
                EventType::TaskFailed,
                json!({ "name": name, "resource": function, "error": f.error, "cause": f.cause }),
            );
            Err(f)
        }
        Attempt::TimedOut(_) => {
            let f = Failure::new(TIMEOUT, format!("function {function:?} did not finish within the action's timeout"));
            exec.record(
                EventType::TaskTimedOut,
                json!({ "name": name, "resource": function, "error": f.error, "cause": f.cause }),
            );
            Err(f)
        }
    }
}

// -------------------------------------------------------------------------------------------
// Durable operations (docs/durable.md): with a journal, each runs through it; without, plainly.

/// Where a state's work is, for durable operation ids: the visit to the state on its line of
/// control (counted as the ASL states count theirs), the state's attempt (retries so far), and
/// the group of actions (`on<j>.` for an event state's `onEvents` entry `j`). [`step_with`]
/// makes one per attempt; a state's [`SwCode::work`] hands it on to [`call`] and [`delay`].
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "durable"), allow(dead_code))] // the ids are built only when durable
pub struct Site {
    visit: u32,
    attempt: u32,
    group: String,
}

impl Site {
    /// The site of the actions of an event state's `onEvents` entry `entry` (group `on<entry>.`).
    pub fn on_events(&self, entry: usize) -> Site {
        Site { group: format!("on{entry}."), ..self.clone() }
    }
}

/// The only event of a wait for one event.
fn first(events: Vec<(usize, Value)>) -> Option<(usize, Value)> {
    events.into_iter().next()
}

/// A delay or retry back-off, as a durable WAIT `<State>#<visit><suffix>` when journaled, on the
/// execution's clock.
async fn timer(
    exec: &Execution,
    name: &str,
    visit: u32,
    suffix: &str,
    subtype: &str,
    delay: Duration,
) -> Result<(), Failure> {
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        let id = exec.op_id(name, visit, suffix);
        return journal.sleep(exec.clock(), id, exec.op_parent(), name, subtype, delay).await;
    }
    let _ = (name, visit, suffix, subtype);
    exec.clock().sleep(delay).await;
    Ok(())
}

/// Produces an event (`publish` builds it and puts it in the execution's sink). Journaled, it
/// is a STEP `<State>#<visit><suffix>` whose result is the event: a replay returns the recorded
/// event and does not publish it again.
async fn produce(
    exec: &Execution,
    name: &str,
    visit: u32,
    suffix: &str,
    event_name: &str,
    publish: impl FnOnce() -> Value + Send,
) -> Result<Value, Failure> {
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        let id = exec.op_id(name, visit, suffix);
        return journal.produce(id, exec.op_parent(), name, event_name, exec.events(), Box::new(publish)).await;
    }
    let _ = (exec, name, visit, suffix, event_name);
    Ok(publish())
}

/// A function action's call, as a durable STEP `<State>#<visit>.<attempt>.<group><key>` when
/// journaled: replayed when its outcome is recorded, else run and checkpointed (or, with
/// `request`, parked by a suspending journal).
async fn function_attempt(
    exec: &Execution,
    name: &str,
    site: &Site,
    key: &str,
    request: Option<crate::task::StepRequest>,
    run: impl Future<Output = Attempt> + Send,
) -> Result<Attempt, Failure> {
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        let id = exec.op_id(name, site.visit, &format!(".{}.{}{key}", site.attempt, site.group));
        return journal.step(id, exec.op_parent(), name, request, Box::pin(run)).await;
    }
    let _ = (exec, name, site, key, request);
    Ok(run.await)
}

/// Waits for events matching `defs` (the first match of any, or with `all` one event of each,
/// in any order) and records each consumed; `None` when `timeout` passes first. Journaled, the
/// wait is a CALLBACK `<State>#<visit>.<attempt>.<group><what>` completed through the store's
/// event inbox (`wfc event`), with a durable timeout.
async fn wait_events(
    exec: &Execution,
    name: &str,
    site: &Site,
    what: &str,
    defs: &[&EventDef],
    all: bool,
    timeout: Option<Duration>,
) -> Result<Option<Vec<(usize, Value)>>, Failure> {
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        let id = exec.op_id(name, site.visit, &format!(".{}.{}{what}", site.attempt, site.group));
        let token = crate::callback::task_token(exec.id(), &id);
        let wait = crate::journal::EventWait { id, parent: exec.op_parent(), name, token, defs, all, timeout };
        // A wait that timed out may have consumed some events (one for all), as below.
        let (got, complete) = journal.event_wait(exec.clock(), exec.events(), wait).await?;
        for (_, event) in &got {
            consumed(exec, name, event);
        }
        return Ok(complete.then_some(got));
    }
    let _ = (site, what);
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut wanted: Vec<usize> = (0..defs.len()).collect();
    let mut got = Vec::new();
    while !wanted.is_empty() {
        let refs: Vec<&EventDef> = wanted.iter().filter_map(|&d| defs.get(d).copied()).collect();
        let remaining = deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        let Some((k, event)) = exec.events().wait(&refs, remaining).await? else { return Ok(None) };
        consumed(exec, name, &event);
        got.push((wanted.remove(k), event));
        if !all {
            break;
        }
    }
    Ok(Some(got))
}

/// A subflow the parent waits for, on a line of control of its own. Journaled, it is a
/// CHAINED_INVOKE `<State>#<visit>.<attempt>` enclosing the child's operations: a finished one
/// replays its recorded output without running the child again. On a Lambda durable function
/// whose configuration maps `workflow_id` to a function, that function runs the child instead
/// (see `Journal::subflow`).
async fn subflow(
    exec: &Execution,
    name: &str,
    site: &Site,
    workflow_id: &str,
    workflow: &Workflow,
    functions: &dyn DynHandler,
    input: Value,
) -> Result<Value, Failure> {
    let machine = &workflow.machine;
    let child = |line: Execution, input: Value| async move { run_machine(&line, machine, functions, input).await };
    subflow_with(exec, name, site, workflow_id, workflow.version.as_deref(), input, child).await
}

/// An awaited subflow compiled together: `child` runs the embedded workflow's machine (the
/// interpreter's run of its IR, or its generated machine) on `input` on a line of control of
/// its own. Journaled, it is a CHAINED_INVOKE `<State>#<visit>.<attempt>` enclosing the child's
/// operations: a finished one replays its recorded output without running the child again. On
/// a Lambda durable function whose configuration maps `workflow_id` to a function, that function
/// runs the child instead (see `Journal::subflow`).
pub async fn subflow_with<F, Fut>(
    exec: &Execution,
    name: &str,
    site: &Site,
    workflow_id: &str,
    version: Option<&str>,
    input: Value,
    child: F,
) -> Result<Value, Failure>
where
    F: FnOnce(Execution, Value) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        let id = exec.op_id(name, site.visit, &format!(".{}", site.attempt));
        let line = exec.sub_scope(id.clone());
        let run = child(line, input.clone());
        return journal.subflow(&id, exec.op_parent(), name, workflow_id, version, &input, Box::pin(run)).await;
    }
    let _ = (name, site, workflow_id, version);
    child(exec.branch(), input).await
}

/// The failure `end` of kind `terminate` travels as out of a nested machine (a subflow, branch
/// or iteration), carrying the output; the top level turns it back into a successful end.
pub fn terminate_with(output: Value) -> Failure {
    terminate(output)
}

/// The machine of `spec`'s subflow compiled together number `branch` (0 for a subflow state
/// or a foreach; the branch's index for a parallel state), as generated code numbers its nested
/// machines.
pub fn embedded_machine(spec: &SwState, branch: usize) -> Option<&StateMachine> {
    match &spec.kind {
        SwKind::Subflow { workflow: Some(w), .. } if branch == 0 => Some(&w.machine),
        SwKind::ForEach { body: Body::Workflow(w), .. } if branch == 0 => Some(&w.machine),
        SwKind::Parallel { branches, .. } => match branches.get(branch).map(|b| &b.body) {
            Some(Body::Workflow(w)) => Some(&w.machine),
            _ => None,
        },
        _ => None,
    }
}

/// A subflow compiled together and not awaited: `run` (the child machine) runs alongside the
/// parent, queued for [`run_top`] (or to its end here when no top-level run will pick it up),
/// on a line of its own between `SwSubflowStarted` and `SwSubflowSucceeded`/`SwSubflowFailed`;
/// the parent goes on with its data unchanged. Journaled on an SWF decider configured to start
/// it as a child workflow, the decider starts it instead (unwaited).
#[allow(clippy::too_many_arguments)]
pub async fn unawaited_subflow(
    exec: &Execution,
    name: &str,
    site: &Site,
    workflow_id: &str,
    version: Option<&str>,
    data: &Value,
    functions: &dyn DynHandler,
    run: DetachedRun,
) -> Result<(), Failure> {
    #[cfg(feature = "durable")]
    if let Some(journal) = exec.journal() {
        let id = exec.op_id(name, site.visit, &format!(".{}", site.attempt));
        if journal.detached_subflow(&id, name, workflow_id, version, data)? {
            return Ok(());
        }
    }
    let _ = (site, version);
    start_detached(exec, name, workflow_id, run, data.clone(), functions).await;
    Ok(())
}

/// A subflow not compiled together and not awaited: the handler's call (`invoke`, the method
/// named after `workflow_id`) runs to its end on a line of its own, between `SwSubflowStarted`
/// and `SwSubflowSucceeded`/`SwSubflowFailed`; its outcome is recorded, not used, and the parent
/// goes on with its data unchanged.
pub async fn unawaited_handler_subflow<F, Fut>(
    exec: &Execution,
    name: &str,
    site: &Site,
    workflow_id: &str,
    data: &Value,
    invoke: F,
) where
    F: FnOnce(Value, TaskContext) -> Fut + Send,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    let line = exec.branch();
    line.record_with(EventType::SwSubflowStarted, || subflow_details(&line, name, workflow_id, "input", data));
    let ended = call(&line, name, workflow_id, data.clone(), None, site, "sub", invoke).await;
    record_detached_end(&line, name, workflow_id, ended);
}

/// The status of an execution's result, for callers that only need to know it finished.
pub fn succeeded(result: &ExecutionResult) -> bool {
    result.status == Status::Succeeded
}
