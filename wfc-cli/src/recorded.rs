//! The AWS-recorded case format of ../shared/conformance/asl-aws (its README.md): one execution
//! per file, recognised by its `snapshot_key` and `service_class` fields. This module loads such
//! a file into a [`Case`] (the definition, the input, the start instant, the Lambda `handlers`
//! turned into mocks) and keeps the expectations in [`Recorded`], which
//! [`crate::recorded_check`] compares with an outcome.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::case::{Case, Definition, Expected, MockSpec};
use crate::outcome::Outcome;
use crate::placeholders::Matcher;

/// The region and account of the recordings' ARNs (the account is normalised to this).
pub(crate) const REGION: &str = "us-east-1";
/// See [`REGION`].
pub(crate) const ACCOUNT: &str = "111111111111";

/// What an AWS-recorded case expects, as recorded.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// `{"status", "output"}` or `{"status", "error", "cause" | "cause_json"}`.
    pub(crate) expected: Value,
    /// The states entered, in history order (`None`: not recorded).
    pub(crate) states_visited: Option<Vec<String>>,
    /// The compacted history: `{"type", ...details}` per event.
    pub(crate) trace: Option<Vec<Value>>,
    /// Placeholder tokens and words (see [`crate::placeholders`]).
    pub(crate) placeholders: Vec<String>,
    /// The recording sorted the events of Parallel branches (its `notes` say so), so their
    /// order within a Parallel state is not the execution's.
    pub(crate) parallel_sorted: bool,
}

/// Whether a JSON document is an AWS-recorded case rather than a `.case.json` one.
pub(crate) fn is_recorded(doc: &Value) -> bool {
    doc.get("snapshot_key").is_some() && doc.get("service_class").is_some()
}

/// Loads the recorded case `doc` read from `file`.
pub(crate) fn load(file: &Path, doc: Value) -> Result<Case, String> {
    let at = |msg: String| format!("{}: {msg}", file.display());
    let Value::Object(mut doc) = doc else {
        return Err(at("a recorded case must be a JSON object".into()));
    };
    let text = |doc: &Map<String, Value>, key: &str| doc.get(key).and_then(Value::as_str).map(str::to_owned);
    let name = text(&doc, "name").ok_or_else(|| at("a recorded case needs a string \"name\"".into()))?;
    let category = file.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("asl-aws");
    let case_name = format!("{category}/{name}");
    let service_class = text(&doc, "service_class").unwrap_or_default();
    let definition = match doc.remove("definition") {
        Some(v @ Value::Object(_)) => Definition::Inline(v),
        _ => return Err(at("\"definition\" must be the ASL definition, an object".into())),
    };
    let expected =
        doc.remove("expected").filter(Value::is_object).ok_or_else(|| at("\"expected\" must be an object".into()))?;
    let status = expected.get("status").and_then(Value::as_str).unwrap_or("").to_owned();
    let skip = match service_class.as_str() {
        "none" | "simple_handlers" => None,
        "services" => Some(format!(
            "needs AWS services: {}",
            doc.get("services")
                .and_then(Value::as_array)
                .map(|s| s.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "unspecified".into())
        )),
        other => return Err(at(format!("unknown service_class {other:?}"))),
    };
    if skip.is_none() && !crate::outcome::STATUSES.contains(&status.as_str()) {
        return Err(at(format!("expected.status {status:?} cannot be produced without AWS services")));
    }
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
    };
    let states_visited = strings(doc.get("states_visited"));
    let placeholders = strings(doc.get("placeholders")).unwrap_or_default();
    let parallel_sorted =
        strings(doc.get("notes")).unwrap_or_default().iter().any(|n| n.contains("parallel_branch_events_sorted"));
    let trace = doc.get("trace").and_then(Value::as_array).cloned();
    let start_time = match doc.get("clock") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            s.parse::<jiff::Timestamp>().map_err(|e| at(format!("\"clock\" {s:?} is not an RFC 3339 instant: {e}")))?;
            Some(s.clone())
        }
        Some(other) => return Err(at(format!("\"clock\" must be an RFC 3339 string, found {other}"))),
    };
    // An EXPRESS execution recorded from StartSyncExecution's response was started
    // synchronously: its context object has no `RedriveCount` (recorded).
    let sync = doc.get("snapshot_key").and_then(Value::as_str) == Some("start_execution_sync_response");
    let machine_type = match doc.get("state_machine_type").and_then(Value::as_str) {
        None | Some("STANDARD") => wfc_runtime::MachineType::Standard,
        Some("EXPRESS") if sync => wfc_runtime::MachineType::ExpressSync,
        Some("EXPRESS") => wfc_runtime::MachineType::Express,
        Some(other) => return Err(at(format!("unknown state_machine_type {other:?}"))),
    };
    let mocks = match doc.get("handlers") {
        Some(h) if skip.is_none() => mocks_from_handlers(h, &definition).map_err(at)?,
        _ => json!({}),
    };
    // `wfc test` only checks the fields given here; the recorded expectations are compared by
    // `recorded_check`, with placeholders.
    let expected_status: Expected =
        serde_json::from_value(json!({ "status": status })).map_err(|e| at(format!("internal error: {e}")))?;
    Ok(Case {
        name: case_name,
        file: file.to_owned(),
        description: None,
        definition,
        input: doc.remove("input").unwrap_or(Value::Null),
        mocks: MockSpec::Wfc(mocks),
        expected: expected_status,
        skip,
        seed: 0,
        callbacks: None,
        item_root: None,
        events: Vec::new(),
        execution_name: Some(execution_name(file)),
        start_time,
        machine_type,
        recorded: Some(Box::new(Recorded { expected, states_visited, trace, placeholders, parallel_sorted })),
    })
}

