//! A compiled workflow (generated code, `include_workflow!`) deployed as an AWS Lambda durable
//! function with the `lambda_runtime` crate: the Lambda Runtime API (`AWS_LAMBDA_RUNTIME_API`)
//! hands it durable invocation events, and its checkpoints go to the durable execution API at
//! `AWS_ENDPOINT_URL_LAMBDA` (docs/adapters.md).
//!
//! Each task prints one line on standard output when it really runs (`prepare 7`,
//! `request 7 <token>`, `ship 7`): replayed tasks print nothing, and the approval request line
//! carries the task token (the service's callback id) that the approver answers with
//! (`wfc lambda-callback --id <token> --success '{"approved": true}'`).

use std::io::Write;

use wfc_aws::lambda_durable::function::{self as lambda_function, Error};
use wfc_runtime::{Failure, TaskContext, Value, json};

wfc_runtime::include_workflow!("workflows/approval.asl.json");

/// The shop's side effects: a line on standard output each.
struct Shop;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

impl approval::Handler for Shop {
    async fn prepare(&self, input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
        say(&format!("prepare {}", input["order"]));
        Ok(json!({ "packed": true }))
    }

    /// Sends the approval request with the task token (here: a line on standard output, as an
    /// email would be). Its return value is ignored: the function then answers PENDING until
    /// the service has the approver's answer.
    async fn request_approval_wait_for_task_token(&self, input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
        let token = input["token"].as_str().ok_or_else(|| Failure::new("Approval.NoToken", "no token"))?;
        say(&format!("request {} {token}", input["order"]));
        Ok(Value::Null)
    }

    async fn ship(&self, input: Value, _ctx: TaskContext) -> Result<Value, Failure> {
        say(&format!("ship {}", input["order"]));
        Ok(json!({ "carrier": "wfc-post" }))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let client = lambda_function::client_from_env().await?;
    // Serverless Workflow subflows mapped to other functions (WFC_CHAINED_FUNCTIONS), checked
    // against the definitions' IRs: this approval workflow has no subflow and no DISTRIBUTED
    // Map, so it passes none and any mapping is refused (generated code carries no IR; a
    // workflow with subflows passes `wfc_build::load_file`'s).
    let chained = lambda_function::chained_from_env(&[])?;
    let shop = Shop;
    lambda_function::serve_chained("approval", client, &chained, |input, options| {
        approval::run_with(&shop, input, options)
    })
    .await
}
