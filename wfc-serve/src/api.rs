//! The Step Functions operations: each takes the request's JSON object and returns the
//! response's, or an [`ApiError`] in AWS's shape. Member names and shapes follow the botocore
//! service model (`stepfunctions/2016-11-23/service-2.json`); the boto3 suites run by
//! wfc-cli/tests/serve.rs and serve_more.rs (`tests/serve/boto3_suite.py`, `boto3_more_suite.py`)
//! check every response member against it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use wfc_interp::DynHandler;
use wfc_runtime::durable::{
    self, CallbackCompletion, ExecutionRecord, ExecutionStatus, NewExecution, Store, StoreError,
};
use wfc_runtime::{Clock, Failure, Identity, RunOptions, Status};

use crate::aliases::StartedBy;
use crate::arn::{Arns, check_name};
use crate::error::ApiError;
use crate::history::aws_event;
use crate::machines::{Machine, MachineType, Machines, load_definition};
use crate::tasks::{ACTIVITY_TOKEN_PREFIX, Activities, Answer};
use crate::versions::Qualifier;

/// The core operations `wfc serve` implements (with [`crate::MORE_OPERATIONS`]; every other one
/// is `UnknownOperationException`).
pub const OPERATIONS: &[&str] = &[
    "CreateStateMachine",
    "DescribeStateMachine",
    "UpdateStateMachine",
    "DeleteStateMachine",
    "ListStateMachines",
    "ValidateStateMachineDefinition",
    "DescribeStateMachineForExecution",
    "StartExecution",
    "StartSyncExecution",
    "DescribeExecution",
    "GetExecutionHistory",
    "ListExecutions",
    "StopExecution",
    "SendTaskSuccess",
    "SendTaskFailure",
    "SendTaskHeartbeat",
    "CreateActivity",
    "DescribeActivity",
    "ListActivities",
    "DeleteActivity",
    "GetActivityTask",
];

/// AWS's limit on execution input and task output (256 KiB).
pub const MAX_PAYLOAD: usize = 256 * 1024;

/// The service behind the HTTP layer.
pub struct Service {
    pub(crate) arns: Arns,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) machines: Machines,
    pub(crate) activities: Arc<Activities>,
    /// The task handler of executions (activities, then the configured handler).
    pub(crate) handler: Arc<dyn DynHandler>,
    /// How long GetActivityTask waits for a task (AWS: 60 s).
    pub(crate) activity_poll: Duration,
    /// `--mock-config`: the test cases a `#TestCase` ARN may name.
    pub(crate) mocks: Option<Arc<crate::mock_config::MockConfig>>,
    /// `--virtual-time`: StartSyncExecution runs on a clock that skips its waits, as the
    /// durable worker's executions do.
    pub(crate) virtual_time: bool,
    /// RedriveExecution's recent client tokens (in the store).
    pub(crate) redrives: crate::redrive_tokens::Tokens,
    /// Where the Map Runs seen so far are.
    pub(crate) map_runs: crate::map_runs::Found,
    /// Where DISTRIBUTED Maps read and write objects (StartSyncExecution's; the worker has its own).
    pub(crate) objects: wfc_runtime::distributed::Objects,
    /// The STANDARD machines being deleted, looked up at each transition of the executions this
    /// server runs (see [`crate::deleting`]).
    pub(crate) deleting_machines: crate::deleting::DeletingMachines,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("arns", &self.arns).field("store", &self.store).finish_non_exhaustive()
    }
}

// ----- request members -----

pub(crate) fn member<'a>(body: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    body.get(name).filter(|v| !v.is_null())
}

pub(crate) fn req_str<'a>(body: &'a Map<String, Value>, name: &str) -> Result<&'a str, ApiError> {
    match member(body, name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ApiError::client("SerializationException", format!("'{name}' must be a string"))),
        None => Err(ApiError::validation(format!(
            "1 validation error detected: Value null at '{name}' failed to satisfy constraint: Member must not be null"
        ))),
    }
}

pub(crate) fn opt_str<'a>(body: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match member(body, name) {
        None => Ok(None),
        Some(_) => req_str(body, name).map(Some),
    }
}

pub(crate) fn opt_bool(body: &Map<String, Value>, name: &str) -> Result<Option<bool>, ApiError> {
    match member(body, name) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::client("SerializationException", format!("'{name}' must be a boolean"))),
    }
}

/// `maxResults`: 0 or absent is the default page (100), at most 1000.
fn max_results(body: &Map<String, Value>) -> Result<usize, ApiError> {
    match member(body, "maxResults") {
        None => Ok(100),
        Some(v) => match v.as_u64() {
            Some(0) => Ok(100),
            Some(n) if n <= 1000 => Ok(n as usize),
            _ => Err(ApiError::validation(format!(
                "1 validation error detected: Value '{v}' at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 1000"
            ))),
        },
    }
}

