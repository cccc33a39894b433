//! Durable Serverless Workflow executions (docs/durable.md, "Serverless Workflow"): a workflow
//! with a function action, a delay, a callback state (an action, then an event) and a subflow
//! is crashed (`WFC_CRASH_AT`, which aborts the process as `kill -9` would) before and after an
//! action's checkpoint, during the delay, while waiting for the event and inside the subflow,
//! then run again to its end. The function handlers append to a side-effect ledger: every
//! completed action ran exactly once, only an action in flight at a crash ran twice, and the
//! output is right. Events are delivered with `wfc event` from another process, before the wait
//! (kept in the execution's inbox) or while the execution waits. On SQLite and PostgreSQL (see
//! tests/support/pg.rs).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{describe, json_of, ledger_counts, op, scratch, wfc, write};

const PARENT: &str = r#"{
  "id": "swcrash",
  "version": "1.0",
  "name": "swcrash",
  "functions": [
    { "name": "charge", "resource": "res/charge" },
    { "name": "request", "resource": "res/request" }
  ],
  "events": [
    { "name": "Confirmed", "type": "order.confirmed", "source": "shop", "correlation": [{ "contextAttributeName": "orderid" }] }
  ],
  "states": [
    {
      "name": "Charge",
      "type": "operation",
      "start": { "kind": "default" },
      "actions": [{ "functionRef": { "refName": "charge" } }],
      "transition": { "nextState": "Nap" }
    },
    { "name": "Nap", "type": "delay", "timeDelay": "PT2S", "transition": { "nextState": "Confirm" } },
    {
      "name": "Confirm",
      "type": "callback",
      "action": { "functionRef": { "refName": "request" } },
      "eventRef": "Confirmed",
      "timeout": "PT10M",
      "transition": { "nextState": "Ship" }
    },
    { "name": "Ship", "type": "subflow", "workflowId": "swcrash-child", "end": { "kind": "default" } }
  ]
}"#;

const CHILD: &str = r#"{
  "id": "swcrash-child",
  "version": "1.0",
  "name": "swcrash-child",
  "functions": [
    { "name": "pack", "resource": "res/pack" },
    { "name": "label", "resource": "res/label" }
  ],
  "states": [
    {
      "name": "Pack",
      "type": "operation",
      "start": { "kind": "default" },
      "actions": [{ "functionRef": { "refName": "pack" } }],
      "transition": { "nextState": "Settle" }
    },
    { "name": "Settle", "type": "delay", "timeDelay": "PT1S", "transition": { "nextState": "Label" } },
    {
      "name": "Label",
      "type": "operation",
      "actions": [{ "functionRef": { "refName": "label" } }],
      "end": { "kind": "default" }
    }
  ]
}"#;

/// A function action whose transition produces an event, then a delay.
const PRODUCER: &str = r#"{
  "id": "swproduce",
  "version": "1.0",
  "name": "swproduce",
  "functions": [{ "name": "charge", "resource": "res/charge" }],
  "events": [{ "name": "Charged", "type": "order.charged", "source": "shop", "kind": "produced" }],
  "states": [
    {
      "name": "Charge",
      "type": "operation",
      "start": { "kind": "default" },
      "actions": [{ "functionRef": { "refName": "charge" } }],
      "transition": { "nextState": "Nap", "produceEvent": { "eventRef": "Charged", "data": "{{ $.charged }}" } }
    },
    { "name": "Nap", "type": "delay", "timeDelay": "PT1S", "end": { "kind": "default" } }
  ]
}"#;

/// The parent changed under a running execution: `Charge` now produces an event and waits for
/// its answer where the journal recorded a function call.
const CHANGED: &str = r#"{
  "id": "swcrash",
  "version": "2.0",
  "name": "swcrash",
  "events": [
    { "name": "ChargeRequested", "type": "charge.requested", "source": "shop", "kind": "produced" },
    { "name": "Charged", "type": "charge.done", "source": "bank" }
  ],
  "states": [
    {
      "name": "Charge",
      "type": "operation",
      "start": { "kind": "default" },
      "actions": [{ "eventRef": { "triggerEventRef": "ChargeRequested", "resultEventRef": "Charged" } }],
      "end": { "kind": "default" }
    }
  ]
}"#;

