//! A long-polling Amazon SWF decider (feature `swf-poller`): it polls `PollForDecisionTask`
//! (every `nextPageToken` page, so the pure decider sees the whole history), answers each task
//! with [`swf::decide_with`](super::swf::decide_with), and sends the answer with
//! `RespondDecisionTaskCompleted`, until its shutdown future resolves (the task in hand is
//! answered first).
//!
//! Calls are SWF's JSON protocol (`awsJson1.0`, `X-Amz-Target: SimpleWorkflowService.<Op>`),
//! signed with AWS Signature Version 4 (the `aws-sigv4` crate), over hyper with rustls for
//! `https://` endpoints. Network errors, 5xx answers and throttling are retried with
//! exponential back-off; any other refusal is an error naming the operation.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

pub use super::aws_profile::AwsSettings;
use super::swf::{SwfConfig, SwfError, decide_with};
use crate::{ExecutionResult, RunOptions};

/// The longest SWF holds a poll open (60 s), plus a margin: a call taking longer is a network
/// failure.
const CALL_TIMEOUT: Duration = Duration::from_secs(70);

/// Why the poller stopped, or a call failed.
#[derive(Debug, thiserror::Error)]
pub enum PollerError {
    /// No credentials in the environment (nor, for [`AwsSettings::load`], in the default
    /// profile of the shared files).
    #[error(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or put them in a profile of the shared credentials file (~/.aws/credentials; AWS_PROFILE or --profile names it)"
    )]
    MissingCredentials,
    /// A shared credentials or config file is invalid, or the profile asked for is missing or
    /// has no static keys (the message names the file and line).
    #[error("{0}")]
    Profile(String),
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
        /// The error's `__type` (e.g. `UnknownResourceFault`), without its namespace.
        error_type: String,
        /// The error's message.
        message: String,
    },
    /// The call did not get an answer after every retry.
    #[error("SWF {operation} failed after {attempts} attempts: {message}")]
    Transport {
        /// The SWF operation.
        operation: String,
        /// How many times it was tried.
        attempts: u32,
        /// The last network error.
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
    /// The request could not be signed.
    #[error("cannot sign the SWF {operation} request: {message}")]
    Signing {
        /// The SWF operation.
        operation: String,
        /// The signer's error.
        message: String,
    },
}

/// AWS credentials for SigV4.
#[derive(Clone)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("AwsCredentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

impl AwsCredentials {
    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` only; see
    /// [`AwsSettings::load`] for the SDKs' order (the environment, then the shared files).
    pub fn from_env() -> Result<AwsCredentials, PollerError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => {
                Ok(AwsCredentials { access_key_id, secret_access_key, session_token: var("AWS_SESSION_TOKEN") })
            }
            _ => Err(PollerError::MissingCredentials),
        }
    }
}

/// Signs a request with SigV4 (headers, the body's SHA-256 in the canonical request) and
/// returns the headers to add: `x-amz-date`, `authorization`, and `x-amz-security-token` with
/// temporary credentials. `headers` must hold every header that is sent and signed (`host`
/// included).
#[allow(clippy::too_many_arguments)]
pub fn sign_request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    credentials: &AwsCredentials,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let creds = aws_credential_types::Credentials::new(
        credentials.access_key_id.clone(),
        credentials.secret_access_key.clone(),
        credentials.session_token.clone(),
        None,
        "wfc",
    );
    let identity = aws_smithy_runtime_api::client::identity::Identity::from(creds);
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let request = SignableRequest::new(method, url, headers.iter().copied(), SignableBody::Bytes(body))
        .map_err(|e| e.to_string())?;
    let (instructions, _signature) = sign(request, &params).map_err(|e| e.to_string())?.into_parts();
    Ok(instructions.headers().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
}

/// How failed calls are retried: `attempts` tries in all, waiting `base · 2ⁿ` (at most `max`,
/// with full jitter) between them.
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

impl RetryPolicy {
    fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self.base.saturating_mul(1u32 << retry.min(16)).min(self.max);
        ceiling.mul_f64(0.5 + rand::random::<f64>() / 2.0)
    }
}

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A SigV4-signing client of SWF's JSON API.
#[derive(Clone)]
pub struct SwfClient {
    endpoint: http::Uri,
    host: String,
    region: String,
    credentials: AwsCredentials,
    http: Client<Https, Full<Bytes>>,
    /// How failed calls are retried.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for SwfClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwfClient").field("endpoint", &self.endpoint).field("region", &self.region).finish()
    }
}

impl SwfClient {
    /// A client of the SWF endpoint `endpoint` (`https://swf.REGION.amazonaws.com` for AWS,
    /// `http://127.0.0.1:PORT` for a local emulator) in `region`.
    pub fn new(endpoint: &str, region: &str, credentials: AwsCredentials) -> Result<SwfClient, PollerError> {
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
        let default_port = if scheme == "https" { 443 } else { 80 };
        let host = match authority.port_u16() {
            Some(p) if p != default_port => format!("{}:{p}", authority.host()),
            _ => authority.host().to_owned(),
        };
        let endpoint: http::Uri =
            format!("{scheme}://{host}/").parse().map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let connector =
            hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots().https_or_http().enable_http1().build();
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(SwfClient { endpoint, host, region: region.to_owned(), credentials, http, retry: RetryPolicy::default() })
    }

