//! `include_workflow!`: compiles a workflow definition file into a Rust module at build time.
//!
//! A thin shim over `wfc-core`: it parses its arguments, reads the file (the only I/O), and hands
//! the text to [`wfc_core::compile`]. Use it through `wfc_runtime::include_workflow!`, which
//! generated code expects (its paths start at `::wfc_runtime` unless `crate = …` says otherwise).
//!
//! ```ignore
//! wfc_runtime::include_workflow!("workflows/order.asl.json");
//! wfc_runtime::include_workflow!(path = "workflows/order.asl.json", name = "order", crate = ::my_runtime);
//! wfc_runtime::include_workflow!(path = "workflows/order.asl.json", no_opt = ["direct-paths"]);
//! wfc_runtime::include_workflow!(path = "workflows/order.asl.json", no_opt = ["all"], opt = ["fold-pass"]);
//! wfc_runtime::include_workflow!(
//!     path = "workflows/order.asl.json",
//!     types = {
//!         "arn:aws:lambda:us-east-1:123456789012:function:CheckStock": StockQuery -> StockReply,
//!         "arn:aws:lambda:us-east-1:123456789012:function:TakePayment": Payment -> _,
//!     },
//! );
//! ```
//!
//! `types` makes a Task resource's `Handler` method take and return Rust types instead of JSON:
//! `"<Resource as in the definition>": Input -> Result`, `_` for a side that stays
//! `serde_json::Value`. The types are resolved where the macro is called (write them as you would
//! there), the input must implement `serde::de::DeserializeOwned` and the result
//! `serde::Serialize`; a value that does not convert fails the Task with `Wfc.TypeMismatch`,
//! naming the resource and the field. A resource that names no Task of the definition is an error
//! at its literal, with a did-you-mean.
//!
//! `no_opt` and `opt` choose the optimizer passes as `wfc compile --no-opt/--opt` do: start from
//! the defaults (none if `no_opt` names `all`), turn on every `opt` pass, then turn off every
//! other `no_opt` pass. An unknown pass name is an error at its literal.
//!
//! Paths are relative to the including crate's `CARGO_MANIFEST_DIR`; absolute paths are
//! rejected so a build does not depend on where the checkout lives. Errors in the definition are
//! reported at the path literal, one rustc error per problem, with `file:line:col` and an
//! excerpt in the message. Its warnings (and notes) reach rustc as deprecation warnings (stable
//! Rust has no proc-macro warnings; see `as_warnings`); `#[allow(deprecated)]` silences them.

use std::path::{Component, Path, PathBuf};

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};
use wfc_core::{Diagnostics, Severity};

/// Compiles a workflow definition into a module. See the crate docs for the accepted forms.
#[proc_macro]
pub fn include_workflow(input: TokenStream) -> TokenStream {
    match syn::parse::<Args>(input).and_then(|args| expand(&args)) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// The macro's arguments: a bare path literal, or `key = value` pairs.
struct Args {
    path: LitStr,
    name: Option<(String, Span)>,
    runtime: Option<syn::Path>,
    /// `no_opt = [...]`: passes to turn off (`"all"` for every pass).
    no_opt: Option<Vec<LitStr>>,
    /// `opt = [...]`: passes to turn on (`"all"` for every pass).
    opt: Option<Vec<LitStr>>,
    /// `types = { "resource": Input -> Result, ... }`: typed handler methods (`None`: `_`, JSON).
    types: Option<Vec<TypedResource>>,
}

/// One `"resource": Input -> Result` entry of `types`.
struct TypedResource {
    resource: LitStr,
    input: Option<syn::Type>,
    result: Option<syn::Type>,
}

/// `{ "resource": Input -> Result, ... }`.
fn parse_types(input: ParseStream<'_>) -> syn::Result<Vec<TypedResource>> {
    let content;
    syn::braced!(content in input);
    let entries = content.parse_terminated(
        |i: ParseStream<'_>| {
            let resource: LitStr = i.parse()?;
            i.parse::<Token![:]>()?;
            // `_` keeps that side JSON.
            let side = |i: ParseStream<'_>| -> syn::Result<Option<syn::Type>> {
                Ok(match i.parse::<syn::Type>()? {
                    syn::Type::Infer(_) => None,
                    ty => Some(ty),
                })
            };
            let input = side(i)?;
            i.parse::<Token![->]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected `->`: each entry is `\"<Resource>\": Input -> Result` (`_` for JSON)",
                )
            })?;
            let result = side(i)?;
            Ok(TypedResource { resource, input, result })
        },
        Token![,],
    )?;
    Ok(entries.into_iter().collect())
}

