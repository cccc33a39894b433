//! Graph helpers shared by the passes: the successors of a state and rewriting its targets.
//!
//! Every match here is exhaustive on purpose: a new state kind with transitions must say where
//! they go, or reachability would silently drop its targets.

use wfc_ir::{StateId, StateKind, StateMachine, Transition, Workflow};

/// Every state id `kind` can transfer control to within its own machine (Next, Choice rules and
/// Default, Catch targets). Branch machines are separate scopes and are not included.
pub(crate) fn successors(kind: &StateKind) -> Vec<StateId> {
    let mut out = Vec::new();
    let next = |t: &Transition, out: &mut Vec<StateId>| {
        if let Transition::Next(id) = t {
            out.push(*id);
        }
    };
    match kind {
        StateKind::Pass(s) => next(&s.transition, &mut out),
        StateKind::Task(s) => {
            next(&s.transition, &mut out);
            out.extend(s.catch.iter().map(|c| c.next));
        }
        StateKind::Choice(s) => {
            out.extend(s.choices.iter().map(|c| c.next));
            out.extend(s.default);
        }
        StateKind::Wait(s) => next(&s.transition, &mut out),
        StateKind::Succeed(_) | StateKind::Fail(_) => {}
        StateKind::Parallel(s) => {
            next(&s.transition, &mut out);
            out.extend(s.catch.iter().map(|c| c.next));
        }
        StateKind::Map(s) => {
            next(&s.transition, &mut out);
            out.extend(s.catch.iter().map(|c| c.next));
        }
        StateKind::Sw(s) => out.extend(s.edges().into_iter().filter_map(|(t, _)| t)),
    }
    out
}

/// Rewrites every target of `kind` (as listed by [`successors`]) through `map`.
pub(crate) fn retarget(kind: &mut StateKind, map: impl Fn(StateId) -> StateId) {
    let next = |t: &mut Transition| {
        if let Transition::Next(id) = t {
            *id = map(*id);
        }
    };
    match kind {
        StateKind::Pass(s) => next(&mut s.transition),
        StateKind::Task(s) => {
            next(&mut s.transition);
            for c in &mut s.catch {
                c.next = map(c.next);
            }
        }
        StateKind::Choice(s) => {
            for c in &mut s.choices {
                c.next = map(c.next);
            }
            if let Some(d) = &mut s.default {
                *d = map(*d);
            }
        }
        StateKind::Wait(s) => next(&mut s.transition),
        StateKind::Succeed(_) | StateKind::Fail(_) => {}
        StateKind::Parallel(s) => {
            next(&mut s.transition);
            for c in &mut s.catch {
                c.next = map(c.next);
            }
        }
        StateKind::Map(s) => {
            next(&mut s.transition);
            for c in &mut s.catch {
                c.next = map(c.next);
            }
        }
        StateKind::Sw(s) => s.retarget(map),
    }
}

/// The machines nested directly in `kind` (Parallel branches, a Map's item processor).
pub(crate) fn nested_mut(kind: &mut StateKind) -> &mut [StateMachine] {
    match kind {
        StateKind::Parallel(p) => &mut p.branches,
        StateKind::Map(m) => std::slice::from_mut(&mut m.item_processor),
        StateKind::Pass(_)
        | StateKind::Task(_)
        | StateKind::Choice(_)
        | StateKind::Wait(_)
        | StateKind::Succeed(_)
        | StateKind::Fail(_)
        // An SW subflow embeds a whole workflow, optimized on its own.
        | StateKind::Sw(_) => &mut [],
    }
}

/// Calls `f` on every machine of `workflow`, nested ones first, and returns whether any call
/// reported a change.
pub(crate) fn each_machine(workflow: &mut Workflow, f: &mut impl FnMut(&mut StateMachine) -> bool) -> bool {
    fn walk(m: &mut StateMachine, f: &mut impl FnMut(&mut StateMachine) -> bool) -> bool {
        let mut changed = false;
        for s in &mut m.states {
            for b in nested_mut(&mut s.kind) {
                changed |= walk(b, f);
            }
        }
        changed | f(m)
    }
    walk(&mut workflow.machine, f)
}
