//! Task invocation: what a handler sees ([`TaskContext`]) and how one attempt runs (under
//! TimeoutSeconds and HeartbeatSeconds, with panics turned into failures).

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::Failure;

/// What a task handler knows about the call it is serving. Cheap to clone; clones share the
/// heartbeat deadline.
#[derive(Debug, Clone)]
pub struct TaskContext {
    inner: Inner,
}

/// A context's fields: inline for the common attempt, which has nothing but its names to carry
/// (so making one allocates nothing), else shared.
#[derive(Debug, Clone)]
enum Inner {
    /// A generated Task's attempt with no HeartbeatSeconds, task token, role ARN, function name
    /// or stored execution: its `'static` names and the execution's shared name. Its heartbeat
    /// is never read (there is no countdown), so it keeps none.
    Plain { state: &'static str, resource: &'static str, execution: Arc<str>, retry_count: u32 },
    /// Any other attempt's.
    Shared(Arc<ContextInner>),
}

#[derive(Debug)]
struct ContextInner {
    names: Names,
    retry_count: u32,
    /// The task token of a `.waitForTaskToken` attempt.
    task_token: Option<String>,
    /// The role ARN of the Task's `Credentials`, evaluated for this attempt.
    role_arn: Option<String>,
    /// The `FunctionName` of a `lambda:invoke` request (the handler gets only its Payload).
    function_name: Option<String>,
    /// The name of the durable execution the attempt is journaled in, when it is not
    /// `execution_name` (a DISTRIBUTED Map Run's child runs in its parent's journal).
    stored_execution: Option<String>,
    /// When the last heartbeat (or the attempt's start) happened, on tokio's clock, so that it
    /// follows virtual time too. `None` until either happens: [`run_attempt`] starts the
    /// countdown only for an attempt with HeartbeatSeconds (the only one that reads it), so an
    /// attempt without reads no clock for it.
    last_beat: Mutex<Option<Instant>>,
}

/// The state's name, its resource and the execution's name. A context is made per attempt, so
/// they are not copied one by one: a generated Task's names are `'static` literals, borrowed
/// with the execution's shared name; other callers' are copied into one allocation.
#[derive(Debug, Clone)]
enum Names {
    /// A generated Task's literals, and the execution's name.
    Static { state: &'static str, resource: &'static str, execution: Arc<str> },
    /// The state's name, its resource and the execution's name, one after the other.
    Joined {
        names: Box<str>,
        /// Where the resource starts in `names`.
        resource_at: usize,
        /// Where the execution's name starts in `names`.
        execution_at: usize,
    },
}

impl TaskContext {
    /// A context for one attempt of state `state_name` calling `resource`.
    pub fn new(
        state_name: impl AsRef<str>,
        resource: impl AsRef<str>,
        retry_count: u32,
        execution_name: impl AsRef<str>,
    ) -> TaskContext {
        let (state_name, resource, execution_name) = (state_name.as_ref(), resource.as_ref(), execution_name.as_ref());
        let mut names = String::with_capacity(state_name.len() + resource.len() + execution_name.len());
        names.push_str(state_name);
        names.push_str(resource);
        names.push_str(execution_name);
        TaskContext::of(
            Names::Joined {
                names: names.into_boxed_str(),
                resource_at: state_name.len(),
                execution_at: state_name.len() + resource.len(),
            },
            retry_count,
        )
    }

    /// [`TaskContext::new`] for a state whose name and resource are `'static` (a generated
    /// Task's), in an execution whose name is shared: one allocation, nothing copied.
    pub(crate) fn with_static_names(
        state_name: &'static str,
        resource: &'static str,
        retry_count: u32,
        execution_name: Arc<str>,
    ) -> TaskContext {
        TaskContext::of(Names::Static { state: state_name, resource, execution: execution_name }, retry_count)
    }

    /// [`TaskContext::with_static_names`] for an attempt without HeartbeatSeconds (whose
    /// countdown nothing reads): nothing is allocated. A context changed later (a task token, a
    /// role ARN...) becomes a shared one.
    pub(crate) fn plain(
        state_name: &'static str,
        resource: &'static str,
        retry_count: u32,
        execution_name: Arc<str>,
    ) -> TaskContext {
        TaskContext { inner: Inner::Plain { state: state_name, resource, execution: execution_name, retry_count } }
    }

