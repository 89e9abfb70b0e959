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
    /// Whether the caps adapt to measured stage costs ([`Governor`]).
    pub governor: GovernorMode,
}

/// How a world's iteration caps are chosen frame to frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GovernorMode {
    /// The caps of the [`Budget`], every frame: results depend only on the
    /// scene (and the deadline, if one is set and passes).
    #[default]
    Fixed,
    /// The [`Governor`] lowers the CG cap when the measured frame cost would
    /// overrun `frame_ms` and raises it back (at most to the budget's cap)
    /// when there is room. Deterministic given the same measured times.
    Adaptive,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            frame_ms: None,
            cg_max_iterations: 200,
            newton_max_iterations: 20,
            governor: GovernorMode::Fixed,
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

    /// Marks the deadline as passed: a copy of it (one per cloth stepping in
    /// parallel) found it passed, so every later stage of the frame sees it.
    pub fn latch(&mut self) {
        self.hit = true;
    }
}

/// Adapts the CG iteration cap across frames to keep frames inside the
/// budget, from exponential moving averages of two measured costs:
/// the time per CG iteration and the time of everything else in a frame.
///
/// The next frame's cap is the largest iteration count whose predicted frame
/// time, `other + solves × cap × per_iteration`, fits in [`Governor::TARGET`]
/// of `frame_ms`; it is clamped to `[MIN_CG, budget.cg_max_iterations]` and
/// moves by at most a factor of two per frame (so one noisy measurement
/// cannot collapse it). The state is a few `f64`s updated by fixed arithmetic,
/// so equal measured times give equal caps on any machine. With
/// [`GovernorMode::Fixed`], or without a `frame_ms`, the cap is the budget's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Governor {
    /// Moving average of milliseconds per CG iteration (`None` until measured).
    per_iteration_ms: Option<f64>,
    /// Moving average of the milliseconds of a frame spent outside CG.
    other_ms: f64,
    /// Solves per frame last frame (substeps × cloths, plus retries).
    solves: u32,
    /// The cap for the next frame.
    cg_cap: u32,
}

impl Governor {
    /// Weight of the newest measurement in the moving averages.
    pub const ALPHA: f64 = 0.25;
    /// Fraction of `frame_ms` the governor aims to use (headroom for noise).
    pub const TARGET: f64 = 0.9;
    /// The governor never caps CG below this many iterations.
    pub const MIN_CG: u32 = 4;

    /// A governor starting at the budget's caps.
    #[must_use]
    pub fn new(budget: &Budget) -> Self {
        Self {
            per_iteration_ms: None,
            other_ms: 0.0,
            solves: 1,
            cg_cap: budget.cg_max_iterations,
        }
    }

    /// The CG cap to use for the next frame under `budget`.
    #[must_use]
    pub fn cg_cap(&self, budget: &Budget) -> u32 {
        match (budget.governor, budget.frame_ms) {
            (GovernorMode::Adaptive, Some(_)) => self.cg_cap.min(budget.cg_max_iterations),
            _ => budget.cg_max_iterations,
        }
    }

