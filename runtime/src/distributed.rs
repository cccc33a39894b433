//! The DISTRIBUTED Map: a Map Run whose items come from `ItemsPath` or an `ItemReader`, are
//! optionally grouped by an `ItemBatcher`, and each run the item processor as a **child
//! execution** (in this process, with its own history, name and context object). A tolerated
//! number of children may fail; the results go to the Map's output or, with a `ResultWriter`, to
//! files described by a manifest.
//!
//! # Where objects live
//!
//! `ItemReader` (`arn:aws:states:::s3:getObject`) and `ResultWriter`
//! (`arn:aws:states:::s3:putObject`) name S3 objects by `Bucket` and `Key`/`Prefix`. wfc reads and
//! writes them through an [`ObjectStore`]. The default, [`LocalObjects`], maps them to local
//! files: an item object is `<item root>/<Bucket>/<Key>` and result files go to
//! `<result root>/<Bucket>/<Prefix>/<map run id>/`. The roots are set with
//! [`crate::RunOptions::with_item_root`] / [`crate::RunOptions::with_result_root`] (`--item-root`
//! and `--result-root` in the CLI). A bucket or key that is empty, absolute, or has a `.` or `..`
//! segment is refused, and so is a path that leaves its root through a symbolic link. Plug in
//! another store (an S3 client) with [`crate::RunOptions::with_object_store`].
//!
//! [`crate::exec::map`] owns the state's input/output processing, Retry and Catch, and calls
//! [`map_run`] for everything between `MapRunStarted` and `MapRunSucceeded`/`MapRunFailed`.

use std::fmt::Debug;
use std::future::Future;
use std::path::{Component, Path as FsPath, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use rand::Rng;
use serde_json::{Value, json};
use wfc_ir::distributed::{
    Count, CsvDelimiter, CsvHeaders, InputType, ManifestType, OutputType, Percentage, ReaderConfig,
    ReaderTransformation, WriterConfig, WriterTransformation,
};
use wfc_ir::errors::{EXCEED_TOLERATED_FAILURE_THRESHOLD, ITEM_READER_FAILED, RESULT_WRITER_FAILED};
use wfc_ir::{MapState, Path, Root};

use crate::{EventType, Execution, Failure, Status, io};

mod store_sync;
#[cfg(feature = "durable")]
pub use store_sync::signalled;
pub use store_sync::{
    MAX_LISTED_RUNNING, SYNC_INTERVAL, child_level, levels_key, limits_changed_topic, limits_key, progress_key,
    progress_wanted_topic, progress_written_topic, sync_interval,
};

/// Where a DISTRIBUTED Map's `ItemReader` reads objects and its `ResultWriter` writes them.
///
/// Implement it to read from real S3 (or anything else); errors are plain messages, which
/// become the cause of `States.ItemReaderFailed` or `States.ResultWriterFailed`.
pub trait ObjectStore: Debug + Send + Sync {
    /// The bytes of object `key` in `bucket` (`s3:getObject`).
    fn get_object<'a>(&'a self, bucket: &'a str, key: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>>;
    /// Stores `bytes` as object `key` in `bucket` (`s3:putObject`).
    fn put_object<'a>(&'a self, bucket: &'a str, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), String>>;
    /// The objects of `bucket` whose keys start with `prefix`, in key order
    /// (`s3:listObjectsV2`, every page). A store that cannot list says so (the default), which
    /// fails an `s3:listObjectsV2` ItemReader with `States.ItemReaderFailed`.
    fn list_objects<'a>(
        &'a self,
        bucket: &'a str,
        prefix: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ObjectSummary>, String>> {
        Box::pin(
            async move { Err(format!("cannot list s3://{bucket}/{prefix}: this object store does not list objects")) },
        )
    }
}

/// One object of an [`ObjectStore::list_objects`] listing: what `s3:listObjectsV2` says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectSummary {
    /// The object's key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its entity tag, quotes included as S3 gives it (`"<md5 hex>"` for a single-part object).
    pub etag: String,
    /// When it was last modified, in seconds since the Unix epoch.
    pub last_modified: i64,
    /// Its storage class (`STANDARD`).
    pub storage_class: String,
}

impl ObjectSummary {
    /// The item an `s3:listObjectsV2` ItemReader gives for the object, in AWS's shape.
    pub fn item(&self) -> Value {
        json!({
            "Etag": self.etag,
            "Key": self.key,
            "LastModified": self.last_modified,
            "Size": self.size,
            "StorageClass": self.storage_class,
        })
    }
}

/// The object store an execution uses: a plugged-in [`ObjectStore`], else [`LocalObjects`] on
/// the two roots.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    /// Root directory of `ItemReader` objects: `<root>/<Bucket>/<Key>`.
    pub item_root: Option<PathBuf>,
    /// Root directory of `ResultWriter` files: `<root>/<Bucket>/<Prefix>/...`.
    pub result_root: Option<PathBuf>,
    /// A store that replaces the local directories.
    pub store: Option<Arc<dyn ObjectStore>>,
}

impl Objects {
    fn store(&self) -> Arc<dyn ObjectStore> {
        match &self.store {
            Some(s) => Arc::clone(s),
            None => Arc::new(LocalObjects { item_root: self.item_root.clone(), result_root: self.result_root.clone() }),
        }
    }
}

/// Objects as local files under two root directories (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct LocalObjects {
    /// Where `get_object` reads: `<item_root>/<bucket>/<key>`.
    pub item_root: Option<PathBuf>,
    /// Where `put_object` writes: `<result_root>/<bucket>/<key>`.
    pub result_root: Option<PathBuf>,
}

impl ObjectStore for LocalObjects {
    fn get_object<'a>(&'a self, bucket: &'a str, key: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let root = self.item_root.as_deref().ok_or_else(|| {
                format!(
                    "cannot read s3://{bucket}/{key}: no item root directory is set (RunOptions::with_item_root, \
                     `--item-root`)"
                )
            })?;
            let path = object_path(root, bucket, key)?;
            let inside = contained(root, &path)?;
            std::fs::read(&inside).map_err(|e| format!("cannot read s3://{bucket}/{key} ({}): {e}", path.display()))
        })
    }

    fn put_object<'a>(&'a self, bucket: &'a str, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let root = self.result_root.as_deref().ok_or_else(|| {
                format!(
                    "cannot write s3://{bucket}/{key}: no result root directory is set (RunOptions::with_result_root, \
                     `--result-root`)"
                )
            })?;
            let path = object_path(root, bucket, key)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create the directory {}: {e}", parent.display()))?;
            }
            contained(root, path.parent().unwrap_or(root))?;
            std::fs::write(&path, bytes)
                .map_err(|e| format!("cannot write s3://{bucket}/{key} ({}): {e}", path.display()))
        })
    }

    fn list_objects<'a>(
        &'a self,
        bucket: &'a str,
        prefix: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ObjectSummary>, String>> {
        Box::pin(async move { self.list(bucket, prefix) })
    }
}

impl LocalObjects {
    /// The files under `<item_root>/<bucket>/` whose keys (their paths below the bucket, with
    /// `/`) start with `prefix`, sorted by key as S3 sorts (by UTF-8 bytes). Directories are
    /// not objects; a symbolic link is followed only while it stays inside the root.
    fn list(&self, bucket: &str, prefix: &str) -> Result<Vec<ObjectSummary>, String> {
        let root = self.item_root.as_deref().ok_or_else(|| {
            format!("cannot list s3://{bucket}/{prefix}: no item root directory is set (RunOptions::with_item_root, `--item-root`)")
        })?;
        // The bucket directory, checked as a key would be.
        let dir = object_path(root, bucket, "x")?.parent().map(FsPath::to_path_buf).unwrap_or_default();
        let real_root = root.canonicalize().map_err(|e| format!("the root directory {}: {e}", root.display()))?;
        let mut out = Vec::new();
        let mut pending = vec![(dir, String::new())];
        while let Some((path, key_prefix)) = pending.pop() {
            let entries = match std::fs::read_dir(&path) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && key_prefix.is_empty() => {
                    return Err(format!(
                        "cannot list s3://{bucket}/{prefix}: the bucket {bucket:?} does not exist ({}): {e}",
                        path.display()
                    ));
                }
                Err(e) => return Err(format!("cannot list {}: {e}", path.display())),
            };
            for entry in entries {
                let entry = entry.map_err(|e| format!("cannot list {}: {e}", path.display()))?;
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                    continue; // not UTF-8: no S3 key names it
                };
                let key = format!("{key_prefix}{name}");
                let real = entry.path().canonicalize().map_err(|e| format!("{}: {e}", entry.path().display()))?;
                if !real.starts_with(&real_root) {
                    continue;
                }
                let meta = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
                if meta.is_dir() {
                    // Only descend where keys below can still match the prefix.
                    let below = format!("{key}/");
                    if below.starts_with(prefix) || prefix.starts_with(&below) {
                        pending.push((entry.path(), below));
                    }
                } else if key.starts_with(prefix) {
                    let bytes = std::fs::read(&real).map_err(|e| format!("cannot read {}: {e}", real.display()))?;
                    let md5 = <md5::Md5 as md5::Digest>::digest(&bytes);
                    let etag = format!("\"{}\"", md5.iter().map(|b| format!("{b:02x}")).collect::<String>());
                    let last_modified = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
                    out.push(ObjectSummary {
                        key,
                        size: meta.len(),
                        etag,
                        last_modified,
                        storage_class: "STANDARD".to_owned(),
                    });
                }
            }
        }
        out.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
        Ok(out)
    }
}

/// `<root>/<bucket>/<key>`, refusing anything that could leave `root`: an empty bucket or key,
/// an absolute key, a `.` or `..` segment, a backslash, a NUL or a drive prefix.
pub fn object_path(root: &FsPath, bucket: &str, key: &str) -> Result<PathBuf, String> {
    let check = |what: &str, value: &str| -> Result<(), String> {
        let bad = if value.is_empty() {
            Some("is empty")
        } else if value.starts_with('/') {
            Some("is an absolute path")
        } else if value.contains('\\') || value.contains('\0') || value.contains(':') {
            Some("contains a backslash, colon or NUL")
        } else if value.split('/').any(|seg| seg == ".." || seg == ".") {
            Some("has a `.` or `..` segment")
        } else {
            None
        };
        match bad {
            Some(why) => Err(format!("the {what} {value:?} {why}; it must name a file inside the root directory")),
            None => Ok(()),
        }
    };
    check("bucket", bucket)?;
    check("key", key)?;
    if bucket.contains('/') {
        return Err(format!("the bucket {bucket:?} contains a slash"));
    }
    let mut path = root.join(bucket);
    for seg in key.split('/').filter(|s| !s.is_empty()) {
        path.push(seg);
    }
    // Belt and braces: nothing above should let a component other than a plain name through.
    let relative = path.strip_prefix(root).map_err(|_| format!("{} is outside the root", path.display()))?;
    if relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!("{} is outside the root directory", path.display()));
    }
    Ok(path)
}

/// `path` resolved through symbolic links, when it stays inside `root` (also resolved).
fn contained(root: &FsPath, path: &FsPath) -> Result<PathBuf, String> {
    let real_root = root.canonicalize().map_err(|e| format!("the root directory {}: {e}", root.display()))?;
    let real = path.canonicalize().map_err(|e| format!("{}: {e}", path.display()))?;
    if real.starts_with(&real_root) {
        Ok(real)
    } else {
        Err(format!("{} leaves the root directory {} (through a symbolic link)", path.display(), root.display()))
    }
}

fn reader_failed(cause: impl Into<String>) -> Failure {
    Failure::new(ITEM_READER_FAILED, cause)
}

/// What an `ItemReader` reads and how: its resource and `ReaderConfig` without `MaxItems`
/// (resolved per run). The interpreter builds it from the IR ([`ReadSpec::of`]); generated code
/// writes it out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadSpec<'a> {
    /// `s3:listObjectsV2` (else `s3:getObject`).
    pub lists_objects: bool,
    /// `InputType` (`None`: a listing's object descriptions are the items).
    pub input_type: Option<InputType>,
    /// `CSVHeaders` with `"CSVHeaderLocation": "GIVEN"` (`None`: each file's first row).
    pub given_headers: Option<Vec<&'a str>>,
    /// `CSVDelimiter`.
    pub delimiter: CsvDelimiter,
    /// `ItemsPointer`.
    pub items_pointer: Option<&'a str>,
    /// `Transformation` of a listing.
    pub transformation: ReaderTransformation,
    /// `ManifestType`.
    pub manifest_type: Option<ManifestType>,
}

