//! Event-started Serverless Workflow instances in a durable store (docs/durable.md, "Events that
//! start instances"): `wfc event --store URL EVENT.json` without `--execution` starts an instance
//! of every workflow of the store's registry whose start state takes the event, created with the
//! event in its inbox in one transaction and named by the event's source and id (delivering it
//! again starts nothing new). A worker killed with SIGKILL between two starting events loses
//! neither instance; each instance is correlated by its own starting event (a later event of
//! another order stays in its inbox). On SQLite and PostgreSQL.

mod support;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::live::wait_until;
use support::{describe, json_of, ledger_counts, op, scratch, wfc, write};

/// An order workflow started by `order.placed`; its second state waits for the order's payment,
/// correlated by `orderid`.
const ORDERS: &str = r#"{
  "id": "orders",
  "version": "1.0",
  "name": "orders",
  "functions": [{ "name": "place", "resource": "res/place" }, { "name": "pay", "resource": "res/pay" }],
  "events": [
    { "name": "Placed", "type": "order.placed", "source": "shop", "correlation": [{ "contextAttributeName": "orderid" }] },
    { "name": "Paid", "type": "order.paid", "source": "shop", "correlation": [{ "contextAttributeName": "orderid" }] }
  ],
  "states": [
    {
      "name": "Receive",
      "type": "event",
      "start": { "kind": "default" },
      "exclusive": true,
      "onEvents": [{ "eventRefs": ["Placed"], "actions": [{ "functionRef": { "refName": "place" } }] }],
      "transition": { "nextState": "AwaitPayment" }
    },
    {
      "name": "AwaitPayment",
      "type": "event",
      "onEvents": [{ "eventRefs": ["Paid"], "actions": [{ "functionRef": { "refName": "pay" } }] }],
      "end": { "kind": "default" }
    }
  ]
}"#;

struct Setup {
    def: String,
    handlers: String,
    ledger: std::path::PathBuf,
    go: std::path::PathBuf,
    dir: std::path::PathBuf,
}

