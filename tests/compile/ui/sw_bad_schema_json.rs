wfc_runtime::include_workflow!("ui/fixtures/sw_bad_schema.sw.json");

fn main() {}
