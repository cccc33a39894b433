//! Compile-time evaluation of the parts of states that folding and threading need: a Pass state
//! and a Choice rule applied to an input that is a constant.
//!
//! Everything here answers `None` ("not known at compile time") whenever the runtime could do
//! anything other than compute a plain value: a path that selects nothing (a `States.Runtime`
//! error at run time), the context object (it differs per execution), or an operator whose exact
//! runtime rules are not mirrored here. `None` only means "do not optimize", so erring towards it
//! is always safe.

use std::cmp::Ordering;

use serde_json::{Map, Value};
use wfc_ir::{Comparison, Condition, Operand, Operator, PassState, Path, ReferencePath, Root, Template};

/// `path` selected from `doc`, as InputPath/OutputPath do; `None` for `$$` paths and misses.
pub(crate) fn select(path: &Option<Path>, doc: &Value) -> Option<Value> {
    match path {
        None => Some(Value::Object(Map::new())),
        Some(p) if p.is_identity() => Some(doc.clone()),
        // `$$` and variables differ per execution.
        Some(p) if p.root() != Root::Input => None,
        Some(p) => p.select(doc).ok(),
    }
}

/// ResultPath: `None` keeps the raw input, `$` replaces it, anything else writes into it.
fn place(path: &Option<ReferencePath>, raw: &Value, result: Value) -> Option<Value> {
    match path {
        None => Some(raw.clone()),
        Some(p) if p.is_identity() => Some(result),
        Some(p) => {
            let mut out = raw.clone();
            p.set(&mut out, result).ok()?;
            Some(out)
        }
    }
}

/// A payload template evaluated against `input`, or `None` if it reads `$$` or a path misses.
pub(crate) fn template(t: &Template, input: &Value) -> Option<Value> {
    match t {
        Template::Literal(v) => Some(v.clone()),
        Template::Path(p) if p.root() != Root::Input => None,
        Template::Path(p) => p.select(input).ok(),
        // Intrinsics may draw random numbers or fail at run time: never folded.
        Template::Intrinsic(_) => None,
        Template::Array(items) => {
            items.iter().map(|i| template(i, input)).collect::<Option<Vec<_>>>().map(Value::Array)
        }
        Template::Object(entries) => {
            let mut out = Map::with_capacity(entries.len());
            for (k, v) in entries {
                out.insert(k.clone(), template(v, input)?);
            }
            Some(Value::Object(out))
        }
    }
}

/// What a Pass state outputs for `input`, exactly as `wfc_runtime::exec::pass` computes it, or
/// `None` when that is not a plain value known now.
pub(crate) fn pass_output(spec: &PassState, input: &Value) -> Option<Value> {
    // Variables set and JSONata Output are effects and expressions folding does not mirror.
    if spec.assign.is_some() || spec.output.is_some() {
        return None;
    }
    let placed = match (&spec.result, &spec.parameters) {
        // With a Result, the runtime evaluates neither InputPath nor Parameters.
        (Some(result), _) => place(&spec.result_path, input, result.clone())?,
        (None, parameters) => {
            let effective = select(&spec.input_path, input)?;
            let result = match parameters {
                Some(t) => template(t, &effective)?,
                None => effective,
            };
            place(&spec.result_path, input, result)?
        }
    };
    select(&spec.output_path, &placed)
}

/// The output of a Pass state whatever its input: `Some` only when it has a `Result` placed at
/// `$` and an OutputPath that can be applied to it now.
pub(crate) fn constant_output(spec: &PassState) -> Option<Value> {
    if spec.assign.is_some() || spec.output.is_some() {
        return None;
    }
    let result = spec.result.as_ref()?;
    if !spec.result_path.as_ref().is_some_and(ReferencePath::is_identity) {
        return None;
    }
    select(&spec.output_path, result)
}

/// A Choice rule's value on `input`: `Some(true/false)` when the runtime would certainly compute
/// it, `None` when it could fail or depends on something not mirrored here.
pub(crate) fn condition(c: &Condition, input: &Value) -> Option<bool> {
    match c {
        // Short-circuit in the runtime's order, so a rule the runtime never reaches cannot make
        // the answer unknown.
        Condition::And(all) => {
            for c in all {
                if !condition(c, input)? {
                    return Some(false);
                }
            }
            Some(true)
        }
        Condition::Or(any) => {
            for c in any {
                if condition(c, input)? {
                    return Some(true);
                }
            }
            Some(false)
        }
        Condition::Not(c) => condition(c, input).map(|b| !b),
        Condition::Compare(cmp) => compare(cmp, input),
        // JSONata conditions are not evaluated at compile time.
        Condition::Jsonata(_) => None,
    }
}

