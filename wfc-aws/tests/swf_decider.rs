//! The SWF decider (`wfc_aws::swf`): golden histories, and a loop test in which a
//! small simulated SWF service feeds histories to the decider until the workflow closes, for
//! every case in tests/cases whose definition has only tasks, waits, choices, parallels, maps and
//! the data states, and every Serverless Workflow case (its consumed events are signals) but
//! those that need the end of event delivery (the result must equal the case's expected output).
#![allow(missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wfc_aws::swf::{self, SwfConfig};
use wfc_runtime::ir::{StateKind, StateMachine, Workflow};

mod swf_support;
use swf_support::{History, attributes_key, decision, event, types};

fn load(text: &str) -> Workflow {
    match wfc_core::load(wfc_core::Source { path: "inline.asl.json", text }) {
        Ok(l) => l.workflow,
        Err(d) => panic!("definition does not load: {d:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// A simulated SWF service
// ---------------------------------------------------------------------------------------------

/// A mocked activity answer (wfc's case-file mock format).
#[derive(Clone, Debug)]
enum Answer {
    Return(Value),
    Throw(String, String),
    Echo,
}

#[derive(Clone, Debug)]
struct Mock {
    answer: Answer,
    delay: f64,
}

fn parse_mocks(doc: &Value) -> Result<HashMap<String, Vec<Mock>>, String> {
    let mut out = HashMap::new();
    let Some(map) = doc.as_object() else { return Ok(out) };
    for (key, v) in map {
        let entries: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        let mut mocks = Vec::new();
        for e in entries {
            let delay = e.get("delay_seconds").and_then(Value::as_f64).unwrap_or(0.0);
            let answer = if let Some(r) = e.get("return") {
                Answer::Return(r.clone())
            } else if let Some(t) = e.get("throw") {
                Answer::Throw(
                    t.get("error").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    t.get("cause").and_then(Value::as_str).unwrap_or_default().to_owned(),
                )
            } else if e.get("echo").is_some() {
                Answer::Echo
            } else {
                return Err(format!("mock entry {e} is not understood by the simulated service"));
            };
            mocks.push(Mock { answer, delay });
        }
        out.insert(key.clone(), mocks);
    }
    Ok(out)
}

/// The state name in an operation id (`<scope><State>#<visit>.<attempt>`).
fn state_of(op_id: &str) -> &str {
    let tail = op_id.rsplit('/').next().unwrap_or(op_id);
    tail.rsplit_once('#').map_or(tail, |(s, _)| s)
}

#[derive(Debug)]
enum Future {
    Activity {
        scheduled: u64,
        outcome: Result<Value, (String, String)>,
        timeout: Option<String>,
    },
    Timer {
        started: u64,
        timer_id: String,
    },
    /// A case's consumed event, signalled to the execution (signal name = its type).
    Signal {
        event: Value,
    },
    /// A child workflow execution (a Serverless Workflow subflow), already run to its end by its
    /// own simulated service and decider: how it closed.
    Child {
        initiated: u64,
        execution: Value,
        closed: Closed,
    },
}

/// A decider: decision task in, RespondDecisionTaskCompleted request out.
type Decider = Box<dyn Fn(&Value) -> Value>;

/// How a simulated workflow execution ended.
#[derive(Debug, PartialEq)]
struct Closed {
    status: &'static str,
    output: Option<Value>,
    error: Option<String>,
    cause: Option<String>,
    elapsed: f64,
    decisions: usize,
}

struct Sim<'a> {
    workflow: &'a Workflow,
    config: SwfConfig,
    workflow_id: String,
    events: Vec<Value>,
    now: f64,
    start: f64,
    mocks: HashMap<String, Vec<Mock>>,
    used: HashMap<String, usize>,
    /// Events due later, by time (then by insertion).
    future: Vec<(f64, u64, Future)>,
    seq: u64,
    /// Split each poll response into pages of this many events, newest first.
    page_size: usize,
    /// Before applying a closing decision, a signal arrives (SWF answers UnhandledDecision).
    race_signal_once: bool,
    decisions: usize,
    resource_of: HashMap<String, String>,
    /// A second decider (generated code) that must answer every decision task identically.
    cross_check: Option<Decider>,
    /// The workflows child executions run, by workflow type name (`StartChildWorkflowExecution`).
    children: HashMap<String, Workflow>,
    /// When the last child execution started from this one (or from its children) ended.
    children_end: f64,
}

impl<'a> Sim<'a> {
    fn new(workflow: &'a Workflow, name: &str, input: &Value, mocks: HashMap<String, Vec<Mock>>, seed: u64) -> Sim<'a> {
        let start = wfc_runtime::clock::VIRTUAL_EPOCH_SECONDS as f64;
        let mut resource_of = HashMap::new();
        fn walk(m: &StateMachine, out: &mut HashMap<String, String>) {
            for s in &m.states {
                match &s.kind {
                    StateKind::Task(t) => {
                        out.insert(s.name.clone(), t.resource.as_str().to_owned());
                    }
                    StateKind::Parallel(p) => p.branches.iter().for_each(|b| walk(b, out)),
                    StateKind::Map(m) => walk(&m.item_processor, out),
                    _ => {}
                }
            }
        }
        walk(&workflow.machine, &mut resource_of);
        let mut sim = Sim {
            workflow,
            config: SwfConfig { seed, ..SwfConfig::default() },
            // `wfc test` names each execution after its case: `$$.Execution.Name` is the same.
            workflow_id: name.to_owned(),
            events: Vec::new(),
            now: start,
            start,
            mocks,
            used: HashMap::new(),
            future: Vec::new(),
            seq: 0,
            page_size: 0,
            race_signal_once: false,
            decisions: 0,
            resource_of,
            cross_check: None,
            children: HashMap::new(),
            children_end: start,
        };
        sim.push(
            "WorkflowExecutionStarted",
            json!({ "input": input.to_string(), "childPolicy": "TERMINATE", "taskList": { "name": "wfc" },
                    "workflowType": { "name": workflow.name, "version": "1" } }),
        );
        sim
    }

    fn push(&mut self, event_type: &str, attrs: Value) -> u64 {
        let id = self.events.len() as u64 + 1;
        self.events.push(event(id, self.now, event_type, attrs));
        id
    }

    fn poll(&mut self) -> (Value, u64) {
        let scheduled = self.push("DecisionTaskScheduled", json!({ "taskList": { "name": "wfc" } }));
        let started = self.push("DecisionTaskStarted", json!({ "scheduledEventId": scheduled }));
        let base = json!({
            "taskToken": format!("token-{started}"),
            "startedEventId": started,
            "workflowExecution": { "workflowId": self.workflow_id, "runId": "run-1" },
            "workflowType": { "name": self.workflow.name, "version": "1" },
        });
        let task = if self.page_size == 0 {
            let mut t = base;
            t["events"] = Value::Array(self.events.clone());
            t
        } else {
            // reverseOrder=true pages, as the e-commerce example polls.
            let newest_first: Vec<Value> = self.events.iter().rev().cloned().collect();
            let pages: Vec<Value> = newest_first
                .chunks(self.page_size)
                .enumerate()
                .map(|(i, chunk)| {
                    let mut t = base.clone();
                    t["events"] = Value::Array(chunk.to_vec());
                    t["nextPageToken"] = json!(format!("page-{}", i + 1));
                    t
                })
                .collect();
            Value::Array(pages)
        };
        (task, started)
    }

    /// The mock answering activity `activity_type` of operation `op_id`: by state name, else
    /// by the Task's resource, else by the activity type (a Serverless Workflow function's name).
    fn mock_for(&mut self, op_id: &str, activity_type: &str) -> Mock {
        let state = state_of(op_id).to_owned();
        let resource = self.resource_of.get(&state).cloned().unwrap_or_else(|| activity_type.to_owned());
        let key = if self.mocks.contains_key(&state) { state } else { resource };
        let Some(list) = self.mocks.get(&key) else {
            // What `wfc test` answers an unmocked Task with.
            let cause = format!(
                "no mock for state {:?} (resource {:?}); add one to the case's \"mocks\"",
                state_of(op_id),
                self.resource_of.get(state_of(op_id)).cloned().unwrap_or_default()
            );
            return Mock { answer: Answer::Throw("Wfc.NoMock".into(), cause), delay: 0.0 };
        };
        let n = self.used.entry(key).or_insert(0);
        let m = list[(*n).min(list.len() - 1)].clone();
        *n += 1;
        m
    }

    fn apply(&mut self, response: &Value, started: u64) -> Option<Closed> {
        let decisions = response["decisions"].as_array().expect("decisions array");
        self.decisions += 1;
        let closing = [
            "CompleteWorkflowExecution",
            "FailWorkflowExecution",
            "CancelWorkflowExecution",
            "ContinueAsNewWorkflowExecution",
        ];
        for (i, d) in decisions.iter().enumerate() {
            let t = d["decisionType"].as_str().unwrap();
            if closing.contains(&t) {
                assert_eq!(i, decisions.len() - 1, "the closing decision {t} is not the last: {response:#}");
            }
        }
        if self.race_signal_once && decisions.iter().any(|d| closing.contains(&d["decisionType"].as_str().unwrap())) {
            // A signal arrived while the decider worked: SWF answers UnhandledDecision and the
            // decider answers with no decisions, as swf-decision.md says.
            self.race_signal_once = false;
            self.push("WorkflowExecutionSignaled", json!({ "signalName": "unrelated", "input": "{}" }));
            let empty = swf::unhandled_decision_response(response["taskToken"].as_str().unwrap());
            assert_eq!(empty["decisions"], json!([]));
            self.push("DecisionTaskCompleted", json!({ "scheduledEventId": started - 1, "startedEventId": started }));
            return None;
        }
        let completed =
            self.push("DecisionTaskCompleted", json!({ "scheduledEventId": started - 1, "startedEventId": started }));
        for d in decisions {
            let t = d["decisionType"].as_str().unwrap();
            let a = &d[&attributes_key(t, "DecisionAttributes")];
            match t {
                "ScheduleActivityTask" => {
                    let mut attrs = a.clone();
                    attrs["decisionTaskCompletedEventId"] = json!(completed);
                    let scheduled = self.push("ActivityTaskScheduled", attrs);
                    let op = a["control"].as_str().expect("control holds the operation id").to_owned();
                    let input: Value = serde_json::from_str(a["input"].as_str().unwrap()).unwrap();
                    let mock = self.mock_for(&op, a["activityType"]["name"].as_str().unwrap_or_default());
                    let outcome = match mock.answer {
                        Answer::Return(v) => Ok(v),
                        Answer::Echo => Ok(input),
                        Answer::Throw(e, c) => Err((e, c)),
                    };
                    let limit = ["startToCloseTimeout", "heartbeatTimeout"]
                        .iter()
                        .filter_map(|k| a[*k].as_str().and_then(|s| s.parse::<f64>().ok()).map(|v| (v, *k)))
                        .fold(None::<(f64, &str)>, |best, x| match best {
                            Some(b) if b.0 <= x.0 => Some(b),
                            _ => Some(x),
                        });
                    let (at, timeout) = match limit {
                        Some((secs, k)) if mock.delay > secs => (
                            self.now + secs,
                            Some(if k == "heartbeatTimeout" { "HEARTBEAT" } else { "START_TO_CLOSE" }.to_owned()),
                        ),
                        _ => (self.now + mock.delay, None),
                    };
                    self.seq += 1;
                    self.future.push((at, self.seq, Future::Activity { scheduled, outcome, timeout }));
                }
                "StartTimer" => {
                    let mut attrs = a.clone();
                    attrs["decisionTaskCompletedEventId"] = json!(completed);
                    let started = self.push("TimerStarted", attrs);
                    let secs: f64 = a["startToFireTimeout"].as_str().unwrap().parse().unwrap();
                    self.seq += 1;
                    let timer_id = a["timerId"].as_str().unwrap().to_owned();
                    self.future.push((self.now + secs, self.seq, Future::Timer { started, timer_id }));
                }
                "RequestCancelActivityTask" => {
                    let activity_id = a["activityId"].clone();
                    self.push(
                        "ActivityTaskCancelRequested",
                        json!({ "activityId": activity_id, "decisionTaskCompletedEventId": completed }),
                    );
                    let ids: HashMap<u64, Value> = self
                        .events
                        .iter()
                        .filter(|e| e["eventType"] == "ActivityTaskScheduled")
                        .map(|e| {
                            (
                                e["eventId"].as_u64().unwrap(),
                                e["activityTaskScheduledEventAttributes"]["activityId"].clone(),
                            )
                        })
                        .collect();
                    if let Some(pos) = self.future.iter().position(
                        |(_, _, f)| matches!(f, Future::Activity { scheduled, .. } if ids.get(scheduled) == Some(&activity_id)),
                    ) {
                        let (_, _, f) = self.future.remove(pos);
                        if let Future::Activity { scheduled, .. } = f {
                            self.push("ActivityTaskCanceled", json!({ "scheduledEventId": scheduled, "startedEventId": 0 }));
                        }
                    }
                }
                "CancelTimer" => {
                    let timer_id = a["timerId"].as_str().unwrap();
                    if let Some(pos) = self
                        .future
                        .iter()
                        .position(|(_, _, f)| matches!(f, Future::Timer { timer_id: t, .. } if t == timer_id))
                    {
                        let (_, _, f) = self.future.remove(pos);
                        if let Future::Timer { started, .. } = f {
                            self.push("TimerCanceled", json!({ "timerId": timer_id, "startedEventId": started, "decisionTaskCompletedEventId": completed }));
                        }
                    }
                }
                "RecordMarker" => {
                    let mut attrs = a.clone();
                    attrs["decisionTaskCompletedEventId"] = json!(completed);
                    self.push("MarkerRecorded", attrs);
                }
                "CompleteWorkflowExecution" => {
                    let output = serde_json::from_str(a["result"].as_str().unwrap()).unwrap();
                    return Some(self.closed("SUCCEEDED", Some(output), None, None));
                }
                "FailWorkflowExecution" => {
                    let (r, d) = (a["reason"].as_str().map(str::to_owned), a["details"].as_str().map(str::to_owned));
                    return Some(self.closed("FAILED", None, r, d));
                }
                "CancelWorkflowExecution" => return Some(self.closed("CANCELED", None, None, None)),
                "StartChildWorkflowExecution" => self.start_child(a, completed),
                "RequestCancelExternalWorkflowExecution" => {
                    let mut attrs = a.clone();
                    attrs["decisionTaskCompletedEventId"] = json!(completed);
                    self.push("RequestCancelExternalWorkflowExecutionInitiated", attrs);
                    if let Some(pos) = self.future.iter().position(
                        |(_, _, f)| matches!(f, Future::Child { execution, .. } if execution["workflowId"] == a["workflowId"]),
                    ) {
                        let (_, _, f) = self.future.remove(pos);
                        if let Future::Child { initiated, execution, .. } = f {
                            self.push(
                                "ChildWorkflowExecutionCanceled",
                                json!({ "initiatedEventId": initiated, "workflowExecution": execution }),
                            );
                        }
                    }
                }
                other => panic!("the simulated service does not expect {other}"),
            }
        }
        None
    }

    /// Starts a child workflow execution: run to its end at once by a simulated service of its
    /// own (the same mocks, in turn with the parent's), its start recorded now and its close
    /// when its virtual time has passed.
    fn start_child(&mut self, a: &Value, completed: u64) {
        let mut attrs = a.clone();
        attrs["decisionTaskCompletedEventId"] = json!(completed);
        let initiated = self.push("StartChildWorkflowExecutionInitiated", attrs);
        let child_id = a["workflowId"].as_str().unwrap().to_owned();
        let Some(workflow) = a["workflowType"]["name"].as_str().and_then(|n| self.children.get(n)).cloned() else {
            self.push(
                "StartChildWorkflowExecutionFailed",
                json!({ "initiatedEventId": initiated, "workflowId": child_id, "cause": "WORKFLOW_TYPE_DOES_NOT_EXIST", "control": a["control"] }),
            );
            return;
        };
        let input: Value = serde_json::from_str(a["input"].as_str().unwrap()).unwrap();
        let mut child = Sim::new(&workflow, &child_id, &input, self.mocks.clone(), self.config.seed);
        child.config = self.config.clone();
        child.children = self.children.clone();
        child.used = std::mem::take(&mut self.used);
        child.start = self.now;
        child.now = self.now;
        child.children_end = self.now;
        child.events[0]["eventTimestamp"] = json!(self.now);
        let closed = child.run().unwrap_or_else(|e| Closed {
            status: "FAILED",
            output: None,
            error: Some("Sim.ChildStuck".into()),
            cause: Some(e),
            elapsed: 0.0,
            decisions: 0,
        });
        self.used = std::mem::take(&mut child.used);
        self.children_end = self.children_end.max(child.now).max(child.children_end);
        let execution = json!({ "workflowId": child_id, "runId": format!("run-{initiated}") });
        self.push(
            "ChildWorkflowExecutionStarted",
            json!({ "initiatedEventId": initiated, "workflowExecution": execution }),
        );
        self.seq += 1;
        self.future.push((self.now + closed.elapsed, self.seq, Future::Child { initiated, execution, closed }));
    }

    fn closed(
        &self,
        status: &'static str,
        output: Option<Value>,
        error: Option<String>,
        cause: Option<String>,
    ) -> Closed {
        Closed { status, output, error, cause, elapsed: self.now - self.start, decisions: self.decisions }
    }

    /// Moves time to the next due events and records them.
    fn advance(&mut self) -> bool {
        let Some(at) = self.future.iter().map(|(t, _, _)| *t).reduce(f64::min) else { return false };
        self.now = at;
        let mut due: Vec<(f64, u64, Future)> = Vec::new();
        let mut rest = Vec::new();
        for f in self.future.drain(..) {
            if f.0 <= at { due.push(f) } else { rest.push(f) }
        }
        self.future = rest;
        due.sort_by_key(|f| f.1);
        for (_, _, f) in due {
            match f {
                Future::Activity { scheduled, outcome, timeout } => {
                    let started =
                        self.push("ActivityTaskStarted", json!({ "scheduledEventId": scheduled, "identity": "sim" }));
                    match (timeout, outcome) {
                        (Some(kind), _) => {
                            self.push("ActivityTaskTimedOut", json!({ "scheduledEventId": scheduled, "startedEventId": started, "timeoutType": kind }))
                        }
                        (None, Ok(v)) => self.push(
                            "ActivityTaskCompleted",
                            json!({ "scheduledEventId": scheduled, "startedEventId": started, "result": v.to_string() }),
                        ),
                        (None, Err((e, c))) => self.push(
                            "ActivityTaskFailed",
                            json!({ "scheduledEventId": scheduled, "startedEventId": started, "reason": e, "details": c }),
                        ),
                    };
                }
                Future::Timer { started, timer_id } => {
                    self.push("TimerFired", json!({ "timerId": timer_id, "startedEventId": started }));
                }
                Future::Signal { event } => {
                    let name = event["type"].as_str().unwrap_or_default().to_owned();
                    self.push("WorkflowExecutionSignaled", json!({ "signalName": name, "input": event.to_string() }));
                }
                Future::Child { initiated, execution, closed } => {
                    let mut a = json!({ "initiatedEventId": initiated, "workflowExecution": execution });
                    let event_type = match closed.status {
                        "SUCCEEDED" => {
                            a["result"] = json!(closed.output.unwrap_or(Value::Null).to_string());
                            "ChildWorkflowExecutionCompleted"
                        }
                        "FAILED" => {
                            a["reason"] = json!(closed.error);
                            a["details"] = json!(closed.cause);
                            "ChildWorkflowExecutionFailed"
                        }
                        _ => "ChildWorkflowExecutionCanceled",
                    };
                    self.push(event_type, a);
                }
            }
        }
        true
    }

    fn run(&mut self) -> Result<Closed, String> {
        for _ in 0..500 {
            let (task, started) = self.poll();
            let response = swf::decide(self.workflow, &task, &self.config).map_err(|e| e.to_string())?;

            if let Some(other) = &self.cross_check {
                assert_eq!(other(&task), response, "generated code decided differently on {task:#}");
            }
            if let Some(closed) = self.apply(&response, started) {
                return Ok(closed);
            }
            let has_new_work = !response["decisions"].as_array().unwrap().is_empty();
            if has_new_work && self.events.last().is_some_and(|e| e["eventType"] == "DecisionTaskCompleted") {
                // The decisions were refused (UnhandledDecision): SWF schedules a decision task
                // at once, before anything else is due.
                continue;
            }
            if !has_new_work && !self.advance() {
                // An UnhandledDecision answer: a new decision task follows at once.
                if self.events.last().is_some_and(|e| e["eventType"] == "DecisionTaskCompleted") {
                    continue;
                }
                return Err("the decider made no decision and nothing is due: the workflow is stuck".into());
            }
            if has_new_work && self.future.is_empty() {
                continue;
            }
            if has_new_work {
                self.advance();
            }
        }
        Err("no close after 500 decision tasks".into())
    }
}

// ---------------------------------------------------------------------------------------------
// The loop test over tests/cases
// ---------------------------------------------------------------------------------------------

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases")
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            case_files(&p, out);
        } else if p.to_string_lossy().ends_with(".case.json") {
            out.push(p);
        }
    }
}

