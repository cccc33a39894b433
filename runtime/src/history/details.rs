//! The details of a history event ([`Details`]): a JSON object whose documents (a state's input
//! and output, a Task's parameters and result) are shared with the execution instead of copied.
//!
//! A Standard execution keeps every event, and every state records its input on entry and its
//! output on exit. Copying each document into its event cost more than everything else a state
//! does (a deep clone on recording, a walk of every copy when the history is dropped). Here an
//! event holds an [`Arc`] of the document, and [`DocumentCache`] hands consecutive events the
//! same `Arc` while the document stays the same (a state's output is the next state's input),
//! so recording is a reference-count increment and the history holds each distinct document
//! once. The JSON is exactly what a [`Value`] of the same fields serializes to.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A field name: the event builders' are static (`"name"`, `"input"`), stored ones owned.
type Key = Cow<'static, str>;

/// The details of one history event: a JSON object (or, when read back or built by hand, any
/// JSON value), serialized exactly as the same [`Value`] is.
///
/// Read it like a `Value` (`details["name"]`, [`Details::get`]); [`Details::to_value`] makes
/// an owned copy.
#[derive(Clone, Default)]
pub struct Details {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// `{"name": name, <key>: document}`, a state's Entered or Exited event: the most common
    /// details, built without a `Vec`. The name is shared too: a state's events carry the same
    /// one (see [`DocumentCache::named`]).
    Named { name: Arc<Value>, key: &'static str, document: Arc<Value> },
    /// Built field by field, in order (the engine's other events).
    Fields(Vec<(Key, Field)>),
    /// Built from a JSON value (hand-built events, events read back from a store). Boxed, so
    /// that every event is as small as the common `Named` details make it: the history is a
    /// `Vec` of events, moved as it grows.
    Value(Box<Value>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Fields(Vec::new())
    }
}

#[derive(Clone)]
enum Field {
    Owned(Value),
    /// A document shared with the execution (and with other events).
    Shared(Arc<Value>),
}

impl Field {
    fn as_ref(&self) -> FieldRef<'_> {
        match self {
            Field::Owned(v) => FieldRef::Value(v),
            Field::Shared(doc) => FieldRef::Shared(doc),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Field::Owned(v) => v,
            Field::Shared(v) => Arc::unwrap_or_clone(v),
        }
    }
}

static NULL: Value = Value::Null;

impl Details {
    /// An empty object (`{}`).
    pub fn new() -> Details {
        Details::default()
    }

    /// An empty object with room for `n` fields.
    pub fn with_capacity(n: usize) -> Details {
        Details { repr: Repr::Fields(Vec::with_capacity(n)) }
    }

    /// `{"name": name, <key>: document}`: a state's Entered (`input`) or Exited (`output`) event.
    pub fn named(name: &str, key: &'static str, document: Arc<Value>) -> Details {
        Details { repr: Repr::Named { name: Arc::new(Value::String(name.to_owned())), key, document } }
    }

    /// The name and the document of details built by [`Details::named`] or
    /// [`DocumentCache::named`] (a state's Entered or Exited event), shared: a state's Exited
    /// event reuses them instead of looking its name up and comparing its document again.
    pub fn named_parts(&self) -> Option<(&Arc<Value>, &Arc<Value>)> {
        match &self.repr {
            Repr::Named { name, document, .. } => Some((name, document)),
            _ => None,
        }
    }

    /// `{"name": name, <key>: document}` from a name and a document already shared (the parts
    /// of another event's details, see [`Details::named_parts`]): two reference counts, nothing
    /// compared or copied.
    pub fn named_shared(name: Arc<Value>, key: &'static str, document: Arc<Value>) -> Details {
        Details { repr: Repr::Named { name, key, document } }
    }

    /// These details with `key` set to `value` (replaced in place when already set, as
    /// [`Map::insert`] does).
    pub fn with(mut self, key: impl Into<Key>, value: Value) -> Details {
        self.insert(key, value);
        self
    }

