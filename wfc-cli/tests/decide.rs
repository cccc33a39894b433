//! `wfc decide`: the README's example, and errors for input that is not a decision task.
#![allow(missing_docs)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

fn decide(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .arg("decide")
        .args(args)
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn the_readme_example_schedules_the_first_activity() {
    let task =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/adapters/decision-task.json")).unwrap();
    let (code, out, err) =
        decide(&["examples/adapters/ecommerce.asl.json", "--config", "examples/adapters/decider-config.json"], &task);
    assert_eq!(code, 0, "{err}");
    let response: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(response["taskToken"], "12342e17-80f6-FAKE-TASK-TOKEN32f0223");
    let first = &response["decisions"][0];
    assert_eq!(first["decisionType"], "ScheduleActivityTask");
    let attrs = &first["scheduleActivityTaskDecisionAttributes"];
    assert_eq!(attrs["activityId"], "VerifyOrder#1.0");
    assert_eq!(attrs["activityType"]["version"], "1.1");
    assert_eq!(attrs["taskList"]["name"], "CC_TASKS");
    assert_eq!(attrs["input"], "{\"order\":7}");
}

#[test]
fn bad_input_is_a_clear_error() {
    let def = "examples/adapters/ecommerce.asl.json";
    let (code, _, err) = decide(&[def], b"{not json");
    assert_eq!(code, 2);
    assert!(err.contains("decision task in standard input is not valid JSON"), "{err}");
    // An empty poll (no task token) has nothing to decide.
    let (code, _, err) = decide(&[def], br#"{"taskToken": "", "startedEventId": 0}"#);
    assert_eq!(code, 2);
    assert!(err.contains("taskToken"), "{err}");
    let (code, _, err) = decide(&[def, "--config", "examples/adapters/ecommerce.asl.json"], b"{}");
    assert_eq!(code, 2);
    assert!(err.contains("invalid decider configuration"), "{err}");
}

/// docs/adapters.md's child workflow example: with `subflows` naming `ship`, the order's Ship
/// subflow is a child workflow execution; a key the definition never uses is a clear error.
#[test]
fn configured_subflows_are_child_workflows_and_unknown_ones_are_errors() {
    let task =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/adapters/order-decision-task.json"))
            .unwrap();
    let def = "examples/adapters/order.sw.json";
    let (code, out, err) = decide(&[def, "--config", "examples/adapters/subflow-children.json"], &task);
    assert_eq!(code, 0, "{err}");
    let response: Value = serde_json::from_str(&out).unwrap();
    let first = &response["decisions"][0];
    assert_eq!(first["decisionType"], "StartChildWorkflowExecution", "{response:#}");
    let attrs = &first["startChildWorkflowExecutionDecisionAttributes"];
    assert_eq!(attrs["workflowId"], "order-7--Ship#1.0");
    assert_eq!(attrs["control"], "Ship#1.0");
    assert_eq!(attrs["workflowType"], serde_json::json!({ "name": "ship", "version": "1.0" }));
    assert_eq!(attrs["taskList"]["name"], "ship-decisions");
    assert_eq!(attrs["input"], "{\"order\":7,\"charged\":10}");
    // Without the config the subflow runs inline: ship's first Task is an activity of the parent.
    let (code, out, err) = decide(&[def], &task);
    assert_eq!(code, 0, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["decisions"][0]["decisionType"], "ScheduleActivityTask");

    let dir = std::env::temp_dir().join(format!("wfc-decide-subflows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{ "subflows": { "shipping": {} } }"#).unwrap();
    let (code, _, err) = decide(&[def, "--config", bad.to_str().unwrap()], &task);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.json") && err.contains("\"shipping\" names no subflow of the workflow 'order'"), "{err}");
    assert!(err.contains("its subflows are: ship"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `wfc swf-decider` without credentials, with a broken or missing profile, or with a bad
/// endpoint, stops at once with a clear error (exit 2) and never contacts SWF. Credentials and
/// profiles are aws-config's: the file and line of a parse error are in its warning.
#[test]
fn the_swf_decider_poller_needs_credentials_and_a_valid_endpoint() {
    let definition = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swf/shipping.asl.json");
    let dir = std::env::temp_dir().join(format!("wfc-decide-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (credentials_file, config_file) = (dir.join("credentials"), dir.join("config"));
    let _ = std::fs::remove_file(&credentials_file);
    std::fs::write(
        &config_file,
        "[profile ci]\nregion = eu-west-1\naws_access_key_id = AKID\naws_secret_access_key = s\n[profile broken\n",
    )
    .unwrap();
    let run = |env: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wfc"));
        cmd.arg("swf-decider")
            .arg(&definition)
            .args(["--domain", "wfc", "--task-list", "decisions", "--region", "us-east-1"])
            .args(extra)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_ENDPOINT_URL_SWF")
            // Not the machine's own ~/.aws files, and no instance metadata service to wait for.
            .env("AWS_SHARED_CREDENTIALS_FILE", &credentials_file)
            .env("AWS_CONFIG_FILE", &config_file)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (out.status.code().unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    // The shared config file has an error on line 5: named with its file.
    let (code, err) = run(&[], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("error parsing {} on line 5", config_file.display())), "{err}");
    assert!(err.contains("Profile definition must end with ']'"), "{err}");
    assert!(err.contains("error: no AWS credentials: "), "{err}");
    std::fs::write(
        &config_file,
        "[profile ci]\nregion = eu-west-1\naws_access_key_id = AKID\naws_secret_access_key = s\n",
    )
    .unwrap();
    let (code, err) = run(&[], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no AWS credentials") && err.contains("AWS_ACCESS_KEY_ID"), "{err}");
    let (code, err) = run(&[], &["--profile", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("profile `nope` was not defined"), "{err}");
    // A role profile whose source profile is missing: aws-config reads role profiles (the
    // hand-written reader before it refused them).
    std::fs::write(
        &config_file,
        "[profile ci]\nregion = eu-west-1\naws_access_key_id = AKID\naws_secret_access_key = s\n\
         [profile role]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = gone\n",
    )
    .unwrap();
    let (code, err) = run(&[], &["--profile", "role"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("could not find source profile gone"), "{err}");
    // A profile's keys get the poller as far as the endpoint check.
    let (code, err) = run(&[("AWS_PROFILE", "ci")], &["--endpoint", "swf.example.com"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid SWF endpoint \"swf.example.com\""), "{err}");
    let creds = [("AWS_ACCESS_KEY_ID", "AKID"), ("AWS_SECRET_ACCESS_KEY", "secret")];
    let (code, err) = run(&creds, &["--endpoint", "swf.example.com"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid SWF endpoint \"swf.example.com\""), "{err}");
}
