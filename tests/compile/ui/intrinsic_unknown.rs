wfc_runtime::include_workflow!("ui/fixtures/intrinsic_unknown.asl.json");

fn main() {}
