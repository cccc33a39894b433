//! [`Store::kv_signal`](wfc_runtime::durable::Store::kv_signal) between the processes on one
//! SQLite file, as PostgreSQL's `NOTIFY` carries it between the processes on one database.
//!
//! SQLite has no notification between processes (its hooks see only their own connection), so a
//! signal is a row of `kv_signals` (its topic, in commit order: the write lock orders the
//! inserts), and a reader learns that rows may have come from the file itself: every commit
//! writes the store's files (the `-wal` file in WAL mode; the database file at a checkpoint, or
//! with a rollback journal), so a watch of the file's directory (inotify on Linux, FSEvents or
//! kqueue elsewhere, through the `notify` crate) wakes the reader when any process commits. The
//! reader then reads the rows after the last one it saw and passes their topics on to every
//! [`Store::kv_signals`](wfc_runtime::durable::Store::kv_signals) receiver of the process.
//!
//! A file event comes with the write of the log, a moment before the commit is visible to other
//! connections: the reader reads [`SETTLE`] after the event, and once more [`RECHECK`] later, so
//! a commit that was not visible yet at the first read is still found without waiting for the
//! next write to the file. The process's own signals wake the reader directly (no settling: the
//! row is committed when `kv_signal` returns). Rows older than [`SIGNAL_KEPT_MS`] are deleted by
//! the next signal sent; a receiver that falls behind gets `Lagged` and reads the store again,
//! as on PostgreSQL.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::Watcher as _;
use rusqlite::Connection;
use tokio::sync::broadcast;

/// How long a signal row is kept: longer than any reader takes between two reads.
pub(crate) const SIGNAL_KEPT_MS: i64 = 60_000;

/// How long after a file event the reader reads (the other process's commit settles).
const SETTLE: Duration = Duration::from_millis(20);

/// When the reader reads again after a file event, for a commit not yet visible at the first read.
const RECHECK: Duration = Duration::from_millis(250);

/// Topics kept for a receiver that has not taken them yet (beyond: `Lagged`).
const BUFFERED_TOPICS: usize = 1024;

/// What wakes the reader.
enum Wake {
    /// The file changed: a commit of some process (maybe not visible yet).
    File,
    /// This process committed a signal.
    Sent,
}

/// The signals of one store handle (and its clones): the reader thread and its watch.
pub(crate) struct Signals {
    topics: broadcast::Sender<String>,
    wake: mpsc::Sender<Wake>,
    /// Kept so the watch lasts; dropping it (with the store) ends the reader thread.
    _watcher: Option<notify::RecommendedWatcher>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals").field("receivers", &self.topics.receiver_count()).finish_non_exhaustive()
    }
}

impl Signals {
    /// Starts the reader of the signals after row `last`, on `conn` (the store's connection),
    /// with a watch of the store at `path` (`None` in memory: one process, nothing to watch).
    pub(crate) fn start(conn: Arc<Mutex<Connection>>, path: Option<&Path>, last: i64) -> Result<Signals, String> {
        let (wake, wakes) = mpsc::channel();
        let watcher = match path {
            Some(path) => Some(watch(path, wake.clone()).map_err(|e| format!("cannot watch {}: {e}", path.display()))?),
            None => None,
        };
        let (topics, _) = broadcast::channel(BUFFERED_TOPICS);
        let sender = topics.clone();
        std::thread::Builder::new()
            .name("wfc-sqlite-signals".into())
            .spawn(move || read_signals(&conn, &wakes, &sender, last))
            .map_err(|e| format!("cannot start the signal reader: {e}"))?;
        Ok(Signals { topics, wake, _watcher: watcher })
    }

    /// The topics signalled from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<String> {
        self.topics.subscribe()
    }

    /// This process committed a signal: read it now.
    pub(crate) fn sent(&self) {
        let _ = self.wake.send(Wake::Sent);
    }
}

/// Watches the directory of the store at `path` for writes to its files.
fn watch(path: &Path, wake: mpsc::Sender<Wake>) -> notify::Result<notify::RecommendedWatcher> {
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir: PathBuf = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    // The store's own files: the database, its WAL and its rollback journal.
    let names = [file.clone(), format!("{file}-wal"), format!("{file}-journal")];
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return;
        }
        if event.paths.iter().any(|p| p.file_name().is_some_and(|n| names.iter().any(|m| n == m.as_str()))) {
            let _ = wake.send(Wake::File);
        }
    })?;
    watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
    Ok(watcher)
}

/// The reader thread: until the store is dropped (the wake senders with it), reads the signal
/// rows after `last` when woken, and passes their topics on.
fn read_signals(
    conn: &Mutex<Connection>,
    wakes: &mpsc::Receiver<Wake>,
    topics: &broadcast::Sender<String>,
    mut last: i64,
) {
    let mut recheck: Option<Instant> = None;
    loop {
        let woken = match recheck {
            Some(at) => match wakes.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(wake) => Some(wake),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            },
            None => match wakes.recv() {
                Ok(wake) => Some(wake),
                Err(_) => return,
            },
        };
        match woken {
            Some(Wake::File) => {
                std::thread::sleep(SETTLE);
                recheck = Some(Instant::now() + RECHECK);
            }
            Some(Wake::Sent) => {}
            None => recheck = None,
        }
        // One read for every wake that came meanwhile (each commit of every execution wakes it).
        while let Ok(wake) = wakes.try_recv() {
            if matches!(wake, Wake::File) {
                recheck = Some(Instant::now() + RECHECK);
            }
        }
        match read_after(conn, last) {
            Ok(rows) => {
                for (seq, topic) in rows {
                    last = seq;
                    // No receiver now is no error: signals are for those listening.
                    let _ = topics.send(topic);
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the store's signals"),
        }
    }
}

fn read_after(conn: &Mutex<Connection>, last: i64) -> rusqlite::Result<Vec<(i64, String)>> {
    let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
    let mut stmt = conn.prepare_cached("SELECT seq, topic FROM kv_signals WHERE seq > ?1 ORDER BY seq")?;
    let rows = stmt.query_map([last], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// The last signal row now (a new reader passes on those after it).
pub(crate) fn last_signal(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM kv_signals", [], |r| r.get(0))
}

/// Writes signal `topic` and deletes those older than [`SIGNAL_KEPT_MS`].
pub(crate) fn insert_signal(conn: &Connection, topic: &str, now_ms: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO kv_signals (topic, sent_at) VALUES (?1, ?2)")?
        .execute(rusqlite::params![topic, now_ms])?;
    conn.prepare_cached("DELETE FROM kv_signals WHERE sent_at < ?1")?.execute([now_ms - SIGNAL_KEPT_MS])?;
    Ok(())
}
