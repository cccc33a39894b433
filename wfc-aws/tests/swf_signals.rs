//! The SWF decider's produced Serverless Workflow events (`wfc_aws::swf`): golden
//! histories in which a produced event with a target becomes `SignalExternalWorkflowExecution`
//! (signalled, refused for good, refused for a passing reason) and one without a target becomes
//! a `wfc.produced` marker; and a loop in which one workflow's signal is delivered to another
//! execution by a small simulated SWF service. Each decision of the compiled definitions
//! (tests/adapters/*_signals.sw.json) is also made by their generated code, identically.
#![allow(missing_docs)]

use serde_json::{Value, json};
use wfc_aws::swf::{self, SignalTarget, SwfConfig};
use wfc_runtime::ir::Workflow;

mod swf_support;
use swf_support::{History, decision, types};

wfc_runtime::include_workflow!("tests/adapters/ship_signals.sw.json");
wfc_runtime::include_workflow!("tests/adapters/customer_signals.sw.json");
wfc_runtime::include_workflow!("tests/adapters/charge_signals.sw.json");

/// The decider never calls a function: every call is an activity or replays.
struct NoCalls;

impl ship_signals::Handler for NoCalls {}
impl customer_signals::Handler for NoCalls {}
impl charge_signals::Handler for NoCalls {
    async fn charge_card(
        &self,
        _input: Value,
        _ctx: wfc_runtime::TaskContext,
    ) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider called a function")
    }
}

/// The same decision task answered by the generated code of `wf`, when `wf` is one of the
/// compiled definitions (the decider never calls a function: every call is an activity or
/// replays).
fn generated_decision(wf: &Workflow, task: &Value, config: &SwfConfig) -> Option<Value> {
    // Which compiled definition `wf` is (under its own name): the one with its IR hash.
    let is = |id: &wfc_runtime::DefinitionId<'_>| {
        let mut w = wf.clone();
        w.name = id.workflow.to_string();
        w.definition_hash() == id.hash
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let name = wf.name.as_str();
    let decided = if is(&ship_signals::DEFINITION_ID) {
        runtime.block_on(swf::decide_with(task, config, name, |input, o| ship_signals::run_with(&NoCalls, input, o)))
    } else if is(&customer_signals::DEFINITION_ID) {
        runtime
            .block_on(swf::decide_with(task, config, name, |input, o| customer_signals::run_with(&NoCalls, input, o)))
    } else if is(&charge_signals::DEFINITION_ID) {
        runtime.block_on(swf::decide_with(task, config, name, |input, o| charge_signals::run_with(&NoCalls, input, o)))
    } else {
        return None;
    };
    Some(decided.unwrap())
}

/// `swf::decide` on the interpreter, checked against the generated code when the definition is
/// one of the compiled ones.
fn decide(wf: &Workflow, task: &Value, config: &SwfConfig) -> Value {
    let interpreted = swf::decide(wf, task, config).unwrap();
    if let Some(generated) = generated_decision(wf, task, config) {
        assert_eq!(generated, interpreted, "generated code decided differently on {task:#}");
    }
    interpreted
}

fn load(text: &str) -> Workflow {
    match wfc_core::load(wfc_core::Source { path: "inline.sw.json", text }) {
        Ok(l) => l.workflow,
        Err(d) => panic!("definition does not load: {d:?}"),
    }
}

/// Pack (a transition producing `Audit`, no target), Notify (an action triggering `Shipped`,
/// target configured; a refused signal goes to onError), and an end producing `Thanks` whose
/// target is the `swfworkflowid` attribute taken from the state data.
const SHIP: &str = include_str!("adapters/ship_signals.sw.json");

fn ship_config() -> SwfConfig {
    let mut config = SwfConfig::default();
    config
        .signals
        .insert("Shipped".into(), SignalTarget { workflow_id: "warehouse-1".into(), run_id: None, signal_name: None });
    config
}

