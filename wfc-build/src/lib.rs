//! Compiles workflow definitions from `build.rs` into `OUT_DIR`, for crates that prefer generated
//! files over the `include_workflow!` macro (faster IDEs, reviewable output).
//!
//! ```no_run
//! // In build.rs's `fn main`:
//! wfc_build::compile_workflows(&["workflows/order.asl.json"]).unwrap();
//! ```
//!
//! ```ignore
//! // src/main.rs
//! wfc_runtime::include_workflow_out!("order");
//! ```
//!
//! Each definition becomes `OUT_DIR/<module>.rs` holding `pub mod <module> { … }`, formatted with
//! prettyplease and written only when its content changed (so unchanged workflows do not trigger
//! recompiles). Paths are relative to `CARGO_MANIFEST_DIR`. Every input gets a
//! `cargo:rerun-if-changed` line, and warnings become `cargo:warning=` lines. All diagnostics of
//! all files are collected before failing; `Error`'s `Debug` is its `Display`, so `.unwrap()`
//! prints them with `file:line:col`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why [`Config::compile`] failed.
#[derive(thiserror::Error)]
pub enum Error {
    /// One or more definitions are invalid. Holds every file's diagnostics.
    #[error("{}", render(.0))]
    Invalid(Vec<wfc_core::Diagnostics>),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The build environment is incomplete (e.g. `OUT_DIR` unset outside a build script).
    #[error("{0}")]
    Environment(String),
    /// A setting is unusable (a module name collision, an invalid runtime path).
    #[error("{0}")]
    Config(String),
}

fn render(all: &[wfc_core::Diagnostics]) -> String {
    let mut out = String::new();
    for diagnostics in all {
        out.push_str(diagnostics.render(false).trim_end());
        out.push('\n');
    }
    let files = all.len();
    out.push_str(&format!(
        "wfc-build: {files} workflow definition{} failed to compile",
        if files == 1 { "" } else { "s" }
    ));
    out
}

impl fmt::Debug for Error {
    /// The same as `Display`: `build.rs` code calls `.unwrap()`, which prints `Debug`, and the
    /// located diagnostics are what the user needs to see.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Build settings (builder style): `Config::new().out_dir(…).compile(&[…])`.
#[derive(Debug, Clone)]
pub struct Config {
    out_dir: Option<PathBuf>,
    manifest_dir: Option<PathBuf>,
    module_name: Option<String>,
    runtime_path: Option<String>,
    emit_rerun_if_changed: bool,
    emit_warnings: bool,
    passes: wfc_core::optimize::Passes,
    /// Further SW definitions subflows resolve in (relative to the manifest directory).
    sw_workflows: Vec<PathBuf>,
    /// Typed Task resources, each with where in build.rs it was declared (for its errors).
    task_types: Vec<(wfc_core::TaskTypes, &'static std::panic::Location<'static>)>,
}

impl Default for Config {
    fn default() -> Config {
        Config::new()
    }
}

impl Config {
    /// Defaults: `OUT_DIR`, paths relative to `CARGO_MANIFEST_DIR`, module names from file
    /// stems, runtime `::wfc_runtime`, rerun lines printed when running under Cargo.
    pub fn new() -> Config {
        Config {
            out_dir: None,
            manifest_dir: None,
            module_name: None,
            runtime_path: None,
            // Cargo sets CARGO for build scripts; elsewhere (tests, tools) the lines are noise.
            emit_rerun_if_changed: std::env::var_os("CARGO").is_some(),
            emit_warnings: std::env::var_os("CARGO").is_some(),
            passes: wfc_core::optimize::Passes::default(),
            sw_workflows: Vec::new(),
            task_types: Vec::new(),
        }
    }

    /// Writes the generated files here instead of `OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Config {
        self.out_dir = Some(dir.into());
        self
    }

    /// Resolves input paths against this directory instead of `CARGO_MANIFEST_DIR`.
    pub fn manifest_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Config {
        self.manifest_dir = Some(dir.into());
        self
    }

    /// Names the generated module (and file). Only valid when compiling a single definition.
    pub fn module_name(&mut self, name: impl Into<String>) -> &mut Config {
        self.module_name = Some(name.into());
        self
    }

