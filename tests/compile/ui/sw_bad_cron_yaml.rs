wfc_runtime::include_workflow!("ui/fixtures/sw_bad_cron.sw.yaml");

fn main() {}
