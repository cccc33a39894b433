//! Definitions AWS accepts (recorded) that wfc reports only with warnings compile through
//! `include_workflow!` (their warnings reach rustc as deprecation notes, allowed here: the
//! UI case `definition_warning` shows them) and fail at run time where AWS fails: a variable read but
//! never assigned (WFC0906), one assigned only in a Parallel branch (WFC0906), an outer name
//! assigned in a Map iteration (WFC0907, a variable of the iteration), a `.$` key in a JSONata
//! state (WFC0902, kept literally) and `ToleratedFailureCount` on an INLINE Map (WFC0220).
//! Their definitions are in `tests/compile/ui/accepted/` (definitions that compile, unlike
//! `tests/compile/ui/fixtures/`, which the UI cases expect to be refused).
#![deny(warnings, missing_docs)]
#![allow(deprecated)]

wfc_runtime::include_workflow!("ui/accepted/undefined_variable.asl.json");
wfc_runtime::include_workflow!("ui/accepted/variable_out_of_scope.asl.json");
wfc_runtime::include_workflow!("ui/accepted/variable_outer_write.asl.json");
wfc_runtime::include_workflow!("ui/accepted/aws_accepted_jsonata.asl.json");

use wfc_runtime::{RunOptions, block_on_virtual, json};

struct NoTasks;

impl undefined_variable::Handler for NoTasks {}
impl variable_out_of_scope::Handler for NoTasks {}
impl variable_outer_write::Handler for NoTasks {}
impl aws_accepted_jsonata::Handler for NoTasks {}

pub(crate) fn main() {
    // A JSONPath read of a variable nobody assigned is a path that selects nothing.
    let r = block_on_virtual(undefined_variable::run_with(&NoTasks, json!({}), RunOptions::virtual_time()));
    assert_eq!(r.error.map(|f| f.error), Some("States.Runtime".to_owned()));
    // A branch's variables vanish with the branch.
    let r = block_on_virtual(variable_out_of_scope::run_with(&NoTasks, json!({}), RunOptions::virtual_time()));
    assert_eq!(r.error.map(|f| f.error), Some("States.Runtime".to_owned()));
    // The iteration's `total` is its own; the Map still succeeds.
    let r = block_on_virtual(variable_outer_write::run_with(&NoTasks, json!([1, 2]), RunOptions::virtual_time()));
    assert_eq!(r.output, Some(json!([1, 2])));
    // `kept.$` is kept as written; reading `$neverAssigned` is AWS's QueryEvaluationError.
    let r = block_on_virtual(aws_accepted_jsonata::run_with(&NoTasks, json!({"n": 3}), RunOptions::virtual_time()));
    let failure = r.error.expect("the last state fails");
    assert_eq!(failure.error, "States.QueryEvaluationError");
    assert!(
        failure.cause.ends_with(
            "The JSONata expression '$neverAssigned' specified for the field 'Output/v' returned nothing (undefined)."
        ),
        "{}",
        failure.cause
    );
    let exited = r.history.iter().find(|e| e.details["name"] == "Literal" && e.details.get("output").is_some());
    assert_eq!(exited.map(|e| e.details["output"].clone()), Some(json!({"kept.$": "$", "n": 3})));
}
