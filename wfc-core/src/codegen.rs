//! IR → Rust tokens: one module per workflow, with a `Handler` trait, a serializable `State`
//! enum and a per-state `step` function per state machine.
//!
//! Shape (see the crate docs of `wfc-runtime` for how it is used):
//!
//! * `pub mod <workflow>` with a Mermaid diagram and the definition in its docs;
//! * `DEFINITION` (the text as written) and `DEFINITION_ID` (the workflow's name and its IR's
//!   hash, which durable stores pin executions to). No IR is embedded: what the runtime needs of
//!   the workflow beyond its states is written out as constants (the name, `TimeoutSeconds`, a
//!   Serverless Workflow's settings as construction code);
//! * `trait Handler`: one method per distinct Task resource;
//! * `enum State`: one variant per state of the machine, carrying that state's raw input;
//! * `run`, `run_with`, `resume`, and `step`: one state's work (`match state { … }`) giving the
//!   next `State` or the machine's end, run by the runtime's one driver loop (`abi::drive`).
//!   Pass, Choice, Succeed, Task, Wait, Fail, Parallel and Map states (INLINE or DISTRIBUTED,
//!   JSONPath or JSONata) are generated as Rust ([`states`]: paths as steps, templates as construction
//!   code, intrinsics as calls, Choice rules as `if` conditions, JSONata expressions as
//!   `static`s, Retry/Catch as `const` tables) around the runtime's `abi` visit functions;
//!   Serverless Workflow states likewise ([`sw`]: an `abi::SwCode` per state, `{{ }}`
//!   expressions as `static`s, function actions calling the `Handler` method, each way out a
//!   `State` variant, a subflow compiled together a nested machine) around `abi::sw_step`.
//!   Every state of every type is generated; an IR no definition lowers to (a Choice with an
//!   `Is*` test on a non-Boolean operand, which the front end refuses) is a build error naming
//!   the state (`codegen_snapshots` checks over every definition of tests/cases and the AWS
//!   corpus that no module embeds or reads the IR or calls a per-state interpreter function).
//!   A machine's Tasks with no data processing of their own (an `abi::PlainTask` each) share one
//!   arm of `step`, with one await per handler method, so the visit's poll is compiled once per
//!   method in `step`, not once per state;
//! * one nested module per Parallel branch and per Map item processor, with its own `State` and
//!   `step`, run by the Parallel's or Map's visit (`abi::parallel`, `abi::map`), and per
//!   Serverless Workflow subflow compiled together (`abi::sw_subflow`, a foreach's or parallel
//!   branch's body).
//!
//! Hygiene: every path is `::`-rooted (the runtime through `Settings::runtime_path`), so user
//! imports, a shadowed prelude or `#[no_implicit_prelude]` cannot change the meaning. Every string
//! from the definition enters the output as a string literal token or a doc attribute, never as
//! code: identifiers are derived by the `names` module, which keeps only ASCII letters and digits.

mod docs;
mod names;
mod states;
mod sw;

use std::collections::BTreeSet;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use wfc_ir::{State, StateKind, StateMachine, TaskState, Transition, Workflow};

use crate::{Settings, Source};

/// Generates the Rust module for a workflow.
///
/// Never panics: a setting that cannot be honoured (an unparsable runtime path or module name)
/// becomes a `compile_error!` in the output, which the macro reports at the call site.
pub fn generate(workflow: &Workflow, source: Source<'_>, settings: &Settings) -> TokenStream {
    match Generator::new(workflow, source, settings).and_then(|g| g.module()) {
        Ok(tokens) => tokens,
        Err(message) => {
            let message = Literal::string(&message);
            quote!(::core::compile_error! { #message })
        }
    }
}

/// Pretty-prints generated tokens with prettyplease. Tokens that do not parse as a file (which
/// [`generate`] never produces) are returned unformatted rather than lost.
pub fn format(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}

/// The module name generated for `workflow` under `settings`: `Settings::module_name` if set,
/// else the workflow's name, in snake case and sanitized (`Order Flow` → `order_flow`).
pub fn module_name(workflow: &Workflow, settings: &Settings) -> String {
    sanitize_module_name(settings.module_name.as_deref().unwrap_or(&workflow.name))
}

/// `name` as a module identifier: snake case, ASCII only, never a keyword (`Order Flow` →
/// `order_flow`, `type` → `type_`, `""` → `workflow`).
pub fn sanitize_module_name(name: &str) -> String {
    names::snake(name, "workflow")
}

/// The handler method generated for each distinct Task resource, in sorted-resource order:
/// `(resource, method name, states using it)`. Collisions get `_2`, `_3` in that order.
pub fn handler_methods(workflow: &Workflow) -> Vec<(String, String, Vec<String>)> {
    let resources = workflow.resources();
    let candidates = resources.iter().map(|(r, _)| names::snake(names::resource_tail(r), "task")).collect();
    let methods = names::dedupe(candidates, false, &[]);
    resources
        .into_iter()
        .zip(methods)
        .map(|((resource, states), method)| {
            (resource.to_owned(), method, states.into_iter().map(str::to_owned).collect())
        })
        .collect()
}

/// The name of the type alias generated for one side (`"input"` or `"result"`) of a typed
/// handler method: `__wfc_<module>_<method>_<side>`, beside the module, which the `Handler`
/// trait names as `super::<alias>`.
pub fn task_type_alias(module: &str, method: &str, side: &str) -> String {
    format!("__wfc_{module}_{method}_{side}")
}

/// The alias item itself: `type <alias> = <ty>;`, hidden from docs. `include_workflow!` emits it
/// with the user's own tokens (see [`Settings::emit_task_type_aliases`]), so rustc reports a type
/// that does not resolve at the type in the macro call.
pub fn task_type_alias_item(alias: &Ident, ty: TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        type #alias = #ty;
    }
}

/// A type's tokens as text for docs: `Vec < crate :: Line >` → `Vec<crate::Line>`, keeping the
/// spaces words need (`&'static str`, `dyn Fn() + Send`).
fn type_text(tokens: &str) -> String {
    let mut text = tokens.to_owned();
    for (spaced, tight) in
        [(" :: ", "::"), (":: ", "::"), (" < ", "<"), ("< ", "<"), (" >", ">"), (" ,", ","), ("& ", "&")]
    {
        text = text.replace(spaced, tight);
    }
    text
}

/// Why a Serverless Workflow cannot have typed handler methods (its functions are called by
/// name through the runtime's JSON function table).
const SW_UNTYPED: &str = "typed handler methods are for ASL Task resources; a Serverless Workflow's functions take and \
                          return JSON";

/// A problem with [`Settings::task_types`] against a workflow: `index` is the declaration's
/// position in `task_types`, for the caller to locate it (the macro argument, the build.rs call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTypesProblem {
    /// Which declaration.
    pub index: usize,
    /// What is wrong, with a suggestion where there is one.
    pub message: String,
}

