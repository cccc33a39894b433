//! State machines, kept in the store's workflow registry (issue 17, [`Registry`]), so they
//! survive a restart and executions stay pinned to the definition they started with.
//!
//! The mapping (the one place that knows it, so the storage can change without the API):
//!
//! - a state machine is a registry **workflow** named after it; each definition it had is a
//!   **version**, and the current version is its definition now. `CreateStateMachine` and
//!   `UpdateStateMachine` register the definition and make it current; running executions keep
//!   the version they are pinned to, new ones start on the current one.
//! - A registry version is a Step Functions **revision**: a definition with its `type` and
//!   `roleArn`, which ride in the version's `origin` (`wfc-serve:<TYPE>:<roleArn>`), so an
//!   execution pinned to a version runs under the role its revision had (`$$.Execution.RoleArn`,
//!   DescribeStateMachineForExecution) without another read of the store. A version id covers
//!   the source text, not the origin; so that an `UpdateStateMachine` changing only the role
//!   (or a machine created again with the same definition and another type or role) gets a
//!   revision of its own, as on AWS, such a revision's definition carries its metadata as a
//!   hashed entry [`REVISION_ENTRY`] among the definition's extra files (which an ASL
//!   definition otherwise has none of, and which its loading ignores). The first revision of
//!   a definition has no entry, so versions written before keep their ids.
//! - `DeleteStateMachine` registers a **tombstone** version (origin `wfc-serve:DELETED`, a source
//!   unique to the deletion) and makes it current: a machine whose current version is a
//!   tombstone does not exist. Its executions keep running on their own versions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wfc_runtime::durable::{Definition, Language, Registry, Store, Syntax, WorkflowVersion};

use crate::error::ApiError;

const ORIGIN_PREFIX: &str = "wfc-serve:";
const DELETED: &str = "wfc-serve:DELETED";
/// The name of the extra file that makes a revision's id cover its type and role (see the
/// module documentation).
pub(crate) const REVISION_ENTRY: &str = "wfc-serve-revision.json";

/// STANDARD or EXPRESS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineType {
    /// Durable, exactly-once state transitions; executions are in the store.
    Standard,
    /// StartSyncExecution runs it in memory and keeps no record (StartExecution runs it
    /// durably, like a STANDARD one).
    Express,
}

impl MachineType {
    /// The AWS name.
    pub fn as_str(self) -> &'static str {
        match self {
            MachineType::Standard => "STANDARD",
            MachineType::Express => "EXPRESS",
        }
    }

    /// Parses the AWS name.
    pub fn parse(text: &str) -> Option<MachineType> {
        [MachineType::Standard, MachineType::Express].into_iter().find(|t| t.as_str() == text)
    }
}

/// A state machine as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Its name.
    pub name: String,
    /// STANDARD or EXPRESS.
    pub machine_type: MachineType,
    /// The `roleArn` it was created with.
    pub role_arn: String,
    /// The current version (its definition, and its id: the `revisionId`).
    pub version: WorkflowVersion,
    /// When it was created (ms since the Unix epoch).
    pub created_at_ms: i64,
}

/// The state machines of one store, with a cache of loaded definitions by version id.
#[derive(Debug)]
pub struct Machines {
    registry: Registry,
    loaded: Mutex<HashMap<String, Arc<wfc_ir::Workflow>>>,
}

fn origin(machine_type: MachineType, role_arn: &str) -> String {
    format!("{ORIGIN_PREFIX}{}:{role_arn}", machine_type.as_str())
}

/// The type and role recorded in a version's origin; `None` for a tombstone or a version that
/// wfc serve did not write (a workflow registered by `wfc worker` or `wfc run`).
pub(crate) fn metadata(version: &WorkflowVersion) -> Option<(MachineType, String)> {
    let rest = version.definition.origin.strip_prefix(ORIGIN_PREFIX)?;
    let (kind, role) = rest.split_once(':')?;
    Some((MachineType::parse(kind)?, role.to_owned()))
}

fn is_tombstone(version: &WorkflowVersion) -> bool {
    version.definition.origin == DELETED
}