/// Each function's STEP operation id, and its name in the ledger.
const STEPS: [(&str, &str); 4] = [
    ("charge", "Charge#1.0.a0"),
    ("request", "Confirm#1.0.a0"),
    ("pack", "Ship#1.0/Pack#1.0.a0"),
    ("label", "Ship#1.0/Label#1.0.a0"),
];

fn expected_output(order: u64) -> Value {
    json!({
        "order": order, "charged": 1, "requested": 1, "confirmation": "ok", "orderid": format!("o{order}"),
        "packed": 1, "labelled": 1
    })
}

struct Setup {
    def: String,
    handlers: String,
    ledger: PathBuf,
    dir: PathBuf,
}

/// Handlers that append `<execution> <function>` to the ledger, sleep a little (so a kill can
/// land in flight) and return `{"<function>ed": 1}`-style results.
fn setup(dir: &Path) -> Setup {
    let ledger = dir.join("ledger.txt");
    let mut map = serde_json::Map::new();
    for (function, key) in [("charge", "charged"), ("request", "requested"), ("pack", "packed"), ("label", "labelled")]
    {
        let script = format!(
            "echo \"$WFC_EXECUTION_NAME {function}\" >> '{}'; sleep 0.2; printf '{{\"{key}\": 1}}'",
            ledger.display()
        );
        map.insert(function.to_owned(), json!({ "command": ["sh", "-c", script] }));
    }
    let handlers = write(dir, "handlers.json", &Value::Object(map).to_string());
    let def = write(dir, "swcrash.sw.json", PARENT);
    write(dir, "swcrash-child.sw.json", CHILD);
    Setup { def, handlers, ledger, dir: dir.to_owned() }
}

fn input(order: u64) -> String {
    json!({ "order": order }).to_string()
}

fn run_args<'a>(s: &'a Setup, store: &'a str, name: &'a str, input: &'a str) -> Vec<&'a str> {
    vec!["run", &s.def, "--handlers", &s.handlers, "--input", input, "--store", store, "--name", name]
}

/// The confirmation event of order `order`, written to a file.
fn event_file(s: &Setup, order: u64) -> String {
    let event = json!({
        "specversion": "1.0", "id": format!("ev-{order}"), "type": "order.confirmed", "source": "shop",
        "orderid": format!("o{order}"), "data": { "confirmation": "ok" }
    });
    write(&s.dir, &format!("event-{order}.json"), &event.to_string())
}

