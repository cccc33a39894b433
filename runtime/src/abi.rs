//! The ABI of states compiled to Rust: what generated code calls when it runs a state's work
//! itself instead of handing the state's IR to [`crate::exec`].
//!
//! Generated code for a Pass, Choice, Succeed, Task, Wait, Fail, Parallel or Map state
//! (JSONPath or JSONata), or a Serverless Workflow state, is built from these pieces. It carries
//! no IR: what the runtime needs of the workflow beyond its states is written out as constants
//! (the name and IR hash as a [`crate::DefinitionId`], `TimeoutSeconds`, an SW workflow's
//! settings).
//!
//! - the state's visit, [`pass`], [`choice`], [`succeed`], [`task`], [`wait`] and [`fail`]
//!   (`exec::pass_with`, `exec::choice_with`, `exec::succeed_with`, `exec::task_with`,
//!   `exec::wait_with`, `exec::fail_with`): the same functions the
//!   interpreter runs those states through, so both engines record the same events with the same
//!   JSON and raise the same failures. A Choice with `$` paths is [`choice_kept`] and a Pass
//!   writing its InputPath node back in place [`pass_kept`]: their output is their input, which
//!   needs no second payload check (unless the state is the first of its line). A Pass whose output
//!   its Result or Parameters build whole from parts of a size known at build time is
//!   [`pass_bounded`], with that bound: under the execution's limits its output needs no check
//!   (a Parameters object is [`pass_built`]: its values read, then the object put together by
//!   [`object_in`] in the spent input's allocations where no history keeps them). A Task's
//!   [`TaskCode::is_lambda_function`] is a `const` computed by [`is_function_arn`]. A Task's data processing is a [`TaskCode`] the generated
//!   code implements (paths, Parameters, ResultSelector, timeouts), with its Retry and Catch as
//!   `const` tables of [`Retrier`]s and [`Catcher`]s (or [`AssignCatcher`]s, when a catcher
//!   has a JSONPath `Assign`, compiled to a [`CatchAssign`] function); the retry loop,
//!   back-offs, events, callbacks and Catch stay in `exec::task_with`. A Task whose processing
//!   is all the defaults is a `static` [`PlainTask`] (its names, tables and shape as data), and
//!   each handler method's Tasks go through one generated function calling [`task`] with the
//!   method, so they share one compiled visit: [`counted_task`], which runs a Task whose visit
//!   only counts its events around the handler's own future, through steps that return an id
//!   or a `bool` rather than a `Result` carrying a [`crate::Failure`] through memory, and any
//!   other through [`task`];
//! - JSONPath `Assign` blocks as construction code giving [`Assigned`]: through
//!   [`pass_assign`], [`wait_assign`] and [`choice_assign`] for a Pass, Wait or Choice, and the
//!   `assigns`/`assigned` methods of a Task's, Parallel's or Map's code;
//! - a Parallel's or Map's visit, [`parallel`] and [`map`] (`exec::parallel_with`,
//!   `exec::map_with`): the events, the branches' and iterations' lines of control (and their
//!   CONTEXT operations when journaled), MaxConcurrency, the item-count limit, Retry and Catch.
//!   Generated code implements [`NestedCode`] with [`ParallelCode`] (Parameters) or [`MapCode`]
//!   (ItemsPath, ItemSelector, MaxConcurrency), and runs its branches and item processor as
//!   generated machines ([`join_branches`] runs the branches together);
//! - a JSONata Parallel's or Map's `Arguments`, `Output` and `Assign` as the `has_arguments`/
//!   `arguments`, `has_output`/`output` and `assigns`/`assigned` methods of its code (as a
//!   Task's), a JSONata Map's `Items` and `ItemSelector` as its `iteration_inputs` (through
//!   [`jsonata_items`] or [`input_items`], and [`item_context`]), its `MaxConcurrency`
//!   expression through [`max_concurrency_jsonata`];
//! - a Task's `Credentials` as its code's `has_credentials`/`role_arn`: the object built as a
//!   template, its `RoleArn` checked by [`jsonpath_role_arn`] or [`jsonata_role_arn`];
//! - a DISTRIBUTED Map's own fields as a [`DistributedCode`] its `MapCode::distributed` returns:
//!   `Label`, `ToleratedFailureCount`/`Percentage` (literals, or [`count_path`]/
//!   [`percentage_path`] on a static path, or [`count_jsonata`]/[`percentage_jsonata`]), the
//!   `ItemReader`'s `Parameters` (or JSONata `Arguments`) as construction code, its
//!   `ReaderConfig` as a [`ReadSpec`] and its `MaxItems` as a [`CountField`], the
//!   `ItemBatcher`'s sizes and `BatchInput`, the `ResultWriter`'s `Parameters` and
//!   [`WriterConfig`], and the items (`items`) and
//!   `ItemSelector` (`select_inputs`) split so that items an `ItemReader` read go through the
//!   same selector. The Map Run itself (`MapRunStarted`, the children as executions of the
//!   generated item processor, the tolerance, the result files) is
//!   [`crate::distributed::map_run`], which the interpreter's visit runs too;
//! - JSONata: each expression a [`StaticJsonata`] parsed once on first use, evaluated with the
//!   `$states` [`Bindings`] by [`jsonata`] (templates), [`jsonata_condition`],
//!   [`jsonata_seconds`], [`wait_seconds_jsonata`]/[`wait_timestamp_jsonata`] and
//!   [`fail_jsonata`], the interpreter's evaluator and causes; the visits of JSONata Pass, Choice
//!   and Wait states are [`pass_language`], [`choice_language`] and [`wait_language`], a Task's
//!   Arguments/Output/Assign are [`TaskCode`] methods, and its catchers' JSONata `Assign` and
//!   `Output` a [`JsonataCatcher`] table;
//! - definite paths as steps built at compile time ([`Seg`]): [`get`], [`select`], [`take`],
//!   [`set`] walk them with one `get` per step, never parsing the path at run time;
//! - other paths (`$$`, `$var`, wildcards, filters) as a [`StaticPath`], parsed once on first use
//!   and evaluated by the same JSONPath evaluator as the interpreter's ([`select_path`],
//!   [`field_path`], [`select_opt`]);
//! - payload template fields ([`field`], [`field_ref`]) with the interpreter's error wording;
//! - intrinsic functions on arguments the generated code evaluated ([`call`], [`call_random`],
//!   [`math_add`], [`format`]): the same evaluator as the interpreter's, minus the parsing;
//! - Choice comparisons with their literal converted at compile time ([`numeric`],
//!   [`timestamp`], [`string`], [`matches`], [`boolean`]) and, for `*Path` operands known only
//!   at run time, [`crate::choice::test`];
//! - a typed handler method's call ([`typed_task`], `crate::typed::call`): the serde boundary
//!   around the method of a Task resource declared with Rust types, `Wfc.TypeMismatch` when a
//!   value does not convert;
//! - Serverless Workflow states: a state's code implements [`SwCode`] (its filters, `retry`
//!   and `onError` matching, and its work) and its visit is [`sw_step`] (`sw::step_with`, which
//!   the interpreter runs its SW states through too); `{{ }}` expressions are [`StaticSwExpr`]s
//!   built once on first use from their parts ([`sw_expr`]) and evaluated by [`sw_eval`],
//!   [`sw_holds`], [`sw_filter`] and [`sw_merge_filtered`]; a function action is [`sw_call`]
//!   with the generated handler method (an event action [`sw_event_action`]), actions in
//!   `parallel` mode joined by [`sw_join`]; an
//!   inject is [`sw_inject`], a delay [`sw_delay`], an unawaited subflow the handler runs
//!   [`sw_unawaited_subflow`], an unawaited subflow compiled together [`sw_detached_subflow`]
//!   (its child machine a [`SwDetachedRun`] over the by-name handler), a transition's guard
//!   [`sw_guard`]; the frame of a top-level run is [`sw_run_top`], with the workflow's settings
//!   ([`SwWorkflowMeta`]) built by the generated code; a
//!   foreach's loop is [`sw_foreach`] and a parallel state's branches [`sw_parallel`], each
//!   around a generated body (an iteration's or branch's actions, or a subflow the handler runs),
//!   an iteration's result through [`sw_action_result`]; events are [`StaticEventDef`]s (built
//!   once), produced on a transition or end by [`sw_produce`] with their payload and attributes
//!   built by the generated code ([`sw_attribute`]), awaited by a callback or a switch on events
//!   through [`sw_wait_first`] (an event state's through [`sw_wait_events`], its timeout
//!   recorded by [`sw_timed_out`], each `onEvents` entry's actions on `SwSite::on_events`) and
//!   merged by [`sw_merge_event`];
//! - the driver loop, once for every machine: a generated machine (the workflow, each Parallel
//!   branch, each Map item processor) supplies only its `step`, one state's work giving a
//!   [`Flow`], and [`drive`] runs the steps until one ends the machine.

