//! `wfc serve` driven by real AWS clients from PyPI, unchanged: boto3 (tests/serve/boto3_suite.py,
//! which also checks every response against botocore's service model) and the AWS CLI.
//!
//! The clients come from the virtual environment .ci/run installs (`WFC_PY_VENV`, else
//! `target/py-venv`); without it the tests print why and pass, unless `WFC_REQUIRE_PY_SERVERS=1`
//! (CI). The suite runs on SQLite, and on PostgreSQL when its binaries are there (see
//! support/pg.rs: required in CI).
#![allow(missing_docs)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::serve::{Server, boto3_venv};

/// The handlers: `Double` doubles `n`; the callback resource writes its task token where the
/// suite reads it (`TOKEN_DIR/<execution>`), as a real integration would send it to a queue.
fn handlers(dir: &Path, python: &Path) -> PathBuf {
    let py = python.display().to_string();
    let doc = json!({
        "Double": {"command": [py, "-c", "import json,sys; d=json.load(sys.stdin); print(json.dumps({'doubled': d['n']*2}))"]},
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken": {"command": [py, "-c",
            "import os; p=os.path.join(os.environ['TOKEN_DIR'], os.environ['WFC_EXECUTION_NAME']); open(p+'.tmp','w').write(os.environ['WFC_TASK_TOKEN']); os.replace(p+'.tmp', p); print('{}')"]},
    });
    let path = dir.join("handlers.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn start(store: &str, dir: &Path, python: &Path) -> Server {
    let handlers = handlers(dir, python);
    Server::start(store, &["--handlers", handlers.to_str().unwrap()], &[("TOKEN_DIR", &dir.join("tokens"))])
}

fn suite(venv: &Path, server: &Server, dir: &Path, phase: &str) {
    std::fs::create_dir_all(dir.join("tokens")).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve/boto3_suite.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(script)
        .args([server.endpoint().as_str(), dir.join("tokens").to_str().unwrap(), phase])
        .args(wfc_serve::OPERATIONS)
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run the boto3 suite");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "boto3 suite ({phase}) failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

fn boto3_suite_on(store: &str, dir: &Path, venv: &Path) {
    let python = venv.join("bin/python");
    let server = start(store, dir, &python);
    suite(venv, &server, dir, "all");
    // A restart on the same store: the machine and the waiting execution survive; the
    // execution finishes on the next server.
    suite(venv, &server, dir, "before-restart");
    server.stop();
    let server = start(store, dir, &python);
    suite(venv, &server, dir, "after-restart");
}

#[test]
fn boto3_drives_serve_on_sqlite() {
    let Some(venv) = boto3_venv("boto3_drives_serve_on_sqlite", true) else { return };
    let dir = support::scratch("boto3_sqlite");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    boto3_suite_on(&store, &dir, &venv);
}

#[test]
fn boto3_drives_serve_on_postgres() {
    let Some(venv) = boto3_venv("boto3_drives_serve_on_postgres", true) else { return };
    let Some(pg) = support::pg::TempPostgres::start("serve") else { return };
    let dir = support::scratch("boto3_pg");
    boto3_suite_on(&pg.url, &dir, &venv);
}

/// The AWS CLI, as a Step Functions Local user runs it: only `--endpoint-url` changes.
#[test]
fn aws_cli_drives_serve() {
    let Some(venv) = boto3_venv("aws_cli_drives_serve", true) else { return };
    let dir = support::scratch("aws_cli");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    aws_cli_suite_on(&store, &dir, &venv);
}

/// The same on a PostgreSQL store.
#[test]
fn aws_cli_drives_serve_on_postgres() {
    let Some(venv) = boto3_venv("aws_cli_drives_serve_on_postgres", true) else { return };
    let Some(pg) = support::pg::TempPostgres::start("aws_cli") else { return };
    let dir = support::scratch("aws_cli_pg");
    aws_cli_suite_on(&pg.url, &dir, &venv);
}

fn aws_cli_suite_on(store: &str, dir: &Path, venv: &Path) {
    let server = start(store, dir, &venv.join("bin/python"));
    let aws = |args: &[&str]| -> Result<Value, String> {
        let out = Command::new(venv.join("bin/aws"))
            .args(["--endpoint-url", &server.endpoint(), "--region", "us-east-1", "--output", "json", "stepfunctions"])
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run aws");
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(if text.trim().is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    };
    let definition = r#"{"StartAt": "Hello", "States": {"Hello": {"Type": "Pass", "Result": {"hello.$": "$.who"}, "ResultPath": "$.greeting", "Next": "Wait"}, "Wait": {"Type": "Wait", "Seconds": 0, "End": true}}}"#;
    let created = aws(&[
        "create-state-machine",
        "--name",
        "Hello",
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--definition",
        definition,
    ])
    .unwrap();
    let machine = created["stateMachineArn"].as_str().unwrap().to_owned();
    assert_eq!(machine, "arn:aws:states:us-east-1:123456789012:stateMachine:Hello");
    let started =
        aws(&["start-execution", "--state-machine-arn", &machine, "--name", "cli-1", "--input", r#"{"who": "world"}"#])
            .unwrap();
    let execution = started["executionArn"].as_str().unwrap().to_owned();
    let described = support::live::wait_until("the CLI's execution to finish", Duration::from_secs(120), || {
        let d = aws(&["describe-execution", "--execution-arn", &execution]).unwrap();
        (d["status"] != "RUNNING").then_some(d)
    });
    assert_eq!(described["status"], "SUCCEEDED", "{described:#}");
    let output: Value = serde_json::from_str(described["output"].as_str().unwrap()).unwrap();
    assert_eq!(output, json!({"who": "world", "greeting": {"hello.$": "$.who"}}));
    // The CLI pages through history itself (--page-size) and joins the pages.
    let history = aws(&["get-execution-history", "--execution-arn", &execution, "--page-size", "2"]).unwrap();
    let types: Vec<&str> = history["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "ExecutionStarted",
            "PassStateEntered",
            "PassStateExited",
            "WaitStateEntered",
            "WaitStateExited",
            "ExecutionSucceeded"
        ]
    );
    let listed = aws(&["list-executions", "--state-machine-arn", &machine, "--status-filter", "SUCCEEDED"]).unwrap();
    assert_eq!(listed["executions"][0]["name"], "cli-1");
    // A broken definition: located diagnostics from validate, InvalidDefinition from create.
    let broken = "{\"StartAt\": \"A\",\n \"States\": {\"A\": {\"Type\": \"Pass\", \"Next\": \"B\"}}}";
    let v = aws(&["validate-state-machine-definition", "--definition", broken]).unwrap();
    assert_eq!(v["result"], "FAIL", "{v:#}");
    assert_eq!(v["diagnostics"][0]["location"], "line 2, column 43", "{v:#}");
    let e = aws(&[
        "create-state-machine",
        "--name",
        "Broken",
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--definition",
        broken,
    ])
    .unwrap_err();
    assert!(e.contains("(InvalidDefinition)") && e.contains("line 2, column 43"), "{e}");
    let e = aws(&[
        "describe-state-machine",
        "--state-machine-arn",
        "arn:aws:states:us-east-1:123456789012:stateMachine:Nope",
    ])
    .unwrap_err();
    assert!(e.contains("(StateMachineDoesNotExist)"), "{e}");
}

/// Listening beyond loopback is refused until requests are authenticated (SigV4).
#[test]
fn serve_refuses_non_loopback() {
    for args in [&["serve", "--listen", "0.0.0.0:0"][..]] {
        let out = support::wfc().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("loopback"), "{args:?}: {stderr}");
    }
}
