//! [`PgStore`]: the store for many worker processes and machines, on PostgreSQL.
//!
//! The schema has the same shape as SQLite's (JSON kept as text, times as milliseconds). Workers
//! claim runnable executions with `FOR UPDATE SKIP LOCKED` and a lease; every claim bumps the
//! execution's fencing epoch, and every checkpoint is guarded by `(epoch, seq)`, so a worker that
//! lost its lease (a zombie) has its next write rejected. `NOTIFY wfc_work` is sent when work
//! becomes runnable (a new execution, an answered callback, a release); workers `LISTEN` on a
//! connection of their own and poll as a fallback.
//!
//! The crate is `tokio-postgres`: it is async (no thread per connection), it is the driver the
//! Rust ecosystem builds on (deadpool, bb8, sqlx's benchmarks), and it exposes asynchronous
//! notifications (`Connection::poll_message`), which LISTEN/NOTIFY needs.

mod pg_tls;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{Mutex, Notify, OnceCell};
use tokio_postgres::{AsyncMessage, Client, GenericClient, Row};

use wfc_runtime::HistoryEvent;
use wfc_runtime::durable::migrations::{Migration, ROW_FORMAT, check_row_format};
use wfc_runtime::durable::registry::WorkflowVersion;
use wfc_runtime::durable::{
    CallbackCompletion, CheckpointToken, Claim, ClaimFilter, Completion, ExecutionRecord, ExecutionStatus,
    HistoryWrite, NewExecution, OpStatus, Operation, OperationUpdate, PinGuard, RawOperation, Store, StoreError,
};

/// The schema, one entry per version (append only; see [`wfc_runtime::durable::migrations`]), tracked in
/// `wfc_schema` (the version) and `wfc_migrations` (each migration applied).
const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "executions, operations, history, callbacks, leases",
        sql: r#"
CREATE TABLE executions (
    name            TEXT PRIMARY KEY,
    workflow        TEXT NOT NULL,
    status          TEXT NOT NULL,
    input           TEXT NOT NULL,
    output          TEXT,
    error           TEXT,
    cause           TEXT,
    start_time      TEXT NOT NULL,
    epoch           BIGINT NOT NULL DEFAULT 0,
    checkpoint_seq  BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    owner           TEXT,
    lease_until     BIGINT,
    wake_at         BIGINT,
    definition_hash TEXT,
    signals         BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX executions_status ON executions(status);
CREATE INDEX executions_runnable ON executions(wake_at) WHERE status = 'RUNNING';
CREATE TABLE operations (
    execution      TEXT NOT NULL REFERENCES executions(name),
    op_id          TEXT NOT NULL,
    ordinal        BIGINT NOT NULL,
    type           TEXT NOT NULL,
    subtype        TEXT NOT NULL,
    name           TEXT NOT NULL,
    status         TEXT NOT NULL,
    starts         BIGINT NOT NULL DEFAULT 0,
    result         TEXT,
    error          TEXT,
    cause          TEXT,
    due_at         BIGINT,
    start_ts       BIGINT,
    end_ts         BIGINT,
    callback_token TEXT,
    heartbeats     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (execution, op_id)
);
CREATE UNIQUE INDEX operations_callback ON operations(callback_token) WHERE callback_token IS NOT NULL;
CREATE TABLE history (
    execution TEXT NOT NULL REFERENCES executions(name),
    event_id  BIGINT NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY (execution, event_id)
);
"#,
    },
    Migration {
        description: "the Serverless Workflow event inbox",
        sql: r#"
CREATE TABLE events (
    seq          BIGSERIAL PRIMARY KEY,
    execution    TEXT NOT NULL REFERENCES executions(name),
    event        TEXT NOT NULL,
    delivered_at BIGINT NOT NULL
);
CREATE INDEX events_execution ON events(execution, seq);
"#,
    },
    Migration {
        description: "workflow versions (the registry), executions pinned to a version, row formats",
        sql: r#"
CREATE TABLE wfc_migrations (
    version     BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at  BIGINT NOT NULL
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
    format      BIGINT NOT NULL DEFAULT 1,
    created_at  BIGINT NOT NULL
);
CREATE INDEX workflow_versions_workflow ON workflow_versions(workflow, created_at);
CREATE TABLE workflows (
    name            TEXT PRIMARY KEY,
    current_version TEXT NOT NULL REFERENCES workflow_versions(version_id),
    updated_at      BIGINT NOT NULL
);
ALTER TABLE executions ADD COLUMN version_id TEXT REFERENCES workflow_versions(version_id);
ALTER TABLE executions ADD COLUMN format BIGINT NOT NULL DEFAULT 1;
ALTER TABLE operations ADD COLUMN format BIGINT NOT NULL DEFAULT 1;
ALTER TABLE history ADD COLUMN format BIGINT NOT NULL DEFAULT 1;
ALTER TABLE events ADD COLUMN format BIGINT NOT NULL DEFAULT 1;
"#,
    },
    Migration {
        description: "the events gathered towards event-started instances (non-exclusive start states)",
        sql: r#"
CREATE TABLE start_groups (
    workflow   TEXT PRIMARY KEY,
    groups     TEXT NOT NULL,
    format     BIGINT NOT NULL DEFAULT 1,
    updated_at BIGINT NOT NULL
);
"#,
    },
    Migration {
        description: "redrives of executions (RedriveExecution): their count and last date",
        sql: r#"
ALTER TABLE executions ADD COLUMN redrive_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN redrive_date BIGINT;
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
        description: "one-statement checkpoints and finishes (wfc_commit), for group commits",
        sql: COMMIT_FUNCTION,
    },
    Migration {
        description: "a key/value table for what servers share beyond executions (activity task queues, client tokens)",
        // Keys compare bytewise (the "C" collation), so a prefix is a key range on the index.
        sql: r#"
CREATE TABLE kv (
    key        TEXT COLLATE "C" PRIMARY KEY,
    value      TEXT NOT NULL,
    format     BIGINT NOT NULL DEFAULT 1,
    updated_at BIGINT NOT NULL
);
"#,
    },
    Migration {
        description: "a group commit as one statement (wfc_commit_group); room on each page for HOT updates",
        sql: COMMIT_GROUP_FUNCTION,
    },
    Migration {
        description: "history in one row per commit (a JSON array of consecutive events) instead of one per event",
        sql: HISTORY_BATCHES,
    },
    Migration {
        description: "operation ordinals from a sequence; a checkpoint's operations in one upsert",
        sql: OPERATION_ORDINALS,
    },
];

/// `wfc_commit`: one checkpoint, or an execution's finish, as **one statement** (a call of this
/// function), so a group of them is sent pipelined in one transaction (see [`GroupCommitter`]).
/// It does what `advance_token`, `apply_update` and `write_history` do in as many round trips:
/// - it first locks the batch's operation rows that exist and returns `finished <message>`
///   (writing nothing) when one of them already finished: a finished operation is history,
///   nothing may rewrite it (a callback answered meanwhile). Locking them before the execution's
///   row keeps `complete_callback`'s lock order (operation, then execution);
/// - then the compare-and-swap of the token: `stale` or `not found` (nothing written) unless
///   `(epoch, seq)` is current;
/// - then each update in order (an operation updated twice in one batch, a CONTEXT's start and
///   end, sees its first update), the consumed inbox events, the history (the replaced tail
///   first), and with `p_finish` the execution's end. It returns `ok`.
///
/// A finished operation met inside the loop (an operation finished and updated again in the
/// same batch) raises `WF001`: the statement fails, so the group falls back to one transaction
/// per write and that write alone is refused. No EXCEPTION block: each would be a
/// subtransaction, and a group of them overflows PostgreSQL's per-backend subtransaction cache.
const COMMIT_FUNCTION: &str = r#"
CREATE OR REPLACE FUNCTION wfc_commit(
    p_name TEXT, p_epoch BIGINT, p_seq BIGINT, p_now BIGINT,
    p_ids TEXT[], p_types TEXT[], p_subtypes TEXT[], p_names TEXT[], p_statuses TEXT[],
    p_results TEXT[], p_errors TEXT[], p_causes TEXT[], p_due BIGINT[], p_tokens TEXT[],
    p_consumed BIGINT[], p_truncate BIGINT, p_event_ids BIGINT[], p_events TEXT[],
    p_finish TEXT, p_output TEXT, p_error TEXT, p_cause TEXT
) RETURNS TEXT LANGUAGE plpgsql AS $fn$
DECLARE
    i INTEGER;
    found_id TEXT;
    found_status TEXT;
    existing TEXT;
BEGIN
    FOR found_id, found_status IN
        SELECT op_id, status FROM operations WHERE execution = p_name AND op_id = ANY(p_ids) ORDER BY op_id FOR UPDATE
    LOOP
        IF found_status IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED') THEN
            RETURN format('finished operation ''%s'' already finished (%s)', found_id, found_status);
        END IF;
    END LOOP;
    UPDATE executions SET checkpoint_seq = checkpoint_seq + 1, updated_at = p_now
     WHERE name = p_name AND epoch = p_epoch AND checkpoint_seq = p_seq;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM executions WHERE name = p_name) THEN
            RETURN 'stale';
        END IF;
        RETURN 'not found';
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        SELECT status INTO existing FROM operations WHERE execution = p_name AND op_id = p_ids[i];
        IF NOT FOUND THEN
            INSERT INTO operations (execution, op_id, ordinal, type, subtype, name, status, starts, result, error,
                                    cause, due_at, start_ts, end_ts, callback_token)
            VALUES (p_name, p_ids[i], (SELECT COUNT(*) FROM operations WHERE execution = p_name), p_types[i],
                    p_subtypes[i], p_names[i], p_statuses[i], CASE WHEN p_statuses[i] = 'STARTED' THEN 1 ELSE 0 END,
                    p_results[i], p_errors[i], p_causes[i], p_due[i], p_now,
                    CASE WHEN p_statuses[i] = 'STARTED' THEN NULL ELSE p_now END, p_tokens[i]);
        ELSIF existing IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED') THEN
            RAISE EXCEPTION USING ERRCODE = 'WF001',
                MESSAGE = format('operation ''%s'' already finished (%s)', p_ids[i], existing);
        ELSE
            UPDATE operations SET status = p_statuses[i],
                   starts = starts + CASE WHEN p_statuses[i] = 'STARTED' THEN 1 ELSE 0 END,
                   result = p_results[i], error = p_errors[i], cause = p_causes[i],
                   due_at = COALESCE(p_due[i], due_at),
                   end_ts = CASE WHEN p_statuses[i] = 'STARTED' THEN NULL ELSE p_now END
             WHERE execution = p_name AND op_id = p_ids[i];
        END IF;
    END LOOP;
    IF coalesce(array_length(p_consumed, 1), 0) > 0 THEN
        DELETE FROM events WHERE execution = p_name AND seq = ANY(p_consumed);
    END IF;
    IF p_truncate IS NOT NULL THEN
        DELETE FROM history WHERE execution = p_name AND event_id > p_truncate;
    END IF;
    IF coalesce(array_length(p_event_ids, 1), 0) > 0 THEN
        INSERT INTO history (execution, event_id, event)
        SELECT p_name, e.id, e.body FROM unnest(p_event_ids, p_events) AS e(id, body)
        ON CONFLICT (execution, event_id) DO UPDATE SET event = EXCLUDED.event;
    END IF;
    IF p_finish IS NOT NULL THEN
        UPDATE executions SET status = p_finish, output = p_output, error = p_error, cause = p_cause, owner = NULL,
               lease_until = NULL, wake_at = NULL
         WHERE name = p_name;
    END IF;
    RETURN 'ok';
END
$fn$;
"#;

