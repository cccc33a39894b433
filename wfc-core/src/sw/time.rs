//! ISO 8601 durations and repeating intervals, and cron expressions, as the SW draft uses them.

use wfc_ir::sw::Interval;

/// Parses an ISO 8601 duration (`PT2M`, `P1DT12H`, `P2W`, `PT0.5S`) into seconds.
///
/// Years and months have no fixed length, so they are refused rather than guessed.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let rest = text
        .strip_prefix('P')
        .ok_or_else(|| format!("`{text}` is not an ISO 8601 duration (it must start with `P`, as in `PT30S`)"))?;
    if rest.is_empty() {
        return Err(format!("`{text}` has no duration after `P`"));
    }
    let mut total = 0.0;
    let mut in_time = false;
    let mut number = String::new();
    let mut any = false;
    let mut last_rank = 0u8;
    for c in rest.chars() {
        match c {
            'T' if !in_time && number.is_empty() => {
                in_time = true;
                last_rank = 2;
            }
            '0'..='9' | '.' | ',' => number.push(if c == ',' { '.' } else { c }),
            unit => {
                if number.is_empty() {
                    return Err(format!("`{text}`: `{unit}` has no number before it"));
                }
                let n: f64 = number.parse().map_err(|_| format!("`{text}`: `{number}` is not a number"))?;
                let (seconds, rank) = match (in_time, unit) {
                    (false, 'W') => (604_800.0, 1),
                    (false, 'D') => (86_400.0, 2),
                    (true, 'H') => (3_600.0, 3),
                    (true, 'M') => (60.0, 4),
                    (true, 'S') => (1.0, 5),
                    (false, 'Y' | 'M') => {
                        return Err(format!(
                            "`{text}`: years and months have no fixed length; write the duration in weeks, days or smaller units"
                        ));
                    }
                    _ => return Err(format!("`{text}`: `{unit}` is not a duration unit here")),
                };
                if rank <= last_rank && !(rank == 2 && last_rank == 1) {
                    return Err(format!("`{text}`: units must be in order (W, D, then T H M S) and not repeat"));
                }
                last_rank = rank;
                total += n * seconds;
                number.clear();
                any = true;
            }
        }
    }
    if !number.is_empty() {
        return Err(format!("`{text}`: the number `{number}` has no unit"));
    }
    if !any {
        return Err(format!("`{text}` has no duration"));
    }
    if !total.is_finite() || total > 1.0e10 {
        return Err(format!("`{text}` is too long"));
    }
    Ok(total)
}

/// Parses a retry `interval`: a duration, or `R<n>/<duration>` (a repeat count and a duration).
pub fn parse_retry_interval(text: &str) -> Result<(Option<u64>, f64), String> {
    if let Some(rest) = text.strip_prefix('R') {
        let (count, duration) = rest.split_once('/').ok_or_else(|| format!("`{text}`: expected `R<n>/<duration>`"))?;
        let count = if count.is_empty() {
            None
        } else {
            Some(count.parse::<u64>().map_err(|_| format!("`{text}`: `{count}` is not a repeat count"))?)
        };
        return Ok((count, parse_duration(duration)?));
    }
    Ok((None, parse_duration(text)?))
}

