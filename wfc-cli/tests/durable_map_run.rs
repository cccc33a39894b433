//! Crash tests of a durable DISTRIBUTED Map: each child execution of the Map Run is a
//! CHAINED_INVOKE operation whose own operations are journaled under it, so a `wfc run --store`
//! stopped abruptly (`WFC_CRASH_AT`, which aborts like `kill -9`) inside or after a child
//! resumes without running any completed child Task again. The Task handlers append to a
//! side-effect ledger (see durable_crash.rs); the test compares it with the journal.
//!
//! PostgreSQL runs when its binaries are installed (see tests/support/pg.rs).

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{describe, json_of, ledger_counts, ledger_handlers, op, scratch, wfc, write};

/// Four items, two children at a time, each child one Task; then a last Task in the parent.
const DEFINITION: &str = r#"{
  "StartAt": "Fan",
  "States": {
    "Fan": {
      "Type": "Map",
      "MaxConcurrency": 2,
      "ItemsPath": "$.items",
      "ResultPath": "$.fan",
      "ItemProcessor": {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": "res:W", "End": true}}
      },
      "Next": "B"
    },
    "B": {"Type": "Task", "Resource": "res:B", "ResultPath": "$.b", "End": true}
  }
}"#;

const ITEMS: usize = 4;

struct Setup {
    def: String,
    handlers: String,
    ledger: std::path::PathBuf,
}

fn setup(dir: &Path) -> Setup {
    let ledger = dir.join("ledger.txt");
    let handlers = ledger_handlers(dir, &ledger, &[("res:W", 0.2), ("res:B", 0.1)]);
    Setup { def: write(dir, "fan.asl.json", DEFINITION), handlers, ledger }
}

fn input(order: u64) -> String {
    json!({"order": order, "items": (0..ITEMS).collect::<Vec<_>>()}).to_string()
}

fn run(s: &Setup, store: &str, name: &str, order: u64, crash_at: Option<&str>) -> std::process::Output {
    let input = input(order);
    let mut cmd = wfc();
    cmd.args(["run", &s.def, "--handlers", &s.handlers, "--input", &input, "--store", store, "--name", name]);
    if let Some(point) = crash_at {
        cmd.env("WFC_CRASH_AT", point);
    }
    cmd.output().expect("wfc runs")
}

fn finish(s: &Setup, store: &str, name: &str, order: u64) {
    let out = run(s, store, name, order, None);
    let v = json_of(&out);
    assert_eq!(v["status"], "SUCCEEDED", "{name}: {v:#}\n{}", String::from_utf8_lossy(&out.stderr));
    let expected = json!({
        "order": order,
        "items": (0..ITEMS).collect::<Vec<_>>(),
        "fan": vec![json!({"state": "Work"}); ITEMS],
        "b": {"state": "B"},
    });
    assert_eq!(v["output"], expected, "{name}");
}

/// Checks the ledger against the journal: every child is a finished CHAINED_INVOKE, and every
/// Task (each child's `Work`, the parent's `B`) ran at least once and at most as often as the
/// journal started it. Returns the Tasks that ran more than once (the ledger names a child's
/// Task by the child execution's name, `<run>-<index>`).
fn check_exactly_once(s: &Setup, store: &str, name: &str) -> Vec<String> {
    let d = describe(store, name);
    let counts = ledger_counts(&s.ledger);
    let mut steps = vec![("B#1.0".to_owned(), counts.get(&(name.to_owned(), "B".to_owned())).copied().unwrap_or(0))];
    for index in 0..ITEMS {
        let id = format!("Fan#1.0/{index}");
        let child = op(&d, &id).unwrap_or_else(|| panic!("{name}: no child operation {id}: {d:#}"));
        assert_eq!(child["type"], "CHAINED_INVOKE", "{name}: {id}");
        assert_eq!(child["status"], "SUCCEEDED", "{name}: {id}");
        let suffix = format!("-{index}");
        let ran: Vec<usize> = counts
            .iter()
            .filter(|((execution, state), _)| state == "Work" && execution.ends_with(&suffix))
            .map(|(_, n)| *n)
            .collect();
        assert!(ran.len() <= 1, "{name}: child {index} ran under several names: {counts:?}");
        steps.push((format!("{id}/Work#1.0"), ran.first().copied().unwrap_or(0)));
    }
    let mut reruns = Vec::new();
    for (id, ran) in steps {
        let step = op(&d, &id).unwrap_or_else(|| panic!("{name}: no operation {id}: {d:#}"));
        assert_eq!(step["status"], "SUCCEEDED", "{name}: {id}");
        let starts = step["starts"].as_u64().unwrap_or(0) as usize;
        assert!(ran >= 1, "{name}: {id} never ran");
        assert!(ran <= starts, "{name}: {id} ran {ran} times but the journal started it only {starts} times");
        if ran > 1 {
            reruns.push(id);
        }
    }
    reruns
}

