//! The runtime's version machinery in process, on an in-memory SQLite store: the replay check
//! (`wfc_worker::replay::check`) on compatible and incompatible changes, the registry, and a
//! worker that runs only the versions it can (without a loader it leaves an execution of
//! another version alone; with one it runs it on that version).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wfc_interp::DynHandler;
use wfc_runtime::durable::{
    self, Definition, ExecutionStatus, Language, PinGuard, Registry, Store, StoreError, Syntax, WorkflowVersion,
};
use wfc_runtime::{Failure, TaskContext};
use wfc_sqlite::SqliteStore;
use wfc_worker::{Worker, WorkerConfig, Workflows};

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
                wfc_worker::replay::check(&w, &record, &journal).await
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

/// A SQLite store that records the `limit` of every claim and holds the second claim until the
/// worker's first `concurrency` executions have all finished: the place each freed is then
/// free when the worker claims next.
#[derive(Debug)]
struct HeldClaims {
    inner: SqliteStore,
    limits: std::sync::Mutex<Vec<usize>>,
    finished: tokio::sync::watch::Sender<usize>,
    hold_until: usize,
    /// The execution whose first run's renewals do not extend its lease (each only checks the
    /// claim and lets the lease run out at once, as for a process too busy to renew in time);
    /// later runs of it renew as usual.
    lapses: Option<&'static str>,
    /// The epoch of the run whose lease lapses (the first that renewed).
    lapsed_epoch: std::sync::Mutex<Option<i64>>,
    /// Lease renewals asked for.
    renewals: std::sync::atomic::AtomicUsize,
}

type Fut<'a, T> = futures::future::BoxFuture<'a, Result<T, StoreError>>;

impl Store for HeldClaims {
    fn open_execution(&self, new: durable::NewExecution) -> Fut<'_, durable::Claim> {
        self.inner.open_execution(new)
    }
    fn load_journal<'a>(&'a self, name: &'a str) -> Fut<'a, Vec<durable::Operation>> {
        self.inner.load_journal(name)
    }
    fn checkpoint<'a>(
        &'a self,
        name: &'a str,
        token: durable::CheckpointToken,
        updates: Vec<durable::OperationUpdate>,
    ) -> Fut<'a, durable::CheckpointToken> {
        self.inner.checkpoint(name, token, updates)
    }
    fn checkpoint_with_history<'a>(
        &'a self,
        name: &'a str,
        token: durable::CheckpointToken,
        updates: Vec<durable::OperationUpdate>,
        history: durable::HistoryWrite,
    ) -> Fut<'a, durable::CheckpointToken> {
        self.inner.checkpoint_with_history(name, token, updates, history)
    }
    fn finish<'a>(
        &'a self,
        name: &'a str,
        token: durable::CheckpointToken,
        completion: durable::Completion,
    ) -> Fut<'a, durable::CheckpointToken> {
        self.finish_with_history(name, token, completion, durable::HistoryWrite::default())
    }
    fn finish_with_history<'a>(
        &'a self,
        name: &'a str,
        token: durable::CheckpointToken,
        completion: durable::Completion,
        history: durable::HistoryWrite,
    ) -> Fut<'a, durable::CheckpointToken> {
        Box::pin(async move {
            let done = self.inner.finish_with_history(name, token, completion, history).await;
            self.finished.send_modify(|n| *n += 1);
            done
        })
    }
    fn list_executions(&self) -> Fut<'_, Vec<durable::ExecutionRecord>> {
        self.inner.list_executions()
    }
    fn describe_execution<'a>(&'a self, name: &'a str) -> Fut<'a, Option<durable::ExecutionRecord>> {
        self.inner.describe_execution(name)
    }
    fn append_history<'a>(&'a self, name: &'a str, events: Vec<wfc_runtime::HistoryEvent>) -> Fut<'a, ()> {
        self.inner.append_history(name, events)
    }
    fn read_history<'a>(&'a self, name: &'a str) -> Fut<'a, Vec<wfc_runtime::HistoryEvent>> {
        self.inner.read_history(name)
    }
    fn load_operation<'a>(&'a self, name: &'a str, id: &'a str) -> Fut<'a, Option<durable::Operation>> {
        self.inner.load_operation(name, id)
    }
    fn complete_callback<'a>(&'a self, token: &'a str, completion: durable::CallbackCompletion) -> Fut<'a, String> {
        self.inner.complete_callback(token, completion)
    }
    fn heartbeat_callback<'a>(&'a self, token: &'a str) -> Fut<'a, String> {
        self.inner.heartbeat_callback(token)
    }
    fn stop_execution<'a>(
        &'a self,
        name: &'a str,
        error: Option<String>,
        cause: Option<String>,
    ) -> Fut<'a, durable::ExecutionRecord> {
        self.inner.stop_execution(name, error, cause)
    }
    fn create_execution(&self, new: durable::NewExecution) -> Fut<'_, (durable::ExecutionRecord, bool)> {
        self.inner.create_execution(new)
    }
    fn claim_runnable<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
        limit: usize,
        filter: &'a durable::ClaimFilter,
    ) -> Fut<'a, Vec<durable::ClaimResult>> {
        Box::pin(async move {
            let nth = {
                let mut limits = self.limits.lock().unwrap();
                limits.push(limit);
                limits.len()
            };
            if nth == 2 {
                let mut finished = self.finished.subscribe();
                finished.wait_for(|&n| n >= self.hold_until).await.expect("the store is alive");
            }
            self.inner.claim_runnable(owner, lease, limit, filter).await
        })
    }
    fn renew_lease<'a>(&'a self, name: &'a str, epoch: i64, owner: &'a str, lease: Duration) -> Fut<'a, ()> {
        self.renewals.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let lapse = self.lapses == Some(name) && *self.lapsed_epoch.lock().unwrap().get_or_insert(epoch) == epoch;
        let lease = if lapse { Duration::ZERO } else { lease };
        self.inner.renew_lease(name, epoch, owner, lease)
    }
    fn release<'a>(&'a self, name: &'a str, epoch: i64, wake_at_ms: Option<i64>, signals_seen: i64) -> Fut<'a, ()> {
        self.inner.release(name, epoch, wake_at_ms, signals_seen)
    }
    fn fail_execution<'a>(&'a self, name: &'a str, error: &'a str, cause: &'a str) -> Fut<'a, ()> {
        self.inner.fail_execution(name, error, cause)
    }
}

