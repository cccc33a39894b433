//! Where a Serverless Workflow subflow goes when the execution runs on a service that invokes
//! other functions: the Lambda durable function adapter's `CHAINED_INVOKE` targets.
//!
//! In wfc's own stores a subflow the parent waits for runs in the parent's process as a
//! `CHAINED_INVOKE` enclosing the child's operations. On a service's journal (a Lambda durable
//! function) a `CHAINED_INVOKE` invokes another *deployed function*, and nothing in a definition
//! says which one: [`ChainedInvokes`] maps a subflow's `workflowId` (and optionally the version
//! of the workflow it resolves to) to a Lambda `FunctionName`. A mapped subflow is checkpointed
//! as a `CHAINED_INVOKE` `START` with `ChainedInvokeOptions.FunctionName` and the child's input
//! as payload, and nothing of the child runs in the parent's invocation; an unmapped one stays
//! a `CONTEXT` whose child runs in the parent's invocation (docs/adapters.md).

use std::fmt;

use wfc_ir::sw::{Body, SwKind};
use wfc_ir::{StateKind, StateMachine, Workflow};

/// The workflow id of a mapping that applies to every subflow no other mapping names (`*=FUNCTION`,
/// an SWF decider's `"subflows": {"*": {}}`).
pub const ANY_WORKFLOW: &str = "*";

/// A malformed mapping, or one the definitions never use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainedConfigError {
    /// A `WORKFLOW_ID[@VERSION]=FUNCTION` text that does not parse.
    #[error("chained function mapping '{text}': {reason}")]
    Malformed {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Two mappings for the same workflow id and version.
    #[error("the workflow '{0}' is mapped to a chained function twice")]
    Duplicate(String),
    /// Map Run children are to chain, and no definition has a DISTRIBUTED Map.
    #[error("Map Run children are to be chained invokes, but the definition has no DISTRIBUTED Map state")]
    NoDistributedMap,
    /// A mapping no subflow of the definitions uses.
    #[error("the chained function mapping {mapping} names no subflow the definition waits for{detail}")]
    Unused {
        /// The mapping, as `ID[@VERSION]=FUNCTION`.
        mapping: String,
        /// Why (what the definition has instead), with a leading separator, or empty.
        detail: String,
    },
}

/// One mapping: the subflows with `workflow_id` (and, when given, whose workflow has `version`)
/// are invoked as the Lambda function `function`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainedFunction {
    /// The subflow's `workflowId`.
    pub workflow_id: String,
    /// The `version` the resolved workflow must have; `None` matches any.
    pub version: Option<String>,
    /// The target: a function name or ARN (`ChainedInvokeOptions.FunctionName`).
    pub function_name: String,
    /// An alias or version of the function, appended as `:QUALIFIER` unless `function_name`
    /// already ends with one.
    pub qualifier: Option<String>,
}

impl ChainedFunction {
    /// A mapping of `workflow_id` (any version) to `function_name`.
    pub fn new(workflow_id: impl Into<String>, function_name: impl Into<String>) -> ChainedFunction {
        ChainedFunction {
            workflow_id: workflow_id.into(),
            version: None,
            function_name: function_name.into(),
            qualifier: None,
        }
    }

    /// The `FunctionName` sent in `ChainedInvokeOptions`: the name or ARN, with `:QUALIFIER`.
    pub fn target(&self) -> String {
        match &self.qualifier {
            Some(q) => format!("{}:{q}", self.function_name),
            None => self.function_name.clone(),
        }
    }

    /// Parses `WORKFLOW_ID[@VERSION]=FUNCTION`, where FUNCTION is a function name or ARN with an
    /// optional `:QUALIFIER` (what the Lambda `Invoke` API accepts).
    pub fn parse(text: &str) -> Result<ChainedFunction, ChainedConfigError> {
        let malformed =
            |reason: &str| ChainedConfigError::Malformed { text: text.to_owned(), reason: reason.to_owned() };
        let (key, function) =
            text.split_once('=').ok_or_else(|| malformed("expected WORKFLOW_ID[@VERSION]=FUNCTION"))?;
        let (workflow_id, version) = parse_key(key).map_err(malformed)?;
        check_function_name(function).map_err(|reason| malformed(&reason))?;
        Ok(ChainedFunction {
            workflow_id: workflow_id.to_owned(),
            version: version.map(str::to_owned),
            function_name: function.to_owned(),
            qualifier: None,
        })
    }

