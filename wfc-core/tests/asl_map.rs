//! The Map state in the front end: lowering (ItemsPath, ItemSelector and legacy Parameters,
//! ItemProcessor and legacy Iterator, MaxConcurrency(Path), the DISTRIBUTED fields), and the
//! diagnostics for invalid field combinations, each at its own position.

use wfc_core::Source;
use wfc_core::ir::{StateKind, Template};

fn load(text: &str) -> wfc_core::Loaded {
    match wfc_core::asl::load(Source { path: "map.json", text }) {
        Ok(loaded) => loaded,
        Err(d) => panic!("should load, got:\n{}", d.render(false)),
    }
}

/// Every diagnostic as `(code, line, column, message)`.
fn problems(text: &str) -> Vec<(String, usize, usize, String)> {
    match wfc_core::asl::load(Source { path: "map.json", text }) {
        Ok(_) => panic!("should not load:\n{text}"),
        Err(d) => d.located().into_iter().map(|l| (l.code, l.line, l.column, l.message)).collect(),
    }
}

/// A one-state definition around the Map state's fields (given as JSON members).
fn with_map(fields: &str) -> String {
    format!("{{\"StartAt\": \"M\", \"States\": {{\n  \"M\": {{\"Type\": \"Map\", {fields}, \"End\": true}}}}}}")
}

