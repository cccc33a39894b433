//! A real crash test of `wfc run --store`: the process is killed (SIGKILL) while its second task
//! is in flight, the same command is run again, and the execution completes without re-running
//! the first task. The journal counts real starts per operation, so it is the invocation ledger.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::{json_of, scratch, wfc, write};

const DEFINITION: &str = r#"{
  "StartAt": "First",
  "States": {
    "First": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:First", "ResultPath": "$.first", "Next": "Second"},
    "Second": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Second", "ResultPath": "$.second", "End": true}
  }
}"#;

/// Second takes 3 real seconds: the window in which the test kills the process.
const MOCKS: &str = r#"{"First": {"return": {"charged": 42}}, "Second": {"return": "shipped", "delay_seconds": 3}}"#;

fn describe(store: &str, name: &str) -> Option<Value> {
    let out = wfc().args(["executions", "--store", store, "describe", name]).output().expect("wfc runs");
    out.status.success().then(|| json_of(&out))
}

fn op<'a>(described: &'a Value, id: &str) -> Option<&'a Value> {
    described["operations"].as_array()?.iter().find(|o| o["id"] == id)
}

#[test]
fn a_killed_run_resumes_without_rerunning_its_completed_task() {
    let dir = scratch("crash");
    let def = write(&dir, "order.asl.json", DEFINITION);
    let mocks = write(&dir, "mocks.json", MOCKS);
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let args = ["run", &def, "--mocks", &mocks, "--input", r#"{"order": 1}"#, "--store", &store, "--name", "order-1"];

    let mut child = wfc().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("wfc starts");
    // Wait until First is checkpointed as done and Second as started, then kill -9.
    let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
    loop {
        if let Some(d) = describe(&store, "order-1")
            && op(&d, "First#1.0").is_some_and(|o| o["status"] == "SUCCEEDED")
            && op(&d, "Second#1.0").is_some_and(|o| o["status"] == "STARTED")
        {
            break;
        }
        if let Some(status) = child.try_wait().expect("poll the child") {
            let mut err = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
            }
            panic!("wfc ended ({status}) before it could be killed: {err}");
        }
        assert!(Instant::now() < deadline, "Second never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL the run");
    child.wait().expect("reap the run");
    let after_crash = describe(&store, "order-1").expect("the execution is stored");
    assert_eq!(after_crash["status"], "RUNNING");

    // The same command again: it resumes.
    let out = wfc().args(args).output().expect("wfc runs");
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let expected = json!({
        "status": "SUCCEEDED",
        "output": {"order": 1, "first": {"charged": 42}, "second": "shipped"}
    });
    assert_eq!(json_of(&out), expected);

    let done = describe(&store, "order-1").expect("the execution is stored");
    assert_eq!(done["status"], "SUCCEEDED");
    assert_eq!(op(&done, "First#1.0").unwrap()["starts"], 1, "the completed task was not re-run: {done:#}");
    assert_eq!(op(&done, "Second#1.0").unwrap()["starts"], 2, "the in-flight task ran again: {done:#}");
    assert!(done["epoch"].as_i64().unwrap() >= 2);

    // A third run of the finished execution prints the same result and runs nothing.
    let again = wfc().args(args).output().expect("wfc runs");
    assert_eq!(json_of(&again), expected);
    let still = describe(&store, "order-1").unwrap();
    assert_eq!(op(&still, "Second#1.0").unwrap()["starts"], 2);

    // list and history.
    let list = wfc().args(["executions", "--store", &store, "list"]).output().unwrap();
    let list = json_of(&list);
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["name"], "order-1");
    let history = json_of(&wfc().args(["executions", "--store", &store, "history", "order-1"]).output().unwrap());
    let types: Vec<&str> = history.as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"ExecutionStarted"));
    assert_eq!(types.last(), Some(&"ExecutionSucceeded"));
    // Bare Lambda function ARNs: AWS records their attempts as LambdaFunction* events.
    assert_eq!(types.iter().filter(|t| **t == "LambdaFunctionSucceeded").count(), 2);
}