    fn of(names: Names, retry_count: u32) -> TaskContext {
        TaskContext {
            inner: Inner::Shared(Arc::new(ContextInner {
                names,
                retry_count,
                task_token: None,
                role_arn: None,
                function_name: None,
                stored_execution: None,
                last_beat: Mutex::new(None),
            })),
        }
    }

    /// The shared fields, `None` for a plain context (see [`Inner::Plain`]).
    fn shared(&self) -> Option<&ContextInner> {
        match &self.inner {
            Inner::Plain { .. } => None,
            Inner::Shared(inner) => Some(inner),
        }
    }

    /// The Task state's name.
    pub fn state_name(&self) -> &str {
        let inner = match &self.inner {
            Inner::Plain { state, .. } => return state,
            Inner::Shared(inner) => inner,
        };
        match &inner.names {
            Names::Static { state, .. } => state,
            Names::Joined { names, resource_at, .. } => &names[..*resource_at],
        }
    }

    /// The state's `Resource`.
    pub fn resource(&self) -> &str {
        let inner = match &self.inner {
            Inner::Plain { resource, .. } => return resource,
            Inner::Shared(inner) => inner,
        };
        match &inner.names {
            Names::Static { resource, .. } => resource,
            Names::Joined { names, resource_at, execution_at } => &names[*resource_at..*execution_at],
        }
    }

    /// How many retries preceded this attempt in the current visit (`$$.State.RetryCount`).
    pub fn retry_count(&self) -> u32 {
        match &self.inner {
            Inner::Plain { retry_count, .. } => *retry_count,
            Inner::Shared(inner) => inner.retry_count,
        }
    }

    /// The execution's name (`$$.Execution.Name`).
    pub fn execution_name(&self) -> &str {
        let inner = match &self.inner {
            Inner::Plain { execution, .. } => return execution,
            Inner::Shared(inner) => inner,
        };
        match &inner.names {
            Names::Static { execution, .. } => execution,
            Names::Joined { names, execution_at, .. } => &names[*execution_at..],
        }
    }

    /// The task token of a `.waitForTaskToken` Task (`$$.Task.Token`): pass it to whoever will
    /// complete the task (see [`crate::callback::Callbacks`]). `None` for other Tasks.
    pub fn task_token(&self) -> Option<&str> {
        self.shared().and_then(|inner| inner.task_token.as_deref())
    }

    /// This context with a task token (a fresh context: clones made before do not see it).
    pub fn with_task_token(self, token: impl Into<String>) -> TaskContext {
        let token = token.into();
        self.with(|inner| inner.task_token = Some(token))
    }

    /// The `FunctionName` of a `lambda:invoke` Task's request, as evaluated for this attempt (a
    /// name, a partial or a full ARN): the handler receives the request's Payload, and this says
    /// which function it stands for. `None` for other Tasks.
    pub fn function_name(&self) -> Option<&str> {
        self.shared().and_then(|inner| inner.function_name.as_deref())
    }

    /// This context with a `lambda:invoke` request's `FunctionName` (a fresh context: clones
    /// made before do not see it).
    pub fn with_function_name(self, function_name: impl Into<String>) -> TaskContext {
        let function_name = function_name.into();
        self.with(|inner| inner.function_name = Some(function_name))
    }

    /// The name of the stored (durable) execution this attempt is journaled in when it differs
    /// from [`TaskContext::execution_name`]: a DISTRIBUTED Map Run's child execution runs in its
    /// parent's journal, under the parent's name. `None` otherwise.
    pub fn stored_execution(&self) -> Option<&str> {
        self.shared().and_then(|inner| inner.stored_execution.as_deref())
    }

    /// This context with the stored execution's name (a fresh context).
    pub fn with_stored_execution(self, name: impl Into<String>) -> TaskContext {
        let name = name.into();
        self.with(|inner| inner.stored_execution = Some(name))
    }

