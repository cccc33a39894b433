//! Evaluation of ASL intrinsic functions (`States.Format(...)` and the other seventeen) in
//! payload templates, with AWS's results and quirks. It lives in the IR crate so that the
//! runtime (every evaluation) and the optimizer (folding calls whose arguments are all literals,
//! [`evaluate_constant`]) share one implementation.
//!
//! Failures are [`IntrinsicFailure`]s, which the runtime raises as `States.Runtime` with a
//! cause that starts `Invalid arguments in States.<Name>`:
//! that is what AWS raises today (recorded executions fail with exactly that error and cause
//! text, not with the `States.IntrinsicFailure` its documentation names), so like every other
//! `States.Runtime` they are never retried or caught. The detail after the colon is wfc's.
//! A path argument that selects nothing fails as a `.$` path does (`The JSONPath '$.x'
//! specified for the field 'key.$' could not be found in the input '...'`).
//!
//! Quirks kept on purpose (asl-anchor §6, §20.10):
//! - `States.Format` renders non-string arguments as Java's `toString` does: objects as
//!   `{a=1, b=[2, 3]}`, arrays as `[1, x]` with strings unquoted, `null` as `null`.
//! - `States.JsonToString` is compact (`{"a":1}`); `States.StringToJson` of blank text is `null`.
//! - `States.MathAdd` rounds like Java's `Math.round` (half-way towards +∞: `-1.5` → `-1`);
//!   `States.ArrayRange`, `States.ArrayPartition`, `States.ArrayGetItem` and
//!   `States.MathRandom` truncate their numbers towards zero, as AWS was recorded doing.
//! - `States.StringSplit`'s second argument is a set of delimiter characters, and empty tokens
//!   are dropped.
//! - `States.JsonMerge` is shallow; `deep = true` is an error.
//! - `States.MathRandom` draws from `[start, end)`; with a seed the result depends only on the
//!   seed, without one it comes from the execution's seeded random source, as does
//!   `States.UUID`, so runs are reproducible under a fixed `RunOptions::seed`.

use base64::Engine as _;
use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};
use serde_json::Value;
use sha1::Digest as _;

use super::{
    Arg, Call, Function, HASH_ALGORITHMS, Intrinsic, MAX_RANGE_LEN, MAX_STRING_INPUT, Param, ValueType, java_round,
};
use crate::jsonpath::Path;

/// Why an intrinsic call failed: the runtime raises it as `States.Runtime` with this cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{cause}")]
pub struct IntrinsicFailure {
    /// The cause text (`Invalid arguments in States.X: ...`, or a path's not-found wording).
    pub cause: String,
}

type Failure = IntrinsicFailure;

impl IntrinsicFailure {
    fn runtime(cause: impl Into<String>) -> IntrinsicFailure {
        IntrinsicFailure { cause: cause.into() }
    }
}

/// The value of `intrinsic` when it is a compile-time constant: every argument, at any depth, is
/// a literal, the call draws nothing random (`States.UUID` and `States.MathRandom`, even seeded,
/// are never folded), and evaluating it succeeds. `None` otherwise, so that a call that would
/// fail is left to fail at run time with its usual error.
pub fn evaluate_constant(intrinsic: &Intrinsic) -> Option<Value> {
    fn literal_only(call: &Call) -> bool {
        !matches!(call.function, Function::Uuid | Function::MathRandom)
            && call.args.iter().all(|a| match a {
                Arg::Path(_) => false,
                Arg::Call(c) => literal_only(c),
                Arg::String(_) | Arg::Template(_) | Arg::Number(_) | Arg::Bool(_) | Arg::Null => true,
            })
    }
    if !literal_only(intrinsic.call()) {
        return None;
    }
    // No argument reads a document and nothing draws from the random source, so neither is
    // consulted; they are given only to satisfy the signature.
    let mut rng = StdRng::seed_from_u64(0);
    evaluate(intrinsic, "Parameters", &Value::Null, &Value::Null, &mut rng).ok()
}

