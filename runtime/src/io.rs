//! Input and output processing: InputPath, payload templates (Parameters, ResultSelector),
//! ResultPath and OutputPath, with AWS's results and error messages.
//!
//! Every path failure here is `States.Runtime`, which Retry and Catch never handle: that is what
//! AWS raises today, although the 2016 spec named `States.ParameterPathFailure`,
//! `States.ResultPathMatchFailure` and `States.OutputMatchFailure` for these cases.

use std::borrow::Cow;

use rand::Rng;
use serde_json::{Map, Value};
use wfc_ir::{InputPath, OutputPath, Path, ResultPath, Root, Template};

use crate::Failure;

/// `InputPath`: `None` (ASL `null`) gives `{}`, `$` borrows the raw input unchanged, any other
/// path selects from it. A path that selects nothing is `States.Runtime`.
pub fn input_path<'a>(path: &InputPath, raw: &'a Value, context: &Value) -> Result<Cow<'a, Value>, Failure> {
    match path {
        None => Ok(Cow::Owned(Value::Object(Map::new()))),
        Some(p) if p.is_identity() => Ok(Cow::Borrowed(raw)),
        Some(p) => select_invalid_path(p, raw, context).map(Cow::Owned),
    }
}

/// `InputPath` on an owned raw input, for states that do not need the raw input afterwards
/// (Choice, Wait, Succeed): `$` moves it through without copying.
pub fn input_path_owned(path: &InputPath, raw: Value, context: &Value) -> Result<Value, Failure> {
    match path {
        None => Ok(Value::Object(Map::new())),
        Some(p) if p.is_identity() => Ok(raw),
        Some(p) if p.direct().is_some() => take_direct(p, raw),
        Some(p) => select_invalid_path(p, &raw, context),
    }
}

/// `OutputPath`: `None` gives `{}`, `$` passes `output` through without copying, any other
/// path selects from it. A path that selects nothing is `States.Runtime`.
pub fn output_path(path: &OutputPath, output: Value, context: &Value) -> Result<Value, Failure> {
    match path {
        None => Ok(Value::Object(Map::new())),
        Some(p) if p.is_identity() => Ok(output),
        Some(p) if p.direct().is_some() => take_direct(p, output),
        Some(p) => select_invalid_path(p, &output, context),
    }
}

/// A direct path (the optimizer's `direct-paths` pass) on an owned document: the node is moved
/// out rather than copied, with the same error as [`select_invalid_path`].
fn take_direct(path: &Path, doc: Value) -> Result<Value, Failure> {
    match path.direct() {
        Some(direct) => direct.take(doc).map_err(|doc| Failure::runtime(invalid_path_message(path, &doc))),
        None => select_invalid_path(path, &doc, &Value::Null),
    }
}

/// Selects with the InputPath/OutputPath error wording AWS records:
/// `Invalid path '$.x' : No results for path: $['x']`.
pub fn select_path(path: &Path, input: &Value, context: &Value) -> Result<Value, Failure> {
    select_invalid_path(path, input, context)
}

fn select_invalid_path(path: &Path, input: &Value, context: &Value) -> Result<Value, Failure> {
    let doc = match path.root() {
        Root::Input => input,
        // `$$` and `$name`: the context-object document carries the variables.
        Root::Context | Root::Variable(_) => context,
    };
    path.select(doc).map_err(|_| Failure::runtime(invalid_path_message(path, doc)))
}

/// Selects `path` from the effective input (`$`) or the context object (`$$`), with the payload
/// template wording: `The JSONPath '$.x' specified for the field 'value.$' could not be found in
/// the input '{...}'`. Also used for Fail's `ErrorPath`/`CausePath` (field `ErrorPath`).
pub fn select_field(path: &Path, field: &str, input: &Value, context: &Value) -> Result<Value, Failure> {
    path.select_in(input, context)
        .map_err(|_| Failure::runtime(wfc_ir::intrinsics::eval::field_not_found(path, field, input, context)))
}

/// Selects `path` from the input or the context object, returning `None` when nothing matches
/// (for callers that word their own error, such as Wait's SecondsPath).
pub fn select_opt(path: &Path, input: &Value, context: &Value) -> Option<Value> {
    let doc = match path.root() {
        Root::Input => input,
        // `$$` and `$name`: the context-object document carries the variables.
        Root::Context | Root::Variable(_) => context,
    };
    path.select(doc).ok()
}

