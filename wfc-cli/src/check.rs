//! `wfc check`: validate definitions and report every problem, rustc style or as JSON lines.

use std::io::Write;
use std::path::Path;

use wfc_core::{Diagnostics, Loaded, Severity, Source};

use crate::{CheckArgs, CheckFormat, Exit, fatal};

/// A definition file's path as shown in messages, and its text.
pub(crate) struct DefinitionText {
    /// The path as the user wrote it.
    pub(crate) path: String,
    /// The file's contents.
    pub(crate) text: String,
}

impl DefinitionText {
    /// Reads a definition file.
    pub(crate) fn read(path: &Path) -> Result<DefinitionText, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Ok(DefinitionText { path: path.display().to_string(), text })
    }

    /// The source handed to the compiler.
    pub(crate) fn source(&self) -> Source<'_> {
        Source { path: &self.path, text: &self.text }
    }

    /// Parses, validates and lowers it, with the default optimizer passes.
    pub(crate) fn load(&self) -> Result<Loaded, Diagnostics> {
        wfc_core::load_with(self.source(), &self.settings())
    }

    /// [`DefinitionText::load`] with the given optimizer passes.
    pub(crate) fn load_with(&self, passes: wfc_core::optimize::Passes) -> Result<Loaded, Diagnostics> {
        let mut settings = self.settings();
        settings.passes(passes);
        wfc_core::load_with(self.source(), &settings)
    }

    /// Default settings, plus (for a Serverless Workflow) the registry its subflows resolve in:
    /// the SW definitions in the same directory, then those of each directory of the search path
    /// `WFC_SUBFLOW_PATH` (separated as `PATH` is); and the file reader its schema URIs are read
    /// with (paths relative to the definition, as the shell sees them).
    pub(crate) fn settings(&self) -> wfc_core::Settings {
        let mut settings = wfc_core::Settings::new();
        if wfc_core::Dialect::detect(self.source()) == wfc_core::Dialect::Sw {
            for (path, text) in self.sw_registry() {
                settings.sw_workflow(path, text);
            }
            settings.file_reader(wfc_core::FileReader::new(|p| std::fs::read_to_string(p).map_err(|e| e.to_string())));
        }
        settings
    }

    /// The SW workflows its subflows resolve in: the SW definitions beside it, then those of
    /// each directory of `WFC_SUBFLOW_PATH`.
    pub(crate) fn sw_registry(&self) -> Vec<(String, String)> {
        let mut registry = self.sw_siblings();
        let dirs = std::env::var_os(SUBFLOW_PATH).map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
        for dir in dirs.unwrap_or_default() {
            registry.extend(sw_files(&dir, Path::new(&self.path)));
        }
        registry
    }

    /// The files the definition (and its subflows) name, read while loading it: (path relative to
    /// the definition's directory, text). The compiled engine copies them beside its copy.
    pub(crate) fn files_read(&self) -> Vec<(String, String)> {
        let read: std::sync::Arc<std::sync::Mutex<Vec<(std::path::PathBuf, String)>>> = Default::default();
        let mut settings = self.settings();
        let record = read.clone();
        settings.file_reader(wfc_core::FileReader::new(move |p| {
            let text = std::fs::read_to_string(p).map_err(|e| e.to_string())?;
            record.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((p.to_path_buf(), text.clone()));
            Ok(text)
        }));
        let _ = wfc_core::load_with(self.source(), &settings);
        let base = Path::new(&self.path).parent().unwrap_or(Path::new(""));
        let read = read.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        read.iter().filter_map(|(p, t)| Some((p.strip_prefix(base).ok()?.to_str()?.to_owned(), t.clone()))).collect()
    }

    /// The other `*.sw.json`/`*.sw.yaml`/`*.sw.yml` files next to this one, sorted by name.
    pub(crate) fn sw_siblings(&self) -> Vec<(String, String)> {
        let me = Path::new(&self.path);
        let dir = match me.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        sw_files(dir, me)
    }
}

/// The environment variable naming further directories of SW workflows that subflows resolve in.
pub(crate) const SUBFLOW_PATH: &str = "WFC_SUBFLOW_PATH";

/// The `*.sw.json`/`*.sw.yaml`/`*.sw.yml` files of `dir` other than `me`, sorted by name.
fn sw_files(dir: &Path, me: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name() != me.file_name())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            [".sw.json", ".sw.yaml", ".sw.yml"].iter().any(|ext| name.ends_with(ext))
        })
        .collect();
    paths.sort();
    paths.into_iter().filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p.display().to_string(), t))).collect()
}

fn count(diags: &Diagnostics, severity: Severity) -> usize {
    diags.items.iter().filter(|d| d.severity == severity).count()
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") }
}

/// The cargo-style summary of one file's diagnostics, if it has any.
pub(crate) fn summary(path: &str, diags: &Diagnostics) -> Option<String> {
    let errors = count(diags, Severity::Error);
    let warnings = count(diags, Severity::Warning);
    if errors > 0 {
        let mut line = format!("error: could not compile `{path}` due to {}", plural(errors, "previous error"));
        if warnings > 0 {
            line.push_str(&format!("; {} emitted", plural(warnings, "warning")));
        }
        Some(line)
    } else if warnings > 0 {
        Some(format!("warning: `{path}` generated {}", plural(warnings, "warning")))
    } else {
        None
    }
}

/// Prints a file's diagnostics (human) to stderr with the summary line.
pub(crate) fn print_human(path: &str, diags: &Diagnostics, color: bool) {
    let mut err = std::io::stderr().lock();
    if !diags.items.is_empty() {
        let rendered = diags.render(color);
        let _ = write!(err, "{rendered}");
        // rustc separates each diagnostic, and the summary, by a blank line.
        let _ = write!(
            err,
            "{}",
            if rendered.ends_with("\n\n") {
                ""
            } else if rendered.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            }
        );
    }
    if let Some(line) = summary(path, diags) {
        let _ = writeln!(err, "{}", paint(&line, color));
    }
}

