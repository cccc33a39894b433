//! The AWS-recorded corpus (../shared/conformance/asl-aws, relative to the workspace root) on
//! both engines, against committed baselines: a case (its file, `category/file`) listed in `asl-aws-baseline/result-passing.txt`
//! must keep giving AWS's result, and one in `trace-passing.txt` AWS's sequence of history event
//! types. Cases that pass without being listed are printed, so the baselines can be extended.
//!
//! CI has the corpus: there (`CI=true`) a missing folder fails the test; elsewhere it is skipped
//! with a loud message.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..").join("shared").join("conformance").join("asl-aws")
}

fn baseline(name: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("asl-aws-baseline").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

#[test]
fn the_aws_recorded_corpus_keeps_its_baseline_on_both_engines() {
    let dir = corpus();
    if !dir.is_dir() {
        let msg = format!("the AWS-recorded corpus is missing: {} does not exist", dir.display());
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg} (CI must have it)");
        }
        eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
        return;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let report_path = tmp.join("asl-aws-report.json");
    let o = Command::new(env!("CARGO_BIN_EXE_wfc"))
        // The same cache as the other CLI tests: the runtime is compiled once for all of them.
        .env("WFC_CACHE_DIR", tmp.join("wfc-cache"))
        .env_remove("RUST_LOG")
        .args(["test", "--engine", "both", "--json"])
        .arg(&report_path)
        .arg(&dir)
        .output()
        .expect("the wfc binary runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Exit 1 is "some case fails"; anything else is the runner itself failing.
    assert!(matches!(o.status.code(), Some(0 | 1)), "wfc test failed to run: {stderr}\n{stdout}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report_path).expect("the report is written"))
        .expect("the report is JSON");
    let cases = report["cases"].as_array().expect("the report lists cases");
    // Cases are named by their file (`category/file`, without `.json`): the corpus's own `name`s
    // are not unique (852 files, 836 names), so a name could hide a regression behind a twin.
    let key = |c: &Value| -> Option<String> {
        let file = Path::new(c["file"].as_str()?);
        let rel = file.strip_prefix(&dir).ok()?;
        Some(rel.with_extension("").to_string_lossy().into_owned())
    };
    let names =
        |field: &str| -> BTreeSet<String> { cases.iter().filter(|c| c[field] == "passed").filter_map(key).collect() };
    assert_eq!(
        cases.iter().filter(|c| c["status"] != "skipped").filter_map(key).collect::<BTreeSet<_>>().len(),
        cases.iter().filter(|c| c["status"] != "skipped").count(),
        "every runnable case has a file of its own"
    );
    let (result_ok, trace_ok) = (names("result"), names("trace"));

    // Skipped cases are skipped for their services, never counted as passes.
    for c in cases.iter().filter(|c| c["status"] == "skipped") {
        assert!(c["reason"].as_str().is_some_and(|r| r.starts_with("needs AWS services")), "{c}");
        assert!(c.get("result").is_none(), "a skipped case has no result: {c}");
    }
    let recorded = &report["recorded"];
    assert!(recorded["ran"].as_u64().unwrap_or(0) >= 700, "the runnable cases ran: {recorded}");
    assert!(recorded["skipped"].as_u64().unwrap_or(0) >= 100, "the services cases are skipped: {recorded}");

    let mut problems = Vec::new();
    for (file, passing) in [("result-passing.txt", &result_ok), ("trace-passing.txt", &trace_ok)] {
        let base = baseline(file);
        let lost: Vec<&String> = base.difference(passing).collect();
        let gained: Vec<&String> = passing.difference(&base).collect();
        if !gained.is_empty() {
            eprintln!("{} cases pass but are not in {file} (add them):", gained.len());
            for g in &gained {
                eprintln!("{g}");
            }
        }
        if !lost.is_empty() {
            problems.push(format!("cases in {file} no longer pass: {lost:?}"));
        }
    }
    assert!(problems.is_empty(), "{}\n{stdout}", problems.join("\n"));
}
