//! [`SqliteStore`]: the embedded store. One file, WAL mode, one connection used by one blocking
//! thread at a time (so `BEGIN IMMEDIATE` never waits on itself), schema migrations versioned in
//! code through `PRAGMA user_version`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use serde_json::Value;

use super::{
    CheckpointToken, Claim, Completion, ExecutionRecord, ExecutionStatus, NewExecution, OpStatus, OpType, Operation,
    OperationUpdate, Store, StoreError,
};
use crate::HistoryEvent;

/// How hard each commit is pushed to disk (SQLite's `synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is fsynced: durable through an OS crash or power loss. The default.
    Full,
    /// Commits survive a process crash (kill -9) but the last ones may roll back on power loss.
    /// Much faster; for development and for workloads that can redo the last steps.
    Normal,
}

/// The schema, one entry per version: `MIGRATIONS[i]` takes `user_version` from `i` to `i + 1`.
/// Append only; never edit a released entry.
const MIGRATIONS: &[&str] = &[r#"
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
"#];

/// A [`Store`] in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
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
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(backend)?;
        // WAL: readers do not block the writer, and a commit is one append to the log.
        conn.pragma_update(None, "journal_mode", "WAL").map_err(backend)?;
        conn.pragma_update(None, "synchronous", sync).map_err(backend)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(backend)?;
        migrate(&mut conn)?;
        Ok(SqliteStore { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Runs `f` on the connection on tokio's blocking pool, so no async thread ever waits on
    /// the disk. (`spawn_blocking` also keeps a paused virtual clock from jumping meanwhile.)
    fn call<T, F>(&self, f: F) -> BoxFuture<'static, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
                f(&mut guard)
            })
            .await
            .map_err(|e| backend(format!("the store thread failed: {e}")))?
        })
    }
}

/// Brings the schema to the latest version in one IMMEDIATE transaction: the version is read
/// under the write lock, so two processes opening a new file at once cannot both migrate it.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(backend)?;
    let latest = MIGRATIONS.len() as i64;
    if version > latest {
        return Err(backend(format!(
            "the store has schema version {version}, newer than this wfc understands ({latest})"
        )));
    }
    if version == latest {
        return Ok(());
    }
    for sql in MIGRATIONS.iter().skip(usize::try_from(version).unwrap_or(0)) {
        tx.execute_batch(sql).map_err(backend)?;
    }
    tx.pragma_update(None, "user_version", latest).map_err(backend)?;
    tx.commit().map_err(backend)
}

const RECORD_COLUMNS: &str =
    "name, workflow, status, input, output, error, cause, start_time, epoch, checkpoint_seq, created_at, updated_at";

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
}

impl ExecutionRecordRaw {
    fn parse(self) -> Result<ExecutionRecord, StoreError> {
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
        })
    }
}

fn get_record(conn: &Connection, name: &str) -> Result<Option<ExecutionRecord>, StoreError> {
    let raw = conn
        .query_row(&format!("SELECT {RECORD_COLUMNS} FROM executions WHERE name = ?1"), [name], record_of)
        .optional()
        .map_err(backend)?;
    raw.map(|(r,)| r.parse()).transpose()
}

fn get_operations(conn: &Connection, name: &str) -> Result<Vec<Operation>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT op_id, type, subtype, name, status, starts, result, error, cause, due_at
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
            ))
        })
        .map_err(backend)?;
    let mut out = Vec::new();
    for row in rows {
        let (id, ty, subtype, op_name, status, starts, result, error, cause, due_at_ms) = row.map_err(backend)?;
        out.push(Operation {
            op_type: OpType::parse(&ty).ok_or_else(|| backend(format!("unknown operation type '{ty}'")))?,
            status: OpStatus::parse(&status).ok_or_else(|| backend(format!("unknown operation status '{status}'")))?,
            result: result.as_deref().map(from_text).transpose()?,
            id,
            subtype,
            name: op_name,
            starts,
            error,
            cause,
            due_at_ms,
        });
    }
    Ok(out)
}