    /// These details with `key` set to a shared document.
    pub fn with_shared(mut self, key: impl Into<Key>, document: Arc<Value>) -> Details {
        self.set(key.into(), Field::Shared(document));
        self
    }

    /// Sets `key` to `value` (in place when already set, as [`Map::insert`] does). Details
    /// that are not an object (only hand-built ones can be) are left as they are.
    pub fn insert(&mut self, key: impl Into<Key>, value: Value) {
        self.set(key.into(), Field::Owned(value));
    }

    fn set(&mut self, key: Key, field: Field) {
        if let Repr::Named { name, key, document } = &mut self.repr {
            let fields = vec![
                (Key::Borrowed("name"), Field::Owned(Value::clone(name))),
                (Key::Borrowed(*key), Field::Shared(Arc::clone(document))),
            ];
            self.repr = Repr::Fields(fields);
        }
        match &mut self.repr {
            Repr::Fields(fields) => match fields.iter_mut().find(|(k, _)| *k == key) {
                Some((_, slot)) => *slot = field,
                None => fields.push((key, field)),
            },
            Repr::Value(value) => {
                if let Value::Object(map) = &mut **value {
                    map.insert(key.into_owned(), field.into_value());
                }
            }
            Repr::Named { .. } => {}
        }
    }

    /// The value of field `key`, if the details are an object that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.repr {
            Repr::Value(v) => v.get(key),
            _ => self.fields()?.find(|(k, _)| *k == key).map(|(_, v)| v.value()),
        }
    }

    /// The shared document of field `key`, if it holds one (see [`DocumentCache`]).
    pub fn shared(&self, key: &str) -> Option<&Arc<Value>> {
        self.fields()?.find_map(|(k, v)| match v {
            FieldRef::Shared(doc) if k == key => Some(doc),
            _ => None,
        })
    }

    /// The fields in order, when the details are an object.
    fn fields(&self) -> Option<Fields<'_>> {
        match &self.repr {
            Repr::Named { name, key, document } => Some(Fields::Named(Some(&**name), Some((key, document)))),
            Repr::Fields(fields) => Some(Fields::Built(fields.iter())),
            Repr::Value(value) => value.as_object().map(|map| Fields::Map(map.iter())),
        }
    }

    fn len(&self) -> Option<usize> {
        match &self.repr {
            Repr::Named { .. } => Some(2),
            Repr::Fields(fields) => Some(fields.len()),
            Repr::Value(value) => value.as_object().map(Map::len),
        }
    }

    /// A copy as a JSON value.
    pub fn to_value(&self) -> Value {
        match (&self.repr, self.fields()) {
            (Repr::Value(v), _) => Value::clone(v),
            (_, fields) => {
                Value::Object(fields.into_iter().flatten().map(|(k, v)| (k.to_owned(), v.value().clone())).collect())
            }
        }
    }

    /// The details as a JSON value (copying only the documents something else still shares).
    pub fn into_value(self) -> Value {
        match self.repr {
            Repr::Named { name, key, document } => {
                let mut map = Map::with_capacity(2);
                map.insert("name".to_owned(), Arc::unwrap_or_clone(name));
                map.insert(key.to_owned(), Arc::unwrap_or_clone(document));
                Value::Object(map)
            }
            Repr::Fields(fields) => {
                Value::Object(fields.into_iter().map(|(k, f)| (k.into_owned(), f.into_value())).collect())
            }
            Repr::Value(v) => *v,
        }
    }
}

/// The fields of a [`Details`] object, whichever way it was built.
enum Fields<'a> {
    Named(Option<&'a Value>, Option<(&'static str, &'a Arc<Value>)>),
    Built(std::slice::Iter<'a, (Key, Field)>),
    Map(serde_json::map::Iter<'a>),
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, FieldRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Fields::Named(name, document) => match name.take() {
                Some(name) => Some(("name", FieldRef::Value(name))),
                None => document.take().map(|(key, doc)| (key, FieldRef::Shared(doc))),
            },
            Fields::Built(it) => it.next().map(|(k, f)| (k.as_ref(), f.as_ref())),
            Fields::Map(it) => it.next().map(|(k, v)| (k.as_str(), FieldRef::Value(v))),
        }
    }
}

