//! The work of a state as Rust (issue 20): Pass, Choice, Succeed, Task (with `Credentials`),
//! Wait, Fail, Parallel and Map (INLINE or DISTRIBUTED) states, JSONPath or JSONata, are
//! generated here; Serverless Workflow states and a Choice with an `Is*` test on a non-Boolean
//! operand still hand their IR to `exec.rs` (see [`super::Generator::arm`]). A Parallel's
//! branches and a Map's item processor are generated machines of their own
//! (`super::Generator::machine_items`); here is the state's own work.
//!
//! What the output calls is the runtime's `abi` module, the ABI of generated code:
//!
//! - a definite `$` path becomes a `const` slice of its steps, walked by `abi::get`/`select`/
//!   `take`/`set`/`field_ref`; any other path (`$$`, `$var`, wildcards, filters) a `static`
//!   parsed once on first use, evaluated by the interpreter's JSONPath evaluator;
//! - a Parameters template becomes the code that builds it, its literal subtrees `static`s built
//!   once and cloned per visit;
//! - an intrinsic function becomes a call of the evaluator's function on arguments the code
//!   evaluates itself (`abi::math_add(abi::field_ref(...)?, &1)`);
//! - a Choice rule becomes a Rust condition on the value, with its literal converted here:
//!   numbers split into their exact integer and `f64`, timestamps parsed to nanoseconds,
//!   `StringMatches` patterns tokenized once (a `static`);
//! - a Task becomes a `Code` type implementing `abi::TaskCode` (InputPath, Parameters,
//!   ResultSelector, ResultPath, OutputPath, TimeoutSeconds/HeartbeatSeconds and their `*Path`
//!   forms), with its Retry and Catch as `const` tables; a Wait's delay is a constant, a
//!   timestamp parsed here, or its `*Path` read from the value; a Fail's Error and Cause are
//!   literals or path reads;
//! - a JSONata expression becomes a `static` parsed once on first use and evaluated by the
//!   interpreter's evaluator (`abi::jsonata`); a JSONata template (`Arguments`, `Output`, an
//!   `Assign` value) construction code whose literal subtrees are `static`s built once, with
//!   `$states` an `abi::Bindings` built as the interpreter builds it;
//! - a Parallel or Map becomes a `Code` type implementing `abi::NestedCode` (InputPath,
//!   ResultSelector, ResultPath, OutputPath, JSONata Output, Assign, Retry and Catch tables) and
//!   `abi::ParallelCode` (Parameters or JSONata Arguments) or `abi::MapCode` (ItemsPath,
//!   ItemSelector built per item, MaxConcurrency or MaxConcurrencyPath; or JSONata Items,
//!   ItemSelector and MaxConcurrency);
//! - a DISTRIBUTED Map's own fields become its `Code`'s `abi::DistributedCode`: `Label` and
//!   literal counts constants, their `*Path` forms `static` paths, their JSONata forms `static`
//!   expressions, the ItemReader's, ItemBatcher's and ResultWriter's templates construction code,
//!   `ReaderConfig` the arguments of `abi::parse_items`; its Map Run is the runtime's
//!   (`distributed::map_run`, through `abi::map`), its children the generated item processor;
//! - a Task's `Credentials` becomes its `Code`'s `role_arn`, the object built as a template
//!   and its `RoleArn` checked by `abi::jsonpath_role_arn`/`jsonata_role_arn`.
//!
//! The state's visit (its events, its context object, the `States.Runtime` prefix; for a Task
//! the retry loop, timeouts, heartbeats, callbacks and Catch; for a Wait the clock) is the
//! runtime's `abi::pass`/`choice`/`succeed`/`task`/`wait`/`fail`/`parallel`/`map`, which the
//! interpreter runs its own states through, so both engines record the same history.

use proc_macro2::{Ident, Literal, TokenStream, TokenTree};
use quote::{format_ident, quote};
use serde_json::Value;
use wfc_ir::distributed::{
    Count, CsvDelimiter, CsvHeaders, DistributedMap, InputType, ManifestType, OutputType, Percentage,
    ReaderTransformation, WriterTransformation,
};
use wfc_ir::intrinsics::{Arg, Call, Function};
use wfc_ir::jsonpath::ast::SingularStep;
use wfc_ir::native::{NativeForm, NativeLiteral};
use wfc_ir::{
    Assign, Catcher, ChoiceState, Comparison, ComputedString, Condition, FailState, Jitter, JsonataExpr,
    JsonataTemplate, MapState, Operand, Operator, ParallelState, PassState, Path, ReferencePath, Retrier, Root,
    Seconds, SucceedState, TaskCredentials, TaskState, Template, WaitDuration, WaitState,
};

/// Items (consts and statics) a state's generated code declares, with names unique in its arm.
#[derive(Default)]
pub(super) struct Items {
    items: Vec<TokenStream>,
    /// Paths already declared, by text and kind (steps or static), so each is declared once.
    paths: Vec<(String, bool, Ident)>,
    /// JSONata expressions already declared, by text.
    expressions: Vec<(String, Ident)>,
}

impl Items {
    pub(super) fn push(&mut self, prefix: &str, make: impl FnOnce(&Ident) -> TokenStream) -> Ident {
        let name = format_ident!("{}_{}", prefix, self.items.len());
        self.items.push(make(&name));
        name
    }

