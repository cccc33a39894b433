//! `wfc test`: run case files on virtual time and report passes, failures and skips.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::case::{self, Case, Definition};
use crate::check::DefinitionText;
use crate::engine::{self, Execution};
use crate::outcome::Outcome;
use crate::{EngineChoice, Exit, TestArgs, TestEngine, diff, fatal};

/// What happened to one case.
#[derive(Debug)]
enum Verdict {
    Passed,
    Failed(Vec<String>),
    Skipped(String),
}

/// One case's result, for the console and the JSON report.
#[derive(Debug)]
struct CaseReport {
    name: String,
    file: PathBuf,
    description: Option<String>,
    verdict: Verdict,
    outcomes: Vec<(EngineChoice, Outcome)>,
    /// For an AWS-recorded case that ran: how it compared, by result and by trace.
    recorded: Option<RecordedVerdict>,
}

/// How an AWS-recorded case compared with its recording, on every engine that ran it.
#[derive(Debug, Clone, Default)]
struct RecordedVerdict {
    /// Status, output or error and cause, and states visited agree.
    result: bool,
    /// The recording has a trace (an EXPRESS or older recording may not).
    has_trace: bool,
    /// The sequence of history event types agrees.
    trace: bool,
    /// The recorded details of every event agree too.
    trace_details: bool,
    /// The first difference in the details, when they differ (information, not a failure).
    details_problem: Option<String>,
}

/// A loaded definition, shared by every case that names the same file.
struct LoadedDefinition {
    text: DefinitionText,
    workflow: wfc_ir::Workflow,
    /// The optimizer passes `workflow` was loaded with (the compiled engine builds with them too).
    passes: wfc_core::optimize::Passes,
}

fn engine_name(e: EngineChoice) -> &'static str {
    match e {
        EngineChoice::Interp => "interp",
        EngineChoice::Compiled => "compiled",
    }
}

/// Loads a case's definition; an invalid one is reported with its diagnostics (no color: the text
/// is embedded in the failure report).
fn load_definition(case: &Case, passes: wfc_core::optimize::Passes) -> Result<LoadedDefinition, Vec<String>> {
    let text = match &case.definition {
        Definition::File(path) => DefinitionText::read(path).map_err(|e| vec![e])?,
        Definition::Inline(doc) => DefinitionText {
            path: format!("{}#definition", case.file.display()),
            text: serde_json::to_string_pretty(doc).map_err(|e| vec![e.to_string()])?,
        },
    };
    match text.load_with(passes) {
        Ok(loaded) => Ok(LoadedDefinition { workflow: loaded.workflow, text, passes }),
        Err(diags) => {
            let mut lines = vec![format!("the definition {} is invalid:", text.path)];
            lines.extend(diags.render(false).lines().map(str::to_owned));
            if diags.items.is_empty() {
                lines.push("(rejected without diagnostics)".into());
            }
            Err(lines)
        }
    }
}

/// The key a case's definition is cached under.
fn definition_key(case: &Case) -> String {
    match &case.definition {
        Definition::File(p) => p.display().to_string(),
        Definition::Inline(v) => format!("{}#{v}", case.file.display()),
    }
}