    fn key(&self) -> String {
        match &self.version {
            Some(v) => format!("{}@{v}", self.workflow_id),
            None => self.workflow_id.clone(),
        }
    }

    fn matches(&self, workflow_id: &str, version: Option<&str>) -> bool {
        (self.is_wildcard() || self.workflow_id == workflow_id)
            && self.version.as_deref().is_none_or(|v| Some(v) == version)
    }

    /// Whether this mapping's workflow id is [`ANY_WORKFLOW`]: it maps every subflow no other
    /// mapping names.
    pub fn is_wildcard(&self) -> bool {
        self.workflow_id == ANY_WORKFLOW
    }
}

impl fmt::Display for ChainedFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key(), self.target())
    }
}

/// Splits a mapping's key, `WORKFLOW_ID[@VERSION]`, into the workflow id and the version, or
/// says what is wrong with it (also the key syntax of the `wfc-aws` SWF decider's `subflows`).
pub fn parse_key(key: &str) -> Result<(&str, Option<&str>), &'static str> {
    let (workflow_id, version) = match key.split_once('@') {
        Some((id, v)) => (id, Some(v)),
        None => (key, None),
    };
    if workflow_id.trim().is_empty() || workflow_id.trim() != workflow_id {
        return Err("the workflow id is empty or has surrounding spaces");
    }
    if version.is_some_and(|v| v.trim().is_empty() || v.trim() != v) {
        return Err("the version after '@' is empty or has surrounding spaces");
    }
    Ok((workflow_id, version))
}

/// Checks a `FunctionName` as Lambda's `Invoke` (and `ChainedInvokeOptions`) accepts it: a name,
/// `name:qualifier`, a partial ARN or a full ARN; at most 256 characters of
/// `[a-zA-Z0-9-_.:$]`.
fn check_function_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the function name is empty".into());
    }
    if name.len() > 256 {
        return Err("the function name is longer than 256 characters".into());
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || "-_.:$".contains(*c))) {
        return Err(format!(
            "the function name has the character {bad:?} (a Lambda function name or ARN has letters, digits, '-', '_', '.', ':' and '$')"
        ));
    }
    if name.split(':').any(str::is_empty) {
        return Err("the function name has an empty ':'-separated part".into());
    }
    Ok(())
}

/// Where a DISTRIBUTED Map Run's child executions run on a service's journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MapRunChildren {
    /// In the parent's invocation, each a CONTEXT of subtype `MapRunChild` (the default).
    #[default]
    InParent,
    /// Each a CHAINED_INVOKE (subtype `MapRunChild`) of the function itself, which runs the
    /// Map's ItemProcessor as a durable execution of its own: the named function, or with
    /// `None` the function's own name (from the invocation's ARN, the Invoke route that
    /// `wfc lambda-serve` answered, or `AWS_LAMBDA_FUNCTION_NAME`).
    Chained(Option<String>),
}

impl MapRunChildren {
    /// `Chained` to the function `text` names, or to the function itself when `text` is empty
    /// (`wfc lambda-serve --chained-map-runs[=FUNCTION]`).
    pub fn chained(text: &str) -> Result<MapRunChildren, ChainedConfigError> {
        if text.is_empty() {
            return Ok(MapRunChildren::Chained(None));
        }
        check_function_name(text).map_err(|reason| ChainedConfigError::Malformed { text: text.to_owned(), reason })?;
        Ok(MapRunChildren::Chained(Some(text.to_owned())))
    }
}

/// The chained invoke targets of an execution: subflow mappings and where Map Run children
/// run (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainedInvokes {
    subflows: Vec<ChainedFunction>,
    map_runs: MapRunChildren,
    /// Whether subflows started without waiting (`waitForCompletion: false`) are mapped too
    /// (an SWF decider starts them as child workflows it does not wait for).
    detached: bool,
}

impl ChainedInvokes {
    /// These mappings with Map Run children run as `map_runs`.
    pub fn with_map_runs(mut self, map_runs: MapRunChildren) -> ChainedInvokes {
        self.map_runs = map_runs;
        self
    }

