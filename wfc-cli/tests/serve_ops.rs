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

/// With `--credentials`, a correctly signed boto3 client works (also with a session token, and
/// presigned), and unsigned, wrongly signed,
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
    // With temporary credentials (sigv4_suite.py's TEMP and OLD keys): a session token, and one
    // that expired.
    let credentials = support::write(
        &dir,
        "credentials",
        &format!(
            "# wfc serve keys\n{key}:{secret}\nAKIDWFCTEMP:temp/secret token=session/token+1==\nAKIDWFCOLD:old/secret token=old-token expires=2020-01-01T00:00:00Z\n"
        ),
    );
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
    // The same refusals for the raw client (unsigned), and still only the three accepted
    // executions (signed, with a session token, presigned) ran.
    let mut client = Client::new(&server.addr);
    let e = client.call("ListStateMachines", &json!({})).unwrap_err();
    assert_eq!(e.0, "UnrecognizedClientException", "{e:?}");
    let counts = support::ledger_counts(&ledger);
    let ran = ["Signed:good", "Signed:presigned", "Signed:session"].map(|e| ((e.to_owned(), "Append".to_owned()), 1));
    assert_eq!(counts.into_iter().collect::<Vec<_>>(), ran);
}

/// A kill -9 of the server while executions wait (a Wait state, a callback by task token, an
/// activity), then a restart on the same SQLite store: every execution finishes, and every Task
/// body ran exactly once (the command handlers append to a ledger). The history of a running
/// execution is in the store as it grows: the events read before the kill (the Pass and Choice
/// states passed through included) are the first events of the final history, unchanged, and
/// the final history has every event once.
#[test]
fn kill9_while_executions_wait_loses_and_repeats_nothing() {
    let dir = support::scratch("kill9");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    kill9_on(&store, &dir);
}

/// [`kill9_while_executions_wait_loses_and_repeats_nothing`] on a PostgreSQL store.
#[test]
fn kill9_on_postgres_loses_and_repeats_nothing() {
    let Some(pg) = support::pg::TempPostgres::start("kill9") else { return };
    kill9_on(&pg.url, &support::scratch("kill9-postgres"));
}

