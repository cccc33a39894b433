//! The inline Map state in the front end: lowering (ItemsPath, ItemSelector and legacy
//! Parameters, ItemProcessor and legacy Iterator, MaxConcurrency), and the diagnostics for what
//! is wrong or not supported yet, each at its own position.

use wfc_core::Source;
use wfc_core::ir::{StateKind, Template};

fn load(text: &str) -> wfc_core::Loaded {
    match wfc_core::asl::load(Source { path: "map.json", text }) {
        Ok(loaded) => loaded,
        Err(d) => panic!("should load, got:\n{}", d.render(false)),
    }
}

/// Every diagnostic as `(code, line, column, message)`.
fn problems(text: &str) -> Vec<(String, usize, usize, String)> {
    match wfc_core::asl::load(Source { path: "map.json", text }) {
        Ok(_) => panic!("should not load:\n{text}"),
        Err(d) => d.located().into_iter().map(|l| (l.code, l.line, l.column, l.message)).collect(),
    }
}

/// A one-state definition around the Map state's fields (given as JSON members).
fn with_map(fields: &str) -> String {
    format!("{{\"StartAt\": \"M\", \"States\": {{\n  \"M\": {{\"Type\": \"Map\", {fields}, \"End\": true}}}}}}")
}

/// The 1-based (line, column) where `needle` first occurs in `text` (ASCII test texts).
fn at(text: &str, needle: &str) -> (usize, usize) {
    let offset = text.find(needle).unwrap_or_else(|| panic!("{needle} not in {text}"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

const PROCESSOR: &str = r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#;

#[test]
fn an_inline_map_lowers_with_its_fields() {
    let text = with_map(&format!(
        r#""ItemsPath": "$.items", "MaxConcurrency": 3, "ItemSelector": {{"i.$": "$$.Map.Item.Index", "k": 1}},
        "ResultPath": "$.out", "ItemProcessor": {PROCESSOR}"#
    ));
    let loaded = load(&text);
    let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
    assert_eq!(m.items_path.as_str(), "$.items");
    assert_eq!(m.max_concurrency, 3);
    assert!(matches!(m.item_selector, Some(Template::Object(ref fields)) if fields.len() == 2));
    assert_eq!(m.item_processor.states[0].name, "P");
    assert_eq!(m.result_path.as_ref().map(|p| p.as_str().to_owned()), Some("$.out".to_owned()));
    // The item processor is one of the workflow's machines.
    assert_eq!(loaded.workflow.machines().len(), 2);
}

#[test]
fn defaults_are_the_whole_input_and_no_limit() {
    let loaded = load(&with_map(&format!(r#""ItemProcessor": {PROCESSOR}"#)));
    let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
    assert_eq!(m.items_path.as_str(), "$");
    assert_eq!(m.max_concurrency, 0);
    assert!(m.item_selector.is_none());
}

#[test]
fn legacy_iterator_and_parameters_mean_item_processor_and_item_selector() {
    let legacy = load(&with_map(&format!(r#""Parameters": {{"v.$": "$$.Map.Item.Value"}}, "Iterator": {PROCESSOR}"#)));
    let current =
        load(&with_map(&format!(r#""ItemSelector": {{"v.$": "$$.Map.Item.Value"}}, "ItemProcessor": {PROCESSOR}"#)));
    let (StateKind::Map(old), StateKind::Map(new)) =
        (&legacy.workflow.machine.states[0].kind, &current.workflow.machine.states[0].kind)
    else {
        panic!("not Maps")
    };
    assert_eq!(old.item_selector, new.item_selector);
    assert_eq!(old.item_processor.states[0].kind, new.item_processor.states[0].kind);
    assert_eq!(old.item_processor.states[0].name, new.item_processor.states[0].name);
}

#[test]
fn resources_inside_item_processors_become_handler_methods() {
    let text = with_map(
        r#""ItemProcessor": {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:lambda:r:1:function:Inner", "End": true}}}"#,
    );
    let loaded = load(&text);
    assert_eq!(loaded.workflow.resources(), vec![("arn:aws:lambda:r:1:function:Inner", vec!["T"])]);
}

#[test]
fn distributed_mode_is_not_supported_yet() {
    let text = with_map(
        r#""ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#,
    );
    let p = problems(&text);
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!((p[0].0.as_str(), (p[0].1, p[0].2)), ("WFC0205", at(&text, "\"DISTRIBUTED\"")));
    assert!(p[0].3.contains("DISTRIBUTED Map is not supported yet"), "{}", p[0].3);
    assert_eq!((p[1].0.as_str(), (p[1].1, p[1].2)), ("WFC0205", at(&text, "\"ExecutionType\"")));
    assert!(p[1].3.contains("ExecutionType"), "{}", p[1].3);
}

#[test]
fn distributed_only_fields_are_reported_one_by_one() {
    let text = with_map(&format!(
        r#""ItemReader": {{}}, "ToleratedFailureCount": 1, "MaxConcurrencyPath": "$.n", "ItemProcessor": {PROCESSOR}"#
    ));
    let p = problems(&text);
    let codes: Vec<(&str, (usize, usize))> = p.iter().map(|(c, line, col, _)| (c.as_str(), (*line, *col))).collect();
    let want =
        ["\"ItemReader\"", "\"ToleratedFailureCount\"", "\"MaxConcurrencyPath\""].map(|k| ("WFC0205", at(&text, k)));
    assert_eq!(codes, want);
    assert!(p[0].3.contains("`ItemReader` belongs to the DISTRIBUTED Map"), "{}", p[0].3);
    assert!(p[2].3.contains("`MaxConcurrencyPath` is not supported yet"), "{}", p[2].3);
}

#[test]
fn an_unknown_mode_is_an_error() {
    let text = with_map(
        r#""ItemProcessor": {"ProcessorConfig": {"Mode": "SIDEWAYS"}, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#,
    );
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "WFC0201");
    assert!(p[0].3.contains("\"SIDEWAYS\""), "{}", p[0].3);
}

#[test]
fn max_concurrency_must_be_a_non_negative_integer() {
    for (value, message) in [("-1", "non-negative integer"), ("1.5", "non-negative integer"), ("\"2\"", "integer")] {
        let p = problems(&with_map(&format!(r#""MaxConcurrency": {value}, "ItemProcessor": {PROCESSOR}"#)));
        assert_eq!(p.len(), 1, "{value}: {p:?}");
        assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0201", 2, 42), "{value}");
        assert!(p[0].3.contains(message), "{value}: {}", p[0].3);
    }
}

#[test]
fn the_item_processor_is_required_and_only_once() {
    let p = problems(&with_map(r#""ItemsPath": "$""#));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0202", 2, 3));
    assert!(p[0].3.contains("ItemProcessor"), "{}", p[0].3);

    let p = problems(&with_map(&format!(r#""ItemProcessor": {PROCESSOR}, "Iterator": {PROCESSOR}"#)));
    assert!(p.iter().any(|(_, _, _, m)| m.contains("`ItemProcessor` and its legacy name `Iterator`")), "{p:?}");
    let p = problems(&with_map(&format!(r#""ItemSelector": {{}}, "Parameters": {{}}, "ItemProcessor": {PROCESSOR}"#)));
    assert!(p.iter().any(|(_, _, _, m)| m.contains("`ItemSelector` and its legacy name `Parameters`")), "{p:?}");
}

#[test]
fn items_path_must_be_a_reference_path() {
    let p = problems(&with_map(&format!(r#""ItemsPath": "$.a[*]", "ItemProcessor": {PROCESSOR}"#)));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0402", 2, 37));
}

#[test]
fn the_item_processor_is_a_closed_scope() {
    let text = r#"{"StartAt": "M", "States": {
  "M": {"Type": "Map", "ItemProcessor": {"StartAt": "P", "States": {
    "P": {"Type": "Pass", "Next": "After"}}}, "Next": "After"},
  "After": {"Type": "Succeed"}}}"#;
    let p = problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1), ("WFC0302", 3));
}

#[test]
fn state_names_are_unique_across_item_processors() {
    let text = r#"{"StartAt": "M", "States": {
  "M": {"Type": "Map", "ItemProcessor": {"StartAt": "M", "States": {
    "M": {"Type": "Pass", "End": true}}}, "End": true}}}"#;
    let p = problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0303", 3, 5));
}

#[test]
fn unknown_fields_of_the_item_processor_are_reported() {
    let text =
        with_map(r#""ItemProcessor": {"StartAt": "P", "Sates": {}, "States": {"P": {"Type": "Pass", "End": true}}}"#);
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), (p[0].1, p[0].2)), ("WFC0203", at(&text, "\"Sates\"")));
}

#[test]
fn graphs_draw_the_item_processor_inside_the_map() {
    let loaded = load(&with_map(&format!(r#""ItemProcessor": {PROCESSOR}"#)));
    let mermaid = wfc_core::render::mermaid(&loaded.workflow);
    assert!(mermaid.contains("state s0 {\n        state \"P\" as s0_m_s0"), "{mermaid}");
    let dot = wfc_core::render::dot(&loaded.workflow);
    assert!(dot.contains("subgraph cluster_s0_m_items {"), "{dot}");
    assert!(dot.contains("label=\"M (each item)\""), "{dot}");
    assert!(dot.contains("s0 -> s0_m_start [style=dashed, arrowhead=none];"), "{dot}");
}
