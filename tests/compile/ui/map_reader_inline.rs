wfc_runtime::include_workflow!("ui/fixtures/map_reader_inline.asl.json");

fn main() {}