/// One field's value, telling a shared document apart (for [`EventWriter`]).
#[derive(Clone, Copy)]
enum FieldRef<'a> {
    Value(&'a Value),
    Shared(&'a Arc<Value>),
}

impl<'a> FieldRef<'a> {
    fn value(self) -> &'a Value {
        match self {
            FieldRef::Value(v) => v,
            FieldRef::Shared(doc) => doc,
        }
    }
}

impl std::ops::Index<&str> for Details {
    type Output = Value;

    /// The value of field `key`, `null` when absent (as indexing a [`Value`] does).
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

impl From<Value> for Details {
    fn from(value: Value) -> Details {
        Details { repr: Repr::Value(Box::new(value)) }
    }
}

impl From<Map<String, Value>> for Details {
    fn from(map: Map<String, Value>) -> Details {
        Details { repr: Repr::Value(Box::new(Value::Object(map))) }
    }
}

impl From<Details> for Value {
    fn from(details: Details) -> Value {
        details.into_value()
    }
}

/// Equal as JSON values are (an object's key order does not matter), however each was built.
impl PartialEq for Details {
    fn eq(&self, other: &Details) -> bool {
        match (self.fields(), &other.repr) {
            (None, Repr::Value(b)) => matches!(&self.repr, Repr::Value(a) if a == b),
            (None, _) => false,
            (Some(mut fields), _) => self.len() == other.len() && fields.all(|(k, v)| other.get(k) == Some(v.value())),
        }
    }
}

impl PartialEq<Value> for Details {
    fn eq(&self, other: &Value) -> bool {
        match (&self.repr, self.fields(), other) {
            (Repr::Value(v), _, other) => **v == *other,
            (_, Some(mut fields), Value::Object(map)) => {
                self.len() == Some(map.len()) && fields.all(|(k, v)| map.get(k) == Some(v.value()))
            }
            _ => false,
        }
    }
}

impl Serialize for Details {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Repr::Value(v) = &self.repr {
            return v.serialize(serializer);
        }
        let mut map = serializer.serialize_map(self.len())?;
        for (k, v) in self.fields().into_iter().flatten() {
            map.serialize_entry(k, v.value())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Details, D::Error> {
        Value::deserialize(deserializer).map(Details::from)
    }
}

/// Compact JSON, as a [`Value`] displays.
impl fmt::Display for Details {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl fmt::Debug for Details {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Details({self})")
    }
}

/// Hands out shared copies of the documents events record: the last document handed out is
/// handed out again (its [`Arc`]) while the next one is the same JSON, which is the common case
/// (a state's input is the previous state's output, and a Task's parameters, result and
/// output are often its input or each other). A different document is copied once.
///
/// "The same" is exact: the same key order and the same numbers (`1` and `1.0`, `0.0` and
/// `-0.0` differ), so the shared document serializes exactly as the recorded one would.
#[derive(Debug, Default)]
pub struct DocumentCache {
    last: Mutex<Recent>,
}

/// What [`DocumentCache`] hands out again: the last document, and the names of the last few
/// states (a Choice and the Pass it loops through, a Task's neighbours).
#[derive(Debug, Default)]
struct Recent {
    document: Option<Arc<Value>>,
    names: [Option<Arc<Value>>; NAMES],
    /// The slot the next new name takes (round robin).
    next_name: usize,
}

/// How many state names [`DocumentCache`] keeps: enough for the states of a short loop.
const NAMES: usize = 4;

impl Recent {
    fn name(&self, name: &str) -> Option<Arc<Value>> {
        self.names.iter().flatten().find(|n| n.as_str() == Some(name)).cloned()
    }
}

impl DocumentCache {
    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A shared copy of `document`.
    pub fn share(&self, document: &Value) -> Arc<Value> {
        // The comparison and the copy run outside the lock: Parallel branches record at once.
        let last = self.recent().document.clone();
        self.share_after(last, document)
    }

