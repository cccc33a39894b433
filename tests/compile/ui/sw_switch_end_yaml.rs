wfc_runtime::include_workflow!("ui/fixtures/sw_switch_end.sw.yaml");

fn main() {}
