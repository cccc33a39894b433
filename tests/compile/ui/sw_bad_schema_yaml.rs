wfc_runtime::include_workflow!("ui/fixtures/sw_bad_schema.sw.yaml");

fn main() {}
