//! The linearised implicit Euler step of Baraff–Witkin 1998.
//!
//! Equation labels `eq. 2.n` are those of `docs/methods/baraff-witkin.md`, `eq. 4.n` those of
//! `docs/methods/dihedral-bending.md` (weft's own statements of the model, with the papers they follow).
//!
//! One Newton step of backward Euler (`docs/methods/baraff-witkin.md` (2.13–2.14)), with
//! contact position offsets y (eq. 2.17) and constraints by filtering (eq. 2.16):
//!
//! ```text
//!   A = M − h D − h² K,     b = h (f0 + K (h v0 + y)),
//!   S (A Δv − b) = 0,   (I − S) Δv = z,
//!   v1 = v0 + Δv,       x1 = x0 + h v1 + y
//! ```
//!
//! K = ∂f/∂x and D = ∂f/∂v come from the element kernels of
//! [`crate::model::baraff_witkin`] in the definiteness treatment chosen there,
//! so A is symmetric positive definite and the filtered PCG applies.
//!
//! Everything this step touches is sized when the cloth is created: the block
//! pattern (edges and hinge wing pairs), every element's block slots and the plan
//! that scatters the elements into them in parallel ([`ScatterPlan`]), the
//! right-hand side, the PCG workspace. A step allocates nothing.
#![deny(unsafe_code)]

use std::sync::Arc;

use glam::{DMat3, DVec2, DVec3, Mat3, Vec3};

use crate::linalg::block_ldl::ShiftLevels;
use crate::linalg::reduce;
use crate::linalg::{
    BlockCsr, BlockPattern, Filter, PcgReport, PcgSettings, PcgWorkspace, Preconditioner,
    RowWindow, ScatterPlan, solve_filtered_pcg,
};
use crate::mesh::{Topology, TriMesh};
use crate::model::baraff_witkin::{
    BendParams, ElementOutput, HingeRest, JacobianMode, MembraneParams, TriangleRest, bend_element,
    bend_energy, membrane_element, membrane_energy, stretch_measure,
};
use crate::model::bw_lanes::{
    HingeLanes, LANES, MembraneLanes, Vec3Lanes, bend_lanes, membrane_lanes,
};
use crate::model::bw_system::BendingStiffness;

use super::element_batches::ElementBatches;
use crate::model::discrete_shell::{ZERO_BLOCKS, bending_mode_stiffness, shell_element};
use crate::runtime::executor::join;

/// `Σ f(e)` over the elements `0..count` in `f64`, by [`reduce::sum_chunks`].
fn sum_elements(count: usize, f: impl Fn(usize) -> f64 + Sync + Send) -> f64 {
    reduce::sum_chunks(count, |chunk| chunk.fold(0.0, |sum, e| sum + f(e)))
}

/// Which bending energy acts on the hinges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BendingModel {
    /// The Baraff–Witkin bend condition `C = √w wrap(θ − θ0)` ([`bend_element`]).
    #[default]
    BaraffWitkin,
    /// Discrete-shell bending, the course-notes / BMF03 sine form ([`shell_element`]); the same `k_b`
    /// gives the same small-angle energy as `BaraffWitkin`.
    DiscreteShell,
}

/// How the elastic bending force is integrated (`docs/methods/dihedral-bending.md` §4.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BendingIntegration {
    /// Backward Euler with everything else: the bending Jacobian enters A.
    #[default]
    Implicit,
    /// IMEX: the elastic bending force is evaluated at the start of the step and left out of K
    /// (explicit); bending damping, stretch and shear stay implicit. Stable below the step limit
    /// [`ImplicitEuler::explicit_bending_step_limit`] (`docs/methods/dihedral-bending.md` §4.9); the pipeline splits
    /// longer substeps (see `pipeline::substep`).
    Imex,
}

/// How hinge rest angles are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RestAngles {
    /// Flat: every hinge rests at θ0 = 0 (cloth).
    #[default]
    Flat,
    /// The angles of the input mesh (shells, pre-shaped garments).
    Initial,
}

/// Material and solver settings of a Baraff–Witkin cloth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BwSettings {
    /// Stretch and shear.
    pub membrane: MembraneParams,
    /// Bending.
    pub bend: BendParams,
    /// Rest angles of the hinges.
    pub rest_angles: RestAngles,
    /// The bending energy.
    pub bending: BendingModel,
    /// Implicit or IMEX (explicit elastic bending).
    pub bending_integration: BendingIntegration,
    /// Jacobian treatment used in the solve.
    pub jacobian: JacobianMode,
    /// Iteration cap and tolerance of the filtered PCG.
    pub pcg: PcgSettings,
    /// Preconditioner of the filtered PCG (its storage is allocated with the system).
    pub preconditioner: Preconditioner,
}

impl Default for BwSettings {
    /// The scene-file and C-descriptor defaults (`[cloth.material]`, `[solver]`): a cotton-like
    /// 0.1 kg/m² cloth material — stretch 1000 N/m, shear 100 N/m, bend 1e-5 N·m, damping
    /// 0.002 s on each — flat rest angles, Baraff–Witkin bending solved implicitly, the definite
    /// Jacobian, and PCG to a relative 1e-3 in at most 200 iterations, preconditioned by
    /// block Jacobi.
    fn default() -> Self {
        BwSettings {
            membrane: MembraneParams {
                stretch_u: 1000.0,
                stretch_v: 1000.0,
                shear: 100.0,
                rest_stretch_u: 1.0,
                rest_stretch_v: 1.0,
                stretch_damping: 0.002,
                shear_damping: 0.002,
            },
            bend: BendParams {
                stiffness: 1e-5,
                damping: 0.002,
            },
            rest_angles: RestAngles::Flat,
            bending: BendingModel::default(),
            bending_integration: BendingIntegration::default(),
            jacobian: JacobianMode::Definite,
            pcg: PcgSettings {
                max_iterations: 200,
                tolerance: 1e-3,
            },
            preconditioner: Preconditioner::default(),
        }
    }
}

/// Why a Baraff–Witkin system could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BwBuildError {
    /// A triangle's material (u, v) coordinates are degenerate.
    #[error("triangle {face} has degenerate material (u, v) coordinates (zero rest area)")]
    DegenerateRest {
        /// The face index.
        face: u32,
    },
    /// A hinge's rest geometry is degenerate (zero-length edge or zero-area wing).
    #[error("hinge on edge {a}-{b} has degenerate rest geometry")]
    DegenerateHinge {
        /// First edge vertex.
        a: u32,
        /// Second edge vertex.
        b: u32,
    },
}

/// Outcome of one implicit step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// The PCG's report.
    pub pcg: PcgReport,
    /// Elastic energy at the start of the step (J).
    pub elastic_energy: f64,
}

/// The assembled system and rest data of one Baraff–Witkin cloth.
pub struct ImplicitEuler {
    settings: BwSettings,
    tri_verts: Vec<[u32; 3]>,
    tri_rest: Vec<TriangleRest>,
    hinge_verts: Vec<[u32; 4]>,
    hinge_rest: Vec<HingeRest>,
    /// Which elements (triangles `0..T`, then hinges `T + h`) add into `a` and `b` together,
    /// in parallel, and in what order.
    plan: ScatterPlan,
    /// The elements of each of the plan's tasks in batches for the lane kernels, with their
    /// block slots in `a` and rest data.
    batches: ElementBatches,
    a: BlockCsr,
    b: Vec<Vec3>,
    dv: Vec<Vec3>,
    lambda: Vec<Vec3>,
    pcg: PcgWorkspace,
    /// Per-vertex row bounds of the explicit-bending step limit (scratch, sized at creation).
    limit_rows: Vec<f64>,
    /// Scratch of the collision response solve ([`Self::respond`]), sized at creation: the
    /// velocities before the collision stage, the response filters, their `z` and a zero `b`.
    response_before: Vec<Vec3>,
    response_filters: Vec<Filter>,
    response_z: Vec<Vec3>,
    /// The response solve's unknown `δ`, started from 0 every call (not from `dv`, which holds
    /// the step's own `Δv` and is the next substep's warm start).
    response_dv: Vec<Vec3>,
    response_b: Vec<Vec3>,
}

impl std::fmt::Debug for ImplicitEuler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImplicitEuler")
            .field("triangles", &self.tri_verts.len())
            .field("hinges", &self.hinge_verts.len())
            .field("blocks", &self.a.pattern().num_blocks())
            .finish()
    }
}

