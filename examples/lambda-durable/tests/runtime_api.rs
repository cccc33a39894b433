//! The example binary under a Lambda Runtime API emulator served by this test on loopback, with
//! AWS's local durable execution service, `dex-local-runner`, as the durable execution API.
//!
//! dex-local-runner invokes the function through the Lambda `Invoke` API at this test's
//! address; the test hands each event to the binary on `GET /2018-06-01/runtime/invocation/next`
//! and returns the binary's `POST .../response` as the Invoke answer: the path Lambda itself
//! takes. The approval is sent through dex-local-runner's callback API.
//!
//! The runner comes from the Python virtual environment named by `WFC_PY_VENV` (set by .ci/run),
//! else `target/py-venv`; without it the test prints why and passes, unless
//! `WFC_REQUIRE_PY_SERVERS=1`.
#![allow(missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn venv() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("WFC_PY_VENV").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv")),
    ];
    candidates.into_iter().flatten().find(|v| v.join("bin/dex-local-runner").exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A hang guard, not an assertion about time.
fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads one HTTP/1.1 request: method, path and body (Content-Length or chunked).
fn read_request(stream: &mut TcpStream) -> Option<(String, String, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let head_end = loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let mut first = head.lines().next()?.split_whitespace();
    let method = first.next()?.to_uppercase();
    let path = String::from_utf8_lossy(&raw[..head_end]).split_whitespace().nth(1)?.to_owned();
    let mut body = raw[head_end..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        // Read until the last chunk, then decode.
        while !body.windows(5).any(|w| w == b"0\r\n\r\n") {
            let n = stream.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        let mut decoded = Vec::new();
        let mut rest = &body[..];
        while let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..i]).trim(), 16).ok()?;
            if size == 0 {
                break;
            }
            decoded.extend_from_slice(&rest[i + 2..i + 2 + size]);
            rest = &rest[i + 2 + size + 2..];
        }
        body = decoded;
    } else {
        let length: usize =
            head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap_or(0));
        while body.len() < length {
            let n = stream.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
    }
    Some((method, path, body))
}

fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
}

/// One HTTP exchange with dex-local-runner.
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())))
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// An event dex-local-runner sent to the Invoke API, and where its answer goes.
type Invocation = (Vec<u8>, mpsc::Sender<Vec<u8>>);

/// The Lambda `Invoke` API dex-local-runner calls: each event is queued for the Runtime API.
fn serve_invoke(listener: TcpListener, events: mpsc::Sender<Invocation>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let Some((method, path, body)) = read_request(&mut stream) else { continue };
        if method != "POST" || !path.ends_with("/invocations") {
            respond(&mut stream, "404 Not Found", "", b"{}");
            continue;
        }
        let (answer_tx, answer_rx) = mpsc::channel();
        if events.send((body, answer_tx)).is_err() {
            return;
        }
        match answer_rx.recv_timeout(Duration::from_secs(600)) {
            Ok(answer) => respond(&mut stream, "200 OK", "", &answer),
            Err(_) => {
                respond(&mut stream, "200 OK", "X-Amz-Function-Error: Unhandled\r\n", b"{\"errorType\":\"NoAnswer\"}")
            }
        }
    }
}

