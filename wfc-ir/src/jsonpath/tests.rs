//! Unit tests of the parser, the evaluator and the Jayway result shapes. The broader tables,
//! property tests and the RFC 9535 compliance suite are in `wfc-ir/tests/`.

use serde_json::{Value, json};

use super::ast::{CmpOp, Comparable, LogicalExpr, QueryRoot, Segment, Selector, SingularStep, Slice};
use super::*;

fn p(text: &str) -> Path {
    match Path::parse(text) {
        Ok(path) => path,
        Err(e) => panic!("`{text}` should parse: {e}"),
    }
}

fn err(text: &str) -> PathError {
    match Path::parse(text) {
        Ok(path) => panic!("`{text}` should not parse, got {:?}", path.segments()),
        Err(e) => e,
    }
}

fn select(text: &str, doc: &Value) -> Value {
    match p(text).select(doc) {
        Ok(v) => v,
        Err(e) => panic!("`{text}` should select: {e}"),
    }
}

fn name(n: &str) -> Segment {
    Segment::Child(vec![Selector::Name(n.into())])
}

#[test]
fn parses_roots() {
    assert_eq!(p("$").root(), Root::Input);
    assert_eq!(p("$$").root(), Root::Context);
    assert_eq!(p("$$.Execution.Id").root(), Root::Context);
    assert!(p("$").is_identity());
    assert!(!p("$$").is_identity());
    assert!(!p("$.a").is_identity());
}

#[test]
fn parses_names_in_every_notation() {
    let want = vec![name("a"), name("b c")];
    assert_eq!(p("$.a['b c']").segments(), want.as_slice());
    assert_eq!(p("$.a[\"b c\"]").segments(), want.as_slice());
    // Jayway (and the AWS docs) put a dot before the bracket.
    assert_eq!(p("$.a.['b c']").segments(), want.as_slice());
    assert_eq!(p("$.key-dash").segments(), &[name("key-dash")]);
    assert_eq!(p("$.2").segments(), &[name("2")]);
    assert_eq!(p("$.☺").segments(), &[name("☺")]);
    assert_eq!(p("$.a:b").segments(), &[name("a:b")]);
}

