//! `/ui`: the execution viewer on `wfc serve`'s port (issue 23). Plain GET pages made from the
//! server's own store reads (no calls to its own API):
//!
//! - `GET /ui`: the state machines and the executions (status, start, duration), filtered by
//!   `?q=` (a machine or execution name contains it) and `?status=`, paged by the store
//!   (`?n=` rows, `?after=` where the "next page" link continues);
//! - `GET /ui/machine?arn=`: a state machine's graph and executions, or, for a definition that
//!   does not validate, its located diagnostics;
//! - `GET /ui/execution?arn=`: the execution page of [`wfc_core::render::report`] (the graph
//!   colored by status, the path taken, the history, the detail panel); while the execution runs
//!   it shows the journal and polls `GET /ui/execution.json?arn=` to reload when it moves on.
//!
//! Access follows the API's rule. Without `--credentials` (loopback only) the UI needs nothing,
//! but a request must name a loopback host (so a web page cannot reach it through DNS
//! rebinding). With `--credentials` the API needs SigV4 and the UI its own token, printed at
//! start: `/ui?token=TOKEN` (compared in constant time) sets a cookie for `/ui`. With SigV4 and
//! no token the UI is closed. Every page carries a Content-Security-Policy (no fetch beyond the
//! server, scripts only with the page's nonce) and escapes every name, value and error.

use std::fmt::Write as _;

use http::request::Parts;
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use wfc_core::render::report::{self, Served, escape};
use wfc_runtime::durable::{ExecutionRecord, ExecutionStatus, Operation};

use crate::api::Service;
use crate::error::ApiError;
use crate::machines::load_definition;

/// The cookie that carries the UI's token.
const COOKIE: &str = "wfc_ui_token";

/// The executions a list page shows at most (the newest first); `?n=` asks for fewer, and the
/// page links to the next one.
const LIST_LIMIT: usize = 1000;

/// Who may see the UI.
#[derive(Clone)]
pub enum Access {
    /// No credential (a loopback server without `--credentials`).
    Open,
    /// The token printed at start (or its cookie) is required.
    Token(String),
    /// SigV4 is required and the UI has no token: it is refused.
    Closed,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Open => "Open",
            Access::Token(_) => "Token(..)",
            Access::Closed => "Closed",
        })
    }
}

/// A new UI token: 256 random bits, as hex.
pub fn new_token() -> String {
    format!("{:032x}{:032x}", rand::random::<u128>(), rand::random::<u128>())
}

/// Whether a request is for the UI (everything else is the API).
pub fn is_ui(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

fn response(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", content_type)
        .header("cache-control", "no-store")
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        .header("x-frame-options", "DENY")
        .header("content-security-policy", "default-src 'none'; frame-ancestors 'none'")
        .body(Full::new(body.into()))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::from_static(b"internal error"))))
}

/// An HTML page, with the header's script nonce set to the page's.
fn html(status: u16, page: String, nonce: &str) -> Response<Full<Bytes>> {
    let mut r = response(status, "text/html; charset=utf-8", page);
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    );
    if let Ok(v) = http::HeaderValue::from_str(&csp) {
        r.headers_mut().insert("content-security-policy", v);
    }
    r
}

/// A page with a message (errors, refusals).
fn message(status: u16, title: &str, text: &str) -> Response<Full<Bytes>> {
    let served = served(Vec::new());
    let mut page = String::new();
    report::head(&mut page, title, Some(&served));
    let _ = write!(
        page,
        "<h1>{}</h1></header>\n<section class=\"history\"><p id=\"message\">{}</p><p><a href=\"/ui\">all executions</a></p></section>\n</body>\n</html>\n",
        escape(title),
        escape(text)
    );
    html(status, page, &served.nonce)
}

fn served(nav: Vec<(String, String)>) -> Served {
    Served { nav, poll: None, version: String::new(), journal: None, nonce: format!("{:032x}", rand::random::<u128>()) }
}

/// `%XX` and `+` decoded (a query string's values); invalid UTF-8 is replaced, never a panic.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A query value encoded (everything but the unreserved characters).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The first value of `key` in a query string.
fn query<'a>(parts: &'a Parts, key: &str) -> Option<String> {
    parts.uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == key).then(|| percent_decode(v))
    })
}

