wfc_runtime::include_workflow!("ui/fixtures/map_item_selector_and_parameters.asl.json");

fn main() {}
