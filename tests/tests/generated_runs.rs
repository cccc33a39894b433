//! End-to-end runs of generated code: the snapshot fixture `order.asl.json` compiled by the real
//! macro and run with real (scripted, in-memory) handlers on the virtual clock.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::json;
use wfc_runtime::{EventType, ExecutionResult, RunOptions, Status, TaskContext, TaskError, Value};

wfc_runtime::include_workflow!("../wfc-core/tests/snapshots/fixtures/order.asl.json");

/// Handlers whose payment outcomes are scripted per call, recording every call.
#[derive(Default)]
struct Shop {
    /// Error names the payment task fails with, one per call, before it succeeds.
    payment_errors: Mutex<VecDeque<&'static str>>,
    /// Whether the stock check panics instead of answering.
    stock_check_panics: bool,
    /// `(method, retry count)` of every call, in order.
    calls: Mutex<Vec<(&'static str, u32)>>,
}

impl Shop {
    fn record(&self, method: &'static str, ctx: &TaskContext) {
        self.calls.lock().expect("calls lock").push((method, ctx.retry_count()));
    }

    fn calls(&self) -> Vec<(&'static str, u32)> {
        self.calls.lock().expect("calls lock").clone()
    }
}

impl order::Handler for Shop {
    async fn check_stock(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        self.record("check_stock", &ctx);
        if self.stock_check_panics {
            panic!("inventory service exploded");
        }
        let items = input["items"].as_array().map_or(0, Vec::len);
        Ok(json!({ "in_stock": items }))
    }

    async fn take_payment(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        self.record("take_payment", &ctx);
        match self.payment_errors.lock().expect("payment lock").pop_front() {
            Some(error) => Err(TaskError::new(error, "scripted")),
            None => Ok(json!({ "charged": input["amount"] })),
        }
    }

    async fn reserve_stock(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        self.record("reserve_stock", &ctx);
        Ok(json!({ "reserved_for": input["customer"] }))
    }

    async fn send_notification(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        self.record("send_notification", &ctx);
        Ok(json!({ "notified": input["customer"] }))
    }

    async fn release_stock(&self, _input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        self.record("release_stock", &ctx);
        Ok(json!("released"))
    }
}

fn order_input() -> Value {
    json!({ "customer": "ada", "amount": 30, "items": [ { "sku": "book" } ] })
}

fn run(shop: &Shop, input: Value) -> ExecutionResult {
    wfc_runtime::block_on_virtual(order::run_with(shop, input, RunOptions::virtual_time()))
}

fn count(result: &ExecutionResult, event: EventType) -> usize {
    result.history.iter().filter(|e| e.event_type == event).count()
}

#[test]
fn happy_path_output_and_retries() {
    let shop = Shop {
        payment_errors: Mutex::new(VecDeque::from(["Payment.Transient", "Payment.Transient"])),
        ..Shop::default()
    };
    let result = run(&shop, order_input());
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let output = result.output.clone().expect("output");
    assert_eq!(output["stock"], json!({ "in_stock": 1 }));
    assert_eq!(output["payment"], json!({ "charged": 30 }));
    // The Parallel's ResultSelector named each branch's output.
    let fulfilment = json!({ "reservation": { "reserved_for": "ada" }, "notification": { "notified": "ada" } });
    assert_eq!(output["fulfilment"], fulfilment);
    // Two transient failures, retried (MaxAttempts 3): three payment attempts, 0, 1, 2.
    let payments: Vec<u32> = shop.calls().iter().filter(|(m, _)| *m == "take_payment").map(|(_, n)| *n).collect();
    assert_eq!(payments, [0, 1, 2]);
    // Bare Lambda function ARNs: AWS records their attempts as LambdaFunction* events.
    assert_eq!(count(&result, EventType::LambdaFunctionFailed), 2);
    // IntervalSeconds 1, BackoffRate 1.0: two one-second waits on the virtual clock.
    assert!(result.elapsed >= std::time::Duration::from_secs(2), "{:?}", result.elapsed);
}

#[test]
fn catch_routes_a_declined_payment_to_compensation() {
    let shop = Shop { payment_errors: Mutex::new(VecDeque::from(["Payment.Declined"])), ..Shop::default() };
    let result = run(&shop, order_input());
    assert_eq!(result.status, Status::Failed);
    let error = result.error.expect("error");
    assert_eq!((error.error.as_str(), error.cause.as_str()), ("OrderFailed", "The order could not be completed."));
    let methods: Vec<&str> = shop.calls().iter().map(|(m, _)| *m).collect();
    assert_eq!(methods, ["check_stock", "take_payment", "release_stock"], "declined payments are not retried");
}

#[test]
fn exhausted_retries_fail_with_the_task_error() {
    let errors = VecDeque::from(["Payment.Transient"; 4]);
    let shop = Shop { payment_errors: Mutex::new(errors), ..Shop::default() };
    let result = run(&shop, order_input());
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.error.expect("error").error, "Payment.Transient");
    assert_eq!(shop.calls().iter().filter(|(m, _)| *m == "take_payment").count(), 4, "one run plus three retries");
}

#[test]
fn choice_rejects_an_invalid_order() {
    let shop = Shop::default();
    let result = run(&shop, json!({ "customer": "ada", "amount": 0, "items": [] }));
    assert_eq!(result.error.expect("error").error, "OrderFailed");
    assert!(shop.calls().is_empty(), "no task runs for an invalid order");
}

#[test]
fn a_panicking_handler_fails_the_execution_instead_of_crashing() {
    let shop = Shop { stock_check_panics: true, ..Shop::default() };
    let result = run(&shop, order_input());
    assert_eq!(result.status, Status::Failed);
    let error = result.error.expect("error");
    assert_eq!(error.error, "States.TaskFailed");
    assert!(error.cause.contains("inventory service exploded"), "{}", error.cause);
}

#[test]
fn run_returns_output_or_failure() {
    let shop = Shop::default();
    let output = wfc_runtime::block_on_virtual(order::run(&shop, order_input())).expect("succeeds");
    assert_eq!(output["payment"]["charged"], 30);
}

#[test]
fn state_serde_round_trip_and_resume() {
    let state = order::State::TakePayment(json!({ "amount": 5, "customer": "bob", "items": [] }));
    let saved = serde_json::to_value(&state).expect("serialize");
    assert_eq!(saved, json!({ "Take Payment": { "amount": 5, "customer": "bob", "items": [] } }));
    let restored: order::State = serde_json::from_value(saved).expect("deserialize");
    assert_eq!(restored, state);
    assert_eq!(restored.name(), "Take Payment");
    assert!(serde_json::from_value::<order::State>(json!({ "No Such State": {} })).is_err());

    // Continue a checkpointed execution from the restored state: only the rest of the workflow runs.
    let shop = Shop::default();
    let ir = order::ir().expect("embedded IR");
    let exec = wfc_runtime::Execution::start(ir, restored.input(), RunOptions::virtual_time());
    let output = wfc_runtime::block_on_virtual(order::resume(&shop, &exec, restored)).expect("succeeds");
    assert_eq!(output["payment"]["charged"], 5);
    let methods: Vec<&str> = shop.calls().iter().map(|(m, _)| *m).collect();
    assert!(!methods.contains(&"check_stock"), "{methods:?}");
    assert!(methods.contains(&"reserve_stock") && methods.contains(&"send_notification"), "{methods:?}");
}
