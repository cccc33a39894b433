//! `wfc schedule`: a Serverless Workflow's `start.schedule` run by the runtime's scheduler on
//! virtual time, bounded by `--count` or `--until`, one JSON line per instance; and `directInvoke:
//! deny` refusing `wfc run` while the scheduler's starts run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod support;
use support::{scratch, write};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wfc")).env_remove("RUST_LOG").args(args).output().expect("the wfc binary runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("wfc exits normally")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as JSON lines.
fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("a JSON line ({e}): {l}")))
        .collect()
}

fn definitions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/sw/definitions")
}

#[test]
fn deny_refuses_wfc_run_and_the_scheduler_starts_count_instances() {
    let dir = scratch("deny");
    let file = definitions().join("feat-direct-deny.sw.json").display().to_string();
    let mocks = write(&dir, "mocks.json", r#"{"sweep": [{"return": {"swept": 1}}, {"return": {"swept": 2}}]}"#);

    let direct = run(&["run", &file, "--mocks", &mocks, "--virtual-time"]);
    assert_eq!(code(&direct), 1, "{}", stderr(&direct));
    let result: Value = serde_json::from_slice(&direct.stdout).expect("one JSON result");
    assert_eq!(result["status"], "FAILED");
    assert_eq!(result["error"], "Wfc.DirectInvokeDenied");

    let scheduled = run(&["schedule", &file, "--mocks", &mocks, "--virtual-time", "--count", "3"]);
    assert_eq!(code(&scheduled), 0, "{}", stderr(&scheduled));
    // `*/15 * * * *` (Europe/Paris) from the virtual clock's 2024-01-01T00:00:00Z; each instance
    // has fresh mock counters, so each gets the first response.
    let expected: Vec<Value> = ["00:00", "00:15", "00:30"]
        .iter()
        .enumerate()
        .map(|(n, at)| {
            json!({
                "instance": n,
                "scheduledAt": format!("2024-01-01T{at}:00.000Z"),
                "status": "SUCCEEDED",
                "output": {"swept": 1},
                "elapsed_seconds": 0,
            })
        })
        .collect();
    assert_eq!(lines(&scheduled), expected);
    assert!(stderr(&scheduled).contains("3 instance(s) started, 0 failed"), "{}", stderr(&scheduled));
}

#[test]
fn an_interval_until_a_time_runs_overlapping_instances() {
    let dir = scratch("interval");
    // Every 20 minutes from 01:00, five times; `--until 02:00` keeps the first four. Each check
    // takes 30 minutes, longer than the period: the scheduler does not wait for an instance to
    // end before starting the next, so they overlap and end 30 minutes after their start.
    let definition = write(&dir, "poll.sw.yaml", POLL);
    let mocks = write(&dir, "mocks.json", r#"{"check": {"echo": true, "delay_seconds": 1800}}"#);
    let out = run(&[
        "schedule",
        &definition,
        "--virtual-time",
        "--until",
        "2024-01-01T02:00:00Z",
        "--mocks",
        &mocks,
        "--input",
        r#"{"target": "db"}"#,
        "--history",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = lines(&out);
    let summary: Vec<(i64, &str, &str, f64)> = got
        .iter()
        .map(|l| {
            (
                l["instance"].as_i64().unwrap_or(-1),
                l["scheduledAt"].as_str().unwrap_or_default(),
                l["status"].as_str().unwrap_or_default(),
                l["elapsed_seconds"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (0, "2024-01-01T01:00:00.000Z", "SUCCEEDED", 1800.0),
            (1, "2024-01-01T01:20:00.000Z", "SUCCEEDED", 1800.0),
            (2, "2024-01-01T01:40:00.000Z", "SUCCEEDED", 1800.0),
            (3, "2024-01-01T02:00:00.000Z", "SUCCEEDED", 1800.0),
        ]
    );
    assert_eq!(got[0]["output"], json!({"target": "db"}));
    // Instance 1 started (01:20) before instance 0 ended (01:30).
    let first_event = |l: &Value| l["history"][0]["timestamp"].as_str().map(str::to_owned);
    assert_eq!(first_event(&got[1]).as_deref(), Some("2024-01-01T01:20:00.000Z"));
    let last = got[0]["history"].as_array().and_then(|h| h.last()).cloned().unwrap_or_default();
    assert_eq!(last["timestamp"], "2024-01-01T01:30:00.000Z");
    assert!(stderr(&out).contains("4 instance(s) started, 0 failed"), "{}", stderr(&out));
}

#[test]
fn handlers_run_the_functions_and_a_failed_instance_exits_1() {
    let dir = scratch("handlers");
    let definition = write(&dir, "poll.sw.yaml", POLL);
    let script = write(
        &dir,
        "check.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"Error\": \"Down\", \"Cause\": \"no answer\"}' >&2\nexit 3\n",
    );
    let handlers = write(&dir, "handlers.json", &json!({"check": {"command": ["sh", script]}}).to_string());
    let out = run(&["schedule", &definition, "--virtual-time", "--count", "1", "--handlers", &handlers]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let got = lines(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["instance"], 0);
    assert_eq!(got[0]["scheduledAt"], "2024-01-01T01:00:00.000Z");
    assert_eq!(got[0]["status"], "FAILED");
    assert_eq!(got[0]["error"], "Down");
    assert_eq!(got[0]["cause"], "no answer");
    assert!(stderr(&out).contains("1 instance(s) started, 1 failed"), "{}", stderr(&out));
}

/// Every 20 minutes from 01:00, five times, only by the scheduler.
const POLL: &str = r#"id: poll
name: Poll
functions:
  - name: check
    resource: monitor/check
states:
  - name: Check
    type: operation
    start:
      kind: scheduled
      schedule:
        interval: R5/2024-01-01T01:00:00Z/PT20M
        directInvoke: deny
    actions:
      - functionRef:
          refName: check
          parameters:
            target: "{{ $.target }}"
    end:
      kind: default
"#;

#[test]
fn usage_errors() {
    let dir = scratch("usage");
    let file = definitions().join("feat-direct-deny.sw.json").display().to_string();
    // Virtual time with no bound would never end.
    let unbounded = run(&["schedule", &file, "--virtual-time"]);
    assert_eq!(code(&unbounded), 2);
    assert!(stderr(&unbounded).contains("--until TIME or --count N"), "{}", stderr(&unbounded));
    // A workflow without start.schedule has nothing to schedule.
    let plain = definitions().join("greeting.sw.json").display().to_string();
    let none = run(&["schedule", &plain, "--virtual-time", "--count", "1"]);
    assert_eq!(code(&none), 2);
    assert!(stderr(&none).contains("has no `start.schedule`"), "{}", stderr(&none));
    let bad = run(&["schedule", &file, "--virtual-time", "--until", "tomorrow"]);
    assert_eq!(code(&bad), 2);
    assert!(stderr(&bad).contains("--until \"tomorrow\" is not an RFC 3339 time"), "{}", stderr(&bad));
    let _ = dir;
}
