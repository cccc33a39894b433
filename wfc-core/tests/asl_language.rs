//! Variables (`Assign`) and JSONata in the ASL front end: the diagnostics for what AWS rejects
//! (each with its code and the 1-based line:column it points at), and what valid definitions
//! lower to.

use wfc_core::Source;
use wfc_ir::{Assign, Condition, JsonataTemplate, Seconds, StateKind, WaitDuration};

/// (what, definition, code, line, column)
type Case = (&'static str, &'static str, &'static str, usize, usize);

const CASES: &[Case] = &[
    (
        "bad JSONata syntax",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Output\": \"{% $states.input.( %}\", \"End\": true}}}",
        "WFC0901",
        2,
        35,
    ),
    (
        "$eval is not available",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Output\": \"{% $eval('1') %}\", \"End\": true}}}",
        "WFC0901",
        2,
        39,
    ),
    (
        "Parameters in a JSONata state",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Parameters\": {}, \"End\": true}}}",
        "WFC0902",
        2,
        42,
    ),
    (
        "Arguments in a JSONPath state",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Arguments\": {}, \"End\": true}}}",
        "WFC0902",
        2,
        42,
    ),
    (
        "Condition in a JSONPath Choice",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Choice\", \"Choices\": [{\"Condition\": true, \"Variable\": \"$.a\", \"IsNull\": true, \"Next\": \"B\"}], \"Default\": \"B\"},\n  \"B\": {\"Type\": \"Succeed\"}}}",
        "WFC0902",
        2,
        40,
    ),
    (
        "JSONata rule without Condition",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Choice\", \"Choices\": [{\"Next\": \"B\"}], \"Default\": \"B\"},\n  \"B\": {\"Type\": \"Succeed\"}}}",
        "WFC0910",
        2,
        39,
    ),
    (
        "JSONPath state in a JSONata machine",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"QueryLanguage\": \"JSONPath\", \"End\": true}}}",
        "WFC0903",
        2,
        42,
    ),
    (
        "variable name with a sub-path",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Assign\": {\"x.y\": 1}, \"End\": true}}}",
        "WFC0905",
        2,
        36,
    ),
    (
        "states is reserved",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Assign\": {\"states\": 1}, \"End\": true}}}",
        "WFC0905",
        2,
        36,
    ),
    (
        "Assign not an object",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Assign\": [1], \"End\": true}}}",
        "WFC0908",
        2,
        35,
    ),
    (
        "intrinsic in CausePath that returns no string",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Fail\", \"Error\": \"E\", \"CausePath\": \"States.ArrayLength($.a)\"}}}",
        "WFC0909",
        2,
        52,
    ),
    (
        "bad JSONata in MaxConcurrency",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"M\", \"States\": {\n  \"M\": {\"Type\": \"Map\", \"MaxConcurrency\": \"{% 1 + %}\", \"ItemProcessor\": {\"StartAt\": \"I\", \"States\": {\"I\": {\"Type\": \"Pass\", \"End\": true}}}, \"End\": true}}}",
        "WFC0901",
        2,
        42,
    ),
    (
        "MaxConcurrency expression in a JSONPath state",
        "{\"StartAt\": \"M\", \"States\": {\n  \"M\": {\"Type\": \"Map\", \"MaxConcurrency\": \"{% 1 %}\", \"ItemProcessor\": {\"StartAt\": \"I\", \"States\": {\"I\": {\"Type\": \"Pass\", \"End\": true}}}, \"End\": true}}}",
        "WFC0201",
        2,
        42,
    ),
    (
        "ToleratedFailureCountPath in a JSONata state",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"M\", \"States\": {\n  \"M\": {\"Type\": \"Map\", \"ToleratedFailureCountPath\": \"$.n\", \"ItemProcessor\": {\"ProcessorConfig\": {\"Mode\": \"DISTRIBUTED\", \"ExecutionType\": \"STANDARD\"}, \"StartAt\": \"I\", \"States\": {\"I\": {\"Type\": \"Pass\", \"End\": true}}}, \"End\": true}}}",
        "WFC0902",
        2,
        24,
    ),
    (
        "Credentials not an object",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": \"arn:aws:iam::1:role/R\", \"End\": true}}}",
        "WFC0911",
        2,
        57,
    ),
    (
        "Credentials without RoleArn",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {}, \"End\": true}}}",
        "WFC0911",
        2,
        57,
    ),
    (
        "unknown field in Credentials",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {\"RoleArn\": \"arn:aws:iam::1:role/R\", \"ExternalId\": \"x\"}, \"End\": true}}}",
        "WFC0911",
        2,
        94,
    ),
    (
        "RoleArn and RoleArn.$",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {\"RoleArn\": \"a\", \"RoleArn.$\": \"$.r\"}, \"End\": true}}}",
        "WFC0911",
        2,
        74,
    ),
    (
        "RoleArn not a string",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {\"RoleArn\": 7}, \"End\": true}}}",
        "WFC0911",
        2,
        69,
    ),
    (
        "bad path in RoleArn.$",
        "{\"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {\"RoleArn.$\": \"$.a[?(@.b\"}, \"End\": true}}}",
        "WFC0401",
        2,
        77,
    ),
    (
        "RoleArn.$ in a JSONata state",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {\"RoleArn.$\": \"$.r\"}, \"End\": true}}}",
        "WFC0911",
        2,
        58,
    ),
    (
        "bad JSONata in RoleArn",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"T\", \"States\": {\n  \"T\": {\"Type\": \"Task\", \"Resource\": \"r\", \"Credentials\": {\"RoleArn\": \"{% $x( %}\"}, \"End\": true}}}",
        "WFC0901",
        2,
        69,
    ),
    (
        "bad intrinsic in ErrorPath",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Fail\", \"ErrorPath\": \"States.Format('{}')\"}}}",
        "WFC0407",
        2,
        39,
    ),
];

#[test]
fn each_invalid_definition_gets_its_code_at_its_place() {
    let mut failures = Vec::new();
    for (what, text, code, line, column) in CASES {
        match wfc_core::asl::load(Source { path: "t.json", text }) {
            Ok(_) => failures.push(format!("{what}: accepted, expected {code}")),
            Err(d) => match d.located().into_iter().find(|l| l.code == *code) {
                Some(l) if (l.line, l.column) == (*line, *column) => {}
                Some(l) => failures.push(format!(
                    "{what}: {code} at {}:{}, expected {line}:{column}\n{}",
                    l.line,
                    l.column,
                    d.render(false)
                )),
                None => failures.push(format!("{what}: no {code}; got:\n{}", d.render(false))),
            },
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), CASES.len(), failures.join("\n\n"));
}

/// What AWS accepts (recorded) but is most likely a mistake: a warning with its code at its
/// place, and the definition still loads. Reading a never-assigned variable fails at run time
/// (`States.QueryEvaluationError` in JSONata, as AWS records it); a `.$` key in a JSONata
/// template is kept literally.
const WARNING_CASES: &[Case] = &[
    (
        ".$ key in a JSONata template",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Output\": {\"x.$\": \"$.a\"}, \"End\": true}}}",
        "WFC0902",
        2,
        36,
    ),
    (
        "variable read but never assigned (path)",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Parameters\": {\"x.$\": \"$missing.a\"}, \"End\": true}}}",
        "WFC0906",
        2,
        47,
    ),
    (
        "variable read but never assigned (JSONata)",
        "{\"QueryLanguage\": \"JSONata\", \"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Output\": \"{% $nope + 1 %}\", \"End\": true}}}",
        "WFC0906",
        2,
        35,
    ),
    (
        "variable read but never assigned (intrinsic argument)",
        "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Pass\", \"Parameters\": {\"x.$\": \"States.Format('{}', $who)\"}, \"End\": true}}}",
        "WFC0906",
        2,
        47,
    ),
    (
        "a sibling branch's variable is not visible",
        "{\"StartAt\": \"P\", \"States\": {\"P\": {\"Type\": \"Parallel\", \"End\": true, \"Branches\": [\n  {\"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Pass\", \"Assign\": {\"x\": 1}, \"End\": true}}},\n  {\"StartAt\": \"B\", \"States\": {\"B\": {\"Type\": \"Pass\", \"OutputPath\": \"$x\", \"End\": true}}}]}}}",
        "WFC0906",
        3,
        67,
    ),
    (
        "an inner scope assigning an outer variable",
        "{\"StartAt\": \"I\", \"States\": {\"I\": {\"Type\": \"Pass\", \"Assign\": {\"x\": 1}, \"Next\": \"P\"}, \"P\": {\"Type\": \"Parallel\", \"End\": true, \"Branches\": [\n  {\"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Pass\", \"Assign\": {\"x\": 2}, \"End\": true}}}]}}}",
        "WFC0907",
        2,
        64,
    ),
];

#[test]
fn what_aws_accepts_is_a_warning_at_its_place() {
    let mut failures = Vec::new();
    for (what, text, code, line, column) in WARNING_CASES {
        match wfc_core::asl::load(Source { path: "t.json", text }) {
            Err(d) => failures.push(format!("{what}: refused:\n{}", d.render(false))),
            Ok(loaded) => match loaded.warnings.located().into_iter().find(|l| l.code == *code) {
                Some(l) if (l.line, l.column) == (*line, *column) => {}
                Some(l) => {
                    failures.push(format!("{what}: {code} at {}:{}, expected {line}:{column}", l.line, l.column))
                }
                None => failures.push(format!("{what}: no warning {code}")),
            },
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        WARNING_CASES.len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_wait_at_aws_bound_loads() {
    let w = load("{\"StartAt\": \"W\", \"States\": {\"W\": {\"Type\": \"Wait\", \"Seconds\": 2147483647, \"End\": true}}}");
    let StateKind::Wait(wait) = &w.machine.states[0].kind else { panic!("not a Wait") };
    assert_eq!(wait.duration, WaitDuration::Seconds(wfc_ir::MAX_WAIT_SECONDS));
}

fn load(text: &str) -> wfc_ir::Workflow {
    match wfc_core::asl::load(Source { path: "t.json", text }) {
        Ok(l) => l.workflow,
        Err(d) => panic!("rejected:\n{}", d.render(false)),
    }
}

#[test]
fn jsonata_states_lower_to_their_fields() {
    let wf = load(
        r#"{"QueryLanguage": "JSONata", "StartAt": "T", "States": {
          "T": {"Type": "Task", "Resource": "r", "TimeoutSeconds": "{% 5 %}",
                "Arguments": {"a": "{% $states.input.a %}", "b": 1}, "Output": "{% $states.result %}",
                "Assign": {"v": "{% $states.result.v %}"}, "Next": "C"},
          "C": {"Type": "Choice", "Choices": [{"Condition": "{% $v > 1 %}", "Next": "W"}], "Default": "W"},
          "W": {"Type": "Wait", "Seconds": "{% $v %}", "End": true}}}"#,
    );
    let StateKind::Task(t) = &wf.machine.states[0].kind else { panic!("task") };
    assert!(matches!(t.arguments, Some(JsonataTemplate::Object(_))));
    assert!(matches!(t.output, Some(JsonataTemplate::Expr(_))));
    assert!(matches!(t.assign, Some(Assign::Jsonata(_))));
    assert!(matches!(t.timeout, Some(Seconds::Jsonata(_))));
    let StateKind::Choice(c) = &wf.machine.states[1].kind else { panic!("choice") };
    assert!(matches!(c.choices[0].condition, Condition::Jsonata(_)));
    let StateKind::Wait(w) = &wf.machine.states[2].kind else { panic!("wait") };
    assert!(matches!(w.duration, WaitDuration::SecondsJsonata(_)));
    // The IR round-trips through JSON (how generated code embeds it).
    let json = serde_json::to_string(&wf).expect("serialize");
    let back: wfc_ir::Workflow = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, wf);
}

#[test]
fn task_credentials_lower_in_both_languages() {
    let wf = load(
        r#"{"StartAt": "A", "States": {
          "A": {"Type": "Task", "Resource": "r", "Credentials": {"RoleArn": "arn:aws:iam::1:role/R"}, "Next": "B"},
          "B": {"Type": "Task", "Resource": "r", "Credentials": {"RoleArn.$": "States.Format('arn:aws:iam::{}:role/R', $.a)"}, "Next": "C"},
          "C": {"Type": "Task", "Resource": "r", "QueryLanguage": "JSONata", "Credentials": {"RoleArn": "{% $states.input.r %}"}, "End": true}}}"#,
    );
    let credentials = |i: usize| match &wf.machine.states[i].kind {
        StateKind::Task(t) => t.credentials.clone(),
        _ => panic!("task"),
    };
    assert!(matches!(credentials(0), Some(wfc_ir::TaskCredentials::JsonPath(wfc_ir::Template::Literal(_)))));
    assert!(matches!(credentials(1), Some(wfc_ir::TaskCredentials::JsonPath(wfc_ir::Template::Object(_)))));
    assert!(matches!(credentials(2), Some(wfc_ir::TaskCredentials::Jsonata(JsonataTemplate::Object(_)))));
}

#[test]
fn jsonata_map_limits_lower_to_expressions() {
    let wf = load(
        r#"{"QueryLanguage": "JSONata", "StartAt": "M", "States": {
          "M": {"Type": "Map", "MaxConcurrency": "{% $states.input.n %}",
                "ToleratedFailureCount": "{% 1 %}", "ToleratedFailurePercentage": "{% 2.5 %}",
                "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                  "StartAt": "I", "States": {"I": {"Type": "Pass", "End": true}}}, "End": true}}}"#,
    );
    let StateKind::Map(m) = &wf.machine.states[0].kind else { panic!("map") };
    assert_eq!(m.max_concurrency_jsonata.as_ref().map(|e| e.as_str().trim()), Some("$states.input.n"));
    let d = m.distributed.as_ref().expect("distributed");
    assert!(matches!(d.tolerated_failure_count, Some(wfc_ir::distributed::Count::Jsonata(_))));
    assert!(matches!(d.tolerated_failure_percentage, Some(wfc_ir::distributed::Percentage::Jsonata(_))));
    let json = serde_json::to_string(&wf).expect("serialize");
    let back: wfc_ir::Workflow = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, wf);
}

#[test]
fn a_map_iteration_may_reuse_a_name_and_reads_outer_variables() {
    load(
        r#"{"StartAt": "I", "States": {
          "I": {"Type": "Pass", "Assign": {"outer": 1}, "Next": "M"},
          "M": {"Type": "Map", "ItemProcessor": {"StartAt": "A", "States": {
                  "A": {"Type": "Pass", "Assign": {"inner.$": "$outer"}, "Next": "B"},
                  "B": {"Type": "Pass", "OutputPath": "$inner", "End": true}}},
                "Assign": {"after.$": "$[0]"}, "End": true}}}"#,
    );
}
