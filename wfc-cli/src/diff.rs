//! The first difference between two JSON values, named by a JSON Pointer (RFC 6901), so a failing
//! case says *where* its output went wrong rather than printing two large documents.

use serde_json::Value;

/// Where two values first differ, and what each side has there.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Difference {
    /// JSON Pointer of the differing node (`""` is the whole document).
    pub(crate) pointer: String,
    /// The expected value at `pointer` (`None`: absent).
    pub(crate) expected: Option<Value>,
    /// The actual value at `pointer` (`None`: absent).
    pub(crate) actual: Option<Value>,
}

impl Difference {
    /// A one-line description: `at /a/0: expected 1, got "1"`.
    pub(crate) fn describe(&self) -> String {
        self.describe_as("expected", "got")
    }

    /// Like [`Difference::describe`] with other names for the two sides:
    /// `at /a/0: interp 1, compiled 2`.
    pub(crate) fn describe_as(&self, left: &str, right: &str) -> String {
        let show = |v: &Option<Value>| match v {
            Some(v) => short(v),
            None => "(absent)".to_owned(),
        };
        let at = if self.pointer.is_empty() { "(root)" } else { self.pointer.as_str() };
        format!("at {at}: {left} {}, {right} {}", show(&self.expected), show(&self.actual))
    }
}

/// Compact JSON, cut to a readable length.
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 { format!("{}…", s.chars().take(200).collect::<String>()) } else { s }
}

/// The first difference in document order, or `None` when equal. Numbers compare by value
/// (`1` equals `1.0`), because JSON does not distinguish them and engines may print either.
pub(crate) fn first_difference(expected: &Value, actual: &Value) -> Option<Difference> {
    let mut pointer = String::new();
    walk(expected, actual, &mut pointer)
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    if a == b {
        return true;
    }
    match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
        (Some(x), Some(y), _, _) => x == y,
        (_, _, Some(x), Some(y)) => x == y,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

fn walk(expected: &Value, actual: &Value, pointer: &mut String) -> Option<Difference> {
    let differ =
        |p: &String| Difference { pointer: p.clone(), expected: Some(expected.clone()), actual: Some(actual.clone()) };
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => (!numbers_equal(a, b)).then(|| differ(pointer)),
        (Value::Array(a), Value::Array(b)) => {
            let len = pointer.len();
            for i in 0..a.len().max(b.len()) {
                pointer.push('/');
                pointer.push_str(&i.to_string());
                let found = match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(x, y, pointer),
                    (x, y) => Some(Difference { pointer: pointer.clone(), expected: x.cloned(), actual: y.cloned() }),
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
            // Expected keys first, in the expected document's order, then keys only the actual has.
            let keys = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k)));
            for key in keys {
                pointer.push('/');
                pointer.push_str(&escape(key));
                let found = match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(x, y, pointer),
                    (x, y) => Some(Difference { pointer: pointer.clone(), expected: x.cloned(), actual: y.cloned() }),
                };
                if found.is_some() {
                    return found;
                }
                pointer.truncate(len);
            }
            None
        }
        (a, b) => (a != b).then(|| differ(pointer)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_have_no_difference() {
        assert_eq!(first_difference(&json!({"a": [1, {"b": null}]}), &json!({"a": [1, {"b": null}]})), None);
        assert!(first_difference(&json!(1), &json!(1.0)).is_none());
    }

    #[test]
    fn points_at_the_first_difference() {
        let d = first_difference(&json!({"a": [1, {"b/c": 2}]}), &json!({"a": [1, {"b/c": "2"}]})).unwrap();
        assert_eq!(d.pointer, "/a/1/b~1c");
        assert_eq!(d.expected, Some(json!(2)));
        assert_eq!(d.actual, Some(json!("2")));
        assert_eq!(d.describe(), "at /a/1/b~1c: expected 2, got \"2\"");
    }

    #[test]
    fn missing_and_extra_members() {
        let d = first_difference(&json!({"a": 1, "b": 2}), &json!({"a": 1})).unwrap();
        assert_eq!((d.pointer.as_str(), d.actual), ("/b", None));
        let d = first_difference(&json!({"a": 1}), &json!({"a": 1, "z": 0})).unwrap();
        assert_eq!((d.pointer.as_str(), d.expected), ("/z", None));
        let d = first_difference(&json!([1]), &json!([1, 2])).unwrap();
        assert_eq!(d.pointer, "/1");
        let d = first_difference(&json!("x"), &json!(["x"])).unwrap();
        assert_eq!(d.describe(), "at (root): expected \"x\", got [\"x\"]");
    }
}
