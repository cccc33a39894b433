//! The operations of `wfc serve` beyond its core ([`wfc_serve::MORE_OPERATIONS`]: TestState,
//! tags, ...), driven by boto3 unchanged (tests/serve/boto3_more_suite.py, which checks every
//! response against botocore's service model and that every claimed operation was exercised).
//!
//! Like tests/serve.rs: the clients come from `WFC_PY_VENV` (else `target/py-venv`); without
//! them the tests print why and pass, unless `WFC_REQUIRE_PY_SERVERS=1` (CI).
#![allow(missing_docs)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::serve::{Server, boto3_venv};

/// RedriveExecution's Tasks: each writes `<execution> <tag>` to `DIR/ledger` (so the suite
/// counts what ran); `Broken` always fails, `Flaky` fails until `DIR/fixed-<execution>` exists
/// (after `First` of the same execution ran, when both are Parallel branches); `Item` (tagged
/// `Item<n>` for its input `n`) fails on item 2 until `DIR/fixed-<execution>-items` exists;
/// `MapItem` is `Item` for the children of a DISTRIBUTED Map Run (execution `dmap`, and
/// `StopItem` for execution `dstop`, `StopItem2` for `dstop2`); `TolItem` fails and holds
/// the items `DIR/dtol-plan` names (execution `dtol`); `Hold`
/// notes `hold <n>` when it starts, waits for `DIR/release-hold`, then fails on item 1 and
/// returns other items.
const REDRIVE_HANDLER: &str = r#"
import json, os, sys, time
tag, d = sys.argv[1], sys.argv[2]
execution = os.environ.get("WFC_EXECUTION_NAME", "?").split(":")[-1]
if tag == "Hold":
    # Holds until DIR/release-hold exists (a hang guard bounds it), then fails on item 1.
    n = json.load(sys.stdin)
    with open(os.path.join(d, "ledger"), "a") as f:
        f.write(f"hold {n}\n")
    for _ in range(600):
        if os.path.exists(os.path.join(d, "release-hold")):
            break
        time.sleep(0.05)
    if n == 1:
        sys.exit(2)
    print(json.dumps(n))
    sys.exit(0)
if tag == "TolItem":
    # The children of the Map Run of execution `dtol`: DIR/dtol-plan says which items fail
    # and which wait for DIR/dtol-release first (a hang guard bounds it).
    n = json.load(sys.stdin)
    plan = json.load(open(os.path.join(d, "dtol-plan")))
    with open(os.path.join(d, "ledger"), "a") as f:
        f.write(f"dtol Item{n}\n")
    if n in plan["hold"]:
        for _ in range(600):
            if os.path.exists(os.path.join(d, "dtol-release")):
                break
            time.sleep(0.05)
    if n in plan["fail"]:
        sys.stderr.write(f"item {n} fails")
        sys.exit(2)
    print(json.dumps({"item": n}))
    sys.exit(0)
if tag == "MapItem":
    # The child executions of a DISTRIBUTED Map Run: one ledger, `dmap`.
    execution, tag = "dmap", "Item"
if tag == "StopItem":
    # The same for the Map Run of an execution stopped while it runs: ledger `dstop`.
    execution, tag = "dstop", "Item"
if tag == "StopItem2":
    # The same again, its Map in a Parallel branch: ledger `dstop2`.
    execution, tag = "dstop2", "Item"
def ran(line):
    path = os.path.join(d, "ledger")
    return os.path.exists(path) and f"{execution} {line}" in open(path).read().split("\n")
n = json.load(sys.stdin) if tag == "Item" else None
with open(os.path.join(d, "ledger"), "a") as f:
    f.write(f"{execution} {tag}{'' if n is None else n}\n")
fixed = os.path.exists(os.path.join(d, "fixed-" + execution))
if tag == "Flaky" and not fixed and execution.startswith("nested"):
    # The Parallel's other branch (First) ends first, so the failure does not cancel it.
    for _ in range(500):
        if ran("First"):
            break
        time.sleep(0.01)
    time.sleep(0.3)
