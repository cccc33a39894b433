wfc_runtime::include_workflow!("ui/fixtures/choice_many_operators.asl.json");

fn main() {}
