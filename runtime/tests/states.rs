//! Every state type, and the worked examples of the 2016 ASL specification.

mod common;

use common::*;
use serde_json::{Value, json};
use wfc_interp::Handlers;
use wfc_runtime::ir::*;
use wfc_runtime::{Failure, Status, TaskContext};

fn add_handler() -> Handlers {
    Handlers::new().on(
        "arn:aws:lambda:us-east-1:123456789012:function:Add",
        |input: Value, _ctx: TaskContext| async move {
            match (input["val1"].as_i64(), input["val2"].as_i64()) {
                (Some(a), Some(b)) => Ok(json!(a + b)),
                _ => Err(Failure::new("BadInput", format!("expected val1 and val2 in {input}"))),
            }
        },
    )
}

const ADD: &str = "arn:aws:lambda:us-east-1:123456789012:function:Add";

#[test]
fn spec_add_returns_7() {
    let wf = workflow(vec![("Add", StateKind::Task(task_state(ADD)))]);
    let r = run(&wf, &add_handler(), json!({"val1": 3, "val2": 4}));
    assert_eq!(ok(&r), json!(7));
}

#[test]
fn spec_input_path_and_result_path_sum() {
    let task = TaskState { input_path: Some(path("$.numbers")), result_path: Some(rpath("$.sum")), ..task_state(ADD) };
    let wf = workflow(vec![("Add", StateKind::Task(task))]);
    let r = run(&wf, &add_handler(), json!({"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}}));
    assert_eq!(ok(&r), json!({"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}, "sum": 7}));
}

#[test]
fn spec_result_path_creates_parents() {
    let handlers = Handlers::new().on("hi", |_input: Value, _ctx: TaskContext| async { Ok(json!("Hi!")) });
    let task = TaskState { result_path: Some(rpath("$.b.greeting")), ..task_state("hi") };
    let wf = workflow(vec![("Greet", StateKind::Task(task))]);
    let r = run(&wf, &handlers, json!({"a": 1}));
    assert_eq!(ok(&r), json!({"a": 1, "b": {"greeting": "Hi!"}}));
}

#[test]
fn spec_result_path_into_a_string_is_a_runtime_error() {
    // The 2016 spec names States.OutputMatchFailure; AWS raises States.Runtime (terminal).
    let handlers = Handlers::new().on("hi", |_input: Value, _ctx: TaskContext| async { Ok(json!("Hi!")) });
    let task = TaskState {
        result_path: Some(rpath("$.x")),
        catch: vec![catcher(&["States.ALL"], None, 1)],
        ..task_state("hi")
    };
    let wf = workflow(vec![("Greet", StateKind::Task(task)), ("Caught", StateKind::Succeed(succeed_state()))]);
    let r = run(&wf, &handlers, json!("foo"));
    assert_eq!(r.status, Status::Failed);
    let f = err(&r);
    assert_eq!(f.error, "States.Runtime");
    assert!(
        f.cause.starts_with("An error occurred while executing the state 'Greet' (entered at the event id #2). "),
        "{}",
        f.cause
    );
    assert!(bare_cause(&f).contains("$.x"), "{}", f.cause);
}

#[test]
fn spec_pass_injects_coords() {
    let pass = PassState {
        result: Some(json!({"x-datum": 0.381018, "y-datum": 622.2269926397355})),
        result_path: Some(rpath("$.coords")),
        ..pass_state()
    };
    let wf = workflow(vec![("No-op", StateKind::Pass(pass))]);
    let r = run(&wf, &no_handlers(), json!({"georefOf": "Home"}));
    assert_eq!(ok(&r), json!({"georefOf": "Home", "coords": {"x-datum": 0.381018, "y-datum": 622.2269926397355}}));
}

#[test]
fn pass_without_result_passes_input_and_parameters_shape_it() {
    let pass = PassState {
        parameters: Some(tpl(
            json!({"greeting": "hello", "who.$": "$.name", "exec.$": "$$.Execution.Name", "nested": {"n.$": "$.n"}}),
        )),
        ..pass_state()
    };
    let wf = workflow(vec![("P", StateKind::Pass(pass))]);
    let r = run(&wf, &no_handlers(), json!({"name": "Ada", "n": [1, 2]}));
    assert_eq!(ok(&r), json!({"greeting": "hello", "who": "Ada", "exec": "test-run", "nested": {"n": [1, 2]}}));

    let wf = workflow(vec![("P", StateKind::Pass(pass_state()))]);
    assert_eq!(ok(&run(&wf, &no_handlers(), json!([1, "x"]))), json!([1, "x"]));
}

#[test]
fn null_paths() {
    // InputPath null -> {}, ResultPath null -> raw input, OutputPath null -> {}.
    let p = PassState { input_path: None, result_path: Some(rpath("$.seen")), ..pass_state() };
    let wf = workflow(vec![("P", StateKind::Pass(p))]);
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"a": 1}))), json!({"a": 1, "seen": {}}));

    let p = PassState { result: Some(json!(5)), result_path: None, ..pass_state() };
    let wf = workflow(vec![("P", StateKind::Pass(p))]);
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"a": 1}))), json!({"a": 1}));

    let p = PassState { output_path: None, ..pass_state() };
    let wf = workflow(vec![("P", StateKind::Pass(p))]);
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"a": 1}))), json!({}));
}

