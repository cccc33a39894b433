//! The Lambda durable function adapter (`wfc_aws::lambda_durable`) against an
//! in-process durable execution service: the golden examples of Appendix A of
//! shared/specs/lambda-durable-functions-sdk.md (the checkpoints each invocation sends), paging
//! of the execution state, token rotation, and the §3.4 error handling. The same adapter runs
//! against AWS's dex-local-runner in wfc-cli/tests/lambda_durable_live.rs.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use wfc_aws::lambda_durable::{
    self, Checkpointed, ClientError, DurableClient, InvocationError, StatePage, wire_id, wire_name,
};
use wfc_interp::Handlers;
use wfc_runtime::ir::Workflow;
use wfc_runtime::{Failure, Limits};

/// An error object's `ErrorType` and `ErrorMessage` (its `ErrorData` and `StackTrace` are
/// checked where they are the point).
fn type_and_message(error: &Value) -> Value {
    json!({ "ErrorType": error["ErrorType"], "ErrorMessage": error["ErrorMessage"] })
}

fn load(text: &str) -> Workflow {
    wfc_core::load(wfc_core::Source { path: "inline.asl.json", text }).expect("definition loads").workflow
}

/// A durable execution service in memory: operations by wire id, single-use tokens, and a log
/// of every checkpoint's updates.
#[derive(Debug, Default)]
struct Service {
    ops: Vec<Value>,
    token: u64,
    calls: Vec<Vec<Value>>,
    /// Refuse the next checkpoint with this error.
    refuse: Option<ClientError>,
    /// Operations per GetDurableExecutionState page.
    page: usize,
    /// A chained invoke target the service cannot resolve: its START comes back FAILED.
    missing_function: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Fake(Arc<Mutex<Service>>);

impl Fake {
    fn new(input: &Value) -> Fake {
        let fake = Fake::default();
        fake.0.lock().unwrap().ops.push(json!({
            "Id": "exec", "Type": "EXECUTION", "Status": "STARTED", "StartTimestamp": 1_700_000_000_000i64,
            "ExecutionDetails": { "InputPayload": input.to_string() },
        }));
        fake
    }

    /// The invocation event: the first `first_page` operations inline, the rest behind a marker.
    fn event(&self, first_page: usize) -> Value {
        let s = self.0.lock().unwrap();
        let n = first_page.min(s.ops.len());
        let marker = if n < s.ops.len() { n.to_string() } else { String::new() };
        json!({
            "DurableExecutionArn": "arn:aws:lambda:us-west-2:000000000000:function:wf:$LATEST/durable-execution/e/1",
            "CheckpointToken": format!("t{}", s.token),
            "InitialExecutionState": { "Operations": s.ops[..n].to_vec(), "NextMarker": marker },
        })
    }

    /// What the service does when the function returns PENDING: fires every started timer.
    fn fire_timers(&self) {
        for op in &mut self.0.lock().unwrap().ops {
            if op["Type"] == "WAIT" && op["Status"] == "STARTED" {
                op["Status"] = json!("SUCCEEDED");
            }
            // A STEP's retry back-off (RETRY): PENDING, then READY for the next attempt.
            if op["Type"] == "STEP" && op["Status"] == "PENDING" {
                op["Status"] = json!("READY");
                op["StepDetails"].as_object_mut().unwrap().remove("NextAttemptTimestamp");
            }
        }
    }

    /// What SendDurableExecutionCallbackSuccess/Failure or a service timeout does to a callback.
    fn complete_callback(&self, callback_id: &str, status: &str, details: Value) {
        let mut s = self.0.lock().unwrap();
        let op = s.ops.iter_mut().find(|op| op["CallbackDetails"]["CallbackId"] == callback_id).expect("a callback");
        assert_eq!(op["Status"], "STARTED");
        op["Status"] = json!(status);
        for (k, v) in details.as_object().unwrap() {
            op["CallbackDetails"][k] = v.clone();
        }
    }

    /// What the target function's end does to a CHAINED_INVOKE (the service records it).
    fn complete_chained(&self, name: &str, status: &str, details: Value) {
        let mut s = self.0.lock().unwrap();
        let op =
            s.ops.iter_mut().find(|op| op["Name"] == name && op["Type"] == "CHAINED_INVOKE").expect("a chained invoke");
        assert_eq!(op["Status"], "STARTED");
        op["Status"] = json!(status);
        op["ChainedInvokeDetails"] = details;
    }

    fn calls(&self) -> Vec<Vec<Value>> {
        self.0.lock().unwrap().calls.clone()
    }
}

impl DurableClient for Fake {
    fn checkpoint<'a>(
        &'a self,
        _arn: &'a str,
        token: &'a str,
        updates: Vec<Value>,
    ) -> BoxFuture<'a, Result<Checkpointed, ClientError>> {
        let mut s = self.0.lock().unwrap();
        let result = (|| {
            if let Some(e) = s.refuse.take() {
                return Err(e);
            }
            if token != format!("t{}", s.token) {
                return Err(ClientError::InvalidToken("Invalid checkpoint token".into()));
            }
            let mut changed = Vec::new();
            for u in &updates {
                let id = u["Id"].clone();
                // As the service validates: a parent must be a CONTEXT it knows.
                if let Some(parent) = u["ParentId"].as_str() {
                    assert!(
                        s.ops.iter().any(|op| op["Id"] == parent && op["Type"] == "CONTEXT"),
                        "{} names an unknown parent {parent}",
                        u["Name"]
                    );
                }
                let i = match s.ops.iter().position(|op| op["Id"] == id) {
                    Some(i) => i,
                    None => {
                        let mut op = json!({ "Id": id, "Name": u["Name"], "Type": u["Type"], "SubType": u["SubType"], "Status": "STARTED" });
                        if let Some(parent) = u.get("ParentId") {
                            op["ParentId"] = parent.clone();
                        }
                        s.ops.push(op);
                        s.ops.len() - 1
                    }
                };
                let details = match u["Type"].as_str().unwrap() {
                    "CONTEXT" => "ContextDetails",
                    "CALLBACK" => "CallbackDetails",
                    _ => "StepDetails",
                };
                let missing_function = s.missing_function.clone();
                let op = &mut s.ops[i];
                match u["Action"].as_str().unwrap() {
                    "START" if u["Type"] == "WAIT" => {
                        op["WaitDetails"] = json!({ "ScheduledEndTimestamp": 1_800_000_000 });
                    }
                    "START" if u["Type"] == "CHAINED_INVOKE" => {
                        // As the service validates: START only if new, with a target.
                        assert!(op.get("ChainedInvokeDetails").is_none(), "a second START of {}", u["Name"]);
                        let target = &u["ChainedInvokeOptions"]["FunctionName"];
                        assert!(target.as_str().is_some_and(|t| !t.is_empty()), "no FunctionName: {u}");
                        op["ChainedInvokeDetails"] = json!({});
                        if target.as_str() == missing_function.as_deref() {
                            op["Status"] = json!("FAILED");
                            let message = format!("Function not found: {}.", target.as_str().unwrap());
                            let error = json!({ "ErrorType": "ResourceNotFoundException", "ErrorMessage": message });
                            op["ChainedInvokeDetails"] = json!({ "Error": error });
                        }
                    }
                    _ if u["Type"] == "CHAINED_INVOKE" => panic!("the function may only start a CHAINED_INVOKE"),
                    "START" if u["Type"] == "CALLBACK" => {
                        // The service issues the callback id.
                        op["CallbackDetails"] = json!({ "CallbackId": format!("cb-{}", i) });
                    }
                    // As dex-local-runner validates: a STEP starts once (a READY one needs none).
                    "START" => assert_eq!(op["Status"], "STARTED", "START of a {} STEP {}", op["Status"], u["Name"]),
                    "SUCCEED" if u["Type"] == "EXECUTION" => op["Status"] = json!("SUCCEEDED"),
                    // As the service does (§4.4.5): PENDING until the delay passes, the attempt
                    // counted, the error kept.
                    "RETRY" => {
                        assert_eq!(u["Type"], "STEP");
                        assert!(["STARTED", "READY"].contains(&op["Status"].as_str().unwrap()), "RETRY of {op}");
                        let attempt = op["StepDetails"]["Attempt"].as_i64().unwrap_or(0) + 1;
                        assert!(u["StepOptions"]["NextAttemptDelaySeconds"].as_i64().is_some(), "{u}");
                        op["Status"] = json!("PENDING");
                        op["StepDetails"] = json!({
                            "Attempt": attempt, "Error": u["Error"], "NextAttemptTimestamp": 1_800_000_000,
                        });
                    }
                    _ if u["Type"] == "CALLBACK" => panic!("the function may only start a CALLBACK"),
                    "SUCCEED" => {
                        op["Status"] = json!("SUCCEEDED");
                        op[details] = json!({ "Result": u["Payload"] });
                    }
                    "FAIL" => {
                        op["Status"] = json!("FAILED");
                        op[details] = json!({ "Error": u["Error"] });
                    }
                    // As the service validates: only a started WAIT is cancelled.
                    "CANCEL" if u["Type"] == "WAIT" => {
                        assert_eq!(op["Status"], "STARTED", "CANCEL of a finished WAIT {}", u["Name"]);
                        op["Status"] = json!("CANCELLED");
                    }
                    other => panic!("unexpected action {other}"),
                }
                changed.push(op.clone());
            }
            s.token += 1;
            Ok(Checkpointed { token: format!("t{}", s.token), operations: changed })
        })();
        s.calls.push(updates);
        Box::pin(async move { result })
    }

    fn state<'a>(
        &'a self,
        _arn: &'a str,
        token: &'a str,
        marker: &'a str,
    ) -> BoxFuture<'a, Result<StatePage, ClientError>> {
        let s = self.0.lock().unwrap();
        let result = if token != format!("t{}", s.token) {
            Err(ClientError::InvalidToken("Invalid checkpoint token".into()))
        } else {
            let from: usize = marker.parse().unwrap();
            let to = (from + s.page.max(1)).min(s.ops.len());
            let next = (to < s.ops.len()).then(|| to.to_string());
            Ok(StatePage { operations: s.ops[from..to].to_vec(), next_marker: next })
        };
        Box::pin(async move { result })
    }
}

