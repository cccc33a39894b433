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

use std::future::Future;
use std::sync::{Arc, OnceLock};
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

    /// Virtual time starting at 2024-01-01T00:00:00Z, so runs are reproducible.
    pub fn virtual_default() -> Clock {
        // The constant is a valid timestamp; UNIX_EPOCH is only a fallback that cannot happen.
        let start = jiff::Timestamp::from_second(VIRTUAL_EPOCH_SECONDS).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        Clock::virtual_from(start)
    }

    /// Whether this is a virtual clock.
    pub fn is_virtual(&self) -> bool {
        matches!(self.inner.kind, Kind::Virtual { .. })
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
                jiff::Timestamp::now()
            }
            Kind::Virtual { start } => {
                let elapsed = self.elapsed();
                let span = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
                start.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
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
    pub async fn sleep(&self, duration: Duration) {
        if !duration.is_zero() {
            tokio::time::sleep(duration).await;
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

/// Formats a timestamp as AWS formats `$$.Execution.StartTime` and history timestamps:
/// UTC, millisecond precision, uppercase `Z`.
pub fn format_timestamp(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
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
    fn real_clock_is_not_virtual() {
        let clock = Clock::real();
        assert!(!clock.is_virtual());
        assert!(clock.now() > jiff::Timestamp::UNIX_EPOCH);
    }
}
