//! Which definition an execution runs, without the definition itself.
//!
//! Generated code carries no IR: what the runtime needs to know of the workflow beyond its
//! states is written out by the compiler as constants, this among them.

/// A workflow definition as durable stores record it: the workflow's name and the hash of its
/// IR ([`wfc_ir::Workflow::definition_hash`]), which pins an execution to the definition that
/// started it. Generated code has one as `DEFINITION_ID`, computed at build time; the
/// interpreter makes one from the IR it loaded ([`DefinitionId::of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionId<'a> {
    /// The workflow's name (`$$.StateMachine.Name` unless the run options say otherwise).
    pub workflow: std::borrow::Cow<'a, str>,
    /// The IR hash.
    pub hash: std::borrow::Cow<'a, str>,
}

impl DefinitionId<'static> {
    /// The id generated code writes out as a constant.
    pub const fn new(workflow: &'static str, hash: &'static str) -> DefinitionId<'static> {
        DefinitionId { workflow: std::borrow::Cow::Borrowed(workflow), hash: std::borrow::Cow::Borrowed(hash) }
    }
}

impl<'a> DefinitionId<'a> {
    /// The id of a loaded IR (hashing it: a serialization and a SHA-256 of the text).
    pub fn of(workflow: &'a wfc_ir::Workflow) -> DefinitionId<'a> {
        DefinitionId {
            workflow: std::borrow::Cow::Borrowed(&workflow.name),
            hash: std::borrow::Cow::Owned(workflow.definition_hash()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash stores already hold: pinned here so that a change to the function (or to how the
    /// IR serializes) shows as a failure, not as executions that no longer resume.
    #[test]
    fn the_hash_is_the_one_stores_hold() {
        let workflow: wfc_ir::Workflow = serde_json::from_value(serde_json::json!({
            "name": "w", "comment": null, "version": null, "timeout_seconds": null,
            "machine": { "start_at": 0, "states": [
                { "name": "Done", "comment": null, "location": null,
                  "kind": { "Succeed": { "input_path": "$", "output_path": "$" } } }
            ] }
        }))
        .expect("an IR");
        let id = DefinitionId::of(&workflow);
        assert_eq!(id.workflow, "w");
        assert_eq!(id.hash.len(), 32);
        assert_eq!(id.hash, HASH);
    }

    /// The first 16 bytes of the SHA-256 of the IR's compact JSON (computed outside Rust).
    const HASH: &str = "ce854c243c38009e2fc451ef4025b3f4";
}