    /// Folds in one frame's measurements: its total time `frame_ms`, the time
    /// spent in CG `solve_ms`, the CG iterations run and the solves made.
    pub fn observe(
        &mut self,
        budget: &Budget,
        frame_ms: f64,
        solve_ms: f64,
        cg_iterations: u32,
        solves: u32,
    ) {
        let ema = |old: f64, new: f64| old + Self::ALPHA * (new - old);
        let other = (frame_ms - solve_ms).max(0.0);
        self.other_ms = match self.per_iteration_ms {
            None => other,
            Some(_) => ema(self.other_ms, other),
        };
        if cg_iterations > 0 {
            let per = solve_ms.max(0.0) / f64::from(cg_iterations);
            self.per_iteration_ms = Some(self.per_iteration_ms.map_or(per, |old| ema(old, per)));
        }
        self.solves = solves.max(1);
        let (GovernorMode::Adaptive, Some(target_ms), Some(per)) =
            (budget.governor, budget.frame_ms, self.per_iteration_ms)
        else {
            self.cg_cap = budget.cg_max_iterations;
            return;
        };
        let room = Self::TARGET * target_ms - self.other_ms;
        let wanted = if per > 0.0 {
            (room / (per * f64::from(self.solves))).floor()
        } else {
            f64::INFINITY
        };
        let lo = Self::MIN_CG.min(budget.cg_max_iterations);
        let previous = self.cg_cap.max(lo);
        // At most halve or double per frame; then the budget's bounds.
        let wanted = wanted.clamp(
            f64::from(previous / 2),
            f64::from(previous.saturating_mul(2)),
        );
        self.cg_cap = (wanted as u32).clamp(lo, budget.cg_max_iterations);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adaptive(frame_ms: f64, cap: u32) -> Budget {
        Budget {
            frame_ms: Some(frame_ms),
            cg_max_iterations: cap,
            governor: GovernorMode::Adaptive,
            ..Budget::default()
        }
    }

    /// Frames of `other_ms` outside CG and `per_ms` per CG iteration, each
    /// running `min(cap, need)` iterations in each of 2 solves.
    fn run(
        g: &mut Governor,
        b: &Budget,
        frames: usize,
        other_ms: f64,
        per_ms: f64,
        need: u32,
    ) -> Vec<u32> {
        (0..frames)
            .map(|_| {
                let cap = g.cg_cap(b);
                let its = 2 * cap.min(need);
                let solve = per_ms * f64::from(its);
                g.observe(b, other_ms + solve, solve, its, 2);
                cap
            })
            .collect()
    }

    #[test]
    fn adaptive_cap_settles_inside_the_budget() {
        // 6 ms outside CG, 0.1 ms per iteration, 2 solves, CG wants 100:
        // room = 0.9·16 − 6 = 8.4 ms → 42 iterations per solve.
        let b = adaptive(16.0, 100);
        let mut g = Governor::new(&b);
        let caps = run(&mut g, &b, 40, 6.0, 0.1, 100);
        assert_eq!(caps[0], 100, "starts at the budget's cap");
        let last = *caps.last().unwrap();
        assert!((40..=42).contains(&last), "settled at {last}: {caps:?}");
        let frame = 6.0 + 0.1 * 2.0 * f64::from(last);
        assert!(frame <= 16.0, "predicted frame {frame} ms");
    }

    #[test]
    fn adaptive_cap_recovers_when_frames_get_cheap() {
        let b = adaptive(16.0, 100);
        let mut g = Governor::new(&b);
        let _ = run(&mut g, &b, 30, 14.0, 0.1, 100);
        assert!(g.cg_cap(&b) <= 8, "squeezed: {}", g.cg_cap(&b));
        let caps = run(&mut g, &b, 30, 1.0, 0.01, 100);
        assert_eq!(*caps.last().unwrap(), 100, "{caps:?}");
    }

    #[test]
    fn governor_is_deterministic_given_the_same_times() {
        let b = adaptive(10.0, 200);
        let (mut g1, mut g2) = (Governor::new(&b), Governor::new(&b));
        let a = run(&mut g1, &b, 25, 3.3, 0.07, 150);
        let c = run(&mut g2, &b, 25, 3.3, 0.07, 150);
        assert_eq!(a, c);
        assert_eq!(g1, g2);
    }

    #[test]
    fn fixed_mode_and_no_deadline_keep_the_budget_cap() {
        for b in [
            Budget {
                frame_ms: Some(1.0),
                cg_max_iterations: 80,
                ..Budget::default()
            },
            Budget {
                frame_ms: None,
                cg_max_iterations: 80,
                governor: GovernorMode::Adaptive,
                ..Budget::default()
            },
        ] {
            let mut g = Governor::new(&b);
            let caps = run(&mut g, &b, 10, 50.0, 1.0, 80);
            assert!(caps.iter().all(|&c| c == 80), "{b:?}: {caps:?}");
        }
    }
}
