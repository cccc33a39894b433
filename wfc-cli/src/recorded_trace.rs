//! Comparing wfc's history with the `trace` an AWS-recorded case holds: first the sequence of
//! event types (AWS's `GetExecutionHistory` names), then, where those agree, each recorded
//! event's details.
//!
//! A recorded event is `{"type", ...fields of its *EventDetails}`; wfc's is `{"type",
//! "details": {...}, ...}`. Only the fields the recording kept are compared (ids and timestamps
//! were dropped from it), with placeholders; `cause_json` is compared with the cause parsed as
//! JSON, and an `error` or `cause` the recording does not have must be absent from wfc's event
//! too. The service integrations' `resource` is compared in AWS's split form (`resourceType`
//! `lambda`, `resource` `invoke`).
//!
//! Where the case's `notes` say the recording sorted the events of Parallel branches, the events
//! between a `ParallelStateStarted` and the end of that Parallel are compared in a canonical
//! order on both sides (by type, then state name), since their recorded order is not the
//! execution's.

use serde_json::{Map, Value};

use crate::outcome::event_type;
use crate::placeholders::Matcher;

/// The fields of a recorded event that are information only.
const IGNORED_FIELDS: [&str; 2] = ["type", "_raw_text_fields"];

/// The first difference between the recorded event types and wfc's, as one line.
pub(crate) fn compare_types(expected: &[Value], actual: &[Value], parallel_sorted: bool) -> Option<String> {
    let want: Vec<Value> = normalise(expected, parallel_sorted, recorded_name);
    let got: Vec<Value> = normalise(actual, parallel_sorted, |e| crate::outcome::state_name(e).map(str::to_owned));
    let want_types: Vec<String> = want.iter().map(|e| event_type(e).unwrap_or("?").to_owned()).collect();
    let got_types: Vec<String> = got.iter().map(|e| event_type(e).unwrap_or("?").to_owned()).collect();
    let mut problems = Vec::new();
    crate::case::compare_lists("trace", &want_types, &got_types, &mut problems);
    problems.into_iter().next()
}

/// The first difference in the details of the events, once their types agree.
pub(crate) fn compare_details(
    expected: &[Value],
    actual: &[Value],
    parallel_sorted: bool,
    matcher: &mut Matcher,
) -> Option<String> {
    let want = normalise(expected, parallel_sorted, recorded_name);
    let got = normalise(actual, parallel_sorted, |e| crate::outcome::state_name(e).map(str::to_owned));
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        let Some(fields) = w.as_object() else { continue };
        let details = aws_details(g);
        let ty = event_type(w).unwrap_or("?");
        for (key, value) in fields {
            if IGNORED_FIELDS.contains(&key.as_str()) {
                continue;
            }
            let problem = if key == "cause_json" {
                match details.get("cause").and_then(Value::as_str).map(serde_json::from_str::<Value>) {
                    Some(Ok(parsed)) => matcher.first_difference(value, &parsed).map(|d| d.describe()),
                    Some(Err(_)) => Some(format!("the cause is not JSON: {}", details["cause"])),
                    None => Some("no cause".into()),
                }
            } else {
                match details.get(key) {
                    Some(got) => matcher.first_difference(value, got).map(|d| d.describe()),
                    None => Some(format!("expected {}, got (absent)", crate::diff::short(value))),
                }
            };
            if let Some(p) = problem {
                return Some(format!("trace[{i}] ({ty}).{key} {p}"));
            }
        }
        // AWS leaves out an error or cause it does not have; so must wfc.
        for key in ["error", "cause"] {
            let recorded = fields.contains_key(key) || (key == "cause" && fields.contains_key("cause_json"));
            if !recorded && details.get(key).is_some_and(|v| !v.is_null()) {
                return Some(format!("trace[{i}] ({ty}).{key}: expected (absent), got {}", details[key]));
            }
        }
    }
    None
}

/// wfc's event details in AWS's vocabulary: a service integration's `resource` split into
/// `resourceType` and `resource` (`arn:aws:states:::lambda:invoke` → `lambda`, `invoke`) with
/// the `region` it ran in.
fn aws_details(event: &Value) -> Map<String, Value> {
    let mut details = event.get("details").and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(Value::String(resource)) = details.get("resource").cloned()
        && let Some(rest) = resource.strip_prefix("arn:aws:states:::")
        && let Some((service, action)) = rest.split_once(':')
    {
        details.insert("resourceType".into(), Value::String(service.to_owned()));
        details.insert("resource".into(), Value::String(action.to_owned()));
        details.insert("region".into(), Value::String(crate::recorded::REGION.to_owned()));
    }
    // Absent limits are absent, not null; a document that is JSON null (a state's `null`
    // output, a Map item that is null) is recorded by AWS as the text "null", so it stays.
    details.retain(|k, v| !v.is_null() || matches!(k.as_str(), "input" | "output" | "parameters"));
    // AWS writes assigned variables as JSON text, which the recordings decoded.
    if let Some(Value::Object(vars)) = details.get_mut("assignedVariables") {
        for v in vars.values_mut() {
            if let Some(parsed) = v.as_str().and_then(|t| serde_json::from_str::<Value>(t).ok()) {
                *v = parsed;
            }
        }
    }
    details
}