/// One scripted answer: a result, or (error, cause).
type Answer<'a> = (&'a str, Result<Value, (&'a str, &'a str)>);
/// The retry counts of each state's real runs.
type Runs = Arc<Mutex<HashMap<String, Vec<u32>>>>;

/// Task handlers that count their real runs.
fn counting(answers: &[Answer<'_>]) -> (Handlers, Runs) {
    let runs: Runs = Arc::default();
    type Table = HashMap<String, Vec<Result<Value, (String, String)>>>;
    let table: Table = answers.iter().fold(HashMap::new(), |mut m, (k, v)| {
        m.entry((*k).to_owned()).or_default().push(v.clone().map_err(|(e, c)| (e.to_owned(), c.to_owned())));
        m
    });
    let log = Arc::clone(&runs);
    let handlers = Handlers::new().fallback(move |_resource: String, _input: Value, ctx: wfc_runtime::TaskContext| {
        let mut runs = log.lock().unwrap();
        let seen = runs.entry(ctx.state_name().to_owned()).or_default();
        seen.push(ctx.retry_count());
        let list = &table[ctx.state_name()];
        let answer = list[(seen.len() - 1).min(list.len() - 1)].clone();
        async move { answer.map_err(|(e, c)| Failure::new(e, c)) }
    });
    (handlers, runs)
}

fn actions(call: &[Value]) -> Vec<String> {
    call.iter()
        .map(|u| {
            format!(
                "{} {} {}",
                u["Action"].as_str().unwrap(),
                u["Type"].as_str().unwrap(),
                u["Name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn invoke(wf: &Workflow, handlers: &Handlers, fake: &Fake, first_page: usize) -> Result<Value, InvocationError> {
    lambda_durable::invoke(wf, handlers, &fake.event(first_page), Arc::new(fake.clone()))
}

/// A.1 Simple step execution: START, SUCCEED with the payload, SUCCEEDED with the result.
#[test]
fn a1_simple_step() {
    let wf = load(
        r#"{"StartAt": "step1", "States": {"step1": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}"#,
    );
    let (h, runs) = counting(&[("step1", Ok(json!("result")))]);
    let fake = Fake::new(&json!({}));
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "\"result\"" }));
    let calls = fake.calls();
    assert_eq!(
        calls.iter().map(|c| actions(c)).collect::<Vec<_>>(),
        [["START STEP step1#1.0"], ["SUCCEED STEP step1#1.0"]]
    );
    assert_eq!(calls[1][0]["Payload"], "\"result\"");
    assert_eq!(calls[0][0]["Id"], wire_id("step1#1.0"));
    assert_eq!(calls[0][0]["Id"].as_str().unwrap().len(), 64);
    assert_eq!(runs.lock().unwrap()["step1"], [0]);
}

/// A.2 Step with retry (§4.4.5): one STEP, whose failed attempt is its RETRY with the error and
/// `NextAttemptDelaySeconds`; the service makes it PENDING, then READY, and the next attempt
/// runs on it without a START and SUCCEEDs it.
#[test]
fn a2_step_with_retry() {
    let wf = load(
        r#"{"StartAt": "step1", "States": {"step1": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f",
            "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 5, "MaxAttempts": 1}], "End": true}}}"#,
    );
    let (h, runs) = counting(&[("step1", Err(("Oops", "first try"))), ("step1", Ok(json!("result")))]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    let calls = fake.calls();
    assert_eq!(
        calls.iter().map(|c| actions(c)).collect::<Vec<_>>(),
        [vec!["START STEP step1#1.0"], vec!["RETRY STEP step1#1.0"]]
    );
    let retry = &calls[1][0];
    assert_eq!(retry["StepOptions"], json!({ "NextAttemptDelaySeconds": 5 }));
    let error = &retry["Error"];
    assert_eq!(type_and_message(error), json!({ "ErrorType": "Oops", "ErrorMessage": "first try" }));
    // §8.3.3's SHOULDs: the error and cause for machines, and the operation's scopes.
    assert_eq!(error["ErrorData"], json!({ "Error": "Oops", "Cause": "first try" }).to_string());
    assert_eq!(error["StackTrace"], json!(["step1#1.0"]));
    assert_eq!(fake.0.lock().unwrap().ops[1]["StepDetails"]["Attempt"], 1);
    // The delay has not passed: the replay parks at the back-off again, sending nothing.
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    assert_eq!(fake.calls().len(), 2);
    // Invocation 2, the STEP READY: the failure replays, attempt 1 runs on the same STEP.
    fake.fire_timers();
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "SUCCEEDED", "Result": "\"result\"" }));
    let calls = fake.calls();
    assert_eq!(calls[2..].iter().map(|c| actions(c)).collect::<Vec<_>>(), [["SUCCEED STEP step1#1.0"]]);
    // The earlier attempts' error names travel with the result (a SUCCEED has no Error).
    let payload: Value = serde_json::from_str(calls[2][0]["Payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload, json!({ "wfc:result": "result", "wfc:retriedErrors": ["Oops"] }));
    assert_eq!(runs.lock().unwrap()["step1"], [0, 1]);
    // A replay of the finished execution runs nothing and answers the unwrapped result.
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "SUCCEEDED", "Result": "\"result\"" }));
    assert_eq!((fake.calls().len(), runs.lock().unwrap()["step1"].len()), (3, 2));
}