/// Why a workflow is outside the decider loop test, if it is.
fn unsupported(workflow: &Workflow) -> Option<String> {
    if workflow.timeout_seconds.is_some() {
        return Some("the workflow has TimeoutSeconds (SWF's executionStartToCloseTimeout, not the decider's)".into());
    }
    fn walk(m: &StateMachine) -> Option<String> {
        for s in &m.states {
            match &s.kind {
                StateKind::Map(m) => {
                    if let Some(r) = walk(&m.item_processor) {
                        return Some(r);
                    }
                }
                StateKind::Task(t) if wfc_runtime::callback::is_callback_resource(&t.resource) => {
                    return Some(format!("state {} waits for a task token (callbacks are not mapped to SWF)", s.name));
                }
                StateKind::Parallel(p) => {
                    if let Some(r) = p.branches.iter().find_map(walk) {
                        return Some(r);
                    }
                }
                _ => {}
            }
        }
        None
    }
    walk(&workflow.machine)
}

#[test]
fn every_eligible_case_runs_to_its_expected_end_through_the_decider() {
    let mut files = Vec::new();
    case_files(&cases_dir(), &mut files);
    let (mut ran, mut failures, mut skipped) = (0, Vec::new(), Vec::new());
    let mut with_map = Vec::new();
    let mut with_children: Vec<String> = Vec::new();
    let mut serverless = 0;
    for file in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let cases: Vec<Value> = match doc {
            Value::Array(a) => a,
            other => vec![other],
        };
        for (i, case) in cases.into_iter().enumerate() {
            let name = case["name"].as_str().map(str::to_owned).unwrap_or_else(|| format!("{}#{i}", file.display()));
            if case.get("skip").is_some() || case.get("mock_config").is_some() {
                skipped.push(format!("{name}: skipped or Step Functions Local mocks"));
                continue;
            }
            // A definition file names the state machine as `wfc test` does (by its file name).
            let (source_path, text) = match &case["definition"] {
                Value::String(rel) => {
                    let path = file.parent().unwrap().join(rel);
                    (path.to_string_lossy().into_owned(), std::fs::read_to_string(&path).unwrap())
                }
                inline => (name.clone(), inline.to_string()),
            };
            // A Serverless Workflow's subflows resolve among the SW definitions beside it, as for
            // `wfc test`.
            let mut settings = wfc_core::Settings::default();
            if let Value::String(rel) = &case["definition"] {
                let dir = file.parent().unwrap().join(rel).parent().unwrap().to_owned();
                let mut siblings: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
                siblings.sort();
                for p in siblings {
                    let n = p.to_string_lossy().into_owned();
                    if (n.ends_with(".sw.json") || n.ends_with(".sw.yaml")) && n != source_path {
                        settings.sw_workflow(n, std::fs::read_to_string(&p).unwrap());
                    }
                }
            }
            let loaded = match wfc_core::load_with(wfc_core::Source { path: &source_path, text: &text }, &settings) {
                Ok(loaded) => loaded,
                Err(d) => {
                    let first = d.to_string().lines().next().unwrap_or_default().to_owned();
                    skipped.push(format!("{name}: the definition does not load (an error case): {first}"));
                    continue;
                }
            };
            if let Some(reason) = unsupported(&loaded.workflow) {
                skipped.push(format!("{name}: {reason}"));
                continue;
            }
            let mocks = match parse_mocks(case.get("mocks").unwrap_or(&Value::Null)) {
                Ok(m) => m,
                Err(e) => {
                    skipped.push(format!("{name}: {e}"));
                    continue;
                }
            };
            if name == "states/wait-at-aws-bound" {
                // SWF's longest timer (StartTimer, 99,999,999 s) is shorter than Step Functions'
                // Wait bound (2^31 - 1 s): the decider caps the timer, so the elapsed time differs.
                skipped.push(format!("{name}: a Wait beyond SWF's longest timer"));
                continue;
            }
            if case["expected"]["error"] == "Wfc.NoEvent" {
                // In process the last delivery closes the bus; an SWF execution has no such end:
                // it waits for a signal until its executionStartToCloseTimeout.
                skipped.push(format!("{name}: expects Wfc.NoEvent (no more events), which SWF has no notion of"));
                continue;
            }
            let input = case.get("input").cloned().unwrap_or(json!({}));
            let seed = case.get("seed").and_then(Value::as_u64).unwrap_or(0);
            let mocks_again = mocks.clone();
            let mut sim = Sim::new(&loaded.workflow, &name, &input, mocks, seed);
            // Serverless Workflow consumed events arrive as signals at their times.
            for delivery in case.get("events").and_then(Value::as_array).into_iter().flatten() {
                let (at, event) = match delivery.get("event") {
                    Some(event) => {
                        (delivery.get("after_seconds").and_then(Value::as_f64).unwrap_or(0.0), event.clone())
                    }
                    None => (0.0, delivery.clone()),
                };
                sim.seq += 1;
                let due = sim.start + at;
                sim.future.push((due, sim.seq, Future::Signal { event }));
            }
            // A DISTRIBUTED Map's ItemReader reads the case's fixtures; its ResultWriter writes
            // to a fresh directory.
            sim.config.item_root = case["item_root"].as_str().map(|rel| file.parent().unwrap().join(rel));
            let result_root = std::env::temp_dir().join(format!("wfc-swf-loop-{}-{ran}", std::process::id()));
            sim.config.result_root = Some(result_root.clone());
            if has_map(&loaded.workflow.machine) {
                with_map.push(name.clone());
            }
            if loaded.workflow.machine.states.iter().any(|s| matches!(s.kind, StateKind::Sw(_))) {
                serverless += 1;
            }
            // Every third case polls in pages of 5 events, newest first.
            if ran % 3 == 1 {
                sim.page_size = 5;
            }
            if ran % 4 == 2 {
                sim.race_signal_once = true;
            }
            ran += 1;
            let expected = &case["expected"];
            let outcome = sim.run();
            let _ = std::fs::remove_dir_all(&result_root);
            match outcome {
                Err(e) => failures.push(format!("{name}: {e}")),
                Ok(closed) => {
                    let mut problems = Vec::new();
                    if expected["status"] != closed.status {
                        problems.push(format!(
                            "status {} != {} (error {:?}, cause {:?})",
                            closed.status, expected["status"], closed.error, closed.cause
                        ));
                    }
                    if let Some(out) = expected.get("output")
                        && closed.output.as_ref() != Some(out)
                    {
                        problems.push(format!("output {} != {out}", closed.output.clone().unwrap_or(Value::Null)));
                    }
                    if let Some(err) = expected.get("error").and_then(Value::as_str)
                        && closed.error.as_deref() != Some(err)
                    {
                        problems.push(format!("error {:?} != {err}", closed.error));
                    }
                    if let Some(cause) = expected.get("cause").and_then(Value::as_str)
                        && closed.cause.as_deref() != Some(cause)
                    {
                        problems.push(format!("cause {:?} != {cause}", closed.cause));
                    }
                    if let Some(secs) = expected.get("elapsed_seconds").and_then(Value::as_f64)
                        && (closed.elapsed - secs).abs() > 1.0
                    {
                        problems.push(format!("elapsed {} s != {secs} s", closed.elapsed));
                    }
                    // Produced events with no signal target are `wfc.produced` markers.
                    if let Some(wanted) = expected.get("produced_events").and_then(Value::as_array) {
                        let produced: Vec<Value> = sim
                            .events
                            .iter()
                            .filter(|e| e["eventType"] == "MarkerRecorded")
                            .map(|e| &e["markerRecordedEventAttributes"])
                            .filter(|a| a["markerName"] == swf::PRODUCED_MARKER)
                            .map(|a| {
                                serde_json::from_str::<Value>(a["details"].as_str().unwrap()).unwrap()["event"].clone()
                            })
                            .collect();
                        let same = produced.len() == wanted.len()
                            && produced.iter().zip(wanted).all(|(got, want)| {
                                want.as_object().unwrap().iter().all(|(k, v)| got.get(k) == Some(v))
                            });
                        if !same {
                            problems.push(format!("produced events {produced:?} != {wanted:?}"));
                        }
                    }
                    if !problems.is_empty() {
                        failures.push(format!("{name}: {}", problems.join("; ")));
                    }
                }
            }
            // Again with `"subflows": {"*": {}}`: every subflow is a child workflow execution,
            // run by a decider of its own on the simulated service; the case ends the same way.
            let children = subflow_workflows(&loaded.workflow);
            if !children.is_empty() {
                let mut sim = Sim::new(&loaded.workflow, &name, &input, mocks_again, seed);
                sim.config.subflows.insert("*".into(), Default::default());
                sim.config.item_root = case["item_root"].as_str().map(|rel| file.parent().unwrap().join(rel));
                sim.children = children;
                for delivery in case.get("events").and_then(Value::as_array).into_iter().flatten() {
                    let (at, event) = match delivery.get("event") {
                        Some(event) => {
                            (delivery.get("after_seconds").and_then(Value::as_f64).unwrap_or(0.0), event.clone())
                        }
                        None => (0.0, delivery.clone()),
                    };
                    sim.seq += 1;
                    let due = sim.start + at;
                    sim.future.push((due, sim.seq, Future::Signal { event }));
                }
                match sim.run() {
                    Err(e) => failures.push(format!("{name} (subflows as children): {e}")),
                    Ok(closed) => {
                        // The instance ends when the children it did not wait for have, as in
                        // process (an ABANDONed child outlives its parent on SWF).
                        let elapsed = closed.elapsed.max(sim.children_end - sim.start);
                        let mut problems = Vec::new();
                        if expected["status"] != closed.status {
                            problems.push(format!(
                                "status {} (error {:?}, cause {:?})",
                                closed.status, closed.error, closed.cause
                            ));
                        }
                        if let Some(out) = expected.get("output")
                            && closed.output.as_ref() != Some(out)
                        {
                            problems.push(format!("output {} != {out}", closed.output.clone().unwrap_or(Value::Null)));
                        }
                        if let Some(err) = expected.get("error").and_then(Value::as_str)
                            && closed.error.as_deref() != Some(err)
                        {
                            problems.push(format!("error {:?} != {err}", closed.error));
                        }
                        if let Some(secs) = expected.get("elapsed_seconds").and_then(Value::as_f64)
                            && (elapsed - secs).abs() > 1.0
                        {
                            problems.push(format!("elapsed {elapsed} s != {secs} s"));
                        }
                        // Counted when the case's path reaches a subflow (not every case's does).
                        let started =
                            sim.events.iter().any(|e| e["eventType"] == "StartChildWorkflowExecutionInitiated");
                        if problems.is_empty() {
                            if started {
                                with_children.push(name.clone());
                            }
                        } else {
                            failures.push(format!("{name} (subflows as children): {}", problems.join("; ")));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "decider loop: {ran} cases ran ({} with a Map, {serverless} Serverless Workflow), {} skipped; subflows as child executions: {with_children:?}",
        with_map.len(),
        skipped.len()
    );
    for s in &skipped {
        eprintln!("  skipped {s}");
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases differ through the decider:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 30, "only {ran} cases ran through the decider loop");
    // Serverless Workflow cases too: function actions as activities, sleeps and retries as
    // timers, consumed events as signals, subflows, produced events as markers.
    assert!(serverless >= 50, "only {serverless} Serverless Workflow cases ran through the decider loop");
    // Inline and DISTRIBUTED Maps (MaxConcurrency, ItemSelector, ItemReader, ResultWriter,
    // tolerated failures) go through the decider too.
    assert!(with_map.len() >= 20, "only {} cases with a Map ran: {with_map:?}", with_map.len());
    // DISTRIBUTED Maps whose children run Tasks: the children's activities are scheduled from
    // their journaled CHAINED_INVOKE scopes like any other Task's.
    // Serverless Workflow subflows as child executions (waited for, and started without
    // waiting) run by their own deciders end as the cases expect.
    assert!(
        with_children.len() >= 10,
        "only {} cases ran subflows as child executions: {with_children:?}",
        with_children.len()
    );
    assert!(with_children.iter().any(|n| n == "sw/feat/subflow-no-wait"), "{with_children:?}");
    let distributed_with_tasks = with_map.iter().filter(|n| n.starts_with("map/distributed-result-writer")).count();
    assert!(distributed_with_tasks >= 2, "the DISTRIBUTED Maps with Tasks did not run: {with_map:?}");
}

/// The workflows of the Serverless Workflow subflows `workflow` starts (nested ones included), by
/// `workflowId`: the workflow type a `"subflows": {"*": {}}` decider starts each as.
fn subflow_workflows(workflow: &Workflow) -> HashMap<String, Workflow> {
    fn walk(m: &StateMachine, out: &mut HashMap<String, Workflow>) {
        for s in &m.states {
            match &s.kind {
                StateKind::Sw(sw) => match &sw.kind {
                    wfc_ir::sw::SwKind::Subflow { workflow_id, workflow: Some(workflow), .. }
                        if !out.contains_key(workflow_id) =>
                    {
                        out.insert(workflow_id.clone(), (**workflow).clone());
                        walk(&workflow.machine, out);
                    }
                    wfc_ir::sw::SwKind::ForEach { body: wfc_ir::sw::Body::Workflow(w), .. } => walk(&w.machine, out),
                    wfc_ir::sw::SwKind::Parallel { branches, .. } => {
                        for b in branches {
                            if let wfc_ir::sw::Body::Workflow(w) = &b.body {
                                walk(&w.machine, out);
                            }
                        }
                    }
                    _ => {}
                },
                StateKind::Parallel(p) => p.branches.iter().for_each(|b| walk(b, out)),
                StateKind::Map(m) => walk(&m.item_processor, out),
                _ => {}
            }
        }
    }
    let mut out = HashMap::new();
    walk(&workflow.machine, &mut out);
    out
}

fn has_map(m: &StateMachine) -> bool {
    m.states.iter().any(|s| match &s.kind {
        StateKind::Map(_) => true,
        StateKind::Parallel(p) => p.branches.iter().any(has_map),
        _ => false,
    })
}

// ---------------------------------------------------------------------------------------------
// Golden histories
// ---------------------------------------------------------------------------------------------

/// The e-commerce example of swf-deciders.md as a States Language definition.
const ECOMMERCE: &str = r#"{
  "StartAt": "VerifyOrder",
  "States": {
    "VerifyOrder": { "Type": "Task", "Resource": "arn:aws:states:us-east-1:123456789012:activity:VerifyOrderActivity", "Next": "ChargeCreditCard" },
    "ChargeCreditCard": { "Type": "Task", "Resource": "arn:aws:states:us-east-1:123456789012:activity:ChargeCreditCardActivity",
      "TimeoutSeconds": 300, "HeartbeatSeconds": 60, "Next": "ShipOrder" },
    "ShipOrder": { "Type": "Task", "Resource": "arn:aws:states:us-east-1:123456789012:activity:ShipOrderActivity", "Next": "RecordOrderCompletion" },
    "RecordOrderCompletion": { "Type": "Task", "Resource": "arn:aws:states:us-east-1:123456789012:activity:RecordOrderCompletion", "End": true }
  }
}"#;

/// The first decision task of the e-commerce example, exactly as swf-deciders.md shows it
/// (reverse order, a non-JSON input string).
fn ecommerce_first_task() -> Value {
    json!({
        "taskToken": "12342e17-80f6-FAKE-TASK-TOKEN32f0223",
        "startedEventId": 3,
        "previousStartedEventId": 0,
        "workflowExecution": { "workflowId": "customerOrder-1", "runId": "run-1" },
        "workflowType": { "name": "customerOrderWorkflow", "version": "1.0" },
        "events": [
            { "decisionTaskStartedEventAttributes": { "identity": "Decider01", "scheduledEventId": 2 }, "eventId": 3, "eventTimestamp": 1326593394.566, "eventType": "DecisionTaskStarted" },
            { "decisionTaskScheduledEventAttributes": { "startToCloseTimeout": "600", "taskList": { "name": "specialTaskList" } }, "eventId": 2, "eventTimestamp": 1326592619.474, "eventType": "DecisionTaskScheduled" },
            { "eventId": 1, "eventTimestamp": 1326592619.474, "eventType": "WorkflowExecutionStarted", "workflowExecutionStartedEventAttributes": {
                "childPolicy": "TERMINATE", "executionStartToCloseTimeout": "3600", "input": "data-used-decider-for-first-task",
                "parentInitiatedEventId": 0, "tagList": ["music purchase", "digital", "ricoh-the-dog"], "taskList": { "name": "specialTaskList" },
                "taskStartToCloseTimeout": "600", "workflowType": { "name": "customerOrderWorkflow", "version": "1.0" } } }
        ]
    })
}

#[test]
fn ecommerce_first_decision_schedules_verify_order() {
    let wf = load(ECOMMERCE);
    let config: SwfConfig =
        serde_json::from_value(json!({ "activityVersion": "1.1", "taskList": "CC_TASKS" })).unwrap();
    let response = swf::decide(&wf, &ecommerce_first_task(), &config).unwrap();
    assert_eq!(
        response,
        json!({
            "taskToken": "12342e17-80f6-FAKE-TASK-TOKEN32f0223",
            "decisions": [
                { "decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": {
                    "activityType": { "name": "VerifyOrderActivity", "version": "1.1" },
                    "activityId": "VerifyOrder#1.0",
                    "control": "VerifyOrder#1.0",
                    "input": "\"data-used-decider-for-first-task\"",
                    "scheduleToStartTimeout": "NONE",
                    "scheduleToCloseTimeout": "NONE",
                    "startToCloseTimeout": "NONE",
                    "heartbeatTimeout": "NONE",
                    "taskList": { "name": "CC_TASKS" }
                } },
                { "decisionType": "RecordMarker", "recordMarkerDecisionAttributes": {
                    "markerName": "wfc.state",
                    "details": "{\"scheduled\":[\"VerifyOrder#1.0\"],\"waiting\":1,\"finished\":0}"
                } }
            ]
        })
    );
}

/// Extends the e-commerce history: VerifyOrder completed, so ChargeCreditCard is next, with the
/// state's TimeoutSeconds/HeartbeatSeconds as SWF timeouts; then the rest to the close.
#[test]
fn ecommerce_runs_activity_by_activity_to_completion() {
    let wf = load(ECOMMERCE);
    let mut task = ecommerce_first_task();
    let mut events: Vec<Value> = task["events"].as_array().unwrap().iter().rev().cloned().collect();
    let mut ts = 1326593400.0;
    let activities = ["VerifyOrder", "ChargeCreditCard", "ShipOrder", "RecordOrderCompletion"];
    for (i, name) in activities.iter().enumerate() {
        let n = events.len() as u64;
        task["events"] = Value::Array(events.clone());
        let response = swf::decide(&wf, &task, &SwfConfig::default()).unwrap();
        let scheduled = decision(&response, "ScheduleActivityTask");
        assert_eq!(scheduled.len(), 1, "{response:#}");
        assert_eq!(scheduled[0]["activityId"], json!(format!("{name}#1.0")));
        if *name == "ChargeCreditCard" {
            assert_eq!(scheduled[0]["startToCloseTimeout"], "300");
            assert_eq!(scheduled[0]["heartbeatTimeout"], "60");
            assert_eq!(scheduled[0]["activityType"]["name"], "ChargeCreditCardActivity");
        }
        ts += 10.0;
        events.push(event(
            n + 1,
            ts,
            "DecisionTaskCompleted",
            json!({ "scheduledEventId": n - 1, "startedEventId": n }),
        ));
        let mut attrs = scheduled[0].clone();
        attrs["decisionTaskCompletedEventId"] = json!(n + 1);
        events.push(event(n + 2, ts, "ActivityTaskScheduled", attrs));
        events.push(event(n + 3, ts, "ActivityTaskStarted", json!({ "scheduledEventId": n + 2 })));
        events.push(event(
            n + 4,
            ts,
            "ActivityTaskCompleted",
            json!({ "scheduledEventId": n + 2, "startedEventId": n + 3, "result": json!({ "step": i }).to_string() }),
        ));
        events.push(event(n + 5, ts, "DecisionTaskScheduled", json!({ "taskList": { "name": "specialTaskList" } })));
        events.push(event(n + 6, ts, "DecisionTaskStarted", json!({ "scheduledEventId": n + 5 })));
    }
    task["events"] = Value::Array(events);
    let response = swf::decide(&wf, &task, &SwfConfig::default()).unwrap();
    assert_eq!(types(&response), ["CompleteWorkflowExecution"]);
    assert_eq!(decision(&response, "CompleteWorkflowExecution")[0]["result"], json!({ "step": 3 }).to_string());
}

const RETRY: &str = r#"{
  "StartAt": "Charge",
  "States": {
    "Charge": { "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Charge",
      "Retry": [ { "ErrorEquals": ["Busy"], "IntervalSeconds": 5, "BackoffRate": 2, "MaxAttempts": 2 } ],
      "Catch": [ { "ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Refund" } ],
      "End": true },
    "Refund": { "Type": "Pass", "End": true }
  }
}"#;

fn task_of(events: &[Value]) -> Value {
    json!({ "taskToken": "t", "startedEventId": events.len(), "workflowExecution": { "workflowId": "wf-1", "runId": "r" },
            "workflowType": { "name": "wf", "version": "1" }, "events": events })
}

#[test]
fn retries_wait_on_timers_and_the_catch_follows_the_last_failure() {
    let wf = load(RETRY);
    let config: SwfConfig = serde_json::from_value(json!({ "lambda": true })).unwrap();
    let mut h = History::start("wf-1", &json!({ "order": 7 }));
    let mut t = 1000.0;
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &config).unwrap();

    // Attempt 0 is a Lambda function.
    let r = decide(&h);
    let lambda = decision(&r, "ScheduleLambdaFunction");
    assert_eq!(lambda[0]["id"], "Charge#1.0");
    assert_eq!(lambda[0]["name"], "arn:aws:lambda:us-east-1:123456789012:function:Charge");
    let ids = h.accept(t, &r);
    for (n, backoff) in [(0u32, "5"), (1, "10")] {
        t += 1.0;
        let s = h.add(t, "LambdaFunctionStarted", json!({ "scheduledEventId": ids[0] }));
        let _ = s;
        // Each attempt's scheduled event is the first id the last accept returned.
        let sched = h.events.iter().rev().find(|e| e["eventType"] == "LambdaFunctionScheduled").unwrap()["eventId"]
            .as_u64()
            .unwrap();
        h.add(
            t,
            "LambdaFunctionFailed",
            json!({ "scheduledEventId": sched, "startedEventId": s, "reason": "Busy", "details": format!("try {n}") }),
        );
        h.decision_task(t);
        // The back-off is an SWF timer of the retrier's interval.
        let r = decide(&h);
        assert_eq!(types(&r), ["StartTimer", "RecordMarker"], "{r:#}");
        let timer = decision(&r, "StartTimer")[0];
        assert_eq!(timer["startToFireTimeout"], backoff);
        assert_eq!(timer["timerId"], format!("Charge#1.retry{}", n + 1));
        // Replaying the same history gives the same decisions.
        assert_eq!(decide(&h), r);
        let started = h.accept(t, &r)[0];
        t += backoff.parse::<f64>().unwrap();
        h.add(t, "TimerFired", json!({ "timerId": timer["timerId"], "startedEventId": started }));
        h.decision_task(t);
        let r = decide(&h);
        assert_eq!(decision(&r, "ScheduleLambdaFunction")[0]["id"], format!("Charge#1.{}", n + 1));
        h.accept(t, &r);
    }
    // The third attempt fails too: retries are exhausted and the Catch goes to Refund.
    let sched = h.events.iter().rev().find(|e| e["eventType"] == "LambdaFunctionScheduled").unwrap()["eventId"]
        .as_u64()
        .unwrap();
    let s = h.add(t, "LambdaFunctionStarted", json!({ "scheduledEventId": sched }));
    h.add(
        t,
        "LambdaFunctionFailed",
        json!({ "scheduledEventId": sched, "startedEventId": s, "reason": "Busy", "details": "try 2" }),
    );
    h.decision_task(t);
    let r = decide(&h);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"]);
    let result: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!({ "order": 7, "error": { "Error": "Busy", "Cause": "try 2" } }));
}

