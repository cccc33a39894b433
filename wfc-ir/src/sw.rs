//! Serverless Workflow (the 2020-08 working draft, pre-0.5) states in the shared graph.
//!
//! An SW workflow lowers into an ordinary [`crate::Workflow`] whose states are all
//! [`crate::StateKind::Sw`]. SW's data model differs from ASL's (results are *merged* into the
//! state data, conditions are "the selection is non-empty", expressions are `{{ }}` templates), so
//! its states carry their own spec rather than being forced into ASL's five-field pipeline.
//! Everything here is resolved: function and event references are checked and events are copied
//! in, transitions are indices, subflows are embedded whole (the registry of workflows compiled
//! together is resolved at compile time).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonpath::Path;
use crate::{StateId, Workflow};

/// One piece of a `{{ }}` expression string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ExprPart {
    /// Literal text between expressions.
    Text(String),
    /// A JsonPath (Jayway dialect) between `{{` and `}}`.
    Path(Path),
}

/// A string that may hold `{{ JsonPath }}` expressions.
///
/// A string that is exactly one expression (surrounding spaces aside) *selects* JSON; any other
/// string is interpolated into a string (selections that are not strings are written as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expr {
    /// The string as written.
    pub text: String,
    /// Its parts, in order.
    pub parts: Vec<ExprPart>,
}

impl Expr {
    /// The single path when the string is exactly one expression.
    pub fn as_path(&self) -> Option<&Path> {
        let mut paths = self.parts.iter().filter(|p| !matches!(p, ExprPart::Text(t) if t.trim().is_empty()));
        match (paths.next(), paths.next()) {
            (Some(ExprPart::Path(p)), None) => Some(p),
            _ => None,
        }
    }
}

/// An SW state: its type-specific spec plus what every SW state may have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwState {
    /// `stateDataFilter.dataInputPath`.
    pub input_filter: Option<Expr>,
    /// `stateDataFilter.dataOutputPath`.
    pub output_filter: Option<Expr>,
    /// What the state does.
    pub kind: SwKind,
    /// `retry`, in order.
    pub retry: Vec<SwRetry>,
    /// `onError`, in order.
    pub on_error: Vec<SwOnError>,
    /// `transition` or `end` (a switch has neither: its conditions decide).
    pub next: SwNext,
    /// Workflow-wide settings, held by the start state of a top-level machine only.
    pub workflow: Option<Box<SwWorkflowMeta>>,
    /// The state's `dataInputSchema`, resolved to a JSON Schema document: the state's input (before
    /// its `dataInputPath`) must match it.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
    pub input_schema: Option<Value>,
    /// The state's `dataOutputSchema`: the state's output (after its `dataOutputPath`) must match it.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
    pub output_schema: Option<Value>,
}

impl SwState {
    /// The SW `type` name (`operation`, `event`, ...).
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }

    /// Every function this state (and what it embeds) calls.
    pub fn functions(&self) -> Vec<&str> {
        fn push_actions<'a>(actions: &'a [Action], out: &mut Vec<&'a str>) {
            for a in actions {
                if let ActionCall::Function { function, .. } = &a.call {
                    out.push(function.as_str());
                }
            }
        }
        let mut out = Vec::new();
        match &self.kind {
            SwKind::Operation { actions, .. } => push_actions(actions, &mut out),
            SwKind::Event { on_events, .. } => {
                for e in on_events {
                    push_actions(&e.actions, &mut out);
                }
            }
            SwKind::ForEach { body, .. } => body.functions(&mut out),
            SwKind::Parallel { branches, .. } => {
                for b in branches {
                    b.body.functions(&mut out);
                }
            }
            SwKind::Callback { action, .. } => push_actions(std::slice::from_ref(action), &mut out),
            SwKind::Subflow { workflow: Some(workflow), .. } => workflow_functions(workflow, &mut out),
            // A subflow not compiled in is run by the handler method named after its id.
            SwKind::Subflow { workflow: None, workflow_id, .. } => out.push(workflow_id.as_str()),
            SwKind::Switch { .. } | SwKind::Delay { .. } | SwKind::Inject { .. } => {}
        }
        out
    }
}

fn workflow_functions<'a>(workflow: &'a Workflow, out: &mut Vec<&'a str>) {
    for s in &workflow.machine.states {
        if let crate::StateKind::Sw(sw) = &s.kind {
            out.extend(sw.functions());
        }
    }
}

