//! An Amazon SWF decider for a compiled workflow: a pure, deterministic function from a decision
//! task (the `PollForDecisionTask` response, pages merged) to the `RespondDecisionTaskCompleted`
//! request.
//!
//! It works by replay. The history is read into journal [`Operation`]s (an activity's outcome is
//! a `STEP`, a timer a `WAIT`, keyed by the operation id the decider put in the `control` field
//! when it scheduled them). The workflow then runs from its start on that journal with a
//! [`Suspender`] that parks every Task attempt and timer with no recorded outcome; whatever is
//! parked when no line of control can move becomes the decisions (docs/adapters.md has the
//! mapping). Because both engines reach the same operations in the same order, the same history
//! always gives the same decisions, and a new decider process needs only the history.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::Digest;

use wfc_journal::suspend::{
    Pending, SignalFilter, StepRequest, SubflowRef, SuspendPolicy, Suspender, run_until_suspended,
};
use wfc_journal::{ANY_WORKFLOW, ChainedFunction, ChainedInvokes, Journal, Opened, ReplayStore};
use wfc_runtime::durable::{OpStatus, OpType, Operation};
use wfc_runtime::{Clock, ExecutionResult, RunOptions, Status};

#[cfg(feature = "swf-poller")]
pub mod poller;

/// The marker recorded with each decision (see [`SwfConfig::record_markers`]).
pub const STATE_MARKER: &str = "wfc.state";
/// The key of a `ContinueAsNewWorkflowExecution` input that carries the journal to the next run.
pub const CONTINUED_KEY: &str = "wfc.continued";
/// A signal that completes a scheduled Task attempt, as `SendTaskSuccess` does: input
/// `{"id": "<activity id or operation id>", "output": <json>}`.
pub const TASK_SUCCESS_SIGNAL: &str = "wfc.TaskSuccess";
/// A signal that fails a scheduled Task attempt: input `{"id": ..., "error": ..., "cause": ...}`.
pub const TASK_FAILURE_SIGNAL: &str = "wfc.TaskFailure";

/// The marker recorded for each produced Serverless Workflow event that has no signal target:
/// details `{"id": <operation id>, "event": <CloudEvent>}`. The replay reads it back, so the
/// event is produced once and the history shows it.
pub const PRODUCED_MARKER: &str = "wfc.produced";
/// The error of a produced event whose `SignalExternalWorkflowExecution` SWF refused
/// (`SignalExternalWorkflowExecutionFailed`); the cause names the target and SWF's cause.
pub const SIGNAL_FAILED: &str = "Wfc.SignalFailed";
/// The CloudEvent context attribute that names the workflow id a produced event is signalled to
/// (set it with the SW `contextAttributes` of `produceEvents` or of an action's `eventRef`).
pub const TARGET_WORKFLOW_ATTRIBUTE: &str = "swfworkflowid";
/// The CloudEvent context attribute that names the target's run id (optional).
pub const TARGET_RUN_ATTRIBUTE: &str = "swfrunid";

/// The tag of a child workflow execution that runs a Serverless Workflow subflow the parent waits
/// for (in the `tagList` of its `StartChildWorkflowExecution`): the replay reads it back as the
/// subflow's operation.
pub const SUBFLOW_TAG: &str = "wfc.subflow";
/// The tag of a child workflow execution that runs a subflow started without waiting
/// (`waitForCompletion: false`, child policy `ABANDON`).
pub const DETACHED_TAG: &str = "wfc.detached";

/// SWF's limit on `input`, `result`, `details` and `control` strings.
const MAX_DATA: usize = 32_768;
/// SWF's limit on `reason`.
const MAX_REASON: usize = 256;
/// SWF's limit on ids (activity, timer, workflow, marker).
const MAX_ID: usize = 256;

/// Why a decision task could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwfError {
    /// The decision task is not in SWF's shape.
    #[error("invalid decision task: {0}")]
    BadTask(String),
    /// The history cannot be replayed (it does not start at the workflow's start, or it names
    /// operations this workflow does not have).
    #[error("cannot replay the history: {0}")]
    Replay(String),
    /// The configuration cannot be used (a malformed `subflows` key).
    #[error("invalid decider configuration: {0}")]
    Config(String),
}

/// Where a Task's attempts go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TargetKind {
    /// `ScheduleActivityTask`.
    Activity,
    /// `ScheduleLambdaFunction`.
    Lambda,
    /// `StartChildWorkflowExecution`.
    ChildWorkflow,
}

/// How one Task (by state name or resource) is scheduled; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskTarget {
    /// Activity, Lambda function or child workflow (default: see [`SwfConfig::lambda`]).
    pub kind: Option<TargetKind>,
    /// Activity type, Lambda function or child workflow type name.
    pub name: Option<String>,
    /// Activity or child workflow type version.
    pub version: Option<String>,
    /// Task list.
    pub task_list: Option<String>,
}

/// Where a produced Serverless Workflow event is signalled (`SignalExternalWorkflowExecution`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignalTarget {
    /// The target execution's workflow id (required; the event's `swfworkflowid` attribute
    /// overrides it).
    pub workflow_id: String,
    /// The target's run id; default: its current run.
    pub run_id: Option<String>,
    /// The signal's name; default: the event's `type`.
    pub signal_name: Option<String>,
}

/// The workflow type of a child workflow execution.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowTypeRef {
    /// The type's name (default: the subflow's `workflowId`).
    pub name: Option<String>,
    /// The type's version (default: the subflow workflow's `version`, else
    /// [`SwfConfig::child_workflow_version`]).
    pub version: Option<String>,
}

/// How a Serverless Workflow subflow is started as a child workflow execution
/// (`StartChildWorkflowExecution`); every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubflowTarget {
    /// The child's workflow type.
    pub workflow_type: Option<WorkflowTypeRef>,
    /// The child's decision task list; default: the type's registered default.
    pub task_list: Option<String>,
    /// `executionStartToCloseTimeout`; default: the type's registered default.
    pub execution_start_to_close_timeout: Option<String>,
    /// `taskStartToCloseTimeout`; default: the type's registered default.
    pub task_start_to_close_timeout: Option<String>,
    /// The child policy of a subflow the parent waits for (default
    /// [`SwfConfig::child_policy`]); a subflow started without waiting is always `ABANDON`.
    pub child_policy: Option<String>,
}

/// How the decider maps Tasks to SWF decisions. Read from JSON (`wfc decide --config`); every
/// field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SwfConfig {
    /// Per state name or resource (a state name wins): how its Task is scheduled.
    pub tasks: BTreeMap<String, TaskTarget>,
    /// Per Serverless Workflow event name: where a produced event of that definition is
    /// signalled. An event carrying the `swfworkflowid` context attribute is signalled there
    /// whatever this says; an event with neither is recorded as a `wfc.produced` marker.
    pub signals: BTreeMap<String, SignalTarget>,
    /// Which Serverless Workflow subflows are child workflow executions, by `workflowId`,
    /// `workflowId@version` (the version of the workflow it resolves to; wins over the plain id)
    /// or `*` (every other subflow). A subflow no key names runs inline, in the parent's replay.
    /// See docs/adapters.md.
    pub subflows: BTreeMap<String, SubflowTarget>,
    /// Schedule Tasks as Lambda functions (`ScheduleLambdaFunction`, the resource is the
    /// function's name or ARN) rather than activities.
    pub lambda: bool,
    /// The activity type version (default `"1"`). The type name defaults to the resource's
    /// last `:`/`/` segment (`...:function:Charge` is `Charge`).
    pub activity_version: String,
    /// The activity task list; default: the activity type's registered default.
    pub task_list: Option<String>,
    /// `scheduleToStartTimeout` (default `"NONE"`).
    pub schedule_to_start_timeout: String,
    /// `scheduleToCloseTimeout` (default `"NONE"`).
    pub schedule_to_close_timeout: String,
    /// `startToCloseTimeout` when the Task has no TimeoutSeconds (default `"NONE"`).
    pub start_to_close_timeout: String,
    /// `heartbeatTimeout` when the Task has no HeartbeatSeconds (default `"NONE"`).
    pub heartbeat_timeout: String,
    /// Child workflow type version (default `"1"`).
    pub child_workflow_version: String,
    /// Child policy of child workflows (default `"TERMINATE"`).
    pub child_policy: String,
    /// Continue as new once the history has this many events and nothing is open (default
    /// 10,000, SWF's advice; the hard limit is 25,000).
    pub continue_as_new_after_events: usize,
    /// Record a `wfc.state` marker with each decision that schedules something (default true).
    pub record_markers: bool,
    /// The seed of retry jitter and random intrinsics (default 0).
    pub seed: u64,
    /// Where a DISTRIBUTED Map's ItemReader reads `s3://BUCKET/KEY` (`<itemRoot>/BUCKET/KEY`,
    /// as `--item-root`). The decider reads the items again at each replay, so the objects
    /// must not change while an execution runs.
    pub item_root: Option<std::path::PathBuf>,
    /// Where a DISTRIBUTED Map's ResultWriter writes (as `--result-root`). The files are
    /// written again, identically, by each replay that passes the Map's end.
    pub result_root: Option<std::path::PathBuf>,
}

