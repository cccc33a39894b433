//! PLACEHOLDER (being written).
/// Placeholder.
#[derive(Debug, Clone)]
pub struct TaskContext;
