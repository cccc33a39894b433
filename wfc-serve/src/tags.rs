//! Tags of state machines and activities (`TagResource`, `UntagResource`,
//! `ListTagsForResource`, and `tags` on `CreateStateMachine`/`CreateActivity`), kept in the
//! store so they survive a restart and are shared by servers on one store.
//!
//! The store has no table for them, so they ride in the workflow registry, as the machines do
//! (see [`crate::machines`]): the tags of resource ARN `A` are the current version of the
//! registry workflow `wfc-serve-tags:A` (origin `wfc-serve:TAGS`), whose source is
//! `{"tags": {key: value}, "at": <ms>}` (the time makes each change a version of its own). Such
//! workflows are not state machines (their origin carries no type), so no listing shows them as
//! one, and `wfc workflows` shows them as what they are.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use wfc_runtime::durable::{Definition, Language, Registry, Syntax};

use crate::api::{Service, member, now_ms, req_str};
use crate::error::ApiError;

const WORKFLOW_PREFIX: &str = "wfc-serve-tags:";
const ORIGIN: &str = "wfc-serve:TAGS";
/// AWS's limits: 50 tags a resource, keys of 1 to 128 characters, values of up to 256.
const MAX_TAGS: usize = 50;

type Tags = BTreeMap<String, String>;

fn workflow(arn: &str) -> String {
    format!("{WORKFLOW_PREFIX}{arn}")
}

/// A `tags` member (`[{"key", "value"}]`), checked as AWS checks it; `None` when absent.
pub(crate) fn parse(body: &Map<String, Value>, name: &str) -> Result<Option<Tags>, ApiError> {
    let Some(list) = member(body, name) else { return Ok(None) };
    let list = list
        .as_array()
        .ok_or_else(|| ApiError::client("SerializationException", format!("'{name}' must be a list")))?;
    let mut tags = Tags::new();
    for (i, tag) in list.iter().enumerate() {
        let tag = tag
            .as_object()
            .ok_or_else(|| ApiError::client("SerializationException", format!("'{name}[{i}]' must be an object")))?;
        let key = match member(tag, "key") {
            Some(Value::String(k)) => k.clone(),
            Some(_) => {
                return Err(ApiError::client("SerializationException", format!("'{name}[{i}].key' must be a string")));
            }
            None => String::new(),
        };
        let value = match member(tag, "value") {
            Some(Value::String(v)) => v.clone(),
            Some(_) => {
                return Err(ApiError::client(
                    "SerializationException",
                    format!("'{name}[{i}].value' must be a string"),
                ));
            }
            None => String::new(),
        };
        check_key(&key, &format!("{name}.{}.member.key", i + 1))?;
        if value.chars().count() > 256 {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value at '{name}.{}.member.value' failed to satisfy constraint: Member must have length less than or equal to 256",
                i + 1
            )));
        }
        tags.insert(key, value);
    }
    if tags.len() > MAX_TAGS {
        return Err(ApiError::client("TooManyTags", format!("Too Many Tags: more than {MAX_TAGS} in '{name}'")));
    }
    Ok(Some(tags))
}

fn check_key(key: &str, at: &str) -> Result<(), ApiError> {
    let n = key.chars().count();
    if n == 0 || n > 128 {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value '{key}' at '{at}' failed to satisfy constraint: Member must have length between 1 and 128"
        )));
    }
    Ok(())
}

fn too_many(arn: &str) -> ApiError {
    ApiError::client("TooManyTags", format!("Too Many Tags: '{arn}' would have more than {MAX_TAGS} tags"))
}

impl Service {
    fn registry(&self) -> Registry {
        Registry::new(Arc::clone(&self.store))
    }

    /// The tags of `arn` (none if it has never been tagged).
    async fn tags_of(&self, arn: &str) -> Result<Tags, ApiError> {
        let Some(current) = self.registry().current(&workflow(arn)).await? else { return Ok(Tags::new()) };
        let doc: Value = serde_json::from_str(&current.definition.source)
            .map_err(|e| ApiError::internal(format!("the stored tags of '{arn}' are not JSON: {e}")))?;
        Ok(doc["tags"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect())
            .unwrap_or_default())
    }

    /// Makes `tags` the tags of `arn`.
    pub(crate) async fn set_tags(&self, arn: &str, tags: &Tags) -> Result<(), ApiError> {
        let definition = Definition {
            workflow: workflow(arn),
            origin: ORIGIN.to_owned(),
            source: json!({ "tags": tags, "at": now_ms() }).to_string(),
            language: Language::Asl,
            syntax: Syntax::Json,
            passes: Vec::new(),
            siblings: Vec::new(),
        };
        let registry = self.registry();
        let (version, _) = registry.register(definition, None).await?;
        registry.publish(&version.version_id).await?;
        Ok(())
    }

