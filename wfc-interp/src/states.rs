//! The interpreter's side of each state: the IR entry points (`pass`, `task`, `choice`, ...)
//! and the [`TaskCode`], [`ParallelCode`] and [`MapCode`] that read a state's IR, run through
//! the same visits ([`wfc_runtime::exec`]'s `*_with` functions) as generated code's compiled ones.
//! Built only on the runtime's public primitives, so it can leave the runtime with the rest of
//! the interpreter.

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use rand::rngs::StdRng;
use serde_json::Value;
use wfc_ir::{
    Assign, ChoiceState, ComputedString, FailState, InputPath, JsonataTemplate, MapState, OutputPath, ParallelState,
    PassState, ResultPath, Seconds, SucceedState, TaskState, Template, WaitDuration, WaitState,
};

use wfc_runtime::exec::{
    self, Assigned, Chosen, Execution, MapCode, NestedCode, ParallelCode, ParametersForm, Step, TaskCode, TaskShape,
    choice_kept_with, choice_language_with, choice_with, computed_string, fail_jsonata, fail_string, fail_with,
    finish_paths, is_jsonata_map, jsonata_map_inputs, jsonata_seconds, map_with, parallel_with, pass_assign_with,
    pass_bounded_with, pass_kept_with, pass_language_with, pass_with, seconds_at, succeed_with, task_with,
    wait_assign_with, wait_language_with, wait_limit, wait_seconds_at, wait_seconds_jsonata, wait_timestamp_at,
    wait_timestamp_jsonata, wait_with,
};
use wfc_runtime::jsonata::{self, Bindings};
use wfc_runtime::{Failure, TaskContext, choice, io, variables};

/// A Pass state.
pub async fn pass(exec: &Execution, name: &str, spec: &PassState, input: Value) -> Result<Value, Failure> {
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || spec.parameters.as_ref().is_some_and(io::uses_context)
        || spec.assign.is_some()
        || spec.output.is_some();
    if spec.assign.is_none() && spec.output.is_none() {
        let body = |input, ctx: &Value| exec.with_rng(|rng| pass_io(spec, input, ctx, rng));
        if spec.result.is_none()
            && spec.parameters.is_none()
            && spec.output_path.as_ref().is_some_and(wfc_ir::Path::is_identity)
        {
            return pass_kept_with(exec, name, needs_ctx, input, |input| writes_back_in_place(spec, input), body);
        }
        // Output built whole by Result or Parameters (ResultPath and OutputPath `$`): the body
        // only reads the input, which the runtime then spends on the history's copy of the
        // output, as for generated code's bounded Pass (with no bound: the payload is checked).
        if (spec.result.is_some() || spec.parameters.is_some())
            && spec.result_path.as_ref().is_some_and(|p| p.is_identity())
            && spec.output_path.as_ref().is_some_and(wfc_ir::Path::is_identity)
        {
            let body = |input: &Value, ctx: &Value| pass_result(exec, spec, input, ctx);
            return pass_bounded_with(exec, name, needs_ctx, input, usize::MAX, usize::MAX, body);
        }
        return pass_with(exec, name, needs_ctx, input, body);
    }
    if let (Some(assign @ Assign::JsonPath(_)), None) = (&spec.assign, &spec.output) {
        return pass_assign_with(exec, name, input, |input, ctx| {
            let result = pass_result(exec, spec, &input, ctx)?;
            let assigned = assign_jsonpath(exec, assign, &result, ctx)?;
            let output = io::result_path(&spec.result_path, input, result)?;
            Ok((io::output_path(&spec.output_path, output, ctx)?, assigned))
        });
    }
    pass_language_with(exec, name, input, |input, ctx| pass_assign(exec, spec, input, ctx))
}

