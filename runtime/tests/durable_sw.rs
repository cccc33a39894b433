//! Durable Serverless Workflow executions on both engines (the interpreter and generated code):
//! an execution "crashes" (is dropped) while it waits for its event, is resumed with a new
//! journal, and the event delivered through the store completes it without running its
//! completed actions again. Both engines write the same journal (the same operation ids).
#![cfg(feature = "durable")]
#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wfc_runtime::durable::{Journal, OpStatus, Opened, SqliteStore, Store};
use wfc_runtime::interp::{self, Handlers};
use wfc_runtime::{Clock, ExecutionResult, Failure, RunOptions, Status, TaskContext};

wfc_runtime::include_workflow!("tests/durable/sw_order.sw.json");

#[derive(Clone, Default)]
struct Counting {
    calls: Arc<Mutex<HashMap<String, usize>>>,
}

impl Counting {
    fn call(&self, function: &str) -> Value {
        *self.calls.lock().unwrap().entry(function.into()).or_default() += 1;
        json!({ function: 1 })
    }

    fn counts(&self) -> (usize, usize) {
        let calls = self.calls.lock().unwrap();
        (calls.get("charge").copied().unwrap_or(0), calls.get("request").copied().unwrap_or(0))
    }
}

impl sw_order::Handler for Counting {
    async fn charge(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        Ok(self.call("charge"))
    }

    async fn request(&self, _input: Value, _ctx: TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        Ok(self.call("request"))
    }
}

fn handlers(counting: &Counting) -> Handlers {
    let (a, b) = (counting.clone(), counting.clone());
    Handlers::new()
        .on("charge", move |_, _| {
            let a = a.clone();
            async move { Ok::<Value, Failure>(a.call("charge")) }
        })
        .on("request", move |_, _| {
            let b = b.clone();
            async move { Ok::<Value, Failure>(b.call("request")) }
        })
}

async fn open(store: &Arc<dyn Store>, name: &str, input: &Value) -> Arc<Journal> {
    let workflow = sw_order::ir().unwrap();
    match Journal::open_definition(Arc::clone(store), name, workflow, input, &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("expected a running execution, got {other:?}"),
    }
}

/// Runs `run` until the execution waits for its event, then drops it (the crash).
async fn crash_while_waiting(
    store: &Arc<dyn Store>,
    name: &str,
    run: impl std::future::Future<Output = ExecutionResult>,
) {
    let waiting = async {
        loop {
            if store
                .load_operation(name, "Confirm#1.0.event")
                .await
                .unwrap()
                .is_some_and(|op| op.status == OpStatus::Started)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        result = run => panic!("the execution should wait for its event: {result:?}"),
        () = waiting => {}
    }
}

fn event(order: &str) -> Value {
    json!({ "type": "order.confirmed", "source": "shop", "orderid": order, "data": { "confirmation": "ok" } })
}

fn operation_ids(ops: &[wfc_runtime::durable::Operation]) -> Vec<(String, &'static str)> {
    ops.iter().map(|op| (op.id.clone(), op.op_type.as_str())).collect()
}

#[tokio::test]
async fn both_engines_resume_a_sw_execution_waiting_for_an_event_delivered_through_the_store() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let workflow = sw_order::ir().unwrap();
    let input = json!({ "order": 1 });
    let expected = json!({ "order": 1, "charge": 1, "request": 1, "confirmation": "ok", "orderid": "o1" });
    let mut journals = Vec::new();
    for engine in ["interp", "generated"] {
        let counting = Counting::default();
        let name = format!("sw-{engine}");
        let journal = open(&store, &name, &input).await;
        let options = RunOptions::real().with_journal(journal);
        match engine {
            "interp" => {
                let h = handlers(&counting);
                crash_while_waiting(&store, &name, interp::run(workflow, &h, input.clone(), options)).await;
            }
            _ => crash_while_waiting(&store, &name, sw_order::run_with(&counting, input.clone(), options)).await,
        }
        // Delivered from outside the run: the order's event, and one of another order that
        // nothing takes (it stays in the inbox).
        store.deliver_event(&name, event("o1")).await.unwrap();
        store.deliver_event(&name, event("o2")).await.unwrap();
        let journal = open(&store, &name, &input).await;
        let options = RunOptions::real().with_journal(journal);
        let result = match engine {
            "interp" => interp::run(workflow, &handlers(&counting), input.clone(), options).await,
            _ => sw_order::run_with(&counting, input.clone(), options).await,
        };
        assert_eq!(result.status, Status::Succeeded, "{engine}: {:?}", result.error);
        assert_eq!(result.output, Some(expected.clone()), "{engine}");
        assert_eq!(counting.counts(), (1, 1), "{engine}: a completed action ran again");
        let ops = store.load_journal(&name).await.unwrap();
        let wait = ops.iter().find(|op| op.id == "Confirm#1.0.event").expect("the event wait");
        assert_eq!(wait.result.as_ref().unwrap()["events"][0]["event"]["orderid"], "o1", "{engine}");
        journals.push(operation_ids(&ops));
    }
    assert_eq!(journals[0], journals[1], "both engines journal the same operations");
    assert_eq!(
        journals[0],
        [
            ("Charge#1.0.a0".to_owned(), "STEP"),
            ("Nap#1.0".to_owned(), "WAIT"),
            ("Confirm#1.0.a0".to_owned(), "STEP"),
            ("Confirm#1.0.event".to_owned(), "CALLBACK"),
        ]
    );
}
