//! Service limits: payload size, history length and JSON nesting depth.
//!
//! AWS enforces these so that one execution cannot exhaust the service; wfc enforces them so that
//! one hostile input or runaway loop cannot exhaust the process (memory, or the stack of a
//! recursive serializer). Each limit fails the execution with the error AWS uses, never a panic:
//!
//! | limit | default | error |
//! |---|---|---|
//! | payload (state output, task result, task parameters, execution input) | 262 144 bytes (256 KiB) | `States.DataLimitExceeded` |
//! | history events per execution | 25 000 | `States.Runtime` |
//! | JSON nesting depth of a document | 512 | `States.Runtime` |
//! | items of one Map state | 100 000 000 | `States.ItemReaderFailed` (ItemReader), `States.Runtime` (ItemsPath) |
//!
//! All three are terminal: `is_terminal` in `wfc_ir::errors` keeps Retry and Catch from handling them,
//! as on AWS (a catcher would only loop back into the same limit).
//!
//! The Map state's collected result array is checked like any state output.

use std::io;

use serde_json::Value;

use crate::Failure;

/// AWS's payload quota: 256 KiB of UTF-8 JSON per state input, output, result or task parameter.
pub const MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// AWS's history quota for a Standard execution.
pub const MAX_HISTORY_EVENTS: usize = 25_000;

/// AWS's limit on the items of one DISTRIBUTED Map run (`ReaderConfig.MaxItems` at most).
pub const MAX_MAP_ITEMS: usize = 100_000_000;

/// AWS's hard limit on the redrives of one DISTRIBUTED Map Run ("Redriving Map Runs", redrive
/// eligibility: 1,000 redrives of a given Map Run, past which the redrive gets `States.Runtime`).
pub const MAX_MAP_RUN_REDRIVES: u32 = 1000;

/// The deepest JSON document wfc accepts. AWS documents no number; 512 is far beyond any real
/// document and keeps every recursive walk (serialization, drop, JSONPath `..`) well inside a
/// 2 MiB thread stack.
pub const MAX_JSON_DEPTH: usize = 512;

/// The limits one execution runs under. [`Limits::default`] is what AWS enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest serialized state output, task result, task parameters or execution input, in
    /// bytes. Payloads of this size or more are `States.DataLimitExceeded` (AWS is strict: the
    /// payload must be *smaller* than 256 KiB).
    pub max_payload_bytes: usize,
    /// Most history events one execution may record; the event past it fails the execution.
    pub max_history_events: usize,
    /// Deepest nesting of arrays and objects in any document the execution handles.
    pub max_json_depth: usize,
    /// Most items one Map state may iterate over (AWS: 100,000,000 from a DISTRIBUTED Map's
    /// ItemReader). More from an ItemReader is `States.ItemReaderFailed`, from `ItemsPath`
    /// `States.Runtime`.
    pub max_map_items: usize,
    /// Most redrives of one DISTRIBUTED Map Run (AWS: 1,000). A RedriveExecution that would
    /// redrive a Map Run once more fails its Map state with `States.Runtime`.
    pub max_map_run_redrives: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_payload_bytes: MAX_PAYLOAD_BYTES,
            max_history_events: MAX_HISTORY_EVENTS,
            max_json_depth: MAX_JSON_DEPTH,
            max_map_items: MAX_MAP_ITEMS,
            max_map_run_redrives: MAX_MAP_RUN_REDRIVES,
        }
    }
}

impl Limits {
    /// No limits at all (each set to `usize::MAX`): for tests that want to observe behaviour
    /// past AWS's quotas. Depth stays bounded by the process stack, so use with trusted data.
    pub fn unlimited() -> Limits {
        Limits {
            max_payload_bytes: usize::MAX,
            max_history_events: usize::MAX,
            max_json_depth: usize::MAX,
            max_map_items: usize::MAX,
            max_map_run_redrives: u32::MAX,
        }
    }

