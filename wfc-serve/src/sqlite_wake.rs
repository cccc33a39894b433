//! Two `wfc serve` processes on one SQLite file: how one learns at once that the other wrote.
//!
//! SQLite has no notification between processes (its update and commit hooks see only their own
//! connection; `PRAGMA data_version` tells a connection that another one committed, but only when
//! asked, which is a poll again). Every commit does write the store's files, though: in WAL mode
//! the `-wal` file (the database file itself at a checkpoint, or in rollback-journal mode), so a
//! watch of the file's directory (inotify on Linux, FSEvents or kqueue elsewhere, through the
//! `notify` crate) wakes a server when any process commits. A wake says only "the store
//! changed": the waiting long polls and Tasks then read the store as the poll did, at most every
//! [`MIN_SPACING`] (every execution's checkpoint is a commit too). The periodic read stays as a
//! fallback (`WFC_SERVE_FALLBACK_POLL_MS`, 2 s, as with PostgreSQL's `NOTIFY`), for a file system
//! whose changes are not reported (a network mount, where SQLite's WAL does not work anyway).

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::Watcher as _;
use tokio::sync::watch;

/// The least time between two reads of the store that wakes start.
pub(crate) const MIN_SPACING: Duration = Duration::from_millis(20);

/// A watch of a SQLite store's files; the receiver's value changes at each write seen.
pub struct StoreChanges {
    _watcher: notify::RecommendedWatcher,
    changes: watch::Receiver<u64>,
}

impl std::fmt::Debug for StoreChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreChanges").finish_non_exhaustive()
    }
}

impl StoreChanges {
    /// Watches the SQLite store of `url` (`sqlite:PATH[?...]`); `None` for another store, or
    /// when the directory cannot be watched (the periodic read then finds the changes).
    pub fn watch(url: &str) -> Option<StoreChanges> {
        let path = url.strip_prefix("sqlite:")?;
        let path = Path::new(path.split_once('?').map_or(path, |(p, _)| p));
        match watch_file(path) {
            Ok(changes) => Some(changes),
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "cannot watch the SQLite store; reading it every 200 ms");
                None
            }
        }
    }

    /// A receiver of the changes from now on.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        let mut receiver = self.changes.clone();
        receiver.borrow_and_update();
        receiver
    }
}

fn watch_file(path: &Path) -> notify::Result<StoreChanges> {
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir: PathBuf = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    // The store's own files: the database, its WAL and its rollback journal.
    let names = [file.clone(), format!("{file}-wal"), format!("{file}-journal")];
    let (sender, changes) = watch::channel(0u64);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return;
        }
        let ours = event.paths.iter().any(|p| p.file_name().is_some_and(|n| names.iter().any(|m| n == m.as_str())));
        if ours {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    })?;
    watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
    Ok(StoreChanges { _watcher: watcher, changes })
}

/// Waits for the next change on `changes` (never, without a watch or once it has ended).
pub(crate) async fn changed(changes: &mut Option<watch::Receiver<u64>>) {
    let Some(receiver) = changes.as_mut() else { return std::future::pending().await };
    if receiver.changed().await.is_err() {
        *changes = None;
        std::future::pending::<()>().await;
    }
}
