//! Event-started Serverless Workflow instances, in process.
//!
//! The draft: an event state that is a workflow's start state "controls when the workflow
//! instances should be created". [`StartRouter`] holds workflows and, for each event delivered,
//! starts an instance of every workflow whose start state consumes it:
//!
//! - `exclusive: true` (the default): any one of the start state's events creates an instance,
//!   which then consumes that event in its start state (whose `timeout` is ignored there, see
//!   `sw::work`).
//! - `exclusive: false`: the instance is created when *all* the start state's events have arrived,
//!   correlated: the first event of a group fixes the values of its correlation attributes that
//!   have no `contextAttributeValue`, and only events carrying the same values join that group
//!   (the draft's *Finalize College Application*: one applicant's three events). With a `timeout`
//!   the time between events is bounded: a group whose next event comes later than that is
//!   dropped and the event starts a new group ("no workflow instance should be created").
//!
//! An event that starts nothing is offered to the running instances, as [`EventRouter`] does,
//! for their later states. Each instance gets its own [`EventBus`]; the router starts it through
//! a [`Start`] closure (generated code's `run_with`, or [`crate::sw::run`] for the interpreter)
//! spawned on the current tokio runtime. The durable counterpart is `wfc event --store URL` without
//! `--execution` (wfc-cli/src/event_cmd.rs): it starts an instance of every workflow of the store's
//! registry whose (current version's) start state takes the event, with the same rules
//! ([`StartTrigger::gather`]) and the groups kept in the store (`Store::gather_start_event`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use wfc_ir::Workflow;
use wfc_ir::sw::{EventDef, SwKind};

use crate::Failure;
use crate::events::{EventBus, EventRouter, fix_values, matches_fixed};
use crate::exec::ExecutionResult;
use wfc_ir::StateKind;

/// Starts one instance on `input` with `bus` as its events (`RunOptions::with_events(bus)`).
pub type Start = Arc<dyn Fn(Value, EventBus) -> BoxFuture<'static, ExecutionResult> + Send + Sync>;

/// What makes a workflow's instances: its start state's events.
#[derive(Debug, Clone, PartialEq)]
pub struct StartTrigger {
    /// `exclusive`: any one event creates an instance; else all of them, correlated.
    pub exclusive: bool,
    /// The start state's `eventRefs`, every `onEvents` entry's, in order.
    pub events: Vec<EventDef>,
    /// The start state's `timeout`: for `exclusive: false`, the longest time between two events of
    /// one instance; ignored for `exclusive: true`.
    pub timeout: Option<Duration>,
}

/// The events that create instances of `workflow`: `Some` when its start state is an event state.
pub fn start_trigger(workflow: &Workflow) -> Option<StartTrigger> {
    let state = workflow.machine.states.get(workflow.machine.start_at)?;
    let StateKind::Sw(sw) = &state.kind else { return None };
    let SwKind::Event { exclusive, on_events, timeout } = &sw.kind else { return None };
    Some(StartTrigger {
        exclusive: *exclusive,
        events: on_events.iter().flat_map(|o| o.events.iter().cloned()).collect(),
        timeout: timeout.and_then(|t| Duration::try_from_secs_f64(t.max(0.0)).ok()),
    })
}

impl StartTrigger {
    /// Whether `event` is one of the start state's events (before any correlation value is
    /// fixed): for `exclusive`, it creates an instance on its own.
    pub fn takes(&self, event: &Value) -> bool {
        let empty = HashMap::new();
        self.events.iter().any(|d| matches_fixed(d, event, &empty))
    }