    /// The path generated code uses for the runtime crate (default `::wfc_runtime`), for crates
    /// that rename the dependency or reach the runtime through a facade.
    pub fn runtime_path(&mut self, path: impl Into<String>) -> &mut Config {
        self.runtime_path = Some(path.into());
        self
    }

    /// Whether to print `cargo:rerun-if-changed=<file>` for every input (default: under Cargo).
    pub fn emit_rerun_if_changed(&mut self, emit: bool) -> &mut Config {
        self.emit_rerun_if_changed = emit;
        self
    }

    /// Whether to print the definitions' warnings as `cargo:warning=<file>:<line>:<col>: …`
    /// lines, which Cargo shows after the build (default: under Cargo).
    pub fn emit_warnings(&mut self, emit: bool) -> &mut Config {
        self.emit_warnings = emit;
        self
    }

    /// Sets exactly which optimizer passes run (default: [`Passes::default`], the
    /// history-preserving ones), as `wfc compile --no-opt/--opt` and `include_workflow!(…,
    /// no_opt = […], opt = […])` do. [`Passes::none`] generates code for the IR as lowered.
    ///
    /// [`Passes::default`]: wfc_core::optimize::Passes::default
    /// [`Passes::none`]: wfc_core::optimize::Passes::none
    pub fn passes(&mut self, passes: wfc_core::optimize::Passes) -> &mut Config {
        self.passes = passes;
        self
    }

    /// Turns off one optimizer pass (see [`Config::passes`]).
    pub fn disable_pass(&mut self, pass: wfc_core::optimize::Pass) -> &mut Config {
        self.passes.disable(pass);
        self
    }

    /// Adds a Serverless Workflow definition (relative to the manifest directory) to the registry
    /// subflows are resolved in, besides the SW definitions next to each compiled file. A
    /// `workflowId` found nowhere is run by the generated handler (a method named after the id).
    pub fn sw_workflow(&mut self, path: impl Into<PathBuf>) -> &mut Config {
        self.sw_workflows.push(path.into());
        self
    }

    /// Makes the `Handler` method of the Task resource `resource` (as written in the definition)
    /// take `input` and return `result`, Rust types written as at the place that includes the
    /// generated module (`include_workflow_out!`), e.g. `"crate::shop::StockQuery"`; `"_"` keeps
    /// that side JSON. The input type must implement `serde::de::DeserializeOwned`, the result
    /// type `serde::Serialize`; a value that does not convert fails the Task with
    /// `Wfc.TypeMismatch`, naming the resource and the field. It applies to every ASL definition
    /// compiled with this `Config` that has the resource; one that none has fails [`compile`]
    /// with an [`Error::Config`] located at this call in build.rs, with a did-you-mean.
    ///
    /// [`compile`]: Config::compile
    #[track_caller]
    pub fn task_types(&mut self, resource: impl Into<String>, input: &str, result: &str) -> &mut Config {
        let side = |ty: &str| (ty.trim() != "_").then(|| ty.trim().to_owned());
        let types = wfc_core::TaskTypes { resource: resource.into(), input: side(input), result: side(result) };
        self.task_types.push((types, std::panic::Location::caller()));
        self
    }

    /// Compiles every definition in `paths` (relative to the manifest directory) into
    /// `<out_dir>/<module>.rs`. Nothing is written unless every definition is valid.
    pub fn compile(&self, paths: &[impl AsRef<Path>]) -> Result<(), Error> {
        if self.module_name.is_some() && paths.len() != 1 {
            return Err(Error::Config(format!(
                "wfc-build: `module_name` names one module, but {} definitions were given",
                paths.len()
            )));
        }
        if let Some(runtime) = &self.runtime_path {
            // Checked here because generated code would otherwise carry a `compile_error!`.
            syn::parse_str::<syn::Path>(runtime)
                .map_err(|e| Error::Config(format!("wfc-build: runtime path `{runtime}` is not a Rust path: {e}")))?;
        }
        let manifest_dir = match &self.manifest_dir {
            Some(dir) => dir.clone(),
            None => env_dir("CARGO_MANIFEST_DIR")?,
        };
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => env_dir("OUT_DIR")?,
        };