    /// A fresh context: this one's fields, changed by `change`, and its heartbeat time.
    fn with(self, change: impl FnOnce(&mut ContextInner)) -> TaskContext {
        let mut inner = match &self.inner {
            Inner::Plain { state, resource, execution, retry_count } => ContextInner {
                names: Names::Static { state, resource, execution: Arc::clone(execution) },
                retry_count: *retry_count,
                task_token: None,
                role_arn: None,
                function_name: None,
                stored_execution: None,
                last_beat: Mutex::new(None),
            },
            Inner::Shared(shared) => ContextInner {
                names: shared.names.clone(),
                retry_count: shared.retry_count,
                task_token: shared.task_token.clone(),
                role_arn: shared.role_arn.clone(),
                function_name: shared.function_name.clone(),
                stored_execution: shared.stored_execution.clone(),
                last_beat: Mutex::new(self.last_beat()),
            },
        };
        change(&mut inner);
        TaskContext { inner: Inner::Shared(Arc::new(inner)) }
    }

    /// The role ARN of the Task's `Credentials` (evaluated for this attempt): the role AWS
    /// would assume for the call. wfc assumes nothing; a handler that calls AWS itself can.
    /// `None` when the Task has no `Credentials`.
    pub fn role_arn(&self) -> Option<&str> {
        self.shared().and_then(|inner| inner.role_arn.as_deref())
    }

    /// This context with the role ARN of the Task's `Credentials` (a fresh context: clones made
    /// before do not see it).
    pub fn with_role_arn(self, role_arn: impl Into<String>) -> TaskContext {
        let role_arn = role_arn.into();
        self.with(|inner| inner.role_arn = Some(role_arn))
    }

    /// Reports progress: restarts the HeartbeatSeconds countdown. Without HeartbeatSeconds on
    /// the state this has no effect.
    pub fn heartbeat(&self) {
        // A plain context's attempt has no HeartbeatSeconds: no countdown to restart.
        if let Some(inner) = self.shared() {
            *inner.last_beat.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
    }

    /// The last heartbeat, or the attempt's start; `None` before either (see
    /// [`ContextInner::last_beat`]).
    fn last_beat(&self) -> Option<Instant> {
        *self.shared()?.last_beat.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a Task attempt asks of its handler, passed to a durable journal so a
/// replay-only run (the SWF decider) can report the step it must schedule instead of running it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepRequest {
    /// The Task's `Resource`.
    pub resource: String,
    /// The effective input (after InputPath and Parameters).
    pub input: Value,
    /// TimeoutSeconds, resolved.
    pub timeout: Option<Duration>,
    /// HeartbeatSeconds, resolved.
    pub heartbeat: Option<Duration>,
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The handler returned a result.
    Succeeded(Value),
    /// The handler returned an error, or panicked (`States.TaskFailed`).
    Failed(Failure),
    /// TimeoutSeconds elapsed or a heartbeat was missed (`States.Timeout`).
    TimedOut(Failure),
}

/// Runs one attempt: `call` builds the handler future (a panic while building it counts as a
/// panic of the handler), which then runs under `timeout` and `heartbeat`.
pub async fn run_attempt<F, Fut>(
    call: F,
    ctx: &TaskContext,
    timeout: Option<Duration>,
    heartbeat: Option<Duration>,
) -> Attempt
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    if heartbeat.is_some() {
        // The HeartbeatSeconds countdown starts with the attempt; nothing else reads it.
        ctx.heartbeat();
    }
    let future = match start_attempt(call) {
        Ok(f) => f,
        Err(failed) => return failed,
    };
    let guarded = async { attempt_of(AssertUnwindSafe(future).catch_unwind().await) };
    if timeout.is_none() && heartbeat.is_none() {
        // Nothing to race the handler against (most Tasks): no timers to set up and poll.
        return guarded.await;
    }
    // The timers' futures live in a box of their own: inline, they would make this future,
    // and every Task visit's future holding it, larger to build and move for every attempt,
    // timed or not.
    // (Bound first: a temporary in the awaited expression would keep its space here.)
    let timed = Box::pin(timed(guarded, ctx, timeout, heartbeat));
    timed.await
}

/// The handler future `call` builds, or the failed attempt of a panic while building it.
pub(crate) fn start_attempt<F, Fut>(call: F) -> Result<Fut, Attempt>
where
    F: FnOnce() -> Fut,
{
    std::panic::catch_unwind(AssertUnwindSafe(call)).map_err(|panic| Attempt::Failed(panic_failure(panic.as_ref())))
}

/// How an attempt ended, from its handler future's outcome under `catch_unwind`: a panic while
/// it ran fails the attempt like an error.
pub(crate) fn attempt_of(outcome: std::thread::Result<Result<Value, Failure>>) -> Attempt {
    match outcome {
        Ok(Ok(v)) => Attempt::Succeeded(v),
        Ok(Err(f)) => Attempt::Failed(f),
        Err(panic) => Attempt::Failed(panic_failure(panic.as_ref())),
    }
}

/// `attempt` raced against TimeoutSeconds and HeartbeatSeconds.
async fn timed(
    attempt: impl Future<Output = Attempt>,
    ctx: &TaskContext,
    timeout: Option<Duration>,
    heartbeat: Option<Duration>,
) -> Attempt {
    let deadline = timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far_future));
    // AWS records an expired TimeoutSeconds, like an expired heartbeat, as `States.Timeout` with
    // no cause (recorded: `TaskTimedOut` has only `error`, and a catcher sees `"Cause": ""`).
    tokio::select! {
        biased;
        outcome = attempt => outcome,
        () = sleep_until_opt(deadline) => Attempt::TimedOut(Failure::new(wfc_ir::errors::TIMEOUT, "")),
        () = heartbeat_watch(ctx, heartbeat) => Attempt::TimedOut(Failure::new(wfc_ir::errors::TIMEOUT, "")),
    }
}