/// The first decision of SHIP: the Audit marker, the Shipped signal and the state marker.
fn first_decision(wf: &Workflow, h: &mut History, config: &SwfConfig) -> u64 {
    let r = decide(wf, &h.task(), config);
    assert_eq!(types(&r), ["RecordMarker", "SignalExternalWorkflowExecution", "RecordMarker"], "{r:#}");
    let marker = decision(&r, "RecordMarker")[0];
    assert_eq!(marker["markerName"], swf::PRODUCED_MARKER);
    let details: Value = serde_json::from_str(marker["details"].as_str().unwrap()).unwrap();
    assert_eq!(details["id"], "Pack#1.produce");
    assert_eq!(details["event"]["type"], "audit.entry");
    assert_eq!(details["event"]["data"], json!({ "order": "o-1" }));
    let signal = decision(&r, "SignalExternalWorkflowExecution")[0];
    assert_eq!(signal["workflowId"], "warehouse-1");
    assert!(signal.get("runId").is_none(), "{signal:#}");
    assert_eq!(signal["signalName"], "order.shipped");
    assert_eq!(signal["control"], "Notify#1.0.a0.trigger");
    let input: Value = serde_json::from_str(signal["input"].as_str().unwrap()).unwrap();
    assert_eq!(input["type"], "order.shipped");
    assert_eq!(input["source"], "shop");
    assert_eq!(input["data"], json!({ "order": "o-1" }));
    // The ids continue after the recorded Audit event's.
    assert_eq!(input["id"], "wfc-2");
    let ids = h.accept(1000.0, &r);
    ids[1]
}

#[test]
fn produced_events_are_signalled_or_recorded_and_the_produce_completes_when_signalled() {
    let wf = load(SHIP);
    let config = ship_config();
    let mut h = History::start("shop-1", &json!({}));
    // Every decision of these tests is checked against the generated code too.
    for compiled in [SHIP, CUSTOMER, CHARGE] {
        assert!(generated_decision(&load(compiled), &h.task(), &config).is_some());
    }
    let initiated = first_decision(&wf, &mut h, &config);

    // A decision task before the signal is delivered (another event): nothing new is decided,
    // the Audit event is not recorded again and Shipped is not signalled again.
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), Vec::<String>::new(), "{r:#}");

    // Delivered: Notify finishes, and the end's Thanks is signalled to the workflow its
    // `swfworkflowid` attribute names (the run id from `swfrunid`).
    h.add(
        1002.0,
        "ExternalWorkflowExecutionSignaled",
        json!({ "initiatedEventId": initiated, "workflowExecution": { "workflowId": "warehouse-1", "runId": "w" } }),
    );
    h.decision_task(1002.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["SignalExternalWorkflowExecution", "RecordMarker"], "{r:#}");
    let thanks = decision(&r, "SignalExternalWorkflowExecution")[0];
    assert_eq!(thanks["workflowId"], "cust-7");
    assert_eq!(thanks["runId"], "run-9");
    assert_eq!(thanks["signalName"], "customer.thanks");
    assert_eq!(thanks["control"], "Notify#1.produce");
    let thanks_input: Value = serde_json::from_str(thanks["input"].as_str().unwrap()).unwrap();
    assert_eq!(thanks_input["data"], json!({ "order": "o-1" }));
    assert_eq!(thanks_input["id"], "wfc-3");
    let ids = h.accept(1002.0, &r);

    h.add(
        1003.0,
        "ExternalWorkflowExecutionSignaled",
        json!({ "initiatedEventId": ids[0], "workflowExecution": { "workflowId": "cust-7", "runId": "run-9" } }),
    );
    h.decision_task(1003.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    let output: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(output, json!({ "order": "o-1", "customer": "cust-7" }));
}