        for (types, at) in &self.task_types {
            // Checked here because generated code would otherwise carry a `compile_error!`.
            for (side, ty) in [("input", &types.input), ("result", &types.result)] {
                if let Some(ty) = ty {
                    syn::parse_str::<syn::Type>(ty).map_err(|e| {
                        Error::Config(format!(
                            "{}:{}:{}: wfc-build: the {side} type `{ty}` of Task resource `{}` is not a Rust type: {e}",
                            at.file(),
                            at.line(),
                            at.column(),
                            types.resource
                        ))
                    })?;
                }
            }
        }
        let mut outputs: Vec<(String, PathBuf, String)> = Vec::new();
        let mut failures = Vec::new();
        // Per declared task type, why each ASL definition compiled so far does not have it
        // (`None`: one has it). All-unknown declarations fail the build after the loop.
        let mut unknown: Vec<Option<String>> = vec![Some(String::new()); self.task_types.len()];
        let mut typed_asl = false;
        for path in paths {
            let relative = path.as_ref();
            let full = manifest_dir.join(relative);
            if self.emit_rerun_if_changed {
                println!("cargo:rerun-if-changed={}", full.display());
            }
            let text = std::fs::read_to_string(&full).map_err(|source| Error::Io { path: full.clone(), source })?;
            let shown = relative.to_string_lossy().replace('\\', "/");
            let module = match &self.module_name {
                Some(name) => name.clone(),
                None => stem(relative),
            };
            let mut settings = wfc_core::Settings::new();
            settings.module_name(module);
            settings.passes(self.passes);
            if let Some(runtime) = &self.runtime_path {
                settings.runtime_path(runtime.clone());
            }
            // A Serverless Workflow's subflows resolve among the SW definitions beside it and
            // those given with `sw_workflow`; the files it names (schema URIs) are read relative
            // to it and tracked for rebuilds.
            let is_sw =
                wfc_core::Dialect::detect(wfc_core::Source { path: &shown, text: &text }) == wfc_core::Dialect::Sw;
            // A Serverless Workflow's functions stay JSON (see `codegen::check_task_types`).
            if !is_sw {
                for (types, _) in &self.task_types {
                    settings.task_types(types.clone());
                }
            }
            if is_sw {
                let mut registry = full.parent().map(|dir| sw_siblings(dir, &full)).unwrap_or_default();
                for extra in &self.sw_workflows {
                    let extra_full = manifest_dir.join(extra);
                    if self.emit_rerun_if_changed {
                        println!("cargo:rerun-if-changed={}", extra_full.display());
                    }
                    let text = std::fs::read_to_string(&extra_full)
                        .map_err(|source| Error::Io { path: extra_full.clone(), source })?;
                    registry.push((extra.display().to_string(), text));
                }
                for (path, text) in registry {
                    settings.sw_workflow(path, text);
                }
                let root = manifest_dir.clone();
                let rerun = self.emit_rerun_if_changed;
                settings.file_reader(wfc_core::FileReader::new(move |p| {
                    let full = root.join(p);
                    if rerun {
                        println!("cargo:rerun-if-changed={}", full.display());
                    }
                    std::fs::read_to_string(&full).map_err(|e| e.to_string())
                }));
            }
            match wfc_core::compile(wfc_core::Source { path: &shown, text: &text }, &settings) {
                Ok(compiled) => {
                    if !is_sw && !self.task_types.is_empty() {
                        typed_asl = true;
                        let problems = wfc_core::codegen::check_task_types(&compiled.workflow, &settings);
                        for (index, slot) in unknown.iter_mut().enumerate() {
                            let problem = problems.iter().find(|p| p.index == index);
                            *slot = match (slot.take(), problem) {
                                // A duplicate is wrong whichever definition has the resource.
                                (_, Some(p)) if p.message.ends_with("typed twice") => {
                                    return Err(self.task_types_error(index, &shown, &p.message));
                                }
                                (Some(_), Some(p)) => Some(format!("{shown}: {}", p.message)),
                                _ => None,
                            };
                        }
                    }
                    let module = wfc_core::codegen::module_name(&compiled.workflow, &settings);
                    if let Some((_, other, _)) = outputs.iter().find(|(m, _, _)| *m == module) {
                        return Err(Error::Config(format!(
                            "wfc-build: `{}` and `{}` both generate module `{module}`",
                            other.display(),
                            relative.display()
                        )));
                    }
                    if self.emit_warnings {
                        for line in warning_lines(&compiled.warnings) {
                            println!("{line}");
                        }
                    }
                    let code = wfc_core::codegen::format(compiled.tokens);
                    outputs.push((module, relative.to_path_buf(), code));
                }
                Err(diagnostics) => failures.push(diagnostics),
            }
        }
        if !failures.is_empty() {
            return Err(Error::Invalid(failures));
        }
        if let Some((index, why)) = unknown.iter().enumerate().find_map(|(i, why)| Some((i, why.as_ref()?))) {
            let why = if typed_asl { why.clone() } else { "no ASL definition is compiled with it".to_owned() };
            return Err(self.task_types_error(index, "", &why));
        }

