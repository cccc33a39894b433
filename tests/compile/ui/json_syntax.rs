wfc_runtime::include_workflow!("ui/fixtures/json_syntax.asl.json");

fn main() {}
