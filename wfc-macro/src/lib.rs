//! PLACEHOLDER (being written): `include_workflow!`.
use proc_macro::TokenStream;

/// Compiles a workflow definition into a module.
#[proc_macro]
pub fn include_workflow(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