fn compare(cmp: &Comparison, input: &Value) -> Option<bool> {
    if cmp.variable.root() != Root::Input {
        return None;
    }
    let operand = match &cmp.operand {
        Operand::Literal(v) => v,
        Operand::Native(n) => n.literal(),
        Operand::Path(_) => return None,
    };
    let value = cmp.variable.select(input).ok();
    let flag = operand.as_bool();
    use Operator as O;
    match cmp.operator {
        O::IsPresent => Some(value.is_some() == flag?),
        // A missing variable is a runtime error for every other operator.
        _ if value.is_none() => None,
        O::IsNull => Some(value?.is_null() == flag?),
        O::IsNumeric => Some(value?.is_number() == flag?),
        O::IsString => Some(value?.is_string() == flag?),
        O::IsBoolean => Some(value?.is_boolean() == flag?),
        O::StringEquals => Some(strings(&value?, operand).is_some_and(|o| o == Ordering::Equal)),
        O::StringLessThan => Some(strings(&value?, operand).is_some_and(|o| o == Ordering::Less)),
        O::StringGreaterThan => Some(strings(&value?, operand).is_some_and(|o| o == Ordering::Greater)),
        O::StringLessThanEquals => Some(strings(&value?, operand).is_some_and(|o| o != Ordering::Greater)),
        O::StringGreaterThanEquals => Some(strings(&value?, operand).is_some_and(|o| o != Ordering::Less)),
        O::NumericEquals => numbers(&value?, operand).map(|o| o == Some(Ordering::Equal)),
        O::NumericLessThan => numbers(&value?, operand).map(|o| o == Some(Ordering::Less)),
        O::NumericGreaterThan => numbers(&value?, operand).map(|o| o == Some(Ordering::Greater)),
        O::NumericLessThanEquals => {
            numbers(&value?, operand).map(|o| matches!(o, Some(Ordering::Less | Ordering::Equal)))
        }
        O::NumericGreaterThanEquals => {
            numbers(&value?, operand).map(|o| matches!(o, Some(Ordering::Greater | Ordering::Equal)))
        }
        O::BooleanEquals => Some(matches!((&value?, operand), (Value::Bool(a), Value::Bool(b)) if a == b)),
        // Pattern and timestamp rules are left to the runtime.
        O::StringMatches
        | O::IsTimestamp
        | O::TimestampEquals
        | O::TimestampLessThan
        | O::TimestampGreaterThan
        | O::TimestampLessThanEquals
        | O::TimestampGreaterThanEquals => None,
    }
}

/// Code-point order of two strings; `None` (the comparison is false) when either is not one.
fn strings(a: &Value, b: &Value) -> Option<Ordering> {
    Some(a.as_str()?.cmp(b.as_str()?))
}

/// `Some(None)`: not both numbers, so the comparison is false. `Some(Some(order))`: both
/// integers of the same representation, compared exactly. `None`: a mix of floats and integers,
/// whose exact runtime rule is not mirrored here.
fn numbers(a: &Value, b: &Value) -> Option<Option<Ordering>> {
    let (Value::Number(a), Value::Number(b)) = (a, b) else { return Some(None) };
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Some(Some(x.cmp(&y)));
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return Some(Some(x.cmp(&y)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wfc_ir::Transition;

    fn p(text: &str) -> Path {
        Path::parse(text).unwrap()
    }

    fn cmp(var: &str, op: Operator, operand: Value) -> Condition {
        Condition::Compare(Comparison { variable: p(var), operator: op, operand: Operand::Literal(operand) })
    }

    #[test]
    fn pass_output_mirrors_runtime_order() {
        let spec = PassState { assign: None, output: None,
            input_path: Some(p("$.a")),
            parameters: Some(Template::Object(vec![("x".into(), Template::Path(p("$.b")))])),
            result: None,
            result_path: Some(ReferencePath::parse("$.out").unwrap()),
            output_path: Some(p("$.out")),
            transition: Transition::End,
        };
        assert_eq!(pass_output(&spec, &json!({"a": {"b": 7}})), Some(json!({"x": 7})));
        // InputPath misses: a runtime error, so not known.
        assert_eq!(pass_output(&spec, &json!({"z": 1})), None);
    }

    #[test]
    fn conditions() {
        let input = json!({"n": 3, "s": "b", "f": 1.5, "t": true, "z": null});
        assert_eq!(condition(&cmp("$.n", Operator::NumericLessThan, json!(5)), &input), Some(true));
        assert_eq!(condition(&cmp("$.s", Operator::NumericEquals, json!(5)), &input), Some(false));
        assert_eq!(condition(&cmp("$.f", Operator::NumericEquals, json!(1)), &input), None);
        assert_eq!(condition(&cmp("$.s", Operator::StringGreaterThan, json!("a")), &input), Some(true));
        assert_eq!(condition(&cmp("$.missing", Operator::StringEquals, json!("a")), &input), None);
        assert_eq!(condition(&cmp("$.missing", Operator::IsPresent, json!(false)), &input), Some(true));
        assert_eq!(condition(&cmp("$.z", Operator::IsNull, json!(true)), &input), Some(true));
        assert_eq!(condition(&cmp("$.t", Operator::BooleanEquals, json!(true)), &input), Some(true));
        // And stops at the first false, as the runtime does, so a later error is never reached.
        let and = Condition::And(vec![
            cmp("$.n", Operator::NumericEquals, json!(4)),
            cmp("$.missing", Operator::StringEquals, json!("a")),
        ]);
        assert_eq!(condition(&and, &input), Some(false));
        let not = Condition::Not(Box::new(cmp("$.s", Operator::StringMatches, json!("b*"))));
        assert_eq!(condition(&not, &input), None);
    }
}
