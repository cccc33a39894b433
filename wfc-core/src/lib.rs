//! The wfc compiler: front ends (ASL, Serverless Workflow) → spanned syntax tree → validation
//! (diagnostics) → IR ([`wfc_ir::Workflow`]) → optimizer → Rust code generation.
//!
//! This crate does no file I/O: callers (the macro, the build helper, the CLI) read files and hand
//! their text in as a [`Source`]. It is an implementation detail of `wfc-macro`, `wfc-build` and
//! `wfc-cli`, and exempt from semver.

pub mod asl;
pub mod codegen;
pub mod diagnostics;
pub mod optimize;
pub mod render;
pub mod sw;
pub mod syntax;

use std::path::Path;

pub use diagnostics::{Diagnostic, Diagnostics, Severity};
pub use wfc_ir as ir;

/// A definition's text and the path it is reported under.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The path shown in diagnostics (relative to the crate or the working directory).
    pub path: &'a str,
    /// The file's contents.
    pub text: &'a str,
}

/// The definition languages wfc reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Amazon States Language.
    Asl,
    /// Serverless Workflow (the 2020-08 draft; `{{ JsonPath }}` expressions).
    Sw,
}

impl Dialect {
    /// The language of a definition: SW for `*.sw.json`/`*.sw.yaml` files and for documents with
    /// a lowercase `states` array (and no `States`); ASL otherwise.
    pub fn detect(source: Source<'_>) -> Dialect {
        if sw::looks_like_sw(source.path, source.text) { Dialect::Sw } else { Dialect::Asl }
    }
}

/// The concrete syntax of a definition file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (strict).
    Json,
    /// YAML 1.2.
    Yaml,
}

impl Format {
    /// `.yaml`/`.yml` files are YAML; everything else is JSON.
    pub fn from_path(path: &str) -> Format {
        match Path::new(path).extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Format::Yaml,
            _ => Format::Json,
        }
    }
}

/// Compiler settings (builder style: `Settings::new().module_name("order")`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Name of the generated module; by default the file stem in snake case (`order.asl.json` → `order`).
    pub module_name: Option<String>,
    /// Path of the runtime crate in generated code (default `::wfc_runtime`).
    pub runtime_path: String,
    /// The optimizer passes run after lowering (default: the history-preserving ones).
    pub passes: optimize::Passes,
    /// SW workflows compiled together with this one (path, text): the registry a subflow's
    /// `workflowId` is resolved in.
    pub sw_registry: Vec<(String, String)>,
    /// How the SW front end reads the files a definition names (a `dataInputSchema` URI): this
    /// crate does no I/O itself, so the caller decides (and learns which files were read, to
    /// rebuild when they change). `None`: a schema URI cannot be read and is an error.
    pub file_reader: Option<FileReader>,
    /// The optional languages the definition may use: by default what this build has
    /// ([`Features::COMPILED`]). A definition that needs one that is off is error `WFC0230`,
    /// located at what needs it and naming the cargo feature to enable.
    pub features: Features,
    /// Rust types declared for Task resources: each makes that resource's `Handler` method take
    /// and return them (serde at the boundary) instead of JSON. Empty by default: every method is
    /// untyped. See [`TaskTypes`].
    pub task_types: Vec<TaskTypes>,
    /// Whether codegen emits the type aliases of [`Settings::task_types`] beside the module
    /// (default). `include_workflow!` turns it off and emits them itself from the user's tokens
    /// ([`codegen::task_type_alias_item`]), so rustc points at the type in the macro call.
    pub emit_task_type_aliases: bool,
}

/// The Rust types of one Task resource's effective input and result, as Rust type text resolved
/// in the scope the generated module is placed in (where `include_workflow!` or
/// `include_workflow_out!` is called): `crate::shop::StockQuery`, `Vec<Line>`, `String`. `None`
/// keeps that side JSON (`serde_json::Value`). The input type must implement
/// `serde::de::DeserializeOwned`, the result type `serde::Serialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTypes {
    /// The Task's `Resource`, exactly as written in the definition.
    pub resource: String,
    /// The type of the Task's effective input (after `InputPath` and `Parameters`).
    pub input: Option<String>,
    /// The type of the Task's result (before `ResultSelector` and `ResultPath`).
    pub result: Option<String>,
}

/// The optional languages of a definition, each a cargo feature of wfc-core (and of wfc-runtime,
/// wfc-macro and wfc-build, which enable wfc-core's): off by default because of what they cost a
/// cold build (jsonata-core; jsonschema and its URL, IDNA and regex crates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// JSONata expressions (`QueryLanguage: "JSONata"`), feature `jsonata`.
    pub jsonata: bool,
    /// Serverless Workflow `dataInputSchema`/`dataOutputSchema` (JSON Schema), feature `json-schema`.
    pub json_schema: bool,
}

impl Features {
    /// What this build of wfc-core was compiled with. Asking for more than this has no effect:
    /// the code is not there.
    pub const COMPILED: Features =
        Features { jsonata: wfc_ir::jsonata::AVAILABLE, json_schema: cfg!(feature = "json-schema") };

    /// Both off: what a build with default features accepts.
    pub const NONE: Features = Features { jsonata: false, json_schema: false };

