//! A declared input type that serde cannot deserialize is rustc's error at the type in the
//! macro call.
use wfc_runtime::{TaskContext, TaskError, Value};

wfc_runtime::include_workflow!(
    path = "ui/fixtures/two_tasks.asl.json",
    types = { "arn:aws:lambda:us-east-1:123456789012:function:Reserve": Order -> u32 },
);

/// Not `Deserialize`.
struct Order;

struct Handlers;

impl two_tasks::Handler for Handlers {
    async fn reserve(&self, _order: Order, _ctx: TaskContext) -> Result<u32, TaskError> {
        Ok(1)
    }
    async fn notify(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
}

fn main() {}