use std::cmp::Ordering;
use std::future::Future;
use std::sync::LazyLock;

use rand::Rng;
use serde_json::{Map, Value};
use wfc_ir::PathError;
use wfc_ir::intrinsics::eval as intrinsic_eval;
use wfc_ir::jsonata::JsonataError;
/// The path and JSONata expression types generated code parses its `static`s into, and the
/// Choice operators it names: IR *values* built from the text the compiler wrote out (generated
/// code never reads the definition's IR).
pub use wfc_ir::{JsonataExpr, Operator, Path};

use crate::Failure;

pub use crate::distributed::ReadSpec;
pub use crate::distributed::{CountField, DistributedCode};
pub use crate::exec::{
    Assigned, MapCode, NestedCode, ParallelCode, ParametersForm, PlainTask, TaskCode, TaskShape,
    choice_assign_with as choice_assign, choice_kept_with as choice_kept, choice_language_with as choice_language,
    choice_with as choice, counted_task_with as counted_task, fail_with as fail, join_branches, map_with as map,
    parallel_with as parallel, pass_assign_with as pass_assign, pass_bounded_with as pass_bounded,
    pass_built_with as pass_built, pass_kept_with as pass_kept, pass_language_with as pass_language, pass_with as pass,
    succeed_with as succeed, task_with as task, wait_assign_with as wait_assign, wait_language_with as wait_language,
    wait_with as wait,
};
pub use crate::jsonata::Bindings;
/// Whether a Task's `Resource` is a bare Lambda function ARN: a `const fn`, which generated code
/// evaluates when it is compiled (`TaskCode::is_lambda_function`).
pub use crate::lambda::is_function_arn_const as is_function_arn;
pub use crate::retry::{
    AssignCatcher, CatchAssign, CatchJsonataAssign, CatchJsonataOutput, CatchPath, JsonataCatcher,
    StaticCatcher as Catcher, StaticRetrier as Retrier,
};
pub use crate::sw::{
    DetachedRun as SwDetachedRun, EventAction as SwEventAction, Exit as SwExit, ForEach as SwForEach,
    Retrier as SwRetrier, Site as SwSite, SwCode, Visited as SwVisited, action_result_filtered as sw_action_result,
    attribute as sw_attribute, call as sw_call, callback_timeout as sw_callback_timeout, delay as sw_delay,
    eval_expr as sw_eval, event_action as sw_event_action, event_timeout_failure as sw_event_timeout,
    events_timed_out as sw_timed_out, foreach as sw_foreach, guard as sw_guard, holds as sw_holds, inject as sw_inject,
    merge_event as sw_merge_event, merge_filtered as sw_merge_filtered, no_condition as sw_no_condition,
    parallel as sw_parallel, produce_event as sw_produce, run_top as sw_run_top, state_filter as sw_filter,
    step_with as sw_step, subflow_with as sw_subflow, terminate_with as sw_terminate,
    unawaited_handler_subflow as sw_unawaited_subflow, unawaited_subflow as sw_detached_subflow,
    wait_all_or_any as sw_wait_events, wait_first as sw_wait_first,
};
pub use crate::typed::call as typed_task;
pub use std::time::Duration;
pub use wfc_ir::Jitter;
pub use wfc_ir::distributed::{
    CsvDelimiter, InputType, ManifestType, OutputType, ReaderTransformation, WriterConfig, WriterTransformation,
};
pub use wfc_ir::intrinsics::Function;
pub use wfc_ir::jsonpath::ast::SingularStep as Seg;
pub use wfc_ir::native::{NativeNumber, Pattern};
pub use wfc_ir::sw::Completion as SwCompletion;
pub use wfc_ir::sw::{
    Correlation as SwCorrelation, EventDef as SwEventDef, Interval as SwInterval, Schedule as SwSchedule,
    SwWorkflowMeta,
};

