//! Runs the order workflow twice against in-memory services: an order that succeeds after the
//! payment gateway fails transiently twice (the Task's `Retry` recovers), and an order whose card
//! is declined (the `Catch` routes it to the compensation path). Prints outputs and histories.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use wfc_runtime::{ExecutionResult, RunOptions, TaskContext, TaskError, Value, json};

wfc_runtime::include_workflow!("workflows/order.asl.json");

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

/// The `(sku, quantity)` lines of an order's `items`.
fn lines(input: &Value) -> Result<Vec<(String, u64)>, TaskError> {
    let items = input["items"].as_array().ok_or_else(|| fail("InvalidOrder", "`items` must be an array"))?;
    items
        .iter()
        .map(|item| match (item["sku"].as_str(), item["quantity"].as_u64()) {
            (Some(sku), Some(quantity)) => Ok((sku.to_owned(), quantity)),
            _ => Err(fail("InvalidOrder", format!("bad order line {item}"))),
        })
        .collect()
}

impl order::Handler for Shop {
    async fn check_stock(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        let inventory = self.inventory.lock().map_err(|_| fail("States.TaskFailed", "inventory lock poisoned"))?;
        for (sku, wanted) in lines(&input)? {
            let on_hand = inventory.get(&sku).copied().unwrap_or(0);
            if on_hand < wanted {
                return Err(fail("OutOfStock", format!("{sku}: {wanted} wanted, {on_hand} on hand")));
            }
        }
        Ok(json!({ "available": true }))
    }

    async fn take_payment(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        // The gateway times out on its first calls; the workflow's Retry handles that.
        let hiccup =
            self.gateway_hiccups.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if hiccup {
            return Err(fail("Payment.Transient", format!("gateway timeout (attempt {})", ctx.retry_count() + 1)));
        }
        let card = input["card"].as_str().unwrap_or_default();
        let amount = input["amount"].as_f64().ok_or_else(|| fail("InvalidOrder", "`amount` must be a number"))?;
        if card.starts_with("4000") {
            let last4: String = card.chars().skip(card.chars().count().saturating_sub(4)).collect();
            return Err(fail("Payment.Declined", format!("card ending {last4} was declined")));
        }
        let order_id = input["order_id"].as_str().unwrap_or("unknown").to_owned();
        let mut ledger = self.ledger.lock().map_err(|_| fail("States.TaskFailed", "ledger lock poisoned"))?;
        ledger.push((order_id.clone(), amount));
        Ok(
            json!({ "transaction": format!("txn-{}", ledger.len()), "charged": amount, "attempts": ctx.retry_count() + 1 }),
        )
    }

    async fn reserve_stock(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        let mut inventory = self.inventory.lock().map_err(|_| fail("States.TaskFailed", "inventory lock poisoned"))?;
        let lines = lines(&input)?;
        // Check everything first so a short line reserves nothing.
        for (sku, wanted) in &lines {
            if inventory.get(sku).copied().unwrap_or(0) < *wanted {
                return Err(fail("OutOfStock", format!("{sku} sold out before it could be reserved")));
            }
        }
        for (sku, wanted) in &lines {
            if let Some(on_hand) = inventory.get_mut(sku) {
                *on_hand -= wanted;
            }
        }
        Ok(json!({ "order_id": input["order_id"], "reserved": lines.len() }))
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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let shop = Shop {
        inventory: Mutex::new(BTreeMap::from([("book".to_owned(), 5), ("pen".to_owned(), 10)])),
        gateway_hiccups: AtomicU32::new(2),
        ledger: Mutex::new(Vec::new()),
        outbox: Mutex::new(Vec::new()),
    };

    let good = json!({
        "order_id": "A-1001", "customer": "ada@example.com", "card": "4242424242424242", "amount": 42.5,
        "items": [ { "sku": "book", "quantity": 2 }, { "sku": "pen", "quantity": 3 } ]
    });
    let result = order::run_with(&shop, good, RunOptions::real().with_name("A-1001")).await;
    report("order A-1001", &result);

    let declined = json!({
        "order_id": "A-1002", "customer": "bob@example.com", "card": "4000000000000002", "amount": 10,
        "items": [ { "sku": "pen", "quantity": 1 } ]
    });
    let result = order::run_with(&shop, declined, RunOptions::real().with_name("A-1002")).await;
    report("order A-1002", &result);

    println!("== services afterwards");
    if let (Ok(inventory), Ok(ledger), Ok(outbox)) = (shop.inventory.lock(), shop.ledger.lock(), shop.outbox.lock()) {
        println!("inventory: {:?}", *inventory);
        println!("ledger: {:?}", *ledger);
        println!("outbox: {:?}", *outbox);
    }
}
