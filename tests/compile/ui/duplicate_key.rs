wfc_runtime::include_workflow!(path = "ui/fixtures/two_tasks.asl.json", crate = ::wfc_runtime, crate = ::wfc_runtime);

fn main() {}
