//! Typed Task handlers: the serde boundary between a workflow's JSON and the Rust types a user
//! declared for a Task resource (`include_workflow!(…, types = { … })`,
//! `wfc_build::Config::task_types`).
//!
//! Generated code calls [`call`] around a typed handler method: the Task's effective input is
//! deserialized into the declared input type and the method's result serialized back to JSON,
//! so the rest of the runtime (paths, Retry and Catch, the history, the durable journal) keeps
//! seeing only JSON. A value that does not convert fails the attempt with [`TYPE_MISMATCH`],
//! naming the state, the resource, the Rust type and the field (through `serde_path_to_error`),
//! an ordinary task error that `Retry` and `Catch` match like any other. The conversion is part
//! of the handler call, so a durable replay, which takes the recorded result instead of calling
//! the handler, does not convert anything either.

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Failure, TaskContext};

/// The error of a Task whose input does not deserialize into its handler's declared input type,
/// or whose handler's result does not serialize to JSON.
pub const TYPE_MISMATCH: &str = "Wfc.TypeMismatch";

/// Calls a typed handler method: `input` deserialized into `I`, the method's `O` serialized
/// back. Either conversion failing is a [`TYPE_MISMATCH`] failure of this attempt; the
/// method's own failures pass through unchanged.
pub async fn call<I, O, F, Fut>(input: Value, ctx: TaskContext, method: F) -> Result<Value, Failure>
where
    I: DeserializeOwned,
    O: Serialize,
    F: FnOnce(I, TaskContext) -> Fut,
    Fut: Future<Output = Result<O, Failure>>,
{
    let typed = match serde_path_to_error::deserialize::<_, I>(input) {
        Ok(typed) => typed,
        Err(e) => return Err(mismatch(&ctx, "input", std::any::type_name::<I>(), e.path(), e.inner())),
    };
    let output = method(typed, ctx.clone()).await?;
    serde_path_to_error::serialize(&output, serde_json::value::Serializer)
        .map_err(|e| mismatch(&ctx, "result", std::any::type_name::<O>(), e.path(), e.inner()))
}

/// `Task "Check Stock" (resource "…:CheckStock"): its input does not convert to
/// `shop::StockQuery` at field `items[0].quantity`: invalid type: …`.
fn mismatch(
    ctx: &TaskContext,
    what: &str,
    type_name: &str,
    path: &serde_path_to_error::Path,
    error: &serde_json::Error,
) -> Failure {
    let field = path.to_string();
    let at = if field == "." { "at the top level".to_owned() } else { format!("at field `{field}`") };
    let direction = if what == "input" { "does not convert to" } else { "does not convert from" };
    Failure::new(
        TYPE_MISMATCH,
        format!(
            "Task {:?} (resource {:?}): its {what} {direction} `{type_name}` {at}: {error}",
            ctx.state_name(),
            ctx.resource()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, Serialize)]
    struct Line {
        sku: String,
        quantity: u32,
    }

    #[derive(Debug, Deserialize, Serialize)]
    struct Order {
        items: Vec<Line>,
    }

    fn ctx() -> TaskContext {
        TaskContext::new("Check Stock", "arn:aws:lambda:us-east-1:1:function:CheckStock", 0, "exec")
    }

    fn run<I: DeserializeOwned, O: Serialize>(input: Value, answer: O) -> Result<Value, Failure> {
        crate::block_on_virtual(call(input, ctx(), move |_: I, _| async move { Ok(answer) }))
    }

    #[test]
    fn converts_both_ways() {
        let out = run::<Order, _>(
            serde_json::json!({ "items": [ { "sku": "book", "quantity": 2 } ] }),
            Line { sku: "pen".into(), quantity: 3 },
        );
        assert_eq!(out, Ok(serde_json::json!({ "sku": "pen", "quantity": 3 })));
    }

    #[test]
    fn a_field_that_does_not_convert_names_state_resource_type_and_field() {
        let input =
            serde_json::json!({ "items": [ { "sku": "book", "quantity": 2 }, { "sku": "pen", "quantity": "three" } ] });
        let failure = run::<Order, _>(input, ()).expect_err("mismatch");
        assert_eq!(failure.error, TYPE_MISMATCH);
        assert!(failure.cause.starts_with("Task \"Check Stock\" (resource \"arn:aws:lambda:us-east-1:1:function:CheckStock\"): its input does not convert to `"), "{}", failure.cause);
        assert!(
            failure.cause.contains("Order` at field `items[1].quantity`: invalid type: string \"three\""),
            "{}",
            failure.cause
        );
        let failure = run::<Order, _>(serde_json::json!("no order"), ()).expect_err("mismatch");
        assert!(failure.cause.contains("at the top level"), "{}", failure.cause);
    }

    #[test]
    fn a_result_that_does_not_serialize_is_a_mismatch() {
        // JSON object keys must be strings: a map keyed by tuples has no JSON form.
        let answer = std::collections::BTreeMap::from([((1, 2), "x")]);
        let failure = run::<Value, _>(Value::Null, answer).expect_err("mismatch");
        assert_eq!(failure.error, TYPE_MISMATCH);
        assert!(failure.cause.contains("its result does not convert from `"), "{}", failure.cause);
    }
}