/// Retries on one STEP pick and count retriers by each attempt's error: the earlier attempts'
/// error names travel in the RETRY's and FAIL's `ErrorData` (the service keeps only the latest
/// error), so a replay decides as the first run did.
#[test]
fn retried_attempts_replay_each_error_to_choose_the_retrier() {
    let wf = load(
        r#"{"StartAt": "s", "States": {"s": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f",
            "Retry": [{"ErrorEquals": ["A"], "IntervalSeconds": 2, "MaxAttempts": 1},
                      {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 3, "MaxAttempts": 1}], "End": true}}}"#,
    );
    let (h, runs) = counting(&[("s", Err(("A", "a"))), ("s", Err(("B", "b"))), ("s", Err(("C", "c")))]);
    let fake = Fake::new(&json!({}));
    for _ in 0..2 {
        assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
        fake.fire_timers();
    }
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out["Status"], "FAILED", "{out}");
    assert_eq!(type_and_message(&out["Error"]), json!({ "ErrorType": "C", "ErrorMessage": "c" }));
    let calls = fake.calls();
    assert_eq!(
        calls.iter().map(|c| actions(c)).collect::<Vec<_>>(),
        [vec!["START STEP s#1.0"], vec!["RETRY STEP s#1.0"], vec!["RETRY STEP s#1.0"], vec!["FAIL STEP s#1.0"]]
    );
    let delays: Vec<&Value> = calls[1..3].iter().map(|c| &c[0]["StepOptions"]["NextAttemptDelaySeconds"]).collect();
    assert_eq!(delays, [2, 3]);
    let data = |i: usize| serde_json::from_str::<Value>(calls[i][0]["Error"]["ErrorData"].as_str().unwrap()).unwrap();
    assert_eq!(data(2), json!({ "Error": "B", "Cause": "b", "RetriedErrors": ["A"] }));
    assert_eq!(data(3), json!({ "Error": "C", "Cause": "c", "RetriedErrors": ["A", "B"] }));
    assert_eq!(runs.lock().unwrap()["s"], [0, 1, 2]);
    // A replay of the FAILED STEP fails the same way without running anything.
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), out);
    assert_eq!((fake.calls().len(), runs.lock().unwrap()["s"].len()), (4, 3));
}

/// A failure that no retrier matches is its STEP's FAIL, and a Catch goes on after it; a retry
/// of a Parallel (no STEP of its own) keeps its back-off as a WAIT.
#[test]
fn a_caught_failure_is_a_fail_and_state_retries_keep_their_wait() {
    let wf = load(
        r#"{"StartAt": "s", "States": {
            "s": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f",
                  "Retry": [{"ErrorEquals": ["X"]}], "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "t"}], "Next": "t"},
            "t": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}"#,
    );
    let (h, _) = counting(&[("s", Err(("Y", "no retrier"))), ("t", Ok(json!("after")))]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "SUCCEEDED", "Result": "\"after\"" }));
    let all: Vec<String> = fake.calls().iter().flat_map(|c| actions(c)).collect();
    assert_eq!(all, ["START STEP s#1.0", "FAIL STEP s#1.0", "START STEP t#1.0", "SUCCEED STEP t#1.0"]);

    let wf = load(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Parallel", "End": true,
            "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 4, "MaxAttempts": 1}],
            "Branches": [{"StartAt": "w", "States": {"w": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}]}}}"#,
    );
    let (h, _) = counting(&[("w", Err(("E", "once"))), ("w", Ok(json!("ok")))]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    let all: Vec<String> = fake.calls().iter().flat_map(|c| actions(c)).collect();
    let at = |a: &str| all.iter().position(|x| x == a).unwrap_or_else(|| panic!("no {a} in {all:?}"));
    // The branch's failure is final for its STEP (the branch ended), before its CONTEXT fails.
    assert!(at("FAIL STEP P#1.0/0/w#1.0") < at("FAIL CONTEXT P#1.0/0"), "{all:?}");
    assert!(at("START WAIT P#1.retry1") > at("FAIL CONTEXT P#1.0/0"), "{all:?}");
    assert!(!all.iter().any(|a| a.starts_with("RETRY")), "{all:?}");
    fake.fire_timers();
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "SUCCEEDED", "Result": "[\"ok\"]" }));
}

/// A.3 Wait: START with WaitSeconds, PENDING; then the completed wait is skipped.
#[test]
fn a3_wait() {
    let wf = load(
        r#"{"StartAt": "wait1", "States": {"wait1": {"Type": "Wait", "Seconds": 60, "Next": "Done"},
            "Done": {"Type": "Pass", "Result": "done", "End": true}}}"#,
    );
    let (h, _) = counting(&[]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    let calls = fake.calls();
    assert_eq!(actions(&calls[0]), ["START WAIT wait1#1"]);
    let secs = calls[0][0]["WaitOptions"]["WaitSeconds"].as_i64().unwrap();
    assert!((60..=61).contains(&secs), "{secs}");
    fake.fire_timers();
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "SUCCEEDED", "Result": "\"done\"" }));
    assert_eq!(fake.calls().len(), 1, "a fired wait is not checkpointed again");
}

/// A.4 Replay after a Lambda timeout: step1 replays its cached result, step2 (STARTED) runs
/// again without a second START.
#[test]
fn a4_replay_after_timeout() {
    let wf = load(
        r#"{"StartAt": "step1", "States": {
            "step1": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "ResultPath": "$.one", "Next": "step2"},
            "step2": {"Type": "Task", "Resource": "arn:aws:lambda:::function:g", "End": true}}}"#,
    );
    let (h, runs) = counting(&[("step1", Ok(json!("result1"))), ("step2", Ok(json!("result2")))]);
    let fake = Fake::new(&json!({}));
    {
        let mut s = fake.0.lock().unwrap();
        s.ops.push(
            json!({ "Id": wire_id("step1#1.0"), "Name": wire_name("step1#1.0"), "Type": "STEP", "Status": "SUCCEEDED",
                           "StepDetails": { "Result": "\"result1\"" } }),
        );
        s.ops.push(
            json!({ "Id": wire_id("step2#1.0"), "Name": wire_name("step2#1.0"), "Type": "STEP", "Status": "STARTED" }),
        );
    }
    let out = invoke(&wf, &h, &fake, 1).unwrap();
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "\"result2\"" }));
    assert_eq!(fake.calls().iter().map(|c| actions(c)).collect::<Vec<_>>(), [["SUCCEED STEP step2#1.0"]]);
    let runs = runs.lock().unwrap();
    assert!(!runs.contains_key("step1"), "step1 ran again: {runs:?}");
    assert_eq!(runs["step2"], [0]);
}

#[test]
fn execution_state_is_paged_and_ids_survive_any_state_name() {
    let wf = load(
        r#"{"StartAt": "Ünïcode / 50% #1", "States": {
            "Ünïcode / 50% #1": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "Next": "b"},
            "b": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "Next": "c"},
            "c": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}"#,
    );
    let (h, runs) = counting(&[("Ünïcode / 50% #1", Ok(json!(1))), ("b", Ok(json!(2))), ("c", Ok(json!(3)))]);
    let fake = Fake::new(&json!({}));
    fake.0.lock().unwrap().page = 1;
    // A full run first: every id goes over the wire as a hash, the readable id as the Name.
    invoke(&wf, &h, &fake, 100).unwrap();
    let name = wire_name("Ünïcode / 50% #1#1.0");
    assert!(name.is_ascii() && !name.contains('Ü'), "{name}");
    assert_eq!(lambda_durable::journal_id(&name).as_deref(), Some("Ünïcode / 50% #1#1.0"));
    let before = runs.lock().unwrap().values().map(Vec::len).sum::<usize>();
    // A replay whose state comes one operation per GetDurableExecutionState page runs nothing.
    assert_eq!(invoke(&wf, &h, &fake, 1).unwrap(), json!({ "Status": "SUCCEEDED", "Result": "3" }));
    assert_eq!(runs.lock().unwrap().values().map(Vec::len).sum::<usize>(), before);
}

