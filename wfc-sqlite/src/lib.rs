//! [`SqliteStore`]: the embedded store. One file, WAL mode, one connection used by one blocking
//! thread at a time (so `BEGIN IMMEDIATE` never waits on itself), schema migrations versioned in
//! code through `PRAGMA user_version`.

mod signals;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use serde_json::Value;

use wfc_runtime::HistoryEvent;
use wfc_runtime::durable::migrations::{Migration, ROW_FORMAT, check_row_format};
use wfc_runtime::durable::registry::WorkflowVersion;
use wfc_runtime::durable::{
    CallbackCompletion, CheckpointToken, Claim, ClaimFilter, Completion, ExecutionRecord, ExecutionStatus,
    HistoryWrite, NewExecution, OpStatus, Operation, OperationUpdate, PinGuard, Store, StoreError,
};

/// How hard each commit is pushed to disk (SQLite's `synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is fsynced: durable through an OS crash or power loss. The default.
    Full,
    /// Commits survive a process crash (kill -9) but the last ones may roll back on power loss.
    /// Much faster; for development and for workloads that can redo the last steps.
    Normal,
}

/// The schema, one entry per version: `MIGRATIONS[i]` takes the schema from version `i` to
/// `i + 1` (see [`wfc_runtime::durable::migrations`]). Append only; never edit a released entry.
const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "executions, operations, history",
        sql: r#"
CREATE TABLE executions (
    name           TEXT PRIMARY KEY,
    workflow       TEXT NOT NULL,
    status         TEXT NOT NULL,
    input          TEXT NOT NULL,
    output         TEXT,
    error          TEXT,
    cause          TEXT,
    start_time     TEXT NOT NULL,
    epoch          INTEGER NOT NULL DEFAULT 0,
    checkpoint_seq INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX executions_status ON executions(status);
CREATE TABLE operations (
    execution  TEXT NOT NULL REFERENCES executions(name),
    op_id      TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    type       TEXT NOT NULL,
    subtype    TEXT NOT NULL,
    name       TEXT NOT NULL,
    status     TEXT NOT NULL,
    starts     INTEGER NOT NULL DEFAULT 0,
    result     TEXT,
    error      TEXT,
    cause      TEXT,
    due_at     INTEGER,
    start_ts   INTEGER,
    end_ts     INTEGER,
    PRIMARY KEY (execution, op_id)
);
CREATE INDEX operations_due ON operations(due_at) WHERE status = 'STARTED' AND type = 'WAIT';
CREATE TABLE history (
    execution TEXT NOT NULL REFERENCES executions(name),
    event_id  INTEGER NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY (execution, event_id)
);
"#,
    },
    Migration {
        description: "callbacks, leases, wake-ups, definition hash",
        sql: r#"
ALTER TABLE operations ADD COLUMN callback_token TEXT;
ALTER TABLE operations ADD COLUMN heartbeats INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX operations_callback ON operations(callback_token) WHERE callback_token IS NOT NULL;
ALTER TABLE executions ADD COLUMN owner TEXT;
ALTER TABLE executions ADD COLUMN lease_until INTEGER;
ALTER TABLE executions ADD COLUMN wake_at INTEGER;
ALTER TABLE executions ADD COLUMN definition_hash TEXT;
ALTER TABLE executions ADD COLUMN signals INTEGER NOT NULL DEFAULT 0;
CREATE INDEX executions_runnable ON executions(wake_at) WHERE status = 'RUNNING';
"#,
    },
    Migration {
        description: "the Serverless Workflow event inbox",
        sql: r#"
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    execution    TEXT NOT NULL REFERENCES executions(name),
    event        TEXT NOT NULL,
    delivered_at INTEGER NOT NULL
);
CREATE INDEX events_execution ON events(execution, seq);
"#,
    },
    Migration {
        description: "workflow versions (the registry), executions pinned to a version, row formats",
        sql: r#"
CREATE TABLE wfc_migrations (
    version     INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at  INTEGER NOT NULL
);
CREATE TABLE workflow_versions (
    version_id  TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    origin      TEXT NOT NULL,
    source      TEXT NOT NULL,
    language    TEXT NOT NULL,
    syntax      TEXT NOT NULL,
    passes      TEXT NOT NULL,
    siblings    TEXT NOT NULL,
    legacy_hash TEXT,
    format      INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL
);
CREATE INDEX workflow_versions_workflow ON workflow_versions(workflow, created_at);
CREATE TABLE workflows (
    name            TEXT PRIMARY KEY,
    current_version TEXT NOT NULL REFERENCES workflow_versions(version_id),
    updated_at      INTEGER NOT NULL
);
ALTER TABLE executions ADD COLUMN version_id TEXT REFERENCES workflow_versions(version_id);
ALTER TABLE executions ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
ALTER TABLE operations ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
ALTER TABLE history ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
ALTER TABLE events ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
"#,
    },
    Migration {
        description: "the events gathered towards event-started instances (non-exclusive start states)",
        sql: r#"
CREATE TABLE start_groups (
    workflow   TEXT PRIMARY KEY,
    groups     TEXT NOT NULL,
    format     INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL
);
"#,
    },
    Migration {
        description: "redrives of executions (RedriveExecution): their count and last date",
        sql: r#"
ALTER TABLE executions ADD COLUMN redrive_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN redrive_date INTEGER;
"#,
    },
    Migration {
        description: "listings of the newest executions (of a workflow) by index",
        sql: r#"
CREATE INDEX executions_created ON executions(created_at);
CREATE INDEX executions_workflow_created ON executions(workflow, created_at);
"#,
    },
    Migration {
        description: "a key/value table for what servers share beyond executions (activity task queues, client tokens)",
        sql: r#"
CREATE TABLE kv (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    format     INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL
);
"#,
    },
    Migration {
        description: "history in one row per commit (a JSON array of consecutive events) instead of one per event",
        // A step records about 5 events and a commit writes them together: one row (and one
        // index entry) instead of five. Batches of one execution hold disjoint id ranges. No
        // foreign key: every writer checks the execution's row itself (the token's
        // compare-and-swap, or `append_history`'s check), and no execution is ever deleted.
        sql: r#"
CREATE TABLE history_batches (
    execution      TEXT NOT NULL,
    first_event_id INTEGER NOT NULL,
    last_event_id  INTEGER NOT NULL,
    events         TEXT NOT NULL,
    format         INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (execution, first_event_id)
);
INSERT INTO history_batches (execution, first_event_id, last_event_id, events, format)
    SELECT execution, event_id, event_id, '[' || event || ']', format FROM history ORDER BY execution, event_id;
DROP TABLE history;
"#,
    },
    Migration {
        description: "claims read executions in the order they become due, not past those in flight",
        // A claim scanned `executions_runnable` (by wake_at) from its NULLs: every execution
        // in flight (wake_at NULL, leased) was read and skipped on every claim, about 130,000
        // instructions a claim with 128 in flight. Due is COALESCE(wake_at, lease_until, 0)
        // (PostgreSQL's `executions_claim`): the scan stops before the leased ones.
        sql: r#"
CREATE INDEX executions_claim ON executions(COALESCE(wake_at, lease_until, 0), created_at) WHERE status = 'RUNNING';
"#,
    },
    Migration {
        description: "signals between the processes on one file (Store::kv_signal), as PostgreSQL's NOTIFY",
        // One row per signal, in commit order (the write lock orders the inserts); readers
        // take the rows after the last one they saw when the file changes (see `Signals`).
        // Rows older than `SIGNAL_KEPT_MS` are deleted by the next signal.
        sql: r#"
CREATE TABLE kv_signals (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    topic   TEXT NOT NULL,
    sent_at INTEGER NOT NULL
);
"#,
    },
];

/// A [`Store`] in one SQLite file.
///
/// Every write an execution makes while it runs (its claim, checkpoints, lease renewals, history
/// appends, its finish, a release) goes through a **group committer**: one thread takes every
/// write waiting at that moment (of any execution of the process) and commits them in one
/// transaction (a write checks whether it is refused before it writes anything, so a refused
/// one leaves nothing behind), and answers each caller only once that transaction has committed. With `synchronous=FULL` that is one fsync
/// for the group, so concurrent executions commit at a multiple of the single-commit rate, and
/// no write is acknowledged before it is durable.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    committer: std::sync::mpsc::Sender<Box<dyn GroupWrite>>,
    /// At [`Synchronous::Full`] on a file: the thread that syncs the log after the commits
    /// (see [`LogSyncer`]); `None` where SQLite syncs in the commit itself.
    syncer: Option<Arc<LogSyncer>>,
    /// Write transactions committed since the store was opened (SQLite's commit hook): each
    /// one an fsync of the log at [`Synchronous::Full`]. Read by `wfc-bench --durable`.
    commits: Arc<std::sync::atomic::AtomicU64>,
    /// The reader of the signals other processes on the file send ([`Store::kv_signals`]),
    /// started by the first call; `None` in it when the file cannot be watched.
    signals: Arc<std::sync::OnceLock<Option<signals::Signals>>>,
}

/// One write waiting for the group committer: run in the group's transaction and answered once
/// that transaction has committed (or failed).
///
/// A write finds out whether it is refused (a stale token, a finished operation, ...) before it
/// writes anything, so a refusal leaves the group's transaction as it was and needs no savepoint.
/// Only SQLite's own errors ([`StoreError::Backend`]) may come after a write began; the group is
/// then rolled back and run again with each write in a savepoint of its own (see
/// [`commit_group`]), which is why a write can be run more than once.
trait GroupWrite: Send + std::fmt::Debug {
    /// Runs the write on the group's connection and keeps its result.
    fn apply(&mut self, conn: &Connection) -> Applied;
    /// Answers the caller: the write's own result once the group committed, else the group's error.
    fn answer(self: Box<Self>, committed: Result<(), StoreError>);
    /// When a committed write may be answered (see [`AnswerAt`]).
    fn answer_at(&self) -> AnswerAt;
}

/// When a committed grouped write is answered, at [`Synchronous::Full`] on a file (elsewhere
/// the commit itself is durable, and every write is answered at it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnswerAt {
    /// After a sync of the log that began after the group committed: the write is durable.
    Sync,
    /// At the commit, before the sync: only for a claim ([`Store::claim_runnable`]). Nothing
    /// the claimer does depends on the claim's durability: a claimed execution's first effect
    /// (a Task's handler, its end, its release) follows a write of its own, answered only after
    /// a sync, and a sync of the log makes every commit before it durable, the claim's too. A
    /// claim lost with the machine before that sync was never acted on. Claims wait for no
    /// sync, so a worker fills its freed places one sync (about 4 ms) sooner.
    Commit,
}

