wfc_runtime::include_workflow!("ui/fixtures/sw_unknown_event.sw.json");

fn main() {}