impl ImplicitEuler {
    /// Builds rest data, the block pattern and every element's block slots.
    ///
    /// Rest (u, v) coordinates come from `mesh.corner_uvs` when present;
    /// otherwise each triangle is laid flat in its own plane (its first edge
    /// along u), which is exact for lengths and areas but gives no consistent
    /// warp/weft direction: use equal `stretch_u`/`stretch_v` then.
    pub fn new(
        mesh: &TriMesh,
        topology: &Topology,
        settings: BwSettings,
    ) -> Result<Self, BwBuildError> {
        let n = mesh.num_vertices();
        let tri_rest = triangle_rests(mesh)?;
        let mut hinge_verts = Vec::with_capacity(topology.hinges().len());
        let mut hinge_rest = Vec::with_capacity(topology.hinges().len());
        for hinge in topology.hinges() {
            let x = hinge.verts.map(|i| mesh.positions[i as usize].as_dvec3());
            let rest = match settings.rest_angles {
                RestAngles::Flat => HingeRest::flat(&x),
                RestAngles::Initial => HingeRest::from_rest_positions(&x),
            }
            .ok_or(BwBuildError::DegenerateHinge {
                a: hinge.verts[2],
                b: hinge.verts[3],
            })?;
            hinge_verts.push(hinge.verts);
            hinge_rest.push(rest);
        }
        let pairs = topology
            .edges()
            .iter()
            .map(|e| (e[0], e[1]))
            .chain(hinge_verts.iter().map(|h| (h[0], h[1])));
        let pattern = Arc::new(BlockPattern::from_pairs(n, pairs));
        let slot = |i: u32, j: u32| {
            pattern
                .slot(i, j)
                .expect("pattern holds every pair of vertices that share an element")
                .0
        };
        let tri_slots: Vec<[u32; 9]> = mesh
            .triangles
            .iter()
            .map(|t| std::array::from_fn(|k| slot(t[k / 3], t[k % 3])))
            .collect();
        let hinge_slots: Vec<[u32; 16]> = hinge_verts
            .iter()
            .map(|h| std::array::from_fn(|k| slot(h[k / 4], h[k % 4])))
            .collect();
        let plan = ScatterPlan::new(
            n,
            mesh.triangles
                .iter()
                .map(<[u32; 3]>::as_slice)
                .chain(hinge_verts.iter().map(<[u32; 4]>::as_slice)),
        );
        let batches = ElementBatches::new(
            &plan,
            (&mesh.triangles, &tri_slots, &tri_rest),
            (&hinge_verts, &hinge_slots, &hinge_rest),
        );
        let pcg = PcgWorkspace::with_preconditioner(&pattern, settings.preconditioner);
        Ok(Self {
            settings,
            tri_verts: mesh.triangles.clone(),
            tri_rest,
            hinge_verts,
            hinge_rest,
            plan,
            batches,
            a: BlockCsr::new(pattern),
            b: vec![Vec3::ZERO; n],
            dv: vec![Vec3::ZERO; n],
            lambda: vec![Vec3::ZERO; n],
            pcg,
            limit_rows: vec![0.0; n],
            response_before: vec![Vec3::ZERO; n],
            response_filters: vec![Filter::Free; n],
            response_z: vec![Vec3::ZERO; n],
            response_dv: vec![Vec3::ZERO; n],
            response_b: vec![Vec3::ZERO; n],
        })
    }

    /// The settings this system was built with.
    #[must_use]
    pub fn settings(&self) -> &BwSettings {
        &self.settings
    }

    /// Forgets the previous solve's Δv, the warm start of the next PCG solve (after a
    /// teleport: it belongs to the old state). The next solve starts cold, from `z`.
    pub fn forget_warm_start(&mut self) {
        self.dv.fill(Vec3::ZERO);
    }

    /// The previous solve's Δv, from which the next PCG solve starts.
    #[must_use]
    pub fn warm_start(&self) -> &[Vec3] {
        &self.dv
    }

    /// Puts back a warm start read by [`ImplicitEuler::warm_start`] (a failed step restores the
    /// one it started with, so the solves of its completed units do not steer the retry).
    ///
    /// # Panics
    /// If `dv` does not have one row per vertex.
    pub fn restore_warm_start(&mut self, dv: &[Vec3]) {
        self.dv.copy_from_slice(dv);
    }

    /// The preconditioner's shift levels, which one solve leaves for the next (a failed step
    /// puts them back with the warm start).
    #[must_use]
    pub(crate) fn shift_levels(&self) -> ShiftLevels {
        self.pcg.shift_levels()
    }

    /// Puts back shift levels read by [`ImplicitEuler::shift_levels`].
    pub(crate) fn set_shift_levels(&mut self, levels: ShiftLevels) {
        self.pcg.set_shift_levels(levels);
    }

    /// Replaces the material (stretch, shear, bending and their damping) used from the next
    /// assembly on; the rest data and the pattern do not depend on it.
    pub fn set_material(&mut self, membrane: MembraneParams, bend: BendParams) {
        self.settings.membrane = membrane;
        self.settings.bend = bend;
    }

    /// Rest data of every triangle.
    #[must_use]
    pub fn triangle_rest(&self) -> &[TriangleRest] {
        &self.tri_rest
    }

    /// The system matrix A = M − hD − h²K of the last [`Self::assemble`] (zero before the first).
    #[must_use]
    pub fn matrix(&self) -> &BlockCsr {
        &self.a
    }

    /// Constraint impulses λ = (I − S)(A Δv − b) of the last step (N·s).
    #[must_use]
    pub fn constraint_impulses(&self) -> &[Vec3] {
        &self.lambda
    }

    /// Per-triangle stretch measure max(|w_u|, |w_v|) at positions `x`
    /// (`docs/methods/baraff-witkin.md` §2.11), written into `out`.
    ///
    /// In parallel over the fixed chunks of [`reduce::for_each_chunk`]: each measure is its own
    /// triangle's, so the values do not depend on the schedule.
    pub fn stretch_measures(&self, x: &[Vec3], out: &mut [f32]) {
        reduce::for_each_chunk(out, |first, out| {
            let range = first..first + out.len();
            let (tris, rests) = (&self.tri_verts[range.clone()], &self.tri_rest[range]);
            for ((t, rest), o) in tris.iter().zip(rests).zip(out.iter_mut()) {
                let p = t.map(|i| x[i as usize].as_dvec3());
                *o = stretch_measure(&p, rest) as f32;
            }
        });
    }

    /// Elastic (membrane + bending) energy at positions `x` (J): the energies of the general
    /// kernels ([`membrane_element`], [`bend_element`], [`shell_element`]), for Baraff–Witkin's
    /// conditions through the energy-only [`membrane_energy`] and [`bend_energy`], which give the
    /// same values without the blocks.
    ///
    /// Summed in `f64` in parallel by [`reduce::sum_chunks`]: the triangles' sum plus the
    /// hinges', each over the fixed chunks of its elements summed in order and the chunks' sums
    /// added in chunk order, so the bits do not depend on the threads.
    #[must_use]
    pub fn elastic_energy(&self, x: &[Vec3]) -> f64 {
        let triangle = |e: usize| {
            let p = self.tri_verts[e].map(|i| x[i as usize].as_dvec3());
            membrane_energy(&p, &self.tri_rest[e], &self.settings.membrane)
        };
        let hinge = |e: usize| {
            let p = self.hinge_verts[e].map(|i| x[i as usize].as_dvec3());
            let rest = &self.hinge_rest[e];
            match self.settings.bending {
                BendingModel::BaraffWitkin => bend_energy(&p, rest, &self.settings.bend),
                BendingModel::DiscreteShell => {
                    let zero4 = [DVec3::ZERO; 4];
                    shell_element(
                        &p,
                        &zero4,
                        rest,
                        &self.settings.bend,
                        JacobianMode::Definite,
                    )
                    .energy
                }
            }
        };
        let (membrane, bending) = join(
            || sum_elements(self.tri_verts.len(), triangle),
            || sum_elements(self.hinge_verts.len(), hinge),
        );
        membrane + bending
    }

