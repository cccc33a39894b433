//! `wfc event --store URL [--execution NAME] EVENT.json`: delivers one CloudEvent through the
//! store (docs/durable.md, "Serverless Workflow events"): to a running durable execution, or,
//! without `--execution`, as a starting event: it starts an instance of every workflow of the
//! store's registry whose start state takes it.

use std::io::Read;
use std::path::PathBuf;

use std::sync::Arc;

use serde_json::{Value, json};
use wfc_runtime::Clock;
use wfc_runtime::durable::{self, Language, NewExecution, Registry, StartGather, Store};
use wfc_runtime::starts::{Gathered, start_trigger};

use crate::{Exit, fatal};

/// `wfc event`.
#[derive(Debug, clap::Args)]
pub(crate) struct EventArgs {
    /// The store: `sqlite:PATH` or `postgres://...`.
    #[arg(long, value_name = "URL")]
    pub(crate) store: String,
    /// The execution to deliver the event to (its `--name`). Without it, the event starts an
    /// instance of every workflow in the store whose start state takes it.
    #[arg(long, value_name = "NAME")]
    pub(crate) execution: Option<String>,
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

/// The name of the instance `event` starts of `workflow`: the workflow and a hash of the
/// event's `source` and `id` (which CloudEvents makes unique), so delivering the same event again
/// names the same instance and starts nothing new.
fn instance_name(workflow: &str, event: &Value) -> Result<String, String> {
    use sha2::{Digest, Sha256};
    let Some(id) = event.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) else {
        return Err("a starting CloudEvent needs an `id` (a non-empty string): with its `source` it names the \
                    instance it starts, so that delivering it again starts nothing new"
            .into());
    };
    let source = event.get("source").and_then(Value::as_str).unwrap_or_default();
    let mut hash = Sha256::new();
    hash.update(source.as_bytes());
    hash.update(b"\0");
    hash.update(id.as_bytes());
    let hex: String = hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    Ok(format!("{workflow}-{hex}"))
}

/// `wfc event` without `--execution`: the event starts an instance of every workflow in the
/// store's registry whose current version starts on it (an event state as its start state that
/// takes the event). An exclusive start state makes the instance at once; a non-exclusive one
/// gathers the event into the store's groups (`StartTrigger::gather`, the in-process router's
/// rules), and the event that completes a group makes the instance. Either way the instance is
/// created with its events in its inbox in one transaction (with the groups' change), so a
/// crash never leaves an instance without its events or loses a gathered event; workers run it.
async fn start_instances(store: &Arc<dyn Store>, event: Value) -> Result<Value, String> {
    let registry = Registry::new(Arc::clone(store));
    let mut workflows: Vec<String> =
        registry.versions(None).await.map_err(|e| e.to_string())?.into_iter().map(|v| v.definition.workflow).collect();
    workflows.sort();
    workflows.dedup();
    let mut takers = Vec::new();
    for name in workflows {
        let Some(version) = registry.current(&name).await.map_err(|e| e.to_string())? else { continue };
        if version.definition.language != Language::Sw {
            continue;
        }
        let workflow = crate::durable::load_version(&version)?;
        let Some(trigger) = start_trigger(&workflow) else { continue };
        if trigger.takes(&event) {
            takers.push((version, workflow, trigger));
        }
    }
    if takers.is_empty() {
        return Err(format!(
            "no workflow registered in the store starts on this event (type {}, source {}); to \
             deliver it to a running execution, give --execution NAME",
            event.get("type").unwrap_or(&Value::Null),
            event.get("source").unwrap_or(&Value::Null)
        ));
    }
    // Checked before anything is stored: the id names instances and tells a repeated event.
    instance_name("", &event)?;
    let mut started = Vec::new();
    let mut gathered = Vec::new();
    for (version, workflow, trigger) in takers {
        let new = |events: &[Value]| -> Result<NewExecution, String> {
            let first = events.first().ok_or("internal error: an instance with no starting event")?;
            Ok(NewExecution {
                name: instance_name(&workflow.name, first)?,
                workflow: workflow.name.clone(),
                input: json!({}),
                start_time: Clock::real().now_rfc3339(),
                definition_hash: Some(durable::definition_hash(&workflow)),
                version_id: Some(version.version_id.clone()),
            })
        };
        let created = if trigger.exclusive {
            let events = vec![event.clone()];
            let new = new(&events)?;
            Some(store.create_execution_with_events(new, events).await.map_err(|e| e.to_string())?)
        } else {
            // The instance a completed group makes is named in the closure (it runs inside the
            // store's transaction, which cannot fail on a name): prepared for any first event.
            let (event_in, now_ms) = (event.clone(), Clock::real().now().as_millisecond());
            let template = new(std::slice::from_ref(&event))?;
            let workflow_name = workflow.name.clone();
            let gather: StartGather = Box::new(move |mut groups| {
                let start = match trigger.gather(&mut groups, &event_in, now_ms) {
                    Gathered::Complete(events) => {
                        let name = events
                            .first()
                            .and_then(|first| instance_name(&workflow_name, first).ok())
                            .unwrap_or_else(|| template.name.clone());
                        Some((NewExecution { name, ..template }, events))
                    }
                    Gathered::Waiting | Gathered::NotTaken => None,
                };
                (groups, start)
            });
            let created = store.gather_start_event(&workflow.name, gather).await.map_err(|e| e.to_string())?;
            if created.is_none() {
                gathered.push(json!({ "workflow": workflow.name, "version": version.version_id }));
            }
            created
        };
        if let Some((record, existed)) = created {
            started.push(json!({
                "workflow": workflow.name, "execution": record.name, "version": version.version_id, "existed": existed
            }));
        }
    }
    Ok(json!({ "started": started, "gathered": gathered }))
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
        match &args.execution {
            Some(name) => {
                let seq = store.deliver_event(name, event).await.map_err(|e| e.to_string())?;
                Ok(json!({ "delivered": seq, "execution": name }))
            }
            None => start_instances(&store, event).await,
        }
    });
    match result {
        Ok(v) => {
            println!("{v}");
            Exit::Success
        }
        Err(e) => fatal(e),
    }
}
