//! ASL intrinsic functions (`"key.$": "States.Format('{} items', $.count)"`): the syntax tree,
//! the parser, and the signatures both the compiler (arity and literal type checks) and the
//! runtime (evaluation, in `wfc_runtime::intrinsics`) rely on.
//!
//! # Syntax
//!
//! A call is `States.<Name>(arg, ...)`. An argument is a string literal in single quotes, a
//! number, `true`, `false`, `null`, a path into the input (`$.x`) or the context object
//! (`$$.Execution.Id`), or another call. Inside a string literal the reserved characters
//! `'`, `{`, `}` and `\` are written `\'`, `\{`, `\}` and `\\`; any other character after a
//! backslash, or a backslash at the very end, is an error (AWS fails such a definition). This is
//! the second of two escaping layers: the JSON (or YAML) string has already been decoded, so a
//! definition writes `"States.Format('it\\'s {}', $.x)"` in JSON.
//!
//! In the first argument of `States.Format`, `{}` is a placeholder and `\{`/`\}` are literal
//! braces, so the parser keeps that argument as its pieces ([`Arg::Template`]); a lone `{` or
//! `}` there is an error.
//!
//! Calls nest up to [`MAX_DEPTH`] deep (AWS allows 10 nested calls in a field); the bound also
//! keeps the recursive parser and evaluator from overflowing the stack on hostile input.
//!
//! Like [`Path`], an [`Intrinsic`] serializes as its text and re-parses on deserialize, so the
//! IR embedded in generated code stays readable and is checked again when it is loaded.

pub mod eval;
mod parser;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Number;

use crate::jsonpath::{Path, Root};

/// How deeply calls may nest inside one field (AWS's documented limit is 10).
pub const MAX_DEPTH: usize = 10;

/// The longest string `States.Base64Encode`, `States.Base64Decode` and `States.Hash` accept,
/// in characters (AWS's documented limit).
pub const MAX_STRING_INPUT: usize = 10_000;

/// The most elements `States.ArrayRange` may produce (AWS's documented limit).
pub const MAX_RANGE_LEN: usize = 1000;

/// A parsed intrinsic function call: the value of a `"key.$"` field that starts with `States.`.
#[derive(Debug, Clone)]
pub struct Intrinsic {
    text: String,
    call: Call,
    /// Whether [`Intrinsic::compile_direct_paths`] compiled some argument path (kept through
    /// serialization).
    direct: bool,
}

impl PartialEq for Intrinsic {
    fn eq(&self, other: &Intrinsic) -> bool {
        self.text == other.text
    }
}

impl Intrinsic {
    /// Parses `text` (already JSON-decoded) and checks arity and the types of arguments whose
    /// type is known without running it (literals and the results of nested calls).
    pub fn parse(text: &str) -> Result<Intrinsic, IntrinsicError> {
        let call = parser::parse(text)?;
        Ok(Intrinsic { text: text.to_owned(), call, direct: false })
    }

    /// The call's text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The outermost call.
    pub fn call(&self) -> &Call {
        &self.call
    }

    /// Compiles every argument path, at any depth, that is a `$` path of names and indices into
    /// direct field access ([`Path::compile_direct`]); returns whether any was compiled.
    pub fn compile_direct_paths(&mut self) -> bool {
        let changed = self.call.compile_direct_paths();
        self.direct |= changed;
        changed
    }

    /// Whether any argument, at any depth, reads the context object (`$$`).
    pub fn uses_context(&self) -> bool {
        self.call.any_path(&|p| p.root() != Root::Input)
    }

    /// Whether evaluating it draws from the execution's random source (`States.UUID`, or
    /// `States.MathRandom` without a seed), so it must be evaluated afresh on every attempt.
    pub fn uses_randomness(&self) -> bool {
        self.call
            .any_call(&|c| c.function == Function::Uuid || (c.function == Function::MathRandom && c.args.len() < 3))
    }
}

impl fmt::Display for Intrinsic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// An intrinsic serializes as its text; one whose argument paths were compiled for direct
/// access as `{"intrinsic": text, "direct": true}`, so the compiled form reaches generated code.
impl Serialize for Intrinsic {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.direct {
            SerializedIntrinsic::Compiled { intrinsic: self.text.clone(), direct: true }.serialize(s)
        } else {
            s.serialize_str(&self.text)
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SerializedIntrinsic {
    Text(String),
    Compiled { intrinsic: String, direct: bool },
}

impl<'de> Deserialize<'de> for Intrinsic {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Intrinsic, D::Error> {
        let (text, direct) = match SerializedIntrinsic::deserialize(d)? {
            SerializedIntrinsic::Text(text) => (text, false),
            SerializedIntrinsic::Compiled { intrinsic, direct } => (intrinsic, direct),
        };
        let mut parsed = Intrinsic::parse(&text).map_err(serde::de::Error::custom)?;
        if direct {
            parsed.compile_direct_paths();
        }
        Ok(parsed)
    }
}

/// One call: a function and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Which function.
    pub function: Function,
    /// The arguments, in order.
    pub args: Vec<Arg>,
}

impl Call {
    fn compile_direct_paths(&mut self) -> bool {
        self.args.iter_mut().fold(false, |changed, a| {
            changed
                | match a {
                    Arg::Path(p) => p.compile_direct(),
                    Arg::Call(c) => c.compile_direct_paths(),
                    _ => false,
                }
        })
    }

