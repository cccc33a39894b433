//! The user-facing list of diagnostic codes (docs/diagnostics.md) must name every code the
//! compiler can emit, with the same title.

#[test]
fn every_diagnostic_code_is_documented_with_its_title() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/diagnostics.md"))
        .expect("docs/diagnostics.md exists");
    let missing: Vec<String> = wfc_core::diagnostics::codes::TABLE
        .iter()
        .filter(|(code, title)| !doc.contains(&format!("| `{code}` | {title} |")))
        .map(|(code, title)| format!("{code} ({title})"))
        .collect();
    assert!(missing.is_empty(), "add these rows to docs/diagnostics.md: {missing:?}");
}