/// Settings of the whole workflow (kept on its start state, see [`SwState::workflow`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwWorkflowMeta {
    /// `id`.
    pub id: String,
    /// `dataInputSchema`, resolved to a JSON Schema document.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
    pub input_schema: Option<Value>,
    /// `dataOutputSchema`, resolved to a JSON Schema document.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
    pub output_schema: Option<Value>,
    /// `start.schedule`.
    pub schedule: Option<Schedule>,
    /// Every function definition (name and resource), for handler docs.
    pub functions: Vec<(String, String)>,
}

/// `start.schedule`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// `interval`: an ISO 8601 repeating interval, already parsed.
    pub interval: Option<Interval>,
    /// `cron`: the expression as written (validated at compile time).
    pub cron: Option<String>,
    /// `timezone` (IANA name; default UTC).
    pub timezone: Option<String>,
    /// `directInvoke`: whether instances may also be started directly (default `true`).
    pub direct_invoke: bool,
}

/// An ISO 8601 time interval (`R[n]/` repeats allowed), in one of the four forms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// `R<n>`: how many times; `None` is unbounded (`R/` or no `R`).
    pub repeat: Option<u64>,
    /// The start instant (RFC 3339), for `<start>/<end>` and `<start>/<duration>`.
    pub start: Option<String>,
    /// The end instant, for `<start>/<end>` and `<duration>/<end>`.
    pub end: Option<String>,
    /// The period in seconds (the duration, or end − start).
    pub period_seconds: f64,
}

/// The type-specific part of an SW state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SwKind {
    /// `operation`: run actions.
    Operation {
        /// `actionMode`.
        mode: ActionMode,
        /// `actions`.
        actions: Vec<Action>,
    },
    /// `event`: wait for events, then run actions.
    Event {
        /// `exclusive` (default true): any one of the `onEvents` fires, else all must arrive.
        exclusive: bool,
        /// `onEvents`.
        on_events: Vec<OnEvents>,
        /// `timeout` in seconds.
        timeout: Option<f64>,
    },
    /// `switch`: on data or on events.
    Switch {
        /// `dataConditions`.
        data: Vec<DataCondition>,
        /// `eventConditions`.
        events: Vec<EventCondition>,
        /// `eventTimeout` in seconds.
        event_timeout: Option<f64>,
        /// `default`: taken when no data condition holds, or no event arrives in time.
        default: Option<SwNext>,
    },
    /// `delay`: wait `timeDelay`.
    Delay {
        /// Seconds.
        seconds: f64,
    },
    /// `inject`: merge fixed data into the state data.
    Inject {
        /// `data`.
        data: Value,
    },
    /// `foreach`: run a body per element of a collection.
    ForEach {
        /// `inputCollection`.
        input_collection: Expr,
        /// `outputCollection`: where the results go (default: discarded).
        output_collection: Option<Expr>,
        /// `iterationParam` (default `item`).
        iteration_param: String,
        /// `max`: iterations in flight at once (default all).
        max: Option<u64>,
        /// `actions` or `workflowId`.
        body: Body,
    },
    /// `parallel`.
    Parallel {
        /// `completionType` (with `n`).
        completion: Completion,
        /// `branches`.
        branches: Vec<Branch>,
    },
    /// `subflow`: run another workflow of the registry.
    Subflow {
        /// `workflowId`.
        workflow_id: String,
        /// `waitForCompletion` (default true).
        wait: bool,
        /// The referenced workflow, resolved at compile time; `None` when it was not among the
        /// workflows compiled together: the handler runs it (its method or mock key is the
        /// `workflowId`, see [`Body::Handler`]).
        workflow: Option<Box<Workflow>>,
    },
    /// `callback`: run an action, then wait for an event.
    Callback {
        /// `action`.
        action: Action,
        /// `eventRef`, resolved.
        event: EventDef,
        /// `eventDataFilter.dataOutputPath`.
        event_filter: Option<Expr>,
        /// `timeout` in seconds.
        timeout: Option<f64>,
    },
}