const PAGE_PREFIX: &str = "wfc-page-";
/// GetExecutionHistory's tokens: `<prefix><f|r>-<the last event id of the page>`.
const HISTORY_PAGE_PREFIX: &str = "wfc-history-";

/// One page of `items` after `nextToken`, and the token of the next page. Tokens are opaque
/// to clients; one that this server did not hand out is `InvalidToken`.
pub(crate) fn page<T>(items: Vec<T>, body: &Map<String, Value>) -> Result<(Vec<T>, Option<String>), ApiError> {
    let max = max_results(body)?;
    let start = match opt_str(body, "nextToken")? {
        None => 0,
        Some(token) => token
            .strip_prefix(PAGE_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= items.len())
            .ok_or_else(|| {
                ApiError::client("InvalidToken", format!("Invalid Token: '{token}' is not a nextToken of this request"))
            })?,
    };
    let end = (start + max).min(items.len());
    let next = (end < items.len()).then(|| format!("{PAGE_PREFIX}{end}"));
    Ok((items.into_iter().skip(start).take(max).collect(), next))
}

pub(crate) fn seconds(ms: i64) -> Value {
    json!(ms as f64 / 1000.0)
}

pub(crate) fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// A JSON document member (`input`, `output`): text, at most 256 KiB, valid JSON.
pub(crate) fn document(text: Option<&str>, what: &str, code: &'static str) -> Result<Value, ApiError> {
    let text = text.unwrap_or("{}");
    if text.len() > MAX_PAYLOAD {
        return Err(ApiError::client(
            code,
            format!("{what} is {} bytes; the limit is {MAX_PAYLOAD} bytes", text.len()),
        ));
    }
    serde_json::from_str(text).map_err(|e| ApiError::client(code, format!("Invalid {what}: not valid JSON: {e}")))
}

pub(crate) fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn random_name() -> String {
    let n: u128 = rand::random();
    let h = format!("{n:032x}");
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// `InvalidDefinition` with every error located (line and column), or the loaded IR.
pub(crate) fn validated(name: &str, text: &str) -> Result<wfc_ir::Workflow, ApiError> {
    match load_definition(name, text) {
        Ok(loaded) => Ok(loaded.workflow),
        Err(diags) => {
            let errors: Vec<String> = diags
                .located()
                .into_iter()
                .filter(|d| d.severity == wfc_core::Severity::Error)
                .map(|d| format!("{} at line {}, column {}: {}", d.code, d.line, d.column, d.message))
                .collect();
            Err(ApiError::client(
                "InvalidDefinition",
                format!("Invalid State Machine Definition: '{}'", errors.join("; ")),
            ))
        }
    }
}

fn status_name(status: ExecutionStatus) -> &'static str {
    status.as_str()
}

impl Service {
    /// Runs one operation.
    pub async fn call(&self, operation: &str, body: &Map<String, Value>) -> Result<Value, ApiError> {
        match operation {
            "CreateStateMachine" => self.create_state_machine(body).await,
            "DescribeStateMachine" => self.describe_state_machine(body).await,
            "UpdateStateMachine" => self.update_state_machine(body).await,
            "DeleteStateMachine" => self.delete_state_machine(body).await,
            "ListStateMachines" => self.list_state_machines(body).await,
            "ValidateStateMachineDefinition" => self.validate(body),
            "DescribeStateMachineForExecution" => self.describe_for_execution(body).await,
            "StartExecution" => self.start_execution(body).await,
            "StartSyncExecution" => self.start_sync_execution(body).await,
            "DescribeExecution" => self.describe_execution(body).await,
            "GetExecutionHistory" => self.history(body).await,
            "ListExecutions" => self.list_executions(body).await,
            "StopExecution" => self.stop_execution(body).await,
            "SendTaskSuccess" => self.send_task(body, true).await,
            "SendTaskFailure" => self.send_task(body, false).await,
            "SendTaskHeartbeat" => self.heartbeat(body).await,
            "CreateActivity" => self.create_activity(body).await,
            "DescribeActivity" => self.describe_activity(body).await,
            "ListActivities" => self.list_activities(body).await,
            "DeleteActivity" => self.delete_activity(body).await,
            "GetActivityTask" => self.get_activity_task(body).await,
            "TestState" => self.test_state(body).await,
            "TagResource" => self.tag_resource(body).await,
            "UntagResource" => self.untag_resource(body).await,
            "ListTagsForResource" => self.list_tags(body).await,
            "PublishStateMachineVersion" => self.publish_version(body).await,
            "ListStateMachineVersions" => self.list_versions(body).await,
            "DeleteStateMachineVersion" => self.delete_version(body).await,
            "CreateStateMachineAlias" => self.create_alias(body).await,
            "DescribeStateMachineAlias" => self.describe_alias(body).await,
            "UpdateStateMachineAlias" => self.update_alias(body).await,
            "DeleteStateMachineAlias" => self.delete_alias(body).await,
            "ListStateMachineAliases" => self.list_aliases(body).await,
            "RedriveExecution" => self.redrive_execution(body).await,
            "DescribeMapRun" => self.describe_map_run(body).await,
            "ListMapRuns" => self.list_map_runs(body).await,
            "UpdateMapRun" => self.update_map_run(body).await,
            op => {
                Err(ApiError::client("UnknownOperationException", format!("Unknown operation: AWSStepFunctions.{op}")))
            }
        }
    }

