//! State machine versions (`PublishStateMachineVersion`, `ListStateMachineVersions`,
//! `DeleteStateMachineVersion`, `publish: true` on Create/Update, and a version ARN
//! `...:stateMachine:<name>:<n>` for `DescribeStateMachine` and `StartExecution`).
//!
//! A version is a number given to one of the machine's registry versions (its definition and
//! `revisionId`, which the registry keeps anyway). The numbers ride in the registry, as tags do
//! ([`crate::tags`]): the current version of the registry workflow `wfc-serve-versions:<name>`
//! has the source `{"versions": [{"number", "revisionId", "description", "created"}],
//! "next": N, "at": ms}`. Numbers are never reused, as on AWS, until the machine is deleted
//! (its versions go with it).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use wfc_runtime::durable::Registry;

use crate::api::{Service, now_ms, opt_str, page, req_str, seconds};
use crate::error::ApiError;
use crate::machines::Machine;

const WORKFLOW_PREFIX: &str = "wfc-serve-versions:";
const ORIGIN: &str = "wfc-serve:VERSIONS";
/// AWS's quota of versions a state machine (ServiceQuotaExceededException beyond).
const MAX_VERSIONS: usize = 1000;

/// One published version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Published {
    pub(crate) number: u64,
    pub(crate) revision_id: String,
    pub(crate) description: Option<String>,
    pub(crate) created_ms: i64,
}

#[derive(Debug, Default)]
pub(crate) struct Versions {
    pub(crate) list: Vec<Published>,
    next: u64,
}

/// What follows a state machine's name in a qualified ARN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Qualifier {
    /// `...:stateMachine:<name>:<n>`, a version.
    Version(u64),
    /// `...:stateMachine:<name>:<alias>`, an alias ([`crate::aliases`]); alias names always
    /// have a character that is not a digit, so they never read as a version number.
    Alias(String),
}

/// A qualified ARN taken apart: the machine's name and its qualifier. `None` for an ARN
/// without a qualifier.
pub(crate) fn qualified(arn: &str) -> Result<Option<(String, Qualifier)>, ApiError> {
    let Some(rest) = arn.splitn(6, ':').nth(5).and_then(|r| r.strip_prefix("stateMachine:")) else {
        return Ok(None);
    };
    let Some((name, qualifier)) = rest.split_once(':') else { return Ok(None) };
    if qualifier.bytes().all(|b| b.is_ascii_digit()) {
        return match qualifier.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some((name.to_owned(), Qualifier::Version(n)))),
            _ => Err(ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}' (a version number is 1 or more)"))),
        };
    }
    crate::aliases::check_alias_name(qualifier)
        .map_err(|_| ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}'")))?;
    Ok(Some((name.to_owned(), Qualifier::Alias(qualifier.to_owned()))))
}

impl Service {
    /// [`qualified`], for an ARN of this server's region and account (else
    /// `StateMachineDoesNotExist`, as for an unqualified ARN).
    pub(crate) fn qualifier_ref(&self, arn: &str) -> Result<Option<(String, Qualifier)>, ApiError> {
        let Some((name, qualifier)) = qualified(arn)? else { return Ok(None) };
        let base = arn.rsplit_once(':').map_or(arn, |(b, _)| b);
        let r = self
            .arns
            .state_machine(base)
            .map_err(|e| if e.code == "StateMachineDoesNotExist" { crate::machines::does_not_exist(arn) } else { e })?;
        if r.name != name || r.test_case.is_some() {
            return Err(ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}'")));
        }
        Ok(Some((name, qualifier)))
    }

    /// [`Self::qualifier_ref`] where only a version may qualify the ARN (an alias ARN is
    /// `InvalidArn` naming the operation that takes it).
    pub(crate) fn version_ref(&self, arn: &str) -> Result<Option<(String, u64)>, ApiError> {
        match self.qualifier_ref(arn)? {
            None => Ok(None),
            Some((name, Qualifier::Version(n))) => Ok(Some((name, n))),
            Some((_, Qualifier::Alias(_))) => Err(ApiError::client(
                "InvalidArn",
                format!(
                    "Invalid Arn: '{arn}' is an alias ARN, which this operation does not take (DescribeStateMachineAlias does)"
                ),
            )),
        }
    }

    fn version_registry(&self) -> Registry {
        Registry::new(Arc::clone(&self.store))
    }

    pub(crate) async fn versions_of(&self, name: &str) -> Result<Versions, ApiError> {
        Ok(self.read_versions(name).await?.0)
    }

