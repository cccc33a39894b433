//! The language-independent state graph that every wfc front end lowers into, and the small
//! expression languages it holds (JSONPath, ASL timestamps).
//!
//! Why a crate of its own: the compiler (`wfc-core`) validates and builds these values, and the
//! runtime (`wfc-runtime`) executes exactly the same values. The runtime re-exports the
//! `include_workflow!` macro, which depends on the compiler, so the compiler cannot depend on the
//! runtime; both depend on this leaf instead. That is how there is one semantics: a path the
//! compiler accepted is the path the runtime evaluates, parsed by the same code.

pub mod credentials;
pub mod distributed;
pub mod cron;
pub mod errors;
pub mod graph;
pub mod intrinsics;
pub mod jsonata;
pub mod jsonpath;
mod present;
pub mod native;
pub mod sw;
pub mod timestamp;

pub use credentials::TaskCredentials;
pub use distributed::DistributedMap;
pub use graph::*;
pub use jsonata::{JsonataExpr, JsonataTemplate};
pub use jsonpath::{Path, PathError, ReferencePath, Root, SelectError, SetError};
