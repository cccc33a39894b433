//! Property smoke test of the JSONata parsing the compiler calls (the cargo-fuzz target
//! `jsonata_expr` runs the same checks, longer): it never panics, what parses round-trips
//! through its serialized form, and the variable scan never fails on it.

use proptest::prelude::*;
use wfc_ir::JsonataExpr;

/// Strings made of JSONata's tokens, so many of them parse.
fn tokenish() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "$states", ".input", ".result", "$x", "$sum(", ")", "(", "[", "]", "{", "}", "'a'", "\"b\"", "1", "2.5", "+",
        "-", "*", "/", "&", "=", "!=", "and", "or", "?", ":", "??", "?:", ",", ";", ":=", "function($v){$v}", "~>",
        "$map(", "..", "%", "#$i", "@$o", "^(a)", "|a|{}|", "true", "null", "/re/i", " ", "λ", "`q`", "$$", "$",
    ]);
    prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_and_round_trips(text in prop_oneof![tokenish(), any::<String>()]) {
        if let Ok(expr) = JsonataExpr::parse(&text) {
            let _ = expr.variables_read();
            let json = serde_json::to_string(&expr).expect("serializes");
            let back: JsonataExpr = serde_json::from_str(&json).expect("parses again");
            prop_assert_eq!(back, expr);
        }
    }
}
