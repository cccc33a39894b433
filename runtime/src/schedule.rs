//! Scheduled starts of Serverless Workflows (`start.schedule`): when instances fire, who may start
//! an instance, and a scheduler that starts them on the execution clock (real or virtual).
//!
//! `cron` fires at each matching time in `timezone` (UTC when absent: wfc does not depend on
//! the machine's zone). A repeating `interval` (`R5/PT15M`, `R/PT1H`, `<start>/<duration>`) fires
//! at its start (or at `from` when it has none) and then every period, `R<n>` times, never after
//! its end. A non-repeating interval with both ends only bounds *when* instances may be created
//! (the draft's auction example): it has no fire times of its own; see [`accepts_direct_start`].
//!
//! `directInvoke: deny` is enforced where every top-level SW run begins ([`crate::sw::run_top`],
//! shared by both engines): an execution whose [`RunOptions`](crate::RunOptions) do not say
//! [`StartedBy::Scheduler`] fails with [`DIRECT_INVOKE_DENIED`] before its first state.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use jiff::Timestamp;
use wfc_ir::cron::Cron;
use wfc_ir::sw::Schedule;

use crate::Clock;

/// The error of a direct start of a workflow whose `start.schedule` has `directInvoke: deny`.
pub const DIRECT_INVOKE_DENIED: &str = "Wfc.DirectInvokeDenied";

/// Who started an execution. Only the scheduler may start a workflow with `directInvoke: deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartedBy {
    /// A direct start: `run`/`run_with` of a generated module, the interpreter, `wfc run`.
    #[default]
    Direct,
    /// The scheduler, for the fire time `fire_time` of the workflow's `start.schedule`.
    Scheduler {
        /// The fire time this instance was started for.
        fire_time: Timestamp,
    },
}

/// The fire times of `schedule` at or after `from`, in order, computed lazily (an unbounded
/// `cron` or `R/` interval never ends).
pub fn fire_iter(schedule: &Schedule, from: Timestamp) -> Result<Box<dyn Iterator<Item = Timestamp> + Send>, String> {
    if let Some(text) = &schedule.cron {
        let cron = Cron::parse(text)?;
        let tz = match &schedule.timezone {
            Some(name) => jiff::tz::TimeZone::get(name).map_err(|e| format!("time zone {name:?}: {e}"))?,
            None => jiff::tz::TimeZone::UTC,
        };
        // `next_after` is strict, so start one second early to include `from` itself.
        let mut t = from.checked_sub(jiff::SignedDuration::from_secs(1)).map_err(|e| e.to_string())?.to_zoned(tz);
        return Ok(Box::new(std::iter::from_fn(move || {
            let next = cron.next_after(&t)?;
            let at = next.timestamp();
            t = next;
            Some(at)
        })));
    }
    let Some(interval) = &schedule.interval else { return Ok(Box::new(std::iter::empty())) };
    let parse = |s: &str| s.parse::<Timestamp>().map_err(|e| format!("{s:?}: {e}"));
    let end = interval.end.as_deref().map(parse).transpose()?;
    let start = match &interval.start {
        Some(s) => parse(s)?,
        None => from,
    };
    // A plain `<start>/<end>` window (no `R`) is an availability window, not a repetition.
    if interval.repeat.is_none() && interval.start.is_some() && interval.end.is_some() {
        return Ok(Box::new(std::iter::empty()));
    }
    let period = jiff::SignedDuration::try_from_secs_f64(interval.period_seconds).map_err(|e| e.to_string())?;
    if period.is_zero() || period.is_negative() {
        return Err(format!("the interval's period ({}s) is not positive", interval.period_seconds));
    }
    let count = interval.repeat.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    // Every repetition counts towards `R<n>`, including those before `from`.
    let mut next = Some(start);
    let times = std::iter::from_fn(move || {
        let t = next?;
        next = t.checked_add(period).ok();
        Some(t)
    });
    Ok(Box::new(times.take(count).take_while(move |t| end.is_none_or(|e| *t <= e)).filter(move |t| *t >= from)))
}

/// The first `limit` fire times of `schedule` at or after `from`.
pub fn fire_times(schedule: &Schedule, from: Timestamp, limit: usize) -> Result<Vec<Timestamp>, String> {
    Ok(fire_iter(schedule, from)?.take(limit).collect())
}

/// Whether an instance may be started directly (not by the scheduler) at `now`: always with
/// `directInvoke: allow`. With `deny`, only inside a plain `<start>/<end>` availability window,
/// which has no fire times of its own; a `cron` or a repeating interval is started by the
/// scheduler only ("instances … created outside of the defined interval or cron" are refused).
pub fn accepts_direct_start(schedule: &Schedule, now: Timestamp) -> bool {
    if schedule.direct_invoke {
        return true;
    }
    if schedule.cron.is_some() {
        return false;
    }
    let Some(interval) = &schedule.interval else { return false };
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| s.parse::<Timestamp>().ok());
    match (interval.repeat, parse(&interval.start), parse(&interval.end)) {
        (None, Some(start), Some(end)) => start <= now && now <= end,
        _ => false,
    }
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

