//! RedriveExecution's `clientToken`s: a request repeated with the same token answers with the
//! first one's `redriveDate` instead of redriving again, for 15 minutes and the last 10 tokens
//! per execution, as on AWS. Kept in the store's key/value table
//! (`serve/redrive-token/<execution>/<token>` → `{"date", "at"}`), so a retry that reaches
//! another server on the store, or the same one after a restart, is still idempotent.

use std::sync::Arc;

use serde_json::json;
use wfc_runtime::durable::{Store, StoreError};

/// How long a `clientToken` answers idempotently (AWS: 15 minutes, the last 10 per execution).
const TOKEN_TTL_MS: i64 = 15 * 60 * 1000;
const TOKENS_KEPT: usize = 10;
const PREFIX: &str = "serve/redrive-token/";

/// The client tokens of recent redrives, in the store.
#[derive(Debug, Clone)]
pub(crate) struct Tokens {
    store: Arc<dyn Store>,
}

impl Tokens {
    pub(crate) fn new(store: Arc<dyn Store>) -> Tokens {
        Tokens { store }
    }

    /// The `redriveDate` (ms) of the redrive of `execution` that `token` asked for, if recent.
    pub(crate) async fn answered(&self, execution: &str, token: &str) -> Result<Option<i64>, StoreError> {
        let row = self.store.kv_get(&format!("{PREFIX}{execution}/{token}")).await?;
        Ok(row
            .filter(|r| r["at"].as_i64().is_some_and(|at| crate::api::now_ms() - at < TOKEN_TTL_MS))
            .and_then(|r| r["date"].as_i64()))
    }

    /// Remembers that `token` redrove `execution` at `date`; forgets the expired ones and all but
    /// the last [`TOKENS_KEPT`].
    pub(crate) async fn remember(&self, execution: &str, token: &str, date: i64) -> Result<(), StoreError> {
        let now = crate::api::now_ms();
        self.store.kv_put(&format!("{PREFIX}{execution}/{token}"), json!({ "date": date, "at": now })).await?;
        let mut kept = self.store.kv_list(&format!("{PREFIX}{execution}/")).await?;
        kept.sort_by_key(|(_, r)| std::cmp::Reverse(r["at"].as_i64().unwrap_or(0)));
        for (i, (key, row)) in kept.iter().enumerate() {
            if i >= TOKENS_KEPT || row["at"].as_i64().is_none_or(|at| now - at >= TOKEN_TTL_MS) {
                self.store.kv_delete(key).await?;
            }
        }
        Ok(())
    }
}
