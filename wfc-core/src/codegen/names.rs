//! Rust identifiers for things a definition names: handler methods, state variants, modules.
//!
//! Why this is careful: names come from untrusted definitions and must become identifiers that
//! are valid, deterministic, collision-free and warning-free (`non_snake_case`,
//! `non_camel_case_types`, `confusable_idents`). Identifiers are therefore ASCII only: every
//! other character separates words, and a name with nothing left gets a fixed fallback.

use std::collections::BTreeSet;

use heck::{ToSnakeCase, ToUpperCamelCase};

/// Strict, reserved and weak keywords (2015-2024 editions). A name equal to one gets a `_` suffix:
/// raw identifiers cannot spell `self`, `Self`, `super` or `crate`, and a suffix works for all.
const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "gen",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "union",
    "macro_rules",
    "raw",
    "safe",
];

/// Keeps ASCII letters and digits; everything else (punctuation, whitespace, non-ASCII) becomes a
/// word break, so `Check "Stock"` and `Prüfen` give `Check Stock` and `Pr fen`.
fn ascii_words(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' }).collect()
}

fn finish(mut ident: String, fallback: &str, digit_prefix: &str) -> String {
    if ident.is_empty() {
        ident = fallback.to_owned();
    }
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert_str(0, digit_prefix);
    }
    if KEYWORDS.contains(&ident.as_str()) {
        ident.push('_');
    }
    ident
}

/// A snake_case identifier for `name` (`fallback` when nothing usable is left).
pub(crate) fn snake(name: &str, fallback: &str) -> String {
    finish(ascii_words(name).to_snake_case(), fallback, "_")
}

/// An UpperCamelCase identifier for `name` (`fallback` when nothing usable is left).
pub(crate) fn camel(name: &str, fallback: &str) -> String {
    // `S` keeps the result UpperCamel (a leading `_` would be a non-camel-case warning).
    finish(ascii_words(name).to_upper_camel_case(), fallback, "S")
}

/// The last segment of a Task resource (`arn:aws:lambda:…:function:CheckStock` → `CheckStock`,
/// `https://example.com/api/pay` → `pay`), which names its handler method.
pub(crate) fn resource_tail(resource: &str) -> &str {
    let trimmed = resource.trim_end_matches([':', '/']);
    match trimmed.rfind([':', '/']) {
        Some(i) => trimmed.get(i + 1..).unwrap_or(trimmed),
        None => trimmed,
    }
}

/// Makes each candidate unique in order: the second `check` becomes `check_2` (snake) or
/// `Check2` (camel), skipping suffixes that are themselves taken. `reserved` names are never used.
pub(crate) fn dedupe(candidates: Vec<String>, camel_case: bool, reserved: &[&str]) -> Vec<String> {
    let mut taken: BTreeSet<String> = reserved.iter().map(|s| (*s).to_owned()).collect();
    let mut out = Vec::with_capacity(candidates.len());
    for base in candidates {
        let mut name = base.clone();
        let mut n = 2u64;
        while taken.contains(&name) {
            name = if camel_case { format!("{base}{n}") } else { format!("{base}_{n}") };
            n += 1;
        }
        taken.insert(name.clone());
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_names() {
        assert_eq!(snake("CheckStock", "task"), "check_stock");
        assert_eq!(snake("check-stock.v2", "task"), "check_stock_v2");
        assert_eq!(snake("1st step", "task"), "_1st_step");
        assert_eq!(snake("type", "task"), "type_");
        assert_eq!(snake("self", "task"), "self_");
        assert_eq!(snake("\"#}*/", "task"), "task");
        assert_eq!(snake("Prüfen", "task"), "pr_fen");
        assert_eq!(snake("\u{202e}evil", "task"), "evil");
        assert_eq!(snake("", "task"), "task");
    }

    #[test]
    fn camel_names() {
        assert_eq!(camel("Check Stock", "State"), "CheckStock");
        assert_eq!(camel("self", "State"), "Self_");
        assert_eq!(camel("42", "State"), "S42");
        assert_eq!(camel("r#\"", "State"), "R");
        assert_eq!(camel("日本", "State"), "State");
    }

    #[test]
    fn resource_tails() {
        assert_eq!(resource_tail("arn:aws:lambda:us-east-1:123:function:CheckStock"), "CheckStock");
        assert_eq!(resource_tail("https://example.com/api/pay/"), "pay");
        assert_eq!(resource_tail("plain"), "plain");
        assert_eq!(resource_tail(":::"), "");
    }

    #[test]
    fn dedupe_in_order() {
        let names = dedupe(vec!["a".into(), "a".into(), "a_2".into(), "a".into()], false, &["run"]);
        assert_eq!(names, ["a", "a_2", "a_2_2", "a_3"]);
        assert_eq!(dedupe(vec!["Run".into(), "Run".into()], true, &[]), ["Run", "Run2"]);
        assert_eq!(dedupe(vec!["run".into()], false, &["run"]), ["run_2"]);
    }
}
