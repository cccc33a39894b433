//! An execution as one self-contained HTML page (`wfc run --report out.html`): the state graph
//! ([`super::svg`]) with each state colored by what happened to it and the path taken drawn
//! bold, the history as a table, and the input, output or error of a clicked state or event.
//!
//! The page needs nothing but itself: styles and the small script are inline, the execution's
//! data is embedded as JSON, and a Content-Security-Policy forbids every fetch, so it opens the
//! same offline. Everything from the definition or the execution reaches the page as escaped
//! text: names and values in HTML are entity-escaped, the embedded JSON has `<`, `>`, `&` and the
//! JavaScript line separators as `\u` escapes (so no string can close the script element), and
//! the script writes values with `textContent`, never as markup.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Value, json};
use wfc_ir::{StateKind, StateMachine, Workflow};

use super::edges;
use super::svg::{Annotations, display_text, svg_annotated, xml};

/// What happened to a state in an execution, as the drawing's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateStatus {
    /// Entered and left every time.
    Succeeded,
    /// Entered, did not leave, and the execution ended without a Catch taking over.
    Failed,
    /// Failed (an error event during its visit) and one of its Catch targets ran next.
    Caught,
    /// Entered and not left, in an execution still running.
    Running,
    /// Never entered.
    Unreached,
}

impl StateStatus {
    /// The class name in the drawing (and the legend).
    pub fn class(self) -> &'static str {
        match self {
            StateStatus::Succeeded => "succeeded",
            StateStatus::Failed => "failed",
            StateStatus::Caught => "caught",
            StateStatus::Running => "running",
            StateStatus::Unreached => "unreached",
        }
    }
}

/// One state of the drawing: its positional id, name and outgoing edges.
struct DrawnState {
    id: String,
    name: String,
    /// (target id, target state's name, is a Catch edge); the machine's end is `{prefix}end`,
    /// with no name.
    edges: Vec<(String, Option<String>, bool)>,
}

fn collect(machine: &StateMachine, prefix: &str, out: &mut Vec<DrawnState>, starts: &mut Vec<(String, String)>) {
    starts.push((format!("{prefix}start"), super::id(prefix, machine.start_at)));
    for (i, state) in machine.states.iter().enumerate() {
        let id = super::id(prefix, i);
        let edges = edges(&state.kind)
            .into_iter()
            .map(|(target, label)| {
                let to = target.map_or_else(|| format!("{prefix}end"), |t| super::id(prefix, t));
                let name = target.map(|t| machine.states[t].name.clone());
                (to, name, label.starts_with("catch") || label.starts_with("onError"))
            })
            .collect();
        match &state.kind {
            StateKind::Parallel(p) => {
                for (b, branch) in p.branches.iter().enumerate() {
                    collect(branch, &format!("{id}_b{b}_"), out, starts);
                }
            }
            StateKind::Map(m) => collect(&m.item_processor, &format!("{id}_m_"), out, starts),
            _ => {}
        }
        out.push(DrawnState { id, name: state.name.clone(), edges });
    }
}

/// Each state's status and the edges taken, from an execution's history (AWS-shaped events:
/// `type`, `details.name` on `*StateEntered`/`*StateExited`) and its status.
pub fn annotate(workflow: &Workflow, status: &str, history: &[Value]) -> (Annotations, HashMap<String, StateStatus>) {
    let mut states = Vec::new();
    let mut starts = Vec::new();
    collect(&workflow.machine, "", &mut states, &mut starts);
    annotate_drawn(&states, starts, status, history)
}