const PARALLEL: &str = r#"{
  "StartAt": "Both",
  "States": {
    "Both": { "Type": "Parallel", "End": true,
      "Catch": [ { "ErrorEquals": ["States.ALL"], "Next": "Failed" } ],
      "Branches": [
        { "StartAt": "Left", "States": { "Left": { "Type": "Task", "Resource": "arn:aws:states:::activity:left", "End": true } } },
        { "StartAt": "Nap", "States": { "Nap": { "Type": "Wait", "Seconds": 30, "Next": "Right" },
                                        "Right": { "Type": "Task", "Resource": "arn:aws:states:::activity:right", "End": true } } }
      ] },
    "Failed": { "Type": "Fail", "Error": "Both.Failed" }
  }
}"#;

#[test]
fn parallel_branches_are_concurrent_activities_and_a_failure_cancels_the_rest() {
    let wf = load(PARALLEL);
    let mut h = History::start("wf-1", &json!({ "x": 1 }));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    // Branch 0's activity and branch 1's Wait timer, in branch order, in one decision.
    assert_eq!(types(&r), ["ScheduleActivityTask", "StartTimer", "RecordMarker"], "{r:#}");
    // `/` is not allowed in SWF ids: the id is sanitized and hashed; control keeps it whole.
    let activity_id = swf::swf_id("Both#1.0/0/Left#1.0");
    assert!(activity_id.starts_with("Both#1.0.0.Left#1.0-"), "{activity_id}");
    assert_eq!(decision(&r, "ScheduleActivityTask")[0]["activityId"], activity_id);
    assert_eq!(decision(&r, "ScheduleActivityTask")[0]["control"], "Both#1.0/0/Left#1.0");
    assert_eq!(decision(&r, "StartTimer")[0]["control"], "Both#1.0/1/Nap#1");
    assert_eq!(decision(&r, "StartTimer")[0]["startToFireTimeout"], "30");
    let ids = h.accept(1000.0, &r);
    // Left fails while the timer runs: the Parallel fails, the timer is cancelled, and the
    // Catch's Fail state closes the workflow, last.
    let s = h.add(1001.0, "ActivityTaskStarted", json!({ "scheduledEventId": ids[0] }));
    h.add(
        1002.0,
        "ActivityTaskFailed",
        json!({ "scheduledEventId": ids[0], "startedEventId": s, "reason": "Boom", "details": "left broke" }),
    );
    h.decision_task(1002.0);
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["CancelTimer", "FailWorkflowExecution"], "{r:#}");
    assert_eq!(decision(&r, "CancelTimer")[0]["timerId"], swf::swf_id("Both#1.0/1/Nap#1"));
    assert_eq!(decision(&r, "FailWorkflowExecution")[0]["reason"], "Both.Failed");
}

