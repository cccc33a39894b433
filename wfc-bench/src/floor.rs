//! `--floors`: the Task chain's work built up from the bare handler calls towards the compiled
//! engine, one layer at a time, so that each layer's cost by the clock can be read off (ratios
//! to hand-written code in the same run, as every row).
//!
//! Each floor does the same serde_json work as the workload and returns the same output; none
//! records history (they compare with the compiled engine at the express level):
//!
//! - `floor-async`: the 100 handler calls awaited in one `block_on`, nothing else: the floor of
//!   any engine that calls `async` handlers;
//! - `floor-exec`: plus an [`Execution`] (started and finished, as every engine's run) and, per
//!   Task, what a counted Task visit does besides counting events: the request's and the
//!   result's payload checks and the handler under `catch_unwind`;
//! - `floor-layers`: `floor-exec`'s per-Task work inside two `async` functions the compiler
//!   does not inline, each returning `Result<Step, Failure>` as the runtime's visit layers do;
//! - `floor-slots`: the same two layers, leaving the document in a slot the caller owns and
//!   returning only `Result<(), Failure>`;
//! - `floor-visit`: the runtime's whole Task visit (`abi::task`, as generated code calls it)
//!   awaited in a plain loop: the compiled engine without its generated driver.
//!
//! docs/benchmarks.md ("Where the compiled Task chain's clock goes: layers") reads them.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use serde_json::Value;
use wfc_runtime::__private::{FutureExt, Step, abi};
use wfc_runtime::{Execution, Failure, HistoryLevel, Limits, RunOptions, TaskContext};

use crate::Bench;
use crate::task_chain::Handler;

/// One floor: an execution of the Task chain on `input`, giving its output.
type Floor = fn(&tokio::runtime::Runtime, Value) -> Value;

/// The Tasks in the chain.
const TASKS: usize = 100;

/// The floors, by engine name, in the order they build up.
pub(crate) const FLOORS: [(&str, Floor); 5] = [
    ("floor-async", bare),
    ("floor-exec", exec),
    ("floor-layers", layers),
    ("floor-slots", slots),
    ("floor-visit", visit),
];

/// The context every floor's handler gets (one, cloned: an `Arc` increment).
fn context() -> TaskContext {
    TaskContext::new("Step", crate::INC, 0, "floor")
}

/// Runs `machine` as an execution (started, finished, its result's output taken), as every
/// engine's run is.
fn in_execution<F, Fut>(rt: &tokio::runtime::Runtime, input: Value, machine: F) -> Value
where
    F: FnOnce(Value) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let options = RunOptions::real().with_history(HistoryLevel::Express);
    let result = rt.block_on(async move {
        let exec = Execution::start("task_chain", &input, options);
        exec.finish(None, machine(input)).await
    });
    result.output.unwrap_or(Value::Null)
}

fn bare(rt: &tokio::runtime::Runtime, input: Value) -> Value {
    let ctx = context();
    rt.block_on(async move {
        let mut v = input;
        for _ in 0..TASKS {
            v = Bench.inc(v, ctx.clone()).await.unwrap_or(Value::Null);
        }
        v
    })
}

/// The handler's future under `catch_unwind`, as a Task visit awaits it (a plain function, so
/// that it adds no `async` layer of its own).
fn guarded(input: Value, ctx: &TaskContext) -> impl Future<Output = std::thread::Result<Result<Value, Failure>>> {
    AssertUnwindSafe(Bench.inc(input, ctx.clone())).catch_unwind()
}

/// The outcome of a [`guarded`] call: a panic fails it as a Task visit's would.
fn outcome(result: std::thread::Result<Result<Value, Failure>>) -> Result<Value, Failure> {
    result.unwrap_or_else(|_| Err(Failure::runtime("the handler panicked")))
}

fn exec(rt: &tokio::runtime::Runtime, input: Value) -> Value {
    let (ctx, limits) = (context(), Limits::default());
    in_execution(rt, input, |input| async move {
        let mut v = input;
        for _ in 0..TASKS {
            limits.check_payload("Step", &v)?;
            v = outcome(guarded(v, &ctx).await)?;
            limits.check_payload("Step", &v)?;
        }
        Ok(v)
    })
}

#[inline(never)]
fn inner_layer<'a>(v: Value, ctx: &'a TaskContext) -> impl Future<Output = Result<Step, Failure>> + 'a {
    async move { outcome(guarded(v, ctx).await).map(Step::Next) }
}

#[inline(never)]
fn outer_layer<'a>(
    v: Value,
    ctx: &'a TaskContext,
    limits: &'a Limits,
) -> impl Future<Output = Result<Step, Failure>> + 'a {
    async move {
        limits.check_payload("Step", &v)?;
        let step = inner_layer(v, ctx).await?;
        if let Step::Next(output) = &step {
            limits.check_payload("Step", output)?;
        }
        Ok(step)
    }
}

fn layers(rt: &tokio::runtime::Runtime, input: Value) -> Value {
    let (ctx, limits) = (context(), Limits::default());
    in_execution(rt, input, |input| async move {
        let mut v = input;
        for _ in 0..TASKS {
            match outer_layer(v, &ctx, &limits).await? {
                Step::Next(output) => v = output,
                Step::Goto { .. } => return Err(Failure::runtime("no Task of the chain has a catcher")),
            }
        }
        Ok(v)
    })
}

#[inline(never)]
fn inner_slot<'a>(v: &'a mut Value, ctx: &'a TaskContext) -> impl Future<Output = Result<(), Failure>> + 'a {
    async move {
        *v = outcome(guarded(std::mem::take(v), ctx).await)?;
        Ok(())
    }
}

#[inline(never)]
fn outer_slot<'a>(
    v: &'a mut Value,
    ctx: &'a TaskContext,
    limits: &'a Limits,
) -> impl Future<Output = Result<(), Failure>> + 'a {
    async move {
        limits.check_payload("Step", v)?;
        inner_slot(v, ctx).await?;
        limits.check_payload("Step", v)
    }
}

fn slots(rt: &tokio::runtime::Runtime, input: Value) -> Value {
    let (ctx, limits) = (context(), Limits::default());
    in_execution(rt, input, |input| async move {
        let mut v = input;
        for _ in 0..TASKS {
            outer_slot(&mut v, &ctx, &limits).await?;
        }
        Ok(v)
    })
}

/// The chain's Tasks as generated code describes them (all alike but for the name).
static STEP: abi::PlainTask = abi::PlainTask {
    name: "Step",
    resource: crate::INC,
    lambda_function: abi::is_function_arn(crate::INC),
    retriers: &[],
    catchers: &[],
    shape: abi::TaskShape { input_moves: true, single_attempt: true, result_is_output: true },
};

fn visit(rt: &tokio::runtime::Runtime, input: Value) -> Value {
    let options = RunOptions::real().with_history(HistoryLevel::Express);
    let result = rt.block_on(async move {
        let exec = Execution::start("task_chain", &input, options);
        let machine = async {
            let mut v = input;
            for _ in 0..TASKS {
                match abi::task(&exec, STEP.name, &STEP, v, |input, ctx| Bench.inc(input, ctx)).await? {
                    Step::Next(output) => v = output,
                    Step::Goto { .. } => return Err(Failure::runtime("no Task of the chain has a catcher")),
                }
            }
            Ok(v)
        };
        exec.finish(None, machine).await
    });
    result.output.unwrap_or(Value::Null)
}
