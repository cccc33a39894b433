//! What the live tests share: the local AWS emulators from PyPI (dex-local-runner, moto_server)
//! run as child processes on loopback, found in the virtual environment .ci/run installs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when the test ends, passed or not.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The virtual environment holding `bin/<program>`: `WFC_PY_VENV` (set by .ci/run), else the
/// workspace's `target/py-venv`.
pub(crate) fn venv_with(program: &str) -> Option<PathBuf> {
    [
        std::env::var_os("WFC_PY_VENV").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/py-venv")),
    ]
    .into_iter()
    .flatten()
    .find(|v| v.join("bin").join(program).exists())
}

/// A loopback port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `f` until it gives a value. A hang guard, not an assertion about time: `limit` is
/// generous because a loaded 2-core CI machine is slow.
pub(crate) fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