impl<'a> ReadSpec<'a> {
    /// The spec of an IR reader.
    pub fn of(reader: &'a wfc_ir::distributed::ItemReader) -> ReadSpec<'a> {
        let config = &reader.config;
        ReadSpec {
            lists_objects: reader.lists_objects(),
            input_type: config.input_type,
            given_headers: match &config.csv_headers {
                CsvHeaders::Given(h) => Some(h.iter().map(String::as_str).collect()),
                CsvHeaders::FirstRow => None,
            },
            delimiter: config.csv_delimiter,
            items_pointer: config.items_pointer.as_deref(),
            transformation: config.transformation,
            manifest_type: config.manifest_type,
        }
    }
}

/// Parses an object's bytes into items, as `ReaderConfig` says: a JSON array, JSON Lines, or CSV
/// rows as objects of strings. At most `max_items` items are kept (and, for JSONL and CSV,
/// read); more than `limit` items to keep is `States.ItemReaderFailed`.
pub fn parse_items(bytes: &[u8], config: &ReaderConfig, max_items: usize, limit: usize) -> Result<Vec<Value>, Failure> {
    let spec = ReadSpec {
        input_type: config.input_type,
        given_headers: match &config.csv_headers {
            CsvHeaders::Given(h) => Some(h.iter().map(String::as_str).collect()),
            CsvHeaders::FirstRow => None,
        },
        delimiter: config.csv_delimiter,
        items_pointer: config.items_pointer.as_deref(),
        ..ReadSpec::default()
    };
    parse_object(bytes, &spec, max_items, limit)
}

/// One object's bytes as items, read with the spec's `InputType` (JSON with its
/// `ItemsPointer`, JSONL, or CSV with its headers and delimiter): at most `max_items` (0: all)
/// are kept, more than `limit` to keep is `States.ItemReaderFailed`.
pub fn parse_object(bytes: &[u8], spec: &ReadSpec<'_>, max_items: usize, limit: usize) -> Result<Vec<Value>, Failure> {
    let wanted = if max_items == 0 { usize::MAX } else { max_items };
    let too_many = || reader_failed(format!("The ItemReader read more than the Map item limit of {limit} items."));
    let mut items = Vec::new();
    match spec.input_type {
        None | Some(InputType::Manifest) => {
            return Err(reader_failed("the ItemReader has no InputType to read the object with"));
        }
        Some(InputType::Json) => {
            let doc: Value = serde_json::from_slice(bytes)
                .map_err(|e| reader_failed(format!("The object is not valid JSON: {e}")))?;
            let doc = match spec.items_pointer {
                None => doc,
                Some(pointer) => match doc.pointer(pointer) {
                    Some(v) => v.clone(),
                    None => {
                        return Err(reader_failed(format!(
                            "The ItemsPointer {pointer:?} does not point to a value in the JSON object."
                        )));
                    }
                },
            };
            let Value::Array(all) = doc else {
                return Err(reader_failed("Attempting to map over non-iterable node."));
            };
            items = all;
            items.truncate(wanted);
            if items.len() > limit {
                return Err(too_many());
            }
        }
        Some(InputType::Jsonl) => {
            for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
                if items.len() == wanted {
                    break;
                }
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let value: Value = serde_json::from_slice(line)
                    .map_err(|e| reader_failed(format!("Line {} of the JSONL object is not valid JSON: {e}", n + 1)))?;
                if items.len() == limit {
                    return Err(too_many());
                }
                items.push(value);
            }
        }
        Some(InputType::Parquet) => {
            // The parquet crate's row reader panics on some malformed files (an `expect` on a
            // row group): a bad object is a failed read, never a crash.
            let read = std::panic::catch_unwind(|| -> Result<Vec<Value>, Failure> {
                let mut rows = Vec::new();
                for row in parquet_rows(bytes)? {
                    if rows.len() == wanted {
                        break;
                    }
                    if rows.len() == limit {
                        return Err(too_many());
                    }
                    rows.push(row?);
                }
                Ok(rows)
            });
            items = read.unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(reader_failed(format!("The Parquet object cannot be read: {why}")))
            })?;
        }
        Some(InputType::Csv) => {
            let mut records = CsvRecords::new(bytes, spec.delimiter.byte());
            let headers: Vec<String> = match &spec.given_headers {
                Some(h) => h.iter().map(|h| (*h).to_owned()).collect(),
                None => match records.next() {
                    None => return Ok(items),
                    Some(row) => row?,
                },
            };
            let mut seen = std::collections::HashSet::new();
            if !headers.iter().all(|h| seen.insert(h.as_str())) {
                return Err(reader_failed("CSV headers cannot contain duplicates."));
            }
            for row in records {
                if items.len() == wanted {
                    break;
                }
                let row = row?;
                if items.len() == limit {
                    return Err(too_many());
                }
                // As AWS documents and records: fields past the headers are skipped, missing
                // ones are empty strings.
                let fields = row.into_iter().chain(std::iter::repeat(String::new()));
                let object: serde_json::Map<String, Value> =
                    headers.iter().cloned().zip(fields.map(Value::String)).collect();
                items.push(Value::Object(object));
            }
        }
    }
    Ok(items)
}

/// The records of a CSV object (each a list of its fields), read by the rules AWS states in
/// "How Step Functions parses input CSV files" (Step Functions developer guide, Distributed Map):
///
/// - "Newlines are a delimiter that separates records."
/// - "strings that are enclosed by double quotation marks can contain commas and newlines
///   without acting as record delimiters", and "You can preserve double quotes by repeating
///   them."
/// - "Backslashes (\) are another way to escape special characters. Backslashes only work with
///   other backslashes, double quotation marks, and the configured field separator such as comma
///   or pipe. A backslash followed by any other character is silently removed." and "You can
///   preserve backslashes by repeating them."
/// - "Backslashes that escape double quotation marks (\"), only work when included in pairs".
///
/// So `\\`, `\"` and a backslash before the delimiter give that character (in a quoted string
/// or not), and a backslash before anything else is dropped (the character after it is read as
/// usual: a newline after it still ends an unquoted record; at the object's end it is dropped
/// too). A row holding an odd number of `\"` is refused with its line and column rather than
/// read in a way AWS does not promise. Where AWS says nothing, wfc reads as the `csv` crate did
/// before: `\n`, `\r\n` or a lone `\r` ends a record, empty lines are skipped, a double quotation
/// mark opens a quoted string only at a field's start (elsewhere it is an ordinary character),
/// and text after a closing one is appended to the field.
struct CsvRecords<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The line `pos` is on (from 1), and the offset at which that line starts.
    line: usize,
    line_start: usize,
    delimiter: u8,
}

impl<'a> CsvRecords<'a> {
    fn new(bytes: &'a [u8], delimiter: u8) -> Self {
        CsvRecords { bytes, pos: 0, line: 1, line_start: 0, delimiter }
    }

    /// Steps over the newline at `pos` (`\r\n` is one) and returns its bytes.
    fn newline(&mut self) -> &'a [u8] {
        let start = self.pos;
        if self.bytes[self.pos] == b'\r' && self.bytes.get(self.pos + 1) == Some(&b'\n') {
            self.pos += 1;
        }
        self.pos += 1;
        self.line += 1;
        self.line_start = self.pos;
        &self.bytes[start..self.pos]
    }

    /// The 1-based column (in characters) of `pos` on its line.
    fn column(&self) -> usize {
        self.bytes[self.line_start..self.pos].iter().filter(|b| (**b & 0xC0) != 0x80).count() + 1
    }

    /// The record starting at `pos` (not at a newline), up to and over its ending newline.
    fn record(&mut self) -> Result<Vec<String>, Failure> {
        let first_line = self.line;
        let mut fields = Vec::new();
        let mut field = Vec::new();
        let mut quoted = false;
        let mut at_field_start = true;
        let mut escaped_quotes = 0usize;
        let mut last_escaped_quote = (0, 0);
        while let Some(&byte) = self.bytes.get(self.pos) {
            match byte {
                b'\\' => {
                    let next = self.bytes.get(self.pos + 1).copied();
                    match next {
                        Some(escaped) if escaped == b'\\' || escaped == b'"' || escaped == self.delimiter => {
                            if escaped == b'"' {
                                escaped_quotes += 1;
                                last_escaped_quote = (self.line, self.column());
                            }
                            field.push(escaped);
                            self.pos += 2;
                        }
                        // "A backslash followed by any other character is silently removed."
                        _ => self.pos += 1,
                    }
                    at_field_start = false;
                }
                b'"' if quoted => {
                    if self.bytes.get(self.pos + 1) == Some(&b'"') {
                        field.push(b'"');
                        self.pos += 2;
                    } else {
                        quoted = false;
                        self.pos += 1;
                    }
                }
                b'"' if at_field_start => {
                    quoted = true;
                    at_field_start = false;
                    self.pos += 1;
                }
                b'\n' | b'\r' if quoted => field.extend_from_slice(self.newline()),
                b'\n' | b'\r' => {
                    self.newline();
                    break;
                }
                _ if byte == self.delimiter && !quoted => {
                    fields.push(std::mem::take(&mut field));
                    at_field_start = true;
                    self.pos += 1;
                }
                _ => {
                    field.push(byte);
                    at_field_start = false;
                    self.pos += 1;
                }
            }
        }
        fields.push(field);
        if escaped_quotes % 2 == 1 {
            let (line, column) = last_escaped_quote;
            return Err(reader_failed(format!(
                "The CSV object cannot be read: line {line}, column {column}: a double quotation mark escaped by a \
                 backslash (\\\") has no pair in its row, and AWS reads such escapes only in pairs; write a double \
                 quotation mark in a field as two (\"\")."
            )));
        }
        fields
            .into_iter()
            .enumerate()
            .map(|(n, field)| {
                String::from_utf8(field).map_err(|_| {
                    reader_failed(format!(
                        "The CSV object cannot be read: line {first_line}, field {}: not valid UTF-8.",
                        n + 1
                    ))
                })
            })
            .collect()
    }
}

impl Iterator for CsvRecords<'_> {
    type Item = Result<Vec<String>, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        // Empty lines hold no record.
        loop {
            match self.bytes.get(self.pos)? {
                b'\n' | b'\r' => {
                    self.newline();
                }
                _ => return Some(self.record()),
            }
        }
    }
}

/// The rows of a Parquet file, each an object keyed by its columns (see [`parquet_value`]).
#[cfg(feature = "parquet")]
fn parquet_rows(bytes: &[u8]) -> Result<impl Iterator<Item = Result<Value, Failure>>, Failure> {
    use parquet::file::reader::SerializedFileReader;
    let unreadable =
        |e: parquet::errors::ParquetError| reader_failed(format!("The Parquet object cannot be read: {e}"));
    let reader = SerializedFileReader::new(bytes::Bytes::copy_from_slice(bytes)).map_err(unreadable)?;
    let rows = parquet::record::reader::RowIter::from_file_into(Box::new(reader));
    Ok(rows.map(move |row| {
        let row = row.map_err(unreadable)?;
        Ok(parquet_row(&row))
    }))
}

/// Without the `parquet` feature, a PARQUET read fails saying so.
#[cfg(not(feature = "parquet"))]
fn parquet_rows(_bytes: &[u8]) -> Result<std::iter::Empty<Result<Value, Failure>>, Failure> {
    Err(reader_failed(
        "InputType PARQUET: this wfc was built without the `parquet` feature of wfc-runtime (turn it on to read \
         Parquet files)",
    ))
}

#[cfg(feature = "parquet")]
fn parquet_row(row: &parquet::record::Row) -> Value {
    Value::Object(row.get_column_iter().map(|(name, field)| (name.clone(), parquet_value(field))).collect())
}

/// A Parquet value as an item's JSON: numbers, strings and booleans as themselves, a group (a
/// struct) as an object, a list as an array, a map as an object (keys as strings), timestamps
/// as integer milliseconds since the Unix epoch (microseconds truncated to them), dates as `YYYY-MM-DD`, decimals as strings, binary as base64 (the `parquet` crate's
/// JSON for the rest).
#[cfg(feature = "parquet")]
fn parquet_value(field: &parquet::record::Field) -> Value {
    use parquet::record::Field;
    match field {
        Field::Group(row) => parquet_row(row),
        Field::ListInternal(list) => Value::Array(list.elements().iter().map(parquet_value).collect()),
        Field::MapInternal(map) => Value::Object(
            map.entries()
                .iter()
                .map(|(k, v)| {
                    let key = match parquet_value(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, parquet_value(v))
                })
                .collect(),
        ),
        Field::TimestampMillis(ms) => json!(ms),
        Field::TimestampMicros(us) => json!(us.div_euclid(1_000)),
        other => other.to_json_value(),
    }
}

