//! The inline Map state's iterations: selecting the items, building each iteration's input, and
//! running the iterations with bounded concurrency while keeping their results in item order.
//!
//! [`crate::exec::map`] owns the state's input/output processing, Retry and Catch; this module
//! owns what happens between `MapStateStarted` and `MapStateSucceeded`/`MapStateFailed`. Both
//! engines reach it through `exec::map`, so their histories are the same event for event.

use std::future::Future;

use futures::StreamExt;
use rand::Rng;
use serde_json::{Value, json};
use wfc_ir::{Path, Root, Template};

use crate::{EventType, Execution, Failure, io};

/// The items a Map iterates over: what `items_path` selects from the effective input (or from
/// the context object for a `$$` path), which must be an array.
///
/// A path that selects nothing fails with the InputPath wording; a value that is not an array
/// fails with AWS's `Reference path "$.x" must point to array.`. Both are `States.Runtime`.
pub fn items(items_path: &Path, effective: &Value, context: &Value) -> Result<Vec<Value>, Failure> {
    let doc = match items_path.root() {
        Root::Input => effective,
        Root::Context | Root::Variable(_) => context,
    };
    let selected = items_path.select(doc).ok();
    items_at(items_path.as_str(), selected, doc)
}

/// A JSONata Map's items from its evaluated `Items` field: the array, else
/// `States.QueryEvaluationError` naming `expr` (the field's `{% %}` expression text, when it is
/// one; otherwise the value).
pub fn jsonata_items(items: Value, expr: Option<&str>) -> Result<Vec<Value>, Failure> {
    match items {
        Value::Array(items) => Ok(items),
        other => {
            let text = expr.map_or_else(|| other.to_string(), str::to_owned);
            Err(crate::jsonata::unexpected_type(&text, "Items", "array", &other))
        }
    }
}

/// A JSONata Map's items without an `Items` field: the state input, which must be an array
/// (else `States.QueryEvaluationError`).
pub fn input_items(input: &Value) -> Result<Vec<Value>, Failure> {
    match input {
        Value::Array(items) => Ok(items.clone()),
        other => Err(crate::jsonata::query_error(format!("Map state input must be an array but was: {other}"))),
    }
}

/// [`items`] once the path (whose text is `text`) is evaluated on `doc`: what it `selected`
/// (`None`: nothing), which must be an array. Generated code walks a definite ItemsPath itself
/// and calls this for the items and the failures.
pub fn items_at(text: &str, selected: Option<Value>, doc: &Value) -> Result<Vec<Value>, Failure> {
    match selected {
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(Failure::runtime(format!("Reference path \"{text}\" must point to array."))),
        None => Err(Failure::runtime(io::invalid_path_text_message(text, doc))),
    }
}

/// `States.Runtime` when an INLINE Map (or a DISTRIBUTED one over `ItemsPath`) has more items
/// than [`Limits::max_map_items`](crate::Limits).
pub fn check_item_count(limits: &crate::Limits, len: usize) -> Result<(), Failure> {
    if len > limits.max_map_items {
        return Err(Failure::runtime(format!(
            "The Map state has {len} items, more than the limit of {}.",
            limits.max_map_items
        )));
    }
    Ok(())
}

/// The context object an iteration's `ItemSelector` sees: the state's own context object with
/// `Map.Item.Index` and `Map.Item.Value` added.
pub fn item_context(state_context: &Value, index: usize, value: &Value) -> Value {
    let mut ctx = state_context.clone();
    if let Value::Object(fields) = &mut ctx {
        fields.insert("Map".to_owned(), json!({ "Item": { "Index": index, "Value": value } }));
    }
    ctx
}

/// Each iteration's input, in item order: `ItemSelector` evaluated against the Map's effective
/// input with `$$.Map.Item.*` in the context object, or the item itself without a selector.
///
/// `state_context` is the state's context object (only read when the selector uses `$$`).
pub fn iteration_inputs(
    selector: Option<&Template>,
    effective: &Value,
    items: Vec<Value>,
    state_context: &Value,
    rng: &mut dyn Rng,
) -> Result<Vec<Value>, Failure> {
    let Some(selector) = selector else {
        return Ok(items);
    };
    let needs_ctx = io::uses_context(selector);
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let ctx = if needs_ctx { item_context(state_context, index, item) } else { Value::Null };
            io::template(selector, effective, &ctx, rng)
        })
        .collect()
}

