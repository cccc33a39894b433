wfc_runtime::include_workflow!("ui/fixtures/wait_no_duration.asl.json");

fn main() {}
