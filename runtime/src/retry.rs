//! Retry and Catch.
//!
//! Matching: see [`error_matches`].
//!
//! Retry: the first retrier whose `ErrorEquals` matches decides (no fall-through to later
//! retriers once its attempts are used up); each retrier counts its own retries, and the counts
//! start again each time the state is entered. The n-th retry (1-based) waits
//! `IntervalSeconds × BackoffRate^(n−1)`, capped by `MaxDelaySeconds`, and with
//! `JitterStrategy: FULL` a uniformly random time in `[0, that]`.
//!
//! Catch: the first catcher that matches; its output is the raw state input with the Error
//! Output placed at the catcher's ResultPath. The state's OutputPath is not applied (AWS).

use std::time::Duration;

use rand::{Rng, RngExt};
use serde_json::Value;
use wfc_ir::jsonpath::ast::SingularStep;
use wfc_ir::{Catcher, Jitter, Retrier, StateId};

use crate::Failure;
use crate::jsonata::Bindings;

/// The longest single back-off, whatever the retrier says: a year (AWS's MaxDelaySeconds limit,
/// 31,622,400 s), since no Standard execution outlives a year. It also keeps the arithmetic
/// finite for extreme `BackoffRate`s.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(31_622_400);

/// The delay before retry `n` (1-based) of `retrier`, before jitter:
/// `IntervalSeconds × BackoffRate^(n−1)`, capped by `MaxDelaySeconds` and [`MAX_RETRY_DELAY`].
pub fn backoff_delay(retrier: &Retrier, n: u32) -> Duration {
    delay_for(retrier.interval_seconds, retrier.backoff_rate, retrier.max_delay_seconds, n)
}

/// [`backoff_delay`] on a retrier's numbers, whichever form holds them.
fn delay_for(interval_seconds: u64, backoff_rate: f64, max_delay_seconds: Option<u64>, n: u32) -> Duration {
    let exponent = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
    let seconds = interval_seconds as f64 * backoff_rate.powi(exponent);
    let mut cap = MAX_RETRY_DELAY.as_secs_f64();
    if let Some(max) = max_delay_seconds {
        cap = cap.min(max as f64);
    }
    // NaN (a nonsensical rate) or negative values fall to zero; infinity to the cap.
    let seconds = if seconds.is_nan() { 0.0 } else { seconds.clamp(0.0, cap) };
    Duration::try_from_secs_f64(seconds).unwrap_or(MAX_RETRY_DELAY)
}

/// One retrier of a `Retry` field, as the retry driver ([`RetryState::decide`]) reads it: the
/// IR's [`Retrier`] (the interpreter) or a [`StaticRetrier`] (a table in generated code).
pub trait RetryRule {
    /// Whether its `ErrorEquals` matches `error` (see [`error_matches`]).
    fn matches(&self, error: &str) -> bool;
    /// `MaxAttempts`.
    fn max_attempts(&self) -> u32;
    /// The delay before retry `n` (1-based), before jitter.
    fn delay(&self, n: u32) -> Duration;
    /// `JitterStrategy`.
    fn jitter(&self) -> Jitter;
}

impl RetryRule for Retrier {
    fn matches(&self, error: &str) -> bool {
        error_matches(&self.error_equals, error)
    }

    fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    fn delay(&self, n: u32) -> Duration {
        backoff_delay(self, n)
    }

    fn jitter(&self) -> Jitter {
        self.jitter
    }
}

/// A retrier compiled into generated code: a `const` table entry, its numbers checked and
/// defaulted at build time, matched and timed by the same rules as [`Retrier`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticRetrier {
    /// `ErrorEquals`.
    pub error_equals: &'static [&'static str],
    /// `IntervalSeconds`.
    pub interval_seconds: u64,
    /// `MaxAttempts`.
    pub max_attempts: u32,
    /// `BackoffRate`.
    pub backoff_rate: f64,
    /// `MaxDelaySeconds`.
    pub max_delay_seconds: Option<u64>,
    /// `JitterStrategy`.
    pub jitter: Jitter,
}