    /// `exclusive: false`: adds `event` to the groups gathered towards instances (`now_ms` on
    /// the caller's clock, in milliseconds): it joins the first group still missing an event it
    /// matches under that group's correlation values, else it begins a new group. A group whose
    /// last event is older than the state's `timeout` is dropped first ("no workflow instance
    /// should be created"). An event already gathered (same `source` and `id`) is not taken
    /// twice. The same rules in process ([`StartRouter`]) and in a store (`wfc event`).
    pub fn gather(&self, groups: &mut Vec<StartGroup>, event: &Value, now_ms: i64) -> Gathered {
        let empty = HashMap::new();
        let defs = &self.events;
        let Some(slot) = defs.iter().position(|d| matches_fixed(d, event, &empty)) else {
            return Gathered::NotTaken;
        };
        if let Some(t) = self.timeout {
            let t = i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
            groups.retain(|g| now_ms.saturating_sub(g.last_ms) <= t);
        }
        let identity = |e: &Value| (e.get("source").cloned(), e.get("id").cloned());
        if event.get("id").is_some_and(|id| !id.is_null())
            && groups.iter().flat_map(|g| g.events.iter().flatten()).any(|e| identity(e) == identity(event))
        {
            return Gathered::Waiting;
        }
        let open = |g: &StartGroup, i: usize| g.events.get(i).is_some_and(Option::is_none);
        let joined = groups
            .iter()
            .position(|g| defs.iter().enumerate().any(|(i, d)| open(g, i) && matches_fixed(d, event, &g.fixed)));
        let g = match joined {
            Some(g) => g,
            None => {
                groups.push(StartGroup { events: vec![None; defs.len()], fixed: HashMap::new(), last_ms: now_ms });
                groups.len() - 1
            }
        };
        let Some(group) = groups.get_mut(g) else { return Gathered::NotTaken };
        // The first still-empty slot whose definition takes the event (under the group's values).
        let slot = defs
            .iter()
            .enumerate()
            .position(|(i, d)| open(group, i) && matches_fixed(d, event, &group.fixed))
            .unwrap_or(slot);
        if let (Some(cell), Some(def)) = (group.events.get_mut(slot), defs.get(slot)) {
            *cell = Some(event.clone());
            fix_values(&mut group.fixed, def, event);
        }
        group.last_ms = now_ms;
        if group.events.iter().all(Option::is_some) {
            let group = groups.remove(g);
            Gathered::Complete(group.events.into_iter().flatten().collect())
        } else {
            Gathered::Waiting
        }
    }
}

/// Events gathered towards one instance of an `exclusive: false` start state: kept in memory by
/// [`StartRouter`], as JSON in a durable store by `wfc event`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StartGroup {
    /// One slot per trigger event, in order.
    pub events: Vec<Option<Value>>,
    /// The correlation values its first events fixed.
    pub fixed: HashMap<String, String>,
    /// When its last event came, in milliseconds on the gatherer's clock.
    pub last_ms: i64,
}

/// What [`StartTrigger::gather`] did with an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Gathered {
    /// The start state does not take it.
    NotTaken,
    /// It joined (or began) a group still waiting for more.
    Waiting,
    /// It completed a group: these events, in the start state's order, make one instance.
    Complete(Vec<Value>),
}

