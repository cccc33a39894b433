wfc_runtime::include_workflow!("ui/fixtures/bad_backoff.asl.json");

fn main() {}
