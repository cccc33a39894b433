//! The DISTRIBUTED Map's own fields (`ProcessorConfig.Mode: DISTRIBUTED`): where the items come
//! from (`ItemReader`), how they are grouped (`ItemBatcher`), where the results go
//! (`ResultWriter`), and how many child executions may fail (`ToleratedFailure*`).
//!
//! Each numeric field that has a `*Path` form is a [`Count`] or [`Percentage`]: a literal checked
//! by the compiler, or a Reference Path resolved (and checked, with AWS's messages) at run time.

use serde::{Deserialize, Serialize};

use crate::{JsonataExpr, Template};
use crate::jsonpath::Path;

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
    /// `Resource`, e.g. `arn:aws:states:::s3:getObject`.
    pub resource: String,
    /// `Parameters` (`Bucket`, `Key`...), evaluated against the Map's effective input.
    pub parameters: Template,
    /// `ReaderConfig`.
    pub config: ReaderConfig,
}

/// `ItemReader.ReaderConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderConfig {
    /// `InputType`.
    pub input_type: InputType,
    /// `CSVHeaderLocation` and `CSVHeaders` (CSV only).
    pub csv_headers: CsvHeaders,
    /// `MaxItems(Path)`: read at most this many items (0 = all).
    pub max_items: Option<Count>,
}

/// `ReaderConfig.InputType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InputType {
    /// A JSON array.
    Json,
    /// JSON Lines: one JSON value per line.
    Jsonl,
    /// Comma-separated values; each row becomes an object of strings keyed by the headers.
    Csv,
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
    /// `BatchInput`: a template added to every batch as `"BatchInput"`.
    pub batch_input: Option<Template>,
}

/// `ResultWriter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultWriter {
    /// `Resource`, `arn:aws:states:::s3:putObject`.
    pub resource: String,
    /// `Parameters` (`Bucket`, `Prefix`), evaluated against the Map's effective input.
    pub parameters: Template,
}

/// The one ItemReader resource wfc reads: an object named by `Bucket` and `Key`.
pub const S3_GET_OBJECT: &str = "arn:aws:states:::s3:getObject";
/// The one ResultWriter resource: objects written under `Bucket` and `Prefix`.
pub const S3_PUT_OBJECT: &str = "arn:aws:states:::s3:putObject";
/// AWS's limit on `ReaderConfig.MaxItems`.
pub const MAX_READER_ITEMS: u64 = 100_000_000;
/// AWS's limit on `ItemBatcher.MaxInputBytesPerBatch`: 256 KiB.
pub const MAX_BATCH_BYTES: u64 = 256 * 1024;
/// AWS's limit on the length of a Map `Label`.
pub const MAX_LABEL_CHARS: usize = 40;