/// [`annotate`] over the drawing's states, walked once by the caller.
fn annotate_drawn(
    states: &[DrawnState],
    starts: Vec<(String, String)>,
    status: &str,
    history: &[Value],
) -> (Annotations, HashMap<String, StateStatus>) {
    let by_name: HashMap<&str, Vec<usize>> = states.iter().enumerate().fold(HashMap::new(), |mut m, (k, s)| {
        m.entry(s.name.as_str()).or_default().push(k);
        m
    });

    // Entries (event positions) and exits per state name, the order states were entered in, and
    // the visits that failed inside (an error event between entry and exit, as a caught error
    // leaves it: AWS still records the state's exit).
    let mut entered: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut exited: HashMap<&str, usize> = HashMap::new();
    let mut sequence: Vec<(usize, &str)> = Vec::new();
    let mut open: HashMap<&str, bool> = HashMap::new();
    let mut failed_exits: Vec<(&str, usize)> = Vec::new();
    for (position, event) in history.iter().enumerate() {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let name = event.pointer("/details/name").and_then(Value::as_str);
        match name {
            Some(name) if kind.ends_with("StateEntered") => {
                entered.entry(name).or_default().push(position);
                sequence.push((position, name));
                open.insert(name, false);
            }
            Some(name) if kind.ends_with("StateExited") => {
                *exited.entry(name).or_default() += 1;
                if open.remove(name) == Some(true) {
                    failed_exits.push((name, position));
                }
            }
            _ if !kind.starts_with("Execution") && (kind.ends_with("Failed") || kind.ends_with("TimedOut")) => {
                open.values_mut().for_each(|failed| *failed = true);
            }
            _ => {}
        }
    }
    // A visit that failed inside and was followed by one of its Catch targets (rather than its
    // Next) was caught.
    let mut caught: HashSet<&str> = HashSet::new();
    for (name, position) in failed_exits {
        let Some(state) = by_name.get(name).and_then(|ks| ks.first()).map(|&k| &states[k]) else { continue };
        let targets: Vec<(&str, bool)> =
            state.edges.iter().filter_map(|(_, to, catch)| to.as_deref().map(|to| (to, *catch))).collect();
        let next =
            sequence.iter().filter(|(p, _)| *p > position).find_map(|(_, n)| targets.iter().find(|(t, _)| t == n));
        if next.is_some_and(|(_, catch)| *catch) {
            caught.insert(name);
        }
    }
    let running = status == "RUNNING";
    let id_of = |k: usize| states[k].id.clone();
    let mut statuses = HashMap::new();
    for state in states {
        let entries = entered.get(state.name.as_str()).map_or(&[][..], Vec::as_slice);
        let left = exited.get(state.name.as_str()).copied().unwrap_or(0);
        let status = match entries.last() {
            None => StateStatus::Unreached,
            Some(_) if caught.contains(state.name.as_str()) => StateStatus::Caught,
            Some(_) if left >= entries.len() => StateStatus::Succeeded,
            Some(&last) => {
                // Not left: caught if a Catch target ran after it (an engine that records no
                // exit for a caught state), running if the execution is, failed otherwise.
                let caught_later = state.edges.iter().filter(|(_, _, catch)| *catch).any(|(_, to, _)| {
                    to.as_deref().and_then(|to| entered.get(to)).is_some_and(|later| later.iter().any(|&p| p > last))
                });
                if caught_later {
                    StateStatus::Caught
                } else if running {
                    StateStatus::Running
                } else {
                    StateStatus::Failed
                }
            }
        };
        statuses.insert(state.id.clone(), status);
    }

    let mut taken = HashSet::new();
    let has_edge = |from: &DrawnState, to: &str| from.edges.iter().any(|(t, _, _)| t == to);
    // A state entered right after another one, along an edge of the graph.
    for pair in sequence.windows(2) {
        for &a in by_name.get(pair[0].1).map_or(&[][..], Vec::as_slice) {
            for &b in by_name.get(pair[1].1).map_or(&[][..], Vec::as_slice) {
                if has_edge(&states[a], &states[b].id) {
                    taken.insert((id_of(a), id_of(b)));
                }
            }
        }
    }
    // Into each machine's first state, and out of states that ended their machine.
    for (start, first) in starts {
        if statuses.get(&first).is_some_and(|s| *s != StateStatus::Unreached) {
            taken.insert((start, first));
        }
    }
    for state in states {
        let status = statuses.get(&state.id).copied().unwrap_or(StateStatus::Unreached);
        // A state that succeeded, or a Fail state (whose only edge is to the end), ended its path.
        let ended = status == StateStatus::Succeeded
            || (status == StateStatus::Failed && state.edges.iter().all(|(_, to, _)| to.is_none()));
        for (to, target, catch) in &state.edges {
            if !catch && target.is_none() && ended {
                taken.insert((state.id.clone(), to.clone()));
            }
        }
    }
    let state_class = statuses.iter().map(|(id, s)| (id.clone(), s.class().to_owned())).collect();
    (Annotations { state_class, taken }, statuses)
}

/// What a page gains when `wfc serve` serves it (`/ui`) instead of a file being written.
#[derive(Debug, Clone, Default)]
pub struct Served {
    /// Links shown before the title, `(href, text)`: the way back to the lists.
    pub nav: Vec<(String, String)>,
    /// A same-origin URL the page polls every second while the execution runs, with
    /// `&after=<last event id>`; it answers a small JSON object: `status`, `version` (changes
    /// with the execution) and `events`, the stored history events after that one, which the
    /// page appends to its table and colors the graph with. It reloads when the status changes
    /// (the final colors are the server's) or an event reports an error (caught or not: the
    /// server tells which).
    pub poll: Option<String>,
    /// The `version` the page was made from.
    pub version: String,
    /// The execution's journal operations (`id`, `type`, `name`, `status`, `starts`, ...). A
    /// running execution's history is stored with its checkpoints as it grows; one that has
    /// none stored yet (before its first checkpoint, or run by an older wfc, which stored the
    /// history at the end) is shown and colored from them (see [`journal_progress`]).
    pub journal: Option<Vec<Value>>,
    /// The nonce of the page's script (the server's Content-Security-Policy allows that one).
    pub nonce: String,
}