/// Evaluates `intrinsic`, the value of the template field `field` (named in messages as
/// written, with its `.$`), against the effective input (`$`) and the context object (`$$`).
/// `rng` is the execution's random source (`States.UUID`, unseeded `States.MathRandom`).
pub fn evaluate(
    intrinsic: &Intrinsic,
    field: &str,
    input: &Value,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<Value, Failure> {
    let mut env = Env { field, suffixed: false, input, context, rng };
    env.call(intrinsic.call())
}

/// [`evaluate`] for the template entry `"key.$"`: the field name is only built when a message
/// needs it (this runs on every visit of a state whose template calls an intrinsic).
pub fn evaluate_entry(
    intrinsic: &Intrinsic,
    key: &str,
    input: &Value,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<Value, Failure> {
    let mut env = Env { field: key, suffixed: true, input, context, rng };
    env.call(intrinsic.call())
}

/// A call whose arguments generated code has already evaluated (in order, each a literal, a
/// path it read, or a nested call): the types are checked and the function applied exactly as
/// the evaluator does for a parsed call. `rng` is the execution's random source, read only by
/// `States.UUID` and unseeded `States.MathRandom`. For `States.Format` with a literal template,
/// use [`format_pieces`].
pub fn call_values(function: Function, values: Vec<Value>, rng: &mut dyn Rng) -> Result<Value, Failure> {
    check_types(function, &values)?;
    let mut env = Env { field: "", suffixed: false, input: &Value::Null, context: &Value::Null, rng };
    env.apply(function, values)
}

/// `States.MathAdd(a, b)` on evaluated arguments, read in place when both are numbers (a loop's
/// step, `States.MathAdd($.i, 1)`), as the evaluator does; otherwise the general path, which
/// reports what is wrong.
pub fn math_add(a: &Value, b: &Value) -> Result<Value, Failure> {
    let f = Function::MathAdd;
    // Two integers within a Java `int` (the counting loop's `States.MathAdd($.i, 1)`): what the
    // general path below gives them (rounding an integer is the integer), without the float
    // round trip.
    let int = |v: &Value| v.as_i64().filter(|n| i32::try_from(*n).is_ok());
    if let (Some(x), Some(y)) = (int(a), int(b)) {
        return Ok(Value::from(x + y));
    }
    if let (Value::Number(x), Value::Number(y)) = (a, b)
        && let (Some(x), Some(y)) = (x.as_f64(), y.as_f64())
    {
        let x = integer_of(f, 0, x, java_round)?;
        let y = integer_of(f, 1, y, java_round)?;
        return Ok(Value::from(x + y));
    }
    let values = vec![a.clone(), b.clone()];
    check_types(f, &values)?;
    // MathAdd draws nothing; the source only satisfies the signature.
    let mut rng = StdRng::seed_from_u64(0);
    let mut env = Env { field: "", suffixed: false, input: &Value::Null, context: &Value::Null, rng: &mut rng };
    env.apply(f, values)
}

/// `States.Format` with a literal template (its pieces between `{}` placeholders, unescaped) on
/// evaluated arguments.
pub fn format_pieces(pieces: &[&str], values: &[Value]) -> Result<Value, Failure> {
    format(pieces, values)
}

struct Env<'a> {
    /// The template field, without its `.$` when `suffixed`.
    field: &'a str,
    suffixed: bool,
    input: &'a Value,
    context: &'a Value,
    rng: &'a mut dyn Rng,
}

/// `Invalid arguments in States.X: detail`.
fn invalid(function: Function, detail: impl std::fmt::Display) -> Failure {
    Failure::runtime(format!("Invalid arguments in {}: {detail}", function.name()))
}

fn ordinal(i: usize) -> &'static str {
    ["first", "second", "third", "fourth", "fifth"].get(i).copied().unwrap_or("next")
}