/// Compares an outcome with the recorded result: status, output or error and cause, and the
/// states visited. Each mismatch is one line.
pub(crate) fn check_result(rec: &Recorded, actual: &Outcome, matcher: &mut Matcher) -> Vec<String> {
    let mut problems = Vec::new();
    let want_status = rec.expected.get("status").and_then(Value::as_str).unwrap_or("");
    if want_status != actual.status {
        let detail = match (&actual.error, &actual.cause) {
            (Some(e), Some(c)) => format!(" ({e}: {c})"),
            (Some(e), None) => format!(" ({e})"),
            _ => String::new(),
        };
        problems.push(format!("status: expected {want_status}, got {}{detail}", actual.status));
    }
    if let Some(want) = rec.expected.get("output") {
        match &actual.output {
            Some(got) => {
                if let Some(d) = matcher.first_difference(want, got) {
                    problems.push(format!("output {}", d.describe()));
                }
            }
            None => problems.push(format!("output: expected {}, got no output", crate::diff::short(want))),
        }
    }
    // An expected `null` means AWS sent no such field; wfc's empty text is its absent one.
    let absent = |v: &Option<String>| v.as_deref().is_none_or(str::is_empty);
    let show = |v: &Option<String>| v.as_deref().map_or("(absent)".into(), |s| format!("{s:?}"));
    if let Some(want) = rec.expected.get("error") {
        let ok = match want {
            Value::Null => absent(&actual.error),
            Value::String(w) => actual.error.as_deref().is_some_and(|g| matcher.matches_str(w, g)),
            _ => false,
        };
        if !ok {
            problems.push(format!("error: expected {want}, got {}", show(&actual.error)));
        }
    }
    if let Some(want) = rec.expected.get("cause_json") {
        match actual.cause.as_deref().map(serde_json::from_str::<Value>) {
            Some(Ok(got)) => {
                if let Some(d) = matcher.first_difference(want, &got) {
                    problems.push(format!("cause (as JSON) {}", d.describe()));
                }
            }
            _ => problems.push(format!(
                "cause: expected the JSON {}, got {}",
                crate::diff::short(want),
                show(&actual.cause)
            )),
        }
    } else if let Some(want) = rec.expected.get("cause") {
        let ok = match want {
            Value::Null => absent(&actual.cause),
            Value::String(w) => actual.cause.as_deref().is_some_and(|g| matcher.matches_str(w, g)),
            _ => false,
        };
        if !ok {
            problems.push(format!("cause: expected {want}, got {}", show(&actual.cause)));
        }
    }
    if let Some(want) = &rec.states_visited {
        let got = crate::recorded_trace::states_visited(&actual.history, rec.parallel_sorted);
        let (mut want, mut got) = (want.clone(), got);
        if rec.parallel_sorted {
            // The recorded order within a Parallel is the sort's, not the execution's.
            want.sort();
            got.sort();
        }
        crate::case::compare_lists("states_visited", &want, &got, &mut problems);
    }
    problems
}

/// A valid Step Functions name (at most 80 of `A-Za-z0-9-_`) made from the case's file path, so
/// each case runs under its own name and ARN.
fn execution_name(file: &Path) -> String {
    let category = file.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("");
    let stem = file.file_stem().and_then(|n| n.to_str()).unwrap_or("case");
    let raw = format!("{category}-{stem}");
    let clean: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    // Keep the end, which tells the parametrised cases of one test apart.
    let skip = clean.chars().count().saturating_sub(80);
    clean.chars().skip(skip).collect()
}

