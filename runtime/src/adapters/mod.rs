//! Adapters that run a compiled workflow inside another service's execution protocol, over the
//! same state machines (generated code or the interpreter) and the same [`crate::exec`] semantics.
//!
//! Both protocols are replay: the service keeps what happened, and each time it asks, the
//! workflow is re-run from its start over that record ([`crate::durable::Journal`] replays the
//! finished operations), makes all the progress it can, and stops where it must wait
//! ([`crate::durable::suspend`]).
//!
//! - [`swf`]: an Amazon SWF decider, a pure function from a decision task to its decisions.
//! - [`lambda_durable`]: an AWS Lambda durable function (the invocation and checkpoint protocol).
//! - `lambda_client` (feature `lambda-sdk`): its service client, aws-sdk-lambda with aws-config.
//! - `lambda_function` (feature `lambda`): that function deployed with the `lambda_runtime` crate.
//! - `swf_poller` (feature `swf-poller`): a long-polling SWF decider over [`swf`], through
//!   aws-sdk-swf with aws-config.
//!
//! The mappings and what is not supported: docs/adapters.md.

#[cfg(any(feature = "lambda-sdk", feature = "swf-poller"))]
mod aws_http;
#[cfg(feature = "lambda-sdk")]
pub mod lambda_client;
pub mod lambda_durable;
#[cfg(feature = "lambda")]
pub mod lambda_function;
pub mod memory;
pub mod swf;
#[cfg(feature = "swf-poller")]
pub mod swf_poller;

/// The [`crate::durable::Store`] methods an adapter's replay store does not serve. It lives for
/// one replay inside one invocation, and its service (SWF, Lambda) keeps the execution records
/// and histories and owns the jobs of workers and other processes (callbacks by token, stop,
/// claims and leases): listings are empty, histories are dropped, claims find nothing, leases
/// and releases are no-ops, and the rest answer `StoreError::Unsupported` naming the operation.
macro_rules! replay_store_keeps_no_records {
    () => {
        fn list_executions(&self) -> BoxFuture<'_, Result<Vec<ExecutionRecord>, StoreError>> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn describe_execution<'a>(
            &'a self,
            _name: &'a str,
        ) -> BoxFuture<'a, Result<Option<ExecutionRecord>, StoreError>> {
            Box::pin(async { Ok(None) })
        }

        fn append_history<'a>(
            &'a self,
            _name: &'a str,
            _events: Vec<crate::HistoryEvent>,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(async { Ok(()) })
        }

        fn read_history<'a>(&'a self, _name: &'a str) -> BoxFuture<'a, Result<Vec<crate::HistoryEvent>, StoreError>> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn complete_callback<'a>(
            &'a self,
            _token: &'a str,
            _completion: crate::durable::CallbackCompletion,
        ) -> BoxFuture<'a, Result<String, StoreError>> {
            Box::pin(async { Err(StoreError::Unsupported("completing a callback through a replay store".into())) })
        }

        fn heartbeat_callback<'a>(&'a self, _token: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
            Box::pin(async { Err(StoreError::Unsupported("a callback heartbeat through a replay store".into())) })
        }

        fn stop_execution<'a>(
            &'a self,
            _name: &'a str,
            _error: Option<String>,
            _cause: Option<String>,
        ) -> BoxFuture<'a, Result<ExecutionRecord, StoreError>> {
            Box::pin(async { Err(StoreError::Unsupported("stopping an execution through a replay store".into())) })
        }

        fn create_execution(&self, _new: NewExecution) -> BoxFuture<'_, Result<(ExecutionRecord, bool), StoreError>> {
            Box::pin(async { Err(StoreError::Unsupported("creating an execution in a replay store".into())) })
        }

        fn claim_runnable<'a>(
            &'a self,
            _owner: &'a str,
            _lease: std::time::Duration,
            _limit: usize,
            _filter: &'a crate::durable::ClaimFilter,
        ) -> BoxFuture<'a, Result<Vec<Result<Claim, (String, StoreError)>>, StoreError>> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn renew_lease<'a>(
            &'a self,
            _name: &'a str,
            _epoch: i64,
            _owner: &'a str,
            _lease: std::time::Duration,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(async { Ok(()) })
        }

        fn release<'a>(
            &'a self,
            _name: &'a str,
            _epoch: i64,
            _wake_at_ms: Option<i64>,
            _signals_seen: i64,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(async { Ok(()) })
        }

        fn fail_execution<'a>(
            &'a self,
            _name: &'a str,
            _error: &'a str,
            _cause: &'a str,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            Box::pin(async { Err(StoreError::Unsupported("failing an execution in a replay store".into())) })
        }
    };
}
pub(crate) use replay_store_keeps_no_records;
