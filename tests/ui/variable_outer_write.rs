wfc_runtime::include_workflow!("ui/fixtures/variable_outer_write.asl.json");

fn main() {}
