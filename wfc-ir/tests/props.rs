//! Property tests: `set` then `get` round-trips, parse/print stability, and that neither parsing
//! nor selecting panics on any input.

use proptest::prelude::*;
use serde_json::{Map, Value};
use wfc_ir::jsonpath::ast::SingularStep;
use wfc_ir::jsonpath::{Path, ReferencePath, SelectError};

/// Arbitrary JSON, a few levels deep, with short keys so that generated paths often hit.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-c]{1,2}", inner), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A step of a singular path, rendered in one of the notations a user may write.
#[derive(Debug, Clone)]
enum GenStep {
    Dot(String),
    Quoted(String),
    DotQuoted(String),
    Index(i64),
}

impl GenStep {
    fn render(&self) -> String {
        match self {
            GenStep::Dot(n) => format!(".{n}"),
            GenStep::Quoted(n) => format!("['{}']", n.replace('\\', "\\\\").replace('\'', "\\'")),
            GenStep::DotQuoted(n) => format!(".[\"{}\"]", n.replace('\\', "\\\\").replace('"', "\\\"")),
            GenStep::Index(i) => format!("[{i}]"),
        }
    }
}

fn gen_step() -> impl Strategy<Value = GenStep> {
    prop_oneof![
        "[a-c]{1,2}".prop_map(GenStep::Dot),
        "[a-c' \\\\\"é-]{0,3}".prop_map(GenStep::Quoted),
        "[a-c' \\\\\"]{0,3}".prop_map(GenStep::DotQuoted),
        (-3i64..4).prop_map(GenStep::Index),
    ]
}

fn singular_path() -> impl Strategy<Value = String> {
    prop::collection::vec(gen_step(), 0..5).prop_map(|steps| {
        let mut s = String::from("$");
        for st in &steps {
            s.push_str(&st.render());
        }
        s
    })
}

/// Path-like text from the characters the grammar cares about: reaches the parser's error paths.
fn pathish() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("$"),
        Just("$$"),
        Just("@"),
        Just("."),
        Just(".."),
        Just("["),
        Just("]"),
        Just("*"),
        Just(","),
        Just(":"),
        Just("?"),
        Just("("),
        Just(")"),
        Just("'"),
        Just("\""),
        Just("\\"),
        Just("=="),
        Just("!="),
        Just("<"),
        Just("<="),
        Just(">"),
        Just(">="),
        Just("!"),
        Just("&&"),
        Just("||"),
        Just(" "),
        Just("-"),
        Just("0"),
        Just("1"),
        Just("7"),
        Just("a"),
        Just("b"),
        Just("true"),
        Just("null"),
        Just("length("),
        Just("count("),
        Just("value("),
        Just("\\u"),
        Just("d83d"),
        Just("é"),
        Just("1e9"),
        Just(".5"),
    ];
    prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

/// A filter expression from the grammar (mostly valid; some ill-typed on purpose).
fn filter_expr() -> BoxedStrategy<String> {
    let query = prop_oneof![
        Just("@".to_owned()),
        "[a-c]{1,2}".prop_map(|n| format!("@.{n}")),
        "[a-c]{1,2}".prop_map(|n| format!("$.{n}")),
        (-2i64..3).prop_map(|i| format!("@[{i}]")),
        "[a-c]{1,2}".prop_map(|n| format!("@..{n}")),
        Just("@.*".to_owned()),
        (prop_oneof![Just("@.a"), Just("@[*]"), Just("$..b")], path_function()).prop_map(|(q, f)| format!("{q}.{f}()")),
    ]
    .boxed();
    let literal = prop_oneof![
        (-3i64..4).prop_map(|i| i.to_string()),
        Just("1.5".to_owned()),
        Just("-2e1".to_owned()),
        "[a-c]{0,2}".prop_map(|s| format!("'{s}'")),
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just("null".to_owned()),
    ]
    .boxed();
    let operand = prop_oneof![
        query.clone(),
        literal,
        query.clone().prop_map(|q| format!("length({q})")),
        query.clone().prop_map(|q| format!("count({q})")),
        query.clone().prop_map(|q| format!("value({q})")),
    ]
    .boxed();
    let op = prop_oneof![Just("=="), Just("!="), Just("<"), Just("<="), Just(">"), Just(">=")];
    let word_op = prop_oneof![
        Just("in"),
        Just("nin"),
        Just("subsetof"),
        Just("anyof"),
        Just("noneof"),
        Just("size"),
        Just("empty"),
        Just("contains"),
    ];
    let array_literal = prop::collection::vec(prop_oneof![Just("1"), Just("'a'"), Just("null"), Just("[true]")], 0..3)
        .prop_map(|items| format!("[{}]", items.join(", ")));
    let basic = prop_oneof![
        (operand.clone(), op, operand.clone()).prop_map(|(l, o, r)| format!("{l} {o} {r}")),
        (query.clone(), word_op, prop_oneof![array_literal, operand]).prop_map(|(l, o, r)| format!("{l} {o} {r}")),
        query.clone(),
        query.prop_map(|q| format!("!{q}")),
    ]
    .boxed();
    basic
        .prop_recursive(3, 12, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| format!("({e})")),
                inner.clone().prop_map(|e| format!("!({e})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
                (inner.clone(), inner).prop_map(|(a, b)| format!("{a} || {b}")),
            ]
        })
        .boxed()
}

