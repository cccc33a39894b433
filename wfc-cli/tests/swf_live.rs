//! A live decider loop against moto_server (PyPI `moto[server]`), a local SWF emulator, on
//! loopback: the test registers the types, starts an execution, and then acts as the decider
//! (PollForDecisionTask, `wfc decide`, RespondDecisionTaskCompleted) and as the activity worker
//! (answering from mocks) until the execution closes. It speaks SWF's JSON protocol directly,
//! the documents `wfc decide` reads and writes. moto implements 7 of the 13 decision types;
//! the workflow uses only those. A second test runs `wfc swf-decider` (the poller, on aws-sdk-swf)
//! as the decider, a child process, while the test is the activity worker of a Map workflow.
//!
//! moto_server is found in the virtual environment named by `WFC_PY_VENV` (set by .ci/run), else
//! `target/py-venv`; without it the test prints why and passes, unless `WFC_REQUIRE_PY_SERVERS=1`.
#![allow(missing_docs)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::live::{Killed, free_port, venv_with};

fn venv() -> Option<PathBuf> {
    venv_with("moto_server")
}

/// One SWF call (awsJson1.0: `X-Amz-Target: SimpleWorkflowService.<Op>`).
fn swf(port: u16, op: &str, body: &Value) -> Value {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Amz-Target: SimpleWorkflowService.{op}\r\n\
         Content-Type: application/x-amz-json-1.0\r\n\
         Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/swf/aws4_request, SignedHeaders=host, Signature=0\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_owned() };
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(status < 300, "{op} failed: {status} {body}");
    if body.trim().is_empty() { json!({}) } else { serde_json::from_str(&body).unwrap() }
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn decide(task: &Value) -> Value {
    decide_definition("shipping.asl.json", task)
}

/// `wfc decide tests/swf/<file>` on `task`.
fn decide_definition(file: &str, task: &Value) -> Value {
    let definition = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swf").join(file);
    let mut child = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .arg("decide")
        .arg(definition)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(task.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "wfc decide failed on {task}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_decider_loop_runs_a_workflow_to_completion_on_moto_server() {
    let Some(venv) = venv() else {
        let why = "moto_server is not installed (set WFC_PY_VENV to a venv with moto[server], as .ci/run does)";
        assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "{why}");
        eprintln!("skipping the live SWF decider loop: {why}");
        return;
    };
    let (_moto, port) = moto_with_types(&venv, "shipping", &["Reserve", "Ship"]);
    let domain = "wfc";
    let run = swf(
        port,
        "StartWorkflowExecution",
        &json!({
            "domain": domain, "workflowId": "order-1", "workflowType": { "name": "shipping", "version": "1" },
            "input": json!({ "order": 7 }).to_string(),
        }),
    );
    let run_id = run["runId"].as_str().unwrap().to_owned();

    let mut reserve_calls = 0;
    let mut decisions_made = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
    loop {
        assert!(Instant::now() < deadline, "the workflow did not close; decisions so far: {decisions_made:?}");
        // The decider: every page of the history, then wfc decide.
        let mut pages = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut poll = json!({ "domain": domain, "taskList": { "name": "decisions" }, "identity": "wfc", "maximumPageSize": 5 });
            if let Some(token) = &next {
                poll["nextPageToken"] = json!(token);
            }
            let page = swf(port, "PollForDecisionTask", &poll);
            next = page.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
            pages.push(page);
            if next.is_none() {
                break;
            }
        }
        if pages[0].get("taskToken").and_then(Value::as_str).is_some_and(|t| !t.is_empty()) {
            let response = decide(&Value::Array(pages));
            for d in response["decisions"].as_array().unwrap() {
                decisions_made.push(d["decisionType"].as_str().unwrap().to_owned());
            }
            swf(port, "RespondDecisionTaskCompleted", &response);
        }
        let info = swf(
            port,
            "DescribeWorkflowExecution",
            &json!({ "domain": domain, "execution": { "workflowId": "order-1", "runId": run_id } }),
        );
        if info["executionInfo"]["executionStatus"] == "CLOSED" {
            assert_eq!(info["executionInfo"]["closeStatus"], "COMPLETED", "{info}");
            break;
        }
        // The activity worker: Reserve fails once (Retry with a timer), then both succeed.
        let task = swf(
            port,
            "PollForActivityTask",
            &json!({ "domain": domain, "taskList": { "name": "work" }, "identity": "worker" }),
        );
        if let Some(token) = task.get("taskToken").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            let input: Value = serde_json::from_str(task["input"].as_str().unwrap()).unwrap();
            match task["activityType"]["name"].as_str().unwrap() {
                "Reserve" if reserve_calls == 0 => {
                    reserve_calls += 1;
                    swf(
                        port,
                        "RespondActivityTaskFailed",
                        &json!({ "taskToken": token, "reason": "Busy", "details": "stock locked" }),
                    );
                }
                "Reserve" => {
                    reserve_calls += 1;
                    swf(
                        port,
                        "RespondActivityTaskCompleted",
                        &json!({ "taskToken": token, "result": json!({ "reserved": input["order"] }).to_string() }),
                    );
                }
                "Ship" => {
                    swf(
                        port,
                        "RespondActivityTaskCompleted",
                        &json!({ "taskToken": token, "result": json!("shipped").to_string() }),
                    );
                }
                other => panic!("unexpected activity {other}"),
            }
        } else {
            // Nothing to do: a timer is running (moto fires it once it is due).
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let history = swf(
        port,
        "GetWorkflowExecutionHistory",
        &json!({ "domain": domain, "execution": { "workflowId": "order-1", "runId": run_id } }),
    );
    let completed = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["eventType"] == "WorkflowExecutionCompleted")
        .expect("a WorkflowExecutionCompleted event");
    let result: Value =
        serde_json::from_str(completed["workflowExecutionCompletedEventAttributes"]["result"].as_str().unwrap())
            .unwrap();
    assert_eq!(result, json!({ "order": 7, "reservation": { "reserved": 7 }, "shipment": "shipped" }));
    assert_eq!(reserve_calls, 2);
    for expected in ["ScheduleActivityTask", "StartTimer", "RecordMarker", "CompleteWorkflowExecution"] {
        assert!(decisions_made.iter().any(|d| d == expected), "no {expected} in {decisions_made:?}");
    }
}

