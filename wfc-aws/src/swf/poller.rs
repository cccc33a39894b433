//! A long-polling Amazon SWF decider (feature `swf-poller`): it polls `PollForDecisionTask`
//! (every `nextPageToken` page, so the pure decider sees the whole history), answers each task
//! with [`swf::decide_with`](super::decide_with), and sends the answer with
//! `RespondDecisionTaskCompleted`, until its shutdown future resolves (the task in hand is
//! answered first).
//!
//! Calls go through **aws-sdk-swf** with **aws-config**'s credential and region chain (the
//! environment, the shared config and credentials files with role, SSO and `credential_process`
//! profiles, web identity, container and instance credentials), SigV4-signed, over rustls; the
//! SDK's standard retry policy retries throttling, 5xx answers and network errors with
//! exponential back-off; any other refusal is an error naming the operation.
//!
//! The decider is a pure function over SWF's JSON documents (the `awsJson1.0` wire format, the
//! same documents `aws swf poll-for-decision-task` prints and `wfc swf decide` reads and
//! writes), so the poller hands it each page exactly as SWF sent it and sends its decisions as
//! it wrote them: an interceptor ([`WireJson`]) keeps the response body the SDK read and puts
//! the decider's JSON in the request body before it is signed. The SDK's typed shapes would be
//! a second, lossy mapping of 55 event attribute and 13 decision shapes (an event field the SDK
//! version does not know, or moto's `TimerCancelled`, would be dropped on the way).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_swf::config::http::HttpResponse;
use aws_sdk_swf::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextMut, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_swf::config::{ConfigBag, Credentials, Intercept, ProvideCredentials, Region, RuntimeComponents};
use aws_sdk_swf::error::{BoxError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_types::body::SdkBody;
use serde_json::{Value, json};

use super::{SwfConfig, SwfError, decide_with};
use wfc_runtime::{ExecutionResult, RunOptions};

/// The longest SWF holds a poll open (60 s), plus a margin: an attempt taking longer is a
/// network failure.
const CALL_TIMEOUT: Duration = Duration::from_secs(70);

/// Why the poller stopped, or a call failed.
#[derive(Debug, thiserror::Error)]
pub enum PollerError {
    /// aws-config's chain found no credentials, or the source it found failed (a profile that
    /// does not parse or does not exist, an SSO token that expired, a role that cannot be
    /// assumed): the chain's own message.
    #[error(
        "no AWS credentials: {0}. Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or name a profile of ~/.aws/config or ~/.aws/credentials (AWS_PROFILE or --profile); role, SSO and credential_process profiles work"
    )]
    Credentials(String),
    /// No region from the arguments, the environment or the profile.
    #[error("no AWS region: pass --region, set AWS_REGION, or set `region` in the profile")]
    MissingRegion,
    /// The endpoint is not an `http://` or `https://` URL.
    #[error("invalid SWF endpoint {endpoint:?}: {reason}")]
    BadEndpoint {
        /// The endpoint given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// SWF refused the call (not a throttling or server error, which are retried).
    #[error("SWF {operation} failed with HTTP {status}: {error_type}: {message}")]
    Service {
        /// The SWF operation, e.g. `PollForDecisionTask`.
        operation: String,
        /// The HTTP status.
        status: u16,
        /// The error's code (e.g. `UnknownResourceFault`), without its namespace.
        error_type: String,
        /// The error's message.
        message: String,
    },
    /// The call did not get an answer, or only throttling and server errors, after every retry.
    #[error("SWF {operation} failed after {attempts} attempts: {message}")]
    Transport {
        /// The SWF operation.
        operation: String,
        /// How many times it was tried.
        attempts: u32,
        /// The last error.
        message: String,
    },
    /// SWF answered with something that is not a JSON object.
    #[error("SWF {operation} answered with an invalid body: {message}")]
    BadResponse {
        /// The SWF operation.
        operation: String,
        /// What is wrong with it.
        message: String,
    },
    /// The TLS setup (`AWS_CA_BUNDLE`) is invalid.
    #[error("{0}")]
    Tls(String),
}

