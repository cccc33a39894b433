//! `wfc-bench`: runs the same workloads on three engines in one process and compares them.
//!
//! ```text
//! cargo run --release -p wfc-bench -- [--quick] [--json]
//! ```
//!
//! - **compiled**: the workflow compiled into this binary by `include_workflow!`, with trivial
//!   handlers;
//! - **interp**: the same definition through `wfc_core::load` and `wfc_interp::run`;
//! - **handwritten**: plain Rust doing the same serde_json work, the floor the others are
//!   compared with (`ratio_to_handwritten` is an engine's executions per second over the
//!   hand-written code's, measured in the same run).
//!
//! Every execution runs on the real clock (no workload waits). Allocations and peak heap bytes
//! come from a counting global allocator, in one counted execution; the timed executions run
//! with its counters off (see `alloc`). A workload whose definition the compiler rejects today
//! (Map, intrinsic functions) is skipped with the compiler's reason, never simulated.

mod alloc;
mod compile_cost;
mod durable;
#[cfg(wfc_bench_task_chain)]
mod floor;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wfc_interp::{self as interp, Handlers};
use wfc_runtime::{ExecutionResult, HistoryLevel, RunOptions, Status, TaskContext, TaskError};

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

include!(concat!(env!("OUT_DIR"), "/probe.rs"));

#[cfg(wfc_bench_count_loop)]
wfc_runtime::include_workflow!("workflows/count_loop.asl.json");
#[cfg(wfc_bench_task_chain)]
wfc_runtime::include_workflow!("workflows/task_chain.asl.json");
#[cfg(wfc_bench_parallel10)]
wfc_runtime::include_workflow!("workflows/parallel10.asl.json");
#[cfg(wfc_bench_map_c0)]
wfc_runtime::include_workflow!("workflows/map_c0.asl.json");
#[cfg(wfc_bench_map_c10)]
wfc_runtime::include_workflow!("workflows/map_c10.asl.json");
#[cfg(wfc_bench_big_document)]
wfc_runtime::include_workflow!("workflows/big_document.asl.json");

/// The resource every benchmark Task calls.
const INC: &str = "arn:aws:lambda:us-east-1:123456789012:function:Inc";

/// The trivial task: `{"n": k}` → `{"n": k + 1}`. Shared by all three engines.
fn inc(input: &Value) -> Value {
    let n = input.get("n").and_then(Value::as_i64).unwrap_or(0);
    json!({ "n": n + 1 })
}

/// The compiled engine's handler.
struct Bench;

/// Implements a generated `Handler` trait with the trivial task, for the modules that exist.
macro_rules! handler {
    ($cfg:meta, $module:ident) => {
        #[cfg($cfg)]
        impl $module::Handler for Bench {
            async fn inc(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
                Ok(inc(&input))
            }
        }
    };
}

#[cfg(wfc_bench_count_loop)]
impl count_loop::Handler for Bench {}
handler!(wfc_bench_task_chain, task_chain);
handler!(wfc_bench_parallel10, parallel10);
handler!(wfc_bench_map_c0, map_c0);
handler!(wfc_bench_map_c10, map_c10);

#[cfg(wfc_bench_big_document)]
impl big_document::Handler for Bench {}

/// Runs one execution of a generated module on the real clock.
type CompiledRun = fn(&tokio::runtime::Runtime, Value, RunOptions) -> ExecutionResult;

/// The compiled engine for the module named `module`, if this binary has it.
fn compiled(module: &str) -> Option<CompiledRun> {
    macro_rules! arm {
        ($cfg:meta, $module:ident) => {{
            #[cfg($cfg)]
            if module == stringify!($module) {
                return Some(|rt, input, options| rt.block_on($module::run_with(&Bench, input, options)));
            }
        }};
    }
    arm!(wfc_bench_count_loop, count_loop);
    arm!(wfc_bench_task_chain, task_chain);
    arm!(wfc_bench_parallel10, parallel10);
    arm!(wfc_bench_map_c0, map_c0);
    arm!(wfc_bench_map_c10, map_c10);
    arm!(wfc_bench_big_document, big_document);
    None
}

