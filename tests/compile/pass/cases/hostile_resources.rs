//! The module generated from `hostile_resources.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/hostile_resources.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = hostile_resources::DEFINITION;
    let _ = hostile_resources::DEFINITION_ID;
}
