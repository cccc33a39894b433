//! A declared type that does not exist is rustc's error, at the type in the macro call.
wfc_runtime::include_workflow!(
    path = "ui/fixtures/two_tasks.asl.json",
    types = { "arn:aws:lambda:us-east-1:123456789012:function:Reserve": Vec<Strin> -> u32 },
);

fn main() {}
