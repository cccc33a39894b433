//! Direct field access: a `$` path of names and indices only (`$.a.b[0]`), compiled into the
//! list of its steps, which is followed with one `get` per step instead of through the general
//! JSONPath evaluator (no root, shape or segment dispatch), and which can also move the node
//! out of an owned document instead of copying it.
//!
//! The optimizer's `direct-paths` pass produces it ([`super::Path::compile_direct`]); without the
//! pass every path is evaluated by the general evaluator, with the same results.

use serde_json::Value;

use super::ast::Segment;
use super::eval::resolve_index;

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// An object member.
    Name(Box<str>),
    /// An array element; negative indices count from the end.
    Index(i64),
}

/// The steps of a singular `$` path, in order (never empty: `$` itself needs no compiling).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    steps: Box<[Field]>,
}

impl FieldPath {
    /// The compiled form of `segments`, when every one is a single name or index and there is
    /// at least one.
    pub(crate) fn compile(segments: &[Segment]) -> Option<FieldPath> {
        if segments.is_empty() {
            return None;
        }
        let steps = segments
            .iter()
            .map(|s| {
                s.as_singular().map(|st| match st {
                    super::ast::SingularStep::Name(n) => Field::Name(n.into()),
                    super::ast::SingularStep::Index(i) => Field::Index(i),
                })
            })
            .collect::<Option<Box<[Field]>>>()?;
        Some(FieldPath { steps })
    }

    /// The steps.
    pub fn steps(&self) -> &[Field] {
        &self.steps
    }

    /// The node the steps lead to in `doc`, by reference; `None` when a step is missing.
    #[inline]
    pub fn get<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        let mut cur = doc;
        for step in self.steps.iter() {
            cur = match (step, cur) {
                (Field::Name(n), Value::Object(m)) => m.get(&**n)?,
                (Field::Index(i), Value::Array(a)) => a.get(resolve_index(a.len(), *i)?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// The node the steps lead to, moved out of `doc` (which is consumed) instead of copied;
    /// `Err(doc)` gives the document back, untouched, when a step is missing.
    pub fn take(&self, mut doc: Value) -> Result<Value, Value> {
        if self.get(&doc).is_none() {
            return Err(doc);
        }
        let mut cur = &mut doc;
        for step in self.steps.iter() {
            let next = match (step, cur) {
                (Field::Name(n), Value::Object(m)) => m.get_mut(&**n),
                (Field::Index(i), Value::Array(a)) => {
                    let len = a.len();
                    resolve_index(len, *i).and_then(|at| a.get_mut(at))
                }
                _ => None,
            };
            // `get` found every step, so this is never `None`; a `Null` result rather than a
            // panic if that ever stopped holding.
            match next {
                Some(v) => cur = v,
                None => return Ok(Value::Null),
            }
        }
        Ok(std::mem::take(cur))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Path;
    use serde_json::json;

    #[test]
    fn gets_and_takes_like_the_general_evaluator() {
        let doc = json!({"a": {"b": [10, {"c": "x"}]}, "k-1": 2});
        for text in ["$.a.b[1].c", "$.a.b[-2]", "$['k-1']", "$.a", "$.a.b[5]", "$.nope.c", "$.a.b.c", "$.a.b[1]['c']"] {
            let mut p = Path::parse(text).unwrap();
            let general = p.select(&doc).ok();
            assert!(p.compile_direct(), "{text}");
            let direct = p.direct().unwrap();
            assert_eq!(direct.get(&doc).cloned(), general, "{text}");
            assert_eq!(p.select(&doc).ok(), general, "{text}");
            assert_eq!(direct.take(doc.clone()).ok(), general, "{text}");
            if general.is_none() {
                assert_eq!(direct.take(doc.clone()), Err(doc.clone()), "{text}: the document comes back untouched");
            }
        }
    }

    #[test]
    fn only_singular_input_paths_compile() {
        for text in ["$", "$$.Execution.Id", "$.a[*]", "$..a", "$.a['b','c']", "$.a.length()", "$v.x", "$.a[0:1]"] {
            let mut p = Path::parse(text).unwrap();
            assert!(!p.compile_direct(), "{text}");
            assert!(p.direct().is_none(), "{text}");
        }
        let mut p = Path::parse("$.a").unwrap();
        assert!(p.compile_direct());
        assert!(!p.compile_direct(), "already compiled");
    }

    #[test]
    fn the_compiled_form_survives_serialization() {
        let mut p = Path::parse("$.a[0]").unwrap();
        assert_eq!(serde_json::to_value(&p).unwrap(), json!("$.a[0]"));
        p.compile_direct();
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(text, r#"{"path":"$.a[0]","direct":true}"#);
        let back: Path = serde_json::from_str(&text).unwrap();
        assert!(back.direct().is_some());
        let plain: Path = serde_json::from_str(r#""$.a[0]""#).unwrap();
        assert!(plain.direct().is_none());
        let bad = serde_json::from_str::<Path>(r#"{"path":"$$.x","direct":true}"#);
        assert!(bad.is_err(), "a path that cannot be direct is rejected, not silently slow");
    }
}
