//! Task handlers for engines that call a Task by its `Resource` (the interpreter, the Serverless
//! Workflow engine, the durable worker, generated code's name-dispatched subflows): the
//! [`DynHandler`] trait and the [`Handlers`] table.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::{Failure, TaskContext};

/// Task handlers for the interpreter: one call per Task attempt, dispatched by resource.
pub trait DynHandler: Send + Sync {
    /// Runs `resource` on `input` (the Task's effective input, after Parameters).
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>>;
}

/// Any `Fn(resource, input, ctx) -> future` closure is a handler.
impl<F, Fut> DynHandler for F
where
    F: Fn(String, Value, TaskContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, Failure>> + Send + 'static,
{
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(self(resource.to_owned(), input, ctx))
    }
}

type BoxedHandler = Box<dyn Fn(Value, TaskContext) -> BoxFuture<'static, Result<Value, Failure>> + Send + Sync>;

/// A handler table: one closure per resource, plus an optional fallback.
///
/// ```
/// use wfc_runtime::Handlers;
/// let handlers = Handlers::new().on("arn:aws:lambda:us-east-1:123456789012:function:Add", |input, _ctx| async move {
///     Ok(wfc_runtime::json!(input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)))
/// });
/// ```
#[derive(Default)]
pub struct Handlers {
    by_resource: HashMap<String, BoxedHandler>,
    fallback: Option<Box<dyn DynHandler>>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut resources: Vec<&String> = self.by_resource.keys().collect();
        resources.sort();
        f.debug_struct("Handlers").field("resources", &resources).field("fallback", &self.fallback.is_some()).finish()
    }
}

impl Handlers {
    /// An empty table: every resource fails with `States.Runtime` until registered.
    pub fn new() -> Handlers {
        Handlers::default()
    }

    /// Registers the handler for `resource`.
    pub fn on<F, Fut>(mut self, resource: impl Into<String>, handler: F) -> Handlers
    where
        F: Fn(Value, TaskContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, Failure>> + Send + 'static,
    {
        self.by_resource.insert(resource.into(), Box::new(move |input, ctx| Box::pin(handler(input, ctx))));
        self
    }

    /// Handles every resource that has no handler of its own.
    pub fn fallback(mut self, handler: impl DynHandler + 'static) -> Handlers {
        self.fallback = Some(Box::new(handler));
        self
    }
}

impl DynHandler for Handlers {
    fn call<'a>(&'a self, resource: &'a str, input: Value, ctx: TaskContext) -> BoxFuture<'a, Result<Value, Failure>> {
        match (self.by_resource.get(resource), &self.fallback) {
            (Some(handler), _) => handler(input, ctx),
            (None, Some(fallback)) => fallback.call(resource, input, ctx),
            // A missing handler is a set-up mistake, not a task failure: terminal, so no
            // Retry or Catch hides it.
            (None, None) => Box::pin(async move {
                Err(Failure::runtime(format!("no handler is registered for the resource '{resource}'")))
            }),
        }
    }
}
