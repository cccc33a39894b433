//! The crates a user depends on are publish-ready: `cargo package` packages all fourteen (the
//! library crates, the stores and the CLI) and each package carries its sources, the README and both
//! license texts, and nothing else (no tests, fixtures or snapshots, which need the workspace).
//!
//! Packaging verifies, as `cargo publish` would: each package is compiled from its packaged
//! sources alone, against the other packaged crates (`cargo package --workspace` puts them in a
//! local overlay of the registry, so `wfc-core`'s `wfc-ir = "=0.1.0"` resolves to the freshly
//! packaged `wfc-ir`; this needs the crates to be publishable: with `publish = false` cargo looks
//! for `wfc-ir` on crates.io and fails). That catches a source reading a file the package does
//! not carry (an `include_str!` or `#[path]` out of the crate), which listing the files cannot.
//! The verification build is the test's cost: it compiles the fourteen crates and their dependencies
//! once more in its own target directory (a packaged crate has no workspace profile, so nothing
//! of the workspace's build can be reused), without debug info, which it does not need.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The publishable crates: (package name, its target: `lib` or `bin`).
const CRATES: [(&str, &str); 14] = [
    ("wfc-ir", "lib"),
    ("wfc-core", "lib"),
    ("wfc-macro", "lib"),
    ("wfc-build", "lib"),
    ("wfc-runtime", "lib"),
    ("wfc-interp", "lib"),
    ("wfc-journal", "lib"),
    ("wfc-sqlite", "lib"),
    ("wfc-postgres", "lib"),
    ("wfc-stores", "lib"),
    ("wfc-worker", "lib"),
    ("wfc-aws", "lib"),
    ("wfc-serve", "lib"),
    ("wfc-cli", "bin"),
];

/// The workspace members that are not published.
const UNPUBLISHED: [&str; 8] = [
    "approval-durable",
    "order-macro",
    "order-build",
    "sw-events",
    "lambda-durable",
    "wfc-tests",
    "wfc-compile-tests",
    "wfc-bench",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("wfc-cli is inside the workspace").to_path_buf()
}

/// The file names inside a `.crate` (a gzipped tar), without the `NAME-VERSION/` prefix.
fn list(krate: &Path) -> Vec<String> {
    let out = Command::new("tar").arg("-tzf").arg(krate).output().expect("run tar");
    assert!(out.status.success(), "tar -tzf {}: {}", krate.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_once('/').map_or(l, |(_, rest)| rest).to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// One file of a `.crate`, as text.
fn read(krate: &Path, name: &str) -> String {
    let out = Command::new("tar").arg("-xzOf").arg(krate).arg(name).output().expect("run tar");
    assert!(out.status.success(), "tar -xzOf {} {name}: {}", krate.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_library_crates_and_the_cli_package() {
    let root = workspace_root();
    let target = std::env::temp_dir().join(format!("wfc-package-test-{}", std::process::id()));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["package", "--workspace", "--allow-dirty", "--offline", "--quiet"])
        // Only whether the packages compile matters here: no debug info and no incremental
        // state (the verification build is thrown away with its target directory).
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_INCREMENTAL", "0")
        .arg("--target-dir")
        .arg(&target);
    for name in UNPUBLISHED {
        cmd.args(["--exclude", name]);
    }
    let out = cmd.output().expect("run cargo package");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo package failed:\n{stderr}");

    let mut problems = Vec::new();
    for (name, kind) in CRATES {
        let version = env!("CARGO_PKG_VERSION");
        let krate = target.join("package").join(format!("{name}-{version}.crate"));
        if !krate.is_file() {
            problems.push(format!("{name}: no {}", krate.display()));
            continue;
        }
        let files = list(&krate);
        let entry = if kind == "bin" { "src/main.rs" } else { "src/lib.rs" };
        for needed in ["Cargo.toml", "Cargo.toml.orig", "README.md", "LICENSE-MIT", "LICENSE-APACHE", entry] {
            if !files.iter().any(|f| f == needed) {
                problems.push(format!("{name}: the package lacks {needed}"));
            }
        }
        let allowed = |f: &str| {
            f.starts_with("src/")
                || matches!(
                    f,
                    "Cargo.toml"
                        | "Cargo.toml.orig"
                        | "Cargo.lock"
                        | "README.md"
                        | "LICENSE-MIT"
                        | "LICENSE-APACHE"
                        | "build.rs"
                        | ".cargo_vcs_info.json"
                )
        };
        for f in files.iter().filter(|f| !allowed(f)) {
            problems.push(format!("{name}: the package carries {f}, which it must not"));
        }
        // The license files are symbolic links to the workspace root's: their text must be packaged.
        if !read(&krate, &format!("{name}-{version}/LICENSE-MIT")).contains("Permission is hereby granted") {
            problems.push(format!("{name}: LICENSE-MIT is not the MIT license text"));
        }
        // crates.io refuses a package over 10 MB.
        let size = std::fs::metadata(&krate).map(|m| m.len()).unwrap_or(0);
        if size > 10 * 1024 * 1024 {
            problems.push(format!("{name}: the package is {size} bytes, over crates.io's 10 MB"));
        }
        // Dependencies between the crates are by version (a registry has no paths).
        let manifest = read(&krate, &format!("{name}-{version}/Cargo.toml"));
        if manifest.contains("path = \"..") {
            problems.push(format!("{name}: the packaged Cargo.toml still has a path dependency"));
        }
        for field in ["description = ", "license = ", "repository = ", "readme = ", "keywords = ", "categories = "] {
            if !manifest.contains(field) {
                problems.push(format!("{name}: the packaged Cargo.toml has no {}", field.trim_end_matches(" = ")));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&target);
    assert!(problems.is_empty(), "packaging problems:\n{}", problems.join("\n"));
}
