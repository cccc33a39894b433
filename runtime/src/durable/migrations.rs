//! The versioned store format, shared by both stores (the crates `wfc-sqlite` and `wfc-postgres`).
//!
//! - **Schema.** Each store lists its migrations beside its SQL (`MIGRATIONS` in each store
//!   crate's `lib.rs`): entry `i` takes the schema from version `i` to `i + 1`; entries are append
//!   only. Opening a store applies the missing ones in one transaction (SQLite: `BEGIN
//!   IMMEDIATE`; PostgreSQL: under an advisory lock) and records each in the table
//!   `wfc_migrations` (version, description, applied_at); a store whose schema is newer than
//!   this build knows is refused ([`StoreError::SchemaTooNew`]), before anything is written.
//! - **Rows.** The rows wfc reads back (executions with their input and output, journal entries,
//!   history events, inbox events, stored definitions) carry a `format` column:
//!   [`ROW_FORMAT`] is what this build writes, and a reader refuses a row of a newer format
//!   with a clear error instead of misreading it ([`check_row_format`]). The optimized IR is not
//!   stored at all: a workflow version is stored as its source text and re-derived from it by
//!   whichever wfc resumes it (see [`super::registry`]), so a change of the IR or of the
//!   optimizer never makes a stored execution unreadable.

use super::StoreError;

/// One schema migration.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// What it changes, recorded in `wfc_migrations`.
    pub description: &'static str,
    /// The SQL (several statements).
    pub sql: &'static str,
}

/// The format of the rows this build writes. A reader understands every format up to this one.
pub const ROW_FORMAT: i64 = 1;

/// The migrations a store at schema `current` needs, or why it cannot be opened.
pub fn pending(current: i64, migrations: &'static [Migration]) -> Result<&'static [Migration], StoreError> {
    let latest = migrations.len() as i64;
    if current > latest {
        return Err(StoreError::SchemaTooNew { found: current, supported: latest });
    }
    Ok(&migrations[usize::try_from(current).unwrap_or(0)..])
}

/// Refuses a row written in a newer format than [`ROW_FORMAT`]: a newer wfc wrote it, and this
/// one would misread it.
pub fn check_row_format(what: &str, format: i64) -> Result<(), StoreError> {
    if format > ROW_FORMAT || format < 1 {
        return Err(StoreError::Backend(format!(
            "{what} is stored in row format {format}, which this wfc does not understand (it reads formats 1 to {ROW_FORMAT}); open the store with a newer wfc"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &[Migration] = &[Migration { description: "a", sql: "" }, Migration { description: "b", sql: "" }];

    #[test]
    fn pending_migrations_and_newer_stores() {
        assert_eq!(pending(0, TWO).unwrap().len(), 2);
        assert_eq!(pending(1, TWO).unwrap()[0].description, "b");
        assert!(pending(2, TWO).unwrap().is_empty());
        assert_eq!(pending(3, TWO).unwrap_err(), StoreError::SchemaTooNew { found: 3, supported: 2 });
        assert!(check_row_format("x", ROW_FORMAT).is_ok());
        assert!(check_row_format("x", ROW_FORMAT + 1).unwrap_err().to_string().contains("newer wfc"));
    }
}
