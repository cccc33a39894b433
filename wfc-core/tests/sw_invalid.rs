//! Invalid Serverless Workflow definitions, in JSON and in YAML: each case asserts the diagnostic
//! code and the text the diagnostic points at (the span's first line), so a wrong location fails.

use wfc_core::{Severity, Source};

/// (what, JSON text, YAML text, code, the text the span starts with)
type Case = (&'static str, &'static str, &'static str, &'static str, &'static str);

const FN: &str = r#""functions": [{"name": "greet", "resource": "r"}],"#;

fn json(body: &str) -> String {
    format!(
        "{{\n\"id\": \"w\",\n\"name\": \"W\",\n{FN}\n\"events\": [{{\"name\": \"Go\", \"type\": \"go\", \"source\": \"s\"}}],\n\"states\": [\n{body}\n]\n}}\n"
    )
}

fn yaml(body: &str) -> String {
    format!(
        "id: w\nname: W\nfunctions:\n- name: greet\n  resource: r\nevents:\n- name: Go\n  type: go\n  source: s\nstates:\n{body}"
    )
}

const CASES: &[Case] = &[
    (
        "undefined function",
        r#"{"name": "A", "type": "operation", "start": {"kind": "default"}, "actions": [{"functionRef": {"refName": "greeet"}}], "end": {"kind": "default"}}"#,
        "- name: A\n  type: operation\n  start:\n    kind: default\n  actions:\n  - functionRef:\n      refName: greeet\n  end:\n    kind: default\n",
        "WFC2010",
        "greeet",
    ),
    (
        "undefined event",
        r#"{"name": "A", "type": "event", "start": {"kind": "default"}, "onEvents": [{"eventRefs": ["Stop"], "actions": []}], "end": {"kind": "default"}}"#,
        "- name: A\n  type: event\n  start:\n    kind: default\n  onEvents:\n  - eventRefs: [Stop]\n    actions: []\n  end:\n    kind: default\n",
        "WFC2011",
        "Stop",
    ),
    (
        "undefined state",
        r#"{"name": "A", "type": "inject", "start": {"kind": "default"}, "data": {}, "transition": {"nextState": "Nowhere"}}"#,
        "- name: A\n  type: inject\n  start:\n    kind: default\n  data: {}\n  transition:\n    nextState: Nowhere\n",
        "WFC2012",
        "Nowhere",
    ),
    (
        "two start states",
        r#"{"name": "A", "type": "inject", "start": {"kind": "default"}, "data": {}, "end": {"kind": "default"}},
{"name": "B", "type": "inject", "start": {"kind": "ALSO"}, "data": {}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: inject\n  start:\n    kind: default\n  data: {}\n  end:\n    kind: default\n- name: B\n  type: inject\n  start:\n    kind: ALSO\n  data: {}\n  end:\n    kind: default\n",
        "WFC2020",
        "kind",
    ),
    (
        "switch as an end",
        r#"{"name": "A", "type": "switch", "start": {"kind": "default"}, "dataConditions": [{"condition": "{{ $.x }}", "transition": {"nextState": "A"}}], "end": {"kind": "default"}}"#,
        "- name: A\n  type: switch\n  start:\n    kind: default\n  dataConditions:\n  - condition: \"{{ $.x }}\"\n    transition:\n      nextState: A\n  end:\n    kind: default\n",
        "WFC2022",
        "kind",
    ),
    (
        "missing type",
        r#"{"name": "A", "start": {"kind": "default"}, "end": {"kind": "default"}}"#,
        "- name: A\n  start:\n    kind: default\n  end:\n    kind: default\n",
        "WFC2002",
        "name",
    ),
    (
        "missing timeDelay",
        r#"{"name": "A", "type": "delay", "start": {"kind": "default"}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: delay\n  start:\n    kind: default\n  end:\n    kind: default\n",
        "WFC2002",
        "name",
    ),
    (
        "bad duration",
        r#"{"name": "A", "type": "delay", "start": {"kind": "default"}, "timeDelay": "5 minutes", "end": {"kind": "default"}}"#,
        "- name: A\n  type: delay\n  start:\n    kind: default\n  timeDelay: 5 minutes\n  end:\n    kind: default\n",
        "WFC2040",
        "5 minutes",
    ),
    (
        "bad retry interval",
        r#"{"name": "A", "type": "operation", "start": {"kind": "default"}, "actions": [{"functionRef": "greet"}], "retry": [{"expression": "{{ $.error }}", "interval": "R2/PT"}], "end": {"kind": "default"}}"#,
        "- name: A\n  type: operation\n  start:\n    kind: default\n  actions:\n  - functionRef: greet\n  retry:\n  - expression: \"{{ $.error }}\"\n    interval: R2/PT\n  end:\n    kind: default\n",
        "WFC2040",
        "R2/PT",
    ),
    (
        "bad cron",
        r#"{"name": "A", "type": "inject", "start": {"kind": "scheduled", "schedule": {"cron": "99 * * * *"}}, "data": {}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: inject\n  start:\n    kind: scheduled\n    schedule:\n      cron: 99 * * * *\n  data: {}\n  end:\n    kind: default\n",
        "WFC2041",
        "99 * * * *",
    ),
    (
        "bad time zone",
        r#"{"name": "A", "type": "inject", "start": {"kind": "scheduled", "schedule": {"cron": "0 * * * *", "timezone": "Mars/Olympus"}}, "data": {}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: inject\n  start:\n    kind: scheduled\n    schedule:\n      cron: 0 * * * *\n      timezone: Mars/Olympus\n  data: {}\n  end:\n    kind: default\n",
        "WFC2041",
        "Mars/Olympus",
    ),
    (
        "bad interval",
        r#"{"name": "A", "type": "inject", "start": {"kind": "scheduled", "schedule": {"interval": "tomorrow/PT1H"}}, "data": {}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: inject\n  start:\n    kind: scheduled\n    schedule:\n      interval: tomorrow/PT1H\n  data: {}\n  end:\n    kind: default\n",
        "WFC2040",
        "tomorrow/PT1H",
    ),
    (
        "bad JsonPath",
        r#"{"name": "A", "type": "switch", "start": {"kind": "default"}, "dataConditions": [{"condition": "{{ $.a[?(@.b == }}", "transition": {"nextState": "B"}}], "default": {"nextState": "B"}},
{"name": "B", "type": "inject", "data": {}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: switch\n  start:\n    kind: default\n  dataConditions:\n  - condition: \"{{ $.a[?(@.b == }}\"\n    transition:\n      nextState: B\n  default:\n    nextState: B\n- name: B\n  type: inject\n  data: {}\n  end:\n    kind: default\n",
        "WFC2030",
        "{{ $.a[?(@.b == }}",
    ),
    (
        "unclosed expression",
        r#"{"name": "A", "type": "operation", "start": {"kind": "default"}, "actions": [{"functionRef": {"refName": "greet", "parameters": {"n": "Hi {{ $.name"}}}], "end": {"kind": "default"}}"#,
        "- name: A\n  type: operation\n  start:\n    kind: default\n  actions:\n  - functionRef:\n      refName: greet\n      parameters:\n        n: \"Hi {{ $.name\"\n  end:\n    kind: default\n",
        "WFC2030",
        "Hi {{ $.name",
    ),
    (
        // A subflow compiled nowhere is run by the handler under its id, which must not be a
        // function's name (a subflow merely not found is a note, tested below).
        "subflow not compiled in, named like a function",
        r#"{"name": "A", "type": "subflow", "start": {"kind": "default"}, "workflowId": "greet", "end": {"kind": "default"}}"#,
        "- name: A\n  type: subflow\n  start:\n    kind: default\n  workflowId: greet\n  end:\n    kind: default\n",
        "WFC2013",
        "greet",
    ),
    (
        "n_of_m without n",
        r#"{"name": "A", "type": "parallel", "start": {"kind": "default"}, "completionType": "n_of_m", "branches": [{"name": "B", "actions": [{"functionRef": "greet"}]}], "end": {"kind": "default"}}"#,
        "- name: A\n  type: parallel\n  start:\n    kind: default\n  completionType: n_of_m\n  branches:\n  - name: B\n    actions:\n    - functionRef: greet\n  end:\n    kind: default\n",
        "WFC2004",
        "n_of_m",
    ),
    (
        "neither transition nor end",
        r#"{"name": "A", "type": "inject", "start": {"kind": "default"}, "data": {}}"#,
        "- name: A\n  type: inject\n  start:\n    kind: default\n  data: {}\n",
        "WFC2024",
        "name",
    ),
    (
        "unknown state type",
        r#"{"name": "A", "type": "sleep", "start": {"kind": "default"}, "end": {"kind": "default"}}"#,
        "- name: A\n  type: sleep\n  start:\n    kind: default\n  end:\n    kind: default\n",
        "WFC2004",
        "sleep",
    ),
];

/// The source line a diagnostic's span starts on, from its start column.
fn pointed(text: &str, code: &str, path: &str) -> Vec<String> {
    let Err(diags) = wfc_core::load(Source { path, text }) else {
        panic!("{path}: expected {code}, but the definition loaded:\n{text}");
    };
    diags
        .located()
        .into_iter()
        .filter(|d| d.code == code && d.severity == Severity::Error)
        .map(|d| {
            let line = text.lines().nth(d.line - 1).unwrap_or_default();
            line.chars().skip(d.column - 1).collect::<String>()
        })
        .collect()
}

#[test]
fn invalid_definitions_point_at_the_problem_in_json_and_yaml() {
    let mut failures = Vec::new();
    for (what, j, y, code, starts) in CASES {
        for (path, text) in [("w.sw.json", json(j)), ("w.sw.yaml", yaml(y))] {
            let at = pointed(&text, code, path);
            let trim = |s: &str| s.trim_start_matches(['{', '"', '[', ' ']).to_owned();
            if !at.iter().any(|a| trim(a).starts_with(&trim(starts))) {
                let rendered =
                    wfc_core::load(Source { path, text: &text }).err().map(|d| d.render(false)).unwrap_or_default();
                failures.push(format!("{what} ({path}): expected {code} at `{starts}`, got {at:?}\n{rendered}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn diagnostics_are_rendered_with_the_file_and_code() {
    let text = json(CASES[0].1);
    let diags = wfc_core::load(Source { path: "w.sw.json", text: &text }).expect_err("invalid");
    let rendered = diags.render(false);
    assert!(rendered.contains("error[WFC2010]: no function is named `greeet`"), "{rendered}");
    assert!(rendered.contains("w.sw.json:"), "{rendered}");
    assert!(rendered.contains("the functions are: `greet`"), "{rendered}");
}

#[test]
fn the_event_based_service_invocation_example_lacks_event_types_so_each_takes_its_name() {
    // The draft's example omits `type` on both events (the schema requires it): each event's type
    // is its name, said in a warning at each (docs/semantics-sw.md).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/sw-check/VetAppointmentWorkflow.sw.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    let loaded = wfc_core::load(Source { path: "VetAppointmentWorkflow.sw.json", text: &text }).expect("valid");
    let warned = loaded.warnings.items.iter().filter(|d| d.code == "WFC2006" && d.severity == Severity::Warning);
    assert_eq!(warned.count(), 2, "{}", loaded.warnings.render(false));
    let ir = serde_json::to_string(&loaded.workflow).expect("IR");
    for name in ["MakeVetAppointment", "VetAppointmentInfo"] {
        assert!(ir.contains(&format!(r#""name":"{name}","source""#)), "{ir}");
        assert!(ir.contains(&format!(r#""event_type":"{name}""#)), "{name}'s type is its name: {ir}");
    }
}

#[test]
fn a_subflow_compiled_nowhere_is_a_note_and_the_handler_runs_it() {
    let body = r#"{"name": "A", "type": "subflow", "start": {"kind": "default"}, "workflowId": "ghost", "end": {"kind": "default"}}"#;
    let text = json(body);
    let loaded = wfc_core::load(Source { path: "w.sw.json", text: &text }).expect("a note, not an error");
    let notes: Vec<_> = loaded.warnings.located().into_iter().filter(|d| d.severity == Severity::Note).collect();
    assert_eq!(notes.len(), 1, "{}", loaded.warnings.render(false));
    assert_eq!(notes[0].code, "WFC2015");
    assert!(text.lines().nth(notes[0].line - 1).is_some_and(|l| l.contains("ghost")));
    assert!(loaded.warnings.render(false).starts_with("note[WFC2015]"), "{}", loaded.warnings.render(false));
    let resources: Vec<&str> = loaded.workflow.resources().into_iter().map(|(r, _)| r).collect();
    assert_eq!(resources, ["ghost"], "the handler gets a method for the subflow");
}