#[test]
fn missing_input_path_is_runtime_with_aws_wording() {
    let p = PassState { input_path: Some(path("$.NoSuchInputPath")), ..pass_state() };
    let wf = workflow(vec![("P", StateKind::Pass(p))]);
    let f = err(&run(&wf, &no_handlers(), json!({"a": 1})));
    assert_eq!(f.error, "States.Runtime");
    assert_eq!(bare_cause(&f), "Invalid path '$.NoSuchInputPath' : No results for path: $['NoSuchInputPath']");

    let p = PassState { output_path: Some(path("$.no.such.result.path")), ..pass_state() };
    let wf = workflow(vec![("P", StateKind::Pass(p))]);
    let f = err(&run(&wf, &no_handlers(), json!({"a": 1})));
    assert_eq!(bare_cause(&f), "Invalid path '$.no.such.result.path' : Missing property in path $['no']");
}

#[test]
fn missing_template_path_is_runtime_naming_the_field() {
    let p = PassState { parameters: Some(tpl(json!({"value.$": "$.no_such_jsonpath"}))), ..pass_state() };
    let wf = workflow(vec![("P", StateKind::Pass(p))]);
    let f = err(&run(&wf, &no_handlers(), json!({"a": 1})));
    assert_eq!(f.error, "States.Runtime");
    assert_eq!(
        bare_cause(&f),
        "The JSONPath '$.no_such_jsonpath' specified for the field 'value.$' could not be found in the input '{\"a\":1}'"
    );
}

#[test]
fn task_result_selector_then_result_path_then_output_path() {
    let handlers = Handlers::new().on("r", |input: Value, _ctx: TaskContext| async move {
        Ok(json!({"Payload": {"total": input["x"]}, "StatusCode": 200}))
    });
    let task = TaskState {
        input_path: Some(path("$.in")),
        parameters: Some(tpl(json!({"x.$": "$.v", "fixed": true}))),
        result_selector: Some(tpl(json!({"total.$": "$.Payload.total"}))),
        result_path: Some(rpath("$.out")),
        output_path: Some(path("$.out")),
        ..task_state("r")
    };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let r = run(&wf, &handlers, json!({"in": {"v": 42}, "other": 1}));
    assert_eq!(ok(&r), json!({"total": 42}));
}

#[test]
fn spec_choice_example() {
    let choice = choice_state(
        vec![
            (Condition::Not(Box::new(cmp("$.type", Operator::StringEquals, json!("Private")))), 1),
            (
                Condition::And(vec![
                    cmp("$.value", Operator::NumericGreaterThanEquals, json!(20)),
                    cmp("$.value", Operator::NumericLessThan, json!(30)),
                ]),
                2,
            ),
        ],
        Some(3),
    );
    let wf = workflow(vec![
        ("ChoiceStateX", StateKind::Choice(choice)),
        ("Public", StateKind::Pass(PassState { result: Some(json!("Public")), ..pass_state() })),
        ("ValueInTwenties", StateKind::Pass(PassState { result: Some(json!("ValueInTwenties")), ..pass_state() })),
        (
            "DefaultState",
            StateKind::Fail(FailState {
                cause_computed: None,
                error_computed: None,
                error: None,
                cause: Some("No Matches!".into()),
                error_path: None,
                cause_path: None,
            }),
        ),
    ]);
    // "private" is not "Private", so the Not rule matches first.
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"type": "private", "value": 22}))), json!("Public"));
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"type": "Private", "value": 22}))), json!("ValueInTwenties"));
    let f = err(&run(&wf, &no_handlers(), json!({"type": "Private", "value": 30})));
    assert_eq!(f.cause, "No Matches!");
    assert_eq!(f.error, "");
}

