//! PLACEHOLDER (being written): JSON and YAML parsed into a spanned value tree.
