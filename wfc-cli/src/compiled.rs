//! The compiled engine: runs workflows as the Rust that `include_workflow!` generates.
//!
//! `wfc` writes a small cargo project (a "program") into a cache directory, builds it with
//! `cargo build` (debug profile: these programs do little work, and a debug build of the
//! runtime's dependencies is much quicker than a release one), and runs the binary once per
//! execution. Its task handler answers from the same mocks as the interpreter: this crate's
//! `mocks.rs` is copied into the program verbatim.
//!
//! The program depends on `wfc-runtime` by path, on sources embedded in `wfc` itself
//! (`build.rs`): the runtime, macro, core, IR, journal and store crates of this very build and
//! the workspace's lock file, written once into the cache under `sources/<hash>/`. So an
//! installed `wfc` needs no clone, and a program never links another runtime than the one `wfc`
//! was built with. `WFC_RUNTIME_PATH` points it at another runtime crate directory instead (a
//! checkout being worked on; a durable program takes `wfc-journal` and `wfc-stores` from beside
//! it); a `wfc` built from a registry package, which has nothing embedded, depends on the
//! registry's `wfc-runtime` (and `wfc-journal` and `wfc-stores`) of its own version.
//!
//! Layout of the cache (`$WFC_CACHE_DIR`, default the per-user cache directory: `~/.cache/wfc`
//! on Linux, `~/Library/Caches/wfc` on macOS): `sources/<hash>/` holds the embedded sources,
//! `programs/<hash>/` one program per set of definitions (so concurrent `wfc` processes
//! never rewrite each other's sources) and `target/` is shared by all of them, so the runtime and
//! its dependencies are compiled once and later builds are incremental.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use wfc_core::Format;

use crate::check::DefinitionText;
use crate::engine::Execution;
use crate::outcome::Outcome;

/// The mock code shared with the generated program.
const MOCKS_RS: &str = include_str!("mocks.rs");

/// The durable part of a durable program (see [`main_rs_with`]).
const DURABLE_RS: &str = r#"
/// Where a durable run keeps its execution.
struct Store {
    url: String,
    name: String,
    /// The registered version this program's definition is (wfc registers it first).
    version: String,
}

/// How a durable run ended: it ran (to its end), or the execution had already finished and
/// this is its stored outcome.
enum Ran {
    Ran(wfc_runtime::ExecutionResult),
    Stored(Value),
}

/// Opens (starts or resumes) the execution: its journal, or the stored outcome of a finished one.
async fn open_journal(
    store: &Store,
    definition: &wfc_runtime::DefinitionId<'_>,
    input: &Value,
    options: &wfc_runtime::RunOptions,
) -> Result<Result<std::sync::Arc<wfc_journal::Journal>, Value>, String> {
    use wfc_journal::{Journal, Opened};
    let db = wfc_stores::connect(&store.url).await.map_err(|e| e.to_string())?;
    // Pinned to this program's version: an execution pinned to another one is refused and left
    // as it is (compiled code runs only its own version).
    let opened =
        Journal::open_version_id(std::sync::Arc::clone(&db), &store.name, definition, &store.version, input, &options.clock)
        .await
        .map_err(|e| e.to_string())?;
    match opened {
        Opened::Running(journal) => Ok(Ok(journal)),
        Opened::Finished(record) => {
            let history = db.read_history(&store.name).await.map_err(|e| e.to_string())?;
            let mut out = serde_json::Map::new();
            out.insert("status".into(), Value::from(record.status.as_str()));
            if let Some(output) = record.output {
                out.insert("output".into(), output);
            }
            if let Some(error) = record.error {
                out.insert("error".into(), Value::from(error));
            }
            if let Some(cause) = record.cause {
                out.insert("cause".into(), Value::from(cause));
            }
            let history = serde_json::to_value(&history).map_err(|e| format!("cannot serialize the history: {e}"))?;
            out.insert("history".into(), history);
            Ok(Err(Value::Object(out)))
        }
    }
}