#[test]
fn choice_without_default_raises_no_choice_matched_which_is_catchable() {
    let choice = choice_state(vec![(cmp("$.v", Operator::NumericEquals, json!(1)), 1)], None);
    let wf = workflow(vec![("C", StateKind::Choice(choice)), ("One", StateKind::Succeed(succeed_state()))]);
    let f = err(&run(&wf, &no_handlers(), json!({"v": 2})));
    assert_eq!(f.error, "States.NoChoiceMatched");

    // Inside a Parallel it can be caught (it is not terminal).
    let branch = sm(vec![
        ("C", StateKind::Choice(choice_state(vec![(cmp("$.v", Operator::NumericEquals, json!(1)), 1)], None))),
        ("One", StateKind::Succeed(succeed_state())),
    ]);
    let par = ParallelState {
        catch: vec![catcher(&["States.NoChoiceMatched"], Some("$.err"), 1)],
        ..parallel_state(vec![branch])
    };
    let wf = workflow(vec![("P", StateKind::Parallel(par)), ("After", StateKind::Succeed(succeed_state()))]);
    let out = ok(&run(&wf, &no_handlers(), json!({"v": 2})));
    assert_eq!(out["err"]["Error"], "States.NoChoiceMatched");
    assert_eq!(out["v"], 2);
}

#[test]
fn choice_output_path_applies_to_the_effective_input() {
    let choice = ChoiceState {
        input_path: Some(path("$.data")),
        output_path: Some(path("$.keep")),
        ..choice_state(vec![(cmp("$.flag", Operator::BooleanEquals, json!(true)), 1)], None)
    };
    let wf = workflow(vec![("C", StateKind::Choice(choice)), ("S", StateKind::Succeed(succeed_state()))]);
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"data": {"flag": true, "keep": [1]}}))), json!([1]));
}

#[test]
fn wait_seconds_and_timestamps_on_virtual_time() {
    let wf = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::Seconds(10))))]);
    let r = run(&wf, &no_handlers(), json!({"a": 1}));
    assert_eq!(ok(&r), json!({"a": 1}));
    assert_eq!(r.elapsed.as_secs(), 10);

    // The virtual clock starts at 2024-01-01T00:00:00Z.
    let wf =
        workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::Timestamp("2024-01-01T01:00:00+01:00".into()))))]);
    assert_eq!(run(&wf, &no_handlers(), json!({})).elapsed.as_secs(), 0, "an instant in the past does not wait");
    let wf = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::Timestamp("2024-01-01T00:01:30Z".into()))))]);
    assert_eq!(run(&wf, &no_handlers(), json!({})).elapsed.as_secs(), 90);

    let wf = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::SecondsPath(path("$.n")))))]);
    assert_eq!(run(&wf, &no_handlers(), json!({"n": 7})).elapsed.as_secs(), 7);

    // The spec's TimestampPath example (2016 is in the past of the virtual clock).
    let wf =
        workflow(vec![("wait_until", StateKind::Wait(wait_state(WaitDuration::TimestampPath(path("$.expirydate")))))]);
    let r = run(&wf, &no_handlers(), json!({"expirydate": "2016-03-14T01:59:00Z"}));
    assert_eq!(ok(&r), json!({"expirydate": "2016-03-14T01:59:00Z"}));
    assert_eq!(r.elapsed.as_secs(), 0);
    let r = run(&wf, &no_handlers(), json!({"expirydate": "2024-01-01T03:00:00.5+02:00"}));
    assert_eq!(r.elapsed.as_secs(), 3600);
}