/// A Jayway path function name.
fn path_function() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("length"),
        Just("size"),
        Just("min"),
        Just("max"),
        Just("avg"),
        Just("stddev"),
        Just("sum"),
        Just("keys"),
        Just("first"),
        Just("last"),
    ]
}

/// Path text from the grammar: every kind of segment and selector, including filters.
fn grammar_path() -> impl Strategy<Value = String> {
    let selector = prop_oneof![
        "[a-c]{1,2}".prop_map(|n| format!("'{n}'")),
        (-3i64..4).prop_map(|i| i.to_string()),
        Just("*".to_owned()),
        (prop::option::of(-3i64..4), prop::option::of(-3i64..4), prop::option::of(-2i64..3)).prop_map(|(a, b, c)| {
            let f = |x: Option<i64>| x.map(|v| v.to_string()).unwrap_or_default();
            match c {
                Some(step) => format!("{}:{}:{step}", f(a), f(b)),
                None => format!("{}:{}", f(a), f(b)),
            }
        }),
        filter_expr().prop_map(|e| format!("?{e}")),
        filter_expr().prop_map(|e| format!("?({e})")),
    ]
    .boxed();
    let segment = prop_oneof![
        "[a-c]{1,2}".prop_map(|n| format!(".{n}")),
        "[a-c]{1,2}".prop_map(|n| format!("..{n}")),
        Just(".*".to_owned()),
        Just("..*".to_owned()),
        prop::collection::vec(selector.clone(), 1..3).prop_map(|s| format!("[{}]", s.join(","))),
        prop::collection::vec(selector.clone(), 1..3).prop_map(|s| format!(".[{}]", s.join(", "))),
        prop::collection::vec(selector, 1..3).prop_map(|s| format!("..[{}]", s.join(","))),
    ]
    .boxed();
    (
        prop_oneof![Just("$"), Just("$$")],
        prop::collection::vec(segment, 0..5),
        prop::option::weighted(0.2, path_function()),
    )
        .prop_map(|(r, segs, f)| {
            let f = f.map(|f| format!(".{f}()")).unwrap_or_default();
            // A path function cannot directly follow a `..` segment.
            let f = if segs.last().is_some_and(|s| s.starts_with("..")) { String::new() } else { f };
            format!("{r}{}{f}", segs.concat())
        })
}

/// A grammar path with one random edit (a character deleted, or an atom inserted), to probe the
/// parser's error handling near valid input.
fn mutated_path() -> impl Strategy<Value = String> {
    (grammar_path(), any::<prop::sample::Index>(), pathish(), any::<bool>()).prop_map(|(text, at, atom, delete)| {
        let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
        let pos = boundaries[at.index(boundaries.len())];
        let mut out = text.clone();
        if delete {
            if let Some(c) = text[pos..].chars().next() {
                out.replace_range(pos..pos + c.len_utf8(), "");
            }
        } else {
            out.insert_str(pos, &atom.chars().take(3).collect::<String>());
        }
        out
    })
}

/// Any of the path generators.
fn any_path() -> impl Strategy<Value = String> {
    prop_oneof![grammar_path(), mutated_path(), pathish()]
}

