//! `wfc compile` and `wfc graph`: print what the compiler makes of a definition.

use std::io::Write;
use std::path::Path;

use crate::check::{DefinitionText, definition_error, print_human};
use crate::{ColorChoice, CompileArgs, Exit, GraphArgs, GraphFormat, fatal};

/// Writes `text` to `path`, or to stdout when `path` is `None`.
fn write_out(path: Option<&Path>, text: &str) -> Exit {
    let result = match path {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write to stdout: {e}"))
        }
    };
    match result {
        Ok(()) => Exit::Success,
        Err(e) => fatal(e),
    }
}

/// `wfc compile FILE [-o OUT.rs] [--module-name NAME] [--runtime-path PATH]`.
pub(crate) fn compile(args: &CompileArgs) -> Exit {
    let color = ColorChoice::Auto.enabled();
    let def = match DefinitionText::read(&args.file) {
        Ok(d) => d,
        Err(e) => return fatal(e),
    };
    let mut settings = def.settings();
    if let Some(name) = &args.module_name {
        settings.module_name(name.clone());
    }
    if let Some(path) = &args.runtime_path {
        settings.runtime_path(path.clone());
    }
    settings.passes(args.opt.passes());
    match wfc_core::compile(def.source(), &settings) {
        Ok(compiled) => {
            print_human(&def.path, &compiled.warnings, color);
            let code = wfc_core::codegen::format(compiled.tokens);
            write_out(args.output.as_deref(), &code)
        }
        Err(diags) => definition_error(&def.path, &diags, color),
    }
}

/// `wfc graph FILE [--format mermaid|dot|svg]`.
pub(crate) fn graph(args: &GraphArgs) -> Exit {
    let color = ColorChoice::Auto.enabled();
    let def = match DefinitionText::read(&args.file) {
        Ok(d) => d,
        Err(e) => return fatal(e),
    };
    match def.load() {
        Ok(loaded) => {
            print_human(&def.path, &loaded.warnings, color);
            let mut text = match args.format {
                GraphFormat::Mermaid => wfc_core::render::mermaid(&loaded.workflow),
                GraphFormat::Dot => wfc_core::render::dot(&loaded.workflow),
                GraphFormat::Svg => wfc_core::render::svg(&loaded.workflow),
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            write_out(None, &text)
        }
        Err(diags) => definition_error(&def.path, &diags, color),
    }
}