/// A JSONPath `Assign` block evaluated on `dollar` (what `$` means for the state) with the
/// context object `ctx` (`$$`, and `$name` for the variables as of entry).
fn assign_jsonpath(exec: &Execution, assign: &Assign, dollar: &Value, ctx: &Value) -> Result<Assigned, Failure> {
    // A JSONPath block reads no JSONata bindings; these only satisfy the evaluator's signature.
    let bindings = Bindings::new(dollar, ctx);
    exec.with_rng(|rng| variables::evaluate(assign, dollar, &bindings, ctx, rng))
}

/// A JSONPath Pass state's result before ResultPath: its `Result`, else Parameters (or the
/// effective input itself) over InputPath.
fn pass_result(exec: &Execution, spec: &PassState, input: &Value, ctx: &Value) -> Result<Value, Failure> {
    Ok(match (&spec.result, &spec.parameters) {
        (Some(result), _) => result.clone(),
        (None, parameters) => {
            let effective = io::input_path(&spec.input_path, input, ctx)?;
            match parameters {
                Some(t) => exec.with_rng(|rng| io::template(t, &effective, ctx, rng))?,
                None => effective.into_owned(),
            }
        }
    })
}

/// A Pass state with `Assign` or a JSONata `Output`. In a JSONPath Pass, `$` in Assign is the
/// state's result (its `Result`, else Parameters over the effective input); in a JSONata Pass,
/// `Output` (default: the input) and Assign see `$states.input`.
#[allow(clippy::type_complexity)]
fn pass_assign(
    exec: &Execution,
    spec: &PassState,
    input: Value,
    ctx: &Value,
) -> Result<(Value, Option<Vec<(String, Value)>>), Failure> {
    let b = Bindings::new(&input, ctx);
    let assign = |dollar: &Value| -> Result<Option<Assigned>, Failure> {
        match &spec.assign {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, &b, ctx, rng)).map(Some),
            None => Ok(None),
        }
    };
    let jsonata = spec.output.is_some() || matches!(spec.assign, Some(Assign::Jsonata(_)));
    if jsonata {
        let assigned = assign(&input)?;
        let output = match &spec.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
            None => input.clone(),
        };
        return Ok((output, assigned));
    }
    let result = pass_result(exec, spec, &input, ctx)?;
    let assigned = assign(&result)?;
    let output = io::output_path(&spec.output_path, io::result_path(&spec.result_path, input.clone(), result)?, ctx)?;
    Ok((output, assigned))
}

fn pass_io(spec: &PassState, input: Value, ctx: &Value, rng: &mut StdRng) -> Result<Value, Failure> {
    let replaces_input = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    let output = match (&spec.result, &spec.parameters) {
        (Some(result), _) => io::result_path(&spec.result_path, input, result.clone())?,
        // The common `{"Type": "Pass"}`: the raw input is not needed afterwards, so it moves
        // through InputPath without a copy.
        (None, None) if replaces_input => io::input_path_owned(&spec.input_path, input, ctx)?,
        // InputPath and ResultPath name the same node that exists: writing what InputPath
        // selects back where it came from leaves the input as it is, so nothing is copied.
        (None, None) if writes_back_in_place(spec, &input) => input,
        (None, parameters) => {
            let result = {
                let effective = io::input_path(&spec.input_path, &input, ctx)?;
                match parameters {
                    Some(template) => io::template(template, &effective, ctx, rng)?,
                    None => effective.into_owned(),
                }
            };
            io::result_path(&spec.result_path, input, result)?
        }
    };
    io::output_path(&spec.output_path, output, ctx)
}

/// Whether a Pass state without Parameters or Result has an InputPath and a ResultPath naming
/// the same node of `input`, and that node exists: then its output before OutputPath is `input`
/// itself (InputPath cannot fail, and ResultPath replaces the node with its own value).
fn writes_back_in_place(spec: &PassState, input: &Value) -> bool {
    match (&spec.input_path, &spec.result_path) {
        (Some(selected), Some(written)) => {
            selected.root() == wfc_ir::Root::Input
                && selected.is_singular()
                && selected.segments() == written.as_path().segments()
                && written.get(input).is_some()
        }
        _ => false,
    }
}

