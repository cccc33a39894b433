//! Compile-fail tests of `include_workflow!`: one invalid definition (or bad macro input) per case
//! in `tests/ui/*.rs`, each with its expected `.stderr`. The definition errors show the fixture's
//! `file:line:col` and an excerpt in the message, with rustc's caret on the path literal. ASL
//! fixtures are `*.asl.json`; Serverless Workflow ones (`sw_*`) come in JSON and YAML.
//! Re-bless with `TRYBUILD=overwrite` only after reading the new `.stderr` files.
//!
//! trybuild compiles each case in a crate under `<target>/tests/trybuild/wfc-compile-tests/`, which is
//! the `CARGO_MANIFEST_DIR` the macro resolves paths against; `ui/` is linked into it so the
//! paths in the cases (`ui/fixtures/…`) resolve there exactly as they do in this crate.

use std::path::Path;

mod trybuild_support;

use trybuild_support::link;

#[test]
fn ui() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    link("ui", &manifest.join("ui"));
    link("fixtures", &manifest.join("../../wfc-core/tests/snapshots/fixtures"));

    // Every invalid fixture has a case (`two_tasks` is the valid one the API cases use).
    for entry in std::fs::read_dir(manifest.join("ui/fixtures")).expect("ui fixtures").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".asl.json").filter(|s| *s != "two_tasks") {
            assert!(manifest.join("ui").join(format!("{stem}.rs")).exists(), "fixture {name} has no UI case");
        }
        // Serverless Workflow fixtures come in both forms: `X.sw.json` → `X_json.rs`, `X.sw.yaml` → `X_yaml.rs`.
        for (suffix, form) in [(".sw.json", "json"), (".sw.yaml", "yaml")] {
            if let Some(stem) = name.strip_suffix(suffix) {
                let case = manifest.join("ui").join(format!("{stem}_{form}.rs"));
                assert!(case.exists(), "fixture {name} has no UI case");
            }
        }
    }

    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