    /// Checks a payload that `who` (a state name, or a task's resource) produced: too deep is
    /// `States.Runtime`, too large is `States.DataLimitExceeded` with AWS's cause text.
    ///
    /// Depth is checked first, without recursion, because measuring the size serializes the
    /// document and serde_json's serializer recurses once per level.
    pub fn check_payload(&self, who: &str, value: &Value) -> Result<(), Failure> {
        // Most payloads are a scalar or a few scalars in one object or array (a Task's result,
        // an item): a rough bound, with no digit counting and no escape scanning, settles them.
        if let Some((bound, depth)) = flat_size_bound(value)
            && bound < self.max_payload_bytes
            && depth <= self.max_json_depth
        {
            return Ok(());
        }
        // One walk checks the depth and bounds the size from above (exactly, but for floats);
        // only a document whose bound reaches the limit is serialized to measure it exactly, so
        // the error fires exactly when the serialized size does.
        let Some(bound) = size_bound(value, self.max_json_depth) else {
            return self.check_depth(who, value);
        };
        if bound >= self.max_payload_bytes && exceeds_size(value, self.max_payload_bytes) {
            return Err(Failure::new(
                wfc_ir::errors::DATA_LIMIT_EXCEEDED,
                format!(
                    "The state/task '{who}' returned a result with a size exceeding the maximum number of bytes service limit."
                ),
            ));
        }
        Ok(())
    }

    /// Checks only the nesting depth of a document (`States.Runtime` when too deep).
    pub fn check_depth(&self, who: &str, value: &Value) -> Result<(), Failure> {
        if exceeds_depth(value, self.max_json_depth) {
            return Err(Failure::runtime(format!(
                "The JSON document of '{who}' is nested more than {} levels deep",
                self.max_json_depth
            )));
        }
        Ok(())
    }

    /// The failure once an execution has recorded `recorded` events and wants to record more.
    #[inline]
    pub fn check_history(&self, recorded: usize) -> Result<(), Failure> {
        if recorded >= self.max_history_events {
            return Err(self.history_full());
        }
        Ok(())
    }

    /// [`Limits::check_history`]'s failure, out of line: every state entry checks the limit.
    #[cold]
    fn history_full(&self) -> Failure {
        Failure::runtime(format!(
            "The execution history reached the limit of {} events; split long loops into child executions",
            self.max_history_events
        ))
    }
}

/// Whether `value` nests arrays/objects more than `max` levels deep (a scalar is depth 0,
/// `[]` is depth 1). Iterative, so it is safe on any document that exists in memory.
pub fn exceeds_depth(value: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        let depth = depth + 1;
        match v {
            Value::Array(_) | Value::Object(_) if depth > max => return true,
            // Scalars are pushed too (cheaply) so that containers are handled in one place.
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, depth))),
            Value::Object(map) => stack.extend(map.values().map(|c| (c, depth))),
            _ => {}
        }
    }
    false
}

/// An upper bound on the compact serialized size of `value` in bytes, or `None` when it nests
/// more than `max_depth` levels deep (see [`exceeds_depth`]). Iterative and allocation-light.
///
/// Exact for every value except floating-point numbers, which count as 24 bytes (the longest
/// text serde_json writes for an `f64`, such as `-2.2250738585072014e-308`); strings count
/// their escapes exactly as serde_json writes them.
pub fn size_bound(value: &Value, max_depth: usize) -> Option<usize> {
    // Most payloads are small and shallow: walk those recursively, without allocating, and hand
    // anything deeper to the iterative walk below.
    shallow_size_bound(value, 0, max_depth).or_else(|| deep_size_bound(value, max_depth))
}

