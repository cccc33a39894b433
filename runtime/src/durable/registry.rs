//! The store's registry of workflows: workflow name → its versions, each a definition's source
//! text, and the version new executions of the workflow start on.
//!
//! Every durable execution is **pinned** to one version (`ExecutionRecord::version_id`): the
//! version it started on, until an explicit upgrade moves it (`wfc executions upgrade`, after a
//! replay check, `wfc_worker::replay::check`). A process resumes an execution only on its own
//! version: a worker runs the versions it was deployed with, and loads any other stored version
//! of its workflows from the source text kept here (with its recorded optimizer passes) when it
//! has an interpreter and a loader for them (`wfc_worker::Workflows::loader`).
//!
//! A version id is stable across wfc releases: it is a SHA-256 of what the user wrote (the
//! source text, the Serverless Workflow subflow files beside it, the optimizer passes), never of
//! the IR wfc derives from it, so upgrading wfc or changing the IR does not change it.
//!
//! The API is small on purpose, so that every front end maps onto it:
//!
//! - a worker registers the definitions it was started with ([`Registry::register`]);
//! - `wfc executions start FILE` registers FILE and pins the new execution to it;
//! - a future `wfc serve`: `CreateStateMachine` is [`Registry::register`] of the first version,
//!   `UpdateStateMachine` is [`Registry::register`] of the new definition (which also makes it
//!   current; [`Registry::publish`] makes an older one current again), `StartExecution` starts
//!   on [`Registry::current`], `DescribeStateMachine`/`ListStateMachineVersions` read
//!   [`Registry::versions`] and [`Registry::version`];
//! - an event-started Serverless Workflow instance starts on [`Registry::current`] of its
//!   workflow.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::migrations::check_row_format;
use super::{Store, StoreError};

/// The definition language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Amazon States Language.
    Asl,
    /// Serverless Workflow.
    Sw,
}

/// The syntax the source is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Syntax {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

impl Language {
    /// `asl` or `sw`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Asl => "asl",
            Language::Sw => "sw",
        }
    }

    /// Parses [`Language::as_str`].
    pub fn parse(text: &str) -> Option<Language> {
        [Language::Asl, Language::Sw].into_iter().find(|l| l.as_str() == text)
    }
}

impl Syntax {
    /// `json` or `yaml`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Syntax::Json => "json",
            Syntax::Yaml => "yaml",
        }
    }

    /// Parses [`Syntax::as_str`].
    pub fn parse(text: &str) -> Option<Syntax> {
        [Syntax::Json, Syntax::Yaml].into_iter().find(|s| s.as_str() == text)
    }
}

/// A workflow definition as the user wrote it: everything needed to load it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// The workflow's name (the compiler names a workflow after its file's stem).
    pub workflow: String,
    /// Where it came from (the path as given; its stem names the workflow when it is loaded).
    pub origin: String,
    /// The source text.
    pub source: String,
    /// ASL or Serverless Workflow.
    pub language: Language,
    /// JSON or YAML.
    pub syntax: Syntax,
    /// The optimizer passes it is loaded with, by name, in pipeline order.
    pub passes: Vec<String>,
    /// For a Serverless Workflow, the definitions its subflows resolve in (path, text).
    #[serde(default)]
    pub siblings: Vec<(String, String)>,
}

impl Definition {
    /// The stable version id: the first 16 bytes, in hex, of a SHA-256 of the workflow's name,
    /// the source text, the subflow files (name and text) and the pass names. Not of the IR: a
    /// wfc upgrade keeps it (unless it changes the default passes).
    pub fn version_id(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        // The workflow's name too: two files with the same text are two workflows.
        hash.update(self.workflow.as_bytes());
        hash.update(b"\0source\0");
        hash.update(self.source.as_bytes());
        for (path, text) in &self.siblings {
            let name = std::path::Path::new(path).file_name().and_then(|n| n.to_str()).unwrap_or(path);
            hash.update(b"\0sibling\0");
            hash.update(name.as_bytes());
            hash.update(b"\0");
            hash.update(text.as_bytes());
        }
        hash.update(b"\0passes\0");
        hash.update(self.passes.join(",").as_bytes());
        hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
    }
}

/// One stored version of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowVersion {
    /// [`Definition::version_id`].
    pub version_id: String,
    /// The definition.
    pub definition: Definition,
    /// The hash wfc stored with executions before versions existed ([`super::definition_hash`]
    /// of the IR the registering wfc derived), so an execution started by an older wfc can be
    /// matched to this version.
    pub legacy_hash: Option<String>,
    /// When it was first registered (ms since the Unix epoch).
    pub created_at_ms: i64,
}

