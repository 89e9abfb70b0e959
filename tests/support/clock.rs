//! Clocks for frame-deadline tests: the deadline passes after a known number of clock reads,
//! whatever the machine's speed.

use std::sync::atomic::{AtomicU64, Ordering};

use weft::runtime::budget::Clock;

/// A clock that advances `step_s` seconds every time it is read.
#[derive(Debug)]
pub struct SteppingClock {
    reads: AtomicU64,
    step_s: f64,
}

impl SteppingClock {
    /// A clock at 0 that moves `step_s` seconds at every read.
    #[must_use]
    pub fn new(step_s: f64) -> Self {
        Self {
            reads: AtomicU64::new(0),
            step_s,
        }
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> f64 {
        self.reads.fetch_add(1, Ordering::Relaxed) as f64 * self.step_s
    }
}
