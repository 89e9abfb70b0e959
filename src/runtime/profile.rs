//! Stage timers: always on and cheap (two clock reads per stage).

use std::time::Instant;

/// The stages of a substep, in pipeline order (see `ARCHITECTURE.md`, "The step").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum Stage {
    /// Colliders and pins move to their poses at t + h.
    Kinematics,
    /// Contacts with analytic colliders become velocity filters.
    Contacts,
    /// Forces and Jacobians are assembled into the fixed-pattern matrix.
    Assemble,
    /// The linear solve (filtered PCG).
    Solve,
    /// Collision processing on the candidate velocities.
    Collide,
    /// Positions and velocities are written back; friction; step control.
    Finish,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 6] = [
        Stage::Kinematics,
        Stage::Contacts,
        Stage::Assemble,
        Stage::Solve,
        Stage::Collide,
        Stage::Finish,
    ];
    /// Number of stages.
    pub const COUNT: usize = Self::ALL.len();

    /// The stage's name as `<module>.<stage>` (also the Tracy zone name).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Stage::Kinematics => "pipeline.kinematics",
            Stage::Contacts => "integrate.contacts",
            Stage::Assemble => "integrate.assemble",
            Stage::Solve => "linalg.pcg",
            Stage::Collide => "collide.resolve",
            Stage::Finish => "pipeline.finish",
        }
    }

    /// Short column name for CSV and tables.
    #[must_use]
    pub fn column(self) -> &'static str {
        match self {
            Stage::Kinematics => "kinematics",
            Stage::Contacts => "contacts",
            Stage::Assemble => "assemble",
            Stage::Solve => "solve",
            Stage::Collide => "collide",
            Stage::Finish => "finish",
        }
    }
}

/// Accumulated milliseconds per stage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    ms: [f64; Stage::COUNT],
}

impl StageTimes {
    /// Milliseconds spent in `stage`.
    #[must_use]
    pub fn get(&self, stage: Stage) -> f64 {
        self.ms[stage as usize]
    }

    /// Adds `ms` to `stage`.
    pub fn add(&mut self, stage: Stage, ms: f64) {
        self.ms[stage as usize] += ms;
    }

    /// Adds every stage of `other`.
    pub fn accumulate(&mut self, other: &StageTimes) {
        for (a, b) in self.ms.iter_mut().zip(other.ms) {
            *a += b;
        }
    }

    /// Sum over all stages (ms).
    #[must_use]
    pub fn total(&self) -> f64 {
        self.ms.iter().sum()
    }

    /// Times `f` and charges it to `stage`.
    pub fn time<R>(&mut self, stage: Stage, f: impl FnOnce() -> R) -> R {
        let t0 = Instant::now();
        let r = f();
        self.add(stage, t0.elapsed().as_secs_f64() * 1e3);
        r
    }
}

/// A profiler zone for one stage, open while the guard lives.
///
/// With `--features tracy` and a running Tracy client it is a Tracy zone
/// named [`Stage::name`] (`<module>.<stage>`); without the feature it is an
/// empty value and no Tracy code is compiled. Zones must close in the order
/// they opened (Tracy's rule): drop a stage's zone before opening the next.
#[must_use = "the zone closes when the guard is dropped"]
pub struct Zone {
    #[cfg(feature = "tracy")]
    _span: Option<tracy_client::Span>,
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Zone")
    }
}

impl Zone {
    /// Closes the zone (the same as dropping it; reads better between stages).
    #[inline]
    pub fn end(self) {}
}

/// Opens the zone of `stage` (see [`Zone`]).
#[inline]
pub fn zone(stage: Stage) -> Zone {
    #[cfg(feature = "tracy")]
    {
        // `span!` needs a literal name, so one arm per stage; a zone is only
        // opened when a client is running.
        let span = tracy_client::Client::running().map(|_| match stage {
            Stage::Kinematics => tracy_client::span!("pipeline.kinematics"),
            Stage::Contacts => tracy_client::span!("integrate.contacts"),
            Stage::Assemble => tracy_client::span!("integrate.assemble"),
            Stage::Solve => tracy_client::span!("linalg.pcg"),
            Stage::Collide => tracy_client::span!("collide.resolve"),
            Stage::Finish => tracy_client::span!("pipeline.finish"),
        });
        Zone { _span: span }
    }
    #[cfg(not(feature = "tracy"))]
    {
        let _ = stage;
        Zone {}
    }
}

/// Ends a frame for the profiler: with `--features tracy` and a running
/// client, one frame mark and the plots `cg_iterations`, `contacts`
/// (collider contacts + close pairs + CCD hits) and `budget_use` (frame time
/// over the frame budget, 0 without one). Nothing without the feature.
#[inline]
pub fn frame_end(stats: &crate::runtime::stats::FrameStats, budget_ms: Option<f64>) {
    #[cfg(feature = "tracy")]
    if let Some(client) = tracy_client::Client::running() {
        client.frame_mark();
        client.plot(
            tracy_client::plot_name!("cg_iterations"),
            f64::from(stats.cg_iterations),
        );
        client.plot(
            tracy_client::plot_name!("contacts"),
            f64::from(stats.contacts + stats.proximity_pairs + stats.ccd_hits),
        );
        let use_ = budget_ms.map_or(0.0, |b| stats.frame_ms / b);
        client.plot(tracy_client::plot_name!("budget_use"), use_);
    }
    #[cfg(not(feature = "tracy"))]
    let _ = (stats, budget_ms);
}
