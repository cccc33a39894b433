//! A fake Lambda `Invoke` endpoint on loopback for `--lambda-endpoint` tests (no AWS, no
//! LocalStack): `POST /2015-03-31/functions/NAME/invocations`, where NAME (or the function part
//! of an ARN) picks the answer: `echo` returns `{"echoed": EVENT}`, `fails` is a function error
//! (`X-Amz-Function-Error: Unhandled` and a Python-style error document), anything else is
//! Lambda's 404 `ResourceNotFoundException`. Each request's function, body and authorization
//! header are kept for the test.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One request the fake saw.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// The function as the path named it (URL-decoded).
    pub(crate) function: String,
    /// The request body (the event).
    pub(crate) body: String,
    /// The `authorization` header (SigV4).
    pub(crate) authorization: String,
}

/// The fake, serving until the test process ends.
pub(crate) struct LambdaFake {
    /// `http://127.0.0.1:PORT`.
    pub(crate) endpoint: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// The error document of a function error (a Python function's).
pub(crate) const ERROR_DOCUMENT: &str =
    r#"{"errorMessage": "no funds", "errorType": "CardDeclined", "requestId": "r-1", "stackTrace": []}"#;

impl LambdaFake {
    pub(crate) fn start() -> LambdaFake {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let kept = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || {
                    if let Some(request) = read_request(&mut stream) {
                        let answer = answer(&request);
                        kept.lock().unwrap().push(request);
                        let _ = stream.write_all(answer.as_bytes());
                    }
                });
            }
        });
        LambdaFake { endpoint, seen }
    }

    /// The requests so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads one HTTP/1.1 request (head, then Content-Length bytes of body).
fn read_request(stream: &mut std::net::TcpStream) -> Option<Seen> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let (head, body) = loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).into_owned();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if rest.len() >= len {
                break (head.to_owned(), rest[..len].to_owned());
            }
        }
    };
    let path = head.lines().next()?.split(' ').nth(1)?.to_owned();
    let function = path.strip_prefix("/2015-03-31/functions/")?.strip_suffix("/invocations")?;
    let function = function.replace("%3A", ":").replace("%3a", ":");
    let authorization = head
        .lines()
        .find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_default();
    Some(Seen { function, body, authorization })
}

fn answer(request: &Seen) -> String {
    let name = request.function.rsplit(':').next().unwrap_or_default();
    let (status, extra, body) = match name {
        "echo" => {
            ("200 OK", "X-Amz-Executed-Version: $LATEST\r\n".to_owned(), format!(r#"{{"echoed":{}}}"#, request.body))
        }
        "fails" => ("200 OK", "X-Amz-Function-Error: Unhandled\r\n".to_owned(), ERROR_DOCUMENT.to_owned()),
        _ => (
            "404 Not Found",
            "X-Amzn-ErrorType: ResourceNotFoundException\r\n".to_owned(),
            format!(
                r#"{{"Type":"User","Message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:{name}"}}"#
            ),
        ),
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nX-Amzn-RequestId: req-1\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