#[test]
fn parses_escapes_in_quoted_names() {
    assert_eq!(p(r"$['it\'s']").segments(), &[name("it's")]);
    assert_eq!(p(r#"$["say \"hi\""]"#).segments(), &[name("say \"hi\"")]);
    assert_eq!(p(r"$['\u00e9\t\\']").segments(), &[name("é\t\\")]);
    assert_eq!(p(r"$['\ud83d\ude00']").segments(), &[name("😀")]);
    assert!(err(r"$['\ud83d']").message.contains("surrogate"));
    assert!(err(r#"$['\"']"#).message.contains("invalid escape"));
    assert!(err("$['a\u{1}']").message.contains("control character"));
}

#[test]
fn parses_indices_slices_wildcards_unions() {
    assert_eq!(p("$[0]").segments(), &[Segment::Child(vec![Selector::Index(0)])]);
    assert_eq!(p("$[-1]").segments(), &[Segment::Child(vec![Selector::Index(-1)])]);
    assert_eq!(p("$[*]").segments(), &[Segment::Child(vec![Selector::Wildcard])]);
    assert_eq!(p("$.*").segments(), &[Segment::Child(vec![Selector::Wildcard])]);
    assert_eq!(p("$..*").segments(), &[Segment::Descendant(vec![Selector::Wildcard])]);
    assert_eq!(p("$..a").segments(), &[Segment::Descendant(vec![Selector::Name("a".into())])]);
    assert_eq!(p("$[ 0 , 'a' ]").segments(), &[Segment::Child(vec![Selector::Index(0), Selector::Name("a".into())])]);
    let slice = |start, end, step| Segment::Child(vec![Selector::Slice(Slice { start, end, step })]);
    assert_eq!(p("$[1:3]").segments(), &[slice(Some(1), Some(3), None)]);
    assert_eq!(p("$[:]").segments(), &[slice(None, None, None)]);
    assert_eq!(p("$[::-1]").segments(), &[slice(None, None, Some(-1))]);
    assert_eq!(p("$[-2:]").segments(), &[slice(Some(-2), None, None)]);
}

#[test]
fn parses_filters() {
    let path = p("$.items[?(@.price >= 10 && @.tags)]");
    let Segment::Child(sels) = &path.segments()[1] else { panic!("child segment expected") };
    let Selector::Filter(expr) = &sels[0] else { panic!("filter expected") };
    let LogicalExpr::Paren(inner) = &**expr else { panic!("paren expected, got {expr:?}") };
    let LogicalExpr::And(items) = &**inner else { panic!("and expected") };
    assert_eq!(
        items[0],
        LogicalExpr::Compare {
            left: Comparable::Query(ast::FilterQuery {
                root: QueryRoot::Current,
                segments: vec![name("price")],
                function: None
            }),
            op: CmpOp::Ge,
            right: Comparable::Literal(json!(10)),
        }
    );
    assert!(matches!(&items[1], LogicalExpr::Exists(_)));
    // Both the Jayway form and the RFC 9535 form.
    assert!(p("$[?@.a<1]").segments().len() == 1);
    assert!(p("$[?(!(@.a == 'x') || $.flag)]").segments().len() == 1);
    assert!(p("$[?length(@.tags) > 1]").segments().len() == 1);
    assert!(p("$[?count(@.*) == 2]").segments().len() == 1);
    assert!(p("$[?value(@..x) == 2]").segments().len() == 1);
    assert!(p("$[?@.a == -1.5e3]").segments().len() == 1);
}

#[test]
fn parse_errors_carry_offsets_and_reasons() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 0, "empty"),
        ("a.b", 0, "must begin with `$`"),
        (" $", 0, "whitespace"),
        ("$ ", 1, "end with whitespace"),
        ("$.", 1, "field name"),
        ("$.a.", 3, "field name"),
        ("$['a'", 1, "unclosed"),
        ("$['a", 2, "unterminated"),
        ("$[a]", 2, "must be quoted"),
        ("$[]", 1, "empty brackets"),
        ("$[01]", 2, "leading zeros"),
        ("$[-0]", 2, "-0"),
        ("$[9007199254740992]", 2, "out of range"),
        ("$..", 1, "cannot end with `..`"),
        ("$1x", 1, "digit"),
        ("@.a", 0, "inside a filter"),
        ("$.a b", 4, "found `b`"),
        ("$[?(@.a = 1)]", 8, "`==`"),
        ("$[?(@.a =~ /x/)]", 8, "not supported"),
        ("$[?(@.a == 1]", 3, "unclosed `(`"),
        ("$[?(@[*] == 1)]", 4, "singular"),
        ("$[?(1)]", 4, "literal on its own"),
        ("$[?(!@.a == 1)]", 4, "negate a comparison"),
        ("$[?(@.a == nope)]", 11, "unknown word"),
        ("$[?(foo(@.a))]", 4, "unknown function"),
        ("$[?(match(@.a, 'x'))]", 4, "not supported"),
        ("$[?(length(@.*) > 1)]", 11, "count()"),
        ("$[?(length(@.a) )]", 4, "not a test"),
        ("$.concat()", 2, "unsupported path function"),
        ("$.a.length(1)", 11, "takes no arguments"),
        ("$.a.length().b", 3, "must be the last"),
        ("$..length()", 3, "cannot follow `..`"),
        ("$[?(@.a == ['x'])]", 11, "array literal"),
        ("$[?(['x'] in @.a)]", 4, "on the right"),
        ("$[?(@.a in ['x')]", 15, "expected `,` or `]`"),
        ("$[?(@.a == 01)]", 11, "leading zeros"),
        ("$[?(@.a == 1 and @.b)]", 13, "use `&&`"),
        ("$[?(@.a == 1 OR @.b)]", 13, "use `||`"),
        ("$.a[1.5]", 5, "whole numbers"),
        ("$[?(@.a == 1e999)]", 11, "out of range"),
        ("$[?(@.a == $$.b)]", 11, "`$$`"),
    ];
    for (text, offset, needle) in cases {
        let e = err(text);
        assert!(e.message.contains(needle), "`{text}`: message {:?} should mention {needle:?}", e.message);
        assert_eq!(e.offset, *offset, "`{text}`: {}", e.message);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("$[?{}@.a{}]", "(".repeat(500), ")".repeat(500));
    assert!(err(&deep).message.contains("nests more than"));
    let deep_filters = format!("${}", "[?@".repeat(500));
    assert!(Path::parse(&deep_filters).is_err());
}

#[test]
fn definite_paths_return_the_node_or_not_found() {
    let doc = json!({"a": {"b": [10, 20, 30]}, "n": null});
    assert_eq!(select("$", &doc), doc);
    assert_eq!(select("$.a.b", &doc), json!([10, 20, 30]));
    assert_eq!(select("$.a.b[0]", &doc), json!(10));
    assert_eq!(select("$.a.b[-1]", &doc), json!(30));
    assert_eq!(select("$.a['b'][1]", &doc), json!(20));
    assert_eq!(select("$.n", &doc), Value::Null);
    assert!(p("$.a.b[0]").is_definite());
    assert!(p("$.a.b[-1]").is_singular());
    let e = p("$.x").select(&doc).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"the JSONPath '$.x' could not be found in the input '{"a":{"b":[10,20,30]},"n":null}'"#
    );
    for missing in ["$.a.b[3]", "$.a.b[-4]", "$.a.c", "$.a.b.c", "$.n.x", "$[0]"] {
        assert!(p(missing).select(&doc).is_err(), "{missing}");
    }
}

#[test]
fn indefinite_paths_return_arrays() {
    let doc = json!({"items": [{"id": 1, "p": 5}, {"id": 2, "p": 15}, {"id": 3}]});
    assert_eq!(select("$.items[*].id", &doc), json!([1, 2, 3]));
    assert_eq!(select("$.items[*].p", &doc), json!([5, 15]));
    assert_eq!(select("$.items[?(@.p > 10)].id", &doc), json!([2]));
    assert_eq!(select("$.items[?(@.p > 100)]", &doc), json!([]));
    assert_eq!(select("$.missing[*]", &doc), json!([]));
    assert_eq!(select("$.items[0:2].id", &doc), json!([1, 2]));
    assert_eq!(select("$..id", &doc), json!([1, 2, 3]));
    assert_eq!(select("$.items[0,2].id", &doc), json!([1, 3]));
    assert!(!p("$.items[*]").is_definite());
    assert!(!p("$..id").is_definite());
    assert!(!p("$.items[0,1]").is_definite());
    assert!(!p("$.items[0:1]").is_definite());
}

#[test]
fn merge_case_returns_an_object() {
    let doc = json!({"a": {"x": 1, "y": 2, "z": 3}});
    let path = p("$.a['z','x','missing']");
    assert!(path.is_definite());
    assert!(!path.is_singular());
    assert_eq!(path.select(&doc).unwrap(), json!({"z": 3, "x": 1}));
    assert_eq!(path.select_nodes(&doc), vec![&json!(3), &json!(1)]);
    assert!(p("$.b['x','y']").select(&doc).is_err());
    // Not the last segment: an ordinary union.
    assert_eq!(select("$['a','b'].x", &json!({"a": {"x": 1}, "b": {"x": 2}})), json!([1, 2]));
}

#[test]
fn filter_on_an_object_tests_the_object_itself() {
    let doc = json!({"order": {"status": "paid", "total": 3}});
    assert_eq!(select("$.order[?(@.status == 'paid')]", &doc), json!([{"status": "paid", "total": 3}]));
    assert_eq!(select("$.order[?(@.status == 'open')]", &doc), json!([]));
    // In a descendant search each object is found once, as a member of its parent.
    let doc = json!({"a": {"k": 1, "b": {"k": 2}}, "c": [{"k": 3}]});
    assert_eq!(select("$..[?(@.k)].k", &doc), json!([1, 2, 3]));
}

#[test]
fn filter_comparisons_follow_rfc_9535() {
    let doc = json!([
        {"v": 1}, {"v": 1.0}, {"v": "1"}, {"v": true}, {"v": null}, {"v": [1, 2]}, {"v": {"a": 1}}, {}
    ]);
    let count = |f: &str| match select(&format!("$[?{f}]"), &doc) {
        Value::Array(a) => a.len(),
        other => panic!("array expected, got {other}"),
    };
    assert_eq!(count("@.v == 1"), 2);
    assert_eq!(count("@.v != 1"), 6);
    assert_eq!(count("@.v < 2"), 2);
    assert_eq!(count("@.v <= 1"), 2);
    assert_eq!(count("@.v > '0'"), 1);
    assert_eq!(count("@.v == true"), 1);
    assert_eq!(count("@.v == null"), 1);
    assert_eq!(count("@.v == [1, 2]".replace("[1, 2]", "$[5].v").as_str()), 1);
    assert_eq!(count("@.v == $[6].v"), 1);
    assert_eq!(count("@.v"), 7);
    assert_eq!(count("!@.v"), 1);
    assert_eq!(count("@.v == @.missing"), 1);
    assert_eq!(count("@.v < true"), 0);
    assert_eq!(count("length(@.v) == 2"), 1);
    assert_eq!(count("count(@.*) == 1"), 7);
    assert_eq!(count("value(@.v) == 1"), 2);
}

#[test]
fn slices_follow_rfc_9535() {
    let doc = json!([0, 1, 2, 3, 4, 5]);
    let cases: &[(&str, Value)] = &[
        ("$[1:3]", json!([1, 2])),
        ("$[:2]", json!([0, 1])),
        ("$[4:]", json!([4, 5])),
        ("$[-2:]", json!([4, 5])),
        ("$[::2]", json!([0, 2, 4])),
        ("$[::-1]", json!([5, 4, 3, 2, 1, 0])),
        ("$[4:1:-2]", json!([4, 2])),
        ("$[1:3:0]", json!([])),
        ("$[10:20]", json!([])),
        ("$[-100:100:3]", json!([0, 3])),
    ];
    for (text, want) in cases {
        assert_eq!(&select(text, &doc), want, "{text}");
    }
}

#[test]
fn descendants_in_document_order() {
    let doc = json!({"b": {"x": 1, "c": {"x": 2}}, "a": [{"x": 3}], "x": 4});
    // Pre-order, the node itself first (RFC 9535 descendant-or-self): the root's own `x` leads.
    assert_eq!(select("$..x", &doc), json!([4, 1, 2, 3]));
    assert_eq!(select("$..*", &json!({"a": [1, {"b": 2}]})), json!([[1, {"b": 2}], 1, {"b": 2}, 2]));
}

#[test]
fn canonical_text_reparses_to_the_same_tree() {
    for text in [
        "$",
        "$$.Execution.Input",
        "$.a['b c'][0][-1][*]..x..[*]",
        "$['it\\'s'][\"x\\ny\"]",
        "$[1:2][::-1][:3:]",
        "$[?(@.a > 1 && (@.b == 'x' || !@.c)) ]",
        "$[?length(@.x) >= 2.5e1][?count(@..y) == $.n]",
        "$[?@.a == null || @.b == true || @.c != false]",
    ] {
        let path = p(text);
        let canon = path.canonical();
        let again = p(&canon);
        assert_eq!(path.segments(), again.segments(), "{text} -> {canon}");
        assert_eq!(again.canonical(), canon);
    }
    assert_eq!(p("$.a.['b'][0]").canonical(), "$['a']['b'][0]");
}

#[test]
fn reference_paths_accept_only_singular_paths() {
    for ok in ["$", "$.a", "$.a.b[0]", "$['a b'][-1]", "$.a.['b']"] {
        assert!(ReferencePath::parse(ok).is_ok(), "{ok}");
    }
    let cases: &[(&str, usize, &str)] = &[
        ("$$.a", 0, "`$$`"),
        ("$.a[*]", 3, "`*`"),
        ("$.a.*", 3, "`*`"),
        ("$..a", 1, "`..`"),
        ("$.a[0,1]", 3, "`,`"),
        ("$.a['x','y']", 3, "`,`"),
        ("$.a[1:]", 3, "`:`"),
        ("$.a[?(@.x)]", 3, "`?`"),
    ];
    for (text, offset, needle) in cases {
        let e = ReferencePath::parse(text).unwrap_err();
        assert!(e.message.contains(needle), "{text}: {}", e.message);
        assert!(e.message.contains("single node") || text.starts_with("$$"), "{text}: {}", e.message);
        assert_eq!(e.offset, *offset, "{text}");
    }
    let r = ReferencePath::parse("$.a[2]['b']").unwrap();
    assert_eq!(
        r.steps().collect::<Vec<_>>(),
        vec![SingularStep::Name("a"), SingularStep::Index(2), SingularStep::Name("b")]
    );
    assert_eq!(r.as_path().as_str(), "$.a[2]['b']");
}

#[test]
fn reference_path_set_creates_parents_and_replaces() {
    let set = |path: &str, mut doc: Value, v: Value| ReferencePath::parse(path).unwrap().set(&mut doc, v).map(|()| doc);
    assert_eq!(set("$.b.greeting", json!({"a": 1}), json!("Hi!")).unwrap(), json!({"a": 1, "b": {"greeting": "Hi!"}}));
    assert_eq!(set("$", json!({"a": 1}), json!([1])).unwrap(), json!([1]));
    assert_eq!(set("$.a", json!({"a": 1, "b": 2}), json!(9)).unwrap(), json!({"a": 9, "b": 2}));
    assert_eq!(set("$.a[1].x", json!({"a": [{}, {}]}), json!(1)).unwrap(), json!({"a": [{}, {"x": 1}]}));
    assert_eq!(set("$.a[-1]", json!({"a": [1, 2]}), json!(0)).unwrap(), json!({"a": [1, 0]}));
    // Key order is kept: an overwritten key stays where it was.
    let out = set("$.a", json!({"a": 1, "b": 2}), json!(3)).unwrap();
    assert_eq!(out.as_object().unwrap().keys().collect::<Vec<_>>(), vec!["a", "b"]);

    let e = set("$.x", json!("foo"), json!(1)).unwrap_err();
    assert_eq!(e.to_string(), r#"unable to apply ReferencePath $.x to input "foo""#);
    for (path, doc) in [
        ("$.a.b", json!({"a": 1})),
        ("$.a.b", json!({"a": null})),
        ("$.a[2]", json!({"a": [1]})),
        ("$.a[0]", json!({"a": {"0": 1}})),
        ("$.new[0]", json!({})),
        ("$[0]", json!({})),
    ] {
        let mut d = doc.clone();
        assert!(ReferencePath::parse(path).unwrap().set(&mut d, json!(1)).is_err(), "{path} on {doc}");
        assert_eq!(d, doc, "a failed set must leave the document unchanged");
    }
}

#[test]
fn serde_round_trips_as_text() {
    let path = p("$.a.['b'][0]");
    assert_eq!(serde_json::to_value(&path).unwrap(), json!("$.a.['b'][0]"));
    let back: Path = serde_json::from_value(json!("$.a.['b'][0]")).unwrap();
    assert_eq!(back, path);
    assert!(serde_json::from_value::<Path>(json!("a")).is_err());
    assert!(serde_json::from_value::<ReferencePath>(json!("$.a[*]")).is_err());
    let r: ReferencePath = serde_json::from_value(json!("$.x")).unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), "\"$.x\"");
}

