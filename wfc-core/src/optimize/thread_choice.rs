//! Pass `thread-choice` (off by default): when a Choice state's input is a compile-time constant,
//! the state that leads to it jumps straight to the rule's target.
//!
//! The constant comes from the Choice's predecessor: a Pass state with a `Result` at `$` (see
//! [`super::fold_pass`]). The Choice's InputPath, rules (in order, with the runtime's
//! short-circuiting) and OutputPath are evaluated now; when every step is certain, the Pass state
//! takes the Choice's output as its `Result` and the chosen state as its `Next`. A rule that
//! could fail at run time (a missing variable), that reads `$$`, or whose operator is not
//! evaluated at compile time (StringMatches, timestamps, integer/float mixes), and a Choice with
//! no matching rule and no Default (`States.NoChoiceMatched`) are left alone, so every runtime
//! error still happens. The Choice itself stays if other states reach it.
//!
//! Observable effect: outputs, errors and task calls are unchanged, but the skipped Choice no
//! longer records `ChoiceStateEntered`/`ChoiceStateExited`. Off by default (see [`super`]).

use wfc_ir::{ReferencePath, StateKind, StateMachine, Transition, Workflow};

use super::{eval, graph};

/// Runs the pass over every machine; returns whether any jump was threaded.
pub fn run(workflow: &mut Workflow) -> bool {
    graph::each_machine(workflow, &mut thread_machine)
}

fn thread_machine(machine: &mut StateMachine) -> bool {
    let mut changed = false;
    for i in 0..machine.states.len() {
        let Some((output, target)) = decide(machine, i) else { continue };
        let Some(StateKind::Pass(pass)) = machine.states.get_mut(i).map(|s| &mut s.kind) else { continue };
        pass.result = Some(output);
        pass.result_path = ReferencePath::parse("$").ok();
        pass.output_path = wfc_ir::Path::parse("$").ok();
        pass.transition = Transition::Next(target);
        changed = true;
    }
    changed
}

/// If state `i` is a constant Pass going to a Choice whose outcome is certain: the Choice's
/// output and the state it chooses.
fn decide(machine: &StateMachine, i: usize) -> Option<(serde_json::Value, usize)> {
    let StateKind::Pass(pass) = &machine.states.get(i)?.kind else { return None };
    let constant = eval::constant_output(pass)?;
    let Transition::Next(j) = pass.transition else { return None };
    let StateKind::Choice(choice) = &machine.states.get(j)?.kind else { return None };
    // Skipping a Choice would skip the variables it assigns and its JSONata Output.
    if choice.assign.is_some() || choice.output.is_some() || choice.choices.iter().any(|r| r.assign.is_some() || r.output.is_some()) {
        return None;
    }
    let effective = eval::select(&choice.input_path, &constant)?;
    let mut target = None;
    for rule in &choice.choices {
        if eval::condition(&rule.condition, &effective)? {
            target = Some(rule.next);
            break;
        }
    }
    let target = target.or(choice.default)?;
    let output = eval::select(&choice.output_path, &effective)?;
    Some((output, target))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tests_support::*;
    use serde_json::json;
    use wfc_ir::Operator;

    #[test]
    fn threads_a_known_choice() {
        let mut wf = workflow(vec![
            const_pass("Init", json!({"n": 3}), Transition::Next(1)),
            choice_state("Route", vec![("$.n", Operator::NumericGreaterThan, json!(5), 2)], Some(3)),
            pass_state("Big", Transition::End),
            pass_state("Small", Transition::End),
        ]);
        assert!(run(&mut wf));
        let StateKind::Pass(init) = &wf.machine.states[0].kind else { panic!() };
        assert_eq!(init.transition, Transition::Next(3));
        assert_eq!(init.result, Some(json!({"n": 3})));
    }

    #[test]
    fn leaves_uncertain_choices() {
        // A missing variable is States.Runtime at run time; no Default is NoChoiceMatched.
        for (var, default) in [("$.missing", Some(2)), ("$.n", None)] {
            let mut wf = workflow(vec![
                const_pass("Init", json!({"n": 3}), Transition::Next(1)),
                choice_state("Route", vec![(var, Operator::NumericGreaterThan, json!(5), 2)], default),
                pass_state("Next", Transition::End),
            ]);
            assert!(!run(&mut wf), "{var} {default:?}");
        }
    }
}