        std::fs::create_dir_all(&out_dir).map_err(|source| Error::Io { path: out_dir.clone(), source })?;
        for (module, _, code) in outputs {
            let contents = format!("// @generated by wfc-build v{}. Do not edit.\n\n{code}", env!("CARGO_PKG_VERSION"));
            write_if_changed(&out_dir.join(format!("{module}.rs")), &contents)?;
        }
        Ok(())
    }
}

impl Config {
    /// An [`Error::Config`] for the `index`th task type, located at its `task_types` call.
    fn task_types_error(&self, index: usize, file: &str, message: &str) -> Error {
        let (types, at) = &self.task_types[index];
        let file = if file.is_empty() { String::new() } else { format!("{file}: ") };
        Error::Config(format!(
            "{}:{}:{}: wfc-build: task_types(\"{}\", …): {file}{message}",
            at.file(),
            at.line(),
            at.column(),
            types.resource
        ))
    }
}

/// One `cargo:warning=file:line:col: message [code]` line per warning (newlines would end the
/// instruction early, so they become spaces).
fn warning_lines(warnings: &wfc_core::Diagnostics) -> Vec<String> {
    warnings
        .located()
        .into_iter()
        .map(|w| {
            let message = w.message.replace(['\n', '\r'], " ");
            format!("cargo:warning={}:{}:{}: {message} [{}]", w.file, w.line, w.column, w.code)
        })
        .collect()
}

/// Loads the definition file at `path` into the IR as `include_workflow!` and [`Config`]
/// compile it: a Serverless Workflow with the `*.sw.json`/`*.sw.yaml`/`*.sw.yml` files beside it
/// registered (its subflows compiled together), the files it names (schemas) read relative to
/// the current directory unless `settings` has a reader, and `settings`' optimizer passes; the
/// workflow is named after the file's stem, as the macro names it. For a program that needs the
/// IR of a workflow it compiled, since generated code carries none: to run it on the
/// interpreter, or to hand it to what reads the IR (the SW event router, the SWF and Lambda
/// adapters, a durable worker's replay check). Its hash is the generated `DEFINITION_ID`'s when
/// `settings` has the macro's passes.
pub fn load_file(path: impl AsRef<Path>, settings: &wfc_core::Settings) -> Result<wfc_core::Loaded, String> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let shown = path.to_string_lossy();
    let source = wfc_core::Source { path: &shown, text: &text };
    let mut settings = settings.clone();
    if wfc_core::Dialect::detect(source) == wfc_core::Dialect::Sw {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let own = dir.join(path.file_name().unwrap_or_default());
        for (sibling, text) in sw_siblings(dir, &own) {
            settings.sw_workflow(sibling, text);
        }
        if settings.file_reader.is_none() {
            settings.file_reader(wfc_core::FileReader::new(|p| std::fs::read_to_string(p).map_err(|e| e.to_string())));
        }
    }
    wfc_core::load_with(source, &settings).map_err(|d| d.render(false))
}

/// The other `*.sw.json`/`*.sw.yaml`/`*.sw.yml` files of `dir`, sorted by name (as the macro
/// and `wfc` find a Serverless Workflow's subflows).
fn sw_siblings(dir: &Path, except: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p != except)
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            [".sw.json", ".sw.yaml", ".sw.yml"].iter().any(|ext| name.ends_with(ext))
        })
        .collect();
    paths.sort();
    paths.into_iter().filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p.display().to_string(), t))).collect()
}

/// The module name for a file: its stem before the first dot (`order.asl.json` → `order`).
fn stem(path: &Path) -> String {
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
    file.split('.').next().unwrap_or_default().to_owned()
}