/// The registry of one store (see the module documentation).
#[derive(Debug, Clone)]
pub struct Registry {
    store: Arc<dyn Store>,
}

impl Registry {
    /// The registry kept in `store`.
    pub fn new(store: Arc<dyn Store>) -> Registry {
        Registry { store }
    }

    /// Stores `definition` as a version of its workflow (idempotent: registering the same
    /// version again changes nothing). A version registered for the first time becomes the
    /// workflow's current version (a deploy); returns the version and whether it was new.
    pub async fn register(
        &self,
        definition: Definition,
        legacy_hash: Option<String>,
    ) -> Result<(WorkflowVersion, bool), StoreError> {
        self.put(definition_version(definition, legacy_hash), true).await
    }

    /// Stores `definition` as a version of its workflow without making it current (an upgrade
    /// target: running executions move to it, new ones keep starting on the current version).
    pub async fn store(
        &self,
        definition: Definition,
        legacy_hash: Option<String>,
    ) -> Result<(WorkflowVersion, bool), StoreError> {
        self.put(definition_version(definition, legacy_hash), false).await
    }

    async fn put(&self, version: WorkflowVersion, current_if_new: bool) -> Result<(WorkflowVersion, bool), StoreError> {
        let inserted = self.store.put_version(version.clone(), current_if_new).await?;
        let stored = self.version(&version.version_id).await?.unwrap_or(version);
        Ok((stored, inserted))
    }

    /// One version, by id.
    pub async fn version(&self, version_id: &str) -> Result<Option<WorkflowVersion>, StoreError> {
        self.store.get_version(version_id).await
    }

    /// Every version of `workflow` (or of every workflow), newest first.
    pub async fn versions(&self, workflow: Option<&str>) -> Result<Vec<WorkflowVersion>, StoreError> {
        self.store.list_versions(workflow).await
    }

    /// The version new executions of `workflow` start on, if it has any.
    pub async fn current(&self, workflow: &str) -> Result<Option<WorkflowVersion>, StoreError> {
        match self.store.current_version(workflow).await? {
            Some(id) => self.version(&id).await,
            None => Ok(None),
        }
    }

    /// Makes a stored version of `workflow` its current one only if the current one is still
    /// `expected` (the one a read-modify-write started from; `None`: none). Returns whether it did:
    /// `false` means another writer got there first, so read again and retry.
    pub async fn replace_current(
        &self,
        workflow: &str,
        expected: Option<&str>,
        version_id: &str,
    ) -> Result<bool, StoreError> {
        self.store.replace_current_version(workflow, expected, version_id).await
    }

    /// Makes a registered version the current one of its workflow (a rollback, or
    /// `UpdateStateMachine` to a known version). Running executions keep their own.
    pub async fn publish(&self, version_id: &str) -> Result<(), StoreError> {
        let version =
            self.version(version_id).await?.ok_or_else(|| StoreError::NotFound(format!("version {version_id}")))?;
        self.store.set_current_version(&version.definition.workflow, version_id).await
    }
}

fn definition_version(definition: Definition, legacy_hash: Option<String>) -> WorkflowVersion {
    WorkflowVersion { version_id: definition.version_id(), definition, legacy_hash, created_at_ms: super::now_ms() }
}

/// A `workflow_versions` row before its text columns are checked.
pub type RawVersion = (String, String, String, String, String, String, String, String, Option<String>, i64, i64);

/// Checks a stored version (both stores read the same columns).
pub fn parse_version(raw: RawVersion) -> Result<WorkflowVersion, StoreError> {
    let (version_id, workflow, origin, source, language, syntax, passes, siblings, legacy_hash, format, created_at_ms) =
        raw;
    check_row_format(&format!("workflow version {version_id}"), format)?;
    let corrupt = |what: &str| StoreError::Backend(format!("workflow version {version_id} is corrupt: {what}"));
    let definition = Definition {
        workflow,
        origin,
        source,
        language: Language::parse(&language).ok_or_else(|| corrupt("unknown language"))?,
        syntax: Syntax::parse(&syntax).ok_or_else(|| corrupt("unknown syntax"))?,
        passes: serde_json::from_str(&passes).map_err(|_| corrupt("its passes are not a JSON list"))?,
        siblings: serde_json::from_str(&siblings).map_err(|_| corrupt("its subflow files are not a JSON list"))?,
    };
    Ok(WorkflowVersion { version_id, definition, legacy_hash, created_at_ms })
}
