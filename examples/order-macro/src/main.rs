//! Runs the order workflow twice against in-memory services: an order that succeeds after the
//! payment gateway fails transiently twice (the Task's `Retry` recovers), and an order whose card
//! is declined (the `Catch` routes it to the compensation path). Prints outputs and histories.
//!
//! Three of the four handler methods are typed (`types = { … }` below): they take and return the
//! serde types of this file instead of JSON; `send_notification` stays JSON. An order whose data
//! does not fit the types (a quantity that is not a number) fails its Task with
//! `Wfc.TypeMismatch`, naming the resource and the field (the tests at the end).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use wfc_runtime::{ExecutionResult, RunOptions, TaskContext, TaskError, Value, json};

wfc_runtime::include_workflow!(
    path = "workflows/order.asl.json",
    types = {
        "arn:aws:lambda:us-east-1:123456789012:function:CheckStock": StockQuery -> StockReply,
        "arn:aws:lambda:us-east-1:123456789012:function:TakePayment": Payment -> Receipt,
        // In the `Fulfil` Parallel's first branch.
        "arn:aws:lambda:us-east-1:123456789012:function:ReserveStock": Reservation -> Reserved,
    },
);

/// One line of an order.
#[derive(Debug, Clone, Deserialize)]
pub struct Line {
    sku: String,
    quantity: u64,
}

/// `Check Stock`'s input (its `Parameters`: the order's items).
#[derive(Debug, Deserialize)]
pub struct StockQuery {
    items: Vec<Line>,
}

/// `Check Stock`'s result.
#[derive(Debug, Serialize)]
pub struct StockReply {
    available: bool,
}

/// `Take Payment`'s input.
#[derive(Debug, Deserialize)]
pub struct Payment {
    order_id: String,
    card: String,
    amount: f64,
}

/// `Take Payment`'s result.
#[derive(Debug, Serialize)]
pub struct Receipt {
    transaction: String,
    charged: f64,
    attempts: u32,
}

/// `Reserve Stock`'s input.
#[derive(Debug, Deserialize)]
pub struct Reservation {
    order_id: String,
    items: Vec<Line>,
}

/// `Reserve Stock`'s result.
#[derive(Debug, Serialize)]
pub struct Reserved {
    order_id: String,
    reserved: usize,
}

/// The services the workflow's Tasks call: stock levels, a flaky payment gateway, an outbox.
struct Shop {
    /// Units on hand per SKU (stock is checked, then reserved once payment succeeded).
    inventory: Mutex<BTreeMap<String, u64>>,
    /// How many more gateway calls fail with a transient error before it recovers.
    gateway_hiccups: AtomicU32,
    /// Charged amounts, by order id.
    ledger: Mutex<Vec<(String, f64)>>,
    /// Messages sent to customers.
    outbox: Mutex<Vec<(String, String)>>,
}

/// A task failure that `Retry`/`Catch` match on by name.
fn fail(error: &str, cause: impl Into<String>) -> TaskError {
    TaskError::new(error, cause)
}

impl order::Handler for Shop {
    async fn check_stock(&self, query: StockQuery, _ctx: TaskContext) -> Result<StockReply, TaskError> {
        let inventory = self.inventory.lock().map_err(|_| fail("States.TaskFailed", "inventory lock poisoned"))?;
        for Line { sku, quantity } in &query.items {
            let on_hand = inventory.get(sku).copied().unwrap_or(0);
            if on_hand < *quantity {
                return Err(fail("OutOfStock", format!("{sku}: {quantity} wanted, {on_hand} on hand")));
            }
        }
        Ok(StockReply { available: true })
    }

    async fn take_payment(&self, payment: Payment, ctx: TaskContext) -> Result<Receipt, TaskError> {
        // The gateway times out on its first calls; the workflow's Retry handles that.
        let hiccup =
            self.gateway_hiccups.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if hiccup {
            return Err(fail("Payment.Transient", format!("gateway timeout (attempt {})", ctx.retry_count() + 1)));
        }
        let Payment { order_id, card, amount } = payment;
        if card.starts_with("4000") {
            let last4: String = card.chars().skip(card.chars().count().saturating_sub(4)).collect();
            return Err(fail("Payment.Declined", format!("card ending {last4} was declined")));
        }
        let mut ledger = self.ledger.lock().map_err(|_| fail("States.TaskFailed", "ledger lock poisoned"))?;
        ledger.push((order_id, amount));
        Ok(Receipt { transaction: format!("txn-{}", ledger.len()), charged: amount, attempts: ctx.retry_count() + 1 })
    }

    async fn reserve_stock(&self, reservation: Reservation, _ctx: TaskContext) -> Result<Reserved, TaskError> {
        let mut inventory = self.inventory.lock().map_err(|_| fail("States.TaskFailed", "inventory lock poisoned"))?;
        let lines = &reservation.items;
        // Check everything first so a short line reserves nothing.
        for Line { sku, quantity } in lines {
            if inventory.get(sku).copied().unwrap_or(0) < *quantity {
                return Err(fail("OutOfStock", format!("{sku} sold out before it could be reserved")));
            }
        }
        for Line { sku, quantity } in lines {
            if let Some(on_hand) = inventory.get_mut(sku) {
                *on_hand -= quantity;
            }
        }
        Ok(Reserved { order_id: reservation.order_id, reserved: lines.len() })
    }

