//! `wfc worker`, `wfc executions start|stop` and `wfc callback` on a SQLite store: a durable
//! timer fires after the worker that started it is gone; a callback answered from another
//! process wakes a released execution; SIGTERM lets in-flight work finish (or releases it); a
//! stopped execution fences out the process running it.

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{describe, json_of, ledger_counts, ledger_handlers, op, scratch, wfc, write};

const NAP: &str = r#"{
  "StartAt": "A",
  "States": {
    "A": {"Type": "Task", "Resource": "res:A", "ResultPath": "$.a", "Next": "Nap"},
    "Nap": {"Type": "Wait", "Seconds": 3, "Next": "B"},
    "B": {"Type": "Task", "Resource": "res:B", "ResultPath": "$.b", "End": true}
  }
}"#;

const ASK: &str = r#"{
  "StartAt": "Ask",
  "States": {
    "Ask": {"Type": "Task", "Resource": "res:Ask.waitForTaskToken", "Parameters": {"token.$": "$$.Task.Token"},
            "ResultPath": "$.answer", "End": true}
  }
}"#;

fn start(store: &str, def: &str, name: &str, input: &str) {
    let out =
        wfc().args(["executions", "--store", store, "start", def, "--name", name, "--input", input]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn worker(store: &str, def: &str, handlers: &str, extra: &[&str]) -> serde_json::Value {
    let out = wfc()
        .args(["worker", "--store", store, def, "--handlers", handlers, "--exit-when-idle", "--poll-ms", "50"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

#[test]
fn a_timer_fires_after_the_worker_that_set_it_is_gone() {
    let dir = scratch("worker-timer");
    a_timer_fires_after_its_worker_is_gone(&dir, &format!("sqlite:{}", dir.join("store.db").display()));
}

/// The same on PostgreSQL: a worker there must release a suspended execution too (wfc up to
/// 35a205a could not: its `release` statement failed to prepare, so the worker counted the run
/// as lost and the execution stayed leased until the lease ran out).
#[test]
fn a_timer_fires_after_the_worker_that_set_it_is_gone_postgres() {
    let Some(server) = support::pg::TempPostgres::start("worker-timer") else { return };
    a_timer_fires_after_its_worker_is_gone(&scratch("worker-timer-pg"), &server.url);
}

fn a_timer_fires_after_its_worker_is_gone(dir: &std::path::Path, store: &str) {
    let store = store.to_owned();
    let dir = dir.to_owned();
    let def = write(&dir, "nap.asl.json", NAP);
    let ledger = dir.join("ledger.txt");
    let handlers = ledger_handlers(&dir, &ledger, &[("res:A", 0.0), ("res:B", 0.0)]);
    start(&store, &def, "nap-1", r#"{"n": 1}"#);
    // The first worker runs A, reaches the 3 s Wait (longer than --suspend-after-seconds 1),
    // releases the execution until the timer is due, finds nothing else to do, and exits.
    let stats = worker(&store, &def, &handlers, &["--suspend-after-seconds", "1"]);
    assert_eq!((stats["suspended"].as_u64(), stats["finished"].as_u64()), (Some(1), Some(0)), "{stats:#}");
    let d = describe(&store, "nap-1");
    assert_eq!(d["status"], "RUNNING");
    assert_eq!(d["owner"], serde_json::Value::Null);
    let due = op(&d, "Nap#1").unwrap()["due_at_ms"].as_i64().unwrap();
    assert_eq!(d["wake_at_ms"].as_i64(), Some(due), "{d:#}");
    // Another worker, later: the timer fires (the execution is due) and it finishes.
    let now_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    while now_ms() < due {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats = worker(&store, &def, &handlers, &["--suspend-after-seconds", "1"]);
    assert_eq!(stats["finished"], 1, "{stats:#}");
    let d = describe(&store, "nap-1");
    assert_eq!(d["output"], json!({"n": 1, "a": {"state": "A"}, "b": {"state": "B"}}));
    // A ran once: the second worker replayed it.
    assert_eq!(ledger_counts(&ledger).get(&("nap-1".into(), "A".into())), Some(&1));
}

#[test]
fn a_callback_from_another_process_wakes_a_released_execution() {
    let dir = scratch("worker-callback");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let def = write(&dir, "ask.asl.json", ASK);
    let token_file = dir.join("token.txt");
    let handlers = write(
        &dir,
        "handlers.json",
        &json!({"res:Ask.waitForTaskToken": {"command": ["sh", "-c", format!("echo \"$WFC_TASK_TOKEN\" > '{}'; echo '{{}}'", token_file.display())]}}).to_string(),
    );
    start(&store, &def, "ask-1", "{}");
    let stats = worker(&store, &def, &handlers, &["--suspend-after-seconds", "0.5"]);
    assert_eq!((stats["suspended"].as_u64(), stats["lost"].as_u64()), (Some(1), Some(0)), "{stats:#}");
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    let d = describe(&store, "ask-1");
    assert_eq!(op(&d, "Ask#1.0").unwrap()["callback_token"], token.as_str());
    let out =
        wfc().args(["callback", "--store", &store, "--token", &token, "--success", r#"{"ok": 1}"#]).output().unwrap();
    assert_eq!(json_of(&out), json!({"sent": "SendTaskSuccess", "execution": "ask-1"}));
    let stats = worker(&store, &def, &handlers, &[]);
    assert_eq!(stats["finished"], 1, "{stats:#}");
    assert_eq!(describe(&store, "ask-1")["output"], json!({"answer": {"ok": 1}}));
    // The handler was not called again on resume.
    let out = wfc().args(["callback", "--store", &store, "--token", &token, "--heartbeat"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no task is waiting"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigterm_lets_in_flight_work_finish_or_releases_it() {
    let dir = scratch("worker-sigterm");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let def = write(&dir, "nap.asl.json", NAP.replace("\"Seconds\": 3", "\"Seconds\": 0").as_str());
    let ledger = dir.join("ledger.txt");
    let handlers = ledger_handlers(&dir, &ledger, &[("res:A", 1.5), ("res:B", 0.0)]);
    for (name, grace) in [("finishes", "10"), ("released", "0.2")] {
        start(&store, &def, name, "{}");
        let child = wfc()
            .args(["worker", "--store", &store, &def, "--handlers", &handlers, "--poll-ms", "50"])
            .args(["--shutdown-grace-seconds", grace])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
        while !ledger_counts(&ledger).contains_key(&(name.to_owned(), "A".to_owned())) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = child.id().to_string();
        assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stats = json_of(&out);
        let d = describe(&store, name);
        if name == "finishes" {
            assert_eq!(stats["finished"], 1, "{stats:#}");
            assert_eq!(d["status"], "SUCCEEDED");
        } else {
            assert_eq!(stats["released_at_shutdown"], 1, "{stats:#}");
            assert_eq!(d["status"], "RUNNING");
            assert_eq!(d["owner"], serde_json::Value::Null);
            // Another worker resumes it; A was in flight, so it runs again.
            let stats = worker(&store, &def, &handlers, &[]);
            assert_eq!(stats["finished"], 1, "{stats:#}");
            assert_eq!(ledger_counts(&ledger).get(&(name.to_owned(), "A".to_owned())), Some(&2));
        }
    }
}

#[test]
fn stop_aborts_an_execution_and_fences_its_process() {
    let dir = scratch("stop");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let def = write(&dir, "nap.asl.json", NAP.replace("\"Seconds\": 3", "\"Seconds\": 30").as_str());
    let ledger = dir.join("ledger.txt");
    let handlers = ledger_handlers(&dir, &ledger, &[("res:A", 0.0), ("res:B", 0.0)]);
    let child = wfc()
        .args(["run", &def, "--handlers", &handlers, "--store", &store, "--name", "long"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
    loop {
        let out = wfc().args(["executions", "--store", &store, "describe", "long"]).output().unwrap();
        if out.status.success() && op(&json_of(&out), "Nap#1").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let out = child.wait_with_output().unwrap();
            panic!("the run never reached its Wait: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = wfc()
        .args(["executions", "--store", &store, "stop", "long", "--error", "Ops.Stopped", "--cause", "by the test"])
        .output()
        .unwrap();
    let r = json_of(&out);
    assert_eq!((r["status"].as_str(), r["error"].as_str()), (Some("ABORTED"), Some("Ops.Stopped")), "{r:#}");
    // The running process notices at its next lease renewal (every 10 s) and stops.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("was taken away"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = describe(&store, "long");
    assert_eq!(d["status"], "ABORTED");
    assert_eq!(op(&d, "Nap#1").unwrap()["status"], "CANCELLED");
    assert!(!ledger_counts(&ledger).contains_key(&("long".to_owned(), "B".to_owned())), "B never ran");
}