#[test]
fn wait_bad_values_are_runtime_errors_with_aws_wording() {
    let secs =
        workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::SecondsPath(path("$.input.waitSeconds")))))]);
    let cases = [
        (json!({"input": {}}), "The SecondsPath parameter does not reference an input value: $.input.waitSeconds"),
        (
            json!({"input": {"waitSeconds": 1.5}}),
            "The SecondsPath parameter cannot be parsed as a long value: $.input.waitSeconds == 1.5",
        ),
        (
            json!({"input": {"waitSeconds": -1}}),
            "The SecondsPath parameter references a negative value: $.input.waitSeconds == -1",
        ),
    ];
    for (input, cause) in cases {
        let f = err(&run(&secs, &no_handlers(), input));
        assert_eq!((f.error.as_str(), bare_cause(&f)), ("States.Runtime", cause));
    }
    let ts = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::TimestampPath(path("$.TimestampValue")))))]);
    let f = err(&run(&ts, &no_handlers(), json!({"TimestampValue": "2016-13-05T21:29:29Z"})));
    assert_eq!(
        bare_cause(&f),
        "The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: $.TimestampValue == 2016-13-05T21:29:29Z"
    );
    let f = err(&run(&ts, &no_handlers(), json!({"TimestampValue": 5})));
    assert_eq!(f.error, "States.Runtime");
    // AWS's bound is 2^31 - 1 seconds (its recorded boundary case refuses 24,856 days): one
    // second more is refused, the bound itself waits (on the virtual clock).
    let long = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::Seconds(2_147_483_648))))]);
    assert_eq!(bare_cause(&err(&run(&long, &no_handlers(), json!({})))), "Wait state delay is too long.");
    let longest = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::Seconds(2_147_483_647))))]);
    assert_eq!(run(&longest, &no_handlers(), json!({"x": 1})).status, Status::Succeeded);
    let days = |d: u64| json!({"w": d * 86_400});
    let by_path = workflow(vec![("W", StateKind::Wait(wait_state(WaitDuration::SecondsPath(path("$.w")))))]);
    assert_eq!(bare_cause(&err(&run(&by_path, &no_handlers(), days(24_856)))), "Wait state delay is too long.");
    assert_eq!(run(&by_path, &no_handlers(), days(24_855)).status, Status::Succeeded);
}

#[test]
fn succeed_applies_paths() {
    let s = SucceedState { output: None, input_path: Some(path("$.a")), output_path: Some(path("$.b")) };
    let wf = workflow(vec![("S", StateKind::Succeed(s))]);
    assert_eq!(ok(&run(&wf, &no_handlers(), json!({"a": {"b": "done"}}))), json!("done"));
}

#[test]
fn spec_fail_state() {
    let wf = workflow(vec![("FailState", StateKind::Fail(fail_state("ErrorA", "Kaiju attack")))]);
    let r = run(&wf, &no_handlers(), json!({}));
    assert_eq!(r.status, Status::Failed);
    assert_eq!(err(&r), Failure::new("ErrorA", "Kaiju attack"));
}

#[test]
fn fail_error_path_and_cause_path() {
    let f = FailState {
        cause_computed: None,
        error_computed: None,
        error: None,
        cause: None,
        error_path: Some(path("$.e")),
        cause_path: Some(path("$$.Execution.Name")),
    };
    let wf = workflow(vec![("F", StateKind::Fail(f))]);
    assert_eq!(err(&run(&wf, &no_handlers(), json!({"e": "Custom"}))), Failure::new("Custom", "test-run"));

    let f = FailState {
        cause_computed: None,
        error_computed: None,
        error: None,
        cause: None,
        error_path: Some(path("$.ErrorX")),
        cause_path: None,
    };
    let wf = workflow(vec![("F", StateKind::Fail(f))]);
    let failure = err(&run(&wf, &no_handlers(), json!({"e": 1})));
    assert_eq!(failure.error, "States.Runtime");
    assert_eq!(
        bare_cause(&failure),
        "The JSONPath '$.ErrorX' specified for the field 'ErrorPath' could not be found in the input '{\"e\":1}'"
    );
}

fn math_handlers() -> Handlers {
    Handlers::new()
        .on("arn:aws:swf:::task:Add", |input: Value, _ctx: TaskContext| async move {
            Ok(json!(input[0].as_i64().unwrap_or(0) + input[1].as_i64().unwrap_or(0)))
        })
        .on("arn:aws:swf:::task:Subtract", |input: Value, _ctx: TaskContext| async move {
            Ok(json!(input[0].as_i64().unwrap_or(0) - input[1].as_i64().unwrap_or(0)))
        })
}

#[test]
fn spec_parallel_fun_with_math() {
    let par = parallel_state(vec![
        sm(vec![("Add", StateKind::Task(task_state("arn:aws:swf:::task:Add")))]),
        sm(vec![("Subtract", StateKind::Task(task_state("arn:aws:swf:::task:Subtract")))]),
    ]);
    let wf = workflow(vec![("FunWithMath", StateKind::Parallel(par))]);
    assert_eq!(ok(&run(&wf, &math_handlers(), json!([3, 2]))), json!([5, 1]));
}

