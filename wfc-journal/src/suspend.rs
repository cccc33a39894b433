//! Suspension: running an execution only as far as its journal allows, then stopping and
//! reporting what it waits for.
//!
//! The replay protocols of the adapters (an Amazon SWF decider, a Lambda durable function) are
//! the same loop: the execution is re-run from its start over the operations recorded so far,
//! makes every step of progress it can, and stops at the first operation that has no outcome yet
//! on each line of control: a task to schedule (SWF), a timer that has not fired (both). A
//! [`Suspender`] attached to a [`crate::Journal`] ([`crate::Journal::open_suspending`]) turns
//! those operations into [`Pending`] entries and parks the line of control instead of running
//! them; [`run_until_suspended`] polls the execution until it ends or every line is parked.
//!
//! Parking is deterministic: lines of control are polled in definition order by both engines,
//! so the pending list comes out in the same order on every replay of the same history.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use serde::Serialize;

pub use wfc_runtime::task::StepRequest;

/// An operation the execution is waiting for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind")]
pub enum Pending {
    /// A Task attempt with no recorded outcome (parked only when [`SuspendPolicy::steps`]).
    Step {
        /// The operation id (see docs/durable.md).
        id: String,
        /// The Task state's name.
        name: String,
        /// What the attempt asks for.
        request: StepRequest,
        /// Whether the journal recorded the attempt as started (already scheduled).
        started: bool,
    },
    /// A timer (a Wait, or a retry back-off) that has not fired.
    Timer {
        /// The operation id.
        id: String,
        /// The state's name.
        name: String,
        /// `Wait` or `Retry`.
        subtype: String,
        /// How long it waits from now (the whole delay for a new timer).
        delay: Duration,
        /// Whether the journal had recorded the timer as started before this run.
        started: bool,
    },
    /// A `.waitForTaskToken` attempt whose handler ran and that waits for its answer through
    /// the service (parked only when [`SuspendPolicy::callbacks`]): the service records the
    /// answer, and nothing is to be scheduled.
    Callback {
        /// The operation id.
        id: String,
        /// The state's name.
        name: String,
        /// The task token (the service's callback id).
        token: String,
    },
    /// A Lambda CHAINED_INVOKE (a Serverless Workflow subflow mapped to a function, or a Map
    /// Run child chained to the function itself) waiting for its target function to end: the
    /// service invokes the target and records its end, so nothing is to be scheduled.
    ///
    /// An SWF decider maps the same operation to a child workflow execution
    /// (`StartChildWorkflowExecution` while not `started`).
    Invoke {
        /// The operation id.
        id: String,
        /// The state's name.
        name: String,
        /// The target's `FunctionName` (on an SWF decider, the `subflows` entry that maps it).
        function: String,
        /// The target's input (the payload).
        input: serde_json::Value,
        /// Whether the journal had recorded the invoke as started (already requested).
        started: bool,
        /// The Serverless Workflow subflow it runs (`None` for a Map Run child).
        subflow: Option<SubflowRef>,
    },
    /// A Serverless Workflow event wait that the events the service delivered so far do not
    /// satisfy (parked only by a suspender with a [`SignalFilter`]: its service delivers events,
    /// an SWF decider's signals). The service wakes the execution when an event arrives, or when
    /// the timer `timer` (the wait's timeout) fires.
    Event {
        /// The operation id of the wait.
        id: String,
        /// The state's name.
        name: String,
        /// The wait's timeout, if it has one.
        timeout: Option<Duration>,
        /// The operation id of the timeout's timer (`<id>.timeout`).
        timer: String,
        /// Whether the journal had recorded the timer as started.
        started: bool,
    },
    /// A produced Serverless Workflow event that the service delivers to another execution and
    /// whose delivery the line of control waits for (parked only for events the suspender's
    /// [`SignalFilter`] selects: an SWF decider signals them with
    /// `SignalExternalWorkflowExecution`).
    Signal {
        /// The operation id.
        id: String,
        /// The state's name.
        name: String,
        /// The event definition's name.
        event_name: String,
        /// The CloudEvent, as the execution would publish it.
        event: serde_json::Value,
        /// Whether the journal had recorded the delivery as started (already requested).
        started: bool,
    },
}

/// The Serverless Workflow subflow a [`Pending::Invoke`] runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubflowRef {
    /// The subflow's `workflowId`.
    pub workflow_id: String,
    /// The `version` of the workflow it resolves to, if it has one.
    pub version: Option<String>,
}

impl Pending {
    /// The operation id.
    pub fn id(&self) -> &str {
        match self {
            Pending::Step { id, .. }
            | Pending::Timer { id, .. }
            | Pending::Callback { id, .. }
            | Pending::Invoke { id, .. }
            | Pending::Signal { id, .. }
            | Pending::Event { id, .. } => id,
        }
    }
}

