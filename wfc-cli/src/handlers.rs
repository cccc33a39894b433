//! `--handlers FILE`: Task resources answered by running commands, so `wfc run` and `wfc worker`
//! run real work with no Rust written (docs/cli.md).
//!
//! The file is a JSON object from a Task `Resource` (or a state name) to
//! `{"command": [PROGRAM, ARGS...]}`. The command gets the effective input (after Parameters) as
//! JSON on stdin and must print the result as JSON on stdout. A non-zero exit is a task error:
//! `{"Error": ..., "Cause": ...}` on stderr names it, otherwise it is `States.TaskFailed` with
//! stderr as the cause. The command also sees `WFC_EXECUTION_NAME`, `WFC_STATE_NAME`,
//! `WFC_RESOURCE`, `WFC_RETRY_COUNT` and, for a `.waitForTaskToken` Task, `WFC_TASK_TOKEN`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use wfc_interp::DynHandler;
use wfc_runtime::{Failure, TaskContext};

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandSpec {
    /// The program.
    pub(crate) program: String,
    /// Its arguments.
    pub(crate) args: Vec<String>,
}

/// Commands by resource or state name, with a fallback handler (mocks) for the rest.
pub(crate) struct CommandHandlers<F> {
    commands: HashMap<String, CommandSpec>,
    fallback: F,
    /// On virtual time a command takes no execution time: it runs on tokio's blocking pool,
    /// which holds a paused clock still (no timer fires and nothing is counted meanwhile).
    virtual_time: bool,
}

/// Reads a handlers file.
pub(crate) fn load(path: &Path) -> Result<HashMap<String, CommandSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
    parse(&doc).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a handlers document.
pub(crate) fn parse(doc: &Value) -> Result<HashMap<String, CommandSpec>, String> {
    let Value::Object(map) = doc else {
        return Err("the handlers file must be a JSON object from a Task resource to {\"command\": [...]}".into());
    };
    let mut out = HashMap::new();
    for (key, spec) in map {
        let command = spec
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.get("command"))
            .and_then(Value::as_array)
            .ok_or_else(|| format!("handler {key:?} must be {{\"command\": [PROGRAM, ARGS...]}}"))?;
        let words = command
            .iter()
            .map(|w| w.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| format!("handler {key:?}: every word of the command must be a string"))?;
        let Some((program, args)) = words.split_first() else {
            return Err(format!("handler {key:?}: the command is empty"));
        };
        out.insert(key.clone(), CommandSpec { program: program.clone(), args: args.to_vec() });
    }
    Ok(out)
}

impl<F: DynHandler> CommandHandlers<F> {
    /// Commands first (state name, then resource), else `fallback`.
    pub(crate) fn new(commands: HashMap<String, CommandSpec>, fallback: F) -> CommandHandlers<F> {
        CommandHandlers { commands, fallback, virtual_time: false }
    }

    /// Runs the commands without letting the virtual clock move (see the field).
    pub(crate) fn on_virtual_time(mut self, on: bool) -> CommandHandlers<F> {
        self.virtual_time = on;
        self
    }
}

impl<F: DynHandler> DynHandler for CommandHandlers<F> {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        let spec = self.commands.get(ctx.state_name()).or_else(|| self.commands.get(resource));
        match spec {
            Some(spec) if self.virtual_time => {
                let (spec, resource) = (spec.clone(), resource.to_owned());
                Box::pin(async move {
                    tokio::task::spawn_blocking(move || {
                        // The blocking pool's thread has a runtime handle: run the same code there.
                        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                            Failure::new(wfc_ir::errors::TASK_FAILED, format!("cannot start the handler runtime: {e}"))
                        })?;
                        rt.block_on(run_command(&spec, &resource, input, ctx))
                    })
                    .await
                    .map_err(|e| {
                        Failure::new(wfc_ir::errors::TASK_FAILED, format!("the handler command failed: {e}"))
                    })?
                })
            }
            Some(spec) => Box::pin(run_command(spec, resource, input, ctx)),
            None => self.fallback.call(resource, input, ctx),
        }
    }
}

/// The error a command reported on stderr, or `States.TaskFailed` with stderr as the cause.
fn command_failure(status: std::process::ExitStatus, stderr: &[u8]) -> Failure {
    let text = String::from_utf8_lossy(stderr);
    let trimmed = text.trim();
    if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(trimmed)
        && let Some(error) = obj.get("Error").and_then(Value::as_str)
    {
        let cause = obj.get("Cause").and_then(Value::as_str).unwrap_or("");
        return Failure::new(error, cause);
    }
    let cause =
        if trimmed.is_empty() { format!("the handler command exited with {status}") } else { trimmed.to_owned() };
    Failure::new(wfc_ir::errors::TASK_FAILED, cause)
}

async fn run_command(spec: &CommandSpec, resource: &str, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A Task that times out drops this future: the command must not outlive it.
        .kill_on_drop(true)
        .env("WFC_EXECUTION_NAME", ctx.execution_name())
        .env("WFC_STATE_NAME", ctx.state_name())
        .env("WFC_RESOURCE", resource)
        .env("WFC_RETRY_COUNT", ctx.retry_count().to_string());
    if let Some(token) = ctx.task_token() {
        command.env("WFC_TASK_TOKEN", token);
    }
    let mut child = command.spawn().map_err(|e| {
        Failure::new(wfc_ir::errors::TASK_FAILED, format!("cannot run the handler command {:?}: {e}", spec.program))
    })?;
    let stdin_text = input.to_string();
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input closes the pipe early; that is not an error.
        let _ = stdin.write_all(stdin_text.as_bytes()).await;
        drop(stdin);
    }
    let output = child.wait_with_output().await.map_err(|e| {
        Failure::new(wfc_ir::errors::TASK_FAILED, format!("the handler command {:?} failed: {e}", spec.program))
    })?;
    if !output.status.success() {
        return Err(command_failure(output.status, &output.stderr));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let text = stdout.trim();
    if text.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(text).map_err(|e| {
        Failure::new(
            wfc_ir::errors::TASK_FAILED,
            format!("the handler command {:?} printed something that is not JSON: {e}", spec.program),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_rejects() {
        let ok = parse(&json!({"arn:x": {"command": ["sh", "-c", "cat"]}})).unwrap();
        assert_eq!(ok["arn:x"], CommandSpec { program: "sh".into(), args: vec!["-c".into(), "cat".into()] });
        assert!(parse(&json!([])).is_err());
        assert!(parse(&json!({"a": {"command": []}})).is_err());
        assert!(parse(&json!({"a": {"command": ["x", 1]}})).is_err());
        assert!(parse(&json!({"a": {"cmd": ["x"]}})).is_err());
    }

    #[test]
    fn stderr_names_the_error() {
        use std::os::unix::process::ExitStatusExt;
        let status = std::process::ExitStatus::from_raw(256);
        let f = command_failure(status, br#"{"Error": "Card.Declined", "Cause": "no funds"}"#);
        assert_eq!((f.error.as_str(), f.cause.as_str()), ("Card.Declined", "no funds"));
        let f = command_failure(status, b"boom\n");
        assert_eq!((f.error.as_str(), f.cause.as_str()), ("States.TaskFailed", "boom"));
    }
}
