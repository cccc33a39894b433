//! Serde for an optional JSON value whose `null` is a value: `Some(Value::Null)` (a definition
//! wrote `"Result": null`) and `None` (it wrote nothing) must stay different through the IR's
//! JSON form, which generated code embeds and loads. Plain `Option<Value>` would read `null`
//! back as `None`, so the compiled engine and the interpreter would disagree.
//!
//! Use on a field as
//! `#[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::present::value")]`:
//! `None` is written as no field at all, and any value present, `null` included, reads as `Some`.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Reads a present field as `Some(value)`, `null` included (an absent one is `None` through
/// `#[serde(default)]`).
pub(crate) fn value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::value")]
        v: Option<Value>,
    }

    #[test]
    fn null_and_absent_stay_apart() {
        for original in [Holder { v: None }, Holder { v: Some(Value::Null) }, Holder { v: Some(json!({"a": null})) }] {
            let text = serde_json::to_string(&original).unwrap();
            assert_eq!(serde_json::from_str::<Holder>(&text).unwrap(), original, "{text}");
        }
        assert_eq!(serde_json::to_string(&Holder { v: None }).unwrap(), "{}");
        assert_eq!(serde_json::to_string(&Holder { v: Some(Value::Null) }).unwrap(), r#"{"v":null}"#);
    }
}