/// Which operations a suspending journal parks instead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuspendPolicy {
    /// Park Task attempts with no recorded outcome (an SWF decider schedules them elsewhere).
    /// `false`: run them here and checkpoint them (a Lambda durable function).
    pub steps: bool,
    /// Park timers that have not fired (both adapters: the service fires them).
    pub timers: bool,
    /// The service owns callbacks (a Lambda durable function): a `.waitForTaskToken` attempt's
    /// CALLBACK is started before its parameters are evaluated, its task token is the callback
    /// id the service issued, and after its handler ran it parks until the service records the
    /// answer (or the timeout) and invokes again. `false`: the journal's own token and wait.
    pub callbacks: bool,
}

#[derive(Debug, Default)]
struct State {
    next_key: u64,
    parked: BTreeMap<u64, Pending>,
    /// Awaits that something outside the execution will complete (a task handler running, a
    /// checkpoint on its way to the store): while any is in flight the execution is not stuck.
    in_flight: usize,
    /// Operations started for the service to run and that nobody waits for (see
    /// [`Suspender::start_detached`]), in the order reached.
    detached: Vec<Pending>,
}

/// Which produced events park as [`Pending::Signal`]: called with the event definition's name
/// and the CloudEvent. Events it does not select are produced and checkpointed as usual.
#[derive(Clone)]
pub struct SignalFilter(Arc<SignalPredicate>);

/// The predicate of a [`SignalFilter`].
type SignalPredicate = dyn Fn(&str, &serde_json::Value) -> bool + Send + Sync;

impl SignalFilter {
    /// A filter from a predicate on (event name, CloudEvent).
    pub fn new(f: impl Fn(&str, &serde_json::Value) -> bool + Send + Sync + 'static) -> SignalFilter {
        SignalFilter(Arc::new(f))
    }

    /// Whether the event parks.
    pub fn selects(&self, event_name: &str, event: &serde_json::Value) -> bool {
        (self.0)(event_name, event)
    }
}

impl std::fmt::Debug for SignalFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignalFilter")
    }
}

/// Collects the operations an execution parks at. Shared by the journal and the caller.
#[derive(Debug)]
pub struct Suspender {
    policy: SuspendPolicy,
    signals: Option<SignalFilter>,
    state: Mutex<State>,
    /// Set for a replay check (`wfc_worker::replay`): what the run looked up in the journal.
    dry_run: Option<Mutex<DryRun>>,
}

/// What a replay check observed.
#[derive(Debug, Default)]
pub struct DryRun {
    /// Every operation id the run looked up in the journal.
    pub lookups: std::collections::HashSet<String>,
    /// The first recorded operation that did not fit the definition: (its id, why).
    pub violation: Option<(String, String)>,
}

impl Suspender {
    /// A suspender with `policy`.
    pub fn new(policy: SuspendPolicy) -> Arc<Suspender> {
        Arc::new(Suspender { policy, signals: None, state: Mutex::new(State::default()), dry_run: None })
    }

    /// A suspender with `policy` that also parks the produced events `signals` selects (see
    /// [`Pending::Signal`]).
    pub fn with_signals(policy: SuspendPolicy, signals: SignalFilter) -> Arc<Suspender> {
        Arc::new(Suspender { policy, signals: Some(signals), state: Mutex::new(State::default()), dry_run: None })
    }

    /// A suspender for a replay check: it parks every operation with no recorded outcome (task
    /// attempts, timers, callback and event waits) and notes what the run looks up.
    pub fn dry_run() -> Arc<Suspender> {
        Arc::new(Suspender {
            policy: SuspendPolicy { steps: true, timers: true, callbacks: false },
            // Produced events are checkpointed as usual; event waits park (see Journal::event_wait).
            signals: Some(SignalFilter::new(|_, _| false)),
            state: Mutex::new(State::default()),
            dry_run: Some(Mutex::new(DryRun::default())),
        })
    }

    /// Whether this is a replay check's suspender: a callback wait parks after its handler call.
    pub(crate) fn is_dry_run(&self) -> bool {
        self.dry_run.is_some()
    }

    pub(crate) fn note_lookup(&self, id: &str) {
        if let Some(d) = &self.dry_run {
            d.lock().unwrap_or_else(|p| p.into_inner()).lookups.insert(id.to_owned());
        }
    }

    pub(crate) fn note_violation(
        &self,
        op: &wfc_runtime::durable::Operation,
        expected: wfc_runtime::durable::OpType,
        name: &str,
    ) {
        if let Some(d) = &self.dry_run {
            let mut d = d.lock().unwrap_or_else(|p| p.into_inner());
            if d.violation.is_none() {
                let why = format!(
                    "the journal has {} operation '{}' of state '{}' where the new version runs a {} of state '{name}'",
                    op.op_type.as_str(),
                    op.id,
                    op.name,
                    expected.as_str()
                );
                d.violation = Some((op.id.clone(), why));
            }
        }
    }