/// A signal sent with `SignalWorkflowExecution` is a Serverless Workflow event: it wakes an event
/// state waiting on moto_server, whose timeout timer is then cancelled. (moto implements neither
/// the `SignalExternalWorkflowExecution` decision nor `RequestCancelExternalWorkflowExecution`,
/// so a workflow signalling another is covered by the simulated service of
/// tests/tests/swf_signals.rs.)
#[test]
fn a_signal_wakes_a_serverless_workflow_event_wait_on_moto_server() {
    let Some(venv) = venv() else {
        let why = "moto_server is not installed (set WFC_PY_VENV to a venv with moto[server], as .ci/run does)";
        assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "{why}");
        eprintln!("skipping the live SWF signal test: {why}");
        return;
    };
    let (_moto, port) = moto_with_types(&venv, "payment-wait", &[]);
    let execution = json!({ "domain": "wfc", "workflowId": "payment-1" });
    let mut start = execution.clone();
    start["workflowType"] = json!({ "name": "payment-wait", "version": "1" });
    start["input"] = json!("{}");
    let run_id = swf(port, "StartWorkflowExecution", &start)["runId"].as_str().unwrap().to_owned();
    let poll = || {
        let task = swf(
            port,
            "PollForDecisionTask",
            &json!({ "domain": "wfc", "taskList": { "name": "decisions" }, "identity": "wfc" }),
        );
        assert!(task.get("taskToken").and_then(Value::as_str).is_some_and(|t| !t.is_empty()), "no decision task");
        task
    };
    let types = |r: &Value| -> Vec<String> {
        r["decisions"].as_array().unwrap().iter().map(|d| d["decisionType"].as_str().unwrap().to_owned()).collect()
    };
    // The wait parks: its timeout is an SWF timer.
    let first = decide_definition("payment-wait.sw.json", &poll());
    assert_eq!(types(&first), ["StartTimer", "RecordMarker"], "{first:#}");
    assert_eq!(first["decisions"][0]["startTimerDecisionAttributes"]["startToFireTimeout"], "1800");
    swf(port, "RespondDecisionTaskCompleted", &first);
    let mut signal = execution.clone();
    signal["signalName"] = json!("payment.done");
    signal["input"] = json!(
        json!({ "specversion": "1.0", "id": "p-1", "type": "payment.done", "source": "bank", "data": { "amount": 10 } })
            .to_string()
    );
    swf(port, "SignalWorkflowExecution", &signal);
    let second = decide_definition("payment-wait.sw.json", &poll());
    assert_eq!(types(&second), ["CancelTimer", "CompleteWorkflowExecution"], "{second:#}");
    swf(port, "RespondDecisionTaskCompleted", &second);
    let mut describe = json!({ "domain": "wfc" });
    describe["execution"] = json!({ "workflowId": "payment-1", "runId": run_id });
    let info = swf(port, "DescribeWorkflowExecution", &describe);
    assert_eq!(info["executionInfo"]["closeStatus"], "COMPLETED", "{info}");
    let history = swf(port, "GetWorkflowExecutionHistory", &describe);
    let events = history["events"].as_array().unwrap();
    // moto spells the event TimerCancelled (SWF: TimerCanceled); the decider reads both.
    assert!(
        events.iter().any(|e| e["eventType"] == "TimerCanceled" || e["eventType"] == "TimerCancelled"),
        "{history:#}"
    );
    let completed = events.iter().find(|e| e["eventType"] == "WorkflowExecutionCompleted").expect("completed");
    let result: Value =
        serde_json::from_str(completed["workflowExecutionCompletedEventAttributes"]["result"].as_str().unwrap())
            .unwrap();
    assert_eq!(result, json!({ "begun": true, "amount": 10 }));
}