#[test]
fn durable_run_errors_are_clear() {
    let dir = scratch("errors");
    let def = write(&dir, "order.asl.json", DEFINITION);
    let mocks = write(&dir, "mocks.json", r#"{"First": {"return": 1}, "Second": {"return": 2}}"#);
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let run = |input: &str| {
        wfc()
            .args(["run", &def, "--mocks", &mocks, "--input", input, "--store", &store, "--name", "e"])
            .output()
            .expect("wfc runs")
    };
    assert!(run("{}").status.success());
    // Same name, other input: the name is an idempotency key.
    let out = run(r#"{"x": 1}"#);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists with a different input"));
    // --store needs --name.
    let out = wfc().args(["run", &def, "--store", &store]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Unknown store kinds and executions.
    let out = wfc().args(["executions", "--store", "redis://x", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected sqlite:PATH"));
    let out = wfc().args(["executions", "--store", &store, "describe", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Durable runs and workers say what they do on stderr (tracing, at info by default):
/// claimed, started, waiting (with the timer's due time), finished; `--quiet` silences them.
#[test]
fn durable_runs_and_workers_log_their_progress() {
    let dir = scratch("logs");
    let def = write(
        &dir,
        "wait.asl.json",
        r#"{"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "Seconds": 1, "Next": "Done"}, "Done": {"Type": "Succeed"}}}"#,
    );
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let out = wfc().args(["run", &def, "--store", &store, "--name", "w1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for line in ["started", "waiting for a timer", "finished"] {
        assert!(err.lines().any(|l| l.contains(line) && l.contains("w1")), "no {line:?} line: {err}");
    }
    assert!(err.contains("state=\"Pause\"") || err.contains("state=Pause"), "{err}");
    let out = wfc().args(["--quiet", "run", &def, "--store", &store, "--name", "w2"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "--quiet logs nothing");

    let out = wfc().args(["executions", "--store", &store, "start", &def, "--name", "w3"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = wfc().args(["worker", "--store", &store, &def, "--exit-when-idle"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for line in ["claimed", "started", "waiting for a timer", "finished"] {
        assert!(err.lines().any(|l| l.contains(line) && l.contains("w3")), "no {line:?} line: {err}");
    }

    // RUST_LOG replaces the default filter: naming the journal's crate and the worker's at info
    // shows a worker's progress lines (the issue's `RUST_LOG=wfc_runtime=info` added nothing; the
    // journal has been its own crate since), and `error` silences them.
    let out = wfc().args(["executions", "--store", &store, "start", &def, "--name", "w4"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = wfc()
        .args(["worker", "--store", &store, &def, "--exit-when-idle"])
        .env("RUST_LOG", "wfc_journal=info,wfc_worker=info")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for line in ["claimed", "started", "waiting for a timer", "finished"] {
        assert!(err.lines().any(|l| l.contains(line) && l.contains("w4")), "no {line:?} line under RUST_LOG: {err}");
    }
    let out = wfc().args(["run", &def, "--store", &store, "--name", "w5"]).env("RUST_LOG", "error").output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "RUST_LOG=error replaces the default");
}

/// `--virtual-time` with `--handlers`: a command takes no virtual time, so elapsed_seconds is
/// the Wait's alone (it was real time: the command's run time leaked in).
#[test]
fn a_command_handler_takes_no_virtual_time() {
    let dir = scratch("virtual-handlers");
    let def = write(
        &dir,
        "slow.asl.json",
        r#"{"StartAt": "Work", "States": {
            "Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:Work", "Next": "Pause"},
            "Pause": {"Type": "Wait", "Seconds": 100, "End": true}}}"#,
    );
    let handlers = write(&dir, "handlers.json", r#"{"Work": {"command": ["sh", "-c", "sleep 0.3; echo 7"]}}"#);
    let out = wfc().args(["run", &def, "--handlers", &handlers, "--virtual-time"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(
        (&v["status"], &v["output"], v["elapsed_seconds"].as_f64()),
        (&json!("SUCCEEDED"), &json!(7), Some(100.0)),
        "{v:#}"
    );
}

/// A misspelt store path is an error naming it for every command that only reads or changes
/// existing executions, and creates nothing; the commands that write create the store.
#[test]
fn read_only_store_commands_refuse_a_missing_database() {
    let dir = scratch("missing-store");
    let def = write(&dir, "order.asl.json", DEFINITION);
    let event = write(&dir, "event.json", r#"{"type": "x", "source": "y"}"#);
    let typo = dir.join("typo.db");
    let store = format!("sqlite:{}", typo.display());
    let commands: [&[&str]; 9] = [
        &["executions", "--store", &store, "list"],
        &["executions", "--store", &store, "describe", "e"],
        &["executions", "--store", &store, "history", "e"],
        &["executions", "--store", &store, "versions"],
        &["executions", "--store", &store, "stop", "e"],
        &["executions", "--store", &store, "upgrade", "e", "--to", &def],
        &["callback", "--store", &store, "--token", "t", "--heartbeat"],
        &["event", "--store", &store, "--execution", "e", &event],
        &["executions", "--store", &format!("{store}?synchronous=normal"), "list"],
    ];
    for args in commands {
        let out = wfc().args(args).output().expect("wfc runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("no store at {}: the file does not exist", typo.display())), "{args:?}: {err}");
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    // `executions start` writes, so it creates the store; then the readers open it.
    let out = wfc().args(["executions", "--store", &store, "start", &def, "--name", "e"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = wfc().args(["executions", "--store", &store, "list"]).output().unwrap();
    assert_eq!(json_of(&out).as_array().map(Vec::len), Some(1));
}

/// `wfc run --store --engine compiled`: the generated code runs durably too. The program is
/// aborted (`WFC_CRASH_AT`, as `kill -9` would stop it) once Second's start is checkpointed;
/// the same command resumes the execution without running First again, and a finished
/// execution prints its stored outcome.
#[test]
fn a_compiled_durable_run_resumes_after_a_crash() {
    let dir = scratch("compiled");
    let def = write(&dir, "order.asl.json", DEFINITION);
    let mocks = write(&dir, "mocks.json", r#"{"First": {"return": {"charged": 42}}, "Second": {"return": "shipped"}}"#);
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let input = r#"{"order": 2}"#;
    let args = [
        "run", &def, "--mocks", &mocks, "--input", input, "--store", &store, "--name", "order-2", "--engine",
        "compiled",
    ];
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("wfc-cache");
    let crashed =
        wfc().args(args).env("WFC_CACHE_DIR", &cache).env("WFC_CRASH_AT", "Second#1.0:after-start").output().unwrap();
    assert_eq!(crashed.status.code(), Some(2), "the program aborted: {}", String::from_utf8_lossy(&crashed.stderr));
    let after_crash = describe(&store, "order-2").expect("the execution is stored");
    assert_eq!(after_crash["status"], "RUNNING");
    assert_eq!(op(&after_crash, "First#1.0").unwrap()["status"], "SUCCEEDED");
    assert_eq!(op(&after_crash, "Second#1.0").unwrap()["status"], "STARTED");

    let out = wfc().args(args).env("WFC_CACHE_DIR", &cache).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let expected =
        json!({"status": "SUCCEEDED", "output": {"order": 2, "first": {"charged": 42}, "second": "shipped"}});
    assert_eq!(json_of(&out), expected);
    let done = describe(&store, "order-2").unwrap();
    assert_eq!(done["status"], "SUCCEEDED");
    assert_eq!(op(&done, "First#1.0").unwrap()["starts"], 1, "the completed task was not re-run: {done:#}");
    assert_eq!(op(&done, "Second#1.0").unwrap()["starts"], 2, "the in-flight task ran again: {done:#}");

    // Finished: the stored outcome, on either engine.
    let again = wfc().args(args).env("WFC_CACHE_DIR", &cache).output().unwrap();
    assert_eq!(json_of(&again), expected);
    let interp: Vec<&str> = args.iter().copied().take(args.len() - 2).collect();
    assert_eq!(json_of(&wfc().args(interp).output().unwrap()), expected);
    // --handlers stays on the interpreter, with a clear error.
    let handlers = write(&dir, "handlers.json", "{}");
    let out = wfc().args(args).args(["--handlers", &handlers]).env("WFC_CACHE_DIR", &cache).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--handlers runs on the interpreter only"));
}
