//! A few seconds of each fuzz target's input class (`fuzz/fuzz_targets/*`), as proptest, so every
//! `cargo test` exercises what the long fuzz runs cover: the ASL front end on JSON and YAML, the
//! JSONPath parser, and runtime path select/set. The properties are the fuzz targets' oracles.

use proptest::prelude::*;
use serde_json::{Value, json};
use wfc_core::{Settings, Source};
use wfc_ir::{Path, ReferencePath};

const SEED_JSON: &str = r#"{"Comment": "c", "StartAt": "A", "States": {
  "A": {"Type": "Pass", "Parameters": {"x.$": "$.a[0]"}, "ResultPath": "$.r", "Next": "B"},
  "B": {"Type": "Choice", "Choices": [{"Variable": "$.r.x", "NumericGreaterThan": 1, "Next": "C"}], "Default": "D"},
  "C": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:F", "Retry": [{"ErrorEquals": ["States.ALL"]}], "Next": "D"},
  "D": {"Type": "Parallel", "Branches": [{"StartAt": "E", "States": {"E": {"Type": "Wait", "Seconds": 1, "End": true}}}], "End": true}
}}"#;

const SEED_YAML: &str = "StartAt: A\nStates:\n  A:\n    Type: Pass\n    Result: &r {x: [1, 2]}\n    Next: B\n  B:\n    Type: Pass\n    Result: *r\n    End: true\n";

/// The fuzz oracle: whatever the front end accepts becomes one module that parses as Rust, and
/// its IR survives the JSON round trip generated code relies on.
fn compile_and_check(path: &str, text: &str) -> Result<(), TestCaseError> {
    let Ok(compiled) = wfc_core::compile(Source { path, text }, &Settings::new()) else { return Ok(()) };
    let file = syn::parse2::<syn::File>(compiled.tokens);
    prop_assert!(file.as_ref().is_ok_and(|f| f.items.len() == 1), "generated code does not parse");
    let json = serde_json::to_string(&compiled.workflow).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: wfc_ir::Workflow = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(back, compiled.workflow);
    Ok(())
}

/// Inserts, deletes or replaces characters at pseudo-random char positions.
fn mutate(text: &str, ops: &[(u8, usize, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(op, at, c) in ops {
        let at = if chars.is_empty() { 0 } else { at % chars.len() };
        match op % 3 {
            0 => chars.insert(at, c),
            1 if !chars.is_empty() => {
                chars.remove(at);
            }
            _ if !chars.is_empty() => chars[at] = c,
            _ => chars.push(c),
        }
    }
    chars.into_iter().collect()
}

fn structural() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        '{', '}', '[', ']', '"', ':', ',', '\\', '$', '.', '@', '?', '(', ')', '*', '&', '!', '-', '\n', ' ', '#',
        '\'', 'a', '0', 'é', '\u{0}',
    ])
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-c]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]{1,2}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn path_text() -> impl Strategy<Value = String> {
    let step = prop_oneof![
        "\\.[a-c]{1,2}",
        "\\[[0-3]\\]",
        "\\[-1\\]",
        Just("[*]".to_owned()),
        Just("..a".to_owned()),
        Just("[0:2]".to_owned()),
        Just("['a','b']".to_owned()),
        Just("[?(@.a)]".to_owned()),
        Just("[?(@.a > 1)]".to_owned()),
        Just(".length()".to_owned()),
        "[\\[\\]().?@*'a-c0-9]{1,3}",
    ];
    (prop::sample::select(vec!["$", "$$", "@", ""]), prop::collection::vec(step, 0..5))
        .prop_map(|(root, steps)| format!("{root}{}", steps.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn asl_json_mutations(ops in prop::collection::vec((any::<u8>(), any::<usize>(), structural()), 1..8)) {
        compile_and_check("smoke.asl.json", &mutate(SEED_JSON, &ops))?;
    }

    #[test]
    fn asl_yaml_mutations(ops in prop::collection::vec((any::<u8>(), any::<usize>(), structural()), 1..8)) {
        compile_and_check("smoke.asl.yaml", &mutate(SEED_YAML, &ops))?;
    }

    #[test]
    fn jsonpath_parse_is_stable(text in path_text()) {
        if let Ok(path) = Path::parse(&text) {
            let canonical = path.canonical();
            let again = Path::parse(&canonical).map_err(|e| TestCaseError::fail(format!("{canonical}: {e}")))?;
            prop_assert_eq!(again.canonical(), canonical);
        }
        let _ = ReferencePath::parse(&text);
    }

    #[test]
    fn runtime_select_and_set_agree(text in path_text(), doc in json_value()) {
        if let Ok(path) = Path::parse(&text) {
            let nodes = path.select_nodes(&doc);
            if path.is_singular() {
                prop_assert!(nodes.len() <= 1);
                if let (Ok(v), Some(n)) = (path.select(&doc), nodes.first()) {
                    prop_assert_eq!(&v, *n);
                }
            }
        }
        if let Ok(rpath) = ReferencePath::parse(&text) {
            let marker = json!({"marker": true});
            let mut target = doc.clone();
            match rpath.set(&mut target, marker.clone()) {
                Ok(()) => {
                    if let Ok(Ok(v)) = Path::parse(&text).map(|p| p.select(&target)) {
                        prop_assert_eq!(v, marker);
                    }
                }
                Err(_) => prop_assert_eq!(target, doc),
            }
        }
    }
}