/// Reads a Map Run's items through `store`, as `spec` says, from the reader's evaluated
/// `Parameters`/`Arguments` `params`: one object (`s3:getObject`), the files a manifest in it
/// lists (`ManifestType`), or a listing (`s3:listObjectsV2`: the objects' descriptions, or
/// with `LOAD_AND_FLATTEN` their items in listing order). At most `max_items` (0: all); more
/// than `limit` is `States.ItemReaderFailed`, as is every read or parse failure.
pub async fn read_items(
    store: &dyn ObjectStore,
    params: &Value,
    spec: &ReadSpec<'_>,
    max_items: usize,
    limit: usize,
) -> Result<Vec<Value>, Failure> {
    let bucket = string_param(params, "Bucket", "ItemReader", reader_failed_owned)?;
    check_reader_parameters(params)?;
    let mut items: Vec<Value> = Vec::new();
    let wanted = if max_items == 0 { usize::MAX } else { max_items };
    // The files to read and flatten, each with its own bucket.
    let files: Vec<(String, String)> = if spec.lists_objects {
        let prefix = match params.get("Prefix") {
            None | Some(Value::Null) => "",
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(reader_failed(format!(
                    "The ItemReader parameter `Prefix` must be a string, found {other}"
                )));
            }
        };
        let mut listed = store.list_objects(bucket, prefix).await.map_err(reader_failed)?;
        // S3's `StartAfter`: the keys after it (in key order); `Delimiter`: a key with the
        // delimiter after the prefix is rolled up into a common prefix, which is no object (the
        // reader's items are the listing's objects). `MaxKeys` is the size of S3's pages, which
        // the reader reads all of; `RequestPayer` is billing: neither changes the items.
        if let Some(after) = params.get("StartAfter").and_then(Value::as_str) {
            listed.retain(|o| o.key.as_str() > after);
        }
        if let Some(delimiter) = params.get("Delimiter").and_then(Value::as_str).filter(|d| !d.is_empty()) {
            listed.retain(|o| !o.key[prefix.len().min(o.key.len())..].contains(delimiter));
        }
        if spec.transformation == ReaderTransformation::None {
            let items: Vec<Value> = listed.iter().take(wanted).map(ObjectSummary::item).collect();
            if items.len() > limit {
                return Err(reader_failed(format!(
                    "The ItemReader read more than the Map item limit of {limit} items."
                )));
            }
            return Ok(items);
        }
        listed.into_iter().map(|o| (bucket.to_owned(), o.key)).collect()
    } else {
        let key = string_param(params, "Key", "ItemReader", reader_failed_owned)?;
        let bytes = store.get_object(bucket, key).await.map_err(reader_failed)?;
        match spec.manifest_type {
            None if spec.input_type == Some(InputType::Manifest) => {
                return inventory_items(store, bucket, &bytes, wanted, limit).await;
            }
            None => return parse_object(&bytes, spec, max_items, limit),
            Some(ManifestType::S3Inventory) => return inventory_items(store, bucket, &bytes, wanted, limit).await,
            Some(ManifestType::AthenaData) => athena_files(&bytes)?,
        }
    };
    for (file_bucket, key) in files {
        if items.len() == wanted {
            break;
        }
        let bytes = store.get_object(&file_bucket, &key).await.map_err(reader_failed)?;
        let left = wanted - items.len();
        let read = parse_object(&bytes, spec, if left == usize::MAX { 0 } else { left }, limit - items.len())
            .map_err(|f| Failure::new(f.error, format!("s3://{file_bucket}/{key}: {}", f.cause)))?;
        items.extend(read);
    }
    Ok(items)
}

/// The ItemReader's S3 request members beyond `Bucket`, `Key` and `Prefix`, as evaluated: each
/// of the right type (a literal one was checked when the definition was loaded), and none
/// that the object store cannot honour (`wfc_ir::distributed::UNHONOURED_PARAMETERS`).
fn check_reader_parameters(params: &Value) -> Result<(), Failure> {
    let Some(members) = params.as_object() else { return Ok(()) };
    for (name, value) in members {
        if ["Bucket", "Key", "Prefix"].contains(&name.as_str()) {
            continue;
        }
        wfc_ir::distributed::check_s3_parameter(name, value)
            .map_err(|message| reader_failed(format!("The ItemReader parameter {message}")))?;
        if let Some((_, why)) = wfc_ir::distributed::UNHONOURED_PARAMETERS.iter().find(|(n, _)| n == name) {
            return Err(reader_failed(format!("The ItemReader parameter `{name}` cannot be honoured: {why}.")));
        }
    }
    Ok(())
}

/// The data files an Athena `UNLOAD` manifest lists: one `s3://bucket/key` per line.
fn athena_files(manifest: &[u8]) -> Result<Vec<(String, String)>, Failure> {
    let text = std::str::from_utf8(manifest)
        .map_err(|e| reader_failed(format!("The Athena manifest is not UTF-8 text: {e}")))?;
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            s3_uri(line).ok_or_else(|| {
                reader_failed(format!("The Athena manifest line {line:?} is not an s3://bucket/key URI."))
            })
        })
        .collect()
}

/// `(bucket, key)` of `s3://bucket/key`.
fn s3_uri(uri: &str) -> Option<(String, String)> {
    let (bucket, key) = uri.strip_prefix("s3://")?.split_once('/')?;
    (!bucket.is_empty() && !key.is_empty()).then(|| (bucket.to_owned(), key.to_owned()))
}

/// The items of an S3 Inventory report: its `manifest.json` (`bytes`, read from `bucket`)
/// names CSV inventory `files` (read from its `destinationBucket`, gzip-compressed or not)
/// whose rows have the columns of its `fileSchema`; each row is an object of strings.
async fn inventory_items(
    store: &dyn ObjectStore,
    bucket: &str,
    bytes: &[u8],
    wanted: usize,
    limit: usize,
) -> Result<Vec<Value>, Failure> {
    let manifest: Value = serde_json::from_slice(bytes)
        .map_err(|e| reader_failed(format!("The S3 Inventory manifest is not valid JSON: {e}")))?;
    let format = manifest.get("fileFormat").and_then(Value::as_str).unwrap_or("CSV");
    if !format.eq_ignore_ascii_case("CSV") {
        return Err(reader_failed(format!(
            "The S3 Inventory manifest's fileFormat is {format:?}; wfc reads CSV inventory files."
        )));
    }
    let schema: Vec<&str> = manifest
        .get("fileSchema")
        .and_then(Value::as_str)
        .ok_or_else(|| reader_failed("The S3 Inventory manifest has no fileSchema."))?
        .split(',')
        .map(str::trim)
        .collect();
    // `destinationBucket` is an ARN (`arn:aws:s3:::name`); the manifest's own bucket otherwise.
    let destination = manifest
        .get("destinationBucket")
        .and_then(Value::as_str)
        .map(|b| b.rsplit(':').next().unwrap_or(b))
        .unwrap_or(bucket)
        .to_owned();
    let files = manifest
        .get("files")
        .and_then(Value::as_array)
        .ok_or_else(|| reader_failed("The S3 Inventory manifest has no files array."))?;
    let spec = ReadSpec { input_type: Some(InputType::Csv), given_headers: Some(schema), ..ReadSpec::default() };
    let mut items = Vec::new();
    for file in files {
        if items.len() == wanted {
            break;
        }
        let key = file
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| reader_failed(format!("An S3 Inventory manifest file entry has no key: {file}")))?;
        let raw = store.get_object(&destination, key).await.map_err(reader_failed)?;
        let csv = gunzip(&raw).map_err(|e| reader_failed(format!("s3://{destination}/{key}: {e}")))?;
        let left = wanted - items.len();
        let read = parse_object(&csv, &spec, if left == usize::MAX { 0 } else { left }, limit - items.len())
            .map_err(|f| Failure::new(f.error, format!("s3://{destination}/{key}: {}", f.cause)))?;
        items.extend(read);
    }
    Ok(items)
}

/// `bytes` decompressed when they are gzip (S3 Inventory writes `.csv.gz` files), else as
/// they are.
fn gunzip(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out)
        .map_err(|e| format!("the gzip-compressed inventory file cannot be read: {e}"))?;
    Ok(std::borrow::Cow::Owned(out))
}

/// How a path-valued field's value is shown in AWS's messages: a string as itself, anything
/// else as compact JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn select(path: &Path, effective: &Value, context: &Value) -> Result<Value, Failure> {
    let doc = match path.root() {
        Root::Input => effective,
        // Variables travel inside the context object (see `crate::variables`).
        Root::Context | Root::Variable(_) => context,
    };
    path.select(doc).map_err(|_| Failure::runtime(io::invalid_path_message(path, doc)))
}

/// An integer selected by `path` for the field `field` (`MaxConcurrencyPath`...): a JSON
/// integer, or a string holding one; else `States.Runtime` in AWS's words.
pub fn path_integer(path: &Path, field: &str, effective: &Value, context: &Value) -> Result<i64, Failure> {
    let value = select(path, effective, context)?;
    let n = match &value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    n.ok_or_else(|| {
        Failure::runtime(format!(
            "The {field} field refers to value \"{}\" which is not a valid integer: {}",
            shown(&value),
            path.as_str()
        ))
    })
}

/// A number selected by `path` for the field `field` (a JSON number or a string holding one).
fn path_float(path: &Path, field: &str, effective: &Value, context: &Value) -> Result<f64, Failure> {
    let value = select(path, effective, context)?;
    let n = match &value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    };
    n.ok_or_else(|| {
        Failure::runtime(format!(
            "The {field} field refers to value \"{}\" which is not a valid float: {}",
            shown(&value),
            path.as_str()
        ))
    })
}

/// The Map's concurrency limit: `MaxConcurrency`, or what `MaxConcurrencyPath` selects (a
/// non-negative integer; else `States.Runtime`).
pub fn max_concurrency(spec: &MapState, effective: &Value, context: &Value) -> Result<u64, Failure> {
    if let Some(e) = &spec.max_concurrency_jsonata {
        return max_concurrency_jsonata(e, effective, context);
    }
    match &spec.max_concurrency_path {
        Some(path) => max_concurrency_at(path, effective, context),
        None => Ok(spec.max_concurrency),
    }
}

/// A JSONata `MaxConcurrency` expression's value: a non-negative integer (a wrong type is
/// `States.QueryEvaluationError`, a negative number `States.Runtime`).
pub fn max_concurrency_jsonata(expr: &wfc_ir::JsonataExpr, effective: &Value, context: &Value) -> Result<u64, Failure> {
    let n = jsonata_integer(expr, "MaxConcurrency", effective, context)?;
    u64::try_from(n).map_err(|_| Failure::runtime("MaxConcurrency cannot be negative."))
}

/// What `MaxConcurrencyPath` selects: a non-negative integer, else `States.Runtime`.
pub fn max_concurrency_at(path: &Path, effective: &Value, context: &Value) -> Result<u64, Failure> {
    let n = path_integer(path, "MaxConcurrencyPath", effective, context)?;
    u64::try_from(n).map_err(|_| Failure::runtime("MaxConcurrency cannot be negative."))
}

/// A numeric field of a DISTRIBUTED Map that has a `*Path` and a JSONata form: its name in
/// AWS's messages, and the failure a negative value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountField {
    /// `ToleratedFailureCount`: a negative value is `States.Runtime`.
    ToleratedFailureCount,
    /// `ReaderConfig.MaxItems`: a negative value is `States.ItemReaderFailed`.
    MaxItems,
    /// `ItemBatcher.MaxItemsPerBatch`: a negative value is `States.Runtime`.
    MaxItemsPerBatch,
    /// `ItemBatcher.MaxInputBytesPerBatch`: a negative value is `States.Runtime`.
    MaxInputBytesPerBatch,
}

impl CountField {
    /// The field's name as written (without `Path`).
    pub fn name(self) -> &'static str {
        match self {
            CountField::ToleratedFailureCount => "ToleratedFailureCount",
            CountField::MaxItems => "MaxItems",
            CountField::MaxItemsPerBatch => "MaxItemsPerBatch",
            CountField::MaxInputBytesPerBatch => "MaxInputBytesPerBatch",
        }
    }

    /// The failure of a negative value, in AWS's words.
    fn negative(self) -> Failure {
        match self {
            CountField::ToleratedFailureCount => Failure::runtime("ToleratedFailureCount cannot be negative."),
            CountField::MaxItems => reader_failed("field MaxItems must be positive"),
            CountField::MaxItemsPerBatch | CountField::MaxInputBytesPerBatch => {
                Failure::runtime(format!("field {} must be positive", self.name()))
            }
        }
    }
}

/// A [`Count`] field's value (the interpreter's reading of the IR).
fn count(count: &Count, field: CountField, effective: &Value, context: &Value) -> Result<u64, Failure> {
    match count {
        Count::Fixed(n) => Ok(*n),
        Count::Path(p) => count_at(p, field, effective, context),
        Count::Jsonata(e) => count_jsonata(e, field, effective, context),
    }
}

/// What a count field's `*Path` form (`ToleratedFailureCountPath`...) selects: a non-negative
/// integer (or a string holding one), else the failure AWS words.
pub fn count_at(path: &Path, field: CountField, effective: &Value, context: &Value) -> Result<u64, Failure> {
    let n = path_integer(path, &format!("{}Path", field.name()), effective, context)?;
    u64::try_from(n).map_err(|_| field.negative())
}

/// A count field's JSONata expression on the state input: a non-negative integer (a wrong type
/// is `States.QueryEvaluationError`).
pub fn count_jsonata(
    expr: &wfc_ir::JsonataExpr,
    field: CountField,
    effective: &Value,
    context: &Value,
) -> Result<u64, Failure> {
    let n = jsonata_integer(expr, field.name(), effective, context)?;
    u64::try_from(n).map_err(|_| field.negative())
}

/// What `ToleratedFailurePercentagePath` selects: a number from 0 to 100 (or a string holding
/// one), else `States.Runtime`.
pub fn percentage_at(path: &Path, effective: &Value, context: &Value) -> Result<f64, Failure> {
    let p = path_float(path, "ToleratedFailurePercentagePath", effective, context)?;
    percentage_in_range(p)
}

/// A JSONata `ToleratedFailurePercentage` on the state input: a number from 0 to 100 (a wrong
/// type is `States.QueryEvaluationError`, one out of range `States.Runtime`).
pub fn percentage_jsonata(expr: &wfc_ir::JsonataExpr, effective: &Value, context: &Value) -> Result<f64, Failure> {
    let value = jsonata_number(expr, "ToleratedFailurePercentage", effective, context)?;
    let Some(p) = value.as_f64() else {
        return Err(crate::jsonata::unexpected_type(expr.as_str(), "ToleratedFailurePercentage", "number", &value));
    };
    percentage_in_range(p)
}

