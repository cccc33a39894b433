wfc_runtime::include_workflow!("ui/fixtures/sw_unknown_state.sw.json");

fn main() {}
