//! Case files (`*.case.json`): a definition, an input, mocked task responses and the expected end
//! of the execution. The format is specified in docs/case-format.md.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::diff;
use crate::mocks::{MockError, MockSet};
use crate::outcome::{Outcome, STATUSES, seconds_json};

/// One case, resolved against the file it came from.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The case's name (from `name`, else the file name, with `#i` for the i-th of an array).
    pub(crate) name: String,
    /// The file the case came from.
    pub(crate) file: PathBuf,
    /// What the case shows (printed with its failures).
    pub(crate) description: Option<String>,
    /// The workflow definition.
    pub(crate) definition: Definition,
    /// The execution input.
    pub(crate) input: Value,
    /// The mocked task responses.
    pub(crate) mocks: MockSpec,
    /// What must happen.
    pub(crate) expected: Expected,
    /// Why the case is skipped, when it is.
    pub(crate) skip: Option<String>,
    /// Seed for jitter.
    pub(crate) seed: u64,
    /// Scripted answers to `.waitForTaskToken` tasks (see `callback_answers.rs`).
    pub(crate) callbacks: Option<Value>,
    /// The directory a DISTRIBUTED Map's ItemReader reads from (resolved against the case file).
    pub(crate) item_root: Option<PathBuf>,
    /// Serverless Workflow events to deliver: (seconds after the start, CloudEvent).
    pub(crate) events: Vec<(f64, Value)>,
    /// The execution's name, when not the case's name (AWS-recorded cases need a valid one).
    pub(crate) execution_name: Option<String>,
    /// The execution's start instant (RFC 3339); default: the virtual clock's default.
    pub(crate) start_time: Option<String>,
    /// The state machine type (an EXPRESS one keeps no history).
    pub(crate) machine_type: wfc_runtime::MachineType,
    /// An AWS-recorded case's expectations (`expected` then holds only the status).
    pub(crate) recorded: Option<Box<crate::recorded::Recorded>>,
}

/// Where a case's definition is.
#[derive(Debug, Clone)]
pub(crate) enum Definition {
    /// A file, resolved relative to the case file's directory.
    File(PathBuf),
    /// An ASL document written inside the case file.
    Inline(Value),
}

/// A case's mocks, kept as JSON so each engine builds its own fresh [`MockSet`].
#[derive(Debug, Clone)]
pub(crate) enum MockSpec {
    /// wfc's own format (the `mocks` field).
    Wfc(Value),
    /// A Step Functions Local MockConfigFile, one of its test cases.
    StepFunctionsLocal {
        /// The config, read by the parser every engine shares.
        config: std::sync::Arc<wfc_runtime::mock_config::MockConfig>,
        /// The config's file, as the case names it relative to the case file (errors name it).
        file: String,
        /// The `StateMachines` entry, when given.
        state_machine: Option<String>,
        /// The `TestCases` entry.
        test_case: String,
    },
}

impl MockSpec {
    /// Builds the mock set for one execution of the workflow named `workflow_name`.
    pub(crate) fn build(&self, workflow_name: &str) -> Result<MockSet, MockError> {
        match self {
            MockSpec::Wfc(v) => MockSet::from_wfc(v),
            MockSpec::StepFunctionsLocal { config, file, state_machine, test_case } => {
                MockSet::from_mock_config(config, state_machine.as_deref(), workflow_name, test_case)
                    .map_err(|e| MockError(format!("{file}: {e}")))
            }
        }
    }
}

/// The `expected` block: `status` is required, every other field is checked only when present.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expected {
    /// `SUCCEEDED`, `FAILED` or `TIMED_OUT`.
    pub(crate) status: String,
    /// The output (compared exactly, numbers by value). `null` is a real expectation.
    #[serde(default, deserialize_with = "present")]
    pub(crate) output: Option<Value>,
    /// The error name.
    pub(crate) error: Option<String>,
    /// The cause, exactly.
    pub(crate) cause: Option<String>,
    /// Virtual seconds from start to end.
    pub(crate) elapsed_seconds: Option<f64>,
    /// Names of the states entered, in order.
    pub(crate) states_visited: Option<Vec<String>>,
    /// The history's event types, in order.
    pub(crate) trace: Option<Vec<String>>,
    /// Files a DISTRIBUTED Map's ResultWriter must have written, by path under the result root,
    /// each compared as JSON.
    pub(crate) result_files: Option<std::collections::BTreeMap<String, Value>>,
    /// Serverless Workflow: the CloudEvents the execution produced, in order; each expected
    /// event lists the attributes to check (`id` and `time` can be left out).
    pub(crate) produced_events: Option<Vec<Value>>,
}

