//! The state graph as a self-contained SVG (`wfc graph --format svg`, and the execution viewer's
//! drawing), laid out by wfc itself: no Graphviz, no JavaScript, nothing fetched.
//!
//! The layout is a small layered (Sugiyama-style) drawing, top to bottom:
//! 1. **Cycles broken.** A depth-first walk from the start marks edges back to a state still on
//!    the walk's stack (a loop) as *back edges*; they are left out of the layering and drawn as
//!    arcs on the right, back up to their target.
//! 2. **Layers.** Each state's layer is its longest forward path from the start, so every forward
//!    edge points down. An edge that skips layers gets an invisible waypoint in each layer it
//!    crosses, so it is routed around the states in between rather than through them. A labelled
//!    edge (a Choice rule, `Default`, a Catch) spans at least two layers, and its label is the
//!    waypoint between, sized to the text, as Graphviz does: labels get room of their own.
//! 3. **Order.** Within a layer, states start in the walk's order, then a few barycenter sweeps
//!    (down, then up) move each toward the mean position of its neighbours, which removes most
//!    crossings.
//! 4. **Positions.** Each layer is placed as close as possible to where its neighbours want it
//!    (the mean of their centers), keeping order and spacing: a least-squares fit under the
//!    order constraints, solved exactly by pool-adjacent-violators. Sweeps alternate down and up.
//!
//! A Parallel or Map state is a box holding its branches (or its item processor) side by side,
//! each laid out the same way, recursively: a nested machine is a cluster inside its state.
//!
//! Every element a viewer needs has a stable id derived from the state's position, never from its
//! name (`s3`, `s3_b1_s0`, `s5_m_s2`, as the Mermaid and dot renderings name them), plus
//! `data-state` with the escaped name. Every name, label and type is XML-escaped; control and
//! bidirectional-formatting characters are shown as `\u{...}` so no text can render as something
//! it is not.

use std::fmt::Write as _;

use wfc_ir::{StateKind, StateMachine, Workflow};

use super::{edges, id, unsafe_char};

/// Layout constants (SVG user units, i.e. pixels at 100%).
const FONT_SIZE: f64 = 12.0;
const LABEL_FONT_SIZE: f64 = 10.5;
const NODE_HEIGHT: f64 = 42.0;
const NODE_PADDING: f64 = 14.0;
const MIN_NODE_WIDTH: f64 = 90.0;
const NODE_GAP: f64 = 28.0;
const LAYER_GAP: f64 = 46.0;
const CLUSTER_PADDING: f64 = 14.0;
const CLUSTER_HEADER: f64 = 40.0;
const BRANCH_HEADER: f64 = 18.0;
const MARKER: f64 = 14.0;
const BACK_LANE: f64 = 14.0;
const MAX_LABEL_CHARS: usize = 48;

/// The whole workflow as an SVG document.
pub fn svg(workflow: &Workflow) -> String {
    svg_annotated(workflow, &Annotations::default())
}

/// What an execution adds to the drawing: a class per state (its status, e.g. `succeeded`), and
/// the edges it took, both by the drawing's positional ids (`s3`, `s3_b1_s0`, `start`, `end`).
#[derive(Debug, Clone, Default)]
pub struct Annotations {
    /// Extra classes of a state's group, by state id.
    pub state_class: std::collections::HashMap<String, String>,
    /// Edges taken, as (from id, to id).
    pub taken: std::collections::HashSet<(String, String)>,
}

