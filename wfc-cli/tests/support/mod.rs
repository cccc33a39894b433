//! Helpers shared by the `wfc` binary's tests: running `wfc`, scratch directories, and a
//! throw-away PostgreSQL server.

#![allow(dead_code)] // each test file uses a different part

pub(crate) mod lambda_fake;
pub(crate) mod live;
pub(crate) mod pg;
pub(crate) mod serve;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) fn wfc() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wfc"));
    cmd.env_remove("RUST_LOG").env_remove("WFC_CRASH_AT");
    cmd
}

/// A fresh scratch directory for one test, under a root of its own per test binary
/// (`CARGO_CRATE_NAME` is the test target's name), so no two test files share one.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(env!("CARGO_CRATE_NAME")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a scratch file");
    path.display().to_string()
}

pub(crate) fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is one JSON value ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

pub(crate) fn describe(store: &str, name: &str) -> Value {
    let out = wfc().args(["executions", "--store", store, "describe", name]).output().expect("wfc runs");
    assert!(out.status.success(), "describe {name}: {}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

pub(crate) fn op<'a>(described: &'a Value, id: &str) -> Option<&'a Value> {
    described["operations"].as_array()?.iter().find(|o| o["id"] == id)
}

/// A handlers file whose every command appends `<execution> <state> <retry>` to `ledger` (the
/// ground truth of which task bodies ran), optionally sleeps, and returns `{"state": ...}`.
pub(crate) fn ledger_handlers(dir: &Path, ledger: &Path, resources: &[(&str, f64)]) -> String {
    let mut map = serde_json::Map::new();
    for (resource, sleep) in resources {
        let script = format!(
            "echo \"$WFC_EXECUTION_NAME $WFC_STATE_NAME $WFC_RETRY_COUNT\" >> '{}'; sleep {sleep}; printf '{{\"state\": \"%s\"}}' \"$WFC_STATE_NAME\"",
            ledger.display()
        );
        map.insert((*resource).to_owned(), serde_json::json!({ "command": ["sh", "-c", script] }));
    }
    write(dir, "handlers.json", &Value::Object(map).to_string())
}

/// How many times each `(execution, state)` ran, from a ledger.
pub(crate) fn ledger_counts(ledger: &Path) -> std::collections::BTreeMap<(String, String), usize> {
    let text = std::fs::read_to_string(ledger).unwrap_or_default();
    let mut counts = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split(' ');
        let (Some(e), Some(s)) = (words.next(), words.next()) else { continue };
        *counts.entry((e.to_owned(), s.to_owned())).or_insert(0) += 1;
    }
    counts
}
