//! Parameters evaluated once per visit or per attempt (Task and Parallel).

use serde_json::Value;

use super::Execution;
use super::task::TaskCodeView;
use super::visit::Visit;
use crate::Failure;

/// When a Task's Parameters are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParametersForm {
    /// No Parameters: the effective input is sent.
    None,
    /// Evaluated once per visit, without the context object.
    Once,
    /// Evaluated per attempt: the template reads the context object (`$$.State.RetryCount`,
    /// when `context`) or draws random values (`States.UUID`).
    PerAttempt {
        /// Whether it reads the context object.
        context: bool,
    },
}

/// Parameters for each attempt: evaluated once when the template cannot change between
/// attempts, or per attempt when it reads `$$` (for `$$.State.RetryCount`).
pub(super) enum Parameters {
    /// No Parameters: the effective input itself.
    None,
    /// Evaluated once.
    Fixed(Value),
    /// Evaluated per attempt, with the context object when it reads it.
    PerAttempt { context: bool },
}

impl Parameters {
    pub(super) fn new<C: ParametersCode + ?Sized>(
        code: &C,
        effective: &Value,
        exec: &Execution,
    ) -> Result<Parameters, Failure> {
        Ok(match code.form() {
            ParametersForm::None => Parameters::None,
            ParametersForm::PerAttempt { context } => Parameters::PerAttempt { context },
            ParametersForm::Once => Parameters::Fixed(code.evaluate(exec, effective, &Value::Null)?),
        })
    }

    pub(super) fn for_attempt<C: ParametersCode + ?Sized>(
        &self,
        code: &C,
        effective: &Value,
        visit: &Visit<'_>,
    ) -> Result<Value, Failure> {
        match self {
            Parameters::None => Ok(effective.clone()),
            Parameters::Fixed(v) => Ok(v.clone()),
            Parameters::PerAttempt { context } => {
                let ctx = visit.context_if(*context);
                code.evaluate(visit.exec, effective, &ctx)
            }
        }
    }
}

/// Where [`Parameters`] come from: a Task's [`TaskCode`], or a Parallel's or Map's template.
pub(super) trait ParametersCode {
    fn form(&self) -> ParametersForm;
    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure>;
}

impl ParametersCode for dyn TaskCodeView + Sync + '_ {
    fn form(&self) -> ParametersForm {
        self.parameters_form()
    }

    fn evaluate(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        self.parameters(exec, effective, ctx)
    }
}
