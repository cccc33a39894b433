//! Bad stored state fails only the execution it belongs to, with a clear error: corrupt rows,
//! foreign state (another application's database, a newer schema), a journal that does not
//! match the definition (a determinism violation). An execution of a workflow a worker does not
//! run is left for another worker, and a definition changed under a running execution does not
//! touch it: it resumes on its own version. Other executions in the same store are unaffected.

mod support;

use serde_json::json;
use support::{describe, json_of, scratch, wfc, write};

const DEFINITION: &str = r#"{
  "StartAt": "A",
  "States": {
    "A": {"Type": "Task", "Resource": "res:A", "ResultPath": "$.a", "Next": "B"},
    "B": {"Type": "Task", "Resource": "res:B", "ResultPath": "$.b", "End": true}
  }
}"#;

/// The same workflow with B changed: another definition under the same name.
const CHANGED: &str = r#"{
  "StartAt": "A",
  "States": {
    "A": {"Type": "Task", "Resource": "res:A", "ResultPath": "$.a", "Next": "B"},
    "B": {"Type": "Pass", "Result": "changed", "ResultPath": "$.b", "End": true}
  }
}"#;

const MOCKS: &str = r#"{"A": {"return": "a"}, "B": {"return": "b"}}"#;

struct Env {
    dir: std::path::PathBuf,
    store: String,
    db: std::path::PathBuf,
    def: String,
    mocks: String,
}

fn env(name: &str) -> Env {
    let dir = scratch(name);
    let db = dir.join("store.db");
    Env {
        store: format!("sqlite:{}", db.display()),
        def: write(&dir, "bad.asl.json", DEFINITION),
        mocks: write(&dir, "mocks.json", MOCKS),
        db,
        dir,
    }
}