    /// The default endpoint of `region`.
    pub fn aws_endpoint(region: &str) -> String {
        format!("https://swf.{region}.amazonaws.com")
    }

    /// Calls SWF operation `operation` with `body`; retries network errors, throttling and
    /// server errors.
    pub async fn call(&self, operation: &str, body: &Value) -> Result<Value, PollerError> {
        let payload = body.to_string();
        let mut last = String::new();
        for attempt in 0..self.retry.attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(self.retry.backoff(attempt - 1)).await;
            }
            match self.call_once(operation, &payload).await {
                Ok(value) => return Ok(value),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry(why)) => {
                    tracing::warn!(operation, attempt, "SWF call failed, retrying: {why}");
                    last = why;
                }
            }
        }
        Err(PollerError::Transport {
            operation: operation.to_owned(),
            attempts: self.retry.attempts.max(1),
            message: last,
        })
    }

    async fn call_once(&self, operation: &str, payload: &str) -> Result<Value, Failure> {
        let target = format!("SimpleWorkflowService.{operation}");
        let content_type = "application/x-amz-json-1.0";
        let headers = [("host", self.host.as_str()), ("content-type", content_type), ("x-amz-target", target.as_str())];
        let signed = sign_request(
            "POST",
            &self.endpoint.to_string(),
            &headers,
            payload.as_bytes(),
            &self.credentials,
            &self.region,
            "swf",
            SystemTime::now(),
        )
        .map_err(|message| Failure::Fatal(PollerError::Signing { operation: operation.to_owned(), message }))?;
        let mut request = http::Request::post(self.endpoint.clone());
        for (k, v) in headers.iter().map(|(k, v)| (*k, *v)).chain(signed.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        {
            request = request.header(k, v);
        }
        let request = request.body(Full::new(Bytes::from(payload.to_owned()))).map_err(|e| {
            Failure::Fatal(PollerError::Signing { operation: operation.to_owned(), message: e.to_string() })
        })?;
        let answer = tokio::time::timeout(CALL_TIMEOUT, async {
            let response = self.http.request(request).await.map_err(|e| format!("{e:?}"))?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok::<_, String>((status, body))
        })
        .await;
        let (status, body) = match answer {
            Err(_) => return Err(Failure::Retry(format!("no answer within {} s", CALL_TIMEOUT.as_secs()))),
            Ok(Err(e)) => return Err(Failure::Retry(e)),
            Ok(Ok(x)) => x,
        };
        let text = String::from_utf8_lossy(&body);
        let parsed: Option<Value> =
            if text.trim().is_empty() { Some(json!({})) } else { serde_json::from_str(&text).ok() };
        if (200..300).contains(&status) {
            return match parsed {
                Some(v) if v.is_object() => Ok(v),
                _ => Err(Failure::Fatal(PollerError::BadResponse {
                    operation: operation.to_owned(),
                    message: format!("expected a JSON object, got {:?}", truncate_chars(&text, 200)),
                })),
            };
        }
        let error_type = parsed
            .as_ref()
            .and_then(|v| v.get("__type"))
            .and_then(Value::as_str)
            .map(|t| t.rsplit('#').next().unwrap_or(t).to_owned())
            .unwrap_or_default();
        let message = parsed
            .as_ref()
            .and_then(|v| v.get("message").or_else(|| v.get("Message")))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| truncate_chars(&text, 200));
        let throttled = error_type.contains("Throttl") || status == 429;
        if throttled || status >= 500 {
            return Err(Failure::Retry(format!("HTTP {status} {error_type}: {message}")));
        }
        Err(Failure::Fatal(PollerError::Service { operation: operation.to_owned(), status, error_type, message }))
    }
}