/// `["name", ...]`: a bracketed, comma-separated list of string literals.
fn parse_names(input: ParseStream<'_>) -> syn::Result<Vec<LitStr>> {
    let content;
    syn::bracketed!(content in input);
    let names = content.parse_terminated(|i: ParseStream<'_>| i.parse::<LitStr>(), Token![,])?;
    Ok(names.into_iter().collect())
}

impl Args {
    /// The optimizer passes the arguments select (the defaults when neither key is given).
    fn passes(&self) -> syn::Result<wfc_core::optimize::Passes> {
        use wfc_core::optimize::Passes;
        let no_opt = self.no_opt.as_deref().unwrap_or_default();
        let opt = self.opt.as_deref().unwrap_or_default();
        let mut passes = if no_opt.iter().any(|n| n.value() == "all") { Passes::none() } else { Passes::default() };
        let unknown = |lit: &LitStr, e: wfc_core::optimize::UnknownPass| syn::Error::new(lit.span(), e.to_string());
        for lit in opt {
            passes.enable_named(&lit.value()).map_err(|e| unknown(lit, e))?;
        }
        for lit in no_opt.iter().filter(|n| n.value() != "all") {
            passes.disable_named(&lit.value()).map_err(|e| unknown(lit, e))?;
        }
        Ok(passes)
    }
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Args> {
        if input.peek(LitStr) {
            let path: LitStr = input.parse()?;
            if !input.is_empty() {
                return Err(input.error("expected only the path, or `key = value` pairs: `path = \"…\", name = \"…\", crate = ::wfc_runtime`"));
            }
            return Ok(Args { path, name: None, runtime: None, no_opt: None, opt: None, types: None });
        }
        let (mut path, mut name, mut runtime) = (None, None, None);
        let (mut no_opt, mut opt, mut types) = (None, None, None);
        while !input.is_empty() {
            let key: Ident = if input.peek(Token![crate]) {
                let token: Token![crate] = input.parse()?;
                Ident::new("crate", token.span)
            } else {
                input.parse()?
            };
            input.parse::<Token![=]>()?;
            let duplicate = || syn::Error::new(key.span(), format!("`{key}` is given twice"));
            match key.to_string().as_str() {
                "path" if path.is_some() => return Err(duplicate()),
                "path" => path = Some(input.parse::<LitStr>()?),
                "name" if name.is_some() => return Err(duplicate()),
                "name" => {
                    name = Some(if input.peek(LitStr) {
                        let lit: LitStr = input.parse()?;
                        (lit.value(), lit.span())
                    } else {
                        let ident: Ident = input.parse()?;
                        (ident.to_string(), ident.span())
                    })
                }
                "crate" if runtime.is_some() => return Err(duplicate()),
                "crate" => runtime = Some(input.parse::<syn::Path>()?),
                "no_opt" if no_opt.is_some() => return Err(duplicate()),
                "no_opt" => no_opt = Some(parse_names(input)?),
                "opt" if opt.is_some() => return Err(duplicate()),
                "opt" => opt = Some(parse_names(input)?),
                "types" if types.is_some() => return Err(duplicate()),
                "types" => types = Some(parse_types(input)?),
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("unknown key `{other}`; expected `path`, `name`, `crate`, `no_opt`, `opt` or `types`"),
                    ));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let path =
            path.ok_or_else(|| syn::Error::new(Span::call_site(), "missing `path = \"…\"` (the definition file)"))?;
        Ok(Args { path, name, runtime, no_opt, opt, types })
    }
}

/// The other `*.sw.json`/`*.sw.yaml`/`*.sw.yml` files of `dir`, sorted by name.
fn sw_siblings(dir: &Path, except: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p != except)
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            [".sw.json", ".sw.yaml", ".sw.yml"].iter().any(|ext| name.ends_with(ext))
        })
        .collect();
    paths.sort();
    paths.into_iter().filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p.display().to_string(), t))).collect()
}

