//! The execution clock: real wall-clock time, or virtual time for tests and simulations.
//!
//! Both kinds sleep with [`tokio::time::sleep`], so retries, Waits and timeouts are ordinary
//! tokio timers. A virtual clock is meant to run inside [`block_on_virtual`] (or a
//! `#[tokio::test(start_paused = true)]` test): tokio's paused clock then jumps straight to the
//! next timer whenever every task is idle, so a workflow that waits an hour finishes at once and
//! always reports the same timestamps.
//!
//! Limitation: under virtual time, tokio advances the clock whenever the runtime is idle. A task
//! handler that does real I/O (a network call, `spawn_blocking`) leaves the runtime idle while it
//! waits, so virtual time jumps forward to the next timer (for instance a TimeoutSeconds
//! deadline) and the handler may observe a timeout that never happened in real time. Use
//! [`Clock::real`] for handlers that talk to the outside world.
//!
//! A virtual clock measures from its first reading on tokio's clock; use each one within a single
//! runtime (each [`block_on_virtual`] call starts a fresh paused clock, so a clock carried from
//! one call to the next would also count the real time spent between them).
//!
//! A third kind, [`Clock::skipping`], is for one execution among others on a shared, real-time
//! runtime (`wfc serve --virtual-time`), where tokio's clock cannot be paused: it reads real time
//! plus every wait it skipped. Its sleeps (Wait states, retry back-off) return at once and move
//! the clock forward instead; everything else (a Task's handler, a callback, an activity, and
//! the timeouts that guard them) takes real time. The execution's own deadline
//! ([`Clock::timeout`], the machine's `TimeoutSeconds`) is on the clock: a skipped wait that
//! would cross it moves the clock to the deadline and lets the timeout fire first, as it would
//! have in real time.

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

/// A clock for one execution. Cheap to clone; clones share their origin.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: Kind,
    /// The tokio instant of the first reading. Captured lazily so that a virtual clock built
    /// before its paused runtime starts measures from inside that runtime, not from the moment
    /// of construction in real time (which would leak real time into virtual readings).
    origin: OnceLock<Instant>,
}

#[derive(Debug)]
enum Kind {
    Real,
    Virtual { start: jiff::Timestamp },
    Skipping(Skips),
}

/// The state of a [`Clock::skipping`] clock.
#[derive(Debug, Default)]
struct Skips {
    /// Nanoseconds skipped so far (added to real time).
    skipped_ns: AtomicI64,
    /// The deadlines of the timeouts running on this clock ([`Clock::timeout`]), each with an id.
    deadlines: Mutex<Vec<(u64, jiff::Timestamp)>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Woken whenever the clock skips or a deadline goes away.
    moved: tokio::sync::Notify,
}

impl Skips {
    fn skipped(&self) -> jiff::SignedDuration {
        jiff::SignedDuration::from_nanos(self.skipped_ns.load(Ordering::SeqCst))
    }

    fn earliest_deadline(&self) -> Option<jiff::Timestamp> {
        self.deadlines.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(_, d)| *d).min()
    }

    /// Moves the clock forward by `by` (never backward).
    fn skip(&self, by: jiff::SignedDuration) {
        let ns = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX).max(0);
        let _ = self.skipped_ns.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v.saturating_add(ns)));
        self.moved.notify_waiters();
    }
}

/// Removes a deadline from its clock when its timeout ends (either way).
struct DeadlineGuard<'a> {
    skips: &'a Skips,
    id: u64,
}

impl Drop for DeadlineGuard<'_> {
    fn drop(&mut self) {
        self.skips.deadlines.lock().unwrap_or_else(|p| p.into_inner()).retain(|(id, _)| *id != self.id);
        self.skips.moved.notify_waiters();
    }
}

/// The fixed start of [`Clock::virtual_default`]: 2024-01-01T00:00:00Z.
pub const VIRTUAL_EPOCH_SECONDS: i64 = 1_704_067_200;

impl Clock {
    /// Real time: `now()` reads the system clock and sleeps take real time.
    pub fn real() -> Clock {
        Clock { inner: Arc::new(Inner { kind: Kind::Real, origin: OnceLock::new() }) }
    }

