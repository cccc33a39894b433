fn main() { eprintln!("wfc: not built yet"); std::process::exit(2) }
