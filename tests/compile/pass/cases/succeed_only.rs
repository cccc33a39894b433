//! The module generated from `succeed_only.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/succeed_only.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = succeed_only::DEFINITION;
    let _ = succeed_only::DEFINITION_ID;
}