impl Default for SwfConfig {
    fn default() -> SwfConfig {
        SwfConfig {
            tasks: BTreeMap::new(),
            signals: BTreeMap::new(),
            subflows: BTreeMap::new(),
            lambda: false,
            activity_version: "1".into(),
            task_list: None,
            schedule_to_start_timeout: "NONE".into(),
            schedule_to_close_timeout: "NONE".into(),
            start_to_close_timeout: "NONE".into(),
            heartbeat_timeout: "NONE".into(),
            child_workflow_version: "1".into(),
            child_policy: "TERMINATE".into(),
            continue_as_new_after_events: 10_000,
            record_markers: true,
            seed: 0,
            item_root: None,
            result_root: None,
        }
    }
}

impl SwfConfig {
    /// The `subflows` entries as the journal's chained-invoke mappings: each maps its
    /// `workflowId[@version]` (or `*`) to its own key, subflows started without waiting included.
    pub fn subflow_mappings(&self) -> Result<ChainedInvokes, SwfError> {
        let mut mappings = Vec::new();
        for key in self.subflows.keys() {
            let bad = |why: &str| SwfError::Config(format!("subflows key {key:?}: {why}"));
            let (workflow_id, version) = wfc_journal::parse_mapping_key(key).map_err(bad)?;
            if workflow_id == ANY_WORKFLOW && version.is_some() {
                return Err(bad("'*' takes no version"));
            }
            check_subflow_target(&self.subflows[key]).map_err(|why| bad(&why))?;
            mappings.push(ChainedFunction {
                workflow_id: workflow_id.to_owned(),
                version: version.map(str::to_owned),
                function_name: key.clone(),
                qualifier: None,
            });
        }
        ChainedInvokes::new(mappings).map(|m| m.with_detached(true)).map_err(|e| SwfError::Config(e.to_string()))
    }

    /// Checks the `subflows` entries against the definition: each key must parse and name a
    /// subflow `workflow` starts (waited for or not; `*` needs at least one).
    pub fn check_subflows(&self, workflow: &wfc_ir::Workflow) -> Result<(), SwfError> {
        let mappings = self.subflow_mappings()?;
        mappings.check([workflow]).map_err(|e| match e {
            wfc_journal::ChainedConfigError::Unused { mapping, detail } => {
                let key = mapping.split_once('=').map_or(mapping.as_str(), |(k, _)| k);
                SwfError::Config(format!(
                    "subflows key {key:?} names no subflow of the workflow '{}'{detail}",
                    workflow.name
                ))
            }
            other => SwfError::Config(other.to_string()),
        })?;
        // A child's workflow type defaults to the subflow's own id and version, which SWF may
        // refuse as a type name: say so now rather than when the subflow is reached.
        for (workflow_id, version, key) in mappings.mapped_subflows([workflow]) {
            let (name, version) = self.child_type(&key, &workflow_id, version.as_deref());
            if !swf_name_ok(&name) || !swf_name_ok(&version) {
                return Err(SwfError::Config(bad_child_type(&workflow_id, &name, &version)));
            }
        }
        Ok(())
    }

    /// The workflow type (name, version) of the child a subflow maps to through `subflows`
    /// entry `key`: the entry's `workflowType`, else the subflow's own id and version, else
    /// `childWorkflowVersion`.
    fn child_type(&self, key: &str, workflow_id: &str, version: Option<&str>) -> (String, String) {
        let ty = self.subflows.get(key).and_then(|t| t.workflow_type.clone()).unwrap_or_default();
        let name = ty.name.unwrap_or_else(|| workflow_id.to_owned());
        let version =
            ty.version.or_else(|| version.map(str::to_owned)).unwrap_or_else(|| self.child_workflow_version.clone());
        (name, version)
    }
}

/// Why a subflow's child workflow type is not one SWF accepts, and what to do.
fn bad_child_type(workflow_id: &str, name: &str, version: &str) -> String {
    format!(
        "the workflow type of subflow '{workflow_id}' (name '{name}', version '{version}') is not one SWF accepts (1 to {MAX_ID} characters, no ':', '/', '|', control characters or surrounding spaces, not \"arn\"): give its `workflowType` in the decider's `subflows` entry"
    )
}

/// Whether SWF accepts `s` as a name (a type name or version, a task list): 1 to 256 characters,
/// none of `:` `/` `|` or a control character, no surrounding whitespace, and not the literal
/// string `arn`.
fn swf_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.chars().count() <= MAX_ID
        && s != "arn"
        && s.trim() == s
        && !s.chars().any(|c| matches!(c, ':' | '/' | '|') || c.is_control())
}

/// What SWF would refuse in a `subflows` entry (it refuses the whole decision task answer, not
/// one decision, so this is checked before any decision is made).
fn check_subflow_target(target: &SubflowTarget) -> Result<(), String> {
    let ty = target.workflow_type.as_ref();
    for (what, value) in [
        ("workflowType.name", ty.and_then(|t| t.name.as_deref())),
        ("workflowType.version", ty.and_then(|t| t.version.as_deref())),
        ("taskList", target.task_list.as_deref()),
    ] {
        if let Some(v) = value.filter(|v| !swf_name_ok(v)) {
            return Err(format!(
                "{what} {v:?} is not a name SWF accepts (1 to {MAX_ID} characters, no ':', '/', '|', control characters or surrounding spaces, not \"arn\")"
            ));
        }
    }
    let seconds = |v: &str| !v.is_empty() && v.len() <= 8 && v.chars().all(|c| c.is_ascii_digit());
    if let Some(v) = target.execution_start_to_close_timeout.as_deref().filter(|v| !seconds(v)) {
        return Err(format!("executionStartToCloseTimeout {v:?} is not a number of seconds"));
    }
    if let Some(v) = target.task_start_to_close_timeout.as_deref().filter(|v| !seconds(v) && *v != "NONE") {
        return Err(format!("taskStartToCloseTimeout {v:?} is not a number of seconds or \"NONE\""));
    }
    if let Some(v) = target.child_policy.as_deref().filter(|v| !["TERMINATE", "REQUEST_CANCEL", "ABANDON"].contains(v))
    {
        return Err(format!("childPolicy {v:?} is not TERMINATE, REQUEST_CANCEL or ABANDON"));
    }
    Ok(())
}