/// Crash at `point`, then run again to the end; returns the Tasks that ran more than once.
/// Each case has a ledger of its own: child execution names come from the seeded random
/// source, so two executions' children may share names.
fn crash_at(dir: &Path, store: &str, name: &str, order: u64, point: &str) -> Vec<String> {
    let case = dir.join(name);
    std::fs::create_dir_all(&case).expect("create the case directory");
    let s = &setup(&case);
    let out = run(s, store, name, order, Some(point));
    assert!(!out.status.success(), "{name}: the run should have crashed at {point}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("aborting"),
        "{name}: it did not reach {point}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    finish(s, store, name, order);
    check_exactly_once(s, store, name)
}

/// Whether the Tasks that ran again are only those of children `maybe_in_flight`: with
/// MaxConcurrency 2, at most one other child runs beside the one at the crash point, and which
/// one depends on the order in which the children finished (each takes about as long as the
/// others), so every child that may be running then is allowed.
fn only_in_flight(v: &[String], maybe_in_flight: &[usize]) -> bool {
    v.len() <= 1 && v.iter().all(|id| maybe_in_flight.iter().any(|i| *id == format!("Fan#1.0/{i}/Work#1.0")))
}

fn chosen_points(store: &str, dir: &Path) {
    // Inside child 2, its Task committed: on resume the child runs again from its start and
    // its Task replays. Child 2 started when child 0 or child 1 finished; the other one, or
    // child 3, may be in flight and run again; nothing else does.
    let v = crash_at(dir, store, "inside-child", 1, "Fan#1.0/2/Work#1.0:after-finish");
    assert!(only_in_flight(&v, &[0, 1, 3]), "{v:?}");
    // Child 1's end committed: it replays from its recorded result; child 0 (if it had not
    // finished yet), 2 or 3 may be the one in flight.
    let v = crash_at(dir, store, "after-child", 2, "Fan#1.0/1:after-finish");
    assert!(only_in_flight(&v, &[0, 2, 3]), "{v:?}");
    // Child 3's Task ran, its outcome not committed: that Task (and at most the other one in
    // flight, whichever child that is) runs again, nothing else.
    let v = crash_at(dir, store, "in-flight", 3, "Fan#1.0/3/Work#1.0:before-finish");
    assert!(v.contains(&"Fan#1.0/3/Work#1.0".to_owned()) && v.len() <= 2, "{v:?}");
    // After the whole Map Run: B runs once, no child runs again.
    let v = crash_at(dir, store, "after-run", 4, "B#1.0:after-start");
    assert!(v.is_empty(), "{v:?}");
    // The level's end journaled (`Fan#1.0.end`), the Map state not gone on: the resume replays
    // the level as it ended, no child runs again.
    let v = crash_at(dir, store, "after-level-end", 5, "Fan#1.0.end:after-finish");
    assert!(v.is_empty(), "{v:?}");
}

#[test]
fn sqlite_map_run_children_resume_without_running_completed_tasks_again() {
    let dir = scratch("map-run-sqlite");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    chosen_points(&store, &dir);
}

#[test]
fn postgres_map_run_children_resume_without_running_completed_tasks_again() {
    let Some(server) = support::pg::TempPostgres::start("maprun") else { return };
    let dir = scratch("map-run-postgres");
    chosen_points(&server.url, &dir);
}

/// Without a crash, the journal holds one CHAINED_INVOKE per child and the output is the
/// non-durable run's.
#[test]
fn a_durable_map_run_has_the_same_output_as_a_plain_one() {
    let dir = scratch("map-run-plain");
    let s = setup(&dir);
    let plain =
        wfc().args(["run", &s.def, "--handlers", &s.handlers, "--input", &input(9)]).output().expect("wfc runs");
    let plain: Value = json_of(&plain);
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let durable = json_of(&run(&s, &store, "plain", 9, None));
    assert_eq!(durable["output"], plain["output"]);
    let d = describe(&store, "plain");
    let children =
        d["operations"].as_array().map_or(0, |ops| ops.iter().filter(|o| o["type"] == "CHAINED_INVOKE").count());
    assert_eq!(children, ITEMS, "{d:#}");
}
