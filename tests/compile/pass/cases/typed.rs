//! Typed handler methods (`types = { … }`) compile warning-free, with every public item
//! documented: the types are resolved in this module (`Skus` is a local name), one side may stay
//! JSON (`_`), and typed and untyped methods mix. Running it converts both ways.
#![deny(warnings, missing_docs)]

use wfc_runtime::{RunOptions, Status, TaskContext, TaskError, Value, json};

/// A local name for `Reserve`'s input, resolved where the macro is called.
pub(crate) type Skus = Vec<String>;

wfc_runtime::include_workflow!(
    path = "ui/fixtures/two_tasks.asl.json",
    types = {
        "arn:aws:lambda:us-east-1:123456789012:function:Reserve": Skus -> u32,
        "arn:aws:lambda:us-east-1:123456789012:function:Notify": _ -> String,
    },
);

struct Handlers;

impl two_tasks::Handler for Handlers {
    async fn reserve(&self, skus: Skus, _ctx: TaskContext) -> Result<u32, TaskError> {
        Ok(u32::try_from(skus.len()).unwrap_or(u32::MAX))
    }
    async fn notify(&self, reserved: Value, _ctx: TaskContext) -> Result<String, TaskError> {
        Ok(format!("reserved {reserved}"))
    }
}

pub(crate) fn main() {
    let run = two_tasks::run_with(&Handlers, json!(["a", "b"]), RunOptions::virtual_time());
    let result = wfc_runtime::block_on_virtual(run);
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!(result.output, Some(json!("reserved 2")));
    let run = two_tasks::run_with(&Handlers, json!({ "not": "a list" }), RunOptions::virtual_time());
    let failure = wfc_runtime::block_on_virtual(run).error.map(|f| f.error);
    assert_eq!(failure.as_deref(), Some("Wfc.TypeMismatch"));
}
