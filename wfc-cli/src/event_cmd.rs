//! `wfc event --store URL --execution NAME EVENT.json`: delivers one CloudEvent to a running
//! durable execution through the store (docs/durable.md, "Serverless Workflow events").

use std::io::Read;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::{Exit, fatal};

/// `wfc event`.
#[derive(Debug, clap::Args)]
pub(crate) struct EventArgs {
    /// The store: `sqlite:PATH` or `postgres://...`.
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// The execution to deliver the event to (its `--name`).
    #[arg(long, value_name = "NAME")]
    pub(crate) execution: String,
    /// The CloudEvent, a JSON file (`-`: standard input).
    #[arg(value_name = "EVENT.json")]
    pub(crate) event: PathBuf,
}

/// Reads and checks the CloudEvent: a JSON object with a string `type` (what a waiting state
/// matches first), and `source` a string when present.
fn read_event(path: &std::path::Path) -> Result<Value, String> {
    let text = if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| format!("cannot read the event from stdin: {e}"))?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    let where_ = if path.as_os_str() == "-" { "stdin".to_owned() } else { path.display().to_string() };
    let event: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{where_}:{}:{}: the event is not valid JSON: {e}", e.line(), e.column()))?;
    let Value::Object(fields) = &event else {
        return Err(format!("{where_}: a CloudEvent must be a JSON object (with `type`, `source`, `data`)"));
    };
    match fields.get("type") {
        Some(Value::String(t)) if !t.is_empty() => {}
        Some(_) => return Err(format!("{where_}: the CloudEvent's `type` must be a non-empty string")),
        None => return Err(format!("{where_}: the CloudEvent has no `type` (the attribute waiting states match)")),
    }
    if fields.get("source").is_some_and(|s| !s.is_string()) {
        return Err(format!("{where_}: the CloudEvent's `source` must be a string"));
    }
    Ok(event)
}

/// Delivers the event; prints `{"delivered": N, "execution": NAME}` (N: its number in the
/// execution's inbox).
pub(crate) fn run(args: &EventArgs) -> Exit {
    let event = match read_event(&args.event) {
        Ok(e) => e,
        Err(e) => return fatal(e),
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    let result: Result<Value, String> = rt.block_on(async {
        let store = crate::durable::open_existing(&args.store).await?;
        let seq = store.deliver_event(&args.execution, event).await.map_err(|e| e.to_string())?;
        Ok(json!({ "delivered": seq, "execution": args.execution }))
    });
    match result {
        Ok(v) => {
            println!("{v}");
            Exit::Success
        }
        Err(e) => fatal(e),
    }
}
