wfc_runtime::include_workflow!("ui/fixtures/sw_unknown_function.sw.json");

fn main() {}