/// [`svg`] with an execution's statuses and path (the viewer's drawing).
pub fn svg_annotated(workflow: &Workflow, annotations: &Annotations) -> String {
    let title = display_text(&workflow.name, usize::MAX);
    let block = layout_machine(&workflow.machine, "", annotations);
    let margin = 12.0;
    let title_height = 24.0;
    let width = (block.width + 2.0 * margin).max(text_width(&title, 14.0) + 2.0 * margin);
    let height = block.height + 2.0 * margin + title_height;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="wfc-graph" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" font-size="{FONT_SIZE}">"#,
        w = num(width),
        h = num(height)
    );
    let _ = writeln!(out, "<title>{}</title>", xml(&title));
    out.push_str(STYLE);
    out.push_str(DEFS);
    let _ =
        writeln!(out, r#"<text class="title" x="{}" y="{}">{}</text>"#, num(margin), num(margin + 14.0), xml(&title));
    let _ = writeln!(out, r#"<g transform="translate({},{})">"#, num(margin), num(margin + title_height));
    out.push_str(&block.svg);
    out.push_str("</g>\n</svg>\n");
    out
}

/// Colors and line styles, as classes a viewer can override (e.g. `.succeeded`, `.failed` on a
/// state's group) without touching the geometry.
const STYLE: &str = r#"<style>
.wfc-graph .title { font-size: 14px; font-weight: 600; fill: #222; }
.wfc-graph .state > rect { fill: #fff; stroke: #555; stroke-width: 1.2; }
.wfc-graph .state.Choice > rect { fill: #fff9e0; }
.wfc-graph .state.Succeed > rect { stroke: #2e7d32; stroke-width: 1.6; }
.wfc-graph .state.Fail > rect { stroke: #c62828; stroke-width: 1.6; }
.wfc-graph .state.Parallel > rect, .wfc-graph .state.Map > rect { fill: #f6f8fb; stroke-dasharray: 5 3; }
.wfc-graph .state .name { fill: #111; }
.wfc-graph .state .kind { fill: #777; font-size: 10px; }
.wfc-graph .branch > rect { fill: none; stroke: #9aa5b1; stroke-dasharray: 2 3; }
.wfc-graph .branch > text { fill: #6b7785; font-size: 10px; }
.wfc-graph .edge path { fill: none; stroke: #666; stroke-width: 1.2; stroke-linejoin: round; }
.wfc-graph .edge.error path { stroke: #c62828; stroke-dasharray: 4 3; }
.wfc-graph .edge.back path { stroke: #5a6b8c; }
.wfc-graph .edge text { fill: #444; font-size: 10.5px; }
.wfc-graph .edge.error text { fill: #c62828; }
.wfc-graph .edge rect { fill: #fff; opacity: 0.85; }
.wfc-graph .marker { fill: #333; }
.wfc-graph .state.succeeded > rect { fill: #e3f4e4; stroke: #2e7d32; }
.wfc-graph .state.failed > rect { fill: #fde7e7; stroke: #c62828; stroke-width: 2; }
.wfc-graph .state.caught > rect { fill: #fff0db; stroke: #e07b00; stroke-width: 2; }
.wfc-graph .state.running > rect { fill: #e3eefc; stroke: #1565c0; stroke-width: 2; }
.wfc-graph .state.unreached > rect { fill: #fafafa; stroke: #bbb; }
.wfc-graph .state.unreached text { fill: #999; }
.wfc-graph .edge.taken path { stroke: #1b5e20; stroke-width: 2.4; }
.wfc-graph .state.selected > rect { stroke: #6a1b9a; stroke-width: 3; }
</style>
"#;

const DEFS: &str = r##"<defs>
<marker id="wfc-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker>
<marker id="wfc-arrow-error" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c62828"/></marker>
</defs>
"##;

/// A laid-out machine: its size and its SVG fragment in its own coordinates (origin top left).
struct Block {
    width: f64,
    height: f64,
    svg: String,
}

/// What a layout node is.
enum NodeKind {
    /// The machine's start marker.
    Start,
    /// The machine's end marker.
    End,
    /// State `index` of the machine.
    State(usize),
    /// A waypoint of an edge that skips layers (no size, not drawn).
    Waypoint,
}

struct Node {
    kind: NodeKind,
    width: f64,
    height: f64,
    layer: usize,
    x: f64,
    y: f64,
    /// For a state: its drawn contents (a nested machine's block for Parallel and Map).
    inner: Option<Vec<(String, Block)>>,
}

/// An edge of the layout graph, possibly split by waypoints.
struct Edge {
    /// The chain of nodes it passes: source, waypoints..., target.
    chain: Vec<usize>,
    label: String,
    error: bool,
    back: bool,
}

fn layout_machine(machine: &StateMachine, prefix: &str, annotations: &Annotations) -> Block {
    let n = machine.states.len();
    let start = n;
    let end = n + 1;
    let mut nodes: Vec<Node> = Vec::with_capacity(n + 2);
    for (i, state) in machine.states.iter().enumerate() {
        let inner = nested_blocks(&state.kind, &id(prefix, i), annotations);
        let (width, height) = state_size(&state.name, &kind_name(&state.kind), inner.as_deref());
        nodes.push(Node { kind: NodeKind::State(i), width, height, layer: 0, x: 0.0, y: 0.0, inner });
    }
    nodes.push(Node { kind: NodeKind::Start, width: MARKER, height: MARKER, layer: 0, x: 0.0, y: 0.0, inner: None });
    nodes.push(Node { kind: NodeKind::End, width: MARKER, height: MARKER, layer: 0, x: 0.0, y: 0.0, inner: None });

    // The machine's edges: start → StartAt, then every state's transitions (an end is the marker).
    let mut raw: Vec<(usize, usize, String, bool)> = vec![(start, machine.start_at, String::new(), false)];
    for (i, state) in machine.states.iter().enumerate() {
        for (target, label) in edges(&state.kind) {
            let error = label.starts_with("catch") || label.starts_with("onError") || label.starts_with("fail");
            raw.push((i, target.unwrap_or(end), label, error));
        }
    }
    let has_end = raw.iter().any(|e| e.1 == end);

    // 1. Back edges: a depth-first walk from the start, then from anything it did not reach.
    let mut adjacency = vec![Vec::new(); n + 2];
    for (k, e) in raw.iter().enumerate() {
        adjacency[e.0].push(k);
    }
    let mut back = vec![false; raw.len()];
    let mut order = Vec::with_capacity(n + 2);
    let mut mark = vec![0u8; n + 2]; // 0 new, 1 on the stack, 2 done
    let roots = std::iter::once(start).chain(0..n).chain(std::iter::once(end));
    for root in roots {
        if mark[root] != 0 || (root == end && !has_end) {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = 1;
        order.push(root);
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&k) = adjacency[v].get(*next) {
                *next += 1;
                let w = raw[k].1;
                match mark[w] {
                    0 => {
                        mark[w] = 1;
                        order.push(w);
                        stack.push((w, 0));
                    }
                    1 => back[k] = true,
                    _ => {}
                }
            } else {
                mark[v] = 2;
                stack.pop();
            }
        }
    }

    // 2. Layers: longest path over forward edges, in the walk's topological order.
    let mut indegree = vec![0usize; n + 2];
    for (k, e) in raw.iter().enumerate() {
        if !back[k] {
            indegree[e.1] += 1;
        }
    }
    let mut ready: Vec<usize> = order.iter().copied().filter(|&v| indegree[v] == 0).collect();
    ready.reverse();
    let mut layer = vec![0usize; n + 2];
    while let Some(v) = ready.pop() {
        for &k in &adjacency[v] {
            if back[k] {
                continue;
            }
            let w = raw[k].1;
            // A labelled edge spans two layers: its label is a node of the layer between.
            let span = if raw[k].2.is_empty() { 1 } else { 2 };
            layer[w] = layer[w].max(layer[v] + span);
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(w);
            }
        }
    }
    // The end marker sits alone below everything.
    let deepest = (0..n + 1).map(|v| layer[v]).max().unwrap_or(0);
    if has_end {
        layer[end] = layer[end].max(deepest + 1);
    }
    for (v, node) in nodes.iter_mut().enumerate() {
        node.layer = layer[v];
    }

    // Waypoints for forward edges that skip layers.
    let mut edges_out: Vec<Edge> = Vec::with_capacity(raw.len());
    for (k, (from, to, label, error)) in raw.into_iter().enumerate() {
        let mut chain = vec![from];
        if !back[k] {
            for l in layer[from] + 1..layer[to] {
                // The first waypoint of a labelled edge carries the label, so the layout keeps
                // room for it: labels never overlap states or each other.
                let (width, height) =
                    if l == layer[from] + 1 && !label.is_empty() { label_size(&label) } else { (0.0, 0.0) };
                nodes.push(Node { kind: NodeKind::Waypoint, width, height, layer: l, x: 0.0, y: 0.0, inner: None });
                chain.push(nodes.len() - 1);
            }
        }
        chain.push(to);
        edges_out.push(Edge { chain, label, error, back: back[k] });
    }
    let drawn = |v: usize| v < n || v == start || (v == end && has_end) || v > end;

    // 3. Order within layers: the walk's order first, then barycenter sweeps.
    let layers_count =
        nodes.iter().enumerate().filter(|(v, _)| drawn(*v)).map(|(_, nd)| nd.layer).max().unwrap_or(0) + 1;
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); layers_count];
    let mut seen = vec![false; nodes.len()];
    for &v in &order {
        if drawn(v) && !seen[v] {
            seen[v] = true;
            layers[nodes[v].layer].push(v);
        }
    }
    for v in 0..nodes.len() {
        if drawn(v) && !seen[v] {
            seen[v] = true;
            layers[nodes[v].layer].push(v);
        }
    }
    // Neighbours one layer up and down, along forward edge segments.
    let mut up: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut down: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for e in edges_out.iter().filter(|e| !e.back) {
        for pair in e.chain.windows(2) {
            down[pair[0]].push(pair[1]);
            up[pair[1]].push(pair[0]);
        }
    }
    let mut position = vec![0.0f64; nodes.len()];
    for layer in &layers {
        for (i, &v) in layer.iter().enumerate() {
            position[v] = i as f64;
        }
    }
    for sweep in 0..6 {
        let downward = sweep % 2 == 0;
        let range: Vec<usize> =
            if downward { (1..layers.len()).collect() } else { (0..layers.len().saturating_sub(1)).rev().collect() };
        for l in range {
            let neighbours = if downward { &up } else { &down };
            let mut keyed: Vec<(f64, usize)> = layers[l]
                .iter()
                .map(|&v| {
                    let ns = &neighbours[v];
                    let key = if ns.is_empty() {
                        position[v]
                    } else {
                        ns.iter().map(|&w| position[w]).sum::<f64>() / ns.len() as f64
                    };
                    (key, v)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            layers[l] = keyed.into_iter().map(|(_, v)| v).collect();
            for (i, &v) in layers[l].iter().enumerate() {
                position[v] = i as f64;
            }
        }
    }

    // 4. Coordinates. y by layer (each layer as tall as its tallest node); x by fitted sweeps.
    let mut y = 0.0;
    let mut bands = Vec::with_capacity(layers.len());
    for layer in &layers {
        let height = layer.iter().map(|&v| nodes[v].height).fold(0.0, f64::max);
        for &v in layer {
            nodes[v].y = y + (height - nodes[v].height) / 2.0;
        }
        bands.push((y, y + height));
        y += height + LAYER_GAP;
    }
    for layer in &layers {
        let mut x = 0.0;
        for &v in layer {
            nodes[v].x = x + nodes[v].width / 2.0; // x is the center
            x += nodes[v].width + NODE_GAP;
        }
    }
    for sweep in 0..8 {
        let downward = sweep % 2 == 0;
        let range: Vec<usize> =
            if downward { (1..layers.len()).collect() } else { (0..layers.len().saturating_sub(1)).rev().collect() };
        for l in range {
            let neighbours = if downward { &up } else { &down };
            let wanted: Vec<f64> = layers[l]
                .iter()
                .map(|&v| {
                    let ns = &neighbours[v];
                    if ns.is_empty() {
                        nodes[v].x
                    } else {
                        ns.iter().map(|&w| nodes[w].x).sum::<f64>() / ns.len() as f64
                    }
                })
                .collect();
            let widths: Vec<f64> = layers[l].iter().map(|&v| nodes[v].width).collect();
            for (x, &v) in fit_in_order(&wanted, &widths).into_iter().zip(&layers[l]) {
                nodes[v].x = x;
            }
        }
    }
    // Shift so the leftmost box starts at 0.
    let visible: Vec<usize> = (0..nodes.len()).filter(|&v| drawn(v)).collect();
    let left = visible.iter().map(|&v| nodes[v].x - nodes[v].width / 2.0).fold(f64::INFINITY, f64::min);
    let left = if left.is_finite() { left } else { 0.0 };
    for node in &mut nodes {
        node.x -= left;
    }
    let right = visible.iter().map(|&v| nodes[v].x + nodes[v].width / 2.0).fold(0.0, f64::max);
    let bottom = visible.iter().map(|&v| nodes[v].y + nodes[v].height).fold(0.0, f64::max);
    // Back edges run in lanes on the right; a labelled one needs room for half its label.
    let back_count = edges_out.iter().filter(|e| e.back).count();
    let back_label = edges_out
        .iter()
        .filter(|e| e.back && !e.label.is_empty())
        .map(|e| label_size(&e.label).0 / 2.0)
        .fold(0.0, f64::max);
    let width = right + if back_count > 0 { BACK_LANE * back_count as f64 + back_label.max(BACK_LANE) } else { 0.0 };

    // Drawing: edges under nodes, so a node is never hidden by a line.
    let mut svg = String::new();
    let mut lane = 0usize;
    for (k, e) in edges_out.iter().enumerate() {
        let from = &nodes[e.chain[0]];
        let to = &nodes[*e.chain.last().unwrap_or(&e.chain[0])];
        let class = if e.back {
            "edge back"
        } else if e.error {
            "edge error"
        } else {
            "edge"
        };
        let marker = if e.error { "wfc-arrow-error" } else { "wfc-arrow" };
        let from_id = endpoint_id(prefix, &from.kind);
        let to_id = endpoint_id(prefix, &to.kind);
        let taken = if annotations.taken.contains(&(from_id.clone(), to_id.clone())) { " taken" } else { "" };
        let _ = write!(svg, r#"<g class="{class}{taken}" id="{prefix}e{k}" data-from="{from_id}" data-to="{to_id}">"#);
        let (path, label_at) = if e.back {
            // Out of the source's right side, up (or down) the edge's own lane, into the
            // target's right side; offset from the centers so a self-loop is a visible loop.
            lane += 1;
            let x_lane = right + BACK_LANE * lane as f64;
            let (x1, y1) = (from.x + from.width / 2.0, from.y + from.height / 2.0 + 6.0);
            let (x2, y2) = (to.x + to.width / 2.0, to.y + to.height / 2.0 - 6.0);
            let path = format!(
                "M{},{} L{},{} L{},{} L{},{}",
                num(x1),
                num(y1),
                num(x_lane),
                num(y1),
                num(x_lane),
                num(y2),
                num(x2),
                num(y2)
            );
            (path, (x_lane, (y1 + y2) / 2.0))
        } else {
            // A waypoint is crossed straight down its whole layer; the edge bends only in the
            // gaps between layers, so it never cuts through a tall state beside the waypoint.
            let source = &nodes[e.chain[0]];
            let mut path = format!("M{},{}", num(source.x), num(source.y + source.height));
            let mut at = (source.x, source.y + source.height);
            let mut label_at = at;
            for (i, &v) in e.chain.iter().enumerate().skip(1) {
                let nd = &nodes[v];
                let last = i + 1 == e.chain.len();
                let top = if last { nd.y } else { bands[nd.layer].0 };
                let mid = (at.1 + top) / 2.0;
                let _ =
                    write!(path, " C{},{} {},{} {},{}", num(at.0), num(mid), num(nd.x), num(mid), num(nd.x), num(top));
                if !last {
                    let bottom = bands[nd.layer].1;
                    let _ = write!(path, " L{},{}", num(nd.x), num(bottom));
                    if i == 1 {
                        // A labelled forward edge has its label's node as its first waypoint.
                        label_at = (nd.x, (top + bottom) / 2.0);
                    }
                    at = (nd.x, bottom);
                }
            }
            (path, label_at)
        };
        let _ = write!(svg, r#"<path d="{path}" marker-end="url(#{marker})"/>"#);
        if !e.label.is_empty() {
            let text = display_text(&e.label, MAX_LABEL_CHARS);
            let w = label_size(&e.label).0;
            let _ = write!(
                svg,
                r#"<title>{}</title><rect x="{}" y="{}" width="{}" height="15" rx="3"/><text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                xml(&display_text(&e.label, usize::MAX)),
                num(label_at.0 - w / 2.0),
                num(label_at.1 - 8.0),
                num(w),
                num(label_at.0),
                num(label_at.1 + 3.5),
                xml(&text)
            );
        }
        svg.push_str("</g>\n");
    }
    for (v, node) in nodes.iter().enumerate() {
        if !drawn(v) {
            continue;
        }
        match node.kind {
            NodeKind::Start => {
                let _ = writeln!(
                    svg,
                    r#"<circle class="marker start" id="{prefix}start" cx="{}" cy="{}" r="{}"/>"#,
                    num(node.x),
                    num(node.y + MARKER / 2.0),
                    num(MARKER / 2.0 - 1.0)
                );
            }
            NodeKind::End => {
                let _ = writeln!(
                    svg,
                    r##"<g class="marker end" id="{prefix}end"><circle cx="{x}" cy="{y}" r="{r}" fill="none" stroke="#333"/><circle cx="{x}" cy="{y}" r="{r2}"/></g>"##,
                    x = num(node.x),
                    y = num(node.y + MARKER / 2.0),
                    r = num(MARKER / 2.0),
                    r2 = num(MARKER / 2.0 - 3.0)
                );
            }
            NodeKind::Waypoint => {}
            NodeKind::State(i) => draw_state(&mut svg, machine, prefix, i, node, annotations),
        }
    }
    Block { width: width.max(MARKER), height: bottom.max(MARKER), svg }
}

/// One state's group: its box, name and type, and for Parallel and Map its nested blocks.
fn draw_state(
    svg: &mut String,
    machine: &StateMachine,
    prefix: &str,
    i: usize,
    node: &Node,
    annotations: &Annotations,
) {
    let state = &machine.states[i];
    let kind = kind_name(&state.kind);
    let left = node.x - node.width / 2.0;
    let name = display_text(&state.name, MAX_LABEL_CHARS);
    let _ = write!(
        svg,
        r#"<g class="state {}{}" id="{}" data-state="{}" data-type="{}"><title>{}</title>"#,
        xml(state.kind.type_name()),
        annotations.state_class.get(&id(prefix, i)).map(|c| format!(" {}", xml(c))).unwrap_or_default(),
        id(prefix, i),
        xml(&display_text(&state.name, usize::MAX)),
        xml(&kind),
        xml(&display_text(&state.name, usize::MAX))
    );
    let _ = write!(
        svg,
        r#"<rect x="{}" y="{}" width="{}" height="{}" rx="{}"/>"#,
        num(left),
        num(node.y),
        num(node.width),
        num(node.height),
        if matches!(state.kind, StateKind::Choice(_)) { 14 } else { 6 }
    );
    let header = if node.inner.is_some() { CLUSTER_HEADER } else { node.height };
    let _ = write!(
        svg,
        r#"<text class="name" x="{}" y="{}" text-anchor="middle">{}</text><text class="kind" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        num(node.x),
        num(node.y + header / 2.0 - 1.0),
        xml(&name),
        num(node.x),
        num(node.y + header / 2.0 + 12.0),
        xml(&kind)
    );
    if let Some(blocks) = &node.inner {
        let total: f64 = blocks.iter().map(|(_, b)| b.width + 2.0 * CLUSTER_PADDING).sum::<f64>()
            + NODE_GAP / 2.0 * (blocks.len().saturating_sub(1)) as f64;
        let mut x = node.x - total / 2.0;
        let top = node.y + CLUSTER_HEADER;
        for (label, block) in blocks {
            let w = block.width + 2.0 * CLUSTER_PADDING;
            let h = block.height + 2.0 * CLUSTER_PADDING + BRANCH_HEADER;
            let _ = write!(
                svg,
                r#"<g class="branch"><rect x="{}" y="{}" width="{}" height="{}" rx="4"/><text x="{}" y="{}">{}</text><g transform="translate({},{})">"#,
                num(x),
                num(top),
                num(w),
                num(h),
                num(x + 6.0),
                num(top + 12.0),
                xml(label),
                num(x + CLUSTER_PADDING),
                num(top + BRANCH_HEADER + CLUSTER_PADDING)
            );
            svg.push_str(&block.svg);
            svg.push_str("</g></g>");
            x += w + NODE_GAP / 2.0;
        }
    }
    svg.push_str("</g>\n");
}

/// The box an edge label takes (its text cut to [`MAX_LABEL_CHARS`], padded).
fn label_size(label: &str) -> (f64, f64) {
    (text_width(&display_text(label, MAX_LABEL_CHARS), LABEL_FONT_SIZE) + 8.0, 16.0)
}

/// The nested machines drawn inside a Parallel (its branches) or a Map (its item processor).
fn nested_blocks(kind: &StateKind, id: &str, annotations: &Annotations) -> Option<Vec<(String, Block)>> {
    match kind {
        StateKind::Parallel(p) => Some(
            p.branches
                .iter()
                .enumerate()
                .map(|(b, branch)| (format!("branch {b}"), layout_machine(branch, &format!("{id}_b{b}_"), annotations)))
                .collect(),
        ),
        StateKind::Map(m) => {
            Some(vec![("each item".to_owned(), layout_machine(&m.item_processor, &format!("{id}_m_"), annotations))])
        }
        _ => None,
    }
}

/// A state box's size: its text, or its nested blocks side by side under a header.
fn state_size(name: &str, kind: &str, inner: Option<&[(String, Block)]>) -> (f64, f64) {
    let text = text_width(&display_text(name, MAX_LABEL_CHARS), FONT_SIZE).max(text_width(kind, 10.0));
    let plain = (text + 2.0 * NODE_PADDING).max(MIN_NODE_WIDTH);
    match inner {
        None => (plain, NODE_HEIGHT),
        Some(blocks) => {
            let width: f64 = blocks.iter().map(|(_, b)| b.width + 2.0 * CLUSTER_PADDING).sum::<f64>()
                + NODE_GAP / 2.0 * (blocks.len().saturating_sub(1)) as f64;
            let height =
                blocks.iter().map(|(_, b)| b.height + 2.0 * CLUSTER_PADDING + BRANCH_HEADER).fold(0.0, f64::max);
            ((width + 2.0 * CLUSTER_PADDING).max(plain), CLUSTER_HEADER + height + CLUSTER_PADDING)
        }
    }
}

/// Least-squares placement of one layer: centers as close as possible to `wanted`, in order,
/// each pair at least its half widths plus [`NODE_GAP`] apart. With offsets `o_i` (the minimal
/// spacing's running sum), `x_i = o_i + z_i` where `z` must be non-decreasing: an isotonic
/// regression of `wanted_i - o_i`, which pool-adjacent-violators solves exactly.
fn fit_in_order(wanted: &[f64], widths: &[f64]) -> Vec<f64> {
    let mut offsets = Vec::with_capacity(wanted.len());
    let mut o = 0.0;
    for i in 0..wanted.len() {
        if i > 0 {
            o += widths[i - 1] / 2.0 + NODE_GAP + widths[i] / 2.0;
        }
        offsets.push(o);
    }
    // Pools of (mean, count).
    let mut pools: Vec<(f64, usize)> = Vec::new();
    for (w, o) in wanted.iter().zip(&offsets) {
        pools.push((w - o, 1));
        while pools.len() > 1 {
            let (m2, c2) = pools[pools.len() - 1];
            let (m1, c1) = pools[pools.len() - 2];
            if m1 <= m2 {
                break;
            }
            pools.pop();
            let merged = ((m1 * c1 as f64 + m2 * c2 as f64) / (c1 + c2) as f64, c1 + c2);
            *pools.last_mut().expect("two pools") = merged;
        }
    }
    let mut out = Vec::with_capacity(wanted.len());
    for (mean, count) in pools {
        for _ in 0..count {
            out.push(mean + offsets[out.len()]);
        }
    }
    out
}

fn endpoint_id(prefix: &str, kind: &NodeKind) -> String {
    match kind {
        NodeKind::Start => format!("{prefix}start"),
        NodeKind::End => format!("{prefix}end"),
        NodeKind::State(i) => id(prefix, *i),
        NodeKind::Waypoint => String::new(),
    }
}

/// A state's type as shown: ASL's type, or the Serverless Workflow state's own type.
fn kind_name(kind: &StateKind) -> String {
    match kind {
        StateKind::Sw(s) => s.type_name().to_owned(),
        other => other.type_name().to_owned(),
    }
}

/// Text as displayed: unsafe characters shown as `\u{...}`, cut to `max` characters with `…`.
pub(super) fn display_text(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len());
    for (count, c) in s.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if unsafe_char(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// XML character data and attribute values: the five special characters as entities. Text
/// reaching here went through [`display_text`], so it holds no control characters (which XML 1.0
/// cannot carry even as references).
pub(super) fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An estimate of a text's width in a proportional sans-serif font (no font metrics here):
/// narrow, average and wide ASCII letters, and a full em for wide scripts.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' | 'I' | 'f' | 't' | 'r' => 0.32,
            'm' | 'w' | 'M' | 'W' | '@' => 0.85,
            c if c.is_ascii_uppercase() || c.is_ascii_digit() => 0.64,
            c if c.is_ascii() => 0.55,
            c if u32::from(c) >= 0x1100 => 1.0,
            _ => 0.6,
        })
        .sum::<f64>()
        * size
}

/// A coordinate with at most one decimal (smaller files, stable output).
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() { format!("{}", r as i64) } else { format!("{r:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_keeps_order_and_spacing_and_meets_the_wanted_positions_when_it_can() {
        // Room enough: every node where it wants to be.
        let x = fit_in_order(&[0.0, 500.0], &[100.0, 100.0]);
        assert_eq!(x, vec![0.0, 500.0]);
        // Two nodes wanting the same spot straddle it, just far enough apart.
        let x = fit_in_order(&[100.0, 100.0], &[100.0, 100.0]);
        assert!((x[1] - x[0] - (100.0 + NODE_GAP)).abs() < 1e-9, "{x:?}");
        assert!(((x[0] + x[1]) / 2.0 - 100.0).abs() < 1e-9, "{x:?}");
        // Out-of-order wishes never reorder.
        let x = fit_in_order(&[300.0, 0.0, 150.0], &[50.0, 50.0, 50.0]);
        assert!(x[0] < x[1] && x[1] < x[2], "{x:?}");
    }

    #[test]
    fn display_text_shows_what_a_string_is() {
        assert_eq!(display_text("a\u{202e}b\n", usize::MAX), "a\\u{202e}b\\u{a}");
        assert_eq!(display_text("abcdef", 3), "abc…");
        assert_eq!(xml("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