/// Every event a workflow's states consume, but those of its start state (which its instances
/// consumed when they were created): what a running instance may still take.
fn later_events(workflow: &Workflow) -> Vec<EventDef> {
    let mut out: Vec<EventDef> = Vec::new();
    for (i, s) in workflow.machine.states.iter().enumerate() {
        let StateKind::Sw(sw) = &s.kind else { continue };
        let mut push = |d: &EventDef| {
            if !d.produced && !out.contains(d) {
                out.push(d.clone());
            }
        };
        match &sw.kind {
            SwKind::Event { on_events, .. } if i != workflow.machine.start_at => {
                on_events.iter().flat_map(|o| &o.events).for_each(&mut push);
            }
            SwKind::Switch { events, .. } => events.iter().for_each(|c| push(&c.event)),
            SwKind::Callback { event, .. } => push(event),
            SwKind::Operation { actions, .. } => {
                for a in actions {
                    if let wfc_ir::sw::ActionCall::Event { result: Some(r), .. } = &a.call {
                        push(r);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A workflow the router starts instances of.
struct Registered {
    id: String,
    trigger: StartTrigger,
    later: Vec<EventDef>,
    start: Start,
    /// `exclusive: false`: the groups of correlated events still waiting for the rest.
    pending: Vec<StartGroup>,
}

/// What one delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The workflows (`id`) an instance was started of, one entry per instance.
    pub started: Vec<String>,
    /// How many running instances took the event for a later state.
    pub delivered: usize,
    /// The workflows whose start state took the event into a group still waiting for more.
    pub gathered: Vec<String>,
}

/// Starts instances of registered workflows from the events delivered to it (see the module).
pub struct StartRouter {
    workflows: Vec<Registered>,
    running: EventRouter,
    instances: Vec<(String, EventBus, tokio::task::JoinHandle<ExecutionResult>)>,
    /// When the router began, on tokio's clock: group times are counted from it.
    began: tokio::time::Instant,
}

impl Default for StartRouter {
    fn default() -> StartRouter {
        StartRouter {
            workflows: Vec::new(),
            running: EventRouter::default(),
            instances: Vec::new(),
            began: tokio::time::Instant::now(),
        }
    }
}

impl StartRouter {
    /// A router with no workflows.
    pub fn new() -> StartRouter {
        StartRouter::default()
    }

    /// Registers `workflow`, whose instances `start` runs. Refused when its start state is not an
    /// event state (nothing could start it).
    pub fn register(&mut self, workflow: &Workflow, start: Start) -> Result<(), Failure> {
        let id = crate::sw::meta(workflow).map_or_else(|| workflow.name.clone(), |m| m.id.clone());
        let trigger = start_trigger(workflow).ok_or_else(|| {
            Failure::runtime(format!(
                "the workflow {id:?} does not start on events: its start state is not an event state"
            ))
        })?;
        self.workflows.push(Registered { id, trigger, later: later_events(workflow), start, pending: Vec::new() });
        Ok(())
    }

    /// Delivers one CloudEvent: starts the instances it creates (on the current tokio runtime),
    /// else offers it to the running instances.
    pub fn deliver(&mut self, event: &Value) -> Delivery {
        let mut delivery = Delivery::default();
        // Group times on the current clock (virtual in tests), in ms since the router began.
        let now_ms = i64::try_from(self.began.elapsed().as_millis()).unwrap_or(i64::MAX);
        let mut to_start: Vec<(usize, Vec<Value>)> = Vec::new();
        for (w, reg) in self.workflows.iter_mut().enumerate() {
            if reg.trigger.exclusive {
                if reg.trigger.takes(event) {
                    to_start.push((w, vec![event.clone()]));
                }
                continue;
            }
            match reg.trigger.gather(&mut reg.pending, event, now_ms) {
                Gathered::NotTaken => {}
                Gathered::Waiting => delivery.gathered.push(reg.id.clone()),
                Gathered::Complete(events) => to_start.push((w, events)),
            }
        }
        if to_start.is_empty() && delivery.gathered.is_empty() {
            delivery.delivered = self.running.deliver(event);
        }
        for (w, events) in to_start {
            let Some(reg) = self.workflows.get(w) else { continue };
            let bus = EventBus::new();
            for e in events {
                bus.deliver(e);
            }
            self.running.register(bus.clone(), reg.later.clone());
            let handle = tokio::spawn((reg.start)(json!({}), bus.clone()));
            self.instances.push((reg.id.clone(), bus, handle));
            delivery.started.push(reg.id.clone());
        }
        delivery
    }

    /// How many instances were started so far.
    pub fn started(&self) -> usize {
        self.instances.len()
    }

    /// Says no more events will come (waits without a timeout then fail with `Wfc.NoEvent`) and
    /// waits for every instance: (workflow id, result), in the order they were started; an
    /// instance whose task panicked or was cancelled gives the reason instead.
    pub async fn finish(self) -> Vec<(String, Result<ExecutionResult, String>)> {
        let mut out = Vec::new();
        for (_, bus, _) in &self.instances {
            bus.close();
        }
        for (id, _, handle) in self.instances {
            out.push((id, handle.await.map_err(|e| format!("the instance's task ended: {e}"))));
        }
        out
    }
}