/// Checks the declared task types of `settings` against `workflow`: each must name a Task
/// resource of the definition (did-you-mean for a near miss, or a resource whose handler method
/// or last segment is what was written), at most once, and the workflow must be ASL.
pub fn check_task_types(workflow: &Workflow, settings: &Settings) -> Vec<TaskTypesProblem> {
    let mut problems = Vec::new();
    if settings.task_types.is_empty() {
        return problems;
    }
    if workflow.machines().iter().any(|m| m.states.iter().any(|s| matches!(s.kind, StateKind::Sw(_)))) {
        problems.push(TaskTypesProblem { index: 0, message: SW_UNTYPED.to_owned() });
        return problems;
    }
    let methods = handler_methods(workflow);
    for (index, declared) in settings.task_types.iter().enumerate() {
        let wanted = declared.resource.as_str();
        if methods.iter().any(|(resource, _, _)| resource == wanted) {
            if settings.task_types[..index].iter().any(|earlier| earlier.resource == wanted) {
                problems.push(TaskTypesProblem { index, message: format!("Task resource `{wanted}` is typed twice") });
            }
            continue;
        }
        // `check_stock` or `CheckStock` for `…:function:CheckStock`, else the nearest spelling.
        let by_name =
            methods.iter().find(|(resource, method, _)| method == wanted || names::resource_tail(resource) == wanted);
        let suggestion = by_name
            .map(|(resource, _, _)| resource.as_str())
            .or_else(|| crate::asl::suggest(wanted, methods.iter().map(|(resource, _, _)| resource.as_str())));
        let message = match suggestion {
            Some(resource) => format!("no Task in the definition has Resource `{wanted}`; did you mean `{resource}`?"),
            None if methods.is_empty() => format!("no Task in the definition has Resource `{wanted}`: it has no Tasks"),
            None => {
                let all = methods.iter().map(|(resource, _, _)| format!("`{resource}`")).collect::<Vec<_>>();
                format!("no Task in the definition has Resource `{wanted}`; its Task resources are {}", all.join(", "))
            }
        };
        problems.push(TaskTypesProblem { index, message });
    }
    problems
}

/// `#[doc = " line"]` attributes, one per line of `text`, so the formatted output reads as `///`
/// comments (the leading space is what `///` comments carry; rustdoc strips it).
fn doc(text: &str) -> TokenStream {
    let lines = text.split('\n').map(|line| {
        let line = if line.is_empty() { String::new() } else { format!(" {line}") };
        let line = Literal::string(&line);
        quote!(#[doc = #line])
    });
    quote!(#(#lines)*)
}

/// `name` as an identifier. The names module only produces valid, non-keyword identifiers; this
/// check turns a bug there into a `compile_error!` instead of a panic in the macro.
fn ident(name: &str) -> Result<Ident, String> {
    syn::parse_str::<Ident>(name).map_err(|_| format!("wfc: internal error: `{name}` is not a usable identifier"))
}

/// A nested machine's module: `((state index, branch index), module name)`, for a Parallel
/// branch or a Map's item processor (branch index 0).
type BranchModule = ((usize, usize), Ident);

struct Generator<'a> {
    workflow: &'a Workflow,
    source: Source<'a>,
    module: Ident,
    /// The runtime's `__private` module, e.g. `::wfc_runtime::__private`.
    private: TokenStream,
    /// The same path as a string, for `#[serde(crate = "…")]`.
    serde_crate: String,
    /// `(resource, method, states)` in sorted-resource order.
    methods: Vec<(String, Ident, Vec<String>)>,
    /// The typed handler methods, by resource (`Settings::task_types`); absent: JSON in and out.
    typed: std::collections::BTreeMap<String, Typed>,
    /// The type aliases of the typed methods, placed beside the module (see [`Typed`]).
    aliases: TokenStream,
}

/// The declared types of a typed handler method. Each is a private type alias generated beside
/// the module (`__wfc_<module>_<method>_input = <the declared type>;`), so the type is resolved
/// exactly as the user wrote it, in the scope that includes the workflow, and the `Handler`
/// trait names it as `super::<alias>`. `None`: that side stays JSON.
struct Typed {
    input: Option<(Ident, String)>,
    result: Option<(Ident, String)>,
}

/// A generated Task state's parts, for its own arm of `step` or, when its code is plain, a
/// place in the arm its machine's plain Tasks share.
struct TaskArm {
    variant: Ident,
    visit: states::TaskVisit,
    /// The path of its method's visit function (`task_<method>`).
    visit_fn: TokenStream,
    method: String,
    /// The state's name, a string literal.
    name: Literal,
    /// Where control goes with the visit's `output` on success: the next `State`, or a return.
    next: TokenStream,
    /// `target => State::X(output),` for each state its catchers lead to.
    targets: Vec<TokenStream>,
}

impl TaskArm {
    /// The state's own arm of `step`.
    fn own(&self) -> TokenStream {
        let (variant, name, next, targets) = (&self.variant, &self.name, &self.next, &self.targets);
        let states::TaskVisit { decls, visit, .. } = &self.visit;
        let goto_arm = goto_arm(name, targets);
        quote! {
            State::#variant(input) => {
                #decls
                match #visit {
                    __wfc::Step::Next(output) => #next,
                    #goto_arm
                }
            }
        }
    }
}

