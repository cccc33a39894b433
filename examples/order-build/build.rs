//! Compiles the workflow definitions into `OUT_DIR`; errors print with `file:line:col`.

fn main() {
    // `TrackParcel`'s handler method takes and returns the types of src/main.rs instead of JSON
    // (paths as written where `include_workflow_out!` is); `Dispatch` stays JSON.
    wfc_build::Config::new()
        .task_types(
            "arn:aws:lambda:us-east-1:123456789012:function:TrackParcel",
            "crate::TrackingQuery",
            "crate::TrackingStatus",
        )
        .compile(&["workflows/shipment.asl.json"])
        .unwrap();
}