/// One workload: a definition, its input, and the hand-written equivalent.
struct Workload {
    /// The name in reports.
    name: &'static str,
    /// The generated module's name (the definition's file stem).
    module: &'static str,
    /// The definition's text.
    definition: &'static str,
    /// States entered per execution (Parallel/Map children included), checked against the
    /// history of every engine run.
    transitions: u64,
    /// The execution input.
    input: fn() -> Value,
    /// The same serde_json work in plain Rust.
    handwritten: fn(Value) -> Value,
    /// Raises the history limit above AWS's 25,000 events. An inline Map of 10,000 Task items
    /// records 5 events per item, which AWS would refuse (it points to Distributed Map); the
    /// benchmark measures the engine, so it lifts the limit for those workloads only.
    unlimited_history: bool,
}

impl Workload {
    fn options(&self, history: HistoryLevel) -> RunOptions {
        let mut options = RunOptions::real().with_history(history);
        if self.unlimited_history {
            options.limits.max_history_events = usize::MAX;
        }
        options
    }
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "count-loop-1000",
            module: "count_loop",
            definition: include_str!("../workflows/count_loop.asl.json"),
            // 1,000 × (Choice + Pass), the last Choice, and Succeed.
            transitions: 2_002,
            input: || json!({ "i": 0 }),
            handwritten: |mut v| {
                // Choice reads $.i; Parameters builds {"i": i + 1}.
                while let Some(i) = v.get("i").and_then(Value::as_i64).filter(|i| *i < 1000) {
                    v = json!({ "i": i + 1 });
                }
                v
            },
            unlimited_history: false,
        },
        Workload {
            name: "task-chain-100",
            module: "task_chain",
            definition: include_str!("../workflows/task_chain.asl.json"),
            transitions: 100,
            input: || json!({ "n": 0 }),
            handwritten: |mut v| {
                for _ in 0..100 {
                    v = inc(&v);
                }
                v
            },
            unlimited_history: false,
        },
        Workload {
            name: "parallel-10",
            module: "parallel10",
            definition: include_str!("../workflows/parallel10.asl.json"),
            transitions: 11,
            input: || json!({ "n": 0 }),
            handwritten: |v| Value::Array((0..10).map(|_| inc(&v)).collect()),
            unlimited_history: false,
        },
        Workload {
            name: "map-10000-c0",
            module: "map_c0",
            definition: include_str!("../workflows/map_c0.asl.json"),
            transitions: 10_001,
            input: map_input,
            handwritten: map_handwritten,
            unlimited_history: true,
        },
        Workload {
            name: "map-10000-c10",
            module: "map_c10",
            definition: include_str!("../workflows/map_c10.asl.json"),
            transitions: 10_001,
            input: map_input,
            handwritten: map_handwritten,
            unlimited_history: true,
        },
        Workload {
            name: "document-100kb-20",
            module: "big_document",
            definition: include_str!("../workflows/big_document.asl.json"),
            transitions: 20,
            input: big_document,
            handwritten: |mut v| {
                // InputPath $.doc, ResultPath $.doc, OutputPath $: the floor moves the document
                // out and back in without copying it.
                for _ in 0..20 {
                    let doc = v.get_mut("doc").map(Value::take).unwrap_or(Value::Null);
                    if let Some(slot) = v.as_object_mut() {
                        slot.insert("doc".to_owned(), doc);
                    }
                }
                v
            },
            unlimited_history: false,
        },
    ]
}

fn map_input() -> Value {
    json!({ "items": (0..10_000).map(|n| json!({ "n": n })).collect::<Vec<_>>() })
}

fn map_handwritten(v: Value) -> Value {
    let items = v.get("items").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    Value::Array(items.iter().map(inc).collect())
}

/// About 100 KB of JSON: 1,000 records of ~100 bytes, under `doc`.
fn big_document() -> Value {
    let records: Vec<Value> = (0..1_000)
        .map(|i| json!({ "id": i, "name": format!("record-{i:05}"), "tags": ["alpha", "beta"], "score": i as f64 / 7.0 }))
        .collect();
    json!({ "doc": { "records": records }, "meta": { "source": "wfc-bench" } })
}

/// Item counts of `--map-memory`.
const MAP_MEMORY_SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// `--map-memory`: how the Map's peak heap grows with its number of items.
mod map_memory {
    use super::*;

    /// The peak heap of one execution of the MaxConcurrency-10 Map over `items` items.
    pub(crate) struct Point {
        pub(crate) items: usize,
        pub(crate) engine: &'static str,
        pub(crate) history: HistoryLevel,
        pub(crate) result: Result<usize, String>,
    }