#[test]
fn an_invalid_token_propagates_and_a_size_limit_fails_the_execution() {
    let wf = load(
        r#"{"StartAt": "s", "States": {"s": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}"#,
    );
    let (h, _) = counting(&[("s", Ok(json!("ok")))]);
    // §3.4: InvalidParameterValueException for the token is not turned into FAILED.
    let fake = Fake::new(&json!({}));
    let mut event = fake.event(100);
    event["CheckpointToken"] = json!("t-stale");
    let err = lambda_durable::invoke(&wf, &h, &event, Arc::new(fake.clone())).unwrap_err();
    assert!(matches!(err, InvocationError::InvalidToken(_)), "{err:?}");
    // A size-limit refusal: FAILED with a clear message, no invocation error.
    let fake = Fake::new(&json!({}));
    fake.0.lock().unwrap().refuse =
        Some(ClientError::TooLarge("413 RequestEntityTooLarge payload size exceeded".into()));
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out["Status"], "FAILED");
    assert_eq!(out["Error"]["ErrorType"], "Wfc.CheckpointTooLarge");
    assert!(out["Error"]["ErrorMessage"].as_str().unwrap().contains("payload size exceeded"), "{out}");
}

#[test]
fn a_result_over_the_response_limit_is_checkpointed_on_the_execution_operation() {
    let wf = load(r#"{"StartAt": "p", "States": {"p": {"Type": "Pass", "End": true}}}"#);
    let big = json!({ "blob": "x".repeat(lambda_durable::MAX_INLINE_RESULT) });
    let fake = Fake::new(&big);
    let event = fake.event(100);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let handlers = Handlers::new();
    let out = runtime
        .block_on(lambda_durable::invoke_with(&event, Arc::new(fake.clone()), "wf", |input, options| {
            wfc_interp::run(&wf, &handlers, input, options.with_limits(Limits::unlimited()))
        }))
        .unwrap();
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "" }));
    let calls = fake.calls();
    assert_eq!(actions(&calls[0]), ["SUCCEED EXECUTION "]);
    assert_eq!(calls[0][0]["Id"], "exec");
    assert_eq!(calls[0][0]["Payload"].as_str().unwrap().len(), big.to_string().len());
}

// ---------------------------------------------------------------------------------------------
// Generated code runs as a durable function exactly as the interpreter does
// ---------------------------------------------------------------------------------------------

wfc_runtime::include_workflow!("tests/adapters/fan_out.asl.json");

/// The IR `include_workflow!` lowered the definition at `path` to (generated code carries none),
/// for what reads the IR.
fn lowered(path: &str) -> wfc_ir::Workflow {
    wfc_build::load_file(path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

#[derive(Default)]
struct Shop {
    charges: Mutex<u32>,
}

impl fan_out::Handler for Shop {
    async fn charge(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        let mut n = self.charges.lock().unwrap();
        *n += 1;
        if *n == 1 { Err(wfc_runtime::TaskError::new("Busy", "1")) } else { Ok(json!({ "ok": true })) }
    }

    async fn ship(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        Ok(json!("shipped"))
    }
}

/// Invokes until the function stops answering PENDING, firing the timers in between.
fn drive(fake: &Fake, mut invoke: impl FnMut(&Value) -> Value) -> (Value, usize) {
    for n in 1..20 {
        let out = invoke(&fake.event(2));
        if out["Status"] != "PENDING" {
            return (out, n);
        }
        fake.fire_timers();
    }
    panic!("no end after 20 invocations");
}

#[test]
fn generated_code_checkpoints_the_same_operations_as_the_interpreter() {
    let input = json!({ "order": 42 });
    let generated = Fake::new(&input);
    let shop = Shop::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let (out, invocations) = drive(&generated, |event| {
        runtime
            .block_on(lambda_durable::invoke_with(event, Arc::new(generated.clone()), "fan_out", |input, options| {
                fan_out::run_with(&shop, input, options)
            }))
            .unwrap()
    });
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "[{\"ok\":true},\"shipped\"]" }));
    assert!(invocations >= 2, "the Wait and the back-off suspend the function");
    assert_eq!(*shop.charges.lock().unwrap(), 2, "each attempt ran once");

    let interpreted = Fake::new(&input);
    let wf = lowered("tests/adapters/fan_out.asl.json");
    let (h, _) = counting(&[
        ("Charge", Err(("Busy", "1"))),
        ("Charge", Ok(json!({ "ok": true }))),
        ("Ship", Ok(json!("shipped"))),
    ]);
    let (out2, invocations2) =
        drive(&interpreted, |event| lambda_durable::invoke(&wf, &h, event, Arc::new(interpreted.clone())).unwrap());
    assert_eq!((out2, invocations2), (out, invocations));
    let strip = |calls: Vec<Vec<Value>>| -> Vec<Vec<String>> { calls.iter().map(|c| actions(c)).collect() };
    assert_eq!(strip(interpreted.calls()), strip(generated.calls()));
}

// ---------------------------------------------------------------------------------------------
// CALLBACK and CONTEXT operations
// ---------------------------------------------------------------------------------------------

/// Each update as `ACTION TYPE Name < parent Name` (the parent by its readable name).
fn shape(fake: &Fake, call: &[Value]) -> Vec<String> {
    let s = fake.0.lock().unwrap();
    call.iter()
        .map(|u| {
            let parent = u["ParentId"].as_str().map_or("-".to_owned(), |p| {
                s.ops.iter().find(|op| op["Id"] == p).map_or(p.to_owned(), |op| op["Name"].as_str().unwrap().to_owned())
            });
            format!(
                "{} {} {} < {parent}",
                u["Action"].as_str().unwrap(),
                u["Type"].as_str().unwrap(),
                u["Name"].as_str().unwrap()
            )
        })
        .collect()
}

const APPROVAL: &str = r#"{"StartAt": "Ask", "States": {
    "Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"token.$": "$$.Task.Token"}, "TimeoutSeconds": 3600, "HeartbeatSeconds": 60,
            "ResultPath": "$.answer", "Next": "Done",
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Done"}]},
    "Done": {"Type": "Pass", "End": true}}}"#;

/// Task handlers that keep the task tokens they are given.
fn token_keeper() -> (Handlers, Arc<Mutex<Vec<String>>>) {
    let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&tokens);
    let handlers = Handlers::new().fallback(move |_resource: String, input: Value, ctx: wfc_runtime::TaskContext| {
        assert_eq!(input["token"].as_str(), ctx.task_token(), "$$.Task.Token is the task token");
        seen.lock().unwrap().push(ctx.task_token().unwrap_or_default().to_owned());
        async move { Ok(json!("sent")) }
    });
    (handlers, tokens)
}

/// A `.waitForTaskToken` Task is a CALLBACK: started first (its callback id, which the service
/// issues, is the task token), then the handler's call as a STEP, then PENDING until the
/// service records the answer; the next invocation replays it.
#[test]
fn a_callback_is_pending_until_the_service_records_its_answer() {
    let wf = load(APPROVAL);
    let (h, tokens) = token_keeper();
    let fake = Fake::new(&json!({ "order": 1 }));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    let calls = fake.calls();
    assert_eq!(
        calls.iter().map(|c| actions(c)).collect::<Vec<_>>(),
        [["START CALLBACK Ask#1.0"], ["START STEP Ask#1.0.send"], ["SUCCEED STEP Ask#1.0.send"]]
    );
    let options = &calls[0][0]["CallbackOptions"];
    assert!((3600..=3601).contains(&options["TimeoutSeconds"].as_i64().unwrap()), "{options}");
    assert_eq!(options["HeartbeatTimeoutSeconds"], 60);
    assert_eq!(calls[0][0]["SubType"], "TaskToken");
    let callback_id = fake.0.lock().unwrap().ops[1]["CallbackDetails"]["CallbackId"].as_str().unwrap().to_owned();
    assert_eq!(*tokens.lock().unwrap(), std::slice::from_ref(&callback_id));

    // Invoked again before an answer (a heartbeat, say): still PENDING, nothing re-sent.
    assert_eq!(invoke(&wf, &h, &fake, 1).unwrap(), json!({ "Status": "PENDING" }));
    assert_eq!(fake.calls().len(), 3);
    assert_eq!(tokens.lock().unwrap().len(), 1, "the handler is not called again");

    // SendDurableExecutionCallbackSuccess: the replay takes the result.
    fake.complete_callback(&callback_id, "SUCCEEDED", json!({ "Result": "{\"approved\":true}" }));
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "{\"order\":1,\"answer\":{\"approved\":true}}" }));
    assert_eq!(fake.calls().len(), 3, "a finished callback is not checkpointed by the function");
    assert_eq!(tokens.lock().unwrap().len(), 1);
}