/// Keeps an explicit `null` as `Some(Null)`: absent means "don't check", null means "must be null".
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: Option<String>,
    description: Option<String>,
    definition: Value,
    #[serde(default = "empty_object")]
    input: Value,
    mocks: Option<Value>,
    mock_config: Option<RawMockConfig>,
    expected: Expected,
    skip: Option<String>,
    seed: Option<u64>,
    callbacks: Option<Value>,
    item_root: Option<String>,
    events: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMockConfig {
    file: String,
    state_machine: Option<String>,
    test_case: String,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// One entry of `events`: a CloudEvent (delivered at the start), or
/// `{"after_seconds": n, "event": {...}}`.
fn delivery(entry: &Value) -> Result<(f64, Value), String> {
    let event = entry.get("event").unwrap_or(entry);
    let after = match entry.get("after_seconds") {
        None => 0.0,
        Some(v) => v.as_f64().filter(|s| *s >= 0.0).ok_or("\"after_seconds\" must be a non-negative number")?,
    };
    if entry.get("event").is_some()
        && let Some(obj) = entry.as_object()
        && let Some(k) = obj.keys().find(|k| *k != "event" && *k != "after_seconds")
    {
        return Err(format!("an \"events\" entry has an unknown field {k:?}"));
    }
    if !event.get("type").is_some_and(Value::is_string) {
        return Err(
            "each \"events\" entry is a CloudEvent with a string \"type\" (or {\"after_seconds\", \"event\"})".into()
        );
    }
    Ok((after, event.clone()))
}

/// Loads every case of one case file (an object is one case, an array several).
pub(crate) fn load_file(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
    if crate::recorded::is_recorded(&doc) {
        return crate::recorded::load(path, doc).map(|case| vec![case]);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let stem = path.file_name().and_then(|n| n.to_str()).unwrap_or("case").trim_end_matches(".case.json").to_owned();
    // Deserialized from the text, not from `doc`, so a misspelt or mistyped field is reported
    // at its line and column.
    let located = |e: serde_json::Error| {
        let message = e.to_string();
        let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m).to_owned();
        format!("{}:{}:{}: {message}", path.display(), e.line(), e.column())
    };
    let items: Vec<(String, RawCase)> = match doc {
        Value::Array(_) => serde_json::from_str::<Vec<RawCase>>(&text)
            .map_err(located)?
            .into_iter()
            .enumerate()
            .map(|(i, raw)| (format!("{stem}#{i}"), raw))
            .collect(),
        _ => vec![(stem, serde_json::from_str::<RawCase>(&text).map_err(located)?)],
    };
    items.into_iter().map(|(default_name, raw)| resolve(raw, default_name, path, dir)).collect()
}

fn resolve(raw: RawCase, default_name: String, file: &Path, dir: &Path) -> Result<Case, String> {
    let name = raw.name.unwrap_or(default_name);
    let at = |msg: String| format!("{} ({name}): {msg}", file.display());
    let definition = match raw.definition {
        Value::String(rel) => Definition::File(dir.join(rel)),
        v @ Value::Object(_) => Definition::Inline(v),
        other => {
            return Err(at(format!("\"definition\" must be a relative path or an inline ASL object, found {other}")));
        }
    };
    if !STATUSES.contains(&raw.expected.status.as_str()) {
        return Err(at(format!(
            "expected.status must be one of {}, found {:?}",
            STATUSES.join(", "),
            raw.expected.status
        )));
    }
    if raw.expected.status == "SUCCEEDED" && (raw.expected.error.is_some() || raw.expected.cause.is_some()) {
        return Err(at("a SUCCEEDED case cannot expect an error or cause".into()));
    }
    if raw.expected.status != "SUCCEEDED" && raw.expected.output.is_some() {
        return Err(at("only a SUCCEEDED case can expect an output".into()));
    }
    if let Some(callbacks) = &raw.callbacks {
        crate::callback_answers::CallbackAnswers::from_json(callbacks).map_err(at)?;
    }
    // A callback state's handler only hands the token on: without a mock of its own it returns
    // null (its result is ignored anyway) instead of failing with Wfc.NoMock.
    let with_callback_defaults = |mut m: Value| {
        if let (Value::Object(map), Some(Value::Object(cbs))) = (&mut m, &raw.callbacks) {
            for state in cbs.keys() {
                map.entry(state.clone()).or_insert_with(|| serde_json::json!({ "return": null }));
            }
        }
        m
    };
    let mocks = match (raw.mocks, raw.mock_config) {
        (Some(_), Some(_)) => return Err(at("use either \"mocks\" or \"mock_config\", not both".into())),
        (Some(m), None) => MockSpec::Wfc(with_callback_defaults(m)),
        (None, None) => MockSpec::Wfc(with_callback_defaults(empty_object())),
        (None, Some(cfg)) => {
            let cfg_path = dir.join(&cfg.file);
            let text = std::fs::read_to_string(&cfg_path).map_err(|e| at(format!("{}: {e}", cfg_path.display())))?;
            let config = wfc_runtime::mock_config::MockConfig::parse(&text)
                .map_err(|e| at(format!("{}: {e}", cfg_path.display())))?;
            MockSpec::StepFunctionsLocal {
                config: std::sync::Arc::new(config),
                file: cfg_path.display().to_string(),
                state_machine: cfg.state_machine,
                test_case: cfg.test_case,
            }
        }
    };
    // Surface malformed mocks when the file is loaded, not when the case first runs.
    mocks.build("").or_else(|e| match &mocks {
        // Machine selection may legitimately depend on the workflow name, known only later.
        MockSpec::StepFunctionsLocal { state_machine: None, .. } if e.0.contains("--state-machine") => {
            Ok(MockSet::empty())
        }
        _ => Err(at(e.0)),
    })?;
    let mut events = Vec::new();
    for e in raw.events.unwrap_or_default() {
        events.push(delivery(&e).map_err(&at)?);
    }
    Ok(Case {
        events,
        name,
        file: file.to_owned(),
        description: raw.description,
        definition,
        input: raw.input,
        mocks,
        expected: raw.expected,
        skip: raw.skip,
        seed: raw.seed.unwrap_or(0),
        callbacks: raw.callbacks,
        item_root: raw.item_root.map(|rel| dir.join(rel)),
        execution_name: None,
        start_time: None,
        machine_type: wfc_runtime::MachineType::Standard,
        recorded: None,
    })
}

/// Every case file under `paths` (files are taken as given; directories recursively), sorted so
/// runs are reproducible: `*.case.json`, and the other `*.json` files that are AWS-recorded cases
/// (../shared/conformance/asl-aws's format, recognised by their fields).
pub(crate) fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = entry.path();
            let ty = entry.file_type().map_err(|e| format!("{}: {e}", path.display()))?;
            if ty.is_dir() {
                walk(&path, out)?;
            } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                if name.ends_with(".case.json") || (name.ends_with(".json") && is_recorded_file(&path)) {
                    out.push(path);
                }
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Compares an outcome with the expectation; each mismatch is one human-readable line.
pub(crate) fn check(expected: &Expected, actual: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    if expected.status != actual.status {
        let detail = match (&actual.error, &actual.cause) {
            (Some(e), Some(c)) => format!(" ({e}: {c})"),
            (Some(e), None) => format!(" ({e})"),
            _ => String::new(),
        };
        problems.push(format!("status: expected {}, got {}{detail}", expected.status, actual.status));
    }
    if let Some(want) = &expected.output {
        match &actual.output {
            Some(got) => {
                if let Some(d) = diff::first_difference(want, got) {
                    problems.push(format!("output {}", d.describe()));
                }
            }
            None => problems.push(format!("output: expected {}, got no output", diff::short(want))),
        }
    }
    for (field, want, got) in [("error", &expected.error, &actual.error), ("cause", &expected.cause, &actual.cause)] {
        if let Some(want) = want
            && got.as_deref() != Some(want.as_str())
        {
            problems.push(format!(
                "{field}: expected {want:?}, got {}",
                got.as_deref().map_or("none".into(), |g| format!("{g:?}"))
            ));
        }
    }
    if let Some(want) = expected.elapsed_seconds {
        match actual.elapsed_seconds {
            Some(got) if (got - want).abs() < 1e-6 => {}
            Some(got) => {
                problems.push(format!("elapsed_seconds: expected {}, got {}", seconds_json(want), seconds_json(got)))
            }
            None => problems.push("elapsed_seconds: expected a value, but the run was not on virtual time".into()),
        }
    }
    if let Some(want) = &expected.produced_events {
        let got: Vec<&Value> = actual
            .history
            .iter()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("EventProduced"))
            .filter_map(|e| e.get("details").and_then(|d| d.get("event")))
            .collect();
        if got.len() != want.len() {
            problems.push(format!("produced_events: expected {} events, got {}", want.len(), got.len()));
        }
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            for (k, v) in w.as_object().into_iter().flatten() {
                match g.get(k) {
                    Some(gv) => {
                        if let Some(d) = diff::first_difference(v, gv) {
                            problems.push(format!("produced_events[{i}].{k} {}", d.describe()));
                        }
                    }
                    None => problems.push(format!("produced_events[{i}]: the event has no attribute {k:?}")),
                }
            }
        }
    }
    if let Some(want) = &expected.states_visited {
        compare_lists("states_visited", want, &actual.states_visited(), &mut problems);
    }
    if let Some(want) = &expected.trace {
        compare_lists("trace", want, &actual.event_types(), &mut problems);
    }
    problems
}

