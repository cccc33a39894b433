//! The order workflow compiles warning-free, its `Handler` can be implemented with `async fn`s,
//! and the generated futures are `Send` (so executions can be spawned on a multi-threaded runtime).
#![deny(warnings, missing_docs)]

use wfc_runtime::{TaskContext, TaskError, Value};

wfc_runtime::include_workflow!("fixtures/order.asl.json");

struct Shop;

impl order::Handler for Shop {
    async fn check_stock(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
    async fn take_payment(&self, _input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        Err(TaskError::new("Payment.Declined", format!("attempt {}", ctx.retry_count())))
    }
    async fn reserve_stock(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
    async fn send_notification(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
    async fn release_stock(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(input)
    }
}

fn assert_send<T: Send>(_: &T) {}

pub(crate) fn main() {
    let shop = Shop;
    let run = order::run(&shop, Value::Null);
    assert_send(&run);
    drop(run);
    let state = order::State::CheckStock(Value::Null);
    assert_eq!(state.name(), "Check Stock");
}
