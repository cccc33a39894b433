//! PLACEHOLDER (being written): the Amazon States Language front end.
use crate::{Diagnostics, Loaded, Source};

/// Parses, validates and lowers an ASL definition.
pub fn load(source: Source<'_>) -> Result<Loaded, Diagnostics> {
    let _ = source;
    Err(Diagnostics::default())
}
