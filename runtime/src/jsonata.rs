//! JSONata evaluation for `QueryLanguage: "JSONata"` states: `$states`, the workflow variables,
//! Step Functions' extra functions, and AWS's `States.QueryEvaluationError` causes.
//!
//! The expressions were parsed when the definition was compiled (see [`wfc_ir::jsonata`]); this
//! module only evaluates them. The evaluator (`jsonata-core`) is single-threaded (its values use
//! `Rc`), so every evaluation here is synchronous and hands back plain `serde_json` values:
//! nothing of it is held across an `.await`.
//!
//! The evaluator is the crate feature `jsonata`. Without it no [`JsonataExpr`] can exist (parsing
//! one fails, so a definition that uses JSONata does not compile or load), and [`evaluate`] is a
//! `States.Runtime` failure naming the feature.

#[cfg(feature = "jsonata")]
use std::cell::RefCell;
#[cfg(feature = "jsonata")]
use std::rc::Rc;

#[cfg(feature = "jsonata")]
use indexmap::IndexMap;
#[cfg(feature = "jsonata")]
use jsonata_core::evaluator::{Context, Evaluator, EvaluatorError, EvaluatorOptions};
#[cfg(feature = "jsonata")]
use jsonata_core::value::JValue;
use rand::Rng;
#[cfg(feature = "jsonata")]
use rand::rngs::StdRng;
#[cfg(feature = "jsonata")]
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value};
use wfc_ir::{JsonataExpr, JsonataTemplate};

use crate::Failure;

/// What `$states` holds for one evaluation, and the variables in scope.
#[derive(Debug, Clone, Copy)]
pub struct Bindings<'a> {
    /// `$states.input`: the state's raw input.
    pub input: &'a Value,
    /// `$states.result`: the task, Parallel or Map result (Output and Assign only).
    pub result: Option<&'a Value>,
    /// `$states.errorOutput`: `{Error, Cause}` (a catcher's Output and Assign only).
    pub error_output: Option<&'a Value>,
    /// `$states.context` (the context object); when it carries variables (under
    /// [`wfc_ir::jsonpath::VARIABLES_KEY`]) they are bound as `$name`.
    pub context: &'a Value,
}

impl<'a> Bindings<'a> {
    /// Bindings with only `$states.input` and `$states.context`.
    pub fn new(input: &'a Value, context: &'a Value) -> Bindings<'a> {
        Bindings { input, result: None, error_output: None, context }
    }
}

/// Evaluates a template (`Arguments`, `Output`, `Items`, an `Assign` value): literal parts are
/// copied, each `{% %}` string is replaced by its value. `field` names the template in causes
/// (`Output`), and a leaf inside it adds its key path (`Arguments/FunctionName`), as AWS does.
pub fn template(t: &JsonataTemplate, field: &str, b: &Bindings<'_>, rng: &mut dyn Rng) -> Result<Value, Failure> {
    match t {
        JsonataTemplate::Literal(v) => Ok(v.clone()),
        JsonataTemplate::Expr(e) => evaluate(e, field, b, rng),
        JsonataTemplate::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| template(item, &format!("{field}/{i}"), b, rng))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        JsonataTemplate::Object(entries) => {
            let mut out = Map::with_capacity(entries.len());
            for (key, value) in entries {
                out.insert(key.clone(), template(value, &format!("{field}/{key}"), b, rng)?);
            }
            Ok(Value::Object(out))
        }
    }
}

/// Evaluates one expression. Failures are `States.QueryEvaluationError` with AWS's causes:
/// an evaluation error (with its JSONata code), `undefined`, or a function-valued result.
#[cfg(feature = "jsonata")]
pub fn evaluate(expr: &JsonataExpr, field: &str, b: &Bindings<'_>, rng: &mut dyn Rng) -> Result<Value, Failure> {
    let text = expr.as_str().trim();
    let value = run(expr, b, rng).map_err(|e| {
        query_error(format!(
            "The JSONata expression '{text}' specified for the field '{field}' threw an error during evaluation. {}",
            aws_message(e.message())
        ))
    })?;
    if value.is_undefined() {
        return Err(query_error(format!(
            "The JSONata expression '{text}' specified for the field '{field}' returned nothing (undefined)."
        )));
    }
    to_json(&value).ok_or_else(|| {
        query_error(format!(
            "The JSONata expression '{text}' specified for the field '{field}' returned an unsupported result type."
        ))
    })
}

