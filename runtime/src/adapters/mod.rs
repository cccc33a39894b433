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
pub mod swf;
#[cfg(feature = "swf-poller")]
pub mod swf_poller;
