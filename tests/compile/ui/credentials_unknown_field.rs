wfc_runtime::include_workflow!("ui/fixtures/credentials_unknown_field.asl.json");

fn main() {}
