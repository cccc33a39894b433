//! Shared by the trybuild tests (`ui.rs`, `codegen_pass.rs`): trybuild compiles each case in a
//! crate under `<target>/tests/trybuild/wfc-compile-tests/`, which is the `CARGO_MANIFEST_DIR` the macro
//! resolves definition paths against, so the fixture directories are linked into it.

use std::path::{Path, PathBuf};

/// `<target>/tests/trybuild/wfc-compile-tests`. The target dir is found from this test binary's path
/// (`<target>/[<triple>/]<profile>/deps/…`): the nearest ancestor holding Cargo's `CACHEDIR.TAG`.
fn trybuild_project_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .or_else(|| exe.ancestors().nth(3))
        .expect("a test binary lives in <target>/<profile>/deps");
    target.join("tests").join("trybuild").join("wfc-compile-tests")
}

/// Makes `<trybuild project>/<name>` point at `dir` (a symlink; a copy where symlinks are unavailable).
pub(crate) fn link(name: &str, dir: &Path) {
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