/// How failed calls are retried (the SDK's standard retry policy): `attempts` tries in all,
/// waiting up to `base · 2ⁿ` (at most `max`, with jitter) between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries per call, the first included.
    pub attempts: u32,
    /// The first back-off.
    pub base: Duration,
    /// The longest back-off.
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy { attempts: 8, base: Duration::from_millis(200), max: Duration::from_secs(20) }
    }
}

/// Where the client's settings come from; each `None` falls back to aws-config's chain.
#[derive(Debug, Clone, Default)]
pub struct AwsSettings {
    /// The profile of the shared files (`--profile`; else `AWS_PROFILE`, else `default`).
    pub profile: Option<String>,
    /// The region (`--region`; else `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's).
    pub region: Option<String>,
    /// The SWF endpoint (`--endpoint`; else `AWS_ENDPOINT_URL_SWF`, `AWS_ENDPOINT_URL`, or
    /// `https://swf.REGION.amazonaws.com`); `http://127.0.0.1:PORT` for a local emulator.
    pub endpoint: Option<String>,
    /// Static credentials in place of the chain (tests).
    pub credentials: Option<Credentials>,
    /// How failed calls are retried.
    pub retry: RetryPolicy,
}

/// Checks an endpoint override: `http://` or `https://`, a host, nothing after it but `/`.
fn check_endpoint(endpoint: &str) -> Result<String, PollerError> {
    let bad = |reason: &str| PollerError::BadEndpoint { endpoint: endpoint.to_owned(), reason: reason.to_owned() };
    let uri: http::Uri = endpoint.parse().map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
    let scheme = uri.scheme_str().ok_or_else(|| bad("it has no scheme (http:// or https://)"))?;
    if scheme != "http" && scheme != "https" {
        return Err(bad("the scheme must be http or https"));
    }
    let authority = uri.authority().ok_or_else(|| bad("it has no host"))?;
    if uri.path() != "/" && !uri.path().is_empty() {
        return Err(bad("SWF is served at the root path: give only scheme, host and port"));
    }
    Ok(format!("{scheme}://{authority}"))
}

/// The SWF client: aws-sdk-swf on aws-config's chain, with the wire JSON passed through.
#[derive(Debug, Clone)]
pub struct SwfClient {
    client: aws_sdk_swf::Client,
    /// Where calls go, for messages.
    endpoint: String,
    /// Where the credentials came from, for the log (the provider's name).
    credentials_source: String,
}

impl SwfClient {
    /// A client from `settings` and aws-config's chain. The credentials are resolved here, so a
    /// missing or broken profile is an error before the first poll.
    pub async fn new(settings: &AwsSettings) -> Result<SwfClient, PollerError> {
        let endpoint = settings.endpoint.as_deref().map(check_endpoint).transpose()?;
        // rustls on ring, trusting the platform's roots and AWS_CA_BUNDLE's certificates.
        let http = crate::aws_http::https_client().map_err(PollerError::Tls)?;
        let retry = settings.retry;
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .http_client(http)
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(retry.attempts.max(1))
                    .with_initial_backoff(retry.base)
                    .with_max_backoff(retry.max),
            )
            .timeout_config(TimeoutConfig::builder().operation_attempt_timeout(CALL_TIMEOUT).build());
        if let Some(profile) = &settings.profile {
            loader = loader.profile_name(profile);
        }
        if let Some(region) = &settings.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(endpoint) = &endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        if let Some(credentials) = &settings.credentials {
            loader = loader.credentials_provider(credentials.clone());
        }
        let config = loader.load().await;
        let region = config.region().ok_or(PollerError::MissingRegion)?.to_string();
        let provider = config
            .credentials_provider()
            .ok_or_else(|| PollerError::Credentials("no credentials provider".to_owned()))?;
        let credentials =
            provider.provide_credentials().await.map_err(|e| PollerError::Credentials(error_chain(&e)))?;
        let client = aws_sdk_swf::Client::new(&config);
        // For the log: the override, else the environment's or the profile's, else AWS's.
        let endpoint = endpoint
            .or_else(|| std::env::var("AWS_ENDPOINT_URL_SWF").ok().filter(|v| !v.is_empty()))
            .or_else(|| config.endpoint_url().map(str::to_owned))
            .unwrap_or_else(|| format!("https://swf.{region}.amazonaws.com"));
        // The provider's name is in the credentials' Debug output only.
        let credentials_source = format!("{credentials:?}")
            .split("provider_name: \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("aws-config's chain")
            .to_owned();
        Ok(SwfClient { client, endpoint, credentials_source })
    }

