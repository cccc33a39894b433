wfc_runtime::include_workflow!(name = "order", crate = ::wfc_runtime);

fn main() {}
