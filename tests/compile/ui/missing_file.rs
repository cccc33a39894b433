wfc_runtime::include_workflow!("ui/fixtures/does_not_exist.asl.json");

fn main() {}
