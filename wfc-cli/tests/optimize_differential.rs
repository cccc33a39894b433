//! Differential test of the optimizer: every case in tests/cases runs on the interpreter with no
//! optimizer pass, with the default passes, with each pass alone and with every pass, and the
//! results must agree.
//!
//! - History-preserving passes (the defaults: `fold-intrinsics`, `paths`, `unreachable`,
//!   `direct-paths`, `native-choice`) must give the *same JSON*:
//!   status, output or error and cause, elapsed virtual time, and the whole history.
//! - History-changing passes (`fold-pass`, `thread-choice`, off by default) must give the same
//!   status, output, error, cause and elapsed time, and the same history once the events of Pass
//!   and Choice states (the ones they may skip) are left out and event ids are ignored.
//!
//! - Passes are also switched off on both engines (`wfc test --engine both --no-opt=all`, and
//!   the two mixes of the passes that change generated code): generated code built that way must
//!   agree with the interpreter on every case.
//!
//! - The express history level (`--history-level=express`) must give the same result as the
//!   default run, without history events.
//!
//! The suite's definitions rarely contain foldable chains, so a few definitions written for the
//! passes run too, and the test checks that the passes really changed their histories (a
//! differential test whose passes never fire could not fail).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("tests").join("cases")
}

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("optimize-differential");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// One execution to repeat under every pass configuration.
struct Run {
    label: String,
    definition: PathBuf,
    args: Vec<String>,
}

/// The pass configurations, as `wfc` flags, and whether each must keep histories identical.
fn configurations() -> Vec<(&'static str, Vec<&'static str>, bool)> {
    vec![
        ("default", vec![], true),
        ("paths", vec!["--no-opt=all", "--opt=paths"], true),
        ("unreachable", vec!["--no-opt=all", "--opt=unreachable"], true),
        ("fold-intrinsics", vec!["--no-opt=all", "--opt=fold-intrinsics"], true),
        ("direct-paths", vec!["--no-opt=all", "--opt=direct-paths"], true),
        ("native-choice", vec!["--no-opt=all", "--opt=native-choice"], true),
        ("fold-pass", vec!["--no-opt=all", "--opt=fold-pass"], false),
        ("thread-choice", vec!["--no-opt=all", "--opt=thread-choice"], false),
        ("all", vec!["--opt=all"], false),
    ]
}

fn wfc_run(run: &Run, extra: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .arg("run")
        .arg(&run.definition)
        .args(&run.args)
        .args(["--virtual-time", "--history"])
        .args(extra)
        .env_remove("RUST_LOG")
        .output()
        .expect("the wfc binary runs");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("{} {extra:?}: stdout is not JSON ({e}); stderr: {}", run.label, String::from_utf8_lossy(&output.stderr))
    })
}

/// Replaces `event id #N` in error causes: skipped states shift event ids.
fn without_event_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("event id #") {
        let (head, tail) = rest.split_at(at + "event id #".len());
        out.push_str(head);
        out.push('N');
        rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

fn normalize_strings(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(without_event_ids(s)),
        Value::Array(a) => Value::Array(a.iter().map(normalize_strings).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), normalize_strings(v))).collect()),
        other => other.clone(),
    }
}

/// The result without the events history-changing passes may remove, and without event ids.
fn observable(result: &Value) -> Value {
    let mut r = result.clone();
    let events: Vec<Value> = result["history"]
        .as_array()
        .map(|h| {
            h.iter()
                .filter(|e| {
                    let ty = e["type"].as_str().unwrap_or("");
                    !(ty.starts_with("PassState") || ty.starts_with("ChoiceState"))
                })
                .map(|e| json!({ "type": e["type"], "timestamp": e["timestamp"], "details": e["details"] }))
                .collect()
        })
        .unwrap_or_default();
    r["history"] = Value::Array(events);
    normalize_strings(&r)
}

/// Runs `run` under every configuration against the unoptimized baseline; returns the
/// configurations whose history differed from the baseline.
fn check(run: &Run, failures: &mut Vec<String>) -> Vec<&'static str> {
    let baseline = wfc_run(run, &["--no-opt=all"]);
    let mut changed = Vec::new();
    for (name, flags, keeps_history) in configurations() {
        let result = wfc_run(run, &flags);
        if result["history"] != baseline["history"] {
            changed.push(name);
        }
        let same = if keeps_history { result == baseline } else { observable(&result) == observable(&baseline) };
        if !same {
            failures.push(format!(
                "{} with {name}: differs from the unoptimized run\n  unoptimized: {}\n  optimized:   {}",
                run.label,
                if keeps_history { baseline.clone() } else { observable(&baseline) },
                if keeps_history { result } else { observable(&result) },
            ));
        }
    }
    // The express history level keeps no events but must change nothing else: same status,
    // output, error, cause (event ids in causes included) and elapsed time.
    let express = wfc_run(run, &["--history-level=express"]);
    let default = wfc_run(run, &[]);
    let without_history = |r: &Value| {
        let mut r = r.clone();
        if let Some(m) = r.as_object_mut() {
            m.remove("history");
        }
        r
    };
    let empty = express["history"].as_array().is_none_or(Vec::is_empty);
    if !empty || without_history(&express) != without_history(&default) {
        failures.push(format!(
            "{} with --history-level=express: differs from the full history run\n  full:    {}\n  express: {}",
            run.label,
            without_history(&default),
            express,
        ));
    }
    changed
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            case_files(&p, out);
        } else if p.to_string_lossy().ends_with(".case.json") {
            out.push(p);
        }
    }
}

