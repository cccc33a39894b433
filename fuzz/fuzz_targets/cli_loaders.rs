//! The `wfc test` case-file and mocks loaders. wfc-cli is a binary crate, so its loader modules
//! are compiled in here from their sources (they depend only on each other, serde_json and wfc-runtime; the case loader reads AWS-recorded
//! cases too, so the recorded-case modules come with it).
//! Input: a case file's JSON; it is also tried as a mocks document in both formats.
#![no_main]
#![allow(dead_code, unreachable_pub, missing_docs)]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "../../wfc-cli/src/callback_answers.rs"]
mod callback_answers;
#[path = "../../wfc-cli/src/case.rs"]
mod case;
#[path = "../../wfc-cli/src/diff.rs"]
mod diff;
#[path = "../../wfc-cli/src/mocks.rs"]
mod mocks;
#[path = "../../wfc-cli/src/outcome.rs"]
mod outcome;
#[path = "../../wfc-cli/src/placeholders.rs"]
mod placeholders;
#[path = "../../wfc-cli/src/recorded.rs"]
mod recorded;
#[path = "../../wfc-cli/src/recorded_trace.rs"]
mod recorded_trace;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = serde_json::from_slice::<Value>(data) {
        let _ = mocks::MockSet::detect(&doc);
        if let Ok(set) = mocks::MockSet::from_wfc(&doc) {
            let _ = set.to_wfc_json();
            let _ = set.next(Some("A"), "arn:aws:lambda:us-east-1:123456789012:function:F");
        }
        if let Ok(config) = wfc_runtime::mock_config::MockConfig::from_value(&doc)
            && let Ok(set) = mocks::MockSet::from_mock_config(&config, None, "wf", "happy")
            && let Some(entry) = set.next(None, "arn:aws:lambda:us-east-1:123456789012:function:F")
        {
            let _ = mocks::MockSet::answer(&entry, &doc, Ok);
        }
    }
    // The case loader reads files (definitions and mocks relative to the case file).
    let dir = std::env::temp_dir().join(format!("wfc-fuzz-cases-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_ok() {
        let file = dir.join("input.case.json");
        if std::fs::write(&file, data).is_ok() {
            let _ = case::load_file(&file);
        }
    }
});
