wfc_runtime::include_workflow!("ui/fixtures/cross_scope_target.asl.json");

fn main() {}
