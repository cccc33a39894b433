//! Placeholders in AWS-recorded expectations (../shared/conformance/README.md, "Comparing with
//! placeholders"): the recordings mask values that change per run, and this module compares an
//! expected value holding such masks with what wfc produced.
//!
//! - A token `<name>` or `<name:N>` inside an expected string stands for any non-empty text.
//!   A numbered token (`<uuid:1>`) must stand for the same text everywhere in one case: the first
//!   match binds it, later ones must repeat the bound text.
//! - An expected string equal to one of the case's placeholder *words* (`date`, `RequestId`, ...;
//!   the entries of `placeholders` that are not `<...>` tokens) stands for any value at all: the
//!   recordings put them in place of header arrays and numbers too.
//!
//! Everything else compares exactly, numbers by value, as [`crate::diff`] does.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::diff::{self, Difference};

/// Compares values against one case's expectations; keeps the bindings of its numbered tokens.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    /// Whole-string placeholder words.
    words: HashSet<String>,
    /// Numbered token (`<uuid:1>`) → the text it stood for at its first match.
    bindings: HashMap<String, String>,
}

/// One piece of an expected string: literal text, or a token.
#[derive(Debug, Clone, PartialEq)]
enum Segment<'a> {
    Text(&'a str),
    /// A token; `numbered` ones bind consistently.
    Token {
        token: &'a str,
        numbered: bool,
    },
}

impl Matcher {
    /// A matcher for a case whose `placeholders` field lists `placeholders`.
    pub(crate) fn new(placeholders: &[String]) -> Matcher {
        let words = placeholders.iter().filter(|p| !(p.starts_with('<') && p.ends_with('>'))).cloned().collect();
        Matcher { words, bindings: HashMap::new() }
    }

    /// The first place where `actual` does not match `expected`, or `None` when it matches.
    /// Bindings made while matching are kept for the next comparisons of the same case.
    pub(crate) fn first_difference(&mut self, expected: &Value, actual: &Value) -> Option<Difference> {
        let mut pointer = String::new();
        self.walk(expected, actual, &mut pointer)
    }

    /// Whether `actual` matches the expected string `expected` (tokens and words applied).
    pub(crate) fn matches_str(&mut self, expected: &str, actual: &str) -> bool {
        self.first_difference(&Value::String(expected.to_owned()), &Value::String(actual.to_owned())).is_none()
    }

    fn walk(&mut self, expected: &Value, actual: &Value, pointer: &mut String) -> Option<Difference> {
        let differ = |p: &String| Difference {
            pointer: p.clone(),
            expected: Some(expected.clone()),
            actual: Some(actual.clone()),
        };
        match (expected, actual) {
            (Value::String(w), _) if self.words.contains(w) => None,
            (Value::String(e), Value::String(a)) => (!self.match_text(e, a)).then(|| differ(pointer)),
            (Value::Array(a), Value::Array(b)) => {
                let len = pointer.len();
                for i in 0..a.len().max(b.len()) {
                    pointer.push_str(&format!("/{i}"));
                    let found = match (a.get(i), b.get(i)) {
                        (Some(x), Some(y)) => self.walk(x, y, pointer),
                        (x, y) => {
                            Some(Difference { pointer: pointer.clone(), expected: x.cloned(), actual: y.cloned() })
                        }
                    };
                    if found.is_some() {
                        return found;
                    }
                    pointer.truncate(len);
                }
                None
            }
            (Value::Object(a), Value::Object(b)) => {
                let len = pointer.len();
                let keys: Vec<&String> = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
                for key in keys {
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    let found = match (a.get(key), b.get(key)) {
                        (Some(x), Some(y)) => self.walk(x, y, pointer),
                        (x, y) => {
                            Some(Difference { pointer: pointer.clone(), expected: x.cloned(), actual: y.cloned() })
                        }
                    };
                    if found.is_some() {
                        return found;
                    }
                    pointer.truncate(len);
                }
                None
            }
            _ => diff::first_difference(expected, actual).map(|_| differ(pointer)),
        }
    }

    /// Matches one string; on success the numbered tokens it bound are kept.
    fn match_text(&mut self, expected: &str, actual: &str) -> bool {
        let segments = segments(expected);
        if segments.iter().all(|s| matches!(s, Segment::Text(_))) {
            return expected == actual;
        }
        let mut bindings = self.bindings.clone();
        if match_segments(&segments, actual, &mut bindings) {
            self.bindings = bindings;
            true
        } else {
            false
        }
    }
}

/// Splits an expected string into literal text and `<token>`s (`<` + letters, digits, `_`, `-`,
/// `.`, `:` + `>`; anything else between angle brackets is literal text).
fn segments(s: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut literal_start = 0;
    let mut i = 0;
    let bytes = s.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b'<'
            && let Some(len) = token_len(&s[i..])
        {
            if literal_start < i {
                out.push(Segment::Text(&s[literal_start..i]));
            }
            let token = &s[i..i + len];
            out.push(Segment::Token { token, numbered: is_numbered(token) });
            i += len;
            literal_start = i;
        } else {
            i += 1;
        }
    }
    if literal_start < s.len() {
        out.push(Segment::Text(&s[literal_start..]));
    }
    out
}

