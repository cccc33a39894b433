//! A proptest smoke of the Serverless Workflow front end, the input class of the `sw` fuzz
//! target (fuzz/fuzz_targets/sw.rs): mutated SW documents in JSON and YAML either fail with
//! diagnostics or compile into one module that parses, with an IR that survives its JSON round
//! trip. Never a panic.

use proptest::prelude::*;
use wfc_core::{Settings, Source};

const SEED_JSON: &str = r#"{"id": "p", "name": "P", "functions": [{"name": "f", "resource": "r"}],
 "events": [{"name": "E", "type": "t", "source": "s", "correlation": [{"contextAttributeName": "k"}]}],
 "states": [
  {"name": "A", "type": "event", "start": {"kind": "scheduled", "schedule": {"cron": "0 * * * *", "timezone": "UTC"}},
   "onEvents": [{"eventRefs": ["E"], "eventDataFilter": {"dataOutputPath": "{{ $.data.x }}"}, "actions": [{"functionRef": {"refName": "f", "parameters": {"a": "v {{ $.x.length() }}"}}}]}],
   "timeout": "PT1M", "transition": {"nextState": "B"}},
  {"name": "B", "type": "switch", "dataConditions": [{"condition": "{{ $.x[?(@.y > 1)] }}", "transition": {"nextState": "C"}}], "default": {"nextState": "C"}},
  {"name": "C", "type": "foreach", "inputCollection": "{{ $.x }}", "iterationParam": "i", "outputCollection": "{{ $.r }}", "max": 2,
   "actions": [{"functionRef": "f"}], "retry": [{"expression": "{{ $.error }}", "interval": "R3/PT2S", "multiplier": "PT2S"}],
   "onError": [{"expression": "{{ $.errors[0] }}", "end": {"kind": "terminate"}}], "end": {"kind": "default"}}
 ]}"#;

const SEED_YAML: &str = "id: p\nname: P\nfunctions:\n- name: f\n  resource: r\nstates:\n- name: A\n  type: parallel\n  start:\n    kind: default\n  completionType: n_of_m\n  n: 1\n  branches:\n  - name: B\n    actions:\n    - functionRef: f\n  transition:\n    nextState: D\n- name: D\n  type: delay\n  timeDelay: PT5S\n  end:\n    kind: default\n";

fn compile_and_check(path: &str, text: &str) -> Result<(), TestCaseError> {
    let Ok(compiled) = wfc_core::compile(Source { path, text }, &Settings::new()) else { return Ok(()) };
    let file = syn::parse2::<syn::File>(compiled.tokens);
    prop_assert!(file.as_ref().is_ok_and(|f| f.items.len() == 1), "generated code does not parse");
    let json = serde_json::to_string(&compiled.workflow).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: wfc_ir::Workflow = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(back, compiled.workflow);
    Ok(())
}

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
        '{', '}', '[', ']', '"', ':', ',', '\\', '$', '.', '@', '?', '(', ')', '*', '-', '\n', ' ', 'P', 'T', 'R', '/',
        '0', '9', 'a', 'é', '\u{0}',
    ])
}

#[test]
fn the_seeds_compile() {
    for (path, text) in [("p.sw.json", SEED_JSON), ("p.sw.yaml", SEED_YAML)] {
        if let Err(d) = wfc_core::compile(Source { path, text }, &Settings::new()) {
            panic!("{}", d.render(false));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sw_json_mutations(ops in prop::collection::vec((any::<u8>(), any::<usize>(), structural()), 1..8)) {
        compile_and_check("smoke.sw.json", &mutate(SEED_JSON, &ops))?;
    }

    #[test]
    fn sw_yaml_mutations(ops in prop::collection::vec((any::<u8>(), any::<usize>(), structural()), 1..8)) {
        compile_and_check("smoke.sw.yaml", &mutate(SEED_YAML, &ops))?;
    }
}