fn percentage_in_range(p: f64) -> Result<f64, Failure> {
    if (0.0..=100.0).contains(&p) {
        Ok(p)
    } else {
        Err(Failure::runtime("ToleratedFailurePercentage must be between 0 and 100."))
    }
}

/// Evaluates a numeric field's `{% %}` expression (a JSONata state's `MaxConcurrency`,
/// `ToleratedFailure*`...) with `$states.input` the state input (JSONata states have no
/// InputPath, so it is also the effective input). A failing expression, or a value of the wrong
/// type, is `States.QueryEvaluationError` (catchable), as for every JSONata field; range checks
/// are the caller's. Evaluated with a fixed seed, as Task timeouts are: `$random` here would make
/// a limit that changes on replay.
fn jsonata_number(
    expr: &wfc_ir::JsonataExpr,
    field: &str,
    effective: &Value,
    context: &Value,
) -> Result<Value, Failure> {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
    crate::jsonata::evaluate(expr, field, &crate::jsonata::Bindings::new(effective, context), &mut rng)
}

/// A JSONata numeric field that must yield an integer (negative values are the caller's to
/// reject with AWS's range message).
fn jsonata_integer(
    expr: &wfc_ir::JsonataExpr,
    field: &str,
    effective: &Value,
    context: &Value,
) -> Result<i64, Failure> {
    let value = jsonata_number(expr, field, effective, context)?;
    value.as_i64().ok_or_else(|| crate::jsonata::unexpected_type(expr.as_str(), field, "integer", &value))
}

/// How many failed items a Map Run tolerates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// `ToleratedFailureCount`: more failed items than this fail the run.
    pub count: Option<u64>,
    /// `ToleratedFailurePercentage`: a larger share of failed items fails the run.
    pub percentage: Option<f64>,
}

impl Tolerance {
    /// The thresholds of a DISTRIBUTED Map, `ToleratedFailureCount` then
    /// `ToleratedFailurePercentage`, resolving their `*Path` and JSONata forms (`States.Runtime`
    /// on bad values, with AWS's messages).
    pub fn resolve(code: &dyn DistributedCode, effective: &Value, context: &Value) -> Result<Tolerance, Failure> {
        let count = code.tolerated_failure_count(effective, context)?;
        let percentage = code.tolerated_failure_percentage(effective, context)?;
        Ok(Tolerance { count, percentage })
    }

    /// Whether `failed` failed items out of `total` exceed the tolerance. With neither
    /// threshold set, no failure is tolerated; with both, exceeding either fails the run.
    pub fn exceeded(&self, failed: u64, total: u64) -> bool {
        if self.count.is_none() && self.percentage.is_none() {
            return failed > 0;
        }
        let over_count = self.count.is_some_and(|c| failed > c);
        // failed / total > p / 100, without dividing by a zero total.
        let over_share = self.percentage.is_some_and(|p| (failed as f64) * 100.0 > p * (total as f64));
        over_count || over_share
    }
}

/// The failure of a Map Run whose tolerance was exceeded, as AWS records it.
pub fn threshold_exceeded() -> Failure {
    Failure::new(EXCEED_TOLERATED_FAILURE_THRESHOLD, "The specified tolerated failure threshold was exceeded")
}

/// Groups item inputs into child inputs `{"Items": [...], "BatchInput": ...}`: a batch closes
/// before it would hold more than `max_items` items or serialize to more than `max_bytes` bytes.
/// An item that alone exceeds `max_bytes` is `States.Runtime`.
pub fn batches(
    inputs: Vec<Value>,
    max_items: Option<u64>,
    max_bytes: Option<u64>,
    batch_input: Option<&Value>,
) -> Result<Vec<(usize, Value)>, Failure> {
    let max_items = max_items.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let max_bytes = max_bytes.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let wrap = |items: Vec<Value>| -> Value {
        let mut batch = serde_json::Map::new();
        batch.insert("Items".to_owned(), Value::Array(items));
        if let Some(b) = batch_input {
            batch.insert("BatchInput".to_owned(), b.clone());
        }
        Value::Object(batch)
    };
    // `{"Items":[]}` plus `,"BatchInput":<json>`; each item adds its length and a comma.
    let empty_size = wrap(Vec::new()).to_string().len();
    let mut out = Vec::new();
    let mut current: Vec<Value> = Vec::new();
    let mut size = empty_size;
    for (index, item) in inputs.into_iter().enumerate() {
        let item_size = item.to_string().len();
        if empty_size + item_size > max_bytes {
            return Err(Failure::runtime(format!(
                "The item at index {index} is {item_size} bytes, too large for a batch of at most {max_bytes} bytes (MaxInputBytesPerBatch)."
            )));
        }
        let added = item_size + usize::from(!current.is_empty());
        if !current.is_empty() && (current.len() == max_items || size + added > max_bytes) {
            let n = current.len();
            out.push((n, wrap(std::mem::take(&mut current))));
            size = empty_size;
        }
        size += item_size + usize::from(!current.is_empty());
        current.push(item);
    }
    if !current.is_empty() {
        let n = current.len();
        out.push((n, wrap(current)));
    }
    Ok(out)
}

/// One child execution's end, for the Map's output and the ResultWriter's files.
#[derive(Debug, Clone)]
struct ChildRecord {
    /// How many items the child processed (1 without batching).
    items: usize,
    /// The AWS execution-result document (`ExecutionArn`, `Input`, `Output`, `Status`...).
    document: Value,
    /// The child's output when it succeeded.
    output: Option<Value>,
}

/// The AWS shape of a child execution's result, as `DescribeExecution` (and the ResultWriter's
/// files) give it: input and output as JSON strings.
fn child_document(child: &Execution, input: &Value, result: &crate::ExecutionResult, stop: String) -> Value {
    let status = match result.status {
        Status::Succeeded => "SUCCEEDED",
        Status::Failed => "FAILED",
        Status::TimedOut => "TIMED_OUT",
    };
    let mut doc = serde_json::Map::new();
    doc.insert("ExecutionArn".into(), json!(child.id()));
    doc.insert("Input".into(), json!(input.to_string()));
    doc.insert("InputDetails".into(), json!({ "Included": true }));
    doc.insert("Name".into(), json!(child.name()));
    match (&result.output, &result.error) {
        (Some(output), _) => {
            doc.insert("Output".into(), json!(output.to_string()));
            doc.insert("OutputDetails".into(), json!({ "Included": true }));
        }
        (None, Some(f)) => {
            doc.insert("Error".into(), json!(f.error));
            doc.insert("Cause".into(), json!(f.cause));
        }
        (None, None) => {}
    }
    doc.insert("StartDate".into(), json!(child.start_time()));
    doc.insert("StateMachineArn".into(), json!(child.state_machine_id()));
    doc.insert("Status".into(), json!(status));
    doc.insert("StopDate".into(), json!(stop));
    Value::Object(doc)
}

/// A UUID (version 4 layout) from the execution's seeded random source, so Map Run ids are
/// reproducible under a fixed seed.
fn uuid(rng: &mut dyn Rng) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// Records `MapRunAborted` when a Map Run that started is dropped unfinished (an enclosing
/// state or the execution was cancelled), and takes the run out of [`RUNNING`].
struct RunGuard<'a> {
    exec: &'a Execution,
    arn: &'a str,
    armed: bool,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        running().remove(self.arn);
        if self.armed {
            self.exec.record(EventType::MapRunAborted, json!({ "mapRunArn": self.arn }));
        }
    }
}

// ----- UpdateMapRun: the limits of a running Map Run -----

/// The limits of a running Map Run that `UpdateMapRun` changes while it runs: how many children
/// run at once, and the tolerance the run checks each finished child against.
#[derive(Debug)]
pub struct MapRunControl {
    /// `MaxConcurrency` (0: no limit).
    max_concurrency: std::sync::atomic::AtomicU64,
    tolerance: std::sync::Mutex<Tolerance>,
    /// Children running now, and their items.
    in_flight: std::sync::Mutex<(usize, u64)>,
    /// The children holding a place now, by index: their execution documents (status
    /// RUNNING), for `ListExecutions` of the run from any server (see [`store_sync`]).
    running_children: std::sync::Mutex<std::collections::BTreeMap<usize, Value>>,
    /// The children and items of the run, and how those that finished ended (while it runs,
    /// for `DescribeMapRun`).
    progress: std::sync::Mutex<(Counts, Counts)>,
    /// The children a redrive runs again after they ended unsuccessfully, by index (their
    /// items), until each gets a place: AWS's `pendingRedrive` and ListExecutions status
    /// `PENDING_REDRIVE`.
    pending_redrive: std::sync::Mutex<std::collections::BTreeMap<usize, u64>>,
    /// Wakes children waiting for a place when one frees or the limit grows.
    freed: tokio::sync::Notify,
    /// Whether the run's level ended (its end journaled, see `store_sync::RedrivePlan::record_end`):
    /// its limits are then those it ended with, and change no more.
    ended: std::sync::atomic::AtomicBool,
}

/// A running Map Run's limits, as [`MapRunControl`] holds them now.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRunLimits {
    /// `MaxConcurrency` (0: no limit).
    pub max_concurrency: u64,
    /// `ToleratedFailurePercentage`, if set.
    pub tolerated_failure_percentage: Option<f64>,
    /// `ToleratedFailureCount`, if set.
    pub tolerated_failure_count: Option<u64>,
}

/// The Map Runs running in this process, by Map Run ARN (a Map Run's ARN holds a random id).
fn running() -> std::sync::MutexGuard<'static, std::collections::HashMap<String, Arc<MapRunControl>>> {
    static RUNNING: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, Arc<MapRunControl>>>> =
        std::sync::LazyLock::new(Default::default);
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Changes a Map Run running in this process (`UpdateMapRun`): `None` leaves a limit as it is.
/// The new concurrency applies to children not yet started (running ones are not stopped);
/// the new tolerance to the next child that finishes. Returns the limits now, or `None` when no
/// such run is running here.
pub fn update_map_run(
    arn: &str,
    max_concurrency: Option<u64>,
    tolerated_failure_percentage: Option<f64>,
    tolerated_failure_count: Option<u64>,
) -> Option<MapRunLimits> {
    let control = running().get(arn).cloned()?;
    if control.ended.load(std::sync::atomic::Ordering::SeqCst) {
        // Ended: its limits are those it ended with.
        return Some(control.limits());
    }
    if let Some(n) = max_concurrency {
        control.max_concurrency.store(n, std::sync::atomic::Ordering::SeqCst);
        control.freed.notify_waiters();
    }
    {
        let mut tolerance = control.tolerance.lock().unwrap_or_else(|p| p.into_inner());
        if tolerated_failure_percentage.is_some() {
            tolerance.percentage = tolerated_failure_percentage;
        }
        if tolerated_failure_count.is_some() {
            tolerance.count = tolerated_failure_count;
        }
    }
    Some(control.limits())
}

/// The limits of a Map Run running in this process, or `None`.
pub fn map_run_limits(arn: &str) -> Option<MapRunLimits> {
    running().get(arn).map(|c| c.limits())
}

/// The item and child execution counts (`DescribeMapRun`'s `itemCounts`, `executionCounts`)
/// of a Map Run running in this process, or `None`: `running` are the children holding a
/// place now, `pending` those neither running nor finished.
pub fn map_run_counts(arn: &str) -> Option<(Value, Value)> {
    running().get(arn).cloned().map(|control| control.counts_now())
}

/// The indexes of the children of a Map Run running in this process that a redrive runs again
/// and that wait for a place (status `PENDING_REDRIVE`), in item order, or `None`.
pub fn map_run_pending_redrive(arn: &str) -> Option<Vec<usize>> {
    let control = running().get(arn).cloned()?;
    Some(control.pending_redrive.lock().unwrap_or_else(|p| p.into_inner()).keys().copied().collect())
}

/// The execution documents (status RUNNING) of the children of a Map Run running in this
/// process that hold a place now, in item order, or `None`.
pub fn map_run_running_children(arn: &str) -> Option<Vec<Value>> {
    let control = running().get(arn).cloned()?;
    let children = control.running_children.lock().unwrap_or_else(|p| p.into_inner());
    Some(children.values().cloned().collect())
}

