//! Serverless Workflow states as Rust (issue 20): every SW state kind (operation, switch on data
//! or events, inject, delay, foreach, parallel, callback, event, and an awaited subflow the
//! handler runs or compiled together, awaited or not), with its state data filters, `retry`,
//! `onError`, transition guards and produced events. A subflow compiled together (a subflow
//! state's, a foreach's or a parallel branch's embedded workflow) is a generated machine of its
//! own ([`embedded`], a nested module, as a Parallel branch's). One not awaited runs detached,
//! queued in the execution for the top-level run: its machine runs on the by-name handler
//! (`ByName`, the generated `Handler` over the top-level run's function table), since a queued
//! child cannot borrow the caller's handler. The workflow's settings (`id`, schemas, schedule)
//! are construction code too ([`meta`]), for `abi::sw_run_top`.
//!
//! A generated state is a `Code` type implementing the runtime's `abi::SwCode`, the trait the
//! interpreter implements from the IR, and its visit is `abi::sw_step` (`sw::step_with`), so both
//! engines run one code path (events, retries and their back-offs, `onError`, schemas, durable
//! operation ids). Generated here:
//!
//! - each `{{ }}` expression (filters, conditions, `retry` and `onError` expressions, guards,
//!   the expression strings of `parameters`, event `data` and `contextAttributes`) is a
//!   `static abi::StaticSwExpr`, built once on first use from the parts written out here,
//!   evaluated by `abi::sw_eval`/`sw_holds`/`sw_filter`/`sw_merge_filtered`;
//! - a switch's data conditions are an `if` per condition, in order, each giving its way out; its
//!   event conditions a `match` on the event that came (`abi::sw_wait_first`);
//! - a function action builds its parameters (construction code, literal subtrees `static`s) and
//!   calls the generated `Handler` method directly through `abi::sw_call` (the call's events,
//!   timeout and durable step are the runtime's); actions in `parallel` mode are joined by
//!   `abi::sw_join` and their results merged in definition order; an event action builds its
//!   trigger's payload and goes through `abi::sw_event_action`;
//! - event definitions are `static`s built once; a callback awaits its event through
//!   `abi::sw_wait_first`, an event state its events through `abi::sw_wait_events`, each
//!   `onEvents` entry's actions on the entry's site;
//! - a foreach's and a parallel state's bodies are generated closures run by `abi::sw_foreach`
//!   and `abi::sw_parallel`;
//! - an inject's data is a `static` merged by `abi::sw_inject`; a delay's `timeDelay` a constant
//!   for `abi::sw_delay`;
//! - each way out (`transition` with its guard and produced events, `end`, a condition,
//!   `default`, an `onError` entry) is a variant of the machine's `State` enum, or the machine's
//!   end: no look-up of the next state at run time.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;
use serde_json::Value;
use wfc_ir::sw::{
    Action, ActionCall, ActionMode, Body, Completion, ErrorMatch, EventDef, Expr, ExprPart, ProduceEvent, SwKind,
    SwNext, SwState, SwWorkflowMeta,
};

use wfc_ir::Workflow;

use super::states::{Items, value_tokens};

/// Whether `workflow` (or a subflow compiled into it, at any depth) has a subflow compiled
/// together and not awaited, whose machine runs on the by-name handler (`ByName`).
pub(super) fn has_detached(workflow: &Workflow) -> bool {
    workflow.machine.states.iter().any(|s| match &s.kind {
        wfc_ir::StateKind::Sw(spec) => {
            matches!(spec.kind, SwKind::Subflow { wait: false, workflow: Some(_), .. })
                || embedded(spec).into_iter().any(|(_, w)| has_detached(w))
        }
        _ => false,
    })
}

