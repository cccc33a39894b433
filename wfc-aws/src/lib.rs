//! wfc workflows run under AWS's execution protocols: the workflow (generated code from
//! `include_workflow!`, or a definition on `wfc-runtime`'s interpreter) answers an Amazon SWF
//! decision task or runs as an AWS Lambda durable function, with the same semantics as on its
//! own (`wfc_runtime::exec`).
//!
//! Both protocols are replay: the service keeps what happened, and each time it asks, the
//! workflow is re-run from its start over that record (`wfc_journal::Journal` replays the
//! finished operations), makes all the progress it can, and stops where it must wait
//! (`wfc_journal::suspend`). This crate maps each service's record and answers to the journal's
//! operations; the journal, its suspension and the in-memory replay store are `wfc-journal`'s,
//! which knows nothing of this crate.
//!
//! - [`swf`]: an Amazon SWF decider, a pure function from a decision task to its decisions.
//!   - `swf::poller` (feature `swf-poller`): a long-polling decider over it, through aws-sdk-swf
//!     with aws-config.
//! - [`lambda_durable`]: an AWS Lambda durable function (the invocation and checkpoint protocol,
//!   over any [`lambda_durable::DurableClient`]).
//!   - `lambda_durable::client` (feature `lambda-sdk`): its service client, aws-sdk-lambda with
//!     aws-config.
//!   - `lambda_durable::function` (feature `lambda`): that function deployed with the
//!     `lambda_runtime` crate.
//!
//! The AWS SDK parts are features because they are most of a build's time (docs/adapters.md,
//! README "Dependency choices"); without them the crate is the two protocols, on `wfc-runtime`'s
//! `durable` feature. The mappings and what is not supported: docs/adapters.md.

#[cfg(any(feature = "lambda-sdk", feature = "swf-poller"))]
mod aws_http;
pub mod lambda_durable;
pub mod swf;
