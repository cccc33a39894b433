wfc_runtime::include_workflow!("ui/fixtures/next_and_end.asl.json");

fn main() {}
