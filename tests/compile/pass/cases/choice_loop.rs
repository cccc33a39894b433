//! The module generated from `choice_loop.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/choice_loop.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = choice_loop::DEFINITION;
    let _ = choice_loop::DEFINITION_ID;
}