/// A rough upper bound on the serialized size of a scalar, or of an object or array of at most
/// [`FLAT_MEMBERS`] scalars, with its depth (0 or 1); `None` for anything else. Every string
/// counts as if each of its bytes were escaped as `\u00XX` (6 bytes) and every number as 24
/// bytes (the longest an `f64` or `i64` serializes to), so nothing is scanned: what
/// [`Limits::check_payload`] needs to pass the common small payload (the whole check of a
/// Task's `{"n": 1}` ~70 instructions by callgrind, where [`size_bound`] alone took ~150
/// counting digits and looking for escapes).
#[inline]
fn flat_size_bound(value: &Value) -> Option<(usize, usize)> {
    #[inline(always)]
    fn scalar(value: &Value) -> Option<usize> {
        match value {
            Value::Null | Value::Bool(_) => Some(5),
            Value::Number(_) => Some(24),
            Value::String(text) => Some(rough_string_size(text)),
            Value::Array(_) | Value::Object(_) => None,
        }
    }
    match value {
        Value::Object(map) if map.len() <= FLAT_MEMBERS => {
            let mut size = 2 + map.len();
            for (key, member) in map {
                size = size.saturating_add(rough_string_size(key) + 1).saturating_add(scalar(member)?);
            }
            Some((size, 1))
        }
        Value::Array(items) if items.len() <= FLAT_MEMBERS => {
            let mut size = 2 + items.len();
            for item in items {
                size = size.saturating_add(scalar(item)?);
            }
            Some((size, 1))
        }
        Value::Array(_) | Value::Object(_) => None,
        scalar_value => Some((scalar(scalar_value)?, 0)),
    }
}

/// The most members [`flat_size_bound`] looks at.
const FLAT_MEMBERS: usize = 16;

/// An upper bound on a JSON string's serialized length: every byte escaped as `\u00XX`, and
/// the quotes.
#[inline(always)]
fn rough_string_size(text: &str) -> usize {
    text.len().saturating_mul(6).saturating_add(2)
}

/// How deep [`shallow_size_bound`] recurses before it gives up.
const SHALLOW_DEPTH: usize = 16;

/// [`size_bound`] by recursion, for documents at most [`SHALLOW_DEPTH`] levels deep; `None` for
/// deeper ones (and for those over `max_depth`, which [`deep_size_bound`] then reports).
///
/// Every state's output goes through here (a 100 KB document is ~8,000 nodes), so scalars
/// inside a container are measured in the container's loop rather than by a call each.
fn shallow_size_bound(value: &Value, depth: usize, max_depth: usize) -> Option<usize> {
    Some(match value {
        Value::Array(_) | Value::Object(_) if depth + 1 > max_depth.min(SHALLOW_DEPTH) => return None,
        Value::Array(items) => {
            let mut size = 2 + items.len().saturating_sub(1);
            for item in items {
                size = size.saturating_add(member_size_bound(item, depth, max_depth)?);
            }
            size
        }
        Value::Object(map) => {
            // Each key: its text, its quotes and its colon; commas between entries.
            let mut size = 2 + map.len().saturating_sub(1);
            for (key, item) in map {
                size = size
                    .saturating_add(string_size(key) + 1)
                    .saturating_add(member_size_bound(item, depth, max_depth)?);
            }
            size
        }
        scalar => scalar_size(scalar),
    })
}

/// [`shallow_size_bound`] of a member of a container at `depth`: a scalar measured in place,
/// a container by the recursive call. Always inlined into the container's loop (as a closure
/// it was a call of its own for every member, ~45 instructions a scalar).
#[inline(always)]
fn member_size_bound(member: &Value, depth: usize, max_depth: usize) -> Option<usize> {
    match member {
        Value::Array(_) | Value::Object(_) => shallow_size_bound(member, depth + 1, max_depth),
        scalar => Some(scalar_size(scalar)),
    }
}

/// The serialized size of a scalar (a float counted as 24 bytes, see [`size_bound`]).
#[inline(always)]
fn scalar_size(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_bound(n),
        Value::String(text) => string_size(text),
        // Containers are not scalars; [`shallow_size_bound`] never asks.
        Value::Array(_) | Value::Object(_) => 0,
    }
}

