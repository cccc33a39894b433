//! Choice operators, as AWS evaluates them (asl-anchor §9, §20 item 2).

mod common;

use common::*;
use serde_json::{Value, json};
use wfc_runtime::choice::evaluate;
use wfc_runtime::ir::Operator as O;
use wfc_runtime::ir::*;

fn eval(c: &Condition, input: &Value) -> bool {
    evaluate(c, input, &Value::Null).unwrap_or_else(|f| panic!("unexpected failure {f}"))
}

fn check(op: O, operand: Value, cases: &[(Value, bool)]) {
    let c = cmp("$.v", op, operand.clone());
    for (value, expected) in cases {
        let input = json!({"v": value});
        assert_eq!(eval(&c, &input), *expected, "{} {} {} ", value, op.name(), operand);
    }
}

#[test]
fn string_operators_use_code_point_order_and_ignore_other_types() {
    check(
        O::StringEquals,
        json!("abc"),
        &[(json!("abc"), true), (json!("ABC"), false), (json!(1), false), (json!(null), false)],
    );
    check(
        O::StringLessThan,
        json!("b"),
        &[(json!("a"), true), (json!("b"), false), (json!("B"), true), (json!("ab"), true), (json!(0), false)],
    );
    check(
        O::StringGreaterThan,
        json!("b"),
        &[(json!("c"), true), (json!("b"), false), (json!("é"), true), (json!(true), false)],
    );
    check(O::StringLessThanEquals, json!("b"), &[(json!("b"), true), (json!("ba"), false)]);
    check(O::StringGreaterThanEquals, json!("b"), &[(json!("b"), true), (json!("a"), false), (json!(["b"]), false)]);
    // Code point order: U+FF61 sorts before U+1F600 (UTF-16 code units would say otherwise).
    check(O::StringLessThan, json!("\u{1F600}"), &[(json!("\u{FF61}"), true)]);
}

#[test]
fn numeric_operators_compare_values_not_types() {
    check(
        O::NumericEquals,
        json!(1),
        &[(json!(1), true), (json!(1.0), true), (json!("1"), false), (json!(true), false), (json!(2), false)],
    );
    check(
        O::NumericLessThan,
        json!(30),
        &[(json!(29.999), true), (json!(30), false), (json!(-5), true), (json!("5"), false)],
    );
    check(O::NumericGreaterThan, json!(2.5), &[(json!(3), true), (json!(2.5), false), (json!(null), false)]);
    check(O::NumericLessThanEquals, json!(20), &[(json!(20.0), true), (json!(20.1), false)]);
    check(O::NumericGreaterThanEquals, json!(20), &[(json!(20), true), (json!(19), false), (json!(u64::MAX), true)]);
    // Integers compare exactly beyond 2^53.
    check(
        O::NumericEquals,
        json!(9_007_199_254_740_993_i64),
        &[(json!(9_007_199_254_740_992_i64), false), (json!(9_007_199_254_740_993_i64), true)],
    );
}

#[test]
fn boolean_equals() {
    check(
        O::BooleanEquals,
        json!(true),
        &[(json!(true), true), (json!(false), false), (json!("true"), false), (json!(1), false)],
    );
}

#[test]
fn timestamps_compare_as_instants() {
    check(
        O::TimestampEquals,
        json!("2016-03-14T01:59:00Z"),
        &[
            (json!("2016-03-14T01:59:00Z"), true),
            (json!("2016-03-14T02:59:00+01:00"), true),
            (json!("2016-03-13T20:59:00-05:00"), true),
            (json!("2016-03-14T01:59:00.000Z"), true),
            (json!("2016-03-14T01:59:00.001Z"), false),
            (json!("2016-03-14t01:59:00Z"), false),
            (json!("2016-03-14"), false),
            (json!(12), false),
        ],
    );
    check(
        O::TimestampLessThan,
        json!("2016-03-14T01:59:00Z"),
        &[(json!("2016-03-14T02:58:59+01:00"), true), (json!("2016-03-14T01:59:00Z"), false)],
    );
    check(
        O::TimestampGreaterThan,
        json!("2016-03-14T01:59:00Z"),
        &[(json!("2016-03-14T01:59:00.5Z"), true), (json!("nope"), false)],
    );
    check(O::TimestampLessThanEquals, json!("2016-03-14T01:59:00Z"), &[(json!("2016-03-14T02:59:00+01:00"), true)]);
    check(
        O::TimestampGreaterThanEquals,
        json!("2016-03-14T01:59:00Z"),
        &[(json!("2016-03-14T00:59:00-01:00"), true), (json!("2000-01-01T00:00:00Z"), false)],
    );
}