#[test]
fn parallel_result_selector_and_result_path() {
    let par = ParallelState {
        result_selector: Some(tpl(json!({"sum.$": "$[0]", "diff.$": "$[1]"}))),
        result_path: Some(rpath("$.math")),
        parameters: Some(tpl(json!({"nums.$": "$.nums"}))),
        input_path: dollar(),
        ..parallel_state(vec![
            sm(vec![(
                "Add",
                StateKind::Task(TaskState { input_path: Some(path("$.nums")), ..task_state("arn:aws:swf:::task:Add") }),
            )]),
            sm(vec![(
                "Subtract",
                StateKind::Task(TaskState {
                    input_path: Some(path("$.nums")),
                    ..task_state("arn:aws:swf:::task:Subtract")
                }),
            )]),
        ])
    };
    let wf = workflow(vec![("P", StateKind::Parallel(par))]);
    let out = ok(&run(&wf, &math_handlers(), json!({"nums": [3, 2], "keep": true})));
    assert_eq!(out, json!({"nums": [3, 2], "keep": true, "math": {"sum": 5, "diff": 1}}));
}

#[test]
fn spec_catch_example_error_info_and_end_machine() {
    let handlers = Handlers::new().on("lambda", |input: Value, _ctx: TaskContext| async move {
        let error = input["throw"].as_str().unwrap_or("none").to_owned();
        Err::<Value, _>(Failure::new(error, "boom"))
    });
    let task = TaskState {
        catch: vec![catcher(&["java.lang.Exception"], Some("$.error-info"), 1), catcher(&["States.ALL"], Some("$"), 2)],
        ..task_state("lambda")
    };
    let wf = workflow(vec![
        ("T", StateKind::Task(task)),
        (
            "RecoveryState",
            StateKind::Pass(PassState {
                result_path: Some(rpath("$.recovered")),
                result: Some(json!(true)),
                ..pass_state()
            }),
        ),
        ("EndMachine", StateKind::Succeed(succeed_state())),
    ]);
    let out = ok(&run(&wf, &handlers, json!({"throw": "java.lang.Exception"})));
    assert_eq!(
        out,
        json!({"throw": "java.lang.Exception", "error-info": {"Error": "java.lang.Exception", "Cause": "boom"}, "recovered": true})
    );
    let out = ok(&run(&wf, &handlers, json!({"throw": "Other"})));
    assert_eq!(out, json!({"Error": "Other", "Cause": "boom"}));
}

#[test]
fn catch_skips_output_path_and_uses_raw_input() {
    let handlers =
        Handlers::new().on("x", |_input: Value, _ctx: TaskContext| async { Err::<Value, _>(Failure::new("E", "c")) });
    let task = TaskState {
        input_path: Some(path("$.inner")),
        output_path: Some(path("$.nothing")),
        catch: vec![catcher(&["E"], Some("$.err"), 1)],
        ..task_state("x")
    };
    let wf = workflow(vec![("T", StateKind::Task(task)), ("S", StateKind::Succeed(succeed_state()))]);
    let out = ok(&run(&wf, &handlers, json!({"inner": {"a": 1}, "top": 2})));
    assert_eq!(out, json!({"inner": {"a": 1}, "top": 2, "err": {"Error": "E", "Cause": "c"}}));
}

#[test]
fn unknown_resource_is_a_runtime_error() {
    let wf = workflow(vec![(
        "T",
        StateKind::Task(TaskState { catch: vec![catcher(&["States.ALL"], None, 0)], ..task_state("nope") }),
    )]);
    let f = err(&run(&wf, &no_handlers(), json!({})));
    assert_eq!(f.error, "States.Runtime");
    assert!(f.cause.contains("nope"));
}

#[test]
fn context_object_is_deterministic_on_virtual_time() {
    let p = PassState { parameters: Some(tpl(json!({"ctx.$": "$$"}))), ..pass_state() };
    let wf = workflow(vec![
        ("W", StateKind::Wait(WaitState { transition: next(1), ..wait_state(WaitDuration::Seconds(5)) })),
        ("P", StateKind::Pass(p)),
    ]);
    let out = ok(&run(&wf, &no_handlers(), json!({"in": 1})));
    assert_eq!(
        out,
        json!({"ctx": {
            "Execution": {
                "Id": "arn:aws:states:local:000000000000:execution:Test:test-run",
                "Input": {"in": 1},
                "Name": "test-run",
                "StartTime": "2024-01-01T00:00:00.000Z",
                "RoleArn": "arn:aws:iam::000000000000:role/wfc-local",
                "RedriveCount": 0,
            },
            // A Pass state cannot retry: AWS gives it no RetryCount (recorded).
            "State": {"Name": "P", "EnteredTime": "2024-01-01T00:00:05.000Z"},
            "StateMachine": {"Id": "arn:aws:states:local:000000000000:stateMachine:Test", "Name": "Test"},
        }})
    );
}