impl Env<'_> {
    fn arg(&mut self, arg: &Arg) -> Result<Value, Failure> {
        Ok(match arg {
            Arg::String(s) => Value::String(s.clone()),
            // Only reached if a template is used as a value: its text with `{}` restored.
            Arg::Template(pieces) => Value::String(pieces.join("{}")),
            Arg::Number(n) => Value::Number(n.clone()),
            Arg::Bool(b) => Value::Bool(*b),
            Arg::Null => Value::Null,
            Arg::Path(p) => match p.select_in(self.input, self.context) {
                Ok(value) => value,
                Err(_) => {
                    let field = if self.suffixed { format!("{}.$", self.field) } else { self.field.to_owned() };
                    return Err(Failure::runtime(field_not_found(p, &field, self.input, self.context)));
                }
            },
            Arg::Call(c) => self.call(c)?,
        })
    }

    fn call(&mut self, call: &Call) -> Result<Value, Failure> {
        let f = call.function;
        // States.Format keeps its literal template as pieces; everything else is values.
        if f == Function::Format
            && let Some(Arg::Template(pieces)) = call.args.first()
        {
            let values = call.args.iter().skip(1).map(|a| self.arg(a)).collect::<Result<Vec<_>, _>>()?;
            return format(pieces, &values);
        }
        // `States.MathAdd` of two numbers (a loop's step, `States.MathAdd($.i, 1)`): read both
        // in place, without copying them into a vector. Anything else (a missing path, a value
        // that is not a number) takes the general path, which reports it.
        if f == Function::MathAdd
            && let [a, b] = call.args.as_slice()
            && let (Some(a), Some(b)) = (self.number_in_place(a), self.number_in_place(b))
        {
            let a = integer_of(f, 0, a, java_round)?;
            let b = integer_of(f, 1, b, java_round)?;
            return Ok(Value::from(a + b));
        }
        let values = call.args.iter().map(|a| self.arg(a)).collect::<Result<Vec<_>, _>>()?;
        check_types(f, &values)?;
        self.apply(f, values)
    }

    /// A number argument read without copying: a literal, or a direct path to a number.
    /// `None` for every other argument (the caller evaluates it the general way).
    fn number_in_place(&self, arg: &Arg) -> Option<f64> {
        match arg {
            Arg::Number(n) => n.as_f64(),
            Arg::Path(p) => match p.select_ref(p.root_doc(self.input, self.context))? {
                Value::Number(n) => n.as_f64(),
                _ => None,
            },
            _ => None,
        }
    }

    fn apply(&mut self, f: Function, v: Vec<Value>) -> Result<Value, Failure> {
        if f == Function::Array {
            return Ok(Value::Array(v));
        }
        // `check_types` has verified the count and the types, so the accessors below only
        // fail on an internal inconsistency, which still surfaces as an error, never a panic.
        let missing = || invalid(f, "missing argument");
        let mut args = v.into_iter();
        let mut take = |_: usize| args.next().ok_or_else(missing);
        match f {
            Function::Format => {
                // A template read from a path: `{}` are placeholders, nothing is escaped.
                let template = take(0)?;
                let text = template.as_str().unwrap_or_default();
                let pieces: Vec<String> = text.split("{}").map(str::to_owned).collect();
                let rest: Vec<Value> = std::iter::from_fn(|| take(1).ok()).collect();
                format(&pieces, &rest)
            }
            Function::StringToJson => {
                let text = string(&take(0)?);
                if text.trim().is_empty() {
                    return Ok(Value::Null);
                }
                let parsed: Value =
                    serde_json::from_str(&text).map_err(|e| invalid(f, format!("the text is not JSON ({e})")))?;
                Ok(normalize_negative_zero(parsed))
            }
            Function::JsonToString => Ok(Value::String(take(0)?.to_string())),
            Function::Array => Err(missing()),
            Function::ArrayPartition => {
                let items = array(take(0)?);
                let size = integer(f, 1, &take(1)?, f64::trunc)?;
                if size < 1 {
                    return Err(invalid(f, format!("the chunk size must be a positive integer, found {size}")));
                }
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                Ok(Value::Array(items.chunks(size).map(|c| Value::Array(c.to_vec())).collect()))
            }
            Function::ArrayContains => {
                let items = array(take(0)?);
                let needle = take(1)?;
                Ok(Value::Bool(items.contains(&needle)))
            }
            Function::ArrayRange => {
                let first = integer(f, 0, &take(0)?, f64::trunc)?;
                let last = integer(f, 1, &take(1)?, f64::trunc)?;
                let step = integer(f, 2, &take(2)?, f64::trunc)?;
                if step == 0 {
                    return Err(invalid(f, "the step must not be zero"));
                }
                let (first, last, step) = (i128::from(first), i128::from(last), i128::from(step));
                let count = if (step > 0 && first <= last) || (step < 0 && first >= last) {
                    (last - first) / step + 1
                } else {
                    0
                };
                if count > MAX_RANGE_LEN as i128 {
                    return Err(invalid(
                        f,
                        format!("the range has {count} elements, more than the limit of {MAX_RANGE_LEN}"),
                    ));
                }
                Ok(Value::Array(
                    (0..count).map(|i| Value::from(i64::try_from(first + i * step).unwrap_or_default())).collect(),
                ))
            }
            Function::ArrayGetItem => {
                let items = array(take(0)?);
                let index = integer(f, 1, &take(1)?, f64::trunc)?;
                let len = items.len();
                usize::try_from(index)
                    .ok()
                    .and_then(|i| items.into_iter().nth(i))
                    .ok_or_else(|| invalid(f, format!("index {index} is out of bounds for an array of {len} elements")))
            }
            Function::ArrayLength => Ok(Value::from(array(take(0)?).len())),
            Function::ArrayUnique => {
                let mut out: Vec<Value> = Vec::new();
                for item in array(take(0)?) {
                    if !out.contains(&item) {
                        out.push(item);
                    }
                }
                Ok(Value::Array(out))
            }
            Function::Base64Encode => {
                let text = limited(f, take(0)?)?;
                Ok(Value::String(base64::engine::general_purpose::STANDARD.encode(text.as_bytes())))
            }
            Function::Base64Decode => {
                let text = limited(f, take(0)?)?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text.as_bytes())
                    .map_err(|e| invalid(f, format!("the text is not base64 ({e})")))?;
                String::from_utf8(bytes)
                    .map(Value::String)
                    .map_err(|_| invalid(f, "the decoded bytes are not UTF-8 text"))
            }
            Function::Hash => {
                let data = limited(f, take(0)?)?;
                let algorithm = string(&take(1)?);
                let Some(digest) = hash_hex(&data, &algorithm) else {
                    return Err(invalid(
                        f,
                        format!("unknown algorithm '{algorithm}', expected one of {}", HASH_ALGORITHMS.join(", ")),
                    ));
                };
                Ok(Value::String(digest))
            }
            Function::JsonMerge => {
                let (Value::Object(mut left), Value::Object(right), deep) = (take(0)?, take(1)?, take(2)?) else {
                    return Err(missing());
                };
                if deep == Value::Bool(true) {
                    return Err(invalid(f, "deep merging is not supported; the third argument must be false"));
                }
                // Shallow: a key of the second object replaces the first's value whole.
                for (k, val) in right {
                    left.insert(k, val);
                }
                Ok(Value::Object(left))
            }
            Function::MathRandom => {
                let start = integer(f, 0, &take(0)?, f64::trunc)?;
                let end = integer(f, 1, &take(1)?, f64::trunc)?;
                if start >= end {
                    return Err(invalid(f, format!("the start ({start}) must be less than the end ({end})")));
                }
                let value = match take(2).ok() {
                    Some(seed) => {
                        // Any number seeds (not only Java ints): only its integer part is used.
                        let seed = seed.as_i64().or_else(|| seed.as_f64().map(|x| x.trunc() as i64));
                        let seed = seed.ok_or_else(|| invalid(f, "the third argument must be a number"))?;
                        StdRng::seed_from_u64(seed as u64).random_range(start..end)
                    }
                    None => self.rng.random_range(start..end),
                };
                Ok(Value::from(value))
            }
            Function::MathAdd => {
                let a = integer(f, 0, &take(0)?, java_round)?;
                let b = integer(f, 1, &take(1)?, java_round)?;
                Ok(Value::from(a + b))
            }
            Function::StringSplit => {
                let text = string(&take(0)?);
                let delimiters = string(&take(1)?);
                Ok(Value::Array(
                    text.split(|c: char| delimiters.contains(c))
                        .filter(|t| !t.is_empty())
                        .map(|t| Value::String(t.to_owned()))
                        .collect(),
                ))
            }
            Function::Uuid => {
                let mut bytes = [0u8; 16];
                self.rng.fill_bytes(&mut bytes);
                Ok(Value::String(uuid_v4(bytes)))
            }
        }
    }
}

