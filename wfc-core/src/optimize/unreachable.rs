//! Pass `unreachable`: removes the states of each machine that no path from its start reaches,
//! and renumbers the rest.
//!
//! The ASL front end already rejects unreachable states (WFC0309), so on a fresh definition this
//! pass finds nothing; it cleans up after [`super::fold_pass`] and [`super::thread_choice`],
//! which reroute transitions around states, and after front ends that do not check reachability.
//! Removing a state that never runs cannot change any execution, so the history is identical.
//!
//! Renumbering is safe because [`wfc_ir::StateId`]s are only ever indices into the enclosing
//! machine: every target (Next, Choice rules and Default, Catch) is rewritten through one
//! old → new table, states keep their relative order, and names are untouched.

use wfc_ir::{StateId, StateMachine, Workflow};

use super::graph;

/// Runs the pass over every machine; returns whether any state was removed.
pub fn run(workflow: &mut Workflow) -> bool {
    graph::each_machine(workflow, &mut prune)
}

/// Which states of `machine` are reachable from its start.
pub fn reachable(machine: &StateMachine) -> Vec<bool> {
    let mut seen = vec![false; machine.states.len()];
    let mut stack = vec![machine.start_at];
    while let Some(id) = stack.pop() {
        let Some(state) = machine.states.get(id) else { continue };
        if std::mem::replace(&mut seen[id], true) {
            continue;
        }
        stack.extend(graph::successors(&state.kind));
    }
    seen
}

/// Removes the unreachable states of one machine; returns whether it removed any.
fn prune(machine: &mut StateMachine) -> bool {
    let keep = reachable(machine);
    if keep.iter().all(|k| *k) {
        return false;
    }
    // old id → new id for the states that stay.
    let mut new_id: Vec<Option<StateId>> = Vec::with_capacity(keep.len());
    let mut next = 0;
    for k in &keep {
        new_id.push(k.then(|| {
            next += 1;
            next - 1
        }));
    }
    let old = std::mem::take(&mut machine.states);
    for (state, kept) in old.into_iter().zip(&keep) {
        if *kept {
            machine.states.push(state);
        }
    }
    // Every target of a reachable state is reachable, so the lookup always succeeds; the
    // fallback only keeps this total.
    let remap = |id: StateId| new_id.get(id).copied().flatten().unwrap_or(id);
    for state in &mut machine.states {
        graph::retarget(&mut state.kind, remap);
    }
    machine.start_at = remap(machine.start_at);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tests_support::*;
    use wfc_ir::{StateKind, Transition};

    #[test]
    fn removes_and_renumbers() {
        // 0: A -> 2, 1: Dead -> 3, 2: B (catch -> 3), 3: C end
        let mut wf = workflow(vec![
            pass_state("A", Transition::Next(2)),
            pass_state("Dead", Transition::Next(3)),
            task_state("B", Transition::End, Some(3)),
            pass_state("C", Transition::End),
        ]);
        assert!(run(&mut wf));
        let names: Vec<&str> = wf.machine.states.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "C"]);
        let StateKind::Pass(a) = &wf.machine.states[0].kind else { panic!() };
        assert_eq!(a.transition, Transition::Next(1));
        let StateKind::Task(b) = &wf.machine.states[1].kind else { panic!() };
        assert_eq!(b.catch[0].next, 2);
        assert!(!run(&mut wf), "a second run finds nothing");
    }

    #[test]
    fn keeps_everything_reachable_and_handles_start_not_first() {
        let mut wf = workflow(vec![pass_state("Dead", Transition::End), pass_state("Start", Transition::End)]);
        wf.machine.start_at = 1;
        assert!(run(&mut wf));
        assert_eq!(wf.machine.states.len(), 1);
        assert_eq!(wf.machine.start_at, 0);
        assert_eq!(wf.machine.states[0].name, "Start");
    }

    #[test]
    fn prunes_inside_parallel_branches() {
        let branch = machine(vec![pass_state("In", Transition::End), pass_state("Orphan", Transition::End)]);
        let mut wf = workflow(vec![parallel_state("Par", vec![branch])]);
        assert!(run(&mut wf));
        let StateKind::Parallel(p) = &wf.machine.states[0].kind else { panic!() };
        assert_eq!(p.branches[0].states.len(), 1);
    }
}