    /// Where calls go (the endpoint override, else AWS's endpoint of the region).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Where the credentials came from (the credential provider's name, e.g. `Environment`,
    /// `ProfileFile`, `SSO`).
    pub fn credentials_source(&self) -> &str {
        &self.credentials_source
    }

    /// The SDK's client, for other SWF calls.
    pub fn sdk(&self) -> &aws_sdk_swf::Client {
        &self.client
    }

    /// `PollForDecisionTask` with `request` (its JSON body); the answer as SWF sent it.
    pub async fn poll_for_decision_task(&self, request: &Value) -> Result<Value, PollerError> {
        let wire = WireJson::new(request);
        let result = self.client.poll_for_decision_task().customize().interceptor(wire.clone()).send().await;
        wire.answer("PollForDecisionTask", result.map(drop))
    }

    /// `RespondDecisionTaskCompleted` with `response` (the decider's answer: `taskToken`,
    /// `decisions`).
    pub async fn respond_decision_task_completed(&self, response: &Value) -> Result<Value, PollerError> {
        let wire = WireJson::new(response);
        let result = self.client.respond_decision_task_completed().customize().interceptor(wire.clone()).send().await;
        wire.answer("RespondDecisionTaskCompleted", result.map(drop))
    }
}

/// One call's wire JSON: the request body put in place of the SDK's serialization of its (empty)
/// input before signing, each attempt counted, and the response body kept after the SDK read it.
#[derive(Debug, Clone)]
struct WireJson {
    request: Arc<str>,
    attempts: Arc<Mutex<u32>>,
    response: Arc<Mutex<Option<Vec<u8>>>>,
}

impl WireJson {
    fn new(request: &Value) -> WireJson {
        WireJson { request: request.to_string().into(), attempts: Arc::default(), response: Arc::default() }
    }

    fn attempts(&self) -> u32 {
        *self.attempts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The call's outcome: the response body as a JSON object, or the error.
    fn answer<E>(&self, operation: &str, result: Result<(), SdkError<E, HttpResponse>>) -> Result<Value, PollerError>
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let bad = |message: String| PollerError::BadResponse { operation: operation.to_owned(), message };
        let attempts = self.attempts().max(1);
        match result {
            Ok(()) => {
                let body = self.response.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
                let text = String::from_utf8_lossy(&body);
                if text.trim().is_empty() {
                    return Ok(json!({}));
                }
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) if v.is_object() => Ok(v),
                    _ => Err(bad(format!("expected a JSON object, got {:?}", truncate_chars(&text, 200)))),
                }
            }
            Err(SdkError::ServiceError(e)) if e.raw().status().is_success() => {
                // A 2xx answer whose body the SDK could not read as the operation's output.
                let body = String::from_utf8_lossy(e.raw().body().bytes().unwrap_or_default()).into_owned();
                Err(bad(format!("expected a JSON object, got {:?}", truncate_chars(&body, 200))))
            }
            Err(SdkError::ServiceError(e)) => {
                let status = e.raw().status().as_u16();
                let error = e.err();
                let error_type = error.code().unwrap_or_default().to_owned();
                let message = error.message().map(str::to_owned).unwrap_or_else(|| {
                    truncate_chars(&String::from_utf8_lossy(e.raw().body().bytes().unwrap_or_default()), 200)
                });
                let transient = status >= 500 || status == 429 || error_type.contains("Throttl");
                if transient {
                    let message = format!("HTTP {status} {error_type}: {message}");
                    Err(PollerError::Transport { operation: operation.to_owned(), attempts, message })
                } else {
                    Err(PollerError::Service { operation: operation.to_owned(), status, error_type, message })
                }
            }
            // A 2xx answer the SDK could not read.
            Err(e @ SdkError::ResponseError(_)) => Err(bad(DisplayErrorContext(&e).to_string())),
            Err(e) => Err(PollerError::Transport {
                operation: operation.to_owned(),
                attempts,
                message: DisplayErrorContext(&e).to_string(),
            }),
        }
    }
}

