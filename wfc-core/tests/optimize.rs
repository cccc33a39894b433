//! The optimizer through the public API: `load_with`/`compile` with pass settings, on the
//! conformance suite's definitions and on definitions written for the passes.

use std::path::Path;

use wfc_core::optimize::{Pass, Passes};
use wfc_core::{Settings, Source, ir};

fn load(text: &str, passes: Passes) -> ir::Workflow {
    let mut settings = Settings::new();
    settings.passes(passes);
    wfc_core::load_with(Source { path: "t.asl.json", text }, &settings)
        .unwrap_or_else(|d| panic!("{}", d.render(false)))
        .workflow
}

fn names(m: &ir::StateMachine) -> Vec<&str> {
    m.states.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn default_passes_keep_every_state_of_the_suite() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/definitions");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("definitions dir") {
        let path = entry.expect("entry").path();
        if !path.to_string_lossy().ends_with(".asl.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let source = Source { path: "d.asl.json", text: &text };
        let Ok(plain) = wfc_core::load_with(source, Settings::new().passes(Passes::none())) else { continue };
        let optimized = wfc_core::load(source).expect("valid with passes too");
        // Validated definitions have no unreachable states, and the default passes never
        // remove a state that runs.
        let before: Vec<Vec<&str>> = plain.workflow.machines().into_iter().map(names).collect();
        let after: Vec<Vec<&str>> = optimized.workflow.machines().into_iter().map(names).collect();
        assert_eq!(before, after, "{}", path.display());
        // Every pass's output is still a valid IR value: codegen embeds it as JSON.
        let all = wfc_core::load_with(source, Settings::new().passes(Passes::all())).expect("valid");
        let json = serde_json::to_string(&all.workflow).expect("serialize");
        let back: ir::Workflow = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, all.workflow, "{}", path.display());
        // The compiled forms (direct paths, prepared Choice literals) survive the round trip:
        // `PartialEq` compares paths by text only, so compare the JSON again.
        assert_eq!(serde_json::to_string(&back).expect("serialize"), json, "{}", path.display());
        seen += 1;
    }
    assert!(seen > 10, "only {seen} definitions loaded");
}

const CHAIN: &str = r#"{
  "StartAt": "A",
  "States": {
    "A": {"Type": "Pass", "Result": {"x": 1}, "Next": "B"},
    "B": {"Type": "Pass", "Parameters": {"y.$": "$.x", "z": [1, 2]}, "Next": "C"},
    "C": {"Type": "Choice", "Choices": [{"Variable": "$.y", "NumericEquals": 1, "Next": "D"}], "Default": "E"},
    "D": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Work", "End": true},
    "E": {"Type": "Fail", "Error": "No"}
  }
}"#;

#[test]
fn all_passes_fold_thread_and_prune() {
    let plain = load(CHAIN, Passes::none());
    assert_eq!(names(&plain.machine), ["A", "B", "C", "D", "E"]);
    let wf = load(CHAIN, Passes::all());
    assert_eq!(names(&wf.machine), ["A", "D"]);
    let ir::StateKind::Pass(a) = &wf.machine.states[0].kind else { panic!("A is a Pass") };
    assert_eq!(a.result, Some(serde_json::json!({"y": 1, "z": [1, 2]})));
    assert_eq!(a.transition, ir::Transition::Next(1));
    // Default settings: history-preserving passes only, so every state stays.
    assert_eq!(names(&load(CHAIN, Passes::default()).machine), ["A", "B", "C", "D", "E"]);
}

#[test]
fn each_pass_can_be_disabled_alone() {
    let mut no_thread = Passes::all();
    no_thread.disable(Pass::ThreadChoice);
    // Folding A and B still happens; the Choice stays because nothing threads through it.
    assert_eq!(names(&load(CHAIN, no_thread).machine), ["A", "C", "D", "E"]);
    let mut no_prune = Passes::all();
    no_prune.disable(Pass::Unreachable);
    assert_eq!(names(&load(CHAIN, no_prune).machine), ["A", "B", "C", "D", "E"]);
}

#[test]
fn compile_uses_the_settings_passes() {
    let source = Source { path: "chain.asl.json", text: CHAIN };
    let mut settings = Settings::new();
    settings.passes(Passes::all());
    let compiled = wfc_core::compile(source, &settings).expect("compiles");
    assert_eq!(compiled.workflow.machine.states.len(), 2);
    let code = compiled.tokens.to_string();
    assert!(!code.contains("compile_error"), "{code}");
    let default = wfc_core::compile(source, &Settings::new()).expect("compiles");
    assert_eq!(default.workflow.machine.states.len(), 5);
}
