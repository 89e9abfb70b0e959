//! A heap-allocation counter for test binaries that check "no allocation per step".
//!
//! The pattern of `tests/no_alloc.rs`: [`CountingAllocator`] forwards to `System` and, while
//! counting is on, counts the allocations made on *marked* threads only: the test's own thread
//! and the workers of the rayon pool it runs in ([`mark_counted_threads`]). The harness's threads
//! are not counted (its main thread prints "has been running for over 60 seconds", which would
//! make a long test's count flaky). A binary opts in with
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: support::alloc_count::CountingAllocator = support::alloc_count::CountingAllocator;
//! ```
//!
//! The counter is process-wide: tests of one binary that count must not overlap (take
//! [`SERIAL`]).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// Held by every test of a binary that counts, so their counts do not mix.
pub static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    /// Set on the threads whose allocations count.
    static COUNTED_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks (or unmarks) this thread and every worker of the current rayon pool (the one
/// `pool.install` runs in, else the global pool) as counted.
pub fn mark_counted_threads(on: bool) {
    rayon::broadcast(|_| COUNTED_THREAD.with(|c| c.set(on)));
    COUNTED_THREAD.with(|c| c.set(on));
}

/// Counts while `on` (allocations on marked threads only).
pub fn set_counting(on: bool) {
    COUNTING.store(on, Ordering::SeqCst);
}

/// Allocations counted since the last [`take_count`], and resets the count.
pub fn take_count() -> usize {
    ALLOCATIONS.swap(0, Ordering::SeqCst)
}

/// Runs `f` with counting on and returns its result and the allocations it made on marked
/// threads (mark them first).
pub fn count<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let _ = take_count();
    set_counting(true);
    let r = f();
    set_counting(false);
    (r, take_count())
}

fn count_one() {
    if COUNTING.load(Ordering::Relaxed) && COUNTED_THREAD.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

/// `System`, counting allocations (see the module doc).
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is `System`'s; the counting touches atomics and a const-initialised
// thread-local only (`try_with`: it may be gone while a thread shuts down).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}
