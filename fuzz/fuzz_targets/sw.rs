//! The Serverless Workflow front end on JSON or YAML text (the first byte picks), through
//! lowering and code generation.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else { return };
    if let Ok(text) = std::str::from_utf8(rest) {
        let path = if first % 2 == 0 { "fuzz.sw.json" } else { "fuzz.sw.yaml" };
        common::compile_and_check(path, text);
    }
});
