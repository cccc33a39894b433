//! A `types` entry whose resource names no Task of the definition is an error at its literal,
//! with the resource it probably meant.
wfc_runtime::include_workflow!(
    path = "ui/fixtures/two_tasks.asl.json",
    types = {
        "arn:aws:lambda:us-east-1:123456789012:function:Reserve": Vec<String> -> u32,
        "arn:aws:lambda:us-east-1:123456789012:function:Notfy": _ -> String,
    },
);

fn main() {}
