//! The DISTRIBUTED Map's own fields (`ProcessorConfig.Mode: DISTRIBUTED`): where the items come
//! from (`ItemReader`), how they are grouped (`ItemBatcher`), where the results go
//! (`ResultWriter`), and how many child executions may fail (`ToleratedFailure*`).
//!
//! Each numeric field that has a `*Path` form is a [`Count`] or [`Percentage`]: a literal checked
//! by the compiler, or a Reference Path resolved (and checked, with AWS's messages) at run time.

use serde::{Deserialize, Serialize};

use crate::jsonata::JsonataTemplate;
use crate::jsonpath::Path;
use crate::{JsonataExpr, Template};

/// The fields a Map has only in DISTRIBUTED mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistributedMap {
    /// `ProcessorConfig.ExecutionType`: how the child executions run.
    pub execution_type: ExecutionType,
    /// `ItemReader`: read the items from an object (a local file) instead of `ItemsPath`.
    pub item_reader: Option<ItemReader>,
    /// `ItemBatcher`: each child execution gets a batch of items.
    pub item_batcher: Option<ItemBatcher>,
    /// `ResultWriter`: write the child executions' results to files; the Map's result is then a
    /// summary naming the manifest.
    pub result_writer: Option<ResultWriter>,
    /// `Label`: names the Map Run and its child executions (the state name when absent).
    pub label: Option<String>,
    /// `ToleratedFailureCount(Path)`: how many child executions may fail (default 0).
    pub tolerated_failure_count: Option<Count>,
    /// `ToleratedFailurePercentage(Path)`: what percentage of the items may fail (default 0).
    pub tolerated_failure_percentage: Option<Percentage>,
}

/// `ProcessorConfig.ExecutionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecutionType {
    /// `STANDARD` child executions.
    Standard,
    /// `EXPRESS` child executions.
    Express,
}

impl ExecutionType {
    /// The ASL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionType::Standard => "STANDARD",
            ExecutionType::Express => "EXPRESS",
        }
    }
}

/// A non-negative integer field with a `*Path` form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Count {
    /// The literal value.
    Fixed(u64),
    /// A Reference Path into the Map's effective input.
    Path(Path),
    /// A JSONata expression (JSONata states), evaluated when the state runs.
    Jsonata(JsonataExpr),
}

/// A percentage field (0–100) with a `*Path` form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Percentage {
    /// The literal value.
    Fixed(f64),
    /// A Reference Path into the Map's effective input.
    Path(Path),
    /// A JSONata expression (JSONata states), evaluated when the state runs.
    Jsonata(JsonataExpr),
}

/// `ItemReader`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemReader {
    /// `Resource`: [`S3_GET_OBJECT`] or [`S3_LIST_OBJECTS_V2`].
    pub resource: String,
    /// `Parameters` (`Bucket`, `Key` or `Prefix`), evaluated against the Map's effective input;
    /// `None` in a JSONata state, which gives [`arguments`](Self::arguments) instead.
    pub parameters: Option<Template>,
    /// `Arguments` (JSONata states): the same fields as `{% %}` expressions or literals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonataTemplate>,
    /// `ReaderConfig`.
    pub config: ReaderConfig,
}

impl ItemReader {
    /// Whether the reader lists objects (`s3:listObjectsV2`) rather than reading one.
    pub fn lists_objects(&self) -> bool {
        self.resource == S3_LIST_OBJECTS_V2
    }
}

/// `ItemReader.ReaderConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderConfig {
    /// `InputType`: how an object's bytes become items. `None` for an `s3:listObjectsV2` reader
    /// without `LOAD_AND_FLATTEN` (its items are the listed objects' descriptions).
    pub input_type: Option<InputType>,
    /// `CSVHeaderLocation` and `CSVHeaders` (CSV only).
    pub csv_headers: CsvHeaders,
    /// `MaxItems(Path)`: read at most this many items (0 = all).
    pub max_items: Option<Count>,
    /// `CSVDelimiter` (CSV only; default `COMMA`).
    #[serde(default, skip_serializing_if = "CsvDelimiter::is_comma")]
    pub csv_delimiter: CsvDelimiter,
    /// `ItemsPointer` (JSON only): an RFC 6901 JSON Pointer to the array inside the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_pointer: Option<String>,
    /// `Transformation` (`s3:listObjectsV2` only; default `NONE`).
    #[serde(default, skip_serializing_if = "ReaderTransformation::is_none")]
    pub transformation: ReaderTransformation,
    /// `ManifestType`: the object is a manifest naming the files that hold the items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_type: Option<ManifestType>,
}