/// The Lambda Runtime API the binary polls: `next` hands out the queued events (with the
/// headers Lambda sends), `response` and `error` answer them. Counts the invocations.
fn serve_runtime_api(listener: TcpListener, events: mpsc::Receiver<Invocation>, served: mpsc::Sender<String>) {
    let mut waiting: Vec<(String, mpsc::Sender<Vec<u8>>)> = Vec::new();
    let mut next_id = 0;
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let Some((method, path, body)) = read_request(&mut stream) else { continue };
        if method == "GET" && path == "/2018-06-01/runtime/invocation/next" {
            let Ok((event, answer)) = events.recv() else { return };
            next_id += 1;
            let id = format!("request-{next_id}");
            let deadline =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + 900_000;
            let headers = format!(
                "Lambda-Runtime-Aws-Request-Id: {id}\r\nLambda-Runtime-Deadline-Ms: {deadline}\r\nLambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-west-2:000000000000:function:approval\r\nLambda-Runtime-Trace-Id: Root=1-0-0\r\n"
            );
            respond(&mut stream, "200 OK", &headers, &event);
            waiting.push((id, answer));
        } else if let Some(rest) = path.strip_prefix("/2018-06-01/runtime/invocation/") {
            let (id, kind) = rest.split_once('/').unwrap_or((rest, ""));
            respond(&mut stream, "202 Accepted", "", b"{\"status\":\"OK\"}");
            if let Some(i) = waiting.iter().position(|(w, _)| w == id) {
                let (_, answer) = waiting.remove(i);
                let _ = served.send(format!("{kind} {}", String::from_utf8_lossy(&body)));
                let _ = answer.send(body);
            }
        } else {
            respond(&mut stream, "404 Not Found", "", b"{}");
        }
    }
}