/// Construction code of the workflow's settings (`abi::SwWorkflowMeta`), for `abi::sw_run_top`.
pub(super) fn meta(meta: &SwWorkflowMeta) -> TokenStream {
    let string = |s: &str| {
        let s = Literal::string(s);
        quote!(::std::borrow::ToOwned::to_owned(#s))
    };
    let option = |v: Option<TokenStream>| match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let id = string(&meta.id);
    let input_schema = option(meta.input_schema.as_ref().map(value_tokens));
    let output_schema = option(meta.output_schema.as_ref().map(value_tokens));
    let schedule = option(meta.schedule.as_ref().map(|schedule| {
        let interval = option(schedule.interval.as_ref().map(|i| {
            let repeat = option(i.repeat.map(|r| {
                let r = Literal::u64_suffixed(r);
                quote!(#r)
            }));
            let start = option(i.start.as_deref().map(string));
            let end = option(i.end.as_deref().map(string));
            let period = Literal::f64_suffixed(i.period_seconds);
            quote!(__wfc::abi::SwInterval { repeat: #repeat, start: #start, end: #end, period_seconds: #period })
        }));
        let cron = option(schedule.cron.as_deref().map(string));
        let timezone = option(schedule.timezone.as_deref().map(string));
        let direct_invoke = schedule.direct_invoke;
        quote!(__wfc::abi::SwSchedule { interval: #interval, cron: #cron, timezone: #timezone, direct_invoke: #direct_invoke })
    }));
    let functions = meta.functions.iter().map(|(name, operation)| {
        let (name, operation) = (string(name), string(operation));
        quote!((#name, #operation))
    });
    quote! {
        __wfc::abi::SwWorkflowMeta {
            id: #id,
            input_schema: #input_schema,
            output_schema: #output_schema,
            schedule: #schedule,
            functions: ::std::vec![#(#functions),*],
        }
    }
}

/// The subflows compiled together of `spec`, numbered as generated code numbers their machines
/// (0 for a subflow state's or a foreach's; the branch's index for a parallel state's), each a
/// generated machine of its own.
pub(super) fn embedded(spec: &SwState) -> Vec<(usize, &Workflow)> {
    match &spec.kind {
        SwKind::Subflow { workflow: Some(w), .. } => vec![(0, w.as_ref())],
        SwKind::ForEach { body: Body::Workflow(w), .. } => vec![(0, w.as_ref())],
        SwKind::Parallel { branches, .. } => branches
            .iter()
            .enumerate()
            .filter_map(|(b, branch)| match &branch.body {
                Body::Workflow(w) => Some((b, w.as_ref())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Every way out of `spec`, with the `abi::SwExit` pattern that takes it.
fn exits(spec: &SwState) -> Vec<(TokenStream, &SwNext)> {
    let mut out = Vec::new();
    match &spec.kind {
        SwKind::Switch { data, events, default, .. } => {
            for (i, c) in data.iter().enumerate() {
                let i = Literal::usize_unsuffixed(i);
                out.push((quote!(__wfc::abi::SwExit::Condition(#i)), &c.next));
            }
            for (i, c) in events.iter().enumerate() {
                let i = Literal::usize_unsuffixed(i);
                out.push((quote!(__wfc::abi::SwExit::Event(#i)), &c.next));
            }
            if let Some(d) = default {
                out.push((quote!(__wfc::abi::SwExit::Default), d));
            }
        }
        _ => out.push((quote!(__wfc::abi::SwExit::Next), &spec.next)),
    }
    for (i, e) in spec.on_error.iter().enumerate() {
        let i = Literal::usize_unsuffixed(i);
        out.push((quote!(__wfc::abi::SwExit::OnError(#i)), &e.next));
    }
    out
}

/// An event definition as a `static` built once (declared once per state and event name):
/// its name, for `&NAME` (an `&EventDef` through the `LazyLock`).
fn event_def(items: &mut Items, events: &mut Vec<(String, Ident)>, def: &EventDef) -> Ident {
    let build = {
        let string = |s: &str| {
            let s = Literal::string(s);
            quote!(::std::borrow::ToOwned::to_owned(#s))
        };
        let option = |s: Option<&str>| match s {
            Some(s) => {
                let s = string(s);
                quote!(::core::option::Option::Some(#s))
            }
            None => quote!(::core::option::Option::None),
        };
        let name = string(&def.name);
        let source = option(def.source.as_deref());
        let event_type = string(&def.event_type);
        let produced = def.produced;
        let correlation = def.correlation.iter().map(|c| {
            let name = string(&c.name);
            let value = option(c.value.as_deref());
            quote!(__wfc::abi::SwCorrelation { name: #name, value: #value })
        });
        quote!(__wfc::abi::SwEventDef {
            name: #name,
            source: #source,
            event_type: #event_type,
            produced: #produced,
            correlation: ::std::vec![#(#correlation),*],
        })
    };
    let key = build.to_string();
    if let Some((_, name)) = events.iter().find(|(k, _)| *k == key) {
        return name.clone();
    }
    let name =
        items.push("EVENT", |n| quote!(static #n: __wfc::abi::StaticEventDef = __wfc::LazyLock::new(|| #build);));
    events.push((key, name.clone()));
    name
}

/// The code producing a transition's or end's events, in order, on the state's output
/// (`visited.output`): each event's payload (a whole-payload expression selects like a filter,
/// an object or string is a template, absent the output) and attributes built here.
fn produce_code(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    events: &mut Vec<(String, Ident)>,
    name: &Literal,
    produce: &[ProduceEvent],
) -> TokenStream {
    let mut out = Vec::new();
    for (i, p) in produce.iter().enumerate() {
        let def = event_def(items, events, &p.event);
        let payload = payload_code(items, expressions, p.data.as_ref());
        let attributes = p.context_attributes.iter().map(|(k, v)| {
            let k = Literal::string(k);
            let v = parameters(items, expressions, v, &quote!(input));
            quote!((::std::borrow::ToOwned::to_owned(#k), __wfc::abi::sw_attribute(#v)))
        });
        let attributes: Vec<TokenStream> = attributes.collect();
        let i = Literal::usize_unsuffixed(i);
        out.push(quote! {
            let payload = #payload;
            __wfc::abi::sw_produce(exec, #name, visited.visit, #i, &#def, payload, ::std::vec![#(#attributes),*]).await?;
        });
    }
    let out = quote!(#(#out)*);
    // The templates read the output as `input` (a reference here: the output goes on).
    let input = super::states::mentions(&out, "input").then(|| quote!(let input = &visited.output;));
    quote! {
        #input
        #out
    }
}

/// The expression of `expr`, as a `static` built once (declared once per state and text):
/// `&'static Expr` (`?` on a build failure, which the compiler already excluded).
fn expr(items: &mut Items, expressions: &mut Vec<(String, Ident)>, e: &Expr) -> TokenStream {
    let parts = e.parts.iter().map(|p| match p {
        ExprPart::Text(t) => {
            let t = Literal::string(t);
            quote!(__wfc::abi::SwPart::Text(#t))
        }
        ExprPart::Path(p) => {
            let p = Literal::string(p.as_str());
            quote!(__wfc::abi::SwPart::Path(#p))
        }
    });
    let text = Literal::string(&e.text);
    let build = quote!(__wfc::abi::sw_expr(#text, &[#(#parts),*]));
    let key = build.to_string();
    let name = match expressions.iter().find(|(k, _)| *k == key) {
        Some((_, name)) => name.clone(),
        None => {
            let name = items.push(
                "SW_EXPR",
                |name| quote!(static #name: __wfc::abi::StaticSwExpr = __wfc::LazyLock::new(|| #build);),
            );
            expressions.push((key, name.clone()));
            name
        }
    };
    quote!(__wfc::abi::sw_expr_ref(&#name)?)
}

/// The expressions of a template string (`text {{ path }} text`), split as the runtime splits
/// them; `None` when a `{{` is not closed or a path does not parse (the string is then literal).
fn template_expr(s: &str) -> Option<Expr> {
    let mut parts = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            parts.push(ExprPart::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + 2..];
        let close = after.find("}}")?;
        parts.push(ExprPart::Path(wfc_ir::Path::parse(after[..close].trim()).ok()?));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        parts.push(ExprPart::Text(rest.to_owned()));
    }
    Some(Expr { text: s.to_owned(), parts })
}

/// Construction code of a function's `parameters` over `input`: objects and arrays built in
/// order, each string holding `{{ }}` evaluated, literal subtrees `static`s.
fn parameters(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    t: &Value,
    input: &TokenStream,
) -> TokenStream {
    fn has_expr(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains("{{") && template_expr(s).is_some(),
            Value::Array(a) => a.iter().any(has_expr),
            Value::Object(o) => o.values().any(has_expr),
            _ => false,
        }
    }
    if !has_expr(t) {
        return items.value(t);
    }
    match t {
        Value::String(s) => match template_expr(s) {
            Some(e) => {
                let e = expr(items, expressions, &e);
                quote!(__wfc::abi::sw_eval(#e, #input))
            }
            None => value_tokens(t),
        },
        Value::Array(a) => {
            let elements: Vec<TokenStream> = a.iter().map(|v| parameters(items, expressions, v, input)).collect();
            quote!(__wfc::Value::Array(::std::vec![#(#elements),*]))
        }
        Value::Object(o) => {
            let n = o.len();
            let inserts: Vec<TokenStream> = o
                .iter()
                .map(|(k, v)| {
                    let k = Literal::string(k);
                    let v = parameters(items, expressions, v, input);
                    quote!(object.insert(::std::borrow::ToOwned::to_owned(#k), #v);)
                })
                .collect();
            quote!({
                let mut object = __wfc::serde_json::Map::with_capacity(#n);
                #(#inserts)*
                __wfc::Value::Object(object)
            })
        }
        other => value_tokens(other),
    }
}

fn option_f64(v: Option<f64>) -> TokenStream {
    match v {
        Some(v) => {
            let v = Literal::f64_suffixed(v);
            quote!(::core::option::Option::Some(#v))
        }
        None => quote!(::core::option::Option::None),
    }
}

fn option_expr(items: &mut Items, expressions: &mut Vec<(String, Ident)>, e: Option<&Expr>) -> TokenStream {
    match e {
        Some(e) => {
            let e = expr(items, expressions, e);
            quote!(::core::option::Option::Some(#e))
        }
        None => quote!(::core::option::Option::None),
    }
}

/// One function action's call on the state data `data` (on the line of control `line`): its
/// input filter, its parameters, the handler method, giving the raw result.
fn call(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    methods: &dyn Fn(&str) -> Option<Ident>,
    action: &Action,
    key: &str,
    line: &TokenStream,
) -> Result<TokenStream, String> {
    let (function, template) = match &action.call {
        ActionCall::Function { function, parameters } => (function, parameters),
        ActionCall::Event { .. } => return event_call(items, expressions, action, key, line),
    };
    let method = methods(function).ok_or("wfc: internal error: an SW function without a handler method")?;
    let input = match &action.input_filter {
        Some(f) => {
            let f = expr(items, expressions, f);
            quote!(__wfc::abi::sw_filter(::core::option::Option::Some(#f), ::core::clone::Clone::clone(&data)))
        }
        None => quote!(::core::clone::Clone::clone(&data)),
    };
    let params = match template {
        Some(t) => {
            let built = parameters(items, expressions, t, &quote!(&input));
            if super::states::mentions(&built, "input") {
                quote!({
                    let input = #input;
                    #built
                })
            } else {
                built
            }
        }
        None => input,
    };
    let function = Literal::string(function);
    let key = Literal::string(key);
    let timeout = match action.timeout {
        Some(t) => {
            let t = Literal::f64_suffixed(t);
            quote!(::core::option::Option::Some(#t))
        }
        None => quote!(::core::option::Option::None),
    };
    Ok(quote! {
        __wfc::abi::sw_call(#line, name, #function, #params, #timeout, site, #key, |input, ctx| handler.#method(input, ctx)).await
    })
}

/// The handler's run of the subflow `workflow_id` (not compiled together) on `data`, on `exec`
/// (as the interpreter's `handler_subflow`: a call of the method named after the id, key `sub`).
fn handler_subflow(methods: &dyn Fn(&str) -> Option<Ident>, workflow_id: &str) -> Result<TokenStream, String> {
    let method = methods(workflow_id).ok_or("wfc: internal error: an SW subflow without a handler method")?;
    let id = Literal::string(workflow_id);
    Ok(quote! {
        __wfc::abi::sw_call(exec, name, #id, ::core::clone::Clone::clone(&data), ::core::option::Option::None, site, "sub", |input, ctx| handler.#method(input, ctx)).await
    })
}

/// A foreach iteration's body (`last`: its result is the last action's filtered result) or a
/// parallel branch's (its result is the data after its actions), on `data` and `exec`.
fn body(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    methods: &dyn Fn(&str) -> Option<Ident>,
    body: &Body,
    last: bool,
    module: Option<Ident>,
) -> Result<TokenStream, String> {
    match body {
        Body::Actions(actions) => {
            let mut steps = Vec::new();
            for (i, a) in actions.iter().enumerate() {
                let call = call(items, expressions, methods, a, &format!("a{i}"), &quote!(exec))?;
                let filter = option_expr(items, expressions, a.results_filter.as_ref());
                // Only the last action's result is the iteration's.
                let keep = (last && i + 1 == actions.len())
                    .then(|| quote!(let last = __wfc::abi::sw_action_result(#filter, &result);));
                steps.push(quote! {
                    let result = #call?;
                    #keep
                    __wfc::abi::sw_merge_filtered(&mut data, #filter, result);
                });
            }
            Ok(if actions.is_empty() {
                let out = if last { quote!(__wfc::Value::Null) } else { quote!(data) };
                quote!(Ok(#out))
            } else if last {
                quote! {
                    let mut data = data;
                    #(#steps)*
                    let _ = data;
                    Ok(last)
                }
            } else {
                quote! {
                    let mut data = data;
                    #(#steps)*
                    Ok(data)
                }
            })
        }
        Body::Handler(id) => handler_subflow(methods, id),
        // Its generated machine, on a line of control of its own.
        Body::Workflow(_) => {
            let module = module.ok_or("wfc: internal error: an SW subflow without its module")?;
            Ok(quote! {
                let line = exec.branch();
                #module::drive(handler, &line, data).await
            })
        }
    }
}

/// The code running `actions` in `mode` on the state data `data` (mutable), on `exec` at `site`:
/// each function action's call, its result merged through its `dataResultsPath`; in `parallel`
/// mode the calls run together, each on its own line of control, merged in definition order.
fn actions_code(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    methods: &dyn Fn(&str) -> Option<Ident>,
    mode: ActionMode,
    actions: &[Action],
) -> Result<TokenStream, String> {
    Ok(match mode {
        ActionMode::Sequential => {
            let mut steps = Vec::new();
            for (i, a) in actions.iter().enumerate() {
                let call = call(items, expressions, methods, a, &format!("a{i}"), &quote!(exec))?;
                let filter = option_expr(items, expressions, a.results_filter.as_ref());
                steps.push(quote! {
                    let result = #call?;
                    __wfc::abi::sw_merge_filtered(&mut data, #filter, result);
                });
            }
            quote!(#(#steps)*)
        }
        ActionMode::Parallel => {
            let lines: Vec<Ident> = (0..actions.len()).map(|i| quote::format_ident!("line_{}", i)).collect();
            let mut calls = Vec::new();
            let mut merges = Vec::new();
            for (i, (a, line)) in actions.iter().zip(&lines).enumerate() {
                let call = call(items, expressions, methods, a, &format!("a{i}"), &quote!(&#line))?;
                // Each call on its own copy of the data (when it reads it).
                let copy = super::states::mentions(&call, "data")
                    .then(|| quote!(let data = ::core::clone::Clone::clone(&data);));
                calls.push(quote!(__wfc::FutureExt::boxed({
                    #copy
                    async move { #call }
                })));
                let filter = option_expr(items, expressions, a.results_filter.as_ref());
                merges.push(quote! {
                    if let Some(result) = results.next() {
                        __wfc::abi::sw_merge_filtered(&mut data, #filter, result?);
                    }
                });
            }
            quote! {
                {
                    // Each action on its own line of control, made in definition order.
                    #(let #lines = exec.branch();)*
                    let mut results = ::core::iter::IntoIterator::into_iter(__wfc::abi::sw_join(::std::vec![#(#calls),*]).await);
                    #(#merges)*
                }
            }
        }
    })
}

/// An event action's run on the state data `data`: its input filter, its trigger's payload
/// (built here as a `produceEvent`'s), the trigger and result events as `static`s.
fn event_call(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    action: &Action,
    key: &str,
    line: &TokenStream,
) -> Result<TokenStream, String> {
    let ActionCall::Event { trigger, result, data, context_attributes: attributes } = &action.call else {
        return Err("wfc: internal error: a function action as an event action".to_owned());
    };
    let mut events = Vec::new();
    let input = match &action.input_filter {
        Some(f) => {
            let f = expr(items, expressions, f);
            quote!(&__wfc::abi::sw_filter(::core::option::Option::Some(#f), ::core::clone::Clone::clone(&data)))
        }
        None => quote!(&data),
    };
    let payload = payload_code(items, expressions, data.as_ref());
    let trigger = event_def(items, &mut events, trigger);
    let result = match result.as_ref() {
        Some(r) => {
            let r = event_def(items, &mut events, r);
            quote!(::core::option::Option::Some(&#r))
        }
        None => quote!(::core::option::Option::None),
    };
    let attributes = attributes.iter().map(|(k, v)| {
        let (k, v) = (Literal::string(k), Literal::string(v));
        quote!((::std::borrow::ToOwned::to_owned(#k), ::std::borrow::ToOwned::to_owned(#v)))
    });
    let timeout = option_f64(action.timeout);
    let key = Literal::string(key);
    let input = super::states::mentions(&payload, "input").then(|| quote!(let input = #input;));
    Ok(quote!({
        #input
        let payload = #payload;
        let action = __wfc::abi::SwEventAction {
            trigger: &#trigger,
            attributes: &[#(#attributes),*],
            result: #result,
            timeout: #timeout,
        };
        __wfc::abi::sw_event_action(#line, name, site, #key, action, payload).await
    }))
}

/// An event's payload from its `data` on `input` (a `&Value`): a whole-payload expression
/// selects like a filter, an object or string is a template, absent the value itself.
fn payload_code(items: &mut Items, expressions: &mut Vec<(String, Ident)>, data: Option<&Value>) -> TokenStream {
    match data {
        Some(Value::String(s)) => match template_expr(s) {
            Some(e) if e.as_path().is_some() => {
                let e = expr(items, expressions, &e);
                quote!(__wfc::abi::sw_filter(::core::option::Option::Some(#e), ::core::clone::Clone::clone(input)))
            }
            _ => parameters(items, expressions, &Value::String(s.clone()), &quote!(input)),
        },
        Some(t) => parameters(items, expressions, t, &quote!(input)),
        None => quote!(::core::clone::Clone::clone(input)),
    }
}

/// The `work` of an operation, switch, inject or delay state.
fn work(
    items: &mut Items,
    expressions: &mut Vec<(String, Ident)>,
    events: &mut Vec<(String, Ident)>,
    methods: &dyn Fn(&str) -> Option<Ident>,
    module: &dyn Fn(usize) -> Option<Ident>,
    spec: &SwState,
    root: &TokenStream,
) -> Result<TokenStream, String> {
    Ok(match &spec.kind {
        SwKind::Operation { mode, actions } => {
            if actions.is_empty() {
                quote!(Ok((data, __wfc::abi::SwExit::Next)))
            } else {
                let actions = actions_code(items, expressions, methods, *mode, actions)?;
                quote! {
                    let mut data = data;
                    #actions
                    Ok((data, __wfc::abi::SwExit::Next))
                }
            }
        }
        SwKind::Event { exclusive, on_events, timeout } => {
            let mut defs = Vec::new();
            let mut entries = Vec::new();
            for (j, on) in on_events.iter().enumerate() {
                let filter = option_expr(items, expressions, on.filter.as_ref());
                let mut merges = Vec::new();
                let mut keys = Vec::new();
                for e in &on.events {
                    let def = event_def(items, events, e);
                    let k = Literal::usize_unsuffixed(defs.len());
                    keys.push(k.clone());
                    merges.push(quote!(#k => __wfc::abi::sw_merge_event(&mut data, #filter, event, &#def),));
                    defs.push(def);
                }
                let actions = if on.actions.is_empty() {
                    quote!()
                } else {
                    let actions = actions_code(items, expressions, methods, on.mode, &on.actions)?;
                    let j = Literal::usize_unsuffixed(j);
                    quote! {
                        let site = &site.on_events(#j);
                        #actions
                    }
                };
                // Whether the event of flat index `k` is one of this entry's.
                let entry_has = if keys.is_empty() { quote!(false) } else { quote!(::core::matches!(*k, #(#keys)|*)) };
                // Exclusive: only the entry whose event came runs its actions.
                let run = if *exclusive { quote!(if !mine.is_empty()) } else { quote!() };
                entries.push(quote! {
                    {
                        let mine = ::core::iter::Iterator::filter(got.iter(), |(k, _)| #entry_has);
                        let mine: ::std::vec::Vec<&(usize, __wfc::Value)> = ::core::iter::Iterator::collect(mine);
                        #run {
                            for (k, event) in mine {
                                match k {
                                    #(#merges)*
                                    _ => return Err(__wfc::Failure::runtime("event out of range")),
                                }
                            }
                            #actions
                        }
                    }
                });
            }
            // An exclusive starting event state's events create the instance: its `timeout` is
            // ignored there (the start state of a top-level machine holds the workflow's settings).
            let timeout = if spec.workflow.is_some() && *exclusive { None } else { *timeout };
            let timeout = option_f64(timeout);
            let all = !*exclusive;
            quote! {
                let mut data = data;
                let ::core::option::Option::Some(got) = __wfc::abi::sw_wait_events(exec, name, site, &[#(&*#defs),*], #all, #timeout).await? else {
                    __wfc::abi::sw_timed_out(exec, name);
                    return Ok((data, __wfc::abi::SwExit::Next));
                };
                #(#entries)*
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Inject { data: add } => {
            let add = items.value(add);
            quote! {
                let mut data = data;
                __wfc::abi::sw_inject(&mut data, #add);
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Delay { seconds } => {
            let seconds = Literal::f64_suffixed(*seconds);
            quote! {
                __wfc::abi::sw_delay(exec, name, site, #seconds).await?;
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Switch { events: conditions, event_timeout, default, .. } if !conditions.is_empty() => {
            let defs: Vec<Ident> = conditions.iter().map(|c| event_def(items, events, &c.event)).collect();
            let timeout = option_f64(*event_timeout);
            let mut arms = Vec::new();
            for (i, (c, def)) in conditions.iter().zip(&defs).enumerate() {
                let filter = option_expr(items, expressions, c.filter.as_ref());
                let i = Literal::usize_unsuffixed(i);
                arms.push(quote! {
                    ::core::option::Option::Some((#i, event)) => {
                        __wfc::abi::sw_merge_event(&mut data, #filter, &event, &#def);
                        Ok((data, __wfc::abi::SwExit::Event(#i)))
                    }
                });
            }
            let fallback = match default {
                Some(_) => quote!(Ok((data, __wfc::abi::SwExit::Default))),
                None => quote!(Err(__wfc::abi::sw_event_timeout(name))),
            };
            quote! {
                let mut data = data;
                match __wfc::abi::sw_wait_first(exec, name, site, &[#(&*#defs),*], #timeout).await? {
                    #(#arms)*
                    ::core::option::Option::Some(_) => Err(__wfc::Failure::runtime("event condition out of range")),
                    ::core::option::Option::None => #fallback,
                }
            }
        }
        SwKind::Callback { action, event, event_filter, timeout } => {
            let call = call(items, expressions, methods, action, "a0", &quote!(exec))?;
            let results = option_expr(items, expressions, action.results_filter.as_ref());
            let def = event_def(items, events, event);
            let filter = option_expr(items, expressions, event_filter.as_ref());
            let timeout = option_f64(*timeout);
            quote! {
                let mut data = data;
                let result = #call?;
                __wfc::abi::sw_merge_filtered(&mut data, #results, result);
                let ::core::option::Option::Some((_, event)) = __wfc::abi::sw_wait_first(exec, name, site, &[&*#def], #timeout).await? else {
                    return Err(__wfc::abi::sw_callback_timeout(name));
                };
                __wfc::abi::sw_merge_event(&mut data, #filter, &event, &#def);
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Switch { data: conditions, default, .. } => {
            let mut tests = Vec::new();
            for (i, c) in conditions.iter().enumerate() {
                let e = expr(items, expressions, &c.condition);
                let i = Literal::usize_unsuffixed(i);
                tests.push(quote! {
                    if __wfc::abi::sw_holds(#e, &data) {
                        return Ok((data, __wfc::abi::SwExit::Condition(#i)));
                    }
                });
            }
            let fallback = match default {
                Some(_) => quote!(Ok((data, __wfc::abi::SwExit::Default))),
                None => quote!(Err(__wfc::abi::sw_no_condition(name))),
            };
            quote! {
                #(#tests)*
                #fallback
            }
        }
        SwKind::ForEach { input_collection, output_collection, iteration_param, max, body: b } => {
            let input_collection = expr(items, expressions, input_collection);
            let output_collection = option_expr(items, expressions, output_collection.as_ref());
            let iteration_param = Literal::string(iteration_param);
            let max = match max {
                Some(m) => {
                    let m = Literal::u64_suffixed(*m);
                    quote!(::core::option::Option::Some(#m))
                }
                None => quote!(::core::option::Option::None),
            };
            let b = body(items, expressions, methods, b, true, module(0))?;
            quote! {
                let each = __wfc::abi::SwForEach {
                    input_collection: #input_collection,
                    output_collection: #output_collection,
                    iteration_param: #iteration_param,
                    max: #max,
                };
                let data = __wfc::abi::sw_foreach(exec, name, data, each, move |_, line: __wfc::Execution, data: __wfc::Value| async move {
                    let exec = &line;
                    #b
                })
                .await?;
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Parallel { completion, branches } => {
            let completion = match completion {
                Completion::And => quote!(__wfc::abi::SwCompletion::And),
                Completion::Xor => quote!(__wfc::abi::SwCompletion::Xor),
                Completion::NOfM(n) => {
                    let n = Literal::u64_suffixed(*n);
                    quote!(__wfc::abi::SwCompletion::NOfM(#n))
                }
            };
            let names = branches.iter().map(|b| Literal::string(&b.name));
            let mut arms = Vec::new();
            for (i, branch) in branches.iter().enumerate() {
                let b = body(items, expressions, methods, &branch.body, false, module(i))?;
                let i = Literal::usize_unsuffixed(i);
                arms.push(quote!(#i => { #b }));
            }
            quote! {
                let data = __wfc::abi::sw_parallel(exec, name, data, #completion, &[#(#names),*], move |i, line: __wfc::Execution, data: __wfc::Value| async move {
                    let exec = &line;
                    match i {
                        #(#arms)*
                        _ => Err(__wfc::Failure::runtime("a parallel branch out of range")),
                    }
                })
                .await?;
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Subflow { wait: true, workflow: Some(workflow), workflow_id } => {
            let module = module(0).ok_or("wfc: internal error: an SW subflow without its module")?;
            let id = Literal::string(workflow_id);
            let version = match &workflow.version {
                Some(v) => {
                    let v = Literal::string(v);
                    quote!(::core::option::Option::Some(#v))
                }
                None => quote!(::core::option::Option::None),
            };
            quote! {
                let mut data = data;
                let input = ::core::clone::Clone::clone(&data);
                let child = move |line: __wfc::Execution, input: __wfc::Value| async move {
                    #module::drive(handler, &line, input).await
                };
                let out = __wfc::abi::sw_subflow(exec, name, site, #id, #version, input, child).await?;
                __wfc::abi::sw_inject(&mut data, out);
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Subflow { wait: false, workflow: Some(workflow), workflow_id } => {
            let module = module(0).ok_or("wfc: internal error: an SW subflow without its module")?;
            let id = Literal::string(workflow_id);
            let version = match &workflow.version {
                Some(v) => {
                    let v = Literal::string(v);
                    quote!(::core::option::Option::Some(#v))
                }
                None => quote!(::core::option::Option::None),
            };
            // The child is queued in the execution until the top-level run picks it up, so it
            // cannot borrow `handler`: its machine runs on the top-level run's function table
            // (`functions`), seen as a `Handler` by `ByName`.
            quote! {
                fn detached<'a>(
                    line: &'a __wfc::Execution,
                    functions: &'a dyn __wfc::DynHandler,
                    input: __wfc::Value,
                ) -> __wfc::BoxFuture<'a, Result<__wfc::Value, __wfc::Failure>> {
                    __wfc::FutureExt::boxed(async move {
                        let handler = #root ByName(functions);
                        #module::drive(&handler, line, input).await
                    })
                }
                let run: __wfc::abi::SwDetachedRun = ::std::boxed::Box::new(detached);
                __wfc::abi::sw_detached_subflow(exec, name, site, #id, #version, &data, &#root Dispatch(handler), run).await?;
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Subflow { wait: false, workflow: None, workflow_id } => {
            let method = methods(workflow_id).ok_or("wfc: internal error: an SW subflow without a handler method")?;
            let id = Literal::string(workflow_id);
            quote! {
                __wfc::abi::sw_unawaited_subflow(exec, name, site, #id, &data, |input, ctx| handler.#method(input, ctx)).await;
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
        SwKind::Subflow { wait: true, workflow: None, workflow_id } => {
            let call = handler_subflow(methods, workflow_id)?;
            quote! {
                let mut data = data;
                let out = #call?;
                __wfc::abi::sw_inject(&mut data, out);
                Ok((data, __wfc::abi::SwExit::Next))
            }
        }
    })
}

/// The arm of an SW state: its items, its `Code` type, the visit
/// (`abi::sw_step`), and each way out mapped to a `State` variant (`target(id)`) or the end.
#[allow(clippy::too_many_arguments)]
pub(super) fn state(
    name: &Literal,
    spec: &SwState,
    methods: &dyn Fn(&str) -> Option<Ident>,
    target: &dyn Fn(usize) -> Result<Ident, String>,
    module: &dyn Fn(usize) -> Option<Ident>,
    handler_path: &TokenStream,
    root: &TokenStream,
    nested: bool,
) -> Result<TokenStream, String> {
    let mut items = Items::default();
    let mut expressions = Vec::new();
    let type_name = Literal::string(spec.type_name());
    let mut methods_code = Vec::new();
    methods_code.push(quote! {
        fn type_name(&self) -> &'static str {
            #type_name
        }
    });
    for (method, schema) in [("input_schema", &spec.input_schema), ("output_schema", &spec.output_schema)] {
        if let Some(schema) = schema {
            let build = value_tokens(schema);
            let schema =
                items.push("SCHEMA", |n| quote!(static #n: __wfc::abi::StaticValue = __wfc::LazyLock::new(|| #build);));
            let method = quote::format_ident!("{}", method);
            methods_code.push(quote! {
                fn #method(&self) -> ::core::option::Option<&__wfc::Value> {
                    ::core::option::Option::Some(&#schema)
                }
            });
        }
    }
    for (method, filter) in [("input_filter", &spec.input_filter), ("output_filter", &spec.output_filter)] {
        if let Some(f) = filter {
            let f = expr(&mut items, &mut expressions, f);
            let method = quote::format_ident!("{}", method);
            methods_code.push(quote! {
                fn #method(&self, data: __wfc::Value) -> Result<__wfc::Value, __wfc::Failure> {
                    Ok(__wfc::abi::sw_filter(::core::option::Option::Some(#f), data))
                }
            });
        }
    }
    if !spec.retry.is_empty() {
        let n = spec.retry.len();
        let rules = spec.retry.iter().enumerate().map(|(i, r)| {
            let e = expr(&mut items, &mut expressions, &r.expression);
            let interval = Literal::f64_suffixed(r.interval_seconds);
            let increment = Literal::f64_suffixed(r.increment_seconds);
            let max = Literal::u32_suffixed(r.max_attempts);
            quote! {
                if __wfc::abi::sw_holds(#e, error_data) {
                    return Ok(::core::option::Option::Some(__wfc::abi::SwRetrier {
                        index: #i,
                        interval_seconds: #interval,
                        increment_seconds: #increment,
                        max_attempts: #max,
                    }));
                }
            }
        });
        let rules: Vec<TokenStream> = rules.collect();
        methods_code.push(quote! {
            fn retries(&self) -> usize {
                #n
            }

            fn retry(&self, error_data: &__wfc::Value) -> Result<::core::option::Option<__wfc::abi::SwRetrier>, __wfc::Failure> {
                #(#rules)*
                Ok(::core::option::Option::None)
            }
        });
    }
    if !spec.on_error.is_empty() {
        let mut tests = Vec::new();
        let mut filters = Vec::new();
        for (i, e) in spec.on_error.iter().enumerate() {
            let test = match &e.matcher {
                ErrorMatch::Expression(x) => {
                    let x = expr(&mut items, &mut expressions, x);
                    quote!(__wfc::abi::sw_holds(#x, error_data))
                }
                ErrorMatch::Name(n) if n == "*" => quote!(true),
                ErrorMatch::Name(n) => {
                    let n = Literal::string(n);
                    quote!(failure.error == #n)
                }
            };
            let index = Literal::usize_unsuffixed(i);
            tests.push(quote! {
                if #test {
                    return Ok(::core::option::Option::Some(#index));
                }
            });
            if let Some(f) = &e.error_filter {
                let f = expr(&mut items, &mut expressions, f);
                filters.push(quote!(#index => __wfc::abi::sw_merge_filtered(data, ::core::option::Option::Some(#f), error_data),));
            }
        }
        let failure =
            if tests.iter().any(|t| super::states::mentions(t, "failure")) { quote!(failure) } else { quote!(_) };
        let error_data =
            if tests.iter().any(|t| super::states::mentions(t, "error_data")) { quote!(error_data) } else { quote!(_) };
        methods_code.push(quote! {
            fn on_error(&self, #failure: &__wfc::Failure, #error_data: &__wfc::Value) -> Result<::core::option::Option<usize>, __wfc::Failure> {
                #(#tests)*
                Ok(::core::option::Option::None)
            }
        });
        if !filters.is_empty() {
            methods_code.push(quote! {
                fn error_filter(&self, handler: usize, data: &mut __wfc::Value, error_data: __wfc::Value) -> Result<(), __wfc::Failure> {
                    match handler {
                        #(#filters)*
                        _ => __wfc::abi::sw_inject(data, error_data),
                    }
                    Ok(())
                }
            });
        }
    }
    let mut events = Vec::new();
    let body = work(&mut items, &mut expressions, &mut events, methods, module, spec, root)?;
    let uses_handler = super::states::mentions(&body, "handler");
    let exec = if super::states::mentions(&body, "exec") { quote!(exec) } else { quote!(_) };
    let name_param = if super::states::mentions(&body, "name") { quote!(name) } else { quote!(_) };
    let site = if super::states::mentions(&body, "site") { quote!(site) } else { quote!(_) };
    let (code_type, code_impl, code_value, handler_binding) = if uses_handler {
        (
            quote!(
                struct Code<'h, H>(&'h H);
            ),
            quote!(impl<H: #handler_path> __wfc::abi::SwCode for Code<'_, H>),
            quote!(Code(handler)),
            quote!(let handler = self.0;),
        )
    } else {
        (
            quote!(
                struct Code;
            ),
            quote!(impl __wfc::abi::SwCode for Code),
            quote!(Code),
            quote!(),
        )
    };
    methods_code.push(quote! {
        fn work<'a>(
            &'a self,
            #exec: &'a __wfc::Execution,
            #name_param: &'a str,
            data: __wfc::Value,
            #site: &'a __wfc::abi::SwSite,
        ) -> __wfc::BoxFuture<'a, Result<(__wfc::Value, __wfc::abi::SwExit), __wfc::Failure>> {
            #handler_binding
            __wfc::FutureExt::boxed(async move {
                #body
            })
        }
    });

    let mut arms = Vec::new();
    for (pattern, next) in exits(spec) {
        let take = match next {
            SwNext::Transition { target: id, guard, produce } => {
                let v = target(*id)?;
                let guard = guard.as_ref().map(|g| {
                    let g = expr(&mut items, &mut expressions, g);
                    quote!(__wfc::abi::sw_guard(#name, #g, &visited.output)?;)
                });
                let produce = (!produce.is_empty())
                    .then(|| produce_code(&mut items, &mut expressions, &mut events, name, produce));
                quote!({
                    #guard
                    #produce
                    State::#v(visited.output)
                })
            }
            SwNext::End { produce, terminate } => {
                let produce = (!produce.is_empty())
                    .then(|| produce_code(&mut items, &mut expressions, &mut events, name, produce));
                // `terminate` ends the whole instance: at the top level, the machine's end; out of
                // a nested machine (a subflow), the `Wfc.Terminate` failure, as the interpreter's.
                let end = if *terminate && nested {
                    quote!(return Err(__wfc::abi::sw_terminate(visited.output)))
                } else {
                    quote!(return Ok(__wfc::abi::Flow::End(visited.output)))
                };
                quote!({
                    #produce
                    #end
                })
            }
            SwNext::None => quote! {
                return Err(__wfc::Failure::runtime(::std::format!("state {:?} has no transition (a corrupted definition)", #name)))
            },
        };
        arms.push(quote!(#pattern => #take,));
    }
    let items = items.tokens();
    Ok(quote! {
        #items
        #code_type
        #code_impl {
            #(#methods_code)*
        }
        let visited = __wfc::abi::sw_step(exec, #name, &#code_value, input).await?;
        match visited.exit {
            #(#arms)*
            other => return Err(__wfc::abi::unexpected(#name, &::std::format!("has no way out {:?}", other))),
        }
    })
}