impl RetryRule for StaticRetrier {
    fn matches(&self, error: &str) -> bool {
        error_matches(self.error_equals, error)
    }

    fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    fn delay(&self, n: u32) -> Duration {
        delay_for(self.interval_seconds, self.backoff_rate, self.max_delay_seconds, n)
    }

    fn jitter(&self) -> Jitter {
        self.jitter
    }
}

/// One catcher of a `Catch` field, as the state's visit reads it: the IR's [`Catcher`] (the
/// interpreter) or a [`StaticCatcher`] (a table in generated code).
pub trait CatchRule {
    /// Whether its `ErrorEquals` matches `error`.
    fn matches(&self, error: &str) -> bool;
    /// Its `Next`.
    fn next(&self) -> StateId;
    /// The raw input with the Error Output placed at its ResultPath.
    fn output(&self, raw_input: Value, failure: &Failure) -> Result<Value, Failure>;
    /// The catcher itself when it has `Assign` or a JSONata `Output` (the IR's).
    fn with_language(&self) -> Option<&Catcher> {
        None
    }
    /// A JSONPath `Assign` compiled to Rust (an [`AssignCatcher`]'s), evaluated on the Error
    /// Output before the catcher's ResultPath.
    fn assign_code(&self) -> Option<CatchAssign> {
        None
    }
    /// The catcher's JSONata `Assign` and `Output` compiled to Rust (a [`JsonataCatcher`]'s),
    /// when it has either.
    fn jsonata_code(&self) -> Option<&JsonataCatcher> {
        None
    }
}

/// A catcher's JSONPath `Assign` compiled to Rust: its values from the execution (for random
/// intrinsics), the Error Output (`$`) and the context object (`$$`, `$name` as of entry).
pub type CatchAssign = fn(&crate::Execution, &Value, &Value) -> Result<crate::exec::Assigned, crate::Failure>;

impl CatchRule for Catcher {
    fn matches(&self, error: &str) -> bool {
        error_matches(&self.error_equals, error)
    }

    fn next(&self) -> StateId {
        self.next
    }

    fn output(&self, raw_input: Value, failure: &Failure) -> Result<Value, Failure> {
        catch_output(self, raw_input, failure)
    }

    fn with_language(&self) -> Option<&Catcher> {
        (self.assign.is_some() || self.output.is_some()).then_some(self)
    }
}

/// A catcher compiled into generated code (no `Assign`, no JSONata `Output`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticCatcher {
    /// `ErrorEquals`.
    pub error_equals: &'static [&'static str],
    /// `ResultPath`.
    pub result_path: CatchPath,
    /// `Next`.
    pub next: StateId,
}

/// A [`StaticCatcher`]'s ResultPath.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CatchPath {
    /// `null`: the raw input, unchanged.
    Discard,
    /// `$`: the Error Output alone.
    Replace,
    /// Any other Reference Path: its steps and its text (for the failure's wording).
    Steps(&'static [SingularStep<'static>], &'static str),
}

impl CatchRule for StaticCatcher {
    fn matches(&self, error: &str) -> bool {
        error_matches(self.error_equals, error)
    }

    fn next(&self) -> StateId {
        self.next
    }

    fn output(&self, raw_input: Value, failure: &Failure) -> Result<Value, Failure> {
        match self.result_path {
            CatchPath::Discard => Ok(raw_input),
            CatchPath::Replace => Ok(failure.to_error_output()),
            CatchPath::Steps(steps, text) => {
                let mut out = raw_input;
                wfc_ir::jsonpath::set_steps(&mut out, steps.iter().copied(), text, failure.to_error_output())
                    .map_err(|e| crate::io::result_path_failure(text, &e))?;
                Ok(out)
            }
        }
    }
}

/// A catcher compiled into generated code, for a `Catch` table in which some catcher has a
/// JSONPath `Assign`: a [`StaticCatcher`] and, where it has one, its `Assign` as Rust.
#[derive(Clone, Copy)]
pub struct AssignCatcher {
    /// ErrorEquals, ResultPath and Next.
    pub catcher: StaticCatcher,
    /// `Assign`.
    pub assign: Option<CatchAssign>,
}