#[test]
fn the_binary_runs_as_a_durable_function_under_the_runtime_api() {
    let Some(venv) = venv() else {
        let why = "dex-local-runner is not installed (set WFC_PY_VENV to a venv with aws-durable-execution-sdk-python-testing, as .ci/run does)";
        assert!(std::env::var("WFC_REQUIRE_PY_SERVERS").as_deref() != Ok("1"), "{why}");
        eprintln!("skipping the Lambda Runtime API test: {why}");
        return;
    };
    let (dex_port, invoke_port, runtime_port) = (free_port(), free_port(), free_port());
    let (events_tx, events_rx) = mpsc::channel();
    let (served_tx, served_rx) = mpsc::channel();
    let invoke = TcpListener::bind(("127.0.0.1", invoke_port)).unwrap();
    let runtime = TcpListener::bind(("127.0.0.1", runtime_port)).unwrap();
    std::thread::spawn(move || serve_invoke(invoke, events_tx));
    std::thread::spawn(move || serve_runtime_api(runtime, events_rx, served_tx));

    let log = std::env::temp_dir().join(format!("wfc-lambda-runtime-dex-{}.log", std::process::id()));
    let _dex = Killed(
        // The runner with its lost wake-up fixed (dex_local_runner.py beside this crate's: a
        // Wait completed while the invocation finished could otherwise hang the execution).
        Command::new(venv.join("bin/python"))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("dex_local_runner.py"))
            .args(["start-server", "--host", "127.0.0.1", "--port", &dex_port.to_string(), "--skip-time"])
            .args(["--lambda-endpoint", &format!("http://127.0.0.1:{invoke_port}")])
            .args(["--local-runner-endpoint", &format!("http://127.0.0.1:{dex_port}")])
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_DEFAULT_REGION", "us-west-2")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("dex-local-runner starts"),
    );
    wait_until("dex-local-runner to answer /health", Duration::from_secs(600), || {
        TcpStream::connect(("127.0.0.1", dex_port))
            .ok()
            .map(|_| http(dex_port, "GET", "/health", None))
            .filter(|(s, _)| *s == 200)
    });

    // The function, as Lambda starts a custom runtime (its `bootstrap`): its configuration in
    // the environment.
    let mut function = Command::new(bootstrap())
        .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{runtime_port}"))
        .env("AWS_LAMBDA_FUNCTION_NAME", "approval")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_ENDPOINT_URL_LAMBDA", format!("http://127.0.0.1:{dex_port}"))
        // The role's session credentials and the region, as Lambda sets them (aws-config reads them).
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_SESSION_TOKEN", "local-session")
        .env("AWS_REGION", "us-west-2")
        .env_remove("AWS_PROFILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the example binary starts");
    let stdout = function.stdout.take().unwrap();
    let _function = Killed(function);
    let (lines_tx, lines_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });

    let start = json!({
        "AccountId": "000000000000", "FunctionName": "approval", "FunctionQualifier": "$LATEST",
        "ExecutionName": "order-7", "ExecutionTimeoutSeconds": 300, "ExecutionRetentionPeriodDays": 1,
        "Input": json!({ "order": 7 }).to_string(),
    });
    let (status, started) = http(dex_port, "POST", "/start-durable-execution", Some(&start.to_string()));
    assert!(status < 300, "{status} {started}");
    let arn = started["ExecutionArn"].as_str().unwrap().to_owned();

    // The approval request carries the callback id; the first invocation answered PENDING.
    let mut lines = Vec::new();
    let token = wait_until("the approval request", Duration::from_secs(600), || {
        lines.extend(lines_rx.try_iter());
        lines.iter().find_map(|l: &String| l.strip_prefix("request 7 ").map(str::to_owned))
    });
    let first = served_rx.recv_timeout(Duration::from_secs(600)).expect("the first invocation's answer");
    assert_eq!(first, r#"response {"Status":"PENDING"}"#);

    // The approver answers through the service, which invokes the function again: it replays
    // the callback, starts the cool-off WAIT (PENDING), and after it ships (SUCCEEDED).
    let path = format!("/2025-12-01/durable-execution-callbacks/{}/succeed", encode(&token));
    let (status, answer) = http(dex_port, "POST", &path, Some(r#"{"approved": true}"#));
    assert!(status < 300, "{status} {answer}");
    let execution_path = format!("/2025-12-01/durable-executions/{}", encode(&arn));
    let execution = wait_until("the execution to end", Duration::from_secs(600), || {
        let (_, v) = http(dex_port, "GET", &execution_path, None);
        (v["Status"] != "RUNNING").then_some(v)
    });
    assert_eq!(execution["Status"], "SUCCEEDED", "{execution}");
    let result: Value = serde_json::from_str(execution["Result"].as_str().unwrap()).unwrap();
    assert_eq!(
        result,
        json!({ "order": 7, "prepared": { "packed": true }, "approval": { "approved": true }, "shipment": { "carrier": "wfc-post" } })
    );
    let answers: Vec<String> = std::iter::once(first).chain(served_rx.try_iter()).collect();
    assert_eq!(answers.len(), 3, "PENDING at the callback, PENDING at the Wait, SUCCEEDED: {answers:?}");
    assert!(answers[2].starts_with(r#"response {"Status":"SUCCEEDED""#), "{answers:?}");
    // Each task ran once across the three invocations.
    lines.extend(lines_rx.try_iter());
    assert_eq!(lines, ["prepare 7".to_owned(), format!("request 7 {token}"), "ship 7".to_owned()]);
}

/// The example's `bootstrap` executable (what a `provided.al2023` function runs), checked to load
/// on Amazon Linux 2023: no glibc symbol version newer than its glibc 2.34.
fn bootstrap() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_bootstrap"));
    assert_eq!(path.file_name().and_then(|n| n.to_str()), Some("bootstrap"));
    let newest = newest_glibc(&std::fs::read(&path).expect("the bootstrap binary"));
    assert!(
        newest.is_none_or(|minor| minor <= 34),
        "{} needs GLIBC_2.{} but provided.al2023 has glibc 2.34: build it with cargo lambda (README)",
        path.display(),
        newest.unwrap_or_default()
    );
    path
}

/// The newest `GLIBC_2.N` symbol version an ELF executable names (its version needs are strings
/// of `.dynstr`), or `None` for one that needs no glibc (static musl).
fn newest_glibc(elf: &[u8]) -> Option<u32> {
    let tag = b"GLIBC_2.";
    let mut newest = None;
    for i in 0..elf.len().saturating_sub(tag.len()) {
        if &elf[i..i + tag.len()] == tag {
            let digits: String =
                elf[i + tag.len()..].iter().take_while(|b| b.is_ascii_digit()).map(|b| *b as char).collect();
            if let Ok(minor) = digits.parse::<u32>() {
                newest = newest.max(Some(minor));
            }
        }
    }
    newest
}

#[test]
fn the_glibc_version_scan_reads_version_names() {
    assert_eq!(newest_glibc(b"\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.17\0"), Some(34));
    assert_eq!(newest_glibc(b"\0GLIBC_PRIVATE\0musl\0"), None);
    assert_eq!(newest_glibc(b"GLIBC_2.39"), Some(39));
}