/// Runs `run` while holding the execution's lease (a process that loses it stops).
async fn hold<F: Future<Output = wfc_runtime::ExecutionResult>>(
    store: &Store,
    journal: &wfc_journal::Journal,
    run: F,
) -> Result<wfc_runtime::ExecutionResult, String> {
    let owner = format!("run-{}", std::process::id());
    tokio::select! {
        result = run => Ok(result),
        e = journal.hold_lease(&owner, wfc_runtime::durable::DEFAULT_LEASE) => {
            Err(format!("execution '{}' was taken away from this process: {e}", store.name))
        }
    }
}
"#;

/// The callback-answering code shared with the generated program.
const CALLBACK_ANSWERS_RS: &str = include_str!("callback_answers.rs");

/// The program built by [`prepare`], reused by every execution whose definition it contains.
static PREPARED: Mutex<Option<Program>> = Mutex::new(None);

/// A built program: its binary and the module of each definition it contains.
#[derive(Debug, Clone)]
struct Program {
    binary: PathBuf,
    dir: PathBuf,
    /// Definition key → module name.
    modules: BTreeMap<String, String>,
}

/// One definition to compile into a program.
struct Unit<'a> {
    key: String,
    text: &'a DefinitionText,
    workflow: &'a wfc_ir::Workflow,
    /// The optimizer passes the module is built with (`workflow` was loaded with the same).
    passes: wfc_core::optimize::Passes,
}

impl<'a> Unit<'a> {
    fn new(text: &'a DefinitionText, workflow: &'a wfc_ir::Workflow, passes: wfc_core::optimize::Passes) -> Unit<'a> {
        let ext = match Format::from_path(&text.path) {
            Format::Yaml => "yaml",
            Format::Json => "json",
        };
        // The key covers the subflow registry too, so a changed sibling rebuilds the program.
        let mut hashed = text.text.clone();
        if wfc_runtime::sw::is_sw(workflow) {
            for (path, sibling) in text.sw_registry().into_iter().chain(text.files_read()) {
                hashed.push_str(&path);
                hashed.push_str(&sibling);
            }
        }
        // The passes are part of the key: one definition under two pass settings is two
        // modules (and a program may hold both).
        if passes != wfc_core::optimize::Passes::default() {
            hashed.push_str("\0passes:");
            hashed.push_str(&pass_names(passes).join(","));
        }
        Unit { key: format!("{:016x}{ext}", fnv1a(hashed.as_bytes())), text, workflow, passes }
    }

    /// The macro's pass arguments: none for the defaults, else every pass named exactly
    /// (`no_opt = ["all"], opt = [...]`).
    fn pass_args(&self) -> String {
        if self.passes == wfc_core::optimize::Passes::default() {
            return String::new();
        }
        let names: Vec<String> = pass_names(self.passes).iter().map(|n| lit(n)).collect();
        format!(", no_opt = [\"all\"], opt = [{}]", names.join(", "))
    }

    fn module(&self) -> String {
        format!("w_{}", &self.key[..16.min(self.key.len())])
    }

    /// The file name the definition is stored under. The compiler names a workflow after the
    /// stem of its file, so the stored file keeps the workflow's name: both engines then report
    /// the same `stateMachineArn` in their histories.
    fn file_name(&self) -> String {
        let lang = if wfc_runtime::sw::is_sw(self.workflow) { "sw" } else { "asl" };
        let ext = if self.key.ends_with("yaml") { "yaml" } else { "json" };
        format!("{}.{lang}.{ext}", self.workflow.name)
    }

    /// For a Serverless Workflow, the SW definitions of its subflow registry (beside it and on
    /// `WFC_SUBFLOW_PATH`), which the macro finds next to the stored copy, and the files it names
    /// (schemas) at their paths relative to it: (relative path, text).
    fn siblings(&self) -> Vec<(String, String)> {
        if !wfc_runtime::sw::is_sw(self.workflow) {
            return Vec::new();
        }
        let mut out: Vec<(String, String)> = Vec::new();
        for (path, text) in self.text.sw_registry() {
            let Some(name) = Path::new(&path).file_name().and_then(|n| n.to_str()) else { continue };
            // The first of two same-named files wins, as it does in the registry.
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.to_owned(), text));
            }
        }
        out.extend(self.text.files_read());
        out
    }
}

