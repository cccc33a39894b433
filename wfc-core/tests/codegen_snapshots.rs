//! Snapshot tests of generated code: every `snapshots/fixtures/*.asl.json` is compiled and its
//! formatted module compared with `snapshots/codegen_snapshots__<stem>.snap` (insta; bless with
//! `INSTA_UPDATE=always` or `cargo insta review` after reading the diff). The same fixtures are
//! compiled warning-free by `tests/compile/tests/codegen_pass.rs` in the `wfc-compile-tests` crate.

use std::path::{Path, PathBuf};

use wfc_core::{Settings, Source, codegen};

fn fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/fixtures");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        if let Some(stem) = name.strip_suffix(".asl.json") {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((stem.to_owned(), text));
        }
    }
    out.sort();
    out
}

fn generate(stem: &str, text: &str) -> String {
    let path = format!("fixtures/{stem}.asl.json");
    let mut settings = Settings::new();
    settings.module_name(stem);
    match wfc_core::compile(Source { path: &path, text }, &settings) {
        Ok(compiled) => codegen::format(compiled.tokens),
        Err(diagnostics) => panic!("{path} does not compile:\n{}", diagnostics.render(false)),
    }
}

#[test]
fn at_least_ten_fixtures() {
    assert!(fixtures().len() >= 10, "only {} fixtures", fixtures().len());
}

#[test]
fn generated_code_snapshots() {
    for (stem, text) in fixtures() {
        let code = generate(&stem, &text);
        assert!(!code.contains("compile_error"), "{stem}: {code}");
        insta::assert_snapshot!(stem.clone(), code);
    }
}

#[test]
fn generation_is_deterministic() {
    for (stem, text) in fixtures() {
        assert_eq!(generate(&stem, &text), generate(&stem, &text), "{stem}");
    }
}

/// Definition strings appear only inside string literals and doc attributes: parsing the
/// output with syn and walking every identifier finds nothing the definition could have injected.
#[test]
fn hostile_names_stay_in_literals() {
    let (_, text) = fixtures().into_iter().find(|(stem, _)| stem == "hostile_names").expect("fixture");
    let code = generate("hostile_names", &text);
    let file = syn::parse_file(&code).unwrap_or_else(|e| panic!("{e}\n{code}"));
    let tokens = quote::quote!(#file).to_string();
    assert!(!tokens.contains("pwned\") ;"), "injected code: {tokens}");
    for forbidden in ["panic", "r#\"", "\u{202e}"] {
        for ident in idents(syn::parse_str(&tokens).expect("reparse")) {
            assert!(!ident.contains(forbidden), "identifier {ident:?} contains {forbidden:?}");
        }
    }
    // Every name is still there, verbatim, as a string literal (serde renames and `State::name`).
    for name in
        ["Say \"hi\"", "back\\slash", "\"#", "r#\"", "}", "*/", "line\nbreak", "\u{202e}gnp.exe", "Prüfen ✓ 日本"]
    {
        let literal = proc_macro2::Literal::string(name).to_string();
        assert!(tokens.contains(&literal), "missing literal {literal}");
    }
}

fn idents(tokens: proc_macro2::TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => out.push(ident.to_string()),
            proc_macro2::TokenTree::Group(group) => out.extend(idents(group.stream())),
            _ => {}
        }
    }
    out
}

#[test]
fn variant_and_method_names() {
    let (_, text) = fixtures().into_iter().find(|(stem, _)| stem == "hostile_names").expect("fixture");
    let code = generate("hostile_names", &text);
    for variant in ["SayHi(", "BackSlash(", "Type(", "Self_(", "S1st(", "CheckStock(", "CheckStock2(", "PrFen("] {
        assert!(code.contains(variant), "missing variant {variant}");
    }
    let (_, text) = fixtures().into_iter().find(|(stem, _)| stem == "hostile_resources").expect("fixture");
    let code = generate("hostile_resources", &text);
    // Methods come from each resource's last segment (`arn:x:function:` → `function`: trailing
    // separators are trimmed); collisions (`Do-It`, `do_it`, `…/do_it`) are numbered in sorted
    // resource order; digits get a prefix, keywords a suffix, non-ASCII letters are dropped.
    for method in [
        "fn function(",
        "fn quoted_back_r(",
        "fn _42(",
        "fn type_(",
        "fn do_it(",
        "fn do_it_2(",
        "fn do_it_3(",
        "fn berpr_fen(",
    ] {
        assert!(code.contains(method), "missing method {method}\n{code}");
    }
}

