//! Compile-time cost of generated code: how long the macro's work takes for a 200-state
//! workflow, how many lines it generates per state, and (with `--build-time`, slow) how long
//! `cargo build` takes to compile the generated module, from clean and after a one-state edit.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// States in the generated definition.
pub(crate) const STATES: usize = 200;

/// A definition of `STATES` states with `marker` in the first state's Comment (changing the
/// marker is the one-state edit of the incremental build): a loop of Choice, Pass with
/// Parameters, Wait and Task states, so every kind of driver arm is generated.
pub(crate) fn definition(marker: &str) -> String {
    let mut states = serde_json::Map::new();
    for i in 0..STATES {
        let name = format!("S{i:03}");
        let next = format!("S{:03}", i + 1);
        let last = i + 1 == STATES;
        let mut state = match i % 4 {
            0 => json!({
                "Type": "Choice",
                "Choices": [{ "Variable": "$.n", "NumericGreaterThan": 1_000_000, "Next": "S199" }],
                "Default": next,
            }),
            1 => json!({ "Type": "Pass", "Parameters": { "n.$": "States.MathAdd($.n, 1)" }, "Next": next }),
            2 => json!({ "Type": "Wait", "Seconds": 0, "Next": next }),
            _ => json!({
                "Type": "Task",
                "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Inc",
                "Retry": [{ "ErrorEquals": ["States.TaskFailed"], "MaxAttempts": 2 }],
                "Next": next,
            }),
        };
        if last {
            state = json!({ "Type": "Succeed" });
        }
        if i == 0 {
            state["Comment"] = Value::String(marker.to_owned());
        }
        states.insert(name, state);
    }
    let doc = json!({ "Comment": "200 states for the compile-time benchmark", "StartAt": "S000", "States": states });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// What the macro costs for the 200-state definition.
#[derive(Debug, Clone)]
pub(crate) struct Expansion {
    /// The fastest of several runs of what `include_workflow!` does: parse, validate, lower,
    /// optimize and generate tokens (not rustc's own handling of the tokens afterwards).
    pub(crate) expansion: Duration,
    /// Lines of the generated module once formatted (as `wfc compile` prints it).
    pub(crate) generated_lines: usize,
}

/// Measures [`Expansion`].
pub(crate) fn expansion() -> Result<Expansion, String> {
    let text = definition("v1");
    let source = wfc_core::Source { path: "states200.asl.json", text: &text };
    let settings = wfc_core::Settings::new();
    let mut best = Duration::MAX;
    let mut tokens = None;
    for _ in 0..5 {
        let start = Instant::now();
        let compiled = wfc_core::compile(source, &settings)
            .map_err(|d| d.items.first().map_or("rejected".to_owned(), |d| format!("{}: {}", d.code, d.message)))?;
        best = best.min(start.elapsed());
        tokens = Some(compiled.tokens);
    }
    let formatted = wfc_core::codegen::format(tokens.unwrap_or_default());
    Ok(Expansion { expansion: best, generated_lines: formatted.lines().count() })
}

/// `cargo build` times of a crate that includes the 200-state workflow.
#[derive(Debug, Clone)]
pub(crate) struct BuildTimes {
    /// After `cargo clean -p` of the crate (its dependencies stay built).
    pub(crate) clean: Duration,
    /// After changing one state's Comment.
    pub(crate) incremental: Duration,
}

fn cargo(dir: &Path, args: &[&str], target: &Path) -> Result<Duration, String> {
    let start = Instant::now();
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr)));
    }
    Ok(start.elapsed())
}

/// Builds a scratch crate under `target/wfc-bench-build` in the dev profile, as a developer
/// iterates (incremental compilation on), with the workspace's
/// lock file, so dependencies resolve to the same versions, and `target` as the target
/// directory, so they are built once) and times its own compilation.
pub(crate) fn build_times(target: &Path) -> Result<BuildTimes, String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let runtime = workspace.join("runtime").canonicalize().map_err(|e| format!("runtime crate: {e}"))?;
    let dir: PathBuf = target.join("wfc-bench-build");
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"));
    write(
        "Cargo.toml",
        &format!(
            "[package]\nname = \"wfc-bench-build\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [dependencies]\nwfc-runtime = {{ path = {:?} }}\n\n[workspace]\n",
            runtime.display().to_string()
        ),
    )?;
    if let Ok(lock) = std::fs::read_to_string(workspace.join("Cargo.lock")) {
        write("Cargo.lock", &lock)?;
    }
    write(
        "src/main.rs",
        "//! A crate that only compiles the benchmark's 200-state workflow.\n\
         wfc_runtime::include_workflow!(\"states200.asl.json\");\n\
         struct H;\n\
         impl states200::Handler for H {\n\
             async fn inc(&self, input: wfc_runtime::Value, _ctx: wfc_runtime::TaskContext) -> Result<wfc_runtime::Value, wfc_runtime::TaskError> { Ok(input) }\n\
         }\n\
         fn main() { let _ = states200::run(&H, wfc_runtime::json!({\"n\": 0})); }\n",
    )?;
    write("states200.asl.json", &definition("v1"))?;
    // Dependencies first (not timed).
    cargo(&dir, &["build", "--offline"], target)?;
    cargo(&dir, &["clean", "-p", "wfc-bench-build"], target)?;
    let clean = cargo(&dir, &["build", "--offline"], target)?;
    write("states200.asl.json", &definition("v2"))?;
    let incremental = cargo(&dir, &["build", "--offline"], target)?;
    Ok(BuildTimes { clean, incremental })
}
