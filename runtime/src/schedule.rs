//! Scheduled starts of Serverless Workflows (`start.schedule`): when instances fire, and a
//! scheduler that starts them on the execution clock (real or virtual).
//!
//! `cron` fires at each matching time in `timezone` (UTC when absent: wfc does not depend on
//! the machine's zone). A repeating `interval` (`R5/PT15M`, `R/PT1H`, `<start>/<duration>`) fires
//! at its start (or at `from` when it has none) and then every period, `R<n>` times, never after
//! its end. A non-repeating interval with both ends only bounds *when* instances may be created
//! (the draft's auction example): it has no fire times of its own; see [`accepts_direct_start`].

use std::future::Future;
use std::time::Duration;

use jiff::Timestamp;
use wfc_ir::cron::Cron;
use wfc_ir::sw::Schedule;

use crate::Clock;

/// The first `limit` fire times of `schedule` at or after `from`.
pub fn fire_times(schedule: &Schedule, from: Timestamp, limit: usize) -> Result<Vec<Timestamp>, String> {
    let mut out = Vec::new();
    if let Some(text) = &schedule.cron {
        let cron = Cron::parse(text)?;
        let tz = match &schedule.timezone {
            Some(name) => jiff::tz::TimeZone::get(name).map_err(|e| format!("time zone {name:?}: {e}"))?,
            None => jiff::tz::TimeZone::UTC,
        };
        // `next_after` is strict, so start one second early to include `from` itself.
        let mut t = from.checked_sub(jiff::SignedDuration::from_secs(1)).map_err(|e| e.to_string())?.to_zoned(tz);
        while out.len() < limit {
            let Some(next) = cron.next_after(&t) else { break };
            out.push(next.timestamp());
            t = next;
        }
        return Ok(out);
    }
    let Some(interval) = &schedule.interval else { return Ok(out) };
    let parse = |s: &str| s.parse::<Timestamp>().map_err(|e| format!("{s:?}: {e}"));
    let end = interval.end.as_deref().map(parse).transpose()?;
    let start = match &interval.start {
        Some(s) => parse(s)?,
        None => from,
    };
    // A plain `<start>/<end>` window (no `R`) is an availability window, not a repetition.
    if interval.repeat.is_none() && interval.start.is_some() && interval.end.is_some() {
        return Ok(out);
    }
    let period = jiff::SignedDuration::try_from_secs_f64(interval.period_seconds).map_err(|e| e.to_string())?;
    let count = interval.repeat.map_or(limit, |n| usize::try_from(n).unwrap_or(usize::MAX).min(limit));
    let mut t = start;
    while out.len() < count {
        if end.is_some_and(|e| t > e) {
            break;
        }
        if t >= from {
            out.push(t);
        }
        t = t.checked_add(period).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Whether an instance may be started directly at `now`: always with `directInvoke: allow`;
/// with `deny`, only inside a `<start>/<end>` window (and never for cron-only schedules).
pub fn accepts_direct_start(schedule: &Schedule, now: Timestamp) -> bool {
    if schedule.direct_invoke {
        return true;
    }
    let Some(interval) = &schedule.interval else { return false };
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| s.parse::<Timestamp>().ok());
    let after_start = parse(&interval.start).is_none_or(|s| now >= s);
    let before_end = parse(&interval.end).is_none_or(|e| now <= e);
    after_start && before_end
}

/// Starts an instance at each of the first `limit` fire times, sleeping on `clock` in between
/// (virtual time jumps). `start` gets the fire time; its futures run one after another.
/// Returns how many instances were started.
pub async fn run<F, Fut>(schedule: &Schedule, clock: &Clock, limit: usize, mut start: F) -> Result<usize, String>
where
    F: FnMut(Timestamp) -> Fut,
    Fut: Future<Output = ()>,
{
    let times = fire_times(schedule, clock.now(), limit)?;
    for t in &times {
        clock.sleep(clock.until(*t)).await;
        start(*t).await;
    }
    Ok(times.len())
}

/// How long from `now` to the next fire time, if there is one.
pub fn until_next(schedule: &Schedule, now: Timestamp) -> Option<Duration> {
    let next = fire_times(schedule, now, 1).ok()?.into_iter().next()?;
    Duration::try_from(now.duration_until(next)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfc_ir::sw::Interval;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn cron(expr: &str, tz: Option<&str>) -> Schedule {
        Schedule { interval: None, cron: Some(expr.into()), timezone: tz.map(Into::into), direct_invoke: true }
    }

    #[test]
    fn cron_fire_times_in_a_time_zone() {
        let s = cron("0 9 * * *", Some("America/New_York"));
        let times = fire_times(&s, ts("2024-01-01T00:00:00Z"), 2).unwrap_or_default();
        // 09:00 in New York in January is 14:00 UTC.
        assert_eq!(times, vec![ts("2024-01-01T14:00:00Z"), ts("2024-01-02T14:00:00Z")]);
    }

    #[test]
    fn repeating_intervals() {
        let every = |repeat, start: Option<&str>, end: Option<&str>, secs| Schedule {
            interval: Some(Interval {
                repeat,
                start: start.map(Into::into),
                end: end.map(Into::into),
                period_seconds: secs,
            }),
            cron: None,
            timezone: None,
            direct_invoke: true,
        };
        let from = ts("2024-01-01T00:00:00Z");
        assert_eq!(fire_times(&every(Some(3), None, None, 3600.0), from, 10).map(|v| v.len()), Ok(3));
        assert_eq!(fire_times(&every(None, None, None, 60.0), from, 5).map(|v| v.len()), Ok(5));
        let bounded = every(None, Some("2024-01-01T00:00:00Z"), Some("2024-01-01T00:10:00Z"), 300.0);
        assert_eq!(fire_times(&bounded, from, 10), Ok(vec![]));
        let window = every(None, Some("2024-01-01T00:00:00Z"), Some("2024-01-01T01:00:00Z"), 3600.0);
        let deny = Schedule { direct_invoke: false, ..window };
        assert!(accepts_direct_start(&deny, ts("2024-01-01T00:30:00Z")));
        assert!(!accepts_direct_start(&deny, ts("2024-01-01T02:00:00Z")));
    }

    #[test]
    fn the_scheduler_starts_instances_on_virtual_time() {
        let (n, started) = crate::block_on_virtual(async {
            let clock = Clock::virtual_default(); // 2024-01-01T00:00:00Z
            let s = cron("*/15 * * * *", None);
            let mut started = Vec::new();
            let n = run(&s, &clock, 3, |t| {
                started.push((t, clock.now()));
                async {}
            })
            .await;
            (n, started)
        });
        assert_eq!(n, Ok(3));
        let expected = [ts("2024-01-01T00:00:00Z"), ts("2024-01-01T00:15:00Z"), ts("2024-01-01T00:30:00Z")];
        assert_eq!(started.iter().map(|(t, _)| *t).collect::<Vec<_>>(), expected);
        // Each instance started when the virtual clock reached its fire time.
        assert!(started.iter().all(|(t, now)| t == now));
    }
}
