wfc_runtime::include_workflow!("ui/fixtures/sw_many_starts.sw.yaml");

fn main() {}
