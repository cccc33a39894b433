//! `wfc serve` in operation: SigV4 verification (`--credentials`, driven by boto3), a kill -9
//! of the server while executions wait, the AWS-recorded cases with no Task through the API
//! against `wfc test`, and (ignored by default) a load test.
//!
//! The boto3 tests use the PyPI virtual environment .ci/run installs (`WFC_PY_VENV`, else
//! `target/py-venv`); without it they print why and pass, unless `WFC_REQUIRE_PY_SERVERS=1` (CI).
//! The kill -9 and load tests speak the protocol with the small HTTP/1.1 client below.
#![allow(missing_docs)]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::live::wait_until;
use support::serve::{Server, boto3_venv};

const ROLE: &str = "arn:aws:iam::123456789012:role/wfc-ops";

/// A minimal AWS JSON 1.0 client over one keep-alive HTTP/1.1 connection (unsigned, as a
/// loopback server without `--credentials` accepts).
struct Client {
    addr: String,
    stream: Option<BufReader<TcpStream>>,
}

impl Client {
    fn new(addr: &str) -> Client {
        Client { addr: addr.to_owned(), stream: None }
    }

    /// Calls `operation`: `Ok(body)` on HTTP 200, else `Err((__type, message))`.
    fn call(&mut self, operation: &str, body: &Value) -> Result<Value, (String, String)> {
        let payload = body.to_string();
        let request = format!(
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AWSStepFunctions.{operation}\r\nContent-Length: {}\r\n\r\n{payload}",
            self.addr,
            payload.len()
        );
        // A connection the server closed meanwhile is opened again once.
        for attempt in 0..2 {
            if self.stream.is_none() {
                let s = TcpStream::connect(&self.addr).expect("connect to wfc serve");
                s.set_nodelay(true).ok();
                self.stream = Some(BufReader::new(s));
            }
            let stream = self.stream.as_mut().unwrap();
            if stream.get_mut().write_all(request.as_bytes()).is_err() {
                self.stream = None;
                continue;
            }
            match read_response(stream) {
                Ok((status, body)) => {
                    return if status == 200 {
                        Ok(body)
                    } else {
                        Err((
                            body["__type"].as_str().unwrap_or("").into(),
                            body["message"].as_str().unwrap_or("").into(),
                        ))
                    };
                }
                Err(e) if attempt == 0 => {
                    eprintln!("reconnecting after {e}");
                    self.stream = None;
                }
                Err(e) => panic!("{operation}: {e}"),
            }
        }
        unreachable!("the second attempt returns or panics")
    }

    fn ok(&mut self, operation: &str, body: Value) -> Value {
        self.call(operation, &body).unwrap_or_else(|e| panic!("{operation} {body}: {e:?}"))
    }
}

fn read_response(stream: &mut BufReader<TcpStream>) -> Result<(u16, Value), String> {
    let mut line = String::new();
    if stream.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
        return Err("the connection closed".into());
    }
    let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or(format!("bad status line {line:?}"))?;
    let mut length = 0;
    loop {
        line.clear();
        stream.read_line(&mut line).map_err(|e| e.to_string())?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().map_err(|_| format!("bad content-length {v:?}"))?;
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((status, serde_json::from_slice(&body).map_err(|e| format!("body is not JSON: {e}"))?))
}

fn machine_arn(name: &str) -> String {
    format!("arn:aws:states:us-east-1:123456789012:stateMachine:{name}")
}

