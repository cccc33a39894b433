//! The DISTRIBUTED Map on the interpreter with a plugged-in [`ObjectStore`]: items read through
//! the store, results written through it, children with histories of their own (so a run over
//! more items than the history limit allows succeeds), and the Map item limit.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use wfc_interp as interp;
use wfc_runtime::distributed::{ObjectStore, ObjectSummary};
use wfc_runtime::ir::distributed::*;
use wfc_runtime::ir::*;
use wfc_runtime::{EventType as E, Limits, RunOptions, Status, block_on_virtual};

/// An in-memory object store: what a user's S3 client would be.
#[derive(Debug, Default)]
struct Memory {
    objects: Mutex<BTreeMap<(String, String), Vec<u8>>>,
}

impl ObjectStore for Memory {
    fn get_object<'a>(&'a self, bucket: &'a str, key: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let objects = self.objects.lock().map_err(|e| e.to_string())?;
            objects
                .get(&(bucket.to_owned(), key.to_owned()))
                .cloned()
                .ok_or_else(|| format!("NoSuchKey: {bucket}/{key}"))
        })
    }

    fn put_object<'a>(&'a self, bucket: &'a str, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.objects.lock().map_err(|e| e.to_string())?.insert((bucket.to_owned(), key.to_owned()), bytes);
            Ok(())
        })
    }

    fn list_objects<'a>(
        &'a self,
        bucket: &'a str,
        prefix: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ObjectSummary>, String>> {
        Box::pin(async move {
            let objects = self.objects.lock().map_err(|e| e.to_string())?;
            Ok(objects
                .iter()
                .filter(|((b, k), _)| b == bucket && k.starts_with(prefix))
                .map(|((_, key), bytes)| ObjectSummary {
                    key: key.clone(),
                    size: bytes.len() as u64,
                    etag: "\"e\"".to_owned(),
                    last_modified: 1_700_000_000,
                    storage_class: "STANDARD".to_owned(),
                })
                .collect())
        })
    }
}

/// A store that only reads and writes: the trait's default `list_objects` refuses.
#[derive(Debug)]
struct NoListing;

impl ObjectStore for NoListing {
    fn get_object<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async { Err("nothing here".to_owned()) })
    }

    fn put_object<'a>(&'a self, _: &'a str, _: &'a str, _: Vec<u8>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

fn jsonl_config() -> ReaderConfig {
    ReaderConfig {
        input_type: Some(InputType::Jsonl),
        csv_headers: CsvHeaders::FirstRow,
        max_items: None,
        csv_delimiter: CsvDelimiter::Comma,
        items_pointer: None,
        transformation: ReaderTransformation::None,
        manifest_type: None,
    }
}

fn jsonl_map(result_writer: bool, max_concurrency: u64) -> Workflow {
    let reader = ItemReader {
        resource: S3_GET_OBJECT.to_owned(),
        parameters: Some(tpl(json!({"Bucket": "mem", "Key": "items.jsonl"}))),
        arguments: None,
        config: jsonl_config(),
    };
    let writer = ResultWriter {
        resource: Some(S3_PUT_OBJECT.to_owned()),
        parameters: Some(tpl(json!({"Bucket": "out"}))),
        arguments: None,
        writer_config: None,
    };
    let mut pass = pass_state();
    pass.parameters = Some(tpl(json!({"n.$": "$.n", "child.$": "$$.Execution.Name"})));
    let spec = MapState {
        jsonata: false,
        input_path: dollar(),
        items_path: path("$"),
        item_selector: None,
        item_processor: sm(vec![("Each", StateKind::Pass(pass))]),
        max_concurrency,
        max_concurrency_path: None,
        max_concurrency_jsonata: None,
        distributed: Some(Box::new(DistributedMap {
            execution_type: ExecutionType::Express,
            item_reader: Some(reader),
            item_batcher: None,
            result_writer: result_writer.then_some(writer),
            label: Some("Lines".to_owned()),
            tolerated_failure_count: None,
            tolerated_failure_percentage: None,
        })),
        result_selector: None,
        result_path: Some(rpath("$")),
        output_path: dollar(),
        retry: vec![],
        catch: vec![],
        transition: end(),
        assign: None,
        items: None,
        item_selector_jsonata: None,
        output: None,
    };
    workflow(vec![("M", StateKind::Map(spec))])
}

