//! Evaluation of a parsed path against a document, producing the node list (every selected
//! node, in document order, by reference). The Jayway result shape is applied by the caller.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::ast::{
    CmpOp, Comparable, FilterQuery, Function, FunctionArg, FunctionExpr, LogicalExpr, PathFunction, QueryRoot, Segment,
    Selector, SingularStep, Slice,
};

/// Follows a singular path (names and indices only) without allocating. `None` when a step is
/// missing, or when the path is not singular.
pub(crate) fn walk_singular<'a>(segments: &[Segment], doc: &'a Value) -> Option<&'a Value> {
    let mut cur = doc;
    for seg in segments {
        cur = step(cur, seg.as_singular()?)?;
    }
    Some(cur)
}

/// One name or index step.
pub(crate) fn step<'a>(cur: &'a Value, step: SingularStep<'_>) -> Option<&'a Value> {
    match step {
        SingularStep::Name(n) => cur.as_object()?.get(n),
        SingularStep::Index(i) => {
            let arr = cur.as_array()?;
            arr.get(resolve_index(arr.len(), i)?)
        }
    }
}

/// The position `i` names in an array of `len` elements (negative counts from the end).
pub(crate) fn resolve_index(len: usize, i: i64) -> Option<usize> {
    if i >= 0 {
        usize::try_from(i).ok().filter(|&u| u < len)
    } else {
        let back = usize::try_from(i.unsigned_abs()).ok()?;
        len.checked_sub(back)
    }
}

/// Every node the segments select from `start`; `root` is what `$` means inside filters.
pub(crate) fn select_nodes<'a>(segments: &[Segment], start: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let mut nodes = vec![start];
    for seg in segments {
        let mut next = Vec::new();
        for node in nodes {
            apply_segment(seg, node, root, &mut next);
        }
        nodes = next;
        if nodes.is_empty() {
            break;
        }
    }
    nodes
}

fn apply_segment<'a>(seg: &Segment, node: &'a Value, root: &'a Value, out: &mut Vec<&'a Value>) {
    match seg {
        Segment::Child(sels) => {
            for sel in sels {
                apply_selector(sel, node, root, false, out);
            }
        }
        Segment::Descendant(sels) => {
            // Pre-order walk with an explicit stack, so that a deeply nested document cannot
            // overflow the call stack.
            let mut stack = vec![node];
            while let Some(n) = stack.pop() {
                for sel in sels {
                    apply_selector(sel, n, root, true, out);
                }
                match n {
                    Value::Array(a) => stack.extend(a.iter().rev()),
                    Value::Object(m) => stack.extend(m.values().rev()),
                    _ => {}
                }
            }
        }
    }
}

fn apply_selector<'a>(sel: &Selector, node: &'a Value, root: &'a Value, descendant: bool, out: &mut Vec<&'a Value>) {
    match sel {
        Selector::Name(n) => {
            if let Some(v) = node.as_object().and_then(|m| m.get(n)) {
                out.push(v);
            }
        }
        Selector::Index(i) => {
            if let Some(v) = step(node, SingularStep::Index(*i)) {
                out.push(v);
            }
        }
        Selector::Wildcard => match node {
            Value::Array(a) => out.extend(a.iter()),
            Value::Object(m) => out.extend(m.values()),
            _ => {}
        },
        Selector::Slice(s) => {
            if let Value::Array(a) = node {
                out.extend(slice_indices(a.len(), s).filter_map(|i| a.get(i)));
            }
        }
        Selector::Filter(expr) => match node {
            Value::Array(a) => out.extend(a.iter().filter(|e| test(expr, e, root))),
            // Jayway applies a filter on an object to the object itself (RFC 9535 would test each
            // member). In a `..` search every object is also reached as a member of its parent,
            // so there the members are tested instead, which finds each object exactly once.
            Value::Object(m) if descendant => out.extend(m.values().filter(|e| test(expr, e, root))),
            Value::Object(_) if test(expr, node, root) => out.push(node),
            _ => {}
        },
    }
}

/// The indices a slice selects, in selection order (RFC 9535 section 2.3.4.2.2).
fn slice_indices(len: usize, s: &Slice) -> impl Iterator<Item = usize> {
    let step = s.step.unwrap_or(1);
    // Indices are limited to 2^53 at parse time and arrays are far smaller than i64::MAX, so
    // these conversions and sums cannot overflow.
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let norm = |i: i64| if i >= 0 { i } else { len + i };
    let (mut i, lower, upper) = if step > 0 {
        let lower = norm(s.start.unwrap_or(0)).clamp(0, len);
        let upper = norm(s.end.unwrap_or(len)).clamp(0, len);
        (lower, lower, upper)
    } else {
        let upper = s.start.map_or(len - 1, norm).clamp(-1, len - 1);
        let lower = s.end.map_or(-1, norm).clamp(-1, len - 1);
        (upper, lower, upper)
    };
    std::iter::from_fn(move || {
        if step == 0 {
            return None;
        }
        let in_range = if step > 0 { i < upper } else { lower < i };
        if !in_range {
            return None;
        }
        let cur = i;
        i = i.saturating_add(step);
        usize::try_from(cur).ok()
    })
}

