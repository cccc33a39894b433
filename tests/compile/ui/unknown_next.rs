wfc_runtime::include_workflow!("ui/fixtures/unknown_next.asl.json");

fn main() {}