    fn share_after(&self, last: Option<Arc<Value>>, document: &Value) -> Arc<Value> {
        if let Some(last) = last
            && same_json(&last, document)
        {
            return last;
        }
        let shared = Arc::new(document.clone());
        self.recent().document = Some(Arc::clone(&shared));
        shared
    }

    /// `{"name": name, <key>: document}` (a state's Entered or Exited event, as
    /// [`Details::named`]) with the document shared as [`DocumentCache::share`] shares it and
    /// the name shared with the other events of the last few states that carry it.
    pub fn named(&self, name: &str, key: &'static str, document: &Value) -> Details {
        let (last, known) = {
            let recent = self.recent();
            (recent.document.clone(), recent.name(name))
        };
        let document = self.share_after(last, document);
        let name = known.unwrap_or_else(|| {
            let shared = Arc::new(Value::String(name.to_owned()));
            let mut recent = self.recent();
            let slot = recent.next_name;
            recent.names[slot] = Some(Arc::clone(&shared));
            recent.next_name = (slot + 1) % NAMES;
            shared
        });
        Details { repr: Repr::Named { name, key, document } }
    }

    /// [`DocumentCache::named`] for a state whose name is already shared (its Entered event's,
    /// see [`Details::named_parts`]): the document is shared as [`DocumentCache::share`] shares
    /// it, the name is not looked up again.
    pub fn named_as(&self, name: Arc<Value>, key: &'static str, document: &Value) -> Details {
        let last = self.recent().document.clone();
        Details { repr: Repr::Named { name, key, document: self.share_after(last, document) } }
    }

    /// [`DocumentCache::named_as`] for a document the state has just built (a Pass's output
    /// made whole by its `Result` or Parameters): it is copied without comparing it with the
    /// last document first, since it is rarely the same. (When it is, the history holds one
    /// more copy; the JSON is the same.) It becomes the document the next event shares.
    pub fn named_new(&self, name: Arc<Value>, key: &'static str, document: &Value) -> Details {
        Details { repr: Repr::Named { name, key, document: self.share_after(None, document) } }
    }

    /// [`DocumentCache::named_new`] copying `document` into `spare`, a value the state no
    /// longer needs (a Pass's input, which the history already holds): its allocations (an
    /// object's entries, index table and keys, an array's buffer, a string's) are reused
    /// where `document` has the same shape, so the copy allocates only its `Arc`.
    pub fn named_new_into(&self, name: Arc<Value>, key: &'static str, document: &Value, spare: Value) -> Details {
        let shared = Arc::new(clone_into(spare, document));
        self.recent().document = Some(Arc::clone(&shared));
        Details { repr: Repr::Named { name, key, document: shared } }
    }

    /// `document`, made the last one handed out: for a document that is already shared.
    pub fn adopt(&self, document: Arc<Value>) -> Arc<Value> {
        self.recent().document = Some(Arc::clone(&document));
        document
    }
}

/// A copy of `document` made in `spare`'s allocations where both are objects, arrays or
/// strings (`Map::clone_from` keeps the order of `document`'s keys: the copy is the same JSON),
/// else an ordinary clone.
fn clone_into(spare: Value, document: &Value) -> Value {
    match (spare, document) {
        (Value::Object(mut map), Value::Object(from)) => {
            map.clone_from(from);
            Value::Object(map)
        }
        (Value::Array(mut items), Value::Array(from)) => {
            items.clone_from(from);
            Value::Array(items)
        }
        (Value::String(mut text), Value::String(from)) => {
            text.clone_from(from);
            Value::String(text)
        }
        (_, document) => document.clone(),
    }
}

/// Whether `a` and `b` serialize to the same JSON text (unlike `==`, which ignores key order).
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        // `0.0 == -0.0`, but they print differently: floats compare by their bits (integers,
        // the common case, without converting them).
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, vx), (ky, vy))| kx == ky && same_json(vx, vy))
        }
        _ => false,
    }
}