/// Whether `current` passes the filter expression.
fn test(expr: &LogicalExpr, current: &Value, root: &Value) -> bool {
    match expr {
        LogicalExpr::Or(items) => items.iter().any(|e| test(e, current, root)),
        LogicalExpr::And(items) => items.iter().all(|e| test(e, current, root)),
        LogicalExpr::Not(inner) => !test(inner, current, root),
        LogicalExpr::Paren(inner) => test(inner, current, root),
        LogicalExpr::Exists(q) if q.function.is_some() => query_value(q, current, root).is_some(),
        LogicalExpr::Exists(q) => !query(q, current, root).is_empty(),
        LogicalExpr::Compare { left, op, right } => {
            let l = comparable(left, current, root);
            let r = comparable(right, current, root);
            compare(l.as_deref(), *op, r.as_deref())
        }
    }
}

fn query<'a>(q: &FilterQuery, current: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let start = match q.root {
        QueryRoot::Current => current,
        QueryRoot::Root => root,
    };
    select_nodes(&q.segments, start, root)
}

/// The value of one side of a comparison; `None` is RFC 9535's "Nothing" (no such node).
fn comparable<'a>(c: &'a Comparable, current: &'a Value, root: &'a Value) -> Option<Cow<'a, Value>> {
    match c {
        Comparable::Literal(v) => Some(Cow::Borrowed(v)),
        Comparable::Query(q) => query_value(q, current, root),
        Comparable::Function(f) => function(f, current, root),
    }
}

/// The value of a query used as an operand: a singular query's node (or "Nothing"); a
/// non-singular one's nodes as an array (Jayway; the parser allows this only for Jayway's
/// word operators); with a final path function, the function of that.
fn query_value<'a>(q: &FilterQuery, current: &'a Value, root: &'a Value) -> Option<Cow<'a, Value>> {
    let start = match q.root {
        QueryRoot::Current => current,
        QueryRoot::Root => root,
    };
    let base = if q.segments.iter().all(|s| s.as_singular().is_some()) {
        Cow::Borrowed(walk_singular(&q.segments, start)?)
    } else {
        Cow::Owned(Value::Array(select_nodes(&q.segments, start, root).into_iter().cloned().collect()))
    };
    match q.function {
        Some(f) => path_function(f, &base).map(Cow::Owned),
        None => Some(base),
    }
}

/// Applies a Jayway path function. `None` when the function has no value for this input (the
/// length of a number, the sum of no numbers, the first element of an empty array).
pub(crate) fn path_function(f: PathFunction, v: &Value) -> Option<Value> {
    match f {
        PathFunction::Length | PathFunction::Size => match v {
            Value::Array(a) => Some(Value::from(a.len())),
            Value::Object(m) => Some(Value::from(m.len())),
            Value::String(s) => Some(Value::from(s.chars().count())),
            _ => None,
        },
        PathFunction::Keys => v.as_object().map(|m| Value::Array(m.keys().cloned().map(Value::String).collect())),
        PathFunction::First => v.as_array()?.first().cloned(),
        PathFunction::Last => v.as_array()?.last().cloned(),
        PathFunction::Min | PathFunction::Max | PathFunction::Avg | PathFunction::Stddev | PathFunction::Sum => {
            // Jayway aggregates the numbers of an array, skipping other elements, and gives a
            // double; with no numbers there is no result.
            let nums: Vec<f64> = v.as_array()?.iter().filter_map(Value::as_f64).collect();
            if nums.is_empty() {
                return None;
            }
            let n = nums.len() as f64;
            let sum: f64 = nums.iter().sum();
            let out = match f {
                PathFunction::Min => nums.iter().copied().fold(f64::INFINITY, f64::min),
                PathFunction::Max => nums.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                PathFunction::Avg => sum / n,
                PathFunction::Sum => sum,
                _ => {
                    let sum_sq: f64 = nums.iter().map(|x| x * x).sum();
                    (sum_sq / n - (sum / n) * (sum / n)).max(0.0).sqrt()
                }
            };
            serde_json::Number::from_f64(out).map(Value::Number)
        }
    }
}