fn deliver(store: &str, name: &str, file: &str) -> Output {
    wfc().args(["event", "--store", store, "--execution", name, file]).output().expect("wfc runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Creates execution `name` and delivers its confirmation event before anything runs: the
/// event waits in the execution's inbox until the callback state takes it.
fn create_with_event(s: &Setup, store: &str, name: &str, order: u64) {
    let out = wfc()
        .args(["executions", "--store", store, "start", &s.def, "--name", name, "--input", &input(order)])
        .output()
        .expect("wfc runs");
    assert!(out.status.success(), "start {name}: {}", stderr(&out));
    let out = deliver(store, name, &event_file(s, order));
    assert!(out.status.success(), "event {name}: {}", stderr(&out));
    assert_eq!(json_of(&out)["execution"], name);
}

/// Checks the ledger against the journal: each action ran at most as often as its STEP was
/// started and at least once; returns the actions that ran more than once.
fn check_exactly_once(s: &Setup, store: &str, name: &str) -> Vec<String> {
    let d = describe(store, name);
    let counts = ledger_counts(&s.ledger);
    let mut reruns = Vec::new();
    for (function, id) in STEPS {
        let ran = counts.get(&(name.to_owned(), function.to_owned())).copied().unwrap_or(0);
        let op = op(&d, id).unwrap_or_else(|| panic!("{name}: no operation {id}: {d:#}"));
        assert_eq!((op["type"].as_str(), op["status"].as_str()), (Some("STEP"), Some("SUCCEEDED")), "{name}: {id}");
        let starts = op["starts"].as_u64().unwrap_or(0) as usize;
        assert!(ran <= starts, "{name}: {function} ran {ran} times but the journal started it {starts} times");
        assert_eq!(ran.min(1), 1, "{name}: {function} never ran");
        if ran > 1 {
            reruns.push(function.to_owned());
        }
    }
    // The other operations a SW execution journals.
    let kinds = [
        ("Nap#1.0", "WAIT"),
        ("Confirm#1.0.event", "CALLBACK"),
        ("Ship#1.0", "CHAINED_INVOKE"),
        ("Ship#1.0/Settle#1.0", "WAIT"),
    ];
    for (id, kind) in kinds {
        let op = op(&d, id).unwrap_or_else(|| panic!("{name}: no operation {id}: {d:#}"));
        assert_eq!((op["type"].as_str(), op["status"].as_str()), (Some(kind), Some("SUCCEEDED")), "{name}: {id}");
    }
    reruns
}

fn finish(s: &Setup, store: &str, name: &str, order: u64) {
    let input = input(order);
    let out = wfc().args(run_args(s, store, name, &input)).output().expect("wfc runs");
    let v = json_of(&out);
    assert_eq!(v["status"], "SUCCEEDED", "{name}: {v:#}\n{}", stderr(&out));
    assert_eq!(v["output"], expected_output(order), "{name}");
}

/// Crashes execution `name` at `point`, then runs it again to the end; returns the actions
/// that ran more than once.
fn crash_at(s: &Setup, store: &str, name: &str, order: u64, point: &str) -> Vec<String> {
    create_with_event(s, store, name, order);
    let input = input(order);
    let out = wfc().args(run_args(s, store, name, &input)).env("WFC_CRASH_AT", point).output().expect("wfc runs");
    assert!(
        !out.status.success(),
        "{name}: the run should have crashed at {point}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr(&out).contains("aborting"), "{name}: it did not reach {point}: {}", stderr(&out));
    finish(s, store, name, order);
    check_exactly_once(s, store, name)
}

fn chosen_points(store: &str, dir: &Path) {
    let s = setup(dir);
    // Before an action's checkpoint, and with STARTED committed but the body not run: once.
    assert!(crash_at(&s, store, "before-start", 1, "Charge#1.0.a0:before-start").is_empty());
    assert!(crash_at(&s, store, "after-start", 2, "Charge#1.0.a0:after-start").is_empty());
    // The body ran, its outcome is not committed: the one action in flight runs again.
    assert_eq!(crash_at(&s, store, "before-finish", 3, "Charge#1.0.a0:before-finish"), ["charge"]);
    // After the action's checkpoint: replayed, never run again.
    assert!(crash_at(&s, store, "after-finish", 4, "Charge#1.0.a0:after-finish").is_empty());
    // During the delay: the rerun waits the remainder.
    assert!(crash_at(&s, store, "during-delay", 5, "Nap#1.0:after-start").is_empty());
    // While waiting for the event (the request action done): the event is still in the inbox.
    assert!(crash_at(&s, store, "during-event", 6, "Confirm#1.0.event:after-start").is_empty());
    // Inside the subflow: after its first action, and during its delay.
    assert!(crash_at(&s, store, "in-subflow", 7, "Ship#1.0/Pack#1.0.a0:after-finish").is_empty());
    assert!(crash_at(&s, store, "in-subflow-delay", 8, "Ship#1.0/Settle#1.0:after-start").is_empty());
    // The subflow finished and recorded: the rerun replays its output, the child does not run.
    assert!(crash_at(&s, store, "after-subflow", 9, "Ship#1.0:after-finish").is_empty());
}

#[test]
fn sqlite_sw_crashes_at_chosen_points() {
    let dir = scratch("sw-crash-sqlite");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    chosen_points(&store, &dir);
    produced_event_after_a_crash(&store, &dir);
}

/// A produced event is a STEP whose result is the event: crashed just after its checkpoint, the
/// rerun replays the recorded event (same id and time) instead of producing it again, and the
/// execution's history holds it once.
fn produced_event_after_a_crash(store: &str, dir: &Path) {
    let s = setup(dir);
    let def = write(dir, "swproduce.sw.json", PRODUCER);
    let name = "produce-after-finish";
    let args = ["run", &def, "--handlers", &s.handlers, "--input", "{}", "--store", store, "--name", name];
    let out = wfc().args(args).env("WFC_CRASH_AT", "Charge#1.produce:after-finish").output().expect("wfc runs");
    assert!(stderr(&out).contains("aborting"), "it did not reach the produce's checkpoint: {}", stderr(&out));
    let recorded = op(&describe(store, name), "Charge#1.produce").cloned().expect("the produce's STEP");
    assert_eq!((recorded["type"].as_str(), recorded["subtype"].as_str()), (Some("STEP"), Some("Produce")));
    assert_eq!(
        (recorded["status"].as_str(), &recorded["result"]["data"]),
        (Some("SUCCEEDED"), &json!({ "charged": 1 }))
    );
    let out = wfc().args(args).output().expect("wfc runs");
    assert_eq!(json_of(&out)["status"], "SUCCEEDED", "{}", stderr(&out));
    let out = wfc().args(["executions", "--store", store, "history", name]).output().expect("wfc runs");
    let history = json_of(&out);
    let produced: Vec<&Value> = history
        .as_array()
        .expect("the history")
        .iter()
        .filter(|e| e["type"] == "EventProduced")
        .map(|e| &e["details"]["event"])
        .collect();
    assert_eq!(produced, [&recorded["result"]], "the event was produced once, before the crash");
    let counts = ledger_counts(&s.ledger);
    assert_eq!(counts.get(&(name.to_owned(), "charge".to_owned())), Some(&1), "the action ran once");
}

#[test]
fn postgres_sw_crashes_at_chosen_points() {
    let Some(server) = support::pg::TempPostgres::start("swcrash") else { return };
    let dir = scratch("sw-crash-postgres");
    chosen_points(&server.url, &dir);
    event_from_another_process(&server.url, &setup(&dir), "pg-live", 20);
    produced_event_after_a_crash(&server.url, &dir);
}

/// Runs execution `name` in the background until it waits for its event, delivers the event
/// with `wfc event` from this (another) process, and checks the run completes.
fn event_from_another_process(store: &str, s: &Setup, name: &str, order: u64) {
    let input = input(order);
    let child = wfc()
        .args(run_args(s, store, name, &input))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("wfc starts");
    let mut child = support::live::Killed(child);
    // A hang guard, not a timed assertion: loaded CI machines are slow.
    support::live::wait_until("the event wait", Duration::from_secs(600), || {
        let out = wfc().args(["executions", "--store", store, "describe", name]).output().expect("wfc runs");
        (out.status.success() && op(&json_of(&out), "Confirm#1.0.event").is_some_and(|o| o["status"] == "STARTED"))
            .then_some(())
    });
    // An event of another type matches nothing: it stays in the inbox and the wait goes on.
    let other = write(&s.dir, "other.json", r#"{"type": "order.cancelled", "source": "shop", "data": {}}"#);
    let out = deliver(store, name, &other);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = deliver(store, name, &event_file(s, order));
    assert!(out.status.success(), "{}", stderr(&out));
    support::live::wait_until("the run's end", Duration::from_secs(600), || child.0.try_wait().expect("poll"));
    let mut text = String::new();
    if let Some(mut pipe) = child.0.stdout.take() {
        std::io::Read::read_to_string(&mut pipe, &mut text).expect("read the output");
    }
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(v["status"], "SUCCEEDED", "{v:#}");
    assert_eq!(v["output"], expected_output(order));
    let d = describe(store, name);
    let consumed = &op(&d, "Confirm#1.0.event").expect("the event wait")["result"]["events"];
    assert_eq!(consumed.as_array().map(Vec::len), Some(1), "{consumed:#}");
    assert_eq!(consumed[0]["event"]["id"], format!("ev-{order}"));
    // The consumed event left the inbox with the checkpoint that recorded it; the other stays.
    let inbox: Vec<&Value> = d["inbox"].as_array().expect("the inbox").iter().map(|e| &e["event"]).collect();
    assert_eq!(inbox.len(), 1, "{d:#}");
    assert_eq!(inbox[0]["type"], "order.cancelled");
}

#[test]
fn an_event_from_another_process_completes_a_waiting_execution() {
    let dir = scratch("sw-event-live");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let s = setup(&dir);
    event_from_another_process(&store, &s, "live", 10);

    // Errors: an unknown execution, a finished one, a malformed event.
    let good = event_file(&s, 10);
    let out = deliver(&store, "nobody", &good);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no execution is named 'nobody'"), "{}", stderr(&out));
    let out = deliver(&store, "live", &good);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("it has finished (SUCCEEDED)"), "{}", stderr(&out));
    let not_json = write(&dir, "bad.json", "{\"type\": ");
    let out = deliver(&store, "live", &not_json);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("the event is not valid JSON"), "{}", stderr(&out));
    let no_type = write(&dir, "notype.json", r#"{"source": "shop", "data": {}}"#);
    let out = deliver(&store, "live", &no_type);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("has no `type`"), "{}", stderr(&out));
    let not_object = write(&dir, "array.json", "[1]");
    let out = deliver(&store, "live", &not_object);
    assert!(stderr(&out).contains("must be a JSON object"), "{}", stderr(&out));
}

#[test]
fn a_journal_that_does_not_match_a_changed_sw_definition_fails_the_execution() {
    let dir = scratch("sw-determinism");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let s = setup(&dir);
    create_with_event(&s, &store, "drifted", 30);
    let out = wfc()
        .args(run_args(&s, &store, "drifted", &input(30)))
        .env("WFC_CRASH_AT", "Nap#1.0:after-start")
        .output()
        .expect("wfc runs");
    assert!(stderr(&out).contains("aborting"), "{}", stderr(&out));
    // The definition changes under the running execution. Its pinned version would make it
    // resume on the old definition (durable_versions.rs); an execution with neither a version
    // nor a hash (the library API's `Journal::open`) is run on whatever definition resumes it,
    // and relies on the journal's own check, which this exercises.
    let conn = rusqlite::Connection::open(dir.join("store.db")).expect("open the store");
    conn.execute_batch("UPDATE executions SET definition_hash = NULL, version_id = NULL WHERE name = 'drifted'")
        .expect("update");
    let v2_dir = dir.join("v2");
    std::fs::create_dir_all(&v2_dir).expect("mkdir");
    let v2 = write(&v2_dir, "swcrash.sw.json", CHANGED);
    let out = wfc()
        .args(["run", &v2, "--handlers", &s.handlers, "--input", &input(30), "--store", &store, "--name", "drifted"])
        .output()
        .expect("wfc runs");
    let v = json_of(&out);
    assert_eq!((v["status"].as_str(), v["error"].as_str()), (Some("FAILED"), Some("States.Runtime")), "{v:#}");
    let cause = v["cause"].as_str().unwrap_or_default();
    assert!(cause.contains("determinism violation") && cause.contains("'Charge#1.0.a0'"), "{cause}");
    assert_eq!(describe(&store, "drifted")["status"], "FAILED");
    // The charge function was not called again.
    assert_eq!(ledger_counts(&s.ledger).get(&("drifted".to_owned(), "charge".to_owned())), Some(&1));
}

#[test]
fn a_worker_runs_a_durable_sw_execution_released_while_it_waits_for_its_event() {
    let dir = scratch("sw-worker");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let s = setup(&dir);
    let out = wfc()
        .args(["executions", "--store", &store, "start", &s.def, "--name", "w1", "--input", &input(40)])
        .output()
        .expect("wfc runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let worker = || {
        wfc()
            .args(["worker", "--store", &store, &s.def, "--handlers", &s.handlers, "--exit-when-idle"])
            .args(["--poll-ms", "50", "--suspend-after-seconds", "0.5"])
            .output()
            .expect("wfc worker runs")
    };
    // Workers run it to the event wait and release it there (no event yet): nothing is
    // runnable until an event comes.
    support::live::wait_until("the event wait", Duration::from_secs(600), || {
        let out = worker();
        assert!(out.status.success(), "{}", stderr(&out));
        let d = describe(&store, "w1");
        op(&d, "Confirm#1.0.event").is_some_and(|o| o["status"] == "STARTED").then_some(())
    });
    let d = describe(&store, "w1");
    assert_eq!((d["status"].as_str(), d["owner"].as_str()), (Some("RUNNING"), None), "{d:#}");
    // The event makes it runnable; the next worker finishes it.
    let out = deliver(&store, "w1", &event_file(&s, 40));
    assert!(out.status.success(), "{}", stderr(&out));
    // (The subflow's delay releases it once more.)
    support::live::wait_until("the end", Duration::from_secs(600), || {
        let out = worker();
        assert!(out.status.success(), "{}", stderr(&out));
        (describe(&store, "w1")["status"] != "RUNNING").then_some(())
    });
    let d = describe(&store, "w1");
    assert_eq!(d["status"], "SUCCEEDED", "{d:#}");
    assert_eq!(d["output"], expected_output(40));
    assert!(check_exactly_once(&s, &store, "w1").is_empty());
}

#[test]
fn a_store_written_before_the_event_inbox_is_migrated_and_stays_readable() {
    let dir = scratch("sw-migrate");
    let db = dir.join("store.db");
    let store = format!("sqlite:{}", db.display());
    let s = setup(&dir);
    let out = wfc()
        .args(run_args(&s, &store, "old", &input(50)))
        .env("WFC_CRASH_AT", "Nap#1.0:after-start")
        .output()
        .expect("wfc runs");
    assert!(stderr(&out).contains("aborting"), "{}", stderr(&out));
    // Back to schema version 2, as a wfc without the inbox (nor versions) wrote it: the tables
    // and columns of versions 3 to 5 go, the executions table is rebuilt without its new
    // columns (SQLite cannot drop a column that references another table).
    let conn = rusqlite::Connection::open(&db).expect("open the store");
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         DROP TABLE kv; DROP TABLE kv_signals; DROP TABLE start_groups; DROP TABLE events; DROP TABLE workflows; DROP TABLE workflow_versions; DROP TABLE wfc_migrations;
         CREATE TABLE executions_v2 (
             name TEXT PRIMARY KEY, workflow TEXT NOT NULL, status TEXT NOT NULL, input TEXT NOT NULL,
             output TEXT, error TEXT, cause TEXT, start_time TEXT NOT NULL,
             epoch INTEGER NOT NULL DEFAULT 0, checkpoint_seq INTEGER NOT NULL DEFAULT 0,
             created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, owner TEXT, lease_until INTEGER,
             wake_at INTEGER, definition_hash TEXT, signals INTEGER NOT NULL DEFAULT 0);
         INSERT INTO executions_v2 SELECT name, workflow, status, input, output, error, cause, start_time, epoch,
             checkpoint_seq, created_at, updated_at, owner, lease_until, wake_at, definition_hash, signals
             FROM executions;
         DROP TABLE executions;
         ALTER TABLE executions_v2 RENAME TO executions;
         ALTER TABLE operations DROP COLUMN format;
         CREATE TABLE history (
             execution TEXT NOT NULL REFERENCES executions(name), event_id INTEGER NOT NULL,
             event TEXT NOT NULL, PRIMARY KEY (execution, event_id));
         INSERT INTO history (execution, event_id, event)
             SELECT b.execution, json_extract(e.value, '$.id'), e.value FROM history_batches b, json_each(b.events) e;
         DROP TABLE history_batches;
         PRAGMA user_version = 2;",
    )
    .expect("downgrade");
    drop(conn);
    let d = describe(&store, "old");
    assert_eq!(d["status"], "RUNNING", "{d:#}");
    assert_eq!(op(&d, "Charge#1.0.a0").expect("the charge")["status"], "SUCCEEDED");
    let out = deliver(&store, "old", &event_file(&s, 50));
    assert!(out.status.success(), "{}", stderr(&out));
    finish(&s, &store, "old", 50);
    assert!(check_exactly_once(&s, &store, "old").is_empty());
    let conn = rusqlite::Connection::open(&db).expect("open the store");
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, 11);
}

