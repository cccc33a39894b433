//! Generated code names everything by `::`-rooted paths: it compiles inside a module without the
//! prelude, and with the runtime reached through a re-export (`crate = …`).
#![deny(warnings, missing_docs)]

/// A facade over the runtime, as a crate that renames or wraps `wfc-runtime` would have.
pub mod facade {
    pub use ::wfc_runtime::*;
}

#[no_implicit_prelude]
mod bare {
    ::wfc_runtime::include_workflow!("fixtures/parallel_nested.asl.json");
}

::wfc_runtime::include_workflow!(
    path = "fixtures/hello.asl.json",
    name = "renamed",
    crate = crate::no_implicit_prelude::facade
);

pub(crate) fn main() {
    let _ = bare::parallel_nested::DEFINITION;
    let _ = renamed::State::Hello(::wfc_runtime::Value::Null).name();
}
