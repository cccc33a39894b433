wfc_runtime::include_workflow!("ui/fixtures/choice_variable_in_jsonata.asl.json");

fn main() {}