    impl Point {
        pub(crate) fn to_json(&self) -> Value {
            json!({
                "items": self.items,
                "engine": self.engine,
                "history": self.history.name(),
                "peak_bytes": self.result.as_ref().ok(),
                "bytes_per_item": self.result.as_ref().ok().map(|b| json_number(*b as f64 / self.items as f64, 1)),
                "skipped": self.result.as_ref().err(),
            })
        }
    }

    fn input(items: usize) -> Value {
        json!({ "items": (0..items).map(|n| json!({ "n": n })).collect::<Vec<_>>() })
    }

    /// One execution per size and history level, on the compiled engine when this binary has
    /// the Map module, else the interpreter. The input is built before the peak is reset, so
    /// the figure is the execution's own heap (its output and history included).
    pub(crate) fn measure(rt: &tokio::runtime::Runtime, sizes: &[usize]) -> Vec<Point> {
        let definition = include_str!("../workflows/map_c10.asl.json");
        let loaded = wfc_core::load(wfc_core::Source { path: "map_c10", text: definition });
        let handlers = Handlers::new().on(INC, |input, _ctx| async move { Ok(inc(&input)) });
        let mut points = Vec::new();
        for &items in sizes {
            for history in LEVELS {
                // 100,000 items are a 1.2 MB input, past AWS's 256 KiB payload limit (AWS would
                // need a Distributed Map); like the history limit, it is lifted here, since
                // what is measured is the engine's memory.
                let mut options = RunOptions::real().with_history(history);
                options.limits.max_history_events = usize::MAX;
                options.limits.max_payload_bytes = usize::MAX;
                let input = input(items);
                let (engine, result) = match (compiled("map_c10"), &loaded) {
                    (Some(run), _) => {
                        let base = alloc::reset_peak();
                        let result = run(rt, input, options);
                        ("compiled", (result, alloc::peak_since(base)))
                    }
                    (None, Ok(loaded)) => {
                        let base = alloc::reset_peak();
                        let result = rt.block_on(interp::run(&loaded.workflow, &handlers, input, options));
                        ("interp", (result, alloc::peak_since(base)))
                    }
                    (None, Err(_)) => {
                        points.push(Point {
                            items,
                            engine: "compiled",
                            history,
                            result: Err("skipped: not compiled".into()),
                        });
                        continue;
                    }
                };
                let (result, peak) = result;
                let ok = match result.output.as_ref().and_then(Value::as_array) {
                    Some(out) if result.status == Status::Succeeded && out.len() == items => Ok(peak),
                    _ => Err(format!(
                        "the execution ended {:?}: {}",
                        result.status,
                        result.error.as_ref().map(|f| format!("{}: {}", f.error, f.cause)).unwrap_or_default()
                    )),
                };
                drop(result);
                points.push(Point { items, engine, history, result: ok });
            }
        }
        points
    }

    pub(crate) fn print(points: &[Point]) {
        if points.is_empty() {
            return;
        }
        println!();
        println!("Map memory (MaxConcurrency 10, one execution each):");
        println!("{:>8} {:<20} {:>14} {:>10}", "items", "engine", "peak bytes", "bytes/item");
        for p in points {
            let label = match p.history {
                HistoryLevel::Express => format!("{} (express)", p.engine),
                _ => p.engine.to_owned(),
            };
            match &p.result {
                Ok(b) => println!("{:>8} {:<20} {:>14} {:>10.1}", p.items, label, b, *b as f64 / p.items as f64),
                Err(e) => println!("{:>8} {:<20} {e}", p.items, label),
            }
        }
    }
}

/// The measured figures of one workload on one engine.
#[derive(Debug, Clone)]
struct Row {
    name: &'static str,
    engine: &'static str,
    /// The history level the engine ran at (`None` for the hand-written code, which has none).
    history: Option<HistoryLevel>,
    result: Result<Figures, String>,
}