/// Events that stand for a running execution's journal when coloring its graph: each state with
/// operations is entered; it is left when all its operations finished and the last one
/// succeeded, failed when the last one failed, and still running when one has not finished (a
/// callback's STEP succeeded while its CALLBACK waits). Used for the colors only; the page shows
/// the operations themselves.
pub fn journal_progress(journal: &[Value]) -> Vec<Value> {
    let mut order: Vec<&str> = Vec::new();
    let mut last: HashMap<&str, (&str, bool)> = HashMap::new();
    for op in journal {
        let Some(name) = op.get("name").and_then(Value::as_str) else { continue };
        let status = op.get("status").and_then(Value::as_str).unwrap_or_default();
        let entry = last.entry(name).or_insert_with(|| {
            order.push(name);
            (status, false)
        });
        entry.0 = status;
        entry.1 |= status == "STARTED";
    }
    let mut events = Vec::new();
    for name in order {
        events.push(json!({"type": "ProgressStateEntered", "details": {"name": name}}));
        match last.get(name) {
            Some((_, true)) => {}
            Some(("FAILED" | "TIMED_OUT", _)) => events.push(json!({"type": "ProgressFailed", "details": {}})),
            _ => events.push(json!({"type": "ProgressStateExited", "details": {"name": name}})),
        }
    }
    events
}

/// How many history rows the page shows at once: the table is paged in the browser, so an
/// execution of tens of thousands of events renders as fast as a small one.
pub const PAGE_ROWS: usize = 200;

/// The page for one execution. `execution` is what `wfc run --history` prints: `status`,
/// `output` or `error`/`cause`, `elapsed_seconds`, `history`.
pub fn html(workflow: &Workflow, execution: &Value) -> String {
    page(workflow, execution, None)
}

fn csp(served: Option<&Served>) -> String {
    match served {
        None => "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:".to_owned(),
        Some(s) => format!(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{}'; img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'",
            s.nonce
        ),
    }
}

/// Starts a page: the head (Content-Security-Policy, styles, title) and an open `<header>`
/// with the served page's links. The caller closes the header.
pub fn head(page: &mut String, title: &str, served: Option<&Served>) {
    page.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(page, "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", csp(served));
    page.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    let _ = writeln!(page, "<title>{}</title>", html_escape(title));
    page.push_str(PAGE_STYLE);
    page.push_str("</head>\n<body>\n<header>\n");
    if let Some(served) = served {
        page.push_str("<nav>");
        for (href, text) in &served.nav {
            let _ = write!(page, "<a href=\"{}\">{}</a>", html_escape(href), html_escape(text));
        }
        page.push_str("</nav>\n");
    }
}

fn script_open(page: &mut String, served: Option<&Served>) {
    match served {
        Some(s) => {
            let _ = write!(page, "<script nonce=\"{}\">", html_escape(&s.nonce));
        }
        None => page.push_str("<script>"),
    }
}