/// The query string without `token` (where a token login redirects to).
fn without_token(parts: &Parts) -> String {
    let rest: Vec<&str> = parts
        .uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("token=") && *p != "token")
        .collect();
    let path = parts.uri.path();
    if rest.is_empty() { path.to_owned() } else { format!("{path}?{}", rest.join("&")) }
}

fn cookie(parts: &Parts) -> Option<String> {
    parts.headers.get_all("cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|header| {
        header
            .split(';')
            .find_map(|c| c.trim().strip_prefix(COOKIE).and_then(|r| r.strip_prefix('=')).map(str::to_owned))
    })
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Whether the Host header names this machine (an IP literal of loopback, or `localhost`).
fn loopback_host(parts: &Parts) -> bool {
    let Some(host) = parts.headers.get("host").and_then(|h| h.to_str().ok()) else { return false };
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Checks the access rule; `Err` is the answer to send instead of the page.
fn check_access(access: &Access, parts: &Parts) -> Result<(), Response<Full<Bytes>>> {
    match access {
        Access::Open => {
            if loopback_host(parts) {
                Ok(())
            } else {
                Err(message(
                    403,
                    "Not this host",
                    "wfc serve's UI without --credentials answers requests for localhost or a loopback address only.",
                ))
            }
        }
        Access::Closed => Err(message(
            403,
            "The UI is closed",
            "This server requires SigV4 for its API and has no UI token: start it with one (wfc serve prints the UI's address with its token).",
        )),
        Access::Token(token) => {
            if let Some(given) = query(parts, "token") {
                if same(&given, token) {
                    // The token moves into a cookie, and out of the address bar and history.
                    let mut r = response(303, "text/plain; charset=utf-8", "signed in");
                    let headers = r.headers_mut();
                    if let Ok(v) = http::HeaderValue::from_str(&without_token(parts)) {
                        headers.insert("location", v);
                    }
                    if let Ok(v) =
                        http::HeaderValue::from_str(&format!("{COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict"))
                    {
                        headers.insert("set-cookie", v);
                    }
                    return Err(r);
                }
                return Err(message(401, "Wrong UI token", "The token in the address is not this server's UI token."));
            }
            match cookie(parts) {
                Some(given) if same(&given, token) => Ok(()),
                _ => Err(message(
                    401,
                    "The UI needs its token",
                    "This server requires credentials: open the UI address wfc serve printed at start (/ui?token=...).",
                )),
            }
        }
    }
}

/// Answers a request for `/ui...`.
pub async fn handle(service: &Service, access: &Access, parts: &Parts) -> Response<Full<Bytes>> {
    if let Err(refused) = check_access(access, parts) {
        return refused;
    }
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return message(405, "Not allowed", "The UI answers GET requests only.");
    }
    let answer = match parts.uri.path() {
        "/ui" | "/ui/" => list_page(service, parts).await,
        "/ui/machine" => machine_page(service, parts).await,
        "/ui/execution" => execution_page(service, parts).await,
        "/ui/execution.json" => execution_json(service, parts).await,
        other => Ok(message(404, "Not found", &format!("There is no page {other}."))),
    };
    answer.unwrap_or_else(|e| message(e.status.max(400), e.code, &e.message))
}

// ----- lists -----

fn time_text(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(
        |_| ms.to_string(),
        |t| t.round(jiff::Unit::Second).map_or_else(|_| t.to_string(), |t| t.to_string()),
    )
}