    /// These mappings, applied also to the subflows started without waiting when `on` (an SWF
    /// decider's child workflows; a Lambda durable function runs those in the parent).
    pub fn with_detached(mut self, on: bool) -> ChainedInvokes {
        self.detached = on;
        self
    }

    /// The target of a subflow of `workflow_id` started without waiting, when these mappings
    /// apply to such subflows ([`ChainedInvokes::with_detached`]) and one names it.
    pub fn detached_target(&self, workflow_id: &str, version: Option<&str>) -> Option<String> {
        if self.detached { self.subflow_target(workflow_id, version) } else { None }
    }

    /// Where Map Run children run.
    pub fn map_runs(&self) -> &MapRunChildren {
        &self.map_runs
    }

    /// The function Map Run children are invoked as, once resolved ([`ChainedInvokes::for_function`]).
    pub fn map_run_function(&self) -> Option<&str> {
        match &self.map_runs {
            MapRunChildren::Chained(Some(f)) => Some(f),
            _ => None,
        }
    }

    /// These mappings for the function `function` (its own name, when Map Run children are to
    /// chain to it and no name was given).
    pub fn for_function(&self, function: &str) -> ChainedInvokes {
        let mut out = self.clone();
        if out.map_runs == MapRunChildren::Chained(None) {
            out.map_runs = MapRunChildren::Chained(Some(function.to_owned()));
        }
        out
    }

    /// No mapping: every subflow runs in the parent's invocation (as a CONTEXT).
    pub fn none() -> ChainedInvokes {
        ChainedInvokes::default()
    }

    /// These mappings; two for the same workflow id and version are an error.
    pub fn new(subflows: impl IntoIterator<Item = ChainedFunction>) -> Result<ChainedInvokes, ChainedConfigError> {
        let mut out = ChainedInvokes::default();
        for m in subflows {
            if out.subflows.iter().any(|o| o.workflow_id == m.workflow_id && o.version == m.version) {
                return Err(ChainedConfigError::Duplicate(m.key()));
            }
            out.subflows.push(m);
        }
        Ok(out)
    }

