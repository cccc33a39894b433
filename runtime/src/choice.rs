//! Choice rules, evaluated as AWS evaluates them.
//!
//! - A value of the wrong type for the operator makes the comparison false, never an error
//!   (`"42"` is not `NumericEquals 42`).
//! - Numbers compare by value: integers exactly, an integer against a float as `f64`.
//! - Strings compare by Unicode code point (Rust's `str` order).
//! - Timestamps are parsed with [`wfc_ir::timestamp::parse`] and compared as instants, so
//!   offsets are honoured; a string that is not an ASL timestamp is false.
//! - A `Variable` that selects nothing is `States.Runtime` for every operator except
//!   `IsPresent` (asl-anchor §9: AWS fails the execution, unlike LocalStack's "false").
//! - `IsPresent` is true for a present `null`; `IsNull` only for JSON `null`.
//! - `StringMatches` knows one wildcard, `*`; `\*` is a literal star and `\\` a backslash.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;
use wfc_ir::{Comparison, Condition, Operand, Operator, Path, Root};

use crate::Failure;

/// Evaluates `condition` against the effective input (`$`) and the context object (`$$`).
pub fn evaluate(condition: &Condition, input: &Value, context: &Value) -> Result<bool, Failure> {
    match condition {
        Condition::And(all) => {
            for c in all {
                if !evaluate(c, input, context)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Condition::Or(any) => {
            for c in any {
                if evaluate(c, input, context)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Condition::Not(c) => evaluate(c, input, context).map(|b| !b),
        Condition::Compare(cmp) => compare(cmp, input, context),
        Condition::Jsonata(expr) => jsonata_condition(expr, input, context),
    }
}

/// Whether the condition reads the context object anywhere (so callers build it only if needed).
pub fn uses_context(condition: &Condition) -> bool {
    match condition {
        Condition::And(cs) | Condition::Or(cs) => cs.iter().any(uses_context),
        Condition::Not(c) => uses_context(c),
        Condition::Compare(cmp) => {
            cmp.variable.root() != Root::Input || matches!(&cmp.operand, Operand::Path(p) if p.root() != Root::Input)
        }
        // `$states.context` and the variables travel in the context document.
        Condition::Jsonata(_) => true,
    }
}

/// A JSONata `Condition`, which must yield a Boolean (else `States.QueryEvaluationError`).
/// `input` is `$states.input`: JSONata states have no InputPath, so it is the raw input.
/// `$random()` here draws from a fixed seed: a condition is not the place for randomness.
pub(crate) fn jsonata_condition(expr: &wfc_ir::JsonataExpr, input: &Value, context: &Value) -> Result<bool, Failure> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let b = crate::jsonata::Bindings::new(input, context);
    match crate::jsonata::evaluate(expr, "Condition", &b, &mut rng)? {
        Value::Bool(v) => Ok(v),
        other => Err(crate::jsonata::unexpected_type(expr.as_str(), "Condition", "boolean", &other)),
    }
}

fn resolve(path: &Path, input: &Value, context: &Value) -> Option<Value> {
    crate::io::select_opt(path, input, context)
}

fn missing(path: &Path, input: &Value, context: &Value) -> Failure {
    let doc = match path.root() {
        Root::Input => input,
        Root::Context | Root::Variable(_) => context,
    };
    Failure::runtime(crate::io::invalid_path_message(path, doc))
}

/// One data-test expression.
pub fn compare(cmp: &Comparison, input: &Value, context: &Value) -> Result<bool, Failure> {
    // A direct path (the `direct-paths` pass) reads the variable in place; a prepared literal
    // (the `native-choice` pass) compares without re-parsing.
    if let Some(value) = cmp.variable.select_ref(input) {
        if let Operand::Native(literal) = &cmp.operand {
            return Ok(literal.compare(cmp.operator, value));
        }
        return compare_value(cmp, value, input, context);
    }
    let variable = resolve(&cmp.variable, input, context);
    if cmp.operator == Operator::IsPresent {
        return Ok(variable.is_some() == expect_bool(cmp)?);
    }
    let Some(value) = variable else {
        return Err(missing(&cmp.variable, input, context));
    };
    compare_value(cmp, &value, input, context)
}

/// The comparison once the variable's value is known.
fn compare_value(cmp: &Comparison, value: &Value, input: &Value, context: &Value) -> Result<bool, Failure> {
    if cmp.operator == Operator::IsPresent {
        return expect_bool(cmp);
    }
    let operand = match &cmp.operand {
        Operand::Native(literal) => return Ok(literal.compare(cmp.operator, value)),
        Operand::Literal(v) => Cow::Borrowed(v),
        Operand::Path(p) => Cow::Owned(resolve(p, input, context).ok_or_else(|| missing(p, input, context))?),
    };
    let operand: &Value = &operand;
    if operator_is_type_test(cmp.operator) {
        return Ok(type_test(cmp.operator, value) == expect_bool(cmp)?);
    }
    Ok(test(cmp.operator, value, operand))
}

/// Whether the operator is one of the `Is*` tests, whose operand is a Boolean saying whether the
/// test should hold.
pub fn operator_is_type_test(operator: Operator) -> bool {
    use Operator as O;
    matches!(operator, O::IsNull | O::IsNumeric | O::IsString | O::IsBoolean | O::IsTimestamp | O::IsPresent)
}

/// The `Is*` test itself on a present value (`IsPresent` is true: the value is there).
pub fn type_test(operator: Operator, value: &Value) -> bool {
    use Operator as O;
    match operator {
        O::IsNull => value.is_null(),
        O::IsNumeric => value.is_number(),
        O::IsString => value.is_string(),
        O::IsBoolean => value.is_boolean(),
        O::IsTimestamp => value.as_str().is_some_and(|s| wfc_ir::timestamp::parse(s).is_ok()),
        _ => true,
    }
}

/// `value <operator> operand` for the comparing operators (not the `Is*` tests): a value or an
/// operand of the wrong type makes it false. Generated code calls it for the `*Path` forms,
/// whose operand is only known at run time.
pub fn test(operator: Operator, value: &Value, operand: &Value) -> bool {
    use Operator as O;
    match operator {
        O::StringEquals => strings(value, operand).is_some_and(|(a, b)| a == b),
        O::StringLessThan => strings(value, operand).is_some_and(|(a, b)| a < b),
        O::StringGreaterThan => strings(value, operand).is_some_and(|(a, b)| a > b),
        O::StringLessThanEquals => strings(value, operand).is_some_and(|(a, b)| a <= b),
        O::StringGreaterThanEquals => strings(value, operand).is_some_and(|(a, b)| a >= b),
        O::StringMatches => strings(value, operand).is_some_and(|(a, b)| string_matches(a, b)),
        O::NumericEquals => numeric(value, operand) == Some(Ordering::Equal),
        O::NumericLessThan => numeric(value, operand) == Some(Ordering::Less),
        O::NumericGreaterThan => numeric(value, operand) == Some(Ordering::Greater),
        O::NumericLessThanEquals => matches!(numeric(value, operand), Some(Ordering::Less | Ordering::Equal)),
        O::NumericGreaterThanEquals => matches!(numeric(value, operand), Some(Ordering::Greater | Ordering::Equal)),
        O::BooleanEquals => matches!((value, operand), (Value::Bool(a), Value::Bool(b)) if a == b),
        O::TimestampEquals => timestamps(value, operand) == Some(Ordering::Equal),
        O::TimestampLessThan => timestamps(value, operand) == Some(Ordering::Less),
        O::TimestampGreaterThan => timestamps(value, operand) == Some(Ordering::Greater),
        O::TimestampLessThanEquals => matches!(timestamps(value, operand), Some(Ordering::Less | Ordering::Equal)),
        O::TimestampGreaterThanEquals => {
            matches!(timestamps(value, operand), Some(Ordering::Greater | Ordering::Equal))
        }
        O::IsNull | O::IsNumeric | O::IsString | O::IsBoolean | O::IsTimestamp | O::IsPresent => false,
    }
}

/// The message of `States.Runtime` when a Choice `Variable` (or `*Path` operand) with the text
/// `path` selects nothing in `doc` (the document its root names).
pub fn missing_message(path: &str, doc: &Value) -> String {
    crate::io::invalid_path_text_message(path, doc)
}

/// The Boolean literal of an `Is*` test (`false` negates the test).
fn expect_bool(cmp: &Comparison) -> Result<bool, Failure> {
    match &cmp.operand {
        Operand::Literal(Value::Bool(b)) => Ok(*b),
        other => Err(Failure::runtime(format!(
            "the operand of {} on '{}' must be a Boolean literal, not {:?}",
            cmp.operator.name(),
            cmp.variable.as_str(),
            other
        ))),
    }
}

fn strings<'a>(a: &'a Value, b: &'a Value) -> Option<(&'a str, &'a str)> {
    Some((a.as_str()?, b.as_str()?))
}

fn numeric(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => compare_numbers(a, b),
        _ => None,
    }
}

pub use wfc_ir::native::compare_numbers;

fn timestamps(a: &Value, b: &Value) -> Option<Ordering> {
    let a = wfc_ir::timestamp::parse(a.as_str()?).ok()?;
    let b = wfc_ir::timestamp::parse(b.as_str()?).ok()?;
    Some(a.cmp(&b))
}

/// `StringMatches`: `*` matches any run of characters (including none); `\*` and `\\` match a
/// literal star and backslash. Every other character matches itself.
pub fn string_matches(text: &str, pattern: &str) -> bool {
    wfc_ir::native::Pattern::parse(pattern).matches(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Number;

    #[test]
    fn wildcards_and_escapes() {
        assert!(string_matches("log-2024.txt", "log-*.txt"));
        assert!(string_matches("", "*"));
        assert!(string_matches("abc", "a*b*c"));
        assert!(!string_matches("abc", "a*d"));
        assert!(string_matches("a*c", r"a\*c"));
        assert!(!string_matches("abc", r"a\*c"));
        assert!(string_matches(r"a\c", r"a\\c"));
        assert!(!string_matches("ab", "a?"));
        assert!(string_matches("a?", "a?"));
        assert!(string_matches("mississippi", "*sip*"));
    }

    #[test]
    fn numbers_compare_by_value() {
        let n = |v: serde_json::Value| match v {
            Value::Number(n) => n,
            _ => Number::from(0),
        };
        assert_eq!(compare_numbers(&n(serde_json::json!(1)), &n(serde_json::json!(1.0))), Some(Ordering::Equal));
        assert_eq!(compare_numbers(&n(serde_json::json!(-1)), &n(serde_json::json!(u64::MAX))), Some(Ordering::Less));
        assert_eq!(
            compare_numbers(&n(serde_json::json!(9007199254740993_i64)), &n(serde_json::json!(9007199254740992_i64))),
            Some(Ordering::Greater)
        );
    }
}
