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
    };
    if let Some(reason) = &case.skip {
        return report(Verdict::Skipped(reason.clone()), vec![]);
    }
    let def = match cache.get(&definition_key(case)) {
        Some(Ok(def)) => def,
        Some(Err(lines)) => return report(Verdict::Failed(lines.clone()), vec![]),
        None => return report(Verdict::Failed(vec!["internal error: the definition was not loaded".into()]), vec![]),
    };
    let mut problems = Vec::new();
    let mut outcomes = Vec::new();
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
            name: Some(case.name.clone()),
            callbacks: case.callbacks.clone(),
            item_root: case.item_root.clone(),
            result_root: Some(result_root.path().to_owned()),
            history_level: wfc_runtime::HistoryLevel::Full,
            machine_type: wfc_runtime::MachineType::Standard,
            events: case.events.clone(),
            passes: def.passes,
        };
        match engine::execute(engine, &execution) {
            Ok(outcome) => {
                let prefix = if engines.len() > 1 { format!("[{}] ", engine_name(engine)) } else { String::new() };
                problems.extend(case::check(&case.expected, &outcome).into_iter().map(|p| format!("{prefix}{p}")));
                problems.extend(
                    case::check_result_files(&case.expected, result_root.path())
                        .into_iter()
                        .map(|p| format!("{prefix}{p}")),
                );
                outcomes.push((engine, outcome));
            }
            Err(e) => problems.push(format!("[{}] the engine could not run the case: {e}", engine_name(engine))),
        }
    }
    // With both engines, the results must agree even where the case does not pin them down.
    if let [(a_engine, a), (b_engine, b)] = outcomes.as_slice() {
        let (a_name, b_name) = (engine_name(*a_engine), engine_name(*b_engine));
        let name_sides = |d: diff::Difference| d.describe_as(a_name, b_name);
        if let Some(d) = diff::first_difference(&a.to_json(false), &b.to_json(false)) {
            problems.push(format!("results differ between {a_name} and {b_name}: {}", name_sides(d)));
        }
        if let Some(d) = diff::first_difference(&Value::Array(a.history.clone()), &Value::Array(b.history.clone())) {
            problems.push(format!("histories differ between {a_name} and {b_name}: {}", name_sides(d)));
        }
    }
    let verdict = if problems.is_empty() { Verdict::Passed } else { Verdict::Failed(problems) };
    report(verdict, outcomes)
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
            match status {
                "failed" => v["problems"] = detail,
                "skipped" => v["reason"] = detail,
                _ => {}
            }
            v
        })
        .collect();
    json!({"passed": counts.0, "failed": counts.1, "skipped": counts.2, "cases": cases})
}

/// `wfc test PATH...`.
pub(crate) fn run(args: &TestArgs) -> Exit {
    let files = match case::discover(&args.paths) {
        Ok(f) => f,
        Err(e) => return fatal(e),
    };
    if files.is_empty() {
        eprintln!("warning: no case files (*.case.json) under the given paths");
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
        let word = match &r.verdict {
            Verdict::Passed => "ok",
            Verdict::Failed(_) => "FAILED",
            Verdict::Skipped(_) => "skipped",
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
    let _ = writeln!(out, "\n{passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 { Exit::Success } else { Exit::Failure }
}
