//! Scripted answers to `.waitForTaskToken` tasks, for case files (the `callbacks` field, see
//! docs/case-format.md): `{"<state name>": [answer, ...]}` where an answer is
//! `{"success": <json>}`, `{"echo": true}` (succeed with what the handler was sent),
//! `{"failure": {"error", "cause"}}` or `{"no_answer": true}`, optionally with
//! `"delay_seconds": <n>` and `"heartbeat_every_seconds": <n>` (heartbeats sent while the answer
//! is delayed). Each wait of the state takes the next answer; the last one repeats.
//!
//! This file depends only on `std`, `serde_json`, `tokio` and `wfc_runtime`: the compiled engine
//! copies it verbatim into the program it builds, so both engines answer the same way.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use wfc_runtime::Callbacks;
use wfc_runtime::callback::WaitingTask;

/// What one answer does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AnswerAction {
    /// SendTaskSuccess with this output.
    Success(Value),
    /// SendTaskSuccess with the input the handler was called with.
    Echo,
    /// SendTaskFailure.
    Failure {
        /// The error name.
        error: String,
        /// The cause.
        cause: String,
    },
    /// Nothing is ever sent (heartbeats aside): the task waits for its timeout.
    NoAnswer,
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// What is sent.
    pub(crate) action: AnswerAction,
    /// After how long (seconds on the execution's clock).
    pub(crate) delay_seconds: f64,
    /// Heartbeats during the delay, every this many seconds.
    pub(crate) heartbeat_every_seconds: Option<f64>,
}

/// The longest delay accepted, as for mocks (AWS's longest task timeout).
const MAX_SECONDS: f64 = 99_999_999.0;

/// The scripted answers of one execution, per state name.
#[derive(Debug, Default)]
pub(crate) struct CallbackAnswers {
    by_state: BTreeMap<String, Vec<Answer>>,
    calls: Mutex<HashMap<String, usize>>,
}

fn seconds(obj: &serde_json::Map<String, Value>, field: &str) -> Result<Option<f64>, String> {
    match obj.get(field) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(s) if (0.0..=MAX_SECONDS).contains(&s) => Ok(Some(s)),
            _ => Err(format!("\"{field}\" must be a number of seconds from 0 to {MAX_SECONDS}, found {v}")),
        },
    }
}

fn parse_answer(v: &Value) -> Result<Answer, String> {
    let Value::Object(obj) = v else {
        return Err(format!("an answer must be an object, found {v}"));
    };
    let known = ["success", "echo", "failure", "no_answer", "delay_seconds", "heartbeat_every_seconds"];
    if let Some(unknown) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("unknown field \"{unknown}\" (expected one of {})", known.join(", ")));
    }
    let mut actions = Vec::new();
    if let Some(v) = obj.get("success") {
        actions.push(AnswerAction::Success(v.clone()));
    }
    if obj.get("echo") == Some(&Value::Bool(true)) {
        actions.push(AnswerAction::Echo);
    }
    if let Some(f) = obj.get("failure") {
        let error = f.get("error").and_then(Value::as_str).ok_or("\"failure\" needs an \"error\" string")?;
        let cause = f.get("cause").and_then(Value::as_str).unwrap_or("");
        actions.push(AnswerAction::Failure { error: error.to_owned(), cause: cause.to_owned() });
    }
    if obj.get("no_answer") == Some(&Value::Bool(true)) {
        actions.push(AnswerAction::NoAnswer);
    }
    if actions.len() != 1 {
        return Err(
            "an answer needs exactly one of \"success\", \"echo\": true, \"failure\", \"no_answer\": true".into()
        );
    }
    let heartbeat_every_seconds = seconds(obj, "heartbeat_every_seconds")?;
    if heartbeat_every_seconds == Some(0.0) {
        return Err("\"heartbeat_every_seconds\" must be more than 0".into());
    }
    Ok(Answer {
        action: actions.remove(0),
        delay_seconds: seconds(obj, "delay_seconds")?.unwrap_or(0.0),
        heartbeat_every_seconds,
    })
}

impl CallbackAnswers {
    /// Reads the `callbacks` object of a case.
    pub(crate) fn from_json(doc: &Value) -> Result<CallbackAnswers, String> {
        let Value::Object(map) = doc else {
            return Err(format!("callbacks must be an object from state name to answers, found {doc}"));
        };
        let mut by_state = BTreeMap::new();
        for (state, value) in map {
            let answers = match value {
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, a)| parse_answer(a).map_err(|e| format!("callbacks[{state:?}][{i}]: {e}")))
                    .collect::<Result<Vec<_>, _>>()?,
                other => vec![parse_answer(other).map_err(|e| format!("callbacks[{state:?}]: {e}"))?],
            };
            if answers.is_empty() {
                return Err(format!("callbacks[{state:?}]: the list of answers is empty"));
            }
            by_state.insert(state.clone(), answers);
        }
        Ok(CallbackAnswers { by_state, calls: Mutex::new(HashMap::new()) })
    }

    /// The next answer for a wait of `state` (the last one repeats).
    pub(crate) fn next(&self, state: &str) -> Option<Answer> {
        let answers = self.by_state.get(state)?;
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let n = calls.entry(state.to_owned()).or_insert(0);
        let answer = answers.get(*n).or_else(|| answers.last()).cloned();
        *n += 1;
        answer
    }

    /// Runs `run` while answering every task that starts waiting on `callbacks`.
    pub(crate) async fn serve<F: Future>(&self, callbacks: &Callbacks, run: F) -> F::Output {
        let mut waiting = callbacks.subscribe();
        let mut run = std::pin::pin!(run);
        let mut answering = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                biased;
                output = &mut run => return output,
                Some(task) = waiting.recv() => {
                    if let Some(answer) = self.next(&task.state_name) {
                        answering.spawn(deliver(callbacks.clone(), task, answer));
                    }
                }
                Some(_) = answering.join_next(), if !answering.is_empty() => {}
            }
        }
    }
}

/// Sends one answer after its delay, with heartbeats on the way.
async fn deliver(callbacks: Callbacks, task: WaitingTask, answer: Answer) {
    let mut left = Duration::from_secs_f64(answer.delay_seconds);
    if let Some(every) = answer.heartbeat_every_seconds.map(Duration::from_secs_f64) {
        while left > every || (answer.action == AnswerAction::NoAnswer && !every.is_zero()) {
            tokio::time::sleep(every).await;
            left = left.saturating_sub(every);
            if callbacks.send_heartbeat(&task.token).is_err() {
                return;
            }
        }
    }
    tokio::time::sleep(left).await;
    // A task that timed out meanwhile refuses the send; that is the point of a late answer.
    let _ = match answer.action {
        AnswerAction::Success(v) => callbacks.send_success(&task.token, v),
        AnswerAction::Echo => callbacks.send_success(&task.token, task.input),
        AnswerAction::Failure { error, cause } => callbacks.send_failure(&task.token, &error, &cause),
        AnswerAction::NoAnswer => Ok(()),
    };
}