fn run_case(
    case: &Case,
    engines: &[EngineChoice],
    cache: &HashMap<String, Result<LoadedDefinition, Vec<String>>>,
) -> CaseReport {
    let report = |verdict, outcomes| CaseReport {
        name: case.name.clone(),
        file: case.file.clone(),
        description: case.description.clone(),
        verdict,
        outcomes,
        recorded: None,
    };
    if let Some(reason) = &case.skip {
        return report(Verdict::Skipped(reason.clone()), vec![]);
    }
    // A recorded case that cannot run fails by result and by trace.
    let not_run =
        case.recorded.as_ref().map(|r| RecordedVerdict { has_trace: r.trace.is_some(), ..Default::default() });
    let def = match cache.get(&definition_key(case)) {
        Some(Ok(def)) => def,
        Some(Err(lines)) => return CaseReport { recorded: not_run, ..report(Verdict::Failed(lines.clone()), vec![]) },
        None => return report(Verdict::Failed(vec!["internal error: the definition was not loaded".into()]), vec![]),
    };
    let mut problems = Vec::new();
    let mut outcomes = Vec::new();
    let mut recorded = case.recorded.as_ref().map(|r| RecordedVerdict {
        result: true,
        has_trace: r.trace.is_some(),
        trace: r.trace.is_some(),
        trace_details: r.trace.is_some(),
        details_problem: None,
    });
    // A case file's mocks key that answers no Task is most likely misspelt (an AWS-recorded
    // case's mocks are generated from its recording).
    if case.recorded.is_none()
        && let Ok(mocks) = case.mocks.build(&def.workflow.name)
    {
        let place = format!("{} (case {:?})", case.file.display(), case.name);
        crate::unmatched::warn("mocks key", &place, mocks.keys(), &[&def.workflow]);
    }
    for &engine in engines {
        let mocks = match case.mocks.build(&def.workflow.name) {
            Ok(m) => m,
            Err(e) => return report(Verdict::Failed(vec![format!("mocks: {e}")]), vec![]),
        };
        // Each run writes its ResultWriter files to a fresh directory, removed afterwards.
        let result_root = case::ResultRoot::new();
        let execution = Execution {
            workflow: &def.workflow,
            definition: &def.text,
            input: case.input.clone(),
            mocks,
            virtual_time: true,
            seed: case.seed,
            name: Some(case.execution_name.clone().unwrap_or_else(|| case.name.clone())),
            callbacks: case.callbacks.clone(),
            item_root: case.item_root.clone(),
            result_root: Some(result_root.path().to_owned()),
            // An EXPRESS state machine keeps no history, as AWS keeps none for it.
            history_level: if case.machine_type == wfc_runtime::MachineType::Standard {
                wfc_runtime::HistoryLevel::Full
            } else {
                wfc_runtime::HistoryLevel::Express
            },
            machine_type: case.machine_type,
            events: case.events.clone(),
            passes: def.passes,
            start_time: case.start_time.clone(),
            // A recorded case runs under its own name in the recordings' account, so its ARNs
            // have AWS's shape; a case file's under its definition's name.
            state_machine_name: case.recorded.as_ref().and(case.execution_name.clone()),
            account: case
                .recorded
                .as_ref()
                .map(|_| (crate::recorded::REGION.to_owned(), crate::recorded::ACCOUNT.to_owned())),
        };
        match engine::execute(engine, &execution) {
            Ok(outcome) => {
                let prefix = if engines.len() > 1 { format!("[{}] ", engine_name(engine)) } else { String::new() };
                if let (Some(rec), Some(verdict)) = (&case.recorded, recorded.as_mut()) {
                    let found = check_recorded(rec, &outcome, verdict);
                    problems.extend(found.into_iter().map(|p| format!("{prefix}{p}")));
                    outcomes.push((engine, outcome));
                    continue;
                }
                problems.extend(case::check(&case.expected, &outcome).into_iter().map(|p| format!("{prefix}{p}")));
                problems.extend(
                    case::check_result_files(&case.expected, result_root.path())
                        .into_iter()
                        .map(|p| format!("{prefix}{p}")),
                );
                outcomes.push((engine, outcome));
            }
            Err(e) => {
                problems.push(format!("[{}] the engine could not run the case: {e}", engine_name(engine)));
                if let Some(v) = recorded.as_mut() {
                    (v.result, v.trace, v.trace_details) = (false, false, false);
                }
            }
        }
    }
    // With both engines, the results must agree even where the case does not pin them down.
    if let [(a_engine, a), (b_engine, b)] = outcomes.as_slice() {
        let (a_name, b_name) = (engine_name(*a_engine), engine_name(*b_engine));
        let name_sides = |d: diff::Difference| d.describe_as(a_name, b_name);
        if let Some(d) = diff::first_difference(&a.to_json(false), &b.to_json(false)) {
            problems.push(format!("results differ between {a_name} and {b_name}: {}", name_sides(d)));
            if let Some(v) = recorded.as_mut() {
                v.result = false;
            }
        }
        if let Some(d) = diff::first_difference(&Value::Array(a.history.clone()), &Value::Array(b.history.clone())) {
            problems.push(format!("histories differ between {a_name} and {b_name}: {}", name_sides(d)));
            if let Some(v) = recorded.as_mut() {
                v.trace = false;
            }
        }
    }
    let verdict = if problems.is_empty() { Verdict::Passed } else { Verdict::Failed(problems) };
    CaseReport { recorded, ..report(verdict, outcomes) }
}

