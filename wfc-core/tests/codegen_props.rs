//! Property tests: whatever names and resources a definition uses, code generation succeeds (no
//! `compile_error!`, no panic), the output parses as Rust, and every identifier it derives is
//! ASCII.

use proptest::prelude::*;
use serde_json::json;
use wfc_core::ir::Workflow;
use wfc_core::{Settings, Source, codegen};

/// A chain of Pass states with these names, then one Task per resource, then a Succeed.
fn workflow(names: &[String], resources: &[String]) -> Workflow {
    let mut states = Vec::new();
    let total = names.len() + resources.len() + 1;
    let next = |i: usize| json!({ "Next": i + 1 });
    for (i, name) in names.iter().enumerate() {
        states.push(json!({ "name": name, "comment": name, "location": null, "kind": { "Pass": {
            "input_path": "$", "parameters": null, "result": null, "result_path": "$", "output_path": "$",
            "transition": next(i) } } }));
    }
    for (j, resource) in resources.iter().enumerate() {
        let i = names.len() + j;
        states.push(json!({ "name": format!("task {j}"), "comment": null, "location": null, "kind": { "Task": {
            "resource": resource, "input_path": "$", "parameters": null, "result_selector": null,
            "result_path": "$", "output_path": "$", "timeout": null, "heartbeat": null, "retry": [],
            "catch": [ { "error_equals": ["States.ALL"], "result_path": "$", "next": total - 1 } ],
            "transition": next(i) } } }));
    }
    states.push(json!({ "name": "the end", "comment": null, "location": null,
        "kind": { "Succeed": { "input_path": "$", "output_path": "$" } } }));
    let value = json!({ "name": "prop", "comment": null, "version": null, "timeout_seconds": null,
        "machine": { "start_at": 0, "states": states } });
    serde_json::from_value(value).unwrap_or_else(|e| panic!("test IR: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_names_generate_valid_rust(
        names in proptest::collection::btree_set("\\PC{0,12}|[\"\\\\#{}*/`\\n\u{202e}r]{1,6}", 1..6),
        resources in proptest::collection::btree_set("[a-z:/]{0,4}\\PC{0,10}", 0..4),
        module in "\\PC{0,10}",
    ) {
        let names: Vec<String> = names.into_iter().filter(|n| !n.starts_with("task ") && n != "the end").collect();
        let resources: Vec<String> = resources.into_iter().collect();
        let wf = workflow(&names, &resources);
        let mut settings = Settings::new();
        settings.module_name(module);
        let tokens = codegen::generate(&wf, Source { path: "p.asl.json", text: "{}" }, &settings);
        let text = tokens.to_string();
        prop_assert!(!text.contains("compile_error"), "{}", text);
        let parsed = syn::parse2::<syn::File>(tokens.clone());
        prop_assert!(parsed.is_ok(), "does not parse: {:?}", parsed.err());
        prop_assert!(codegen::format(tokens).contains("pub trait Handler"));
        prop_assert_eq!(codegen::handler_methods(&wf).len(), resources.len());
        for (_, method, _) in codegen::handler_methods(&wf) {
            prop_assert!(method.is_ascii() && syn::parse_str::<syn::Ident>(&method).is_ok(), "{}", method);
        }
    }
}
