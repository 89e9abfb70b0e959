//! Per-frame statistics: data, never printing.

use crate::collide::resolve::{CollideTimes, CollisionStats};
use crate::runtime::profile::StageTimes;

/// What one frame did: time per stage, iterations, contacts, strain, budget.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameStats {
    /// Milliseconds per stage, summed over substeps and cloths.
    pub stage_ms: StageTimes,
    /// The collide stage split into its sub-stages (ms, summed likewise).
    pub collide_ms: CollideTimes,
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
    /// [`FrameStats::max_strain`] over the *free* edges only: those with an end that neither a pin
    /// nor a kinematic body drives (`collide::strain_limit`, "Forced edges"). The strain limiter
    /// answers for these.
    pub max_strain_free: f32,
    /// [`FrameStats::max_strain`] over the edges forced by pins (both ends kinematic); 0 when there
    /// is none.
    pub max_strain_pins: f32,
    /// [`FrameStats::max_strain`] over the edges forced by bodies (each end pinned or held against a
    /// kinematic body by a collision of the cloth's last collision stage, one at least held); 0 when
    /// there is none.
    pub max_strain_bodies: f32,
    /// Kinetic + gravitational + elastic energy at the end of the frame (J).
    pub energy: f64,
    /// True if the frame's wall-clock deadline passed during the frame.
    pub deadline_hit: bool,
    /// Close pairs given repulsion (summed over substeps).
    pub proximity_pairs: u32,
    /// Collisions found by CCD (summed over substeps and rounds).
    pub ccd_hits: u32,
    /// CCD rounds run (summed).
    pub ccd_rounds: u32,
    /// Strain-limiting sweeps that corrected something (summed over the limiter's calls).
    pub strain_sweeps: u32,
    /// Impact-zone rounds run (summed).
    pub zone_rounds: u32,
    /// Largest number of impact zones in one substep.
    pub impact_zones: u32,
    /// Vertices in the largest impact zone of the frame.
    pub largest_zone: u32,
    /// Substeps whose collision stage took its last resort (`collide::last_resort`).
    pub last_resorts: u32,
    /// Substeps whose CCD or zone rounds the deadline stopped before their caps.
    pub rounds_cut: u32,
    /// Collisions the last resorts' final checks still found (summed over substeps).
    pub last_resort_hits: u32,
    /// Substeps whose last resort found bodies moving differently, so that the cloth gave way
    /// (each free vertex following the body nearest it).
    pub last_resorts_gave_way: u32,
    /// Pool overflows: substeps in which a collision pool had to grow, plus
    /// cloths whose frame arena took a new chunk this frame, plus isometric
    /// contact-pool growths. Each is an allocation in a step; after it the pool
    /// keeps its new size.
    pub pool_overflows: u32,
    /// Substeps in which an isometric cloth and another cloth, not told to keep apart, came
    /// within reach of each other (counted per pair). They do not collide: the frame check
    /// (`StepError::UnsupportedLayers`) refuses such frames when it sees them coming, and this
    /// counts what it could not foresee.
    pub layer_pairs_unsupported: u32,
    /// Bytes of the frame arenas used this frame: per cloth the high-water
    /// mark (the largest use seen at the end of a collision stage; the stage
    /// frees its lists when it returns), summed over cloths (`runtime::arena`).
    pub arena_bytes: u64,
    /// The CG cap this frame ran with (the governor's, or the budget's).
    pub cg_cap: u32,
    /// Isometric cloths (Wang 2012): Gauss–Newton iterations, summed over every projection.
    pub newton_iterations: u32,
    /// Isometric cloths: the largest Gauss–Newton iteration count of one substep.
    pub newton_max_iterations: u32,
    /// Isometric cloths: projections that stopped at the Newton cap or the deadline.
    pub newton_unconverged: u32,
    /// Isometric cloths: nodes given contact rows (Table 3.1 line 4), summed over substeps.
    pub contact_rows: u32,
    /// Isometric cloths: largest base-edge strain at the end of the frame, measured through the
    /// edge's red node, `(‖x_p − x_m‖ + ‖x_m − x_q‖)/ℓ − 1` (Wang 2012 Fig. 4.2; `docs/methods/references.md`).
    pub base_strain_midpoint: f64,
    /// Isometric cloths: largest base-edge strain end to end, `‖x_p − x_q‖/ℓ − 1`.
    pub base_strain_end_to_end: f64,
    /// Isometric cloths: bending energy at the end of the frame (J, Wang 2012 eq. 3.8).
    pub bending_energy: f64,
    /// Isometric cloths: largest strain of the inextensibility rows (the red–red edges of
    /// Wang 2012 eq. 3.1) at the end of the frame: what the strain tolerance bounds.
    /// `max_strain` is over every edge of the subdivided mesh, black–red edges included.
    pub row_strain: f64,
    /// Baraff–Witkin solves whose block IC(0) preconditioner needed a diagonal shift after a
    /// breakdown (`linalg::block_ldl`).
    pub precond_shifted: u32,
    /// Baraff–Witkin solves whose IC(0) broke down at every shift and that used block Jacobi.
    pub precond_fallbacks: u32,
    /// Isometric cloths: milliseconds in the assembly of the matrix the sparse Cholesky
    /// factors (`[solver.isometric] linear_solver = "cholesky"`).
    pub direct_assemble_ms: f64,
    /// Isometric cloths: milliseconds in the sparse Cholesky's numeric factorisations.
    pub factor_ms: f64,
    /// Isometric cloths: milliseconds in its triangular solves and contact elimination.
    pub direct_solve_ms: f64,
    /// Isometric cloths: Gauss–Newton iterations whose direct solve failed and used PCG.
    pub direct_fallbacks: u32,
    /// Isometric cloths: nodes the last collision pass of a step (Table 3.1 line 6, or line 3
    /// when nothing follows it) moved after the last projection, summed over substeps: their
    /// moves enter the state unprojected, so a frame with `failsafe_moved > 0` may end over the
    /// strain tolerance (the bounded re-projection rounds, `contact_rounds`, ran out).
    pub failsafe_moved: u32,
    /// Isometric cloths: projections that stopped unconverged and kept their best iterate
    /// rather than the last one.
    pub kept_best: u32,
    /// Isometric cloths: the most base-edge rows one projection ended with held
    /// (`[solver.isometric] base_edge_rows`; 0 when off).
    pub base_rows_held: u32,
    /// Baraff–Witkin cloths the frame stepped. Without any, the fields of that model (step
    /// control's `rejected_substeps`, the collider `contacts`, the preconditioner counts, the
    /// contacts, assemble and finish stage times) are zero.
    pub baraff_witkin_cloths: u32,
    /// Isometric cloths (Wang 2012) the frame stepped. Without any, the fields marked
    /// "Isometric cloths" are zero.
    pub isometric_cloths: u32,
}

