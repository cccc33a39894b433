wfc_runtime::include_workflow!("ui/fixtures/heartbeat_not_below_timeout.asl.json");

fn main() {}