/// How many iterations may be in flight for `max_concurrency` (0 = no limit) and `len` items.
pub fn concurrency_limit(max_concurrency: u64, len: usize) -> usize {
    let len = len.max(1);
    match usize::try_from(max_concurrency) {
        Ok(0) => len,
        Ok(n) => n.min(len),
        // A limit beyond the address space is no limit.
        Err(_) => len,
    }
}

/// Records `MapIterationAborted` when an iteration that started is dropped unfinished: a sibling
/// iteration failed, or an enclosing state or the execution was cancelled.
struct IterationGuard<'a> {
    line: &'a Execution,
    name: &'a str,
    index: usize,
    armed: bool,
}

impl Drop for IterationGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.line.record(EventType::MapIterationAborted, json!({ "name": self.name, "index": self.index }));
        }
    }
}

/// Runs one iteration per input, at most `max_concurrency` at a time (0 = all at once), each on
/// its own line of control ([`Execution::branch`]), and returns their outputs in **item order**
/// whatever order they finish in.
///
/// The first iteration to fail (in completion order) fails the Map with its own error; the
/// iterations still running are dropped (recording `MapIterationAborted` and their states'
/// aborted events) and those not yet started never start.
pub async fn run_iterations<F, Fut>(
    exec: &Execution,
    name: &str,
    inputs: Vec<Value>,
    max_concurrency: u64,
    mut run_iteration: F,
) -> Result<Vec<Value>, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let len = inputs.len();
    let limit = concurrency_limit(max_concurrency, len);
    let iterations = futures::stream::iter(inputs.into_iter().enumerate())
        .map(|(index, input)| {
            // Lines are created lazily, when the iteration starts, in item order: so durable
            // operation ids (which count branches) are stable across runs.
            let line = exec.branch();
            let future = run_iteration(input, line.clone());
            async move {
                // Details built only when the history keeps them (at express, none are).
                line.record_with(EventType::MapIterationStarted, || json!({ "name": name, "index": index }));
                let mut guard = IterationGuard { line: &line, name, index, armed: true };
                // The iteration future is dropped before the guard on cancellation (it lives in
                // this statement's scope), so its states' aborted events come first.
                // The iteration is a CONTEXT operation when journaled (MapIteration).
                let outcome = line.in_branch_context(future).await;
                guard.armed = false;
                // AWS's MapIterationFailed names the iteration only; the error is the Map's.
                let event =
                    if outcome.is_ok() { EventType::MapIterationSucceeded } else { EventType::MapIterationFailed };
                line.record_with(event, || json!({ "name": name, "index": index }));
                (index, outcome)
            }
        })
        .buffer_unordered(limit);
    futures::pin_mut!(iterations);
    let mut outputs: Vec<Option<Value>> = vec![None; len];
    while let Some((index, outcome)) = iterations.next().await {
        let output = outcome?;
        if let Some(slot) = outputs.get_mut(index) {
            *slot = Some(output);
        }
    }
    outputs
        .into_iter()
        .enumerate()
        .map(|(index, output)| {
            output
                .ok_or_else(|| Failure::runtime(format!("the Map state '{name}' lost the output of iteration {index}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Path {
        match Path::parse(text) {
            Ok(p) => p,
            Err(e) => panic!("bad test path {text}: {e:?}"),
        }
    }

    #[test]
    fn items_must_be_an_array() {
        let input = json!({"list": [1, 2], "n": 3});
        assert_eq!(items(&path("$.list"), &input, &Value::Null), Ok(vec![json!(1), json!(2)]));
        let err = items(&path("$.n"), &input, &Value::Null).err();
        assert_eq!(err.map(|f| f.cause), Some("Reference path \"$.n\" must point to array.".to_owned()));
        let err = items(&path("$.missing"), &input, &Value::Null).err();
        assert_eq!(err.map(|f| f.error), Some(wfc_ir::errors::RUNTIME.to_owned()));
    }

    #[test]
    fn limits() {
        assert_eq!(concurrency_limit(0, 5), 5);
        assert_eq!(concurrency_limit(2, 5), 2);
        assert_eq!(concurrency_limit(9, 5), 5);
        assert_eq!(concurrency_limit(0, 0), 1);
    }

    #[test]
    fn item_context_adds_map_item() {
        let ctx = item_context(&json!({"State": {"Name": "M"}}), 2, &json!("x"));
        assert_eq!(ctx["Map"]["Item"], json!({"Index": 2, "Value": "x"}));
        assert_eq!(ctx["State"]["Name"], "M");
    }
}