/// How a grouped write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    /// Written.
    Written,
    /// Refused before it wrote anything: its error is its answer, the group goes on.
    Refused,
    /// SQLite failed, maybe after part of the write: the group must be run again with savepoints.
    Failed,
}

/// A [`GroupWrite`] running `run`, answering on `reply`.
struct Write<T, F> {
    run: F,
    result: Option<Result<T, StoreError>>,
    reply: tokio::sync::oneshot::Sender<Result<T, StoreError>>,
    answer_at: AnswerAt,
}

impl<T, F> std::fmt::Debug for Write<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Write").field("applied", &self.result.is_some()).finish()
    }
}

impl<T, F> GroupWrite for Write<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> Result<T, StoreError> + Send,
{
    fn apply(&mut self, conn: &Connection) -> Applied {
        let result = (self.run)(conn);
        let applied = match &result {
            Ok(_) => Applied::Written,
            Err(StoreError::Backend(_)) => Applied::Failed,
            Err(_) => Applied::Refused,
        };
        self.result = Some(result);
        applied
    }

    fn answer(self: Box<Self>, committed: Result<(), StoreError>) {
        let this = *self;
        let result = match (committed, this.result) {
            (Ok(()), Some(result)) => result,
            (Ok(()), None) => Err(backend("a grouped write was not run")),
            // A refusal of the write itself says more than the group's failure.
            (Err(_), Some(Err(own))) => Err(own),
            (Err(e), _) => Err(e),
        };
        let _ = this.reply.send(result);
    }

    fn answer_at(&self) -> AnswerAt {
        self.answer_at
    }
}

/// The most writes one group commit takes.
const MAX_GROUP: usize = 512;

/// The group committer's loop: ends when every handle of the store is dropped. With a
/// [`LogSyncer`], a committed group is handed to it, to be answered once the log is synced,
/// and the next group's statements run meanwhile.
fn group_committer(
    conn: Arc<Mutex<Connection>>,
    requests: std::sync::mpsc::Receiver<Box<dyn GroupWrite>>,
    syncer: Option<Arc<LogSyncer>>,
    commits: Arc<std::sync::atomic::AtomicU64>,
) {
    while let Ok(first) = requests.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match requests.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        let (committed, upto) = {
            let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            let committed = commit_group(&mut guard, &mut group);
            // Read under the lock: no commit is half done.
            (committed, commits.load(std::sync::atomic::Ordering::Relaxed))
        };
        match (&syncer, committed) {
            (Some(syncer), Ok(())) => {
                let (at_commit, after_sync): (Vec<_>, Vec<_>) =
                    group.into_iter().partition(|w| w.answer_at() == AnswerAt::Commit);
                if !at_commit.is_empty() {
                    wfc_runtime::durable::group_crash_point(at_commit.len() + after_sync.len(), "after-commit");
                    at_commit.into_iter().for_each(|w| w.answer(Ok(())));
                }
                if !after_sync.is_empty() {
                    syncer.sync_then_answer(upto, after_sync);
                }
            }
            (_, committed) => {
                wfc_runtime::durable::group_crash_point(group.len(), "after-commit");
                for write in group {
                    write.answer(committed.clone());
                }
            }
        }
    }
    // Every handle is gone: the syncer ends once what was handed to it is answered.
    if let Some(syncer) = syncer {
        syncer.close();
    }
}

/// Syncs the log (the `-wal` file) after commits made at `synchronous=NORMAL`, on a thread of
/// its own, so a store at [`Synchronous::Full`] pays its fsync beside its work instead of
/// inside it: SQLite at FULL syncs the log inside `COMMIT`, holding the write lock, so the
/// group committer could run nothing while the disk synced; at NORMAL the commit only appends
/// to the log, and this thread syncs it while the next group's statements run.
///
/// The guarantee is FULL's: a grouped write is answered only after an fsync of the log that
/// began after its transaction committed (so the fsync covers it); a call on the connection
/// (a read or a write of its own) returns only once every commit it may have seen is synced.
/// SQLite at NORMAL still syncs the log before each checkpoint copies it into the database,
/// the database after, and the log's header when the log is reused, so a synced commit stays
/// durable whether it is in the log or the database. What differs is visibility: another
/// process reading the file may see a commit before its sync (a power loss, not a process
/// crash, could still take it back); nothing is acknowledged before it.
struct LogSyncer {
    /// The log file, opened by the store (an fsync flushes the file, whichever descriptor wrote it).
    log: std::fs::File,
    /// Syncs done (read by `wfc-bench --durable` and the tests).
    syncs: std::sync::atomic::AtomicU64,
    jobs: Mutex<SyncJobs>,
    /// Signalled when jobs are queued (to the syncer thread) and when a sync ends (to callers).
    changed: std::sync::Condvar,
}

impl std::fmt::Debug for LogSyncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSyncer").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct SyncJobs {
    /// Committed groups waiting for the next sync, to answer after it.
    groups: Vec<Vec<Box<dyn GroupWrite>>>,
    /// The highest commit count (the commit hook's) that must be synced.
    wanted: u64,
    /// Commits up to this count are synced.
    synced: u64,
    /// Why a sync failed: every later write and call fails with it (after a failed fsync the
    /// kernel may have dropped the pages, so no later sync can vouch for them).
    failed: Option<String>,
    /// Every handle of the store is gone: the thread ends once nothing waits.
    closed: bool,
}