fn kill9_on(store: &str, dir: &Path) {
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
    let handlers = support::write(dir, "handlers.json", &Value::Object(handlers).to_string());
    let args = ["--handlers", handlers.as_str(), "--activity-poll-seconds", "2"];
    let server = Server::start(store, &args, &[("TOKEN_DIR", &tokens)]);
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
        let definition = json!({"StartAt": "Before", "States": {
            "Before": task("Before", "Mark"),
            "Mark": {"Type": "Pass", "Result": true, "ResultPath": "$.marked", "Next": "Pick"},
            "Pick": {"Type": "Choice", "Choices": [{"Variable": "$.marked", "BooleanEquals": true, "Next": "Waiting"}],
                     "Default": "After"},
            "Waiting": waiting, "After": after}});
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
    let mut handed = Vec::new();
    while handed.len() < 3 {
        let got = c.ok("GetActivityTask", json!({"activityArn": activity, "workerName": "doomed"}));
        handed.extend(got.get("taskToken").and_then(Value::as_str).map(str::to_owned));
    }
    // Not asserted (it depends on the machine's speed): whether the Waits were still waiting.
    let done = support::ledger_counts(&ledger).keys().filter(|(_, state)| state == "After").count();
    let history = |c: &mut Client, arn: &str| {
        let page = c.ok("GetExecutionHistory", json!({"executionArn": arn, "maxResults": 1000}));
        page["events"].as_array().unwrap().clone()
    };
    let before: Vec<Vec<Value>> = executions.iter().map(|(_, arn)| history(&mut c, arn)).collect();
    let kinds = |events: &[Value]| events.iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let passed = ["ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded"]
        .into_iter()
        .chain(["TaskStateExited", "PassStateEntered", "PassStateExited", "ChoiceStateEntered", "ChoiceStateExited"]);
    for ((name, _), events) in executions.iter().zip(&before) {
        // Waiting for the callback (answered after the restart): the states so far, and the
        // waiting Task scheduled and started.
        if name.starts_with("Calls:") {
            let expected: Vec<&str> =
                passed.clone().chain(["TaskStateEntered", "TaskScheduled", "TaskStarted"]).collect();
            assert_eq!(kinds(events), expected, "{name}");
        }
    }
    eprintln!("killing the server with {done} executions past their wait");
    server.kill9();

    let server = Server::start(store, &args, &[("TOKEN_DIR", &tokens)]);
    let mut c = Client::new(&server.addr);
    // Callback tokens live in the store: the ones sent before the crash still work.
    for (name, _) in executions.iter().filter(|(n, _)| n.starts_with("Calls:")) {
        let token = std::fs::read_to_string(tokens.join(name)).unwrap();
        c.ok("SendTaskSuccess", json!({"taskToken": token, "output": json!({"answered": name}).to_string()}));
    }
    // Activities and their tasks live in the store: the activity is there after the crash
    // without being created again, and the worker that took its tasks before the crash answers
    // them with their tokens (the resumed Tasks take over the tasks their first attempts queued).
    assert_eq!(c.ok("DescribeActivity", json!({"activityArn": activity}))["name"], "Work");
    for token in &handed {
        c.ok("SendTaskSuccess", json!({"taskToken": token, "output": "{\"worked\": true}"}));
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
    // No event lost or repeated by the kill and the resume: the final history is the one an
    // uninterrupted run records, and starts with the events read before the kill, unchanged.
    let task = ["TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited"];
    for ((name, arn), before) in executions.iter().zip(&before) {
        let events = history(&mut c, arn);
        let waiting: &[&str] = if name.starts_with("Waits:") || name.starts_with("Sleeps:") {
            &["WaitStateEntered", "WaitStateExited"]
        } else {
            &task
        };
        let expected: Vec<&str> =
            passed.clone().chain(waiting.iter().copied()).chain(task).chain(["ExecutionSucceeded"]).collect();
        assert_eq!(kinds(&events), expected, "{name}");
        let ids: Vec<u64> = events.iter().map(|e| e["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>(), "{name}");
        assert!(!before.is_empty() && events.starts_with(before), "{name}: {before:#?}\n{events:#?}");
    }
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
    recorded_cases_on(&store, &dir, &venv, &corpus);
}

/// [`recorded_cases_through_the_api_match_wfc_test`] on a PostgreSQL store.
#[test]
fn recorded_cases_through_the_api_on_postgres_match_wfc_test() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/asl-aws");
    if !corpus.is_dir() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{} is missing (CI must have it)", corpus.display());
        eprintln!("\n!!!!!!!! SKIPPED: the AWS-recorded corpus is missing: {} !!!!!!!!\n", corpus.display());
        return;
    }
    let Some(venv) = boto3_venv("recorded_cases_through_the_api_on_postgres_match_wfc_test", false) else { return };
    let Some(pg) = support::pg::TempPostgres::start("conformance") else { return };
    recorded_cases_on(&pg.url, &support::scratch("conformance-postgres"), &venv, &corpus);
}

fn recorded_cases_on(store: &str, dir: &Path, venv: &Path, corpus: &Path) {
    // The recordings' account, and waits skipped as `wfc test` skips them (conformance_api.py).
    let server = Server::start(store, &["--account", "111111111111", "--virtual-time"], &[]);
    python(
        venv,
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
    use wfc_runtime::durable::NewExecution;
    use wfc_worker::{Worker, Workflows};
    let text = definition.to_string();
    let workflow = Arc::new(
        wfc_core::load(wfc_core::Source { path: "Short.asl.json", text: &text }).expect("a valid machine").workflow,
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let url = format!("sqlite:{}", dir.join("in-process.db").display());
        let store = wfc_stores::connect(&url).await.unwrap();
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
        let handlers = Arc::new(wfc_interp::Handlers::new());
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

// ---- the UI (issue 23) ---------------------------------------------------------------------

/// A GET of `path` on the server: (status, headers in lower case, body).
fn get(addr: &str, path: &str, cookie: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to wfc serve");
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{cookie}Connection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_lowercase(), body.to_owned())
}

/// The `Chromium` on PATH (Debian's package), or `None` (then only the HTML is checked), unless
/// `WFC_REQUIRE_CHROMIUM=1`.
fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        assert!(
            std::env::var("WFC_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "Chromium is required (WFC_REQUIRE_CHROMIUM=1) but none is on PATH"
        );
        eprintln!("no Chromium on PATH: the UI is checked without a browser");
    }
    found
}

/// Headless Chromium on `url` with `what` (`--dump-dom`, or `--screenshot=PATH`); its stdout.
fn browse(browser: &str, profile: &Path, what: &str, url: &str) -> String {
    let out = Command::new("timeout")
        .args(["120", browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .args(["--hide-scrollbars", "--window-size=1400,1000"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([what, url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "chromium {what} {url}: {}\n{dom}", String::from_utf8_lossy(&out.stderr));
    dom
}

/// Undoes the serializer's escaping of text and attribute values.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// Each drawn state's status (the third word of its class), by name, from a page or DOM dump:
/// `<g class="state TYPE STATUS" id="..." data-state="NAME">` (a `"` inside a value is always
/// escaped, so the tag splits on quotes).
fn drawn_statuses(page: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for piece in page.split("<g class=\"state ").skip(1) {
        let parts: Vec<&str> = piece.splitn(6, '"').collect();
        if parts.len() < 5 || parts[3].trim() != "data-state=" {
            continue;
        }
        let status = parts[0].split(' ').skip(1).collect::<Vec<_>>().join(" ");
        out.insert(unescape(parts[4]), if status.is_empty() { "none".to_owned() } else { status });
    }
    out
}

/// The document without its attribute values (where a serializer may leave `<` as it is).
fn without_attributes(dom: &str) -> String {
    let mut out = String::with_capacity(dom.len());
    for (i, piece) in dom.split("=\"").enumerate() {
        if i == 0 {
            out.push_str(piece);
        } else {
            out.push_str(piece.split_once('"').map_or("", |(_, rest)| rest));
        }
    }
    out
}

/// The history table's rows as (id, type), from a page or DOM dump.
fn history_rows(page: &str) -> Vec<(String, String)> {
    let Some(table) = page.split("<table id=\"events\"").nth(1) else { return Vec::new() };
    let body = table.split("</table>").next().unwrap_or_default();
    body.split("<tr data-event=")
        .skip(1)
        .map(|row| {
            let cells: Vec<String> =
                row.split("<td>").skip(1).map(|c| unescape(c.split("</td>").next().unwrap_or_default())).collect();
            (cells.first().cloned().unwrap_or_default(), cells.get(2).cloned().unwrap_or_default())
        })
        .collect()
}

/// An execution list's rows, from a page: each row's status and execution link (not its
/// duration, which grows while an execution runs).
fn list_rows(page: &str) -> Vec<String> {
    let Some(table) = page.split("<table id=\"executions\"").nth(1) else { return Vec::new() };
    let body = table.split("</table>").next().unwrap_or_default();
    body.split("<tr data-status=").skip(1).map(|r| r.split("</a>").next().unwrap_or_default().to_owned()).collect()
}

/// The "next page" link of an execution list, if any.
fn next_page(page: &str) -> Option<String> {
    let link = page.split("id=\"next-page\" href=\"").nth(1)?;
    Some(unescape(link.split('"').next()?))
}

/// The event ids of iteration `index` of Map state `map` in an API history: the events whose
/// chain of `previousEventId` reaches that iteration's `MapIterationStarted`.
fn iteration_events(events: &[Value], map: &str, index: u64) -> Vec<String> {
    let mut member: BTreeMap<u64, bool> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let id = e["id"].as_u64().unwrap();
        let started = e["type"] == "MapIterationStarted"
            && e["mapIterationStartedEventDetails"]["name"] == map
            && e["mapIterationStartedEventDetails"]["index"] == index;
        let inside = started || member.get(&e["previousEventId"].as_u64().unwrap_or(0)).copied().unwrap_or(false);
        member.insert(id, inside);
        if inside {
            out.push(id.to_string());
        }
    }
    out
}

/// What a state's status should be from the API's history: not entered is unreached; the
/// test names the others it expects.
fn entered_states(events: &[Value]) -> std::collections::BTreeSet<String> {
    events
        .iter()
        .filter_map(|e| e.get("stateEnteredEventDetails").and_then(|d| d["name"].as_str()).map(str::to_owned))
        .collect()
}

/// `wfc serve`'s `/ui`: executions that succeeded, failed after a caught error, wait on a
/// callback, and run a Map of 100 items, shown as the API answers them. Without a browser the
/// served HTML is checked (statuses, rows, escaping, headers, access); with headless Chromium
/// (one launch per page, run side by side) the pages' scripts run offline, a state is clicked to
/// show its input, and screenshots are saved under the test's scratch directory.
#[test]
fn ui_shows_executions_as_the_api_answers() {
    let dir = support::scratch("ui");
    let tokens = dir.join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let handlers = support::write(
        &dir,
        "handlers.json",
        &json!({"arn:aws:states:::sqs:sendMessage.waitForTaskToken": {"command": ["sh", "-c",
            "printf %s \"$WFC_TASK_TOKEN\" > \"$TOKEN_DIR/t.tmp\" && mv \"$TOKEN_DIR/t.tmp\" \"$TOKEN_DIR/t\" && echo '{}'"]}})
        .to_string(),
    );
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let server = Server::start(&store, &["--handlers", &handlers], &[("TOKEN_DIR", &tokens)]);
    let mut c = Client::new(&server.addr);
    let hostile = "Charge <img src=x onerror=alert(1)>";
    let machines = [
        (
            "Greets",
            json!({"StartAt": "Hello", "States": {
            "Hello": {"Type": "Pass", "Result": "hi", "ResultPath": "$.greeting", "Next": "Pick"},
            "Pick": {"Type": "Choice", "Choices": [{"Variable": "$.who", "StringEquals": "you", "Next": "Done"}],
                "Default": "Never"},
            "Done": {"Type": "Succeed"},
            "Never": {"Type": "Pass", "End": true}}}),
            json!({"who": "you"}),
        ),
        (
            "Charges",
            json!({"StartAt": hostile, "States": {
            hostile: {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:charge",
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Declined"}], "Next": "Shipped"},
            "Shipped": {"Type": "Succeed"},
            "Declined": {"Type": "Fail", "Error": "E<b>", "Cause": "</script><script>alert(3)</script>"}}}),
            json!({"note": "</script><b>bold</b>"}),
        ),
        (
            "Calls",
            json!({"StartAt": "Prep", "States": {
            "Prep": {"Type": "Pass", "Result": 1, "ResultPath": "$.prepared", "Next": "Ask"},
            "Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"MessageBody.$": "$"}, "Next": "After"},
            "After": {"Type": "Pass", "Next": "Again"},
            "Again": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"MessageBody.$": "$"}, "End": true}}}),
            json!({"q": 1}),
        ),
        (
            "Maps",
            json!({"StartAt": "Each", "States": {
            "Each": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": {"StartAt": "Double", "States": {
                "Double": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericLessThan": 50, "Next": "Low"}],
                    "Default": "High"},
                "Low": {"Type": "Pass", "End": true},
                "High": {"Type": "Pass", "End": true}}}, "End": true}}}),
            json!({"items": (0..100).collect::<Vec<_>>()}),
        ),
    ];
    let mut arns = BTreeMap::new();
    for (name, definition, input) in &machines {
        c.ok("CreateStateMachine", json!({"name": name, "definition": definition.to_string(), "roleArn": ROLE}));
        let arn = c.ok(
            "StartExecution",
            json!({"stateMachineArn": machine_arn(name), "name": "run-1", "input": input.to_string()}),
        )["executionArn"]
            .as_str()
            .unwrap()
            .to_owned();
        arns.insert(*name, arn);
    }
    let described: BTreeMap<&str, Value> = arns
        .iter()
        .map(|(name, arn)| {
            let d = wait_until("the execution to finish or wait", Duration::from_secs(120), || {
                let d = c.ok("DescribeExecution", json!({"executionArn": arn}));
                let settled = if *name == "Calls" { tokens.join("t").exists() } else { d["status"] != "RUNNING" };
                settled.then_some(d)
            });
            (*name, d)
        })
        .collect();
    let statuses: Vec<&str> = described.values().map(|d| d["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["RUNNING", "FAILED", "SUCCEEDED", "SUCCEEDED"], "Calls, Charges, Greets, Maps");
    let history: BTreeMap<&str, Vec<Value>> = arns
        .iter()
        .map(|(name, arn)| {
            let events = c.ok("GetExecutionHistory", json!({"executionArn": arn, "maxResults": 1000}))["events"]
                .as_array()
                .unwrap()
                .clone();
            (*name, events)
        })
        .collect();
    assert!(history["Maps"].len() > 400, "a Map of 100 items: {}", history["Maps"].len());

    // The list: every execution with its status; the filter narrows it.
    let (status, headers, list) = get(&server.addr, "/ui", None);
    assert_eq!(status, 200, "{list}");
    assert!(headers.contains("content-security-policy: default-src 'none'"), "{headers}");
    assert!(headers.contains("frame-ancestors 'none'"), "{headers}");
    for (name, d) in &described {
        let row = format!("<a href=\"/ui/machine?arn={}\">{name}</a>", machine_arn(name).replace(':', "%3A"));
        assert!(list.contains(&row), "{row} in {list}");
        assert!(list.contains(&format!(
            "<span class=\"badge {0}\">{1}</span>",
            d["status"].as_str().unwrap().to_lowercase(),
            d["status"].as_str().unwrap()
        )));
    }
    let (_, _, failed) = get(&server.addr, "/ui?status=FAILED", None);
    assert_eq!(failed.matches("<tr data-status=").count(), 1, "{failed}");
    assert!(failed.contains("data-status=\"FAILED\""), "{failed}");
    let (_, _, named) = get(&server.addr, "/ui?q=map", None);
    assert_eq!(named.matches("<tr data-status=").count(), 1, "{named}");
    // The list pages by the store: `n` rows a page and a "next page" link that keeps the filter.
    let all = list_rows(&list);
    assert_eq!(all.len(), 4, "{list}");
    assert!(!list.contains("id=\"next-page\""), "one page holds them all: {list}");
    let mut paged = Vec::new();
    let mut path = "/ui?n=3".to_owned();
    for _ in 0..3 {
        let (status, _, page) = get(&server.addr, &path, None);
        assert_eq!(status, 200, "{path}: {page}");
        paged.extend(list_rows(&page));
        match next_page(&page) {
            Some(next) => path = next,
            None => break,
        }
    }
    assert_eq!(paged, all, "pages of 3 rows give the one list, in its order");
    let (_, _, first) = get(&server.addr, "/ui?status=SUCCEEDED&n=1", None);
    let next = next_page(&first).expect("a next page of succeeded executions");
    assert!(next.contains("status=SUCCEEDED") && next.contains("n=1&"), "the link keeps the filter: {next}");
    let (_, _, second) = get(&server.addr, &next, None);
    assert!(next_page(&second).is_none(), "two succeeded executions: {second}");
    assert!(second.contains("id=\"first-page\""), "{second}");
    let succeeded: Vec<String> = [list_rows(&first), list_rows(&second)].concat();
    let want: Vec<String> = all.iter().filter(|r| r.contains("SUCCEEDED")).cloned().collect();
    assert_eq!(succeeded, want);
    let (status, _, _) = get(&server.addr, "/ui?after=nonsense", None);
    assert_eq!(status, 400, "a cursor that is not one is refused");
    let machine_page = format!("/ui/machine?arn={}&n=1", machine_arn("Maps").replace(':', "%3A"));
    let (_, _, maps_list) = get(&server.addr, &machine_page, None);
    assert_eq!(list_rows(&maps_list).len(), 1, "{maps_list}");
    assert!(next_page(&maps_list).is_none(), "{maps_list}");
    // A request naming another host (DNS rebinding) is refused; so are other methods.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    write!(s, "GET /ui HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    // Bad addresses answer pages, never a panic.
    for path in [
        "/ui/execution",
        "/ui/execution?arn=%",
        "/ui/execution?arn=arn%3Aaws%3Astates%3Aus-east-1%3A123456789012%3Aexecution%3ANo%3Ax",
        "/ui/machine?arn=x",
        "/ui/nothing",
    ] {
        let (status, _, page) = get(&server.addr, path, None);
        assert!((400..500).contains(&status), "{path}: {status} {page}");
        assert!(page.contains("<h1>"), "{path}: {page}");
    }

    // Each execution's page, as served: the graph's colors and the history rows agree with the
    // API; hostile names and values are text.
    let expected: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::from([
        (
            "Greets",
            BTreeMap::from([
                ("Hello", "succeeded"),
                ("Pick", "succeeded"),
                ("Done", "succeeded"),
                ("Never", "unreached"),
            ]),
        ),
        ("Charges", BTreeMap::from([(hostile, "caught"), ("Declined", "failed"), ("Shipped", "unreached")])),
        (
            "Calls",
            BTreeMap::from([("Prep", "succeeded"), ("Ask", "running"), ("After", "unreached"), ("Again", "unreached")]),
        ),
        (
            "Maps",
            BTreeMap::from([
                ("Each", "succeeded"),
                ("Double", "succeeded"),
                ("Low", "succeeded"),
                ("High", "succeeded"),
            ]),
        ),
    ]);
    let mut pages = BTreeMap::new();
    for (name, arn) in &arns {
        let path = format!("/ui/execution?arn={}", arn.replace(':', "%3A"));
        let (status, headers, page) = get(&server.addr, &path, None);
        assert_eq!(status, 200, "{page}");
        assert!(headers.contains("script-src 'nonce-"), "{headers}");
        let drawn = drawn_statuses(&page);
        let entered = entered_states(&history[name]);
        // The colors come from the history, a running execution's too (it is stored as it grows).
        for (state, status) in &drawn {
            assert_eq!(status == "unreached", !entered.contains(state), "{name} {state}: {status}");
        }
        let want: BTreeMap<String, String> =
            expected[name].iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        assert_eq!(drawn, want, "{name}");
        let rows = history_rows(&page);
        let api_rows: Vec<(String, String)> = history[name]
            .iter()
            .take(rows.len().max(1))
            .map(|e| (e["id"].to_string(), e["type"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(rows, api_rows, "{name}: the history table's first page is the API's history");
        assert!(page.contains(&format!("data-events=\"{}\"", history[name].len())), "{name}");
        assert_eq!(page.matches("<script").count(), 2, "{name}: only the page's own scripts");
        assert!(!page.contains("<img") && !page.contains("<b>"), "{name}: markup stays text");
        pages.insert(*name, (path, page));
    }
    assert!(pages["Charges"].1.contains("Charge &lt;img src=x onerror=alert(1)&gt;"));
    // The running execution's page: its live history (the Pass passed through, the waiting
    // Task scheduled and started), not its journal.
    let calls_kinds: Vec<&str> = history["Calls"].iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        calls_kinds,
        ["ExecutionStarted", "PassStateEntered", "PassStateExited", "TaskStateEntered", "TaskScheduled", "TaskStarted"]
    );
    assert!(!pages["Calls"].1.contains("<table id=\"journal\">"));
    assert!(pages["Calls"].1.contains("<span class=\"meta live\" id=\"live\">"));
    let json_path = format!("/ui/execution.json?arn={}", arns["Calls"].replace(':', "%3A"));
    let (status, _, poll) = get(&server.addr, &json_path, None);
    assert_eq!(status, 200);
    let poll: Value = serde_json::from_str(&poll).unwrap();
    assert_eq!(poll["status"], "RUNNING");
    assert!(poll.get("events").is_none(), "{poll}");
    assert!(pages["Calls"].1.contains(poll["version"].as_str().unwrap()), "the page knows the version it shows");
    // The poll answers the events after the last one the page has (by the store's index).
    let (_, _, poll) = get(&server.addr, &format!("{json_path}&after=2"), None);
    let poll: Value = serde_json::from_str(&poll).unwrap();
    let ids: Vec<u64> = poll["events"].as_array().unwrap().iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [3, 4, 5, 6], "{poll}");
    let (_, _, poll) = get(&server.addr, &format!("{json_path}&after=6"), None);
    assert_eq!(serde_json::from_str::<Value>(&poll).unwrap()["events"], json!([]));

    let Some(browser) = chromium() else { return };
    let base = server.endpoint();
    let profile = |n: &str| dir.join(format!("chromium-{n}"));
    // One browser per page, side by side: the DOM after the page's script clicked a state.
    let jobs: Vec<(String, String, String)> = vec![
        (
            "Charges".into(),
            format!("{base}{}#state={}", pages["Charges"].0, "Charge%20%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"),
            "--dump-dom".into(),
        ),
        ("Maps".into(), format!("{base}{}#state=Double", pages["Maps"].0), "--dump-dom".into()),
        ("Maps-3".into(), format!("{base}{}#state=Each&iteration=3", pages["Maps"].0), "--dump-dom".into()),
        ("Maps-70".into(), format!("{base}{}#state=Each&iteration=70", pages["Maps"].0), "--dump-dom".into()),
        ("Calls".into(), format!("{base}{}#state=Ask", pages["Calls"].0), "--dump-dom".into()),
        ("Greets".into(), format!("{base}{}#state=Hello", pages["Greets"].0), "--dump-dom".into()),
        ("list.png".into(), format!("{base}/ui"), format!("--screenshot={}", dir.join("ui-list.png").display())),
        (
            "charges.png".into(),
            format!("{base}{}#state=Declined", pages["Charges"].0),
            format!("--screenshot={}", dir.join("ui-execution.png").display()),
        ),
    ];
    let doms: BTreeMap<String, String> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(name, url, what)| {
                let p = profile(name);
                scope.spawn(move || (name.clone(), browse(browser, &p, what, url)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a browser thread")).collect()
    });
    for (name, (_, page)) in &pages {
        let dom = &doms[*name];
        assert!(dom.contains("data-ready=\"yes\""), "{name}: the page's script ran:\n{dom}");
        std::fs::write(dir.join(format!("{name}.dom.html")), dom).unwrap();
        // (The panel's own labels are `<b>` elements: the execution's markup is `<b>bold`.)
        let markup = without_attributes(dom);
        assert!(
            !markup.contains("<img") && !markup.contains("<b>bold") && !markup.contains("<script>alert"),
            "{name}: no markup from the execution"
        );
        let mut drawn = drawn_statuses(dom);
        // The clicked state is also `selected`.
        drawn.values_mut().for_each(|s| *s = s.split(' ').next().unwrap_or_default().to_owned());
        assert_eq!(drawn, drawn_statuses(page), "{name}: the browser shows the served colors");
        assert_eq!(history_rows(dom), history_rows(page), "{name}: the browser's first page of rows");
    }
    let panel = |name: &str| {
        let dom = &doms[name];
        let attr = dom.split("data-selftest-state=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or_default();
        unescape(attr)
    };
    let charges = panel("Charges");
    assert!(charges.starts_with(hostile), "{charges}");
    assert!(
        charges.contains("caught") && charges.contains(r#""note": "</script><b>bold</b>""#),
        "the input, as text: {charges}"
    );
    let maps = panel("Maps");
    assert!(maps.starts_with("Doublestatussucceeded") && maps.contains(" input0"), "{maps}");
    assert!(maps.contains("150 more events of this state"), "100 visits, 50 events shown: {maps}");
    let calls = panel("Calls");
    assert!(calls.starts_with("Askstatusrunning") && calls.contains(r#""q": 1"#), "{calls}");
    assert!(panel("Greets").contains(r#""who": "you""#), "{}", panel("Greets"));
    // A Map iteration chosen: the item processor colored from that iteration's events (item 3
    // took Low, item 70 High), the table showing them, as the API's history chains them.
    for (job, index, low, high) in [("Maps-3", 3, "succeeded", "unreached"), ("Maps-70", 70, "unreached", "succeeded")]
    {
        let dom = &doms[job];
        std::fs::write(dir.join(format!("{job}.dom.html")), dom).unwrap();
        assert!(dom.contains(&format!("data-iteration=\"{index}\"")), "{job}: the iteration was chosen:\n{dom}");
        let drawn = drawn_statuses(dom);
        let first_word = |s: &str| drawn[s].split(' ').next().unwrap_or_default().to_owned();
        assert_eq!(
            [first_word("Each"), first_word("Double"), first_word("Low"), first_word("High")],
            ["succeeded", "succeeded", low, high],
            "{job}: {drawn:?}"
        );
        let rows: Vec<String> = history_rows(dom).into_iter().map(|(id, _)| id).collect();
        let want = iteration_events(&history["Maps"], "Each", index);
        assert_eq!(rows, want, "{job}: the iteration's events, as the API chains them");
        let kinds: Vec<String> = history_rows(dom).into_iter().map(|(_, kind)| kind).collect();
        assert_eq!(
            kinds,
            [
                "MapIterationStarted",
                "ChoiceStateEntered",
                "ChoiceStateExited",
                "PassStateEntered",
                "PassStateExited",
                "MapIterationSucceeded"
            ],
            "{job}"
        );
    }
    for png in ["ui-list.png", "ui-execution.png"] {
        let bytes = std::fs::read(dir.join(png)).unwrap_or_default();
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "{png}: a screenshot was saved");
        eprintln!("screenshot: {}", dir.join(png).display());
    }

    // The waiting execution's page left open in a browser: a callback moves the execution on
    // (to a second callback), and the page appends the new events and recolors their states
    // without reloading; the last callback ends it, and the page reloads with the final colors.
    let mut tab = Cdp::open(browser, &profile("live"), &format!("{base}{}", pages["Calls"].0));
    tab.wait_for("the page's script", "document.body && document.body.dataset.ready === 'yes'");
    // A reload would clear this.
    tab.eval("window.wfcStayed = true");
    let token = |c: &mut Client| {
        let t = wait_until("a task token", Duration::from_secs(60), || std::fs::read_to_string(tokens.join("t")).ok());
        std::fs::remove_file(tokens.join("t")).unwrap();
        c.ok("SendTaskSuccess", json!({"taskToken": t, "output": "{\"answer\": 42}"}));
    };
    token(&mut c);
    let classes = "JSON.stringify(Array.from(document.querySelectorAll('.wfc-graph .state')).map(function (g) { return [g.dataset.state, g.getAttribute('class')]; }))";
    // The second Task has started (its handler wrote the token): the stored history has every
    // event up to its TaskStarted, which the open page must come to show.
    wait_until("the second task token", Duration::from_secs(60), || tokens.join("t").exists().then_some(()));
    let events = c.ok("GetExecutionHistory", json!({"executionArn": arns["Calls"], "maxResults": 1000}))["events"]
        .as_array()
        .unwrap()
        .clone();
    tab.wait_for(
        "the second callback's Task on the open page",
        &format!(
            "document.querySelectorAll('#events tbody tr').length === {} && document.querySelector('.wfc-graph .state.running[data-state=\"Again\"]') !== null",
            events.len()
        ),
    );
    assert_eq!(tab.eval("window.wfcStayed === true"), json!(true), "appended, not reloaded");
    let drawn: Vec<(String, String)> = serde_json::from_str(tab.eval(classes).as_str().unwrap()).unwrap();
    let drawn: BTreeMap<String, String> =
        drawn.into_iter().map(|(n, c)| (n, c.split(' ').nth(2).unwrap_or_default().to_owned())).collect();
    let want: BTreeMap<String, String> =
        [("Prep", "succeeded"), ("Ask", "succeeded"), ("After", "succeeded"), ("Again", "running")]
            .into_iter()
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .collect();
    assert_eq!(drawn, want, "the open page's colors after the callback");
    let rows: Vec<Vec<String>> = serde_json::from_str(
        tab.eval("JSON.stringify(Array.from(document.querySelectorAll('#events tbody tr')).map(function (tr) { return [tr.cells[0].textContent, tr.cells[2].textContent]; }))")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let api_rows: Vec<Vec<String>> =
        events.iter().map(|e| vec![e["id"].to_string(), e["type"].as_str().unwrap().to_owned()]).collect();
    assert_eq!(rows, api_rows, "the appended rows are the API's history");
    assert!(api_rows.len() > history["Calls"].len(), "the callback added events");
    token(&mut c);
    tab.wait_for("the ended execution's page", "document.getElementById('status').textContent === 'SUCCEEDED'");
    tab.wait_for("the page's script", "document.body && document.body.dataset.ready === 'yes'");
    let drawn: Vec<(String, String)> = serde_json::from_str(tab.eval(classes).as_str().unwrap()).unwrap();
    assert!(drawn.iter().all(|(_, c)| c.ends_with(" succeeded")), "every state succeeded: {drawn:?}");
    tab.close();
}

/// Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// the browser reads NUL-terminated JSON commands on fd 3 and answers on fd 4; a shell maps the
/// child's stdin and stdout there), for a page left open while the test acts.
struct Cdp {
    _child: support::live::Killed,
    commands: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<Value>,
    session: String,
    next: u64,
}

impl Cdp {
    fn open(browser: &str, profile: &Path, url: &str) -> Cdp {
        let mut child = Command::new("sh")
            .args(["-c", "exec 3<&0 4>&1 </dev/null >&2; exec timeout 300 \"$@\"", "sh", browser])
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("chromium runs");
        let commands = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (tx, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut message = Vec::new();
            while out.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                message.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&message)
                    && tx.send(v).is_err()
                {
                    break;
                }
                message.clear();
            }
        });
        let mut cdp = Cdp { _child: support::live::Killed(child), commands, answers, session: String::new(), next: 0 };
        let target = cdp.call("Target.createTarget", json!({"url": url})).expect("a tab")["targetId"].clone();
        let attached = cdp.call("Target.attachToTarget", json!({"targetId": target, "flatten": true}));
        cdp.session = attached.expect("a session")["sessionId"].as_str().expect("a session id").to_owned();
        cdp
    }

    /// Sends a command (to the page once attached) and returns its result or its error.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next += 1;
        let id = self.next;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.commands.write_all(&bytes).expect("write to chromium");
        loop {
            // A hang guard: the browser answers each command.
            let answer = self.answers.recv_timeout(Duration::from_secs(120)).expect("chromium answers");
            if answer["id"] == id {
                return match answer.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(answer["result"].clone()),
                };
            }
        }
    }

    /// The value of a JavaScript expression in the page (null while it has no document, as
    /// during a reload).
    fn eval(&mut self, expression: &str) -> Value {
        self.call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}))
            .map_or(Value::Null, |r| r["result"]["value"].clone())
    }

    /// Polls `condition` in the page until it is true (a bounded wait, not a timing assertion).
    fn wait_for(&mut self, what: &str, condition: &str) {
        let expression =
            format!("(function () {{ try {{ return !!({condition}); }} catch (e) {{ return false; }} }})()");
        wait_until(what, Duration::from_secs(120), || (self.eval(&expression) == json!(true)).then_some(()));
    }

    /// Asks the browser to close (the child is killed and reaped when dropped in any case).
    fn close(mut self) {
        let message = json!({"id": self.next + 1, "method": "Browser.close"});
        let _ = self.commands.write_all(format!("{message}\0").as_bytes());
        let _ = self.answers.recv_timeout(Duration::from_secs(10));
    }
}

/// With `--credentials` the UI is never open: it needs the token printed at start, which sets
/// a cookie; a wrong token or none is refused.
#[test]
fn ui_needs_its_token_when_the_api_needs_sigv4() {
    let dir = support::scratch("ui-token");
    let credentials = support::write(&dir, "credentials", "AKIDUI:wJalrXUtnFEMI/K7MDENG/bPxRfiCYUI\n");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let mut cmd = support::wfc();
    cmd.env_remove("WFC_SERVE_CREDENTIALS").args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--credentials",
        &credentials,
    ]);
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().expect("start wfc serve");
    let stdout = child.stdout.take().unwrap();
    let _child = support::live::Killed(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap();
    let addr = started["listening"].as_str().unwrap();
    let ui = started["ui"].as_str().unwrap();
    let token = ui.split("token=").nth(1).expect("the UI address carries its token");
    assert_eq!(token.len(), 64, "{ui}");
    assert_eq!(get(addr, "/ui", None).0, 401);
    assert_eq!(get(addr, "/ui?token=wrong", None).0, 401);
    assert_eq!(get(addr, "/ui", Some("wfc_ui_token=wrong")).0, 401);
    let (status, headers, _) = get(addr, &format!("/ui?token={token}"), None);
    assert_eq!(status, 303);
    assert!(
        headers.contains(&format!("set-cookie: wfc_ui_token={token}; path=/ui; httponly; samesite=strict")),
        "{headers}"
    );
    assert!(headers.contains("location: /ui\r\n"), "{headers}");
    let (status, _, page) = get(addr, "/ui", Some(&format!("wfc_ui_token={token}")));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<h1>wfc serve</h1>"));
    // The API still needs SigV4.
    let mut c = Client::new(addr);
    assert_eq!(c.call("ListStateMachines", &json!({})).unwrap_err().0, "UnrecognizedClientException");
}