/// How the service's endings of a callback reach Retry and Catch.
#[test]
fn callback_failures_and_timeouts_map_to_states_errors() {
    let wf = load(APPROVAL);
    for (status, details, error, cause) in [
        (
            "FAILED",
            json!({ "Error": { "ErrorType": "Rejected", "ErrorMessage": "no budget" } }),
            "Rejected",
            "no budget",
        ),
        ("FAILED", json!({ "Error": {} }), "States.TaskFailed", ""),
        (
            "TIMED_OUT",
            json!({ "Error": { "ErrorType": "Callback.Timeout", "ErrorMessage": "Callback timed out" } }),
            "States.Timeout",
            "the task did not finish within TimeoutSeconds: Callback timed out",
        ),
        (
            "TIMED_OUT",
            json!({ "Error": { "ErrorType": "Callback.Heartbeat", "ErrorMessage": "Callback timed out on heartbeat" } }),
            "States.Timeout",
            "the task did not send a heartbeat within HeartbeatSeconds: Callback timed out on heartbeat",
        ),
    ] {
        let (h, tokens) = token_keeper();
        let fake = Fake::new(&json!({}));
        assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
        let id = tokens.lock().unwrap()[0].clone();
        fake.complete_callback(&id, status, details);
        let out = invoke(&wf, &h, &fake, 100).unwrap();
        let result: Value = serde_json::from_str(out["Result"].as_str().unwrap()).unwrap();
        assert_eq!(result["error"], json!({ "Error": error, "Cause": cause }), "{status}");
    }
}

/// A Parallel attempt is a CONTEXT, each branch a CONTEXT under it, and each branch's
/// operations carry the branch as their parent; a Map the same with its iterations. Every
/// CONTEXT finishes with its output once, and a replay re-sends none of them.
#[test]
fn parallel_branches_and_map_iterations_are_context_operations() {
    let wf = load(
        r#"{"StartAt": "Both", "States": {
            "Both": {"Type": "Parallel", "Next": "Each", "Branches": [
                {"StartAt": "L", "States": {"L": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}},
                {"StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 5, "End": true}}}]},
            "Each": {"Type": "Map", "ItemsPath": "$[0].items", "End": true,
                "ItemProcessor": {"StartAt": "M", "States": {"M": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}}}}"#,
    );
    let (h, runs) = counting(&[("L", Ok(json!({ "items": [10, 20] }))), ("M", Ok(json!("m")))]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    let first: Vec<String> = fake.calls().iter().flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(
        first,
        [
            "START CONTEXT Both#1.0 < -",
            "START CONTEXT Both#1.0/0 < Both#1.0",
            "START STEP Both#1.0/0/L#1.0 < Both#1.0/0",
            "SUCCEED STEP Both#1.0/0/L#1.0 < Both#1.0/0",
            "SUCCEED CONTEXT Both#1.0/0 < Both#1.0",
            "START CONTEXT Both#1.0/1 < Both#1.0",
            "START WAIT Both#1.0/1/Nap#1 < Both#1.0/1",
        ]
    );
    let calls = fake.calls();
    assert_eq!(calls[0][0]["SubType"], "Parallel");
    assert_eq!(calls[0][0]["ContextOptions"], json!({ "ReplayChildren": true }));
    assert_eq!(calls[1][0]["SubType"], "ParallelBranch");
    assert_eq!(calls[4][0]["Payload"], "{\"items\":[10,20]}");
    fake.fire_timers();
    let out = invoke(&wf, &h, &fake, 2).unwrap();
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "[\"m\",\"m\"]" }));
    let second: Vec<String> = fake.calls()[calls.len()..].iter().flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(
        second,
        [
            "SUCCEED CONTEXT Both#1.0/1 < Both#1.0",
            "SUCCEED CONTEXT Both#1.0 < -",
            "START CONTEXT Each#1.0 < -",
            "START CONTEXT Each#1.0/0 < Each#1.0",
            "START STEP Each#1.0/0/M#1.0 < Each#1.0/0",
            "SUCCEED STEP Each#1.0/0/M#1.0 < Each#1.0/0",
            "SUCCEED CONTEXT Each#1.0/0 < Each#1.0",
            "START CONTEXT Each#1.0/1 < Each#1.0",
            "START STEP Each#1.0/1/M#1.0 < Each#1.0/1",
            "SUCCEED STEP Each#1.0/1/M#1.0 < Each#1.0/1",
            "SUCCEED CONTEXT Each#1.0/1 < Each#1.0",
            "SUCCEED CONTEXT Each#1.0 < -",
        ]
    );
    let s = fake.0.lock().unwrap();
    let sub = |name: &str| s.ops.iter().find(|op| op["Name"] == name).unwrap()["SubType"].clone();
    assert_eq!((sub("Each#1.0"), sub("Each#1.0/1")), (json!("Map"), json!("MapIteration")));
    assert_eq!(
        s.ops.iter().find(|op| op["Name"] == "Both#1.0").unwrap()["ContextDetails"]["Result"],
        "[{\"items\":[10,20]},{}]"
    );
    drop(s);
    // A full replay (the state one operation per page) writes nothing and runs nothing.
    let before = fake.calls().len();
    assert_eq!(invoke(&wf, &h, &fake, 1).unwrap(), out);
    assert_eq!(fake.calls().len(), before);
    assert_eq!(runs.lock().unwrap()["M"], [0, 0]);
}

/// A failing branch fails its CONTEXT and the Parallel's with its error.
#[test]
fn a_failed_branch_fails_its_contexts() {
    let wf = load(
        r#"{"StartAt": "Both", "States": {
            "Both": {"Type": "Parallel", "End": true, "Branches": [
                {"StartAt": "L", "States": {"L": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}]}}}"#,
    );
    let (h, _) = counting(&[("L", Err(("Boom", "it broke")))]);
    let fake = Fake::new(&json!({}));
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out["Status"], "FAILED", "{out}");
    assert_eq!(type_and_message(&out["Error"]), json!({ "ErrorType": "Boom", "ErrorMessage": "it broke" }));
    let calls = fake.calls();
    let all: Vec<String> = calls.iter().flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(
        &all[3..],
        ["FAIL STEP Both#1.0/0/L#1.0 < Both#1.0/0", "FAIL CONTEXT Both#1.0/0 < Both#1.0", "FAIL CONTEXT Both#1.0 < -"]
    );
    let step_error = &calls.iter().flatten().find(|u| u["Type"] == "STEP" && u["Action"] == "FAIL").unwrap()["Error"];
    assert_eq!(step_error["StackTrace"], json!(["Both#1.0/0/L#1.0", "Both#1.0/0", "Both#1.0"]));
    assert_eq!(
        type_and_message(&calls.last().unwrap()[0]["Error"]),
        json!({ "ErrorType": "Boom", "ErrorMessage": "it broke" })
    );
}

// ---------------------------------------------------------------------------------------------
// CHAINED_INVOKE: Serverless Workflow subflows mapped to functions
// ---------------------------------------------------------------------------------------------

const ORDER: &str = r#"{
  "id": "order", "version": "1.0", "name": "order",
  "functions": [{ "name": "charge", "resource": "res/charge" }, { "name": "refund", "resource": "res/refund" }],
  "states": [
    { "name": "Charge", "type": "operation", "start": { "kind": "default" },
      "actions": [{ "functionRef": { "refName": "charge" } }], "transition": { "nextState": "Ship" } },
    { "name": "Ship", "type": "subflow", "workflowId": "ship",
      "onError": [{ "expression": "{{ $.errors[?(@.name == 'Shipping.Lost')] }}",
                    "errorDataFilter": { "dataOutputPath": "{{ $.error }}" }, "transition": { "nextState": "Refund" } }],
      "end": { "kind": "default" } },
    { "name": "Refund", "type": "operation", "actions": [{ "functionRef": { "refName": "refund" } }], "end": { "kind": "default" } }
  ]
}"#;

