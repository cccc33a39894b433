//! Generated code as expected `.rs` files that are themselves compiled here (as typify's
//! tests/schemas.rs does): `tests/expected/<stem>.asl.json` must generate exactly
//! `tests/expected/<stem>.rs` (rewrite them with `WFC_BLESS=1` after reading the diff), and this
//! test binary includes those files, so the expected code must compile, and runs them against
//! the interpreter: same status, output, error and whole history on each input.
//!
//! The fixtures are made of the states codegen writes as Rust (JSONPath Pass, Choice, Succeed,
//! Task, Wait, Fail, Parallel and INLINE Map, and JSONPath Assign on all of them; JSONata Pass,
//! Choice, Succeed, Task, Wait, Fail, Parallel and INLINE Map; Task Credentials; DISTRIBUTED
//! Maps, JSONPath and JSONata, with their Map Runs' fields; see docs/status.md, issue 20), so
//! these runs exercise
//! the generated paths, templates, intrinsics, conditions, Retry/Catch tables, nested machines,
//! Assign blocks and JSONata expressions, including their failures.

use std::path::Path;

use serde_json::{Value, json};
use wfc_core::{Settings, Source, codegen};
use wfc_interp::{self as interp, Handlers};
use wfc_runtime::{ExecutionResult, Failure, RunOptions, TaskContext, block_on_virtual};

include!("../expected/count_loop.rs");
include!("../expected/pass_choice.rs");
include!("../expected/task_retry_catch.rs");
include!("../expected/wait_fail.rs");
include!("../expected/parallel_map.rs");
include!("../expected/assign.rs");
include!("../expected/assign_states.rs");
include!("../expected/jsonata_states.rs");
include!("../expected/jsonata_nested.rs");
include!("../expected/distributed_map.rs");
include!("../expected/sw_states.rs");
include!("../expected/plain_tasks.rs");

const STEMS: [&str; 12] = [
    "count_loop",
    "pass_choice",
    "task_retry_catch",
    "wait_fail",
    "parallel_map",
    "assign",
    "assign_states",
    "jsonata_states",
    "jsonata_nested",
    "distributed_map",
    "sw_states",
    "plain_tasks",
];

fn expected_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected")
}

/// The definition's file name: `<stem>.sw.json` for a Serverless Workflow fixture, else
/// `<stem>.asl.json`.
fn file_name(stem: &str) -> String {
    let sw = format!("{stem}.sw.json");
    if expected_dir().join(&sw).is_file() { sw } else { format!("{stem}.asl.json") }
}

fn definition(stem: &str) -> String {
    let path = expected_dir().join(file_name(stem));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The settings a fixture compiles with: for an SW fixture, the other `*.sw.json` files of
/// tests/expected are compiled together with it (its subflows' registry).
fn settings_for(stem: &str) -> Settings {
    let mut settings = Settings::new();
    let own = file_name(stem);
    let mut others: Vec<std::path::PathBuf> = std::fs::read_dir(expected_dir())
        .expect("tests/expected")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".sw.json") && !p.ends_with(&own))
        .collect();
    others.sort();
    if own.ends_with(".sw.json") {
        for other in others {
            let text = std::fs::read_to_string(&other).unwrap_or_else(|e| panic!("{}: {e}", other.display()));
            settings.sw_workflow(other.to_string_lossy(), text);
        }
    }
    settings
}

fn generate(stem: &str) -> String {
    let text = definition(stem);
    let path = format!("expected/{}", file_name(stem));
    let mut settings = settings_for(stem);
    settings.module_name(stem);
    match wfc_core::compile(Source { path: &path, text: &text }, &settings) {
        Ok(compiled) => codegen::format(compiled.tokens),
        Err(diagnostics) => panic!("{path} does not compile:\n{}", diagnostics.render(false)),
    }
}

#[test]
fn expected_code_is_what_codegen_generates() {
    let bless = std::env::var_os("WFC_BLESS").is_some();
    for stem in STEMS {
        let code = generate(stem);
        let path = expected_dir().join(format!("{stem}.rs"));
        if bless {
            std::fs::write(&path, &code).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            expected == code,
            "{} is not what codegen generates now (rerun with WFC_BLESS=1 and read the diff):\n{code}",
            path.display()
        );
    }
}