/// Reads a TimeoutSeconds/HeartbeatSeconds value: a literal, or a path that must select a
/// positive integer.
fn resolve_seconds(
    seconds: &Option<Seconds>,
    field: &str,
    input: &Value,
    ctx: &Value,
) -> Result<Option<Duration>, Failure> {
    match seconds {
        None => Ok(None),
        Some(Seconds::Fixed(s)) => Ok(Some(Duration::from_secs(*s))),
        Some(Seconds::Jsonata(e)) => jsonata_seconds(e, field.trim_end_matches("Path"), input, ctx).map(Some),
        Some(Seconds::Path(p)) => seconds_at(p, field, input, ctx).map(Some),
    }
}

/// A Task state: input processing, the handler call under TimeoutSeconds/HeartbeatSeconds with
/// panics caught, Retry, ResultSelector/ResultPath/OutputPath, and Catch.
///
/// `invoke` is called once per attempt with the effective input (after Parameters).
pub async fn task<'a, F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &TaskState,
    input: Value,
    invoke: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, TaskContext) -> Fut + Send + 'a,
    Fut: Future<Output = Result<Value, Failure>> + Send + 'a,
{
    task_with(exec, name, &Interpreted(spec), input, invoke).await
}

/// [`task`] for the interpreter, whose handlers return a boxed future already: it is used as it
/// is, where [`task_with`] would box it again (an allocation per attempt).
///
/// Not an `async fn`: the visit's future is returned as it is, not wrapped in one more that
/// would keep a second copy of the input.
pub(super) fn task_boxed<'v, 'a, F>(
    exec: &'v Execution,
    name: &'v str,
    spec: &'v TaskState,
    input: Value,
    invoke: F,
) -> impl Future<Output = Result<Step, Failure>> + 'v
where
    F: FnMut(Value, TaskContext) -> BoxFuture<'a, Result<Value, Failure>> + Send + 'v,
    'a: 'v,
{
    exec::task_boxed_with(exec, name, Interpreted(spec), input, invoke)
}

/// The interpreter's [`TaskCode`]: the state's IR spec, evaluated by [`io`].
struct Interpreted<'s>(&'s TaskState);