/// Where a generated machine goes after one state: on to the next state (a variant of the
/// machine's `State` enum, carrying its raw input), or out of the machine with its output.
pub enum Flow<S> {
    /// The next state.
    Next(S),
    /// The machine ended (a Succeed state, or a state with `End`) with this output.
    End(Value),
}

/// The driver of every generated machine: runs `step` (the machine's generated per-state work)
/// from `state` until a state ends the machine, and returns its output or the failure that ended
/// it. Generated code carries only the steps; the loop is this one.
///
/// Not an `async fn`: an `async fn` keeps a second copy of its arguments in its future (here the
/// state, with its input); the block uses them in place. Every Parallel branch and Map item
/// boxes such a future, and a smaller one stays in the allocator's thread cache.
pub fn drive<S, F, Fut>(mut state: S, mut step: F) -> impl Future<Output = Result<Value, Failure>>
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = Result<Flow<S>, Failure>>,
{
    async move {
        loop {
            match step(state).await? {
                Flow::Next(next) => state = next,
                Flow::End(output) => return Ok(output),
            }
        }
    }
}

/// A `States.Runtime` failure for an outcome the runtime reported that the state's generated
/// code has no way out for (a catcher index or an SW exit it did not write): a bug in wfc,
/// never a property of the definition, reported rather than a panic.
pub fn unexpected(state: &str, problem: &str) -> Failure {
    Failure::runtime(format!("state {state:?} {problem} (the runtime and the generated code disagree: a bug in wfc)"))
}

/// [`unexpected`] for a Task or Parallel whose visit sent control to a catcher's state
/// (`target`, its index) that its generated code has no way to.
#[cold]
pub fn no_catcher_leading_to(state: &str, target: usize) -> Failure {
    unexpected(state, &format!("has no catcher leading to state {target}"))
}

/// A path that is not a definite `$` path, parsed once on first use. A path that does not parse
/// (impossible for a definition the compiler accepted) fails the state with `States.Runtime`.
pub type StaticPath = LazyLock<Result<Path, PathError>>;