/// Evaluates a payload template (`Parameters`, `ResultSelector`) against `input` (`$`) and the
/// context object (`$$`). Literal subtrees are copied; each `"key.$"` entry is replaced by what
/// its path selects or its intrinsic function returns, and a path that selects nothing is
/// `States.Runtime` naming that field. `rng` is the execution's random source, which
/// `States.UUID` and unseeded `States.MathRandom` draw from (see [`Execution::with_rng`]).
///
/// [`Execution::with_rng`]: crate::exec::Execution::with_rng
pub fn template(template: &Template, input: &Value, context: &Value, rng: &mut dyn Rng) -> Result<Value, Failure> {
    eval_template(template, "Parameters", input, context, rng)
}

fn eval_template(
    template: &Template,
    field: &str,
    input: &Value,
    context: &Value,
    rng: &mut dyn Rng,
) -> Result<Value, Failure> {
    match template {
        Template::Literal(v) => Ok(v.clone()),
        Template::Path(p) => select_field(p, field, input, context),
        Template::Intrinsic(i) => crate::intrinsics::evaluate(i, field, input, context, rng),
        Template::Array(items) => items
            .iter()
            .map(|t| eval_template(t, field, input, context, rng))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Template::Object(entries) => {
            let mut out = Map::with_capacity(entries.len());
            for (key, value) in entries {
                let evaluated = match value {
                    // AWS names the field as written, with its `.$` suffix.
                    // The field name is built only for a message.
                    Template::Path(p) => match select_opt(p, input, context) {
                        Some(value) => value,
                        None => select_field(p, &format!("{key}.$"), input, context)?,
                    },
                    Template::Intrinsic(i) => crate::intrinsics::evaluate_entry(i, key, input, context, rng)?,
                    other => eval_template(other, key, input, context, rng)?,
                };
                out.insert(key.clone(), evaluated);
            }
            Ok(Value::Object(out))
        }
    }
}

/// Whether a template reads the context object anywhere (so callers build `$$` only when needed,
/// and re-evaluate Parameters per retry only when `$$.State.RetryCount` could change the result).
pub fn uses_context(template: &Template) -> bool {
    match template {
        Template::Literal(_) => false,
        Template::Path(p) => p.root() != Root::Input,
        Template::Intrinsic(i) => i.uses_context(),
        Template::Array(items) => items.iter().any(uses_context),
        Template::Object(entries) => entries.iter().any(|(_, t)| uses_context(t)),
    }
}

/// Whether a template draws from the execution's random source (`States.UUID`, unseeded
/// `States.MathRandom`), so that, like a `$$` template, it is evaluated afresh on each attempt.
pub fn uses_randomness(template: &Template) -> bool {
    match template {
        Template::Literal(_) | Template::Path(_) => false,
        Template::Intrinsic(i) => i.uses_randomness(),
        Template::Array(items) => items.iter().any(uses_randomness),
        Template::Object(entries) => entries.iter().any(|(_, t)| uses_randomness(t)),
    }
}

/// Whether any of these optional paths reads the context object.
pub fn paths_use_context<'a>(paths: impl IntoIterator<Item = Option<&'a Path>>) -> bool {
    paths.into_iter().flatten().any(|p| p.root() != Root::Input)
}

