wfc_runtime::include_workflow!("ui/fixtures/jsonata_input_path.asl.json");

fn main() {}