/// Runs a script of tests/serve/ with the venv's python; fails the test with its output.
fn python(venv: &Path, script: &str, args: &[&str]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve").join(script);
    let out = Command::new(venv.join("bin/python"))
        .arg(path)
        .args(args)
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_CONFIG_FILE")
        .env_remove("AWS_SHARED_CREDENTIALS_FILE")
        .output()
        .expect("run python");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

/// With `--credentials`, a correctly signed boto3 client works, and unsigned, wrongly signed,
/// unknown-key and expired requests are refused with AWS's errors and run nothing
/// (tests/serve/sigv4_suite.py). Beyond loopback, the server needs `--allow-remote` and
/// credentials.
#[test]
fn sigv4_is_required_with_credentials() {
    for (args, needle) in [
        (&["serve", "--listen", "0.0.0.0:0"][..], "--allow-remote"),
        (&["serve", "--listen", "0.0.0.0:0", "--allow-remote"][..], "needs --credentials"),
    ] {
        let out = support::wfc().args(args).env_remove("WFC_SERVE_CREDENTIALS").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    let dir = support::scratch("sigv4");
    let bad = support::write(&dir, "bad-credentials", "AKIDONLY\n");
    let out = support::wfc().args(["serve", "--listen", "127.0.0.1:0", "--credentials", &bad]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"), "{}", String::from_utf8_lossy(&out.stderr));

    let Some(venv) = boto3_venv("sigv4_is_required_with_credentials", false) else { return };
    let (key, secret) = ("AKIDWFCTEST", "wfc/secret+key");
    let credentials = support::write(&dir, "credentials", &format!("# wfc serve keys\n{key}:{secret}\n"));
    let ledger = dir.join("ledger");
    let handlers = support::ledger_handlers(&dir, &ledger, &[("Append", 0.0)]);
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let server = Server::start(&store, &["--credentials", &credentials, "--handlers", &handlers], &[]);
    python(&venv, "sigv4_suite.py", &[&server.endpoint(), ledger.to_str().unwrap(), key, secret]);
    // The AWS CLI signs as boto3 does: the right keys work, a wrong secret and an unsigned
    // request (--no-sign-request) are refused.
    let aws = |secret: &str, extra: &[&str]| {
        let out = Command::new(venv.join("bin/aws"))
            .args(["--endpoint-url", &server.endpoint(), "--region", "us-east-1", "--output", "json"])
            .args(extra)
            .args(["stepfunctions", "list-state-machines"])
            .env("AWS_ACCESS_KEY_ID", key)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run aws");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, text) = aws(secret, &[]);
    assert!(ok && text.contains("stateMachine:Signed"), "{text}");
    let (ok, text) = aws("not-the-secret", &[]);
    assert!(!ok && text.contains("(InvalidSignatureException)"), "{text}");
    let (ok, text) = aws(secret, &["--no-sign-request"]);
    assert!(!ok && text.contains("(UnrecognizedClientException)"), "{text}");
    // The same refusals for the raw client (unsigned), and still one execution in the store.
    let mut client = Client::new(&server.addr);
    let e = client.call("ListStateMachines", &json!({})).unwrap_err();
    assert_eq!(e.0, "UnrecognizedClientException", "{e:?}");
    let counts = support::ledger_counts(&ledger);
    assert_eq!(counts.into_iter().collect::<Vec<_>>(), [(("Signed:good".into(), "Append".into()), 1)]);
}

/// A kill -9 of the server while executions wait (a Wait state, a callback by task token, an
/// activity), then a restart on the same SQLite store: every execution finishes, and every Task
/// body ran exactly once (the command handlers append to a ledger).
#[test]
fn kill9_while_executions_wait_loses_and_repeats_nothing() {
    let dir = support::scratch("kill9");
    let ledger = dir.join("ledger");
    let tokens = dir.join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let mut handlers: serde_json::Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(support::ledger_handlers(&dir, &ledger, &[("Before", 0.0), ("After", 0.0)])).unwrap(),
    )
    .unwrap();
    // The callback's "queue": the token is written where the test reads it.
    handlers.insert(
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken".into(),
        json!({"command": ["sh", "-c", "printf %s \"$WFC_TASK_TOKEN\" > \"$TOKEN_DIR/$WFC_EXECUTION_NAME.tmp\" && mv \"$TOKEN_DIR/$WFC_EXECUTION_NAME.tmp\" \"$TOKEN_DIR/$WFC_EXECUTION_NAME\" && echo '{}'"]}),
    );
    let handlers = support::write(&dir, "handlers.json", &Value::Object(handlers).to_string());
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let args = ["--handlers", handlers.as_str(), "--activity-poll-seconds", "2"];
    let server = Server::start(&store, &args, &[("TOKEN_DIR", &tokens)]);
    let mut c = Client::new(&server.addr);
    let activity = c.ok("CreateActivity", json!({"name": "Work"}))["activityArn"].as_str().unwrap().to_owned();
    let task =
        |resource: &str, next: &str| json!({"Type": "Task", "Resource": resource, "ResultPath": null, "Next": next});
    let after = json!({"Type": "Task", "Resource": "After", "ResultPath": null, "End": true});
    let machines = [
        // A short Wait holds the worker (the execution stays claimed: the next server claims it
        // when the dead one's lease runs out); a long one is released with a wake-up time.
        ("Waits", json!({"Type": "Wait", "Seconds": 3, "Next": "After"})),
        ("Sleeps", json!({"Type": "Wait", "Seconds": 12, "Next": "After"})),
        (
            "Calls",
            json!({"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                   "Parameters": {"MessageBody.$": "$"}, "ResultPath": "$.callback", "Next": "After"}),
        ),
        ("Works", json!({"Type": "Task", "Resource": activity, "ResultPath": "$.activity", "Next": "After"})),
    ];
    let mut executions = Vec::new();
    for (name, waiting) in &machines {
        let definition = json!({"StartAt": "Before", "States": {"Before": task("Before", "Waiting"), "Waiting": waiting, "After": after}});
        c.ok("CreateStateMachine", json!({"name": name, "definition": definition.to_string(), "roleArn": ROLE}));
        for i in 0..3 {
            let started = c.ok(
                "StartExecution",
                json!({"stateMachineArn": machine_arn(name), "name": format!("e{i}"), "input": json!({"i": i}).to_string()}),
            );
            executions.push((format!("{name}:e{i}"), started["executionArn"].as_str().unwrap().to_owned()));
        }
    }
    // Every execution is past Before and waiting: the callbacks have sent their tokens, the
    // activity tasks were handed to this worker (and are never answered: the server dies).
    let limit = Duration::from_secs(120);
    wait_until("every Before to run", limit, || (support::ledger_counts(&ledger).len() == 12).then_some(()));
    let sent = || {
        std::fs::read_dir(&tokens)
            .unwrap()
            .filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".tmp"))
            .count()
    };
    wait_until("the callback tokens", limit, || (sent() == 3).then_some(()));
    let mut handed = 0;
    while handed < 3 {
        let got = c.ok("GetActivityTask", json!({"activityArn": activity, "workerName": "doomed"}));
        handed += usize::from(got.get("taskToken").is_some());
    }
    // Not asserted (it depends on the machine's speed): whether the Waits were still waiting.
    let done = support::ledger_counts(&ledger).keys().filter(|(_, state)| state == "After").count();
    eprintln!("killing the server with {done} executions past their wait");
    server.kill9();

    let server = Server::start(&store, &args, &[("TOKEN_DIR", &tokens)]);
    let mut c = Client::new(&server.addr);
    // Callback tokens live in the store: the ones sent before the crash still work.
    for (name, _) in executions.iter().filter(|(n, _)| n.starts_with("Calls:")) {
        let token = std::fs::read_to_string(tokens.join(name)).unwrap();
        c.ok("SendTaskSuccess", json!({"taskToken": token, "output": json!({"answered": name}).to_string()}));
    }
    // Activities live in the store: the activity is there after the crash without being created
    // again, and its tasks are queued again when the executions resume (after the killed
    // server's lease runs out).
    assert_eq!(c.ok("DescribeActivity", json!({"activityArn": activity}))["name"], "Work");
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(180); // a hang guard
    while answered < 3 {
        assert!(Instant::now() < deadline, "the activity tasks were not queued again");
        let got = c.ok("GetActivityTask", json!({"activityArn": activity, "workerName": "survivor"}));
        if let Some(token) = got.get("taskToken").and_then(Value::as_str) {
            c.ok("SendTaskSuccess", json!({"taskToken": token, "output": "{\"worked\": true}"}));
            answered += 1;
        }
    }
    for (name, arn) in &executions {
        let d = wait_until(&format!("{name} to finish"), Duration::from_secs(180), || {
            let d = c.ok("DescribeExecution", json!({"executionArn": arn}));
            (d["status"] != "RUNNING").then_some(d)
        });
        assert_eq!(d["status"], "SUCCEEDED", "{name}: {d:#}");
        let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
        if name.starts_with("Calls:") {
            assert_eq!(output["callback"], json!({"answered": name}), "{name}");
        }
        if name.starts_with("Works:") {
            assert_eq!(output["activity"], json!({"worked": true}), "{name}");
        }
    }
    let counts = support::ledger_counts(&ledger);
    let expected: BTreeMap<(String, String), usize> = executions
        .iter()
        .flat_map(|(name, _)| [((name.clone(), "Before".into()), 1), ((name.clone(), "After".into()), 1)])
        .collect();
    assert_eq!(counts, expected, "every Task body ran exactly once");
}

/// Inside an execution the server runs, the context object names it as AWS does: its name,
/// its execution ARN, its state machine's ARN and name, and the machine's role; command
/// handlers still see the store name (`<machine>:<name>`) as `WFC_EXECUTION_NAME`. The same
/// server runs with `--virtual-time` ([`virtual_time`]), which these executions (no waits)
/// do not notice.
#[test]
fn executions_see_their_own_identity_in_the_context_object_and_virtual_time() {
    let dir = support::scratch("identity");
    let ledger = dir.join("ledger");
    let handlers = support::ledger_handlers(&dir, &ledger, &[("Record", 0.0)]);
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let args = ["--handlers", &handlers, "--region", "eu-west-3", "--account", "210987654321", "--virtual-time"];
    let server = Server::start(&store, &args, &[]);
    let mut c = Client::new(&server.addr);
    virtual_time(&mut c);
    let definition = json!({"StartAt": "Record", "States": {
        "Record": {"Type": "Task", "Resource": "Record", "ResultPath": null, "Next": "Who"},
        "Who": {"Type": "Pass", "Parameters": {
            "name.$": "$$.Execution.Name", "id.$": "$$.Execution.Id", "role.$": "$$.Execution.RoleArn",
            "machine.$": "$$.StateMachine.Id", "machineName.$": "$$.StateMachine.Name"}, "End": true}}});
    let role = "arn:aws:iam::210987654321:role/who-runs";
    let machine = c.ok("CreateStateMachine", json!({"name": "Who", "definition": definition.to_string(), "roleArn": role}))
        ["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(machine, "arn:aws:states:eu-west-3:210987654321:stateMachine:Who");
    let arn = c.ok("StartExecution", json!({"stateMachineArn": machine, "name": "me"}))["executionArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let d = wait_until("the execution to finish", Duration::from_secs(120), || {
        let d = c.ok("DescribeExecution", json!({"executionArn": arn}));
        (d["status"] != "RUNNING").then_some(d)
    });
    assert_eq!(d["status"], "SUCCEEDED", "{d:#}");
    let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        output,
        json!({"name": "me", "id": arn, "role": role, "machine": machine, "machineName": "Who"}),
        "the context object"
    );
    assert_eq!(arn, "arn:aws:states:eu-west-3:210987654321:execution:Who:me");
    let counts = support::ledger_counts(&ledger);
    assert_eq!(counts.into_iter().collect::<Vec<_>>(), [(("Who:me".into(), "Record".into()), 1)]);

    // StartSyncExecution's in-memory executions too: `$$.Execution.Id` is the ARN the caller
    // gets, and there is no `RedriveCount` (as AWS records for StartSyncExecution).
    let sync_definition = json!({"StartAt": "Who", "States": {"Who": {"Type": "Pass", "Parameters": {
        "name.$": "$$.Execution.Name", "id.$": "$$.Execution.Id", "role.$": "$$.Execution.RoleArn",
        "machine.$": "$$.StateMachine.Id", "machineName.$": "$$.StateMachine.Name", "execution.$": "$$.Execution"},
        "End": true}}});
    let sync_machine = c.ok(
        "CreateStateMachine",
        json!({"name": "WhoSync", "definition": sync_definition.to_string(), "roleArn": role, "type": "EXPRESS"}),
    )["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let d = c.ok("StartSyncExecution", json!({"stateMachineArn": sync_machine, "name": "quick"}));
    let arn = d["executionArn"].as_str().unwrap();
    assert!(arn.starts_with("arn:aws:states:eu-west-3:210987654321:express:WhoSync:quick:"), "{arn}");
    let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&output["name"], &output["id"], &output["role"], &output["machine"], &output["machineName"]),
        (&json!("quick"), &json!(arn), &json!(role), &json!(sync_machine), &json!("WhoSync")),
        "{output:#}"
    );
    assert!(output["execution"].get("RedriveCount").is_none(), "{output:#}");
    // Each run is its own execution: another ARN.
    let again = c.ok("StartSyncExecution", json!({"stateMachineArn": sync_machine, "name": "quick"}));
    assert_ne!(again["executionArn"].as_str(), Some(arn));
}

/// Runs `machine` (created from `definition`) to its end; its description and history.
fn run_to_end(c: &mut Client, name: &str, definition: &Value, kind: &str) -> (Value, Vec<Value>) {
    let machine = c.ok(
        "CreateStateMachine",
        json!({"name": name, "definition": definition.to_string(), "roleArn": ROLE, "type": kind}),
    )["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let arn = c.ok("StartExecution", json!({"stateMachineArn": machine, "name": "one"}))["executionArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let d = wait_until("the execution to finish", Duration::from_secs(120), || {
        let d = c.ok("DescribeExecution", json!({"executionArn": arn}));
        (d["status"] != "RUNNING").then_some(d)
    });
    let events = c.ok("GetExecutionHistory", json!({"executionArn": arn}))["events"].as_array().unwrap().clone();
    (d, events)
}

/// The timestamp (seconds) of the first event of `kind` (and, with `name`, of that state).
fn event_at(events: &[Value], kind: &str, name: Option<&str>) -> f64 {
    events
        .iter()
        .find(|e| {
            e["type"] == kind
                && name.is_none_or(|n| {
                    e.as_object().unwrap().values().any(|v| v.get("name").and_then(Value::as_str) == Some(n))
                })
        })
        .and_then(|e| e["timestamp"].as_f64())
        .unwrap_or_else(|| panic!("no {kind} event in {events:#?}"))
}

/// `--virtual-time`: each execution's waits are skipped on its own clock (a Wait of a day ends
/// at once, its history a day apart; a retry's back-off too; the machine's TimeoutSeconds is
/// on that clock), while an activity still waits for its worker in real time.
fn virtual_time(c: &mut Client) {
    const DAY: f64 = 86_400.0;
    let definition = json!({"StartAt": "Day", "States": {
        "Day": {"Type": "Wait", "Seconds": 86400, "Next": "Retried"},
        "Retried": {"Type": "Parallel", "Branches": [{"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Boom"}}}],
            "Retry": [{"ErrorEquals": ["Boom"], "IntervalSeconds": 3600, "MaxAttempts": 1}],
            "Catch": [{"ErrorEquals": ["Boom"], "ResultPath": null, "Next": "Done"}], "Next": "Done"},
        "Done": {"Type": "Pass", "Parameters": {"entered.$": "$$.State.EnteredTime"}, "End": true}}});
    let (d, events) = run_to_end(c, "VirtualDay", &definition, "STANDARD");
    assert_eq!(d["status"], "SUCCEEDED", "{d:#}");
    let entered = event_at(&events, "WaitStateEntered", Some("Day"));
    let exited = event_at(&events, "WaitStateExited", Some("Day"));
    assert!((DAY..DAY + 60.0).contains(&(exited - entered)), "a day apart: {entered} {exited}");
    let attempts: Vec<f64> = events
        .iter()
        .filter(|e| e["type"] == "ParallelStateStarted")
        .map(|e| e["timestamp"].as_f64().unwrap())
        .collect();
    assert_eq!(attempts.len(), 2, "{events:#?}");
    assert!((3600.0..3660.0).contains(&(attempts[1] - attempts[0])), "the back-off of an hour: {attempts:?}");
    let start = event_at(&events, "ExecutionStarted", None);
    let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
    let entered_done =
        output["entered"].as_str().unwrap().parse::<jiff::Timestamp>().unwrap().as_millisecond() as f64 / 1000.0;
    assert!(entered_done - start >= DAY + 3600.0, "$$ sees the clock: {output} from {start}");

    // The machine's TimeoutSeconds is on the execution's clock: a Wait of a day under a timeout
    // of an hour times out, an hour after the start.
    let timed = json!({"TimeoutSeconds": 3600, "StartAt": "Day", "States": {
        "Day": {"Type": "Wait", "Seconds": 86400, "End": true}}});
    let (d, events) = run_to_end(c, "VirtualTimeout", &timed, "STANDARD");
    assert_eq!(d["status"], "TIMED_OUT", "{d:#}");
    let (start, end) = (event_at(&events, "ExecutionStarted", None), event_at(&events, "ExecutionTimedOut", None));
    assert!((3600.0..3660.0).contains(&(end - start)), "timed out after an hour: {start} {end}");

    // An activity waits for its worker in real time, even after a skipped day and under a
    // TimeoutSeconds of an hour: the task is handed out and answered, not timed out.
    let activity = c.ok("CreateActivity", json!({"name": "VirtualWork"}))["activityArn"].as_str().unwrap().to_owned();
    let definition = json!({"StartAt": "Day", "States": {
        "Day": {"Type": "Wait", "Seconds": 86400, "Next": "Work"},
        "Work": {"Type": "Task", "Resource": activity, "TimeoutSeconds": 3600, "End": true}}});
    let machine = c.ok(
        "CreateStateMachine",
        json!({"name": "VirtualActivity", "definition": definition.to_string(), "roleArn": ROLE}),
    )["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let arn = c.ok("StartExecution", json!({"stateMachineArn": machine, "name": "one"}))["executionArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = wait_until("the activity task", Duration::from_secs(120), || {
        c.ok("GetActivityTask", json!({"activityArn": activity}))["taskToken"].as_str().map(str::to_owned)
    });
    assert_eq!(c.ok("DescribeExecution", json!({"executionArn": arn}))["status"], "RUNNING");
    c.ok("SendTaskSuccess", json!({"taskToken": token, "output": "{\"worked\": true}"}));
    let d = wait_until("the execution to finish", Duration::from_secs(120), || {
        let d = c.ok("DescribeExecution", json!({"executionArn": arn}));
        (d["status"] != "RUNNING").then_some(d)
    });
    assert_eq!((d["status"].as_str(), d["output"].as_str()), (Some("SUCCEEDED"), Some("{\"worked\":true}")), "{d:#}");

    // StartSyncExecution (EXPRESS, in memory) skips its waits too.
    let express = json!({"StartAt": "Day", "States": {"Day": {"Type": "Wait", "Seconds": 86400, "End": true}}});
    let machine = c.ok(
        "CreateStateMachine",
        json!({"name": "VirtualExpress", "definition": express.to_string(), "roleArn": ROLE, "type": "EXPRESS"}),
    )["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned();
    let d = c.ok("StartSyncExecution", json!({"stateMachineArn": machine, "input": "{\"x\": 1}"}));
    assert_eq!((d["status"].as_str(), d["output"].as_str()), (Some("SUCCEEDED"), Some("{\"x\":1}")), "{d:#}");
}

/// The runnable AWS-recorded cases with no Task (../shared/conformance/asl-aws), through the
/// API from concurrent boto3 clients, give the same status, output, error and cause as
/// `wfc test` (tests/serve/conformance_api.py says which cases are left out and why).
#[test]
fn recorded_cases_through_the_api_match_wfc_test() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/asl-aws");
    if !corpus.is_dir() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{} is missing (CI must have it)", corpus.display());
        eprintln!("\n!!!!!!!! SKIPPED: the AWS-recorded corpus is missing: {} !!!!!!!!\n", corpus.display());
        return;
    }
    let Some(venv) = boto3_venv("recorded_cases_through_the_api_match_wfc_test", false) else { return };
    let dir = support::scratch("conformance");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    // The recordings' account, and waits skipped as `wfc test` skips them (conformance_api.py).
    let server = Server::start(&store, &["--account", "111111111111", "--virtual-time"], &[]);
    python(
        &venv,
        "conformance_api.py",
        &[
            env!("CARGO_BIN_EXE_wfc"),
            &server.endpoint(),
            corpus.to_str().unwrap(),
            dir.join("wfc-test-report.json").to_str().unwrap(),
        ],
    );
}