fn store_with(n: usize) -> Arc<Memory> {
    let lines: String = (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    let store = Memory::default();
    store
        .objects
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(("mem".into(), "items.jsonl".into()), lines.into_bytes());
    Arc::new(store)
}

fn run_with(wf: &Workflow, store: Arc<Memory>, limits: Limits) -> wfc_runtime::ExecutionResult {
    let options = RunOptions::virtual_time().with_object_store(store).with_limits(limits);
    block_on_virtual(interp::run(wf, &no_handlers(), json!({}), options))
}

#[test]
fn items_come_from_a_plugged_in_store_and_children_have_their_own_names() {
    let result = run_with(&jsonl_map(false, 0), store_with(3), Limits::default());
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let output = result.output.unwrap_or_default();
    let ns: Vec<&Value> = output.as_array().map(|a| a.iter().map(|o| &o["n"]).collect()).unwrap_or_default();
    assert_eq!(ns, [&json!(0), &json!(1), &json!(2)]);
    // Each child is its own execution: `$$.Execution.Name` differs per item.
    let names: std::collections::BTreeSet<&str> =
        output.as_array().into_iter().flatten().filter_map(|o| o["child"].as_str()).collect();
    assert_eq!(names.len(), 3, "{output}");
    // The parent's history has the Map Run, not the children's states.
    let types: Vec<E> = result.history.iter().map(|e| e.event_type).collect();
    assert_eq!(
        types,
        [
            E::ExecutionStarted,
            E::MapStateEntered,
            E::MapStateStarted,
            E::MapRunStarted,
            E::MapRunSucceeded,
            E::MapStateSucceeded,
            E::MapStateExited,
            E::ExecutionSucceeded
        ]
    );
}

#[test]
fn results_are_written_through_the_store() {
    let store = store_with(2);
    let result = run_with(&jsonl_map(true, 1), Arc::clone(&store), Limits::default());
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let output = result.output.unwrap_or_default();
    let manifest_key = output["ResultWriterDetails"]["Key"].as_str().unwrap_or_default().to_owned();
    assert_eq!(output["ResultWriterDetails"]["Bucket"], "out");
    let objects = store.objects.lock().unwrap_or_else(|p| p.into_inner());
    let manifest: Value = serde_json::from_slice(&objects[&("out".to_owned(), manifest_key)]).unwrap_or_default();
    assert_eq!(manifest["MapRunArn"], output["MapRunArn"]);
    let succeeded = manifest["ResultFiles"]["SUCCEEDED"][0]["Key"].as_str().unwrap_or_default().to_owned();
    let results: Value = serde_json::from_slice(&objects[&("out".to_owned(), succeeded)]).unwrap_or_default();
    assert_eq!(results.as_array().map(Vec::len), Some(2));
    assert_eq!(results[0]["Status"], "SUCCEEDED");
    assert_eq!(results[0]["Input"], "{\"n\":0}");
    assert_eq!(manifest["ResultFiles"]["FAILED"], json!([]));
}

/// 30,000 items: inline, their events would pass the 25,000-event history limit; as child
/// executions, each has its own history and the parent records eight events. The results go to
/// the ResultWriter: without one, 30,000 outputs pass the 256 KiB payload limit, as on AWS.
#[test]
fn a_run_larger_than_the_history_limit_succeeds() {
    let store = store_with(30_000);
    let result = run_with(&jsonl_map(true, 0), Arc::clone(&store), Limits::default());
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    assert_eq!(result.history.len(), 8);
    let objects = store.objects.lock().unwrap_or_else(|p| p.into_inner());
    let succeeded = objects.iter().find(|((_, k), _)| k.ends_with("SUCCEEDED_0.json")).map(|(_, v)| v.clone());
    let results: Value = serde_json::from_slice(&succeeded.unwrap_or_default()).unwrap_or_default();
    assert_eq!(results.as_array().map(Vec::len), Some(30_000));
    drop(objects);

    let result = run_with(&jsonl_map(false, 0), store_with(30_000), Limits::default());
    assert_eq!(result.error.map(|f| f.error), Some("States.DataLimitExceeded".to_owned()));
}

#[test]
fn more_items_than_the_map_item_limit_fail_the_reader() {
    let limits = Limits { max_map_items: 3, ..Limits::default() };
    let result = run_with(&jsonl_map(false, 0), store_with(5), limits);
    assert_eq!(result.status, Status::Failed);
    let error = result.error.unwrap_or_else(|| wfc_runtime::Failure::runtime("none"));
    assert_eq!(error.error, "States.ItemReaderFailed");
    assert_eq!(error.cause, "The ItemReader read more than the Map item limit of 3 items.");
}

#[test]
fn a_missing_object_is_item_reader_failed_with_the_stores_message() {
    let result = run_with(&jsonl_map(false, 0), Arc::new(Memory::default()), Limits::default());
    let error = result.error.unwrap_or_else(|| wfc_runtime::Failure::runtime("none"));
    assert_eq!((error.error.as_str(), error.cause.as_str()), ("States.ItemReaderFailed", "NoSuchKey: mem/items.jsonl"));
}

/// `s3:listObjectsV2` through a plugged-in store: the listing's items in AWS's shape, and with
/// `LOAD_AND_FLATTEN` the items of every listed object; a store that cannot list fails the
/// reader with its message.
#[test]
fn listings_go_through_the_plugged_in_store() {
    let list_map = |transformation: ReaderTransformation| {
        let mut wf = jsonl_map(false, 0);
        let StateKind::Map(spec) = &mut wf.machine.states[0].kind else { unreachable!("a Map") };
        let reader = spec.distributed.as_mut().and_then(|d| d.item_reader.as_mut()).expect("a reader");
        reader.resource = S3_LIST_OBJECTS_V2.to_owned();
        reader.parameters = Some(tpl(json!({"Bucket": "mem", "Prefix": "items"})));
        reader.config.transformation = transformation;
        if transformation == ReaderTransformation::None {
            reader.config.input_type = None;
            // The child's `n` is the listed object's size.
            spec.item_selector = Some(tpl(json!({"n.$": "$$.Map.Item.Value.Size"})));
        }
        wf
    };
    let store = store_with(2);
    store
        .objects
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(("mem".into(), "items-2.jsonl".into()), b"{\"n\": 9}\n".to_vec());
    store.objects.lock().unwrap_or_else(|p| p.into_inner()).insert(("mem".into(), "other".into()), b"x".to_vec());
    let result = run_with(&list_map(ReaderTransformation::None), Arc::clone(&store), Limits::default());
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let sizes: Vec<Value> =
        result.output.unwrap_or_default().as_array().into_iter().flatten().map(|o| o["n"].clone()).collect();
    // Key order: `items-2.jsonl` (9 bytes) before `items.jsonl` (18); `other` is not listed.
    assert_eq!(sizes, [json!(9), json!(18)]);
    let result = run_with(&list_map(ReaderTransformation::LoadAndFlatten), Arc::clone(&store), Limits::default());
    assert_eq!(result.status, Status::Succeeded, "{:?}", result.error);
    let ns: Vec<Value> =
        result.output.unwrap_or_default().as_array().into_iter().flatten().map(|o| o["n"].clone()).collect();
    assert_eq!(ns, [json!(9), json!(0), json!(1)]);
    let result = run_with_store(&list_map(ReaderTransformation::None), Arc::new(NoListing));
    let error = result.error.unwrap_or_else(|| wfc_runtime::Failure::runtime("none"));
    assert_eq!(error.error, "States.ItemReaderFailed");
    assert!(error.cause.contains("does not list objects"), "{}", error.cause);
}

fn run_with_store(wf: &Workflow, store: Arc<dyn ObjectStore>) -> wfc_runtime::ExecutionResult {
    let options = RunOptions::virtual_time().with_object_store(store);
    block_on_virtual(interp::run(wf, &no_handlers(), json!({}), options))
}