impl TaskCode for Interpreted<'_> {
    type Retrier = wfc_ir::Retrier;
    type Catcher = wfc_ir::Catcher;

    fn is_plain(&self) -> bool {
        let spec = self.0;
        let identity = |p: &Option<wfc_ir::Path>| p.as_ref().is_some_and(wfc_ir::Path::is_identity);
        identity(&spec.input_path)
            && spec.parameters.is_none()
            && spec.result_selector.is_none()
            && spec.result_path.as_ref().is_some_and(|p| p.is_identity())
            && identity(&spec.output_path)
            && spec.timeout.is_none()
            && spec.heartbeat.is_none()
            && spec.credentials.is_none()
            && spec.arguments.is_none()
            && spec.output.is_none()
            && spec.assign.is_none()
    }

    fn resource(&self) -> &str {
        &self.0.resource
    }

    fn retriers(&self) -> &[wfc_ir::Retrier] {
        &self.0.retry
    }

    fn catchers(&self) -> &[wfc_ir::Catcher] {
        &self.0.catch
    }

    fn needs_context(&self) -> bool {
        let spec = self.0;
        io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
            || spec.arguments.is_some()
            || spec.output.is_some()
            || spec.assign.is_some()
            || matches!(spec.timeout, Some(Seconds::Jsonata(_)))
            || matches!(spec.heartbeat, Some(Seconds::Jsonata(_)))
            || spec.credentials.is_some()
    }

    fn shape(&self) -> TaskShape {
        task_shape(self.0)
    }

    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        io::input_path(&self.0.input_path, raw, ctx).map(std::borrow::Cow::into_owned)
    }

    fn timeout(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        resolve_seconds(&self.0.timeout, "TimeoutSecondsPath", effective, ctx)
    }

    fn heartbeat(&self, effective: &Value, ctx: &Value) -> Result<Option<Duration>, Failure> {
        resolve_seconds(&self.0.heartbeat, "HeartbeatSecondsPath", effective, ctx)
    }

    fn parameters_form(&self) -> ParametersForm {
        match &self.0.parameters {
            None => ParametersForm::None,
            // A random intrinsic (States.UUID) gives each attempt a fresh value, as `$$` does.
            Some(t) if io::uses_context(t) || io::uses_randomness(t) => {
                ParametersForm::PerAttempt { context: io::uses_context(t) }
            }
            Some(_) => ParametersForm::Once,
        }
    }

    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        match &self.0.parameters {
            Some(t) => exec.with_rng(|rng| io::template(t, effective, ctx, rng)),
            None => Ok(effective.clone()),
        }
    }

    fn finish_needs_context(&self) -> bool {
        self.0.result_selector.as_ref().is_some_and(io::uses_context)
    }

    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let spec = self.0;
        finish_paths(exec, &spec.result_selector, &spec.result_path, &spec.output_path, raw_input, result, ctx)
    }

    fn has_credentials(&self) -> bool {
        self.0.credentials.is_some()
    }

    fn role_arn(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<String, Failure> {
        match &self.0.credentials {
            Some(c) => exec.with_rng(|rng| wfc_runtime::credentials::role_arn(c, effective, ctx, rng)),
            None => Err(Failure::runtime("the Task has no Credentials")),
        }
    }

    fn has_arguments(&self) -> bool {
        self.0.arguments.is_some()
    }

    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match &self.0.arguments {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Arguments", states, rng)),
            None => Ok(states.input.clone()),
        }
    }

    fn assigns(&self) -> bool {
        self.0.assign.is_some()
    }

    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        match &self.0.assign {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, states, states.context, rng)),
            None => Ok(Vec::new()),
        }
    }

    fn has_output(&self) -> bool {
        self.0.output.is_some()
    }

    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match &self.0.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", states, rng)),
            None => Ok(states.result.cloned().unwrap_or(Value::Null)),
        }
    }
}

fn task_shape(spec: &TaskState) -> TaskShape {
    let identity = |p: &Option<wfc_ir::Path>| p.as_ref().is_some_and(wfc_ir::Path::is_identity);
    let result_replaces = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    // JSONata Arguments/Output and Assign read the raw input (`$states.input`).
    let plain = spec.arguments.is_none() && spec.output.is_none() && spec.assign.is_none();
    TaskShape {
        input_moves: plain && identity(&spec.input_path) && result_replaces && spec.catch.is_empty(),
        single_attempt: spec.retry.is_empty(),
        result_is_output: spec.result_selector.is_none() && result_replaces && identity(&spec.output_path),
    }
}

