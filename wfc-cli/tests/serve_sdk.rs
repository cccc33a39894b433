//! `wfc serve` driven by the AWS SDK for Rust (aws-sdk-sfn from crates.io, a dev-dependency),
//! unchanged but for its endpoint and the host prefix: a machine created, executions started,
//! their history paged through, a callback answered by task token, an activity worker, a stop,
//! listings, a broken definition validated with its located diagnostics, and StartSyncExecution
//! with the host prefix turned off; on SQLite and on PostgreSQL.
#![allow(missing_docs)]

mod support;

use std::path::Path;
use std::time::Duration;

use aws_sdk_sfn::Client;
use aws_sdk_sfn::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sfn::types::{
    ExecutionStatus, StateMachineType, SyncExecutionStatus, ValidateStateMachineDefinitionResultCode,
};
use serde_json::{Value, json};
use support::serve::Server;

const ROLE: &str = "arn:aws:iam::123456789012:role/wfc-sdk";

/// The callback resource writes its task token to `TOKEN_DIR/<execution>`, where the test reads
/// it, as a real integration would send it to a queue.
fn handlers(dir: &Path) -> std::path::PathBuf {
    let doc = json!({
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken": {"command": ["sh", "-c",
            "p=\"$TOKEN_DIR/$WFC_EXECUTION_NAME\"; printf %s \"$WFC_TASK_TOKEN\" > \"$p.tmp\" && mv \"$p.tmp\" \"$p\" && echo '{}'"]},
    });
    let path = dir.join("handlers.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// A client of `endpoint` with fixed credentials (the server verifies none without
/// `--credentials`) and StartSyncExecution's `sync-` host prefix turned off (it would send that
/// operation to `sync-127.0.0.1`, which does not resolve).
fn client(endpoint: &str) -> Client {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    let config = aws_sdk_sfn::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDWFCSDK", "secret", None, None, "wfc-test"))
        .endpoint_url(endpoint)
        .http_client(http)
        .interceptor(NoHostPrefix)
        .build();
    Client::from_conf(config)
}

/// The Rust SDK has no setting for it (botocore's `inject_host_prefix=False`, the JS SDK's
/// `disableHostPrefix`): an interceptor takes the `EndpointPrefix` StartSyncExecution stores
/// before the request is serialized, so the endpoint is used as given.
#[derive(Debug)]
struct NoHostPrefix;

impl aws_sdk_sfn::config::Intercept for NoHostPrefix {
    fn name(&self) -> &'static str {
        "NoHostPrefix"
    }

    fn modify_before_serialization(
        &self,
        _context: &mut aws_sdk_sfn::config::interceptors::BeforeSerializationInterceptorContextMut<'_>,
        _components: &aws_sdk_sfn::config::RuntimeComponents,
        cfg: &mut aws_sdk_sfn::config::ConfigBag,
    ) -> Result<(), aws_sdk_sfn::error::BoxError> {
        cfg.interceptor_state().unset::<aws_smithy_runtime_api::client::endpoint::EndpointPrefix>();
        Ok(())
    }
}