const MAP: &str = r#"{
  "StartAt": "Fan",
  "States": {
    "Fan": { "Type": "Map", "ItemsPath": "$.orders", "MaxConcurrency": 2,
      "ItemSelector": { "order.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index", "region.$": "$.region" },
      "ItemProcessor": { "ProcessorConfig": { "Mode": "INLINE" }, "StartAt": "Work", "States": {
        "Work": { "Type": "Task", "Resource": "arn:aws:states:::activity:work",
          "Retry": [ { "ErrorEquals": ["Busy"], "IntervalSeconds": 3, "MaxAttempts": 1 } ], "End": true } } },
      "ResultSelector": { "count.$": "States.ArrayLength($)", "all.$": "$" },
      "ResultPath": "$.out", "End": true }
  }
}"#;

fn controls(response: &Value, decision_type: &str) -> Vec<String> {
    decision(response, decision_type).iter().map(|d| d["control"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn map_iterations_are_activities_within_max_concurrency_and_a_failed_one_is_retried() {
    let wf = load(MAP);
    let input = json!({ "region": "eu", "orders": [ { "id": "a" }, { "id": "b" }, { "id": "c" } ] });
    let mut h = History::start("wf-1", &input);
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();

    // MaxConcurrency 2: two iterations are scheduled, the third waits for a free slot.
    let r = decide(&h);
    assert_eq!(types(&r), ["ScheduleActivityTask", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
    assert_eq!(controls(&r, "ScheduleActivityTask"), ["Fan#1.0/0/Work#1.0", "Fan#1.0/1/Work#1.0"]);
    let first = decision(&r, "ScheduleActivityTask")[0];
    assert_eq!(first["activityId"], swf::swf_id("Fan#1.0/0/Work#1.0"));
    assert_eq!(first["activityType"]["name"], "work");
    // ItemSelector: each iteration's input.
    let input0: Value = serde_json::from_str(first["input"].as_str().unwrap()).unwrap();
    assert_eq!(input0, json!({ "order": { "id": "a" }, "index": 0, "region": "eu" }));
    let marker: Value = serde_json::from_str(decision(&r, "RecordMarker")[0]["details"].as_str().unwrap()).unwrap();
    assert_eq!(marker["scheduled"], json!(["Fan#1.0/0/Work#1.0", "Fan#1.0/1/Work#1.0"]));
    h.accept(1000.0, &r);

    // Iteration 0 fails with a retried error: its back-off is a timer and it keeps its slot,
    // so iteration 2 is not scheduled yet.
    let s0 = h.scheduled("Fan#1.0/0/Work#1.0");
    let started = h.add(1001.0, "ActivityTaskStarted", json!({ "scheduledEventId": s0 }));
    h.add(
        1002.0,
        "ActivityTaskFailed",
        json!({ "scheduledEventId": s0, "startedEventId": started, "reason": "Busy", "details": "try later" }),
    );
    h.decision_task(1002.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["StartTimer", "RecordMarker"], "{r:#}");
    let timer = decision(&r, "StartTimer")[0];
    assert_eq!(timer["control"], "Fan#1.0/0/Work#1.retry1");
    assert_eq!(timer["startToFireTimeout"], "3");
    let timer_started = h.accept(1002.0, &r)[0];

    // Iteration 1 succeeds: its slot goes to iteration 2.
    let s1 = h.scheduled("Fan#1.0/1/Work#1.0");
    let started = h.add(1003.0, "ActivityTaskStarted", json!({ "scheduledEventId": s1 }));
    h.add(
        1003.0,
        "ActivityTaskCompleted",
        json!({ "scheduledEventId": s1, "startedEventId": started, "result": "{\"done\":\"b\"}" }),
    );
    h.decision_task(1003.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["ScheduleActivityTask", "RecordMarker"], "{r:#}");
    assert_eq!(controls(&r, "ScheduleActivityTask"), ["Fan#1.0/2/Work#1.0"]);
    // Another decider process with only the history decides the same.
    assert_eq!(decide(&h), r);
    h.accept(1003.0, &r);

    // The back-off ends: iteration 0's second attempt.
    h.add(1005.0, "TimerFired", json!({ "timerId": timer["timerId"], "startedEventId": timer_started }));
    h.decision_task(1005.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["ScheduleActivityTask", "RecordMarker"], "{r:#}");
    assert_eq!(controls(&r, "ScheduleActivityTask"), ["Fan#1.0/0/Work#1.1"]);
    h.accept(1005.0, &r);

    for (op, result) in [("Fan#1.0/2/Work#1.0", r#"{"done":"c"}"#), ("Fan#1.0/0/Work#1.1", r#"{"done":"a"}"#)] {
        let s = h.scheduled(op);
        let started = h.add(1006.0, "ActivityTaskStarted", json!({ "scheduledEventId": s }));
        h.add(
            1007.0,
            "ActivityTaskCompleted",
            json!({ "scheduledEventId": s, "startedEventId": started, "result": result }),
        );
    }
    h.decision_task(1007.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    let result: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    // Results in item order (not completion order), through ResultSelector and ResultPath.
    let mut expected = input.clone();
    expected["out"] = json!({ "count": 3, "all": [ { "done": "a" }, { "done": "b" }, { "done": "c" } ] });
    assert_eq!(result, expected);
}

/// A DISTRIBUTED Map whose children run a Task: each child is a journaled operation
/// (`Fan#1.0/<i>`), its Task an activity under it, at most MaxConcurrency children open.
const DISTRIBUTED_MAP: &str = r#"{
  "StartAt": "Fan",
  "States": {
    "Fan": {
      "Type": "Map", "MaxConcurrency": 2, "ItemsPath": "$.items", "End": true,
      "ItemProcessor": {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": "arn:aws:states:::activity:work", "End": true}}
      }
    }
  }
}"#;

#[test]
fn distributed_map_children_schedule_their_tasks_as_activities() {
    let wf = load(DISTRIBUTED_MAP);
    let mut h = History::start("wf-1", &json!({ "items": ["a", "b", "c"] }));
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    let r = decide(&h);
    assert_eq!(types(&r), ["ScheduleActivityTask", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
    assert_eq!(controls(&r, "ScheduleActivityTask"), ["Fan#1.0/0/Work#1.0", "Fan#1.0/1/Work#1.0"]);
    let first = decision(&r, "ScheduleActivityTask")[0];
    assert_eq!(first["input"], "\"a\"");
    h.accept(1000.0, &r);

    // Child 1 finishes: child 2 takes its slot.
    let s1 = h.scheduled("Fan#1.0/1/Work#1.0");
    let started = h.add(1001.0, "ActivityTaskStarted", json!({ "scheduledEventId": s1 }));
    h.add(
        1002.0,
        "ActivityTaskCompleted",
        json!({ "scheduledEventId": s1, "startedEventId": started, "result": "\"B\"" }),
    );
    h.decision_task(1002.0);
    let r = decide(&h);
    assert_eq!(controls(&r, "ScheduleActivityTask"), ["Fan#1.0/2/Work#1.0"], "{r:#}");
    assert_eq!(decide(&h), r);
    h.accept(1002.0, &r);

    for (op, result) in [("Fan#1.0/2/Work#1.0", "\"C\""), ("Fan#1.0/0/Work#1.0", "\"A\"")] {
        let s = h.scheduled(op);
        let started = h.add(1003.0, "ActivityTaskStarted", json!({ "scheduledEventId": s }));
        h.add(
            1004.0,
            "ActivityTaskCompleted",
            json!({ "scheduledEventId": s, "startedEventId": started, "result": result }),
        );
    }
    h.decision_task(1004.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    let result: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!(["A", "B", "C"]));
}

#[test]
fn a_cancel_request_cancels_open_work_then_the_execution() {
    let wf = load(PARALLEL);
    let mut h = History::start("wf-1", &json!({}));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    h.accept(1000.0, &r);
    h.add(1005.0, "WorkflowExecutionCancelRequested", json!({ "cause": "Customer canceled order" }));
    h.decision_task(1005.0);
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["RequestCancelActivityTask", "CancelTimer", "CancelWorkflowExecution"], "{r:#}");
    assert_eq!(decision(&r, "CancelWorkflowExecution")[0]["details"], "Customer canceled order");
}

#[test]
fn paginated_history_in_any_page_order_gives_the_same_decisions() {
    let wf = load(PARALLEL);
    let mut h = History::start("wf-1", &json!({}));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    let ids = h.accept(1000.0, &r);
    h.add(1030.0, "TimerFired", json!({ "timerId": swf::swf_id("Both#1.0/1/Nap#1"), "startedEventId": ids[1] }));
    h.decision_task(1030.0);
    let whole = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(decision(&whole, "ScheduleActivityTask")[0]["control"], "Both#1.0/1/Right#1.0");
    let all = task_of(&h.events);
    let newest_first: Vec<Value> = h.events.iter().rev().cloned().collect();
    let pages: Vec<Value> = newest_first
        .chunks(3)
        .map(|c| {
            let mut p = all.clone();
            p["events"] = json!(c);
            p["nextPageToken"] = json!("more");
            p
        })
        .collect();
    assert_eq!(swf::decide(&wf, &Value::Array(pages.clone()), &SwfConfig::default()).unwrap(), whole);
    let mut shuffled = pages;
    shuffled.reverse();
    assert_eq!(swf::decide(&wf, &Value::Array(shuffled), &SwfConfig::default()).unwrap(), whole);
    // A page missing the start is refused, not guessed.
    let mut tail = all.clone();
    tail["events"] = json!(h.events[3..].to_vec());
    let err = swf::decide(&wf, &tail, &SwfConfig::default()).unwrap_err();
    assert!(err.to_string().contains("WorkflowExecutionStarted"), "{err}");
}

#[test]
fn refused_and_failed_decisions_are_handled() {
    let wf = load(ECOMMERCE);
    let mut h = History::start("wf-1", &json!({}));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    let completed = h.next_id();
    h.add(1000.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    // A rate limit passes: the same activity is scheduled again.
    h.add(1000.0, "ScheduleActivityTaskFailed", json!({ "activityId": "VerifyOrder#1.0", "activityType": { "name": "VerifyOrderActivity", "version": "1" }, "cause": "ACTIVITY_CREATION_RATE_EXCEEDED", "decisionTaskCompletedEventId": completed }));
    h.decision_task(1001.0);
    let again = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(decision(&again, "ScheduleActivityTask"), decision(&r, "ScheduleActivityTask"));
    // An unregistered type does not: the workflow fails with SWF's cause.
    h.add(1002.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    h.add(1002.0, "ScheduleActivityTaskFailed", json!({ "activityId": "VerifyOrder#1.0", "activityType": { "name": "VerifyOrderActivity", "version": "1" }, "cause": "ACTIVITY_TYPE_DOES_NOT_EXIST", "decisionTaskCompletedEventId": completed }));
    h.decision_task(1003.0);
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["FailWorkflowExecution"]);
    assert!(
        decision(&r, "FailWorkflowExecution")[0]["details"].as_str().unwrap().contains("ACTIVITY_TYPE_DOES_NOT_EXIST")
    );
}

const CHILD: &str = r#"{
  "StartAt": "Bill",
  "States": {
    "Bill": { "Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2",
      "Parameters": { "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:Billing", "Input": { "n.$": "$.n" } },
      "TimeoutSeconds": 60,
      "Retry": [ { "ErrorEquals": ["States.TaskFailed"], "IntervalSeconds": 1, "MaxAttempts": 3 } ],
      "Catch": [ { "ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "Done" } ],
      "ResultPath": "$.bill", "Next": "Done" },
    "Done": { "Type": "Pass", "End": true }
  }
}"#;

/// A timer of `secs` seconds was asked for: it fires, and a new decision task follows.
fn fire_timer(h: &mut History, r: &Value, t: f64, secs: &str) {
    let timer = decision(r, "StartTimer")[0].clone();
    assert_eq!(timer["startToFireTimeout"], secs, "{r:#}");
    let started = h.accept(t, r)[0];
    h.add(t, "TimerFired", json!({ "timerId": timer["timerId"], "startedEventId": started }));
    h.decision_task(t);
}

#[test]
fn child_workflows_start_fail_time_out_complete_and_are_cancelled() {
    let wf = load(CHILD);
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    let mut h = History::start("wf-1", &json!({ "n": 3 }));

    // startExecution: a child workflow of the StateMachineArn's type, Parameters.Input as input.
    let r = decide(&h);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "RecordMarker"], "{r:#}");
    let start = decision(&r, "StartChildWorkflowExecution")[0];
    assert_eq!(start["workflowType"], json!({ "name": "Billing", "version": "1" }));
    assert_eq!(start["workflowId"], "wf-1--Bill#1.0");
    assert_eq!(start["control"], "Bill#1.0");
    assert_eq!(start["input"], r#"{"n":3}"#);
    assert_eq!(start["executionStartToCloseTimeout"], "60");
    assert_eq!(start["childPolicy"], "TERMINATE");
    h.accept(1000.0, &r);

    // SWF cannot start it: a failed attempt (States.TaskFailed), retried after a timer.
    let i0 = h.initiated("Bill#1.0");
    h.add(
        1001.0,
        "StartChildWorkflowExecutionFailed",
        json!({ "initiatedEventId": i0, "workflowId": "wf-1--Bill#1.0", "cause": "WORKFLOW_ALREADY_RUNNING",
                "workflowType": { "name": "Billing", "version": "1" } }),
    );
    h.decision_task(1001.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["StartTimer", "RecordMarker"], "{r:#}");
    fire_timer(&mut h, &r, 1002.0, "1");
    let r = decide(&h);
    assert_eq!(decision(&r, "StartChildWorkflowExecution")[0]["workflowId"], "wf-1--Bill#1.1");
    h.accept(1002.0, &r);

    // The second child starts, then is terminated: another failed attempt, another back-off.
    let i1 = h.initiated("Bill#1.1");
    let child = json!({ "workflowId": "wf-1--Bill#1.1", "runId": "child-run-1" });
    h.add(1003.0, "ChildWorkflowExecutionStarted", json!({ "initiatedEventId": i1, "workflowExecution": child }));
    h.add(1004.0, "ChildWorkflowExecutionTerminated", json!({ "initiatedEventId": i1, "workflowExecution": child }));
    h.decision_task(1004.0);
    let r = decide(&h);
    fire_timer(&mut h, &r, 1006.0, "2");
    let r = decide(&h);
    assert_eq!(decision(&r, "StartChildWorkflowExecution")[0]["workflowId"], "wf-1--Bill#1.2");

    // Branch A: the third child times out: States.Timeout, which the Catch takes.
    let mut timed_out = h.clone();
    timed_out.accept(1006.0, &r);
    let i2 = timed_out.initiated("Bill#1.2");
    let child = json!({ "workflowId": "wf-1--Bill#1.2", "runId": "child-run-2" });
    timed_out.add(
        1007.0,
        "ChildWorkflowExecutionStarted",
        json!({ "initiatedEventId": i2, "workflowExecution": child }),
    );
    timed_out.add(
        1067.0,
        "ChildWorkflowExecutionTimedOut",
        json!({ "initiatedEventId": i2, "workflowExecution": child, "timeoutType": "START_TO_CLOSE" }),
    );
    timed_out.decision_task(1067.0);
    let r2 = decide(&timed_out);
    assert_eq!(types(&r2), ["CompleteWorkflowExecution"], "{r2:#}");
    let result: Value =
        serde_json::from_str(decision(&r2, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"]["Error"], "States.Timeout");

    // Branch B: the workflow is cancelled while the child runs: the child is asked to cancel
    // (with its run id), then the workflow.
    let mut cancelled = h.clone();
    cancelled.accept(1006.0, &r);
    let i2 = cancelled.initiated("Bill#1.2");
    cancelled.add(
        1007.0,
        "ChildWorkflowExecutionStarted",
        json!({ "initiatedEventId": i2, "workflowExecution": child }),
    );
    cancelled.add(1008.0, "WorkflowExecutionCancelRequested", json!({ "cause": "operator" }));
    cancelled.decision_task(1008.0);
    let r2 = decide(&cancelled);
    assert_eq!(types(&r2), ["RequestCancelExternalWorkflowExecution", "CancelWorkflowExecution"], "{r2:#}");
    assert_eq!(
        decision(&r2, "RequestCancelExternalWorkflowExecution")[0],
        &json!({ "workflowId": "wf-1--Bill#1.2", "runId": "child-run-2" })
    );

    // Branch C: the child completes: its result is the Task's result.
    h.accept(1006.0, &r);
    let i2 = h.initiated("Bill#1.2");
    h.add(1007.0, "ChildWorkflowExecutionStarted", json!({ "initiatedEventId": i2, "workflowExecution": child }));
    h.add(
        1008.0,
        "ChildWorkflowExecutionCompleted",
        json!({ "initiatedEventId": i2, "workflowExecution": child, "result": r#"{"paid":true}"# }),
    );
    h.decision_task(1008.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["CompleteWorkflowExecution"], "{r:#}");
    let result: Value =
        serde_json::from_str(decision(&r, "CompleteWorkflowExecution")[0]["result"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!({ "n": 3, "bill": { "paid": true } }));
}

const LAMBDA_THEN_WAIT: &str = r#"{
  "StartAt": "Charge",
  "States": {
    "Charge": { "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Charge", "TimeoutSeconds": 30,
      "Retry": [ { "ErrorEquals": ["States.ALL"], "IntervalSeconds": 2, "MaxAttempts": 2 } ],
      "Catch": [ { "ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Nap" } ], "Next": "Nap" },
    "Nap": { "Type": "Wait", "Seconds": 10, "End": true }
  }
}"#;

/// A child workflow in one Parallel branch, an activity in the other; the Catch waits.
const CHILD_IN_PARALLEL: &str = r#"{
  "StartAt": "Both",
  "States": {
    "Both": { "Type": "Parallel", "Branches": [
        { "StartAt": "Bill", "States": { "Bill": { "Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2",
            "Parameters": { "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:Billing" }, "End": true } } },
        { "StartAt": "Check", "States": { "Check": { "Type": "Task", "Resource": "arn:aws:states:us-east-1:123456789012:activity:Check", "End": true } } }
      ],
      "Catch": [ { "ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Pause" } ], "Next": "Pause" },
    "Pause": { "Type": "Wait", "Seconds": 5, "End": true }
  }
}"#;

/// A child no line of control waits for any more (its sibling branch failed) is cancelled with
/// `RequestCancelExternalWorkflowExecution` (with its run id once started), asked once.
#[test]
fn a_child_workflow_abandoned_by_a_failed_sibling_branch_is_cancelled_once() {
    let wf = load(CHILD_IN_PARALLEL);
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    let mut h = History::start("wf-1", &json!({}));
    let r = decide(&h);
    assert_eq!(types(&r), ["StartChildWorkflowExecution", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
    h.accept(1000.0, &r);
    let child_id = decision(&r, "StartChildWorkflowExecution")[0]["workflowId"].clone();
    let child = json!({ "workflowId": child_id, "runId": "child-run" });
    let initiated = h.initiated("Both#1.0/0/Bill#1.0");
    h.add(
        1001.0,
        "ChildWorkflowExecutionStarted",
        json!({ "initiatedEventId": initiated, "workflowExecution": child }),
    );
    let check = h.scheduled("Both#1.0/1/Check#1.0");
    h.add(
        1002.0,
        "ActivityTaskFailed",
        json!({ "scheduledEventId": check, "startedEventId": check, "reason": "Bad", "details": "no" }),
    );
    h.decision_task(1002.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["RequestCancelExternalWorkflowExecution", "StartTimer", "RecordMarker"], "{r:#}");
    assert_eq!(decision(&r, "RequestCancelExternalWorkflowExecution")[0], &child);
    h.accept(1002.0, &r);
    // Asked once: the next decision task does not ask again.
    let asked = h.events.iter().find(|e| e["eventType"] == "RequestCancelExternalWorkflowExecutionInitiated").unwrap()
        ["eventId"]
        .clone();
    h.add(
        1003.0,
        "ExternalWorkflowExecutionCancelRequested",
        json!({ "initiatedEventId": asked, "workflowExecution": child }),
    );
    h.decision_task(1003.0);
    let r = decide(&h);
    assert!(!types(&r).iter().any(|t| t == "RequestCancelExternalWorkflowExecution"), "{r:#}");
}

#[test]
fn lambda_failures_and_refused_timers_are_mapped() {
    let wf = load(LAMBDA_THEN_WAIT);
    let config: SwfConfig = serde_json::from_value(json!({ "lambda": true })).unwrap();
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &config).unwrap();
    let mut h = History::start("wf-1", &json!({}));
    let r = decide(&h);
    assert_eq!(decision(&r, "ScheduleLambdaFunction")[0]["startToCloseTimeout"], "30");
    let completed = h.next_id();
    h.add(1000.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    // A passing refusal of ScheduleLambdaFunction: scheduled again, identically.
    h.add(
        1000.0,
        "ScheduleLambdaFunctionFailed",
        json!({ "id": "Charge#1.0", "name": "arn:aws:lambda:us-east-1:123456789012:function:Charge",
                "cause": "OPEN_LAMBDA_FUNCTIONS_LIMIT_EXCEEDED", "decisionTaskCompletedEventId": completed }),
    );
    h.decision_task(1001.0);
    let again = decide(&h);
    assert_eq!(decision(&again, "ScheduleLambdaFunction"), decision(&r, "ScheduleLambdaFunction"));
    let ids = h.accept(1001.0, &again);

    // SWF could not start the function: a failed attempt (States.TaskFailed with SWF's cause).
    h.add(
        1002.0,
        "StartLambdaFunctionFailed",
        json!({ "scheduledEventId": ids[0], "cause": "ASSUME_ROLE_FAILED", "message": "no role" }),
    );
    h.decision_task(1002.0);
    let r = decide(&h);
    fire_timer(&mut h, &r, 1004.0, "2");
    let r = decide(&h);
    let ids = h.accept(1004.0, &r);
    // The second attempt times out: States.Timeout, with the runtime's cause for TimeoutSeconds.
    let s = h.add(1005.0, "LambdaFunctionStarted", json!({ "scheduledEventId": ids[0] }));
    h.add(
        1035.0,
        "LambdaFunctionTimedOut",
        json!({ "scheduledEventId": ids[0], "startedEventId": s, "timeoutType": "START_TO_CLOSE" }),
    );
    h.decision_task(1035.0);
    let r = decide(&h);
    fire_timer(&mut h, &r, 1039.0, "4");
    let r = decide(&h);
    let ids = h.accept(1039.0, &r);
    // The third fails too: retries are spent, the Catch goes on to the Wait.
    let s = h.add(1040.0, "LambdaFunctionStarted", json!({ "scheduledEventId": ids[0] }));
    h.add(
        1041.0,
        "LambdaFunctionFailed",
        json!({ "scheduledEventId": ids[0], "startedEventId": s, "reason": "", "details": "card declined" }),
    );
    h.decision_task(1041.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["StartTimer", "RecordMarker"], "{r:#}");
    assert_eq!(decision(&r, "StartTimer")[0]["timerId"], "Nap#1");

    // A passing StartTimer refusal: asked again; a lasting one fails the workflow with the cause.
    let completed = h.add(1041.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    h.add(
        1041.0,
        "StartTimerFailed",
        json!({ "timerId": "Nap#1", "cause": "TIMER_CREATION_RATE_EXCEEDED", "decisionTaskCompletedEventId": completed }),
    );
    h.decision_task(1042.0);
    assert_eq!(decision(&decide(&h), "StartTimer"), decision(&r, "StartTimer"));
    let completed = h.add(1042.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    h.add(
        1042.0,
        "StartTimerFailed",
        json!({ "timerId": "Nap#1", "cause": "TIMER_ID_ALREADY_IN_USE", "decisionTaskCompletedEventId": completed }),
    );
    h.decision_task(1043.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    let fail = decision(&r, "FailWorkflowExecution")[0];
    assert_eq!(fail["reason"], "wfc.DecisionFailed");
    assert!(fail["details"].as_str().unwrap().contains("TIMER_ID_ALREADY_IN_USE"), "{fail}");
}

/// A cancel SWF refuses (the activity or timer closed meanwhile) is not asked again.
#[test]
fn refused_cancels_are_not_asked_again() {
    let wf = load(PARALLEL);
    let mut h = History::start("wf-1", &json!({}));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    h.accept(1000.0, &r);
    h.add(1001.0, "WorkflowExecutionCancelRequested", json!({ "cause": "stop" }));
    h.decision_task(1001.0);
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["RequestCancelActivityTask", "CancelTimer", "CancelWorkflowExecution"], "{r:#}");
    let activity_id = decision(&r, "RequestCancelActivityTask")[0]["activityId"].clone();
    let timer_id = decision(&r, "CancelTimer")[0]["timerId"].clone();
    // SWF refuses both cancels and the closing decision (a new event raced it).
    let completed = h.add(1001.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    h.add(
        1001.0,
        "RequestCancelActivityTaskFailed",
        json!({ "activityId": activity_id, "cause": "ACTIVITY_ID_UNKNOWN", "decisionTaskCompletedEventId": completed }),
    );
    h.add(
        1001.0,
        "CancelTimerFailed",
        json!({ "timerId": timer_id, "cause": "TIMER_ID_UNKNOWN", "decisionTaskCompletedEventId": completed }),
    );
    h.add(
        1001.0,
        "CancelWorkflowExecutionFailed",
        json!({ "cause": "UNHANDLED_DECISION", "decisionTaskCompletedEventId": completed }),
    );
    h.decision_task(1002.0);
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["CancelWorkflowExecution"], "{r:#}");
}

/// A refused FailWorkflowExecution is made again; a refused RecordMarker changes nothing (the
/// marker is for people reading the history, never read back).
#[test]
fn a_refused_fail_or_marker_is_harmless() {
    let wf = load(
        r#"{"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": "arn:aws:states:::activity:work", "End": true}}}"#,
    );
    let decide = |h: &History| swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    let mut h = History::start("wf-1", &json!({}));
    let r = decide(&h);
    assert_eq!(types(&r), ["ScheduleActivityTask", "RecordMarker"]);
    let completed = h.next_id();
    let ids = h.accept(1000.0, &r);
    // SWF refused the marker (scheduled event ids[0] stands).
    h.events.pop();
    h.add(1000.0, "RecordMarkerFailed", json!({ "markerName": "wfc.state", "cause": "OPERATION_NOT_PERMITTED", "decisionTaskCompletedEventId": completed }));
    let s = h.add(1001.0, "ActivityTaskStarted", json!({ "scheduledEventId": ids[0] }));
    h.add(
        1002.0,
        "ActivityTaskFailed",
        json!({ "scheduledEventId": ids[0], "startedEventId": s, "reason": "Broken", "details": "no" }),
    );
    h.decision_task(1002.0);
    let r = decide(&h);
    assert_eq!(types(&r), ["FailWorkflowExecution"], "{r:#}");
    let completed = h.add(1002.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    h.add(
        1002.0,
        "FailWorkflowExecutionFailed",
        json!({ "cause": "UNHANDLED_DECISION", "decisionTaskCompletedEventId": completed }),
    );
    h.add(1002.0, "WorkflowExecutionSignaled", json!({ "signalName": "poke", "input": "{}" }));
    h.decision_task(1003.0);
    assert_eq!(decide(&h)["decisions"], r["decisions"]);
}

#[test]
fn a_refused_closing_decision_is_made_again_from_the_newer_history() {
    let wf = load(r#"{"StartAt": "Done", "States": {"Done": {"Type": "Pass", "Result": {"ok": true}, "End": true}}}"#);
    let mut h = History::start("wf-1", &json!({}));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["CompleteWorkflowExecution"]);
    let completed = h.add(1000.0, "DecisionTaskCompleted", json!({ "scheduledEventId": 2, "startedEventId": 3 }));
    h.add(
        1000.0,
        "CompleteWorkflowExecutionFailed",
        json!({ "cause": "UNHANDLED_DECISION", "decisionTaskCompletedEventId": completed }),
    );
    h.add(1000.0, "WorkflowExecutionSignaled", json!({ "signalName": "poke", "input": "{}" }));
    h.decision_task(1000.0);
    assert_eq!(swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap()["decisions"], r["decisions"]);
    // A closed workflow gets no decisions.
    h.add(1001.0, "WorkflowExecutionCompleted", json!({ "result": "{}", "decisionTaskCompletedEventId": completed }));
    assert_eq!(swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap()["decisions"], json!([]));
}

#[test]
fn a_signal_completes_a_scheduled_task_and_the_activity_is_cancelled() {
    let wf = load(ECOMMERCE);
    let mut h = History::start("wf-1", &json!({}));
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    h.accept(1000.0, &r);
    h.add(1001.0, "WorkflowExecutionSignaled", json!({ "signalName": swf::TASK_SUCCESS_SIGNAL, "input": json!({ "id": "VerifyOrder#1.0", "output": { "verified": true } }).to_string() }));
    h.decision_task(1001.0);
    let r = swf::decide(&wf, &task_of(&h.events), &SwfConfig::default()).unwrap();
    assert_eq!(types(&r), ["RequestCancelActivityTask", "ScheduleActivityTask", "RecordMarker"], "{r:#}");
    assert_eq!(decision(&r, "ScheduleActivityTask")[0]["input"], json!({ "verified": true }).to_string());
}

#[test]
fn long_histories_continue_as_new_with_the_journal() {
    let wf = load(ECOMMERCE);
    let config: SwfConfig = serde_json::from_value(json!({ "continueAsNewAfterEvents": 8 })).unwrap();
    let mut h = History::start("wf-1", &json!({ "n": 1 }));
    let r = swf::decide(&wf, &task_of(&h.events), &config).unwrap();
    let ids = h.accept(1000.0, &r);
    let s = h.add(1001.0, "ActivityTaskStarted", json!({ "scheduledEventId": ids[0] }));
    h.add(
        1001.0,
        "ActivityTaskCompleted",
        json!({ "scheduledEventId": ids[0], "startedEventId": s, "result": "{\"v\":1}" }),
    );
    h.decision_task(1001.0);
    let r = swf::decide(&wf, &task_of(&h.events), &config).unwrap();
    assert_eq!(types(&r), ["ContinueAsNewWorkflowExecution"]);
    let input = decision(&r, "ContinueAsNewWorkflowExecution")[0]["input"].as_str().unwrap().to_owned();
    // The new run replays VerifyOrder from the carried journal and schedules ChargeCreditCard.
    let next = History::start("wf-1", &serde_json::from_str::<Value>(&input).unwrap());
    let r = swf::decide(&wf, &task_of(&next.events), &config).unwrap();
    let scheduled = decision(&r, "ScheduleActivityTask");
    assert_eq!(scheduled[0]["activityId"], "ChargeCreditCard#1.0");
    assert_eq!(scheduled[0]["input"], "{\"v\":1}");
}

// ---------------------------------------------------------------------------------------------
// Generated code decides exactly as the interpreter does
// ---------------------------------------------------------------------------------------------

wfc_runtime::include_workflow!("tests/adapters/fan_out.asl.json");

/// The IR `include_workflow!` lowered the definition at `path` to (generated code carries none),
/// for what reads the IR.
fn lowered(path: &str) -> wfc_ir::Workflow {
    wfc_build::load_file(path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

/// The decider never calls task handlers: every attempt is a decision or replays.
struct NoCalls;

impl fan_out::Handler for NoCalls {
    async fn charge(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider ran a task")
    }

    async fn ship(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider ran a task")
    }
}

#[test]
fn generated_code_makes_the_same_decisions_as_the_interpreter() {
    let workflow = lowered("tests/adapters/fan_out.asl.json");
    let mocks = parse_mocks(&json!({
        "Charge": [ { "throw": { "error": "Busy", "cause": "1" } }, { "return": { "ok": true } } ],
        "Ship": { "return": "shipped" }
    }))
    .unwrap();
    let mut sim = Sim::new(&workflow, "gen-1", &json!({ "order": 42 }), mocks, 0);
    sim.cross_check = Some(Box::new(|task: &Value| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let name = fan_out::DEFINITION_ID.workflow.into_owned();
        runtime
            .block_on(swf::decide_with(task, &SwfConfig::default(), &name, |input, options| {
                fan_out::run_with(&NoCalls, input, options)
            }))
            .unwrap()
    }));
    let closed = sim.run().unwrap();
    assert_eq!(closed.status, "SUCCEEDED", "{closed:?}");
    assert_eq!(closed.output, Some(json!([{ "ok": true }, "shipped"])));
    // The retry back-off (3 s) runs while the 10 s Wait does: 10 s in all.
    assert_eq!(closed.elapsed, 10.0);
}

wfc_runtime::include_workflow!("tests/adapters/map_fan_out.asl.json");

impl map_fan_out::Handler for NoCalls {
    async fn pack(&self, _input: Value, _ctx: wfc_runtime::TaskContext) -> Result<Value, wfc_runtime::TaskError> {
        panic!("a decider ran a task")
    }
}

#[test]
fn generated_code_makes_the_same_map_decisions_as_the_interpreter() {
    let workflow = lowered("tests/adapters/map_fan_out.asl.json");
    // The first Pack attempt is busy (retried after 4 s); the others answer with their input.
    let mocks =
        parse_mocks(&json!({ "Pack": [ { "throw": { "error": "Busy", "cause": "1" } }, { "echo": true } ] })).unwrap();
    let mut sim = Sim::new(&workflow, "gen-map-1", &json!({ "items": ["a", "b", "c", "d"] }), mocks, 0);
    sim.cross_check = Some(Box::new(|task: &Value| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        let name = map_fan_out::DEFINITION_ID.workflow.into_owned();
        runtime
            .block_on(swf::decide_with(task, &SwfConfig::default(), &name, |input, options| {
                map_fan_out::run_with(&NoCalls, input, options)
            }))
            .unwrap()
    }));
    let closed = sim.run().unwrap();
    assert_eq!(closed.status, "SUCCEEDED", "{closed:?}");
    let packed: Vec<Value> =
        ["a", "b", "c", "d"].iter().enumerate().map(|(i, s)| json!({ "sku": s, "at": i })).collect();
    assert_eq!(closed.output, Some(json!({ "items": ["a", "b", "c", "d"], "out": { "packed": packed } })));
    // Item 0's back-off (4 s) holds its slot while b, c and d share the other one.
    assert_eq!(closed.elapsed, 4.0);
}