/// Whether `path` holds an AWS-recorded case (a JSON object with `snapshot_key` and
/// `service_class`); definitions and mock files next to case files are not.
fn is_recorded_file(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|doc| crate::recorded::is_recorded(&doc))
}

/// Compares two lists of names, reporting the first difference as one line.
pub(crate) fn compare_lists(field: &str, want: &[String], got: &[String], problems: &mut Vec<String>) {
    if want == got {
        return;
    }
    let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let show = |xs: &[String]| xs.get(at).map_or("(end)".to_owned(), |s| format!("{s:?}"));
    problems.push(format!(
        "{field}: first difference at index {at}: expected {}, got {} (expected {} entries, got {}: {})",
        show(want),
        show(got),
        want.len(),
        got.len(),
        got.join(", ")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(status: &str, output: Option<Value>) -> Outcome {
        Outcome {
            status: status.into(),
            output,
            error: None,
            cause: None,
            elapsed_seconds: Some(2.0),
            history: vec![
                json!({"type": "ExecutionStarted"}),
                json!({"type": "PassStateEntered", "details": {"name": "A"}}),
            ],
        }
    }

    fn expected(v: Value) -> Expected {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn matching_outcome_has_no_problems() {
        let e = expected(json!({"status": "SUCCEEDED", "output": {"x": 1}, "elapsed_seconds": 2,
            "states_visited": ["A"], "trace": ["ExecutionStarted", "PassStateEntered"]}));
        assert!(check(&e, &outcome("SUCCEEDED", Some(json!({"x": 1})))).is_empty());
    }

    #[test]
    fn each_field_is_checked() {
        let e = expected(json!({"status": "SUCCEEDED", "output": {"x": 1}, "elapsed_seconds": 3,
            "states_visited": ["B"], "trace": ["ExecutionStarted"]}));
        let problems = check(&e, &outcome("SUCCEEDED", Some(json!({"x": 2}))));
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].contains("/x"));
        let e = expected(json!({"status": "FAILED", "error": "E"}));
        assert_eq!(check(&e, &outcome("SUCCEEDED", None)).len(), 2);
    }

    #[test]
    fn explicit_null_output_is_checked() {
        let e = expected(json!({"status": "SUCCEEDED", "output": null}));
        assert_eq!(e.output, Some(Value::Null));
        assert_eq!(check(&e, &outcome("SUCCEEDED", Some(json!(1)))).len(), 1);
        assert!(expected(json!({"status": "SUCCEEDED"})).output.is_none());
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wfc-case-tests-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        dir
    }

    #[test]
    fn loads_arrays_with_default_names_and_relative_definitions() {
        let dir = scratch("load");
        let file = dir.join("sub").join("pair.case.json");
        std::fs::write(
            &file,
            json!([
                {"definition": "../d.asl.json", "expected": {"status": "SUCCEEDED"}},
                {"name": "inline", "definition": {"StartAt": "A", "States": {}}, "input": [1],
                 "mocks": {"A": {"return": 1}}, "expected": {"status": "FAILED", "error": "E"}, "skip": "later"}
            ])
            .to_string(),
        )
        .unwrap();
        let cases = load_file(&file).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].name, "pair#0");
        assert!(matches!(&cases[0].definition, Definition::File(p) if p == &dir.join("sub").join("../d.asl.json")));
        assert_eq!(cases[0].input, json!({}));
        assert_eq!(cases[1].name, "inline");
        assert!(matches!(cases[1].definition, Definition::Inline(_)));
        assert_eq!(cases[1].skip.as_deref(), Some("later"));
        assert_eq!(discover(std::slice::from_ref(&dir)).unwrap(), vec![file.clone()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rejects_inconsistent_cases() {
        let dir = scratch("reject");
        let file = dir.join("bad.case.json");
        for (doc, needle) in [
            (json!({"definition": "d", "expected": {"status": "DONE"}}), "expected.status"),
            (json!({"definition": "d", "expected": {"status": "SUCCEEDED", "error": "E"}}), "cannot expect an error"),
            (json!({"definition": "d", "expected": {"status": "FAILED", "output": 1}}), "only a SUCCEEDED"),
            (json!({"definition": 5, "expected": {"status": "FAILED"}}), "\"definition\""),
            (json!({"definition": "d", "mocks": {"A": []}, "expected": {"status": "FAILED"}}), "empty"),
            (
                json!({"definition": "d", "mocks": {}, "mock_config": {"file": "m", "test_case": "t"}, "expected": {"status": "FAILED"}}),
                "not both",
            ),
            (json!({"definition": "d", "expected": {"status": "FAILED"}, "extra": 1}), "unknown field"),
        ] {
            std::fs::write(&file, doc.to_string()).unwrap();
            let err = load_file(&file).unwrap_err();
            assert!(err.contains(needle), "{doc}: {err}");
        }
        // A misspelt field is located.
        std::fs::write(&file, "[{\"definition\": \"d\", \"expected\": {\"status\": \"FAILED\"}},\n {\"definition\": \"d\",\n  \"expectd\": {}}]").unwrap();
        let err = load_file(&file).unwrap_err();
        assert!(err.starts_with(&format!("{}:3:", file.display())), "{err}");
        assert!(err.contains(": unknown field `expectd`"), "{err}");
        std::fs::write(&file, "{not json").unwrap();
        assert!(load_file(&file).unwrap_err().contains("not valid JSON"));
        assert!(discover(&[dir.join("missing")]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unknown_expected_fields_are_rejected() {
        assert!(serde_json::from_value::<Expected>(json!({"status": "FAILED", "eror": "x"})).is_err());
    }
}

/// A fresh directory for one execution's ResultWriter files, removed when dropped.
pub(crate) struct ResultRoot(PathBuf);

impl ResultRoot {
    /// Creates `wfc-results-<pid>-<n>` in the system's temporary directory (created lazily by
    /// the writer; only the name is reserved here).
    pub(crate) fn new() -> ResultRoot {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wfc-results-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::create_dir_all(&dir);
        ResultRoot(dir)
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ResultRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compares `expected.result_files` with the files under `root`: each listed file must exist
/// and hold the expected JSON.
pub(crate) fn check_result_files(expected: &Expected, root: &Path) -> Vec<String> {
    let Some(files) = &expected.result_files else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for (rel, want) in files {
        let path = root.join(rel);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("result_files[{rel:?}]: the file was not written ({e})"));
                continue;
            }
        };
        // A JSON Lines file (a ResultWriter's `"OutputType": "JSONL"`) compares as the array of
        // its lines.
        let parsed = if rel.ends_with(".jsonl") {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(serde_json::from_str::<Value>)
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        } else {
            serde_json::from_str::<Value>(&text)
        };
        match parsed {
            Ok(got) => {
                if let Some(d) = diff::first_difference(want, &got) {
                    problems.push(format!("result_files[{rel:?}] {}", d.describe()));
                }
            }
            Err(e) => problems.push(format!("result_files[{rel:?}]: not valid JSON: {e}")),
        }
    }
    problems
}