/// Writes events as JSON text one at a time (a store's rows, JSON lines), exactly as
/// `serde_json::to_string` of each would, but serializes a shared document once for
/// consecutive events that hold it (a state's Exited output and the next state's Entered
/// input).
#[derive(Debug, Default)]
pub struct EventWriter {
    /// The last shared document written and its JSON text.
    last: Option<(Arc<Value>, String)>,
}

impl EventWriter {
    /// A writer with nothing cached.
    pub fn new() -> EventWriter {
        EventWriter::default()
    }

    /// `event` as compact JSON.
    pub fn to_json(&mut self, event: &super::HistoryEvent) -> Result<String, serde_json::Error> {
        let mut out = Vec::with_capacity(128);
        self.write_json(event, &mut out)?;
        String::from_utf8(out).map_err(<serde_json::Error as serde::ser::Error>::custom)
    }

    /// Appends `event` as compact JSON to `out` (a store's row of many events), as
    /// [`EventWriter::to_json`] writes it, without a `String` per field.
    pub fn write_json(&mut self, event: &super::HistoryEvent, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        use std::io::Write as _;
        let io = <serde_json::Error as serde::ser::Error>::custom;
        write!(out, "{{\"id\":{},\"previousEventId\":{},\"timestamp\":", event.id, event.previous_event_id)
            .map_err(io)?;
        serde_json::to_writer(&mut *out, &event.timestamp)?;
        out.extend_from_slice(b",\"type\":");
        serde_json::to_writer(&mut *out, &event.event_type)?;
        out.extend_from_slice(b",\"details\":");
        match event.details.fields() {
            Some(fields) => {
                out.push(b'{');
                for (i, (key, value)) in fields.enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, key)?;
                    out.push(b':');
                    match value {
                        FieldRef::Shared(doc) => out.extend_from_slice(self.document(doc)?.as_bytes()),
                        FieldRef::Value(v) => serde_json::to_writer(&mut *out, v)?,
                    }
                }
                out.push(b'}');
            }
            None => serde_json::to_writer(&mut *out, &event.details)?,
        }
        out.push(b'}');
        Ok(())
    }

    fn document(&mut self, doc: &Arc<Value>) -> Result<&str, serde_json::Error> {
        let cached = self.last.as_ref().is_some_and(|(last, _)| Arc::ptr_eq(last, doc));
        if !cached {
            self.last = Some((Arc::clone(doc), serde_json::to_string(doc.as_ref())?));
        }
        Ok(self.last.as_ref().map_or("", |(_, text)| text.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_details_serialize_as_the_same_value() {
        let doc = Arc::new(json!({"b": 1, "a": [1.0, -0.0, "x"]}));
        let d = Details::named("S", "input", Arc::clone(&doc)).with("extra", json!(null));
        let expected = json!({"name": "S", "input": {"b": 1, "a": [1.0, -0.0, "x"]}, "extra": null});
        assert_eq!(serde_json::to_string(&d).ok(), serde_json::to_string(&expected).ok());
        assert_eq!(d, expected);
        assert_eq!(d, Details::from(expected.clone()));
        assert_eq!(d.to_value(), expected);
        assert_eq!(d["input"]["b"], 1);
        assert_eq!(d["missing"], Value::Null);
        assert!(d.shared("input").is_some_and(|s| Arc::ptr_eq(s, &doc)));
        assert_eq!(d.to_string(), expected.to_string());
        // Replacing a field keeps its place, as `Map::insert` does.
        let d = d.with("name", json!("T"));
        assert_eq!(
            serde_json::to_string(&d).ok().as_deref(),
            Some(r#"{"name":"T","input":{"b":1,"a":[1.0,-0.0,"x"]},"extra":null}"#)
        );
        let round: Details = serde_json::from_str(&d.to_string()).unwrap_or_default();
        assert_eq!(round, d);
    }

    #[test]
    fn details_are_as_small_as_a_state_event_needs() {
        // A history is a `Vec` of events, moved as it grows: the details of a state's event
        // (two `Arc`s and a key) set the size, not a `Value` held inline.
        assert!(std::mem::size_of::<Details>() <= 5 * std::mem::size_of::<usize>());
        let read_back = Details::from(json!({"name": "A", "input": {"i": 1}}));
        assert_eq!(read_back["input"]["i"], 1);
        assert_eq!(
            read_back.clone().with("extra", json!(2)).into_value(),
            json!({"name": "A", "input": {"i": 1}, "extra": 2})
        );
        assert!(Details::from(json!([1])).named_parts().is_none());
    }

    #[test]
    fn an_exited_event_reuses_the_entered_events_parts() {
        let cache = DocumentCache::default();
        let entered = cache.named("S", "input", &json!({"i": 1}));
        let Some((name, doc)) = entered.named_parts() else { panic!("named details have parts") };
        let unchanged = Details::named_shared(Arc::clone(name), "output", Arc::clone(doc));
        assert_eq!(serde_json::to_string(&unchanged).ok().as_deref(), Some(r#"{"name":"S","output":{"i":1}}"#));
        // The same JSON is shared; a new document is copied, and shared by the next event.
        let same = cache.named_as(Arc::clone(name), "output", &json!({"i": 1}));
        assert!(same.named_parts().is_some_and(|(_, d)| Arc::ptr_eq(d, doc)));
        let built = cache.named_new(Arc::clone(name), "output", &json!({"i": 2}));
        assert_eq!(built, json!({"name": "S", "output": {"i": 2}}));
        let next = cache.named("T", "input", &json!({"i": 2}));
        let shared = built.named_parts().zip(next.named_parts()).is_some_and(|((_, a), (_, b))| Arc::ptr_eq(a, b));
        assert!(shared);
        // A document built anew is copied even when it is the same JSON: the text is the same.
        let again = cache.named_new(Arc::clone(name), "output", &json!({"i": 2}));
        assert_eq!(serde_json::to_string(&again).ok(), serde_json::to_string(&built).ok());
    }

    #[test]
    fn a_copy_into_a_spent_value_is_the_same_json_and_reuses_its_buffers() {
        let cache = DocumentCache::default();
        let name = Arc::new(json!("Increment"));
        let cases = [
            // Same shape (the counting loop's Pass): keys in the document's order, not the spare's.
            (json!({"b": 1, "a": "x"}), json!({"a": "longer text", "b": [1, 2.5, -0.0]})),
            (json!({"i": 1}), json!({"i": 2})),
            (json!({"i": 1, "j": 2, "k": 3}), json!({"i": 2})),
            (json!([1, 2, 3]), json!([{"x": 1}])),
            (json!("spent"), json!("copied")),
            // Different shapes: an ordinary copy.
            (json!({"i": 1}), json!([1])),
            (json!(null), json!({"i": 2})),
        ];
        for (spare, document) in cases {
            let details = cache.named_new_into(Arc::clone(&name), "output", &document, spare);
            let expected = serde_json::to_string(&json!({"name": "Increment", "output": document})).ok();
            assert_eq!(serde_json::to_string(&details).ok(), expected);
            // It is the document the next event shares.
            let next = cache.named("Check", "input", &document);
            let shared =
                details.named_parts().zip(next.named_parts()).is_some_and(|((_, a), (_, b))| Arc::ptr_eq(a, b));
            assert!(shared);
        }
        // An object's entries are copied into the spare's own buffer.
        let spare = json!({"i": 1});
        let entries = spare.as_object().and_then(|m| m.get("i")).map(|v| v as *const Value);
        let copy = clone_into(spare, &json!({"i": 2}));
        assert_eq!(copy.as_object().and_then(|m| m.get("i")).map(|v| v as *const Value), entries);
    }

    #[test]
    fn the_cache_shares_only_the_same_json() {
        let cache = DocumentCache::default();
        let a = cache.share(&json!({"i": 1}));
        assert!(Arc::ptr_eq(&a, &cache.share(&json!({"i": 1}))));
        // Different text: a new copy each time.
        for other in [json!({"i": 1.0}), json!({"i": 2}), json!({"j": 1}), json!([1])] {
            assert!(!Arc::ptr_eq(&a, &cache.share(&other)));
        }
        let zero = cache.share(&json!(0.0));
        assert!(!Arc::ptr_eq(&zero, &cache.share(&json!(-0.0))));
        // Key order matters: `==` calls these equal, their JSON differs.
        let ab = cache.share(&json!({"a": 1, "b": 2}));
        let ba: Value = serde_json::from_str(r#"{"b": 2, "a": 1}"#).unwrap_or_default();
        assert_eq!(*ab, ba);
        assert!(!Arc::ptr_eq(&ab, &cache.share(&ba)));
    }

    #[test]
    fn named_details_share_the_names_of_recent_states() {
        let cache = DocumentCache::default();
        let doc = json!({"i": 1});
        let name_of = |d: &Details| match &d.repr {
            Repr::Named { name, .. } => Some(Arc::clone(name)),
            _ => None,
        };
        let entered = cache.named("Check", "input", &doc);
        let exited = cache.named("Check", "output", &doc);
        assert_eq!(entered, json!({"name": "Check", "input": {"i": 1}}));
        assert_eq!(serde_json::to_string(&exited).ok().as_deref(), Some(r#"{"name":"Check","output":{"i":1}}"#));
        assert!(name_of(&entered).zip(name_of(&exited)).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b)));
        // Five other states push "Check" out of the four kept; it is made again, same text.
        for other in ["A", "B", "C", "D", "E"] {
            assert_eq!(cache.named(other, "input", &doc)["name"], json!(other));
        }
        let again = cache.named("Check", "input", &doc);
        assert_eq!(again, entered);
        assert!(name_of(&again).zip(name_of(&entered)).is_some_and(|(a, b)| !Arc::ptr_eq(&a, &b)));
        // A name that is a prefix of a kept one is not taken for it.
        assert_eq!(cache.named("Chec", "input", &doc)["name"], json!("Chec"));
    }

    #[test]
    fn the_writer_writes_what_serde_does() {
        use super::super::{EventType, HistoryEvent};
        let doc = Arc::new(json!({"big": "x".repeat(100), "n": [1, 2.5]}));
        let events = [
            HistoryEvent {
                id: 1,
                previous_event_id: 0,
                timestamp: "t\"1".into(),
                event_type: EventType::PassStateExited,
                details: Details::named("A", "output", Arc::clone(&doc)),
            },
            HistoryEvent {
                id: 2,
                previous_event_id: 1,
                timestamp: "t2".into(),
                event_type: EventType::PassStateEntered,
                details: Details::named("B\n", "input", Arc::clone(&doc)),
            },
            HistoryEvent {
                id: 3,
                previous_event_id: 2,
                timestamp: "t3".into(),
                event_type: EventType::TaskFailed,
                details: json!({"error": "E", "cause": "c"}).into(),
            },
            HistoryEvent {
                id: 4,
                previous_event_id: 3,
                timestamp: "t4".into(),
                event_type: EventType::TaskFailed,
                details: Value::Null.into(),
            },
        ];
        let mut writer = EventWriter::new();
        for event in &events {
            assert_eq!(writer.to_json(event).ok(), serde_json::to_string(event).ok());
        }
    }
}