/// `wfc_commit_group`: a whole group commit (see [`GroupCommitter`]) as **one statement**: every
/// checkpoint and finish of the group, and its lease renewals, written set-wise (a statement per
/// kind of row for the whole group, where `wfc_commit` ran about six per checkpoint). Each
/// checkpoint `i` (the `c_` arrays; its operation updates, consumed inbox events and history
/// events are the `o_`, `e_` and `h_` arrays' entries whose `_cp` is `i`) is refused or written
/// **alone**, as `wfc_commit` does it, and `answers[i]` says which:
/// - first the operations the group updates are locked (in `(execution, op_id)` order: the lock
///   order of `complete_callback`, operation then execution); a checkpoint that updates one that
///   already finished is refused, `finished <message>`, without writing;
/// - then the compare-and-swap of every other checkpoint's token in one `UPDATE` (with its end,
///   for a finish): `stale` or `not found` unless `(epoch, seq)` is current. `c_invalid` is the
///   refusal the client found in the checkpoint itself (an operation updated again after it
///   finished in the same batch: `wfc_commit` raised `WF001` there), answered when the token is
///   current, so the refusals come in `wfc_commit`'s order;
/// - then, for the checkpoints written (`ok`), their operations (one update per operation id: the
///   client merged an operation's updates within a checkpoint, `o_starts` counting its
///   `STARTED`s; existing rows updated, new rows inserted numbered after the execution's
///   others), consumed events, the replaced history tail (`c_truncate`, NULL when none) and
///   history events;
/// - then the renewals, matched on the epoch alone (see the renewal statement of `wfc_commit`'s
///   committer); `renewed` names those renewed.
///
/// A group holds one write per execution (the committer keeps a second for the next group), so
/// no row is written twice by one statement. The plans are nested loops over the arrays into the
/// tables' primary keys, whatever the tables' statistics say: on a new store (empty tables, not
/// yet analyzed) the planner would otherwise pick sequential scans and, its plans being cached
/// for the session, keep them as the tables grow. They are generic (planned once per session).
///
/// The migration also leaves room in each new page of `executions` and `operations`
/// (`fillfactor`) so an update of a row can stay on its page (a HOT update: no new index
/// entries), and replaces the index of runnable executions by one in the claim's order: by the
/// instant a running execution is due, `COALESCE(wake_at, lease_until, 0)` (its timer or wake-up;
/// a held one's lease expiry, when it may be rescued; 0 for neither), then creation. A claim
/// reads the due ones from the index's start and stops there, instead of scanning and sorting
/// every row (or, ordered by `wake_at` alone, reading past every execution in flight, whose
/// `wake_at` is NULL). A claim is a function, `wfc_claim`, for its plan: one generic plan per
/// session reading that index (`COALESCE(wake_at, lease_until, 0) <= p_now` follows from the
/// two conditions after it; it is what lets the scan stop at the first execution not yet due),
/// where the claim as a prepared statement was planned again on every run (about 60% of the
/// claiming connection's time); so is the load of the claimed executions' journals,
/// `wfc_journals`. It drops the foreign keys of `operations` and
/// `history` to `executions`: each checked every row written (a query and a row lock per
/// history event, about a quarter of the server's time per step), and each guarded nothing
/// the writers do not: every write of those rows first checks, and locks, the execution's row in
/// the same transaction (the token's compare-and-swap, `lock_record`), and no execution is ever
/// deleted.
const COMMIT_GROUP_FUNCTION: &str = r#"
ALTER TABLE executions SET (fillfactor = 70);
ALTER TABLE operations SET (fillfactor = 80);
DROP INDEX executions_runnable;
CREATE INDEX executions_claim ON executions ((COALESCE(wake_at, lease_until, 0)), created_at) WHERE status = 'RUNNING';
DO $drop$
DECLARE fk RECORD;
BEGIN
    FOR fk IN SELECT conrelid::regclass AS tab, conname FROM pg_constraint
               WHERE contype = 'f' AND conrelid IN ('operations'::regclass, 'history'::regclass)
                 AND confrelid = 'executions'::regclass
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tab, fk.conname);
    END LOOP;
END
$drop$;
CREATE FUNCTION wfc_claim(
    p_owner TEXT, p_until BIGINT, p_now BIGINT, p_limit BIGINT, p_all BOOLEAN, p_versions TEXT[],
    p_workflows TEXT[], p_unpinned TEXT[]
) RETURNS SETOF executions LANGUAGE plpgsql
  SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    RETURN QUERY
    UPDATE executions SET epoch = epoch + 1, owner = p_owner, lease_until = p_until, wake_at = NULL,
           updated_at = p_now
     WHERE name IN (
         SELECT x.name FROM executions x
          WHERE x.status = 'RUNNING' AND COALESCE(x.wake_at, x.lease_until, 0) <= p_now
            AND (x.lease_until IS NULL OR x.lease_until < p_now) AND (x.wake_at IS NULL OR x.wake_at <= p_now)
            AND (p_all OR x.version_id = ANY(p_versions) OR x.workflow = ANY(p_workflows)
                 OR (x.version_id IS NULL AND x.workflow = ANY(p_unpinned)))
          ORDER BY COALESCE(x.wake_at, x.lease_until, 0), x.created_at
          LIMIT p_limit
            FOR UPDATE SKIP LOCKED)
    RETURNING *;
END
$fn$;
CREATE FUNCTION wfc_journals(p_names TEXT[]) RETURNS SETOF operations LANGUAGE plpgsql
  SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    RETURN QUERY SELECT * FROM operations WHERE execution = ANY(p_names);
END
$fn$;
CREATE FUNCTION wfc_commit_group(
    c_names TEXT[], c_epochs BIGINT[], c_seqs BIGINT[], c_now BIGINT[], c_invalid TEXT[], c_truncate BIGINT[],
    c_finish TEXT[], c_output TEXT[], c_error TEXT[], c_cause TEXT[],
    o_cp INT[], o_ids TEXT[], o_types TEXT[], o_subtypes TEXT[], o_names TEXT[], o_statuses TEXT[],
    o_starts BIGINT[], o_results TEXT[], o_errors TEXT[], o_causes TEXT[], o_due BIGINT[], o_tokens TEXT[],
    e_cp INT[], e_seqs BIGINT[],
    h_cp INT[], h_ids BIGINT[], h_events TEXT[],
    r_names TEXT[], r_epochs BIGINT[], r_owners TEXT[], r_until BIGINT[],
    OUT answers TEXT[], OUT renewed TEXT[]
) LANGUAGE plpgsql
  SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
  SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    n INTEGER := coalesce(array_length(c_names, 1), 0);
    ok BOOLEAN[] := array_fill(false, ARRAY[n]);
    r RECORD;
    i INTEGER;
    refusal TEXT;
BEGIN
    answers := array_fill(NULL::TEXT, ARRAY[n]);
    IF coalesce(array_length(o_ids, 1), 0) > 0 THEN
        FOR r IN
            SELECT u.cp, o.op_id, o.status
              FROM unnest(o_cp, o_ids) AS u(cp, id)
              JOIN operations o ON o.execution = c_names[u.cp] AND o.op_id = u.id
             ORDER BY o.execution, o.op_id
               FOR UPDATE OF o
        LOOP
            IF answers[r.cp] IS NULL AND r.status IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED') THEN
                answers[r.cp] := format('finished operation ''%s'' already finished (%s)', r.op_id, r.status);
            END IF;
        END LOOP;
    END IF;
    FOR r IN
        UPDATE executions e
           SET checkpoint_seq = e.checkpoint_seq + 1, updated_at = c.now,
               status = coalesce(c.finish, e.status),
               output = CASE WHEN c.finish IS NULL THEN e.output ELSE c.output END,
               error = CASE WHEN c.finish IS NULL THEN e.error ELSE c.error END,
               cause = CASE WHEN c.finish IS NULL THEN e.cause ELSE c.cause END,
               owner = CASE WHEN c.finish IS NULL THEN e.owner END,
               lease_until = CASE WHEN c.finish IS NULL THEN e.lease_until END,
               wake_at = CASE WHEN c.finish IS NULL THEN e.wake_at END
          FROM unnest(c_names, c_epochs, c_seqs, c_now, c_finish, c_output, c_error, c_cause, answers, c_invalid)
               WITH ORDINALITY AS c(name, epoch, seq, now, finish, output, error, cause, refused, invalid, i)
         WHERE c.refused IS NULL AND c.invalid IS NULL
           AND e.name = c.name AND e.epoch = c.epoch AND e.checkpoint_seq = c.seq
        RETURNING c.i
    LOOP
        ok[r.i] := true;
        answers[r.i] := 'ok';
    END LOOP;
    FOR i IN 1 .. n LOOP
        IF answers[i] IS NULL THEN
            SELECT CASE WHEN c_invalid[i] IS NOT NULL AND epoch = c_epochs[i] AND checkpoint_seq = c_seqs[i]
                        THEN c_invalid[i] ELSE 'stale' END
              INTO refusal FROM executions WHERE name = c_names[i];
            answers[i] := CASE WHEN FOUND THEN refusal ELSE 'not found' END;
        END IF;
    END LOOP;
    IF coalesce(array_length(o_ids, 1), 0) > 0 THEN
        UPDATE operations o
           SET status = u.status, starts = o.starts + u.starts, result = u.result, error = u.error,
               cause = u.cause, due_at = coalesce(u.due, o.due_at),
               end_ts = CASE WHEN u.status = 'STARTED' THEN NULL ELSE c_now[u.cp] END
          FROM unnest(o_cp, o_ids, o_statuses, o_starts, o_results, o_errors, o_causes, o_due)
               AS u(cp, id, status, starts, result, error, cause, due)
         WHERE ok[u.cp] AND o.execution = c_names[u.cp] AND o.op_id = u.id;
        INSERT INTO operations (execution, op_id, ordinal, type, subtype, name, status, starts, result, error,
                                cause, due_at, start_ts, end_ts, callback_token)
        SELECT c_names[u.cp], u.id,
               (SELECT count(*) FROM operations x WHERE x.execution = c_names[u.cp])
                   + row_number() OVER (PARTITION BY u.cp ORDER BY u.k) - 1,
               u.type, u.subtype, u.name, u.status, u.starts, u.result, u.error, u.cause, u.due, c_now[u.cp],
               CASE WHEN u.status = 'STARTED' THEN NULL ELSE c_now[u.cp] END, u.token
          FROM unnest(o_cp, o_ids, o_types, o_subtypes, o_names, o_statuses, o_starts, o_results, o_errors,
                      o_causes, o_due, o_tokens) WITH ORDINALITY
               AS u(cp, id, type, subtype, name, status, starts, result, error, cause, due, token, k)
         WHERE ok[u.cp]
           AND NOT EXISTS (SELECT 1 FROM operations x WHERE x.execution = c_names[u.cp] AND x.op_id = u.id);
    END IF;
    IF coalesce(array_length(e_seqs, 1), 0) > 0 THEN
        DELETE FROM events v USING unnest(e_cp, e_seqs) AS x(cp, seq)
         WHERE ok[x.cp] AND v.execution = c_names[x.cp] AND v.seq = x.seq;
    END IF;
    IF c_truncate IS NOT NULL THEN
        DELETE FROM history h USING unnest(c_names, c_truncate, ok) AS t(name, after, ok)
         WHERE t.ok AND t.after IS NOT NULL AND h.execution = t.name AND h.event_id > t.after;
    END IF;
    IF coalesce(array_length(h_ids, 1), 0) > 0 THEN
        INSERT INTO history (execution, event_id, event)
        SELECT c_names[x.cp], x.id, x.body FROM unnest(h_cp, h_ids, h_events) AS x(cp, id, body)
         WHERE ok[x.cp]
        ON CONFLICT (execution, event_id) DO UPDATE SET event = EXCLUDED.event;
    END IF;
    IF coalesce(array_length(r_names, 1), 0) > 0 THEN
        WITH done AS (
            UPDATE executions e
               SET lease_until = CASE WHEN e.status = 'RUNNING' AND e.lease_until IS NOT NULL THEN w.until END,
                   owner = CASE WHEN e.status = 'RUNNING' AND e.lease_until IS NOT NULL THEN w.owner END
              FROM unnest(r_names, r_epochs, r_owners, r_until) AS w(name, epoch, owner, until)
             WHERE e.name = w.name AND e.epoch = w.epoch
            RETURNING e.name)
        SELECT array_agg(done.name) INTO renewed FROM done;
    END IF;
END
$fn$;
"#;

/// Schema version 10: the history in one row per commit, `history_batches` (as SQLite's schema
/// 9): a commit's events, consecutive ids, as one JSON array with its first and last id. A step
/// records about 5 events, and the row per event with its index entry was about 40% of
/// `wfc_commit_group`'s time. The ranges of one execution's rows are disjoint; writing ids
/// already stored (a resumed run's replaced tail, an event written again) first removes them,
/// rewriting the rows they overlap with the events they keep (`wfc_history_remove`). Events
/// carry their own id (`"id"`), which the split reads. No foreign key, as for `history` since
/// version 9. `wfc_commit` (version 7), unused since version 9, is dropped with the table it
/// wrote; `wfc_commit_group` takes each checkpoint's history as batches (`h_first`, `h_last`,
/// `h_events`) instead of events.
const HISTORY_BATCHES: &str = r#"
CREATE TABLE history_batches (
    execution      TEXT NOT NULL,
    first_event_id BIGINT NOT NULL,
    last_event_id  BIGINT NOT NULL,
    events         TEXT NOT NULL,
    format         BIGINT NOT NULL DEFAULT 1,
    PRIMARY KEY (execution, first_event_id)
);
INSERT INTO history_batches (execution, first_event_id, last_event_id, events, format)
    SELECT execution, event_id, event_id, '[' || event || ']', format FROM history;
DROP FUNCTION wfc_commit;
DROP FUNCTION wfc_commit_group;
DROP TABLE history;
CREATE FUNCTION wfc_history_remove(p_name TEXT, p_first BIGINT, p_last BIGINT) RETURNS VOID LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    b RECORD;
    upto BIGINT := coalesce(p_last, 9223372036854775807);
BEGIN
    -- Rows wholly inside the range go without reading their events.
    DELETE FROM history_batches
     WHERE execution = p_name AND first_event_id >= p_first AND first_event_id <= upto AND last_event_id <= upto;
    -- The (at most two) rows that overlap its ends keep what lies outside it.
    FOR b IN
        DELETE FROM history_batches
         WHERE execution = p_name AND first_event_id <= upto AND last_event_id >= p_first
        RETURNING events, format
    LOOP
        INSERT INTO history_batches (execution, first_event_id, last_event_id, events, format)
        SELECT p_name, min(k.id), max(k.id), '[' || string_agg(k.e::TEXT, ',' ORDER BY k.n) || ']', b.format
          FROM (SELECT x.e, x.n, (x.e->>'id')::BIGINT AS id
                  FROM json_array_elements(b.events::JSON) WITH ORDINALITY AS x(e, n)) k
         WHERE k.id < p_first
        HAVING count(*) > 0;
        INSERT INTO history_batches (execution, first_event_id, last_event_id, events, format)
        SELECT p_name, min(k.id), max(k.id), '[' || string_agg(k.e::TEXT, ',' ORDER BY k.n) || ']', b.format
          FROM (SELECT x.e, x.n, (x.e->>'id')::BIGINT AS id
                  FROM json_array_elements(b.events::JSON) WITH ORDINALITY AS x(e, n)) k
         WHERE k.id > upto
        HAVING count(*) > 0;
    END LOOP;