/// The path a definition is loaded under (JSON: Step Functions definitions are JSON).
fn source_path(name: &str) -> String {
    format!("{name}.asl.json")
}

/// Loads a definition into the IR, named after its state machine (the compiler would name it
/// after the path's stem, which stops at the first `.` of a machine name).
pub fn load_definition(name: &str, text: &str) -> Result<wfc_core::Loaded, wfc_core::Diagnostics> {
    let path = source_path(name);
    let source = wfc_core::Source { path: &path, text };
    if wfc_core::Dialect::detect(source) != wfc_core::Dialect::Asl {
        let diag = wfc_core::Diagnostic::error(
            "WFC0001",
            "this is a Serverless Workflow definition; the Step Functions API takes Amazon States Language",
            0..0,
        );
        return Err(wfc_core::Diagnostics::new(path, text, vec![diag]));
    }
    let mut loaded = wfc_core::load_with(source, &wfc_core::Settings::new())?;
    loaded.workflow.name = name.to_owned();
    Ok(loaded)
}

/// The registry's definition of a machine's source, without the revision entry.
fn definition(name: &str, text: &str, origin: String) -> Definition {
    Definition {
        workflow: name.to_owned(),
        origin,
        source: text.to_owned(),
        language: Language::Asl,
        syntax: Syntax::Json,
        passes: wfc_core::optimize::Passes::default().enabled().into_iter().map(|p| p.name().to_owned()).collect(),
        siblings: Vec::new(),
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Machines {
    /// The machines of `store`.
    pub fn new(store: Arc<dyn Store>) -> Machines {
        Machines { registry: Registry::new(store), loaded: Mutex::new(HashMap::new()) }
    }

    fn machine(&self, name: &str, version: WorkflowVersion, versions: &[WorkflowVersion]) -> Option<Machine> {
        let (machine_type, role_arn) = metadata(&version)?;
        // Created: the oldest version registered since the last deletion (a re-registered old
        // definition keeps its first date, so fall back on the current version's).
        let last_deleted = versions.iter().filter(|v| is_tombstone(v)).map(|v| v.created_at_ms).max();
        let created_at_ms = versions
            .iter()
            .filter(|v| !is_tombstone(v) && last_deleted.is_none_or(|d| v.created_at_ms > d))
            .map(|v| v.created_at_ms)
            .min()
            .unwrap_or(version.created_at_ms);
        Some(Machine { name: name.to_owned(), machine_type, role_arn, version, created_at_ms })
    }

    /// The machine named `name`, if it exists (not deleted).
    pub async fn get(&self, name: &str) -> Result<Option<Machine>, ApiError> {
        let Some(current) = self.registry.current(name).await? else { return Ok(None) };
        if is_tombstone(&current) {
            return Ok(None);
        }
        let versions = self.registry.versions(Some(name)).await?;
        Ok(self.machine(name, current, &versions))
    }

    /// The machine named `name`, or `StateMachineDoesNotExist` naming `arn`.
    pub async fn require(&self, name: &str, arn: &str) -> Result<Machine, ApiError> {
        self.get(name).await?.ok_or_else(|| does_not_exist(arn))
    }

    /// Every machine, by name.
    pub async fn list(&self) -> Result<Vec<Machine>, ApiError> {
        let versions = self.registry.versions(None).await?;
        let mut names: Vec<&str> = versions.iter().map(|v| v.definition.workflow.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let mut out = Vec::new();
        for name in names {
            if let Some(m) = self.get(name).await? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// Registers `text` as the definition of `name` and makes it current. The caller has
    /// validated it. If the plain definition is already a version with another origin (another
    /// type or role), the revision entry gives this one an id of its own.
    async fn put(&self, name: &str, text: &str, origin: String) -> Result<WorkflowVersion, ApiError> {
        let mut definition = definition(name, text, origin);
        if let Some(plain) = self.registry.version(&definition.version_id()).await?
            && plain.definition.origin != definition.origin
        {
            let entry = serde_json::json!({ "origin": definition.origin }).to_string();
            definition.siblings = vec![(REVISION_ENTRY.to_owned(), entry)];
        }
        let (version, _) = self.registry.register(definition, None).await?;
        self.registry.publish(&version.version_id).await?;
        Ok(version)
    }

    /// CreateStateMachine (after validation). The same name, definition, type and role again is
    /// idempotent (as on AWS); anything else under a used name is `StateMachineAlreadyExists`.
    pub async fn create(
        &self,
        name: &str,
        text: &str,
        machine_type: MachineType,
        role_arn: &str,
        arn: &str,
    ) -> Result<Machine, ApiError> {
        if let Some(existing) = self.get(name).await? {
            let same = existing.version.definition.source == text
                && existing.machine_type == machine_type
                && existing.role_arn == role_arn;
            if same {
                return Ok(existing);
            }
            return Err(ApiError::client(
                "StateMachineAlreadyExists",
                format!("State Machine Already Exists: '{arn}' (with another definition, type or roleArn)"),
            ));
        }
        self.put(name, text, origin(machine_type, role_arn)).await?;
        self.require(name, arn).await
    }

    /// UpdateStateMachine (after validation): a new current definition and/or role. Running
    /// executions keep the version they are pinned to.
    pub async fn update(
        &self,
        machine: &Machine,
        text: Option<&str>,
        role_arn: Option<&str>,
    ) -> Result<Machine, ApiError> {
        let text = text.unwrap_or(&machine.version.definition.source);
        let role = role_arn.unwrap_or(&machine.role_arn);
        self.put(&machine.name, text, origin(machine.machine_type, role)).await?;
        self.get(&machine.name).await?.ok_or_else(|| ApiError::internal("the updated state machine vanished"))
    }

    /// DeleteStateMachine: a tombstone becomes current (see the module documentation).
    pub async fn delete(&self, name: &str) -> Result<(), ApiError> {
        let text = format!("{{\"Comment\": \"state machine {name} deleted at {} ms\"}}", now_ms());
        self.put(name, &text, DELETED.to_owned()).await?;
        Ok(())
    }

    /// One stored version (DescribeStateMachineForExecution), if it is one of `name`'s.
    pub async fn version(&self, name: &str, version_id: &str) -> Result<Option<Machine>, ApiError> {
        let Some(version) = self.registry.version(version_id).await? else { return Ok(None) };
        if version.definition.workflow != name {
            return Ok(None);
        }
        let versions = self.registry.versions(Some(name)).await?;
        Ok(self.machine(name, version, &versions))
    }

    /// The IR of a version (cached by version id).
    pub fn workflow(&self, version: &WorkflowVersion) -> Result<Arc<wfc_ir::Workflow>, String> {
        if let Some(w) = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).get(&version.version_id) {
            return Ok(Arc::clone(w));
        }
        let w = Arc::new(load_version(version)?);
        self.loaded.lock().unwrap_or_else(|p| p.into_inner()).insert(version.version_id.clone(), Arc::clone(&w));
        Ok(w)
    }
}

/// The worker's loader: a stored version's source back into the IR.
/// Versions that wfc serve did not register (a `wfc worker`'s files on a shared store) are
/// refused, so the worker leaves their executions to the processes that run them, with their
/// own task handlers.
pub fn load_version(version: &WorkflowVersion) -> Result<wfc_ir::Workflow, String> {
    let d = &version.definition;
    if metadata(version).is_none() {
        return Err(format!(
            "version {} of '{}' was not registered by wfc serve (origin '{}'): it is left for the process that runs it",
            version.version_id, d.workflow, d.origin
        ));
    }
    load_definition(&d.workflow, &d.source).map(|l| l.workflow).map_err(|diags| {
        let first = diags.first_error().map(|d| format!("{}: {}", d.code, d.message));
        format!(
            "the stored definition of state machine '{}' (version {}) does not load: {}",
            d.workflow,
            version.version_id,
            first.unwrap_or_default()
        )
    })
}

/// `StateMachineDoesNotExist` for `arn`.
pub fn does_not_exist(arn: &str) -> ApiError {
    ApiError::client("StateMachineDoesNotExist", format!("State Machine Does Not Exist: '{arn}'"))
}
