//! Deploys and upgrades, on SQLite and PostgreSQL (docs/durable.md, "Deploys and versions").
//!
//! - Executions of v1 wait on a timer, a callback and an in-flight task (an activity-like wait:
//!   its worker is stopped while the task runs). Then v2 is deployed: a compiled program of v2
//!   leaves the old executions as they are and starts new ones on v2; a worker with only the v2
//!   file finishes the old ones on v1 (loaded from the store) and new ones on v2.
//! - `wfc executions upgrade` moves a waiting execution to a compatible version (a later state
//!   edited) after a dry run, and refuses an incompatible one (the callback Task made a plain
//!   Task), naming the diverging operation.

mod support;

use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{describe, json_of, op, scratch, wfc, write};

/// Routes on `$.wait` to a durable timer, a callback, or a task; `Done` marks the version.
const V1: &str = r#"{
  "Comment": "v1",
  "StartAt": "Route",
  "States": {
    "Route": {"Type": "Choice", "Default": "Work", "Choices": [
      {"Variable": "$.wait", "StringEquals": "timer", "Next": "Nap"},
      {"Variable": "$.wait", "StringEquals": "callback", "Next": "Ask"}]},
    "Nap": {"Type": "Wait", "Seconds": 15, "Next": "Done"},
    "Ask": {"Type": "Task", "Resource": "res:Ask.waitForTaskToken", "Parameters": {"token.$": "$$.Task.Token"},
            "ResultPath": "$.answer", "Next": "Done"},
    "Work": {"Type": "Task", "Resource": "res:Work", "ResultPath": "$.work", "Next": "Done"},
    "Done": {"Type": "Pass", "Result": "v1", "ResultPath": "$.version", "End": true}
  }
}"#;