/// Without the `jsonata` feature: a `States.Runtime` failure that names the feature (no
/// expression can have been parsed in this build, so this is only reached by a mismatched build).
#[cfg(not(feature = "jsonata"))]
pub fn evaluate(expr: &JsonataExpr, field: &str, _b: &Bindings<'_>, _rng: &mut dyn Rng) -> Result<Value, Failure> {
    Err(Failure::new(
        wfc_ir::errors::RUNTIME,
        format!(
            "the JSONata expression '{}' of field '{field}' cannot be evaluated: {}",
            expr.as_str().trim(),
            wfc_ir::jsonata::FEATURE_OFF
        ),
    ))
}

#[cfg(feature = "jsonata")]
/// An evaluator message as AWS's JSONata (jsonata-js) words it. jsonata-js keeps the offending
/// token out of a T1006 message (`T1006: Attempted to invoke a non-function`, recorded on AWS);
/// jsonata-core appends it (`...: $randomSeeded`).
fn aws_message(message: &str) -> &str {
    const T1006: &str = "T1006: Attempted to invoke a non-function";
    if message.starts_with(T1006) { T1006 } else { message }
}

/// A `States.QueryEvaluationError` failure.
pub fn query_error(cause: impl Into<String>) -> Failure {
    Failure::new(wfc_ir::errors::QUERY_EVALUATION_ERROR, cause)
}

/// AWS's cause when an expression yields the wrong type, e.g. for `Items`:
/// `... returned an unexpected result type. Expected 'array', but was 'number' for value: 1`.
pub fn unexpected_type(expr_text: &str, field: &str, expected: &str, value: &Value) -> Failure {
    query_error(format!(
        "The JSONata expression '{}' specified for the field '{field}' returned an unexpected result type. Expected '{expected}', but was '{}' for value: {value}",
        expr_text.trim(),
        type_name(value)
    ))
}

/// The JSON type name AWS prints.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(feature = "jsonata")]
/// Largest recursion depth of one evaluation, and longest sequence: a definition cannot make an
/// evaluation run away with the stack or the memory.
const MAX_DEPTH: usize = 500;
#[cfg(feature = "jsonata")]
const MAX_SEQUENCE: usize = 1_000_000;

#[cfg(feature = "jsonata")]
fn run(expr: &JsonataExpr, b: &Bindings<'_>, rng: &mut dyn Rng) -> Result<JValue, EvaluatorError> {
    let mut context = Context::new();
    let mut states = IndexMap::new();
    states.insert("input".to_owned(), JValue::from(b.input.clone()));
    let mut ctx_object = b.context.clone();
    let variables = ctx_object.as_object_mut().and_then(|m| m.shift_remove(wfc_ir::jsonpath::VARIABLES_KEY));
    states.insert("context".to_owned(), JValue::from(ctx_object.clone()));
    if let Some(r) = b.result {
        states.insert("result".to_owned(), JValue::from(r.clone()));
    }
    if let Some(e) = b.error_output {
        states.insert("errorOutput".to_owned(), JValue::from(e.clone()));
    }
    context.bind("states".to_owned(), JValue::object(states));
    if let Some(Value::Object(vars)) = variables {
        for (name, value) in vars {
            context.bind(name, JValue::from(value));
        }
    }
    let options = EvaluatorOptions {
        max_stack_depth: Some(MAX_DEPTH),
        max_sequence_length: Some(MAX_SEQUENCE),
        ..EvaluatorOptions::default()
    };
    let mut ev = Evaluator::with_options(context, options);
    register_functions(&mut ev, rng.next_u64(), entered_millis(&ctx_object))?;
    // `$` at the top of an expression is the state input, as on AWS. The result goes through
    // jsonata-js's sequence rule (an empty sequence is undefined, a sequence of one is its item),
    // whichever function built the sequence.
    ev.evaluate(expr.ast(), &JValue::from(b.input.clone())).map(JValue::unwrap_sequence)
}

#[cfg(feature = "jsonata")]
/// `$$.State.EnteredTime` in milliseconds: what `$now()` and `$millis()` return, so that an
/// execution on the virtual clock stays reproducible.
fn entered_millis(ctx: &Value) -> Option<i64> {
    let text = ctx.pointer("/State/EnteredTime")?.as_str()?;
    let ts: jiff::Timestamp = text.parse().ok()?;
    Some(ts.as_millisecond())
}