/// The load test (not in the default run: `cargo test --release -p wfc-cli --test serve_ops
/// load -- --ignored --nocapture`): 100 concurrent clients run 10,000 executions of a short
/// machine through StartExecution and DescribeExecution on loopback; all must succeed. Prints
/// executions/s and the p50/p99 latency of an execution (StartExecution to the
/// DescribeExecution that sees it end), then the same executions run in process by a durable
/// worker on a store of the same kind ([`in_process`]), for comparison (docs/benchmarks.md).
#[test]
#[ignore = "a load test: run it explicitly (docs/benchmarks.md)"]
fn load_100_clients_10000_executions() {
    let clients: usize = std::env::var("WFC_LOAD_CLIENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let total: usize = std::env::var("WFC_LOAD_EXECUTIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let dir = support::scratch("load");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let server = Server::start(&store, &[], &[]);
    let definition = json!({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": "$.a", "Next": "B"},
        "B": {"Type": "Choice", "Choices": [{"Variable": "$.a.x", "NumericEquals": 1, "Next": "C"}], "Default": "C"},
        "C": {"Type": "Pass", "End": true}}});
    let steps_per_execution = 3;
    Client::new(&server.addr)
        .ok("CreateStateMachine", json!({"name": "Short", "definition": definition.to_string(), "roleArn": ROLE}));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    let latencies: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                s.spawn(|| {
                    let mut c = Client::new(&server.addr);
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= total {
                            return mine;
                        }
                        let t0 = Instant::now();
                        let arn = c.ok(
                            "StartExecution",
                            json!({"stateMachineArn": machine_arn("Short"), "name": format!("x{i}"), "input": json!({"i": i}).to_string()}),
                        )["executionArn"]
                            .as_str()
                            .unwrap()
                            .to_owned();
                        loop {
                            let d = c.ok("DescribeExecution", json!({"executionArn": arn}));
                            if d["status"] != "RUNNING" {
                                assert_eq!(d["status"], "SUCCEEDED", "{d:#}");
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        mine.push(t0.elapsed());
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a client failed")).collect()
    });
    let wall = started.elapsed();
    assert_eq!(latencies.len(), total, "every execution succeeded");
    drop(server);
    let in_process = in_process(&dir, &definition, total, clients);
    let mut sorted = latencies;
    sorted.sort();
    let pct = |p: f64| sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)];
    let per_s = total as f64 / wall.as_secs_f64();
    println!(
        "wfc serve load: {clients} clients, {total} executions in {:.1} s: {per_s:.0} executions/s ({:.0} steps/s), latency p50 {:.1} ms, p99 {:.1} ms",
        wall.as_secs_f64(),
        per_s * steps_per_execution as f64,
        pct(0.50).as_secs_f64() * 1000.0,
        pct(0.99).as_secs_f64() * 1000.0
    );
    println!(
        "in process, same store kind and machine: {total} executions created by {clients} tasks in {:.1} s, run by one worker in {:.1} s: {:.0} executions/s ({:.0} steps/s) end to end; the API reaches {:.0}% of it",
        in_process.0.as_secs_f64(),
        in_process.1.as_secs_f64(),
        total as f64 / (in_process.0 + in_process.1).as_secs_f64(),
        total as f64 * steps_per_execution as f64 / (in_process.0 + in_process.1).as_secs_f64(),
        100.0 * per_s / (total as f64 / (in_process.0 + in_process.1).as_secs_f64()),
    );
}

