//! CI smoke run of the benchmark: `wfc-bench --quick --json --runs 1` must finish and report
//! every workload on every engine (a figure, or a skip with the compiler's reason), and the
//! compile-time figures. Nothing is asserted about times: CI machines vary too much.

use std::process::Command;

use serde_json::Value;

#[test]
fn quick_run_reports_every_workload_and_engine() {
    let output = Command::new(env!("CARGO_BIN_EXE_wfc-bench"))
        .args(["--quick", "--json", "--runs", "1"])
        .output()
        .expect("the benchmark binary runs");
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    let rows = doc["workloads"].as_array().expect("a workloads array");
    let names: std::collections::BTreeSet<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["count-loop-1000", "document-100kb-20", "map-10000-c0", "map-10000-c10", "parallel-10", "task-chain-100"]
    );
    for row in rows {
        let engine = row["engine"].as_str().unwrap_or_default();
        assert!(["handwritten", "compiled", "interp"].contains(&engine), "{row}");
        match row["transitions_per_sec"].as_f64() {
            Some(rate) => {
                assert!(rate > 0.0, "{row}");
                assert!(row["ratio_to_handwritten"].as_f64().is_some(), "{row}");
                assert!(row["allocs_per_transition"].as_f64().is_some(), "{row}");
                assert!(row["peak_bytes"].as_u64().is_some(), "{row}");
            }
            // A skipped row says why; the hand-written floor never skips.
            None => {
                assert_ne!(engine, "handwritten", "{row}");
                assert!(row["skipped"].as_str().is_some_and(|s| s.starts_with("skipped")), "{row}");
            }
        }
    }
    // Each engine runs at both history levels; the floor has none.
    for engine in ["compiled", "interp"] {
        for level in ["full", "express"] {
            let count = rows.iter().filter(|r| r["engine"] == engine && r["history"] == level).count();
            assert_eq!(count, 6, "{engine} at {level}");
        }
    }
    assert_eq!(doc["compile"]["states"], 200);
    assert!(doc["compile"]["lines_per_state"].as_f64().is_some_and(|l| l > 0.0), "{}", doc["compile"]);
}

/// `--floors` adds the Task chain's five floors (and nothing to the other workloads); each did
/// the chain's work (the benchmark checks its output against the hand-written code's) and has
/// its figures.
#[test]
fn floors_run_the_task_chain_work() {
    let output = Command::new(env!("CARGO_BIN_EXE_wfc-bench"))
        .args(["--quick", "--json", "--runs", "1", "--floors", "--only", "task-chain-100", "--only", "parallel-10"])
        .output()
        .expect("the benchmark binary runs");
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    let rows = doc["workloads"].as_array().expect("a workloads array");
    let floors: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r["engine"].as_str().is_some_and(|e| e.starts_with("floor-")))
        .map(|r| (r["name"].as_str().unwrap_or_default(), r["engine"].as_str().unwrap_or_default()))
        .collect();
    let expected: Vec<(&str, &str)> = ["floor-async", "floor-exec", "floor-layers", "floor-slots", "floor-visit"]
        .into_iter()
        .map(|engine| ("task-chain-100", engine))
        .collect();
    assert_eq!(floors, expected);
    for row in rows.iter().filter(|r| r["engine"].as_str().is_some_and(|e| e.starts_with("floor-"))) {
        assert!(row["transitions_per_sec"].as_f64().is_some_and(|rate| rate > 0.0), "{row}");
        assert!(row["ratio_to_handwritten"].as_f64().is_some(), "{row}");
        assert_eq!(row["history"], "express", "{row}");
    }
}

#[test]
fn rejects_unknown_arguments() {
    let output = Command::new(env!("CARGO_BIN_EXE_wfc-bench")).arg("--fast").output().expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let output = Command::new(env!("CARGO_BIN_EXE_wfc-bench")).args(["--only", "nope"]).output().expect("runs");
    assert_eq!(output.status.code(), Some(2));
}

/// `--durable` with two executions per row: every row is reported with its figures, the
/// PostgreSQL rows included (the server is started by the benchmark; CI requires it with
/// `WFC_REQUIRE_POSTGRES=1`). Nothing about speed is asserted.
#[test]
fn durable_run_reports_every_store_and_concurrency() {
    let output = Command::new(env!("CARGO_BIN_EXE_wfc-bench"))
        .args(["--durable", "--json", "--executions", "2"])
        .output()
        .expect("the benchmark binary runs");
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    let rows = doc["durable"].as_array().expect("a durable array");
    let mut configs: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {} c{} w{}",
                r["store"].as_str().unwrap(),
                r["durability"].as_str().unwrap(),
                r["concurrency"],
                r["workers"]
            )
        })
        .collect();
    let postgres_ran = configs.iter().any(|c| c.starts_with("postgres"));
    if !postgres_ran {
        assert!(std::env::var("WFC_REQUIRE_POSTGRES").is_err(), "PostgreSQL rows are missing");
        eprintln!("SKIPPED: the PostgreSQL rows (no PostgreSQL here)");
    }
    configs.retain(|c| !c.starts_with("postgres") || postgres_ran);
    let mut expected: Vec<String> = Vec::new();
    for durability in ["full", "normal"] {
        for c in [1, 8, 32, 128] {
            expected.push(format!("sqlite {durability} c{c} w1"));
        }
    }
    if postgres_ran {
        for (w, cs) in [(1, &[1, 8, 32, 128][..]), (4, &[8, 32, 128][..])] {
            for c in cs {
                expected.push(format!("postgres full c{c} w{w}"));
            }
        }
    }
    assert_eq!(configs, expected);
    for row in rows {
        for field in ["steps_per_sec", "commits_per_sec", "fsync_per_sec", "p50_ms", "p99_ms"] {
            assert!(row[field].as_f64().is_some_and(|x| x > 0.0), "{field} in {row}");
        }
        assert_eq!(row["executions"], 2, "{row}");
    }
}