    async fn send_notification(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        let to = input["to"].as_str().ok_or_else(|| fail("InvalidOrder", "no customer to notify"))?.to_owned();
        let message = input["message"].as_str().unwrap_or_default().to_owned();
        self.outbox.lock().map_err(|_| fail("States.TaskFailed", "outbox lock poisoned"))?.push((to.clone(), message));
        Ok(json!({ "sent_to": to }))
    }
}

fn report(title: &str, result: &ExecutionResult) {
    println!("== {title}: {:?}", result.status);
    match (&result.output, &result.error) {
        (Some(output), _) => println!("output: {}", serde_json::to_string_pretty(output).unwrap_or_default()),
        (None, Some(error)) => println!("error: {} ({})", error.error, error.cause),
        (None, None) => {}
    }
    println!("history:");
    for event in &result.history {
        let name = event.details.get("name").and_then(Value::as_str).unwrap_or("");
        println!("  {:>3} {:<28} {name}", event.id, event.event_type.to_string());
    }
}

fn shop() -> Shop {
    Shop {
        inventory: Mutex::new(BTreeMap::from([("book".to_owned(), 5), ("pen".to_owned(), 10)])),
        gateway_hiccups: AtomicU32::new(2),
        ledger: Mutex::new(Vec::new()),
        outbox: Mutex::new(Vec::new()),
    }
}

/// An order that goes through (after two transient payment failures).
fn good_order() -> Value {
    json!({
        "order_id": "A-1001", "customer": "ada@example.com", "card": "4242424242424242", "amount": 42.5,
        "items": [ { "sku": "book", "quantity": 2 }, { "sku": "pen", "quantity": 3 } ]
    })
}

/// An order whose card is declined.
fn declined_order() -> Value {
    json!({
        "order_id": "A-1002", "customer": "bob@example.com", "card": "4000000000000002", "amount": 10,
        "items": [ { "sku": "pen", "quantity": 1 } ]
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let shop = shop();
    let result = order::run_with(&shop, good_order(), RunOptions::real().with_name("A-1001")).await;
    report("order A-1001", &result);

    let result = order::run_with(&shop, declined_order(), RunOptions::real().with_name("A-1002")).await;
    report("order A-1002", &result);

    println!("== services afterwards");
    if let (Ok(inventory), Ok(ledger), Ok(outbox)) = (shop.inventory.lock(), shop.ledger.lock(), shop.outbox.lock()) {
        println!("inventory: {:?}", *inventory);
        println!("ledger: {:?}", *ledger);
        println!("outbox: {:?}", *outbox);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfc_runtime::Status;

    fn run(shop: &Shop, input: Value) -> ExecutionResult {
        wfc_runtime::block_on_virtual(order::run_with(shop, input, RunOptions::virtual_time()))
    }

    /// The typed methods got the order's data as their types and their results went back into
    /// the document as JSON, in the Parallel branch too; the untyped one ran beside them.
    #[test]
    fn typed_handlers_run_the_good_order() {
        let shop = shop();
        let result = run(&shop, good_order());
        assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
        let output = result.output.expect("output");
        assert_eq!(output["stock"], json!({ "available": true }));
        assert_eq!(output["payment"], json!({ "transaction": "txn-1", "charged": 42.5, "attempts": 3 }));
        assert_eq!(output["fulfilment"]["reservation"], json!({ "order_id": "A-1001", "reserved": 2 }));
        assert_eq!(output["fulfilment"]["notification"], json!({ "sent_to": "ada@example.com" }));
        assert_eq!(shop.inventory.lock().expect("lock").get("book"), Some(&3));
    }

    #[test]
    fn a_declined_card_is_still_caught() {
        let shop = shop();
        shop.gateway_hiccups.store(0, Ordering::SeqCst);
        let result = run(&shop, declined_order());
        assert_eq!(result.error.map(|f| f.error).as_deref(), Some("OrderFailed"));
        assert_eq!(shop.outbox.lock().expect("lock").len(), 1, "the compensation path told the customer");
    }

    /// A quantity that is not a number does not fit `Line`: `Check Stock` fails with
    /// `Wfc.TypeMismatch` naming its resource and the field, and the handler never runs.
    #[test]
    fn an_order_that_does_not_fit_the_types_fails_the_task() {
        let shop = shop();
        let mut order = good_order();
        order["items"][1]["quantity"] = json!("three");
        let result = run(&shop, order);
        let failure = result.error.expect("failed");
        assert_eq!(failure.error, "Wfc.TypeMismatch");
        assert!(
            failure.cause.starts_with(
                "Task \"Check Stock\" (resource \"arn:aws:lambda:us-east-1:123456789012:function:CheckStock\"): \
                 its input does not convert to `order_macro::StockQuery` at field `items[1].quantity`: invalid type: \
                 string \"three\", expected u64"
            ),
            "{}",
            failure.cause
        );
        assert!(shop.ledger.lock().expect("lock").is_empty());
    }
}
