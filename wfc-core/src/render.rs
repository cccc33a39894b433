//! Mermaid, Graphviz and SVG renderings of the state graph (`wfc graph`, and the diagram in
//! generated module docs). The SVG is laid out here ([`svg`]); the other two are text for tools
//! that lay out themselves.
//!
//! Node ids are generated (`s0`, `s3_b1_s0`), never taken from state names, so a name cannot break
//! the syntax; names appear only in labels, escaped for each format. Parallel branches are nested
//! composite states (Mermaid, separated by `--`) or clusters (Graphviz).

use std::fmt::Write as _;

pub mod report;
pub mod svg;

pub use svg::{Annotations, svg, svg_annotated};

use wfc_ir::{Condition, Operand, StateKind, StateMachine, Transition, Workflow};

/// A Mermaid `stateDiagram-v2` of the workflow.
pub fn mermaid(workflow: &Workflow) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    mermaid_machine(&workflow.machine, "", 1, &mut out);
    out
}

/// A Graphviz `digraph` of the workflow.
pub fn dot(workflow: &Workflow) -> String {
    let mut out = String::from("digraph workflow {\n");
    out.push_str("    node [shape=box, style=rounded];\n");
    out.push_str(&format!("    label=\"{}\";\n    labelloc=t;\n", dot_escape(&workflow.name)));
    dot_machine(&workflow.machine, "", 1, &mut out);
    out.push_str("}\n");
    out
}

fn id(prefix: &str, index: usize) -> String {
    format!("{prefix}s{index}")
}

/// Where a state's normal and error edges go, with labels.
fn edges(kind: &StateKind) -> Vec<(Option<usize>, String)> {
    let next = |t: &Transition| match t {
        Transition::Next(n) => Some(*n),
        Transition::End => None,
    };
    let catches = |catchers: &[wfc_ir::Catcher]| {
        catchers.iter().map(|c| (Some(c.next), format!("catch {}", c.error_equals.join(", ")))).collect::<Vec<_>>()
    };
    match kind {
        StateKind::Pass(p) => vec![(next(&p.transition), String::new())],
        StateKind::Wait(w) => vec![(next(&w.transition), String::new())],
        StateKind::Task(t) => {
            let mut v = vec![(next(&t.transition), String::new())];
            v.extend(catches(&t.catch));
            v
        }
        StateKind::Parallel(p) => {
            let mut v = vec![(next(&p.transition), String::new())];
            v.extend(catches(&p.catch));
            v
        }
        StateKind::Map(m) => {
            let mut v = vec![(next(&m.transition), String::new())];
            v.extend(catches(&m.catch));
            v
        }
        StateKind::Choice(c) => {
            let mut v: Vec<_> = c.choices.iter().map(|b| (Some(b.next), condition(&b.condition))).collect();
            if let Some(d) = c.default {
                v.push((Some(d), "Default".to_owned()));
            }
            v
        }
        StateKind::Succeed(_) => vec![(None, String::new())],
        StateKind::Fail(f) => vec![(None, format!("fail {}", f.error.as_deref().unwrap_or("")).trim_end().to_owned())],
        StateKind::Sw(s) => s.edges(),
    }
}

/// A short, human-readable rendering of a Choice rule (`$.amount NumericGreaterThan 100`).
fn condition(c: &Condition) -> String {
    match c {
        Condition::And(cs) => format!("({})", cs.iter().map(condition).collect::<Vec<_>>().join(" and ")),
        Condition::Or(cs) => format!("({})", cs.iter().map(condition).collect::<Vec<_>>().join(" or ")),
        Condition::Not(c) => format!("not {}", condition(c)),
        Condition::Compare(cmp) => {
            let operand = match &cmp.operand {
                Operand::Literal(v) => v.to_string(),
                Operand::Native(n) => n.literal().to_string(),
                Operand::Path(p) => p.as_str().to_owned(),
            };
            format!("{} {} {}", cmp.variable.as_str(), cmp.operator.name(), operand)
        }
        Condition::Jsonata(e) => format!("{{% {} %}}", e.as_str().trim()),
    }
}

fn mermaid_machine(machine: &StateMachine, prefix: &str, depth: usize, out: &mut String) {
    let indent = "    ".repeat(depth);
    for (i, state) in machine.states.iter().enumerate() {
        let _ = writeln!(out, "{indent}state \"{}\" as {}", mermaid_escape(&state.name), id(prefix, i));
        if let StateKind::Parallel(p) = &state.kind {
            let _ = writeln!(out, "{indent}state {} {{", id(prefix, i));
            for (b, branch) in p.branches.iter().enumerate() {
                if b > 0 {
                    let _ = writeln!(out, "{indent}    --");
                }
                mermaid_machine(branch, &format!("{}_b{b}_", id(prefix, i)), depth + 1, out);
            }
            let _ = writeln!(out, "{indent}}}");
        }
        // A Map's item processor is drawn inside the Map, like a one-branch Parallel.
        if let StateKind::Map(m) = &state.kind {
            let _ = writeln!(out, "{indent}state {} {{", id(prefix, i));
            mermaid_machine(&m.item_processor, &format!("{}_m_", id(prefix, i)), depth + 1, out);
            let _ = writeln!(out, "{indent}}}");
        }
    }
    let _ = writeln!(out, "{indent}[*] --> {}", id(prefix, machine.start_at));
    for (i, state) in machine.states.iter().enumerate() {
        for (target, label) in edges(&state.kind) {
            let to = target.map_or_else(|| "[*]".to_owned(), |t| id(prefix, t));
            if label.is_empty() {
                let _ = writeln!(out, "{indent}{} --> {to}", id(prefix, i));
            } else {
                let _ = writeln!(out, "{indent}{} --> {to} : {}", id(prefix, i), mermaid_escape(&label));
            }
        }
    }
}