/// `ReaderConfig.InputType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InputType {
    /// A JSON array (or, with `ItemsPointer`, an object holding one).
    Json,
    /// JSON Lines: one JSON value per line.
    Jsonl,
    /// Delimited text; each row becomes an object of strings keyed by the headers.
    Csv,
    /// An S3 Inventory `manifest.json` ([`ManifestType::S3Inventory`]).
    Manifest,
    /// Apache Parquet: each row becomes an object keyed by its columns (the runtime's
    /// `parquet` feature reads it).
    Parquet,
}

impl InputType {
    /// The ASL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            InputType::Json => "JSON",
            InputType::Jsonl => "JSONL",
            InputType::Csv => "CSV",
            InputType::Manifest => "MANIFEST",
            InputType::Parquet => "PARQUET",
        }
    }
}

/// `ReaderConfig.CSVDelimiter`: the byte between the fields of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CsvDelimiter {
    /// `COMMA` (the default): `,`.
    #[default]
    Comma,
    /// `PIPE`: `|`.
    Pipe,
    /// `SEMICOLON`: `;`.
    Semicolon,
    /// `SPACE`: ` `.
    Space,
    /// `TAB`: a horizontal tab.
    Tab,
}

impl CsvDelimiter {
    /// Every delimiter with its ASL spelling.
    pub const ALL: [(&'static str, CsvDelimiter); 5] = [
        ("COMMA", CsvDelimiter::Comma),
        ("PIPE", CsvDelimiter::Pipe),
        ("SEMICOLON", CsvDelimiter::Semicolon),
        ("SPACE", CsvDelimiter::Space),
        ("TAB", CsvDelimiter::Tab),
    ];

    /// The delimiting byte.
    pub fn byte(self) -> u8 {
        match self {
            CsvDelimiter::Comma => b',',
            CsvDelimiter::Pipe => b'|',
            CsvDelimiter::Semicolon => b';',
            CsvDelimiter::Space => b' ',
            CsvDelimiter::Tab => b'\t',
        }
    }

    fn is_comma(&self) -> bool {
        *self == CsvDelimiter::Comma
    }
}

/// `ReaderConfig.Transformation` of an `s3:listObjectsV2` reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ReaderTransformation {
    /// `NONE` (the default): each listed object's description is an item.
    #[default]
    None,
    /// `LOAD_AND_FLATTEN`: each listed object is read with the `InputType`, and the items of
    /// all of them, in listing order, are the Map's items.
    LoadAndFlatten,
}

impl ReaderTransformation {
    fn is_none(&self) -> bool {
        *self == ReaderTransformation::None
    }
}

/// `ReaderConfig.ManifestType`: what kind of manifest the `s3:getObject` object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ManifestType {
    /// `S3_INVENTORY` (with `InputType` `MANIFEST`): an S3 Inventory `manifest.json` whose
    /// `files` are CSV inventory files (gzip-compressed or not); each row is an item, an
    /// object of strings keyed by the manifest's `fileSchema`.
    S3Inventory,
    /// `ATHENA_DATA`: an Athena `UNLOAD` manifest, one `s3://bucket/key` per line; each data
    /// file is read with the `InputType` (`CSV` or `JSONL`) and their items flattened.
    AthenaData,
}

/// Where a CSV file's column names come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CsvHeaders {
    /// `FIRST_ROW` (the default): the file's first row.
    FirstRow,
    /// `GIVEN`: the `CSVHeaders` array; every row of the file is data.
    Given(Vec<String>),
}

/// `ItemBatcher`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemBatcher {
    /// `MaxItemsPerBatch(Path)`.
    pub max_items_per_batch: Option<Count>,
    /// `MaxInputBytesPerBatch(Path)`: the serialized child input stays within this size.
    pub max_input_bytes_per_batch: Option<Count>,
    /// `BatchInput`: a template added to every batch as `"BatchInput"`; `None` in a JSONata
    /// state ([`batch_input_jsonata`](Self::batch_input_jsonata)).
    pub batch_input: Option<Template>,
    /// `BatchInput` in a JSONata state: an object whose `{% %}` leaves are evaluated, or one
    /// `{% %}` expression that must give an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_input_jsonata: Option<JsonataTemplate>,
}

/// `ResultWriter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultWriter {
    /// `Resource`, [`S3_PUT_OBJECT`]; `None` when only `WriterConfig` is given (the results are
    /// shaped and returned as the Map's output, not exported).
    pub resource: Option<String>,
    /// `Parameters` (`Bucket`, `Prefix`), evaluated against the Map's effective input; `None`
    /// without `Resource`, or in a JSONata state ([`arguments`](Self::arguments)).
    pub parameters: Option<Template>,
    /// `Arguments` (JSONata states): `Bucket` and `Prefix` as `{% %}` expressions or literals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonataTemplate>,
    /// `WriterConfig`: how the results are shaped and written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_config: Option<WriterConfig>,
}

