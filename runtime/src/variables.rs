//! Workflow variables (ASL `Assign`, AWS 2024): the scopes they live in, AWS's size limits, and
//! the evaluation of an `Assign` block.
//!
//! Scoping follows AWS: the top-level states form the outer scope; each Parallel branch and each
//! Map iteration gets an inner scope that reads the outer variables but never writes them (the
//! compiler rejects an inner `Assign` of an outer name), and whose own variables vanish when it
//! ends. Evaluation order: every `Assign` value (and `Output`) of a state is computed against the
//! variables as they were when the state was entered; the new values are committed after the
//! state's output is computed, so they are visible from the next state on.

use std::sync::{Arc, Mutex};

use rand::Rng;
use serde_json::{Map, Value};
use wfc_ir::{Assign, Template};

use crate::jsonata::{self, Bindings};
use crate::{Details, Failure, io};

/// Largest value one variable may hold, in bytes of compact JSON (AWS: 256 KiB).
pub const MAX_VARIABLE_BYTES: usize = 256 * 1024;
/// Largest total of the values one `Assign` block sets (AWS: 256 KiB).
pub const MAX_ASSIGN_BYTES: usize = 256 * 1024;
/// Largest total of all variables of an execution's scope chain (AWS: 10 MiB).
pub const MAX_TOTAL_BYTES: usize = 10 * 1024 * 1024;

/// One scope of variables: the top level, a Parallel branch or a Map iteration.
#[derive(Debug, Default)]
pub struct Variables {
    parent: Option<Arc<Variables>>,
    values: Mutex<Map<String, Value>>,
}

impl Variables {
    /// The outermost scope of an execution, empty.
    pub fn root() -> Arc<Variables> {
        Arc::new(Variables::default())
    }

    /// A new inner scope that reads this one.
    pub fn child(self: &Arc<Variables>) -> Arc<Variables> {
        Arc::new(Variables { parent: Some(Arc::clone(self)), values: Mutex::default() })
    }

    /// Whether no variable is visible from this scope.
    pub fn is_empty(&self) -> bool {
        self.values.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
            && self.parent.as_ref().is_none_or(|p| p.is_empty())
    }

    /// Every variable visible from this scope, outer scopes first.
    pub fn visible(&self) -> Map<String, Value> {
        let mut out = match &self.parent {
            Some(p) => p.visible(),
            None => Map::new(),
        };
        for (k, v) in self.values.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    /// Sets `values` in this scope, after checking AWS's size limits (`States.DataLimitExceeded`
    /// when one is exceeded, which nothing can catch).
    pub fn commit(&self, state: &str, values: Vec<(String, Value)>) -> Result<(), Failure> {
        let mut block = 0usize;
        for (name, value) in &values {
            let size = serde_json::to_vec(value).map_or(0, |b| b.len());
            if size > MAX_VARIABLE_BYTES {
                return Err(limit(format!(
                    "The state '{state}' assigned the variable '{name}' a value of {size} bytes, more than the {MAX_VARIABLE_BYTES} bytes a variable may hold."
                )));
            }
            block += size;
        }
        if block > MAX_ASSIGN_BYTES {
            return Err(limit(format!(
                "The Assign of state '{state}' sets {block} bytes of variables, more than the {MAX_ASSIGN_BYTES} bytes one Assign may set."
            )));
        }
        let mut own = self.values.lock().unwrap_or_else(|p| p.into_inner());
        for (name, value) in values {
            own.insert(name, value);
        }
        drop(own);
        let total = serde_json::to_vec(&Value::Object(self.visible())).map_or(0, |b| b.len());
        if total > MAX_TOTAL_BYTES {
            return Err(limit(format!(
                "The variables of the execution total {total} bytes, more than the {MAX_TOTAL_BYTES} bytes allowed."
            )));
        }
        Ok(())
    }
}

/// Adds what a state assigned to the details of its `*StateExited` event, in the shape of AWS's
/// `GetExecutionHistory`: `assignedVariables` maps each name to its value serialized as compact
/// JSON (a string holding JSON, as AWS records it), and `assignedVariablesDetails.truncated` says
/// whether that map was cut short, which wfc never does (AWS reports `false` too: a history
/// event's variables fit the 256 KiB an Assign block may set).
pub fn record_assigned(details: &mut Details, values: &[(String, Value)]) {
    let assigned: Map<String, Value> =
        values.iter().map(|(name, value)| (name.clone(), Value::String(value.to_string()))).collect();
    details.insert("assignedVariables", Value::Object(assigned));
    details.insert("assignedVariablesDetails", serde_json::json!({ "truncated": false }));
}

fn limit(cause: String) -> Failure {
    Failure::new(wfc_ir::errors::DATA_LIMIT_EXCEEDED, cause)
}

/// Evaluates an `Assign` block. `dollar` is what `$` means in a JSONPath Assign (the state's
/// result, see [`Assign::JsonPath`]); `bindings` are the `$states` of a JSONata Assign. `context`
/// is the context-object document (with the variables as of state entry).
pub fn evaluate(
    assign: &Assign,
    dollar: &Value,
    bindings: &Bindings<'_>,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<Vec<(String, Value)>, Failure> {
    match assign {
        Assign::JsonPath(entries) => entries
            .iter()
            .map(|(name, t)| {
                let value = match t {
                    Template::Path(p) => io::select_field(p, &format!("{name}.$"), dollar, context)?,
                    Template::Intrinsic(i) => {
                        crate::intrinsics::evaluate(i, &format!("{name}.$"), dollar, context, rng)?
                    }
                    other => io::template(other, dollar, context, rng)?,
                };
                Ok((name.clone(), value))
            })
            .collect(),
        Assign::Jsonata(entries) => entries
            .iter()
            .map(|(name, t)| Ok((name.clone(), jsonata::template(t, &format!("Assign/{name}"), bindings, rng)?)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inner_scopes_read_outer_and_keep_their_own() {
        let outer = Variables::root();
        outer.commit("A", vec![("x".into(), json!(1))]).unwrap();
        let inner = outer.child();
        inner.commit("B", vec![("y".into(), json!(2))]).unwrap();
        assert_eq!(Value::Object(inner.visible()), json!({"x": 1, "y": 2}));
        assert_eq!(Value::Object(outer.visible()), json!({"x": 1}));
    }

    #[test]
    fn a_variable_over_256_kib_is_a_data_limit() {
        let f = Variables::root().commit("A", vec![("big".into(), json!("x".repeat(300 * 1024)))]).unwrap_err();
        assert_eq!(f.error, "States.DataLimitExceeded");
    }
}
