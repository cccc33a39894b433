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
    let exec =
        wfc_runtime::Execution::start(&order::DEFINITION_ID.workflow, restored.input(), RunOptions::virtual_time());
    let output = wfc_runtime::block_on_virtual(order::resume(&shop, &exec, restored)).expect("succeeds");
    assert_eq!(output["payment"]["charged"], 5);
    let methods: Vec<&str> = shop.calls().iter().map(|(m, _)| *m).collect();
    assert!(!methods.contains(&"check_stock"), "{methods:?}");
    assert!(methods.contains(&"reserve_stock") && methods.contains(&"send_notification"), "{methods:?}");
}

/// Typed handler methods (`include_workflow!(…, types = { … })`): the fixture's Price, Label (in
/// a Parallel branch) and Pack (in a Map item processor) take and return Rust types; Quote stays
/// JSON. `typed::` is its own module so its types and the generated one sit together.
mod typed {
    use std::sync::Arc;

    use serde::{Deserialize, Serialize};
    use serde_json::json;
    use wfc_journal::{Journal, Opened};
    use wfc_runtime::durable::Store;
    use wfc_runtime::{Clock, ExecutionResult, RunOptions, Status, TaskContext, TaskError, Value};
    use wfc_sqlite::SqliteStore;

    wfc_runtime::include_workflow!(
        path = "typed/fulfil.asl.json",
        types = {
            "arn:aws:lambda:us-east-1:123456789012:function:Price": PriceQuery -> PriceReply,
            "arn:aws:lambda:us-east-1:123456789012:function:Label": _ -> String,
            "arn:aws:lambda:us-east-1:123456789012:function:Pack": Line -> Parcel,
        },
    );

    // `pub(crate)`: as visible as the generated module (see the README, "Typed handler methods").

    /// `Price`'s input: the quoted lines' SKUs.
    #[derive(Debug, Deserialize)]
    pub(crate) struct PriceQuery {
        skus: Vec<String>,
    }

    /// `Price`'s result. `surcharges` has no JSON form when present (its keys are not
    /// strings): what a result that does not convert looks like.
    #[derive(Debug, Serialize)]
    pub(crate) struct PriceReply {
        total: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        surcharges: Option<std::collections::BTreeMap<(u8, u8), u32>>,
    }

    /// One quoted line: `Pack`'s input, one Map item.
    #[derive(Debug, Deserialize)]
    pub(crate) struct Line {
        sku: String,
        qty: u32,
    }

    /// `Pack`'s result.
    #[derive(Debug, Serialize)]
    pub(crate) struct Parcel {
        sku: String,
        weight: u32,
    }

    /// Handlers that record their calls; `Pack` can be made to hang (a process that stops).
    struct Warehouse {
        quote: Value,
        calls: std::sync::Mutex<Vec<&'static str>>,
        /// `Price` answers with surcharges that do not serialize.
        price_unserializable: bool,
        pack_hangs: bool,
        packing: tokio::sync::Notify,
    }

    impl Warehouse {
        fn new(quote: Value) -> Warehouse {
            Warehouse {
                quote,
                calls: Default::default(),
                price_unserializable: false,
                pack_hangs: false,
                packing: tokio::sync::Notify::new(),
            }
        }

        fn record(&self, method: &'static str) {
            self.calls.lock().expect("calls lock").push(method);
        }

        fn calls(&self, method: &str) -> usize {
            self.calls.lock().expect("calls lock").iter().filter(|m| **m == method).count()
        }
    }

    impl fulfil::Handler for Warehouse {
        async fn quote(&self, _input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
            self.record("quote");
            Ok(self.quote.clone())
        }

        async fn price(&self, query: PriceQuery, _ctx: TaskContext) -> Result<PriceReply, TaskError> {
            self.record("price");
            let surcharges = self.price_unserializable.then(|| std::collections::BTreeMap::from([((1, 2), 5)]));
            Ok(PriceReply { total: 10 * u32::try_from(query.skus.len()).unwrap_or(u32::MAX), surcharges })
        }

        async fn label(&self, input: Value, _ctx: TaskContext) -> Result<String, TaskError> {
            self.record("label");
            Ok(format!("label for {}", input["total"]))
        }

        async fn pack(&self, line: Line, _ctx: TaskContext) -> Result<Parcel, TaskError> {
            self.record("pack");
            if self.pack_hangs {
                self.packing.notify_one();
                std::future::pending::<()>().await;
            }
            Ok(Parcel { sku: line.sku, weight: line.qty })
        }
    }

    fn lines(second: Value) -> Value {
        json!({ "lines": [ { "sku": "a", "qty": 1 }, second ] })
    }

    fn run(warehouse: &Warehouse) -> ExecutionResult {
        wfc_runtime::block_on_virtual(fulfil::run_with(warehouse, json!({}), RunOptions::virtual_time()))
    }

    fn expected_output(quote: &Value) -> Value {
        json!({
            "quote": quote,
            "price": { "total": 20 },
            "fulfilment": [ "label for 20", [ { "sku": "a", "weight": 1 }, { "sku": "b", "weight": 2 } ] ]
        })
    }

