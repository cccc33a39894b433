//! The predefined error names, as AWS Step Functions emits them today.

/// Matches any error name except the terminal ones ([`is_terminal`]).
pub const ALL: &str = "States.ALL";
/// A Task ran longer than TimeoutSeconds, missed a heartbeat, or the machine timed out.
pub const TIMEOUT: &str = "States.Timeout";
/// A Task failed during execution.
pub const TASK_FAILED: &str = "States.TaskFailed";
/// Insufficient privileges to run the Task.
pub const PERMISSIONS: &str = "States.Permissions";
/// A ResultPath could not be applied to the state's raw input.
pub const RESULT_PATH_MATCH_FAILURE: &str = "States.ResultPathMatchFailure";
/// A path in a payload template matched nothing.
pub const PARAMETER_PATH_FAILURE: &str = "States.ParameterPathFailure";
/// A Parallel branch failed (the 2016 name; AWS surfaces the branch's own error instead).
pub const BRANCH_FAILED: &str = "States.BranchFailed";
/// A Choice state matched no rule and has no Default.
pub const NO_CHOICE_MATCHED: &str = "States.NoChoiceMatched";
/// An intrinsic function failed.
pub const INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";
/// A runtime error that neither Retry nor Catch handles (path failures, bad Wait values, ...).
pub const RUNTIME: &str = "States.Runtime";
/// A payload exceeded the size limit. Terminal, like [`RUNTIME`].
pub const DATA_LIMIT_EXCEEDED: &str = "States.DataLimitExceeded";
/// The 2016 spec's name for a ResultPath/OutputPath failure.
pub const OUTPUT_MATCH_FAILURE: &str = "States.OutputMatchFailure";
/// A DISTRIBUTED Map's `ItemReader` could not read or parse its items.
pub const ITEM_READER_FAILED: &str = "States.ItemReaderFailed";
/// A DISTRIBUTED Map's `ResultWriter` could not write the results.
pub const RESULT_WRITER_FAILED: &str = "States.ResultWriterFailed";
/// More of a DISTRIBUTED Map's child executions failed than it tolerates.
pub const EXCEED_TOLERATED_FAILURE_THRESHOLD: &str = "States.ExceedToleratedFailureThreshold";

/// A JSONata expression failed, returned nothing, or returned the wrong type (AWS, 2024).
/// Unlike `States.Runtime`, it can be retried and caught.
pub const QUERY_EVALUATION_ERROR: &str = "States.QueryEvaluationError";
/// Heartbeat expiry as a matcher name (AWS records the error itself as `States.Timeout`).
pub const HEARTBEAT_TIMEOUT: &str = "States.HeartbeatTimeout";

/// Every predefined name a definition may list in `ErrorEquals`.
pub const PREDEFINED: &[&str] = &[
    ALL,
    TIMEOUT,
    TASK_FAILED,
    PERMISSIONS,
    RESULT_PATH_MATCH_FAILURE,
    PARAMETER_PATH_FAILURE,
    BRANCH_FAILED,
    NO_CHOICE_MATCHED,
    INTRINSIC_FAILURE,
    RUNTIME,
    DATA_LIMIT_EXCEEDED,
    OUTPUT_MATCH_FAILURE,
    QUERY_EVALUATION_ERROR,
    ITEM_READER_FAILED,
    RESULT_WRITER_FAILED,
    EXCEED_TOLERATED_FAILURE_THRESHOLD,
];

/// Errors that AWS never lets Retry or Catch handle, not even `States.ALL` or a catcher naming them.
pub fn is_terminal(error: &str) -> bool {
    error == RUNTIME || error == DATA_LIMIT_EXCEEDED
}

/// Whether a retrier's or catcher's `ErrorEquals` list matches `error`.
///
/// Besides exact names and `States.ALL`, AWS documents `States.TaskFailed` as a wildcard for
/// every error except `States.Timeout` (and the terminal ones, which nothing matches).
pub fn matches<S: AsRef<str>>(error_equals: &[S], error: &str) -> bool {
    if is_terminal(error) {
        return false;
    }
    error_equals.iter().map(AsRef::as_ref).any(|e| e == ALL || e == error || (e == TASK_FAILED && error != TIMEOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_failed_is_a_wildcard_except_for_timeouts_and_terminal_errors() {
        let tf = vec![TASK_FAILED.to_owned()];
        assert!(matches(&tf, TASK_FAILED));
        assert!(matches(&tf, "PaymentDeclined"));
        assert!(!matches(&tf, TIMEOUT));
        assert!(!matches(&tf, RUNTIME));
        let all = vec![ALL.to_owned()];
        assert!(matches(&all, TIMEOUT));
        assert!(!matches(&all, DATA_LIMIT_EXCEEDED));
        assert!(!matches(&[RUNTIME.to_owned()], RUNTIME));
    }
}