END
$fn$;
CREATE FUNCTION wfc_commit_group(
    c_names TEXT[], c_epochs BIGINT[], c_seqs BIGINT[], c_now BIGINT[], c_invalid TEXT[], c_truncate BIGINT[],
    c_finish TEXT[], c_output TEXT[], c_error TEXT[], c_cause TEXT[],
    o_cp INT[], o_ids TEXT[], o_types TEXT[], o_subtypes TEXT[], o_names TEXT[], o_statuses TEXT[],
    o_starts BIGINT[], o_results TEXT[], o_errors TEXT[], o_causes TEXT[], o_due BIGINT[], o_tokens TEXT[],
    e_cp INT[], e_seqs BIGINT[],
    h_cp INT[], h_first BIGINT[], h_last BIGINT[], h_events TEXT[],
    r_names TEXT[], r_epochs BIGINT[], r_owners TEXT[], r_until BIGINT[],
    OUT answers TEXT[], OUT renewed TEXT[]
) LANGUAGE plpgsql
  SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
  SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    n INTEGER := coalesce(array_length(c_names, 1), 0);
    ok BOOLEAN[] := array_fill(false, ARRAY[n]);
    r RECORD;
    i INTEGER;
    refusal TEXT;
BEGIN
    answers := array_fill(NULL::TEXT, ARRAY[n]);
    IF coalesce(array_length(o_ids, 1), 0) > 0 THEN
        FOR r IN
            SELECT u.cp, o.op_id, o.status
              FROM unnest(o_cp, o_ids) AS u(cp, id)
              JOIN operations o ON o.execution = c_names[u.cp] AND o.op_id = u.id
             ORDER BY o.execution, o.op_id
               FOR UPDATE OF o
        LOOP
            IF answers[r.cp] IS NULL AND r.status IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED') THEN
                answers[r.cp] := format('finished operation ''%s'' already finished (%s)', r.op_id, r.status);
            END IF;
        END LOOP;
    END IF;
    FOR r IN
        UPDATE executions e
           SET checkpoint_seq = e.checkpoint_seq + 1, updated_at = c.now,
               status = coalesce(c.finish, e.status),
               output = CASE WHEN c.finish IS NULL THEN e.output ELSE c.output END,
               error = CASE WHEN c.finish IS NULL THEN e.error ELSE c.error END,
               cause = CASE WHEN c.finish IS NULL THEN e.cause ELSE c.cause END,
               owner = CASE WHEN c.finish IS NULL THEN e.owner END,
               lease_until = CASE WHEN c.finish IS NULL THEN e.lease_until END,
               wake_at = CASE WHEN c.finish IS NULL THEN e.wake_at END
          FROM unnest(c_names, c_epochs, c_seqs, c_now, c_finish, c_output, c_error, c_cause, answers, c_invalid)
               WITH ORDINALITY AS c(name, epoch, seq, now, finish, output, error, cause, refused, invalid, i)
         WHERE c.refused IS NULL AND c.invalid IS NULL
           AND e.name = c.name AND e.epoch = c.epoch AND e.checkpoint_seq = c.seq
        RETURNING c.i
    LOOP
        ok[r.i] := true;
        answers[r.i] := 'ok';
    END LOOP;
    FOR i IN 1 .. n LOOP
        IF answers[i] IS NULL THEN
            SELECT CASE WHEN c_invalid[i] IS NOT NULL AND epoch = c_epochs[i] AND checkpoint_seq = c_seqs[i]
                        THEN c_invalid[i] ELSE 'stale' END
              INTO refusal FROM executions WHERE name = c_names[i];
            answers[i] := CASE WHEN FOUND THEN refusal ELSE 'not found' END;
        END IF;
    END LOOP;
    IF coalesce(array_length(o_ids, 1), 0) > 0 THEN
        UPDATE operations o
           SET status = u.status, starts = o.starts + u.starts, result = u.result, error = u.error,
               cause = u.cause, due_at = coalesce(u.due, o.due_at),
               end_ts = CASE WHEN u.status = 'STARTED' THEN NULL ELSE c_now[u.cp] END
          FROM unnest(o_cp, o_ids, o_statuses, o_starts, o_results, o_errors, o_causes, o_due)
               AS u(cp, id, status, starts, result, error, cause, due)
         WHERE ok[u.cp] AND o.execution = c_names[u.cp] AND o.op_id = u.id;
        INSERT INTO operations (execution, op_id, ordinal, type, subtype, name, status, starts, result, error,
                                cause, due_at, start_ts, end_ts, callback_token)
        SELECT c_names[u.cp], u.id,
               (SELECT count(*) FROM operations x WHERE x.execution = c_names[u.cp])
                   + row_number() OVER (PARTITION BY u.cp ORDER BY u.k) - 1,
               u.type, u.subtype, u.name, u.status, u.starts, u.result, u.error, u.cause, u.due, c_now[u.cp],
               CASE WHEN u.status = 'STARTED' THEN NULL ELSE c_now[u.cp] END, u.token
          FROM unnest(o_cp, o_ids, o_types, o_subtypes, o_names, o_statuses, o_starts, o_results, o_errors,
                      o_causes, o_due, o_tokens) WITH ORDINALITY
               AS u(cp, id, type, subtype, name, status, starts, result, error, cause, due, token, k)
         WHERE ok[u.cp]
           AND NOT EXISTS (SELECT 1 FROM operations x WHERE x.execution = c_names[u.cp] AND x.op_id = u.id);
    END IF;
    IF coalesce(array_length(e_seqs, 1), 0) > 0 THEN
        DELETE FROM events v USING unnest(e_cp, e_seqs) AS x(cp, seq)
         WHERE ok[x.cp] AND v.execution = c_names[x.cp] AND v.seq = x.seq;
    END IF;
    IF c_truncate IS NOT NULL THEN
        FOR r IN SELECT t.name, t.after FROM unnest(c_names, c_truncate, ok) AS t(name, after, ok)
                  WHERE t.ok AND t.after IS NOT NULL
        LOOP
            PERFORM wfc_history_remove(r.name, r.after + 1, NULL);
        END LOOP;
    END IF;
    IF coalesce(array_length(h_first, 1), 0) > 0 THEN
        -- A batch that writes ids already stored (not an append) first removes them. Ranges
        -- are disjoint, so only the stored batch starting last at or before its end can overlap
        -- it when that one does not: an append costs this one index probe.
        FOR r IN
            SELECT c_names[x.cp] AS name, x.lo, x.hi FROM unnest(h_cp, h_first, h_last) AS x(cp, lo, hi)
             WHERE ok[x.cp]
               AND (SELECT b.last_event_id FROM history_batches b
                     WHERE b.execution = c_names[x.cp] AND b.first_event_id <= x.hi
                     ORDER BY b.first_event_id DESC LIMIT 1) >= x.lo
        LOOP
            PERFORM wfc_history_remove(r.name, r.lo, r.hi);
        END LOOP;
        INSERT INTO history_batches (execution, first_event_id, last_event_id, events)
        SELECT c_names[x.cp], x.lo, x.hi, x.body
          FROM unnest(h_cp, h_first, h_last, h_events) AS x(cp, lo, hi, body)
         WHERE ok[x.cp];
    END IF;
    IF coalesce(array_length(r_names, 1), 0) > 0 THEN
        WITH done AS (
            UPDATE executions e
               SET lease_until = CASE WHEN e.status = 'RUNNING' AND e.lease_until IS NOT NULL THEN w.until END,
                   owner = CASE WHEN e.status = 'RUNNING' AND e.lease_until IS NOT NULL THEN w.owner END
              FROM unnest(r_names, r_epochs, r_owners, r_until) AS w(name, epoch, owner, until)
             WHERE e.name = w.name AND e.epoch = w.epoch
            RETURNING e.name)
        SELECT array_agg(done.name) INTO renewed FROM done;
    END IF;
END
$fn$;
"#;

/// Schema version 11: an operation's `ordinal` (the order of an execution's operations) from a
/// sequence instead of counting the execution's operations for each one inserted, and a
/// checkpoint's operations written by one `INSERT ... ON CONFLICT DO UPDATE` instead of an
/// `UPDATE` of the existing ones and an `INSERT` of the others that first checked each did not
/// exist: together about 30% of `wfc_commit_group`'s time. The sequence starts above every
/// ordinal stored, and takes no cache, so values increase in the order they are drawn; an
/// execution's writes are ordered by the lock on its row (held to the commit), so its later
/// operations get greater ordinals whichever process writes them.
const OPERATION_ORDINALS: &str = r#"
CREATE SEQUENCE wfc_operation_ordinal;
SELECT setval('wfc_operation_ordinal', (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM operations));
CREATE OR REPLACE FUNCTION wfc_commit_group(
    c_names TEXT[], c_epochs BIGINT[], c_seqs BIGINT[], c_now BIGINT[], c_invalid TEXT[], c_truncate BIGINT[],
    c_finish TEXT[], c_output TEXT[], c_error TEXT[], c_cause TEXT[],
    o_cp INT[], o_ids TEXT[], o_types TEXT[], o_subtypes TEXT[], o_names TEXT[], o_statuses TEXT[],
    o_starts BIGINT[], o_results TEXT[], o_errors TEXT[], o_causes TEXT[], o_due BIGINT[], o_tokens TEXT[],
    e_cp INT[], e_seqs BIGINT[],
    h_cp INT[], h_first BIGINT[], h_last BIGINT[], h_events TEXT[],
    r_names TEXT[], r_epochs BIGINT[], r_owners TEXT[], r_until BIGINT[],
    OUT answers TEXT[], OUT renewed TEXT[]
) LANGUAGE plpgsql
  SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
  SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    n INTEGER := coalesce(array_length(c_names, 1), 0);
    ok BOOLEAN[] := array_fill(false, ARRAY[n]);
    r RECORD;
    i INTEGER;
    refusal TEXT;
BEGIN
    answers := array_fill(NULL::TEXT, ARRAY[n]);
    IF coalesce(array_length(o_ids, 1), 0) > 0 THEN
        FOR r IN
            SELECT u.cp, o.op_id, o.status
              FROM unnest(o_cp, o_ids) AS u(cp, id)
              JOIN operations o ON o.execution = c_names[u.cp] AND o.op_id = u.id
             ORDER BY o.execution, o.op_id
               FOR UPDATE OF o
        LOOP
            IF answers[r.cp] IS NULL AND r.status IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED') THEN
                answers[r.cp] := format('finished operation ''%s'' already finished (%s)', r.op_id, r.status);
            END IF;
        END LOOP;
    END IF;
    FOR r IN
        UPDATE executions e
           SET checkpoint_seq = e.checkpoint_seq + 1, updated_at = c.now,
               status = coalesce(c.finish, e.status),
               output = CASE WHEN c.finish IS NULL THEN e.output ELSE c.output END,
               error = CASE WHEN c.finish IS NULL THEN e.error ELSE c.error END,
               cause = CASE WHEN c.finish IS NULL THEN e.cause ELSE c.cause END,
               owner = CASE WHEN c.finish IS NULL THEN e.owner END,
               lease_until = CASE WHEN c.finish IS NULL THEN e.lease_until END,
               wake_at = CASE WHEN c.finish IS NULL THEN e.wake_at END
          FROM unnest(c_names, c_epochs, c_seqs, c_now, c_finish, c_output, c_error, c_cause, answers, c_invalid)
               WITH ORDINALITY AS c(name, epoch, seq, now, finish, output, error, cause, refused, invalid, i)
         WHERE c.refused IS NULL AND c.invalid IS NULL
           AND e.name = c.name AND e.epoch = c.epoch AND e.checkpoint_seq = c.seq
        RETURNING c.i
    LOOP
        ok[r.i] := true;
        answers[r.i] := 'ok';
    END LOOP;
    FOR i IN 1 .. n LOOP
        IF answers[i] IS NULL THEN
            SELECT CASE WHEN c_invalid[i] IS NOT NULL AND epoch = c_epochs[i] AND checkpoint_seq = c_seqs[i]
                        THEN c_invalid[i] ELSE 'stale' END
              INTO refusal FROM executions WHERE name = c_names[i];
            answers[i] := CASE WHEN FOUND THEN refusal ELSE 'not found' END;
        END IF;
    END LOOP;
    IF coalesce(array_length(o_ids, 1), 0) > 0 THEN
        INSERT INTO operations AS o (execution, op_id, ordinal, type, subtype, name, status, starts, result, error,
                                     cause, due_at, start_ts, end_ts, callback_token)
        SELECT c_names[u.cp], u.id, nextval('wfc_operation_ordinal'), u.type, u.subtype, u.name, u.status, u.starts,
               u.result, u.error, u.cause, u.due, c_now[u.cp],
               CASE WHEN u.status = 'STARTED' THEN NULL ELSE c_now[u.cp] END, u.token
          FROM (SELECT * FROM unnest(o_cp, o_ids, o_types, o_subtypes, o_names, o_statuses, o_starts, o_results,
                                     o_errors, o_causes, o_due, o_tokens) WITH ORDINALITY
                     AS x(cp, id, type, subtype, name, status, starts, result, error, cause, due, token, k)
                 WHERE ok[x.cp] ORDER BY x.k) u
        ON CONFLICT (execution, op_id) DO UPDATE
           SET status = EXCLUDED.status, starts = o.starts + EXCLUDED.starts, result = EXCLUDED.result,
               error = EXCLUDED.error, cause = EXCLUDED.cause, due_at = coalesce(EXCLUDED.due_at, o.due_at),
               end_ts = EXCLUDED.end_ts;
    END IF;
    IF coalesce(array_length(e_seqs, 1), 0) > 0 THEN
        DELETE FROM events v USING unnest(e_cp, e_seqs) AS x(cp, seq)
         WHERE ok[x.cp] AND v.execution = c_names[x.cp] AND v.seq = x.seq;
    END IF;
    IF c_truncate IS NOT NULL THEN
        FOR r IN SELECT t.name, t.after FROM unnest(c_names, c_truncate, ok) AS t(name, after, ok)
                  WHERE t.ok AND t.after IS NOT NULL
        LOOP
            PERFORM wfc_history_remove(r.name, r.after + 1, NULL);
        END LOOP;
    END IF;
    IF coalesce(array_length(h_first, 1), 0) > 0 THEN
        -- A batch that writes ids already stored (not an append) first removes them. Ranges
        -- are disjoint, so only the stored batch starting last at or before its end can overlap
        -- it when that one does not: an append costs this one index probe.
        FOR r IN
            SELECT c_names[x.cp] AS name, x.lo, x.hi FROM unnest(h_cp, h_first, h_last) AS x(cp, lo, hi)
             WHERE ok[x.cp]
               AND (SELECT b.last_event_id FROM history_batches b
                     WHERE b.execution = c_names[x.cp] AND b.first_event_id <= x.hi
                     ORDER BY b.first_event_id DESC LIMIT 1) >= x.lo
        LOOP
            PERFORM wfc_history_remove(r.name, r.lo, r.hi);
        END LOOP;
        INSERT INTO history_batches (execution, first_event_id, last_event_id, events)
        SELECT c_names[x.cp], x.lo, x.hi, x.body
          FROM unnest(h_cp, h_first, h_last, h_events) AS x(cp, lo, hi, body)
         WHERE ok[x.cp];
    END IF;
    IF coalesce(array_length(r_names, 1), 0) > 0 THEN
        WITH done AS (
            UPDATE executions e
               SET lease_until = CASE WHEN e.status = 'RUNNING' AND e.lease_until IS NOT NULL THEN w.until END,
                   owner = CASE WHEN e.status = 'RUNNING' AND e.lease_until IS NOT NULL THEN w.owner END
              FROM unnest(r_names, r_epochs, r_owners, r_until) AS w(name, epoch, owner, until)
             WHERE e.name = w.name AND e.epoch = w.epoch
            RETURNING e.name)
        SELECT array_agg(done.name) INTO renewed FROM done;
    END IF;