/// Colors a summary line's leading `error:`/`warning:` as cargo does (bold red / bold yellow,
/// the rest bold).
fn paint(line: &str, color: bool) -> String {
    if !color {
        return line.to_owned();
    }
    for (word, code) in [("error", "91"), ("warning", "93")] {
        if let Some(rest) = line.strip_prefix(word).and_then(|r| r.strip_prefix(':')) {
            return format!("\x1b[1m\x1b[{code}m{word}\x1b[0m\x1b[1m:{rest}\x1b[0m");
        }
    }
    line.to_owned()
}

/// What `wfc check` says of a valid definition: `order.asl.json: ASL, 5 states, no problems`
/// (states of Parallel branches and Map item processors included; warnings counted).
fn checked_line(def: &DefinitionText, loaded: &Loaded) -> String {
    let language = match wfc_core::Dialect::detect(def.source()) {
        wfc_core::Dialect::Sw => "Serverless Workflow",
        wfc_core::Dialect::Asl => "ASL",
    };
    // Counted as written: the optimizer may have dropped unreachable states from `loaded`.
    let as_written = def.load_with(wfc_core::optimize::Passes::none());
    let workflow = as_written.as_ref().map(|l| &l.workflow).unwrap_or(&loaded.workflow);
    let states: usize = workflow.machines().iter().map(|m| m.states.len()).sum();
    let warnings = count(&loaded.warnings, Severity::Warning);
    let verdict = if warnings == 0 { "no problems".to_owned() } else { plural(warnings, "warning") };
    format!("{}: {language}, {}, {verdict}", def.path, plural(states, "state"))
}

/// A definition that failed to load where the command needs a valid one: diagnostics on stderr,
/// exit 2 (for `compile`, `graph` and `run` an invalid definition is an input error).
pub(crate) fn definition_error(path: &str, diags: &Diagnostics, color: bool) -> Exit {
    print_human(path, diags, color);
    if diags.items.is_empty() {
        // The front end rejected the file without saying why; never exit silently.
        eprintln!("error: could not compile `{path}`: the definition was rejected without diagnostics");
    }
    Exit::Error
}

/// `wfc check FILE...`.
pub(crate) fn run(args: &CheckArgs) -> Exit {
    let color = args.color.enabled();
    let mut io_error = false;
    let mut invalid = false;
    let mut out = std::io::stdout().lock();
    for file in &args.files {
        let def = match DefinitionText::read(file) {
            Ok(d) => d,
            Err(e) => {
                fatal(e);
                io_error = true;
                continue;
            }
        };
        let (diags, rejected, checked) = match def.load() {
            Ok(loaded) => {
                let checked = checked_line(&def, &loaded);
                (loaded.warnings, false, Some(checked))
            }
            Err(diags) => (diags, true, None),
        };
        invalid |= rejected;
        // A rejection with no items is still a rejection; make it visible in both formats.
        let silent_rejection = rejected && !diags.has_errors();
        // What a valid file was checked as, on stderr after its warnings (stdout stays the
        // JSON lines' own): silence after a check reads as "nothing happened".
        let report_checked = || {
            if let Some(line) = &checked {
                eprintln!("{line}");
            }
        };
        match args.format {
            CheckFormat::Human => {
                print_human(&def.path, &diags, color);
                report_checked();
                if silent_rejection {
                    eprintln!(
                        "error: could not compile `{}`: the definition was rejected without diagnostics",
                        def.path
                    );
                }
            }
            CheckFormat::Json => {
                for d in diags.located() {
                    match serde_json::to_string(&d) {
                        Ok(line) => {
                            let _ = writeln!(out, "{line}");
                        }
                        Err(e) => {
                            fatal(format!("cannot serialize a diagnostic: {e}"));
                            io_error = true;
                        }
                    }
                }
                if let Some(line) = summary(&def.path, &diags) {
                    eprintln!("{line}");
                }
                report_checked();
                if silent_rejection {
                    eprintln!(
                        "error: could not compile `{}`: the definition was rejected without diagnostics",
                        def.path
                    );
                }
            }
        }
    }
    if io_error {
        Exit::Error
    } else if invalid {
        Exit::Failure
    } else {
        Exit::Success
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfc_core::Diagnostic;

    fn diag(severity: Severity) -> Diagnostic {
        Diagnostic { code: "WFC0000", severity, message: "m".into(), span: 0..1, labels: vec![], help: None }
    }

    #[test]
    fn summaries_read_like_cargo() {
        let mut d = Diagnostics { path: "order.asl.json".into(), text: "{}".into(), items: vec![] };
        assert_eq!(summary("order.asl.json", &d), None);
        d.items = vec![diag(Severity::Error)];
        assert_eq!(
            summary("order.asl.json", &d).unwrap(),
            "error: could not compile `order.asl.json` due to 1 previous error"
        );
        d.items = vec![diag(Severity::Error), diag(Severity::Error), diag(Severity::Error), diag(Severity::Warning)];
        assert_eq!(
            summary("order.asl.json", &d).unwrap(),
            "error: could not compile `order.asl.json` due to 3 previous errors; 1 warning emitted"
        );
        d.items = vec![diag(Severity::Warning), diag(Severity::Warning)];
        assert_eq!(summary("a.json", &d).unwrap(), "warning: `a.json` generated 2 warnings");
        assert_eq!(paint("warning: x", false), "warning: x");
        assert_eq!(paint("error: x", true), "\x1b[1m\x1b[91merror\x1b[0m\x1b[1m: x\x1b[0m");
    }
}
