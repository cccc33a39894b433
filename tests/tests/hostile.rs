//! Hostile definitions end to end (issue 9): strings that try to escape Rust literals, comments,
//! doc attributes and raw strings; huge and deeply nested definitions. Each either compiles into
//! code that parses, contains only generated items and runs correctly, or fails with a located
//! limit diagnostic. Nothing panics and nothing is injected.
//!
//! `tests/hostile/strings.asl.json` is [`definition`] applied to [`HOSTILE`]; the test
//! `fixture_is_current` keeps the two in step (run with `WFC_UPDATE_HOSTILE=1` to rewrite it).

use proc_macro2::{TokenStream, TokenTree};
use serde_json::{Value, json};
use wfc_core::{Settings, Source};
use wfc_runtime::{RunOptions, Status, TaskContext, TaskError};

/// Strings aimed at every place generated code embeds text.
const HOSTILE: [&str; 12] = [
    "Say \"hi\"",
    "back\\slash\\",
    "\"#",
    "r#\"raw\"#",
    "*/ /* /** doc */",
    "line\nbreak\r\nand\ttab",
    "\u{202e}RTL override\u{202c}",
    "e\u{301}\u{327} combining \u{200d}",
    "}; panic!(\"pwned\"); {",
    "#[cfg(any())] /// doc",
    "\u{1}\u{1f} control \u{7f}",
    "日本語 ✓ 🦀",
];

/// Text with a NUL byte: allowed in comments and JSON literals (not in state names).
const WITH_NUL: &str = "nul\u{0}byte";

/// A definition that puts `s[i]` in state names, resources, comments, Parameters keys and
/// literals, Result values, Fail error/cause, and Choice literals.
fn definition(s: &[&str; 12]) -> String {
    let literal = json!({ "q": s[0], "all": s, "nul": WITH_NUL, "nested": { s[2]: [s[3], { s[4]: s[5] }] } });
    let states = json!({
        s[0]: { "Type": "Pass", "Comment": s[1], "Result": literal, "ResultPath": "$.lit", "Next": s[1] },
        s[1]: { "Type": "Task", "Comment": WITH_NUL, "Resource": format!("arn:aws:lambda:us-east-1:1:function:{}", s[2]),
                "Parameters": { s[3]: s[4], "echo.$": "$.lit.q" }, "ResultPath": "$.task", "Next": s[2] },
        s[2]: { "Type": "Task", "Resource": format!("urn:{}", s[8]), "ResultPath": "$.task2", "Next": s[3] },
        s[3]: { "Type": "Choice", "Choices": [
                    { "Variable": "$.lit.q", "StringEquals": s[0], "Next": s[4] },
                    { "Variable": "$.lit.q", "StringEquals": s[9], "Next": s[11] }
                ], "Default": s[11] },
        s[4]: { "Type": "Parallel", "Comment": s[5], "ResultPath": "$.branches", "Next": s[6], "Branches": [
                    { "StartAt": s[5], "States": { s[5]: { "Type": "Pass", "Result": s[6], "End": true } } },
                    { "StartAt": s[7], "States": { s[7]: { "Type": "Pass", "Parameters": { s[7]: s[8] }, "End": true } } }
                ] },
        s[6]: { "Type": "Pass", "Next": s[8] },
        s[8]: { "Type": "Choice", "Choices": [ { "Variable": "$.task.input.echo", "StringEquals": s[0], "Next": s[9] } ],
                "Default": s[10] },
        s[9]: { "Type": "Succeed", "Comment": s[10] },
        s[10]: { "Type": "Fail", "Error": s[10], "Cause": s[11] },
        s[11]: { "Type": "Fail", "Error": "Wrong.Branch", "Cause": s[9] }
    });
    let doc = json!({ "Comment": format!("{} {}", s[4], WITH_NUL), "StartAt": s[0], "States": states });
    serde_json::to_string_pretty(&doc).expect("serializes") + "\n"
}

/// The same definition with harmless strings, for structural comparison. Like every hostile
/// name, none is a Rust identifier as written, so each State variant carries the same
/// `#[serde(rename)]` the hostile one does.
fn benign() -> [&'static str; 12] {
    ["a 0", "a 1", "a 2", "a 3", "a 4", "a 5", "a 6", "a 7", "a 8", "a 9", "a 10", "a 11"]
}

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/hostile/strings.asl.json");

wfc_runtime::include_workflow!("hostile/strings.asl.json");

