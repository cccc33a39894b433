//! The intrinsic-function parser, then evaluation of what parses. Input: an intrinsic call on the
//! first line (e.g. `States.Format('{}', $.a)`), a JSON document after it as the effective input.
//!
//! Properties: parsing never panics; a parsed call evaluates to a value or a `Failure` (never a
//! panic, never unbounded work: ArrayRange and string inputs have limits), and evaluation with the
//! same seed is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;
use wfc_ir::intrinsics::Intrinsic;
use wfc_runtime::intrinsics::evaluate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (call_text, doc_text) = text.split_once('\n').unwrap_or((text, "{}"));
    let Ok(intrinsic) = Intrinsic::parse(call_text) else { return };
    let _ = intrinsic.uses_context();
    let _ = intrinsic.uses_randomness();
    let _ = intrinsic.call().function.returns();
    let input = serde_json::from_str::<Value>(doc_text).unwrap_or(Value::Null);
    let context = serde_json::json!({ "Execution": { "Input": input.clone(), "Name": "fuzz" } });
    let first = evaluate(&intrinsic, "value.$", &input, &context, &mut StdRng::seed_from_u64(7));
    let second = evaluate(&intrinsic, "value.$", &input, &context, &mut StdRng::seed_from_u64(7));
    match (&first, &second) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{call_text:?} is not deterministic under one seed"),
        (Err(a), Err(b)) => assert_eq!(a.error, b.error),
        _ => panic!("{call_text:?}: one evaluation failed and the other did not"),
    }
});
