wfc_runtime::include_workflow!("ui/fixtures/duplicate_state.asl.json");

fn main() {}
