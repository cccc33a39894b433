//! The IR interpreter: runs a [`Workflow`] directly, calling the same [`wfc_runtime::exec`] functions
//! as generated code, so `wfc run` and compiled workflows share one semantics.
//!
//! Its one job is running definitions loaded at run time: `wfc run`, the durable worker
//! (`wfc-worker`, also for its replay check), `wfc serve`, the SWF decider and the Lambda server
//! (`wfc-aws`). It is built on `wfc-runtime`'s public items only, and the runtime does not depend
//! on it, so a compiled program (which links the runtime) carries no interpreter. A DISTRIBUTED
//! Map's chained child runs its item processor here through the function the host hands
//! [`wfc_runtime::distributed::run_chained_child`] ([`run_machine`]).
//!
//! ```
//! use wfc_interp::{self as interp, Handlers};
//! use wfc_runtime::ir::{StateKind, StateMachine, State, Transition, Workflow, WaitState, WaitDuration, Path};
//! use wfc_runtime::{RunOptions, Status, block_on_virtual, json};
//!
//! let dollar = Path::parse("$").ok();
//! let wait = WaitState { input_path: dollar.clone(), output_path: dollar, duration: WaitDuration::Seconds(3600), transition: Transition::End, assign: None, output: None };
//! let state = State { name: "Nap".into(), comment: None, location: None, kind: StateKind::Wait(wait) };
//! let workflow = Workflow { name: "nap".into(), comment: None, version: None, timeout_seconds: None,
//!     machine: StateMachine { start_at: 0, states: vec![state] } };
//! let result = block_on_virtual(interp::run(&workflow, &Handlers::new(), json!({"a": 1}), RunOptions::virtual_time()));
//! assert_eq!(result.status, Status::Succeeded);
//! assert_eq!(result.elapsed.as_secs(), 3600); // an hour of virtual time, instantly
//! ```

use futures::future::BoxFuture;
use serde_json::Value;
use wfc_ir::{StateKind, StateMachine, Transition, Workflow};

use wfc_runtime::Failure;
use wfc_runtime::exec::{self, Execution, ExecutionResult, RunOptions, Step};
/// The handler trait and table the interpreter calls Tasks through ([`wfc_runtime::handlers`]).
pub use wfc_runtime::handlers::{DynHandler, Handlers};

mod states;

use states::task_boxed;
pub use states::{choice, fail, map, parallel, pass, succeed, task, wait};

/// Runs a whole workflow on `input`: the execution, its TimeoutSeconds, and its history.
pub async fn run(workflow: &Workflow, handler: &dyn DynHandler, input: Value, options: RunOptions) -> ExecutionResult {
    if wfc_runtime::sw::is_sw(workflow) {
        return wfc_runtime::sw::run(workflow, handler, input, options).await;
    }
    let exec = Execution::start(&workflow.name, &input, options);
    exec.finish(workflow.timeout_seconds, run_machine(&exec, &workflow.machine, handler, input)).await
}

/// Runs one state machine (the top level or a Parallel branch) from its start state and returns
/// its output.
pub async fn run_machine(
    exec: &Execution,
    machine: &StateMachine,
    handler: &dyn DynHandler,
    input: Value,
) -> Result<Value, Failure> {
    let mut id = machine.start_at;
    let mut input = input;
    loop {
        let Some(state) = machine.states.get(id) else {
            return Err(Failure::runtime(format!(
                "the state machine has no state number {id} (a corrupted definition)"
            )));
        };
        let name = state.name.as_str();
        let (output, transition) = match &state.kind {
            StateKind::Pass(spec) => (pass(exec, name, spec, input).await?, spec.transition),
            StateKind::Task(spec) => {
                let resource = spec.resource.as_str();
                let step = task_boxed(exec, name, spec, input, |effective, ctx| handler.call(resource, effective, ctx))
                    .await?;
                match step {
                    Step::Next(output) => (output, spec.transition),
                    Step::Goto { target, output } => (output, Transition::Next(target)),
                }
            }
            StateKind::Choice(spec) => {
                let chosen = choice(exec, name, spec, input)?;
                let next = match chosen.branch {
                    Some(i) => spec.choices.get(i).map(|c| c.next),
                    None => spec.default,
                };
                let Some(next) = next else {
                    return Err(Failure::runtime(format!("the Choice state '{name}' chose a rule it does not have")));
                };
                (chosen.output, Transition::Next(next))
            }
            StateKind::Wait(spec) => (wait(exec, name, spec, input).await?, spec.transition),
            StateKind::Succeed(spec) => return succeed(exec, name, spec, input),
            StateKind::Fail(spec) => return Err(fail(exec, name, spec, input)),
            StateKind::Map(spec) => {
                let processor = &spec.item_processor;
                let step =
                    map(exec, name, spec, input, |item, line| run_iteration(processor, handler, item, line)).await?;
                match step {
                    Step::Next(output) => (output, spec.transition),
                    Step::Goto { target, output } => (output, Transition::Next(target)),
                }
            }
            StateKind::Sw(spec) => match wfc_runtime::sw::step(exec, name, spec, input, handler).await? {
                wfc_runtime::sw::Step::Next { target, output } => (output, Transition::Next(target)),
                wfc_runtime::sw::Step::End(output) => (output, Transition::End),
                wfc_runtime::sw::Step::Terminate(output) => {
                    return Err(Failure::new(wfc_runtime::sw::TERMINATE, output.to_string()));
                }
            },
            StateKind::Parallel(spec) => {
                let step = parallel(exec, name, spec, input, |effective, exec| {
                    run_branches(spec.branches.as_slice(), handler, effective, exec)
                })
                .await?;
                match step {
                    Step::Next(output) => (output, spec.transition),
                    Step::Goto { target, output } => (output, Transition::Next(target)),
                }
            }
        };
        match transition {
            Transition::Next(next) => {
                id = next;
                input = output;
            }
            Transition::End => return Ok(output),
        }
    }
}

/// Runs every branch on its own line of control, concurrently; boxed because branches recurse
/// into [`run_machine`].
fn run_branches<'a>(
    branches: &'a [StateMachine],
    handler: &'a dyn DynHandler,
    input: Value,
    exec: Execution,
) -> BoxFuture<'a, Result<Vec<Value>, Failure>> {
    Box::pin(async move {
        let futures: Vec<BoxFuture<'a, Result<Value, Failure>>> = branches
            .iter()
            .map(|branch| {
                let exec = exec.branch();
                let input = input.clone();
                // The machine's (large) future is boxed where it is made, so the branch's own
                // future is small and nothing moves the machine's again (each move is a copy of
                // all of it).
                let future: BoxFuture<'a, Result<Value, Failure>> = Box::pin(async move {
                    let machine = Box::pin(run_machine(&exec, branch, handler, input));
                    exec.in_branch_context(machine).await
                });
                future
            })
            .collect();
        exec::join_branches(futures).await
    })
}

/// Runs one Map iteration through the item processor on the line of control `exec`; boxed
/// because iterations recurse into [`run_machine`].
fn run_iteration<'a>(
    processor: &'a StateMachine,
    handler: &'a dyn DynHandler,
    input: Value,
    exec: Execution,
) -> BoxFuture<'a, Result<Value, Failure>> {
    Box::pin(async move { run_machine(&exec, processor, handler, input).await })
}
