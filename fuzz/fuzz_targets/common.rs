//! What the two front-end targets share: load, lower, generate, and check that the generated
//! module always parses as Rust (a definition can fail to compile, but never inject or garble).

use wfc_core::{Format, Settings, Source};

/// Compiles `text` as `path` (whose extension picks JSON or YAML).
pub fn compile_and_check(path: &str, text: &str) {
    debug_assert!(matches!(Format::from_path(path), Format::Json | Format::Yaml));
    let source = Source { path, text };
    let Ok(compiled) = wfc_core::compile(source, &Settings::new()) else { return };
    // Everything the compiler accepted must produce a syntactically valid module, whose only
    // top-level item is the one generated module.
    let file: syn::File = match syn::parse2(compiled.tokens.clone()) {
        Ok(f) => f,
        Err(e) => panic!("generated code does not parse: {e}"),
    };
    assert_eq!(file.items.len(), 1, "the generated file must hold exactly one item");
    // The IR round-trips through its JSON form (what stores, `wfc serve` and the adapters keep,
    // and what its hash, which generated code carries, is taken of).
    let json = serde_json::to_string(&compiled.workflow).expect("the IR serializes");
    let back: wfc_ir::Workflow = serde_json::from_str(&json).expect("the IR deserializes");
    assert_eq!(back, compiled.workflow, "the IR changed through its JSON form");
}
