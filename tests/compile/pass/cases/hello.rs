//! The module generated from `hello.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/hello.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = hello::DEFINITION;
    let _ = hello::DEFINITION_ID;
}
