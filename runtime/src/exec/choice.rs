//! The Choice state.

use serde_json::Value;

use super::Execution;
use super::pass::Assigned;
use super::visit::{CountedVisit, Visit, state_span};
use crate::{EventType, Failure};

/// Which Choice rule matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Index into `Choices` of the first rule that matched; `None` means `Default`.
    pub branch: Option<usize>,
    /// The effective output (OutputPath applied).
    pub output: Value,
}

/// One visit of a Choice state with a JSONata `Output` or `Assign` (or, in the interpreter, any
/// `Assign` or `Output`): as [`choice_with`], then `finish`, given the chosen rule (`None`: the
/// Default), the raw input (`$states.input`), the effective input and the context object,
/// gives the output and the chosen block's assigned values (`None`: it has no `Assign`), which
/// the Exited event records and which are visible from the next state on.
///
/// The interpreter's `wfc_interp::choice` and generated code (whose `rules` are Rust conditions and
/// JSONata `Condition`s, and whose `finish` is compiled from each rule's `Output` and
/// `Assign`) both go through here.
#[allow(clippy::too_many_arguments, clippy::type_complexity)] // each argument is one step of the state, in order
pub fn choice_language_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    finish: impl FnOnce(Option<usize>, &Value, Value, &Value) -> Result<(Value, Option<Assigned>), Failure>,
) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        let visit = Visit::start_synchronous(exec, name, "Choice", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        // A JSONata Output or Assign sees the raw input as `$states.input`.
        let raw = input.clone();
        let effective = input_path(input, &ctx).map_err(|f| visit.runtime(f))?;
        let branch = rules(&effective, &ctx).map_err(|f| visit.runtime(f))?;
        if branch.is_none() && !has_default {
            return Err(no_choice_matched(name));
        }
        let (output, assigned) = finish(branch, &raw, effective, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(Chosen { branch, output })
    })
}

fn no_choice_matched(name: &str) -> Failure {
    Failure::new(
        wfc_ir::errors::NO_CHOICE_MATCHED,
        format!("No Choice rule matched the input of state '{name}', and it has no Default"),
    )
}

/// One visit of a Choice state without `Assign` or JSONata `Output`: records its Entered and
/// Exited events around the three steps, each given the context object (`null` unless
/// `needs_ctx`): `input_path` makes the effective input from the raw one, `rules` returns the
/// index of the first rule that holds for it (`None`: none does), and `output_path` makes the
/// output. No match without a Default (`has_default` false) is `States.NoChoiceMatched`.
///
/// The interpreter's `wfc_interp::choice` and generated code (whose `rules` are Rust conditions) both go
/// through here, so their histories are the same.
#[allow(clippy::too_many_arguments)] // each argument is one step of the state, in order
pub fn choice_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    output_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Chosen, Failure> {
    let no_assign: Option<fn(Option<usize>, &Value, &Value) -> Result<Option<Assigned>, Failure>> = None;
    choice_visit(exec, name, needs_ctx, input, has_default, input_path, rules, no_assign, output_path)
}

/// [`choice_with`] for a Choice with InputPath and OutputPath `$` (and no `Assign`): its output
/// is its input, so unless this is the first state of its line (see [`Line`](super::Line)) the output is not
/// checked against the payload limits again.
///
/// The interpreter's `wfc_interp::choice` and generated code both go through here for such a Choice.
pub fn choice_kept_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        if !needs_ctx && exec.counts_only() {
            let visit = CountedVisit::deferred(exec, name, "Choice", EventType::ChoiceStateEntered)?;
            let branch = rules(&input, &Value::Null).map_err(|f| visit.runtime(f))?;
            if branch.is_none() && !has_default {
                return Err(no_choice_matched(name));
            }
            if !visit.input_checked {
                visit.limits_check(&input)?;
            }
            visit.exit(EventType::ChoiceStateExited);
            return Ok(Chosen { branch, output: input });
        }
        let visit = Visit::start_synchronous(exec, name, "Choice", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let branch = rules(&input, &ctx).map_err(|f| visit.runtime(f))?;
        if branch.is_none() && !has_default {
            return Err(no_choice_matched(name));
        }
        visit.finish_unchanged(&input)?;
        Ok(Chosen { branch, output: input })
    })
}

/// One visit of a JSONPath Choice state with `Assign` (its own, or a rule's): as
/// [`choice_with`], with `assign` giving, for the chosen rule (`None`: the Default), the values
/// of its `Assign` block (`None` when it has none) on the effective input, evaluated after the
/// rules and before OutputPath, as `wfc_interp::choice` does. The Exited event records them as
/// `assignedVariables`; they are visible from the next state on.
#[allow(clippy::too_many_arguments)] // each argument is one step of the state, in order
pub fn choice_assign_with(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    assign: impl FnOnce(Option<usize>, &Value, &Value) -> Result<Option<Assigned>, Failure>,
    output_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Chosen, Failure> {
    choice_visit(exec, name, needs_ctx, input, has_default, input_path, rules, Some(assign), output_path)
}

/// The visit [`choice_with`] and [`choice_assign_with`] share. Inlined into both, so a Choice
/// without `Assign` (`assign` is `None`) compiles to no Assign step at all (no no-op closure
/// call, no `finish_assigned`): the hot path of the counting loop stays as it was.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // as choice_assign_with
fn choice_visit(
    exec: &Execution,
    name: &str,
    needs_ctx: bool,
    input: Value,
    has_default: bool,
    input_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
    rules: impl FnOnce(&Value, &Value) -> Result<Option<usize>, Failure>,
    assign: Option<impl FnOnce(Option<usize>, &Value, &Value) -> Result<Option<Assigned>, Failure>>,
    output_path: impl FnOnce(Value, &Value) -> Result<Value, Failure>,
) -> Result<Chosen, Failure> {
    state_span(name, "Choice").in_scope(|| {
        let visit = Visit::start_synchronous(exec, name, "Choice", &input, needs_ctx)?;
        let ctx = visit.context_if(needs_ctx);
        let effective = input_path(input, &ctx).map_err(|f| visit.runtime(f))?;
        let branch = rules(&effective, &ctx).map_err(|f| visit.runtime(f))?;
        if branch.is_none() && !has_default {
            return Err(no_choice_matched(name));
        }
        let Some(assign) = assign else {
            let output = output_path(effective, &ctx).map_err(|f| visit.runtime(f))?;
            visit.finish(&output)?;
            return Ok(Chosen { branch, output });
        };
        let assigned = assign(branch, &effective, &ctx).map_err(|f| visit.runtime(f))?;
        let output = output_path(effective, &ctx).map_err(|f| visit.runtime(f))?;
        visit.finish_assigned(&output, assigned)?;
        Ok(Chosen { branch, output })
    })
}