fn expand(args: &Args) -> syn::Result<TokenStream2> {
    let relative = args.path.value();
    let span = args.path.span();
    let mut settings = wfc_core::Settings::new();
    settings.passes(args.passes()?);
    if let Some(runtime) = &args.runtime {
        settings.runtime_path(quote!(#runtime).to_string().replace(' ', ""));
    }
    let module = match &args.name {
        Some((name, _)) => name.clone(),
        // `order.asl.json` → `order`: the stem before the first dot.
        None => {
            let file = Path::new(&relative).file_name().and_then(|f| f.to_str()).unwrap_or_default();
            file.split('.').next().unwrap_or_default().to_owned()
        }
    };
    settings.module_name(module);
    let typed = args.types.as_deref().unwrap_or_default();
    // The aliases are emitted below from the user's tokens, so their spans survive.
    settings.emit_task_type_aliases = false;
    for entry in typed {
        let text = |ty: &Option<syn::Type>| ty.as_ref().map(|ty| quote!(#ty).to_string());
        settings.task_types(wfc_core::TaskTypes {
            resource: entry.resource.value(),
            input: text(&entry.input),
            result: text(&entry.result),
        });
    }
    let resolved = resolve(&relative, span)?;
    let text = std::fs::read_to_string(&resolved).map_err(|e| {
        let error = syn::Error::new(
            span,
            format!("could not read `{relative}` (paths are relative to CARGO_MANIFEST_DIR, the crate root): {e}"),
        );
        with_skeleton(error, &settings)
    });
    let text = match text {
        Ok(text) => text,
        Err(tokens) => return Ok(tokens),
    };
    let source = wfc_core::Source { path: &relative, text: &text };
    // A Serverless Workflow's subflows resolve among the SW definitions next to it.
    if wfc_core::Dialect::detect(source) == wfc_core::Dialect::Sw
        && let Some(dir) = resolved.parent()
    {
        for (path, text) in sw_siblings(dir, &resolved) {
            settings.sw_workflow(path, text);
        }
    }
    // Files the definition names (an SW schema URI) are read relative to it, under the crate
    // root, and tracked like the definition so editing them rebuilds.
    let read: std::sync::Arc<std::sync::Mutex<Vec<PathBuf>>> = Default::default();
    if let Ok(manifest) = std::env::var("CARGO_MANIFEST_DIR") {
        let read = read.clone();
        settings.file_reader(wfc_core::FileReader::new(move |p| {
            let full = Path::new(&manifest).join(p);
            let text = std::fs::read_to_string(&full).map_err(|e| e.to_string())?;
            read.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(full);
            Ok(text)
        }));
    }
    let absolute = proc_macro2::Literal::string(&resolved.to_string_lossy());
    let compiled = wfc_core::compile(source, &settings);
    let tracked: Vec<proc_macro2::Literal> = read
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .map(|p| proc_macro2::Literal::string(&p.to_string_lossy()))
        .collect();
    match compiled {
        Ok(compiled) => {
            // A declared type for no Task of the definition: an error at its resource literal,
            // instead of the generated module (whose untyped method would add a second error).
            let problems = wfc_core::codegen::check_task_types(&compiled.workflow, &settings);
            let errors = problems
                .iter()
                .filter_map(|p| typed.get(p.index).map(|entry| syn::Error::new(entry.resource.span(), &p.message)));
            if let Some(error) = errors.reduce(|mut all, next| {
                all.combine(next);
                all
            }) {
                let mut tokens = with_skeleton(error, &settings);
                tokens.extend(quote_spanned! {span=> const _: &[u8] = ::core::include_bytes!(#absolute); });
                return Ok(tokens);
            }
            let aliases = task_type_aliases(&compiled.workflow, &settings, typed)?;
            let module = compiled.tokens;
            let warnings = as_warnings(&compiled.warnings, span);
            Ok(quote_spanned! {span=>
                #aliases
                #module
                #warnings
                const _: &[u8] = ::core::include_bytes!(#absolute);
                #(const _: &[u8] = ::core::include_bytes!(#tracked);)*
            })
        }
        Err(diagnostics) => {
            // One rustc error per problem, each with its own excerpt (not nested in the first).
            let errors = each_rendered(&diagnostics, |s| s == Severity::Error)
                .into_iter()
                .map(|message| syn::Error::new(span, without_severity(message.trim_end())))
                .reduce(|mut all, next| {
                    all.combine(next);
                    all
                });
            let error = errors
                .unwrap_or_else(|| syn::Error::new(span, format!("`{relative}` is not a valid workflow definition")));
            let mut tokens = with_skeleton(error, &settings);
            tokens.extend(as_warnings(&diagnostics, span));
            // Track the file even when it is invalid, so fixing it triggers a rebuild.
            tokens.extend(quote_spanned! {span=> const _: &[u8] = ::core::include_bytes!(#absolute); });
            Ok(tokens)
        }
    }
}

/// The type aliases of the typed handler methods (see `wfc_core::codegen::task_type_alias`),
/// made of the user's own type tokens: rustc reports a type that does not resolve, or a bound it
/// does not meet, at the type as written in the macro call. Called after `check_task_types`
/// passed, so every entry names a Task resource once.
fn task_type_aliases(
    workflow: &wfc_core::ir::Workflow,
    settings: &wfc_core::Settings,
    typed: &[TypedResource],
) -> syn::Result<TokenStream2> {
    let module = wfc_core::codegen::module_name(workflow, settings);
    let methods = wfc_core::codegen::handler_methods(workflow);
    let mut aliases = TokenStream2::new();
    for entry in typed {
        let resource = entry.resource.value();
        let Some((_, method, _)) = methods.iter().find(|(r, _, _)| *r == resource) else { continue };
        for (side, ty) in [("input", &entry.input), ("result", &entry.result)] {
            if let Some(ty) = ty {
                let name = wfc_core::codegen::task_type_alias(&module, method, side);
                let alias = syn::parse_str::<Ident>(&name).map_err(|e| syn::Error::new(entry.resource.span(), e))?;
                aliases.extend(wfc_core::codegen::task_type_alias_item(&alias, quote!(#ty)));
            }
        }
    }
    Ok(aliases)
}

/// Each diagnostic whose severity `keep` selects, rendered on its own (rustc-style, with its
/// excerpt), in source order.
fn each_rendered(diagnostics: &Diagnostics, keep: impl Fn(Severity) -> bool) -> Vec<String> {
    diagnostics
        .items
        .iter()
        .filter(|d| keep(d.severity))
        .map(|d| Diagnostics::new(diagnostics.path.clone(), diagnostics.text.clone(), vec![d.clone()]).render(false))
        .collect()
}

/// The definition's warnings and notes as rustc warnings. Stable Rust gives proc macros no
/// warnings of their own, so each is the note of a `#[deprecated]` constant the expansion uses
/// (the known workaround): rustc prints `warning: use of deprecated constant
/// `_::workflow_definition_warning`: <the rendered diagnostic>`. `#[allow(deprecated)]` on the
/// macro call silences them; `wfc check` and `wfc-build` show them too.
fn as_warnings(diagnostics: &Diagnostics, span: Span) -> TokenStream2 {
    let notes: Vec<String> =
        each_rendered(diagnostics, |s| s != Severity::Error).iter().map(|m| m.trim_end().to_owned()).collect();
    quote_spanned! {span=>
        #(
            const _: () = {
                #[deprecated(note = #notes)]
                #[allow(non_upper_case_globals)]
                const workflow_definition_warning: () = ();
                workflow_definition_warning
            };
        )*
    }
}

/// rustc prints `error: ` before the message, so the rendered `error[WFC0301]: …` of the first
/// diagnostic becomes `[WFC0301] …` rather than `error: error[WFC0301]: …`.
fn without_severity(rendered: &str) -> String {
    match rendered.strip_prefix("error[").and_then(|rest| rest.split_once("]: ")) {
        Some((code, rest)) => format!("[{code}] {rest}"),
        None => rendered.to_owned(),
    }
}

/// `relative` joined to `CARGO_MANIFEST_DIR` (the one environment read this macro does).
fn resolve(relative: &str, span: Span) -> syn::Result<PathBuf> {
    let path = Path::new(relative);
    if path.is_absolute() || path.has_root() || matches!(path.components().next(), Some(Component::Prefix(_))) {
        return Err(syn::Error::new(
            span,
            "the path must be relative to the crate root (CARGO_MANIFEST_DIR), not absolute",
        ));
    }
    if relative.is_empty() {
        return Err(syn::Error::new(
            span,
            "the path is empty; give the definition file, e.g. \"workflows/order.asl.json\"",
        ));
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| {
        syn::Error::new(span, "CARGO_MANIFEST_DIR is not set; include_workflow! must be built by Cargo")
    })?;
    Ok(Path::new(&manifest).join(path))
}

/// The error plus an empty module of the expected name, so `use`s of the module do not add
/// "unresolved module" errors to the real one.
fn with_skeleton(error: syn::Error, settings: &wfc_core::Settings) -> TokenStream2 {
    let error = error.to_compile_error();
    let Some(name) = settings.module_name.as_deref() else { return error };
    let Ok(module) = syn::parse_str::<Ident>(&wfc_core::codegen::sanitize_module_name(name)) else { return error };
    quote! {
        #error
        /// Not generated: the workflow definition has errors.
        pub mod #module {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> syn::Result<Args> {
        syn::parse_str::<Args>(text)
    }

    #[test]
    fn types_entries_parse_with_underscore_for_json() {
        let args =
            parse(r#"path = "w.asl.json", types = { "arn:a:function:A": Vec<Line> -> crate::Out, "B": _ -> String, }"#)
                .unwrap_or_else(|e| panic!("{e}"));
        let types = args.types.expect("types");
        let shown: Vec<(String, Option<String>, Option<String>)> = types
            .iter()
            .map(|t| {
                let text = |ty: &Option<syn::Type>| ty.as_ref().map(|ty| quote!(#ty).to_string().replace(' ', ""));
                (t.resource.value(), text(&t.input), text(&t.result))
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("arn:a:function:A".to_owned(), Some("Vec<Line>".to_owned()), Some("crate::Out".to_owned())),
                ("B".to_owned(), None, Some("String".to_owned())),
            ]
        );
    }

    #[test]
    fn malformed_types_are_errors_with_what_was_expected() {
        let error = |text: &str| parse(text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error(r#"path = "w.json", types = { "A": u8 }"#).contains("expected `->`"));
        assert!(error(r#"path = "w.json", types = { A: u8 -> u8 }"#).contains("expected string literal"));
        assert!(error(r#"path = "w.json", types = {}, types = {}"#).contains("`types` is given twice"));
    }
}
