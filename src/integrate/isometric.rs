//! The step of Wang 2012 Table 3.1: predict, project, collide, add the
//! contacts as constraints, project again, collide again, velocity.
//!
//! ```text
//! 1  x̃   ← prediction (backward Euler or BDF2, [`super::bdf2`])
//! 2  x_p ← project(x̃)                       Gauss–Newton, eq. 3.25, from x⁽⁰⁾ = x̃
//! 3  x_c ← collide(xⁿ → x_p)                 the Bridson stage, collide::resolve
//! 4  C'  ← C ∪ contact rows at x_c           eq. 3.26 (normal), eq. 3.28 (tangents), both soft (eq. 3.30)
//! 5  x_p ← project(x̃ or x_c; C')             from x⁽⁰⁾ = x_c
//! 6  x^{n+1} ← collide(xⁿ → x_p)             the fail-safe (4–6 repeated: `contact_rounds`)
//! 7  v^{n+1} from the positions (scheme of line 1)
//! ```
//!
//! [`Coupling::Staggered`] is lines 1–3 then 7 with `x^{n+1} = x_c` (the baseline of
//! Figs. 4.1–4.4); [`Coupling::Simultaneous`] runs all lines, and skips 4–6 when line 3 changed
//! nothing.
//!
//! # Choices
//!
//! - **Contacts from the collision stage.** `collide::resolve` changes velocities and reports
//!   no pairs, except the cloth–cloth pairs its repulsion pushed apart when
//!   [`IsometricSettings::hold_repelled_pairs`] asks for them. A cloth node is taken to be in
//!   contact when the stage moved it (`x_c ≠ x_p`), with the normal
//!   `n = (x_c − x_p)/‖x_c − x_p‖`, the direction of its correction. When friction acted on
//!   the node this direction is tilted from the geometric normal by the friction impulse; the
//!   tangential rows hold the node at `x_c` in the other two directions anyway, so the row set
//!   `{n, t₁, t₂}` still pins the collided position, only the split between the hard and the
//!   soft rows differs (**choice**, documented in the report; a stage that reports its normals
//!   would remove it).
//! - **Tangential rows** (eq. 3.28) with compliance `D = β w_p` (Wang 2012 eq. 3.30),
//!   `β` = [`IsometricSettings::friction_compliance`]; `t₁, t₂` any orthonormal completion of
//!   `n` (with equal `D` the choice does not matter: the pair acts as `‖(I − n nᵀ)(x − a)‖²/(2D)`,
//!   `docs/methods/isometric-contact.md` §3). `β = None`: normal rows
//!   only.
//! - **Target of line 5** (Table 3.1 leaves it open): [`SecondTarget::Prediction`] (default: the same
//!   backward-Euler/BDF2 problem as line 2, coupled with the contact rows) or
//!   [`SecondTarget::Collided`] (the literal reading, target `x_c`).
//! - **Normal rows are soft** (**choice**; the thesis makes them hard): `D = β_n w_p`,
//!   `β_n` = [`IsometricSettings::contact_compliance`]. The collision stage moves black and red
//!   nodes independently, so `x_c` violates the linear conforming (3.3) and boundary (3.4) rows;
//!   once every node of such a row is in contact along one normal, the hard normal rows and
//!   that row are linearly dependent *and* inconsistent, `K` is singular and PCG diverges
//!   (measured: the small contact scene of `tests/isometric_scene.rs` blew up from frame 9).
//!   Soft normal rows take the least-squares compromise; line 6 removes what penetration is
//!   left. They are not part of the stopping test. Under stiff bending soft rows fail the
//!   other way: the bending pushes the nodes into the obstacle, line 6 pushes them out one by
//!   one, and each such dent stores bending energy that comes back as a bounce (measured on
//!   `samples/shell-stiff.toml` over 100 frames: total energy up to 8 × its initial
//!   1.2 · 10⁵ J with `β_n = 10⁻²`, within 1.1–1.5 · 10⁵ J with `β_n = 10⁻⁶`), so the shell
//!   samples set `contact_compliance = 1e-6`.
//! - **Unilateral normal rows** (**choice**; eq. 3.26 is printed as an equality):
//!   [`IsometricSettings::unilateral_contacts`] lets a normal row only push — the projection
//!   releases it, with its tangential rows, when its multiplier would pull the node towards the
//!   obstacle (`GaussNewtonProjection::project`). Equality rows hold every node the collision
//!   stage moved at its collided height, so a stiff shell keeps the flat spot that stopping its
//!   lowest nodes made.
//! - **Repeated lines 4–6** (**choice**, not in the thesis; off by default,
//!   [`IsometricSettings::contact_rounds`]): line 6 is the same node-by-node stage as line 3, and
//!   whatever it moves after line 5 enters `x^{n+1}` unprojected. The thesis expects it to find
//!   "rarely any" collision; at `h = 1/120 s` it does not: the second projection drags nodes that
//!   had no contact rows into the obstacle (the contact patch is held, the sheet wraps round it)
//!   and line 6's CCD stops them where they are, 1.2–1.5 cm from where line 5 put them
//!   (measured on `samples/rotating-ball-isometric.toml`, frames 11–13: 10–13 such nodes per
//!   substep, moved by up to 1.5 cm; 1–13 % red–red strain and up to 70 % of the shortest
//!   red–red distance on the conforming rows (3.3) left in `x^{n+1}` where line 5 had ended at
//!   0.02–0.3 %). With
//!   `contact_rounds = k`, when line 6 moves a node its result becomes the next line 4: the
//!   moved nodes get rows at their new collided positions (a node that already has rows gets
//!   them replaced in place, so the pool holds at most three rows per node), line 5 runs again
//!   from there, and line 6 again, at most `k` times; the last pass is the fail-safe. It removes
//!   the nodes without rows after one or two rounds, but with the default soft normal rows
//!   (`β_n = 10⁻²`) the nodes with active rows still end line 5 millimetres inside the obstacle
//!   (up to 7 mm with `k_b = 10⁻²`)
//!   (the rows absorb the disagreement between the node-by-node collided positions and the
//!   conforming rows), so every pass moves them again: each round then costs a projection and
//!   gains little (17 × 17 variant of the scene: same largest edge strain at frames 11–14, 2–4
//!   times the Gauss–Newton iterations).
//! - **Speculative rows** (**choice**, not in the thesis; off by default,
//!   [`IsometricSettings::contact_margin`]): in line 4, nodes the collision stage did not move
//!   but that lie within `η + margin` of an analytic collider get unilateral rows on the
//!   collider's tangent plane offset by `η` (`Near::plane`), released until line 5 moves the
//!   node onto it. Measured on `samples/stiff-sheet.toml` (30 frames, `--threads 1`): with
//!   the default soft rows (`β_n = 10⁻²`) line 6 moves 12–38 nodes a substep, all but a few
//!   with rows, by up to 5.7 mm, and the frames end at 0.5–1.4 % row strain; `β_n = 10⁻⁴`
//!   leaves 2–13 a substep, moved by up to 0.5 mm with rows and 1.7 mm without (largest
//!   frame-end row strain 0.36 %); adding a 1 cm margin removes the moves of nodes without
//!   rows (0.28 %). `β_n = 10⁻⁵` was worse (0.85 %, two projections at the Newton cap).
//! - **Rows that follow the colliders** (**choice**, off by default,
//!   [`IsometricSettings::follow_obstacles`]): line 2 already carries hard unilateral rows on
//!   the analytic colliders for every node in their band, re-linearised at every iterate,
//!   with Coulomb friction anchors; line 3 becomes the fail-safe, and lines 4–6 run only for
//!   what it moved (`docs/methods/isometric-contact.md`).
//! - Pinned nodes (`w = 0`) get no contact rows (they would be zero rows of `K`).
//! - The collision stage works in `f32`; nodes it did not touch keep their `f64` positions
//!   bit for bit.
#![deny(unsafe_code)]
// Per-node loops index several parallel arrays by the node number.
#![allow(clippy::needless_range_loop)]

use std::collections::HashSet;

use bumpalo::Bump;
use glam::{DVec3, Vec3};

use super::bdf2::{Integrator, TimeIntegrator};
use super::contact::ColliderView;
use super::mesh_obstacles::{MeshHit, MeshObstacles};
use super::projection::{
    ContactGeometry, ContactRow, GaussNewtonProjection, ProjectionReport, ProjectionSettings,
    RowFamily, SelfContactRow,
};
use super::self_contact::{SelfContactFinder, friction_rows};
use crate::collide::resolve::{
    ClothCollision, CollisionSettings, CollisionStats, ObstacleMeshes, RepelledPair,
};
use crate::model::constraint::ConstraintSet;
use crate::model::quadratic_bending::QuadraticBending;

/// How collisions and the constrained dynamics are coupled (Wang 2012 §3.3.1, Figs. 4.1–4.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Coupling {
    /// Project, then collide: Table 3.1 lines 1–3, 7.
    Staggered,
    /// The full Table 3.1: collisions fed back as constraints.
    #[default]
    Simultaneous,
}

/// The target of the second projection (Table 3.1 line 5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecondTarget {
    /// Target `x̃`, start `x_c`: the step's own implicit problem with contact rows (default).
    #[default]
    Prediction,
    /// Target `x_c` (the literal reading of the table).
    Collided,
}

/// Default of [`IsometricSettings::contact_rounds`].
pub const DEFAULT_CONTACT_ROUNDS: u32 = 0;

/// The distance self-contact rows keep between a node and a triangle of its own cloth, as a
/// multiple of the thickness `η` (**choice**): a clearance of `η / 4` beyond `η`, so that the
/// collision stage, whose repulsion acts on pairs closer than `η`, finds nothing to do on
/// what the rows hold (`docs/methods/isometric-contact.md` §6).
pub const SELF_CONTACT_DISTANCE: f64 = 1.25;

/// `D / w` of the self-contact rows (`w` the largest inverse mass of a row's nodes;
/// **choice**): tiny, so that the rows are hard to well below any strain tolerance, but not 0,
/// so that `K` stays positive definite when two rows of a node coincide on a feature shared
/// by two triangles.
pub const SELF_CONTACT_COMPLIANCE: f64 = 1e-8;

/// No contact rows on a node (`IsometricStepper::contact_slot`).
const NO_SLOT: u32 = u32::MAX;

/// Totals over several projections (the repetitions of lines 4–6).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProjectionTotals {
    /// Projections run.
    pub projections: u32,
    /// Gauss–Newton iterations, summed.
    pub iterations: u32,
    /// PCG iterations, summed.
    pub cg_iterations: u32,
    /// Largest PCG iteration count of one linear solve.
    pub cg_max_iterations: u32,
    /// PCG solves that stopped before their tolerance, summed.
    pub cg_unconverged: u32,
    /// Largest relative residual at the end of one PCG solve.
    pub cg_max_residual: f64,
    /// Projections that stopped before the tolerance (Newton cap or deadline).
    pub unconverged: u32,
    /// Projections whose linear solve failed.
    pub linear_failures: u32,
    /// Largest scaled violation left by the last one.
    pub max_violation: f64,
    /// Gauss–Newton iterations whose direct solve fell back to PCG, summed.
    pub direct_fallbacks: u32,
    /// Projections that stopped unconverged and returned their best iterate.
    pub kept_best: u32,
    /// The most base-edge rows one projection ended with held
    /// ([`ProjectionReport::held_base_edges`]).
    pub held_base_edges: u32,
}

impl ProjectionTotals {
    /// Counts one more projection.
    pub fn add(&mut self, r: &ProjectionReport) {
        self.merge(&ProjectionTotals::from(r));
    }

    /// Counts the projections of `o` after these (its violation is the later one when it ran
    /// any).
    pub fn merge(&mut self, o: &ProjectionTotals) {
        self.projections += o.projections;
        self.iterations += o.iterations;
        self.cg_iterations += o.cg_iterations;
        self.cg_max_iterations = self.cg_max_iterations.max(o.cg_max_iterations);
        self.cg_unconverged += o.cg_unconverged;
        self.cg_max_residual = self.cg_max_residual.max(o.cg_max_residual);
        self.unconverged += o.unconverged;
        self.linear_failures += o.linear_failures;
        self.direct_fallbacks += o.direct_fallbacks;
        self.kept_best += o.kept_best;
        self.held_base_edges = self.held_base_edges.max(o.held_base_edges);
        if o.projections > 0 {
            self.max_violation = o.max_violation;
        }
    }
}

impl From<&ProjectionReport> for ProjectionTotals {
    /// The totals of one projection.
    fn from(r: &ProjectionReport) -> Self {
        ProjectionTotals {
            projections: 1,
            iterations: r.iterations,
            cg_iterations: r.cg_iterations,
            cg_max_iterations: r.cg_max_iterations,
            cg_unconverged: r.cg_unconverged,
            cg_max_residual: r.cg_max_residual,
            unconverged: u32::from(!r.converged),
            linear_failures: u32::from(r.linear_solve_failed),
            direct_fallbacks: r.direct_fallbacks,
            kept_best: u32::from(r.kept_best),
            held_base_edges: r.held_base_edges,
            max_violation: r.max_violation,
        }
    }
}