/// Turns one case of a case file into a `wfc run` invocation (files it needs go to `scratch`).
fn case_run(file: &Path, index: usize, case: &Value, scratch: &Path) -> Option<Run> {
    if case.get("skip").is_some() {
        return None;
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let stem = file.file_name().and_then(|n| n.to_str()).unwrap_or("case").trim_end_matches(".case.json").to_owned();
    let label = case["name"].as_str().map_or_else(|| format!("{stem}#{index}"), str::to_owned);
    let key = format!("{stem}-{index}");
    let definition = match &case["definition"] {
        Value::String(p) => dir.join(p),
        inline @ Value::Object(_) => {
            // Named after the case file, as `wfc test` names inline definitions' workflows.
            let sub = scratch.join(&key);
            std::fs::create_dir_all(&sub).expect("scratch");
            let path = sub.join(format!("{stem}.asl.json"));
            std::fs::write(&path, inline.to_string()).expect("write definition");
            path
        }
        other => panic!("{label}: unexpected definition {other}"),
    };
    let input = scratch.join(format!("{key}.input.json"));
    std::fs::write(&input, case.get("input").cloned().unwrap_or(json!({})).to_string()).expect("write input");
    let mut args = vec!["--input-file".to_owned(), input.display().to_string()];
    if let Some(mocks) = case.get("mocks") {
        let path = scratch.join(format!("{key}.mocks.json"));
        std::fs::write(&path, mocks.to_string()).expect("write mocks");
        args.extend(["--mocks".to_owned(), path.display().to_string()]);
    }
    if let Some(config) = case.get("mock_config") {
        let file = config["file"].as_str().expect("mock_config.file");
        args.extend(["--mocks".to_owned(), dir.join(file).display().to_string()]);
        if let Some(tc) = config["test_case"].as_str() {
            args.extend(["--test-case".to_owned(), tc.to_owned()]);
        }
        if let Some(sm) = config["state_machine"].as_str() {
            args.extend(["--state-machine".to_owned(), sm.to_owned()]);
        }
    }
    if let Some(seed) = case.get("seed").and_then(Value::as_u64) {
        args.extend(["--seed".to_owned(), seed.to_string()]);
    }
    // A DISTRIBUTED Map's ItemReader and ResultWriter directories.
    if let Some(root) = case.get("item_root").and_then(Value::as_str) {
        args.extend(["--item-root".to_owned(), dir.join(root).display().to_string()]);
    }
    args.extend(["--result-root".to_owned(), scratch.join(format!("{key}.results")).display().to_string()]);
    Some(Run { label, definition, args })
}

#[test]
fn every_case_agrees_with_and_without_each_pass() {
    let scratch = scratch();
    let mut files = Vec::new();
    case_files(&cases_dir(), &mut files);
    assert!(!files.is_empty(), "no case files under {}", cases_dir().display());
    let mut failures = Vec::new();
    let mut runs = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read case file");
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let cases = match doc {
            Value::Array(items) => items,
            one => vec![one],
        };
        for (i, case) in cases.iter().enumerate() {
            if let Some(run) = case_run(file, i, case, &scratch) {
                check(&run, &mut failures);
                runs += 1;
            }
        }
    }
    assert!(runs > 20, "only {runs} cases ran");
    assert!(failures.is_empty(), "{} disagreement(s):\n{}", failures.len(), failures.join("\n"));
}

