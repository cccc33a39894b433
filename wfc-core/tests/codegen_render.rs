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

/// A state's box in the drawing's coordinates (every enclosing `translate` applied).
#[derive(Debug, Clone, Copy)]
struct Box2 {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Box2 {
    fn overlaps(&self, o: &Box2) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
    fn contains(&self, o: &Box2) -> bool {
        o.x >= self.x && o.y >= self.y && o.x + o.w <= self.x + self.w && o.y + o.h <= self.y + self.h
    }
}

fn translation(node: roxmltree::Node<'_, '_>) -> (f64, f64) {
    node.ancestors().filter_map(|a| a.attribute("transform")).fold((0.0, 0.0), |(x, y), t| {
        let inner = t.trim_start_matches("translate(").trim_end_matches(')');
        let (a, b) = inner.split_once(',').expect("translate(x,y)");
        (x + a.parse::<f64>().expect("x"), y + b.parse::<f64>().expect("y"))
    })
}

fn attr(node: roxmltree::Node<'_, '_>, name: &str) -> f64 {
    node.attribute(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} on {node:?}"))
}

/// Every state of a machine and its branches, counted.
fn count_states(machine: &wfc_core::ir::StateMachine) -> usize {
    machine
        .states
        .iter()
        .map(|s| {
            1 + match &s.kind {
                wfc_core::ir::StateKind::Parallel(p) => p.branches.iter().map(count_states).sum(),
                wfc_core::ir::StateKind::Map(m) => count_states(&m.item_processor),
                _ => 0,
            }
        })
        .sum()
}

/// The SVG of every fixture is well-formed XML and is laid out as a graph: every state drawn once
/// with its positional id; no two states of one machine overlap; a nested machine's states lie
/// inside their Parallel or Map; every forward edge points down; loops are back edges.
#[test]
fn svg_is_a_layered_drawing_of_every_fixture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/fixtures");
    let mut back_edges = 0;
    let mut fixtures = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".asl.json") else { continue };
        fixtures += 1;
        let workflow = load(stem);
        let svg = wfc_core::render::svg(&workflow);
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{stem}: not XML: {e}\n{svg}"));
        let mut boxes = std::collections::HashMap::new();
        for g in doc.descendants().filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("state "))) {
            let id = g.attribute("id").expect("a state has an id").to_owned();
            let rect = g.children().find(|c| c.has_tag_name("rect")).expect("a state has a box");
            let (dx, dy) = translation(rect);
            let b = Box2 {
                x: attr(rect, "x") + dx,
                y: attr(rect, "y") + dy,
                w: attr(rect, "width"),
                h: attr(rect, "height"),
            };
            assert!(boxes.insert(id.clone(), b).is_none(), "{stem}: state id {id} drawn twice");
        }
        assert_eq!(boxes.len(), count_states(&workflow.machine), "{stem}: every state is drawn");
        // The machine a state belongs to: its id without the trailing `s<N>`.
        let machine_of = |id: &str| id[..id.rfind('s').expect("s<N>")].to_owned();
        for (a, ba) in &boxes {
            for (b, bb) in &boxes {
                if a < b && machine_of(a) == machine_of(b) {
                    assert!(!ba.overlaps(bb), "{stem}: states {a} and {b} overlap: {ba:?} {bb:?}");
                }
            }
            // `s3_b1_s0` lies inside `s3`, `s5_m_s2` inside `s5`.
            let machine = machine_of(a);
            if let Some(parent) = machine.strip_suffix('_').and_then(|m| m.rsplit_once('_')).map(|(p, _)| p) {
                let outer = boxes.get(parent).unwrap_or_else(|| panic!("{stem}: {a}'s parent {parent} is drawn"));
                assert!(outer.contains(ba), "{stem}: {a} lies outside its state {parent}: {ba:?} in {outer:?}");
            }
        }
        for edge in doc.descendants().filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("edge"))) {
            let (Some(from), Some(to)) = (edge.attribute("data-from"), edge.attribute("data-to")) else {
                panic!("{stem}: an edge without ends")
            };
            let back = edge.attribute("class") == Some("edge back");
            back_edges += usize::from(back);
            if let (Some(f), Some(t), false) = (boxes.get(from), boxes.get(to), back) {
                assert!(f.y + f.h <= t.y, "{stem}: forward edge {from} -> {to} does not point down");
            }
        }
    }
    assert!(fixtures >= 8, "the fixtures were found");
    assert!(back_edges > 0, "choice_loop's loop is drawn as a back edge");
}