/// The index of the first rule of `spec` that matches the effective input, in the order written.
fn first_matching_rule(spec: &ChoiceState, effective: &Value, ctx: &Value) -> Result<Option<usize>, Failure> {
    for (i, rule) in spec.choices.iter().enumerate() {
        if choice::evaluate(&rule.condition, effective, ctx)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// A Choice state. No match and no Default is `States.NoChoiceMatched`.
pub fn choice(exec: &Execution, name: &str, spec: &ChoiceState, input: Value) -> Result<Chosen, Failure> {
    let language = spec.assign.is_some()
        || spec.output.is_some()
        || spec.choices.iter().any(|c| c.assign.is_some() || c.output.is_some());
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || spec.choices.iter().any(|c| choice::uses_context(&c.condition))
        || language;
    let identity = |p: &Option<wfc_ir::Path>| p.as_ref().is_some_and(wfc_ir::Path::is_identity);
    if !language && identity(&spec.input_path) && identity(&spec.output_path) {
        return choice_kept_with(exec, name, needs_ctx, input, spec.default.is_some(), |input, ctx| {
            first_matching_rule(spec, input, ctx)
        });
    }
    if !language {
        return choice_with(
            exec,
            name,
            needs_ctx,
            input,
            spec.default.is_some(),
            |input, ctx| io::input_path_owned(&spec.input_path, input, ctx),
            |effective, ctx| first_matching_rule(spec, effective, ctx),
            |effective, ctx| io::output_path(&spec.output_path, effective, ctx),
        );
    }
    choice_language_with(
        exec,
        name,
        needs_ctx,
        input,
        spec.default.is_some(),
        |input, ctx| io::input_path_owned(&spec.input_path, input, ctx),
        |effective, ctx| first_matching_rule(spec, effective, ctx),
        |branch, raw, effective, ctx| {
            // The matched rule's Assign and Output; the state's own only on the Default path.
            let (assign, output_template) = match branch.and_then(|i| spec.choices.get(i)) {
                Some(rule) => (rule.assign.as_ref(), rule.output.as_ref()),
                None => (spec.assign.as_ref(), spec.output.as_ref()),
            };
            let b = Bindings::new(raw, ctx);
            let assigned = match assign {
                Some(assign) => Some(exec.with_rng(|rng| variables::evaluate(assign, &effective, &b, ctx, rng))?),
                None => None,
            };
            let output = match output_template {
                Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
                None => io::output_path(&spec.output_path, effective, ctx)?,
            };
            Ok((output, assigned))
        },
    )
}

/// How long a Wait waits, with AWS's messages for bad values.
fn wait_delay(exec: &Execution, duration: &WaitDuration, input: &Value, ctx: &Value) -> Result<Duration, Failure> {
    let delay = match duration {
        WaitDuration::SecondsJsonata(e) => wait_seconds_jsonata(exec, e, &Bindings::new(input, ctx))?,
        WaitDuration::TimestampJsonata(e) => wait_timestamp_jsonata(exec, e, &Bindings::new(input, ctx))?,
        WaitDuration::Seconds(s) => Duration::from_secs(*s),
        WaitDuration::Timestamp(text) => match wfc_ir::timestamp::parse(text) {
            Ok(ts) => exec.clock().until(ts),
            Err(_) => {
                return Err(Failure::runtime(format!(
                    "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {text}"
                )));
            }
        },
        WaitDuration::SecondsPath(p) => wait_seconds_at(p.as_str(), io::select_opt(p, input, ctx).as_ref())?,
        WaitDuration::TimestampPath(p) => wait_timestamp_at(exec, p.as_str(), io::select_opt(p, input, ctx).as_ref())?,
    };
    wait_limit(delay)
}

/// A Wait state, on the execution's clock.
pub async fn wait(exec: &Execution, name: &str, spec: &WaitState, input: Value) -> Result<Value, Failure> {
    let language = spec.assign.is_some() || spec.output.is_some();
    let needs_ctx = io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()])
        || matches!(&spec.duration, WaitDuration::SecondsPath(p) | WaitDuration::TimestampPath(p) if p.root() != wfc_ir::Root::Input)
        || matches!(&spec.duration, WaitDuration::SecondsJsonata(_) | WaitDuration::TimestampJsonata(_))
        || language;
    if !language {
        return wait_with(exec, name, needs_ctx, input, |input, ctx| {
            let effective = io::input_path_owned(&spec.input_path, input, ctx)?;
            let delay = wait_delay(exec, &spec.duration, &effective, ctx)?;
            Ok((io::output_path(&spec.output_path, effective, ctx)?, delay))
        })
        .await;
    }
    if let (Some(assign @ Assign::JsonPath(_)), None) = (&spec.assign, &spec.output) {
        return wait_assign_with(exec, name, input, |input, ctx| {
            let effective = io::input_path_owned(&spec.input_path, input, ctx)?;
            let delay = wait_delay(exec, &spec.duration, &effective, ctx)?;
            // Assign is computed before the wait, against the variables as of entry.
            let assigned = assign_jsonpath(exec, assign, &effective, ctx)?;
            Ok((io::output_path(&spec.output_path, effective, ctx)?, assigned, delay))
        })
        .await;
    }
    wait_language_with(exec, name, needs_ctx, input, |input, ctx| {
        let raw = input.clone();
        let effective = io::input_path_owned(&spec.input_path, input, ctx)?;
        let delay = wait_delay(exec, &spec.duration, &effective, ctx)?;
        // Assign and Output are computed before the wait, against the variables as of entry.
        let b = Bindings::new(&raw, ctx);
        let assigned = match &spec.assign {
            Some(assign) => Some(exec.with_rng(|rng| variables::evaluate(assign, &effective, &b, ctx, rng))?),
            None => None,
        };
        let output = match &spec.output {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &b, rng))?,
            None => io::output_path(&spec.output_path, effective, ctx)?,
        };
        Ok((output, assigned, delay))
    })
    .await
}