/// The `handlers` (Lambda function ARN → behaviour) as wfc mocks.
///
/// A bare function ARN `Resource` finds its handler by the ARN. A `lambda:invoke` Task finds it
/// by its state name when its `FunctionName` is written in the definition, else (a
/// `FunctionName` computed at run time) through the integration's resource, by the function the
/// request names (a name that matches none is Lambda's `ResourceNotFoundException`). The `raise` cause document is the Lambda error document, whose JSON
/// separators differ by resource form as AWS records them.
fn mocks_from_handlers(handlers: &Value, definition: &Definition) -> Result<Value, String> {
    let Some(handlers) = handlers.as_object() else {
        return Err("\"handlers\" must be an object from Lambda function ARN to behaviour".into());
    };
    let mut mocks = Map::new();
    for (arn, behaviour) in handlers {
        mocks.insert(arn.clone(), response(arn, behaviour, false)?);
    }
    let invoke_states = match definition {
        Definition::Inline(doc) => lambda_invoke_states(doc),
        Definition::File(_) => Vec::new(),
    };
    let mut dynamic = false;
    for (state, function) in invoke_states {
        match function.and_then(|f| find_handler(handlers, &f)) {
            Some((arn, behaviour)) => {
                mocks.insert(state, response(arn, behaviour, true)?);
            }
            None => dynamic = true,
        }
    }
    if dynamic {
        // A FunctionName computed at run time: the function it names answers, and a name that
        // is none of the case's functions gets Lambda's ResourceNotFoundException.
        let mut functions = Map::new();
        for (arn, behaviour) in handlers {
            functions.insert(arn.clone(), response(arn, behaviour, true)?);
        }
        mocks.insert(wfc_runtime::lambda::INVOKE_RESOURCE.to_owned(), json!({ "functions": functions }));
    }
    Ok(Value::Object(mocks))
}

/// The handler a `FunctionName` (a name, a full or partial ARN) calls.
fn find_handler<'a>(handlers: &'a Map<String, Value>, function: &str) -> Option<(&'a String, &'a Value)> {
    let name = function.rsplit_once(":function:").map_or(function, |(_, n)| n);
    let name = name.split(':').next().unwrap_or(name);
    handlers.iter().find(|(arn, h)| {
        arn.as_str() == function
            || h.get("function_name").and_then(Value::as_str) == Some(name)
            || arn.ends_with(&format!(":function:{name}"))
    })
}

/// Every `lambda:invoke` Task of the definition (nested ones included): its state name and its
/// `FunctionName` when it is written as a constant.
fn lambda_invoke_states(doc: &Value) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let Some(states) = doc.get("States").and_then(Value::as_object) else {
        return out;
    };
    for (name, state) in states {
        if state.get("Resource").and_then(Value::as_str) == Some(wfc_runtime::lambda::INVOKE_RESOURCE) {
            let request = state.get("Parameters").or_else(|| state.get("Arguments"));
            let function = request
                .and_then(|p| p.get("FunctionName"))
                .and_then(Value::as_str)
                .filter(|f| !f.starts_with("{%"))
                .map(str::to_owned);
            out.push((name.clone(), function));
        }
        for branch in state.get("Branches").and_then(Value::as_array).into_iter().flatten() {
            out.extend(lambda_invoke_states(branch));
        }
        for key in ["Iterator", "ItemProcessor"] {
            if let Some(inner) = state.get(key) {
                out.extend(lambda_invoke_states(inner));
            }
        }
    }
    out
}

/// One handler as a wfc mock response. `compact`: the cause document's JSON is written without
/// spaces (`lambda:invoke`); otherwise with Python's `", "` and `": "` (a bare function ARN).
fn response(arn: &str, behaviour: &Value, compact: bool) -> Result<Value, String> {
    let at = |msg: String| format!("handlers[{arn:?}]: {msg}");
    let delay = match behaviour.get("delay_seconds") {
        None | Some(Value::Null) => None,
        Some(d) => Some(d.as_f64().filter(|s| *s >= 0.0).ok_or_else(|| at(format!("bad delay_seconds {d}")))?),
    };
    let mut entry = match behaviour.get("behaviour").and_then(Value::as_str) {
        Some("identity") => json!({ "echo": true }),
        Some("constant") => json!({ "return": behaviour.get("value").cloned().unwrap_or(Value::Null) }),
        Some("raise") => {
            let text = |k: &str| behaviour.get(k).and_then(Value::as_str).map(str::to_owned);
            let error =
                text("error_type").filter(|e| !e.is_empty()).ok_or_else(|| at("raise needs error_type".into()))?;
            let message = text("error_message").unwrap_or_default();
            json!({ "throw": { "error": error, "cause": lambda_error_document(&error, &message, arn, compact) } })
        }
        other => return Err(at(format!("unknown behaviour {other:?}"))),
    };
    if let Some(d) = delay {
        entry["delay_seconds"] = json!(d);
    }
    Ok(entry)
}

