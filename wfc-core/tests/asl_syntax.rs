//! The spanned syntax tree: strict JSON, YAML, spans, line/column mapping, conversion.

use wfc_core::Format;
use wfc_core::syntax::{LineIndex, SpannedValue, ValueKind, parse};

fn json(text: &str) -> SpannedValue {
    parse(text, Format::Json).unwrap_or_else(|d| panic!("{text}: {d:?}"))
}

fn json_err(text: &str) -> Vec<&'static str> {
    parse(text, Format::Json).err().unwrap_or_else(|| panic!("{text} should fail")).iter().map(|d| d.code).collect()
}

#[test]
fn json_values_keys_and_spans() {
    let text = r#"{"a": [1, 2.5, "x\n"], "b": {"c": null, "d": true}}"#;
    let v = json(text);
    let entries = v.as_object().expect("object");
    assert_eq!(entries[0].0.name, "a");
    assert_eq!(&text[entries[0].0.span.clone()], "\"a\"");
    assert_eq!(&text[entries[0].1.span.clone()], r#"[1, 2.5, "x\n"]"#);
    let arr = entries[0].1.as_array().expect("array");
    assert_eq!(arr[2].as_str(), Some("x\n"));
    assert_eq!(&text[arr[2].span.clone()], r#""x\n""#);
    assert!(matches!(&arr[1].kind, ValueKind::Number(n) if n.as_f64() == Some(2.5)));
    assert_eq!(v.to_json(), serde_json::json!({"a": [1, 2.5, "x\n"], "b": {"c": null, "d": true}}));
    assert_eq!(v.get("b").and_then(|b| b.get("d")).map(|d| d.kind.clone()), Some(ValueKind::Bool(true)));
}

#[test]
fn key_order_is_preserved() {
    let v = json(r#"{"z": 1, "a": 2, "m": 3}"#);
    let value = v.to_json();
    let keys: Vec<&str> = value.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(keys, ["z", "a", "m"]);
}

#[test]
fn strict_json_rejects_json5_and_jsonc_extensions() {
    for bad in [
        "{\"a\": 1,}",
        "{\"a\": 1 /* c */}",
        "{a: 1}",
        "{\"a\": 'x'}",
        "{\"a\": 0x10}",
        "{\"a\": +1}",
        "{\"a\": .5}",
        "{\"a\": NaN}",
        "{\"a\": 1 \"b\": 2}",
        "{\"a\": \"\\x41\"}",
        "{\"a\": \"tab\there\"}",
        "{\"a\": 1} {\"b\": 2}",
        "{\"a\": 1e999}",
        "{\"a\": 01}",
        "{\"a\": -}",
        "   ",
    ] {
        let codes = json_err(bad);
        assert!(!codes.is_empty() && codes.iter().all(|c| *c == "WFC0101"), "{bad}: {codes:?}");
    }
}

#[test]
fn duplicate_keys_are_found_at_any_depth() {
    let text = "{\"a\": {\"x\": 1, \"y\": 2, \"x\": 3}, \"b\": [{\"k\": 1, \"k\": 2}]}";
    let diags = parse(text, Format::Json).expect_err("duplicates");
    assert_eq!(diags.len(), 2);
    for d in &diags {
        assert_eq!(d.code, "WFC0105");
        assert_eq!(d.labels.len(), 1, "the first occurrence is labelled");
        assert_eq!(text[d.span.clone()], text[d.labels[0].0.clone()]);
    }
}

#[test]
fn yaml_scalars_resolve_like_yaml_1_2_core() {
    let text = "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf: hello\ng: \"1\"\nh: [x, 'y']\n";
    let v = parse(text, Format::Yaml).expect("valid");
    assert_eq!(
        v.to_json(),
        serde_json::json!({"a": 1, "b": 1.5, "c": true, "d": null, "e": null, "f": "hello", "g": "1", "h": ["x", "y"]})
    );
    let f = v.get("f").expect("f");
    assert_eq!(&text[f.span.clone()], "hello");
    let key = &v.as_object().expect("map")[1].0;
    assert_eq!(&text[key.span.clone()], "b");
}

#[test]
fn yaml_spans_are_bytes_even_after_non_ascii_text() {
    let text = "# Grüße\nname: Zoë\nnext: Ünïcode\n";
    let v = parse(text, Format::Yaml).expect("valid");
    let next = v.get("next").expect("next");
    assert_eq!(&text[next.span.clone()], "Ünïcode");
}

#[test]
fn yaml_problems() {
    let cases: &[(&str, &str)] = &[
        ("a: [1, 2\n", "WFC0102"),
        ("a: 1\n---\nb: 2\n", "WFC0102"),
        ("", "WFC0102"),
        ("a: !custom 1\n", "WFC0102"),
        ("? [1, 2]\n: x\n", "WFC0106"),
        ("true: x\n", "WFC0106"),
        ("a: .inf\n", "WFC0102"),
        ("a: 1\na: 2\n", "WFC0105"),
    ];
    for (text, code) in cases {
        let diags = parse(text, Format::Yaml).err().unwrap_or_else(|| panic!("{text:?} should fail"));
        assert!(diags.iter().any(|d| d.code == *code), "{text:?}: {diags:?}");
        for d in &diags {
            assert!(d.span.end <= text.len());
        }
    }
}

#[test]
fn line_index_counts_characters() {
    let text = "ab\ncdé\r\nfgh";
    let idx = LineIndex::new(text);
    assert_eq!(idx.line_col(text, 0), (1, 1));
    assert_eq!(idx.line_col(text, 3), (2, 1));
    // 'é' is two bytes; the column after it counts one character.
    let after = text.find('\r').expect("cr");
    assert_eq!(idx.line_col(text, after), (2, 4));
    assert_eq!(idx.line_col(text, text.len()), (3, 4));
    // Past the end and inside a character are clamped, not a panic.
    assert_eq!(idx.line_col(text, 1000), (3, 4));
    assert_eq!(idx.line_col(text, 6), (2, 3));
    assert_eq!(idx.line_range(text, 2).map(|r| &text[r]), Some("cdé"));
    assert_eq!(idx.line_range(text, 4), None);
}

#[test]
fn format_follows_the_extension() {
    assert_eq!(Format::from_path("a/b.asl.yaml"), Format::Yaml);
    assert_eq!(Format::from_path("b.yml"), Format::Yaml);
    assert_eq!(Format::from_path("b.asl.json"), Format::Json);
}

#[test]
fn yaml_duplicate_keys_show_both_positions_in_block_style() {
    let text = "StartAt: A\nStates:\n  A:\n    Type: Pass\n    # a comment\n\n    Next: B\n    Type: Succeed\n";
    let diags = parse(text, Format::Yaml).expect_err("duplicate");
    assert_eq!(diags.len(), 1);
    let d = &diags[0];
    assert_eq!(d.code, "WFC0105");
    assert_eq!(d.message, "duplicate key `Type`");
    assert_eq!(d.span.start, text.rfind("Type").expect("second"));
    assert_eq!(d.labels.first().map(|l| l.0.start), text.find("Type"));
    // Inside a sequence item mapping, the first key shares its line with the `- `.
    let text = "- Name: a\n  Other: 1\n  Name: b\n";
    let diags = parse(text, Format::Yaml).expect_err("duplicate");
    assert_eq!(diags[0].labels.first().map(|l| l.0.clone()), Some(2..6));
    // A different mapping's key of the same name is not mistaken for the first occurrence.
    let text = "outer:\n  x: 1\ninner:\n  y: 1\n  y: 2\n";
    let diags = parse(text, Format::Yaml).expect_err("duplicate");
    assert_eq!(diags[0].labels.first().map(|l| &text[l.0.clone()]), Some("y"));
    assert_eq!(diags[0].labels.first().map(|l| l.0.start), Some(text.find("y:").expect("y")));
    // Flow style: no label, but still the right code and position.
    let text = "{a: 1, a: 2}";
    let diags = parse(text, Format::Yaml).expect_err("duplicate");
    assert_eq!(diags[0].code, "WFC0105");
}
