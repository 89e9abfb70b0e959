//! One isometric cloth as the world steps it (Wang 2012): the 4:1 subdivision of its input mesh,
//! the constraints of eq. 3.1–3.4, the quadratic bending of eq. 3.5–3.8 and the Table 3.1 step
//! ([`IsometricStepper`]), behind one `step` call on the world's `f32` state.
//!
//! # What the world sees
//!
//! The world's cloth state is the **subdivided conforming mesh**: black nodes `0..V` are the
//! input vertices (same indices, so pins given on the input mesh pin black nodes), red nodes
//! `V..V+E` the input edges' midpoints. Everything downstream of the state — the OBJ files of
//! `weft run`, `state_hash`, the C ABI's position and normal readback, the collision stage — uses
//! that mesh: for the isometric model the output is the subdivided conforming mesh.
//!
//! # State in `f64`
//!
//! The Gauss–Newton projection and the BDF2 history work in `f64` (the constraints are held to
//! 0.1 % strain on centimetre edges). This type keeps `f64` copies of positions and velocities;
//! the world's `f32` state is written from them after every step. A host edit of the `f32`
//! state between steps (a teleport, a pin target) is detected per node — the `f32` value no
//! longer equals the rounded `f64` one — and taken over, so edits are never lost and an
//! untouched node keeps its full precision.
//!
//! # Choices
//!
//! - **Rest shape** ([`RestShape`]): `Input` uses the rest curvature `δ = L y⁰` of the input mesh
//!   (Wang 2012 eq. 3.8). `Flat` is Bergou's flat rest state (eq. 3.5, `δ = 0`) on interior red
//!   nodes; on boundary red nodes `δ = L y⁰` is kept, because `(L y⁰)_i ≠ 0` there even for a
//!   flat sheet (`docs/methods/isometric-model.md §A8`), so a flat sheet at rest has zero energy
//!   either way. For a flat input the two are identical.
//! - **Regularisation** (Wang 2012 eq. 3.30; `docs/methods/isometric-model.md` §A3, §A12,
//!   §A14): every constraint row (3.1), (3.3), (3.4) is a proximal row ([`RowRole::Proximal`],
//!   the method of multipliers) with `D = β (J W Jᵀ)_aa`
//!   ([`IsometricConstraints::row_regularisation`]), plus `β_c w_k` / `β_b w_k` on the conforming /
//!   boundary rows of black node `k`: `K` is positive definite despite the planar redundancy and
//!   the self-stresses of §A3, and the rows are hard at convergence (the thesis puts `D` only on
//!   friction rows). `β` is small (default `10⁻⁶`): the iteration reduces a violation in the
//!   near-null directions of `J W Jᵀ` only by `D / (σ + D)` per iteration, and `β = 10⁻²` made it
//!   crawl (measured with the fast-projection phase,
//!   [`ProjectionSettings::gauss_newton_iterations`], on the small contact scene of
//!   `tests/isometric_scene.rs`: 10 iterations from 1.6 % to 0.3 % strain; `10⁻⁶`: 3–7 iterations
//!   to 0.1 %).
//! - **Forces**: gravity, wind and air drag `−c m v` are explicit accelerations in the prediction
//!   `x̃ = xⁿ + h vⁿ + h² a` (Wang 2012 Table 3.1 line 1; `docs/methods/isometric-model.md §A11`).
//! - **Collision stage**: `collide::resolve` on the subdivided mesh, as the stepper runs it; the
//!   strain limiter of that stage is switched off (the inextensibility rows are the strain limit,
//!   and its velocity changes would be read as contacts by line 4 of Table 3.1).
//! - **Budget**: the Newton and PCG caps are the smaller of this cloth's and the world budget's;
//!   the deadline is asked before every Gauss–Newton iteration and inside every PCG (the
//!   collision fail-safe runs regardless).
#![deny(unsafe_code)]
// Per-node loops index several parallel arrays by the node number.
#![allow(clippy::needless_range_loop)]

use glam::{DVec3, Vec3};

use super::base_edge_rows::BaseEdgeRows;
use super::bdf2::Integrator;
use super::contact::{ColliderView, PinTarget};
use super::isometric::{
    BendingRows, IsometricReport, IsometricSettings, IsometricStepper, ProjectionTotals,
};
use super::mesh_obstacles::MeshObstacles;
#[cfg(doc)]
use super::projection::ProjectionSettings;
use super::projection::{DirectSolveTimes, RowFamily, RowRole, StrainScale};
use crate::collide::resolve::{ClothCollision, CollisionSettings, CollisionStats, ObstacleMeshes};
use crate::mesh::{MeshError, NO_TRIANGLE, Subdivision, Topology, TriMesh, subdivide};
use crate::model::constraint::ConstraintSet;
use crate::model::isometric::{BaseEdgeStrain, Family, IsometricConstraints, IsometricError};
use crate::model::quadratic_bending::{BendingError, QuadraticBending};

/// The rest shape of the bending energy (Wang 2012 eq. 3.5 vs eq. 3.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestShape {
    /// Flat rest state on interior red nodes (eq. 3.5; see the module doc for the boundary).
    Flat,
    /// The input mesh's curvature, `δ = L y⁰` (eq. 3.8).
    #[default]
    Input,
}

