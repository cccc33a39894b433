//! [`replay_store_keeps_no_records!`](crate::replay_store_keeps_no_records): the part of the
//! [`Store`](super::Store) trait a store that lives for one replay does not serve. Beside the
//! trait, since every replay store outside this crate implements it (`wfc-journal`'s
//! `ReplayStore`, the `wfc-aws` adapters' stores).

/// The [`durable::Store`](crate::durable::Store) methods a replay store does not serve, for use
/// inside its `impl Store` block: `wfc_journal::ReplayStore` and the stores of the `wfc-aws`
/// adapters. Such a store lives for one replay (a replay check, one decision or invocation), and
/// whatever keeps the execution (the checked store, SWF, Lambda) keeps its records and histories
/// and owns the jobs of workers and other processes (callbacks by token, stop, claims and leases):
/// listings are empty, histories are dropped, claims find nothing, leases and releases are no-ops,
/// and the rest answer `StoreError::Unsupported` naming the operation. The expansion names
/// `::futures::future::BoxFuture` (the `Store` trait's future type), so the implementing crate
/// depends on `futures`.
#[macro_export]
macro_rules! replay_store_keeps_no_records {
    () => {
        fn list_executions(&self) -> ::futures::future::BoxFuture<
            '_, Result<Vec<$crate::durable::ExecutionRecord>, $crate::durable::StoreError>,
        > {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn describe_execution<'a>(
            &'a self,
            _name: &'a str,
        ) -> ::futures::future::BoxFuture<
            'a, Result<Option<$crate::durable::ExecutionRecord>, $crate::durable::StoreError>,
        > {
            Box::pin(async { Ok(None) })
        }

        fn append_history<'a>(
            &'a self,
            _name: &'a str,
            _events: Vec<$crate::HistoryEvent>,
        ) -> ::futures::future::BoxFuture<'a, Result<(), $crate::durable::StoreError>> {
            Box::pin(async { Ok(()) })
        }

        fn read_history<'a>(&'a self, _name: &'a str) -> ::futures::future::BoxFuture<
            'a, Result<Vec<$crate::HistoryEvent>, $crate::durable::StoreError>,
        > {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn complete_callback<'a>(
            &'a self,
            _token: &'a str,
            _completion: $crate::durable::CallbackCompletion,
        ) -> ::futures::future::BoxFuture<'a, Result<String, $crate::durable::StoreError>> {
            Box::pin(async {
                Err($crate::durable::StoreError::Unsupported("completing a callback through a replay store".into()))
            })
        }

        fn heartbeat_callback<'a>(&'a self, _token: &'a str) -> ::futures::future::BoxFuture<
            'a, Result<String, $crate::durable::StoreError>,
        > {
            Box::pin(async {
                Err($crate::durable::StoreError::Unsupported("a callback heartbeat through a replay store".into()))
            })
        }

        fn stop_execution<'a>(
            &'a self,
            _name: &'a str,
            _error: Option<String>,
            _cause: Option<String>,
        ) -> ::futures::future::BoxFuture<'a, Result<$crate::durable::ExecutionRecord, $crate::durable::StoreError>> {
            Box::pin(async {
                Err($crate::durable::StoreError::Unsupported("stopping an execution through a replay store".into()))
            })
        }

        fn create_execution(&self, _new: $crate::durable::NewExecution) -> ::futures::future::BoxFuture<
            '_, Result<($crate::durable::ExecutionRecord, bool), $crate::durable::StoreError>,
        > {
            Box::pin(async {
                Err($crate::durable::StoreError::Unsupported("creating an execution in a replay store".into()))
            })
        }

        fn claim_runnable<'a>(
            &'a self,
            _owner: &'a str,
            _lease: ::std::time::Duration,
            _limit: usize,
            _filter: &'a $crate::durable::ClaimFilter,
        ) -> ::futures::future::BoxFuture<
            'a,
            Result<
                Vec<Result<$crate::durable::Claim, (String, $crate::durable::StoreError)>>,
                $crate::durable::StoreError,
            >,
        > {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn renew_lease<'a>(
            &'a self,
            _name: &'a str,
            _epoch: i64,
            _owner: &'a str,
            _lease: ::std::time::Duration,
        ) -> ::futures::future::BoxFuture<'a, Result<(), $crate::durable::StoreError>> {
            Box::pin(async { Ok(()) })
        }

        fn release<'a>(
            &'a self,
            _name: &'a str,
            _epoch: i64,
            _wake_at_ms: Option<i64>,
            _signals_seen: i64,
        ) -> ::futures::future::BoxFuture<'a, Result<(), $crate::durable::StoreError>> {
            Box::pin(async { Ok(()) })
        }

        fn fail_execution<'a>(
            &'a self,
            _name: &'a str,
            _error: &'a str,
            _cause: &'a str,
        ) -> ::futures::future::BoxFuture<'a, Result<(), $crate::durable::StoreError>> {
            Box::pin(async {
                Err($crate::durable::StoreError::Unsupported("failing an execution in a replay store".into()))
            })
        }
    };
}
