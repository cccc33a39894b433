//! The front end accepts intrinsic functions in `.$` template values, lowers them into
//! `Template::Intrinsic`, and reports bad calls with WFC0407 at the offending character.

use wfc_core::Source;
use wfc_ir::intrinsics::Function;
use wfc_ir::{StateKind, Template};

/// A one-state Pass definition whose Parameters has `"v.$": <value>`; the value starts at
/// line 2, column 47 (its opening quote), so the call's byte `n` is at column 48 + n (when
/// the JSON string has no escapes; otherwise the whole value is pointed at).
fn pass_with(value: &str) -> String {
    format!(
        "{{\"StartAt\": \"A\", \"States\": {{\n  \"A\": {{\"Type\": \"Pass\", \"Parameters\": {{\"v.$\": {value}}}, \"End\": true}}}}}}"
    )
}

#[test]
fn a_valid_call_is_lowered() {
    let text = pass_with("\"States.Format('{} + 1 = {}', $.n, States.MathAdd($.n, 1))\"");
    let loaded =
        wfc_core::asl::load(Source { path: "t.json", text: &text }).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let StateKind::Pass(pass) = &loaded.workflow.machine.states[0].kind else { panic!("not a Pass") };
    let Some(Template::Object(fields)) = &pass.parameters else { panic!("{:?}", pass.parameters) };
    assert_eq!(fields[0].0, "v");
    let Template::Intrinsic(i) = &fields[0].1 else { panic!("{:?}", fields[0].1) };
    assert_eq!(i.call().function, Function::Format);
    assert_eq!(i.call().args.len(), 3);
}

/// (what, the JSON value of `"v.$"`, code, column)
const BAD: &[(&str, &str, &str, usize)] = &[
    ("unknown function", "\"States.Nope(1)\"", "WFC0407", 48),
    ("too few arguments", "\"States.MathAdd(1)\"", "WFC0407", 48),
    ("too many arguments", "\"States.UUID(1)\"", "WFC0407", 48),
    // `'x'` starts at byte 15 of the call.
    ("string where a number is needed", "\"States.MathAdd('x', 1)\"", "WFC0407", 63),
    ("array needed", "\"States.ArrayLength(true)\"", "WFC0407", 67),
    ("placeholder count", "\"States.Format('{} {}', $.a)\"", "WFC0407", 48),
    ("unknown hash algorithm", "\"States.Hash($.a, 'SHA256')\"", "WFC0407", 65),
    ("deep merge", "\"States.JsonMerge($.a, $.b, true)\"", "WFC0407", 75),
    ("zero step", "\"States.ArrayRange(1, 5, 0)\"", "WFC0407", 72),
    ("bad escape", "\"States.Format('a\\\\qb')\"", "WFC0407", 47),
    ("unterminated string", "\"States.Array('abc)\"", "WFC0407", 61),
    ("bad path argument", "\"States.Array($.a[)\"", "WFC0407", 65),
];

#[test]
fn bad_calls_are_located() {
    let mut failures = Vec::new();
    for (what, value, code, column) in BAD {
        let text = pass_with(value);
        match wfc_core::asl::load(Source { path: "t.json", text: &text }) {
            Ok(_) => failures.push(format!("{what}: loaded")),
            Err(d) => {
                let located = d.located();
                match located.iter().find(|l| l.code == *code) {
                    Some(l) if (l.line, l.column) == (2, *column) => {}
                    Some(l) => {
                        failures.push(format!("{what}: at 2:{}, expected 2:{column}\n{}", l.column, d.render(false)))
                    }
                    None => failures.push(format!("{what}: no {code}\n{}", d.render(false))),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn paths_still_refuse_intrinsics() {
    let text = "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"OutputPath\": \"States.Array($.a)\", \"End\": true}}}";
    let d = wfc_core::asl::load(Source { path: "t.json", text }).err().expect("rejected");
    assert!(d.located().iter().any(|l| l.code == "WFC0403"), "{}", d.render(false));
}
