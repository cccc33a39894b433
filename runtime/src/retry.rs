//! PLACEHOLDER (being written).