    /// One linearised backward-Euler step of length `h` (`docs/methods/baraff-witkin.md`
    /// (2.14), (2.16), (2.17)) at x0 = `x`, v0 = `v`: overwrites `v` with
    /// v1 = v0 + Δv and leaves `x` alone, so that velocity corrections
    /// (friction, collisions) can come before the caller sets x1 = x0 + h v1 + y.
    /// `external` is the external force per vertex (N), `mass` the lumped
    /// masses, `pcg` the cap and tolerance for this solve, `filters`, `z`, `y`
    /// the constraints. `should_stop` is polled between CG iterations (the
    /// frame deadline).
    ///
    /// The step is two calls so a caller can time them apart: [`Self::assemble`]
    /// then [`Self::solve`]; `step` makes both.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        h: f32,
        x: &[Vec3],
        v: &mut [Vec3],
        mass: &[f32],
        external: &[Vec3],
        pcg: &PcgSettings,
        filters: &[Filter],
        z: &[Vec3],
        y: &[Vec3],
        should_stop: &mut dyn FnMut(u32) -> bool,
    ) -> StepReport {
        let elastic_energy = self.assemble(h, x, v, mass, external, y, 0.0);
        let pcg = self.solve(v, pcg, filters, z, should_stop);
        StepReport {
            pcg,
            elastic_energy,
        }
    }

    /// Solves the assembled system (`docs/methods/baraff-witkin.md` (2.16)) and adds Δv
    /// to `v`; records the constraint impulses.
    ///
    /// The solve starts from the previous solve's Δv times `WARM_START_SCALE` (0.8) (its free
    /// part through this substep's filters); the stopping test does not depend on the start.
    pub fn solve(
        &mut self,
        v: &mut [Vec3],
        pcg: &PcgSettings,
        filters: &[Filter],
        z: &[Vec3],
        should_stop: &mut dyn FnMut(u32) -> bool,
    ) -> PcgReport {
        for dvi in &mut self.dv {
            *dvi *= WARM_START_SCALE;
        }
        let report = solve_filtered_pcg(
            &self.a,
            &self.b,
            z,
            filters,
            pcg,
            &mut self.pcg,
            &mut self.dv,
            should_stop,
        );
        self.compute_constraint_impulses(filters);
        for (vi, dvi) in v.iter_mut().zip(&self.dv) {
            *vi += *dvi;
        }
        report
    }

    /// Remembers the velocities `v` the collision stage starts from, for [`Self::respond`].
    pub fn remember_velocities(&mut self, v: &[Vec3]) {
        self.response_before.copy_from_slice(v);
    }

    /// Passes the collision stage's velocity change through the cloth's stiffness: the
    /// *response solve*. Returns `None`, leaving `v` alone, when the change strains no edge
    /// (`edges`, `rest_lengths`) by more than 0.1 %, `max h |Δ_j − Δ_i| / L0 ≤ 1e-3` (a rigid
    /// change strains none): a *choice*, so that a stage that only nudged the cloth costs no
    /// solve. `pcg` caps and stops the solve as for the step's own solve.
    ///
    /// With `v⁻` the velocities remembered by [`Self::remember_velocities`] and `v` those the
    /// collision stage left, `Δ = v − v⁻`. The response `δ` solves the filtered system of
    /// `docs/methods/baraff-witkin.md` (2.16) with the matrix of this substep and no load,
    ///
    /// ```text
    /// S'(A δ) = 0,   (I − S') δ = (I − S') Δ,   A = M − hD − h²K (eq. 2.14),
    /// ```
    ///
    /// where `S'_i` is the solve's own filter `S_i` (pins, collider contacts) with the direction
    /// `Δ̂_i` of vertex i's change added as one more constrained direction (Gram–Schmidt against
    /// the directions `S_i` already constrains; dropped when it lies within 1e-3 of their span).
    /// On return `v = v⁻ + δ`.
    ///
    /// Why (*derived*; the sources leave the coupling of the collision stage to a stiff
    /// internal stage open): the collision stage of Bridson 2002 changes velocities vertex by
    /// vertex, and `x^{n+1} = x^n + h v` turns a change `Δ` that is not rigid into about
    /// `½ h² Δᵀ(−K)Δ` of strain energy, `(ωh)²` times its kinetic energy (≈ 2,000 on pile-33).
    /// `δ` is the change of least `½ δᵀ A δ = ½ δᵀ M δ + ½ h² δᵀ(−K)δ − ½ h δᵀ D δ` (kinetic plus
    /// linearised strain energy plus damping) that keeps every velocity component the
    /// collision stage prescribed: a stopped vertex keeps its stop, its neighbours (and its own
    /// free directions) follow through the stiffness instead of being torn from it. `δ`
    /// is not collision-free in general; the caller runs the collision stage again on `v`
    /// (the guarantee comes from that pass). A vertex the solve fixes (`S_i = 0`, pins) keeps
    /// its change, which is 0 for an infinite mass.
    ///
    /// *Momentum.* The constraints that keep the prescribed components are external forces:
    /// `Σ m δ − Σ m Δ` is their total reaction (the rows of `hD + h²K` sum to zero). Where a
    /// body stopped the vertex, the body can supply it; where two parts of the cloth collided,
    /// nothing can (the stage's impulses between cloth vertices sum to zero), and a reaction
    /// left in place pushes the whole cloth: a pile crumpled on the floor slid steadily across
    /// it. So the part of the excess outside the directions bodies push along — the normals of
    /// the solve's own contacts in `filters` (a pin pushes along every direction) and those in
    /// `bodies`, the normals of this stage's collisions with kinematic bodies, see
    /// [`ReactionSpan`] — is taken out again by one uniform velocity of every vertex with mass
    /// (a uniform change strains nothing, and leaves every relative velocity the stage set;
    /// `docs/methods/response-solve.md`).
    /// `mass` is the lumped mass of each vertex (kg; 0 for kinematic vertices).
    #[allow(clippy::too_many_arguments)]
    pub fn respond(
        &mut self,
        h: f32,
        v: &mut [Vec3],
        filters: &[Filter],
        mass: &[f32],
        bodies: &ReactionSpan,
        edges: &[[u32; 2]],
        rest_lengths: &[f32],
        pcg: &PcgSettings,
        should_stop: &mut dyn FnMut(u32) -> bool,
    ) -> Option<PcgReport> {
        let before = &self.response_before;
        let strain = edges
            .iter()
            .zip(rest_lengths)
            .map(|(&[i, j], &l0)| {
                let (i, j) = (i as usize, j as usize);
                h * ((v[j] - before[j]) - (v[i] - before[i])).length() / l0
            })
            // NaN-propagating: a non-finite velocity must reach the caller's finiteness check
            // unchanged, not be folded away and then overwritten by `before + δ`.
            .fold(0.0f32, |m, s| {
                if s.is_nan() || m.is_nan() {
                    f32::NAN
                } else {
                    m.max(s)
                }
            });
        if strain.is_nan() || strain <= RESPONSE_MIN_STRAIN {
            return None;
        }
        let mut any = false;
        for (((f_out, z), (vi, before)), f) in self
            .response_filters
            .iter_mut()
            .zip(self.response_z.iter_mut())
            .zip(v.iter().zip(&self.response_before))
            .zip(filters)
        {
            let delta = *vi - *before;
            let filter = with_direction(*f, delta);
            *f_out = filter;
            *z = filter.constrained(delta);
            any |= delta != Vec3::ZERO;
        }
        if !any {
            return None;
        }
        self.response_dv.fill(Vec3::ZERO);
        let report = solve_filtered_pcg(
            &self.a,
            &self.response_b,
            &self.response_z,
            &self.response_filters,
            pcg,
            &mut self.pcg,
            &mut self.response_dv,
            should_stop,
        );
        // The momentum the solve's constraints added beyond the stage's own change, removed in
        // the directions nothing outside the cloth pushes along (doc above, "Momentum").
        let mut span = *bodies;
        for f in filters {
            if span.is_full() {
                break;
            }
            span.add_filter(*f);
        }
        let mut excess = DVec3::ZERO;
        let mut moving_mass = 0.0f64;
        for (((vi, before), dvi), m) in v
            .iter()
            .zip(&self.response_before)
            .zip(&self.response_dv)
            .zip(mass)
        {
            if *m > 0.0 {
                excess += f64::from(*m) * (*dvi - (*vi - *before)).as_dvec3();
                moving_mass += f64::from(*m);
            }
        }
        let shift = if moving_mass > 0.0 {
            (span.outside(excess) / moving_mass).as_vec3()
        } else {
            Vec3::ZERO
        };
        for (((vi, before), dvi), m) in v
            .iter_mut()
            .zip(&self.response_before)
            .zip(&self.response_dv)
            .zip(mass)
        {
            *vi = *before + *dvi - if *m > 0.0 { shift } else { Vec3::ZERO };
        }
        Some(report)
    }

    /// Assembles A = M − hD − h²K and b = h(f0 + K(h v0 + y)) in place
    /// (`docs/methods/baraff-witkin.md` (2.14), 2.17). Returns the elastic energy at x0.
    ///
    /// `air_damping` c (1/s) adds the drag force −c m v, integrated implicitly
    /// (D gains −c m I on the diagonal): a rigid swing, which no internal
    /// damping touches, decays as e^(−c t).
    #[allow(clippy::too_many_arguments)]
    pub fn assemble(
        &mut self,
        h: f32,
        x: &[Vec3],
        v: &[Vec3],
        mass: &[f32],
        external: &[Vec3],
        y: &[Vec3],
        air_damping: f32,
    ) -> f64 {
        let hf = h;
        let h = f64::from(h);
        let mode = self.settings.jacobian;
        let settings = &self.settings;
        // The definite treatment (the default) writes A and b from each condition's rank-one
        // structure (`model::bw_system`), the upper triangle of each element's blocks and their
        // transposes; the exact Jacobians and the discrete shell go through the general
        // kernels' block arrays.
        let definite = mode == JacobianMode::Definite;
        let bend_system_applies = definite && settings.bending == BendingModel::BaraffWitkin;
        let bend_stiffness = match settings.bending_integration {
            BendingIntegration::Implicit => BendingStiffness::Implicit,
            BendingIntegration::Imex => BendingStiffness::Explicit,
        };
        let (tri_rest, hinge_rest, batches) = (&self.tri_rest, &self.hinge_rest, &self.batches);
        // Every row starts from the lumped mass (with implicit air drag) on its diagonal and
        // h (f_ext − c m v) in b; then the elements add their shares in the plan's order, in
        // parallel over disjoint rows: the same sums in the same order for any thread count.
        let start = |r: usize, w: &mut RowWindow<'_>| {
            w.row_blocks_mut(r).fill(Mat3::ZERO);
            let m = mass[r] + hf * (air_damping * mass[r]);
            let diag = w.diag_slot(r);
            *w.block_mut(diag) = Mat3::from_diagonal(Vec3::splat(m));
            *w.rhs_mut(r as u32) = hf * (external[r] - (air_damping * mass[r]) * v[r]);
        };
        // The general kernels, one element at a time, in f64.
        let gathered = |verts: &[u32]| -> ([DVec3; 4], [DVec3; 4], [DVec3; 4]) {
            let mut out = [[DVec3::ZERO; 4]; 3];
            for (k, &i) in verts.iter().enumerate() {
                let (xi, vi) = (x[i as usize].as_dvec3(), v[i as usize].as_dvec3());
                out[0][k] = xi;
                out[1][k] = vi;
                out[2][k] = h * vi + y[i as usize].as_dvec3();
            }
            (out[0], out[1], out[2])
        };
        let general_triangle = |w: &mut RowWindow<'_>, t: &[u32; 3], slots: &[u32], e: usize| {
            let (xe, ve, we) = gathered(t);
            let (xe, we) = (first3(&xe), first3(&we));
            let el = membrane_element(&xe, &first3(&ve), &tri_rest[e], &settings.membrane, mode);
            add_general(
                w, t, slots, h, &el.force, &el.dfdx, &el.dfdv, &we, el.energy,
            )
        };
        let general_hinge = |w: &mut RowWindow<'_>, hv: &[u32; 4], slots: &[u32], k: usize| {
            let (xe, ve, we) = gathered(hv);
            let el = hinge_element(settings, &xe, &ve, &hinge_rest[k], mode);
            let dfdx = match settings.bending_integration {
                BendingIntegration::Implicit => &el.dfdx,
                // `docs/methods/dihedral-bending.md` (4.10): elastic bending in F1 (explicit), no K.
                BendingIntegration::Imex => &ZERO_BLOCKS,
            };
            add_general(w, hv, slots, h, &el.force, dfdx, &el.dfdv, &we, el.energy)
        };
        let task = |t: usize, w: &mut RowWindow<'_>| -> f64 {
            let (tri_batches, hinge_batches, base) = batches.of_task(t);
            let mut energy = 0.0;
            let mut tri_in = [[Vec3Lanes::ZERO; 3]; 3];
            let mut tri_out = MembraneLanes::ZERO;
            for (batch, rest) in batches.triangles[tri_batches.clone()]
                .iter()
                .zip(&batches.triangle_rest[tri_batches])
            {
                let used = 0..batch.len;
                if !definite {
                    for k in used {
                        let e = batch.index[k] as usize;
                        let slots = batch.slots[k].map(|s| s + base as u32);
                        energy += general_triangle(w, &batch.verts[k], &slots, e);
                    }
                    continue;
                }
                gather_corners(&batch.verts, (x, v, y), &mut tri_in);
                membrane_lanes(
                    &tri_in[0],
                    &tri_in[1],
                    &tri_in[2],
                    rest,
                    &settings.membrane,
                    hf,
                    &mut tri_out,
                );
                for k in used {
                    energy += tri_out.shares().energy(k);
                    let slots = &batch.slots[k];
                    add_rows(w, &batch.verts[k], &tri_out.shares().rhs(k));
                    let (blocks, first) = w.blocks_mut();
                    let blocks = &mut blocks[base - first..];
                    tri_out.blocks(k, |m, l, b| {
                        b.add_to(&mut blocks[slots[3 * m + l] as usize]);
                    });
                }
            }
            let mut hinge_in = [[Vec3Lanes::ZERO; 4]; 3];
            let mut hinge_out = HingeLanes::ZERO;
            for (batch, rest) in batches.hinges[hinge_batches.clone()]
                .iter()
                .zip(&batches.hinge_rest[hinge_batches])
            {
                let used = 0..batch.len;
                if !bend_system_applies {
                    for k in used {
                        let e = batch.index[k] as usize;
                        let slots = batch.slots[k].map(|s| s + base as u32);
                        energy += general_hinge(w, &batch.verts[k], &slots, e);
                    }
                    continue;
                }
                gather_corners(&batch.verts, (x, v, y), &mut hinge_in);
                bend_lanes(
                    &hinge_in[0],
                    &hinge_in[1],
                    &hinge_in[2],
                    rest,
                    &settings.bend,
                    hf,
                    bend_stiffness,
                    &mut hinge_out,
                );
                for k in used {
                    energy += hinge_out.energy(k);
                    let slots = &batch.slots[k];
                    add_rows(w, &batch.verts[k], &hinge_out.rhs(k));
                    if hinge_out.has_blocks(k) {
                        let (blocks, first) = w.blocks_mut();
                        let blocks = &mut blocks[base - first..];
                        hinge_out.blocks(k, |m, l, b| {
                            b.add_to(&mut blocks[slots[4 * m + l] as usize]);
                        });
                    }
                }
            }
            energy
        };
        let (pattern, values) = self.a.pattern_and_values_mut();
        self.plan
            .run_by_task(pattern, values, &mut self.b, start, task)
    }

    /// The largest stable substep (s) of the IMEX split at positions `x` with lumped masses `mass`
    /// (`docs/methods/dihedral-bending.md` §4.8–4.9); `f64::INFINITY` when bending is implicit or there is no bending.
    ///
    /// With the elastic bending force explicit and everything else implicit, each bending mode is
    /// advanced by symplectic Euler (`v⁺ = v + h M⁻¹ f_b(x)`, `x⁺ = x + h v⁺`), stable for
    /// `h ω < 2` where ω² is an eigenvalue of `M⁻¹ K_b`; implicit stretch and damping only add
    /// stability. We bound `ω_max² = λ_max(M^{-1/2} K_b M^{-1/2})` from above with block Gershgorin on
    /// the Gauss–Newton bending stiffness `K_b = Σ_e s_e ∇θ_e ∇θ_eᵀ`
    /// ([`bending_mode_stiffness`]):
    ///
    /// ```text
    /// ω̂² = max_i Σ_{e ∋ i} s_e a_{e,i} Σ_{j ∈ e} a_{e,j},   a_{e,j} = |∂θ_e/∂x_j| / √m_j,
    /// h_max = 0.9 · 2 / ω̂.
    /// ```
    ///
    /// This is §4.9's `h ≲ C Δp² √(ρ/B)` with the constant worked out: `|∇θ| ~ 1/Δp`, `m ~ ρ Δp²`,
    /// `s ~ k_b`, so `ω̂ ~ √(k_b/ρ)/Δp²` (`tests::step_limit_scales_with_spacing_squared`). The
    /// curvature term of the exact Hessian is left out (it vanishes at rest). Evaluated at the current
    /// geometry; no allocation.
    pub fn explicit_bending_step_limit(&mut self, x: &[Vec3], mass: &[f32]) -> f64 {
        if self.settings.bending_integration == BendingIntegration::Implicit
            || self.settings.bend.stiffness == 0.0
        {
            return f64::INFINITY;
        }
        let shell = self.settings.bending == BendingModel::DiscreteShell;
        self.limit_rows.fill(0.0);
        for (hv, rest) in self.hinge_verts.iter().zip(&self.hinge_rest) {
            let p = hv.map(|i| x[i as usize].as_dvec3());
            let Some((s, g)) = bending_mode_stiffness(&p, rest, &self.settings.bend, shell) else {
                continue;
            };
            let a: [f64; 4] =
                std::array::from_fn(|k| g[k].length() / f64::from(mass[hv[k] as usize]).sqrt());
            let sum: f64 = a.iter().sum();
            for (k, &i) in hv.iter().enumerate() {
                self.limit_rows[i as usize] += s * a[k] * sum;
            }
        }
        let lambda = self.limit_rows.iter().copied().fold(0.0, f64::max);
        if lambda > 0.0 {
            IMEX_SAFETY * 2.0 / lambda.sqrt()
        } else {
            f64::INFINITY
        }
    }

    /// λ_i = (I − S_i)(A Δv − b)_i for constrained vertices (`docs/methods/baraff-witkin.md` §2.7).
    fn compute_constraint_impulses(&mut self, filters: &[Filter]) {
        let pattern = self.a.pattern();
        let values = self.a.values();
        for (i, f) in filters.iter().enumerate() {
            if matches!(f, Filter::Free) {
                self.lambda[i] = Vec3::ZERO;
                continue;
            }
            let mut r = -self.b[i];
            for (k, &j) in pattern.row_range(i).zip(pattern.row_cols(i)) {
                r += values[k] * self.dv[j as usize];
            }
            self.lambda[i] = f.constrained(r);
        }
    }
}