/// Answers a decision task for `workflow` on the interpreter. `task` is the
/// `PollForDecisionTask` response, or an array of its pages (merged in event-id order).
///
/// This runs a small current-thread tokio runtime with paused time; inside async code use
/// [`decide_with`].
pub fn decide(workflow: &wfc_ir::Workflow, task: &Value, config: &SwfConfig) -> Result<Value, SwfError> {
    // Paused: the replay's clock is the decision's time plus virtual time only, so timestamps
    // the workflow reads (a Map Run child's StartDate, `$$.State.EnteredTime`) do not depend
    // on how long the replay took.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| SwfError::Replay(format!("cannot start the decider's runtime: {e}")))?;
    let handler = wfc_runtime::Handlers::new();
    runtime.block_on(decide_with(task, config, &workflow.name, |input, options| {
        wfc_interp::run(workflow, &handler, input, options)
    }))
}

/// Answers a decision task with any engine: `run` starts the workflow on an input with the
/// given options (`interp::run`, or a generated module's `run_with`). Its task handler is never
/// called: every Task attempt becomes a decision or replays from the history (a DISTRIBUTED
/// Map's children included: they are journaled operations like any other). Run it on
/// a runtime with paused time (as [`decide`] and [`wfc_runtime::clock::block_on_virtual`] do): on a
/// running clock, the milliseconds the replay takes leak into the timestamps it computes.
pub async fn decide_with<R, Fut>(
    task: &Value,
    config: &SwfConfig,
    workflow_name: &str,
    run: R,
) -> Result<Value, SwfError>
where
    R: FnOnce(Value, RunOptions) -> Fut,
    Fut: Future<Output = ExecutionResult>,
{
    let task = DecisionTask::parse(task)?;
    let view = HistoryView::read(&task.events)?;
    let mut out = Decisions::default();
    if view.closed {
        return Ok(task.respond(Vec::new()));
    }
    if let Some(cause) = &view.cancel_requested {
        out.cancel_open(&view, &HashSet::new());
        out.push("CancelWorkflowExecution", json!({ "details": truncate(cause, MAX_DATA) }));
        return Ok(task.respond(out.0));
    }

    let store = ReplayStore::with_events(
        view.operations.clone(),
        wfc_runtime::clock::format_timestamp(view.start_time),
        view.inbox.clone(),
    );
    let policy = SuspendPolicy { steps: true, timers: true, callbacks: false };
    let targets = config.clone();
    let suspender = Suspender::with_signals(
        policy,
        SignalFilter::new(move |name, event| signal_target(&targets, name, event).is_some()),
    );
    let clock = Clock::virtual_from(view.now);
    let opened = Journal::open_suspending(
        store.clone(),
        &task.workflow_id,
        workflow_name,
        &view.input,
        &clock,
        Some(suspender.clone()),
    )
    .await
    .map_err(|e| SwfError::Replay(e.to_string()))?;
    let Opened::Running(journal) = opened else {
        return Err(SwfError::Replay("the replay store reported a finished execution".into()));
    };
    if !config.subflows.is_empty() {
        // A fresh journal: nothing set the mappings before.
        let _ = journal.set_chained_invokes(config.subflow_mappings()?);
    }
    let mut options = RunOptions::virtual_time().with_seed(config.seed).with_journal(journal);
    options.clock = clock;
    if let Some(root) = &config.item_root {
        options = options.with_item_root(root.clone());
    }
    if let Some(root) = &config.result_root {
        options = options.with_result_root(root.clone());
    }
    let outcome = run_until_suspended(&suspender, run(view.input.clone(), options)).await;
    let produced = new_produced_events(&store, &view);
    let detached = suspender.detached();
    // The subflows started without waiting, before any closing decision.
    let start_detached = |out: &mut Decisions| -> Option<String> {
        detached.iter().find_map(|p| match p {
            Pending::Invoke { id, function, input, subflow: Some(subflow), .. } => {
                out.subflow_child(id, function, input, subflow, true, config, &task.workflow_id)
            }
            _ => None,
        })
    };

    match outcome {
        Ok(result) => {
            out.cancel_open(&view, &HashSet::new());
            out.record_produced(&produced);
            if let Some(failure) = start_detached(&mut out) {
                out.decision_failed(&failure);
                return Ok(task.respond(out.0));
            }
            out.close(&result);
        }
        Err(pending) => {
            // An event wait's timeout timer is waited for by the wait.
            let waiting: HashSet<&str> = pending
                .iter()
                .flat_map(|p| match p {
                    Pending::Event { id, timer, .. } => vec![id.as_str(), timer.as_str()],
                    other => vec![other.id()],
                })
                .collect();
            out.cancel_open(&view, &waiting);
            out.record_produced(&produced);
            if let Some(continued) =
                view.continue_as_new(config, &pending).filter(|_| produced.is_empty() && detached.is_empty())
            {
                out.push("ContinueAsNewWorkflowExecution", json!({ "input": continued }));
                return Ok(task.respond(out.0));
            }
            if let Some(failure) = start_detached(&mut out) {
                out.decision_failed(&failure);
                return Ok(task.respond(out.0));
            }
            let mut scheduled: Vec<&str> = detached.iter().map(Pending::id).collect();
            for p in &pending {
                if let Some(failure) = out.schedule(p, &view, config, &task.workflow_id) {
                    out.decision_failed(&failure);
                    return Ok(task.respond(out.0));
                }
                scheduled.push(p.id());
            }
            if config.record_markers && !out.0.is_empty() {
                let details =
                    json!({ "scheduled": scheduled, "waiting": pending.len(), "finished": view.finished_count() });
                out.push(
                    "RecordMarker",
                    json!({ "markerName": STATE_MARKER, "details": truncate(&details.to_string(), MAX_DATA) }),
                );
            }
        }
    }
    Ok(task.respond(out.0))
}

/// Where a produced event goes: the event's `swfworkflowid` attribute (with `swfrunid`), else
/// the configured target of its definition's name; `None`: nowhere (it becomes a marker).
fn signal_target(config: &SwfConfig, event_name: &str, event: &Value) -> Option<SignalTarget> {
    let configured = config.signals.get(event_name);
    match event.get(TARGET_WORKFLOW_ATTRIBUTE).and_then(Value::as_str).filter(|w| !w.is_empty()) {
        Some(workflow_id) => Some(SignalTarget {
            workflow_id: workflow_id.to_owned(),
            run_id: event.get(TARGET_RUN_ATTRIBUTE).and_then(Value::as_str).map(str::to_owned),
            signal_name: configured.and_then(|c| c.signal_name.clone()),
        }),
        None => configured.filter(|c| !c.workflow_id.is_empty()).cloned(),
    }
}

/// The events the replay produced that the history does not record yet (no signal target):
/// `(operation id, CloudEvent)` in the order produced.
fn new_produced_events(store: &ReplayStore, view: &HistoryView) -> Vec<(String, Value)> {
    store
        .checkpoints()
        .into_iter()
        .flatten()
        .filter(|u| u.subtype == "Produce" && u.status == OpStatus::Succeeded)
        .filter(|u| view.index.get(&u.id).is_none_or(|&i| view.operations[i].status == OpStatus::Cancelled))
        .map(|u| (u.id, u.result.unwrap_or(Value::Null)))
        .collect()
}

/// A signal as a CloudEvent: its input when that is a CloudEvent in JSON (what a wfc decider's
/// `SignalExternalWorkflowExecution` sends), else an event of type `signalName`, source `swf`,
/// whose data is the input (JSON, or the string when it is not JSON).
fn signal_event(name: &str, input: Option<&str>, event_id: u64) -> Value {
    let parsed = input.map(|s| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned())));
    match parsed {
        Some(Value::Object(m)) if m.contains_key("specversion") && m.get("type").is_some_and(Value::is_string) => {
            Value::Object(m)
        }
        data => json!({
            "specversion": "1.0",
            "id": format!("swf-signal-{event_id}"),
            "source": "swf",
            "type": name,
            "datacontenttype": "application/json",
            "data": data.unwrap_or(Value::Null),
        }),
    }
}

