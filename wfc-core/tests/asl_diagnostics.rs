//! Diagnostics as users see them: every problem collected in one run, no cascades, helpful
//! suggestions, and the rendered rustc-style output (insta snapshots).

use wfc_core::Source;

fn errors(path: &str, text: &str) -> wfc_core::Diagnostics {
    match wfc_core::asl::load(Source { path, text }) {
        Ok(_) => panic!("{path} should not load"),
        Err(d) => d,
    }
}

fn located_codes(d: &wfc_core::Diagnostics) -> Vec<(String, usize, usize)> {
    d.located().into_iter().map(|l| (l.code, l.line, l.column)).collect()
}

#[test]
fn all_problems_are_collected_in_source_order() {
    let text = r#"{
  "StartAt": "Start",
  "Version": 1,
  "States": {
    "Start": {"Type": "Pass", "Next": "CheckStok"},
    "CheckStock": {"Type": "Task", "Resource": "r", "TimeoutSeconds": -1, "End": true},
    "Wait": {"Type": "Wait", "Seconds": 1, "Timestamp": "2016-03-14T01:59:00Z", "End": true},
    "Bad": {"Type": "Pass", "InputPath": "nope", "End": true, "Extra": 1}
  }
}"#;
    let d = errors("multi.json", text);
    assert_eq!(
        located_codes(&d),
        [
            ("WFC0201".to_owned(), 3, 14),
            ("WFC0301".to_owned(), 5, 39),
            ("WFC0802".to_owned(), 6, 71),
            ("WFC0704".to_owned(), 7, 44),
            ("WFC0401".to_owned(), 8, 43),
            ("WFC0203".to_owned(), 8, 63),
        ]
    );
    // The broken Next makes reachability unreliable, so no "unreachable" noise for CheckStock,
    // Wait and Bad.
    assert!(d.items.iter().all(|i| i.code != "WFC0309"));
    let help = d.items.iter().find(|i| i.code == "WFC0301").and_then(|i| i.help.clone());
    assert_eq!(help.as_deref(), Some("did you mean `CheckStock`?"));
}

#[test]
fn an_unknown_state_type_does_not_cascade() {
    let text = r#"{"StartAt": "A", "States": {
  "A": {"Type": "Tsak", "Resource": "r", "Next": "B"},
  "B": {"Type": "Succeed"}}}"#;
    let d = errors("cascade.json", text);
    assert_eq!(located_codes(&d), [("WFC0204".to_owned(), 2, 17)]);
    assert_eq!(d.items[0].help.as_deref(), Some("did you mean `Task`?"));
}

#[test]
fn a_distributed_map_does_not_cascade() {
    let text = r#"{"StartAt": "M", "States": {
  "M": {"Type": "Map", "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"},
    "StartAt": "X", "States": {"X": {"Type": "Succeed"}}}, "Next": "B"},
  "B": {"Type": "Succeed"}}}"#;
    let d = errors("map.json", text);
    assert_eq!(located_codes(&d), [("WFC0222".to_owned(), 2, 70)]);
}

#[test]
fn unreachable_states_are_reported_when_the_graph_is_known() {
    let text = r#"{"StartAt": "A", "States": {
  "A": {"Type": "Task", "Resource": "r", "Next": "B", "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}]},
  "B": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": true, "Next": "C"}], "Default": "D"},
  "C": {"Type": "Succeed"},
  "D": {"Type": "Succeed"},
  "Caught": {"Type": "Fail"},
  "Lonely": {"Type": "Pass", "Next": "Lonelier"},
  "Lonelier": {"Type": "Pass", "End": true}}}"#;
    let d = errors("reach.json", text);
    assert_eq!(located_codes(&d), [("WFC0309".to_owned(), 7, 3), ("WFC0309".to_owned(), 8, 3)]);
}

#[test]
fn branches_are_closed_scopes() {
    let text = r#"{"StartAt": "P", "States": {
  "P": {"Type": "Parallel", "Next": "Done", "Branches": [
    {"StartAt": "B1", "States": {"B1": {"Type": "Pass", "Next": "B2"}}},
    {"StartAt": "B2", "States": {"B2": {"Type": "Pass", "Next": "Done"}}}]},
  "Done": {"Type": "Succeed"}}}"#;
    let d = errors("scopes.json", text);
    let codes: Vec<_> = located_codes(&d);
    assert_eq!(codes, [("WFC0302".to_owned(), 3, 65), ("WFC0302".to_owned(), 4, 65)]);
    assert!(d.items.iter().all(|i| i.help.as_deref().is_some_and(|h| h.contains("closed state machine"))));
}

