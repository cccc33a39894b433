//! The AWS JSON 1.0 protocol over HTTP/1.1 (hyper): `POST /` with
//! `X-Amz-Target: AWSStepFunctions.<Operation>` and a JSON object body; answers are
//! `application/x-amz-json-1.0` with an `x-amzn-RequestId`. Every failure is an AWS error body
//! ([`ApiError`]); a body over the limit is refused while it is read (HTTP 413), and an
//! operation that panics is answered with a 500 instead of dropping the connection.

use std::convert::Infallible;
use std::sync::Arc;

use futures::FutureExt;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use serde_json::{Map, Value};

use crate::api::Service;
use crate::error::ApiError;
use crate::sigv4::Verifier;

/// The content type of the protocol.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

const TARGET_PREFIX: &str = "AWSStepFunctions.";

fn respond(status: u16, body: &Value) -> Response<Full<Bytes>> {
    let text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let request_id = format!("{:032x}", rand::random::<u128>());
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", CONTENT_TYPE)
        .header("x-amzn-requestid", request_id)
        .body(Full::new(Bytes::from(text)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::from_static(b"{}"))))
}

fn error(e: &ApiError) -> Response<Full<Bytes>> {
    respond(e.status, &e.body())
}

/// Reads a whole body, refusing one over `max_body` bytes (HTTP 413).
async fn read_body<B>(body: B, max_body: usize) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(body, max_body).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => {
            let too_large = e.downcast_ref::<http_body_util::LengthLimitError>().is_some();
            Err(if too_large {
                ApiError {
                    status: 413,
                    code: "RequestEntityTooLargeException",
                    message: format!("The request body is larger than {max_body} bytes"),
                }
            } else {
                ApiError::client("SerializationException", format!("The request body could not be read: {e}"))
            })
        }
    }
}

/// Answers one request (verifying its SigV4 signature first when `auth` is set); `GET /ui...`
/// goes to the UI, which has its own access rule (`ui`).
pub async fn handle(
    service: Arc<Service>,
    max_body: usize,
    auth: Option<Arc<Verifier>>,
    ui: Arc<crate::ui::Access>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    // The body is read first: with signing required, it is part of what is signed, and
    // nothing else of the request is looked at before the signature is verified.
    let (parts, incoming) = req.into_parts();
    let body = match read_body(incoming, max_body).await {
        Ok(body) => body,
        Err(e) => return Ok(error(&e)),
    };
    if crate::ui::is_ui(parts.uri.path()) {
        let page = std::panic::AssertUnwindSafe(crate::ui::handle(&service, &ui, &parts)).catch_unwind().await;
        return Ok(page.unwrap_or_else(|_| {
            tracing::error!(path = %parts.uri.path(), "the UI panicked");
            error(&ApiError::internal("the UI failed inside wfc serve (a bug: please report it)"))
        }));
    }
    if let Some(verifier) = auth
        && let Err(e) = verifier.verify(&parts.method, &parts.uri, &parts.headers, &body, std::time::SystemTime::now())
    {
        tracing::info!(error = %e, "request refused");
        return Ok(error(&e));
    }
    let operation = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(|t| t.strip_prefix(TARGET_PREFIX).map(str::to_owned).ok_or_else(|| t.to_owned()));
    if parts.method != Method::POST || parts.uri.path() != "/" {
        let e = ApiError::client(
            "UnknownOperationException",
            format!(
                "{} {} is not an operation: the Step Functions API is POST / with X-Amz-Target",
                parts.method,
                parts.uri.path()
            ),
        );
        return Ok(error(&e));
    }
    let operation = match operation {
        Some(Ok(op)) => op,
        Some(Err(target)) => {
            return Ok(error(&ApiError::client(
                "UnknownOperationException",
                format!("Unknown target '{target}': expected {TARGET_PREFIX}<Operation>"),
            )));
        }
        None => return Ok(error(&ApiError::client("UnknownOperationException", "Missing the X-Amz-Target header"))),
    };
    // An empty body is an empty request, as the SDKs send for operations without members.
    let parsed: Result<Map<String, Value>, ApiError> = if body.iter().all(u8::is_ascii_whitespace) {
        Ok(Map::new())
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(ApiError::client("SerializationException", "The request body must be a JSON object")),
            Err(e) => {
                Err(ApiError::client("SerializationException", format!("The request body is not valid JSON: {e}")))
            }
        }
    };
    let map = match parsed {
        Ok(map) => map,
        Err(e) => return Ok(error(&e)),
    };
    let call = std::panic::AssertUnwindSafe(service.call(&operation, &map)).catch_unwind().await;
    Ok(match call {
        Ok(Ok(value)) => respond(200, &value),
        Ok(Err(e)) => {
            if e.status >= 500 {
                tracing::warn!(operation = %operation, error = %e, "operation failed");
            }
            error(&e)
        }
        Err(_) => {
            tracing::error!(operation = %operation, "operation panicked");
            error(&ApiError::internal(format!("{operation} failed inside wfc serve (a bug: please report it)")))
        }
    })
}