fn function<'a>(f: &'a FunctionExpr, current: &'a Value, root: &'a Value) -> Option<Cow<'a, Value>> {
    match f.function {
        Function::Length => {
            let arg = match &*f.arg {
                FunctionArg::Literal(v) => Some(Cow::Borrowed(v)),
                FunctionArg::Query(q) => query_value(q, current, root),
                FunctionArg::Function(inner) => function(inner, current, root),
            }?;
            let n = match &*arg {
                Value::String(s) => s.chars().count(),
                Value::Array(a) => a.len(),
                Value::Object(m) => m.len(),
                _ => return None,
            };
            Some(Cow::Owned(Value::from(n)))
        }
        Function::Count => match &*f.arg {
            // A query ending in a path function gives one value (or none).
            FunctionArg::Query(q) if q.function.is_some() => {
                Some(Cow::Owned(Value::from(usize::from(query_value(q, current, root).is_some()))))
            }
            FunctionArg::Query(q) => Some(Cow::Owned(Value::from(query(q, current, root).len()))),
            // The parser only lets queries through to count().
            _ => None,
        },
        Function::Value => match &*f.arg {
            FunctionArg::Query(q) if q.function.is_some() => query_value(q, current, root),
            FunctionArg::Query(q) => match query(q, current, root).as_slice() {
                [one] => Some(Cow::Borrowed(*one)),
                _ => None,
            },
            _ => None,
        },
    }
}

/// RFC 9535 comparison: equality is deep (numbers by value); ordering is defined only between
/// two numbers or two strings; "Nothing" equals only "Nothing". Jayway's word operators are
/// false when an operand has the wrong type.
fn compare(l: Option<&Value>, op: CmpOp, r: Option<&Value>) -> bool {
    let contains = |haystack: &[Value], needle: &Value| haystack.iter().any(|x| json_equal(x, needle));
    match op {
        CmpOp::Eq => equal(l, r),
        CmpOp::Ne => !equal(l, r),
        CmpOp::Lt => less(l, r),
        CmpOp::Gt => less(r, l),
        CmpOp::Le => less(l, r) || equal(l, r),
        CmpOp::Ge => less(r, l) || equal(l, r),
        CmpOp::In => match (l, r) {
            (Some(l), Some(Value::Array(r))) => contains(r, l),
            _ => false,
        },
        // Like `!=`, a missing left value is "not in" the array.
        CmpOp::Nin => match (l, r) {
            (Some(l), Some(Value::Array(r))) => !contains(r, l),
            (None, Some(Value::Array(_))) => true,
            _ => false,
        },
        CmpOp::SubsetOf | CmpOp::AnyOf | CmpOp::NoneOf => match (l, r) {
            (Some(Value::Array(l)), Some(Value::Array(r))) => match op {
                CmpOp::SubsetOf => l.iter().all(|x| contains(r, x)),
                CmpOp::AnyOf => l.iter().any(|x| contains(r, x)),
                _ => !l.iter().any(|x| contains(r, x)),
            },
            _ => false,
        },
        CmpOp::Size => match (l.and_then(size_of), r.and_then(Value::as_u64)) {
            (Some(n), Some(want)) => u64::try_from(n).is_ok_and(|n| n == want),
            _ => false,
        },
        CmpOp::Empty => match (l.and_then(size_of), r.and_then(Value::as_bool)) {
            (Some(n), Some(want)) => (n == 0) == want,
            _ => false,
        },
        CmpOp::Contains => match (l, r) {
            (Some(Value::String(l)), Some(Value::String(r))) => l.contains(r.as_str()),
            (Some(Value::Array(l)), Some(r)) => contains(l, r),
            _ => false,
        },
    }
}

/// The size Jayway's `size` and `empty` look at: of an array, a string (in characters) or an
/// object.
fn size_of(v: &Value) -> Option<usize> {
    match v {
        Value::Array(a) => Some(a.len()),
        Value::String(s) => Some(s.chars().count()),
        Value::Object(m) => Some(m.len()),
        _ => None,
    }
}

fn equal(l: Option<&Value>, r: Option<&Value>) -> bool {
    match (l, r) {
        (None, None) => true,
        (Some(a), Some(b)) => json_equal(a, b),
        _ => false,
    }
}

fn less(l: Option<&Value>, r: Option<&Value>) -> bool {
    match (l, r) {
        (Some(Value::Number(a)), Some(Value::Number(b))) => num_cmp(a, b) == Some(Ordering::Less),
        (Some(Value::String(a)), Some(Value::String(b))) => a < b,
        _ => false,
    }
}

/// Deep equality where numbers compare by value (`1 == 1.0`), unlike `Value`'s `PartialEq`.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Compares two JSON numbers exactly when both are integers, else as `f64`.
fn num_cmp(a: &serde_json::Number, b: &serde_json::Number) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return Some(x.cmp(&y));
    }
    // One is negative and the other beyond i64: the signs decide.
    if a.as_i64().is_some() && b.as_u64().is_some() && b.as_i64().is_none() {
        return Some(Ordering::Less);
    }
    if b.as_i64().is_some() && a.as_u64().is_some() && a.as_i64().is_none() {
        return Some(Ordering::Greater);
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}