#[cfg(feature = "jsonata")]
fn arg_error(function: &str, detail: &str) -> EvaluatorError {
    EvaluatorError::EvaluationError(format!("D3137: Invalid arguments to ${function}: {detail}"))
}

#[cfg(feature = "jsonata")]
fn num(args: &[JValue], i: usize) -> Option<f64> {
    args.get(i).and_then(JValue::as_f64)
}

#[cfg(feature = "jsonata")]
/// Step Functions' additions to JSONata: `$partition`, `$range`, `$hash`, `$random([seed])`,
/// `$uuid` and `$parse`, and a deterministic `$now`/`$millis`.
fn register_functions(ev: &mut Evaluator, seed: u64, now_millis: Option<i64>) -> Result<(), EvaluatorError> {
    let rng = Rc::new(RefCell::new(StdRng::seed_from_u64(seed)));
    ev.register_fn("partition", |args: &[JValue]| {
        let items = args
            .first()
            .and_then(JValue::as_array)
            .ok_or_else(|| arg_error("partition", "the first argument must be an array"))?;
        let size = num(args, 1)
            .filter(|n| *n >= 1.0 && n.fract() == 0.0)
            .ok_or_else(|| arg_error("partition", "the size must be a positive integer"))?;
        let chunks = items.chunks(size as usize).map(|c| JValue::array(c.to_vec())).collect();
        Ok(JValue::array(chunks))
    })?;
    ev.register_fn("range", |args: &[JValue]| {
        let (Some(start), Some(end), Some(step)) = (num(args, 0), num(args, 1), num(args, 2)) else {
            return Err(arg_error("range", "start, end and step must be numbers"));
        };
        if [start, end, step].iter().any(|n| n.fract() != 0.0) || step == 0.0 {
            return Err(arg_error("range", "start, end and step must be integers and step must not be 0"));
        }
        let mut out = Vec::new();
        let mut x = start;
        // The end is included when the steps reach it (AWS's examples: $range(0, 10, 2) ends at 10).
        while (step > 0.0 && x <= end) || (step < 0.0 && x >= end) {
            if out.len() >= 1000 {
                return Err(arg_error("range", "the range has more than 1000 elements"));
            }
            out.push(JValue::Number(x));
            x += step;
        }
        // A sequence, as AWS's `$range` returns one: a single element is a value, not an array
        // (`$range(1, 9, 9)` is `1` on AWS, recorded), and no element is undefined.
        Ok(JValue::sequence(out))
    })?;
    ev.register_fn("hash", |args: &[JValue]| {
        let (Some(data), Some(alg)) = (args.first().and_then(JValue::as_str), args.get(1).and_then(JValue::as_str))
        else {
            return Err(arg_error("hash", "expected a string and an algorithm name"));
        };
        crate::intrinsics::hash_hex(data, alg).map(JValue::from).ok_or_else(|| {
            arg_error("hash", &format!("unknown algorithm '{alg}' (MD5, SHA-1, SHA-256, SHA-384, SHA-512)"))
        })
    })?;
    let r = Rc::clone(&rng);
    ev.register_fn_override("random", move |args: &[JValue]| {
        let value = match num(args, 0) {
            // A seed gives a repeatable number, as AWS documents.
            Some(seed) => StdRng::seed_from_u64(seed.to_bits()).random::<f64>(),
            None => r.borrow_mut().random::<f64>(),
        };
        Ok(JValue::Number(value))
    })?;
    let r = Rc::clone(&rng);
    ev.register_fn("uuid", move |_: &[JValue]| {
        let mut bytes = [0u8; 16];
        r.borrow_mut().fill_bytes(&mut bytes);
        Ok(JValue::from(crate::intrinsics::uuid_v4(bytes)))
    })?;
    ev.register_fn("parse", |args: &[JValue]| {
        let text = args.first().and_then(JValue::as_str).ok_or_else(|| arg_error("parse", "expected a string"))?;
        let v: Value = serde_json::from_str(text)
            .map_err(|e| EvaluatorError::EvaluationError(format!("D3137: $parse could not parse its argument: {e}")))?;
        Ok(JValue::from(v))
    })?;
    if let Some(ms) = now_millis {
        ev.register_fn_override("millis", move |_: &[JValue]| Ok(JValue::Number(ms as f64)))?;
        let text = jiff::Timestamp::from_millisecond(ms).map(|t| format!("{t:.3}")).unwrap_or_default();
        ev.register_fn_override("now", move |_: &[JValue]| Ok(JValue::from(text.clone())))?;
    }
    Ok(())
}