/// Everything an isometric cloth needs besides its mesh and the world's cloth settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IsometricDesc {
    /// Bending stiffness `k_b` (J, ≥ 0; Wang 2012 eq. 3.5, Table 4.1).
    pub bending_stiffness: f64,
    /// Rest shape of the bending energy.
    pub rest_shape: RestShape,
    /// `β`: proximal weight of every constraint row, `D = β (J W Jᵀ)_aa` (dimensionless, ≥ 0;
    /// see the module doc).
    pub proximal_weight: f64,
    /// `β_b`: extra proximal weight of the boundary rows (3.4), `D += β_b w_k` (≥ 0).
    pub boundary_compliance: f64,
    /// `β_c`: extra proximal weight of the conforming rows (3.3), `D += β_c w_k` (≥ 0).
    pub conforming_compliance: f64,
    /// Backward Euler or BDF2.
    pub integrator: Integrator,
    /// The step: tolerances, caps, coupling, friction compliance.
    pub step: IsometricSettings,
}

impl Default for IsometricDesc {
    fn default() -> Self {
        IsometricDesc {
            bending_stiffness: 1e-3,
            rest_shape: RestShape::Input,
            proximal_weight: 1e-6,
            boundary_compliance: 0.0,
            conforming_compliance: 0.0,
            integrator: Integrator::BackwardEuler,
            step: IsometricSettings::default(),
        }
    }
}

