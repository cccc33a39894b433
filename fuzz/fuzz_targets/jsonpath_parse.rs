//! The JSONPath parser (Path and ReferencePath), and the canonical form it prints.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wfc_ir::{Path, ReferencePath};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(path) = Path::parse(text) {
        // The canonical form is a path too, with the same meaning (so the same canonical form).
        let canonical = path.canonical();
        match Path::parse(&canonical) {
            Ok(again) => assert_eq!(again.canonical(), canonical, "canonical form of {text:?} is not stable"),
            Err(e) => panic!("canonical form {canonical:?} of {text:?} does not parse: {e}"),
        }
        let _ = path.is_definite();
    }
    let _ = ReferencePath::parse(text);
});