/// Settings of the isometric step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IsometricSettings {
    /// Gauss–Newton and PCG budgets and the strain tolerance.
    pub projection: ProjectionSettings,
    /// Staggered or simultaneous collision handling.
    pub coupling: Coupling,
    /// Target of the second projection.
    pub second_target: SecondTarget,
    /// `β` of the tangential contact rows, `D = β w_p` (Wang 2012 eq. 3.30; the thesis found
    /// `10⁻⁵ … 10⁻²` to work); `None`: no tangential rows.
    pub friction_compliance: Option<f64>,
    /// A node counts as in contact when the collision stage moved it by more than this (m).
    pub contact_threshold: f64,
    /// `β_n` of the normal contact rows, `D = β_n w_p` (see the module doc).
    pub contact_compliance: f64,
    /// Normal contact rows only push (`n · x_p ≥ n · x_c`, an active set in the projection;
    /// see `GaussNewtonProjection::project`); `false`: equalities, as eq. 3.26 is printed.
    pub unilateral_contacts: bool,
    /// How often lines 4–6 may be repeated when line 6 moves a node (see the module doc):
    /// each repetition gives the moved nodes rows at their collided positions and projects
    /// again. 0: Table 3.1 as printed.
    pub contact_rounds: u32,
    /// Speculative contact rows (see the module doc): in line 4, every unpinned node the
    /// collision stage did not move whose collided position lies within `thickness +
    /// contact_margin` of an analytic collider (at its pose at the end of the step) gets a
    /// unilateral normal row on the collider's tangent plane offset by the thickness, released
    /// until the node reaches it. 0: none (Table 3.1 as printed).
    pub contact_margin: f64,
    /// Contact rows that follow the analytic colliders (needs `contact_margin > 0`; off by
    /// default; the derivation is in `docs/methods/isometric-contact.md`): from the first
    /// projection of the step on (line 2), every unpinned node whose prediction or start
    /// position lies within `thickness + s + contact_margin` of a collider (`s` the clearance
    /// of [`Near::clearance`]) gets a hard unilateral normal row (Wang 2012 eq. 3.26 as an
    /// inequality, hard as in §3.3.3) and soft tangential rows towards a Coulomb friction
    /// anchor (eq. 3.27, 3.28, 3.30; [`Near::anchor`]); the projection re-linearises them at
    /// every Gauss–Newton iterate on the collider's closest point and releases a pulling row
    /// at every iteration (`GaussNewtonProjection::project_in_contact`). Lines 4–6 then run
    /// only when the collision stage moved a node: the moved nodes get rows (nodes away from
    /// analytic colliders the stage's own) and the projection runs again, at most
    /// `contact_rounds` times; what the last pass moves is reported
    /// ([`IsometricReport::fail_safe_moved`]). With the collision stage's self-collision on,
    /// every projection also carries self-contact rows (a node held `SELF_CONTACT_DISTANCE`
    /// thicknesses from a triangle of its own cloth within `contact_margin` of it;
    /// `SelfContactFinder`, `docs/methods/isometric-contact.md` §6). Simultaneous coupling
    /// only: with [`Coupling::Staggered`] the setting is ignored (line 2 without contacts).
    pub follow_obstacles: bool,
    /// Rows on the pairs the collision stage repels (with [`IsometricSettings::follow_obstacles`]
    /// and the stage's self-collision; off by default): every cloth–cloth pair a pass of the
    /// step pushed apart (`ClothCollision::repelled`) becomes, for the rest of the step, a hard
    /// unilateral row of the projections on the stage's own stencil, `n · Σ c_k x_k ≥` its
    /// separation at `xⁿ` plus a tenth of its overlap (the stage's condition for leaving the
    /// pair alone) plus the tolerance times the contact length; the pair's nodes get no
    /// one-node rows from the pass and no lift of their collider rows
    /// (`docs/methods/isometric-model.md` §A24).
    pub hold_repelled_pairs: bool,
    /// Friction on the self-contact rows (with the self-contact rows of
    /// [`IsometricSettings::follow_obstacles`] and a [`IsometricSettings::friction_compliance`];
    /// off by default): every self-contact row with a side (a node over a triangle of another
    /// layer) gets two soft tangential rows on the relative
    /// tangential displacement of its node against the triangle's material point, anchored by
    /// Coulomb's law within the step with the cloth's friction coefficient and released with
    /// their normal row (`self_contact::friction_rows`, `docs/methods/isometric-contact.md` §6).
    pub self_friction: bool,
    /// With [`IsometricSettings::follow_obstacles`], rows on the triangle-mesh obstacles too
    /// (on by default): every node in the band of a mesh obstacle gets the one-node rows of
    /// the colliders on the obstacle's closest point (face, edge or vertex), re-found at every
    /// Gauss–Newton iterate (`MeshObstacles`, `docs/methods/isometric-contact.md` §8). Off: the
    /// mesh obstacles are met by the collision stage alone.
    pub mesh_rows: bool,
}

impl IsometricSettings {
    /// Whether the projections carry rows that follow the colliders: `follow_obstacles` with
    /// a contact margin, in the simultaneous coupling only (those rows put the contacts into
    /// line 2, which is what the simultaneous coupling is; the staggered one projects, then
    /// collides).
    #[must_use]
    pub fn rows_follow_obstacles(&self) -> bool {
        self.follow_obstacles
            && self.contact_margin > 0.0
            && self.coupling == Coupling::Simultaneous
    }
}

impl Default for IsometricSettings {
    fn default() -> Self {
        IsometricSettings {
            projection: ProjectionSettings::default(),
            coupling: Coupling::Simultaneous,
            second_target: SecondTarget::Prediction,
            friction_compliance: Some(1e-3),
            contact_threshold: 1e-9,
            contact_compliance: 1e-2,
            unilateral_contacts: true,
            contact_rounds: DEFAULT_CONTACT_ROUNDS,
            contact_margin: 0.0,
            follow_obstacles: false,
            hold_repelled_pairs: false,
            self_friction: false,
            mesh_rows: true,
        }
    }
}

/// What one step did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IsometricReport {
    /// The scheme line 1 used (BDF2 starts with backward Euler).
    pub integrator: Integrator,
    /// Line 2.
    pub first: ProjectionReport,
    /// Line 5, when it ran.
    pub second: Option<ProjectionReport>,
    /// Nodes given contact rows in line 4 and its repetitions.
    pub contact_nodes: u32,
    /// The projections of the repetitions of lines 4–6 after line 5.
    pub feedback: ProjectionTotals,
    /// Line 3.
    pub collide_first: CollisionStats,
    /// Line 6 (every pass, folded), when it ran.
    pub collide_second: Option<CollisionStats>,
    /// Nodes the last collision pass moved (line 6, or line 3 when lines 4–6 do not run): its
    /// changes enter `x^{n+1}` unprojected, so when it is not 0 the step may end over the
    /// tolerance ([`IsometricSettings::contact_rounds`] ran out).
    pub fail_safe_moved: u32,
    /// Of those, the nodes that had no contact rows in the projection before it.
    pub fail_safe_moved_without_rows: u32,
    /// Nodes given speculative rows in line 4 ([`IsometricSettings::contact_margin`]).
    pub speculative_nodes: u32,
    /// Self-contact rows in the step's projections (the most in one projection; see
    /// [`IsometricSettings::follow_obstacles`]).
    pub self_contact_rows: u32,
    /// Of those, the most that ended one projection active.
    pub self_contact_active: u32,
}

/// The preallocated step of one isometric cloth: projector, time history, collision stage and
/// scratch. Nothing allocates in a step unless the contact pool overflows (counted by the
/// projector).
#[derive(Debug)]
pub struct IsometricStepper {
    projection: GaussNewtonProjection,
    time: TimeIntegrator,
    collision: ClothCollision,
    x_tilde: Vec<DVec3>,
    x_p: Vec<DVec3>,
    x_c: Vec<DVec3>,
    /// Per node: the first of its contact rows in the projector's pool, or `NO_SLOT`.
    contact_slot: Vec<u32>,
    /// Per node with rows that follow a collider: the friction anchor of its tangential rows
    /// ([`IsometricSettings::follow_obstacles`]).
    anchor: Vec<Option<DVec3>>,
    /// Per node with rows that follow a collider: how far above the collider's row plane the
    /// collision stage left it (m); the row holds it at least that high for the rest of the
    /// step.
    lift: Vec<f64>,
    /// Longest rest edge of the simulated mesh (m): sets the clearance of the rows that follow
    /// curved colliders ([`Near::clearance`]).
    longest_edge: f64,
    /// The self-contact rows' search ([`IsometricSettings::follow_obstacles`] with the
    /// collision stage's self-collision on).
    self_contact: SelfContactFinder,
    /// The cloth–cloth pairs the collision stage repelled in this step, held as rows.
    held_pairs: Vec<RepelledPair>,
    /// The vertices of each of `held_pairs`, so that a pair found again is kept once without a
    /// scan of the list.
    held_verts: HashSet<[u32; 4]>,
    /// Per node: it belongs to a held pair.
    in_pair: Vec<bool>,
    /// The self-contact rows of the next projection: the search's, then the held pairs'.
    self_buf: Vec<SelfContactRow>,
    /// Whether this step holds the pairs the stage repels
    /// ([`IsometricSettings::hold_repelled_pairs`]).
    hold_pairs: bool,

    /// The collision stage's candidate lists (rewound at every pass).
    arena: Bump,
    x32: Vec<Vec3>,
    v32: Vec<Vec3>,
    v32_before: Vec<Vec3>,
    mass32: Vec<f32>,
    inv_mass32: Vec<f32>,

    /// The step in progress: its report so far, the collision passes taken and the
    /// projections after line 2 (line 5 and its repetitions).
    report: IsometricReport,
    passes: u32,
    reprojections: u32,
}

impl IsometricStepper {
    /// For a cloth of `x.len()` nodes (the simulation mesh: `triangles`, unique `edges` and
    /// their `rest_lengths` for the collision stage), the row `families` that will be passed to
    /// every step (same order), the scheme, and a contact pool of `contact_capacity` rows
    /// (3 per contact node with friction rows).
    #[must_use]
    pub fn new(
        x: &[DVec3],
        triangles: &[[u32; 3]],
        edges: &[[u32; 2]],
        rest_lengths: &[f32],
        families: &[&dyn ConstraintSet],
        integrator: Integrator,
        contact_capacity: usize,
    ) -> Self {
        let n = x.len();
        let x32: Vec<Vec3> = x.iter().map(|p| p.as_vec3()).collect();
        IsometricStepper {
            projection: GaussNewtonProjection::new(n, families, contact_capacity),
            time: TimeIntegrator::new(integrator, n),
            collision: ClothCollision::new(triangles, edges, rest_lengths, &x32),
            x_tilde: vec![DVec3::ZERO; n],
            x_p: vec![DVec3::ZERO; n],
            x_c: vec![DVec3::ZERO; n],
            contact_slot: vec![NO_SLOT; n],
            anchor: vec![None; n],
            lift: vec![0.0; n],
            longest_edge: rest_lengths.iter().copied().fold(0.0f32, f32::max).into(),
            self_contact: SelfContactFinder::new(triangles),
            held_pairs: Vec::new(),
            held_verts: HashSet::new(),
            in_pair: vec![false; n],
            self_buf: Vec::new(),
            hold_pairs: false,
            arena: Bump::new(),
            x32,
            v32: vec![Vec3::ZERO; n],
            v32_before: vec![Vec3::ZERO; n],
            mass32: vec![0.0; n],
            inv_mass32: vec![0.0; n],
            report: IsometricReport::default(),
            passes: 0,
            reprojections: 0,
        }
    }

    /// The collision stage of the step's passes.
    #[must_use]
    pub fn collision(&self) -> &ClothCollision {
        &self.collision
    }

    /// The collision stage (to set its obstacle meshes).
    pub fn collision_mut(&mut self) -> &mut ClothCollision {
        &mut self.collision
    }

    /// The projector (contact pool statistics, multipliers).
    #[must_use]
    pub fn projection(&self) -> &GaussNewtonProjection {
        &self.projection
    }

    /// Gives the projection its base-edge rows
    /// ([`GaussNewtonProjection::set_base_edge_rows`]); once, at creation.
    pub fn set_base_edge_rows(&mut self, rows: crate::integrate::base_edge_rows::BaseEdgeRows) {
        self.projection.set_base_edge_rows(rows);
    }

    /// Forgets the BDF2 history and the multipliers (teleport, reset).
    pub fn reset(&mut self) {
        self.time.reset();
        self.projection.reset_warm_start();
    }

    /// Line 1: writes `x̃` from `(xⁿ, vⁿ)` and the explicit acceleration, puts every pinned
    /// node at its pose `pins = (node, pose at t + h)`, and returns the potential weight `h_Φ`
    /// (`h` or `2h/3`) the caller must give its residual rows (bending) before
    /// [`IsometricStepper::finish_step`].
    ///
    /// # Panics
    /// If a slice is not one entry per node.
    pub fn predict(
        &mut self,
        h: f64,
        x: &[DVec3],
        v: &[DVec3],
        accel: &[DVec3],
        pins: &[(u32, DVec3)],
    ) -> f64 {
        let h_phi = self.time.predict(h, x, v, accel, &mut self.x_tilde);
        for &(p, pose) in pins {
            self.x_tilde[p as usize] = pose;
        }
        h_phi
    }

    /// The prediction `x̃` of the last [`IsometricStepper::predict`].
    #[must_use]
    pub fn prediction(&self) -> &[DVec3] {
        &self.x_tilde
    }

