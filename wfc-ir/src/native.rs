//! Choice comparisons with their literal prepared at build time, and the comparison rules they
//! share with the runtime's general path.
//!
//! The optimizer's `native-choice` pass turns [`Operand::Literal`](crate::Operand::Literal) into
//! [`Operand::Native`](crate::Operand::Native) for the operators whose literal needs work
//! before it can be compared: a timestamp literal is parsed once into an instant, a number is
//! split once into its exact integer and its `f64`, and a `StringMatches` pattern is tokenized
//! once. The runtime then compares the variable's value against that form with no re-parsing
//! per evaluation; the results are those of the general rules ([`compare_numbers`],
//! [`Pattern::matches`], [`crate::timestamp::parse`]), which the runtime also uses for `*Path`
//! operands.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::graph::Operator;

/// A Choice literal with its prepared form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SerializedNative", into = "SerializedNative")]
pub struct NativeLiteral {
    literal: Value,
    form: NativeForm,
}

/// The prepared form of a literal.
#[derive(Debug, Clone, PartialEq)]
pub enum NativeForm {
    /// A number for the `Numeric*` operators.
    Number(NativeNumber),
    /// An instant for the `Timestamp*` operators.
    Timestamp(jiff::Timestamp),
    /// A tokenized `StringMatches` pattern.
    Pattern(Pattern),
}

impl NativeLiteral {
    /// The prepared form of `literal` for `operator`, or `None` when the operator's literal
    /// needs no preparing (strings, Booleans, the `Is*` tests) or the literal is not of the
    /// operator's type (the comparison is then always false, which the general path gives).
    pub fn compile(operator: Operator, literal: &Value) -> Option<NativeLiteral> {
        use Operator as O;
        let form = match operator {
            O::NumericEquals
            | O::NumericLessThan
            | O::NumericGreaterThan
            | O::NumericLessThanEquals
            | O::NumericGreaterThanEquals => NativeForm::Number(NativeNumber::new(literal.as_number()?)),
            O::TimestampEquals
            | O::TimestampLessThan
            | O::TimestampGreaterThan
            | O::TimestampLessThanEquals
            | O::TimestampGreaterThanEquals => NativeForm::Timestamp(crate::timestamp::parse(literal.as_str()?).ok()?),
            O::StringMatches => NativeForm::Pattern(Pattern::parse(literal.as_str()?)),
            _ => return None,
        };
        Some(NativeLiteral { literal: literal.clone(), form })
    }

    /// The literal as written.
    pub fn literal(&self) -> &Value {
        &self.literal
    }

    /// The prepared form.
    pub fn form(&self) -> &NativeForm {
        &self.form
    }

    /// `value <operator> literal`, with the rules of the general path: a value of the wrong
    /// type (or a string that is not a timestamp) makes the comparison false.
    pub fn compare(&self, operator: Operator, value: &Value) -> bool {
        let order = match &self.form {
            NativeForm::Pattern(p) => return value.as_str().is_some_and(|text| p.matches(text)),
            NativeForm::Number(n) => value.as_number().and_then(|v| n.compare(v)),
            NativeForm::Timestamp(t) => timestamp_order(value, *t),
        };
        order_holds(operator, order)
    }
}

/// Whether `order` (the variable's value compared with the operand; `None` when they do not
/// compare) satisfies an ordering operator (`Numeric*`, `Timestamp*`, `String*` other than
/// `StringMatches`). Any other operator is false.
pub fn order_holds(operator: Operator, order: Option<Ordering>) -> bool {
    use Operator as O;
    match operator {
        O::NumericEquals | O::TimestampEquals | O::StringEquals => order == Some(Ordering::Equal),
        O::NumericLessThan | O::TimestampLessThan | O::StringLessThan => order == Some(Ordering::Less),
        O::NumericGreaterThan | O::TimestampGreaterThan | O::StringGreaterThan => order == Some(Ordering::Greater),
        O::NumericLessThanEquals | O::TimestampLessThanEquals | O::StringLessThanEquals => {
            matches!(order, Some(Ordering::Less | Ordering::Equal))
        }
        O::NumericGreaterThanEquals | O::TimestampGreaterThanEquals | O::StringGreaterThanEquals => {
            matches!(order, Some(Ordering::Greater | Ordering::Equal))
        }
        _ => false,
    }
}

/// `value` (a timestamp string) compared with the instant `literal`; `None` when `value` is not
/// a string or not an ASL timestamp.
pub fn timestamp_order(value: &Value, literal: jiff::Timestamp) -> Option<Ordering> {
    value.as_str().and_then(|s| crate::timestamp::parse(s).ok()).map(|v| v.cmp(&literal))
}

/// A numeric literal split once into its exact integer (when it is one) and its `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NativeNumber {
    int: Option<i128>,
    float: Option<f64>,
}

impl NativeNumber {
    fn new(n: &Number) -> NativeNumber {
        NativeNumber { int: exact_int(n), float: n.as_f64() }
    }

    /// A number from its parts as [`NativeNumber::parts`] gives them (generated code writes
    /// the parts of a Choice literal as constants).
    pub const fn from_parts(int: Option<i128>, float: Option<f64>) -> NativeNumber {
        NativeNumber { int, float }
    }

    /// The literal's exact integer (when it is one) and its `f64`.
    pub fn parts(&self) -> (Option<i128>, Option<f64>) {
        (self.int, self.float)
    }

    /// `value` compared with this number, as [`compare_numbers`] compares them.
    pub fn compare(&self, value: &Number) -> Option<Ordering> {
        match (exact_int(value), self.int) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => value.as_f64()?.partial_cmp(&self.float?),
        }
    }
}