/// Parses an ISO 8601 interval, optionally repeating: `R5/PT15M`, `<start>/<end>`,
/// `<start>/<duration>`, `<duration>/<end>`, or a bare `<duration>`.
pub fn parse_interval(text: &str) -> Result<Interval, String> {
    let mut parts: Vec<&str> = text.split('/').collect();
    let mut repeat = None;
    if parts.first().is_some_and(|p| p.starts_with('R')) {
        let r = &parts[0][1..];
        repeat = if r.is_empty() {
            None
        } else {
            Some(r.parse::<u64>().map_err(|_| format!("`{text}`: `{r}` is not a repeat count"))?)
        };
        parts.remove(0);
    }
    let instant = |s: &str| -> Result<jiff::Timestamp, String> {
        s.parse::<jiff::Timestamp>()
            .map_err(|e| format!("`{s}` is not an RFC 3339 instant with a time zone offset: {e}"))
    };
    // Durations in intervals may use years and months (`P1Y2M10DT2H30M`): they are measured
    // from the interval's own start or end, or from 2020-01-01 for a bare duration.
    let span = |d: &str, anchor: jiff::Timestamp, backwards: bool| -> Result<f64, String> {
        let span: jiff::Span = d.parse().map_err(|e| format!("`{d}` is not an ISO 8601 duration: {e}"))?;
        let zoned = anchor.to_zoned(jiff::tz::TimeZone::UTC);
        let other = if backwards { zoned.checked_sub(span) } else { zoned.checked_add(span) }
            .map_err(|e| format!("`{d}`: {e}"))?;
        Ok(if backwards { zoned.duration_since(&other) } else { other.duration_since(&zoned) }.as_secs_f64())
    };
    let epoch = jiff::Timestamp::from_second(1_577_836_800).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let (start, end, period) = match parts.as_slice() {
        [d] if d.starts_with('P') => (None, None, span(d, epoch, false)?),
        [d, e] if d.starts_with('P') => {
            let end = instant(e)?;
            (None, Some((*e).to_owned()), span(d, end, true)?)
        }
        [s, d] if d.starts_with('P') => {
            let start = instant(s)?;
            (Some((*s).to_owned()), None, span(d, start, false)?)
        }
        [s, e] => {
            let (a, b) = (instant(s)?, instant(e)?);
            let secs = b.duration_since(a).as_secs_f64();
            if secs <= 0.0 {
                return Err(format!("`{text}`: the end is not after the start"));
            }
            (Some((*s).to_owned()), Some((*e).to_owned()), secs)
        }
        _ => {
            return Err(format!(
                "`{text}` is not an ISO 8601 interval (`R/PT1H`, `<start>/<end>`, `<start>/<duration>` or `<duration>/<end>`)"
            ));
        }
    };
    if period <= 0.0 {
        return Err(format!("`{text}`: the interval's period must be positive"));
    }
    Ok(Interval { repeat, start, end, period_seconds: period })
}

/// Checks a cron expression (see [`wfc_ir::cron`]).
pub fn check_cron(text: &str) -> Result<(), String> {
    wfc_ir::cron::Cron::parse(text).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("PT2M"), Ok(120.0));
        assert_eq!(parse_duration("P1DT1H"), Ok(90_000.0));
        assert_eq!(parse_duration("P2W"), Ok(1_209_600.0));
        assert_eq!(parse_duration("PT0.5S"), Ok(0.5));
        assert!(parse_duration("2M").is_err());
        assert!(parse_duration("P1M").is_err());
        assert!(parse_duration("PT").is_err());
        assert!(parse_duration("PT5").is_err());
        assert!(parse_duration("PT1S1M").is_err());
        assert_eq!(parse_retry_interval("R5/PT15M"), Ok((Some(5), 900.0)));
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("R/PT2M").map(|i| i.period_seconds), Ok(120.0));
        assert_eq!(parse_interval("R3/PT1H").map(|i| i.repeat), Ok(Some(3)));
        let i = parse_interval("2020-03-20T09:00:00Z/2020-03-20T15:00:00Z");
        assert_eq!(i.map(|i| i.period_seconds), Ok(21_600.0));
        assert!(parse_interval("2020-03-20T09:00:00Z/PT2H").is_ok());
        assert!(parse_interval("PT2H/2020-03-20T09:00:00Z").is_ok());
        assert!(parse_interval("soon").is_err());
        assert!(parse_interval("2020-03-20T13:00:00Z/P1Y2M10DT2H30M").is_ok());
        assert!(parse_interval("P1Y2M10DT2H30M").is_ok());
    }

    #[test]
    fn cron() {
        assert!(check_cron("0 0/15 * * * ?").is_ok());
        assert!(check_cron("*/5 * * * *").is_ok());
        assert!(check_cron("61 * * * *").is_err());
        assert!(check_cron("* * *").is_err());
    }
}
