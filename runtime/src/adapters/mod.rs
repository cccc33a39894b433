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
//!
//! The mappings and what is not supported: docs/adapters.md.

pub mod lambda_durable;
pub mod memory;
pub mod swf;
