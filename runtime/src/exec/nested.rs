//! The data processing Parallel and Map share ([`NestedCode`]) and each adds.

use serde_json::Value;

use super::Execution;
use super::parameters::ParametersForm;
use super::pass::Assigned;
use crate::Failure;
use crate::jsonata::Bindings;
use crate::retry;

/// The data processing a Parallel or Map state shares, which [`parallel_with`](super::parallel_with) and [`map_with`](super::map_with)
/// run their visits around: what the interpreter reads from the IR (`wfc_interp::parallel`, `wfc_interp::map`) and
/// generated code compiles (`wfc_runtime::abi`). Each method is one step of the state's
/// pipeline; none of them records events.
pub trait NestedCode {
    /// A retrier of its `Retry` table.
    type Retrier: retry::RetryRule;
    /// A catcher of its `Catch` table.
    type Catcher: retry::CatchRule;
    /// `Retry`, in order.
    fn retriers(&self) -> &[Self::Retrier];
    /// `Catch`, in order.
    fn catchers(&self) -> &[Self::Catcher];
    /// Whether the state's processing on entry (InputPath, OutputPath; for a Map ItemsPath and
    /// MaxConcurrencyPath; and the interpreted JSONata forms) reads the context object.
    fn needs_context(&self) -> bool {
        false
    }
    /// InputPath on the raw input: the effective input (by default `$`, a copy).
    fn input_path(&self, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = ctx;
        Ok(raw.clone())
    }
    /// Whether [`finish`](Self::finish) reads the context object beyond
    /// [`needs_context`](Self::needs_context) (a ResultSelector with `$$`).
    fn finish_needs_context(&self) -> bool {
        false
    }
    /// ResultSelector on the result (the array of branch or iteration outputs), ResultPath into
    /// the raw input, OutputPath; by default none of them: the result.
    fn finish(&self, exec: &Execution, raw_input: Value, result: Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, raw_input, ctx);
        Ok(result)
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

/// A Parallel state's own data processing, beyond [`NestedCode`]: what its branches get.
pub trait ParallelCode: NestedCode {
    /// Whether there are Parameters, and when they are evaluated; by default there are none.
    fn parameters_form(&self) -> ParametersForm {
        ParametersForm::None
    }
    /// Parameters on the effective input (`ctx` is `null` unless the form reads it).
    fn parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, ctx);
        Ok(effective.clone())
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
}

/// A Map state's own data processing, beyond [`NestedCode`]: its items and their inputs.
pub trait MapCode: NestedCode {
    /// Whether each attempt's iteration inputs read the context object beyond
    /// [`needs_context`](NestedCode::needs_context) (an ItemSelector with `$$`, for
    /// `$$.Map.Item.*` and `$$.State.RetryCount`; a DISTRIBUTED Map's fields).
    fn attempt_needs_context(&self) -> bool {
        false
    }
    /// `MaxConcurrency` or `MaxConcurrencyPath` (on the effective input); 0 is no limit.
    fn max_concurrency(&self, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
        let _ = (effective, ctx);
        Ok(0)
    }
    /// ItemsPath, then ItemSelector on each item (with `$$.Map.Item.Index`/`Value` in the
    /// context object): each iteration's input, in item order. `ctx` is the state's context
    /// object (`null` unless one of the two `needs_context` methods asks for it).
    fn iteration_inputs(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
    ) -> Result<Vec<Value>, Failure>;
    /// Whether the items may be moved out of the raw input instead of copied
    /// ([`take_items`](Self::take_items) instead of `input_path` and
    /// [`iteration_inputs`](Self::iteration_inputs)): nothing reads the input after the items
    /// are selected (InputPath `$`, a definite ItemsPath, no ItemSelector, no MaxConcurrencyPath,
    /// ResultPath `$`, no Retry, Catch or Assign, INLINE, JSONPath). Generated code decides it
    /// at build time; by default `false`.
    fn takes_items(&self) -> bool {
        false
    }
    /// ItemsPath on the raw input, the items moved out of it; called only when
    /// [`takes_items`](Self::takes_items).
    fn take_items(&self, raw_input: &mut Value) -> Result<Vec<Value>, Failure> {
        let _ = raw_input;
        Err(Failure::runtime("the Map state does not take its items"))
    }
    /// A DISTRIBUTED Map's own fields (ItemReader, ItemBatcher, ResultWriter, tolerance,
    /// Label): its iterations are then a Map Run's children ([`crate::distributed::map_run`]).
    fn distributed(&self) -> Option<&dyn crate::distributed::DistributedCode> {
        None
    }
}