/// The compare-and-swap that makes tokens single-use and fences older processes: it succeeds
/// only for the current (epoch, seq), and moves seq on.
fn advance_token(
    tx: &rusqlite::Transaction<'_>,
    name: &str,
    token: CheckpointToken,
    now: i64,
) -> Result<CheckpointToken, StoreError> {
    let changed = tx
        .execute(
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

fn apply_update(
    tx: &rusqlite::Transaction<'_>,
    name: &str,
    update: &OperationUpdate,
    now: i64,
) -> Result<(), StoreError> {
    let invalid = |message: String| StoreError::InvalidUpdate { execution: name.to_owned(), message };
    let existing: Option<String> = tx
        .query_row("SELECT status FROM operations WHERE execution = ?1 AND op_id = ?2", [name, &update.id], |r| {
            r.get(0)
        })
        .optional()
        .map_err(backend)?;
    // A finished operation is history: replay reads it, nothing may rewrite it.
    if let Some(status) = &existing
        && OpStatus::parse(status).is_some_and(OpStatus::is_terminal)
    {
        return Err(invalid(format!("operation '{}' already finished ({status})", update.id)));
    }
    let result = update.result.as_ref().map(to_text);
    let started = i64::from(update.status == OpStatus::Started);
    let end_ts = update.status.is_terminal().then_some(now);
    if existing.is_none() {
        tx.execute(
            "INSERT INTO operations (execution, op_id, ordinal, type, subtype, name, status, starts, result, error,
                                     cause, due_at, start_ts, end_ts)
             VALUES (?1, ?2, (SELECT COUNT(*) FROM operations WHERE execution = ?1), ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                     ?10, ?11, ?12, ?13)",
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
                end_ts
            ],
        )
        .map_err(backend)?;
    } else {
        tx.execute(
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
    Ok(())
}

impl Store for SqliteStore {
    fn open_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<Claim, StoreError>> {
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let existed = match get_record(&tx, &new.name)? {
                Some(record) => {
                    if record.input != new.input {
                        return Err(StoreError::InputMismatch(new.name));
                    }
                    true
                }
                None => {
                    tx.execute(
                        "INSERT INTO executions (name, workflow, status, input, start_time, created_at, updated_at)
                         VALUES (?1, ?2, 'RUNNING', ?3, ?4, ?5, ?5)",
                        params![new.name, new.workflow, to_text(&new.input), new.start_time, now],
                    )
                    .map_err(backend)?;
                    false
                }
            };
            // Claiming bumps the epoch: whoever held the execution before can no longer write.
            tx.execute(
                "UPDATE executions SET epoch = epoch + 1, updated_at = ?2 WHERE name = ?1",
                params![new.name, now],
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
        let name = name.to_owned();
        self.call(move |conn| {
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let next = advance_token(&tx, &name, token, now)?;
            for update in &updates {
                apply_update(&tx, &name, update, now)?;
            }
            // Dropping the transaction on any error above rolls the whole batch back.
            tx.commit().map_err(backend)?;
            Ok(next)
        })
    }

    fn finish<'a>(
        &'a self,
        name: &'a str,
        token: CheckpointToken,
        completion: Completion,
    ) -> BoxFuture<'a, Result<CheckpointToken, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            if completion.status == ExecutionStatus::Running {
                return Err(StoreError::InvalidUpdate {
                    execution: name,
                    message: "an execution cannot finish as RUNNING".into(),
                });
            }
            let now = now_ms();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let next = advance_token(&tx, &name, token, now)?;
            tx.execute(
                "UPDATE executions SET status = ?2, output = ?3, error = ?4, cause = ?5 WHERE name = ?1",
                params![
                    name,
                    completion.status.as_str(),
                    completion.output.as_ref().map(to_text),
                    completion.error,
                    completion.cause
                ],
            )
            .map_err(backend)?;
            tx.commit().map_err(backend)?;
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
                out.push(row.map_err(backend)?.0.parse()?);
            }
            Ok(out)
        })
    }

    fn describe_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ExecutionRecord>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| get_record(conn, &name))
    }

    fn append_history<'a>(&'a self, name: &'a str, events: Vec<HistoryEvent>) -> BoxFuture<'a, Result<(), StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            {
                let mut stmt = tx
                    .prepare_cached("INSERT OR REPLACE INTO history (execution, event_id, event) VALUES (?1, ?2, ?3)")
                    .map_err(backend)?;
                for event in &events {
                    let text = serde_json::to_string(event).map_err(backend)?;
                    let id = i64::try_from(event.id).map_err(backend)?;
                    stmt.execute(params![name, id, text]).map_err(backend)?;
                }
            }
            tx.commit().map_err(backend)
        })
    }

    fn read_history<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>> {
        let name = name.to_owned();
        self.call(move |conn| {
            if get_record(conn, &name)?.is_none() {
                return Err(StoreError::NotFound(name));
            }
            let mut stmt =
                conn.prepare("SELECT event FROM history WHERE execution = ?1 ORDER BY event_id").map_err(backend)?;
            let rows = stmt.query_map([&name], |r| r.get::<_, String>(0)).map_err(backend)?;
            let mut out = Vec::new();
            for row in rows {
                let text = row.map_err(backend)?;
                out.push(serde_json::from_str(&text).map_err(|e| backend(format!("a stored event is corrupt: {e}")))?);
            }
            Ok(out)
        })
    }
}
