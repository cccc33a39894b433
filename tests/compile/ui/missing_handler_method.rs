//! Forgetting a Task's handler method is a compile error, not a run-time surprise.
use wfc_runtime::{TaskContext, TaskError, Value};

wfc_runtime::include_workflow!("ui/fixtures/two_tasks.asl.json");

struct Handlers;

impl two_tasks::Handler for Handlers {
    async fn reserve(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
}

fn main() {}
