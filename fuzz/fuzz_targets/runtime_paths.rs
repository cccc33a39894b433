//! Runtime path evaluation: select, select_nodes and set on arbitrary documents, and the I/O
//! functions generated code calls. Input: a path on the first line, a JSON document after it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use wfc_ir::{Path, ReferencePath};
use wfc_runtime::io;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (path_text, doc_text) = text.split_once('\n').unwrap_or((text, "{}"));
    // serde_json refuses documents deeper than 128, as when a CLI input file is read.
    let Ok(doc) = serde_json::from_str::<Value>(doc_text) else { return };
    let context = serde_json::json!({ "Execution": { "Input": doc.clone() } });
    if let Ok(path) = Path::parse(path_text) {
        let selected = path.select(&doc);
        let nodes = path.select_nodes(&doc);
        if path.is_singular() {
            // A singular path selects at most one node, and select agrees with select_nodes.
            assert!(nodes.len() <= 1);
            if let (Ok(v), Some(n)) = (&selected, nodes.first()) {
                assert_eq!(v, *n);
            }
        }
        let _ = io::input_path(&Some(path.clone()), &doc, &context);
        let _ = io::select_field(&path, "value.$", &doc, &context);
        let _ = io::invalid_path_message(&path, &doc);
    }
    if let Ok(rpath) = ReferencePath::parse(path_text) {
        let before = doc.clone();
        let marker = serde_json::json!({ "fuzz-marker": true });
        let mut target = doc.clone();
        match rpath.set(&mut target, marker.clone()) {
            // After a successful set, the path selects exactly what was written.
            Ok(()) => {
                if let Ok(p) = Path::parse(path_text) {
                    if let Ok(v) = p.select(&target) {
                        assert_eq!(v, marker, "set then select disagree for {path_text:?}");
                    }
                }
            }
            // A failed set leaves the document untouched.
            Err(_) => assert_eq!(target, before, "a failed set changed the document"),
        }
        let _ = io::result_path(&Some(rpath), doc, marker);
    }
});
