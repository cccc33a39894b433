//! When a history event happened ([`EventTime`]): AWS's text, written only when it is read.
//!
//! Every event carries a timestamp, and a Standard execution keeps every event. Formatting each
//! into a `String` when it was recorded (and freeing it with the history) cost more than any
//! other part of recording a state's events but sharing its documents. The engine's events now
//! hold the instant (milliseconds since the epoch) and write the text when it is serialized
//! (into a stack buffer) or read as a `&str` (made once, on first read).

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// 10000-01-01T00:00:00Z in seconds since the epoch: past it, the text is jiff's (see
/// [`crate::clock::format_timestamp`]).
const YEAR_10000: i64 = 253_402_300_800;

/// When a history event happened, as AWS writes it: RFC 3339, UTC, milliseconds, `Z`
/// (`2024-01-01T00:00:00.000Z`), exactly the text [`crate::clock::format_timestamp`] gives.
///
/// Reads as that text: it dereferences to a `&str`, compares with strings, and serializes and
/// deserializes as a JSON string. Events the engine records hold their instant and write the
/// text only when something reads it; events read back from a store or built by hand hold
/// their text as it was given.
#[derive(Clone)]
pub struct EventTime {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// Stamped by the engine (1970 to 9999): milliseconds since the epoch, and the text once
    /// something has read it as a `&str`.
    At { millis: i64, text: OnceLock<Box<str>> },
    /// Text given as it is (read back, built by hand, or an instant outside 1970 to 9999).
    Text(Box<str>),
}

impl EventTime {
    /// The time an event recorded at `at` carries.
    pub fn at(at: jiff::Timestamp) -> EventTime {
        // Whole milliseconds from 1970 on (an instant just before 1970 has 0 seconds and
        // negative milliseconds): the ones `timestamp_text` writes.
        let millis = at.as_millisecond();
        let repr = if (0..YEAR_10000 * 1000).contains(&millis) {
            Repr::At { millis, text: OnceLock::new() }
        } else {
            Repr::Text(crate::clock::format_timestamp(at).into_boxed_str())
        };
        EventTime { repr }
    }

    /// The text as [`crate::clock::format_timestamp`] writes it.
    pub fn as_str(&self) -> &str {
        match &self.repr {
            Repr::Text(text) => text,
            Repr::At { millis, text } => text.get_or_init(|| match Self::write(*millis) {
                Some(buf) => std::str::from_utf8(&buf).unwrap_or_default().into(),
                None => String::new().into_boxed_str(),
            }),
        }
    }

    /// The text of an instant stamped by the engine, in a stack buffer.
    fn write(millis: i64) -> Option<[u8; 24]> {
        jiff::Timestamp::from_millisecond(millis).ok().and_then(crate::clock::timestamp_text)
    }

    /// Calls `f` with the text, without keeping a copy of it (serializing an event the engine
    /// stamped writes its text on the stack).
    fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match &self.repr {
            Repr::At { millis, text } if text.get().is_none() => match Self::write(*millis) {
                Some(buf) => f(std::str::from_utf8(&buf).unwrap_or_default()),
                None => f(self.as_str()),
            },
            _ => f(self.as_str()),
        }
    }
}

impl Default for EventTime {
    /// The empty text.
    fn default() -> EventTime {
        EventTime { repr: Repr::Text(Box::default()) }
    }
}

impl std::ops::Deref for EventTime {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for EventTime {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<jiff::Timestamp> for EventTime {
    fn from(at: jiff::Timestamp) -> EventTime {
        EventTime::at(at)
    }
}

impl From<String> for EventTime {
    fn from(text: String) -> EventTime {
        EventTime { repr: Repr::Text(text.into_boxed_str()) }
    }
}

impl From<&str> for EventTime {
    fn from(text: &str) -> EventTime {
        EventTime { repr: Repr::Text(text.into()) }
    }
}

impl From<EventTime> for String {
    fn from(time: EventTime) -> String {
        match time.repr {
            Repr::Text(text) => text.into_string(),
            Repr::At { .. } => time.as_str().to_owned(),
        }
    }
}

/// Equal when the texts are.
impl PartialEq for EventTime {
    fn eq(&self, other: &EventTime) -> bool {
        match (&self.repr, &other.repr) {
            (Repr::At { millis: a, .. }, Repr::At { millis: b, .. }) => a == b,
            _ => self.as_str() == other.as_str(),
        }
    }
}

impl Eq for EventTime {}

impl PartialEq<str> for EventTime {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EventTime {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for EventTime {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl fmt::Display for EventTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

impl fmt::Debug for EventTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_text(|text| fmt::Debug::fmt(text, f))
    }
}

impl Serialize for EventTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.with_text(|text| serializer.serialize_str(text))
    }
}

impl<'de> Deserialize<'de> for EventTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EventTime, D::Error> {
        String::deserialize(deserializer).map(EventTime::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_reads_as_format_timestamp_writes_it() {
        for text in [
            "1970-01-01T00:00:00.000Z",
            "2024-02-29T23:59:59.999Z",
            "2024-01-01T00:00:00.007Z",
            "9998-12-31T23:59:59.999Z",
            "1969-12-31T23:59:59.999Z",
            "0001-01-01T00:00:00.000Z",
        ] {
            let Ok(at) = text.parse::<jiff::Timestamp>() else { panic!("{text} parses") };
            let time = EventTime::at(at);
            assert_eq!(time.to_string(), crate::clock::format_timestamp(at));
            assert_eq!(serde_json::to_string(&time).ok(), serde_json::to_string(text).ok());
            assert_eq!(format!("{time:?}"), format!("{text:?}"));
            assert_eq!(&*time, text);
            assert_eq!(time, EventTime::from(text));
            assert_eq!(EventTime::from(text), time);
            assert_eq!(String::from(time.clone()), text);
            let back: EventTime =
                serde_json::from_str(&serde_json::to_string(&time).unwrap_or_default()).unwrap_or_default();
            assert_eq!(back, time);
        }
        // Sub-millisecond digits are cut, as the text shows only milliseconds.
        let Ok(at) = "2024-01-01T00:00:00.123999Z".parse::<jiff::Timestamp>() else { panic!("parses") };
        assert_eq!(EventTime::at(at), "2024-01-01T00:00:00.123Z");
        assert_ne!(EventTime::from("t"), EventTime::default());
        assert_eq!(EventTime::default(), "");
    }
}
