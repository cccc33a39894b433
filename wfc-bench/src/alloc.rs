//! A counting global allocator: the system allocator plus counters for the number of
//! allocations and the live and peak heap bytes, read by the benchmark around each run.
//!
//! The counters are atomics shared by every thread, three locked instructions an allocation
//! (measured with `perf`: in the counting loop they were most of the time of the generated
//! step that builds `{"i": …}`). So they count only while [`COUNTING`] is on, and the timed
//! runs turn it off (see [`uncounted`]): a figure per second is the engine's, not the
//! instrumentation's, and allocations and peak bytes come from a counted run of their own.

#![allow(unsafe_code)] // Implementing `GlobalAlloc` is unsafe by definition; this only forwards.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};

/// The system allocator, counting as it goes.
pub(crate) struct Counting;

/// Whether the counters below count. A relaxed load, a plain `mov`, each allocation.
static COUNTING: AtomicBool = AtomicBool::new(true);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Signed: a block allocated while not counting and freed while counting takes its size off.
/// Only differences between two readings of one counted stretch mean anything.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn counting() -> bool {
    COUNTING.load(Ordering::Relaxed)
}

fn allocated(size: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    grew(size);
}

fn grew(by: usize) {
    let by = isize::try_from(by).unwrap_or(isize::MAX);
    let live = LIVE.fetch_add(by, Ordering::Relaxed).saturating_add(by);
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(by: usize) {
    LIVE.fetch_sub(isize::try_from(by).unwrap_or(isize::MAX), Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's own arguments, so `System`'s
// guarantees are ours; the counters are plain atomics and never touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            allocated(layout.size());
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counting() {
            allocated(layout.size());
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            shrank(layout.size());
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            // A reallocation is an allocation as far as cost goes (it may move the block).
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` with the counters off (the timed runs), then turns them back on.
pub(crate) fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    struct On;
    impl Drop for On {
        fn drop(&mut self) {
            COUNTING.store(true, Ordering::Relaxed);
        }
    }
    COUNTING.store(false, Ordering::Relaxed);
    let _on = On;
    f()
}

/// The number of allocations (and reallocations) so far.
pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Live heap bytes now, as counted (see [`LIVE`]).
fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a new peak measurement from the current live bytes; returns the base that
/// [`peak_since`] takes.
pub(crate) fn reset_peak() -> isize {
    let now = live();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The highest live byte count since [`reset_peak`] returned `base`, above `base`.
pub(crate) fn peak_since(base: isize) -> usize {
    usize::try_from(PEAK.load(Ordering::Relaxed).saturating_sub(base)).unwrap_or(0)
}