END
$fn$;
"#;

/// The NOTIFY channel that wakes workers.
const CHANNEL: &str = "wfc_work";
/// The NOTIFY channel of [`Store::kv_signal`] (its payload is the topic).
const KV_CHANNEL: &str = "wfc_kv";

/// How many connections a store opens for its queries (a worker's concurrent executions share
/// them; PostgreSQL commits their transactions in groups).
const POOL_SIZE: usize = 4;

/// A [`Store`] on a PostgreSQL database.
pub struct PgStore {
    url: String,
    pool: Vec<Arc<Mutex<Client>>>,
    /// Each pooled connection's prepared statements (a statement belongs to its connection), for
    /// the queries every execution makes: the claim, its journal, its history.
    prepared: Vec<std::sync::Mutex<std::collections::HashMap<&'static str, tokio_postgres::Statement>>>,
    next: AtomicUsize,
    /// The group committer of this process's checkpoints, finishes and lease renewals.
    committer: tokio::sync::mpsc::UnboundedSender<PgWrite>,
    /// The LISTEN connection's client (kept so the session lasts), the wake-up it feeds and
    /// the key/value topics it passes on.
    listener: OnceCell<(Client, Arc<Notify>, tokio::sync::broadcast::Sender<String>)>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("connections", &self.pool.len()).finish()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A database error with PostgreSQL's own message (tokio-postgres's Display is only "db error").
pub(crate) fn pg(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!("postgres: {} ({})", db.message(), db.code().code())),
        None => StoreError::Backend(format!("postgres: {e}")),
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn lease_ms(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4)
}

fn from_text(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| backend(format!("a stored JSON value is corrupt: {e}")))
}

async fn open_connection(url: &str) -> Result<Client, StoreError> {
    // With TLS as the URL's sslmode/sslrootcert say (see pg_tls).
    pg_tls::connect_driven(url).await
}

impl PgStore {
    /// Connects (`postgres://user@host:port/db`, libpq's URL syntax; TLS by `sslmode` and
    /// `sslrootcert`, see docs/durable.md) and migrates the
    /// schema. The connections run on the current tokio runtime.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let mut pool = Vec::with_capacity(POOL_SIZE);
        for _ in 0..POOL_SIZE {
            pool.push(Arc::new(Mutex::new(open_connection(url).await?)));
        }
        migrate(&mut *pool[0].lock().await).await?;
        // After the migration: the committer prepares its statements, `wfc_commit` among them.
        let committer = GroupCommitter::start(open_connection(url).await?).await?;
        let prepared = (0..pool.len()).map(|_| std::sync::Mutex::default()).collect();
        Ok(PgStore {
            url: url.to_owned(),
            pool,
            prepared,
            next: AtomicUsize::new(0),
            committer,
            listener: OnceCell::new(),
        })
    }

    /// Sends a checkpoint or finish to the group committer; answered once its group committed.
    fn group_commit(
        &self,
        args: Result<CommitArgs, StoreError>,
    ) -> BoxFuture<'static, Result<CheckpointToken, StoreError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = args.map(|args| self.committer.send(PgWrite::Commit(Box::new(args), reply)));
        Box::pin(async move {
            sent?.map_err(|_| backend("the group committer has stopped"))?;
            answer.await.map_err(|_| backend("the group committer dropped a write"))?
        })
    }

    /// A connection: a free one if any, else the next in turn.
    async fn conn(&self) -> Arc<Mutex<Client>> {
        self.slot().1
    }

    /// A connection and its index in the pool: a free one if any, else the next in turn.
    fn slot(&self) -> (usize, Arc<Mutex<Client>>) {
        for (i, c) in self.pool.iter().enumerate() {
            if c.try_lock().is_ok() {
                return (i, Arc::clone(c));
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len();
        (i, Arc::clone(&self.pool[i]))
    }

    /// `sql` prepared on the pooled connection `slot` (whose `client` the caller holds): once per
    /// connection, so the server parses and plans it once, and each use is one round trip
    /// (tokio-postgres prepares a statement given as text before every run: two round trips and
    /// a parse and plan each time).
    async fn prepared(
        &self,
        slot: usize,
        client: &Client,
        sql: &'static str,
    ) -> Result<tokio_postgres::Statement, StoreError> {
        let cache = &self.prepared[slot];
        if let Some(statement) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql).await.map_err(pg)?;
        cache.lock().unwrap_or_else(|p| p.into_inner()).insert(sql, statement.clone());
        Ok(statement)
    }

    /// Starts (once) the connection that LISTENs for work and turns notifications into wake-ups
    /// (and key/value topics into broadcasts).
    async fn listener(&self) -> Result<&(Client, Arc<Notify>, tokio::sync::broadcast::Sender<String>), StoreError> {
        self.listener
            .get_or_try_init(|| async {
                let (client, mut messages) = pg_tls::connect_listening(&self.url).await?;
                let notify = Arc::new(Notify::new());
                let wake = Arc::clone(&notify);
                // Receivers that lag this far behind miss topics (and read the store again).
                let (topics, _) = tokio::sync::broadcast::channel(1024);
                let sender = topics.clone();
                tokio::spawn(async move {
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(AsyncMessage::Notification(n)) if n.channel() == KV_CHANNEL => {
                                let _ = sender.send(n.payload().to_owned());
                            }
                            // notify_one keeps a permit when nobody waits yet, so a wake-up that
                            // arrives while the worker is claiming is not lost.
                            Ok(AsyncMessage::Notification(_)) => wake.notify_one(),
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                });
                client.batch_execute(&format!("LISTEN {CHANNEL}; LISTEN {KV_CHANNEL}")).await.map_err(pg)?;
                Ok::<_, StoreError>((client, notify, topics))
            })
            .await
    }
}

/// The most writes one group commit takes.
const MAX_GROUP: usize = 512;

/// A write waiting for the [`GroupCommitter`].
enum PgWrite {
    /// A checkpoint, or a finish.
    Commit(Box<CommitArgs>, tokio::sync::oneshot::Sender<Result<CheckpointToken, StoreError>>),
    /// A lease renewal.
    Renew(Renewal),
}

impl PgWrite {
    /// The execution a checkpoint or finish writes (a group holds one per execution).
    fn commit_of(&self) -> Option<&str> {
        match self {
            PgWrite::Commit(args, _) => Some(&args.name),
            PgWrite::Renew(_) => None,
        }
    }
}

/// One execution's lease renewal.
struct Renewal {
    name: String,
    epoch: i64,
    owner: String,
    until: i64,
    reply: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// One operation's write in a checkpoint: its updates in the batch merged into one, as applying
/// them in order would leave the row (see [`CommitArgs::new`]).
struct OpWrite {
    id: String,
    op_type: &'static str,
    subtype: String,
    name: String,
    status: OpStatus,
    /// How many of its updates were `STARTED` (each one counts a start).
    starts: i64,
    result: Option<String>,
    error: Option<String>,
    cause: Option<String>,
    due: Option<i64>,
    token: Option<String>,
}

/// One checkpoint or finish, serialized by the caller (not by the committer).
struct CommitArgs {
    name: String,
    token: CheckpointToken,
    now: i64,
    /// The refusal the batch itself earns (an operation updated again after it finished).
    invalid: Option<String>,
    ops: Vec<OpWrite>,
    consumed: Vec<i64>,
    truncate: Option<i64>,
    /// The history events, as rows of `history_batches` (see [`history_batches`]).
    history: Vec<HistoryBatch>,
    finish: Option<String>,
    output: Option<String>,
    error: Option<String>,
    cause: Option<String>,
}

impl CommitArgs {
    /// The updates of one operation are merged in order, as `wfc_commit` applied them one after
    /// the other (a CONTEXT's start and end in one batch): the row gets the first update's type,
    /// subtype, name and callback token (an update does not change them), the last one's status,
    /// result, error and cause, the last fire-at instant given, and a start per `STARTED`. An
    /// update after one that finished the operation refuses the batch, as `wfc_commit`'s `WF001`
    /// did.
    fn new(
        name: &str,
        token: CheckpointToken,
        updates: &[OperationUpdate],
        history: &HistoryWrite,
        completion: Option<&Completion>,
    ) -> Result<CommitArgs, StoreError> {
        let mut ops: Vec<OpWrite> = Vec::with_capacity(updates.len());
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut invalid = None;
        for u in updates {
            let started = i64::from(u.status == OpStatus::Started);
            let result = u.result.as_ref().map(Value::to_string);
            match index.get(u.id.as_str()) {
                Some(&k) => {
                    let op = &mut ops[k];
                    if op.status.is_terminal() && invalid.is_none() {
                        invalid =
                            Some(format!("finished operation '{}' already finished ({})", u.id, op.status.as_str()));
                    }
                    op.status = u.status;
                    op.starts += started;
                    op.result = result;
                    op.error = u.error.clone();
                    op.cause = u.cause.clone();
                    op.due = u.due_at_ms.or(op.due);
                }
                None => {
                    index.insert(&u.id, ops.len());
                    ops.push(OpWrite {
                        id: u.id.clone(),
                        op_type: u.op_type.as_str(),
                        subtype: u.subtype.clone(),
                        name: u.name.clone(),
                        status: u.status,
                        starts: started,
                        result,
                        error: u.error.clone(),
                        cause: u.cause.clone(),
                        due: u.due_at_ms,
                        token: u.callback_token.clone(),
                    });
                }
            }
        }
        Ok(CommitArgs {
            name: name.to_owned(),
            token,
            now: now_ms(),
            invalid,
            ops,
            consumed: updates.iter().flat_map(wfc_runtime::durable::consumed_events).collect(),
            truncate: history.truncate_after.map(i64::try_from).transpose().map_err(backend)?,
            history: history_batches(&history.events)?,
            finish: completion.map(|c| c.status.as_str().to_owned()),
            output: completion.and_then(|c| c.output.as_ref().map(Value::to_string)),
            error: completion.and_then(|c| c.error.clone()),
            cause: completion.and_then(|c| c.cause.clone()),
        })
    }