impl SwKind {
    /// The SW `type` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            SwKind::Operation { .. } => "operation",
            SwKind::Event { .. } => "event",
            SwKind::Switch { .. } => "switch",
            SwKind::Delay { .. } => "delay",
            SwKind::Inject { .. } => "inject",
            SwKind::ForEach { .. } => "foreach",
            SwKind::Parallel { .. } => "parallel",
            SwKind::Subflow { .. } => "subflow",
            SwKind::Callback { .. } => "callback",
        }
    }
}

/// `actionMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionMode {
    /// One after another, each seeing the data the previous one merged.
    Sequential,
    /// All at once on the same data; results merged in definition order.
    Parallel,
}

/// A foreach or parallel-branch body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// `actions` (run sequentially).
    Actions(Vec<Action>),
    /// `workflowId`, resolved.
    Workflow(Box<Workflow>),
    /// `workflowId` of a workflow not compiled together with this one: the handler runs it, as
    /// a function named after the id (its input the iteration's or branch's data, its result the
    /// subflow's output).
    Handler(String),
}

impl Body {
    fn functions<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Body::Actions(actions) => {
                for a in actions {
                    if let ActionCall::Function { function, .. } = &a.call {
                        out.push(function.as_str());
                    }
                }
            }
            Body::Workflow(w) => workflow_functions(w, out),
            Body::Handler(id) => out.push(id.as_str()),
        }
    }
}

/// One parallel branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Branch {
    /// `name`.
    pub name: String,
    /// `actions` or `workflowId`.
    pub body: Body,
}

/// `completionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Completion {
    /// `and`: every branch.
    And,
    /// `xor`: the first branch to finish; the others are cancelled.
    Xor,
    /// `n_of_m`: the first `n` branches to finish.
    NOfM(u64),
}

/// An action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// `name`.
    pub name: Option<String>,
    /// `functionRef` or `eventRef`.
    pub call: ActionCall,
    /// `actionDataFilter.dataInputPath`.
    pub input_filter: Option<Expr>,
    /// `actionDataFilter.dataResultsPath`.
    pub results_filter: Option<Expr>,
    /// `timeout` in seconds.
    pub timeout: Option<f64>,
}

/// What an action invokes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ActionCall {
    /// `functionRef`: call a handler method.
    Function {
        /// `refName`: the function's name, which is the handler key.
        function: String,
        /// `parameters`: JSON whose strings may hold expressions. `None`: the action's data.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
        parameters: Option<Value>,
    },
    /// `eventRef`: produce `trigger`, then (optionally) wait for `result`.
    Event {
        /// `triggerEventRef`, resolved.
        trigger: EventDef,
        /// `resultEventRef`, resolved.
        result: Option<EventDef>,
        /// `data`: the trigger event's payload (an expression or JSON). `None`: the action's data.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
        data: Option<Value>,
        /// `contextAttributes` added to the trigger event.
        context_attributes: Vec<(String, String)>,
    },
}

/// A resolved event definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventDef {
    /// `name`.
    pub name: String,
    /// `source`.
    pub source: Option<String>,
    /// `type`.
    pub event_type: String,
    /// `kind`: `consumed` (default) or `produced`.
    pub produced: bool,
    /// `correlation`.
    pub correlation: Vec<Correlation>,
}

/// One `correlation` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    /// `contextAttributeName`.
    pub name: String,
    /// `contextAttributeValue`: a fixed value; without one, the first event consumed fixes it
    /// for the rest of the instance.
    pub value: Option<String>,
}

/// One `onEvents` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnEvents {
    /// `eventRefs`, resolved (all must arrive).
    pub events: Vec<EventDef>,
    /// `actionMode`.
    pub mode: ActionMode,
    /// `actions`.
    pub actions: Vec<Action>,
    /// `eventDataFilter.dataOutputPath` (or the draft's `inputPath`/`dataInputPath` spellings).
    pub filter: Option<Expr>,
}

/// One `dataConditions` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataCondition {
    /// `condition`: true when the selection is non-empty.
    pub condition: Expr,
    /// `transition` or `end`.
    pub next: SwNext,
}

/// One `eventConditions` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventCondition {
    /// `eventRef`, resolved.
    pub event: EventDef,
    /// `eventDataFilter.dataOutputPath`.
    pub filter: Option<Expr>,
    /// `transition` or `end`.
    pub next: SwNext,
}

