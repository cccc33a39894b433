//! The Serverless Workflow examples of the v0.5 era (../shared/conformance/sw-seed-examples: 17
//! workflows, each as `.json` and `.yml`, as the reference Java SDK 1.0.0 holds them) through
//! `wfc check`: the 30 valid files pass, the 4 wrong ones (creditcheck: a `refName` that names
//! no function; foreachstatewithactions: no start state) fail with located errors, and each
//! pair's JSON and YAML lower to the same IR.
//!
//! The folder is shared material beside the repository, not part of it: missing, this test
//! fails in CI (`CI=true`) and otherwise says loudly that it checked nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn seed_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/sw-seed-examples");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").ok().as_deref() != Some("true"),
        "{} is missing: the SW seed examples must be there in CI",
        dir.display()
    );
    // Written to the stderr handle, not with `eprintln!`, which the test harness captures.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("SKIPPED (not a pass): {} is missing, the SW seed examples were not checked\n", dir.display())
            .as_bytes(),
    );
    None
}

/// The wrong files and the one error each must have: (file stem, code, text on the reported line).
const WRONG: &[(&str, &str, &str)] =
    &[("creditcheck", "WFC2010", "callCreditCheckMicroservice"), ("foreachstatewithactions", "WFC2021", "states")];

fn check(path: &Path) -> (bool, Vec<Value>) {
    let out = Command::new(env!("CARGO_BIN_EXE_wfc"))
        .args(["check", "--format", "json"])
        .arg(path)
        .env_remove("WFC_SUBFLOW_PATH")
        .output()
        .expect("wfc runs");
    let diags = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    (out.status.success(), diags)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the folder is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "yml")))
        .collect();
    files.sort();
    files
}

fn stem(p: &Path) -> String {
    p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned()
}

#[test]
fn wfc_check_passes_the_30_valid_seed_files_and_locates_the_errors_of_the_4_wrong_ones() {
    let Some(dir) = seed_dir() else { return };
    let files = files(&dir);
    assert_eq!(files.len(), 34, "17 workflows, each as JSON and YAML");
    let mut valid = 0;
    for f in &files {
        let (ok, diags) = check(f);
        let errors: Vec<&Value> = diags.iter().filter(|d| d["severity"] == "error").collect();
        match WRONG.iter().find(|(s, _, _)| *s == stem(f)) {
            None => {
                assert!(ok && errors.is_empty(), "{} must pass `wfc check`: {errors:#?}", f.display());
                valid += 1;
            }
            Some((_, code, on_line)) => {
                assert!(!ok, "{} must fail `wfc check`", f.display());
                assert_eq!(errors.len(), 1, "{}: exactly the one error: {errors:#?}", f.display());
                let e = errors[0];
                assert_eq!(e["code"], *code, "{}: {e}", f.display());
                let text = std::fs::read_to_string(f).expect("readable");
                let line = e["line"].as_u64().expect("a line") as usize;
                let shown = text.lines().nth(line - 1).unwrap_or_default();
                assert!(shown.contains(on_line), "{}:{line} is `{shown}`, not the line of `{on_line}`", f.display());
                assert!(e["column"].as_u64().is_some_and(|c| c >= 1), "a column: {e}");
            }
        }
    }
    assert_eq!(valid, 30);
}

/// The IR of a definition as JSON, without source positions (they differ between JSON and YAML).
fn ir(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("readable");
    let shown = path.display().to_string();
    let loaded = wfc_core::load(wfc_core::Source { path: &shown, text: &text });
    let workflow = loaded.unwrap_or_else(|d| panic!("{} loads: {d}", path.display())).workflow;
    let mut v = serde_json::to_value(&workflow).expect("serializable");
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("location");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn each_seed_pairs_json_and_yaml_give_the_same_ir() {
    let Some(dir) = seed_dir() else { return };
    let mut pairs = 0;
    for json in files(&dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
        if WRONG.iter().any(|(s, _, _)| *s == stem(&json)) {
            continue;
        }
        let yml = json.with_extension("yml");
        assert_eq!(ir(&json), ir(&yml), "{} and its .yml lower differently", json.display());
        pairs += 1;
    }
    assert_eq!(pairs, 15);
}