/// The factor on the previous solve's Δv that the next solve starts from
/// (`docs/methods/warm-start.md`, "The scaled start"): once the sheet has met something its
/// velocity changes shrink from one substep to the next, and the unscaled repeat overshoots.
/// 0.8 took the fewest CG iterations in paired solves of drape-65 and over whole runs of the
/// drapes and piles; a free-fall solve, where the unscaled repeat is exact, pays a few
/// iterations for it.
const WARM_START_SCALE: f32 = 0.8;

/// [`ImplicitEuler::respond`] skips a change that strains no edge by more than this (`h |Δ_j − Δ_i| / L0`).
const RESPONSE_MIN_STRAIN: f32 = 1e-3;

/// `f` with the direction of `d` constrained too (Gram–Schmidt against the directions `f`
/// constrains; `f` unchanged when `d` is zero or within 1e-3 of their span).
/// The directions in which something outside a cloth can push it (body contact normals and
/// pins), as an orthonormal basis of their span: [`ImplicitEuler::respond`] keeps the momentum its
/// constraints add only inside it. A direction within [`ReactionSpan::SAME_SPAN`] of the span
/// already held adds nothing, so the normals of one flat floor span one direction and those of
/// a curved body usually three.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReactionSpan {
    basis: [DVec3; 3],
    len: usize,
}

impl ReactionSpan {
    /// A direction whose part outside the span is shorter than this (of its unit length) lies
    /// in the span (about 6°).
    pub const SAME_SPAN: f64 = 0.1;

