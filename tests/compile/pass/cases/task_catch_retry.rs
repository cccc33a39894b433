//! The module generated from `task_catch_retry.asl.json` compiles warning-free, with every public item documented.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/task_catch_retry.asl.json");

pub(crate) fn main() {
    // The module's API exists with the documented types.
    let _: &str = task_catch_retry::DEFINITION;
    let _ = task_catch_retry::DEFINITION_ID;
}