/// Hostile state names reach the SVG as text: the document parses, each name is the value of its
/// state's `data-state` (control and bidi characters shown as `\u{...}`), and no raw bidi override
/// or markup from a name survives.
#[test]
fn svg_escapes_hostile_names() {
    let workflow = load("hostile_names");
    let svg = wfc_core::render::svg(&workflow);
    assert!(!svg.contains('\u{202e}'), "bidi control leaked into the SVG");
    let doc = roxmltree::Document::parse(&svg).expect("the hostile drawing is XML");
    let names: Vec<&str> = doc.descendants().filter_map(|n| n.attribute("data-state")).collect();
    for state in &workflow.machine.states {
        let shown: String = state
            .name
            .chars()
            .map(|c| if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{feff}') { format!("\\u{{{:x}}}", u32::from(c)) } else { c.to_string() })
            .collect();
        assert!(names.contains(&shown.as_str()), "{shown:?} is not a state's data-state: {names:?}");
    }
    // Markup in names and Choice labels stays text: a page embedding the drawing runs nothing.
    let text = r#"{"StartAt": "<script>alert(1)</script>", "States": {
        "<script>alert(1)</script>": {"Type": "Choice", "Default": "&amp; ]]>",
            "Choices": [{"Variable": "$.a", "StringEquals": "</text><g onload=x>", "Next": "&amp; ]]>"}]},
        "&amp; ]]>": {"Type": "Succeed"}}}"#;
    let markup = match wfc_core::load(wfc_core::Source { path: "markup.asl.json", text }) {
        Ok(loaded) => wfc_core::render::svg(&loaded.workflow),
        Err(d) => panic!("{}", d.render(false)),
    };
    let markup_doc = roxmltree::Document::parse(&markup).expect("the markup drawing is XML");
    let states: Vec<&str> = markup_doc.descendants().filter_map(|n| n.attribute("data-state")).collect();
    assert_eq!(states, ["<script>alert(1)</script>", "&amp; ]]>"]);
    assert!(
        markup_doc.descendants().any(|n| n.text() == Some("$.a StringEquals \"</text><g onload=x>\"")),
        "the Choice rule is a label's text: {markup}"
    );
    // Only the drawing's own element names appear.
    for n in doc.descendants().chain(markup_doc.descendants()).filter(|n| n.is_element()) {
        let tag = n.tag_name().name();
        assert!(
            ["svg", "title", "style", "defs", "marker", "path", "text", "g", "rect", "circle"].contains(&tag),
            "unexpected element <{tag}>"
        );
    }
}

fn entered(name: &str, kind: &str) -> serde_json::Value {
    serde_json::json!({"type": format!("{kind}StateEntered"), "details": {"name": name, "input": {}}})
}

fn exited(name: &str, kind: &str) -> serde_json::Value {
    serde_json::json!({"type": format!("{kind}StateExited"), "details": {"name": name, "output": {}}})
}

