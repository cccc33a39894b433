//! Cron expressions as Serverless Workflow's `start.schedule.cron` uses them: five fields
//! (minute hour day-of-month month day-of-week) or six with seconds first (`0 0/15 * * * ?`).
//! Each field is `*` or `?`, a number, a range `a-b`, a step `x/n`, or a comma list of those.
//! Shared by the compiler (validation) and the runtime (the scheduler's fire times).

use jiff::{ToSpan, Zoned};

/// A parsed cron expression: the allowed values of each field as bit sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Both day fields restricted: a day matches when either does (classic cron).
    day_or: bool,
}

fn field(text: &str, lo: u32, hi: u32, whole: &str) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| format!("`{whole}`: `{s}` is not a step"))?;
                if step == 0 {
                    return Err(format!("`{whole}`: a step of 0"));
                }
                (r, step)
            }
            None => (item, 1),
        };
        let (a, b) = if range == "*" || range == "?" {
            if step == 1 && item == range {
                star = true;
            }
            (lo, hi)
        } else {
            let mut ends = range.split('-');
            let num = |s: Option<&str>| -> Result<u32, String> {
                let s =
                    s.filter(|s| !s.is_empty()).ok_or_else(|| format!("`{whole}`: `{item}` is not a cron value"))?;
                let n: u32 = s.parse().map_err(|_| format!("`{whole}`: `{s}` is not a number"))?;
                if n < lo || n > hi {
                    return Err(format!("`{whole}`: `{n}` is out of range {lo}–{hi} for its field"));
                }
                Ok(n)
            };
            let a = num(ends.next())?;
            let b = match ends.next() {
                Some(e) => num(Some(e))?,
                // `5/15` means from 5 to the end, every 15.
                None if step > 1 => hi,
                None => a,
            };
            if ends.next().is_some() || b < a {
                return Err(format!("`{whole}`: `{item}` is not a valid range"));
            }
            (a, b)
        };
        let mut v = a;
        while v <= b {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

impl Cron {
    /// Parses a cron expression.
    pub fn parse(text: &str) -> Result<Cron, String> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let (sec, rest) = match fields.len() {
            5 => ("0", &fields[..]),
            6 => (fields[0], &fields[1..]),
            n => return Err(format!("`{text}` has {n} fields; a cron expression has 5 (or 6 with seconds first)")),
        };
        let (seconds, _) = field(sec, 0, 59, text)?;
        let (minutes, _) = field(rest[0], 0, 59, text)?;
        let (hours, _) = field(rest[1], 0, 23, text)?;
        let (days, days_star) = field(rest[2], 1, 31, text)?;
        let (months, _) = field(rest[3], 1, 12, text)?;
        let (mut weekdays, weekdays_star) = field(rest[4], 0, 7, text)?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1; // 7 is Sunday too
        }
        Ok(Cron { seconds, minutes, hours, days, months, weekdays, day_or: !days_star && !weekdays_star })
    }

    fn day_matches(&self, t: &Zoned) -> bool {
        let day = self.days & (1 << t.day()) != 0;
        let weekday = self.weekdays & (1 << t.weekday().to_sunday_zero_offset()) != 0;
        if self.day_or { day || weekday } else { day && weekday }
    }

    /// The first fire time strictly after `after` (in `after`'s time zone), within about four
    /// years; `None` when the expression never fires (`0 0 31 2 *`).
    pub fn next_after(&self, after: &Zoned) -> Option<Zoned> {
        let mut t = after.checked_add(jiff::SignedDuration::from_secs(1)).ok()?;
        t = t.with().subsec_nanosecond(0).build().ok()?;
        // Skip whole months, days and hours that cannot match, then minutes; four years of
        // that is a few tens of thousands of steps at worst.
        let limit = after.year() + 5;
        while t.year() <= limit {
            if self.months & (1 << t.month()) == 0 {
                t = t.first_of_month().ok()?.start_of_day().ok()?.checked_add(1.month()).ok()?;
                continue;
            }
            if !self.day_matches(&t) {
                t = t.start_of_day().ok()?.checked_add(1.day()).ok()?;
                continue;
            }
            if self.hours & (1 << t.hour()) == 0 {
                t = t.with().minute(0).second(0).build().ok()?.checked_add(1.hour()).ok()?;
                continue;
            }
            if self.minutes & (1 << t.minute()) != 0 {
                let from = u32::try_from(t.second()).unwrap_or(0);
                if let Some(s) = (from..60).find(|s| self.seconds & (1 << s) != 0) {
                    return t.with().second(i8::try_from(s).unwrap_or(0)).build().ok();
                }
            }
            t = t.with().second(0).build().ok()?.checked_add(1.minute()).ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Zoned {
        s.parse::<jiff::Timestamp>().unwrap_or(jiff::Timestamp::UNIX_EPOCH).to_zoned(jiff::tz::TimeZone::UTC)
    }

    #[test]
    fn next_fire_times() {
        let c = Cron::parse("*/15 * * * *").expect("valid");
        assert_eq!(
            c.next_after(&at("2024-01-01T00:07:30Z")).map(|z| z.timestamp().to_string()),
            Some("2024-01-01T00:15:00Z".into())
        );
        let q = Cron::parse("0 0/15 * * * ?").expect("valid");
        assert_eq!(
            q.next_after(&at("2024-01-01T00:15:00Z")).map(|z| z.timestamp().to_string()),
            Some("2024-01-01T00:30:00Z".into())
        );
        let d = Cron::parse("0 9 8 * *").expect("valid");
        assert_eq!(
            d.next_after(&at("2024-01-08T09:00:00Z")).map(|z| z.timestamp().to_string()),
            Some("2024-02-08T09:00:00Z".into())
        );
        assert_eq!(Cron::parse("0 0 31 2 *").expect("valid").next_after(&at("2024-01-01T00:00:00Z")), None);
    }

    #[test]
    fn invalid() {
        for bad in ["61 * * * *", "* * *", "*/0 * * * *", "5-1 * * * *", "a * * * *", "1- * * * *"] {
            assert!(Cron::parse(bad).is_err(), "{bad}");
        }
    }
}
