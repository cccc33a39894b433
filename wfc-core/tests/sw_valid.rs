//! The Serverless Workflow corpus (the draft's worked examples and wfc's feature workflows in
//! tests/cases/sw/definitions): every file loads, JSON and YAML twins lower to the same IR, and
//! every one generates a module that parses.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wfc_core::{Settings, Source};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/sw/definitions")
}

fn files() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(corpus())
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().contains(".sw."))
        .map(|p| {
            (
                p.file_name().unwrap_or_default().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).expect("read"),
            )
        })
        .collect();
    out.sort();
    out
}

fn settings(all: &[(String, String)], except: &str) -> Settings {
    let mut s = Settings::new();
    for (p, t) in all.iter().filter(|(p, _)| p != except) {
        s.sw_workflow(p.clone(), t.clone());
    }
    // Schema files are named relative to the definition (paths here are the corpus's file names).
    s.file_reader(wfc_core::FileReader::new(|p| {
        std::fs::read_to_string(corpus().join(p)).map_err(|e| e.to_string())
    }));
    s
}

/// The IR as JSON without source locations (which differ between JSON and YAML).
fn ir_without_locations(w: &wfc_core::ir::Workflow) -> Value {
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
    let mut v = serde_json::to_value(w).expect("serializable");
    strip(&mut v);
    v
}

#[test]
fn every_definition_loads_and_generates_code() {
    let all = files();
    assert!(all.len() >= 40, "the corpus shrank: {}", all.len());
    let mut failures = Vec::new();
    for (path, text) in &all {
        match wfc_core::compile(Source { path, text }, &settings(&all, path)) {
            Ok(c) => {
                if !c.warnings.items.is_empty() {
                    failures.push(format!("{path}: unexpected warnings:\n{}", c.warnings.render(false)));
                }
                if let Err(e) = syn::parse2::<syn::File>(c.tokens) {
                    failures.push(format!("{path}: generated code does not parse: {e}"));
                }
            }
            Err(d) => failures.push(format!("{path}:\n{}", d.render(false))),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_and_yaml_twins_lower_to_the_same_ir() {
    let all = files();
    let mut pairs = 0;
    for (path, text) in all.iter().filter(|(p, _)| p.ends_with(".sw.json")) {
        let yaml_path = path.replace(".sw.json", ".sw.yaml");
        let Some((_, yaml)) = all.iter().find(|(p, _)| *p == yaml_path) else { continue };
        let a = wfc_core::load_with(Source { path, text }, &settings(&all, path)).expect("json loads");
        let b = wfc_core::load_with(Source { path: &yaml_path, text: yaml }, &settings(&all, &yaml_path))
            .expect("yaml loads");
        assert_eq!(
            ir_without_locations(&a.workflow),
            ir_without_locations(&b.workflow),
            "{path} and {yaml_path} differ"
        );
        pairs += 1;
    }
    assert!(pairs >= 15, "only {pairs} JSON/YAML pairs");
}

#[test]
fn every_sw_function_is_a_handler_method() {
    let all = files();
    let (path, text) = all.iter().find(|(p, _)| p == "jobmonitoring.sw.json").expect("example");
    let loaded = wfc_core::load_with(Source { path, text }, &settings(&all, path)).expect("loads");
    let methods: Vec<String> =
        wfc_core::codegen::handler_methods(&loaded.workflow).into_iter().map(|(_, m, _)| m).collect();
    assert_eq!(methods, ["check_job_status", "report_job_failed", "report_job_suceeded", "submit_job"]);
}