    fn any_path(&self, f: &dyn Fn(&Path) -> bool) -> bool {
        self.args.iter().any(|a| match a {
            Arg::Path(p) => f(p),
            Arg::Call(c) => c.any_path(f),
            _ => false,
        })
    }

    fn any_call(&self, f: &dyn Fn(&Call) -> bool) -> bool {
        f(self) || self.args.iter().any(|a| matches!(a, Arg::Call(c) if c.any_call(f)))
    }
}

/// One argument of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A string literal, unescaped.
    String(String),
    /// The literal first argument of `States.Format`: the text between placeholders,
    /// unescaped. `n` placeholders give `n + 1` pieces.
    Template(Vec<String>),
    /// A number literal, kept as written (integers stay integers).
    Number(Number),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// A path into the effective input (`$`) or the context object (`$$`).
    Path(Path),
    /// A nested call.
    Call(Box<Call>),
}

impl Arg {
    /// The argument's type when it is known before running: literals, and nested calls whose
    /// result type is fixed. `None` for paths and calls that can return anything.
    pub fn static_type(&self) -> Option<ValueType> {
        match self {
            Arg::String(_) | Arg::Template(_) => Some(ValueType::String),
            Arg::Number(_) => Some(ValueType::Number),
            Arg::Bool(_) => Some(ValueType::Boolean),
            Arg::Null => Some(ValueType::Null),
            Arg::Path(_) => None,
            Arg::Call(c) => c.function.returns(),
        }
    }
}

/// JSON value types, for signatures and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A JSON string.
    String,
    /// A JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// `null`.
    Null,
    /// A JSON array.
    Array,
    /// A JSON object.
    Object,
}

impl ValueType {
    /// The type's name as messages print it ("a string", "an array").
    pub fn article_name(self) -> &'static str {
        match self {
            ValueType::String => "a string",
            ValueType::Number => "a number",
            ValueType::Boolean => "a boolean",
            ValueType::Null => "null",
            ValueType::Array => "an array",
            ValueType::Object => "an object",
        }
    }

    /// The type of a JSON value.
    pub fn of(value: &serde_json::Value) -> ValueType {
        use serde_json::Value;
        match value {
            Value::Null => ValueType::Null,
            Value::Bool(_) => ValueType::Boolean,
            Value::Number(_) => ValueType::Number,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::Object(_) => ValueType::Object,
        }
    }
}

/// The eighteen intrinsic functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// `States.Format(template, args...)`: `{}` placeholders filled in order.
    Format,
    /// `States.StringToJson(string)`: parses JSON text.
    StringToJson,
    /// `States.JsonToString(value)`: compact JSON text.
    JsonToString,
    /// `States.Array(args...)`: the arguments as an array.
    Array,
    /// `States.ArrayPartition(array, size)`: chunks of `size`.
    ArrayPartition,
    /// `States.ArrayContains(array, value)`: deep-equality membership.
    ArrayContains,
    /// `States.ArrayRange(first, last, step)`: integers from `first` towards `last`.
    ArrayRange,
    /// `States.ArrayGetItem(array, index)`: one element.
    ArrayGetItem,
    /// `States.ArrayLength(array)`: the number of elements.
    ArrayLength,
    /// `States.ArrayUnique(array)`: duplicates removed, first occurrences kept.
    ArrayUnique,
    /// `States.Base64Encode(string)`: base64 of the UTF-8 bytes.
    Base64Encode,
    /// `States.Base64Decode(string)`: the UTF-8 text of base64 data.
    Base64Decode,
    /// `States.Hash(data, algorithm)`: a lower-case hex digest.
    Hash,
    /// `States.JsonMerge(a, b, false)`: a shallow merge, `b` winning.
    JsonMerge,
    /// `States.MathRandom(start, end[, seed])`: a random integer in `[start, end)`.
    MathRandom,
    /// `States.MathAdd(a, b)`: integer sum, arguments rounded as Java's `Math.round` does.
    MathAdd,
    /// `States.StringSplit(string, delimiters)`: split on any delimiter character.
    StringSplit,
    /// `States.UUID()`: a version 4 UUID.
    Uuid,
}

/// What a parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// Any JSON value.
    Any,
    /// Exactly this type.
    Type(ValueType),
}

impl Function {
    /// Every function, in declaration order.
    pub const ALL: [Function; 18] = [
        Function::Format,
        Function::StringToJson,
        Function::JsonToString,
        Function::Array,
        Function::ArrayPartition,
        Function::ArrayContains,
        Function::ArrayRange,
        Function::ArrayGetItem,
        Function::ArrayLength,
        Function::ArrayUnique,
        Function::Base64Encode,
        Function::Base64Decode,
        Function::Hash,
        Function::JsonMerge,
        Function::MathRandom,
        Function::MathAdd,
        Function::StringSplit,
        Function::Uuid,
    ];