    /// What `wfc_commit_group` answered for this checkpoint.
    fn answer(&self, outcome: Option<&str>) -> Result<CheckpointToken, StoreError> {
        match outcome {
            Some("ok") => Ok(CheckpointToken { epoch: self.token.epoch, seq: self.token.seq + 1 }),
            Some("stale") => Err(StoreError::StaleToken(self.name.clone())),
            Some("not found") => Err(StoreError::NotFound(self.name.clone())),
            Some(other) => match other.strip_prefix("finished ") {
                Some(message) => {
                    Err(StoreError::InvalidUpdate { execution: self.name.clone(), message: message.to_owned() })
                }
                None => Err(backend(format!("wfc_commit_group answered '{other}'"))),
            },
            None => Err(backend("wfc_commit_group gave no answer")),
        }
    }
}

/// A write's answer.
enum Answer {
    Commit(Result<CheckpointToken, StoreError>),
    Renew(Result<(), StoreError>),
}

/// Commits the writes of a process's executions in groups, on a connection of its own: it takes
/// every write waiting at that moment and sends `BEGIN`, **one** statement for the whole group
/// (`wfc_commit_group`: its checkpoints, finishes and lease renewals) and `COMMIT` pipelined
/// (tokio-postgres sends them without waiting for each answer), so a group costs one round trip,
/// one WAL flush and a few statements on the server however many executions it carries. Each
/// caller is answered once the group's `COMMIT` has returned: no write is acknowledged before it
/// is durable.
///
/// A refusal (`stale`, an operation already finished) is an answer for its checkpoint, not an
/// error, so it does not abort the group. A statement that fails (a deadlock with another
/// process) aborts the group's transaction; the group is then retried one write per transaction,
/// so only a failing write fails.
struct GroupCommitter {
    client: Client,
    statement: tokio_postgres::Statement,
}

/// Why a group's transaction did not commit.
enum GroupFailure {
    /// Its statement (or `BEGIN`) failed: the transaction rolled back, nothing was written.
    Statement(StoreError),
    /// `COMMIT` failed: whether it committed is unknown.
    Commit(StoreError),
}

impl GroupCommitter {
    async fn start(client: Client) -> Result<tokio::sync::mpsc::UnboundedSender<PgWrite>, StoreError> {
        let statement = client
            .prepare(
                "SELECT answers, renewed FROM wfc_commit_group($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                     $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)",
            )
            .await
            .map_err(pg)?;
        let (sender, requests) = tokio::sync::mpsc::unbounded_channel();
        let committer = GroupCommitter { client, statement };
        tokio::spawn(committer.run(requests));
        Ok(sender)
    }

    /// Ends when every handle of the store is dropped.
    async fn run(self, mut requests: tokio::sync::mpsc::UnboundedReceiver<PgWrite>) {
        // Writes kept for the next group: a second write of an execution already in the group
        // (one statement writes each row once), or more than a group takes.
        let mut deferred: std::collections::VecDeque<PgWrite> = std::collections::VecDeque::new();
        loop {
            if deferred.is_empty() {
                match requests.recv().await {
                    Some(write) => deferred.push_back(write),
                    None => return,
                }
            }
            let mut group = Vec::new();
            let mut names = std::collections::HashSet::new();
            let mut later = std::collections::VecDeque::new();
            let mut take = |write: PgWrite, group: &mut Vec<PgWrite>| {
                let fits =
                    group.len() < MAX_GROUP && write.commit_of().is_none_or(|name| names.insert(name.to_owned()));
                if fits { group.push(write) } else { later.push_back(write) }
            };
            while let Some(write) = deferred.pop_front() {
                take(write, &mut group);
            }
            while group.len() < MAX_GROUP {
                match requests.try_recv() {
                    Ok(write) => take(write, &mut group),
                    Err(_) => break,
                }
            }
            deferred = later;
            let writes = group.len();
            let answers = self.commit_group(&group, writes).await;
            wfc_runtime::durable::group_crash_point(writes, "after-commit");
            for (write, answer) in group.into_iter().zip(answers) {
                match (write, answer) {
                    (PgWrite::Commit(_, reply), Answer::Commit(a)) => {
                        let _ = reply.send(a);
                    }
                    (PgWrite::Renew(r), Answer::Renew(a)) => {
                        let _ = r.reply.send(a);
                    }
                    (PgWrite::Commit(_, reply), Answer::Renew(_)) => {
                        let _ = reply.send(Err(backend("the group committer mixed up its answers")));
                    }
                    (PgWrite::Renew(r), Answer::Commit(_)) => {
                        let _ = r.reply.send(Err(backend("the group committer mixed up its answers")));
                    }
                }
            }
        }
    }

    /// The answers of `group`'s writes, in order.
    async fn commit_group(&self, group: &[PgWrite], writes: usize) -> Vec<Answer> {
        let failed = match self.transaction(group.iter(), writes).await {
            Ok(answers) => return answers,
            Err(GroupFailure::Commit(e)) => {
                // Whether it committed is unknown: every write of the group fails (a resumed run
                // finds in the journal what was committed).
                return group.iter().map(|w| failed_answer(w, e.clone())).collect();
            }
            Err(GroupFailure::Statement(e)) => e,
        };
        // The group rolled back. `COMMIT` in a failed transaction rolls it back already; this
        // makes sure (it warns if none is open).
        let _ = self.client.batch_execute("ROLLBACK").await;
        if group.len() == 1 {
            return group.iter().map(|w| failed_answer(w, failed.clone())).collect();
        }
        // Each write alone, so only a failing one fails.
        let mut answers = Vec::with_capacity(group.len());
        for write in group {
            match self.transaction(std::iter::once(write), 1).await {
                Ok(mut one) => answers.push(one.pop().unwrap_or_else(|| failed_answer(write, backend("no answer")))),
                Err(GroupFailure::Commit(e) | GroupFailure::Statement(e)) => {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                    answers.push(failed_answer(write, e));
                }
            }
        }
        answers
    }

    /// `BEGIN`, the group's statement and `COMMIT`, sent in this order without waiting for
    /// answers (a tokio-postgres request is sent when its future is first polled, and the
    /// futures here are polled in order, every time), then the answers of the writes, in order.
    async fn transaction<'a>(
        &self,
        group: impl Iterator<Item = &'a PgWrite> + Clone,
        writes: usize,
    ) -> Result<Vec<Answer>, GroupFailure> {
        use futures::future::maybe_done;
        use std::future::Future;
        let params = GroupParams::of(group.clone());
        let sql_params = params.as_sql();
        let mut begin = Box::pin(maybe_done(self.client.batch_execute("BEGIN")));
        let mut statement = Box::pin(maybe_done(self.client.query_one(&self.statement, &sql_params)));
        let mut commit = Box::pin(maybe_done(self.client.batch_execute("COMMIT")));
        let mut first = true;
        std::future::poll_fn(|cx| {
            // Each polled every time until done, in order: the requests go out in order.
            let begun = begin.as_mut().poll(cx).is_ready();
            let stated = statement.as_mut().poll(cx).is_ready();
            let committed = commit.as_mut().poll(cx).is_ready();
            if std::mem::take(&mut first) {
                wfc_runtime::durable::group_crash_point(writes, "before-commit");
            }
            if begun && stated && committed { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
        })
        .await;
        // Every future is done here, so each has its output.
        let no_answer = || GroupFailure::Statement(backend("the group's statement gave no answer"));
        begin.as_mut().take_output().ok_or_else(no_answer)?.map_err(|e| GroupFailure::Statement(pg(e)))?;
        let row =
            statement.as_mut().take_output().ok_or_else(no_answer)?.map_err(|e| GroupFailure::Statement(pg(e)))?;
        commit.as_mut().take_output().ok_or_else(no_answer)?.map_err(|e| GroupFailure::Commit(pg(e)))?;
        let outcomes: Vec<Option<String>> = row.try_get(0).map_err(|e| GroupFailure::Commit(pg(e)))?;
        let renewed: Option<Vec<String>> = row.try_get(1).map_err(|e| GroupFailure::Commit(pg(e)))?;
        let renewed: std::collections::HashSet<String> = renewed.into_iter().flatten().collect();
        let mut outcomes = outcomes.into_iter();
        Ok(group
            .map(|write| match write {
                PgWrite::Commit(args, _) => Answer::Commit(args.answer(outcomes.next().flatten().as_deref())),
                PgWrite::Renew(r) if renewed.contains(&r.name) => Answer::Renew(Ok(())),
                PgWrite::Renew(r) => Answer::Renew(Err(StoreError::StaleToken(r.name.clone()))),
            })
            .collect())
    }
}

/// `wfc_commit_group`'s parameters for a group, borrowed from its writes: one entry per
/// checkpoint in the `c_` arrays, per operation in `o_`, per consumed event in `e_`, per history
/// event in `h_` (the last three pointing at their checkpoint, from 1), per renewal in `r_`.
#[derive(Default)]
struct GroupParams<'a> {
    c_names: Vec<&'a str>,
    c_epochs: Vec<i64>,
    c_seqs: Vec<i64>,
    c_now: Vec<i64>,
    c_invalid: Vec<Option<&'a str>>,
    c_truncate: Option<Vec<Option<i64>>>,
    c_finish: Vec<Option<&'a str>>,
    c_output: Vec<Option<&'a str>>,
    c_error: Vec<Option<&'a str>>,
    c_cause: Vec<Option<&'a str>>,
    o_cp: Vec<i32>,
    o_ids: Vec<&'a str>,
    o_types: Vec<&'a str>,
    o_subtypes: Vec<&'a str>,
    o_names: Vec<&'a str>,
    o_statuses: Vec<&'a str>,
    o_starts: Vec<i64>,
    o_results: Vec<Option<&'a str>>,
    o_errors: Vec<Option<&'a str>>,
    o_causes: Vec<Option<&'a str>>,
    o_due: Vec<Option<i64>>,
    o_tokens: Vec<Option<&'a str>>,
    e_cp: Vec<i32>,
    e_seqs: Vec<i64>,
    h_cp: Vec<i32>,
    h_first: Vec<i64>,
    h_last: Vec<i64>,
    h_events: Vec<&'a str>,
    r_names: Vec<&'a str>,
    r_epochs: Vec<i64>,
    r_owners: Vec<&'a str>,
    r_until: Vec<i64>,
}

impl<'a> GroupParams<'a> {
    fn of(group: impl Iterator<Item = &'a PgWrite>) -> GroupParams<'a> {
        let mut p = GroupParams::default();
        for write in group {
            match write {
                PgWrite::Commit(a, _) => {
                    p.c_names.push(&a.name);
                    let cp = i32::try_from(p.c_names.len()).unwrap_or(i32::MAX);
                    p.c_epochs.push(a.token.epoch);
                    p.c_seqs.push(a.token.seq);
                    p.c_now.push(a.now);
                    p.c_invalid.push(a.invalid.as_deref());
                    if a.truncate.is_some() && p.c_truncate.is_none() {
                        p.c_truncate = Some(vec![None; p.c_names.len() - 1]);
                    }
                    if let Some(truncate) = &mut p.c_truncate {
                        truncate.push(a.truncate);
                    }
                    p.c_finish.push(a.finish.as_deref());
                    p.c_output.push(a.output.as_deref());
                    p.c_error.push(a.error.as_deref());
                    p.c_cause.push(a.cause.as_deref());
                    for op in &a.ops {
                        p.o_cp.push(cp);
                        p.o_ids.push(&op.id);
                        p.o_types.push(op.op_type);
                        p.o_subtypes.push(&op.subtype);
                        p.o_names.push(&op.name);
                        p.o_statuses.push(op.status.as_str());
                        p.o_starts.push(op.starts);
                        p.o_results.push(op.result.as_deref());
                        p.o_errors.push(op.error.as_deref());
                        p.o_causes.push(op.cause.as_deref());
                        p.o_due.push(op.due);
                        p.o_tokens.push(op.token.as_deref());
                    }
                    for &seq in &a.consumed {
                        p.e_cp.push(cp);
                        p.e_seqs.push(seq);
                    }
                    for batch in &a.history {
                        p.h_cp.push(cp);
                        p.h_first.push(batch.first);
                        p.h_last.push(batch.last);
                        p.h_events.push(&batch.events);
                    }
                }
                PgWrite::Renew(r) => {
                    p.r_names.push(&r.name);
                    p.r_epochs.push(r.epoch);
                    p.r_owners.push(&r.owner);
                    p.r_until.push(r.until);
                }
            }
        }
        p
    }

    fn as_sql(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 32] {
        [
            &self.c_names,
            &self.c_epochs,
            &self.c_seqs,
            &self.c_now,
            &self.c_invalid,
            &self.c_truncate,
            &self.c_finish,
            &self.c_output,
            &self.c_error,
            &self.c_cause,
            &self.o_cp,
            &self.o_ids,
            &self.o_types,
            &self.o_subtypes,
            &self.o_names,
            &self.o_statuses,
            &self.o_starts,
            &self.o_results,
            &self.o_errors,
            &self.o_causes,
            &self.o_due,
            &self.o_tokens,
            &self.e_cp,
            &self.e_seqs,
            &self.h_cp,
            &self.h_first,
            &self.h_last,
            &self.h_events,
            &self.r_names,
            &self.r_epochs,
            &self.r_owners,
            &self.r_until,
        ]
    }
}

fn failed_answer(write: &PgWrite, e: StoreError) -> Answer {
    match write {
        PgWrite::Commit(..) => Answer::Commit(Err(e)),
        PgWrite::Renew(_) => Answer::Renew(Err(e)),
    }
}

async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(pg)?;
    // One migrator at a time across processes.
    tx.execute("SELECT pg_advisory_xact_lock(727455001)", &[]).await.map_err(pg)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS wfc_schema (version BIGINT NOT NULL)").await.map_err(pg)?;
    let version: i64 = match tx.query_opt("SELECT version FROM wfc_schema", &[]).await.map_err(pg)? {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO wfc_schema (version) VALUES (0)", &[]).await.map_err(pg)?;
            0
        }
    };
    // A newer store is refused before anything is written (the transaction rolls back).
    let pending = wfc_runtime::durable::migrations::pending(version, MIGRATIONS)?;
    if pending.is_empty() {
        return tx.commit().await.map_err(pg);
    }
    for migration in pending {
        tx.batch_execute(migration.sql)
            .await
            .map_err(|e| backend(format!("migration '{}': {}", migration.description, pg(e))))?;
    }
    let now = now_ms();
    // Every version, also those applied before the table existed (recorded now).
    for (i, migration) in MIGRATIONS.iter().enumerate() {
        tx.execute(
            "INSERT INTO wfc_migrations (version, description, applied_at) VALUES ($1, $2, $3)
             ON CONFLICT (version) DO NOTHING",
            &[&(i as i64 + 1), &migration.description, &now],
        )
        .await
        .map_err(pg)?;
    }
    tx.execute("UPDATE wfc_schema SET version = $1", &[&(MIGRATIONS.len() as i64)]).await.map_err(pg)?;
    tx.commit().await.map_err(pg)
}