    /// Only what both `self` and this build have.
    pub fn and_compiled(self) -> Features {
        Features {
            jsonata: self.jsonata && Features::COMPILED.jsonata,
            json_schema: self.json_schema && Features::COMPILED.json_schema,
        }
    }
}

impl Default for Features {
    fn default() -> Features {
        Features::COMPILED
    }
}

/// Reads a file a definition refers to, by its path as resolved against the definition's path
/// (`workflows/order.sw.json` naming `schemas/in.json` → `workflows/schemas/in.json`); returns
/// its text or why it cannot be read.
#[derive(Clone)]
pub struct FileReader(pub std::sync::Arc<ReadFile>);

/// The function a [`FileReader`] calls: a path in, its text or why it cannot be read out.
pub type ReadFile = dyn Fn(&Path) -> Result<String, String> + Send + Sync;

impl FileReader {
    /// A reader from a closure.
    pub fn new(read: impl Fn(&Path) -> Result<String, String> + Send + Sync + 'static) -> FileReader {
        FileReader(std::sync::Arc::new(read))
    }

    /// Reads `path`.
    pub fn read(&self, path: &Path) -> Result<String, String> {
        (self.0)(path)
    }
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileReader(..)")
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            module_name: None,
            runtime_path: "::wfc_runtime".to_owned(),
            passes: optimize::Passes::default(),
            sw_registry: Vec::new(),
            file_reader: None,
            features: Features::COMPILED,
            task_types: Vec::new(),
            emit_task_type_aliases: true,
        }
    }
}

impl Settings {
    /// Default settings.
    pub fn new() -> Settings {
        Settings::default()
    }

    /// Sets the generated module's name.
    pub fn module_name(&mut self, name: impl Into<String>) -> &mut Settings {
        self.module_name = Some(name.into());
        self
    }

    /// Sets the path generated code uses for the runtime crate.
    pub fn runtime_path(&mut self, path: impl Into<String>) -> &mut Settings {
        self.runtime_path = path.into();
        self
    }

    /// Turns off one optimizer pass (see [`optimize::Pass`]).
    pub fn disable_pass(&mut self, pass: optimize::Pass) -> &mut Settings {
        self.passes.disable(pass);
        self
    }

    /// Turns on one optimizer pass, such as the history-changing `fold-pass`.
    pub fn enable_pass(&mut self, pass: optimize::Pass) -> &mut Settings {
        self.passes.enable(pass);
        self
    }

    /// Adds an SW workflow to the registry that subflows are resolved in.
    pub fn sw_workflow(&mut self, path: impl Into<String>, text: impl Into<String>) -> &mut Settings {
        self.sw_registry.push((path.into(), text.into()));
        self
    }

    /// Sets how the files a definition names (an SW `dataInputSchema` URI) are read.
    pub fn file_reader(&mut self, reader: FileReader) -> &mut Settings {
        self.file_reader = Some(reader);
        self
    }

    /// Sets the optional languages a definition may use (at most what this build has).
    pub fn features(&mut self, features: Features) -> &mut Settings {
        self.features = features.and_compiled();
        self
    }

    /// Declares the Rust types of a Task resource's input and result (see [`TaskTypes`]); check
    /// them against the definition with [`codegen::check_task_types`].
    pub fn task_types(&mut self, types: TaskTypes) -> &mut Settings {
        self.task_types.push(types);
        self
    }

    /// Sets exactly which optimizer passes run ([`optimize::Passes::none`] for the IR as lowered).
    pub fn passes(&mut self, passes: optimize::Passes) -> &mut Settings {
        self.passes = passes;
        self
    }
}

/// A definition that passed validation.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The workflow, lowered into the IR.
    pub workflow: wfc_ir::Workflow,
    /// Warnings (the definition is valid nonetheless).
    pub warnings: Diagnostics,
}

/// Parses, validates and lowers a definition, then runs the default optimizer passes. Every
/// problem is collected before this fails.
pub fn load(source: Source<'_>) -> Result<Loaded, Diagnostics> {
    load_with(source, &Settings::default())
}

/// [`load`] with the optimizer passes of `settings` (the other settings only matter to codegen).
pub fn load_with(source: Source<'_>, settings: &Settings) -> Result<Loaded, Diagnostics> {
    let mut loaded = match Dialect::detect(source) {
        Dialect::Asl => asl::load_with(source, settings.features)?,
        Dialect::Sw => sw::load_with(source, &settings.sw_registry, settings.file_reader.as_ref(), settings.features)?,
    };
    optimize::optimize(&mut loaded.workflow, &settings.passes);
    Ok(loaded)
}

/// A definition compiled to Rust.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The workflow, lowered into the IR.
    pub workflow: wfc_ir::Workflow,
    /// The generated module, as tokens.
    pub tokens: proc_macro2::TokenStream,
    /// Warnings.
    pub warnings: Diagnostics,
}

/// Loads a definition and generates its Rust module.
pub fn compile(source: Source<'_>, settings: &Settings) -> Result<Compiled, Diagnostics> {
    let loaded = load_with(source, settings)?;
    let tokens = codegen::generate(&loaded.workflow, source, settings);
    Ok(Compiled { workflow: loaded.workflow, tokens, warnings: loaded.warnings })
}
