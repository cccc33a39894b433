//! Warnings for mocks and handlers keys that match no state or resource of the workflow.
//!
//! A key answers a Task by its state name or its resource; a misspelt one (`"Chrage"`) answers
//! nothing, so the Task fails with `Wfc.NoMock` (or runs no command), which a Catch may swallow.
//! Such keys are reported before the run, with the closest name the workflow has.

use std::collections::BTreeSet;

/// The keys of `keys` that match no state name or resource of any of `workflows`, each with the
/// closest name they have (a did-you-mean), when one is close.
pub(crate) fn unmatched<'a>(
    keys: impl IntoIterator<Item = &'a str>,
    workflows: &[&wfc_ir::Workflow],
) -> Vec<(String, Option<String>)> {
    let mut known: BTreeSet<&str> = BTreeSet::new();
    for w in workflows {
        for (resource, states) in w.resources() {
            known.insert(resource);
            known.extend(states);
        }
    }
    keys.into_iter()
        .filter(|k| !known.contains(k))
        .map(|key| (key.to_owned(), closest(key, &known).map(str::to_owned)))
        .collect()
}

/// The known name most like `key`, if it is alike enough to be a likely misspelling.
fn closest<'a>(key: &str, known: &BTreeSet<&'a str>) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::normalized_damerau_levenshtein(key, k), *k))
        .filter(|(score, _)| *score >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// Prints a warning on stderr for each key of `keys` that matches nothing: `what` names the
/// keys' origin (`mocks key`, `handlers key`) and `place` where they are (a file, a case).
pub(crate) fn warn<'a>(
    what: &str,
    place: &str,
    keys: impl IntoIterator<Item = &'a str>,
    workflows: &[&wfc_ir::Workflow],
) {
    let names: Vec<&str> = workflows.iter().map(|w| w.name.as_str()).collect();
    for (key, suggestion) in unmatched(keys, workflows) {
        let hint = suggestion.map(|s| format!("; did you mean {s:?}?")).unwrap_or_default();
        eprintln!(
            "warning: {place}: {what} {key:?} matches no state or resource of {} {}{hint} (a Task it was meant for gets no answer from it)",
            if names.len() == 1 { "workflow" } else { "workflows" },
            names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_key_is_found_with_its_likely_meaning() {
        let def = r#"{"StartAt": "Charge", "States": {
            "Charge": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:Charge", "Next": "Ship"},
            "Ship": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:Ship", "End": true}}}"#;
        let loaded = wfc_core::load(wfc_core::Source { path: "order.asl.json", text: def }).unwrap();
        let keys = ["Charge", "Chrage", "arn:aws:lambda:us-east-1:1:function:Ship", "Zzzzzzzzzz"];
        assert_eq!(
            unmatched(keys, &[&loaded.workflow]),
            vec![("Chrage".to_owned(), Some("Charge".to_owned())), ("Zzzzzzzzzz".to_owned(), None)]
        );
    }
}