/// A key/value row's value, read back.
fn kv_value(key: &str, value: &str, format: i64) -> Result<Value, StoreError> {
    check_row_format(&format!("key/value row '{key}'"), format)?;
    from_text(value)
}

/// A claim (see [`PgStore::claim_runnable`] and `wfc_claim`), returning the claimed records.
static CLAIM: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {RECORD_COLUMNS} FROM wfc_claim($1, $2, $3, $4, $5, $6, $7, $8)"));

/// The journals of several executions, each in its order: [`OPERATION_COLUMNS`], then the
/// execution.
static JOURNALS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {OPERATION_COLUMNS}, execution FROM wfc_journals($1) ORDER BY execution, ordinal")
});

const RECORD_COLUMNS: &str = "name, workflow, status, input, output, error, cause, start_time, epoch, checkpoint_seq, \
     created_at, updated_at, owner, lease_until, wake_at, definition_hash, signals, version_id, format, \
     redrive_count, redrive_date";

fn record_of(row: &Row) -> Result<ExecutionRecord, StoreError> {
    let status: String = row.try_get(2).map_err(pg)?;
    let input: String = row.try_get(3).map_err(pg)?;
    let output: Option<String> = row.try_get(4).map_err(pg)?;
    let name: String = row.try_get(0).map_err(pg)?;
    check_row_format(&format!("execution '{name}'"), row.try_get(18).map_err(pg)?)?;
    Ok(ExecutionRecord {
        name: row.try_get(0).map_err(pg)?,
        workflow: row.try_get(1).map_err(pg)?,
        status: ExecutionStatus::parse(&status)
            .ok_or_else(|| backend(format!("unknown execution status '{status}'")))?,
        input: from_text(&input)?,
        output: output.as_deref().map(from_text).transpose()?,
        error: row.try_get(5).map_err(pg)?,
        cause: row.try_get(6).map_err(pg)?,
        start_time: row.try_get(7).map_err(pg)?,
        epoch: row.try_get(8).map_err(pg)?,
        checkpoint_seq: row.try_get(9).map_err(pg)?,
        created_at_ms: row.try_get(10).map_err(pg)?,
        updated_at_ms: row.try_get(11).map_err(pg)?,
        owner: row.try_get(12).map_err(pg)?,
        lease_until_ms: row.try_get(13).map_err(pg)?,
        wake_at_ms: row.try_get(14).map_err(pg)?,
        definition_hash: row.try_get(15).map_err(pg)?,
        signals: row.try_get(16).map_err(pg)?,
        version_id: row.try_get(17).map_err(pg)?,
        redrive_count: row.try_get(19).map_err(pg)?,
        redrive_date_ms: row.try_get(20).map_err(pg)?,
    })
}

async fn get_record<C: GenericClient>(c: &C, name: &str) -> Result<Option<ExecutionRecord>, StoreError> {
    let row =
        c.query_opt(&format!("SELECT {RECORD_COLUMNS} FROM executions WHERE name = $1"), &[&name]).await.map_err(pg)?;
    row.as_ref().map(record_of).transpose()
}

/// The columns [`operation_of`] reads, in its order.
const OPERATION_COLUMNS: &str =
    "op_id, type, subtype, name, status, starts, result, error, cause, due_at, callback_token, heartbeats, format";

async fn get_operations<C: GenericClient>(c: &C, name: &str) -> Result<Vec<Operation>, StoreError> {
    let rows = c
        .query(&format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE execution = $1 ORDER BY ordinal"), &[&name])
        .await
        .map_err(pg)?;
    rows.iter().map(|row| operation_of(row, name)).collect()
}

/// An operation of execution `name` from a row of [`OPERATION_COLUMNS`].
fn operation_of(row: &Row, name: &str) -> Result<Operation, StoreError> {
    let id: String = row.try_get(0).map_err(pg)?;
    check_row_format(&format!("operation '{id}' of execution '{name}'"), row.try_get(12).map_err(pg)?)?;
    wfc_runtime::durable::parse_operation(RawOperation {
        id,
        op_type: row.try_get(1).map_err(pg)?,
        subtype: row.try_get(2).map_err(pg)?,
        name: row.try_get(3).map_err(pg)?,
        status: row.try_get(4).map_err(pg)?,
        starts: row.try_get(5).map_err(pg)?,
        result: row.try_get(6).map_err(pg)?,
        error: row.try_get(7).map_err(pg)?,
        cause: row.try_get(8).map_err(pg)?,
        due_at_ms: row.try_get(9).map_err(pg)?,
        callback_token: row.try_get(10).map_err(pg)?,
        heartbeats: row.try_get(11).map_err(pg)?,
    })
}

/// The execution `name`, locked (`FOR UPDATE`) until the transaction ends: what a change that
/// depends on its status reads first. No such execution: [`StoreError::NotFound`].
async fn lock_record<C: GenericClient>(tx: &C, name: &str) -> Result<ExecutionRecord, StoreError> {
    let row = tx
        .query_opt(&format!("SELECT {RECORD_COLUMNS} FROM executions WHERE name = $1 FOR UPDATE"), &[&name])
        .await
        .map_err(pg)?;
    row.as_ref().map(record_of).transpose()?.ok_or_else(|| StoreError::NotFound(name.to_owned()))
}

/// Writes a running execution's history events (live history, see `wfc-journal`'s `live_history`) in
/// the caller's transaction: the tail a resumed run replaced first, then the events (an id
/// already stored is replaced) as rows of `history_batches`. Kept apart from the checkpoint's
/// operation updates. (The group commit writes them in `wfc_commit_group`.)
async fn write_history<C: GenericClient>(c: &C, name: &str, history: &HistoryWrite) -> Result<(), StoreError> {
    if let Some(after) = history.truncate_after {
        let after = i64::try_from(after).map_err(backend)?.saturating_add(1);
        c.execute("SELECT wfc_history_remove($1, $2, NULL)", &[&name, &after]).await.map_err(pg)?;
    }
    for batch in history_batches(&history.events)? {
        c.execute("SELECT wfc_history_remove($1, $2, $3)", &[&name, &batch.first, &batch.last]).await.map_err(pg)?;
        c.execute(
            "INSERT INTO history_batches (execution, first_event_id, last_event_id, events) VALUES ($1, $2, $3, $4)",
            &[&name, &batch.first, &batch.last, &batch.events],
        )
        .await
        .map_err(pg)?;
    }
    Ok(())
}

/// A row of `history_batches` (schema version 10): events with consecutive ids, from `first` to
/// `last`, as a JSON array.
struct HistoryBatch {
    first: i64,
    last: i64,
    events: String,
}

/// `events` as rows of `history_batches`: one per run of consecutive ids (a live history's
/// commit writes one run: one row). An id given twice keeps its last event, as writing the
/// events one after the other would.
fn history_batches(events: &[HistoryEvent]) -> Result<Vec<HistoryBatch>, StoreError> {
    let in_order = events.windows(2).all(|w| w[0].id < w[1].id);
    let mut sorted: Vec<&HistoryEvent>;
    let events: Vec<&HistoryEvent> = if in_order {
        events.iter().collect()
    } else {
        // Stable, so of an id given twice the last is last; keep that one.
        sorted = events.iter().collect();
        sorted.sort_by_key(|e| e.id);
        let mut kept: Vec<&HistoryEvent> = Vec::with_capacity(sorted.len());
        for event in sorted {
            match kept.last_mut() {
                Some(last) if last.id == event.id => *last = event,
                _ => kept.push(event),
            }
        }
        kept
    };
    let mut batches = Vec::new();
    // Consecutive events that share a document serialize it once.
    let mut writer = wfc_runtime::history::EventWriter::new();
    let mut start = 0;
    while start < events.len() {
        let mut end = start + 1;
        while end < events.len() && events[end].id == events[end - 1].id + 1 {
            end += 1;
        }
        let mut text = Vec::with_capacity(512 * (end - start));
        text.push(b'[');
        for (i, event) in events[start..end].iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            writer.write_json(event, &mut text).map_err(backend)?;
        }
        text.push(b']');
        batches.push(HistoryBatch {
            first: i64::try_from(events[start].id).map_err(backend)?,
            last: i64::try_from(events[end - 1].id).map_err(backend)?,
            events: String::from_utf8(text).map_err(backend)?,
        });
        start = end;
    }
    Ok(batches)
}

/// A stored row's events.
fn batch_events(name: &str, text: &str, format: i64) -> Result<Vec<HistoryEvent>, StoreError> {
    check_row_format(&format!("a history event of execution '{name}'"), format)?;
    serde_json::from_str(text).map_err(|e| backend(format!("a stored event of execution '{name}' is corrupt: {e}")))
}

/// Appends events after the last stored one, in the caller's transaction: `events` gets that
/// last id. For StopExecution's `ExecutionAborted` (`durable::aborted_events`) and
/// RedriveExecution's `ExecutionRedriven` (`durable::redriven_event`).
async fn append_after_last<C: GenericClient>(
    c: &C,
    name: &str,
    events: impl FnOnce(u64) -> Vec<HistoryEvent>,
) -> Result<(), StoreError> {
    let row = c
        .query_one("SELECT COALESCE(MAX(last_event_id), 0)::BIGINT FROM history_batches WHERE execution = $1", &[&name])
        .await
        .map_err(pg)?;
    let last: i64 = row.get(0);
    let events = events(u64::try_from(last).unwrap_or(0));
    write_history(c, name, &HistoryWrite { events, truncate_after: None }).await
}

/// Creates `new` with `events` in its inbox unless it exists (then adds nothing); whether it
/// existed.
async fn create_with_events<C: GenericClient>(
    c: &C,
    new: &NewExecution,
    events: &[Value],
    now: i64,
) -> Result<bool, StoreError> {
    let existed = insert_or_check(c, new, now).await?;
    if !existed {
        for event in events {
            c.execute(
                "INSERT INTO events (execution, event, delivered_at) VALUES ($1, $2, $3)",
                &[&new.name, &event.to_string(), &now],
            )
            .await
            .map_err(pg)?;
        }
    }
    Ok(existed)
}

async fn insert_or_check<C: GenericClient>(c: &C, new: &NewExecution, now: i64) -> Result<bool, StoreError> {
    let inserted = c
        .execute(
            "INSERT INTO executions (name, workflow, status, input, start_time, created_at, updated_at,
                                     definition_hash, wake_at, version_id, format)
             VALUES ($1, $2, 'RUNNING', $3, $4, $5, $5, $6, $5, $7, $8) ON CONFLICT (name) DO NOTHING",
            &[
                &new.name,
                &new.workflow,
                &new.input.to_string(),
                &new.start_time,
                &now,
                &new.definition_hash,
                &new.version_id,
                &ROW_FORMAT,
            ],
        )
        .await
        .map_err(pg)?;
    if inserted == 1 {
        return Ok(false);
    }
    let record = get_record(c, &new.name).await?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
    // Checks the input and version; an unpinned execution is adopted (see check_version).
    if wfc_runtime::durable::check_version(&record, new)? {
        c.execute(
            "UPDATE executions SET version_id = $2 WHERE name = $1 AND version_id IS NULL",
            &[&new.name, &new.version_id],
        )
        .await
        .map_err(pg)?;
    }
    Ok(true)
}

/// Makes execution `name` runnable now (a callback or event arrived for it) and wakes the
/// workers listening, for a worker that released it while it waited.
async fn wake<C: GenericClient>(c: &C, name: &str, now: i64) -> Result<(), StoreError> {
    c.execute(
        "UPDATE executions SET signals = signals + 1, wake_at = $2, updated_at = $2 WHERE name = $1",
        &[&name, &now],
    )
    .await
    .map_err(pg)?;
    notify(c, name).await
}

async fn notify<C: GenericClient>(c: &C, name: &str) -> Result<(), StoreError> {
    c.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &name]).await.map_err(pg)?;
    Ok(())
}