fn walk<'a>(doc: &'a Value, steps: &[SingularStep<'_>]) -> Option<&'a Value> {
    let mut cur = doc;
    for st in steps {
        cur = match st {
            SingularStep::Name(n) => cur.as_object()?.get(*n)?,
            SingularStep::Index(i) => {
                let a = cur.as_array()?;
                let len = i64::try_from(a.len()).ok()?;
                let at = if *i < 0 { len + i } else { *i };
                a.get(usize::try_from(at).ok()?)?
            }
        };
    }
    Some(cur)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn set_then_get_round_trips(text in singular_path(), mut doc in json(), value in json()) {
        let path = ReferencePath::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let before = doc.clone();
        match path.set(&mut doc, value.clone()) {
            Ok(()) => {
                prop_assert_eq!(path.get(&doc), Some(&value));
                // Reading through the general Path gives the same node.
                prop_assert_eq!(path.as_path().select(&doc).ok(), Some(value));
            }
            Err(_) => prop_assert_eq!(&doc, &before, "a failed set leaves the document unchanged"),
        }
    }

    #[test]
    fn set_of_names_into_objects_always_succeeds(
        names in prop::collection::vec("[a-c]{1,2}", 0..5),
        value in json(),
    ) {
        let text: String = std::iter::once("$".to_owned()).chain(names.iter().map(|n| format!(".{n}"))).collect();
        let path = ReferencePath::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut doc = Value::Object(Map::new());
        prop_assert!(path.set(&mut doc, value.clone()).is_ok());
        prop_assert_eq!(path.get(&doc), Some(&value));
    }

    #[test]
    fn get_agrees_with_a_reference_walk(text in singular_path(), doc in json()) {
        let path = ReferencePath::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let steps: Vec<_> = path.steps().collect();
        prop_assert_eq!(path.get(&doc), walk(&doc, &steps));
        // A singular path selects the node itself, or NotFound.
        match path.as_path().select(&doc) {
            Ok(v) => prop_assert_eq!(Some(&v), walk(&doc, &steps)),
            Err(SelectError::NotFound { .. }) => prop_assert!(walk(&doc, &steps).is_none()),
        }
    }

    #[test]
    fn parse_keeps_the_text_and_canonical_form_is_stable(text in singular_path()) {
        let path = Path::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(path.as_str(), text.as_str());
        let canon = path.canonical();
        let again = Path::parse(&canon).map_err(|e| TestCaseError::fail(format!("{canon}: {e}")))?;
        prop_assert_eq!(path.segments(), again.segments());
        prop_assert_eq!(again.canonical(), canon);
        // Serde writes the text as written and reads it back.
        let json = serde_json::to_value(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(json.as_str(), Some(text.as_str()));
    }

    #[test]
    fn grammar_paths_parse(text in grammar_path()) {
        // The generator writes a few ill-typed filters on purpose (a non-singular query compared
        // or passed to length()); everything else it writes must parse.
        if let Err(e) = Path::parse(&text) {
            prop_assert!(
                e.message.contains("singular") || e.message.contains("count()"),
                "`{}` should parse: {}", text, e
            );
        }
    }

    #[test]
    fn parse_never_panics_on_arbitrary_strings(text in any::<String>()) {
        let _ = Path::parse(&text);
        let _ = ReferencePath::parse(&text);
    }

    #[test]
    fn parse_never_panics_on_pathish_strings(text in any_path()) {
        match Path::parse(&text) {
            Ok(path) => {
                prop_assert_eq!(path.as_str(), text.as_str());
                // Whatever parses has a canonical form that parses to the same tree.
                let canon = path.canonical();
                let again = Path::parse(&canon).map_err(|e| TestCaseError::fail(format!("{text} -> {canon}: {e}")))?;
                prop_assert_eq!(path.segments(), again.segments());
            }
            Err(e) => prop_assert!(e.offset <= text.len(), "offset {} past the end of {:?}", e.offset, text),
        }
        let _ = ReferencePath::parse(&text);
    }

    #[test]
    fn select_never_panics_and_has_the_jayway_shape(text in any_path(), doc in json()) {
        if let Ok(path) = Path::parse(&text) {
            match path.select(&doc) {
                Ok(v) => {
                    if !path.is_definite() {
                        prop_assert!(v.is_array(), "indefinite `{}` gave {}", text, v);
                    }
                }
                // An unassigned variable is missing whatever the path's shape.
                Err(SelectError::NotFound { .. }) => prop_assert!(path.is_definite() || matches!(path.root(), wfc_ir::Root::Variable(_))),
            }
            let nodes = path.select_nodes(&doc);
            if path.is_singular() {
                prop_assert!(nodes.len() <= 1);
            }
        }
    }
}
