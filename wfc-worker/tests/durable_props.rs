//! Proptest smoke test of loading stored durable state (the fuzz target `durable_state` runs the
//! same loader, `wfc_worker::testing::replay_stored_state`): arbitrary rows never panic the loader
//! or the replay, and a complete journal replays to the end without writing anything.

use proptest::prelude::*;
use serde_json::{Value, json};
use wfc_runtime::Status;
use wfc_worker::testing::replay_stored_state;

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(options).prop_map(str::to_owned),
        1 => "\\PC{0,12}",
    ]
}

fn row() -> impl Strategy<Value = Value> {
    (
        pick(&[
            "A#1.0",
            "A#1.retry1",
            "A#1.1",
            "Nap#1",
            "Both#1.0/0/L#1.0",
            "Both#1.0/1/R#1.0",
            "Ask#1.0",
            "Ask#1.0.send",
        ]),
        pick(&["STEP", "WAIT", "CALLBACK", "CONTEXT", "CHAINED_INVOKE"]),
        pick(&["A", "Nap", "L", "R", "Ask"]),
        pick(&["STARTED", "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"]),
        proptest::option::of(pick(&["{}", "1", "\"x\"", "[1,2]", "{\"a\":", "null"])),
        proptest::option::of(pick(&["States.TaskFailed", "States.Timeout", "Boom"])),
        proptest::option::of(any::<i64>()),
        proptest::option::of(pick(&["wfc1-abc"])),
        -2i64..5,
    )
        .prop_map(|(id, ty, name, status, result, error, due_at, token, starts)| {
            json!({"id": id, "type": ty, "name": name, "subtype": "Task", "status": status, "result": result,
                   "error": error, "cause": "c", "due_at": due_at, "callback_token": token, "starts": starts})
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_stored_rows_never_panic(rows in proptest::collection::vec(row(), 0..8)) {
        let doc = json!({ "operations": rows });
        let _ = replay_stored_state(doc.to_string().as_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = replay_stored_state(&bytes);
    }
}

#[test]
fn a_complete_journal_replays_without_the_store() {
    let ok = |id: &str, ty: &str, name: &str, result: Value| {
        json!({"id": id, "type": ty, "name": name, "subtype": "x", "status": "SUCCEEDED", "starts": 1,
               "result": result.to_string(), "callback_token": if ty == "CALLBACK" { Some("wfc1-t") } else { None }})
    };
    let doc = json!({"operations": [
        ok("A#1.0", "STEP", "A", json!("a")),
        ok("Nap#1", "WAIT", "Nap", Value::Null),
        ok("Both#1.0/0/L#1.0", "STEP", "L", json!("l")),
        ok("Both#1.0/1/R#1.0", "STEP", "R", json!("r")),
        ok("Ask#1.0", "CALLBACK", "Ask", json!({"approved": true})),
        ok("Ask#1.0.send", "STEP", "Ask", Value::Null),
        ok("Both#1.0", "CONTEXT", "Both", json!(["l", "r"])),
        ok("Both#1.0/0", "CONTEXT", "Both", json!("l")),
        ok("Both#1.0/1", "CONTEXT", "Both", json!("r")),
    ]});
    // Everything replays from the rows: nothing is written, no handler is called.
    assert_eq!(replay_stored_state(doc.to_string().as_bytes()), Ok((Status::Succeeded, 0)));
    // A journal stored before Parallel branches were CONTEXT operations still replays: its
    // steps are not run again, and only the three CONTEXT operations are written.
    let mut old = doc.clone();
    old["operations"].as_array_mut().unwrap().truncate(6);
    assert_eq!(replay_stored_state(old.to_string().as_bytes()), Ok((Status::Succeeded, 3)));
    // A CONTEXT row where the definition runs a step is a determinism violation.
    let mut swapped = doc.clone();
    swapped["operations"][2]["type"] = json!("CONTEXT");
    assert_eq!(replay_stored_state(swapped.to_string().as_bytes()).map(|r| r.0), Ok(Status::Failed));
    // A row of the wrong type where the definition has a Task: a determinism violation fails
    // the execution instead of replaying it.
    let mut drifted = doc.clone();
    drifted["operations"][0]["type"] = json!("WAIT");
    assert_eq!(replay_stored_state(drifted.to_string().as_bytes()).map(|r| r.0), Ok(Status::Failed));
    // Without the Wait's row, the replay runs (and records) the Wait and nothing else.
    let mut partial = doc.clone();
    partial["operations"].as_array_mut().unwrap().remove(1);
    assert_eq!(replay_stored_state(partial.to_string().as_bytes()), Ok((Status::Succeeded, 1)));
    let mut corrupt = doc;
    corrupt["operations"][2]["result"] = json!("{not json");
    let err = replay_stored_state(corrupt.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("operation 'Both#1.0/0/L#1.0' is corrupt: its result is not JSON"), "{err}");
}
