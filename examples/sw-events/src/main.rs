//! Runs the event-driven fulfilment workflow (workflows/fulfilment.sw.yaml) on virtual time: an
//! order event starts the work, the bank's payment confirmation arrives as a callback event two
//! minutes later (a confirmation for another order is ignored: correlation by `orderid`), the
//! warehouse is busy once (the state's `retry` waits 30 s), and the shipment is announced with a
//! produced CloudEvent. Prints the output, the produced events and the history.

use std::sync::atomic::{AtomicU32, Ordering};

use wfc_runtime::events::{EventBus, with_deliveries};
use wfc_runtime::{ExecutionResult, RunOptions, TaskContext, TaskError, Value, json};

wfc_runtime::include_workflow!("workflows/fulfilment.sw.yaml");

/// The services the workflow's functions call.
struct Services {
    /// How many more times the warehouse answers "busy".
    warehouse_busy: AtomicU32,
}

impl fulfilment::Handler for Services {
    async fn reserve_stock(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        let lines = input["items"].as_array().map_or(0, Vec::len);
        Ok(json!({ "reservation": format!("R-{lines}-lines") }))
    }

    async fn request_payment(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        // The bank answers later with a PaymentConfirmed event; here it only accepts the request.
        Ok(json!({ "paymentRequested": input["amount"] }))
    }

    async fn ship(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        if self.warehouse_busy.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Err(TaskError::new("WarehouseBusy", "all loading bays are in use"));
        }
        let order = input["order"].as_str().unwrap_or("unknown");
        Ok(json!({ "tracking": format!("TRK-{order}"), "execution": ctx.execution_name() }))
    }
}

/// A CloudEvent as the shop and the bank send them.
fn cloud_event(event_type: &str, source: &str, order_id: &str, data: Value) -> Value {
    json!({
        "specversion": "1.0",
        "id": format!("{source}-{order_id}-{event_type}"),
        "type": event_type,
        "source": source,
        "orderid": order_id,
        "data": data,
    })
}

/// Runs one execution with the events the outside world sends, at their times.
fn run(services: &Services) -> (ExecutionResult, Vec<Value>) {
    let bus = EventBus::new();
    let schedule = vec![
        (
            0.0,
            cloud_event(
                "shop.order.placed",
                "shop",
                "o-1",
                json!({ "order": { "id": "o-1", "total": 42.5, "items": [{ "sku": "mug" }, { "sku": "tea" }] } }),
            ),
        ),
        (
            60.0,
            cloud_event(
                "bank.payment.confirmed",
                "bank",
                "o-2",
                json!({ "payment": { "status": "paid", "order": "o-2" } }),
            ),
        ),
        (
            120.0,
            cloud_event(
                "bank.payment.confirmed",
                "bank",
                "o-1",
                json!({ "payment": { "status": "paid", "order": "o-1" } }),
            ),
        ),
    ];
    let options = RunOptions::virtual_time().with_name("fulfilment-o-1").with_events(bus.clone());
    let result = wfc_runtime::block_on_virtual(with_deliveries(
        &bus,
        schedule,
        fulfilment::run_with(services, json!({}), options),
    ));
    (result, bus.produced())
}

fn main() {
    let services = Services { warehouse_busy: AtomicU32::new(1) };
    let (result, produced) = run(&services);
    println!("status: {:?} after {} s of virtual time", result.status, result.elapsed.as_secs());
    println!("output: {}", result.output.clone().unwrap_or(Value::Null));
    for event in &produced {
        println!("produced: {event}");
    }
    for event in &result.history {
        println!("{:>3} {:<18} {}", event.id, event.event_type.name(), event.details);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_paid_shipped_and_announced() {
        let services = Services { warehouse_busy: AtomicU32::new(1) };
        let (result, produced) = run(&services);
        assert_eq!(result.status, wfc_runtime::Status::Succeeded, "{:?}", result.error);
        // 120 s until the payment event, then one 30 s retry of the busy warehouse.
        assert_eq!(result.elapsed.as_secs(), 150);
        let output = result.output.unwrap_or(Value::Null);
        assert_eq!(output["payment"]["order"], "o-1");
        assert_eq!(output["tracking"], "TRK-o-1");
        assert_eq!(produced.len(), 1);
        assert_eq!(produced[0]["type"], "shop.order.shipped");
        assert_eq!(produced[0]["orderid"], "o-1");
        assert_eq!(produced[0]["data"], json!({ "tracking": "TRK-o-1" }));
    }
}