/// What AWS records per state machine type: `RedriveCount` 0 except for a synchronous Express
/// start, the `:express:` execution ARN with a uuid after the name, and `RetryCount` only in the
/// states that can retry.
#[test]
fn context_object_per_machine_type_and_state_type() {
    use wfc_interp as interp;
    use wfc_runtime::{MachineType, RunOptions, block_on_virtual};
    let task = TaskState { parameters: Some(tpl(json!({"ctx.$": "$$"}))), ..task_state("echo") };
    let wf = workflow(vec![("T", StateKind::Task(task))]);
    let handlers = Handlers::new().on("echo", |input: Value, _ctx: TaskContext| async move { Ok(input) });
    let run_as = |machine_type| {
        let options = RunOptions::virtual_time().with_name("n1").with_machine_type(machine_type);
        ok(&block_on_virtual(interp::run(&wf, &handlers, json!({}), options)))
    };
    let standard = run_as(MachineType::Standard);
    assert_eq!(standard["ctx"]["State"]["RetryCount"], json!(0));
    assert_eq!(standard["ctx"]["Execution"]["RedriveCount"], json!(0));
    assert_eq!(standard["ctx"]["Execution"]["Id"], json!("arn:aws:states:local:000000000000:execution:Test:n1"));
    let express = run_as(MachineType::Express);
    assert_eq!(express["ctx"]["Execution"]["RedriveCount"], json!(0));
    let id = express["ctx"]["Execution"]["Id"].as_str().unwrap().to_owned();
    let uuid = id.strip_prefix("arn:aws:states:local:000000000000:express:Test:n1:").unwrap_or_else(|| panic!("{id}"));
    assert_eq!((uuid.len(), uuid.matches('-').count()), (36, 4), "{id}");
    assert_eq!(express["ctx"]["Execution"]["Name"], json!("n1"));
    let sync = run_as(MachineType::ExpressSync);
    assert!(sync["ctx"]["Execution"].get("RedriveCount").is_none(), "{sync}");
    assert_eq!(sync["ctx"]["Execution"]["Id"], json!(id));
}

#[test]
fn generated_style_call_is_send() {
    // Generated code runs machines with tokio::spawn, so the futures of task/parallel/wait must
    // be Send whenever the closures' futures are.
    fn assert_send<T: Send>(_: &T) {}
    let wf = workflow(vec![("P", StateKind::Pass(pass_state()))]);
    let exec = wfc_runtime::Execution::start(&wf.name, &json!({}), wfc_runtime::RunOptions::virtual_time());
    let task = task_state("r");
    let fut = wfc_interp::task(&exec, "T", &task, json!({}), |v: Value, _ctx: TaskContext| async move { Ok(v) });
    assert_send(&fut);
    let par = parallel_state(vec![]);
    let fut2 =
        wfc_interp::parallel(
            &exec,
            "P",
            &par,
            json!({}),
            |v: Value, _e: wfc_runtime::Execution| async move { Ok(vec![v]) },
        );
    assert_send(&fut2);
    let w = wait_state(WaitDuration::Seconds(1));
    let fut3 = wfc_interp::wait(&exec, "W", &w, json!({}));
    assert_send(&fut3);
    let p = pass_state();
    let fut4 = wfc_interp::pass(&exec, "P", &p, json!({}));
    assert_send(&fut4);
    let handlers = no_handlers();
    let fut5 = wfc_interp::run(&wf, &handlers, json!({}), wfc_runtime::RunOptions::virtual_time());
    assert_send(&fut5);
}

#[test]
fn runs_on_a_spawned_multi_thread_task() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let out = rt.block_on(async {
        let handle = tokio::spawn(async {
            let par = parallel_state(vec![
                sm(vec![("Add", StateKind::Task(task_state("arn:aws:swf:::task:Add")))]),
                sm(vec![("Subtract", StateKind::Task(task_state("arn:aws:swf:::task:Subtract")))]),
            ]);
            let wf = workflow(vec![("FunWithMath", StateKind::Parallel(par))]);
            wfc_interp::run(&wf, &math_handlers(), json!([10, 4]), wfc_runtime::RunOptions::real()).await
        });
        handle.await
    });
    let r = out.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok(&r), json!([14, 6]));
}

