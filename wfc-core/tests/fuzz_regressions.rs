//! Inputs the fuzz targets (fuzz/, docs/reliability.md) found failing, kept as tests once fixed.
//! Each runs the same oracle as its target.

use wfc_core::{Settings, Source};

/// What `fuzz/fuzz_targets/common.rs` checks for every definition the compiler accepts: the
/// generated module parses as one item, and the IR survives its JSON form (what stores keep and
/// its hash is taken of).
fn compiles_and_round_trips(path: &str, text: &str) -> wfc_ir::Workflow {
    let compiled = wfc_core::compile(Source { path, text }, &Settings::new())
        .unwrap_or_else(|d| panic!("{path} should compile: {d:?}"));
    let file: syn::File = syn::parse2(compiled.tokens.clone()).expect("generated code parses");
    assert_eq!(file.items.len(), 1);
    let json = serde_json::to_string(&compiled.workflow).unwrap();
    let back: wfc_ir::Workflow = serde_json::from_str(&json).unwrap();
    assert_eq!(back, compiled.workflow, "the IR changed through its JSON form");
    back
}

/// `sw` target, first session: a function's `parameters` that YAML reads as null was written as
/// `null` and read back as absent, so generated code (which loads the IR from JSON) called the
/// function with the action's data while the interpreter passed null.
#[test]
fn sw_parameters_null_survives_the_ir_json() {
    let text = include_str!("fixtures/fuzz/sw-parameters-null.sw.yaml");
    compiles_and_round_trips("sw-parameters-null.sw.yaml", text);
}

/// The same fault in ASL: `"Result": null` is a result (null), not an absent `Result`.
#[test]
fn asl_pass_result_null_survives_the_ir_json() {
    let text = r#"{"StartAt": "Nothing", "States": {"Nothing": {"Type": "Pass", "Result": null, "End": true}}}"#;
    let ir = compiles_and_round_trips("result-null.asl.json", text);
    match &ir.machine.states[0].kind {
        wfc_ir::StateKind::Pass(pass) => assert_eq!(pass.result, Some(serde_json::Value::Null)),
        other => panic!("expected a Pass state, got {other:?}"),
    }
}