    /// Parses `WORKFLOW_ID[@VERSION]=FUNCTION` texts (`wfc lambda-serve --chained-function`).
    pub fn parse<'a>(texts: impl IntoIterator<Item = &'a str>) -> Result<ChainedInvokes, ChainedConfigError> {
        ChainedInvokes::new(texts.into_iter().map(ChainedFunction::parse).collect::<Result<Vec<_>, _>>()?)
    }

    /// Parses `WORKFLOW_ID[@VERSION]=FUNCTION` entries separated by commas or whitespace (the
    /// `WFC_CHAINED_FUNCTIONS` variable of a deployed function); an empty list is no mapping.
    pub fn parse_list(text: &str) -> Result<ChainedInvokes, ChainedConfigError> {
        ChainedInvokes::parse(text.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()))
    }

    /// Whether there is no mapping (every subflow and Map Run child runs in the parent).
    pub fn is_empty(&self) -> bool {
        self.subflows.is_empty() && self.map_runs == MapRunChildren::InParent
    }

    /// The mappings.
    pub fn subflows(&self) -> &[ChainedFunction] {
        &self.subflows
    }

    /// The `FunctionName` a subflow of `workflow_id` whose workflow has `version` is invoked as:
    /// a mapping with that version wins over one for any version.
    /// A mapping for the workflow id [`ANY_WORKFLOW`] applies last.
    pub fn subflow_target(&self, workflow_id: &str, version: Option<&str>) -> Option<String> {
        let find = |wildcard: bool, versioned: bool| {
            self.subflows.iter().find(|m| {
                m.is_wildcard() == wildcard && m.version.is_some() == versioned && m.matches(workflow_id, version)
            })
        };
        find(false, true)
            .or_else(|| find(false, false))
            .or_else(|| find(true, true))
            .or_else(|| find(true, false))
            .map(ChainedFunction::target)
    }

    /// The subflows of `workflows` these mappings send elsewhere: each as (`workflowId`, the
    /// resolved workflow's version, the mapping's target), in definition order.
    pub fn mapped_subflows<'a>(
        &self,
        workflows: impl IntoIterator<Item = &'a Workflow>,
    ) -> Vec<(String, Option<String>, String)> {
        let mut uses = Uses::default();
        for w in workflows {
            uses.machine(self, &w.machine);
        }
        uses.mapped
    }

    /// Checks that every mapping is used by a subflow one of `workflows` waits for (the parent
    /// of a mapped subflow; the mapped child's own subflows run in the target function). A
    /// mapping naming a workflow id the definitions use only as a detached subflow or a
    /// foreach/parallel body, or with a version the workflow does not have, is an error too.
    pub fn check<'a>(&self, workflows: impl IntoIterator<Item = &'a Workflow>) -> Result<(), ChainedConfigError> {
        let mut uses = Uses::default();
        for w in workflows {
            uses.machine(self, &w.machine);
        }
        if matches!(self.map_runs, MapRunChildren::Chained(_)) && !uses.distributed_map {
            return Err(ChainedConfigError::NoDistributedMap);
        }
        for m in &self.subflows {
            if uses.waited.iter().any(|(id, v)| m.matches(id, v.as_deref()))
                || (self.detached && uses.detached.iter().any(|(id, v)| m.matches(id, v.as_deref())))
            {
                continue;
            }
            // With detached subflows mapped too, those count as subflows in the messages.
            let candidates: Vec<&(String, Option<String>)> =
                uses.waited.iter().chain(uses.detached.iter().filter(|_| self.detached)).collect();
            let versions: Vec<String> = candidates
                .iter()
                .filter(|(id, _)| *id == m.workflow_id)
                .map(|(_, v)| v.clone().unwrap_or_else(|| "none".into()))
                .collect();
            let detail = if !versions.is_empty() {
                format!(" (the subflow '{}' has version {})", m.workflow_id, versions.join(", "))
            } else if uses.elsewhere.contains(&m.workflow_id) && !self.detached {
                format!(
                    " ('{}' is only a subflow started without waiting or a foreach/parallel body, which run in the parent)",
                    m.workflow_id
                )
            } else if uses.elsewhere.contains(&m.workflow_id) {
                format!(" ('{}' is only a foreach/parallel body, which runs in the parent)", m.workflow_id)
            } else if candidates.is_empty() && !self.detached {
                " (the definitions have no subflow state that waits for its child)".to_owned()
            } else if candidates.is_empty() {
                " (the definitions have no subflow state)".to_owned()
            } else {
                let mut ids: Vec<&str> = candidates.iter().map(|(id, _)| id.as_str()).collect();
                ids.sort_unstable();
                ids.dedup();
                format!(" (its subflows are: {})", ids.join(", "))
            };
            return Err(ChainedConfigError::Unused { mapping: m.to_string(), detail });
        }
        Ok(())
    }
}

/// The workflow ids a definition runs as subflows.
#[derive(Default)]
struct Uses {
    /// Subflow states that wait (`workflowId`, the resolved workflow's version).
    waited: Vec<(String, Option<String>)>,
    /// Detached subflows and workflow bodies.
    elsewhere: Vec<String>,
    /// Detached subflows (`workflowId`, the resolved workflow's version).
    detached: Vec<(String, Option<String>)>,
    /// Whether there is a DISTRIBUTED Map state.
    distributed_map: bool,
    /// The subflows a mapping sends elsewhere (`workflowId`, version, the mapping's target).
    mapped: Vec<(String, Option<String>, String)>,
}