fn v2() -> String {
    // A compatible change: the Comment and a later state.
    V1.replace(r#""Comment": "v1""#, r#""Comment": "v2""#).replace(r#""Result": "v1""#, r#""Result": "v2""#)
}

fn v3() -> String {
    // An incompatible one: Ask no longer waits for a callback.
    V1.replace("res:Ask.waitForTaskToken", "res:Ask")
}

struct Files {
    v1: String,
    v2: String,
    v3: String,
    handlers: String,
    mocks: String,
    go: std::path::PathBuf,
}

/// The versions in directories of their own (one file name, so one workflow name: `flow`).
fn files(dir: &Path) -> Files {
    let mut paths = Vec::new();
    for (sub, text) in [("v1", V1.to_owned()), ("v2", v2()), ("v3", v3())] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        paths.push(write(&d, "flow.asl.json", &text));
    }
    let go = dir.join("GO");
    let handlers = json!({
        // The callback's handler keeps its token where the test finds it.
        "res:Ask.waitForTaskToken": {"command": ["sh", "-c",
            format!("echo \"$WFC_TASK_TOKEN\" > '{}'/token-\"$WFC_EXECUTION_NAME\"; echo '{{}}'", dir.display())]},
        // The activity-like task: it works until the test lets it finish.
        "res:Work": {"command": ["sh", "-c",
            format!("while [ ! -f '{}' ]; do sleep 0.05; done; echo '{{\"worked\": true}}'", go.display())]},
        "res:Ask": {"command": ["sh", "-c", "echo '\"asked\"'"]},
    });
    let handlers = write(dir, "handlers.json", &handlers.to_string());
    let mocks = write(dir, "mocks.json", r#"{"Work": {"return": {"worked": "mocked"}}}"#);
    let [v1, v2, v3] = <[String; 3]>::try_from(paths).unwrap();
    Files { v1, v2, v3, handlers, mocks, go }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn start(store: &str, def: &str, name: &str, wait: &str) {
    let input = json!({ "wait": wait }).to_string();
    let out = wfc().args(["executions", "--store", store, "start", def, "--name", name, "--input", &input]).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn worker_child(store: &str, def: &str, f: &Files) -> Child {
    wfc()
        .args(["worker", "--store", store, def, "--handlers", &f.handlers, "--poll-ms", "50"])
        .args(["--suspend-after-seconds", "0.5", "--shutdown-grace-seconds", "0.2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wfc worker starts")
}

fn worker(store: &str, def: &str, f: &Files) -> Value {
    let out = wfc()
        .args(["worker", "--store", store, def, "--handlers", &f.handlers, "--exit-when-idle", "--poll-ms", "50"])
        .args(["--suspend-after-seconds", "0.5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    json_of(&out)
}

/// Polls `done` until it holds; the deadline only stops a broken run from hanging.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn released(d: &Value) -> bool {
    d["status"] == "RUNNING" && d["owner"].is_null()
}

fn answer(store: &str, dir: &Path, name: &str, output: &str) {
    let token = std::fs::read_to_string(dir.join(format!("token-{name}"))).unwrap().trim().to_owned();
    let out = wfc().args(["callback", "--store", store, "--token", &token, "--success", output]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn deploy(store: &str, dir: &Path) {
    let f = files(dir);
    start(store, &f.v1, "timer", "timer");
    start(store, &f.v1, "callback", "callback");
    // v1's workers: the timer and the callback wait are released...
    let stats = worker(store, &f.v1, &f);
    assert_eq!(stats["suspended"], 2, "{stats:#}");
    // ...and a task runs until its worker gets SIGTERM (the timer is not due before the deploy:
    // it waits 15 s, checked below).
    start(store, &f.v1, "activity", "activity");
    let child = worker_child(store, &f.v1, &f);
    wait_until("the task is in flight", || {
        op(&describe(store, "activity"), "Work#1.0").is_some_and(|o| o["status"] == "STARTED")
    });
    let kill = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["released_at_shutdown"], 1, "{}", String::from_utf8_lossy(&out.stdout));
    for name in ["timer", "callback"] {
        let d = describe(store, name);
        assert!(released(&d) && d["wake_at_ms"].as_i64() > Some(now_ms()), "{name} still waits: {d:#}");
    }
    let v1_id = describe(store, "timer")["version"].as_str().expect("pinned to v1").to_owned();
    for name in ["callback", "activity"] {
        assert_eq!(describe(store, name)["version"], v1_id.as_str());
    }

    // Deploy v2 as a compiled program: an old execution is left exactly as it is...
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wfc-cache");
    let before = describe(store, "timer");
    let out = wfc()
        .args(["run", &f.v2, "--engine", "compiled", "--mocks", &f.mocks, "--store", store, "--name", "timer"])
        .args(["--input", r#"{"wait": "timer"}"#])
        .env("WFC_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr(&out).contains("it was left as it is"), "{}", stderr(&out));
    let after = describe(store, "timer");
    assert_eq!(
        (&after["epoch"], &after["version"], &after["status"]),
        (&before["epoch"], &before["version"], &before["status"])
    );
    // ...and a new one runs on v2.
    let out = wfc()
        .args(["run", &f.v2, "--engine", "compiled", "--mocks", &f.mocks, "--store", store, "--name", "new-compiled"])
        .args(["--input", r#"{"wait": "activity"}"#])
        .env("WFC_CACHE_DIR", &cache)
        .output()
        .unwrap();
    let v = json_of(&out);
    assert_eq!(
        v["output"],
        json!({"wait": "activity", "work": {"worked": "mocked"}, "version": "v2"}),
        "{v:#} {}",
        stderr(&out)
    );
    let v2_id = describe(store, "new-compiled")["version"].as_str().expect("pinned to v2").to_owned();
    assert_ne!(v1_id, v2_id);
    // The program's own open refuses too (the compiled engine's guard, in the store's
    // transaction): an execution of v1 opened as v2 is refused and not fenced.
    opened_as_other_version_is_left(store, &f.v2, &v2_id, "timer");

    // Deploy v2 as a worker (the only file it has): the old executions finish on v1.
    start(store, &f.v2, "new-worker", "activity");
    answer(store, dir, "callback", r#"{"ok": 1}"#);
    std::fs::write(&f.go, "").unwrap();
    let due = op(&describe(store, "timer"), "Nap#1").unwrap()["due_at_ms"].as_i64().unwrap();
    wait_until("the timer is due", || now_ms() >= due);
    let stats = worker(store, &f.v2, &f);
    assert_eq!(stats["finished"], 4, "{stats:#}");
    let expect = [
        ("timer", json!({"wait": "timer", "version": "v1"}), &v1_id),
        ("callback", json!({"wait": "callback", "answer": {"ok": 1}, "version": "v1"}), &v1_id),
        ("activity", json!({"wait": "activity", "work": {"worked": true}, "version": "v1"}), &v1_id),
        ("new-worker", json!({"wait": "activity", "work": {"worked": true}, "version": "v2"}), &v2_id),
    ];
    for (name, output, version) in expect {
        let d = describe(store, name);
        assert_eq!((&d["status"], &d["output"]), (&json!("SUCCEEDED"), &output), "{name}: {d:#}");
        assert_eq!(d["version"], version.as_str(), "{name}");
    }
    // The in-flight task ran again (at least once), on v1.
    assert_eq!(op(&describe(store, "activity"), "Work#1.0").unwrap()["starts"], 2);
    // `list` shows every execution's version.
    let list = json_of(&wfc().args(["executions", "--store", store, "list"]).output().unwrap());
    assert!(list.as_array().unwrap().iter().all(|r| r["version"].is_string()), "{list:#}");
    let versions = json_of(&wfc().args(["executions", "--store", store, "versions"]).output().unwrap());
    let current: Vec<&Value> = versions.as_array().unwrap().iter().filter(|v| v["current"] == true).collect();
    assert_eq!(current.len(), 1, "{versions:#}");
    assert_eq!(current[0]["version"], v2_id.as_str());
}

fn opened_as_other_version_is_left(store: &str, file: &str, version: &str, name: &str) {
    use wfc_journal::Journal;
    use wfc_runtime::durable::StoreError;
    let text = std::fs::read_to_string(file).unwrap();
    let workflow = wfc_core::load(wfc_core::Source { path: file, text: &text }).expect("v2 loads").workflow;
    let before = describe(store, name);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let opened = rt.block_on(async {
        let db = wfc_stores::connect(store).await.unwrap();
        Journal::open_version(db, name, &workflow, version, &before["input"], &wfc_runtime::Clock::real()).await
    });
    match opened {
        Err(StoreError::OtherVersion { execution, pinned, given }) => {
            assert_eq!(
                (execution.as_str(), pinned.as_str(), given.as_str()),
                (name, before["version"].as_str().unwrap(), version)
            );
        }
        other => panic!("expected OtherVersion, got {other:?}"),
    }
    let after = describe(store, name);
    assert_eq!(
        (&after["epoch"], &after["checkpoint_seq"], &after["version"]),
        (&before["epoch"], &before["checkpoint_seq"], &before["version"])
    );
}

fn upgrade(store: &str, dir: &Path) {
    let f = files(dir);
    start(store, &f.v1, "up", "callback");
    let stats = worker(store, &f.v1, &f);
    assert_eq!(stats["suspended"], 1, "{stats:#}");
    let v1_id = describe(store, "up")["version"].as_str().unwrap().to_owned();
    let upgrade = |to: &str, extra: &[&str]| {
        wfc().args(["executions", "--store", store, "upgrade", "up", "--to", to]).args(extra).output().unwrap()
    };
    // Incompatible: refused, naming the operation, dry run or not; nothing moves.
    for extra in [&["--dry-run"][..], &[]] {
        let out = upgrade(&f.v3, extra);
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
        let err = stderr(&out);
        assert!(err.contains("diverges at operation 'Ask#1.0'") && err.contains("CALLBACK"), "{err}");
        assert_eq!(describe(store, "up")["version"], v1_id.as_str());
    }
    // Compatible: the dry run says so and moves nothing; then the move.
    let out = upgrade(&f.v2, &["--dry-run"]);
    let v = json_of(&out);
    assert_eq!((&v["compatible"], &v["upgraded"]), (&json!(true), &json!(false)), "{v:#}");
    assert_eq!(v["waiting"], json!(["Ask#1.0"]), "{v:#}");
    assert_eq!(describe(store, "up")["version"], v1_id.as_str());
    let v = json_of(&upgrade(&f.v2, &[]));
    assert_eq!(v["upgraded"], true, "{v:#}");
    let v2_id = v["to"].as_str().unwrap().to_owned();
    assert_eq!(describe(store, "up")["version"], v2_id.as_str());
    // It finishes on v2, under a worker that has only v1's file (it loads v2 from the store).
    answer(store, dir, "up", r#"{"ok": 2}"#);
    let stats = worker(store, &f.v1, &f);
    assert_eq!(stats["finished"], 1, "{stats:#}");
    let d = describe(store, "up");
    assert_eq!(d["output"], json!({"wait": "callback", "answer": {"ok": 2}, "version": "v2"}), "{d:#}");
}

#[test]
fn sqlite_deploys_keep_running_executions_on_their_version() {
    let dir = scratch("deploy-sqlite");
    deploy(&format!("sqlite:{}", dir.join("store.db").display()), &dir);
}

#[test]
fn sqlite_upgrade_checks_the_journal_first() {
    let dir = scratch("upgrade-sqlite");
    upgrade(&format!("sqlite:{}", dir.join("store.db").display()), &dir);
}

#[test]
fn postgres_deploys_and_upgrades() {
    let Some(server) = support::pg::TempPostgres::start("versions") else { return };
    deploy(&server.url, &scratch("deploy-postgres"));
    upgrade(&server.url, &scratch("upgrade-postgres"));
}
