//! Hostile inputs: deep nesting, huge strings, YAML alias bombs and random mutations must give
//! diagnostics, never a panic or a stack overflow. These run on the test harness's threads, whose
//! stacks are small (2 MiB), so they also check that recursion is bounded.

use proptest::prelude::*;
use wfc_core::Source;

fn codes(path: &str, text: &str) -> Vec<String> {
    match wfc_core::asl::load(Source { path, text }) {
        Ok(l) => l.warnings.items.iter().map(|d| d.code.to_owned()).collect(),
        Err(d) => d.items.iter().map(|d| d.code.to_owned()).collect(),
    }
}

fn choice_with_rule(rule: &str) -> String {
    format!(
        r#"{{"StartAt": "C", "States": {{"C": {{"Type": "Choice", "Default": "D", "Choices": [{rule}]}}, "D": {{"Type": "Succeed"}}}}}}"#
    )
}

fn nested_not(depth: usize) -> String {
    let mut rule = r#"{"Variable": "$.x", "IsNull": true}"#.to_owned();
    for _ in 0..depth {
        rule = format!(r#"{{"Not": {rule}}}"#);
    }
    // The outermost rule carries Next.
    rule.insert_str(1, r#""Next": "D", "#);
    rule
}

#[test]
fn thousand_deep_not_nesting_is_a_depth_diagnostic() {
    let codes = codes("deep.json", &choice_with_rule(&nested_not(1000)));
    assert_eq!(codes, ["WFC0103"]);
}

#[test]
fn thousand_deep_and_nesting_is_a_depth_diagnostic() {
    let mut rule = r#"{"Variable": "$.x", "IsNull": true}"#.to_owned();
    for _ in 0..1000 {
        rule = format!(r#"{{"And": [{rule}]}}"#);
    }
    rule.insert_str(1, r#""Next": "D", "#);
    assert_eq!(codes("deep.json", &choice_with_rule(&rule)), ["WFC0103"]);
}

#[test]
fn choice_nesting_beyond_its_limit_is_reported() {
    // 200 levels fit the document limit but exceed the Choice limit (128).
    let codes = codes("deep.json", &choice_with_rule(&nested_not(200)));
    assert_eq!(codes, ["WFC0510"]);
    // 120 levels are fine.
    let ok = wfc_core::asl::load(Source { path: "ok.json", text: &choice_with_rule(&nested_not(120)) });
    assert!(ok.is_ok(), "{}", ok.err().map(|d| d.render(false)).unwrap_or_default());
}

#[test]
fn deeply_nested_arrays_do_not_overflow() {
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(codes("deep.json", &text), ["WFC0103"]);
}

#[test]
fn deeply_nested_yaml_block_sequences_do_not_overflow() {
    // `- - - - ...` nests one sequence per two characters.
    let text = format!("{}x\n", "- ".repeat(50_000));
    assert_eq!(codes("deep.yaml", &text), ["WFC0103"]);
}

#[test]
fn deeply_nested_yaml_flow_collections_are_reported() {
    let text = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(codes("deep.yaml", &text), ["WFC0103"]);
}

#[test]
fn deeply_nested_parallel_states_are_bounded() {
    let mut machine = r#"{"StartAt": "L", "States": {"L": {"Type": "Succeed"}}}"#.to_owned();
    for i in 0..200 {
        machine = format!(
            r#"{{"StartAt": "P{i}", "States": {{"P{i}": {{"Type": "Parallel", "End": true, "Branches": [{machine}]}}}}}}"#
        );
        let c = codes("deep.json", &machine);
        match i {
            // Up to 32 levels are fine.
            0..32 => assert!(c.is_empty(), "{i}: {c:?}"),
            // Then the Parallel limit applies, then the document's own depth limit.
            32..40 => assert_eq!(c, ["WFC0210"], "{i}"),
            _ => assert!(c == ["WFC0210"] || c == ["WFC0103"], "{i}: {c:?}"),
        }
    }
    assert_eq!(codes("deep.json", &machine), ["WFC0103"]);
}

#[test]
fn huge_strings_are_fine() {
    let name = "N".repeat(100_000);
    let text = format!(r#"{{"StartAt": "{name}", "States": {{"{name}x": {{"Type": "Succeed"}}}}}}"#);
    let c = codes("big.json", &text);
    assert!(c.contains(&"WFC0301".to_owned()), "{c:?}");
    assert!(c.contains(&"WFC0304".to_owned()), "{c:?}");
    let comment = "c".repeat(100_000);
    let text = format!(
        r#"{{"Comment": "{comment}", "StartAt": "A", "States": {{"A": {{"Type": "Pass", "InputPath": "$.{comment}", "End": true}}}}}}"#
    );
    assert!(wfc_core::asl::load(Source { path: "big.json", text: &text }).is_ok());
}

#[test]
fn yaml_billion_laughs_is_refused() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    assert_eq!(codes("bomb.yaml", &text), ["WFC0104"]);
}

#[test]
fn yaml_aliases_within_budget_work() {
    let text = "StartAt: A\nStates:\n  A:\n    Type: Pass\n    Result: &r {x: 1}\n    Next: B\n  B:\n    Type: Pass\n    Result: *r\n    End: true\n";
    let wf = wfc_core::asl::load(Source { path: "alias.yaml", text }).expect("valid").workflow;
    let results: Vec<_> = wf
        .machine
        .states
        .iter()
        .map(|s| match &s.kind {
            wfc_core::ir::StateKind::Pass(p) => p.result.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(results, [Some(serde_json::json!({"x": 1})), Some(serde_json::json!({"x": 1}))]);
}

#[test]
fn non_ascii_positions_are_in_characters() {
    let text = "{\"StartAt\": \"ÄÖÜ\", \"States\": {\n  \"ÄÖÜ\": {\"Type\": \"Pass\", \"Next\": \"Nöpe\"}}}";
    let d = wfc_core::asl::load(Source { path: "u.json", text }).expect_err("invalid");
    let l = d.located().into_iter().find(|l| l.code == "WFC0301").expect("WFC0301");
    assert_eq!((l.line, l.column, l.end_line, l.end_column), (2, 35, 2, 41));
    assert!(d.render(false).contains("Nöpe"));
}

const VALID: &str = r#"{
  "Comment": "mutation seed",
  "StartAt": "T",
  "TimeoutSeconds": 60,
  "States": {
    "T": {"Type": "Task", "Resource": "r", "TimeoutSeconds": 5, "HeartbeatSeconds": 1,
          "Parameters": {"a.$": "$.a", "b": [1, {"c.$": "$$.Execution.Id"}]},
          "Retry": [{"ErrorEquals": ["States.Timeout"], "MaxAttempts": 2}, {"ErrorEquals": ["States.ALL"]}],
          "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "F"}],
          "Next": "C"},
    "C": {"Type": "Choice", "Choices": [
            {"And": [{"Variable": "$.n", "NumericGreaterThan": 1}, {"Not": {"Variable": "$.s", "StringEquals": "x"}}], "Next": "W"},
            {"Variable": "$.t", "TimestampLessThanPath": "$.u", "Next": "P"}],
          "Default": "F"},
    "W": {"Type": "Wait", "Seconds": 3, "Next": "P"},
    "P": {"Type": "Parallel", "Branches": [{"StartAt": "B", "States": {"B": {"Type": "Pass", "Result": {"k": null}, "End": true}}}], "Next": "S"},
    "S": {"Type": "Succeed"},
    "F": {"Type": "Fail", "Error": "E", "Cause": "c"}
  }
}"#;

#[test]
fn the_mutation_seed_is_valid() {
    let loaded = wfc_core::asl::load(Source { path: "seed.json", text: VALID });
    assert!(
        loaded.as_ref().is_ok_and(|l| indices_in_range(&l.workflow)),
        "{}",
        loaded.err().map(|d| d.render(false)).unwrap_or_default()
    );
}

/// Every transition of an accepted workflow names a state of its own machine: the invariant code
/// generation and the interpreter index by.
fn indices_in_range(wf: &wfc_core::ir::Workflow) -> bool {
    use wfc_core::ir::{StateKind, Transition};
    wf.machines().iter().all(|m| {
        let n = m.states.len();
        let ok = |id: usize| id < n;
        let tr = |t: &Transition| match t {
            Transition::Next(id) => ok(*id),
            Transition::End => true,
        };
        n > 0
            && ok(m.start_at)
            && m.states.iter().all(|s| match &s.kind {
                StateKind::Pass(p) => tr(&p.transition),
                StateKind::Task(t) => tr(&t.transition) && t.catch.iter().all(|c| ok(c.next)),
                StateKind::Choice(c) => c.choices.iter().all(|b| ok(b.next)) && c.default.is_none_or(ok),
                StateKind::Wait(w) => tr(&w.transition),
                StateKind::Succeed(_) | StateKind::Fail(_) => true,
                StateKind::Parallel(p) => {
                    tr(&p.transition) && p.catch.iter().all(|c| ok(c.next)) && !p.branches.is_empty()
                }
                StateKind::Map(m) => tr(&m.transition) && m.catch.iter().all(|c| ok(c.next)),
                // The ASL front end never produces Serverless Workflow states.
                StateKind::Sw(_) => false,
            })
    })
}

fn mutate(text: &str, ops: &[(u8, usize, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(kind, at, c) in ops {
        if chars.is_empty() {
            chars.push(c);
            continue;
        }
        let i = at % chars.len();
        match kind % 4 {
            0 => {
                chars.remove(i);
            }
            1 => chars.insert(i, c),
            2 => chars[i] = c,
            _ => {
                // Duplicate a slice: makes structural repeats (keys, rules) likely.
                let end = (i + 1 + (at % 40)).min(chars.len());
                let piece: Vec<char> = chars[i..end].to_vec();
                chars.splice(i..i, piece);
            }
        }
    }
    chars.into_iter().collect()
}

fn structural_char() -> impl Strategy<Value = char> {
    prop_oneof![
        Just('{'),
        Just('}'),
        Just('['),
        Just(']'),
        Just('"'),
        Just(','),
        Just(':'),
        Just('$'),
        Just('.'),
        Just('-'),
        Just('0'),
        Just('\n'),
        Just('é'),
        any::<char>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_mutations_of_valid_json_never_panic(ops in prop::collection::vec((any::<u8>(), any::<usize>(), structural_char()), 1..6)) {
        let text = mutate(VALID, &ops);
        match wfc_core::asl::load(Source { path: "m.json", text: &text }) {
            Ok(loaded) => prop_assert!(indices_in_range(&loaded.workflow), "{text}"),
            Err(d) => {
                prop_assert!(d.has_errors());
                // Rendering and locating must not panic either, and every span lies in the text.
                let _ = d.render(true);
                for item in &d.items {
                    prop_assert!(item.span.start <= item.span.end && item.span.end <= text.len(), "{:?}", item);
                }
                prop_assert_eq!(d.located().len(), d.items.len());
            }
        }
    }

    #[test]
    fn random_yaml_never_panics(ops in prop::collection::vec((any::<u8>(), any::<usize>(), structural_char()), 1..6)) {
        let seed = "StartAt: A\nStates:\n  A:\n    Type: Choice\n    Choices:\n      - Variable: $.x\n        IsNull: true\n        Next: B\n    Default: B\n  B: {Type: Pass, Result: &x [1, 2], End: true}\n";
        let text = mutate(seed, &ops);
        let loaded = wfc_core::asl::load(Source { path: "m.yaml", text: &text });
        if let Ok(l) = &loaded {
            prop_assert!(indices_in_range(&l.workflow));
        }
        if let Err(d) = loaded {
            let _ = d.render(false);
            for item in &d.items {
                prop_assert!(item.span.end <= text.len());
            }
        }
    }
}

#[test]
fn deep_templates_and_results_are_fine() {
    // Close to the document limits: 500 nested arrays, 240 nested objects.
    let arrays = format!("{}{}", "[".repeat(500), "]".repeat(500));
    let mut objects = r#"{"leaf.$": "$.x"}"#.to_owned();
    for _ in 0..240 {
        objects = format!(r#"{{"o": {objects}}}"#);
    }
    let text = format!(
        r#"{{"StartAt": "A", "States": {{"A": {{"Type": "Pass", "Result": {arrays}, "Parameters": {objects}, "End": true}}}}}}"#
    );
    let loaded = wfc_core::asl::load(Source { path: "deep.json", text: &text });
    assert!(loaded.is_ok(), "{}", loaded.err().map(|d| d.render(false)).unwrap_or_default());
}