const SHIP: &str = r#"{
  "id": "ship", "version": "2.0", "name": "ship",
  "functions": [{ "name": "pack", "resource": "res/pack" }],
  "states": [
    { "name": "Pack", "type": "operation", "start": { "kind": "default" },
      "actions": [{ "functionRef": { "refName": "pack" } }], "end": { "kind": "default" } }
  ]
}"#;

fn load_order() -> Workflow {
    let registry = [("ship.sw.json".to_owned(), SHIP.to_owned())];
    wfc_core::sw::load(wfc_core::Source { path: "order.sw.json", text: ORDER }, &registry)
        .expect("definition loads")
        .workflow
}

fn invoke_chained(wf: &Workflow, handlers: &Handlers, fake: &Fake, chained: &lambda_durable::ChainedInvokes) -> Value {
    lambda_durable::invoke_chained(wf, handlers, &fake.event(100), Arc::new(fake.clone()), chained).unwrap()
}

fn ship_mapping() -> lambda_durable::ChainedInvokes {
    lambda_durable::ChainedInvokes::parse(["ship=ship-fn:live"]).unwrap()
}

/// A mapped subflow is a CHAINED_INVOKE of its function: START with the FunctionName and the
/// child's input as payload, nothing of the child run here, PENDING while the service has it
/// STARTED (without a second START), and the target's result merged on replay.
#[test]
fn a_mapped_subflow_is_a_chained_invoke_of_its_function() {
    let wf = load_order();
    let chained = ship_mapping();
    chained.check([&wf]).unwrap();
    let (h, runs) = counting(&[("Charge", Ok(json!({ "charged": 10 }))), ("Pack", Ok(json!({ "packed": true })))]);
    let fake = Fake::new(&json!({ "order": 7 }));
    assert_eq!(invoke_chained(&wf, &h, &fake, &chained), json!({ "Status": "PENDING" }));
    let calls = fake.calls();
    let all: Vec<String> = calls.iter().flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(
        all,
        ["START STEP Charge#1.0.a0 < -", "SUCCEED STEP Charge#1.0.a0 < -", "START CHAINED_INVOKE Ship#1.0 < -"]
    );
    let start = &calls[2][0];
    assert_eq!(start["SubType"], "Subflow");
    assert_eq!(start["Id"], wire_id("Ship#1.0"));
    assert!(start.get("ParentId").is_none(), "{start}");
    assert_eq!(start["ChainedInvokeOptions"], json!({ "FunctionName": "ship-fn:live" }));
    let payload: Value = serde_json::from_str(start["Payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload, json!({ "order": 7, "charged": 10 }));
    assert!(!runs.lock().unwrap().contains_key("Pack"), "the child ran in the parent's invocation");

    // Invoked again while the target runs: still PENDING, nothing sent (no second START).
    assert_eq!(invoke_chained(&wf, &h, &fake, &chained), json!({ "Status": "PENDING" }));
    assert_eq!(fake.calls().len(), calls.len());

    // The target succeeded: its result is the subflow's output, merged into the state data.
    fake.complete_chained("Ship#1.0", "SUCCEEDED", json!({ "Result": "{\"packed\":true}" }));
    let out = invoke_chained(&wf, &h, &fake, &chained);
    assert_eq!(out["Status"], "SUCCEEDED", "{out}");
    let result: Value = serde_json::from_str(out["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!({ "order": 7, "charged": 10, "packed": true }));
    assert_eq!(fake.calls().len(), calls.len(), "the replay sent nothing");
    assert_eq!(runs.lock().unwrap().get("Charge").map(Vec::len), Some(1));
    assert!(!runs.lock().unwrap().contains_key("Pack"));
}

/// The target's failure is the subflow's error: it reaches the state's onError (here to a
/// refund); a timeout and a stop map to States Language errors the execution fails with.
#[test]
fn a_chained_invoke_failure_reaches_the_subflow_error_handling() {
    let wf = load_order();
    let chained = ship_mapping();
    let answers = [("Charge", Ok(json!({ "charged": 10 }))), ("Refund", Ok(json!({ "refunded": true })))];
    let (h, runs) = counting(&answers);
    let fake = Fake::new(&json!({ "order": 8 }));
    assert_eq!(invoke_chained(&wf, &h, &fake, &chained), json!({ "Status": "PENDING" }));
    let sent = fake.calls().len();
    fake.complete_chained(
        "Ship#1.0",
        "FAILED",
        json!({ "Error": { "ErrorType": "Shipping.Lost", "ErrorMessage": "the parcel is gone" } }),
    );
    let out = invoke_chained(&wf, &h, &fake, &chained);
    assert_eq!(out["Status"], "SUCCEEDED", "{out}");
    let result: Value = serde_json::from_str(out["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"], json!({ "name": "Shipping.Lost", "message": "the parcel is gone" }), "{result}");
    assert_eq!(result["refunded"], true, "{result}");
    let after: Vec<String> = fake.calls()[sent..].iter().flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(after, ["START STEP Refund#1.0.a0 < -", "SUCCEED STEP Refund#1.0.a0 < -"]);
    assert_eq!(runs.lock().unwrap().get("Charge").map(Vec::len), Some(1));

    for (status, details, error, cause) in [
        (
            "TIMED_OUT",
            json!({ "Error": { "ErrorType": "ChainedInvoke.Timeout", "ErrorMessage": "after 120 seconds" } }),
            "States.Timeout",
            "the chained invoke timed out: after 120 seconds",
        ),
        ("STOPPED", json!({}), "States.TaskFailed", "the chained invoke's target execution was stopped"),
        (
            "FAILED",
            json!({ "Error": { "ErrorMessage": "Function not found: ship-fn" } }),
            "States.TaskFailed",
            "Function not found: ship-fn",
        ),
    ] {
        let fake = Fake::new(&json!({ "order": 9 }));
        assert_eq!(invoke_chained(&wf, &h, &fake, &chained), json!({ "Status": "PENDING" }));
        fake.complete_chained("Ship#1.0", status, details);
        let out = invoke_chained(&wf, &h, &fake, &chained);
        assert_eq!(out["Status"], "FAILED", "{status}");
        assert_eq!(type_and_message(&out["Error"]), json!({ "ErrorType": error, "ErrorMessage": cause }), "{status}");
    }
}

/// Without a mapping the subflow stays a CONTEXT whose child runs in the parent's invocation;
/// a mapping the definition does not use, or a malformed one, is an error.
#[test]
fn an_unmapped_subflow_stays_a_context_and_bad_mappings_are_errors() {
    let wf = load_order();
    let (h, runs) = counting(&[("Charge", Ok(json!({ "charged": 1 }))), ("Pack", Ok(json!({ "packed": true })))]);
    let fake = Fake::new(&json!({}));
    let out = invoke_chained(&wf, &h, &fake, &lambda_durable::ChainedInvokes::none());
    assert_eq!(out["Status"], "SUCCEEDED", "{out}");
    let all: Vec<String> = fake.calls().iter().flat_map(|c| shape(&fake, c)).collect();
    assert!(all.contains(&"START CONTEXT Ship#1.0 < -".to_owned()), "{all:?}");
    assert!(all.contains(&"START STEP Ship#1.0/Pack#1.0.a0 < Ship#1.0".to_owned()), "{all:?}");
    assert_eq!(runs.lock().unwrap().get("Pack").map(Vec::len), Some(1));

    use lambda_durable::{ChainedConfigError, ChainedInvokes};
    // The child's version is 2.0: a mapping of version 2.0 applies, one of 1.0 does not.
    assert!(ChainedInvokes::parse(["ship@2.0=f"]).unwrap().check([&wf]).is_ok());
    let e = ChainedInvokes::parse(["ship@1.0=f"]).unwrap().check([&wf]).unwrap_err();
    assert!(e.to_string().contains("has version 2.0"), "{e}");
    let e = ChainedInvokes::parse(["nope=f"]).unwrap().check([&wf]).unwrap_err();
    assert!(matches!(e, ChainedConfigError::Unused { .. }), "{e}");
    assert!(e.to_string().contains("its subflows are: ship"), "{e}");
    assert!(matches!(ChainedInvokes::parse(["ship"]), Err(ChainedConfigError::Malformed { .. })));
}

/// A mapped subflow inside an unmapped one: the outer child runs here as a CONTEXT, and the
/// inner CHAINED_INVOKE has it as its parent.
#[test]
fn a_chained_invoke_inside_a_context_subflow_names_it_as_parent() {
    const BATCH: &str = r#"{
      "id": "batch", "version": "1.0", "name": "batch",
      "states": [{ "name": "Outer", "type": "subflow", "workflowId": "outer", "start": { "kind": "default" }, "end": { "kind": "default" } }]
    }"#;
    const OUTER: &str = r#"{
      "id": "outer", "version": "1.0", "name": "outer",
      "states": [{ "name": "Inner", "type": "subflow", "workflowId": "ship", "start": { "kind": "default" }, "end": { "kind": "default" } }]
    }"#;
    let registry = [("outer.sw.json".to_owned(), OUTER.to_owned()), ("ship.sw.json".to_owned(), SHIP.to_owned())];
    let wf = wfc_core::sw::load(wfc_core::Source { path: "batch.sw.json", text: BATCH }, &registry).unwrap().workflow;
    let chained = ship_mapping();
    chained.check([&wf]).unwrap();
    let (h, _) = counting(&[]);
    let fake = Fake::new(&json!({ "n": 1 }));
    assert_eq!(invoke_chained(&wf, &h, &fake, &chained), json!({ "Status": "PENDING" }));
    let all: Vec<String> = fake.calls().iter().flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(all, ["START CONTEXT Outer#1.0 < -", "START CHAINED_INVOKE Outer#1.0/Inner#1.0 < Outer#1.0"]);
    fake.complete_chained("Outer#1.0/Inner#1.0", "SUCCEEDED", json!({ "Result": "{\"packed\":1}" }));
    let out = invoke_chained(&wf, &h, &fake, &chained);
    assert_eq!(out, json!({ "Status": "SUCCEEDED", "Result": "{\"n\":1,\"packed\":1}" }));
    let last: Vec<String> = fake.calls().iter().skip(2).flat_map(|c| shape(&fake, c)).collect();
    assert_eq!(last, ["SUCCEED CONTEXT Outer#1.0 < -"]);
}

wfc_runtime::include_workflow!("../wfc-cli/tests/lambda/order.sw.json");

/// order.sw.json's task handlers, for generated code.
#[derive(Default)]
struct Orders;

impl order::Handler for Orders {
    async fn charge(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        Ok(json!({ "charged": 10 }))
    }

    async fn refund(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        Ok(json!({ "refunded": true }))
    }

    async fn pack(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("the child runs in its own function")
    }

    async fn lose(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("the child runs in its own function")
    }
}

/// Generated code invokes a mapped subflow exactly as the interpreter does.
#[test]
fn generated_code_chains_a_mapped_subflow_as_the_interpreter_does() {
    let chained = lambda_durable::ChainedInvokes::parse(["ship=ship"]).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let input = json!({ "order": 3, "options": { "lose": true } });
    let generated = Fake::new(&input);
    let mut outputs = Vec::new();
    for round in 0..2 {
        if round == 1 {
            let error = json!({ "Error": { "ErrorType": "Shipping.Lost", "ErrorMessage": "gone" } });
            generated.complete_chained("Ship#1.0", "FAILED", error);
        }
        let event = generated.event(100);
        outputs.push(
            runtime
                .block_on(lambda_durable::invoke_with_chained(
                    &event,
                    Arc::new(generated.clone()),
                    "order",
                    &chained,
                    |input, options| order::run_with(&Orders, input, options),
                ))
                .unwrap(),
        );
    }
    assert_eq!(outputs[0], json!({ "Status": "PENDING" }));
    assert_eq!(outputs[1]["Status"], "SUCCEEDED", "{}", outputs[1]);

    let wf = lowered("../wfc-cli/tests/lambda/order.sw.json");
    let (h, _) = counting(&[("Charge", Ok(json!({ "charged": 10 }))), ("Refund", Ok(json!({ "refunded": true })))]);
    let interpreted = Fake::new(&input);
    assert_eq!(invoke_chained(&wf, &h, &interpreted, &chained), outputs[0]);
    let error = json!({ "Error": { "ErrorType": "Shipping.Lost", "ErrorMessage": "gone" } });
    interpreted.complete_chained("Ship#1.0", "FAILED", error);
    assert_eq!(invoke_chained(&wf, &h, &interpreted, &chained), outputs[1]);
    assert_eq!(interpreted.calls(), generated.calls());
}

const FAN: &str = r#"{"StartAt": "Fan", "States": {
    "Fan": {"Type": "Map", "ItemsPath": "$.items", "ToleratedFailureCount": 1, "End": true,
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}}}}"#;

