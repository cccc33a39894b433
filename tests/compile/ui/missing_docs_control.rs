//! Negative control for the pass tests: `deny(missing_docs)` really rejects an undocumented item
//! next to generated code, so the generated module passing it means its items are documented.
#![deny(missing_docs)]

wfc_runtime::include_workflow!("ui/fixtures/two_tasks.asl.json");

pub fn undocumented() {}

fn main() {}
