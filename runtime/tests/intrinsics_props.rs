//! The fuzz target `intrinsic_parse` as a short proptest smoke for every `cargo test`: intrinsic
//! calls built from the grammar's pieces and then mutated must parse or be refused, and a parsed
//! call must evaluate to a value or a `Failure` deterministically under one seed (never a panic).

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use wfc_ir::intrinsics::Intrinsic;
use wfc_runtime::intrinsics::evaluate;

/// A string literal (with the characters Format and StringSplit treat specially), a number or a
/// path: the argument kinds the parser checks.
fn string_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        "'[a-z{}\\\\, ]{0,6}'".prop_map(|s| s),
        prop::sample::select(vec!["$.s", "$$.Execution.Name", "$.missing", "$.n"]).prop_map(str::to_owned),
    ]
}

fn number_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        (-20i64..1200).prop_map(|n| n.to_string()),
        (-5.0f64..5.0).prop_map(|n| format!("{n:.2}")),
        prop::sample::select(vec!["$.n", "$.a[0]", "$.s", "$.missing"]).prop_map(str::to_owned),
    ]
}

fn any_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        string_arg(),
        number_arg(),
        Just("true".to_owned()),
        Just("null".to_owned()),
        prop::sample::select(vec!["$", "$.a", "$.o"]).prop_map(str::to_owned),
        Just("States.Array(1, 'b', $.n)".to_owned()),
    ]
}

fn array_arg() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["$.a", "$.o", "States.Array(1, 2, 2)", "States.StringSplit('a,b', ',')", "$.missing"])
        .prop_map(str::to_owned)
}

/// A call of one of the 18 functions with arguments of the kinds its signature names (which paths
/// may still resolve to the wrong type at run time).
fn well_typed_call() -> impl Strategy<Value = String> {
    prop_oneof![
        (string_arg(), prop::collection::vec(any_arg(), 0..3)).prop_map(|(t, a)| format!(
            "States.Format({})",
            std::iter::once(t).chain(a).collect::<Vec<_>>().join(", ")
        )),
        string_arg().prop_map(|a| format!("States.StringToJson({a})")),
        any_arg().prop_map(|a| format!("States.JsonToString({a})")),
        prop::collection::vec(any_arg(), 0..4).prop_map(|a| format!("States.Array({})", a.join(", "))),
        (array_arg(), number_arg()).prop_map(|(a, n)| format!("States.ArrayPartition({a}, {n})")),
        (array_arg(), any_arg()).prop_map(|(a, v)| format!("States.ArrayContains({a}, {v})")),
        (number_arg(), number_arg(), number_arg()).prop_map(|(a, b, c)| format!("States.ArrayRange({a}, {b}, {c})")),
        (array_arg(), number_arg()).prop_map(|(a, n)| format!("States.ArrayGetItem({a}, {n})")),
        array_arg().prop_map(|a| format!("States.ArrayLength({a})")),
        array_arg().prop_map(|a| format!("States.ArrayUnique({a})")),
        string_arg().prop_map(|a| format!("States.Base64Encode({a})")),
        string_arg().prop_map(|a| format!("States.Base64Decode({a})")),
        (
            string_arg(),
            prop::sample::select(vec!["'MD5'", "'SHA-1'", "'SHA-256'", "'SHA-384'", "'SHA-512'", "'sha-1'"])
        )
            .prop_map(|(a, h)| format!("States.Hash({a}, {h})")),
        (any_arg(), any_arg()).prop_map(|(a, b)| format!("States.JsonMerge({a}, {b}, false)")),
        (number_arg(), number_arg()).prop_map(|(a, b)| format!("States.MathRandom({a}, {b})")),
        (number_arg(), number_arg()).prop_map(|(a, b)| format!("States.MathAdd({a}, {b})")),
        (string_arg(), string_arg()).prop_map(|(a, b)| format!("States.StringSplit({a}, {b})")),
        Just("States.UUID()".to_owned()),
    ]
}

/// A call, in one case of four with a byte deleted or a character inserted to reach the parser's
/// errors.
fn call_text() -> impl Strategy<Value = String> {
    (well_typed_call(), any::<u8>(), 0usize..64, any::<char>()).prop_map(|(mut text, mutation, at, ch)| {
        let at = text.char_indices().map(|(i, _)| i).nth(at % text.chars().count()).unwrap_or(0);
        match mutation % 8 {
            0 => {
                text.remove(at);
            }
            1 => text.insert(at, ch),
            _ => {}
        }
        text
    })
}

fn input() -> Value {
    json!({"a": [1, 2, 2, "x"], "s": "{\"k\": [1]}", "n": 41, "o": {"k": 1}})
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parsed_calls_evaluate_deterministically_or_fail_cleanly(text in call_text()) {
        let Ok(intrinsic) = Intrinsic::parse(&text) else { return Ok(()) };
        let input = input();
        let context = json!({"Execution": {"Name": "smoke"}});
        let first = evaluate(&intrinsic, "value.$", &input, &context, &mut StdRng::seed_from_u64(3));
        let second = evaluate(&intrinsic, "value.$", &input, &context, &mut StdRng::seed_from_u64(3));
        match (first, second) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => {
                prop_assert_eq!(&a.error, &b.error);
                prop_assert!(a.error.starts_with("States."), "{}: {}", text, a.error);
            }
            (a, b) => prop_assert!(false, "{}: {:?} then {:?}", text, a, b),
        }
    }
}

/// The generator must reach evaluation, not only parse errors, or the property above is vacuous.
#[test]
fn most_generated_calls_parse() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = call_text();
    let total = 400;
    let parsed = (0..total)
        .filter(|_| Intrinsic::parse(&strategy.new_tree(&mut runner).expect("generate").current()).is_ok())
        .count();
    assert!(parsed * 2 >= total, "only {parsed} of {total} generated calls parse");
}