/// A Succeed state.
pub fn succeed(exec: &Execution, name: &str, spec: &SucceedState, input: Value) -> Result<Value, Failure> {
    let needs_ctx =
        io::paths_use_context([spec.input_path.as_ref(), spec.output_path.as_ref()]) || spec.output.is_some();
    succeed_with(exec, name, needs_ctx, input, |input, ctx| match &spec.output {
        Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", &Bindings::new(&input, ctx), rng)),
        None => io::input_path_owned(&spec.input_path, input, ctx)
            .and_then(|effective| io::output_path(&spec.output_path, effective, ctx)),
    })
}

/// A Fail state: the failure that ends the machine (or is caught by an enclosing Parallel's Catch).
pub fn fail(exec: &Execution, name: &str, spec: &FailState, input: Value) -> Failure {
    let needs_ctx = io::paths_use_context([spec.error_path.as_ref(), spec.cause_path.as_ref()])
        || spec.error_computed.is_some()
        || spec.cause_computed.is_some();
    fail_with(exec, name, needs_ctx, input, |input, ctx| {
        let computed = |value: &ComputedString, field: &str| -> Result<String, Failure> {
            match value {
                ComputedString::Intrinsic(i) => computed_string(
                    field,
                    exec.with_rng(|rng| wfc_runtime::intrinsics::evaluate(i, field, input, ctx, rng))?,
                ),
                ComputedString::Jsonata(e) => fail_jsonata(exec, e, field, &Bindings::new(input, ctx)),
            }
        };
        let read = |literal: &Option<String>, path: &Option<wfc_ir::Path>, field: &str| -> Result<String, Failure> {
            match path {
                Some(p) => fail_string(field, p.as_str(), io::select_field(p, field, input, ctx)?),
                // AWS leaves an absent Error/Cause out of the event; the Error Output uses "".
                None => Ok(literal.clone().unwrap_or_default()),
            }
        };
        let error = match &spec.error_computed {
            Some(c) => computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Error" } else { "ErrorPath" }),
            None => read(&spec.error, &spec.error_path, "ErrorPath"),
        };
        let cause = match &spec.cause_computed {
            Some(c) => computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Cause" } else { "CausePath" }),
            None => read(&spec.cause, &spec.cause_path, "CausePath"),
        };
        match (error, cause) {
            (Ok(error), Ok(cause)) => Ok(Failure { error, cause }),
            (Err(f), _) | (_, Err(f)) => Err(f),
        }
    })
}

/// A Parallel's or Map's Parameters template, evaluated by [`io`].
struct TemplateParameters<'t>(Option<&'t Template>);