#[test]
fn a_refused_signal_fails_the_produce_and_reaches_on_error() {
    let wf = load(SHIP);
    let config = ship_config();
    let mut h = History::start("shop-1", &json!({}));
    let initiated = first_decision(&wf, &mut h, &config);
    h.add(1001.0, "SignalExternalWorkflowExecutionFailed", json!({ "workflowId": "warehouse-1", "cause": "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION", "initiatedEventId": initiated, "decisionTaskCompletedEventId": 4, "control": "Notify#1.0.a0.trigger" }));
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    let output: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        output,
        json!({ "order": "o-1", "customer": "cust-7", "notified": false, "error": { "name": "Wfc.SignalFailed",
                "message": "SWF could not signal workflow execution 'warehouse-1': UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION" } }),
        "the onError took the error to Unnotified"
    );
}

#[test]
fn a_refused_signal_without_on_error_fails_the_workflow_with_swf_cause() {
    let wf = load(&SHIP.replace("Wfc.SignalFailed')]", "Other')]"));
    let config = ship_config();
    let mut h = History::start("shop-1", &json!({}));
    let initiated = first_decision(&wf, &mut h, &config);
    h.add(1001.0, "SignalExternalWorkflowExecutionFailed", json!({ "workflowId": "warehouse-1", "runId": "gone", "cause": "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION", "initiatedEventId": initiated, "decisionTaskCompletedEventId": 4, "control": "Notify#1.0.a0.trigger" }));
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    let fail = decision(&r, "FailWorkflowExecution")[0];
    assert_eq!(fail["reason"], swf::SIGNAL_FAILED);
    assert_eq!(
        fail["details"],
        "SWF could not signal workflow execution 'warehouse-1' (run gone): UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION"
    );
}

#[test]
fn a_signal_refused_for_a_passing_reason_is_sent_again() {
    let wf = load(SHIP);
    let config = ship_config();
    let mut h = History::start("shop-1", &json!({}));
    let initiated = first_decision(&wf, &mut h, &config);
    let first_input = h.attributes(initiated)["input"].clone();
    h.add(1001.0, "SignalExternalWorkflowExecutionFailed", json!({ "workflowId": "warehouse-1", "cause": "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_RATE_EXCEEDED", "initiatedEventId": initiated, "decisionTaskCompletedEventId": 4, "control": "Notify#1.0.a0.trigger" }));
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["SignalExternalWorkflowExecution", "RecordMarker"], "{r:#}");
    let again = decision(&r, "SignalExternalWorkflowExecution")[0];
    assert_eq!(again["control"], "Notify#1.0.a0.trigger");
    let (a, b): (Value, Value) = (
        serde_json::from_str(first_input.as_str().unwrap()).unwrap(),
        serde_json::from_str(again["input"].as_str().unwrap()).unwrap(),
    );
    assert_eq!((&a["id"], &a["data"]), (&b["id"], &b["data"]), "the same event, signalled again");
    let ids = h.accept(1001.0, &r);
    h.add(
        1002.0,
        "ExternalWorkflowExecutionSignaled",
        json!({ "initiatedEventId": ids[0], "workflowExecution": { "workflowId": "warehouse-1", "runId": "w" } }),
    );
    h.decision_task(1002.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["SignalExternalWorkflowExecution", "RecordMarker"], "Thanks is next: {r:#}");
}

#[test]
fn an_event_with_no_target_is_a_marker_and_replays_from_it() {
    // No signal targets: Shipped and Audit are markers; Thanks still has its attribute target.
    let wf = load(SHIP);
    let config = SwfConfig::default();
    let mut h = History::start("shop-1", &json!({}));
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["RecordMarker", "RecordMarker", "SignalExternalWorkflowExecution", "RecordMarker"], "{r:#}");
    let markers = decision(&r, "RecordMarker");
    let ids: Vec<Value> = markers[..2]
        .iter()
        .map(|m| serde_json::from_str::<Value>(m["details"].as_str().unwrap()).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, [json!("Pack#1.produce"), json!("Notify#1.0.a0.trigger")]);
    assert_eq!(markers[2]["markerName"], swf::STATE_MARKER);
    h.accept(1000.0, &r);
    // Replayed from the markers: neither is recorded again.
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), Vec::<String>::new(), "{r:#}");
}