/// Compares one engine's outcome with an AWS-recorded case: the result, then the trace's event
/// types (failures), then its details (information: `verdict.details_problem`).
fn check_recorded(rec: &crate::recorded::Recorded, outcome: &Outcome, verdict: &mut RecordedVerdict) -> Vec<String> {
    let mut matcher = crate::placeholders::Matcher::new(&rec.placeholders);
    let mut problems = crate::recorded::check_result(rec, outcome, &mut matcher);
    if !problems.is_empty() {
        verdict.result = false;
    }
    if let Some(trace) = &rec.trace {
        match crate::recorded_trace::compare_types(trace, &outcome.history, rec.parallel_sorted) {
            Some(p) => {
                verdict.trace = false;
                verdict.trace_details = false;
                problems.push(p);
            }
            None => {
                if let Some(p) =
                    crate::recorded_trace::compare_details(trace, &outcome.history, rec.parallel_sorted, &mut matcher)
                {
                    verdict.trace_details = false;
                    verdict.details_problem.get_or_insert(p);
                }
            }
        }
    }
    problems
}

fn report_json(reports: &[CaseReport], counts: (usize, usize, usize)) -> Value {
    let cases: Vec<Value> = reports
        .iter()
        .map(|r| {
            let (status, detail) = match &r.verdict {
                Verdict::Passed => ("passed", json!(null)),
                Verdict::Failed(p) => ("failed", json!(p)),
                Verdict::Skipped(reason) => ("skipped", json!(reason)),
            };
            let outcomes: serde_json::Map<String, Value> =
                r.outcomes.iter().map(|(e, o)| (engine_name(*e).to_owned(), o.to_json(false))).collect();
            let mut v =
                json!({"name": r.name, "file": r.file.display().to_string(), "status": status, "outcomes": outcomes});
            if let Some(rec) = &r.recorded {
                let word = |ok: bool| if ok { "passed" } else { "failed" };
                v["result"] = json!(word(rec.result));
                v["trace"] = if rec.has_trace { json!(word(rec.trace)) } else { Value::Null };
                v["trace_details"] = if rec.has_trace { json!(word(rec.trace_details)) } else { Value::Null };
                if let Some(p) = &rec.details_problem {
                    v["trace_details_difference"] = json!(p);
                }
            }
            match status {
                "failed" => v["problems"] = detail,
                "skipped" => v["reason"] = detail,
                _ => {}
            }
            v
        })
        .collect();
    json!({"passed": counts.0, "failed": counts.1, "skipped": counts.2, "recorded": recorded_counts(reports).to_json(), "cases": cases})
}

/// The AWS-recorded cases' figures: by result, by trace and by trace details.
#[derive(Debug, Default)]
struct RecordedCounts {
    ran: usize,
    result: usize,
    with_trace: usize,
    trace: usize,
    trace_details: usize,
    skipped: usize,
}

impl RecordedCounts {
    fn to_json(&self) -> Value {
        json!({
            "ran": self.ran,
            "skipped": self.skipped,
            "result_passed": self.result,
            "with_trace": self.with_trace,
            "trace_passed": self.trace,
            "trace_details_passed": self.trace_details,
        })
    }
}

fn recorded_counts(reports: &[CaseReport]) -> RecordedCounts {
    let mut c = RecordedCounts::default();
    for r in reports {
        if let Some(v) = &r.recorded {
            c.ran += 1;
            c.result += usize::from(v.result);
            c.with_trace += usize::from(v.has_trace);
            c.trace += usize::from(v.has_trace && v.trace);
            c.trace_details += usize::from(v.has_trace && v.trace_details);
        } else if matches!(r.verdict, Verdict::Skipped(_)) && is_recorded_report(r) {
            c.skipped += 1;
        }
    }
    c
}

/// Whether a report is of an AWS-recorded case (its file is not a `.case.json`).
fn is_recorded_report(r: &CaseReport) -> bool {
    !r.file.to_string_lossy().ends_with(".case.json")
}

