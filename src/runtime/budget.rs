//! The frame budget: iteration caps, a wall-clock deadline, and the clock that
//! measures it (replaceable, so tests can make a deadline pass on demand).

use std::sync::Arc;
use std::time::Instant;

/// A monotonic clock in seconds. The runtime reads time only through this
/// trait, so a test can inject a clock that jumps past the deadline.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Seconds since an arbitrary fixed origin; never decreases.
    fn now(&self) -> f64;
}

/// The wall clock (`std::time::Instant`).
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
}

/// Per-frame limits every model honours: iterations stop at the earliest of the
/// cap, the tolerance or the deadline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Wall-clock budget of one frame (ms); `None` means no deadline.
    pub frame_ms: Option<f64>,
    /// Cap on CG iterations per linear solve.
    pub cg_max_iterations: u32,
    /// Cap on Newton (Gauss–Newton) iterations per projection.
    pub newton_max_iterations: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            frame_ms: None,
            cg_max_iterations: 200,
            newton_max_iterations: 20,
        }
    }
}

/// The running deadline of one frame: when the frame started, when it must end.
#[derive(Clone, Debug)]
pub struct Deadline {
    clock: Arc<dyn Clock>,
    end: f64,
    hit: bool,
}

impl Deadline {
    /// A deadline `frame_ms` after now (none when `frame_ms` is `None`).
    #[must_use]
    pub fn start(clock: Arc<dyn Clock>, frame_ms: Option<f64>) -> Self {
        let end = match frame_ms {
            Some(ms) => clock.now() + ms * 1e-3,
            None => f64::INFINITY,
        };
        Self {
            clock,
            end,
            hit: false,
        }
    }

    /// True once the deadline has passed; latches, so later checks are free
    /// of clock reads and every later stage sees the same answer.
    pub fn passed(&mut self) -> bool {
        if !self.hit && self.end.is_finite() && self.clock.now() >= self.end {
            self.hit = true;
        }
        self.hit
    }

    /// True if any check so far found the deadline passed.
    #[must_use]
    pub fn was_hit(&self) -> bool {
        self.hit
    }
}