impl MapRunControl {
    fn new(max_concurrency: u64, tolerance: Tolerance) -> MapRunControl {
        MapRunControl {
            max_concurrency: max_concurrency.into(),
            tolerance: std::sync::Mutex::new(tolerance),
            in_flight: std::sync::Mutex::new((0, 0)),
            running_children: std::sync::Mutex::new(Default::default()),
            progress: std::sync::Mutex::new(Default::default()),
            pending_redrive: std::sync::Mutex::new(Default::default()),
            freed: tokio::sync::Notify::new(),
            ended: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn limits(&self) -> MapRunLimits {
        let tolerance = self.tolerance.lock().unwrap_or_else(|p| p.into_inner());
        MapRunLimits {
            max_concurrency: self.max_concurrency.load(std::sync::atomic::Ordering::SeqCst),
            tolerated_failure_percentage: tolerance.percentage,
            tolerated_failure_count: tolerance.count,
        }
    }

    fn exceeded(&self, failed: u64, total: u64) -> bool {
        self.tolerance.lock().unwrap_or_else(|p| p.into_inner()).exceeded(failed, total)
    }

    /// Waits for a place under the current concurrency limit for child `index` of `items` items
    /// (`running`: its execution document while it runs); the place is freed when the returned
    /// guard drops.
    async fn place(&self, items: u64, index: usize, running: Value) -> Place<'_> {
        loop {
            let freed = self.freed.notified();
            futures::pin_mut!(freed);
            freed.as_mut().enable();
            {
                let mut n = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                let limit = match usize::try_from(self.max_concurrency.load(std::sync::atomic::Ordering::SeqCst)) {
                    Ok(0) | Err(_) => MAX_CHILD_CONCURRENCY,
                    Ok(l) => l.min(MAX_CHILD_CONCURRENCY),
                };
                if n.0 < limit {
                    n.0 += 1;
                    n.1 += items;
                    self.running_children.lock().unwrap_or_else(|p| p.into_inner()).insert(index, running);
                    self.pending_redrive.lock().unwrap_or_else(|p| p.into_inner()).remove(&index);
                    return Place(self, items, index);
                }
            }
            freed.await;
        }
    }
}

/// A child's place under its Map Run's concurrency limit (its items, its index).
struct Place<'a>(&'a MapRunControl, u64, usize);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.running_children.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.2);
        {
            let mut n = self.0.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            n.0 = n.0.saturating_sub(1);
            n.1 = n.1.saturating_sub(self.1);
        }
        // One place freed: one waiter (waking them all would cost each finished child a pass
        // over every waiting one).
        self.0.freed.notify_one();
    }
}

/// How many items and child executions of a Map Run ended how (`DescribeMapRun`'s
/// `itemCounts` and `executionCounts`), recorded on its `MapRunSucceeded`/`MapRunFailed`.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    running: u64,
    succeeded: u64,
    failed: u64,
    timed_out: u64,
    aborted: u64,
    pending: u64,
    total: u64,
    results_written: u64,
}

/// Counts a child (`None`: it never finished) of `size` items where it ended.
fn count_child(counts: &mut (Counts, Counts), record: Option<&ChildRecord>, size: u64) {
    let (items, executions) = (&mut counts.0, &mut counts.1);
    let status = record.map(|r| r.document.get("Status").and_then(Value::as_str).unwrap_or("FAILED"));
    let (item_slot, execution_slot) = match (record, status) {
        (None, _) => (&mut items.aborted, &mut executions.aborted),
        (Some(ChildRecord { output: Some(_), .. }), _) => (&mut items.succeeded, &mut executions.succeeded),
        (Some(_), Some("TIMED_OUT")) => (&mut items.timed_out, &mut executions.timed_out),
        (Some(_), Some("ABORTED")) => (&mut items.aborted, &mut executions.aborted),
        (Some(_), _) => (&mut items.failed, &mut executions.failed),
    };
    *item_slot += size;
    *execution_slot += 1;
}

impl Counts {
    fn json(&self) -> Value {
        json!({
            "pending": self.pending, "running": self.running, "succeeded": self.succeeded, "failed": self.failed,
            "timedOut": self.timed_out, "aborted": self.aborted, "total": self.total,
            "resultsWritten": self.results_written,
        })
    }
}

/// An S3 `Bucket`/`Key`-style string parameter of an evaluated `Parameters` object.
fn string_param<'v>(params: &'v Value, key: &str, what: &str, fail: fn(String) -> Failure) -> Result<&'v str, Failure> {
    match params.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(fail(format!("The {what} parameter `{key}` must be a string, found {other}"))),
        None => Err(fail(format!("The {what} parameters have no `{key}`"))),
    }
}

/// A DISTRIBUTED Map's own fields, as its Map Run ([`map_run`]) reads them: the interpreter's
/// implementation (on [`MapState`]) reads the IR; generated code writes each field as a
/// constant, construction code (templates) or a `static` path or JSONata expression (see
/// [`crate::abi`]). The methods without a default are the items, which every Map has.
///
/// Each `has_*` method says whether the field is present; its value methods are called only
/// when it is (their defaults fail with `States.Runtime` naming the missing field).
pub trait DistributedCode: Sync {
    /// `Label`: names the Map Run and its children (the state name when absent).
    fn label(&self) -> Option<&str> {
        None
    }
    /// How many items `ItemsPath` selects from the effective input (0 when it selects no
    /// array): the `length` of `MapStateStarted` when there is no `ItemReader`.
    fn items_path_length(&self, effective: &Value, ctx: &Value) -> usize;
    /// The items without an `ItemReader`: `ItemsPath` on the effective input, or a JSONata
    /// Map's `Items` (else its input, which must be an array) with `$states.input` the raw input.
    fn items(&self, exec: &Execution, raw_input: &Value, effective: &Value, ctx: &Value)
    -> Result<Vec<Value>, Failure>;
    /// `ItemSelector` on each item (JSONPath with `$$.Map.Item.*`, or JSONata with
    /// `$states.context.Map.Item`); without one, the items themselves.
    fn select_inputs(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
        items: Vec<Value>,
    ) -> Result<Vec<Value>, Failure> {
        let _ = (exec, raw_input, effective, ctx);
        Ok(items)
    }
    /// `ToleratedFailureCount` (or its `Path` or JSONata form), if set.
    fn tolerated_failure_count(&self, effective: &Value, ctx: &Value) -> Result<Option<u64>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// `ToleratedFailurePercentage` (or its `Path` or JSONata form), if set.
    fn tolerated_failure_percentage(&self, effective: &Value, ctx: &Value) -> Result<Option<f64>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// Whether there is an `ItemReader`.
    fn has_item_reader(&self) -> bool {
        false
    }
    /// The `ItemReader`'s `Parameters` (`Bucket`, `Key`) on the effective input.
    fn reader_parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, effective, ctx);
        Err(absent("ItemReader"))
    }
    /// `ReaderConfig.MaxItems` (or its `Path` or JSONata form); 0 reads every item.
    fn max_items(&self, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
        let _ = (effective, ctx);
        Ok(0)
    }
    /// What the `ItemReader` reads and how ([`read_items`] reads it).
    fn reader_spec(&self) -> Result<ReadSpec<'_>, Failure> {
        Err(absent("ItemReader"))
    }
    /// Whether there is an `ItemBatcher`.
    fn has_item_batcher(&self) -> bool {
        false
    }
    /// `MaxItemsPerBatch` (or its `Path` or JSONata form), if set.
    fn max_items_per_batch(&self, effective: &Value, ctx: &Value) -> Result<Option<u64>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// `MaxInputBytesPerBatch` (or its `Path` or JSONata form), if set.
    fn max_input_bytes_per_batch(&self, effective: &Value, ctx: &Value) -> Result<Option<u64>, Failure> {
        let _ = (effective, ctx);
        Ok(None)
    }
    /// `BatchInput` on the effective input, if set.
    fn batch_input(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Option<Value>, Failure> {
        let _ = (exec, effective, ctx);
        Ok(None)
    }
    /// Whether there is a `ResultWriter`.
    fn has_result_writer(&self) -> bool {
        false
    }
    /// The `ResultWriter`'s `Parameters` (`Bucket`, `Prefix`) on the effective input.
    fn writer_parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        let _ = (exec, effective, ctx);
        Err(absent("ResultWriter"))
    }
    /// Whether the `ResultWriter` exports the results (it has a `Resource`); without, its
    /// `WriterConfig` only shapes the Map's output.
    fn writer_exports(&self) -> bool {
        true
    }
    /// The `ResultWriter`'s `WriterConfig`, if given.
    fn writer_config(&self) -> Option<WriterConfig> {
        None
    }
}

/// The failure of a [`DistributedCode`] value method called for a field it does not have.
fn absent(field: &str) -> Failure {
    Failure::runtime(format!("the DISTRIBUTED Map has no {field} (its code was asked for one)"))
}

/// The interpreter's [`DistributedCode`]: the Map state's IR, read at each call.
impl DistributedCode for MapState {
    fn label(&self) -> Option<&str> {
        self.distributed.as_deref().and_then(|d| d.label.as_deref())
    }

    fn items_path_length(&self, effective: &Value, ctx: &Value) -> usize {
        crate::map::items(&self.items_path, effective, ctx).map_or(0, |items| items.len())
    }

    fn items(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
    ) -> Result<Vec<Value>, Failure> {
        if crate::exec::is_jsonata_map(self) {
            return crate::exec::jsonata_map_items(exec, self, raw_input, ctx);
        }
        crate::map::items(&self.items_path, effective, ctx)
    }

    fn select_inputs(
        &self,
        exec: &Execution,
        raw_input: &Value,
        effective: &Value,
        ctx: &Value,
        items: Vec<Value>,
    ) -> Result<Vec<Value>, Failure> {
        if crate::exec::is_jsonata_map(self) {
            return crate::exec::jsonata_map_select(exec, self, raw_input, ctx, items);
        }
        exec.with_rng(|rng| crate::map::iteration_inputs(self.item_selector.as_ref(), effective, items, ctx, rng))
    }

    fn tolerated_failure_count(&self, effective: &Value, ctx: &Value) -> Result<Option<u64>, Failure> {
        match self.distributed.as_deref().and_then(|d| d.tolerated_failure_count.as_ref()) {
            None => Ok(None),
            Some(c) => count(c, CountField::ToleratedFailureCount, effective, ctx).map(Some),
        }
    }

    fn tolerated_failure_percentage(&self, effective: &Value, ctx: &Value) -> Result<Option<f64>, Failure> {
        match self.distributed.as_deref().and_then(|d| d.tolerated_failure_percentage.as_ref()) {
            None => Ok(None),
            Some(Percentage::Fixed(p)) => Ok(Some(*p)),
            Some(Percentage::Path(path)) => percentage_at(path, effective, ctx).map(Some),
            Some(Percentage::Jsonata(e)) => percentage_jsonata(e, effective, ctx).map(Some),
        }
    }

    fn has_item_reader(&self) -> bool {
        self.distributed.as_deref().is_some_and(|d| d.item_reader.is_some())
    }

    fn reader_parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        match self.distributed.as_deref().and_then(|d| d.item_reader.as_ref()) {
            Some(reader) => s3_fields(exec, reader.parameters.as_ref(), reader.arguments.as_ref(), effective, ctx),
            None => Err(absent("ItemReader")),
        }
    }

    fn max_items(&self, effective: &Value, ctx: &Value) -> Result<u64, Failure> {
        match self.distributed.as_deref().and_then(|d| d.item_reader.as_ref()).and_then(|r| r.config.max_items.as_ref())
        {
            None => Ok(0),
            Some(c) => count(c, CountField::MaxItems, effective, ctx),
        }
    }

    fn reader_spec(&self) -> Result<ReadSpec<'_>, Failure> {
        match self.distributed.as_deref().and_then(|d| d.item_reader.as_ref()) {
            Some(reader) => Ok(ReadSpec::of(reader)),
            None => Err(absent("ItemReader")),
        }
    }

    fn has_item_batcher(&self) -> bool {
        self.distributed.as_deref().is_some_and(|d| d.item_batcher.is_some())
    }

    fn max_items_per_batch(&self, effective: &Value, ctx: &Value) -> Result<Option<u64>, Failure> {
        match self
            .distributed
            .as_deref()
            .and_then(|d| d.item_batcher.as_ref())
            .and_then(|b| b.max_items_per_batch.as_ref())
        {
            None => Ok(None),
            Some(c) => count(c, CountField::MaxItemsPerBatch, effective, ctx).map(Some),
        }
    }

    fn max_input_bytes_per_batch(&self, effective: &Value, ctx: &Value) -> Result<Option<u64>, Failure> {
        let batcher = self.distributed.as_deref().and_then(|d| d.item_batcher.as_ref());
        match batcher.and_then(|b| b.max_input_bytes_per_batch.as_ref()) {
            None => Ok(None),
            Some(c) => count(c, CountField::MaxInputBytesPerBatch, effective, ctx).map(Some),
        }
    }

    fn batch_input(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Option<Value>, Failure> {
        let Some(batcher) = self.distributed.as_deref().and_then(|d| d.item_batcher.as_ref()) else {
            return Ok(None);
        };
        match (&batcher.batch_input, &batcher.batch_input_jsonata) {
            (_, Some(t)) => {
                let value = exec.with_rng(|rng| {
                    crate::jsonata::template(t, "BatchInput", &crate::jsonata::Bindings::new(effective, ctx), rng)
                })?;
                let expr = match t {
                    wfc_ir::JsonataTemplate::Expr(e) => Some(e.as_str()),
                    _ => None,
                };
                jsonata_batch_input(value, expr).map(Some)
            }
            (Some(t), None) => exec.with_rng(|rng| io::template(t, effective, ctx, rng)).map(Some),
            (None, None) => Ok(None),
        }
    }

    fn has_result_writer(&self) -> bool {
        self.distributed.as_deref().is_some_and(|d| d.result_writer.is_some())
    }

    fn writer_parameters(&self, exec: &Execution, effective: &Value, ctx: &Value) -> Result<Value, Failure> {
        match self.distributed.as_deref().and_then(|d| d.result_writer.as_ref()) {
            Some(writer) => s3_fields(exec, writer.parameters.as_ref(), writer.arguments.as_ref(), effective, ctx),
            None => Err(absent("ResultWriter")),
        }
    }

    fn writer_exports(&self) -> bool {
        self.distributed.as_deref().and_then(|d| d.result_writer.as_ref()).is_none_or(|w| w.exports())
    }

    fn writer_config(&self) -> Option<WriterConfig> {
        self.distributed.as_deref().and_then(|d| d.result_writer.as_ref()).and_then(|w| w.writer_config)
    }
}

