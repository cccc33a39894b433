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

/// The page for one execution. `execution` is what `wfc run --history` prints: `status`,
/// `output` or `error`/`cause`, `elapsed_seconds`, `history`.
pub fn html(workflow: &Workflow, execution: &Value) -> String {
    let status = execution.get("status").and_then(Value::as_str).unwrap_or("UNKNOWN");
    let history: &[Value] = execution.get("history").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let mut names = Vec::new();
    let mut starts = Vec::new();
    collect(&workflow.machine, "", &mut names, &mut starts);
    let (annotations, statuses) = annotate_drawn(&names, starts, status, history);
    let drawing = svg_annotated(workflow, &annotations);
    let state_names: serde_json::Map<String, Value> =
        names.iter().map(|s| (s.id.clone(), Value::String(s.name.clone()))).collect();
    let data = json!({
        "status": status,
        "output": execution.get("output"),
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "history": history,
        "states": state_names,
    });

    let mut counts: HashMap<StateStatus, usize> = HashMap::new();
    for s in statuses.values() {
        *counts.entry(*s).or_default() += 1;
    }
    let title = format!("{} — {}", workflow.name, status);
    let mut page = String::with_capacity(drawing.len() + history.len() * 200 + 8_000);
    page.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n");
    let _ = writeln!(page, "<title>{}</title>", html_escape(&title));
    page.push_str(PAGE_STYLE);
    page.push_str("</head>\n<body>\n<header>\n");
    let _ = writeln!(
        page,
        "<h1>{}</h1><span class=\"badge {}\">{}</span>",
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
    page.push_str("<section class=\"history\">\n<h2>History <input id=\"filter\" type=\"search\" placeholder=\"filter by type or state\" aria-label=\"filter the history\"></h2>\n");
    page.push_str(
        "<table id=\"events\"><thead><tr><th>id</th><th>time</th><th>type</th><th>state</th></tr></thead>\n<tbody>\n",
    );
    for (position, event) in history.iter().enumerate() {
        let text =
            |pointer: &str| event.pointer(pointer).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        let kind = text("/type").unwrap_or_default();
        let class = if kind.ends_with("Failed") || kind.ends_with("TimedOut") || kind.ends_with("Aborted") {
            " class=\"bad\""
        } else {
            ""
        };
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
    page.push_str(PAGE_SCRIPT);
    page.push_str("</body>\n</html>\n");
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
tr.hidden { display: none; }
</style>
"#;

/// The page's behaviour: show a clicked event's details or a clicked state's inputs and outputs,
/// filter the table. Values go through `textContent` only.
const PAGE_SCRIPT: &str = r#"<script>
(function () {
  const data = JSON.parse(document.getElementById('wfc-data').textContent);
  const detail = document.getElementById('detail');
  const rows = Array.from(document.querySelectorAll('#events tbody tr'));
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
  function select(predicate) {
    rows.forEach(function (tr) { tr.classList.toggle('selected', predicate(tr)); });
    document.querySelectorAll('.wfc-graph .state.selected').forEach(function (g) { g.classList.remove('selected'); });
  }
  rows.forEach(function (tr) {
    tr.addEventListener('click', function () {
      const e = data.history[Number(tr.dataset.event)];
      select(function (r) { return r === tr; });
      show('#' + e.id + ' ' + e.type, [['timestamp', e.timestamp], ['details', e.details || {}]]);
    });
  });
  document.querySelectorAll('.wfc-graph .state').forEach(function (g) {
    g.addEventListener('click', function (ev) {
      ev.stopPropagation();
      const name = data.states[g.id];
      const mine = data.history.map(function (e, i) { return [e, i]; })
        .filter(function (p) { return p[0].details && p[0].details.name === name; });
      select(function (r) { return mine.some(function (p) { return String(p[1]) === r.dataset.event; }); });
      const sections = [['status', (g.getAttribute('class') || '').split(' ').slice(2).join(' ') || 'not reached']];
      g.classList.add('selected');
      mine.forEach(function (p) {
        const e = p[0];
        if (e.type.endsWith('StateEntered')) sections.push(['#' + e.id + ' input', e.details.input]);
        if (e.type.endsWith('StateExited')) sections.push(['#' + e.id + ' output', e.details.output]);
      });
      show(name, sections);
    });
  });
  document.getElementById('filter').addEventListener('input', function (ev) {
    const q = ev.target.value.toLowerCase();
    rows.forEach(function (tr) { tr.classList.toggle('hidden', q !== '' && !tr.textContent.toLowerCase().includes(q)); });
  });
  document.body.dataset.ready = 'yes';
  // `#selftest`: click the first entered state and the first event, and record what the detail
  // panel showed, so a headless browser's DOM dump proves the page works (wfc-cli's tests).
  if (location.hash === '#selftest') {
    const state = document.querySelector('.wfc-graph .state:not(.unreached)');
    if (state) state.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    document.body.dataset.selftestState = detail.textContent;
    if (rows[0]) rows[0].click();
    document.body.dataset.selftestEvent = detail.textContent;
  }
})();
</script>
"#;