    #[test]
    fn typed_methods_run_in_parallel_branches_and_map_items_beside_untyped_ones() {
        let quote = lines(json!({ "sku": "b", "qty": 2 }));
        let warehouse = Warehouse::new(quote.clone());
        let result = run(&warehouse);
        assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
        assert_eq!(result.output, Some(expected_output(&quote)));
        assert_eq!((warehouse.calls("price"), warehouse.calls("label"), warehouse.calls("pack")), (1, 1, 2));
    }

    /// A SKU that is a number does not fit `PriceQuery`: the Task fails with `Wfc.TypeMismatch`
    /// naming the resource and the field, the handler is not called, and the Catch takes it.
    #[test]
    fn an_input_that_does_not_convert_fails_the_task_and_is_caught() {
        let warehouse = Warehouse::new(lines(json!({ "sku": 7, "qty": 2 })));
        let result = run(&warehouse);
        assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
        let error = &result.output.expect("output")["error"];
        assert_eq!(error["Error"], "Wfc.TypeMismatch");
        let cause = error["Cause"].as_str().expect("cause");
        assert!(
            cause.starts_with(
                "Task \"Price\" (resource \"arn:aws:lambda:us-east-1:123456789012:function:Price\"): its input does \
                 not convert to `generated_runs::typed::PriceQuery` at field `skus[1]`: invalid type: integer `7`, \
                 expected a string"
            ),
            "{cause}"
        );
        assert_eq!(warehouse.calls("price"), 0, "a mismatch fails the attempt before the handler runs");
        let failed = result.history.iter().find(|e| e.event_type == wfc_runtime::EventType::LambdaFunctionFailed);
        assert_eq!(failed.map(|e| &e.details["error"]), Some(&json!("Wfc.TypeMismatch")), "{:?}", result.history);
    }

    /// The other way: a typed result that does not serialize fails the Task the same way, caught.
    #[test]
    fn a_result_that_does_not_convert_fails_the_task_and_is_caught() {
        let mut warehouse = Warehouse::new(lines(json!({ "sku": "b", "qty": 2 })));
        warehouse.price_unserializable = true;
        let result = run(&warehouse);
        assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
        let error = &result.output.expect("output")["error"];
        assert_eq!(error["Error"], "Wfc.TypeMismatch");
        let cause = error["Cause"].as_str().expect("cause");
        assert!(
            cause.starts_with(
                "Task \"Price\" (resource \"arn:aws:lambda:us-east-1:123456789012:function:Price\"): its result does \
                 not convert from `generated_runs::typed::PriceReply` at field `surcharges"
            ),
            "{cause}"
        );
        assert!(cause.ends_with("key must be a string"), "{cause}");
        assert_eq!(warehouse.calls("price"), 1);
    }

    /// In a Map item processor inside a Parallel branch, uncaught: the execution fails with it.
    #[test]
    fn a_map_item_that_does_not_convert_fails_the_execution_naming_the_field() {
        let warehouse = Warehouse::new(lines(json!({ "sku": "b", "qty": "two" })));
        let failure = run(&warehouse).error.expect("failed");
        assert_eq!(failure.error, "Wfc.TypeMismatch");
        assert!(
            failure.cause.contains("Task \"Pack\" (resource \"arn:aws:lambda:us-east-1:123456789012:function:Pack\")")
        );
        assert!(failure.cause.contains("`generated_runs::typed::Line` at field `qty`"), "{}", failure.cause);
    }

    /// Durable: the journal holds JSON. A run stopped inside the Map (Pack hangs) and resumed
    /// replays Quote and Price from the journal, calling neither again, and ends as a run that
    /// was never stopped.
    #[tokio::test]
    async fn a_resumed_durable_run_replays_typed_results_without_calling_the_handlers() {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().expect("store"));
        let quote = lines(json!({ "sku": "b", "qty": 2 }));
        let open = || async {
            match Journal::open_definition_id(
                Arc::clone(&store),
                "typed-1",
                &fulfil::DEFINITION_ID,
                &json!({}),
                &Clock::real(),
            )
            .await
            {
                Ok(Opened::Running(journal)) => journal,
                other => panic!("{other:?}"),
            }
        };
        let mut first = Warehouse::new(quote.clone());
        first.pack_hangs = true;
        let run = fulfil::run_with(&first, json!({}), RunOptions::real().with_journal(open().await));
        tokio::select! {
            result = run => panic!("Pack hangs, so the run cannot end: {result:?}"),
            () = first.packing.notified() => {}
        }
        assert_eq!((first.calls("quote"), first.calls("price")), (1, 1));

        let second = Warehouse::new(json!("a different quote: replay must not ask again"));
        let result = fulfil::run_with(&second, json!({}), RunOptions::real().with_journal(open().await)).await;
        assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
        assert_eq!(result.output, Some(expected_output(&quote)));
        assert_eq!((second.calls("quote"), second.calls("price")), (0, 0), "replayed from the journal");
        assert_eq!(second.calls("pack"), 2, "the item that was in flight runs again");
    }
}
