//! Pass `direct-paths` (on by default): compiles Reference Paths to direct field access.
//!
//! Every `$` path that is a plain chain of names and indices (`$.a.b[0]`, `$['k-1'][2]`) in an
//! InputPath, OutputPath, ResultPath, a payload template's `.$` value, an intrinsic's argument,
//! a Choice `Variable` or `*Path` operand, Wait's `SecondsPath`/`TimestampPath`, Map's
//! `ItemsPath`/`MaxConcurrencyPath` or Fail's `ErrorPath`/`CausePath` gets a precomputed list
//! of steps ([`wfc_ir::jsonpath::fields::FieldPath`]). The runtime follows it with one `get`
//! per step instead of the general JSONPath evaluator, reads a Choice variable in place instead
//! of copying it, and moves an InputPath/OutputPath node out of an owned document (Choice,
//! Wait, Succeed inputs; every OutputPath) instead of copying it.
//!
//! `$` itself, `$$` and variable paths, and paths with wildcards, filters, slices, unions,
//! descendants or path functions keep the general evaluator. Results and error messages are
//! the general evaluator's (`wfc_ir` tests both forms on the same paths), so histories are
//! identical. The compiled form travels in the IR's JSON (`{"path": ..., "direct": true}`),
//! so generated code uses it too.

use wfc_ir::{Condition, Operand, Path, ReferencePath, Template, Workflow};

use super::visit::{self, Visitor};

/// Runs the pass over every machine; returns whether anything changed.
pub fn run(workflow: &mut Workflow) -> bool {
    visit::workflow(workflow, &mut Direct)
}

struct Direct;

impl Visitor for Direct {
    fn path(&mut self, path: &mut Path) -> bool {
        path.compile_direct()
    }

    fn reference(&mut self, path: &mut ReferencePath) -> bool {
        path.compile_direct()
    }

    fn template(&mut self, template: &mut Template) -> bool {
        match template {
            Template::Literal(_) => false,
            Template::Path(p) => p.compile_direct(),
            Template::Intrinsic(i) => i.compile_direct_paths(),
            Template::Array(items) => items.iter_mut().fold(false, |c, t| self.template(t) | c),
            Template::Object(entries) => entries.iter_mut().fold(false, |c, (_, t)| self.template(t) | c),
        }
    }

    fn condition(&mut self, condition: &mut Condition) -> bool {
        match condition {
            Condition::And(all) | Condition::Or(all) => all.iter_mut().fold(false, |c, x| self.condition(x) | c),
            Condition::Not(c) => self.condition(c),
            Condition::Compare(cmp) => {
                let operand = match &mut cmp.operand {
                    Operand::Path(p) => p.compile_direct(),
                    Operand::Literal(_) | Operand::Native(_) => false,
                };
                cmp.variable.compile_direct() | operand
            }
            Condition::Jsonata(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::tests_support::*;
    use serde_json::json;
    use wfc_ir::{Operator, StateKind, Transition};

    #[test]
    fn compiles_plain_paths_everywhere_and_only_those() {
        let mut wf = workflow(vec![
            path_pass("P", "$.a.b[0]", Transition::Next(1)),
            choice_state("C", vec![("$.n", Operator::NumericEquals, json!(1), 2)], Some(2)),
            path_pass("Q", "$$.Execution.Input", Transition::Next(3)),
            path_pass("R", "$.items[*]", Transition::End),
        ]);
        if let StateKind::Pass(p) = &mut wf.machine.states[0].kind {
            p.parameters = Some(Template::Object(vec![
                ("x".into(), Template::Path(Path::parse("$.x").unwrap())),
                (
                    "y".into(),
                    Template::Intrinsic(wfc_ir::intrinsics::Intrinsic::parse("States.MathAdd($.i, 1)").unwrap()),
                ),
            ]));
            p.result_path = ReferencePath::parse("$.out").ok();
        }
        assert!(run(&mut wf));
        let StateKind::Pass(p) = &wf.machine.states[0].kind else { panic!() };
        assert!(p.input_path.as_ref().unwrap().direct().is_some());
        assert!(p.result_path.as_ref().unwrap().as_path().direct().is_some());
        assert!(p.output_path.as_ref().unwrap().direct().is_none(), "`$` needs nothing");
        let Some(Template::Object(entries)) = &p.parameters else { panic!() };
        let Template::Path(x) = &entries[0].1 else { panic!() };
        assert!(x.direct().is_some());
        // The intrinsic's compiled argument survives the IR's JSON round trip.
        let json = serde_json::to_value(&entries[1].1).unwrap();
        assert_eq!(json, json!({"Intrinsic": {"intrinsic": "States.MathAdd($.i, 1)", "direct": true}}));
        let StateKind::Choice(c) = &wf.machine.states[1].kind else { panic!() };
        let Condition::Compare(cmp) = &c.choices[0].condition else { panic!() };
        assert!(cmp.variable.direct().is_some());
        let StateKind::Pass(q) = &wf.machine.states[2].kind else { panic!() };
        assert!(q.input_path.as_ref().unwrap().direct().is_none(), "the context object");
        let StateKind::Pass(r) = &wf.machine.states[3].kind else { panic!() };
        assert!(r.input_path.as_ref().unwrap().direct().is_none(), "a wildcard");
        assert!(!run(&mut wf), "fixpoint");
        // The whole workflow round-trips through JSON with the compiled forms.
        let back: Workflow = serde_json::from_str(&serde_json::to_string(&wf).unwrap()).unwrap();
        let StateKind::Pass(p) = &back.machine.states[0].kind else { panic!() };
        assert!(p.input_path.as_ref().unwrap().direct().is_some());
    }
}