/// The 1-based (line, column) where `needle` first occurs in `text` (ASCII test texts).
fn at(text: &str, needle: &str) -> (usize, usize) {
    let offset = text.find(needle).unwrap_or_else(|| panic!("{needle} not in {text}"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

const PROCESSOR: &str = r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#;

#[test]
fn an_inline_map_lowers_with_its_fields() {
    let text = with_map(&format!(
        r#""ItemsPath": "$.items", "MaxConcurrency": 3, "ItemSelector": {{"i.$": "$$.Map.Item.Index", "k": 1}},
        "ResultPath": "$.out", "ItemProcessor": {PROCESSOR}"#
    ));
    let loaded = load(&text);
    let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
    assert_eq!(m.items_path.as_str(), "$.items");
    assert_eq!(m.max_concurrency, 3);
    assert!(matches!(m.item_selector, Some(Template::Object(ref fields)) if fields.len() == 2));
    assert_eq!(m.item_processor.states[0].name, "P");
    assert_eq!(m.result_path.as_ref().map(|p| p.as_str().to_owned()), Some("$.out".to_owned()));
    // The item processor is one of the workflow's machines.
    assert_eq!(loaded.workflow.machines().len(), 2);
}

#[test]
fn defaults_are_the_whole_input_and_no_limit() {
    let loaded = load(&with_map(&format!(r#""ItemProcessor": {PROCESSOR}"#)));
    let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
    assert_eq!(m.items_path.as_str(), "$");
    assert_eq!(m.max_concurrency, 0);
    assert!(m.item_selector.is_none());
}

#[test]
fn legacy_iterator_and_parameters_mean_item_processor_and_item_selector() {
    let legacy = load(&with_map(&format!(r#""Parameters": {{"v.$": "$$.Map.Item.Value"}}, "Iterator": {PROCESSOR}"#)));
    let current =
        load(&with_map(&format!(r#""ItemSelector": {{"v.$": "$$.Map.Item.Value"}}, "ItemProcessor": {PROCESSOR}"#)));
    let (StateKind::Map(old), StateKind::Map(new)) =
        (&legacy.workflow.machine.states[0].kind, &current.workflow.machine.states[0].kind)
    else {
        panic!("not Maps")
    };
    assert_eq!(old.item_selector, new.item_selector);
    assert_eq!(old.item_processor.states[0].kind, new.item_processor.states[0].kind);
    assert_eq!(old.item_processor.states[0].name, new.item_processor.states[0].name);
}

#[test]
fn resources_inside_item_processors_become_handler_methods() {
    let text = with_map(
        r#""ItemProcessor": {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:lambda:r:1:function:Inner", "End": true}}}"#,
    );
    let loaded = load(&text);
    assert_eq!(loaded.workflow.resources(), vec![("arn:aws:lambda:r:1:function:Inner", vec!["T"])]);
}

#[test]
fn distributed_mode_needs_an_execution_type() {
    let text = with_map(
        r#""ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#,
    );
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), (p[0].1, p[0].2)), ("WFC0222", at(&text, "\"DISTRIBUTED\"")));
    assert!(p[0].3.contains("needs `ExecutionType`"), "{}", p[0].3);

    let text = with_map(
        r#""ItemProcessor": {"ProcessorConfig": {"ExecutionType": "STANDARD"}, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#,
    );
    let p = problems(&text);
    assert_eq!((p[0].0.as_str(), (p[0].1, p[0].2)), ("WFC0222", at(&text, "\"ExecutionType\"")));
}

const DISTRIBUTED: &str = r#"{"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#;
const READER: &str = r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k.csv"}, "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "GIVEN", "CSVHeaders": ["a", "b"], "MaxItems": 10}}"#;

#[test]
fn a_distributed_map_lowers_with_its_fields() {
    let text = with_map(&format!(
        r#"{READER}, "ItemBatcher": {{"MaxItemsPerBatchPath": "$.n", "BatchInput": {{"x.$": "$.x"}}}},
        "ResultWriter": {{"Resource": "arn:aws:states:::s3:putObject", "Parameters": {{"Bucket": "out", "Prefix": "p"}}}},
        "Label": "Rows", "ToleratedFailurePercentage": 12.5, "MaxConcurrency": 5, "ItemProcessor": {DISTRIBUTED}"#
    ));
    let loaded = load(&text);
    let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
    let d = m.distributed.as_ref().expect("distributed fields");
    assert_eq!(d.execution_type, wfc_core::ir::distributed::ExecutionType::Standard);
    assert_eq!(d.label.as_deref(), Some("Rows"));
    assert_eq!(d.tolerated_failure_percentage, Some(wfc_core::ir::distributed::Percentage::Fixed(12.5)));
    let reader = d.item_reader.as_ref().expect("reader");
    assert_eq!(reader.config.input_type, Some(wfc_core::ir::distributed::InputType::Csv));
    assert_eq!(reader.config.csv_headers, wfc_core::ir::distributed::CsvHeaders::Given(vec!["a".into(), "b".into()]));
    assert_eq!(reader.config.max_items, Some(wfc_core::ir::distributed::Count::Fixed(10)));
    assert!(d.item_batcher.is_some() && d.result_writer.is_some());
    assert_eq!(m.max_concurrency, 5);
}

#[test]
fn distributed_only_fields_are_reported_one_by_one() {
    let text = with_map(&format!(
        r#""ItemReader": {{}}, "ToleratedFailureCount": 1, "MaxConcurrencyPath": "$.n", "ItemProcessor": {PROCESSOR}"#
    ));
    let p = problems(&text);
    let codes: Vec<(&str, (usize, usize))> = p.iter().map(|(c, line, col, _)| (c.as_str(), (*line, *col))).collect();
    let want = ["\"ItemReader\"", "\"ToleratedFailureCount\""].map(|k| ("WFC0220", at(&text, k)));
    assert_eq!(codes, want);
    assert!(p[0].3.contains("`ItemReader` is only allowed in a DISTRIBUTED Map"), "{}", p[0].3);
}

/// AWS runs an INLINE Map with `ToleratedFailure*` (recorded), so wfc accepts it with a
/// warning rather than refusing the definition; the other DISTRIBUTED-only fields stay errors.
#[test]
fn tolerance_on_an_inline_map_is_a_warning() {
    for field in [r#""ToleratedFailureCount": 1"#, r#""ToleratedFailurePercentagePath": "$.p""#] {
        let text = with_map(&format!(r#"{field}, "ItemProcessor": {PROCESSOR}"#));
        let loaded = wfc_core::asl::load(Source { path: "map.json", text: &text }).expect("a warning only");
        let codes: Vec<&str> = loaded.warnings.items.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["WFC0220"], "{text}");
        let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
        assert!(m.distributed.is_none());
    }
}

/// Invalid combinations of Map fields, each with its code at the position it names.
#[test]
fn invalid_map_field_combinations() {
    let cases: &[(&str, &str, &str, &str)] = &[
        // (fields, code, where, message fragment)
        (
            r#""MaxConcurrency": 2, "MaxConcurrencyPath": "$.n""#,
            "WFC0221",
            "\"MaxConcurrencyPath\"",
            "cannot both be given",
        ),
        (
            r#""ToleratedFailureCount": 2, "ToleratedFailureCountPath": "$.n""#,
            "WFC0221",
            "\"ToleratedFailureCountPath\"",
            "cannot both be given",
        ),
        (r#""ToleratedFailurePercentage": 101"#, "WFC0223", "101", "between 0 and 100"),
        (r#""ToleratedFailureCount": -1"#, "WFC0223", "-1", "non-negative"),
        (r#""MaxConcurrencyPath": "$.a[*]""#, "WFC0402", "\"$.a[*]\"", "Reference Path"),
        (r#""Label": "has space""#, "WFC0228", "\"has space\"", "cannot contain"),
        (r#""Label": "a234567890123456789012345678901234567890X""#, "WFC0228", "\"a2345", "longer than 40"),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b"}, "ReaderConfig": {"InputType": "JSON"}}"#,
            "WFC0224",
            "{\"Bucket",
            "need `Key`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}}"#,
            "WFC0225",
            "{\"Resource",
            "needs `ReaderConfig`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "CSVHeaders": ["a"]}}"#,
            "WFC0225",
            "\"CSVHeaders\"",
            "only for",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "CSV", "CSVHeaders": ["a"]}}"#,
            "WFC0225",
            "\"CSVHeaders\"",
            "needs `\"CSVHeaderLocation\": \"GIVEN\"`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "GIVEN"}}"#,
            "WFC0225",
            "\"GIVEN\"",
            "needs `CSVHeaders`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "MaxItems": 1, "MaxItemsPath": "$.m"}}"#,
            "WFC0221",
            "\"MaxItemsPath\"",
            "cannot both be given",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k", "VersionId": "v1"}, "ReaderConfig": {"InputType": "PARQUET"}}"#,
            "WFC0224",
            "\"VersionId\"",
            "not supported with",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b", "MaxKeys": 0}}"#,
            "WFC0224",
            "0}",
            "`MaxKeys` must be an integer from 1 to 1000, found 0",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k", "RequestPayer": "me"}, "ReaderConfig": {"InputType": "JSON"}}"#,
            "WFC0224",
            "\"me\"",
            "`RequestPayer` must be \"requester\"",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "CSV", "CSVDelimiter": "COLON"}}"#,
            "WFC0225",
            "\"COLON\"",
            "must be \"COMMA\", \"PIPE\", \"SEMICOLON\", \"SPACE\" or \"TAB\"",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "CSVDelimiter": "PIPE"}}"#,
            "WFC0225",
            "\"CSVDelimiter\"",
            "only for",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "CSV", "ItemsPointer": "/a"}}"#,
            "WFC0225",
            "\"/a\"",
            "only for `\"InputType\": \"JSON\"`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "ItemsPointer": "a/b"}}"#,
            "WFC0225",
            "\"a/b\"",
            "not a JSON Pointer",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "ItemsPointer": "/a~2"}}"#,
            "WFC0225",
            "\"/a~2\"",
            "`~0` or `~1`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "Transformation": "LOAD_AND_FLATTEN"}}"#,
            "WFC0225",
            "\"Transformation\"",
            "for the `s3:listObjectsV2` ItemReader",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b", "Prefix": "p/"}, "ReaderConfig": {"InputType": "JSON"}}"#,
            "WFC0225",
            "\"JSON\"",
            "needs `\"Transformation\": \"LOAD_AND_FLATTEN\"`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b"}, "ReaderConfig": {"Transformation": "LOAD_AND_FLATTEN"}}"#,
            "WFC0225",
            "\"Transformation\"",
            "needs `InputType`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b"}, "ReaderConfig": {"Transformation": "UNZIP"}}"#,
            "WFC0225",
            "\"UNZIP\"",
            "must be \"NONE\" or \"LOAD_AND_FLATTEN\"",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b", "Key": "k"}}"#,
            "WFC0205",
            "\"Key\"",
            "not supported in the `Parameters`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "MANIFEST", "ManifestType": "ORC"}}"#,
            "WFC0225",
            "\"ORC\"",
            "must be \"S3_INVENTORY\" or \"ATHENA_DATA\"",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "MANIFEST", "ManifestType": "ATHENA_DATA"}}"#,
            "WFC0225",
            "\"MANIFEST\"",
            "the format of the data files",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSONL", "ManifestType": "S3_INVENTORY"}}"#,
            "WFC0225",
            "\"ManifestType\"",
            "needs `\"InputType\": \"MANIFEST\"`",
        ),
        (
            r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Arguments": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON"}}"#,
            "WFC0902",
            "\"Arguments\"",
            "JSONata field",
        ),
        (r#""ResultWriter": {}"#, "WFC0227", "{}", "needs `Resource` and `Parameters`"),
        (
            r#""ResultWriter": {"WriterConfig": {"OutputType": "JSONL"}}"#,
            "WFC0227",
            "\"WriterConfig\"",
            "without `Resource`",
        ),
        (
            r#""ResultWriter": {"WriterConfig": {"Transformation": "SQUASH"}}"#,
            "WFC0227",
            "\"SQUASH\"",
            "must be \"NONE\", \"COMPACT\" or \"FLATTEN\"",
        ),
        (
            r#""ResultWriter": {"Parameters": {"Bucket": "b"}, "WriterConfig": {}}"#,
            "WFC0227",
            "\"Parameters\"",
            "needs `Resource`",
        ),
        (r#""ItemBatcher": {"BatchInput": {}}"#, "WFC0226", "{\"BatchInput", "needs `MaxItemsPerBatch`"),
        (r#""ItemBatcher": {"MaxItemsPerBatch": 0}"#, "WFC0226", "0}", "positive"),
        (r#""ItemBatcher": {"MaxInputBytesPerBatch": 300000}"#, "WFC0226", "300000", "at most 262144"),
        (
            r#""ResultWriter": {"Resource": "arn:aws:states:::s3:putObject", "Parameters": {"Prefix": "p"}}"#,
            "WFC0227",
            "{\"Prefix",
            "need `Bucket`",
        ),
        (
            r#""ResultWriter": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b"}}"#,
            "WFC0227",
            "\"arn:aws:states:::s3:getObject\"",
            "unknown ResultWriter resource",
        ),
    ];
    for (fields, code, needle, fragment) in cases {
        let text = with_map(&format!("{fields}, \"ItemProcessor\": {DISTRIBUTED}"));
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{fields}: {p:?}");
        assert_eq!((p[0].0.as_str(), (p[0].1, p[0].2)), (*code, at(&text, needle)), "{fields}: {p:?}");
        assert!(p[0].3.contains(fragment), "{fields}: {}", p[0].3);
    }
}

/// The reader and writer options of a DISTRIBUTED Map, as the IR keeps them.
#[test]
fn reader_and_writer_options_lower() {
    use wfc_core::ir::distributed::*;
    let map = |fields: &str| {
        let loaded = load(&with_map(&format!("{fields}, \"ItemProcessor\": {DISTRIBUTED}")));
        let StateKind::Map(m) = &loaded.workflow.machine.states[0].kind else { panic!("not a Map") };
        *m.distributed.clone().expect("distributed fields")
    };
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "JSON", "ItemsPointer": "/data/a~1b"}}"#,
    );
    assert_eq!(d.item_reader.map(|r| r.config.items_pointer), Some(Some("/data/a~1b".to_owned())));
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "CSV", "CSVDelimiter": "TAB"}}"#,
    );
    assert_eq!(d.item_reader.map(|r| r.config.csv_delimiter), Some(CsvDelimiter::Tab));
    let d = map(r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b"}}"#);
    let reader = d.item_reader.expect("reader");
    assert!(reader.lists_objects() && reader.config.input_type.is_none());
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b", "Prefix": "p/"}, "ReaderConfig": {"InputType": "JSONL", "Transformation": "LOAD_AND_FLATTEN", "MaxItems": 3}}"#,
    );
    let config = d.item_reader.expect("reader").config;
    assert_eq!(
        (config.input_type, config.transformation),
        (Some(InputType::Jsonl), ReaderTransformation::LoadAndFlatten)
    );
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "m.json"}, "ReaderConfig": {"InputType": "MANIFEST"}}"#,
    );
    assert_eq!(d.item_reader.map(|r| r.config.input_type), Some(Some(InputType::Manifest)));
    // PARQUET (read by the runtime's `parquet` feature), on one object and on a listing.
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "k"}, "ReaderConfig": {"InputType": "PARQUET"}}"#,
    );
    assert_eq!(d.item_reader.map(|r| r.config.input_type), Some(Some(InputType::Parquet)));
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2", "Parameters": {"Bucket": "b"}, "ReaderConfig": {"InputType": "PARQUET", "Transformation": "LOAD_AND_FLATTEN"}}"#,
    );
    assert_eq!(d.item_reader.map(|r| r.config.input_type), Some(Some(InputType::Parquet)));
    let d = map(
        r#""ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "Parameters": {"Bucket": "b", "Key": "m.csv"}, "ReaderConfig": {"InputType": "JSONL", "ManifestType": "ATHENA_DATA"}}"#,
    );
    assert_eq!(d.item_reader.map(|r| r.config.manifest_type), Some(Some(ManifestType::AthenaData)));
    let d = map(r#""ResultWriter": {"WriterConfig": {"Transformation": "FLATTEN"}}"#);
    let writer = d.result_writer.expect("writer");
    assert!(!writer.exports());
    assert_eq!(
        writer.writer_config,
        Some(WriterConfig { output_type: OutputType::Json, transformation: WriterTransformation::Flatten })
    );
    let d = map(
        r#""ResultWriter": {"Resource": "arn:aws:states:::s3:putObject", "Parameters": {"Bucket": "o"}, "WriterConfig": {"OutputType": "JSONL", "Transformation": "COMPACT"}}"#,
    );
    let writer = d.result_writer.expect("writer");
    assert!(writer.exports());
    assert_eq!(writer.writer_config.map(|c| c.output_type), Some(OutputType::Jsonl));
}