fn far_future() -> Instant {
    // About thirty years, as tokio itself uses for "never".
    let now = Instant::now();
    now.checked_add(Duration::from_secs(86_400 * 365 * 30)).unwrap_or(now)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => futures::future::pending().await,
    }
}

/// Completes when `heartbeat` passes without a call to [`TaskContext::heartbeat`].
async fn heartbeat_watch(ctx: &TaskContext, heartbeat: Option<Duration>) {
    let Some(interval) = heartbeat else {
        return futures::future::pending().await;
    };
    loop {
        // `run_attempt` started the countdown before calling the handler.
        let last = ctx.last_beat().unwrap_or_else(Instant::now);
        let due = last.checked_add(interval).unwrap_or_else(far_future);
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(due).await;
    }
}

/// The failure a handler panic becomes: `States.TaskFailed`, `handler panicked: <message>`.
pub fn panic_failure(panic: &(dyn Any + Send)) -> Failure {
    let message = if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a non-string panic payload)".to_owned()
    };
    Failure::new(wfc_ir::errors::TASK_FAILED, format!("handler panicked: {message}"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::TaskContext;

    #[test]
    fn static_and_copied_names_read_the_same_and_survive_a_changed_context() {
        let copied = TaskContext::new("Charge", "arn:aws:lambda:us-east-1:1:function:Charge", 2, "run-1");
        let borrowed = TaskContext::with_static_names(
            "Charge",
            "arn:aws:lambda:us-east-1:1:function:Charge",
            2,
            Arc::from("run-1"),
        );
        let plain = TaskContext::plain("Charge", "arn:aws:lambda:us-east-1:1:function:Charge", 2, Arc::from("run-1"));
        assert_eq!(plain.task_token(), None);
        assert_eq!(plain.role_arn(), None);
        assert_eq!(plain.function_name(), None);
        assert_eq!(plain.stored_execution(), None);
        // No countdown to restart, and none read.
        plain.heartbeat();
        assert_eq!(plain.last_beat(), None);
        for ctx in [copied, borrowed, plain.clone()] {
            let ctx = ctx.with_task_token("tok").with_role_arn("arn:aws:iam::1:role/r");
            assert_eq!(ctx.state_name(), "Charge");
            assert_eq!(ctx.resource(), "arn:aws:lambda:us-east-1:1:function:Charge");
            assert_eq!(ctx.execution_name(), "run-1");
            assert_eq!(ctx.retry_count(), 2);
            assert_eq!(ctx.task_token(), Some("tok"));
            assert_eq!(ctx.role_arn(), Some("arn:aws:iam::1:role/r"));
        }
    }
}
