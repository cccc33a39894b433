// A definition that compiles with a warning: the warning reaches rustc (as a deprecation note,
// stable Rust's only way for a proc macro to warn); denied here so the test sees it.
#![deny(deprecated)]

wfc_runtime::include_workflow!("ui/fixtures/definition_warning.asl.json");

fn main() {}