/// The page for one execution, as a file (`served` is `None`) or as `wfc serve`'s `/ui` shows
/// it (with its links, live updates and journal).
pub fn page(workflow: &Workflow, execution: &Value, served: Option<&Served>) -> String {
    let status = execution.get("status").and_then(Value::as_str).unwrap_or("UNKNOWN");
    let history: &[Value] = execution.get("history").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let journal = served.and_then(|s| s.journal.as_deref());
    let mut names = Vec::new();
    let mut starts = Vec::new();
    collect(&workflow.machine, "", &mut names, &mut starts);
    // Until a running execution's history is stored, its journal says where it is.
    let progress = match journal {
        Some(ops) if status == "RUNNING" && history.len() <= 1 => Some(journal_progress(ops)),
        _ => None,
    };
    let start_edges: Vec<Value> = starts.iter().map(|(start, first)| json!([start, first])).collect();
    let (annotations, statuses) = annotate_drawn(&names, starts, status, progress.as_deref().unwrap_or(history));
    let drawing = svg_annotated(workflow, &annotations);
    let state_names: serde_json::Map<String, Value> =
        names.iter().map(|s| (s.id.clone(), Value::String(s.name.clone()))).collect();
    // The graph's edges, for the script's coloring of one Map iteration (the same rule as
    // `annotate`, over that iteration's events).
    let state_edges: serde_json::Map<String, Value> = names
        .iter()
        .map(|s| (s.id.clone(), s.edges.iter().map(|(to, name, catch)| json!([to, name, catch])).collect()))
        .collect();
    let data = json!({
        "status": status,
        "output": execution.get("output"),
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "history": history,
        "states": state_names,
        "edges": state_edges,
        "starts": start_edges,
        "journal": journal,
        "fromJournal": progress.is_some(),
        "poll": served.and_then(|s| s.poll.as_deref()),
        "version": served.map(|s| s.version.as_str()),
        "pageRows": PAGE_ROWS,
    });

    let mut counts: HashMap<StateStatus, usize> = HashMap::new();
    for s in statuses.values() {
        *counts.entry(*s).or_default() += 1;
    }
    let title = format!("{} — {}", workflow.name, status);
    let mut page = String::with_capacity(drawing.len() + history.len() * 200 + 8_000);
    head(&mut page, &title, served);
    let _ = writeln!(
        page,
        "<h1>{}</h1><span class=\"badge {}\" id=\"status\">{}</span>",
        html_escape(&workflow.name),
        html_escape(&status.to_ascii_lowercase()),
        html_escape(status)
    );
    if let Some(secs) = execution.get("elapsed_seconds").and_then(Value::as_f64) {
        let _ = writeln!(page, "<span class=\"meta\">{secs} s</span>");
    }
    if let Some(error) = execution.get("error").and_then(Value::as_str) {
        let cause = execution.get("cause").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(page, "<span class=\"meta error\">{}: {}</span>", html_escape(error), html_escape(cause));
    }
    if status == "RUNNING" && served.is_some_and(|s| s.poll.is_some()) {
        page.push_str("<span class=\"meta live\" id=\"live\">live</span>\n");
    }
    page.push_str("<span class=\"legend\">");
    for s in
        [StateStatus::Succeeded, StateStatus::Caught, StateStatus::Failed, StateStatus::Running, StateStatus::Unreached]
    {
        let _ = write!(
            page,
            "<span class=\"key {c}\">{c} {n}</span>",
            c = s.class(),
            n = counts.get(&s).copied().unwrap_or(0)
        );
    }
    page.push_str("</span>\n</header>\n<main>\n<section class=\"graph\">\n");
    page.push_str(&drawing);
    page.push_str("</section>\n<section class=\"detail\" id=\"detail\"><p class=\"hint\">Click a state or an event to see its data.</p></section>\n</main>\n");
    if let Some(ops) = journal.filter(|_| progress.is_some()) {
        page.push_str("<section class=\"history\">\n<h2>Progress (the journal: no history is stored yet)</h2>\n");
        page.push_str("<table id=\"journal\"><thead><tr><th>operation</th><th>type</th><th>state</th><th>status</th><th>starts</th></tr></thead>\n<tbody>\n");
        for op in ops {
            let text = |key: &str| op.get(key).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                html_escape(&text("id").unwrap_or_default()),
                html_escape(&text("type").unwrap_or_default()),
                html_escape(&text("name").unwrap_or_default()),
                html_escape(&text("status").unwrap_or_default()),
                html_escape(&text("starts").unwrap_or_default())
            );
        }
        page.push_str("</tbody></table>\n</section>\n");
    }
    let _ = writeln!(
        page,
        "<section class=\"history\">\n<h2>History <input id=\"filter\" type=\"search\" placeholder=\"filter by type or state\" aria-label=\"filter the history\"> <span class=\"pager\"><button id=\"prev\" type=\"button\">&lt; previous</button> <span id=\"range\">{}</span> <button id=\"next\" type=\"button\">next &gt;</button></span></h2>",
        range_text(0, history.len().min(PAGE_ROWS), history.len())
    );
    let _ = writeln!(
        page,
        "<table id=\"events\" data-events=\"{}\"><thead><tr><th>id</th><th>time</th><th>type</th><th>state</th></tr></thead>\n<tbody>",
        history.len()
    );
    // The first page is in the HTML (readable without the script); the script renders the others.
    for (position, event) in history.iter().enumerate().take(PAGE_ROWS) {
        let text =
            |pointer: &str| event.pointer(pointer).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        let kind = text("/type").unwrap_or_default();
        let class = if is_bad(&kind) { " class=\"bad\"" } else { "" };
        let _ = writeln!(
            page,
            "<tr data-event=\"{position}\"{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(&text("/id").unwrap_or_default()),
            html_escape(&text("/timestamp").unwrap_or_default()),
            html_escape(&kind),
            html_escape(&text("/details/name").unwrap_or_default())
        );
    }
    page.push_str("</tbody></table>\n</section>\n");
    let _ = writeln!(page, "<script type=\"application/json\" id=\"wfc-data\">{}</script>", script_json(&data));
    script_open(&mut page, served);
    page.push_str(PAGE_SCRIPT);
    page.push_str("</body>\n</html>\n");
    page
}

fn is_bad(kind: &str) -> bool {
    kind.ends_with("Failed") || kind.ends_with("TimedOut") || kind.ends_with("Aborted")
}

fn range_text(from: usize, to: usize, total: usize) -> String {
    if total == 0 { "no events".to_owned() } else { format!("events {}–{} of {}", from + 1, to, total) }
}

/// The page for a definition that does not validate: every diagnostic with its line and column,
/// and the source with those lines marked.
pub fn diagnostics_page(
    name: &str,
    source: &str,
    diagnostics: &[crate::diagnostics::LocatedDiagnostic],
    served: Option<&Served>,
) -> String {
    let mut page = String::with_capacity(source.len() * 2 + 8_000);
    head(&mut page, &format!("{name} — does not validate"), served);
    let errors = diagnostics.iter().filter(|d| d.severity == crate::Severity::Error).count();
    let _ = writeln!(
        page,
        "<h1>{}</h1><span class=\"badge failed\">does not validate</span><span class=\"meta error\">{errors} error{}</span>",
        html_escape(name),
        if errors == 1 { "" } else { "s" }
    );
    page.push_str("</header>\n<section class=\"history\">\n<h2>Diagnostics</h2>\n<table id=\"diagnostics\"><thead><tr><th>where</th><th>code</th><th>severity</th><th>message</th></tr></thead>\n<tbody>\n");
    for d in diagnostics {
        let severity = if d.severity == crate::Severity::Error { "error" } else { "warning" };
        let help = d.help.as_deref().map(|h| format!(" (help: {h})")).unwrap_or_default();
        let _ = writeln!(
            page,
            "<tr class=\"{}\"><td><a href=\"#L{line}\">line {line}, column {}</a></td><td>{}</td><td>{severity}</td><td>{}</td></tr>",
            if severity == "error" { "bad" } else { "" },
            d.column,
            html_escape(&d.code),
            html_escape(&format!("{}{help}", d.message)),
            line = d.line,
        );
    }
    page.push_str("</tbody></table>\n<h2>Definition</h2>\n");
    let marked: HashSet<usize> = diagnostics.iter().flat_map(|d| d.line..=d.end_line.max(d.line)).collect();
    page.push_str(&source_listing(source, &marked));
    page.push_str("</section>\n</body>\n</html>\n");
    page
}

