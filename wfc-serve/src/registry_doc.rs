//! Documents kept as a registry workflow's current version (`wfc serve`'s version and alias
//! lists, [`crate::versions`], [`crate::aliases`]): each is written whole, and several servers
//! may share a store, so a change is written only over the version it was read from
//! (`Registry::replace_current`, a conditional write in both stores) and, when another writer
//! replaced it meanwhile, read and made again.

use std::sync::Arc;

use futures::future::BoxFuture;

use wfc_runtime::durable::{Definition, Language, Registry, Store, Syntax};

use crate::error::ApiError;

/// How many times a change is read and made again when other writers on the same store
/// replaced the document meanwhile.
pub(crate) const WRITE_ATTEMPTS: usize = 16;

/// Reads a document (`read`: it and the registry version it was read from, `None` when none
/// is stored), lets `change` edit it (it says whether it did) and writes it back (`write`: with
/// the version it was read from; whether it was still current) until a write lands or nothing
/// changes; `what` names the document in the error after [`WRITE_ATTEMPTS`] lost races.
pub(crate) async fn change<'a, D, T>(
    what: impl FnOnce() -> String,
    read: impl Fn() -> BoxFuture<'a, Result<(D, Option<String>), ApiError>>,
    write: impl Fn(D, Option<String>) -> BoxFuture<'a, Result<bool, ApiError>>,
    mut change: impl FnMut(&mut D) -> Result<(T, bool), ApiError>,
) -> Result<T, ApiError> {
    for _ in 0..WRITE_ATTEMPTS {
        let (mut doc, read_from) = read().await?;
        let (out, changed) = change(&mut doc)?;
        if !changed || write(doc, read_from).await? {
            return Ok(out);
        }
    }
    Err(ApiError::internal(format!(
        "{} were changed by other writers {WRITE_ATTEMPTS} times while this request wrote them",
        what()
    )))
}

/// Stores `source` as a version of the registry workflow `workflow` (of `origin`) and makes it
/// current if the current one is still `read_from` (`None`: none yet); returns whether it did.
pub(crate) async fn write(
    store: &Arc<dyn Store>,
    workflow: &str,
    origin: &str,
    source: String,
    read_from: Option<&str>,
) -> Result<bool, ApiError> {
    let definition = Definition {
        workflow: workflow.to_owned(),
        origin: origin.to_owned(),
        source,
        language: Language::Asl,
        syntax: Syntax::Json,
        passes: Vec::new(),
        siblings: Vec::new(),
    };
    let registry = Registry::new(Arc::clone(store));
    let (version, _) = registry.store(definition, None).await?;
    Ok(registry.replace_current(workflow, read_from, &version.version_id).await?)
}
