wfc_runtime::include_workflow!(path = "ui/fixtures/two_tasks.asl.json", nmae = "order");

fn main() {}
