//! A history being built by hand for the SWF decider's tests (`swf_decider.rs`,
//! `swf_signals.rs`): events in SWF's shapes, and the decider's accepted decisions recorded as
//! the events SWF records for them.

// Each test binary uses part of this module.
#![allow(dead_code)]

use serde_json::{Value, json};

/// One event in SWF's shape.
pub(crate) fn event(id: u64, ts: f64, event_type: &str, attrs: Value) -> Value {
    json!({ "eventId": id, "eventTimestamp": ts, "eventType": event_type, attributes_key(event_type, "EventAttributes"): attrs })
}

/// `scheduleActivityTaskDecisionAttributes` and the like: the field holding a decision's or an
/// event's attributes.
pub(crate) fn attributes_key(type_name: &str, suffix: &str) -> String {
    format!("{}{}{suffix}", type_name[..1].to_lowercase(), &type_name[1..])
}

/// The history of workflow execution `workflow_id` (run `r`, type `wf` version 1).
#[derive(Clone)]
pub(crate) struct History {
    pub(crate) workflow_id: String,
    pub(crate) events: Vec<Value>,
}

impl History {
    /// A started execution with `input`, and its first decision task.
    pub(crate) fn start(workflow_id: &str, input: &Value) -> History {
        let mut h = History { workflow_id: workflow_id.to_owned(), events: Vec::new() };
        h.add(
            1000.0,
            "WorkflowExecutionStarted",
            json!({ "input": input.to_string(), "childPolicy": "TERMINATE", "taskList": { "name": "wfc" }, "workflowType": { "name": "wf", "version": "1" } }),
        );
        h.decision_task(1000.0);
        h
    }

    /// The id the next event gets.
    pub(crate) fn next_id(&self) -> u64 {
        self.events.len() as u64 + 1
    }

    /// Appends an event; returns its id.
    pub(crate) fn add(&mut self, ts: f64, t: &str, attrs: Value) -> u64 {
        let id = self.next_id();
        self.events.push(event(id, ts, t, attrs));
        id
    }

    /// Appends a scheduled and started decision task.
    pub(crate) fn decision_task(&mut self, ts: f64) {
        let s = self.add(ts, "DecisionTaskScheduled", json!({ "taskList": { "name": "wfc" } }));
        self.add(ts, "DecisionTaskStarted", json!({ "scheduledEventId": s }));
    }

    /// The PollForDecisionTask response for the whole history.
    pub(crate) fn task(&self) -> Value {
        json!({ "taskToken": "t", "startedEventId": self.events.len(), "workflowExecution": { "workflowId": self.workflow_id, "runId": "r" },
                "workflowType": { "name": "wf", "version": "1" }, "events": self.events })
    }

    /// Records the decision task's completion and the decisions of `response` as the events
    /// SWF records when it accepts them; returns the event id of each decision, in order.
    pub(crate) fn accept(&mut self, ts: f64, response: &Value) -> Vec<u64> {
        let started = self.events.len() as u64;
        let completed = self.add(
            ts,
            "DecisionTaskCompleted",
            json!({ "scheduledEventId": started - 1, "startedEventId": started }),
        );
        let mut ids = Vec::new();
        for d in response["decisions"].as_array().unwrap() {
            let t = d["decisionType"].as_str().unwrap();
            let mut a = d[&attributes_key(t, "DecisionAttributes")].clone();
            a["decisionTaskCompletedEventId"] = json!(completed);
            let event_type = match t {
                "ScheduleActivityTask" => "ActivityTaskScheduled",
                "ScheduleLambdaFunction" => "LambdaFunctionScheduled",
                "StartTimer" => "TimerStarted",
                "RecordMarker" => "MarkerRecorded",
                "RequestCancelActivityTask" => "ActivityTaskCancelRequested",
                "StartChildWorkflowExecution" => "StartChildWorkflowExecutionInitiated",
                "RequestCancelExternalWorkflowExecution" => "RequestCancelExternalWorkflowExecutionInitiated",
                "SignalExternalWorkflowExecution" => "SignalExternalWorkflowExecutionInitiated",
                "CompleteWorkflowExecution" => "WorkflowExecutionCompleted",
                "FailWorkflowExecution" => "WorkflowExecutionFailed",
                other => panic!("unexpected {other}"),
            };
            ids.push(self.add(ts, event_type, a));
        }
        ids
    }

    /// The id of the event of type `event_type` (`ActivityTaskScheduled`,
    /// `StartChildWorkflowExecutionInitiated`...) that accepted the decision of operation `op`
    /// (its `control`).
    pub(crate) fn accepted(&self, event_type: &str, op: &str) -> u64 {
        let key = attributes_key(event_type, "EventAttributes");
        self.events
            .iter()
            .find(|e| e["eventType"] == event_type && e[&key]["control"] == op)
            .unwrap_or_else(|| panic!("no {event_type} event for {op}"))["eventId"]
            .as_u64()
            .unwrap()
    }

    /// The scheduled event of the activity of operation `op`.
    pub(crate) fn scheduled(&self, op: &str) -> u64 {
        self.accepted("ActivityTaskScheduled", op)
    }

    /// The event that accepted the child workflow decision of operation `op`.
    pub(crate) fn initiated(&self, op: &str) -> u64 {
        self.accepted("StartChildWorkflowExecutionInitiated", op)
    }

    /// The attributes of event `id`.
    pub(crate) fn attributes(&self, id: u64) -> &Value {
        let e = &self.events[id as usize - 1];
        &e[attributes_key(e["eventType"].as_str().unwrap(), "EventAttributes")]
    }
}

/// The types of a response's decisions, in order.
pub(crate) fn types(response: &Value) -> Vec<String> {
    response["decisions"].as_array().unwrap().iter().map(|d| d["decisionType"].as_str().unwrap().to_owned()).collect()
}

/// The attributes of a response's decisions of `decision_type`, in order.
pub(crate) fn decision<'a>(response: &'a Value, decision_type: &str) -> Vec<&'a Value> {
    let key = attributes_key(decision_type, "DecisionAttributes");
    response["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["decisionType"] == decision_type)
        .map(|d| &d[&key])
        .collect()
}
