//! Snapshot tests of the Mermaid and Graphviz renderings (`wfc graph`, and the diagram in
//! generated docs), including Parallel nesting and hostile labels.

use std::path::Path;

fn load(stem: &str) -> wfc_core::ir::Workflow {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/snapshots/fixtures/{stem}.asl.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shown = format!("fixtures/{stem}.asl.json");
    match wfc_core::load(wfc_core::Source { path: &shown, text: &text }) {
        Ok(loaded) => loaded.workflow,
        Err(diagnostics) => panic!("{}", diagnostics.render(false)),
    }
}

#[test]
fn mermaid_snapshots() {
    for stem in ["order", "parallel_nested", "choice_loop", "hostile_names"] {
        insta::assert_snapshot!(format!("mermaid_{stem}"), wfc_core::render::mermaid(&load(stem)));
    }
}

#[test]
fn dot_snapshots() {
    for stem in ["order", "parallel_nested", "hostile_names"] {
        insta::assert_snapshot!(format!("dot_{stem}"), wfc_core::render::dot(&load(stem)));
    }
}

/// Labels never carry raw syntax of either format: every line of the hostile rendering is a
/// declaration, an edge or a brace, and names only appear inside quotes in escaped form.
#[test]
fn hostile_labels_are_escaped() {
    let workflow = load("hostile_names");
    let mermaid = wfc_core::render::mermaid(&workflow);
    for line in mermaid.lines().skip(1) {
        let line = line.trim();
        let declaration = line.starts_with("state \"") && line.matches('"').count() == 2;
        let edge = line.contains(" --> ");
        assert!(declaration || edge || line == "}" || line == "--", "unexpected Mermaid line {line:?}");
    }
    assert!(!mermaid.contains('\u{202e}'), "bidi control leaked into Mermaid");
    let dot = wfc_core::render::dot(&workflow);
    assert!(dot.contains(r#"label="back\\slash\n(Pass)""#), "{dot}");
    assert!(dot.contains(r#"label="Say \"hi\"\n(Pass)""#), "{dot}");
    assert!(dot.contains(r#"label="line\nbreak\n(Pass)""#), "{dot}");
    assert!(dot.contains("&#8238;gnp.exe"), "{dot}");
    // Every quote inside a label is escaped, so quotes pair up on each line.
    for line in dot.lines() {
        let unescaped = line.replace("\\\\", "").replace("\\\"", "");
        assert_eq!(unescaped.matches('"').count() % 2, 0, "unbalanced quotes in {line:?}");
    }
}
