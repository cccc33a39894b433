//! The Map state's fields beyond the inline basics: `ProcessorConfig`, `MaxConcurrencyPath`,
//! and the DISTRIBUTED mode's `ItemReader`, `ItemBatcher`, `ResultWriter`, `Label` and
//! `ToleratedFailure*` (asl-anchor §13, §17). [`Cx::map`](super::Cx) calls these; each reports
//! its own problems and returns `None` when the definition cannot be lowered.

use wfc_ir::JsonataTemplate;
use wfc_ir::distributed::{
    Count, CsvDelimiter, CsvHeaders, DistributedMap, ExecutionType, GET_OBJECT_PARAMETERS, InputType, ItemBatcher,
    ItemReader, LIST_OBJECTS_PARAMETERS, MAX_BATCH_BYTES, MAX_LABEL_CHARS, MAX_READER_ITEMS, ManifestType, OutputType,
    Percentage, ReaderConfig, ReaderTransformation, ResultWriter, S3_GET_OBJECT, S3_LIST_OBJECTS_V2, S3_PUT_OBJECT,
    WriterConfig, WriterTransformation, check_s3_parameter,
};

use super::{Cx, JsonataExpr, Obj, Path, SpannedValue, Template, ValueKind, codes};

/// A Map's concurrency limit as written: `MaxConcurrency` (a literal, or in a JSONata state a
/// `{% %}` expression) or `MaxConcurrencyPath`.
pub(super) struct Concurrency {
    /// The literal limit (0 = no limit; also 0 when one of the other two is given).
    pub(super) fixed: u64,
    /// `MaxConcurrencyPath`.
    pub(super) path: Option<Path>,
    /// `MaxConcurrency` as a JSONata expression, evaluated at the state's entry.
    pub(super) jsonata: Option<JsonataExpr>,
}

/// Fields that only a DISTRIBUTED Map may have.
const DISTRIBUTED_ONLY: &[&str] = &[
    "ItemReader",
    "ItemBatcher",
    "ResultWriter",
    "Label",
    "ToleratedFailureCount",
    "ToleratedFailureCountPath",
    "ToleratedFailurePercentage",
    "ToleratedFailurePercentagePath",
];
const READER_FIELDS: &[&str] = &["Resource", "Parameters", "ReaderConfig", "Arguments"];
const READER_CONFIG_FIELDS: &[&str] = &[
    "InputType",
    "CSVHeaderLocation",
    "CSVHeaders",
    "MaxItems",
    "MaxItemsPath",
    "CSVDelimiter",
    "ItemsPointer",
    "ManifestType",
    "Transformation",
];
const BATCHER_FIELDS: &[&str] =
    &["MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch", "MaxInputBytesPerBatchPath", "BatchInput"];
const WRITER_FIELDS: &[&str] = &["Resource", "Parameters", "WriterConfig", "Arguments"];
/// Largest MaxConcurrency accepted: AWS documents no maximum; this keeps it in any integer type.
const MAX_CONCURRENCY: u64 = u32::MAX as u64;
/// Largest ToleratedFailureCount accepted (AWS documents no maximum).
const MAX_TOLERATED_COUNT: u64 = i64::MAX as u64;
/// Characters AWS forbids in names, and so in a Map `Label` (besides whitespace and controls).
const LABEL_FORBIDDEN: &[char] =
    &['<', '>', '{', '}', '[', ']', '?', '*', '"', '#', '%', '\\', '^', '|', '~', '`', '$', '&', ',', ';', ':', '/'];

/// The Map's mode, from its processor's `ProcessorConfig`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mode {
    /// `INLINE` (the default).
    Inline,
    /// `DISTRIBUTED` with its `ExecutionType`.
    Distributed(ExecutionType),
}