impl Row {
    /// The engine as the table shows it: `compiled`, `compiled (express)`.
    fn label(&self) -> String {
        match self.history {
            Some(HistoryLevel::Express) => format!("{} (express)", self.engine),
            _ => self.engine.to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Figures {
    executions_per_sec: f64,
    transitions_per_sec: f64,
    allocs_per_transition: f64,
    peak_bytes: usize,
    ratio_to_handwritten: f64,
}

/// How long each measurement runs.
#[derive(Debug, Clone, Copy)]
struct Budget {
    time: Duration,
    min_runs: u32,
    /// Exactly this many measured runs, whatever the time (`--runs N`: for instruction counts
    /// under callgrind, which must not depend on the machine's speed).
    exact_runs: Option<u32>,
}

/// Runs `once` repeatedly for the budget and measures it. `once` returns the number of states
/// entered (from the history; `None` when the run kept no history, whose count the same engine's
/// full-history row checks) and the output, which must match `expected_output`.
fn measure(
    budget: Budget,
    transitions: u64,
    expected_output: &Value,
    mut once: impl FnMut(Check) -> Result<(Option<u64>, Value), String>,
) -> Result<Figures, String> {
    // Warm-up run, which also checks the engine does the same work as the hand-written code.
    let (entered, output) = once(Check::Count)?;
    if let Some(entered) = entered
        && entered != transitions
    {
        return Err(format!("entered {entered} states, expected {transitions}"));
    }
    if &output != expected_output {
        return Err("output differs from the hand-written code's".to_owned());
    }
    // Peak heap and allocations of one execution, above what was live before it.
    let base = alloc::reset_peak();
    let allocs_before = alloc::allocations();
    once(Check::Status)?;
    let peak_bytes = alloc::peak_since(base);
    let allocs = alloc::allocations() - allocs_before;
    // The timed runs, without the allocation counters (three locked instructions an
    // allocation, which would weigh on every engine: see `alloc`).
    let (runs, elapsed) = alloc::uncounted(|| {
        let start = Instant::now();
        let mut runs = 0u32;
        while match budget.exact_runs {
            Some(n) => runs < n,
            None => runs < budget.min_runs || start.elapsed() < budget.time,
        } {
            once(Check::Status)?;
            runs += 1;
        }
        Ok::<_, String>((runs, start.elapsed().as_secs_f64()))
    })?;
    let executions_per_sec = f64::from(runs) / elapsed;
    Ok(Figures {
        executions_per_sec,
        transitions_per_sec: executions_per_sec * transitions as f64,
        allocs_per_transition: allocs as f64 / transitions as f64,
        peak_bytes,
        ratio_to_handwritten: f64::NAN,
    })
}

/// What a run checks besides its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Also count the states entered (the warm-up run: the count is checked once, outside the
    /// measured runs, so the benchmark's own work is not measured).
    Count,
    /// Only that it succeeded.
    Status,
}

/// States entered, from an engine's result (`None` without a history or when not asked); an
/// execution that did not succeed is an error.
fn entered(result: ExecutionResult, history: HistoryLevel, check: Check) -> Result<(Option<u64>, Value), String> {
    if result.status != Status::Succeeded {
        let error = result.error.map(|f| format!("{}: {}", f.error, f.cause)).unwrap_or_default();
        return Err(format!("the execution ended {:?}: {error}", result.status));
    }
    let states = (history == HistoryLevel::Full && check == Check::Count)
        .then(|| result.history.iter().filter(|e| e.event_type.name().ends_with("StateEntered")).count() as u64);
    Ok((states, result.output.unwrap_or(Value::Null)))
}

/// The history levels each engine runs at: full (what AWS Standard workflows keep) and express
/// (no history, as AWS Express workflows).
const LEVELS: [HistoryLevel; 2] = [HistoryLevel::Full, HistoryLevel::Express];

/// The rows a run adds to the engines' on request.
#[derive(Debug, Clone, Copy)]
struct Extras {
    /// `--unoptimized`: the interpreter on the IR as lowered, too (`interp-noopt`).
    unoptimized: bool,
    /// `--floors`: the Task chain's floors (see `floor`).
    floors: bool,
}

/// Which engines to run (`--engine`): all by default.
#[derive(Debug, Clone, Default)]
struct Engines {
    /// `handwritten`, `compiled`, `interp`, `compiled-express`, `interp-express`; empty: all.
    only: Vec<String>,
}

impl Engines {
    fn includes(&self, engine: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|e| e == engine)
    }

    fn includes_at(&self, engine: &str, level: HistoryLevel) -> bool {
        match level {
            HistoryLevel::Full => self.includes(engine),
            HistoryLevel::Express => self.includes(&format!("{engine}-express")),
        }
    }
}

fn run_workload(
    w: &Workload,
    budget: Budget,
    engines: &Engines,
    extras: Extras,
    rt: &tokio::runtime::Runtime,
) -> Vec<Row> {
    let input = (w.input)();
    let expected = (w.handwritten)(input.clone());
    let rejected = REJECTED.iter().find(|(m, _)| *m == w.module).map(|(_, reason)| *reason);
    let mut rows = Vec::new();

    if engines.includes("handwritten") {
        let handwritten =
            measure(budget, w.transitions, &expected, |_| Ok((Some(w.transitions), (w.handwritten)(input.clone()))));
        rows.push(Row { name: w.name, engine: "handwritten", history: None, result: handwritten });
    }

    for level in LEVELS {
        if !engines.includes_at("compiled", level) {
            continue;
        }
        let compiled_result = match (compiled(w.module), rejected) {
            (Some(run), _) => measure(budget, w.transitions, &expected, |check| {
                entered(run(rt, input.clone(), w.options(level)), level, check)
            }),
            (None, Some(reason)) => Err(format!("skipped: the compiler rejects it: {reason}")),
            (None, None) => Err("skipped: not compiled into this binary".to_owned()),
        };
        rows.push(Row { name: w.name, engine: "compiled", history: Some(level), result: compiled_result });
    }

    let source = wfc_core::Source { path: w.module, text: w.definition };
    let loaded = wfc_core::load(source);
    // `--unoptimized`: the interpreter also runs the IR exactly as lowered (no optimizer pass),
    // so the optimizer's effect is measured within the run.
    let mut no_passes = wfc_core::Settings::default();
    no_passes.passes(wfc_core::optimize::Passes::none());
    let unoptimized_ir = extras.unoptimized.then(|| wfc_core::load_with(source, &no_passes));
    let mut interps = vec![("interp", &loaded)];
    if let Some(ir) = &unoptimized_ir {
        interps.push(("interp-noopt", ir));
    }
    for (engine, loaded) in interps {
        for level in LEVELS {
            if !engines.includes_at("interp", level) {
                continue;
            }
            let interp_result = match loaded {
                Ok(loaded) => {
                    let handlers = Handlers::new().on(INC, |input, _ctx| async move { Ok(inc(&input)) });
                    measure(budget, w.transitions, &expected, |check| {
                        let options = w.options(level);
                        let result = rt.block_on(interp::run(&loaded.workflow, &handlers, input.clone(), options));
                        entered(result, level, check)
                    })
                }
                Err(diags) => {
                    let reason =
                        diags.items.first().map_or("rejected".to_owned(), |d| format!("{}: {}", d.code, d.message));
                    Err(format!("skipped: the compiler rejects it: {reason}"))
                }
            };
            rows.push(Row { name: w.name, engine, history: Some(level), result: interp_result });
        }
    }

    // `--floors`: the Task chain's work built up from the bare handler calls (see `floor`).
    #[cfg(wfc_bench_task_chain)]
    if extras.floors && w.module == "task_chain" {
        for (engine, floor) in floor::FLOORS {
            if engines.includes(engine) {
                let figures = measure(budget, w.transitions, &expected, |_| Ok((None, floor(rt, input.clone()))));
                rows.push(Row { name: w.name, engine, history: Some(HistoryLevel::Express), result: figures });
            }
        }
    }
    #[cfg(not(wfc_bench_task_chain))]
    if extras.floors && w.module == "task_chain" {
        let result = Err("skipped: the floors need the Task chain compiled into this binary".to_owned());
        rows.push(Row { name: w.name, engine: "floor-*", history: Some(HistoryLevel::Express), result });
    }

    // Ratios within this run: each engine against the hand-written code of the same workload.
    let floor = rows
        .iter()
        .find(|r| r.engine == "handwritten")
        .and_then(|r| r.result.as_ref().ok())
        .map(|f| f.executions_per_sec);
    for row in &mut rows {
        if let (Ok(f), Some(floor)) = (&mut row.result, floor) {
            f.ratio_to_handwritten = f.executions_per_sec / floor;
        }
    }
    rows
}

/// `x` rounded to `decimals` places (ratios are small, so they keep more), or `null` if not finite.
fn json_number(x: f64, decimals: i32) -> Value {
    let scale = 10f64.powi(decimals);
    serde_json::Number::from_f64((x * scale).round() / scale).map_or(Value::Null, Value::Number)
}

/// The compile-time figures: the macro's work and, with `--build-time`, cargo build times.
struct CompileCost {
    expansion: Result<compile_cost::Expansion, String>,
    build: Option<Result<compile_cost::BuildTimes, String>>,
}

impl CompileCost {
    fn to_json(&self) -> Value {
        let states = compile_cost::STATES;
        let mut doc = match &self.expansion {
            Ok(e) => json!({
                "states": states,
                "expansion_ms": json_number(e.expansion.as_secs_f64() * 1e3, 3),
                "generated_lines": e.generated_lines,
                "lines_per_state": json_number(e.generated_lines as f64 / states as f64, 2),
            }),
            Err(reason) => json!({ "states": states, "error": reason }),
        };
        match &self.build {
            Some(Ok(b)) => {
                doc["cargo_build_clean_s"] = json_number(b.clean.as_secs_f64(), 2);
                doc["cargo_build_incremental_s"] = json_number(b.incremental.as_secs_f64(), 2);
            }
            Some(Err(reason)) => doc["cargo_build_error"] = Value::String(reason.clone()),
            None => {}
        }
        doc
    }