fn exact_int(n: &Number) -> Option<i128> {
    n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
}

/// Compares two JSON numbers: integers exactly (also across the i64/u64 split), otherwise as f64.
pub fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    NativeNumber::new(b).compare(a)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Char(char),
    Star,
}

/// A `StringMatches` pattern: `*` matches any run of characters (including none); `\*` and
/// `\\` match a literal star and backslash; a backslash before anything else is itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    tokens: Box<[Token]>,
}

impl Pattern {
    /// Tokenizes `pattern`.
    pub fn parse(pattern: &str) -> Pattern {
        let mut out = Vec::with_capacity(pattern.len());
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => out.push(Token::Star),
                '\\' => match chars.peek() {
                    Some('*') | Some('\\') => {
                        if let Some(escaped) = chars.next() {
                            out.push(Token::Char(escaped));
                        }
                    }
                    _ => out.push(Token::Char('\\')),
                },
                c => out.push(Token::Char(c)),
            }
        }
        Pattern { tokens: out.into() }
    }

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let pattern = &self.tokens;
        let text: Vec<char> = text.chars().collect();
        // Greedy matching with one backtrack point: linear in practice, O(n·m) at worst.
        let (mut t, mut p) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match pattern.get(p) {
                Some(Token::Char(c)) if Some(c) == text.get(t) => {
                    t += 1;
                    p += 1;
                }
                Some(Token::Star) => {
                    star = Some((p, t));
                    p += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        p = sp + 1;
                        t = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        pattern.get(p..).is_some_and(|rest| rest.iter().all(|tok| *tok == Token::Star))
    }
}

/// How a [`NativeLiteral`] travels in the IR's JSON: the operator family and the literal; the
/// prepared form is rebuilt (once) when the IR is loaded.
#[derive(Serialize, Deserialize)]
struct SerializedNative {
    kind: NativeKind,
    literal: Value,
}

#[derive(Serialize, Deserialize)]
enum NativeKind {
    Number,
    Timestamp,
    Pattern,
}

impl From<NativeLiteral> for SerializedNative {
    fn from(n: NativeLiteral) -> SerializedNative {
        let kind = match n.form {
            NativeForm::Number(_) => NativeKind::Number,
            NativeForm::Timestamp(_) => NativeKind::Timestamp,
            NativeForm::Pattern(_) => NativeKind::Pattern,
        };
        SerializedNative { kind, literal: n.literal }
    }
}

impl TryFrom<SerializedNative> for NativeLiteral {
    type Error = String;

    fn try_from(s: SerializedNative) -> Result<NativeLiteral, String> {
        let operator = match s.kind {
            NativeKind::Number => Operator::NumericEquals,
            NativeKind::Timestamp => Operator::TimestampEquals,
            NativeKind::Pattern => Operator::StringMatches,
        };
        NativeLiteral::compile(operator, &s.literal)
            .ok_or_else(|| format!("the literal {} does not fit its comparison", s.literal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns() {
        let m = |text: &str, pattern: &str| Pattern::parse(pattern).matches(text);
        assert!(m("log-2024.txt", "log-*.txt"));
        assert!(m("", "*"));
        assert!(m("abc", "a*b*c"));
        assert!(!m("abc", "a*d"));
        assert!(m("a*c", r"a\*c"));
        assert!(!m("abc", r"a\*c"));
        assert!(m(r"a\c", r"a\\c"));
        assert!(m("a?", "a?"));
        assert!(m("mississippi", "*sip*"));
    }

    #[test]
    fn numbers_compare_like_the_general_rule() {
        let n = |v: Value| v.as_number().cloned().unwrap();
        let values = [json!(1), json!(1.0), json!(-1), json!(u64::MAX), json!(1.5), json!(9007199254740993_i64)];
        for a in &values {
            for b in &values {
                let native = NativeLiteral::compile(Operator::NumericLessThan, b).unwrap();
                let NativeForm::Number(nb) = native.form() else { panic!() };
                assert_eq!(nb.compare(&n(a.clone())), compare_numbers(&n(a.clone()), &n(b.clone())), "{a} {b}");
            }
        }
        assert_eq!(compare_numbers(&n(json!(1)), &n(json!(1.0))), Some(Ordering::Equal));
        assert_eq!(
            compare_numbers(&n(json!(9007199254740993_i64)), &n(json!(9007199254740992_i64))),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn compiles_only_what_needs_preparing_and_round_trips() {
        assert!(NativeLiteral::compile(Operator::StringEquals, &json!("a")).is_none());
        assert!(NativeLiteral::compile(Operator::NumericEquals, &json!("a")).is_none());
        assert!(NativeLiteral::compile(Operator::TimestampEquals, &json!("yesterday")).is_none());
        let t = NativeLiteral::compile(Operator::TimestampLessThan, &json!("2016-03-14T01:59:00Z")).unwrap();
        assert!(t.compare(Operator::TimestampLessThan, &json!("2016-03-14T02:58:00+01:00")));
        assert!(!t.compare(Operator::TimestampLessThan, &json!("not a time")));
        assert!(!t.compare(Operator::TimestampLessThan, &json!(5)));
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(text, r#"{"kind":"Timestamp","literal":"2016-03-14T01:59:00Z"}"#);
        assert_eq!(serde_json::from_str::<NativeLiteral>(&text).unwrap(), t);
        assert!(serde_json::from_str::<NativeLiteral>(r#"{"kind":"Timestamp","literal":3}"#).is_err());
    }
}
