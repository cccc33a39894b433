wfc_runtime::include_workflow!("ui/fixtures/intrinsic_wrong_arity.asl.json");

fn main() {}
