wfc_runtime::include_workflow!("ui/fixtures/bad_jsonata.asl.json");

fn main() {}