/// A definition's text with numbered lines (`id="L7"`), the `marked` ones highlighted.
pub fn source_listing(source: &str, marked: &HashSet<usize>) -> String {
    let mut page = String::with_capacity(source.len() * 2);
    page.push_str("<pre class=\"source\">");
    for (i, line) in source.lines().enumerate() {
        let n = i + 1;
        let class = if marked.contains(&n) { " class=\"marked\"" } else { "" };
        let _ = writeln!(
            page,
            "<span id=\"L{n}\"{class}><i>{n:>4}</i> {}</span>",
            html_escape(&line.replace('\t', "    "))
        );
    }
    page.push_str("</pre>\n");

    page
}

/// JSON that is safe inside a `<script>` element: nothing in it can end the element or be read
/// as a line terminator by older JavaScript parsers.
fn script_json(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Text for HTML (text or a quoted attribute value): see `html_escape`.
pub fn escape(s: &str) -> String {
    html_escape(s)
}

/// HTML text and attribute values: the drawing's escaping (control and bidi characters shown as
/// `\u{...}`, the five special characters as entities) serves HTML as it serves SVG.
fn html_escape(s: &str) -> String {
    xml(&display_text(s, usize::MAX))
}

const PAGE_STYLE: &str = r#"<style>
body { font: 13px/1.4 system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; margin: 0; color: #222; }
header { display: flex; flex-wrap: wrap; gap: 10px; align-items: baseline; padding: 10px 16px; border-bottom: 1px solid #ddd; }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 15px; margin: 8px 0; display: flex; gap: 12px; align-items: center; }
.badge { padding: 2px 8px; border-radius: 10px; font-weight: 600; background: #eee; }
.badge.succeeded { background: #e3f4e4; color: #1b5e20; }
.badge.failed, .badge.timed_out, .badge.aborted { background: #fde7e7; color: #b71c1c; }
.badge.running { background: #e3eefc; color: #0d47a1; }
.meta { color: #555; }
.meta.error { color: #b71c1c; }
.legend { margin-left: auto; display: flex; gap: 6px; }
.key { padding: 1px 6px; border-radius: 4px; border: 1px solid #ccc; font-size: 11px; }
.key.succeeded { background: #e3f4e4; } .key.failed { background: #fde7e7; } .key.caught { background: #fff0db; }
.key.running { background: #e3eefc; } .key.unreached { background: #fafafa; color: #888; }
main { display: flex; gap: 12px; padding: 12px 16px; align-items: flex-start; }
.graph { flex: 1 1 auto; overflow: auto; border: 1px solid #e4e4e4; border-radius: 6px; max-height: 80vh; }
.graph .state { cursor: pointer; }
.detail { flex: 0 0 360px; border: 1px solid #e4e4e4; border-radius: 6px; padding: 8px 12px; max-height: 80vh; overflow: auto; }
.detail h3 { font-size: 14px; margin: 4px 0 8px; word-break: break-all; }
.detail pre { background: #f7f7f9; padding: 8px; border-radius: 4px; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.hint { color: #888; }
.history { padding: 0 16px 24px; }
table { border-collapse: collapse; width: 100%; font-size: 12px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eee; }
tbody tr { cursor: pointer; }
tbody tr:hover { background: #f3f6fb; }
tr.bad td { color: #b71c1c; }
tr.selected { background: #efe3f7 !important; }
nav { display: flex; gap: 10px; } nav a { color: #0d47a1; }
.pager { font-weight: normal; font-size: 12px; color: #555; }
.meta.live { color: #0d47a1; }
.iteration { margin: 4px 0 8px; } .iteration input { width: 6em; }
pre.source { background: #f7f7f9; padding: 8px; font-size: 12px; overflow: auto; }
pre.source span { display: block; } pre.source i { color: #999; font-style: normal; }
pre.source .marked { background: #fde7e7; }
</style>
"#;

/// The page's behaviour: show a clicked event's details or a clicked state's inputs and outputs,
/// filter and page the history table, and (served) reload when a running execution moves on.
/// Values go through `textContent` only. (The `<script>` tag is written by the caller, with the
/// served page's nonce.)
const PAGE_SCRIPT: &str = r#"
(function () {
  const data = JSON.parse(document.getElementById('wfc-data').textContent);
  const detail = document.getElementById('detail');
  const tbody = document.querySelector('#events tbody');
  const range = document.getElementById('range');
  const size = data.pageRows;
  let shown = data.history.map(function (_, i) { return i; });
  let first = 0;
  let selected = new Set();
  function show(title, sections) {
    detail.replaceChildren();
    const h = document.createElement('h3');
    h.textContent = title;
    detail.append(h);
    for (const [label, value] of sections) {
      const b = document.createElement('b');
      b.textContent = label;
      const pre = document.createElement('pre');
      pre.textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
      detail.append(b, pre);
    }
  }
  function cell(tr, text) {
    const td = document.createElement('td');
    td.textContent = text === undefined || text === null ? '' : String(text);
    tr.append(td);
  }
  function bad(type) { return /(Failed|TimedOut|Aborted)$/.test(type || ''); }
  // Only one page of rows is in the document at a time.
  function render() {
    const rows = [];
    for (const i of shown.slice(first, first + size)) {
      const e = data.history[i];
      const tr = document.createElement('tr');
      tr.dataset.event = String(i);
      if (bad(e.type)) tr.classList.add('bad');
      if (selected.has(i)) tr.classList.add('selected');
      cell(tr, e.id); cell(tr, e.timestamp); cell(tr, e.type); cell(tr, e.details && e.details.name);
      rows.push(tr);
    }
    tbody.replaceChildren.apply(tbody, rows);
    range.textContent = shown.length === 0 ? 'no events'
      : 'events ' + (first + 1) + '–' + Math.min(first + size, shown.length) + ' of ' + shown.length;
  }
  function showEvent(i) {
    const e = data.history[i];
    selected = new Set([i]);
    document.querySelectorAll('.wfc-graph .state.selected').forEach(function (g) { g.classList.remove('selected'); });
    show('#' + e.id + ' ' + e.type, [['timestamp', e.timestamp], ['details', e.details || {}]]);
  }
  tbody.addEventListener('click', function (ev) {
    const tr = ev.target.closest('tr');
    if (!tr || tr.dataset.event === undefined) return;
    showEvent(Number(tr.dataset.event));
    render();
  });
  document.getElementById('prev').addEventListener('click', function () { first = Math.max(0, first - size); render(); });
  document.getElementById('next').addEventListener('click', function () {
    if (first + size < shown.length) first += size;
    render();
  });
  function clickState(g) {
    const name = data.states[g.id];
    const mine = [];
    data.history.forEach(function (e, i) { if (e.details && e.details.name === name) mine.push(i); });
    selected = new Set(mine);
    document.querySelectorAll('.wfc-graph .state.selected').forEach(function (s) { s.classList.remove('selected'); });
    // Show the page holding the state's first event.
    const at = mine.length ? shown.indexOf(mine[0]) : -1;
    if (at >= 0) first = at - (at % size);
    render();
    const sections = [['status', (g.getAttribute('class') || '').split(' ').slice(2).join(' ') || 'not reached']];
    g.classList.add('selected');
    mine.slice(0, 50).forEach(function (i) {
      const e = data.history[i];
      if (/StateEntered$/.test(e.type)) sections.push(['#' + e.id + ' input', e.details.input]);
      if (/StateExited$/.test(e.type)) sections.push(['#' + e.id + ' output', e.details.output]);
    });
    if (mine.length > 50) sections.push(['more', (mine.length - 50) + ' more events of this state: filter the history by its name']);
    (data.journal || []).filter(function (op) { return op.name === name; }).forEach(function (op) {
      sections.push(['operation ' + op.id, op]);
    });
    show(name, sections);
    iterationControl(g, name);
  }
  // ----- one Map iteration -----
  // Each event's line of control: an event chains to the previous event of its line
  // (previousEventId), and a Map iteration's line starts with its MapIterationStarted, so
  // following the chain names the iterations (and nested ones) an event belongs to.
  function lineOf() {
    const byId = new Map();
    const lines = [];
    data.history.forEach(function (e, i) {
      const before = byId.has(e.previousEventId) ? lines[byId.get(e.previousEventId)] : null;
      lines.push(e.type === 'MapIterationStarted' && e.details
        ? { map: e.details.name, index: e.details.index, parent: before } : before);
      byId.set(e.id, i);
    });
    return lines;
  }
  function inIteration(line, map, index) {
    for (let l = line; l; l = l.parent) if (l.map === map && l.index === index) return true;
    return false;
  }
  // The statuses and edges taken in `events`: `annotate`'s rule (wfc-core/src/render/report.rs).
  function annotateEvents(events, running) {
    const entered = new Map(), exited = new Map(), open = new Map(), sequence = [], failedExits = [];
    events.forEach(function (e, position) {
      const kind = e.type || '';
      const name = e.details && typeof e.details.name === 'string' ? e.details.name : null;
      if (name !== null && /StateEntered$/.test(kind)) {
        if (!entered.has(name)) entered.set(name, []);
        entered.get(name).push(position);
        sequence.push([position, name]);
        open.set(name, false);
      } else if (name !== null && /StateExited$/.test(kind)) {
        exited.set(name, (exited.get(name) || 0) + 1);
        if (open.get(name) === true) failedExits.push([name, position]);
        open.delete(name);
      } else if (!/^Execution/.test(kind) && /(Failed|TimedOut)$/.test(kind)) {
        for (const k of open.keys()) open.set(k, true);
      }
    });
    const ids = Object.keys(data.states);
    const byName = new Map();
    ids.forEach(function (id) {
      const n = data.states[id];
      if (!byName.has(n)) byName.set(n, []);
      byName.get(n).push(id);
    });
    const caught = new Set();
    failedExits.forEach(function ([name, position]) {
      const first = (byName.get(name) || [])[0];
      if (first === undefined) return;
      const targets = data.edges[first].filter(function (ed) { return ed[1] !== null; });
      const after = sequence.find(function ([p, n]) { return p > position && targets.some(function (t) { return t[1] === n; }); });
      if (after && targets.find(function (t) { return t[1] === after[1]; })[2]) caught.add(name);
    });
    const statuses = {};
    ids.forEach(function (id) {
      const name = data.states[id];
      const entries = entered.get(name) || [];
      const left = exited.get(name) || 0;
      let s;
      if (!entries.length) s = 'unreached';
      else if (caught.has(name)) s = 'caught';
      else if (left >= entries.length) s = 'succeeded';
      else {
        const last = entries[entries.length - 1];
        const later = data.edges[id].some(function (ed) {
          return ed[2] && ed[1] !== null && (entered.get(ed[1]) || []).some(function (p) { return p > last; });
        });
        s = later ? 'caught' : running ? 'running' : 'failed';
      }
      statuses[id] = s;
    });
    const taken = new Set();
    for (let k = 1; k < sequence.length; k++) {
      (byName.get(sequence[k - 1][1]) || []).forEach(function (a) {
        (byName.get(sequence[k][1]) || []).forEach(function (b) {
          if (data.edges[a].some(function (ed) { return ed[0] === b; })) taken.add(a + ' ' + b);
        });
      });
    }
    data.starts.forEach(function ([start, first]) { if (statuses[first] !== 'unreached') taken.add(start + ' ' + first); });
    ids.forEach(function (id) {
      const ended = statuses[id] === 'succeeded'
        || (statuses[id] === 'failed' && data.edges[id].every(function (ed) { return ed[1] === null; }));
      data.edges[id].forEach(function (ed) { if (!ed[2] && ed[1] === null && ended) taken.add(id + ' ' + ed[0]); });
    });
    return { statuses: statuses, taken: taken };
  }
  // Colors the item processor of Map state `g` from iteration `index` (null: every iteration,
  // as the page was drawn), shows that iteration's events in the table and its states' data.
  function selectIteration(g, name, index) {
    const prefix = g.id + '_m_';
    const inner = Array.from(document.querySelectorAll('.wfc-graph .state, .wfc-graph .edge'))
      .filter(function (el) { return el.id.startsWith(prefix); });
    inner.forEach(function (el) {
      if (el.dataset.aggregate === undefined) el.dataset.aggregate = el.getAttribute('class') || '';
    });
    if (index === null) {
      inner.forEach(function (el) { el.setAttribute('class', el.dataset.aggregate); });
      delete g.dataset.iteration;
      shown = data.history.map(function (_, i) { return i; });
    } else {
      const lines = lineOf();
      const mine = [];
      lines.forEach(function (l, i) { if (inIteration(l, name, index)) mine.push(i); });
      const events = mine.map(function (i) { return data.history[i]; });
      const ended = events.some(function (e) { return /^MapIteration(Succeeded|Failed|Aborted)$/.test(e.type); });
      const result = annotateEvents(events, data.status === 'RUNNING' && !ended);
      inner.forEach(function (el) {
        if (el.classList.contains('state')) {
          statusClasses.forEach(function (c) { el.classList.remove(c); });
          el.classList.add(result.statuses[el.id] || 'unreached');
        } else {
          el.classList.toggle('taken', result.taken.has(el.dataset.from + ' ' + el.dataset.to));
        }
      });
      g.dataset.iteration = String(index);
      shown = mine;
    }
    first = 0;
    recount();
    render();
  }
  // The iteration selector of a clicked Map state that has iterations in the history.
  function iterationControl(g, name) {
    const count = data.history.filter(function (e) {
      return e.type === 'MapIterationStarted' && e.details && e.details.name === name;
    }).length;
    if (!count) return;
    const box = document.createElement('div');
    box.className = 'iteration';
    const label = document.createElement('label');
    label.textContent = 'iteration ';
    const input = document.createElement('input');
    input.id = 'iteration';
    input.type = 'number';
    input.min = '0';
    input.max = String(count - 1);
    input.placeholder = 'all';
    if (g.dataset.iteration !== undefined) input.value = g.dataset.iteration;
    label.append(input);
    const of = document.createElement('span');
    of.textContent = ' of ' + count + ' (0–' + (count - 1) + '; empty: all) ';
    const all = document.createElement('button');
    all.type = 'button';
    all.textContent = 'all iterations';
    box.append(label, of, all);
    detail.insertBefore(box, detail.children[1] || null);
    input.addEventListener('change', function () {
      const n = Number(input.value);
      selectIteration(g, name, input.value === '' || !Number.isInteger(n) ? null : n);
    });
    all.addEventListener('click', function () { input.value = ''; selectIteration(g, name, null); });
  }
  document.querySelectorAll('.wfc-graph .state').forEach(function (g) {
    g.addEventListener('click', function (ev) { ev.stopPropagation(); clickState(g); });
  });
  document.getElementById('filter').addEventListener('input', function (ev) {
    const q = ev.target.value.toLowerCase();
    shown = [];
    data.history.forEach(function (e, i) {
      const text = [e.id, e.timestamp, e.type, e.details && e.details.name].join(' ').toLowerCase();
      if (q === '' || text.includes(q)) shown.push(i);
    });
    first = 0;
    render();
  });
  // A new event's color for its state, while the execution runs: entered is running, exited
  // succeeded. (Errors reload the page: whether one was caught or retried is the server's call.)
  const statusClasses = ['succeeded', 'failed', 'caught', 'running', 'unreached'];
  function color(e) {
    const name = e.details && e.details.name;
    const cls = /StateEntered$/.test(e.type) ? 'running' : /StateExited$/.test(e.type) ? 'succeeded' : null;
    if (!cls || typeof name !== 'string') return;
    document.querySelectorAll('.wfc-graph .state').forEach(function (g) {
      if (data.states[g.id] !== name) return;
      statusClasses.forEach(function (c) { g.classList.remove(c); });
      g.classList.add(cls);
    });
  }
  function recount() {
    document.querySelectorAll('.legend .key').forEach(function (k) {
      const c = statusClasses.find(function (s) { return k.classList.contains(s); });
      if (c) k.textContent = c + ' ' + document.querySelectorAll('.wfc-graph .state.' + c).length;
    });
  }
  // Appends new events to the table (the rows the filter keeps), and colors their states.
  function append(events) {
    const q = document.getElementById('filter').value.toLowerCase();
    let last = data.history.length ? data.history[data.history.length - 1].id : 0;
    for (const e of events) {
      if (e.id <= last) continue;
      last = e.id;
      const i = data.history.push(e) - 1;
      const text = [e.id, e.timestamp, e.type, e.details && e.details.name].join(' ').toLowerCase();
      if (q === '' || text.includes(q)) shown.push(i);
      color(e);
    }
    document.getElementById('events').dataset.events = String(data.history.length);
    recount();
    render();
  }
  // Served by `wfc serve` and still running: fetch the events stored since the last one shown.
  if (data.poll && data.status === 'RUNNING') {
    const live = document.getElementById('live');
    const tick = function () {
      const last = data.history.length ? data.history[data.history.length - 1].id : 0;
      fetch(data.poll + '&after=' + last, { credentials: 'same-origin', cache: 'no-store' })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (now) {
          const events = now.events || [];
          // Ended (the final colors), an error to judge, or a page drawn from the journal.
          if (now.status !== data.status || events.some(function (e) { return bad(e.type); })
              || (data.fromJournal && events.length)) {
            location.reload();
            return;
          }
          if (events.length) append(events);
          document.body.dataset.polled = String(Number(document.body.dataset.polled || 0) + 1);
          setTimeout(tick, 1000);
        })
        .catch(function (e) { if (live) live.textContent = 'live updates stopped (' + e + ')'; });
    };
    setTimeout(tick, 1000);
  }
  document.body.dataset.ready = 'yes';
  // When the page was usable, in ms since navigation started (docs/benchmarks.md).
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  // `#selftest`: click the first entered state and the first event, and record what the detail
  // panel showed, so a headless browser's DOM dump proves the page works (wfc-cli's tests).
  if (location.hash === '#selftest') {
    const state = document.querySelector('.wfc-graph .state:not(.unreached)');
    if (state) clickState(state);
    document.body.dataset.selftestState = detail.textContent;
    if (data.history.length) { showEvent(shown[0]); render(); }
    document.body.dataset.selftestEvent = detail.textContent;
  }
  // `#state=NAME`: click that state (the UI's test opens a page on a chosen state), and with
  // `&iteration=N` (a Map state) choose that iteration.
  const hash = location.hash.startsWith('#state=') ? location.hash.slice(7).split('&iteration=') : null;
  if (hash !== null) {
    const wanted = decodeURIComponent(hash[0]);
    const g = Array.from(document.querySelectorAll('.wfc-graph .state')).find(function (s) { return data.states[s.id] === wanted; });
    if (g) clickState(g);
    const input = document.getElementById('iteration');
    if (g && input && hash.length > 1) {
      input.value = hash[1];
      input.dispatchEvent(new Event('change'));
    }
    document.body.dataset.selftestState = detail.textContent;
  }
})();
</script>
"#;