impl LogSyncer {
    /// Opens the log of the database at `db_path` (it exists once the store is in WAL mode) and
    /// syncs its directory, so the log file itself survives a power loss (SQLite at FULL does
    /// that at the log's first sync; at NORMAL the first sync may come only at a checkpoint).
    #[cfg(unix)]
    fn open(db_path: &str) -> std::io::Result<LogSyncer> {
        let log_path = format!("{db_path}-wal");
        let log = std::fs::OpenOptions::new().read(true).write(true).open(&log_path)?;
        if let Some(dir) = Path::new(&log_path).parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(LogSyncer {
            log,
            syncs: std::sync::atomic::AtomicU64::new(0),
            jobs: Mutex::new(SyncJobs::default()),
            changed: std::sync::Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SyncJobs> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers `group` (committed, with commit count `upto`) after the next sync.
    fn sync_then_answer(&self, upto: u64, group: Vec<Box<dyn GroupWrite>>) {
        let mut jobs = self.lock();
        if let Some(e) = &jobs.failed {
            let e = backend(e);
            drop(jobs);
            group.into_iter().for_each(|w| w.answer(Err(e.clone())));
            return;
        }
        jobs.wanted = jobs.wanted.max(upto);
        jobs.groups.push(group);
        self.changed.notify_all();
    }

    /// Waits until the commits up to count `upto` are synced.
    fn wait_synced(&self, upto: u64) -> Result<(), StoreError> {
        let mut jobs = self.lock();
        if jobs.synced >= upto && jobs.failed.is_none() {
            return Ok(());
        }
        jobs.wanted = jobs.wanted.max(upto);
        self.changed.notify_all();
        loop {
            if let Some(e) = &jobs.failed {
                return Err(backend(e));
            }
            if jobs.synced >= upto {
                return Ok(());
            }
            jobs = self.changed.wait(jobs).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// The syncer thread: syncs whenever a commit waits for it, then answers the groups that
    /// were committed before the sync began.
    fn run(&self) {
        loop {
            let (target, groups) = {
                let mut jobs = self.lock();
                while jobs.wanted <= jobs.synced && jobs.groups.is_empty() {
                    if jobs.closed {
                        return;
                    }
                    jobs = self.changed.wait(jobs).unwrap_or_else(|p| p.into_inner());
                }
                (jobs.wanted, std::mem::take(&mut jobs.groups))
            };
            let synced = self.log.sync_data().map_err(|e| format!("cannot sync the store's log: {e}"));
            {
                let mut jobs = self.lock();
                match &synced {
                    Ok(()) => {
                        jobs.synced = jobs.synced.max(target);
                        self.syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(e) => jobs.failed = Some(e.clone()),
                }
            }
            self.changed.notify_all();
            let answer = synced.map_err(backend);
            for group in groups {
                wfc_runtime::durable::group_crash_point(group.len(), "after-commit");
                for write in group {
                    write.answer(answer.clone());
                }
            }
        }
    }
}

/// Runs every write of `group` in one IMMEDIATE transaction and commits it: one fsync for the
/// group at FULL. A refused write wrote nothing (see [`GroupWrite`]), so the writes run one after
/// the other with no savepoint (a savepoint per write cost its two statements and a copy of
/// every page the write touched that the group had already changed). When SQLite fails inside a
/// write, part of it may be written: the group is rolled back and run again with each write in
/// a savepoint of its own, so the failed write rolls back alone and the others still commit.
///
/// The transaction and savepoint statements are prepared once per connection (rusqlite's
/// `Transaction` and `Savepoint` parse theirs on every use).
fn commit_group(conn: &mut Connection, group: &mut [Box<dyn GroupWrite>]) -> Result<(), StoreError> {
    let conn = &*conn;
    let fast = run_group(conn, group, false);
    let result = match fast {
        Err(GroupFailure::Write) => run_group(conn, group, true),
        other => other,
    };
    result.map_err(|e| match e {
        GroupFailure::Store(e) => e,
        GroupFailure::Write => backend("a grouped write failed twice"),
    })
}

/// Why [`run_group`] did not commit.
enum GroupFailure {
    /// A write failed in SQLite without savepoints: run the group again with them.
    Write,
    /// The transaction itself failed: every write is answered with this error.
    Store(StoreError),
}

/// One attempt of [`commit_group`]: every write in one transaction, each in a savepoint of its
/// own when `savepoints`. Rolls back whatever it did not commit.
fn run_group(conn: &Connection, group: &mut [Box<dyn GroupWrite>], savepoints: bool) -> Result<(), GroupFailure> {
    let store = |e: rusqlite::Error| GroupFailure::Store(backend(e));
    cached(conn, "BEGIN IMMEDIATE", []).map_err(store)?;
    let mut run = || -> Result<(), GroupFailure> {
        for write in group.iter_mut() {
            if savepoints {
                cached(conn, "SAVEPOINT wfc_write", []).map_err(store)?;
                if write.apply(conn) != Applied::Written {
                    // A failed write rolls back alone.
                    cached(conn, "ROLLBACK TO wfc_write", []).map_err(store)?;
                }
                cached(conn, "RELEASE wfc_write", []).map_err(store)?;
            } else if write.apply(conn) == Applied::Failed {
                return Err(GroupFailure::Write);
            }
        }
        wfc_runtime::durable::group_crash_point(group.len(), "before-commit");
        cached(conn, "COMMIT", []).map_err(store)?;
        Ok(())
    };
    let result = run();
    if result.is_err() && !conn.is_autocommit() {
        // Nothing of a failed attempt stays.
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

/// One checkpoint in the caller's transaction (a group's). Whether it is refused (a finished
/// operation rewritten, a stale token) is found before anything is written. Its JSON (the
/// updates' results, the history rows) was written by the caller ([`CheckpointText`]).
fn checkpoint_in(
    conn: &Connection,
    name: &str,
    token: CheckpointToken,
    updates: &[OperationUpdate],
    text: &CheckpointText,
) -> Result<CheckpointToken, StoreError> {
    let now = now_ms();
    let existing = match check_updates(conn, name, updates) {
        Ok(existing) => existing,
        // A stale writer is told that first, as when the token was checked first.
        Err(refused) => return Err(check_token(conn, name, token).err().unwrap_or(refused)),
    };
    let next = advance_token(conn, name, token, now)?;
    for ((update, exists), result) in updates.iter().zip(existing).zip(&text.results) {
        apply_update(conn, name, update, result.as_deref(), exists, now)?;
    }
    write_history(conn, name, &text.history)?;
    Ok(next)
}

/// A grouped write's JSON, written by its caller (on the execution's own thread) before the
/// write goes to the group committer: one thread runs every group's statements, and the
/// serialization of the history events and results was about a quarter of its time.
#[derive(Debug, Default)]
struct CheckpointText {
    /// Each update's result as JSON text, in the order of the updates.
    results: Vec<Option<String>>,
    history: HistoryRows,
}

impl CheckpointText {
    fn new(updates: &[OperationUpdate], history: &HistoryWrite) -> Result<CheckpointText, StoreError> {
        Ok(CheckpointText {
            results: updates.iter().map(|u| u.result.as_ref().map(to_text)).collect(),
            history: HistoryRows::new(history)?,
        })
    }
}

/// A [`HistoryWrite`] as the rows of `history_batches` it writes (each its events as a JSON
/// array), serialized before the group's transaction.
#[derive(Debug, Default)]
struct HistoryRows {
    /// The stored events after this id go first (the tail a resumed run replaced).
    truncate_after: Option<i64>,
    rows: Vec<HistoryRow>,
}

/// One row of `history_batches`: events `first..=last`, in id order, as a JSON array.
#[derive(Debug)]
struct HistoryRow {
    first: i64,
    last: i64,
    events: String,
}

impl HistoryRows {
    fn new(history: &HistoryWrite) -> Result<HistoryRows, StoreError> {
        let truncate_after = history.truncate_after.map(i64::try_from).transpose().map_err(backend)?;
        let events = &history.events;
        // A run records its events in id order: one row. Anything else, one row per event.
        let rows = if events.is_empty() {
            Vec::new()
        } else if events.windows(2).all(|w| w[0].id < w[1].id) {
            vec![HistoryRow::new(events)?]
        } else {
            events.iter().map(|event| HistoryRow::new(std::slice::from_ref(event))).collect::<Result<_, _>>()?
        };
        Ok(HistoryRows { truncate_after, rows })
    }
}

impl HistoryRow {
    /// `events` (not empty, in increasing id order) as one row. Consecutive events that share a
    /// document serialize it once, all into one buffer.
    fn new(events: &[HistoryEvent]) -> Result<HistoryRow, StoreError> {
        let id = |e: &HistoryEvent| i64::try_from(e.id).map_err(backend);
        let (first, last) = match (events.first(), events.last()) {
            (Some(first), Some(last)) => (id(first)?, id(last)?),
            _ => return Err(backend("a history row of no events")),
        };
        let mut writer = wfc_runtime::history::EventWriter::new();
        let mut text = Vec::with_capacity(512 * events.len());
        text.push(b'[');
        for (i, event) in events.iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            writer.write_json(event, &mut text).map_err(backend)?;
        }
        text.push(b']');
        Ok(HistoryRow { first, last, events: String::from_utf8(text).map_err(backend)? })
    }
}

/// Writes a running execution's history events (live history, see `wfc-journal`'s `live_history`) in
/// the caller's transaction: the tail a resumed run replaced first, then the rows (an id
/// already stored is replaced). Kept apart from the checkpoint's operation updates. Refuses
/// nothing: only SQLite's own errors come out of it.
fn write_history(tx: &Connection, name: &str, history: &HistoryRows) -> Result<(), StoreError> {
    if let Some(after) = history.truncate_after {
        truncate_history(tx, name, after)?;
    }
    history.rows.iter().try_for_each(|row| write_row(tx, name, row))
}

/// Writes one row of `history_batches`, replacing the stored events with ids in its range.
fn write_row(tx: &Connection, name: &str, row: &HistoryRow) -> Result<(), StoreError> {
    let (first, last) = (row.first, row.last);
    // The batches hold disjoint ranges, so only the one starting last at or before `last` can
    // overlap when that one does not: an append (the common case) costs this one lookup.
    let before: Option<i64> = tx
        .prepare_cached(
            "SELECT last_event_id FROM history_batches WHERE execution = ?1 AND first_event_id <= ?2
             ORDER BY first_event_id DESC LIMIT 1",
        )
        .and_then(|mut stmt| stmt.query_row(params![name, last], |r| r.get(0)))
        .optional()
        .map_err(backend)?;
    if before.is_some_and(|end| end >= first) {
        remove_range(tx, name, first, last)?;
    }
    insert_batch(tx, name, first, last, &row.events)
}

fn insert_batch(tx: &Connection, name: &str, first: i64, last: i64, events: &str) -> Result<(), StoreError> {
    cached(
        tx,
        "INSERT INTO history_batches (execution, first_event_id, last_event_id, events, format)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![name, first, last, events, ROW_FORMAT],
    )
    .map_err(backend)?;
    Ok(())
}

/// A stored batch's events.
fn batch_events(name: &str, text: &str, format: i64) -> Result<Vec<HistoryEvent>, StoreError> {
    check_row_format(&format!("a history event of execution '{name}'"), format)?;
    serde_json::from_str(text).map_err(|e| backend(format!("a stored event of execution '{name}' is corrupt: {e}")))
}

/// Rewrites `events` (kept from a stored batch, in id order) as one or more batches, each a run
/// of them between two removed ranges.
fn rewrite_kept(tx: &Connection, name: &str, kept: &[HistoryEvent]) -> Result<(), StoreError> {
    if kept.is_empty() {
        return Ok(());
    }
    let mut writer = wfc_runtime::history::EventWriter::new();
    let texts = kept.iter().map(|e| writer.to_json(e).map_err(backend)).collect::<Result<Vec<_>, _>>()?;
    let first = i64::try_from(kept[0].id).map_err(backend)?;
    let last = i64::try_from(kept[kept.len() - 1].id).map_err(backend)?;
    insert_batch(tx, name, first, last, &format!("[{}]", texts.join(",")))
}

/// Removes the stored events with ids in `first..=last` (the batches overlapping the range are
/// rewritten with what they keep, split around it).
fn remove_range(tx: &Connection, name: &str, first: i64, last: i64) -> Result<(), StoreError> {
    let overlapping: Vec<(i64, String, i64)> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT first_event_id, events, format FROM history_batches
                 WHERE execution = ?1 AND first_event_id <= ?3 AND last_event_id >= ?2",
            )
            .map_err(backend)?;
        let rows = stmt.query_map(params![name, first, last], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
        rows.and_then(|rows| rows.collect()).map_err(backend)?
    };
    for (start, text, format) in overlapping {
        let events = batch_events(name, &text, format)?;
        cached(tx, "DELETE FROM history_batches WHERE execution = ?1 AND first_event_id = ?2", params![name, start])
            .map_err(backend)?;
        let id = |e: &HistoryEvent| i64::try_from(e.id).unwrap_or(i64::MAX);
        let (below, rest): (Vec<_>, Vec<_>) = events.into_iter().partition(|e| id(e) < first);
        let above: Vec<_> = rest.into_iter().filter(|e| id(e) > last).collect();
        rewrite_kept(tx, name, &below)?;
        rewrite_kept(tx, name, &above)?;
    }
    Ok(())
}

/// Deletes the stored events with ids greater than `after`.
fn truncate_history(tx: &Connection, name: &str, after: i64) -> Result<(), StoreError> {
    cached(tx, "DELETE FROM history_batches WHERE execution = ?1 AND first_event_id > ?2", params![name, after])
        .map_err(backend)?;
    // Only the last batch left can go on past `after` (the ranges are disjoint).
    remove_range(tx, name, after.saturating_add(1), i64::MAX)
}

/// The id of the last stored event of `name` (0: none).
fn last_event_id(tx: &Connection, name: &str) -> Result<i64, StoreError> {
    let last: Option<i64> = tx
        .prepare_cached(
            "SELECT last_event_id FROM history_batches WHERE execution = ?1 ORDER BY first_event_id DESC LIMIT 1",
        )
        .and_then(|mut stmt| stmt.query_row([name], |r| r.get(0)))
        .optional()
        .map_err(backend)?;
    Ok(last.unwrap_or(0))
}

/// Appends events after the last stored one, in the caller's transaction: `events` gets that
/// last id. For StopExecution's `ExecutionAborted` (`durable::aborted_events`: an execution that
/// never wrote its history gets its `ExecutionStarted` first) and RedriveExecution's
/// `ExecutionRedriven` (`durable::redriven_event`).
fn append_after_last(
    tx: &Connection,
    name: &str,
    events: impl FnOnce(u64) -> Vec<HistoryEvent>,
) -> Result<(), StoreError> {
    let last = last_event_id(tx, name)?;
    let events = events(u64::try_from(last).unwrap_or(0));
    write_history(tx, name, &HistoryRows::new(&HistoryWrite { events, truncate_after: None })?)
}

/// The stored events of `name` in id order: those after `after` (at most `limit`), or with
/// `reverse` those before `after` (0: from the last) newest first.
fn read_events(
    conn: &Connection,
    name: &str,
    after: u64,
    limit: usize,
    reverse: bool,
) -> Result<Vec<HistoryEvent>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    let take = |events: Vec<HistoryEvent>, out: &mut Vec<HistoryEvent>| {
        let keep = |e: &HistoryEvent| {
            let id = i64::try_from(e.id).unwrap_or(i64::MAX);
            if reverse { after == 0 || id < after } else { id > after }
        };
        if reverse {
            out.extend(events.into_iter().rev().filter(keep).take(limit - out.len()));
        } else {
            out.extend(events.into_iter().filter(keep).take(limit - out.len()));
        }
        out.len() >= limit
    };
    if reverse {
        let mut stmt = conn
            .prepare_cached(
                "SELECT events, format FROM history_batches WHERE execution = ?1 AND (?2 = 0 OR first_event_id < ?2)
                 ORDER BY first_event_id DESC",
            )
            .map_err(backend)?;
        let mut rows = stmt.query(params![name, after]).map_err(backend)?;
        while let Some(row) = rows.next().map_err(backend)? {
            let (text, format): (String, i64) = (row.get(0).map_err(backend)?, row.get(1).map_err(backend)?);
            if take(batch_events(name, &text, format)?, &mut out) {
                break;
            }
        }
    } else {
        // From the batch holding `after` (the last one starting at or before it).
        let start: i64 = conn
            .prepare_cached(
                "SELECT COALESCE(MAX(first_event_id), 0) FROM history_batches
                 WHERE execution = ?1 AND first_event_id <= ?2",
            )
            .and_then(|mut stmt| stmt.query_row(params![name, after], |r| r.get(0)))
            .map_err(backend)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT events, format FROM history_batches WHERE execution = ?1 AND first_event_id >= ?2
                 ORDER BY first_event_id",
            )
            .map_err(backend)?;
        let mut rows = stmt.query(params![name, start]).map_err(backend)?;
        while let Some(row) = rows.next().map_err(backend)? {
            let (text, format): (String, i64) = (row.get(0).map_err(backend)?, row.get(1).map_err(backend)?);
            if take(batch_events(name, &text, format)?, &mut out) {
                break;
            }
        }
    }
    Ok(out)
}

/// Whether execution `name` exists (a write that does not otherwise touch its row checks it).
fn execution_exists(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT 1 FROM executions WHERE name = ?1")
        .and_then(|mut stmt| stmt.exists([name]))
        .map_err(backend)
}

/// Runs `sql` as a statement prepared once per connection (the hot paths: a group commit runs
/// the same few statements for every write; parsing them each time cost more than running them).
fn cached(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<usize, rusqlite::Error> {
    conn.prepare_cached(sql)?.execute(params)
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn to_text(value: &Value) -> String {
    value.to_string()
}

fn from_text(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| backend(format!("a stored JSON value is corrupt: {e}")))
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and migrates its schema.
    pub fn open(path: impl AsRef<Path>, synchronous: Synchronous) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let conn = Connection::open(path).map_err(|e| backend(format!("cannot open {}: {e}", path.display())))?;
        SqliteStore::setup(conn, synchronous)
    }

    /// Opens the store at `path` only if the file exists ([`StoreError::NoStore`] otherwise,
    /// creating nothing), and migrates its schema.
    pub fn open_existing(path: impl AsRef<Path>, synchronous: Synchronous) -> Result<SqliteStore, StoreError> {
        use rusqlite::OpenFlags;
        let path = path.as_ref();
        // Without SQLITE_OPEN_CREATE SQLite itself refuses a missing file, so nothing races
        // between a check and the open.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match Connection::open_with_flags(path, flags) {
            Ok(conn) => conn,
            Err(_) if !path.exists() => return Err(StoreError::NoStore(path.display().to_string())),
            Err(e) => return Err(backend(format!("cannot open {}: {e}", path.display()))),
        };
        SqliteStore::setup(conn, synchronous)
    }

    /// An in-memory store (nothing survives the process), for tests.
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        SqliteStore::setup(Connection::open_in_memory().map_err(backend)?, Synchronous::Full)
    }

    fn setup(mut conn: Connection, synchronous: Synchronous) -> Result<SqliteStore, StoreError> {
        let sync = match synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        // Another process (a `wfc executions` reader, or a second run) may hold the file
        // briefly; set first, so even switching to WAL below waits instead of failing.
        // Generous: on a loaded machine a FULL commit of another process can take seconds.
        conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(backend)?;
        // WAL: readers do not block the writer, and a commit is one append to the log.
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", sync).map_err(backend)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(backend)?;
        // The same plan whatever the bound values: otherwise SQLite re-prepares a statement
        // whose plan looked at a bound value each time it is bound again (the claim query:
        // about 200,000 instructions a claim). Every query here names its literals itself.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(backend)?;
        migrate(&mut conn)?;
        conn.set_prepared_statement_cache_capacity(64);
        let syncer = match synchronous {
            Synchronous::Full => log_syncer(&conn)?,
            Synchronous::Normal => None,
        };
        let commits = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = Arc::clone(&commits);
        conn.commit_hook(Some(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            false // never turn the commit into a rollback
        }));
        let conn = Arc::new(Mutex::new(conn));
        if let Some(syncer) = &syncer {
            let syncer = Arc::clone(syncer);
            std::thread::Builder::new()
                .name("wfc-sqlite-sync".into())
                .spawn(move || syncer.run())
                .map_err(|e| backend(format!("cannot start the log's sync thread: {e}")))?;
        }
        let (committer, requests) = std::sync::mpsc::channel();
        let (shared, for_committer, counted) = (Arc::clone(&conn), syncer.clone(), Arc::clone(&commits));
        std::thread::Builder::new()
            .name("wfc-sqlite-commit".into())
            .spawn(move || group_committer(shared, requests, for_committer, counted))
            .map_err(|e| backend(format!("cannot start the commit thread: {e}")))?;
        Ok(SqliteStore { conn, committer, syncer, commits, signals: Arc::default() })
    }

    /// Write transactions this handle has committed since it was opened (all of its
    /// connection's commits: checkpoints, group commits of many checkpoints, claims, creates).
    pub fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Syncs of the log this handle's [`LogSyncer`] has done since the store was opened: at
    /// [`Synchronous::Full`] on a file, the fsyncs its commits paid (a sync serves every commit
    /// made before it began); `None` where SQLite syncs inside each commit (NORMAL, in memory).
    pub fn log_syncs(&self) -> Option<u64> {
        self.syncer.as_ref().map(|s| s.syncs.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Runs the write `f` through the group committer: in the next group's transaction,
    /// answered once that transaction has committed, so the answer means the write is durable
    /// (at FULL). `f` must find out whether it is refused before it writes (see [`GroupWrite`]);
    /// it may run twice (a group that SQLite failed is run again). Waited for on the blocking pool, as every other
    /// store call: a paused virtual clock does not jump while a commit is in progress.
    fn grouped<T, F>(&self, f: F) -> BoxFuture<'static, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.grouped_answered_at(AnswerAt::Sync, f)
    }

    /// [`SqliteStore::grouped`], answered at `answer_at` ([`AnswerAt::Commit`]: a claim).
    fn grouped_answered_at<T, F>(&self, answer_at: AnswerAt, f: F) -> BoxFuture<'static, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.committer.send(Box::new(Write { run: f, result: None, reply, answer_at }));
        // A paused clock exists only on a current-thread runtime (tokio refuses to pause
        // another): there the answer is waited for on the blocking pool, which keeps the clock
        // from jumping. On a multi-thread runtime (a worker's, the benchmark's) it is awaited
        // directly: a blocking-pool thread per write cost two thread switches per step.
        let paused_possible = match tokio::runtime::Handle::try_current() {
            Ok(h) => h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread,
            Err(_) => true,
        };
        Box::pin(async move {
            sent.map_err(|_| backend("the commit thread has stopped"))?;
            let dropped = |_| backend("the commit thread dropped a write");
            if paused_possible {
                tokio::task::spawn_blocking(move || answer.blocking_recv())
                    .await
                    .map_err(|e| backend(format!("the store thread failed: {e}")))?
                    .map_err(dropped)?
            } else {
                answer.await.map_err(dropped)?
            }
        })
    }

    /// Runs `f` on the connection on tokio's blocking pool, so no async thread ever waits on
    /// the disk. (`spawn_blocking` also keeps a paused virtual clock from jumping meanwhile.)
    fn call<T, F>(&self, f: F) -> BoxFuture<'static, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let (syncer, commits) = (self.syncer.clone(), Arc::clone(&self.commits));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
                let result = f(&mut guard);
                // Nothing is returned before what it wrote, or read of others' commits, is synced.
                let upto = commits.load(std::sync::atomic::Ordering::Relaxed);
                drop(guard);
                if let Some(syncer) = syncer {
                    syncer.wait_synced(upto)?;
                }
                result
            })
            .await
            .map_err(|e| backend(format!("the store thread failed: {e}")))?
        })
    }
}