    /// Every direction (a pinned or fixed vertex can be pushed along any).
    pub const ALL: Self = Self {
        basis: [DVec3::X, DVec3::Y, DVec3::Z],
        len: 3,
    };

    /// Adds direction `d` (any length; zero and non-finite directions add nothing).
    pub fn add(&mut self, d: DVec3) {
        if self.is_full() {
            return;
        }
        let Some(d) = d.try_normalize() else {
            return;
        };
        let r = d - self.inside(d);
        if r.length() > Self::SAME_SPAN {
            self.basis[self.len] = r.normalize();
            self.len += 1;
        }
    }

    /// Adds the directions filter `f` constrains (all of them for [`Filter::Fixed`]).
    pub fn add_filter(&mut self, f: Filter) {
        match f {
            Filter::Free => {}
            Filter::OneDirection(p) => self.add(p.as_dvec3()),
            Filter::TwoDirections(p, q) => {
                self.add(p.as_dvec3());
                self.add(q.as_dvec3());
            }
            Filter::Fixed => *self = Self::ALL,
        }
    }

    /// Whether the span is all of space.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.len == 3
    }

    /// The projection of `p` onto the span.
    #[must_use]
    pub fn inside(&self, p: DVec3) -> DVec3 {
        self.basis[..self.len].iter().map(|b| b * b.dot(p)).sum()
    }

    /// The part of `p` outside the span.
    #[must_use]
    pub fn outside(&self, p: DVec3) -> DVec3 {
        p - self.inside(p)
    }
}

fn with_direction(f: Filter, d: Vec3) -> Filter {
    const SPAN: f32 = 1e-3;
    let Some(d) = d.try_normalize() else {
        return f;
    };
    match f {
        Filter::Free => Filter::OneDirection(d),
        Filter::OneDirection(p) => {
            let r = d - p * p.dot(d);
            if r.length() > SPAN {
                Filter::two_directions(p, r)
            } else {
                f
            }
        }
        Filter::TwoDirections(p, q) => {
            let r = d - p * p.dot(d) - q * q.dot(d);
            if r.length() > SPAN { Filter::Fixed } else { f }
        }
        Filter::Fixed => Filter::Fixed,
    }
}

/// Safety factor on the symplectic-Euler bound `h ω < 2` of the explicit bending step limit (the
/// Gershgorin ω̂ already over-estimates ω_max; the factor covers the geometry changing within a step).
const IMEX_SAFETY: f64 = 0.9;

/// The hinge kernel the settings select: Baraff–Witkin bend or discrete shell.
fn hinge_element(
    settings: &BwSettings,
    x: &[DVec3; 4],
    v: &[DVec3; 4],
    rest: &HingeRest,
    mode: JacobianMode,
) -> ElementOutput<4> {
    match settings.bending {
        BendingModel::BaraffWitkin => bend_element(x, v, rest, &settings.bend, mode),
        BendingModel::DiscreteShell => shell_element(x, v, rest, &settings.bend, mode),
    }
}

/// The first three of four gathered corner values (a triangle's).
#[inline]
fn first3(a: &[DVec3; 4]) -> [DVec3; 3] {
    [a[0], a[1], a[2]]
}

/// The positions, velocities and contact offsets at a batch's corners, written into `out` (every
/// lane of it): `out[0][m]` holds, lane by lane, each element's position at its corner `m`, then
/// `out[1]` the velocities and `out[2]` the offsets. One pass over the corners reads each vertex
/// index once for all three, into a buffer the caller keeps from batch to batch.
///
/// # Panics
/// If a corner is not a vertex of `x`, or `v` or `y` is shorter than `x`.
#[inline(always)]
fn gather_corners<const N: usize>(
    verts: &[[u32; N]; LANES],
    (x, v, y): (&[Vec3], &[Vec3], &[Vec3]),
    out: &mut [[Vec3Lanes; N]; 3],
) {
    // Of the length of `x`, so that one bounds check serves all three.
    let (v, y) = (&v[..x.len()], &y[..x.len()]);
    for (k, corners) in verts.iter().enumerate() {
        for (m, &i) in corners.iter().enumerate() {
            let i = i as usize;
            for (lanes, p) in out.iter_mut().zip([x[i], v[i], y[i]]) {
                lanes[m].x.0[k] = p.x;
                lanes[m].y.0[k] = p.y;
                lanes[m].z.0[k] = p.z;
            }
        }
    }
}

/// Adds an element's rows of `b` from a definite kernel (its blocks are added from their packed
/// form, [`crate::model::bw_lanes::PackedBlock::add_to`]).
#[inline]
fn add_rows<const N: usize>(w: &mut RowWindow<'_>, verts: &[u32; N], rhs: &[Vec3; N]) {
    for (&i, r) in verts.iter().zip(rhs) {
        *w.rhs_mut(i) += *r;
    }
}

/// `docs/methods/baraff-witkin.md` (2.14) from a general kernel's force and Jacobians: A gets
/// −h D − h² K at the element's slots (row-major), b gets h (f + K w) with w = h v + y,
/// each evaluated in f64 and rounded once. Returns the element's energy.
#[allow(clippy::too_many_arguments)]
fn add_general<const N: usize>(
    w: &mut RowWindow<'_>,
    verts: &[u32; N],
    slots: &[u32],
    h: f64,
    force: &[DVec3; N],
    dfdx: &[[DMat3; N]; N],
    dfdv: &[[DMat3; N]; N],
    wv: &[DVec3; N],
    energy: f64,
) -> f64 {
    for r in 0..N {
        let mut rhs = h * force[r];
        for col in 0..N {
            let k = dfdx[r][col];
            rhs += h * (k * wv[col]);
            let block = -h * dfdv[r][col] - (h * h) * k;
            *w.block_mut(slots[N * r + col]) += block.as_mat3();
        }
        *w.rhs_mut(verts[r]) += rhs.as_vec3();
    }
    energy
}

/// The rest data of every triangle of `mesh` ([`ImplicitEuler::triangle_rest`], without the
/// rest of the system): from `mesh.corner_uvs` when present, else each triangle laid flat in
/// its own plane. The lumped masses of both models come from these rest areas.
///
/// # Errors
/// [`BwBuildError::DegenerateRest`] for the first triangle with a zero rest area.
pub fn triangle_rests(mesh: &TriMesh) -> Result<Vec<TriangleRest>, BwBuildError> {
    mesh.triangles
        .iter()
        .enumerate()
        .map(|(t, tri)| {
            let uv = match &mesh.corner_uvs {
                Some(uvs) => uvs[t].map(|p| p.as_dvec2()),
                None => flatten_triangle(tri.map(|i| mesh.positions[i as usize].as_dvec3())),
            };
            TriangleRest::from_uv(uv).ok_or(BwBuildError::DegenerateRest { face: t as u32 })
        })
        .collect()
}

