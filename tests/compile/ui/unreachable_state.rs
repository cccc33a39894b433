wfc_runtime::include_workflow!("ui/fixtures/unreachable_state.asl.json");

fn main() {}
