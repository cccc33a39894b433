wfc_runtime::include_workflow!("ui/fixtures/unknown_state_type.asl.json");

fn main() {}
