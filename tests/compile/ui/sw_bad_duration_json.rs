wfc_runtime::include_workflow!("ui/fixtures/sw_bad_duration.sw.json");

fn main() {}
