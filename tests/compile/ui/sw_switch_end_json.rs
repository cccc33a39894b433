wfc_runtime::include_workflow!("ui/fixtures/sw_switch_end.sw.json");

fn main() {}
