//! Compile-fail tests of `include_workflow!`: one invalid definition (or bad macro input) per case
//! in `tests/ui/*.rs`, each with its expected `.stderr`. The definition errors show the fixture's
//! `file:line:col` and an excerpt in the message, with rustc's caret on the path literal.
//! Re-bless with `TRYBUILD=overwrite` only after reading the new `.stderr` files.
//!
//! trybuild compiles each case in a crate under `<target>/tests/trybuild/wfc-tests/`, which is
//! the `CARGO_MANIFEST_DIR` the macro resolves paths against; `ui/` is linked into it so the
//! paths in the cases (`ui/fixtures/…`) resolve there exactly as they do in this crate.

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
fn ui() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    link("ui", &manifest.join("ui"));
    link("fixtures", &manifest.join("../wfc-core/tests/snapshots/fixtures"));

    // Every invalid fixture has a case (`two_tasks` is the valid one the API cases use).
    for entry in std::fs::read_dir(manifest.join("ui/fixtures")).expect("ui fixtures").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".asl.json").filter(|s| *s != "two_tasks") {
            assert!(manifest.join("ui").join(format!("{stem}.rs")).exists(), "fixture {name} has no UI case");
        }
    }

    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
