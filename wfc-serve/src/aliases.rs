//! State machine aliases (`CreateStateMachineAlias`, `DescribeStateMachineAlias`,
//! `UpdateStateMachineAlias`, `DeleteStateMachineAlias`, `ListStateMachineAliases`), the alias
//! ARN `...:stateMachine:<name>:<alias>` in `StartExecution`, and what an execution was started
//! by (`stateMachineVersionArn` / `stateMachineAliasArn` in DescribeExecution and
//! ListExecutions).
//!
//! An alias routes `StartExecution` to one version of its machine, or splits it between two by
//! weight (summing to 100). Like versions ([`crate::versions`]), the aliases of a machine ride
//! in the store's registry, so they survive a restart and servers sharing a store see the same:
//! the current version of the registry workflow `wfc-serve-aliases:<machine>` has the source
//! `{"aliases": [{"name", "description", "routing": [{"version", "weight"}], "created",
//! "updated"}], "at": ms}`. What an execution was started by is kept the same way, in the
//! registry workflow `wfc-serve-startedby:<machine>:<execution>` (`{"version": n, "alias":
//! name}`), written only for executions started by a version or alias ARN (AWS gives neither
//! for an execution started by the unqualified ARN).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use wfc_runtime::durable::{Definition, Language, Registry, Syntax};

use crate::api::{Service, member, now_ms, opt_str, page, req_str, seconds};
use crate::error::ApiError;
use crate::versions::Qualifier;

const WORKFLOW_PREFIX: &str = "wfc-serve-aliases:";
const ORIGIN: &str = "wfc-serve:ALIASES";
const STARTED_PREFIX: &str = "wfc-serve-startedby:";
const STARTED_ORIGIN: &str = "wfc-serve:STARTEDBY";
/// AWS's quota of aliases a state machine.
const MAX_ALIASES: usize = 100;

/// One alias of a machine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Alias {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// (version number, weight), one or two, weights summing to 100.
    pub(crate) routing: Vec<(u64, u64)>,
    pub(crate) created_ms: i64,
    pub(crate) updated_ms: i64,
}

/// What an execution was started by, when it was started by a version or alias ARN.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StartedBy {
    pub(crate) version: Option<u64>,
    pub(crate) alias: Option<String>,
}

/// AWS's rule for alias names (`CharacterRestrictedName`): 1 to 80 of `[a-zA-Z0-9_.-]`, at
/// least one of them not a digit (so an alias never reads as a version number).
pub(crate) fn check_alias_name(name: &str) -> Result<(), ApiError> {
    let len = name.chars().count();
    if len == 0 || len > 80 {
        let bound = if len == 0 { "greater than or equal to 1" } else { "less than or equal to 80" };
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value '{name}' at 'name' failed to satisfy constraint: Member must have length {bound}"
        )));
    }
    let allowed = name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !allowed || name.chars().all(|c| c.is_ascii_digit()) {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value '{name}' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^(?=.*[a-zA-Z_\\-\\.])[a-zA-Z0-9_\\-\\.]+$"
        )));
    }
    Ok(())
}

fn not_found() -> ApiError {
    ApiError::client("ResourceNotFound", "Request references a resource that does not exist.")
}

fn check_description(body: &Map<String, Value>) -> Result<Option<String>, ApiError> {
    let description = opt_str(body, "description")?;
    if let Some(d) = description
        && d.chars().count() > 256
    {
        return Err(ApiError::validation(
            "1 validation error detected: Value at 'description' failed to satisfy constraint: Member must have length less than or equal to 256",
        ));
    }
    Ok(description.map(str::to_owned))
}

/// Picks a version of `routing` by weight, with `draw` uniform in 0..100.
fn pick(routing: &[(u64, u64)], draw: u64) -> u64 {
    let mut left = draw;
    for (version, weight) in routing {
        if left < *weight {
            return *version;
        }
        left -= weight;
    }
    // Weights sum to 100 (checked when the alias was written), so this is not reached; the
    // last version is the answer if a stored routing were ever short.
    routing.last().map_or(0, |(v, _)| *v)
}

fn registry_definition(workflow: String, origin: &str, source: String) -> Definition {
    Definition {
        workflow,
        origin: origin.to_owned(),
        source,
        language: Language::Asl,
        syntax: Syntax::Json,
        passes: Vec::new(),
        siblings: Vec::new(),
    }
}

