//! The Lambda durable function adapter against `dex-local-runner` (PyPI
//! `aws-durable-execution-sdk-python-testing`), AWS's local durable execution service, on
//! loopback. The runner invokes `wfc lambda-serve` through the Lambda Invoke API; the test
//! checks each execution's result and the history the runner recorded.
//!
//! The runner is found in the Python virtual environment named by `WFC_PY_VENV` (set by .ci/run,
//! which installs it), else `target/py-venv`. Without it the test prints why and passes, unless
//! `WFC_REQUIRE_PY_SERVERS=1` (CI) makes that a failure.
#![allow(missing_docs)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

mod support;
use support::live::{Killed, free_port, venv_with, wait_until};

fn venv() -> Option<PathBuf> {
    venv_with("dex-local-runner")
}

/// `wfc` with the credentials and region aws-config reads (dex-local-runner does not check
/// signatures, but the SDK signs every request and needs them).
fn wfc_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wfc"));
    c.env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_REGION", "us-west-2")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ENDPOINT_URL_LAMBDA");
    c
}

/// One HTTP/1.1 exchange; returns the status and the JSON body.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("malformed response")?;
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("bad status")?;
    Ok((status, serde_json::from_str(body).unwrap_or(Value::String(body.to_owned()))))
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

struct Servers {
    dir: PathBuf,
    dex_port: u16,
    lambda_port: u16,
    _dex: Killed,
}