#[test]
fn task_credentials_reach_the_handler_and_the_history() {
    // Locally no role is assumed: the evaluated RoleArn is the handler's to use.
    let handlers = Handlers::new().on("call", |_input: Value, ctx: TaskContext| async move {
        Ok(json!({ "role": ctx.role_arn(), "token": ctx.task_token() }))
    });
    let path = Path::parse("$.role").expect("a path");
    let task = TaskState {
        credentials: Some(TaskCredentials::JsonPath(Template::Object(vec![("RoleArn".into(), Template::Path(path))]))),
        ..task_state("call")
    };
    let wf = workflow(vec![("Call", StateKind::Task(task))]);
    let r = run(&wf, &handlers, json!({ "role": "arn:aws:iam::111122223333:role/Partner" }));
    assert_eq!(ok(&r), json!({ "role": "arn:aws:iam::111122223333:role/Partner", "token": null }));
    let scheduled = r.history.iter().find(|e| e.event_type == wfc_runtime::EventType::TaskScheduled);
    assert_eq!(
        scheduled.map(|e| e.details["taskCredentials"].clone()),
        Some(json!({ "roleArn": "arn:aws:iam::111122223333:role/Partner" }))
    );
    // Without Credentials the handler sees no role and the event has no taskCredentials.
    let wf = workflow(vec![("Call", StateKind::Task(task_state("call")))]);
    let r = run(&wf, &handlers, json!({}));
    assert_eq!(ok(&r), json!({ "role": null, "token": null }));
    let scheduled = r.history.iter().find(|e| e.event_type == wfc_runtime::EventType::TaskScheduled);
    assert!(scheduled.is_some_and(|e| e.details.get("taskCredentials").is_none()));
}

/// The counted visits count an Entered event with the events after it: the history limit must
/// still stop an express execution where it stops a full one.
#[test]
fn express_and_full_reach_the_history_limit_at_the_same_event() {
    // Pass, Task, Task, Choice, Pass: with the limit at each count of events in turn, the
    // failure (or the success) is the same at both levels, whether the limit falls on a
    // Task's Entered event, between it and its Scheduled one, or on a Pass's Exited one.
    use wfc_runtime::{HistoryLevel, RunOptions, block_on_virtual};
    let text = r#"{"StartAt":"A","States":{
        "A":{"Type":"Pass","Next":"T1"},
        "T1":{"Type":"Task","Resource":"echo","Next":"T2"},
        "T2":{"Type":"Task","Resource":"echo","Next":"C"},
        "C":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericEquals":1,"Next":"E"}],"Default":"E"},
        "E":{"Type":"Pass","End":true}}}"#;
    let loaded = wfc_core::load(wfc_core::Source { path: "case.asl.json", text }).expect("the case loads");
    let mut outcomes = std::collections::BTreeSet::new();
    for limit in 1..=20 {
        // The Tasks' calls too: a Task stopped by the limit must not have called its handler.
        let run = |level| {
            let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counter = std::sync::Arc::clone(&calls);
            let handlers = Handlers::new().on("echo", move |input: Value, _ctx: TaskContext| {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { Ok(input) }
            });
            let mut options = RunOptions::virtual_time().with_history(level);
            options.limits.max_history_events = limit;
            let result = block_on_virtual(wfc_interp::run(&loaded.workflow, &handlers, json!({"n": 1}), options));
            (result.status, result.output, result.error, calls.load(std::sync::atomic::Ordering::SeqCst))
        };
        let (full, express) = (run(HistoryLevel::Full), run(HistoryLevel::Express));
        assert_eq!(express, full, "history limit {limit}");
        outcomes.insert(format!("{:?}", full.0));
    }
    // The limits above cover both endings.
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
}