enum Failure {
    Retry(String),
    Fatal(PollerError),
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
                match client.call("RespondDecisionTaskCompleted", &response).await {
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
        let page = client.call("PollForDecisionTask", &request).await?;
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
    let handlers = crate::Handlers::new();
    run_decider(
        client,
        options,
        &workflow.name,
        |input, run_options| crate::interp::run(workflow, &handlers, input, run_options),
        shutdown,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    fn at_2015_08_30() -> SystemTime {
        // 2015-08-30T12:36:00Z, the date of AWS's SigV4 test suite.
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160)
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
        headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).unwrap_or("")
    }

    /// `get-vanilla` from AWS's Signature Version 4 test suite.
    #[test]
    fn signs_the_get_vanilla_vector_of_the_sigv4_test_suite() {
        let headers = sign_request(
            "GET",
            "https://example.amazonaws.com/",
            &[("host", "example.amazonaws.com")],
            b"",
            &example(),
            "us-east-1",
            "service",
            at_2015_08_30(),
        )
        .unwrap();
        assert_eq!(header(&headers, "x-amz-date"), "20150830T123600Z");
        assert_eq!(
            header(&headers, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    /// A PollForDecisionTask request as the poller sends it; the expected signatures were
    /// computed by botocore's `SigV4Auth` (the AWS CLI's signer) for the same request and time.
    #[test]
    fn signs_an_swf_request_as_botocore_does() {
        let body = br#"{"domain":"d","taskList":{"name":"t"}}"#;
        let headers = [
            ("host", "swf.us-east-1.amazonaws.com"),
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", "SimpleWorkflowService.PollForDecisionTask"),
        ];
        let signed = sign_request(
            "POST",
            "https://swf.us-east-1.amazonaws.com/",
            &headers,
            body,
            &example(),
            "us-east-1",
            "swf",
            at_2015_08_30(),
        )
        .unwrap();
        assert_eq!(
            header(&signed, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/swf/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-target, \
             Signature=cca803369c1648df49f87992b1bf2ffd057f97d90d694b332bc721e4d76fb469"
        );
        let temporary = AwsCredentials { session_token: Some("SESSIONTOKEN".into()), ..example() };
        let signed = sign_request(
            "POST",
            "https://swf.us-east-1.amazonaws.com/",
            &headers,
            body,
            &temporary,
            "us-east-1",
            "swf",
            at_2015_08_30(),
        )
        .unwrap();
        assert_eq!(header(&signed, "x-amz-security-token"), "SESSIONTOKEN");
        assert_eq!(
            header(&signed, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/swf/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, \
             Signature=2774de70e8b8af2baf4a8bde4870648392dde42b3c69e4f7a52e40dd09928da8"
        );
    }

    #[test]
    fn endpoints_are_checked() {
        for (endpoint, problem) in [
            ("swf.us-east-1.amazonaws.com", "no scheme"),
            ("ftp://example.com", "http or https"),
            ("http://127.0.0.1:5000/swf", "root path"),
        ] {
            let e = SwfClient::new(endpoint, "us-east-1", example()).unwrap_err().to_string();
            assert!(e.contains(problem), "{endpoint}: {e}");
        }
        let client = SwfClient::new("https://swf.eu-west-1.amazonaws.com:443", "eu-west-1", example()).unwrap();
        assert_eq!(client.host, "swf.eu-west-1.amazonaws.com");
        let client = SwfClient::new("http://127.0.0.1:5000", "us-east-1", example()).unwrap();
        assert_eq!(client.host, "127.0.0.1:5000");
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

    fn fast_client(port: u16) -> SwfClient {
        let mut client = SwfClient::new(&format!("http://127.0.0.1:{port}"), "us-east-1", example()).unwrap();
        client.retry = RetryPolicy { attempts: 4, base: Duration::from_millis(1), max: Duration::from_millis(5) };
        client
    }

    #[test]
    fn throttling_and_server_errors_are_retried_and_requests_are_signed() {
        let (port, server) = canned_server(vec![
            (400, r#"{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate exceeded"}"#),
            (503, "Service Unavailable"),
            (200, r#"{"taskToken":"tok","events":[]}"#),
        ]);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let answer =
            runtime.block_on(fast_client(port).call("PollForDecisionTask", &json!({ "domain": "d" }))).unwrap();
        assert_eq!(answer["taskToken"], "tok");
        let seen = server.join().unwrap();
        assert_eq!(seen.len(), 3);
        let last = seen[2].to_ascii_lowercase();
        assert!(last.starts_with("post / http/1.1"), "{last}");
        assert!(last.contains("x-amz-target: simpleworkflowservice.pollfordecisiontask"), "{last}");
        assert!(last.contains(&format!("host: 127.0.0.1:{port}")), "{last}");
        assert!(
            last.contains("authorization: aws4-hmac-sha256 credential=akidexample/")
                && last.contains(
                    "/us-east-1/swf/aws4_request, signedheaders=content-type;host;x-amz-date;x-amz-target, signature="
                ),
            "{last}"
        );
        assert!(last.ends_with(r#"{"domain":"d"}"#), "{last}");
    }

    #[test]
    fn a_refusal_is_an_error_naming_the_operation_and_retries_run_out() {
        let (port, server) = canned_server(vec![(
            400,
            r#"{"__type":"com.amazonaws.swf.base.model#UnknownResourceFault","message":"Unknown domain: nope"}"#,
        )]);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let e = runtime.block_on(fast_client(port).call("PollForDecisionTask", &json!({}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "SWF PollForDecisionTask failed with HTTP 400: UnknownResourceFault: Unknown domain: nope"
        );
        assert_eq!(server.join().unwrap().len(), 1, "a refusal is not retried");

        // 5xx every time: the attempts run out, and the error says so.
        let (port, server) = canned_server(vec![(500, "{}"); 4]);
        let e = runtime.block_on(fast_client(port).call("RespondDecisionTaskCompleted", &json!({}))).unwrap_err();
        assert!(e.to_string().starts_with("SWF RespondDecisionTaskCompleted failed after 4 attempts: HTTP 500"), "{e}");
        assert_eq!(server.join().unwrap().len(), 4);

        // Nothing listening: network errors are retried, then reported.
        let port = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port();
        let e = runtime.block_on(fast_client(port).call("PollForDecisionTask", &json!({}))).unwrap_err();
        assert!(e.to_string().starts_with("SWF PollForDecisionTask failed after 4 attempts: "), "{e}");

        // A 200 that is not a JSON object.
        let (port, server) = canned_server(vec![(200, "<html>")]);
        let e = runtime.block_on(fast_client(port).call("PollForDecisionTask", &json!({}))).unwrap_err();
        assert!(e.to_string().contains("PollForDecisionTask answered with an invalid body"), "{e}");
        server.join().unwrap();
    }

    #[test]
    fn back_off_grows_and_is_capped() {
        let policy = RetryPolicy::default();
        assert!(policy.backoff(0) <= Duration::from_millis(200));
        assert!(policy.backoff(0) >= Duration::from_millis(100));
        assert!(policy.backoff(30) <= Duration::from_secs(20));
        assert!(policy.backoff(30) >= Duration::from_secs(10));
    }
}
