wfc_runtime::include_workflow!("ui/fixtures/map_no_execution_type.asl.json");

fn main() {}
