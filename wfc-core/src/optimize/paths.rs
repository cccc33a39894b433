//! Pass `paths` (on by default): normalizes payload templates and Pass states so the runtime
//! takes its cheapest path, with identical results and histories.
//!
//! - **Constant templates become literals.** A `Parameters`/`ResultSelector` object or array with
//!   no `.$` entry anywhere below it is lowered as nested [`Template::Object`]s of literals; the
//!   runtime would walk it and rebuild it key by key on every visit. It becomes one
//!   [`Template::Literal`], which is a single clone (and lets the next rule apply).
//! - **A Pass state with literal `Parameters` becomes a Pass with a `Result`**, when its
//!   InputPath cannot fail (`$` or `null`): the runtime then skips InputPath and template
//!   evaluation and places the value directly. Its output is the same value.
//!
//! `$` itself needs no rewriting: the parser accepts exactly one spelling of the identity path
//! (no whitespace is allowed around `$`), and the runtime's fast paths test it structurally
//! ([`wfc_ir::Path::is_identity`]). What this pass adds is making more states *constant*, which
//! [`super::fold_pass`] and [`super::thread_choice`] build on.

use wfc_ir::{StateKind, StateMachine, Template, Workflow};

use super::graph;

/// Runs the pass over every machine; returns whether anything changed.
pub fn run(workflow: &mut Workflow) -> bool {
    graph::each_machine(workflow, &mut normalize_machine)
}

fn normalize_machine(machine: &mut StateMachine) -> bool {
    let mut changed = false;
    for state in &mut machine.states {
        changed |= normalize_state(&mut state.kind);
    }
    changed
}

fn normalize_state(kind: &mut StateKind) -> bool {
    match kind {
        StateKind::Pass(s) => {
            let mut changed = fold_opt(&mut s.parameters);
            let input_cannot_fail = s.input_path.as_ref().is_none_or(|p| p.is_identity());
            if s.result.is_none() && input_cannot_fail {
                if let Some(Template::Literal(value)) = &s.parameters {
                    s.result = Some(value.clone());
                    s.parameters = None;
                    changed = true;
                }
            }
            changed
        }
        StateKind::Task(s) => fold_opt(&mut s.parameters) | fold_opt(&mut s.result_selector),
        StateKind::Parallel(s) => fold_opt(&mut s.parameters) | fold_opt(&mut s.result_selector),
        // ItemSelector reads `$$.Map.Item.*`, which is a Path entry, so only constant parts fold.
        StateKind::Map(s) => fold_opt(&mut s.item_selector) | fold_opt(&mut s.result_selector),
        StateKind::Choice(_) | StateKind::Wait(_) | StateKind::Succeed(_) | StateKind::Fail(_) | StateKind::Sw(_) => false,
    }
}

fn fold_opt(template: &mut Option<Template>) -> bool {
    template.as_mut().is_some_and(fold)
}

/// Folds constant subtrees of `template` into literals, bottom-up; returns whether it changed.
pub fn fold(template: &mut Template) -> bool {
    let changed = match template {
        Template::Literal(_) | Template::Path(_) | Template::Intrinsic(_) => return false,
        Template::Array(items) => items.iter_mut().fold(false, |acc, t| fold(t) | acc),
        Template::Object(entries) => entries.iter_mut().fold(false, |acc, (_, t)| fold(t) | acc),
    };
    let literal = match template {
        Template::Array(items) => items
            .iter()
            .map(|t| match t {
                Template::Literal(v) => Some(v.clone()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(serde_json::Value::Array),
        Template::Object(entries) => entries
            .iter()
            .map(|(k, t)| match t {
                Template::Literal(v) => Some((k.clone(), v.clone())),
                _ => None,
            })
            .collect::<Option<serde_json::Map<_, _>>>()
            .map(serde_json::Value::Object),
        Template::Literal(_) | Template::Path(_) | Template::Intrinsic(_) => None,
    };
    match literal {
        Some(v) => {
            *template = Template::Literal(v);
            true
        }
        None => changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tests_support::*;
    use serde_json::json;
    use wfc_ir::{Path, Transition};

    #[test]
    fn folds_constant_templates_bottom_up() {
        let mut t = Template::Object(vec![
            ("a".into(), Template::Object(vec![("b".into(), Template::Literal(json!(1)))])),
            ("c".into(), Template::Array(vec![Template::Literal(json!("x"))])),
        ]);
        assert!(fold(&mut t));
        assert_eq!(t, Template::Literal(json!({"a": {"b": 1}, "c": ["x"]})));
        let mut mixed = Template::Object(vec![
            ("k".into(), Template::Object(vec![("b".into(), Template::Literal(json!(1)))])),
            ("p".into(), Template::Path(Path::parse("$.x").unwrap())),
        ]);
        assert!(fold(&mut mixed));
        let Template::Object(entries) = &mixed else { panic!("{mixed:?}") };
        assert_eq!(entries[0].1, Template::Literal(json!({"b": 1})));
        assert!(!fold(&mut mixed), "fixpoint");
    }

    #[test]
    fn literal_parameters_become_a_result_only_when_input_path_cannot_fail() {
        let params = Template::Object(vec![("v".into(), Template::Literal(json!(2)))]);
        let mut wf = workflow(vec![pass_state("P", Transition::End)]);
        let StateKind::Pass(p) = &mut wf.machine.states[0].kind else { panic!() };
        p.parameters = Some(params.clone());
        assert!(run(&mut wf));
        let StateKind::Pass(p) = &mut wf.machine.states[0].kind else { panic!() };
        assert_eq!((p.result.clone(), p.parameters.clone()), (Some(json!({"v": 2})), None));

        let mut wf = workflow(vec![path_pass("P", "$.maybe", Transition::End)]);
        let StateKind::Pass(p) = &mut wf.machine.states[0].kind else { panic!() };
        p.parameters = Some(params);
        run(&mut wf);
        let StateKind::Pass(p) = &wf.machine.states[0].kind else { panic!() };
        assert!(p.result.is_none(), "InputPath $.maybe can fail at run time, so it must still run");
    }
}
