//! Timestamps in the ASL profile of RFC 3339: `YYYY-MM-DDTHH:MM:SS(.f{1,9})?(Z|±HH:MM)` with an
//! uppercase `T` and `Z`. jiff alone is more lenient than ASL (it accepts a lowercase `t`, a
//! space, missing seconds), so a strict shape check runs first and jiff does the arithmetic.

/// Why a string is not an ASL timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not an RFC 3339 timestamp of the form YYYY-MM-DDTHH:MM:SSZ (uppercase T and Z, or a ±HH:MM offset): {reason}"
)]
pub struct TimestampError {
    /// The rejected text.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses an ASL timestamp strictly.
pub fn parse(text: &str) -> Result<jiff::Timestamp, TimestampError> {
    let fail = |reason: &str| TimestampError { text: text.to_owned(), reason: reason.to_owned() };
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| b.get(range.clone()).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if !(digits(0..4) && b.get(4) == Some(&b'-') && digits(5..7) && b.get(7) == Some(&b'-') && digits(8..10)) {
        return Err(fail("the date must be YYYY-MM-DD"));
    }
    if b.get(10) != Some(&b'T') {
        return Err(fail("the date and time must be separated by an uppercase T"));
    }
    if !(digits(11..13) && b.get(13) == Some(&b':') && digits(14..16) && b.get(16) == Some(&b':') && digits(17..19)) {
        return Err(fail("the time must be HH:MM:SS"));
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start || i - start > 9 {
            return Err(fail("fractional seconds must have 1 to 9 digits"));
        }
    }
    match b.get(i) {
        Some(b'Z') if i + 1 == b.len() => {}
        Some(b'+' | b'-') if i + 6 == b.len() && digits(i + 1..i + 3) && b[i + 3] == b':' && digits(i + 4..i + 6) => {}
        Some(b'z') => return Err(fail("the UTC designator must be an uppercase Z")),
        _ => return Err(fail("the time must end in Z or a ±HH:MM offset")),
    }
    text.parse::<jiff::Timestamp>().map_err(|e| fail(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn accepts_the_asl_profile() {
        for ok in [
            "2016-03-14T01:59:00Z",
            "2016-03-14T01:59:00.123Z",
            "2016-03-14T01:59:00+01:00",
            "2016-03-14T01:59:00.123456789-05:30",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_what_jiff_would_accept() {
        for bad in [
            "2016-03-14t01:59:00Z",
            "2016-03-14 01:59:00Z",
            "2016-03-14T01:59Z",
            "20160314T015900Z",
            "2016-03-14T01:59:00z",
            "2016-03-14T01:59:00.1234567891Z",
            "2016-02-30T01:59:00Z",
            "",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn offsets_compare_as_instants() {
        assert_eq!(parse("2016-03-14T01:59:00Z").unwrap(), parse("2016-03-14T02:59:00+01:00").unwrap());
    }
}
