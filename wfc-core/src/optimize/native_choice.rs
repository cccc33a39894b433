//! Pass `native-choice` (on by default): compiles Choice rules to native comparisons, with
//! their literals prepared at build time.
//!
//! A comparison against a literal whose operator needs the literal in another form gets an
//! [`Operand::Native`] ([`wfc_ir::native::NativeLiteral`]):
//!
//! - `Timestamp*`: the literal is parsed once into an instant (it was re-parsed on every
//!   evaluation);
//! - `Numeric*`: the literal is split once into its exact integer and its `f64`;
//! - `StringMatches`: the pattern is tokenized once (it was re-tokenized on every evaluation).
//!
//! String and Boolean literals are already compared natively and stay as they are, as do
//! `*Path` operands (known only at run time). The runtime compares with the same rules as for a
//! plain literal (both use [`wfc_ir::native`]), so results and histories are identical. The
//! prepared form is rebuilt once when the IR's JSON is loaded (`{"kind": "Timestamp",
//! "literal": ...}`), not per evaluation.
//!
//! The pass runs after `thread-choice`, whose compile-time evaluation reads the literal either
//! way.

use wfc_ir::native::NativeLiteral;
use wfc_ir::{Condition, Operand, Workflow};

use super::visit::{self, Visitor};

/// Runs the pass over every machine; returns whether anything changed.
pub fn run(workflow: &mut Workflow) -> bool {
    visit::workflow(workflow, &mut Native)
}

struct Native;

impl Visitor for Native {
    fn condition(&mut self, condition: &mut Condition) -> bool {
        match condition {
            Condition::And(all) | Condition::Or(all) => all.iter_mut().fold(false, |c, x| self.condition(x) | c),
            Condition::Not(c) => self.condition(c),
            Condition::Compare(cmp) => {
                let Operand::Literal(literal) = &cmp.operand else { return false };
                match NativeLiteral::compile(cmp.operator, literal) {
                    Some(native) => {
                        cmp.operand = Operand::Native(native);
                        true
                    }
                    None => false,
                }
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
    use wfc_ir::native::NativeForm;
    use wfc_ir::{Operator, StateKind};

    fn operands(wf: &Workflow) -> Vec<Operand> {
        let StateKind::Choice(c) = &wf.machine.states[0].kind else { panic!() };
        c.choices
            .iter()
            .map(|b| match &b.condition {
                Condition::Compare(cmp) => cmp.operand.clone(),
                Condition::Not(inner) => match &**inner {
                    Condition::Compare(cmp) => cmp.operand.clone(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn prepares_timestamps_numbers_and_patterns_only() {
        let mut wf = workflow(vec![choice_state(
            "C",
            vec![
                ("$.t", Operator::TimestampLessThan, json!("2016-03-14T01:59:00Z"), 0),
                ("$.n", Operator::NumericEquals, json!(2.5), 0),
                ("$.s", Operator::StringMatches, json!("log-*.txt"), 0),
                ("$.s", Operator::StringEquals, json!("a"), 0),
                ("$.b", Operator::BooleanEquals, json!(true), 0),
                ("$.z", Operator::IsNull, json!(true), 0),
            ],
            Some(0),
        )]);
        if let StateKind::Choice(c) = &mut wf.machine.states[0].kind {
            let first = std::mem::replace(&mut c.choices[2].condition, Condition::And(vec![]));
            c.choices[2].condition = Condition::Not(Box::new(first));
        }
        assert!(run(&mut wf));
        let ops = operands(&wf);
        let forms: Vec<Option<&NativeForm>> = ops
            .iter()
            .map(|o| match o {
                Operand::Native(n) => Some(n.form()),
                _ => None,
            })
            .collect();
        assert!(matches!(forms[0], Some(NativeForm::Timestamp(_))));
        assert!(matches!(forms[1], Some(NativeForm::Number(_))));
        assert!(matches!(forms[2], Some(NativeForm::Pattern(_))), "inside Not too");
        assert_eq!(&forms[3..], &[None, None, None]);
        assert!(!run(&mut wf), "fixpoint");
        let back: Workflow = serde_json::from_str(&serde_json::to_string(&wf).unwrap()).unwrap();
        assert_eq!(operands(&back), ops);
    }
}
