//! A throw-away PostgreSQL server for tests: `initdb` into a temporary directory, `postgres` on a
//! free loopback port, stopped and deleted on drop. The server refuses to run as root, so as root
//! it runs as the `postgres` user (created if missing). Without the binaries the tests that need
//! it skip with a printed reason, unless `WFC_REQUIRE_POSTGRES=1` (CI), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct TempPostgres {
    pub(crate) url: String,
    dir: PathBuf,
    bin: PathBuf,
    user: Option<String>,
}

fn find_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("WFC_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").exists() {
            return Some(dir);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn user_ids(user: &str) -> Option<(u32, u32)> {
    let uid = Command::new("id").args(["-u", user]).output().ok().filter(|o| o.status.success())?;
    let gid = Command::new("id").args(["-g", user]).output().ok().filter(|o| o.status.success())?;
    Some((
        String::from_utf8_lossy(&uid.stdout).trim().parse().ok()?,
        String::from_utf8_lossy(&gid.stdout).trim().parse().ok()?,
    ))
}

fn skip_or_fail(reason: &str) -> Option<TempPostgres> {
    if std::env::var("WFC_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
        panic!("PostgreSQL is required (WFC_REQUIRE_POSTGRES=1) but {reason}");
    }
    eprintln!("SKIPPED: {reason} (install PostgreSQL, or set WFC_PG_BIN to its bin directory)");
    None
}

impl TempPostgres {
    /// Starts a server, or returns `None` (after printing why) when PostgreSQL is not installed.
    pub(crate) fn start(name: &str) -> Option<TempPostgres> {
        TempPostgres::start_with(name, |_, _| String::new())
    }

    /// [`TempPostgres::start`] with `configure` run on the new data directory before the server
    /// starts (as the server's user owns it): it may write files there and returns more
    /// server options (`-c name=value ...`).
    pub(crate) fn start_with(
        name: &str,
        configure: impl FnOnce(&TempPostgres, &Path) -> String,
    ) -> Option<TempPostgres> {
        let Some(bin) = find_bin() else {
            return skip_or_fail("no PostgreSQL binaries (initdb) were found");
        };
        let dir = std::env::temp_dir().join(format!("wfc-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the server directory");
        let user = if is_root() {
            if user_ids("postgres").is_none() {
                let _ = Command::new("useradd").args(["--system", "--no-create-home", "postgres"]).status();
            }
            let (uid, gid) = user_ids("postgres").expect("the postgres user exists");
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown the server directory");
            Some("postgres".to_owned())
        } else {
            None
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let server = TempPostgres { url: format!("postgres://wfc@127.0.0.1:{port}/postgres"), dir, bin, user };
        let data = server.dir.join("data");
        server.run_as(
            "initdb",
            &["-D", &data.display().to_string(), "-U", "wfc", "--auth=trust", "-E", "UTF8", "--no-sync"],
        );
        let extra = configure(&server, &data);
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 {extra}",
            server.dir.display()
        );
        server.run_as(
            "pg_ctl",
            &[
                "-D",
                &data.display().to_string(),
                "-o",
                &options,
                "-l",
                &server.dir.join("log").display().to_string(),
                "-w",
                "start",
            ],
        );
        Some(server)
    }

    fn run_as(&self, program: &str, args: &[&str]) {
        let exe = self.bin.join(program);
        let mut cmd = match &self.user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out = cmd.args(args).current_dir(&self.dir).output().unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} failed: {}\n{}\nlog: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }

    /// Runs the SQL file `path` (a `pg_dump`) against the server's database with `psql`,
    /// stopping at the first error.
    pub(crate) fn load_sql(&self, path: &Path) {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &self.url, "-f"])
            .arg(path)
            .output()
            .unwrap_or_else(|e| panic!("run psql: {e}"));
        assert!(
            out.status.success(),
            "psql -f {} failed: {}\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `contents` to `path` as a file the server's user owns, readable by it alone (a
    /// TLS key must be).
    pub(crate) fn write_private(&self, path: &Path, contents: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, contents).expect("write a server file");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod a server file");
        if let Some(user) = &self.user {
            let (uid, gid) = user_ids(user).expect("the server's user exists");
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown a server file");
        }
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let data = self.dir.join("data").display().to_string();
        let exe = self.bin.join("pg_ctl");
        let mut cmd = match &self.user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let _ = cmd.args(["-D", &data, "-m", "immediate", "-w", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