/// The answer to an `UnhandledDecision` fault: respond with no decisions, so SWF schedules a new
/// decision task whose history includes the events that raced the closing decision.
pub fn unhandled_decision_response(task_token: &str) -> Value {
    json!({ "taskToken": task_token, "decisions": [] })
}

/// The id SWF sees for operation `op_id`: the id itself when SWF accepts it, else a sanitized
/// prefix and a hash of the whole id (SWF ids exclude `:`, `/`, `|`, control characters and the
/// string `arn`, and are at most 256 characters).
pub fn swf_id(op_id: &str) -> String {
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars().count() <= MAX_ID
            && !s.contains("arn")
            && !s.chars().any(|c| matches!(c, ':' | '/' | '|') || c.is_control())
    };
    if valid(op_id) {
        return op_id.to_owned();
    }
    let mut clean: String =
        op_id.chars().map(|c| if matches!(c, ':' | '/' | '|') || c.is_control() { '.' } else { c }).take(200).collect();
    clean = clean.replace("arn", "ar_n");
    let digest = sha2::Sha256::digest(op_id.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{clean}-{hex}")
}

struct DecisionTask {
    task_token: String,
    workflow_id: String,
    events: Vec<Value>,
}

impl DecisionTask {
    fn parse(task: &Value) -> Result<DecisionTask, SwfError> {
        let pages: Vec<&Value> = match task {
            Value::Array(pages) if !pages.is_empty() => pages.iter().collect(),
            Value::Object(_) => vec![task],
            _ => {
                return Err(SwfError::BadTask(
                    "expected a PollForDecisionTask response object, or an array of its pages".into(),
                ));
            }
        };
        let first = pages[0];
        let task_token = first
            .get("taskToken")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                SwfError::BadTask("`taskToken` is missing or empty (an empty poll has nothing to decide)".into())
            })?
            .to_owned();
        let workflow_id = first
            .pointer("/workflowExecution/workflowId")
            .and_then(Value::as_str)
            .ok_or_else(|| SwfError::BadTask("`workflowExecution.workflowId` is missing".into()))?
            .to_owned();
        let mut by_id: BTreeMap<u64, Value> = BTreeMap::new();
        for (i, page) in pages.iter().enumerate() {
            let events = page
                .get("events")
                .and_then(Value::as_array)
                .ok_or_else(|| SwfError::BadTask(format!("page {i} has no `events` array")))?;
            for (j, event) in events.iter().enumerate() {
                let id = event
                    .get("eventId")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| SwfError::BadTask(format!("page {i}, event {j}: `eventId` is missing")))?;
                by_id.insert(id, event.clone());
            }
        }
        // Pages may come in reverse order (reverseOrder=true); events are replayed by id.
        Ok(DecisionTask { task_token, workflow_id, events: by_id.into_values().collect() })
    }

    fn respond(&self, decisions: Vec<Value>) -> Value {
        json!({ "taskToken": self.task_token, "decisions": decisions })
    }
}

/// What is open on the SWF side for one operation.
#[derive(Debug, Clone)]
enum Open {
    Activity { activity_id: String },
    Lambda,
    Timer { timer_id: String },
    Child { workflow_id: String, run_id: Option<String> },
}

#[derive(Debug, Clone)]
struct OpenItem {
    what: Open,
    cancel_requested: bool,
}

/// The history, read into journal operations and what is still open.
struct HistoryView {
    input: Value,
    start_time: jiff::Timestamp,
    now: jiff::Timestamp,
    operations: Vec<Operation>,
    index: HashMap<String, usize>,
    by_event: HashMap<u64, String>,
    /// `startToCloseTimeout` of each scheduled activity or Lambda function, by operation id.
    timeouts: HashMap<String, u64>,
    open: BTreeMap<String, OpenItem>,
    /// The latest refusal of a schedule decision, by SWF id: its cause.
    refused: HashMap<String, String>,
    /// The CloudEvent of each signal initiated, by operation id.
    signal_events: HashMap<String, Value>,
    /// The signals delivered to this execution as Serverless Workflow events (every signal
    /// but `wfc.TaskSuccess`/`wfc.TaskFailure`): `(event id, CloudEvent)` in history order.
    inbox: Vec<(i64, Value)>,
    cancel_requested: Option<String>,
    closed: bool,
    event_count: usize,
}

fn attrs<'a>(event: &'a Value, event_type: &str) -> &'a Value {
    let mut key = String::with_capacity(event_type.len() + 15);
    let mut chars = event_type.chars();
    if let Some(c) = chars.next() {
        key.extend(c.to_lowercase());
    }
    key.extend(chars);
    key.push_str("EventAttributes");
    event.get(&key).unwrap_or(&Value::Null)
}

fn text<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v.get(field).and_then(Value::as_str)
}

/// SWF data strings hold JSON when wfc wrote them; anything else is kept as a JSON string.
fn data(v: &Value, field: &str) -> Value {
    match text(v, field) {
        None => Value::Null,
        Some(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned())),
    }
}

