//! A store written by an older wfc opens, migrates and finishes its executions. The fixture
//! (`tests/fixtures/store-35a205a`, see its README) was made by wfc at commit 35a205a, before
//! executions were pinned to versions: a SQLite file and a PostgreSQL dump, each with an
//! execution waiting on a 30 s timer (long due), one waiting on a callback, and one never
//! claimed. This test stays for good: every later wfc must pass it unchanged.
//!
//! The executions have no version, only the IR hash of the definition that started them; a
//! worker given the same definition file adopts them (pins them to its version) and finishes
//! them. When a later wfc derives another IR from the same file (the hash then differs), the
//! worker adopts them by a replay check instead: the SQLite case also runs with the stored hash
//! changed, as it will look to such a wfc.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{describe, json_of, op, scratch, wfc};

/// The callback's token, as the fixture stored it (README.md).
const TOKEN: &str = "wfc1-53923db73071c8b9ae8cae294adb4077bfa3c9f400b5fb7fb4f952e75e204d60";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-35a205a")
}

/// The definition and handlers, copied next to the store (the approve handler writes its token
/// file into the working directory).
fn setup(dir: &Path) -> (String, String) {
    for file in ["order.asl.json", "handlers.json"] {
        std::fs::copy(fixture().join(file), dir.join(file)).expect("copy a fixture file");
    }
    (dir.join("order.asl.json").display().to_string(), dir.join("handlers.json").display().to_string())
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn finish(store: &str, dir: &Path) {
    let (def, handlers) = setup(dir);
    // Opening migrates; the executions are listed as they were, unpinned.
    let out = wfc().args(["executions", "--store", store, "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let list = json_of(&out);
    let mut names: Vec<&str> = list.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["callback-1", "pending-1", "timer-1"], "{list:#}");
    for r in list.as_array().unwrap() {
        assert_eq!((&r["status"], &r["version"]), (&json!("RUNNING"), &Value::Null), "{r:#}");
        assert!(r["legacy_hash"].is_string(), "{r:#}");
    }
    let callback = describe(store, "callback-1");
    assert_eq!(op(&callback, "Approve#1.0").unwrap()["callback_token"], TOKEN, "{callback:#}");
    // The callback is answered with its token as stored, then a worker with the same file runs.
    let out =
        wfc().args(["callback", "--store", store, "--token", TOKEN, "--success", r#"{"approved": true}"#]).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let worker = || {
        let out = wfc()
            .args(["worker", "--store", store, &def, "--handlers", &handlers, "--exit-when-idle", "--poll-ms", "50"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        json_of(&out)
    };
    // timer-1's timer is long due and callback-1 is answered: both finish. pending-1 starts now,
    // and its 30 s Wait is released until due...
    let stats = worker();
    assert_eq!((stats["finished"].as_u64(), stats["suspended"].as_u64()), (Some(2), Some(1)), "{stats:#}");
    // ...when another worker finishes it.
    let due = op(&describe(store, "pending-1"), "Pause#1").unwrap()["due_at_ms"].as_i64().unwrap();
    let now_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    while now_ms() < due {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let stats = worker();
    assert_eq!(stats["finished"], 1, "{stats:#}");
    let expected = [
        ("timer-1", json!({"order": 1, "mode": "timer", "prepared": {"order": 1, "mode": "timer"}})),
        (
            "callback-1",
            json!({"order": 2, "mode": "callback", "prepared": {"order": 2, "mode": "callback"}, "approval": {"approved": true}}),
        ),
        ("pending-1", json!({"order": 3, "mode": "timer", "prepared": {"order": 3, "mode": "timer"}})),
    ];
    let mut versions = Vec::new();
    for (name, output) in expected {
        let d = describe(store, name);
        assert_eq!((&d["status"], &d["output"]), (&json!("SUCCEEDED"), &output), "{name}: {d:#}");
        // Prepare ran once, before the fixture was made: it was replayed, not run again.
        assert_eq!(op(&d, "Prepare#1.0").unwrap()["starts"], 1, "{name}: {d:#}");
        versions.push(d["version"].as_str().expect("adopted: pinned to the worker's version").to_owned());
    }
    versions.dedup();
    assert_eq!(versions.len(), 1, "{versions:?}");
}

fn sqlite_copy(dir: &Path) -> String {
    let db = dir.join("fixture.db");
    std::fs::copy(fixture().join("fixture.db"), &db).expect("copy the fixture store");
    format!("sqlite:{}", db.display())
}

#[test]
fn sqlite_store_of_35a205a_migrates_and_finishes() {
    let dir = scratch("fixture-sqlite");
    let store = sqlite_copy(&dir);
    finish(&store, &dir);
    // Migrated in place: the schema says its version and lists every migration.
    let conn = rusqlite::Connection::open(dir.join("fixture.db")).unwrap();
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    let applied: i64 = conn.query_row("SELECT COUNT(*) FROM wfc_migrations", [], |r| r.get(0)).unwrap();
    assert_eq!((version, applied), (11, 11));
}

#[test]
fn sqlite_store_of_35a205a_is_adopted_by_replay_when_the_ir_changed() {
    let dir = scratch("fixture-sqlite-ir-changed");
    let store = sqlite_copy(&dir);
    // As a wfc with another IR sees it: the stored hash matches none of its definitions.
    let conn = rusqlite::Connection::open(dir.join("fixture.db")).unwrap();
    conn.execute_batch("UPDATE executions SET definition_hash = 'from-an-older-ir'").unwrap();
    drop(conn);
    finish(&store, &dir);
}

#[test]
fn postgres_store_of_35a205a_migrates_and_finishes() {
    let Some(server) = support::pg::TempPostgres::start("fixture") else { return };
    server.load_sql(&fixture().join("fixture.pg.sql"));
    let dir = scratch("fixture-postgres");
    finish(&server.url, &dir);
}