impl Intercept for WireJson {
    fn name(&self) -> &'static str {
        "WireJson"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        *self.attempts.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        Ok(())
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        *request.body_mut() = SdkBody::from(self.request.as_bytes().to_vec());
        request.headers_mut().insert("content-length", self.request.len().to_string());
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let body = context.response().body().bytes().map(<[u8]>::to_vec);
        *self.response.lock().unwrap_or_else(|e| e.into_inner()) = body;
        Ok(())
    }
}

/// An error and its sources, `: `-separated (aws-config's own errors say little at the top).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

fn truncate_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Where the poller polls and how it decides.
#[derive(Debug, Clone)]
pub struct PollerOptions {
    /// The SWF domain.
    pub domain: String,
    /// The decision task list.
    pub task_list: String,
    /// The poller's identity, recorded in `DecisionTaskStarted` events.
    pub identity: String,
    /// History events per page (`maximumPageSize`, at most 1,000).
    pub page_size: u32,
    /// How the decider maps Tasks to decisions.
    pub decider: SwfConfig,
    /// After an empty poll that came back sooner than this (a service that does not hold polls
    /// open, such as a local emulator), wait this long before the next poll.
    pub empty_poll_pause: Duration,
}

impl PollerOptions {
    /// Options for `domain` and `task_list` with the defaults.
    pub fn new(domain: impl Into<String>, task_list: impl Into<String>) -> PollerOptions {
        PollerOptions {
            domain: domain.into(),
            task_list: task_list.into(),
            identity: format!("wfc-decider-{}", std::process::id()),
            page_size: 1000,
            decider: SwfConfig::default(),
            empty_poll_pause: Duration::from_millis(500),
        }
    }
}

/// What a poller did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollerStats {
    /// Decision tasks answered.
    pub answered: u64,
    /// Decision tasks the decider could not answer (left to time out; SWF schedules them again).
    pub failed: u64,
    /// Answers SWF refused (the task had timed out, the execution had closed).
    pub refused: u64,
}

/// Polls for decision tasks and answers them until `shutdown` resolves, with any engine: `run`
/// starts the workflow on an input with the given options (`interp::run`, or a generated
/// module's `run_with`), as in [`decide_with`]. A decision task in hand when `shutdown`
/// resolves is answered first; an outstanding poll is dropped (a task SWF hands to it times out
/// and is scheduled again, which is safe: the decider is stateless).
///
/// Returns an error when a poll fails for good (bad credentials, an unknown domain, the network
/// down past every retry). A task the decider cannot answer ([`SwfError`]) and an answer SWF
/// refuses are logged and counted, and polling goes on.
pub async fn run_decider<R, Fut, S>(
    client: &SwfClient,
    options: &PollerOptions,
    workflow_name: &str,
    run: R,
    shutdown: S,
) -> Result<PollerStats, PollerError>
where
    R: Fn(Value, RunOptions) -> Fut + Sync,
    Fut: Future<Output = ExecutionResult>,
    S: Future<Output = ()>,
{
    let mut stats = PollerStats::default();
    tokio::pin!(shutdown);
    loop {
        let polled = Instant::now();
        let pages = tokio::select! {
            biased;
            () = &mut shutdown => return Ok(stats),
            pages = poll_decision_task(client, options) => pages?,
        };
        let Some(pages) = pages else {
            if polled.elapsed() < options.empty_poll_pause {
                tokio::select! {
                    biased;
                    () = &mut shutdown => return Ok(stats),
                    () = tokio::time::sleep(options.empty_poll_pause) => {}
                }
            }
            continue;
        };
        // From here the task is answered even if shutdown is asked meanwhile.
        let task = Value::Array(pages);
        match decide_paused(&task, &options.decider, workflow_name, &run) {
            Ok(response) => {
                let decisions = response["decisions"].as_array().map_or(0, Vec::len);
                match client.respond_decision_task_completed(&response).await {
                    Ok(_) => {
                        stats.answered += 1;
                        tracing::info!(decisions, workflow_id = workflow_id_of(&task), "answered a decision task");
                    }
                    Err(e @ (PollerError::Service { .. } | PollerError::Transport { .. })) => {
                        stats.refused += 1;
                        tracing::warn!("{e}");
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => {
                stats.failed += 1;
                log_decider_error(&task, &e);
            }
        }
    }
}

/// One decision on a paused-time runtime of its own (on a scoped thread, since the caller's
/// runtime is running): the same history gives the same decisions however long the replay
/// takes. The poller has nothing else to do meanwhile.
fn decide_paused<R, Fut>(task: &Value, config: &SwfConfig, workflow_name: &str, run: &R) -> Result<Value, SwfError>
where
    R: Fn(Value, RunOptions) -> Fut + Sync,
    Fut: Future<Output = ExecutionResult>,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .map_err(|e| SwfError::Replay(format!("cannot start the decider's runtime: {e}")))?;
                runtime.block_on(decide_with(task, config, workflow_name, run))
            })
            .join()
            .unwrap_or_else(|_| Err(SwfError::Replay("the decider panicked".into())))
    })
}

