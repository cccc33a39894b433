wfc_runtime::include_workflow!("ui/fixtures/bad_path.asl.json");

fn main() {}