    /// `name`'s versions and the registry version they were read from (`None`: none stored).
    async fn read_versions(&self, name: &str) -> Result<(Versions, Option<String>), ApiError> {
        let Some(current) = self.version_registry().current(&format!("{WORKFLOW_PREFIX}{name}")).await? else {
            return Ok((Versions { list: Vec::new(), next: 1 }, None));
        };
        let doc: Value = serde_json::from_str(&current.definition.source)
            .map_err(|e| ApiError::internal(format!("the stored versions of '{name}' are not JSON: {e}")))?;
        let list = doc["versions"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| {
                        Some(Published {
                            number: v["number"].as_u64()?,
                            revision_id: v["revisionId"].as_str()?.to_owned(),
                            description: v["description"].as_str().map(str::to_owned),
                            created_ms: v["created"].as_i64()?,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok((Versions { list, next: doc["next"].as_u64().unwrap_or(1) }, Some(current.version_id)))
    }

    /// Reads `name`'s versions, lets `change` edit them (it says whether it did) and writes them
    /// back over the list read ([`crate::registry_doc::change`]: the list is one registry
    /// document written whole, and several servers may share a store).
    async fn change_versions<T>(
        &self,
        name: &str,
        change: impl FnMut(&mut Versions) -> Result<(T, bool), ApiError>,
    ) -> Result<T, ApiError> {
        let what = || format!("the versions of '{name}'");
        let read = || -> BoxFuture<'_, _> { Box::pin(self.read_versions(name)) };
        let write = |doc: Versions, read_from: Option<String>| -> BoxFuture<'_, _> {
            Box::pin(async move { self.save_versions(name, &doc, read_from.as_deref()).await })
        };
        crate::registry_doc::change(what, read, write, change).await
    }

    /// Writes `versions` if the stored list is still the one read (`read_from`); returns whether it did.
    async fn save_versions(&self, name: &str, versions: &Versions, read_from: Option<&str>) -> Result<bool, ApiError> {
        let list: Vec<Value> = versions
            .list
            .iter()
            .map(|p| {
                json!({ "number": p.number, "revisionId": p.revision_id, "description": p.description, "created": p.created_ms })
            })
            .collect();
        let source = json!({ "versions": list, "next": versions.next, "at": now_ms() }).to_string();
        let workflow = format!("{WORKFLOW_PREFIX}{name}");
        crate::registry_doc::write(&self.store, &workflow, ORIGIN, source, read_from).await
    }

    pub(crate) fn version_arn(&self, name: &str, number: u64) -> String {
        format!("{}:{number}", self.arns.machine_arn(name))
    }

    /// Publishes the machine's current revision (idempotent: a revision already published as
    /// the latest version answers with that version, as on AWS).
    pub(crate) async fn publish(&self, m: &Machine, description: Option<&str>) -> Result<(String, i64), ApiError> {
        if let Some(d) = description
            && d.chars().count() > 256
        {
            return Err(ApiError::validation(
                "1 validation error detected: Value at 'description' failed to satisfy constraint: Member must have length less than or equal to 256",
            ));
        }
        let (number, created_ms) = self
            .change_versions(&m.name, |versions| {
                if let Some(latest) = versions.list.iter().max_by_key(|p| p.number)
                    && latest.revision_id == m.version.version_id
                {
                    if description.is_some() && latest.description.as_deref() != description {
                        return Err(ApiError::client(
                            "ConflictException",
                            format!(
                                "the current revision is already published as version {} with another description",
                                latest.number
                            ),
                        ));
                    }
                    return Ok(((latest.number, latest.created_ms), false));
                }
                if versions.list.len() >= MAX_VERSIONS {
                    return Err(ApiError::client(
                        "ServiceQuotaExceededException",
                        format!("state machine '{}' has {MAX_VERSIONS} versions: delete some first", m.name),
                    ));
                }
                let number = versions.next.max(1);
                let created_ms = now_ms();
                versions.list.push(Published {
                    number,
                    revision_id: m.version.version_id.clone(),
                    description: description.map(str::to_owned),
                    created_ms,
                });
                versions.next = number + 1;
                Ok(((number, created_ms), true))
            })
            .await?;
        Ok((self.version_arn(&m.name, number), created_ms))
    }

    /// The machine as of version `number` of `name`, and that version, or
    /// `StateMachineDoesNotExist` naming `arn`.
    pub(crate) async fn machine_version(
        &self,
        name: &str,
        number: u64,
        arn: &str,
    ) -> Result<(Machine, Published), ApiError> {
        let missing = || crate::machines::does_not_exist(arn);
        self.machines.get(name).await?.ok_or_else(missing)?;
        let published =
            self.versions_of(name).await?.list.into_iter().find(|p| p.number == number).ok_or_else(missing)?;
        let machine = self.machines.version(name, &published.revision_id).await?.ok_or_else(missing)?;
        Ok((machine, published))
    }

    /// Drops every version of a deleted machine.
    pub(crate) async fn forget_versions(&self, name: &str) -> Result<(), ApiError> {
        self.change_versions(name, |versions| {
            let changed = !versions.list.is_empty();
            versions.list.clear();
            versions.next = 1;
            Ok(((), changed))
        })
        .await
    }

    pub(crate) async fn publish_version(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        if self.version_ref(arn)?.is_some() {
            return Err(ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{arn}' (publish from the unqualified ARN)"),
            ));
        }
        let r = self.arns.state_machine(arn)?;
        let m = self.machines.require(&r.name, arn).await?;
        self.refuse_deleting(&m.name, arn, false).await?;
        if let Some(revision) = opt_str(body, "revisionId")?
            && revision != m.version.version_id
        {
            return Err(ApiError::client(
                "ConflictException",
                format!("revisionId '{revision}' is not the current revision ('{}')", m.version.version_id),
            ));
        }
        let (version_arn, created) = self.publish(&m, opt_str(body, "description")?).await?;
        Ok(json!({ "creationDate": seconds(created), "stateMachineVersionArn": version_arn }))
    }

    pub(crate) async fn list_versions(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineArn")?;
        let r = self.arns.state_machine(arn)?;
        let m = self.machines.require(&r.name, arn).await?;
        let mut list = self.versions_of(&m.name).await?.list;
        list.sort_by(|a, b| b.number.cmp(&a.number));
        let (list, next) = page(list, body)?;
        let items: Vec<Value> = list
            .iter()
            .map(|p| json!({ "stateMachineVersionArn": self.version_arn(&m.name, p.number), "creationDate": seconds(p.created_ms) }))
            .collect();
        let mut out = json!({ "stateMachineVersions": items });
        if let Some(next) = next {
            out["nextToken"] = json!(next);
        }
        Ok(out)
    }

    pub(crate) async fn delete_version(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = req_str(body, "stateMachineVersionArn")?;
        let Some((name, number)) = self.version_ref(arn)? else {
            return Err(ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}' (not a version ARN)")));
        };
        let referenced = self.aliases_routing_to(&name, number).await?;
        if !referenced.is_empty() {
            return Err(ApiError::client(
                "ConflictException",
                format!(
                    "Version to be deleted must not be referenced by an alias. Current list of aliases referencing this version: [{}]",
                    referenced.join(", ")
                ),
            ));
        }
        // Deleting a version that does not exist succeeds, as deleting a machine does.
        self.change_versions(&name, |versions| {
            let before = versions.list.len();
            versions.list.retain(|p| p.number != number);
            Ok(((), versions.list.len() != before))
        })
        .await?;
        Ok(json!({}))
    }

    /// DescribeStateMachine of a version ARN.
    pub(crate) async fn describe_version(&self, arn: &str, name: &str, number: u64) -> Result<Value, ApiError> {
        let (m, published) = self.machine_version(name, number, arn).await?;
        let mut out = json!({
            "stateMachineArn": arn,
            "name": m.name,
            "status": "ACTIVE",
            "definition": m.version.definition.source,
            "roleArn": m.role_arn,
            "type": m.machine_type.as_str(),
            "creationDate": seconds(published.created_ms),
            "loggingConfiguration": { "level": "OFF", "includeExecutionData": false },
            "revisionId": m.version.version_id,
        });
        if let Some(d) = &published.description {
            out["description"] = json!(d);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_arns_are_taken_apart() {
        let base = "arn:aws:states:us-east-1:123456789012:stateMachine:M";
        assert_eq!(qualified(base).unwrap(), None);
        assert_eq!(qualified(&format!("{base}:3")).unwrap(), Some(("M".into(), Qualifier::Version(3))));
        assert_eq!(qualified(&format!("{base}:prod")).unwrap(), Some(("M".into(), Qualifier::Alias("prod".into()))));
        assert_eq!(qualified(&format!("{base}:0")).unwrap_err().code, "InvalidArn");
        assert_eq!(qualified(&format!("{base}:a b")).unwrap_err().code, "InvalidArn");
    }
}
