// Two problems in one definition are two rustc errors, each with its own excerpt.
wfc_runtime::include_workflow!("ui/fixtures/two_errors.asl.json");

fn main() {}