fn duration_text(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 10_000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{}:{:02} min", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}:{:02} h", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

/// The executions of the store that wfc serve started (`machine:name`), in the store's order
/// (the newest first; a page's cursor is its last record in that order).
fn serve_executions(records: Vec<ExecutionRecord>) -> Vec<(String, String, ExecutionRecord)> {
    records
        .into_iter()
        .filter_map(|r| {
            let name = r.name.strip_prefix(&format!("{}:", r.workflow))?.to_owned();
            Some((r.workflow.clone(), name, r))
        })
        .collect()
}

fn execution_rows(service: &Service, page: &mut String, executions: &[(String, String, ExecutionRecord)]) {
    page.push_str("<table id=\"executions\"><thead><tr><th>execution</th><th>state machine</th><th>status</th><th>started</th><th>duration</th></tr></thead>\n<tbody>\n");
    let now = jiff::Timestamp::now().as_millisecond();
    for (machine, name, r) in executions {
        let arn = service.arns.execution_arn(machine, name);
        let status = r.status.as_str();
        let end = if r.status == ExecutionStatus::Running { now } else { r.updated_at_ms };
        let _ = writeln!(
            page,
            "<tr data-status=\"{status}\"><td><a href=\"/ui/execution?arn={}\">{}</a></td><td><a href=\"/ui/machine?arn={}\">{}</a></td><td><span class=\"badge {}\">{status}</span></td><td>{}</td><td>{}{}</td></tr>",
            escape(&percent_encode(&arn)),
            escape(name),
            escape(&percent_encode(&service.arns.machine_arn(machine))),
            escape(machine),
            status.to_ascii_lowercase(),
            time_text(r.created_at_ms),
            duration_text(end - r.created_at_ms),
            if r.status == ExecutionStatus::Running { " so far" } else { "" },
        );
    }
    page.push_str("</tbody></table>\n");
}

const STATUSES: &[&str] = &["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"];

/// One page of an execution list: the store's keyset paging (`?after=MS:NAME`, the last record
/// of the previous page, as the store orders them: newest first, then by name) and `?n=` rows.
struct ListPage {
    /// The executions wfc serve started, in the store's order.
    executions: Vec<(String, String, ExecutionRecord)>,
    /// Where the next page starts (`MS:NAME`), when there are more.
    next: Option<String>,
    /// Whether this is a later page (it links back to the first).
    later: bool,
    size: usize,
}

/// The `(created_at_ms, store name)` a page continues after: `MS:NAME` (the name may hold `:`).
fn cursor(text: &str) -> Option<(i64, String)> {
    let (ms, name) = text.split_once(':')?;
    Some((ms.parse().ok()?, name.to_owned()))
}

/// Reads one page of executions (`workflow`, `status`, `contains` filter them in the store).
async fn list_executions(
    service: &Service,
    parts: &Parts,
    workflow: Option<&str>,
    status: Option<ExecutionStatus>,
    contains: Option<&str>,
) -> Result<ListPage, ApiError> {
    let size = query(parts, "n").and_then(|n| n.parse::<usize>().ok()).unwrap_or(LIST_LIMIT).clamp(1, LIST_LIMIT);
    let after = match query(parts, "after").filter(|a| !a.is_empty()) {
        None => None,
        Some(text) => Some(cursor(&text).ok_or_else(|| {
            ApiError::client("InvalidCursor", format!("'{text}' is not a page of this list (after=MS:NAME)"))
        })?),
    };
    // One more than shown tells there is a next page.
    let mut records = service
        .store
        .list_executions_page(workflow, status, contains, after.as_ref().map(|(ms, n)| (*ms, n.as_str())), size + 1)
        .await?;
    let more = records.len() > size;
    records.truncate(size);
    let next = records.last().filter(|_| more).map(|r| format!("{}:{}", r.created_at_ms, r.name));
    Ok(ListPage { executions: serve_executions(records), next, later: after.is_some(), size })
}

/// The links under a page of executions: to the next page and back to the first, keeping the
/// filter (`base` is the page's path with its filter, ending in `?` or `&`).
fn paging_links(page: &mut String, list: &ListPage, base: &str) {
    let n = if list.size == LIST_LIMIT { String::new() } else { format!("n={}&", list.size) };
    page.push_str("<p class=\"pager\" id=\"pages\">");
    if list.later {
        let _ = write!(page, "<a id=\"first-page\" href=\"{}\">newest</a> ", escape(&format!("{base}{n}")));
    }
    if let Some(next) = &list.next {
        let _ = write!(
            page,
            "<a id=\"next-page\" href=\"{}\">next page</a>",
            escape(&format!("{base}{n}after={}", percent_encode(next)))
        );
    }
    page.push_str("</p>\n");
}

async fn list_page(service: &Service, parts: &Parts) -> Result<Response<Full<Bytes>>, ApiError> {
    let q = query(parts, "q").unwrap_or_default();
    let status = query(parts, "status").filter(|s| STATUSES.contains(&s.as_str()));
    let needle = q.to_lowercase();
    let machines = service.machines.list().await?;
    // The store filters and pages (by its indexes).
    let status_filter = status.as_deref().and_then(ExecutionStatus::parse);
    let contains = (!needle.is_empty()).then_some(needle.as_str());
    let list = list_executions(service, parts, None, status_filter, contains).await?;
    let served = served(Vec::new());
    let mut page = String::new();
    report::head(&mut page, "wfc serve", Some(&served));
    page.push_str("<h1>wfc serve</h1>\n");
    let _ = writeln!(page, "<span class=\"meta\">{} state machines</span>", machines.len());
    page.push_str("</header>\n<section class=\"history\">\n<h2>State machines</h2>\n");
    page.push_str("<table id=\"machines\"><thead><tr><th>name</th><th>type</th><th>created</th><th>executions</th></tr></thead>\n<tbody>\n");
    for m in &machines {
        let _ = writeln!(
            page,
            "<tr><td><a href=\"/ui/machine?arn={}\">{}</a></td><td>{}</td><td>{}</td><td><a href=\"/ui?q={}\">list</a></td></tr>",
            escape(&percent_encode(&service.arns.machine_arn(&m.name))),
            escape(&m.name),
            m.machine_type.as_str(),
            time_text(m.created_at_ms),
            escape(&percent_encode(&m.name)),
        );
    }
    page.push_str("</tbody></table>\n<h2>Executions</h2>\n<form method=\"get\" action=\"/ui\" class=\"filter\">");
    let _ = write!(
        page,
        "<input name=\"q\" type=\"search\" placeholder=\"machine or execution name\" aria-label=\"name\" value=\"{}\"> <select name=\"status\" aria-label=\"status\"><option value=\"\">any status</option>",
        escape(&q)
    );
    for s in STATUSES {
        let chosen = if status.as_deref() == Some(*s) { " selected" } else { "" };
        let _ = write!(page, "<option{chosen}>{s}</option>");
    }
    page.push_str("</select> <button type=\"submit\">filter</button></form>\n");
    let _ = writeln!(
        page,
        "<p class=\"meta\" id=\"count\">{} executions{}{}</p>",
        list.executions.len(),
        if list.later { " (a later page)" } else { "" },
        if list.next.is_some() { " (more on the next page)" } else { "" },
    );
    execution_rows(service, &mut page, &list.executions);
    let mut base = String::from("/ui?");
    if !q.is_empty() {
        let _ = write!(base, "q={}&", percent_encode(&q));
    }
    if let Some(s) = &status {
        let _ = write!(base, "status={s}&");
    }
    paging_links(&mut page, &list, &base);
    page.push_str("</section>\n</body>\n</html>\n");
    Ok(html(200, page, &served.nonce))
}

async fn machine_page(service: &Service, parts: &Parts) -> Result<Response<Full<Bytes>>, ApiError> {
    let arn = query(parts, "arn").ok_or_else(|| ApiError::client("MissingArn", "Which state machine? (?arn=...)"))?;
    let r = service.arns.state_machine(&arn)?;
    let m = service.machines.require(&r.name, &arn).await?;
    let served = served(vec![("/ui".to_owned(), "all executions".to_owned())]);
    let source = &m.version.definition.source;
    let workflow = match load_definition(&m.name, source) {
        Ok(loaded) => loaded.workflow,
        Err(diags) => {
            let page = report::diagnostics_page(&m.name, source, &diags.located(), Some(&served));
            return Ok(html(200, page, &served.nonce));
        }
    };
    let list = list_executions(service, parts, Some(&m.name), None, None).await?;
    let mut page = String::new();
    report::head(&mut page, &m.name, Some(&served));
    let _ = writeln!(
        page,
        "<h1>{}</h1><span class=\"meta\">{} · revision {}</span></header>",
        escape(&m.name),
        m.machine_type.as_str(),
        escape(&m.version.version_id)
    );
    page.push_str("<main><section class=\"graph\">\n");
    page.push_str(&wfc_core::render::svg(&workflow));
    page.push_str("</section></main>\n<section class=\"history\">\n<h2>Executions</h2>\n");
    execution_rows(service, &mut page, &list.executions);
    paging_links(&mut page, &list, &format!("/ui/machine?arn={}&", percent_encode(&arn)));
    page.push_str("<h2>Definition</h2>\n");
    page.push_str(&report::source_listing(source, &Default::default()));
    page.push_str("</section>\n</body>\n</html>\n");
    Ok(html(200, page, &served.nonce))
}

// ----- one execution -----

async fn record(service: &Service, parts: &Parts) -> Result<(ExecutionRecord, String, String), ApiError> {
    let arn = query(parts, "arn").ok_or_else(|| ApiError::client("MissingArn", "Which execution? (?arn=...)"))?;
    let (store_name, machine) = service.arns.execution(&arn)?;
    let record = service
        .store
        .describe_execution(&store_name)
        .await?
        .ok_or_else(|| ApiError::client("ExecutionDoesNotExist", format!("Execution Does Not Exist: '{arn}'")))?;
    Ok((record, arn, machine))
}

/// What the page polls for: changes whenever the execution moves on (its status, its stored
/// history's last event, or an operation of its journal).
fn version(record: &ExecutionRecord, history: u64, journal: &[Operation]) -> String {
    let ops: Vec<String> = journal.iter().map(|o| format!("{}={}", o.id, o.status.as_str())).collect();
    let digest = ops.join(",");
    format!("{}:{history}:{}:{:016x}", record.status.as_str(), journal.len(), fnv(digest.as_bytes()))
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

async fn journal(service: &Service, record: &ExecutionRecord) -> Result<Vec<Operation>, ApiError> {
    if record.status == ExecutionStatus::Running {
        Ok(service.store.load_journal(&record.name).await?)
    } else {
        Ok(Vec::new())
    }
}

/// The id of the last stored history event (0: none), read by the index, not the history.
async fn last_event_id(service: &Service, record: &ExecutionRecord) -> Result<u64, ApiError> {
    Ok(service.store.read_history_page(&record.name, 0, 1, true).await?.first().map_or(0, |e| e.id))
}

/// The most events one poll answers with: a page far behind catches up over a few polls.
const POLL_EVENTS: usize = 500;

/// The poll of a running execution's page: its status and version and, with `after=ID`, the
/// stored history events after that one (the page appends them instead of reloading).
async fn execution_json(service: &Service, parts: &Parts) -> Result<Response<Full<Bytes>>, ApiError> {
    let (record, _, _) = record(service, parts).await?;
    let last = last_event_id(service, &record).await?;
    let journal = journal(service, &record).await?;
    let mut body = json!({ "status": record.status.as_str(), "version": version(&record, last, &journal) });
    if let Some(after) = query(parts, "after").and_then(|a| a.parse::<u64>().ok()) {
        let events = service.store.read_history_page(&record.name, after, POLL_EVENTS, false).await?;
        body["events"] = serde_json::to_value(events).unwrap_or(Value::Null);
    }
    Ok(response(200, "application/json", serde_json::to_vec(&body).unwrap_or_default()))
}

async fn execution_page(service: &Service, parts: &Parts) -> Result<Response<Full<Bytes>>, ApiError> {
    let (record, arn, machine) = record(service, parts).await?;
    let version_id = record.version_id.clone().ok_or_else(|| {
        ApiError::client("ExecutionDoesNotExist", format!("Execution '{arn}' is not pinned to a stored definition"))
    })?;
    let m = service.machines.version(&record.workflow, &version_id).await?.ok_or_else(|| {
        ApiError::client("ExecutionDoesNotExist", format!("The definition of execution '{arn}' is not in the store"))
    })?;
    let mut served = served(vec![
        ("/ui".to_owned(), "all executions".to_owned()),
        (format!("/ui/machine?arn={}", percent_encode(&service.arns.machine_arn(&machine))), machine.clone()),
    ]);
    let source = &m.version.definition.source;
    let workflow = match service.machines.workflow(&m.version) {
        Ok(w) => w,
        Err(_) => {
            let diags = match load_definition(&m.name, source) {
                Err(diags) => diags.located(),
                Ok(_) => Vec::new(),
            };
            let page = report::diagnostics_page(&m.name, source, &diags, Some(&served));
            return Ok(html(200, page, &served.nonce));
        }
    };
    let mut events = service.store.read_history(&record.name).await?;
    let stored = events.last().map_or(0, |e| e.id);
    if events.is_empty() {
        // As GetExecutionHistory: a running execution's history is its start until its first
        // checkpoint writes it.
        events.push(wfc_runtime::HistoryEvent {
            id: 1,
            previous_event_id: 0,
            timestamp: record.start_time.clone().into(),
            event_type: wfc_runtime::EventType::ExecutionStarted,
            details: json!({ "input": record.input }).into(),
        });
    }
    let ops = journal(service, &record).await?;
    served.version = version(&record, stored, &ops);
    served.poll = Some(format!("/ui/execution.json?arn={}", percent_encode(&arn)));
    served.journal = (record.status == ExecutionStatus::Running)
        .then(|| ops.iter().map(|o| serde_json::to_value(o).unwrap_or(Value::Null)).collect());
    let history: Vec<Value> = events.iter().map(|e| serde_json::to_value(e).unwrap_or(Value::Null)).collect();
    let mut execution = json!({
        "status": record.status.as_str(),
        "history": history,
        "elapsed_seconds": if record.status == ExecutionStatus::Running {
            Value::Null
        } else {
            json!((record.updated_at_ms - record.created_at_ms).max(0) as f64 / 1000.0)
        },
    });
    if record.status == ExecutionStatus::Succeeded {
        execution["output"] = record.output.clone().unwrap_or(Value::Null);
    }
    if let Some(error) = &record.error {
        execution["error"] = json!(error);
    }
    if let Some(cause) = &record.cause {
        execution["cause"] = json!(cause);
    }
    let page = report::page(&workflow, &execution, Some(&served));
    Ok(html(200, page, &served.nonce))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_decoded_without_panics() {
        assert_eq!(percent_decode("a%3Ab+c"), "a:b c");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
        let arn = "arn:aws:states:us-east-1:1:execution:m <x>:e&f";
        assert_eq!(percent_decode(&percent_encode(arn)), arn);
    }

    #[test]
    fn hosts() {
        let parts = |host: &str| {
            let (parts, ()) = http::Request::builder().uri("/ui").header("host", host).body(()).unwrap().into_parts();
            parts
        };
        assert!(loopback_host(&parts("127.0.0.1:8083")));
        assert!(loopback_host(&parts("localhost")));
        assert!(loopback_host(&parts("[::1]:80")));
        assert!(!loopback_host(&parts("evil.example:8083")));
        assert!(!loopback_host(&parts("127.0.0.1.evil.example")));
    }

    #[test]
    fn the_token_is_required_and_compared_whole() {
        let access = Access::Token("secret".into());
        let request = |uri: &str, cookie: Option<&str>| {
            let mut b = http::Request::builder().uri(uri).header("host", "127.0.0.1");
            if let Some(c) = cookie {
                b = b.header("cookie", c);
            }
            b.body(()).unwrap().into_parts().0
        };
        assert_eq!(check_access(&access, &request("/ui", None)).unwrap_err().status(), 401);
        assert_eq!(check_access(&access, &request("/ui?token=secre", None)).unwrap_err().status(), 401);
        assert_eq!(check_access(&access, &request("/ui", Some("wfc_ui_token=secret2"))).unwrap_err().status(), 401);
        let login = check_access(&access, &request("/ui/machine?arn=x&token=secret", None)).unwrap_err();
        assert_eq!(login.status(), 303);
        assert_eq!(login.headers()["location"], "/ui/machine?arn=x");
        assert!(login.headers()["set-cookie"].to_str().unwrap().starts_with("wfc_ui_token=secret;"));
        assert!(check_access(&access, &request("/ui", Some("a=b; wfc_ui_token=secret"))).is_ok());
        assert_eq!(check_access(&Access::Closed, &request("/ui", None)).unwrap_err().status(), 403);
        assert!(check_access(&Access::Open, &request("/ui", None)).is_ok());
    }
}
