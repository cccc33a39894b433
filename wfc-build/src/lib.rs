//! PLACEHOLDER (being written): the build.rs helper.
