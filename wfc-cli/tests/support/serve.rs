//! What the tests that drive `wfc serve` share (serve.rs, serve_more.rs, serve_ops.rs): the
//! PyPI virtual environment with boto3 (and the AWS CLI), and a server child process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::live::{Killed, venv_with};

/// The virtual environment with boto3 (and, with `cli`, the AWS CLI) that .ci/run installs.
/// Without it `test` is skipped with the reason printed, unless `WFC_REQUIRE_PY_SERVERS=1` (CI).
pub(crate) fn boto3_venv(test: &str, cli: bool) -> Option<PathBuf> {
    let found = venv_with(if cli { "aws" } else { "python" }).filter(|v| {
        Command::new(v.join("bin/python")).args(["-c", "import boto3"]).output().is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        let why = if cli {
            "boto3 and the AWS CLI are not installed (set WFC_PY_VENV to a venv with boto3 and awscli, as .ci/run does)"
        } else {
            "boto3 is not installed (set WFC_PY_VENV to a venv with boto3, as .ci/run does)"
        };
        assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "{why}");
        eprintln!("skipping {test}: {why}");
    }
    found
}

/// A running `wfc serve` on a loopback port of its own.
pub(crate) struct Server {
    pub(crate) child: Killed,
    /// `host:port`, from the server's `{"listening": ...}` line.
    pub(crate) addr: String,
}

impl Server {
    /// `wfc serve --listen 127.0.0.1:0 --store STORE ARGS...` with `envs` (and no credentials
    /// from the test's own environment), once it says where it listens.
    pub(crate) fn start(store: &str, args: &[&str], envs: &[(&str, &Path)]) -> Server {
        let mut cmd = super::wfc();
        cmd.env_remove("WFC_SERVE_CREDENTIALS").args(["serve", "--listen", "127.0.0.1:0", "--store", store]).args(args);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start wfc serve");
        let stdout = child.stdout.take().unwrap();
        let child = Killed(child);
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read the listening line");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a listening line: {line:?}: {e}"));
        Server { child, addr: v["listening"].as_str().unwrap().to_owned() }
    }

    /// The endpoint URL clients are given.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGTERM, as a deploy stops a server, and wait for it to exit: it releases the executions
    /// it holds, so the next server resumes them at once.
    pub(crate) fn stop(mut self) {
        let pid = self.child.0.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("run kill").success());
        let status = self.child.0.wait().expect("wait for wfc serve");
        assert!(status.success(), "wfc serve exited with {status} on SIGTERM");
    }

    /// SIGKILL: nothing is released, nothing flushed beyond what the store committed.
    pub(crate) fn kill9(mut self) {
        self.child.0.kill().expect("SIGKILL wfc serve");
        let status = self.child.0.wait().expect("reap wfc serve");
        assert!(!status.success(), "wfc serve was killed: {status}");
    }
}