/// Checks the evaluated arguments against the signature (the parser checked what it could see).
fn check_types(f: Function, values: &[Value]) -> Result<(), Failure> {
    let (min, max) = f.arity();
    if values.len() < min || max.is_some_and(|m| values.len() > m) {
        return Err(invalid(f, format!("wrong number of arguments ({})", values.len())));
    }
    for (i, value) in values.iter().enumerate() {
        if let Param::Type(want) = f.param(i) {
            let got = ValueType::of(value);
            if got != want {
                return Err(invalid(
                    f,
                    format!(
                        "the {} argument must be {}, found {}",
                        ordinal(i),
                        want.article_name(),
                        got.article_name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Fills `{}` placeholders in order; the counts must match.
fn format<S: AsRef<str>>(pieces: &[S], values: &[Value]) -> Result<Value, Failure> {
    if pieces.len() != values.len() + 1 {
        return Err(invalid(
            Function::Format,
            format!(
                "the format string has {} placeholder(s) but {} argument(s) follow",
                pieces.len().saturating_sub(1),
                values.len()
            ),
        ));
    }
    let mut out = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        out.push_str(piece.as_ref());
        if let Some(v) = values.get(i) {
            java_to_string(v, &mut out);
        }
    }
    Ok(Value::String(out))
}

/// Renders a value the way Java's `toString` renders the parsed JSON on AWS: strings bare,
/// lists `[a, b]`, maps `{k=v, k2=v2}`.
fn java_to_string(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                java_to_string(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                java_to_string(v, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `-0` parses as a float negative zero; AWS gives `0`.
fn normalize_negative_zero(value: Value) -> Value {
    match &value {
        Value::Number(n) if n.as_f64() == Some(0.0) && n.as_f64().is_some_and(f64::is_sign_negative) => Value::from(0),
        _ => value,
    }
}

fn string(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn array(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

/// A string argument of at most [`MAX_STRING_INPUT`] characters.
fn limited(f: Function, value: Value) -> Result<String, Failure> {
    let text = string(&value);
    let len = text.chars().count();
    if len > MAX_STRING_INPUT {
        return Err(invalid(f, format!("the input has {len} characters, more than the limit of {MAX_STRING_INPUT}")));
    }
    Ok(text)
}

/// A numeric argument made an integer by `round`, within Java's `int` range (AWS computes
/// in `int`; a value outside it is an invalid argument rather than a silent overflow).
fn integer(f: Function, index: usize, value: &Value, round: fn(f64) -> f64) -> Result<i64, Failure> {
    let x = value.as_f64().ok_or_else(|| invalid(f, format!("the {} argument must be a number", ordinal(index))))?;
    integer_of(f, index, x, round)
}

/// [`integer`] of a number already read.
fn integer_of(f: Function, index: usize, x: f64, round: fn(f64) -> f64) -> Result<i64, Failure> {
    let r = round(x);
    if !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&r) {
        return Err(invalid(
            f,
            format!("the {} argument ({x}) is outside the integer range {}..={}", ordinal(index), i32::MIN, i32::MAX),
        ));
    }
    Ok(r as i64)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The lower-case hex digest of `data` under one of AWS's algorithm names (`SHA-256`), shared
/// by `States.Hash` and JSONata's `$hash`; `None` for an unknown algorithm.
pub fn hash_hex(data: &str, algorithm: &str) -> Option<String> {
    Some(match algorithm {
        "MD5" => hex(&md5::Md5::digest(data.as_bytes())),
        "SHA-1" => hex(&sha1::Sha1::digest(data.as_bytes())),
        "SHA-256" => hex(&sha2::Sha256::digest(data.as_bytes())),
        "SHA-384" => hex(&sha2::Sha384::digest(data.as_bytes())),
        "SHA-512" => hex(&sha2::Sha512::digest(data.as_bytes())),
        _ => return None,
    })
}

/// Formats 16 random bytes as an RFC 9562 version 4 UUID (version and variant bits set).
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let h = hex(&bytes);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The payload-template wording for a path that selects nothing: `The JSONPath '$.x' specified
/// for the field 'value.$' could not be found in the input '{...}'` (the document shown is the
/// one the path's root names).
pub fn field_not_found(path: &Path, field: &str, input: &Value, context: &Value) -> String {
    field_not_found_text(path.as_str(), field, path.root_doc(input, context))
}

/// [`field_not_found`] for a path known by its text, with `doc` the document its root names
/// (generated code holds a definite path as its steps, not as a parsed [`Path`]).
pub fn field_not_found_text(text: &str, field: &str, doc: &Value) -> String {
    format!(
        "The JSONPath '{}' specified for the field '{}' could not be found in the input '{}'",
        text,
        field,
        crate::jsonpath::preview(doc)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn constant(text: &str) -> Option<Value> {
        evaluate_constant(&Intrinsic::parse(text).unwrap())
    }

    #[test]
    fn folds_only_literal_deterministic_calls_that_succeed() {
        assert_eq!(constant("States.MathAdd(1, 2)"), Some(json!(3)));
        assert_eq!(constant("States.Format('a{}', 'b')"), Some(json!("ab")));
        assert_eq!(constant("States.StringToJson('{\"a\":1}')"), Some(json!({"a": 1})));
        assert_eq!(constant("States.Array(1, States.MathAdd(2, 3))"), Some(json!([1, 5])));
        assert_eq!(constant("States.Hash('a', 'MD5')"), Some(json!("0cc175b9c0f1b6a831c399e269772661")));
        // Reads the input or the context object.
        assert_eq!(constant("States.MathAdd($.i, 1)"), None);
        assert_eq!(constant("States.Array($$.Execution.Id)"), None);
        // Random, even with a seed.
        assert_eq!(constant("States.UUID()"), None);
        assert_eq!(constant("States.MathRandom(1, 10, 7)"), None);
        assert_eq!(constant("States.Array(States.UUID())"), None);
        // Would fail: left to the run time, which raises it with its usual cause.
        assert_eq!(constant("States.StringToJson('{oops')"), None);
        assert_eq!(constant("States.ArrayGetItem(States.Array(1, 2), 5)"), None);
    }
}