    /// What the replay check observed (empty for other suspenders).
    pub fn take_dry_run(&self) -> DryRun {
        self.dry_run
            .as_ref()
            .map(|d| std::mem::take(&mut *d.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }

    /// The filter of produced events that park, if any.
    pub fn signals(&self) -> Option<&SignalFilter> {
        self.signals.as_ref()
    }

    /// Its policy.
    pub fn policy(&self) -> SuspendPolicy {
        self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every operation parked now, in the order they were reached.
    pub fn pending(&self) -> Vec<Pending> {
        self.lock().parked.values().cloned().collect()
    }

    /// Whether the execution can make no more progress: something is parked and nothing that
    /// could wake a line of control is in flight.
    /// The parked operations, when the execution is stuck.
    fn stuck(&self) -> Option<Vec<Pending>> {
        let state = self.lock();
        (!state.parked.is_empty() && state.in_flight == 0).then(|| state.parked.values().cloned().collect())
    }

    /// Parks the calling line of control on `pending` for good. Dropping the returned future (a
    /// sibling Parallel branch failed) withdraws the entry.
    pub(crate) async fn park(&self, pending: Pending) -> std::convert::Infallible {
        let key = {
            let mut state = self.lock();
            let key = state.next_key;
            state.next_key += 1;
            state.parked.insert(key, pending);
            key
        };
        let _withdraw = Withdraw { suspender: self, key };
        futures::future::pending().await
    }

    /// Notes an operation the service is to start and that no line of control waits for (a
    /// Serverless Workflow subflow started without waiting, as an SWF child workflow): unlike a
    /// parked entry it stays when its line of control ends, since it was started all the same.
    pub(crate) fn start_detached(&self, pending: Pending) {
        self.lock().detached.push(pending);
    }

    /// The operations [`Suspender::start_detached`] noted, in the order reached.
    pub fn detached(&self) -> Vec<Pending> {
        self.lock().detached.clone()
    }

    /// Marks an await that something outside the execution completes, until the guard drops.
    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        self.lock().in_flight += 1;
        InFlight { suspender: self }
    }
}

struct Withdraw<'a> {
    suspender: &'a Suspender,
    key: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.suspender.lock().parked.remove(&self.key);
    }
}

/// See [`Suspender::in_flight`].
pub(crate) struct InFlight<'a> {
    suspender: &'a Suspender,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.suspender.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
    }
}

/// Wakes the caller's task and remembers that a wake happened during a poll.
struct FlagWaker {
    woken: AtomicBool,
    outer: Mutex<Waker>,
}

impl Wake for FlagWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.outer.lock().unwrap_or_else(|p| p.into_inner()).wake_by_ref();
    }
}

/// Runs `execution` until it finishes (`Ok(output)`) or every line of control is parked on
/// `suspender` with nothing in flight (`Err(pending)`: what it waits for, in the order reached;
/// the execution is dropped, which withdraws its entries from the suspender).
///
/// After each poll that leaves the execution pending, it is stuck when no wake arrived during
/// the poll, something is parked, and no handler or checkpoint is in flight: nothing can wake it
/// any more. The execution must run on this task (branches joined, not spawned), which is how
/// both engines run Parallel and Map.
pub async fn run_until_suspended<F: Future>(suspender: &Suspender, execution: F) -> Result<F::Output, Vec<Pending>> {
    UntilSuspended { execution: Box::pin(execution), suspender, waker: None }.await
}

struct UntilSuspended<'a, F: Future> {
    execution: Pin<Box<F>>,
    suspender: &'a Suspender,
    waker: Option<Arc<FlagWaker>>,
}

impl<F: Future> Future for UntilSuspended<'_, F> {
    type Output = Result<F::Output, Vec<Pending>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let flag = match &self.waker {
            Some(w) => {
                *w.outer.lock().unwrap_or_else(|p| p.into_inner()) = cx.waker().clone();
                Arc::clone(w)
            }
            None => {
                let w = Arc::new(FlagWaker { woken: AtomicBool::new(false), outer: Mutex::new(cx.waker().clone()) });
                self.waker = Some(Arc::clone(&w));
                w
            }
        };
        let waker = Waker::from(Arc::clone(&flag));
        let mut inner_cx = Context::from_waker(&waker);
        flag.woken.store(false, Ordering::SeqCst);
        match self.execution.as_mut().poll(&mut inner_cx) {
            Poll::Ready(output) => Poll::Ready(Ok(output)),
            // Woken while being polled (a joined branch yielded, a lock was handed over, tokio's
            // cooperative budget ran out): the wake reached the caller's waker too, so the
            // execution is polled again before anyone judges it stuck.
            Poll::Pending if flag.woken.load(Ordering::SeqCst) => Poll::Pending,
            Poll::Pending => match self.suspender.stuck() {
                Some(pending) => Poll::Ready(Err(pending)),
                None => Poll::Pending,
            },
        }
    }
}