/// The [`LogSyncer`] of a store at FULL on a file (then switched to `synchronous=NORMAL`: its
/// commits no longer sync, the syncer does); `None` for an in-memory store, or off unix, where
/// SQLite keeps syncing in each commit.
fn log_syncer(conn: &Connection) -> Result<Option<Arc<LogSyncer>>, StoreError> {
    #[cfg(unix)]
    if let Some(path) = conn.path().filter(|p| !p.is_empty()) {
        let syncer = LogSyncer::open(path).map_err(|e| backend(format!("cannot open the log of {path}: {e}")))?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(backend)?;
        return Ok(Some(Arc::new(syncer)));
    }
    let _ = conn;
    Ok(None)
}

/// Switches a store to WAL. A brand-new file is still in rollback mode, where two processes
/// opening it at once can deadlock on the switch (each holds the shared lock the other's
/// exclusive lock waits for); SQLite then answers `SQLITE_BUSY` at once instead of calling the
/// busy handler, so the switch is retried here for as long as the busy timeout would wait.
fn set_wal(conn: &Connection) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(backend(e)),
        }
    }
}

/// Brings the schema to the latest version in one IMMEDIATE transaction: the version is read
/// under the write lock, so two processes opening a new file at once cannot both migrate it.
/// The version is `PRAGMA user_version` (read without a table, so even a store older than
/// `wfc_migrations` says what it is); `wfc_migrations` lists every migration applied.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // The common case, a store already at the latest version, is read without the write lock:
    // every `wfc executions` call opens the store, and taking the lock each time would make
    // busy readers queue behind (and delay) the process running an execution.
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(backend)?;
    if wfc_runtime::durable::migrations::pending(current, MIGRATIONS)?.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(backend)?;
    let pending = wfc_runtime::durable::migrations::pending(version, MIGRATIONS)?;
    if pending.is_empty() {
        return Ok(());
    }
    for migration in pending {
        tx.execute_batch(migration.sql).map_err(|e| backend(format!("migration '{}': {e}", migration.description)))?;
    }
    let now = now_ms();
    // Every version, also those applied before the table existed (recorded now).
    for (i, migration) in MIGRATIONS.iter().enumerate() {
        tx.execute(
            "INSERT OR IGNORE INTO wfc_migrations (version, description, applied_at) VALUES (?1, ?2, ?3)",
            params![i as i64 + 1, migration.description, now],
        )
        .map_err(backend)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64).map_err(backend)?;
    tx.commit().map_err(backend)
}

