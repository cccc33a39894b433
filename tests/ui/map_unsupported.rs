wfc_runtime::include_workflow!("ui/fixtures/map_unsupported.asl.json");

fn main() {}
