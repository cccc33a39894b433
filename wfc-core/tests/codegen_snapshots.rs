//! Snapshot tests of generated code: every `snapshots/fixtures/*.asl.json` is compiled and its
//! formatted module compared with `snapshots/codegen_snapshots__<stem>.snap` (insta; bless with
//! `INSTA_UPDATE=always` or `cargo insta review` after reading the diff). The same fixtures are
//! compiled warning-free by `tests/compile/tests/codegen_pass.rs` in the `wfc-compile-tests` crate.

use std::path::Path;

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