/// moto_server on a free loopback port, with domain `wfc`, workflow type `name` (decisions on
/// task list `decisions`) and the activity types (on task list `work`) registered.
fn moto_with_types(venv: &Path, workflow: &str, activities: &[&str]) -> (Killed, u16) {
    let port = free_port();
    let moto = Killed(
        Command::new(venv.join("bin/moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "moto_server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    swf(port, "RegisterDomain", &json!({ "name": "wfc", "workflowExecutionRetentionPeriodInDays": "1" }));
    swf(
        port,
        "RegisterWorkflowType",
        &json!({
            "domain": "wfc", "name": workflow, "version": "1",
            "defaultTaskList": { "name": "decisions" }, "defaultChildPolicy": "TERMINATE",
            "defaultExecutionStartToCloseTimeout": "600", "defaultTaskStartToCloseTimeout": "60",
        }),
    );
    for activity in activities {
        swf(
            port,
            "RegisterActivityType",
            &json!({
                "domain": "wfc", "name": activity, "version": "1", "defaultTaskList": { "name": "work" },
                "defaultTaskStartToCloseTimeout": "60", "defaultTaskHeartbeatTimeout": "NONE",
                "defaultTaskScheduleToStartTimeout": "60", "defaultTaskScheduleToCloseTimeout": "120",
            }),
        );
    }
    (moto, port)
}

/// `wfc swf-decider` is the decider (a child process polling moto_server with SigV4-signed
/// calls, history pages of 5 events); the test is the activity worker. The workflow is a Map
/// with MaxConcurrency 2 whose second iteration fails once and is retried after a timer.
#[test]
fn the_swf_decider_poller_runs_a_map_workflow_on_moto_server() {
    let Some(venv) = venv() else {
        let why = "moto_server is not installed (set WFC_PY_VENV to a venv with moto[server], as .ci/run does)";
        assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "{why}");
        eprintln!("skipping the live SWF poller test: {why}");
        return;
    };
    let (_moto, port) = moto_with_types(&venv, "fanout", &["Pack", "Ship"]);
    let definition = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/swf/fanout.asl.json");
    // An unknown domain: the first poll is refused, and the poller stops with SWF's error. Its
    // credentials come from a role profile (aws-config assumes the role through moto's STS) and
    // its endpoint from AWS_ENDPOINT_URL.
    let profiles = std::env::temp_dir().join(format!("wfc-swf-live-role-{}", std::process::id()));
    std::fs::create_dir_all(&profiles).unwrap();
    std::fs::write(
        profiles.join("config"),
        "[profile base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = secret\n\
         [profile deciders]\nrole_arn = arn:aws:iam::123456789012:role/deciders\nsource_profile = base\nregion = us-east-1\n",
    )
    .unwrap();
    let mut wrong = Killed(
        Command::new(env!("CARGO_BIN_EXE_wfc"))
            .arg("swf-decider")
            .arg(&definition)
            .args(["--profile", "deciders"])
            .args(["--domain", "nope", "--task-list", "decisions"])
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_REGION")
            .env_remove("AWS_ENDPOINT_URL_SWF")
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .env("AWS_CONFIG_FILE", profiles.join("config"))
            .env("AWS_SHARED_CREDENTIALS_FILE", profiles.join("credentials"))
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wfc swf-decider starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(120); // a hang guard
    let status = loop {
        if let Some(status) = wrong.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "wfc swf-decider did not stop on an unknown domain");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut said = String::new();
    wrong.0.stderr.take().unwrap().read_to_string(&mut said).unwrap();
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(
        said.contains("SWF PollForDecisionTask failed with HTTP 400: UnknownResourceFault: Unknown domain: nope"),
        "{said}"
    );
    assert!(said.contains(&format!("at http://127.0.0.1:{port} with credentials from AssumeRoleProvider")), "{said}");
    std::fs::remove_dir_all(&profiles).unwrap();

    let log = std::env::temp_dir().join(format!("wfc-swf-decider-{}.log", std::process::id()));
    let mut decider = Killed(
        Command::new(env!("CARGO_BIN_EXE_wfc"))
            .arg("swf-decider")
            .arg(&definition)
            .args(["--endpoint", &format!("http://127.0.0.1:{port}"), "--region", "us-east-1"])
            .args(["--domain", "wfc", "--task-list", "decisions", "--page-size", "5"])
            .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env("RUST_LOG", "wfc_runtime=info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("wfc swf-decider starts"),
    );
    let run = swf(
        port,
        "StartWorkflowExecution",
        &json!({
            "domain": "wfc", "workflowId": "fanout-1", "workflowType": { "name": "fanout", "version": "1" },
            "input": json!({ "order": 7, "items": ["A", "B", "C"] }).to_string(),
        }),
    );
    let run_id = run["runId"].as_str().unwrap().to_owned();
    let execution = json!({ "workflowId": "fanout-1", "runId": run_id });

    let mut pack_calls = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600); // a hang guard: loaded CI machines are slow
    loop {
        let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
        assert!(Instant::now() < deadline, "the workflow did not close; the decider said:\n{}", log_text());
        assert!(decider.0.try_wait().unwrap().is_none(), "wfc swf-decider exited early:\n{}", log_text());
        let info = swf(port, "DescribeWorkflowExecution", &json!({ "domain": "wfc", "execution": execution }));
        if info["executionInfo"]["executionStatus"] == "CLOSED" {
            assert_eq!(info["executionInfo"]["closeStatus"], "COMPLETED", "{info}\n{}", log_text());
            break;
        }
        let task = swf(
            port,
            "PollForActivityTask",
            &json!({ "domain": "wfc", "taskList": { "name": "work" }, "identity": "worker" }),
        );
        let Some(token) = task.get("taskToken").and_then(Value::as_str).filter(|t| !t.is_empty()) else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let input: Value = serde_json::from_str(task["input"].as_str().unwrap()).unwrap();
        match task["activityType"]["name"].as_str().unwrap() {
            "Pack" => {
                let sku = input["sku"].as_str().unwrap().to_owned();
                assert_eq!(input["order"], 7, "ItemSelector: {input}");
                let first_b = sku == "B" && !pack_calls.contains(&sku);
                pack_calls.push(sku.clone());
                if first_b {
                    swf(
                        port,
                        "RespondActivityTaskFailed",
                        &json!({ "taskToken": token, "reason": "Busy", "details": "the packer is busy" }),
                    );
                } else {
                    swf(
                        port,
                        "RespondActivityTaskCompleted",
                        &json!({ "taskToken": token, "result": json!({ "packed": sku }).to_string() }),
                    );
                }
            }
            "Ship" => {
                swf(port, "RespondActivityTaskCompleted", &json!({ "taskToken": token, "result": "\"shipped\"" }));
            }
            other => panic!("unexpected activity {other}"),
        }
    }

    // SIGTERM: the poller stops and says what it did.
    let status = Command::new("kill").args(["-TERM", &decider.0.id().to_string()]).status().unwrap();
    assert!(status.success());
    let stop_deadline = Instant::now() + Duration::from_secs(120);
    let exit = loop {
        if let Some(exit) = decider.0.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < stop_deadline, "wfc swf-decider did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(exit.success(), "wfc swf-decider exited with {exit}:\n{said}");
    assert!(said.contains("stopped;") && said.contains("answered"), "{said}");

    let history = swf(
        port,
        "GetWorkflowExecutionHistory",
        &json!({ "domain": "wfc", "execution": execution, "maximumPageSize": 1000 }),
    );
    let events = history["events"].as_array().unwrap();
    let completed = events.iter().find(|e| e["eventType"] == "WorkflowExecutionCompleted").expect("completed");
    let result: Value =
        serde_json::from_str(completed["workflowExecutionCompletedEventAttributes"]["result"].as_str().unwrap())
            .unwrap();
    assert_eq!(
        result,
        json!({ "order": 7, "items": ["A", "B", "C"],
                "packed": [ { "packed": "A" }, { "packed": "B" }, { "packed": "C" } ], "shipment": "shipped" })
    );
    assert_eq!(pack_calls.iter().filter(|s| *s == "B").count(), 2, "{pack_calls:?}");
    // MaxConcurrency 2: never more than two Pack activities open at once; the retry waited on a
    // timer; what the decider scheduled is in its markers.
    let mut open = 0i32;
    let mut most = 0;
    for e in events {
        match e["eventType"].as_str().unwrap() {
            "ActivityTaskScheduled" if e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == "Pack" => {
                open += 1;
                most = most.max(open);
            }
            "ActivityTaskCompleted" | "ActivityTaskFailed" | "ActivityTaskTimedOut" | "ActivityTaskCanceled" => {
                open -= 1;
            }
            _ => {}
        }
    }
    assert_eq!(most, 2, "at most two Pack activities at once, and two at some point");
    assert!(events.iter().any(|e| e["eventType"] == "TimerFired"), "the retry's back-off is a timer");
    assert!(events.iter().any(|e| e["eventType"] == "MarkerRecorded"), "markers recorded");
}