/// An execution's history colors the drawing: succeeded, caught (an error during the visit, then
/// a Catch target: AWS records the caught state's exit), failed, not reached; the path taken is
/// the edges between consecutive states. A retried error followed by the Next is no catch.
#[test]
fn report_colors_states_by_what_the_history_says() {
    use wfc_core::render::report::{StateStatus, annotate};
    let workflow = load("order");
    let history = vec![
        serde_json::json!({"type": "ExecutionStarted", "details": {}}),
        entered("Validate Order", "Choice"),
        exited("Validate Order", "Choice"),
        entered("Check Stock", "Task"),
        exited("Check Stock", "Task"),
        entered("Take Payment", "Task"),
        serde_json::json!({"type": "TaskFailed", "details": {"error": "Payment.Declined"}}),
        exited("Take Payment", "Task"),
        entered("Refund Stock", "Task"),
        exited("Refund Stock", "Task"),
        entered("Order Failed", "Fail"),
        serde_json::json!({"type": "ExecutionFailed", "details": {"error": "OrderFailed"}}),
    ];
    let (annotations, statuses) = annotate(&workflow, "FAILED", &history);
    let id = |name: &str| format!("s{}", workflow.machine.find(name).expect(name));
    let status = |name: &str| statuses[&id(name)];
    assert_eq!(status("Validate Order"), StateStatus::Succeeded);
    assert_eq!(status("Check Stock"), StateStatus::Succeeded);
    assert_eq!(status("Take Payment"), StateStatus::Caught);
    assert_eq!(status("Refund Stock"), StateStatus::Succeeded);
    assert_eq!(status("Order Failed"), StateStatus::Failed);
    assert_eq!(status("Fulfil"), StateStatus::Unreached);
    assert_eq!(statuses["s3_b0_s0"], StateStatus::Unreached, "a branch's state");
    for (from, to) in [
        ("start".to_owned(), id("Validate Order")),
        (id("Validate Order"), id("Check Stock")),
        (id("Check Stock"), id("Take Payment")),
        (id("Take Payment"), id("Refund Stock")),
        (id("Refund Stock"), id("Order Failed")),
        (id("Order Failed"), "end".to_owned()),
    ] {
        assert!(
            annotations.taken.contains(&(from.clone(), to.clone())),
            "{from} -> {to} taken: {:?}",
            annotations.taken
        );
    }
    assert!(
        !annotations.taken.contains(&(id("Take Payment"), id("Fulfil"))),
        "the Next of a caught state was not taken"
    );
    // The same execution still running: the state without an exit is running, not failed.
    let (_, running) = annotate(&workflow, "RUNNING", &history[..7]);
    assert_eq!(running[&id("Take Payment")], StateStatus::Running);
}

/// The report page carries hostile names and values as text: the only script elements are the
/// page's own two, and nothing from the execution closes them.
#[test]
fn report_page_escapes_names_and_values() {
    let text = r#"{"StartAt": "<script>alert(1)</script>", "States": {
        "<script>alert(1)</script>": {"Type": "Pass", "Next": "</script><img src=x>"},
        "</script><img src=x>": {"Type": "Fail", "Error": "E<b>", "Cause": "c</script>"}}}"#;
    let workflow = match wfc_core::load(wfc_core::Source { path: "markup.asl.json", text }) {
        Ok(loaded) => loaded.workflow,
        Err(d) => panic!("{}", d.render(false)),
    };
    let execution = serde_json::json!({
        "status": "FAILED", "error": "E<b>", "cause": "c</script>",
        "history": [
            {"id": 1, "type": "ExecutionStarted", "details": {"input": {"x": "</script><script>alert(2)</script>"}}},
            {"id": 2, "type": "PassStateEntered", "details": {"name": "<script>alert(1)</script>", "input": {"\u{2028}": "<!--"}}},
        ]
    });
    let page = wfc_core::render::report::html(&workflow, &execution);
    assert_eq!(page.matches("<script").count(), 2, "only the page's own scripts: {page}");
    assert_eq!(page.matches("</script>").count(), 2, "nothing closes a script early: {page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains('\u{2028}'), "a JavaScript line separator is escaped");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the name is shown as text");
    assert!(
        page.contains(r#"class="state Pass succeeded""#) || page.contains(r#"class="state Pass failed""#),
        "{page}"
    );
    assert!(page.contains("default-src 'none'"), "the page may fetch nothing");
}