fn timestamp(event: &Value) -> Option<jiff::Timestamp> {
    match event.get("eventTimestamp")? {
        Value::Number(n) => {
            let ms = (n.as_f64()? * 1000.0).round() as i64;
            jiff::Timestamp::from_millisecond(ms).ok()
        }
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn seconds(text: Option<&str>) -> Option<u64> {
    text.and_then(|s| s.parse().ok())
}

impl HistoryView {
    fn read(events: &[Value]) -> Result<HistoryView, SwfError> {
        let first = events.first().ok_or_else(|| SwfError::BadTask("the history has no events".into()))?;
        if first.get("eventType").and_then(Value::as_str) != Some("WorkflowExecutionStarted") {
            return Err(SwfError::Replay(
                "the history does not start with WorkflowExecutionStarted: poll with the whole history (every page), not startAtPreviousStartedEvent".into(),
            ));
        }
        let start_time =
            timestamp(first).ok_or_else(|| SwfError::BadTask("event 1 has no valid `eventTimestamp`".into()))?;
        let now = events.iter().rev().find_map(timestamp).unwrap_or(start_time);
        let mut view = HistoryView {
            input: Value::Null,
            start_time,
            now,
            operations: Vec::new(),
            index: HashMap::new(),
            by_event: HashMap::new(),
            timeouts: HashMap::new(),
            open: BTreeMap::new(),
            refused: HashMap::new(),
            signal_events: HashMap::new(),
            inbox: Vec::new(),
            cancel_requested: None,
            closed: false,
            event_count: events.len(),
        };
        for event in events {
            view.apply(event)?;
        }
        Ok(view)
    }

    fn upsert(&mut self, id: &str, op_type: OpType, status: OpStatus, f: impl FnOnce(&mut Operation)) {
        let i = match self.index.get(id) {
            Some(&i) => i,
            None => {
                self.operations.push(Operation {
                    id: id.to_owned(),
                    op_type,
                    subtype: if op_type == OpType::Wait { "Wait".into() } else { "Task".into() },
                    // SWF's history keeps the id, not the state name (see Journal::recorded_as).
                    name: String::new(),
                    status,
                    starts: 0,
                    result: None,
                    error: None,
                    cause: None,
                    due_at_ms: None,
                    callback_token: None,
                    heartbeats: 0,
                });
                self.index.insert(id.to_owned(), self.operations.len() - 1);
                self.operations.len() - 1
            }
        };
        let op = &mut self.operations[i];
        op.status = status;
        if status == OpStatus::Started {
            op.starts += 1;
        }
        f(op);
    }

    /// The operation a completion event refers to (through the event id of its scheduling).
    fn scheduled(&self, a: &Value, field: &str) -> Option<String> {
        a.get(field).and_then(Value::as_u64).and_then(|id| self.by_event.get(&id)).cloned()
    }

    fn finish(
        &mut self,
        id: Option<String>,
        status: OpStatus,
        result: Value,
        error: Option<String>,
        cause: Option<String>,
    ) {
        let Some(id) = id else { return };
        // Only a started operation finishes: a late event after a signal finished it is ignored.
        if self.index.get(&id).map(|&i| self.operations[i].status) == Some(OpStatus::Started) {
            self.upsert(&id, OpType::Step, status, |op| {
                op.result = (status == OpStatus::Succeeded).then_some(result);
                op.error = error;
                op.cause = cause;
            });
        }
        if status != OpStatus::Started {
            self.open.remove(&id);
        }
    }

    fn apply(&mut self, event: &Value) -> Result<(), SwfError> {
        let event_type = event.get("eventType").and_then(Value::as_str).unwrap_or_default();
        let event_id = event.get("eventId").and_then(Value::as_u64).unwrap_or_default();
        let a = attrs(event, event_type);
        let control = text(a, "control").map(str::to_owned);
        match event_type {
            "WorkflowExecutionStarted" => {
                let input = match data(a, "input") {
                    Value::Null => json!({}),
                    v => v,
                };
                match input.get(CONTINUED_KEY) {
                    Some(carried) => {
                        self.input = carried.get("input").cloned().unwrap_or(Value::Null);
                        let ops: Vec<Operation> =
                            serde_json::from_value(carried.get("operations").cloned().unwrap_or_default()).map_err(
                                |e| SwfError::Replay(format!("the continued-as-new input has invalid operations: {e}")),
                            )?;
                        for op in ops {
                            self.index.insert(op.id.clone(), self.operations.len());
                            self.operations.push(op);
                        }
                    }
                    None => self.input = input,
                }
            }
            "ActivityTaskScheduled" | "LambdaFunctionScheduled" => {
                let Some(id) = control else { return Ok(()) };
                let (swf, open) = if event_type == "ActivityTaskScheduled" {
                    let activity_id = text(a, "activityId").unwrap_or_default().to_owned();
                    (activity_id.clone(), Open::Activity { activity_id })
                } else {
                    (text(a, "id").unwrap_or_default().to_owned(), Open::Lambda)
                };
                self.refused.remove(&swf);
                if let Some(secs) = seconds(text(a, "startToCloseTimeout")) {
                    self.timeouts.insert(id.clone(), secs);
                }
                self.upsert(&id, OpType::Step, OpStatus::Started, |_| {});
                self.by_event.insert(event_id, id.clone());
                self.open.insert(id, OpenItem { what: open, cancel_requested: false });
            }
            "ActivityTaskCompleted" | "LambdaFunctionCompleted" => {
                let id = self.scheduled(a, "scheduledEventId");
                self.finish(id, OpStatus::Succeeded, data(a, "result"), None, None);
            }
            "ActivityTaskFailed" | "LambdaFunctionFailed" => {
                let id = self.scheduled(a, "scheduledEventId");
                let error = text(a, "reason").filter(|r| !r.is_empty()).unwrap_or(wfc_ir::errors::TASK_FAILED);
                let cause = text(a, "details").unwrap_or_default();
                self.finish(id, OpStatus::Failed, Value::Null, Some(error.to_owned()), Some(cause.to_owned()));
            }
            "ActivityTaskTimedOut" | "LambdaFunctionTimedOut" => {
                let id = self.scheduled(a, "scheduledEventId");
                let kind = text(a, "timeoutType").unwrap_or("START_TO_CLOSE");
                // The causes the runtime gives its own timeouts: none for TimeoutSeconds or a
                // missed heartbeat, as AWS records them.
                let limit = id.as_ref().and_then(|id| self.timeouts.get(id));
                let cause = match (kind, limit) {
                    ("START_TO_CLOSE", Some(_)) | ("HEARTBEAT", _) => String::new(),
                    (other, _) => format!("the task timed out ({other})"),
                };
                self.finish(id, OpStatus::TimedOut, Value::Null, Some(wfc_ir::errors::TIMEOUT.to_owned()), Some(cause));
            }
            "ActivityTaskCanceled" => {
                let id = self.scheduled(a, "scheduledEventId");
                self.finish(id, OpStatus::Cancelled, Value::Null, None, None);
            }
            "StartLambdaFunctionFailed" => {
                let id = self.scheduled(a, "scheduledEventId");
                let cause = format!(
                    "SWF could not start the Lambda function ({}): {}",
                    text(a, "cause").unwrap_or_default(),
                    text(a, "message").unwrap_or_default()
                );
                self.finish(
                    id,
                    OpStatus::Failed,
                    Value::Null,
                    Some(wfc_ir::errors::TASK_FAILED.to_owned()),
                    Some(cause),
                );
            }
            "ActivityTaskCancelRequested" | "RequestCancelActivityTaskFailed" => {
                // Asked once; a refused cancel (the activity closed meanwhile) is not asked again.
                let activity_id = text(a, "activityId").unwrap_or_default();
                for item in self.open.values_mut() {
                    if matches!(&item.what, Open::Activity { activity_id: x } if x == activity_id) {
                        item.cancel_requested = true;
                    }
                }
            }
            "ScheduleActivityTaskFailed" | "StartTimerFailed" | "ScheduleLambdaFunctionFailed" => {
                let swf =
                    text(a, "activityId").or_else(|| text(a, "timerId")).or_else(|| text(a, "id")).unwrap_or_default();
                let cause = text(a, "cause").unwrap_or_default();
                self.refused.insert(swf.to_owned(), format!("{event_type}: {cause}"));
            }
            "TimerStarted" => {
                let Some(id) = control else { return Ok(()) };
                let timer_id = text(a, "timerId").unwrap_or_default().to_owned();
                self.refused.remove(&timer_id);
                let due = seconds(text(a, "startToFireTimeout"))
                    .and_then(|s| timestamp(event).map(|t| t.as_millisecond().saturating_add(s as i64 * 1000)));
                self.upsert(&id, OpType::Wait, OpStatus::Started, |op| op.due_at_ms = due);
                self.by_event.insert(event_id, id.clone());
                self.open.insert(id, OpenItem { what: Open::Timer { timer_id }, cancel_requested: false });
            }
            // moto_server spells it `TimerCancelled`.
            "TimerFired" | "TimerCanceled" | "TimerCancelled" => {
                let status = if event_type == "TimerFired" { OpStatus::Succeeded } else { OpStatus::Cancelled };
                if let Some(id) = self.scheduled(a, "startedEventId") {
                    // Where it fired: an event wait's timeout counts the events before it only.
                    let fired = (status == OpStatus::Succeeded).then(|| json!({ "eventId": event_id }));
                    self.upsert(&id, OpType::Wait, status, |op| op.result = fired);
                    self.open.remove(&id);
                }
            }
            "CancelTimerFailed" => {
                let timer_id = text(a, "timerId").unwrap_or_default();
                for item in self.open.values_mut() {
                    if matches!(&item.what, Open::Timer { timer_id: x } if x == timer_id) {
                        item.cancel_requested = true;
                    }
                }
            }
            "StartChildWorkflowExecutionInitiated" => {
                let Some(id) = control else { return Ok(()) };
                let workflow_id = text(a, "workflowId").unwrap_or_default().to_owned();
                self.refused.remove(&workflow_id);
                let tagged =
                    |tag: &str| a.get("tagList").and_then(Value::as_array).is_some_and(|t| t.iter().any(|x| x == tag));
                if tagged(DETACHED_TAG) {
                    // A subflow the parent did not wait for: done as far as the parent is
                    // concerned (its start, its failure to start and its end change nothing).
                    self.upsert(&id, OpType::ChainedInvoke, OpStatus::Succeeded, |_| {});
                    self.by_event.insert(event_id, id);
                    return Ok(());
                }
                let op_type = if tagged(SUBFLOW_TAG) { OpType::ChainedInvoke } else { OpType::Step };
                self.upsert(&id, op_type, OpStatus::Started, |_| {});
                self.by_event.insert(event_id, id.clone());
                self.open
                    .insert(id, OpenItem { what: Open::Child { workflow_id, run_id: None }, cancel_requested: false });
            }
            "StartChildWorkflowExecutionFailed" => {
                let id = self.scheduled(a, "initiatedEventId").or(control);
                let swf_cause = text(a, "cause").unwrap_or_default();
                let subflow = id.as_ref().and_then(|id| self.index.get(id)).map(|&i| &self.operations[i]);
                if let Some(op) = subflow.filter(|op| op.op_type == OpType::ChainedInvoke)
                    && transient(swf_cause)
                {
                    // A subflow's child refused for a passing reason (a rate or open-children
                    // limit) is started again by the next decision, waited for or not.
                    let id = op.id.clone();
                    self.upsert(&id, OpType::ChainedInvoke, OpStatus::Cancelled, |_| {});
                    self.open.remove(&id);
                    return Ok(());
                }
                let cause = format!("SWF could not start the child workflow: {swf_cause}");
                self.finish(
                    id,
                    OpStatus::Failed,
                    Value::Null,
                    Some(wfc_ir::errors::TASK_FAILED.to_owned()),
                    Some(cause),
                );
            }
            "ChildWorkflowExecutionStarted" => {
                if let Some(id) = self.scheduled(a, "initiatedEventId")
                    && let Some(OpenItem { what: Open::Child { run_id, .. }, .. }) = self.open.get_mut(&id)
                {
                    *run_id = a.pointer("/workflowExecution/runId").and_then(Value::as_str).map(str::to_owned);
                }
            }
            "ChildWorkflowExecutionCompleted" => {
                let id = self.scheduled(a, "initiatedEventId");
                self.finish(id, OpStatus::Succeeded, data(a, "result"), None, None);
            }
            "ChildWorkflowExecutionFailed" => {
                let id = self.scheduled(a, "initiatedEventId");
                let error = text(a, "reason").filter(|r| !r.is_empty()).unwrap_or(wfc_ir::errors::TASK_FAILED);
                let cause = text(a, "details").unwrap_or_default();
                self.finish(id, OpStatus::Failed, Value::Null, Some(error.to_owned()), Some(cause.to_owned()));
            }
            "ChildWorkflowExecutionTimedOut" => {
                let id = self.scheduled(a, "initiatedEventId");
                let cause = "the child workflow execution timed out".to_owned();
                self.finish(id, OpStatus::TimedOut, Value::Null, Some(wfc_ir::errors::TIMEOUT.to_owned()), Some(cause));
            }
            "ChildWorkflowExecutionCanceled" | "ChildWorkflowExecutionTerminated" => {
                let id = self.scheduled(a, "initiatedEventId");
                let cause = format!(
                    "the child workflow execution was {}",
                    if event_type.ends_with("Canceled") { "canceled" } else { "terminated" }
                );
                self.finish(
                    id,
                    OpStatus::Failed,
                    Value::Null,
                    Some(wfc_ir::errors::TASK_FAILED.to_owned()),
                    Some(cause),
                );
            }
            "SignalExternalWorkflowExecutionInitiated" => {
                let Some(id) = control else { return Ok(()) };
                let event = data(a, "input");
                self.upsert(&id, OpType::Step, OpStatus::Started, |_| {});
                self.by_event.insert(event_id, id.clone());
                self.signal_events.insert(id, event);
            }
            "ExternalWorkflowExecutionSignaled" => {
                if let Some(id) = self.scheduled(a, "initiatedEventId") {
                    let event = self.signal_events.get(&id).cloned().unwrap_or(Value::Null);
                    self.finish(Some(id), OpStatus::Succeeded, event, None, None);
                }
            }
            "SignalExternalWorkflowExecutionFailed" => {
                let id = self.scheduled(a, "initiatedEventId").or(control);
                let swf_cause = text(a, "cause").unwrap_or_default();
                if transient(swf_cause) {
                    // Signalled again by the next decision (the produce is not finished).
                    if let Some(id) = id.filter(|id| self.index.contains_key(id)) {
                        self.upsert(&id, OpType::Step, OpStatus::Cancelled, |_| {});
                    }
                } else {
                    let target = match text(a, "runId") {
                        Some(run) => format!("'{}' (run {run})", text(a, "workflowId").unwrap_or_default()),
                        None => format!("'{}'", text(a, "workflowId").unwrap_or_default()),
                    };
                    let cause = format!("SWF could not signal workflow execution {target}: {swf_cause}");
                    self.finish(id, OpStatus::Failed, Value::Null, Some(SIGNAL_FAILED.to_owned()), Some(cause));
                }
            }
            "MarkerRecorded" if text(a, "markerName") == Some(PRODUCED_MARKER) => {
                let details = data(a, "details");
                if let Some(id) = details.get("id").and_then(Value::as_str) {
                    let event = details.get("event").cloned().unwrap_or(Value::Null);
                    self.upsert(id, OpType::Step, OpStatus::Succeeded, |op| op.result = Some(event));
                }
            }
            "RequestCancelExternalWorkflowExecutionInitiated" | "RequestCancelExternalWorkflowExecutionFailed" => {
                let workflow_id = text(a, "workflowId").unwrap_or_default();
                for item in self.open.values_mut() {
                    if matches!(&item.what, Open::Child { workflow_id: x, .. } if x == workflow_id) {
                        item.cancel_requested = true;
                    }
                }
            }
            "WorkflowExecutionCancelRequested" => {
                let cause = text(a, "cause").unwrap_or("cancel requested").to_owned();
                self.cancel_requested = Some(cause);
            }
            "WorkflowExecutionSignaled" => self.signal(a, event_id),
            "WorkflowExecutionCompleted"
            | "WorkflowExecutionFailed"
            | "WorkflowExecutionCanceled"
            | "WorkflowExecutionTimedOut"
            | "WorkflowExecutionTerminated"
            | "WorkflowExecutionContinuedAsNew" => self.closed = true,
            // Decision tasks, markers, and the refusal of a closing decision (the decider
            // answers again from the newer history: the same replay re-derives the decision).
            _ => {}
        }
        Ok(())
    }

    /// `wfc.TaskSuccess` / `wfc.TaskFailure`: finish a scheduled Task attempt from outside, as
    /// Step Functions' SendTaskSuccess/SendTaskFailure do. Any other signal is an event for the
    /// Serverless Workflow event waits (see [`signal_event`]); the States Language has no use
    /// for it.
    fn signal(&mut self, a: &Value, event_id: u64) {
        let name = text(a, "signalName").unwrap_or_default();
        if name != TASK_SUCCESS_SIGNAL && name != TASK_FAILURE_SIGNAL {
            let seq = i64::try_from(event_id).unwrap_or(i64::MAX);
            self.inbox.push((seq, signal_event(name, text(a, "input"), event_id)));
            return;
        }
        let input = data(a, "input");
        let Some(target) = input.get("id").and_then(Value::as_str) else { return };
        let id = self
            .open
            .iter()
            .find(|(id, item)| {
                id.as_str() == target
                    || matches!(&item.what, Open::Activity { activity_id } if activity_id == target)
                    || swf_id(id) == target
            })
            .map(|(id, _)| id.clone());
        // The activity stays open on SWF's side: the next decision asks to cancel it, since no
        // line of control waits for it any more.
        let still_open = id.as_ref().and_then(|id| self.open.get(id).cloned());
        if name == TASK_SUCCESS_SIGNAL {
            let output = input.get("output").cloned().unwrap_or(Value::Null);
            self.finish(id.clone(), OpStatus::Succeeded, output, None, None);
        } else {
            let error = input.get("error").and_then(Value::as_str).unwrap_or(wfc_ir::errors::TASK_FAILED).to_owned();
            let cause = input.get("cause").and_then(Value::as_str).unwrap_or_default().to_owned();
            self.finish(id.clone(), OpStatus::Failed, Value::Null, Some(error), Some(cause));
        }
        if let (Some(id), Some(item)) = (id, still_open) {
            self.open.insert(id, item);
        }
    }

    fn finished_count(&self) -> usize {
        self.operations.iter().filter(|op| op.status.is_terminal()).count()
    }

    /// The input of a `ContinueAsNewWorkflowExecution`, when the history is long, nothing is
    /// open and the journal fits SWF's 32,768-character input.
    fn continue_as_new(&self, config: &SwfConfig, pending: &[Pending]) -> Option<String> {
        // Signals delivered as events are re-read from this run's history at each replay: they
        // would not reach the next run.
        if self.event_count < config.continue_as_new_after_events || pending.is_empty() || !self.inbox.is_empty() {
            return None;
        }
        let quiet = self.open.is_empty()
            && pending
                .iter()
                .all(|p| !matches!(p, Pending::Step { started: true, .. } | Pending::Timer { started: true, .. }));
        if !quiet {
            return None;
        }
        let finished: Vec<&Operation> = self.operations.iter().filter(|op| op.status.is_terminal()).collect();
        let text = json!({ CONTINUED_KEY: { "input": self.input, "operations": finished } }).to_string();
        (text.len() <= MAX_DATA).then_some(text)
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

fn duration_text(d: Option<Duration>, default: &str) -> String {
    match d {
        Some(d) if d.as_secs() <= 99_999_999 => d.as_secs().to_string(),
        _ => default.to_owned(),
    }
}

/// The last `:`/`/`-separated segment of a resource, usable as an SWF type name.
fn type_name(resource: &str) -> String {
    let last = resource.rsplit([':', '/']).find(|s| !s.is_empty()).unwrap_or("wfc-task");
    let name = swf_id(last);
    if name.is_empty() { "wfc-task".into() } else { name }
}

/// Whether SWF refused a schedule decision for a reason that passes (a rate or open limit):
/// the decision is simply made again.
fn transient(cause: &str) -> bool {
    cause.ends_with("_LIMIT_EXCEEDED") || cause.ends_with("_RATE_EXCEEDED")
}

#[derive(Default)]
struct Decisions(Vec<Value>);

impl Decisions {
    fn push(&mut self, decision_type: &str, attributes: Value) {
        let mut key = String::new();
        let mut chars = decision_type.chars();
        if let Some(c) = chars.next() {
            key.extend(c.to_lowercase());
        }
        key.extend(chars);
        key.push_str("DecisionAttributes");
        let mut d = Map::new();
        d.insert("decisionType".into(), Value::String(decision_type.to_owned()));
        d.insert(key, attributes);
        self.0.push(Value::Object(d));
    }

    /// Cancels what is open on SWF's side and no line of control waits for any more (a sibling
    /// branch failed, the workflow ended, a cancel was requested). Each is asked once.
    fn cancel_open(&mut self, view: &HistoryView, waiting: &HashSet<&str>) {
        for (id, item) in &view.open {
            if item.cancel_requested || waiting.contains(id.as_str()) {
                continue;
            }
            match &item.what {
                Open::Activity { activity_id } => {
                    self.push("RequestCancelActivityTask", json!({ "activityId": activity_id }));
                }
                Open::Timer { timer_id } => self.push("CancelTimer", json!({ "timerId": timer_id })),
                Open::Child { workflow_id, run_id } => {
                    let mut a = json!({ "workflowId": workflow_id });
                    if let Some(run) = run_id {
                        a["runId"] = json!(run);
                    }
                    self.push("RequestCancelExternalWorkflowExecution", a);
                }
                // SWF has no decision that cancels a Lambda function; it runs to its end and
                // its result is ignored.
                Open::Lambda => {}
            }
        }
    }

    /// A decision SWF refused for good (an unregistered type, a bad id), or one it would refuse:
    /// the workflow cannot go on, so it fails with the cause; only cancels are kept.
    fn decision_failed(&mut self, failure: &str) {
        self.0.retain(|d| {
            d["decisionType"].as_str().is_some_and(|t| t.starts_with("RequestCancel") || t == "CancelTimer")
        });
        self.push(
            "FailWorkflowExecution",
            json!({ "reason": "wfc.DecisionFailed", "details": truncate(failure, MAX_DATA) }),
        );
    }

    /// A `wfc.produced` marker for each event the replay produced with no signal target.
    fn record_produced(&mut self, produced: &[(String, Value)]) {
        for (id, event) in produced {
            let mut details = json!({ "id": id, "event": event }).to_string();
            if details.len() > MAX_DATA {
                // The event without its data still says what was produced; the replay then
                // reads it back without data (it is not used after the produce).
                let mut short = event.clone();
                if let Some(m) = short.as_object_mut() {
                    m.remove("data");
                    m.insert("wfcDataOmitted".into(), json!(true));
                }
                details = truncate(&json!({ "id": id, "event": short }).to_string(), MAX_DATA);
            }
            self.push("RecordMarker", json!({ "markerName": PRODUCED_MARKER, "details": details }));
        }
    }

    /// The closing decision, last.
    fn close(&mut self, result: &ExecutionResult) {
        match result.status {
            Status::Succeeded => {
                let output = result.output.clone().unwrap_or(Value::Null).to_string();
                if output.len() <= MAX_DATA {
                    self.push("CompleteWorkflowExecution", json!({ "result": output }));
                } else {
                    self.push(
                        "FailWorkflowExecution",
                        json!({ "reason": wfc_ir::errors::DATA_LIMIT_EXCEEDED, "details": format!("the workflow's output is {} characters; SWF accepts at most {MAX_DATA}", output.len()) }),
                    );
                }
            }
            Status::Failed | Status::TimedOut => {
                let (error, cause) = result
                    .error
                    .as_ref()
                    .map_or((wfc_ir::errors::RUNTIME, ""), |f| (f.error.as_str(), f.cause.as_str()));
                self.push(
                    "FailWorkflowExecution",
                    json!({ "reason": truncate(error, MAX_REASON), "details": truncate(cause, MAX_DATA) }),
                );
            }
        }
    }

    /// The decision that starts pending operation `p` (nothing when SWF already has it). A
    /// refusal SWF will repeat comes back as `Some(cause)`.
    fn schedule(&mut self, p: &Pending, view: &HistoryView, config: &SwfConfig, workflow_id: &str) -> Option<String> {
        match p {
            // The decider's policy does not park callbacks (SWF has no callback service); its
            // chained invokes are the subflows its `subflows` entries map (never Map Run children).
            Pending::Step { started: true, .. }
            | Pending::Timer { started: true, .. }
            | Pending::Signal { started: true, .. }
            | Pending::Invoke { started: true, .. }
            | Pending::Invoke { subflow: None, .. }
            | Pending::Callback { .. } => None,
            // A subflow a line of control waits for (parked by the journal); one started without
            // waiting comes from the suspender's detached list (`decide_with`).
            Pending::Invoke { id, function, input, subflow: Some(subflow), .. } => {
                self.subflow_child(id, function, input, subflow, false, config, workflow_id)
            }
            Pending::Event { started: true, .. } | Pending::Event { timeout: None, .. } => None,
            Pending::Event { id, timer, timeout: Some(delay), .. } => {
                self.start_timer(view, timer, *delay, &format!("the event wait '{id}'"))
            }
            Pending::Signal { id, event_name, event, .. } => {
                let target = signal_target(config, event_name, event)?;
                let signal_name = target
                    .signal_name
                    .clone()
                    .or_else(|| event.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| event_name.clone());
                let input = event.to_string();
                if input.len() > MAX_DATA {
                    return Some(format!(
                        "the event '{event_name}' of operation '{id}' is {} characters; SWF signals at most {MAX_DATA}",
                        input.len()
                    ));
                }
                if signal_name.is_empty() || signal_name.chars().count() > MAX_ID {
                    return Some(format!("the signal name of event '{event_name}' must be 1 to {MAX_ID} characters"));
                }
                let valid_id = |s: &str| !s.is_empty() && s.chars().count() <= MAX_ID;
                if !valid_id(&target.workflow_id) || target.run_id.as_deref().is_some_and(|r| !valid_id(r)) {
                    return Some(format!(
                        "the signal target of event '{event_name}' (workflow id '{}') must be 1 to {MAX_ID} characters",
                        target.workflow_id
                    ));
                }
                let mut a = json!({
                    "workflowId": target.workflow_id,
                    "signalName": signal_name,
                    "input": input,
                    "control": id,
                });
                if let Some(run) = target.run_id {
                    a["runId"] = json!(run);
                }
                self.push("SignalExternalWorkflowExecution", a);
                None
            }
            Pending::Timer { id, delay, .. } => self.start_timer(view, id, *delay, &format!("operation '{id}'")),
            Pending::Step { id, name, request, .. } => {
                let target = config.tasks.get(name).or_else(|| config.tasks.get(&request.resource));
                let kind = target.and_then(|t| t.kind).unwrap_or(
                    if request.resource.starts_with("arn:aws:states:::states:startExecution") {
                        TargetKind::ChildWorkflow
                    } else if config.lambda {
                        TargetKind::Lambda
                    } else {
                        TargetKind::Activity
                    },
                );
                let swf = match kind {
                    TargetKind::ChildWorkflow => child_workflow_id(workflow_id, id),
                    _ => swf_id(id),
                };
                if let Some(cause) = view.refused.get(&swf).filter(|c| !transient(c)) {
                    return Some(format!("'{swf}' of operation '{id}': {cause}"));
                }
                match kind {
                    TargetKind::Activity => self.activity(id, &swf, request, target, config),
                    TargetKind::Lambda => {
                        let mut a = json!({
                            "id": swf,
                            "name": target.and_then(|t| t.name.clone()).unwrap_or_else(|| request.resource.clone()),
                            "control": id,
                            "input": request.input.to_string(),
                        });
                        if let Some(t) = request.timeout {
                            a["startToCloseTimeout"] = json!(duration_text(Some(t), "NONE"));
                        }
                        self.push("ScheduleLambdaFunction", a);
                    }
                    TargetKind::ChildWorkflow => self.child(id, &swf, request, target, config),
                }
                None
            }
        }
    }

    fn activity(
        &mut self,
        id: &str,
        activity_id: &str,
        request: &StepRequest,
        target: Option<&TaskTarget>,
        config: &SwfConfig,
    ) {
        let name = target.and_then(|t| t.name.clone()).unwrap_or_else(|| type_name(&request.resource));
        let version = target.and_then(|t| t.version.clone()).unwrap_or_else(|| config.activity_version.clone());
        let mut a = json!({
            "activityType": { "name": name, "version": version },
            "activityId": activity_id,
            "control": id,
            "input": request.input.to_string(),
            "scheduleToStartTimeout": config.schedule_to_start_timeout,
            "scheduleToCloseTimeout": config.schedule_to_close_timeout,
            "startToCloseTimeout": duration_text(request.timeout, &config.start_to_close_timeout),
            "heartbeatTimeout": duration_text(request.heartbeat, &config.heartbeat_timeout),
        });
        if let Some(list) = target.and_then(|t| t.task_list.clone()).or_else(|| config.task_list.clone()) {
            a["taskList"] = json!({ "name": list });
        }
        self.push("ScheduleActivityTask", a);
    }

    fn child(
        &mut self,
        id: &str,
        workflow_id: &str,
        request: &StepRequest,
        target: Option<&TaskTarget>,
        config: &SwfConfig,
    ) {
        // `states:startExecution` Parameters: StateMachineArn names the child, Input is its input.
        let arn = request.input.get("StateMachineArn").and_then(Value::as_str).unwrap_or(&request.resource);
        let name = target.and_then(|t| t.name.clone()).unwrap_or_else(|| type_name(arn));
        let version = target.and_then(|t| t.version.clone()).unwrap_or_else(|| config.child_workflow_version.clone());
        let input = match request.input.get("Input") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => request.input.to_string(),
        };
        let mut a = json!({
            "workflowType": { "name": name, "version": version },
            "workflowId": workflow_id,
            "control": id,
            "input": input,
            "childPolicy": config.child_policy,
        });
        if let Some(t) = request.timeout {
            a["executionStartToCloseTimeout"] = json!(duration_text(Some(t), "NONE"));
        }
        if let Some(list) = target.and_then(|t| t.task_list.clone()) {
            a["taskList"] = json!({ "name": list });
        }
        self.push("StartChildWorkflowExecution", a);
    }
}

impl Decisions {
    /// `StartTimer` for the WAIT operation `op` (its `control`) of `owner`, unless SWF refused
    /// that timer for good before (then the refusal, for the caller to fail on).
    fn start_timer(&mut self, view: &HistoryView, op: &str, delay: Duration, owner: &str) -> Option<String> {
        let timer_id = swf_id(op);
        if let Some(cause) = view.refused.get(&timer_id).filter(|c| !transient(c)) {
            return Some(format!("timer '{timer_id}' of {owner}: {cause}"));
        }
        // SWF timers count whole seconds; rounding up never fires early.
        let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
        self.push(
            "StartTimer",
            json!({ "timerId": timer_id, "startToFireTimeout": secs.min(99_999_999).to_string(), "control": op }),
        );
        None
    }

    /// `StartChildWorkflowExecution` for a Serverless Workflow subflow: the `subflows` entry
    /// `key` gives the type and settings; `detached` (started without waiting) is `ABANDON`ed.
    #[allow(clippy::too_many_arguments)] // one call site
    fn subflow_child(
        &mut self,
        id: &str,
        key: &str,
        input: &Value,
        subflow: &SubflowRef,
        detached: bool,
        config: &SwfConfig,
        parent: &str,
    ) -> Option<String> {
        let target = config.subflows.get(key).cloned().unwrap_or_default();
        let (name, version) = config.child_type(key, &subflow.workflow_id, subflow.version.as_deref());
        let input = input.to_string();
        if input.len() > MAX_DATA {
            return Some(format!(
                "the input of subflow '{}' (operation '{id}') is {} characters; SWF accepts at most {MAX_DATA}",
                subflow.workflow_id,
                input.len()
            ));
        }
        if !swf_name_ok(&name) || !swf_name_ok(&version) {
            return Some(bad_child_type(&subflow.workflow_id, &name, &version));
        }
        let child_policy = if detached {
            "ABANDON".to_owned()
        } else {
            target.child_policy.clone().unwrap_or_else(|| config.child_policy.clone())
        };
        let mut a = json!({
            "workflowType": { "name": name, "version": version },
            "workflowId": child_workflow_id(parent, id),
            "control": id,
            "input": input,
            "childPolicy": child_policy,
            "tagList": [if detached { DETACHED_TAG } else { SUBFLOW_TAG }],
        });
        if let Some(list) = &target.task_list {
            a["taskList"] = json!({ "name": list });
        }
        if let Some(t) = &target.execution_start_to_close_timeout {
            a["executionStartToCloseTimeout"] = json!(t);
        }
        if let Some(t) = &target.task_start_to_close_timeout {
            a["taskStartToCloseTimeout"] = json!(t);
        }
        self.push("StartChildWorkflowExecution", a);
        None
    }
}

/// A child's workflow id: unique in the domain, so it names the parent.
fn child_workflow_id(parent: &str, op_id: &str) -> String {
    swf_id(&format!("{parent}--{op_id}"))
}