/// The Pass, Choice and Task states of these fixtures are Rust in the expected code, not calls
/// into the per-state interpreter functions.
#[test]
fn pass_and_choice_are_generated_not_interpreted() {
    let tasks = std::fs::read_to_string(expected_dir().join("task_retry_catch.rs")).expect("expected code");
    assert!(!tasks.contains("exec::task("), "{tasks}");
    // One visit function per handler method (two), called by the three Task states; the state
    // with no data processing of its own is an `abi::PlainTask`, so it shares its method's visit
    // with every other such state.
    assert_eq!(tasks.matches("__wfc::abi::counted_task(").count(), 2, "{tasks}");
    // Whitespace aside: prettyplease wraps a call that does not fit its line.
    let compact: String = tasks.split_whitespace().collect();
    assert_eq!(compact.matches("matchtask_flaky(handler,exec,").count(), 2, "{tasks}");
    assert_eq!(compact.matches("matchtask_echo(handler,exec,").count(), 1, "{tasks}");
    assert_eq!(tasks.matches("static CODE: __wfc::abi::PlainTask").count(), 1, "{tasks}");
    assert!(tasks.contains("const RETRY: &[__wfc::abi::Retrier]"), "{tasks}");
    assert!(tasks.contains("__wfc::abi::CatchPath::Steps(PATH_0, \"$.error\")"), "{tasks}");
    let waits = std::fs::read_to_string(expected_dir().join("wait_fail.rs")).expect("expected code");
    assert!(!waits.contains("exec::wait(") && !waits.contains("exec::fail("), "{waits}");
    assert_eq!(waits.matches("__wfc::abi::wait(").count(), 5, "{waits}");
    assert_eq!(waits.matches("__wfc::abi::fail(").count(), 2, "{waits}");
    // Parallel and Map: their visits through `abi`, their branches and item processors generated
    // machines, and no state anywhere reads the embedded IR.
    let nested = std::fs::read_to_string(expected_dir().join("parallel_map.rs")).expect("expected code");
    assert!(!nested.contains("exec::parallel(") && !nested.contains("exec::map("), "{nested}");
    assert_eq!(nested.matches("__wfc::abi::parallel(").count(), 1, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::map(").count(), 2, "{nested}");
    assert_eq!(nested.matches("pub enum State {").count(), 5, "{nested}");
    assert!(!nested.contains("let machine = machine()?;"), "{nested}");
    // Assign on Pass and Wait: construction code, through `abi::pass_assign`/`abi::wait_assign`.
    let assign = std::fs::read_to_string(expected_dir().join("assign.rs")).expect("expected code");
    assert!(!assign.contains("exec::pass(") && !assign.contains("exec::wait("), "{assign}");
    assert_eq!(assign.matches("__wfc::abi::pass_assign(").count(), 2, "{assign}");
    assert_eq!(assign.matches("__wfc::abi::wait_assign(").count(), 1, "{assign}");
    assert!(!assign.contains("let machine = machine()?;"), "{assign}");
    // Assign on Choice (state and rules), Task, Parallel, Map and catchers: construction code
    // (`assigned`, catcher functions), no state handed to `exec`.
    let states = std::fs::read_to_string(expected_dir().join("assign_states.rs")).expect("expected code");
    for interpreted in ["exec::choice(", "exec::task(", "exec::parallel(", "exec::map(", "exec::pass("] {
        assert!(!states.contains(interpreted), "{interpreted}: {states}");
    }
    assert_eq!(states.matches("__wfc::abi::choice_assign(").count(), 1, "{states}");
    assert_eq!(states.matches("fn assigns(&self) -> bool").count(), 3, "{states}");
    assert_eq!(states.matches("as __wfc::abi::CatchAssign)").count(), 3, "{states}");
    assert!(!states.contains("let machine = machine()?;"), "{states}");
    // JSONata Pass, Choice, Wait, Task, Fail and Succeed: construction code over `static`
    // expressions, evaluated through `abi::jsonata`; no state handed to `exec`.
    let jsonata = std::fs::read_to_string(expected_dir().join("jsonata_states.rs")).expect("expected code");
    for interpreted in ["exec::choice(", "exec::task(", "exec::pass(", "exec::wait(", "exec::fail(", "exec::succeed("] {
        assert!(!jsonata.contains(interpreted), "{interpreted}: {jsonata}");
    }
    assert_eq!(jsonata.matches("__wfc::abi::pass_language(").count(), 2, "{jsonata}");
    assert_eq!(jsonata.matches("__wfc::abi::choice_language(").count(), 1, "{jsonata}");
    assert_eq!(jsonata.matches("__wfc::abi::jsonata_condition(").count(), 5, "{jsonata}");
    assert_eq!(jsonata.matches("__wfc::abi::wait_language(").count(), 2, "{jsonata}");
    assert_eq!(jsonata.matches("__wfc::abi::fail_jsonata(").count(), 3, "{jsonata}");
    assert_eq!(jsonata.matches("__wfc::abi::jsonata_seconds(").count(), 2, "{jsonata}");
    assert!(jsonata.contains("const CATCH: &[__wfc::abi::JsonataCatcher]"), "{jsonata}");
    assert!(jsonata.contains("\"Arguments/list/2\""), "{jsonata}");
    assert!(jsonata.contains("static JSONATA_0: __wfc::abi::StaticJsonata"), "{jsonata}");
    assert!(!jsonata.contains("let machine = machine()?;"), "{jsonata}");
    // JSONata Parallel and Map (Arguments, Items, ItemSelector, MaxConcurrency, Output, Assign,
    // catchers) and Task Credentials: the states' code, no state handed to `exec`.
    let nested = std::fs::read_to_string(expected_dir().join("jsonata_nested.rs")).expect("expected code");
    for interpreted in ["exec::parallel(", "exec::map(", "exec::task(", "exec::pass("] {
        assert!(!nested.contains(interpreted), "{interpreted}: {nested}");
    }
    assert_eq!(nested.matches("__wfc::abi::parallel(").count(), 1, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::map(").count(), 2, "{nested}");
    assert_eq!(nested.matches("fn has_credentials(&self) -> bool").count(), 2, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::jsonpath_role_arn(").count(), 1, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::jsonata_role_arn(").count(), 1, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::jsonata_items(").count(), 1, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::input_items(").count(), 1, "{nested}");
    assert_eq!(nested.matches("__wfc::abi::max_concurrency_jsonata(").count(), 1, "{nested}");
    assert!(nested.contains("\"ItemSelector/check\""), "{nested}");
    assert!(!nested.contains("let machine = machine()?;"), "{nested}");
    // Serverless Workflow: every state (18 of the workflow, 4 of each of the three generated
    // machines of its subflow compiled together: awaited, a foreach body, and started without
    // waiting) through `abi::sw_step`, none through `sw::step` nor reading an IR. The unawaited
    // one runs on the by-name handler (`ByName`), queued for `abi::sw_run_top`.
    let sw = std::fs::read_to_string(expected_dir().join("sw_states.rs")).expect("expected code");
    assert!(!sw.contains("__wfc::sw::step("), "{sw}");
    assert_eq!(sw.matches("__wfc::abi::sw_step(").count(), 30, "{sw}");
    assert_eq!(sw.matches("pub enum State {").count(), 4, "{sw}");
    assert_eq!(sw.matches("__wfc::abi::sw_detached_subflow(").count(), 1, "{sw}");
    assert!(sw.contains("impl Handler for ByName<'_>") && sw.contains("static META:"), "{sw}");
    assert!(!sw.contains("let machine = machine()?;"), "{sw}");
    // DISTRIBUTED Maps: their fields as `DistributedCode` (constants, templates, static paths
    // and expressions), their visits through `abi::map`, no state handed to `exec`.
    let dist = std::fs::read_to_string(expected_dir().join("distributed_map.rs")).expect("expected code");
    assert!(!dist.contains("exec::map(") && !dist.contains("exec::task("), "{dist}");
    assert_eq!(dist.matches("__wfc::abi::map(").count(), 4, "{dist}");
    assert_eq!(dist.matches("impl __wfc::abi::DistributedCode for Code").count(), 4, "{dist}");
    assert_eq!(dist.matches("fn has_item_reader(&self) -> bool").count(), 2, "{dist}");
    assert_eq!(dist.matches("fn has_item_batcher(&self) -> bool").count(), 3, "{dist}");
    assert_eq!(dist.matches("fn has_result_writer(&self) -> bool").count(), 1, "{dist}");
    assert!(dist.contains("__wfc::abi::InputType::Csv"), "{dist}");
    assert_eq!(dist.matches("__wfc::abi::count_jsonata(").count(), 2, "{dist}");
    assert_eq!(dist.matches("__wfc::abi::percentage_jsonata(").count(), 1, "{dist}");
    assert_eq!(dist.matches("__wfc::abi::count_path(").count(), 4, "{dist}");
    assert_eq!(dist.matches("__wfc::abi::percentage_path(").count(), 1, "{dist}");
    assert!(!dist.contains("let machine = machine()?;"), "{dist}");
    // The driver loop is the runtime's: generated machines supply only their steps.
    for stem in STEMS {
        let code = std::fs::read_to_string(expected_dir().join(format!("{stem}.rs"))).expect("expected code");
        assert!(!code.contains("state = match state"), "{stem}");
        assert_eq!(code.matches("__wfc::abi::drive(").count(), code.matches("pub enum State {").count(), "{stem}");
    }
    let stems = ["count_loop", "pass_choice"];
    for stem in stems {
        let code = std::fs::read_to_string(expected_dir().join(format!("{stem}.rs"))).expect("expected code");
        assert!(!code.contains("exec::pass("), "{stem}");
        assert!(!code.contains("exec::choice("), "{stem}");
        assert!(
            code.contains("__wfc::abi::pass(")
                || code.contains("__wfc::abi::pass_bounded(")
                || code.contains("__wfc::abi::pass_built("),
            "{stem}"
        );
        // A Choice with InputPath and OutputPath `$` outputs its input (`choice_kept`).
        assert!(code.contains("__wfc::abi::choice(") || code.contains("__wfc::abi::choice_kept("), "{stem}");
    }
    let count_loop = std::fs::read_to_string(expected_dir().join("count_loop.rs")).expect("expected code");
    assert!(count_loop.contains("__wfc::abi::math_add("), "{count_loop}");
    // `{"i": States.MathAdd(...)}` serializes to at most 30 bytes, 1 level deep: the runtime
    // skips its payload check unless the limits are lower.
    // Its values are read first, then the object is put together in the spent input's
    // allocations (`object_in`): the loop's Pass allocates nothing at the express level.
    assert!(count_loop.contains("__wfc::abi::pass_built(") && count_loop.contains("30usize,"), "{count_loop}");
    assert!(count_loop.contains("__wfc::abi::object_in(spare, &[\"i\"], values)"), "{count_loop}");
    assert!(count_loop.contains("== Some(::core::cmp::Ordering::Less)"), "{count_loop}");
}

struct NoTasks;
impl count_loop::Handler for NoTasks {}
impl pass_choice::Handler for NoTasks {}
impl wait_fail::Handler for NoTasks {}
impl assign::Handler for NoTasks {}

fn interpret_with(stem: &str, input: &Value, options: RunOptions) -> ExecutionResult {
    let text = definition(stem);
    let loaded = wfc_core::load_with(Source { path: stem, text: &text }, &settings_for(stem))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let handlers = Handlers::new()
        .on("arn:aws:lambda:us-east-1:123456789012:function:Flaky", |input, ctx| async move { flaky(input, &ctx) })
        .on("arn:aws:states:::wfc:echo", echo)
        .on("echo", sw_echo)
        .on("flaky \"f\" {#} ✓", sw_flaky)
        .on("audit-sub", sw_audit);
    block_on_virtual(interp::run(&loaded.workflow, &handlers, input.clone(), options))
}

/// task_retry_catch's `Flaky`: fails its first `fail` attempts with the error `kind`, then
/// returns its input's label and attempt with the retry count it saw.
fn flaky(input: Value, ctx: &TaskContext) -> Result<Value, Failure> {
    let retry = ctx.retry_count();
    if u64::from(retry) < input["fail"].as_u64().unwrap_or(0) {
        let kind = input["kind"].as_str().unwrap_or("Unnamed");
        return Err(Failure::new(kind, format!("attempt {retry} failed")));
    }
    Ok(json!({ "value": input["label"], "attempt": input["attempt"], "retry": retry, "fields": input }))
}

/// task_retry_catch's `echo`: waits `payload.sleep` seconds (virtual time), fails with `Boom`
/// when `payload.boom` is set, else returns its input.
async fn echo(input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
    if let Some(seconds) = input["payload"]["sleep"].as_u64() {
        tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    }
    if input["payload"]["boom"].as_bool() == Some(true) {
        return Err(Failure::new("Boom", "echo was told to fail"));
    }
    Ok(input)
}

struct Tasks;
impl task_retry_catch::Handler for Tasks {
    async fn flaky(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        flaky(input, &ctx)
    }

    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

impl plain_tasks::Handler for Tasks {
    async fn flaky(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        flaky(input, &ctx)
    }

    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

impl parallel_map::Handler for Tasks {
    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

fn options() -> RunOptions {
    RunOptions::virtual_time().with_name("expected").with_seed(7)
}

fn assert_same(stem: &str, input: &Value, compiled: ExecutionResult) {
    assert_same_with(stem, input, compiled, options());
}

fn assert_same_with(stem: &str, input: &Value, compiled: ExecutionResult, options: RunOptions) {
    let interpreted = interpret_with(stem, input, options);
    assert_eq!(compiled.status, interpreted.status, "{stem} on {input}");
    assert_eq!(compiled.output, interpreted.output, "{stem} on {input}");
    assert_eq!(compiled.error, interpreted.error, "{stem} on {input}");
    assert_eq!(compiled.history, interpreted.history, "{stem} on {input}: histories differ");
}

#[test]
fn count_loop_runs_as_the_interpreter_does() {
    // The loop, a start near the end, a missing counter (Choice: States.Runtime) and a counter
    // that is not a number (the Choice's comparison is false: Default).
    for input in [json!({"i": 0}), json!({"i": 998}), json!({}), json!({"i": "x"}), json!([1])] {
        let compiled = block_on_virtual(count_loop::run_with(&NoTasks, input.clone(), options()));
        assert_same("count_loop", &input, compiled);
    }
    let result = block_on_virtual(count_loop::run_with(&NoTasks, json!({"i": 0}), options()));
    assert_eq!(result.output, Some(json!({"i": 1000})));
}

#[test]
fn a_bounded_pass_is_checked_when_the_limits_are_below_its_bound() {
    // count_loop's Pass output is at most 30 bytes (`pass_bounded`), so under the default
    // limits it is not checked; with a 7-byte limit it is, and `{"i":10}` (8 bytes) fails as
    // the interpreter's does (States.DataLimitExceeded at Increment, the same history).
    let limits = wfc_runtime::Limits { max_payload_bytes: 7, ..wfc_runtime::Limits::default() };
    let input = json!({"i": 0});
    let compiled = block_on_virtual(count_loop::run_with(&NoTasks, input.clone(), options().with_limits(limits)));
    assert_eq!(compiled.error.as_ref().map(|f| f.error.as_str()), Some("States.DataLimitExceeded"), "{compiled:?}");
    assert_same_with("count_loop", &input, compiled, options().with_limits(limits));
}

#[test]
fn pass_choice_runs_as_the_interpreter_does() {
    let inputs = [
        // Wordy: StringMatches, IsPresent false, a timestamp and a Boolean literal all hold.
        json!({"count": 0, "name": "word"}),
        // Loops through the `$$` rule until NOT(count <= 2.5), then Done.
        json!({"count": 0, "name": "x"}),
        // NumericGreaterThanPath holds at once.
        json!({"count": 7, "name": "stop"}),
        // MathAdd of a missing path, and of a string: States.Runtime with the field named.
        json!({"name": "x"}),
        json!({"count": "a", "name": "x"}),
        // The name is missing: Parameters fail on `name.$`.
        json!({"count": 0}),
        // ResultPath into an array: States.Runtime.
        json!([1, 2]),
    ];
    for input in inputs {
        let compiled = block_on_virtual(pass_choice::run_with(&NoTasks, input.clone(), options()));
        assert_same("pass_choice", &input, compiled);
    }
    let wordy = block_on_virtual(pass_choice::run_with(&NoTasks, json!({"count": 0, "name": "word"}), options()));
    assert_eq!(wordy.output, Some(json!({"message": "item 0 of 3", "flag": true})));
}

#[test]
fn plain_tasks_run_as_the_interpreter_does() {
    // The machine's four plain Tasks share one arm (`PLAIN_TASKS`, one await per method).
    let code = std::fs::read_to_string(expected_dir().join("plain_tasks.rs")).expect("expected code");
    assert!(code.contains("static PLAIN_TASKS: [&__wfc::abi::PlainTask; 4usize]"), "{code}");
    assert_eq!(code.matches("task_flaky(handler, exec, code.name, code, input).await?").count(), 1, "{code}");
    assert_eq!(code.matches("task_echo(handler, exec, code.name, code, input).await?").count(), 1, "{code}");
    let inputs = [
        // Every Task succeeds at once.
        json!({"fail": 0, "kind": "X", "label": "a"}),
        // One retry of `Again`, then success.
        json!({"fail": 1, "kind": "Again", "label": "a"}),
        // Retries exhausted: `States.ALL` leads to the last Echo.
        json!({"fail": 3, "kind": "Again"}),
        // `Custom` is caught to the Pass, then the last Echo.
        json!({"fail": 1, "kind": "Custom"}),
        // The first Echo fails with Boom: caught to the Pass.
        json!({"payload": {"boom": true}}),
    ];
    for input in inputs {
        let compiled = block_on_virtual(plain_tasks::run_with(&Tasks, input.clone(), options()));
        assert_same("plain_tasks", &input, compiled);
    }
    let custom = block_on_virtual(plain_tasks::run_with(&Tasks, json!({"fail": 1, "kind": "Custom"}), options()));
    assert_eq!(custom.output.as_ref().map(|o| o["note"].clone()), Some(json!({"recovered": true})), "{custom:?}");
}

#[test]
fn plain_tasks_at_the_express_level_end_as_with_full_history() {
    // At the express level a plain Task without Retry or Catch (`Flaky again`, `Echo last`)
    // visits through the runtime's counted path: the outcome must be the full level's, failure
    // causes (which name event ids) included, and the interpreter's (which never takes it).
    let express = || options().with_history(wfc_runtime::HistoryLevel::Express);
    let small = |mut options: RunOptions| {
        options.limits.max_payload_bytes = 60;
        options
    };
    let runs: [(Value, fn(RunOptions) -> RunOptions); 5] = [
        (json!({"fail": 0, "kind": "X", "label": "a"}), |o| o),
        // `Echo last` fails with Boom, which nothing catches.
        (json!({"payload": {"boom": true}}), |o| o),
        // `Flaky`'s catch-all leads to `Echo last`, which succeeds.
        (json!({"fail": 3, "kind": "Again"}), |o| o),
        // `Flaky again`'s result (Flaky's output with the input in it) is over a 60-byte limit.
        (json!({"fail": 0, "kind": "X", "label": "a long enough label"}), small),
        // The first Echo's request is the execution input: within the limit, checked once.
        (json!({"label": "b"}), small),
    ];
    let mut failed = 0;
    for (input, adjust) in runs {
        let full = block_on_virtual(plain_tasks::run_with(&Tasks, input.clone(), adjust(options())));
        let compiled = block_on_virtual(plain_tasks::run_with(&Tasks, input.clone(), adjust(express())));
        let interpreted = interpret_with("plain_tasks", &input, adjust(express()));
        for (engine, run) in [("compiled", &compiled), ("interpreted", &interpreted)] {
            assert_eq!(
                (&run.status, &run.output, &run.error),
                (&full.status, &full.output, &full.error),
                "{engine} at express on {input}"
            );
        }
        failed += usize::from(full.error.is_some());
    }
    // Boom, and the result over the limit.
    assert_eq!(failed, 2);
}

#[test]
fn task_retry_catch_runs_as_the_interpreter_does() {
    let custom = "Custom \"quoted\" {err} #✓";
    let job = |fail: u64, kind: &str| json!({"fail": fail, "kind": kind, "id": 7});
    let inputs = [
        // Every Task succeeds at once: ResultSelector (with `$.*`), ResultPath, then Echo's
        // Parameters, TimeoutSecondsPath and OutputPath, then the plain Task.
        json!({"job": job(0, "X"), "limit": 10}),
        // Two retries of the quoted error (2 s, then 1.5x capped at 3 s), then success with
        // `$$.State.RetryCount` 2 in the Parameters.
        json!({"job": job(2, custom), "limit": 10}),
        // Retries exhausted: the first catcher places the Error Output at `$.error`.
        json!({"job": job(3, custom), "limit": 10}),
        // One retry with FULL jitter (the seeded random source), then success.
        json!({"job": job(1, "Jittery"), "limit": 10}),
        // States.TaskFailed with MaxAttempts 0: no retry; `States.ALL` catches, ResultPath null.
        json!({"job": job(1, "Other"), "limit": 10}),
        // Echo sleeps past its TimeoutSecondsPath: States.Timeout, caught, then the Fail state.
        json!({"job": job(0, "X"), "limit": 5, "sleep": 100}),
        // Echo fails with Boom: caught (Catch ResultPath `$`), then the Fail state.
        json!({"job": job(0, "X"), "limit": 5, "boom": true}),
        // TimeoutSecondsPath selects a string, or nothing: States.Runtime, not caught.
        json!({"job": job(0, "X"), "limit": "x"}),
        json!({"job": job(0, "X")}),
        // InputPath selects nothing; then a Parameters field (`$.id`) that selects nothing.
        json!({"work": 1}),
        json!({"job": {"fail": 0, "kind": "X"}, "limit": 10}),
    ];
    for input in inputs {
        let compiled = block_on_virtual(task_retry_catch::run_with(&Tasks, input.clone(), options()));
        assert_same("task_retry_catch", &input, compiled);
    }
    let retried =
        block_on_virtual(task_retry_catch::run_with(&Tasks, json!({"job": job(2, custom), "limit": 10}), options()));
    let first = retried.output.as_ref().map(|o| o["fields"]["payload"]["result"].clone());
    assert_eq!(first.as_ref().map(|r| r["attempt"].clone()), Some(json!(2)), "{retried:?}");
    let caught =
        block_on_virtual(task_retry_catch::run_with(&Tasks, json!({"job": job(3, custom), "limit": 10}), options()));
    assert_eq!(
        caught.output.as_ref().map(|o| o["error"].clone()),
        Some(json!({"Error": custom, "Cause": "attempt 2 failed"})),
        "{caught:?}"
    );
    let timed_out = block_on_virtual(task_retry_catch::run_with(
        &Tasks,
        json!({"job": job(0, "X"), "limit": 5, "sleep": 100}),
        options(),
    ));
    assert_eq!(timed_out.error.as_ref().map(|e| e.error.as_str()), Some("Echo \"failed\""), "{timed_out:?}");
}

#[test]
fn wait_fail_runs_as_the_interpreter_does() {
    let input = |seconds: Value, until: Value, payload: Value| json!({"wait": {"seconds": seconds, "until": until}, "payload": payload, "cause": "from the input ✓"});
    let failing = json!({"inner": {"fail": {"error": "Custom \"e\" {#}"}}});
    let plain = json!({"inner": {"x": 1}});
    let inputs = [
        // Every Wait, then the Fail state with ErrorPath and a `$$` CausePath.
        input(json!(2), json!("2016-03-14T02:00:00Z"), failing.clone()),
        // The Choice's Default: the literal Fail state.
        input(json!(0), json!("2016-03-14T02:00:00Z"), plain.clone()),
        // SecondsPath: negative, not a number, missing, too long.
        input(json!(-1), json!("2016-03-14T02:00:00Z"), plain.clone()),
        input(json!("x"), json!("2016-03-14T02:00:00Z"), plain.clone()),
        json!({"wait": {"until": "2016-03-14T02:00:00Z"}, "payload": plain}),
        input(json!(99_999_999_999u64), json!("2016-03-14T02:00:00Z"), plain.clone()),
        // TimestampPath: not a timestamp, missing.
        input(json!(1), json!("nope"), plain.clone()),
        json!({"wait": {"seconds": 1}, "payload": plain}),
        // InputPath and OutputPath select nothing.
        input(json!(1), json!("2016-03-14T02:00:00Z"), json!(null)),
        input(json!(1), json!("2016-03-14T02:00:00Z"), json!({"other": 1})),
        // ErrorPath selects a number; CausePath selects nothing.
        input(json!(1), json!("2016-03-14T02:00:00Z"), json!({"inner": {"fail": {"error": 5}}})),
        json!({"wait": {"seconds": 1, "until": "2016-03-14T02:00:00Z"}, "payload": failing}),
    ];
    for input in inputs {
        let compiled = block_on_virtual(wait_fail::run_with(&NoTasks, input.clone(), options()));
        assert_same("wait_fail", &input, compiled);
    }
    let failed = block_on_virtual(wait_fail::run_with(
        &NoTasks,
        input(json!(2), json!("2016-03-14T02:00:00Z"), failing),
        options(),
    ));
    let error = failed.error.expect("the Fail state fails the execution");
    assert_eq!((error.error.as_str(), error.cause.as_str()), ("Custom \"e\" {#}", "from the input ✓"));
    let literal = block_on_virtual(wait_fail::run_with(
        &NoTasks,
        input(json!(0), json!("2016-03-14T02:00:00Z"), plain),
        options(),
    ));
    let error = literal.error.expect("the literal Fail state");
    assert_eq!((error.error.as_str(), error.cause.as_str()), ("Err \"q\" {x} #✓", "cause ✓ \"}"));
}

#[test]
fn parallel_map_runs_as_the_interpreter_does() {
    let job = |fail: u64, boom: bool| json!({"fail": fail, "data": {"d": "✓ \"q\""}, "boom": boom});
    let items = json!([{"sleep": 3, "x": 1}, {"x": 2}, {"sleep": 1, "x": 3}, {"x": 4}, {"x": 5}]);
    let copy = |list: Value, limit: Value| json!({"list": list, "limit": limit});
    let inputs = [
        // Every state succeeds at once: branches joined, ResultSelector and ResultPath; the
        // items out of order in time (sleeps) but in item order in the result, two at a time.
        json!({"job": job(0, false), "items": items, "tag": "t ✓", "copy": copy(json!([1, 2, 3]), json!(1))}),
        // The Parallel is retried once ($$.State.RetryCount reaches the branches), then succeeds.
        json!({"job": job(1, false), "items": [], "tag": "t", "copy": copy(json!([]), json!(0))}),
        // Retries exhausted: the branch's Fail error ends the execution (ParallelStateFailed).
        json!({"job": job(5, false), "items": [], "tag": "t", "copy": copy(json!([]), json!(0))}),
        // A failing branch (Boom) cancels its sibling and is caught into `$.error`.
        json!({"job": job(0, true), "items": [{"x": 1}], "tag": "t", "copy": copy(json!([1]), json!("2"))}),
        // A failing item (Boom): the Map is caught into `$.mapError`.
        json!({"job": job(0, false), "items": [{"x": 1}, {"sleep": 1, "boom": true}, {"x": 3}, {"x": 4}], "tag": "t", "copy": copy(json!([1]), json!(0))}),
        // ItemsPath selects a number, or nothing: States.Runtime, not caught.
        json!({"job": job(0, false), "items": 5, "tag": "t", "copy": copy(json!([1]), json!(0))}),
        json!({"job": job(0, false), "tag": "t", "copy": copy(json!([1]), json!(0))}),
        // ItemSelector's `$.tag` selects nothing in the first item: States.Runtime.
        json!({"job": job(0, false), "items": [1], "copy": copy(json!([1]), json!(0))}),
        // MaxConcurrencyPath: not an integer, negative, missing.
        json!({"job": job(0, false), "items": [], "tag": "t", "copy": copy(json!([1]), json!("x"))}),
        json!({"job": job(0, false), "items": [], "tag": "t", "copy": copy(json!([1]), json!(-1))}),
        json!({"job": job(0, false), "items": [], "tag": "t", "copy": {"list": [1]}}),
        // The Parallel's InputPath, then a Parameters field (`$.data`), select nothing.
        json!({"items": []}),
        json!({"job": {"fail": 0, "boom": false}, "items": []}),
    ];
    for input in inputs {
        let compiled = block_on_virtual(parallel_map::run_with(&Tasks, input.clone(), options()));
        assert_same("parallel_map", &input, compiled);
    }
    let input = json!({"job": job(1, false), "items": items, "tag": "t", "copy": copy(json!([1, 2]), json!(1))});
    let done = block_on_virtual(parallel_map::run_with(&Tasks, input, options()));
    assert_eq!(done.output, Some(json!([1, 2])), "{done:?}");
    let exited = |result: &ExecutionResult, event: wfc_runtime::EventType| {
        result.history.iter().find(|e| e.event_type == event).map(|e| e.details["output"].clone())
    };
    let fan = exited(&done, wfc_runtime::EventType::ParallelStateExited).map(|o| o["fan"].clone());
    assert_eq!(fan, Some(json!({"left": {"d": "✓ \"q\""}, "attempt": 1, "right": "right ✓"})), "{done:?}");
    let mapped = exited(&done, wfc_runtime::EventType::MapStateExited).map(|o| o["mapped"].clone());
    assert_eq!(mapped.as_ref().map(|m| m["count"].clone()), Some(json!(5)), "{done:?}");
    let second = mapped.map(|m| m["all"][1].clone());
    assert_eq!(second, Some(json!({"index": 1, "v": {"x": 2}, "tag": "t"})), "{done:?}");
    let input =
        json!({"job": job(1, false), "items": items, "tag": "t", "copy": {"list": [], "limit": 0, "keep": true}});
    let fan = block_on_virtual(parallel_map::run_with(&Tasks, input, options()));
    assert_eq!(fan.status, wfc_runtime::Status::Succeeded, "{fan:?}");
    let mapped = fan.history.iter().filter(|e| e.event_type == wfc_runtime::EventType::MapIterationSucceeded).count();
    assert_eq!(mapped, 5, "{fan:?}");
    let exhausted = block_on_virtual(parallel_map::run_with(
        &Tasks,
        json!({"job": job(5, false), "items": [], "tag": "t", "copy": copy(json!([]), json!(0))}),
        options(),
    ));
    assert_eq!(exhausted.error.map(|e| e.error), Some("Flaky \"p\" {#}".to_owned()));
    let item_failed = block_on_virtual(parallel_map::run_with(
        &Tasks,
        json!({"job": job(0, false), "items": [{"x": 1}, {"boom": true}], "tag": "t", "copy": {"list": [], "limit": 0}}),
        options(),
    ));
    let map_error =
        exited(&item_failed, wfc_runtime::EventType::MapStateExited).map(|o| o["mapError"]["Error"].clone());
    assert_eq!(map_error, Some(json!("Boom")), "{item_failed:?}");
    let caught = block_on_virtual(parallel_map::run_with(
        &Tasks,
        json!({"job": job(0, true), "items": [], "tag": "t", "copy": copy(json!([]), json!(0))}),
        options(),
    ));
    assert_eq!(caught.status, wfc_runtime::Status::Succeeded, "{caught:?}");
    let error = exited(&caught, wfc_runtime::EventType::ParallelStateExited).map(|o| o["error"]["Error"].clone());
    assert_eq!(error, Some(json!("Boom")), "{caught:?}");
}

#[test]
fn assign_runs_as_the_interpreter_does() {
    let inputs = [
        // Every Assign evaluates; the variables are read back by Parameters, an intrinsic, a
        // Choice and a later Assign.
        json!({"wait": 2, "opt": "o ✓"}),
        // The Wait's Assign reads `$.opt`, which is missing: States.Runtime naming `opt.$`.
        json!({"wait": 2}),
        // SecondsPath fails before the Assign is evaluated.
        json!({"wait": "x", "opt": 1}),
        // OutputPath-free Pass over an array input: ResultPath `$.init` fails after Assign.
        json!([1]),
    ];
    for input in inputs {
        let compiled = block_on_virtual(assign::run_with(&NoTasks, input.clone(), options()));
        assert_same("assign", &input, compiled);
    }
    let done = block_on_virtual(assign::run_with(&NoTasks, json!({"wait": 2, "opt": "o ✓"}), options()));
    let output = done.output.expect("assign succeeds");
    assert_eq!((output["count"].clone(), output["copy"].clone()), (json!(2), json!(1)), "{output}");
    assert_eq!(output["vars"]["both"], json!("t \"✓\" {#} and 2"), "{output}");
    assert_eq!(output["vars"]["sum"], json!(42), "{output}");
    assert_eq!(output["vars"]["started"], json!("expected"), "{output}");
    let missing = block_on_virtual(assign::run_with(&NoTasks, json!({"wait": 2}), options()));
    let cause = missing.error.map(|e| e.cause).unwrap_or_default();
    assert!(cause.contains("opt.$"), "{cause}");
}

impl assign_states::Handler for Tasks {
    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

#[test]
fn assign_states_runs_as_the_interpreter_does() {
    let input = |mode: &str, task: Value, fan: Value, items: Value| json!({"mode": mode, "task": task, "fan": fan, "items": items});
    let task = json!({"name": "t \"✓\" {#}", "n": 1});
    let fan = json!({"name": "f ✓"});
    let items = json!([{"x": 1}, {"sleep": 1, "x": 2}, {"x": 3}]);
    let inputs = [
        // Every Assign evaluates: the Choice rule's, the Task's (with `$route` and `$n` from the
        // Choice, and a random UUID), the Parallel's and the Map's.
        input("task", task.clone(), fan.clone(), items.clone()),
        // The Task fails with Boom: its catcher's Assign on the Error Output, not the Task's.
        input("task", json!({"name": "t", "n": 1, "boom": true}), fan.clone(), items.clone()),
        // A branch fails: the Parallel's catcher assigns (a Format over `$route`).
        input("task", task.clone(), json!({"name": "f", "boom": true}), items.clone()),
        // An item fails: the Map's catcher assigns and discards the error (ResultPath null).
        input("task", task.clone(), fan.clone(), json!([{"x": 1}, {"sleep": 1, "boom": true}])),
        // The Default: the Choice's own Assign (`$`, `$$.State.Name`).
        input("other ✓", task.clone(), fan.clone(), items.clone()),
        // A rule without Assign: nothing is assigned, so the Task's `$route` selects nothing:
        // States.Runtime from the Task's Assign.
        input("plain", task.clone(), fan.clone(), items.clone()),
        // The rule's Assign reads `$.task.n`, which is missing: States.Runtime naming `n.$`.
        input("task", json!({"name": "t"}), fan.clone(), items.clone()),
        // MathAdd of a string in the Task's Assign.
        input("task", json!({"name": "t", "n": "x"}), fan.clone(), items.clone()),
        // No items: the Map's Assign (`$[0]`) selects nothing.
        input("task", task.clone(), fan.clone(), json!([])),
        // The Parallel's Assign: its first branch's output has no `payload.name`.
        input("task", task.clone(), json!({"other": 1}), items.clone()),
    ];
    for input in inputs {
        let compiled = block_on_virtual(assign_states::run_with(&Tasks, input.clone(), options()));
        assert_same("assign_states", &input, compiled);
    }
    let assigned = |result: &ExecutionResult, event: wfc_runtime::EventType| {
        result.history.iter().find(|e| e.event_type == event).map(|e| e.details["assignedVariables"].clone())
    };
    let done = block_on_virtual(assign_states::run_with(&Tasks, inputs_first(), options()));
    assert_eq!(done.status, wfc_runtime::Status::Succeeded, "{done:?}");
    let task_vars = assigned(&done, wfc_runtime::EventType::TaskStateExited).expect("the Task assigns");
    assert_eq!(task_vars["called"], json!("\"t \\\"✓\\\" {#}\""), "{done:?}");
    assert_eq!(task_vars["sum"], json!("2"), "{done:?}");
    let map_vars = assigned(&done, wfc_runtime::EventType::MapStateExited).expect("the Map assigns");
    assert_eq!(map_vars["mappedCount"], json!("3"), "{done:?}");
    let caught = block_on_virtual(assign_states::run_with(
        &Tasks,
        json!({"mode": "task", "task": {"name": "t", "n": 1, "boom": true}, "fan": {"name": "f"}, "items": [{"x": 1}]}),
        options(),
    ));
    let task_vars = assigned(&caught, wfc_runtime::EventType::TaskStateExited).expect("the catcher assigns");
    assert_eq!(task_vars["caught"], json!("\"Boom\""), "{caught:?}");
    assert!(task_vars.get("called").is_none(), "{caught:?}");
}

fn inputs_first() -> Value {
    json!({"mode": "task", "task": {"name": "t \"✓\" {#}", "n": 1}, "fan": {"name": "f ✓"}, "items": [{"x": 1}, {"sleep": 1, "x": 2}, {"x": 3}]})
}

impl jsonata_states::Handler for Tasks {
    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

#[test]
fn jsonata_states_run_as_the_interpreter_does() {
    let wait = |args: Value| json!({"mode": "wait", "n": 1, "args": args});
    let task = |task: Value| json!({"mode": "task", "n": 1, "args": {"task": task}});
    let fail = |fail: Value| json!({"mode": "fail", "n": 1, "args": {"fail": fail}});
    let until = "2016-03-14T01:59:00Z";
    let inputs = [
        // Wait: JSONata Seconds and Timestamp, the rule's Assign and Output, the Wait's Assign and
        // Output, the Pass's Assign, the Condition-only Choice, Succeed's Output.
        wait(json!({"seconds": 2, "until": until})),
        // Seconds of the wrong types: a string, a negative number (States.QueryEvaluationError).
        wait(json!({"seconds": "x", "until": until})),
        wait(json!({"seconds": -1, "until": until})),
        // A Timestamp that is not one, and a number.
        wait(json!({"seconds": 1, "until": "soon \"✓\""})),
        wait(json!({"seconds": 1, "until": 5})),
        // Napped too long: the Fail's Cause expression.
        wait(json!({"seconds": 60, "until": until})),
        // No `n`: the first Pass's Assign returns nothing.
        json!({"mode": "wait", "args": {}}),
        // The rule's Output reads a missing `until`.
        wait(json!({"seconds": 1})),
        // Task: Arguments, the timeouts, Assign and Output on the result.
        task(json!({"name": "t \"✓\" {#}", "add": 2})),
        // Boom: the catcher's Assign and Output on the Error Output.
        task(json!({"name": "t", "boom": true})),
        // Boom, and the catcher's Assign fails.
        task(json!({"name": "t", "boom": true, "catchFail": true})),
        // A timeout from TimeoutSeconds: caught, Output the error's name.
        task(json!({"name": "t", "timeout": 1, "sleep": 3})),
        // TimeoutSeconds and HeartbeatSeconds of the wrong types.
        task(json!({"name": "t", "timeout": "x"})),
        task(json!({"name": "t", "heartbeat": 0})),
        // Arguments, Output and Assign that fail.
        task(json!({"name": "t", "explode": true})),
        task(json!({"name": "t", "add": "x"})),
        task(json!({"add": 1})),
        // Fail: Error and Cause expressions, then each of the wrong type or missing.
        fail(json!({"error": "E \"✓\" {#}", "cause": "c ✓"})),
        fail(json!({"error": 1, "cause": "c"})),
        fail(json!({"error": "E", "cause": {"x": 1}})),
        fail(json!({"cause": "c"})),
        // A Condition that gives a number, and the Default's Assign and Output.
        json!({"mode": "bad", "n": 1, "args": {}}),
        json!({"mode": "other ✓", "n": 1, "args": {}}),
    ];
    for input in &inputs {
        let compiled = block_on_virtual(jsonata_states::run_with(&Tasks, input.clone(), options()));
        assert_same("jsonata_states", input, compiled);
    }
    let done = block_on_virtual(jsonata_states::run_with(&Tasks, inputs[0].clone(), options()));
    let output = done.output.clone().expect("the wait path succeeds");
    assert_eq!(output["vars"]["napped"], json!(4), "{done:?}");
    assert_eq!(output["vars"]["route"], json!("wait \"✓\" lit \"✓\" {#}"), "{done:?}");
    let called = block_on_virtual(jsonata_states::run_with(&Tasks, inputs[8].clone(), options()));
    let output = called.output.clone().expect("the task path succeeds");
    assert_eq!((output["final"]["sum"].clone(), output["vars"]["called"].clone()), (json!(3), json!("t \"✓\" {#}")));
    // Where each evaluation failed, as AWS's EvaluationFailed names it (a Timestamp that does not
    // parse names no field: its cause is the interpreter's wording, not an evaluation's).
    let failures = [
        (1, json!("Seconds")),
        (3, Value::Null),
        (12, json!("TimeoutSeconds")),
        (14, json!("Arguments/list/2")),
        (15, json!("Output/sum")),
        (16, json!("Assign/called")),
        (18, json!("Error")),
        (19, json!("Cause")),
        (21, json!("Condition")),
    ];
    for (i, field) in failures {
        let failed = block_on_virtual(jsonata_states::run_with(&Tasks, inputs[i].clone(), options()));
        let error = failed.error.clone().expect("fails");
        assert_eq!(error.error, "States.QueryEvaluationError", "{i}: {failed:?}");
        let evaluation = failed.history.iter().find(|e| e.event_type == wfc_runtime::EventType::EvaluationFailed);
        assert_eq!(evaluation.map(|e| e.details["location"].clone()), Some(field), "{i}: {failed:?}");
    }
    let caught = block_on_virtual(jsonata_states::run_with(&Tasks, inputs[9].clone(), options()));
    assert_eq!(caught.output.map(|o| o["vars"]["caught"].clone()), Some(json!("Boom")), "{:?}", caught.history);
}

impl jsonata_nested::Handler for Tasks {
    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

#[test]
fn jsonata_nested_runs_as_the_interpreter_does() {
    let role = "arn:aws:iam::123456789012:role/path \"✓\"";
    let jrole = "arn:aws:iam::123456789012:role/jsonata {#}";
    let base = json!({
        "mode": "go ✓",
        "n": 2,
        "fan": {"x": 1},
        "items": [{"x": 1, "sleep": 2}, {"x": 2}, {"x": 3, "sleep": 1}],
        "cfg": {"max": 2, "role": role, "jrole": jrole},
    });
    let with = |key: &str, value: Value| {
        let mut input = base.clone();
        input[key] = value;
        input
    };
    let cfg = |key: &str, value: Value| {
        let mut input = base.clone();
        if let Some(cfg) = input["cfg"].as_object_mut() {
            // `null` removes the field.
            match value {
                Value::Null => cfg.remove(key),
                value => cfg.insert(key.to_owned(), value),
            };
        }
        input
    };
    let inputs = [
        // 0: every state succeeds; the items finish out of order (sleeps), two at a time.
        base.clone(),
        // 1: the Parallel's Arguments fail on the first attempt only: retried, then succeed.
        with("failFirst", json!(true)),
        // 2: ... on every attempt: States.QueryEvaluationError after the retry, not caught.
        with("failAlways", json!(true)),
        // 3: a branch fails with Boom: the catcher's Assign and Output.
        with("fan", json!({"boom": true})),
        // 4, 5: the Parallel's Assign, then its Output, fail.
        with("assignBad", json!(true)),
        with("outBad", json!(true)),
        // 6: Items is not an array; 7: no items; 8: an item fails with Boom (the Map's catcher).
        with("items", json!(5)),
        with("items", json!([])),
        with("items", json!([{"x": 1, "boom": true, "sleep": 1}, {"x": 2}])),
        // 9: ItemSelector fails on an item.
        with("items", json!([{"x": 1}, {"x": 2, "bad": true}])),
        // 10-13: MaxConcurrency a string, negative, 0 (no limit), 1.
        cfg("max", json!("x")),
        cfg("max", json!(-1)),
        cfg("max", json!(0)),
        cfg("max", json!(1)),
        // 14: the Map's Output fails; 15: the second Map's input is not an array.
        cfg("mapOutBad", json!(true)),
        with("mode", json!("notarray")),
        // 16: the JSONPath Credentials' role is a number; 17: missing (the Map's Output fails).
        cfg("role", json!(5)),
        cfg("role", Value::Null),
        // 18, 19: the JSONata Credentials' role is a number, or missing.
        cfg("jrole", json!(7)),
        cfg("jrole", Value::Null),
        // 20: no Items at all.
        base.as_object()
            .map(|o| {
                let mut o = o.clone();
                o.remove("items");
                Value::Object(o)
            })
            .expect("an object"),
    ];
    let mut results = Vec::new();
    for input in &inputs {
        let compiled = block_on_virtual(jsonata_nested::run_with(&Tasks, input.clone(), options()));
        assert_same("jsonata_nested", input, compiled.clone());
        results.push(compiled);
    }
    let done = &results[0];
    assert_eq!(done.output, Some(json!({"total": 6, "again": [2, 3, 4], "doubled": 4, "fanned": 0})), "{done:?}");
    // Both Credentials reach the history (and the handler's context) as the role evaluated.
    let roles: Vec<Value> = done
        .history
        .iter()
        .filter(|e| e.event_type == wfc_runtime::EventType::TaskScheduled)
        .map(|e| e.details["taskCredentials"].clone())
        .filter(|credentials| !credentials.is_null())
        .collect();
    assert_eq!(roles, [json!({"roleArn": role}), json!({"roleArn": jrole})], "{done:?}");
    let retried = &results[1];
    assert_eq!(retried.output.as_ref().map(|o| o["fanned"].clone()), Some(json!(1)), "{retried:?}");
    let caught = &results[3];
    assert_eq!(caught.status, wfc_runtime::Status::Succeeded, "{caught:?}");
    let caught_map = &results[8];
    assert_eq!(caught_map.output.as_ref().map(|o| o["end"]["mapCaught"].clone()), Some(json!("Boom")));
    // Where each JSONata evaluation failed, as AWS's EvaluationFailed names it.
    let failures = [
        (2, json!("Arguments/check")),
        (4, json!("Assign/fanned")),
        (5, json!("Output/n")),
        (6, json!("Items")),
        (9, json!("ItemSelector/check")),
        (10, json!("MaxConcurrency")),
        (14, json!("Output/sum")),
        (17, json!("Output/role")),
        (18, json!("Credentials/RoleArn")),
        (19, json!("Credentials/RoleArn")),
    ];
    for (i, field) in failures {
        let failed = &results[i];
        let Some(error) = failed.error.clone() else { panic!("{i} does not fail: {:?}", failed.output) };
        assert_eq!(error.error, "States.QueryEvaluationError", "{i}: {failed:?}");
        let evaluation = failed.history.iter().find(|e| e.event_type == wfc_runtime::EventType::EvaluationFailed);
        assert_eq!(evaluation.map(|e| e.details["location"].clone()), Some(field), "{i}: {failed:?}");
    }
    for i in [11, 16] {
        let error = results[i].error.clone().expect("fails");
        assert_eq!(error.error, "States.Runtime", "{i}: {:?}", results[i]);
    }
}

impl distributed_map::Handler for Tasks {
    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        echo(input, ctx).await
    }
}

/// An in-memory S3 for the DISTRIBUTED Maps' ItemReader and ResultWriter: the objects the
/// fixture reads, and whatever a run writes.
#[derive(Debug, Default)]
struct MemoryObjects(std::sync::Mutex<std::collections::BTreeMap<(String, String), Vec<u8>>>);

impl MemoryObjects {
    fn with_items() -> std::sync::Arc<MemoryObjects> {
        let store = MemoryObjects::default();
        let items = json!([{"a": 1}, {"a": 2}, {"a": 3, "s": "\"{#}\" ✓"}, {"a": 4}, {"a": 5}]);
        let boom = json!([{"a": 1, "boom": true}, {"a": 2}, {"a": 3}, {"a": 4}]);
        for (bucket, key, bytes) in [
            ("items", "in ✓/items.json", items.to_string().into_bytes()),
            ("items", "in ✓/boom.json", boom.to_string().into_bytes()),
            ("items", "in ✓/bad.json", b"[1, ".to_vec()),
            ("items", "rows \"1\".csv", b"1,a\n2,\"b, c\"\n3,d\n4,e\n".to_vec()),
        ] {
            store.0.lock().expect("store").insert((bucket.to_owned(), key.to_owned()), bytes);
        }
        std::sync::Arc::new(store)
    }

    fn keys(&self) -> Vec<(String, String)> {
        self.0.lock().expect("store").keys().cloned().collect()
    }
}

impl wfc_runtime::distributed::ObjectStore for MemoryObjects {
    fn get_object<'a>(
        &'a self,
        bucket: &'a str,
        key: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<u8>, String>> {
        let found = self.0.lock().expect("store").get(&(bucket.to_owned(), key.to_owned())).cloned();
        Box::pin(async move { found.ok_or_else(|| format!("NoSuchKey: s3://{bucket}/{key}")) })
    }

    fn put_object<'a>(
        &'a self,
        bucket: &'a str,
        key: &'a str,
        bytes: Vec<u8>,
    ) -> futures::future::BoxFuture<'a, Result<(), String>> {
        self.0.lock().expect("store").insert((bucket.to_owned(), key.to_owned()), bytes);
        Box::pin(async { Ok(()) })
    }
}

#[test]
fn distributed_map_runs_as_the_interpreter_does() {
    let base = json!({
        "bucket": "items", "dir": "in ✓", "file": "items", "max": 0, "tag": "t \"{#}\" ✓", "tolerate": 0,
        "list": [{"x": 1}, {"x": 2}, {"x": 3}], "pct": 50, "prefix": "out \"✓\"",
        "per": 2, "bytes": 1000,
        "orders": [{"id": 1}, {"id": 2}, {"id": 3}], "perBatch": 2, "tol": 0, "pct2": 0,
    });
    let with = |pairs: &[(&str, Value)]| {
        let mut input = base.clone();
        for (key, value) in pairs {
            match (value, input.as_object_mut()) {
                // `null` removes the field.
                (Value::Null, Some(o)) => {
                    o.remove(*key);
                }
                (value, _) => input[*key] = value.clone(),
            }
        }
        input
    };
    let inputs = [
        // 0: every Map succeeds.
        base.clone(),
        // 1: a child of the reader's Map fails (its batch of 2 items): over the tolerance, caught.
        with(&[("file", json!("boom"))]),
        // 2: ... tolerated (ToleratedFailureCountPath 5; 2 of 4 items is within 50%).
        with(&[("file", json!("boom")), ("tolerate", json!(5))]),
        // 3-5: the object is missing, not JSON, or the Bucket is not a string: ItemReaderFailed, caught.
        with(&[("file", json!("missing"))]),
        with(&[("file", json!("bad"))]),
        with(&[("bucket", json!(5))]),
        // 6: the Bucket path selects nothing: States.Runtime.
        with(&[("bucket", Value::Null)]),
        // 7-9: MaxItemsPath 2; negative (ItemReaderFailed, caught); not a number (States.Runtime).
        with(&[("max", json!(2))]),
        with(&[("max", json!(-1))]),
        with(&[("max", json!("x"))]),
        // 10, 11: ToleratedFailureCountPath not a number, or negative: States.Runtime.
        with(&[("tolerate", json!("x"))]),
        with(&[("tolerate", json!(-1))]),
        // 12, 13: ToleratedFailurePercentagePath over 100, or not a number.
        with(&[("pct", json!(150))]),
        with(&[("pct", json!("x"))]),
        // 14: the ResultWriter's Prefix is not a string: ResultWriterFailed.
        with(&[("prefix", json!(5))]),
        // 15: two of three items fail (ToleratedFailureCount 1): the results are written, then
        // the threshold fails the Map; 16: one fails, tolerated.
        with(&[("list", json!([{"boom": true}, {"x": 2}, {"boom": true}]))]),
        with(&[("list", json!([{"boom": true}, {"x": 2}, {"x": 3}]))]),
        // 17-20: MaxItemsPerBatchPath 0 or negative; MaxInputBytesPerBatchPath too small for a
        // row, or over AWS's limit.
        with(&[("per", json!(0))]),
        with(&[("per", json!(-1))]),
        with(&[("bytes", json!(5))]),
        with(&[("bytes", json!(300_000))]),
        // 21: batches of one row each by size.
        with(&[("per", json!(10)), ("bytes", json!(60))]),
        // 22: Items is not an array: States.QueryEvaluationError, caught.
        with(&[("orders", json!({"id": 1}))]),
        // 23: an order fails, none tolerated: caught; 24: tolerated by count and percentage.
        with(&[("orders", json!([{"id": 1, "fail": true}, {"id": 2}, {"id": 3}])), ("perBatch", json!(1))]),
        with(&[
            ("orders", json!([{"id": 1, "fail": true}, {"id": 2}, {"id": 3}])),
            ("perBatch", json!(1)),
            ("tol", json!(1)),
            ("pct2", json!(40)),
        ]),
        // 25, 26: the ToleratedFailureCount expression gives a string (caught) or a negative number.
        with(&[("tol", json!("x"))]),
        with(&[("tol", json!(-1))]),
        // 27: the ToleratedFailurePercentage expression gives 200.
        with(&[("pct2", json!(200))]),
        // 28, 29: the MaxItemsPerBatch expression gives a negative number, or a string (caught).
        with(&[("perBatch", json!(-1))]),
        with(&[("perBatch", json!("x"))]),
        // 30: the ItemSelector fails on an item (caught).
        with(&[("orders", json!([{"id": 1}, {"id": 2, "bad": true}]))]),
    ];
    let mut results = Vec::new();
    for input in &inputs {
        let store = MemoryObjects::with_items();
        let run_options = || options().with_object_store(store.clone());
        let compiled = block_on_virtual(distributed_map::run_with(&Tasks, input.clone(), run_options()));
        let written = store.keys();
        let interpreted_store = MemoryObjects::with_items();
        let interpreted =
            interpret_with("distributed_map", input, options().with_object_store(interpreted_store.clone()));
        assert_eq!(compiled.status, interpreted.status, "{input}");
        assert_eq!(compiled.output, interpreted.output, "{input}");
        assert_eq!(compiled.error, interpreted.error, "{input}");
        assert_eq!(compiled.history, interpreted.history, "{input}: histories differ");
        assert_eq!(written, interpreted_store.keys(), "{input}: the result files differ");
        results.push((compiled, written));
    }
    let (done, written) = &results[0];
    assert_eq!(done.status, wfc_runtime::Status::Succeeded, "{done:?}");
    let output = done.output.clone().unwrap_or_default();
    // Five items in batches of two; the first batch's first item with its selector's fields.
    assert_eq!(output["written"]["ResultWriterDetails"]["Bucket"], json!("results"), "{output}");
    assert_eq!(output["csv"]["batches"], json!(2), "{output}");
    assert_eq!(
        output["csv"]["first"],
        json!({"Items": [{"id": "1", "v \"{#}\"": "a"}, {"id": "2", "v \"{#}\"": "b, c"}]})
    );
    // (JSONata gives a one-item sequence as the item itself.)
    assert_eq!(output["orders"], json!([[0, 1], 2]), "{output}");
    // The ResultWriter's files and manifest, under the prefix and the Map Run's id.
    assert_eq!(written.iter().filter(|(b, _)| b == "results").count(), 2, "{written:?}");
    // Each run's Map Runs, named by Label or state name.
    let runs: Vec<String> = done
        .history
        .iter()
        .filter(|e| e.event_type == wfc_runtime::EventType::MapRunStarted)
        .filter_map(|e| e.details["mapRunArn"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs[0].contains("/Reader:") && runs[3].contains("/Orders:"), "{runs:?}");
    let error = |i: usize| results[i].0.error.clone().map(|e| e.error);
    let caught = |i: usize, key: &str| results[i].0.output.as_ref().map(|o| o[key].clone());
    // Where each run ended, by the field that failed.
    assert_eq!(
        caught(1, "readError").map(|e| e["Error"].clone()),
        Some(json!("States.ExceedToleratedFailureThreshold"))
    );
    assert_eq!(caught(2, "readError"), Some(Value::Null));
    for i in [3, 4, 5, 8] {
        assert_eq!(caught(i, "readError").map(|e| e["Error"].clone()), Some(json!("States.ItemReaderFailed")), "{i}");
    }
    for i in [6, 9, 10, 11, 12, 13, 17, 18, 19, 20, 26, 27, 28] {
        assert_eq!(error(i), Some("States.Runtime".to_owned()), "{i}: {:?}", results[i].0);
    }
    assert_eq!(error(14), Some("States.ResultWriterFailed".to_owned()));
    assert_eq!(error(15), Some("States.ExceedToleratedFailureThreshold".to_owned()));
    assert_eq!(results[16].0.status, wfc_runtime::Status::Succeeded);
    assert_eq!(caught(21, "csv").map(|c| c["batches"].clone()), Some(json!(3)));
    for i in [22, 25, 29, 30] {
        assert_eq!(caught(i, "caught"), Some(json!("States.QueryEvaluationError")), "{i}: {:?}", results[i].0);
    }
    assert_eq!(caught(23, "caught"), Some(json!("States.ExceedToleratedFailureThreshold")));
    // A failed child contributes its execution's result document, the others their outputs.
    let orders = caught(24, "orders").unwrap_or_default();
    assert_eq!(
        (orders[0]["Status"].clone(), orders[1].clone(), orders[2].clone()),
        (json!("FAILED"), json!(1), json!(2))
    );
    // Each failure names its field, in AWS's words: the execution's cause, or the caught one.
    let cause = |i: usize| match &results[i].0.error {
        Some(error) => error.cause.clone(),
        None => {
            let output = results[i].0.output.clone().unwrap_or_default();
            let caught = if output["cause"].is_string() { &output["cause"] } else { &output["readError"]["Cause"] };
            caught.as_str().unwrap_or_default().to_owned()
        }
    };
    let causes = [
        (3, "NoSuchKey: s3://items/in ✓/missing.json"),
        (4, "The object is not valid JSON"),
        (5, "The ItemReader parameter `Bucket` must be a string, found 5"),
        (6, "The JSONPath '$.bucket' specified for the field 'Bucket.$' could not be found"),
        (8, "field MaxItems must be positive"),
        (9, "The MaxItemsPath field refers to value \"x\" which is not a valid integer: $.max"),
        (10, "The ToleratedFailureCountPath field refers to value \"x\""),
        (11, "ToleratedFailureCount cannot be negative."),
        (12, "ToleratedFailurePercentage must be between 0 and 100."),
        (13, "The ToleratedFailurePercentagePath field refers to value \"x\" which is not a valid float: $.pct"),
        (14, "The ResultWriter parameter `Prefix` must be a string, found 5"),
        (17, "field MaxItemsPerBatch must be positive"),
        (18, "field MaxItemsPerBatch must be positive"),
        (19, "too large for a batch of at most 5 bytes (MaxInputBytesPerBatch)"),
        (20, "field MaxInputBytesPerBatch must be at most 262144 bytes, found 300000"),
        (22, "specified for the field 'Items' returned an unexpected result type"),
        (25, "specified for the field 'ToleratedFailureCount' returned an unexpected result type"),
        (26, "ToleratedFailureCount cannot be negative."),
        (27, "ToleratedFailurePercentage must be between 0 and 100."),
        (28, "field MaxItemsPerBatch must be positive"),
        (29, "specified for the field 'MaxItemsPerBatch' returned an unexpected result type"),
        (30, "specified for the field 'ItemSelector/check' threw an error"),
    ];
    for (i, expected) in causes {
        assert!(cause(i).contains(expected), "{i}: {:?} does not contain {expected:?}", cause(i));
    }
}

/// sw_states' `echo`: waits `sleep` seconds (virtual time), fails with `Boom` when `boom` is
/// set, else returns `{"out": input, "echoed": true}`.
async fn sw_echo(input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
    if let Some(seconds) = input["sleep"].as_u64() {
        tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    }
    if input["boom"].as_bool() == Some(true) {
        return Err(Failure::new("Boom", "echo was asked to fail \"✓\""));
    }
    Ok(json!({ "out": input, "echoed": true }))
}

/// sw_states' `flaky`: fails with `Flaky` when its input's `order.flaky` is set, else returns
/// `{"flaked": "no ✓"}`.
async fn sw_flaky(input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
    if input["order"]["flaky"].as_bool() == Some(true) {
        return Err(Failure::new("Flaky", "flaky failed"));
    }
    Ok(json!({ "flaked": "no ✓" }))
}

/// sw_states' subflow `audit-sub`, which the handler runs: fails with `AuditFailed` when its
/// input's `auditBoom` is set, else returns `{"audited": "✓", "seen": <its input's results>}`.
async fn sw_audit(input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
    if input["auditBoom"].as_bool() == Some(true) {
        return Err(Failure::new("AuditFailed", "the audit \"{#}\" failed"));
    }
    Ok(json!({ "audited": "✓", "seen": input["results"] }))
}

impl sw_states::Handler for Tasks {
    async fn audit_sub(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        sw_audit(input, ctx).await
    }

    async fn echo(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        sw_echo(input, ctx).await
    }

    async fn flaky_f(&self, input: Value, ctx: TaskContext) -> Result<Value, Failure> {
        sw_flaky(input, ctx).await
    }
}

#[test]
fn sw_states_run_as_the_interpreter_does() {
    let order = |order: Value| json!({ "items": [{"price": 5}, {"price": 500}], "order": order });
    let inputs = [
        // 0: the first condition: both actions, the guard holds, the delay, Check's `out`, Done.
        order(json!({"n": 2})),
        // 1: the guard does not hold (no `order.n`): Wfc.TransitionGuardFailed.
        order(json!({"m": 1})),
        // 2: echo fails with Boom: onError by expression, its errorDataFilter, Recover terminates.
        order(json!({"n": 1, "boom": true})),
        // 3: flaky fails on every attempt: two retries (1 s, then 3 s), then the failure.
        order(json!({"n": 1, "flaky": true})),
        // 4: echo outlasts the action's timeout: Wfc.Timeout, onError to Done.
        order(json!({"n": 1, "sleep": 20})),
        // 5: the second condition: both actions at once (the first slower), merged in order; the
        // output filter keeps `out`.
        json!({"items": [], "fan": {"x": "✓ \"{#}\"", "sleep": 3}}),
        // 6: a parallel action fails with Boom: the state has no onError, the run fails.
        json!({"fan": {"x": 1, "boom": true}}),
        // 7, 8: the default: Check's third condition (Recover), or none holds
        // (Wfc.NoConditionMatched).
        json!({"ok": "yes"}),
        json!({"items": [{"price": 1}]}),
        // 9: the state data is not an object.
        json!([1, 2]),
        // 10: the third condition: the foreach (two at a time, finishing out of order), the
        // parallel state's actions branch and handler-run subflow branch, the subflow state.
        json!({"list": [{"v": 1, "sleep": 2}, {"v": "✓ {#}"}, {"v": 3, "sleep": 1}]}),
        // 11: an iteration fails with Boom; 12: the input collection is not an array.
        json!({"list": [{"v": 1, "sleep": 1}, {"v": 2, "boom": true}]}),
        json!({"list": 5}),
        // 13, 14: the parallel state's actions branch, then its subflow branch, fail.
        json!({"list": [{"v": 1}], "parBoom": true}),
        json!({"list": [{"v": 1}], "auditBoom": true}),
    ];
    let reply = |answer: Value, region: &str| {
        json!({"specversion": "1.0", "id": "r1", "type": "reply \"✓\"", "source": "tests {#}", "region": region,
               "data": {"answer": answer}})
    };
    let go = json!({"specversion": "1.0", "id": "g1", "type": "go", "source": "x", "data": {"go": "✓"}});
    let stop = json!({"specversion": "1.0", "id": "s1", "type": "stop", "source": "x", "data": {"why": "\"{#}\""}});
    let call = |events: Vec<Value>, open: bool| json!({"call": {"who": "me {#}"}, "events": events, "open": open});
    let inputs = [
        inputs.to_vec(),
        vec![
            // 15: the callback's action and event (its filter), the produced event, then the
            // switch's first event condition, whose transition produces two events.
            call(vec![reply(json!(42), "eu ✓"), go.clone()], false),
            // 16: the switch's second event condition (its filter), to Recover.
            call(vec![reply(json!({"k": "✓"}), "eu ✓"), stop.clone()], false),
            // 17: no event for the switch within its eventTimeout: the default.
            call(vec![reply(json!(1), "eu ✓")], true),
            // 18: the reply does not correlate: the callback times out (Wfc.Timeout).
            call(vec![reply(json!(1), "us"), go.clone()], true),
            // 19: no event, and the bus is closed: the callback's wait ends at its timeout.
            call(vec![], false),
            // 20: the exclusive event state takes Go (its filter and actions), then the other
            // waits for both events.
            json!({"wait": true, "events": [go.clone(), reply(json!("✓"), "eu ✓"), go.clone(), stop.clone()]}),
            // 21: ... takes Stop (its actions in parallel mode).
            json!({"wait": true, "events": [stop.clone(), go.clone(), stop.clone()]}),
            // 22: no event: both event states time out and go on without actions.
            json!({"wait": true, "events": [], "open": true}),
            // 23: Go, but no reply to the event action: Wfc.Timeout.
            json!({"wait": true, "events": [go.clone()], "open": true}),
            // 24: the subflow compiled together, as a subflow state and per element of a foreach.
            json!({"inner": [{"x": 1}, {"x": "✓ {#}"}]}),
            // 25: ... which terminates the whole instance from the subflow state.
            json!({"inner": [{"x": 1}], "stopAll": true}),
        ],
    ]
    .concat();
    // Each run's events queued on a bus of its own (closed after them unless `open`).
    let options_for = |input: &Value| {
        let bus = wfc_runtime::events::EventBus::new();
        for event in input["events"].as_array().into_iter().flatten() {
            bus.deliver(event.clone());
        }
        if input["open"].as_bool() != Some(true) {
            bus.close();
        }
        options().with_events(bus)
    };
    let mut results = Vec::new();
    for input in &inputs {
        let compiled = block_on_virtual(sw_states::run_with(&Tasks, input.clone(), options_for(input)));
        assert_same_with("sw_states", input, compiled.clone(), options_for(input));
        results.push(compiled);
    }
    let done = &results[0];
    assert_eq!(done.output.as_ref().map(|o| o["done"].clone()), Some(json!("✓ \"{#}\" {{ $.x }}")), "{done:?}");
    assert_eq!(done.output.as_ref().map(|o| o["out"]["msg"].clone()), Some(json!("n=2 \"q\" ✓ {#}")), "{done:?}");
    let errors: Vec<Option<String>> = results.iter().map(|r| r.error.as_ref().map(|e| e.error.clone())).collect();
    assert_eq!(errors[1].as_deref(), Some("Wfc.TransitionGuardFailed"));
    assert_eq!(errors[3].as_deref(), Some("Flaky"));
    assert_eq!(errors[6].as_deref(), Some("Boom"));
    assert_eq!(errors[8].as_deref(), Some("Wfc.NoConditionMatched"));
    assert_eq!(results[2].output.as_ref().map(|o| o["recovered"].clone()), Some(json!(true)));
    assert_eq!(results[2].output.as_ref().map(|o| o["error"]["name"].clone()), Some(json!("Boom")));
    let retried = results[3].history.iter().filter(|e| e.event_type == wfc_runtime::EventType::SwStateRetried).count();
    assert_eq!(retried, 2, "{:?}", results[3].history);
    assert_eq!(results[4].output.as_ref().map(|o| o["done"].is_string()), Some(true), "{:?}", results[4]);
    assert_eq!(results[5].output.as_ref().map(|o| o["out"]["x"]["x"].clone()), Some(json!("✓ \"{#}\"")));
    let each = results[10].output.clone().unwrap_or_default();
    let values: Vec<Value> = each["results"].as_array().into_iter().flatten().map(|r| r["v"].clone()).collect();
    assert_eq!(values, [json!("1 \"✓\""), json!("✓ {#} \"✓\""), json!("3 \"✓\"")], "{each}");
    assert_eq!((each["audited"].clone(), each["echoed"].clone()), (json!("✓"), json!(true)), "{each}");
    assert_eq!(each["seen"], each["results"], "{each}");
    // The unawaited subflow: its own line, its outcome recorded, the data unchanged.
    let detached: Vec<_> = results[10]
        .history
        .iter()
        .filter(|e| e.event_type == wfc_runtime::EventType::SwSubflowSucceeded)
        .map(|e| e.details["workflowId"].clone())
        .collect();
    assert_eq!(detached, [json!("audit-sub")], "{:?}", results[10]);
    assert_eq!(errors[11].as_deref(), Some("Boom"));
    assert_eq!(errors[12].as_deref(), Some("Wfc.DataError"));
    assert_eq!(errors[13].as_deref(), Some("Boom"));
    assert_eq!(errors[14].as_deref(), Some("AuditFailed"));
    let produced = |r: &ExecutionResult| -> Vec<Value> {
        r.history
            .iter()
            .filter(|e| e.event_type == wfc_runtime::EventType::EventProduced)
            .map(|e| e.details["event"]["type"].clone())
            .collect()
    };
    let called = results[15].output.clone().unwrap_or_default();
    assert_eq!((called["answer"].clone(), called["done"].is_string()), (json!(42), true), "{called}");
    assert_eq!(produced(&results[15]), [json!("rang ✓"), json!("went"), json!("rang ✓")], "{:?}", results[15]);
    assert_eq!(results[16].output.as_ref().map(|o| o["why"].clone()), Some(json!("\"{#}\"")), "{:?}", results[16]);
    assert_eq!(results[17].output.as_ref().map(|o| o["done"].is_string()), Some(true), "{:?}", results[17]);
    assert_eq!(errors[18].as_deref(), Some("Wfc.Timeout"));
    assert_eq!(errors[19].as_deref(), Some("Wfc.Timeout"));
    assert_eq!(results[20].output.as_ref().map(|o| o["out"]["g"].clone()), Some(json!("✓ {#}")), "{:?}", results[20]);
    // The event action: its trigger produced, its result event's data merged.
    assert_eq!(results[20].output.as_ref().map(|o| o["answer"].clone()), Some(json!("✓")), "{:?}", results[20]);
    assert_eq!(produced(&results[20]), [json!("rang ✓")], "{:?}", results[20]);
    assert_eq!(produced(&results[21]), [json!("went")], "{:?}", results[21]);
    assert_eq!(errors[23].as_deref(), Some("Wfc.Timeout"));
    // The subflow compiled together and started without waiting: its generated machine ran on
    // its own line (the inner workflow's echo called through `ByName`), its end recorded.
    let detached: Vec<(Value, Value)> = results[24]
        .history
        .iter()
        .filter(|e| {
            matches!(
                e.event_type,
                wfc_runtime::EventType::SwSubflowStarted | wfc_runtime::EventType::SwSubflowSucceeded
            )
        })
        .filter(|e| e.details["name"] == json!("Detach \"d\" ✓"))
        .map(|e| (json!(format!("{:?}", e.event_type)), e.details["workflowId"].clone()))
        .collect();
    assert_eq!(
        detached,
        [(json!("SwSubflowStarted"), json!("inner-sub")), (json!("SwSubflowSucceeded"), json!("inner-sub"))],
        "{:?}",
        results[24]
    );
    let nested = results[24].output.clone().unwrap_or_else(|| panic!("{:?}", results[24]));
    let xs: Vec<Value> =
        nested["innerResults"].as_array().into_iter().flatten().map(|r| r["out"]["x"].clone()).collect();
    assert_eq!((xs, nested["innerDone"].clone()), (vec![json!(1), json!("✓ {#}")], json!("done \"✓\"")), "{nested}");
    let stopped = results[25].output.clone().unwrap_or_default();
    assert_eq!((stopped["stopped"].clone(), stopped.get("done")), (json!("✓"), None), "{stopped}");
    assert_eq!(results[21].output.as_ref().map(|o| o["out"]["s"].clone()), Some(json!("\"{#}\"")), "{:?}", results[21]);
    let timed_out =
        results[22].history.iter().filter(|e| e.event_type == wfc_runtime::EventType::SwStateTimedOut).count();
    assert_eq!((timed_out, errors[22].as_deref()), (2, Some("Wfc.NoConditionMatched")), "{:?}", results[22]);
}