    /// Lines 2–7 of Table 3.1 after [`IsometricStepper::predict`]: `x, v` hold `(xⁿ, vⁿ)` on
    /// entry and `(x^{n+1}, v^{n+1})` on return. `inv_mass` is 0 on pinned nodes, `mass` is
    /// their mass (for the collision stage; any value on pins). `should_stop` is the deadline
    /// (the collision fail-safe runs regardless).
    ///
    /// The step in phases ([`IsometricStepper::begin_step`], then a collision pass and
    /// [`IsometricStepper::after_pass`] while it asks for another pass,
    /// [`IsometricStepper::end_step`]) with this stepper's own collision stage; a stage shared
    /// with other cloths runs the same phases (`pipeline::substep_isometric_group`).
    ///
    /// # Panics
    /// If a slice is not one entry per node or the families differ from those given to
    /// [`IsometricStepper::new`].
    #[allow(clippy::too_many_arguments)]
    pub fn finish_step(
        &mut self,
        h: f64,
        families: &[RowFamily<'_>],
        settings: &IsometricSettings,
        collision: &CollisionSettings,
        obstacles: &ObstacleMeshes<'_>,
        meshes: &MeshObstacles,
        colliders: &[ColliderView],
        mass: &[f64],
        inv_mass: &[f64],
        x: &mut [DVec3],
        v: &mut [DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> IsometricReport {
        self.begin_step(
            h,
            families,
            settings,
            collision,
            meshes,
            colliders,
            mass,
            inv_mass,
            x,
            should_stop,
        );
        loop {
            let (stats, moved) = self.collide(h, collision, obstacles, x, should_stop);
            if !self.after_pass(
                h,
                families,
                settings,
                collision,
                meshes,
                colliders,
                inv_mass,
                x,
                &stats,
                moved,
                should_stop,
            ) {
                break;
            }
        }
        self.end_step(h, x, v)
    }

    /// Line 2 of Table 3.1 after [`IsometricStepper::predict`]: the projection of `x̃` into
    /// `x_p`, the input of the first collision pass (line 3). `x` is `xⁿ`; the other arguments
    /// are those of [`IsometricStepper::finish_step`].
    #[allow(clippy::too_many_arguments)]
    pub fn begin_step(
        &mut self,
        h: f64,
        families: &[RowFamily<'_>],
        settings: &IsometricSettings,
        collision: &CollisionSettings,
        meshes: &MeshObstacles,
        colliders: &[ColliderView],
        mass: &[f64],
        inv_mass: &[f64],
        x: &[DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) {
        let n = x.len();
        assert!(mass.len() == n && inv_mass.len() == n);
        self.report = IsometricReport {
            integrator: self.time.current(),
            ..IsometricReport::default()
        };
        self.passes = 0;
        self.reprojections = 0;
        self.held_pairs.clear();
        self.held_verts.clear();
        self.in_pair.fill(false);
        self.hold_pairs = settings.hold_repelled_pairs
            && settings.rows_follow_obstacles()
            && collision.self_collision;
        self.collision.record_repelled(self.hold_pairs);
        for i in 0..n {
            self.mass32[i] = mass[i] as f32;
            self.inv_mass32[i] = inv_mass[i] as f32;
        }
        // Rows that follow the colliders put the contacts into line 2: that is the
        // simultaneous coupling, so the staggered one (project, then collide) goes without.
        let follow = settings.rows_follow_obstacles();
        let near = self.near(settings, collision, meshes, colliders, h);

        // Line 2: project x̃ from x⁽⁰⁾ = x̃ (Wang 2012 Table 3.1); without contacts as printed,
        // or with the rows that follow the colliders ([`IsometricSettings::follow_obstacles`]).
        self.projection.clear_contacts();
        self.contact_slot.fill(NO_SLOT);
        self.anchor.fill(None);
        self.lift.fill(0.0);
        self.x_p.copy_from_slice(&self.x_tilde);
        let self_rows = follow && collision.self_collision;
        let mut report = self.report;
        if follow {
            self.x_c.copy_from_slice(&self.x_tilde);
            report.speculative_nodes = self.add_band_rows(settings, &near, inv_mass, x);
            self.refresh_self_rows(self_rows, settings, &near, inv_mass, x, &mut report);
            let geometry = NearGeometry {
                near: &near,
                settings,
                anchors: &self.anchor,
                lift: &self.lift,
            };
            report.first = self.projection.project_in_contact(
                families,
                &self.x_tilde,
                inv_mass,
                &settings.projection,
                &geometry,
                &mut self.x_p,
                should_stop,
            );
            self.count_active_self_rows(&mut report);
        } else {
            self.projection.set_self_rows(&[]);
            report.first = self.projection.project(
                families,
                &self.x_tilde,
                inv_mass,
                &settings.projection,
                &mut self.x_p,
                should_stop,
            );
        }
        self.report = report;
    }

    /// The input of the next collision pass: `xⁿ` (from `x`) and `v½ = (x_p − xⁿ)/h` in `f32`
    /// into `x32` and `v32`, one entry per node, for a stage shared with other cloths; the
    /// nodes' masses for it are [`IsometricStepper::pass_masses`]. Pass the stage's corrected
    /// `v32` to [`IsometricStepper::take_pass`].
    ///
    /// # Panics
    /// If a slice is not one entry per node.
    pub fn pass_input(&mut self, h: f64, x: &[DVec3], x32: &mut [Vec3], v32: &mut [Vec3]) {
        fill_pass(h, x, &self.x_p, x32, v32);
        self.v32_before.copy_from_slice(v32);
    }

    /// The nodes' masses and inverse masses in `f32` for a collision pass (set by
    /// [`IsometricStepper::begin_step`]).
    #[must_use]
    pub fn pass_masses(&self) -> (&[f32], &[f32]) {
        (&self.mass32, &self.inv_mass32)
    }

    /// `x_c` from the velocities `v32` a shared collision pass left (its input was
    /// [`IsometricStepper::pass_input`]): nodes the stage did not touch keep `x_p` exactly.
    /// Returns how many nodes it moved.
    pub fn take_pass(&mut self, h: f64, x: &[DVec3], v32: &[Vec3]) -> u32 {
        take_collided(h, x, &self.x_p, v32, &self.v32_before, &mut self.x_c)
    }

    /// What follows a collision pass that moved `moved` nodes and did `stats`: line 3 or line 6
    /// recorded, then lines 4–5 (the moved nodes get contact rows and the projection runs
    /// again) when the coupling is simultaneous, the pass moved a node and the step may
    /// reproject (line 5 once; then at most `contact_rounds` more, none past the deadline).
    /// Returns whether it projected again: the step then needs another collision pass, whose
    /// result becomes `x^{n+1}` unless it asks for yet another one.
    ///
    /// A stage shared with other cloths may run another pass for them after this one returned
    /// false: its result is taken like this one's (a node it moves enters `x^{n+1}`
    /// unprojected, or, when the step may still reproject, gets rows).
    #[allow(clippy::too_many_arguments)]
    pub fn after_pass(
        &mut self,
        h: f64,
        families: &[RowFamily<'_>],
        settings: &IsometricSettings,
        collision: &CollisionSettings,
        meshes: &MeshObstacles,
        colliders: &[ColliderView],
        inv_mass: &[f64],
        x: &[DVec3],
        stats: &CollisionStats,
        moved: u32,
        should_stop: &mut dyn FnMut() -> bool,
    ) -> bool {
        let n = x.len();
        let first = self.passes == 0;
        self.passes += 1;
        if first {
            self.report.collide_first = *stats;
        } else {
            self.report
                .collide_second
                .get_or_insert_with(CollisionStats::default)
                .accumulate(stats);
            self.report.fail_safe_moved_without_rows = (0..n)
                .filter(|&i| self.contact_slot[i] == NO_SLOT && self.x_c[i] != self.x_p[i])
                .count() as u32;
        }
        self.report.fail_safe_moved = moved;
        if settings.coupling != Coupling::Simultaneous || moved == 0 {
            return false;
        }
        let follow = settings.rows_follow_obstacles();
        let self_rows = follow && collision.self_collision;
        let near = self.near(settings, collision, meshes, colliders, h);
        let mut report = self.report;
        if self.reprojections == 0 {
            // After line 3 always; after a later pass of a shared stage (this cloth's first
            // pass moved nothing) unless the deadline has passed.
            if !first && should_stop() {
                return false;
            }
            // Line 4: contact rows at x_c (eq. 3.26, eq. 3.28). With rows that follow the
            // colliders, line 2's rows stay (they are re-linearised at every iterate) and the
            // nodes the stage moved, or brought into the band, get rows too.
            if !follow {
                self.projection.clear_contacts();
                self.contact_slot.fill(NO_SLOT);
            }
            report.contact_nodes += self.add_contact_rows(settings, &near, inv_mass);
            report.speculative_nodes += if follow {
                self.add_band_rows(settings, &near, inv_mass, x)
            } else {
                self.add_speculative_rows(settings, &near, inv_mass)
            };
            // Line 5: project again, from x⁽⁰⁾ = x_c.
            self.x_p.copy_from_slice(&self.x_c);
            self.refresh_self_rows(self_rows, settings, &near, inv_mass, x, &mut report);
            report.second =
                Some(self.project_from_collided(families, settings, &near, inv_mass, should_stop));
            self.count_active_self_rows(&mut report);
            // Line 6 is the next pass: the same stage as line 3 (Table 3.1), the fail-safe.
            // (Tried: a pass without repulsion and friction, since line 3's already acted; on
            // the net-on-sphere test it raised the largest strain from 8.7 % to 26 %.)
        } else {
            // Lines 4–6 repeated while line 6 moves a node, at most `contact_rounds` times
            // (module doc): the moved nodes get (or update) their rows and the projection runs
            // again, so that the pass whose result is kept moves as little as possible. Past
            // the deadline no further round starts: the pass just run is the fail-safe and
            // what it moved is reported.
            if self.reprojections > settings.contact_rounds || should_stop() {
                return false;
            }
            report.contact_nodes += self.add_contact_rows(settings, &near, inv_mass);
            if follow {
                // Nodes line 6 moved into the band get their rows too.
                report.speculative_nodes += self.add_band_rows(settings, &near, inv_mass, x);
            }
            self.x_p.copy_from_slice(&self.x_c);
            self.refresh_self_rows(self_rows, settings, &near, inv_mass, x, &mut report);
            let rep = self.project_from_collided(families, settings, &near, inv_mass, should_stop);
            self.count_active_self_rows(&mut report);
            report.feedback.add(&rep);
        }
        self.report = report;
        self.reprojections += 1;
        true
    }

    /// Line 7: velocity by the scheme of line 1 from the last pass's `x_c`; `x ← x^{n+1}`.
    /// Returns what the step did.
    pub fn end_step(&mut self, h: f64, x: &mut [DVec3], v: &mut [DVec3]) -> IsometricReport {
        self.time.finish(h, &self.x_c, x, v);
        self.report
    }

    /// The analytic colliders (and, for rows that follow them, the mesh obstacles) as the
    /// rows see them this step.
    fn near<'a>(
        &self,
        settings: &IsometricSettings,
        collision: &CollisionSettings,
        meshes: &'a MeshObstacles,
        colliders: &'a [ColliderView],
        h: f64,
    ) -> Near<'a> {
        let follow = settings.rows_follow_obstacles();
        Near {
            colliders,
            // Rows on mesh obstacles only follow them ([`IsometricSettings::mesh_rows`]).
            meshes: (follow && settings.mesh_rows && !meshes.is_empty()).then_some(meshes),
            h,
            thickness: f64::from(collision.thickness),
            cloth_friction: f64::from(collision.friction),
            // The clearance is for rows that follow the colliders only.
            sag_radius: if follow { self.longest_edge } else { 0.0 },
        }
    }

    /// The self-contact rows of the next projection, found at its start iterate `x_p` and
    /// at the start of the step `x_n` (`on`: [`IsometricSettings::follow_obstacles`] with the
    /// stage's self-collision; otherwise none). The band is the contact margin.
    fn refresh_self_rows(
        &mut self,
        on: bool,
        settings: &IsometricSettings,
        near: &Near<'_>,
        inv_mass: &[f64],
        x_n: &[DVec3],
        report: &mut IsometricReport,
    ) {
        if !on {
            self.projection.set_self_rows(&[]);
            return;
        }
        let rows = self.self_contact.find(
            &self.x_p,
            x_n,
            inv_mass,
            SELF_CONTACT_DISTANCE * near.thickness,
            settings.contact_margin,
            SELF_CONTACT_COMPLIANCE,
        );
        let friction = settings
            .friction_compliance
            .filter(|_| settings.self_friction);
        report.self_contact_rows = report.self_contact_rows.max(rows.len() as u32);
        if !self.hold_pairs && friction.is_none() {
            self.projection.set_self_rows(rows);
            return;
        }
        self.self_buf.clear();
        match friction {
            None => self.self_buf.extend_from_slice(rows),
            Some(beta) => {
                for r in rows {
                    self.self_buf.push(*r);
                    // Friction only where one layer lies over another: a row without a side
                    // holds a node against a far part of its own layer (isometric-contact.md
                    // §6), where nothing slides, and friction there locked the cape's folds.
                    if r.side == 0.0 {
                        continue;
                    }
                    self.self_buf.extend(friction_rows(
                        r,
                        x_n,
                        &self.x_tilde,
                        inv_mass,
                        near.cloth_friction,
                        beta,
                    ));
                }
            }
        }
        let margin = settings.projection.tolerance * settings.projection.contact_length;
        for p in &self.held_pairs {
            let w_max = p
                .verts
                .iter()
                .map(|&v| inv_mass[v as usize])
                .fold(0.0, f64::max);
            let target = p.left_alone_separation() + margin;
            self.self_buf.push(SelfContactRow::held(
                p.verts,
                p.coefficients,
                p.normal,
                target,
                SELF_CONTACT_COMPLIANCE * w_max,
            ));
        }
        self.projection.set_self_rows(&self.self_buf);
        // Normal rows (with the held pairs'), not their tangential rows.
        let normal_rows = self.self_buf.iter().filter(|r| r.tangent == 0).count();
        report.self_contact_rows = report.self_contact_rows.max(normal_rows as u32);
    }

    /// Folds the self-contact rows that ended the last projection active into the report.
    fn count_active_self_rows(&self, report: &mut IsometricReport) {
        let active = self
            .projection
            .self_rows()
            .iter()
            .zip(self.projection.self_rows_active())
            .filter(|(r, a)| **a && r.tangent == 0)
            .count() as u32;
        report.self_contact_active = report.self_contact_active.max(active);
    }

    /// Line 5: the projection with the contact rows, from `x⁽⁰⁾ = x_c` towards the
    /// [`SecondTarget`] of `settings`, into `x_p`.
    fn project_from_collided(
        &mut self,
        families: &[RowFamily<'_>],
        settings: &IsometricSettings,
        near: &Near<'_>,
        inv_mass: &[f64],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> ProjectionReport {
        self.x_p.copy_from_slice(&self.x_c);
        let target = match settings.second_target {
            SecondTarget::Prediction => &self.x_tilde,
            SecondTarget::Collided => &self.x_c,
        };
        if settings.rows_follow_obstacles() {
            let geometry = NearGeometry {
                near,
                settings,
                anchors: &self.anchor,
                lift: &self.lift,
            };
            return self.projection.project_in_contact(
                families,
                target,
                inv_mass,
                &settings.projection,
                &geometry,
                &mut self.x_p,
                should_stop,
            );
        }
        self.projection.project(
            families,
            target,
            inv_mass,
            &settings.projection,
            &mut self.x_p,
            should_stop,
        )
    }

    /// Line 4 (eq. 3.26, eq. 3.28): contact rows at `x_c` for every unpinned node the collision
    /// stage moved (`‖x_c − x_p‖ >` the contact threshold). A node without rows gets them
    /// appended to the pool; a node that has rows gets them replaced in place (its collided
    /// position of this pass supersedes the earlier one). Returns the nodes that had no rows.
    fn add_contact_rows(
        &mut self,
        settings: &IsometricSettings,
        near: &Near<'_>,
        inv_mass: &[f64],
    ) -> u32 {
        let mut added = 0;
        for i in 0..self.x_c.len() {
            let d = self.x_c[i] - self.x_p[i];
            let len = d.length();
            if inv_mass[i] <= 0.0 || len <= settings.contact_threshold {
                continue;
            }
            // A node of a held pair is held by the pair's row, not where the stage put it.
            if self.in_pair[i] {
                continue;
            }
            if settings.follow_obstacles
                && let Some((n, target)) = near.plane(settings, self.x_c[i])
            {
                // Rows on the collider itself ([`IsometricSettings::follow_obstacles`]). A node
                // that has them is held where the stage put it: its tangential rows at the
                // tangential coordinates of x_c, its normal row no lower than x_c.
                if self.contact_slot[i] != NO_SLOT && self.anchor[i].is_some() {
                    self.anchor[i] = Some(self.x_c[i]);
                    self.lift[i] = self.lift[i].max(n.dot(self.x_c[i]) - target);
                }
                continue;
            }
            let normal = d / len;
            let target = normal.dot(self.x_c[i]);
            let xc = self.x_c[i];
            self.anchor[i] = None;
            added += u32::from(self.push_rows(settings, inv_mass, i, normal, target, xc, false));
        }
        added
    }

    /// The rows of node `i`: the normal row `n · x_p = target` (or `≥`, unilateral) and, with
    /// friction, the tangential rows holding the tangential coordinates of `hold` (eq. 3.26,
    /// eq. 3.28); `speculative` marks
    /// the normal row [`ContactRow::speculative`]. A node without rows gets them appended to
    /// the pool (returns true); a node that has rows gets them replaced in place.
    #[allow(clippy::too_many_arguments)]
    fn push_rows(
        &mut self,
        settings: &IsometricSettings,
        inv_mass: &[f64],
        i: usize,
        normal: DVec3,
        target: f64,
        hold: DVec3,
        speculative: bool,
    ) -> bool {
        let (t1, t2) = normal.any_orthonormal_pair();
        // Rows on a collider's surface are hard when they follow it (§3.3.3).
        let hard = speculative && settings.follow_obstacles;
        let normal_row = ContactRow {
            vertex: i as u32,
            direction: normal,
            target,
            compliance: if hard {
                0.0
            } else {
                settings.contact_compliance * inv_mass[i]
            },
            // A speculative row is always unilateral: as an equality it would pull its node
            // onto the plane.
            unilateral: settings.unilateral_contacts || speculative,
            speculative,
        };
        let tangent_rows = settings.friction_compliance.map(|beta| {
            [t1, t2].map(|t| ContactRow {
                vertex: i as u32,
                direction: t,
                target: t.dot(hold),
                compliance: beta * inv_mass[i],
                unilateral: false,
                speculative: false,
            })
        });
        let slot = self.contact_slot[i];
        if slot == NO_SLOT {
            self.contact_slot[i] = self.projection.contacts().len() as u32;
            self.projection.push_contact(normal_row);
            for row in tangent_rows.into_iter().flatten() {
                self.projection.push_contact(row);
            }
            true
        } else {
            let slot = slot as usize;
            self.projection.replace_contact(slot, normal_row);
            for (k, row) in tangent_rows.into_iter().flatten().enumerate() {
                self.projection.replace_contact(slot + 1 + k, row);
            }
            false
        }
    }

    /// Line 4, speculative part ([`IsometricSettings::contact_margin`]; **choice**, not in the
    /// thesis): every unpinned node without rows whose collided position lies within reach of
    /// an analytic collider ([`Near::plane`]) gets the rows of [`IsometricStepper::push_rows`]
    /// on the collider's tangent plane. Unilateral rows start released when the node is in
    /// front of the plane (`GaussNewtonProjection::project`), so they act only if line 5 moves
    /// the node onto the collider; without them line 5 drags nodes that line 3 did not touch
    /// into the obstacle and line 6 moves them back unprojected (module doc). Returns the nodes
    /// given rows.
    fn add_speculative_rows(
        &mut self,
        settings: &IsometricSettings,
        near: &Near<'_>,
        inv_mass: &[f64],
    ) -> u32 {
        if settings.contact_margin <= 0.0 || near.is_empty() {
            return 0;
        }
        let mut added = 0;
        for i in 0..self.x_c.len() {
            if inv_mass[i] <= 0.0 || self.contact_slot[i] != NO_SLOT {
                continue;
            }
            if let Some((normal, target)) = near.plane(settings, self.x_c[i]) {
                let xc = self.x_c[i];
                self.push_rows(settings, inv_mass, i, normal, target, xc, true);
                added += 1;
            }
        }
        added
    }

    /// The rows that follow the colliders ([`IsometricSettings::follow_obstacles`]; Wang 2012
    /// eq. 3.26 as an inequality, eq. 3.28): every unpinned node without rows whose position
    /// in `x_c` (the prediction before line 2, the collided positions after it) or at the
    /// start of the step `x_n` lies in the band of a collider ([`Near::closest`]) gets a hard
    /// unilateral normal row on the collider's closest point, released while the node is in
    /// front of it, and soft tangential rows that hold it at its friction anchor
    /// ([`Near::anchor`], computed from the prediction). The projection re-linearises both at
    /// every iterate. Returns the nodes given rows.
    fn add_band_rows(
        &mut self,
        settings: &IsometricSettings,
        near: &Near<'_>,
        inv_mass: &[f64],
        x_n: &[DVec3],
    ) -> u32 {
        if near.is_empty() {
            return 0;
        }
        let mut added = 0;
        for i in 0..self.x_c.len() {
            if inv_mass[i] <= 0.0 || self.contact_slot[i] != NO_SLOT {
                continue;
            }
            let Some(hit) = near
                .closest(settings, self.x_c[i])
                .or_else(|| near.closest(settings, x_n[i]))
            else {
                continue;
            };
            let (normal, target) = near.plane_of(&hit, self.x_c[i]);
            let anchor = near.anchor(&hit, x_n[i], self.x_tilde[i]);
            self.anchor[i] = Some(anchor);
            self.push_rows(settings, inv_mass, i, normal, target, anchor, true);
            added += 1;
        }
        added
    }

    /// `x_c ← collide(xⁿ → x_p)` through `collide::resolve` on `v½ = (x_p − xⁿ)/h`; nodes the
    /// stage did not touch keep `x_p` exactly. Returns the stage's statistics and how many
    /// nodes it moved.
    fn collide(
        &mut self,
        h: f64,
        settings: &CollisionSettings,
        obstacles: &ObstacleMeshes<'_>,
        x: &[DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> (CollisionStats, u32) {
        fill_pass(h, x, &self.x_p, &mut self.x32, &mut self.v32);
        self.v32_before.copy_from_slice(&self.v32);
        // The stage's candidate lists live in the stepper's own arena, rewound at every pass;
        // the deadline cuts its optional rounds short (the last resort still runs).
        self.arena.reset();
        let capacity = self.arena.allocated_bytes();
        let mut stats = self.collision.resolve_in(
            &self.arena,
            settings,
            h as f32,
            &self.x32,
            &mut self.v32,
            &self.mass32,
            &self.inv_mass32,
            obstacles,
            should_stop,
        );
        stats.pool_grew |= self.arena.allocated_bytes() != capacity;
        let moved = take_collided(h, x, &self.x_p, &self.v32, &self.v32_before, &mut self.x_c);
        // The pairs are found at xⁿ, so a later pass of the step repels the same pairs again
        // when the projection did not hold them: each is kept once.
        for p in self.collision.repelled() {
            for &v in &p.verts {
                self.in_pair[v as usize] = true;
            }
            if self.held_verts.insert(p.verts) {
                self.held_pairs.push(*p);
            }
        }
        (stats, moved)
    }
}

/// A collision pass's input: `x32 = xⁿ` and `v32 = v½ = (x_p − xⁿ)/h` in `f32`.
fn fill_pass(h: f64, x: &[DVec3], x_p: &[DVec3], x32: &mut [Vec3], v32: &mut [Vec3]) {
    let n = x.len();
    assert!(x_p.len() == n && x32.len() == n && v32.len() == n);
    for i in 0..n {
        x32[i] = x[i].as_vec3();
        v32[i] = ((x_p[i] - x[i]) / h).as_vec3();
    }
}

/// `x_c` from a collision pass: `xⁿ + h v` where the pass changed the velocity (`v` against
/// `before`), `x_p` bit for bit elsewhere. Returns how many nodes it moved.
fn take_collided(
    h: f64,
    x: &[DVec3],
    x_p: &[DVec3],
    v: &[Vec3],
    before: &[Vec3],
    x_c: &mut [DVec3],
) -> u32 {
    let n = x.len();
    assert!(x_p.len() == n && v.len() == n && before.len() == n && x_c.len() == n);
    let mut moved = 0;
    for i in 0..n {
        if v[i] == before[i] {
            x_c[i] = x_p[i];
        } else {
            x_c[i] = x[i] + h * v[i].as_dvec3();
            moved += 1;
        }
    }
    moved
}

/// The analytic colliders as the projection's [`ContactGeometry`]
/// ([`IsometricSettings::follow_obstacles`]).
struct NearGeometry<'a> {
    near: &'a Near<'a>,
    settings: &'a IsometricSettings,
    /// Per node: the friction anchor of its rows, when they follow a collider.
    anchors: &'a [Option<DVec3>],
    /// Per node: the height above the row plane the collision stage left it at.
    lift: &'a [f64],
}

impl ContactGeometry for NearGeometry<'_> {
    fn plane(&self, vertex: u32, x: DVec3) -> Option<(DVec3, f64)> {
        let (n, target) = self.near.plane(self.settings, x)?;
        Some((n, target + self.lift[vertex as usize]))
    }

    fn anchor(&self, vertex: u32) -> Option<DVec3> {
        self.anchors[vertex as usize]
    }
}

/// What a node's rows hold it against.
enum Feature {
    /// An analytic collider: index into [`Near::colliders`].
    Collider(usize),
    /// A point of a mesh obstacle ([`Near::meshes`]).
    Mesh(MeshHit),
}

/// The collider or mesh obstacle nearest a point, at its pose at the end of the step.
struct Closest {
    feature: Feature,
    /// Signed distance to its surface (m).
    distance: f64,
    /// Outward unit normal at the closest surface point.
    normal: DVec3,
}

/// The analytic colliders and mesh obstacles of a step, for the contact rows of line 4.
struct Near<'a> {
    colliders: &'a [ColliderView],
    /// The mesh obstacles, when rows follow them (`docs/methods/isometric-contact.md` §8).
    meshes: Option<&'a MeshObstacles>,
    h: f64,
    thickness: f64,
    /// The cloth's own Coulomb coefficient (cloth–cloth pairs): `μ` of the self-contact rows'
    /// friction.
    cloth_friction: f64,
    /// The circumradius the clearance allows for (m): the longest rest edge of the mesh.
    sag_radius: f64,
}

impl Near<'_> {
    /// Whether there is nothing to hold a node against.
    fn is_empty(&self) -> bool {
        self.colliders.is_empty() && self.meshes.is_none()
    }

    /// The clearance of rows on collider `c` beyond the thickness (m): the sag
    /// `(1.1 ρ)²/(2 r)` of a flat cloth triangle of circumradius `ρ` (stretched by 10 %)
    /// whose corners lie on a sphere concentric with a curved collider of radius `r` (0 for
    /// flat ones). The rows hold the nodes, not the triangles: a triangle whose corners are
    /// `η + s` from the sphere has its interior at least `η` from it, so the collision stage
    /// (which sees the triangles against the collider's tessellation, whose vertices lie on
    /// the surface) has nothing to repel. `ρ` is the longest rest edge `ℓ`, not `ℓ/2` (the
    /// circumradius of the rest mesh's right triangles): the corner triangles of the 4:1 mesh
    /// shear freely, an obtuse triangle sags further than its longest edge, and `ρ = ℓ` covers
    /// every angle up to 150° (`docs/methods/isometric-contact.md` §1).
    fn clearance(&self, c: usize) -> f64 {
        match self.colliders[c].shape.curvature_radius() {
            Some(r) if r > 0.0 => {
                let rho = 1.1 * self.sag_radius;
                rho * rho / (2.0 * f64::from(r))
            }
            _ => 0.0,
        }
    }

    /// The distance `η + s` at which the rows hold a node from `feature`: the cloth's
    /// thickness plus the collider's clearance ([`Near::clearance`]), or plus the mesh
    /// obstacle's own thickness (which the collision stage adds to the cloth's; no clearance:
    /// `docs/methods/isometric-contact.md` §8).
    fn offset(&self, feature: &Feature) -> f64 {
        self.thickness
            + match feature {
                Feature::Collider(c) => self.clearance(*c),
                Feature::Mesh(hit) => self.mesh().thickness(hit.triangle),
            }
    }

    /// The mesh obstacles of a [`Feature::Mesh`].
    fn mesh(&self) -> &MeshObstacles {
        self.meshes.expect("a mesh feature comes from Near::meshes")
    }

    /// The nearest collider or mesh obstacle when `x` lies within `η + s + margin` of one
    /// (`s` its clearance or thickness, [`Near::offset`];
    /// [`IsometricSettings::contact_margin`]), at its pose at the end of the step; `None`
    /// otherwise (or with margin 0). Among the colliders the nearest is taken; a mesh
    /// obstacle replaces it when its gap `φ − η − s` is smaller.
    fn closest(&self, settings: &IsometricSettings, x: DVec3) -> Option<Closest> {
        if settings.contact_margin <= 0.0 {
            return None;
        }
        let p = x.as_vec3();
        let nearest = self
            .colliders
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let end = c.motion.advance(&c.pose, self.h as f32);
                (k, c.shape.surface_point(&end, p))
            })
            .min_by(|a, b| a.1.distance.total_cmp(&b.1.distance));
        let mut best = nearest.and_then(|(collider, surface)| {
            let distance = f64::from(surface.distance);
            (distance < self.thickness + self.clearance(collider) + settings.contact_margin).then(
                || Closest {
                    feature: Feature::Collider(collider),
                    distance,
                    normal: surface.normal.as_dvec3().normalize(),
                },
            )
        });
        if let Some(meshes) = self.meshes
            && let Some(hit) = meshes.closest(x, self.thickness + settings.contact_margin)
        {
            let gap = hit.distance - self.thickness - meshes.thickness(hit.triangle);
            if best
                .as_ref()
                .is_none_or(|b| gap < b.distance - self.offset(&b.feature))
            {
                best = Some(Closest {
                    feature: Feature::Mesh(hit),
                    distance: hit.distance,
                    normal: hit.normal,
                });
            }
        }
        best
    }

    /// The row `n · x ≥ n · x − (d − η − s)` of a node at `x` near `hit`: the collider's
    /// tangent plane at the closest point, offset by the thickness and the clearance. On a
    /// convex collider every point in front of it is at least `η + s` from the surface (not
    /// so on a mesh obstacle's concave parts: `docs/methods/isometric-contact.md` §8).
    fn plane_of(&self, hit: &Closest, x: DVec3) -> (DVec3, f64) {
        let offset = self.offset(&hit.feature);
        (hit.normal, hit.normal.dot(x) - (hit.distance - offset))
    }

    /// The friction anchor of a node (Wang 2012 eq. 3.27 in displacement form, held by the
    /// tangential rows of eq. 3.28): `x_n` carried by the collider's rigid motion over the
    /// step (by a mesh obstacle's: the displacement of the closest point,
    /// [`MeshObstacles::displacement`]) is where sticking friction would put the node; the
    /// prediction `x̃` slips from it by `δ`, the tangential part of `x̃ − carried`. The normal
    /// row pushes the node out by at most `p = max(0, η + s − d(x̃))`, the depth of the
    /// prediction in the band, so Coulomb's law lets friction remove at most `μ p` of the
    /// slip: the anchor is `carried + max(0, 1 − μ p / ‖δ‖) δ` (sticking when `μ p ≥ ‖δ‖`).
    fn anchor(&self, hit: &Closest, x_n: DVec3, x_tilde: DVec3) -> DVec3 {
        let offset = self.offset(&hit.feature);
        let (carried, mu, depth) = match &hit.feature {
            Feature::Collider(collider) => {
                let c = &self.colliders[*collider];
                let end = c.motion.advance(&c.pose, self.h as f32);
                let local = c.pose.inverse_transform_point(x_n.as_vec3());
                // Carried in f64 from the f32 poses: only the displacement matters.
                let carried = x_n + (end.transform_point(local) - x_n.as_vec3()).as_dvec3();
                let depth = (offset
                    - f64::from(c.shape.surface_point(&end, x_tilde.as_vec3()).distance))
                .max(0.0);
                (carried, f64::from(c.friction), depth)
            }
            Feature::Mesh(m) => {
                let meshes = self.mesh();
                let carried = x_n + meshes.displacement(m);
                // The prediction's depth below the band of the nearest mesh point.
                let depth = meshes.closest(x_tilde, self.thickness).map_or(0.0, |p| {
                    (self.thickness + meshes.thickness(p.triangle) - p.distance).max(0.0)
                });
                (carried, meshes.friction(m.triangle), depth)
            }
        };
        let n = hit.normal;
        let rel = x_tilde - carried;
        let slip = rel - n * n.dot(rel);
        let len = slip.length();
        let keep = if len > 0.0 {
            (1.0 - mu * depth / len).max(0.0)
        } else {
            0.0
        };
        carried + slip * keep
    }

    /// The contact plane of a node at `x_c` near an analytic collider
    /// ([`IsometricSettings::contact_margin`]; **choice**, not in the thesis): when `x_c` lies
    /// within `η + margin` of a collider at its pose at the end of the step (`d` its signed
    /// distance, `n` the outward normal at the nearest surface point; the nearest collider
    /// when several are near), the normal row is `n · x_p ≥ n · x_c − (d − η)`: the collider's
    /// tangent plane offset by the thickness `η`. It lies outside a convex collider, so a node
    /// held on it is at least `η` from the surface. Only for nodes the collision stage did not
    /// move: using this plane instead of eq. 3.26 for the moved ones too was measured worse
    /// (stiff-sheet, 30 frames, `contact_compliance = 1e-4`: largest frame-end row strain
    /// 0.28 % → 1.3 %; line 6 then moved up to 53 nodes with rows by ~1 mm a substep: a node
    /// on the plane still has its triangles' interiors, which sag towards a sphere, inside
    /// the repulsion band, where the stage's own collided position does not). Returns `(n, n · x_c − (d − η))`, or `None` (margin 0, nothing near).
    fn plane(&self, settings: &IsometricSettings, x_c: DVec3) -> Option<(DVec3, f64)> {
        let hit = self.closest(settings, x_c)?;
        Some(self.plane_of(&hit, x_c))
    }
}

/// The stencils of the bending residual rows (Wang 2012 eq. 3.19) of a [`QuadraticBending`],
/// built once with the cloth: three scalar rows per red node `i` (x, y, z), each on the red
/// nodes of row `i` of `L`, with the constant coefficients `(M_cr)_ii^{-1/2} L_ij`.
#[derive(Clone, Debug)]
pub struct BendingRows {
    offsets: Vec<u32>,
    vertices: Vec<u32>,
    /// `(M_cr)_ii^{-1/2} L_ij` per stencil entry.
    coeff: Vec<f64>,
    /// `(M_cr)_ii^{-1/2}` per red node, times 0 where the rest curvature is dropped
    /// ([`BendingRows::with_rest_mask`]).
    delta_weight: Vec<f64>,
}

impl BendingRows {
    /// The row structure of `bending` (its `L` and `M_cr` never change).
    #[must_use]
    pub fn new(bending: &QuadraticBending) -> Self {
        Self::with_rest_mask(bending, &vec![true; bending.cr_mass().len()])
    }

    /// As [`BendingRows::new`], with the rest curvature `δ` kept only on the red nodes where
    /// `keep_delta` is true (`δ̂ = δ` there, 0 elsewhere: a flat rest shape inside the cloth,
    /// `integrate::isometric_cloth::RestShape`).
    #[must_use]
    pub fn with_rest_mask(bending: &QuadraticBending, keep_delta: &[bool]) -> Self {
        let l = bending.laplacian();
        let nb = bending.first_red_node() as u32;
        let mut offsets = vec![0u32];
        let mut vertices = Vec::new();
        let mut coeff = Vec::new();
        let mut delta_weight = Vec::with_capacity(keep_delta.len());
        for (i, (&m, &keep)) in bending.cr_mass().iter().zip(keep_delta).enumerate() {
            let s = 1.0 / m.sqrt();
            delta_weight.push(if keep { s } else { 0.0 });
            let (cols, vals) = l.row(i);
            for _axis in 0..3 {
                vertices.extend(cols.iter().map(|&j| nb + j));
                coeff.extend(vals.iter().map(|&v| s * v));
                offsets.push(vertices.len() as u32);
            }
        }
        BendingRows {
            offsets,
            vertices,
            coeff,
            delta_weight,
        }
    }

    /// Row `a` of `M_cr^{-1/2} (L y − T δ̂)` at `x` (unscaled).
    fn row_value(&self, a: usize, x: &[DVec3], t_delta: &[DVec3]) -> f64 {
        let (i, axis) = (a / 3, a % 3);
        let ly: f64 = (self.offsets[a] as usize..self.offsets[a + 1] as usize)
            .map(|e| self.coeff[e] * x[self.vertices[e] as usize][axis])
            .sum();
        ly - self.delta_weight[i] * t_delta[i][axis]
    }

    /// The bending energy `½ k_b Σ_a (row a)²` at `x` (Wang 2012 eq. 3.8 with `bending`'s frozen
    /// rotation). Allocation-free; summed in row order.
    #[must_use]
    pub fn energy(&self, bending: &QuadraticBending, x: &[DVec3]) -> f64 {
        let t_delta = bending.rotated_rest_curvature();
        let scale = bending.stiffness().sqrt();
        let mut sum = 0.0;
        for a in 0..self.offsets.len() - 1 {
            let c = scale * self.row_value(a, x, t_delta);
            sum += c * c;
        }
        0.5 * sum
    }

    /// The residual rows for a step with potential weight `h_phi` (`h`, or `2h/3` under BDF2)
    /// and `bending`'s frozen rotation.
    #[must_use]
    pub fn residual<'a>(
        &'a self,
        bending: &'a QuadraticBending,
        h_phi: f64,
    ) -> BendingResidual<'a> {
        BendingResidual {
            rows: self,
            bending,
            scale: h_phi * bending.stiffness().sqrt(),
        }
    }
}