#[test]
fn fixture_is_current() {
    let want = definition(&HOSTILE);
    if std::env::var_os("WFC_UPDATE_HOSTILE").is_some() {
        std::fs::write(FIXTURE, &want).expect("write the fixture");
    }
    let have = std::fs::read_to_string(FIXTURE).expect("read the fixture");
    assert!(have == want, "tests/hostile/strings.asl.json is stale: rerun with WFC_UPDATE_HOSTILE=1");
    // The generated module embeds the definition byte for byte.
    assert_eq!(strings::DEFINITION, want);
}

struct Echo;

impl strings::Handler for Echo {
    async fn task(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(json!({ "method": "first", "state": ctx.state_name(), "execution": ctx.execution_name(), "input": input }))
    }
    async fn panic_pwned(&self, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(json!({ "method": "second", "state": ctx.state_name(), "resource": ctx.resource(), "input": input }))
    }
}

#[test]
fn hostile_strings_run_correctly_through_generated_code() {
    let result = wfc_runtime::block_on_virtual(strings::run_with(&Echo, json!({}), RunOptions::virtual_time()));
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let out = result.output.unwrap_or_default();
    let s = HOSTILE;
    // JSON literals arrive unchanged, NUL included.
    assert_eq!(out["lit"]["all"], json!(s));
    assert_eq!(out["lit"]["nul"], json!(WITH_NUL));
    assert_eq!(out["lit"]["nested"][s[2]], json!([s[3], { s[4]: s[5] }]));
    // Parameters keys and values, and the state names the handlers see.
    assert_eq!(out["task"]["input"], json!({ s[3]: s[4], "echo": s[0] }));
    assert_eq!(out["task"]["state"], json!(s[1]));
    // Generated Tasks' contexts borrow their names; the execution's is the one it started with.
    assert_eq!(out["task"]["execution"], result.history[0].details.get("name").cloned().unwrap_or_default());
    assert_eq!(out["task2"]["state"], json!(s[2]));
    assert_eq!(out["task2"]["resource"], json!(format!("urn:{}", s[8])));
    assert_eq!(out["branches"], json!([s[6], { s[7]: s[8] }]));
    // The history names every state exactly as written.
    let entered: Vec<String> = result
        .history
        .iter()
        .filter(|e| e.event_type.name().ends_with("StateEntered"))
        .filter_map(|e| e.details.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    for name in [s[0], s[1], s[2], s[3], s[4], s[5], s[7], s[6], s[8], s[9]] {
        assert!(entered.iter().any(|n| n == name), "{name:?} not entered: {entered:?}");
    }
}

/// The token structure of generated code with every doc attribute removed, every literal
/// replaced by `L` and every identifier by `I`: two modules with the same shape but different
/// strings must give the same sequence. Any token a string smuggled in would show up here.
fn shape(tokens: TokenStream, out: &mut Vec<String>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while let Some(tree) = trees.get(i) {
        // `#[doc = "..."]` / `#![doc = "..."]`: documentation is free text by design.
        if let TokenTree::Punct(p) = tree {
            if p.as_char() == '#' {
                let bang = matches!(trees.get(i + 1), Some(TokenTree::Punct(b)) if b.as_char() == '!');
                let at = if bang { i + 2 } else { i + 1 };
                if let Some(TokenTree::Group(g)) = trees.get(at) {
                    if matches!(g.stream().into_iter().next(), Some(TokenTree::Ident(id)) if id == "doc") {
                        i = at + 1;
                        continue;
                    }
                }
            }
        }
        match tree {
            TokenTree::Group(g) => {
                out.push(format!("{:?}(", g.delimiter()));
                shape(g.stream(), out);
                out.push(")".to_owned());
            }
            TokenTree::Ident(_) => out.push("I".to_owned()),
            TokenTree::Punct(p) => out.push(p.as_char().to_string()),
            TokenTree::Literal(_) => out.push("L".to_owned()),
        }
        i += 1;
    }
}

fn compile(text: &str) -> wfc_core::Compiled {
    match wfc_core::compile(Source { path: "strings.asl.json", text }, &Settings::new()) {
        Ok(c) => c,
        Err(d) => panic!("{:?}", d.items.iter().map(|d| &d.message).collect::<Vec<_>>()),
    }
}

/// Finds `const <name>: &str = "...";` anywhere in the module and returns its value.
fn const_str(items: &[syn::Item], name: &str) -> Option<String> {
    items.iter().find_map(|item| match item {
        syn::Item::Const(c) if c.ident == name => match &*c.expr {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        syn::Item::Mod(m) => m.content.as_ref().and_then(|(_, inner)| const_str(inner, name)),
        _ => None,
    })
}

#[test]
fn generated_module_has_no_injected_items_and_every_string_round_trips() {
    let hostile_text = definition(&HOSTILE);
    let hostile = compile(&hostile_text);
    let benign = compile(&definition(&benign()));

    // One top-level item, the module, and it parses as Rust.
    let file: syn::File = syn::parse2(hostile.tokens.clone()).unwrap_or_else(|e| panic!("does not parse: {e}"));
    assert_eq!(file.items.len(), 1);
    let syn::Item::Mod(module) = &file.items[0] else { panic!("the item is not a module") };
    assert_eq!(module.ident, "strings");
    let items = &module.content.as_ref().map(|(_, items)| items.clone()).unwrap_or_default();

    // Same token structure as the benign twin: no string added a token anywhere.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    shape(hostile.tokens.clone(), &mut a);
    shape(benign.tokens.clone(), &mut b);
    assert_eq!(a.len(), b.len(), "token count differs from the benign twin");
    assert!(a == b, "token structure differs from the benign twin");

    // DEFINITION is the source text byte for byte; no IR is embedded, only its hash (in
    // DEFINITION_ID), which is the hash of the very IR the compiler built.
    assert_eq!(const_str(items, "DEFINITION").as_deref(), Some(hostile_text.as_str()));
    assert!(const_str(items, "IR_JSON").is_none(), "the IR is embedded");
    let hash = proc_macro2::Literal::string(&hostile.workflow.definition_hash()).to_string();
    assert!(hostile.tokens.to_string().contains(&hash), "no DEFINITION_ID with the IR's hash {hash}");
    let ir = &hostile.workflow;
    let names: Vec<&str> = ir.machine.states.iter().map(|s| s.name.as_str()).collect();
    for name in [HOSTILE[0], HOSTILE[8], HOSTILE[9], HOSTILE[10]] {
        assert!(names.contains(&name), "{name:?} missing from {names:?}");
    }
}

fn diagnostics(path: &str, text: &str) -> Vec<(String, usize, String)> {
    match wfc_core::compile(Source { path, text }, &Settings::new()) {
        Ok(_) => Vec::new(),
        Err(d) => d.items.iter().map(|d| (d.code.to_owned(), d.span.start, d.message.clone())).collect(),
    }
}

#[test]
fn ten_thousand_states_compile_to_parsable_code() {
    let mut states = serde_json::Map::new();
    for i in 0..10_000 {
        let next = if i + 1 < 10_000 {
            json!({ "Type": "Pass", "Next": format!("S{}", i + 1) })
        } else {
            json!({ "Type": "Succeed" })
        };
        states.insert(format!("S{i}"), next);
    }
    let text = json!({ "StartAt": "S0", "States": states }).to_string();
    let compiled = compile(&text);
    assert_eq!(compiled.workflow.machine.states.len(), 10_000);
    let file: Result<syn::File, _> = syn::parse2(compiled.tokens);
    assert!(file.is_ok());
}

#[test]
fn choice_rules_nested_a_thousand_deep_are_a_located_diagnostic() {
    let mut rule = r#"{"Variable": "$.x", "IsNull": true}"#.to_owned();
    for _ in 0..1000 {
        rule = format!(r#"{{"Not": {rule}}}"#);
    }
    rule.insert_str(1, r#""Next": "D", "#);
    let text = format!(
        r#"{{"StartAt": "C", "States": {{"C": {{"Type": "Choice", "Default": "D", "Choices": [{rule}]}}, "D": {{"Type": "Succeed"}}}}}}"#
    );
    let d = diagnostics("deep.asl.json", &text);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].0, "WFC0103");
    assert!(d[0].1 > 0 && d[0].1 < text.len(), "the diagnostic points into the document");
}

#[test]
fn parallel_nested_a_hundred_deep_is_a_located_limit_diagnostic() {
    let mut machine = r#"{"StartAt": "L", "States": {"L": {"Type": "Succeed"}}}"#.to_owned();
    for i in 0..100 {
        machine = format!(
            r#"{{"StartAt": "P{i}", "States": {{"P{i}": {{"Type": "Parallel", "End": true, "Branches": [{machine}]}}}}}}"#
        );
    }
    let d = diagnostics("deep.asl.json", &machine);
    assert!(!d.is_empty() && d.iter().all(|(code, _, _)| code == "WFC0210" || code == "WFC0103"), "{d:?}");
    assert!(d.iter().all(|(_, at, _)| *at < machine.len()));
}

#[test]
fn a_hundred_thousand_character_jsonpath_compiles_or_is_diagnosed() {
    // A long but valid path compiles and selects.
    let long = format!("$.{}", vec!["a"; 50_000].join("."));
    assert!(long.len() >= 100_000);
    let text =
        json!({ "StartAt": "P", "States": { "P": { "Type": "Pass", "InputPath": long, "End": true } } }).to_string();
    assert!(syn::parse2::<syn::File>(compile(&text).tokens).is_ok());
    // A path of 100,000 nested filter brackets is refused with a diagnostic, not a stack overflow.
    let nested = format!("$[{}", "?(@[".repeat(25_000));
    let text =
        json!({ "StartAt": "P", "States": { "P": { "Type": "Pass", "InputPath": nested, "End": true } } }).to_string();
    let d = diagnostics("long.asl.json", &text);
    assert!(!d.is_empty(), "an unbalanced path must be refused");
    // And a deep but balanced one.
    let balanced = format!("$[{}@.a{}]", "?(@[?(".repeat(8_000), ")]".repeat(8_000) + ")");
    let text = json!({ "StartAt": "P", "States": { "P": { "Type": "Pass", "InputPath": balanced, "End": true } } })
        .to_string();
    let _ = diagnostics("balanced.asl.json", &text);
}

#[test]
fn yaml_alias_bomb_is_a_located_limit_diagnostic() {
    let mut text = String::from("Comment: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        text.push_str(&format!("X{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
    }
    text.push_str("StartAt: A\nStates:\n  A: {Type: Succeed}\n");
    let d = diagnostics("bomb.asl.yaml", &text);
    assert!(d.iter().any(|(code, _, _)| code == "WFC0104"), "{d:?}");
    assert!(d.iter().all(|(_, at, _)| *at <= text.len()));
}

/// A fresh temporary directory standing in for a build script's `OUT_DIR`.
fn temp_out_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wfc-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Runs the build.rs helper on `manifest_dir/strings.asl.json` into a temporary OUT_DIR and
/// returns the module it wrote.
fn build_rs(tag: &str, manifest_dir: &std::path::Path) -> String {
    let out = temp_out_dir(tag);
    let mut config = wfc_build::Config::new();
    config.out_dir(&out).manifest_dir(manifest_dir).emit_rerun_if_changed(false).emit_warnings(false);
    config.compile(&["strings.asl.json"]).unwrap_or_else(|e| panic!("{e}"));
    let written = std::fs::read_to_string(out.join("strings.rs")).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&out);
    written
}

#[test]
fn build_rs_output_for_hostile_strings_has_only_generated_tokens() {
    let hostile = build_rs("hostile", &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("hostile"));
    let file: syn::File = syn::parse_str(&hostile).unwrap_or_else(|e| panic!("OUT_DIR/strings.rs does not parse: {e}"));
    assert_eq!(file.items.len(), 1);
    // build.rs writes prettyplease's printing of exactly the tokens whose structure
    // `generated_module_has_no_injected_items_and_every_string_round_trips` checks; printing a
    // syn tree cannot turn a literal into code.
    let formatted = wfc_core::codegen::format(compile(&definition(&HOSTILE)).tokens);
    assert!(hostile.contains(&formatted), "build.rs wrote something other than the checked module");
    assert_eq!(const_str(&file.items, "DEFINITION").as_deref(), Some(definition(&HOSTILE).as_str()));
}

#[test]
fn build_rs_reports_limit_diagnostics_with_locations() {
    let out = temp_out_dir("bomb");
    let mut text = String::from("Comment: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        text.push_str(&format!("X{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
    }
    text.push_str("StartAt: A\nStates:\n  A: {Type: Succeed}\n");
    std::fs::write(out.join("bomb.asl.yaml"), text).unwrap_or_else(|e| panic!("{e}"));
    let mut config = wfc_build::Config::new();
    config.out_dir(&out).manifest_dir(&out).emit_rerun_if_changed(false).emit_warnings(false);
    let err = config.compile(&["bomb.asl.yaml"]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("WFC0104") && err.contains("bomb.asl.yaml:5:"), "{err}");
    assert!(!out.join("bomb.rs").exists(), "nothing is written for an invalid definition");
    let _ = std::fs::remove_dir_all(&out);
}