async fn finished(sfn: &Client, arn: &str) -> aws_sdk_sfn::operation::describe_execution::DescribeExecutionOutput {
    for _ in 0..600 {
        let d = sfn.describe_execution().execution_arn(arn).send().await.expect("DescribeExecution");
        if d.status() != &ExecutionStatus::Running {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{arn} did not finish");
}

async fn wait_file(path: &Path) -> String {
    for _ in 0..600 {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} was not written", path.display());
}

async fn suite(sfn: &Client, tokens: &Path) {
    // A machine, executions, and their history paged through.
    let pass = json!({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Result": {"a": 1}, "ResultPath": "$.a", "Next": "B"},
        "B": {"Type": "Pass", "End": true}}});
    let machine = sfn
        .create_state_machine()
        .name("Sdk")
        .definition(pass.to_string())
        .role_arn(ROLE)
        .send()
        .await
        .expect("CreateStateMachine")
        .state_machine_arn()
        .to_owned();
    assert_eq!(machine, "arn:aws:states:us-east-1:123456789012:stateMachine:Sdk");
    let ex = sfn
        .start_execution()
        .state_machine_arn(&machine)
        .name("one")
        .input(r#"{"n": 1}"#)
        .send()
        .await
        .expect("StartExecution")
        .execution_arn()
        .to_owned();
    let d = finished(sfn, &ex).await;
    assert_eq!(d.status(), &ExecutionStatus::Succeeded);
    let output: Value = serde_json::from_str(d.output().unwrap()).unwrap();
    assert_eq!(output, json!({"n": 1, "a": {"a": 1}}));
    let mut events = Vec::new();
    let mut next: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = sfn
            .get_execution_history()
            .execution_arn(&ex)
            .max_results(2)
            .set_next_token(next.clone())
            .send()
            .await
            .expect("GetExecutionHistory");
        pages += 1;
        events.extend(page.events().iter().map(|e| (e.id(), e.r#type().as_str().to_owned())));
        next = page.next_token().map(str::to_owned);
        if next.is_none() {
            break;
        }
    }
    let kinds: Vec<&str> = events.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"ExecutionStarted"));
    assert_eq!(kinds.last(), Some(&"ExecutionSucceeded"));
    assert_eq!(events.iter().map(|(id, _)| *id).collect::<Vec<_>>(), (1..=events.len() as i64).collect::<Vec<_>>());
    assert_eq!(pages, events.len().div_ceil(2), "{kinds:?}");

    // A callback answered by task token.
    let callback = json!({"StartAt": "Ask", "States": {"Ask": {"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": "q", "MessageBody": {"token.$": "$$.Task.Token"}}, "End": true}}});
    let cb = sfn
        .create_state_machine()
        .name("SdkCallback")
        .definition(callback.to_string())
        .role_arn(ROLE)
        .send()
        .await
        .expect("CreateStateMachine")
        .state_machine_arn()
        .to_owned();
    let ex = sfn.start_execution().state_machine_arn(&cb).name("cb").send().await.unwrap().execution_arn().to_owned();
    let token = wait_file(&tokens.join("SdkCallback:cb")).await;
    sfn.send_task_success().task_token(&token).output(r#"{"approved": true}"#).send().await.expect("SendTaskSuccess");
    let d = finished(sfn, &ex).await;
    assert_eq!(d.status(), &ExecutionStatus::Succeeded);
    assert_eq!(serde_json::from_str::<Value>(d.output().unwrap()).unwrap(), json!({"approved": true}));
    let err = sfn.send_task_success().task_token("garbage").output("{}").send().await.unwrap_err();
    assert!(err.into_service_error().is_invalid_token());

    // An activity worker.
    let act = sfn.create_activity().name("SdkWork").send().await.expect("CreateActivity").activity_arn().to_owned();
    let work = json!({"StartAt": "W", "States": {"W": {"Type": "Task", "Resource": act, "End": true}}});
    let wm = sfn
        .create_state_machine()
        .name("SdkActivity")
        .definition(work.to_string())
        .role_arn(ROLE)
        .send()
        .await
        .unwrap()
        .state_machine_arn()
        .to_owned();
    let ex = sfn.start_execution().state_machine_arn(&wm).input(r#"{"item": 7}"#).send().await.unwrap();
    let ex = ex.execution_arn().to_owned();
    let task = sfn.get_activity_task().activity_arn(&act).worker_name("sdk").send().await.expect("GetActivityTask");
    assert_eq!(serde_json::from_str::<Value>(task.input().unwrap()).unwrap(), json!({"item": 7}));
    sfn.send_task_success()
        .task_token(task.task_token().unwrap())
        .output(r#"{"done": 7}"#)
        .send()
        .await
        .expect("SendTaskSuccess");
    assert_eq!(serde_json::from_str::<Value>(finished(sfn, &ex).await.output().unwrap()).unwrap(), json!({"done": 7}));

    // A stop, and the listings.
    let wait = json!({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 600, "End": true}}});
    let wt = sfn
        .create_state_machine()
        .name("SdkWait")
        .definition(wait.to_string())
        .role_arn(ROLE)
        .send()
        .await
        .unwrap()
        .state_machine_arn()
        .to_owned();
    let ex = sfn.start_execution().state_machine_arn(&wt).name("w").send().await.unwrap().execution_arn().to_owned();
    sfn.stop_execution().execution_arn(&ex).error("Sdk.Stop").cause("enough").send().await.expect("StopExecution");
    let d = sfn.describe_execution().execution_arn(&ex).send().await.unwrap();
    assert_eq!((d.status(), d.error()), (&ExecutionStatus::Aborted, Some("Sdk.Stop")));
    let listed = sfn
        .list_executions()
        .state_machine_arn(&wt)
        .status_filter(ExecutionStatus::Aborted)
        .send()
        .await
        .expect("ListExecutions");
    assert_eq!(listed.executions().iter().map(|e| e.name()).collect::<Vec<_>>(), ["w"]);
    let machines = sfn.list_state_machines().send().await.expect("ListStateMachines");
    let names: Vec<&str> = machines.state_machines().iter().map(|m| m.name()).collect();
    for name in ["Sdk", "SdkCallback", "SdkActivity", "SdkWait"] {
        assert!(names.contains(&name), "{names:?}");
    }

    // A broken definition: located diagnostics, and InvalidDefinition on create.
    let broken = "{\n  \"StartAt\": \"First\",\n  \"States\": {\n    \"First\": {\"Type\": \"Pass\", \"Next\": \"Missing\"}\n  }\n}";
    let v = sfn.validate_state_machine_definition().definition(broken).send().await.expect("Validate");
    assert_eq!(v.result(), &ValidateStateMachineDefinitionResultCode::Fail);
    let diag = &v.diagnostics()[0];
    assert_eq!(diag.location(), Some("line 4, column 39"), "{diag:?}");
    assert!(diag.message().contains("Missing"), "{diag:?}");
    let err = sfn.create_state_machine().name("Broken").definition(broken).role_arn(ROLE).send().await.unwrap_err();
    let err = err.into_service_error();
    assert!(err.is_invalid_definition(), "{err:?}");
    assert!(err.to_string().contains("line 4, column 39"), "{err}");

    // StartSyncExecution (EXPRESS), through the unprefixed host.
    let express = sfn
        .create_state_machine()
        .name("SdkExpress")
        .definition(pass.to_string())
        .role_arn(ROLE)
        .r#type(StateMachineType::Express)
        .send()
        .await
        .unwrap()
        .state_machine_arn()
        .to_owned();
    let r = sfn.start_sync_execution().state_machine_arn(&express).input(r#"{"n": 2}"#).send().await.expect("sync");
    assert_eq!(r.status(), &SyncExecutionStatus::Succeeded);
    assert_eq!(serde_json::from_str::<Value>(r.output().unwrap()).unwrap(), json!({"n": 2, "a": {"a": 1}}));
    assert!(r.execution_arn().contains(":express:SdkExpress:"), "{}", r.execution_arn());
}

async fn suite_on(store: &str, dir: &Path) {
    let tokens = dir.join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let handlers = handlers(dir);
    let server = Server::start(store, &["--handlers", handlers.to_str().unwrap()], &[("TOKEN_DIR", &tokens)]);
    suite(&client(&server.endpoint()), &tokens).await;
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_sdk_sfn_drives_serve_on_sqlite() {
    let dir = support::scratch("sdk_sqlite");
    suite_on(&format!("sqlite:{}", dir.join("serve.db").display()), &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_sdk_sfn_drives_serve_on_postgres() {
    let Some(pg) = support::pg::TempPostgres::start("serve_sdk") else { return };
    let dir = support::scratch("sdk_pg");
    suite_on(&pg.url, &dir).await;
}

/// `wfc serve --lambda-endpoint`: the machine's Lambda Tasks invoked through a fake Lambda
/// (support/lambda_fake.rs): a success whose function error at the end a Catch takes, and an
/// unknown function failing the execution with Lambda's error and a cause naming the function
/// and the endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_invokes_lambda_resources_at_the_lambda_endpoint() {
    let fake = support::lambda_fake::LambdaFake::start();
    let dir = support::scratch("sdk_lambda_endpoint");
    let store = format!("sqlite:{}", dir.join("serve.db").display());
    let server = Server::start(
        &store,
        &["--lambda-endpoint", &fake.endpoint],
        &[
            ("AWS_ACCESS_KEY_ID", Path::new("AKIDLAMBDA")),
            ("AWS_SECRET_ACCESS_KEY", Path::new("secret")),
            ("AWS_REGION", Path::new("us-east-1")),
            ("AWS_EC2_METADATA_DISABLED", Path::new("true")),
        ],
    );
    let sfn = client(&server.endpoint());
    let definition =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda/endpoint.asl.json")).unwrap();
    let machine = sfn
        .create_state_machine()
        .name("LambdaEndpoint")
        .definition(definition)
        .role_arn(ROLE)
        .send()
        .await
        .expect("CreateStateMachine")
        .state_machine_arn()
        .to_owned();
    let start = |function: &str| {
        let input = json!({"order": {"id": 7}, "fn": function}).to_string();
        let request = sfn.start_execution().state_machine_arn(&machine).input(input);
        async move { request.send().await.expect("StartExecution").execution_arn().to_owned() }
    };
    let caught = finished(&sfn, &start("fails").await).await;
    assert_eq!(caught.status(), &ExecutionStatus::Succeeded, "{caught:?}");
    let output: Value = serde_json::from_str(caught.output().unwrap()).unwrap();
    assert_eq!(output["invoked"], json!({"payload": {"echoed": {"order": {"id": 7}}}, "status": 200}));
    assert_eq!(output["bare"], json!({"echoed": {"id": 7}}));
    assert_eq!(output["caught"], json!({"Error": "CardDeclined", "Cause": support::lambda_fake::ERROR_DOCUMENT}));

    let unknown = finished(&sfn, &start("nope").await).await;
    assert_eq!(unknown.status(), &ExecutionStatus::Failed, "{unknown:?}");
    assert_eq!(unknown.error(), Some("Lambda.ResourceNotFoundException"));
    let cause = unknown.cause().unwrap();
    assert!(cause.starts_with("Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope"), "{cause}");
    assert!(
        cause.contains(&format!("function 'nope' of Task state 'Last', Lambda endpoint {}", fake.endpoint)),
        "{cause}"
    );
    assert_eq!(fake.seen().len(), 6);
    server.stop();
}
