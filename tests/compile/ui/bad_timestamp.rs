wfc_runtime::include_workflow!("ui/fixtures/bad_timestamp.asl.json");

fn main() {}
