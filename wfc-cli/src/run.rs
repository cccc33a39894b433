//! `wfc run`: execute a definition once and print how it ended as one JSON object.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::check::{DefinitionText, definition_error};
use crate::engine::{self, Execution};
use crate::mocks::{MockFormat, MockSet};
use crate::{ColorChoice, Exit, RunArgs, fatal};

/// Reads the execution input from `--input` or `--input-file` (default `{}`); `--store` runs
/// use it too.
pub(crate) fn read_input(args: &RunArgs) -> Result<Value, String> {
    match (&args.input, &args.input_file) {
        (Some(text), _) => serde_json::from_str(text).map_err(|e| format!("--input is not valid JSON: {e}")),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
        }
        (None, None) => Ok(Value::Object(Default::default())),
    }
}

/// Reads `--mocks` in either format; `--test-case` selects a MockConfigFile test case.
pub(crate) fn read_mocks(
    path: Option<&Path>,
    test_case: Option<&str>,
    state_machine: Option<&str>,
    workflow_name: &str,
) -> Result<MockSet, String> {
    let Some(path) = path else {
        if test_case.is_some() || state_machine.is_some() {
            return Err(
                "--test-case and --state-machine need --mocks FILE (a Step Functions Local MockConfigFile)".into()
            );
        }
        return Ok(MockSet::empty().with_hint("add one in a mocks file given with --mocks FILE"));
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let at = |e: crate::mocks::MockError| format!("{}: {e}", path.display());
    let mocks = match MockSet::detect(&doc) {
        MockFormat::StepFunctionsLocal => {
            let case = test_case.ok_or_else(|| {
                format!(
                    "{} is a Step Functions Local MockConfigFile; choose a test case with --test-case NAME",
                    path.display()
                )
            })?;
            let config = wfc_runtime::mock_config::MockConfig::from_value(&doc)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            MockSet::from_mock_config(&config, state_machine, workflow_name, case).map_err(at)
        }
        MockFormat::Wfc => {
            if test_case.is_some() || state_machine.is_some() {
                return Err(format!(
                    "{} is a wfc mocks file; --test-case and --state-machine apply only to a Step Functions Local MockConfigFile",
                    path.display()
                ));
            }
            MockSet::from_wfc(&doc).map_err(at)
        }
    }?;
    Ok(mocks.with_hint(format!("add one to {} (--mocks)", path.display())))
}

/// `wfc run FILE ...`.
pub(crate) fn run(args: &RunArgs) -> Exit {
    run_with(args, args.name.clone(), |execution| engine::execute(args.engine, execution))
}

/// Loads what `args` name (definition, input, mocks), runs it as execution `name` with
/// `execute`, and prints the outcome: `wfc run`, and `wfc run --store --engine compiled`.
pub(crate) fn run_with(
    args: &RunArgs,
    name: Option<String>,
    execute: impl FnOnce(&Execution<'_>) -> Result<crate::outcome::Outcome, String>,
) -> Exit {
    let color = ColorChoice::Auto.enabled();
    let def = match DefinitionText::read(&args.file) {
        Ok(d) => d,
        Err(e) => return fatal(e),
    };
    let loaded = match def.load_with(args.opt.passes()) {
        Ok(l) => l,
        Err(diags) => {
            // The report of a definition that does not validate is its located diagnostics.
            if let Some(path) = &args.report {
                let page = wfc_core::render::report::diagnostics_page(&def.path, &def.text, &diags.located(), None);
                if let Err(e) = std::fs::write(path, page) {
                    return fatal(format!("cannot write the report {}: {e}", path.display()));
                }
            }
            return definition_error(&def.path, &diags, color);
        }
    };
    // Warnings do not stop a run, but the user should see them.
    crate::check::print_human(&def.path, &loaded.warnings, color);
    let input = match read_input(args) {
        Ok(v) => v,
        Err(e) => return fatal(e),
    };
    let mocks = match read_mocks(
        args.mocks.as_deref(),
        args.test_case.as_deref(),
        args.state_machine.as_deref(),
        &loaded.workflow.name,
    ) {
        Ok(m) => m,
        Err(e) => return fatal(e),
    };
    if let Some(path) = &args.mocks {
        crate::unmatched::warn("mocks key", &path.display().to_string(), mocks.keys(), &[&loaded.workflow]);
    }
    let execution = Execution {
        workflow: &loaded.workflow,
        definition: &def,
        input,
        mocks,
        virtual_time: args.virtual_time,
        seed: args.seed,
        name,
        callbacks: None,
        item_root: args.item_root.clone(),
        result_root: args.result_root.clone(),
        history_level: args.history_level,
        machine_type: args.machine_type,
        events: Vec::new(),
        passes: args.opt.passes(),
        start_time: args.start_time.clone(),
        state_machine_name: None,
        account: None,
    };
    match execute(&execution) {
        Ok(outcome) => {
            if let Some(path) = &args.report {
                let page = wfc_core::render::report::html(&loaded.workflow, &outcome.to_json(true));
                if let Err(e) = std::fs::write(path, page) {
                    return fatal(format!("cannot write the report {}: {e}", path.display()));
                }
            }
            let json = outcome.to_json(args.history);
            let printed = serde_json::to_string_pretty(&json).map_err(|e| e.to_string()).and_then(|text| {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{text}").and_then(|()| out.flush()).map_err(|e| e.to_string())
            });
            if let Err(e) = printed {
                return fatal(format!("cannot print the result: {e}"));
            }
            if outcome.succeeded() { Exit::Success } else { Exit::Failure }
        }
        Err(e) => fatal(e),
    }
}