/// The names of the passes that run, in pipeline order.
fn pass_names(passes: wfc_core::optimize::Passes) -> Vec<&'static str> {
    passes.enabled().into_iter().map(wfc_core::optimize::Pass::name).collect()
}

/// FNV-1a, 64 bits: a stable hash for cache keys (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The sources embedded by `build.rs`: `EMBEDDED` and `EMBEDDED_HASH`.
mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The cache directory: `$WFC_CACHE_DIR`, else `wfc` in the user's cache directory.
fn cache_dir() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("WFC_CACHE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => dirs::cache_dir()
            .ok_or(
                "the compiled engine needs a cache directory and this system names none (no HOME?); set WFC_CACHE_DIR",
            )?
            .join("wfc"),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create the cache directory {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Where the program finds `wfc-runtime`.
enum RuntimeSource {
    /// A crate directory: `WFC_RUNTIME_PATH`, or the embedded sources written into the cache.
    Path(PathBuf),
    /// The registry's `wfc-runtime` of this exact version (a `wfc` with nothing embedded).
    Registry,
}

/// Finds (or writes) the runtime sources; the bool says whether anything was written now.
fn runtime_source(cache: &Path) -> Result<(RuntimeSource, bool), String> {
    if let Some(d) = std::env::var_os("WFC_RUNTIME_PATH").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(d);
        let dir = dir.canonicalize().map_err(|e| {
            format!(
                "WFC_RUNTIME_PATH is {}, which is not a directory ({e}); unset it to use the runtime built into wfc",
                dir.display()
            )
        })?;
        return Ok((RuntimeSource::Path(dir), false));
    }
    if embedded::EMBEDDED.is_empty() {
        return Ok((RuntimeSource::Registry, false));
    }
    let root = cache.join("sources").join(format!("{:016x}", embedded::EMBEDDED_HASH));
    let mut wrote = false;
    // A marker written last: a directory without it was interrupted and is written again.
    // The files are written whole (write then rename), so two processes may do this at once.
    let marker = root.join(".complete");
    if !marker.exists() {
        for (rel, bytes) in embedded::EMBEDDED {
            wrote |= write_if_changed(&root.join(rel), bytes)?;
        }
        write_if_changed(&marker, "")?;
    }
    Ok((RuntimeSource::Path(root.join("runtime")), wrote))
}

/// The stores a durable program opens its `--store` URL with (`wfc-stores` and its features).
#[derive(Debug, Clone, Copy)]
enum Stores {
    /// `sqlite:` URLs.
    Sqlite,
    /// `sqlite:` and `postgres://` URLs.
    SqliteAndPostgres,
}

/// A Rust string literal for `s` (`{:?}` of a str is valid Rust syntax).
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// The program's manifest. The runtime always has JSONata and JSON Schema (`wfc` compiles any
/// definition, and one feature set keeps one runtime build in the cache); a durable program adds
/// the runtime's feature `durable`, `wfc-journal` and `wfc-stores` (the crates beside the
/// runtime: the journal, and the stores: SQLite, and with `postgres` PostgreSQL too).
fn cargo_toml_with(package: &str, runtime: &RuntimeSource, durable: Option<Stores>) -> String {
    let (runtime_dep, journal_dep, stores_dep) = match runtime {
        RuntimeSource::Path(dir) => {
            let beside = |krate: &str| {
                let path = dir.parent().unwrap_or(dir).join(krate);
                format!("path = {}", lit(&path.to_string_lossy()))
            };
            (format!("path = {}", lit(&dir.to_string_lossy())), beside("wfc-journal"), beside("wfc-stores"))
        }
        RuntimeSource::Registry => {
            let version = format!("version = {}", lit(&format!("={}", env!("CARGO_PKG_VERSION"))));
            (version.clone(), version.clone(), version)
        }
    };
    // As the `wfc` command's own runtime (the interpreter): what one engine reads, so does the other.
    let features: Vec<String> =
        ["jsonata", "json-schema", "parquet"].into_iter().chain(durable.map(|_| "durable")).map(lit).collect();
    let features = features.join(", ");
    // A durable program's journal and stores.
    let durable_deps = match durable {
        None => String::new(),
        Some(Stores::Sqlite) => format!("wfc-journal = {{ {journal_dep} }}\nwfc-stores = {{ {stores_dep} }}\n"),
        Some(Stores::SqliteAndPostgres) => {
            format!("wfc-journal = {{ {journal_dep} }}\nwfc-stores = {{ {stores_dep}, features = [\"postgres\"] }}\n")
        }
    };
    format!(
        r#"# @generated by wfc (compiled engine). Do not edit.
[package]
name = {package}
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
wfc-runtime = {{ {runtime_dep}, features = [{features}] }}
{durable_deps}serde_json = {{ version = "1", features = ["preserve_order"] }}
tokio = {{ version = "1", features = ["rt", "time", "macros", "sync"] }}

# Not part of any enclosing workspace (the cache may live inside one).
[workspace]

# These programs are built, run a few times and thrown away: no debug info to write and link.
[profile.dev]
debug = false
"#,
        package = lit(package),
    )
}

/// The program's source. A `durable` program runs an execution with a journal when the request
/// names a store (`store`, `store_name`): it opens (starts or resumes) the execution there,
/// holds its lease while it runs, and prints a finished execution's stored outcome instead of
/// running it again, exactly as `wfc run --store` does on the interpreter.
fn main_rs_with(units: &[Unit<'_>], durable: bool) -> String {
    let mut s = String::from(
        r#"//! @generated by wfc (compiled engine). Do not edit.
//! Usage: <binary> <module> <request.json>; prints the outcome as JSON on stdout.
#![allow(dead_code)]

mod callback_answers;
mod mocks;

use std::future::Future;
use std::process::ExitCode;

use wfc_runtime::{Failure, TaskContext, Value};

"#,
    );
    for u in units {
        let _ = writeln!(
            s,
            "wfc_runtime::include_workflow!(path = {}, name = {}{});",
            lit(&format!("workflows/{}/{}", u.key, u.file_name())),
            lit(&u.module()),
            u.pass_args()
        );
    }
    s.push_str(
        r#"
/// Answers every task from the mocks, exactly as `wfc run --engine interp` does.
struct Mocked {
    mocks: mocks::MockSet,
}

async fn answer(mocks: &mocks::MockSet, resource: &str, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
    let Some(entry) = mocks.next(Some(ctx.state_name()), resource) else {
        let (error, cause) = mocks.no_mock(Some(ctx.state_name()), resource);
        return Err(Failure::new(error, cause));
    };
    let entry = mocks::MockSet::resolve(entry, ctx.function_name());
    if entry.delay_seconds > 0.0 {
        tokio::time::sleep(std::time::Duration::from_secs_f64(entry.delay_seconds)).await;
    }
    mocks::MockSet::answer(&entry, &input, |response| {
        wfc_runtime::lambda::mocked_response_result(resource, response).map_err(|f| (f.error, f.cause))
    })
    .map_err(|(error, cause)| Failure::new(error, cause))
}
"#,
    );
    for u in units {
        let _ = writeln!(s, "\nimpl {}::Handler for Mocked {{", u.module());
        for (resource, method, _states) in wfc_core::codegen::handler_methods(u.workflow) {
            let _ = writeln!(
                s,
                "    fn {method}(&self, input: Value, ctx: TaskContext) -> impl Future<Output = Result<Value, Failure>> + Send {{\n        answer(&self.mocks, {}, input, ctx)\n    }}",
                lit(&resource)
            );
        }
        s.push_str("}\n");
    }
    s.push_str(
        r#"
/// What a module's run needs. Each module runs in a function of its own: in a debug build a
/// function's frame holds every temporary of every match arm, so one `match` over hundreds of
/// workflows' futures would overflow the main thread's stack.
struct Run {
    virtual_time: bool,
    answers: callback_answers::CallbackAnswers,
    callbacks: wfc_runtime::Callbacks,
    bus: wfc_runtime::events::EventBus,
    events: Vec<(f64, Value)>,
    handler: Mocked,
    input: Value,
    options: wfc_runtime::RunOptions,
}
"#,
    );
    if durable {
        s.push_str(DURABLE_RS);
    }
    for u in units {
        let m = u.module();
        let _ = writeln!(
            s,
            "\n#[inline(never)]\nfn run_{m}(r: Run) -> Result<wfc_runtime::ExecutionResult, String> {{\n    drive(r.virtual_time, r.answers.serve(&r.callbacks, wfc_runtime::events::with_deliveries(&r.bus, r.events, {m}::run_with(&r.handler, r.input, r.options))))\n}}"
        );
        if durable {
            let _ = writeln!(
                s,
                "\n#[inline(never)]\nfn run_durable_{m}(r: Run, store: &Store) -> Result<Ran, String> {{\n    let Run {{ virtual_time, answers, callbacks, bus, events, handler, input, options }} = r;\n    drive(virtual_time, async move {{\n        let journal = match open_journal(store, &{m}::DEFINITION_ID, &input, &options).await? {{\n            Ok(journal) => journal,\n            Err(stored) => return Ok(Ran::Stored(stored)),\n        }};\n        let options = options.with_journal(journal.clone());\n        let run = answers.serve(&callbacks, wfc_runtime::events::with_deliveries(&bus, events, {m}::run_with(&handler, input, options)));\n        hold(store, &journal, run).await.map(Ran::Ran)\n    }})?\n}}"
            );
        }
    }
    s.push_str(
        r#"
fn drive<F: Future>(virtual_time: bool, f: F) -> Result<F::Output, String> {
    if virtual_time {
        return Ok(wfc_runtime::block_on_virtual(f));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    Ok(runtime.block_on(f))
}

fn main() -> ExitCode {
    match real_main() {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<Value, String> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(module), Some(request)) = (args.get(1), args.get(2)) else {
        return Err("usage: <binary> <module> <request.json>".into());
    };
    let text = std::fs::read_to_string(request).map_err(|e| format!("cannot read {request}: {e}"))?;
    let request: Value = serde_json::from_str(&text).map_err(|e| format!("{request}: {e}"))?;
    let mut mocks = mocks::MockSet::from_wfc(&request["mocks"]).map_err(|e| format!("mocks: {e}"))?;
    if let Some(hint) = request["mocks_hint"].as_str() {
        mocks = mocks.with_hint(hint);
    }
    let virtual_time = request["virtual_time"].as_bool().unwrap_or(false);
    let options = if virtual_time { wfc_runtime::RunOptions::virtual_time() } else { wfc_runtime::RunOptions::real() };
    let mut options = options.with_seed(request["seed"].as_u64().unwrap_or(0));
    if let Some(start) = request["start_time"].as_str() {
        options.clock = wfc_runtime::Clock::virtual_from_rfc3339(start)?;
    }
    if let Some(name) = request["name"].as_str() {
        options = options.with_name(name);
    }
    // The state machine's name is the request's, not the module's: one module serves every
    // definition with the same text, whatever its name.
    if let Some(name) = request["state_machine_name"].as_str() {
        options = options.with_state_machine_name(name);
    }
    if let (Some(region), Some(account)) = (request["account"][0].as_str(), request["account"][1].as_str()) {
        options = options.with_account(region, account);
    }
    if let Some(root) = request["item_root"].as_str() {
        options = options.with_item_root(root);
    }
    if let Some(root) = request["result_root"].as_str() {
        options = options.with_result_root(root);
    }
    if request["history_level"].as_str() == Some("express") {
        options = options.with_history(wfc_runtime::HistoryLevel::Express);
    }
    if let Some(machine_type) = request["machine_type"].as_str() {
        options = options.with_machine_type(machine_type.parse()?);
    }
    let input = request["input"].clone();
    let bus = wfc_runtime::events::EventBus::new();
    let options = options.with_events(bus.clone());
    let events: Vec<(f64, Value)> = request["events"]
        .as_array()
        .map(|a| a.iter().map(|e| (e[0].as_f64().unwrap_or(0.0), e[1].clone())).collect())
        .unwrap_or_default();
    let handler = Mocked { mocks };
    let callbacks = wfc_runtime::Callbacks::new();
    let options = options.with_callbacks(callbacks.clone());
    let answers = match request.get("callbacks") {
        Some(doc) if !doc.is_null() => callback_answers::CallbackAnswers::from_json(doc).map_err(|e| format!("callbacks: {e}"))?,
        _ => callback_answers::CallbackAnswers::default(),
    };
    let run = Run { virtual_time, answers, callbacks, bus, events, handler, input, options };
"#,
    );
    if durable {
        s.push_str(
            r#"    if let (Some(url), Some(name)) = (request["store"].as_str(), request["store_name"].as_str()) {
        let version = request["store_version"].as_str().ok_or("the request names no store_version")?.to_owned();
        let store = Store { url: url.to_owned(), name: name.to_owned(), version };
        let ran = match module.as_str() {
"#,
        );
        for u in units {
            let m = u.module();
            let _ = writeln!(s, "            {} => run_durable_{m}(run, &store)?,", lit(&m));
        }
        s.push_str(
            r#"            other => return Err(format!("this program has no workflow module {other:?}")),
        };
        return match ran {
            Ran::Ran(result) => Ok(outcome_json(result, virtual_time)?),
            Ran::Stored(stored) => Ok(stored),
        };
    }
"#,
        );
    }
    s.push_str(
        r#"    let result = match module.as_str() {
"#,
    );
    for u in units {
        let m = u.module();
        let _ = writeln!(s, "        {} => run_{m}(run)?,", lit(&m));
    }
    s.push_str(
        r#"        other => return Err(format!("this program has no workflow module {other:?}")),
    };
    outcome_json(result, virtual_time)
}

/// The outcome of a run, as `wfc run` prints it.
fn outcome_json(result: wfc_runtime::ExecutionResult, virtual_time: bool) -> Result<Value, String> {
    let mut out = serde_json::Map::new();
    let status = match result.status {
        wfc_runtime::Status::Succeeded => "SUCCEEDED",
        wfc_runtime::Status::Failed => "FAILED",
        wfc_runtime::Status::TimedOut => "TIMED_OUT",
    };
    out.insert("status".into(), Value::from(status));
    if let Some(output) = result.output {
        out.insert("output".into(), output);
    }
    if let Some(error) = result.error {
        out.insert("error".into(), Value::from(error.error));
        out.insert("cause".into(), Value::from(error.cause));
    }
    if virtual_time {
        out.insert("elapsed_seconds".into(), Value::from(result.elapsed.as_secs_f64()));
    }
    let history = serde_json::to_value(&result.history).map_err(|e| format!("cannot serialize the history: {e}"))?;
    out.insert("history".into(), history);
    Ok(Value::Object(out))
}
"#,
    );
    if durable {
        // The PostgreSQL store needs tokio's I/O driver.
        return s.replacen(".enable_time()", ".enable_all()", 1);
    }
    s
}

/// Writes `contents` to `path` unless it already holds exactly that, so cargo's change detection
/// (file modification times) does not rebuild what did not change. True when it wrote.
fn write_if_changed(path: &Path, contents: impl AsRef<[u8]>) -> Result<bool, String> {
    let contents = contents.as_ref();
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    // Write then rename, so a concurrent reader never sees half a file.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, contents).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(true)
}

/// Writes and builds the program for `units` (with SQLite durable runs).
fn build(units: &[Unit<'_>]) -> Result<Program, String> {
    build_with(units, false)
}

/// Writes and builds the program for `units`. Every program can run an execution durably on
/// SQLite (the runtime's feature `durable`, so `--store sqlite:...` needs no build of its own);
/// with `postgres`, a program of its own also has the PostgreSQL store.
fn build_with(units: &[Unit<'_>], postgres: bool) -> Result<Program, String> {
    let cache = cache_dir()?;
    let (runtime, mut changed) = runtime_source(&cache)?;
    let mut keys: Vec<&str> = units.iter().map(|u| u.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    let program_key = format!("{:016x}{}", fnv1a(keys.join(",").as_bytes()), if postgres { "-postgres" } else { "" });
    let package = format!("wfc-program-{program_key}");
    let dir = cache.join("programs").join(&program_key);
    changed |= write_if_changed(
        &dir.join("Cargo.toml"),
        &cargo_toml_with(&package, &runtime, Some(if postgres { Stores::SqliteAndPostgres } else { Stores::Sqlite })),
    )?;
    changed |= write_if_changed(&dir.join("src").join("mocks.rs"), MOCKS_RS)?;
    changed |= write_if_changed(&dir.join("src").join("callback_answers.rs"), CALLBACK_ANSWERS_RS)?;
    changed |= write_if_changed(&dir.join("src").join("main.rs"), &main_rs_with(units, true))?;
    for u in units {
        changed |= write_if_changed(&dir.join("workflows").join(&u.key).join(u.file_name()), &u.text.text)?;
        for (name, text) in u.siblings() {
            if name != u.file_name() {
                changed |= write_if_changed(&dir.join("workflows").join(&u.key).join(name), &text)?;
            }
        }
    }
    // Start from the workspace's lock file so the program builds with the versions wfc was
    // tested with, and without a registry lookup when they are already downloaded.
    let lock = dir.join("Cargo.lock");
    if !lock.exists()
        && let RuntimeSource::Path(runtime) = &runtime
        && let Some(ws_lock) = runtime.parent().map(|p| p.join("Cargo.lock"))
        && let Ok(text) = std::fs::read_to_string(ws_lock)
    {
        write_if_changed(&lock, &text)?;
    }
    let target = cache.join("target");
    let binary = target.join("debug").join(format!("{package}{}", std::env::consts::EXE_SUFFIX));
    // Say why there is a wait only when there will be one: nothing changed and a built binary
    // means cargo has nothing to do.
    if changed || !binary.exists() {
        eprintln!("wfc: {}", build_note(&target, &dir));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .arg("build")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("RUSTFLAGS");
    // On a terminal cargo shows its own progress (a bar and the crates it compiles); otherwise
    // (tests, CI logs, pipes) it is quiet and only its errors are shown, when it fails.
    use std::io::IsTerminal;
    let failed = if std::io::stderr().is_terminal() {
        let status = command.status().map_err(|e| format!("cannot run {}: {e}", PathBuf::from(&cargo).display()))?;
        (!status.success()).then(|| "(cargo's messages are above)".to_owned())
    } else {
        let output = command
            .arg("--quiet")
            .output()
            .map_err(|e| format!("cannot run {}: {e}", PathBuf::from(&cargo).display()))?;
        (!output.status.success()).then(|| {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        })
    };
    if let Some(messages) = failed {
        return Err(format!("building the compiled engine in {} failed:\n{messages}", dir.display()));
    }
    if !binary.exists() {
        return Err(format!("cargo reported success but {} does not exist", binary.display()));
    }
    let modules = units.iter().map(|u| (u.key.clone(), u.module())).collect();
    Ok(Program { binary, dir, modules })
}

/// What the build about to run does: the first one in a cache also compiles the runtime and
/// its dependencies (minutes); later ones only the program (seconds).
fn build_note(target: &Path, dir: &Path) -> String {
    let runtime_built = std::fs::read_dir(target.join("debug").join("deps"))
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libwfc_runtime-")))
        .unwrap_or(false);
    if runtime_built {
        format!("building the compiled engine in {}", dir.display())
    } else {
        format!(
            "building the compiled engine in {}; this first build also compiles the runtime and its dependencies into {} (a few minutes, once)",
            dir.display(),
            target.display()
        )
    }
}

/// Builds one program containing every given definition, for the executions that follow.
pub(crate) fn prepare(
    definitions: &[(&DefinitionText, &wfc_ir::Workflow)],
    passes: wfc_core::optimize::Passes,
) -> Result<(), String> {
    let mut units: Vec<Unit<'_>> = Vec::new();
    for (text, workflow) in definitions {
        let unit = Unit::new(text, workflow, passes);
        if !units.iter().any(|u| u.key == unit.key) {
            units.push(unit);
        }
    }
    if units.is_empty() {
        return Ok(());
    }
    let program = build(&units)?;
    *PREPARED.lock().unwrap_or_else(|p| p.into_inner()) = Some(program);
    Ok(())
}

/// Runs one execution with the compiled engine, building a program for it when [`prepare`] did not.
pub(crate) fn execute(execution: &Execution<'_>) -> Result<Outcome, String> {
    execute_in(execution, None)
}

/// Runs one execution durably with the compiled engine (`wfc run --store URL --name NAME
/// --engine compiled`): the program opens execution `name` in the store at `url` (starting or
/// resuming it) and runs it with a journal, as the interpreter does.
pub(crate) fn execute_durable(
    execution: &Execution<'_>,
    url: &str,
    name: &str,
    version: &str,
) -> Result<Outcome, String> {
    execute_in(execution, Some((url, name, version)))
}

fn execute_in(execution: &Execution<'_>, store: Option<(&str, &str, &str)>) -> Result<Outcome, String> {
    let unit = Unit::new(execution.definition, execution.workflow, execution.passes);
    let prepared = PREPARED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    // A PostgreSQL store needs the program built with it; SQLite is in every program.
    let postgres = store.is_some_and(|(url, _, _)| !url.starts_with("sqlite:"));
    let program = match prepared {
        Some(p) if !postgres && p.modules.contains_key(&unit.key) => p,
        _ => build_with(std::slice::from_ref(&unit), postgres)?,
    };
    let module = program.modules.get(&unit.key).cloned().unwrap_or_else(|| unit.module());
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let request_path =
        program.dir.join(format!("request-{}-{}.json", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let request = json!({
        "input": execution.input,
        "mocks": execution.mocks.to_wfc_json(),
        "mocks_hint": execution.mocks.hint(),
        "virtual_time": execution.virtual_time,
        "seed": execution.seed,
        "name": execution.name,
        "state_machine_name": execution.machine_name(),
        "start_time": execution.start_time,
        "account": execution.account.as_ref().map(|(region, account)| json!([region, account])),
        "callbacks": execution.callbacks,
        "item_root": execution.item_root.as_ref().map(|p| p.to_string_lossy().into_owned()),
        "result_root": execution.result_root.as_ref().map(|p| p.to_string_lossy().into_owned()),
        "history_level": execution.history_level.name(),
        "machine_type": execution.machine_type.name(),
        "events": execution.events.iter().map(|(at, e)| json!([at, e])).collect::<Vec<_>>(),
        "store": store.map(|(url, _, _)| url),
        "store_name": store.map(|(_, name, _)| name),
        "store_version": store.map(|(_, _, version)| version),
    });
    std::fs::write(&request_path, request.to_string())
        .map_err(|e| format!("cannot write {}: {e}", request_path.display()))?;
    let output = Command::new(&program.binary).arg(&module).arg(&request_path).output();
    let _ = std::fs::remove_file(&request_path);
    let output = output.map_err(|e| format!("cannot run {}: {e}", program.binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "the compiled program failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let value: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("the compiled program printed something that is not JSON: {e}"))?;
    Outcome::from_json(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn rust_literals_escape() {
        assert_eq!(lit("a\"b\\c"), r#""a\"b\\c""#);
    }

    /// The "first build" warning is given only while the cache holds no built runtime (the
    /// minutes-long build); once it does, the note is one line.
    #[test]
    fn the_first_build_note_only_on_a_cache_without_the_runtime() {
        let root = std::env::temp_dir().join(format!("wfc-build-note-{}", std::process::id()));
        let (target, program) = (root.join("target"), root.join("programs").join("p"));
        let _ = std::fs::remove_dir_all(&root);
        let cold = build_note(&target, &program);
        assert!(cold.contains("this first build also compiles the runtime"), "{cold}");
        let deps = target.join("debug").join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        std::fs::write(deps.join("libserde-0123456789abcdef.rlib"), b"").unwrap();
        assert!(build_note(&target, &program).contains("first build"), "another crate is not the runtime");
        std::fs::write(deps.join("libwfc_runtime-0123456789abcdef.rlib"), b"").unwrap();
        let warm = build_note(&target, &program);
        assert_eq!(warm, format!("building the compiled engine in {}", program.display()));
        let _ = std::fs::remove_dir_all(&root);
    }
}
