//! `wfc decide`: the workflow as an Amazon SWF decider (docs/adapters.md).

use std::io::{Read, Write};
use std::path::PathBuf;

use serde_json::Value;
use wfc_runtime::adapters::swf::{self, SwfConfig};

use crate::check::{DefinitionText, definition_error};
use crate::{ColorChoice, Exit, fatal};

/// `wfc decide`.
#[derive(Debug, clap::Args)]
pub(crate) struct DecideArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// The decider's configuration (activity types, task list, timeouts, Lambda functions) as
    /// JSON; every field has a default (docs/adapters.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Read the decision task from this file instead of standard input.
    #[arg(long, value_name = "FILE")]
    pub(crate) task: Option<PathBuf>,
}

fn read_json(path: Option<&PathBuf>, what: &str) -> Result<Value, String> {
    let (text, from) = match path {
        Some(p) => (std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?, p.display().to_string()),
        None => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| format!("cannot read standard input: {e}"))?;
            (text, "standard input".to_owned())
        }
    };
    serde_json::from_str(&text).map_err(|e| format!("the {what} in {from} is not valid JSON: {e}"))
}

/// Reads the definition, the config and the decision task, and prints the
/// RespondDecisionTaskCompleted request.
pub(crate) fn decide(args: &DecideArgs) -> Exit {
    let def = match DefinitionText::read(&args.file) {
        Ok(d) => d,
        Err(e) => return fatal(e),
    };
    let loaded = match def.load() {
        Ok(l) => l,
        Err(diags) => return definition_error(&def.path, &diags, ColorChoice::Auto.enabled()),
    };
    let config = match &args.config {
        None => SwfConfig::default(),
        Some(path) => match read_json(Some(path), "decider configuration")
            .and_then(|v| serde_json::from_value(v).map_err(|e| format!("{}: invalid decider configuration: {e}", path.display())))
        {
            Ok(c) => c,
            Err(e) => return fatal(e),
        },
    };
    let task = match read_json(args.task.as_ref(), "decision task") {
        Ok(t) => t,
        Err(e) => return fatal(e),
    };
    match swf::decide(&loaded.workflow, &task, &config) {
        Ok(response) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(&response).unwrap_or_default());
            Exit::Success
        }
        Err(e) => fatal(e),
    }
}
