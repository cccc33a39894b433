//! The module generated from `map_nested.asl.json` compiles warning-free, with every public item
//! documented, and runs: nested Maps keep item order, and a Map inside a Parallel branch works.
#![deny(warnings, missing_docs)]

wfc_runtime::include_workflow!("fixtures/map_nested.asl.json");

struct Squarer;

impl map_nested::Handler for Squarer {
    async fn square(
        &self,
        input: wfc_runtime::Value,
        _ctx: wfc_runtime::TaskContext,
    ) -> Result<wfc_runtime::Value, wfc_runtime::TaskError> {
        let n = input.as_i64().unwrap_or(0);
        Ok(wfc_runtime::json!(n * n))
    }
}

pub(crate) fn main() {
    let _: &str = map_nested::DEFINITION;
    let input = wfc_runtime::json!({"rows": [[1, 2], [3]]});
    let result =
        wfc_runtime::block_on_virtual(map_nested::run_with(&Squarer, input, wfc_runtime::RunOptions::virtual_time()));
    let output = result.output.unwrap_or_default();
    assert_eq!(output, wfc_runtime::json!([[[1, 4], [9]], "done"]));
}