#[test]
fn signal_targets_in_the_config_are_checked() {
    let config: SwfConfig = serde_json::from_value(
        json!({ "signals": { "Shipped": { "workflowId": "w", "runId": "r", "signalName": "s" } } }),
    )
    .unwrap();
    assert_eq!(
        config.signals["Shipped"],
        SignalTarget { workflow_id: "w".into(), run_id: Some("r".into()), signal_name: Some("s".into()) }
    );
    let err = serde_json::from_value::<SwfConfig>(json!({ "signals": { "Shipped": { "workflow": "w" } } }))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `workflow`"), "{err}");
    let err = serde_json::from_value::<SwfConfig>(json!({ "signals": { "Shipped": { "runId": "r" } } }))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing field `workflowId`"), "{err}");
    // A signal name SWF would refuse fails the workflow with the reason, not the decision call.
    let wf = load(SHIP);
    let mut config = ship_config();
    config.signals.get_mut("Shipped").unwrap().signal_name = Some("x".repeat(300));
    let h = History::start("shop-1", &json!({}));
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    assert_eq!(decision(&r, "FailWorkflowExecution")[0]["reason"], "wfc.DecisionFailed");
}

// ---------------------------------------------------------------------------------------------
// Signals delivered as events to Serverless Workflow event waits
// ---------------------------------------------------------------------------------------------

/// An event state waiting (30 minutes at most) for `payment.done` from `bank`.
const WAITER: &str = r#"{
  "id": "waiter", "version": "1.0", "name": "waiter",
  "events": [ { "name": "Paid", "type": "payment.done", "source": "bank" } ],
  "states": [
    { "name": "Begin", "type": "inject", "start": { "kind": "default" }, "data": { "begun": true },
      "transition": { "nextState": "WaitPayment" } },
    { "name": "WaitPayment", "type": "event", "timeout": "PT30M",
      "onEvents": [ { "eventRefs": [ "Paid" ], "actions": [] } ], "end": { "kind": "default" } }
  ]
}"#;

fn paid(amount: i64) -> Value {
    json!({ "specversion": "1.0", "id": format!("p-{amount}"), "type": "payment.done", "source": "bank", "data": { "amount": amount } })
}

/// The first decision of WAITER: the wait's timeout timer. Returns its TimerStarted event id.
fn waiter_start(wf: &Workflow, h: &mut History) -> u64 {
    let r = decide(wf, &h.task(), &SwfConfig::default());
    assert_eq!(types(&r), ["StartTimer", "RecordMarker"], "{r:#}");
    let timer = decision(&r, "StartTimer")[0];
    assert_eq!(timer["startToFireTimeout"], "1800");
    assert!(
        timer["control"].as_str().unwrap().starts_with("WaitPayment#1")
            && timer["control"].as_str().unwrap().ends_with(".timeout"),
        "{timer:#}"
    );
    h.accept(1000.0, &r)[0]
}