/// `wfc test PATH...`.
pub(crate) fn run(args: &TestArgs) -> Exit {
    let files = match case::discover(&args.paths) {
        Ok(f) => f,
        Err(e) => return fatal(e),
    };
    if files.is_empty() {
        eprintln!("warning: no case files (*.case.json or AWS-recorded *.json) under the given paths");
    }
    let engines: Vec<EngineChoice> = match args.engine {
        TestEngine::Interp => vec![EngineChoice::Interp],
        TestEngine::Compiled => vec![EngineChoice::Compiled],
        TestEngine::Both => vec![EngineChoice::Interp, EngineChoice::Compiled],
    };
    let matches = |name: &str, file: &std::path::Path| {
        args.filter.as_deref().is_none_or(|f| name.contains(f) || file.display().to_string().contains(f))
    };
    let mut reports = Vec::new();
    let mut cases = Vec::new();
    for file in &files {
        match case::load_file(file) {
            Ok(loaded) => cases.extend(loaded.into_iter().filter(|c| matches(&c.name, &c.file))),
            // A malformed case file is a failing case, not a reason to stop the others.
            Err(e) => {
                let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_owned();
                if matches(&name, file) {
                    let _ = writeln!(std::io::stdout(), "test {name} ... FAILED");
                    reports.push(CaseReport {
                        name,
                        file: file.clone(),
                        description: None,
                        verdict: Verdict::Failed(vec![e]),
                        outcomes: vec![],
                        recorded: None,
                    });
                }
            }
        }
    }
    // Load each definition once, however many cases use it.
    let mut cache: HashMap<String, Result<LoadedDefinition, Vec<String>>> = HashMap::new();
    for c in cases.iter().filter(|c| c.skip.is_none()) {
        cache.entry(definition_key(c)).or_insert_with(|| load_definition(c, args.opt.passes()));
    }
    if engines.contains(&EngineChoice::Compiled) {
        // Build every definition into one program up front, so each case does not pay a build.
        let defs: Vec<(&DefinitionText, &wfc_ir::Workflow)> =
            cache.values().filter_map(|d| d.as_ref().ok()).map(|d| (&d.text, &d.workflow)).collect();
        if let Err(e) = engine::prepare_compiled(&defs, args.opt.passes()) {
            return fatal(e);
        }
    }
    let mut out = std::io::stdout().lock();
    for c in &cases {
        let r = run_case(c, &engines, &cache);
        let word = match (&r.verdict, &r.recorded) {
            (Verdict::Passed, _) => "ok",
            (Verdict::Failed(_), Some(v)) if v.result => "FAILED (trace)",
            (Verdict::Failed(_), _) => "FAILED",
            (Verdict::Skipped(_), _) => "skipped",
        };
        let _ = writeln!(out, "test {} ... {word}", r.name);
        reports.push(r);
    }
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failures = String::new();
    let mut skips = String::new();
    for r in &reports {
        match &r.verdict {
            Verdict::Passed => passed += 1,
            Verdict::Failed(problems) => {
                failed += 1;
                failures.push_str(&format!("\n---- {} ({}) ----\n", r.name, r.file.display()));
                if let Some(about) = &r.description {
                    failures.push_str(&format!("    ({about})\n"));
                }
                for p in problems {
                    failures.push_str(&format!("    {p}\n"));
                }
            }
            Verdict::Skipped(reason) => {
                skipped += 1;
                skips.push_str(&format!("    {} ({}): {reason}\n", r.name, r.file.display()));
            }
        }
    }
    if !failures.is_empty() {
        let _ = write!(out, "\nfailures:\n{failures}");
    }
    if !skips.is_empty() {
        let _ = write!(out, "\nskipped:\n{skips}");
    }
    if let Some(path) = &args.json {
        let doc = report_json(&reports, (passed, failed, skipped));
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            let _ = writeln!(out, "\n{passed} passed, {failed} failed, {skipped} skipped");
            return fatal(format!("cannot write {}: {e}", path.display()));
        }
    }
    let rec = recorded_counts(&reports);
    if rec.ran > 0 {
        let _ = writeln!(
            out,
            "\nAWS-recorded cases: {} ran, {} skipped; by result {}/{}; by trace (event types) {}/{} with a trace; trace details {}/{}",
            rec.ran, rec.skipped, rec.result, rec.ran, rec.trace, rec.with_trace, rec.trace_details, rec.with_trace
        );
    }
    let _ = writeln!(out, "\n{passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 { Exit::Success } else { Exit::Failure }
}
