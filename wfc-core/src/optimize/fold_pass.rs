//! Pass `fold-pass` (off by default): folds a chain of Pass states whose input is a compile-time
//! constant into the first of them.
//!
//! A Pass state with a `Result` placed at `$` (the default ResultPath) outputs a constant,
//! whatever its input. When its `Next` is another Pass state, that state's output can be computed
//! now (with the same rules as `wfc_runtime::exec::pass`), so the first state takes that output
//! as its own `Result` and the second state's `Next`/`End`, and the chain runs one state instead
//! of two. Repeats along the chain. The skipped state stays if anything else still goes to it;
//! otherwise [`super::unreachable`] removes it.
//!
//! Not folded: a next state that reads the context object (`$$` differs per execution), a path
//! that would select nothing or a ResultPath that cannot be applied (those are `States.Runtime`
//! at run time, which must still happen), and a state's jump to itself.
//!
//! Observable effect: outputs, errors and task calls are unchanged, but the folded states no
//! longer record `PassStateEntered`/`PassStateExited`, and the first state's exited output is
//! the chain's output. That is why this pass is off by default (see [`super`]).

use wfc_ir::{PassState, ReferencePath, StateKind, StateMachine, Transition, Workflow};

use super::{eval, graph};

/// Runs the pass over every machine; returns whether anything was folded.
pub fn run(workflow: &mut Workflow) -> bool {
    graph::each_machine(workflow, &mut fold_machine)
}

fn fold_machine(machine: &mut StateMachine) -> bool {
    let mut changed = false;
    for i in 0..machine.states.len() {
        // A chain can revisit states through a cycle of constant Pass states; each fold moves
        // one step, so this many folds is enough for any chain that ends.
        for _ in 0..machine.states.len() {
            let Some((output, transition)) = fold_step(machine, i) else { break };
            let Some(StateKind::Pass(first)) = machine.states.get_mut(i).map(|s| &mut s.kind) else { break };
            *first = constant_pass(output, transition);
            changed = true;
        }
    }
    changed
}

/// If state `i` is a constant Pass whose Next is a Pass state that can be evaluated now: the
/// folded output and the transition to take after it.
fn fold_step(machine: &StateMachine, i: usize) -> Option<(serde_json::Value, Transition)> {
    let StateKind::Pass(first) = &machine.states.get(i)?.kind else { return None };
    let constant = eval::constant_output(first)?;
    let Transition::Next(j) = first.transition else { return None };
    if j == i {
        return None;
    }
    let StateKind::Pass(next) = &machine.states.get(j)?.kind else { return None };
    let output = eval::pass_output(next, &constant)?;
    Some((output, next.transition))
}

/// A Pass state that outputs `output` and goes on to `transition`: `Result` at `$`, default
/// paths. InputPath and Parameters are never evaluated next to a Result, so they are dropped.
fn constant_pass(output: serde_json::Value, transition: Transition) -> PassState {
    let dollar = wfc_ir::Path::parse("$").ok();
    PassState {
        input_path: dollar.clone(),
        parameters: None,
        result: Some(output),
        result_path: ReferencePath::parse("$").ok(),
        output_path: dollar,
        transition,
        assign: None,
        output: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tests_support::*;
    use serde_json::json;

    #[test]
    fn folds_a_chain_into_its_first_state() {
        let mut wf = workflow(vec![
            const_pass("A", json!({"n": 1}), Transition::Next(1)),
            const_pass("B", json!({"n": 2}), Transition::Next(2)),
            path_pass("C", "$.n", Transition::Next(3)),
            task_state("T", Transition::End, None),
        ]);
        assert!(run(&mut wf));
        let StateKind::Pass(a) = &wf.machine.states[0].kind else { panic!() };
        assert_eq!(a.result, Some(json!(2)));
        assert_eq!(a.transition, Transition::Next(3));
        assert!(!run(&mut wf), "fixpoint");
    }

    #[test]
    fn stops_where_the_runtime_would_fail_or_read_context() {
        let mut wf = workflow(vec![
            const_pass("A", json!({"n": 1}), Transition::Next(1)),
            path_pass("Missing", "$.nope", Transition::End),
        ]);
        assert!(!run(&mut wf), "an InputPath that selects nothing must still fail at run time");
        let mut wf = workflow(vec![
            const_pass("A", json!({"n": 1}), Transition::Next(1)),
            path_pass("Ctx", "$$.Execution.Name", Transition::End),
        ]);
        assert!(!run(&mut wf));
    }

    #[test]
    fn terminates_on_cycles() {
        let mut wf = workflow(vec![
            const_pass("A", json!(1), Transition::Next(1)),
            const_pass("B", json!(2), Transition::Next(2)),
            const_pass("C", json!(3), Transition::Next(1)),
        ]);
        run(&mut wf);
        let mut self_loop = workflow(vec![const_pass("A", json!(1), Transition::Next(0))]);
        assert!(!run(&mut self_loop));
    }
}