/// An error that a Retry absorbed leaves the state succeeded: the state after it is its Next.
#[test]
fn report_a_retried_error_is_not_a_catch() {
    use wfc_core::render::report::{StateStatus, annotate};
    let workflow = load("order");
    let history = vec![
        entered("Take Payment", "Task"),
        serde_json::json!({"type": "TaskFailed", "details": {"error": "Payment.Transient"}}),
        exited("Take Payment", "Task"),
        entered("Fulfil", "Parallel"),
    ];
    let (_, statuses) = annotate(&workflow, "RUNNING", &history);
    let id = |name: &str| format!("s{}", workflow.machine.find(name).expect(name));
    assert_eq!(statuses[&id("Take Payment")], StateStatus::Succeeded);
    assert_eq!(statuses[&id("Fulfil")], StateStatus::Running);
}

/// A definition that does not validate gets a page of its located diagnostics, with its source
/// as text (markup in it stays text) and the diagnosed lines marked.
#[test]
fn report_diagnostics_page_locates_and_escapes() {
    let text = "{\"StartAt\": \"<b>x</b>\",\n \"States\": {\"A\": {\"Type\": \"Pass\", \"Next\": \"</pre><script>alert(1)</script>\"}}}";
    let diags = match wfc_core::load(wfc_core::Source { path: "bad.asl.json", text }) {
        Ok(_) => panic!("the definition is invalid"),
        Err(d) => d.located(),
    };
    assert!(!diags.is_empty());
    let page = wfc_core::render::report::diagnostics_page("bad <i>", text, &diags, None);
    // (The line numbers are `<i>` elements of the page's own.)
    assert!(!page.contains("<script") && !page.contains("<b>") && !page.contains("bad <i>"), "{page}");
    assert!(page.contains("bad &lt;i&gt;"), "{page}");
    for d in &diags {
        let place = format!("<a href=\"#L{0}\">line {0}, column {1}</a>", d.line, d.column);
        assert!(page.contains(&place), "{place} in {page}");
        assert!(page.contains(&format!("<span id=\"L{}\" class=\"marked\">", d.line)), "{page}");
    }
    assert!(page.contains("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), "the source is text: {page}");
}

/// Served by `wfc serve`, the page's script runs under the page's nonce, it may poll its own
/// server, and a running execution with no stored history yet (before its first checkpoint)
/// is colored from its journal.
#[test]
fn report_served_page_polls_and_shows_the_journal() {
    use wfc_core::render::report::{Served, page};
    let workflow = load("order");
    let execution =
        serde_json::json!({"status": "RUNNING", "history": [{"id": 1, "type": "ExecutionStarted", "details": {}}]});
    let served = Served {
        nav: vec![("/ui?x=\"<".into(), "all <executions>".into())],
        poll: Some("/ui/execution.json?arn=a".into()),
        version: "v1".into(),
        journal: Some(vec![
            serde_json::json!({"id": "s0#1", "type": "STEP", "name": "Validate Order", "status": "SUCCEEDED", "starts": 1}),
            serde_json::json!({"id": "s1#1", "type": "CALLBACK", "name": "Check Stock", "status": "STARTED", "starts": 1}),
        ]),
        nonce: "abc123".into(),
    };
    let html = page(&workflow, &execution, Some(&served));
    assert!(html.contains("script-src 'nonce-abc123'; img-src data:; connect-src 'self'"), "{html}");
    assert!(html.contains("<script nonce=\"abc123\">"), "{html}");
    assert!(html.contains("<a href=\"/ui?x=&quot;&lt;\">all &lt;executions&gt;</a>"), "{html}");
    assert!(html.contains(r#"data-state="Validate Order""#));
    assert!(html.contains(r#"class="state Pass succeeded""#) || html.contains(r#"succeeded" id="s0""#), "{html}");
    assert!(html.contains(r#"running" id="s1""#), "{html}");
    assert!(html.contains("<td>CALLBACK</td><td>Check Stock</td><td>STARTED</td>"), "{html}");
    // The file page has none of it.
    let file = wfc_core::render::report::html(&workflow, &execution);
    assert!(!file.contains("connect-src") && !file.contains("nonce") && !file.contains("id=\"journal\""));
}