/// DISTRIBUTED Map Run children chained to the function itself: each child is a CHAINED_INVOKE
/// (subtype MapRunChild) whose payload names the child; the function invoked with it runs the
/// ItemProcessor as its own durable execution and answers what the Map Run keeps of the child
/// (a failed child too, counted against the tolerance); the parent's replay takes the results.
#[test]
fn map_run_children_chain_to_the_function_itself() {
    use lambda_durable::{ChainedInvokes, MapRunChildren};
    let wf = load(FAN);
    let chained = ChainedInvokes::none().with_map_runs(MapRunChildren::chained("").unwrap());
    chained.check([&wf]).unwrap();
    let (h, runs) = counting(&[("Work", Ok(json!("worked"))), ("Work", Err(("Boom", "item 2 broke")))]);
    let parent = Fake::new(&json!({ "items": [1, 2] }));
    assert_eq!(invoke_chained(&wf, &h, &parent, &chained), json!({ "Status": "PENDING" }));
    assert!(!runs.lock().unwrap().contains_key("Work"), "a child ran in the parent's invocation");
    let first: Vec<String> = parent.calls().iter().flat_map(|c| shape(&parent, c)).collect();
    assert_eq!(first, ["START CHAINED_INVOKE Fan#1.0/0 < -", "START CHAINED_INVOKE Fan#1.0/1 < -"]);
    let starts: Vec<Value> = parent.calls().concat().into_iter().filter(|u| u["Type"] == "CHAINED_INVOKE").collect();
    let names: Vec<&str> = starts.iter().map(|u| u["Name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Fan#1.0/0", "Fan#1.0/1"]);
    for start in &starts {
        assert_eq!(start["SubType"], "MapRunChild");
        // The function itself, by the name in the durable execution ARN.
        assert_eq!(start["ChainedInvokeOptions"], json!({ "FunctionName": "wf" }));
    }
    // The service runs each child: the function invoked with the envelope as its input.
    for (i, start) in starts.iter().enumerate() {
        let envelope: Value = serde_json::from_str(start["Payload"].as_str().unwrap()).unwrap();
        assert_eq!(envelope["wfc:mapRunChild"]["input"], json!(i + 1), "{envelope}");
        let child = Fake::new(&envelope);
        let out = invoke_chained(&wf, &h, &child, &chained);
        assert_eq!(out["Status"], "SUCCEEDED", "{out}");
        let steps: Vec<String> = child.calls().iter().flat_map(|c| shape(&child, c)).collect();
        assert_eq!(steps[0], "START STEP Work#1.0 < -", "the child's own operations: {steps:?}");
        parent.complete_chained(start["Name"].as_str().unwrap(), "SUCCEEDED", json!({ "Result": out["Result"] }));
    }
    let out = invoke_chained(&wf, &h, &parent, &chained);
    assert_eq!(out["Status"], "SUCCEEDED", "{out}");
    let result: Value = serde_json::from_str(out["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result[0], "worked", "{result}");
    assert_eq!((&result[1]["Status"], &result[1]["Error"]), (&json!("FAILED"), &json!("Boom")), "{result}");
    assert_eq!(runs.lock().unwrap()["Work"], [0, 0], "each child's task ran once");

    // Generated code (or any `invoke_with_chained` closure) refuses a child's envelope.
    let envelope: Value = serde_json::from_str(starts[0]["Payload"].as_str().unwrap()).unwrap();
    let child = Fake::new(&envelope);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let out = runtime
        .block_on(lambda_durable::invoke_with_chained(
            &child.event(100),
            Arc::new(child.clone()),
            "wf",
            &chained,
            |i, o| wfc_interp::run(&wf, &h, i, o),
        ))
        .unwrap();
    assert_eq!(out["Error"]["ErrorType"], "Wfc.MapRunChildUnsupported", "{out}");
    // So generated code refuses chained Map Run children up front, before starting any child.
    let fresh = Fake::new(&json!({ "items": [1, 2] }));
    let out = runtime
        .block_on(lambda_durable::invoke_with_chained(
            &fresh.event(100),
            Arc::new(fresh.clone()),
            "wf",
            &chained,
            |i, o| wfc_interp::run(&wf, &h, i, o),
        ))
        .unwrap();
    assert_eq!(out["Error"]["ErrorType"], "Wfc.MapRunChildUnsupported", "{out}");
    assert!(fresh.calls().concat().iter().all(|u| u["Type"] != "CHAINED_INVOKE"), "{:?}", fresh.calls());
    // And a definition without a DISTRIBUTED Map refuses the setting.
    let e = chained.check([&load_order()]).unwrap_err();
    assert_eq!(e, lambda_durable::ChainedConfigError::NoDistributedMap);
}

/// A mapping added while an execution runs: the journal has the subflow as a CONTEXT where the
/// definition now wants a CHAINED_INVOKE, which is a determinism violation, not a silent mix.
#[test]
fn a_mapping_changed_mid_execution_is_a_determinism_violation() {
    const PARENT: &str = r#"{
      "id": "p", "version": "1.0", "name": "p",
      "states": [{ "name": "Slow", "type": "subflow", "workflowId": "slow", "start": { "kind": "default" }, "end": { "kind": "default" } }]
    }"#;
    const SLOW: &str = r#"{
      "id": "slow", "version": "1.0", "name": "slow",
      "states": [{ "name": "Nap", "type": "delay", "timeDelay": "PT5S", "start": { "kind": "default" }, "end": { "kind": "default" } }]
    }"#;
    let registry = [("slow.sw.json".to_owned(), SLOW.to_owned())];
    let wf = wfc_core::sw::load(wfc_core::Source { path: "p.sw.json", text: PARENT }, &registry).unwrap().workflow;
    let (h, _) = counting(&[]);
    let fake = Fake::new(&json!({}));
    let unmapped = lambda_durable::ChainedInvokes::none();
    assert_eq!(invoke_chained(&wf, &h, &fake, &unmapped), json!({ "Status": "PENDING" }));
    fake.fire_timers();
    let mapped = lambda_durable::ChainedInvokes::parse(["slow=slow-fn"]).unwrap();
    let out = invoke_chained(&wf, &h, &fake, &mapped);
    assert_eq!(out["Status"], "FAILED", "{out}");
    assert_eq!(out["Error"]["ErrorType"], "States.Runtime", "{out}");
    assert!(out["Error"]["ErrorMessage"].as_str().unwrap().contains("determinism violation"), "{out}");
}

