//! Generated code of a scheduled Serverless Workflow (compiled by the real macro): with
//! `directInvoke: deny` a direct `run_with` is refused before the first state, and the runtime's
//! scheduler starts instances at the cron's fire times on the virtual clock. The interpreter side
//! is covered by `tests/cases/sw/feat-direct-deny.case.json` and `wfc schedule` in
//! wfc-cli/tests/cli.rs.

use wfc_runtime::schedule::{Bounds, DIRECT_INVOKE_DENIED, StartedBy};
use wfc_runtime::{Clock, EventType, ExecutionResult, RunOptions, Status, TaskContext, TaskError, Value, json};

wfc_runtime::include_workflow!("cases/sw/definitions/feat-direct-deny.sw.json");

/// The IR `include_workflow!` lowered the definition at `path` to (generated code carries none),
/// for what reads the IR.
fn lowered(path: &str) -> wfc_ir::Workflow {
    wfc_build::load_file(path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

/// Answers `sweep` with the name of the execution that called it.
struct Cleaner;

impl feat_direct_deny::Handler for Cleaner {
    async fn sweep(&self, _input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
        Ok(json!({ "sweptBy": ctx.execution_name() }))
    }
}

#[test]
fn a_direct_start_is_refused() {
    let result =
        wfc_runtime::block_on_virtual(feat_direct_deny::run_with(&Cleaner, json!({}), RunOptions::virtual_time()));
    assert_eq!(result.status, Status::Failed);
    let error = result.error.expect("the failure");
    assert_eq!(error.error, DIRECT_INVOKE_DENIED);
    assert!(error.cause.contains("directInvoke: deny"), "{}", error.cause);
    let types: Vec<EventType> = result.history.iter().map(|e| e.event_type).collect();
    assert_eq!(types, [EventType::ExecutionStarted, EventType::ExecutionFailed], "no state ran");
}

#[test]
fn the_scheduler_starts_instances_at_the_cron_times() {
    let workflow = lowered("cases/sw/definitions/feat-direct-deny.sw.json");
    let schedule = wfc_runtime::sw::meta(&workflow).and_then(|m| m.schedule.clone()).expect("a start.schedule");
    let mut ended = Vec::new();
    let started = wfc_runtime::block_on_virtual(wfc_runtime::schedule::serve(
        &schedule,
        &Clock::virtual_default(),
        Bounds { until: Some("2024-01-01T00:40:00Z".parse().expect("a timestamp")), count: None },
        |n, fire_time| {
            let mut options = RunOptions::virtual_time()
                .with_name(format!("sweep-{n}"))
                .with_started_by(StartedBy::Scheduler { fire_time });
            options.clock = Clock::virtual_from(fire_time);
            feat_direct_deny::run_with(&Cleaner, json!({}), options)
        },
        |n, fire_time, result: ExecutionResult| {
            ended.push((n, wfc_runtime::clock::format_timestamp(fire_time), result))
        },
    ));
    // `*/15 * * * *` in Europe/Paris from 2024-01-01T00:00:00Z until 00:40.
    assert_eq!(started, Ok(3));
    let fired: Vec<(usize, &str)> = ended.iter().map(|(n, t, _)| (*n, t.as_str())).collect();
    assert_eq!(
        fired,
        [(0, "2024-01-01T00:00:00.000Z"), (1, "2024-01-01T00:15:00.000Z"), (2, "2024-01-01T00:30:00.000Z")]
    );
    for (n, fire_time, result) in &ended {
        assert_eq!(result.status, Status::Succeeded, "instance {n}: {:?}", result.error);
        assert_eq!(result.output, Some(json!({ "sweptBy": format!("sweep-{n}") })));
        // The instance's clock read its fire time when it started.
        let start = result.history.first().map(|e| e.timestamp.clone()).unwrap_or_default();
        assert_eq!(&start, fire_time);
    }
}