/// Lays `overlay` over the context object `ctx`: each member of an object in `overlay` replaces
/// the same member of `ctx`, objects merging member by member (so `{"Execution": {"Name": "x"}}`
/// changes only `$$.Execution.Name`); what `overlay` does not name stays as the runtime built it.
pub fn overlay_context(ctx: &mut Value, overlay: &Value) {
    match (ctx, overlay) {
        (Value::Object(ctx), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match ctx.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => overlay_context(existing, value),
                    _ => {
                        ctx.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (ctx, overlay) => *ctx = overlay.clone(),
    }
}

/// `ResultPath`: `None` (ASL `null`) discards `result` and passes the raw input on; `$` makes the
/// result the output; any other reference path writes the result into the raw input (the input
/// before InputPath), creating missing parent objects.
///
/// A path that cannot be applied (the raw input, or a step on the way, is not an object) is
/// `States.Runtime`; the 2016 spec called this `States.ResultPathMatchFailure`
/// (`States.OutputMatchFailure` in its earliest drafts), but AWS treats it as a runtime error.
pub fn result_path(path: &ResultPath, raw: Value, result: Value) -> Result<Value, Failure> {
    match path {
        None => Ok(raw),
        Some(p) if p.is_identity() => Ok(result),
        Some(p) => {
            let mut out = raw;
            p.set(&mut out, result).map_err(|e| result_path_failure(p.as_str(), &e))?;
            Ok(out)
        }
    }
}

/// The failure of a ResultPath (whose text is `text`) that cannot be applied.
pub fn result_path_failure(text: &str, error: &wfc_ir::SetError) -> Failure {
    Failure::runtime(format!("Invalid path '{}' : {}", text, capitalize(&error.to_string())))
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The message AWS records when an InputPath/OutputPath (or a TimeoutSecondsPath) selects
/// nothing. Jayway words it by where the walk stopped: `No results for path: $['x']` when only
/// the last step is missing, `Missing property in path $['no']` when an earlier one is.
pub fn invalid_path_message(path: &Path, doc: &Value) -> String {
    invalid_path_text_message(path.as_str(), doc)
}

/// [`invalid_path_message`] for a path known by its text (generated code, which holds the
/// steps of a definite path rather than a parsed [`Path`]; only called on the failure path).
pub fn invalid_path_text_message(text: &str, doc: &Value) -> String {
    let detail = match simple_steps(text) {
        Some((root, steps)) => jayway_detail(root, &steps, doc),
        // Paths with wildcards, filters or slices: fall back to the plain wording.
        None => format!("No results for path: {text}"),
    };
    format!("Invalid path '{text}' : {detail}")
}

#[derive(Debug, Clone, PartialEq)]
enum SimpleStep {
    Name(String),
    Index(i64),
}

fn normalized(root: &str, steps: &[SimpleStep]) -> String {
    let mut out = root.to_owned();
    for step in steps {
        match step {
            SimpleStep::Name(n) => {
                out.push_str("['");
                out.push_str(n);
                out.push_str("']");
            }
            SimpleStep::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

fn jayway_detail(root: &str, steps: &[SimpleStep], doc: &Value) -> String {
    let mut cur = doc;
    for (i, step) in steps.iter().enumerate() {
        let next = match step {
            SimpleStep::Name(n) => cur.as_object().and_then(|m| m.get(n)),
            SimpleStep::Index(ix) => usize::try_from(*ix).ok().and_then(|ix| cur.as_array().and_then(|a| a.get(ix))),
        };
        match next {
            Some(v) => cur = v,
            None if i + 1 == steps.len() => return format!("No results for path: {}", normalized(root, steps)),
            None => return format!("Missing property in path {}", normalized(root, steps.get(..=i).unwrap_or(steps))),
        }
    }
    format!("No results for path: {}", normalized(root, steps))
}

/// Splits a path made only of `.name`, `['name']`, `["name"]` and `[n]` steps; `None` for
/// anything richer (the message then falls back to the path text).
fn simple_steps(text: &str) -> Option<(&'static str, Vec<SimpleStep>)> {
    let (root, mut rest) =
        if let Some(r) = text.strip_prefix("$$") { ("$$", r) } else { ("$", text.strip_prefix('$')?) };
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = r.get(..end)?;
            if name.is_empty() || name.contains(['*', '(', ')', '?', '@', ' ']) {
                return None;
            }
            steps.push(SimpleStep::Name(name.to_owned()));
            rest = r.get(end..)?;
        } else if let Some(r) = rest.strip_prefix("['").or_else(|| rest.strip_prefix("[\"")) {
            let quote = if rest.starts_with("['") { "']" } else { "\"]" };
            let end = r.find(quote)?;
            steps.push(SimpleStep::Name(r.get(..end)?.to_owned()));
            rest = r.get(end + 2..)?;
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let index = r.get(..end)?.trim().parse::<i64>().ok()?;
            steps.push(SimpleStep::Index(index));
            rest = r.get(end + 1..)?;
        } else {
            return None;
        }
    }
    Some((root, steps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(text: &str) -> Path {
        Path::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn jayway_wording() {
        let doc = json!({"a": {"b": 1}});
        assert_eq!(invalid_path_message(&path("$.x"), &doc), "Invalid path '$.x' : No results for path: $['x']");
        assert_eq!(
            invalid_path_message(&path("$.no.such.result.path"), &doc),
            "Invalid path '$.no.such.result.path' : Missing property in path $['no']"
        );
        assert_eq!(
            invalid_path_message(&path("$.a.c"), &doc),
            "Invalid path '$.a.c' : No results for path: $['a']['c']"
        );
        assert_eq!(
            invalid_path_message(&path("$['a'][3]"), &doc),
            "Invalid path '$['a'][3]' : No results for path: $['a'][3]"
        );
    }

    #[test]
    fn input_path_identity_borrows() {
        let raw = json!({"a": 1});
        let out = input_path(&Some(path("$")), &raw, &Value::Null);
        assert!(matches!(out, Ok(Cow::Borrowed(_))));
    }
}