impl Cx<'_> {
    /// The mode from `ItemProcessor.ProcessorConfig` (or the legacy `Iterator`'s); `None` when
    /// the configuration is invalid (already reported).
    pub(super) fn map_mode(&mut self, obj: Obj<'_>) -> Option<Mode> {
        let Some(processor) = obj
            .get("ItemProcessor")
            .or_else(|| obj.get("Iterator"))
            .and_then(|p| p.as_object().map(|entries| Obj { value: p, entries }))
        else {
            // No processor, or not an object: reported where the processor is lowered.
            return Some(Mode::Inline);
        };
        let Some(v) = processor.get("ProcessorConfig") else {
            return Some(Mode::Inline);
        };
        let config = self.object(v, "`ProcessorConfig`")?;
        self.check_fields(config, &["Mode", "ExecutionType"], "`ProcessorConfig`");
        let execution_type = match self.string(config, "ExecutionType") {
            None => None,
            Some(("STANDARD", _)) => Some(Some(ExecutionType::Standard)),
            Some(("EXPRESS", _)) => Some(Some(ExecutionType::Express)),
            Some((other, t)) => {
                self.error(
                    codes::BAD_EXECUTION_TYPE,
                    format!("`ExecutionType` must be \"STANDARD\" or \"EXPRESS\", found \"{other}\""),
                    t.span.clone(),
                );
                Some(None)
            }
        };
        match self.string(config, "Mode") {
            None if config.get("Mode").is_some() => None,
            None | Some(("INLINE", _)) => {
                if let Some(k) = config.key("ExecutionType") {
                    self.error(
                        codes::BAD_EXECUTION_TYPE,
                        "`ExecutionType` belongs to the DISTRIBUTED Map; an INLINE Map runs its iterations inside the execution",
                        k.span.clone(),
                    )
                    .help = Some("remove it, or set `\"Mode\": \"DISTRIBUTED\"`".to_owned());
                    return None;
                }
                Some(Mode::Inline)
            }
            Some(("DISTRIBUTED", m)) => match execution_type {
                Some(Some(t)) => Some(Mode::Distributed(t)),
                Some(None) => None,
                None => {
                    self.error(
                        codes::BAD_EXECUTION_TYPE,
                        "a DISTRIBUTED Map needs `ExecutionType` in its `ProcessorConfig`",
                        m.span.clone(),
                    )
                    .help = Some("add `\"ExecutionType\": \"STANDARD\"` (or \"EXPRESS\")".to_owned());
                    None
                }
            },
            Some((other, m)) => {
                self.error(
                    codes::WRONG_TYPE,
                    format!("`Mode` must be \"INLINE\" or \"DISTRIBUTED\", found \"{other}\""),
                    m.span.clone(),
                );
                None
            }
        }
    }

    /// `MaxConcurrency` (default 0, no limit) or `MaxConcurrencyPath`, not both.
    pub(super) fn map_concurrency(&mut self, obj: Obj<'_>) -> Option<Concurrency> {
        if let (Some(l), Some(p)) = (obj.key("MaxConcurrency"), obj.key("MaxConcurrencyPath")) {
            let d = self.error(
                codes::MAP_EXCLUSIVE,
                "`MaxConcurrency` and `MaxConcurrencyPath` cannot both be given",
                p.span.clone(),
            );
            d.labels.push((l.span.clone(), "`MaxConcurrency` is here".to_owned()));
            d.help = Some("keep one of them".to_owned());
            return None;
        }
        if obj.get("MaxConcurrencyPath").is_some() {
            return self.reference_path(obj, "MaxConcurrencyPath").map(|p| Concurrency {
                fixed: 0,
                path: Some(p),
                jsonata: None,
            });
        }
        match obj.get("MaxConcurrency") {
            None => Some(Concurrency { fixed: 0, path: None, jsonata: None }),
            Some(v) => {
                match self.jsonata_number(v, "MaxConcurrency") {
                    Some(e) => e.map(|e| Concurrency { fixed: 0, path: None, jsonata: Some(e) }),
                    None => self
                        .integer(v, "MaxConcurrency", codes::WRONG_TYPE, 0, MAX_CONCURRENCY)
                        .map(|n| Concurrency { fixed: n, path: None, jsonata: None }),
                }
            }
        }
    }

    /// A numeric field written as a `{% %}` expression in a JSONata state (AWS accepts them for
    /// MaxConcurrency, ToleratedFailure*, MaxItems and the batcher limits; asl-anchor §7):
    /// `None` when it is not one (a literal, checked by the caller), `Some(None)` when the
    /// expression does not parse (reported).
    fn jsonata_number(&mut self, v: &SpannedValue, key: &str) -> Option<Option<JsonataExpr>> {
        if !self.jsonata_number_text(v) {
            return None;
        }
        Some(self.jsonata_expr(v.as_str()?, v, key))
    }

    /// Whether `v` is a `{% %}` string in a JSONata state.
    fn jsonata_number_text(&self, v: &SpannedValue) -> bool {
        self.jsonata && v.as_str().is_some_and(|s| wfc_ir::jsonata::expression_text(s).is_some())
    }

    /// A Reference Path field (one node: no wildcards, filters or functions).
    fn reference_path(&mut self, obj: Obj<'_>, key: &str) -> Option<Path> {
        let p = self.path_field(obj, key)?;
        if !p.is_singular() || p.function().is_some() {
            let span = obj.get(key).map_or(obj.head(), |v| v.span.clone());
            self.error(
                codes::BAD_REFERENCE_PATH,
                format!("`{key}` must be a Reference Path (one node, no wildcards, filters or functions)"),
                span,
            )
            .help = Some("name the value with `.field`, `['field']` and `[index]` steps only".to_owned());
            return None;
        }
        Some(p)
    }

    /// An integer field `key` with a `{key}Path` form: at most one of the two, the literal in
    /// `min..=max` (range problems reported under `code`). `Err` when invalid.
    fn count(&mut self, obj: Obj<'_>, key: &str, code: &'static str, min: u64, max: u64) -> Result<Option<Count>, ()> {
        let path_key = format!("{key}Path");
        match (obj.get(key), obj.get(&path_key)) {
            (Some(_), Some(_)) => {
                self.exclusive(obj, key, &path_key);
                Err(())
            }
            (Some(v), None) => match self.jsonata_number(v, key) {
                Some(e) => e.map(|e| Some(Count::Jsonata(e))).ok_or(()),
                None => self.integer(v, key, code, min, max).map(|n| Some(Count::Fixed(n))).ok_or(()),
            },
            (None, Some(_)) => self.reference_path(obj, &path_key).map(|p| Some(Count::Path(p))).ok_or(()),
            (None, None) => Ok(None),
        }
    }

    fn exclusive(&mut self, obj: Obj<'_>, key: &str, path_key: &str) {
        let (Some(l), Some(p)) = (obj.key(key), obj.key(path_key)) else {
            return;
        };
        let d =
            self.error(codes::MAP_EXCLUSIVE, format!("`{key}` and `{path_key}` cannot both be given"), p.span.clone());
        d.labels.push((l.span.clone(), format!("`{key}` is here")));
        d.help = Some("keep one of them".to_owned());
    }

    /// The DISTRIBUTED fields: `None` when one is invalid (or given to an INLINE Map), else the
    /// lowered fields (`Some(None)` for an INLINE Map).
    pub(super) fn distributed_fields(&mut self, obj: Obj<'_>, mode: Mode) -> Option<Option<Box<DistributedMap>>> {
        let Mode::Distributed(execution_type) = mode else {
            let mut ok = true;
            for field in DISTRIBUTED_ONLY {
                // AWS accepts the tolerance fields on an INLINE Map (recorded: it runs such a
                // Map), so they are a warning here, never a refusal; wfc applies no tolerance
                // to an INLINE Map, as AWS documents them for the DISTRIBUTED Map only.
                if field.starts_with("ToleratedFailure")
                    && let Some(k) = obj.key(field)
                {
                    self.warn(
                        codes::MAP_DISTRIBUTED_ONLY,
                        format!("`{field}` applies to a DISTRIBUTED Map only; this INLINE Map ignores it"),
                        k.span.clone(),
                    )
                    .help = Some(
                        "remove the field, or add `\"ProcessorConfig\": {\"Mode\": \"DISTRIBUTED\", \"ExecutionType\": \
                         \"STANDARD\"}` to the `ItemProcessor` to tolerate failures"
                            .to_owned(),
                    );
                    continue;
                }
                if let Some(k) = obj.key(field) {
                    self.error(
                        codes::MAP_DISTRIBUTED_ONLY,
                        format!("`{field}` is only allowed in a DISTRIBUTED Map"),
                        k.span.clone(),
                    )
                    .help = Some(
                        "add `\"ProcessorConfig\": {\"Mode\": \"DISTRIBUTED\", \"ExecutionType\": \"STANDARD\"}` to the \
                         `ItemProcessor`, or remove the field"
                            .to_owned(),
                    );
                    ok = false;
                }
            }
            return ok.then_some(None);
        };
        let mut ok = true;
        let item_reader = match obj.get("ItemReader") {
            None => None,
            Some(v) => {
                // AWS runs such a Map over the reader's items, even with an `ItemsPath` that
                // selects nothing (recorded: `map_item_reader_base_json_with_items_path`), so
                // this is a warning: the field is ignored, said aloud.
                if let Some(k) = obj.key("ItemsPath") {
                    self.warn(
                        codes::BAD_ITEM_READER,
                        "`ItemsPath` is ignored with `ItemReader`: the items are what the reader reads",
                        k.span.clone(),
                    )
                    .help = Some(
                        "remove `ItemsPath`; to read an array inside a JSON object, use `ReaderConfig.ItemsPointer`"
                            .to_owned(),
                    );
                }
                let r = self.item_reader(v);
                ok &= r.is_some();
                r
            }
        };
        let item_batcher = match obj.get("ItemBatcher") {
            None => None,
            Some(v) => {
                let b = self.item_batcher(v);
                ok &= b.is_some();
                b
            }
        };
        let result_writer = match obj.get("ResultWriter") {
            None => None,
            Some(v) => {
                let w = self.result_writer(v);
                ok &= w.is_some();
                w
            }
        };
        let label = match self.string(obj, "Label") {
            None => {
                ok &= obj.get("Label").is_none();
                None
            }
            Some((s, v)) => {
                let bad = s.chars().find(|c| c.is_whitespace() || c.is_control() || LABEL_FORBIDDEN.contains(c));
                let problem = if s.is_empty() {
                    Some("`Label` cannot be empty".to_owned())
                } else if s.chars().count() > MAX_LABEL_CHARS {
                    Some(format!("`Label` is longer than {MAX_LABEL_CHARS} characters"))
                } else {
                    bad.map(|c| format!("`Label` cannot contain {c:?}"))
                };
                match problem {
                    Some(message) => {
                        self.error(codes::BAD_MAP_LABEL, message, v.span.clone()).help = Some(
                            "a label names the Map Run's child executions: at most 40 characters, no whitespace, \
                             brackets, wildcards or `\"#%\\^|~`$&,;:/`"
                                .to_owned(),
                        );
                        ok = false;
                        None
                    }
                    None => Some(s.to_owned()),
                }
            }
        };
        let tolerated_failure_count =
            self.count(obj, "ToleratedFailureCount", codes::BAD_TOLERATED_FAILURE, 0, MAX_TOLERATED_COUNT);
        let tolerated_failure_percentage = self.percentage(obj);
        let (Ok(tolerated_failure_count), Ok(tolerated_failure_percentage)) =
            (tolerated_failure_count, tolerated_failure_percentage)
        else {
            return None;
        };
        if !ok {
            return None;
        }
        Some(Some(Box::new(DistributedMap {
            execution_type,
            item_reader,
            item_batcher,
            result_writer,
            label,
            tolerated_failure_count,
            tolerated_failure_percentage,
        })))
    }

    /// `ToleratedFailurePercentage` (a number from 0 to 100) or its `Path` form.
    fn percentage(&mut self, obj: Obj<'_>) -> Result<Option<Percentage>, ()> {
        const KEY: &str = "ToleratedFailurePercentage";
        const PATH_KEY: &str = "ToleratedFailurePercentagePath";
        match (obj.get(KEY), obj.get(PATH_KEY)) {
            (Some(_), Some(_)) => {
                self.exclusive(obj, KEY, PATH_KEY);
                Err(())
            }
            (Some(v), None) => match &v.kind {
                ValueKind::String(_) if self.jsonata_number_text(v) => {
                    self.jsonata_number(v, KEY).flatten().map(|e| Some(Percentage::Jsonata(e))).ok_or(())
                }
                ValueKind::Number(n) => match n.as_f64() {
                    Some(f) if (0.0..=100.0).contains(&f) => Ok(Some(Percentage::Fixed(f))),
                    _ => {
                        self.error(
                            codes::BAD_TOLERATED_FAILURE,
                            format!("`{KEY}` must be between 0 and 100, found {n}"),
                            v.span.clone(),
                        );
                        Err(())
                    }
                },
                other => {
                    self.error(
                        codes::WRONG_TYPE,
                        format!("`{KEY}` must be a number, found {}", other.type_name()),
                        v.span.clone(),
                    );
                    Err(())
                }
            },
            (None, Some(_)) => self.reference_path(obj, PATH_KEY).map(|p| Some(Percentage::Path(p))).ok_or(()),
            (None, None) => Ok(None),
        }
    }

    /// `Parameters` (JSONPath) or `Arguments` (JSONata) of an ItemReader or ResultWriter: an
    /// object whose keys are among `allowed` (each literal, `.$` in JSONPath, `{% %}` in
    /// JSONata), with every key of `required`. The field of the other language is refused.
    fn s3_parameters(
        &mut self,
        owner: Obj<'_>,
        what: &str,
        code: &'static str,
        allowed: &[&str],
        required: &[&str],
    ) -> Option<(Option<Template>, Option<JsonataTemplate>)> {
        let (field, other) = if self.jsonata { ("Arguments", "Parameters") } else { ("Parameters", "Arguments") };
        if let Some(k) = owner.key(other) {
            let (lang, this) = if self.jsonata { ("JSONPath", "JSONata") } else { ("JSONata", "JSONPath") };
            self.error(
                codes::WRONG_LANGUAGE_FIELD,
                format!("`{other}` of {what} is a {lang} field; this {this} state uses `{field}`"),
                k.span.clone(),
            )
            .help = Some(format!("rename `{other}` to `{field}`"));
            return None;
        }
        let Some(v) = owner.get(field) else {
            self.error(code, format!("{what} is missing the required field `{field}`"), owner.head()).help =
                Some(format!(
                    "add `\"{field}\": {{{}}}`",
                    required.iter().map(|k| format!("\"{k}\": ...")).collect::<Vec<_>>().join(", ")
                ));
            return None;
        };
        let params = self.object(v, &format!("`{field}` of {what}"))?;
        let mut ok = true;
        for (k, _) in params.entries {
            let base = if self.jsonata { k.name.as_str() } else { k.name.strip_suffix(".$").unwrap_or(&k.name) };
            if !allowed.contains(&base) {
                let d = self.error(
                    codes::MAP_UNSUPPORTED,
                    format!("`{}` is not supported in the `{field}` of {what}", k.name),
                    k.span.clone(),
                );
                d.help = Some(format!("the members {what} takes here: {}", allowed.join(", ")));
                ok = false;
            }
        }
        // Literal values of the S3 request members beyond the object's name are checked here
        // (a value from a path or an expression, when the reader runs).
        for (k, v) in params.entries {
            let literal = if self.jsonata {
                !v.as_str().is_some_and(|s| s.trim_start().starts_with("{%"))
            } else {
                !k.name.ends_with(".$")
            };
            if literal
                && allowed.contains(&k.name.as_str())
                && !["Bucket", "Key", "Prefix"].contains(&k.name.as_str())
                && let Err(message) = check_s3_parameter(&k.name, &v.to_json())
            {
                self.error(code, format!("in the `{field}` of {what}: {message}"), v.span.clone());
                ok = false;
            }
        }
        for key in required {
            let given = params.get(key).is_some() || (!self.jsonata && params.get(&format!("{key}.$")).is_some());
            if !given {
                let form = if self.jsonata { String::new() } else { format!(" (or `{key}.$`)") };
                self.error(code, format!("the `{field}` of {what} need `{key}`{form}"), params.head());
                ok = false;
            }
        }
        if self.jsonata {
            let template = self.jsonata_template(v, field);
            ok.then_some((None, Some(template)))
        } else {
            let template = self.template(v);
            ok.then_some((Some(template), None))
        }
    }

    fn item_reader(&mut self, v: &SpannedValue) -> Option<ItemReader> {
        let obj = self.object(v, "`ItemReader`")?;
        self.check_fields(obj, READER_FIELDS, "`ItemReader`");
        let (resource, rv) = self.required_string(obj, "Resource", "`ItemReader`")?;
        let lists = match resource {
            S3_GET_OBJECT => false,
            S3_LIST_OBJECTS_V2 => true,
            other => {
                self.error(codes::BAD_ITEM_READER, format!("unknown ItemReader resource `{other}`"), rv.span.clone())
                    .help = Some(format!(
                    "use `{S3_GET_OBJECT}` with `Bucket` and `Key`, or `{S3_LIST_OBJECTS_V2}` with `Bucket` and `Prefix`"
                ));
                return None;
            }
        };
        let resource = resource.to_owned();
        let fields = if lists {
            self.s3_parameters(obj, "`ItemReader`", codes::BAD_ITEM_READER, LIST_OBJECTS_PARAMETERS, &["Bucket"])
        } else {
            self.s3_parameters(obj, "`ItemReader`", codes::BAD_ITEM_READER, GET_OBJECT_PARAMETERS, &["Bucket", "Key"])
        };
        let config = self.reader_config(obj, lists);
        let ((parameters, arguments), config) = (fields?, config?);
        // AWS: "VersionId field is not supported for InputType=Parquet".
        if config.input_type == Some(InputType::Parquet)
            && let Some(params) = obj.get(if self.jsonata { "Arguments" } else { "Parameters" })
            && let ValueKind::Object(entries) = &params.kind
            && let Some((k, _)) = entries.iter().find(|(k, _)| k.name.trim_end_matches(".$") == "VersionId")
        {
            self.error(
                codes::BAD_ITEM_READER,
                "`VersionId` is not supported with `\"InputType\": \"PARQUET\"`",
                k.span.clone(),
            )
            .help = Some("remove `VersionId`: AWS reads the current version of a Parquet object".to_owned());
            return None;
        }
        Some(ItemReader { resource, parameters, arguments, config })
    }

    /// `ReaderConfig`: required for `s3:getObject` (its `InputType`), optional for
    /// `s3:listObjectsV2` (whose `InputType` goes with `"Transformation": "LOAD_AND_FLATTEN"`).
    fn reader_config(&mut self, reader: Obj<'_>, lists: bool) -> Option<ReaderConfig> {
        let Some(v) = reader.get("ReaderConfig") else {
            if lists {
                return Some(ReaderConfig {
                    input_type: None,
                    csv_headers: CsvHeaders::FirstRow,
                    max_items: None,
                    csv_delimiter: CsvDelimiter::Comma,
                    items_pointer: None,
                    transformation: ReaderTransformation::None,
                    manifest_type: None,
                });
            }
            self.error(
                codes::BAD_READER_CONFIG,
                "an `s3:getObject` ItemReader needs `ReaderConfig` with `InputType`",
                reader.head(),
            )
            .help = Some("add `\"ReaderConfig\": {\"InputType\": \"JSON\"}` (or \"JSONL\", \"CSV\")".to_owned());
            return None;
        };
        let obj = self.object(v, "`ReaderConfig`")?;
        self.check_fields(obj, READER_CONFIG_FIELDS, "`ReaderConfig`");
        let mut ok = true;
        let transformation = match self.string(obj, "Transformation") {
            None => {
                ok &= obj.get("Transformation").is_none();
                ReaderTransformation::None
            }
            Some(("NONE", _)) => ReaderTransformation::None,
            Some(("LOAD_AND_FLATTEN", _)) => ReaderTransformation::LoadAndFlatten,
            Some((other, tv)) => {
                self.error(
                    codes::BAD_READER_CONFIG,
                    format!("`Transformation` must be \"NONE\" or \"LOAD_AND_FLATTEN\", found \"{other}\""),
                    tv.span.clone(),
                );
                ok = false;
                ReaderTransformation::None
            }
        };
        if !lists && let Some(k) = obj.key("Transformation") {
            self.error(
                codes::BAD_READER_CONFIG,
                "`Transformation` is for the `s3:listObjectsV2` ItemReader, which lists objects",
                k.span.clone(),
            )
            .help = Some(format!("remove it, or list the objects with `{S3_LIST_OBJECTS_V2}`"));
            ok = false;
        }
        let manifest_type = match self.string(obj, "ManifestType") {
            None => {
                ok &= obj.get("ManifestType").is_none();
                None
            }
            Some(("S3_INVENTORY", _)) => Some(ManifestType::S3Inventory),
            Some(("ATHENA_DATA", _)) => Some(ManifestType::AthenaData),
            Some((other, mv)) => {
                self.error(
                    codes::BAD_READER_CONFIG,
                    format!("`ManifestType` must be \"S3_INVENTORY\" or \"ATHENA_DATA\", found \"{other}\""),
                    mv.span.clone(),
                );
                ok = false;
                None
            }
        };
        let input_type = match self.string(obj, "InputType") {
            None if obj.get("InputType").is_some() => None,
            None if lists && transformation == ReaderTransformation::None => Some(None),
            None if lists => {
                let k = obj.key("Transformation").map_or(obj.head(), |k| k.span.clone());
                self.error(
                    codes::BAD_READER_CONFIG,
                    "`\"Transformation\": \"LOAD_AND_FLATTEN\"` needs `InputType`",
                    k,
                )
                .help = Some(
                    "add `\"InputType\": \"JSON\"` (or \"JSONL\", \"CSV\"): how each listed object is read".to_owned(),
                );
                None
            }
            None => {
                self.error(
                    codes::BAD_READER_CONFIG,
                    "`ReaderConfig` is missing the required field `InputType`",
                    obj.head(),
                )
                .help = Some("add `\"InputType\": \"JSON\"` (or \"JSONL\", \"CSV\", \"MANIFEST\")".to_owned());
                None
            }
            Some((t, tv)) => self.input_type(t, tv, lists, transformation, manifest_type).map(Some),
        };
        if manifest_type.is_some() && lists {
            let k = obj.key("ManifestType").map_or(obj.head(), |k| k.span.clone());
            self.error(codes::BAD_READER_CONFIG, "`ManifestType` is for the `s3:getObject` ItemReader", k).help =
                Some(format!("read the manifest object with `{S3_GET_OBJECT}`"));
            ok = false;
        }
        if manifest_type == Some(ManifestType::S3Inventory)
            && input_type.is_some_and(|t| t != Some(InputType::Manifest))
        {
            let k = obj.key("ManifestType").map_or(obj.head(), |k| k.span.clone());
            self.error(
                codes::BAD_READER_CONFIG,
                "`\"ManifestType\": \"S3_INVENTORY\"` needs `\"InputType\": \"MANIFEST\"`",
                k,
            );
            ok = false;
        }
        let input_type = input_type?;
        let items_pointer = match self.string(obj, "ItemsPointer") {
            None => {
                ok &= obj.get("ItemsPointer").is_none();
                None
            }
            Some((p, pv)) => {
                if input_type != Some(InputType::Json) {
                    self.error(
                        codes::BAD_READER_CONFIG,
                        "`ItemsPointer` is only for `\"InputType\": \"JSON\"`: it points into one JSON object",
                        pv.span.clone(),
                    )
                    .help = Some("remove it, or read a JSON object".to_owned());
                    ok = false;
                } else if let Some(problem) = json_pointer_problem(p) {
                    self.error(
                        codes::BAD_READER_CONFIG,
                        format!("`ItemsPointer` is not a JSON Pointer: {problem}"),
                        pv.span.clone(),
                    )
                    .help = Some(
                        "write an RFC 6901 pointer such as \"/data/items\" (`~1` for a `/` in a key, `~0` for `~`)"
                            .to_owned(),
                    );
                    ok = false;
                }
                Some(p.to_owned())
            }
        };
        let csv_delimiter = match self.string(obj, "CSVDelimiter") {
            None => {
                ok &= obj.get("CSVDelimiter").is_none();
                CsvDelimiter::Comma
            }
            Some((d, dv)) => match CsvDelimiter::ALL.iter().find(|(name, _)| *name == d) {
                Some((_, delimiter)) => *delimiter,
                None => {
                    self.error(
                        codes::BAD_READER_CONFIG,
                        format!("`CSVDelimiter` must be \"COMMA\", \"PIPE\", \"SEMICOLON\", \"SPACE\" or \"TAB\", found \"{d}\""),
                        dv.span.clone(),
                    );
                    ok = false;
                    CsvDelimiter::Comma
                }
            },
        };
        let csv_headers = self.csv_headers(obj, input_type);
        let max_items = self.count(obj, "MaxItems", codes::BAD_READER_CONFIG, 0, MAX_READER_ITEMS);
        let (Some(csv_headers), Ok(max_items)) = (csv_headers, max_items) else {
            return None;
        };
        ok.then_some(ReaderConfig {
            input_type,
            csv_headers,
            max_items,
            csv_delimiter,
            items_pointer,
            transformation,
            manifest_type,
        })
    }

    /// `InputType` `t`, checked against the reader: `MANIFEST` reads an S3 Inventory manifest
    /// with `s3:getObject`; `PARQUET` reads Apache Parquet files (one object, each listed one,
    /// or each data file of an Athena manifest).
    fn input_type(
        &mut self,
        t: &str,
        tv: &SpannedValue,
        lists: bool,
        transformation: ReaderTransformation,
        manifest_type: Option<ManifestType>,
    ) -> Option<InputType> {
        let input_type = match t {
            "JSON" => InputType::Json,
            "JSONL" => InputType::Jsonl,
            "CSV" => InputType::Csv,
            "MANIFEST" => InputType::Manifest,
            "PARQUET" => InputType::Parquet,
            other => {
                self.error(
                    codes::BAD_READER_CONFIG,
                    format!("`InputType` must be \"JSON\", \"JSONL\", \"CSV\", \"MANIFEST\" or \"PARQUET\", found \"{other}\""),
                    tv.span.clone(),
                );
                return None;
            }
        };
        let problem = if lists && transformation == ReaderTransformation::None {
            Some((
                "`InputType` on an `s3:listObjectsV2` ItemReader needs `\"Transformation\": \"LOAD_AND_FLATTEN\"`: \
                 without it the items are the listed objects' descriptions",
                "add `\"Transformation\": \"LOAD_AND_FLATTEN\"` to read each listed object, or remove `InputType`",
            ))
        } else if lists && input_type == InputType::Manifest {
            Some(("`\"InputType\": \"MANIFEST\"` reads one manifest object", "read it with `s3:getObject`"))
        } else if input_type == InputType::Manifest && manifest_type == Some(ManifestType::AthenaData) {
            Some((
                "with `\"ManifestType\": \"ATHENA_DATA\"`, `InputType` is the format of the data files the manifest lists",
                "give \"CSV\", \"JSONL\" or \"PARQUET\"",
            ))
        } else if manifest_type == Some(ManifestType::AthenaData) && input_type == InputType::Json {
            Some((
                "an Athena manifest lists CSV, JSONL or Parquet data files",
                "give `\"InputType\": \"CSV\"`, \"JSONL\" or \"PARQUET\"",
            ))
        } else {
            None
        };
        match problem {
            Some((message, help)) => {
                self.error(codes::BAD_READER_CONFIG, message, tv.span.clone()).help = Some(help.to_owned());
                None
            }
            None => Some(input_type),
        }
    }

    fn csv_headers(&mut self, obj: Obj<'_>, input_type: Option<InputType>) -> Option<CsvHeaders> {
        let is_csv = input_type == Some(InputType::Csv);
        if !is_csv {
            let mut ok = true;
            for field in ["CSVHeaderLocation", "CSVHeaders", "CSVDelimiter"] {
                if let Some(k) = obj.key(field) {
                    self.error(
                        codes::BAD_READER_CONFIG,
                        format!("`{field}` is only for `\"InputType\": \"CSV\"`"),
                        k.span.clone(),
                    )
                    .help = Some("remove it, or read a CSV file".to_owned());
                    ok = false;
                }
            }
            return ok.then_some(CsvHeaders::FirstRow);
        }
        let given = match self.string(obj, "CSVHeaderLocation") {
            None if obj.get("CSVHeaderLocation").is_some() => return None,
            None | Some(("FIRST_ROW", _)) => false,
            Some(("GIVEN", _)) => true,
            Some((other, v)) => {
                self.error(
                    codes::BAD_READER_CONFIG,
                    format!("`CSVHeaderLocation` must be \"FIRST_ROW\" or \"GIVEN\", found \"{other}\""),
                    v.span.clone(),
                );
                return None;
            }
        };
        match (given, obj.get("CSVHeaders")) {
            (false, None) => Some(CsvHeaders::FirstRow),
            (false, Some(_)) => {
                let k = obj.key("CSVHeaders").map_or(obj.head(), |k| k.span.clone());
                self.error(codes::BAD_READER_CONFIG, "`CSVHeaders` needs `\"CSVHeaderLocation\": \"GIVEN\"`", k).help =
                    Some(
                        "add `\"CSVHeaderLocation\": \"GIVEN\"`, or remove `CSVHeaders` to read the file's first row"
                            .to_owned(),
                    );
                None
            }
            (true, None) => {
                let k = obj.get("CSVHeaderLocation").map_or(obj.head(), |v| v.span.clone());
                self.error(codes::BAD_READER_CONFIG, "`\"CSVHeaderLocation\": \"GIVEN\"` needs `CSVHeaders`", k).help =
                    Some("add `\"CSVHeaders\": [\"col1\", \"col2\", ...]`".to_owned());
                None
            }
            (true, Some(v)) => {
                let names: Option<Vec<String>> =
                    v.as_array().and_then(|items| items.iter().map(|i| i.as_str().map(str::to_owned)).collect());
                match names {
                    Some(names) if !names.is_empty() => Some(CsvHeaders::Given(names)),
                    _ => {
                        self.error(
                            codes::BAD_READER_CONFIG,
                            "`CSVHeaders` must be a non-empty array of strings",
                            v.span.clone(),
                        );
                        None
                    }
                }
            }
        }
    }

    fn item_batcher(&mut self, v: &SpannedValue) -> Option<ItemBatcher> {
        let obj = self.object(v, "`ItemBatcher`")?;
        self.check_fields(obj, BATCHER_FIELDS, "`ItemBatcher`");
        let max_items_per_batch = self.count(obj, "MaxItemsPerBatch", codes::BAD_ITEM_BATCHER, 1, MAX_READER_ITEMS);
        let max_input_bytes_per_batch =
            self.count(obj, "MaxInputBytesPerBatch", codes::BAD_ITEM_BATCHER, 1, MAX_BATCH_BYTES);
        // In a JSONata state `BatchInput` is a JSONata template (its `{% %}` leaves evaluated
        // against `$states.input` and `$states.context`), or one `{% %}` expression giving the
        // object; in a JSONPath state a Parameters-style template.
        let batch_input = match obj.get("BatchInput") {
            None => Some((None, None)),
            Some(b) if self.jsonata && (b.as_object().is_some() || self.jsonata_number_text(b)) => {
                Some((None, Some(self.jsonata_template(b, "BatchInput"))))
            }
            Some(b) if b.as_object().is_some() => Some((Some(self.template(b)), None)),
            Some(b) => {
                let expected = if self.jsonata { "an object or a `{% %}` expression" } else { "an object" };
                self.error(
                    codes::BAD_ITEM_BATCHER,
                    format!("`BatchInput` must be {expected}, found {}", b.kind.type_name()),
                    b.span.clone(),
                );
                None
            }
        };
        let (Ok(max_items_per_batch), Ok(max_input_bytes_per_batch), Some((batch_input, batch_input_jsonata))) =
            (max_items_per_batch, max_input_bytes_per_batch, batch_input)
        else {
            return None;
        };
        if max_items_per_batch.is_none() && max_input_bytes_per_batch.is_none() {
            self.error(
                codes::BAD_ITEM_BATCHER,
                "`ItemBatcher` needs `MaxItemsPerBatch` or `MaxInputBytesPerBatch` (or their `Path` forms)",
                obj.head(),
            );
            return None;
        }
        Some(ItemBatcher { max_items_per_batch, max_input_bytes_per_batch, batch_input, batch_input_jsonata })
    }

    /// `ResultWriter`: `Resource` with `Parameters` (or `Arguments`) exports the results,
    /// `WriterConfig` shapes them; AWS requires one of the two sets, or both.
    fn result_writer(&mut self, v: &SpannedValue) -> Option<ResultWriter> {
        let obj = self.object(v, "`ResultWriter`")?;
        self.check_fields(obj, WRITER_FIELDS, "`ResultWriter`");
        let writer_config = match obj.get("WriterConfig") {
            None => None,
            Some(c) => Some(self.writer_config(c)?),
        };
        let fields = if self.jsonata { "Arguments" } else { "Parameters" };
        let resource = match self.string(obj, "Resource") {
            None if obj.get("Resource").is_some() => return None,
            None => {
                if let Some(k) = obj.key(fields) {
                    self.error(
                        codes::BAD_RESULT_WRITER,
                        format!("`{fields}` of `ResultWriter` needs `Resource`"),
                        k.span.clone(),
                    )
                    .help = Some(format!("add `\"Resource\": \"{S3_PUT_OBJECT}\"` to export the results"));
                    return None;
                }
                let Some(config) = writer_config else {
                    self.error(
                        codes::BAD_RESULT_WRITER,
                        "`ResultWriter` needs `Resource` and `Parameters` (to export the results), `WriterConfig` (to shape them), or all three",
                        obj.head(),
                    )
                    .help = Some(format!(
                        "add `\"Resource\": \"{S3_PUT_OBJECT}\", \"{fields}\": {{\"Bucket\": ...}}`, or `\"WriterConfig\": {{\"Transformation\": \"COMPACT\"}}`"
                    ));
                    return None;
                };
                if config.output_type == OutputType::Jsonl {
                    let at = obj.key("WriterConfig").map_or(obj.head(), |k| k.span.clone());
                    self.error(
                        codes::BAD_RESULT_WRITER,
                        "`\"OutputType\": \"JSONL\"` formats exported result files; without `Resource` the results are the Map's output, a JSON array",
                        at,
                    )
                    .help = Some(format!("remove `OutputType`, or export with `\"Resource\": \"{S3_PUT_OBJECT}\"` and `{fields}`"));
                    return None;
                }
                return Some(ResultWriter { resource: None, parameters: None, arguments: None, writer_config });
            }
            Some((resource, rv)) => {
                if resource != S3_PUT_OBJECT {
                    self.error(
                        codes::BAD_RESULT_WRITER,
                        format!("unknown ResultWriter resource `{resource}`"),
                        rv.span.clone(),
                    )
                    .help = Some(format!("use `{S3_PUT_OBJECT}` with `Bucket` and `Prefix`"));
                    return None;
                }
                resource.to_owned()
            }
        };
        let (parameters, arguments) =
            self.s3_parameters(obj, "`ResultWriter`", codes::BAD_RESULT_WRITER, &["Bucket", "Prefix"], &["Bucket"])?;
        Some(ResultWriter { resource: Some(resource), parameters, arguments, writer_config })
    }

    /// `WriterConfig`: `OutputType` (default `JSON`) and `Transformation` (default `NONE`, what
    /// a `ResultWriter` without `WriterConfig` writes).
    fn writer_config(&mut self, v: &SpannedValue) -> Option<WriterConfig> {
        let obj = self.object(v, "`WriterConfig`")?;
        self.check_fields(obj, &["OutputType", "Transformation"], "`WriterConfig`");
        let output_type = match self.string(obj, "OutputType") {
            None if obj.get("OutputType").is_some() => None,
            None | Some(("JSON", _)) => Some(OutputType::Json),
            Some(("JSONL", _)) => Some(OutputType::Jsonl),
            Some((other, ov)) => {
                self.error(
                    codes::BAD_RESULT_WRITER,
                    format!("`OutputType` must be \"JSON\" or \"JSONL\", found \"{other}\""),
                    ov.span.clone(),
                );
                None
            }
        };
        let transformation = match self.string(obj, "Transformation") {
            None if obj.get("Transformation").is_some() => None,
            None | Some(("NONE", _)) => Some(WriterTransformation::None),
            Some(("COMPACT", _)) => Some(WriterTransformation::Compact),
            Some(("FLATTEN", _)) => Some(WriterTransformation::Flatten),
            Some((other, tv)) => {
                self.error(
                    codes::BAD_RESULT_WRITER,
                    format!("`Transformation` must be \"NONE\", \"COMPACT\" or \"FLATTEN\", found \"{other}\""),
                    tv.span.clone(),
                );
                None
            }
        };
        Some(WriterConfig { output_type: output_type?, transformation: transformation? })
    }
}

/// Why `p` is not an RFC 6901 JSON Pointer (`""`, or `/`-separated tokens where `~` is only in
/// `~0` and `~1`), or `None`.
fn json_pointer_problem(p: &str) -> Option<String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Some(format!("{p:?} must be empty or start with `/`"));
    }
    for token in p.split('/').skip(1) {
        let mut chars = token.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Some(format!("the token {token:?} has a `~` that is not `~0` or `~1`"));
            }
        }
    }
    None
}
