//! A hand-written stand-in for what wfc-core generates: a state enum driven by a loop that calls
//! the interpreter's per-state functions (`wfc_interp::*`), run with `tokio::spawn`. It pins
//! the contract they keep (generated code now calls `abi`'s).

use wfc_runtime::__private as rt;
use wfc_runtime::{Failure, RunOptions, Status, TaskContext, block_on_virtual, json};

const IR_JSON: &str = r#"{
  "name": "order", "comment": null, "version": null, "timeout_seconds": null,
  "machine": { "start_at": 0, "states": [
    { "name": "Check", "comment": null, "location": null, "kind": { "Task": {
        "resource": "check", "input_path": "$", "parameters": null, "result_selector": null,
        "result_path": "$.stock", "output_path": "$", "timeout": null, "heartbeat": null,
        "retry": [], "catch": [], "transition": { "Next": 1 } } } },
    { "name": "InStock?", "comment": null, "location": null, "kind": { "Choice": {
        "input_path": "$", "output_path": "$", "default": 3,
        "choices": [ { "condition": { "Compare": { "variable": "$.stock",
            "operator": "NumericGreaterThan", "operand": { "Literal": 0 } } }, "next": 2 } ] } } },
    { "name": "Both", "comment": null, "location": null, "kind": { "Parallel": {
        "input_path": "$", "parameters": null, "result_selector": null, "result_path": "$.both",
        "output_path": "$", "retry": [], "catch": [], "transition": "End",
        "branches": [
          { "start_at": 0, "states": [ { "name": "A", "comment": null, "location": null,
              "kind": { "Pass": { "input_path": "$", "parameters": null, "result": "a",
                "result_path": "$", "output_path": "$", "transition": "End" } } } ] },
          { "start_at": 0, "states": [ { "name": "B", "comment": null, "location": null,
              "kind": { "Wait": { "input_path": "$", "output_path": "$.stock",
                "duration": { "Seconds": 5 }, "transition": "End" } } } ] } ] } } },
    { "name": "OutOfStock", "comment": null, "location": null, "kind": { "Fail": {
        "error": "OutOfStock", "cause": "none left", "error_path": null, "cause_path": null } } }
  ] }
}"#;

// The interpreter's per-state functions take the IR; this stand-in loads it (generated code
// carries none any more).
static IR: rt::LazyLock<Result<wfc_runtime::ir::Workflow, Failure>> =
    rt::LazyLock::new(|| rt::serde_json::from_str(IR_JSON).map_err(|e| Failure::runtime(e.to_string())));

trait Handler: Send + Sync {
    fn check(&self, input: rt::Value, ctx: TaskContext) -> impl Future<Output = Result<rt::Value, Failure>> + Send;
}

struct Stock(i64);

impl Handler for Stock {
    async fn check(&self, _input: rt::Value, ctx: TaskContext) -> Result<rt::Value, Failure> {
        assert_eq!(ctx.resource(), "check");
        Ok(json!(self.0))
    }
}

enum State {
    Check(rt::Value),
    InStock(rt::Value),
    Both(rt::Value),
    OutOfStock(rt::Value),
}

fn spec(index: usize) -> Result<&'static wfc_runtime::ir::StateKind, Failure> {
    let wf = IR.as_ref().map_err(Clone::clone)?;
    wf.machine.states.get(index).map(|s| &s.kind).ok_or_else(|| Failure::runtime("no such state"))
}

async fn resume<H: Handler>(handler: &H, exec: &rt::Execution, mut state: State) -> Result<rt::Value, Failure> {
    loop {
        state = match state {
            State::Check(input) => {
                let wfc_runtime::ir::StateKind::Task(spec) = spec(0)? else { return Err(Failure::runtime("kind")) };
                match wfc_interp::task(exec, "Check", spec, input, move |input, ctx| handler.check(input, ctx)).await? {
                    rt::Step::Next(output) => State::InStock(output),
                    rt::Step::Goto { output, .. } => return Ok(output),
                }
            }
            State::InStock(input) => {
                let wfc_runtime::ir::StateKind::Choice(spec) = spec(1)? else { return Err(Failure::runtime("kind")) };
                let rt::Chosen { branch, output } = wfc_interp::choice(exec, "InStock?", spec, input)?;
                match branch {
                    Some(0) => State::Both(output),
                    _ => State::OutOfStock(output),
                }
            }
            State::Both(input) => {
                let wfc_runtime::ir::StateKind::Parallel(spec) = spec(2)? else { return Err(Failure::runtime("kind")) };
                let branches = |input: rt::Value, exec: rt::Execution| async move {
                    let wfc_runtime::ir::StateKind::Parallel(p) = spec_static(2)? else {
                        return Err(Failure::runtime("kind"));
                    };
                    let (a, b) = (&p.branches[0].states[0].kind, &p.branches[1].states[0].kind);
                    let (wfc_runtime::ir::StateKind::Pass(a), wfc_runtime::ir::StateKind::Wait(b)) = (a, b) else {
                        return Err(Failure::runtime("kind"));
                    };
                    let (ea, eb) = (exec.branch(), exec.branch());
                    let ia = input.clone();
                    rt::exec::join_branches(vec![
                        rt::FutureExt::boxed(async move { wfc_interp::pass(&ea, "A", a, ia).await }),
                        rt::FutureExt::boxed(async move { wfc_interp::wait(&eb, "B", b, input).await }),
                    ])
                    .await
                };
                match wfc_interp::parallel(exec, "Both", spec, input, branches).await? {
                    rt::Step::Next(output) => return Ok(output),
                    rt::Step::Goto { output, .. } => return Ok(output),
                }
            }
            State::OutOfStock(input) => {
                let wfc_runtime::ir::StateKind::Fail(spec) = spec(3)? else { return Err(Failure::runtime("kind")) };
                return Err(wfc_interp::fail(exec, "OutOfStock", spec, input));
            }
        }
    }
}

fn spec_static(index: usize) -> Result<&'static wfc_runtime::ir::StateKind, Failure> {
    spec(index)
}

async fn run_with<H: Handler>(handler: &H, input: rt::Value, options: RunOptions) -> rt::ExecutionResult {
    let workflow = match IR.as_ref() {
        Ok(w) => w,
        Err(f) => panic!("{f}"),
    };
    let exec = rt::Execution::start(&workflow.name, &input, options);
    exec.finish(workflow.timeout_seconds, resume(handler, &exec, State::Check(input))).await
}

#[test]
fn the_generated_shape_runs_on_virtual_time() {
    const _: () = rt::ABI_V1;
    let r = block_on_virtual(run_with(&Stock(3), json!({"order": 1}), RunOptions::virtual_time()));
    assert_eq!(r.status, Status::Succeeded, "{:?}", r.error);
    assert_eq!(r.output, Some(json!({"order": 1, "stock": 3, "both": ["a", 3]})));
    assert_eq!(r.elapsed.as_secs(), 5);

    let r = block_on_virtual(run_with(&Stock(0), json!({}), RunOptions::virtual_time()));
    assert_eq!(r.status, Status::Failed);
    assert_eq!(r.error, Some(Failure::new("OutOfStock", "none left")));
}

#[test]
fn the_generated_shape_is_send_and_runs_under_tokio_spawn() {
    // tokio::spawn demands Send + 'static on any runtime flavour; the virtual one keeps it fast.
    let joined = block_on_virtual(async {
        tokio::spawn(async {
            let handler = Stock(1);
            run_with(&handler, json!({}), RunOptions::virtual_time()).await
        })
        .await
    });
    let r = joined.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.output, Some(json!({"stock": 1, "both": ["a", 1]})));
}
