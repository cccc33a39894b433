wfc_runtime::include_workflow!("ui/fixtures/sw_bad_jsonpath.sw.yaml");

fn main() {}
