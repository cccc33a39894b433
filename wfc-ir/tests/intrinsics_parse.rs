//! The intrinsic-function parser: the syntax tree it builds, its static checks, and errors with
//! byte offsets into the call's text.

use serde_json::json;
use wfc_ir::intrinsics::{Arg, Function, Intrinsic};

fn parse(text: &str) -> Intrinsic {
    Intrinsic::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn builds_the_tree() {
    let i = parse("States.Format('Hello, {}! \\{x\\} {}', $.name, States.MathAdd(1, -2.5e1))");
    let call = i.call();
    assert_eq!(call.function, Function::Format);
    assert_eq!(call.args.len(), 3);
    assert_eq!(call.args[0], Arg::Template(vec!["Hello, ".into(), "! {x} ".into(), "".into()]));
    assert!(matches!(&call.args[1], Arg::Path(p) if p.as_str() == "$.name"));
    let Arg::Call(inner) = &call.args[2] else { panic!("{:?}", call.args[2]) };
    assert_eq!(inner.function, Function::MathAdd);
    assert_eq!(inner.args[0], Arg::Number(1.into()));
    assert!(matches!(&inner.args[1], Arg::Number(n) if n.as_f64() == Some(-25.0)));
    assert_eq!(i.as_str(), "States.Format('Hello, {}! \\{x\\} {}', $.name, States.MathAdd(1, -2.5e1))");
}

#[test]
fn literals_escapes_whitespace_and_paths() {
    let i =
        parse("  States.Array( 'it\\'s' , '\\\\' ,true,false , null, $$.Execution.Id, $['a,b'], $.x[?(@.n > 1)] )  ");
    let args = &i.call().args;
    assert_eq!(args[0], Arg::String("it's".into()));
    assert_eq!(args[1], Arg::String("\\".into()));
    assert_eq!(args[2], Arg::Bool(true));
    assert_eq!(args[3], Arg::Bool(false));
    assert_eq!(args[4], Arg::Null);
    assert!(matches!(&args[5], Arg::Path(p) if p.as_str() == "$$.Execution.Id"));
    assert!(matches!(&args[6], Arg::Path(p) if p.as_str() == "$['a,b']"));
    assert!(matches!(&args[7], Arg::Path(p) if p.as_str() == "$.x[?(@.n > 1)]"));
    assert!(i.uses_context());
    assert!(!i.uses_randomness());
    assert_eq!(parse("States.Array()").call().args, vec![]);
    // Braces need no escape outside a Format template.
    assert_eq!(parse("States.StringToJson('{\"a\": 1}')").call().args[0], Arg::String("{\"a\": 1}".into()));
}

#[test]
fn randomness_and_context_are_detected_at_any_depth() {
    assert!(parse("States.Format('{}', States.UUID())").uses_randomness());
    assert!(parse("States.Array(States.MathRandom(1, 5))").uses_randomness());
    assert!(!parse("States.MathRandom(1, 5, 3)").uses_randomness());
    assert!(parse("States.Array(States.Array($$.State.RetryCount))").uses_context());
    assert!(!parse("States.Array(States.Array($.x))").uses_context());
}

#[test]
fn serializes_as_its_text() {
    let i = parse("States.MathAdd($.i, 1)");
    let v = serde_json::to_value(&i).expect("serialize");
    assert_eq!(v, json!("States.MathAdd($.i, 1)"));
    let back: Intrinsic = serde_json::from_value(v).expect("deserialize");
    assert_eq!(back, i);
    assert!(serde_json::from_value::<Intrinsic>(json!("States.Nope()")).is_err());
}

#[test]
fn nesting_is_bounded() {
    let ten = format!("{}$.x{}", "States.Array(".repeat(10), ")".repeat(10));
    assert!(Intrinsic::parse(&ten).is_ok());
    let eleven = format!("{}$.x{}", "States.Array(".repeat(11), ")".repeat(11));
    let e = Intrinsic::parse(&eleven).expect_err("too deep");
    assert_eq!(e.offset, 10 * "States.Array(".len());
    assert!(e.message.contains("nest more than 10"), "{}", e.message);
    // Hostile depth is an error, not a stack overflow.
    let deep = format!("{}{}", "States.Array(".repeat(100_000), ")".repeat(100_000));
    assert!(Intrinsic::parse(&deep).is_err());
}

/// (text, byte offset, message fragment)
const ERRORS: &[(&str, usize, &str)] = &[
    ("States.Nope(1)", 0, "unknown intrinsic function `States.Nope`"),
    ("States.uuid()", 0, "did you mean `States.UUID`"),
    ("Format('x')", 0, "expected an intrinsic function"),
    ("States.Array", 12, "expected `(`"),
    ("States.Array(1", 14, "missing `)`"),
    ("States.Array(1 2)", 15, "expected `,` or `)`"),
    ("States.Array(1,)", 15, "missing argument"),
    ("States.Array(,1)", 13, "missing argument"),
    ("States.Array('abc)", 13, "unterminated string"),
    ("States.Array('a\\nb')", 15, "invalid escape `\\n`"),
    ("States.Array('a\\", 15, "escapes nothing"),
    ("States.Array(abc)", 13, "single quotes"),
    ("States.Array(1.2.3)", 13, "is not a number"),
    ("States.Array($.a[)", 17, "invalid path"),
    ("States.Array(1) x", 16, "after the end of the call"),
    ("States.Format('a { b', 1)", 17, "a lone `{`"),
    ("States.Format('a } b', 1)", 17, "a lone `}`"),
    ("States.Format('{} and {}', 1)", 0, "2 placeholders but 1 argument follows"),
    ("States.Format('{}')", 0, "1 placeholder but 0 arguments follow"),
    ("States.Format()", 0, "takes at least 1 argument, found 0"),
    ("States.UUID(1)", 0, "takes 0 arguments, found 1"),
    ("States.MathAdd(1)", 0, "takes 2 arguments, found 1"),
    ("States.MathRandom(1, 2, 3, 4)", 0, "takes 2 or 3 arguments, found 4"),
    ("States.MathAdd('1', 2)", 15, "the first argument of `States.MathAdd` must be a number, found a string"),
    ("States.MathAdd(1, true)", 18, "the second argument"),
    ("States.ArrayLength('abc')", 19, "must be an array, found a string"),
    ("States.ArrayLength(States.Format('x'))", 19, "must be an array, found a string"),
    ("States.StringSplit(States.Array(), ',')", 19, "must be a string, found an array"),
    ("States.JsonMerge($.a, null, false)", 22, "must be an object, found null"),
    ("States.JsonMerge($.a, $.b, true)", 27, "deep merging is not supported"),
    ("States.Hash('x', 'SHA256')", 17, "unknown hash algorithm 'SHA256'"),
    ("States.ArrayRange(1, 10, 0.4)", 25, "the step must not be zero"),
    ("States.ArrayRange(1, 1001, 1)", 0, "at most 1000 elements"),
    ("States.ArrayPartition($.a, 0.49)", 27, "chunk size must be a positive integer"),
    ("States.ArrayGetItem($.a, -1)", 25, "must not be negative"),
    ("States.MathRandom(1.4, 1.6)", 0, "the start must be less than the end"),
];

#[test]
fn errors_have_byte_offsets() {
    let mut failures = Vec::new();
    for (text, offset, fragment) in ERRORS {
        match Intrinsic::parse(text) {
            Ok(i) => failures.push(format!("{text}: parsed as {:?}", i.call())),
            Err(e) if e.offset == *offset && e.message.contains(fragment) => {}
            Err(e) => {
                failures.push(format!("{text}: expected {fragment:?} at {offset}, got {:?} at {}", e.message, e.offset))
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn accepts_what_may_work_at_run_time() {
    // Paths and calls of unknown type are checked when they run, not now.
    for text in [
        "States.MathAdd($.a, States.ArrayGetItem($.b, 0))",
        "States.ArrayLength(States.StringToJson($.s))",
        "States.JsonMerge($.a, $.b, $.deep)",
        "States.Hash($.data, $.algorithm)",
        "States.ArrayRange(1, 1000, 1)",
        "States.MathRandom(1.6, 5.4)",
        "States.ArrayPartition($.a, 1.9)",
    ] {
        assert!(Intrinsic::parse(text).is_ok(), "{text}");
    }
}