#[test]
fn duplicate_state_names_show_both_positions() {
    let text = "{\"StartAt\": \"A\", \"States\": {\n  \"A\": {\"Type\": \"Parallel\", \"End\": true, \"Branches\": [\n    {\"StartAt\": \"A\", \"States\": {\"A\": {\"Type\": \"Succeed\"}}}]}}}";
    let d = errors("dup.json", text);
    let dup = d.items.iter().find(|i| i.code == "WFC0303").expect("WFC0303");
    assert_eq!(dup.labels.len(), 1);
    assert_eq!(&text[dup.span.clone()], "\"A\"");
    assert_eq!(&text[dup.labels[0].0.clone()], "\"A\"");
    assert!(dup.labels[0].0.start < dup.span.start);
}

#[test]
fn duplicate_json_keys_show_both_positions() {
    let text = "{\n  \"StartAt\": \"A\",\n  \"States\": {\"A\": {\"Type\": \"Succeed\", \"Type\": \"Pass\"}}\n}";
    let d = errors("dupkey.json", text);
    assert_eq!(located_codes(&d), [("WFC0105".to_owned(), 3, 39)]);
    assert_eq!(d.items[0].labels.len(), 1);
}

#[test]
fn warnings_alone_do_not_fail() {
    let text = r#"{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "r", "End": true,
  "Retry": [{"ErrorEquals": ["States.Runtime"]}], "Comment": ""}}}"#;
    let loaded = wfc_core::asl::load(Source { path: "warn.json", text }).expect("warnings only");
    let codes: Vec<&str> = loaded.warnings.items.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["WFC0610", "WFC0212"]);
    assert!(!loaded.warnings.has_errors());
}

#[test]
fn every_code_in_the_table_is_unique_and_well_formed() {
    let table = wfc_core::diagnostics::codes::TABLE;
    let mut seen = std::collections::BTreeSet::new();
    for (code, title) in table {
        assert!(seen.insert(*code), "{code} twice");
        assert!(code.len() == 7 && code.starts_with("WFC") && code[3..].chars().all(|c| c.is_ascii_digit()), "{code}");
        assert!(!title.is_empty());
    }
}

#[test]
fn render_unknown_next() {
    let text = r#"{
  "StartAt": "Start",
  "States": {
    "Start": {
      "Type": "Pass",
      "Next": "CheckStok"
    },
    "CheckStock": {
      "Type": "Succeed"
    }
  }
}"#;
    insta::assert_snapshot!(errors("workflows/order.asl.json", text).render(false));
}

#[test]
fn render_duplicate_state_and_many_operators() {
    let text = r#"{
  "StartAt": "Route",
  "States": {
    "Route": {
      "Type": "Choice",
      "Choices": [
        {"Variable": "$.n", "NumericEquals": 1, "NumericLessThan": 5, "Next": "Done"}
      ],
      "Default": "Done"
    },
    "Done": {"Type": "Succeed"},
    "Par": {"Type": "Parallel", "End": true, "Branches": [
      {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
    ]}
  }
}"#;
    insta::assert_snapshot!(errors("workflows/route.asl.json", text).render(false));
}

#[test]
fn render_yaml_problems() {
    let text = "StartAt: Wait\nStates:\n  Wait:\n    Type: Wait\n    Seconds: 1.5\n    Next: Done\n  Done:\n    Type: Succeed\n    End: true\n";
    insta::assert_snapshot!(errors("workflows/wait.asl.yaml", text).render(false));
}

#[test]
fn display_is_the_plain_rendering() {
    let d = errors("x.json", "{}");
    assert_eq!(d.to_string(), d.render(false));
    assert!(d.to_string().starts_with("error[WFC0202]: a state machine is missing the required field `StartAt`"));
}

