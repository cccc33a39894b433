//! Durable Serverless Workflow executions on both engines (the interpreter and generated code):
//! an execution "crashes" (is dropped) while it waits for its event, is resumed with a new
//! journal, and the event delivered through the store completes it without running its
//! completed actions again. Both engines write the same journal (the same operation ids).
#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wfc_interp::{self as interp, Handlers};
use wfc_journal::{Journal, Opened};
use wfc_runtime::durable::{OpStatus, Store};
use wfc_runtime::events::EventBus;
use wfc_runtime::{Clock, ExecutionResult, Failure, RunOptions, Status, TaskContext};
use wfc_sqlite::SqliteStore;

wfc_runtime::include_workflow!("tests/durable/sw_order.sw.json");
wfc_runtime::include_workflow!("tests/durable/sw_events.sw.json");
wfc_runtime::include_workflow!("tests/durable/sw_produce.sw.json");
wfc_runtime::include_workflow!("tests/durable/sw_partial.sw.json");

/// The IR `include_workflow!` lowered `tests/durable/<name>.sw.json` to (generated code carries
/// none), for the interpreter's runs of the same definitions.
fn lowered(name: &str) -> wfc_runtime::ir::Workflow {
    let path = format!("tests/durable/{name}.sw.json");
    wfc_build::load_file(&path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

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
    let workflow = &lowered("sw_order");
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
    let workflow = &lowered("sw_order");
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

/// An event state waiting for two correlated events and an action waiting for a result event:
/// events delivered before the waits are kept; the correlation value the first consumed event
/// fixes rules out another key's event; a resume after the event state's CALLBACK replays the
/// consumed events instead of taking others.
#[tokio::test]
async fn event_states_and_result_events_consume_store_events_once_with_correlation() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let workflow = &lowered("sw_events");
    let input = json!({});
    let name = "events";
    let ev = |t: &str, key: Option<&str>, data: Value| {
        let mut e = json!({ "type": t, "source": "s", "data": data });
        if let Some(k) = key {
            e["key"] = json!(k);
        }
        e
    };
    let journal = match Journal::open_definition(Arc::clone(&store), name, workflow, &input, &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("{other:?}"),
    };
    for e in [
        ev("a", Some("k1"), json!({ "a": 1 })),
        ev("noise", None, json!({})),
        ev("b", Some("k2"), json!({ "b": "wrong key" })),
        ev("b", Some("k1"), json!({ "b": 2 })),
        ev("answered", None, json!({ "answer": 42 })),
    ] {
        store.deliver_event(name, e).await.unwrap();
    }
    // The first run stops (is dropped) inside the event state's action, after the events were
    // recorded consumed.
    let notes = Arc::new(Mutex::new(0usize));
    let blocking = {
        let notes = Arc::clone(&notes);
        Handlers::new().on("note", move |_, _| {
            let notes = Arc::clone(&notes);
            async move {
                *notes.lock().unwrap() += 1;
                futures::future::pending::<Result<Value, Failure>>().await
            }
        })
    };
    let run = interp::run(workflow, &blocking, input.clone(), RunOptions::real().with_journal(journal));
    let gathered = async {
        loop {
            if store.load_operation(name, "Gather#1.0.on0.a0").await.unwrap().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        result = run => panic!("should block in the action: {result:?}"),
        () = gathered => {}
    }
    let journal = match Journal::open_definition(Arc::clone(&store), name, workflow, &input, &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("{other:?}"),
    };
    let done = Handlers::new().on("note", |_, _| async { Ok::<Value, Failure>(json!({ "noted": true })) });
    let result = interp::run(workflow, &done, input, RunOptions::real().with_journal(journal)).await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!(result.output, Some(json!({ "a": 1, "b": 2, "key": "k1", "noted": true, "answer": 42 })));
    assert_eq!(*notes.lock().unwrap(), 1);
    let ops = store.load_journal(name).await.unwrap();
    let events_of = |id: &str| -> Vec<Value> {
        let op = ops.iter().find(|op| op.id == id).unwrap_or_else(|| panic!("no {id}"));
        op.result.as_ref().unwrap()["events"].as_array().unwrap().iter().map(|e| e["event"]["data"].clone()).collect()
    };
    assert_eq!(events_of("Gather#1.0.event"), [json!({ "a": 1 }), json!({ "b": 2 })]);
    assert_eq!(events_of("Ask#1.0.a0"), [json!({ "answer": 42 })]);
    let produced: Vec<_> =
        result.history.iter().filter(|e| e.event_type == wfc_runtime::EventType::EventProduced).collect();
    assert_eq!(produced.len(), 1, "the trigger event is produced once in the resumed run");
    let trigger = ops.iter().find(|op| op.id == "Ask#1.0.a0.trigger").expect("the trigger's STEP");
    assert_eq!((trigger.op_type.as_str(), trigger.subtype.as_str()), ("STEP", "Produce"));
    assert_eq!(trigger.result.as_ref(), Some(&produced[0].details["event"]));
    // Consumed events left the inbox with the checkpoints that recorded them; the rest stay.
    let inbox: Vec<Value> = store.load_events(name).await.unwrap().into_iter().map(|(_, e)| e).collect();
    assert_eq!(inbox, [ev("noise", None, json!({})), ev("b", Some("k2"), json!({ "b": "wrong key" }))]);
}

/// A produced event is a STEP whose result is the event: a run stopped after it (waiting for an
/// event) and resumed does not publish it again (the resumed run's sink has only the event
/// produced after the resume, with a new id), and the history shows the recorded event.
#[tokio::test]
async fn a_produced_event_is_journaled_and_not_published_again_on_resume() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let workflow = &lowered("sw_produce");
    let input = json!({});
    let name = "produce";
    let journal = match Journal::open_definition(Arc::clone(&store), name, workflow, &input, &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("{other:?}"),
    };
    let first_sink = EventBus::new();
    let options = RunOptions::real().with_journal(journal).with_events(first_sink.clone());
    let none = Handlers::new();
    let run = interp::run(workflow, &none, input.clone(), options);
    let waiting = async {
        loop {
            if store
                .load_operation(name, "Hold#1.0.event")
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
    let announced = first_sink.produced();
    assert_eq!(announced.len(), 1);
    assert_eq!((announced[0]["type"].as_str(), &announced[0]["data"]), (Some("announced"), &json!({ "n": 1 })));
    let recorded = store.load_operation(name, "Announce#1.produce").await.unwrap().expect("the produce's STEP");
    assert_eq!((recorded.op_type, recorded.status), (wfc_runtime::durable::OpType::Step, OpStatus::Succeeded));
    assert_eq!(recorded.result.as_ref(), Some(&announced[0]));

    store.deliver_event(name, json!({ "type": "go", "source": "s", "data": {} })).await.unwrap();
    store.deliver_event(name, json!({ "type": "noise", "source": "s", "data": {} })).await.unwrap();
    let journal = match Journal::open_definition(Arc::clone(&store), name, workflow, &input, &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("{other:?}"),
    };
    let second_sink = EventBus::new();
    let options = RunOptions::real().with_journal(journal).with_events(second_sink.clone());
    let result = interp::run(workflow, &none, input, options).await;
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let published = second_sink.produced();
    assert_eq!(published.len(), 1, "only the end's event is published after the resume: {published:?}");
    assert_eq!(published[0]["type"], "done");
    assert_ne!(published[0]["id"], announced[0]["id"], "event ids stay unique across the resume");
    let history: Vec<&Value> = result
        .history
        .iter()
        .filter(|e| e.event_type == wfc_runtime::EventType::EventProduced)
        .map(|e| &e.details["event"])
        .collect();
    assert_eq!(history, [&announced[0], &published[0]]);
    assert!(store.load_operation(name, "Hold#1.produce").await.unwrap().is_some());
    // `go` was consumed (and left the inbox); `noise` stays.
    let inbox: Vec<Value> = store.load_events(name).await.unwrap().into_iter().map(|(_, e)| e).collect();
    assert_eq!(inbox, [json!({ "type": "noise", "source": "s", "data": {} })]);
}

/// A non-exclusive event state that times out consumes the events that did arrive, in memory
/// and durably alike: `A` arrives, `B` never does; `Both` times out having taken `A`, so `OnlyA`
/// finds no `A` left and times out too (had `Both` left `A` queued, `OnlyA` would merge it).
#[tokio::test]
async fn a_timed_out_non_exclusive_event_state_consumes_the_same_events_in_memory_and_durably() {
    let workflow = &lowered("sw_partial");
    let a = json!({ "type": "a", "source": "s", "data": { "a": 1 } });
    let none = Handlers::new();
    let consumed = |result: &ExecutionResult| -> Vec<Value> {
        let events = result.history.iter().filter(|e| e.event_type == wfc_runtime::EventType::EventConsumed);
        events.map(|e| e.details.to_value()).collect()
    };

    let bus = EventBus::new();
    bus.deliver(a.clone());
    let in_memory = interp::run(workflow, &none, json!({}), RunOptions::real().with_events(bus)).await;
    assert_eq!(in_memory.status, Status::Succeeded, "{:?}", in_memory.error);

    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let name = "partial";
    let journal = match Journal::open_definition(Arc::clone(&store), name, workflow, &json!({}), &Clock::real()).await {
        Ok(Opened::Running(j)) => j,
        other => panic!("{other:?}"),
    };
    store.deliver_event(name, a.clone()).await.unwrap();
    let durable = interp::run(workflow, &none, json!({}), RunOptions::real().with_journal(journal)).await;
    assert_eq!(durable.status, Status::Succeeded, "{:?}", durable.error);

    assert_eq!(in_memory.output, Some(json!({})), "in memory, Both took A");
    assert_eq!(durable.output, in_memory.output, "durably, Both took A too");
    assert_eq!(consumed(&durable), consumed(&in_memory));
    assert_eq!(consumed(&durable).len(), 1);
    let both = store.load_operation(name, "Both#1.0.event").await.unwrap().expect("Both's wait");
    assert_eq!(both.status, OpStatus::TimedOut);
    assert_eq!(both.result.as_ref().unwrap()["events"][0]["event"], a, "the timed-out wait records what it took");
    assert!(store.load_events(name).await.unwrap().is_empty(), "A left the inbox");
}