/// The state a recorded event names (`name` is flattened into it).
fn recorded_name(event: &Value) -> Option<String> {
    event.get("name").and_then(Value::as_str).map(str::to_owned)
}

/// The events, with those of each Parallel's branches put in a canonical order when the
/// recording sorted them.
fn normalise(events: &[Value], parallel_sorted: bool, name: impl Fn(&Value) -> Option<String>) -> Vec<Value> {
    if !parallel_sorted {
        return events.to_vec();
    }
    // The recordings' sorting step (LocalStack's SfnNoneRecursiveParallelTransformer) also
    // drops each `ParallelStateSucceeded`, so the branch events run to `ParallelStateExited`.
    let mut out: Vec<Value> =
        events.iter().filter(|e| event_type(e) != Some("ParallelStateSucceeded")).cloned().collect();
    let mut i = 0;
    while i < out.len() {
        if event_type(&out[i]) == Some("ParallelStateStarted") {
            // The branch events run to the matching end of this Parallel (nesting counted).
            let mut depth = 0;
            let mut end = out.len();
            for (j, e) in out.iter().enumerate().skip(i + 1) {
                match event_type(e) {
                    Some("ParallelStateStarted") => depth += 1,
                    Some("ParallelStateFailed" | "ParallelStateAborted" | "ParallelStateExited") if depth == 0 => {
                        end = j;
                        break;
                    }
                    Some("ParallelStateExited") => depth -= 1,
                    _ => {}
                }
            }
            out[i + 1..end].sort_by_key(|e| (event_type(e).unwrap_or("").to_owned(), name(e).unwrap_or_default()));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// The states entered, in the (normalised) order of `events`, for a case whose recording sorted
/// Parallel branch events.
pub(crate) fn states_visited(events: &[Value], parallel_sorted: bool) -> Vec<String> {
    normalise(events, parallel_sorted, |e| crate::outcome::state_name(e).map(str::to_owned))
        .iter()
        .filter(|e| event_type(e).is_some_and(|t| t.ends_with("StateEntered")))
        .filter_map(|e| crate::outcome::state_name(e).map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wfc(ty: &str, details: Value) -> Value {
        json!({"type": ty, "details": details})
    }

    #[test]
    fn types_and_details_are_compared() {
        let expected = vec![
            json!({"type": "ExecutionStarted", "input": {"a": "<uuid:1>"}}),
            json!({"type": "TaskScheduled", "resource": "invoke", "resourceType": "lambda", "region": "<region>"}),
            json!({"type": "ExecutionFailed", "error": "E", "cause_json": {"id": "<uuid:1>"}}),
        ];
        let actual = vec![
            wfc("ExecutionStarted", json!({"input": {"a": "x1"}, "roleArn": "r"})),
            wfc("TaskScheduled", json!({"resource": "arn:aws:states:::lambda:invoke", "timeoutInSeconds": null})),
            wfc("ExecutionFailed", json!({"error": "E", "cause": "{\"id\": \"x1\"}"})),
        ];
        assert_eq!(compare_types(&expected, &actual, false), None);
        assert_eq!(compare_details(&expected, &actual, false, &mut Matcher::new(&[])), None);
        let wrong = vec![
            actual[0].clone(),
            actual[1].clone(),
            wfc("ExecutionFailed", json!({"error": "E", "cause": "{\"id\": \"x2\"}"})),
        ];
        assert!(compare_details(&expected, &wrong, false, &mut Matcher::new(&[])).unwrap().contains("trace[2]"));
        assert!(compare_types(&expected, &actual[..2], false).unwrap().contains("index 2"));
    }

    #[test]
    fn an_absent_cause_must_stay_absent() {
        let expected = vec![json!({"type": "ExecutionFailed", "error": "E"})];
        let actual = vec![wfc("ExecutionFailed", json!({"error": "E", "cause": ""}))];
        assert!(compare_details(&expected, &actual, false, &mut Matcher::new(&[])).unwrap().contains(".cause"));
    }

    #[test]
    fn sorted_parallel_branches_compare_in_canonical_order() {
        let names = |ns: &[(&str, &str)]| -> Vec<Value> {
            ns.iter()
                .map(|(t, n)| if n.is_empty() { json!({"type": t}) } else { json!({"type": t, "name": n}) })
                .collect()
        };
        let expected = names(&[
            ("ParallelStateStarted", ""),
            ("PassStateEntered", "B1"),
            ("PassStateEntered", "B2"),
            ("PassStateExited", "B1"),
            ("PassStateExited", "B2"),
            ("ParallelStateSucceeded", ""),
        ]);
        let actual: Vec<Value> = [
            ("ParallelStateStarted", ""),
            ("PassStateEntered", "B1"),
            ("PassStateExited", "B1"),
            ("PassStateEntered", "B2"),
            ("PassStateExited", "B2"),
            ("ParallelStateSucceeded", ""),
        ]
        .iter()
        .map(|(t, n)| wfc(t, if n.is_empty() { json!({}) } else { json!({"name": n}) }))
        .collect();
        assert_eq!(compare_types(&expected, &actual, true), None);
        assert!(compare_types(&expected, &actual, false).is_some());
        assert_eq!(states_visited(&actual, true), vec!["B1", "B2"]);
    }
}
