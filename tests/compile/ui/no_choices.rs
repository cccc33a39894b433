wfc_runtime::include_workflow!("ui/fixtures/no_choices.asl.json");

fn main() {}