/// An ItemReader's or ResultWriter's `Parameters` (JSONPath, on the effective input) or
/// `Arguments` (JSONata, with `$states.input` the state input, which is the effective input
/// in a JSONata state).
fn s3_fields(
    exec: &Execution,
    parameters: Option<&wfc_ir::Template>,
    arguments: Option<&wfc_ir::JsonataTemplate>,
    effective: &Value,
    ctx: &Value,
) -> Result<Value, Failure> {
    match (parameters, arguments) {
        (_, Some(t)) => exec.with_rng(|rng| {
            crate::jsonata::template(t, "Arguments", &crate::jsonata::Bindings::new(effective, ctx), rng)
        }),
        (Some(t), None) => exec.with_rng(|rng| io::template(t, effective, ctx, rng)),
        (None, None) => Ok(json!({})),
    }
}

/// One Map Run: records `MapRunStarted`, reads (or selects) the items, applies `ItemSelector`
/// and `ItemBatcher`, runs one child execution per item or batch (at most `max_concurrency` at
/// once, 0 = no limit) through `run_child`, applies the tolerance, writes the results when there
/// is a `ResultWriter`, and records `MapRunSucceeded` or `MapRunFailed`.
///
/// Returns the Map's result: the children's outputs in item order (a failed child contributes
/// its execution-result document, as AWS does), or with a `ResultWriter` the summary
/// `{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}`. `States.Runtime` failures come
/// back before `MapRunStarted` when they concern the state's own fields.
///
/// `code` is the state's fields ([`DistributedCode`]: the IR's for the interpreter, compiled
/// for generated code); `input` is the state's raw input (a JSONata Map's `$states.input`).
#[allow(clippy::too_many_arguments)] // the pieces of one state visit, kept apart for clarity
pub async fn map_run<F, Fut>(
    exec: &Execution,
    name: &str,
    children_op: Option<String>,
    code: &dyn DistributedCode,
    input: &Value,
    effective: &Value,
    context: &Value,
    max_concurrency: u64,
    mut run_child: F,
) -> Result<Value, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    // AWS records the Map as started (with the number of items it was given, 0 when an
    // ItemReader reads them) before it checks the run's configuration.
    let length = if code.has_item_reader() { 0 } else { code.items_path_length(effective, context) };
    exec.record(EventType::MapStateStarted, json!({ "name": name, "length": length }));
    // The state's own fields first: a bad value here is the state's failure, not the run's.
    let tolerance = Tolerance::resolve(code, effective, context)?;
    // A bad MaxItems is the run's failure (ItemReaderFailed, after MapRunStarted).
    let max_items = if code.has_item_reader() { code.max_items(effective, context) } else { Ok(0) };
    let batch_limits = if code.has_item_batcher() { Some(batch_limits(exec, code, effective, context)?) } else { None };
    let label = code.label().unwrap_or(name).to_owned();
    let run_id = exec.with_rng(|rng| uuid(rng));
    let arn = format!("{}:mapRun:{}/{label}:{run_id}", exec.arn_prefix(), exec.workflow_name());
    // The run's limits as it starts (AWS's `DescribeMapRun` members; wfc keeps them in the
    // event's details, which AWS's history shape does not show).
    exec.record(
        EventType::MapRunStarted,
        json!({
            "mapRunArn": arn,
            "maxConcurrency": max_concurrency,
            "toleratedFailurePercentage": tolerance.percentage,
            "toleratedFailureCount": tolerance.count,
        }),
    );
    let control = Arc::new(MapRunControl::new(max_concurrency, tolerance));
    running().insert(arn.clone(), control.clone());
    let mut guard = RunGuard { exec, arn: &arn, armed: true };
    // (items, child executions)
    let mut counts = (Counts::default(), Counts::default());
    let outcome = run_children(
        exec,
        name,
        children_op,
        code,
        input,
        effective,
        context,
        max_items,
        batch_limits,
        &control,
        &mut counts,
        &label,
        &run_id,
        &arn,
        &mut run_child,
    );
    // The run's limits and progress are also kept in the store (see `store_sync`).
    let outcome = store_sync::synced(exec, &arn, &control, outcome).await;
    guard.armed = false;
    // The counts and the limits it ended with (an UpdateMapRun may have changed them).
    let limits = control.limits();
    let mut details = json!({
        "mapRunArn": arn,
        "maxConcurrency": limits.max_concurrency,
        "toleratedFailurePercentage": limits.tolerated_failure_percentage,
        "toleratedFailureCount": limits.tolerated_failure_count,
    });
    match &outcome {
        Ok(_) => {
            details["itemCounts"] = counts.0.json();
            details["executionCounts"] = counts.1.json();
            exec.record(EventType::MapRunSucceeded, details)
        }
        Err(f) => {
            details["itemCounts"] = counts.0.json();
            details["executionCounts"] = counts.1.json();
            details["error"] = json!(f.error);
            details["cause"] = json!(f.cause);
            exec.record(EventType::MapRunFailed, details)
        }
    };
    outcome
}

/// A JSONata Map's evaluated `BatchInput`, which must be an object (AWS adds it to each batch
/// as one), else `States.QueryEvaluationError` naming `expr` (the field's `{% %}` expression
/// text, when it is one; an object template always gives an object).
pub fn jsonata_batch_input(value: Value, expr: Option<&str>) -> Result<Value, Failure> {
    match value {
        Value::Object(_) => Ok(value),
        other => {
            let text = expr.map_or_else(|| other.to_string(), str::to_owned);
            Err(crate::jsonata::unexpected_type(&text, "BatchInput", "object", &other))
        }
    }
}

/// `ItemBatcher`'s limits and evaluated `BatchInput`.
type BatchLimits = (Option<u64>, Option<u64>, Option<Value>);

fn batch_limits(
    exec: &Execution,
    code: &dyn DistributedCode,
    effective: &Value,
    context: &Value,
) -> Result<BatchLimits, Failure> {
    let positive = |field: &'static str| move || Failure::runtime(format!("field {field} must be positive"));
    let items = code.max_items_per_batch(effective, context)?;
    let bytes = code.max_input_bytes_per_batch(effective, context)?;
    if items == Some(0) {
        return Err(positive("MaxItemsPerBatch")());
    }
    if bytes == Some(0) {
        return Err(positive("MaxInputBytesPerBatch")());
    }
    if let Some(n) = bytes
        && n > wfc_ir::distributed::MAX_BATCH_BYTES
    {
        return Err(Failure::runtime(format!(
            "field MaxInputBytesPerBatch must be at most {} bytes, found {n}",
            wfc_ir::distributed::MAX_BATCH_BYTES
        )));
    }
    let batch_input = code.batch_input(exec, effective, context)?;
    Ok((items, bytes, batch_input))
}

#[allow(clippy::too_many_arguments)]
async fn run_children<F, Fut>(
    exec: &Execution,
    name: &str,
    children_op: Option<String>,
    code: &dyn DistributedCode,
    input: &Value,
    effective: &Value,
    context: &Value,
    max_items: Result<u64, Failure>,
    batch_limits: Option<BatchLimits>,
    control: &MapRunControl,
    counts: &mut (Counts, Counts),
    label: &str,
    run_id: &str,
    arn: &str,
    run_child: &mut F,
) -> Result<Value, Failure>
where
    F: FnMut(Value, Execution) -> Fut,
    Fut: Future<Output = Result<Value, Failure>> + Send,
{
    let limit = exec.limits().max_map_items;
    let items = if code.has_item_reader() {
        let read = async {
            let max_items = usize::try_from(max_items?).unwrap_or(usize::MAX);
            let params = code.reader_parameters(exec, effective, context)?;
            let spec = code.reader_spec()?;
            // At most `limit` items: `read_items` refuses more.
            read_items(&*exec.objects().store(), &params, &spec, max_items, limit).await
        };
        journaled_run_failure(exec, children_op.as_deref(), name, read).await?
    } else {
        let items = code.items(exec, input, effective, context)?;
        crate::map::check_item_count(exec.limits(), items.len())?;
        items
    };
    let inputs = code.select_inputs(exec, input, effective, context, items)?;
    let total_items = inputs.len();
    let children: Vec<(usize, Value)> = match batch_limits {
        None => inputs.into_iter().map(|i| (1, i)).collect(),
        Some((max_items, max_bytes, batch_input)) => batches(inputs, max_items, max_bytes, batch_input.as_ref())?,
    };
    let count = children.len();
    // Kept for the ResultWriter's PENDING file (children that never finished).
    let child_inputs: Vec<Value> = if code.has_result_writer() && code.writer_exports() {
        children.iter().map(|(_, i)| i.clone()).collect()
    } else {
        Vec::new()
    };
    // The children wait for a place under the run's concurrency limit (`control`, which
    // UpdateMapRun may change while they run); at most MAX_CHILD_CONCURRENCY are in flight.
    let parallel = MAX_CHILD_CONCURRENCY.min(count.max(1));
    counts.0.total = total_items as u64;
    counts.1.total = count as u64;
    let sizes: Vec<usize> = children.iter().map(|(size, _)| *size).collect();
    *control.progress.lock().unwrap_or_else(|p| p.into_inner()) = *counts;
    let workflow = format!("{}/{label}", exec.workflow_name());
    let machine_id = format!("{}/{label}", exec.state_machine_id());
    let short = run_id.get(..8).unwrap_or(run_id);
    let clock = exec.clock().clone();
    // A redriven execution whose Map Run failed, or was running when the execution was stopped,
    // reruns only the children that did not succeed.
    let redrive = store_sync::RedrivePlan::make(
        exec,
        name,
        arn,
        children_op.as_deref(),
        &sizes,
        control,
        // `resultsWritten` counts exported results only.
        code.has_result_writer() && code.writer_exports(),
    )
    .await?;
    *control.pending_redrive.lock().unwrap_or_else(|p| p.into_inner()) =
        redrive.reruns().iter().map(|&i| (i, sizes.get(i).map_or(1, |s| *s as u64))).collect();
    // A level whose end is journaled (a resume after the process stopped once it had ended)
    // replays the children it counted and starts no other: it ended as recorded.
    let ended = redrive.ended();
    // Boxed rather than pinned on the stack, so that `drop` below really drops the children
    // still running.
    let mut runs = Box::pin(
        futures::stream::iter(children.into_iter().enumerate())
            .map(|(index, (size, input))| {
                // Journaled, each child is a CHAINED_INVOKE of its own (see
                // `Execution::journaled_map_child`): a finished one is not run again on resume.
                let op = children_op.as_ref().map(|prefix| format!("{prefix}/{index}"));
                let seed = exec.with_rng(|rng| rng.next_u64());
                let child_name = format!("{short}-{index}");
                let child =
                    exec.child(workflow.clone(), child_name.clone(), machine_id.clone(), &input, op.clone(), seed);
                // What a chained child's own invocation needs to run it (see `run_chained_child`).
                let envelope = chained_child_envelope(name, &workflow, &child_name, seed, &input);
                let running = store_sync::running_document(&child, size);
                let run_op = redrive.run_op(index, op.clone());
                let future = run_child(input.clone(), child.clone());
                let clock = clock.clone();
                async move {
                    if ended.is_some_and(|e| !e.counted(index)) {
                        return (index, None);
                    }
                    let run = async {
                        let _place = control.place(size as u64, index, running).await;
                        let result = child.finish(None, future).await;
                        let document = child_document(&child, &input, &result, clock.now_rfc3339());
                        let output = result.output.filter(|_| result.status == Status::Succeeded);
                        json!({ "succeeded": output.is_some(), "output": output, "document": document })
                    };
                    let kept = exec.journaled_map_child(run_op, name, move || envelope, run).await;
                    let record = kept.map(|kept| ChildRecord {
                        items: size,
                        output: if kept["succeeded"] == true { Some(kept["output"].clone()) } else { None },
                        document: kept["document"].clone(),
                    });
                    (index, Some(record))
                }
            })
            .buffer_unordered(parallel),
    );
    let mut records: Vec<Option<ChildRecord>> = vec![None; count];
    let mut failed_items = 0u64;
    let mut exceeded = false;
    // The children counted, in the order they finished.
    let mut counted = Vec::new();
    while let Some((index, record)) = runs.next().await {
        // Not counted when the level ended (see `ended` above).
        let Some(record) = record else { continue };
        // A store failure or a suspension: not the child's failure, the whole run's.
        let record = record?;
        if record.output.is_none() {
            failed_items += record.items as u64;
        }
        count_child(
            &mut control.progress.lock().unwrap_or_else(|p| p.into_inner()),
            Some(&record),
            record.items as u64,
        );
        if let Some(slot) = records.get_mut(index) {
            *slot = Some(record);
        }
        counted.push(index);
        if ended.is_none() && control.exceeded(failed_items, total_items as u64) {
            exceeded = true;
            break;
        }
    }
    // Children still running are dropped here (aborted); those never started stay pending.
    drop(runs);
    // The level's end is journaled before the run goes on from it (a replay ends as recorded).
    let exceeded = ended.map_or(exceeded, |e| e.exceeded);
    redrive.record_end(exec, name, control, exceeded, counted).await?;
    for (record, size) in records.iter().zip(&sizes) {
        count_child(counts, record.as_ref(), *size as u64);
    }
    let config = code.has_result_writer().then(|| code.writer_config()).flatten();
    let written = match code.has_result_writer() && code.writer_exports() {
        false => None,
        true => {
            let write = write_results(exec, code, effective, context, run_id, arn, &records, &child_inputs, config);
            let written = journaled_run_failure(exec, children_op.as_deref(), name, write).await;
            if written.is_ok() {
                counts.0.results_written =
                    records.iter().zip(&sizes).filter(|(r, _)| r.is_some()).map(|(_, s)| *s as u64).sum();
                counts.1.results_written = records.iter().filter(|r| r.is_some()).count() as u64;
            }
            Some(written)
        }
    };
    if exceeded {
        return Err(threshold_exceeded());
    }
    if let Some(summary) = written {
        return summary;
    }
    // Without a ResultWriter, AWS's COMPACT; a WriterConfig without Resource says which.
    let transformation = config.map_or(WriterTransformation::Compact, |c| c.transformation);
    let mut outputs = Vec::with_capacity(records.len());
    for record in records {
        match record {
            Some(r) => shape_result(r, transformation, &mut outputs),
            None => outputs.push(Value::Null),
        }
    }
    Ok(Value::Array(outputs))
}