    /// Virtual time starting at `start`: `now()` is `start` plus the tokio time elapsed since the
    /// clock's first reading. Deterministic when run under [`block_on_virtual`].
    pub fn virtual_from(start: jiff::Timestamp) -> Clock {
        Clock { inner: Arc::new(Inner { kind: Kind::Virtual { start }, origin: OnceLock::new() }) }
    }

    /// Virtual time starting at an RFC 3339 instant (`2025-01-01T00:00:00Z`): an execution
    /// started at a given moment (`wfc run --start-time`, a recorded case's `clock`).
    pub fn virtual_from_rfc3339(start: &str) -> Result<Clock, String> {
        start
            .parse::<jiff::Timestamp>()
            .map(Clock::virtual_from)
            .map_err(|e| format!("the start time {start:?} is not an RFC 3339 instant: {e}"))
    }

    /// Virtual time starting at 2024-01-01T00:00:00Z, so runs are reproducible.
    pub fn virtual_default() -> Clock {
        // The constant is a valid timestamp; UNIX_EPOCH is only a fallback that cannot happen.
        let start = jiff::Timestamp::from_second(VIRTUAL_EPOCH_SECONDS).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        Clock::virtual_from(start)
    }

    /// Real time that skips its waits, for one execution on a real-time runtime (`wfc serve
    /// --virtual-time`; see the module documentation): `now()` is real time plus every wait
    /// skipped so far.
    pub fn skipping() -> Clock {
        Clock { inner: Arc::new(Inner { kind: Kind::Skipping(Skips::default()), origin: OnceLock::new() }) }
    }

    /// Whether this is a virtual clock.
    pub fn is_virtual(&self) -> bool {
        matches!(self.inner.kind, Kind::Virtual { .. })
    }

    /// Whether sleeps on this clock are skipped ([`Clock::skipping`]): nothing is gained by
    /// releasing an execution that waits on it.
    pub fn skips_waits(&self) -> bool {
        matches!(self.inner.kind, Kind::Skipping(_))
    }

    /// On a [`Clock::skipping`] clock, moves the clock forward to `instant` if it is behind it
    /// (a resumed execution replaying a wait that fired before it stopped: its clock goes on
    /// from there). Other clocks are left alone.
    pub fn catch_up(&self, instant: jiff::Timestamp) {
        if let Kind::Skipping(skips) = &self.inner.kind {
            let behind = instant.duration_since(self.now());
            if behind.is_positive() {
                skips.skip(behind);
            }
        }
    }

    /// Runs `f` with a time limit of `limit` on this clock: `None` if it was reached first. On a
    /// real or virtual clock this is `tokio::time::timeout`; on a skipping clock the deadline is
    /// on the clock, so skipped waits count towards it (and a wait that would cross it stops
    /// at it, so the timeout fires first).
    pub async fn timeout<F: Future>(&self, limit: Duration, f: F) -> Option<F::Output> {
        let Kind::Skipping(skips) = &self.inner.kind else {
            return tokio::time::timeout(limit, f).await.ok();
        };
        let span = jiff::SignedDuration::try_from(limit).unwrap_or(jiff::SignedDuration::MAX);
        let deadline = self.now().checked_add(span).unwrap_or(jiff::Timestamp::MAX);
        let id = skips.next_id.fetch_add(1, Ordering::SeqCst);
        skips.deadlines.lock().unwrap_or_else(|p| p.into_inner()).push((id, deadline));
        let _guard = DeadlineGuard { skips, id };
        tokio::select! {
            out = f => Some(out),
            () = self.reach(skips, deadline) => None,
        }
    }

    /// Returns once a skipping clock reads `deadline` or later (by real time or by skips).
    async fn reach(&self, skips: &Skips, deadline: jiff::Timestamp) {
        loop {
            let moved = skips.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            let left = self.until(deadline);
            if left.is_zero() {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(left) => {}
                () = moved => {}
            }
        }
    }