/// A catcher's JSONata `Assign` compiled to Rust: its values from the execution (for `$random()`
/// and `$uuid()`) and the `$states` bindings (`errorOutput`, `input`, `context`).
pub type CatchJsonataAssign = fn(&crate::Execution, &Bindings<'_>) -> Result<crate::exec::Assigned, Failure>;

/// A catcher's JSONata `Output` compiled to Rust, as [`CatchJsonataAssign`].
pub type CatchJsonataOutput = fn(&crate::Execution, &Bindings<'_>) -> Result<Value, Failure>;

/// A catcher compiled into generated code, for a `Catch` table of a JSONata state in which some
/// catcher has an `Assign` or `Output`: a [`StaticCatcher`] and those two as Rust.
#[derive(Clone, Copy)]
pub struct JsonataCatcher {
    /// ErrorEquals, ResultPath (the Error Output when there is no `Output`) and Next.
    pub catcher: StaticCatcher,
    /// `Assign`.
    pub assign: Option<CatchJsonataAssign>,
    /// `Output`.
    pub output: Option<CatchJsonataOutput>,
}

impl CatchRule for JsonataCatcher {
    fn matches(&self, error: &str) -> bool {
        self.catcher.matches(error)
    }

    fn next(&self) -> StateId {
        self.catcher.next
    }

    fn output(&self, raw_input: Value, failure: &Failure) -> Result<Value, Failure> {
        self.catcher.output(raw_input, failure)
    }

    fn jsonata_code(&self) -> Option<&JsonataCatcher> {
        (self.assign.is_some() || self.output.is_some()).then_some(self)
    }
}

impl CatchRule for AssignCatcher {
    fn matches(&self, error: &str) -> bool {
        self.catcher.matches(error)
    }

    fn next(&self) -> StateId {
        self.catcher.next
    }

    fn output(&self, raw_input: Value, failure: &Failure) -> Result<Value, Failure> {
        self.catcher.output(raw_input, failure)
    }

    fn assign_code(&self) -> Option<CatchAssign> {
        self.assign
    }
}

/// Applies a jitter strategy to a computed delay. `FULL` draws uniformly from `[0, delay]`.
pub fn jittered<R: Rng + ?Sized>(delay: Duration, jitter: Jitter, rng: &mut R) -> Duration {
    match jitter {
        Jitter::None => delay,
        Jitter::Full => {
            let max = delay.as_secs_f64();
            if max <= 0.0 {
                return Duration::ZERO;
            }
            let secs = rng.random_range(0.0..=max);
            Duration::try_from_secs_f64(secs).unwrap_or(delay).min(delay)
        }
    }
}

/// Retry bookkeeping for one visit to a state: a counter per retrier.
#[derive(Debug, Clone, Default)]
pub struct RetryState {
    counts: Vec<u32>,
    total: u32,
}

/// What to do about a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryDecision {
    /// Retry after this delay (jitter already applied). `retrier` is its index in `Retry`.
    Retry {
        /// Index of the retrier that matched.
        retrier: usize,
        /// How long to wait before the next attempt.
        delay: Duration,
    },
    /// No retrier matched, or the matching one is exhausted: go to Catch.
    GiveUp,
}

impl RetryState {
    /// Fresh counters for `retriers` (all zero).
    pub fn new<T>(retriers: &[T]) -> RetryState {
        // Without Retry (most Tasks), no call into the allocator's zeroed path to learn that
        // nothing is allocated: a table known only at run time (`abi::PlainTask`'s) cost ~23
        // instructions a visit there.
        let counts = if retriers.is_empty() { Vec::new() } else { vec![0; retriers.len()] };
        RetryState { counts, total: 0 }
    }

    /// Retries so far in this visit, over all retriers (`$$.State.RetryCount`).
    pub fn retry_count(&self) -> u32 {
        self.total
    }

    /// Decides whether `error` is retried, counting the retry if so. Terminal errors
    /// (`States.Runtime`, `States.DataLimitExceeded`) never match.
    pub fn decide<T: RetryRule, R: Rng + ?Sized>(&mut self, retriers: &[T], error: &str, rng: &mut R) -> RetryDecision {
        let Some(index) = retriers.iter().position(|r| r.matches(error)) else {
            return RetryDecision::GiveUp;
        };
        let (Some(retrier), Some(count)) = (retriers.get(index), self.counts.get_mut(index)) else {
            return RetryDecision::GiveUp;
        };
        if *count >= retrier.max_attempts() {
            return RetryDecision::GiveUp;
        }
        *count += 1;
        self.total = self.total.saturating_add(1);
        let delay = jittered(retrier.delay(*count), retrier.jitter(), rng);
        RetryDecision::Retry { retrier: index, delay }
    }
}

/// Whether a retrier's or catcher's `ErrorEquals` matches `error`. The rule (exact names,
/// `States.ALL`, `States.TaskFailed` as a wildcard except for `States.Timeout`, terminal errors
/// never) lives in [`wfc_ir::errors::matches`] so the compiler and runtime share it.
pub fn error_matches<S: AsRef<str>>(error_equals: &[S], error: &str) -> bool {
    wfc_ir::errors::matches(error_equals, error)
}

/// The first catcher whose `ErrorEquals` matches `error` (terminal errors match none).
pub fn find_catcher<'a, C: CatchRule>(catchers: &'a [C], error: &str) -> Option<&'a C> {
    catchers.iter().find(|c| c.matches(error))
}

