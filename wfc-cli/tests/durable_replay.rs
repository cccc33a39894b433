//! The runtime's version machinery in process, on an in-memory SQLite store: the replay check
//! (`durable::replay::check`) on compatible and incompatible changes, the registry, and a
//! worker that runs only the versions it can (without a loader it leaves an execution of
//! another version alone; with one it runs it on that version).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wfc_runtime::durable::{
    self, Definition, ExecutionStatus, Language, PinGuard, Registry, Store, StoreError, Syntax, Worker, WorkerConfig,
    WorkflowVersion, Workflows,
};
use wfc_runtime::interp::DynHandler;
use wfc_runtime::{Failure, TaskContext};
use wfc_sqlite::SqliteStore;

const V1: &str = r#"{
  "Comment": "v1",
  "StartAt": "A",
  "States": {
    "A": {"Type": "Task", "Resource": "res:A", "ResultPath": "$.a", "Next": "Both"},
    "Both": {"Type": "Parallel", "ResultPath": "$.both", "Next": "Route", "Branches": [
      {"StartAt": "L", "States": {"L": {"Type": "Task", "Resource": "res:L", "End": true}}},
      {"StartAt": "R", "States": {"R": {"Type": "Task", "Resource": "res:R", "End": true}}}]},
    "Route": {"Type": "Choice", "Default": "Done", "Choices": [{"Variable": "$.go", "BooleanEquals": true, "Next": "Nap"}]},
    "Nap": {"Type": "Wait", "Seconds": 3600, "Next": "Done"},
    "Done": {"Type": "Pass", "Result": "v1", "ResultPath": "$.v", "End": true}
  }
}"#;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

fn definition(dir: &str, text: &str) -> (Definition, Arc<wfc_ir::Workflow>) {
    let origin = format!("{dir}/flow.asl.json");
    let workflow = wfc_core::load(wfc_core::Source { path: &origin, text }).expect("the definition loads").workflow;
    let definition = Definition {
        workflow: workflow.name.clone(),
        origin,
        source: text.to_owned(),
        language: Language::Asl,
        syntax: Syntax::Json,
        passes: Vec::new(),
        siblings: Vec::new(),
    };
    (definition, Arc::new(workflow))
}

fn load(version: &WorkflowVersion) -> Result<wfc_ir::Workflow, String> {
    let d = &version.definition;
    wfc_core::load(wfc_core::Source { path: &d.origin, text: &d.source })
        .map(|l| l.workflow)
        .map_err(|_| "does not load".to_owned())
}

fn handler() -> Arc<dyn DynHandler> {
    Arc::new(|resource: String, _input: Value, _ctx: TaskContext| async move { Ok::<_, Failure>(json!(resource)) })
}

fn config() -> WorkerConfig {
    WorkerConfig {
        exit_when_idle: true,
        poll_interval: Duration::from_millis(20),
        suspend_after: Duration::ZERO,
        ..WorkerConfig::default()
    }
}

async fn start(store: &Arc<dyn Store>, name: &str, d: &Definition, w: &wfc_ir::Workflow, input: Value) {
    let (version, _) = Registry::new(Arc::clone(store)).register(d.clone(), None).await.unwrap();
    let new = durable::NewExecution {
        name: name.into(),
        workflow: w.name.clone(),
        input,
        start_time: "2026-01-01T00:00:00.000Z".into(),
        definition_hash: Some(durable::definition_hash(w)),
        version_id: Some(version.version_id),
    };
    store.create_execution(new).await.unwrap();
}

