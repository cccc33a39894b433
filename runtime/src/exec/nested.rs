//! The data processing Parallel and Map share ([`NestedCode`]) and each adds.

use serde_json::Value;
use wfc_ir::{Assign, InputPath, JsonataTemplate, MapState, OutputPath, ParallelState, ResultPath, Template};

use super::Execution;
use super::finish::finish_paths;
use super::map::{is_jsonata_map, jsonata_map_inputs};
use super::parameters::{ParametersCode, ParametersForm, TemplateParameters};
use super::pass::Assigned;
use crate::jsonata::{self, Bindings};
use crate::retry;
use crate::variables;
use crate::{Failure, io};

/// The data processing a Parallel or Map state shares, which [`parallel_with`](super::parallel_with) and [`map_with`](super::map_with)
/// run their visits around: what the interpreter reads from the IR ([`parallel`](fn@super::parallel), [`map`](fn@super::map)) and
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
    /// A DISTRIBUTED Map's own fields (ItemReader, ItemBatcher, ResultWriter, tolerance,
    /// Label): its iterations are then a Map Run's children ([`crate::distributed::map_run`]).
    fn distributed(&self) -> Option<&dyn crate::distributed::DistributedCode> {
        None
    }
}

/// The interpreter's [`ParallelCode`] and [`MapCode`]: the state's IR spec, evaluated by [`io`].
pub(super) struct InterpretedNested<'s, S>(pub(super) &'s S);

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
        crate::distributed::max_concurrency(self.0, effective, ctx)
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
        let items = crate::map::items(&spec.items_path, effective, ctx)?;
        exec.with_rng(|rng| crate::map::iteration_inputs(spec.item_selector.as_ref(), effective, items, ctx, rng))
    }

    fn distributed(&self) -> Option<&dyn crate::distributed::DistributedCode> {
        self.0.distributed.is_some().then_some(self.0 as &dyn crate::distributed::DistributedCode)
    }
}