impl Service {
    fn alias_registry(&self) -> Registry {
        Registry::new(Arc::clone(&self.store))
    }

    fn alias_arn(&self, machine: &str, alias: &str) -> String {
        format!("{}:{alias}", self.arns.machine_arn(machine))
    }

    pub(crate) async fn aliases_of(&self, machine: &str) -> Result<Vec<Alias>, ApiError> {
        Ok(self.read_aliases(machine).await?.0)
    }

    /// `machine`'s aliases and the registry version they were read from (`None`: none stored).
    async fn read_aliases(&self, machine: &str) -> Result<(Vec<Alias>, Option<String>), ApiError> {
        let Some(current) = self.alias_registry().current(&format!("{WORKFLOW_PREFIX}{machine}")).await? else {
            return Ok((Vec::new(), None));
        };
        let doc: Value = serde_json::from_str(&current.definition.source)
            .map_err(|e| ApiError::internal(format!("the stored aliases of '{machine}' are not JSON: {e}")))?;
        let list = doc["aliases"].as_array().cloned().unwrap_or_default();
        let aliases = list
            .iter()
            .filter_map(|a| {
                let routing = a["routing"]
                    .as_array()?
                    .iter()
                    .map(|r| Some((r["version"].as_u64()?, r["weight"].as_u64()?)))
                    .collect::<Option<Vec<_>>>()?;
                Some(Alias {
                    name: a["name"].as_str()?.to_owned(),
                    description: a["description"].as_str().map(str::to_owned),
                    routing,
                    created_ms: a["created"].as_i64()?,
                    updated_ms: a["updated"].as_i64()?,
                })
            })
            .collect();
        Ok((aliases, Some(current.version_id)))
    }

