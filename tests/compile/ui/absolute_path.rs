wfc_runtime::include_workflow!("/etc/passwd");

fn main() {}
