//! The module generated from `fail_only.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/fail_only.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = fail_only::DEFINITION;
    let _ = fail_only::DEFINITION_ID;
}