    fn print(&self) {
        let states = compile_cost::STATES;
        match &self.expansion {
            Ok(e) => println!(
                "\ncompile time ({states}-state workflow): macro expansion {:.1} ms, {} generated lines ({:.1} per state)",
                e.expansion.as_secs_f64() * 1e3,
                e.generated_lines,
                e.generated_lines as f64 / states as f64,
            ),
            Err(reason) => println!("\ncompile time: the {states}-state workflow was rejected: {reason}"),
        }
        match &self.build {
            Some(Ok(b)) => println!(
                "cargo build of the generated code (dev profile): clean {:.1} s, incremental {:.1} s",
                b.clean.as_secs_f64(),
                b.incremental.as_secs_f64()
            ),
            Some(Err(reason)) => println!("cargo build: {reason}"),
            None => println!("cargo build times: run with --build-time"),
        }
    }
}

fn print_json(rows: &[Row], compile: &CompileCost, memory: &[map_memory::Point]) {
    let workloads: Vec<Value> = rows
        .iter()
        .map(|r| match &r.result {
            Ok(f) => json!({
                "name": r.name,
                "engine": r.engine,
                "history": r.history.map(HistoryLevel::name),
                "transitions_per_sec": json_number(f.transitions_per_sec, 3),
                "executions_per_sec": json_number(f.executions_per_sec, 3),
                "ratio_to_handwritten": json_number(f.ratio_to_handwritten, 5),
                "allocs_per_transition": json_number(f.allocs_per_transition, 3),
                "peak_bytes": f.peak_bytes,
            }),
            Err(reason) => json!({
                "name": r.name,
                "engine": r.engine,
                "history": r.history.map(HistoryLevel::name),
                "transitions_per_sec": null,
                "executions_per_sec": null,
                "ratio_to_handwritten": null,
                "allocs_per_transition": null,
                "peak_bytes": null,
                "skipped": reason,
            }),
        })
        .collect();
    let mut doc = json!({ "workloads": workloads, "compile": compile.to_json() });
    if !memory.is_empty() {
        doc["map_memory"] = Value::Array(memory.iter().map(map_memory::Point::to_json).collect());
    }
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")));
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<20} {:<20} {:>15} {:>13} {:>10} {:>12} {:>12}",
        "workload", "engine", "transitions/s", "executions/s", "ratio", "allocs/trans", "peak bytes"
    );
    for r in rows {
        match &r.result {
            Ok(f) => println!(
                "{:<20} {:<20} {:>15.0} {:>13.1} {:>10.4} {:>12.1} {:>12}",
                r.name,
                r.label(),
                f.transitions_per_sec,
                f.executions_per_sec,
                f.ratio_to_handwritten,
                f.allocs_per_transition,
                f.peak_bytes
            ),
            Err(reason) => println!("{:<20} {:<20} {reason}", r.name, r.label()),
        }
    }
}

