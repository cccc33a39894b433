//! Pass `fold-intrinsics` (on by default): constant folding of intrinsic functions whose
//! arguments are all literals.
//!
//! `"x.$": "States.MathAdd(1, 2)"` becomes the literal `3`, `States.Format('a{}', 'b')` becomes
//! `"ab"`, `States.StringToJson('{"a":1}')` becomes `{"a": 1}`, in `Parameters`,
//! `ResultSelector`, `ItemSelector` and `Assign`, at any depth (nested calls included). The value
//! is computed by the runtime's own evaluator ([`wfc_ir::intrinsics::eval::evaluate_constant`],
//! which the runtime calls for every evaluation), so it is the value the runtime would produce.
//!
//! Never folded:
//! - a call with a path argument anywhere (`$`, `$$`, a variable): it differs per input;
//! - `States.UUID` and `States.MathRandom`, even seeded (randomness stays a run-time event);
//! - a call that fails (`States.StringToJson('{oops')`, `States.ArrayGetItem(States.Array(1, 2), 5)`): it is
//!   left for the runtime, so the execution fails with the same `States.Runtime` error and cause,
//!   at the same point, as without the pass.
//!
//! A template whose entries all become literals is then folded whole by the `paths` pass, which
//! runs next. Folding changes no event: the state still runs, and its output is the same.

use wfc_ir::{Template, Workflow};

use super::visit::{self, Visitor};

/// Runs the pass over every machine; returns whether anything changed.
pub fn run(workflow: &mut Workflow) -> bool {
    visit::workflow(workflow, &mut Fold)
}

struct Fold;

impl Visitor for Fold {
    fn template(&mut self, template: &mut Template) -> bool {
        fold(template)
    }
}

/// Folds every constant intrinsic in `template`; returns whether it changed anything.
pub fn fold(template: &mut Template) -> bool {
    match template {
        Template::Literal(_) | Template::Path(_) => false,
        Template::Intrinsic(i) => match wfc_ir::intrinsics::eval::evaluate_constant(i) {
            Some(value) => {
                *template = Template::Literal(value);
                true
            }
            None => false,
        },
        Template::Array(items) => items.iter_mut().fold(false, |c, t| fold(t) | c),
        Template::Object(entries) => entries.iter_mut().fold(false, |c, (_, t)| fold(t) | c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tests_support::*;
    use serde_json::json;
    use wfc_ir::intrinsics::Intrinsic;
    use wfc_ir::{Assign, Path, StateKind, Transition};

    fn call(text: &str) -> Template {
        Template::Intrinsic(Intrinsic::parse(text).unwrap())
    }

    #[test]
    fn folds_literal_calls_and_leaves_the_rest() {
        let mut t = Template::Object(vec![
            ("sum".into(), call("States.MathAdd(1, 2)")),
            ("text".into(), call("States.Format('a{}', 'b')")),
            ("json".into(), call("States.StringToJson('{\"a\":1}')")),
            ("arr".into(), Template::Array(vec![call("States.Array(1, 2)")])),
            ("input".into(), call("States.MathAdd($.i, 1)")),
            ("uuid".into(), call("States.UUID()")),
            ("seeded".into(), call("States.MathRandom(1, 10, 3)")),
            ("fails".into(), call("States.StringToJson('{oops')")),
            ("path".into(), Template::Path(Path::parse("$.x").unwrap())),
        ]);
        assert!(fold(&mut t));
        let Template::Object(entries) = &t else { panic!() };
        let literal = |i: usize| match &entries[i].1 {
            Template::Literal(v) => Some(v.clone()),
            _ => None,
        };
        assert_eq!(literal(0), Some(json!(3)));
        assert_eq!(literal(1), Some(json!("ab")));
        assert_eq!(literal(2), Some(json!({"a": 1})));
        assert_eq!(entries[3].1, Template::Array(vec![Template::Literal(json!([1, 2]))]));
        for i in 4..9 {
            assert_eq!(literal(i), None, "entry {} must stay", entries[i].0);
        }
        assert!(!fold(&mut t), "fixpoint");
    }

    #[test]
    fn folds_in_parameters_and_assign() {
        let mut wf = workflow(vec![pass_state("P", Transition::End)]);
        if let StateKind::Pass(p) = &mut wf.machine.states[0].kind {
            p.parameters = Some(Template::Object(vec![("v".into(), call("States.MathAdd(40, 2)"))]));
            p.assign = Some(Assign::JsonPath(vec![("n".into(), call("States.ArrayLength(States.Array(1, 2, 3))"))]));
        }
        assert!(run(&mut wf));
        let StateKind::Pass(p) = &wf.machine.states[0].kind else { panic!() };
        assert_eq!(p.parameters, Some(Template::Object(vec![("v".into(), Template::Literal(json!(42)))])));
        assert_eq!(p.assign, Some(Assign::JsonPath(vec![("n".into(), Template::Literal(json!(3)))])));
    }
}