#[test]
fn replay_checks_accept_compatible_changes_and_name_the_first_divergence() {
    rt().block_on(async {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
        let (d1, w1) = definition("v1", V1);
        start(&store, "e", &d1, &w1, json!({"go": true})).await;
        // v1's worker runs A and the Parallel, and releases the execution at the hour's Wait.
        let workflows = Workflows::new().interpreted_version(d1, Arc::clone(&w1), handler());
        let stats = Worker::new(Arc::clone(&store), workflows, config()).run(std::future::pending()).await.unwrap();
        assert_eq!(stats.suspended, 1, "{stats:?}");
        let record = store.describe_execution("e").await.unwrap().unwrap();
        let journal = store.load_journal("e").await.unwrap();
        let check = |text: String| {
            let (record, journal) = (record.clone(), journal.clone());
            async move {
                let (_, w) = definition("vx", &text);
                durable::replay::check(&w, &record, &journal).await
            }
        };
        // The same definition, and one with a comment and a later state edited: clean.
        let same = check(V1.to_owned()).await.expect("v1 replays on v1");
        assert_eq!((same.waiting.as_slice(), same.finished), (&["Nap#1".to_owned()][..], false));
        let later =
            V1.replace(r#""Comment": "v1""#, r#""Comment": "v2""#).replace(r#""Result": "v1""#, r#""Result": "v2""#);
        check(later).await.expect("a later edit replays");
        // A recorded task that is now a callback: the operation's type differs.
        let d = check(V1.replace("res:A\"", "res:A.waitForTaskToken\"")).await.unwrap_err();
        assert_eq!(d.operation.as_deref(), Some("A#1.0"), "{d}");
        assert!(d.reason.contains("STEP operation 'A#1.0'") && d.reason.contains("runs a CALLBACK"), "{d}");
        // Another path: the waiting timer is never reached.
        let d = check(V1.replace(r#""BooleanEquals": true"#, r#""BooleanEquals": false"#)).await.unwrap_err();
        assert_eq!(d.operation.as_deref(), Some("Nap#1"), "{d}");
        assert!(d.reason.contains("not reached by the new version"), "{d}");
        // A new state before the recorded ones: the first recorded operation is not reached.
        let before = V1.replace(r#""StartAt": "A","#, r#""StartAt": "Z","#).replace(
            r#""States": {
    "A""#,
            r#""States": {
    "Z": {"Type": "Task", "Resource": "res:Z", "Next": "A"},
    "A""#,
        );
        let d = check(before).await.unwrap_err();
        assert_eq!(d.operation.as_deref(), Some("A#1.0"), "{d}");
        // A path that now fails on the recorded values.
        let fails =
            V1.replace(r#""ResultPath": "$.a","#, r#""ResultPath": "$.a", "ResultSelector": {"x.$": "$.missing"},"#);
        let d = check(fails).await.unwrap_err();
        assert!(d.reason.contains("fails the execution"), "{d}");
        // The check wrote nothing.
        assert_eq!(store.load_journal("e").await.unwrap(), journal);
    });
}

const ASK: &str = r#"{
  "StartAt": "Ask",
  "States": {
    "Ask": {"Type": "Task", "Resource": "res:Ask.waitForTaskToken", "Parameters": {"t.$": "$$.Task.Token"},
            "ResultPath": "$.answer", "Next": "Done"},
    "Done": {"Type": "Pass", "Result": "v1", "ResultPath": "$.v", "End": true}
  }
}"#;

#[test]
fn a_worker_runs_other_versions_only_with_a_loader_and_upgrades_are_guarded() {
    rt().block_on(async {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
        let (d1, w1) = definition("v1", ASK);
        let (d2, w2) = definition("v2", &ASK.replace(r#""Result": "v1""#, r#""Result": "v2""#));
        let registry = Registry::new(Arc::clone(&store));
        start(&store, "old", &d1, &w1, json!({})).await;
        let v1 = registry.current("flow").await.unwrap().unwrap().version_id;
        let run = |workflows: Workflows| {
            let store = Arc::clone(&store);
            async move { Worker::new(store, workflows, config()).run(std::future::pending()).await.unwrap() }
        };
        let stats = run(Workflows::new().interpreted_version(d1.clone(), Arc::clone(&w1), handler())).await;
        assert_eq!(stats.suspended, 1);
        // Answered; then a worker with only v2 and no loader (as compiled code is) leaves it alone.
        let token = store.load_operation("old", "Ask#1.0").await.unwrap().unwrap().callback_token.unwrap();
        store.complete_callback(&token, durable::CallbackCompletion::Success(json!({"ok": 1}))).await.unwrap();
        let before = store.describe_execution("old").await.unwrap().unwrap();
        let only_v2 = || Workflows::new().interpreted_version(d2.clone(), Arc::clone(&w2), handler());
        let stats = run(only_v2()).await;
        assert_eq!(stats.claimed, 0, "{stats:?}");
        let after = store.describe_execution("old").await.unwrap().unwrap();
        assert_eq!((after.epoch, after.version_id.as_deref()), (before.epoch, Some(v1.as_str())));
        // v2 is now the current version: new executions start on it.
        assert_eq!(registry.current("flow").await.unwrap().unwrap().version_id, d2.version_id());
        assert_eq!(registry.versions(Some("flow")).await.unwrap().len(), 2);
        // Rolled back and forth: publish moves the current version, running ones stay.
        registry.publish(&v1).await.unwrap();
        assert_eq!(registry.current("flow").await.unwrap().unwrap().version_id, v1);
        registry.publish(&d2.version_id()).await.unwrap();
        // An upgrade is guarded: not while its journal grew since the check.
        let guard =
            PinGuard { from: Some(v1.clone()), held_epoch: None, checkpoint_seq: Some(before.checkpoint_seq - 1) };
        let e = store.pin_execution("old", &d2.version_id(), &guard).await.unwrap_err();
        assert!(matches!(&e, StoreError::InvalidUpdate { message, .. } if message.contains("grew")), "{e}");
        let guard = PinGuard { from: Some("another".into()), held_epoch: None, checkpoint_seq: None };
        let e = store.pin_execution("old", &d2.version_id(), &guard).await.unwrap_err();
        assert!(e.to_string().contains("it moved meanwhile"), "{e}");
        // With a loader, the v2 worker runs it on v1.
        let stats = run(only_v2().loader(load)).await;
        assert_eq!(stats.finished, 1, "{stats:?}");
        let done = store.describe_execution("old").await.unwrap().unwrap();
        assert_eq!(done.status, ExecutionStatus::Succeeded);
        assert_eq!(done.output, Some(json!({"answer": {"ok": 1}, "v": "v1"})));
    });
}