/// Adds a finished child's result to `out` as `transformation` says: `NONE` its execution
/// document, `COMPACT` its output, `FLATTEN` its output with an array's elements spliced in. A
/// failed child is its document whatever the transformation, as AWS documents.
fn shape_result(record: ChildRecord, transformation: WriterTransformation, out: &mut Vec<Value>) {
    match (record.output, transformation) {
        (Some(_), WriterTransformation::None) | (None, _) => out.push(record.document),
        (Some(Value::Array(elements)), WriterTransformation::Flatten) => out.extend(elements),
        (Some(output), _) => out.push(output),
    }
}

/// Runs a Map Run's `ItemReader` read or `ResultWriter` write (`io`); journaled (`op`: the
/// run's children prefix, [`Execution::map_run_op`]), its failure is kept as a failed STEP of
/// that id, and a failure recorded before this run replays without reading or writing again.
/// A redrive of the execution that failure ended then runs the Map state again as a new Map
/// Run (AWS's "Redriving Map Runs": `exec::map_inner` moves the visit to its next redrive
/// generation, so the new run has new operations and ARN).
async fn journaled_run_failure<T>(
    exec: &Execution,
    op: Option<&str>,
    name: &str,
    io: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    #[cfg(feature = "durable")]
    if let (Some(journal), Some(id)) = (exec.journal(), op) {
        if let Some(recorded) = journal.recorded(id)
            && matches!(recorded.status, crate::journal::OpStatus::Failed)
        {
            return Err(Failure::new(recorded.error.unwrap_or_default(), recorded.cause.unwrap_or_default()));
        }
        let result = io.await;
        if let Err(f) = &result {
            let failed = crate::task::Attempt::Failed(f.clone());
            journal.step(id.to_owned(), exec.op_parent(), name, None, Box::pin(async move { failed })).await?;
        }
        return result;
    }
    let _ = (exec, op, name);
    io.await
}

fn reader_failed_owned(cause: String) -> Failure {
    reader_failed(cause)
}

fn writer_failed(cause: String) -> Failure {
    Failure::new(RESULT_WRITER_FAILED, cause)
}

/// Most child executions in flight at once: AWS runs at most 10,000 at a time.
pub const MAX_CHILD_CONCURRENCY: usize = 10_000;

/// Writes `SUCCEEDED_0.json`, `FAILED_0.json`, `PENDING_0.json` (non-empty ones only) and
/// `manifest.json` under `<Prefix>/<run id>/`, and returns the Map's result, AWS's summary.
#[allow(clippy::too_many_arguments)]
async fn write_results(
    exec: &Execution,
    code: &dyn DistributedCode,
    effective: &Value,
    context: &Value,
    run_id: &str,
    arn: &str,
    records: &[Option<ChildRecord>],
    inputs: &[Value],
    config: Option<WriterConfig>,
) -> Result<Value, Failure> {
    let transformation = config.map_or(WriterTransformation::None, |c| c.transformation);
    let output_type = config.map_or(OutputType::Json, |c| c.output_type);
    let params = code.writer_parameters(exec, effective, context)?;
    let bucket = string_param(&params, "Bucket", "ResultWriter", writer_failed)?;
    let prefix = match params.get("Prefix") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.trim_end_matches('/').to_owned(),
        Some(other) => {
            return Err(writer_failed(format!("The ResultWriter parameter `Prefix` must be a string, found {other}")));
        }
    };
    let dir = if prefix.is_empty() { run_id.to_owned() } else { format!("{prefix}/{run_id}") };
    let mut succeeded = Vec::new();
    let mut failed = Vec::new();
    let mut pending = Vec::new();
    for (index, record) in records.iter().enumerate() {
        match record {
            Some(r) if r.output.is_some() => shape_result(r.clone(), transformation, &mut succeeded),
            Some(r) => failed.push(r.document.clone()),
            None => {
                let input = inputs.get(index).map(Value::to_string).unwrap_or_default();
                pending.push(json!({ "Input": input, "InputDetails": { "Included": true }, "Status": "PENDING" }));
            }
        }
    }
    let store = exec.objects().store();
    let mut files = serde_json::Map::new();
    for (status, docs) in [("FAILED", failed), ("PENDING", pending), ("SUCCEEDED", succeeded)] {
        let mut listed = Vec::new();
        if !docs.is_empty() {
            let (key, bytes) = match output_type {
                OutputType::Json => (
                    format!("{dir}/{status}_0.json"),
                    serde_json::to_vec(&docs).map_err(|e| writer_failed(e.to_string()))?,
                ),
                OutputType::Jsonl => {
                    let mut bytes = Vec::new();
                    for doc in &docs {
                        serde_json::to_writer(&mut bytes, doc).map_err(|e| writer_failed(e.to_string()))?;
                        bytes.push(b'\n');
                    }
                    (format!("{dir}/{status}_0.jsonl"), bytes)
                }
            };
            let size = bytes.len();
            store.put_object(bucket, &key, bytes).await.map_err(writer_failed)?;
            listed.push(json!({ "Key": key, "Size": size }));
        }
        files.insert(status.to_owned(), Value::Array(listed));
    }
    let manifest_key = format!("{dir}/manifest.json");
    let manifest = json!({ "DestinationBucket": bucket, "MapRunArn": arn, "ResultFiles": files });
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| writer_failed(e.to_string()))?;
    store.put_object(bucket, &manifest_key, bytes).await.map_err(writer_failed)?;
    Ok(json!({ "MapRunArn": arn, "ResultWriterDetails": { "Bucket": bucket, "Key": manifest_key } }))
}

// ---------------------------------------------------------------------------------------------
// Map Run children as chained invokes (a Lambda durable function invoking itself)
// ---------------------------------------------------------------------------------------------

/// The key of the envelope a chained Map Run child's execution gets as its input.
pub const CHAINED_CHILD_KEY: &str = "wfc:mapRunChild";

/// The envelope that names child `name` of the DISTRIBUTED Map state `state`: its workflow
/// label (`<workflow>/<label>`), random seed and input.
fn chained_child_envelope(state: &str, workflow: &str, name: &str, seed: u64, input: &Value) -> Value {
    json!({ CHAINED_CHILD_KEY: { "state": state, "workflow": workflow, "name": name, "seed": seed, "input": input } })
}

/// The envelope's content when `input` is a chained Map Run child's envelope.
pub fn chained_child(input: &Value) -> Option<&Value> {
    match input.as_object() {
        Some(o) if o.len() == 1 => o.get(CHAINED_CHILD_KEY),
        _ => None,
    }
}

/// The DISTRIBUTED Map state named `name` anywhere in `machine` (state names are unique in a
/// whole state machine).
fn find_distributed_map<'a>(machine: &'a wfc_ir::StateMachine, name: &str) -> Option<&'a MapState> {
    machine.states.iter().find_map(|s| match &s.kind {
        wfc_ir::StateKind::Map(spec) if s.name == name && spec.distributed.is_some() => Some(spec),
        wfc_ir::StateKind::Map(spec) => find_distributed_map(&spec.item_processor, name),
        wfc_ir::StateKind::Parallel(spec) => spec.branches.iter().find_map(|b| find_distributed_map(b, name)),
        _ => None,
    })
}

