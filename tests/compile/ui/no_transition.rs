wfc_runtime::include_workflow!("ui/fixtures/no_transition.asl.json");

fn main() {}