/// A target the service cannot resolve fails the START at once (as dex-local-runner's
/// preflight does): the subflow fails in the same invocation, with the service's error.
#[test]
fn a_target_the_service_cannot_resolve_fails_the_subflow_at_once() {
    let wf = load_order();
    let chained = ship_mapping();
    let (h, _) = counting(&[("Charge", Ok(json!({ "charged": 10 })))]);
    let fake = Fake::new(&json!({ "order": 1 }));
    fake.0.lock().unwrap().missing_function = Some("ship-fn:live".into());
    let out = invoke_chained(&wf, &h, &fake, &chained);
    let error =
        json!({ "ErrorType": "ResourceNotFoundException", "ErrorMessage": "Function not found: ship-fn:live." });
    assert_eq!(out["Status"], "FAILED", "{out}");
    assert_eq!(type_and_message(&out["Error"]), error);
}

/// §4.5.2(6): a Parallel whose second branch fails while the first waits, caught: the first
/// branch's WAIT is cancelled and its CONTEXT failed before the PENDING answer (the caught
/// workflow waits on); the next invocation replays the abandoned branch up to the cancelled
/// wait, never past it, starts nothing again and cancels nothing twice.
#[test]
fn an_abandoned_branch_is_closed_once_and_replayed_up_to_its_cancelled_wait() {
    let wf = load(
        r#"{"StartAt": "P", "States": {
            "P": {"Type": "Parallel", "Next": "Done", "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Later"}],
                  "Branches": [
                {"StartAt": "Slow", "States": {"Slow": {"Type": "Wait", "Seconds": 3600, "Next": "After"},
                                               "After": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}},
                {"StartAt": "Boom", "States": {"Boom": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}}]},
            "Later": {"Type": "Wait", "Seconds": 5, "Next": "Done"},
            "Done": {"Type": "Pass", "End": true}}}"#,
    );
    let (h, runs) = counting(&[("Boom", Err(("Boom.Failed", "no luck")))]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    let all: Vec<String> = fake.calls().iter().flat_map(|c| shape(&fake, c)).collect();
    assert!(all.contains(&"START WAIT P#1.0/0/Slow#1 < P#1.0/0".to_owned()), "{all:?}");
    let closing: Vec<&String> =
        all.iter().filter(|a| a.starts_with("CANCEL") || a.contains("CONTEXT P#1.0/0 ")).collect();
    assert_eq!(
        closing,
        ["START CONTEXT P#1.0/0 < P#1.0", "CANCEL WAIT P#1.0/0/Slow#1 < P#1.0/0", "FAIL CONTEXT P#1.0/0 < P#1.0"]
    );
    let failed_branch =
        fake.calls().concat().into_iter().find(|u| u["Action"] == "FAIL" && u["Name"] == "P#1.0/0").unwrap();
    assert_eq!(failed_branch["Error"]["ErrorType"], "Wfc.BranchAbandoned");
    // The service fires the caught path's timer (the cancelled one stays cancelled).
    fake.fire_timers();
    let before = fake.calls().len();
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out["Status"], "SUCCEEDED", "{out}");
    let again: Vec<String> = fake.calls()[before..].iter().flat_map(|c| actions(c)).collect();
    assert!(
        again.iter().all(|a| !a.contains("Slow") && !a.contains("P#1.0/0 ") && !a.ends_with("P#1.0/0")),
        "{again:?}"
    );
    // The branch never went past its wait: After never ran.
    assert!(runs.lock().unwrap().get("After").is_none());
}

/// §9.3: a checkpointed result that is not JSON (here a step's, as another writer could leave
/// it) fails the execution at once instead of being read as a string.
#[test]
fn a_result_that_does_not_deserialize_is_a_terminal_failure() {
    let wf = load(
        r#"{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "Next": "W"},
            "W": {"Type": "Wait", "Seconds": 5, "End": true}}}"#,
    );
    let (h, _) = counting(&[("A", Ok(json!({ "ok": true })))]);
    let fake = Fake::new(&json!({}));
    assert_eq!(invoke(&wf, &h, &fake, 100).unwrap(), json!({ "Status": "PENDING" }));
    for op in &mut fake.0.lock().unwrap().ops {
        if op["Type"] == "STEP" {
            op["StepDetails"]["Result"] = json!("{not json");
        }
    }
    fake.fire_timers();
    let out = invoke(&wf, &h, &fake, 100).unwrap();
    assert_eq!(out["Status"], "FAILED", "{out}");
    assert_eq!(out["Error"]["ErrorType"], "Wfc.ResultNotDeserializable", "{out}");
    assert!(out["Error"]["ErrorMessage"].as_str().unwrap().contains("A#1.0"), "{out}");
}
