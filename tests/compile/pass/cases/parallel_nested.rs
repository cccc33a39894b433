//! The module generated from `parallel_nested.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/parallel_nested.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = parallel_nested::DEFINITION;
    let _ = parallel_nested::DEFINITION_ID;
}