const USAGE: &str = "usage: wfc-bench [--quick] [--json] [--only WORKLOAD]... [--engine ENGINE]... [--runs N]
  --quick            0.3 s per measurement instead of 2 s (CI smoke runs)
  --json             print {\"workloads\": [...]} instead of a table
  --only WORKLOAD    run only this workload (repeatable): count-loop-1000, task-chain-100, ...
  --engine ENGINE    run only this engine (repeatable): handwritten, compiled, interp,
                     compiled-express, interp-express (the last two keep no history)
  --runs N           exactly N measured runs per row, whatever the time (for callgrind)
  --build-time       also time `cargo build` of a crate with a 200-state workflow (minutes)
  --unoptimized      also run the interpreter on the IR with no optimizer pass (`interp-noopt`)
  --floors           also run task-chain-100's floors: its work built up from the bare handler
                     calls towards the compiled engine (floor-async, floor-exec, floor-layers,
                     floor-slots, floor-visit; see src/floor.rs)
  --map-memory       also measure the peak heap of the MaxConcurrency-10 Map at 1,000, 10,000
                     and 100,000 items (one execution each, both history levels)
  --durable          durable steps per second on SQLite and PostgreSQL instead (`--durable --help`)";

fn main() -> std::process::ExitCode {
    // `--durable` (and its worker processes) is a benchmark of its own, with its own flags.
    let mut all_args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = all_args.iter().position(|a| a == "--durable" || a == "--durable-worker") {
        let worker = all_args.remove(at) == "--durable-worker";
        return durable::main(worker, all_args);
    }
    let mut quick = false;
    let mut as_json = false;
    let mut only: Vec<String> = Vec::new();
    let mut engines = Engines::default();
    let mut exact_runs = None;
    let mut build_time = false;
    let mut unoptimized = false;
    let mut floors = false;
    let mut map_memory = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("error: `{flag}` needs a value"));
        let parsed: Result<(), String> = match arg.as_str() {
            "--quick" => {
                quick = true;
                Ok(())
            }
            "--json" => {
                as_json = true;
                Ok(())
            }
            "--build-time" => {
                build_time = true;
                Ok(())
            }
            "--unoptimized" => {
                unoptimized = true;
                Ok(())
            }
            "--floors" => {
                floors = true;
                Ok(())
            }
            "--map-memory" => {
                map_memory = true;
                Ok(())
            }
            "--only" => value("--only").map(|w| only.push(w)),
            "--engine" => value("--engine").map(|e| engines.only.push(e)),
            "--runs" => value("--runs").and_then(|n| {
                n.parse::<u32>().map(|n| exact_runs = Some(n)).map_err(|e| format!("error: --runs {n}: {e}"))
            }),
            "-h" | "--help" => {
                println!("{USAGE}");
                return std::process::ExitCode::SUCCESS;
            }
            other => Err(format!("error: unknown argument `{other}`")),
        };
        if let Err(message) = parsed {
            eprintln!("{message}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    }
    let all = workloads();
    if let Some(unknown) = only.iter().find(|name| !all.iter().any(|w| w.name == name.as_str())) {
        eprintln!("error: unknown workload `{unknown}`\n{USAGE}");
        return std::process::ExitCode::from(2);
    }
    let budget = if quick {
        Budget { time: Duration::from_millis(300), min_runs: 3, exact_runs }
    } else {
        Budget { time: Duration::from_secs(2), min_runs: 10, exact_runs }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut rows = Vec::new();
    for w in all.iter().filter(|w| only.is_empty() || only.iter().any(|name| name == w.name)) {
        if !as_json {
            eprintln!("running {} ...", w.name);
        }
        rows.extend(run_workload(w, budget, &engines, Extras { unoptimized, floors }, &rt));
    }
    let memory = if map_memory {
        if !as_json {
            eprintln!("running the Map memory sizes ...");
        }
        map_memory::measure(&rt, &MAP_MEMORY_SIZES)
    } else {
        Vec::new()
    };
    let build = build_time.then(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
        compile_cost::build_times(&target)
    });
    let compile = CompileCost { expansion: compile_cost::expansion(), build };
    if as_json {
        print_json(&rows, &compile, &memory);
    } else {
        print_table(&rows);
        compile.print();
        map_memory::print(&memory);
    }
    std::process::ExitCode::SUCCESS
}
