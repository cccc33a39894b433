wfc_runtime::include_workflow!("ui/fixtures/wrong_type.asl.json");

fn main() {}
