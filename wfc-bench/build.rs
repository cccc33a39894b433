//! Probes which benchmark definitions the compiler accepts, so `main.rs` includes only those with
//! `include_workflow!` (behind `cfg(wfc_bench_<name>)`) and reports the others as skipped with
//! the compiler's own reason. A definition that needs a feature still being implemented (the
//! Map state, intrinsic functions) must not break the benchmark build, and must never be faked.

use std::fmt::Write as _;
use std::path::Path;

/// The workloads' definitions, by module name (the file stem).
const DEFINITIONS: [&str; 6] = ["count_loop", "task_chain", "parallel10", "map_c0", "map_c10", "big_document"];

fn main() {
    let out_dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let mut probe =
        String::from("/// Definitions the compiler rejected when this binary was built, with its reason.\n");
    probe.push_str("pub const REJECTED: &[(&str, &str)] = &[\n");
    for name in DEFINITIONS {
        println!("cargo::rustc-check-cfg=cfg(wfc_bench_{name})");
        let path = format!("workflows/{name}.asl.json");
        println!("cargo::rerun-if-changed={path}");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(probe, "    ({name:?}, {:?}),", format!("cannot read {path}: {e}"));
                continue;
            }
        };
        let source = wfc_core::Source { path: &path, text: &text };
        let reason = match wfc_core::compile(source, &wfc_core::Settings::new()) {
            Err(diags) => Some(first_message(&diags)),
            // Codegen reports a state kind it cannot generate yet as a compile_error! in the module.
            Ok(compiled) if compiled.tokens.to_string().contains("compile_error") => {
                Some("codegen does not support this definition yet".to_owned())
            }
            Ok(_) => None,
        };
        match reason {
            None => println!("cargo::rustc-cfg=wfc_bench_{name}"),
            Some(reason) => {
                let _ = writeln!(probe, "    ({name:?}, {reason:?}),");
            }
        }
    }
    probe.push_str("];\n");
    let _ = std::fs::write(Path::new(&out_dir).join("probe.rs"), probe);
}

fn first_message(diags: &wfc_core::Diagnostics) -> String {
    let error = diags.first_error().or(diags.items.first());
    error.map_or_else(|| "rejected without diagnostics".to_owned(), |d| format!("{}: {}", d.code, d.message))
}