/// Why an isometric cloth could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IsometricClothError {
    /// The input mesh cannot be subdivided.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// The constraints cannot be built (a non-manifold boundary vertex, a degenerate triangle).
    #[error(transparent)]
    Constraints(#[from] IsometricError),
    /// The bending operator cannot be built.
    #[error(transparent)]
    Bending(#[from] BendingError),
    /// A setting is out of range.
    #[error("isometric setting `{name}`: {message}")]
    Parameter {
        /// The setting.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// What the last step of one isometric cloth did (summed over both projections of Table 3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IsometricStepStats {
    /// The projections of lines 2 and 5 and the repetitions of lines 4–6, folded in the order
    /// they ran (Gauss–Newton and PCG counts, the violation left by the last one).
    pub projections: ProjectionTotals,
    /// Nodes given contact rows (line 4).
    pub contact_nodes: u32,
    /// Nodes given rows on an analytic collider before they touched it: speculative rows, or
    /// the rows that follow the colliders (`IsometricReport::speculative_nodes`).
    pub band_nodes: u32,
    /// The collision stage of line 3.
    pub collide_first: CollisionStats,
    /// The collision stage of line 6, when it ran.
    pub collide_second: Option<CollisionStats>,
    /// Nodes the last collision pass moved after the last projection (their moves enter the
    /// state unprojected; `IsometricReport::fail_safe_moved`).
    pub fail_safe_moved: u32,
    /// Self-contact rows of the step's projections (the most in one projection;
    /// `IsometricReport::self_contact_rows`).
    pub self_contact_rows: u32,
    /// The most self-contact rows that ended one of the step's projections active.
    pub self_contact_active: u32,
}

impl IsometricStepStats {
    fn from_report(r: &IsometricReport) -> Self {
        // Line 2, line 5, then the repetitions of lines 4–6, in the order they ran.
        let mut projections = ProjectionTotals::default();
        projections.add(&r.first);
        if let Some(second) = &r.second {
            projections.add(second);
        }
        projections.merge(&r.feedback);
        IsometricStepStats {
            projections,
            contact_nodes: r.contact_nodes,
            band_nodes: r.speculative_nodes,
            collide_first: r.collide_first,
            collide_second: r.collide_second,
            fail_safe_moved: r.fail_safe_moved,
            self_contact_rows: r.self_contact_rows,
            self_contact_active: r.self_contact_active,
        }
    }
}

/// One isometric cloth: subdivision, constraints, bending, the Table 3.1 stepper and its `f64`
/// state (see the module doc). Built once; a step allocates nothing unless the contact pool
/// overflows (counted by the projector).
#[derive(Debug)]
pub struct IsometricCloth {
    sub: Subdivision,
    constraints: IsometricConstraints,
    bending: QuadraticBending,
    curvature: BendingRows,
    /// `D` per constraint row, refreshed from the inverse masses every step.
    compliance: Vec<f64>,
    /// Stopping-test scale per constraint row.
    scales: Vec<f64>,
    stepper: IsometricStepper,
    /// The triangle-mesh obstacles the contact rows follow ([`IsometricSettings::mesh_rows`]).
    meshes: MeshObstacles,
    desc: IsometricDesc,
    x: Vec<DVec3>,
    v: Vec<DVec3>,
    accel: Vec<DVec3>,
    mass: Vec<f64>,
    inv_mass: Vec<f64>,
    pins: Vec<(u32, DVec3)>,
    last: IsometricStepStats,
    /// The step in progress: its length (s), the bending rows' potential weight, its settings
    /// with the world's caps, and the collision settings of its passes (no strain limiter).
    h: f64,
    h_phi: f64,
    settings: IsometricSettings,
    collision: CollisionSettings,
}

impl IsometricCloth {
    /// Subdivides `base` 4:1 and builds the model on it: rest data from the input positions,
    /// constraints (eq. 3.1–3.4), bending (eq. 3.5–3.8), the stepper with a contact pool of three
    /// rows per node. Returns the cloth; its [`IsometricCloth::mesh`] is the subdivided mesh the
    /// world simulates.
    ///
    /// # Errors
    /// [`IsometricClothError`]: an invalid or non-manifold mesh, a degenerate triangle, a negative
    /// or non-finite setting.
    pub fn new(base: &TriMesh, desc: IsometricDesc) -> Result<Self, IsometricClothError> {
        check_desc(&desc)?;
        base.validate()?;
        let topo = Topology::build(base)?;
        let sub = subdivide(base, &topo)?;
        let rest = sub.rest_positions();
        let constraints = IsometricConstraints::new(&sub, &rest)?;
        let bending = QuadraticBending::new(&sub, &rest, desc.bending_stiffness)?;
        let base_topo = sub.base_topology();
        let keep_delta: Vec<bool> = (0..sub.num_red_nodes())
            .map(|e| match desc.rest_shape {
                RestShape::Input => true,
                RestShape::Flat => base_topo.edge_triangles(e)[1] == NO_TRIANGLE,
            })
            .collect();
        let curvature = BendingRows::with_rest_mask(&bending, &keep_delta);
        let n = sub.num_nodes();
        let mesh = sub.mesh();
        let edges = Topology::build(mesh)?.edges().to_vec();
        let rest32: Vec<f32> = edges
            .iter()
            .map(|&[a, b]| (rest[a as usize] - rest[b as usize]).length() as f32)
            .collect();
        let scales = constraints.stopping_scales();
        let mut stepper = {
            let res = curvature.residual(&bending, 0.0);
            IsometricStepper::new(
                &rest,
                &mesh.triangles,
                &edges,
                &rest32,
                &[&constraints, &res],
                desc.integrator,
                3 * n,
            )
        };
        // The base-edge rows exist on every cloth (one per base edge); only the settings'
        // `base_edge_rows` lets them into a projection.
        let (base_stencils, base_rest) = constraints.base_edge_stencils();
        stepper.set_base_edge_rows(BaseEdgeRows::new(&base_stencils, &base_rest));
        Ok(IsometricCloth {
            compliance: vec![0.0; constraints.len()],
            scales,
            stepper,
            meshes: MeshObstacles::default(),
            settings: desc.step,
            desc,
            x: rest.clone(),
            v: vec![DVec3::ZERO; n],
            accel: vec![DVec3::ZERO; n],
            mass: vec![0.0; n],
            inv_mass: vec![0.0; n],
            pins: Vec::with_capacity(n),
            last: IsometricStepStats::default(),
            h: 0.0,
            h_phi: 0.0,
            collision: CollisionSettings::default(),
            sub,
            constraints,
            bending,
            curvature,
        })
    }

    /// The subdivided conforming mesh (the simulated and rendered mesh).
    #[must_use]
    pub fn mesh(&self) -> &TriMesh {
        self.sub.mesh()
    }

    /// The subdivision (black/red numbering, base topology).
    #[must_use]
    pub fn subdivision(&self) -> &Subdivision {
        &self.sub
    }

    /// The constraint rows (eq. 3.1–3.4).
    #[must_use]
    pub fn constraints(&self) -> &IsometricConstraints {
        &self.constraints
    }

    /// The settings it was built with.
    #[must_use]
    pub fn desc(&self) -> &IsometricDesc {
        &self.desc
    }

    /// The statistics of the last step.
    #[must_use]
    pub fn last_step(&self) -> &IsometricStepStats {
        &self.last
    }

    /// The collision stage of the stepper (the cloth's only one: it runs without the strain
    /// limiter).
    #[must_use]
    pub fn collision(&self) -> &ClothCollision {
        self.stepper.collision()
    }

    /// The collision stage of the stepper (the world sets its obstacle meshes).
    pub fn collision_mut(&mut self) -> &mut ClothCollision {
        self.stepper.collision_mut()
    }

    /// Sets the triangle-mesh obstacles the contact rows follow: the obstacle soup's
    /// `triangles`, per soup vertex whether it belongs to a mesh obstacle (`mesh`; false on
    /// the tessellations of analytic colliders, which have rows of their own), its thickness
    /// and friction, and the soup's positions `x` now ([`MeshObstacles::set`]). Allocates:
    /// called when obstacles change, never in a step.
    pub fn set_mesh_obstacles(
        &mut self,
        triangles: &[[u32; 3]],
        mesh: &[bool],
        thickness: &[f32],
        friction: &[f32],
        x: &[Vec3],
    ) {
        self.meshes.set(triangles, mesh, thickness, friction, x);
    }

    /// Time in the sparse direct solves so far (`LinearSolver::Cholesky`).
    #[must_use]
    pub fn direct_solve_times(&self) -> DirectSolveTimes {
        self.stepper.projection().direct_solve_times()
    }

    /// Contact-pool overflows so far (each one grew the pool: an allocation in a step).
    #[must_use]
    pub fn contact_overflows(&self) -> u32 {
        self.stepper.projection().contact_overflows()
    }

    /// Largest strain of the inextensibility rows now (Wang 2012 eq. 3.1;
    /// `docs/methods/isometric-model.md §A4`).
    #[must_use]
    pub fn row_strain(&self) -> f64 {
        self.constraints.max_strain(&self.x)
    }

    /// Maximum strain of the base mesh edges now, both readings of Wang 2012 Fig. 4.2
    /// (`docs/methods/isometric-model.md §A16`).
    #[must_use]
    pub fn base_edge_strain(&self) -> BaseEdgeStrain {
        self.constraints.max_base_edge_strain(&self.x)
    }

    /// The bending energy now (J; Wang 2012 eq. 3.8 with the rotation `T` frozen at the last
    /// step's prediction, and the rest shape of [`RestShape`]): `½ Σ_a c_a²` over the residual
    /// rows with weight `√k_b`. Allocation-free; summed in row order.
    #[must_use]
    pub fn bending_energy(&self) -> f64 {
        self.curvature.energy(&self.bending, &self.x)
    }

    /// Forgets the BDF2 history and the warm starts (after a teleport).
    pub fn reset(&mut self) {
        self.stepper.reset();
    }

    /// One step of length `h` (Wang 2012 Table 3.1) on the world's `f32` state: `x, v` in and
    /// out, `mass`/`inv_mass` per node (`inv_mass = 0` on pins), `external` the explicit forces
    /// (N), `air_damping` c (1/s), `pins` at their poses at `t + h`. `newton_cap` and `pcg_cap`
    /// are the world budget's caps (the smaller of them and this cloth's own apply);
    /// `should_stop` is the deadline.
    ///
    /// # Panics
    /// If a slice is not one entry per node.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        h: f32,
        x: &mut [Vec3],
        v: &mut [Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        external: &[Vec3],
        air_damping: f32,
        pins: &[PinTarget],
        collision: &CollisionSettings,
        obstacles: &ObstacleMeshes<'_>,
        colliders: &[ColliderView],
        newton_cap: u32,
        pcg_cap: u32,
        should_stop: &mut dyn FnMut() -> bool,
    ) -> IsometricStepStats {
        let h_phi = self.prepare(
            h,
            x,
            v,
            mass,
            inv_mass,
            external,
            air_damping,
            pins,
            collision,
            newton_cap,
            pcg_cap,
        );
        let h = f64::from(h);
        self.load_meshes(obstacles);
        let residual = self.curvature.residual(&self.bending, h_phi);
        let families = row_families(&self.constraints, &self.compliance, &self.scales, &residual);
        let report = self.stepper.finish_step(
            h,
            &families,
            &self.settings,
            &self.collision,
            obstacles,
            &self.meshes,
            colliders,
            &self.mass,
            &self.inv_mass,
            &mut self.x,
            &mut self.v,
            should_stop,
        );
        self.finish(pins, x, v, &report)
    }

    /// [`IsometricCloth::step`] with a collision stage shared with other cloths
    /// (`docs/methods/cloth-layers.md`), first phase: the step's prediction and line 2 of
    /// Table 3.1. Then, for every pass of the shared stage,
    /// [`IsometricCloth::shared_pass_input`] and [`IsometricCloth::after_shared_pass`], while
    /// any cloth of the stage asks for another pass; then [`IsometricCloth::end_shared_step`].
    /// The arguments are those of [`IsometricCloth::step`].
    #[allow(clippy::too_many_arguments)]
    pub fn begin_shared_step(
        &mut self,
        h: f32,
        x: &[Vec3],
        v: &[Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        external: &[Vec3],
        air_damping: f32,
        pins: &[PinTarget],
        collision: &CollisionSettings,
        obstacles: &ObstacleMeshes<'_>,
        colliders: &[ColliderView],
        newton_cap: u32,
        pcg_cap: u32,
        should_stop: &mut dyn FnMut() -> bool,
    ) {
        let h_phi = self.prepare(
            h,
            x,
            v,
            mass,
            inv_mass,
            external,
            air_damping,
            pins,
            collision,
            newton_cap,
            pcg_cap,
        );
        self.load_meshes(obstacles);
        let residual = self.curvature.residual(&self.bending, h_phi);
        let families = row_families(&self.constraints, &self.compliance, &self.scales, &residual);
        self.stepper.begin_step(
            f64::from(h),
            &families,
            &self.settings,
            &self.collision,
            &self.meshes,
            colliders,
            &self.mass,
            &self.inv_mass,
            &self.x,
            should_stop,
        );
    }

    /// The input of the next shared collision pass: `xⁿ` and `v½` into `x`, `v`, the masses
    /// into `mass`, `inv_mass` (one entry per node of this cloth).
    ///
    /// # Panics
    /// If a slice is not one entry per node.
    pub fn shared_pass_input(
        &mut self,
        x: &mut [Vec3],
        v: &mut [Vec3],
        mass: &mut [f32],
        inv_mass: &mut [f32],
    ) {
        self.stepper.pass_input(self.h, &self.x, x, v);
        let (m, w) = self.stepper.pass_masses();
        mass.copy_from_slice(m);
        inv_mass.copy_from_slice(w);
    }

    /// Takes the velocities `v` a shared pass left on this cloth's nodes and goes on with the
    /// step ([`IsometricStepper::after_pass`], with `stats` as the pass's statistics: the
    /// stage's own are counted once, by the caller). Returns whether this cloth projected again
    /// and so needs another pass.
    pub fn after_shared_pass(
        &mut self,
        v: &[Vec3],
        stats: &CollisionStats,
        colliders: &[ColliderView],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> bool {
        let moved = self.stepper.take_pass(self.h, &self.x, v);
        let residual = self.curvature.residual(&self.bending, self.h_phi);
        let families = row_families(&self.constraints, &self.compliance, &self.scales, &residual);
        self.stepper.after_pass(
            self.h,
            &families,
            &self.settings,
            &self.collision,
            &self.meshes,
            colliders,
            &self.inv_mass,
            &self.x,
            stats,
            moved,
            should_stop,
        )
    }

    /// The mesh obstacles at this step's poses, when rows follow them.
    fn load_meshes(&mut self, obstacles: &ObstacleMeshes<'_>) {
        if self.settings.rows_follow_obstacles() && self.settings.mesh_rows {
            self.meshes.load(obstacles);
        }
    }

    /// The end of a shared step (line 7, pins on their targets, the `f32` state written).
    pub fn end_shared_step(
        &mut self,
        pins: &[PinTarget],
        x: &mut [Vec3],
        v: &mut [Vec3],
    ) -> IsometricStepStats {
        let report = self.stepper.end_step(self.h, &mut self.x, &mut self.v);
        self.finish(pins, x, v, &report)
    }

    /// The start of a step: host edits of the `f32` state taken over, masses, explicit
    /// accelerations, compliances, pins, the prediction (line 1) and the step's settings with
    /// the world's caps. Returns the potential weight `h_Φ` of the bending rows.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &mut self,
        h: f32,
        x: &[Vec3],
        v: &[Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        external: &[Vec3],
        air_damping: f32,
        pins: &[PinTarget],
        collision: &CollisionSettings,
        newton_cap: u32,
        pcg_cap: u32,
    ) -> f64 {
        let n = self.x.len();
        assert!(x.len() == n && v.len() == n && mass.len() == n && inv_mass.len() == n);
        assert_eq!(external.len(), n);
        let h = f64::from(h);
        let c = f64::from(air_damping);
        for i in 0..n {
            // Take over host edits of the f32 state (module doc).
            if x[i] != self.x[i].as_vec3() {
                self.x[i] = x[i].as_dvec3();
            }
            if v[i] != self.v[i].as_vec3() {
                self.v[i] = v[i].as_dvec3();
            }
            self.mass[i] = f64::from(mass[i]);
            self.inv_mass[i] = f64::from(inv_mass[i]);
            self.accel[i] = if mass[i] > 0.0 {
                external[i].as_dvec3() / self.mass[i] - c * self.v[i]
            } else {
                DVec3::ZERO
            };
        }
        self.refresh_compliance();
        self.pins.clear();
        self.pins
            .extend(pins.iter().map(|p| (p.vertex, p.target.as_dvec3())));

        let h_phi = self
            .stepper
            .predict(h, &self.x, &self.v, &self.accel, &self.pins);
        self.bending.freeze_rotation(self.stepper.prediction());
        let mut settings = self.desc.step;
        settings.projection.max_iterations = settings.projection.max_iterations.min(newton_cap);
        settings.projection.cg.max_iterations = settings.projection.cg.max_iterations.min(pcg_cap);
        self.settings = settings;
        let mut collision = *collision;
        collision.strain_limit = None;
        self.collision = collision;
        self.h = h;
        self.h_phi = h_phi;
        h_phi
    }

    /// The end of a step after line 7: pins exactly on their targets, the `f32` state written,
    /// the step's statistics kept and returned.
    fn finish(
        &mut self,
        pins: &[PinTarget],
        x: &mut [Vec3],
        v: &mut [Vec3],
        report: &IsometricReport,
    ) -> IsometricStepStats {
        for p in pins {
            // Exactly on target (the projection keeps w = 0 nodes at x̃, which is the pose).
            self.x[p.vertex as usize] = p.target.as_dvec3();
        }
        for i in 0..self.x.len() {
            x[i] = self.x[i].as_vec3();
            v[i] = self.v[i].as_vec3();
        }
        self.last = IsometricStepStats::from_report(report);
        self.last
    }

    /// The proximal weight `D` of every constraint row (module doc, Wang 2012 eq. 3.30):
    /// `β (J W Jᵀ)_aa`, plus `β_c w_k` on the conforming rows (3.3) and `β_b w_k` on the
    /// boundary rows (3.4) of black node `k`.
    fn refresh_compliance(&mut self) {
        let conforming = self.constraints.range(Family::Conforming);
        let boundary = self.constraints.range(Family::Boundary);
        let (bc, bb) = (
            self.desc.conforming_compliance,
            self.desc.boundary_compliance,
        );
        let beta = self.desc.proximal_weight;
        self.constraints
            .row_regularisation(&self.inv_mass, [beta; 3], &mut self.compliance);
        for k in 0..conforming.len() / 3 {
            let d = bc * self.inv_mass[k];
            for a in conforming.start + 3 * k..conforming.start + 3 * k + 3 {
                self.compliance[a] += d;
            }
        }
        for (j, &k) in self.constraints.boundary_vertices().iter().enumerate() {
            let d = bb * self.inv_mass[k as usize];
            for a in boundary.start + 3 * j..boundary.start + 3 * j + 3 {
                self.compliance[a] += d;
            }
        }
    }
}

fn check_desc(d: &IsometricDesc) -> Result<(), IsometricClothError> {
    let non_negative = |name: &'static str, v: f64| {
        if v.is_finite() && v >= 0.0 {
            Ok(())
        } else {
            Err(IsometricClothError::Parameter {
                name,
                message: format!("must be finite and >= 0, got {v}"),
            })
        }
    };
    non_negative("bending_stiffness", d.bending_stiffness)?;
    non_negative("proximal_weight", d.proximal_weight)?;
    non_negative("boundary_compliance", d.boundary_compliance)?;
    non_negative("conforming_compliance", d.conforming_compliance)?;
    non_negative("contact_compliance", d.step.contact_compliance)?;
    non_negative("contact_margin", d.step.contact_margin)?;
    let p = &d.step.projection;
    if !(p.tolerance.is_finite() && p.tolerance > 0.0) {
        return Err(IsometricClothError::Parameter {
            name: "strain_tolerance",
            message: format!("must be positive, got {}", p.tolerance),
        });
    }
    if p.max_iterations == 0 || p.cg.max_iterations == 0 {
        return Err(IsometricClothError::Parameter {
            name: "max_iterations",
            message: "Newton and CG caps must be at least 1".into(),
        });
    }
    if let Some(b) = d.step.friction_compliance {
        non_negative("friction_compliance", b)?;
    }
    Ok(())
}

/// The row families of every projection of a step: the constraints, proximal with their
/// compliances and tested against their strain scales, and the bending residual rows (linear,
/// not tested).
fn row_families<'a>(
    constraints: &'a IsometricConstraints,
    compliance: &'a [f64],
    scales: &'a [f64],
    residual: &'a dyn ConstraintSet,
) -> [RowFamily<'a>; 2] {
    [
        RowFamily {
            set: constraints,
            role: RowRole::Proximal(compliance),
            linear: false,
            scale: StrainScale::PerRow(scales),
        },
        RowFamily {
            set: residual,
            role: RowRole::Residual,
            linear: true,
            scale: StrainScale::Untested,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrate::base_edge_rows::BaseEdgeRowsKind;
    use crate::integrate::projection::{LinearSolver, ProjectionSettings};
    use crate::mesh::{Diagonals, GridSpec, grid};
    use glam::Vec2;

    fn sheet(n: u32) -> TriMesh {
        grid(&GridSpec {
            nx: n,
            ny: n,
            size: Vec2::new(1.0, 1.0),
            centre: Vec3::new(0.0, 1.0, 0.0),
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: Diagonals::Alternating,
        })
        .expect("grid")
    }

    #[test]
    fn flat_and_input_rest_agree_on_a_flat_sheet_and_both_are_zero_at_rest() {
        for shape in [RestShape::Flat, RestShape::Input] {
            let c = IsometricCloth::new(
                &sheet(5),
                IsometricDesc {
                    rest_shape: shape,
                    bending_stiffness: 2.0,
                    ..IsometricDesc::default()
                },
            )
            .expect("cloth");
            let e = c.bending_energy();
            assert!(e.abs() < 1e-20, "{shape:?}: {e}");
        }
    }

    #[test]
    fn flat_rest_shape_gives_a_closed_sphere_bending_energy_input_does_not() {
        let ball = crate::mesh::icosphere(0.2, 1).expect("icosphere");
        let input = IsometricCloth::new(&ball, IsometricDesc::default()).expect("input");
        let flat = IsometricCloth::new(
            &ball,
            IsometricDesc {
                rest_shape: RestShape::Flat,
                ..IsometricDesc::default()
            },
        )
        .expect("flat");
        assert!(input.bending_energy().abs() < 1e-18);
        assert!(flat.bending_energy() > 1e-6, "{}", flat.bending_energy());
    }

    /// One step of a 1 m sheet of `n × n` base vertices (bending stiffness `k_b`, no gravity, at
    /// rest) whose nodes start at `start(rest position)`. Returns the width it ends at along
    /// x, the row strain and the base-edge strain.
    fn sheet_step(
        n: u32,
        k_b: f64,
        tolerance: f64,
        start: impl Fn(usize, DVec3) -> DVec3,
    ) -> (f64, f64, BaseEdgeStrain) {
        let s = sheet_step_with(n, k_b, tolerance, |_| {}, start);
        (s.width, s.row_strain, s.base)
    }

    /// What [`sheet_step_with`] ends with.
    struct SheetStep {
        width: f64,
        row_strain: f64,
        base: BaseEdgeStrain,
        /// The nodes' positions at the end.
        x: Vec<Vec3>,
        /// Base-edge rows held at the end of the last projection.
        held: usize,
        /// Gauss–Newton iterations of the step.
        iterations: u32,
        /// Projections of the step that stopped before the tolerance.
        unconverged: u32,
    }

    /// [`sheet_step`] with the projection settings changed by `settings`.
    fn sheet_step_with(
        n: u32,
        k_b: f64,
        tolerance: f64,
        settings: impl Fn(&mut ProjectionSettings),
        start: impl Fn(usize, DVec3) -> DVec3,
    ) -> SheetStep {
        let mut desc = IsometricDesc {
            bending_stiffness: k_b,
            ..IsometricDesc::default()
        };
        desc.step.projection.tolerance = tolerance;
        settings(&mut desc.step.projection);
        let mut c = IsometricCloth::new(&sheet(n), desc).expect("cloth");
        let rest = c.subdivision().rest_positions();
        let mut x: Vec<Vec3> = rest
            .iter()
            .enumerate()
            .map(|(i, &p)| start(i, p).as_vec3())
            .collect();
        let n = x.len();
        let mut v = vec![Vec3::ZERO; n];
        let mass: Vec<f32> = c
            .subdivision()
            .lumped_node_areas(&rest)
            .iter()
            .map(|a| (0.1 * a) as f32)
            .collect();
        let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
        let collision = CollisionSettings {
            self_collision: false,
            ..CollisionSettings::default()
        };
        c.step(
            1.0 / 480.0,
            &mut x,
            &mut v,
            &mass,
            &inv_mass,
            &vec![Vec3::ZERO; n],
            0.0,
            &[],
            &collision,
            &ObstacleMeshes::NONE,
            &[],
            50,
            1000,
            &mut || false,
        );
        let (lo, hi) = x
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.x), hi.max(p.x))
            });
        SheetStep {
            width: f64::from(hi - lo),
            row_strain: c.row_strain(),
            base: c.base_edge_strain(),
            held: c.stepper.projection().base_edge_rows().held(),
            iterations: c.last_step().projections.iterations,
            unconverged: c.last_step().projections.unconverged,
            x,
        }
    }

    /// [`sheet_step`] on 9 × 9 base vertices (`k_b` = 10⁻⁵ J) squeezed to 97 % in its own
    /// plane, with `noise` metres of out-of-plane offset on its nodes (a fixed hash of the node
    /// index).
    fn squeezed_sheet_step(noise: f64) -> (f64, f64, BaseEdgeStrain) {
        let centre = DVec3::new(0.0, 1.0, 0.0);
        sheet_step(9, 1e-5, 1e-3, |i, p| {
            let d = p - centre;
            let hash = ((i as u64).wrapping_mul(2_654_435_761) % 1000) as f64 / 500.0 - 1.0;
            centre + DVec3::new(0.97 * d.x, d.y + noise * hash, 0.97 * d.z)
        })
    }

    /// [`sheet_step`] on `n × n` base vertices without bending stiffness, started wrapped
    /// without stretch round a cylinder along z of curvature `kappa` (1/m), whose axis lies
    /// above the sheet's centre.
    fn bent_sheet_step(n: u32, kappa: f64) -> (f64, f64, BaseEdgeStrain) {
        sheet_step(n, 0.0, 1e-7, |_, p| {
            let angle = kappa * p.x;
            DVec3::new(angle.sin() / kappa, p.y + (1.0 - angle.cos()) / kappa, p.z)
        })
    }

    /// A smooth bend of curvature `κ` leaves the base edges of the isometric cloth stretched
    /// through their red nodes by a strain that grows like `(κ ℓ)²` (`ℓ` the base edge
    /// length), with every row within the tolerance: the extrapolations of a black node's
    /// triangles disagree by `O(κ ℓ²)` across the surface, which changes a half edge's length
    /// to second order (`docs/methods/isometric-contact.md` §7).
    #[test]
    fn a_smooth_bend_stretches_base_edges_by_the_square_of_curvature_times_edge() {
        let n = 17;
        let l = 1.0 / f64::from(n - 1);
        let mut strains = Vec::new();
        for kl in [0.05, 0.1, 0.2, 0.4] {
            let (_, rows, base) = bent_sheet_step(n, kl / l);
            eprintln!(
                "kappa l = {kl}: row strain {rows:.2e}, base-edge strain {:.3e} through the red node, {:.3e} end to end",
                base.through_midpoint, base.end_to_end
            );
            assert!(rows <= 1e-6, "kappa l = {kl}: row strain {rows:.2e}");
            strains.push(base.through_midpoint);
        }
        for w in strains.windows(2) {
            let ratio = w[1] / w[0];
            assert!((3.0..5.0).contains(&ratio), "{strains:?}");
        }
    }

    /// What the rows of Wang 2012 (eq. 3.1, 3.3, 3.4) hold of the base edges
    /// (`docs/methods/isometric-contact.md` §7). In the plane they hold the whole sheet: a
    /// flat sheet squeezed in its plane is projected back to its rest shape, base edges
    /// included. Out of the plane they do not: with a millimetre of out-of-plane roughness
    /// the projection meets every row mostly by tilting middle triangles out of the plane
    /// rather than by opening the sheet, and each black node, at the mean of its triangles'
    /// extrapolations, is then off the ones that disagree with the mean: base edges (through
    /// the red node) end stretched or compressed by more than ten times the tolerance.
    #[test]
    fn rows_hold_the_base_edges_of_a_flat_sheet_but_not_of_a_rough_one() {
        let (width, rows, base) = squeezed_sheet_step(0.0);
        assert!(rows <= 1e-3, "flat: row strain {rows:.2e}");
        assert!((width - 1.0).abs() < 1e-4, "flat: width {width:.5}");
        assert!(base.through_midpoint < 1e-4, "flat: {base:?}");

        let (width, rows, base) = squeezed_sheet_step(1e-3);
        eprintln!(
            "rough: width {width:.4}, row strain {rows:.2e}, base-edge strain {:.2e} through the red node, {:.2e} end to end",
            base.through_midpoint, base.end_to_end
        );
        assert!(rows <= 1e-3, "rough: row strain {rows:.2e}");
        assert!(base.through_midpoint > 1e-2, "rough: {base:?}");
    }

    /// [`sheet_step_with`] on 9 × 9 base vertices without bending stiffness, tolerance 0.1 %,
    /// started wrapped without stretch round a cylinder along z with `κ ℓ = kl` (as
    /// [`bent_sheet_step`]), the base-edge rows set by `rows` and the linear solver by `solver`.
    fn bent_sheet_with_rows(kl: f64, rows: BaseEdgeRowsKind, solver: LinearSolver) -> SheetStep {
        let n = 9;
        let kappa = kl * f64::from(n - 1);
        sheet_step_with(
            n,
            0.0,
            1e-3,
            |p| {
                p.base_edge_rows = rows;
                p.solver = solver;
            },
            |_, p| {
                let angle = kappa * p.x;
                DVec3::new(angle.sin() / kappa, p.y + (1.0 - angle.cos()) / kappa, p.z)
            },
        )
    }

    /// A sharp bend (`κ ℓ = 0.4`) leaves the base edges through their red nodes stretched far
    /// beyond the tolerance with the rows of Wang 2012 alone (`docs/methods/isometric-contact.md`
    /// §7); with the base-edge rows every base edge ends within it, by the sparse Cholesky and
    /// by PCG (`crate::integrate::base_edge_rows`).
    #[test]
    fn base_edge_rows_hold_a_sharp_bend_within_the_tolerance() {
        let off = bent_sheet_with_rows(0.4, BaseEdgeRowsKind::Off, LinearSolver::default());
        assert!(
            off.row_strain <= 1e-3,
            "off: row strain {:.2e}",
            off.row_strain
        );
        assert!(off.base.through_midpoint > 4e-3, "off: {:?}", off.base);
        for solver in [LinearSolver::default(), LinearSolver::Pcg] {
            let on = bent_sheet_with_rows(0.4, BaseEdgeRowsKind::Band, solver);
            eprintln!(
                "{solver:?}: base-edge strain {:.3e} (off {:.3e}), row strain {:.2e}, {} rows held, {} iterations",
                on.base.through_midpoint,
                off.base.through_midpoint,
                on.row_strain,
                on.held,
                on.iterations
            );
            assert_eq!(on.unconverged, 0, "{solver:?}: unconverged");
            assert!(on.held > 0, "{solver:?}: no row held");
            assert!(
                on.row_strain <= 1e-3,
                "{solver:?}: row strain {:.2e}",
                on.row_strain
            );
            assert!(
                on.base.through_midpoint <= 1e-3,
                "{solver:?}: base-edge strain {:.3e}",
                on.base.through_midpoint
            );
        }
    }

    /// A gentle bend (`κ ℓ = 0.05`, base-edge strain about 1.5 · 10⁻⁴, below the band) holds no
    /// base-edge row, and the step is the same to the bit as without them.
    #[test]
    fn base_edge_rows_stay_released_on_a_gentle_bend_and_change_nothing() {
        for solver in [LinearSolver::default(), LinearSolver::Pcg] {
            let off = bent_sheet_with_rows(0.05, BaseEdgeRowsKind::Off, solver);
            let on = bent_sheet_with_rows(0.05, BaseEdgeRowsKind::Band, solver);
            assert!(off.base.through_midpoint < 0.5e-3, "{:?}", off.base);
            assert_eq!(on.held, 0, "{solver:?}");
            assert_eq!(on.iterations, off.iterations, "{solver:?}");
            assert_eq!(
                on.row_strain.to_bits(),
                off.row_strain.to_bits(),
                "{solver:?}"
            );
            assert!(
                on.x.iter()
                    .zip(&off.x)
                    .all(|(a, b)| a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits)),
                "{solver:?}: positions differ"
            );
        }
    }

    #[test]
    fn bad_settings_are_typed_errors() {
        let d = IsometricDesc {
            bending_stiffness: -1.0,
            ..IsometricDesc::default()
        };
        assert!(matches!(
            IsometricCloth::new(&sheet(3), d),
            Err(IsometricClothError::Parameter {
                name: "bending_stiffness",
                ..
            })
        ));
    }
}