/// [`size_bound`] with an explicit stack, for any depth.
fn deep_size_bound(value: &Value, max_depth: usize) -> Option<usize> {
    let mut total = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        let size = match v {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => number_bound(n),
            Value::String(text) => string_size(text),
            Value::Array(items) => {
                if depth + 1 > max_depth {
                    return None;
                }
                stack.extend(items.iter().map(|c| (c, depth + 1)));
                2 + items.len().saturating_sub(1)
            }
            Value::Object(map) => {
                if depth + 1 > max_depth {
                    return None;
                }
                let mut size = 2 + map.len().saturating_sub(1);
                for (key, child) in map {
                    size = size.saturating_add(string_size(key) + 1);
                    stack.push((child, depth + 1));
                }
                size
            }
        };
        total = total.saturating_add(size);
    }
    Some(total)
}

/// The serialized length of an integer, or 24 for a float (see [`size_bound`]).
#[inline(always)]
fn number_bound(n: &serde_json::Number) -> usize {
    fn digits(n: u64) -> usize {
        n.checked_ilog10().map_or(1, |log| log as usize + 1)
    }
    if n.is_f64() {
        24
    } else if let Some(u) = n.as_u64() {
        digits(u)
    } else {
        n.as_i64().map_or(24, |i| 1 + digits(i.unsigned_abs()))
    }
}

/// The serialized length of a JSON string, quotes and escapes included, as serde_json writes
/// it: `"` and `\` and the short control escapes (`\n`…) take two bytes, other control
/// characters six (`\u001f`).
#[inline(always)]
fn string_size(text: &str) -> usize {
    // Most strings need no escape: one pass without early exit (which the compiler can
    // vectorize) finds out, and only a string that has one is measured byte by byte.
    let plain = text.bytes().fold(true, |plain, b| plain & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if plain {
        return text.len() + 2;
    }
    let extra: usize = text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
            0x00..=0x1f => 5,
            _ => 0,
        })
        .sum();
    text.len() + 2 + extra
}

/// The nesting depth of `value` (see [`exceeds_depth`]), computed without recursion.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|c| (c, d + 1))),
            _ => {}
        }
        deepest = deepest.max(match v {
            Value::Array(_) | Value::Object(_) => d + 1,
            _ => d,
        });
    }
    deepest
}

/// Whether the compact JSON serialization of `value` is `max` bytes or more. Stops serializing
/// as soon as the answer is known, so a huge document costs at most `max` bytes of work.
pub fn exceeds_size(value: &Value, max: usize) -> bool {
    let mut counter = Counter { written: 0, max };
    // The only error the counter raises is "limit reached"; serializing a Value cannot fail
    // otherwise (its keys are strings).
    serde_json::to_writer(&mut counter, value).is_err() || counter.written >= max
}

/// The compact serialized size of `value` in bytes.
pub fn size(value: &Value) -> usize {
    let mut counter = Counter { written: 0, max: usize::MAX };
    // Writing to the counter never fails without a limit.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.written
}

