//! Opens a wfc durable store from its URL, the one place that maps a URL to a store crate (as
//! sqlx's `Any` driver does over its per-database crates):
//!
//! - `sqlite:PATH` (durability FULL) or `sqlite:PATH?synchronous=normal`: [`wfc_sqlite::SqliteStore`];
//! - `postgres://…` or `postgresql://…`: `wfc_postgres::PgStore`, with this crate's feature
//!   `postgres` (without it such a URL is refused with [`StoreError::Unsupported`]).
//!
//! The `wfc` command, `wfc serve` and the benchmarks open their `--store` through it. A program
//! that knows its store depends on that store's crate instead (`wfc-sqlite` or `wfc-postgres`).
//! The [`Store`] trait, the journal and the worker stay in `wfc-runtime` (feature `durable`) for
//! now; see docs/durable.md, "Crates".

use std::sync::Arc;

use wfc_runtime::durable::{Store, StoreError};
use wfc_sqlite::{SqliteStore, Synchronous};

/// Opens a SQLite store from a URL: `sqlite:PATH` (durability FULL) or
/// `sqlite:PATH?synchronous=normal`, creating the file if it does not exist. For `postgres://`
/// URLs use [`connect`].
pub fn open_store(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    open_sqlite(url, true)
}

/// `sqlite:PATH[?synchronous=...]`, created when `create`, else refused with
/// [`StoreError::NoStore`] when the file does not exist.
fn open_sqlite(url: &str, create: bool) -> Result<Arc<dyn Store>, StoreError> {
    if is_postgres(url) {
        // The PostgreSQL connection is async: use [`connect`].
        return Err(StoreError::Unsupported(format!("{url} (open it with wfc_stores::connect)")));
    }
    let Some(rest) = url.strip_prefix("sqlite:") else {
        return Err(StoreError::BadUrl(url.to_owned()));
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    if path.is_empty() {
        return Err(StoreError::BadUrl(url.to_owned()));
    }
    let synchronous = match query {
        None | Some("synchronous=full") | Some("synchronous=FULL") => Synchronous::Full,
        Some("synchronous=normal") | Some("synchronous=NORMAL") => Synchronous::Normal,
        Some(_) => return Err(StoreError::BadUrl(url.to_owned())),
    };
    let store =
        if create { SqliteStore::open(path, synchronous)? } else { SqliteStore::open_existing(path, synchronous)? };
    Ok(Arc::new(store))
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Opens a store from a URL, as [`open_store`] does, including `postgres://` URLs (feature
/// `postgres`), which need this async form since the connection runs on the current runtime.
pub async fn connect(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    connect_with(url, true).await
}

/// Opens an existing store, as [`connect`] does, except that a SQLite file that does not exist
/// is refused with [`StoreError::NoStore`] and nothing is created: for commands that only read
/// or change existing executions, where a misspelt path would otherwise leave an empty store
/// behind and answer as if it held nothing. (A PostgreSQL database is never created.)
pub async fn connect_existing(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    connect_with(url, false).await
}

async fn connect_with(url: &str, create: bool) -> Result<Arc<dyn Store>, StoreError> {
    if is_postgres(url) {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(wfc_postgres::PgStore::connect(url).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::Unsupported(url.to_owned()));
    }
    open_sqlite(url, create)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_are_rejected() {
        assert!(matches!(open_store("mysql://x"), Err(StoreError::BadUrl(_))));
        assert!(matches!(open_store("sqlite:"), Err(StoreError::BadUrl(_))));
        assert!(matches!(open_store("sqlite:/tmp/x.db?synchronous=off"), Err(StoreError::BadUrl(_))));
    }

    #[test]
    fn an_existing_store_is_not_created() {
        let dir = std::env::temp_dir().join(format!("wfc-no-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("typo.db");
        let url = format!("sqlite:{}?synchronous=normal", path.display());
        match open_sqlite(&url, false) {
            Err(StoreError::NoStore(p)) => assert_eq!(p, path.display().to_string()),
            other => panic!("expected NoStore, got {:?}", other.map(|_| ())),
        }
        assert!(!path.exists(), "a refused open created {}", path.display());
        // Once created by a writer, it opens.
        open_sqlite(&url, true).unwrap();
        assert!(open_sqlite(&url, false).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
