//! Stage timers: always on and cheap (two clock reads per stage).

use std::time::Instant;

/// The stages of a substep, in pipeline order (DESIGN.md "The step").
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