/// A worker fills every place freed while it was claiming in its next claim, not one place a
/// claim (which kept the executions running at once far below `concurrency` when executions
/// are short: one claim a commit). On a current-thread runtime a run that finished has ended
/// before the held claim goes on, so the places are known to be free.
#[test]
fn a_worker_claims_every_place_freed_in_one_claim() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        let (finished, _) = tokio::sync::watch::channel(0);
        let held = Arc::new(HeldClaims {
            inner: SqliteStore::in_memory().unwrap(),
            limits: std::sync::Mutex::new(Vec::new()),
            finished,
            hold_until: 4,
            lapses: None,
            lapsed_epoch: std::sync::Mutex::new(None),
            renewals: std::sync::atomic::AtomicUsize::new(0),
        });
        let store: Arc<dyn Store> = held.clone();
        let (_, w) = definition(
            "one",
            r#"{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "res:A", "End": true}}}"#,
        );
        for i in 0..12 {
            let new = durable::NewExecution {
                name: format!("e{i}"),
                workflow: w.name.clone(),
                input: json!({}),
                start_time: "2026-01-01T00:00:00.000Z".into(),
                definition_hash: None,
                version_id: None,
            };
            store.create_execution(new).await.unwrap();
        }
        let workflows = Workflows::new().interpreted(Arc::clone(&w), handler());
        let config = WorkerConfig { concurrency: 4, ..config() };
        let stats = Worker::new(Arc::clone(&store), workflows, config).run(std::future::pending()).await.unwrap();
        assert_eq!(stats.finished, 12, "{stats:?}");
        let limits = held.limits.lock().unwrap().clone();
        assert_eq!(limits[0], 4, "{limits:?}");
        // The second claim was made when the first run ended, and held until all four had: by
        // the third claim at the latest, the places of the others are claimed together (one
        // claim each before, with executions still queued).
        assert!(limits[1] > 1 || limits[2] > 1, "{limits:?}");
    });
}

