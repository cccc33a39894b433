//! PLACEHOLDER (being written): IR → Rust tokens.
use crate::{Settings, Source};

/// Generates the Rust module for a workflow.
pub fn generate(workflow: &wfc_ir::Workflow, source: Source<'_>, settings: &Settings) -> proc_macro2::TokenStream {
    let _ = (workflow, source, settings);
    proc_macro2::TokenStream::new()
}
