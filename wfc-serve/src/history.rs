//! wfc's history events in AWS's `HistoryEvent` shape: `timestamp` (epoch seconds), `type`,
//! `id`, `previousEventId` and the one `<kind>EventDetails` member AWS gives that event type,
//! with only that shape's members, and documents (`input`, `output`, `parameters`) as JSON
//! text, as AWS sends them. Event types AWS does not have (wfc's Serverless Workflow events)
//! keep their type and no details.

use serde_json::{Map, Value, json};
use wfc_runtime::HistoryEvent;

/// The details member and its members for an event type.
fn details_shape(event_type: &str) -> Option<(&'static str, &'static [&'static str])> {
    const STATE_ENTERED: &[&str] = &["name", "input"];
    const STATE_EXITED: &[&str] = &["name", "output"];
    const ERROR: &[&str] = &["error", "cause"];
    const TASK_ERROR: &[&str] = &["resourceType", "resource", "error", "cause"];
    const ITERATION: &[&str] = &["name", "index"];
    Some(match event_type {
        "ExecutionStarted" => ("executionStartedEventDetails", &["input", "roleArn"]),
        "ExecutionSucceeded" => ("executionSucceededEventDetails", &["output"]),
        "ExecutionFailed" => ("executionFailedEventDetails", ERROR),
        "ExecutionTimedOut" => ("executionTimedOutEventDetails", ERROR),
        "ExecutionAborted" => ("executionAbortedEventDetails", ERROR),
        "ExecutionRedriven" => ("executionRedrivenEventDetails", &["redriveCount"]),
        "MapStateStarted" => ("mapStateStartedEventDetails", &["length"]),
        "MapIterationStarted" => ("mapIterationStartedEventDetails", ITERATION),
        "MapIterationSucceeded" => ("mapIterationSucceededEventDetails", ITERATION),
        "MapIterationFailed" => ("mapIterationFailedEventDetails", ITERATION),
        "MapIterationAborted" => ("mapIterationAbortedEventDetails", ITERATION),
        "MapRunStarted" => ("mapRunStartedEventDetails", &["mapRunArn"]),
        "MapRunFailed" => ("mapRunFailedEventDetails", ERROR),
        "MapRunRedriven" => ("mapRunRedrivenEventDetails", &["mapRunArn", "redriveCount"]),
        "TaskScheduled" => (
            "taskScheduledEventDetails",
            &[
                "resourceType",
                "resource",
                "region",
                "parameters",
                "timeoutInSeconds",
                "heartbeatInSeconds",
                "taskCredentials",
            ],
        ),
        "TaskStarted" => ("taskStartedEventDetails", &["resourceType", "resource"]),
        "TaskSucceeded" => ("taskSucceededEventDetails", &["resourceType", "resource", "output"]),
        "TaskFailed" => ("taskFailedEventDetails", TASK_ERROR),
        "TaskTimedOut" => ("taskTimedOutEventDetails", TASK_ERROR),
        t if t.ends_with("StateEntered") && !t.starts_with("Sw") => ("stateEnteredEventDetails", STATE_ENTERED),
        t if t.ends_with("StateExited") && !t.starts_with("Sw") => ("stateExitedEventDetails", STATE_EXITED),
        _ => return None,
    })
}

/// AWS's `resourceType` and `resource` of a Task resource: `arn:aws:states:::lambda:invoke` is
/// `lambda` and `invoke`; another ARN is its service and the whole ARN.
fn split_resource(resource: &str) -> (String, String) {
    if let Some((service, action)) = resource.strip_prefix("arn:aws:states:::").and_then(|r| r.split_once(':')) {
        return (service.to_owned(), action.to_owned());
    }
    let parts: Vec<&str> = resource.split(':').collect();
    match parts.as_slice() {
        ["arn", _, service, ..] => ((*service).to_owned(), resource.to_owned()),
        _ => ("wfc".to_owned(), resource.to_owned()),
    }
}

fn seconds(timestamp: &str) -> Value {
    match timestamp.parse::<jiff::Timestamp>() {
        Ok(t) => json!(t.as_millisecond() as f64 / 1000.0),
        Err(_) => json!(0),
    }
}

/// One event in AWS's shape. Without `include_data`, `input` and `output` are left out (as
/// `includeExecutionData: false` does on AWS).
pub fn aws_event(event: &HistoryEvent, region: &str, include_data: bool) -> Value {
    let event_type = event.event_type.name();
    let mut out = Map::new();
    out.insert("timestamp".into(), seconds(&event.timestamp));
    out.insert("type".into(), json!(event_type));
    out.insert("id".into(), json!(event.id));
    out.insert("previousEventId".into(), json!(event.previous_event_id));
    if let Some((member, fields)) = details_shape(event_type) {
        let mut details = Map::new();
        for field in fields.iter().copied() {
            let value = match field {
                "resourceType" | "resource" => {
                    let resource = event.details.get("resource").and_then(Value::as_str).unwrap_or_default();
                    let (kind, name) = split_resource(resource);
                    Some(json!(if field == "resourceType" { kind } else { name }))
                }
                "region" => Some(json!(region)),
                "input" | "output" if !include_data => None,
                "input" | "output" | "parameters" => {
                    // Serialized from the event as it is: no copy of the document first.
                    let v = event.details.get(field).unwrap_or(&Value::Null);
                    (field == "parameters" || !v.is_null() || event_type.starts_with("Execution"))
                        .then(|| Value::String(serde_json::to_string(v).unwrap_or_default()))
                }
                _ => event.details.get(field).filter(|v| !v.is_null()).cloned(),
            };
            if let Some(v) = value {
                details.insert(field.to_owned(), v);
            }
        }
        if !include_data && fields.iter().any(|f| matches!(*f, "input" | "output")) {
            let key = if fields.contains(&"input") { "inputDetails" } else { "outputDetails" };
            details.insert(key.into(), json!({ "truncated": false }));
        }
        out.insert(member.into(), Value::Object(details));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_split_as_aws_does() {
        assert_eq!(split_resource("arn:aws:states:::lambda:invoke"), ("lambda".into(), "invoke".into()));
        assert_eq!(
            split_resource("arn:aws:states:::sqs:sendMessage.waitForTaskToken"),
            ("sqs".into(), "sendMessage.waitForTaskToken".into())
        );
        let act = "arn:aws:states:us-east-1:123456789012:activity:Pack";
        assert_eq!(split_resource(act), ("states".into(), act.into()));
        assert_eq!(split_resource("local:thing"), ("wfc".into(), "local:thing".into()));
    }
}