impl TemplateParameters<'_> {
    fn form(&self) -> ParametersForm {
        match self.0 {
            None => ParametersForm::None,
            Some(t) if io::uses_context(t) || io::uses_randomness(t) => {
                ParametersForm::PerAttempt { context: io::uses_context(t) }
            }
            Some(_) => ParametersForm::Once,
        }
    }

    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        match self.0 {
            Some(t) => exec.with_rng(|rng| io::template(t, effective, ctx, rng)),
            None => Ok(effective.clone()),
        }
    }
}

/// The interpreter's [`ParallelCode`] and [`MapCode`]: the state's IR spec, evaluated by [`io`].
struct InterpretedNested<'s, S>(&'s S);

/// The fields a Parallel and a Map state share in the IR, so one [`NestedCode`] implementation
/// (below) serves both; each state type adds only what the context object check needs of its
/// own fields.
trait NestedSpec {
    fn input_path(&self) -> &InputPath;
    fn result_selector(&self) -> &Option<Template>;
    fn result_path(&self) -> &ResultPath;
    fn output_path(&self) -> &OutputPath;
    fn retry(&self) -> &[wfc_ir::Retrier];
    fn catch(&self) -> &[wfc_ir::Catcher];
    fn assign(&self) -> Option<&Assign>;
    fn output(&self) -> Option<&JsonataTemplate>;
    /// Whether the state's own fields (beyond the shared paths, `Assign` and `Output`) read the
    /// context object on entry.
    fn own_fields_use_context(&self) -> bool;
}

impl NestedSpec for ParallelState {
    fn input_path(&self) -> &InputPath {
        &self.input_path
    }
    fn result_selector(&self) -> &Option<Template> {
        &self.result_selector
    }
    fn result_path(&self) -> &ResultPath {
        &self.result_path
    }
    fn output_path(&self) -> &OutputPath {
        &self.output_path
    }
    fn retry(&self) -> &[wfc_ir::Retrier] {
        &self.retry
    }
    fn catch(&self) -> &[wfc_ir::Catcher] {
        &self.catch
    }
    fn assign(&self) -> Option<&Assign> {
        self.assign.as_ref()
    }
    fn output(&self) -> Option<&JsonataTemplate> {
        self.output.as_ref()
    }
    fn own_fields_use_context(&self) -> bool {
        self.arguments.is_some()
    }
}

impl NestedSpec for MapState {
    fn input_path(&self) -> &InputPath {
        &self.input_path
    }
    fn result_selector(&self) -> &Option<Template> {
        &self.result_selector
    }
    fn result_path(&self) -> &ResultPath {
        &self.result_path
    }
    fn output_path(&self) -> &OutputPath {
        &self.output_path
    }
    fn retry(&self) -> &[wfc_ir::Retrier] {
        &self.retry
    }
    fn catch(&self) -> &[wfc_ir::Catcher] {
        &self.catch
    }
    fn assign(&self) -> Option<&Assign> {
        self.assign.as_ref()
    }
    fn output(&self) -> Option<&JsonataTemplate> {
        self.output.as_ref()
    }
    fn own_fields_use_context(&self) -> bool {
        io::paths_use_context([Some(&self.items_path), self.max_concurrency_path.as_ref()])
            || self.items.is_some()
            || self.item_selector_jsonata.is_some()
            || self.max_concurrency_jsonata.is_some()
    }
}

