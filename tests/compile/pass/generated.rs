//! Every pass case (`cases/*.rs`) compiled into one crate and run: one trybuild build and link
//! instead of one per case (each case is a module here; its `main` runs below). A case is what a
//! user's crate would hold: the real `include_workflow!` under `#![deny(warnings, missing_docs)]`.
//! `tests/codegen_pass.rs` checks that every fixture has a case and every case is listed here.
#![deny(warnings, missing_docs)]

#[path = "cases/aws_accepted.rs"]
mod aws_accepted;
#[path = "cases/choice_loop.rs"]
mod choice_loop;
#[path = "cases/comments.rs"]
mod comments;
#[path = "cases/fail_only.rs"]
mod fail_only;
#[path = "cases/hello.rs"]
mod hello;
#[path = "cases/hostile_names.rs"]
mod hostile_names;
#[path = "cases/hostile_resources.rs"]
mod hostile_resources;
#[path = "cases/map_nested.rs"]
mod map_nested;
#[path = "cases/no_implicit_prelude.rs"]
mod no_implicit_prelude;
#[path = "cases/order.rs"]
mod order;
#[path = "cases/parallel_nested.rs"]
mod parallel_nested;
#[path = "cases/succeed_only.rs"]
mod succeed_only;
#[path = "cases/task_catch_retry.rs"]
mod task_catch_retry;
#[path = "cases/typed.rs"]
mod typed;
#[path = "cases/wait_forms.rs"]
mod wait_forms;

fn main() {
    aws_accepted::main();
    choice_loop::main();
    comments::main();
    fail_only::main();
    hello::main();
    hostile_names::main();
    hostile_resources::main();
    map_nested::main();
    no_implicit_prelude::main();
    order::main();
    parallel_nested::main();
    succeed_only::main();
    task_catch_retry::main();
    typed::main();
    wait_forms::main();
}
