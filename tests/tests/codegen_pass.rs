//! The generated code for every snapshot fixture (`wfc-core/tests/snapshots/fixtures`) compiles
//! and runs under `#![deny(warnings, missing_docs)]`, through the real macro (`tests/pass/*.rs`).
//!
//! trybuild compiles each case in its own crate under `<target>/tests/trybuild/wfc-tests/`, and
//! that crate is the `CARGO_MANIFEST_DIR` the macro resolves paths against. So, like askama's UI
//! tests, we link the fixture directories into it: `fixtures/` (the snapshot fixtures) and `ui/`
//! (this crate's UI fixtures), which keeps macro paths short, relative and identical in
//! `.stderr` files on every machine.

use std::path::{Path, PathBuf};

/// `<target>/tests/trybuild/wfc-tests`. The target dir is found from this test binary's path
/// (`<target>/[<triple>/]<profile>/deps/…`): the nearest ancestor holding Cargo's `CACHEDIR.TAG`.
fn trybuild_project_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .or_else(|| exe.ancestors().nth(3))
        .expect("a test binary lives in <target>/<profile>/deps");
    target.join("tests").join("trybuild").join("wfc-tests")
}

/// Makes `<trybuild project>/<name>` point at `dir` (a symlink; a copy where symlinks are unavailable).
fn link(name: &str, dir: &Path) {
    let project = trybuild_project_dir();
    std::fs::create_dir_all(&project).expect("create the trybuild project dir");
    let link = project.join(name);
    if std::fs::symlink_metadata(&link).is_ok() {
        let _ = std::fs::remove_file(&link).or_else(|_| std::fs::remove_dir_all(&link));
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir, &link).expect("symlink fixtures into the trybuild project");
    #[cfg(not(unix))]
    copy_dir(dir, &link);
}

#[cfg(not(unix))]
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy fixture");
        }
    }
}

#[test]
fn generated_code_compiles_warning_free() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    link("fixtures", &manifest.join("../wfc-core/tests/snapshots/fixtures"));
    link("ui", &manifest.join("ui"));

    // Every fixture has a pass case, so a new fixture cannot skip the compile check.
    let fixtures = std::fs::read_dir(manifest.join("../wfc-core/tests/snapshots/fixtures")).expect("fixtures");
    for entry in fixtures.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".asl.json") {
            let case = manifest.join("pass").join(format!("{stem}.rs"));
            assert!(case.exists(), "fixture {name} has no pass case {}", case.display());
        }
    }

    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
}
