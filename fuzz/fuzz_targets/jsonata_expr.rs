//! The JSONata expressions the compiler accepts (`wfc_ir::JsonataExpr::parse`, which wraps
//! jsonata-core's parser), the variable scan behind WFC0906, and evaluation of whatever parsed
//! against a small document with `$states` and a variable bound, as the runtime evaluates it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use wfc_ir::JsonataExpr;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(expr) = JsonataExpr::parse(text) else { return };
    let _ = expr.variables_read();
    // Serialized and parsed again (how generated code gets it back): the same expression.
    let json = serde_json::to_string(&expr).expect("serializes");
    let back: JsonataExpr = serde_json::from_str(&json).expect("what parsed once parses again");
    assert_eq!(back, expr);
    let input = json!({"a": [1, 2, {"b": "x"}], "n": 3});
    let ctx = json!({"State": {"Name": "S", "EnteredTime": "2024-01-01T00:00:00.000Z"},
                     wfc_ir::jsonpath::VARIABLES_KEY: {"v": 1}});
    let b = wfc_runtime::jsonata::Bindings::new(&input, &ctx);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
    let _ = wfc_runtime::jsonata::evaluate(&expr, "Output", &b, &mut rng);
});