impl Store for PgStore {
    fn open_execution(&self, new: NewExecution) -> BoxFuture<'_, Result<Claim, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let existed = insert_or_check(&tx, &new, now).await?;
            tx.execute(
                "UPDATE executions SET epoch = epoch + 1, updated_at = $2, owner = 'open', lease_until = $3,
                        wake_at = NULL
                 WHERE name = $1 AND status = 'RUNNING'",
                &[&new.name, &now, &(now + lease_ms(wfc_runtime::durable::DEFAULT_LEASE))],
            )
            .await
            .map_err(pg)?;
            let record = get_record(&tx, &new.name).await?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
            let operations = get_operations(&tx, &new.name).await?;
            tx.commit().await.map_err(pg)?;
            let token = CheckpointToken { epoch: record.epoch, seq: record.checkpoint_seq };
            Ok(Claim { record, operations, token, existed })
        })
    }

    fn load_journal<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<Operation>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            if get_record(&*client, name).await?.is_none() {
                return Err(StoreError::NotFound(name.to_owned()));
            }
            get_operations(&*client, name).await
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
        let args = CommitArgs::new(name, token, &updates, &history, None);
        self.group_commit(args)
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
        if completion.status == ExecutionStatus::Running {
            let refused = StoreError::InvalidUpdate {
                execution: name.to_owned(),
                message: "an execution cannot finish as RUNNING".into(),
            };
            return Box::pin(async move { Err(refused) });
        }
        // Its last updates, its history and its end in one statement, grouped with the process's
        // checkpoints.
        let args = CommitArgs::new(name, token, &updates, &history, Some(&completion));
        self.group_commit(args)
    }

    fn list_executions(&self) -> BoxFuture<'_, Result<Vec<ExecutionRecord>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let rows = client
                .query(&format!("SELECT {RECORD_COLUMNS} FROM executions ORDER BY created_at DESC, name"), &[])
                .await
                .map_err(pg)?;
            // One corrupt row must not hide the others: it is listed with what is wrong.
            Ok(rows
                .iter()
                .map(|row| {
                    record_of(row).unwrap_or_else(|e| ExecutionRecord {
                        status: ExecutionStatus::Failed,
                        error: Some("Wfc.CorruptState".into()),
                        cause: Some(e.to_string()),
                        epoch: 0,
                        ..ExecutionRecord::running(
                            row.try_get(0).unwrap_or_default(),
                            row.try_get(1).unwrap_or_default(),
                            Value::Null,
                            String::new(),
                        )
                    })
                })
                .collect())
        })
    }

    fn list_executions_page<'a>(
        &'a self,
        workflow: Option<&'a str>,
        status: Option<ExecutionStatus>,
        name_contains: Option<&'a str>,
        after: Option<(i64, &'a str)>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ExecutionRecord>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let status = status.map(ExecutionStatus::as_str);
            let needle = name_contains.map(str::to_ascii_lowercase);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let (after_at, after_name) = (after.map(|a| a.0), after.map(|a| a.1));
            let rows = client
                .query(
                    &format!(
                        "SELECT {RECORD_COLUMNS} FROM executions
                         WHERE ($1::TEXT IS NULL OR workflow = $1) AND ($2::TEXT IS NULL OR status = $2)
                           AND ($3::TEXT IS NULL OR strpos(lower(name), $3) > 0)
                           AND ($5::BIGINT IS NULL OR created_at < $5 OR (created_at = $5 AND name > $6::TEXT))
                         ORDER BY created_at DESC, name LIMIT $4"
                    ),
                    &[&workflow, &status, &needle, &limit, &after_at, &after_name],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(record_of).collect()
        })
    }

    fn describe_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ExecutionRecord>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            get_record(&*client, name).await
        })
    }

    fn append_history<'a>(&'a self, name: &'a str, events: Vec<HistoryEvent>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let tx = client.transaction().await.map_err(pg)?;
            // No foreign key checks that the execution exists (schema version 9): this does.
            lock_record(&tx, name).await?;
            write_history(&tx, name, &HistoryWrite { events, truncate_after: None }).await?;
            tx.commit().await.map_err(pg)
        })
    }

    fn read_history_page<'a>(
        &'a self,
        name: &'a str,
        after: u64,
        limit: usize,
        reverse: bool,
    ) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            if get_record(&*client, name).await?.is_none() {
                return Err(StoreError::NotFound(name.to_owned()));
            }
            if limit == 0 {
                return Ok(Vec::new());
            }
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            // Each row holds one event at least, so `limit` rows (and, forward, the row holding
            // `after`) hold the page.
            let rows = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
            let rows = if reverse {
                client
                    .query(
                        "SELECT events, format FROM history_batches
                         WHERE execution = $1 AND ($2::BIGINT = 0 OR first_event_id < $2::BIGINT)
                         ORDER BY first_event_id DESC LIMIT $3",
                        &[&name, &after, &rows],
                    )
                    .await
            } else {
                client
                    .query(
                        "SELECT events, format FROM history_batches
                         WHERE execution = $1 AND first_event_id >= (
                             SELECT COALESCE(MAX(first_event_id), 0) FROM history_batches
                              WHERE execution = $1 AND first_event_id <= $2)
                         ORDER BY first_event_id LIMIT $3",
                        &[&name, &after, &rows],
                    )
                    .await
            }
            .map_err(pg)?;
            let mut out = Vec::new();
            for row in &rows {
                let (text, format): (String, i64) = (row.try_get(0).map_err(pg)?, row.try_get(1).map_err(pg)?);
                let events = batch_events(name, &text, format)?;
                let keep = |e: &HistoryEvent| {
                    let id = i64::try_from(e.id).unwrap_or(i64::MAX);
                    if reverse { after == 0 || id < after } else { id > after }
                };
                if reverse {
                    out.extend(events.into_iter().rev().filter(keep));
                } else {
                    out.extend(events.into_iter().filter(keep));
                }
                if out.len() >= limit {
                    break;
                }
            }
            out.truncate(limit);
            Ok(out)
        })
    }

    fn read_history<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<HistoryEvent>, StoreError>> {
        Box::pin(async move {
            let (slot, conn) = self.slot();
            let client = conn.lock().await;
            // One row with no event for an execution without history, none for no execution.
            let read = self
                .prepared(
                    slot,
                    &client,
                    "SELECT h.events, h.format FROM executions e LEFT JOIN history_batches h ON h.execution = e.name
                     WHERE e.name = $1 ORDER BY h.first_event_id",
                )
                .await?;
            let rows = client.query(&read, &[&name]).await.map_err(pg)?;
            if rows.is_empty() {
                return Err(StoreError::NotFound(name.to_owned()));
            }
            let mut events = Vec::new();
            for row in &rows {
                let Some(text) = row.try_get::<_, Option<String>>(0).map_err(pg)? else { continue };
                let format = row.try_get::<_, Option<i64>>(1).map_err(pg)?.unwrap_or(ROW_FORMAT);
                events.extend(batch_events(name, &text, format)?);
            }
            Ok(events)
        })
    }

    fn load_operation<'a>(
        &'a self,
        name: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Operation>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            Ok(get_operations(&*client, name).await?.into_iter().find(|op| op.id == id))
        })
    }

    fn complete_callback<'a>(
        &'a self,
        token: &'a str,
        completion: CallbackCompletion,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let (status, result, error, cause) = match completion {
                CallbackCompletion::Success(v) => (OpStatus::Succeeded, Some(v.to_string()), None, None),
                CallbackCompletion::Failure { error, cause } => (OpStatus::Failed, None, Some(error), Some(cause)),
            };
            let row = tx
                .query_opt(
                    "UPDATE operations SET status = $2, result = $3, error = $4, cause = $5, end_ts = $6
                     WHERE callback_token = $1 AND status = 'STARTED'
                       AND execution IN (SELECT name FROM executions WHERE status = 'RUNNING')
                     RETURNING execution",
                    &[&token, &status.as_str(), &result, &error, &cause, &now],
                )
                .await
                .map_err(pg)?;
            let Some(row) = row else {
                return Err(StoreError::UnknownToken(token.to_owned()));
            };
            let execution: String = row.get(0);
            wake(&tx, &execution, now).await?;
            tx.commit().await.map_err(pg)?;
            Ok(execution)
        })
    }

    fn deliver_event<'a>(&'a self, name: &'a str, event: Value) -> BoxFuture<'a, Result<i64, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let record = lock_record(&tx, name).await?;
            if record.status != ExecutionStatus::Running {
                return Err(wfc_runtime::durable::not_running(&record));
            }
            let row = tx
                .query_one(
                    "INSERT INTO events (execution, event, delivered_at) VALUES ($1, $2, $3) RETURNING seq",
                    &[&name, &event.to_string(), &now],
                )
                .await
                .map_err(pg)?;
            let seq: i64 = row.get(0);
            wake(&tx, name, now).await?;
            tx.commit().await.map_err(pg)?;
            Ok(seq)
        })
    }

    fn load_events<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<(i64, Value)>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let rows = client
                .query("SELECT seq, event, format FROM events WHERE execution = $1 ORDER BY seq", &[&name])
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|row| {
                    let text: String = row.try_get(1).map_err(pg)?;
                    let seq: i64 = row.try_get(0).map_err(pg)?;
                    check_row_format(&format!("inbox event {seq} of execution '{name}'"), row.try_get(2).map_err(pg)?)?;
                    Ok((row.try_get(0).map_err(pg)?, from_text(&text)?))
                })
                .collect()
        })
    }

    fn heartbeat_callback<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let row = client
                .query_opt(
                    "UPDATE operations SET heartbeats = heartbeats + 1
                     WHERE callback_token = $1 AND status = 'STARTED' RETURNING execution",
                    &[&token],
                )
                .await
                .map_err(pg)?;
            row.map(|r| r.get(0)).ok_or_else(|| StoreError::UnknownToken(token.to_owned()))
        })
    }

    fn stop_execution<'a>(
        &'a self,
        name: &'a str,
        error: Option<String>,
        cause: Option<String>,
    ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let changed = tx
                .execute(
                    "UPDATE executions SET status = 'ABORTED', error = $2, cause = $3, epoch = epoch + 1, owner = NULL,
                            lease_until = NULL, wake_at = NULL, updated_at = $4
                     WHERE name = $1 AND status = 'RUNNING'",
                    &[&name, &error, &cause, &now],
                )
                .await
                .map_err(pg)?;
            let record_now = get_record(&tx, name).await?.ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
            if changed == 1 {
                tx.execute(
                    "UPDATE operations SET status = 'CANCELLED', end_ts = $2 WHERE execution = $1 AND status = 'STARTED'",
                    &[&name, &now],
                )
                .await
                .map_err(pg)?;
                // A redriven run stopped before it recorded its redrive gets it first.
                let mut stored = Vec::new();
                if record_now.redrive_count > 0 {
                    let rows = tx
                        .query(
                            "SELECT events, format FROM history_batches WHERE execution = $1 ORDER BY first_event_id",
                            &[&name],
                        )
                        .await
                        .map_err(pg)?;
                    for row in &rows {
                        let text: String = row.try_get(0).map_err(pg)?;
                        let format: i64 = row.try_get(1).map_err(pg)?;
                        stored.extend(batch_events(name, &text, format)?);
                    }
                }
                append_after_last(&tx, &record_now.name, |last| {
                    let mut events: Vec<HistoryEvent> =
                        wfc_runtime::durable::cut_short_redriven_event(&record_now, &stored, now).into_iter().collect();
                    let last = events.last().map_or(last, |e| e.id);
                    events.extend(wfc_runtime::durable::aborted_events(&record_now, last, now));
                    events
                })
                .await?;
            }
            let record = record_now;
            tx.commit().await.map_err(pg)?;
            Ok(record)
        })
    }

    fn redrive_execution<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let record = lock_record(&tx, name).await?;
            if wfc_runtime::durable::not_redrivable(record.status).is_some() {
                return Err(wfc_runtime::durable::redrive_refused(&record));
            }
            append_after_last(&tx, &record.name, |last| {
                wfc_runtime::durable::redriven_event(&record, last, now).into_iter().collect()
            })
            .await?;
            tx.execute(
                "UPDATE executions SET status = 'RUNNING', output = NULL, error = NULL, cause = NULL, epoch = epoch + 1,
                        owner = NULL, lease_until = NULL, wake_at = $2, updated_at = $2,
                        redrive_count = redrive_count + 1, redrive_date = $2
                 WHERE name = $1",
                &[&name, &now],
            )
            .await
            .map_err(pg)?;
            let drop_in_flight = wfc_runtime::durable::REDRIVE_DROP_IN_FLIGHT.replace("?1", "$1");
            tx.execute(drop_in_flight.as_str(), &[&name]).await.map_err(pg)?;
            let reopen = wfc_runtime::durable::REDRIVE_REOPEN_CONTEXTS.replace("?1", "$1");
            tx.execute(reopen.as_str(), &[&name]).await.map_err(pg)?;
            notify(&tx, name).await?;
            let record = get_record(&tx, name).await?.ok_or_else(|| StoreError::NotFound(name.to_owned()))?;
            tx.commit().await.map_err(pg)?;
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
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let existed = create_with_events(&tx, &new, &events, now).await?;
            if !existed {
                notify(&tx, &new.name).await?;
            }
            let record = get_record(&tx, &new.name).await?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
            tx.commit().await.map_err(pg)?;
            Ok((record, existed))
        })
    }

    fn gather_start_event(
        &self,
        workflow: &str,
        gather: wfc_runtime::durable::StartGather,
    ) -> BoxFuture<'_, Result<Option<(ExecutionRecord, bool)>, StoreError>> {
        let workflow = workflow.to_owned();
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            // The row exists before it is locked, so two first events cannot both begin it.
            tx.execute(
                "INSERT INTO start_groups (workflow, groups, format, updated_at) VALUES ($1, '[]', $2, $3)
                 ON CONFLICT (workflow) DO NOTHING",
                &[&workflow, &ROW_FORMAT, &now],
            )
            .await
            .map_err(pg)?;
            let row = tx
                .query_one("SELECT groups, format FROM start_groups WHERE workflow = $1 FOR UPDATE", &[&workflow])
                .await
                .map_err(pg)?;
            let (text, format): (String, i64) = (row.get(0), row.get(1));
            check_row_format(&format!("the start groups of workflow '{workflow}'"), format)?;
            let groups = serde_json::from_str(&text).map_err(|e| {
                StoreError::Backend(format!("the stored start groups of workflow '{workflow}' are corrupt: {e}"))
            })?;
            let (groups, start) = gather(groups);
            let text = serde_json::to_string(&groups).map_err(|e| StoreError::Backend(e.to_string()))?;
            tx.execute(
                "UPDATE start_groups SET groups = $2, format = $3, updated_at = $4 WHERE workflow = $1",
                &[&workflow, &text, &ROW_FORMAT, &now],
            )
            .await
            .map_err(pg)?;
            let created = match start {
                Some((new, events)) => {
                    let existed = create_with_events(&tx, &new, &events, now).await?;
                    if !existed {
                        notify(&tx, &new.name).await?;
                    }
                    let record =
                        get_record(&tx, &new.name).await?.ok_or_else(|| StoreError::NotFound(new.name.clone()))?;
                    Some((record, existed))
                }
                None => None,
            };
            tx.commit().await.map_err(pg)?;
            Ok(created)
        })
    }

    fn claim_runnable<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
        limit: usize,
        filter: &'a ClaimFilter,
    ) -> BoxFuture<'a, Result<Vec<wfc_runtime::durable::ClaimResult>, StoreError>> {
        let (all, versions, workflows, unpinned) = match filter {
            ClaimFilter::All => (true, Vec::new(), Vec::new(), Vec::new()),
            ClaimFilter::Only { versions, workflows, unpinned } => {
                (false, versions.clone(), workflows.clone(), unpinned.clone())
            }
        };
        Box::pin(async move {
            let (slot, conn) = self.slot();
            let client = conn.lock().await;
            let now = now_ms();
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            // One statement: the rows are locked, skipped by concurrent claimers, and fenced
            // (epoch + 1) before anyone else can see them as runnable again; it returns them.
            let claim = self.prepared(slot, &client, &CLAIM).await?;
            let rows = client
                .query(
                    &claim,
                    &[&owner, &(now + lease_ms(lease)), &now, &limit, &all, &versions, &workflows, &unpinned],
                )
                .await
                .map_err(pg)?;
            let mut claims: Vec<Result<Claim, (String, StoreError)>> = rows
                .iter()
                .map(|row| {
                    let record = record_of(row).map_err(|e| (row.try_get(0).unwrap_or_default(), e))?;
                    let token = CheckpointToken { epoch: record.epoch, seq: record.checkpoint_seq };
                    Ok(Claim { record, operations: Vec::new(), token, existed: true })
                })
                .collect();
            let names: Vec<&str> = claims.iter().flatten().map(|c| c.record.name.as_str()).collect();
            if names.is_empty() {
                return Ok(claims);
            }
            // Their journals, in one query.
            let journals = self.prepared(slot, &client, &JOURNALS).await?;
            let rows = client.query(&journals, &[&names]).await.map_err(pg)?;
            let mut by_name: std::collections::HashMap<String, Result<Vec<Operation>, StoreError>> =
                std::collections::HashMap::new();
            for row in &rows {
                let name: String = row.try_get(13).map_err(pg)?;
                let operation = operation_of(row, &name);
                let entry = by_name.entry(name).or_insert_with(|| Ok(Vec::new()));
                match (entry.as_mut(), operation) {
                    (Ok(operations), Ok(operation)) => operations.push(operation),
                    (Ok(_), Err(e)) => *entry = Err(e),
                    (Err(_), _) => {}
                }
            }
            for claim in &mut claims {
                let Ok(c) = claim else { continue };
                match by_name.remove(&c.record.name) {
                    Some(Ok(operations)) => c.operations = operations,
                    Some(Err(e)) => *claim = Err((c.record.name.clone(), e)),
                    None => {}
                }
            }
            Ok(claims)
        })
    }

    fn renew_lease<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        // Grouped: the leases of a process's executions are renewed in the commits they share.
        let (reply, answer) = tokio::sync::oneshot::channel();
        let write = PgWrite::Renew(Renewal {
            name: name.to_owned(),
            epoch,
            owner: owner.to_owned(),
            until: now_ms() + lease_ms(lease),
            reply,
        });
        let sent = self.committer.send(write);
        Box::pin(async move {
            sent.map_err(|_| backend("the group committer has stopped"))?;
            answer.await.map_err(|_| backend("the group committer dropped a write"))?
        })
    }

    fn release<'a>(
        &'a self,
        name: &'a str,
        epoch: i64,
        wake_at_ms: Option<i64>,
        signals_seen: i64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let wake = wake_at_ms.unwrap_or(i64::MAX);
            let changed = tx
                .execute(
                    // The casts matter: PostgreSQL infers untyped CASE results as text, and
                    // the statement then fails to prepare (wake_at is BIGINT).
                    "UPDATE executions SET owner = NULL, lease_until = NULL,
                            wake_at = CASE WHEN signals <> $4::BIGINT THEN $5::BIGINT ELSE $3::BIGINT END
                     WHERE name = $1 AND epoch = $2",
                    &[&name, &epoch, &wake, &signals_seen, &now],
                )
                .await
                .map_err(pg)?;
            if changed == 0 {
                return Err(StoreError::StaleToken(name.to_owned()));
            }
            if wake <= now {
                notify(&tx, name).await?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn fail_execution<'a>(
        &'a self,
        name: &'a str,
        error: &'a str,
        cause: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            client
                .execute(
                    "UPDATE executions SET status = 'FAILED', error = $2, cause = $3, epoch = epoch + 1, owner = NULL,
                            lease_until = NULL, wake_at = NULL, updated_at = $4
                     WHERE name = $1 AND status = 'RUNNING'",
                    &[&name, &error, &cause, &now_ms()],
                )
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    fn wait_for_work(&self, max: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match self.listener().await {
                Ok((_, notify, _)) => {
                    let _ = tokio::time::timeout(max, notify.notified()).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN failed; polling only");
                    tokio::time::sleep(max).await;
                }
            }
        })
    }

    fn kv_signal<'a>(&'a self, topic: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            client.execute("SELECT pg_notify($1, $2)", &[&KV_CHANNEL, &topic]).await.map_err(pg)?;
            Ok(())
        })
    }

    fn kv_signals(&self) -> BoxFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>> {
        Box::pin(async move {
            match self.listener().await {
                Ok((_, _, topics)) => Some(topics.subscribe()),
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN failed; reading the key/value table from time to time");
                    None
                }
            }
        })
    }

    fn kv_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let row = client.query_opt("SELECT value, format FROM kv WHERE key = $1", &[&key]).await.map_err(pg)?;
            row.map(|r| kv_value(key, r.get(0), r.get(1))).transpose()
        })
    }

    fn kv_put<'a>(&'a self, key: &'a str, value: Value) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            client
                .execute(
                    "INSERT INTO kv (key, value, format, updated_at) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (key) DO UPDATE SET value = $2, format = $3, updated_at = $4",
                    &[&key, &value.to_string(), &ROW_FORMAT, &now_ms()],
                )
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    fn kv_replace<'a>(
        &'a self,
        key: &'a str,
        expected: Option<&'a Value>,
        value: Value,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let tx = client.transaction().await.map_err(pg)?;
            let replaced = match expected {
                // No row yet: only one of several inserting writers gets it.
                None => {
                    tx.execute(
                        "INSERT INTO kv (key, value, format, updated_at) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (key) DO NOTHING",
                        &[&key, &value.to_string(), &ROW_FORMAT, &now_ms()],
                    )
                    .await
                    .map_err(pg)?
                        == 1
                }
                // The row locked until the transaction ends, compared as JSON.
                Some(expected) => {
                    let row = tx
                        .query_opt("SELECT value, format FROM kv WHERE key = $1 FOR UPDATE", &[&key])
                        .await
                        .map_err(pg)?;
                    let current = row.map(|r| kv_value(key, r.get(0), r.get(1))).transpose()?;
                    if current.as_ref() != Some(expected) {
                        false
                    } else {
                        tx.execute(
                            "UPDATE kv SET value = $2, format = $3, updated_at = $4 WHERE key = $1",
                            &[&key, &value.to_string(), &ROW_FORMAT, &now_ms()],
                        )
                        .await
                        .map_err(pg)?;
                        true
                    }
                }
            };
            tx.commit().await.map_err(pg)?;
            Ok(replaced)
        })
    }

    fn kv_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            Ok(client.execute("DELETE FROM kv WHERE key = $1", &[&key]).await.map_err(pg)? == 1)
        })
    }

    fn kv_list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<(String, Value)>, StoreError>> {
        Box::pin(async move {
            let end = wfc_runtime::durable::kv_prefix_end(prefix);
            let conn = self.conn().await;
            let client = conn.lock().await;
            let rows = client
                .query("SELECT key, value, format FROM kv WHERE key >= $1 AND key < $2 ORDER BY key", &[&prefix, &end])
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|r| {
                    let key: String = r.get(0);
                    let value = kv_value(&key, r.get(1), r.get(2))?;
                    Ok((key, value))
                })
                .collect()
        })
    }

    fn put_version(&self, version: WorkflowVersion, current_if_new: bool) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let d = &version.definition;
            let passes = Value::from(d.passes.clone()).to_string();
            let siblings = serde_json::to_string(&d.siblings).map_err(backend)?;
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let tx = client.transaction().await.map_err(pg)?;
            let inserted = tx
                .execute(
                    "INSERT INTO workflow_versions (version_id, workflow, origin, source, language, syntax, passes,
                                                    siblings, legacy_hash, format, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (version_id) DO NOTHING",
                    &[
                        &version.version_id,
                        &d.workflow,
                        &d.origin,
                        &d.source,
                        &d.language.as_str(),
                        &d.syntax.as_str(),
                        &passes,
                        &siblings,
                        &version.legacy_hash,
                        &ROW_FORMAT,
                        &version.created_at_ms,
                    ],
                )
                .await
                .map_err(pg)?
                == 1;
            if inserted && current_if_new {
                // A version seen for the first time is the newest deploy: new executions start on it.
                set_current(&tx, &d.workflow, &version.version_id).await?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(inserted)
        })
    }

    fn get_version<'a>(&'a self, version_id: &'a str) -> BoxFuture<'a, Result<Option<WorkflowVersion>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let row = client
                .query_opt(
                    &format!("SELECT {VERSION_COLUMNS} FROM workflow_versions WHERE version_id = $1"),
                    &[&version_id],
                )
                .await
                .map_err(pg)?;
            row.as_ref().map(version_of).transpose()
        })
    }

    fn list_versions<'a>(
        &'a self,
        workflow: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<WorkflowVersion>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let rows = client
                .query(
                    &format!(
                        "SELECT {VERSION_COLUMNS} FROM workflow_versions WHERE $1::TEXT IS NULL OR workflow = $1
                         ORDER BY created_at DESC, version_id"
                    ),
                    &[&workflow],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(version_of).collect()
        })
    }

    fn current_version<'a>(&'a self, workflow: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let row = client
                .query_opt("SELECT current_version FROM workflows WHERE name = $1", &[&workflow])
                .await
                .map_err(pg)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn set_current_version<'a>(
        &'a self,
        workflow: &'a str,
        version_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            set_current(&*client, workflow, version_id).await
        })
    }

    fn replace_current_version<'a>(
        &'a self,
        workflow: &'a str,
        expected: Option<&'a str>,
        version_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let client = conn.lock().await;
            let now = now_ms();
            let changed = match expected {
                None => {
                    client
                        .execute(
                            "INSERT INTO workflows (name, current_version, updated_at) VALUES ($1, $2, $3)
                             ON CONFLICT (name) DO NOTHING",
                            &[&workflow, &version_id, &now],
                        )
                        .await
                }
                Some(expected) => {
                    client
                        .execute(
                            "UPDATE workflows SET current_version = $2, updated_at = $3 WHERE name = $1 AND current_version = $4",
                            &[&workflow, &version_id, &now, &expected],
                        )
                        .await
                }
            }
            .map_err(pg)?;
            Ok(changed == 1)
        })
    }

    fn pin_execution<'a>(
        &'a self,
        name: &'a str,
        to: &'a str,
        guard: &'a PinGuard,
    ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await;
            let mut client = conn.lock().await;
            let now = now_ms();
            let tx = client.transaction().await.map_err(pg)?;
            let changed = tx
                .execute(
                    "UPDATE executions SET version_id = $3, updated_at = $5,
                            wake_at = CASE WHEN $4::BIGINT IS NULL THEN $5::BIGINT ELSE wake_at END
                     WHERE name = $1 AND status = 'RUNNING' AND version_id IS NOT DISTINCT FROM $2
                       AND (($4::BIGINT IS NULL AND (lease_until IS NULL OR lease_until < $5)) OR epoch = $4)
                       AND ($6::BIGINT IS NULL OR checkpoint_seq = $6)",
                    &[&name, &guard.from, &to, &guard.held_epoch, &now, &guard.checkpoint_seq],
                )
                .await
                .map_err(pg)?;
            let record = get_record(&tx, name).await?;
            if changed == 0 {
                return Err(wfc_runtime::durable::pin_refused(record.as_ref(), name, guard, now));
            }
            if guard.held_epoch.is_none() {
                notify(&tx, name).await?;
            }
            tx.commit().await.map_err(pg)?;
            record.ok_or_else(|| StoreError::NotFound(name.to_owned()))
        })
    }
}

const VERSION_COLUMNS: &str =
    "version_id, workflow, origin, source, language, syntax, passes, siblings, legacy_hash, format, created_at";

fn version_of(row: &Row) -> Result<WorkflowVersion, StoreError> {
    wfc_runtime::durable::registry::parse_version((
        row.try_get(0).map_err(pg)?,
        row.try_get(1).map_err(pg)?,
        row.try_get(2).map_err(pg)?,
        row.try_get(3).map_err(pg)?,
        row.try_get(4).map_err(pg)?,
        row.try_get(5).map_err(pg)?,
        row.try_get(6).map_err(pg)?,
        row.try_get(7).map_err(pg)?,
        row.try_get(8).map_err(pg)?,
        row.try_get(9).map_err(pg)?,
        row.try_get(10).map_err(pg)?,
    ))
}

async fn set_current<C: GenericClient>(c: &C, workflow: &str, version_id: &str) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO workflows (name, current_version, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET current_version = $2, updated_at = $3",
        &[&workflow, &version_id, &now_ms()],
    )
    .await
    .map_err(pg)?;
    Ok(())
}