/// The passes switched off on both engines. `wfc test --engine both` with a pass configuration
/// runs every case on the interpreter and on generated code built with the same passes
/// (`include_workflow!(…, no_opt = ["all"], opt = […])`, one program per configuration holding
/// every definition) and requires both to pass the case and to agree, whole histories included.
/// With the test above (each configuration against the unoptimized interpreter), the compiled
/// engine gives the unoptimized result.
///
/// Three configurations besides the default (`tests/cli.rs`'s run): every pass off
/// (`--no-opt=all`), and the two mixes that change what codegen emits for a state: direct paths
/// without native Choice rules, and native Choice rules over undirected paths. The other default
/// passes (`fold-intrinsics`, `paths`, `unreachable`) rewrite the IR into forms that the default
/// and the all-off builds already hold. Each configuration is one program build of every
/// definition in tests/cases (about 25 s on a quiet 2-core machine, much longer under load; six
/// of them cost CI two to four minutes).
#[test]
fn both_engines_agree_with_each_pass_off() {
    // The cache `tests/cli.rs` uses too, so the runtime's dependencies are built once.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wfc-cache");
    let configurations = ["--no-opt=all", "--no-opt=native-choice", "--no-opt=direct-paths"].map(str::to_owned);
    let mut failures = Vec::new();
    for flag in &configurations {
        let output = Command::new(env!("CARGO_BIN_EXE_wfc"))
            .arg("test")
            .arg(cases_dir())
            .args(["--engine", "both", flag])
            .env("WFC_CACHE_DIR", &cache)
            .env_remove("RUST_LOG")
            .output()
            .expect("the wfc binary runs");
        let out = String::from_utf8_lossy(&output.stdout);
        let last = out.lines().last().unwrap_or_default().to_owned();
        if !output.status.success() || !last.contains(" 0 failed") {
            let failed: Vec<&str> = out.lines().filter(|l| !l.ends_with(" ... ok")).take(40).collect();
            failures.push(format!(
                "wfc test --engine both {flag}: {last}\n{}\n{}",
                failed.join("\n"),
                String::from_utf8_lossy(&output.stderr).lines().rev().take(20).collect::<Vec<_>>().join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The compiled engine really was built with the passes asked for.
    let programs = std::fs::read_dir(cache.join("programs")).expect("the compiled engine's programs");
    let built_without_passes = programs.flatten().any(|p| {
        std::fs::read_to_string(p.path().join("src").join("main.rs"))
            .is_ok_and(|main| main.contains(r#"no_opt = ["all"], opt = [])"#))
    });
    assert!(built_without_passes, "no program was built with `no_opt = [\"all\"]`");
}

/// Definitions the history-changing passes do fire on: constant Pass chains, a Choice decided at
/// compile time (also inside a Parallel branch), and a chain whose folding must stop before a
/// path that fails at run time.
#[test]
fn passes_fire_and_keep_outputs() {
    let scratch = scratch();
    let task = "arn:aws:lambda:us-east-1:123456789012:function:Work";
    let chain = json!({
        "StartAt": "Init",
        "States": {
            "Init": {"Type": "Pass", "Result": {"mode": "fast", "n": 3}, "Next": "Shape"},
            "Shape": {"Type": "Pass", "Parameters": {"mode.$": "$.mode", "limit": 10, "n.$": "$.n"}, "Next": "Route"},
            "Route": {"Type": "Choice", "Choices": [
                {"And": [{"Variable": "$.mode", "StringEquals": "fast"}, {"Variable": "$.n", "NumericLessThan": 5}], "Next": "Fast"}
            ], "Default": "Slow"},
            "Fast": {"Type": "Task", "Resource": task, "ResultPath": "$.result", "Next": "Both"},
            "Slow": {"Type": "Pass", "Result": "slow", "ResultPath": "$.result", "Next": "Both"},
            "Both": {"Type": "Parallel", "Branches": [{
                "StartAt": "Seed",
                "States": {
                    "Seed": {"Type": "Pass", "Result": {"ok": true}, "Next": "Check"},
                    "Check": {"Type": "Choice", "Choices": [{"Variable": "$.ok", "BooleanEquals": true, "Next": "Yes"}], "Default": "No"},
                    "Yes": {"Type": "Pass", "Result": "yes", "End": true},
                    "No": {"Type": "Fail", "Error": "Wrong"}
                }
            }], "ResultPath": "$.branches", "End": true}
        }
    });
    let failing = json!({
        "StartAt": "Init",
        "States": {
            "Init": {"Type": "Pass", "Result": {"a": 1}, "Next": "Pick"},
            "Pick": {"Type": "Pass", "InputPath": "$.missing", "End": true}
        }
    });
    let mut failures = Vec::new();
    for (name, definition, expect_change) in [("chain", chain, true), ("failing", failing, false)] {
        let path = scratch.join(format!("{name}.asl.json"));
        std::fs::write(&path, definition.to_string()).expect("write definition");
        let mocks = scratch.join(format!("{name}.mocks.json"));
        std::fs::write(&mocks, json!({ "Fast": {"echo": true} }).to_string()).expect("write mocks");
        let run =
            Run { label: name.to_owned(), definition: path, args: vec!["--mocks".into(), mocks.display().to_string()] };
        let changed = check(&run, &mut failures);
        if expect_change {
            for pass in ["fold-pass", "thread-choice", "all"] {
                assert!(changed.contains(&pass), "{name}: {pass} did not change the history ({changed:?})");
            }
        }
        for pass in ["default", "paths", "unreachable", "fold-intrinsics", "direct-paths", "native-choice"] {
            assert!(!changed.contains(&pass), "{name}: {pass} changed the history");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_opt_rejects_unknown_passes() {
    let output = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .args(["run", "x.asl.json", "--no-opt", "fold"])
        .output()
        .expect("the wfc binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown optimizer pass `fold`"), "{stderr}");
}
