//! The generated code for every snapshot fixture (`wfc-core/tests/snapshots/fixtures`) compiles
//! and runs under `#![deny(warnings, missing_docs)]`, through the real macro (`tests/pass/cases/*.rs`).
//! The cases are modules of one trybuild crate (`tests/pass/generated.rs`): fourteen separate
//! crates cost about two minutes of builds and links in CI; one costs seconds.
//!
//! trybuild compiles each case in its own crate under `<target>/tests/trybuild/wfc-compile-tests/`, and
//! that crate is the `CARGO_MANIFEST_DIR` the macro resolves paths against. So, like askama's UI
//! tests, we link the fixture directories into it: `fixtures/` (the snapshot fixtures) and `ui/`
//! (this crate's UI fixtures), which keeps macro paths short, relative and identical in
//! `.stderr` files on every machine.

use std::path::Path;

mod trybuild_support;

use trybuild_support::link;

#[test]
fn generated_code_compiles_warning_free() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    link("fixtures", &manifest.join("../../wfc-core/tests/snapshots/fixtures"));
    link("ui", &manifest.join("ui"));

    // Every fixture has a pass case, and every case is a module of the one crate, so a new
    // fixture cannot skip the compile check.
    let generated = std::fs::read_to_string(manifest.join("pass/generated.rs")).expect("pass/generated.rs");
    for entry in std::fs::read_dir(manifest.join("pass/cases")).expect("pass/cases").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".rs") {
            let listed = format!("#[path = \"cases/{name}\"]\nmod {stem};");
            assert!(
                generated.contains(&listed),
                "pass/generated.rs does not compile pass/cases/{name}: add `{listed}` and call `{stem}::main()`"
            );
            assert!(
                generated.contains(&format!("    {stem}::main();")),
                "pass/generated.rs does not run `{stem}::main()`"
            );
        }
    }
    let fixtures = std::fs::read_dir(manifest.join("../../wfc-core/tests/snapshots/fixtures")).expect("fixtures");
    for entry in fixtures.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".asl.json") {
            let case = manifest.join("pass/cases").join(format!("{stem}.rs"));
            assert!(case.exists(), "fixture {name} has no pass case {}", case.display());
        }
    }

    let t = trybuild::TestCases::new();
    t.pass("pass/generated.rs");
}