// What generated code reads and hands to the interpreter, over every definition we have (issue
// 20): the definitions of tests/cases (each case file's, deduplicated) and of the AWS-recorded
// corpus (../shared/conformance/asl-aws; CI has it: there a missing folder fails, elsewhere it is
// skipped with a loud message). No state's generated code may call a per-state function of
// `exec` (or `sw::step`), and no generated module may embed or read the IR: every state of
// every state type is Rust, and what the runtime needs of the workflow beyond its states is
// written out as constants.

/// What a module embedding or reading the IR would contain: the embedded JSON and its loader,
/// the accessors of the embedded IR, and any path into the IR crate (generated code names the
/// few IR value types it builds, a parsed path or an event definition, through `abi`).
const IR_READS: [&str; 5] = ["IR_JSON", "load_ir", " ir ()", " machine ()", " ir ::"];

/// Every state of `machine` and of its Parallel branches, Map item processors and generated SW
/// subflows.
fn all_states<'a>(machine: &'a wfc_ir::StateMachine, out: &mut Vec<&'a wfc_ir::State>) {
    for state in &machine.states {
        out.push(state);
        match &state.kind {
            wfc_ir::StateKind::Parallel(p) => p.branches.iter().for_each(|b| all_states(b, out)),
            wfc_ir::StateKind::Map(m) => all_states(&m.item_processor, out),
            // The subflows compiled together of a generated SW state are generated machines too.
            wfc_ir::StateKind::Sw(sw) => {
                use wfc_ir::sw::{Body, SwKind};
                let body = |b: &'a Body| match b {
                    Body::Workflow(w) => Some(&w.machine),
                    _ => None,
                };
                let machines: Vec<&wfc_ir::StateMachine> = match &sw.kind {
                    SwKind::Subflow { workflow: Some(w), .. } => vec![&w.machine],
                    SwKind::ForEach { body: b, .. } => body(b).into_iter().collect(),
                    SwKind::Parallel { branches, .. } => branches.iter().filter_map(|b| body(&b.body)).collect(),
                    _ => Vec::new(),
                };
                machines.into_iter().for_each(|m| all_states(m, out));
            }
            _ => {}
        }
    }
}

/// The calls of a per-state interpreter function in generated code: `__wfc::exec::KIND(exec,
/// "name", …)` for the ASL state types, `__wfc::sw::step(exec, "name", …)`; each as the
/// function's path and the state name's literal, as written in the code.
fn interpreter_calls(tokens: proc_macro2::TokenStream, out: &mut Vec<(String, String)>) {
    use proc_macro2::TokenTree as T;
    const FUNCTIONS: [(&str, &str); 9] = [
        ("exec", "pass"),
        ("exec", "wait"),
        ("exec", "succeed"),
        ("exec", "fail"),
        ("exec", "choice"),
        ("exec", "task"),
        ("exec", "parallel"),
        ("exec", "map"),
        ("sw", "step"),
    ];
    let trees: Vec<T> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        if let T::Group(g) = tree {
            interpreter_calls(g.stream(), out);
        }
        // `__wfc :: MODULE :: FUNCTION (exec , "name" …)`: 8 trees from `__wfc`.
        let Some(window) = trees.get(i..i + 8) else { continue };
        let text = |t: &T| t.to_string();
        if text(&window[0]) != "__wfc" || text(&window[1]) != ":" || text(&window[4]) != ":" {
            continue;
        }
        let (module, function) = (text(&window[3]), text(&window[6]));
        if !FUNCTIONS.iter().any(|(m, f)| *m == module && *f == function) {
            continue;
        }
        let T::Group(args) = &window[7] else { continue };
        let args: Vec<T> = args.stream().into_iter().collect();
        if let [T::Ident(first), T::Punct(_), T::Literal(name), ..] = args.as_slice()
            && first == "exec"
        {
            out.push((format!("{module}::{function}"), name.to_string()));
        }
    }
}