impl Servers {
    /// Starts dex-local-runner with `runner_args` added (`--function-configs`), skipping the
    /// time of waits (`--skip-time`) unless `runner_args` has `--real-time` (wfc's marker, not
    /// the runner's: its waits then take their time). `--slow-wake-ups` (also wfc's) makes the
    /// runner's wake-up that completes a due Wait take 50 ms on the execution's lane, as on a
    /// loaded machine (see examples/lambda-durable/dex_local_runner.py).
    fn start_with(venv: &Path, name: &str, runner_args: &[&str]) -> Servers {
        let skip_time: &[&str] = if runner_args.contains(&"--real-time") { &[] } else { &["--skip-time"] };
        let slow_wake_ups = if runner_args.contains(&"--slow-wake-ups") { "50" } else { "0" };
        let runner_args: Vec<&str> =
            runner_args.iter().copied().filter(|a| !["--real-time", "--slow-wake-ups"].contains(a)).collect();
        let dir = std::env::temp_dir().join(format!("wfc-lambda-live-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (dex_port, lambda_port) = (free_port(), free_port());
        let log = std::fs::File::create(dir.join("dex.log")).unwrap();
        // The runner with its lost wake-up fixed (see examples/lambda-durable/dex_local_runner.py: without
        // it an execution whose Wait completes while its invocation finishes can hang).
        let dex = Command::new(venv.join("bin/python"))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/lambda-durable/dex_local_runner.py"))
            .args(["start-server", "--host", "127.0.0.1", "--port", &dex_port.to_string()])
            .args(["--lambda-endpoint", &format!("http://127.0.0.1:{lambda_port}")])
            .args(["--local-runner-endpoint", &format!("http://127.0.0.1:{dex_port}")])
            .args(skip_time)
            .args(&runner_args)
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_DEFAULT_REGION", "us-west-2")
            .env("WFC_DEX_SLOW_WAKE_UP_MS", slow_wake_ups)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("dex-local-runner starts");
        let dex = Killed(dex);
        wait_until("dex-local-runner to answer /health", Duration::from_secs(600), || {
            http(dex_port, "GET", "/health", None).ok().filter(|(s, _)| *s == 200)
        });
        Servers { dir, dex_port, lambda_port, _dex: dex }
    }

    fn serve(&self, definitions: &[&str], mocks: &Value, ledger: &str) -> Killed {
        let files: Vec<String> = definitions.iter().map(|d| format!("{d}.asl.json")).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        self.serve_with(&files, mocks, ledger, &[])
    }

    /// Serves the definition files `files` of tests/lambda with more `wfc lambda-serve` arguments.
    fn serve_with(&self, files: &[&str], mocks: &Value, ledger: &str, serve_args: &[&str]) -> Killed {
        let mocks_path = self.dir.join(format!("mocks-{}.json", free_port()));
        std::fs::write(&mocks_path, mocks.to_string()).unwrap();
        let defs: Vec<PathBuf> =
            files.iter().map(|f| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda").join(f)).collect();
        let child = wfc_cmd()
            .arg("lambda-serve")
            .args(&defs)
            .args(["--listen", &format!("127.0.0.1:{}", self.lambda_port)])
            .args(["--endpoint", &format!("http://127.0.0.1:{}", self.dex_port)])
            .arg("--mocks")
            .arg(&mocks_path)
            .arg("--ledger")
            .arg(self.dir.join(ledger))
            .args(serve_args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("wfc lambda-serve starts");
        let child = Killed(child);
        let port = self.lambda_port;
        wait_until("wfc lambda-serve to listen", Duration::from_secs(600), || {
            http(port, "GET", "/health", None).ok().filter(|(s, _)| *s == 200)
        });
        child
    }

    fn start_execution(&self, function: &str, name: &str, input: &Value) -> String {
        let body = json!({
            "AccountId": "000000000000", "FunctionName": function, "FunctionQualifier": "$LATEST",
            "ExecutionName": name, "ExecutionTimeoutSeconds": 300, "ExecutionRetentionPeriodDays": 1,
            "Input": input.to_string(),
        });
        let (status, v) = http(self.dex_port, "POST", "/start-durable-execution", Some(&body)).unwrap();
        assert!(status < 300, "start failed: {status} {v}");
        v["ExecutionArn"].as_str().unwrap().to_owned()
    }

    /// Waits for the execution to end; returns it and the names of its history events.
    fn finished(&self, arn: &str) -> (Value, Vec<(String, String)>) {
        let path = format!("/2025-12-01/durable-executions/{}", encode(arn));
        let execution = wait_until("the execution to end", Duration::from_secs(600), || {
            let (_, v) = http(self.dex_port, "GET", &path, None).ok()?;
            (v["Status"] != "RUNNING").then_some(v)
        });
        let (_, history) = http(self.dex_port, "GET", &format!("{path}/history"), None).unwrap();
        let events = history["Events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["EventType"].as_str().unwrap_or_default().to_owned(),
                    e["Name"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        (execution, events)
    }

    /// The execution's history events, as the runner returns them.
    fn history(&self, arn: &str) -> Vec<Value> {
        let path = format!("/2025-12-01/durable-executions/{}/history?IncludeExecutionData=true", encode(arn));
        let (_, history) = http(self.dex_port, "GET", &path, None).unwrap();
        history["Events"].as_array().cloned().unwrap_or_default()
    }

    /// Runs `wfc lambda-callback` against the runner.
    fn callback(&self, id: &str, answer: &[&str]) {
        let out = wfc_cmd()
            .arg("lambda-callback")
            .args(["--endpoint", &format!("http://127.0.0.1:{}", self.dex_port), "--id", id])
            .args(answer)
            .output()
            .unwrap();
        assert!(out.status.success(), "wfc lambda-callback {answer:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn ledger(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default().lines().map(str::to_owned).collect()
    }
}

fn count(events: &[(String, String)], event_type: &str, name: &str) -> usize {
    events.iter().filter(|(t, n)| t == event_type && n == name).count()
}

fn servers_or_skip(name: &str) -> Option<Servers> {
    servers_or_skip_with(name, &[])
}

fn servers_or_skip_with(name: &str, runner_args: &[&str]) -> Option<Servers> {
    match venv() {
        Some(v) => Some(Servers::start_with(&v, name, runner_args)),
        None => {
            let why = "dex-local-runner is not installed (set WFC_PY_VENV to a venv with aws-durable-execution-sdk-python-testing, as .ci/run does)";
            assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "{why}");
            eprintln!("skipping the live Lambda durable tests: {why}");
            None
        }
    }
}

#[test]
fn workflows_run_as_durable_functions_under_dex_local_runner() {
    let Some(s) = servers_or_skip("scenarios") else { return };
    let mocks = json!({
        "One": { "return": { "one": 1 } }, "Two": { "echo": true }, "Three": { "return": "three" },
        "Flaky": [ { "throw": { "error": "Busy", "cause": "try again" } }, { "return": "made it" } ],
        "Left": { "return": "L" }, "Right": { "return": "R" },
        "Double": { "echo": true },
        "Broken": { "throw": { "error": "Payment.Declined", "cause": "card expired" } }
    });
    let _serve = s.serve(&["sequence", "retry", "parallel", "map", "failure"], &mocks, "ledger");

    // Sequential steps with a Wait between them: two invocations (PENDING at the Wait).
    let arn = s.start_execution("sequence", "seq-1", &json!({ "n": 1 }));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(serde_json::from_str::<Value>(e["Result"].as_str().unwrap()).unwrap(), json!("three"));
    for step in ["One#1.0", "Two#1.0", "Three#1.0"] {
        assert_eq!(count(&h, "StepSucceeded", step), 1, "{step}: {h:?}");
    }
    assert_eq!(count(&h, "WaitSucceeded", "Nap#1"), 1, "{h:?}");
    assert_eq!(count(&h, "InvocationCompleted", ""), 2, "{h:?}");

    // A retry (§4.4.5): one STEP, its failed attempt a RETRY with the attempt number and the
    // back-off (the runner's StepFailed with RetryDetails), then the second attempt SUCCEEDs it.
    let arn = s.start_execution("retry", "retry-1", &json!({}));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(e["Result"], "\"made it\"");
    assert_eq!(count(&h, "StepFailed", "Flaky#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "StepSucceeded", "Flaky#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "WaitStarted", "Flaky#1.retry1") + count(&h, "StepStarted", "Flaky#1.1"), 0, "{h:?}");
    let events = s.history(&arn);
    let failed = events_of(&events, "StepFailed");
    let retry = &failed[0]["StepFailedDetails"];
    assert_eq!(retry["RetryDetails"]["NextAttemptDelaySeconds"], 5, "{retry}");
    assert_eq!(retry["RetryDetails"]["CurrentAttempt"], 1, "{retry}");
    assert_eq!(retry["Error"]["Payload"]["ErrorType"], "Busy", "{retry}");

    // A Parallel: one branch waits while the other runs its step.
    let arn = s.start_execution("parallel", "par-1", &json!({}));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(e["Result"], "[\"L\",\"R\"]");
    assert_eq!(count(&h, "StepSucceeded", "Both#1.0/0/Left#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "WaitSucceeded", "Both#1.0/1/Pause#1"), 1, "{h:?}");

    // A Map over three items.
    let arn = s.start_execution("map", "map-1", &json!({ "items": [1, 2, 3] }));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(e["Result"], "[1,2,3]");
    assert_eq!(h.iter().filter(|(t, _)| t == "StepSucceeded").count(), 3, "{h:?}");

    // A failure: the execution fails with the task's error.
    let arn = s.start_execution("failure", "fail-1", &json!({}));
    let (e, _) = s.finished(&arn);
    assert_eq!(e["Status"], "FAILED", "{e}");
    assert_eq!(e["Error"]["ErrorType"], "Payment.Declined", "{e}");
    assert_eq!(e["Error"]["ErrorMessage"], "card expired", "{e}");

    // Every Task attempt ran exactly once across all the invocations (replays ran none).
    let mut ledger = s.ledger("ledger");
    ledger.sort();
    assert_eq!(
        ledger,
        [
            "Broken 0", "Double 0", "Double 0", "Double 0", "Flaky 0", "Flaky 1", "Left 0", "One 0", "Right 0",
            "Three 0", "Two 0"
        ]
    );
}

#[test]
fn an_interrupted_invocation_is_replayed_without_running_finished_steps_again() {
    let Some(s) = servers_or_skip("interrupted") else { return };
    // The first process hangs in Second; it is killed there, and dex-local-runner invokes again.
    let slow = json!({ "First": { "return": 1 }, "Second": { "return": 2, "delay_seconds": 600 } });
    let first_process = s.serve(&["interrupted"], &slow, "ledger");
    let arn = s.start_execution("interrupted", "int-1", &json!({}));
    wait_until("Second to start", Duration::from_secs(600), || {
        s.ledger("ledger").iter().any(|l| l == "Second 0").then_some(())
    });
    drop(first_process);
    let fast = json!({ "First": { "return": 1 }, "Second": { "return": 2 } });
    let _second_process = s.serve(&["interrupted"], &fast, "ledger");
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(e["Result"], "2");
    // First finished before the interruption: replayed, not run again. Second was in flight:
    // it ran again (at-least-once for the step in flight, as docs/durable.md says).
    assert_eq!(s.ledger("ledger"), ["First 0", "Second 0", "Second 0"]);
    assert_eq!(count(&h, "StepSucceeded", "First#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "StepSucceeded", "Second#1.0"), 1, "{h:?}");
}

/// `wfc lambda-invoke` is what a Lambda runtime shim runs per event: here the test is the Invoke
/// endpoint, and hands each event dex-local-runner sends to the command.
#[test]
fn lambda_invoke_answers_each_event_the_runner_sends() {
    let Some(s) = servers_or_skip("invoke-cmd") else { return };
    let listener = std::net::TcpListener::bind(("127.0.0.1", s.lambda_port)).unwrap();
    let mocks = s.dir.join("mocks.json");
    std::fs::write(
        &mocks,
        json!({ "One": { "return": 1 }, "Two": { "return": 2 }, "Three": { "return": 3 } }).to_string(),
    )
    .unwrap();
    let definition = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda/sequence.asl.json");
    let dex_port = s.dex_port;
    // A hang guard: if the runner never invokes again, the test fails instead of blocking in
    // accept forever.
    listener.set_nonblocking(true).unwrap();
    let shim = std::thread::spawn(move || {
        let mut outputs = Vec::new();
        loop {
            let mut stream = wait_until("dex-local-runner to invoke the function", Duration::from_secs(600), || {
                match listener.accept() {
                    Ok((stream, _)) => Some(stream),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
                    Err(e) => panic!("accept: {e}"),
                }
            });
            stream.set_nonblocking(false).unwrap();
            let mut raw = Vec::new();
            let mut buf = [0u8; 65536];
            let (head_end, length) = loop {
                let n = stream.read(&mut buf).unwrap();
                raw.extend_from_slice(&buf[..n]);
                if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&raw[..i]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    break (i + 4, len);
                }
            };
            while raw.len() < head_end + length {
                let n = stream.read(&mut buf).unwrap();
                raw.extend_from_slice(&buf[..n]);
            }
            let mut child = wfc_cmd()
                .arg("lambda-invoke")
                .arg(&definition)
                .args(["--endpoint", &format!("http://127.0.0.1:{dex_port}"), "--mocks"])
                .arg(&mocks)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&raw[head_end..]).unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "wfc lambda-invoke failed");
            let body = String::from_utf8(out.stdout).unwrap();
            write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
            let output: Value = serde_json::from_str(&body).unwrap();
            let done = output["Status"] != "PENDING";
            outputs.push(output);
            if done {
                return outputs;
            }
        }
    });
    let arn = s.start_execution("sequence", "cmd-1", &json!({}));
    let outputs = shim.join().unwrap();
    assert_eq!(outputs, [json!({ "Status": "PENDING" }), json!({ "Status": "SUCCEEDED", "Result": "3" })]);
    let (e, _) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(e["Result"], "3");
}

/// The task token a callback task's handler was given: the ledger's third word (what an external
/// system receives, e.g. in the SQS message).
fn token_in_ledger(s: &Servers, ledger: &str, state: &str) -> String {
    wait_until("the callback task's handler to run", Duration::from_secs(600), || {
        s.ledger(ledger).iter().find_map(|l| {
            let mut words = l.split(' ');
            (words.next() == Some(state)).then(|| words.nth(1).map(str::to_owned)).flatten()
        })
    })
}

fn events_of<'a>(events: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["EventType"] == event_type).collect()
}

#[test]
fn a_callback_waits_pending_until_the_service_completes_it() {
    let Some(s) = servers_or_skip("callback") else { return };
    let mocks = json!({
        "Prepare": { "return": "packed" }, "Ask": { "return": "message sent" }, "Ship": { "echo": true },
    });
    let _serve = s.serve(&["callback", "callback_timeout"], &mocks, "ledger");

    // Approved: the handler gets the service's callback id as its task token; the invocation
    // answers PENDING; a heartbeat and then SendDurableExecutionCallbackSuccess (through
    // `wfc lambda-callback`) make the runner invoke again, which replays the callback's result.
    let arn = s.start_execution("callback", "cb-ok", &json!({ "order": 7 }));
    let token = token_in_ledger(&s, "ledger", "Ask");
    wait_until("the first invocation to answer PENDING", Duration::from_secs(600), || {
        (!events_of(&s.history(&arn), "InvocationCompleted").is_empty()).then_some(())
    });
    let history = s.history(&arn);
    let started = events_of(&history, "CallbackStarted");
    assert_eq!(started.len(), 1, "{history:?}");
    assert_eq!(started[0]["CallbackStartedDetails"]["CallbackId"], token.as_str(), "{history:?}");
    assert_eq!(started[0]["Name"], "Ask#1.0");
    // (The runner's history leaves the CallbackOptions out of CallbackStarted; the timeout
    // cases below show it received them.)
    s.callback(&token, &["--heartbeat"]);
    s.callback(&token, &["--success", r#"{"approved": true}"#]);
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    let result: Value = serde_json::from_str(e["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!({ "order": 7, "prepared": "packed", "approval": { "approved": true } }));
    assert_eq!(count(&h, "CallbackSucceeded", "Ask#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "StepSucceeded", "Ask#1.0.send"), 1, "{h:?}");
    // A second answer to a finished callback is refused.
    let out = wfc_cmd()
        .args(["lambda-callback", "--endpoint", &format!("http://127.0.0.1:{}", s.dex_port), "--id", &token])
        .args(["--success", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a completed callback accepted a second answer");

    // Rejected: SendDurableExecutionCallbackFailure's error goes through Catch.
    let arn = s.start_execution("callback", "cb-rejected", &json!({ "order": 8 }));
    let token = wait_until("the second callback", Duration::from_secs(600), || {
        let tokens: Vec<String> =
            s.ledger("ledger").iter().filter(|l| l.starts_with("Ask ")).map(|l| l[6..].to_owned()).collect();
        (tokens.len() == 2).then(|| tokens[1].clone())
    });
    s.callback(&token, &["--failure", "Rejected", "over budget"]);
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    let result: Value = serde_json::from_str(e["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result["rejected"], json!({ "Error": "Rejected", "Cause": "over budget" }), "{result}");
    assert_eq!(count(&h, "CallbackFailed", "Ask#1.0"), 1, "{h:?}");

    // Nobody answers: the service times the callback out (TimeoutSeconds, then HeartbeatSeconds)
    // and invokes again; the replay fails the attempt with the States Language error.
    for (name, input, error) in [
        ("cb-timeout", json!({ "timeout": 1, "heartbeat": 3600 }), "States.Timeout"),
        ("cb-heartbeat", json!({ "timeout": 3600, "heartbeat": 1 }), "States.Timeout"),
    ] {
        let arn = s.start_execution("callback_timeout", name, &input);
        let (e, h) = s.finished(&arn);
        assert_eq!(e["Status"], "SUCCEEDED", "{e}");
        let result: Value = serde_json::from_str(e["Result"].as_str().unwrap()).unwrap();
        assert_eq!(result["error"]["Error"], error, "{result}");
        assert_eq!(count(&h, "CallbackTimedOut", "Ask#1.0"), 1, "{h:?}");
    }

    // Each handler ran once per attempt across all invocations: replays ran none again.
    let ledger: Vec<String> =
        s.ledger("ledger").iter().map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(ledger, ["Prepare 0", "Ask 0", "Ship 0", "Prepare 0", "Ask 0", "Ask 0", "Ask 0"]);
}

#[test]
fn parallel_branches_and_map_iterations_are_context_operations() {
    // Slow wake-ups: the iterations' Waits complete while the invocation checkpoints (see
    // map_run_children_are_chained_invokes_of_the_function_itself).
    let Some(s) = servers_or_skip_with("context", &["--slow-wake-ups"]) else { return };
    let mocks = json!({ "Left": { "return": "L" }, "Double": { "echo": true } });
    let _serve = s.serve(&["nested"], &mocks, "ledger");
    let arn = s.start_execution("nested", "ctx-1", &json!({ "items": [1, 2] }));
    let (e, _) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    assert_eq!(e["Result"], "[\"L\",[1,2]]");
    let history = s.history(&arn);
    // Every operation's parent, by readable id (the wire ids are hashes of them).
    let by_id: std::collections::HashMap<String, String> = history
        .iter()
        .filter(|e| e["Id"].is_string() && e["Name"].is_string())
        .map(|e| (e["Id"].as_str().unwrap().to_owned(), e["Name"].as_str().unwrap().to_owned()))
        .collect();
    let mut shape: Vec<String> = events_of(&history, "ContextStarted")
        .into_iter()
        .chain(events_of(&history, "StepStarted"))
        .chain(events_of(&history, "WaitStarted"))
        .map(|e| {
            let parent =
                e["ParentId"].as_str().map_or("-".to_owned(), |p| by_id.get(p).cloned().unwrap_or(p.to_owned()));
            format!(
                "{} {} {} < {parent}",
                e["EventType"].as_str().unwrap(),
                e["SubType"].as_str().unwrap_or(""),
                e["Name"].as_str().unwrap()
            )
        })
        .collect();
    shape.sort();
    assert_eq!(
        shape,
        [
            "ContextStarted Map Both#1.0/1/Each#1.0 < Both#1.0/1",
            "ContextStarted MapIteration Both#1.0/1/Each#1.0/0 < Both#1.0/1/Each#1.0",
            "ContextStarted MapIteration Both#1.0/1/Each#1.0/1 < Both#1.0/1/Each#1.0",
            "ContextStarted Parallel Both#1.0 < -",
            "ContextStarted ParallelBranch Both#1.0/0 < Both#1.0",
            "ContextStarted ParallelBranch Both#1.0/1 < Both#1.0",
            "StepStarted Task Both#1.0/0/Left#1.0 < Both#1.0/0",
            "StepStarted Task Both#1.0/1/Each#1.0/0/Double#1.0 < Both#1.0/1/Each#1.0/0",
            "StepStarted Task Both#1.0/1/Each#1.0/1/Double#1.0 < Both#1.0/1/Each#1.0/1",
            "WaitStarted Wait Both#1.0/1/Each#1.0/0/Nap#1 < Both#1.0/1/Each#1.0/0",
            "WaitStarted Wait Both#1.0/1/Each#1.0/1/Nap#1 < Both#1.0/1/Each#1.0/1",
        ]
    );
    // Each CONTEXT succeeded once, with its output, although later invocations replayed it.
    let succeeded: Vec<(String, String)> = events_of(&history, "ContextSucceeded")
        .into_iter()
        .map(|e| {
            (
                e["Name"].as_str().unwrap().to_owned(),
                e["ContextSucceededDetails"]["Result"]["Payload"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(succeeded.len(), 6, "{history:?}");
    assert!(succeeded.contains(&("Both#1.0".into(), "[\"L\",[1,2]]".into())), "{succeeded:?}");
    assert!(succeeded.contains(&("Both#1.0/1/Each#1.0/1".into(), "2".into())), "{succeeded:?}");
    assert_eq!(s.ledger("ledger"), ["Left 0", "Double 0", "Double 0"]);
}

/// A Serverless Workflow subflow mapped to a function (`--chained-function ship=ship`) is a
/// CHAINED_INVOKE: dex-local-runner (`--function-configs` names `ship` a durable function)
/// starts a child durable execution of `ship`, which `wfc lambda-serve` runs as its own durable
/// function (ship.sw.json, with a delay: two invocations); its result is the subflow's output
/// and its failure reaches the parent's onError.
#[test]
fn a_mapped_subflow_is_a_chained_invoke_of_another_wfc_function() {
    let configs = r#"{"ship": {"DurableConfig": {"ExecutionTimeout": 300}}}"#;
    let Some(s) = servers_or_skip_with("chained", &["--function-configs", configs]) else { return };
    let mocks = json!({
        "charge": { "return": { "charged": 10 } }, "pack": { "return": { "packed": true } },
        "lose": { "throw": { "error": "Shipping.Lost", "cause": "the parcel is gone" } },
        "refund": { "return": { "refunded": true } },
    });
    let files = ["order.sw.json", "ship.sw.json"];
    let _serve = s.serve_with(&files, &mocks, "ledger", &["--chained-function", "ship=ship"]);

    let arn = s.start_execution("order", "order-ok", &json!({ "order": 1 }));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    let result: Value = serde_json::from_str(e["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!({ "order": 1, "charged": 10, "packed": true }));
    assert_eq!(count(&h, "ChainedInvokeStarted", "Ship#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "ChainedInvokeSucceeded", "Ship#1.0"), 1, "{h:?}");
    // Nothing of the child ran in the parent: no CONTEXT, no step of Pack in its history.
    assert!(h.iter().all(|(t, n)| !t.starts_with("Context") && !n.contains("Pack")), "{h:?}");
    let history = s.history(&arn);
    let started = events_of(&history, "ChainedInvokeStarted");
    let details = &started[0]["ChainedInvokeStartedDetails"];
    assert_eq!(started[0]["SubType"], "Subflow", "{history:?}");
    assert_eq!(details["FunctionName"], "ship", "{history:?}");
    let payload: Value = serde_json::from_str(details["Input"]["Payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload, json!({ "order": 1, "charged": 10 }));
    // The child is a durable execution of its own: its step, and its delay (PENDING, then
    // invoked again).
    let child = details["DurableExecutionArn"].as_str().expect("the child's execution ARN").to_owned();
    let (c, ch) = s.finished(&child);
    assert_eq!(c["Status"], "SUCCEEDED", "{c}");
    assert_eq!(count(&ch, "StepSucceeded", "Pack#1.0.a0"), 1, "{ch:?}");
    assert_eq!(count(&ch, "WaitSucceeded", "Settle#1.0"), 1, "{ch:?}");
    assert_eq!(count(&ch, "InvocationCompleted", ""), 2, "{ch:?}");

    // The child fails: its error is the subflow's, and the parent's onError refunds.
    let arn = s.start_execution("order", "order-lost", &json!({ "order": 2, "options": { "lose": true } }));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    let result: Value = serde_json::from_str(e["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"], json!({ "name": "Shipping.Lost", "message": "the parcel is gone" }), "{result}");
    assert_eq!(result["refunded"], true, "{result}");
    assert_eq!(count(&h, "ChainedInvokeFailed", "Ship#1.0"), 1, "{h:?}");

    // Each task ran once across every invocation of both functions.
    let mut ledger = s.ledger("ledger");
    ledger.sort();
    assert_eq!(ledger, ["Charge 0", "Charge 0", "Lose 0", "Pack 0", "Refund 0"]);

    // A target the runner does not know fails the START at once: the execution fails with the
    // service's error in its first invocation.
    drop(_serve);
    let _serve = s.serve_with(&files, &mocks, "ledger2", &["--chained-function", "ship=nowhere"]);
    let arn = s.start_execution("order", "order-nowhere", &json!({ "order": 3 }));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "FAILED", "{e}");
    assert_eq!(e["Error"]["ErrorType"], "ResourceNotFoundException", "{e}");
    assert_eq!(count(&h, "ChainedInvokeFailed", "Ship#1.0"), 1, "{h:?}");
    assert_eq!(count(&h, "InvocationCompleted", ""), 1, "{h:?}");
}

/// A malformed `--chained-function`, or one naming no subflow the definitions wait for, is an
/// error before anything is served (no runner needed).
#[test]
fn chained_function_mappings_are_checked_against_the_definitions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda");
    for (mapping, message) in [
        ("ship", "expected WORKFLOW_ID[@VERSION]=FUNCTION"),
        ("ship=bad name", "the function name has the character ' '"),
        ("nope=ship", "names no subflow the definition waits for (its subflows are: ship)"),
        ("ship@9=ship", "(the subflow 'ship' has version 1.0)"),
    ] {
        let out = wfc_cmd()
            .arg("lambda-serve")
            .arg(dir.join("order.sw.json"))
            .args(["--endpoint", "http://127.0.0.1:9", "--listen", "127.0.0.1:0", "--chained-function", mapping])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mapping}: {stderr}");
        assert!(stderr.contains(message), "{mapping}: {stderr}");
    }
    let out = wfc_cmd()
        .arg("lambda-invoke")
        .arg(dir.join("sequence.asl.json"))
        .args(["--endpoint", "http://127.0.0.1:9", "--chained-function", "ship=ship"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no subflow state that waits for its child"), "{stderr}");
}

/// DISTRIBUTED Map Run children chained to the function itself (`--chained-map-runs`): each
/// child is a CHAINED_INVOKE of `fan`, which dex-local-runner (`--function-configs` names `fan`
/// durable) starts as a durable execution of its own; `wfc lambda-serve`, invoked with the
/// child's envelope, runs the ItemProcessor there (with a Wait: two invocations). A failed
/// child counts against the Map's tolerance.
#[test]
fn map_run_children_are_chained_invokes_of_the_function_itself() {
    let configs = r#"{"fan": {"DurableConfig": {"ExecutionTimeout": 300}}}"#;
    // Slow wake-ups: a child's Wait completes while its invocation finishes, which the unfixed
    // runner loses (the child and its parent then hung to their timeout).
    let Some(s) = servers_or_skip_with("map-run", &["--function-configs", configs, "--slow-wake-ups"]) else {
        return;
    };
    let mocks = json!({ "Work": { "echo": true }, "Broken": { "throw": { "error": "Item.Bad", "cause": "two" } } });
    let _serve = s.serve_with(&["fan.asl.json"], &mocks, "ledger", &["--chained-map-runs"]);
    let arn = s.start_execution("fan", "fan-1", &json!({ "items": [1, 2, 3] }));
    let (e, h) = s.finished(&arn);
    assert_eq!(e["Status"], "SUCCEEDED", "{e}");
    let result: Value = serde_json::from_str(e["Result"].as_str().unwrap()).unwrap();
    assert_eq!((&result[0], &result[2]), (&json!(1), &json!(3)), "{result}");
    assert_eq!((&result[1]["Status"], &result[1]["Error"]), (&json!("FAILED"), &json!("Item.Bad")), "{result}");
    for i in 0..3 {
        assert_eq!(count(&h, "ChainedInvokeStarted", &format!("Fan#1.0/{i}")), 1, "{h:?}");
        assert_eq!(count(&h, "ChainedInvokeSucceeded", &format!("Fan#1.0/{i}")), 1, "{h:?}");
    }
    // The parent ran no task; each child is its own durable execution (a Wait: PENDING, then
    // invoked again). Its STEPs are the Map Run level's end (journaled before the run goes on, so
    // a resume replays the level as it ended) and the Map state's exit (journaled so that a
    // redrive leaves an exited Map Run alone; docs/serve.md, RedriveExecution).
    let own_step = |t: &str, name: &str| t.starts_with("Step") && ["Fan#1.0.end", "Fan#1.exited0"].contains(&name);
    assert!(h.iter().all(|(t, n)| own_step(t, n) || (!t.starts_with("Step") && !t.starts_with("Wait"))), "{h:?}");
    assert_eq!(count(&h, "StepSucceeded", "Fan#1.0.end"), 1, "{h:?}");
    assert_eq!(count(&h, "StepSucceeded", "Fan#1.exited0"), 1, "{h:?}");
    let history = s.history(&arn);
    for started in events_of(&history, "ChainedInvokeStarted") {
        let details = &started["ChainedInvokeStartedDetails"];
        assert_eq!((&started["SubType"], &details["FunctionName"]), (&json!("MapRunChild"), &json!("fan")));
        let child = details["DurableExecutionArn"].as_str().unwrap().to_owned();
        let (c, ch) = s.finished(&child);
        assert_eq!(c["Status"], "SUCCEEDED", "{c}");
        if count(&ch, "StepSucceeded", "Work#1.0") == 1 {
            assert_eq!(count(&ch, "WaitSucceeded", "Nap#1"), 1, "{ch:?}");
            assert_eq!(count(&ch, "InvocationCompleted", ""), 2, "{ch:?}");
        } else {
            assert_eq!(count(&ch, "StepFailed", "Broken#1.0"), 1, "{ch:?}");
        }
    }
    let mut ledger = s.ledger("ledger");
    ledger.sort();
    assert_eq!(ledger, ["Broken 0", "Work 0", "Work 0"]);
}

/// §4.5.2(6): a Parallel whose second branch fails while the first waits. The execution fails
/// with the branch's error, and the service's history shows the abandoned branch closed: its
/// WAIT cancelled (not left STARTED) and its CONTEXT failed with `Wfc.BranchAbandoned`.
#[test]
fn an_abandoned_branch_has_its_wait_cancelled_and_its_context_closed() {
    // In real time: a skipped wait would have fired before the branch failed.
    let Some(s) = servers_or_skip_with("abandon", &["--real-time"]) else { return };
    let mocks = json!({ "Boom": { "throw": { "error": "Boom.Failed", "cause": "no luck" } } });
    let _serve = s.serve(&["abandon"], &mocks, "ledger");
    let arn = s.start_execution("abandon", "abandon-1", &json!({}));
    let (e, events) = s.finished(&arn);
    assert_eq!(e["Status"], "FAILED", "{e}");
    assert_eq!(e["Error"]["ErrorType"], "Boom.Failed", "{e}");
    assert_eq!(count(&events, "WaitStarted", "P#1.0/0/Slow#1"), 1, "{events:?}");
    assert_eq!(count(&events, "WaitCancelled", "P#1.0/0/Slow#1"), 1, "{events:?}");
    assert_eq!(count(&events, "WaitSucceeded", "P#1.0/0/Slow#1"), 0, "{events:?}");
    let history = s.history(&arn);
    let branch_failed: Vec<&Value> =
        events_of(&history, "ContextFailed").into_iter().filter(|e| e["Name"] == "P#1.0/0").collect();
    assert_eq!(branch_failed.len(), 1, "{history:?}");
    assert!(branch_failed[0].to_string().contains("Wfc.BranchAbandoned"), "{}", branch_failed[0]);
    // The failed step carries the SHOULD fields of §8.3.3.
    let step_failed = events_of(&history, "StepFailed");
    assert_eq!(step_failed.len(), 1, "{history:?}");
    let text = step_failed[0].to_string();
    assert!(text.contains("StackTrace") && text.contains("ErrorData"), "{text}");
    assert_eq!(s.ledger("ledger"), ["Boom 0"]);
}

/// Runs `wfc lambda-invoke` on a one-Task workflow against `sigv4_server.py` answering `script`
/// over HTTPS, with a certificate for 127.0.0.1 made here that the client trusts through
/// `AWS_CA_BUNDLE`; returns the invocation's output and the server's log (one entry per request).
fn invoke_against_checking_endpoint(venv: &Path, name: &str, script: &str) -> (Value, Vec<Value>) {
    let dir = std::env::temp_dir().join(format!("wfc-lambda-sigv4-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .expect("a self-signed certificate");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let (port, log) = (free_port(), dir.join("requests.jsonl"));
    let server = Command::new(venv.join("bin/python"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda/sigv4_server.py"))
        .args([&port.to_string(), log.to_str().unwrap(), script, cert.to_str().unwrap(), key.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the checking endpoint starts");
    let _server = Killed(server);
    wait_until("the checking endpoint to listen", Duration::from_secs(600), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    // The log holds the probe's connection only: nothing was sent on it.
    let event = json!({
        "DurableExecutionArn": "arn:aws:lambda:us-east-1:000000000000:function:seq/durable-execution/e-1/r-1",
        "CheckpointToken": "token-0",
        "InitialExecutionState": { "Operations": [{
            "Id": "exec", "Type": "EXECUTION", "Status": "STARTED", "StartTimestamp": 1_700_000_000,
            "ExecutionDetails": { "InputPayload": "{}" },
        }] },
    });
    let event_path = dir.join("event.json");
    std::fs::write(&event_path, event.to_string()).unwrap();
    let mocks = dir.join("mocks.json");
    std::fs::write(
        &mocks,
        json!({ "One": { "return": 1 }, "Two": { "return": 2 }, "Three": { "return": 3 } }).to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .arg("lambda-invoke")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda/sequence.asl.json"))
        .args(["--endpoint", &format!("https://127.0.0.1:{port}")])
        .arg("--mocks")
        .arg(&mocks)
        .arg("--event")
        .arg(&event_path)
        .env("AWS_CA_BUNDLE", &cert)
        .env("AWS_ACCESS_KEY_ID", "AKIDWFCTEST")
        .env("AWS_SECRET_ACCESS_KEY", "wfc/test/secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "wfc lambda-invoke: {stdout} {}", String::from_utf8_lossy(&out.stderr));
    let output: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let requests =
        std::fs::read_to_string(&log).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (output, requests)
}

/// §15.2/§15.3 through aws-sdk-lambda over TLS, against a local HTTPS endpoint (its certificate
/// made by the test, trusted through AWS_CA_BUNDLE) that checks every request's SigV4 signature
/// with botocore's signer: ThrottlingException twice, then success: the invocation retries with
/// back-off and goes on; ResourceNotFoundException: the execution fails at once, after one
/// request. An AWS_CA_BUNDLE that holds no certificate is a clear error before any request.
#[test]
fn signed_requests_are_retried_when_throttled_and_a_terminal_error_fails_at_once() {
    let Some(venv) = venv() else {
        assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "the Python venv is missing");
        return;
    };
    let (output, requests) = invoke_against_checking_endpoint(&venv, "throttled", "throttle,throttle,ok");
    // sequence.asl.json runs One and Two, then starts its Wait: PENDING.
    assert_eq!(output["Status"], "PENDING", "{output}");
    assert!(requests.iter().all(|r| r["valid"] == true), "{requests:?}");
    let answers: Vec<&str> = requests.iter().map(|r| r["answer"].as_str().unwrap()).collect();
    assert_eq!(answers[..3], ["throttle", "throttle", "ok"], "{requests:?}");
    assert!(requests.iter().all(|r| r["path"].as_str().unwrap().ends_with("/checkpoint")), "{requests:?}");
    // The same checkpoint, retried: every later one succeeded at once.
    assert!(answers[2..].iter().all(|a| *a == "ok"), "{requests:?}");

    let (output, requests) = invoke_against_checking_endpoint(&venv, "notfound", "notfound");
    assert_eq!(output["Status"], "FAILED", "{output}");
    assert_eq!(output["Error"]["ErrorType"], "Wfc.DurableServiceError", "{output}");
    let message = output["Error"]["ErrorMessage"].as_str().unwrap();
    assert!(message.contains("ResourceNotFoundException"), "{output}");
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0]["valid"], true, "{requests:?}");

    let bundle = std::env::temp_dir().join(format!("wfc-lambda-bad-bundle-{}.pem", std::process::id()));
    std::fs::write(&bundle, "not a certificate\n").unwrap();
    let event = bundle.with_extension("json");
    std::fs::write(&event, "{}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .arg("lambda-invoke")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda/sequence.asl.json"))
        .args(["--endpoint", "https://127.0.0.1:9", "--event", event.to_str().unwrap()])
        .env("AWS_CA_BUNDLE", &bundle)
        .env("AWS_ACCESS_KEY_ID", "AKIDWFCTEST")
        .env("AWS_SECRET_ACCESS_KEY", "wfc/test/secret")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("AWS_CA_BUNDLE") && stderr.contains("no certificate"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = (std::fs::remove_file(&bundle), std::fs::remove_file(&event));
}