const TIMERS: &str = r#"{
  "id": "swtimers",
  "version": "1.0",
  "name": "swtimers",
  "functions": [{ "name": "flaky", "resource": "res/flaky" }],
  "events": [{ "name": "Go", "type": "go", "source": "ops" }],
  "states": [
    {
      "name": "Flaky",
      "type": "operation",
      "start": { "kind": "default" },
      "actions": [{ "functionRef": { "refName": "flaky" } }],
      "retry": [{ "expression": "{{ $.errors[?(@.name == 'Busy')] }}", "interval": "PT2S", "maxAttempts": 2 }],
      "transition": { "nextState": "Await" }
    },
    {
      "name": "Await",
      "type": "switch",
      "eventConditions": [{ "eventRef": "Go", "transition": { "nextState": "Done" } }],
      "eventTimeout": "PT2S",
      "default": { "nextState": "Late" }
    },
    { "name": "Done", "type": "inject", "data": { "late": false }, "end": { "kind": "default" } },
    { "name": "Late", "type": "inject", "data": { "late": true }, "end": { "kind": "default" } }
  ]
}"#;

/// A retry back-off and an `eventTimeout` are durable timers: a crash during each is resumed,
/// the failed attempt is replayed (not run again) and the timeout fires after the restart.
#[test]
fn sw_back_offs_and_event_timeouts_survive_a_crash() {
    let dir = scratch("sw-timers");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let ledger = dir.join("ledger.txt");
    let flag = dir.join("busy-once");
    // Busy the first time it is called, then fine.
    let script = format!(
        "echo \"$WFC_EXECUTION_NAME flaky\" >> '{ledger}'; if [ -e '{flag}' ]; then printf '{{\"flaky\": 1}}'; else touch '{flag}'; echo '{{\"Error\": \"Busy\", \"Cause\": \"busy\"}}' >&2; exit 1; fi",
        ledger = ledger.display(),
        flag = flag.display()
    );
    let handlers = write(&dir, "handlers.json", &json!({ "flaky": { "command": ["sh", "-c", script] } }).to_string());
    let def = write(&dir, "swtimers.sw.json", TIMERS);
    let run = |crash: Option<&str>| {
        let mut cmd = wfc();
        cmd.args(["run", &def, "--handlers", &handlers, "--input", "{}", "--store", &store, "--name", "t1"]);
        if let Some(point) = crash {
            cmd.env("WFC_CRASH_AT", point);
        }
        cmd.output().expect("wfc runs")
    };
    for point in ["Flaky#1.retry1:after-start", "Await#1.0.event:after-start"] {
        let out = run(Some(point));
        assert!(stderr(&out).contains("aborting"), "it did not reach {point}: {}", stderr(&out));
    }
    let out = run(None);
    let v = json_of(&out);
    assert_eq!(v["status"], "SUCCEEDED", "{v:#}\n{}", stderr(&out));
    assert_eq!(v["output"], json!({ "flaky": 1, "late": true }));
    let d = describe(&store, "t1");
    let status = |id: &str| op(&d, id).map(|o| (o["type"].clone(), o["status"].clone(), o["starts"].clone()));
    assert_eq!(status("Flaky#1.0.a0"), Some((json!("STEP"), json!("FAILED"), json!(1))), "{d:#}");
    assert_eq!(status("Flaky#1.retry1"), Some((json!("WAIT"), json!("SUCCEEDED"), json!(1))), "{d:#}");
    assert_eq!(status("Flaky#1.1.a0"), Some((json!("STEP"), json!("SUCCEEDED"), json!(1))), "{d:#}");
    assert_eq!(status("Await#1.0.event"), Some((json!("CALLBACK"), json!("TIMED_OUT"), json!(1))), "{d:#}");
    assert_eq!(ledger_counts(&ledger).get(&("t1".to_owned(), "flaky".to_owned())), Some(&2));
}