#[test]
fn a_misspelt_field_is_one_diagnostic_not_two() {
    // "Nxt" is unknown (did you mean `Next`?) and is not also "neither Next nor End".
    let text = r#"{"StartAt": "A", "States": {
  "A": {"Type": "Pass", "Nxt": "B"},
  "B": {"Type": "Task", "Resorce": "r", "End": true}}}"#;
    let d = errors("typo.json", text);
    let got: Vec<(String, Option<String>)> = d.items.iter().map(|i| (i.code.to_owned(), i.help.clone())).collect();
    assert_eq!(
        got,
        [
            ("WFC0203".to_owned(), Some("did you mean `Next`?".to_owned())),
            ("WFC0203".to_owned(), Some("did you mean `Resource`?".to_owned())),
        ]
    );
}

#[test]
fn a_misspelt_type_is_named_in_the_help() {
    let d = errors("typo.json", "{\"StartAt\": \"A\", \"States\": {\"A\": {\"Typ\": \"Succeed\"}}}");
    assert_eq!(d.items.len(), 1);
    assert_eq!(d.items[0].code, "WFC0202");
    assert_eq!(d.items[0].help.as_deref(), Some("`Typ` is not a field; did you mean `Type`?"));
}

#[test]
fn empty_states_does_not_also_complain_about_start_at() {
    let d = errors("empty.json", "{\"StartAt\": \"A\", \"States\": {}}");
    let codes: Vec<&str> = d.items.iter().map(|i| i.code).collect();
    assert_eq!(codes, ["WFC0310"]);
}

#[test]
fn rendering_odd_spans_does_not_panic() {
    for (path, text) in [("e.json", ""), ("e.yaml", ""), ("w.json", "   \n\n"), ("u.json", "{\"é\": 1,}")] {
        let d = errors(path, text);
        assert!(d.render(false).contains("error[WFC01"), "{path}: {}", d.render(false));
        assert!(d.render(true).contains("WFC01"));
    }
}

#[test]
fn duplicate_keys_do_not_hide_validation_problems() {
    let text = r#"{"StartAt": "A", "States": {
  "A": {"Type": "Pass", "Next": "B"},
  "A": {"Type": "Succeed"},
  "B": {"Type": "Wait", "Seconds": -1, "End": true}}}"#;
    let d = errors("dupstate.json", text);
    // One report for the repeated key (not also "duplicate state name"), and the Wait problem.
    assert_eq!(located_codes(&d), [("WFC0105".to_owned(), 3, 3), ("WFC0703".to_owned(), 4, 36)]);
}

#[test]
fn a_path_value_without_a_dollar_key_is_a_warning() {
    let text = r#"{"StartAt": "A", "States": {
  "A": {"Type": "Pass", "Parameters": {"id": "$.order.id", "name": "$ave money"}, "End": true}}}"#;
    let loaded = wfc_core::asl::load(Source { path: "nodollar.json", text }).expect("valid with a warning");
    let located = loaded.warnings.located();
    assert_eq!(located.len(), 1, "{}", loaded.warnings);
    assert_eq!((located[0].code.as_str(), located[0].line, located[0].column), ("WFC0406", 2, 46));
    assert_eq!(located[0].help.as_deref(), Some("to select the value at the path, name the key `id.$`"));
}

#[test]
fn rendering_sorts_even_hand_built_diagnostics() {
    use wfc_core::{Diagnostic, Diagnostics};
    let text = "line one\nline two\n";
    let d = Diagnostics {
        path: "x.json".into(),
        text: text.into(),
        items: vec![Diagnostic::error("WFC0201", "second", 9..13), Diagnostic::warning("WFC0511", "first", 0..4)],
    };
    let located = d.located();
    assert_eq!(
        located.iter().map(|l| (l.line, l.column, l.end_line, l.end_column)).collect::<Vec<_>>(),
        [(1, 1, 1, 5), (2, 1, 2, 5)]
    );
    let rendered = d.render(false);
    assert!(rendered.find("warning[WFC0511]: first") < rendered.find("error[WFC0201]: second"), "{rendered}");
}

#[test]
fn every_path_form_of_the_ir_is_accepted() {
    for op in wfc_core::ir::Operator::ALL.into_iter().filter(|op| op.has_path_form()) {
        let text = format!(
            r#"{{"StartAt": "C", "States": {{"C": {{"Type": "Choice", "Default": "D", "Choices": [{{"Variable": "$.a", "{}Path": "$.b", "Next": "D"}}]}}, "D": {{"Type": "Succeed"}}}}}}"#,
            op.name()
        );
        let r = wfc_core::asl::load(Source { path: "p.json", text: &text });
        assert!(r.is_ok(), "{}: {}", op.name(), r.err().map(|d| d.render(false)).unwrap_or_default());
    }
    // The Is* tests and StringMatches have no Path form.
    let text = r#"{"StartAt": "C", "States": {"C": {"Type": "Choice", "Default": "D", "Choices": [{"Variable": "$.a", "IsNullPath": "$.b", "Next": "D"}]}, "D": {"Type": "Succeed"}}}"#;
    let d = errors("p.json", text);
    assert!(d.items.iter().any(|i| i.code == "WFC0203"));
}