/// The definitions the case files of `dir` (recursively) use: (a path for diagnostics, text).
fn case_definitions(dir: &Path, seen: &mut std::collections::BTreeSet<PathBuf>, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            case_definitions(&path, seen, out);
            continue;
        }
        if !path.to_string_lossy().ends_with(".case.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let cases = match json {
            serde_json::Value::Array(cases) => cases,
            one => vec![one],
        };
        for (i, case) in cases.iter().enumerate() {
            match &case["definition"] {
                serde_json::Value::String(relative) => {
                    let file = path.parent().expect("a parent").join(relative);
                    let file = file.canonicalize().unwrap_or(file);
                    if seen.insert(file.clone()) {
                        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                        out.push((file.to_string_lossy().into_owned(), text));
                    }
                }
                inline @ serde_json::Value::Object(_) => {
                    out.push((format!("{}#{i}/definition", path.display()), inline.to_string()));
                }
                other => panic!("{}: case {i} has no definition: {other}", path.display()),
            }
        }
    }
}

/// The definitions of the AWS-recorded corpus, or `None` when the folder is missing here.
fn corpus_definitions() -> Option<Vec<(String, String)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/asl-aws");
    if !dir.is_dir() {
        let msg = format!("the AWS-recorded corpus is missing: {} does not exist", dir.display());
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg} (CI must have it)");
        }
        eprintln!("\n!!!!!!!! SKIPPED (the corpus part): {msg} !!!!!!!!\n");
        return None;
    }
    let mut files = Vec::new();
    for category in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let category = category.expect("entry").path();
        if !category.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&category).unwrap_or_else(|e| panic!("{}: {e}", category.display())) {
            let file = file.expect("entry").path();
            if file.extension().is_some_and(|e| e == "json") {
                files.push(file);
            }
        }
    }
    files.sort();
    let out = files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let case: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            (format!("{}#definition", file.display()), case["definition"].to_string())
        })
        .collect();
    Some(out)
}

/// Per corpus: definitions compiled and refused, states generated, modules free of IR.
#[derive(Default, Debug)]
struct Tally {
    compiled: usize,
    refused: usize,
    generated: usize,
    /// Definitions whose generated module embeds no IR and reads none.
    ir_free: usize,
    /// Subflows compiled together and not awaited (generated machines run detached).
    detached: usize,
    jsonata: usize,
    /// Definitions with a state handed to the interpreter (must stay 0).
    interpreting: usize,
    /// Serverless Workflow states (of the definitions compiled).
    sw: usize,
}

fn tally(definitions: &[(String, String)], problems: &mut Vec<String>) -> Tally {
    let mut t = Tally::default();
    let settings = Settings::new();
    for (path, text) in definitions {
        let Ok(compiled) = wfc_core::compile(Source { path, text }, &settings) else {
            // Invalid on purpose (cases that expect a diagnostic), or needing what this build
            // lacks: nothing is generated for them.
            t.refused += 1;
            continue;
        };
        if text.contains("\"JSONata\"") {
            t.jsonata += 1;
        }
        t.add(path, compiled, problems);
    }
    t
}

impl Tally {
    /// Counts one compiled definition, adding a problem for each IR read and each state handed
    /// to the interpreter in its generated module.
    fn add(&mut self, path: &str, compiled: wfc_core::Compiled, problems: &mut Vec<String>) {
        self.compiled += 1;
        let mut states = Vec::new();
        all_states(&compiled.workflow.machine, &mut states);
        let text = compiled.tokens.to_string();
        let reads: Vec<&str> = IR_READS.into_iter().filter(|read| text.contains(read)).collect();
        for read in &reads {
            problems.push(format!("{path}: the generated module embeds or reads the IR (`{read}`)"));
        }
        // What it carries instead: the workflow's name and the IR's hash, as constants.
        let name = proc_macro2::Literal::string(&compiled.workflow.name);
        let hash = proc_macro2::Literal::string(&compiled.workflow.definition_hash());
        if !text.contains(&format!("DefinitionId :: new ({name} , {hash})")) {
            problems.push(format!("{path}: no DEFINITION_ID with the workflow's name and IR hash {hash}"));
        }
        self.ir_free += usize::from(reads.is_empty());
        let mut calls = Vec::new();
        interpreter_calls(compiled.tokens, &mut calls);
        for (function, name) in &calls {
            problems.push(format!("{path}: state {name} is handed to the interpreter ({function})"));
        }
        self.generated += states.len() - calls.len();
        self.sw += states.iter().filter(|s| matches!(s.kind, wfc_ir::StateKind::Sw(_))).count();
        self.interpreting += usize::from(!calls.is_empty());
    }
}

