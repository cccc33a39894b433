//! The approval example survives a restart: the process waiting for the approval is killed
//! (SIGKILL), the approval is given from another process, and a new run finishes the order
//! without validating or asking again.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_approval-durable"))
}

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON value")
}

fn log_lines(db: &Path) -> Vec<String> {
    std::fs::read_to_string(db.with_extension("log")).unwrap_or_default().lines().map(str::to_owned).collect()
}

#[test]
fn an_approval_survives_a_restart() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("approval-durable");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("approvals.db");
    let db_arg = db.display().to_string();
    let run = ["run", "--db", &db_arg, "--order", "42", "--amount", "1200"];

    let mut waiting = bin().args(run).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !log_lines(&db).iter().any(|l| l.starts_with("request")) {
        assert!(Instant::now() < deadline, "the approval was never requested");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The machine restarts while the order waits.
    waiting.kill().unwrap();
    let _ = waiting.wait();

    let pending = json(&bin().args(["pending", "--db", &db_arg]).output().unwrap());
    let token = pending[0]["token"].as_str().expect("one approval pending").to_owned();
    let sent_token = log_lines(&db).iter().find_map(|l| l.strip_prefix("request 42 ").map(str::to_owned)).unwrap();
    assert_eq!(token, sent_token, "the token in the request is the one the store waits for");
    assert_eq!(
        json(&bin().args(["approve", "--db", &db_arg, "--token", &token]).output().unwrap())["execution"],
        "order-42"
    );

    let done = json(&bin().args(run).output().unwrap());
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
    assert_eq!(done["output"]["shipment"]["carrier"], "wfc-post");
    assert_eq!(done["output"]["approval"]["approved"], true);
    // Every side effect happened exactly once across both processes.
    assert_eq!(
        log_lines(&db).iter().map(|l| l.split(' ').next().unwrap()).collect::<Vec<_>>(),
        ["validate", "request", "ship"]
    );
    // Running it again prints the stored result and does nothing.
    assert_eq!(json(&bin().args(run).output().unwrap())["status"], "SUCCEEDED");
    assert_eq!(log_lines(&db).len(), 3);
}

/// `approval-durable` with no arguments (the README's first command) tells the same story in one
/// process tree and checks it itself; this holds it to that.
#[test]
fn the_demo_runs_the_whole_story() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("approval-demo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("demo.db");
    let out = bin().args(["demo", "--db", &db.display().to_string()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("killed the worker (SIGKILL)"), "{stdout}");
    assert!(stdout.contains(r#""status":"SUCCEEDED""#), "{stdout}");
    assert_eq!(
        log_lines(&db).iter().map(|l| l.split(' ').next().unwrap()).collect::<Vec<_>>(),
        ["validate", "request", "ship"]
    );
}
