wfc_runtime::include_workflow!("ui/fixtures/undefined_variable.asl.json");

fn main() {}
