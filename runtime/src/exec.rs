//! The per-state semantics, shared by generated code and the interpreter.
//!
//! CONTRACT: generated code (wfc-core codegen) and [`crate::interp`] call exactly these functions.
//! Each takes the state's IR spec and its raw input and returns the effective output (or where to
//! go). Control flow (the state enum, the loop, which handler method to call) belongs to the
//! caller; data processing, retries, waits, timeouts and history belong here.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use wfc_ir::{ChoiceState, FailState, ParallelState, PassState, StateId, SucceedState, TaskState, WaitState, Workflow};

use crate::{Clock, Failure, History, HistoryEvent, TaskContext};

/// How to run an execution.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The clock: real time, or virtual time (see [`crate::block_on_virtual`]).
    pub clock: Clock,
    /// The execution name (`$$.Execution.Name`); a deterministic default when `None`.
    pub name: Option<String>,
    /// Seed for jitter and other randomness, so runs are reproducible.
    pub seed: u64,
}

/// How an execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Reached a terminal state normally.
    Succeeded,
    /// Ended with an error.
    Failed,
    /// Exceeded the workflow's TimeoutSeconds.
    TimedOut,
}

/// The outcome of a whole execution.
#[derive(Debug, Clone)]
pub struct ExecutionResult {
    /// How it ended.
    pub status: Status,
    /// The output when it succeeded.
    pub output: Option<Value>,
    /// The error when it failed or timed out.
    pub error: Option<Failure>,
    /// Every history event, in order.
    pub history: Vec<HistoryEvent>,
    /// Time from start to end on the execution's clock (virtual time on a virtual clock).
    pub elapsed: Duration,
}

impl ExecutionResult {
    /// `Ok(output)` when it succeeded, else the failure.
    pub fn into_result(self) -> Result<Value, Failure> {
        todo!()
    }
}

/// One running execution: its clock, history, context object and random source. Cheap to clone;
/// clones share state (Parallel branches record into the same history).
#[derive(Debug, Clone)]
pub struct Execution {}

impl Execution {
    /// Starts an execution of `workflow` on `input`, recording `ExecutionStarted`.
    pub fn start(workflow: &Workflow, input: &Value, options: RunOptions) -> Execution {
        todo!()
    }

    /// Runs the machine future under the workflow's TimeoutSeconds, records the closing event
    /// (`ExecutionSucceeded`/`Failed`/`TimedOut`) and returns the result.
    pub async fn finish<F>(&self, timeout_seconds: Option<u64>, machine: F) -> ExecutionResult
    where
        F: Future<Output = Result<Value, Failure>>,
    {
        todo!()
    }

    /// The execution's clock.
    pub fn clock(&self) -> &Clock {
        todo!()
    }

    /// The execution's history.
    pub fn history(&self) -> &History {
        todo!()
    }
}

/// Where a Task or Parallel state sends its output.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Follow the state's own transition (`Next` or `End`) with this effective output.
    Next(Value),
    /// A catcher matched: go to state `target` of the same machine with this output.
    Goto {
        /// The catcher's `Next`.
        target: StateId,
        /// The raw input with the Error Output placed at the catcher's ResultPath.
        output: Value,
    },
}

/// Which Choice rule matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Index into `Choices` of the first rule that matched; `None` means `Default`.
    pub branch: Option<usize>,
    /// The effective output (OutputPath applied).
    pub output: Value,
}

/// A Pass state.
pub async fn pass(exec: &Execution, name: &str, spec: &PassState, input: Value) -> Result<Value, Failure> {
    todo!()
}

/// A Task state: input processing, the handler call under TimeoutSeconds/HeartbeatSeconds with
/// panics caught, Retry, ResultSelector/ResultPath/OutputPath, and Catch.
///
/// `invoke` is called once per attempt with the effective input (after Parameters).
pub async fn task<F, Fut>(exec: &Execution, name: &str, spec: &TaskState, input: Value, invoke: F) -> Result<Step, Failure>
where
    F: FnMut(Value, TaskContext) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    todo!()
}

/// A Choice state. No match and no Default is `States.NoChoiceMatched`.
pub fn choice(exec: &Execution, name: &str, spec: &ChoiceState, input: Value) -> Result<Chosen, Failure> {
    todo!()
}

/// A Wait state, on the execution's clock.
pub async fn wait(exec: &Execution, name: &str, spec: &WaitState, input: Value) -> Result<Value, Failure> {
    todo!()
}

/// A Succeed state.
pub fn succeed(exec: &Execution, name: &str, spec: &SucceedState, input: Value) -> Result<Value, Failure> {
    todo!()
}

/// A Fail state: the failure that ends the machine (or is caught by an enclosing Parallel's Catch).
pub fn fail(exec: &Execution, name: &str, spec: &FailState, input: Value) -> Failure {
    todo!()
}

/// A Parallel state. `run_branches` is called once per attempt with the effective input and must
/// run every branch on it concurrently (see [`join_branches`]) and return their outputs in order.
pub async fn parallel<F, Fut>(exec: &Execution, name: &str, spec: &ParallelState, input: Value, run_branches: F) -> Result<Step, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Vec<Value>, Failure>>,
{
    todo!()
}

/// Runs branch futures concurrently; the first failure cancels (drops) the others and is returned
/// with its own error name, as AWS does.
pub async fn join_branches<'a>(branches: Vec<futures::future::BoxFuture<'a, Result<Value, Failure>>>) -> Result<Vec<Value>, Failure> {
    todo!()
}