    /// Reads `machine`'s aliases, lets `change` edit them (it says whether it did) and writes
    /// them back over the list read ([`crate::registry_doc::change`]: the list is one registry
    /// document written whole; servers may share a store).
    async fn change_aliases<T>(
        &self,
        machine: &str,
        change: impl FnMut(&mut Vec<Alias>) -> Result<(T, bool), ApiError>,
    ) -> Result<T, ApiError> {
        let what = || format!("the aliases of '{machine}'");
        let read = || -> BoxFuture<'_, _> { Box::pin(self.read_aliases(machine)) };
        let write = |doc: Vec<Alias>, read_from: Option<String>| -> BoxFuture<'_, _> {
            Box::pin(async move { self.save_aliases(machine, &doc, read_from.as_deref()).await })
        };
        crate::registry_doc::change(what, read, write, change).await
    }

    /// Writes `aliases` if the stored list is still the one read (`read_from`); returns whether it did.
    async fn save_aliases(&self, machine: &str, aliases: &[Alias], read_from: Option<&str>) -> Result<bool, ApiError> {
        let list: Vec<Value> = aliases
            .iter()
            .map(|a| {
                let routing: Vec<Value> =
                    a.routing.iter().map(|(v, w)| json!({ "version": v, "weight": w })).collect();
                json!({ "name": a.name, "description": a.description, "routing": routing, "created": a.created_ms, "updated": a.updated_ms })
            })
            .collect();
        let source = json!({ "aliases": list, "at": now_ms() }).to_string();
        let workflow = format!("{WORKFLOW_PREFIX}{machine}");
        crate::registry_doc::write(&self.store, &workflow, ORIGIN, source, read_from).await
    }

    /// Drops every alias of a deleted machine.
    pub(crate) async fn forget_aliases(&self, machine: &str) -> Result<(), ApiError> {
        self.change_aliases(machine, |aliases| {
            let changed = !aliases.is_empty();
            aliases.clear();
            Ok(((), changed))
        })
        .await
    }

    /// The names of the aliases of `machine` that route to version `number`.
    pub(crate) async fn aliases_routing_to(&self, machine: &str, number: u64) -> Result<Vec<String>, ApiError> {
        Ok(self
            .aliases_of(machine)
            .await?
            .into_iter()
            .filter(|a| a.routing.iter().any(|(v, _)| *v == number))
            .map(|a| a.name)
            .collect())
    }

    /// `routingConfiguration`: its machine and (version, weight) pairs, checked as AWS checks
    /// them (1 or 2 distinct version ARNs of one machine, weights 0 to 100 summing to 100, the
    /// versions published).
    async fn routing(&self, body: &Map<String, Value>) -> Result<(String, Vec<(u64, u64)>), ApiError> {
        let Some(items) = member(body, "routingConfiguration") else {
            return Err(ApiError::validation(
                "1 validation error detected: Value null at 'routingConfiguration' failed to satisfy constraint: Member must not be null",
            ));
        };
        let items = items
            .as_array()
            .ok_or_else(|| ApiError::client("SerializationException", "'routingConfiguration' must be a list"))?;
        if items.is_empty() || items.len() > 2 {
            let bound = if items.is_empty() { "greater than or equal to 1" } else { "less than or equal to 2" };
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value at 'routingConfiguration' failed to satisfy constraint: Member must have length {bound}"
            )));
        }
        let mut arns = Vec::new();
        let mut weights = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item = item.as_object().ok_or_else(|| {
                ApiError::client("SerializationException", "each routingConfiguration item must be an object")
            })?;
            let arn = req_str(item, "stateMachineVersionArn")?;
            let weight = match member(item, "weight") {
                None => {
                    return Err(ApiError::validation(format!(
                        "1 validation error detected: Value null at 'routingConfiguration.{}.member.weight' failed to satisfy constraint: Member must not be null",
                        i + 1
                    )));
                }
                Some(w) => w
                    .as_i64()
                    .ok_or_else(|| ApiError::client("SerializationException", "'weight' must be an integer"))?,
            };
            if !(0..=100).contains(&weight) {
                let bound = if weight < 0 { "greater than or equal to 0" } else { "less than or equal to 100" };
                return Err(ApiError::validation(format!(
                    "1 validation error detected: Value '{weight}' at 'routingConfiguration.{}.member.weight' failed to satisfy constraint: Member must have value {bound}",
                    i + 1
                )));
            }
            arns.push(arn.to_owned());
            weights.push(weight as u64);
        }
        let listed = || arns.join(", ");
        let mut machine = None;
        let mut routing = Vec::new();
        for (arn, weight) in arns.iter().zip(&weights) {
            let (name, number) = match self.qualifier_ref(arn) {
                Ok(Some((name, Qualifier::Version(n)))) => (name, n),
                Ok(_) | Err(_) => {
                    return Err(ApiError::validation(format!(
                        "Routing configuration must contain state machine version ARNs. Received: [{}]",
                        listed()
                    )));
                }
            };
            if machine.as_ref().is_some_and(|m| *m != name) {
                return Err(ApiError::validation(format!(
                    "Routing configuration must contain state machine version ARNs of the same state machine. Received: [{}]",
                    listed()
                )));
            }
            if routing.iter().any(|(v, _)| *v == number) {
                return Err(ApiError::validation(format!(
                    "Routing configuration must contain distinct state machine version ARNs. Received: [{}]",
                    listed()
                )));
            }
            machine = Some(name);
            routing.push((number, *weight));
        }
        if weights.iter().sum::<u64>() != 100 {
            let shown: Vec<String> = weights.iter().map(u64::to_string).collect();
            return Err(ApiError::validation(format!(
                "Sum of routing configuration weights must equal 100. Received: [{}]",
                shown.join(", ")
            )));
        }
        let machine = machine.unwrap_or_default();
        if self.machines.get(&machine).await?.is_none() {
            return Err(not_found());
        }
        let published = self.versions_of(&machine).await?.list;
        if !routing.iter().all(|(v, _)| published.iter().any(|p| p.number == *v)) {
            return Err(not_found());
        }
        Ok((machine, routing))
    }

    /// An alias ARN taken apart (machine, alias name); anything else is `InvalidArn`.
    fn alias_ref(&self, arn: &str) -> Result<(String, String), ApiError> {
        match self.qualifier_ref(arn) {
            Ok(Some((machine, Qualifier::Alias(alias)))) => Ok((machine, alias)),
            Ok(_) => {
                Err(ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}' (not a state machine alias ARN)")))
            }
            Err(e) if e.code == "StateMachineDoesNotExist" => Err(not_found()),
            Err(e) => Err(e),
        }
    }

    /// The alias `alias` of `machine`, or `ResourceNotFound`.
    pub(crate) async fn alias(&self, machine: &str, alias: &str) -> Result<Alias, ApiError> {
        if self.machines.get(machine).await?.is_none() {
            return Err(not_found());
        }
        self.aliases_of(machine).await?.into_iter().find(|a| a.name == alias).ok_or_else(not_found)
    }

    /// The version an execution started by alias runs: one of its routes, drawn by weight.
    pub(crate) fn route(&self, alias: &Alias) -> u64 {
        pick(&alias.routing, rand::random::<u64>() % 100)
    }

    fn routing_json(&self, machine: &str, routing: &[(u64, u64)]) -> Value {
        Value::Array(
            routing
                .iter()
                .map(|(v, w)| json!({ "stateMachineVersionArn": self.version_arn(machine, *v), "weight": w }))
                .collect(),
        )
    }

    pub(crate) async fn create_alias(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let name = req_str(body, "name")?;
        check_alias_name(name)?;
        let description = check_description(body)?;
        let (machine, routing) = self.routing(body).await?;
        let machine_arn = self.arns.machine_arn(&machine);
        self.refuse_deleting(&machine, &machine_arn, false).await?;
        let created_ms = self
            .change_aliases(&machine, |aliases| {
                if let Some(existing) = aliases.iter().find(|a| a.name == name) {
                    // Idempotent on name, description and routing, as on AWS.
                    return if existing.description == description && existing.routing == routing {
                        Ok((existing.created_ms, false))
                    } else {
                        Err(ApiError::client(
                            "ConflictException",
                            "Failed to create alias because an alias with the same name and a different routing configuration already exists.",
                        ))
                    };
                }
                if aliases.len() >= MAX_ALIASES {
                    return Err(ApiError::client(
                        "ServiceQuotaExceededException",
                        format!("state machine '{machine}' has {MAX_ALIASES} aliases: delete some first"),
                    ));
                }
                let now = now_ms();
                aliases.push(Alias {
                    name: name.to_owned(),
                    description: description.clone(),
                    routing: routing.clone(),
                    created_ms: now,
                    updated_ms: now,
                });
                Ok((now, true))
            })
            .await?;
        Ok(json!({ "stateMachineAliasArn": self.alias_arn(&machine, name), "creationDate": seconds(created_ms) }))
    }

    pub(crate) async fn describe_alias(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineAliasArn")?;
        let (machine, name) = self.alias_ref(arn)?;
        let alias = self.alias(&machine, &name).await?;
        let mut out = json!({
            "stateMachineAliasArn": self.alias_arn(&machine, &alias.name),
            "name": alias.name,
            "routingConfiguration": self.routing_json(&machine, &alias.routing),
            "creationDate": seconds(alias.created_ms),
            "updateDate": seconds(alias.updated_ms),
        });
        if let Some(d) = &alias.description {
            out["description"] = json!(d);
        }
        Ok(out)
    }

    pub(crate) async fn update_alias(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineAliasArn")?;
        let (machine, name) = self.alias_ref(arn)?;
        let description = check_description(body)?;
        let routing = match member(body, "routingConfiguration") {
            None => None,
            Some(_) => {
                let (of, routing) = self.routing(body).await?;
                if of != machine {
                    return Err(ApiError::validation(format!(
                        "Routing configuration must contain versions of the alias's state machine '{machine}'"
                    )));
                }
                Some(routing)
            }
        };
        if description.is_none() && routing.is_none() {
            return Err(ApiError::validation("Either the description or the routingConfiguration must be specified"));
        }
        // botocore's model lists StateMachineDeleting for UpdateStateMachineAlias: a DELETING
        // machine's aliases are not changed.
        self.refuse_deleting(&machine, &self.arns.machine_arn(&machine), false).await?;
        self.alias(&machine, &name).await?;
        let now = self
            .change_aliases(&machine, |aliases| {
                let alias = aliases.iter_mut().find(|a| a.name == name).ok_or_else(not_found)?;
                let now = now_ms();
                if let Some(d) = &description {
                    alias.description = Some(d.clone());
                }
                if let Some(r) = &routing {
                    alias.routing = r.clone();
                }
                alias.updated_ms = now;
                Ok((now, true))
            })
            .await?;
        Ok(json!({ "updateDate": seconds(now) }))
    }

    pub(crate) async fn delete_alias(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineAliasArn")?;
        let (machine, name) = self.alias_ref(arn)?;
        // Deleting an alias that does not exist succeeds, as on AWS.
        self.change_aliases(&machine, |aliases| {
            let before = aliases.len();
            aliases.retain(|a| a.name != name);
            Ok(((), aliases.len() != before))
        })
        .await?;
        Ok(json!({}))
    }

    pub(crate) async fn list_aliases(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        // A version ARN lists the aliases that route to that version.
        let (machine, version) = match self.qualifier_ref(arn)? {
            None => (self.arns.state_machine(arn)?.name, None),
            Some((name, Qualifier::Version(n))) => (name, Some(n)),
            Some((_, Qualifier::Alias(_))) => {
                return Err(ApiError::client(
                    "InvalidArn",
                    format!("Invalid Arn: '{arn}' (a state machine or version ARN, not an alias ARN)"),
                ));
            }
        };
        // As botocore's model has it: ListStateMachineAliases of a DELETING machine is refused.
        self.refuse_deleting(&machine, arn, false).await?;
        self.machines.require(&machine, arn).await?;
        if let Some(n) = version
            && !self.versions_of(&machine).await?.list.iter().any(|p| p.number == n)
        {
            return Err(not_found());
        }
        // Oldest first, as AWS answers.
        let mut list: Vec<Alias> = self
            .aliases_of(&machine)
            .await?
            .into_iter()
            .filter(|a| version.is_none_or(|n| a.routing.iter().any(|(v, _)| *v == n)))
            .collect();
        list.sort_by_key(|a| a.created_ms);
        let (list, next) = page(list, body)?;
        let items: Vec<Value> = list
            .iter()
            .map(|a| json!({ "stateMachineAliasArn": self.alias_arn(&machine, &a.name), "creationDate": seconds(a.created_ms) }))
            .collect();
        let mut out = json!({ "stateMachineAliases": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    /// Records what execution `store_name` is started by (before it exists, so no reader sees
    /// it without).
    pub(crate) async fn record_started_by(&self, store_name: &str, by: &StartedBy) -> Result<(), ApiError> {
        let source = json!({ "version": by.version, "alias": by.alias }).to_string();
        let registry = self.alias_registry();
        let (version, _) = registry
            .register(registry_definition(format!("{STARTED_PREFIX}{store_name}"), STARTED_ORIGIN, source), None)
            .await?;
        registry.publish(&version.version_id).await?;
        Ok(())
    }

    /// What execution `store_name` was started by (nothing for the unqualified ARN).
    pub(crate) async fn started_by(&self, store_name: &str) -> Result<StartedBy, ApiError> {
        let Some(current) = self.alias_registry().current(&format!("{STARTED_PREFIX}{store_name}")).await? else {
            return Ok(StartedBy::default());
        };
        let doc: Value = serde_json::from_str(&current.definition.source).unwrap_or_default();
        Ok(StartedBy { version: doc["version"].as_u64(), alias: doc["alias"].as_str().map(str::to_owned) })
    }

    /// `stateMachineVersionArn` / `stateMachineAliasArn` of an execution of `machine` into `out`.
    pub(crate) fn put_started_by(&self, out: &mut Value, machine: &str, by: &StartedBy) {
        if let Some(v) = by.version {
            out["stateMachineVersionArn"] = json!(self.version_arn(machine, v));
        }
        if let Some(a) = &by.alias {
            out["stateMachineAliasArn"] = json!(self.alias_arn(machine, a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_names_follow_aws() {
        assert!(check_alias_name("prod").is_ok());
        assert!(check_alias_name("v1.2-beta_x").is_ok());
        for bad in ["", "123", "a b", "!x", "x@", &"a".repeat(81)] {
            assert_eq!(check_alias_name(bad).unwrap_err().code, "ValidationException", "{bad:?}");
        }
    }

    #[test]
    fn routes_are_picked_by_weight() {
        let routing = [(1, 30), (2, 70)];
        assert_eq!(pick(&routing, 0), 1);
        assert_eq!(pick(&routing, 29), 1);
        assert_eq!(pick(&routing, 30), 2);
        assert_eq!(pick(&routing, 99), 2);
        assert_eq!(pick(&[(3, 100)], 57), 3);
        assert_eq!(pick(&[(1, 0), (2, 100)], 0), 2);
    }
}