#[cfg(feature = "jsonata")]
/// Converts a JSONata value to JSON. Whole numbers print without a fraction (`3`, not `3.0`),
/// as jsonata-js prints them; `None` for a function-valued result.
pub fn to_json(v: &JValue) -> Option<Value> {
    Some(match v {
        JValue::Null | JValue::Undefined => Value::Null,
        JValue::Bool(b) => Value::Bool(*b),
        JValue::Number(n) => number(*n),
        JValue::String(s) => Value::String(s.to_string()),
        JValue::Array(items) => {
            Value::Array(items.iter().filter(|i| !i.is_undefined()).map(to_json).collect::<Option<Vec<_>>>()?)
        }
        JValue::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map.iter() {
                if !v.is_undefined() {
                    out.insert(k.clone(), to_json(v)?);
                }
            }
            Value::Object(out)
        }
        JValue::Regex { .. } | JValue::Lambda(_) | JValue::Builtin { .. } => return None,
        #[allow(unreachable_patterns)] // the crate's `python` feature adds a variant
        _ => return None,
    })
}

#[cfg(feature = "jsonata")]
fn number(n: f64) -> Value {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if n.fract() == 0.0 && n.abs() <= MAX_SAFE {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

#[cfg(feature = "jsonata")]
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(text: &str, input: Value) -> Result<Value, Failure> {
        let e = JsonataExpr::parse(text).unwrap();
        let ctx = json!({"State": {"Name": "S", "EnteredTime": "2024-01-01T00:00:00.000Z"},
                         wfc_ir::jsonpath::VARIABLES_KEY: {"count": 2}});
        let b = Bindings::new(&input, &ctx);
        evaluate(&e, "Output", &b, &mut StdRng::seed_from_u64(1))
    }

    #[test]
    fn states_variables_and_whole_numbers() {
        assert_eq!(eval("$states.input.a + $count", json!({"a": 1})).unwrap(), json!(3));
        assert_eq!(eval("$states.context.State.Name", json!({})).unwrap(), json!("S"));
        assert_eq!(eval("$now()", json!({})).unwrap(), json!("2024-01-01T00:00:00.000Z"));
    }

    #[test]
    fn aws_functions() {
        assert_eq!(eval("$partition([1,2,3], 2)", json!({})).unwrap(), json!([[1, 2], [3]]));
        assert_eq!(eval("$range(0, 10, 5)", json!({})).unwrap(), json!([0, 5, 10]));
        // A sequence of one is its item (jsonata-js's rule, and AWS's recorded `$range(1, 9, 9)`);
        // an array built by `[...]` or returned by `$partition` is not a sequence.
        assert_eq!(eval("$range(1, 9, 9)", json!({})).unwrap(), json!(1));
        assert_eq!(eval("{'r': $range(1, 9, 9)}", json!({})).unwrap(), json!({"r": 1}));
        assert_eq!(eval("[$range(1, 9, 9)]", json!({})).unwrap(), json!([1]));
        assert_eq!(eval("$partition([0], 1)", json!({})).unwrap(), json!([[0]]));
        assert_eq!(eval("$map([7], function($v){$v})", json!({})).unwrap(), json!(7));
        assert_eq!(
            eval("$hash('input', 'SHA-1')", json!({})).unwrap(),
            json!("140f86aae51ab9e1cda9b4254fe98a74eb54c1a1")
        );
        assert_eq!(eval("$parse('{\"a\": [1]}')", json!({})).unwrap(), json!({"a": [1]}));
        assert_eq!(eval("$length($uuid())", json!({})).unwrap(), json!(36));
        assert_eq!(eval("$random(7) = $random(7)", json!({})).unwrap(), json!(true));
    }

    #[test]
    fn aws_causes() {
        let f = eval("$doesNotExist", json!({})).unwrap_err();
        assert_eq!(f.error, "States.QueryEvaluationError");
        assert_eq!(
            f.cause,
            "The JSONata expression '$doesNotExist' specified for the field 'Output' returned nothing (undefined)."
        );
        let f = eval("$randomSeeded()", json!({})).unwrap_err();
        assert_eq!(
            f.cause,
            "The JSONata expression '$randomSeeded()' specified for the field 'Output' threw an error during evaluation. T1006: Attempted to invoke a non-function"
        );
        let f = eval("function($x){$x}", json!({})).unwrap_err();
        assert!(f.cause.ends_with("returned an unsupported result type."), "{}", f.cause);
    }
}