/// Where `transition` sends `value`: the next `State`, or the machine's end (a `return`).
fn transition_to(variants: &[Ident], transition: Transition, value: TokenStream) -> Result<TokenStream, String> {
    Ok(match transition {
        Transition::Next(id) => {
            let next = variants.get(id).ok_or_else(|| format!("wfc: Next index {id} is out of range"))?;
            quote!(State::#next(#value))
        }
        Transition::End => quote!(return Ok(__wfc::abi::Flow::End(#value))),
    })
}

/// `target => State::X(output),` for each state index in `targets` (a catcher's `Next`).
fn catch_arms(variants: &[Ident], targets: BTreeSet<usize>) -> Result<Vec<TokenStream>, String> {
    targets
        .into_iter()
        .map(|id| {
            let v = variants.get(id).ok_or_else(|| format!("wfc: Catch Next index {id} is out of range"))?;
            let id = Literal::usize_unsuffixed(id);
            Ok(quote!(#id => State::#v(output),))
        })
        .collect()
}

/// The arm of a `match` on a visit's `Step` for `Goto`: the state's `catch_arms`, and for any
/// other target a runtime failure naming the state `name`.
fn goto_arm(name: &Literal, catch_arms: &[TokenStream]) -> TokenStream {
    let fallback = quote!(return Err(__wfc::abi::no_catcher_leading_to(#name, target)));
    if catch_arms.is_empty() {
        quote!(__wfc::Step::Goto { target, .. } => #fallback,)
    } else {
        quote! {
            __wfc::Step::Goto { target, output } => match target {
                #(#catch_arms)*
                _ => #fallback,
            },
        }
    }
}

/// Where a state machine sits: the top level, or a branch reached through Parallel states.
struct MachineCtx<'a> {
    machine: &'a StateMachine,
    /// 0 for the top level; the number of `super::` hops to the workflow module otherwise.
    depth: usize,
    /// Whether this is a nested machine (a Parallel branch, a Map's item processor, an SW
    /// subflow compiled together), which gets a `drive` from its start state.
    nested: bool,
    /// The same in Markdown, for docs.
    title_doc: String,
}

impl<'a> Generator<'a> {
    fn new(workflow: &'a Workflow, source: Source<'a>, settings: &Settings) -> Result<Generator<'a>, String> {
        let runtime: syn::Path = syn::parse_str(&settings.runtime_path)
            .map_err(|e| format!("wfc: the runtime path `{}` is not a Rust path: {e}", settings.runtime_path))?;
        let private = quote!(#runtime::__private);
        let serde_crate = format!("{}::serde", private).replace(' ', "");
        let module = ident(&module_name(workflow, settings))?;
        let methods = handler_methods(workflow)
            .into_iter()
            .map(|(resource, method, states)| Ok((resource, ident(&method)?, states)))
            .collect::<Result<Vec<_>, String>>()?;
        let (typed, aliases) = Self::typed_methods(workflow, settings, &module, &methods)?;
        Ok(Generator { workflow, source, module, private, serde_crate, methods, typed, aliases })
    }

    /// The typed methods declared in `settings` and their aliases. A declaration naming no Task
    /// resource is skipped here ([`check_task_types`] reports it, with the caller's location).
    fn typed_methods(
        workflow: &Workflow,
        settings: &Settings,
        module: &Ident,
        methods: &[(String, Ident, Vec<String>)],
    ) -> Result<(std::collections::BTreeMap<String, Typed>, TokenStream), String> {
        let mut typed = std::collections::BTreeMap::new();
        let mut aliases = TokenStream::new();
        if settings.task_types.is_empty() {
            return Ok((typed, aliases));
        }
        if workflow.machines().iter().any(|m| m.states.iter().any(|s| matches!(s.kind, StateKind::Sw(_)))) {
            return Err(SW_UNTYPED.to_owned());
        }
        for declared in &settings.task_types {
            let Some((_, method, _)) = methods.iter().find(|(resource, _, _)| *resource == declared.resource) else {
                continue;
            };
            if typed.contains_key(&declared.resource) {
                continue;
            }
            let mut alias = |side: &str, text: &Option<String>| -> Result<Option<(Ident, String)>, String> {
                let Some(text) = text else { return Ok(None) };
                let ty: syn::Type = syn::parse_str(text).map_err(|e| {
                    format!(
                        "wfc: the {side} type `{text}` declared for Task resource `{}` is not a Rust type: {e}",
                        declared.resource
                    )
                })?;
                let name = ident(&task_type_alias(&module.to_string(), &method.to_string(), side))?;
                if settings.emit_task_type_aliases {
                    aliases.extend(task_type_alias_item(&name, quote!(#ty)));
                }
                Ok(Some((name, quote!(#ty).to_string())))
            };
            let input = alias("input", &declared.input)?;
            let result = alias("result", &declared.result)?;
            typed.insert(declared.resource.clone(), Typed { input, result });
        }
        Ok((typed, aliases))
    }

    /// The name of the function that runs a Task's visit with the handler method `method`
    /// (see [`Self::task_visits`]).
    fn task_visit_fn(method: &Ident) -> Ident {
        format_ident!("task_{}", method)
    }

    /// One function per handler method that runs a Task's visit (`abi::counted_task`) around a state's
    /// code, calling the method per attempt (through the runtime's serde boundary,
    /// `abi::typed_task`, when its resource is typed). The closure is written once, here, so
    /// every Task calling the same method (and whose code is an `abi::PlainTask`) awaits the
    /// same future type: the visit is compiled once per method, not once per state.
    fn task_visits(&self) -> TokenStream {
        let functions = self.methods.iter().map(|(resource, method, _)| {
            let name = Self::task_visit_fn(method);
            let invoke = if self.typed.contains_key(resource) {
                quote!(move |input, ctx| __wfc::abi::typed_task(input, ctx, move |input, ctx| handler.#method(input, ctx)))
            } else {
                quote!(move |input, ctx| handler.#method(input, ctx))
            };
            let text = format!(
                "The visit of a Task state calling [`Handler::{}`], around the state's `code`.",
                method.to_string().trim_start_matches("r#")
            );
            let doc = doc(&text);
            quote! {
                #doc
                fn #name<'v, H: Handler, C: __wfc::abi::TaskCode + ::core::marker::Sync>(
                    handler: &'v H,
                    exec: &'v __wfc::Execution,
                    name: &'v str,
                    code: &'v C,
                    input: __wfc::Value,
                ) -> impl ::core::future::Future<Output = Result<__wfc::Step, __wfc::Failure>> + 'v {
                    __wfc::abi::counted_task(exec, name, code, input, #invoke)
                }
            }
        });
        quote!(#(#functions)*)
    }

    fn module(&self) -> Result<TokenStream, String> {
        let wf = self.workflow;
        let private = &self.private;
        let module = &self.module;
        let aliases = &self.aliases;
        // A typed method names the user's types, which may be less visible than the trait (its
        // parameters): the trait is the workflow's API either way. rustc applies no `allow` in
        // the module to the futures the methods return (its `private_interfaces` check of
        // return-position `impl Trait` in traits, rust-lang/rust#143531, is leveled at the
        // crate), so a *result* type must be as visible as the module: the README says so.
        let typed_allow = if self.typed.is_empty() { quote!() } else { quote!(private_interfaces,) };
        let module_doc = doc(&self.module_doc());
        let definition = Literal::string(self.source.text);
        let definition_doc = doc(&format!("The definition as written ({}).", docs::code(self.source.path)));
        // What the runtime needs of the workflow beyond its states, written out as constants
        // (the IR itself is not embedded): its name, the IR hash durable stores pin executions
        // to, and TimeoutSeconds.
        let workflow_name = Literal::string(&wf.name);
        let hash = Literal::string(&wf.definition_hash());
        let timeout = match wf.timeout_seconds {
            Some(t) => {
                let t = Literal::u64_suffixed(t);
                quote!(::core::option::Option::Some(#t))
            }
            None => quote!(::core::option::Option::None),
        };
        let handler = self.handler_trait();
        let top = MachineCtx { machine: &wf.machine, depth: 0, nested: false, title_doc: "the workflow".to_owned() };
        let machine_items = self.machine_items(&top)?;
        let start = self.start_variant(&wf.machine)?;
        let is_sw = wf.machine.states.iter().any(|s| matches!(s.kind, StateKind::Sw(_)));
        let (finish, sw_meta) = if is_sw {
            // The workflow's settings (`id`, schemas, schedule) are kept on its start state.
            let meta = match wf.machine.states.get(wf.machine.start_at).map(|s| &s.kind) {
                Some(StateKind::Sw(spec)) => spec.workflow.as_deref(),
                _ => None,
            };
            let (meta_arg, meta_item) = match meta {
                Some(meta) => {
                    let build = sw::meta(meta);
                    (
                        quote!(::core::option::Option::Some(&*META)),
                        quote! {
                            /// The workflow's settings (`id`, `dataInputSchema`/`dataOutputSchema`,
                            /// `start.schedule`), built once.
                            static META: __wfc::LazyLock<__wfc::abi::SwWorkflowMeta> = __wfc::LazyLock::new(|| #build);
                        },
                    )
                }
                None => (quote!(::core::option::Option::None), quote!()),
            };
            (
                quote! {
                    __wfc::abi::sw_run_top(#meta_arg, #timeout, &exec, &Dispatch(handler), input, |input| resume(handler, &exec, State::#start(input))).await
                },
                meta_item,
            )
        } else {
            (quote!(exec.finish(#timeout, resume(handler, &exec, State::#start(input))).await), quote!())
        };
        let sw_dispatch = if is_sw { self.sw_dispatch(sw::has_detached(wf)) } else { quote!() };
        let task_visits = if is_sw { quote!() } else { self.task_visits() };
        Ok(quote! {
            #aliases
            #module_doc
            pub mod #module {
                #![allow(
                    // A binary that calls only `run` must not be warned about the rest of this
                    // complete API (`resume`, `DEFINITION`, unused variants).
                    dead_code,
                    // The module may be included inside a private module; its `pub` items are
                    // the workflow's API either way.
                    unreachable_pub,
                    // Variant names come from state names, which often share a word.
                    clippy::enum_variant_names,
                    // Machines whose every state ends them return from each `match` arm.
                    clippy::needless_return,
                    // Types spelled with `::`-rooted paths.
                    clippy::type_complexity,
                    #typed_allow
                )]

                use #private as __wfc;
                // A machine whose states never name `Ok` or `Some` (a Succeed, a Parallel) leaves
                // them unused.
                #[allow(unused_imports)]
                use ::core::result::Result::{self, Err, Ok};
                #[allow(unused_imports)]
                use ::core::option::Option::Some;

                const _: () = #private::ABI_V1;

                #definition_doc
                pub const DEFINITION: &str = #definition;

                /// The workflow's name and the hash of its lowered definition (the IR), as durable
                /// stores record them: open a journal with
                /// `Journal::open_definition_id`/`open_version_id` to pin an execution to this
                /// definition.
                pub const DEFINITION_ID: __wfc::DefinitionId<'static> = __wfc::DefinitionId::new(#workflow_name, #hash);

                #handler

                /// Runs the workflow on `input` to completion on the real clock, with default
                /// [`RunOptions`](__wfc::RunOptions). Returns the output or the failure that ended it.
                pub async fn run<H: Handler>(handler: &H, input: __wfc::Value) -> Result<__wfc::Value, __wfc::Failure> {
                    run_with(handler, input, <__wfc::RunOptions as ::core::default::Default>::default())
                        .await
                        .into_result()
                }

                /// Runs the workflow on `input` with `options` (clock, name, seed) and returns the
                /// whole result: status, output or error, and the history.
                pub async fn run_with<H: Handler>(
                    handler: &H,
                    input: __wfc::Value,
                    options: __wfc::RunOptions,
                ) -> __wfc::ExecutionResult {
                    let exec = __wfc::Execution::start(#workflow_name, &input, options);
                    #finish
                }

                #sw_meta

                #sw_dispatch

                #task_visits

                #machine_items
            }
        })
    }

    fn module_doc(&self) -> String {
        let wf = self.workflow;
        let mut doc = String::new();
        match &wf.comment {
            Some(comment) => doc.push_str(&docs::paragraph(comment)),
            None => doc.push_str(&format!("The workflow {}.", docs::code(&wf.name))),
        }
        // The module's outer docs resolve links from the enclosing scope, hence `module::item`.
        let module = &self.module;
        doc.push_str(&format!(
            "\n\nGenerated by wfc from {}. Implement [`Handler`]({module}::Handler) and call \
             [`run`]({module}::run).\n\n",
            docs::code(self.source.path)
        ));
        doc.push_str(&docs::block("mermaid", &crate::render::mermaid(wf)));
        doc.push_str("\n\n");
        doc.push_str(&docs::block("json", self.source.text));
        doc
    }

    /// For Serverless Workflow: the handler seen as the runtime's by-name function table (for
    /// the top-level run, which runs subflows started without waiting on it), and, when the
    /// workflow has such a subflow compiled together (`detached`), that table seen as a
    /// `Handler` again, for the child's generated machine.
    fn sw_dispatch(&self, detached: bool) -> TokenStream {
        let arms = self.methods.iter().map(|(resource, method, _)| {
            let resource = Literal::string(resource);
            quote!(#resource => __wfc::FutureExt::boxed(self.0.#method(input, ctx)),)
        });
        let by_name = if detached {
            let methods = self.methods.iter().map(|(resource, method, _)| {
                let resource = Literal::string(resource);
                quote! {
                    fn #method(
                        &self,
                        input: __wfc::Value,
                        ctx: __wfc::TaskContext,
                    ) -> impl ::core::future::Future<Output = Result<__wfc::Value, __wfc::Failure>> + ::core::marker::Send {
                        self.0.call(#resource, input, ctx)
                    }
                }
            });
            quote! {
                /// The top-level run's function table seen as a [`Handler`]: the machine of a
                /// subflow started without waiting runs on it (queued in the execution, it cannot
                /// borrow the handler itself).
                struct ByName<'a>(&'a dyn __wfc::DynHandler);

                impl Handler for ByName<'_> {
                    #(#methods)*
                }
            }
        } else {
            quote!()
        };
        quote! {
            #by_name

            /// Calls the [`Handler`] method of an SW function by the function's name.
            struct Dispatch<'h, H>(&'h H);

            impl<H: Handler> __wfc::DynHandler for Dispatch<'_, H> {
                fn call<'a>(
                    &'a self,
                    resource: &'a str,
                    input: __wfc::Value,
                    ctx: __wfc::TaskContext,
                ) -> __wfc::BoxFuture<'a, Result<__wfc::Value, __wfc::Failure>> {
                    match resource {
                        #(#arms)*
                        other => {
                            let _ = (input, ctx);
                            let failure = __wfc::Failure::runtime(::std::format!("the workflow has no function {:?}", other));
                            __wfc::FutureExt::boxed(async move { Err(failure) })
                        }
                    }
                }
            }
        }
    }

    fn handler_trait(&self) -> TokenStream {
        let private = quote!(__wfc);
        let methods = self.methods.iter().map(|(resource, method, states)| {
            let states = states.iter().map(|s| docs::code(s)).collect::<Vec<_>>().join(", ");
            let mut text = format!("Resource {}. Used by states: {states}.", docs::code(resource));
            let typed = self.typed.get(resource);
            let side = |side: Option<&(Ident, String)>| match side {
                Some((alias, _)) => quote!(super::#alias),
                None => quote!(#private::Value),
            };
            let input = side(typed.and_then(|t| t.input.as_ref()));
            let result = side(typed.and_then(|t| t.result.as_ref()));
            if let Some(typed) = typed {
                let shown = |side: Option<&(Ident, String)>| {
                    side.map_or_else(|| "JSON".to_owned(), |(_, text)| docs::code(&type_text(text)))
                };
                text.push_str(&format!(
                    "\n\nTyped: the input is {}, the result {} (serde at the boundary; a value that does not \
                     convert fails the Task with `Wfc.TypeMismatch`).",
                    shown(typed.input.as_ref()),
                    shown(typed.result.as_ref())
                ));
            }
            let doc = doc(&text);
            quote! {
                #doc
                fn #method(
                    &self,
                    input: #input,
                    ctx: #private::TaskContext,
                ) -> impl ::core::future::Future<Output = Result<#result, #private::Failure>> + ::core::marker::Send;
            }
        });
        quote! {
            /// Implement this to run the workflow: one method per distinct Task resource.
            ///
            /// Each method receives the Task's effective input (after `InputPath` and `Parameters`)
            /// and returns its result, or a [`TaskError`](__wfc::Failure) whose error name `Retry`
            /// and `Catch` match on. A panic in a method fails the execution; it does not crash.
            pub trait Handler: ::core::marker::Send + ::core::marker::Sync {
                #(#methods)*
            }
        }
    }

    fn variants(machine: &StateMachine) -> Result<Vec<Ident>, String> {
        let candidates = machine.states.iter().map(|s| names::camel(&s.name, "State")).collect();
        names::dedupe(candidates, true, &[]).iter().map(|v| ident(v)).collect()
    }

    fn start_variant(&self, machine: &StateMachine) -> Result<Ident, String> {
        Self::variants(machine)?
            .into_iter()
            .nth(machine.start_at)
            .ok_or_else(|| format!("wfc: StartAt index {} is out of range", machine.start_at))
    }

    /// Module names for every branch of every Parallel state of `machine`, keyed by
    /// `(state index, branch index)`.
    fn branch_modules(machine: &StateMachine) -> Result<Vec<BranchModule>, String> {
        let mut keys = Vec::new();
        let mut candidates = Vec::new();
        for (i, state) in machine.states.iter().enumerate() {
            match &state.kind {
                StateKind::Parallel(p) => {
                    let base = names::snake(&state.name, "parallel");
                    for b in 0..p.branches.len() {
                        keys.push((i, b));
                        candidates.push(format!("{base}_branch_{b}"));
                    }
                }
                StateKind::Map(_) => {
                    keys.push((i, 0));
                    candidates.push(format!("{}_item_processor", names::snake(&state.name, "map")));
                }
                // A generated SW state's subflows compiled together: a generated machine each.
                StateKind::Sw(spec) => {
                    let base = names::snake(&state.name, "subflow");
                    for (b, _) in sw::embedded(spec) {
                        keys.push((i, b));
                        // `loop_` (a keyword's escape) must not give `loop__subflow_0`.
                        candidates.push(format!("{}_subflow_{b}", base.trim_end_matches('_')));
                    }
                }
                _ => {}
            }
        }
        let reserved = ["ir", "machine", "resume", "drive", "step", "run", "run_with", "__wfc"];
        keys.into_iter().zip(names::dedupe(candidates, false, &reserved)).map(|(k, n)| Ok((k, ident(&n)?))).collect()
    }

    /// The `State` enum, its driver, and the modules of nested branches.
    fn machine_items(&self, ctx: &MachineCtx<'_>) -> Result<TokenStream, String> {
        let machine = ctx.machine;
        let variants = Self::variants(machine)?;
        let branches = Self::branch_modules(machine)?;
        let serde_crate = Literal::string(&self.serde_crate);
        let title = &ctx.title_doc;

        let variant_defs = machine.states.iter().zip(&variants).map(|(state, variant)| {
            let name = Literal::string(&state.name);
            let mut text = format!("State {} ({}).", docs::code(&state.name), state.kind.type_name());
            if let Some(comment) = &state.comment {
                text.push_str("\n\n");
                text.push_str(&docs::paragraph(comment));
            }
            let doc = doc(&text);
            quote! {
                #doc
                #[serde(rename = #name)]
                #variant(__wfc::Value)
            }
        });
        let name_arms = machine.states.iter().zip(&variants).map(|(state, variant)| {
            let name = Literal::string(&state.name);
            quote!(State::#variant(_) => #name)
        });
        let input_arms = variants.iter().map(|variant| quote!(State::#variant(input) => input));

        let handler_path = Self::handler_path(ctx.depth);
        let mut arms = Vec::with_capacity(machine.states.len());
        let mut plain = Vec::new();
        for (i, state) in machine.states.iter().enumerate() {
            if let StateKind::Task(t) = &state.kind
                && let Some(task) = self.task_arm(i, state, t, &variants, ctx.depth)?
            {
                match task.visit.plain {
                    true => plain.push(task),
                    false => arms.push(task.own()),
                }
                continue;
            }
            arms.push(self.arm(i, state, &variants, &branches, ctx.depth)?);
        }
        // Tasks with plain code share one arm when there are several (see `plain_tasks_arm`).
        let shared = match plain.len() {
            0 | 1 => {
                arms.extend(plain.iter().map(TaskArm::own));
                None
            }
            _ => Some(Self::plain_tasks_arm(&plain, !arms.is_empty())),
        };
        let dispatch = match (shared, arms.is_empty()) {
            (Some(shared), true) => shared,
            (Some(shared), false) => quote! {
                match state {
                    #(#arms)*
                    state => #shared
                }
            },
            (None, _) => quote! {
                match state {
                    #(#arms)*
                }
            },
        };
        let needs_loop = machine.states.iter().any(|s| match &s.kind {
            StateKind::Pass(p) => matches!(p.transition, Transition::Next(_)),
            StateKind::Wait(w) => matches!(w.transition, Transition::Next(_)),
            StateKind::Task(t) => matches!(t.transition, Transition::Next(_)) || !t.catch.is_empty(),
            StateKind::Parallel(p) => matches!(p.transition, Transition::Next(_)) || !p.catch.is_empty(),
            StateKind::Map(m) => matches!(m.transition, Transition::Next(_)) || !m.catch.is_empty(),
            StateKind::Choice(_) => true,
            // A Serverless Workflow state loops only when it can send control to a state; a
            // machine whose every state only ends would make the `loop` unreachable code.
            StateKind::Sw(sw) => sw.edges().into_iter().any(|(target, _)| target.is_some()),
            StateKind::Succeed(_) | StateKind::Fail(_) => false,
        });
        let uses_handler = machine.states.iter().any(|s| {
            matches!(s.kind, StateKind::Task(_) | StateKind::Parallel(_) | StateKind::Map(_) | StateKind::Sw(_))
        });
        let unused_handler = if uses_handler { quote!() } else { quote!(let _ = handler;) };
        // Each arm evaluates to the next `State`, or returns the machine's end (`Flow::End`) or
        // a failure; a machine whose every state ends it has no next state to wrap.
        let body = if needs_loop {
            quote! {
                let next = #dispatch;
                Ok(__wfc::abi::Flow::Next(next))
            }
        } else {
            dispatch
        };

        let mut nested = Vec::new();
        for ((p, b), module) in &branches {
            let state_name = machine.states.get(*p).map(|s| s.name.as_str()).unwrap_or_default();
            let (child, doc) = match machine.states.get(*p).map(|s| &s.kind) {
                Some(StateKind::Parallel(parallel)) => {
                    let Some(branch) = parallel.branches.get(*b) else {
                        return Err("wfc: internal error: a branch module without its branch".to_owned());
                    };
                    let child = MachineCtx {
                        machine: branch,
                        depth: ctx.depth + 1,
                        nested: true,
                        title_doc: format!("branch {b} of the Parallel state {}", docs::code(state_name)),
                    };
                    let doc = doc(&format!(
                        "Branch {b} of the Parallel state {}: its own states and driver.",
                        docs::code(state_name)
                    ));
                    (child, doc)
                }
                Some(StateKind::Map(map)) => {
                    let child = MachineCtx {
                        machine: &map.item_processor,
                        depth: ctx.depth + 1,
                        nested: true,
                        title_doc: format!("the item processor of the Map state {}", docs::code(state_name)),
                    };
                    let doc = doc(&format!(
                        "The item processor of the Map state {}: the states each item runs through, and \
                         their driver.",
                        docs::code(state_name)
                    ));
                    (child, doc)
                }
                Some(StateKind::Sw(spec)) => {
                    let Some((_, workflow)) = sw::embedded(spec).into_iter().find(|(i, _)| i == b) else {
                        return Err("wfc: internal error: a subflow module without its workflow".to_owned());
                    };
                    let child = MachineCtx {
                        machine: &workflow.machine,
                        depth: ctx.depth + 1,
                        nested: true,
                        title_doc: format!("subflow {b} of the state {}", docs::code(state_name)),
                    };
                    let doc = doc(&format!(
                        "The subflow {} ({b}) of the Serverless Workflow state {}: its own states and driver.",
                        docs::code(&workflow.name),
                        docs::code(state_name)
                    ));
                    (child, doc)
                }
                _ => return Err("wfc: internal error: a nested module without its Parallel or Map state".to_owned()),
            };
            let items = self.machine_items(&child)?;
            let private = &self.private;
            nested.push(quote! {
                #doc
                pub mod #module {
                    use #private as __wfc;
                    // A branch whose every path ends in a Succeed or Fail state never names `Ok`.
                    #[allow(unused_imports)]
                    use ::core::result::Result::{self, Err, Ok};
                    // A branch of generated states only may not name `Some` either.
                    #[allow(unused_imports)]
                    use ::core::option::Option::Some;

                    #items
                }
            });
        }

        let branch_support = match ctx.nested {
            false => quote!(),
            true => {
                let start = self.start_variant(machine)?;
                quote! {
                    /// Runs this branch from its start state.
                    pub(super) fn drive<'a, H: #handler_path>(
                        handler: &'a H,
                        exec: &'a __wfc::Execution,
                        input: __wfc::Value,
                    ) -> impl ::core::future::Future<Output = Result<__wfc::Value, __wfc::Failure>> + 'a {
                        resume(handler, exec, State::#start(input))
                    }
                }
            }
        };

        let enum_doc = doc(&format!(
            "Where an execution of {title} is: one variant per state, carrying the state's raw input.\n\n\
             Serializable, so an execution can be checkpointed and continued with [`resume`]."
        ));
        let resume_doc = doc(&format!(
            "Runs {title} from `state` until it ends, in the execution `exec` (its clock, history and context)."
        ));
        let step_doc = doc(&format!(
            "One state of {title}: its work, then where control goes (run by the runtime's driver, `abi::drive`)."
        ));

        Ok(quote! {
            #enum_doc
            #[derive(
                ::core::fmt::Debug,
                ::core::clone::Clone,
                ::core::cmp::PartialEq,
                __wfc::serde::Serialize,
                __wfc::serde::Deserialize,
            )]
            #[serde(crate = #serde_crate)]
            pub enum State {
                #(#variant_defs,)*
            }

            impl State {
                /// The state's name, as written in the definition.
                pub fn name(&self) -> &'static str {
                    match self {
                        #(#name_arms,)*
                    }
                }

                /// The state's raw input.
                pub fn input(&self) -> &__wfc::Value {
                    match self {
                        #(#input_arms,)*
                    }
                }
            }

            #branch_support

            #resume_doc
            pub fn resume<'a, H: #handler_path>(
                handler: &'a H,
                exec: &'a __wfc::Execution,
                state: State,
            ) -> impl ::core::future::Future<Output = Result<__wfc::Value, __wfc::Failure>> + 'a {
                __wfc::abi::drive(state, move |state| step(handler, exec, state))
            }

            #step_doc
            fn step<'a, H: #handler_path>(
                handler: &'a H,
                exec: &'a __wfc::Execution,
                state: State,
            ) -> impl ::core::future::Future<Output = Result<__wfc::abi::Flow<State>, __wfc::Failure>> + 'a {
                // A block rather than an `async fn`, which would keep a second copy of `state`
                // (and so of its input) in the future.
                async move {
                    #unused_handler
                    #body
                }
            }

            #(#nested)*
        })
    }

    fn handler_path(depth: usize) -> TokenStream {
        let supers = std::iter::repeat_n(quote!(super::), depth);
        quote!(#(#supers)* Handler)
    }

    /// The closure a Parallel's visit calls once per attempt: every branch's generated machine
    /// (`<module>::drive`) on the branches' input, joined by `join` (the first failure cancels
    /// the others).
    fn run_branches(index: usize, branches: &[BranchModule], join: TokenStream) -> Result<TokenStream, String> {
        let modules: Vec<&Ident> =
            branches.iter().filter(|((s, _), _)| *s == index).map(|(_, module)| module).collect();
        let count = modules.len();
        // Each branch records on its own line of control (`Execution::branch`), so its
        // events chain `previousEventId` within the branch, exactly as the interpreter does.
        let branch_execs: Vec<Ident> = (0..count).map(|i| format_ident!("__wfc_branch_exec_{}", i)).collect();
        let futures = modules.iter().zip(&branch_execs).enumerate().map(|(i, (module, branch_exec))| {
            let input = if i + 1 == count { quote!(input) } else { quote!(::core::clone::Clone::clone(&input)) };
            // Each branch is a CONTEXT operation when journaled (see `in_branch_context`).
            quote!(__wfc::FutureExt::boxed(
                #branch_exec.in_branch_context(#module::drive(handler, &#branch_exec, #input))
            ))
        });
        Ok(if count == 0 {
            // A Parallel without branches is rejected by validation; if one reaches
            // here, it yields an empty array as AWS would.
            quote! {
                move |input: __wfc::Value, exec: __wfc::Execution| async move {
                    let _ = (input, exec, handler);
                    #join(::std::vec::Vec::new()).await
                }
            }
        } else {
            quote! {
                move |input: __wfc::Value, exec: __wfc::Execution| async move {
                    #(let #branch_execs = exec.branch();)*
                    #join(::std::vec![#(#futures),*]).await
                }
            }
        })
    }

    /// The closure a Map's visit calls once per item per attempt: the item processor's generated
    /// machine on the iteration's input, on the iteration's own line of control (which the
    /// visit creates, so its events chain within the iteration, as the interpreter's do).
    fn run_iteration(index: usize, branches: &[BranchModule]) -> Result<TokenStream, String> {
        let module = branches
            .iter()
            .find(|((s, _), _)| *s == index)
            .map(|(_, module)| module)
            .ok_or("wfc: internal error: a Map state without its item processor module")?;
        // The driver's future is boxed: it holds the item processor's whole state machine, and
        // an unboxed one would be copied each time the iteration's future moves (into the
        // concurrency helper's queue, with every item in flight), as the interpreter's, which
        // is boxed, is not.
        Ok(quote! {
            move |item: __wfc::Value, line: __wfc::Execution| async move {
                __wfc::FutureExt::boxed(#module::drive(handler, &line, item)).await
            }
        })
    }

    /// A generated Task state's arm (`None`: it is left to the runtime's `exec::task`).
    fn task_arm(
        &self,
        index: usize,
        state: &State,
        t: &TaskState,
        variants: &[Ident],
        depth: usize,
    ) -> Result<Option<TaskArm>, String> {
        let variant = variants.get(index).ok_or("wfc: internal error: a state without a variant")?;
        let name = Literal::string(&state.name);
        let method = self
            .methods
            .iter()
            .find(|(resource, _, _)| *resource == t.resource)
            .map(|(_, method, _)| method)
            .ok_or("wfc: internal error: a Task resource without a handler method")?;
        let supers = std::iter::repeat_n(quote!(super::), depth);
        let visit_fn = Self::task_visit_fn(method);
        let visit_fn = quote!(#(#supers)* #visit_fn);
        let mut items = states::Items::default();
        let Some(visit) = states::task(&mut items, &name, t, visit_fn.clone()) else { return Ok(None) };
        let next = transition_to(variants, t.transition, quote!(output))?;
        let targets = catch_arms(variants, t.catch.iter().map(|c| c.next).collect())?;
        Ok(Some(TaskArm { variant: variant.clone(), name, visit, visit_fn, method: method.to_string(), next, targets }))
    }

    /// The arm that runs a machine's Tasks with plain code (`tasks`, two or more): they share
    /// one await per handler method, so `step` polls each method's visit from one place instead
    /// of once per state (a hundred Tasks were a hundred inlined copies of the visit's poll in
    /// `step`, and its stack frame the size of them). The arm finds the state's index in the
    /// table of their codes, awaits its method's visit with that code, then matches the index
    /// again for where control goes. `others` says the machine has other states (which this
    /// arm, a catch-all, must not be reached with).
    fn plain_tasks_arm(tasks: &[TaskArm], others: bool) -> TokenStream {
        let count = tasks.len();
        let codes = tasks.iter().map(|t| {
            let decls = &t.visit.decls;
            quote!({
                #decls
                &CODE
            })
        });
        let at = |i: usize| Literal::usize_unsuffixed(i);
        let finds = tasks.iter().enumerate().map(|(i, t)| {
            let (variant, i) = (&t.variant, at(i));
            quote!(State::#variant(input) => (#i, input),)
        });
        let not_found = others.then(
            || quote!(state => return Err(__wfc::abi::unexpected(state.name(), "is not a Task with plain code")),),
        );
        // One await per method, in the order methods first appear.
        let mut methods: Vec<(&str, &TokenStream, Vec<Literal>)> = Vec::new();
        for (i, t) in tasks.iter().enumerate() {
            match methods.iter_mut().find(|(m, _, _)| *m == t.method) {
                Some((_, _, ats)) => ats.push(at(i)),
                None => methods.push((&t.method, &t.visit_fn, vec![at(i)])),
            }
        }
        let visit = if let [(_, visit_fn, _)] = methods.as_slice() {
            quote!(#visit_fn(handler, exec, code.name, code, input).await?)
        } else {
            let arms = methods.iter().map(
                |(_, visit_fn, ats)| quote!(#(#ats)|* => #visit_fn(handler, exec, code.name, code, input).await?,),
            );
            quote!(match at {
                #(#arms)*
                _ => return Err(__wfc::abi::unexpected(code.name, "has no handler method")),
            })
        };
        let continuations = tasks.iter().enumerate().map(|(i, t)| {
            let (next, targets, i) = (&t.next, &t.targets, at(i));
            let caught = (!targets.is_empty()).then(|| {
                quote! {
                    (#i, __wfc::Step::Goto { target, output }) => match target {
                        #(#targets)*
                        _ => return Err(__wfc::abi::no_catcher_leading_to(code.name, target)),
                    },
                }
            });
            quote! {
                (#i, __wfc::Step::Next(output)) => #next,
                #caught
            }
        });
        quote! {
            {
                /// The codes of the Tasks with plain code, by their index here.
                static PLAIN_TASKS: [&__wfc::abi::PlainTask; #count] = [#(#codes),*];
                let (at, input): (usize, __wfc::Value) = match state {
                    #(#finds)*
                    #not_found
                };
                let code = PLAIN_TASKS[at];
                let step = #visit;
                match (at, step) {
                    #(#continuations)*
                    (_, __wfc::Step::Goto { target, .. }) => {
                        return Err(__wfc::abi::no_catcher_leading_to(code.name, target))
                    }
                    (_, __wfc::Step::Next(_)) => {
                        return Err(__wfc::abi::unexpected(code.name, "has no place in the Task table"))
                    }
                }
            }
        }
    }

    /// One arm of the driver's `match state`: the state's work, generated (see [`states`] and
    /// [`sw`]), then the outcome mapped to the next `State` (or a return at the end). Tasks are
    /// `machine_items`' (through [`Self::task_arm`]).
    fn arm(
        &self,
        index: usize,
        state: &State,
        variants: &[Ident],
        branches: &[BranchModule],
        depth: usize,
    ) -> Result<TokenStream, String> {
        let variant = variants.get(index).ok_or("wfc: internal error: a state without a variant")?;
        let name = Literal::string(&state.name);
        let goto = |transition: Transition, value: TokenStream| transition_to(variants, transition, value);
        let catch_targets = |targets: BTreeSet<usize>| -> Result<TokenStream, String> {
            Ok(goto_arm(&name, &catch_arms(variants, targets)?))
        };

        let mut items = states::Items::default();
        let generated = match &state.kind {
            StateKind::Pass(p) => states::pass(&mut items, &name, p).map(|visit| (visit, p.transition)),
            _ => None,
        };
        if let Some((visit, transition)) = generated {
            let next = goto(transition, quote!(output))?;
            let items = items.tokens();
            return Ok(quote! {
                    State::#variant(input) => {
                        #items
                        let output = #visit;
                        #next
                    }
            });
        }
        if let StateKind::Wait(w) = &state.kind
            && let Some(visit) = states::wait(&mut items, &name, w)
        {
            let next = goto(w.transition, quote!(output))?;
            let items = items.tokens();
            return Ok(quote! {
                    State::#variant(input) => {
                        #items
                        let output = #visit;
                        #next
                    }
            });
        }
        if let StateKind::Fail(f) = &state.kind
            && let Some(visit) = states::fail(&mut items, &name, f)
        {
            let items = items.tokens();
            return Ok(quote! {
                    State::#variant(input) => {
                        #items
                        return Err(#visit);
                    }
            });
        }
        if let StateKind::Succeed(spec) = &state.kind
            && let Some(visit) = states::succeed(&mut items, &name, spec)
        {
            let items = items.tokens();
            return Ok(quote! {
                    State::#variant(input) => {
                        #items
                        return #visit.map(__wfc::abi::Flow::End);
                    }
            });
        }
        if let StateKind::Choice(c) = &state.kind
            && let Some(visit) = states::choice(&mut items, &name, c)
        {
            let mut arms = Vec::new();
            for (i, branch) in c.choices.iter().enumerate() {
                let v = variants.get(branch.next).ok_or("wfc: Choice Next index out of range")?;
                let i = Literal::usize_unsuffixed(i);
                arms.push(quote!(Some(#i) => State::#v(output),));
            }
            // `abi::choice` returns no match only when there is a Default.
            let fallback = match c.default {
                Some(default) => {
                    let v = variants.get(default).ok_or("wfc: Choice Default index out of range")?;
                    quote!(_ => State::#v(output),)
                }
                None => quote! {
                    _ => return Err(__wfc::Failure::runtime(::std::format!("the Choice state {:?} chose no rule and has no Default", #name))),
                },
            };
            let items = items.tokens();
            return Ok(quote! {
                    State::#variant(input) => {
                        #items
                        let __wfc::Chosen { branch, output } = #visit;
                        match branch {
                            #(#arms)*
                            #fallback
                        }
                    }
            });
        }
        if let StateKind::Parallel(p) = &state.kind
            && let Some(decls) = states::parallel(&mut items, p)
        {
            let run_branches = Self::run_branches(index, branches, quote!(__wfc::abi::join_branches))?;
            let next = goto(p.transition, quote!(output))?;
            let goto_arm = catch_targets(p.catch.iter().map(|c| c.next).collect())?;
            return Ok(quote! {
                    State::#variant(input) => {
                        #decls
                        match __wfc::abi::parallel(exec, #name, &Code, input, #run_branches).await? {
                            __wfc::Step::Next(output) => #next,
                            #goto_arm
                        }
                    }
            });
        }
        if let StateKind::Map(m) = &state.kind
            && let Some(decls) = states::map(&mut items, m)
        {
            let run_iteration = Self::run_iteration(index, branches)?;
            let next = goto(m.transition, quote!(output))?;
            let goto_arm = catch_targets(m.catch.iter().map(|c| c.next).collect())?;
            return Ok(quote! {
                    State::#variant(input) => {
                        #decls
                        match __wfc::abi::map(exec, #name, &Code, input, #run_iteration).await? {
                            __wfc::Step::Next(output) => #next,
                            #goto_arm
                        }
                    }
            });
        }
        if let StateKind::Sw(spec) = &state.kind {
            let methods = |function: &str| {
                self.methods.iter().find(|(resource, _, _)| resource == function).map(|(_, method, _)| method.clone())
            };
            let target = |id: usize| {
                variants.get(id).cloned().ok_or_else(|| format!("wfc: transition index {id} is out of range"))
            };
            let module = |b: usize| branches.iter().find(|(key, _)| *key == (index, b)).map(|(_, m)| m.clone());
            let handler_path = Self::handler_path(depth);
            let supers = std::iter::repeat_n(quote!(super::), depth);
            let root = quote!(#(#supers)*);
            let code = sw::state(&name, spec, &methods, &target, &module, &handler_path, &root, depth > 0)?;
            return Ok(quote!(State::#variant(input) => { #code }));
        }
        // Every state the front end produces is generated above; what is left is an IR no
        // definition lowers to (a Choice with an `Is*` test whose operand is not a Boolean
        // literal, which the front end refuses with WFC0508; a JSONata state with paths).
        // Generated code carries no IR to hand such a state to the interpreter, so the build
        // says which state it is.
        Err(format!(
            "wfc: codegen cannot write the {} state {:?} as Rust: its lowered form is one no valid definition has \
             (run it with the interpreter, `wfc run`)",
            state.kind.type_name(),
            state.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workflow(json: serde_json::Value) -> Workflow {
        match serde_json::from_value(json) {
            Ok(w) => w,
            Err(e) => panic!("bad test IR: {e}"),
        }
    }

    fn order() -> Workflow {
        workflow(serde_json::json!({
            "name": "Order Flow",
            "comment": "Checks stock then pays.",
            "version": null,
            "timeout_seconds": null,
            "machine": {
                "start_at": 0,
                "states": [
                    { "name": "Check Stock", "comment": null, "location": null, "kind": { "Task": {
                        "resource": "arn:aws:lambda:us-east-1:1:function:CheckStock",
                        "input_path": "$", "parameters": null, "result_selector": null,
                        "result_path": "$", "output_path": "$", "timeout": null, "heartbeat": null,
                        "retry": [], "catch": [{ "error_equals": ["States.ALL"], "result_path": "$", "next": 2 }],
                        "transition": { "Next": 1 } } } },
                    { "name": "Done", "comment": null, "location": null, "kind": { "Succeed": {
                        "input_path": "$", "output_path": "$" } } },
                    { "name": "Failed \"x\"", "comment": null, "location": null, "kind": { "Fail": {
                        "error": "E", "cause": null, "error_path": null, "cause_path": null } } }
                ]
            }
        }))
    }

    #[test]
    fn generates_a_parsable_module() {
        let wf = order();
        let tokens = generate(&wf, Source { path: "order.asl.json", text: "{}" }, &Settings::new());
        let text = format(tokens);
        assert!(text.contains("pub mod order_flow"), "{text}");
        assert!(text.contains("fn check_stock("), "{text}");
        assert!(text.contains("CheckStock(__wfc::Value)"), "{text}");
        assert!(text.contains("#[serde(rename = \"Failed \\\"x\\\"\")]"), "{text}");
        assert!(!text.contains("compile_error"), "{text}");
    }

    #[test]
    fn typed_resources_get_aliases_and_the_serde_boundary() {
        let mut settings = Settings::new();
        settings.task_types(crate::TaskTypes {
            resource: "arn:aws:lambda:us-east-1:1:function:CheckStock".into(),
            input: Some("crate::shop::Query".into()),
            result: Some("Vec<u32>".into()),
        });
        let text = format(generate(&order(), Source { path: "order.asl.json", text: "{}" }, &settings));
        assert!(text.contains("type __wfc_order_flow_check_stock_input = crate::shop::Query;"), "{text}");
        assert!(text.contains("type __wfc_order_flow_check_stock_result = Vec<u32>;"), "{text}");
        assert!(text.contains("input: super::__wfc_order_flow_check_stock_input,"), "{text}");
        assert!(text.contains("Output = Result<super::__wfc_order_flow_check_stock_result, __wfc::Failure>"), "{text}");
        let compact: String = text.split_whitespace().collect();
        let call = "__wfc::abi::typed_task(input,ctx,move|input,ctx|handler.check_stock(input,ctx),)";
        assert!(compact.contains(call), "{text}");
        assert!(text.contains("private_interfaces"), "{text}");
        assert!(!text.contains("compile_error"), "{text}");
        // Untyped, nothing of it appears.
        let plain = format(generate(&order(), Source { path: "order.asl.json", text: "{}" }, &Settings::new()));
        assert!(
            !plain.contains("typed_task")
                && !plain.contains("__wfc_order_flow")
                && !plain.contains("private_interfaces")
        );
    }

    #[test]
    fn type_text_reads_as_written() {
        let parse = |text: &str| syn::parse_str::<syn::Type>(text).expect("a type");
        for text in
            ["Vec<crate::shop::Line>", "&'static str", "HashMap<String, (u8, bool)>", "::core::option::Option<u8>"]
        {
            let ty = parse(text);
            assert_eq!(type_text(&quote!(#ty).to_string()), text);
        }
    }

    #[test]
    fn task_types_must_name_a_task_resource() {
        let mut settings = Settings::new();
        let declare = |settings: &mut Settings, resource: &str| {
            settings.task_types(crate::TaskTypes { resource: resource.into(), input: Some("u8".into()), result: None });
        };
        declare(&mut settings, "arn:aws:lambda:us-east-1:1:function:CheckStock");
        declare(&mut settings, "arn:aws:lambda:us-east-1:1:function:CheckStok");
        declare(&mut settings, "check_stock");
        declare(&mut settings, "nothing like it");
        declare(&mut settings, "arn:aws:lambda:us-east-1:1:function:CheckStock");
        let problems = check_task_types(&order(), &settings);
        let messages: Vec<(usize, &str)> = problems.iter().map(|p| (p.index, p.message.as_str())).collect();
        let hint = "did you mean `arn:aws:lambda:us-east-1:1:function:CheckStock`?";
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].0 == 1 && messages[0].1.ends_with(hint), "{messages:?}");
        assert!(messages[1].0 == 2 && messages[1].1.ends_with(hint), "{messages:?}");
        assert_eq!(
            messages[2],
            (
                3,
                "no Task in the definition has Resource `nothing like it`; its Task resources are \
                 `arn:aws:lambda:us-east-1:1:function:CheckStock`"
            )
        );
        assert_eq!(messages[3], (4, "Task resource `arn:aws:lambda:us-east-1:1:function:CheckStock` is typed twice"));
        assert!(check_task_types(&order(), &Settings::new()).is_empty());
    }

    /// A Serverless Workflow's functions are called through the JSON dispatch table: typing one
    /// is refused by the check, and codegen emits a `compile_error!` rather than a broken module.
    #[test]
    fn a_serverless_workflow_is_not_typed() {
        let text = r#"{ "id": "w", "name": "w", "functions": [ { "name": "f", "operation": "f" } ],
  "states": [ { "name": "A", "type": "operation", "start": { "kind": "default" },
    "actions": [ { "functionRef": { "refName": "f" } } ], "end": true } ] }"#;
        let source = Source { path: "w.sw.json", text };
        let loaded = crate::load(source).unwrap_or_else(|d| panic!("{}", d.render(false)));
        let mut settings = Settings::new();
        settings.task_types(crate::TaskTypes { resource: "f".into(), input: Some("u8".into()), result: None });
        let problems = check_task_types(&loaded.workflow, &settings);
        assert_eq!(problems, [TaskTypesProblem { index: 0, message: SW_UNTYPED.to_owned() }]);
        let text = generate(&loaded.workflow, source, &settings).to_string();
        assert!(text.contains("compile_error") && text.contains("typed handler methods are for ASL"), "{text}");
    }

    #[test]
    fn bad_runtime_path_is_a_compile_error() {
        let mut settings = Settings::new();
        settings.runtime_path("not a path");
        let text = generate(&order(), Source { path: "o.json", text: "{}" }, &settings).to_string();
        assert!(text.contains("compile_error"), "{text}");
    }

    #[test]
    fn module_name_from_settings() {
        let mut settings = Settings::new();
        settings.module_name("My Order");
        assert_eq!(module_name(&order(), &settings), "my_order");
        assert_eq!(module_name(&order(), &Settings::new()), "order_flow");
    }
}