/// Lays a 3D triangle flat: corner 0 at the origin, corner 1 on +u.
fn flatten_triangle(p: [DVec3; 3]) -> [DVec2; 3] {
    let e1 = p[1] - p[0];
    let e2 = p[2] - p[0];
    let l1 = e1.length();
    if l1 == 0.0 {
        return [DVec2::ZERO; 3];
    }
    let u = e1 / l1;
    let n = e1.cross(e2);
    let vdir = n.cross(e1).normalize_or_zero();
    [
        DVec2::ZERO,
        DVec2::new(l1, 0.0),
        DVec2::new(e2.dot(u), e2.dot(vdir)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{GridSpec, grid};

    fn settings(bending: BendingModel, integration: BendingIntegration) -> BwSettings {
        BwSettings {
            bend: BendParams {
                stiffness: 1e-3,
                damping: 0.002,
            },
            bending,
            bending_integration: integration,
            pcg: PcgSettings {
                max_iterations: 100,
                tolerance: 1e-6,
            },
            ..BwSettings::default()
        }
    }

    /// A bumpy n x n grid (so the hinges are not all flat), its system and lumped masses.
    fn bumpy(n: u32, bending: BendingModel) -> (ImplicitEuler, Vec<Vec3>, Vec<f32>) {
        let mut mesh = grid(&GridSpec {
            nx: n,
            ny: n,
            ..GridSpec::default()
        })
        .expect("valid grid");
        for p in &mut mesh.positions {
            p.y = 0.05 * (3.0 * p.x).sin() * (2.0 * p.z).cos();
        }
        let topo = Topology::build(&mesh).expect("valid topology");
        let sys = ImplicitEuler::new(&mesh, &topo, settings(bending, BendingIntegration::Imex))
            .expect("well-shaped rest");
        let areas: Vec<f64> = sys.triangle_rest().iter().map(|r| r.area).collect();
        let mass = crate::state::lumped_masses(mesh.num_vertices(), &mesh.triangles, &areas, 0.1);
        (sys, mesh.positions, mass)
    }

    /// `A` and `b` by a serial scatter of the general kernels' element outputs in `f64`
    /// (`docs/methods/baraff-witkin.md` (2.14)), and for every entry the sum over the elements
    /// adding into it of each one's largest block entry or term (the scale `f32` rounding is
    /// relative to: the kernels' blocks are sums of products of rounded factors, and `A` and `b`
    /// are `f32` sums); dense, row-major `3n × 3n`.
    #[allow(clippy::type_complexity)]
    fn reference_system(
        sys: &ImplicitEuler,
        h: f64,
        x: &[Vec3],
        v: &[Vec3],
        y: &[Vec3],
        mass: &[f32],
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let n3 = 3 * x.len();
        let (mut a, mut a_abs) = (vec![0.0; n3 * n3], vec![0.0; n3 * n3]);
        let (mut b, mut b_abs) = (vec![0.0; n3], vec![0.0; n3]);
        for (i, &m) in mass.iter().enumerate() {
            for r in 0..3 {
                let d = (3 * i + r) * n3 + 3 * i + r;
                a[d] = f64::from(m);
                a_abs[d] = f64::from(m);
            }
        }
        // Each element adds its blocks and rows, and, to every entry it touches, its largest
        // block entry (for A) or largest term (for b): f32 rounding is relative to those.
        let mut add = |verts: &[u32], e: (&[DVec3], &dyn Fn(usize, usize) -> (DMat3, DMat3))| {
            let (force, jac) = e;
            let nv = verts.len();
            let mut blocks = Vec::with_capacity(nv * nv);
            let mut rows = vec![DVec3::ZERO; nv];
            let (mut block_scale, mut row_scale) = (0.0f64, 0.0f64);
            for p in 0..nv {
                row_scale = row_scale.max((h * force[p]).abs().max_element());
                rows[p] += h * force[p];
                for (q, &j) in verts.iter().enumerate() {
                    let (dfdx, dfdv) = jac(p, q);
                    let block = -h * dfdv - (h * h) * dfdx;
                    let w = h * v[j as usize].as_dvec3() + y[j as usize].as_dvec3();
                    let kw = h * (dfdx * w);
                    row_scale = row_scale.max(kw.abs().max_element());
                    rows[p] += kw;
                    block_scale = block_scale
                        .max(block.abs().to_cols_array().into_iter().fold(0.0, f64::max));
                    blocks.push(block);
                }
            }
            for (p, &i) in verts.iter().enumerate() {
                for (q, &j) in verts.iter().enumerate() {
                    for r in 0..3 {
                        for c in 0..3 {
                            let at = (3 * i as usize + r) * n3 + 3 * j as usize + c;
                            a[at] += blocks[nv * p + q].col(c)[r];
                            a_abs[at] += block_scale;
                        }
                    }
                }
                for r in 0..3 {
                    b[3 * i as usize + r] += rows[p][r];
                    b_abs[3 * i as usize + r] += row_scale;
                }
            }
        };
        let mode = sys.settings.jacobian;
        for (t, rest) in sys.tri_verts.iter().zip(&sys.tri_rest) {
            let xe = t.map(|i| x[i as usize].as_dvec3());
            let ve = t.map(|i| v[i as usize].as_dvec3());
            let e = membrane_element(&xe, &ve, rest, &sys.settings.membrane, mode);
            add(t, (&e.force, &|p, q| (e.dfdx[p][q], e.dfdv[p][q])));
        }
        for (hv, rest) in sys.hinge_verts.iter().zip(&sys.hinge_rest) {
            let xe = hv.map(|i| x[i as usize].as_dvec3());
            let ve = hv.map(|i| v[i as usize].as_dvec3());
            let e = hinge_element(&sys.settings, &xe, &ve, rest, mode);
            add(hv, (&e.force, &|p, q| (e.dfdx[p][q], e.dfdv[p][q])));
        }
        (a, a_abs, b, b_abs)
    }

    /// The parallel scatter gives `A` and `b` of the general kernels to `f32` rounding, in every
    /// mode (the definite kernels' symmetric path, the general kernels' path), the same bits for
    /// 1, 2 and 4 threads, and an exactly symmetric `A`. The sheet has enough vertices for several
    /// parts, so elements across the cuts are in it.
    /// The elastic energy is the element kernels' energies summed, to round-off, and the same
    /// bits in pools of 1, 2 and 4 threads, for both bending models.
    #[test]
    fn elastic_energy_is_the_elements_and_independent_of_threads() {
        use crate::linalg::block_csr::tests::in_pool;
        let n = 40u32;
        let mesh = grid(&GridSpec {
            nx: n,
            ny: n,
            ..GridSpec::default()
        })
        .expect("valid grid");
        let topo = Topology::build(&mesh).expect("valid topology");
        let mut rng = crate::testing::SplitMix64::new(11);
        let x: Vec<Vec3> = mesh
            .positions
            .iter()
            .map(|p| {
                let bent = Vec3::new(p.x, 0.05 * (3.0 * p.x).sin() * (2.0 * p.z).cos(), p.z);
                bent * (1.0 + 0.02 * rng.uniform(-1.0, 1.0) as f32)
            })
            .collect();
        for bending in [BendingModel::BaraffWitkin, BendingModel::DiscreteShell] {
            let sys = ImplicitEuler::new(
                &mesh,
                &topo,
                settings(bending, BendingIntegration::Implicit),
            )
            .expect("valid rest");
            let mut serial = 0.0;
            for (t, rest) in sys.tri_verts.iter().zip(&sys.tri_rest) {
                let p = t.map(|i| x[i as usize].as_dvec3());
                let v = [DVec3::ZERO; 3];
                serial +=
                    membrane_element(&p, &v, rest, &sys.settings.membrane, JacobianMode::Definite)
                        .energy;
            }
            for (hv, rest) in sys.hinge_verts.iter().zip(&sys.hinge_rest) {
                let p = hv.map(|i| x[i as usize].as_dvec3());
                let v = [DVec3::ZERO; 4];
                serial += hinge_element(&sys.settings, &p, &v, rest, JacobianMode::Definite).energy;
            }
            let energies = [1, 2, 4].map(|threads| in_pool(threads, || sys.elastic_energy(&x)));
            assert!(serial > 0.0);
            assert!(
                (energies[0] - serial).abs() <= 1e-12 * serial,
                "{bending:?}"
            );
            assert!(
                energies
                    .iter()
                    .all(|e| e.to_bits() == energies[0].to_bits()),
                "{bending:?}: {energies:?}"
            );
        }
    }

    #[test]
    fn assembly_matches_the_general_kernels_for_any_thread_count() {
        use crate::linalg::block_csr::tests::in_pool;
        let n = 40u32;
        let mut mesh = grid(&GridSpec {
            nx: n,
            ny: n,
            ..GridSpec::default()
        })
        .expect("valid grid");
        let mut rng = crate::testing::SplitMix64::new(5);
        for p in &mut mesh.positions {
            p.y = 0.05 * (3.0 * p.x).sin() * (2.0 * p.z).cos();
            // Stretched and compressed edges both (tension-only curvature on and off).
            *p *= 1.0 + 0.02 * rng.uniform(-1.0, 1.0) as f32;
        }
        let topo = Topology::build(&mesh).expect("valid topology");
        let rest_mesh = {
            let mut m = mesh.clone();
            for p in &mut m.positions {
                p.y = 0.0;
            }
            m
        };
        let nv = mesh.num_vertices();
        let v: Vec<Vec3> = (0..nv).map(|_| rng.vec3(0.3).as_vec3()).collect();
        let y: Vec<Vec3> = (0..nv).map(|_| rng.vec3(1e-3).as_vec3()).collect();
        let zero = vec![Vec3::ZERO; nv];
        let h = 1.0 / 120.0;
        for (bending, jacobian) in [
            (BendingModel::BaraffWitkin, JacobianMode::Definite),
            (BendingModel::DiscreteShell, JacobianMode::Definite),
            (BendingModel::BaraffWitkin, JacobianMode::Exact),
        ] {
            let settings = BwSettings {
                jacobian,
                ..settings(bending, BendingIntegration::Implicit)
            };
            let mut sys = ImplicitEuler::new(&rest_mesh, &topo, settings).expect("valid rest");
            assert!(sys.plan.phase_elements(1) + sys.plan.phase_elements(2) > 0);
            let areas: Vec<f64> = sys.tri_rest.iter().map(|r| r.area).collect();
            let mass = crate::state::lumped_masses(nv, &mesh.triangles, &areas, 0.1);
            let mut first: Option<(Vec<u32>, Vec<Vec3>)> = None;
            for threads in [1, 2, 4] {
                in_pool(threads, || {
                    sys.assemble(h as f32, &mesh.positions, &v, &mass, &zero, &y, 0.0)
                });
                let bits: Vec<u32> = sys
                    .a
                    .values()
                    .iter()
                    .flat_map(|m| m.to_cols_array().map(f32::to_bits))
                    .collect();
                match &first {
                    None => first = Some((bits, sys.b.clone())),
                    Some((b0, r0)) => {
                        assert!(bits == *b0 && sys.b == *r0, "{threads} threads");
                    }
                }
            }
            assert!(
                sys.a.is_symmetric(0.0),
                "{bending:?} {jacobian:?}: A symmetric"
            );
            let (a, a_abs, b, b_abs) = reference_system(&sys, h, &mesh.positions, &v, &y, &mass);
            let dense = sys.a.to_dense();
            for (k, ((got, want), scale)) in dense.iter().zip(&a).zip(&a_abs).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-6 * scale + 1e-30,
                    "{bending:?} {jacobian:?}: A entry {k}: {got} vs {want} (scale {scale})"
                );
            }
            // The definite kernels run in `f32` lanes (`model::bw_lanes`): each row is resolved to a
            // few tens of `f32` ulps of its terms (the hinge angle to ~1e-7 rad, here on hinges of
            // ~1e-2 rad), where the general kernels' `f64` rows carry one rounding.
            let b_tol = if jacobian == JacobianMode::Definite {
                5e-6
            } else {
                1e-6
            };
            for (k, (got, (want, scale))) in sys
                .b
                .iter()
                .flat_map(|r| r.to_array())
                .zip(b.iter().zip(&b_abs))
                .enumerate()
            {
                assert!(
                    (f64::from(got) - want).abs() <= b_tol * scale + 1e-30,
                    "{bending:?} {jacobian:?}: b entry {k}: {got} vs {want} (scale {scale})"
                );
            }
        }
    }

    /// ω_max² = λ_max(M^{-1/2} K_b M^{-1/2}) of the Gauss–Newton bending stiffness, by a dense
    /// self-adjoint eigen-solve.
    fn true_omega_max(sys: &ImplicitEuler, x: &[Vec3], mass: &[f32], shell: bool) -> f64 {
        let n = 3 * x.len();
        let mut k = faer::Mat::<f64>::zeros(n, n);
        for (hv, rest) in sys.hinge_verts.iter().zip(&sys.hinge_rest) {
            let p = hv.map(|i| x[i as usize].as_dvec3());
            let Some((s, g)) = bending_mode_stiffness(&p, rest, &sys.settings.bend, shell) else {
                continue;
            };
            for (a, &i) in hv.iter().enumerate() {
                for (b, &j) in hv.iter().enumerate() {
                    let scale =
                        s / (f64::from(mass[i as usize]) * f64::from(mass[j as usize])).sqrt();
                    for r in 0..3 {
                        for c in 0..3 {
                            k[(3 * i as usize + r, 3 * j as usize + c)] +=
                                scale * g[a][r] * g[b][c];
                        }
                    }
                }
            }
        }
        let eig = k
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .expect("eigen-solver converges");
        eig.iter().copied().fold(0.0, f64::max).sqrt()
    }

    #[test]
    fn step_limit_bounds_the_true_frequency() {
        for (bending, shell) in [
            (BendingModel::BaraffWitkin, false),
            (BendingModel::DiscreteShell, true),
        ] {
            let (mut sys, x, mass) = bumpy(9, bending);
            let h_max = sys.explicit_bending_step_limit(&x, &mass);
            let omega_hat = IMEX_SAFETY * 2.0 / h_max;
            let omega = true_omega_max(&sys, &x, &mass, shell);
            // Safe (an upper bound) and not absurdly conservative.
            assert!(omega_hat >= omega, "{bending:?}: ω̂ {omega_hat} < ω {omega}");
            assert!(
                omega_hat <= 6.0 * omega,
                "{bending:?}: ω̂ {omega_hat} vs ω {omega}"
            );
        }
    }

    #[test]
    fn step_limit_scales_with_spacing_squared() {
        // `docs/methods/dihedral-bending.md` §4.9: h_max ∝ Δp². Halving the spacing quarters the limit.
        let (mut a, xa, ma) = bumpy(17, BendingModel::DiscreteShell);
        let (mut b, xb, mb) = bumpy(33, BendingModel::DiscreteShell);
        let ratio =
            a.explicit_bending_step_limit(&xa, &ma) / b.explicit_bending_step_limit(&xb, &mb);
        assert!((3.5..4.5).contains(&ratio), "ratio {ratio}");
    }

    #[test]
    fn implicit_bending_has_no_step_limit() {
        let mesh = grid(&GridSpec {
            nx: 5,
            ny: 5,
            ..GridSpec::default()
        })
        .expect("valid grid");
        let topo = Topology::build(&mesh).expect("valid topology");
        let mut sys = ImplicitEuler::new(
            &mesh,
            &topo,
            settings(BendingModel::DiscreteShell, BendingIntegration::Implicit),
        )
        .expect("well-shaped rest");
        let mass = vec![1.0; mesh.num_vertices()];
        assert_eq!(
            sys.explicit_bending_step_limit(&mesh.positions, &mass),
            f64::INFINITY
        );
    }

    #[test]
    fn flatten_preserves_lengths() {
        let p = [
            DVec3::new(0.1, 0.2, 0.3),
            DVec3::new(1.0, 0.5, -0.2),
            DVec3::new(0.3, 1.1, 0.4),
        ];
        let q = flatten_triangle(p);
        for (a, b) in [(0, 1), (1, 2), (0, 2)] {
            let l3 = (p[a] - p[b]).length();
            let l2 = (q[a] - q[b]).length();
            assert!((l3 - l2).abs() < 1e-12);
        }
        // Winding preserved: positive signed area.
        let e1 = q[1] - q[0];
        let e2 = q[2] - q[0];
        assert!(e1.perp_dot(e2) > 0.0);
    }

    /// The system, positions, edges, rest lengths and lumped masses of [`flat_sheet`].
    type FlatSheet = (ImplicitEuler, Vec<Vec3>, Vec<[u32; 2]>, Vec<f32>, Vec<f32>);

    /// A flat 17 × 17 sheet at rest with the default (stiff, pile-33) material, its system
    /// assembled for one substep of h = 1/120 s with no load (lumped masses of 0.1 kg/m²), its
    /// edges, rest lengths and lumped masses.
    fn flat_sheet() -> FlatSheet {
        let mesh = grid(&GridSpec {
            nx: 17,
            ny: 17,
            ..GridSpec::default()
        })
        .expect("valid grid");
        let topo = Topology::build(&mesh).expect("valid topology");
        let mut sys = ImplicitEuler::new(&mesh, &topo, BwSettings::default()).expect("valid rest");
        let areas: Vec<f64> = sys.triangle_rest().iter().map(|r| r.area).collect();
        let mass = crate::state::lumped_masses(mesh.num_vertices(), &mesh.triangles, &areas, 0.1);
        let n = mesh.num_vertices();
        let zero = vec![Vec3::ZERO; n];
        sys.assemble(RESPONSE_H, &mesh.positions, &zero, &mass, &zero, &zero, 0.0);
        let edges = topo.edges().to_vec();
        let rest = edges
            .iter()
            .map(|&[i, j]| (mesh.positions[j as usize] - mesh.positions[i as usize]).length())
            .collect();
        (sys, mesh.positions, edges, rest, mass)
    }

    const RESPONSE_H: f32 = 1.0 / 120.0;

    /// Largest edge strain of `x + h v`.
    fn max_strain_after(x: &[Vec3], v: &[Vec3], edges: &[[u32; 2]], rest: &[f32]) -> f32 {
        edges
            .iter()
            .zip(rest)
            .map(|(&[i, j], l0)| {
                let d = (x[j as usize] + RESPONSE_H * v[j as usize])
                    - (x[i as usize] + RESPONSE_H * v[i as usize]);
                (d.length() / l0 - 1.0).abs()
            })
            .fold(0.0f32, f32::max)
    }

    fn energy_after(sys: &ImplicitEuler, x: &[Vec3], v: &[Vec3]) -> f64 {
        let x1: Vec<Vec3> = x.iter().zip(v).map(|(x, v)| *x + RESPONSE_H * *v).collect();
        sys.elastic_energy(&x1)
    }

    /// The energy injection of the collision stage (samples/README.md, pile): one vertex of a
    /// stiff sheet stopped by an in-plane impulse while its neighbours keep their velocity.
    /// Applied as it is, the change stores about ½h²Δᵀ(−K)Δ of strain energy at x^{n+1}; the
    /// response solve keeps the vertex's prescribed component exactly and lets the sheet
    /// follow: here 9× less strain energy, largest edge strain 8 % → 1.6 %.
    #[test]
    fn response_solve_spreads_a_collision_change_through_the_stiffness() {
        let (mut sys, x, edges, rest, mass) = flat_sheet();
        let n = x.len();
        let centre = n / 2;
        let before = vec![Vec3::ZERO; n];
        let mut v = before.clone();
        let delta = Vec3::new(0.6, 0.0, 0.0);
        v[centre] = delta;
        let raw = energy_after(&sys, &x, &v);
        let raw_strain = max_strain_after(&x, &v, &edges, &rest);
        sys.remember_velocities(&before);
        let filters = vec![Filter::Free; n];
        let pcg = PcgSettings {
            max_iterations: 500,
            tolerance: 1e-6,
        };
        let report = sys
            .respond(
                RESPONSE_H,
                &mut v,
                &filters,
                &mass,
                &ReactionSpan::ALL,
                &edges,
                &rest,
                &pcg,
                &mut |_| false,
            )
            .expect("a straining change is responded to");
        assert!(report.converged, "{report:?}");
        // The prescribed component is kept exactly (the filter's z), the others follow.
        assert_eq!(v[centre].x, delta.x);
        let responded = energy_after(&sys, &x, &v);
        let strain = max_strain_after(&x, &v, &edges, &rest);
        assert!(raw_strain > 0.05, "the rig strains an edge by {raw_strain}");
        assert!(
            strain < 0.25 * raw_strain,
            "largest strain {strain} after the response, {raw_strain} without"
        );
        assert!(
            responded < raw / 5.0,
            "strain energy {responded} J after the response, {raw} J without"
        );
        // The neighbours moved with the stopped vertex, in its direction.
        assert!(v[centre + 1].x > 0.1 * delta.x && v[centre - 1].x > 0.1 * delta.x);
    }

    /// The response solve starts from `δ = 0`, not from the substep's own `Δv` (still in `dv`,
    /// the next substep's warm start, which it leaves alone): stopped after one iteration, a
    /// vertex far from the change keeps its velocity exactly (one Krylov step reaches only the
    /// neighbours of the changed vertex); starting from `dv` it would get the step's `Δv` a
    /// second time.
    #[test]
    fn response_solve_starts_from_zero_and_keeps_the_warm_start() {
        let (mut sys, _x, edges, rest, mass) = flat_sheet();
        let n = sys.dv.len();
        let step_dv = Vec3::new(0.0, -0.08, 0.0);
        sys.dv.fill(step_dv);
        let before = vec![Vec3::new(0.0, -0.5, 0.0); n];
        sys.remember_velocities(&before);
        let mut v = before.clone();
        v[n / 2] += Vec3::new(0.6, 0.0, 0.0);
        let filters = vec![Filter::Free; n];
        let pcg = PcgSettings {
            max_iterations: 1,
            tolerance: 1e-9,
        };
        let report = sys
            .respond(
                RESPONSE_H,
                &mut v,
                &filters,
                &mass,
                &ReactionSpan::ALL,
                &edges,
                &rest,
                &pcg,
                &mut |_| false,
            )
            .expect("a straining change is responded to");
        assert!(!report.converged);
        assert_eq!(v[0], before[0]);
        assert!(sys.dv.iter().all(|d| *d == step_dv));
    }

    /// A non-finite velocity is not responded to (and so not overwritten): the caller's
    /// finiteness check must see it.
    #[test]
    fn response_solve_leaves_a_nan_velocity_alone() {
        let (mut sys, _x, edges, rest, mass) = flat_sheet();
        let n = sys.dv.len();
        let before = vec![Vec3::ZERO; n];
        sys.remember_velocities(&before);
        let mut v = before.clone();
        v[n / 2] = Vec3::new(0.6, 0.0, 0.0);
        v[3].y = f32::NAN;
        let filters = vec![Filter::Free; n];
        let pcg = BwSettings::default().pcg;
        let out = sys.respond(
            RESPONSE_H,
            &mut v,
            &filters,
            &mass,
            &ReactionSpan::ALL,
            &edges,
            &rest,
            &pcg,
            &mut |_| false,
        );
        assert!(out.is_none());
        assert!(v[3].y.is_nan());
    }

    /// A rigid change (every vertex the same Δ) strains nothing: no response solve, `v` kept.
    #[test]
    fn response_solve_skips_a_rigid_change() {
        let (mut sys, x, edges, rest, mass) = flat_sheet();
        let n = x.len();
        let before = vec![Vec3::new(0.0, -0.3, 0.0); n];
        sys.remember_velocities(&before);
        let mut v = vec![Vec3::new(0.2, 0.1, -0.4); n];
        let expected = v.clone();
        let filters = vec![Filter::Free; n];
        let pcg = BwSettings::default().pcg;
        assert!(
            sys.respond(
                RESPONSE_H,
                &mut v,
                &filters,
                &mass,
                &ReactionSpan::ALL,
                &edges,
                &rest,
                &pcg,
                &mut |_| false
            )
            .is_none()
        );
        assert_eq!(v, expected);
    }

    /// Total momentum `Σ m v`, in f64.
    fn momentum(v: &[Vec3], mass: &[f32]) -> DVec3 {
        v.iter()
            .zip(mass)
            .map(|(v, m)| f64::from(*m) * v.as_dvec3())
            .sum()
    }

    /// Two parts of a free sheet collide: the stage gives a corner vertex and an interior one
    /// opposite changes of equal momentum. Their neighbourhoods differ, so the constraints that
    /// keep the two changes drag different amounts of cloth: left alone, the response would
    /// push the whole sheet. With nothing outside the cloth to push back, the response keeps the
    /// momentum the stage left, and the two vertices' relative velocity.
    #[test]
    fn response_to_a_collision_within_the_cloth_keeps_its_momentum() {
        let (mut sys, x, edges, rest, mass) = flat_sheet();
        let n = x.len();
        let (corner, centre) = (0, n / 2);
        let before = vec![Vec3::ZERO; n];
        let mut changed = before.clone();
        let d = Vec3::new(0.6, 0.0, 0.0);
        changed[corner] = d / mass[corner];
        changed[centre] = -d / mass[centre];
        let filters = vec![Filter::Free; n];
        let pcg = PcgSettings {
            max_iterations: 500,
            tolerance: 1e-7,
        };
        let p0 = momentum(&changed, &mass);
        assert!(p0.length() < 1e-6, "the stage's change carries no momentum");
        let mut respond = |bodies: &ReactionSpan| {
            let mut v = changed.clone();
            sys.remember_velocities(&before);
            let report = sys
                .respond(
                    RESPONSE_H,
                    &mut v,
                    &filters,
                    &mass,
                    bodies,
                    &edges,
                    &rest,
                    &pcg,
                    &mut |_| false,
                )
                .expect("a straining change is responded to");
            assert!(report.converged, "{report:?}");
            v
        };
        // Reactions kept (as if bodies pushed along every direction): the sheet is pushed.
        let pushed = respond(&ReactionSpan::ALL);
        let scale = f64::from(d.length());
        assert!(
            momentum(&pushed, &mass).length() > 0.05 * scale,
            "the reactions carry momentum: {}",
            momentum(&pushed, &mass)
        );
        // Nothing outside the cloth: the momentum is the stage's.
        let kept = respond(&ReactionSpan::default());
        assert!(
            momentum(&kept, &mass).length() < 1e-5 * scale,
            "momentum {} after the response",
            momentum(&kept, &mass)
        );
        let relative = |v: &[Vec3]| v[corner] - v[centre];
        assert!((relative(&kept) - relative(&pushed)).length() < 1e-5 * relative(&pushed).length());
    }

    /// A body pushing along z may take up the reactions along z; across it the momentum stays
    /// the stage's.
    #[test]
    fn response_keeps_the_reactions_a_body_can_supply() {
        let (mut sys, x, edges, rest, mass) = flat_sheet();
        let n = x.len();
        let before = vec![Vec3::ZERO; n];
        let mut v = before.clone();
        v[n / 2] = Vec3::new(0.6, 0.0, 0.6);
        let filters = vec![Filter::Free; n];
        let pcg = PcgSettings {
            max_iterations: 500,
            tolerance: 1e-7,
        };
        let mut floor = ReactionSpan::default();
        floor.add(DVec3::Z);
        sys.remember_velocities(&before);
        sys.respond(
            RESPONSE_H,
            &mut v,
            &filters,
            &mass,
            &floor,
            &edges,
            &rest,
            &pcg,
            &mut |_| false,
        )
        .expect("a straining change is responded to");
        let p = momentum(&v, &mass);
        let stage = 0.6 * f64::from(mass[n / 2]);
        assert!(
            (p.x - stage).abs() < 1e-5 * stage,
            "x momentum {} for the stage's {stage}",
            p.x
        );
        assert!(
            p.z > 1.5 * stage,
            "the body's reaction along z is kept: {}",
            p.z
        );
    }

    /// The span of body directions: one floor's normals span one direction, a second normal
    /// more than [`ReactionSpan::SAME_SPAN`] away a second, a fixed vertex every direction.
    #[test]
    fn reaction_span_grows_by_distinct_directions() {
        let mut span = ReactionSpan::default();
        span.add(DVec3::Y);
        span.add(DVec3::new(0.05, 1.0, 0.0));
        span.add(DVec3::ZERO);
        span.add(DVec3::NAN);
        assert_eq!(
            span.outside(DVec3::new(1.0, 2.0, 3.0)),
            DVec3::new(1.0, 0.0, 3.0)
        );
        span.add_filter(Filter::OneDirection(Vec3::X));
        assert!(!span.is_full());
        let r = span.outside(DVec3::new(1.0, 2.0, 3.0));
        assert!((r - DVec3::new(0.0, 0.0, 3.0)).length() < 1e-12, "{r}");
        span.add_filter(Filter::Fixed);
        assert!(span.is_full());
        assert_eq!(span.outside(DVec3::new(1.0, 2.0, 3.0)), DVec3::ZERO);
    }

    /// The response filter adds the change's direction to the solve's own constraints.
    #[test]
    fn response_filter_adds_the_change_direction() {
        assert_eq!(
            with_direction(Filter::Free, Vec3::new(0.0, 0.0, -2.0)),
            Filter::OneDirection(Vec3::NEG_Z)
        );
        let Filter::TwoDirections(p, q) =
            with_direction(Filter::OneDirection(Vec3::Y), Vec3::new(1.0, 1.0, 0.0))
        else {
            panic!("two directions expected");
        };
        assert_eq!(p, Vec3::Y);
        assert!(q.abs_diff_eq(Vec3::X, 1e-6), "{q}");
        // Within the span already constrained: unchanged.
        assert_eq!(
            with_direction(Filter::OneDirection(Vec3::Y), Vec3::new(0.0, -3.0, 0.0)),
            Filter::OneDirection(Vec3::Y)
        );
        assert_eq!(
            with_direction(Filter::TwoDirections(Vec3::Y, Vec3::X), Vec3::Z),
            Filter::Fixed
        );
        assert_eq!(with_direction(Filter::Fixed, Vec3::X), Filter::Fixed);
        assert_eq!(with_direction(Filter::Free, Vec3::ZERO), Filter::Free);
    }
}
