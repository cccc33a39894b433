wfc_runtime::include_workflow!("ui/fixtures/all_not_last.asl.json");

fn main() {}