impl Uses {
    fn machine(&mut self, config: &ChainedInvokes, machine: &StateMachine) {
        for state in &machine.states {
            let sw = match &state.kind {
                StateKind::Sw(sw) => sw,
                StateKind::Map(spec) => {
                    self.distributed_map |= spec.distributed.is_some();
                    self.machine(config, &spec.item_processor);
                    continue;
                }
                StateKind::Parallel(spec) => {
                    for b in &spec.branches {
                        self.machine(config, b);
                    }
                    continue;
                }
                _ => continue,
            };
            match &sw.kind {
                // Not compiled in: the handler runs it, as it runs a function.
                SwKind::Subflow { workflow: None, .. } => {}
                SwKind::Subflow { workflow_id, wait, workflow: Some(workflow) } => {
                    let version = workflow.version.clone();
                    let target = if *wait {
                        config.subflow_target(workflow_id, version.as_deref())
                    } else {
                        config.detached_target(workflow_id, version.as_deref())
                    };
                    let mapped = target.is_some();
                    if let Some(target) = target {
                        self.mapped.push((workflow_id.clone(), version.clone(), target));
                    }
                    if *wait {
                        self.waited.push((workflow_id.clone(), version));
                    } else {
                        self.elsewhere.push(workflow_id.clone());
                        self.detached.push((workflow_id.clone(), version));
                    }
                    // A mapped child runs in its own function, with that function's mappings.
                    if !mapped {
                        self.machine(config, &workflow.machine);
                    }
                }
                SwKind::ForEach { body, .. } => self.body(config, body),
                SwKind::Parallel { branches, .. } => {
                    for b in branches {
                        self.body(config, &b.body);
                    }
                }
                _ => {}
            }
        }
    }

    fn body(&mut self, config: &ChainedInvokes, body: &Body) {
        if let Body::Workflow(w) = body {
            let start = w.machine.states.get(w.machine.start_at);
            if let Some(StateKind::Sw(sw)) = start.map(|s| &s.kind)
                && let Some(meta) = &sw.workflow
            {
                self.elsewhere.push(meta.id.clone());
            }
            self.machine(config, &w.machine);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mappings() {
        let m = ChainedFunction::parse("ship=ship-fn").unwrap();
        assert_eq!((m.workflow_id.as_str(), m.version.clone(), m.target()), ("ship", None, "ship-fn".to_owned()));
        let m = ChainedFunction::parse("ship@2.0=arn:aws:lambda:us-east-1:123456789012:function:ship:live").unwrap();
        assert_eq!(m.version.as_deref(), Some("2.0"));
        assert_eq!(m.target(), "arn:aws:lambda:us-east-1:123456789012:function:ship:live");
        let qualified = ChainedFunction { qualifier: Some("7".into()), ..ChainedFunction::new("a", "fn") };
        assert_eq!(qualified.target(), "fn:7");
        for bad in ["ship", "=fn", "ship=", "ship@=fn", "ship=fn name", "ship=fn::x", " ship=fn"] {
            let e = ChainedFunction::parse(bad).unwrap_err();
            assert!(matches!(e, ChainedConfigError::Malformed { .. }), "{bad}: {e}");
        }
        let dup = ChainedInvokes::parse(["a=f", "a=g"]).unwrap_err();
        assert_eq!(dup, ChainedConfigError::Duplicate("a".into()));
    }

    #[test]
    fn lists_split_on_commas_and_whitespace() {
        assert!(ChainedInvokes::parse_list("").unwrap().is_empty());
        let c = ChainedInvokes::parse_list(" a=f,\nb@2=g  c=h ").unwrap();
        let keys: Vec<String> = c.subflows().iter().map(ToString::to_string).collect();
        assert_eq!(keys, ["a=f", "b@2=g", "c=h"]);
        assert!(ChainedInvokes::parse_list("a=f,b").is_err());
    }

    #[test]
    fn a_versioned_mapping_wins() {
        let c = ChainedInvokes::parse(["a=any", "a@2=two"]).unwrap();
        assert_eq!(c.subflow_target("a", Some("2")).as_deref(), Some("two"));
        assert_eq!(c.subflow_target("a", Some("1")).as_deref(), Some("any"));
        assert_eq!(c.subflow_target("a", None).as_deref(), Some("any"));
        assert_eq!(c.subflow_target("b", None), None);
        let only2 = ChainedInvokes::parse(["a@2=two"]).unwrap();
        assert_eq!(only2.subflow_target("a", None), None);
    }

    #[test]
    fn a_wildcard_applies_last_and_detached_subflows_only_when_asked() {
        let c = ChainedInvokes::parse(["*=every", "a=any"]).unwrap();
        assert_eq!(c.subflow_target("a", Some("2")).as_deref(), Some("any"));
        assert_eq!(c.subflow_target("b", None).as_deref(), Some("every"));
        assert_eq!(c.detached_target("b", None), None);
        assert_eq!(c.clone().with_detached(true).detached_target("b", None).as_deref(), Some("every"));
    }
}