const RECORD_COLUMNS: &str = "name, workflow, status, input, output, error, cause, start_time, epoch, checkpoint_seq, \
     created_at, updated_at, owner, lease_until, wake_at, definition_hash, signals, version_id, format, \
     redrive_count, redrive_date";

fn record_of(row: &Row<'_>) -> rusqlite::Result<(ExecutionRecordRaw,)> {
    Ok((ExecutionRecordRaw {
        name: row.get(0)?,
        workflow: row.get(1)?,
        status: row.get(2)?,
        input: row.get(3)?,
        output: row.get(4)?,
        error: row.get(5)?,
        cause: row.get(6)?,
        start_time: row.get(7)?,
        epoch: row.get(8)?,
        checkpoint_seq: row.get(9)?,
        created_at_ms: row.get(10)?,
        updated_at_ms: row.get(11)?,
        owner: row.get(12)?,
        lease_until_ms: row.get(13)?,
        wake_at_ms: row.get(14)?,
        definition_hash: row.get(15)?,
        signals: row.get(16)?,
        version_id: row.get(17)?,
        format: row.get(18)?,
        redrive_count: row.get(19)?,
        redrive_date_ms: row.get(20)?,
    },))
}

/// A row before its JSON and enum columns are parsed (parsing errors are ours, not SQLite's).
struct ExecutionRecordRaw {
    name: String,
    workflow: String,
    status: String,
    input: String,
    output: Option<String>,
    error: Option<String>,
    cause: Option<String>,
    start_time: String,
    epoch: i64,
    checkpoint_seq: i64,
    created_at_ms: i64,
    updated_at_ms: i64,
    owner: Option<String>,
    lease_until_ms: Option<i64>,
    wake_at_ms: Option<i64>,
    definition_hash: Option<String>,
    signals: i64,
    version_id: Option<String>,
    format: i64,
    redrive_count: i64,
    redrive_date_ms: Option<i64>,
}

/// JSON text as listed: itself when it parses, else a JSON string saying what is wrong.
fn shown_json(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(_) => text.to_owned(),
        Err(e) => Value::String(format!("<corrupt JSON: {e}>")).to_string(),
    }
}

impl ExecutionRecordRaw {
    /// For listings: a row whose JSON is corrupt is still listed (its input or output shows
    /// what is wrong), so one bad execution does not hide the others.
    fn parse_lenient(mut self) -> Result<ExecutionRecord, StoreError> {
        self.input = shown_json(&self.input);
        self.output = self.output.as_deref().map(shown_json);
        if ExecutionStatus::parse(&self.status).is_none() {
            self.cause = Some(format!("<corrupt status '{}'>", self.status));
            self.status = "FAILED".into();
        }
        self.parse()
    }

    fn parse(self) -> Result<ExecutionRecord, StoreError> {
        check_row_format(&format!("execution '{}'", self.name), self.format)?;
        Ok(ExecutionRecord {
            status: ExecutionStatus::parse(&self.status)
                .ok_or_else(|| backend(format!("unknown execution status '{}'", self.status)))?,
            input: from_text(&self.input)?,
            output: self.output.as_deref().map(from_text).transpose()?,
            name: self.name,
            workflow: self.workflow,
            error: self.error,
            cause: self.cause,
            start_time: self.start_time,
            epoch: self.epoch,
            checkpoint_seq: self.checkpoint_seq,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            owner: self.owner,
            lease_until_ms: self.lease_until_ms,
            wake_at_ms: self.wake_at_ms,
            definition_hash: self.definition_hash,
            version_id: self.version_id,
            signals: self.signals,
            redrive_count: self.redrive_count,
            redrive_date_ms: self.redrive_date_ms,
        })
    }
}

/// Makes execution `name` runnable now (a callback or event arrived for it), for a worker that
/// released it while it waited.
fn wake(conn: &Connection, name: &str, now: i64) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE executions SET signals = signals + 1, wake_at = ?2, updated_at = ?2 WHERE name = ?1",
        params![name, now],
    )
    .map_err(backend)?;
    Ok(())
}

fn get_record(conn: &Connection, name: &str) -> Result<Option<ExecutionRecord>, StoreError> {
    // Prepared once per connection: a claim, a release and every create read a record, and
    // parsing this 21-column query cost more than running it (about 80,000 instructions).
    static QUERY: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("SELECT {RECORD_COLUMNS} FROM executions WHERE name = ?1"));
    let raw = conn
        .prepare_cached(&QUERY)
        .and_then(|mut stmt| stmt.query_row([name], record_of))
        .optional()
        .map_err(backend)?;
    raw.map(|(r,)| r.parse()).transpose()
}

fn get_operations(conn: &Connection, name: &str) -> Result<Vec<Operation>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT op_id, type, subtype, name, status, starts, result, error, cause, due_at, callback_token, heartbeats,
                    format
             FROM operations WHERE execution = ?1 ORDER BY ordinal",
        )
        .map_err(backend)?;
    let rows = stmt
        .query_map([name], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, u32>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, Option<String>>(7)?,
                row.get::<_, Option<String>>(8)?,
                row.get::<_, Option<i64>>(9)?,
                row.get::<_, Option<String>>(10)?,
                row.get::<_, i64>(11)?,
                row.get::<_, i64>(12)?,
            ))
        })
        .map_err(backend)?;
    let mut out = Vec::new();
    for row in rows {
        let (
            id,
            ty,
            subtype,
            op_name,
            status,
            starts,
            result,
            error,
            cause,
            due_at_ms,
            callback_token,
            heartbeats,
            format,
        ) = row.map_err(backend)?;
        check_row_format(&format!("operation '{id}' of execution '{name}'"), format)?;
        out.push(wfc_runtime::durable::parse_operation(wfc_runtime::durable::RawOperation {
            id,
            op_type: ty,
            subtype,
            name: op_name,
            status,
            starts: i64::from(starts),
            result,
            error,
            cause,
            due_at_ms,
            callback_token,
            heartbeats,
        })?);
    }
    Ok(out)
}

fn lease_ms(lease: std::time::Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4)
}

/// Creates the execution if it is new; checks the input and version of an existing one (see
/// [`wfc_runtime::durable::check_version`]; an unpinned one is adopted here). Returns whether it existed.
/// Creates `new` with `events` in its inbox unless it exists (then adds nothing); whether it
/// existed.
fn create_with_events(
    tx: &rusqlite::Transaction<'_>,
    new: &NewExecution,
    events: &[Value],
    now: i64,
) -> Result<bool, StoreError> {
    let existed = insert_or_check(tx, new, now)?;
    if !existed {
        for event in events {
            tx.execute(
                "INSERT INTO events (execution, event, delivered_at) VALUES (?1, ?2, ?3)",
                params![new.name, to_text(event), now],
            )
            .map_err(backend)?;
        }
    }
    Ok(existed)
}

fn insert_or_check(tx: &rusqlite::Transaction<'_>, new: &NewExecution, now: i64) -> Result<bool, StoreError> {
    match get_record(tx, &new.name)? {
        Some(record) => {
            if wfc_runtime::durable::check_version(&record, new)? {
                tx.execute(
                    "UPDATE executions SET version_id = ?2 WHERE name = ?1 AND version_id IS NULL",
                    params![new.name, new.version_id],
                )
                .map_err(backend)?;
            }
            Ok(true)
        }
        None => {
            tx.execute(
                "INSERT INTO executions (name, workflow, status, input, start_time, created_at, updated_at,
                                         definition_hash, wake_at, version_id, format)
                 VALUES (?1, ?2, 'RUNNING', ?3, ?4, ?5, ?5, ?6, ?5, ?7, ?8)",
                params![
                    new.name,
                    new.workflow,
                    to_text(&new.input),
                    new.start_time,
                    now,
                    new.definition_hash,
                    new.version_id,
                    ROW_FORMAT
                ],
            )
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ConstraintViolation) => backend(format!(
                    "cannot start execution '{}': its version {} is not registered in the store ({e})",
                    new.name,
                    new.version_id.as_deref().unwrap_or("-")
                )),
                _ => backend(e),
            })?;
            Ok(false)
        }
    }
}

fn get_operation(conn: &Connection, name: &str, id: &str) -> Result<Option<Operation>, StoreError> {
    // The journals are short; reading one and picking the row keeps one parsing path.
    Ok(get_operations(conn, name)?.into_iter().find(|op| op.id == id))
}

/// The compare-and-swap that makes tokens single-use and fences older processes: it succeeds
/// only for the current (epoch, seq), and moves seq on.
fn advance_token(tx: &Connection, name: &str, token: CheckpointToken, now: i64) -> Result<CheckpointToken, StoreError> {
    let changed = cached(
        tx,
        "UPDATE executions SET checkpoint_seq = checkpoint_seq + 1, updated_at = ?4
             WHERE name = ?1 AND epoch = ?2 AND checkpoint_seq = ?3",
        params![name, token.epoch, token.seq, now],
    )
    .map_err(backend)?;
    if changed == 0 {
        return Err(match get_record(tx, name)? {
            Some(_) => StoreError::StaleToken(name.to_owned()),
            None => StoreError::NotFound(name.to_owned()),
        });
    }
    Ok(CheckpointToken { epoch: token.epoch, seq: token.seq + 1 })
}

/// Whether `token` is the execution's current one, read without writing: the answer a stale
/// writer gets ([`StoreError::StaleToken`], or [`StoreError::NotFound`]).
fn check_token(conn: &Connection, name: &str, token: CheckpointToken) -> Result<(), StoreError> {
    let current: Option<(i64, i64)> = conn
        .prepare_cached("SELECT epoch, checkpoint_seq FROM executions WHERE name = ?1")
        .and_then(|mut stmt| stmt.query_row([name], |r| Ok((r.get(0)?, r.get(1)?))))
        .optional()
        .map_err(backend)?;
    match current {
        None => Err(StoreError::NotFound(name.to_owned())),
        Some((epoch, seq)) if (epoch, seq) != (token.epoch, token.seq) => Err(StoreError::StaleToken(name.to_owned())),
        Some(_) => Ok(()),
    }
}