/// Which fire times [`serve`] starts instances for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    /// No instance for a fire time after this.
    pub until: Option<Timestamp>,
    /// At most this many instances.
    pub count: Option<usize>,
}

impl Bounds {
    /// Whether the scheduler would run forever (no `until`, no `count`) on an unbounded schedule.
    pub fn is_unbounded(&self) -> bool {
        self.until.is_none() && self.count.is_none()
    }
}

/// The scheduler: starts an instance at each fire time of `schedule` from `clock.now()` within
/// `bounds`, sleeping on `clock` in between, **without** waiting for earlier instances (they run
/// concurrently, as a scheduler's instances do). `start(n, fire_time)` runs instance `n`
/// (numbered from 0); `finished(n, fire_time, result)` is called as each one ends, in the order
/// they end. Returns how many instances were started, once every one of them has finished.
pub async fn serve<S, Fut, T, D>(
    schedule: &Schedule,
    clock: &Clock,
    bounds: Bounds,
    mut start: S,
    mut finished: D,
) -> Result<usize, String>
where
    S: FnMut(usize, Timestamp) -> Fut,
    Fut: Future<Output = T>,
    D: FnMut(usize, Timestamp, T),
{
    let until = bounds.until;
    let mut times = fire_iter(schedule, clock.now())?
        .take_while(move |t| until.is_none_or(|u| *t <= u))
        .take(bounds.count.unwrap_or(usize::MAX));
    let mut running = FuturesUnordered::new();
    let mut started = 0;
    let mut next = times.next();
    loop {
        let Some(at) = next else { break };
        let mut sleep = pin!(clock.sleep(clock.until(at)));
        // Collect the instances that end before the next fire time.
        loop {
            tokio::select! {
                biased;
                Some((n, t, result)) = running.next(), if !running.is_empty() => finished(n, t, result),
                () = &mut sleep => break,
            }
        }
        let fut = start(started, at);
        running.push(async move { (started, at, fut.await) });
        started += 1;
        next = times.next();
    }
    while let Some((n, t, result)) = running.next().await {
        finished(n, t, result);
    }
    Ok(started)
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
        // R<n> counts the repetitions before `from` too.
        let past = every(Some(3), Some("2023-12-31T23:00:00Z"), None, 1800.0);
        assert_eq!(fire_times(&past, from, 10), Ok(vec![ts("2024-01-01T00:00:00Z")]));
    }

    #[test]
    fn deny_admits_only_the_scheduler_except_inside_a_window() {
        let every_hour = |direct_invoke| Schedule {
            interval: Some(Interval { repeat: None, start: None, end: None, period_seconds: 3600.0 }),
            cron: None,
            timezone: None,
            direct_invoke,
        };
        let now = ts("2024-01-01T00:30:00Z");
        assert!(accepts_direct_start(&every_hour(true), now));
        assert!(!accepts_direct_start(&every_hour(false), now));
        assert!(!accepts_direct_start(&Schedule { direct_invoke: false, ..cron("0 * * * *", None) }, now));
        assert!(accepts_direct_start(&cron("0 * * * *", None), now));
    }

    #[test]
    fn serve_starts_instances_without_waiting_for_earlier_ones() {
        // Every 10 minutes, bounded by `until`; each instance takes 25 minutes, so they overlap.
        let s = cron("*/10 * * * *", None);
        let (started, log) = crate::block_on_virtual(async {
            let clock = Clock::virtual_default();
            let mut log = Vec::new();
            let bounds = Bounds { until: Some(ts("2024-01-01T00:30:00Z")), count: None };
            let started = serve(
                &s,
                &clock,
                bounds,
                |n, at| {
                    let clock = clock.clone();
                    async move {
                        let began = clock.now();
                        clock.sleep(Duration::from_secs(25 * 60)).await;
                        (n, at, began)
                    }
                },
                |n, at, (m, at2, began)| log.push((n, m, at == at2, at == began, clock.now())),
            )
            .await;
            (started, log)
        });
        assert_eq!(started, Ok(4));
        let ends: Vec<(usize, Timestamp)> = log.iter().map(|(n, _, _, _, end)| (*n, *end)).collect();
        assert_eq!(
            ends,
            [
                (0, ts("2024-01-01T00:25:00Z")),
                (1, ts("2024-01-01T00:35:00Z")),
                (2, ts("2024-01-01T00:45:00Z")),
                (3, ts("2024-01-01T00:55:00Z")),
            ]
        );
        // Each instance began at its fire time and reported its own number and fire time.
        assert!(log.iter().all(|(n, m, same_time, began_on_time, _)| n == m && *same_time && *began_on_time));
        // A count bound stops after that many instances.
        let counted = crate::block_on_virtual(async {
            let clock = Clock::virtual_default();
            let bounds = Bounds { until: None, count: Some(2) };
            serve(&s, &clock, bounds, |_, _| async {}, |_, _, ()| {}).await
        });
        assert_eq!(counted, Ok(2));
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