/// `ItemsPath` beside an `ItemReader` is ignored, with a warning: AWS runs such a Map over the
/// reader's items even when the path selects nothing (recorded).
#[test]
fn items_path_beside_a_reader_is_a_warning() {
    let text = with_map(&format!(
        r#""ItemsPath": "$.nothing", "ItemReader": {{"Resource": "arn:aws:states:::s3:getObject", "Parameters": {{"Bucket": "b", "Key": "k"}}, "ReaderConfig": {{"InputType": "JSON"}}}}, "ItemProcessor": {DISTRIBUTED}"#
    ));
    let loaded = load(&text);
    let warnings: Vec<_> =
        loaded.warnings.located().into_iter().map(|l| (l.code, l.line, l.column, l.message)).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!((warnings[0].0.as_str(), (warnings[0].1, warnings[0].2)), ("WFC0224", at(&text, "\"ItemsPath\"")));
    assert!(warnings[0].3.contains("ignored"), "{}", warnings[0].3);
}

#[test]
fn an_unknown_mode_is_an_error() {
    let text = with_map(
        r#""ItemProcessor": {"ProcessorConfig": {"Mode": "SIDEWAYS"}, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#,
    );
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "WFC0201");
    assert!(p[0].3.contains("\"SIDEWAYS\""), "{}", p[0].3);
}