    pub(super) fn tokens(&self) -> TokenStream {
        let items = &self.items;
        quote!(#(#items)*)
    }

    /// The steps of a definite `$` path as a `const`.
    fn steps(&mut self, path: &Path) -> Option<Ident> {
        let steps = definite_steps(path)?;
        if let Some((_, _, name)) = self.paths.iter().find(|(t, definite, _)| *definite && t == path.as_str()) {
            return Some(name.clone());
        }
        let steps = steps.iter().map(|s| match s {
            SingularStep::Name(n) => {
                let n = Literal::string(n);
                quote!(__wfc::abi::Seg::Name(#n))
            }
            SingularStep::Index(i) => {
                let i = Literal::i64_suffixed(*i);
                quote!(__wfc::abi::Seg::Index(#i))
            }
        });
        let name = self.push("PATH", |name| quote!(const #name: &[__wfc::abi::Seg<'static>] = &[#(#steps),*];));
        self.paths.push((path.as_str().to_owned(), true, name.clone()));
        Some(name)
    }

    /// Any path as a `static` parsed on first use.
    fn static_path(&mut self, path: &Path) -> Ident {
        if let Some((_, _, name)) = self.paths.iter().find(|(t, definite, _)| !*definite && t == path.as_str()) {
            return name.clone();
        }
        let text = Literal::string(path.as_str());
        let name = self.push("PATH", |name| {
            quote!(static #name: __wfc::abi::StaticPath = __wfc::LazyLock::new(|| __wfc::abi::Path::parse(#text));)
        });
        self.paths.push((path.as_str().to_owned(), false, name.clone()));
        name
    }

    /// A JSONata expression as a `static` parsed on first use; an expression of its
    /// `&'static JsonataExpr` (`?` on a parse failure, which the compiler already excluded).
    fn jsonata(&mut self, expr: &JsonataExpr) -> TokenStream {
        let name = match self.expressions.iter().find(|(t, _)| t == expr.as_str()) {
            Some((_, name)) => name.clone(),
            None => {
                let text = Literal::string(expr.as_str());
                let name = self.push("JSONATA", |name| {
                    quote!(static #name: __wfc::abi::StaticJsonata = __wfc::LazyLock::new(|| __wfc::abi::JsonataExpr::parse(#text));)
                });
                self.expressions.push((expr.as_str().to_owned(), name.clone()));
                name
            }
        };
        quote!(__wfc::abi::jsonata_expr(&#name)?)
    }

    /// A literal value: scalars inline, objects and arrays a `static` built once and cloned.
    pub(super) fn value(&mut self, value: &Value) -> TokenStream {
        match value {
            Value::Array(_) | Value::Object(_) => {
                let build = value_tokens(value);
                let name = self.push(
                    "LITERAL",
                    |name| quote!(static #name: __wfc::abi::StaticValue = __wfc::LazyLock::new(|| #build);),
                );
                quote!(__wfc::Value::clone(&#name))
            }
            scalar => value_tokens(scalar),
        }
    }
}

/// The steps of a `$` path of names and indices only; `None` for any other path.
pub(super) fn definite_steps(path: &Path) -> Option<Vec<SingularStep<'_>>> {
    if path.root() != Root::Input || !path.is_singular() {
        return None;
    }
    path.segments().iter().map(|s| s.as_singular()).collect()
}

/// Construction code for a JSON value.
pub(super) fn value_tokens(value: &Value) -> TokenStream {
    match value {
        Value::Null => quote!(__wfc::Value::Null),
        Value::Bool(b) => quote!(__wfc::Value::Bool(#b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                let u = Literal::u64_suffixed(u);
                quote!(__wfc::Value::from(#u))
            } else if let Some(i) = n.as_i64() {
                let i = Literal::i64_suffixed(i);
                quote!(__wfc::Value::from(#i))
            } else {
                // JSON has no infinities or NaN, so the literal is always finite.
                let f = Literal::f64_suffixed(n.as_f64().unwrap_or_default());
                quote!(__wfc::Value::from(#f))
            }
        }
        Value::String(s) => {
            let s = Literal::string(s);
            quote!(__wfc::Value::String(::std::borrow::ToOwned::to_owned(#s)))
        }
        Value::Array(items) => {
            let items = items.iter().map(value_tokens);
            quote!(__wfc::Value::Array(::std::vec![#(#items),*]))
        }
        Value::Object(members) => object_code(members.iter().map(|(k, v)| (k.as_str(), value_tokens(v)))),
    }
}

/// Construction code of a JSON object from its keys and the code of each value, in order: one
/// `insert` per key into a map of the right capacity.
fn object_code<'a>(entries: impl ExactSizeIterator<Item = (&'a str, TokenStream)>) -> TokenStream {
    let n = entries.len();
    let inserts = entries.map(|(key, value)| {
        let key = Literal::string(key);
        quote!(object.insert(::std::borrow::ToOwned::to_owned(#key), #value);)
    });
    quote!({
        let mut object = __wfc::serde_json::Map::with_capacity(#n);
        #(#inserts)*
        __wfc::Value::Object(object)
    })
}

/// Whether `tokens` mention the identifier `name` (to name unused closure parameters `_`).
pub(super) fn mentions(tokens: &TokenStream, name: &str) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => mentions(&g.stream(), name),
        _ => false,
    })
}

/// A closure parameter named `name`, or `_` when `body` does not use it.
fn param(body: &TokenStream, name: &str) -> TokenStream {
    if mentions(body, name) {
        let name = format_ident!("{}", name);
        quote!(#name)
    } else {
        quote!(_)
    }
}

fn uses_context(path: Option<&Path>) -> bool {
    path.is_some_and(|p| p.root() != Root::Input)
}

fn template_uses_context(t: &Template) -> bool {
    match t {
        Template::Literal(_) => false,
        Template::Path(p) => p.root() != Root::Input,
        Template::Intrinsic(i) => i.uses_context(),
        Template::Array(items) => items.iter().any(template_uses_context),
        Template::Object(entries) => entries.iter().any(|(_, t)| template_uses_context(t)),
    }
}

/// A JSONata template (`Arguments`, `Output`, an `Assign` value) as construction code over the
/// `$states` bindings `states` (a `&Bindings` expression): literal subtrees are `static`s built
/// once, each `{% %}` string an evaluation of its `static` expression, named in causes by its
/// field path (`Output/key/0`), in the interpreter's order (`jsonata::template`'s).
fn jsonata_template(items: &mut Items, t: &JsonataTemplate, field: &str, states: &TokenStream) -> TokenStream {
    match t {
        JsonataTemplate::Literal(v) => items.value(v),
        JsonataTemplate::Expr(e) => {
            let expr = items.jsonata(e);
            let field = Literal::string(field);
            quote!(__wfc::abi::jsonata(exec, #expr, #field, #states)?)
        }
        JsonataTemplate::Array(elements) => {
            let elements = elements
                .iter()
                .enumerate()
                .map(|(i, e)| jsonata_template(items, e, &format!("{field}/{i}"), states))
                .collect::<Vec<_>>();
            quote!(__wfc::Value::Array(::std::vec![#(#elements),*]))
        }
        JsonataTemplate::Object(entries) => {
            let values = entries
                .iter()
                .map(|(key, value)| (key.as_str(), jsonata_template(items, value, &format!("{field}/{key}"), states)))
                .collect::<Vec<_>>();
            object_code(values.into_iter())
        }
    }
}

/// An `Assign` block as an expression of its `abi::Assigned`: a JSONPath block over `dollar`
/// and `ctx` ([`assign_code`]), a JSONata block over `states` (each value named `Assign/name`
/// in causes).
fn assign_any(items: &mut Items, assign: &Assign, dollar: &TokenStream, states: &TokenStream) -> TokenStream {
    match assign {
        Assign::JsonPath(_) => assign_code(items, assign, dollar).unwrap_or_default(),
        Assign::Jsonata(entries) => {
            let entries = entries
                .iter()
                .map(|(name, t)| {
                    let value = jsonata_template(items, t, &format!("Assign/{name}"), states);
                    let name = Literal::string(name);
                    quote!((::std::borrow::ToOwned::to_owned(#name), #value))
                })
                .collect::<Vec<_>>();
            quote!(::std::vec![#(#entries),*])
        }
    }
}

/// An optional `Assign` as an expression of `Option<abi::Assigned>`.
fn assign_option(
    items: &mut Items,
    assign: Option<&Assign>,
    dollar: &TokenStream,
    states: &TokenStream,
) -> TokenStream {
    match assign {
        Some(assign) => {
            let built = assign_any(items, assign, dollar, states);
            quote!(Some(#built))
        }
        None => quote!(::core::option::Option::None),
    }
}

/// `body` preceded by the `$states` bindings of a JSONata state (`states`, over the raw input
/// `input` and the context object `ctx`) when it reads them.
fn with_states(body: TokenStream, input: TokenStream) -> TokenStream {
    if mentions(&body, "states") {
        quote! {
            let states = &__wfc::abi::Bindings::new(#input, ctx);
            #body
        }
    } else {
        body
    }
}

/// Whether the state's InputPath and OutputPath are `$` (always so in a JSONata state), so its
/// JSONata forms may be generated without them.
fn identity_paths(input_path: Option<&Path>, output_path: Option<&Path>) -> bool {
    input_path.is_some_and(Path::is_identity) && output_path.is_some_and(Path::is_identity)
}

/// A JSONata Pass state (an `Output` or a JSONata `Assign`): `abi::pass_language`, whose body
/// evaluates the Assign then the Output (default: the input) with `$states.input` the raw input.
fn pass_jsonata(items: &mut Items, name: &Literal, spec: &PassState) -> Option<TokenStream> {
    if !identity_paths(spec.input_path.as_ref(), spec.output_path.as_ref()) {
        return None;
    }
    let states = quote!(states);
    let assigned = assign_option(items, spec.assign.as_ref(), &quote!(&input), &states);
    let output = match &spec.output {
        Some(t) => jsonata_template(items, t, "Output", &states),
        None => quote!(input),
    };
    let body = with_states(
        quote! {
            let assigned = #assigned;
            let output = #output;
            Ok((output, assigned))
        },
        quote!(&input),
    );
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    Some(quote! {
        __wfc::abi::pass_language(exec, #name, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
            #body
        })?
    })
}

/// A JSONPath Pass state's visit: `abi::pass(exec, name, needs_ctx, input, |input, ctx| …)`,
/// or `None` when the state is left to `exec::pass` (Assign, JSONata Output).
pub(super) fn pass(items: &mut Items, name: &Literal, spec: &PassState) -> Option<TokenStream> {
    if spec.output.is_some() || matches!(spec.assign, Some(Assign::Jsonata(_))) {
        return pass_jsonata(items, name, spec);
    }
    if let Some(assign) = &spec.assign {
        return pass_assign(items, name, spec, assign);
    }
    let needs_ctx = uses_context(spec.input_path.as_ref())
        || uses_context(spec.output_path.as_ref())
        || spec.parameters.as_ref().is_some_and(template_uses_context);
    let replaces_input = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    // Set when InputPath and ResultPath name the same definite node: the steps to it.
    let mut kept_steps = None;
    let compute = match (&spec.result, &spec.parameters) {
        (Some(result), _) => {
            let result = items.value(result);
            set_result(items, spec.result_path.as_ref(), quote!(input), result)
        }
        // `{"Type": "Pass"}` with a ResultPath of `$`: the input moves through InputPath.
        (None, None) if replaces_input => input_path_owned(items, spec.input_path.as_ref(), quote!(input)),
        (None, parameters) => {
            let effective = input_path_borrowed(items, spec.input_path.as_ref());
            let result = match parameters {
                Some(t) => template(items, t, "Parameters", &quote!(effective)),
                None => quote!(__wfc::Value::clone(effective)),
            };
            let set = set_result(items, spec.result_path.as_ref(), quote!(input), quote!(result));
            // InputPath and ResultPath naming the same node that exists: writing it back leaves
            // the input as it is, so nothing is copied (as the interpreter does).
            let in_place = match (&spec.input_path, &spec.result_path, parameters) {
                (Some(selected), Some(written), None) if definite_steps(selected).is_some() => {
                    let written = written.as_path();
                    (definite_steps(selected) == definite_steps(written)).then(|| items.steps(selected)).flatten()
                }
                _ => None,
            };
            let general = quote! {
                let result = {
                    #effective
                    #result
                };
                #set
            };
            kept_steps.clone_from(&in_place);
            match in_place {
                Some(steps) => quote! {
                    if __wfc::abi::get(&input, #steps).is_some() {
                        input
                    } else {
                        #general
                    }
                },
                None => quote!({ #general }),
            }
        }
    };
    let output = output_path(items, spec.output_path.as_ref(), quote!(output));
    let body = quote! {
        let output = #compute;
        #output
    };
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    let by_value = quote!(|#input: __wfc::Value, #ctx: &__wfc::Value| { #body });
    // With OutputPath `$` too, the output is the input whenever that node exists: the runtime
    // then skips the body and the payload check of an input it checked before.
    let keeps_input = spec.output_path.as_ref().is_some_and(|p| p.is_identity());
    Some(match kept_steps {
        Some(steps) if keeps_input => quote! {
            __wfc::abi::pass_kept(
                exec,
                #name,
                #needs_ctx,
                input,
                |input: &__wfc::Value| __wfc::abi::get(input, #steps).is_some(),
                #by_value,
            )?
        },
        _ => match pass_output_bound(spec) {
            // The output is built whole from parts of known size: the runtime skips its payload
            // check unless the execution's limits are below the bound.
            // Its body only reads the input (the runtime reuses it for the history's copy of the
            // output), so it takes it by reference.
            Some((bytes, depth)) => {
                let (bytes, depth) = (Literal::usize_suffixed(bytes), Literal::usize_suffixed(depth));
                match (&spec.result, &spec.parameters) {
                    // A Parameters object: its values are read from the input, then the object
                    // is put together in the input's allocations where the runtime can spare
                    // them (`abi::object_in`). The values are an array on the stack until then,
                    // so only a small object is built this way.
                    (None, Some(Template::Object(entries))) if entries.len() <= BUILT_OBJECT_MEMBERS => {
                        let effective = input_path_borrowed(items, spec.input_path.as_ref());
                        let (keys, values): (Vec<_>, Vec<_>) =
                            object_entries(items, entries, &quote!(effective)).into_iter().unzip();
                        let read = quote! {
                            #effective
                            Ok([#(#values),*])
                        };
                        let (input, ctx) = (param(&read, "input"), param(&read, "ctx"));
                        let keys = keys.into_iter().map(Literal::string);
                        quote!(__wfc::abi::pass_built(
                            exec,
                            #name,
                            #needs_ctx,
                            input,
                            #bytes,
                            #depth,
                            |#input: &__wfc::Value, #ctx: &__wfc::Value| { #read },
                            |values, spare| __wfc::abi::object_in(spare, &[#(#keys),*], values),
                        )?)
                    }
                    _ => {
                        let body = quote!(|#input: &__wfc::Value, #ctx: &__wfc::Value| { #body });
                        quote!(__wfc::abi::pass_bounded(exec, #name, #needs_ctx, input, #bytes, #depth, #body)?)
                    }
                }
            }
            None => quote!(__wfc::abi::pass(exec, #name, #needs_ctx, input, #by_value)?),
        },
    })
}

/// The most members of a Pass's Parameters object built in its spent input (`abi::pass_built`):
/// their values wait in an array on the stack, which a definition's size must not decide.
const BUILT_OBJECT_MEMBERS: usize = 16;

/// The most bytes and levels a JSONPath Pass's output can serialize to, when its output is its
/// result (ResultPath and OutputPath `$`) and the result is built from parts whose size is known
/// now ([`template_bound`]); `None` otherwise.
fn pass_output_bound(spec: &PassState) -> Option<(usize, usize)> {
    let identity = |p: Option<&Path>| p.is_some_and(Path::is_identity);
    if !identity(spec.result_path.as_ref().map(|p| p.as_path())) || !identity(spec.output_path.as_ref()) {
        return None;
    }
    match (&spec.result, &spec.parameters) {
        (Some(result), _) => Some(value_bound(result)),
        (None, Some(template)) => template_bound(template),
        (None, None) => None,
    }
}

/// [`pass_output_bound`] of a literal: its serialized size and nesting depth.
fn value_bound(value: &Value) -> (usize, usize) {
    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    (serde_json::to_string(value).map_or(usize::MAX, |text| text.len()), depth(value))
}

/// The most bytes and levels a payload template's value can serialize to: known for literals,
/// and for the intrinsics that give an integer (at most 24 bytes, as the payload check counts a
/// number); `None` when a part copies from the input or gives a string.
fn template_bound(template: &Template) -> Option<(usize, usize)> {
    let entries = |children: &mut dyn Iterator<Item = Option<(usize, usize)>>| {
        let (mut bytes, mut depth, mut n) = (2usize, 0usize, 0usize);
        for child in children {
            let (b, d) = child?;
            bytes = bytes.checked_add(b)?;
            depth = depth.max(d);
            n += 1;
        }
        Some((bytes.checked_add(n.saturating_sub(1))?, depth + 1))
    };
    match template {
        Template::Literal(value) => Some(value_bound(value)),
        Template::Object(fields) => entries(&mut fields.iter().map(|(key, t)| {
            let key = serde_json::to_string(key).ok()?.len() + 1;
            template_bound(t).map(|(b, d)| (b.saturating_add(key), d))
        })),
        Template::Array(items) => entries(&mut items.iter().map(template_bound)),
        Template::Intrinsic(i)
            if matches!(i.call().function, Function::MathAdd | Function::MathRandom | Function::ArrayLength) =>
        {
            Some((24, 0))
        }
        Template::Intrinsic(_) | Template::Path(_) => None,
    }
}

/// A JSONPath Pass state with `Assign`: `abi::pass_assign(exec, name, input, |input, ctx| …)`,
/// whose body computes the result (`Result`, or Parameters over InputPath), the assigned values
/// over it, then ResultPath and OutputPath, in the interpreter's order. `None` for a JSONata
/// Assign.
fn pass_assign(items: &mut Items, name: &Literal, spec: &PassState, assign: &Assign) -> Option<TokenStream> {
    let assigned = assign_code(items, assign, &quote!(&result))?;
    let result = match (&spec.result, &spec.parameters) {
        (Some(result), _) => items.value(result),
        (None, parameters) => {
            let effective = input_path_borrowed(items, spec.input_path.as_ref());
            let result = match parameters {
                Some(t) => template(items, t, "Parameters", &quote!(effective)),
                None => quote!(__wfc::Value::clone(effective)),
            };
            quote!({
                #effective
                #result
            })
        }
    };
    let set = set_result(items, spec.result_path.as_ref(), quote!(input), quote!(result));
    let output = output_path(items, spec.output_path.as_ref(), quote!(output));
    let body = quote! {
        let result = #result;
        let assigned = #assigned;
        let output = #set;
        #output.map(|output| (output, assigned))
    };
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    Some(quote! {
        __wfc::abi::pass_assign(exec, #name, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
            #body
        })?
    })
}

/// A JSONPath `Assign` block as construction code over `dollar` (a `&Value` expression: what
/// `$` means for the state) and `ctx` (the context object, with the variables as of entry): an
/// expression of its `abi::Assigned`, evaluated in the order written, with the interpreter's
/// field names in messages. `None` for a JSONata block.
fn assign_code(items: &mut Items, assign: &Assign, dollar: &TokenStream) -> Option<TokenStream> {
    let Assign::JsonPath(entries) = assign else { return None };
    let entries = entries
        .iter()
        .map(|(name, t)| {
            let value = match t {
                Template::Path(_) | Template::Intrinsic(_) => template(items, t, &format!("{name}.$"), dollar),
                other => template(items, other, "Parameters", dollar),
            };
            let name = Literal::string(name);
            quote!((::std::borrow::ToOwned::to_owned(#name), #value))
        })
        .collect::<Vec<_>>();
    Some(quote!(::std::vec![#(#entries),*]))
}

/// Whether `assign` is absent or a JSONPath block (which codegen writes as Rust).
fn jsonpath_assign(assign: Option<&Assign>) -> bool {
    matches!(assign, None | Some(Assign::JsonPath(_)))
}

/// A Task's `Assign` (JSONPath or JSONata) as the methods `assigns` and `assigned` of its
/// `Code` (`$` is the state's result; `states` the `$states` bindings, whose `context` is the
/// context object), or nothing without one.
fn assign_methods(items: &mut Items, assign: Option<&Assign>) -> TokenStream {
    let Some(assign) = assign else { return quote!() };
    let built = assign_any(items, assign, &quote!(dollar), &quote!(states));
    let body = quote!(Ok(#built));
    let body = if mentions(&body, "ctx") {
        quote! {
            let ctx = states.context;
            #body
        }
    } else {
        body
    };
    let exec = param(&body, "exec");
    let dollar = param(&body, "dollar");
    let states = param(&body, "states");
    quote! {
        fn assigns(&self) -> bool {
            true
        }

        fn assigned(&self, #exec: &__wfc::Execution, #dollar: &__wfc::Value, #states: &__wfc::abi::Bindings<'_>) -> Result<__wfc::abi::Assigned, __wfc::Failure> {
            #body
        }
    }
}

/// A JSONata template (`Arguments`, `Output`) as a pair of methods of a state's `Code`: `has`
/// (true) and `method`, which builds the value from the `$states` bindings.
fn states_methods(items: &mut Items, t: &JsonataTemplate, field: &str, has: &str, method: &str) -> TokenStream {
    let built = jsonata_template(items, t, field, &quote!(states));
    let body = quote!(Ok(#built));
    let exec = param(&body, "exec");
    let states = param(&body, "states");
    let has = format_ident!("{}", has);
    let method = format_ident!("{}", method);
    quote! {
        fn #has(&self) -> bool {
            true
        }

        fn #method(&self, #exec: &__wfc::Execution, #states: &__wfc::abi::Bindings<'_>) -> Result<__wfc::Value, __wfc::Failure> {
            #body
        }
    }
}

/// A JSONPath Succeed state's visit (InputPath, then OutputPath), or `None` when it is left to
/// `exec::succeed` (a JSONata `Output`).
pub(super) fn succeed(items: &mut Items, name: &Literal, spec: &SucceedState) -> Option<TokenStream> {
    if let Some(t) = &spec.output {
        // A JSONata Output, on `$states.input` (the raw input).
        if !identity_paths(spec.input_path.as_ref(), spec.output_path.as_ref()) {
            return None;
        }
        let built = jsonata_template(items, t, "Output", &quote!(states));
        let body = with_states(quote!(Ok(#built)), quote!(&input));
        let input = param(&body, "input");
        let ctx = param(&body, "ctx");
        return Some(quote! {
            __wfc::abi::succeed(exec, #name, true, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
                #body
            })
        });
    }
    let needs_ctx = uses_context(spec.input_path.as_ref()) || uses_context(spec.output_path.as_ref());
    let effective = input_path_owned(items, spec.input_path.as_ref(), quote!(input));
    let output = output_path(items, spec.output_path.as_ref(), quote!(output));
    let body = quote! {
        let output = #effective;
        #output
    };
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    Some(quote! {
        __wfc::abi::succeed(exec, #name, #needs_ctx, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
            #body
        })
    })
}

/// InputPath on an owned raw input: an expression of the effective input.
fn input_path_owned(items: &mut Items, path: Option<&Path>, input: TokenStream) -> TokenStream {
    match path {
        None => quote!(__wfc::abi::empty_object()),
        Some(p) if p.is_identity() => input,
        Some(p) => match items.steps(p) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                quote!(__wfc::abi::take(#input, #steps, #text)?)
            }
            None => {
                let path = items.static_path(p);
                quote!(__wfc::abi::select_path(__wfc::abi::path(&#path)?, &#input, ctx)?)
            }
        },
    }
}

/// InputPath on the borrowed raw input `input`: statements binding `effective: &Value`.
fn input_path_borrowed(items: &mut Items, path: Option<&Path>) -> TokenStream {
    match path {
        None => quote! {
            let empty = __wfc::abi::empty_object();
            let effective = &empty;
        },
        Some(p) if p.is_identity() => quote!(let effective = &input;),
        Some(p) => match items.steps(p) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                quote!(let effective = __wfc::abi::select(&input, #steps, #text)?;)
            }
            None => {
                let path = items.static_path(p);
                quote! {
                    let selected = __wfc::abi::select_path(__wfc::abi::path(&#path)?, &input, ctx)?;
                    let effective = &selected;
                }
            }
        },
    }
}

/// ResultPath: an expression of the raw input `raw` with `result` placed.
fn set_result(items: &mut Items, path: Option<&ReferencePath>, raw: TokenStream, result: TokenStream) -> TokenStream {
    match path {
        // The result is discarded (it was still computed, so its failures still fail the state).
        None => quote!({
            let _ = #result;
            #raw
        }),
        Some(p) if p.is_identity() => result,
        Some(p) => match items.steps(p.as_path()) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                quote!(__wfc::abi::set(#raw, #steps, #text, #result)?)
            }
            // Every Reference Path other than `$` is names and indices only.
            None => quote!(::core::compile_error!("wfc: internal error: a ResultPath that is not definite")),
        },
    }
}

/// OutputPath on the owned `output`.
fn output_path(items: &mut Items, path: Option<&Path>, output: TokenStream) -> TokenStream {
    match path {
        None => quote!(Ok(__wfc::abi::empty_object())),
        Some(p) if p.is_identity() => quote!(Ok(#output)),
        Some(p) => match items.steps(p) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                quote!(__wfc::abi::take(#output, #steps, #text))
            }
            None => {
                let path = items.static_path(p);
                quote!(__wfc::abi::select_path(__wfc::abi::path(&#path)?, &#output, ctx))
            }
        },
    }
}

/// A payload template evaluated against `input` (a `&Value` expression) and `ctx`: an
/// expression of its value. `field` names the field in messages, as the interpreter does.
fn template(items: &mut Items, t: &Template, field: &str, input: &TokenStream) -> TokenStream {
    match t {
        Template::Literal(v) => items.value(v),
        Template::Path(p) => path_value(items, p, field, input),
        Template::Intrinsic(i) => call(items, i.call(), field, input),
        Template::Array(elements) => {
            let elements = elements.iter().map(|e| template(items, e, field, input)).collect::<Vec<_>>();
            quote!(__wfc::Value::Array(::std::vec![#(#elements),*]))
        }
        Template::Object(entries) => object_code(object_entries(items, entries, input).into_iter()),
    }
}

/// The keys of a template object and the construction code of each value, in order.
fn object_entries<'a>(
    items: &mut Items,
    entries: &'a [(String, Template)],
    input: &TokenStream,
) -> Vec<(&'a str, TokenStream)> {
    entries
        .iter()
        .map(|(key, value)| {
            // AWS names a `.$` field as written, with its suffix.
            let value = match value {
                Template::Path(_) | Template::Intrinsic(_) => template(items, value, &format!("{key}.$"), input),
                other => template(items, other, key, input),
            };
            (key.as_str(), value)
        })
        .collect()
}

/// The value a path selects, copied, with the template wording when it selects nothing.
fn path_value(items: &mut Items, p: &Path, field: &str, input: &TokenStream) -> TokenStream {
    let field = Literal::string(field);
    match items.steps(p) {
        Some(steps) => {
            let text = Literal::string(p.as_str());
            quote!(__wfc::abi::field(#input, #steps, #text, #field)?)
        }
        None => {
            let path = items.static_path(p);
            quote!(__wfc::abi::field_path(__wfc::abi::path(&#path)?, #field, #input, ctx)?)
        }
    }
}

/// An intrinsic argument as a `&Value` expression (paths are read in place).
fn arg_ref(items: &mut Items, arg: &Arg, field: &str, input: &TokenStream) -> TokenStream {
    match arg {
        Arg::Path(p) => match items.steps(p) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                let field = Literal::string(field);
                quote!(__wfc::abi::field_ref(#input, #steps, #text, #field)?)
            }
            None => {
                let value = arg_value(items, arg, field, input);
                quote!(&#value)
            }
        },
        other => {
            let value = arg_value(items, other, field, input);
            quote!(&#value)
        }
    }
}

/// An intrinsic argument as a `Value` expression.
fn arg_value(items: &mut Items, arg: &Arg, field: &str, input: &TokenStream) -> TokenStream {
    match arg {
        Arg::String(s) => value_tokens(&Value::String(s.clone())),
        // Only reached if a template is used as a value: its text with `{}` restored.
        Arg::Template(pieces) => value_tokens(&Value::String(pieces.join("{}"))),
        Arg::Number(n) => value_tokens(&Value::Number(n.clone())),
        Arg::Bool(b) => value_tokens(&Value::Bool(*b)),
        Arg::Null => value_tokens(&Value::Null),
        Arg::Path(p) => path_value(items, p, field, input),
        Arg::Call(c) => call(items, c, field, input),
    }
}

/// An intrinsic call on compiled arguments: an expression of its value.
fn call(items: &mut Items, c: &Call, field: &str, input: &TokenStream) -> TokenStream {
    let f = c.function;
    if f == Function::Format
        && let Some(Arg::Template(pieces)) = c.args.first()
    {
        let pieces = pieces.iter().map(|p| Literal::string(p));
        let args = c.args.iter().skip(1).map(|a| arg_value(items, a, field, input)).collect::<Vec<_>>();
        return quote!(__wfc::abi::format(&[#(#pieces),*], &[#(#args),*])?);
    }
    if f == Function::MathAdd
        && let [a, b] = c.args.as_slice()
    {
        let a = arg_ref(items, a, field, input);
        let b = arg_ref(items, b, field, input);
        return quote!(__wfc::abi::math_add(#a, #b)?);
    }
    let function = format_ident!("{}", format!("{f:?}"));
    let args = c.args.iter().map(|a| arg_value(items, a, field, input)).collect::<Vec<_>>();
    let random = f == Function::Uuid || (f == Function::MathRandom && c.args.len() < 3);
    if random {
        // The arguments first (a nested random call draws before this one, as in the
        // interpreter), then the draw under the execution's random source.
        quote!({
            let args = ::std::vec![#(#args),*];
            exec.with_rng(|rng| __wfc::abi::call_random(__wfc::abi::Function::#function, args, rng))?
        })
    } else {
        quote!(__wfc::abi::call(__wfc::abi::Function::#function, ::std::vec![#(#args),*])?)
    }
}

/// A JSONPath Choice state's visit (`abi::choice`, or `abi::choice_assign` when the state or a
/// rule has a JSONPath `Assign`), or `None` when it is left to `exec::choice` (JSONata Assign,
/// Output or Condition, an `Is*` test whose operand is not a Boolean literal). Gives the
/// expression of its `Chosen { branch, output }`.
pub(super) fn choice(items: &mut Items, name: &Literal, spec: &ChoiceState) -> Option<TokenStream> {
    let jsonata_language = |assign: Option<&Assign>, output: bool| output || !jsonpath_assign(assign);
    if jsonata_language(spec.assign.as_ref(), spec.output.is_some())
        || spec.choices.iter().any(|c| jsonata_language(c.assign.as_ref(), c.output.is_some()))
    {
        return choice_jsonata(items, name, spec);
    }
    let mut rules = Vec::new();
    // `Assign` reads the context object (`$$`, and `$name` for the variables as of entry).
    let assigns = spec.assign.is_some() || spec.choices.iter().any(|c| c.assign.is_some());
    let mut needs_ctx = uses_context(spec.input_path.as_ref()) || uses_context(spec.output_path.as_ref()) || assigns;
    let mut assign_arms = Vec::new();
    for (i, rule) in spec.choices.iter().enumerate() {
        if rule.output.is_some() || !jsonpath_assign(rule.assign.as_ref()) {
            return None;
        }
        if let Some(assign) = &rule.assign {
            let built = assign_code(items, assign, &quote!(input))?;
            let i = Literal::usize_unsuffixed(i);
            assign_arms.push(quote!(Some(#i) => Some(#built),));
        }
        needs_ctx |= condition_uses_context(&rule.condition);
        let condition = condition(items, &rule.condition)?;
        let i = Literal::usize_unsuffixed(i);
        rules.push(quote! {
            if #condition {
                return Ok(Some(#i));
            }
        });
    }
    let has_default = spec.default.is_some();
    let input_path = input_path_owned(items, spec.input_path.as_ref(), quote!(input));
    let input_path = quote!(Ok(#input_path));
    let output_path = output_path(items, spec.output_path.as_ref(), quote!(output));
    let rules = quote! {
        #(#rules)*
        Ok(::core::option::Option::None)
    };
    let closure = |body: &TokenStream, value: &str, value_type: TokenStream| {
        let value = param(body, value);
        let ctx = param(body, "ctx");
        quote!(|#value: #value_type, #ctx: &__wfc::Value| #body)
    };
    let input_path = closure(&input_path, "input", quote!(__wfc::Value));
    let rules = closure(&quote!({ #rules }), "input", quote!(&__wfc::Value));
    let output_path = closure(&output_path, "output", quote!(__wfc::Value));
    if !assigns && identity_paths(spec.input_path.as_ref(), spec.output_path.as_ref()) {
        // The output is the input: the runtime skips the payload check of an input it checked.
        return Some(quote! {
            __wfc::abi::choice_kept(exec, #name, #needs_ctx, input, #has_default, #rules)?
        });
    }
    if !assigns {
        return Some(quote! {
            __wfc::abi::choice(exec, #name, #needs_ctx, input, #has_default, #input_path, #rules, #output_path)?
        });
    }
    // The chosen rule's Assign; the state's own only on the Default path (as `exec::choice`).
    if let Some(assign) = &spec.assign {
        let built = assign_code(items, assign, &quote!(input))?;
        assign_arms.push(quote!(::core::option::Option::None => Some(#built),));
    }
    let assign = quote!(Ok(match branch {
        #(#assign_arms)*
        _ => ::core::option::Option::None,
    }));
    let input = param(&assign, "input");
    let ctx = param(&assign, "ctx");
    let assign = quote!(|branch: ::core::option::Option<usize>, #input: &__wfc::Value, #ctx: &__wfc::Value| #assign);
    Some(quote! {
        __wfc::abi::choice_assign(exec, #name, #needs_ctx, input, #has_default, #input_path, #rules, #assign, #output_path)?
    })
}

/// A JSONata Choice state with an `Output` or `Assign` (its own or a rule's):
/// `abi::choice_language`, whose rules are the Rust conditions and JSONata `Condition`s, and
/// whose `finish` evaluates the chosen rule's Assign then Output (the state's own on the Default
/// path; default Output: the input) with `$states.input` the raw input.
fn choice_jsonata(items: &mut Items, name: &Literal, spec: &ChoiceState) -> Option<TokenStream> {
    if !identity_paths(spec.input_path.as_ref(), spec.output_path.as_ref()) {
        return None;
    }
    let states = quote!(states);
    let mut rules = Vec::new();
    let mut arms = Vec::new();
    let block = |items: &mut Items, assign: Option<&Assign>, output: Option<&JsonataTemplate>| {
        let assigned = assign_option(items, assign, &quote!(&effective), &states);
        let output = match output {
            Some(t) => jsonata_template(items, t, "Output", &states),
            None => quote!(effective),
        };
        quote!({
            let assigned = #assigned;
            let output = #output;
            Ok((output, assigned))
        })
    };
    for (i, rule) in spec.choices.iter().enumerate() {
        let condition = condition(items, &rule.condition)?;
        let i = Literal::usize_unsuffixed(i);
        rules.push(quote! {
            if #condition {
                return Ok(Some(#i));
            }
        });
        if rule.assign.is_some() || rule.output.is_some() {
            let block = block(items, rule.assign.as_ref(), rule.output.as_ref());
            arms.push(quote!(Some(#i) => #block,));
        }
    }
    // A rule without Assign or Output: the input, nothing assigned.
    arms.push(quote!(Some(_) => Ok((effective, ::core::option::Option::None)),));
    let default = block(items, spec.assign.as_ref(), spec.output.as_ref());
    arms.push(quote!(::core::option::Option::None => #default,));
    let has_default = spec.default.is_some();
    let rules = quote!({
        #(#rules)*
        Ok(::core::option::Option::None)
    });
    let rules_input = param(&rules, "input");
    let rules_ctx = param(&rules, "ctx");
    let finish = with_states(quote!(match branch { #(#arms)* }), quote!(raw));
    let raw = param(&finish, "raw");
    let ctx = param(&finish, "ctx");
    Some(quote! {
        __wfc::abi::choice_language(
            exec,
            #name,
            true,
            input,
            #has_default,
            |input: __wfc::Value, _: &__wfc::Value| Ok(input),
            |#rules_input: &__wfc::Value, #rules_ctx: &__wfc::Value| #rules,
            |branch: ::core::option::Option<usize>, #raw: &__wfc::Value, effective: __wfc::Value, #ctx: &__wfc::Value| {
                #finish
            },
        )?
    })
}

fn condition_uses_context(c: &Condition) -> bool {
    match c {
        Condition::And(cs) | Condition::Or(cs) => cs.iter().any(condition_uses_context),
        Condition::Not(c) => condition_uses_context(c),
        Condition::Compare(cmp) => {
            cmp.variable.root() != Root::Input || matches!(&cmp.operand, Operand::Path(p) if p.root() != Root::Input)
        }
        Condition::Jsonata(_) => true,
    }
}

/// A rule as a Rust `bool` expression over the effective input `input` (and `ctx`), evaluated
/// left to right with the interpreter's short-circuits; a Variable that selects nothing returns
/// `States.Runtime` from the rules closure.
fn condition(items: &mut Items, c: &Condition) -> Option<TokenStream> {
    Some(match c {
        Condition::And(all) => {
            let all = all.iter().map(|c| condition(items, c)).collect::<Option<Vec<_>>>()?;
            quote!((#(#all)&&*))
        }
        Condition::Or(any) => {
            let any = any.iter().map(|c| condition(items, c)).collect::<Option<Vec<_>>>()?;
            quote!((#(#any)||*))
        }
        Condition::Not(c) => {
            let c = condition(items, c)?;
            quote!(!#c)
        }
        Condition::Compare(cmp) => compare(items, cmp)?,
        // `$states.input` is the state input (a JSONata state has no InputPath).
        Condition::Jsonata(e) => {
            let expr = items.jsonata(e);
            quote!(__wfc::abi::jsonata_condition(#expr, input, ctx)?)
        }
    })
}

/// `expr` (an `Option<Ordering>`) satisfies `operator`.
fn order(operator: Operator, expr: TokenStream) -> TokenStream {
    use Operator as O;
    let ordering = quote!(::core::cmp::Ordering);
    match operator {
        O::NumericEquals | O::TimestampEquals | O::StringEquals => quote!(#expr == Some(#ordering::Equal)),
        O::NumericLessThan | O::TimestampLessThan | O::StringLessThan => quote!(#expr == Some(#ordering::Less)),
        O::NumericGreaterThan | O::TimestampGreaterThan | O::StringGreaterThan => {
            quote!(#expr == Some(#ordering::Greater))
        }
        O::NumericLessThanEquals | O::TimestampLessThanEquals | O::StringLessThanEquals => {
            quote!(::core::matches!(#expr, Some(#ordering::Less | #ordering::Equal)))
        }
        _ => quote!(::core::matches!(#expr, Some(#ordering::Greater | #ordering::Equal))),
    }
}

fn operator_tokens(operator: Operator) -> TokenStream {
    let op = format_ident!("{}", format!("{operator:?}"));
    quote!(__wfc::abi::Operator::#op)
}

/// The value at a path of the effective input or the context object, bound to `binding` in
/// `some`, with `none` when it selects nothing: a `match` expression.
fn with_path(items: &mut Items, p: &Path, binding: &str, some: TokenStream, none: TokenStream) -> TokenStream {
    let binding = format_ident!("{}", binding);
    match items.steps(p) {
        Some(steps) => quote! {
            match __wfc::abi::get(input, #steps) {
                Some(#binding) => #some,
                ::core::option::Option::None => #none,
            }
        },
        None => {
            let path = items.static_path(p);
            quote! {
                match __wfc::abi::select_opt(__wfc::abi::path(&#path)?, input, ctx) {
                    Some(#binding) => {
                        let #binding = &#binding;
                        #some
                    }
                    ::core::option::Option::None => #none,
                }
            }
        }
    }
}

/// The failure of a path that selects nothing.
fn missing(items: &mut Items, p: &Path) -> TokenStream {
    if definite_steps(p).is_some() {
        let text = Literal::string(p.as_str());
        quote!(return Err(__wfc::abi::missing(#text, input)))
    } else {
        let path = items.static_path(p);
        quote!(return Err(__wfc::abi::missing_path(__wfc::abi::path(&#path)?, input, ctx)))
    }
}

/// One data-test expression.
fn compare(items: &mut Items, cmp: &Comparison) -> Option<TokenStream> {
    use Operator as O;
    let op = cmp.operator;
    let is_test = matches!(op, O::IsNull | O::IsNumeric | O::IsString | O::IsBoolean | O::IsTimestamp | O::IsPresent);
    if is_test {
        // The operand says whether the test should hold; anything but a Boolean literal is an
        // error the interpreter words at run time.
        let Operand::Literal(Value::Bool(expected)) = &cmp.operand else { return None };
        let expected = *expected;
        if op == O::IsPresent {
            // Present: the test holds when it should; absent: when it should not.
            let absent = !expected;
            return Some(with_path(items, &cmp.variable, "_value", quote!(#expected), quote!(#absent)));
        }
        let operator = operator_tokens(op);
        let test = quote!(__wfc::choice::type_test(#operator, value));
        let test = if expected { test } else { quote!(!#test) };
        let missing_variable = missing(items, &cmp.variable);
        return Some(with_path(items, &cmp.variable, "value", test, missing_variable));
    }
    let test = match &cmp.operand {
        Operand::Path(p) => {
            let operator = operator_tokens(op);
            let missing_operand = missing(items, p);
            let some = quote!(__wfc::choice::test(#operator, value, operand));
            with_path(items, p, "operand", some, missing_operand)
        }
        Operand::Literal(literal) => literal_test(items, op, literal),
        Operand::Native(native) => literal_test(items, op, native.literal()),
    };
    let missing_variable = missing(items, &cmp.variable);
    Some(with_path(items, &cmp.variable, "value", test, missing_variable))
}

/// `value <op> literal` with the literal converted now; `false` when the literal is not of the
/// operator's type (the interpreter's comparison is then always false too).
fn literal_test(items: &mut Items, op: Operator, literal: &Value) -> TokenStream {
    use Operator as O;
    let native = NativeLiteral::compile(op, literal);
    match (op, native.as_ref().map(NativeLiteral::form)) {
        (_, Some(NativeForm::Number(n))) => {
            let (int, float) = n.parts();
            let int = match int {
                Some(i) => {
                    let i = Literal::i128_suffixed(i);
                    quote!(Some(#i))
                }
                None => quote!(::core::option::Option::None),
            };
            let float = match float {
                Some(f) if f.is_finite() => {
                    let f = Literal::f64_suffixed(f);
                    quote!(Some(#f))
                }
                _ => quote!(::core::option::Option::None),
            };
            let name = items.push("NUMBER", |name| {
                quote!(const #name: __wfc::abi::NativeNumber = __wfc::abi::NativeNumber::from_parts(#int, #float);)
            });
            order(op, quote!(__wfc::abi::numeric(value, &#name)))
        }
        (_, Some(NativeForm::Timestamp(t))) => {
            let nanos = Literal::i128_suffixed(t.as_nanosecond());
            order(op, quote!(__wfc::abi::timestamp(value, #nanos)))
        }
        (_, Some(NativeForm::Pattern(_))) => {
            let text = Literal::string(literal.as_str().unwrap_or_default());
            let name = items.push("PATTERN", |name| {
                quote!(static #name: __wfc::abi::StaticPattern = __wfc::LazyLock::new(|| __wfc::abi::Pattern::parse(#text));)
            });
            quote!(__wfc::abi::matches(value, &#name))
        }
        (
            O::StringEquals
            | O::StringLessThan
            | O::StringGreaterThan
            | O::StringLessThanEquals
            | O::StringGreaterThanEquals,
            _,
        ) => match literal.as_str() {
            Some(s) => {
                let s = Literal::string(s);
                order(op, quote!(__wfc::abi::string(value, #s)))
            }
            None => quote!({
                let _ = value;
                false
            }),
        },
        (O::BooleanEquals, _) => match literal.as_bool() {
            Some(b) => quote!(__wfc::abi::boolean(value, #b)),
            None => quote!({
                let _ = value;
                false
            }),
        },
        // A Numeric/Timestamp/StringMatches literal of the wrong type.
        _ => quote!({
            let _ = value;
            false
        }),
    }
}

/// A JSONPath Task state as Rust: `(items, visit)`, where `items` declare `Code`, the state's
/// [`TaskCode`](wfc_runtime::abi::TaskCode) (its paths, Parameters, ResultSelector, timeouts,
/// and its Retry and Catch as `const` tables), and `visit` is the call of `visit_fn` (the
/// module's function running `abi::task` with the handler method, awaited), with a JSONPath
/// `Assign` as `assigned` and catchers' as functions. A state whose processing is all the
/// defaults gets an `abi::PlainTask` (its names, tables and shape as data) instead of a `Code`
/// type of its own, so such states share one compiled visit. `None` when the state is left to
/// `exec::task`: JSONata `Assign`/`Arguments`/`Output`/timeouts, `Credentials`, or a catcher
/// with a JSONata `Assign` or `Output`.
pub(super) fn task(items: &mut Items, name: &Literal, spec: &TaskState, visit_fn: TokenStream) -> Option<TaskVisit> {
    let jsonata_seconds = |s: &Option<Seconds>| matches!(s, Some(Seconds::Jsonata(_)));
    let identity = |p: Option<&Path>| p.is_some_and(Path::is_identity);
    let result_replaces = spec.result_path.as_ref().is_some_and(|p| p.is_identity());
    // As `TaskShape::of`: with Assign or JSONata Arguments/Output (which read `$states.input`),
    // the raw input is kept.
    let plain = spec.assign.is_none() && spec.arguments.is_none() && spec.output.is_none();
    let input_moves = plain && identity(spec.input_path.as_ref()) && result_replaces && spec.catch.is_empty();
    let single_attempt = spec.retry.is_empty();
    let result_is_output = spec.result_selector.is_none() && result_replaces && identity(spec.output_path.as_ref());
    // As `exec`'s `Interpreted::needs_context`.
    let needs_ctx = uses_context(spec.input_path.as_ref())
        || uses_context(spec.output_path.as_ref())
        || !plain
        || jsonata_seconds(&spec.timeout)
        || jsonata_seconds(&spec.heartbeat)
        || spec.credentials.is_some();
    let finish_needs_ctx = spec.result_selector.as_ref().is_some_and(template_uses_context);

    let resource = Literal::string(&spec.resource);
    let retry = retry_table(&spec.retry);
    let (catch, catcher_type) = catch_table(items, &spec.catch);
    let assign = assign_methods(items, spec.assign.as_ref());

    // InputPath: the effective input, owned (the raw input is kept for ResultPath and Catch).
    let input_body = match spec.input_path.as_ref() {
        None => quote!(Ok(__wfc::abi::empty_object())),
        Some(p) if p.is_identity() => quote!(Ok(__wfc::Value::clone(input))),
        Some(p) => match items.steps(p) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                quote!(__wfc::abi::select(input, #steps, #text).cloned())
            }
            None => {
                let path = items.static_path(p);
                quote!(__wfc::abi::select_path(__wfc::abi::path(&#path)?, input, ctx))
            }
        },
    };
    let timeout_body = seconds(items, spec.timeout.as_ref(), "TimeoutSecondsPath");
    let heartbeat_body = seconds(items, spec.heartbeat.as_ref(), "HeartbeatSecondsPath");
    let (form, parameters_body) = match &spec.parameters {
        None => (quote!(None), quote!(Ok(__wfc::Value::clone(effective)))),
        Some(t) => {
            let form = if template_uses_context(t) || template_uses_randomness(t) {
                let context = template_uses_context(t);
                quote!(PerAttempt { context: #context })
            } else {
                quote!(Once)
            };
            let built = template(items, t, "Parameters", &quote!(effective));
            (form, quote!(Ok(#built)))
        }
    };
    let selected = match &spec.result_selector {
        Some(t) => {
            let built = template(items, t, "Parameters", &quote!(&result));
            quote!(let result = #built;)
        }
        None => quote!(),
    };
    let placed = set_result(items, spec.result_path.as_ref(), quote!(raw_input), quote!(result));
    let output = output_path(items, spec.output_path.as_ref(), quote!(output));
    let finish_body = quote! {
        #selected
        let output = #placed;
        #output
    };

    let value = quote!(__wfc::Value);
    let failure = quote!(__wfc::Failure);
    let input_params = {
        let input = param(&input_body, "input");
        let ctx = param(&input_body, "ctx");
        quote!(#input: &#value, #ctx: &#value)
    };
    let seconds_params = |body: &TokenStream| {
        let effective = param(body, "effective");
        let ctx = param(body, "ctx");
        quote!(#effective: &#value, #ctx: &#value)
    };
    let timeout_params = seconds_params(&timeout_body);
    let heartbeat_params = seconds_params(&heartbeat_body);
    let parameters_params = {
        let exec = param(&parameters_body, "exec");
        let effective = param(&parameters_body, "effective");
        let ctx = param(&parameters_body, "ctx");
        quote!(#exec: &__wfc::Execution, #effective: &#value, #ctx: &#value)
    };
    let finish_params = {
        let exec = param(&finish_body, "exec");
        let raw_input = param(&finish_body, "raw_input");
        let result = param(&finish_body, "result");
        let ctx = param(&finish_body, "ctx");
        quote!(#exec: &__wfc::Execution, #raw_input: #value, #result: #value, #ctx: &#value)
    };
    // Only what differs from the trait's defaults (the absent field's meaning) is written out,
    // so a plain Task compiles to a resource, its tables and its shape.
    let seconds_type = quote!(Result<::core::option::Option<__wfc::abi::Duration>, #failure>);
    let mut methods = Vec::new();
    if needs_ctx {
        methods.push(quote!(
            fn needs_context(&self) -> bool {
                true
            }
        ));
    }
    if !identity(spec.input_path.as_ref()) {
        methods.push(quote!(fn input_path(&self, #input_params) -> Result<#value, #failure> { #input_body }));
    }
    if spec.timeout.is_some() {
        methods.push(quote!(fn timeout(&self, #timeout_params) -> #seconds_type { #timeout_body }));
    }
    if spec.heartbeat.is_some() {
        methods.push(quote!(fn heartbeat(&self, #heartbeat_params) -> #seconds_type { #heartbeat_body }));
    }
    if spec.parameters.is_some() {
        methods.push(quote! {
            fn parameters_form(&self) -> __wfc::abi::ParametersForm {
                __wfc::abi::ParametersForm::#form
            }
        });
        methods.push(quote!(fn parameters(&self, #parameters_params) -> Result<#value, #failure> { #parameters_body }));
    }
    if finish_needs_ctx {
        methods.push(quote!(
            fn finish_needs_context(&self) -> bool {
                true
            }
        ));
    }
    if !result_is_output {
        methods.push(quote!(fn finish(&self, #finish_params) -> Result<#value, #failure> { #finish_body }));
    }
    methods.push(assign);
    if let Some(t) = &spec.arguments {
        methods.push(states_methods(items, t, "Arguments", "has_arguments", "arguments"));
    }
    if let Some(t) = &spec.output {
        methods.push(states_methods(items, t, "Output", "has_output", "output"));
    }
    if let Some(credentials) = &spec.credentials {
        methods.push(credentials_methods(items, credentials));
    }
    let (retry, retriers) = if spec.retry.is_empty() { (quote!(), quote!(&[])) } else { (retry, quote!(RETRY)) };
    let (catch, catchers) = if spec.catch.is_empty() { (quote!(), quote!(&[])) } else { (catch, quote!(CATCH)) };
    let declared = items.tokens();
    let shape = quote! {
        __wfc::abi::TaskShape {
            input_moves: #input_moves,
            single_attempt: #single_attempt,
            result_is_output: #result_is_output,
        }
    };
    let plain_catchers = spec.catch.iter().all(|c| c.assign.is_none() && c.output.is_none());
    if plain_catchers && methods.iter().all(TokenStream::is_empty) {
        let decls = quote! {
            #declared
            #retry
            #catch
            /// The state's data processing: the defaults, with its names and tables.
            static CODE: __wfc::abi::PlainTask = __wfc::abi::PlainTask {
                name: #name,
                resource: #resource,
                // Decided by rustc, not on every visit.
                lambda_function: __wfc::abi::is_function_arn(#resource),
                retriers: #retriers,
                catchers: #catchers,
                shape: #shape,
            };
        };
        let visit = quote!(#visit_fn(handler, exec, #name, &CODE, input).await?);
        return Some(TaskVisit { decls, visit, plain: true });
    }
    let decls = quote! {
        #declared
        #retry
        #catch
        /// The state's data processing; its visit is `abi::task`'s.
        struct Code;

        impl __wfc::abi::TaskCode for Code {
            type Retrier = __wfc::abi::Retrier;
            type Catcher = #catcher_type;

            fn resource(&self) -> &str {
                #resource
            }

            fn static_names(&self) -> ::core::option::Option<(&'static str, &'static str)> {
                // Borrowed by each attempt's `TaskContext` instead of copied.
                ::core::option::Option::Some((#name, #resource))
            }

            fn is_lambda_function(&self) -> bool {
                // Decided by rustc, not on every visit.
                const LAMBDA_FUNCTION: bool = __wfc::abi::is_function_arn(#resource);
                LAMBDA_FUNCTION
            }

            fn retriers(&self) -> &[__wfc::abi::Retrier] {
                #retriers
            }

            fn catchers(&self) -> &[#catcher_type] {
                #catchers
            }

            fn shape(&self) -> __wfc::abi::TaskShape {
                #shape
            }

            #(#methods)*
        }
    };
    let visit = quote!(#visit_fn(handler, exec, #name, &Code, input).await?);
    Some(TaskVisit { decls, visit, plain: false })
}

/// A Task state's generated visit (see [`task`]).
pub(super) struct TaskVisit {
    /// The items its visit uses: its tables and its code, `CODE` or `Code`.
    pub(super) decls: TokenStream,
    /// The awaited call of the method's visit function on `input`, of type `Step`.
    pub(super) visit: TokenStream,
    /// Whether its code is the `static CODE: abi::PlainTask` (the defaults): then any Task of
    /// the same method can be awaited in its place, with `&CODE` as its code.
    pub(super) plain: bool,
}

/// A Task's `Credentials` as the methods `has_credentials` and `role_arn` of its `Code`: the
/// object built on the effective input (a payload template in a JSONPath state, a JSONata
/// template on `$states.input` in a JSONata one), its `RoleArn` checked by the runtime.
fn credentials_methods(items: &mut Items, credentials: &TaskCredentials) -> TokenStream {
    let body = match credentials {
        TaskCredentials::JsonPath(t) => {
            let built = template(items, t, "Parameters", &quote!(effective));
            quote!(__wfc::abi::jsonpath_role_arn(#built))
        }
        TaskCredentials::Jsonata(t) => {
            let built = jsonata_template(items, t, "Credentials", &quote!(states));
            // The cause names `RoleArn`'s expression when it is one, as the interpreter's does.
            let expr = match t {
                JsonataTemplate::Object(entries) => match entries.iter().find(|(k, _)| k == "RoleArn") {
                    Some((_, JsonataTemplate::Expr(e))) => {
                        let text = Literal::string(e.as_str());
                        quote!(Some(#text))
                    }
                    _ => quote!(::core::option::Option::None),
                },
                _ => quote!(::core::option::Option::None),
            };
            with_states(quote!(__wfc::abi::jsonata_role_arn(#built, #expr)), quote!(effective))
        }
    };
    let exec = param(&body, "exec");
    let effective = param(&body, "effective");
    let ctx = param(&body, "ctx");
    quote! {
        fn has_credentials(&self) -> bool {
            true
        }

        fn role_arn(&self, #exec: &__wfc::Execution, #effective: &__wfc::Value, #ctx: &__wfc::Value) -> Result<::std::string::String, __wfc::Failure> {
            #body
        }
    }
}

/// Whether a template draws random values (`States.UUID`, unseeded `States.MathRandom`), so that
/// a Task evaluates its Parameters per attempt, as the interpreter does.
fn template_uses_randomness(t: &Template) -> bool {
    match t {
        Template::Literal(_) | Template::Path(_) => false,
        Template::Intrinsic(i) => i.uses_randomness(),
        Template::Array(items) => items.iter().any(template_uses_randomness),
        Template::Object(entries) => entries.iter().any(|(_, t)| template_uses_randomness(t)),
    }
}

/// TimeoutSeconds or HeartbeatSeconds (`field` names the `*Path` form in messages): a body of
/// type `Result<Option<Duration>, Failure>` over `effective` (and `ctx`).
fn seconds(items: &mut Items, seconds: Option<&Seconds>, field: &str) -> TokenStream {
    match seconds {
        None => quote!(Ok(::core::option::Option::None)),
        Some(Seconds::Fixed(s)) => {
            let s = Literal::u64_suffixed(*s);
            quote!(Ok(Some(__wfc::abi::Duration::from_secs(#s))))
        }
        Some(Seconds::Path(p)) => {
            let field = Literal::string(field);
            match items.steps(p) {
                Some(steps) => {
                    let text = Literal::string(p.as_str());
                    quote!(__wfc::abi::seconds(effective, #steps, #text, #field))
                }
                None => {
                    let path = items.static_path(p);
                    quote!(__wfc::abi::seconds_path(__wfc::abi::path(&#path)?, #field, effective, ctx))
                }
            }
        }
        // On the state input (a JSONata Task has no InputPath), named without `Path`.
        Some(Seconds::Jsonata(e)) => {
            let expr = items.jsonata(e);
            let field = Literal::string(field.trim_end_matches("Path"));
            quote!(__wfc::abi::jsonata_seconds(#expr, #field, effective, ctx))
        }
    }
}

/// `ErrorEquals` as a `&'static [&'static str]` expression.
fn error_names(names: &[String]) -> TokenStream {
    let names = names.iter().map(|n| Literal::string(n));
    quote!(&[#(#names),*])
}

/// `const RETRY`: the Retry table, its numbers as the IR holds them (defaults applied, checked).
fn retry_table(retriers: &[Retrier]) -> TokenStream {
    let rows = retriers.iter().map(|r| {
        let errors = error_names(&r.error_equals);
        let interval = Literal::u64_suffixed(r.interval_seconds);
        let attempts = Literal::u32_suffixed(r.max_attempts);
        let rate = float(r.backoff_rate);
        let max_delay = match r.max_delay_seconds {
            Some(s) => {
                let s = Literal::u64_suffixed(s);
                quote!(Some(#s))
            }
            None => quote!(::core::option::Option::None),
        };
        let jitter = match r.jitter {
            Jitter::None => quote!(__wfc::abi::Jitter::None),
            Jitter::Full => quote!(__wfc::abi::Jitter::Full),
        };
        quote! {
            __wfc::abi::Retrier {
                error_equals: #errors,
                interval_seconds: #interval,
                max_attempts: #attempts,
                backoff_rate: #rate,
                max_delay_seconds: #max_delay,
                jitter: #jitter,
            }
        }
    });
    quote!(const RETRY: &[__wfc::abi::Retrier] = &[#(#rows),*];)
}

/// An `f64` literal; JSON numbers are finite, but a rate beyond `f64`'s range reads as infinity.
fn float(f: f64) -> TokenStream {
    if f.is_finite() {
        let f = Literal::f64_suffixed(f);
        quote!(#f)
    } else if f.is_nan() {
        quote!(::core::f64::NAN)
    } else if f > 0.0 {
        quote!(::core::f64::INFINITY)
    } else {
        quote!(::core::f64::NEG_INFINITY)
    }
}

/// `const CATCH`: the Catch table, and the type of its rows: `abi::Catcher`, or
/// `abi::AssignCatcher` when some catcher has a JSONPath `Assign` (each such block a function
/// over the Error Output, `$`, declared in `items`), or `abi::JsonataCatcher` when some catcher
/// has a JSONata `Assign` or `Output`.
fn catch_table(items: &mut Items, catchers: &[Catcher]) -> (TokenStream, TokenStream) {
    let jsonata = catchers.iter().any(|c| c.output.is_some() || matches!(c.assign, Some(Assign::Jsonata(_))));
    let with_assign = !jsonata && catchers.iter().any(|c| c.assign.is_some());
    let rows = catchers
        .iter()
        .map(|c| {
            let errors = error_names(&c.error_equals);
            let result_path = match &c.result_path {
                None => quote!(__wfc::abi::CatchPath::Discard),
                Some(p) if p.is_identity() => quote!(__wfc::abi::CatchPath::Replace),
                Some(p) => match items.steps(p.as_path()) {
                    Some(steps) => {
                        let text = Literal::string(p.as_str());
                        quote!(__wfc::abi::CatchPath::Steps(#steps, #text))
                    }
                    None => {
                        quote!(::core::compile_error!("wfc: internal error: a catcher ResultPath that is not definite"))
                    }
                },
            };
            let next = Literal::usize_suffixed(c.next);
            let row = quote! {
                __wfc::abi::Catcher { error_equals: #errors, result_path: #result_path, next: #next }
            };
            if jsonata {
                return jsonata_catcher(items, c, row);
            }
            if !with_assign {
                return row;
            }
            let assign = match c.assign.as_ref().and_then(|a| assign_code(items, a, &quote!(dollar))) {
                Some(built) => {
                    let body = quote!(Ok(#built));
                    let exec = param(&body, "exec");
                    let dollar = param(&body, "dollar");
                    let ctx = param(&body, "ctx");
                    let function = items.push("catch_assign", |name| {
                        quote! {
                            /// A catcher's `Assign`, on the Error Output.
                            fn #name(#exec: &__wfc::Execution, #dollar: &__wfc::Value, #ctx: &__wfc::Value) -> Result<__wfc::abi::Assigned, __wfc::Failure> {
                                #body
                            }
                        }
                    });
                    quote!(Some(#function as __wfc::abi::CatchAssign))
                }
                None => quote!(::core::option::Option::None),
            };
            quote!(__wfc::abi::AssignCatcher { catcher: #row, assign: #assign })
        })
        .collect::<Vec<_>>();
    let row_type = if jsonata {
        quote!(__wfc::abi::JsonataCatcher)
    } else if with_assign {
        quote!(__wfc::abi::AssignCatcher)
    } else {
        quote!(__wfc::abi::Catcher)
    };
    (quote!(const CATCH: &[#row_type] = &[#(#rows),*];), row_type)
}

/// A catcher of a JSONata state as an `abi::JsonataCatcher` row: `row` (ErrorEquals,
/// ResultPath, Next) and its `Assign` and `Output` as functions of the `$states` bindings
/// (`errorOutput`, `input`, `context`), declared in `items`.
fn jsonata_catcher(items: &mut Items, c: &Catcher, row: TokenStream) -> TokenStream {
    let function = |items: &mut Items, prefix: &str, body: TokenStream, returns: TokenStream| {
        let body = quote!(Ok(#body));
        let exec = param(&body, "exec");
        let states = param(&body, "states");
        let name = items.push(prefix, |name| {
            quote! {
                /// A catcher's JSONata field, on the `$states` bindings.
                fn #name(#exec: &__wfc::Execution, #states: &__wfc::abi::Bindings<'_>) -> Result<#returns, __wfc::Failure> {
                    #body
                }
            }
        });
        quote!(Some(#name as _))
    };
    let assign = match &c.assign {
        Some(assign) => {
            // A JSONPath block here would be on `$` (the Error Output) and `ctx`.
            let built =
                assign_any(items, assign, &quote!(states.error_output.unwrap_or(&__wfc::Value::Null)), &quote!(states));
            let built = if mentions(&built, "ctx") {
                quote!({
                    let ctx = states.context;
                    #built
                })
            } else {
                built
            };
            function(items, "catch_assign", built, quote!(__wfc::abi::Assigned))
        }
        None => quote!(::core::option::Option::None),
    };
    let output = match &c.output {
        Some(t) => {
            let built = jsonata_template(items, t, "Output", &quote!(states));
            function(items, "catch_output", built, quote!(__wfc::Value))
        }
        None => quote!(::core::option::Option::None),
    };
    quote!(__wfc::abi::JsonataCatcher { catcher: #row, assign: #assign, output: #output })
}

/// A JSONPath Wait state's visit (awaited), or `None` when it is left to `exec::wait`
/// (`Assign`, JSONata `Output`, `Seconds` or `Timestamp`). The body computes InputPath, the
/// delay (a literal `Seconds` as a constant, a `Timestamp` parsed here to nanoseconds, a
/// `*Path` read from the effective input) and OutputPath; the wait itself is `abi::wait`'s.
pub(super) fn wait(items: &mut Items, name: &Literal, spec: &WaitState) -> Option<TokenStream> {
    let jsonata_duration = matches!(spec.duration, WaitDuration::SecondsJsonata(_) | WaitDuration::TimestampJsonata(_));
    if spec.output.is_some() || matches!(spec.assign, Some(Assign::Jsonata(_))) || jsonata_duration {
        return wait_jsonata(items, name, spec);
    }
    let mut needs_ctx = uses_context(spec.input_path.as_ref()) || uses_context(spec.output_path.as_ref());
    let delay = match &spec.duration {
        WaitDuration::Seconds(s) => {
            let s = Literal::u64_suffixed(*s);
            quote!(__wfc::abi::Duration::from_secs(#s))
        }
        WaitDuration::Timestamp(text) => {
            // Validation accepted only timestamps that parse; any other is left to the runtime.
            let nanos = Literal::i128_suffixed(wfc_ir::timestamp::parse(text).ok()?.as_nanosecond());
            quote!(__wfc::abi::wait_until(exec, #nanos)?)
        }
        WaitDuration::SecondsPath(p) | WaitDuration::TimestampPath(p) => {
            needs_ctx |= p.root() != Root::Input;
            let text = Literal::string(p.as_str());
            let selected = match items.steps(p) {
                Some(steps) => quote!(__wfc::abi::get(&effective, #steps)),
                None => {
                    let path = items.static_path(p);
                    quote!(__wfc::abi::select_opt(__wfc::abi::path(&#path)?, &effective, ctx).as_ref())
                }
            };
            if matches!(spec.duration, WaitDuration::SecondsPath(_)) {
                quote!(__wfc::abi::wait_seconds_at(#text, #selected)?)
            } else {
                quote!(__wfc::abi::wait_timestamp_at(exec, #text, #selected)?)
            }
        }
        WaitDuration::SecondsJsonata(_) | WaitDuration::TimestampJsonata(_) => return None,
    };
    let effective = input_path_owned(items, spec.input_path.as_ref(), quote!(input));
    if let Some(assign) = &spec.assign {
        // Assign is computed before the wait, on the effective input, as the interpreter does.
        let assigned = assign_code(items, assign, &quote!(&effective))?;
        let output = output_path(items, spec.output_path.as_ref(), quote!(effective));
        let body = quote! {
            let effective = #effective;
            let delay = __wfc::abi::wait_limit(#delay)?;
            let assigned = #assigned;
            #output.map(|output| (output, assigned, delay))
        };
        let input = param(&body, "input");
        let ctx = param(&body, "ctx");
        return Some(quote! {
            __wfc::abi::wait_assign(exec, #name, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
                #body
            })
            .await?
        });
    }
    let output = output_path(items, spec.output_path.as_ref(), quote!(effective));
    let body = quote! {
        let effective = #effective;
        let delay = __wfc::abi::wait_limit(#delay)?;
        #output.map(|output| (output, delay))
    };
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    Some(quote! {
        __wfc::abi::wait(exec, #name, #needs_ctx, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
            #body
        })
        .await?
    })
}

/// A JSONata Wait state (a JSONata `Seconds`/`Timestamp`, `Output` or `Assign`):
/// `abi::wait_language`, whose body computes the delay, the Assign and the Output (default: the
/// input) before the wait, with `$states.input` the raw input, as `exec::wait` does.
fn wait_jsonata(items: &mut Items, name: &Literal, spec: &WaitState) -> Option<TokenStream> {
    if !identity_paths(spec.input_path.as_ref(), spec.output_path.as_ref()) {
        return None;
    }
    let states = quote!(states);
    let delay = match &spec.duration {
        WaitDuration::Seconds(s) => {
            let s = Literal::u64_suffixed(*s);
            quote!(__wfc::abi::Duration::from_secs(#s))
        }
        WaitDuration::Timestamp(text) => {
            let nanos = Literal::i128_suffixed(wfc_ir::timestamp::parse(text).ok()?.as_nanosecond());
            quote!(__wfc::abi::wait_until(exec, #nanos)?)
        }
        WaitDuration::SecondsJsonata(e) => {
            let expr = items.jsonata(e);
            quote!(__wfc::abi::wait_seconds_jsonata(exec, #expr, #states)?)
        }
        WaitDuration::TimestampJsonata(e) => {
            let expr = items.jsonata(e);
            quote!(__wfc::abi::wait_timestamp_jsonata(exec, #expr, #states)?)
        }
        // A JSONata state has no `*Path` fields.
        WaitDuration::SecondsPath(_) | WaitDuration::TimestampPath(_) => return None,
    };
    let assigned = assign_option(items, spec.assign.as_ref(), &quote!(&input), &states);
    let output = match &spec.output {
        Some(t) => jsonata_template(items, t, "Output", &states),
        None => quote!(input),
    };
    let body = with_states(
        quote! {
            let delay = __wfc::abi::wait_limit(#delay)?;
            let assigned = #assigned;
            let output = #output;
            Ok((output, assigned, delay))
        },
        quote!(&input),
    );
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    Some(quote! {
        __wfc::abi::wait_language(exec, #name, true, input, |#input: __wfc::Value, #ctx: &__wfc::Value| {
            #body
        })
        .await?
    })
}

/// A Fail state's visit (an expression of its `Failure`), or `None` when it is left to
/// `exec::fail` (an intrinsic ErrorPath/CausePath, or JSONata Error/Cause).
pub(super) fn fail(items: &mut Items, name: &Literal, spec: &FailState) -> Option<TokenStream> {
    // As `exec::fail`: a computed Error or Cause (an intrinsic, JSONata) reads the context.
    let needs_ctx = uses_context(spec.error_path.as_ref())
        || uses_context(spec.cause_path.as_ref())
        || spec.error_computed.is_some()
        || spec.cause_computed.is_some();
    let mut computed = |value: &ComputedString, field: &str| match value {
        ComputedString::Intrinsic(i) => {
            let value = call(items, i.call(), field, &quote!(input));
            let field = Literal::string(field);
            quote!(__wfc::abi::fail_computed(#field, #value)?)
        }
        ComputedString::Jsonata(e) => {
            let expr = items.jsonata(e);
            let field = Literal::string(field);
            quote!(__wfc::abi::fail_jsonata(exec, #expr, #field, states)?)
        }
    };
    let error = spec
        .error_computed
        .as_ref()
        .map(|c| computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Error" } else { "ErrorPath" }));
    let cause = spec
        .cause_computed
        .as_ref()
        .map(|c| computed(c, if matches!(c, ComputedString::Jsonata(_)) { "Cause" } else { "CausePath" }));
    let mut read = |literal: &Option<String>, path: &Option<Path>, field: &str| match path {
        Some(p) => {
            let text = Literal::string(p.as_str());
            let field = Literal::string(field);
            let selected = match items.steps(p) {
                Some(steps) => quote!(__wfc::abi::field(input, #steps, #text, #field)?),
                None => {
                    let path = items.static_path(p);
                    quote!(__wfc::abi::field_path(__wfc::abi::path(&#path)?, #field, input, ctx)?)
                }
            };
            quote!(__wfc::abi::fail_string(#field, #text, #selected)?)
        }
        // AWS leaves an absent Error/Cause out of the event; the Error Output uses "".
        None => {
            let literal = Literal::string(literal.as_deref().unwrap_or_default());
            quote!(::std::borrow::ToOwned::to_owned(#literal))
        }
    };
    let error = error.unwrap_or_else(|| read(&spec.error, &spec.error_path, "ErrorPath"));
    let cause = cause.unwrap_or_else(|| read(&spec.cause, &spec.cause_path, "CausePath"));
    // Error before Cause, as the interpreter reads them (a Cause failure shows only when the
    // Error succeeded; whatever the Cause draws at random then no longer matters: the Fail
    // ends the machine).
    let body = quote!(Ok(__wfc::Failure { error: #error, cause: #cause }));
    let body = if mentions(&body, "states") {
        let body = with_states(body, quote!(input));
        quote!({ #body })
    } else {
        body
    };
    let input = param(&body, "input");
    let ctx = param(&body, "ctx");
    Some(quote! {
        __wfc::abi::fail(exec, #name, #needs_ctx, input, |#input: &__wfc::Value, #ctx: &__wfc::Value| #body)
    })
}

/// InputPath on the borrowed raw input `input`, as a body of type `Result<Value, Failure>` (the
/// effective input, owned: the raw input is kept for ResultPath and Catch).
fn input_path_copied(items: &mut Items, path: Option<&Path>) -> TokenStream {
    match path {
        None => quote!(Ok(__wfc::abi::empty_object())),
        Some(p) if p.is_identity() => quote!(Ok(__wfc::Value::clone(input))),
        Some(p) => match items.steps(p) {
            Some(steps) => {
                let text = Literal::string(p.as_str());
                quote!(__wfc::abi::select(input, #steps, #text).cloned())
            }
            None => {
                let path = items.static_path(p);
                quote!(__wfc::abi::select_path(__wfc::abi::path(&#path)?, input, ctx))
            }
        },
    }
}

/// ResultSelector on `result`, ResultPath into `raw_input`, OutputPath: a body of type
/// `Result<Value, Failure>`.
fn finish_body(
    items: &mut Items,
    selector: Option<&Template>,
    result_path: Option<&ReferencePath>,
    output: Option<&Path>,
) -> TokenStream {
    let selected = match selector {
        Some(t) => {
            let built = template(items, t, "Parameters", &quote!(&result));
            quote!(let result = #built;)
        }
        None => quote!(),
    };
    let placed = set_result(items, result_path, quote!(raw_input), quote!(result));
    let output = output_path(items, output, quote!(output));
    quote! {
        #selected
        let output = #placed;
        #output
    }
}

/// The parts of a Parallel's or Map's `Code` that `abi::NestedCode` describes.
struct NestedParts<'s> {
    input_path: Option<&'s Path>,
    result_selector: Option<&'s Template>,
    result_path: Option<&'s ReferencePath>,
    output_path: Option<&'s Path>,
    retry: &'s [Retrier],
    catch: &'s [Catcher],
    /// `Assign` (JSONPath or JSONata), on the state's result.
    assign: Option<&'s Assign>,
    /// JSONata `Output`.
    output: Option<&'s JsonataTemplate>,
    /// Whether its own fields (ItemsPath, MaxConcurrencyPath; JSONata Arguments, Items,
    /// ItemSelector, MaxConcurrency) read the context object on entry.
    more_context: bool,
}

/// `const RETRY`/`CATCH` and the `impl abi::NestedCode for Code` of a Parallel or Map state,
/// writing out only what differs from the trait's defaults. The items the bodies need are
/// declared in `items` (the caller writes them out).
fn nested_code(items: &mut Items, parts: &NestedParts<'_>) -> Option<TokenStream> {
    let value = quote!(__wfc::Value);
    let failure = quote!(__wfc::Failure);
    let (catch, catcher_type) = catch_table(items, parts.catch);
    let assign = assign_methods(items, parts.assign);
    // As `exec`'s `InterpretedNested::needs_context`.
    let needs_ctx = uses_context(parts.input_path)
        || uses_context(parts.output_path)
        || parts.more_context
        || parts.assign.is_some()
        || parts.output.is_some();
    let identity = |p: Option<&Path>| p.is_some_and(Path::is_identity);
    let mut methods = Vec::new();
    if needs_ctx {
        methods.push(quote!(
            fn needs_context(&self) -> bool {
                true
            }
        ));
    }
    if !identity(parts.input_path) {
        let body = input_path_copied(items, parts.input_path);
        let input = param(&body, "input");
        let ctx = param(&body, "ctx");
        methods
            .push(quote!(fn input_path(&self, #input: &#value, #ctx: &#value) -> Result<#value, #failure> { #body }));
    }
    if parts.result_selector.is_some_and(template_uses_context) {
        methods.push(quote!(
            fn finish_needs_context(&self) -> bool {
                true
            }
        ));
    }
    let result_is_output = parts.result_selector.is_none()
        && parts.result_path.is_some_and(|p| p.is_identity())
        && identity(parts.output_path);
    if !result_is_output {
        let body = finish_body(items, parts.result_selector, parts.result_path, parts.output_path);
        let exec = param(&body, "exec");
        let raw_input = param(&body, "raw_input");
        let result = param(&body, "result");
        let ctx = param(&body, "ctx");
        methods.push(quote! {
            fn finish(&self, #exec: &__wfc::Execution, #raw_input: #value, #result: #value, #ctx: &#value) -> Result<#value, #failure> {
                #body
            }
        });
    }
    let (retry, retriers) =
        if parts.retry.is_empty() { (quote!(), quote!(&[])) } else { (retry_table(parts.retry), quote!(RETRY)) };
    let (catch, catchers) = if parts.catch.is_empty() { (quote!(), quote!(&[])) } else { (catch, quote!(CATCH)) };
    methods.push(assign);
    if let Some(t) = parts.output {
        methods.push(states_methods(items, t, "Output", "has_output", "output"));
    }
    Some(quote! {
        #retry
        #catch
        /// The state's data processing; its visit is the runtime's.
        struct Code;

        impl __wfc::abi::NestedCode for Code {
            type Retrier = __wfc::abi::Retrier;
            type Catcher = #catcher_type;

            fn retriers(&self) -> &[__wfc::abi::Retrier] {
                #retriers
            }

            fn catchers(&self) -> &[#catcher_type] {
                #catchers
            }

            #(#methods)*
        }
    })
}

/// A Parallel state's `Code` (`abi::NestedCode` and `abi::ParallelCode`: InputPath,
/// Parameters, ResultSelector, ResultPath, OutputPath, or JSONata Arguments and Output; Assign;
/// its Retry and Catch as `const` tables), with the items it uses; the caller runs it through
/// `abi::parallel` with the branches' generated machines.
pub(super) fn parallel(items: &mut Items, spec: &ParallelState) -> Option<TokenStream> {
    let nested = nested_code(
        items,
        &NestedParts {
            input_path: spec.input_path.as_ref(),
            result_selector: spec.result_selector.as_ref(),
            result_path: spec.result_path.as_ref(),
            output_path: spec.output_path.as_ref(),
            retry: &spec.retry,
            catch: &spec.catch,
            assign: spec.assign.as_ref(),
            output: spec.output.as_ref(),
            more_context: spec.arguments.is_some(),
        },
    )?;
    let mut methods = Vec::new();
    if let Some(t) = &spec.arguments {
        methods.push(states_methods(items, t, "Arguments", "has_arguments", "arguments"));
    }
    if let Some(t) = &spec.parameters {
        // Evaluated once, or per attempt when it reads `$$` or draws random values, as the
        // interpreter decides.
        let form = if template_uses_context(t) || template_uses_randomness(t) {
            let context = template_uses_context(t);
            quote!(PerAttempt { context: #context })
        } else {
            quote!(Once)
        };
        let built = template(items, t, "Parameters", &quote!(effective));
        let body = quote!(Ok(#built));
        let exec = param(&body, "exec");
        let effective = param(&body, "effective");
        let ctx = param(&body, "ctx");
        methods.push(quote! {
            fn parameters_form(&self) -> __wfc::abi::ParametersForm {
                __wfc::abi::ParametersForm::#form
            }
        });
        methods.push(quote! {
            fn parameters(&self, #exec: &__wfc::Execution, #effective: &__wfc::Value, #ctx: &__wfc::Value) -> Result<__wfc::Value, __wfc::Failure> {
                #body
            }
        });
    }
    let declared = items.tokens();
    Some(quote! {
        #declared
        #nested

        impl __wfc::abi::ParallelCode for Code {
            #(#methods)*
        }
    })
}

/// A Map state's `Code` (`abi::NestedCode` and `abi::MapCode`: InputPath, ItemsPath,
/// ItemSelector as construction code per item, MaxConcurrency or MaxConcurrencyPath,
/// ResultSelector, ResultPath, OutputPath; or JSONata Items, ItemSelector, MaxConcurrency and
/// Output; Assign; its Retry and Catch as `const` tables; for a DISTRIBUTED Map also
/// `abi::DistributedCode`, see [`distributed_code`]), with the items it uses; the caller runs it
/// through `abi::map` with the item processor's generated machine.
pub(super) fn map(items: &mut Items, spec: &MapState) -> Option<TokenStream> {
    let jsonata = is_jsonata_map(spec);
    let nested = nested_code(
        items,
        &NestedParts {
            input_path: spec.input_path.as_ref(),
            result_selector: spec.result_selector.as_ref(),
            result_path: spec.result_path.as_ref(),
            output_path: spec.output_path.as_ref(),
            retry: &spec.retry,
            catch: &spec.catch,
            assign: spec.assign.as_ref(),
            output: spec.output.as_ref(),
            more_context: uses_context(Some(&spec.items_path))
                || uses_context(spec.max_concurrency_path.as_ref())
                || spec.items.is_some()
                || spec.item_selector_jsonata.is_some()
                || spec.max_concurrency_jsonata.is_some(),
        },
    )?;
    let value = quote!(__wfc::Value);
    let failure = quote!(__wfc::Failure);
    let mut methods = Vec::new();
    let selector_ctx = spec.item_selector.as_ref().is_some_and(template_uses_context);
    // A DISTRIBUTED Map's reader, batcher and writer parameters may read `$$` too (as the
    // interpreter decides, without looking).
    if selector_ctx || spec.distributed.is_some() {
        methods.push(quote!(
            fn attempt_needs_context(&self) -> bool {
                true
            }
        ));
    }
    let max_concurrency = match &spec.max_concurrency_path {
        _ if spec.max_concurrency_jsonata.is_some() => spec.max_concurrency_jsonata.as_ref().map(|e| {
            let expr = items.jsonata(e);
            quote!(__wfc::abi::max_concurrency_jsonata(#expr, effective, ctx))
        }),
        Some(p) => {
            let path = items.static_path(p);
            Some(quote!(__wfc::abi::max_concurrency_path(__wfc::abi::path(&#path)?, effective, ctx)))
        }
        None if spec.max_concurrency != 0 => {
            let n = Literal::u64_suffixed(spec.max_concurrency);
            Some(quote!(Ok(#n)))
        }
        None => None,
    };
    if let Some(body) = max_concurrency {
        let effective = param(&body, "effective");
        let ctx = param(&body, "ctx");
        methods.push(
            quote!(fn max_concurrency(&self, #effective: &#value, #ctx: &#value) -> Result<u64, #failure> { #body }),
        );
    }
    // The items (a body of type `Result<Vec<Value>, Failure>`) and the selector's statements on
    // `items` (ending in `Ok(inputs)`; `None` without an ItemSelector), in the order the
    // interpreter evaluates them.
    let (selected, selection) = if jsonata {
        (jsonata_items_body(items, spec), jsonata_selection(items, spec))
    } else {
        (items_path_body(items, spec), selection(items, spec, selector_ctx))
    };
    let Some(dist) = &spec.distributed else {
        if let Some(take) = take_items(items, spec, jsonata, selection.is_some()) {
            methods.push(take);
        }
        let body = match selection {
            None => selected,
            Some(selection) if jsonata => quote! {
                let items = { #selected }?;
                #selection
            },
            Some(selection) => quote! {
                let items = #selected?;
                #selection
            },
        };
        methods.push(iteration_inputs(&body, jsonata));
        let declared = items.tokens();
        return Some(quote! {
            #declared
            #nested

            impl __wfc::abi::MapCode for Code {
                #(#methods)*
            }
        });
    };
    // A Map Run takes its items apart: `items` unless an ItemReader reads them, then
    // `select_inputs` on them. `iteration_inputs` is what they give without a reader.
    methods.push(quote! {
        fn iteration_inputs(
            &self,
            exec: &__wfc::Execution,
            raw_input: &#value,
            effective: &#value,
            ctx: &#value,
        ) -> Result<::std::vec::Vec<#value>, #failure> {
            let items = __wfc::abi::DistributedCode::items(self, exec, raw_input, effective, ctx)?;
            __wfc::abi::DistributedCode::select_inputs(self, exec, raw_input, effective, ctx, items)
        }

        fn distributed(&self) -> ::core::option::Option<&dyn __wfc::abi::DistributedCode> {
            Some(self)
        }
    });
    let distributed = distributed_code(items, spec, dist, selected, selection);
    let declared = items.tokens();
    Some(quote! {
        #declared
        #nested

        impl __wfc::abi::MapCode for Code {
            #(#methods)*
        }

        #distributed
    })
}

/// A DISTRIBUTED Map's `impl abi::DistributedCode for Code`: what its Map Run reads, written
/// out (only what differs from the trait's defaults). `Label` and the literals are constants;
/// the `*Path` forms `static` paths read by `abi::count_path`/`percentage_path`; the JSONata
/// forms `static` expressions; the ItemReader's, ItemBatcher's and ResultWriter's templates
/// construction code; `ReaderConfig` the arguments of `abi::parse_items`. `selected` and
/// `selection` are the items and the ItemSelector ([`map`]'s).
fn distributed_code(
    items: &mut Items,
    spec: &MapState,
    dist: &DistributedMap,
    selected: TokenStream,
    selection: Option<TokenStream>,
) -> TokenStream {
    let value = quote!(__wfc::Value);
    let failure = quote!(__wfc::Failure);
    let mut methods = Vec::new();
    if let Some(label) = &dist.label {
        let label = Literal::string(label);
        methods.push(quote! {
            fn label(&self) -> ::core::option::Option<&str> {
                Some(#label)
            }
        });
    }
    // `MapStateStarted`'s length: ItemsPath's array (also in a JSONata Map, whose ItemsPath
    // is `$`), as the interpreter counts it.
    let steps = if spec.items_path.is_identity() {
        Some(quote!(&[]))
    } else {
        items.steps(&spec.items_path).map(|s| quote!(#s))
    };
    let body = match steps {
        Some(steps) => quote!(__wfc::abi::items_length(effective, #steps)),
        None => {
            let path = items.static_path(&spec.items_path);
            quote!(__wfc::abi::items_path_length(&#path, effective, ctx))
        }
    };
    let (effective, ctx) = (param(&body, "effective"), param(&body, "ctx"));
    methods.push(quote!(fn items_path_length(&self, #effective: &#value, #ctx: &#value) -> usize { #body }));
    let (exec, raw_input, effective, ctx) = (
        param(&selected, "exec"),
        param(&selected, "raw_input"),
        param(&selected, "effective"),
        param(&selected, "ctx"),
    );
    methods.push(quote! {
        fn items(&self, #exec: &__wfc::Execution, #raw_input: &#value, #effective: &#value, #ctx: &#value) -> Result<::std::vec::Vec<#value>, #failure> {
            #selected
        }
    });
    if let Some(body) = selection {
        let (exec, raw_input, effective, ctx) =
            (param(&body, "exec"), param(&body, "raw_input"), param(&body, "effective"), param(&body, "ctx"));
        methods.push(quote! {
            fn select_inputs(
                &self,
                #exec: &__wfc::Execution,
                #raw_input: &#value,
                #effective: &#value,
                #ctx: &#value,
                items: ::std::vec::Vec<#value>,
            ) -> Result<::std::vec::Vec<#value>, #failure> {
                #body
            }
        });
    }
    if let Some(c) = &dist.tolerated_failure_count {
        let body = count_body(items, c, "ToleratedFailureCount", true);
        methods.push(values_method(
            "tolerated_failure_count",
            quote!(Result<::core::option::Option<u64>, #failure>),
            body,
        ));
    }
    if let Some(p) = &dist.tolerated_failure_percentage {
        let body = match p {
            Percentage::Fixed(p) => {
                let p = float(*p);
                quote!(Ok(Some(#p)))
            }
            Percentage::Path(p) => {
                let path = items.static_path(p);
                quote!(__wfc::abi::percentage_path(__wfc::abi::path(&#path)?, effective, ctx).map(Some))
            }
            Percentage::Jsonata(e) => {
                let expr = items.jsonata(e);
                quote!(__wfc::abi::percentage_jsonata(#expr, effective, ctx).map(Some))
            }
        };
        methods.push(values_method(
            "tolerated_failure_percentage",
            quote!(Result<::core::option::Option<f64>, #failure>),
            body,
        ));
    }
    if let Some(reader) = &dist.item_reader {
        methods.push(quote! {
            fn has_item_reader(&self) -> bool {
                true
            }
        });
        methods.extend(s3_fields_method(
            items,
            "reader_parameters",
            reader.parameters.as_ref(),
            reader.arguments.as_ref(),
        ));
        if let Some(c) = &reader.config.max_items {
            let body = count_body(items, c, "MaxItems", false);
            methods.push(values_method("max_items", quote!(Result<u64, #failure>), body));
        }
        methods.push(reader_spec_method(reader));
    }
    if let Some(batcher) = &dist.item_batcher {
        methods.push(quote! {
            fn has_item_batcher(&self) -> bool {
                true
            }
        });
        if let Some(c) = &batcher.max_items_per_batch {
            let body = count_body(items, c, "MaxItemsPerBatch", true);
            methods.push(values_method(
                "max_items_per_batch",
                quote!(Result<::core::option::Option<u64>, #failure>),
                body,
            ));
        }
        if let Some(c) = &batcher.max_input_bytes_per_batch {
            let body = count_body(items, c, "MaxInputBytesPerBatch", true);
            methods.push(values_method(
                "max_input_bytes_per_batch",
                quote!(Result<::core::option::Option<u64>, #failure>),
                body,
            ));
        }
        if let Some(t) = &batcher.batch_input_jsonata {
            methods.push(jsonata_batch_input_method(items, t));
        } else if let Some(t) = &batcher.batch_input {
            methods.push(template_method(items, "batch_input", t, true));
        }
    }
    if let Some(writer) = &dist.result_writer {
        methods.push(quote! {
            fn has_result_writer(&self) -> bool {
                true
            }
        });
        if writer.exports() {
            methods.extend(s3_fields_method(
                items,
                "writer_parameters",
                writer.parameters.as_ref(),
                writer.arguments.as_ref(),
            ));
        } else {
            methods.push(quote! {
                fn writer_exports(&self) -> bool {
                    false
                }
            });
        }
        if let Some(config) = writer.writer_config {
            let output_type = format_ident!(
                "{}",
                match config.output_type {
                    OutputType::Json => "Json",
                    OutputType::Jsonl => "Jsonl",
                }
            );
            let transformation = format_ident!(
                "{}",
                match config.transformation {
                    WriterTransformation::None => "None",
                    WriterTransformation::Compact => "Compact",
                    WriterTransformation::Flatten => "Flatten",
                }
            );
            methods.push(quote! {
                fn writer_config(&self) -> ::core::option::Option<__wfc::abi::WriterConfig> {
                    Some(__wfc::abi::WriterConfig {
                        output_type: __wfc::abi::OutputType::#output_type,
                        transformation: __wfc::abi::WriterTransformation::#transformation,
                    })
                }
            });
        }
    }
    quote! {
        impl __wfc::abi::DistributedCode for Code {
            #(#methods)*
        }
    }
}

/// The `DistributedCode` method `name(&self, exec, effective, ctx)` of an ItemReader's or
/// ResultWriter's `Parameters` (a JSONPath template on the effective input) or `Arguments` (a
/// JSONata template with `$states.input` the effective input, which is the state input in a
/// JSONata state); `None` when it has neither.
fn s3_fields_method(
    items: &mut Items,
    name: &str,
    parameters: Option<&Template>,
    arguments: Option<&JsonataTemplate>,
) -> Option<TokenStream> {
    let Some(t) = arguments else {
        return parameters.map(|t| template_method(items, name, t, false));
    };
    let name = format_ident!("{}", name);
    let built = jsonata_template(items, t, "Arguments", &quote!(states));
    let body = with_states(quote!(Ok(#built)), quote!(effective));
    let (exec, effective, ctx) = (param(&body, "exec"), param(&body, "effective"), param(&body, "ctx"));
    Some(quote! {
        fn #name(&self, #exec: &__wfc::Execution, #effective: &__wfc::Value, #ctx: &__wfc::Value) -> Result<__wfc::Value, __wfc::Failure> {
            #body
        }
    })
}

/// `DistributedCode::batch_input` of a JSONata Map: the `BatchInput` template evaluated with
/// `$states.input` the effective input, checked to be an object as the interpreter does.
fn jsonata_batch_input_method(items: &mut Items, t: &JsonataTemplate) -> TokenStream {
    let built = jsonata_template(items, t, "BatchInput", &quote!(states));
    let expr = match t {
        JsonataTemplate::Expr(e) => {
            let text = Literal::string(e.as_str());
            quote!(Some(#text))
        }
        _ => quote!(::core::option::Option::None),
    };
    let body = with_states(quote!(__wfc::abi::jsonata_batch_input(#built, #expr).map(Some)), quote!(effective));
    let (exec, effective, ctx) = (param(&body, "exec"), param(&body, "effective"), param(&body, "ctx"));
    quote! {
        fn batch_input(&self, #exec: &__wfc::Execution, #effective: &__wfc::Value, #ctx: &__wfc::Value)
            -> Result<::core::option::Option<__wfc::Value>, __wfc::Failure> {
            #body
        }
    }
}

/// `DistributedCode::reader_spec`: the reader's resource and `ReaderConfig` written out as an
/// `abi::ReadSpec`.
fn reader_spec_method(reader: &wfc_ir::distributed::ItemReader) -> TokenStream {
    let config = &reader.config;
    let lists = reader.lists_objects();
    let input_type = match config.input_type {
        None => quote!(::core::option::Option::None),
        Some(t) => {
            let t = format_ident!(
                "{}",
                match t {
                    InputType::Json => "Json",
                    InputType::Jsonl => "Jsonl",
                    InputType::Csv => "Csv",
                    InputType::Manifest => "Manifest",
                    InputType::Parquet => "Parquet",
                }
            );
            quote!(Some(__wfc::abi::InputType::#t))
        }
    };
    let headers = match &config.csv_headers {
        CsvHeaders::FirstRow => quote!(::core::option::Option::None),
        CsvHeaders::Given(headers) => {
            let headers = headers.iter().map(|h| Literal::string(h));
            quote!(Some(::std::vec![#(#headers),*]))
        }
    };
    let delimiter = format_ident!(
        "{}",
        match config.csv_delimiter {
            CsvDelimiter::Comma => "Comma",
            CsvDelimiter::Pipe => "Pipe",
            CsvDelimiter::Semicolon => "Semicolon",
            CsvDelimiter::Space => "Space",
            CsvDelimiter::Tab => "Tab",
        }
    );
    let pointer = match &config.items_pointer {
        None => quote!(::core::option::Option::None),
        Some(p) => {
            let p = Literal::string(p);
            quote!(Some(#p))
        }
    };
    let transformation = format_ident!(
        "{}",
        match config.transformation {
            ReaderTransformation::None => "None",
            ReaderTransformation::LoadAndFlatten => "LoadAndFlatten",
        }
    );
    let manifest = match config.manifest_type {
        None => quote!(::core::option::Option::None),
        Some(ManifestType::S3Inventory) => quote!(Some(__wfc::abi::ManifestType::S3Inventory)),
        Some(ManifestType::AthenaData) => quote!(Some(__wfc::abi::ManifestType::AthenaData)),
    };
    quote! {
        fn reader_spec(&self) -> Result<__wfc::abi::ReadSpec<'_>, __wfc::Failure> {
            Ok(__wfc::abi::ReadSpec {
                lists_objects: #lists,
                input_type: #input_type,
                given_headers: #headers,
                delimiter: __wfc::abi::CsvDelimiter::#delimiter,
                items_pointer: #pointer,
                transformation: __wfc::abi::ReaderTransformation::#transformation,
                manifest_type: #manifest,
            })
        }
    }
}

/// A count field's value (`field` names its `abi::CountField`), a body over `effective` and
/// `ctx`: a literal, its `*Path` or its JSONata expression; wrapped in `Some` when `optional`.
fn count_body(items: &mut Items, count: &Count, field: &str, optional: bool) -> TokenStream {
    let field = format_ident!("{}", field);
    let some = if optional { quote!(.map(Some)) } else { quote!() };
    match count {
        Count::Fixed(n) => {
            let n = Literal::u64_suffixed(*n);
            if optional { quote!(Ok(Some(#n))) } else { quote!(Ok(#n)) }
        }
        Count::Path(p) => {
            let path = items.static_path(p);
            quote!(__wfc::abi::count_path(__wfc::abi::path(&#path)?, __wfc::abi::CountField::#field, effective, ctx)#some)
        }
        Count::Jsonata(e) => {
            let expr = items.jsonata(e);
            quote!(__wfc::abi::count_jsonata(#expr, __wfc::abi::CountField::#field, effective, ctx)#some)
        }
    }
}

/// A `DistributedCode` method `name(&self, effective, ctx) -> returns` with `body`.
fn values_method(name: &str, returns: TokenStream, body: TokenStream) -> TokenStream {
    let name = format_ident!("{}", name);
    let (effective, ctx) = (param(&body, "effective"), param(&body, "ctx"));
    quote! {
        fn #name(&self, #effective: &__wfc::Value, #ctx: &__wfc::Value) -> #returns {
            #body
        }
    }
}

/// A `DistributedCode` method `name(&self, exec, effective, ctx)` building the template `t` on
/// the effective input (`Parameters` in causes, as the interpreter names it); its value in
/// `Some` when `optional`.
fn template_method(items: &mut Items, name: &str, t: &Template, optional: bool) -> TokenStream {
    let name = format_ident!("{}", name);
    let built = template(items, t, "Parameters", &quote!(effective));
    let (body, returns) = if optional {
        (quote!(Ok(Some(#built))), quote!(Result<::core::option::Option<__wfc::Value>, __wfc::Failure>))
    } else {
        (quote!(Ok(#built)), quote!(Result<__wfc::Value, __wfc::Failure>))
    };
    let (exec, effective, ctx) = (param(&body, "exec"), param(&body, "effective"), param(&body, "ctx"));
    quote! {
        fn #name(&self, #exec: &__wfc::Execution, #effective: &__wfc::Value, #ctx: &__wfc::Value) -> #returns {
            #body
        }
    }
}

/// `MapCode::iteration_inputs` with `body` (over `raw_input` for a JSONata Map, else
/// `effective`, and `ctx`).
fn iteration_inputs(body: &TokenStream, jsonata: bool) -> TokenStream {
    let value = quote!(__wfc::Value);
    let failure = quote!(__wfc::Failure);
    let exec = param(body, "exec");
    let ctx = param(body, "ctx");
    if jsonata {
        let raw_input = param(body, "raw_input");
        quote! {
            fn iteration_inputs(
                &self,
                #exec: &__wfc::Execution,
                #raw_input: &#value,
                _effective: &#value,
                #ctx: &#value,
            ) -> Result<::std::vec::Vec<#value>, #failure> {
                #body
            }
        }
    } else {
        let effective = param(body, "effective");
        quote! {
            fn iteration_inputs(
                &self,
                #exec: &__wfc::Execution,
                _raw_input: &#value,
                #effective: &#value,
                #ctx: &#value,
            ) -> Result<::std::vec::Vec<#value>, #failure> {
                #body
            }
        }
    }
}

/// `MapCode::takes_items` and `take_items` for an INLINE JSONPath Map that reads its input no
/// more once it has the items, so they are moved out of it instead of copied: InputPath `$`, a
/// definite ItemsPath, no ItemSelector (`selects`), a literal MaxConcurrency, ResultPath `$`
/// (the raw input is discarded), no Retry (an attempt after the first would select the items
/// again), no Catch (a catcher's ResultPath writes into the raw input) and no Assign. `None`
/// otherwise.
fn take_items(items: &mut Items, spec: &MapState, jsonata: bool, selects: bool) -> Option<TokenStream> {
    let moves = !jsonata
        && !selects
        && spec.distributed.is_none()
        && spec.input_path.as_ref().is_some_and(Path::is_identity)
        && spec.max_concurrency_path.is_none()
        && spec.result_path.as_ref().is_some_and(|p| p.is_identity())
        && spec.retry.is_empty()
        && spec.catch.is_empty()
        && spec.assign.is_none();
    if !moves {
        return None;
    }
    let steps =
        if spec.items_path.is_identity() { quote!(&[]) } else { items.steps(&spec.items_path).map(|s| quote!(#s))? };
    let text = Literal::string(spec.items_path.as_str());
    Some(quote! {
        fn takes_items(&self) -> bool {
            true
        }
        fn take_items(&self, raw_input: &mut __wfc::Value) -> Result<::std::vec::Vec<__wfc::Value>, __wfc::Failure> {
            __wfc::abi::take_items(raw_input, #steps, #text)
        }
    })
}

/// ItemsPath on `effective`: an expression of `Result<Vec<Value>, Failure>`.
fn items_path_body(items: &mut Items, spec: &MapState) -> TokenStream {
    let steps = if spec.items_path.is_identity() {
        Some(quote!(&[]))
    } else {
        items.steps(&spec.items_path).map(|s| quote!(#s))
    };
    match steps {
        Some(steps) => {
            let text = Literal::string(spec.items_path.as_str());
            quote!(__wfc::abi::items(effective, #steps, #text))
        }
        None => {
            let path = items.static_path(&spec.items_path);
            quote!(__wfc::abi::items_path(__wfc::abi::path(&#path)?, effective, ctx))
        }
    }
}

/// A JSONPath ItemSelector on `items`: statements ending in `Ok(inputs)`; `None` without one.
fn selection(items: &mut Items, spec: &MapState, selector_ctx: bool) -> Option<TokenStream> {
    let t = spec.item_selector.as_ref()?;
    let built = template(items, t, "Parameters", &quote!(effective));
    Some(if selector_ctx {
        // `$$.Map.Item.Index` and `$$.Map.Item.Value` join the Map's context object.
        quote! {
            let mut inputs = ::std::vec::Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let ctx = &__wfc::abi::item_context(ctx, index, item);
                inputs.push(#built);
            }
            Ok(inputs)
        }
    } else {
        quote! {
            let mut inputs = ::std::vec::Vec::with_capacity(items.len());
            for _ in &items {
                inputs.push(#built);
            }
            Ok(inputs)
        }
    })
}

/// Whether a Map state is a JSONata state, as `exec::is_jsonata_map` decides (the IR keeps no
/// query language): its items then come from `Items` (or the input) and `ItemSelector` is
/// JSONata.
fn is_jsonata_map(spec: &MapState) -> bool {
    let jsonata_count = |c: &Option<Count>| matches!(c, Some(Count::Jsonata(_)));
    spec.jsonata
        || spec.items.is_some()
        || spec.item_selector_jsonata.is_some()
        || matches!(spec.assign, Some(Assign::Jsonata(_)))
        || spec.output.is_some()
        || spec.max_concurrency_jsonata.is_some()
        || spec.distributed.as_ref().is_some_and(|d| {
            jsonata_count(&d.tolerated_failure_count)
                || matches!(d.tolerated_failure_percentage, Some(Percentage::Jsonata(_)))
        })
}

/// A JSONata Map's items, a body of type `Result<Vec<Value>, Failure>` over the raw input
/// `raw_input` and the context object `ctx`: `Items`, else the input, which must be an array,
/// as `exec::jsonata_map_items` evaluates them.
fn jsonata_items_body(items: &mut Items, spec: &MapState) -> TokenStream {
    match &spec.items {
        Some(t) => {
            let built = jsonata_template(items, t, "Items", &quote!(states));
            let expr = match t {
                JsonataTemplate::Expr(e) => {
                    let text = Literal::string(e.as_str());
                    quote!(Some(#text))
                }
                _ => quote!(::core::option::Option::None),
            };
            with_states(quote!(__wfc::abi::jsonata_items(#built, #expr)), quote!(raw_input))
        }
        None => quote!(__wfc::abi::input_items(raw_input)),
    }
}

/// A JSONata Map's `ItemSelector` on `items`, with `$states.context.Map.Item`, as
/// `exec::jsonata_map_select` evaluates it: statements ending in `Ok(inputs)`; `None` without
/// one.
fn jsonata_selection(items: &mut Items, spec: &MapState) -> Option<TokenStream> {
    let t = spec.item_selector_jsonata.as_ref()?;
    let built = jsonata_template(items, t, "ItemSelector", &quote!(states));
    Some(quote! {
        let mut inputs = ::std::vec::Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let ctx = &__wfc::abi::item_context(ctx, index, item);
            let states = &__wfc::abi::Bindings::new(raw_input, ctx);
            inputs.push(#built);
        }
        Ok(inputs)
    })
}
