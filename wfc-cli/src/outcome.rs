//! How an execution ended, in the engine-independent shape `wfc run` prints and `wfc test`
//! checks. Both engines produce it: the interpreter directly, the compiled engine by printing it
//! as JSON from the generated program, which the CLI parses back with [`Outcome::from_json`].

use serde_json::{Map, Value, json};

/// The end of one execution.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// `SUCCEEDED`, `FAILED` or `TIMED_OUT`.
    pub(crate) status: String,
    /// The output, when it succeeded.
    pub(crate) output: Option<Value>,
    /// The error name, when it failed or timed out.
    pub(crate) error: Option<String>,
    /// The cause, when it failed or timed out.
    pub(crate) cause: Option<String>,
    /// Seconds from start to end on the execution's clock; recorded on virtual time only, where it
    /// is deterministic.
    pub(crate) elapsed_seconds: Option<f64>,
    /// The history events, each serialized as the runtime serializes them.
    pub(crate) history: Vec<Value>,
}

/// The statuses an execution can end with.
pub(crate) const STATUSES: [&str; 3] = ["SUCCEEDED", "FAILED", "TIMED_OUT"];

impl Outcome {
    /// Whether the execution succeeded.
    pub(crate) fn succeeded(&self) -> bool {
        self.status == "SUCCEEDED"
    }

    /// The JSON object `wfc run` prints: `{"status", "output"}` or `{"status", "error", "cause"}`,
    /// plus `elapsed_seconds` when known and `history` when asked for.
    pub(crate) fn to_json(&self, with_history: bool) -> Value {
        let mut map = Map::new();
        map.insert("status".into(), json!(self.status));
        if self.succeeded() {
            map.insert("output".into(), self.output.clone().unwrap_or(Value::Null));
        } else {
            // `null` when there is none: AWS gives a timed-out execution neither.
            map.insert("error".into(), json!(self.error));
            map.insert("cause".into(), json!(self.cause));
        }
        if let Some(secs) = self.elapsed_seconds {
            map.insert("elapsed_seconds".into(), seconds_json(secs));
        }
        if with_history {
            map.insert("history".into(), Value::Array(self.history.clone()));
        }
        Value::Object(map)
    }

    /// Parses what [`Outcome::to_json`] printed (with history).
    pub(crate) fn from_json(v: &Value) -> Result<Outcome, String> {
        let status = v
            .get("status")
            .and_then(Value::as_str)
            .filter(|s| STATUSES.contains(s))
            .ok_or_else(|| format!("no valid \"status\" in {v}"))?
            .to_owned();
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(Outcome {
            output: if status == "SUCCEEDED" { v.get("output").cloned() } else { None },
            error: text("error"),
            cause: text("cause"),
            elapsed_seconds: v.get("elapsed_seconds").and_then(Value::as_f64),
            history: v.get("history").and_then(Value::as_array).cloned().unwrap_or_default(),
            status,
        })
    }

    /// The event type of every history event, in order (`ExecutionStarted`, `PassStateEntered`, ...).
    pub(crate) fn event_types(&self) -> Vec<String> {
        self.history.iter().map(|e| event_type(e).unwrap_or("?").to_owned()).collect()
    }

    /// The names of the states entered, in order (from the `*StateEntered` events).
    pub(crate) fn states_visited(&self) -> Vec<String> {
        self.history
            .iter()
            .filter(|e| event_type(e).is_some_and(|t| t.ends_with("StateEntered")))
            .filter_map(|e| state_name(e).map(str::to_owned))
            .collect()
    }
}

/// Whole seconds print as integers (`3`, not `3.0`), so expected values can be written naturally.
pub(crate) fn seconds_json(secs: f64) -> Value {
    if secs.fract() == 0.0 && secs.abs() < 9.0e15 { json!(secs as i64) } else { json!(secs) }
}

/// An event's type: the `type` field (AWS's `GetExecutionHistory` spelling), or `Type`.
pub(crate) fn event_type(event: &Value) -> Option<&str> {
    event.get("type").or_else(|| event.get("Type")).and_then(Value::as_str)
}

/// The state an event is about: the runtime's `details.name`, or AWS's
/// `stateEnteredEventDetails.name` (so histories exported from AWS read the same).
pub(crate) fn state_name(event: &Value) -> Option<&str> {
    ["details", "stateEnteredEventDetails"].iter().find_map(|k| event.get(*k)?.get("name")?.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shapes() {
        let ok = Outcome {
            status: "SUCCEEDED".into(),
            output: Some(json!({"a": 1})),
            error: None,
            cause: None,
            elapsed_seconds: Some(3.0),
            history: vec![],
        };
        assert_eq!(ok.to_json(false), json!({"status": "SUCCEEDED", "output": {"a": 1}, "elapsed_seconds": 3}));
        let failed = Outcome {
            status: "FAILED".into(),
            output: None,
            error: Some("E".into()),
            cause: None,
            elapsed_seconds: None,
            history: vec![json!({"type": "ExecutionStarted"})],
        };
        let v = failed.to_json(true);
        assert_eq!(
            v,
            // An absent cause is `null`, not `""`.
            json!({"status": "FAILED", "error": "E", "cause": null, "history": [{"type": "ExecutionStarted"}]})
        );
        let back = Outcome::from_json(&v).unwrap();
        assert_eq!(back.error.as_deref(), Some("E"));
        assert_eq!(back.event_types(), vec!["ExecutionStarted"]);
        assert!(Outcome::from_json(&json!({"status": "DONE"})).is_err());
    }

    #[test]
    fn states_visited_come_from_entered_events() {
        let o = Outcome {
            status: "SUCCEEDED".into(),
            output: None,
            error: None,
            cause: None,
            elapsed_seconds: None,
            history: vec![
                json!({"type": "ExecutionStarted"}),
                json!({"type": "PassStateEntered", "details": {"name": "A"}}),
                json!({"type": "PassStateExited", "details": {"name": "A"}}),
                json!({"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "B"}}),
            ],
        };
        assert_eq!(o.states_visited(), vec!["A", "B"]);
    }
}