/// A claimed execution's lease is first renewed when a third of the lease the claim gave it has
/// passed, not at once: executions shorter than that make no renewal at all (a renewal at once
/// was one write in 13 of an execution of 10 Tasks).
#[test]
fn a_claimed_execution_is_not_renewed_before_a_third_of_its_lease() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        let (finished, _) = tokio::sync::watch::channel(0);
        let held = Arc::new(HeldClaims {
            inner: SqliteStore::in_memory().unwrap(),
            limits: std::sync::Mutex::new(Vec::new()),
            finished,
            hold_until: 0,
            lapses: None,
            lapsed_epoch: std::sync::Mutex::new(None),
            renewals: std::sync::atomic::AtomicUsize::new(0),
        });
        let store: Arc<dyn Store> = held.clone();
        let (_, w) = definition(
            "short",
            r#"{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "res:A", "Next": "B"},
                "B": {"Type": "Task", "Resource": "res:A", "End": true}}}"#,
        );
        for i in 0..4 {
            let new = durable::NewExecution {
                name: format!("e{i}"),
                workflow: w.name.clone(),
                input: json!({}),
                start_time: "2026-01-01T00:00:00.000Z".into(),
                definition_hash: None,
                version_id: None,
            };
            store.create_execution(new).await.unwrap();
        }
        let workflows = Workflows::new().interpreted(Arc::clone(&w), handler());
        // An hour's lease: these runs end long before a third of it.
        let config = WorkerConfig { concurrency: 2, lease: Duration::from_secs(3600), ..config() };
        let stats = Worker::new(Arc::clone(&store), workflows, config).run(std::future::pending()).await.unwrap();
        assert_eq!(stats.finished, 4, "{stats:?}");
        assert_eq!(held.renewals.load(std::sync::atomic::Ordering::SeqCst), 0, "renewed at once");
    });
}

/// A worker whose lease on an execution ran out while it still ran it (its renewals did not
/// reach the store in time, as on a loaded machine with a short lease) may claim that execution
/// again: the new run waits for the old one to end (its next write is refused as stale) and
/// replays what it committed, so the step in flight is the only one that runs again, and never
/// twice at once.
#[test]
fn a_worker_never_runs_an_execution_it_claimed_again_beside_its_old_run() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        let (finished, _) = tokio::sync::watch::channel(0);
        let store: Arc<dyn Store> = Arc::new(HeldClaims {
            inner: SqliteStore::in_memory().unwrap(),
            limits: std::sync::Mutex::new(Vec::new()),
            finished,
            hold_until: 0,
            lapses: Some("slow"),
            lapsed_epoch: std::sync::Mutex::new(None),
            renewals: std::sync::atomic::AtomicUsize::new(0),
        });
        let (_, w) = definition(
            "lapsed",
            r#"{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "res:A", "End": true}}}"#,
        );
        for (name, slow) in [("slow", true), ("fast", false)] {
            let new = durable::NewExecution {
                name: name.into(),
                workflow: w.name.clone(),
                input: json!({"slow": slow}),
                start_time: "2026-01-01T00:00:00.000Z".into(),
                definition_hash: None,
                version_id: None,
            };
            store.create_execution(new).await.unwrap();
        }
        // The slow execution's lease runs out at its first renewal while its handler runs; the
        // fast one frees a place, so the worker claims again while the slow run goes on.
        let (running, most, calls) =
            (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let handler: Arc<dyn DynHandler> = {
            let (running, most, calls) = (running.clone(), most.clone(), calls.clone());
            Arc::new(move |_resource: String, input: Value, _ctx: TaskContext| {
                let (running, most, calls) = (running.clone(), most.clone(), calls.clone());
                async move {
                    if input["slow"] == json!(true) {
                        // Counted down however the call ends (a run that lost its lease is dropped).
                        struct Running(Arc<AtomicUsize>);
                        impl Drop for Running {
                            fn drop(&mut self) {
                                self.0.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                        calls.fetch_add(1, Ordering::SeqCst);
                        most.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        let _running = Running(running);
                        tokio::time::sleep(Duration::from_millis(700)).await;
                    }
                    Ok::<_, Failure>(json!("done"))
                }
            })
        };
        let workflows = Workflows::new().interpreted(Arc::clone(&w), handler);
        let config = WorkerConfig { concurrency: 2, lease: Duration::from_millis(600), ..config() };
        let stats = Worker::new(Arc::clone(&store), workflows, config).run(std::future::pending()).await.unwrap();
        let slow = store.describe_execution("slow").await.unwrap().unwrap();
        assert_eq!(slow.status, ExecutionStatus::Succeeded, "{stats:?}");
        assert_eq!(slow.output, Some(json!("done")));
        assert!(stats.claimed >= 3, "the lapsed execution was not claimed again: {stats:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the step in flight runs again once: {stats:?}");
        assert_eq!(most.load(Ordering::SeqCst), 1, "two runs of one execution ran at once: {stats:?}");
    });
}