/// Handlers that append `<execution> <function>` to the ledger; `place` then works until the
/// test creates the GO file (so a kill lands while it is in flight).
fn setup(dir: &Path) -> Setup {
    let ledger = dir.join("ledger.txt");
    let go = dir.join("GO");
    let place = format!(
        "echo \"$WFC_EXECUTION_NAME place\" >> '{}'; while [ ! -f '{}' ]; do sleep 0.05; done; echo '{{\"placed\": true}}'",
        ledger.display(),
        go.display()
    );
    let pay = format!("echo \"$WFC_EXECUTION_NAME pay\" >> '{}'; echo '{{\"paid\": true}}'", ledger.display());
    let handlers = json!({ "place": {"command": ["sh", "-c", place]}, "pay": {"command": ["sh", "-c", pay]} });
    let handlers = write(dir, "handlers.json", &handlers.to_string());
    let def = write(dir, "orders.sw.json", ORDERS);
    Setup { def, handlers, ledger, go, dir: dir.to_owned() }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A CloudEvent file: `kind` is `placed` or `paid`.
fn event(s: &Setup, kind: &str, id: &str, order: u64) -> String {
    let e = json!({
        "specversion": "1.0", "type": format!("order.{kind}"), "source": "shop", "id": id,
        "orderid": order.to_string(), "data": { "order": order }
    });
    write(&s.dir, &format!("{kind}-{id}.json"), &e.to_string())
}

/// `wfc event` without `--execution`: the instances it started.
fn start_on(store: &str, file: &str) -> Vec<Value> {
    let out = wfc().args(["event", "--store", store, file]).output().expect("wfc runs");
    assert!(out.status.success(), "{}", stderr(&out));
    json_of(&out)["started"].as_array().expect("a list of starts").clone()
}

fn deliver(store: &str, name: &str, file: &str) {
    let out = wfc().args(["event", "--store", store, "--execution", name, file]).output().expect("wfc runs");
    assert!(out.status.success(), "{}", stderr(&out));
}

fn worker(s: &Setup, store: &str) -> Value {
    let out = wfc()
        .args(["worker", "--store", store, &s.def, "--handlers", &s.handlers, "--exit-when-idle"])
        .args(["--poll-ms", "50", "--suspend-after-seconds", "0.3"])
        .output()
        .expect("wfc worker runs");
    assert!(out.status.success(), "{}", stderr(&out));
    json_of(&out)
}

fn waits_for_payment(store: &str, name: &str) -> bool {
    op(&describe(store, name), "AwaitPayment#1.0.event").is_some_and(|o| o["status"] == "STARTED")
}

fn starts_survive_a_kill(store: &str, dir: &Path) {
    let s = setup(dir);
    // A worker registers the workflow (a deploy); with no executions it has nothing to do.
    assert_eq!(worker(&s, store)["claimed"], 0);
    // An event no registered workflow starts on starts nothing, and says so.
    let out = wfc().args(["event", "--store", store, &event(&s, "paid", "e0", 0)]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no workflow registered in the store starts on this event"), "{}", stderr(&out));

    let first = start_on(store, &event(&s, "placed", "e1", 1));
    assert_eq!((first.len(), &first[0]["existed"]), (1, &json!(false)), "{first:?}");
    let a = first[0]["execution"].as_str().unwrap().to_owned();
    assert!(a.starts_with("orders-"), "{a}");

    // A worker takes instance A and is killed while its first action is in flight.
    let mut child = wfc()
        .args(["worker", "--store", store, &s.def, "--handlers", &s.handlers, "--poll-ms", "50"])
        .args(["--lease-seconds", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wfc worker starts");
    wait_until("A's action runs", Duration::from_secs(600), || {
        ledger_counts(&s.ledger).contains_key(&(a.clone(), "place".to_owned())).then_some(())
    });
    child.kill().expect("SIGKILL the worker");
    child.wait().unwrap();

    // The second order's event, between the kill and the restart, starts instance B; the
    // first event delivered again starts nothing new.
    let second = start_on(store, &event(&s, "placed", "e2", 2));
    let b = second[0]["execution"].as_str().unwrap().to_owned();
    assert_ne!(a, b);
    let again = start_on(store, &event(&s, "placed", "e1", 1));
    assert_eq!((&again[0]["execution"], &again[0]["existed"]), (&json!(a), &json!(true)), "{again:?}");
    let list = json_of(&wfc().args(["executions", "--store", store, "list"]).output().unwrap());
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list:#}");

    // Restarted workers (A's lease runs out) bring both to the payment wait.
    std::fs::write(&s.go, "").unwrap();
    wait_until("both wait for their payment", Duration::from_secs(600), || {
        worker(&s, store);
        (waits_for_payment(store, &a) && waits_for_payment(store, &b)).then_some(())
    });
    // Each instance is correlated by its own starting event: order 1's payment, delivered to
    // B (order 2), stays in B's inbox.
    deliver(store, &b, &event(&s, "paid", "p1", 1));
    worker(&s, store);
    let d = describe(store, &b);
    assert!(d["status"] == "RUNNING" && d["inbox"].as_array().is_some_and(|i| i.len() == 1), "{d:#}");
    deliver(store, &b, &event(&s, "paid", "p2", 2));
    deliver(store, &a, &event(&s, "paid", "p3", 1));
    wait_until("both finish", Duration::from_secs(600), || {
        worker(&s, store);
        (describe(store, &a)["status"] != "RUNNING" && describe(store, &b)["status"] != "RUNNING").then_some(())
    });
    for (name, order) in [(&a, 1), (&b, 2)] {
        let d = describe(store, name);
        assert_eq!(d["status"], "SUCCEEDED", "{d:#}");
        let output = json!({"order": order, "orderid": order.to_string(), "placed": true, "paid": true});
        assert_eq!(d["output"], output, "{d:#}");
    }
    // Only the action in flight at the kill ran twice.
    let counts = ledger_counts(&s.ledger);
    let count = |e: &str, f: &str| counts.get(&(e.to_owned(), f.to_owned())).copied().unwrap_or(0);
    assert_eq!(
        (count(&a, "place"), count(&a, "pay"), count(&b, "place"), count(&b, "pay")),
        (2, 1, 1, 1),
        "{counts:?}"
    );
}

#[test]
fn sqlite_event_starts_survive_a_kill() {
    let dir = scratch("starts-sqlite");
    starts_survive_a_kill(&format!("sqlite:{}", dir.join("store.db").display()), &dir);
}

#[test]
fn postgres_event_starts_survive_a_kill() {
    let Some(server) = support::pg::TempPostgres::start("sw-starts") else { return };
    starts_survive_a_kill(&server.url, &scratch("starts-pg"));
}

/// A start state that needs all its events (`exclusive: false`): each order's placement and
/// payment, correlated by `orderid`, make one instance, whatever order they come in and whatever
/// else comes between; the groups are kept in the store between `wfc event` processes.
const GATHERED: &str = r#"{
  "id": "gathered",
  "version": "1.0",
  "name": "gathered",
  "functions": [{ "name": "place", "resource": "res/place" }],
  "events": [
    { "name": "Placed", "type": "order.placed", "source": "shop", "correlation": [{ "contextAttributeName": "orderid" }] },
    { "name": "Paid", "type": "order.paid", "source": "shop", "correlation": [{ "contextAttributeName": "orderid" }] }
  ],
  "states": [
    {
      "name": "Receive",
      "type": "event",
      "start": { "kind": "default" },
      "exclusive": false,
      "onEvents": [{ "eventRefs": ["Placed", "Paid"], "actions": [{ "functionRef": { "refName": "place" } }] }],
      "end": { "kind": "default" }
    }
  ]
}"#;

fn gathered_starts(store: &str, dir: &Path) {
    let s = setup(dir);
    std::fs::write(&s.go, "").unwrap();
    let def = write(dir, "gathered.sw.json", GATHERED);
    let out = wfc().args(["worker", "--store", store, &def, "--exit-when-idle"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let on = |file: &str| {
        let out = wfc().args(["event", "--store", store, file]).output().expect("wfc runs");
        assert!(out.status.success(), "{}", stderr(&out));
        json_of(&out)
    };
    // Order 1 placed, order 2 paid, order 2 placed (again: a repeat is not gathered twice):
    // only order 2 is complete.
    for file in [event(&s, "placed", "g1", 1), event(&s, "paid", "g2", 2)] {
        let v = on(&file);
        assert_eq!(
            (v["started"].as_array().map(Vec::len), v["gathered"][0]["workflow"].as_str()),
            (Some(0), Some("gathered")),
            "{v}"
        );
    }
    let v = on(&event(&s, "paid", "g2", 2));
    assert_eq!(v["started"], json!([]), "{v}");
    let v = on(&event(&s, "placed", "g3", 2));
    let started = v["started"].as_array().expect("starts");
    assert_eq!((started.len(), &started[0]["existed"]), (1, &json!(false)), "{v}");
    let two = started[0]["execution"].as_str().unwrap().to_owned();
    let list = json_of(&wfc().args(["executions", "--store", store, "list"]).output().unwrap());
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list:#}");
    // Order 1's payment completes the other group.
    let v = on(&event(&s, "paid", "g4", 1));
    let one = v["started"][0]["execution"].as_str().expect("order 1 starts").to_owned();
    wait_until("both finish", Duration::from_secs(600), || {
        let out = wfc()
            .args(["worker", "--store", store, &def, "--handlers", &s.handlers, "--exit-when-idle"])
            .args(["--poll-ms", "50"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        (describe(store, &one)["status"] != "RUNNING" && describe(store, &two)["status"] != "RUNNING").then_some(())
    });
    for (name, order) in [(&one, 1), (&two, 2)] {
        let d = describe(store, name);
        assert_eq!(d["status"], "SUCCEEDED", "{d:#}");
        assert_eq!((&d["output"]["order"], &d["output"]["placed"]), (&json!(order), &json!(true)), "{d:#}");
    }
}

#[test]
fn sqlite_non_exclusive_start_states_gather_their_events_in_the_store() {
    let dir = scratch("gathered-sqlite");
    gathered_starts(&format!("sqlite:{}", dir.join("store.db").display()), &dir);
}

#[test]
fn postgres_non_exclusive_start_states_gather_their_events_in_the_store() {
    let Some(server) = support::pg::TempPostgres::start("sw-gathered") else { return };
    gathered_starts(&server.url, &scratch("gathered-pg"));
}

#[test]
fn starting_events_are_checked() {
    let dir = scratch("starts-checked");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let s = setup(&dir);
    worker(&s, &store);
    // An event with no id cannot name its instance.
    let no_id = write(&dir, "no-id.json", r#"{"type": "order.placed", "source": "shop", "orderid": "1"}"#);
    let out = wfc().args(["event", "--store", &store, &no_id]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs an `id`"), "{}", stderr(&out));
    // Nothing was started or stored by the refused event.
    let list = json_of(&wfc().args(["executions", "--store", &store, "list"]).output().unwrap());
    assert_eq!(list, json!([]));
}