    // ----- state machines -----

    /// `publish` (and its `versionDescription`, which needs it): whether to publish a version.
    fn refuse_unsupported(body: &Map<String, Value>) -> Result<(bool, Option<&str>), ApiError> {
        let publish = opt_bool(body, "publish")?.unwrap_or(false);
        let description = opt_str(body, "versionDescription")?;
        if description.is_some() && !publish {
            return Err(ApiError::validation("'versionDescription' is only allowed with 'publish': true"));
        }
        Ok((publish, description))
    }

    fn machine_type(body: &Map<String, Value>) -> Result<MachineType, ApiError> {
        match opt_str(body, "type")? {
            None => Ok(MachineType::Standard),
            Some(t) => MachineType::parse(t).ok_or_else(|| {
                ApiError::validation(format!(
                    "1 validation error detected: Value '{t}' at 'type' failed to satisfy constraint: Member must satisfy enum value set: [STANDARD, EXPRESS]"
                ))
            }),
        }
    }

    fn role(body: &Map<String, Value>, required: bool) -> Result<Option<String>, ApiError> {
        let role = if required { Some(req_str(body, "roleArn")?) } else { opt_str(body, "roleArn")? };
        if let Some(r) = role
            && !r.starts_with("arn:")
        {
            return Err(ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{r}' (roleArn must be an IAM role ARN)"),
            ));
        }
        Ok(role.map(str::to_owned))
    }

    async fn create_state_machine(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let name = req_str(body, "name")?;
        let definition = req_str(body, "definition")?;
        let role = Self::role(body, true)?.unwrap_or_default();
        let machine_type = Self::machine_type(body)?;
        let (publish, description) = Self::refuse_unsupported(body)?;
        check_name(name, "a state machine name")?;
        validated(name, definition)?;
        let tags = crate::tags::parse(body, "tags")?;
        let arn = self.arns.machine_arn(name);
        self.refuse_deleting(name, &arn, true).await?;
        let existed = self.machines.get(name).await?.is_some();
        let machine = self.machines.create(name, definition, machine_type, &role, &arn).await?;
        self.tags_on_create(&arn, tags, !existed).await?;
        let mut out = json!({ "stateMachineArn": arn, "creationDate": seconds(machine.created_at_ms) });
        if publish {
            out["stateMachineVersionArn"] = json!(self.publish(&machine, description).await?.0);
        }
        Ok(out)
    }

    async fn machine(&self, body: &Map<String, Value>) -> Result<(Machine, String), ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        let r = self.arns.state_machine(arn)?;
        if r.test_case.is_some() {
            return Err(ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{arn}' (a '#TestCase' suffix is only for StartExecution)"),
            ));
        }
        Ok((self.machines.require(&r.name, arn).await?, arn.to_owned()))
    }

    fn describe_machine(&self, m: &Machine) -> Value {
        json!({
            "stateMachineArn": self.arns.machine_arn(&m.name),
            "name": m.name,
            "status": "ACTIVE",
            "definition": m.version.definition.source,
            "roleArn": m.role_arn,
            "type": m.machine_type.as_str(),
            "creationDate": seconds(m.created_at_ms),
            "loggingConfiguration": { "level": "OFF", "includeExecutionData": false },
            "revisionId": m.version.version_id,
        })
    }

    async fn describe_state_machine(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        if let Some((name, number)) = self.version_ref(arn)? {
            return self.describe_version(arn, &name, number).await;
        }
        let (m, _) = self.machine(body).await?;
        let mut out = self.describe_machine(&m);
        match self.deletion(&m.name).await? {
            crate::deleting::Deletion::Deleting => out["status"] = json!("DELETING"),
            crate::deleting::Deletion::Deleted => return Err(crate::machines::does_not_exist(arn)),
            crate::deleting::Deletion::None => {}
        }
        Ok(out)
    }

    async fn update_state_machine(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (m, arn) = self.machine(body).await?;
        self.refuse_deleting(&m.name, &arn, false).await?;
        let definition = opt_str(body, "definition")?;
        let role = Self::role(body, false)?;
        let (publish, description) = Self::refuse_unsupported(body)?;
        let observability =
            member(body, "loggingConfiguration").is_some() || member(body, "tracingConfiguration").is_some();
        if definition.is_none() && role.is_none() && !observability {
            return Err(ApiError::client(
                "MissingRequiredParameter",
                "Either the definition, the roleArn, the loggingConfiguration or the tracingConfiguration must be specified",
            ));
        }
        if let Some(text) = definition {
            validated(&m.name, text)?;
        }
        let updated = self.machines.update(&m, definition, role.as_deref()).await?;
        let mut out = json!({ "updateDate": seconds(now_ms()), "revisionId": updated.version.version_id });
        if publish {
            out["stateMachineVersionArn"] = json!(self.publish(&updated, description).await?.0);
        }
        Ok(out)
    }

    async fn list_state_machines(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let machines = self.machines.list().await?;
        let (machines, next) = page(machines, body)?;
        let items: Vec<Value> = machines
            .iter()
            .map(|m| {
                json!({
                    "stateMachineArn": self.arns.machine_arn(&m.name),
                    "name": m.name,
                    "type": m.machine_type.as_str(),
                    "creationDate": seconds(m.created_at_ms),
                })
            })
            .collect();
        let mut out = json!({ "stateMachines": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    /// ValidateStateMachineDefinition: wfc's diagnostics, each with its line and column (in
    /// `location` and at the end of `message`).
    fn validate(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let definition = req_str(body, "definition")?;
        Self::machine_type(body)?;
        let min = match opt_str(body, "severity")? {
            None | Some("ERROR") => wfc_core::Severity::Error,
            Some("WARNING") => wfc_core::Severity::Warning,
            Some(s) => {
                return Err(ApiError::validation(format!(
                    "1 validation error detected: Value '{s}' at 'severity' failed to satisfy constraint: Member must satisfy enum value set: [ERROR, WARNING]"
                )));
            }
        };
        let max = max_results(body)?;
        let (ok, diags) = match load_definition("StateMachine", definition) {
            Ok(loaded) => (true, loaded.warnings),
            Err(diags) => (false, diags),
        };
        let mut items: Vec<Value> = diags
            .located()
            .into_iter()
            .filter(|d| d.severity == wfc_core::Severity::Error || min == wfc_core::Severity::Warning)
            .map(|d| {
                let severity = if d.severity == wfc_core::Severity::Error { "ERROR" } else { "WARNING" };
                json!({
                    "severity": severity,
                    "code": d.code,
                    "message": format!("{} (line {}, column {})", d.message, d.line, d.column),
                    "location": format!("line {}, column {}", d.line, d.column),
                })
            })
            .collect();
        let truncated = items.len() > max;
        items.truncate(max);
        Ok(json!({ "result": if ok { "OK" } else { "FAIL" }, "diagnostics": items, "truncated": truncated }))
    }

    // ----- executions -----

    pub(crate) async fn record(
        &self,
        body: &Map<String, Value>,
    ) -> Result<(ExecutionRecord, String, String), ApiError> {
        let arn = req_str(body, "executionArn")?;
        let (store_name, machine) = self.arns.execution(arn)?;
        let record =
            self.store.describe_execution(&store_name).await?.ok_or_else(|| {
                ApiError::client("ExecutionDoesNotExist", format!("Execution Does Not Exist: '{arn}'"))
            })?;
        Ok((record, arn.to_owned(), machine))
    }

    async fn start_execution(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        // A version ARN starts the execution on that version's definition; an alias ARN on one
        // of the versions it routes to, drawn by weight.
        let mut started_by = StartedBy::default();
        let (machine, test_case) = match self.qualifier_ref(arn)? {
            Some((name, Qualifier::Version(number))) => {
                started_by.version = Some(number);
                (self.machine_version(&name, number, arn).await?.0, None)
            }
            Some((name, Qualifier::Alias(alias))) => {
                let alias = self
                    .alias(&name, &alias)
                    .await
                    .map_err(|e| if e.code == "ResourceNotFound" { crate::machines::does_not_exist(arn) } else { e })?;
                let number = self.route(&alias);
                started_by = StartedBy { version: Some(number), alias: Some(alias.name) };
                (self.machine_version(&name, number, arn).await?.0, None)
            }
            None => {
                let r = self.arns.state_machine(arn)?;
                let machine = self.machines.require(&r.name, arn).await?;
                if let Some(case) = &r.test_case {
                    crate::mock_config::check_case(self.mocks.as_deref(), &r.name, case, arn)?;
                }
                (machine, r.test_case)
            }
        };
        self.refuse_deleting(&machine.name, arn, false).await?;
        let name = match opt_str(body, "name")? {
            Some(n) => n.to_owned(),
            None => random_name(),
        };
        check_name(&name, "an execution name")?;
        if member(body, "traceHeader").is_some() {
            // Tracing is observability only: accepted, nothing to trace into.
        }
        let input = document(opt_str(body, "input")?, "execution input", "InvalidExecutionInput")?;
        let store_name = format!("{}:{name}", machine.name);
        let execution_arn = self.arns.execution_arn(&machine.name, &name);
        let exists = || {
            ApiError::client(
                "ExecutionAlreadyExists",
                format!(
                    "Execution Already Exists: '{execution_arn}' (a name can be reused only with the same input while the execution runs)"
                ),
            )
        };
        // Idempotent by name as on AWS: the same input while it runs answers as the first call.
        if let Some(existing) = self.store.describe_execution(&store_name).await? {
            return if existing.input == input && existing.status == ExecutionStatus::Running {
                Ok(json!({ "executionArn": execution_arn, "startDate": seconds(existing.created_at_ms) }))
            } else {
                Err(exists())
            };
        }
        let workflow = self.machines.workflow(&machine.version).map_err(ApiError::internal)?;
        let new = NewExecution {
            name: store_name,
            workflow: machine.name.clone(),
            input,
            start_time: Clock::real().now_rfc3339(),
            definition_hash: Some(durable::definition_hash(&workflow)),
            version_id: Some(machine.version.version_id.clone()),
        };
        if started_by != StartedBy::default() {
            self.record_started_by(&new.name, &started_by).await?;
        }
        if let Some(case) = &test_case {
            // Recorded before the execution exists, so no worker runs it without its case.
            crate::mock_config::record_case(Arc::clone(&self.store), &new.name, &machine.name, case)
                .await
                .map_err(ApiError::internal)?;
        }
        match self.store.create_execution(new).await {
            Ok((record, _)) => Ok(json!({ "executionArn": execution_arn, "startDate": seconds(record.created_at_ms) })),
            Err(StoreError::InputMismatch(_) | StoreError::OtherVersion { .. }) => Err(exists()),
            Err(e) => Err(e.into()),
        }
    }

    /// StartSyncExecution (EXPRESS): runs in this request, in memory, and keeps no record.
    async fn start_sync_execution(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        let r = self.arns.state_machine(arn)?;
        if let Some(case) = &r.test_case {
            return Err(ApiError::validation(format!(
                "'{arn}' names the mock test case '{case}': wfc serve runs test cases through StartExecution only"
            )));
        }
        let machine = self.machines.require(&r.name, arn).await?;
        self.refuse_deleting(&machine.name, arn, false).await?;
        if machine.machine_type != MachineType::Express {
            return Err(ApiError::client(
                "StateMachineTypeNotSupported",
                format!("StartSyncExecution runs EXPRESS state machines; '{arn}' is STANDARD"),
            ));
        }
        let name = match opt_str(body, "name")? {
            Some(n) => n.to_owned(),
            None => random_name(),
        };
        check_name(&name, "an execution name")?;
        let input_text = opt_str(body, "input")?.unwrap_or("{}").to_owned();
        let input = document(Some(&input_text), "execution input", "InvalidExecutionInput")?;
        let workflow = self.machines.workflow(&machine.version).map_err(ApiError::internal)?;
        let start = now_ms();
        // The execution sees the server's names and ARNs in `$$`, as durable ones do, and the ARN
        // its caller gets (the uuid comes from the run's seed, drawn per execution).
        let seed: u64 = rand::random();
        let identity = Identity {
            name: name.clone(),
            state_machine: machine.name.clone(),
            region: self.arns.region.clone(),
            account: self.arns.account.clone(),
            role_arn: Some(machine.role_arn.clone()),
        };
        let mut options = RunOptions::real()
            .with_name(name.clone())
            .with_seed(seed)
            .with_machine_type(wfc_runtime::MachineType::ExpressSync)
            .with_identity(identity);
        if self.virtual_time {
            options.clock = Clock::skipping();
        }
        options.objects = self.objects.clone();
        let result = wfc_interp::run(&workflow, self.handler.as_ref(), input, options).await;
        let mut out = json!({
            "executionArn": self.arns.express_arn(&machine.name, &name, &wfc_runtime::express_execution_uuid(seed)),
            "stateMachineArn": self.arns.machine_arn(&machine.name),
            "name": name,
            "startDate": seconds(start),
            "stopDate": seconds(now_ms()),
            "status": match result.status { Status::Succeeded => "SUCCEEDED", Status::Failed => "FAILED", Status::TimedOut => "TIMED_OUT" },
            "input": input_text,
            "inputDetails": { "included": true },
        });
        if let Some(output) = &result.output {
            out["output"] = json!(json_text(output));
            out["outputDetails"] = json!({ "included": true });
        }
        if let Some(Failure { error, cause }) = &result.error {
            out["error"] = json!(error);
            out["cause"] = json!(cause);
        }
        Ok(out)
    }

    async fn describe_execution(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (record, arn, machine) = self.record(body).await?;
        let mut out = json!({
            "executionArn": arn,
            "stateMachineArn": self.arns.machine_arn(&machine),
            "name": record.name.split_once(':').map_or(record.name.as_str(), |(_, n)| n),
            "status": status_name(record.status),
            "startDate": seconds(record.created_at_ms),
            "input": json_text(&record.input),
            "inputDetails": { "included": true },
        });
        if record.status != ExecutionStatus::Running {
            out["stopDate"] = seconds(record.updated_at_ms);
        }
        if let Some(output) = record.output.as_ref().filter(|_| record.status == ExecutionStatus::Succeeded) {
            out["output"] = json!(json_text(output));
            out["outputDetails"] = json!({ "included": true });
        }
        if let Some(error) = &record.error {
            out["error"] = json!(error);
        }
        if let Some(cause) = &record.cause {
            out["cause"] = json!(cause);
        }
        self.put_started_by(&mut out, &machine, &self.started_by(&record.name).await?);
        if self.is_standard(&machine, &record).await? {
            crate::redrive::put_redrive(&mut out, &record, true);
        }
        Ok(out)
    }

    /// Whether `record` is an execution of a STANDARD machine (only those have `redrive*`).
    async fn is_standard(&self, machine: &str, record: &ExecutionRecord) -> Result<bool, ApiError> {
        Ok(match &record.version_id {
            Some(v) => self.machines.version(machine, v).await?.is_none_or(|m| m.machine_type == MachineType::Standard),
            None => true,
        })
    }

    async fn describe_for_execution(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (record, arn, machine) = self.record(body).await?;
        let version = match &record.version_id {
            Some(v) => self.machines.version(&machine, v).await?,
            None => None,
        };
        let m = version.ok_or_else(|| {
            ApiError::client(
                "ExecutionDoesNotExist",
                format!("Execution Does Not Exist: '{arn}' (its definition is not in the store)"),
            )
        })?;
        Ok(json!({
            "stateMachineArn": self.arns.machine_arn(&m.name),
            "name": m.name,
            "definition": m.version.definition.source,
            "roleArn": m.role_arn,
            "updateDate": seconds(m.version.created_at_ms),
            "revisionId": m.version.version_id,
        }))
    }

    async fn history(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (record, _, _) = self.record(body).await?;
        let reverse = opt_bool(body, "reverseOrder")?.unwrap_or(false);
        let include = opt_bool(body, "includeExecutionData")?.unwrap_or(true);
        // Read by the event index, one page at a time (the store reads only the page): a page's
        // token is the id of its last event and the direction, so it stays right while a running
        // execution's history grows (a reverse page after the newest events still goes on
        // from where the last one ended).
        let max = max_results(body)?;
        let direction = if reverse { "r" } else { "f" };
        let after = match opt_str(body, "nextToken")? {
            None => 0,
            Some(token) => token
                .strip_prefix(HISTORY_PAGE_PREFIX)
                .and_then(|t| t.strip_prefix(direction))
                .and_then(|t| t.strip_prefix('-'))
                .and_then(|id| id.parse::<u64>().ok())
                .filter(|id| *id > 0)
                .ok_or_else(|| {
                    ApiError::client(
                        "InvalidToken",
                        format!("Invalid Token: '{token}' is not a nextToken of this request"),
                    )
                })?,
        };
        let mut events = self.store.read_history_page(&record.name, after, max + 1, reverse).await?;
        let next = if events.len() > max {
            events.truncate(max);
            events.last().map(|e| format!("{HISTORY_PAGE_PREFIX}{direction}-{}", e.id))
        } else {
            None
        };
        if events.is_empty() && after == 0 {
            // A running execution's history is written when it ends (docs/durable.md): until
            // then it is its start.
            events.push(wfc_runtime::HistoryEvent {
                id: 1,
                previous_event_id: 0,
                timestamp: record.start_time.clone().into(),
                event_type: wfc_runtime::EventType::ExecutionStarted,
                details: json!({ "input": record.input }).into(),
            });
        }
        // The role is the state machine's (the runtime records a placeholder).
        let role = match &record.version_id {
            Some(v) => self.machines.version(&record.workflow, v).await?.map(|m| m.role_arn),
            None => None,
        };
        let items: Vec<Value> = events
            .iter()
            .map(|e| {
                let mut event = aws_event(e, &self.arns.region, include);
                if let (Some(role), Some(details)) = (&role, event.get_mut("executionStartedEventDetails")) {
                    details["roleArn"] = json!(role);
                }
                event
            })
            .collect();
        let mut out = json!({ "events": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    async fn list_executions(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        if let Some(map_run) = opt_str(body, "mapRunArn")? {
            return self.list_map_run_executions(map_run, body).await;
        }
        // A version or alias ARN lists the executions started by it.
        let arn = req_str(body, "stateMachineArn")?;
        let filter = self.qualifier_ref(arn)?;
        let m = match &filter {
            Some((name, _)) => self.machines.require(name, arn).await?,
            None => self.machine(body).await?.0,
        };
        let status = match opt_str(body, "statusFilter")? {
            None => None,
            Some(s) => Some(ExecutionStatus::parse(s).filter(|_| s != "PENDING_REDRIVE").ok_or_else(|| {
                ApiError::validation(format!(
                    "1 validation error detected: Value '{s}' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set: [RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED]"
                ))
            })?),
        };
        let redriven = crate::redrive::filter(body)?;
        let prefix = format!("{}:", m.name);
        let records: Vec<ExecutionRecord> = self
            .store
            .list_executions()
            .await?
            .into_iter()
            .filter(|r| r.workflow == m.name && r.name.starts_with(&prefix))
            .filter(|r| status.is_none_or(|s| r.status == s))
            .filter(|r| redriven.is_none_or(|want| (r.redrive_count > 0) == want))
            .collect();
        let mut started = Vec::with_capacity(records.len());
        let mut kept = Vec::with_capacity(records.len());
        for r in records {
            // Only a qualified filter needs every record's origin; otherwise the page's only.
            if let Some((_, q)) = &filter {
                let by = self.started_by(&r.name).await?;
                let matches = match q {
                    Qualifier::Version(n) => by.version == Some(*n),
                    Qualifier::Alias(a) => by.alias.as_deref() == Some(a.as_str()),
                };
                if !matches {
                    continue;
                }
                started.push(Some(by));
            } else {
                started.push(None);
            }
            kept.push(r);
        }
        let records: Vec<(ExecutionRecord, Option<StartedBy>)> = kept.into_iter().zip(started).collect();
        let (records, next) = page(records, body)?;
        let mut with_origin = Vec::with_capacity(records.len());
        for (r, by) in records {
            let by = match by {
                Some(by) => by,
                None => self.started_by(&r.name).await?,
            };
            with_origin.push((r, by));
        }
        let items: Vec<Value> = with_origin
            .iter()
            .map(|(r, by)| {
                let name = &r.name[prefix.len()..];
                let mut item = json!({
                    "executionArn": self.arns.execution_arn(&m.name, name),
                    "stateMachineArn": self.arns.machine_arn(&m.name),
                    "name": name,
                    "status": status_name(r.status),
                    "startDate": seconds(r.created_at_ms),
                });
                if r.status != ExecutionStatus::Running {
                    item["stopDate"] = seconds(r.updated_at_ms);
                }
                self.put_started_by(&mut item, &m.name, by);
                if m.machine_type == MachineType::Standard {
                    crate::redrive::put_redrive(&mut item, r, false);
                }
                item
            })
            .collect();
        let mut out = json!({ "executions": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    async fn stop_execution(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (record, arn, _) = self.record(body).await?;
        if record.status != ExecutionStatus::Running {
            return Err(ApiError::client(
                "ValidationException",
                format!(
                    "Execution '{arn}' has already finished ({}); only a running execution can be stopped",
                    record.status.as_str()
                ),
            ));
        }
        let error = opt_str(body, "error")?.map(str::to_owned);
        let cause = opt_str(body, "cause")?.map(str::to_owned);
        let stopped = self.store.stop_execution(&record.name, error, cause).await?;
        // Its activity tasks go now, also when the server running it is dead.
        self.activities.forget_execution(&record.name).await?;
        Ok(json!({ "stopDate": seconds(stopped.updated_at_ms) }))
    }

    // ----- callbacks -----

    fn token(body: &Map<String, Value>) -> Result<&str, ApiError> {
        let token = req_str(body, "taskToken")?;
        let shaped = (token.starts_with(ACTIVITY_TOKEN_PREFIX) || token.starts_with("wfc1-")) && token.len() <= 1024;
        if !shaped {
            return Err(ApiError::client(
                "InvalidToken",
                format!("Invalid Token: '{token}' is not a task token of this server"),
            ));
        }
        Ok(token)
    }

    fn no_task(token: &str) -> ApiError {
        ApiError::client(
            "TaskDoesNotExist",
            format!(
                "Task Does Not Exist: no task waits for the token '{token}' (answered, timed out, or its execution stopped)"
            ),
        )
    }

    async fn send_task(&self, body: &Map<String, Value>, success: bool) -> Result<Value, ApiError> {
        let token = Self::token(body)?;
        let answer = if success {
            Ok(document(Some(req_str(body, "output")?), "task output", "InvalidOutput")?)
        } else {
            Err(Failure::new(opt_str(body, "error")?.unwrap_or_default(), opt_str(body, "cause")?.unwrap_or_default()))
        };
        if token.starts_with(ACTIVITY_TOKEN_PREFIX) {
            return match self.activities.answer(token, answer).await? {
                Answer::Delivered => Ok(json!({})),
                Answer::Unknown => Err(Self::no_task(token)),
            };
        }
        let completion = match answer {
            Ok(output) => CallbackCompletion::Success(output),
            Err(f) => CallbackCompletion::Failure { error: f.error, cause: f.cause },
        };
        match self.store.complete_callback(token, completion).await {
            Ok(_) => Ok(json!({})),
            Err(StoreError::UnknownToken(_)) => Err(Self::no_task(token)),
            Err(e) => Err(e.into()),
        }
    }

    async fn heartbeat(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let token = Self::token(body)?;
        if token.starts_with(ACTIVITY_TOKEN_PREFIX) {
            return match self.activities.heartbeat(token).await? {
                Answer::Delivered => Ok(json!({})),
                Answer::Unknown => Err(Self::no_task(token)),
            };
        }
        match self.store.heartbeat_callback(token).await {
            Ok(_) => Ok(json!({})),
            Err(StoreError::UnknownToken(_)) => Err(Self::no_task(token)),
            Err(e) => Err(e.into()),
        }
    }

    // ----- activities -----

    async fn create_activity(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let name = req_str(body, "name")?;
        check_name(name, "an activity name")?;
        let tags = crate::tags::parse(body, "tags")?;
        let (created, new) = self.activities.create(name, now_ms()).await?;
        self.tags_on_create(&self.arns.activity_arn(name), tags, new).await?;
        Ok(json!({ "activityArn": self.arns.activity_arn(name), "creationDate": seconds(created) }))
    }

    async fn activity(&self, body: &Map<String, Value>) -> Result<(String, i64), ApiError> {
        let arn = req_str(body, "activityArn")?;
        let name = self.arns.activity(arn)?;
        let created = self
            .activities
            .describe(&name)
            .await?
            .ok_or_else(|| ApiError::client("ActivityDoesNotExist", format!("Activity Does Not Exist: '{arn}'")))?;
        Ok((name, created))
    }

    async fn describe_activity(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (name, created) = self.activity(body).await?;
        Ok(json!({ "activityArn": self.arns.activity_arn(&name), "name": name, "creationDate": seconds(created) }))
    }

    async fn list_activities(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (items, next) = page(self.activities.list().await?, body)?;
        let items: Vec<Value> = items
            .into_iter()
            .map(|(name, created)| json!({ "activityArn": self.arns.activity_arn(&name), "name": name, "creationDate": seconds(created) }))
            .collect();
        let mut out = json!({ "activities": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    async fn delete_activity(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "activityArn")?;
        let name = self.arns.activity(arn)?;
        self.activities.delete(&name).await?;
        Ok(json!({}))
    }

    async fn get_activity_task(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let (name, _) = self.activity(body).await?;
        opt_str(body, "workerName")?;
        Ok(match self.activities.poll(&name, self.activity_poll).await? {
            Some((token, input)) => json!({ "taskToken": token, "input": json_text(&input) }),
            None => json!({}),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_tokens() {
        let body = |v: Value| v.as_object().cloned().unwrap();
        let (p, next) = page((0..5).collect::<Vec<_>>(), &body(json!({"maxResults": 2}))).unwrap();
        assert_eq!((p, next.as_deref()), (vec![0, 1], Some("wfc-page-2")));
        let (p, next) =
            page((0..5).collect::<Vec<_>>(), &body(json!({"maxResults": 2, "nextToken": "wfc-page-4"}))).unwrap();
        assert_eq!((p, next), (vec![4], None));
        assert_eq!(
            page((0..5).collect::<Vec<_>>(), &body(json!({"nextToken": "x"}))).unwrap_err().code,
            "InvalidToken"
        );
        assert_eq!(
            page((0..5).collect::<Vec<_>>(), &body(json!({"maxResults": 1001}))).unwrap_err().code,
            "ValidationException"
        );
    }

    #[test]
    fn invalid_definitions_are_located() {
        let e = validated("M", "{\n  \"StartAt\": \"Nope\",\n  \"States\": {}\n}").unwrap_err();
        assert_eq!(e.code, "InvalidDefinition");
        assert!(e.message.contains("at line "), "{}", e.message);
    }
}