fn run(e: &Env, def: &str, name: &str, crash_at: Option<&str>) -> std::process::Output {
    let mut cmd = wfc();
    cmd.args(["run", def, "--mocks", &e.mocks, "--input", r#"{"x": 1}"#, "--store", &e.store, "--name", name]);
    if let Some(point) = crash_at {
        cmd.env("WFC_CRASH_AT", point);
    }
    cmd.output().expect("wfc runs")
}

/// Starts `name` and stops it (a crash) after A's checkpoint, so it is RUNNING with a journal.
fn half_run(e: &Env, name: &str) {
    let out = run(e, &e.def, name, Some("A#1.0:after-finish"));
    assert!(!out.status.success());
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sql(e: &Env, statement: &str) {
    let conn = rusqlite::Connection::open(&e.db).expect("open the store");
    conn.execute_batch(statement).expect("corrupt the store");
}

fn good_execution_still_runs(e: &Env) {
    let out = run(e, &e.def, "healthy", None);
    let v = json_of(&out);
    assert_eq!(v["status"], "SUCCEEDED", "{v:#} {}", stderr(&out));
    assert_eq!(v["output"], json!({"x": 1, "a": "a", "b": "b"}));
}

#[test]
fn corrupt_rows_fail_that_execution_with_a_clear_error() {
    let e = env("bad-corrupt");
    half_run(&e, "corrupt-status");
    half_run(&e, "corrupt-result");
    half_run(&e, "corrupt-input");
    sql(&e, "UPDATE operations SET status = 'EXPLODED' WHERE execution = 'corrupt-status'");
    sql(&e, "UPDATE operations SET result = '{not json' WHERE execution = 'corrupt-result' AND op_id = 'A#1.0'");
    sql(&e, "UPDATE executions SET input = '[[[' WHERE name = 'corrupt-input'");

    let out = run(&e, &e.def, "corrupt-status", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("operation 'A#1.0' is corrupt: unknown operation status 'EXPLODED'"),
        "{}",
        stderr(&out)
    );
    let out = run(&e, &e.def, "corrupt-result", None);
    assert!(stderr(&out).contains("operation 'A#1.0' is corrupt: its result is not JSON"), "{}", stderr(&out));
    // Through a worker: the corrupt executions are failed with Wfc.CorruptState, the others run.
    let out = wfc()
        .args(["executions", "--store", &e.store, "start", &e.def, "--name", "queued", "--input", r#"{"x": 2}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Let the leases of the crashed runs lapse (they were opened by `wfc run`): expire them.
    sql(&e, "UPDATE executions SET lease_until = 0");
    let out = wfc()
        .args(["worker", "--store", &e.store, &e.def, "--mocks", &e.mocks, "--exit-when-idle", "--poll-ms", "50"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = json_of(&out);
    assert_eq!(stats["rejected"], 3, "{stats:#}");
    for name in ["corrupt-status", "corrupt-result"] {
        let d = wfc().args(["executions", "--store", &e.store, "list"]).output().unwrap();
        let list = json_of(&d);
        let r = list.as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
        assert_eq!(r["status"], "FAILED", "{r:#}");
        assert_eq!(r["error"], "Wfc.CorruptState");
        assert!(r["cause"].as_str().unwrap().contains("is corrupt"), "{r:#}");
    }
    assert_eq!(describe(&e.store, "queued")["output"], json!({"x": 2, "a": "a", "b": "b"}));
    good_execution_still_runs(&e);
}

#[test]
fn foreign_state_is_refused_clearly() {
    let e = env("bad-foreign");
    // An execution of a workflow this worker does not run (another worker's, in a shared store):
    // it is not claimed, not failed, left exactly as it was.
    half_run(&e, "mine");
    sql(&e, "UPDATE executions SET workflow = 'someone-else', version_id = NULL, lease_until = 0 WHERE name = 'mine'");
    let before = describe(&e.store, "mine");
    let out = wfc()
        .args(["worker", "--store", &e.store, &e.def, "--mocks", &e.mocks, "--exit-when-idle", "--poll-ms", "50"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["claimed"], 0, "{}", String::from_utf8_lossy(&out.stdout));
    let d = describe(&e.store, "mine");
    assert_eq!((d["status"].as_str(), d["epoch"].as_i64()), (Some("RUNNING"), before["epoch"].as_i64()), "{d:#}");
    good_execution_still_runs(&e);

    // Another application's database.
    let foreign = e.dir.join("foreign.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE executions (id INTEGER PRIMARY KEY, payload BLOB);").unwrap();
    drop(conn);
    let out = wfc().args(["executions", "--store", &format!("sqlite:{}", foreign.display()), "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("store error"), "{}", stderr(&out));
    // A row written by a newer wfc, in a format this one does not read: refused, naming it.
    half_run(&e, "newer-row");
    sql(&e, "UPDATE operations SET format = 2 WHERE execution = 'newer-row'");
    let out = wfc().args(["executions", "--store", &e.store, "describe", "newer-row"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("operation 'A#1.0' of execution 'newer-row' is stored in row format 2"),
        "{}",
        stderr(&out)
    );
    // A store written by a newer wfc.
    sql(&e, "PRAGMA user_version = 99");
    let out = wfc().args(["executions", "--store", &e.store, "list"]).output().unwrap();
    assert!(stderr(&out).contains("schema version 99, newer than this wfc understands (11)"), "{}", stderr(&out));
    // It was not changed.
    let conn = rusqlite::Connection::open(&e.db).unwrap();
    assert_eq!(conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(), 99);
}

#[test]
fn a_journal_that_does_not_match_the_definition_fails_the_execution() {
    let e = env("bad-determinism");
    half_run(&e, "drifted");
    // The journal says A was a timer: a run of this definition cannot replay it.
    sql(&e, "UPDATE operations SET type = 'WAIT', subtype = 'Wait' WHERE execution = 'drifted' AND op_id = 'A#1.0'");
    let out = run(&e, &e.def, "drifted", None);
    let v = json_of(&out);
    assert_eq!(v["status"], "FAILED", "{v:#}");
    assert_eq!(v["error"], "States.Runtime");
    assert!(v["cause"].as_str().unwrap().contains("determinism violation"), "{v:#}");
    assert_eq!(describe(&e.store, "drifted")["status"], "FAILED");
    good_execution_still_runs(&e);
}

#[test]
fn a_definition_changed_under_a_running_execution_resumes_it_on_its_own_version() {
    let e = env("bad-changed");
    half_run(&e, "changed");
    half_run(&e, "changed-worker");
    // Same workflow name ("bad", the file stem), other definition: B is a Pass in v2.
    let v2_dir = e.dir.join("v2");
    std::fs::create_dir_all(&v2_dir).unwrap();
    let v2 = write(&v2_dir, "bad.asl.json", CHANGED);
    let out = run(&e, &v2, "changed", None);
    let v = json_of(&out);
    // Resumed on v1, loaded from the store: B is v1's task (mocked "b"), not v2's Pass.
    assert_eq!(v["status"], "SUCCEEDED", "{v:#} {}", stderr(&out));
    assert_eq!(v["output"], json!({"x": 1, "a": "a", "b": "b"}));
    assert!(stderr(&out).contains("is pinned to version"), "{}", stderr(&out));
    // A worker deployed with v2 resumes the other one on v1 too, and starts new ones on v2.
    let out = wfc()
        .args(["executions", "--store", &e.store, "start", &v2, "--name", "fresh", "--input", r#"{"x": 3}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    sql(&e, "UPDATE executions SET lease_until = 0");
    let out = wfc()
        .args(["worker", "--store", &e.store, &v2, "--mocks", &e.mocks, "--exit-when-idle", "--poll-ms", "50"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(describe(&e.store, "changed-worker")["output"], json!({"x": 1, "a": "a", "b": "b"}));
    assert_eq!(describe(&e.store, "fresh")["output"], json!({"x": 3, "a": "a", "b": "changed"}));
    assert_ne!(describe(&e.store, "changed-worker")["version"], describe(&e.store, "fresh")["version"]);
    good_execution_still_runs(&e);
}