    /// A skipped sleep: the clock moves forward by `duration` at once, stopping at any earlier
    /// deadline of a running [`Clock::timeout`] until that timeout has fired (and taken this
    /// sleep with it, or, for a timeout elsewhere in the execution, gone).
    async fn skip(&self, skips: &Skips, duration: Duration) {
        let span = jiff::SignedDuration::try_from(duration).unwrap_or(jiff::SignedDuration::MAX);
        let target = self.now().checked_add(span).unwrap_or(jiff::Timestamp::MAX);
        loop {
            let moved = skips.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            let now = self.now();
            if now >= target {
                break;
            }
            match skips.earliest_deadline() {
                Some(deadline) if deadline <= target => {
                    if deadline > now {
                        skips.skip(deadline.duration_since(now));
                    }
                    // The timeout of that deadline fires now; wait until it is gone.
                    moved.await;
                }
                _ => {
                    skips.skip(target.duration_since(now));
                    break;
                }
            }
        }
        // Let other tasks of the execution see the clock before this one goes on.
        tokio::task::yield_now().await;
    }

    fn origin(&self) -> Instant {
        *self.inner.origin.get_or_init(Instant::now)
    }

    /// The current time on this clock.
    pub fn now(&self) -> jiff::Timestamp {
        match &self.inner.kind {
            Kind::Real => {
                // Touch the origin so elapsed() measures from the first reading on both kinds.
                self.origin();
                real_now()
            }
            Kind::Virtual { start } => {
                let elapsed = self.elapsed();
                let span = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
                start.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
            }
            Kind::Skipping(skips) => {
                self.origin();
                real_now().checked_add(skips.skipped()).unwrap_or(jiff::Timestamp::MAX)
            }
        }
    }

    /// Time elapsed since the clock's first reading (its creation, for practical purposes:
    /// an execution reads its clock when it starts).
    pub fn elapsed(&self) -> Duration {
        let origin = self.origin();
        Instant::now().saturating_duration_since(origin)
    }

    /// Sleeps for `duration` on this clock.
    ///
    /// In steps of at most a year: tokio ends a sleep whose deadline it cannot represent after
    /// about 30 years, and a Wait may last up to 2³¹ − 1 s (about 68 years) as on AWS.
    pub async fn sleep(&self, duration: Duration) {
        if let Kind::Skipping(skips) = &self.inner.kind {
            return self.skip(skips, duration).await;
        }
        const STEP: Duration = Duration::from_secs(365 * 86_400);
        let mut left = duration;
        while !left.is_zero() {
            let step = left.min(STEP);
            tokio::time::sleep(step).await;
            left -= step;
        }
    }

    /// Sleeps until `instant` on this clock; an instant in the past does not wait.
    pub async fn sleep_until(&self, instant: jiff::Timestamp) {
        self.sleep(self.until(instant)).await;
    }

    /// How long from now until `instant` (zero when it has passed).
    pub fn until(&self, instant: jiff::Timestamp) -> Duration {
        let delta = instant.duration_since(self.now());
        Duration::try_from(delta).unwrap_or(Duration::ZERO)
    }

    /// `now()` formatted as AWS formats execution times: RFC 3339, milliseconds, `Z`
    /// (`2024-01-01T00:00:00.000Z`).
    pub fn now_rfc3339(&self) -> String {
        format_timestamp(self.now())
    }
}

/// The system's time: what `jiff::Timestamp::now` gives, from the seconds and nanoseconds since
/// the epoch directly. A Standard execution stamps every state's events with a reading, and
/// jiff's way there (a signed duration, then its checked conversions) cost about as much again
/// as the reading itself (~80 instructions); a time before 1970 takes jiff's way.
fn real_now() -> jiff::Timestamp {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_secs())
            .ok()
            .and_then(|seconds| jiff::Timestamp::new(seconds, since.subsec_nanos() as i32).ok())
            .unwrap_or_else(jiff::Timestamp::now),
        Err(_) => jiff::Timestamp::now(),
    }
}

/// Formats a timestamp as AWS formats `$$.Execution.StartTime` and history timestamps:
/// UTC, millisecond precision, uppercase `Z`.
pub fn format_timestamp(ts: jiff::Timestamp) -> String {
    // Only ASCII digits and separators are written, so the text is always UTF-8.
    match timestamp_text(ts).map(|text| String::from_utf8(text.to_vec())) {
        Some(Ok(text)) => text,
        _ => ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
    }
}