/// Where a state goes when it finishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SwNext {
    /// `transition`.
    Transition {
        /// `nextState`, resolved.
        target: StateId,
        /// `expression`: a guard; when it does not hold, the instance halts with an error.
        guard: Option<Expr>,
        /// `produceEvent` (the draft: one), or v0.5's `produceEvents` (several, in order).
        produce: Vec<ProduceEvent>,
    },
    /// `end`.
    End {
        /// `kind: terminate`: ends the whole instance, branches and iterations too.
        terminate: bool,
        /// `produceEvent` (`kind: event`), or v0.5's `produceEvents` (several, in order).
        produce: Vec<ProduceEvent>,
    },
    /// No transition of its own (a switch state).
    None,
}

/// `produceEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProduceEvent {
    /// `nameRef`, resolved.
    pub event: EventDef,
    /// `data`: an expression string or JSON. `None`: the state's output.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]
    pub data: Option<Value>,
    /// `contextAttributes`: extension attributes (values may hold expressions).
    pub context_attributes: Vec<(String, Value)>,
}

/// One `retry` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwRetry {
    /// `expression`, evaluated on the error data; the retry applies when it selects something.
    pub expression: Expr,
    /// `interval` in seconds (default 1).
    pub interval_seconds: f64,
    /// `multiplier`, the draft's ISO 8601 duration in seconds, added to the wait on each retry
    /// (default 0: a constant interval): retry k (from 0) waits `interval + k × increment`.
    pub increment_seconds: f64,
    /// `maxAttempts`: retries after the first run (default 3; from `R<n>/` when only that is given).
    pub max_attempts: u32,
}

/// Which errors an `onError` entry handles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ErrorMatch {
    /// The draft's `expression`, evaluated on the error data: handles the error when it holds.
    Expression(Expr),
    /// v0.5's `onErrors` `error`: the error's name exactly, or `*` for every error.
    Name(String),
}

impl ErrorMatch {
    /// The entry as written, for labels.
    pub fn text(&self) -> &str {
        match self {
            ErrorMatch::Expression(e) => &e.text,
            ErrorMatch::Name(n) => n,
        }
    }
}

/// One `onError` entry (or v0.5 `onErrors` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwOnError {
    /// Which errors it handles.
    pub matcher: ErrorMatch,
    /// `errorDataFilter.dataOutputPath`: what of the error data is merged into the state data.
    pub error_filter: Option<Expr>,
    /// `transition` or `end`.
    pub next: SwNext,
}

impl SwNext {
    fn target_mut(&mut self) -> Option<&mut StateId> {
        match self {
            SwNext::Transition { target, .. } => Some(target),
            SwNext::End { .. } | SwNext::None => None,
        }
    }

    /// The state this goes to, if it is a transition.
    pub fn target(&self) -> Option<StateId> {
        match self {
            SwNext::Transition { target, .. } => Some(*target),
            SwNext::End { .. } | SwNext::None => None,
        }
    }
}

impl SwState {
    /// Every transition out of this state, with a short label (for graphs and the optimizer).
    pub fn edges(&self) -> Vec<(Option<StateId>, String)> {
        let mut out = Vec::new();
        match &self.kind {
            SwKind::Switch { data, events, default, .. } => {
                for c in data {
                    out.push((c.next.target(), c.condition.text.clone()));
                }
                for c in events {
                    out.push((c.next.target(), format!("event {}", c.event.name)));
                }
                if let Some(d) = default {
                    out.push((d.target(), "default".to_owned()));
                }
            }
            _ => out.push((self.next.target(), String::new())),
        }
        for e in &self.on_error {
            out.push((e.next.target(), format!("onError {}", e.matcher.text())));
        }
        out
    }

    /// Rewrites every target through `map`.
    pub fn retarget(&mut self, map: impl Fn(StateId) -> StateId) {
        let mut nexts: Vec<&mut SwNext> = vec![&mut self.next];
        if let SwKind::Switch { data, events, default, .. } = &mut self.kind {
            nexts.extend(data.iter_mut().map(|c| &mut c.next));
            nexts.extend(events.iter_mut().map(|c| &mut c.next));
            nexts.extend(default.iter_mut());
        }
        nexts.extend(self.on_error.iter_mut().map(|e| &mut e.next));
        for n in nexts {
            if let Some(t) = n.target_mut() {
                *t = map(*t);
            }
        }
    }
}