impl<S: NestedSpec> NestedCode for InterpretedNested<'_, S> {
    type Retrier = wfc_ir::Retrier;
    type Catcher = wfc_ir::Catcher;

    fn retriers(&self) -> &[wfc_ir::Retrier] {
        self.0.retry()
    }

    fn catchers(&self) -> &[wfc_ir::Catcher] {
        self.0.catch()
    }

    fn needs_context(&self) -> bool {
        let spec = self.0;
        io::paths_use_context([spec.input_path().as_ref(), spec.output_path().as_ref()])
            || spec.own_fields_use_context()
            || spec.output().is_some()
            || spec.assign().is_some()
    }

    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        io::input_path(self.0.input_path(), raw, ctx).map(std::borrow::Cow::into_owned)
    }

    fn finish_needs_context(&self) -> bool {
        self.0.result_selector().as_ref().is_some_and(io::uses_context)
    }

    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let spec = self.0;
        finish_paths(exec, spec.result_selector(), spec.result_path(), spec.output_path(), raw_input, result, ctx)
    }

    fn assigns(&self) -> bool {
        self.0.assign().is_some()
    }

    fn assigned(&self, exec: &Execution, dollar: &Value, states: &Bindings<'_>) -> Result<Assigned, Failure> {
        match self.0.assign() {
            Some(assign) => exec.with_rng(|rng| variables::evaluate(assign, dollar, states, states.context, rng)),
            None => Ok(Vec::new()),
        }
    }

    fn has_output(&self) -> bool {
        self.0.output().is_some()
    }

    fn output(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match self.0.output() {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Output", states, rng)),
            None => Ok(states.result.cloned().unwrap_or(Value::Null)),
        }
    }
}

impl ParallelCode for InterpretedNested<'_, ParallelState> {
    fn parameters_form(&self) -> ParametersForm {
        TemplateParameters(self.0.parameters.as_ref()).form()
    }

    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        TemplateParameters(self.0.parameters.as_ref()).evaluate(exec, effective, ctx)
    }

    fn has_arguments(&self) -> bool {
        self.0.arguments.is_some()
    }

    fn arguments(&self, exec: &Execution, states: &Bindings<'_>) -> Result<Value, Failure> {
        match &self.0.arguments {
            Some(t) => exec.with_rng(|rng| jsonata::template(t, "Arguments", states, rng)),
            None => Ok(states.input.clone()),
        }
    }
}

impl MapCode for InterpretedNested<'_, MapState> {
    fn attempt_needs_context(&self) -> bool {
        // A DISTRIBUTED Map's reader, batcher and writer parameters may use `$$` too.
        self.0.item_selector.as_ref().is_some_and(io::uses_context) || self.0.distributed.is_some()
    }

    fn max_concurrency(&self, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
        wfc_runtime::distributed::max_concurrency(self.0, effective, ctx)
    }

    fn iteration_inputs(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
    ) -> Result<Vec<Value>, Failure> {
        let spec = self.0;
        if is_jsonata_map(spec) {
            return jsonata_map_inputs(exec, spec, raw_input, ctx);
        }
        let items = wfc_runtime::map::items(&spec.items_path, effective, ctx)?;
        exec.with_rng(|rng| wfc_runtime::map::iteration_inputs(spec.item_selector.as_ref(), effective, items, ctx, rng))
    }

    fn distributed(&self) -> Option<&dyn wfc_runtime::distributed::DistributedCode> {
        self.0.distributed.is_some().then_some(self.0 as &dyn wfc_runtime::distributed::DistributedCode)
    }
}

/// A Parallel state. `run_branches` is called once per attempt with the effective input and must
/// run every branch on it concurrently (see [`join_branches`](exec::join_branches)) and return their outputs in order.
pub async fn parallel<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &ParallelState,
    input: Value,
    run_branches: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    parallel_with(exec, name, &InterpretedNested(spec), input, run_branches).await
}

/// A Map state (INLINE, or DISTRIBUTED through a Map Run). `run_iteration` is called once per
/// item per attempt with the item's input (after `ItemSelector`) and the iteration's own line of
/// control, and must run the item processor on it; [`wfc_runtime::map::run_iterations`] bounds the
/// concurrency, records the iteration events and keeps the results in item order. A Retry
/// re-runs every iteration.
pub async fn map<F, Fut>(
    exec: &Execution,
    name: &str,
    spec: &MapState,
    input: Value,
    run_iteration: F,
) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    map_with(exec, name, &InterpretedNested(spec), input, run_iteration).await
}
