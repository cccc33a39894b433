wfc_runtime::include_workflow!("ui/fixtures/jsonata_syntax.asl.json");

fn main() {}
