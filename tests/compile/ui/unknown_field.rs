wfc_runtime::include_workflow!("ui/fixtures/unknown_field.asl.json");

fn main() {}