/// At the express level a Pass, Choice or plain Task that reads no context object visits through the
/// runtime's counted visit (events numbered, nothing else built): every outcome must be the one
/// the full level gives, failure causes with their event ids included.
#[test]
fn express_and_full_give_the_same_outcome_for_pass_and_choice() {
    use wfc_runtime::{HistoryLevel, RunOptions, block_on_virtual};
    let cases = [
        // Three rounds of the counting loop, then a Pass reading a path that is not there: the
        // cause names the Pass's Entered event by id.
        (
            r#"{"StartAt":"Check","States":{
                "Check":{"Type":"Choice","Choices":[{"Variable":"$.i","NumericLessThan":3,"Next":"Inc"}],"Default":"Bad"},
                "Inc":{"Type":"Pass","Parameters":{"i.$":"States.MathAdd($.i, 1)"},"Next":"Check"},
                "Bad":{"Type":"Pass","Parameters":{"x.$":"$.missing"},"End":true}}}"#,
            json!({"i": 0}),
            usize::MAX,
            "entered at the event id #16). The JSONPath '$.missing'",
        ),
        // A Choice whose Variable is missing, after two Passes.
        (
            r#"{"StartAt":"A","States":{
                "A":{"Type":"Pass","Next":"B"},
                "B":{"Type":"Pass","Result":{"k":1},"Next":"C"},
                "C":{"Type":"Choice","Choices":[{"Variable":"$.nope","StringEquals":"x","Next":"A"}],"Default":"D"},
                "D":{"Type":"Succeed"}}}"#,
            json!({}),
            usize::MAX,
            "'C' (entered at the event id #6). Invalid path '$.nope'",
        ),
        // No rule matches and there is no Default.
        (
            r#"{"StartAt":"C","States":{
                "C":{"Type":"Choice","Choices":[{"Variable":"$.i","NumericEquals":1,"Next":"D"}]},
                "D":{"Type":"Succeed"}}}"#,
            json!({"i": 2}),
            usize::MAX,
            "States.NoChoiceMatched",
        ),
        // A bounded Pass output over a payload limit set below its bound.
        (
            r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"i.$":"States.MathAdd($.i, 1)","pad":"xxxxxxxxxxxxxxxxxxxx"},"End":true}}}"#,
            json!({"i": 0}),
            20,
            "DataLimitExceeded\", cause: \"The state/task 'P'",
        ),
        // A branch's first state is a Choice whose input (the Parallel's Parameters) is over
        // the limit; and a Choice that routes a branch to its end.
        (
            r#"{"StartAt":"Par","States":{"Par":{"Type":"Parallel","Parameters":{"big.$":"States.ArrayRange(1, 40, 1)"},
                "Branches":[{"StartAt":"C","States":{
                    "C":{"Type":"Choice","Choices":[{"Variable":"$.big[0]","NumericEquals":1,"Next":"E"}],"Default":"E"},
                    "E":{"Type":"Pass","End":true}}}],"End":true}}}"#,
            json!({}),
            60,
            "DataLimitExceeded\", cause: \"The state/task 'C'",
        ),
        (
            r#"{"StartAt":"Par","States":{"Par":{"Type":"Parallel",
                "Branches":[{"StartAt":"C","States":{
                    "C":{"Type":"Choice","Choices":[{"Variable":"$.i","NumericEquals":1,"Next":"E"}],"Default":"F"},
                    "E":{"Type":"Pass","Parameters":{"i.$":"States.MathAdd($.i, 1)"},"End":true},
                    "F":{"Type":"Fail","Error":"Nope"}}}],"End":true}}}"#,
            json!({"i": 1}),
            usize::MAX,
            "Succeeded, Some(Array [Object {\"i\": Number(2)}])",
        ),
        // A branch's Choice matches nothing, so it fails before its Exited event (its Entered
        // one is counted on the way out); the Parallel's Catch goes on to a Pass whose cause
        // names its own Entered event: every event before it was counted once.
        (
            r#"{"StartAt":"Par","States":{"Par":{"Type":"Parallel",
                "Branches":[
                    {"StartAt":"A","States":{"A":{"Type":"Pass","Result":{"k":1},"End":true}}},
                    {"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.i","NumericEquals":9,"Next":"E"}]},
                        "E":{"Type":"Succeed"}}}],
                "Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Bad"}],"End":true},
                "Bad":{"Type":"Pass","Parameters":{"x.$":"$.missing"},"End":true}}}"#,
            json!({"i": 1}),
            usize::MAX,
            "'Bad' (entered at the event id #",
        ),
        // A branch's first state is a Task whose request (the Parallel's Parameters) is over
        // the limit: its Entered event is counted alone, before the request's failure.
        (
            r#"{"StartAt":"Par","States":{"Par":{"Type":"Parallel","Parameters":{"big.$":"States.ArrayRange(1, 40, 1)"},
                "Branches":[{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"echo","End":true}}}],"End":true}}}"#,
            json!({}),
            60,
            "DataLimitExceeded\", cause: \"The state/task 'T'",
        ),
    ];
    let handlers = Handlers::new().on("echo", |input: Value, _ctx: TaskContext| async move { Ok(input) });
    for (text, input, max_payload, expected) in cases {
        let loaded = wfc_core::load(wfc_core::Source { path: "case.asl.json", text }).expect("the case loads");
        let run = |level| {
            let mut options = RunOptions::virtual_time().with_history(level);
            options.limits.max_payload_bytes = max_payload;
            let result = block_on_virtual(wfc_interp::run(&loaded.workflow, &handlers, input.clone(), options));
            (result.status, result.output, result.error)
        };
        let (full, express) = (run(HistoryLevel::Full), run(HistoryLevel::Express));
        assert!(format!("{full:?}").contains(expected), "{text}: {full:?}");
        assert_eq!(express, full, "{text}");
    }
}