/// Runs the Map Run child an envelope ([`chained_child`]) names: the Map state's ItemProcessor
/// as an execution of the workflow `<workflow>/<label>` with the seed and input the parent
/// drew, journaled through `options` (the child's own durable execution). Its output is what
/// the Map Run keeps of the child, `{"succeeded", "output", "document"}`, also when the child
/// failed (the parent counts the failure against its tolerance); an envelope that names no
/// DISTRIBUTED Map of `workflow` fails with `States.Runtime`.
///
/// `run_processor` runs the item processor (the `StateMachine` it is given) on the child's
/// execution: the host's engine, e.g. `wfc_interp::run_machine` (`wfc-aws`'s interpreted Lambda
/// function). A function rather than a call into the interpreter, so the runtime every compiled
/// program links does not depend on the interpreter; and a function rather than a trait, as it
/// is one call made once per child. The envelope and the child's result document stay here,
/// beside the parent's side of the same protocol (`chained_child_envelope`, the Map Run).
pub async fn run_chained_child<'a, F, Fut>(
    workflow: &'a wfc_ir::Workflow,
    envelope: &Value,
    options: crate::RunOptions,
    run_processor: F,
) -> crate::ExecutionResult
where
    F: FnOnce(Execution, &'a wfc_ir::StateMachine, Value) -> Fut,
    Fut: Future<Output = Result<Value, Failure>>,
{
    let text = |k: &str| envelope.get(k).and_then(Value::as_str);
    let (Some(state), Some(label), Some(seed)) =
        (text("state"), text("workflow"), envelope.get("seed").and_then(Value::as_u64))
    else {
        return refused(format!("a malformed Map Run child envelope: {envelope}"));
    };
    let Some(spec) = find_distributed_map(&workflow.machine, state) else {
        return refused(format!(
            "the Map Run child envelope names the state '{state}', which is not a DISTRIBUTED Map of '{}'",
            workflow.name
        ));
    };
    let input = envelope.get("input").cloned().unwrap_or(Value::Null);
    let child_workflow = wfc_ir::Workflow {
        name: label.to_owned(),
        comment: None,
        version: None,
        timeout_seconds: None,
        machine: spec.item_processor.clone(),
    };
    let options = match text("name") {
        Some(name) => options.with_name(name),
        None => options,
    }
    .with_seed(seed);
    let child = Execution::start(&child_workflow.name, &input, options);
    // A clone shares the child's line of control, history and journal (see `Execution`).
    let result = child.finish(None, run_processor(child.clone(), &spec.item_processor, input.clone())).await;
    let document = child_document(&child, &input, &result, child.clock().now_rfc3339());
    let output = result.output.clone().filter(|_| result.status == Status::Succeeded);
    crate::ExecutionResult {
        status: Status::Succeeded,
        output: Some(json!({ "succeeded": output.is_some(), "output": output, "document": document })),
        error: None,
        history: result.history,
        elapsed: result.elapsed,
    }
}

fn refused(cause: String) -> crate::ExecutionResult {
    crate::ExecutionResult {
        status: Status::Failed,
        output: None,
        error: Some(Failure::runtime(cause)),
        history: Vec::new(),
        elapsed: std::time::Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a Parquet file of `rows` (`id`, `name`, `score`, `active`, `created`) compressed
    /// with `codec`, with the `parquet` crate's low-level writer (no Arrow). The fixtures under
    /// `tests/cases/map/fixtures/items/parquet/` were made with it
    /// (`write_parquet_fixtures`, below).
    #[cfg(feature = "parquet")]
    fn parquet_file(rows: &[FixtureRow], codec: parquet::basic::Compression) -> Vec<u8> {
        use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let schema = std::sync::Arc::new(
            parquet::schema::parser::parse_message_type(
                "message item { REQUIRED INT64 id; OPTIONAL BYTE_ARRAY name (UTF8); REQUIRED DOUBLE score; \
                 REQUIRED BOOLEAN active; REQUIRED INT64 created (TIMESTAMP_MILLIS); }",
            )
            .unwrap(),
        );
        let props = std::sync::Arc::new(WriterProperties::builder().set_compression(codec).build());
        let mut out = Vec::new();
        let mut writer = SerializedFileWriter::new(&mut out, schema, props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let names: Vec<ByteArray> = rows.iter().filter_map(|r| r.1).map(ByteArray::from).collect();
        let name_levels: Vec<i16> = rows.iter().map(|r| i16::from(r.1.is_some())).collect();
        let scores: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let active: Vec<bool> = rows.iter().map(|r| r.3).collect();
        let created: Vec<i64> = rows.iter().map(|r| r.4).collect();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<Int64Type>().write_batch(&ids, None, None).unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<ByteArrayType>().write_batch(&names, Some(&name_levels), None).unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<DoubleType>().write_batch(&scores, None, None).unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<BoolType>().write_batch(&active, None, None).unwrap();
        column.close().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<Int64Type>().write_batch(&created, None, None).unwrap();
        column.close().unwrap();
        group.close().unwrap();
        writer.close().unwrap();
        out
    }

    /// A fixture row: `id`, `name`, `score`, `active`, `created`.
    #[cfg(feature = "parquet")]
    type FixtureRow = (i64, Option<&'static str>, f64, bool, i64);

    /// Rows of the fixtures: the first file Snappy-compressed, the second GZIP.
    #[cfg(feature = "parquet")]
    const PARQUET_ROWS: [&[FixtureRow]; 2] = [
        &[(1, Some("apple"), 1.5, true, 1_700_000_000_000), (2, None, 2.0, false, 1_700_000_001_500)],
        &[(3, Some("cherry \"red\""), -0.25, true, 0)],
    ];

    /// Writes the Parquet fixtures of `tests/cases/map/distributed-options.case.json`
    /// (`cargo test -p wfc-runtime --features parquet write_parquet_fixtures -- --ignored`).
    #[cfg(feature = "parquet")]
    #[test]
    #[ignore = "writes the committed fixtures"]
    fn write_parquet_fixtures() {
        use parquet::basic::{Compression, GzipLevel};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/map/fixtures/items/parquet");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("part-1.parquet"), parquet_file(PARQUET_ROWS[0], Compression::SNAPPY)).unwrap();
        let gzip = Compression::GZIP(GzipLevel::default());
        std::fs::write(dir.join("part-2.parquet"), parquet_file(PARQUET_ROWS[1], gzip)).unwrap();
    }

    #[cfg(feature = "parquet")]
    #[test]
    fn parquet_rows_become_objects_of_their_columns() {
        use parquet::basic::{Compression, GzipLevel, ZstdLevel};
        let cfg = config(InputType::Parquet, CsvHeaders::FirstRow);
        // The codecs AWS reads: Snappy, GZIP and ZSTD.
        for codec in
            [Compression::SNAPPY, Compression::GZIP(GzipLevel::default()), Compression::ZSTD(ZstdLevel::default())]
        {
            let items = parse_items(&parquet_file(PARQUET_ROWS[0], codec), &cfg, 0, 10).unwrap();
            assert_eq!(
                items,
                vec![
                    json!({"id": 1, "name": "apple", "score": 1.5, "active": true, "created": 1_700_000_000_000_i64}),
                    json!({"id": 2, "name": null, "score": 2.0, "active": false, "created": 1_700_000_001_500_i64}),
                ],
                "{codec:?}"
            );
        }
        let bytes = parquet_file(PARQUET_ROWS[0], Compression::SNAPPY);
        // MaxItems stops the read; the item limit fails it; bytes that are no Parquet fail it.
        assert_eq!(parse_items(&bytes, &cfg, 1, 10).unwrap().len(), 1);
        let over = parse_items(&bytes, &cfg, 0, 1).unwrap_err();
        assert!(over.cause.contains("item limit of 1"), "{}", over.cause);
        let bad = parse_items(b"not parquet", &cfg, 0, 10).unwrap_err();
        assert_eq!(bad.error, "States.ItemReaderFailed");
        assert!(bad.cause.starts_with("The Parquet object cannot be read"), "{}", bad.cause);
    }

    fn config(input_type: InputType, csv_headers: CsvHeaders) -> ReaderConfig {
        ReaderConfig {
            input_type: Some(input_type),
            csv_headers,
            max_items: None,
            csv_delimiter: CsvDelimiter::Comma,
            items_pointer: None,
            transformation: ReaderTransformation::None,
            manifest_type: None,
        }
    }

    #[test]
    fn object_paths_stay_inside_the_root() {
        let root = FsPath::new("/data");
        assert_eq!(object_path(root, "b", "dir/file.json"), Ok(PathBuf::from("/data/b/dir/file.json")));
        for (bucket, key) in [
            ("b", "../x"),
            ("b", "a/../../x"),
            ("b", "/etc/passwd"),
            ("b", "./x"),
            ("..", "x"),
            ("", "x"),
            ("b", ""),
            ("b", "c:\\x"),
            ("b", "a\\..\\x"),
            ("a/b", "x"),
        ] {
            assert!(object_path(root, bucket, key).is_err(), "{bucket} {key}");
        }
    }

    #[test]
    fn csv_rows_become_objects_of_strings() {
        let items = parse_items(b"a,b\n1,\"x, y\"\n2,z\n", &config(InputType::Csv, CsvHeaders::FirstRow), 0, 10);
        assert_eq!(items, Ok(vec![json!({"a": "1", "b": "x, y"}), json!({"a": "2", "b": "z"})]));
        let given = CsvHeaders::Given(vec!["p".into(), "q".into()]);
        let items = parse_items(b"1,2\n3,4\n", &config(InputType::Csv, given), 1, 10);
        assert_eq!(items, Ok(vec![json!({"p": "1", "q": "2"})]));
        let dup = parse_items(b"a,a\n1,2\n", &config(InputType::Csv, CsvHeaders::FirstRow), 0, 10);
        assert_eq!(dup.map_err(|f| f.cause), Err("CSV headers cannot contain duplicates.".to_owned()));
        // Missing fields are "", extra ones skipped (AWS's documented and recorded rule).
        let ragged = parse_items(b"a,b\n1\n2,3,4\n", &config(InputType::Csv, CsvHeaders::FirstRow), 0, 10);
        assert_eq!(ragged, Ok(vec![json!({"a": "1", "b": ""}), json!({"a": "2", "b": "3"})]));
        // Records end at \n, \r\n or a lone \r, empty lines are skipped, a quoted newline is kept,
        // a quotation mark inside an unquoted field is an ordinary character.
        let lines =
            parse_items(b"a,b\r\n\r\n1,\"x\r\ny\"\r2,q\"r\n", &config(InputType::Csv, CsvHeaders::FirstRow), 0, 10);
        assert_eq!(lines, Ok(vec![json!({"a": "1", "b": "x\r\ny"}), json!({"a": "2", "b": "q\"r"})]));
        // A backslash before a newline inside a quoted string is removed, the newline kept.
        let quoted = parse_items(b"a\n\"x\\\ny\"\n", &config(InputType::Csv, CsvHeaders::FirstRow), 0, 10);
        assert_eq!(quoted, Ok(vec![json!({"a": "x\ny"})]));
        let not_utf8 = parse_items(b"a,b\n1,\xff\n", &config(InputType::Csv, CsvHeaders::FirstRow), 0, 10);
        assert_eq!(
            not_utf8.map_err(|f| f.cause),
            Err("The CSV object cannot be read: line 2, field 2: not valid UTF-8.".to_owned())
        );
    }

    #[test]
    fn json_and_jsonl() {
        let json_cfg = config(InputType::Json, CsvHeaders::FirstRow);
        assert_eq!(parse_items(b"[1, 2, 3]", &json_cfg, 2, 10), Ok(vec![json!(1), json!(2)]));
        let err = parse_items(b"{}", &json_cfg, 0, 10).map_err(|f| f.cause);
        assert_eq!(err, Err("Attempting to map over non-iterable node.".to_owned()));
        let jsonl = config(InputType::Jsonl, CsvHeaders::FirstRow);
        assert_eq!(parse_items(b"1\n\n\"a\"\r\n", &jsonl, 0, 10), Ok(vec![json!(1), json!("a")]));
        let over = parse_items(b"1\n2\n3\n", &jsonl, 0, 2).map_err(|f| f.error);
        assert_eq!(over, Err(ITEM_READER_FAILED.to_owned()));
        // MaxItems stops reading before the limit matters.
        assert_eq!(parse_items(b"1\n2\n3\n", &jsonl, 2, 2), Ok(vec![json!(1), json!(2)]));
    }

    #[test]
    fn items_pointer_and_delimiters() {
        let mut cfg = config(InputType::Json, CsvHeaders::FirstRow);
        cfg.items_pointer = Some("/a/b~1c".to_owned());
        assert_eq!(parse_items(br#"{"a": {"b/c": [1, 2]}}"#, &cfg, 0, 10), Ok(vec![json!(1), json!(2)]));
        let missing = parse_items(br#"{"a": {}}"#, &cfg, 0, 10).map_err(|f| f.error);
        assert_eq!(missing, Err(ITEM_READER_FAILED.to_owned()));
        let not_array = parse_items(br#"{"a": {"b/c": {}}}"#, &cfg, 0, 10).map_err(|f| f.cause);
        assert_eq!(not_array, Err("Attempting to map over non-iterable node.".to_owned()));
        for (delimiter, text) in [
            (CsvDelimiter::Pipe, "a|b\n1|x,y\n"),
            (CsvDelimiter::Semicolon, "a;b\n1;x,y\n"),
            (CsvDelimiter::Tab, "a\tb\n1\tx,y\n"),
            (CsvDelimiter::Space, "a b\n1 x,y\n"),
        ] {
            let mut cfg = config(InputType::Csv, CsvHeaders::FirstRow);
            cfg.csv_delimiter = delimiter;
            assert_eq!(
                parse_items(text.as_bytes(), &cfg, 0, 10),
                Ok(vec![json!({"a": "1", "b": "x,y"})]),
                "{delimiter:?}"
            );
        }
    }

    #[test]
    fn manifests_and_gzip() {
        assert_eq!(
            athena_files(b"s3://b/k/1.csv\n\ns3://c/2.csv\n"),
            Ok(vec![("b".to_owned(), "k/1.csv".to_owned()), ("c".to_owned(), "2.csv".to_owned())])
        );
        assert!(athena_files(b"http://b/k\n").is_err());
        let mut gz = Vec::new();
        {
            let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
            std::io::Write::write_all(&mut enc, b"x,y\n").unwrap_or_default();
            enc.finish().map(|_| ()).unwrap_or_default();
        }
        assert_eq!(gunzip(&gz).map(|b| b.into_owned()), Ok(b"x,y\n".to_vec()));
        assert_eq!(gunzip(b"plain").map(|b| b.into_owned()), Ok(b"plain".to_vec()));
    }

    #[test]
    fn writer_transformations() {
        let record = |output: Option<Value>| ChildRecord { items: 1, document: json!({"Status": "doc"}), output };
        let shaped = |t| {
            let mut out = Vec::new();
            for r in [record(Some(json!([1, 2]))), record(None), record(Some(json!(3)))] {
                shape_result(r, t, &mut out);
            }
            out
        };
        let doc = json!({"Status": "doc"});
        assert_eq!(shaped(WriterTransformation::Compact), vec![json!([1, 2]), doc.clone(), json!(3)]);
        assert_eq!(shaped(WriterTransformation::Flatten), vec![json!(1), json!(2), doc.clone(), json!(3)]);
        assert_eq!(shaped(WriterTransformation::None), vec![doc.clone(), doc.clone(), doc]);
    }

    #[test]
    fn tolerance_thresholds() {
        let none = Tolerance { count: None, percentage: None };
        assert!(!none.exceeded(0, 10) && none.exceeded(1, 10));
        let count = Tolerance { count: Some(2), percentage: None };
        assert!(!count.exceeded(2, 10) && count.exceeded(3, 10));
        let share = Tolerance { count: None, percentage: Some(20.0) };
        assert!(!share.exceeded(2, 10) && share.exceeded(3, 10));
        assert!(!share.exceeded(0, 0));
        let both = Tolerance { count: Some(5), percentage: Some(10.0) };
        assert!(both.exceeded(2, 10), "either threshold fails the run");
    }

    #[test]
    fn batching_by_count_and_bytes() {
        let items: Vec<Value> = (0..5).map(|i| json!(i)).collect();
        let b = batches(items.clone(), Some(2), None, None).unwrap_or_default();
        assert_eq!(b.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [2, 2, 1]);
        assert_eq!(b[0].1, json!({"Items": [0, 1]}));
        // `{"Items":[0,1]}` is 15 bytes, `{"Items":[0,1,2]}` 17.
        let b = batches(items.clone(), None, Some(16), Some(&json!({"k": 1}))).map_err(|f| f.cause);
        assert!(b.is_err(), "the wrapper with BatchInput alone is over 16 bytes: {b:?}");
        let b = batches(items, Some(10), Some(15), None).unwrap_or_default();
        assert_eq!(b.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [2, 2, 1]);
    }

    #[test]
    fn path_values_are_checked_with_aws_messages() {
        let p = Path::parse("$.v").unwrap_or_else(|e| panic!("{e:?}"));
        let msg =
            |v: Value| path_integer(&p, "MaxConcurrencyPath", &json!({"v": v}), &Value::Null).map_err(|f| f.cause);
        assert_eq!(msg(json!(3)), Ok(3));
        assert_eq!(msg(json!("4")), Ok(4));
        assert_eq!(
            msg(json!(1.5)),
            Err("The MaxConcurrencyPath field refers to value \"1.5\" which is not a valid integer: $.v".to_owned())
        );
    }
}
