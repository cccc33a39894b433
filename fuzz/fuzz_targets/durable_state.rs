//! Loading stored durable state: the bytes are a JSON document of stored operation rows (any
//! field of any type), which are checked and then replayed as a journal on a fixed workflow
//! (Task with Retry, Wait, Parallel, callback Task). It must end in a result or a load error:
//! never a panic, a hang or a runaway allocation. The proptest smoke test in
//! wfc-worker/tests/durable_props.rs runs the same loader under `cargo test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = wfc_worker::testing::replay_stored_state(data);
});