#[test]
fn heartbeat_timeout_points_to_states_timeout() {
    let text = r#"{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "r", "End": true,
  "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "Next": "T"}]}}}"#;
    let d = errors("hb.json", text);
    assert_eq!(d.items.len(), 1);
    assert_eq!(d.items[0].code, "WFC0604");
    assert!(d.items[0].help.as_deref().is_some_and(|h| h.contains("`States.Timeout`")));
}

/// The parser's "not a Reference Path: ..." is not repeated after "must be a Reference Path:".
#[test]
fn a_bad_result_path_says_reference_path_once() {
    let text = r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "ResultPath": "$.a[*]", "End": true}}}"#;
    let diags = wfc_core::load(wfc_core::Source { path: "t.json", text }).err().expect("rejected");
    let message = &diags.items.first().expect("one diagnostic").message;
    assert!(message.starts_with("`ResultPath` must be a Reference Path: "), "{message}");
    assert_eq!(message.matches("Reference Path").count(), 2, "{message}");
    assert!(!message.contains("not a Reference Path"), "{message}");
}

/// Loads `text` as a build without the optional languages would (`Features::NONE`): what
/// `include_workflow!` does when wfc-runtime's `jsonata`/`json-schema` features are off.
fn errors_without_features(path: &str, text: &str) -> wfc_core::Diagnostics {
    let mut settings = wfc_core::Settings::new();
    settings.features(wfc_core::Features::NONE);
    match wfc_core::load_with(Source { path, text }, &settings) {
        Ok(_) => panic!("{path} should not load without the optional features"),
        Err(d) => d,
    }
}

#[test]
fn jsonata_without_its_feature_is_one_located_error_naming_the_feature() {
    // The machine's QueryLanguage and two expressions: one error, at the first use.
    let text = r#"{
  "QueryLanguage": "JSONata",
  "StartAt": "A",
  "States": {
    "A": {"Type": "Pass", "Output": "{% $states.input.n + 1 %}", "Next": "B"},
    "B": {"Type": "Pass", "Output": {"x": "{% $states.input %}"}, "End": true}
  }
}"#;
    let d = errors_without_features("jsonata.asl.json", text);
    assert_eq!(located_codes(&d), [("WFC0230".to_owned(), 2, 20)]);
    assert!(d.items[0].message.contains("cargo feature `jsonata`"), "{}", d.items[0].message);
    let help = d.items[0].help.as_deref().unwrap_or_default();
    assert!(help.contains(r#"features = ["jsonata"]"#), "{help}");
    // A state's own QueryLanguage is where it is reported when the machine uses JSONPath.
    let text = r#"{"StartAt": "A", "States": {
  "A": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% 1 %}", "End": true}}}"#;
    let d = errors_without_features("state.asl.json", text);
    assert_eq!(located_codes(&d), [("WFC0230".to_owned(), 2, 42)]);
    // With the feature (what this test build has: the workspace enables it), both load.
    if wfc_core::Features::COMPILED.jsonata {
        assert!(wfc_core::asl::load(Source { path: "state.asl.json", text }).is_ok());
    }
}

#[test]
fn a_json_schema_without_its_feature_is_one_located_error_naming_the_feature() {
    let text = r#"{
"id": "w", "name": "W",
"dataInputSchema": {"type": "object"},
"states": [{"name": "A", "type": "inject", "start": {"kind": "default"}, "data": {},
  "dataInputSchema": {"type": "object"}, "end": {"kind": "default"}}]
}"#;
    let d = errors_without_features("schema.sw.json", text);
    assert_eq!(located_codes(&d), [("WFC0230".to_owned(), 3, 20)]);
    assert!(d.items[0].message.contains("cargo feature `json-schema`"), "{}", d.items[0].message);
    let help = d.items[0].help.as_deref().unwrap_or_default();
    assert!(help.contains(r#"features = ["json-schema"]"#), "{help}");
}