/// A catcher's output: the raw state input with the Error Output `{"Error","Cause"}` placed at
/// the catcher's ResultPath (`null` keeps the raw input, `$` replaces it).
pub fn catch_output(catcher: &Catcher, raw_input: Value, failure: &Failure) -> Result<Value, Failure> {
    crate::io::result_path(&catcher.result_path, raw_input, failure.to_error_output())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn delays_follow_the_formula() {
        let r = Retrier { interval_seconds: 1, max_attempts: 5, backoff_rate: 2.0, ..Retrier::new(vec!["E".into()]) };
        let d: Vec<u64> = (1..=4).map(|n| backoff_delay(&r, n).as_secs()).collect();
        assert_eq!(d, [1, 2, 4, 8]);
        let capped = Retrier { max_delay_seconds: Some(3), ..r };
        assert_eq!(backoff_delay(&capped, 4), Duration::from_secs(3));
        let huge = Retrier { backoff_rate: 1e300, ..Retrier::new(vec!["E".into()]) };
        assert_eq!(backoff_delay(&huge, 10), MAX_RETRY_DELAY);
    }

    #[test]
    fn counts_per_retrier_and_gives_up() {
        let retriers = vec![
            Retrier { max_attempts: 2, ..Retrier::new(vec!["A".into()]) },
            Retrier::new(vec!["States.ALL".into()]),
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut st = RetryState::new(&retriers);
        assert!(matches!(st.decide(&retriers, "A", &mut rng), RetryDecision::Retry { retrier: 0, .. }));
        assert!(matches!(st.decide(&retriers, "A", &mut rng), RetryDecision::Retry { retrier: 0, .. }));
        // Exhausted: no fall-through to the States.ALL retrier.
        assert_eq!(st.decide(&retriers, "A", &mut rng), RetryDecision::GiveUp);
        assert!(matches!(st.decide(&retriers, "B", &mut rng), RetryDecision::Retry { retrier: 1, .. }));
        assert_eq!(st.decide(&retriers, "States.Runtime", &mut rng), RetryDecision::GiveUp);
        assert_eq!(st.retry_count(), 3);
    }

    #[test]
    fn task_failed_is_a_wildcard_except_for_timeout_and_terminal_errors() {
        let tf = vec!["States.TaskFailed".to_owned()];
        assert!(error_matches(&tf, "States.TaskFailed"));
        assert!(error_matches(&tf, "PaymentDeclined"));
        assert!(!error_matches(&tf, "States.Timeout"));
        assert!(!error_matches(&tf, "States.Runtime"));
        assert!(!error_matches(&tf, "States.DataLimitExceeded"));
        assert!(!error_matches(&["Other".to_owned()], "PaymentDeclined"));
    }
}
