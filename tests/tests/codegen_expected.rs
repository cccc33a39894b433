//! Generated code as expected `.rs` files that are themselves compiled here (as typify's
//! tests/schemas.rs does): `tests/expected/<stem>.asl.json` must generate exactly
//! `tests/expected/<stem>.rs` (rewrite them with `WFC_BLESS=1` after reading the diff), and this
//! test binary includes those files, so the expected code must compile, and runs them against
//! the interpreter: same status, output, error and whole history on each input.
//!
//! The fixtures are made of the states codegen writes as Rust (JSONPath Pass and Choice, see
//! docs/status.md, issue 20), so these runs exercise the generated paths, templates,
//! intrinsics and conditions, including their failures.

use std::path::Path;

use serde_json::{Value, json};
use wfc_core::{Settings, Source, codegen};
use wfc_runtime::interp::{self, Handlers};
use wfc_runtime::{ExecutionResult, RunOptions, block_on_virtual};

include!("../expected/count_loop.rs");
include!("../expected/pass_choice.rs");

const STEMS: [&str; 2] = ["count_loop", "pass_choice"];

fn expected_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected")
}

fn definition(stem: &str) -> String {
    let path = expected_dir().join(format!("{stem}.asl.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn generate(stem: &str) -> String {
    let text = definition(stem);
    let path = format!("expected/{stem}.asl.json");
    let mut settings = Settings::new();
    settings.module_name(stem);
    match wfc_core::compile(Source { path: &path, text: &text }, &settings) {
        Ok(compiled) => codegen::format(compiled.tokens),
        Err(diagnostics) => panic!("{path} does not compile:\n{}", diagnostics.render(false)),
    }
}

#[test]
fn expected_code_is_what_codegen_generates() {
    let bless = std::env::var_os("WFC_BLESS").is_some();
    for stem in STEMS {
        let code = generate(stem);
        let path = expected_dir().join(format!("{stem}.rs"));
        if bless {
            std::fs::write(&path, &code).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            expected == code,
            "{} is not what codegen generates now (rerun with WFC_BLESS=1 and read the diff):\n{code}",
            path.display()
        );
    }
}

/// The Pass and Choice states of these fixtures are Rust in the expected code, not calls into
/// the per-state interpreter functions.
#[test]
fn pass_and_choice_are_generated_not_interpreted() {
    for stem in STEMS {
        let code = std::fs::read_to_string(expected_dir().join(format!("{stem}.rs"))).expect("expected code");
        assert!(!code.contains("exec::pass("), "{stem}");
        assert!(!code.contains("exec::choice("), "{stem}");
        assert!(code.contains("__wfc::abi::pass("), "{stem}");
        assert!(code.contains("__wfc::abi::choice("), "{stem}");
    }
    let count_loop = std::fs::read_to_string(expected_dir().join("count_loop.rs")).expect("expected code");
    assert!(count_loop.contains("__wfc::abi::math_add("), "{count_loop}");
    assert!(count_loop.contains("== Some(::core::cmp::Ordering::Less)"), "{count_loop}");
}

struct NoTasks;
impl count_loop::Handler for NoTasks {}
impl pass_choice::Handler for NoTasks {}

fn interpret(stem: &str, input: &Value) -> ExecutionResult {
    let text = definition(stem);
    let loaded = wfc_core::load(Source { path: stem, text: &text }).unwrap_or_else(|d| panic!("{}", d.render(false)));
    block_on_virtual(interp::run(&loaded.workflow, &Handlers::new(), input.clone(), options()))
}

fn options() -> RunOptions {
    RunOptions::virtual_time().with_name("expected").with_seed(7)
}

fn assert_same(stem: &str, input: &Value, compiled: ExecutionResult) {
    let interpreted = interpret(stem, input);
    assert_eq!(compiled.status, interpreted.status, "{stem} on {input}");
    assert_eq!(compiled.output, interpreted.output, "{stem} on {input}");
    assert_eq!(compiled.error, interpreted.error, "{stem} on {input}");
    assert_eq!(compiled.history, interpreted.history, "{stem} on {input}: histories differ");
}

#[test]
fn count_loop_runs_as_the_interpreter_does() {
    // The loop, a start near the end, a missing counter (Choice: States.Runtime) and a counter
    // that is not a number (the Choice's comparison is false: Default).
    for input in [json!({"i": 0}), json!({"i": 998}), json!({}), json!({"i": "x"}), json!([1])] {
        let compiled = block_on_virtual(count_loop::run_with(&NoTasks, input.clone(), options()));
        assert_same("count_loop", &input, compiled);
    }
    let result = block_on_virtual(count_loop::run_with(&NoTasks, json!({"i": 0}), options()));
    assert_eq!(result.output, Some(json!({"i": 1000})));
}

#[test]
fn pass_choice_runs_as_the_interpreter_does() {
    let inputs = [
        // Wordy: StringMatches, IsPresent false, a timestamp and a Boolean literal all hold.
        json!({"count": 0, "name": "word"}),
        // Loops through the `$$` rule until NOT(count <= 2.5), then Done.
        json!({"count": 0, "name": "x"}),
        // NumericGreaterThanPath holds at once.
        json!({"count": 7, "name": "stop"}),
        // MathAdd of a missing path, and of a string: States.Runtime with the field named.
        json!({"name": "x"}),
        json!({"count": "a", "name": "x"}),
        // The name is missing: Parameters fail on `name.$`.
        json!({"count": 0}),
        // ResultPath into an array: States.Runtime.
        json!([1, 2]),
    ];
    for input in inputs {
        let compiled = block_on_virtual(pass_choice::run_with(&NoTasks, input.clone(), options()));
        assert_same("pass_choice", &input, compiled);
    }
    let wordy = block_on_virtual(pass_choice::run_with(&NoTasks, json!({"count": 0, "name": "word"}), options()));
    assert_eq!(wordy.output, Some(json!({"message": "item 0 of 3", "flag": true})));
}
