wfc_runtime::include_workflow!("ui/fixtures/variable_out_of_scope.asl.json");

fn main() {}