#[test]
fn preview_truncates_on_a_char_boundary() {
    let doc = json!("é".repeat(2000));
    let s = preview(&doc);
    assert!(s.ends_with("..."));
    assert!(s.len() <= 1024 + 3);
}

#[test]
fn jayway_word_operators() {
    let doc = json!([
        {"id": 1, "size": "S", "tags": ["a", "b"], "name": "alpha"},
        {"id": 2, "size": "M", "tags": ["b"], "name": "beta"},
        {"id": 3, "size": "XL", "tags": [], "name": ""},
        {"id": 4, "tags": "ab"}
    ]);
    let ids = |f: &str| select(&format!("$[?({f})].id"), &doc);
    assert_eq!(ids("@.size in ['S', 'M']"), json!([1, 2]));
    assert_eq!(ids("@.size nin ['S', 'M']"), json!([3, 4]));
    assert_eq!(ids("@.tags subsetof ['a', 'b', 'c']"), json!([1, 2, 3]));
    assert_eq!(ids("@.tags anyof ['a', 'z']"), json!([1]));
    assert_eq!(ids("@.tags noneof ['a']"), json!([2, 3]));
    assert_eq!(ids("@.tags size 1"), json!([2]));
    assert_eq!(ids("@.tags size 2"), json!([1, 4]));
    assert_eq!(ids("@.tags empty true"), json!([3]));
    assert_eq!(ids("@.tags empty false"), json!([1, 2, 4]));
    assert_eq!(ids("@.name contains 'ph'"), json!([1]));
    assert_eq!(ids("@.tags contains 'b'"), json!([1, 2, 4]));
    // The right-hand side may be a query, and numbers compare by value.
    assert_eq!(select("$.items[?(@ in $.allowed)]", &json!({"items": [1, 2, 3], "allowed": [3.0, 1]})), json!([1, 3]));
    // A non-singular query on the left is the array of what it selects.
    assert_eq!(select("$[?(@.tags[*] anyof ['a'])].id", &doc), json!([1]));
    // Wrong types are simply false.
    assert_eq!(ids("@.size in 'S'"), json!([]));
    assert_eq!(ids("@.id size 1"), json!([]));
}

