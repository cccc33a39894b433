//! [`Journal`] as the runtime's [`JournalHooks`]: each method is the journal's own, with the
//! futures it is handed and returns boxed at the trait boundary.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use wfc_runtime::callback::{Limits, Registration, WaitingTask};
use wfc_runtime::events::EventBus;
use wfc_runtime::journal::{ContextEvents, EventWait, FinishedContext, JournalHooks, Operation, StoreFailure};
use wfc_runtime::task::{Attempt, StepRequest};
use wfc_runtime::{Clock, ExecutionResult, Failure, History};

use crate::Journal;

impl JournalHooks for Journal {
    fn name(&self) -> &str {
        Journal::name(self)
    }

    fn start_time(&self) -> &str {
        Journal::start_time(self)
    }

    fn redrive_count(&self) -> u32 {
        Journal::redrive_count(self)
    }

    fn suspended(&self) -> Option<Option<i64>> {
        Journal::suspended(self)
    }

    fn wants_step_requests(&self) -> bool {
        Journal::wants_step_requests(self)
    }

    fn attach_history(&self, history: &History) {
        Journal::attach_history(self, history)
    }

    fn complete<'a>(&'a self, result: &'a ExecutionResult) -> BoxFuture<'a, Result<(), StoreFailure>> {
        Box::pin(async move { Ok(Journal::complete(self, result).await?) })
    }

    fn recorded(&self, id: &str) -> Option<Operation> {
        Journal::recorded(self, id)
    }

    fn ended_before_run(&self, id: &str) -> bool {
        Journal::ended_before_run(self, id)
    }

    fn may_reopen(&self, id: &str) -> bool {
        Journal::may_reopen(self, id)
    }

    fn reopen(&self, id: &str) {
        Journal::reopen(self, id)
    }

    fn ran_under(&self, context: &str) -> bool {
        Journal::ran_under(self, context)
    }

    fn is_reopened(&self, id: &str) -> bool {
        Journal::is_reopened(self, id)
    }

    fn stored_history(&self) -> BoxFuture<'_, Result<Vec<wfc_runtime::HistoryEvent>, StoreFailure>> {
        Box::pin(async move { Ok(self.store().read_history(self.name()).await?) })
    }

    fn step<'a>(
        &'a self,
        id: String,
        parent: Option<String>,
        name: &'a str,
        request: Option<StepRequest>,
        run: BoxFuture<'a, Attempt>,
    ) -> BoxFuture<'a, Result<Attempt, Failure>> {
        Box::pin(Journal::step(self, id, parent, name, request, run))
    }

    fn record_step<'a>(
        &'a self,
        id: String,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        result: Value,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(Journal::record_step(self, id, parent, name, subtype, result))
    }

    fn sleep<'a>(
        &'a self,
        clock: &'a Clock,
        id: String,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        delay: Duration,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(Journal::sleep(self, clock, id, parent, name, subtype, delay))
    }

    fn callback<'a>(
        &'a self,
        clock: &'a Clock,
        id: String,
        parent: Option<String>,
        name: &'a str,
        registration: Registration,
        waiting: WaitingTask,
        limits: Limits,
        handler: BoxFuture<'a, Attempt>,
    ) -> BoxFuture<'a, Result<Attempt, Failure>> {
        Box::pin(Journal::callback(self, clock, id, parent, name, registration, waiting, limits, handler))
    }

    fn callback_token<'a>(
        &'a self,
        clock: &'a Clock,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        own: String,
        timeout: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(Journal::callback_token(self, clock, id, parent, name, own, timeout, heartbeat))
    }

    fn context_start<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(Journal::context_start(self, id, parent, name, subtype))
    }

    fn keeps_context_events(&self) -> bool {
        Journal::keeps_context_events(self)
    }

    fn finished_context(&self, id: &str, name: &str, keeps_history: bool) -> Result<Option<FinishedContext>, Failure> {
        Journal::finished_context(self, id, name, keeps_history)
    }

    fn reopened_context(&self, id: &str, name: &str, keeps_history: bool) -> Result<Option<FinishedContext>, Failure> {
        Journal::reopened_context(self, id, name, keeps_history)
    }

    fn context_end_with_events<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        outcome: &'a Result<Value, Failure>,
        events: Option<ContextEvents>,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(Journal::context_end_with_events(self, id, parent, name, subtype, outcome, events))
    }

    fn subflow<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        workflow_id: &'a str,
        version: Option<&'a str>,
        input: &'a Value,
        child: BoxFuture<'a, Result<Value, Failure>>,
    ) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(Journal::subflow(self, id, parent, name, workflow_id, version, input, child))
    }

    fn detached_subflow(
        &self,
        id: &str,
        name: &str,
        workflow_id: &str,
        version: Option<&str>,
        input: &Value,
    ) -> Result<bool, Failure> {
        Journal::detached_subflow(self, id, name, workflow_id, version, input)
    }

    fn subflow_as<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        subtype: &'a str,
        child: BoxFuture<'a, Result<Value, Failure>>,
    ) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(Journal::subflow_as(self, id, parent, name, subtype, child))
    }

    fn map_run_function(&self) -> Option<String> {
        Journal::map_run_function(self)
    }

    fn chained_map_run_child<'a>(
        &'a self,
        id: &'a str,
        parent: Option<String>,
        name: &'a str,
        function: &'a str,
        envelope: &'a Value,
    ) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(Journal::chained_map_run_child(self, id, parent, name, function, envelope))
    }

    fn produce<'a>(
        &'a self,
        id: String,
        parent: Option<String>,
        name: &'a str,
        event_name: &'a str,
        bus: &'a EventBus,
        publish: Box<dyn FnOnce() -> Value + Send + 'a>,
    ) -> BoxFuture<'a, Result<Value, Failure>> {
        Box::pin(Journal::produce(self, id, parent, name, event_name, bus, publish))
    }

    fn event_wait<'a>(
        &'a self,
        clock: &'a Clock,
        bus: &'a EventBus,
        wait: EventWait<'a>,
    ) -> BoxFuture<'a, Result<(Vec<(usize, Value)>, bool), Failure>> {
        Box::pin(Journal::event_wait(self, clock, bus, wait))
    }

    fn kv_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreFailure>> {
        Box::pin(async move { Ok(self.store().kv_get(key).await?) })
    }

    fn kv_put<'a>(&'a self, key: &'a str, value: Value) -> BoxFuture<'a, Result<(), StoreFailure>> {
        Box::pin(async move { Ok(self.store().kv_put(key, value).await?) })
    }

    fn kv_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        Box::pin(async move { Ok(self.store().kv_delete(key).await?) })
    }

    fn kv_signal<'a>(&'a self, topic: &'a str) -> BoxFuture<'a, Result<(), StoreFailure>> {
        Box::pin(async move { Ok(self.store().kv_signal(topic).await?) })
    }

    fn kv_signals(&self) -> BoxFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>> {
        self.store().kv_signals()
    }
}