#[test]
fn type_tests_and_their_negation() {
    check(O::IsNull, json!(true), &[(json!(null), true), (json!(0), false), (json!("null"), false)]);
    check(O::IsNull, json!(false), &[(json!(null), false), (json!(0), true)]);
    check(
        O::IsNumeric,
        json!(true),
        &[(json!(1), true), (json!(1.5), true), (json!("1"), false), (json!(true), false)],
    );
    check(O::IsNumeric, json!(false), &[(json!("1"), true), (json!(1), false)]);
    check(O::IsString, json!(true), &[(json!(""), true), (json!("2023-02-24"), true), (json!(1), false)]);
    check(O::IsBoolean, json!(true), &[(json!(false), true), (json!("false"), false)]);
    check(
        O::IsTimestamp,
        json!(true),
        &[
            (json!("2016-03-14T01:59:00Z"), true),
            (json!("2016-03-14T01:59:00.123+05:30"), true),
            (json!("2023-02-24"), false),
            (json!(5), false),
        ],
    );
    check(O::IsTimestamp, json!(false), &[(json!("2023-02-24"), true)]);
}

#[test]
fn is_present_is_true_for_a_present_null_and_false_for_missing() {
    let present = cmp("$.v", O::IsPresent, json!(true));
    let absent = cmp("$.v", O::IsPresent, json!(false));
    assert!(eval(&present, &json!({"v": null})));
    assert!(!eval(&present, &json!({"w": 1})));
    assert!(eval(&absent, &json!({"w": 1})));
    assert!(!eval(&absent, &json!({"v": null})));
    assert!(eval(&cmp("$.a.b", O::IsPresent, json!(false)), &json!({"a": 3})));
}

#[test]
fn a_missing_variable_is_a_runtime_error_except_for_is_present() {
    for op in [O::StringEquals, O::NumericEquals, O::IsNull, O::IsString, O::BooleanEquals] {
        let operand = match op {
            O::StringEquals => json!("x"),
            O::NumericEquals => json!(1),
            _ => json!(true),
        };
        let f = evaluate(&cmp("$.missing", op, operand), &json!({"v": 1}), &Value::Null).err();
        let f = f.unwrap_or_else(|| panic!("{} on a missing variable should fail", op.name()));
        assert_eq!(f.error, "States.Runtime");
        assert_eq!(f.cause, "Invalid path '$.missing' : No results for path: $['missing']");
    }
    // And short-circuits, so an IsPresent guard protects the comparison.
    let guarded =
        Condition::And(vec![cmp("$.missing", O::IsPresent, json!(true)), cmp("$.missing", O::NumericEquals, json!(1))]);
    assert!(!eval(&guarded, &json!({})));
}

#[test]
fn string_matches_has_only_the_star_wildcard() {
    check(
        O::StringMatches,
        json!("log-*.txt"),
        &[(json!("log-.txt"), true), (json!("log-2024-01.txt"), true), (json!("log-1.csv"), false), (json!(7), false)],
    );
    // JSON "a\\*b" is the pattern a\*b: a literal star.
    check(O::StringMatches, json!("a\\*b"), &[(json!("a*b"), true), (json!("axb"), false)]);
    // JSON "a\\\\b" is the pattern a\\b: a literal backslash.
    check(O::StringMatches, json!("a\\\\b"), &[(json!("a\\b"), true), (json!("ab"), false)]);
    check(O::StringMatches, json!("?[a]"), &[(json!("?[a]"), true), (json!("x[a]"), false), (json!("?a"), false)]);
    check(O::StringMatches, json!("*"), &[(json!(""), true), (json!("anything"), true)]);
}

#[test]
fn path_operands() {
    let c = cmp_path("$.a", O::NumericLessThan, "$.b");
    assert!(eval(&c, &json!({"a": 1, "b": 2})));
    assert!(!eval(&c, &json!({"a": 1, "b": "2"})), "a mismatched operand type is false");
    let f = evaluate(&c, &json!({"a": 1}), &Value::Null).err();
    assert_eq!(f.map(|f| f.error), Some("States.Runtime".to_owned()), "a missing operand path is States.Runtime");
    let c = cmp_path("$.a", O::StringEquals, "$$.Execution.Name");
    let ctx = json!({"Execution": {"Name": "run-1"}});
    assert!(evaluate(&c, &json!({"a": "run-1"}), &ctx).unwrap_or(false));
    let c = cmp_path("$.t", O::TimestampGreaterThan, "$.u");
    assert!(eval(&c, &json!({"t": "2020-01-01T00:00:01Z", "u": "2020-01-01T01:00:00+01:00"})));
}

#[test]
fn and_or_not() {
    let t = cmp("$.v", O::NumericEquals, json!(1));
    let f = cmp("$.v", O::NumericEquals, json!(2));
    let input = json!({"v": 1});
    assert!(eval(&Condition::And(vec![t.clone(), t.clone()]), &input));
    assert!(!eval(&Condition::And(vec![t.clone(), f.clone()]), &input));
    assert!(eval(&Condition::Or(vec![f.clone(), t.clone()]), &input));
    assert!(!eval(&Condition::Or(vec![f.clone(), f.clone()]), &input));
    assert!(eval(&Condition::Not(Box::new(f.clone())), &input));
    // Or short-circuits past a rule that would fail.
    let bad = cmp("$.missing", O::NumericEquals, json!(1));
    assert!(eval(&Condition::Or(vec![t, bad]), &input));
}

#[test]
fn variable_dollar_compares_the_whole_input() {
    assert!(eval(&cmp("$", O::NumericEquals, json!(3)), &json!(3)));
    assert!(eval(&cmp("$", O::IsString, json!(true)), &json!("s")));
}