/// The bending residual `r_B = h_Φ √k_b M_cr^{-1/2} (L y − T δ)` as scalar rows (Wang 2012
/// eq. 3.19, scaled so that the rows square to `h_Φ²` times the energy of eq. 3.8), for
/// [`RowRole::Residual`]: affine in
/// `x`, so its gradients are constant within a step.
///
/// [`RowRole::Residual`]: super::projection::RowRole::Residual
#[derive(Clone, Copy, Debug)]
pub struct BendingResidual<'a> {
    rows: &'a BendingRows,
    bending: &'a QuadraticBending,
    scale: f64,
}

impl ConstraintSet for BendingResidual<'_> {
    fn len(&self) -> usize {
        self.rows.offsets.len() - 1
    }
    fn stencil_offsets(&self) -> &[u32] {
        &self.rows.offsets
    }
    fn stencil_vertices(&self) -> &[u32] {
        &self.rows.vertices
    }
    fn evaluate(&self, x: &[DVec3], c: &mut [f64]) {
        let t_delta = self.bending.rotated_rest_curvature();
        for (a, ca) in c.iter_mut().enumerate() {
            *ca = self.scale * self.rows.row_value(a, x, t_delta);
        }
    }
    fn gradients(&self, _x: &[DVec3], g: &mut [DVec3]) {
        let r = self.rows;
        for a in 0..self.len() {
            for e in r.offsets[a] as usize..r.offsets[a + 1] as usize {
                let mut v = DVec3::ZERO;
                v[a % 3] = self.scale * r.coeff[e];
                g[e] = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::shapes::{Motion, Pose, Shape};
    use crate::integrate::projection::test_sets::{EdgeLengths, grid};
    use crate::integrate::projection::{RowRole, StrainScale};
    use crate::mesh::generate::icosphere;
    use glam::Quat;

    const R: f64 = 0.15;

    #[derive(Debug)]
    struct Run {
        max_strain: f64,
        deepest: f64,
        steps_with_contacts: u32,
        max_newton: u32,
        second_solves: u32,
        second_converged: u32,
        /// Nodes moved by the last line-6 pass, summed over the steps.
        fail_safe_moved: u32,
        /// Repetitions of lines 4–6, summed over the steps.
        feedback_projections: u32,
        /// Of `fail_safe_moved`, the nodes without contact rows.
        fail_safe_moved_without_rows: u32,
        /// Nodes given speculative rows, summed over the steps.
        speculative_nodes: u32,
        /// Largest number of repetitions of lines 4–6 in one step.
        max_rounds: u32,
        /// Steps whose repetitions stopped while the last pass still moved nodes before the
        /// bound was reached (must be 0: a moved node triggers another round).
        rounds_stopped_early: u32,
        /// Steps that ran the collision stage again after line 5 (line 6).
        failsafe_passes: u32,
    }

    /// A 12 × 12 net of inextensible edges (spacing 5 cm) dropped onto a sphere obstacle of
    /// radius 15 cm; 60 steps of 5 ms.
    fn drop_on_sphere(coupling: Coupling, integrator: Integrator) -> Run {
        drop_on_sphere_with(coupling, integrator, 0)
    }

    /// [`drop_on_sphere`] with `contact_rounds` repetitions of lines 4–6 allowed.
    fn drop_on_sphere_with(coupling: Coupling, integrator: Integrator, rounds: u32) -> Run {
        drop_on_sphere_margin(coupling, integrator, rounds, 0.0)
    }

    /// The drop with [`IsometricSettings::contact_margin`] = `margin`; the analytic sphere
    /// (whose tessellation the collision stage sees) is passed as a collider.
    fn drop_on_sphere_margin(
        coupling: Coupling,
        integrator: Integrator,
        rounds: u32,
        margin: f64,
    ) -> Run {
        drop_on_sphere_settings(coupling, integrator, rounds, margin, false, false)
    }

    /// The drop with `contact_rounds`, `contact_margin` and `follow_obstacles` as given;
    /// `late`: the deadline has passed before every step starts.
    fn drop_on_sphere_settings(
        coupling: Coupling,
        integrator: Integrator,
        rounds: u32,
        margin: f64,
        follow: bool,
        late: bool,
    ) -> Run {
        let n = 12;
        let (mut x0, edges) = grid(n, 0.05, false);
        let half = 0.5 * 0.05 * (n - 1) as f64;
        for p in &mut x0 {
            *p += DVec3::new(-half + 0.013, R + 0.03, -half + 0.007);
        }
        let mut tris = Vec::new();
        for j in 0..n - 1 {
            for i in 0..n - 1 {
                let a = (j * n + i) as u32;
                let (b, c, d) = (a + 1, a + n as u32, a + n as u32 + 1);
                tris.push([a, c, b]);
                tris.push([b, c, d]);
            }
        }
        let set = EdgeLengths::new(&edges, &x0);
        // The collision stage wants every triangle edge, sorted and unique.
        let mut tri_edges: Vec<[u32; 2]> = tris
            .iter()
            .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
            .map(|[a, b]| [a.min(b), a.max(b)])
            .collect();
        tri_edges.sort_unstable();
        tri_edges.dedup();
        let rest32: Vec<f32> = tri_edges
            .iter()
            .map(|&[a, b]| (x0[a as usize] - x0[b as usize]).length() as f32)
            .collect();
        let mut stepper = IsometricStepper::new(
            &x0,
            &tris,
            &tri_edges,
            &rest32,
            &[&set],
            integrator,
            3 * x0.len(),
        );
        let sphere = icosphere(R as f32, 3).expect("sphere");
        stepper
            .collision_mut()
            .set_obstacles(&sphere.triangles, &sphere.positions);
        let friction = vec![0.3f32; sphere.positions.len()];
        let obstacles = ObstacleMeshes {
            x0: &sphere.positions,
            x1: &sphere.positions,
            friction: &friction,
            analytic: &[],
            colliders: &[],
            collider_vertices: &[],
            s0: 0.0,
            s1: 1.0,
        };
        let collision = CollisionSettings {
            self_collision: false,
            ..CollisionSettings::default()
        };
        let settings = IsometricSettings {
            coupling,
            projection: ProjectionSettings {
                tolerance: 1e-3,
                max_iterations: 30,
                ..ProjectionSettings::default()
            },
            contact_rounds: rounds,
            contact_margin: margin,
            follow_obstacles: follow,
            ..IsometricSettings::default()
        };
        let colliders = [ColliderView {
            shape: Shape::Sphere { radius: R as f32 },
            pose: Pose::IDENTITY,
            motion: Motion::default(),
            friction: 0.3,
        }];
        let nv = x0.len();
        let mass = vec![0.01; nv];
        let inv_mass = vec![100.0; nv];
        let accel = vec![DVec3::new(0.0, -9.81, 0.0); nv];
        let mut x = x0.clone();
        let mut v = vec![DVec3::ZERO; nv];
        let mut run = Run {
            max_strain: 0.0,
            deepest: f64::INFINITY,
            steps_with_contacts: 0,
            max_newton: 0,
            second_solves: 0,
            second_converged: 0,
            fail_safe_moved: 0,
            feedback_projections: 0,
            fail_safe_moved_without_rows: 0,
            speculative_nodes: 0,
            max_rounds: 0,
            rounds_stopped_early: 0,
            failsafe_passes: 0,
        };
        let mut c = vec![0.0; set.len()];
        for _ in 0..60 {
            let h = 0.005;
            stepper.predict(h, &x, &v, &accel, &[]);
            let fam = RowFamily {
                set: &set,
                role: RowRole::Hard,
                linear: false,
                scale: StrainScale::PerRow(&set.rest),
            };
            let rep = stepper.finish_step(
                h,
                &[fam],
                &settings,
                &collision,
                &obstacles,
                &MeshObstacles::default(),
                &colliders,
                &mass,
                &inv_mass,
                &mut x,
                &mut v,
                &mut || late,
            );
            run.fail_safe_moved_without_rows += rep.fail_safe_moved_without_rows;
            run.failsafe_passes += u32::from(rep.collide_second.is_some());
            run.speculative_nodes += rep.speculative_nodes;
            if let Some(s) = rep.second {
                run.second_solves += 1;
                run.second_converged += u32::from(s.converged);
            }
            run.fail_safe_moved += rep.fail_safe_moved;
            run.feedback_projections += rep.feedback.projections;
            run.max_rounds = run.max_rounds.max(rep.feedback.projections);
            if rep.second.is_some() && rep.feedback.projections < rounds && rep.fail_safe_moved > 0
            {
                run.rounds_stopped_early += 1;
            }
            run.max_newton = run.max_newton.max(rep.first.iterations);
            if let Some(s) = rep.second {
                run.max_newton = run.max_newton.max(s.iterations);
            }
            // Contact: rows from the stage (line 4), rows in the band of the sphere (the rows
            // that follow it), or the stage's repulsion.
            if rep.contact_nodes > 0
                || rep.speculative_nodes > 0
                || rep.collide_first.proximity_pairs > 0
            {
                run.steps_with_contacts += 1;
            }
            set.evaluate(&x, &mut c);
            for (ce, d) in c.iter().zip(&set.rest) {
                run.max_strain = run.max_strain.max(ce.abs() / d);
            }
            for p in &x {
                run.deepest = run.deepest.min(p.length());
            }
        }
        run
    }

    /// Speculative rows ([`IsometricSettings::contact_margin`]): nodes near the sphere that
    /// line 3 did not touch get released rows on its tangent plane, so line 5 cannot drag them
    /// into the sphere and line 6 has none of them to move.
    #[test]
    fn speculative_rows_leave_the_fail_safe_no_node_without_rows() {
        let plain =
            drop_on_sphere_margin(Coupling::Simultaneous, Integrator::BackwardEuler, 0, 0.0);
        let spec =
            drop_on_sphere_margin(Coupling::Simultaneous, Integrator::BackwardEuler, 0, 0.01);
        for (name, r) in [("plain", &plain), ("speculative", &spec)] {
            eprintln!(
                "{name}: line 6 moved {} ({} without rows), speculative nodes {}, strain {:.2e}, deepest {:.4}, line 5 converged {}/{}",
                r.fail_safe_moved,
                r.fail_safe_moved_without_rows,
                r.speculative_nodes,
                r.max_strain,
                r.deepest,
                r.second_converged,
                r.second_solves
            );
        }
        assert!(spec.speculative_nodes > 0, "{spec:?}");
        assert!(plain.fail_safe_moved_without_rows > 0, "{plain:?}");
        assert_eq!(spec.fail_safe_moved_without_rows, 0, "{spec:?}");
        assert!(spec.deepest > R - 1e-3, "{spec:?}");
        assert_eq!(spec.second_converged, spec.second_solves, "{spec:?}");
    }

    #[test]
    fn both_couplings_rest_on_the_sphere_and_line_5_mostly_converges() {
        let sim = drop_on_sphere(Coupling::Simultaneous, Integrator::BackwardEuler);
        let stag = drop_on_sphere(Coupling::Staggered, Integrator::BackwardEuler);
        eprintln!(
            "simultaneous: strain {:.2e}, deepest {:.4}, contact steps {}, newton {}, line 5 converged {}/{}",
            sim.max_strain,
            sim.deepest,
            sim.steps_with_contacts,
            sim.max_newton,
            sim.second_converged,
            sim.second_solves
        );
        eprintln!(
            "staggered: strain {:.2e}, deepest {:.4}, contact steps {}, newton {}",
            stag.max_strain, stag.deepest, stag.steps_with_contacts, stag.max_newton
        );
        assert!(sim.steps_with_contacts > 10 && stag.steps_with_contacts > 10);
        // The sheet rests on the sphere, never inside it (icosphere chords sit ≤ 0.5 % inside).
        assert!(sim.deepest > R * 0.99 - 1e-3 && stag.deepest > R * 0.99 - 1e-3);
        assert!(sim.max_newton <= 30 && stag.second_solves == 0);
        // Most second projections (line 5) converge; the rest stop at the Newton cap (a net
        // held by hard contact rows over a sphere is nearly taut).
        assert!(
            sim.second_solves > 10 && sim.second_converged * 4 >= sim.second_solves * 3,
            "{} of {} converged",
            sim.second_converged,
            sim.second_solves
        );
    }

    #[test]
    fn repeated_contact_rounds_leave_the_fail_safe_less_to_move() {
        let once = drop_on_sphere_with(Coupling::Simultaneous, Integrator::BackwardEuler, 0);
        let rounds = drop_on_sphere_with(Coupling::Simultaneous, Integrator::BackwardEuler, 3);
        eprintln!(
            "fail-safe moved {} nodes with 0 rounds, {} with 3 ({} extra projections); strain {:.2e} vs {:.2e}",
            once.fail_safe_moved,
            rounds.fail_safe_moved,
            rounds.feedback_projections,
            once.max_strain,
            rounds.max_strain
        );
        assert_eq!(once.feedback_projections, 0);
        assert!(rounds.feedback_projections > 0);
        assert!(rounds.fail_safe_moved < once.fail_safe_moved);
        assert!(rounds.deepest > R * 0.99 - 1e-3);
    }

    /// The re-projection rounds after the fail-safe pass are bounded by `contact_rounds`, and
    /// they stop early only when the pass moved nothing; with the rows that follow the
    /// collider the net still rests on the sphere (outside it by the thickness, within the
    /// chord gap of the tessellation the stage sees).
    #[test]
    fn fail_safe_rounds_are_bounded_and_run_while_nodes_move() {
        for rounds in [0, 1, 3] {
            for follow in [false, true] {
                let run = drop_on_sphere_settings(
                    Coupling::Simultaneous,
                    Integrator::BackwardEuler,
                    rounds,
                    0.01,
                    follow,
                    false,
                );
                eprintln!(
                    "rounds {rounds}, follow {follow}: largest {} a step, {} in all, fail-safe moved {}, strain {:.2e}, deepest {:.4}",
                    run.max_rounds,
                    run.feedback_projections,
                    run.fail_safe_moved,
                    run.max_strain,
                    run.deepest
                );
                assert!(run.max_rounds <= rounds, "{run:?}");
                assert_eq!(run.rounds_stopped_early, 0, "{run:?}");
                assert!(run.steps_with_contacts > 10, "{run:?}");
                assert!(run.deepest > R * 0.99 - 1e-3, "{run:?}");
            }
        }
    }

    /// With the rows that follow the sphere at the thickness plus the clearance of
    /// [`Near::clearance`], the collision stage (which meets the sphere's tessellation with
    /// the net's triangles) finds nothing to move in any step, so no move enters a step's
    /// result unprojected and the net ends every step within the strain tolerance (without
    /// the rows the stage moves 1900 nodes over the run and the strain reaches 3 %).
    #[test]
    fn rows_that_follow_the_sphere_leave_the_fail_safe_nothing_to_move() {
        let run = drop_on_sphere_settings(
            Coupling::Simultaneous,
            Integrator::BackwardEuler,
            3,
            0.01,
            true,
            false,
        );
        eprintln!(
            "fail-safe moved {} (rounds {} in all), strain {:.2e}, deepest {:.4}, contact steps {}",
            run.fail_safe_moved,
            run.feedback_projections,
            run.max_strain,
            run.deepest,
            run.steps_with_contacts
        );
        assert!(run.steps_with_contacts > 10, "{run:?}");
        assert_eq!(run.fail_safe_moved, 0, "{run:?}");
        assert!(run.max_strain <= 1.01e-3, "{run:?}");
        assert!(run.deepest > R * 0.99 - 1e-3, "{run:?}");
    }

    /// Past the deadline no projection runs an iteration, yet the collision
    /// stage still runs after each one (lines 3 and 6, the fail-safe) and keeps the net out of
    /// the sphere; no re-projection round starts.
    #[test]
    fn past_the_deadline_the_fail_safe_still_runs_and_no_round_starts() {
        for follow in [false, true] {
            let run = drop_on_sphere_settings(
                Coupling::Simultaneous,
                Integrator::BackwardEuler,
                3,
                0.01,
                follow,
                true,
            );
            eprintln!(
                "follow {follow}: Newton iterations {}, line-6 passes {}, rounds {}, deepest {:.4}",
                run.max_newton, run.failsafe_passes, run.feedback_projections, run.deepest
            );
            assert_eq!(run.max_newton, 0, "{run:?}");
            assert!(run.failsafe_passes > 10, "{run:?}");
            assert_eq!(run.feedback_projections, 0, "{run:?}");
            assert!(run.deepest > R * 0.99 - 1e-3, "{run:?}");
        }
    }

    /// The friction anchor of a node on a spinning ball (eq. 3.27 in displacement form): with
    /// enough normal push it is the start position carried by the ball (sticking); without
    /// friction it is the prediction itself (no tangential pull); in between it lies on the
    /// segment, `μ p` short of the prediction.
    #[test]
    fn friction_anchor_sticks_slides_and_lets_go() {
        let spin = |mu: f32| ColliderView {
            shape: Shape::Sphere { radius: R as f32 },
            pose: Pose::IDENTITY,
            motion: Motion {
                linear_velocity: Vec3::ZERO,
                angular_velocity: Vec3::new(0.0, 4.0, 0.0),
            },
            friction: mu,
        };
        let h = 0.01;
        let eta = 0.004;
        // A node resting on the ball off its axis; the prediction falls 2 mm into the band
        // and does not turn with the ball.
        let x_n = DVec3::new(0.0, R + eta, 0.0) + DVec3::new(0.05, 0.0, 0.0);
        let x_n = x_n.normalize() * (R + eta);
        let x_tilde = x_n - DVec3::new(0.0, 0.002, 0.0);
        let settings = IsometricSettings {
            contact_margin: 0.01,
            follow_obstacles: true,
            ..IsometricSettings::default()
        };
        let anchor_with = |mu: f32| {
            let colliders = [spin(mu)];
            let near = Near {
                colliders: &colliders,
                meshes: None,
                h,
                thickness: eta,
                cloth_friction: 0.0,
                sag_radius: 0.0,
            };
            let hit = near.closest(&settings, x_tilde).expect("in the band");
            (near.anchor(&hit, x_n, x_tilde), hit.normal)
        };
        // The ball turns the start point by ω h about y.
        let carried = Quat::from_rotation_y(4.0 * h as f32).as_dquat() * x_n;
        let tangential = |v: DVec3, n: DVec3| v - n * n.dot(v);
        let (stick, n) = anchor_with(10.0);
        assert!(
            tangential(stick - carried, n).length() < 1e-6,
            "{stick} vs {carried}"
        );
        let (free, n) = anchor_with(0.0);
        assert!(
            tangential(free - x_tilde, n).length() < 1e-9,
            "{free} vs {x_tilde}"
        );
        let (slide, n) = anchor_with(0.2);
        let slip = tangential(x_tilde - carried, n).length();
        let kept = tangential(slide - carried, n).length();
        assert!(slip > 1e-3, "the ball must slip under the node: {slip}");
        // p ≈ 2 mm of push against the band: μ p ≈ 0.4 mm less slip.
        assert!(
            kept < slip && kept > slip - 0.2 * 0.0025,
            "{kept} of {slip}"
        );
    }

    #[test]
    fn bdf2_step_runs_and_rests_on_the_sphere() {
        let run = drop_on_sphere(Coupling::Simultaneous, Integrator::Bdf2);
        eprintln!(
            "bdf2: strain {:.2e}, deepest {:.4}, newton {}",
            run.max_strain, run.deepest, run.max_newton
        );
        assert!(run.steps_with_contacts > 10);
        assert!(run.deepest > R * 0.99 - 1e-3);
    }
}

#[cfg(test)]
mod wang_model_tests {
    use super::*;
    use crate::integrate::projection::{RowRole, StrainScale};
    use crate::mesh::{Diagonals, GridSpec, Subdivision, Topology, subdivided_grid};
    use crate::model::isometric::{Family, IsometricConstraints};
    use crate::testing::SplitMix64;
    use glam::Vec2;

    fn sheet(n: u32) -> Subdivision {
        subdivided_grid(&GridSpec {
            nx: n,
            ny: n,
            size: Vec2::new(1.0, 1.0),
            centre: Vec3::new(0.0, 1.5, 0.0),
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: Diagonals::Alternating,
        })
        .expect("grid")
    }

    #[test]
    fn bending_rows_square_to_h2_times_the_energy_and_are_affine() {
        let sub = sheet(5);
        let rest = sub.rest_positions();
        let mut bending = QuadraticBending::new(&sub, &rest, 0.7).expect("bending");
        let mut rng = SplitMix64::new(9);
        let x: Vec<DVec3> = rest.iter().map(|p| *p + rng.vec3(0.05)).collect();
        bending.freeze_rotation(&x);
        let rows = BendingRows::new(&bending);
        let h = 0.004;
        let res = rows.residual(&bending, h);
        let mut c = vec![0.0; res.len()];
        res.evaluate(&x, &mut c);
        let half_sq: f64 = 0.5 * c.iter().map(|v| v * v).sum::<f64>();
        let e = h * h * bending.energy(&x);
        assert!((half_sq - e).abs() <= 1e-10 * e, "{half_sq} vs {e}");
        // Affine: C(x + d) = C(x) + G d exactly (to round-off).
        let mut g = vec![DVec3::ZERO; res.stencil_vertices().len()];
        res.gradients(&x, &mut g);
        let d: Vec<DVec3> = x.iter().map(|_| rng.vec3(0.01)).collect();
        let xd: Vec<DVec3> = x.iter().zip(&d).map(|(a, b)| *a + *b).collect();
        let mut cd = vec![0.0; res.len()];
        res.evaluate(&xd, &mut cd);
        let o = res.stencil_offsets();
        let v = res.stencil_vertices();
        for a in 0..res.len() {
            let lin: f64 = (o[a] as usize..o[a + 1] as usize)
                .map(|k| g[k].dot(d[v[k] as usize]))
                .sum();
            assert!((cd[a] - c[a] - lin).abs() <= 1e-12, "row {a}");
        }
    }

    /// Compliance factors `β` of the linear rows (`IsometricConstraints::linear_row_compliance`).
    #[derive(Clone, Copy, Debug)]
    struct Regularisation {
        conforming: f64,
        boundary: f64,
        inextensible: f64,
        /// Proximal (method of multipliers, `RowRole::Proximal`) rather than a compliance.
        proximal: bool,
    }

    fn role(d: &[f64], proximal: bool) -> RowRole<'_> {
        if proximal {
            RowRole::Proximal(d)
        } else {
            RowRole::PerRow(d)
        }
    }

    /// A 1 m sheet (base grid `n × n`), horizontal, pinned along one edge, falling and hanging
    /// under gravity with the full model: inextensibility, conforming and boundary rows plus
    /// bending `k_b`, 0.1 kg/m², backward Euler.
    struct Hang {
        cons: IsometricConstraints,
        bending: QuadraticBending,
        rows: BendingRows,
        rest: Vec<DVec3>,
        mass: Vec<f64>,
        inv_mass: Vec<f64>,
        pins: Vec<(u32, DVec3)>,
        scale: Vec<f64>,
        compliance: Vec<f64>,
        proximal: bool,
        stepper: IsometricStepper,
        x: Vec<DVec3>,
        v: Vec<DVec3>,
        accel: Vec<DVec3>,
        /// Air damping `c` (1/s): the explicit force `−c m v` of the scene's `air_damping`.
        air_damping: f64,
        z_max: f64,
    }

    impl Hang {
        fn new(n: u32, k_b: f64, reg: Regularisation) -> Self {
            let sub = sheet(n);
            let rest = sub.rest_positions();
            let cons = IsometricConstraints::new(&sub, &rest).expect("constraints");
            let bending = QuadraticBending::new(&sub, &rest, k_b).expect("bending");
            let rows = BendingRows::new(&bending);
            let nn = rest.len();
            // Masses: 0.1 kg/m² × ⅓ of the incident subdivided triangle areas (lumped masses).
            let mesh = sub.mesh();
            let mut mass = vec![0.0; nn];
            for t in &mesh.triangles {
                let [a, b, c] = t.map(|i| rest[i as usize]);
                let area = 0.5 * (b - a).cross(c - a).length();
                for &i in t {
                    mass[i as usize] += 0.1 * area / 3.0;
                }
            }
            let z_max = rest.iter().map(|p| p.z).fold(f64::MIN, f64::max);
            let pinned: Vec<bool> = rest.iter().map(|p| p.z >= z_max - 1e-9).collect();
            let inv_mass: Vec<f64> = (0..nn)
                .map(|i| if pinned[i] { 0.0 } else { 1.0 / mass[i] })
                .collect();
            let pins: Vec<(u32, DVec3)> = (0..nn)
                .filter(|&i| pinned[i])
                .map(|i| (i as u32, rest[i]))
                .collect();
            let topo = Topology::build(mesh).expect("topology");
            let edges = topo.edges().to_vec();
            let rest32: Vec<f32> = edges
                .iter()
                .map(|&[a, b]| (rest[a as usize] - rest[b as usize]).length() as f32)
                .collect();
            // Every hard row in the stopping test: strain for (3.1), |C|/ℓ_min for (3.3), (3.4).
            let scale = cons.stopping_scales();
            let mut compliance = vec![0.0; cons.len()];
            cons.row_regularisation(
                &inv_mass,
                [reg.inextensible, reg.conforming, reg.boundary],
                &mut compliance,
            );
            let res0 = rows.residual(&bending, 0.0);
            let stepper = IsometricStepper::new(
                &rest,
                &mesh.triangles,
                &edges,
                &rest32,
                &[&cons, &res0],
                Integrator::BackwardEuler,
                64,
            );
            Hang {
                x: rest.clone(),
                v: vec![DVec3::ZERO; nn],
                accel: vec![DVec3::new(0.0, -9.81, 0.0); nn],
                air_damping: 0.0,
                cons,
                bending,
                rows,
                rest,
                mass,
                inv_mass,
                pins,
                scale,
                compliance,
                proximal: reg.proximal,
                stepper,
                z_max,
            }
        }

        /// One step of Table 3.1 (no obstacles).
        fn step(&mut self, h: f64, settings: &IsometricSettings) -> IsometricReport {
            for (a, v) in self.accel.iter_mut().zip(&self.v) {
                *a = DVec3::new(0.0, -9.81, 0.0) - self.air_damping * *v;
            }
            let h_phi = self
                .stepper
                .predict(h, &self.x, &self.v, &self.accel, &self.pins);
            self.bending.freeze_rotation(self.stepper.prediction());
            let res = self.rows.residual(&self.bending, h_phi);
            let fams = [
                RowFamily {
                    set: &self.cons,
                    role: role(&self.compliance, self.proximal),
                    linear: false,
                    scale: StrainScale::PerRow(&self.scale),
                },
                RowFamily {
                    set: &res,
                    role: RowRole::Residual,
                    linear: true,
                    scale: StrainScale::Untested,
                },
            ];
            let collision = CollisionSettings {
                self_collision: false,
                ..CollisionSettings::default()
            };
            self.stepper.finish_step(
                h,
                &fams,
                settings,
                &collision,
                &ObstacleMeshes::NONE,
                &MeshObstacles::default(),
                &[],
                &self.mass,
                &self.inv_mass,
                &mut self.x,
                &mut self.v,
                &mut || false,
            )
        }

        /// Line 2 only, one Gauss–Newton iteration at a time, printing per iteration the
        /// largest (3.1) strain, the largest (3.3) and (3.4) violations over `ℓ_min`, the PCG
        /// iterations and final relative residual; then line 7. For the diagnosis.
        fn step_traced(
            &mut self,
            h: f64,
            settings: &ProjectionSettings,
            newton: u32,
        ) -> ProjectionReport {
            let h_phi = self
                .stepper
                .predict(h, &self.x, &self.v, &self.accel, &self.pins);
            self.bending.freeze_rotation(self.stepper.prediction());
            let res = self.rows.residual(&self.bending, h_phi);
            let fams = [
                RowFamily {
                    set: &self.cons,
                    role: role(&self.compliance, self.proximal),
                    linear: false,
                    scale: StrainScale::PerRow(&self.scale),
                },
                RowFamily {
                    set: &res,
                    role: RowRole::Residual,
                    linear: true,
                    scale: StrainScale::Untested,
                },
            ];
            let one = ProjectionSettings {
                max_iterations: 1,
                ..*settings
            };
            let IsometricStepper {
                projection,
                time,
                x_tilde,
                x_p,
                ..
            } = &mut self.stepper;
            x_p.copy_from_slice(x_tilde);
            if newton == 0 {
                let rep =
                    projection
                        .project(&fams, x_tilde, &self.inv_mass, settings, x_p, &mut || false);
                time.finish(h, x_p, &mut self.x, &mut self.v);
                return rep;
            }
            let mut c = vec![0.0; self.cons.len()];
            for it in 0..newton {
                let rep =
                    projection.project(&fams, x_tilde, &self.inv_mass, &one, x_p, &mut || false);
                self.cons.evaluate(x_p, &mut c);
                let worst = |f: Family| {
                    self.cons
                        .range(f)
                        .map(|a| c[a].abs() / self.scale[a])
                        .fold(0.0, f64::max)
                };
                eprintln!(
                    "  GN {it}: strain {:.2e}  (3.3) {:.2e}  (3.4) {:.2e}  PCG {} it, rel. res. {:.1e}",
                    worst(Family::Inextensibility),
                    worst(Family::Conforming),
                    worst(Family::Boundary),
                    rep.cg_iterations,
                    rep.cg_relative_residual
                );
            }
            time.finish(h, x_p, &mut self.x, &mut self.v);
            ProjectionReport::default()
        }

        /// How far the free edge hangs below the pinned edge (its highest node), m.
        fn free_edge_drop(&self) -> f64 {
            let top = self.rest[self.pins[0].0 as usize].y;
            let highest_free = (0..self.rest.len())
                .filter(|&i| self.rest[i].z <= -self.z_max + 1e-9)
                .map(|i| self.x[i].y)
                .fold(f64::MIN, f64::max);
            top - highest_free
        }
    }

    /// Smallest and largest eigenvalues of `K` (cloth rows at the first prediction, zero rows
    /// of all-pinned constraints dropped), raw and Jacobi-scaled.
    fn k_spectrum(n: u32, reg: Regularisation) -> (Vec<f64>, Vec<f64>) {
        let mut s = Hang::new(n, 1e-4, reg);
        let h = 0.01;
        let h_phi = s.stepper.predict(h, &s.x, &s.v, &s.accel, &s.pins);
        s.bending.freeze_rotation(s.stepper.prediction());
        let res = s.rows.residual(&s.bending, h_phi);
        let fams = [
            RowFamily {
                set: &s.cons,
                role: role(&s.compliance, s.proximal),
                linear: false,
                scale: StrainScale::PerRow(&s.scale),
            },
            RowFamily {
                set: &res,
                role: RowRole::Residual,
                linear: true,
                scale: StrainScale::Untested,
            },
        ];
        let x_tilde = s.stepper.x_tilde.clone();
        let (rows, k, free) = s
            .stepper
            .projection
            .dense_k_at(&fams, &x_tilde, &s.inv_mass);
        let kmax = k.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = k
            .iter()
            .zip(&free)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(diff <= 1e-12 * kmax, "assembled K vs matrix-free: {diff}");
        let live: Vec<usize> = (0..rows).filter(|&a| k[a * rows + a] > 0.0).collect();
        if std::env::var("WEFT_DIAG_VEC").is_ok() {
            eprintln!(
                "  ranges: (3.1) {:?} (3.3) {:?} (3.4) {:?}",
                s.cons.range(Family::Inextensibility),
                s.cons.range(Family::Conforming),
                s.cons.range(Family::Boundary)
            );
            for (r, &[i, j]) in s.cons.pairs().iter().enumerate() {
                let (a, b) = (s.rest[i as usize], s.rest[j as usize]);
                eprintln!(
                    "  row {r}: ({:.3},{:.3})-({:.3},{:.3}) w {:.0} {:.0}",
                    a.x, a.z, b.x, b.z, s.inv_mass[i as usize], s.inv_mass[j as usize]
                );
            }
        }
        let m = live.len();
        let eig = |scaled: bool| {
            let mat = faer::Mat::<f64>::from_fn(m, m, |r, c| {
                let (a, b) = (live[r], live[c]);
                let v = k[a * rows + b];
                if scaled {
                    v / (k[a * rows + a] * k[b * rows + b]).sqrt()
                } else {
                    v
                }
            });
            if scaled && std::env::var("WEFT_DIAG_VEC").is_ok() {
                let evd = mat.self_adjoint_eigen(faer::Side::Lower).expect("eig");
                let vals = evd.S();
                let vecs = evd.U();
                for j in 0..3 {
                    let col: Vec<f64> = (0..m).map(|r| vecs[(r, j)]).collect();
                    let mx = col.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                    let big: Vec<String> = (0..m)
                        .filter(|&r| col[r].abs() > 0.1 * mx)
                        .map(|r| format!("{}:{:.2}", live[r], col[r] / mx))
                        .collect();
                    eprintln!("   eigvec {j} (eig {:.2e}): {}", vals[j], big.join(" "));
                }
            }
            let mut e: Vec<f64> = mat
                .self_adjoint_eigenvalues(faer::Side::Lower)
                .expect("eigenvalues");
            e.sort_by(f64::total_cmp);
            e
        };
        (eig(false), eig(true))
    }

    #[test]
    #[ignore = "diagnosis (prints): spectrum of K and per-iteration Gauss–Newton progress"]
    fn diagnose_hanging_sheet() {
        let variants = [
            ("D = 0", 0.0, 0.0),
            ("(3.4) 1e-4", 0.0, 1e-4),
            ("(3.3)+(3.4) 1e-4", 1e-4, 1e-4),
            ("(3.3)+(3.4) 1e-3", 1e-3, 1e-3),
        ];
        for n in [3u32, 5] {
            if std::env::var("WEFT_DIAG_EIG").is_err() {
                break;
            }
            for &(name, c, b) in &variants {
                let reg = Regularisation {
                    conforming: c,
                    boundary: b,
                    inextensible: 0.0,
                    proximal: false,
                };
                let (raw, scaled) = k_spectrum(n, reg);
                let m = raw.len();
                eprintln!(
                    "n={n} {name}: {m} rows; K eig min {:.2e} {:.2e} {:.2e} {:.2e} max {:.2e}; Jacobi-scaled min {:.2e} {:.2e} {:.2e} max {:.2e}; zero-ish (<1e-9 max) {}",
                    raw[0],
                    raw[1],
                    raw[2],
                    raw[3],
                    raw[m - 1],
                    scaled[0],
                    scaled[1],
                    scaled[2],
                    scaled[m - 1],
                    raw.iter().filter(|&&e| e < 1e-9 * raw[m - 1]).count()
                );
            }
        }
        let traced = [
            ("proximal 1e-2, cg 1e-3", 1e-2, 1e-3, true),
            ("proximal 1e-1, cg 1e-3", 1e-1, 1e-3, true),
            ("proximal 1e-2, cg 1e-3, no majorizer", 1e-2, 1e-3, false),
        ];
        for n in [9u32, 17] {
            for &(name, beta, tol, majorizer) in &traced {
                eprintln!("n={n} {name}:");
                let mut s = Hang::new(
                    n,
                    1e-4,
                    Regularisation {
                        conforming: beta,
                        boundary: beta,
                        inextensible: beta,
                        proximal: true,
                    },
                );
                let mut settings = ProjectionSettings {
                    max_iterations: 30,
                    curvature_majorizer: majorizer,
                    ..ProjectionSettings::default()
                };
                settings.cg.tolerance = tol;
                let (mut gn, mut cg, mut worst, mut unconverged) = (0, 0, 0.0f64, 0);
                for step in 0..150 {
                    let newton = if step % 50 == 0 { 4 } else { 0 };
                    if newton > 0 {
                        eprintln!(" step {step}");
                    }
                    let rep = s.step_traced(0.01, &settings, newton);
                    gn += rep.iterations;
                    cg += rep.cg_iterations;
                    worst = worst.max(rep.max_violation);
                    unconverged += u32::from(newton == 0 && !rep.converged);
                    if step % 10 == 9 {
                        eprintln!(
                            "  steps ..{step}: {gn} GN, {cg} PCG, worst viol {worst:.2e}, unconverged {unconverged}, drop {:.3}, base strain {:.2e}",
                            s.free_edge_drop(),
                            s.cons.max_base_edge_strain(&s.x).through_midpoint
                        );
                        (gn, cg, worst, unconverged) = (0, 0, 0.0, 0);
                    }
                }
            }
        }
    }

    /// The hanging sheet (`n × n` base grid, `k_b = 10⁻⁴`) and the step settings of the fix
    /// described on [`hang_run`].
    fn hang_with_fix(n: u32) -> (Hang, IsometricSettings) {
        let s = Hang::new(
            n,
            1e-4,
            Regularisation {
                conforming: 1e-2,
                boundary: 1e-2,
                inextensible: 1e-2,
                proximal: true,
            },
        );
        let mut settings = IsometricSettings {
            projection: ProjectionSettings {
                tolerance: 1e-3,
                max_iterations: 30,
                ..ProjectionSettings::default()
            },
            ..IsometricSettings::default()
        };
        settings.projection.cg.tolerance = 1e-4;
        (s, settings)
    }

    /// What a run of the hanging sheet showed.
    #[derive(Debug)]
    struct HangOutcome {
        /// Largest drop of the free edge below the pinned edge (m).
        max_drop: f64,
        /// Drop at the end (m).
        drop: f64,
        /// Base-edge strain at the end.
        strain: crate::model::isometric::BaseEdgeStrain,
        /// Steps whose projection missed the tolerance (at the Newton cap).
        missed: u32,
        /// The last step's projection met the tolerance.
        last_converged: bool,
        /// PCG iterations, all steps.
        cg: u64,
    }

    /// The hanging sheet with the settings of the fix: every hard row of (3.1), (3.3), (3.4)
    /// proximal with `β = 10⁻²` (`RowRole::Proximal`), the curvature majorizer on, PCG with
    /// IC(0) to a relative 10⁻⁴ (warm-started), strain tolerance 0.1 % (on the (3.1) rows and
    /// on the base edges, `IsometricConstraints::monitored_strain`), 30 Gauss–Newton
    /// iterations at most, `h = 10 ms`, air damping `c` (1/s).
    fn hang_run(n: u32, steps: usize, c: f64) -> HangOutcome {
        hang_run_with(n, steps, c, false)
    }

    /// [`hang_run`]; with `base_edge_rows` the base edges are held by the base-edge rows
    /// (`crate::integrate::base_edge_rows`) and tested as held rows, not by the stopping test
    /// on every base edge.
    fn hang_run_with(n: u32, steps: usize, c: f64, base_edge_rows: bool) -> HangOutcome {
        let (mut s, mut settings) = hang_with_fix(n);
        if base_edge_rows {
            let (stencils, rest) = s.cons.base_edge_stencils();
            s.stepper
                .set_base_edge_rows(crate::integrate::base_edge_rows::BaseEdgeRows::new(
                    &stencils, &rest,
                ));
            settings.projection.base_edge_rows =
                crate::integrate::base_edge_rows::BaseEdgeRowsKind::Band;
        } else {
            settings.projection.test_monitored_strain = true;
        }
        s.air_damping = c;
        let (mut missed, mut cg, mut max_drop, mut last_converged) = (0, 0u64, 0.0f64, false);
        for step in 0..steps {
            let rep = s.step(0.01, &settings);
            missed += u32::from(!rep.first.converged);
            last_converged = rep.first.converged;
            cg += u64::from(rep.first.cg_iterations);
            max_drop = max_drop.max(s.free_edge_drop());
            if step % 10 == 0 {
                eprintln!(
                    "step {step}: Newton {}, PCG {}, violation {:.2e}, drop {:.3}",
                    rep.first.iterations,
                    rep.first.cg_iterations,
                    rep.first.max_violation,
                    s.free_edge_drop()
                );
            }
        }
        HangOutcome {
            max_drop,
            drop: s.free_edge_drop(),
            strain: s.cons.max_base_edge_strain(&s.x),
            missed,
            last_converged,
            cg,
        }
    }

    /// Time per step and Newton iterations per step of the hanging sheet (settings of
    /// `hang_run`) on a 33 × 33 and a 101 × 101 base grid (vertices per side), at 0.1 % strain
    /// tolerance. Prints; asserts nothing about time. `cargo test --release --lib -- --ignored
    /// --nocapture measure_hanging_sheet`.
    #[test]
    #[ignore = "measurement (slow; prints time per step)"]
    fn measure_hanging_sheet() {
        for (n, steps) in [(33u32, 10usize), (101, 1)] {
            let (mut s, settings) = hang_with_fix(n);
            let (mut newton, mut cg, mut missed) = (0u64, 0u64, 0u32);
            let t0 = std::time::Instant::now();
            for step in 0..steps {
                let t = std::time::Instant::now();
                let rep = s.step(0.01, &settings);
                eprintln!(
                    "  {n}: step {step}: {:.2} s, Newton {}, PCG {}, violation {:.2e}",
                    t.elapsed().as_secs_f64(),
                    rep.first.iterations,
                    rep.first.cg_iterations,
                    rep.first.max_violation
                );
                newton += u64::from(rep.first.iterations);
                cg += u64::from(rep.first.cg_iterations);
                missed += u32::from(!rep.first.converged);
            }
            let dt = t0.elapsed().as_secs_f64() / steps as f64;
            eprintln!(
                "base {n}x{n} ({} nodes, {} rows): {steps} steps, {:.3} s/step, {:.1} Newton/step, {:.0} PCG/step, {missed} steps over tolerance, drop {:.3}",
                s.x.len(),
                s.stepper.projection.num_cloth_rows(),
                dt,
                newton as f64 / steps as f64,
                cg as f64 / steps as f64,
                s.free_edge_drop()
            );
        }
    }

    #[test]
    fn pinned_sheet_swings_down_without_locking_or_blowing_up() {
        // Undamped: the sheet swings as a pendulum for the whole run (150 steps, 1.5 s).
        let out = hang_run(9, 150, 0.0);
        eprintln!(
            "swinging sheet: {} of 150 steps at the Newton cap, {} PCG iterations; {out:?}",
            out.missed, out.cg
        );
        // It swings down to vertical (no locking) and stays finite. While it swings it folds
        // one element wide (k_b = 1e-4 J on 0.125 m elements), where the base edges stretch by
        // O((κh)²) whatever the rows do, so most steps end at the Newton cap (measured: 144 of
        // 150, base-edge strain up to 7 %), but the strain stays bounded.
        assert!(
            out.max_drop >= 0.8,
            "free edge only {} m below",
            out.max_drop
        );
        assert!(
            out.drop.is_finite()
                && out.strain.end_to_end < 0.2
                && out.strain.through_midpoint < 0.2,
            "{out:?}"
        );
    }

    /// No locking: the 1 m sheet, pinned along one edge, low k_b (1e-4 J), with
    /// air damping 5/s so that it comes to rest within the run (2 s), hangs straight down, and
    /// at rest every base edge is within the 0.1 % strain tolerance (through its red node and
    /// end to end), with the last projection converged. Without the base-edge stopping test the
    /// same run ended at 0.12 % (the (3.1) rows at 0.1 %, the black nodes' slack on top).
    #[test]
    fn pinned_sheet_hangs_down_without_locking() {
        let out = hang_run(9, 200, 5.0);
        eprintln!("hanging sheet at rest: {out:?}");
        assert!(out.drop >= 0.8, "free edge only {} m below", out.drop);
        assert!(out.last_converged, "{out:?}");
        assert!(
            out.strain.through_midpoint <= 1e-3 && out.strain.end_to_end <= 1e-3,
            "{out:?}"
        );
    }

    /// No locking with the base-edge rows (`crate::integrate::base_edge_rows`): the sheet of
    /// [`pinned_sheet_hangs_down_without_locking`], with them instead of the stopping test on
    /// every base edge, hangs as far down (measured: 0.999 m). It does not converge: 182 of
    /// the 200 steps end at the Newton cap and the last ends at 0.14 % through the red node
    /// (without the rows: 82 steps, 0.093 %, the last converged;
    /// `docs/methods/isometric-contact.md` §7), so only the drop and a bounded strain are
    /// asserted.
    #[test]
    fn pinned_sheet_hangs_down_without_locking_with_base_edge_rows() {
        let out = hang_run_with(9, 200, 5.0, true);
        eprintln!("hanging sheet at rest, base-edge rows: {out:?}");
        assert!(out.drop >= 0.8, "free edge only {} m below", out.drop);
        assert!(
            out.drop.is_finite() && out.strain.through_midpoint < 1e-2,
            "{out:?}"
        );
    }
}
