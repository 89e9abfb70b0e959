//! Per-frame statistics: data, never printing.

use crate::runtime::profile::StageTimes;

/// What one frame did: time per stage, iterations, contacts, strain, budget.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameStats {
    /// Milliseconds per stage, summed over substeps and cloths.
    pub stage_ms: StageTimes,
    /// Wall-clock milliseconds of the whole frame.
    pub frame_ms: f64,
    /// Substeps taken (accepted), over all cloths.
    pub substeps: u32,
    /// Substeps rejected by step control and retried at half the step.
    pub rejected_substeps: u32,
    /// CG iterations, summed over every solve of the frame.
    pub cg_iterations: u32,
    /// Largest CG iteration count of a single solve.
    pub cg_max_iterations: u32,
    /// Largest final relative residual of a solve.
    pub cg_residual: f64,
    /// Solves that stopped at the iteration cap or deadline before the tolerance.
    pub cg_unconverged: u32,
    /// Solves that met a non-positive curvature (matrix not SPD on the free space).
    pub cg_indefinite: u32,
    /// Vertex–collider contacts active in the last substep.
    pub contacts: u32,
    /// Contacts released because the constraint would pull.
    pub contacts_released: u32,
    /// Largest edge strain |l / l0 − 1| at the end of the frame.
    pub max_strain: f32,
    /// Kinetic + gravitational + elastic energy at the end of the frame (J).
    pub energy: f64,
    /// True if the frame's wall-clock deadline passed during the frame.
    pub deadline_hit: bool,
}

impl FrameStats {
    /// Folds one solve's outcome in.
    pub fn add_solve(&mut self, iterations: u32, residual: f64, converged: bool, indefinite: bool) {
        self.cg_iterations += iterations;
        self.cg_max_iterations = self.cg_max_iterations.max(iterations);
        self.cg_residual = self.cg_residual.max(residual);
        self.cg_unconverged += u32::from(!converged);
        self.cg_indefinite += u32::from(indefinite);
    }
}