/// A `StringMatches` pattern, tokenized once on first use.
pub type StaticPattern = LazyLock<Pattern>;

/// A literal subtree of a payload template, built once on first use and cloned per visit.
pub type StaticValue = LazyLock<Value>;

/// A JSONata expression (the text between `{%` and `%}`), parsed once on first use. One that
/// does not parse (impossible for a definition the compiler accepted, in a build with the
/// `jsonata` feature, which every definition using JSONata needs) fails the state with
/// `States.Runtime`.
pub type StaticJsonata = LazyLock<Result<JsonataExpr, JsonataError>>;

/// The parsed expression of a [`StaticJsonata`].
pub fn jsonata_expr(expr: &'static StaticJsonata) -> Result<&'static JsonataExpr, Failure> {
    expr.as_ref().map_err(|e| {
        Failure::runtime(format!("a JSONata expression compiled into this program does not parse: {}", e.message))
    })
}

/// A JSONata expression of a template (`Arguments`, `Output`, an `Assign` value) at `field`
/// (`Output/key/0`, named in causes as AWS names it), evaluated with `states` under the
/// execution's random source: the interpreter's evaluator and causes
/// (`States.QueryEvaluationError`).
pub fn jsonata(
    exec: &crate::Execution,
    expr: &JsonataExpr,
    field: &str,
    states: &Bindings<'_>,
) -> Result<Value, Failure> {
    exec.with_rng(|rng| crate::jsonata::evaluate(expr, field, states, rng))
}

/// A Choice rule's JSONata `Condition` on the state input `input`: a Boolean, else
/// `States.QueryEvaluationError`.
pub fn jsonata_condition(expr: &JsonataExpr, input: &Value, ctx: &Value) -> Result<bool, Failure> {
    crate::choice::jsonata_condition(expr, input, ctx)
}

/// A Task's JSONata `TimeoutSeconds` or `HeartbeatSeconds` (`field`) on the state input: a
/// positive integer, else `States.QueryEvaluationError`.
pub fn jsonata_seconds(
    expr: &JsonataExpr,
    field: &str,
    input: &Value,
    ctx: &Value,
) -> Result<Option<Duration>, Failure> {
    crate::exec::jsonata_seconds(expr, field, input, ctx).map(Some)
}

/// A Wait's JSONata `Seconds`: a non-negative integer, else `States.QueryEvaluationError`.
pub fn wait_seconds_jsonata(
    exec: &crate::Execution,
    expr: &JsonataExpr,
    states: &Bindings<'_>,
) -> Result<Duration, Failure> {
    crate::exec::wait_seconds_jsonata(exec, expr, states)
}

/// A Wait's JSONata `Timestamp`: the time from now until then on the execution's clock.
pub fn wait_timestamp_jsonata(
    exec: &crate::Execution,
    expr: &JsonataExpr,
    states: &Bindings<'_>,
) -> Result<Duration, Failure> {
    crate::exec::wait_timestamp_jsonata(exec, expr, states)
}

/// A Fail state's JSONata `Error` or `Cause` (`field`): a string, else
/// `States.QueryEvaluationError`.
pub fn fail_jsonata(
    exec: &crate::Execution,
    expr: &JsonataExpr,
    field: &str,
    states: &Bindings<'_>,
) -> Result<String, Failure> {
    crate::exec::fail_jsonata(exec, expr, field, states)
}

/// What a Fail state's intrinsic ErrorPath or CausePath (`field`) gave: a string, else
/// `States.Runtime`.
pub fn fail_computed(field: &str, value: Value) -> Result<String, Failure> {
    crate::exec::computed_string(field, value)
}

/// The parsed path of a [`StaticPath`].
pub fn path(path: &'static StaticPath) -> Result<&'static Path, Failure> {
    path.as_ref().map_err(|e| Failure::runtime(format!("a path compiled into this program does not parse: {e}")))
}

/// The object `{keys[0]: values[0], …}`, in that order, built in `spare`'s allocations when
/// `spare` is an object of about as many members (a Pass's spent input, see
/// [`pass_built`]): with the same keys in the same order, only the values are replaced (no
/// allocation: a loop's `{"i": …}` rebuilt from `{"i": …}`); otherwise it is emptied and
/// filled, keeping its tables. A larger object is not reused (its tables would stay that
/// large with the output), nor anything else; then, as without a spare, the object is built
/// new. The same JSON as inserting each key in order into a new map (a key written twice
/// keeps its first place and its last value, as `Map::insert` does).
pub fn object_in<const N: usize>(spare: Option<Value>, keys: &[&'static str; N], values: [Value; N]) -> Value {
    let mut object = match spare {
        Some(Value::Object(mut map)) if map.len() <= 2 * N + 8 => {
            if map.len() == N && map.keys().zip(keys).all(|(have, want)| have == want) {
                for (slot, value) in map.values_mut().zip(values) {
                    *slot = value;
                }
                return Value::Object(map);
            }
            map.clear();
            map
        }
        _ => Map::with_capacity(N),
    };
    for (key, value) in keys.iter().zip(values) {
        object.insert((*key).to_owned(), value);
    }
    Value::Object(object)
}

/// `{}`: what a `null` InputPath or OutputPath gives.
pub fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// The node the steps of a definite `$` path lead to in `doc`; `None` when one is missing.
#[inline]
pub fn get<'a>(doc: &'a Value, steps: &[Seg<'_>]) -> Option<&'a Value> {
    wfc_ir::jsonpath::get_steps(doc, steps)
}

/// InputPath (a definite `$` path whose text is `text`) on a borrowed input: the node, by
/// reference, or `States.Runtime` with AWS's `Invalid path` wording.
pub fn select<'a>(doc: &'a Value, steps: &[Seg<'_>], text: &str) -> Result<&'a Value, Failure> {
    get(doc, steps).ok_or_else(|| Failure::runtime(crate::io::invalid_path_text_message(text, doc)))
}

/// InputPath or OutputPath (a definite `$` path) on an owned document: the node is moved out,
/// not copied; the same failure as [`select`].
pub fn take(doc: Value, steps: &[Seg<'_>], text: &str) -> Result<Value, Failure> {
    wfc_ir::jsonpath::take_steps(doc, steps)
        .map_err(|doc| Failure::runtime(crate::io::invalid_path_text_message(text, &doc)))
}

/// InputPath or OutputPath with any other path: selects from `doc` (`$`) or the context object
/// (`$$`, `$var`), with the same failure as [`select`].
pub fn select_path(path: &Path, doc: &Value, context: &Value) -> Result<Value, Failure> {
    crate::io::select_path(path, doc, context)
}

/// ResultPath (a Reference Path other than `$`, whose text is `text`): writes `result` into the
/// raw input, creating missing parent objects, as [`crate::io::result_path`] does.
pub fn set(raw: Value, steps: &[Seg<'_>], text: &str, result: Value) -> Result<Value, Failure> {
    let mut out = raw;
    wfc_ir::jsonpath::set_steps(&mut out, steps.iter().copied(), text, result)
        .map_err(|e| crate::io::result_path_failure(text, &e))?;
    Ok(out)
}

/// A payload template's `"key.$"` field (`field` is `key.$`) with a definite `$` path: the node,
/// by reference, or `States.Runtime` with the template wording (`The JSONPath '$.x' specified for
/// the field 'key.$' could not be found in the input '...'`). Also an intrinsic's path argument.
pub fn field_ref<'a>(input: &'a Value, steps: &[Seg<'_>], text: &str, field: &str) -> Result<&'a Value, Failure> {
    get(input, steps).ok_or_else(|| Failure::runtime(intrinsic_eval::field_not_found_text(text, field, input)))
}

/// [`field_ref`], copied into the value being built.
pub fn field(input: &Value, steps: &[Seg<'_>], text: &str, field: &str) -> Result<Value, Failure> {
    field_ref(input, steps, text, field).cloned()
}

/// A template field or intrinsic argument with any other path, with the template wording.
pub fn field_path(path: &Path, field: &str, input: &Value, context: &Value) -> Result<Value, Failure> {
    crate::io::select_field(path, field, input, context)
}

/// A Choice `Variable` or `*Path` operand with a path other than a definite `$` path: its value,
/// or `None` when it selects nothing.
pub fn select_opt(path: &Path, input: &Value, context: &Value) -> Option<Value> {
    crate::io::select_opt(path, input, context)
}

/// The failure of a Choice `Variable` (or `*Path` operand) whose definite `$` path `text`
/// selects nothing in the effective input `input`.
pub fn missing(text: &str, input: &Value) -> Failure {
    Failure::runtime(crate::io::invalid_path_text_message(text, input))
}

/// [`missing`] for any other path (the document shown is the one its root names).
pub fn missing_path(path: &Path, input: &Value, context: &Value) -> Failure {
    Failure::runtime(crate::io::invalid_path_message(path, path.root_doc(input, context)))
}

/// An intrinsic function that draws nothing random, on arguments already evaluated in order.
pub fn call(function: Function, args: Vec<Value>) -> Result<Value, Failure> {
    intrinsic_eval::call_values(function, args, &mut NoRandom).map_err(|f| Failure::runtime(f.cause))
}

/// `States.UUID` or unseeded `States.MathRandom`, drawing from `rng`, the execution's random
/// source (generated code passes it from [`crate::Execution::with_rng`]).
pub fn call_random(function: Function, args: Vec<Value>, rng: &mut dyn Rng) -> Result<Value, Failure> {
    intrinsic_eval::call_values(function, args, rng).map_err(|f| Failure::runtime(f.cause))
}

/// `States.MathAdd(a, b)`, reading numbers in place.
pub fn math_add(a: &Value, b: &Value) -> Result<Value, Failure> {
    intrinsic_eval::math_add(a, b).map_err(|f| Failure::runtime(f.cause))
}

/// `States.Format` with a literal template, given as its pieces between placeholders.
pub fn format(pieces: &[&str], args: &[Value]) -> Result<Value, Failure> {
    intrinsic_eval::format_pieces(pieces, args).map_err(|f| Failure::runtime(f.cause))
}

/// A Task's TimeoutSecondsPath or HeartbeatSecondsPath (`field`) with a definite `$` path on
/// the effective input: a positive integer, else `States.Runtime` (the interpreter's wording).
pub fn seconds(effective: &Value, steps: &[Seg<'_>], text: &str, field: &str) -> Result<Option<Duration>, Failure> {
    match get(effective, steps) {
        Some(value) => crate::exec::positive_seconds(field, text, value).map(Some),
        None => Err(Failure::runtime(crate::io::invalid_path_text_message(text, effective))),
    }
}

/// [`seconds`] with any other path.
pub fn seconds_path(path: &Path, field: &str, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
    crate::exec::seconds_at(path, field, effective, ctx).map(Some)
}

/// A Wait's delay within the longest wait AWS accepts, else `States.Runtime`.
pub fn wait_limit(delay: Duration) -> Result<Duration, Failure> {
    crate::exec::wait_limit(delay)
}

/// A Wait's `Timestamp` (parsed at compile time: nanoseconds since the Unix epoch): the time
/// from now until then on the execution's clock.
pub fn wait_until(exec: &crate::Execution, nanos: i128) -> Result<Duration, Failure> {
    let instant = jiff::Timestamp::from_nanosecond(nanos)
        .map_err(|e| Failure::runtime(format!("a timestamp compiled into this program is out of range: {e}")))?;
    Ok(exec.clock().until(instant))
}

/// A Wait's `SecondsPath` (whose text is `text`) on what it selected (`None`: nothing).
pub fn wait_seconds_at(text: &str, value: Option<&Value>) -> Result<Duration, Failure> {
    crate::exec::wait_seconds_at(text, value)
}

/// A Wait's `TimestampPath` (whose text is `text`) on what it selected (`None`: nothing).
pub fn wait_timestamp_at(exec: &crate::Execution, text: &str, value: Option<&Value>) -> Result<Duration, Failure> {
    crate::exec::wait_timestamp_at(exec, text, value)
}

/// A Fail state's ErrorPath or CausePath (`field`, whose path is `text`) on what it selected:
/// a string, else `States.Runtime`.
pub fn fail_string(field: &str, text: &str, value: Value) -> Result<String, Failure> {
    crate::exec::fail_string(field, text, value)
}

/// A Map's ItemsPath (a definite `$` path whose text is `text`) on the effective input: a copy
/// of the array it selects, else `States.Runtime` with the interpreter's wordings.
pub fn items(effective: &Value, steps: &[Seg<'_>], text: &str) -> Result<Vec<Value>, Failure> {
    crate::map::items_at(text, get(effective, steps).cloned(), effective)
}

/// [`items`] on the raw input of a Map whose InputPath is `$` and which reads its input no more
/// ([`MapCode::takes_items`]): the items are moved out of it instead of copied. The same
/// failures as [`items`], on the input as it was.
pub fn take_items(input: &mut Value, steps: &[Seg<'_>], text: &str) -> Result<Vec<Value>, Failure> {
    if let Some(Value::Array(items)) = wfc_ir::jsonpath::get_steps_mut(input, steps) {
        return Ok(std::mem::take(items));
    }
    crate::map::items_at(text, get(input, steps).cloned(), input)
}

/// A Map's ItemsPath with any other path (`$$`, `$var`, wildcards, filters).
pub fn items_path(path: &Path, effective: &Value, ctx: &Value) -> Result<Vec<Value>, Failure> {
    crate::map::items(path, effective, ctx)
}

/// How many items a definite `$` ItemsPath selects (0 when it selects no array): a DISTRIBUTED
/// Map's `MapStateStarted` length, counted without copying the items.
pub fn items_length(effective: &Value, steps: &[Seg<'_>]) -> usize {
    get(effective, steps).and_then(Value::as_array).map_or(0, Vec::len)
}

/// [`items_length`] with any other path (one that does not parse counts 0, as selecting
/// nothing does).
pub fn items_path_length(path: &'static StaticPath, effective: &Value, ctx: &Value) -> usize {
    match path.as_ref() {
        Ok(path) => crate::map::items(path, effective, ctx).map_or(0, |items| items.len()),
        Err(_) => 0,
    }
}

/// The context object an ItemSelector sees for the item at `index`: the Map's context object
/// with `Map.Item.Index` and `Map.Item.Value` added.
pub fn item_context(state_ctx: &Value, index: usize, item: &Value) -> Value {
    crate::map::item_context(state_ctx, index, item)
}

/// A Map's `MaxConcurrencyPath`: the non-negative integer it selects, else `States.Runtime`.
pub fn max_concurrency_path(path: &Path, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
    crate::distributed::max_concurrency_at(path, effective, ctx)
}

/// A JSONata Map's items from its evaluated `Items` (`expr`: the field's expression text when
/// it is one `{% %}` expression): the array, else `States.QueryEvaluationError`.
pub fn jsonata_items(items: Value, expr: Option<&str>) -> Result<Vec<Value>, Failure> {
    crate::map::jsonata_items(items, expr)
}

/// A JSONata Map's evaluated `ItemBatcher.BatchInput` (`expr`: the field's expression text
/// when it is one `{% %}` expression): the object, else `States.QueryEvaluationError`.
pub fn jsonata_batch_input(value: Value, expr: Option<&str>) -> Result<Value, Failure> {
    crate::distributed::jsonata_batch_input(value, expr)
}

/// A JSONata Map's items without `Items`: a copy of the state input, which must be an array.
pub fn input_items(input: &Value) -> Result<Vec<Value>, Failure> {
    crate::map::input_items(input)
}

/// A JSONata Map's `MaxConcurrency` expression on the state input: a non-negative integer
/// (evaluated with a fixed seed, as the interpreter does).
pub fn max_concurrency_jsonata(expr: &JsonataExpr, input: &Value, ctx: &Value) -> Result<u64, Failure> {
    crate::distributed::max_concurrency_jsonata(expr, input, ctx)
}

/// A DISTRIBUTED Map's count field (`ToleratedFailureCountPath`, `MaxItemsPath`,
/// `MaxItemsPerBatchPath`, `MaxInputBytesPerBatchPath`): the non-negative integer the path
/// selects, else the field's failure in AWS's words.
pub fn count_path(path: &Path, field: CountField, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
    crate::distributed::count_at(path, field, effective, ctx)
}

/// A DISTRIBUTED Map's count field as a JSONata expression on the state input (evaluated with a
/// fixed seed, as the interpreter does).
pub fn count_jsonata(expr: &JsonataExpr, field: CountField, input: &Value, ctx: &Value) -> Result<u64, Failure> {
    crate::distributed::count_jsonata(expr, field, input, ctx)
}

/// `ToleratedFailurePercentagePath`: the number from 0 to 100 the path selects, else
/// `States.Runtime`.
pub fn percentage_path(path: &Path, effective: &Value, ctx: &Value) -> Result<f64, Failure> {
    crate::distributed::percentage_at(path, effective, ctx)
}

/// A JSONata `ToleratedFailurePercentage` on the state input.
pub fn percentage_jsonata(expr: &JsonataExpr, input: &Value, ctx: &Value) -> Result<f64, Failure> {
    crate::distributed::percentage_jsonata(expr, input, ctx)
}

/// A JSONPath Task's `Credentials` object, built by generated code: its `RoleArn` string, else
/// `States.Runtime`.
pub fn jsonpath_role_arn(credentials: Value) -> Result<String, Failure> {
    crate::credentials::jsonpath_role_arn(credentials)
}

/// A JSONata Task's `Credentials` object, built by generated code (`expr`: `RoleArn`'s
/// expression text when it is one): its `RoleArn` string, else `States.QueryEvaluationError`.
pub fn jsonata_role_arn(credentials: Value, expr: Option<&str>) -> Result<String, Failure> {
    crate::credentials::jsonata_role_arn(credentials, expr)
}

/// A number compared with a Choice literal (split at compile time); `None` when `value` is not a
/// number.
#[inline]
pub fn numeric(value: &Value, literal: &NativeNumber) -> Option<Ordering> {
    literal.compare(value.as_number()?)
}

/// A timestamp string compared with a Choice literal parsed at compile time (nanoseconds since
/// the Unix epoch); `None` when `value` is not an ASL timestamp.
pub fn timestamp(value: &Value, literal_nanos: i128) -> Option<Ordering> {
    let literal = jiff::Timestamp::from_nanosecond(literal_nanos).ok()?;
    wfc_ir::native::timestamp_order(value, literal)
}

/// A string compared with a Choice literal by code point; `None` when `value` is not a string.
#[inline]
pub fn string(value: &Value, literal: &str) -> Option<Ordering> {
    Some(value.as_str()?.cmp(literal))
}

/// `StringMatches` with a pattern tokenized once.
pub fn matches(value: &Value, pattern: &Pattern) -> bool {
    value.as_str().is_some_and(|text| pattern.matches(text))
}

/// `BooleanEquals` with a literal.
#[inline]
pub fn boolean(value: &Value, literal: bool) -> bool {
    value.as_bool() == Some(literal)
}

/// A random source for the intrinsic functions that draw nothing (the evaluator's signature
/// asks for one). It is never read; if it were, it would give zeros, not panic.
struct NoRandom;

impl rand::TryRng for NoRandom {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(0)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(0)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        dst.fill(0);
        Ok(())
    }
}

/// A Serverless Workflow `{{ }}` expression string, built once on first use from the parts the
/// compiler wrote out ([`sw_expr`]).
pub type StaticSwExpr = LazyLock<Result<wfc_ir::sw::Expr, Failure>>;

/// One part of an SW expression string, as generated code writes it.
#[derive(Debug, Clone, Copy)]
pub enum SwPart {
    /// Literal text.
    Text(&'static str),
    /// A JsonPath between `{{` and `}}`.
    Path(&'static str),
}

/// Builds an SW expression from its text and parts. A path that does not parse (impossible for
/// a definition the compiler accepted) is a `States.Runtime` failure of the state using it.
pub fn sw_expr(text: &str, parts: &[SwPart]) -> Result<wfc_ir::sw::Expr, Failure> {
    let parts = parts
        .iter()
        .map(|p| match p {
            SwPart::Text(t) => Ok(wfc_ir::sw::ExprPart::Text((*t).to_owned())),
            SwPart::Path(p) => Path::parse(p)
                .map(wfc_ir::sw::ExprPart::Path)
                .map_err(|e| Failure::runtime(format!("the expression {text:?} does not parse: {e}"))),
        })
        .collect::<Result<_, Failure>>()?;
    Ok(wfc_ir::sw::Expr { text: text.to_owned(), parts })
}

/// The expression of a [`StaticSwExpr`], or its build failure.
pub fn sw_expr_ref(expr: &'static StaticSwExpr) -> Result<&'static wfc_ir::sw::Expr, Failure> {
    expr.as_ref().map_err(Clone::clone)
}

/// Runs the calls of an operation's actions in `parallel` mode together (each on its own line
/// of control, made before any runs), and gives their results in definition order.
pub async fn sw_join(
    calls: Vec<futures::future::BoxFuture<'_, Result<Value, Failure>>>,
) -> Vec<Result<Value, Failure>> {
    futures::future::join_all(calls).await
}

/// A Serverless Workflow event definition, built once on first use.
pub type StaticEventDef = LazyLock<wfc_ir::sw::EventDef>;

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{Seg, items, object_in, take_items};

    /// `object_in` gives the JSON that inserting each key in order into a new map gives,
    /// whatever the spare: the same keys, other keys, more or fewer, a key written twice, a
    /// spare that is not an object, or one too large to reuse.
    #[test]
    fn object_in_builds_what_inserting_in_order_builds() {
        let fresh = |keys: &[&str], values: &[Value]| {
            let mut map = serde_json::Map::new();
            for (k, v) in keys.iter().zip(values) {
                map.insert((*k).to_owned(), v.clone());
            }
            Value::Object(map)
        };
        let large = Value::Object((0..100).map(|i| (format!("k{i}"), json!(i))).collect());
        let spares = [
            json!({"i": 1}),
            json!({"a": 1, "b": 2}),
            json!({"b": 2, "a": 1}),
            json!({"a": 1, "b": 2, "c": 3}),
            json!({}),
            json!([1, 2]),
            json!("text"),
            Value::Null,
            large,
        ];
        for spare in spares.into_iter().map(Some).chain([None]) {
            let shown = format!("{spare:?}");
            let values = [json!(7), json!({"x": [1]})];
            assert_eq!(object_in(spare.clone(), &["a", "b"], values.clone()), fresh(&["a", "b"], &values), "{shown}");
            let text = |v: &Value| serde_json::to_string(v).unwrap_or_default();
            // Key order is part of the JSON: compare the text too.
            assert_eq!(
                text(&object_in(spare.clone(), &["b", "a"], values.clone())),
                text(&fresh(&["b", "a"], &values)),
                "{shown}"
            );
            assert_eq!(object_in(spare.clone(), &["a", "a"], values.clone()), json!({"a": {"x": [1]}}), "{shown}");
            assert_eq!(object_in(spare.clone(), &[], []), json!({}), "{shown}");
            assert_eq!(object_in(spare, &["i"], [json!(2)]), json!({"i": 2}));
        }
    }

    #[test]
    fn taken_items_are_the_selected_ones_and_failures_leave_the_input_as_it_was() {
        let steps = [Seg::Name("a"), Seg::Name("items")];
        let mut input = json!({"a": {"items": [{"n": 1}, 2]}, "b": true});
        let selected = items(&input, &steps, "$.a.items");
        assert_eq!(take_items(&mut input, &steps, "$.a.items"), selected);
        // Moved out, not copied.
        assert_eq!(input, json!({"a": {"items": []}, "b": true}));
        assert_eq!(take_items(&mut json!([1, 2]), &[], "$"), Ok(vec![json!(1), json!(2)]));
        for doc in [json!({"a": {"items": 5}}), json!({"a": {}}), json!({"a": [1]}), Value::Null] {
            let mut taken = doc.clone();
            let failure = take_items(&mut taken, &steps, "$.a.items").err();
            assert!(failure.is_some(), "{doc}");
            assert_eq!(failure, items(&doc, &steps, "$.a.items").err(), "{doc}");
            assert_eq!(taken, doc);
        }
    }
}