impl FrameStats {
    /// Folds one collision stage's outcome in.
    pub fn add_collisions(&mut self, c: &CollisionStats) {
        self.proximity_pairs += c.proximity_pairs;
        self.ccd_hits += c.ccd_hits;
        self.ccd_rounds += c.ccd_rounds;
        self.strain_sweeps += c.strain_sweeps;
        self.zone_rounds += c.zone_rounds;
        self.impact_zones = self.impact_zones.max(c.impact_zones);
        self.largest_zone = self.largest_zone.max(c.largest_zone);
        self.last_resorts += u32::from(c.last_resort);
        self.rounds_cut += u32::from(c.rounds_cut);
        self.last_resort_hits += c.last_resort_hits;
        self.last_resorts_gave_way += u32::from(c.last_resort_gave_way);
        self.pool_overflows += u32::from(c.pool_grew);
        self.arena_bytes = self.arena_bytes.max(c.arena_bytes as u64);
        self.collide_ms.add(&c.times);
    }

    /// Folds one cloth's statistics of the same frame in: counts add up,
    /// largest values take the maximum, stage times add (so with cloths
    /// stepping in parallel they are CPU time, not wall time). `frame_ms` and
    /// `cg_cap` are the world's and are left alone.
    pub fn merge(&mut self, o: &FrameStats) {
        self.stage_ms.accumulate(&o.stage_ms);
        self.collide_ms.add(&o.collide_ms);
        self.substeps += o.substeps;
        self.rejected_substeps += o.rejected_substeps;
        self.cg_iterations += o.cg_iterations;
        self.cg_max_iterations = self.cg_max_iterations.max(o.cg_max_iterations);
        self.cg_residual = self.cg_residual.max(o.cg_residual);
        self.cg_unconverged += o.cg_unconverged;
        self.cg_indefinite += o.cg_indefinite;
        self.contacts += o.contacts;
        self.contacts_released += o.contacts_released;
        self.max_strain = self.max_strain.max(o.max_strain);
        self.max_strain_free = self.max_strain_free.max(o.max_strain_free);
        self.max_strain_pins = self.max_strain_pins.max(o.max_strain_pins);
        self.max_strain_bodies = self.max_strain_bodies.max(o.max_strain_bodies);
        self.energy += o.energy;
        self.deadline_hit |= o.deadline_hit;
        self.proximity_pairs += o.proximity_pairs;
        self.ccd_hits += o.ccd_hits;
        self.ccd_rounds += o.ccd_rounds;
        self.strain_sweeps += o.strain_sweeps;
        self.zone_rounds += o.zone_rounds;
        self.impact_zones = self.impact_zones.max(o.impact_zones);
        self.largest_zone = self.largest_zone.max(o.largest_zone);
        self.last_resorts += o.last_resorts;
        self.rounds_cut += o.rounds_cut;
        self.last_resort_hits += o.last_resort_hits;
        self.last_resorts_gave_way += o.last_resorts_gave_way;
        self.pool_overflows += o.pool_overflows;
        self.layer_pairs_unsupported += o.layer_pairs_unsupported;
        self.arena_bytes += o.arena_bytes;
        self.newton_iterations += o.newton_iterations;
        self.newton_max_iterations = self.newton_max_iterations.max(o.newton_max_iterations);
        self.newton_unconverged += o.newton_unconverged;
        self.contact_rows += o.contact_rows;
        self.base_strain_midpoint = self.base_strain_midpoint.max(o.base_strain_midpoint);
        self.base_strain_end_to_end = self.base_strain_end_to_end.max(o.base_strain_end_to_end);
        self.bending_energy += o.bending_energy;
        self.row_strain = self.row_strain.max(o.row_strain);
        self.precond_shifted += o.precond_shifted;
        self.precond_fallbacks += o.precond_fallbacks;
        self.direct_assemble_ms += o.direct_assemble_ms;
        self.factor_ms += o.factor_ms;
        self.direct_solve_ms += o.direct_solve_ms;
        self.direct_fallbacks += o.direct_fallbacks;
        self.failsafe_moved += o.failsafe_moved;
        self.kept_best += o.kept_best;
        self.base_rows_held = self.base_rows_held.max(o.base_rows_held);
        self.baraff_witkin_cloths += o.baraff_witkin_cloths;
        self.isometric_cloths += o.isometric_cloths;
    }

    /// Folds one solve's preconditioner outcome in: whether its factorisation needed a shift,
    /// and whether it fell back to block Jacobi.
    pub fn add_preconditioner(&mut self, shifted: bool, fallback: bool) {
        self.precond_shifted += u32::from(shifted);
        self.precond_fallbacks += u32::from(fallback);
    }

    /// Folds one solve's outcome in.
    pub fn add_solve(&mut self, iterations: u32, residual: f64, converged: bool, indefinite: bool) {
        self.cg_iterations += iterations;
        self.cg_max_iterations = self.cg_max_iterations.max(iterations);
        self.cg_residual = self.cg_residual.max(residual);
        self.cg_unconverged += u32::from(!converged);
        self.cg_indefinite += u32::from(indefinite);
    }
}