fn env_dir(var: &str) -> Result<PathBuf, Error> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .ok_or_else(|| Error::Environment(format!("wfc-build: {var} is not set; call wfc-build from a build script")))
}

/// Writes `contents` unless the file already holds exactly that, so Cargo sees no change.
fn write_if_changed(path: &Path, contents: &str) -> Result<(), Error> {
    if std::fs::read(path).is_ok_and(|existing| existing == contents.as_bytes()) {
        return Ok(());
    }
    std::fs::write(path, contents).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// Compiles definitions with the default [`Config`]: `Config::new().compile(paths)`.
pub fn compile_workflows(paths: &[impl AsRef<Path>]) -> Result<(), Error> {
    Config::new().compile(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"{ "StartAt": "A", "States": { "A": { "Type": "Succeed" } } }"#;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wfc-build-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("workflows")).expect("scratch dir");
        dir
    }

    fn config(dir: &Path) -> Config {
        let mut config = Config::new();
        config.manifest_dir(dir).out_dir(dir.join("out")).emit_rerun_if_changed(false).emit_warnings(false);
        config
    }

    #[test]
    fn writes_formatted_module_with_header_only_when_changed() {
        let dir = scratch("write");
        std::fs::write(dir.join("workflows/my-flow.asl.json"), VALID).expect("write");
        config(&dir).compile(&["workflows/my-flow.asl.json"]).expect("compiles");
        let out = dir.join("out/my_flow.rs");
        let text = std::fs::read_to_string(&out).expect("generated");
        assert!(
            text.starts_with(&format!("// @generated by wfc-build v{}. Do not edit.\n", env!("CARGO_PKG_VERSION")))
        );
        assert!(text.contains("pub mod my_flow {"), "{text}");
        let before = std::fs::metadata(&out).and_then(|m| m.modified()).expect("mtime");
        std::thread::sleep(std::time::Duration::from_millis(20));
        config(&dir).compile(&["workflows/my-flow.asl.json"]).expect("compiles again");
        let after = std::fs::metadata(&out).and_then(|m| m.modified()).expect("mtime");
        assert_eq!(before, after, "an unchanged module must not be rewritten");
    }

    #[test]
    fn collects_diagnostics_of_every_file() {
        let dir = scratch("errors");
        std::fs::write(
            dir.join("workflows/a.asl.json"),
            r#"{ "StartAt": "X", "States": { "A": { "Type": "Succeed" } } }"#,
        )
        .expect("write");
        std::fs::write(dir.join("workflows/b.asl.json"), r#"{ "States": { "A": { "Type": "Succeed" } } }"#)
            .expect("write");
        std::fs::write(dir.join("workflows/ok.asl.json"), VALID).expect("write");
        let error = config(&dir)
            .compile(&["workflows/a.asl.json", "workflows/ok.asl.json", "workflows/b.asl.json"])
            .expect_err("invalid");
        let shown = format!("{error:?}");
        assert!(shown.contains("workflows/a.asl.json:1:"), "{shown}");
        assert!(shown.contains("workflows/b.asl.json:1:"), "{shown}");
        assert!(shown.contains("2 workflow definitions failed"), "{shown}");
        assert_eq!(shown, error.to_string());
        assert!(!dir.join("out/ok.rs").exists(), "nothing is written when any definition fails");
    }

    /// An SW workflow whose `dataInputSchema` names a file beside it and whose subflow is given
    /// with `sw_workflow`.
    const SW_WITH_SCHEMA: &str = r#"{
  "id": "order", "name": "order", "dataInputSchema": "schemas/in.json",
  "states": [
    { "name": "Sub", "type": "subflow", "start": { "kind": "default" }, "workflowId": "child", "end": true }
  ]
}"#;
    const SW_CHILD: &str = r#"{ "id": "child", "name": "child",
  "states": [ { "name": "A", "type": "inject", "start": { "kind": "default" }, "data": {}, "end": true } ] }"#;

    #[test]
    fn sw_schema_files_are_read_beside_the_definition_and_subflows_come_from_sw_workflow() {
        let dir = scratch("sw-schema");
        std::fs::create_dir_all(dir.join("workflows/schemas")).expect("dir");
        std::fs::create_dir_all(dir.join("others")).expect("dir");
        std::fs::write(dir.join("workflows/order.sw.json"), SW_WITH_SCHEMA).expect("write");
        std::fs::write(dir.join("workflows/schemas/in.json"), r#"{ "type": "object", "required": ["id"] }"#)
            .expect("write");
        std::fs::write(dir.join("others/child.sw.json"), SW_CHILD).expect("write");
        config(&dir).sw_workflow("others/child.sw.json").compile(&["workflows/order.sw.json"]).expect("compiles");
        let text = std::fs::read_to_string(dir.join("out/order.rs")).expect("generated");
        // The schema is read at build time and built by the module (the workflow's settings,
        // `META`), and the subflow is compiled in: no `child` handler method.
        let compact: String = text.split_whitespace().collect();
        assert!(compact.contains("input_schema:::core::option::Option::Some("), "the schema is built: {text}");
        assert!(compact.contains(r#"to_owned("required"),__wfc::Value::Array(::std::vec![__wfc::Value::String(::std::borrow::ToOwned::to_owned("id"))]"#), "the schema is built: {text}");
        assert!(!text.contains("fn child"), "the subflow is embedded, not a handler method: {text}");
    }

    #[test]
    fn an_unreadable_or_invalid_sw_schema_fails_the_build_at_its_field() {
        let dir = scratch("sw-schema-bad");
        std::fs::write(dir.join("workflows/order.sw.json"), SW_WITH_SCHEMA).expect("write");
        std::fs::write(dir.join("workflows/child.sw.json"), SW_CHILD).expect("write");
        let shown = config(&dir).compile(&["workflows/order.sw.json"]).expect_err("no schema file").to_string();
        assert!(shown.contains("WFC2050") && shown.contains("workflows/order.sw.json:2:"), "{shown}");
        assert!(shown.contains("cannot read `workflows/schemas/in.json`"), "{shown}");
        std::fs::create_dir_all(dir.join("workflows/schemas")).expect("dir");
        std::fs::write(dir.join("workflows/schemas/in.json"), r#"{ "type": 5 }"#).expect("write");
        let shown = config(&dir).compile(&["workflows/order.sw.json"]).expect_err("a bad schema").to_string();
        assert!(shown.contains("WFC2050") && shown.contains("not a valid JSON Schema"), "{shown}");
        assert!(shown.contains("workflows/order.sw.json:2:"), "{shown}");
    }

    #[test]
    fn module_name_and_runtime_path() {
        let dir = scratch("options");
        std::fs::write(dir.join("workflows/x.asl.json"), VALID).expect("write");
        config(&dir)
            .module_name("Renamed Flow")
            .runtime_path("::my_rt")
            .compile(&["workflows/x.asl.json"])
            .expect("ok");
        let text = std::fs::read_to_string(dir.join("out/renamed_flow.rs")).expect("generated");
        assert!(text.contains("use ::my_rt::__private as __wfc;"), "{text}");
        let error = config(&dir).module_name("x").compile(&["workflows/x.asl.json", "workflows/x.asl.json"]);
        assert!(matches!(error, Err(Error::Config(_))));
        let error = config(&dir).runtime_path("not a path").compile(&["workflows/x.asl.json"]);
        assert!(matches!(error, Err(Error::Config(_))), "{error:?}");
    }

    #[test]
    fn passes_choose_the_ir_generated_from() {
        let dir = scratch("passes");
        let definition =
            r#"{ "StartAt": "A", "States": { "A": { "Type": "Pass", "InputPath": "$.a", "End": true } } }"#;
        std::fs::write(dir.join("workflows/p.asl.json"), definition).expect("write");
        // The IR each setting lowers to, identified by its hash (generated code carries the hash
        // in `DEFINITION_ID`, not the IR).
        let hash = |passes: wfc_core::optimize::Passes| {
            let mut settings = wfc_core::Settings::new();
            settings.passes(passes);
            let source = wfc_core::Source { path: "workflows/p.asl.json", text: definition };
            let workflow = wfc_core::load_with(source, &settings).expect("valid").workflow;
            format!("{:?}", workflow.definition_hash())
        };
        config(&dir).compile(&["workflows/p.asl.json"]).expect("compiles");
        let optimized = std::fs::read_to_string(dir.join("out/p.rs")).expect("generated");
        // `direct-paths` (a default pass) marks `$.a` as a step list in the IR.
        assert!(optimized.contains(&hash(wfc_core::optimize::Passes::default())), "{optimized}");
        config(&dir)
            .disable_pass(wfc_core::optimize::Pass::DirectPaths)
            .compile(&["workflows/p.asl.json"])
            .expect("ok");
        let plain = std::fs::read_to_string(dir.join("out/p.rs")).expect("generated");
        assert!(plain.contains(&hash(wfc_core::optimize::Passes::none())), "{plain}");
        assert_ne!(optimized, plain);
        config(&dir).passes(wfc_core::optimize::Passes::none()).compile(&["workflows/p.asl.json"]).expect("ok");
        assert_eq!(std::fs::read_to_string(dir.join("out/p.rs")).expect("generated"), plain);
    }

    #[test]
    fn warnings_become_cargo_warning_lines() {
        let text = "{\n  \"StartAt\": \"A\",\n  \"States\": { \"A\": { \"Type\": \"Succeed\", \"Comment\": \"\" } }\n}";
        let loaded = wfc_core::load(wfc_core::Source { path: "workflows/w.asl.json", text }).expect("valid");
        let lines = warning_lines(&loaded.warnings);
        assert!(!lines.is_empty(), "an empty Comment is a warning");
        assert!(lines[0].starts_with("cargo:warning=workflows/w.asl.json:3:"), "{lines:?}");
        assert!(lines.iter().all(|l| !l.contains('\n')));
    }

    const TWO_TASKS: &str = r#"{ "StartAt": "A", "States": {
  "A": { "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:CheckStock", "Next": "B" },
  "B": { "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:Notify", "End": true } } }"#;

    #[test]
    fn task_types_type_the_handler_method() {
        let dir = scratch("typed");
        std::fs::write(dir.join("workflows/t.asl.json"), TWO_TASKS).expect("write");
        config(&dir)
            .task_types("arn:aws:lambda:us-east-1:1:function:CheckStock", "crate::StockQuery", "Vec<u32>")
            .task_types("arn:aws:lambda:us-east-1:1:function:Notify", "_", "String")
            .compile(&["workflows/t.asl.json"])
            .expect("compiles");
        let text = std::fs::read_to_string(dir.join("out/t.rs")).expect("generated");
        assert!(text.contains("type __wfc_t_check_stock_input = crate::StockQuery;"), "{text}");
        assert!(text.contains("type __wfc_t_check_stock_result = Vec<u32>;"), "{text}");
        assert!(text.contains("type __wfc_t_notify_result = String;"), "{text}");
        assert!(!text.contains("__wfc_t_notify_input"), "`_` keeps the input JSON: {text}");
        assert!(text.contains("input: super::__wfc_t_check_stock_input,"), "{text}");
    }

    #[test]
    fn a_task_type_for_no_task_is_an_error_at_its_call() {
        let dir = scratch("typed-unknown");
        std::fs::write(dir.join("workflows/t.asl.json"), TWO_TASKS).expect("write");
        let line = line!() + 2;
        let error = config(&dir)
            .task_types("arn:aws:lambda:us-east-1:1:function:CheckStok", "u8", "_")
            .compile(&["workflows/t.asl.json"])
            .expect_err("no such resource");
        let shown = error.to_string();
        assert!(matches!(error, Error::Config(_)), "{shown}");
        assert!(shown.starts_with(&format!("{}:{line}:", file!())), "{shown}");
        assert!(
            shown.ends_with(
                "workflows/t.asl.json: no Task in the definition has Resource \
                 `arn:aws:lambda:us-east-1:1:function:CheckStok`; did you mean \
                 `arn:aws:lambda:us-east-1:1:function:CheckStock`?"
            ),
            "{shown}"
        );
        assert!(!dir.join("out/t.rs").exists(), "nothing is written");
        let error = config(&dir).task_types("x", "not a type!", "_").compile(&["workflows/t.asl.json"]);
        assert!(error.is_err_and(|e| e.to_string().contains("the input type `not a type!`")));
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let dir = scratch("missing");
        let error = config(&dir).compile(&["workflows/nope.asl.json"]).expect_err("missing");
        assert!(matches!(error, Error::Io { .. }), "{error}");
    }
}
