wfc_runtime::include_workflow!("ui/fixtures/arguments_in_jsonpath.asl.json");

fn main() {}
