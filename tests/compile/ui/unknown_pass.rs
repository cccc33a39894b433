wfc_runtime::include_workflow!(path = "ui/fixtures/two_tasks.asl.json", no_opt = ["direct-paths", "fold-everything"]);

fn main() {}
