//! The ASL front end on YAML text (anchors, aliases, tags), through lowering and code generation.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        common::compile_and_check("fuzz.asl.yaml", text);
    }
});