#[test]
fn jayway_path_functions() {
    let doc = json!({"nums": [3, 1.5, "x", 4], "empty": [], "obj": {"b": 1, "a": 2}, "s": "héllo", "n": 7});
    assert_eq!(select("$.nums.length()", &doc), json!(4));
    assert_eq!(select("$.nums.size()", &doc), json!(4));
    assert_eq!(select("$.obj.length()", &doc), json!(2));
    assert_eq!(select("$.s.length()", &doc), json!(5));
    assert_eq!(select("$.nums.min()", &doc), json!(1.5));
    assert_eq!(select("$.nums.max()", &doc), json!(4.0));
    assert_eq!(select("$.nums.sum()", &doc), json!(8.5));
    assert_eq!(select("$.nums.avg()", &doc), json!(8.5 / 3.0));
    assert_eq!(select("$[?(@.x)].length()", &json!([{"x": 1}, {"x": 2}, {}])), json!(2));
    let sd = p("$.v.stddev()").select(&json!({"v": [2, 4, 4, 4, 5, 5, 7, 9]})).unwrap();
    assert!((sd.as_f64().unwrap() - 2.0).abs() < 1e-12, "{sd}");
    assert_eq!(select("$.obj.keys()", &doc), json!(["b", "a"]));
    assert_eq!(select("$.nums.first()", &doc), json!(3));
    assert_eq!(select("$.nums.last()", &doc), json!(4));
    assert_eq!(select("$.length()", &doc), json!(5));
    for none in ["$.empty.sum()", "$.empty.first()", "$.n.length()", "$.obj.sum()", "$.s.keys()", "$.missing.length()"]
    {
        let path = p(none);
        assert!(path.is_definite(), "{none}");
        assert!(path.select(&doc).is_err(), "{none}");
    }
    // In filters, a query ending in a function is a value.
    let items = json!([{"t": [1, 2]}, {"t": [1]}, {"t": "abc"}, {}]);
    assert_eq!(select("$[?(@.t.length() > 1)]", &items), json!([{"t": [1, 2]}, {"t": "abc"}]));
    assert_eq!(select("$[?(@.t.sum() == 3)]", &items), json!([{"t": [1, 2]}]));
    assert_eq!(select("$[?(@.t.first())]", &items), json!([{"t": [1, 2]}, {"t": [1]}]));
    let path = p("$.a.b.length()");
    assert_eq!(path.function(), Some(ast::PathFunction::Length));
    assert_eq!(path.segments(), &[name("a"), name("b")]);
    assert!(!path.is_singular());
    assert_eq!(path.canonical(), "$['a']['b'].length()");
    let e = ReferencePath::parse("$.a.length()").unwrap_err();
    assert_eq!(e.offset, 3);
    assert!(e.message.contains("computes a value"), "{}", e.message);
}

#[test]
fn variable_paths_read_the_variables_carried_by_the_context_document() {
    let ctx = json!({"State": {"Name": "S"}, super::VARIABLES_KEY: {"order": {"id": 7, "lines": [1, 2]}}});
    assert_eq!(p("$order").root(), Root::Variable("order".to_owned()));
    assert_eq!(p("$order.id").select(&ctx).unwrap(), json!(7));
    assert_eq!(p("$order.lines[1]").select(&ctx).unwrap(), json!(2));
    assert!(p("$missing").select(&ctx).is_err());
    // `$$` never shows the variables.
    assert_eq!(p("$$").select(&ctx).unwrap(), json!({"State": {"Name": "S"}}));
    assert!(ReferencePath::parse("$order.id").is_err());
}
