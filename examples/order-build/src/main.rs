//! Runs the shipment workflow that build.rs compiled into `OUT_DIR/shipment.rs`, against an
//! in-memory carrier whose parcels advance one step per tracking call.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use wfc_runtime::{RunOptions, TaskContext, TaskError, Value, json};

wfc_runtime::include_workflow_out!("shipment");

/// The parcel's journey, one step per tracking call.
const STEPS: [&str; 4] = ["label_created", "picked_up", "in_transit", "delivered"];

/// `Track Parcel`'s input (typed in build.rs).
#[derive(Debug, Deserialize)]
pub struct TrackingQuery {
    tracking_id: String,
}

/// `Track Parcel`'s result.
#[derive(Debug, Serialize)]
pub struct TrackingStatus {
    tracking_id: String,
    status: &'static str,
}

/// A carrier that tracks parcels in memory.
struct Carrier {
    /// Tracking id → index into [`STEPS`].
    parcels: Mutex<BTreeMap<String, usize>>,
}

impl shipment::Handler for Carrier {
    async fn dispatch(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        let order = input["order_id"].as_str().ok_or_else(|| TaskError::new("InvalidOrder", "no order_id"))?;
        if input["address"].as_str().is_none_or(str::is_empty) {
            return Err(TaskError::new("InvalidAddress", format!("order {order} has no address")));
        }
        let mut parcels = self.parcels.lock().map_err(|_| TaskError::new("States.TaskFailed", "lock poisoned"))?;
        let tracking_id = format!("TRK-{order}-{}", parcels.len() + 1);
        parcels.insert(tracking_id.clone(), 0);
        Ok(json!({ "tracking_id": tracking_id }))
    }

    async fn track_parcel(&self, query: TrackingQuery, _ctx: TaskContext) -> Result<TrackingStatus, TaskError> {
        let id = query.tracking_id;
        let mut parcels = self.parcels.lock().map_err(|_| TaskError::new("States.TaskFailed", "lock poisoned"))?;
        let step = parcels.get_mut(&id).ok_or_else(|| TaskError::new("UnknownParcel", format!("no parcel {id}")))?;
        *step = (*step + 1).min(STEPS.len() - 1);
        Ok(TrackingStatus { tracking_id: id, status: STEPS[*step] })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let carrier = Carrier { parcels: Mutex::new(BTreeMap::new()) };
    let input = json!({ "order_id": "A-1001", "address": "1 Main St", "poll_seconds": 0 });
    let result = shipment::run_with(&carrier, input, RunOptions::default()).await;
    println!("status: {:?}", result.status);
    match (&result.output, &result.error) {
        (Some(output), _) => println!("output: {output}"),
        (None, Some(error)) => println!("error: {} ({})", error.error, error.cause),
        (None, None) => {}
    }
    println!("history:");
    for event in &result.history {
        let name = event.details.get("name").and_then(Value::as_str).unwrap_or("");
        println!("  {:>3} {:<28} {name}", event.id, event.event_type.to_string());
    }
}