/// The length of the token at the start of `s` (which starts with `<`), if there is one.
fn token_len(s: &str) -> Option<usize> {
    let end = s[1..].find('>')? + 1;
    let inner = &s[1..end];
    let first = inner.chars().next()?;
    let ok = first.is_ascii_alphabetic()
        && inner.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    ok.then_some(end + 1)
}

/// `<uuid:1>`: a name, a colon and a number.
fn is_numbered(token: &str) -> bool {
    let inner = &token[1..token.len() - 1];
    inner
        .rsplit_once(':')
        .is_some_and(|(name, n)| !name.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Backtracking match of `segments` against all of `s`. A token takes at least one character;
/// when a literal follows it, only the places where that literal occurs are tried.
fn match_segments(segments: &[Segment<'_>], s: &str, bindings: &mut HashMap<String, String>) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return s.is_empty();
    };
    match first {
        Segment::Text(t) => s.strip_prefix(t).is_some_and(|tail| match_segments(rest, tail, bindings)),
        Segment::Token { token, numbered: true } if bindings.contains_key(*token) => {
            let bound = bindings[*token].clone();
            s.strip_prefix(bound.as_str()).is_some_and(|tail| match_segments(rest, tail, bindings))
        }
        Segment::Token { token, numbered } => {
            let next_literal = match rest.first() {
                Some(Segment::Text(t)) => Some(*t),
                _ => None,
            };
            let ends = s.char_indices().map(|(i, c)| i + c.len_utf8());
            for end in ends {
                if next_literal.is_some_and(|t| !s[end..].starts_with(t)) {
                    continue;
                }
                if *numbered {
                    bindings.insert((*token).to_owned(), s[..end].to_owned());
                }
                if match_segments(rest, &s[end..], bindings) {
                    return true;
                }
                if *numbered {
                    bindings.remove(*token);
                }
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_stand_for_any_non_empty_text() {
        let mut m = Matcher::new(&[]);
        assert!(m.matches_str("arn:<partition>:states:<region>:1:x", "arn:aws:states:us-east-1:1:x"));
        assert!(!m.matches_str("arn:<partition>:states", "arn::states"), "a token needs one character");
        assert!(!m.matches_str("a<region>b", "a-c"), "the literal parts still count");
        assert!(m.matches_str("<x>", "anything at all"));
        assert!(m.matches_str("a < b > c", "a < b > c"), "spaces make it literal text");
        assert!(!m.matches_str("a < b > c", "a  c"));
    }

    #[test]
    fn numbered_tokens_bind_consistently_across_one_case() {
        let mut m = Matcher::new(&["<uuid:1>".into()]);
        assert!(m.matches_str("id <uuid:1>", "id 1234"));
        assert!(m.matches_str("again <uuid:1>!", "again 1234!"));
        assert!(!m.matches_str("again <uuid:1>", "again 9999"), "bound to 1234 already");
        // A different number is a different token.
        assert!(m.matches_str("<uuid:2>", "9999"));
        // Within one string too: the second occurrence repeats the first.
        let mut m = Matcher::new(&[]);
        assert!(m.first_difference(&json!(["<t:1>-<t:1>"]), &json!(["ab-ab"])).is_none());
        assert!(m.first_difference(&json!("<u:1>-<u:1>"), &json!("ab-cd")).is_some());
        // A failed match binds nothing.
        let mut m = Matcher::new(&[]);
        assert!(!m.matches_str("x<uuid:1>y", "x123z"));
        assert!(m.matches_str("<uuid:1>", "other"));
    }

    #[test]
    fn whole_string_words_match_any_value() {
        let mut m = Matcher::new(&["date".into(), "<uuid:1>".into()]);
        let expected = json!({"headers": {"date": "date", "n": "date"}, "v": "date-ish"});
        let actual = json!({"headers": {"date": ["Mon, 1 Jan"], "n": 5}, "v": "date-ish"});
        assert!(m.first_difference(&expected, &actual).is_none());
        // Only whole strings: a word inside a longer string is literal text.
        assert!(m.first_difference(&json!("the date"), &json!("the day")).is_some());
        // A token listed in placeholders is not a word.
        assert!(m.first_difference(&json!("<uuid:1>"), &json!(5)).is_some());
    }

    #[test]
    fn mismatches_are_located() {
        let mut m = Matcher::new(&[]);
        let d = m.first_difference(&json!({"a": [1, "<region>"]}), &json!({"a": [1, 2]})).unwrap();
        assert_eq!(d.pointer, "/a/1");
        let d = m.first_difference(&json!({"a": 1}), &json!({"a": 1, "b": 2})).unwrap();
        assert_eq!((d.pointer.as_str(), d.expected), ("/b", None));
        assert!(m.first_difference(&json!(1), &json!(1.0)).is_none());
        assert!(m.first_difference(&json!(null), &json!("null")).is_some());
    }
}
