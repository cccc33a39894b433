//! The README's shell blocks, run as written: every ```` ```sh ```` block of README.md is extracted
//! from the README itself (so the two cannot drift) and run with bash from the repository root,
//! `set -euo pipefail`, on the `wfc` binary under test.
//!
//! What the harness stands in for, each said on stderr when it happens:
//! - `wfc` is this build's binary (first on PATH), and `cargo run -p wfc-cli -- ARGS` runs it too;
//! - `cargo install --path wfc-cli` is satisfied by that binary;
//! - `cargo test ...` is not run again from inside the test suite (the workspace's `cargo test`
//!   runs those tests itself); other cargo commands (`cargo run -p approval-durable`) run as written.
//!
//! Markers in README.md, an HTML comment on the line before a block (visible in the source, not
//! in the rendered page):
//! - `<!-- readme-test: skip (REASON) -->`: not run; the test prints the block's line and the reason.
//!   Only blocks that need AWS itself may carry it (`skip_reasons_only_name_aws` checks this).
//! - `<!-- readme-test: continues -->`: runs in the same shell as the block before it (a session
//!   that the README continues across paragraphs).
//!
//! Background jobs a block starts (`... &`) are killed when its shell exits. The blocks must
//! leave the repository as they found it: `git status` is compared before and after.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

/// One runnable unit: one block, or several joined by `continues`.
#[derive(Debug)]
struct Script {
    /// The README line of the (first) block's opening fence.
    line: usize,
    text: String,
    skip: Option<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// Extracts the `sh` blocks and their markers.
fn scripts(readme: &str) -> Vec<Script> {
    let mut out: Vec<Script> = Vec::new();
    let mut lines = readme.lines().enumerate().peekable();
    let mut marker: Option<String> = None;
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim();
        if let Some(m) = trimmed.strip_prefix("<!-- readme-test:").and_then(|m| m.strip_suffix("-->")) {
            marker = Some(m.trim().to_owned());
            continue;
        }
        if trimmed != "```sh" {
            if !trimmed.is_empty() {
                marker = None;
            }
            continue;
        }
        let mut text = String::new();
        for (_, body) in lines.by_ref() {
            if body.trim() == "```" {
                break;
            }
            text.push_str(body);
            text.push('\n');
        }
        match marker.take() {
            Some(m) if m == "continues" => {
                let last = out.last_mut().expect("a `continues` block follows another block");
                last.text.push_str(&text);
            }
            Some(m) => {
                let reason = m
                    .strip_prefix("skip")
                    .map(|r| r.trim().trim_start_matches('(').trim_end_matches(')').to_owned())
                    .unwrap_or_else(|| panic!("README.md:{}: unknown readme-test marker {m:?}", i + 1));
                out.push(Script { line: i + 1, text, skip: Some(reason) });
            }
            None => out.push(Script { line: i + 1, text, skip: None }),
        }
    }
    out
}

/// What every block runs after: the stand-ins described in the module docs.
const PRELUDE: &str = r#"set -euo pipefail
# Background jobs and everything they started (a `cargo run ... &` is a subshell running wfc).
killtree() { local c; for c in $(pgrep -P "$1"); do killtree "$c"; done; kill "$1" 2>/dev/null || true; }
trap 'for p in $(jobs -p); do killtree "$p"; done' EXIT
cargo() {
    case "$*" in
        "install --path wfc-cli"*) echo "readme-test: \`cargo $*\` stands for the wfc under test ($(command -v wfc))" >&2 ;;
        "run -p wfc-cli -- "*) shift 4; wfc "$@" ;;
        "test "*) echo "readme-test: not running \`cargo $*\` inside the test suite (cargo test --workspace runs it)" >&2 ;;
        *) command cargo "$@" ;;
    esac
}
"#;

/// `git status` of the work tree (tracked changes and untracked files that are not ignored), or
/// `None` outside a git checkout.
fn git_status(root: &Path) -> Option<String> {
    let out =
        Command::new("git").args(["status", "--porcelain", "--untracked-files=all"]).current_dir(root).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Files the blocks left in the repository root that git ignores (a `.wfc-cache/`, a stray
/// database); `target/` is the build's own.
fn ignored_in_root(root: &Path) -> Vec<String> {
    let Ok(out) = Command::new("git")
        .args(["status", "--porcelain", "--ignored", "--untracked-files=normal"])
        .current_dir(root)
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("!! "))
        .filter(|p| !p.starts_with("target/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_readme_shell_block_runs_as_written() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let scripts = scripts(&readme);
    assert!(scripts.len() >= 4, "README.md has its shell blocks: {scripts:#?}");

    // `wfc` on PATH is the binary under test.
    let bin = support::scratch("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_wfc"), bin.join("wfc")).expect("link wfc");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wfc-cache");

    let before = git_status(&root);
    let ignored_before = ignored_in_root(&root);
    let mut failures = Vec::new();
    for script in &scripts {
        if let Some(reason) = &script.skip {
            eprintln!("readme-test: SKIPPED the block at README.md:{} ({reason})", script.line);
            continue;
        }
        eprintln!("readme-test: running the block at README.md:{}", script.line);
        // A bound, so a block that hangs (a server that never comes up) fails instead.
        let out = Command::new("timeout")
            .args(["600", "bash", "-c"])
            .arg(format!("{PRELUDE}{}", script.text))
            .current_dir(&root)
            .env("PATH", &path)
            .env("WFC_CACHE_DIR", &cache)
            .env_remove("RUST_LOG")
            .output()
            .expect("bash runs");
        if !out.status.success() {
            failures.push(format!(
                "the block at README.md:{} failed ({}):\n{}\n--- stdout\n{}\n--- stderr\n{}",
                script.line,
                out.status,
                script.text,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));

    match before {
        Some(before) => {
            assert_eq!(
                git_status(&root).as_deref(),
                Some(before.as_str()),
                "the README's commands changed the work tree"
            );
            let left: Vec<String> =
                ignored_in_root(&root).into_iter().filter(|p| !ignored_before.contains(p)).collect();
            assert!(left.is_empty(), "the README's commands left files in the repository: {left:?}");
        }
        None => eprintln!("readme-test: not a git checkout; the work-tree check is skipped"),
    }
}

#[test]
fn skip_reasons_only_name_aws() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    for script in scripts(&readme) {
        if let Some(reason) = script.skip {
            assert!(
                reason.contains("AWS"),
                "README.md:{}: a block may be skipped only when it needs AWS itself, and the reason says so: {reason:?}",
                script.line
            );
        }
    }
}

#[test]
fn the_extractor_reads_markers() {
    let text = "x\n<!-- readme-test: skip (needs AWS itself) -->\n```sh\na\n```\n\n```sh\nb\n```\n<!-- readme-test: continues -->\n```sh\nc\n```\n";
    let s = scripts(text);
    assert_eq!(s.len(), 2, "{s:#?}");
    assert_eq!(s[0].skip.as_deref(), Some("needs AWS itself"));
    assert_eq!(s[1].text, "b\nc\n");
    assert!(s[1].skip.is_none());
}