/// Mermaid label text: letters, digits, spaces, harmless punctuation and printable non-ASCII
/// pass; everything else (quotes, `#`, `;`, `:`, backslash, `&`, brackets, braces, angle
/// brackets, backticks, newlines, bidi controls) becomes an entity code `#NN;`, which Mermaid
/// decodes when it draws the label.
fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let plain = c.is_ascii_alphanumeric() || " ._$-(),'?!/@+=*%".contains(c);
        if plain || (!c.is_ascii() && !unsafe_char(c)) {
            out.push(c);
        } else {
            let _ = write!(out, "#{};", u32::from(c));
        }
    }
    out
}

/// Characters that must never appear raw in a rendered file: controls and bidirectional
/// formatting characters (which can make a label display differently from what it is).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn dot_machine(machine: &StateMachine, prefix: &str, depth: usize, out: &mut String) {
    let indent = "    ".repeat(depth);
    let start = format!("{prefix}start");
    let end = format!("{prefix}end");
    let _ = writeln!(out, "{indent}{start} [shape=circle, style=filled, fillcolor=black, label=\"\", width=0.2];");
    let _ = writeln!(out, "{indent}{end} [shape=doublecircle, style=filled, fillcolor=black, label=\"\", width=0.15];");
    for (i, state) in machine.states.iter().enumerate() {
        let shape = match state.kind {
            StateKind::Choice(_) => ", shape=diamond, style=\"\"",
            StateKind::Fail(_) => ", color=red",
            StateKind::Succeed(_) => ", color=darkgreen",
            StateKind::Parallel(_) | StateKind::Map(_) => ", shape=box3d, style=\"\"",
            _ => "",
        };
        let label = format!("{}\n({})", state.name, state.kind.type_name());
        let _ = writeln!(out, "{indent}{} [label=\"{}\"{shape}];", id(prefix, i), dot_escape(&label));
        if let StateKind::Parallel(p) = &state.kind {
            let _ = writeln!(out, "{indent}subgraph cluster_{} {{", id(prefix, i));
            let _ = writeln!(out, "{indent}    label=\"{}\";\n{indent}    style=dashed;", dot_escape(&state.name));
            for (b, branch) in p.branches.iter().enumerate() {
                let branch_prefix = format!("{}_b{b}_", id(prefix, i));
                let _ = writeln!(out, "{indent}    subgraph cluster_{branch_prefix}branch {{");
                let _ = writeln!(out, "{indent}        label=\"branch {b}\";\n{indent}        style=dotted;");
                dot_machine(branch, &branch_prefix, depth + 2, out);
                let _ = writeln!(out, "{indent}    }}");
                let _ = writeln!(
                    out,
                    "{indent}    {} -> {branch_prefix}start [style=dashed, arrowhead=none];",
                    id(prefix, i)
                );
            }
            let _ = writeln!(out, "{indent}}}");
        }
        if let StateKind::Map(m) = &state.kind {
            let processor_prefix = format!("{}_m_", id(prefix, i));
            let _ = writeln!(out, "{indent}subgraph cluster_{processor_prefix}items {{");
            let _ = writeln!(
                out,
                "{indent}    label=\"{} (each item)\";\n{indent}    style=dashed;",
                dot_escape(&state.name)
            );
            dot_machine(&m.item_processor, &processor_prefix, depth + 1, out);
            let _ = writeln!(out, "{indent}}}");
            let _ =
                writeln!(out, "{indent}{} -> {processor_prefix}start [style=dashed, arrowhead=none];", id(prefix, i));
        }
    }
    let _ = writeln!(out, "{indent}{start} -> {};", id(prefix, machine.start_at));
    for (i, state) in machine.states.iter().enumerate() {
        for (target, label) in edges(&state.kind) {
            let to = target.map_or_else(|| end.clone(), |t| id(prefix, t));
            let style = if label.starts_with("catch") || label.starts_with("fail") { ", color=red" } else { "" };
            if label.is_empty() {
                let _ = writeln!(out, "{indent}{} -> {to};", id(prefix, i));
            } else {
                let _ = writeln!(out, "{indent}{} -> {to} [label=\"{}\"{style}];", id(prefix, i), dot_escape(&label));
            }
        }
    }
}

/// A DOT double-quoted string body: `\` and `"` are backslash-escaped (a lone `\` would start an
/// escape such as `\N`, the node name), newlines become `\n`, `&` and unsafe characters become
/// HTML entities, which Graphviz decodes in labels.
fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '&' => out.push_str("&amp;"),
            c if unsafe_char(c) => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(mermaid_escape("a \"b\" #1\n"), "a #34;b#34; #35;1#10;");
        assert_eq!(mermaid_escape("Prüfen \u{202e}x"), "Prüfen #8238;x");
        assert_eq!(dot_escape("a\\N \"q\"\nz & \u{202e}"), "a\\\\N \\\"q\\\"\\nz &amp; &#8238;");
    }
}
