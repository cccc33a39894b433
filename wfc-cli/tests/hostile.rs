//! Hostile definitions and inputs through the `wfc` binary (issue 9): `check`, `compile` and
//! `run` either succeed with intact strings or fail with a located diagnostic or AWS's error
//! name, with the documented exit code, and never crash.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/hostile/strings.asl.json")
}

fn wfc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wfc")).args(args).output().unwrap_or_else(|e| panic!("cannot run wfc: {e}"))
}

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfc-cli-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn hostile_strings_check_compile_and_run() {
    let file = fixture();
    let file = file.to_str().unwrap_or_default();
    let check = wfc(&["check", file]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));

    let compile = wfc(&["compile", file]);
    assert_eq!(compile.status.code(), Some(0), "{}", text(&compile.stderr));
    let code = text(&compile.stdout);
    assert!(code.contains("pub mod strings"), "{code}");
    // Strings appear only inside literals: the injected call never appears as code.
    assert!(!code.lines().any(|l| l.trim_start().starts_with("panic!(\"pwned\")")));

    let definition: Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture()).unwrap_or_default()).unwrap_or_default();
    let first = definition["StartAt"].as_str().unwrap_or_default().to_owned();
    let mocks = json!({ "urn:}; panic!(\"pwned\"); {": [{ "return": { "input": { "echo": first } } }],
                        "arn:aws:lambda:us-east-1:1:function:\"#": [{ "return": { "input": { "echo": first } } }] });
    let mocks = scratch("mocks.json", &mocks.to_string());
    let run = wfc(&["run", file, "--virtual-time", "--mocks", mocks.to_str().unwrap_or_default()]);
    assert_eq!(run.status.code(), Some(0), "{}{}", text(&run.stdout), text(&run.stderr));
    let out: Value = serde_json::from_slice(&run.stdout).unwrap_or_default();
    assert_eq!(out["status"], "SUCCEEDED");
    // The Pass state's Result literal, NUL and all, comes out exactly as written.
    assert_eq!(out["output"]["lit"], definition["States"][&first]["Result"]);
}

#[test]
fn limit_diagnostics_are_located() {
    let mut text_yaml = String::from("Comment: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        text_yaml.push_str(&format!("X{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
    }
    text_yaml.push_str("StartAt: A\nStates:\n  A: {Type: Succeed}\n");
    let bomb = scratch("bomb.asl.yaml", &text_yaml);
    let out = wfc(&["check", "--format", "json", bomb.to_str().unwrap_or_default()]);
    assert_eq!(out.status.code(), Some(1));
    let first: Value = text(&out.stdout).lines().next().and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default();
    assert_eq!(first["code"], "WFC0104");
    assert!(first["line"].as_u64().is_some_and(|l| l >= 1), "{first}");

    let mut machine = r#"{"StartAt": "L", "States": {"L": {"Type": "Succeed"}}}"#.to_owned();
    for i in 0..100 {
        machine = format!(
            r#"{{"StartAt": "P{i}", "States": {{"P{i}": {{"Type": "Parallel", "End": true, "Branches": [{machine}]}}}}}}"#
        );
    }
    let deep = scratch("deep.asl.json", &machine);
    let out = wfc(&["compile", deep.to_str().unwrap_or_default()]);
    assert_eq!(out.status.code(), Some(2), "compile of an invalid definition is a usage error");
    assert!(text(&out.stderr).contains("deep.asl.json:1:"), "{}", text(&out.stderr));
}

#[test]
fn runtime_limits_end_runs_with_aws_errors() {
    // A loop whose exit is never taken (a definition without any end is refused at build time).
    let looping = scratch(
        "loop.asl.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "C"},
            "C": {"Type": "Choice", "Choices": [{"Variable": "$.stop", "IsPresent": true, "Next": "D"}], "Default": "A"},
            "D": {"Type": "Succeed"}}}"#,
    );
    let out = wfc(&["run", looping.to_str().unwrap_or_default(), "--virtual-time"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v["error"], "States.Runtime", "{v}");
    assert!(v["cause"].as_str().is_some_and(|c| c.contains("25000 events")), "{v}");

    let doubling = scratch(
        "double.asl.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"a.$": "$.s", "b.$": "$.s"}, "End": true}}}"#,
    );
    let input = scratch("input.json", &json!({ "s": "x".repeat(140_000) }).to_string());
    let out = wfc(&["run", doubling.to_str().unwrap_or_default(), "--input-file", input.to_str().unwrap_or_default()]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(v["error"], "States.DataLimitExceeded", "{v}");
    assert_eq!(
        v["cause"],
        "The state/task 'A' returned a result with a size exceeding the maximum number of bytes service limit."
    );
}