fn workflow_id_of(task: &Value) -> &str {
    task.pointer("/0/workflowExecution/workflowId").and_then(Value::as_str).unwrap_or("?")
}

fn log_decider_error(task: &Value, e: &SwfError) {
    tracing::error!(
        workflow_id = workflow_id_of(task),
        "cannot decide (the task is left to time out and SWF will schedule it again): {e}"
    );
}

/// One decision task, every page of its history; `None` when the poll came back empty.
pub async fn poll_decision_task(
    client: &SwfClient,
    options: &PollerOptions,
) -> Result<Option<Vec<Value>>, PollerError> {
    let mut pages = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let mut request = json!({
            "domain": options.domain,
            "taskList": { "name": options.task_list },
            "identity": options.identity,
            "maximumPageSize": options.page_size.clamp(1, 1000),
        });
        if let Some(token) = &next {
            request["nextPageToken"] = json!(token);
        }
        let page = client.poll_for_decision_task(&request).await?;
        if pages.is_empty() && page.get("taskToken").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Ok(None);
        }
        next = page.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
        pages.push(page);
        if next.is_none() {
            return Ok(Some(pages));
        }
    }
}

/// [`run_decider`] on the interpreter.
pub async fn run_interpreted_decider<S>(
    client: &SwfClient,
    options: &PollerOptions,
    workflow: &wfc_ir::Workflow,
    shutdown: S,
) -> Result<PollerStats, PollerError>
where
    S: Future<Output = ()>,
{
    let handlers = wfc_runtime::Handlers::new();
    run_decider(
        client,
        options,
        &workflow.name,
        |input, run_options| wfc_interp::run(workflow, &handlers, input, run_options),
        shutdown,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked() {
        for (endpoint, problem) in [
            ("swf.us-east-1.amazonaws.com", "no scheme"),
            ("ftp://example.com", "http or https"),
            ("http://127.0.0.1:5000/swf", "root path"),
        ] {
            let e = check_endpoint(endpoint).unwrap_err().to_string();
            assert!(e.contains(problem), "{endpoint}: {e}");
        }
        assert_eq!(check_endpoint("http://127.0.0.1:5000/").unwrap(), "http://127.0.0.1:5000");
        assert_eq!(
            check_endpoint("https://swf.eu-west-1.amazonaws.com").unwrap(),
            "https://swf.eu-west-1.amazonaws.com"
        );
    }

    /// A one-thread HTTP server on loopback answering each request with the next canned
    /// `(status, body)`; it returns the port and, when done, the requests it saw (head + body).
    fn canned_server(answers: Vec<(u16, &'static str)>) -> (u16, std::thread::JoinHandle<Vec<String>>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for (status, body) in answers {
                let (mut stream, _) = listener.accept().unwrap();
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                // Read the head, then Content-Length bytes of body.
                loop {
                    let n = stream.read(&mut buf).unwrap();
                    raw.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&raw).to_string();
                    if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                            })
                            .and_then(|v| v.parse::<usize>().ok())
                            .unwrap_or(0);
                        if rest.len() >= len {
                            break;
                        }
                    }
                    if n == 0 {
                        break;
                    }
                }
                seen.push(String::from_utf8_lossy(&raw).to_string());
                write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
            }
            seen
        });
        (port, handle)
    }

    fn fast_client(runtime: &tokio::runtime::Runtime, port: u16) -> SwfClient {
        let settings = AwsSettings {
            region: Some("us-east-1".into()),
            endpoint: Some(format!("http://127.0.0.1:{port}")),
            credentials: Some(Credentials::new(
                "AKIDEXAMPLE",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                None,
                None,
                "test",
            )),
            retry: RetryPolicy { attempts: 4, base: Duration::from_millis(1), max: Duration::from_millis(5) },
            ..AwsSettings::default()
        };
        runtime.block_on(SwfClient::new(&settings)).unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    #[test]
    fn throttling_and_server_errors_are_retried_and_the_wire_json_is_signed_and_passed_through() {
        let (port, server) = canned_server(vec![
            (400, r#"{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate exceeded"}"#),
            (503, "Service Unavailable"),
            (200, r#"{"taskToken":"tok","events":[{"eventId":1,"eventType":"TimerCancelled","x":{"y":1}}]}"#),
        ]);
        let runtime = runtime();
        let client = fast_client(&runtime, port);
        assert_eq!(client.credentials_source(), "test");
        let answer = runtime.block_on(client.poll_for_decision_task(&json!({ "domain": "d" }))).unwrap();
        // Exactly what was sent, with what the SDK's shapes do not know (moto's event name, `x`).
        assert_eq!(
            answer,
            json!({"taskToken":"tok","events":[{"eventId":1,"eventType":"TimerCancelled","x":{"y":1}}]})
        );
        let seen = server.join().unwrap();
        assert_eq!(seen.len(), 3);
        let last = seen[2].to_ascii_lowercase();
        assert!(last.starts_with("post / http/1.1"), "{last}");
        assert!(last.contains("x-amz-target: simpleworkflowservice.pollfordecisiontask"), "{last}");
        assert!(last.contains(&format!("host: 127.0.0.1:{port}")), "{last}");
        assert!(last.contains("content-length: 14\r\n"), "{last}");
        assert!(
            last.contains("authorization: aws4-hmac-sha256 credential=akidexample/")
                && last.contains("/us-east-1/swf/aws4_request, signedheaders=")
                && last.contains("x-amz-target"),
            "{last}"
        );
        assert!(last.ends_with(r#"{"domain":"d"}"#), "{last}");
    }

    #[test]
    fn a_refusal_is_an_error_naming_the_operation_and_retries_run_out() {
        let runtime = runtime();
        let (port, server) = canned_server(vec![(
            400,
            r#"{"__type":"com.amazonaws.swf.base.model#UnknownResourceFault","message":"Unknown domain: nope"}"#,
        )]);
        let e = runtime.block_on(fast_client(&runtime, port).poll_for_decision_task(&json!({}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "SWF PollForDecisionTask failed with HTTP 400: UnknownResourceFault: Unknown domain: nope"
        );
        assert_eq!(server.join().unwrap().len(), 1, "a refusal is not retried");

        // 5xx every time: the attempts run out, and the error says so.
        let (port, server) = canned_server(vec![(500, "{}"); 4]);
        let e = runtime.block_on(fast_client(&runtime, port).respond_decision_task_completed(&json!({}))).unwrap_err();
        assert!(e.to_string().starts_with("SWF RespondDecisionTaskCompleted failed after 4 attempts: HTTP 500"), "{e}");
        let seen = server.join().unwrap();
        assert_eq!(seen.len(), 4);
        assert!(seen[0].contains("SimpleWorkflowService.RespondDecisionTaskCompleted"), "{}", seen[0]);

        // Nothing listening: network errors are retried, then reported.
        let port = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port();
        let e = runtime.block_on(fast_client(&runtime, port).poll_for_decision_task(&json!({}))).unwrap_err();
        assert!(e.to_string().starts_with("SWF PollForDecisionTask failed after 4 attempts: "), "{e}");

        // A 200 that is not a JSON object.
        let (port, server) = canned_server(vec![(200, "<html>")]);
        let e = runtime.block_on(fast_client(&runtime, port).poll_for_decision_task(&json!({}))).unwrap_err();
        assert!(e.to_string().contains("PollForDecisionTask answered with an invalid body"), "{e}");
        server.join().unwrap();
    }
}