    /// The `tags` of a newly created resource: they replace whatever an earlier resource of the
    /// same ARN (deleted since) had. A create that finds the resource already there changes no
    /// tags (AWS: an idempotent create does not update them).
    pub(crate) async fn tags_on_create(&self, arn: &str, tags: Option<Tags>, created: bool) -> Result<(), ApiError> {
        let tags = tags.unwrap_or_default();
        if tags.len() > MAX_TAGS {
            return Err(too_many(arn));
        }
        if created && (!tags.is_empty() || !self.tags_of(arn).await?.is_empty()) {
            self.set_tags(arn, &tags).await?;
        }
        Ok(())
    }

    /// `resourceArn`, checked: a state machine or activity of this server that exists.
    async fn taggable(&self, body: &Map<String, Value>) -> Result<String, ApiError> {
        let arn = req_str(body, "resourceArn")?;
        let not_found = || ApiError::client("ResourceNotFound", format!("Resource not found: '{arn}'"));
        let kind = arn.splitn(6, ':').nth(5).unwrap_or_default();
        if kind.starts_with("stateMachine:") {
            let r = self.arns.state_machine(arn).map_err(|e| if e.code == "InvalidArn" { e } else { not_found() })?;
            if r.test_case.is_some() {
                return Err(ApiError::client("InvalidArn", format!("Invalid Arn: '{arn}' (a '#TestCase' suffix)")));
            }
            self.machines.get(&r.name).await?.ok_or_else(not_found)?;
        } else if kind.starts_with("activity:") {
            let name = self.arns.activity(arn).map_err(|e| if e.code == "InvalidArn" { e } else { not_found() })?;
            self.activities.describe(&name).await?.ok_or_else(not_found)?;
        } else {
            return Err(ApiError::client(
                "InvalidArn",
                format!("Invalid Arn: '{arn}' (only state machines and activities have tags)"),
            ));
        }
        Ok(arn.to_owned())
    }

    pub(crate) async fn tag_resource(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = self.taggable(body).await?;
        let added = parse(body, "tags")?.ok_or_else(|| {
            ApiError::validation(
                "1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null",
            )
        })?;
        let mut tags = self.tags_of(&arn).await?;
        tags.extend(added);
        if tags.len() > MAX_TAGS {
            return Err(too_many(&arn));
        }
        self.set_tags(&arn, &tags).await?;
        Ok(json!({}))
    }

    pub(crate) async fn untag_resource(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = self.taggable(body).await?;
        let keys = match member(body, "tagKeys") {
            Some(Value::Array(keys)) => keys,
            Some(_) => return Err(ApiError::client("SerializationException", "'tagKeys' must be a list")),
            None => {
                return Err(ApiError::validation(
                    "1 validation error detected: Value null at 'tagKeys' failed to satisfy constraint: Member must not be null",
                ));
            }
        };
        let mut tags = self.tags_of(&arn).await?;
        for (i, key) in keys.iter().enumerate() {
            let key = key.as_str().ok_or_else(|| {
                ApiError::client("SerializationException", format!("'tagKeys[{i}]' must be a string"))
            })?;
            check_key(key, &format!("tagKeys.{}.member", i + 1))?;
            tags.remove(key);
        }
        self.set_tags(&arn, &tags).await?;
        Ok(json!({}))
    }

    pub(crate) async fn list_tags(&self, body: &Map<String, Value>) -> Result<Value, ApiError> {
        let arn = self.taggable(body).await?;
        let tags: Vec<Value> =
            self.tags_of(&arn).await?.into_iter().map(|(key, value)| json!({ "key": key, "value": value })).collect();
        Ok(json!({ "tags": tags }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_lists_are_checked() {
        let body = |v: Value| v.as_object().cloned().unwrap();
        let tags = parse(&body(json!({"tags": [{"key": "a", "value": "1"}, {"key": "b"}]})), "tags").unwrap().unwrap();
        assert_eq!(tags.into_iter().collect::<Vec<_>>(), [("a".into(), "1".into()), ("b".into(), String::new())]);
        assert_eq!(parse(&body(json!({"tags": [{"value": "1"}]})), "tags").unwrap_err().code, "ValidationException");
        assert_eq!(parse(&body(json!({"tags": {"a": "1"}})), "tags").unwrap_err().code, "SerializationException");
        assert!(parse(&body(json!({})), "tags").unwrap().is_none());
    }
}
