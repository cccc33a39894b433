//! End-to-end tests of the `wfc` binary: every command, its exit codes and its output shapes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod support;
use support::{scratch, write};

fn wfc() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wfc"));
    // Keep the compiled engine's cache out of the source tree.
    cmd.env("WFC_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("wfc-cache"));
    cmd.env_remove("RUST_LOG");
    cmd
}

fn run(args: &[&str]) -> Output {
    wfc().args(args).output().expect("the wfc binary runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("wfc exits normally")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("stdout is one JSON value ({e}): {}", stdout(o)))
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("tests").join("cases")
}

fn definition(name: &str) -> String {
    cases_dir().join("definitions").join(name).display().to_string()
}

const INVALID: &str =
    r#"{"StartAt": "Nope", "States": {"P": {"Type": "Pas", "Next": "Q"}, "R": {"Type": "Task", "End": true}}}"#;

// ---- check ----------------------------------------------------------------------------------

#[test]
fn check_valid_definition_exits_0() {
    let o = run(&["check", &definition("order.asl.json"), &definition("fun-with-math.asl.json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("error"), "{}", stderr(&o));
    // Each valid file is reported, with what it was checked as.
    let lines: Vec<String> = stderr(&o).lines().map(str::to_owned).collect();
    assert_eq!(
        lines,
        [
            format!("{}: ASL, 5 states, no problems", definition("order.asl.json")),
            format!("{}: ASL, 4 states, no problems", definition("fun-with-math.asl.json")),
        ],
        "{}",
        stderr(&o)
    );
}

#[test]
fn check_invalid_definition_reports_every_error_and_exits_1() {
    let dir = scratch("check-invalid");
    let bad = write(&dir, "order.asl.json", INVALID);
    let o = wfc().args(["check", "--color", "never", &bad]).output().unwrap();
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(err.contains("error[WFC"), "{err}");
    assert!(err.contains("order.asl.json:1:"), "rustc-style location: {err}");
    assert!(err.contains("did you mean `Pass`?"), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(last, format!("error: could not compile `{bad}` due to 3 previous errors"));
    assert!(!err.contains("\u{1b}["), "no color with --color never");
}

#[test]
fn check_mixed_files_exits_1_and_reports_only_the_bad_one() {
    let dir = scratch("check-mixed");
    let bad = write(&dir, "bad.asl.json", INVALID);
    let o = run(&["check", &definition("add.asl.json"), &bad]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(
        err.lines().filter(|l| l.contains("add.asl.json")).collect::<Vec<_>>(),
        [format!("{}: ASL, 1 state, no problems", definition("add.asl.json"))],
        "the valid file is mentioned only as checked: {err}"
    );
    assert_eq!(err.matches("could not compile").count(), 1, "{err}");
}

#[test]
fn check_json_prints_one_object_per_diagnostic() {
    let dir = scratch("check-json");
    let bad = write(&dir, "bad.asl.json", INVALID);
    let o = run(&["check", "--format", "json", &bad]);
    assert_eq!(code(&o), 1);
    let lines: Vec<Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).expect("each line is a JSON object")).collect();
    assert_eq!(lines.len(), 3, "{}", stdout(&o));
    for d in &lines {
        for key in ["code", "severity", "message", "file", "line", "column", "end_line", "end_column", "help"] {
            assert!(d.get(key).is_some(), "diagnostic lacks {key}: {d}");
        }
        assert_eq!(d["severity"], "error");
        assert_eq!(d["file"], bad.as_str());
        assert!(d["line"].as_u64().unwrap() >= 1 && d["column"].as_u64().unwrap() >= 1);
    }
    assert!(lines.iter().any(|d| d["help"] == "did you mean `Pass`?"), "{lines:?}");
}

#[test]
fn check_usage_and_io_errors_exit_2() {
    assert_eq!(code(&run(&["check"])), 2, "no files is a usage error");
    let o = run(&["check", "/nonexistent/wfc/definition.asl.json"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
    assert_eq!(code(&run(&["check", "--format", "xml", &definition("add.asl.json")])), 2);
    assert_eq!(code(&run(&["frobnicate"])), 2);
}

// ---- compile and graph ----------------------------------------------------------------------

#[test]
fn compile_prints_formatted_rust() {
    let o = run(&["compile", &definition("add.asl.json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let code_text = stdout(&o);
    assert!(code_text.contains("pub mod add {"), "{code_text}");
    assert!(code_text.contains("pub trait Handler"), "{code_text}");
    assert!(code_text.contains("\n    "), "formatted over several indented lines");
}

#[test]
fn compile_honours_output_module_name_and_runtime_path() {
    let dir = scratch("compile-options");
    let out = dir.join("out.rs");
    let o = run(&[
        "compile",
        &definition("add.asl.json"),
        "-o",
        &out.display().to_string(),
        "--module-name",
        "adder",
        "--runtime-path",
        "::my_runtime",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "the code goes to the file, not stdout");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("pub mod adder {"), "{text}");
    assert!(text.contains("::my_runtime::__private"), "{text}");
    assert!(!text.contains("::wfc_runtime::"), "{text}");
}

#[test]
fn compile_invalid_definition_exits_2_with_diagnostics() {
    let dir = scratch("compile-invalid");
    let bad = write(&dir, "bad.asl.json", INVALID);
    let o = run(&["compile", &bad]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("could not compile"), "{}", stderr(&o));
}

#[test]
fn graph_prints_mermaid_dot_and_svg() {
    let o = run(&["graph", &definition("choice-state-x.asl.json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("stateDiagram-v2"), "{text}");
    assert!(text.contains("ValueInTwenties"), "{text}");
    let o = run(&["graph", "--format", "dot", &definition("choice-state-x.asl.json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("digraph"), "{text}");
    assert!(text.trim_end().ends_with('}'), "{text}");
    let o = run(&["graph", "--format", "svg", &definition("choice-state-x.asl.json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{text}");
    assert!(text.contains(r#"data-state="ValueInTwenties""#), "{text}");
    assert!(text.trim_end().ends_with("</svg>"), "{text}");
    assert_eq!(code(&run(&["graph", "--format", "png", &definition("add.asl.json")])), 2);
}

/// The headless Chromium the report test drives: `chromium` (Debian's package) or Chrome on PATH.
/// Missing, the test says so and stops, unless `WFC_REQUIRE_CHROMIUM=1` (CI), where that fails.
fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        assert!(
            std::env::var("WFC_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "Chromium is required (WFC_REQUIRE_CHROMIUM=1) but none is on PATH"
        );
        eprintln!("no Chromium on PATH: the report is checked without a browser");
    }
    found
}

/// `wfc run --report` writes one page: the graph colored by the execution (a caught Task, the
/// Fail state, states never reached), the history, and a script that works in a real browser
/// opened offline (headless Chromium: the page's `#selftest` clicks a state and an event and
/// records what the detail panel showed).
#[test]
fn run_report_writes_a_page_that_works_offline() {
    let dir = scratch("report");
    let mocks = write(
        &dir,
        "mocks.json",
        r#"{"Check Stock": {"Return": {"ok": true}}, "Take Payment": {"Throw": {"Error": "Payment.Declined", "Cause": "card <b>expired</b>"}},
            "Refund Stock": {"Return": 3}}"#,
    );
    let page = dir.join("order.html");
    let definition = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wfc-core/tests/snapshots/fixtures/order.asl.json");
    let o = run(&[
        "run",
        &definition.display().to_string(),
        "--virtual-time",
        "--mocks",
        &mocks,
        "--input",
        r#"{"amount": 5, "items": [1]}"#,
        "--report",
        &page.display().to_string(),
    ]);
    assert_eq!(code(&o), 1, "the order fails at its Fail state: {}", stderr(&o));
    assert_eq!(stdout_json(&o)["error"], "OrderFailed");
    let html = std::fs::read_to_string(&page).expect("the report was written");
    assert!(html.contains(r#"class="state Task caught" id="s2" data-state="Take Payment""#), "{html}");
    assert!(html.contains(r#"class="state Fail failed""#), "{html}");
    assert!(html.contains(r#"class="state Parallel unreached""#), "{html}");
    assert!(
        html.contains("card &lt;b&gt;expired&lt;/b&gt;") || html.contains("card \\u003cb\\u003eexpired"),
        "the cause is text"
    );
    assert!(html.contains("<td>TaskStateEntered</td><td>Take Payment</td>"), "{html}");

    let Some(browser) = chromium() else { return };
    let url = format!("file://{}#selftest", page.display());
    let profile = dir.join("chromium-profile");
    let out = Command::new("timeout")
        .args(["120", browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--proxy-server=127.0.0.1:9", "--dump-dom", &url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains(r#"data-ready="yes""#),
        "the page's script ran offline:\n{}\n{dom}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The first state drawn with a status is Validate Order: its input is in the panel.
    assert!(dom.contains(r##"data-selftest-state="Validate Orderstatussucceeded#2 input"##), "{dom}");
    assert!(dom.contains(r##"data-selftest-event="#1 ExecutionStartedtimestamp"##), "{dom}");
}

/// `wfc run --report` on a definition that does not validate writes the page of its located
/// diagnostics (the definition's text shown as text) and fails as `wfc check` does.
#[test]
fn run_report_of_an_invalid_definition_locates_its_diagnostics() {
    let dir = scratch("report-invalid");
    let def = write(
        &dir,
        "bad.asl.json",
        "{\"StartAt\": \"A\",\n \"States\": {\"A\": {\"Type\": \"Pass\", \"Next\": \"<b>Nowhere</b>\"}}}",
    );
    let page = dir.join("bad.html");
    let o = run(&["run", &def, "--report", &page.display().to_string()]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).expect("the report was written");
    assert!(html.contains("does not validate"), "{html}");
    assert!(html.contains("<span id=\"L2\" class=\"marked\">"), "the Next on line 2 is marked: {html}");
    assert!(html.contains("<a href=\"#L2\">line 2, column "), "{html}");
    assert!(html.contains("&lt;b&gt;Nowhere&lt;/b&gt;") && !html.contains("<b>"), "{html}");
    assert!(html.contains("default-src 'none'"), "{html}");
}

// ---- run ------------------------------------------------------------------------------------

#[test]
fn run_succeeds_with_mocks_and_prints_status_and_output() {
    let dir = scratch("run-ok");
    let mocks = write(&dir, "mocks.json", r#"{"Add": {"return": 7}}"#);
    let o = run(&["run", &definition("add.asl.json"), "--input", r#"{"val1": 3, "val2": 4}"#, "--mocks", &mocks]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout_json(&o), json!({"status": "SUCCEEDED", "output": 7}));
}

#[test]
fn run_on_virtual_time_reports_elapsed_seconds_and_history() {
    let o = run(&[
        "run",
        &definition("wait-seconds-path.asl.json"),
        "--input",
        r#"{"delay": 3600}"#,
        "--virtual-time",
        "--history",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = stdout_json(&o);
    assert_eq!(v["status"], "SUCCEEDED");
    assert_eq!(v["output"], json!({"delay": 3600}));
    assert_eq!(v["elapsed_seconds"], 3600);
    let types: Vec<&str> = v["history"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"ExecutionStarted"));
    assert_eq!(types.last(), Some(&"ExecutionSucceeded"));
    assert!(types.contains(&"WaitStateEntered"), "{types:?}");
}

#[test]
fn run_history_records_assigned_variables_on_exit() {
    let dir = scratch("assigned-variables");
    let def = write(
        &dir,
        "assigned.asl.json",
        r#"{"StartAt": "Init", "States": {
          "Init": {"Type": "Pass", "Assign": {"x": 1, "s": "a \"q\"", "o": {"k": [1, null]}}, "Next": "Try"},
          "Try": {"Type": "Task", "Resource": "unmocked",
                  "Catch": [{"ErrorEquals": ["States.ALL"], "Assign": {"err.$": "$.Error"}, "Next": "Done"}],
                  "Next": "Done"},
          "Done": {"Type": "Pass", "End": true}}}"#,
    );
    let o = run(&["run", &def, "--virtual-time", "--history"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = stdout_json(&o);
    let exited = |name: &str| {
        let events = v["history"].as_array().unwrap();
        let exit = events
            .iter()
            .find(|e| e["details"]["name"] == name && e["type"].as_str().is_some_and(|t| t.ends_with("StateExited")));
        exit.cloned().unwrap_or_else(|| panic!("no exit of {name}: {v}"))
    };
    // Values are JSON-serialized strings, as AWS's GetExecutionHistory records them.
    let init = exited("Init");
    assert_eq!(
        init["details"]["assignedVariables"],
        json!({"x": "1", "s": "\"a \\\"q\\\"\"", "o": "{\"k\":[1,null]}"})
    );
    assert_eq!(init["details"]["assignedVariablesDetails"], json!({"truncated": false}));
    // A catcher's Assign is recorded on the exit of the state that caught.
    assert_eq!(exited("Try")["details"]["assignedVariables"], json!({"err": "\"Wfc.NoMock\""}));
    // A state without Assign records no variables.
    let done = exited("Done");
    assert!(done["details"].get("assignedVariables").is_none(), "{done}");
    assert!(done["details"].get("assignedVariablesDetails").is_none(), "{done}");
}

#[test]
fn run_without_virtual_time_has_no_elapsed_or_history() {
    let o = run(&["run", &definition("succeed.asl.json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout_json(&o), json!({"status": "SUCCEEDED", "output": {}}));
}

#[test]
fn run_failure_exits_1_with_error_and_cause() {
    let o = run(&["run", &definition("fail.asl.json")]);
    assert_eq!(code(&o), 1);
    assert_eq!(stdout_json(&o), json!({"status": "FAILED", "error": "ErrorA", "cause": "Kaiju attack"}));
}

#[test]
fn run_timed_out_exits_1() {
    let o = run(&["run", &definition("execution-timeout.asl.json"), "--virtual-time"]);
    assert_eq!(code(&o), 1);
    let v = stdout_json(&o);
    assert_eq!(v["status"], "TIMED_OUT");
    // AWS records a timed-out execution with neither an error nor a cause.
    assert_eq!((&v["error"], &v["cause"]), (&json!(null), &json!(null)));
    assert_eq!(v["elapsed_seconds"], 5);
}

#[test]
fn run_unmocked_task_fails_with_wfc_no_mock() {
    let o = run(&["run", &definition("hello-world.asl.json")]);
    assert_eq!(code(&o), 1);
    let v = stdout_json(&o);
    assert_eq!(v["error"], "Wfc.NoMock");
    let cause = v["cause"].as_str().unwrap();
    assert!(cause.contains("\"Hello World\"") && cause.contains("function:HelloWorld"), "{cause}");
}

#[test]
fn run_reads_input_files_and_step_functions_local_mocks() {
    let dir = scratch("run-sfn");
    let input = write(&dir, "input.json", r#"{"total": 30, "customer": "c-9"}"#);
    let mocks = definition("order-mocks.json");
    let o = run(&[
        "run",
        &definition("order.asl.json"),
        "--input-file",
        &input,
        "--mocks",
        &mocks,
        "--test-case",
        "RetryPath",
        "--virtual-time",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = stdout_json(&o);
    assert_eq!(v["output"]["payment"], json!({"id": "pay-2"}));
    assert_eq!(v["elapsed_seconds"], 6, "two retries wait 2 s and 4 s");
    let o = run(&[
        "run",
        &definition("order.asl.json"),
        "--input-file",
        &input,
        "--mocks",
        &mocks,
        "--test-case",
        "DeclinedPath",
    ]);
    assert_eq!(code(&o), 1);
    assert_eq!(stdout_json(&o)["error"], "OrderRejected");
}

#[test]
fn run_usage_errors_exit_2() {
    let mocks = definition("order-mocks.json");
    let order = definition("order.asl.json");
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", &order, "--mocks", &mocks],
        vec!["run", &order, "--mocks", &mocks, "--test-case", "NoSuchCase"],
        vec!["run", &order, "--test-case", "HappyPath"],
        vec!["run", &order, "--input", "{not json"],
        vec!["run", &order, "--input", "{}", "--input-file", "x.json"],
        vec!["run", &order, "--engine", "jit"],
        vec!["run", "/nonexistent.asl.json"],
    ];
    for args in cases {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?} prints no result");
    }
    let o = run(&["run", &order, "--mocks", &mocks]);
    assert!(stderr(&o).contains("--test-case"), "{}", stderr(&o));
}

#[test]
fn run_invalid_definition_exits_2() {
    let dir = scratch("run-invalid");
    let bad = write(&dir, "bad.asl.json", INVALID);
    let o = run(&["run", &bad]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("error[WFC"), "{}", stderr(&o));
}

// ---- test -----------------------------------------------------------------------------------

fn final_counts(text: &str) -> (usize, usize, usize) {
    let last = text.lines().last().unwrap_or_default();
    let nums: Vec<usize> = last.split([' ', ',']).filter_map(|w| w.parse().ok()).collect();
    assert_eq!(last, format!("{} passed, {} failed, {} skipped", nums[0], nums[1], nums[2]), "exact final line");
    (nums[0], nums[1], nums[2])
}

#[test]
fn test_command_passes_the_conformance_cases() {
    // Both engines, as CI must run them: a case passes only when the interpreter and the generated
    // code both pass it with identical histories.
    let o = run(&["test", &cases_dir().display().to_string(), "--engine", "both"]);
    let out = stdout(&o);
    assert_eq!(code(&o), 0, "{out}{}", stderr(&o));
    let (passed, failed, skipped) = final_counts(&out);
    assert!(passed >= 25, "at least 25 cases: {out}");
    assert_eq!(failed, 0);
    assert_eq!(skipped, 0, "no case is skipped now that the inline Map runs");
    assert!(out.contains("test map/order-kept-under-concurrency ... ok"), "{out}");
    // The committed baseline: a case that passed once must keep passing. Add names when cases
    // are added; removing one needs a reason in the commit.
    let baseline = std::fs::read_to_string(cases_dir().join("baseline-passing.txt")).expect("the baseline exists");
    let ok: std::collections::BTreeSet<&str> =
        out.lines().filter_map(|l| l.strip_prefix("test ")?.strip_suffix(" ... ok")).collect();
    let regressed: Vec<&str> = baseline.lines().filter(|name| !name.is_empty() && !ok.contains(name)).collect();
    assert!(regressed.is_empty(), "cases in tests/cases/baseline-passing.txt no longer pass: {regressed:?}\n{out}");
}

#[test]
fn test_command_reports_failures_with_a_pointer_and_exits_1() {
    let dir = scratch("test-failing");
    let def = definition("pass-no-op.asl.json");
    let case = json!([
        {"name": "wrong-output", "definition": def, "input": {"georefOf": "Home"},
         "expected": {"status": "SUCCEEDED", "output": {"georefOf": "Home", "coords": {"x-datum": 1, "y-datum": 622.2269926397355}}}},
        {"name": "wrong-status", "definition": def, "expected": {"status": "FAILED", "error": "X"}},
        {"name": "wrong-trace", "definition": def, "expected": {"status": "SUCCEEDED", "states_visited": ["No-op"], "elapsed_seconds": 1}},
        {"name": "right", "definition": def, "expected": {"status": "SUCCEEDED", "states_visited": ["No-op", "End"]}},
        {"name": "later", "skip": "not today", "definition": def, "expected": {"status": "SUCCEEDED"}}
    ]);
    write(&dir, "mixed.case.json", &case.to_string());
    write(
        &dir,
        "broken.case.json",
        r#"{"name": "broken", "definition": "x.asl.json", "expected": {"status": "DONE"}}"#,
    );
    let report = dir.join("report.json");
    let o = run(&["test", &dir.display().to_string(), "--json", &report.display().to_string()]);
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}");
    assert_eq!(final_counts(&out), (1, 4, 1), "{out}");
    assert!(out.contains("output at /coords/x-datum: expected 1, got 0.381018"), "{out}");
    assert!(out.contains("status: expected FAILED, got SUCCEEDED"), "{out}");
    assert!(out.contains("states_visited: first difference at index 1"), "{out}");
    assert!(out.contains("elapsed_seconds: expected 1, got 0"), "{out}");
    assert!(out.contains("expected.status must be one of"), "{out}");
    assert!(out.contains("later") && out.contains("not today"), "{out}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64(), report["skipped"].as_u64()),
        (Some(1), Some(4), Some(1))
    );
    let right = report["cases"].as_array().unwrap().iter().find(|c| c["name"] == "right").unwrap();
    assert_eq!(right["status"], "passed");
    assert_eq!(right["outcomes"]["interp"]["status"], "SUCCEEDED");
}

#[test]
fn test_command_filters_cases() {
    let o = run(&["test", &cases_dir().display().to_string(), "--filter", "spec/retry"]);
    let out = stdout(&o);
    assert_eq!(code(&o), 0, "{out}");
    let (passed, failed, skipped) = final_counts(&out);
    assert_eq!((failed, skipped), (0, 0));
    // The filter matches names and file paths: spec/retry.case.json holds the complex scenario too.
    let ran: Vec<&str> = out.lines().filter(|l| l.starts_with("test ")).collect();
    assert_eq!(passed, ran.len(), "{out}");
    assert!(ran.iter().any(|l| l.starts_with("test spec/complex-retry-scenario ")), "{out}");
    assert!(!ran.iter().any(|l| l.contains("choice")), "{out}");
    assert!(passed >= 4, "{out}");
}

#[test]
fn test_command_usage_errors_exit_2() {
    assert_eq!(code(&run(&["test"])), 2);
    assert_eq!(code(&run(&["test", "/nonexistent/cases"])), 2);
    assert_eq!(
        code(&run(&["test", &cases_dir().display().to_string(), "--engine", "both", "--filter", "x", "--bogus"])),
        2
    );
}

/// The compiled engine builds a cargo project (minutes on a cold cache); the case run above
/// covers agreement with the interpreter, this covers `wfc run --engine compiled`.
#[test]
fn compiled_engine_agrees_with_the_interpreter() {
    let o = run(&["run", &definition("fail.asl.json"), "--engine", "compiled", "--virtual-time"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        stdout_json(&o),
        json!({"status": "FAILED", "error": "ErrorA", "cause": "Kaiju attack", "elapsed_seconds": 0})
    );
    // The program builds against the runtime sources embedded in wfc, written into the cache:
    // nothing of this repository is needed (an installed wfc works without its clone).
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wfc-cache");
    // This run's program: the one holding fail.asl.json alone (the cache is shared).
    let program = std::fs::read_dir(cache.join("programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|dir| {
            let units: Vec<PathBuf> = std::fs::read_dir(dir.join("workflows"))
                .map(|d| d.map(|e| e.unwrap().path()).collect())
                .unwrap_or_default();
            units.len() == 1 && units[0].join("fail.asl.json").exists()
        })
        .expect("the program of this run");
    let text = std::fs::read_to_string(program.join("Cargo.toml")).unwrap();
    let dep = text.lines().find(|l| l.starts_with("wfc-runtime = ")).expect("a wfc-runtime dependency");
    assert!(dep.contains(&format!("path = \"{}", cache.join("sources").display())), "{dep}");
    // A rerun with nothing to rebuild says nothing about building.
    let o = run(&["run", &definition("fail.asl.json"), "--engine", "compiled", "--virtual-time"]);
    assert_eq!(stderr(&o), "", "a cached rerun is silent");

    // On a terminal, a build that has work to do says so in one line (without the "first build"
    // warning: the runtime is already built in this cache) and shows cargo's own progress.
    // `script` (util-linux, essential on Debian) gives the run a pseudo-terminal; the definition
    // is this test's own and unique to this run (the cache outlives a test run, and a rerun
    // would otherwise find the program built and print nothing), so its program is built now.
    let dir = scratch("compiled-terminal");
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let def = write(
        &dir,
        "terminal.asl.json",
        &format!(
            r#"{{"Comment": "cli.rs: compiled engine on a terminal, run {nonce}", "StartAt": "P", "States": {{"P": {{"Type": "Pass", "End": true}}}}}}"#
        ),
    );
    let command = format!("'{}' run '{def}' --engine compiled", env!("CARGO_BIN_EXE_wfc"));
    let o = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("WFC_CACHE_DIR", &cache)
        .env_remove("RUST_LOG")
        .env_remove("CARGO_TERM_QUIET")
        .output()
        .expect("script (util-linux) runs");
    let terminal = stdout(&o);
    assert!(o.status.success(), "{terminal}");
    assert!(terminal.contains("wfc: building the compiled engine in "), "{terminal}");
    assert!(!terminal.contains("first build"), "the runtime is built in this cache: {terminal}");
    assert!(terminal.contains("Compiling") && terminal.contains("Finished"), "cargo's progress: {terminal}");
    assert!(terminal.contains("SUCCEEDED"), "{terminal}");
}

#[test]
fn compiled_engine_reports_each_cases_own_name_for_a_shared_definition() {
    // Two case files with the same inline definition share one compiled module (the build cache
    // is keyed by the definition's text); each execution must still carry its own state machine
    // and execution name, which are run-time parameters, not baked into the module.
    let dir = scratch("shared-definition-names");
    let definition = json!({"StartAt": "Who", "States": {"Who": {"Type": "Pass", "End": true,
        "Parameters": {"machine.$": "$$.StateMachine.Name", "id.$": "$$.Execution.Id"}}}});
    for machine in ["alpha", "beta"] {
        let case = json!({"name": format!("{machine}-case"), "definition": definition, "expected": {
            "status": "SUCCEEDED",
            "output": {"machine": machine,
                       "id": format!("arn:aws:states:local:000000000000:execution:{machine}:{machine}-case")}}});
        write(&dir, &format!("{machine}.case.json"), &case.to_string());
    }
    for engine in ["compiled", "both"] {
        let o = run(&["test", &dir.display().to_string(), "--engine", engine]);
        let out = stdout(&o);
        assert_eq!(code(&o), 0, "{engine}: {out}{}", stderr(&o));
        assert_eq!(final_counts(&out), (2, 0, 0), "{engine}: {out}");
    }
}

/// Issue 19: `wfc --help` named 5 of 15 commands and docs/cli.md's synopsis omitted four. Every
/// command clap knows is listed by `--help` and has a `wfc NAME` line in the synopsis.
#[test]
fn help_and_the_cli_doc_list_every_command() {
    let out = run(&["--help"]);
    assert_eq!(code(&out), 0);
    let help = stdout(&out);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    // The commands of the issue's time; any added since must be listed too.
    for known in ["check", "compile", "graph", "run", "test", "executions", "worker", "callback", "event", "serve"] {
        assert!(commands.contains(&known), "`wfc --help` does not list `{known}`:\n{help}");
    }
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md")).unwrap();
    let synopsis = doc.split("```").nth(1).expect("docs/cli.md opens with a synopsis block");
    let missing: Vec<&&str> =
        commands.iter().filter(|c| !synopsis.lines().any(|l| l.starts_with(&format!("wfc {c} ")))).collect();
    assert!(missing.is_empty(), "docs/cli.md's synopsis has no line for {missing:?}");
}

/// `wfc run --lambda-endpoint`: Lambda resources invoked through the Invoke API of a fake Lambda
/// (support/lambda_fake.rs), SigV4-signed with the environment's credentials: success (the
/// `lambda:invoke` result is the Invoke response, a function ARN's its payload), a function error
/// caught by its name, an unknown function and an endpoint that does not answer, each failing
/// with Lambda's error and a cause naming the function and the endpoint; on virtual time too.
#[test]
fn run_invokes_lambda_resources_at_the_lambda_endpoint() {
    let fake = support::lambda_fake::LambdaFake::start();
    let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lambda/endpoint.asl.json").display().to_string();
    let lambda_run = |endpoint: &str, function: &str, extra: &[&str]| {
        let input = json!({"order": {"id": 7}, "fn": function}).to_string();
        let o = wfc()
            .args(["run", &def, "--input", &input, "--lambda-endpoint", endpoint])
            .args(extra)
            .env("AWS_ACCESS_KEY_ID", "AKIDLAMBDA")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL")
            .output()
            .unwrap();
        (o.status.code(), stdout_json(&o), stderr(&o))
    };
    for extra in [&[][..], &["--virtual-time"][..]] {
        let (status, out, err) = lambda_run(&fake.endpoint, "fails", extra);
        assert_eq!(status, Some(0), "{out} {err}");
        assert_eq!(out["status"], "SUCCEEDED", "{out}");
        let output = &out["output"];
        assert_eq!(output["invoked"], json!({"payload": {"echoed": {"order": {"id": 7}}}, "status": 200}), "{out}");
        assert_eq!(output["bare"], json!({"echoed": {"id": 7}}), "{out}");
        assert_eq!(output["caught"]["Error"], "CardDeclined", "{out}");
        assert_eq!(output["caught"]["Cause"], support::lambda_fake::ERROR_DOCUMENT, "{out}");
    }
    let seen = fake.seen();
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(seen[0].function, "echo");
    assert_eq!(seen[0].body, r#"{"order":{"id":7}}"#);
    assert_eq!(seen[1].function, "arn:aws:lambda:us-east-1:123456789012:function:echo");
    assert_eq!((seen[2].function.as_str(), seen[2].body.as_str()), ("fails", "{}"));
    assert!(
        seen.iter().all(|s| s.authorization.contains("Credential=AKIDLAMBDA/")
            && s.authorization.contains("/us-east-1/lambda/aws4_request")),
        "{seen:?}"
    );

    // An unknown function: Lambda's error, AWS's cause wording, and where.
    let (status, out, err) = lambda_run(&fake.endpoint, "nope", &[]);
    assert_ne!(status, Some(0), "{out} {err}");
    assert_eq!(out["status"], "FAILED", "{out}");
    assert_eq!(out["error"], "Lambda.ResourceNotFoundException", "{out}");
    let cause = out["cause"].as_str().unwrap();
    assert!(cause.starts_with("Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope (Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException; Request ID: req-1"), "{cause}");
    assert!(
        cause.contains(&format!("function 'nope' of Task state 'Last', Lambda endpoint {}", fake.endpoint)),
        "{cause}"
    );

    // Nothing listening: the SDK's client error, naming the endpoint.
    let closed = format!("http://127.0.0.1:{}", support::live::free_port());
    let (_, out, err) = lambda_run(&closed, "fails", &[]);
    assert_eq!(out["status"], "FAILED", "{out} {err}");
    assert_eq!(out["error"], "Lambda.SdkClientException", "{out}");
    let cause = out["cause"].as_str().unwrap();
    assert!(cause.contains(&format!("function 'echo' of Task state 'Invoke', Lambda endpoint {closed}")), "{cause}");

    // `wfc worker` takes the same task sources: a stored execution run by a worker.
    let dir = scratch("lambda-endpoint-worker");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let input = json!({"order": {"id": 8}, "fn": "fails"}).to_string();
    let o = wfc()
        .args(["executions", "--store", &store, "start", &def, "--name", "w1", "--input", &input])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = wfc()
        .args(["worker", "--store", &store, &def, "--exit-when-idle", "--lambda-endpoint", &fake.endpoint])
        .env("AWS_ACCESS_KEY_ID", "AKIDLAMBDA")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let described = support::describe(&store, "w1");
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    let output = &described["output"];
    assert_eq!(output["bare"], json!({"echoed": {"id": 8}}), "{described}");
    assert_eq!(output["caught"]["Error"], "CardDeclined", "{described}");
    // Two runs of three calls, the unknown function's three, and the worker's three.
    assert_eq!(fake.seen().len(), 12, "{:?}", fake.seen());

    // The compiled engine answers from mocks only.
    let o = wfc().args(["run", &def, "--engine", "compiled", "--lambda-endpoint", &fake.endpoint]).output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--lambda-endpoint runs on the interpreter only"), "{}", stderr(&o));
}

/// `wfc worker --item-root/--result-root`: a stored execution's DISTRIBUTED Map reads its items
/// from the item root and writes its results under the result root, as with `wfc run`.
#[test]
fn worker_reads_and_writes_distributed_map_objects() {
    let dir = scratch("worker-objects");
    std::fs::create_dir_all(dir.join("items/in")).unwrap();
    std::fs::write(dir.join("items/in/list.json"), "[1, 2, 3]").unwrap();
    let machine = json!({
        "StartAt": "Fan",
        "States": {"Fan": {
            "Type": "Map",
            "ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "ReaderConfig": {"InputType": "JSON"},
                "Parameters": {"Bucket": "in", "Key": "list.json"}},
            "ResultWriter": {"Resource": "arn:aws:states:::s3:putObject", "Parameters": {"Bucket": "out", "Prefix": "runs"}},
            "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
            "End": true
        }}
    });
    let def = write(&dir, "reader.asl.json", &machine.to_string());
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let o = wfc().args(["executions", "--store", &store, "start", &def, "--name", "r1"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (items, results) = (dir.join("items"), dir.join("results"));
    let o = wfc()
        .args(["worker", "--store", &store, &def, "--exit-when-idle"])
        .args(["--item-root", items.to_str().unwrap(), "--result-root", results.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let described = support::describe(&store, "r1");
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    let key = described["output"]["ResultWriterDetails"]["Key"].as_str().unwrap();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("out").join(key)).unwrap()).unwrap();
    assert_eq!(manifest["ResultFiles"]["SUCCEEDED"].as_array().map(Vec::len), Some(1), "{manifest}");
}

/// `wfc worker --mocks F --test-case NAME`: a Step Functions Local MockConfigFile answers the
/// Tasks of every execution the worker runs under that test case, its state machine chosen per
/// workflow (named like it), as `wfc run --test-case` does; without `--test-case` the worker
/// refuses the file, saying how to choose one.
#[test]
fn worker_runs_executions_under_a_mock_config_test_case() {
    let dir = scratch("worker-mock-config");
    let machine = |state: &str| {
        json!({"StartAt": state, "States": {state: {
            "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": "q", "MessageBody.$": "$"},
            "End": true}}})
        .to_string()
    };
    let pay = write(&dir, "Pay.asl.json", &machine("Charge"));
    let ship = write(&dir, "Ship.asl.json", &machine("Send"));
    let mocks = json!({
        "StateMachines": {
            "Pay": {"TestCases": {"Happy": {"Charge": "Paid"}, "Sad": {"Charge": "Declined"}}},
            "Ship": {"TestCases": {"Happy": {"Send": "Sent"}}}
        },
        "MockedResponses": {
            "Paid": {"0": {"Return": {"paid": true}}},
            "Declined": {"0": {"Throw": {"Error": "CardDeclined", "Cause": "no funds"}}},
            "Sent": {"0": {"Return": {"sent": 1}}}
        }
    });
    let mocks = write(&dir, "MockConfigFile.json", &mocks.to_string());
    let store = format!("sqlite:{}", dir.join("store.db").display());
    for (def, name) in [(&pay, "p1"), (&ship, "s1")] {
        let o = wfc().args(["executions", "--store", &store, "start", def, "--name", name]).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }

    let worker = |extra: &[&str]| {
        wfc()
            .args(["worker", "--store", &store, &pay, &ship, "--exit-when-idle", "--mocks", &mocks])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = worker(&[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is a Step Functions Local MockConfigFile; choose a test case with --test-case NAME"),
        "{}",
        stderr(&o)
    );
    let o = worker(&["--test-case", "Nope"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("state machine \"Pay\" has no test case \"Nope\" (it has: "), "{}", stderr(&o));

    let o = worker(&["--test-case", "Happy"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p1 = support::describe(&store, "p1");
    assert_eq!((&p1["status"], &p1["output"]), (&json!("SUCCEEDED"), &json!({"paid": true})), "{p1}");
    let s1 = support::describe(&store, "s1");
    assert_eq!((&s1["status"], &s1["output"]), (&json!("SUCCEEDED"), &json!({"sent": 1})), "{s1}");

    // Another test case for the next executions; only Pay has it, so only Pay's file is given.
    let o = wfc().args(["executions", "--store", &store, "start", &pay, "--name", "p2"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = wfc()
        .args(["worker", "--store", &store, &pay, "--exit-when-idle", "--mocks", &mocks, "--test-case", "Sad"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let p2 = support::describe(&store, "p2");
    assert_eq!((&p2["status"], &p2["error"]), (&json!("FAILED"), &json!("CardDeclined")), "{p2}");
}

/// `wfc worker` counts an execution's mock invocations in the store: a worker that stops while
/// the execution waits to retry, and a new worker process that resumes it, give invocation 1's
/// answer, not invocation 0's again (with the count in memory the retry threw again and, its one
/// retry used, the execution failed).
#[test]
fn worker_mock_counts_survive_a_worker_restart() {
    let dir = scratch("worker-mock-restart");
    let def = json!({"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": "q", "MessageBody": "m"},
        "Retry": [{"ErrorEquals": ["Busy"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        "End": true}}});
    let def = write(&dir, "Flaky.asl.json", &def.to_string());
    let mocks = json!({
        "StateMachines": {"Flaky": {"TestCases": {"Retry": {"Call": "BusyThenOk"}}}},
        "MockedResponses": {"BusyThenOk": {"0": {"Throw": {"Error": "Busy", "Cause": "try again"}}, "1": {"Return": {"n": 1}}}}
    });
    let mocks = write(&dir, "MockConfigFile.json", &mocks.to_string());
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let o = wfc().args(["executions", "--store", &store, "start", &def, "--name", "e1"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // Each worker process suspends the execution at its retry wait and exits when nothing is
    // runnable; the next process resumes it once the wait is over.
    let worker = || {
        let o = wfc()
            .args(["worker", "--store", &store, &def, "--exit-when-idle", "--suspend-after-seconds", "0"])
            .args(["--mocks", &mocks, "--test-case", "Retry"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout_json(&o)
    };
    let first = worker();
    assert_eq!(first["suspended"], json!(1), "the first worker stops at the retry wait: {first}");
    let e1 = support::live::wait_until("a later worker to finish e1", std::time::Duration::from_secs(60), || {
        worker();
        let d = support::describe(&store, "e1");
        (d["status"] != "RUNNING").then_some(d)
    });
    assert_eq!((&e1["status"], &e1["output"]), (&json!("SUCCEEDED"), &json!({"n": 1})), "{e1}");

    // `wfc run --store` counts in the store too: killed during the retry wait, the rerun that
    // resumes the execution gets invocation 1's answer.
    let slow = std::fs::read_to_string(&def).unwrap().replace("\"IntervalSeconds\":1", "\"IntervalSeconds\":2");
    assert!(slow.contains("\"IntervalSeconds\":2"), "{slow}");
    let def = write(&dir, "FlakyRun.asl.json", &slow);
    let mut first = wfc()
        .args(["run", &def, "--store", &store, "--name", "r1", "--mocks", &mocks, "--test-case", "Retry"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    support::live::wait_until("r1 to wait for its retry", std::time::Duration::from_secs(60), || {
        // Not there until the run has created it.
        let o = wfc().args(["executions", "--store", &store, "describe", "r1"]).output().unwrap();
        let d: Value = serde_json::from_slice(&o.stdout).ok()?;
        d["operations"].as_array()?.iter().any(|op| op["subtype"] == "Retry").then_some(())
    });
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(support::describe(&store, "r1")["status"], json!("RUNNING"), "killed while it waited");
    let o = run(&["run", &def, "--store", &store, "--name", "r1", "--mocks", &mocks, "--test-case", "Retry"]);
    let r1 = stdout_json(&o);
    assert_eq!((&r1["status"], &r1["output"]), (&json!("SUCCEEDED"), &json!({"n": 1})), "{r1}");
    // Both succeeded: their counters went with their end (the worker's and the run's).
    assert!(mock_counter_executions(&dir.join("store.db")).is_empty());
}

/// A bad MockConfigFile is refused by one parser under `wfc run`, `wfc worker`, `wfc test` and
/// `wfc serve`, each naming the file and the bad field's JSON path, before anything runs.
#[test]
fn a_bad_mock_config_is_refused_with_its_location_by_every_command() {
    let dir = scratch("bad-mock-config");
    let def = write(
        &dir,
        "M.asl.json",
        &json!({"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": true}}})
            .to_string(),
    );
    let bad = json!({
        "StateMachines": {"M": {"TestCases": {"T": {"S": "Retry"}}}},
        "MockedResponses": {"Retry": {"0": {"Throw": {"Error": "E"}}, "1-2": {"Throw": {"Cause": "no error name"}}}}
    });
    let bad = write(&dir, "MockConfigFile.json", &bad.to_string());
    let says = format!("{bad}: $.MockedResponses.Retry[\"1-2\"].Throw: needs an \"Error\" name");
    let store = format!("sqlite:{}", dir.join("store.db").display());
    let case = write(
        &dir,
        "m.case.json",
        &json!({"name": "c", "definition": "M.asl.json", "mock_config": {"file": "MockConfigFile.json", "test_case": "T"},
            "expected": {"status": "SUCCEEDED"}})
        .to_string(),
    );
    let commands: [(&str, Vec<&str>); 4] = [
        ("run", vec!["run", &def, "--mocks", &bad, "--test-case", "T"]),
        ("worker", vec!["worker", "--store", &store, &def, "--exit-when-idle", "--mocks", &bad, "--test-case", "T"]),
        ("test", vec!["test", &case]),
        ("serve", vec!["serve", "--listen", "127.0.0.1:0", "--store", &store, "--mock-config", &bad]),
    ];
    for (command, args) in commands {
        let o = run(&args);
        assert_ne!(code(&o), 0, "wfc {command}: {}", stderr(&o));
        let text = format!("{}{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
        // `wfc test` names the case file first, then the config file it names.
        assert!(text.contains(&says), "wfc {command} should say {says:?}: {text}");
    }
}

/// One AWS JSON 1.0 request to a `wfc serve` on loopback (plain HTTP/1.1, unsigned as loopback
/// allows), answered with the response's JSON body.
fn sfn_call(addr: &str, operation: &str, body: &Value) -> Value {
    use std::io::{Read, Write};
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to wfc serve");
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nX-Amz-Target: AWSStepFunctions.{operation}\r\n\
         Content-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send the request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{operation}: {response}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{operation}: not JSON ({e}): {response}"))
}

/// One MockConfigFile answers Lambda Tasks alike under `wfc run`, `wfc worker` and `wfc serve`,
/// as Step Functions Local does: a `Return` is the service call's whole response, for Lambda the
/// `Invoke` response. A `lambda:invoke` Task's result is the Invoke response around the mocked
/// `Payload` (not the Return wrapped in a second `StatusCode`/`Payload`), and a Task on a function
/// ARN (the legacy Lambda integration) gets the `Payload` alone. A Lambda `Return` without a
/// `Payload`, and an invocation beyond the mocked response's keys (a retry here), fail the Task
/// with `States.Runtime` saying so, the same under all three; a `StatusCode` other than 200 is
/// carried into a `lambda:invoke` result and a `FunctionError` fails the Task with the payload's
/// `errorType`.
#[test]
fn a_mock_config_answers_lambda_tasks_alike_under_run_worker_and_serve() {
    let dir = scratch("mock-config-lambda");
    let retry = json!([{"ErrorEquals": ["Lambda.TooManyRequestsException"], "IntervalSeconds": 1, "MaxAttempts": 1}]);
    let invoke = json!({"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "f", "Payload.$": "$"},
        "ResultSelector": {"v.$": "$.Payload.v", "status.$": "$.StatusCode"},
        "Retry": retry, "End": true}}});
    let legacy = json!({"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:f", "Retry": retry, "End": true}}});
    let machines = [("Invoke", invoke), ("Legacy", legacy)];
    let files: Vec<String> =
        machines.iter().map(|(name, def)| write(&dir, &format!("{name}.asl.json"), &def.to_string())).collect();
    let cases = json!({"Happy": {"Call": "Answer"}, "Bare": {"Call": "NoPayload"}, "Short": {"Call": "OnceBusy"},
        "Accepted": {"Call": "Status202"}, "Unhandled": {"Call": "FunctionFailed"}});
    let mocks = json!({
        "StateMachines": {"Invoke": {"TestCases": cases}, "Legacy": {"TestCases": cases}},
        "MockedResponses": {
            "Answer": {"0": {"Return": {"StatusCode": 200, "Payload": {"v": 1}}}},
            "NoPayload": {"0": {"Return": {"v": 1}}},
            "OnceBusy": {"0": {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "busy"}}},
            "Status202": {"0": {"Return": {"StatusCode": 202, "Payload": {"v": 1}}}},
            "FunctionFailed": {"0": {"Return": {"StatusCode": 200, "FunctionError": "Unhandled",
                "Payload": {"errorType": "ValueError", "errorMessage": "bad"}}}}
        }
    });
    let mocks = write(&dir, "MockConfigFile.json", &mocks.to_string());
    let test_cases = ["Happy", "Bare", "Short", "Accepted", "Unhandled"];
    // What each engine gives, per (machine, case): (status, output or error and what the cause says).
    let outcome = |status: &Value, output: Value, error: &Value, cause: &str| match status.as_str() {
        Some("SUCCEEDED") => (status.clone(), output),
        _ => {
            let says = if cause.contains("has no \"Payload\"") {
                "no Payload"
            } else if cause.contains("the mocked response 'OnceBusy' has no answer for invocation 1 of state 'Call'") {
                "no answer for invocation 1"
            } else {
                cause
            };
            (status.clone(), json!({"error": error, "cause says": says}))
        }
    };
    let expected = |machine: &str, case: &str| match (machine, case) {
        ("Invoke", "Happy") => (json!("SUCCEEDED"), json!({"v": 1, "status": 200})),
        ("Legacy", "Happy" | "Accepted") => (json!("SUCCEEDED"), json!({"v": 1})),
        // A mocked StatusCode other than 200 is the Invoke response's (the legacy integration
        // keeps only the Payload).
        ("Invoke", "Accepted") => (json!("SUCCEEDED"), json!({"v": 1, "status": 202})),
        // A FunctionError fails the Task as Step Functions fails a real one: named by the
        // payload's errorType, the payload as the cause.
        (_, "Unhandled") => (
            json!("FAILED"),
            json!({"error": "ValueError", "cause says": r#"{"errorType":"ValueError","errorMessage":"bad"}"#}),
        ),
        (_, "Bare") => (json!("FAILED"), json!({"error": "States.Runtime", "cause says": "no Payload"})),
        _ => (json!("FAILED"), json!({"error": "States.Runtime", "cause says": "no answer for invocation 1"})),
    };

    // wfc run
    for ((machine, _), file) in machines.iter().zip(&files) {
        for case in test_cases {
            let o = run(&["run", file, "--mocks", &mocks, "--test-case", case, "--virtual-time"]);
            let v = stdout_json(&o);
            let got = outcome(&v["status"], v["output"].clone(), &v["error"], v["cause"].as_str().unwrap_or(""));
            assert_eq!(got, expected(machine, case), "wfc run {machine} {case}: {v}");
        }
    }

    // wfc worker, one run per test case; each execution counts its invocations from 0 (a second
    // execution of a machine gets invocation 0's answer again, as under wfc serve)
    let store = format!("sqlite:{}", dir.join("store.db").display());
    for case in test_cases {
        for ((machine, _), file) in machines.iter().zip(&files) {
            for name in [format!("{machine}-{case}"), format!("{machine}-{case}-again")] {
                let o = wfc().args(["executions", "--store", &store, "start", file, "--name", &name]).output().unwrap();
                assert!(o.status.success(), "{}", stderr(&o));
            }
        }
        let o = wfc()
            .args(["worker", "--store", &store, &files[0], &files[1], "--exit-when-idle", "--mocks", &mocks])
            .args(["--test-case", case])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        for (machine, _) in &machines {
            for name in [format!("{machine}-{case}"), format!("{machine}-{case}-again")] {
                let d = support::describe(&store, &name);
                let got = outcome(&d["status"], d["output"].clone(), &d["error"], d["cause"].as_str().unwrap_or(""));
                assert_eq!(got, expected(machine, case), "wfc worker {name}: {d}");
            }
        }
    }

    // The mock invocation counters of the executions that succeeded went with their end (no
    // redrive can need them); those of the failed ones stay while they may be redriven.
    let counted = |db: &str| mock_counter_executions(&dir.join(db));
    let ended_with = |status: &str| -> Vec<String> {
        let mut names: Vec<String> = machines
            .iter()
            .flat_map(|(machine, _)| test_cases.map(|case| (*machine, case)))
            .filter(|(machine, case)| expected(machine, case).0 == status)
            .flat_map(|(machine, case)| [format!("{machine}-{case}"), format!("{machine}-{case}-again")])
            .collect();
        names.sort();
        names
    };
    assert_eq!(counted("store.db"), ended_with("FAILED"), "wfc worker");

    // wfc serve, each execution started on `<machine ARN>#<TestCase>`, all at once
    let serve_store = format!("sqlite:{}", dir.join("serve.db").display());
    let server = support::serve::Server::start(&serve_store, &["--mock-config", &mocks], &[]);
    let role = "arn:aws:iam::123456789012:role/wfc-test";
    let mut started = Vec::new();
    for (machine, def) in &machines {
        let created = sfn_call(
            &server.addr,
            "CreateStateMachine",
            &json!({"name": machine, "definition": def.to_string(), "roleArn": role}),
        );
        let arn = created["stateMachineArn"].as_str().unwrap().to_owned();
        for case in test_cases {
            let name = format!("{machine}-{case}");
            let request = json!({"stateMachineArn": format!("{arn}#{case}"), "name": name, "input": "{}"});
            let execution = sfn_call(&server.addr, "StartExecution", &request)["executionArn"].clone();
            started.push((*machine, case, execution));
        }
    }
    for (machine, case, execution) in started {
        let request = json!({"executionArn": execution});
        let d = support::live::wait_until("the execution to finish", std::time::Duration::from_secs(60), || {
            let d = sfn_call(&server.addr, "DescribeExecution", &request);
            (d["status"] != "RUNNING").then_some(d)
        });
        let output = d["output"].as_str().map_or(Value::Null, |s| serde_json::from_str(s).unwrap());
        let got = outcome(&d["status"], output, &d["error"], d["cause"].as_str().unwrap_or(""));
        assert_eq!(got, expected(machine, case), "wfc serve {machine} {case}: {d}");
    }
    // The server deletes a succeeded execution's counters after its end (DescribeExecution may
    // answer SUCCEEDED first).
    let failed: Vec<String> = ended_with("FAILED")
        .into_iter()
        .filter(|name| !name.ends_with("-again"))
        .map(|name| format!("{}:{name}", name.split('-').next().unwrap()))
        .collect();
    support::live::wait_until("the succeeded executions' counters to go", std::time::Duration::from_secs(60), || {
        (counted("serve.db") == failed).then_some(())
    });
    server.stop();
    // A server starting deletes the counters no redrive can need: of an execution no longer
    // stored, and of a failed one that ended longer ago than the 14-day redrivable period.
    let db = rusqlite::Connection::open(dir.join("serve.db")).unwrap();
    db.execute("INSERT INTO kv (key, value, updated_at) VALUES ('mock-count/Gone:gone/Call', '1', 0)", []).unwrap();
    let fifteen_days_ago = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
        as i64
        - 15 * 24 * 3600 * 1000;
    let aged = &failed[0];
    db.execute("UPDATE executions SET updated_at = ?1 WHERE name = ?2", rusqlite::params![fifteen_days_ago, aged])
        .unwrap();
    drop(db);
    let server = support::serve::Server::start(&serve_store, &["--mock-config", &mocks], &[]);
    // Answered once the server serves, after its sweep.
    sfn_call(&server.addr, "ListStateMachines", &json!({}));
    assert_eq!(counted("serve.db"), failed[1..], "the sweep at start");
    server.stop();
}

/// The executions (stored names) that have mock invocation counter rows in the SQLite store
/// `db`, sorted.
fn mock_counter_executions(db: &Path) -> Vec<String> {
    let db = rusqlite::Connection::open(db).unwrap();
    let mut query = db.prepare("SELECT key FROM kv WHERE key LIKE 'mock-count/%' ORDER BY key").unwrap();
    let keys = query.query_map([], |row| row.get::<_, String>(0)).unwrap();
    let mut executions: Vec<String> =
        keys.map(|k| k.unwrap().strip_prefix("mock-count/").unwrap().rsplit_once('/').unwrap().0.to_owned()).collect();
    executions.sort();
    executions.dedup();
    executions
}