    /// The name as written, with its `States.` prefix.
    pub fn name(self) -> &'static str {
        match self {
            Function::Format => "States.Format",
            Function::StringToJson => "States.StringToJson",
            Function::JsonToString => "States.JsonToString",
            Function::Array => "States.Array",
            Function::ArrayPartition => "States.ArrayPartition",
            Function::ArrayContains => "States.ArrayContains",
            Function::ArrayRange => "States.ArrayRange",
            Function::ArrayGetItem => "States.ArrayGetItem",
            Function::ArrayLength => "States.ArrayLength",
            Function::ArrayUnique => "States.ArrayUnique",
            Function::Base64Encode => "States.Base64Encode",
            Function::Base64Decode => "States.Base64Decode",
            Function::Hash => "States.Hash",
            Function::JsonMerge => "States.JsonMerge",
            Function::MathRandom => "States.MathRandom",
            Function::MathAdd => "States.MathAdd",
            Function::StringSplit => "States.StringSplit",
            Function::Uuid => "States.UUID",
        }
    }

    /// The function named `name` (with its `States.` prefix; case-sensitive, as on AWS).
    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The fewest and the most arguments (`None`: no upper bound).
    pub fn arity(self) -> (usize, Option<usize>) {
        match self {
            Function::Format => (1, None),
            Function::Array => (0, None),
            Function::Uuid => (0, Some(0)),
            Function::StringToJson
            | Function::JsonToString
            | Function::ArrayLength
            | Function::ArrayUnique
            | Function::Base64Encode
            | Function::Base64Decode => (1, Some(1)),
            Function::ArrayPartition
            | Function::ArrayContains
            | Function::ArrayGetItem
            | Function::Hash
            | Function::MathAdd
            | Function::StringSplit => (2, Some(2)),
            Function::ArrayRange | Function::JsonMerge => (3, Some(3)),
            Function::MathRandom => (2, Some(3)),
        }
    }

    /// What the `index`-th (0-based) parameter accepts.
    pub fn param(self, index: usize) -> Param {
        use ValueType::*;
        let t = match (self, index) {
            (Function::Format, 0) => String,
            (Function::Format | Function::Array | Function::JsonToString, _) => return Param::Any,
            (Function::ArrayContains, 1) => return Param::Any,
            (Function::StringToJson | Function::Base64Encode | Function::Base64Decode, _) => String,
            (Function::ArrayPartition | Function::ArrayGetItem, 1) => Number,
            (
                Function::ArrayPartition
                | Function::ArrayContains
                | Function::ArrayGetItem
                | Function::ArrayLength
                | Function::ArrayUnique,
                _,
            ) => Array,
            (Function::ArrayRange | Function::MathRandom | Function::MathAdd, _) => Number,
            (Function::Hash | Function::StringSplit, _) => String,
            (Function::JsonMerge, 2) => Boolean,
            (Function::JsonMerge, _) => Object,
            (Function::Uuid, _) => return Param::Any,
        };
        Param::Type(t)
    }

    /// The type of the result, when it does not depend on the arguments.
    pub fn returns(self) -> Option<ValueType> {
        Some(match self {
            Function::StringToJson | Function::ArrayGetItem => return None,
            Function::Format
            | Function::JsonToString
            | Function::Base64Encode
            | Function::Base64Decode
            | Function::Hash
            | Function::Uuid => ValueType::String,
            Function::Array
            | Function::ArrayPartition
            | Function::ArrayRange
            | Function::ArrayUnique
            | Function::StringSplit => ValueType::Array,
            Function::ArrayContains => ValueType::Boolean,
            Function::ArrayLength | Function::MathRandom | Function::MathAdd => ValueType::Number,
            Function::JsonMerge => ValueType::Object,
        })
    }
}

/// The algorithms `States.Hash` accepts, as written in the definition.
pub const HASH_ALGORITHMS: [&str; 5] = ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"];

/// A call that failed to parse or to pass the static checks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset} of the intrinsic function)")]
pub struct IntrinsicError {
    /// Byte offset into the call's text where the problem is.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// Java's `Math.round` for the numbers intrinsics take: half-way values round towards positive
/// infinity (`-1.5` → `-1`, `1.5` → `2`). `States.MathAdd` rounds this way on AWS.
pub fn java_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips() {
        for f in Function::ALL {
            assert_eq!(Function::from_name(f.name()), Some(f));
        }
        assert_eq!(Function::from_name("States.uuid"), None);
    }

    #[test]
    fn java_rounding() {
        assert_eq!(java_round(-1.5), -1.0);
        assert_eq!(java_round(1.5), 2.0);
        assert_eq!(java_round(-1.49), -1.0);
        assert_eq!(java_round(-1.51), -2.0);
    }
}
