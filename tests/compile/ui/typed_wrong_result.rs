//! A typed handler method that returns the wrong type is a compile error in the `impl`: the
//! trait says what the declared result type is.
use wfc_runtime::{TaskContext, TaskError, Value};

wfc_runtime::include_workflow!(
    path = "ui/fixtures/two_tasks.asl.json",
    types = { "arn:aws:lambda:us-east-1:123456789012:function:Reserve": Vec<String> -> u32 },
);

struct Handlers;

impl two_tasks::Handler for Handlers {
    async fn reserve(&self, skus: Vec<String>, _ctx: TaskContext) -> Result<String, TaskError> {
        Ok(skus.join(","))
    }
    async fn notify(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
}

fn main() {}
