wfc_runtime::include_workflow!("ui/fixtures/sw_unknown_event.sw.yaml");

fn main() {}