if tag == "Broken" or (tag == "Flaky" and not fixed):
    sys.stderr.write(f"{tag} is not fixed yet")
    sys.exit(2)
if tag == "Item":
    if n == 2 and not os.path.exists(os.path.join(d, f"fixed-{execution}-items")):
        sys.stderr.write("item 2 is not fixed yet")
        sys.exit(2)
    print(json.dumps({"item": n}))
else:
    print(json.dumps({tag: True}))
"#;

/// `Double` doubles `n`; `First`, `Broken` and `Flaky` are [`REDRIVE_HANDLER`].
fn handlers(dir: &Path, python: &Path) -> PathBuf {
    let py = python.display().to_string();
    let script = dir.join("redrive_handler.py");
    std::fs::write(&script, REDRIVE_HANDLER).unwrap();
    let redrive = |tag: &str| json!({"command": [py, script.display().to_string(), tag, dir.display().to_string()]});
    let doc = json!({
        "Double": {"command": [py, "-c", "import json,sys; d=json.load(sys.stdin); print(json.dumps({'doubled': d['n']*2}))"]},
        "First": redrive("First"),
        "Broken": redrive("Broken"),
        "Flaky": redrive("Flaky"),
        "Item": redrive("Item"),
        "MapItem": redrive("MapItem"),
        "StopItem": redrive("StopItem"),
        "StopItem2": redrive("StopItem2"),
        "TolItem": redrive("TolItem"),
        "Hold": redrive("Hold"),
    });
    let path = dir.join("handlers.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// Step Functions Local's MockConfigFile for the `Mocked` machine of the suite.
fn mock_config(dir: &Path) -> PathBuf {
    let doc = json!({
        "StateMachines": {"Mocked": {"TestCases": {
            "RetryPath": {"Call": "NotReadyThenOk"},
            "FailPath": {"Call": "Broken"},
        }},
        "Gated": {"TestCases": {"Counted": {"Call": "CountedCalls"}}}},
        "MockedResponses": {
            "NotReadyThenOk": {
                "0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "not ready"}},
                "1-2": {"Return": {"StatusCode": 200, "Payload": {"v": 2}}},
            },
            "Broken": {"0": {"Throw": {"Error": "Custom.Error", "Cause": "broken"}}},
            "CountedCalls": {"0": {"Return": {"n": 0}}, "1": {"Return": {"n": 1}}},
        },
    });
    let path = dir.join("MockConfigFile.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn start(store: &str, dir: &Path, python: &Path) -> Server {
    start_with(store, dir, python, &[])
}

/// [`start`] with more environment variables.
fn start_with(store: &str, dir: &Path, python: &Path, more: &[(&str, &Path)]) -> Server {
    let (handlers, mocks) = (handlers(dir, python), mock_config(dir));
    // On PostgreSQL what one server does reaches the others by LISTEN/NOTIFY: their fallback
    // read of the store every 2 s is made an hour, so the suite passes through the signals only
    // (a long poll on B woken by a task A queued, heartbeats and answers through B reaching A).
    // On SQLite the signal rows of the store (wfc-sqlite's signals.rs) and the store file's
    // changes (sqlite_wake.rs) wake the servers, so the same holds.
    let mut envs: Vec<(&str, &Path)> = vec![("WFC_SERVE_FALLBACK_POLL_MS", Path::new("3600000"))];
    envs.extend_from_slice(more);
    let (items, results) = (dir.join("items"), dir.join("results"));
    let args = [
        "--handlers",
        handlers.to_str().unwrap(),
        "--mock-config",
        mocks.to_str().unwrap(),
        "--item-root",
        items.to_str().unwrap(),
        "--result-root",
        results.to_str().unwrap(),
    ];
    Server::start(store, &args, &envs)
}

fn suite(venv: &Path, server: &Server, dir: &Path, phase: &str) {
    suite_with(venv, server, None, dir, phase);
}

/// [`suite`], with `other` (another server on the same store) in `WFC_SERVE_OTHER_ENDPOINT`.
fn suite_with(venv: &Path, server: &Server, other: Option<&Server>, dir: &Path, phase: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve/boto3_more_suite.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(script)
        .args([server.endpoint().as_str(), phase])
        .args(wfc_serve::MORE_OPERATIONS)
        .env_remove("AWS_PROFILE")
        .env("WFC_SERVE_TEST_DIR", dir)
        .env("WFC_SERVE_OTHER_ENDPOINT", other.map(Server::endpoint).unwrap_or_default())
        .output()
        .expect("run the boto3 suite");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "boto3 more-suite ({phase}) failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

/// Returns the server, still running.
fn more_suite_on(store: &str, dir: &Path, venv: &Path) -> Server {
    let python = venv.join("bin/python");
    let server = start(store, dir, &python);
    suite(venv, &server, dir, "all");
    // What must survive a restart (tags, a failed execution to redrive, activity tasks queued
    // and handed out, mock invocation counts, redrive client tokens) is written before it and
    // read after it.
    suite(venv, &server, dir, "before-restart");
    server.stop();
    // Stopped while no server runs it: the CLI deletes its activity task (handed out before)
    // itself, so no row of it is left for the next server to sweep.
    let rows = |prefix: &str| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { wfc_stores::connect(store).await.unwrap().kv_list(prefix).await.unwrap().len() })
    };
    assert_eq!(rows("serve/activity-by-execution/Gone:g1/"), 1);
    let o = support::wfc().args(["executions", "--store", store, "stop", "Gone:g1"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rows("serve/activity-by-execution/Gone:g1/"), 0);
    let server = start(store, dir, &python);
    suite(venv, &server, dir, "after-restart");
    server
}

#[test]
fn boto3_drives_more_operations_on_sqlite() {
    let Some(venv) = boto3_venv("boto3_drives_more_operations_on_sqlite", true) else { return };
    let dir = support::scratch("more_sqlite");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let a = more_suite_on(&store, &dir, &venv);
    a.stop();
    // Two servers on one SQLite file, as on PostgreSQL below: with the periodic read of the
    // store an hour, B's long poll, A's heartbeats and answers pass only through the file
    // watch and the store's signals; B's questions for A's Map Run progress, B's UpdateMapRun
    // of it and B's DeleteStateMachine of a machine whose execution A runs, only through the
    // signals (without them the phase fails).
    let a = one_of_two(&store, &dir, &venv);
    suite(&venv, &a, &dir, "two-servers-a");
    let b = one_of_two(&store, &dir, &venv);
    suite_with(&venv, &b, Some(&a), &dir, "two-servers-b");
    b.stop();
    a.stop();
}

/// One of two servers on `store`, with the Map Runs' own writes of their progress and reads of
/// their limits made an hour (`WFC_MAP_RUN_SYNC_MS`): what the other server asks of or changes
/// in a Map Run it runs reaches it only through the store's signals.
fn one_of_two(store: &str, dir: &Path, venv: &Path) -> Server {
    start_with(store, dir, &venv.join("bin/python"), &[("WFC_MAP_RUN_SYNC_MS", Path::new("3600000"))])
}

#[test]
fn boto3_drives_more_operations_on_postgres() {
    let Some(venv) = boto3_venv("boto3_drives_more_operations_on_postgres", true) else { return };
    let Some(pg) = support::pg::TempPostgres::start("serve_more") else { return };
    let dir = support::scratch("more_pg");
    let a = more_suite_on(&pg.url, &dir, &venv);
    a.stop();
    // Two servers on one store: A queues activity tasks (B is not there yet, so A runs the
    // executions); a worker polling B gets them, heartbeats them through A and B, and answers
    // them through B; A's Tasks get the heartbeats and the answers.
    let a = one_of_two(&pg.url, &dir, &venv);
    suite(&venv, &a, &dir, "two-servers-a");
    let b = one_of_two(&pg.url, &dir, &venv);
    suite_with(&venv, &b, Some(&a), &dir, "two-servers-b");
    b.stop();
    a.stop();
}