/// An `io::Write` that only counts, and fails once `max` bytes have been written.
struct Counter {
    written: usize,
    max: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written = self.written.saturating_add(buf.len());
        if self.written >= self.max {
            return Err(io::Error::other("payload limit reached"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..levels {
            v = json!([v]);
        }
        v
    }

    #[test]
    fn depth_counts_containers() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!([])), 1);
        assert_eq!(depth(&json!({"a": [1, {"b": 2}]})), 3);
        assert_eq!(depth(&nested(600)), 600);
        assert!(exceeds_depth(&nested(513), 512));
        assert!(!exceeds_depth(&nested(512), 512));
    }

    #[test]
    fn size_is_compact_json_length() {
        let v = json!({"a": "é\"", "b": [1, 2.5, null]});
        assert_eq!(size(&v), serde_json::to_string(&v).map(|s| s.len()).unwrap_or(0));
        assert!(exceeds_size(&v, size(&v)));
        assert!(!exceeds_size(&v, size(&v) + 1));
    }

    #[test]
    fn size_bound_is_exact_without_floats_and_bounds_floats() {
        let exact = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(""),
            json!("a\"b\\c\n\u{1}\u{1f}\u{7f}é"),
            json!([]),
            json!({}),
            json!({"k\n": [1, {"a": null, "b": [true, false]}], "": "x"}),
        ];
        for v in exact {
            assert_eq!(size_bound(&v, 512), Some(size(&v)), "{v}");
        }
        for v in [json!(1.5), json!(-2.2250738585072014e-308), json!(1e300), json!([0.1, {"x": 1.0}])] {
            let bound = size_bound(&v, 512).unwrap_or(0);
            assert!(bound >= size(&v), "{v}: {bound} < {}", size(&v));
        }
        assert_eq!(size_bound(&nested(513), 512), None);
        assert!(size_bound(&nested(512), 512).is_some());
    }

    /// The rough bound of small flat payloads is an upper bound, and the payload check still
    /// fires exactly when the serialized size reaches the limit (the rough bound only passes
    /// payloads it proves are under it), and at the same depth limit.
    #[test]
    fn small_flat_payloads_are_checked_exactly() {
        let flat = [
            json!(null),
            json!(false),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(-2.2250738585072014e-308),
            json!("a\"b\\c\n\u{1}\u{1f}é"),
            json!({}),
            json!([]),
            json!({"n": 1}),
            json!({"k\n": "\u{1}", "é": 1e300, "": null, "b": true}),
            json!([1, "x", 2.5, null]),
            Value::Array(vec![json!("\"\""); FLAT_MEMBERS]),
        ];
        for v in flat {
            let (bound, depth) = flat_size_bound(&v).unwrap_or_default();
            assert!(bound >= size(&v), "{v}: {bound}");
            assert_eq!(depth, super::depth(&v), "{v}");
            for max in [1, size(&v) - 1, size(&v), size(&v) + 1, bound, bound + 1] {
                let limits = Limits { max_payload_bytes: max, ..Limits::default() };
                assert_eq!(limits.check_payload("S", &v).is_err(), size(&v) >= max, "{v} at {max}");
            }
            let shallow = Limits { max_json_depth: 0, ..Limits::default() };
            assert_eq!(shallow.check_payload("S", &v).is_err(), depth > 0, "{v}");
        }
        // Not flat: a member that is a container, or more members than it looks at.
        assert_eq!(flat_size_bound(&json!({"a": []})), None);
        assert_eq!(flat_size_bound(&json!([[1]])), None);
        assert_eq!(flat_size_bound(&Value::Array(vec![json!(1); FLAT_MEMBERS + 1])), None);
    }

    #[test]
    fn payload_limit_fires_exactly_at_the_limit_with_floats() {
        // Floats make the bound loose; the exact measurement still decides.
        let floats = json!(vec![0.5; 40_000]); // "0.5" and a comma each: 160,001 bytes
        let limits = Limits { max_payload_bytes: size(&floats), ..Limits::default() };
        assert!(limits.check_payload("F", &floats).is_err());
        let limits = Limits { max_payload_bytes: size(&floats) + 1, ..Limits::default() };
        assert!(limits.check_payload("F", &floats).is_ok());
    }

    #[test]
    fn payload_limit_names_the_state() {
        let big = json!("x".repeat(MAX_PAYLOAD_BYTES));
        let err = Limits::default().check_payload("Big", &big).err();
        assert_eq!(
            err,
            Some(Failure::new(
                wfc_ir::errors::DATA_LIMIT_EXCEEDED,
                "The state/task 'Big' returned a result with a size exceeding the maximum number of bytes service limit."
            ))
        );
        // 2 quote bytes + 262 141 = 262 143 < 262 144: allowed.
        assert!(Limits::default().check_payload("Ok", &json!("x".repeat(MAX_PAYLOAD_BYTES - 3))).is_ok());
        assert!(Limits::default().check_payload("Edge", &json!("x".repeat(MAX_PAYLOAD_BYTES - 2))).is_err());
    }
}
