//! PLACEHOLDER (being written).
/// Placeholder.
#[derive(Debug, Clone)]
pub struct History;
/// Placeholder.
#[derive(Debug, Clone)]
pub struct HistoryEvent;
/// Placeholder.
#[derive(Debug, Clone)]
pub struct EventType;
