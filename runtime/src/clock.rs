//! PLACEHOLDER (being written).
/// Placeholder.
#[derive(Debug, Clone)]
pub struct Clock;
/// Placeholder.
pub fn block_on_virtual() {}
