//! The module generated from `wait_forms.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/wait_forms.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = wait_forms::DEFINITION;
    let _ = wait_forms::DEFINITION_ID;
}
