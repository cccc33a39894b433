wfc_runtime::include_workflow!("ui/fixtures/missing_start_at.asl.json");

fn main() {}