#[test]
fn max_concurrency_must_be_a_non_negative_integer() {
    for (value, message) in [("-1", "non-negative integer"), ("1.5", "non-negative integer"), ("\"2\"", "integer")] {
        let p = problems(&with_map(&format!(r#""MaxConcurrency": {value}, "ItemProcessor": {PROCESSOR}"#)));
        assert_eq!(p.len(), 1, "{value}: {p:?}");
        assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0201", 2, 42), "{value}");
        assert!(p[0].3.contains(message), "{value}: {}", p[0].3);
    }
}

#[test]
fn the_item_processor_is_required_and_only_once() {
    let p = problems(&with_map(r#""ItemsPath": "$""#));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0202", 2, 3));
    assert!(p[0].3.contains("ItemProcessor"), "{}", p[0].3);

    let p = problems(&with_map(&format!(r#""ItemProcessor": {PROCESSOR}, "Iterator": {PROCESSOR}"#)));
    assert!(p.iter().any(|(_, _, _, m)| m.contains("`ItemProcessor` and its legacy name `Iterator`")), "{p:?}");
    let p = problems(&with_map(&format!(r#""ItemSelector": {{}}, "Parameters": {{}}, "ItemProcessor": {PROCESSOR}"#)));
    assert!(p.iter().any(|(_, _, _, m)| m.contains("`ItemSelector` and its legacy name `Parameters`")), "{p:?}");
}

#[test]
fn items_path_must_be_a_reference_path() {
    let p = problems(&with_map(&format!(r#""ItemsPath": "$.a[*]", "ItemProcessor": {PROCESSOR}"#)));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0402", 2, 37));
}

#[test]
fn the_item_processor_is_a_closed_scope() {
    let text = r#"{"StartAt": "M", "States": {
  "M": {"Type": "Map", "ItemProcessor": {"StartAt": "P", "States": {
    "P": {"Type": "Pass", "Next": "After"}}}, "Next": "After"},
  "After": {"Type": "Succeed"}}}"#;
    let p = problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1), ("WFC0302", 3));
}

#[test]
fn state_names_are_unique_across_item_processors() {
    let text = r#"{"StartAt": "M", "States": {
  "M": {"Type": "Map", "ItemProcessor": {"StartAt": "M", "States": {
    "M": {"Type": "Pass", "End": true}}}, "End": true}}}"#;
    let p = problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), p[0].1, p[0].2), ("WFC0303", 3, 5));
}

#[test]
fn unknown_fields_of_the_item_processor_are_reported() {
    let text =
        with_map(r#""ItemProcessor": {"StartAt": "P", "Sates": {}, "States": {"P": {"Type": "Pass", "End": true}}}"#);
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].0.as_str(), (p[0].1, p[0].2)), ("WFC0203", at(&text, "\"Sates\"")));
}

#[test]
fn graphs_draw_the_item_processor_inside_the_map() {
    let loaded = load(&with_map(&format!(r#""ItemProcessor": {PROCESSOR}"#)));
    let mermaid = wfc_core::render::mermaid(&loaded.workflow);
    assert!(mermaid.contains("state s0 {\n        state \"P\" as s0_m_s0"), "{mermaid}");
    let dot = wfc_core::render::dot(&loaded.workflow);
    assert!(dot.contains("subgraph cluster_s0_m_items {"), "{dot}");
    assert!(dot.contains("label=\"M (each item)\""), "{dot}");
    assert!(dot.contains("s0 -> s0_m_start [style=dashed, arrowhead=none];"), "{dot}");
}