/// [`format_timestamp`]'s text in a fixed buffer, for instants from 1970 to 9999 (`None`
/// otherwise): what a history event's time ([`crate::history::EventTime`]) writes without
/// allocating.
pub(crate) fn timestamp_text(ts: jiff::Timestamp) -> Option<[u8; 24]> {
    // Every history event carries one of these, so the common case (1970 to 9999) is written
    // directly from the civil date rather than through jiff's general strftime; the result is
    // the same text (a test compares the two). Events come many per second, so the text up to
    // the seconds is kept per thread and only the milliseconds are written again.
    thread_local! {
        static LAST_SECOND: std::cell::Cell<(i64, [u8; 24])> = const { std::cell::Cell::new((-1, [0; 24])) };
    }
    let (seconds, millis) = (ts.as_second(), ts.subsec_millisecond());
    let millis = u32::try_from(millis).ok().filter(|_| seconds >= 0)?;
    let cached = LAST_SECOND.with(|last| match last.get() {
        (second, text) if second == seconds => Some(text),
        _ => None,
    });
    let mut text = match cached {
        Some(text) => text,
        None => {
            let text = format_second(seconds)?;
            LAST_SECOND.with(|last| last.set((seconds, text)));
            text
        }
    };
    put_digits(&mut text[20..23], millis);
    Some(text)
}

/// `YYYY-MM-DDTHH:MM:SS.000Z` for `seconds` since the epoch (non-negative), or `None` past
/// the year 9999.
fn format_second(seconds: i64) -> Option<[u8; 24]> {
    let (days, day_seconds) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days)?;
    if year > 9999 {
        return None;
    }
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let (h, m, s) = (day_seconds / 3600, day_seconds / 60 % 60, day_seconds % 60);
    for (at, width, value) in
        [(0, 4, year), (5, 2, month.into()), (8, 2, day.into()), (11, 2, h), (14, 2, m), (17, 2, s)]
    {
        put_digits(&mut text[at..at + width], u32::try_from(value).ok()?);
    }
    Some(text)
}

/// Writes `value`'s last `slots.len()` decimal digits into `slots`, zero-padded.
fn put_digits(slots: &mut [u8], mut value: u32) {
    for slot in slots.iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian `(year, month, day)` of `days` since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), for non-negative `days`.
fn civil_from_days(days: i64) -> Option<(i64, u32, u32)> {
    if days < 0 {
        return None;
    }
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).ok()?;
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).ok()?;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Some((year, month, day))
}