/// The same executions without the server: `total` executions of `definition` created in a
/// fresh SQLite store (default settings, as `wfc serve --store sqlite:PATH`) by `clients`
/// concurrent tasks, then run by one in-process durable worker configured as the server's.
/// Returns (creation time, run time).
fn in_process(dir: &Path, definition: &Value, total: usize, clients: usize) -> (Duration, Duration) {
    use std::sync::Arc;
    use wfc_runtime::durable::{self, NewExecution, Worker, Workflows};
    let text = definition.to_string();
    let workflow = Arc::new(
        wfc_core::load(wfc_core::Source { path: "Short.asl.json", text: &text }).expect("a valid machine").workflow,
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let url = format!("sqlite:{}", dir.join("in-process.db").display());
        let store = durable::connect(&url).await.unwrap();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let created = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..clients {
            let (store, next, name) = (Arc::clone(&store), Arc::clone(&next), workflow.name.clone());
            set.spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        return;
                    }
                    let new = NewExecution {
                        name: format!("x{i}"),
                        workflow: name.clone(),
                        input: json!({"i": i}),
                        start_time: "2026-01-01T00:00:00.000Z".into(),
                        definition_hash: None,
                        version_id: None,
                    };
                    store.create_execution(new).await.unwrap();
                }
            });
        }
        while set.join_next().await.is_some() {}
        let created = created.elapsed();
        let handlers = Arc::new(wfc_runtime::interp::Handlers::new());
        let flows = Workflows::new().interpreted(Arc::clone(&workflow), handlers);
        let mut config = wfc_serve::Config::new(Arc::clone(&store), Arc::new(wfc_serve::NoHandler)).worker;
        config.exit_when_idle = true;
        let ran = Instant::now();
        let stats = Worker::new(store, flows, config).run(futures::future::pending()).await.unwrap();
        let ran = ran.elapsed();
        assert_eq!(stats.finished, total as u64, "{stats:?}");
        eprintln!("in-process worker: {stats:?}");
        (created, ran)
    })
}