/// The error document a Python Lambda function's uncaught exception produces:
/// `{"errorMessage", "errorType", "requestId", "stackTrace"}`. The stack trace is that of the
/// recorded handlers: `raise T("message")` on line 2 of `handler.py`, or, for an exception
/// raised without a message, `raise T()` on line 9 (after the exception class's definition).
pub(crate) fn lambda_error_document(error: &str, message: &str, arn: &str, compact: bool) -> String {
    let frame = if message.is_empty() {
        format!("  File \"/var/task/handler.py\", line 9, in handler\n    raise {error}()\n")
    } else {
        let quoted = serde_json::to_string(message).unwrap_or_default();
        format!("  File \"/var/task/handler.py\", line 2, in handler\n    raise {error}({quoted})\n")
    };
    // A request id per function, stable from run to run.
    let h = arn.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let request_id = format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xfff,
        (h >> 20) & 0xfff,
        h & 0xffff_ffff_ffff
    );
    let doc = json!({ "errorMessage": message, "errorType": error, "requestId": request_id, "stackTrace": [frame] });
    if compact {
        return doc.to_string();
    }
    // Python's json.dumps: ", " between items, ": " after keys.
    let mut out = String::new();
    python_json(&doc, &mut out);
    out
}

/// JSON text as Python's `json.dumps` writes it by default.
fn python_json(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                python_json(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_documents_follow_the_resource_form() {
        let bare = lambda_error_document("Exception", "Boom", "arn:f", false);
        assert!(
            bare.starts_with("{\"errorMessage\": \"Boom\", \"errorType\": \"Exception\", \"requestId\": \""),
            "{bare}"
        );
        assert!(bare.ends_with("\"stackTrace\": [\"  File \\\"/var/task/handler.py\\\", line 2, in handler\\n    raise Exception(\\\"Boom\\\")\\n\"]}"), "{bare}");
        let compact = lambda_error_document("Custom", "", "arn:f", true);
        assert!(compact.starts_with("{\"errorMessage\":\"\",\"errorType\":\"Custom\",\"requestId\":\""), "{compact}");
        assert!(compact.contains("line 9, in handler\\n    raise Custom()\\n"), "{compact}");
    }

    #[test]
    fn handlers_become_mocks_by_resource_form() {
        let arn = "arn:aws:lambda:us-east-1:111111111111:function:f1";
        let handlers = json!({ arn: {"function_name": "f1", "behaviour": "identity", "delay_seconds": 2} });
        let def = Definition::Inline(json!({"StartAt": "A", "States": {
            "A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "f1"}, "Next": "B"},
            "B": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName.$": "$.f"}, "End": true}
        }}));
        let mocks = mocks_from_handlers(&handlers, &def).unwrap();
        assert_eq!(mocks[arn], json!({"echo": true, "delay_seconds": 2.0}));
        assert_eq!(mocks["A"], json!({"echo": true, "delay_seconds": 2.0}));
        // B's FunctionName is known only at run time: the function it names answers.
        assert_eq!(
            mocks[wfc_runtime::lambda::INVOKE_RESOURCE],
            json!({"functions": { arn: {"echo": true, "delay_seconds": 2.0} }})
        );
        let constant = json!({ arn: {"behaviour": "constant", "value": [1]} });
        assert_eq!(mocks_from_handlers(&constant, &def).unwrap()[arn], json!({"return": [1]}));
        assert!(mocks_from_handlers(&json!({ arn: {"behaviour": "dance"} }), &def).is_err());
    }

    #[test]
    fn execution_names_are_valid_and_distinct() {
        let a = execution_name(Path::new("x/base/test_a__B[1].json"));
        assert_eq!(a, "base-test_a__B_1_");
        let long = execution_name(Path::new(&format!("x/c/{}.json", "n".repeat(100))));
        assert_eq!(long.len(), 80);
    }
}
