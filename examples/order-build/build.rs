//! Compiles the workflow definitions into `OUT_DIR`; errors print with `file:line:col`.

fn main() {
    wfc_build::compile_workflows(&["workflows/shipment.asl.json"]).unwrap();
}
