//! CloudEvents for Serverless Workflow executions: the sink for produced events, and delivery of
//! consumed events to a running execution, matched by type, source and correlation.
//!
//! An [`EventBus`] belongs to one execution (pass it with [`crate::RunOptions::with_events`]).
//! [`EventBus::deliver`] queues an event; a waiting state takes the first queued event that
//! matches one of its event definitions. [`EventBus::close`] says no more events will come: a
//! state that then waits without a timeout fails with `Wfc.NoEvent` instead of hanging.
//! [`EventRouter`] delivers each event to every registered execution whose bus would accept it.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{Either, select};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use wfc_ir::sw::EventDef;

use crate::Failure;

/// The error of a wait that can never end: no matching event is queued and the bus is closed.
pub const NO_EVENT: &str = "Wfc.NoEvent";

/// One execution's event inbox, correlation values and produced-event sink. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct EventBus {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<BusState>,
    notify: Notify,
}

#[derive(Debug, Default)]
struct BusState {
    inbox: VecDeque<Value>,
    produced: Vec<Value>,
    closed: bool,
    /// Correlation attribute values fixed by the first event consumed that carried them.
    correlation: HashMap<String, String>,
    next_id: u64,
}

impl EventBus {
    /// An open bus with nothing queued.
    pub fn new() -> EventBus {
        EventBus::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BusState> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a consumed event (a CloudEvent: `type`, `source`, `data`, extension attributes).
    pub fn deliver(&self, event: Value) {
        self.lock().inbox.push_back(event);
        self.inner.notify.notify_waiters();
    }

    /// No more events will be delivered.
    pub fn close(&self) {
        self.lock().closed = true;
        self.inner.notify.notify_waiters();
    }

    /// Every event the execution produced so far, in order.
    pub fn produced(&self) -> Vec<Value> {
        self.lock().produced.clone()
    }

    /// Whether an event would be accepted by a state waiting for `def` now.
    pub fn accepts(&self, def: &EventDef, event: &Value) -> bool {
        matches(def, event, &self.lock().correlation)
    }

    /// Records a produced event in the sink and returns the CloudEvent.
    pub fn produce(&self, def: &EventDef, data: Value, extra: &[(String, String)], time: String) -> Value {
        let mut state = self.lock();
        state.next_id += 1;
        let mut event = Map::new();
        event.insert("specversion".into(), json!("1.0"));
        event.insert("id".into(), json!(format!("wfc-{}", state.next_id)));
        event.insert("source".into(), json!(def.source.clone().unwrap_or_else(|| "wfc".to_owned())));
        event.insert("type".into(), json!(def.event_type));
        event.insert("time".into(), json!(time));
        event.insert("datacontenttype".into(), json!("application/json"));
        // Correlation attributes the instance has fixed travel with what it produces.
        for c in &def.correlation {
            let value = c.value.clone().or_else(|| state.correlation.get(&c.name).cloned());
            if let Some(v) = value {
                event.insert(c.name.clone(), json!(v));
            }
        }
        for (k, v) in extra {
            event.insert(k.clone(), json!(v));
        }
        event.insert("data".into(), data);
        let event = Value::Object(event);
        state.produced.push(event.clone());
        event
    }

    /// Waits for the first event matching one of `defs`; returns its index in `defs` and the
    /// event, or `None` when `timeout` passes first.
    pub async fn wait(&self, defs: &[&EventDef], timeout: Option<Duration>) -> Result<Option<(usize, Value)>, Failure> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        loop {
            let notified = self.inner.notify.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            let closed = {
                let mut state = self.lock();
                let found =
                    state.inbox.iter().enumerate().find_map(|(pos, e)| {
                        defs.iter().position(|d| matches(d, e, &state.correlation)).map(|i| (pos, i))
                    });
                if let Some((pos, i)) = found {
                    let event = state.inbox.remove(pos).unwrap_or(Value::Null);
                    if let Some(def) = defs.get(i) {
                        fix(&mut state.correlation, def, &event);
                    }
                    return Ok(Some((i, event)));
                }
                state.closed
            };
            match (closed, deadline) {
                (true, None) => {
                    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
                    return Err(Failure::new(
                        NO_EVENT,
                        format!(
                            "waiting for {} without a timeout, but no more events will be delivered",
                            names.join(" or ")
                        ),
                    ));
                }
                (true, Some(d)) => {
                    tokio::time::sleep_until(d).await;
                    return Ok(None);
                }
                (false, None) => notified.await,
                (false, Some(d)) => {
                    if tokio::time::timeout_at(d, notified).await.is_err() {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// The durable side of the bus (a journaled execution waits on its store's inbox, see
/// `wfc_journal::Journal`): the same matching and correlation, on events kept elsewhere.
#[cfg(feature = "durable")]
impl EventBus {
    /// The correlation values the instance has fixed so far.
    pub fn correlation(&self) -> HashMap<String, String> {
        self.lock().correlation.clone()
    }

    /// Fixes the correlation values `event`, consumed for `def`, carries (as [`EventBus::wait`]
    /// does when it takes an event).
    pub fn fix_correlation(&self, def: &EventDef, event: &Value) {
        fix(&mut self.lock().correlation, def, event);
    }

    /// A produced event replayed from the journal (not published again): later events get ids
    /// after its `wfc-<n>`, so ids stay unique across a resume.
    pub fn replayed(&self, event: &Value) {
        let n = event.get("id").and_then(Value::as_str).and_then(|id| id.strip_prefix("wfc-")?.parse::<u64>().ok());
        if let Some(n) = n {
            let mut state = self.lock();
            state.next_id = state.next_id.max(n);
        }
    }

    /// Takes every event queued in memory (a journaled execution moves them to its store's inbox,
    /// so they are kept across a restart like events delivered through the store).
    pub fn drain_inbox(&self) -> Vec<Value> {
        self.lock().inbox.drain(..).collect()
    }
}

/// Fixes the correlation values of `def` that `event` carries and that are not fixed yet.
fn fix(correlation: &mut HashMap<String, String>, def: &EventDef, event: &Value) {
    for c in &def.correlation {
        if let Some(v) = attribute(event, &c.name) {
            correlation.entry(c.name.clone()).or_insert(v);
        }
    }
}

/// Picks queued events for a wait, by the rules of [`EventBus::wait`]: with `all` false, the
/// first queued event that matches one of `defs` (the first such definition); with `all` true,
/// one event for each definition, each taken in queue order by the first definition still
/// wanted that it matches (correlation fixed as they are taken), or nothing until all are there.
/// `queue` is `(inbox number, event)` in arrival order; returns `(index in defs, inbox number)`
/// in the order taken.
#[cfg(feature = "durable")]
pub fn pick(
    defs: &[&EventDef],
    all: bool,
    queue: &[(i64, &Value)],
    fixed: &HashMap<String, String>,
) -> Option<Vec<(usize, i64)>> {
    let taken = take(defs, all, queue, fixed);
    let complete = if all { taken.len() == defs.len() } else { !taken.is_empty() };
    complete.then_some(taken)
}

/// What [`pick`] takes from `queue`, also when that is not all the wait needs: the events a
/// wait for all of `defs` consumes when it times out, as [`EventBus::wait`] consumes each event
/// as it arrives (the in-memory wait and the durable one agree on what a timed-out wait took).
#[cfg(feature = "durable")]
pub fn take(
    defs: &[&EventDef],
    all: bool,
    queue: &[(i64, &Value)],
    fixed: &HashMap<String, String>,
) -> Vec<(usize, i64)> {
    let mut fixed = fixed.clone();
    let mut wanted: Vec<usize> = (0..defs.len()).collect();
    let mut taken: Vec<(usize, i64)> = Vec::new();
    while !wanted.is_empty() {
        let found = queue.iter().filter(|(seq, _)| !taken.iter().any(|(_, t)| t == seq)).find_map(|(seq, e)| {
            wanted.iter().position(|&d| defs.get(d).is_some_and(|def| matches(def, e, &fixed))).map(|w| (w, *seq, *e))
        });
        let Some((w, seq, event)) = found else { break };
        let d = wanted.remove(w);
        if let Some(def) = defs.get(d) {
            fix(&mut fixed, def, event);
        }
        taken.push((d, seq));
        if !all {
            break;
        }
    }
    taken
}

/// Whether `event` matches `def` under the correlation values `fixed` (for [`crate::starts`]).
pub(crate) fn matches_fixed(def: &EventDef, event: &Value, fixed: &HashMap<String, String>) -> bool {
    matches(def, event, fixed)
}

/// Fixes in `fixed` the correlation values of `def` that `event` carries (for [`crate::starts`]).
pub(crate) fn fix_values(fixed: &mut HashMap<String, String>, def: &EventDef, event: &Value) {
    fix(fixed, def, event);
}

/// A context attribute of an event as a string (numbers and Booleans in their JSON spelling).
fn attribute(event: &Value, name: &str) -> Option<String> {
    match event.get(name)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn matches(def: &EventDef, event: &Value, fixed: &HashMap<String, String>) -> bool {
    if event.get("type").and_then(Value::as_str) != Some(def.event_type.as_str()) {
        return false;
    }
    if let Some(source) = &def.source
        && event.get("source").and_then(Value::as_str) != Some(source.as_str())
    {
        return false;
    }
    def.correlation.iter().all(|c| {
        let Some(actual) = attribute(event, &c.name) else { return false };
        match (&c.value, fixed.get(&c.name)) {
            (Some(v), _) => *v == actual,
            (None, Some(v)) => *v == actual,
            (None, None) => true,
        }
    })
}

/// Delivers events to many running executions: each event goes to every registered bus that
/// accepts it under one of the given definitions (type, source, correlation).
#[derive(Debug, Default, Clone)]
pub struct EventRouter {
    buses: Arc<Mutex<Vec<(EventBus, Vec<EventDef>)>>>,
}

impl EventRouter {
    /// An empty router.
    pub fn new() -> EventRouter {
        EventRouter::default()
    }

    /// Registers an execution's bus with the events its workflow consumes.
    pub fn register(&self, bus: EventBus, consumes: Vec<EventDef>) {
        self.buses.lock().unwrap_or_else(|p| p.into_inner()).push((bus, consumes));
    }

    /// Delivers `event` to every execution that would accept it; returns how many did.
    pub fn deliver(&self, event: &Value) -> usize {
        let buses = self.buses.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0;
        for (bus, defs) in buses.iter() {
            if defs.iter().any(|d| bus.accepts(d, event)) {
                bus.deliver(event.clone());
                n += 1;
            }
        }
        n
    }
}

/// Runs `run` while delivering `schedule` (seconds after the start, CloudEvent) to `bus` on the
/// current clock; closes the bus after the last delivery. The result is `run`'s.
pub async fn with_deliveries<F: Future>(bus: &EventBus, mut schedule: Vec<(f64, Value)>, run: F) -> F::Output {
    schedule.sort_by(|a, b| a.0.total_cmp(&b.0));
    let deliveries = async {
        let start = tokio::time::Instant::now();
        for (at, event) in schedule {
            let at = Duration::try_from_secs_f64(at.max(0.0)).unwrap_or(Duration::ZERO);
            tokio::time::sleep_until(start + at).await;
            bus.deliver(event);
        }
        bus.close();
    };
    let run = pin!(run);
    let deliveries = pin!(deliveries);
    match select(run, deliveries).await {
        Either::Left((out, _)) => out,
        Either::Right(((), run)) => run.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfc_ir::sw::Correlation;

    fn def(correlation: Vec<Correlation>) -> EventDef {
        EventDef { name: "E".into(), source: Some("s".into()), event_type: "t".into(), produced: false, correlation }
    }

    #[test]
    fn matching_by_type_source_and_correlation() {
        let d = def(vec![Correlation { name: "patientid".into(), value: None }]);
        let fixed = HashMap::from([("patientid".to_owned(), "p1".to_owned())]);
        assert!(matches(&d, &json!({"type": "t", "source": "s", "patientid": "p1"}), &fixed));
        assert!(!matches(&d, &json!({"type": "t", "source": "s", "patientid": "p2"}), &fixed));
        assert!(!matches(&d, &json!({"type": "t", "source": "x", "patientid": "p1"}), &fixed));
        assert!(!matches(&d, &json!({"type": "u", "source": "s", "patientid": "p1"}), &fixed));
        assert!(!matches(&d, &json!({"type": "t", "source": "s"}), &HashMap::new()));
    }

    #[test]
    fn closed_bus_without_timeout_fails_instead_of_hanging() {
        let bus = EventBus::new();
        bus.close();
        let d = def(vec![]);
        let r = crate::block_on_virtual(bus.wait(&[&d], None));
        assert_eq!(r.map_err(|f| f.error), Err(NO_EVENT.to_owned()));
        let r = crate::block_on_virtual(bus.wait(&[&d], Some(Duration::from_secs(5))));
        assert_eq!(r.ok(), Some(None));
    }
}
