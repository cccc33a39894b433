wfc_runtime::include_workflow!("ui/fixtures/sw_bad_duration.sw.yaml");

fn main() {}
