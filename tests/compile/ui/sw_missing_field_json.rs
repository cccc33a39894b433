wfc_runtime::include_workflow!("ui/fixtures/sw_missing_field.sw.json");

fn main() {}
