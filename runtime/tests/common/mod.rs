//! Builders for IR values, so tests read like the ASL they stand for.
#![allow(dead_code, unreachable_pub, missing_docs)] // Each test file uses a different subset.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use wfc_interp::{self as interp, DynHandler, Handlers};
use wfc_runtime::ir::*;
use wfc_runtime::{ExecutionResult, Failure, RunOptions, block_on_virtual};

pub fn path(text: &str) -> Path {
    Path::parse(text).unwrap_or_else(|e| panic!("bad test path {text}: {e}"))
}

pub fn rpath(text: &str) -> ReferencePath {
    ReferencePath::parse(text).unwrap_or_else(|e| panic!("bad test reference path {text}: {e}"))
}

/// `Some($)`: the default of InputPath/OutputPath/ResultPath.
pub fn dollar() -> Option<Path> {
    Some(path("$"))
}

pub fn next(i: StateId) -> Transition {
    Transition::Next(i)
}

pub fn end() -> Transition {
    Transition::End
}

/// A payload template from JSON with `"key.$"` entries.
pub fn tpl(v: Value) -> Template {
    match v {
        Value::Object(m) => {
            let mut entries = Vec::new();
            let mut dynamic = false;
            for (k, v) in m {
                if let Some(stripped) = k.strip_suffix(".$") {
                    dynamic = true;
                    let text = v.as_str().unwrap_or_else(|| panic!("{k} must be a string"));
                    entries.push((stripped.to_owned(), Template::Path(path(text))));
                } else {
                    let t = tpl(v);
                    dynamic |= !matches!(t, Template::Literal(_));
                    entries.push((k, t));
                }
            }
            if dynamic {
                Template::Object(entries)
            } else {
                Template::Literal(Value::Object(entries.into_iter().map(|(k, t)| (k, lit(t))).collect()))
            }
        }
        Value::Array(items) => {
            let ts: Vec<Template> = items.into_iter().map(tpl).collect();
            if ts.iter().all(|t| matches!(t, Template::Literal(_))) {
                Template::Literal(Value::Array(ts.into_iter().map(lit).collect()))
            } else {
                Template::Array(ts)
            }
        }
        other => Template::Literal(other),
    }
}

fn lit(t: Template) -> Value {
    match t {
        Template::Literal(v) => v,
        _ => Value::Null,
    }
}

pub fn pass_state() -> PassState {
    PassState {
        assign: None,
        output: None,
        input_path: dollar(),
        parameters: None,
        result: None,
        result_path: Some(rpath("$")),
        output_path: dollar(),
        transition: end(),
    }
}

pub fn task_state(resource: &str) -> TaskState {
    TaskState {
        arguments: None,
        assign: None,
        output: None,
        credentials: None,
        resource: resource.to_owned(),
        input_path: dollar(),
        parameters: None,
        result_selector: None,
        result_path: Some(rpath("$")),
        output_path: dollar(),
        timeout: None,
        heartbeat: None,
        retry: vec![],
        catch: vec![],
        transition: end(),
    }
}

pub fn wait_state(duration: WaitDuration) -> WaitState {
    WaitState { assign: None, output: None, input_path: dollar(), output_path: dollar(), duration, transition: end() }
}

pub fn succeed_state() -> SucceedState {
    SucceedState { output: None, input_path: dollar(), output_path: dollar() }
}

pub fn fail_state(error: &str, cause: &str) -> FailState {
    FailState {
        cause_computed: None,
        error_computed: None,
        error: Some(error.to_owned()),
        cause: Some(cause.to_owned()),
        error_path: None,
        cause_path: None,
    }
}

pub fn choice_state(choices: Vec<(Condition, StateId)>, default: Option<StateId>) -> ChoiceState {
    ChoiceState {
        assign: None,
        output: None,
        input_path: dollar(),
        output_path: dollar(),
        choices: choices
            .into_iter()
            .map(|(condition, next)| ChoiceBranch { assign: None, output: None, condition, next })
            .collect(),
        default,
    }
}

pub fn parallel_state(branches: Vec<StateMachine>) -> ParallelState {
    ParallelState {
        arguments: None,
        assign: None,
        output: None,
        input_path: dollar(),
        parameters: None,
        result_selector: None,
        result_path: Some(rpath("$")),
        output_path: dollar(),
        branches,
        retry: vec![],
        catch: vec![],
        transition: end(),
    }
}

pub fn retrier(errors: &[&str]) -> Retrier {
    Retrier::new(errors.iter().map(|e| (*e).to_owned()).collect())
}

pub fn catcher(errors: &[&str], result_path: Option<&str>, next: StateId) -> Catcher {
    Catcher {
        assign: None,
        output: None,
        error_equals: errors.iter().map(|e| (*e).to_owned()).collect(),
        result_path: result_path.map(rpath),
        next,
    }
}

pub fn cmp(variable: &str, operator: Operator, literal: Value) -> Condition {
    Condition::Compare(Comparison { variable: path(variable), operator, operand: Operand::Literal(literal) })
}

pub fn cmp_path(variable: &str, operator: Operator, operand: &str) -> Condition {
    Condition::Compare(Comparison { variable: path(variable), operator, operand: Operand::Path(path(operand)) })
}

pub fn state(name: &str, kind: StateKind) -> State {
    State { name: name.to_owned(), comment: None, location: None, kind }
}

/// A machine starting at its first state.
pub fn sm(states: Vec<(&str, StateKind)>) -> StateMachine {
    StateMachine { start_at: 0, states: states.into_iter().map(|(n, k)| state(n, k)).collect() }
}

pub fn workflow(states: Vec<(&str, StateKind)>) -> Workflow {
    Workflow { name: "Test".to_owned(), comment: None, version: None, timeout_seconds: None, machine: sm(states) }
}

/// Runs on virtual time with seed 0.
pub fn run(wf: &Workflow, handler: &dyn DynHandler, input: Value) -> ExecutionResult {
    run_seeded(wf, handler, input, 0)
}

pub fn run_seeded(wf: &Workflow, handler: &dyn DynHandler, input: Value, seed: u64) -> ExecutionResult {
    // Built with the constructors, not a struct literal: RunOptions has a `journal` field when
    // the `durable` feature is on (as in workspace builds, where wfc-cli enables it).
    let options = RunOptions::virtual_time().with_name("test-run").with_seed(seed);
    block_on_virtual(interp::run(wf, handler, input, options))
}

pub fn no_handlers() -> Handlers {
    Handlers::new()
}

/// A handler that always fails with `error` and counts its calls.
pub fn failing(error: &'static str, calls: Arc<AtomicUsize>) -> Handlers {
    Handlers::new().fallback(move |_resource: String, _input: Value, _ctx: wfc_runtime::TaskContext| {
        let calls = Arc::clone(&calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<Value, Failure>(Failure::new(error, "it failed"))
        }
    })
}

pub fn ok(result: &ExecutionResult) -> Value {
    match &result.output {
        Some(v) if result.status == wfc_runtime::Status::Succeeded => v.clone(),
        _ => panic!("expected success, got {:?} {:?}", result.status, result.error),
    }
}

pub fn err(result: &ExecutionResult) -> Failure {
    match &result.error {
        Some(f) => f.clone(),
        None => panic!("expected failure, got {:?} {:?}", result.status, result.output),
    }
}

/// The cause without AWS's "An error occurred while executing the state ..." prefix.
pub fn bare_cause(f: &Failure) -> &str {
    match f.cause.split_once("). ") {
        Some((prefix, rest)) if prefix.starts_with("An error occurred while executing the state") => rest,
        _ => &f.cause,
    }
}