fn completed_output(r: &Value) -> Value {
    serde_json::from_str(decision(r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap()
}

#[test]
fn a_signal_is_an_event_for_a_waiting_state_and_its_timeout_timer_is_cancelled() {
    let wf = load(WAITER);
    let mut h = History::start("waiter-1", &json!({}));
    let timer = waiter_start(&wf, &mut h);
    // A signal that matches nothing (a plain signal has source `swf`), and one of another type:
    // still waiting, nothing to decide.
    h.add(1001.0, "WorkflowExecutionSignaled", json!({ "signalName": "payment.done", "input": "{\"amount\": 1}" }));
    h.add(1001.0, "WorkflowExecutionSignaled", json!({ "signalName": "x", "input": json!({ "specversion": "1.0", "type": "other", "source": "bank" }).to_string() }));
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &SwfConfig::default());
    assert_eq!(types(&r), Vec::<String>::new(), "{r:#}");
    // The CloudEvent arrives: the wait takes it, the timer is cancelled, the workflow completes.
    h.add(1002.0, "WorkflowExecutionSignaled", json!({ "signalName": "payment.done", "input": paid(10).to_string() }));
    h.decision_task(1002.0);
    let r = decide(&wf, &h.task(), &SwfConfig::default());
    assert_eq!(types(&r), ["CancelTimer", "CompleteWorkflowExecution"], "{r:#}");
    assert_eq!(decision(&r, "CancelTimer")[0]["timerId"], h.attributes(timer)["timerId"]);
    assert_eq!(completed_output(&r), json!({ "begun": true, "amount": 10 }));
}

#[test]
fn a_wait_whose_timer_fired_goes_on_and_a_later_signal_changes_nothing() {
    let wf = load(WAITER);
    let mut h = History::start("waiter-1", &json!({}));
    let timer = waiter_start(&wf, &mut h);
    h.add(2800.0, "TimerFired", json!({ "timerId": h.attributes(timer)["timerId"], "startedEventId": timer }));
    // A payment signalled after the timeout fired, before the decision task: too late.
    h.add(2801.0, "WorkflowExecutionSignaled", json!({ "signalName": "payment.done", "input": paid(10).to_string() }));
    h.decision_task(2801.0);
    let r = decide(&wf, &h.task(), &SwfConfig::default());
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    assert_eq!(completed_output(&r), json!({ "begun": true }));
}

/// A customer waiting for its order to ship, then for the shop's thanks.
const CUSTOMER: &str = include_str!("adapters/customer_signals.sw.json");

/// One execution of the simulated SWF service.
struct Execution {
    workflow: Workflow,
    config: SwfConfig,
    history: History,
    decide: bool,
    closed: Option<Value>,
}

/// Two workflows on a simulated SWF service that delivers `SignalExternalWorkflowExecution`
/// to the target's history (`WorkflowExecutionSignaled`) and answers the sender
/// (`ExternalWorkflowExecutionSignaled`, or `SignalExternalWorkflowExecutionFailed` for an unknown
/// target), each of which schedules a decision task, until both close.
#[test]
fn one_workflows_signals_wake_the_other_workflows_event_waits() {
    let mut config = SwfConfig::default();
    config.signals.insert("Shipped".into(), SignalTarget { workflow_id: "cust-7".into(), ..SignalTarget::default() });
    let mut executions = [
        // The customer first: its waits are reached before anything is signalled.
        Execution {
            workflow: load(CUSTOMER),
            config: SwfConfig::default(),
            history: History::start("cust-7", &json!({})),
            decide: true,
            closed: None,
        },
        Execution {
            workflow: load(SHIP),
            config,
            history: History::start("shop-1", &json!({})),
            decide: true,
            closed: None,
        },
    ];
    let mut ts = 1000.0;
    let mut rounds = 0;
    while executions.iter().any(|e| e.decide) {
        rounds += 1;
        assert!(rounds < 20, "the executions do not close");
        for i in 0..executions.len() {
            if !executions[i].decide {
                continue;
            }
            ts += 1.0;
            let e = &mut executions[i];
            e.decide = false;
            let r = decide(&e.workflow, &e.history.task(), &e.config);
            let ids = e.history.accept(ts, &r);
            let sender = e.history.workflow_id.clone();
            for (d, id) in r["decisions"].as_array().unwrap().iter().zip(ids) {
                match d["decisionType"].as_str().unwrap() {
                    "SignalExternalWorkflowExecution" => {
                        let a = &d["signalExternalWorkflowExecutionDecisionAttributes"];
                        let target = executions
                            .iter()
                            .position(|t| t.history.workflow_id == a["workflowId"] && t.closed.is_none());
                        let e = &mut executions[i];
                        match target {
                            Some(t) => {
                                e.history.add(ts, "ExternalWorkflowExecutionSignaled", json!({ "initiatedEventId": id, "workflowExecution": { "workflowId": a["workflowId"], "runId": "r" } }));
                                let target = &mut executions[t];
                                target.history.add(ts, "WorkflowExecutionSignaled", json!({ "signalName": a["signalName"], "input": a["input"], "externalWorkflowExecution": { "workflowId": sender, "runId": "r" }, "externalInitiatedEventId": id }));
                                target.history.decision_task(ts);
                                target.decide = true;
                            }
                            None => {
                                e.history.add(ts, "SignalExternalWorkflowExecutionFailed", json!({ "workflowId": a["workflowId"], "cause": "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION", "initiatedEventId": id, "decisionTaskCompletedEventId": id - 1, "control": a["control"] }));
                            }
                        }
                        let e = &mut executions[i];
                        e.history.decision_task(ts);
                        e.decide = true;
                    }
                    "CompleteWorkflowExecution" => {
                        let result = &d["completeWorkflowExecutionDecisionAttributes"]["result"];
                        executions[i].closed = Some(serde_json::from_str(result.as_str().unwrap()).unwrap());
                    }
                    "RecordMarker" => {}
                    other => panic!("unexpected decision {other}: {r:#}"),
                }
            }
        }
    }
    assert_eq!(executions[1].closed, Some(json!({ "order": "o-1", "customer": "cust-7" })), "the shop completed");
    assert_eq!(executions[0].closed, Some(json!({ "order": "o-1", "source": "shop" })), "the customer got both events");
    // The customer's history holds the two signals, in the order the shop sent them.
    let signals: Vec<&Value> = executions[0]
        .history
        .events
        .iter()
        .filter(|e| e["eventType"] == "WorkflowExecutionSignaled")
        .map(|e| &e["workflowExecutionSignaledEventAttributes"]["signalName"])
        .collect();
    assert_eq!(signals, [&json!("order.shipped"), &json!("customer.thanks")]);
}

/// A function action with a retry: an activity per attempt, a timer between them.
const CHARGE: &str = include_str!("adapters/charge_signals.sw.json");

#[test]
fn function_actions_are_activities_and_their_retries_timers() {
    let wf = load(CHARGE);
    let config = SwfConfig::default();
    let mut h = History::start("charge-1", &json!({ "amount": 30 }));
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["ScheduleActivityTask", "RecordMarker"], "{r:#}");
    let a = decision(&r, "ScheduleActivityTask")[0];
    assert_eq!(a["activityType"]["name"], "chargeCard");
    assert_eq!(a["startToCloseTimeout"], "60");
    assert_eq!(serde_json::from_str::<Value>(a["input"].as_str().unwrap()).unwrap(), json!({ "amount": 30 }));
    let scheduled = h.accept(1000.0, &r)[0];
    h.add(1001.0, "ActivityTaskFailed", json!({ "scheduledEventId": scheduled, "startedEventId": scheduled, "reason": "Declined", "details": "try later" }));
    h.decision_task(1001.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["StartTimer", "RecordMarker"], "{r:#}");
    assert_eq!(decision(&r, "StartTimer")[0]["startToFireTimeout"], "5");
    let timer = h.accept(1001.0, &r)[0];
    h.add(1006.0, "TimerFired", json!({ "timerId": h.attributes(timer)["timerId"], "startedEventId": timer }));
    h.decision_task(1006.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["ScheduleActivityTask", "RecordMarker"], "{r:#}");
    let retry = h.accept(1006.0, &r)[0];
    h.add(
        1007.0,
        "ActivityTaskCompleted",
        json!({ "scheduledEventId": retry, "startedEventId": retry, "result": json!({ "id": "r-1" }).to_string() }),
    );
    h.decision_task(1007.0);
    let r = decide(&wf, &h.task(), &config);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    assert_eq!(completed_output(&r), json!({ "amount": 30, "id": "r-1" }));
}
