//! The SWF decider's Serverless Workflow subflows as child workflow executions
//! (`wfc_aws::swf`, `SwfConfig::subflows`): golden histories in which a subflow the
//! parent waits for is a `StartChildWorkflowExecution` whose completion, failure, time-out or
//! refused start is the subflow's outcome (onErrors included), a subflow started without waiting
//! is an `ABANDON`ed child nobody waits for, and a parent's cancel request cancels a running
//! child. Each decision of tests/adapters/stay_children.sw.json is also made by its generated
//! code, identically.
#![allow(missing_docs)]

use serde_json::{Value, json};
use wfc_aws::swf::{self, SwfConfig};
use wfc_runtime::ir::Workflow;

mod swf_support;
use swf_support::{History, decision, types};

wfc_runtime::include_workflow!("tests/adapters/stay_children.sw.json");

/// The IR `include_workflow!` lowered the definition at `path` to (generated code carries none),
/// for what reads the IR.
fn lowered(path: &str) -> wfc_ir::Workflow {
    wfc_build::load_file(path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

/// The decider never calls a function: every call is an activity, or runs in a child.
struct NoCalls;

impl stay_children::Handler for NoCalls {
    async fn book_room(&self, _: Value, _: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider called a function")
    }
    async fn refund(&self, _: Value, _: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider called a function")
    }
    async fn write_audit(&self, _: Value, _: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider called a function")
    }
    async fn pack(&self, _: Value, _: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider called a function")
    }
}

fn stay() -> Workflow {
    lowered("tests/adapters/stay_children.sw.json")
}

/// `swf::decide` on the interpreter, checked against the generated code.
fn decide(h: &History, config: &SwfConfig) -> Value {
    let wf = stay();
    let interpreted = swf::decide(&wf, &h.task(), config).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let generated = runtime
        .block_on(swf::decide_with(&h.task(), config, &wf.name, |input, o| stay_children::run_with(&NoCalls, input, o)))
        .unwrap();
    assert_eq!(generated, interpreted, "generated code decided differently on {:#}", h.task());
    interpreted
}

fn every_subflow() -> SwfConfig {
    serde_json::from_value(json!({ "subflows": { "*": {} } })).unwrap()
}

fn child_started(h: &mut History, t: f64, op: &str) -> Value {
    let i = h.initiated(op);
    let child = json!({ "workflowId": format!("stay-1--{op}"), "runId": format!("run-{op}") });
    h.add(t, "ChildWorkflowExecutionStarted", json!({ "initiatedEventId": i, "workflowExecution": child }));
    child
}

/// Up to the Ship child's start: the audit child started unwaited with Book in the first
/// decision, Book completed, then Ship's child initiated and started.
fn to_ship_started(config: &SwfConfig) -> History {
    let mut h = History::start("stay-1", &json!({ "guest": "ada" }));
    let r = decide(&h, config);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
    let audit = decision(&r, "StartChildWorkflowExecution")[0];
    assert_eq!(audit["workflowType"], json!({ "name": "stay-audit", "version": "1.0" }));
    assert_eq!(audit["workflowId"], "stay-1--StartAudit#1.0");
    assert_eq!(audit["control"], "StartAudit#1.0");
    assert_eq!(audit["childPolicy"], "ABANDON");
    assert_eq!(audit["tagList"], json!([swf::DETACHED_TAG]));
    assert_eq!(audit["input"], r#"{"guest":"ada"}"#);
    h.accept(1000.0, &r);
    child_started(&mut h, 1001.0, "StartAudit#1.0");
    h.decision_task(1001.0);
    // The audit child's start changes nothing: nothing to decide (and it is never started again).
    let r = decide(&h, config);
    assert_eq!(types(&r), Vec::<String>::new(), "{r:#}");
    h.accept(1001.0, &r);

    let book = h.scheduled("Book#1.0.a0");
    h.add(1002.0, "ActivityTaskStarted", json!({ "scheduledEventId": book }));
    h.add(1003.0, "ActivityTaskCompleted", json!({ "scheduledEventId": book, "result": r#"{"room":12}"# }));
    h.decision_task(1003.0);
    let r = decide(&h, config);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    let ship = decision(&r, "StartChildWorkflowExecution")[0];
    assert_eq!(ship["workflowId"], "stay-1--Ship#1.0");
    assert_eq!(ship["control"], "Ship#1.0");
    assert_eq!(ship["tagList"], json!([swf::SUBFLOW_TAG]));
    assert_eq!(ship["input"], r#"{"guest":"ada","room":12}"#);
    h.accept(1003.0, &r);
    child_started(&mut h, 1004.0, "Ship#1.0");
    h.decision_task(1004.0);
    let r = decide(&h, config);
    assert_eq!(types(&r), Vec::<String>::new(), "a started child is not started again: {r:#}");
    h.accept(1004.0, &r);
    h
}

#[test]
fn a_waited_subflow_is_a_child_whose_result_the_parent_merges() {
    let config = every_subflow();
    let mut h = to_ship_started(&config);
    // The detached audit child ending (or failing) changes nothing for the parent.
    let audit = h.initiated("StartAudit#1.0");
    h.add(1005.0, "ChildWorkflowExecutionFailed", json!({ "initiatedEventId": audit, "reason": "AuditDown" }));
    let ship = h.initiated("Ship#1.0");
    h.add(
        1006.0,
        "ChildWorkflowExecutionCompleted",
        json!({ "initiatedEventId": ship, "result": r#"{"guest":"ada","room":12,"parcel":"P-1"}"# }),
    );
    h.decision_task(1006.0);
    let r = decide(&h, &config);
    // No cancel for the abandoned audit child, no second start: just the completion.
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    let out: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(out, json!({ "guest": "ada", "room": 12, "parcel": "P-1" }));
}

#[test]
fn a_failed_child_is_the_subflows_error_and_reaches_on_errors() {
    let config = every_subflow();
    let mut h = to_ship_started(&config);
    let ship = h.initiated("Ship#1.0");
    h.add(
        1006.0,
        "ChildWorkflowExecutionFailed",
        json!({ "initiatedEventId": ship, "reason": "Shipping.Lost", "details": "the van broke down" }),
    );
    h.decision_task(1006.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["ScheduleActivityTask", "RecordMarker"], "{r:#}");
    let refund = decision(&r, "ScheduleActivityTask")[0];
    assert_eq!(refund["control"], "Refund#1.0.a0");
    let input: Value = serde_json::from_str(refund["input"].as_str().unwrap()).unwrap();
    assert_eq!(input["error"]["name"], "Shipping.Lost", "{input:#}");

    // A child that times out is States.Timeout, which this onErrors does not take.
    let mut timed_out = to_ship_started(&config);
    let ship = timed_out.initiated("Ship#1.0");
    timed_out.add(
        1006.0,
        "ChildWorkflowExecutionTimedOut",
        json!({ "initiatedEventId": ship, "timeoutType": "START_TO_CLOSE" }),
    );
    timed_out.decision_task(1006.0);
    let r = decide(&timed_out, &config);
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    assert_eq!(decision(&r, "FailWorkflowExecution")[0]["reason"], "States.Timeout");
}

#[test]
fn a_refused_child_start_is_the_subflows_error() {
    let config = every_subflow();
    let mut h = History::start("stay-1", &json!({ "guest": "ada" }));
    let r = decide(&h, &config);
    h.accept(1000.0, &r);
    // SWF refuses the detached audit child: the parent did not wait for it and goes on.
    let audit = h.initiated("StartAudit#1.0");
    h.add(
        1001.0,
        "StartChildWorkflowExecutionFailed",
        json!({ "initiatedEventId": audit, "workflowId": "stay-1--StartAudit#1.0", "cause": "WORKFLOW_TYPE_DOES_NOT_EXIST",
                "control": "StartAudit#1.0", "workflowType": { "name": "stay-audit", "version": "1.0" } }),
    );
    let book = h.scheduled("Book#1.0.a0");
    h.add(1002.0, "ActivityTaskCompleted", json!({ "scheduledEventId": book, "result": r#"{"room":12}"# }));
    h.decision_task(1002.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    assert_eq!(decision(&r, "StartChildWorkflowExecution")[0]["control"], "Ship#1.0");
    h.accept(1002.0, &r);
    // SWF refuses the Ship child: States.TaskFailed with SWF's cause fails the workflow (its
    // onErrors takes only Shipping.Lost).
    let ship = h.initiated("Ship#1.0");
    h.add(
        1003.0,
        "StartChildWorkflowExecutionFailed",
        json!({ "initiatedEventId": ship, "workflowId": "stay-1--Ship#1.0", "cause": "WORKFLOW_TYPE_DOES_NOT_EXIST",
                "control": "Ship#1.0", "workflowType": { "name": "stay-ship", "version": "2.0" } }),
    );
    h.decision_task(1003.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    let fail = decision(&r, "FailWorkflowExecution")[0];
    assert_eq!(fail["reason"], "States.TaskFailed");
    assert!(fail["details"].as_str().unwrap().contains("WORKFLOW_TYPE_DOES_NOT_EXIST"), "{fail:#}");
}

#[test]
fn a_cancel_request_cancels_the_waited_child_but_not_the_detached_one() {
    let config = every_subflow();
    let mut h = to_ship_started(&config);
    h.add(1005.0, "WorkflowExecutionCancelRequested", json!({ "cause": "guest left" }));
    h.decision_task(1005.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["RequestCancelExternalWorkflowExecution", "CancelWorkflowExecution"], "{r:#}");
    assert_eq!(
        *decision(&r, "RequestCancelExternalWorkflowExecution")[0],
        json!({ "workflowId": "stay-1--Ship#1.0", "runId": "run-Ship#1.0" })
    );
}

#[test]
fn configured_subflows_set_type_list_timeouts_and_policy_and_the_rest_run_inline() {
    // Only stay-ship is a child (its type, list, timeouts and policy configured); the audit
    // subflow runs inline in the parent's replay, its activity scheduled under its own id.
    let config: SwfConfig = serde_json::from_value(json!({ "subflows": { "stay-ship@2.0": {
        "workflowType": { "name": "Ship", "version": "7" }, "taskList": "ships",
        "executionStartToCloseTimeout": "600", "taskStartToCloseTimeout": "30", "childPolicy": "REQUEST_CANCEL" } } }))
    .unwrap();
    config.check_subflows(&stay()).unwrap();
    let mut h = History::start("stay-1", &json!({ "guest": "ada" }));
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["ScheduleActivityTask", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
    let controls: Vec<&Value> = decision(&r, "ScheduleActivityTask").iter().map(|a| &a["control"]).collect();
    assert!(controls.contains(&&json!("Book#1.0.a0")), "{r:#}");
    h.accept(1000.0, &r);
    let book = h.scheduled("Book#1.0.a0");
    h.add(1001.0, "ActivityTaskCompleted", json!({ "scheduledEventId": book, "result": r#"{"room":12}"# }));
    h.decision_task(1001.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    let start = decision(&r, "StartChildWorkflowExecution")[0];
    assert_eq!(start["workflowType"], json!({ "name": "Ship", "version": "7" }));
    assert_eq!(start["taskList"], json!({ "name": "ships" }));
    assert_eq!(start["executionStartToCloseTimeout"], "600");
    assert_eq!(start["taskStartToCloseTimeout"], "30");
    assert_eq!(start["childPolicy"], "REQUEST_CANCEL");

    // Without `subflows`, every subflow runs inline: no child workflow at all.
    let h = History::start("stay-1", &json!({ "guest": "ada" }));
    let r = decide(&h, &SwfConfig::default());
    assert_eq!(types(&r), ["ScheduleActivityTask", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
}

#[test]
fn subflow_keys_are_checked_against_the_definition() {
    let check = |subflows: Value| {
        let config: SwfConfig = serde_json::from_value(json!({ "subflows": subflows })).unwrap();
        config.check_subflows(&stay()).map_err(|e| e.to_string())
    };
    check(json!({ "*": {} })).unwrap();
    check(json!({ "stay-audit": {}, "stay-ship@2.0": {} })).unwrap();
    let e = check(json!({ "stay-shipping": {} })).unwrap_err();
    assert!(
        e.contains("\"stay-shipping\" names no subflow of the workflow") && e.contains("stay-audit, stay-ship"),
        "{e}"
    );
    let e = check(json!({ "stay-ship@3": {} })).unwrap_err();
    assert!(e.contains("has version 2.0"), "{e}");
    let e = check(json!({ "*@1": {} })).unwrap_err();
    assert!(e.contains("'*' takes no version"), "{e}");
    let e = check(json!({ "ship@": {} })).unwrap_err();
    assert!(e.contains("the version after '@' is empty"), "{e}");
    // What SWF would refuse with the whole answer (not as a `*Failed` event) is refused here.
    let e = check(json!({ "*": { "childPolicy": "KEEP" } })).unwrap_err();
    assert!(e.contains("childPolicy \"KEEP\""), "{e}");
    let e = check(json!({ "*": { "executionStartToCloseTimeout": "1h" } })).unwrap_err();
    assert!(e.contains("executionStartToCloseTimeout \"1h\" is not a number of seconds"), "{e}");
    let e = check(json!({ "*": { "workflowType": { "name": "a:b" } } })).unwrap_err();
    assert!(e.contains("workflowType.name \"a:b\" is not a name SWF accepts"), "{e}");
    let e = serde_json::from_value::<SwfConfig>(json!({ "subflows": { "*": { "workflowTyp": {} } } }))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `workflowTyp`"), "{e}");
    // A child type that defaults to a subflow id SWF refuses as a name is refused here too,
    // not when the subflow is reached; naming the type mends it.
    const ODD: &str = r#"{ "id": "odd", "version": "1.0", "name": "odd",
      "states": [ { "name": "Call", "type": "subflow", "start": { "kind": "default" }, "workflowId": "billing:v2",
        "end": { "kind": "default" } } ] }"#;
    const BILLING: &str = r#"{ "id": "billing:v2", "version": "1.0", "name": "billing",
      "states": [ { "name": "B", "type": "inject", "start": { "kind": "default" }, "data": {}, "end": { "kind": "default" } } ] }"#;
    let mut settings = wfc_core::Settings::default();
    settings.sw_workflow("billing.sw.json", BILLING);
    let odd = match wfc_core::load_with(wfc_core::Source { path: "odd.sw.json", text: ODD }, &settings) {
        Ok(l) => l.workflow,
        Err(d) => panic!("definition does not load: {d:?}"),
    };
    let check_odd = |subflows: Value| {
        let config: SwfConfig = serde_json::from_value(json!({ "subflows": subflows })).unwrap();
        config.check_subflows(&odd).map_err(|e| e.to_string())
    };
    let e = check_odd(json!({ "*": {} })).unwrap_err();
    assert!(e.contains("subflow 'billing:v2' (name 'billing:v2', version '1.0') is not one SWF accepts"), "{e}");
    check_odd(json!({ "*": { "workflowType": { "name": "billing-v2" } } })).unwrap();
    // A child input SWF would refuse fails the workflow with the reason, not the decision call.
    let big = "x".repeat(40_000);
    let h = History::start("stay-1", &json!({ "guest": big }));
    let r = decide(&h, &every_subflow());
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    assert_eq!(decision(&r, "FailWorkflowExecution")[0]["reason"], "wfc.DecisionFailed");
}

/// A parallel whose first finished branch ends it (`n_of_m`, n = 1): the other branch's subflow
/// child, no longer waited for, is cancelled once, before the completion.
#[test]
fn a_child_in_an_abandoned_branch_is_cancelled_once() {
    const RACE: &str = r#"{ "id": "race", "version": "1.0", "name": "race",
      "states": [ { "name": "Race", "type": "parallel", "start": { "kind": "default" }, "completionType": "n_of_m", "n": 1,
        "branches": [ { "name": "Quick", "workflowId": "quick" }, { "name": "Slow", "workflowId": "slow" } ],
        "end": { "kind": "default" } } ] }"#;
    const QUICK: &str = r#"{ "id": "quick", "version": "1.0", "name": "quick",
      "functions": [ { "name": "quickFn", "resource": "q/quick" } ],
      "states": [ { "name": "Q", "type": "operation", "start": { "kind": "default" },
        "actions": [ { "functionRef": { "refName": "quickFn" } } ], "end": { "kind": "default" } } ] }"#;
    const SLOW: &str = r#"{ "id": "slow", "version": "1.0", "name": "slow",
      "states": [ { "name": "ShipIt", "type": "subflow", "start": { "kind": "default" }, "workflowId": "stay-ship",
        "end": { "kind": "default" } } ] }"#;
    let mut settings = wfc_core::Settings::default();
    settings.sw_workflow("quick.sw.json", QUICK);
    settings.sw_workflow("slow.sw.json", SLOW);
    settings.sw_workflow("stay_ship.sw.json", include_str!("adapters/stay_ship.sw.json"));
    let wf = match wfc_core::load_with(wfc_core::Source { path: "race.sw.json", text: RACE }, &settings) {
        Ok(l) => l.workflow,
        Err(d) => panic!("definition does not load: {d:?}"),
    };
    let config = every_subflow();
    config.check_subflows(&wf).unwrap();
    let mut h = History::start("race-1", &json!({}));
    let r = swf::decide(&wf, &h.task(), &config).unwrap();
    assert_eq!(types(&r), ["ScheduleActivityTask", "StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    let child = decision(&r, "StartChildWorkflowExecution")[0].clone();
    assert_eq!(child["tagList"], json!([swf::SUBFLOW_TAG]));
    let quick = decision(&r, "ScheduleActivityTask")[0]["control"].as_str().unwrap().to_owned();
    h.accept(1000.0, &r);
    let op = child["control"].as_str().unwrap();
    let execution = json!({ "workflowId": child["workflowId"], "runId": "ship-run" });
    h.add(
        1001.0,
        "ChildWorkflowExecutionStarted",
        json!({ "initiatedEventId": h.initiated(op), "workflowExecution": execution }),
    );
    let q = h.scheduled(&quick);
    h.add(1002.0, "ActivityTaskCompleted", json!({ "scheduledEventId": q, "result": r#"{"fast":true}"# }));
    h.decision_task(1002.0);
    let r = swf::decide(&wf, &h.task(), &config).unwrap();
    assert_eq!(types(&r), ["RequestCancelExternalWorkflowExecution", "CompleteWorkflowExecution"], "{r:#}");
    assert_eq!(*decision(&r, "RequestCancelExternalWorkflowExecution")[0], execution);
    // Asked once: with the request in the history, a replay does not ask again.
    let mut again = h.clone();
    let ids = again.accept(1002.0, &json!({ "decisions": [r["decisions"][0].clone()] }));
    assert_eq!(ids.len(), 1);
    again.decision_task(1003.0);
    let r = swf::decide(&wf, &again.task(), &config).unwrap();
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
}

/// A child start SWF refuses for a passing reason (an open-children or rate limit) is made again
/// with the same workflow id, for a waited-for subflow and for a detached one alike.
#[test]
fn a_child_start_refused_for_a_passing_reason_is_made_again() {
    let config = every_subflow();
    let mut h = History::start("stay-1", &json!({ "guest": "ada" }));
    let r = decide(&h, &config);
    h.accept(1000.0, &r);
    let audit = h.initiated("StartAudit#1.0");
    h.add(
        1001.0,
        "StartChildWorkflowExecutionFailed",
        json!({ "initiatedEventId": audit, "workflowId": "stay-1--StartAudit#1.0", "cause": "OPEN_CHILDREN_LIMIT_EXCEEDED",
                "control": "StartAudit#1.0", "workflowType": { "name": "stay-audit", "version": "1.0" } }),
    );
    h.decision_task(1001.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    let again = decision(&r, "StartChildWorkflowExecution")[0];
    assert_eq!((&again["workflowId"], &again["childPolicy"]), (&json!("stay-1--StartAudit#1.0"), &json!("ABANDON")));
    h.accept(1001.0, &r);
    let book = h.scheduled("Book#1.0.a0");
    h.add(1002.0, "ActivityTaskCompleted", json!({ "scheduledEventId": book, "result": r#"{"room":12}"# }));
    h.decision_task(1002.0);
    let r = decide(&h, &config);
    h.accept(1002.0, &r);
    let ship = h.initiated("Ship#1.0");
    h.add(
        1003.0,
        "StartChildWorkflowExecutionFailed",
        json!({ "initiatedEventId": ship, "workflowId": "stay-1--Ship#1.0", "cause": "CHILD_CREATION_RATE_EXCEEDED",
                "control": "Ship#1.0", "workflowType": { "name": "stay-ship", "version": "2.0" } }),
    );
    h.decision_task(1003.0);
    let r = decide(&h, &config);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    assert_eq!(decision(&r, "StartChildWorkflowExecution")[0]["workflowId"], "stay-1--Ship#1.0");
    assert_eq!(decision(&r, "StartChildWorkflowExecution")[0]["tagList"], json!([swf::SUBFLOW_TAG]));
}