/// Checks a checkpoint's updates before anything is written: a finished operation is history
/// (replay reads it) and nothing may rewrite it, also an update earlier in the same batch
/// finished. Returns, for each update, whether its row exists (so it is updated, not inserted).
fn check_updates(conn: &Connection, name: &str, updates: &[OperationUpdate]) -> Result<Vec<bool>, StoreError> {
    let invalid = |message: String| StoreError::InvalidUpdate { execution: name.to_owned(), message };
    let mut existing = Vec::with_capacity(updates.len());
    for (i, update) in updates.iter().enumerate() {
        // The batch's own earlier update of the same operation is what this one finds.
        let status = match updates[..i].iter().rev().find(|u| u.id == update.id) {
            Some(earlier) => Some(earlier.status.as_str().to_owned()),
            None => conn
                .prepare_cached("SELECT status FROM operations WHERE execution = ?1 AND op_id = ?2")
                .and_then(|mut stmt| stmt.query_row([name, &update.id], |r| r.get(0)))
                .optional()
                .map_err(backend)?,
        };
        if let Some(status) = &status
            && OpStatus::parse(status).is_some_and(OpStatus::is_terminal)
        {
            return Err(invalid(format!("operation '{}' already finished ({status})", update.id)));
        }
        existing.push(status.is_some());
    }
    Ok(existing)
}

/// Writes one checked update ([`check_updates`]): `exists` says whether its row is there.
fn apply_update(
    tx: &Connection,
    name: &str,
    update: &OperationUpdate,
    result: Option<&str>,
    exists: bool,
    now: i64,
) -> Result<(), StoreError> {
    let started = i64::from(update.status == OpStatus::Started);
    let end_ts = update.status.is_terminal().then_some(now);
    if !exists {
        cached(
            tx,
            "INSERT INTO operations (execution, op_id, ordinal, type, subtype, name, status, starts, result, error,
                                     cause, due_at, start_ts, end_ts, callback_token)
             VALUES (?1, ?2, (SELECT COUNT(*) FROM operations WHERE execution = ?1), ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                     ?10, ?11, ?12, ?13, ?14)",
            params![
                name,
                update.id,
                update.op_type.as_str(),
                update.subtype,
                update.name,
                update.status.as_str(),
                started,
                result,
                update.error,
                update.cause,
                update.due_at_ms,
                now,
                end_ts,
                update.callback_token
            ],
        )
        .map_err(backend)?;
    } else {
        cached(
            tx,
            "UPDATE operations SET status = ?3, starts = starts + ?4, result = ?5, error = ?6, cause = ?7,
                    due_at = COALESCE(?8, due_at), end_ts = ?9
             WHERE execution = ?1 AND op_id = ?2",
            params![
                name,
                update.id,
                update.status.as_str(),
                started,
                result,
                update.error,
                update.cause,
                update.due_at_ms,
                end_ts
            ],
        )
        .map_err(backend)?;
    }
    for seq in wfc_runtime::durable::consumed_events(update) {
        cached(tx, "DELETE FROM events WHERE execution = ?1 AND seq = ?2", params![name, seq]).map_err(backend)?;
    }
    Ok(())
}

