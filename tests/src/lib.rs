//! Integration tests for wfc live in `tests/tests/`; this crate has no library code.