/// Runs `f` to completion on a new current-thread tokio runtime whose clock starts paused, so
/// every timer (Waits, retry back-off, timeouts) completes instantly and deterministically. Use
/// with [`Clock::virtual_default`] or [`Clock::virtual_from`].
///
/// # Panics
///
/// Panics if the operating system refuses to create the runtime (it creates no threads or
/// sockets, so this does not happen in practice), as `tokio::runtime::Runtime::new` callers do.
pub fn block_on_virtual<F: Future>(f: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("could not build the virtual-time tokio runtime: {e}"));
    runtime.block_on(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real clock's reading is jiff's: between two jiff readings taken around it.
    #[test]
    fn the_real_clock_reads_the_system_time() {
        for _ in 0..1_000 {
            let before = jiff::Timestamp::now();
            let now = real_now();
            let after = jiff::Timestamp::now();
            assert!(before <= now && now <= after, "{before} {now} {after}");
        }
    }

    #[test]
    fn virtual_time_advances_only_by_sleeps() {
        let clock = Clock::virtual_default();
        let (start, end, elapsed) = block_on_virtual(async {
            let start = clock.now();
            clock.sleep(Duration::from_secs(3600)).await;
            (start, clock.now(), clock.elapsed())
        });
        assert_eq!(format_timestamp(start), "2024-01-01T00:00:00.000Z");
        assert_eq!(format_timestamp(end), "2024-01-01T01:00:00.000Z");
        assert_eq!(elapsed, Duration::from_secs(3600));
        assert!(clock.is_virtual());
    }

    #[test]
    fn sleeps_longer_than_tokio_represents_last_their_whole_duration() {
        let clock = Clock::virtual_default();
        let long = Duration::from_secs(2_147_483_647);
        let (start, end) = block_on_virtual(async {
            let start = clock.now();
            clock.sleep(long).await;
            (start, clock.now())
        });
        assert_eq!(end.duration_since(start), jiff::SignedDuration::from_secs(2_147_483_647));
    }

    #[test]
    fn sleep_until_the_past_does_not_wait() {
        let clock = Clock::virtual_default();
        let elapsed = block_on_virtual(async {
            clock.now();
            let past = jiff::Timestamp::from_second(0).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
            clock.sleep_until(past).await;
            clock.elapsed()
        });
        assert_eq!(elapsed, Duration::ZERO);
    }

    #[test]
    fn fast_format_matches_jiff() {
        let jiff_format = |ts: jiff::Timestamp| ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let mut samples = vec![0i64, 1, 59, 86_399, 86_400, 951_782_400, 1_704_067_200, 4_107_542_399, -1, -86_401];
        // A spread of instants from 1900 to 9999, including leap days and year ends.
        let mut x: i64 = 0x2545_f491;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            samples.push((x >> 16).rem_euclid(253_402_300_800 + 2_208_988_800) - 2_208_988_800);
        }
        for seconds in samples {
            for nanos in [0, 1, 999_999, 1_000_000, 123_456_789, 999_999_999] {
                let nanos = if seconds < 0 { -nanos } else { nanos };
                let Ok(ts) = jiff::Timestamp::new(seconds, nanos) else { continue };
                assert_eq!(format_timestamp(ts), jiff_format(ts), "{seconds} s {nanos} ns");
            }
        }
    }

    #[tokio::test]
    async fn a_skipping_clock_skips_waits_and_keeps_real_time() {
        let clock = Clock::skipping();
        assert!(clock.skips_waits() && !clock.is_virtual());
        let real_start = jiff::Timestamp::now();
        let start = clock.now();
        clock.sleep(Duration::from_secs(86_400)).await;
        let moved = clock.now().duration_since(start);
        assert!(moved >= jiff::SignedDuration::from_secs(86_400), "{moved:?}");
        // No day passed in real time: the wait was skipped.
        assert!(jiff::Timestamp::now().duration_since(real_start) < jiff::SignedDuration::from_secs(86_400));
        // catch_up only moves forward.
        let later = clock.now().checked_add(jiff::SignedDuration::from_secs(60)).unwrap();
        clock.catch_up(later);
        assert!(clock.now() >= later);
        clock.catch_up(start);
        assert!(clock.now() >= later);
    }

    #[tokio::test]
    async fn a_skipped_wait_stops_at_the_timeout_on_the_clock() {
        let clock = Clock::skipping();
        let start = clock.now();
        // A wait of a day under a timeout of an hour: the timeout fires, at an hour.
        let out = clock.timeout(Duration::from_secs(3600), clock.sleep(Duration::from_secs(86_400))).await;
        assert!(out.is_none());
        let at = clock.now().duration_since(start);
        assert!(at >= jiff::SignedDuration::from_secs(3600) && at < jiff::SignedDuration::from_secs(7200), "{at:?}");
        // Within the limit, the wait ends and the timeout does not fire.
        let out = clock.timeout(Duration::from_secs(3600), clock.sleep(Duration::from_secs(60))).await;
        assert!(out.is_some());
        // A timeout elsewhere does not hold a wait it does not guard for ever: the wait stops at
        // the deadline, the timeout fires, and the wait goes on to its end.
        let before = clock.now();
        let (guarded, other) = tokio::join!(
            clock.timeout(Duration::from_secs(60), std::future::pending::<()>()),
            clock.sleep(Duration::from_secs(600)),
        );
        assert!(guarded.is_none());
        let _: () = other;
        assert!(clock.now().duration_since(before) >= jiff::SignedDuration::from_secs(600));
    }

    #[test]
    fn real_clock_is_not_virtual() {
        let clock = Clock::real();
        assert!(!clock.is_virtual());
        assert!(clock.now() > jiff::Timestamp::UNIX_EPOCH);
    }
}