impl ResultWriter {
    /// Whether the results are exported to objects (a `Resource` is given).
    pub fn exports(&self) -> bool {
        self.resource.is_some()
    }
}

/// `ResultWriter.WriterConfig`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterConfig {
    /// `OutputType`: the format of the exported result files (default `JSON`).
    pub output_type: OutputType,
    /// `Transformation`: what of each child execution is kept.
    pub transformation: WriterTransformation,
}

/// `WriterConfig.OutputType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputType {
    /// `JSON`: each result file is a JSON array.
    Json,
    /// `JSONL`: each result file is JSON Lines, one result per line.
    Jsonl,
}

/// `WriterConfig.Transformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriterTransformation {
    /// `NONE`: each child execution's result document (input, output, ARN, status...); the
    /// default when exporting.
    None,
    /// `COMPACT`: each succeeded child's output (a failed child's document, unchanged); the
    /// Map's output without a `ResultWriter`.
    Compact,
    /// `FLATTEN`: as `COMPACT`, with an output that is an array spliced in element by element.
    Flatten,
}

/// The `Parameters`/`Arguments` an `s3:getObject` ItemReader accepts (S3's GetObject request
/// members AWS's ItemReader passes on).
pub const GET_OBJECT_PARAMETERS: &[&str] = &["Bucket", "Key", "VersionId", "ExpectedBucketOwner", "RequestPayer"];

/// The `Parameters`/`Arguments` an `s3:listObjectsV2` ItemReader accepts (S3's ListObjectsV2
/// request members; the reader pages through every object itself).
pub const LIST_OBJECTS_PARAMETERS: &[&str] = &[
    "Bucket",
    "Prefix",
    "StartAfter",
    "Delimiter",
    "MaxKeys",
    "EncodingType",
    "FetchOwner",
    "ContinuationToken",
    "ExpectedBucketOwner",
    "RequestPayer",
];

/// The S3 request members that wfc's object store cannot honour, with why: an ItemReader that
/// gives one fails with `States.ItemReaderFailed` naming it (docs/semantics.md).
pub const UNHONOURED_PARAMETERS: &[(&str, &str)] = &[
    ("VersionId", "the object store keeps no object versions"),
    ("ExpectedBucketOwner", "the object store's buckets have no owning account to check"),
    ("EncodingType", "the object store does not URL-encode the keys it lists"),
    ("FetchOwner", "the object store's objects have no owner"),
    ("ContinuationToken", "the object store hands out no continuation tokens: the reader lists every object"),
];

/// Whether `value` is a valid value of the ItemReader S3 parameter `name` (its type and range,
/// as S3 takes it): `Err` says what is wrong. Parameters not checked here are strings.
pub fn check_s3_parameter(name: &str, value: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    let ok = match (name, value) {
        ("MaxKeys", Value::Number(n)) => n.as_u64().is_some_and(|n| (1..=1000).contains(&n)),
        ("MaxKeys", _) => false,
        ("FetchOwner", v) => v.is_boolean(),
        ("RequestPayer", v) => v.as_str() == Some("requester"),
        ("EncodingType", v) => v.as_str() == Some("url"),
        ("ExpectedBucketOwner", v) => {
            v.as_str().is_some_and(|s| s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit()))
        }
        (_, v) => v.is_string(),
    };
    if ok {
        return Ok(());
    }
    let wanted = match name {
        "MaxKeys" => "an integer from 1 to 1000",
        "FetchOwner" => "a Boolean",
        "RequestPayer" => "\"requester\"",
        "EncodingType" => "\"url\"",
        "ExpectedBucketOwner" => "a 12-digit AWS account ID",
        _ => "a string",
    };
    Err(format!("`{name}` must be {wanted}, found {value}"))
}

/// The ItemReader resource that reads one object named by `Bucket` and `Key`.
pub const S3_GET_OBJECT: &str = "arn:aws:states:::s3:getObject";
/// The ItemReader resource that lists the objects under `Bucket` and `Prefix`.
pub const S3_LIST_OBJECTS_V2: &str = "arn:aws:states:::s3:listObjectsV2";
/// The one ResultWriter resource: objects written under `Bucket` and `Prefix`.
pub const S3_PUT_OBJECT: &str = "arn:aws:states:::s3:putObject";
/// AWS's limit on `ReaderConfig.MaxItems`.
pub const MAX_READER_ITEMS: u64 = 100_000_000;
/// AWS's limit on `ItemBatcher.MaxInputBytesPerBatch`: 256 KiB.
pub const MAX_BATCH_BYTES: u64 = 256 * 1024;
/// AWS's limit on the length of a Map `Label`.
pub const MAX_LABEL_CHARS: usize = 40;
