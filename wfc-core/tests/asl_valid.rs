//! Valid definitions load and lower into the IR as expected: the 2016 spec's own examples
//! (Hello World, Choice, Parallel, Wait, Retry/Catch), their YAML versions, and a definition
//! using the AWS additions.

use std::path::PathBuf;

use wfc_core::ir::{Condition, Jitter, Operand, Operator, Seconds, StateKind, Template, Transition, WaitDuration};
use wfc_core::{Loaded, Source};

fn fixture(name: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/asl/valid").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    (format!("tests/fixtures/asl/valid/{name}"), text)
}

fn load(name: &str) -> Loaded {
    let (path, text) = fixture(name);
    match wfc_core::asl::load(Source { path: &path, text: &text }) {
        Ok(loaded) => loaded,
        Err(d) => panic!("{name} should load, got:\n{}", d.render(false)),
    }
}

#[test]
fn every_valid_fixture_loads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/asl/valid");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("fixture dir") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        let loaded = load(&name);
        assert!(!loaded.workflow.machine.states.is_empty(), "{name}");
        count += 1;
    }
    assert!(count >= 9, "only {count} fixtures");
}

#[test]
fn hello_world() {
    let loaded = load("hello_world.asl.json");
    let wf = &loaded.workflow;
    assert_eq!(wf.name, "hello_world");
    assert_eq!(wf.comment.as_deref(), Some("A simple minimal example of the States language"));
    assert_eq!(wf.machine.start_at, 0);
    let s = &wf.machine.states[0];
    assert_eq!(s.name, "Hello World");
    let loc = s.location.expect("location");
    assert_eq!((loc.line, loc.column), (5, 5));
    match &s.kind {
        StateKind::Task(t) => {
            assert_eq!(t.resource, "arn:aws:lambda:us-east-1:123456789012:function:HelloWorld");
            assert_eq!(t.transition, Transition::End);
            assert!(t.input_path.as_ref().is_some_and(|p| p.as_str() == "$"));
            assert!(t.timeout.is_none(), "AWS has no default TimeoutSeconds");
            assert!(t.retry.is_empty() && t.catch.is_empty());
        }
        other => panic!("expected a Task, got {other:?}"),
    }
    assert!(loaded.warnings.items.is_empty());
}

#[test]
fn yaml_and_json_hello_world_lower_to_the_same_ir() {
    let json = load("hello_world.asl.json").workflow;
    let yaml = load("hello_world.asl.yaml").workflow;
    assert_eq!(json.machine.states[0].kind, yaml.machine.states[0].kind);
    assert_eq!(json.comment, yaml.comment);
    assert_eq!(yaml.machine.states[0].location.map(|l| (l.line, l.column)), Some((4, 3)));
}

