//! A compiled workflow deployed as an AWS Lambda durable function, with the `lambda_runtime`
//! crate (feature `lambda`): [`serve`] runs the Lambda Runtime API loop (`GET
//! /2018-06-01/runtime/invocation/next`, `POST .../response`) and answers each event, a durable
//! invocation, with [`crate::lambda_durable::invoke_with`].
//!
//! ```ignore
//! wfc_runtime::include_workflow!("workflows/approval.asl.json");
//!
//! #[tokio::main]
//! async fn main() -> Result<(), wfc_aws::lambda_durable::function::Error> {
//!     let shop = Shop::default();
//!     let client = wfc_aws::lambda_durable::function::client_from_env().await?;
//!     wfc_aws::lambda_durable::function::serve("approval", client, |input, options| {
//!         approval::run_with(&shop, input, options)
//!     })
//!     .await
//! }
//! ```
//!
//! The checkpoint calls go through aws-sdk-lambda ([`super::client::SdkClient`]) with
//! the function's role credentials and region from the environment, to AWS, or to
//! `AWS_ENDPOINT_URL_LAMBDA` when set (a local service such as `dex-local-runner`).

use std::future::Future;
use std::sync::Arc;

use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};
use serde_json::Value;

use super::client::SdkClient;
use crate::lambda_durable::{self, ChainedInvokes, DurableClient, InvocationError};
use wfc_runtime::{ExecutionResult, RunOptions};

/// The error [`serve`] ends with (the Runtime API could not be reached, or its configuration is
/// missing).
pub type Error = lambda_runtime::Error;

/// The variable naming a durable execution API endpoint other than AWS's (read by aws-config).
pub const ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL_LAMBDA";

/// The durable execution API client of a deployed function: aws-sdk-lambda with aws-config's
/// credential and region chain (in Lambda, the role's credentials and `AWS_REGION` from the
/// environment), at `AWS_ENDPOINT_URL_LAMBDA` when it is set.
pub async fn client_from_env() -> Result<Arc<dyn DurableClient>, Error> {
    Ok(Arc::new(SdkClient::from_env(None).await?))
}

/// The function error an invocation that produced no answer reports: Lambda then retries the
/// invocation (an invalid checkpoint token, an unreachable service), as §3.4 asks.
fn diagnostic(e: InvocationError) -> Diagnostic {
    let error_type = match &e {
        InvocationError::BadEvent(_) => "Wfc.BadEvent",
        InvocationError::InvalidToken(_) => "Wfc.InvalidCheckpointToken",
        InvocationError::Service(_) => "Wfc.ServiceError",
    };
    Diagnostic { error_type: error_type.to_owned(), error_message: e.to_string() }
}

/// Runs the Lambda Runtime API loop until it fails: each event is handed to
/// [`lambda_durable::invoke_with`] with `run` (a generated module's `run_with`, or
/// `interp::run`), and its output (`{"Status": ...}`) is the function's response. Events are
/// handled one at a time, as Lambda sends them to one execution environment.
pub async fn serve<R, Fut>(workflow_name: &str, client: Arc<dyn DurableClient>, run: R) -> Result<(), Error>
where
    R: Fn(Value, RunOptions) -> Fut,
    Fut: Future<Output = ExecutionResult>,
{
    serve_chained(workflow_name, client, &ChainedInvokes::none(), run).await
}

/// [`serve`] where the Serverless Workflow subflows `chained` maps are CHAINED_INVOKE
/// operations of their functions ([`lambda_durable::invoke_with_chained`]); check the
/// mappings against the definition first ([`ChainedInvokes::check`]).
pub async fn serve_chained<R, Fut>(
    workflow_name: &str,
    client: Arc<dyn DurableClient>,
    chained: &ChainedInvokes,
    run: R,
) -> Result<(), Error>
where
    R: Fn(Value, RunOptions) -> Fut,
    Fut: Future<Output = ExecutionResult>,
{
    let run = &run;
    let client = &client;
    let handler = service_fn(move |event: LambdaEvent<Value>| async move {
        // Retries of the service's calls stop in time for this invocation's answer.
        let client = client.with_deadline(event.context.deadline()).unwrap_or_else(|| Arc::clone(client));
        lambda_durable::invoke_for_tenant(
            &event.payload,
            client,
            workflow_name,
            chained,
            event.context.tenant_id.as_deref(),
            run,
        )
        .await
        .map_err(diagnostic)
    });
    lambda_runtime::run(handler).await
}

/// The variable holding subflow mappings for [`chained_from_env`]: `WORKFLOW_ID[@VERSION]=FUNCTION`
/// entries separated by commas or whitespace.
pub const CHAINED_VARIABLE: &str = "WFC_CHAINED_FUNCTIONS";

/// The subflow mappings of a deployed function from `WFC_CHAINED_FUNCTIONS` (none when unset),
/// checked against the IRs of `workflows`: a malformed entry, or one naming a subflow no
/// definition waits for, is an error. Generated code carries no IR: a compiled program passes
/// `wfc_build::load_file`'s, or none when its definition has no subflow and no DISTRIBUTED Map
/// (then any mapping is refused).
pub fn chained_from_env(workflows: &[&wfc_ir::Workflow]) -> Result<ChainedInvokes, Error> {
    let text = std::env::var(CHAINED_VARIABLE).unwrap_or_default();
    let chained = ChainedInvokes::parse_list(&text).map_err(|e| format!("{CHAINED_VARIABLE}: {e}"))?;
    chained.check(workflows.iter().copied()).map_err(|e| format!("{CHAINED_VARIABLE}: {e}"))?;
    Ok(chained)
}