#[test]
fn generated_code_embeds_no_ir_and_hands_no_state_to_the_interpreter() {
    let cases_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases");
    let mut definitions = Vec::new();
    case_definitions(&cases_dir, &mut Default::default(), &mut definitions);
    assert!(definitions.len() >= 100, "tests/cases has only {} definitions", definitions.len());
    let mut problems = Vec::new();
    let cases = tally(&definitions, &mut problems);
    eprintln!("tests/cases: {cases:?}");
    assert!(cases.compiled >= 100, "{cases:?}");
    let corpus = corpus_definitions().map(|definitions| {
        let corpus = tally(&definitions, &mut problems);
        eprintln!("asl-aws: {corpus:?}");
        assert!(corpus.compiled >= 700, "{corpus:?}");
        assert_eq!(corpus.interpreting, 0, "asl-aws definitions handing states to exec: {corpus:?}");
        corpus
    });
    // The SW definitions of tests/cases again, each compiled together with its sibling
    // definitions as `include_workflow!` and `wfc compile` do, so subflows are generated machines
    // (awaited, foreach and parallel bodies, and started without waiting) instead of handler calls.
    let sw_dir = cases_dir.join("sw/definitions");
    let together = tally_together(&sw_dir, &mut problems);
    eprintln!("tests/cases/sw/definitions, subflows compiled together: {together:?}");
    assert!(together.compiled >= 50 && together.detached >= 1, "{together:?}");
    let all = [Some(&cases), corpus.as_ref(), Some(&together)];
    let generated: usize = all.iter().flatten().map(|t| t.generated).sum();
    let ir_free: usize = all.iter().flatten().map(|t| t.ir_free).sum();
    let compiled: usize = all.iter().flatten().map(|t| t.compiled).sum();
    eprintln!("states generated: {generated}; modules free of IR: {ir_free} of {compiled}");
    // Serverless Workflow (tests/cases only: the corpus is ASL).
    assert!(cases.sw >= 100, "SW states generated: {cases:?}");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    assert_eq!(ir_free, compiled);
}

/// [`tally`] of every SW definition of `dir`, each compiled with the others registered (its
/// subflows compiled together); `detached` counts the subflows compiled together and not awaited.
fn tally_together(dir: &Path, problems: &mut Vec<String>) -> Tally {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| [".sw.json", ".sw.yaml", ".sw.yml"].iter().any(|ext| p.to_string_lossy().ends_with(ext)))
        .collect();
    files.sort();
    let mut t = Tally::default();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut settings = Settings::new();
        for other in files.iter().filter(|other| *other != file) {
            let other_text = std::fs::read_to_string(other).unwrap_or_else(|e| panic!("{}: {e}", other.display()));
            settings.sw_workflow(other.to_string_lossy(), other_text);
        }
        let path = file.to_string_lossy();
        let Ok(compiled) = wfc_core::compile(Source { path: &path, text: &text }, &settings) else {
            t.refused += 1;
            continue;
        };
        let mut states = Vec::new();
        all_states(&compiled.workflow.machine, &mut states);
        t.detached += states
            .iter()
            .filter(|s| {
                matches!(&s.kind, wfc_ir::StateKind::Sw(sw)
                    if matches!(sw.kind, wfc_ir::sw::SwKind::Subflow { wait: false, workflow: Some(_), .. }))
            })
            .count();
        t.add(&file.to_string_lossy(), compiled, problems);
    }
    t
}

/// A bounded Pass's Parameters object is read, then built in the spent input
/// (`abi::pass_built`), only while small: its values wait in an array on the stack, so a larger
/// object (17 members here) is built as before (`abi::pass_bounded`).
#[test]
fn only_small_parameters_objects_are_built_in_the_spent_input() {
    let pass = |members: usize| {
        let parameters: serde_json::Map<String, serde_json::Value> =
            (0..members).map(|i| (format!("k{i}.$"), serde_json::json!("States.MathAdd($.n, 1)"))).collect();
        let definition = serde_json::json!({
            "StartAt": "P",
            "States": { "P": { "Type": "Pass", "Parameters": parameters, "End": true } }
        });
        generate("members", &definition.to_string())
    };
    let small = pass(16);
    assert!(small.contains("__wfc::abi::pass_built(") && small.contains("__wfc::abi::object_in("), "{small}");
    let large = pass(17);
    assert!(large.contains("__wfc::abi::pass_bounded(") && !large.contains("object_in"), "{large}");
}
