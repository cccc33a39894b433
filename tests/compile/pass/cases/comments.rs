//! The module generated from `comments.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/comments.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = comments::DEFINITION;
    let _ = comments::DEFINITION_ID;
}