#[test]
fn choice_example() {
    let wf = load("choice.asl.json").workflow;
    let m = &wf.machine;
    let StateKind::Choice(c) = &m.states[0].kind else { panic!("not a choice") };
    assert_eq!(c.default, m.find("DefaultState"));
    assert_eq!(c.choices.len(), 2);
    assert_eq!(Some(c.choices[0].next), m.find("Public"));
    match &c.choices[0].condition {
        Condition::Not(inner) => match inner.as_ref() {
            Condition::Compare(cmp) => {
                assert_eq!(cmp.variable.as_str(), "$.type");
                assert_eq!(cmp.operator, Operator::StringEquals);
                assert_eq!(cmp.operand, Operand::Literal(serde_json::json!("Private")));
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    match &c.choices[1].condition {
        Condition::And(parts) => assert_eq!(parts.len(), 2),
        other => panic!("{other:?}"),
    }
    let yaml = load("choice.asl.yml").workflow;
    assert_eq!(
        yaml.machine.states.iter().map(|s| &s.kind).collect::<Vec<_>>(),
        m.states.iter().map(|s| &s.kind).collect::<Vec<_>>()
    );
}

#[test]
fn parallel_example() {
    let wf = load("parallel.asl.json").workflow;
    let StateKind::Parallel(p) = &wf.machine.states[0].kind else { panic!("not parallel") };
    assert_eq!(p.branches.len(), 2);
    assert_eq!(p.branches[0].states[0].name, "LookupAddress");
    assert_eq!(p.transition, Transition::Next(1));
    assert_eq!(wf.machines().len(), 5);
    assert_eq!(wf.resources().len(), 4);
}

#[test]
fn wait_examples() {
    let wf = load("wait.asl.json").workflow;
    let durations: Vec<WaitDuration> = wf
        .machine
        .states
        .iter()
        .filter_map(|s| match &s.kind {
            StateKind::Wait(w) => Some(w.duration.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(durations.len(), 4);
    assert_eq!(durations[0], WaitDuration::Seconds(10));
    assert_eq!(durations[1], WaitDuration::Timestamp("2016-03-14T01:59:00Z".to_owned()));
    assert!(matches!(&durations[2], WaitDuration::TimestampPath(p) if p.as_str() == "$.expirydate"));
    assert!(matches!(&durations[3], WaitDuration::SecondsPath(p) if p.as_str() == "$.delay"));
}

#[test]
fn retry_and_catch_examples() {
    let wf = load("retry_catch.asl.json").workflow;
    let m = &wf.machine;
    let StateKind::Task(x) = &m.states[0].kind else { panic!() };
    assert_eq!(x.retry.len(), 2);
    assert_eq!(x.retry[0].error_equals, vec!["ErrorA", "ErrorB"]);
    assert_eq!((x.retry[0].interval_seconds, x.retry[0].max_attempts, x.retry[0].backoff_rate), (1, 2, 2.0));
    assert_eq!((x.retry[1].interval_seconds, x.retry[1].max_attempts, x.retry[1].backoff_rate), (5, 3, 2.0));
    assert_eq!(x.catch[0].next, m.find("Z").expect("Z"));
    let StateKind::Task(y) = &m.states[1].kind else { panic!() };
    assert_eq!(y.timeout, Some(Seconds::Fixed(300)));
    assert_eq!(y.heartbeat, Some(Seconds::Fixed(60)));
    assert_eq!(y.retry[1].max_delay_seconds, Some(60));
    assert_eq!(y.retry[1].jitter, Jitter::Full);
    assert_eq!(y.catch[0].result_path.as_ref().map(|p| p.as_str()), Some("$.error-info"));
    let StateKind::Pass(noop) = &m.states[2].kind else { panic!() };
    assert_eq!(noop.result, Some(serde_json::json!({"x-datum": 0.381018, "y-datum": 622.2269926397355})));
    let StateKind::Pass(recovery) = &m.states[3].kind else { panic!() };
    assert!(recovery.result_path.is_none(), "ResultPath: null discards the result");
    let Some(Template::Object(fields)) = &recovery.parameters else { panic!("{:?}", recovery.parameters) };
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["error", "execution", "fixed", "nested"]);
    assert!(matches!(&fields[0].1, Template::Path(p) if p.as_str() == "$.error-info.Error"));
    assert!(matches!(&fields[1].1, Template::Path(p) if p.as_str() == "$$.Execution.Id"));
    assert_eq!(fields[2].1, Template::Literal(serde_json::json!({"list": [1, 2, 3]})));
    assert!(matches!(&fields[3].1, Template::Array(items) if items.len() == 2));
}

#[test]
fn aws_additions_in_yaml() {
    let loaded = load("everything.asl.yaml");
    let wf = &loaded.workflow;
    assert_eq!(wf.name, "everything");
    assert_eq!(wf.version.as_deref(), Some("1.0"));
    assert_eq!(wf.timeout_seconds, Some(3600));
    let StateKind::Task(t) = &wf.machine.states[0].kind else { panic!() };
    assert_eq!(t.resource, "check-stock");
    assert!(matches!(&t.timeout, Some(Seconds::Path(p)) if p.as_str() == "$.timeout"));
    assert_eq!(t.retry[0].max_attempts, 0);
    assert_eq!(t.retry[1].backoff_rate, 1.0);
    assert!(matches!(&t.result_selector, Some(Template::Object(f)) if f[0].0 == "available"));
    let StateKind::Choice(c) = &wf.machine.states[1].kind else { panic!() };
    assert!(c.input_path.is_none(), "InputPath: null");
    let Condition::Or(parts) = &c.choices[1].condition else { panic!() };
    let ops: Vec<(Operator, bool)> = parts
        .iter()
        .map(|p| match p {
            Condition::Compare(cmp) => (cmp.operator, matches!(cmp.operand, Operand::Path(_))),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        ops,
        [
            (Operator::NumericGreaterThan, true),
            (Operator::StringMatches, false),
            (Operator::TimestampLessThan, false),
            (Operator::IsPresent, false)
        ]
    );
    let StateKind::Fail(f) = &wf.machine.states[4].kind else { panic!() };
    assert_eq!(f.error_path.as_ref().map(|p| p.as_str()), Some("$.error.Error"));
    assert!(loaded.warnings.items.is_empty(), "{}", loaded.warnings);
}

#[test]
fn choice_without_default_is_a_warning_not_an_error() {
    let text = r#"{"StartAt": "C", "States": {
  "C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": true, "Next": "D"}]},
  "D": {"Type": "Succeed"}}}"#;
    let loaded = wfc_core::asl::load(Source { path: "c.asl.json", text }).expect("valid");
    let located = loaded.warnings.located();
    assert_eq!(located.len(), 1);
    assert_eq!(located[0].code, "WFC0511");
    assert_eq!((located[0].line, located[0].column), (2, 3));
}

#[test]
fn workflow_name_is_the_stem_up_to_the_first_dot() {
    let text = r#"{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}"#;
    for (path, name) in [("workflows/order.asl.json", "order"), ("order.json", "order"), ("a\\b\\pay.v2.json", "pay")] {
        let wf = wfc_core::asl::load(Source { path, text }).expect("valid").workflow;
        assert_eq!(wf.name, name, "{path}");
    }
}