impl Store for SqliteStore {
    fn open_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<Claim, StoreError>> {
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let existed = insert_or_check(&tx, &new, now)?;
            // Claiming bumps the epoch: whoever held the execution before can no longer write.
            // The lease keeps workers away while this process runs it (it renews the lease).
            tx.execute(
                "UPDATE executions SET epoch = epoch + 1, updated_at = ?2, owner = 'open', lease_until = ?3,
                        wake_at = NULL
                 WHERE name = ?1 AND status = 'RUNNING'",
                params![new.name, now, now + lease_ms(wfc_runtime::durable::DEFAULT_LEASE)],
            )
            .map_err(backend)?;
            let record = get_record(&tx, &new.name)?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
            let operations = get_operations(&tx, &new.name)?;
            tx.commit().map_err(backend)?;
            let token = CheckpointToken { epoch: record.epoch, seq: record.checkpoint_seq };
            Ok(Claim { record, operations, token, existed })
        })
    }

    fn load_journal<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<Operation>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            if get_record(conn, &name)?.is_none() {
                return Err(StoreError::NotFound(name));
            }
            get_operations(conn, &name)
        })
    }

    fn checkpoint<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        self.checkpoint_with_history(name, token, updates, HistoryWrite::default())
    }

    fn checkpoint_with_history<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
        history: HistoryWrite,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        let name = name.to_owned();
        let text = match CheckpointText::new(&updates, &history) {
            Ok(text) => text,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        self.grouped(move |conn| checkpoint_in(conn, &name, token, &updates, &text))
    }

    fn finish<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        self.finish_with_history(name, token, completion, HistoryWrite::default())
    }

    fn finish_with_history<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
        history: HistoryWrite,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        self.finish_with_updates(name, token, Vec::new(), completion, history)
    }

    fn finish_with_updates<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        updates: Vec<OperationUpdate>,
        completion: Completion,
        history: HistoryWrite,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        let name = name.to_owned();
        if completion.status == ExecutionStatus::Running {
            let refused =
                StoreError::InvalidUpdate { execution: name, message: "an execution cannot finish as RUNNING".into() };
            return Box::pin(async move { Err(refused) });
        }
        // Its last updates, its history and its end in one grouped write: the finish of many
        // executions shares their checkpoints' commit.
        let text = match CheckpointText::new(&updates, &history) {
            Ok(text) => text,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let output = completion.output.as_ref().map(to_text);
        self.grouped(move |tx| {
            let next = checkpoint_in(tx, &name, token, &updates, &text)?;
            cached(
                tx,
                "UPDATE executions SET status = ?2, output = ?3, error = ?4, cause = ?5, owner = NULL,
                        lease_until = NULL, wake_at = NULL
                 WHERE name = ?1",
                params![name, completion.status.as_str(), output, completion.error, completion.cause],
            )
            .map_err(backend)?;
            Ok(next)
        })
    }

    fn list_executions(&self) -> BoxFuture<'_, Result<Vec<ExecutionRecord>, StoreError>> {
        self.call(|conn| {
            let mut stmt = conn
                .prepare(&format!("SELECT {RECORD_COLUMNS} FROM executions ORDER BY created_at DESC, name"))
                .map_err(backend)?;
            let rows = stmt.query_map([], record_of).map_err(backend)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row.map_err(backend)?.0.parse_lenient()?);
            }
            Ok(out)
        })
    }

    fn describe_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ExecutionRecord>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| get_record(conn, &name))
    }

    fn list_executions_page<'a>(
        &'a self,
        workflow: Option<&'a str>,
        status: Option<ExecutionStatus>,
        name_contains: Option<&'a str>,
        after: Option<(i64, &'a str)>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ExecutionRecord>, StoreError>> {
        let workflow = workflow.map(str::to_owned);
        let status = status.map(ExecutionStatus::as_str);
        let needle = name_contains.map(str::to_ascii_lowercase);
        let (after_at, after_name) = after.map_or((None, None), |(at, name)| (Some(at), Some(name.to_owned())));
        self.call(move |conn| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {RECORD_COLUMNS} FROM executions
                     WHERE (?1 IS NULL OR workflow = ?1) AND (?2 IS NULL OR status = ?2)
                       AND (?3 IS NULL OR instr(lower(name), ?3) > 0)
                       AND (?5 IS NULL OR created_at < ?5 OR (created_at = ?5 AND name > ?6))
                     ORDER BY created_at DESC, name LIMIT ?4"
                ))
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![workflow, status, needle, limit, after_at, after_name], record_of)
                .map_err(backend)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row.map_err(backend)?.0.parse_lenient()?);
            }
            Ok(out)
        })
    }

    fn append_history<'a>(&'a self, name: &'a str, events: Vec<HistoryEvent>) -> BoxFuture<'a, Result<(), StoreError>> {
        let name = name.to_owned();
        let history = match HistoryRows::new(&HistoryWrite { events, truncate_after: None }) {
            Ok(history) => history,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        self.grouped(move |tx| {
            // Refused before anything is written (see GroupWrite).
            if !execution_exists(tx, &name)? {
                return Err(StoreError::NotFound(name.clone()));
            }
            write_history(tx, &name, &history)
        })
    }

    fn read_history_page<'a>(
        &'a self,
        name: &'a str,
        after: u64,
        limit: usize,
        reverse: bool,
    ) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            if get_record(conn, &name)?.is_none() {
                return Err(StoreError::NotFound(name));
            }
            read_events(conn, &name, after, limit, reverse)
        })
    }

    fn read_history<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            if get_record(conn, &name)?.is_none() {
                return Err(StoreError::NotFound(name));
            }
            read_events(conn, &name, 0, usize::MAX, false)
        })
    }

    fn load_operation<'a>(
        &'a self,
        name: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Operation>, StoreError>> {
        let (name, id) = (name.to_owned(), id.to_owned());
        self.call(move |conn| get_operation(conn, &name, &id))
    }

    fn complete_callback<'a>(
        &'a self,
        token: &'a str,
        completion: CallbackCompletion,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        let token = token.to_owned();
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let execution: Option<String> = tx
                .query_row(
                    "SELECT o.execution FROM operations o JOIN executions e ON e.name = o.execution
                     WHERE o.callback_token = ?1 AND o.status = 'STARTED' AND e.status = 'RUNNING'",
                    [&token],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            let Some(execution) = execution else {
                return Err(StoreError::UnknownToken(token));
            };
            let (status, result, error, cause) = match completion {
                CallbackCompletion::Success(v) => (OpStatus::Succeeded, Some(to_text(&v)), None, None),
                CallbackCompletion::Failure { error, cause } => (OpStatus::Failed, None, Some(error), Some(cause)),
            };
            tx.execute(
                "UPDATE operations SET status = ?2, result = ?3, error = ?4, cause = ?5, end_ts = ?6
                 WHERE callback_token = ?1",
                params![token, status.as_str(), result, error, cause, now],
            )
            .map_err(backend)?;
            wake(&tx, &execution, now)?;
            tx.commit().map_err(backend)?;
            Ok(execution)
        })
    }

    fn deliver_event<'a>(&'a self, name: &'a str, event: Value) -> BoxFuture<'a, Result<i64, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let record = get_record(&tx, &name)?.ok_or_else(|| StoreError::NotFound(name.clone()))?;
            if record.status != ExecutionStatus::Running {
                return Err(wfc_runtime::durable::not_running(&record));
            }
            let seq: i64 = tx
                .query_row(
                    "INSERT INTO events (execution, event, delivered_at) VALUES (?1, ?2, ?3) RETURNING seq",
                    params![name, to_text(&event), now],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            wake(&tx, &name, now)?;
            tx.commit().map_err(backend)?;
            Ok(seq)
        })
    }

    fn load_events<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<(i64, Value)>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT seq, event, format FROM events WHERE execution = ?1 ORDER BY seq")
                .map_err(backend)?;
            let rows = stmt
                .query_map([&name], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))
                .map_err(backend)?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, text, format) = row.map_err(backend)?;
                check_row_format(&format!("inbox event {seq} of execution '{name}'"), format)?;
                out.push((seq, from_text(&text)?));
            }
            Ok(out)
        })
    }

    fn heartbeat_callback<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        let token = token.to_owned();
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let execution: Option<String> = tx
                .query_row(
                    "UPDATE operations SET heartbeats = heartbeats + 1
                     WHERE callback_token = ?1 AND status = 'STARTED' RETURNING execution",
                    [&token],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            tx.commit().map_err(backend)?;
            execution.ok_or(StoreError::UnknownToken(token))
        })
    }

    fn stop_execution<'a>(
        &'a self,
        name: &'a str,
        error: Option<String>,
        cause: Option<String>,
    ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let record = get_record(&tx, &name)?.ok_or_else(|| StoreError::NotFound(name.clone()))?;
            if record.status != ExecutionStatus::Running {
                return Ok(record);
            }
            tx.execute(
                "UPDATE executions SET status = 'ABORTED', error = ?2, cause = ?3, epoch = epoch + 1, owner = NULL,
                        lease_until = NULL, wake_at = NULL, updated_at = ?4
                 WHERE name = ?1",
                params![name, error, cause, now],
            )
            .map_err(backend)?;
            tx.execute(
                "UPDATE operations SET status = 'CANCELLED', end_ts = ?2 WHERE execution = ?1 AND status = 'STARTED'",
                params![name, now],
            )
            .map_err(backend)?;
            let record = get_record(&tx, &name)?.ok_or_else(|| StoreError::NotFound(name.clone()))?;
            // A redriven run stopped before it recorded its redrive gets it first.
            let stored = match record.redrive_count {
                0 => Vec::new(),
                _ => read_events(&tx, &record.name, 0, usize::MAX, false)?,
            };
            append_after_last(&tx, &record.name, |last| {
                let mut events: Vec<HistoryEvent> =
                    wfc_runtime::durable::cut_short_redriven_event(&record, &stored, now).into_iter().collect();
                let last = events.last().map_or(last, |e| e.id);
                events.extend(wfc_runtime::durable::aborted_events(&record, last, now));
                events
            })?;
            tx.commit().map_err(backend)?;
            Ok(record)
        })
    }

    fn redrive_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let record = get_record(&tx, &name)?.ok_or_else(|| StoreError::NotFound(name.clone()))?;
            if wfc_runtime::durable::not_redrivable(record.status).is_some() {
                return Err(wfc_runtime::durable::redrive_refused(&record));
            }
            append_after_last(&tx, &record.name, |last| {
                wfc_runtime::durable::redriven_event(&record, last, now).into_iter().collect()
            })?;
            tx.execute(
                "UPDATE executions SET status = 'RUNNING', output = NULL, error = NULL, cause = NULL, epoch = epoch + 1,
                        owner = NULL, lease_until = NULL, wake_at = ?2, updated_at = ?2,
                        redrive_count = redrive_count + 1, redrive_date = ?2
                 WHERE name = ?1",
                params![name, now],
            )
            .map_err(backend)?;
            tx.execute(wfc_runtime::durable::REDRIVE_DROP_IN_FLIGHT, params![name]).map_err(backend)?;
            tx.execute(wfc_runtime::durable::REDRIVE_REOPEN_CONTEXTS, params![name]).map_err(backend)?;
            let record = get_record(&tx, &name)?.ok_or_else(|| StoreError::NotFound(name.clone()))?;
            tx.commit().map_err(backend)?;
            Ok(record)
        })
    }

    fn create_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<(ExecutionRecord, bool), StoreError>> {
        self.create_execution_with_events(new, Vec::new())
    }

    fn create_execution_with_events(
        &self,
        new: NewExecution,
        events: Vec<Value>,
    ) -> BoxFuture<'_, Result<(ExecutionRecord, bool), StoreError>> {
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let existed = create_with_events(&tx, &new, &events, now)?;
            let record = get_record(&tx, &new.name)?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
            tx.commit().map_err(backend)?;
            Ok((record, existed))
        })
    }

    fn gather_start_event(
        &self,
        workflow: &str,
        gather: wfc_runtime::durable::StartGather,
    ) -> BoxFuture<'_, Result<Option<(ExecutionRecord, bool)>, StoreError>> {
        let workflow = workflow.to_owned();
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let stored: Option<(String, i64)> = tx
                .query_row("SELECT groups, format FROM start_groups WHERE workflow = ?1", [&workflow], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(backend)?;
            let groups = match stored {
                Some((text, format)) => {
                    check_row_format(&format!("the start groups of workflow '{workflow}'"), format)?;
                    serde_json::from_value(from_text(&text)?).map_err(|e| {
                        backend(format!("the stored start groups of workflow '{workflow}' are corrupt: {e}"))
                    })?
                }
                None => Vec::new(),
            };
            let (groups, start) = gather(groups);
            let text = serde_json::to_string(&groups).map_err(|e| backend(e.to_string()))?;
            tx.execute(
                "INSERT INTO start_groups (workflow, groups, format, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (workflow) DO UPDATE SET groups = excluded.groups, format = excluded.format,
                                                      updated_at = excluded.updated_at",
                params![workflow, text, ROW_FORMAT, now],
            )
            .map_err(backend)?;
            let created = match start {
                Some((new, events)) => {
                    let existed = create_with_events(&tx, &new, &events, now)?;
                    let record = get_record(&tx, &new.name)?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
                    Some((record, existed))
                }
                None => None,
            };
            tx.commit().map_err(backend)?;
            Ok(created)
        })
    }

    fn claim_runnable<'a>(
        &'a self,
        owner: &'a str,
        lease: std::time::Duration,
        limit: usize,
        filter: &'a ClaimFilter,
    ) -> BoxFuture<'a, Result<Vec<wfc_runtime::durable::ClaimResult>, StoreError>> {
        let owner = owner.to_owned();
        let (all, versions, workflows, unpinned) = match filter {
            ClaimFilter::All => (true, Vec::new(), Vec::new(), Vec::new()),
            ClaimFilter::Only { versions, workflows, unpinned } => {
                (false, versions.clone(), workflows.clone(), unpinned.clone())
            }
        };
        let list = |names: Vec<String>| Value::from(names).to_string();
        let (versions, workflows, unpinned) = (list(versions), list(workflows), list(unpinned));
        // Grouped: a claim shares its commit with the running executions' checkpoints. It is
        // answered at that commit, not after the log's next sync (see AnswerAt::Commit).
        self.grouped_answered_at(AnswerAt::Commit, move |tx| {
            let now = now_ms();
            let names: Vec<String> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT name FROM executions INDEXED BY executions_claim
                         WHERE status = 'RUNNING' AND COALESCE(wake_at, lease_until, 0) <= ?1
                           AND (lease_until IS NULL OR lease_until < ?1)
                           AND (wake_at IS NULL OR wake_at <= ?1)
                           AND (?3 OR version_id IN (SELECT value FROM json_each(?4))
                                OR workflow IN (SELECT value FROM json_each(?5))
                                OR (version_id IS NULL AND workflow IN (SELECT value FROM json_each(?6))))
                         ORDER BY COALESCE(wake_at, lease_until, 0), created_at LIMIT ?2",
                    )
                    .map_err(backend)?;
                let rows = stmt
                    .query_map(
                        params![now, i64::try_from(limit).unwrap_or(i64::MAX), all, versions, workflows, unpinned],
                        |r| r.get(0),
                    )
                    .map_err(backend)?;
                rows.collect::<Result<_, _>>().map_err(backend)?
            };
            let mut claims = Vec::new();
            for name in names {
                cached(
                    tx,
                    "UPDATE executions SET epoch = epoch + 1, owner = ?2, lease_until = ?3, wake_at = NULL,
                            updated_at = ?4
                     WHERE name = ?1",
                    params![name, owner, now + lease_ms(lease), now],
                )
                .map_err(backend)?;
                let loaded = get_record(tx, &name).and_then(|record| {
                    let record = record.ok_or_else(|| StoreError::NotFound(name.clone()))?;
                    let operations = get_operations(tx, &name)?;
                    let token = CheckpointToken { epoch: record.epoch, seq: record.checkpoint_seq };
                    Ok(Claim { record, operations, token, existed: true })
                });
                claims.push(loaded.map_err(|e| (name, e)));
            }
            Ok(claims)
        })
    }

    fn renew_lease<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        owner: &'a str,
        lease: std::time::Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let (name, owner) = (name.to_owned(), owner.to_owned());
        // Grouped: the leases of a process's executions are renewed in the commits they share.
        self.grouped(move |conn| {
            let now = now_ms();
            // Matched on the epoch alone: an execution this hold just finished keeps its epoch
            // (no error), while a stop or a takeover moves it on (fenced). A released execution
            // (no lease) keeps its epoch too, and a renewal that races the release must not take
            // it back: only a held lease is extended.
            let changed = cached(
                conn,
                "UPDATE executions SET lease_until = CASE WHEN status = 'RUNNING' AND lease_until IS NOT NULL THEN ?4 END,
                        owner = CASE WHEN status = 'RUNNING' AND lease_until IS NOT NULL THEN ?3 END
                 WHERE name = ?1 AND epoch = ?2",
                params![name, epoch, owner, now + lease_ms(lease)],
            )
            .map_err(backend)?;
            if changed == 0 { Err(StoreError::StaleToken(name.clone())) } else { Ok(()) }
        })
    }

    fn release<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        wake_at_ms: Option<i64>,
        signals_seen: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let name = name.to_owned();
        self.grouped(move |tx| {
            let record = get_record(tx, &name)?.ok_or_else(|| StoreError::NotFound(name.clone()))?;
            if record.epoch != epoch {
                return Err(StoreError::StaleToken(name.clone()));
            }
            let wake = if record.signals != signals_seen { now_ms() } else { wake_at_ms.unwrap_or(i64::MAX) };
            cached(
                tx,
                "UPDATE executions SET owner = NULL, lease_until = NULL, wake_at = ?3 WHERE name = ?1 AND epoch = ?2",
                params![name, epoch, wake],
            )
            .map_err(backend)?;
            Ok(())
        })
    }

    fn fail_execution<'a>(
        &'a self,
        name: &'a str,
        error: &'a str,
        cause: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let (name, error, cause) = (name.to_owned(), error.to_owned(), cause.to_owned());
        self.call(move |conn| {
            conn.execute(
                "UPDATE executions SET status = 'FAILED', error = ?2, cause = ?3, epoch = epoch + 1, owner = NULL,
                        lease_until = NULL, wake_at = NULL, updated_at = ?4
                 WHERE name = ?1 AND status = 'RUNNING'",
                params![name, error, cause, now_ms()],
            )
            .map_err(backend)?;
            Ok(())
        })
    }

    fn put_version(&self, version: WorkflowVersion, current_if_new: bool) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.call(move |conn| {
            let d = &version.definition;
            let passes = Value::from(d.passes.clone()).to_string();
            let siblings = serde_json::to_string(&d.siblings).map_err(backend)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let inserted = tx
                .execute(
                    "INSERT OR IGNORE INTO workflow_versions (version_id, workflow, origin, source, language, syntax,
                                                              passes, siblings, legacy_hash, format, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    params![
                        version.version_id,
                        d.workflow,
                        d.origin,
                        d.source,
                        d.language.as_str(),
                        d.syntax.as_str(),
                        passes,
                        siblings,
                        version.legacy_hash,
                        ROW_FORMAT,
                        version.created_at_ms
                    ],
                )
                .map_err(backend)?
                == 1;
            if inserted && current_if_new {
                // A version seen for the first time is the newest deploy: new executions start on it.
                tx.execute(
                    "INSERT INTO workflows (name, current_version, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (name) DO UPDATE SET current_version = ?2, updated_at = ?3",
                    params![d.workflow, version.version_id, version.created_at_ms],
                )
                .map_err(backend)?;
            }
            tx.commit().map_err(backend)?;
            Ok(inserted)
        })
    }

    fn get_version<'a>(&'a self, version_id: &'a str) -> BoxFuture<'a, Result<Option<WorkflowVersion>, StoreError>> {
        let id = version_id.to_owned();
        self.call(move |conn| {
            let sql = format!("SELECT {VERSION_COLUMNS} FROM workflow_versions WHERE version_id = ?1");
            let raw = conn.query_row(&sql, [&id], raw_version).optional().map_err(backend)?;
            raw.map(wfc_runtime::durable::registry::parse_version).transpose()
        })
    }

    fn list_versions<'a>(
        &'a self,
        workflow: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<WorkflowVersion>, StoreError>> {
        let workflow = workflow.map(str::to_owned);
        self.call(move |conn| {
            let sql = format!(
                "SELECT {VERSION_COLUMNS} FROM workflow_versions WHERE ?1 IS NULL OR workflow = ?1
                 ORDER BY created_at DESC, version_id"
            );
            let mut stmt = conn.prepare(&sql).map_err(backend)?;
            let rows = stmt.query_map([&workflow], raw_version).map_err(backend)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(wfc_runtime::durable::registry::parse_version(row.map_err(backend)?)?);
            }
            Ok(out)
        })
    }

    fn current_version<'a>(&'a self, workflow: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let workflow = workflow.to_owned();
        self.call(move |conn| {
            conn.query_row("SELECT current_version FROM workflows WHERE name = ?1", [&workflow], |r| r.get(0))
                .optional()
                .map_err(backend)
        })
    }

    fn set_current_version<'a>(
        &'a self,
        workflow: &'a str,
        version_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let (workflow, id) = (workflow.to_owned(), version_id.to_owned());
        self.call(move |conn| {
            conn.execute(
                "INSERT INTO workflows (name, current_version, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET current_version = ?2, updated_at = ?3",
                params![workflow, id, now_ms()],
            )
            .map_err(backend)?;
            Ok(())
        })
    }

    fn replace_current_version<'a>(
        &'a self,
        workflow: &'a str,
        expected: Option<&'a str>,
        version_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let (workflow, expected, id) = (workflow.to_owned(), expected.map(str::to_owned), version_id.to_owned());
        self.call(move |conn| {
            let changed = match expected {
                None => conn.execute(
                    "INSERT INTO workflows (name, current_version, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (name) DO NOTHING",
                    params![workflow, id, now_ms()],
                ),
                Some(expected) => conn.execute(
                    "UPDATE workflows SET current_version = ?2, updated_at = ?3 WHERE name = ?1 AND current_version = ?4",
                    params![workflow, id, now_ms(), expected],
                ),
            }
            .map_err(backend)?;
            Ok(changed == 1)
        })
    }

    fn kv_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        let key = key.to_owned();
        self.call(move |conn| {
            let row: Option<(String, i64)> = conn
                .prepare_cached("SELECT value, format FROM kv WHERE key = ?1")
                .and_then(|mut s| s.query_row([&key], |r| Ok((r.get(0)?, r.get(1)?))).optional())
                .map_err(backend)?;
            row.map(|(value, format)| kv_value(&key, &value, format)).transpose()
        })
    }

    fn kv_put<'a>(&'a self, key: &'a str, value: Value) -> BoxFuture<'a, Result<(), StoreError>> {
        let key = key.to_owned();
        self.call(move |conn| {
            conn.prepare_cached(
                "INSERT INTO kv (key, value, format, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (key) DO UPDATE SET value = ?2, format = ?3, updated_at = ?4",
            )
            .and_then(|mut s| s.execute(params![key, value.to_string(), ROW_FORMAT, now_ms()]))
            .map_err(backend)?;
            Ok(())
        })
    }

    fn kv_replace<'a>(
        &'a self,
        key: &'a str,
        expected: Option<&'a Value>,
        value: Value,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let (key, expected) = (key.to_owned(), expected.cloned());
        self.call(move |conn| {
            // Read and written in one immediate transaction: no other writer in between, in
            // this process or another on the same file.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let row: Option<(String, i64)> = tx
                .prepare_cached("SELECT value, format FROM kv WHERE key = ?1")
                .and_then(|mut s| s.query_row([&key], |r| Ok((r.get(0)?, r.get(1)?))).optional())
                .map_err(backend)?;
            let current = row.map(|(value, format)| kv_value(&key, &value, format)).transpose()?;
            if current != expected {
                return Ok(false);
            }
            tx.prepare_cached(
                "INSERT INTO kv (key, value, format, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (key) DO UPDATE SET value = ?2, format = ?3, updated_at = ?4",
            )
            .and_then(|mut s| s.execute(params![key, value.to_string(), ROW_FORMAT, now_ms()]))
            .map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(true)
        })
    }

    fn kv_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let key = key.to_owned();
        self.call(move |conn| {
            let deleted = conn
                .prepare_cached("DELETE FROM kv WHERE key = ?1")
                .and_then(|mut s| s.execute([&key]))
                .map_err(backend)?;
            Ok(deleted == 1)
        })
    }

    fn kv_list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<(String, Value)>, StoreError>> {
        let (prefix, end) = (prefix.to_owned(), wfc_runtime::durable::kv_prefix_end(prefix));
        self.call(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT key, value, format FROM kv WHERE key >= ?1 AND key < ?2 ORDER BY key")
                .map_err(backend)?;
            let rows = stmt
                .query_map([&prefix, &end], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?)))
                .map_err(backend)?;
            let mut out = Vec::new();
            for row in rows {
                let (key, value, format) = row.map_err(backend)?;
                let value = kv_value(&key, &value, format)?;
                out.push((key, value));
            }
            Ok(out)
        })
    }

    fn kv_signal<'a>(&'a self, topic: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let topic = topic.to_owned();
        let write = self.call(move |conn| signals::insert_signal(conn, &topic, now_ms()).map_err(backend));
        Box::pin(async move {
            write.await?;
            if let Some(Some(signals)) = self.signals.get() {
                signals.sent();
            }
            Ok(())
        })
    }

    fn kv_signals(&self) -> BoxFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>> {
        Box::pin(async move {
            if let Some(signals) = self.signals.get() {
                return signals.as_ref().map(signals::Signals::subscribe);
            }
            let found = self.call(|conn| {
                let path = conn.path().filter(|p| !p.is_empty()).map(std::path::PathBuf::from);
                Ok((signals::last_signal(conn).map_err(backend)?, path))
            });
            let (last, path) = match found.await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the store's signals; reading it from time to time");
                    return None;
                }
            };
            let conn = Arc::clone(&self.conn);
            let started = self.signals.get_or_init(|| match signals::Signals::start(conn, path.as_deref(), last) {
                Ok(signals) => Some(signals),
                Err(e) => {
                    tracing::warn!(error = %e, "no signals between the processes on the store; reading it from time to time");
                    None
                }
            });
            started.as_ref().map(signals::Signals::subscribe)
        })
    }

    fn pin_execution<'a>(
        &'a self,
        name: &'a str,
        to: &'a str,
        guard: &'a PinGuard,
    ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        let (name, to, guard) = (name.to_owned(), to.to_owned(), guard.clone());
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let changed = tx
                .execute(
                    "UPDATE executions SET version_id = ?3, updated_at = ?5,
                            wake_at = CASE WHEN ?4 IS NULL THEN ?5 ELSE wake_at END
                     WHERE name = ?1 AND status = 'RUNNING' AND version_id IS ?2
                       AND ((?4 IS NULL AND (lease_until IS NULL OR lease_until < ?5)) OR epoch = ?4)
                       AND (?6 IS NULL OR checkpoint_seq = ?6)",
                    params![name, guard.from, to, guard.held_epoch, now, guard.checkpoint_seq],
                )
                .map_err(backend)?;
            let record = get_record(&tx, &name)?;
            if changed == 0 {
                return Err(wfc_runtime::durable::pin_refused(record.as_ref(), &name, &guard, now));
            }
            tx.commit().map_err(backend)?;
            record.ok_or(StoreError::NotFound(name))
        })
    }
}

/// A key/value row's value, read back.
fn kv_value(key: &str, value: &str, format: i64) -> Result<Value, StoreError> {
    check_row_format(&format!("key/value row '{key}'"), format)?;
    serde_json::from_str(value).map_err(|e| backend(format!("key/value row '{key}' is corrupt: {e}")))
}

const VERSION_COLUMNS: &str =
    "version_id, workflow, origin, source, language, syntax, passes, siblings, legacy_hash, format, created_at";

fn raw_version(row: &Row<'_>) -> rusqlite::Result<wfc_runtime::durable::registry::RawVersion> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
        row.get(9)?,
        row.get(10)?,
    ))
}
