//! The Gauss–Newton projection of Wang 2012 (§3.2.5, eq. 3.19–3.25): the constrained implicit step
//! as a sequence of sparse SPD solves.
//!
//! # What is solved
//!
//! One step minimises, over positions `x` (Wang 2012 eq. 3.20, with the regularisation of
//! eq. 3.29),
//!
//! `½ (x − x̃)ᵀ M (x − x̃) + ½ ‖r(x)‖² + hard rows C(x) = 0 + soft rows with compliance D`,
//!
//! where `x̃` is the inertial prediction, `r` a residual whose half squared norm is `h²` times a
//! potential (the quadratic bending of eq. 3.19), and `C` stacks the constraint rows. Every
//! Gauss–Newton iteration linearises the rows at the iterate `x⁽ˢ⁾`
//! (`C(x) ≈ C(x⁽ˢ⁾) + G (x − x⁽ˢ⁾)`, eq. 3.21) and solves
//!
//! `K z = G x̃ + d`, `K = G W Gᵀ + diag(D)`, `d = C(x⁽ˢ⁾) − G x⁽ˢ⁾`   (eq. 3.25, eq. 3.30)
//!
//! for the stacked unknowns `z = (r, λ)`, then recovers the new positions
//!
//! `x⁽ˢ⁺¹⁾ = x̃ − W Gᵀ z`                             (the first row of eq. 3.23 solved for `x`).
//!
//! The residual rows and the constraint rows enter `K` the same way; they differ only in their
//! diagonal `D`: 1 for residual rows (the identity block of eq. 3.25), 0 for hard constraints,
//! the compliance for soft rows (friction, eq. 3.30). So a potential is passed in as a
//! [`ConstraintSet`] whose "constraint values" are the residual `r(x)` and whose gradients are
//! the rows of `A = ∂r/∂x`, with [`RowRole::Residual`].
//!
//! # Choices (not in the thesis; `docs/methods/isometric-model.md` §A12–§A18)
//!
//! - `K` is applied matrix-free: `u = W Gᵀ z` as a per-vertex gather over a transpose of the
//!   stencils built at creation, then `y = G u + D z` per row. This costs two passes over the
//!   stencil entries, against `Σ_v |rows(v)|²` stored entries for an assembled `K`
//!   ([`crate::linalg::SymCsr`], which the tests use as the reference).
//! - Linear solver ([`LinearSolver`]): by default the sparse Cholesky of the cloth block of
//!   `K` with the contact rows eliminated per vertex; PCG is the opt-in
//!   ([`LinearSolver::Pcg`]) and the fallback of an iteration whose factor fails.
//! - Preconditioner of that PCG ([`Preconditioner`], §A17): by default IC(0) of the cloth
//!   block of `K`, assembled on a [`SymCsr`] pattern built at creation and refactored (no
//!   allocation) every 8 solves, over calls, or sooner when PCG needs 1.5 times the
//!   iterations it needed with the fresh factor, Jacobi on the contact rows; or plain Jacobi,
//!   `K_aa = Σ w_v |∇_v C_a|² + D_a`, which needs no assembled `K`.
//! - Warm start: `z` of the previous iteration and of the previous call (cloth rows keep their
//!   order); contact rows start at 0. Opt-in ([`SelfStressFilter`]): at the end of a call the
//!   self-stress of redundant rows (multipliers that move no node) is taken out, with the
//!   last factor, so that the curvature majorizer does not read it as tension.
//! - Stopping test (§A15): `max_a |C_a(x)| / scale_a ≤ tolerance` over the rows
//!   of the families that declare a [`StrainScale`] (inextensibility: `scale = d_ij`, the
//!   strain), with [`ProjectionSettings::test_monitored_strain`] over what those families
//!   monitor beyond their rows ([`ConstraintSet::monitored_strain`]: the base-edge strain of
//!   Wang's cloth), and over the
//!   hard contact rows (`scale = contact_length`), or the Newton cap, or the deadline.
//!   Residual and soft rows are not tested (their "violation" is the physics).
//! - Redundant hard rows (the planar redundancy of §A3, and self-stresses such as
//!   a straight chain of distance rows between two pinned nodes, which survives any bending
//!   about the chain) make `K` singular and the linearised rows inconsistent; PCG then stalls
//!   at its cap. [`RowRole::Proximal`] regularises such rows with a `D` in `K` and `D λ⁻` on
//!   the right-hand side (the method of multipliers), so they are hard at convergence.
//! - Gauss–Newton drops the constraint curvature `Σ λ ∇²C`; under heavy tension
//!   (`|λ|/ℓ ≫ m`) it diverges. [`ProjectionSettings::curvature_majorizer`] adds a diagonal
//!   upper bound of that term as a proximal mass (fixed point unchanged).
//! - Rows whose vertices are all pinned are zero rows of `K`: their right-hand side is masked
//!   to 0 and they are left out of the preconditioner (§A12).
//! - Two phases (**choice**, not in the thesis; off by default): Gauss–Newton as above converges
//!   only linearly when the constraint forces are large against the inertia (heavy tension).
//!   After `gauss_newton_iterations` iterations (or earlier, when an iteration gains less than
//!   half, but never above `fast_projection_below`) the iteration can become fast projection
//!   from the current iterate (Wang 2012 eq. 3.13–3.14, Goldenthal et al. 2007): the same `K`
//!   with the target `x⁽ˢ⁾`, the residual rows frozen at their phase-1 values, the multipliers
//!   accumulated as increments, and the step halved (up to 4 times) while it does not lower the
//!   violation. It converges quadratically to the constraints, but to a point near (not at) the
//!   minimiser of eq. 3.20, and how near depends on the potential it ignores: on the stiff shell
//!   (`samples/shell-stiff.toml`, first contact step) it ended with 5.3 · 10³ J of bending
//!   energy where Gauss–Newton throughout ended with 1.7 · 10² J (the minimiser, a rigid stop,
//!   has about 0), and that energy came back as a bounce. So the default
//!   (`gauss_newton_iterations = u32::MAX`) is Gauss–Newton throughout.
//! - Contacts are unilateral by default ([`ContactRow::unilateral`]): an active set on the
//!   normal rows, updated (`update_active_set`) each time the stopping test holds on the
//!   current set (the multipliers are then those of the step's problem). With rows that follow
//!   the obstacles ([`GaussNewtonProjection::project_in_contact`]) pulling rows are also
//!   released at every iteration and rows that started released are taken when their vertex
//!   reaches them (`docs/methods/isometric-contact.md`). Opt-in ([`ActiveSetRule::EveryIteration`],
//!   Wang 2012 §3.3): those rows start active within the stopping band of their plane, and a row
//!   released for pulling is taken back at any iteration its vertex is behind its plane.
//! - Base-edge rows (opt-in, [`ProjectionSettings::base_edge_rows`],
//!   `crate::integrate::base_edge_rows`): three-node rows after the self-contact rows, held
//!   only where a base edge reaches a band, their active set updated at every iteration; they
//!   enter the system only while one is held, and the direct solve then keeps them in its
//!   reduced system like the self-contact rows.
//! - Budget: at the Newton cap or the deadline the last iterate is returned, or the best one
//!   when the iteration diverged (`DIVERGED_FACTOR`, [`ProjectionReport::kept_best`]).
//! - Contacts (eq. 3.26, eq. 3.28) are one-vertex rows from a pool sized at creation; a push
//!   beyond the capacity grows the pool once and is counted. Self-contact rows
//!   ([`SelfContactRow`], a node against a triangle of the same cloth) couple four nodes: they
//!   are re-linearised and their active set updated at every iteration, and the direct solve
//!   keeps them as rows of its reduced system (`solve_direct`). Their friction rows
//!   ([`SelfContactRow::tangents`], eq. 3.28 on the node's offset from a material point of the
//!   triangle) follow them in the pool: soft, untested, released with them.
#![deny(unsafe_code)]

use std::time::Instant;

use glam::{DMat3, DVec3};

use crate::integrate::base_edge_rows::{BaseEdgeRows, BaseEdgeRowsKind};
use crate::linalg::pcg::{PcgReport, PcgSettings};
use crate::linalg::reduce;
use crate::linalg::scalar_pcg::{
    ScalarPcgWorkspace, SymOperator, solve_scalar_pcg, solve_scalar_pcg_with,
};
use crate::linalg::{CholeskyThreads, IncompleteCholesky, Ordering, SparseCholesky, SymCsr};
use crate::model::constraint::ConstraintSet;

/// How a family's rows enter the system `K` (their diagonal `D`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowRole<'a> {
    /// Hard constraint rows, `D = 0` (Wang 2012 eq. 3.25).
    Hard,
    /// Soft rows with compliance `D > 0` (units of inverse mass; Wang 2012 eq. 3.30).
    Compliant(f64),
    /// One compliance per row (0 = hard): e.g. a tiny `D` on the boundary rows (3.4) only,
    /// which removes the planar redundancy of `docs/methods/isometric-model.md §A3` (§A14).
    PerRow(&'a [f64]),
    /// Residual rows of a potential `h² Φ = ½‖r‖²`, `D = 1` (Wang 2012 eq. 3.19, eq. 3.25).
    Residual,
    /// Hard rows solved with a per-row proximal regularisation `D_a ≥ 0` (the method of
    /// multipliers): each Gauss–Newton iteration solves eq. 3.30 with this `D` in `K` and
    /// `D λ⁻` added to the right-hand side, `λ⁻` the warm start (previous iteration, previous
    /// step). A row then holds `J_a x + d_a = D_a (λ_a − λ⁻_a)` (eq. 3.30 with the penalty
    /// centred on `λ⁻`, the augmented-Lagrangian update), so at a fixed point of the iteration
    /// the row is exactly hard, while `K` keeps the `D` that makes it positive definite when
    /// the hard rows are redundant (`docs/methods/isometric-model.md` §A3, §A12, §A14). Unlike
    /// [`RowRole::PerRow`] no violation `D λ` is left over, whatever the load on the row. Tested by
    /// the stopping test like hard rows.
    Proximal(&'a [f64]),
}

impl RowRole<'_> {
    /// Writes `D` for the family's rows.
    fn fill_diagonal(self, out: &mut [f64]) {
        match self {
            RowRole::Hard => out.fill(0.0),
            RowRole::Compliant(d) => out.fill(d.max(0.0)),
            RowRole::PerRow(d) | RowRole::Proximal(d) => {
                assert_eq!(
                    d.len(),
                    out.len(),
                    "RowRole::PerRow/Proximal: one compliance per row"
                );
                for (o, &d) in out.iter_mut().zip(d) {
                    *o = d.max(0.0);
                }
            }
            RowRole::Residual => out.fill(1.0),
        }
    }

    /// Whether some row is soft (then a feasible start is not the minimiser).
    fn any_soft(self) -> bool {
        match self {
            RowRole::Hard | RowRole::Proximal(_) => false,
            RowRole::Compliant(d) => d > 0.0,
            RowRole::PerRow(d) => d.iter().any(|&d| d > 0.0),
            RowRole::Residual => true,
        }
    }
}

/// The scale a family's violations are measured against in the stopping test.
#[derive(Clone, Copy, Debug)]
pub enum StrainScale<'a> {
    /// Not tested (residual rows, soft rows, rows trusted to the linear solve).
    Untested,
    /// `|C_a| / s ≤ tolerance` with one length `s` for every row (e.g. the shortest rest edge).
    Uniform(f64),
    /// `|C_a| / s_a ≤ tolerance`: for `C = ‖x_i − x_j‖ − d_ij` with `s = d_ij` this is the
    /// strain of `docs/methods/isometric-model.md §A4`.
    PerRow(&'a [f64]),
}

/// One family of rows handed to [`GaussNewtonProjection::project`].
#[derive(Clone, Copy)]
pub struct RowFamily<'a> {
    /// The rows: values and gradients.
    pub set: &'a dyn ConstraintSet,
    /// How the rows enter `K`.
    pub role: RowRole<'a>,
    /// The rows are affine in `x` (constant gradients): gradients are evaluated once per
    /// projection instead of once per iteration.
    pub linear: bool,
    /// Scale for the stopping test.
    pub scale: StrainScale<'a>,
}

/// Scaled violations below this are rounding noise (`√ε` of `f64`): a projection that ends
/// there keeps its last iterate rather than an earlier "best" one.
const ROUND_OFF_VIOLATION: f64 = 1.5e-8;

/// A projection that stops unconverged returns its best iterate instead of its last only when
/// the last one's violation exceeds the best one's by this factor (it diverged). Keeping the
/// best iterate whenever it was better was measured worse: on rotating-ball-isometric (rows
/// that follow the ball, 8 substeps) the largest row strain at the end of frame 11 went from
/// 3.2 · 10⁻⁵ to 7.1 · 10⁻³ — an early iterate with a smaller violation is further from the
/// minimiser of the step, and the next steps start from it.
const DIVERGED_FACTOR: f64 = 4.0;

/// How often a contact row may change between active and released in one projection.
const MAX_CONTACT_TOGGLES: u8 = 2;

/// The line search's acceptance: a step may at most double the largest scaled violation
/// (`docs/methods/isometric-model.md` §A25).
const LINE_SEARCH_GROWTH: f64 = 2.0;

/// The line search's halvings of a step at most.
const LINE_SEARCH_HALVINGS: u32 = 8;

/// The obstacles seen by contact rows that follow them ([`GaussNewtonProjection::project_in_contact`]).
pub trait ContactGeometry {
    /// The contact plane of `vertex` at `x`: `(n, target)` with `n` the unit outward normal at
    /// the closest feature `p` of the nearest obstacle and `target = n · p + η` (the
    /// thickness `η`), so that the row `n · x ≥ target` keeps the vertex `η` outside; `None`
    /// when no obstacle is near (the row keeps its last plane).
    fn plane(&self, vertex: u32, x: DVec3) -> Option<(DVec3, f64)>;

    /// The friction anchor of `vertex` (Wang 2012 eq. 3.28): the point its tangential rows
    /// hold it to. When `Some`, the tangential rows that follow a re-linearised normal row are
    /// re-linearised with it: their directions complete the new normal and their targets are
    /// the anchor's tangential coordinates. `None` (the default): the tangential rows keep
    /// their directions and targets.
    fn anchor(&self, _vertex: u32) -> Option<DVec3> {
        None
    }
}

/// The IC(0) preconditioner of [`Preconditioner::IncompleteCholesky`] is refactored at least
/// every this many linear solves (Gauss–Newton iterations, over calls).
const IC_MAX_AGE: u32 = 8;

/// A contact row `C(x) = n · x_p − n · x_c` on one cloth vertex `p` (Wang 2012 eq. 3.26 for the
/// normal `n`, eq. 3.28 for a tangent with compliance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactRow {
    /// Cloth vertex `p`.
    pub vertex: u32,
    /// Unit direction: the contact normal, or a tangent.
    pub direction: DVec3,
    /// `n · x_c`: the row holds `n · x_p` at this value.
    pub target: f64,
    /// Compliance `D` (0: hard, tested in the stopping test; > 0: soft, untested).
    pub compliance: f64,
    /// A normal row that may only push (`n · x_p ≥ n · x_c`): released during the projection
    /// when its multiplier pulls the vertex towards the obstacle, together with the rows on
    /// the same vertex that follow it in the pool (its tangents). `false`: an equality row
    /// (the thesis's eq. 3.26 as printed), or a tangent.
    pub unilateral: bool,
    /// A speculative unilateral row (a node near an obstacle that the collision stage did not
    /// move): it starts the projection released when its vertex lies in front of its plane.
    /// Other rows start active.
    pub speculative: bool,
}

impl ContactRow {
    /// The row's direction while it is in the active set, zero while it is released.
    fn effective_direction(&self, active: bool) -> DVec3 {
        if active { self.direction } else { DVec3::ZERO }
    }
}

/// A self-contact row between a cloth node `p` and a triangle `(a, b, c)` of the same cloth
/// that does not contain it (Wang 2012 eq. 3.26 as an inequality, with the triangle's nodes
/// in the row): `C(x) = n · (x_p − Σ_i β_i x_i) − δ ≥ 0`, with `β` the barycentric weights of
/// the point of the triangle closest to `p` and `n` the unit normal of the separation at the
/// last linearisation, `δ` the required distance (the thickness plus a clearance). The row is
/// hard and unilateral (an active set as for [`ContactRow::unilateral`]); it is re-linearised
/// at every Gauss–Newton iterate: `β` and `n` are those of the iterate's closest point, and
/// `n` is the triangle's normal turned to the side `p` started on (`side`) while the closest
/// point lies inside the triangle or `p` is on the other side of the triangle's plane, the
/// direction from the closest point to `p` while that point lies on the triangle's boundary
/// and `p` on its own side, or always when the row has no side
/// (`docs/methods/isometric-contact.md` §6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelfContactRow {
    /// Cloth node `p`.
    pub vertex: u32,
    /// The triangle's nodes.
    pub triangle: [u32; 3],
    /// `±1`: the side of the triangle (along its normal `(x_b − x_a) × (x_c − x_a)`) that `p`
    /// is kept on; 0: none (a node beside the triangle rather than over it, whose side is not
    /// defined: the row holds the unsigned distance).
    pub side: f64,
    /// Required distance `δ` (m).
    pub distance: f64,
    /// Compliance `D` while active (units of inverse mass; 0: exactly hard). A tiny `D` keeps
    /// `K` positive definite when two rows of one node coincide (its closest point on an edge
    /// or a corner shared by two of its triangles).
    pub compliance: f64,
    /// `β`: barycentric weights of the closest point at the last linearisation.
    pub weights: [f64; 3],
    /// `n` at the last linearisation.
    pub normal: DVec3,
    /// The coefficient of `p` in the row: 1 for a node against a triangle; another value for
    /// a pair the collision stage repelled ([`SelfContactRow::held`]).
    pub lead: f64,
    /// Whether `β` and `n` stay as built rather than follow the iterate (a pair the collision
    /// stage repelled, held on the stage's own stencil).
    pub fixed: bool,
    /// 0: a normal row. 1 or 2: the first or second tangential (friction) row of the normal
    /// row `tangent` places before it in the pool ([`SelfContactRow::tangents`], Wang 2012
    /// eq. 3.28): `normal` is then a tangent `t_k` completing the normal row's current normal,
    /// `weights` the triangle's material point fixed for the step, and `distance = t_k · a`
    /// for the anchor `a`. Soft, untested, and in the active set exactly while its normal row
    /// is.
    pub tangent: u8,
    /// For a tangential row: the anchor `a`, the relative offset `x_p − Σ_i β_i x_i` (m) whose
    /// tangential part the row holds (Wang 2012 eq. 3.27 in displacement form). Zero for a
    /// normal row.
    pub anchor: DVec3,
}

impl SelfContactRow {
    /// A row holding `vertex` at least `distance` from `triangle` on the side `side`, with
    /// compliance `compliance`, linearised at `x`.
    #[must_use]
    pub fn new(
        vertex: u32,
        triangle: [u32; 3],
        side: f64,
        distance: f64,
        compliance: f64,
        x: &[DVec3],
    ) -> Self {
        let mut row = SelfContactRow {
            vertex,
            triangle,
            side: if side < 0.0 {
                -1.0
            } else if side > 0.0 {
                1.0
            } else {
                0.0
            },
            distance,
            compliance: compliance.max(0.0),
            weights: [1.0 / 3.0; 3],
            normal: DVec3::ZERO,
            lead: 1.0,
            fixed: false,
            tangent: 0,
            anchor: DVec3::ZERO,
        };
        row.relinearise(x);
        row
    }

    /// The two tangential (friction) rows of this normal row (Wang 2012 eq. 3.28, soft with
    /// compliance `compliance` as in eq. 3.30): `t_k · (x_p − Σ_i β_i x_i − a) = 0` for the
    /// two tangents `t_k` of the normal row's current normal, with the triangle's material
    /// point `β = weights` and the anchor `a` both fixed for the step. Their gradients sum to
    /// zero over the four nodes (`Σ β_i = 1`), so they move no momentum. They go into the pool
    /// right after this row, which they follow: re-linearised with its normal, released with
    /// it (`docs/methods/isometric-contact.md` §6).
    #[must_use]
    pub fn tangents(&self, weights: [f64; 3], anchor: DVec3, compliance: f64) -> [Self; 2] {
        [1u8, 2].map(|k| {
            let mut row = SelfContactRow {
                side: 0.0,
                distance: 0.0,
                compliance: compliance.max(0.0),
                weights,
                lead: 1.0,
                fixed: true,
                tangent: k,
                anchor,
                ..*self
            };
            row.follow(self.normal);
            row
        })
    }

    /// A tangential row's direction and target for its normal row's normal `n`: `t_k` of the
    /// completion `(t₁, t₂)` of `n` (with equal compliance on both rows the pair acts as
    /// `‖(I − n nᵀ)(r − a)‖² / (2D)`, whichever completion), `distance = t_k · a`.
    fn follow(&mut self, n: DVec3) {
        if n == DVec3::ZERO {
            self.normal = DVec3::ZERO;
            self.distance = 0.0;
            return;
        }
        let (t1, t2) = n.any_orthonormal_pair();
        let t = if self.tangent == 1 { t1 } else { t2 };
        self.normal = t;
        self.distance = t.dot(self.anchor);
    }

    /// A row on the stencil of a pair the collision stage repelled: `n · Σ_k c_k x_k ≥ target`
    /// over the pair's four nodes `verts` with signed coefficients `c` and unit normal `n`,
    /// kept fixed (not re-linearised): the stage's own condition for leaving the pair alone,
    /// made a hard unilateral row of the projection. `compliance` as for
    /// [`SelfContactRow::new`].
    #[must_use]
    pub fn held(verts: [u32; 4], c: [f64; 4], normal: DVec3, target: f64, compliance: f64) -> Self {
        SelfContactRow {
            vertex: verts[3],
            triangle: [verts[0], verts[1], verts[2]],
            side: 0.0,
            distance: target,
            compliance: compliance.max(0.0),
            weights: [-c[0], -c[1], -c[2]],
            normal,
            lead: c[3],
            fixed: true,
            tangent: 0,
            anchor: DVec3::ZERO,
        }
    }

    /// The row's nodes: `p`, then the triangle's.
    fn stencil(&self) -> [u32; 4] {
        let [a, b, c] = self.triangle;
        [self.vertex, a, b, c]
    }

    /// `∇C` per node of [`Self::stencil`] (zero while the row is released).
    fn gradients(&self, active: bool) -> [DVec3; 4] {
        if !active {
            return [DVec3::ZERO; 4];
        }
        let n = self.normal;
        let [b0, b1, b2] = self.weights;
        [self.lead * n, -b0 * n, -b1 * n, -b2 * n]
    }

    /// `C(x)` at the current linearisation.
    #[must_use]
    pub fn value(&self, x: &[DVec3]) -> f64 {
        let [p, a, b, c] = self.stencil().map(|v| x[v as usize]);
        let [b0, b1, b2] = self.weights;
        self.normal.dot(self.lead * p - (b0 * a + b1 * b + b2 * c)) - self.distance
    }

    /// The closest point of the triangle to `p` at `x`, its weights and the separation's
    /// normal (see the type's doc). A degenerate triangle keeps the last normal.
    pub fn relinearise(&mut self, x: &[DVec3]) {
        if self.fixed {
            return;
        }
        let [p, a, b, c] = self.stencil().map(|v| x[v as usize]);
        let (weights, interior) = closest_on_triangle(p, a, b, c);
        self.weights = weights;
        let face = (b - a).cross(c - a);
        let q = weights[0] * a + weights[1] * b + weights[2] * c;
        let d = p - q;
        let scale = (b - a).length_squared().max((c - a).length_squared());
        let wrong_side = self.side * face.dot(d) < 0.0;
        let unsigned = self.side == 0.0 || (!interior && !wrong_side);
        let face_ok = face.length_squared() > 1e-24 * scale * scale;
        let n = if unsigned && d.length_squared() > 1e-12 * scale {
            d.normalize()
        } else if self.side != 0.0 && face_ok {
            self.side * face.normalize()
        } else if self.normal == DVec3::ZERO && face_ok {
            face.normalize()
        } else {
            return;
        };
        self.normal = n;
    }
}

/// Barycentric weights of the point of triangle `(a, b, c)` closest to `p` (Ericson 2005,
/// §5.1.5, by Voronoi regions), and whether that point lies inside the triangle (not on an
/// edge or a corner).
pub(crate) fn closest_on_triangle(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> ([f64; 3], bool) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return ([1.0, 0.0, 0.0], false);
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return ([0.0, 1.0, 0.0], false);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let t = d1 / (d1 - d3);
        return ([1.0 - t, t, 0.0], false);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return ([0.0, 0.0, 1.0], false);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let t = d2 / (d2 - d6);
        return ([1.0 - t, 0.0, t], false);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return ([0.0, 1.0 - t, t], false);
    }
    let denom = va + vb + vc;
    if denom.abs() < f64::MIN_POSITIVE {
        return ([1.0, 0.0, 0.0], false);
    }
    let (v, w) = (vb / denom, vc / denom);
    ([1.0 - v - w, v, w], true)
}

/// What an update of the contact active set did.
#[derive(Clone, Copy, Debug, Default)]
struct ActiveSet {
    /// Some row changed state.
    changed: bool,
    /// Unilateral rows now released.
    inactive: u32,
}

/// Preconditioner of the PCG solves (`docs/methods/isometric-model.md §A17`): of
/// [`LinearSolver::Pcg`] and of the fallback of a failed Cholesky factor (the default linear
/// solver is [`LinearSolver::Cholesky`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Preconditioner {
    /// `diag(K)`: cheap, matrix-free, but weak once the conforming rows (3.3) and the
    /// bending residual rows are in `K`.
    Jacobi,
    /// IC(0) of the cloth block of `K`, assembled on the [`SymCsr`] pattern built at creation
    /// and refactored every few solves (`IC_MAX_AGE`, or sooner when PCG slows down; a stale
    /// factor is still SPD); contact rows get Jacobi (a block-diagonal
    /// preconditioner: IC(0) on the cloth rows, `1/K_aa` on the contact rows).
    #[default]
    IncompleteCholesky,
}

/// The linear solver of each Gauss–Newton iteration (the system of Wang 2012 eq. 3.25 / 3.30).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinearSolver {
    /// PCG with [`ProjectionSettings::preconditioner`] on the matrix-free `K`, to the relative
    /// tolerance of [`ProjectionSettings::cg`].
    Pcg,
    /// A supernodal sparse Cholesky of the cloth block of `K` after the contact rows are
    /// eliminated per vertex (see [`GaussNewtonProjection::project`]): symbolic analysis once
    /// per cloth (the contact rows never change the pattern), a numeric factor every
    /// Gauss–Newton iteration, solves exact to rounding. When a factor fails (rank-deficient
    /// hard rows) that iteration falls back to PCG and the failure is counted.
    Cholesky {
        /// Fill-reducing ordering of the symbolic analysis.
        ordering: Ordering,
        /// Threads of the numeric factorisation.
        threads: CholeskyThreads,
    },
}

impl Default for LinearSolver {
    /// The sparse Cholesky, AMD ordering, one thread (measured fastest on the 33 × 33
    /// rotating-ball drape: `samples/README.md`).
    fn default() -> Self {
        LinearSolver::Cholesky {
            ordering: Ordering::Amd,
            threads: CholeskyThreads::One,
        }
    }
}

/// Budget and tolerances of one projection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectionSettings {
    /// Stopping tolerance on the scaled violation (the strain limit of Wang 2012 Table 4.1).
    pub tolerance: f64,
    /// Gauss–Newton iteration cap.
    pub max_iterations: u32,
    /// PCG budget and relative tolerance per Gauss–Newton iteration.
    pub cg: PcgSettings,
    /// Length scale of hard contact rows in the stopping test (the shortest rest edge).
    pub contact_length: f64,
    /// Preconditioner of the linear solves (PCG).
    pub preconditioner: Preconditioner,
    /// The linear solver: PCG or a sparse Cholesky.
    pub solver: LinearSolver,
    /// Add a diagonal majorizer of the constraint curvature `Σ λ_a ∇²C_a` of distance rows to
    /// the model Hessian (see [`GaussNewtonProjection::project`]); the fixed point is
    /// unchanged. Without it the iteration diverges once the tension `|λ|/ℓ` of the rows
    /// exceeds the node masses (a hanging sheet).
    pub curvature_majorizer: bool,
    /// Gauss–Newton iterations of Wang 2012 eq. 3.25 (target `x̃`) before the iteration
    /// switches to fast projection (Goldenthal et al. 2007, Wang 2012 eq. 3.13–3.14 from the
    /// current iterate; see [`GaussNewtonProjection::project`]). It switches earlier when an
    /// iteration reduces the violation by less than half. `u32::MAX` (the default): the
    /// thesis's iteration throughout. Phase 2 ignores the potential, so with stiff bending it
    /// ends far from the minimiser (module doc).
    pub gauss_newton_iterations: u32,
    /// The switch to fast projection waits until the scaled violation is at most this (its
    /// linearisation is poor far from the manifold: an edge strained by 100 % or folded to
    /// near zero length flips its direction between iterations).
    pub fast_projection_below: f64,
    /// Also bring what the families monitor beyond their rows within `tolerance`
    /// ([`ConstraintSet::monitored_strain`]: the base-edge strain of Wang's cloth, through the
    /// red node). `false` (the default): the rows only, the thesis's test.
    pub test_monitored_strain: bool,
    /// With [`LinearSolver::Cholesky`]: solve by PCG preconditioned with the last numeric
    /// factor before factoring again ([`FactorReuse`]).
    pub factor_reuse: FactorReuse,
    /// When the self-stress is taken out of the proximal rows' multipliers before they warm
    /// start the next projection ([`SelfStressFilter`]).
    pub self_stress_filter: SelfStressFilter,
    /// Backtracking on a Gauss–Newton step whose largest scaled violation exceeds twice that
    /// of the iterate it starts from (`docs/methods/isometric-model.md` §A25). `false` (the
    /// default): the full step, as the thesis takes it.
    pub line_search: bool,
    /// Longest node move of one Gauss–Newton step, in metres: a longer step is shortened as a
    /// whole (`docs/methods/isometric-model.md` §A25). `f64::INFINITY` (the default): no bound.
    pub step_bound: f64,
    /// How the unilateral contact rows start a projection and when a row released for pulling
    /// comes back ([`ActiveSetRule`]).
    pub active_set: ActiveSetRule,
    /// Rows that hold the base-edge strain through the red node within a band, when the
    /// projection has them ([`GaussNewtonProjection::set_base_edge_rows`],
    /// `crate::integrate::base_edge_rows`). Off (the default): none enter the system.
    pub base_edge_rows: BaseEdgeRowsKind,
}

/// When the active set of the unilateral contact rows ([`ContactRow::unilateral`]) takes a
/// released row back, and which of them start a projection active
/// (`docs/methods/isometric-contact.md` §2). The self-contact rows ([`SelfContactRow`]) follow
/// [`ActiveSetRule::TakeAtConvergence`] under both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActiveSetRule {
    /// A row starts active when its node is on or behind its plane; a row released for
    /// pulling comes back only when the iteration meets its tolerance on the current set (the
    /// default).
    #[default]
    TakeAtConvergence,
    /// Wang 2012 §3.3's simultaneous handling: the set is updated at every Gauss–Newton
    /// iteration in both directions. A row starts active when its node lies within the
    /// stopping test's band of its plane (`tolerance · contact_length`, where the test calls an
    /// active row met); a row released for pulling is taken back at the first iterate whose
    /// node lies behind its plane by more than that band, also after its changes are spent,
    /// and a row taken back then stays active. Each row changes at most three times a call.
    /// (On the self-contact rows, nearly dependent on the cloth's own rows in a fold one
    /// element wide, this was measured worse: `docs/methods/isometric-model.md` §A26.)
    EveryIteration,
}

/// When a projection takes the self-stress out of the multipliers of its
/// [`RowRole::Proximal`] rows, the part that moves no node and that the next projection would
/// otherwise inherit as its warm start (`docs/methods/isometric-model.md` §A20).
///
/// The filter replaces the cloth rows' multipliers `λ` by `λ − K̄⁻¹ D λ = K̄⁻¹ (G W' Gᵀ) λ`
/// with the numeric factor of the projection's last solve (one more pair of triangular
/// solves, no factorisation): a component of `λ` on a generalised eigenvector of
/// `(G W' Gᵀ, D)` with eigenvalue `a` is scaled by `a / (1 + a)`, so a self-stress (`a = 0`)
/// goes and a well-determined multiplier (`a ≫ 1`) stays. It runs only when that last solve
/// was direct ([`LinearSolver::Cholesky`]) and the iteration did not switch to fast
/// projection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelfStressFilter {
    /// Never: the warm start keeps the last solve's multipliers (the default).
    #[default]
    Off,
    /// After a projection that met its tolerance: its multipliers are then those of a
    /// solution up to the self-stress. After an unconverged one they are kept.
    AfterConvergence,
    /// After every projection.
    Always,
}

/// The last numeric factor of [`LinearSolver::Cholesky`] kept as the preconditioner of PCG on
/// the system of a later Gauss–Newton iteration, projection or step: the factor of a matrix
/// near `K̄` makes `L⁻ᵀ L⁻¹ K̄` near the identity, and a solve by the factor costs a small part
/// of a factorisation. It is tried only when the active contact rows hold the same nodes
/// as at the factorisation (they change `K̄` at those nodes by far more than the rows' motion
/// does). When PCG does not reach `tolerance` within `max_iterations` the
/// iteration factors `K̄` afresh and solves directly (the PCG's work is then lost), and the
/// next solves factor without trying, for a stretch that doubles with each failure in a row;
/// when the last reuse needed more than half of them, the next solve factors. Decided on
/// iteration counts only, so deterministic.
/// `docs/methods/sparse-cholesky.md` §3 has the measurements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FactorReuse {
    /// PCG iterations an earlier factor gets; 0: a numeric factorisation every iteration.
    pub max_iterations: u32,
    /// Relative tolerance on the residual in the norm of the factor's inverse,
    /// `‖b − K̄ z‖_{P⁻¹} ≤ tolerance ‖b‖_{P⁻¹}`.
    pub tolerance: f64,
}

impl Default for FactorReuse {
    fn default() -> Self {
        FactorReuse {
            max_iterations: 0,
            tolerance: 1e-8,
        }
    }
}

impl Default for ProjectionSettings {
    fn default() -> Self {
        ProjectionSettings {
            tolerance: 1e-3,
            max_iterations: 20,
            cg: PcgSettings {
                max_iterations: 1000,
                tolerance: 1e-6,
            },
            contact_length: 1e-2,
            preconditioner: Preconditioner::default(),
            solver: LinearSolver::default(),
            curvature_majorizer: true,
            gauss_newton_iterations: u32::MAX,
            fast_projection_below: 0.1,
            test_monitored_strain: false,
            factor_reuse: FactorReuse::default(),
            self_stress_filter: SelfStressFilter::Off,
            line_search: false,
            step_bound: f64::INFINITY,
            active_set: ActiveSetRule::TakeAtConvergence,
            base_edge_rows: BaseEdgeRowsKind::Off,
        }
    }
}

/// Outcome of one projection: data for the stats, never an error.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProjectionReport {
    /// Gauss–Newton iterations (linear solves) done.
    pub iterations: u32,
    /// Largest scaled violation at the returned positions.
    pub max_violation: f64,
    /// PCG iterations summed over the Gauss–Newton iterations.
    pub cg_iterations: u32,
    /// Largest PCG iteration count of one Gauss–Newton iteration's solve.
    pub cg_max_iterations: u32,
    /// PCG solves that stopped (cap or deadline) before their tolerance.
    pub cg_unconverged: u32,
    /// Largest relative preconditioned residual at the end of a PCG solve (0 when none ran).
    pub cg_max_residual: f64,
    /// Relative preconditioned residual `‖b − K z‖_P / ‖b‖_P` at the end of the last PCG solve
    /// (0 when no solve ran).
    pub cg_relative_residual: f64,
    /// The stopping test held.
    pub converged: bool,
    /// The deadline stopped it.
    pub interrupted: bool,
    /// A PCG solve met `p·Kp ≤ 0` (rank-deficient hard rows) or a non-finite value.
    pub linear_solve_failed: bool,
    /// Of [`ProjectionReport::iterations`], those done as fast projection (the second phase).
    pub fast_projection_iterations: u32,
    /// Unilateral contact rows released at the end ([`ContactRow::unilateral`]).
    pub released_contacts: u32,
    /// Gauss–Newton iterations solved by the sparse Cholesky ([`LinearSolver::Cholesky`]).
    pub direct_solves: u32,
    /// Iterations whose Cholesky factor failed (not positive definite) or whose contact rows
    /// could not be eliminated, solved by PCG instead.
    pub direct_fallbacks: u32,
    /// The iteration stopped unconverged (Newton cap, deadline, failed solve) after it diverged
    /// (the last violation non-finite or `DIVERGED_FACTOR` times the best) and returned the
    /// best iterate instead of the last one.
    pub kept_best: bool,
    /// The self-stress was taken out of the multipliers at the end ([`SelfStressFilter`]).
    pub self_stress_filtered: bool,
    /// Base-edge rows held at the end ([`ProjectionSettings::base_edge_rows`]).
    pub held_base_edges: u32,
}

/// Wall-clock time of the sparse direct solves, accumulated over calls (measurement only: it
/// never changes what is computed).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DirectSolveTimes {
    /// Numeric factorisations done.
    pub factors: u64,
    /// Seconds in the assembly of `K̄` (contact elimination included).
    pub assemble_seconds: f64,
    /// Seconds in the numeric factorisation.
    pub factor_seconds: f64,
    /// Seconds in the triangular solves and the contact elimination.
    pub solve_seconds: f64,
    /// Symbolic analyses done (once per cloth, and again when the ordering or threads change,
    /// or the self-contact rows' stencils).
    pub analyses: u32,
    /// Seconds in the symbolic analyses (ordering, elimination tree, supernodes, buffers).
    pub analysis_seconds: f64,
    /// Solves by PCG preconditioned with an earlier factor ([`FactorReuse`]), converged or
    /// not.
    pub reuse_solves: u64,
    /// Of those, the ones that did not converge (a factorisation followed).
    pub reuse_failures: u64,
    /// PCG iterations of those solves.
    pub reuse_iterations: u64,
    /// Seconds in those solves.
    pub reuse_seconds: f64,
    /// Stored values of `L` of the cloth block's factor.
    pub factor_entries: usize,
    /// The work of one factorisation of the cloth block, `Σ_j |L_{*j}|²`
    /// ([`SparseCholesky::factor_flops`]).
    pub factor_flops: f64,
}

/// The preallocated Gauss–Newton projector for one cloth: the stencil structure of its row
/// families, the transpose used by the matrix-free `K`, the contact pool and all scratch.
#[derive(Clone, Debug)]
pub struct GaussNewtonProjection {
    num_vertices: usize,
    topo: Stencils,
    /// `∇C` per stencil entry.
    gradients: Vec<DVec3>,
    /// `C(x)` per cloth row, then contact rows.
    values: Vec<f64>,
    /// `D` per row.
    diag: Vec<f64>,
    /// Right-hand side per row.
    rhs: Vec<f64>,
    /// Unknowns `(r, λ)`, kept as the warm start.
    z: Vec<f64>,
    /// Phase 2 (fast projection): the multipliers accumulated over its increments.
    z_total: Vec<f64>,
    /// `W Gᵀ z` per vertex.
    u: Vec<DVec3>,
    contacts: Vec<ContactRow>,
    /// Per contact row: in the active set of this projection (unilateral rows, see
    /// [`ContactRow::unilateral`]).
    contact_active: Vec<bool>,
    /// Per contact row: how often its activity changed in this projection (capped, so that
    /// the active set cannot cycle).
    contact_toggles: Vec<u8>,
    /// The iterate a Gauss–Newton step starts from, and the full step's end (step control).
    step_from: Vec<DVec3>,
    step_full: Vec<DVec3>,
    /// The multipliers a Gauss–Newton step starts from (step control).
    z_from: Vec<f64>,
    contact_capacity: usize,
    contact_overflows: u32,
    pcg: ScalarPcgWorkspace,
    /// The cloth block of `K`, assembled for the IC(0) preconditioner.
    k_cloth: SymCsr,
    ic: IncompleteCholesky,
    /// Solves since `ic` was last factored (`u32::MAX`: never factored).
    ic_age: u32,
    /// PCG iterations of the first solve with the current factor, and of the last solve.
    ic_first_cg: u32,
    ic_last_cg: u32,
    /// Per vertex, this iteration: `w' = 1/(m + g)` and the target `x̂ = (m x̃ + g x⁽ˢ⁾)/(m + g)`,
    /// `g` the curvature majorizer (`w' = w`, `x̂ = x̃` without it).
    w_eff: Vec<f64>,
    x_hat: Vec<DVec3>,
    /// The iterate with the smallest scaled violation of the current call (the budget keeps
    /// it when the iteration stops unconverged).
    best: Vec<DVec3>,
    /// The sparse Cholesky of the cloth block, analysed on first use ([`LinearSolver::Cholesky`]).
    cholesky: Option<SparseCholesky>,
    /// Scratch of the direct solve: per vertex `S_v` of the contact elimination, and the
    /// contact part `p_v = w_v N_vᵀ B_v b_v` of the reduced right-hand side.
    reduction: Vec<DMat3>,
    contact_push: Vec<DVec3>,
    /// Per vertex: the call stamp of the contact group that last touched it.
    group_stamp: Vec<u32>,
    stamp: u32,
    direct_times: DirectSolveTimes,
    /// Self-contact rows ([`SelfContactRow`]), after the contact rows in the row order; set
    /// before each call ([`GaussNewtonProjection::set_self_rows`]).
    self_rows: Vec<SelfContactRow>,
    /// Per self-contact row: in the active set of this projection.
    self_active: Vec<bool>,
    /// Per self-contact row: how often its activity changed in this projection.
    self_toggles: Vec<u8>,
    self_capacity: usize,
    /// The direct solver's system when self-contact rows exist: the cloth rows and the
    /// self-contact rows together, analysed once per set of self-contact stencils.
    augmented: Option<Box<Augmented>>,
    /// Base-edge rows ([`BaseEdgeRows`]), after the self-contact rows in the row order; set
    /// once at creation ([`GaussNewtonProjection::set_base_edge_rows`]).
    edges: BaseEdgeRows,
    /// The base-edge rows take part in this call ([`ProjectionSettings::base_edge_rows`]).
    edges_on: bool,
    /// The direct solver's system while a base-edge row is held: the cloth rows, the
    /// self-contact rows and every base-edge row, analysed once per set of self-contact
    /// stencils (once per cloth without them).
    banded: Option<Box<Augmented>>,
    /// The right-hand side of a solve by PCG on an earlier factor ([`FactorReuse`]).
    reuse_rhs: Vec<f64>,
    /// When and whether the next solve tries an earlier factor ([`ReuseState`]).
    reuse_state: ReuseState,
}

/// The schedule of [`FactorReuse`]: after a failed try, the next `backoff` solves factor
/// without trying (`backoff` doubling with each failure in a row, reset by a success), so
/// that in a stretch where `K̄` changes too much between solves (a contact set that moves)
/// the lost PCG work stays a small part of the factorisations.
#[derive(Clone, Copy, Debug, Default)]
struct ReuseState {
    /// PCG iterations of the last solve on an earlier factor (0 after a factorisation).
    last: u32,
    /// Solves left to factor without trying.
    skip: u32,
    /// The length of the last skip.
    backoff: u32,
    /// [`contact_signature`] of the system last factored.
    signature: u64,
}

/// A digest of what changes `K̄` by more than the motion of the rows: the nodes of the active
/// contact rows (they change `W̄` there, `solve_direct`) and the number of self-contact rows.
/// An earlier factor is tried only on a system with the same digest.
fn contact_signature(op: &KOperator<'_>) -> u64 {
    let fold = |h: u64, v: u64| (h ^ v).wrapping_mul(0x0000_0100_0000_01b3);
    let h = op
        .contacts
        .iter()
        .zip(op.active)
        .filter(|&(_, &active)| active)
        .fold(0xcbf2_9ce4_8422_2325, |h, (c, _)| {
            fold(h, u64::from(c.vertex))
        });
    let h = fold(h, op.selfs.len() as u64 | 1 << 40);
    fold(h, op.edges.map_or(0, BaseEdgeRows::len) as u64 | 1 << 41)
}

/// The system of the direct solve with self-contact rows: the cloth rows' stencils followed by
/// those of the self-contact rows (four nodes each), its pattern, factor and scratch.
#[derive(Clone, Debug)]
struct Augmented {
    /// The self-contact stencils the pattern was built for.
    key: Vec<[u32; 4]>,
    /// Base-edge rows in the pattern, after the self-contact rows (0 or all of them).
    edges: usize,
    ordering: Ordering,
    threads: CholeskyThreads,
    offsets: Vec<u32>,
    vertices: Vec<u32>,
    gradients: Vec<DVec3>,
    diag: Vec<f64>,
    z: Vec<f64>,
    k: SymCsr,
    chol: Option<SparseCholesky>,
}

impl Augmented {
    /// Whether the pattern was built for these self-contact rows' stencils, this ordering and
    /// these threads, with `edges` base-edge rows.
    fn fits(
        &self,
        self_rows: &[SelfContactRow],
        ordering: Ordering,
        threads: CholeskyThreads,
        edges: usize,
    ) -> bool {
        self.ordering == ordering
            && self.threads == threads
            && self.edges == edges
            && self.key.len() == self_rows.len()
            && self
                .key
                .iter()
                .zip(self_rows)
                .all(|(k, r)| *k == r.stencil())
    }
}

impl GaussNewtonProjection {
    /// Preallocates for `num_vertices` vertices, the given families (only their stencils are
    /// read: the same families, in the same order, must be passed to
    /// [`GaussNewtonProjection::project`]) and a pool of `contact_capacity` contact rows.
    ///
    /// # Panics
    /// If a family's stencil arrays are inconsistent or name a vertex out of range (families
    /// are validated when they are built).
    #[must_use]
    pub fn new(
        num_vertices: usize,
        families: &[&dyn ConstraintSet],
        contact_capacity: usize,
    ) -> Self {
        let mut family_rows = vec![0usize];
        let mut family_entries = vec![0usize];
        let mut stencil_offsets = vec![0u32];
        let mut stencil_vertices = Vec::new();
        for f in families {
            let o = f.stencil_offsets();
            let v = f.stencil_vertices();
            assert_eq!(o.len(), f.len() + 1, "ConstraintSet: offsets length");
            assert_eq!(o[f.len()] as usize, v.len(), "ConstraintSet: offsets end");
            let base = stencil_vertices.len() as u32;
            stencil_offsets.extend(o[1..].iter().map(|&k| base + k));
            stencil_vertices.extend_from_slice(v);
            family_rows.push(family_rows.last().expect("non-empty") + f.len());
            family_entries.push(stencil_vertices.len());
        }
        let rows = *family_rows.last().expect("non-empty");
        let mut entry_row = vec![0u32; stencil_vertices.len()];
        for a in 0..rows {
            for k in stencil_offsets[a]..stencil_offsets[a + 1] {
                entry_row[k as usize] = a as u32;
            }
        }
        let mut vertex_offsets = vec![0u32; num_vertices + 1];
        for &v in &stencil_vertices {
            assert!(
                (v as usize) < num_vertices,
                "stencil vertex {v} out of range"
            );
            vertex_offsets[v as usize + 1] += 1;
        }
        for i in 0..num_vertices {
            vertex_offsets[i + 1] += vertex_offsets[i];
        }
        let mut fill = vertex_offsets.clone();
        let mut vertex_entries = vec![0u32; stencil_vertices.len()];
        for (k, &v) in stencil_vertices.iter().enumerate() {
            vertex_entries[fill[v as usize] as usize] = k as u32;
            fill[v as usize] += 1;
        }
        let total = rows + contact_capacity;
        let k_cloth = SymCsr::from_stencils(num_vertices, &stencil_offsets, &stencil_vertices);
        let ic = IncompleteCholesky::new(&k_cloth);
        GaussNewtonProjection {
            num_vertices,
            gradients: vec![DVec3::ZERO; stencil_vertices.len()],
            topo: Stencils {
                family_rows,
                family_entries,
                stencil_offsets,
                stencil_vertices,
                entry_row,
                vertex_offsets,
                vertex_entries,
            },
            values: vec![0.0; total],
            diag: vec![0.0; total],
            rhs: vec![0.0; total],
            z: vec![0.0; total],
            z_total: vec![0.0; total],
            u: vec![DVec3::ZERO; num_vertices],
            contacts: Vec::with_capacity(contact_capacity),
            contact_active: Vec::with_capacity(contact_capacity),
            contact_toggles: Vec::with_capacity(contact_capacity),
            step_from: vec![DVec3::ZERO; num_vertices],
            step_full: vec![DVec3::ZERO; num_vertices],
            z_from: vec![0.0; total],
            contact_capacity,
            contact_overflows: 0,
            pcg: ScalarPcgWorkspace::new(total),
            k_cloth,
            ic,
            ic_age: u32::MAX,
            ic_first_cg: 0,
            ic_last_cg: 0,
            w_eff: vec![0.0; num_vertices],
            x_hat: vec![DVec3::ZERO; num_vertices],
            best: vec![DVec3::ZERO; num_vertices],
            cholesky: None,
            reduction: vec![DMat3::ZERO; num_vertices],
            contact_push: vec![DVec3::ZERO; num_vertices],
            group_stamp: vec![0; num_vertices],
            stamp: 0,
            direct_times: DirectSolveTimes::default(),
            self_rows: Vec::new(),
            self_active: Vec::new(),
            self_toggles: Vec::new(),
            self_capacity: 0,
            augmented: None,
            edges: BaseEdgeRows::default(),
            edges_on: false,
            banded: None,
            reuse_rhs: vec![0.0; total],
            reuse_state: ReuseState::default(),
        }
    }

    /// Time spent in the sparse direct solves so far ([`LinearSolver::Cholesky`]).
    #[must_use]
    pub fn direct_solve_times(&self) -> DirectSolveTimes {
        self.direct_times
    }

    /// Builds the sparse Cholesky (symbolic analysis of the cloth block's pattern) unless one
    /// with this ordering and these threads exists: the one allocation of the direct solver,
    /// once per cloth. Returns whether it is usable.
    fn ensure_cholesky(&mut self, ordering: Ordering, threads: CholeskyThreads) -> bool {
        if self
            .cholesky
            .as_ref()
            .is_some_and(|c| c.config() == (ordering, threads))
        {
            return true;
        }
        let start = Instant::now();
        self.cholesky = SparseCholesky::new(&self.k_cloth, ordering, threads).ok();
        self.direct_times.analyses += 1;
        self.direct_times.analysis_seconds += start.elapsed().as_secs_f64();
        self.direct_times.factor_entries = self
            .cholesky
            .as_ref()
            .map_or(0, SparseCholesky::factor_entries);
        self.direct_times.factor_flops = self
            .cholesky
            .as_ref()
            .map_or(0.0, SparseCholesky::factor_flops);
        self.cholesky.is_some()
    }

    /// With self-contact rows: the pattern of the cloth rows and the self-contact rows
    /// together, and its symbolic analysis, unless the last one was built for the same
    /// stencils, ordering and threads (it allocates: once per change of the self-contact
    /// pattern, counted in [`DirectSolveTimes::analyses`]). Without self-contact rows nothing
    /// is done; the cloth block's factor serves.
    fn ensure_augmented(&mut self, ordering: Ordering, threads: CholeskyThreads) {
        if self.self_rows.is_empty() {
            return;
        }
        let fits = self
            .augmented
            .as_ref()
            .is_some_and(|a| a.fits(&self.self_rows, ordering, threads, 0));
        if !fits {
            self.augmented = Some(self.analyse_augmented(ordering, threads, 0));
        }
    }

    /// The pattern of the cloth rows' stencils, the self-contact rows' and the first `edges`
    /// base-edge rows' (0 or all of them), and its symbolic analysis, counted in
    /// [`DirectSolveTimes::analyses`] (allocates).
    fn analyse_augmented(
        &mut self,
        ordering: Ordering,
        threads: CholeskyThreads,
        edges: usize,
    ) -> Box<Augmented> {
        let t = &self.topo;
        let cloth = t.num_cloth_rows();
        let m = self.self_rows.len();
        let key: Vec<[u32; 4]> = self.self_rows.iter().map(SelfContactRow::stencil).collect();
        let mut offsets = t.stencil_offsets.clone();
        let mut vertices = t.stencil_vertices.clone();
        for st in &key {
            vertices.extend_from_slice(st);
            offsets.push(vertices.len() as u32);
        }
        for k in 0..edges {
            vertices.extend_from_slice(&self.edges.stencil(k));
            offsets.push(vertices.len() as u32);
        }
        let start = Instant::now();
        let k = SymCsr::from_stencils(self.num_vertices, &offsets, &vertices);
        let chol = SparseCholesky::new(&k, ordering, threads).ok();
        self.direct_times.analyses += 1;
        self.direct_times.analysis_seconds += start.elapsed().as_secs_f64();
        Box::new(Augmented {
            key,
            edges,
            ordering,
            threads,
            gradients: vec![DVec3::ZERO; vertices.len()],
            offsets,
            vertices,
            diag: vec![0.0; cloth + m + edges],
            z: vec![0.0; cloth + m + edges],
            k,
            chol,
        })
    }

    /// Number of cloth rows (all families).
    #[must_use]
    pub fn num_cloth_rows(&self) -> usize {
        self.topo.num_cloth_rows()
    }

    /// Gives the projection its base-edge rows ([`BaseEdgeRows`]), used in the calls whose
    /// settings ask for them ([`ProjectionSettings::base_edge_rows`]). Called once, when the
    /// cloth is created: it sizes the per-row buffers (allocates).
    ///
    /// # Panics
    /// If a row names a vertex out of range.
    pub fn set_base_edge_rows(&mut self, rows: BaseEdgeRows) {
        for k in 0..rows.len() {
            assert!(
                rows.stencil(k)
                    .iter()
                    .all(|&v| (v as usize) < self.num_vertices),
                "base-edge row {k}: vertex out of range"
            );
        }
        self.edges = rows;
        self.banded = None;
        self.resize_rows();
    }

    /// The base-edge rows and their active set at the end of the last call.
    #[must_use]
    pub fn base_edge_rows(&self) -> &BaseEdgeRows {
        &self.edges
    }

    /// Rows of the system of this iteration: the cloth, contact and self-contact rows, and the
    /// base-edge rows while one of them is held (`base_at` is the index of the first).
    fn rows_in_system(&self, base_at: usize) -> usize {
        base_at
            + if self.edges_on && self.edges.held() > 0 {
                self.edges.len()
            } else {
                0
            }
    }

    /// The pattern of the cloth rows, the self-contact rows and the base-edge rows, and its
    /// symbolic analysis, unless the last one was built for the same self-contact stencils,
    /// ordering and threads (it allocates: once per cloth, and once per change of the
    /// self-contact pattern while a base-edge row is held; counted in
    /// [`DirectSolveTimes::analyses`]).
    fn ensure_banded(&mut self, ordering: Ordering, threads: CholeskyThreads) {
        let edges = self.edges.len();
        let fits = self
            .banded
            .as_ref()
            .is_some_and(|a| a.fits(&self.self_rows, ordering, threads, edges));
        if !fits {
            self.banded = Some(self.analyse_augmented(ordering, threads, edges));
        }
    }

    /// Updates the base-edge rows' active set at `x` (`crate::integrate::base_edge_rows`) and,
    /// when it changed, their `D` and values. Returns whether it changed.
    fn update_edges(&mut self, x: &[DVec3], inv_mass: &[f64], fast: bool) -> bool {
        if !self.edges_on {
            return false;
        }
        let base_at = self.num_cloth_rows() + self.contacts.len() + self.self_rows.len();
        let r = base_at..base_at + self.edges.len();
        let changed = self.edges.update(
            x,
            &mut self.z[r.clone()],
            &mut self.z_total[r.clone()],
            fast,
        );
        if changed > 0 {
            self.edges.diagonal(inv_mass, &mut self.diag[r.clone()]);
            self.edges.values(x, &mut self.values[r]);
        }
        changed > 0
    }

    /// Removes every contact row (start of a step, or of the staggered pipeline).
    pub fn clear_contacts(&mut self) {
        self.contacts.clear();
        self.contact_active.clear();
        self.contact_toggles.clear();
    }

    /// The contact rows currently in the system.
    #[must_use]
    pub fn contacts(&self) -> &[ContactRow] {
        &self.contacts
    }

    /// How many times the contact pool had to grow beyond its capacity.
    #[must_use]
    pub fn contact_overflows(&self) -> u32 {
        self.contact_overflows
    }

    /// Adds a contact row. Beyond the pool's capacity the pool grows (doubling) and the
    /// overflow is counted: the only allocation of a steady-state step.
    pub fn push_contact(&mut self, row: ContactRow) {
        if self.contacts.len() == self.contact_capacity {
            self.contact_overflows += 1;
            self.contact_capacity = (2 * self.contact_capacity).max(16);
            self.resize_rows();
            let more = self.contact_capacity - self.contacts.len();
            self.contacts.reserve(more);
            self.contact_active.reserve(more);
            self.contact_toggles.reserve(more);
        }
        let a = self.num_cloth_rows() + self.contacts.len();
        self.z[a] = 0.0;
        self.contacts.push(row);
        self.contact_active.push(true);
        self.contact_toggles.push(0);
    }

    /// Sizes the per-row buffers for the cloth rows and both pools at their capacities.
    fn resize_rows(&mut self) {
        let total =
            self.num_cloth_rows() + self.contact_capacity + self.self_capacity + self.edges.len();
        for v in [
            &mut self.values,
            &mut self.diag,
            &mut self.rhs,
            &mut self.z,
            &mut self.z_total,
            &mut self.reuse_rhs,
            &mut self.z_from,
        ] {
            v.resize(total, 0.0);
        }
        self.pcg.reserve(total);
    }

    /// Replaces the self-contact rows ([`SelfContactRow`]) of the next calls. Their pool grows
    /// (doubling) when `rows` exceeds it, counted with the contact pool's overflows
    /// ([`GaussNewtonProjection::contact_overflows`]); otherwise nothing allocates. Their
    /// multipliers start at 0 in every call.
    pub fn set_self_rows(&mut self, rows: &[SelfContactRow]) {
        if rows.len() > self.self_capacity {
            if self.self_capacity > 0 {
                self.contact_overflows += 1;
            }
            self.self_capacity = rows.len().next_power_of_two().max(64);
            self.resize_rows();
            let more = self.self_capacity - self.self_rows.len();
            self.self_rows.reserve(more);
            self.self_active.reserve(more);
            self.self_toggles.reserve(more);
        }
        self.self_rows.clear();
        self.self_rows.extend_from_slice(rows);
        self.self_active.clear();
        self.self_active.resize(rows.len(), true);
        self.self_toggles.clear();
        self.self_toggles.resize(rows.len(), 0);
    }

    /// The self-contact rows currently in the system, as last linearised.
    #[must_use]
    pub fn self_rows(&self) -> &[SelfContactRow] {
        &self.self_rows
    }

    /// Per self-contact row: whether it ended the last call in the active set.
    #[must_use]
    pub fn self_rows_active(&self) -> &[bool] {
        &self.self_active
    }

    /// Replaces contact row `j` (an index into [`GaussNewtonProjection::contacts`]) and forgets
    /// its multiplier: the same slot, so nothing allocates.
    ///
    /// # Panics
    /// If `j` is not a row in the pool.
    pub fn replace_contact(&mut self, j: usize, row: ContactRow) {
        assert!(j < self.contacts.len(), "replace_contact: no row {j}");
        let a = self.num_cloth_rows() + j;
        self.z[a] = 0.0;
        self.contacts[j] = row;
    }

    /// The multipliers / residuals `z = (r, λ)` of the last solve (cloth rows, then contacts).
    #[must_use]
    pub fn multipliers(&self) -> &[f64] {
        &self.z[..self.num_cloth_rows() + self.contacts.len()]
    }

    /// Forgets the warm start (a teleport, a reset).
    pub fn reset_warm_start(&mut self) {
        self.z.iter_mut().for_each(|z| *z = 0.0);
    }

    /// Projects: `x` holds the start iterate `x⁽⁰⁾` on entry and the result on return;
    /// `x_target` is `x̃`; `inv_mass[v] = w_v` (0 pins a vertex at `x̃_v`).
    ///
    /// Wang 2012 eq. 3.25 / 3.30 iterated as in `docs/methods/isometric-model.md §A13`; see the
    /// module doc for the stopping test. `should_stop` is the deadline, asked before every
    /// Gauss–Newton iteration and inside every PCG. Allocates nothing.
    ///
    /// # Panics
    /// If the families differ in number or size from those given to
    /// [`GaussNewtonProjection::new`], or a slice is not one entry per vertex.
    pub fn project(
        &mut self,
        families: &[RowFamily<'_>],
        x_target: &[DVec3],
        inv_mass: &[f64],
        settings: &ProjectionSettings,
        x: &mut [DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> ProjectionReport {
        self.project_impl(families, x_target, inv_mass, settings, None, x, should_stop)
    }

    /// [`GaussNewtonProjection::project`] with contact rows that follow the obstacles: before
    /// every Gauss–Newton iteration each unilateral normal row whose vertex `geometry` finds
    /// near an obstacle is re-linearised at the iterate (`n · x ≥ n · p + η` on the current
    /// closest feature, Wang 2012 eq. 3.26 as an inequality), and the active set is updated at
    /// every iteration (a released row whose vertex is behind its plane is taken, an active
    /// row whose multiplier pulls is released; each row changes at most
    /// `MAX_CONTACT_TOGGLES` times a call, so the set cannot cycle). The tangential rows that
    /// follow a normal row keep their directions (friction, eq. 3.28, soft).
    ///
    /// # Panics
    /// As [`GaussNewtonProjection::project`].
    #[allow(clippy::too_many_arguments)]
    pub fn project_in_contact(
        &mut self,
        families: &[RowFamily<'_>],
        x_target: &[DVec3],
        inv_mass: &[f64],
        settings: &ProjectionSettings,
        geometry: &dyn ContactGeometry,
        x: &mut [DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> ProjectionReport {
        self.project_impl(
            families,
            x_target,
            inv_mass,
            settings,
            Some(geometry),
            x,
            should_stop,
        )
    }

    /// Re-linearises the unilateral normal rows at `x` ([`Self::project_in_contact`]).
    /// A normal row's tangential rows (the non-unilateral rows that follow it on its vertex)
    /// take the completion of its new normal and the anchor's tangential coordinates when the
    /// geometry gives an anchor ([`ContactGeometry::anchor`]).
    fn relinearise_contacts(&mut self, geometry: &dyn ContactGeometry, x: &[DVec3]) {
        // The re-linearised normal row that governs the rows after it: vertex, tangents,
        // anchor, and which tangent comes next.
        let mut owner: Option<(u32, [DVec3; 2], DVec3, usize)> = None;
        for c in &mut self.contacts {
            if c.unilateral {
                owner = None;
                if let Some((n, target)) = geometry.plane(c.vertex, x[c.vertex as usize]) {
                    c.direction = n;
                    c.target = target;
                    if let Some(a) = geometry.anchor(c.vertex) {
                        let (t1, t2) = n.any_orthonormal_pair();
                        owner = Some((c.vertex, [t1, t2], a, 0));
                    }
                }
            } else if let Some((v, t, a, k)) = owner.as_mut() {
                if *v == c.vertex && *k < 2 {
                    c.direction = t[*k];
                    c.target = t[*k].dot(*a);
                    *k += 1;
                } else {
                    owner = None;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn project_impl(
        &mut self,
        families: &[RowFamily<'_>],
        x_target: &[DVec3],
        inv_mass: &[f64],
        settings: &ProjectionSettings,
        geometry: Option<&dyn ContactGeometry>,
        x: &mut [DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> ProjectionReport {
        let nv = self.num_vertices;
        assert!(
            x_target.len() == nv && inv_mass.len() == nv && x.len() == nv,
            "project: slices must have one entry per vertex"
        );
        assert_eq!(
            families.len() + 1,
            self.topo.family_rows.len(),
            "project: families"
        );
        for (i, f) in families.iter().enumerate() {
            assert_eq!(
                f.set.len(),
                self.topo.family_rows[i + 1] - self.topo.family_rows[i],
                "project: family {i} changed size"
            );
        }
        let cloth_rows = self.num_cloth_rows();
        let self_base = cloth_rows + self.contacts.len();
        // The base-edge rows follow the self-contact rows; they are in the system only while
        // one of them is held (`rows_in_system`).
        let base_at = self_base + self.self_rows.len();
        self.edges_on = settings.base_edge_rows == BaseEdgeRowsKind::Band && !self.edges.is_empty();
        let mut report = ProjectionReport::default();

        // D per row, fixed for the call.
        for (i, f) in families.iter().enumerate() {
            f.role.fill_diagonal(
                &mut self.diag[self.topo.family_rows[i]..self.topo.family_rows[i + 1]],
            );
        }
        if let LinearSolver::Cholesky { ordering, threads } = settings.solver {
            self.ensure_cholesky(ordering, threads);
            self.ensure_augmented(ordering, threads);
        }
        if let Some(g) = geometry {
            self.relinearise_contacts(g, x);
        }
        self.relinearise_self_rows(x);
        self.z[self_base..base_at].fill(0.0);
        if self.edges_on {
            let r = base_at..base_at + self.edges.len();
            self.z[r.clone()].fill(0.0);
            self.z_total[r.clone()].fill(0.0);
            self.edges.start(x, settings.tolerance);
            self.edges.diagonal(inv_mass, &mut self.diag[r]);
        }
        let mut rows = self.rows_in_system(base_at);
        self.start_active_set(x, settings);
        self.contact_toggles.fill(0);
        self.self_toggles.fill(0);
        self.refresh_contact_diagonal();
        // At least one solve when soft or residual rows exist: a feasible start is not the
        // minimiser then.
        let min_solves = u32::from(
            families.iter().any(|f| f.role.any_soft())
                || self.contacts.iter().any(|c| c.compliance > 0.0)
                || self.self_rows.iter().any(|r| r.tangent != 0),
        );
        // Constant gradients once.
        for (i, f) in families.iter().enumerate() {
            if f.linear {
                let g = &mut self.gradients
                    [self.topo.family_entries[i]..self.topo.family_entries[i + 1]];
                f.set.gradients(x, g);
            }
        }

        // Phase 2 (fast projection) state: whether it runs, and the violation before the last
        // iteration (the stall test).
        let mut fast = false;
        let mut previous = f64::INFINITY;
        // The violation at `x` when the backtracking of phase 2 already evaluated it.
        let mut evaluated: Option<f64> = None;
        // The best iterate so far (the budget keeps it: an unconverged call returns it).
        let mut best_violation = f64::INFINITY;
        // Whether the last solve used the numeric factor (the self-stress filter needs it).
        let mut last_direct = false;
        loop {
            // C(x⁽ˢ⁾) and the stopping test.
            report.max_violation = match evaluated.take() {
                Some(v) => v,
                None => {
                    self.evaluate(families, x);
                    self.max_violation(families, settings, x)
                }
            };
            if report.max_violation < best_violation {
                best_violation = report.max_violation;
                self.best.copy_from_slice(x);
            }
            if report.max_violation <= settings.tolerance && report.iterations >= min_solves {
                // Converged on this active set: its multipliers are those of the solution, so
                // this is where the set is updated; a change means more iterations.
                let set = self.update_active_set(x, fast, true, settings);
                report.released_contacts = set.inactive;
                // The base-edge rows' set does not have to settle: an iterate at which every
                // base edge is within the tolerance meets what the rows are for, and their set
                // then changes only inside that band (`crate::integrate::base_edge_rows`).
                let edges_met = !self.edges_on || self.edges.max_strain(x) <= settings.tolerance;
                if !set.changed && edges_met {
                    report.converged = true;
                    break;
                }
                if !edges_met {
                    self.update_edges(x, inv_mass, fast);
                }
                rows = self.rows_in_system(base_at);
                self.evaluate(families, x);
                report.max_violation = self.max_violation(families, settings, x);
            }
            if !report.max_violation.is_finite() {
                report.linear_solve_failed = true;
                break;
            }
            if report.iterations >= settings.max_iterations {
                break;
            }
            if should_stop() {
                report.interrupted = true;
                break;
            }
            if !fast
                && settings.gauss_newton_iterations != u32::MAX
                && report.iterations >= min_solves.max(1)
                && report.max_violation <= settings.fast_projection_below
                && (report.iterations >= settings.gauss_newton_iterations
                    || report.max_violation > 0.5 * previous)
            {
                // Switch: the multipliers so far are kept as totals, phase 2 solves for
                // increments (warm start 0).
                fast = true;
                self.z_total[..rows].copy_from_slice(&self.z[..rows]);
                self.z[..rows].fill(0.0);
            }
            previous = report.max_violation;
            if geometry.is_some() || !self.self_rows.is_empty() {
                // Contacts follow the obstacles and the cloth itself: rows at the iterate's
                // closest features, the active set updated at every iteration.
                if let Some(g) = geometry {
                    self.relinearise_contacts(g, x);
                }
                self.relinearise_self_rows(x);
                let set = self.update_active_set(x, fast, false, settings);
                report.released_contacts = set.inactive;
                self.evaluate(families, x);
            }
            // The base-edge rows' active set at every iteration (they follow the cloth).
            if self.update_edges(x, inv_mass, fast) {
                rows = self.rows_in_system(base_at);
            }
            // Step control; the line search compares with the violation of the iterate with
            // this iteration's rows (a bound alone does not read it).
            let step_control =
                !fast && (settings.line_search || settings.step_bound < f64::INFINITY);
            let v_from = if step_control && settings.line_search {
                self.max_violation(families, settings, x)
            } else {
                0.0
            };
            for (i, f) in families.iter().enumerate() {
                if !f.linear {
                    let g = &mut self.gradients
                        [self.topo.family_entries[i]..self.topo.family_entries[i + 1]];
                    f.set.gradients(x, g);
                }
            }
            let edges_in = rows > base_at;
            if edges_in {
                self.edges.relinearise(x);
                if let LinearSolver::Cholesky { ordering, threads } = settings.solver {
                    self.ensure_banded(ordering, threads);
                }
            }
            if fast {
                self.freeze_residual_rows(families);
                // Target: the current iterate (Wang 2012 eq. 3.14 from x⁽ˢ⁾), no majorizer.
                self.model_hessian(false, x, inv_mass, x);
            } else {
                self.model_hessian(settings.curvature_majorizer, x_target, inv_mass, x);
            }
            let GaussNewtonProjection {
                topo,
                gradients,
                values,
                diag,
                rhs,
                z,
                u,
                contacts,
                contact_active,
                pcg,
                k_cloth,
                ic,
                ic_age,
                ic_first_cg,
                ic_last_cg,
                w_eff,
                x_hat,
                cholesky,
                reduction,
                contact_push,
                group_stamp,
                stamp,
                direct_times,
                self_rows,
                self_active,
                augmented,
                edges,
                banded,
                reuse_rhs,
                reuse_state,
                step_from,
                z_from,
                ..
            } = self;
            let (inv_mass, x_target) = (&w_eff[..], &x_hat[..]);
            let mut op = KOperator {
                topo,
                gradients,
                diag: &diag[..rows],
                contacts,
                active: contact_active,
                selfs: self_rows,
                self_active,
                edges: edges_in.then_some(&*edges),
                inv_mass,
                u,
            };
            op.build_rhs(&values[..rows], x_target, x, &mut rhs[..rows]);
            if !fast {
                // Proximal rows: `+ D λ⁻`, the warm start still in `z` (RowRole::Proximal).
                for (i, f) in families.iter().enumerate() {
                    if let RowRole::Proximal(_) = f.role {
                        for a in topo.family_rows[i]..topo.family_rows[i + 1] {
                            rhs[a] += diag[a] * z[a];
                        }
                    }
                }
            }
            let z = &mut z[..rows];
            if step_control {
                step_from.copy_from_slice(x);
                z_from[..rows].copy_from_slice(z);
            }
            let direct = match (settings.solver, cholesky.as_mut()) {
                (LinearSolver::Pcg, _) => false,
                (LinearSolver::Cholesky { .. }, None) => {
                    report.direct_fallbacks += 1;
                    false
                }
                (LinearSolver::Cholesky { .. }, Some(chol)) => {
                    *stamp = stamp.wrapping_add(1);
                    if *stamp == 0 {
                        group_stamp.fill(0);
                        *stamp = 1;
                    }
                    let mut scratch = DirectScratch {
                        chol,
                        k: k_cloth,
                        reduction,
                        push: contact_push,
                        group_stamp,
                        stamp: *stamp,
                        times: direct_times,
                        augmented: if edges_in {
                            banded.as_deref_mut()
                        } else {
                            augmented.as_deref_mut()
                        },
                        reuse: (settings.factor_reuse.max_iterations > 0).then_some(Reuse {
                            settings: settings.factor_reuse,
                            pcg: &mut *pcg,
                            rhs: reuse_rhs,
                            state: reuse_state,
                        }),
                    };
                    let ok = solve_direct(&mut op, &rhs[..rows], &mut scratch, z);
                    report.direct_solves += u32::from(ok);
                    report.direct_fallbacks += u32::from(!ok);
                    if !ok {
                        // PCG starts from the warm start, not from a failed solve.
                        z.fill(0.0);
                    }
                    ok
                }
            };
            // The self-stress filter factors the system without the base-edge rows.
            last_direct = direct && !fast && !edges_in;
            let cg = if direct {
                PcgReport {
                    converged: true,
                    ..PcgReport::default()
                }
            } else {
                match settings.preconditioner {
                    Preconditioner::Jacobi => {
                        solve_scalar_pcg(&mut op, &rhs[..rows], &settings.cg, pcg, z, &mut |_| {
                            should_stop()
                        })
                    }
                    Preconditioner::IncompleteCholesky => {
                        // A factor of an earlier `K` is still a symmetric positive definite
                        // preconditioner (only its strength fades as `K` moves on): refactor
                        // every IC_MAX_AGE solves, or once the last solve needed more than 1.5
                        // times the iterations of the first one with this factor (plus 4). Decided
                        // on iteration counts only, so deterministic.
                        let refactor =
                            *ic_age >= IC_MAX_AGE || 2 * *ic_last_cg > 3 * *ic_first_cg + 8;
                        if refactor {
                            k_cloth.assemble(gradients, inv_mass, &diag[..cloth_rows]);
                            ic.factor(k_cloth);
                            *ic_age = 0;
                        }
                        let ic = &*ic;
                        let d = &diag[..rows];
                        let active = &contact_active[..];
                        let (selfs, self_on) = (&self_rows[..], &self_active[..]);
                        let mut precond = |r: &[f64], s: &mut [f64]| {
                            ic.solve(&r[..cloth_rows], &mut s[..cloth_rows]);
                            for (j, c) in contacts.iter().enumerate() {
                                let a = cloth_rows + j;
                                let kaa = inv_mass[c.vertex as usize]
                                    * c.effective_direction(active[j]).length_squared()
                                    + d[a];
                                s[a] = if kaa > 0.0 { r[a] / kaa } else { 0.0 };
                            }
                            for (k, c) in selfs.iter().enumerate() {
                                let a = self_base + k;
                                let kaa = self_row_kaa(c, self_on[k], inv_mass) + d[a];
                                s[a] = if kaa > 0.0 { r[a] / kaa } else { 0.0 };
                            }
                            if edges_in {
                                for k in 0..edges.len() {
                                    let a = base_at + k;
                                    let kaa = edges.kaa(k, inv_mass) + d[a];
                                    s[a] = if kaa > 0.0 { r[a] / kaa } else { 0.0 };
                                }
                            }
                        };
                        let cg = solve_scalar_pcg_with(
                            &mut op,
                            &mut precond,
                            &rhs[..rows],
                            &settings.cg,
                            pcg,
                            z,
                            &mut |_| should_stop(),
                        );
                        if refactor {
                            *ic_first_cg = cg.iterations;
                        }
                        *ic_last_cg = cg.iterations;
                        *ic_age += 1;
                        cg
                    }
                }
            };
            report.cg_iterations += cg.iterations;
            report.cg_max_iterations = report.cg_max_iterations.max(cg.iterations);
            report.cg_unconverged += u32::from(!cg.converged);
            report.cg_max_residual = report.cg_max_residual.max(cg.relative_residual);
            report.cg_relative_residual = cg.relative_residual;
            report.iterations += 1;
            report.fast_projection_iterations += u32::from(fast);
            if cg.indefinite || !cg.relative_residual.is_finite() {
                report.linear_solve_failed = true;
            }
            // x⁽ˢ⁺¹⁾ = x̂ − W Gᵀ z (Wang 2012 eq. 3.23, first row; x̂ = x̃, or x⁽ˢ⁾ in phase 2).
            op.scatter(z);
            let u = &*op.u;
            reduce::for_each_chunk(&mut *x, |first, chunk: &mut [DVec3]| {
                for (k, xi) in chunk.iter_mut().enumerate() {
                    *xi = x_target[first + k] - u[first + k];
                }
            });
            if step_control {
                self.control_step(families, settings, v_from, rows, x);
            }
            if fast {
                // Backtracking on the violation: far from the manifold (an edge near zero
                // length flips its direction) the full step can overshoot.
                let mut alpha = 1.0;
                for _ in 0..4 {
                    self.evaluate(families, x);
                    let v = self.max_violation(families, settings, x);
                    if v < previous {
                        evaluated = Some(v);
                        break;
                    }
                    alpha *= 0.5;
                    let (u, x_hat) = (&self.u, &self.x_hat);
                    reduce::for_each_chunk(&mut *x, |first, chunk: &mut [DVec3]| {
                        for (k, xi) in chunk.iter_mut().enumerate() {
                            *xi = x_hat[first + k] - alpha * u[first + k];
                        }
                    });
                }
                for (t, &dz) in self.z_total[..rows].iter_mut().zip(&self.z[..rows]) {
                    *t += alpha * dz;
                }
                self.z[..rows].fill(0.0);
            }
        }
        if fast {
            // The warm start of the next call and `multipliers()`: the totals.
            self.z[..rows].copy_from_slice(&self.z_total[..rows]);
        }
        let filter = match settings.self_stress_filter {
            SelfStressFilter::Off => false,
            SelfStressFilter::AfterConvergence => report.converged,
            SelfStressFilter::Always => true,
        };
        if filter && last_direct {
            report.self_stress_filtered = self.filter_self_stress(families);
        }
        if self.edges_on {
            report.held_base_edges = self.edges.held() as u32;
        }
        // The last iterate is kept unless the iteration diverged: it ends non-finite or more
        // than `DIVERGED_FACTOR` times the best violation it reached (and over the tolerance;
        // violations below `ROUND_OFF_VIOLATION` are rounding noise).
        let over = report.max_violation.is_nan()
            || (report.max_violation > settings.tolerance.max(ROUND_OFF_VIOLATION)
                && report.max_violation > DIVERGED_FACTOR * best_violation);
        if !report.converged && over && best_violation < report.max_violation.min(f64::MAX) {
            // The iteration diverged within its budget: the best iterate, not the last one.
            // The multipliers stay those of the last solve (a warm start only).
            x.copy_from_slice(&self.best);
            report.max_violation = best_violation;
            report.kept_best = true;
        }
        report
    }

    /// Shortens the Gauss–Newton step from `step_from` to the full step's end `x`
    /// (`docs/methods/isometric-model.md` §A25): to at most `step_bound` for the longest node
    /// move, then, with `line_search`, halved (at most `LINE_SEARCH_HALVINGS` times) until
    /// its largest scaled violation is at most `max(2 v_from, tolerance)`, keeping the
    /// fraction with the smallest violation. The multipliers go the same fraction of the way
    /// from `z_from`. Allocates nothing.
    fn control_step(
        &mut self,
        families: &[RowFamily<'_>],
        settings: &ProjectionSettings,
        v_from: f64,
        rows: usize,
        x: &mut [DVec3],
    ) {
        self.step_full.copy_from_slice(x);
        let step = self
            .step_full
            .iter()
            .zip(&self.step_from)
            .fold(0.0f64, |a, (p, q)| a.max((*p - *q).length()));
        let mut alpha: f64 = if step > settings.step_bound {
            settings.step_bound / step
        } else {
            1.0
        };
        let accept = (LINE_SEARCH_GROWTH * v_from).max(settings.tolerance);
        let mut best = (f64::INFINITY, alpha);
        let mut halvings = 0;
        loop {
            interpolate(&self.step_from, &self.step_full, alpha, x);
            if !settings.line_search {
                break;
            }
            self.evaluate(families, x);
            let v = self.max_violation(families, settings, x);
            if v < best.0 {
                best = (v, alpha);
            }
            if v <= accept || halvings >= LINE_SEARCH_HALVINGS {
                break;
            }
            halvings += 1;
            alpha *= 0.5;
        }
        if settings.line_search && best.1 != alpha {
            alpha = best.1;
            interpolate(&self.step_from, &self.step_full, alpha, x);
        }
        if alpha < 1.0 {
            for (z, z0) in self.z[..rows].iter_mut().zip(&self.z_from[..rows]) {
                *z = z0 + alpha * (*z - z0);
            }
        }
    }

    /// Takes the self-stress out of the multipliers of the proximal cloth rows
    /// ([`SelfStressFilter`]): `λ ← λ − K̄⁻¹ D λ` on those rows, with the factor of the last
    /// solve. The contact and self-contact rows start every projection at 0 and are left as
    /// they are. Returns whether the multipliers changed (not when there is no factor or the
    /// result is not finite). Allocates nothing.
    ///
    /// The right-hand side `D λ` is zero on the one-vertex contact rows, so their elimination
    /// leaves it unchanged and the reduced system `K̄` is solved as it stands.
    fn filter_self_stress(&mut self, families: &[RowFamily<'_>]) -> bool {
        let cloth = self.num_cloth_rows();
        let n = cloth + self.self_rows.len();
        let chol = if self.self_rows.is_empty() {
            self.cholesky.as_mut()
        } else {
            self.augmented.as_deref_mut().and_then(|a| a.chol.as_mut())
        };
        let Some(chol) = chol.filter(|c| c.is_factored()) else {
            return false;
        };
        let y = &mut self.rhs[..n];
        y.fill(0.0);
        let mut any = false;
        for (i, f) in families.iter().enumerate() {
            if let RowRole::Proximal(_) = f.role {
                let r = self.topo.family_rows[i]..self.topo.family_rows[i + 1];
                for ((y, d), z) in y[r.clone()]
                    .iter_mut()
                    .zip(&self.diag[r.clone()])
                    .zip(&self.z[r])
                {
                    *y = d * z;
                    any |= *y != 0.0;
                }
            }
        }
        if !any {
            return false;
        }
        chol.solve_in_place(y);
        if !y.iter().all(|v| v.is_finite()) {
            return false;
        }
        for (z, y) in self.z[..cloth].iter_mut().zip(&y[..cloth]) {
            *z -= y;
        }
        true
    }

    /// Phase 2 of [`GaussNewtonProjection::project`]: the residual rows (the potential) are
    /// frozen at their phase-1 values: their gradients and values are zeroed, so their rows of
    /// `K` read `z = 0` and their increment is 0. Constraint rows, hard or soft, and contact
    /// rows stay. Called after the gradients of the iteration are computed.
    fn freeze_residual_rows(&mut self, families: &[RowFamily<'_>]) {
        for (i, f) in families.iter().enumerate() {
            if f.role != RowRole::Residual {
                continue;
            }
            let e = self.topo.family_entries[i]..self.topo.family_entries[i + 1];
            self.gradients[e].fill(DVec3::ZERO);
            self.values[self.topo.family_rows[i]..self.topo.family_rows[i + 1]].fill(0.0);
        }
    }

    /// The diagonal model Hessian and target of this iteration (`w_eff`, `x_hat`).
    ///
    /// Gauss–Newton drops the constraint curvature `Σ_a λ_a ∇²C_a` from the Hessian of the
    /// Lagrangian (`docs/methods/isometric-model.md §A13`); the iteration `x⁽ˢ⁺¹⁾ = x̃ − W Gᵀ z`
    /// then converges only while that term is small against `M`, i.e. while `|λ_a| / ℓ_a ≲ m` on
    /// distance rows. A hanging sheet breaks this: the top rows carry the weight of the sheet,
    /// `|λ|/(ℓ m)` grows like the number of nodes below, and the iterates oscillate with growing
    /// strain. **Choice** (not in the thesis): add the proximal term `½ ‖x − x⁽ˢ⁾‖²_Γ` with the
    /// diagonal `Γ_v = Σ_{a ∋ v} 2|λ_a| / ℓ_a`, a Gershgorin upper bound of the curvature of the
    /// distance rows at `v` (`∇²C_a = P_a/ℓ_a` on the pair, `P_a = I − u uᵀ`), with `λ` the
    /// warm start (previous iteration or step). The model Hessian `M + Γ` stays diagonal, so
    /// the step is the same solve with `w' = 1/(m + Γ)` and target
    /// `x̂ = (m x̃ + Γ x⁽ˢ⁾)/(m + Γ)`; the term vanishes at a fixed point `x⁽ˢ⁺¹⁾ = x⁽ˢ⁾`, so the
    /// converged positions are those of eq. 3.25. A distance row is recognised by its stencil:
    /// two vertices with opposite unit gradients (`‖x_i − x_j‖ − d`, eq. 3.1); a linear row of
    /// that shape would only get a needless (and harmless) majorizer.
    fn model_hessian(&mut self, on: bool, x_target: &[DVec3], inv_mass: &[f64], x: &[DVec3]) {
        let w_eff = &mut self.w_eff;
        let x_hat = &mut self.x_hat;
        w_eff.copy_from_slice(inv_mass);
        x_hat.copy_from_slice(x_target);
        if !on {
            return;
        }
        // Γ accumulated into `u` (scratch, overwritten by the solve), rows in order.
        let gamma = &mut self.u;
        gamma.iter_mut().for_each(|g| *g = DVec3::ZERO);
        let t = &self.topo;
        for a in 0..t.num_cloth_rows() {
            let (e0, e1) = (
                t.stencil_offsets[a] as usize,
                t.stencil_offsets[a + 1] as usize,
            );
            if e1 != e0 + 2 || self.z[a] == 0.0 {
                continue;
            }
            let (g0, g1) = (self.gradients[e0], self.gradients[e0 + 1]);
            if (g0 + g1).length_squared() > 1e-20 || (g0.length_squared() - 1.0).abs() > 1e-9 {
                continue;
            }
            let (v0, v1) = (
                t.stencil_vertices[e0] as usize,
                t.stencil_vertices[e0 + 1] as usize,
            );
            let l = (x[v0] - x[v1]).length();
            if l > 0.0 {
                let c = 2.0 * self.z[a].abs() / l;
                gamma[v0].x += c;
                gamma[v1].x += c;
            }
        }
        for v in 0..w_eff.len() {
            let g = gamma[v].x;
            if inv_mass[v] > 0.0 && g > 0.0 {
                let m = 1.0 / inv_mass[v];
                w_eff[v] = 1.0 / (m + g);
                x_hat[v] = (m * x_target[v] + g * x[v]) / (m + g);
            }
        }
    }

    /// Re-linearises the self-contact rows at `x`: each normal row at the closest point of
    /// its triangle ([`SelfContactRow::relinearise`]), each tangential row on the new normal of
    /// its normal row, which precedes it in the pool.
    fn relinearise_self_rows(&mut self, x: &[DVec3]) {
        for k in 0..self.self_rows.len() {
            let tangent = usize::from(self.self_rows[k].tangent);
            if tangent == 0 {
                self.self_rows[k].relinearise(x);
            } else {
                let n = self.self_rows[k - tangent].normal;
                self.self_rows[k].follow(n);
            }
        }
    }

    /// `values = C(x)` for every family and contact row.
    fn evaluate(&mut self, families: &[RowFamily<'_>], x: &[DVec3]) {
        for (i, f) in families.iter().enumerate() {
            let r = self.topo.family_rows[i]..self.topo.family_rows[i + 1];
            f.set.evaluate(x, &mut self.values[r]);
        }
        let base = self.topo.num_cloth_rows();
        for ((c, v), &on) in self
            .contacts
            .iter()
            .zip(&mut self.values[base..])
            .zip(&self.contact_active)
        {
            *v = if on {
                c.direction.dot(x[c.vertex as usize]) - c.target
            } else {
                0.0
            };
        }
        let base = base + self.contacts.len();
        for ((r, v), &on) in self
            .self_rows
            .iter()
            .zip(&mut self.values[base..])
            .zip(&self.self_active)
        {
            *v = if on { r.value(x) } else { 0.0 };
        }
        if self.edges_on {
            let base = base + self.self_rows.len();
            self.edges
                .values(x, &mut self.values[base..base + self.edges.len()]);
        }
    }

    /// `D` of the contact rows: the row's compliance while active; 1 while released, so that
    /// its row of `K` reads `z_a = 0` (its direction counts as zero, its right-hand side is 0).
    fn refresh_contact_diagonal(&mut self) {
        let base = self.topo.num_cloth_rows();
        for ((c, d), &on) in self
            .contacts
            .iter()
            .zip(&mut self.diag[base..])
            .zip(&self.contact_active)
        {
            *d = if on { c.compliance.max(0.0) } else { 1.0 };
        }
        let base = base + self.contacts.len();
        for ((r, d), &on) in self
            .self_rows
            .iter()
            .zip(&mut self.diag[base..])
            .zip(&self.self_active)
        {
            *d = if on { r.compliance } else { 1.0 };
        }
    }

    /// The active set at the start iterate `x⁽⁰⁾`: a speculative unilateral normal row
    /// ([`ContactRow::speculative`]) starts released when its vertex lies strictly in front of
    /// its plane (`n · x⁽⁰⁾ >` the row's target), active when it is on or behind it (a node
    /// already closer than the thickness to the collider is pushed out), and is taken when
    /// the vertex reaches it
    /// (**choice**, not in the thesis); the rows that follow it on the same vertex (its
    /// tangents) start as it does; every other row starts active. With
    /// [`ActiveSetRule::EveryIteration`] "on its plane" means within the stopping test's band
    /// `tolerance · contact_length` in front of it: a node that an earlier projection left on
    /// its plane within the tolerance, or that slid on a curved collider since its row was
    /// linearised, starts held (`docs/methods/isometric-contact.md` §2).
    fn start_active_set(&mut self, x: &[DVec3], settings: &ProjectionSettings) {
        let band = match settings.active_set {
            ActiveSetRule::TakeAtConvergence => 0.0,
            ActiveSetRule::EveryIteration => settings.tolerance * settings.contact_length,
        };
        let mut owner: Option<(u32, bool)> = None;
        for (c, active) in self.contacts.iter().zip(&mut self.contact_active) {
            *active = if c.unilateral {
                let on = !c.speculative || c.direction.dot(x[c.vertex as usize]) <= c.target + band;
                owner = Some((c.vertex, on));
                on
            } else {
                match owner {
                    Some((v, on)) if v == c.vertex => on,
                    _ => true,
                }
            };
        }
        // A self-contact row starts active when its node is within the required distance; its
        // tangential rows start as it does.
        for k in 0..self.self_rows.len() {
            let r = &self.self_rows[k];
            self.self_active[k] = if r.tangent == 0 {
                r.value(x) <= 0.0
            } else {
                self.self_active[k - usize::from(r.tangent)]
            };
        }
    }

    /// The active set of the unilateral contact rows ([`ContactRow::unilateral`]) at a point
    /// that met the stopping test on the current set: a normal row whose multiplier pulls its
    /// vertex towards the obstacle
    /// (`λ_a > 0`: the row's force on the vertex is `−λ_a n`, and `n` points away from the
    /// obstacle) is released with its tangents, its multipliers set to 0; a released row whose
    /// vertex has moved behind its plane (`n · x_p < n · x_c`) is taken back. Each row changes
    /// at most twice per projection, so the set cannot cycle. In the fast-projection phase the
    /// set is frozen: its accumulated multipliers are not those of the step's problem (its
    /// target is the iterate, not `x̃`). **Choice** (not in the thesis,
    /// whose eq. 3.26 is an equality): with equality rows the projection
    /// holds every vertex the collision stage moved at its collided height, so a stiff shell
    /// keeps the dent that stopping its lowest vertices made, and the bending energy of that
    /// dent comes back as a bounce (measured on shell-stiff: the total energy grew from
    /// 1.2 · 10⁵ J to 10⁷ J in 40 frames).
    ///
    /// `take = false` (every Gauss–Newton iteration of
    /// [`GaussNewtonProjection::project_in_contact`]): pulling rows are released, and a
    /// released row is taken only if it has not changed in this call yet (a speculative row
    /// whose vertex reached its plane); a row released for pulling comes back only with
    /// `take = true`, at convergence (`docs/methods/isometric-contact.md` §2).
    ///
    /// With [`ActiveSetRule::EveryIteration`] `take` is not read for the unilateral contact
    /// rows: a released row that has changed before is taken at any iteration where its vertex
    /// lies behind its plane by more than `tolerance · contact_length` (within that band the
    /// stopping test would call it met), even when its changes are spent; it then stays
    /// active, since it can no longer be released. So no call ends with a released contact
    /// row behind its plane beyond the band, and a row changes at most
    /// `MAX_CONTACT_TOGGLES + 1` times. The self-contact rows keep the default rule.
    fn update_active_set(
        &mut self,
        x: &[DVec3],
        fast: bool,
        take: bool,
        settings: &ProjectionSettings,
    ) -> ActiveSet {
        let every = settings.active_set == ActiveSetRule::EveryIteration;
        let band = settings.tolerance * settings.contact_length;
        // Whether a released row with `toggles` changes and value `g` (negative behind its
        // plane) is taken, under `ActiveSetRule::EveryIteration` (`every`) or the default.
        let taken = |every: bool, toggles: u8, g: f64| {
            if every {
                if toggles == 0 { g < 0.0 } else { g < -band }
            } else {
                toggles < MAX_CONTACT_TOGGLES && (take || toggles == 0) && g < 0.0
            }
        };
        let base = self.topo.num_cloth_rows();
        let mut out = ActiveSet::default();
        // The normal row governing the rows that follow it on the same vertex.
        let mut owner: Option<(u32, bool)> = None;
        for j in 0..self.contacts.len() {
            let c = self.contacts[j];
            let a = base + j;
            let was = self.contact_active[j];
            let now = if c.unilateral {
                let lambda = self.z[a];
                let toggles = self.contact_toggles[j];
                let now = if fast {
                    was
                } else if was {
                    toggles >= MAX_CONTACT_TOGGLES || lambda <= 0.0
                } else {
                    taken(
                        every,
                        toggles,
                        c.direction.dot(x[c.vertex as usize]) - c.target,
                    )
                };
                owner = Some((c.vertex, now));
                now
            } else {
                match owner {
                    Some((v, on)) if v == c.vertex => on,
                    _ => was,
                }
            };
            if now != was {
                self.contact_active[j] = now;
                self.contact_toggles[j] = self.contact_toggles[j].saturating_add(1);
                self.z[a] = 0.0;
                self.z_total[a] = 0.0;
                out.changed = true;
            }
            out.inactive += u32::from(c.unilateral && !now);
        }
        // Self-contact rows: the default rules of the unilateral normal rows.
        let base = base + self.contacts.len();
        for k in 0..self.self_rows.len() {
            let a = base + k;
            let was = self.self_active[k];
            let toggles = self.self_toggles[k];
            let tangent = usize::from(self.self_rows[k].tangent);
            let now = if tangent != 0 {
                // A tangential row follows its normal row, updated just before it.
                self.self_active[k - tangent]
            } else if fast {
                was
            } else if was {
                toggles >= MAX_CONTACT_TOGGLES || self.z[a] <= 0.0
            } else {
                taken(false, toggles, self.self_rows[k].value(x))
            };
            if now != was {
                self.self_active[k] = now;
                self.self_toggles[k] = self.self_toggles[k].saturating_add(1);
                self.z[a] = 0.0;
                self.z_total[a] = 0.0;
                out.changed = true;
            }
            out.inactive += u32::from(!now && tangent == 0);
        }
        if out.changed {
            self.refresh_contact_diagonal();
        }
        out
    }

    /// Largest scaled violation over the tested rows (`docs/methods/isometric-model.md §A15`).
    fn max_violation(
        &self,
        families: &[RowFamily<'_>],
        settings: &ProjectionSettings,
        x: &[DVec3],
    ) -> f64 {
        let mut worst = 0.0f64;
        let mut take = |v: f64| {
            // NaN must win: `max` would drop it.
            if v.is_nan() || v > worst {
                worst = v;
            }
        };
        for (i, f) in families.iter().enumerate() {
            let c = &self.values[self.topo.family_rows[i]..self.topo.family_rows[i + 1]];
            match f.scale {
                StrainScale::Untested => {}
                StrainScale::Uniform(s) => c.iter().for_each(|v| take(v.abs() / s)),
                StrainScale::PerRow(s) => c.iter().zip(s).for_each(|(v, s)| take(v.abs() / s)),
            }
            if settings.test_monitored_strain && !matches!(f.scale, StrainScale::Untested) {
                take(f.set.monitored_strain(x));
            }
        }
        let base = self.topo.num_cloth_rows();
        for (c, v) in self.contacts.iter().zip(&self.values[base..]) {
            if c.compliance <= 0.0 {
                take(v.abs() / settings.contact_length);
            }
        }
        let base = base + self.contacts.len();
        for (r, v) in self.self_rows.iter().zip(&self.values[base..]) {
            // Tangential rows are soft: untested.
            if r.tangent == 0 {
                take(v.abs() / settings.contact_length);
            }
        }
        if self.edges_on {
            // A held base-edge row is met while its strain is within the tolerance (it is
            // held at half of it: `crate::integrate::base_edge_rows`).
            take(self.edges.max_held_strain(x));
        }
        worst
    }
}

/// `x = a + α (b − a)`, node by node.
fn interpolate(a: &[DVec3], b: &[DVec3], alpha: f64, x: &mut [DVec3]) {
    for ((xi, a), b) in x.iter_mut().zip(a).zip(b) {
        *xi = *a + alpha * (*b - *a);
    }
}

/// The stencil structure of the stacked rows and its transpose, fixed at creation.
#[derive(Clone, Debug)]
struct Stencils {
    /// Row offsets of each family into the stacked cloth rows (`families + 1`).
    family_rows: Vec<usize>,
    /// Stencil-entry offsets of each family (`families + 1`).
    family_entries: Vec<usize>,
    /// Global row `a` has stencil entries `stencil_offsets[a]..stencil_offsets[a + 1]`.
    stencil_offsets: Vec<u32>,
    /// Vertex of every stencil entry.
    stencil_vertices: Vec<u32>,
    /// Row of every stencil entry.
    entry_row: Vec<u32>,
    /// Transpose: vertex `v` has stencil entries `vertex_entries[vertex_offsets[v]..[v + 1]]`.
    vertex_offsets: Vec<u32>,
    vertex_entries: Vec<u32>,
}

impl Stencils {
    fn num_cloth_rows(&self) -> usize {
        *self.family_rows.last().expect("non-empty")
    }
}

/// The matrix-free `K = G W Gᵀ + D` of Wang 2012 eq. 3.25 / 3.30.
struct KOperator<'a> {
    topo: &'a Stencils,
    gradients: &'a [DVec3],
    diag: &'a [f64],
    contacts: &'a [ContactRow],
    /// Per contact row: active (a released row acts with a zero direction).
    active: &'a [bool],
    /// Self-contact rows, after the contact rows, and whether each is active.
    selfs: &'a [SelfContactRow],
    self_active: &'a [bool],
    /// Base-edge rows, after the self-contact rows, while one of them is held.
    edges: Option<&'a BaseEdgeRows>,
    inv_mass: &'a [f64],
    /// Scratch `W Gᵀ z` per vertex.
    u: &'a mut [DVec3],
}

impl KOperator<'_> {
    /// `u = W Gᵀ z`: a per-vertex gather over the transpose (fixed order), then the contact
    /// rows in pool order.
    fn scatter(&mut self, z: &[f64]) {
        let t = self.topo;
        let g = self.gradients;
        let w = self.inv_mass;
        reduce::for_each_chunk(&mut *self.u, |first, chunk: &mut [DVec3]| {
            for (k, ui) in chunk.iter_mut().enumerate() {
                let v = first + k;
                let mut acc = DVec3::ZERO;
                for &e in &t.vertex_entries
                    [t.vertex_offsets[v] as usize..t.vertex_offsets[v + 1] as usize]
                {
                    acc += g[e as usize] * z[t.entry_row[e as usize] as usize];
                }
                *ui = acc * w[v];
            }
        });
        let base = t.num_cloth_rows();
        for ((c, zc), &on) in self.contacts.iter().zip(&z[base..]).zip(self.active) {
            let v = c.vertex as usize;
            self.u[v] += c.effective_direction(on) * (zc * w[v]);
        }
        let base = base + self.contacts.len();
        for ((r, &zr), &on) in self.selfs.iter().zip(&z[base..]).zip(self.self_active) {
            for (v, g) in r.stencil().into_iter().zip(r.gradients(on)) {
                let v = v as usize;
                self.u[v] += g * (zr * w[v]);
            }
        }
        if let Some(edges) = self.edges {
            let base = base + self.selfs.len();
            for (k, &zr) in z[base..base + edges.len()].iter().enumerate() {
                for (v, g) in edges.stencil(k).into_iter().zip(edges.gradient(k)) {
                    let v = v as usize;
                    self.u[v] += g * (zr * w[v]);
                }
            }
        }
    }

    /// `rhs = C(x⁽ˢ⁾) + G (x̃ − x⁽ˢ⁾)` (= `G x̃ + d`, Wang 2012 eq. 3.25), masked to 0 on rows
    /// with `K_aa = 0` (all vertices pinned).
    #[allow(clippy::needless_range_loop)] // stencil entries index two parallel arrays
    fn build_rhs(&self, values: &[f64], x_target: &[DVec3], x: &[DVec3], rhs: &mut [f64]) {
        let t = self.topo;
        let g = self.gradients;
        let w = self.inv_mass;
        let cloth = t.num_cloth_rows();
        reduce::for_each_chunk(&mut rhs[..cloth], |first, chunk: &mut [f64]| {
            for (k, r) in chunk.iter_mut().enumerate() {
                let a = first + k;
                let mut acc = values[a];
                let mut kaa = self.diag[a];
                for e in t.stencil_offsets[a] as usize..t.stencil_offsets[a + 1] as usize {
                    let v = t.stencil_vertices[e] as usize;
                    acc += g[e].dot(x_target[v] - x[v]);
                    kaa += w[v] * g[e].length_squared();
                }
                *r = if kaa > 0.0 { acc } else { 0.0 };
            }
        });
        for (((c, r), (&val, &d)), &on) in self
            .contacts
            .iter()
            .zip(&mut rhs[cloth..])
            .zip(values[cloth..].iter().zip(&self.diag[cloth..]))
            .zip(self.active)
        {
            let v = c.vertex as usize;
            let n = c.effective_direction(on);
            let kaa = w[v] * n.length_squared() + d;
            *r = if kaa > 0.0 {
                val + n.dot(x_target[v] - x[v])
            } else {
                0.0
            };
        }
        let base = cloth + self.contacts.len();
        for (k, c) in self.selfs.iter().enumerate() {
            let a = base + k;
            let on = self.self_active[k];
            let kaa = self_row_kaa(c, on, w) + self.diag[a];
            let mut acc = values[a];
            for (v, g) in c.stencil().into_iter().zip(c.gradients(on)) {
                let v = v as usize;
                acc += g.dot(x_target[v] - x[v]);
            }
            rhs[a] = if kaa > 0.0 { acc } else { 0.0 };
        }
        if let Some(edges) = self.edges {
            let base = base + self.selfs.len();
            for k in 0..edges.len() {
                let a = base + k;
                let kaa = edges.kaa(k, w) + self.diag[a];
                let mut acc = values[a];
                for (v, g) in edges.stencil(k).into_iter().zip(edges.gradient(k)) {
                    let v = v as usize;
                    acc += g.dot(x_target[v] - x[v]);
                }
                rhs[a] = if kaa > 0.0 { acc } else { 0.0 };
            }
        }
    }
}

impl SymOperator for KOperator<'_> {
    fn len(&self) -> usize {
        self.diag.len()
    }

    fn apply(&mut self, z: &[f64], y: &mut [f64]) {
        self.scatter(z);
        let t = self.topo;
        let g = self.gradients;
        let u = &*self.u;
        let diag = self.diag;
        let cloth = t.num_cloth_rows();
        reduce::for_each_chunk(&mut y[..cloth], |first, chunk: &mut [f64]| {
            for (k, yi) in chunk.iter_mut().enumerate() {
                let a = first + k;
                let mut acc = diag[a] * z[a];
                for e in t.stencil_offsets[a] as usize..t.stencil_offsets[a + 1] as usize {
                    acc += g[e].dot(u[t.stencil_vertices[e] as usize]);
                }
                *yi = acc;
            }
        });
        for (j, c) in self.contacts.iter().enumerate() {
            let a = cloth + j;
            y[a] = c
                .effective_direction(self.active[j])
                .dot(u[c.vertex as usize])
                + diag[a] * z[a];
        }
        let base = cloth + self.contacts.len();
        for (k, c) in self.selfs.iter().enumerate() {
            let a = base + k;
            let mut acc = diag[a] * z[a];
            for (v, g) in c
                .stencil()
                .into_iter()
                .zip(c.gradients(self.self_active[k]))
            {
                acc += g.dot(u[v as usize]);
            }
            y[a] = acc;
        }
        if let Some(edges) = self.edges {
            let base = base + self.selfs.len();
            for k in 0..edges.len() {
                let a = base + k;
                let mut acc = diag[a] * z[a];
                for (v, g) in edges.stencil(k).into_iter().zip(edges.gradient(k)) {
                    acc += g.dot(u[v as usize]);
                }
                y[a] = acc;
            }
        }
    }

    fn diagonal(&self, out: &mut [f64]) {
        let t = self.topo;
        let g = self.gradients;
        let w = self.inv_mass;
        let cloth = t.num_cloth_rows();
        reduce::for_each_chunk(&mut out[..cloth], |first, chunk: &mut [f64]| {
            for (k, o) in chunk.iter_mut().enumerate() {
                let a = first + k;
                let mut acc = self.diag[a];
                for e in t.stencil_offsets[a] as usize..t.stencil_offsets[a + 1] as usize {
                    acc += w[t.stencil_vertices[e] as usize] * g[e].length_squared();
                }
                *o = acc;
            }
        });
        for (j, c) in self.contacts.iter().enumerate() {
            let a = cloth + j;
            out[a] = w[c.vertex as usize] * c.effective_direction(self.active[j]).length_squared()
                + self.diag[a];
        }
        let base = cloth + self.contacts.len();
        for (k, c) in self.selfs.iter().enumerate() {
            out[base + k] = self_row_kaa(c, self.self_active[k], w) + self.diag[base + k];
        }
        if let Some(edges) = self.edges {
            let base = base + self.selfs.len();
            for k in 0..edges.len() {
                out[base + k] = edges.kaa(k, w) + self.diag[base + k];
            }
        }
    }
}

/// `Σ_v w_v |∇_v C|²` of a self-contact row (its entry of `G W Gᵀ`).
fn self_row_kaa(r: &SelfContactRow, active: bool, inv_mass: &[f64]) -> f64 {
    r.stencil()
        .into_iter()
        .zip(r.gradients(active))
        .map(|(v, g)| inv_mass[v as usize] * g.length_squared())
        .sum()
}

/// Buffers of [`solve_direct`], borrowed from the projector.
struct DirectScratch<'a> {
    chol: &'a mut SparseCholesky,
    /// The cloth block's pattern, assembled here as `K̄`.
    k: &'a mut SymCsr,
    reduction: &'a mut [DMat3],
    push: &'a mut [DVec3],
    group_stamp: &'a mut [u32],
    stamp: u32,
    times: &'a mut DirectSolveTimes,
    /// The system with the self-contact rows, when there are any.
    augmented: Option<&'a mut Augmented>,
    /// PCG on the last factor first ([`FactorReuse`]), when on.
    reuse: Option<Reuse<'a>>,
}

/// What a solve by PCG on an earlier factor needs ([`FactorReuse`]).
struct Reuse<'a> {
    settings: FactorReuse,
    pcg: &'a mut ScalarPcgWorkspace,
    rhs: &'a mut [f64],
    state: &'a mut ReuseState,
}

/// The system [`solve_direct`] factors: the cloth block, or the cloth and self-contact rows
/// ([`Augmented`]), with the solution's storage.
struct ReducedSystem<'a> {
    k: &'a mut SymCsr,
    chol: &'a mut SparseCholesky,
    offsets: &'a [u32],
    vertices: &'a [u32],
    gradients: &'a [DVec3],
    diag: &'a [f64],
    z: &'a mut [f64],
}

/// One contact group: the rows `j0..j1` of the pool on one vertex (at most 3, contiguous).
/// Returns `(v, Nᵀ, B)`: the vertex, the directions as the columns of `Nᵀ` (a released row
/// counts as the zero direction, padding rows too) and `B = (w_v N Nᵀ + D)⁻¹` (a padding row,
/// or a row with `w_v |n|² + D = 0`, gets 1 on the diagonal and reads `λ = 0`).
fn contact_group(op: &KOperator<'_>, j0: usize, j1: usize) -> Option<(usize, DMat3, DMat3)> {
    let cloth = op.topo.num_cloth_rows();
    let v = op.contacts[j0].vertex as usize;
    let w = op.inv_mass[v];
    let mut cols = [DVec3::ZERO; 3];
    let mut d = [1.0; 3];
    for (k, j) in (j0..j1).enumerate() {
        cols[k] = op.contacts[j].effective_direction(op.active[j]);
        d[k] = op.diag[cloth + j];
    }
    let nt = DMat3::from_cols(cols[0], cols[1], cols[2]);
    let mut a = (nt.transpose() * nt) * w;
    for k in 0..3 {
        let akk = a.col(k)[k] + d[k];
        let akk = if akk > 0.0 { akk } else { 1.0 };
        let mut c = a.col(k);
        c[k] = akk;
        *a.col_mut(k) = c;
    }
    let det = a.determinant();
    if !(det.is_finite() && det > 0.0) {
        return None;
    }
    Some((v, nt, a.inverse()))
}

/// The Gauss–Newton system `K z = b` (Wang 2012 eq. 3.25 / 3.30) solved directly.
///
/// The contact rows are one-vertex rows, so their block of `K` is block diagonal per vertex
/// (`w_v N_v N_vᵀ + D_v`, `N_v` the directions of the rows on `v`) and they can be eliminated
/// exactly: with `B_v = (w_v N_v N_vᵀ + D_v)⁻¹`,
///
/// `K̄ z_c = b_c − G (w N_vᵀ B_v b_v)_v`,  `K̄ = G W̄ Gᵀ + D_c`,  `W̄_v = w_v I − w_v² N_vᵀ B_v N_v`,
///
/// then `λ_v = B_v (b_v − N_v (W Gᵀ z_c)_v)`. Without self-contact rows `K̄` lives on the cloth
/// block's fixed pattern (a contact only changes the 3×3 metric of its vertex), so the symbolic
/// analysis never repeats. A self-contact row couples four nodes and cannot be eliminated per
/// vertex: it stays in the reduced system as a row of `G` like a cloth row (its entries of `K̄`
/// use the same `W̄`), on the pattern of [`Augmented`], analysed once per set of self-contact
/// stencils. Returns false (nothing usable in `z`) when a vertex's rows are not contiguous in the
/// pool or more than 3, or the factorisation fails.
#[allow(clippy::needless_range_loop)] // rows and stencil entries index parallel arrays
fn solve_direct(
    op: &mut KOperator<'_>,
    b: &[f64],
    s: &mut DirectScratch<'_>,
    z: &mut [f64],
) -> bool {
    let start = Instant::now();
    let cloth = op.topo.num_cloth_rows();
    let contacts = op.contacts.len();
    let self_base = cloth + contacts;
    let m = op.selfs.len();
    // Rows of the reduced system past the cloth rows: the self-contact rows, then the
    // base-edge rows while one is held (the same `W̄`, on the pattern of `Augmented`).
    let nb = op.edges.map_or(0, BaseEdgeRows::len);
    let extra = m + nb;
    s.reduction.fill(DMat3::ZERO);
    s.push.fill(DVec3::ZERO);
    // Contact groups: S_v and p_v.
    let mut j0 = 0;
    while j0 < contacts {
        let v = op.contacts[j0].vertex;
        let mut j1 = j0 + 1;
        while j1 < contacts && op.contacts[j1].vertex == v {
            j1 += 1;
        }
        if j1 - j0 > 3 || s.group_stamp[v as usize] == s.stamp {
            return false;
        }
        s.group_stamp[v as usize] = s.stamp;
        let Some((v, nt, bm)) = contact_group(op, j0, j1) else {
            return false;
        };
        let w = op.inv_mass[v];
        let mut bk = DVec3::ZERO;
        for (k, j) in (j0..j1).enumerate() {
            bk[k] = b[cloth + j];
        }
        s.reduction[v] = (nt * bm * nt.transpose()) * (w * w);
        s.push[v] = nt * (bm * bk) * w;
        j0 = j1;
    }
    let reduced = contacts > 0;
    // The reduced system: the cloth rows, then the self-contact rows when there are any.
    let t = op.topo;
    let system = if extra == 0 {
        ReducedSystem {
            k: &mut *s.k,
            chol: &mut *s.chol,
            offsets: &t.stencil_offsets,
            vertices: &t.stencil_vertices,
            gradients: op.gradients,
            diag: &op.diag[..cloth],
            z: &mut z[..cloth],
        }
    } else {
        let Some(aug) = s.augmented.as_deref_mut() else {
            return false;
        };
        if aug.key.len() != m || aug.edges != nb {
            return false;
        }
        let Some(chol) = aug.chol.as_mut() else {
            return false;
        };
        let entries = t.stencil_vertices.len();
        aug.gradients[..entries].copy_from_slice(op.gradients);
        aug.diag[..cloth].copy_from_slice(&op.diag[..cloth]);
        for (k, r) in op.selfs.iter().enumerate() {
            if aug.key[k] != r.stencil() {
                return false;
            }
            let g = r.gradients(op.self_active[k]);
            aug.gradients[entries + 4 * k..entries + 4 * k + 4].copy_from_slice(&g);
            aug.diag[cloth + k] = op.diag[self_base + k];
        }
        if let Some(edges) = op.edges {
            let entries = entries + 4 * m;
            for k in 0..nb {
                aug.gradients[entries + 3 * k..entries + 3 * k + 3]
                    .copy_from_slice(&edges.gradient(k));
                aug.diag[cloth + m + k] = op.diag[self_base + m + k];
            }
        }
        ReducedSystem {
            k: &mut aug.k,
            chol,
            offsets: &aug.offsets,
            vertices: &aug.vertices,
            gradients: &aug.gradients,
            diag: &aug.diag,
            z: &mut aug.z[..],
        }
    };
    let ReducedSystem {
        k,
        chol,
        offsets,
        vertices,
        gradients,
        diag,
        z: zs,
    } = system;
    k.assemble_reduced(
        gradients,
        op.inv_mass,
        reduced.then_some(&*s.reduction),
        diag,
    );
    // Right-hand side of the reduced system: b_c − G p (rows past the cloth rows are the
    // self-contact and base-edge rows, `b` of which follows the contact rows).
    let push = &*s.push;
    reduce::for_each_chunk(&mut *zs, |first, chunk: &mut [f64]| {
        for (j, r) in chunk.iter_mut().enumerate() {
            let a = first + j;
            let mut acc = if a < cloth {
                b[a]
            } else {
                b[self_base + a - cloth]
            };
            if reduced {
                for e in offsets[a] as usize..offsets[a + 1] as usize {
                    acc -= gradients[e].dot(push[vertices[e] as usize]);
                }
            }
            *r = acc;
        }
    });
    if reduced || extra > 0 {
        // A row whose every vertex is held by hard contact rows reads `K̄_aa = D_a`, 0 for a
        // hard row: it is a zero row, solved as `z_a = 0`. With self-contact rows, so is a
        // hard row on pinned nodes only (`K_aa = 0`, its right-hand side masked to 0).
        for a in 0..zs.len() {
            let mut full = diag[a];
            for e in offsets[a] as usize..offsets[a + 1] as usize {
                full += op.inv_mass[vertices[e] as usize] * gradients[e].length_squared();
            }
            let kaa = k.diagonal_mut(a);
            if full > 0.0 && *kaa <= 1e-12 * full {
                *kaa = full;
                zs[a] = 0.0;
            } else if full == 0.0 && extra > 0 {
                *kaa = 1.0;
                zs[a] = 0.0;
            }
        }
    }
    let factor_start = Instant::now();
    s.times.assemble_seconds += (factor_start - start).as_secs_f64();
    let mut solved = false;
    let signature = contact_signature(op);
    let try_reuse = s.reuse.as_mut().is_some_and(|r| {
        let skip = r.state.skip > 0;
        r.state.skip = r.state.skip.saturating_sub(1);
        !skip && r.state.last <= r.settings.max_iterations / 2 && r.state.signature == signature
    });
    if let Some(reuse) = s.reuse.as_mut()
        && try_reuse
        && chol.is_factored()
    {
        // PCG on K̄ preconditioned by the factor of an earlier K̄ (FactorReuse).
        let n = zs.len();
        let rhs = &mut reuse.rhs[..n];
        rhs.copy_from_slice(zs);
        zs.fill(0.0);
        let report = solve_scalar_pcg_with(
            &mut *k,
            &mut |r: &[f64], out: &mut [f64]| {
                out.copy_from_slice(r);
                chol.solve_in_place(out);
            },
            rhs,
            &PcgSettings {
                max_iterations: reuse.settings.max_iterations,
                tolerance: reuse.settings.tolerance,
            },
            reuse.pcg,
            zs,
            &mut |_| false,
        );
        solved = report.converged && zs.iter().all(|v| v.is_finite());
        s.times.reuse_solves += 1;
        s.times.reuse_iterations += u64::from(report.iterations);
        s.times.reuse_failures += u64::from(!solved);
        s.times.reuse_seconds += factor_start.elapsed().as_secs_f64();
        let state = &mut *reuse.state;
        if solved {
            state.last = report.iterations;
            state.backoff = 0;
        } else {
            state.backoff = (2 * state.backoff).clamp(1, 64);
            state.skip = state.backoff;
            zs.copy_from_slice(rhs);
        }
    }
    let solve_start = if solved {
        Instant::now()
    } else {
        let factor_start = Instant::now();
        let factored = chol.factor(k).is_ok();
        let solve_start = Instant::now();
        s.times.factors += 1;
        s.times.factor_seconds += (solve_start - factor_start).as_secs_f64();
        if let Some(reuse) = s.reuse.as_mut() {
            reuse.state.last = 0;
            reuse.state.signature = signature;
        }
        if !factored {
            return false;
        }
        chol.solve_in_place(zs);
        solve_start
    };
    if extra > 0 {
        let Some(aug) = s.augmented.as_deref() else {
            return false;
        };
        z[..cloth].copy_from_slice(&aug.z[..cloth]);
        z[self_base..self_base + extra].copy_from_slice(&aug.z[cloth..]);
    }
    // The contact multipliers from the reduced system's solution.
    if reduced {
        z[cloth..self_base].fill(0.0);
        op.scatter(z);
        let mut j0 = 0;
        while j0 < contacts {
            let v = op.contacts[j0].vertex;
            let mut j1 = j0 + 1;
            while j1 < contacts && op.contacts[j1].vertex == v {
                j1 += 1;
            }
            let Some((v, nt, bm)) = contact_group(op, j0, j1) else {
                return false;
            };
            let mut bk = DVec3::ZERO;
            for (k, j) in (j0..j1).enumerate() {
                bk[k] = b[cloth + j];
            }
            let lambda = bm * (bk - nt.transpose() * op.u[v]);
            for (k, j) in (j0..j1).enumerate() {
                z[cloth + j] = lambda[k];
            }
            j0 = j1;
        }
    }
    s.times.solve_seconds += solve_start.elapsed().as_secs_f64();
    z.iter().all(|v| v.is_finite())
}

/// Small constraint families for the solver tests (the real ones live in `model`).
#[cfg(test)]
pub(crate) mod test_sets {
    use glam::DVec3;

    use crate::model::constraint::ConstraintSet;

    /// `C_e = ‖x_i − x_j‖ − d_e` per edge (the form of Wang 2012 eq. 3.1), gradient eq. 3.2.
    pub(crate) struct EdgeLengths {
        pub(crate) offsets: Vec<u32>,
        pub(crate) vertices: Vec<u32>,
        pub(crate) rest: Vec<f64>,
    }

    impl EdgeLengths {
        /// Edges `edges` with rest lengths measured at `x0`.
        pub(crate) fn new(edges: &[[u32; 2]], x0: &[DVec3]) -> Self {
            EdgeLengths {
                offsets: (0..=edges.len() as u32).map(|k| 2 * k).collect(),
                vertices: edges.iter().flatten().copied().collect(),
                rest: edges
                    .iter()
                    .map(|&[i, j]| (x0[i as usize] - x0[j as usize]).length())
                    .collect(),
            }
        }
    }

    impl ConstraintSet for EdgeLengths {
        fn len(&self) -> usize {
            self.rest.len()
        }
        fn stencil_offsets(&self) -> &[u32] {
            &self.offsets
        }
        fn stencil_vertices(&self) -> &[u32] {
            &self.vertices
        }
        fn evaluate(&self, x: &[DVec3], c: &mut [f64]) {
            for (e, ce) in c.iter_mut().enumerate() {
                let (i, j) = (self.vertices[2 * e], self.vertices[2 * e + 1]);
                *ce = (x[i as usize] - x[j as usize]).length() - self.rest[e];
            }
        }
        fn gradients(&self, x: &[DVec3], g: &mut [DVec3]) {
            for e in 0..self.rest.len() {
                let (i, j) = (self.vertices[2 * e], self.vertices[2 * e + 1]);
                let u = (x[i as usize] - x[j as usize]).normalize_or_zero();
                g[2 * e] = u;
                g[2 * e + 1] = -u;
            }
        }
    }

    /// Residual rows of the spring potential `h² Φ = ½ Σ_e h² k ‖x_i − x_j‖²`: three linear rows
    /// per edge, `r = h √k (x_i − x_j)_c` (the sum-of-squares form of Wang 2012 eq. 3.19).
    pub(crate) struct SpringResidual {
        pub(crate) offsets: Vec<u32>,
        pub(crate) vertices: Vec<u32>,
        pub(crate) scale: f64,
    }

    impl SpringResidual {
        pub(crate) fn new(edges: &[[u32; 2]], h: f64, k: f64) -> Self {
            SpringResidual {
                offsets: (0..=3 * edges.len() as u32).map(|r| 2 * r).collect(),
                vertices: edges
                    .iter()
                    .flat_map(|&[i, j]| [i, j, i, j, i, j])
                    .collect(),
                scale: h * k.sqrt(),
            }
        }
    }

    impl ConstraintSet for SpringResidual {
        fn len(&self) -> usize {
            self.vertices.len() / 2
        }
        fn stencil_offsets(&self) -> &[u32] {
            &self.offsets
        }
        fn stencil_vertices(&self) -> &[u32] {
            &self.vertices
        }
        fn evaluate(&self, x: &[DVec3], c: &mut [f64]) {
            for (r, cr) in c.iter_mut().enumerate() {
                let (i, j) = (self.vertices[2 * r], self.vertices[2 * r + 1]);
                *cr = self.scale * (x[i as usize] - x[j as usize])[r % 3];
            }
        }
        fn gradients(&self, _x: &[DVec3], g: &mut [DVec3]) {
            for r in 0..self.len() {
                let mut e = DVec3::ZERO;
                e[r % 3] = self.scale;
                g[2 * r] = e;
                g[2 * r + 1] = -e;
            }
        }
    }

    /// An `n × n` grid of spacing `s` in the xz plane at height 0, with its structural edges and,
    /// with `diagonals`, one shear diagonal per cell.
    pub(crate) fn grid(n: usize, s: f64, diagonals: bool) -> (Vec<DVec3>, Vec<[u32; 2]>) {
        let x: Vec<DVec3> = (0..n * n)
            .map(|k| DVec3::new((k % n) as f64 * s, 0.0, (k / n) as f64 * s))
            .collect();
        let id = |i: usize, j: usize| (j * n + i) as u32;
        let mut e = Vec::new();
        for j in 0..n {
            for i in 0..n {
                if i + 1 < n {
                    e.push([id(i, j), id(i + 1, j)]);
                }
                if j + 1 < n {
                    e.push([id(i, j), id(i, j + 1)]);
                }
                if diagonals && i + 1 < n && j + 1 < n {
                    e.push([id(i, j), id(i + 1, j + 1)]);
                }
            }
        }
        (x, e)
    }
}

#[cfg(test)]
mod tests {
    use super::test_sets::{EdgeLengths, SpringResidual, grid};
    use super::*;
    use crate::integrate::mesh_obstacles::MeshObstacles;
    use crate::linalg::SymCsr;
    use crate::mesh::generate;
    use crate::testing::SplitMix64;
    use faer::linalg::solvers::Solve;

    fn hard<'a>(set: &'a EdgeLengths) -> RowFamily<'a> {
        RowFamily {
            set,
            role: RowRole::Hard,
            linear: false,
            scale: StrainScale::PerRow(&set.rest),
        }
    }

    /// A held row (an edge–edge pair the collision stage repelled) reads `n · Σ c_k x_k − target`
    /// on the stage's stencil, its gradients are `c_k n` on those nodes, and re-linearising it
    /// leaves it as built.
    #[test]
    fn a_held_pair_row_is_the_stages_stencil_and_stays_fixed() {
        let x = [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.3, 0.002, -0.5),
            DVec3::new(0.3, 0.003, 0.5),
        ];
        // First side: edge 0–1 at a = 0.3; second side: edge 2–3 at b = 0.5.
        let c = [-0.7, -0.3, 0.5, 0.5];
        let n = DVec3::Y;
        let mut row = SelfContactRow::held([0, 1, 2, 3], c, n, 0.004, 0.0);
        let expected = n.dot(c.iter().zip(&x).map(|(&ck, &xk)| ck * xk).sum::<DVec3>()) - 0.004;
        assert!((row.value(&x) - expected).abs() < 1e-15);
        for (g, v) in row.gradients(true).iter().zip(row.stencil()) {
            assert!((*g - c[v as usize] * n).length() < 1e-15);
        }
        let before = row;
        let moved = [x[0], x[1] + DVec3::Z, x[2] - DVec3::X, x[3]];
        row.relinearise(&moved);
        assert_eq!(row, before);
    }

    /// Dense `K` by applying the matrix-free operator to unit vectors.
    fn dense_k(op: &mut KOperator<'_>) -> Vec<f64> {
        let n = op.len();
        let mut k = vec![0.0; n * n];
        let mut e = vec![0.0; n];
        let mut y = vec![0.0; n];
        for b in 0..n {
            e.iter_mut().for_each(|v| *v = 0.0);
            e[b] = 1.0;
            op.apply(&e, &mut y);
            for a in 0..n {
                k[a * n + b] = y[a];
            }
        }
        k
    }

    #[test]
    fn matrix_free_k_matches_assembled_and_is_spd() {
        let (x0, edges) = grid(4, 0.1, true);
        let mut rng = SplitMix64::new(7);
        let x: Vec<DVec3> = x0.iter().map(|p| *p + rng.vec3(0.02)).collect();
        let set = EdgeLengths::new(&edges, &x0);
        let spring = SpringResidual::new(&edges[..5], 0.01, 100.0);
        let mut inv_mass: Vec<f64> = (0..x.len()).map(|_| rng.uniform(0.5, 2.0)).collect();
        inv_mass[0] = 0.0;
        inv_mass[3] = 0.0;
        let mut proj = GaussNewtonProjection::new(x.len(), &[&set, &spring], 4);
        proj.push_contact(ContactRow {
            vertex: 5,
            direction: DVec3::Y,
            target: 0.0,
            compliance: 0.0,
            unilateral: false,
            speculative: false,
        });
        proj.push_contact(ContactRow {
            vertex: 5,
            direction: DVec3::X,
            target: 0.0,
            compliance: 1e-3,
            unilateral: false,
            speculative: false,
        });
        let n_set = set.len();
        let rows = proj.num_cloth_rows() + 2;
        // Gradients and D as project() sets them.
        set.gradients(&x, &mut proj.gradients[..2 * n_set]);
        spring.gradients(&x, &mut proj.gradients[2 * n_set..]);
        proj.diag[..n_set].fill(0.0);
        let cloth_rows = proj.num_cloth_rows();
        proj.diag[n_set..cloth_rows].fill(1.0);
        proj.diag[rows - 2] = 0.0;
        proj.diag[rows - 1] = 1e-3;
        let GaussNewtonProjection {
            topo,
            gradients,
            diag,
            u,
            contacts,
            contact_active,
            ..
        } = &mut proj;
        let mut op = KOperator {
            topo,
            gradients,
            diag: &diag[..rows],
            contacts,
            active: contact_active,
            selfs: &[],
            self_active: &[],
            edges: None,
            inv_mass: &inv_mass,
            u,
        };
        let k = dense_k(&mut op);
        // Reference: the assembled SymCsr with the contacts as one-vertex stencils.
        let mut offsets = topo.stencil_offsets.clone();
        let mut vertices = topo.stencil_vertices.clone();
        let mut g = gradients.clone();
        for c in contacts.iter() {
            vertices.push(c.vertex);
            g.push(c.direction);
            offsets.push(vertices.len() as u32);
        }
        let mut csr = SymCsr::from_stencils(x.len(), &offsets, &vertices);
        csr.assemble(&g, &inv_mass, &diag[..rows]);
        let reference = csr.to_dense();
        let mut diag_out = vec![0.0; rows];
        op.diagonal(&mut diag_out);
        for a in 0..rows {
            assert!((diag_out[a] - reference[a * rows + a]).abs() <= 1e-14);
            for b in 0..rows {
                let (p, q) = (k[a * rows + b], reference[a * rows + b]);
                assert!((p - q).abs() <= 1e-13, "K[{a},{b}] = {p} vs {q}");
            }
        }
        // SPD: the 33 edge rows on 14 free vertices of a perturbed (non-planar) grid are
        // independent, the residual and soft rows have D > 0 (docs/methods/isometric-model.md
        // §A12).
        let mat = faer::Mat::<f64>::from_fn(rows, rows, |r, c| k[r * rows + c]);
        let chol = mat.llt(faer::Side::Lower).expect("K is SPD");
        // PCG on the matrix-free K matches faer's direct solve.
        let b: Vec<f64> = (0..rows).map(|i| ((i * 7 % 5) as f64) - 2.0).collect();
        let x_ref = chol.solve(faer::Mat::<f64>::from_fn(rows, 1, |r, _| b[r]));
        let mut z = vec![0.0; rows];
        let mut ws = ScalarPcgWorkspace::new(rows);
        let s = PcgSettings {
            max_iterations: 1000,
            tolerance: 1e-13,
        };
        let rep = solve_scalar_pcg(&mut op, &b, &s, &mut ws, &mut z, &mut |_| false);
        assert!(rep.converged, "{rep:?}");
        let scale = (0..rows).fold(0.0f64, |m, i| m.max(x_ref[(i, 0)].abs()));
        for i in 0..rows {
            assert!((z[i] - x_ref[(i, 0)]).abs() <= 1e-8 * scale, "row {i}");
        }
        // The same with the IC(0) preconditioner of the assembled K (isometric-model.md §A17):
        // same solution, fewer iterations.
        let mut ic = IncompleteCholesky::new(&csr);
        ic.factor(&csr);
        let mut z_ic = vec![0.0; rows];
        let rep_ic = solve_scalar_pcg_with(
            &mut op,
            &mut |r: &[f64], s: &mut [f64]| ic.solve(r, s),
            &b,
            &s,
            &mut ws,
            &mut z_ic,
            &mut |_| false,
        );
        assert!(rep_ic.converged, "{rep_ic:?}");
        assert!(rep_ic.iterations < rep.iterations, "{rep_ic:?} vs {rep:?}");
        for i in 0..rows {
            assert!((z_ic[i] - x_ref[(i, 0)]).abs() <= 1e-8 * scale, "row {i}");
        }
    }

    /// The system of the contact-row direct-solve tests: K of eq. 3.25 / 3.30 on a jittered 5×5
    /// grid (edge lengths and six soft springs) with the contact rows of three nodes — a hard
    /// normal row with two soft tangents, a lone hard normal row, and a released normal row
    /// with its tangents — and a random right-hand side (zero on the released rows).
    struct ContactRowsSystem {
        proj: GaussNewtonProjection,
        inv_mass: Vec<f64>,
        b: Vec<f64>,
        rows: usize,
        cloth_rows: usize,
        rng: SplitMix64,
    }

    fn contact_rows_system() -> ContactRowsSystem {
        let (x0, edges) = grid(5, 0.1, false);
        let mut rng = SplitMix64::new(21);
        let x: Vec<DVec3> = x0.iter().map(|p| *p + rng.vec3(0.02)).collect();
        let set = EdgeLengths::new(&edges, &x0);
        let spring = SpringResidual::new(&edges[..6], 0.01, 100.0);
        let mut inv_mass: Vec<f64> = (0..x.len()).map(|_| rng.uniform(0.5, 2.0)).collect();
        inv_mass[0] = 0.0;
        let mut proj = GaussNewtonProjection::new(x.len(), &[&set, &spring], 8);
        let normal = DVec3::new(0.3, 1.0, -0.2).normalize();
        let (t1, t2) = normal.any_orthonormal_pair();
        for (v, compliances) in [
            (6u32, &[0.0, 1e-3, 1e-3][..]),
            (12, &[0.0]),
            (18, &[0.0, 1e-3, 1e-3]),
        ] {
            for (k, &c) in compliances.iter().enumerate() {
                proj.push_contact(ContactRow {
                    vertex: v,
                    direction: [normal, t1, t2][k],
                    target: 0.0,
                    compliance: c,
                    unilateral: k == 0,
                    speculative: false,
                });
            }
        }
        let rows = proj.num_cloth_rows() + proj.contacts.len();
        let cloth_rows = proj.num_cloth_rows();
        let n_set = set.len();
        set.gradients(&x, &mut proj.gradients[..2 * n_set]);
        spring.gradients(&x, &mut proj.gradients[2 * n_set..]);
        proj.diag[..n_set].fill(0.0);
        proj.diag[n_set..cloth_rows].fill(1.0);
        // Node 18's rows are released: direction 0, D = 1 (refresh_contact_diagonal).
        let last = proj.contacts.len();
        proj.contact_active[last - 3..].fill(false);
        proj.refresh_contact_diagonal();
        let b: Vec<f64> = (0..rows)
            .map(|a| {
                if a >= rows - 3 {
                    0.0
                } else {
                    rng.uniform(-1.0, 1.0)
                }
            })
            .collect();
        ContactRowsSystem {
            proj,
            inv_mass,
            b,
            rows,
            cloth_rows,
            rng,
        }
    }

    #[test]
    fn solve_on_an_earlier_factor_matches_dense_without_refactoring() {
        // The system of `contact_rows_system`, solved once (a
        // factorisation), then again with the node masses changed by up to 1 %: PCG on the
        // first factor (FactorReuse) solves it to the dense Cholesky's answer without a second
        // factorisation.
        let ContactRowsSystem {
            mut proj,
            inv_mass,
            b,
            rows,
            mut rng,
            ..
        } = contact_rows_system();
        let mut chol = SparseCholesky::new(&proj.k_cloth, Ordering::Amd, CholeskyThreads::One)
            .expect("symbolic");
        let GaussNewtonProjection {
            topo,
            gradients,
            diag,
            u,
            contacts,
            contact_active,
            k_cloth,
            reduction,
            contact_push,
            group_stamp,
            direct_times,
            ..
        } = &mut proj;
        let mut op = KOperator {
            topo,
            gradients,
            diag: &diag[..rows],
            contacts,
            active: contact_active,
            selfs: &[],
            self_active: &[],
            edges: None,
            inv_mass: &inv_mass,
            u,
        };
        let mut pcg = ScalarPcgWorkspace::new(rows);
        let mut rhs = vec![0.0; rows];
        let mut state = ReuseState::default();
        let mut scratch = DirectScratch {
            chol: &mut chol,
            k: k_cloth,
            reduction,
            push: contact_push,
            group_stamp,
            stamp: 1,
            times: direct_times,
            augmented: None,
            reuse: Some(Reuse {
                settings: FactorReuse {
                    max_iterations: 8,
                    tolerance: 1e-12,
                },
                pcg: &mut pcg,
                rhs: &mut rhs,
                state: &mut state,
            }),
        };
        let mut z = vec![0.0; rows];
        assert!(solve_direct(&mut op, &b, &mut scratch, &mut z));
        let changed: Vec<f64> = inv_mass
            .iter()
            .map(|w| w * rng.uniform(0.99, 1.01))
            .collect();
        let mut op = KOperator {
            inv_mass: &changed,
            ..op
        };
        let k = dense_k(&mut op);
        let mat = faer::Mat::<f64>::from_fn(rows, rows, |r, c| k[r * rows + c]);
        let reference = mat
            .llt(faer::Side::Lower)
            .expect("K is SPD")
            .solve(faer::Mat::<f64>::from_fn(rows, 1, |r, _| b[r]));
        scratch.stamp = 2;
        assert!(solve_direct(&mut op, &b, &mut scratch, &mut z));
        let times = *scratch.times;
        assert_eq!((times.factors, times.reuse_solves), (1, 1));
        assert_eq!(times.reuse_failures, 0);
        assert!(times.reuse_iterations <= 8);
        let scale = (0..rows).fold(0.0f64, |m, i| m.max(reference[(i, 0)].abs()));
        for i in 0..rows {
            assert!(
                (z[i] - reference[(i, 0)]).abs() <= 1e-9 * scale,
                "row {i}: {} vs {}",
                z[i],
                reference[(i, 0)]
            );
        }
    }

    #[test]
    fn direct_solve_with_contact_rows_matches_dense() {
        // K of eq. 3.25 / 3.30 with the contact rows of three nodes: a hard normal row with
        // two soft tangents, a lone hard normal row, and a released normal row with its
        // tangents; the direct solve (contacts eliminated per vertex, sparse Cholesky of the
        // cloth block) against faer's dense Cholesky of the whole K.
        let ContactRowsSystem {
            mut proj,
            inv_mass,
            b,
            rows,
            cloth_rows,
            ..
        } = contact_rows_system();
        let mut chol = SparseCholesky::new(&proj.k_cloth, Ordering::Amd, CholeskyThreads::One)
            .expect("symbolic");
        let GaussNewtonProjection {
            topo,
            gradients,
            diag,
            u,
            contacts,
            contact_active,
            k_cloth,
            reduction,
            contact_push,
            group_stamp,
            direct_times,
            ..
        } = &mut proj;
        let mut op = KOperator {
            topo,
            gradients,
            diag: &diag[..rows],
            contacts,
            active: contact_active,
            selfs: &[],
            self_active: &[],
            edges: None,
            inv_mass: &inv_mass,
            u,
        };
        let k = dense_k(&mut op);
        let mat = faer::Mat::<f64>::from_fn(rows, rows, |r, c| k[r * rows + c]);
        let reference = mat
            .llt(faer::Side::Lower)
            .expect("K is SPD")
            .solve(faer::Mat::<f64>::from_fn(rows, 1, |r, _| b[r]));
        let mut scratch = DirectScratch {
            chol: &mut chol,
            k: k_cloth,
            reduction,
            push: contact_push,
            group_stamp,
            stamp: 1,
            times: direct_times,
            augmented: None,
            reuse: None,
        };
        let mut z = vec![0.0; rows];
        assert!(solve_direct(&mut op, &b, &mut scratch, &mut z));
        let scale = (0..rows).fold(0.0f64, |m, i| m.max(reference[(i, 0)].abs()));
        for i in 0..rows {
            assert!(
                (z[i] - reference[(i, 0)]).abs() <= 1e-10 * scale,
                "row {i}: {} vs {}",
                z[i],
                reference[(i, 0)]
            );
        }
        assert_eq!(&z[rows - 3..], &[0.0; 3]);
        // The contact rows hold in the linearised sense: the hard normal rows of nodes 6
        // and 12 read b exactly (K z = b, their D = 0).
        let mut y = vec![0.0; rows];
        op.apply(&z, &mut y);
        for a in [cloth_rows, cloth_rows + 3] {
            assert!(
                (y[a] - b[a]).abs() <= 1e-10,
                "row {a}: {} vs {}",
                y[a],
                b[a]
            );
        }
    }

    #[test]
    fn direct_solve_with_self_contact_rows_matches_dense() {
        // K of eq. 3.25 / 3.30 with one-vertex contact rows and self-contact rows coupling a
        // node to a triangle (four nodes, one of them also held by contact rows): the direct
        // solve (one-vertex rows eliminated per vertex, the self-contact rows kept as rows of
        // the reduced system on its own pattern) against faer's dense Cholesky of the whole K.
        let (x0, edges) = grid(5, 0.1, true);
        let mut rng = SplitMix64::new(7);
        let x: Vec<DVec3> = x0.iter().map(|p| *p + rng.vec3(0.02)).collect();
        let set = EdgeLengths::new(&edges, &x0);
        let mut inv_mass: Vec<f64> = (0..x.len()).map(|_| rng.uniform(0.5, 2.0)).collect();
        inv_mass[0] = 0.0;
        let mut proj = GaussNewtonProjection::new(x.len(), &[&set], 8);
        let normal = DVec3::new(0.3, 1.0, -0.2).normalize();
        let (t1, t2) = normal.any_orthonormal_pair();
        for (k, &c) in [0.0, 1e-3, 1e-3].iter().enumerate() {
            proj.push_contact(ContactRow {
                vertex: 6,
                direction: [normal, t1, t2][k],
                target: 0.0,
                compliance: c,
                unilateral: k == 0,
                speculative: false,
            });
        }
        // Node 12 against triangle (1, 2, 7) and node 18 against (6, 7, 11) (node 6 is held
        // by the contact rows above), each with its two friction rows (soft, on a material
        // point other than the closest one); node 24 against (0, 1, 5), released.
        let first = SelfContactRow::new(12, [1, 2, 7], 1.0, 0.004, 0.0, &x);
        let second = SelfContactRow::new(18, [6, 7, 11], -1.0, 0.004, 1e-6, &x);
        let [t1a, t1b] = first.tangents([0.2, 0.5, 0.3], rng.vec3(0.01), 1e-3);
        let [t2a, t2b] = second.tangents([0.6, 0.1, 0.3], rng.vec3(0.01), 2e-3);
        let selfs = [
            first,
            t1a,
            t1b,
            second,
            t2a,
            t2b,
            SelfContactRow::new(24, [0, 1, 5], 1.0, 0.004, 0.0, &x),
        ];
        proj.set_self_rows(&selfs);
        proj.ensure_augmented(Ordering::Amd, CholeskyThreads::One);
        let cloth_rows = proj.num_cloth_rows();
        let rows = cloth_rows + proj.contacts.len() + selfs.len();
        set.gradients(&x, &mut proj.gradients[..]);
        proj.diag[..cloth_rows].fill(0.0);
        proj.self_active[6] = false;
        proj.refresh_contact_diagonal();
        let b: Vec<f64> = (0..rows)
            .map(|a| {
                if a == rows - 1 {
                    0.0
                } else {
                    rng.uniform(-1.0, 1.0)
                }
            })
            .collect();
        // A tiny D on the distance rows keeps the dense reference well conditioned.
        proj.diag[..cloth_rows].fill(1e-3);
        let mut chol = SparseCholesky::new(&proj.k_cloth, Ordering::Amd, CholeskyThreads::One)
            .expect("symbolic");
        let GaussNewtonProjection {
            topo,
            gradients,
            diag,
            u,
            contacts,
            contact_active,
            k_cloth,
            reduction,
            contact_push,
            group_stamp,
            direct_times,
            self_rows,
            self_active,
            augmented,
            ..
        } = &mut proj;
        let mut op = KOperator {
            topo,
            gradients,
            diag: &diag[..rows],
            contacts,
            active: contact_active,
            selfs: self_rows,
            self_active,
            edges: None,
            inv_mass: &inv_mass,
            u,
        };
        let k = dense_k(&mut op);
        // The self-contact rows and their friction rows couple nodes: K has entries between
        // them and the cloth rows of all four of their nodes (a normal row and its friction
        // rows have orthogonal gradients on every node, so none between them).
        let first_self = rows - selfs.len();
        for row in [first_self, first_self + 1, first_self + 4] {
            let coupled = (0..cloth_rows)
                .filter(|&a| k[row * rows + a] != 0.0)
                .count();
            assert!(coupled > 4, "row {row}: {coupled}");
        }
        assert!(k[first_self * rows + first_self + 1].abs() < 1e-15);
        let mat = faer::Mat::<f64>::from_fn(rows, rows, |r, c| k[r * rows + c]);
        let reference = mat
            .llt(faer::Side::Lower)
            .expect("K is SPD")
            .solve(faer::Mat::<f64>::from_fn(rows, 1, |r, _| b[r]));
        let mut scratch = DirectScratch {
            chol: &mut chol,
            k: k_cloth,
            reduction,
            push: contact_push,
            group_stamp,
            stamp: 1,
            times: direct_times,
            augmented: augmented.as_deref_mut(),
            reuse: None,
        };
        let mut z = vec![0.0; rows];
        assert!(solve_direct(&mut op, &b, &mut scratch, &mut z));
        let scale = (0..rows).fold(0.0f64, |m, i| m.max(reference[(i, 0)].abs()));
        for i in 0..rows {
            assert!(
                (z[i] - reference[(i, 0)]).abs() <= 1e-9 * scale,
                "row {i}: {} vs {}",
                z[i],
                reference[(i, 0)]
            );
        }
        assert_eq!(z[rows - 1], 0.0);
    }

    /// A 5 × 5 sheet (nodes 0..25) and a 4 × 4 sheet (nodes 25..41) of spacing 5 cm, the
    /// smaller one `gap` above the larger and over its interior, as one cloth: the positions,
    /// the edges of both, and their triangles.
    fn two_sheets(gap: f64) -> (Vec<DVec3>, Vec<[u32; 2]>, Vec<[u32; 3]>) {
        let (lower, e5) = grid(5, 0.05, true);
        let (upper, e4) = grid(4, 0.05, true);
        let mut x = lower;
        x.extend(upper.iter().map(|p| *p + DVec3::new(0.01, gap, 0.01)));
        let mut edges = e5;
        edges.extend(e4.iter().map(|&[i, j]| [i + 25, j + 25]));
        let mut tris = Vec::new();
        for (first, n) in [(0u32, 5u32), (25, 4)] {
            for j in 0..n - 1 {
                for i in 0..n - 1 {
                    let v = first + j * n + i;
                    tris.push([v, v + 1, v + n + 1]);
                    tris.push([v, v + n + 1, v + n]);
                }
            }
        }
        (x, edges, tris)
    }

    #[test]
    fn sheet_driven_through_another_ends_on_it_with_every_active_row_held() {
        // The upper sheet (free) is predicted 3 cm below the lower one (pinned): straight
        // through it. Self-contact rows found at the start (2 cm apart, band 3 cm) hold every
        // upper node on its side of the lower sheet's triangles, at least `delta` away; the
        // projection re-linearises them at every iterate, so it ends with the sheet resting on
        // the other at `delta`, every active row within the tolerance, none violated.
        let (x0, edges, tris) = two_sheets(0.02);
        let n = x0.len();
        let set = EdgeLengths::new(&edges, &x0);
        let inv_mass: Vec<f64> = (0..n).map(|v| if v < 25 { 0.0 } else { 1.0 }).collect();
        let target: Vec<DVec3> = (0..n)
            .map(|v| {
                if v < 25 {
                    x0[v]
                } else {
                    x0[v] - DVec3::Y * 0.05
                }
            })
            .collect();
        let delta = 0.005;
        let mut finder = crate::integrate::self_contact::SelfContactFinder::new(&tris);
        let found = finder.find(&x0, &x0, &inv_mass, delta, 0.03, 1e-8).to_vec();
        // Every upper node sees the lower sheet (and the lower nodes the upper sheet).
        let upper_rows = found.iter().filter(|r| r.vertex >= 25).count();
        assert!(upper_rows >= 16, "{upper_rows}");
        assert!(
            found
                .iter()
                .all(|r| r.triangle.iter().all(|&t| (t < 25) == (r.vertex >= 25)))
        );
        let mut proj = GaussNewtonProjection::new(n, &[&set], 0);
        proj.set_self_rows(&found);
        let tolerance = 1e-6;
        let settings = ProjectionSettings {
            tolerance,
            max_iterations: 40,
            contact_length: 0.05,
            ..ProjectionSettings::default()
        };
        let prox: Vec<f64> = edges
            .iter()
            .map(|&[i, j]| 1e-6 * (inv_mass[i as usize] + inv_mass[j as usize]))
            .collect();
        let family = RowFamily {
            set: &set,
            role: RowRole::Proximal(&prox),
            linear: false,
            scale: StrainScale::PerRow(&set.rest),
        };
        let mut x = target.clone();
        let rep = proj.project(
            &[family],
            &target,
            &inv_mass,
            &settings,
            &mut x,
            &mut || false,
        );
        assert!(rep.converged, "{rep:?}");
        assert_eq!(rep.direct_fallbacks, 0, "{rep:?}");
        assert!(rep.direct_solves > 0, "{rep:?}");
        let mut active = 0;
        for (r, &on) in proj.self_rows().iter().zip(proj.self_rows_active()) {
            let c = r.value(&x);
            assert!(c >= -tolerance * 0.05 * 1.01, "row {r:?}: {c}");
            if on {
                active += 1;
                assert!(c.abs() <= tolerance * 0.05 * 1.01, "row {r:?}: {c}");
            }
        }
        assert!(active >= 9, "{active} active rows");
        // The upper sheet rests on the lower at delta (it is flat and level: every node).
        for p in &x[25..] {
            assert!((p.y - delta).abs() <= 1e-6, "{p}");
        }
        // The rows keep their lengths.
        for (e, &[i, j]) in edges.iter().enumerate() {
            let l = (x[i as usize] - x[j as usize]).length();
            assert!(
                (l - set.rest[e]).abs() <= tolerance * set.rest[e] * 1.01,
                "edge {e}"
            );
        }
    }

    #[test]
    fn self_contact_finder_skips_incident_and_far_triangles_and_dedups_shared_features() {
        // A flat sheet: no node is within reach of a triangle that does not contain it (the
        // nearest is an edge length away). Two sheets 6 mm apart: a node above an edge shared
        // by two triangles of the other sheet gets one row for it, not one per triangle.
        let (x0, _, tris) = two_sheets(1.0);
        let inv_mass = vec![1.0; x0.len()];
        let mut finder = crate::integrate::self_contact::SelfContactFinder::new(&tris);
        assert!(
            finder
                .find(&x0, &x0, &inv_mass, 0.005, 0.01, 0.0)
                .is_empty()
        );
        let (x1, _, _) = two_sheets(0.006);
        let rows = finder.find(&x1, &x1, &inv_mass, 0.005, 0.004, 0.0).to_vec();
        for r in &rows {
            assert!(!r.triangle.contains(&r.vertex));
            assert_eq!((r.vertex < 25), r.triangle.iter().all(|&t| t >= 25));
        }
        // Upper node 25 + 5 sits 6 mm above (0.06, 0, 0.06), on the diagonal (6, 12) of the
        // lower sheet's cell, the edge of two triangles: exactly one row, on that edge.
        let node: Vec<_> = rows.iter().filter(|r| r.vertex == 30).collect();
        assert_eq!(node.len(), 1, "{rows:?}");
        assert!((node[0].normal - DVec3::Y).length() < 1e-9, "{:?}", node[0]);
        for r in &rows {
            assert!(r.value(&x1) > 0.0, "{r:?}");
        }
    }

    /// A sphere of radius `r` at the origin seen by contact rows with thickness `eta`.
    struct Ball {
        r: f64,
        eta: f64,
    }

    impl ContactGeometry for Ball {
        fn plane(&self, _vertex: u32, x: DVec3) -> Option<(DVec3, f64)> {
            let n = x.normalize();
            (x.length() < self.r + 5.0 * self.eta).then_some((n, self.r + self.eta))
        }
    }

    /// Gives each of `nodes` a hard, speculative, unilateral contact row on `geometry`'s plane
    /// at `target` (a plane it cannot reach where the geometry has none yet).
    fn push_speculative_rows(
        proj: &mut GaussNewtonProjection,
        geometry: &dyn ContactGeometry,
        target: &[DVec3],
        nodes: std::ops::Range<u32>,
    ) {
        for v in nodes {
            let (dir, t) = geometry
                .plane(v, target[v as usize])
                .unwrap_or((DVec3::Y, -1.0));
            proj.push_contact(ContactRow {
                vertex: v,
                direction: dir,
                target: t,
                compliance: 0.0,
                unilateral: true,
                speculative: true,
            });
        }
    }

    /// Gives each of `nodes` a hard, speculative, unilateral contact row on `geometry`'s plane
    /// at its prediction (a plane it cannot reach where the geometry has none yet: taken over
    /// by the geometry's when the node comes near) and projects `target` with the edge rows
    /// `set` proximal, as the cloth's (`RowRole::Proximal`: hard at convergence). Returns the
    /// projected positions and the report.
    #[allow(clippy::too_many_arguments)] // a test's whole projection set-up in one call
    fn project_onto(
        proj: &mut GaussNewtonProjection,
        set: &EdgeLengths,
        edges: &[[u32; 2]],
        inv_mass: &[f64],
        target: &[DVec3],
        nodes: std::ops::Range<u32>,
        geometry: &dyn ContactGeometry,
        settings: &ProjectionSettings,
    ) -> (Vec<DVec3>, ProjectionReport) {
        push_speculative_rows(proj, geometry, target, nodes);
        let prox: Vec<f64> = edges
            .iter()
            .map(|&[i, j]| 1e-6 * (inv_mass[i as usize] + inv_mass[j as usize]))
            .collect();
        let family = RowFamily {
            set,
            role: RowRole::Proximal(&prox),
            linear: false,
            scale: StrainScale::PerRow(&set.rest),
        };
        let mut x = target.to_vec();
        let rep = proj.project_in_contact(
            &[family],
            target,
            inv_mass,
            settings,
            geometry,
            &mut x,
            &mut || false,
        );
        (x, rep)
    }

    /// A chain of 17 nodes (rest spacing 5 cm, 80 cm long) at `y = 0.25`, its ends pinned
    /// 30 cm apart at that height and its free nodes predicted 12 cm lower: rest positions,
    /// edges, inverse masses and the prediction.
    fn chain_over_ball() -> (Vec<DVec3>, Vec<[u32; 2]>, Vec<f64>, Vec<DVec3>) {
        let n = 17;
        let x0: Vec<DVec3> = (0..n)
            .map(|i| DVec3::new(-0.4 + 0.05 * i as f64, 0.25, 0.0))
            .collect();
        let edges: Vec<[u32; 2]> = (0..n as u32 - 1).map(|i| [i, i + 1]).collect();
        let mut inv_mass = vec![1.0; n];
        inv_mass[0] = 0.0;
        inv_mass[n - 1] = 0.0;
        let mut target: Vec<DVec3> = x0.iter().map(|p| *p - DVec3::Y * 0.12).collect();
        target[0] = DVec3::new(-0.15, 0.25, 0.0);
        target[n - 1] = DVec3::new(0.15, 0.25, 0.0);
        (x0, edges, inv_mass, target)
    }

    /// Projects the chain of [`chain_over_ball`] (its free nodes with rows on `geometry`)
    /// towards `target` to a tolerance of 10⁻⁶ and checks what both obstacle tests ask: the
    /// projection converges without a fallback, no node ends inside (`gap`, the node's
    /// distance to the obstacle less the thickness, at least minus the tolerance) and every
    /// node whose row pushes (`λ < 0`) lies on the surface within it. Returns the result and
    /// how many nodes are on the surface.
    fn drive_chain_into(
        geometry: &dyn ContactGeometry,
        target: &[DVec3],
        gap: impl Fn(DVec3) -> f64,
    ) -> (Vec<DVec3>, usize) {
        let (x0, edges, inv_mass, _) = chain_over_ball();
        let n = x0.len();
        let set = EdgeLengths::new(&edges, &x0);
        let mut proj = GaussNewtonProjection::new(n, &[&set], 3 * n);
        let tolerance = 1e-6;
        let settings = ProjectionSettings {
            tolerance,
            max_iterations: 60,
            contact_length: 0.05,
            ..ProjectionSettings::default()
        };
        let (x, rep) = project_onto(
            &mut proj,
            &set,
            &edges,
            &inv_mass,
            target,
            1..n as u32 - 1,
            geometry,
            &settings,
        );
        assert!(rep.converged, "{rep:?}");
        assert!(rep.direct_fallbacks == 0, "{rep:?}");
        // Contact rows in pool order: node v has row v − 1.
        let lambda = &proj.multipliers()[set.len()..];
        let mut touching = 0;
        for (i, p) in x.iter().enumerate().skip(1).take(n - 2) {
            let g = gap(*p);
            assert!(
                g >= -tolerance * 0.05 * 1.01,
                "node {i} inside: gap {g} at {p}"
            );
            if lambda[i - 1] < 0.0 {
                touching += 1;
                assert!(
                    g.abs() <= tolerance * 0.05 * 1.01,
                    "node {i}: gap {g} at {p}"
                );
            }
        }
        (x, touching)
    }

    #[test]
    fn nodes_driven_into_an_obstacle_end_on_its_surface() {
        // A chain of 17 nodes (rest spacing 5 cm, 80 cm long) whose ends are pinned 30 cm apart
        // above a ball of radius 20 cm, predicted 12 cm lower: inside the ball. Every free node
        // gets a unilateral normal row on the ball's tangent plane at the prediction; the
        // projection (from the prediction) re-linearises the rows at every iterate on the
        // closest point and updates the active set, so the nodes it drives onto the ball end on
        // its surface (offset by the thickness) within the tolerance, wherever they slid, and
        // none inside.
        let (r, eta) = (0.2, 0.004);
        let (_, _, _, target) = chain_over_ball();
        let (_, touching) = drive_chain_into(&Ball { r, eta }, &target, |p| p.length() - (r + eta));
        assert!(touching >= 3, "{touching} nodes on the ball");
        // The prediction sank into the ball (the test is not vacuous).
        assert!(target[8].length() < r, "{}", target[8]);
    }

    /// A triangle-mesh obstacle seen by contact rows with thickness `eta`: the row on the
    /// closest point of the mesh, re-found at every call ([`MeshObstacles::closest`]).
    struct MeshBody {
        mesh: MeshObstacles,
        eta: f64,
    }

    impl ContactGeometry for MeshBody {
        fn plane(&self, _vertex: u32, x: DVec3) -> Option<(DVec3, f64)> {
            let hit = self.mesh.closest(x, 5.0 * self.eta)?;
            Some((hit.normal, hit.normal.dot(x) - (hit.distance - self.eta)))
        }
    }

    /// Signed distance from `p` to the solid box of half extents `half` at the origin.
    fn box_distance(p: DVec3, half: DVec3) -> f64 {
        let q = p.abs() - half;
        q.max(DVec3::ZERO).length() + q.max_element().min(0.0)
    }

    #[test]
    fn nodes_driven_into_an_obstacle_mesh_end_on_its_surface() {
        // The chain of `nodes_driven_into_an_obstacle_end_on_its_surface`, its ends pinned 70 cm
        // apart, over a box mesh 36 cm wide and 40 cm high and deep (12 triangles; its top
        // edges between two nodes' rest positions): the prediction puts its middle nodes
        // inside the box. The rows, re-found at every iterate on the closest
        // feature of the mesh (the top face, the top edges, the sides), drive every node out:
        // each ends outside the box by the thickness, and those whose rows push lie on it
        // within the tolerance, including the nodes over the edges (normals between two
        // faces'). The distance is measured on the exact box, not through the mesh.
        let (half, eta) = (DVec3::new(0.18, 0.2, 0.2), 0.004);
        let (x0, _, _, mut target) = chain_over_ball();
        let n = x0.len();
        // The ends 70 cm apart, beyond the box's sides: the chain hangs over both top edges.
        // The free nodes predicted 7 cm below their rest height, 2 cm into the box: deeper,
        // the nodes near the sides would be nearer a side face than the top and be pushed out
        // through it (the medial axis; `docs/methods/isometric-contact.md` §8).
        for p in &mut target[1..n - 1] {
            p.y += 0.05;
        }
        target[0] = DVec3::new(-0.35, 0.25, 0.0);
        target[n - 1] = DVec3::new(0.35, 0.25, 0.0);
        let cube = generate::cuboid(half.as_vec3()).expect("a valid box");
        let m = cube.positions.len();
        let mut mesh = MeshObstacles::default();
        mesh.set(
            &cube.triangles,
            &vec![true; m],
            &vec![0.0; m],
            &vec![0.0; m],
            &cube.positions,
        );
        let body = MeshBody { mesh, eta };
        let (x, touching) = drive_chain_into(&body, &target, |p| box_distance(p, half) - eta);
        let mut beside = 0;
        for p in &x[1..n - 1] {
            // Beside the box below its top: the chain went over a top edge.
            if p.x.abs() > half.x && p.y < half.y {
                beside += 1;
            }
        }
        assert!(touching >= 3, "{touching} nodes on the box");
        assert!(beside >= 2, "the chain does not hang over the edges: {x:?}");
        // The prediction sank into the box (the test is not vacuous).
        assert!(box_distance(target[8], half) < 0.0);
    }

    /// The chain of [`nodes_driven_into_an_obstacle_end_on_its_surface`] with weak springs
    /// (residual rows, so that every projection solves at least once), its rows and its
    /// projector under `rule`, projected once onto the ball.
    #[allow(clippy::type_complexity)] // a test's set-up
    fn chain_on_ball(
        rule: ActiveSetRule,
    ) -> (
        GaussNewtonProjection,
        EdgeLengths,
        SpringResidual,
        Vec<f64>,
        Vec<f64>,
        Vec<DVec3>,
        Vec<DVec3>,
        ProjectionSettings,
    ) {
        let (x0, edges, inv_mass, target) = chain_over_ball();
        let n = x0.len();
        let set = EdgeLengths::new(&edges, &x0);
        let springs = SpringResidual::new(&edges, 1e-3, 1.0);
        let prox: Vec<f64> = edges
            .iter()
            .map(|&[i, j]| 1e-6 * (inv_mass[i as usize] + inv_mass[j as usize]))
            .collect();
        let settings = ProjectionSettings {
            tolerance: 1e-6,
            max_iterations: 60,
            contact_length: 0.05,
            active_set: rule,
            ..ProjectionSettings::default()
        };
        let ball = Ball { r: 0.2, eta: 0.004 };
        let mut proj = GaussNewtonProjection::new(n, &[&set, &springs], 3 * n);
        push_speculative_rows(&mut proj, &ball, &target, 1..n as u32 - 1);
        let mut x = target.clone();
        let rep = proj.project_in_contact(
            &chain_families(&set, &springs, &prox),
            &target,
            &inv_mass,
            &settings,
            &ball,
            &mut x,
            &mut || false,
        );
        assert!(rep.converged, "{rule:?}: {rep:?}");
        (proj, set, springs, prox, inv_mass, target, x, settings)
    }

    /// The families of [`chain_on_ball`]: its distance rows (proximal) and springs.
    fn chain_families<'a>(
        set: &'a EdgeLengths,
        springs: &'a SpringResidual,
        prox: &'a [f64],
    ) -> [RowFamily<'a>; 2] {
        [
            RowFamily {
                set,
                role: RowRole::Proximal(prox),
                linear: false,
                scale: StrainScale::PerRow(&set.rest),
            },
            RowFamily {
                set: springs,
                role: RowRole::Residual,
                linear: true,
                scale: StrainScale::Untested,
            },
        ]
    }

    #[test]
    fn a_reprojection_keeps_the_rows_its_nodes_rest_on() {
        // The chain projected onto the ball, then projected again towards the same target from
        // its result with every node on the ball lifted by half the stopping band
        // (`tolerance · contact_length`) along its normal: a node that the last projection
        // left on its plane within the tolerance, or that a collision pass nudged. Under
        // `ActiveSetRule::EveryIteration` its row starts active, so the re-projection holds
        // every such node from its first solve and changes no row. (Under the default rule
        // those rows start released: the first solve drives their nodes into the ball and the
        // next takes them back, `docs/methods/isometric-model.md` §A25.)
        let ball = Ball { r: 0.2, eta: 0.004 };
        let mut changes = Vec::new();
        for rule in [
            ActiveSetRule::TakeAtConvergence,
            ActiveSetRule::EveryIteration,
        ] {
            let (mut proj, set, springs, prox, inv_mass, target, x, settings) = chain_on_ball(rule);
            let band = settings.tolerance * settings.contact_length;
            let mut start = x.clone();
            let mut on_ball = 0;
            for p in start.iter_mut().skip(1).take(x.len() - 2) {
                if (p.length() - (ball.r + ball.eta)).abs() <= band {
                    *p += 0.5 * band * p.normalize();
                    on_ball += 1;
                }
            }
            assert!(on_ball >= 3, "{on_ball} nodes on the ball");
            let rep = proj.project_in_contact(
                &chain_families(&set, &springs, &prox),
                &target,
                &inv_mass,
                &settings,
                &ball,
                &mut start,
                &mut || false,
            );
            assert!(rep.converged, "{rule:?}: {rep:?}");
            for p in start.iter().skip(1).take(x.len() - 2) {
                assert!(p.length() - (ball.r + ball.eta) >= -band * 1.01, "{p}");
            }
            let changed: u32 = proj.contact_toggles.iter().map(|&t| u32::from(t)).sum();
            changes.push((changed, rep.iterations));
        }
        let (every, default) = (changes[1], changes[0]);
        assert_eq!(
            every.0, 0,
            "EveryIteration: {every:?}, default: {default:?}"
        );
        assert!(
            every.1 <= 2,
            "EveryIteration: {every:?}, default: {default:?}"
        );
        assert!(
            default.0 > 0,
            "EveryIteration: {every:?}, default: {default:?}"
        );
    }

    #[test]
    fn a_row_released_for_pulling_is_taken_back_at_the_next_iteration_its_node_is_behind() {
        // One node, one unilateral row `y ≥ 0` that has been released twice over (taken, then
        // released for pulling: its two changes spent), its node now 1 mm behind the plane,
        // and the iteration not converged (`take = false`). The default rule leaves it released
        // until the stopping test holds, and with its changes spent for good, so a projection
        // can stop, converged or at its cap, with the node inside the obstacle. Under
        // `ActiveSetRule::EveryIteration` it is taken at once and stays active; a node behind
        // by less than the stopping band is left released (the test calls that met).
        for (rule, depth, taken) in [
            (ActiveSetRule::TakeAtConvergence, 1e-3, false),
            (ActiveSetRule::EveryIteration, 1e-3, true),
            (ActiveSetRule::EveryIteration, 0.5e-5, false),
        ] {
            let x0 = vec![DVec3::ZERO, DVec3::X * 0.1];
            let set = EdgeLengths::new(&[[0, 1]], &x0);
            let mut proj = GaussNewtonProjection::new(2, &[&set], 1);
            proj.push_contact(ContactRow {
                vertex: 1,
                direction: DVec3::Y,
                target: 0.0,
                compliance: 0.0,
                unilateral: true,
                speculative: true,
            });
            let settings = ProjectionSettings {
                tolerance: 1e-3,
                contact_length: 1e-2,
                active_set: rule,
                ..ProjectionSettings::default()
            };
            proj.contact_active[0] = false;
            proj.contact_toggles[0] = MAX_CONTACT_TOGGLES;
            let x = vec![DVec3::ZERO, DVec3::new(0.1, -depth, 0.0)];
            let set_change = proj.update_active_set(&x, false, false, &settings);
            assert_eq!(set_change.changed, taken, "{rule:?} at {depth}");
            assert_eq!(proj.contact_active[0], taken, "{rule:?} at {depth}");
            if taken {
                // Active for good: a pull no longer releases it.
                let base = proj.num_cloth_rows();
                proj.z[base] = 1.0;
                let again = proj.update_active_set(&x, false, false, &settings);
                assert!(!again.changed && proj.contact_active[0]);
            }
        }
    }

    /// An infinite cylinder of radius `r` about the y axis (the side of a capsule) seen by
    /// contact rows with thickness `eta`.
    struct Cylinder {
        r: f64,
        eta: f64,
    }

    impl ContactGeometry for Cylinder {
        fn plane(&self, _vertex: u32, x: DVec3) -> Option<(DVec3, f64)> {
            let n = DVec3::new(x.x, 0.0, x.z).normalize();
            Some((n, self.r + self.eta))
        }
    }

    #[test]
    fn sheet_pushed_into_a_cylinder_converges_in_a_few_iterations_and_ends_on_it() {
        // A 13 × 13 sheet (spacing 2.5 cm, 30 cm square) hanging in the xy plane from its top
        // row, just behind a cylinder of radius 15 cm about the y axis (the side of a capsule
        // torso); the prediction carries it 2 cm into the cylinder, with a little noise. About
        // half of the free nodes start inside, their rows active; once the solve has pushed
        // the sheet out, part of those rows pull and are released, so the active set changes
        // inside the projection (the cape's case, `docs/methods/isometric-contact.md` §2).
        // The projection converges within a few iterations with every held node on the
        // cylinder and no node inside it.
        let (r, eta) = (0.15, 0.004);
        let n = 13;
        // No shear diagonals: a flat triangulated bar framework has more rows than in-plane
        // freedoms. No rows between two pinned nodes (zero rows).
        let (grid_x, mut edges) = grid(n, 0.025, false);
        edges.retain(|e| e.iter().any(|&v| v as usize >= n));
        // The grid's xz plane turned into the xy plane, top row at y = 0, centred on x = 0.
        let x0: Vec<DVec3> = grid_x
            .iter()
            .map(|p| DVec3::new(p.x - 0.15, -p.z, -(r + eta)))
            .collect();
        let set = EdgeLengths::new(&edges, &x0);
        let nv = x0.len();
        let inv_mass: Vec<f64> = (0..nv).map(|v| if v < n { 0.0 } else { 1.0 }).collect();
        let mut rng = SplitMix64::new(17);
        let target: Vec<DVec3> = x0
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if inv_mass[i] == 0.0 {
                    *p
                } else {
                    *p + DVec3::new(0.0, -0.002, 0.02) + rng.vec3(0.001)
                }
            })
            .collect();
        let cylinder = Cylinder { r, eta };
        let mut proj = GaussNewtonProjection::new(nv, &[&set], nv);
        let tolerance = 1e-3;
        let settings = ProjectionSettings {
            tolerance,
            max_iterations: 40,
            contact_length: 0.025,
            ..ProjectionSettings::default()
        };
        let (x, rep) = project_onto(
            &mut proj,
            &set,
            &edges,
            &inv_mass,
            &target,
            n as u32..nv as u32,
            &cylinder,
            &settings,
        );
        assert!(rep.converged, "{rep:?}");
        assert!(rep.iterations <= 8, "{rep:?}");
        let mut c = vec![0.0; set.len()];
        set.evaluate(&x, &mut c);
        for (ce, d) in c.iter().zip(&set.rest) {
            assert!(ce.abs() / d <= tolerance, "strain {}", ce / d);
        }
        let mut touching = 0;
        for (i, p) in x.iter().enumerate().skip(n) {
            let gap = DVec3::new(p.x, 0.0, p.z).length() - (r + eta);
            assert!(
                gap >= -tolerance * 0.025 * 1.01,
                "node {i} inside: gap {gap}"
            );
            touching += usize::from(gap.abs() <= tolerance * 0.025);
        }
        // Contact rows in pool order: node v has row v − n. Rows that started active (their
        // node inside at the prediction) and ended pushing, against those that started active.
        let lambda = &proj.multipliers()[set.len()..];
        let started = (n..nv)
            .filter(|&v| DVec3::new(target[v].x, 0.0, target[v].z).length() < r + eta)
            .count();
        let held = lambda.iter().filter(|&&l| l < 0.0).count();
        assert!(touching >= 10, "{touching} nodes on the cylinder");
        assert!(
            held >= 10 && held < started,
            "{held} rows held of {started}"
        );
    }

    #[test]
    fn cholesky_and_pcg_projections_agree() {
        // The whole projection with contact rows, solved by PCG to 1e-13 and by the sparse
        // Cholesky: the same positions.
        let (x0, edges, inv_mass) = pinned_chain();
        let set = EdgeLengths::new(&edges, &x0);
        let target: Vec<DVec3> = x0
            .iter()
            .enumerate()
            .map(|(i, p)| *p - DVec3::Y * 0.01 * i as f64)
            .collect();
        let run = |solver: LinearSolver| {
            let mut proj = GaussNewtonProjection::new(5, &[&set], 8);
            for v in [3u32, 4] {
                proj.push_contact(ContactRow {
                    vertex: v,
                    direction: DVec3::Y,
                    target: 0.0,
                    compliance: 0.0,
                    unilateral: true,
                    speculative: false,
                });
                proj.push_contact(ContactRow {
                    vertex: v,
                    direction: DVec3::X,
                    target: x0[v as usize].x,
                    compliance: 1e-3,
                    unilateral: false,
                    speculative: false,
                });
            }
            let settings = ProjectionSettings {
                tolerance: 1e-9,
                contact_length: 0.1,
                solver,
                cg: PcgSettings {
                    max_iterations: 1000,
                    tolerance: 1e-13,
                },
                ..ProjectionSettings::default()
            };
            let (rep, x) = project_hard(&mut proj, &set, &target, &inv_mass, &settings);
            assert!(rep.converged, "{solver:?}: {rep:?}");
            (rep, x)
        };
        let (pcg, xp) = run(LinearSolver::Pcg);
        let (direct, xd) = run(LinearSolver::Cholesky {
            ordering: Ordering::Amd,
            threads: CholeskyThreads::One,
        });
        assert_eq!(pcg.direct_solves, 0);
        assert!(
            direct.direct_solves == direct.iterations && direct.direct_fallbacks == 0,
            "{direct:?}"
        );
        for (a, b) in xp.iter().zip(&xd) {
            assert!((*a - *b).length() <= 1e-9, "{a} vs {b}");
        }
        assert!(xd[3].y.abs() < 1e-9 && xd[4].y.abs() < 1e-9);
    }

    /// A heavy vertical chain (`n` nodes, spacing 1 cm) pinned at the top, predicted 2 cm
    /// lower with sideways noise: the top rows carry `|λ|/ℓ ≈ n m · 2 cm / 1 cm`, far above
    /// the node mass, the regime where plain Gauss–Newton oscillates.
    fn heavy_chain(n: usize) -> (Vec<DVec3>, Vec<[u32; 2]>, Vec<f64>, Vec<DVec3>) {
        let x0: Vec<DVec3> = (0..n)
            .map(|i| DVec3::new(0.0, -0.01 * i as f64, 0.0))
            .collect();
        let edges: Vec<[u32; 2]> = (0..n as u32 - 1).map(|i| [i, i + 1]).collect();
        let mut inv_mass = vec![1.0; n];
        inv_mass[0] = 0.0;
        let mut rng = SplitMix64::new(11);
        let target = x0
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 0 {
                    *p
                } else {
                    *p + DVec3::new(0.0, -0.02, 0.0) + rng.vec3(0.003)
                }
            })
            .collect();
        (x0, edges, inv_mass, target)
    }

    /// Projects `target` onto the hard rows of `set` from `x⁽⁰⁾ = target`; the result and report.
    fn project_hard(
        proj: &mut GaussNewtonProjection,
        set: &EdgeLengths,
        target: &[DVec3],
        inv_mass: &[f64],
        settings: &ProjectionSettings,
    ) -> (ProjectionReport, Vec<DVec3>) {
        let mut x = target.to_vec();
        let rep = proj.project(
            &[hard(set)],
            target,
            inv_mass,
            settings,
            &mut x,
            &mut || false,
        );
        (rep, x)
    }

    #[test]
    fn proximal_rows_and_curvature_majorizer_keep_the_fixed_point() {
        // RowRole::Proximal and the majorizer change the iteration, not its fixed point: the
        // same positions as plain hard rows (isometric-model.md §A13, §A14), on a net where plain
        // Gauss–Newton converges.
        let (x0, edges) = grid(6, 0.05, false);
        let set = EdgeLengths::new(&edges, &x0);
        let mut inv_mass = vec![1.0; x0.len()];
        inv_mass[0] = 0.0;
        let mut rng = SplitMix64::new(5);
        let target: Vec<DVec3> = x0
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 0 {
                    *p
                } else {
                    *p + DVec3::new(0.0, -0.004, 0.0) + rng.vec3(0.002)
                }
            })
            .collect();
        let prox: Vec<f64> = edges
            .iter()
            .map(|&[i, j]| 1e-2 * (inv_mass[i as usize] + inv_mass[j as usize]))
            .collect();
        // Tolerance 0: a fixed number of iterations. The stopping test checks feasibility
        // only, so a slower (majorized) iteration would stop feasible but short of the
        // minimiser; the fixed point is what is compared here.
        let tight = |majorizer: bool| ProjectionSettings {
            tolerance: 0.0,
            max_iterations: 300,
            cg: PcgSettings {
                max_iterations: 2000,
                tolerance: 1e-13,
            },
            curvature_majorizer: majorizer,
            gauss_newton_iterations: u32::MAX,
            ..ProjectionSettings::default()
        };
        let run = |role: RowRole<'_>, majorizer: bool| {
            let mut proj = GaussNewtonProjection::new(x0.len(), &[&set], 0);
            let fam = RowFamily {
                set: &set,
                role,
                linear: false,
                scale: StrainScale::PerRow(&set.rest),
            };
            let mut x = target.clone();
            let rep = proj.project(
                &[fam],
                &target,
                &inv_mass,
                &tight(majorizer),
                &mut x,
                &mut || false,
            );
            assert!(
                rep.max_violation <= 1e-12 && !rep.linear_solve_failed,
                "{role:?} {majorizer}: {rep:?}"
            );
            x
        };
        let reference = run(RowRole::Hard, false);
        for (role, majorizer) in [
            (RowRole::Hard, true),
            (RowRole::Proximal(&prox), false),
            (RowRole::Proximal(&prox), true),
        ] {
            let x = run(role, majorizer);
            for (a, b) in x.iter().zip(&reference) {
                assert!(
                    (*a - *b).length() <= 1e-10,
                    "{role:?} {majorizer}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn self_stress_filter_removes_a_self_stress_and_keeps_the_force() {
        // Two copies of one distance row on a pinned and a free node: `(1, −1)` on their
        // multipliers moves nothing (a self-stress, isometric-model.md §A20). Injected into the
        // warm start, it stays through a projection without the filter and goes with it, while
        // the force (the sum of the two multipliers) and the positions are unchanged.
        let x0 = vec![DVec3::ZERO, DVec3::X];
        let set = EdgeLengths::new(&[[0, 1], [0, 1]], &x0);
        let inv_mass = [0.0, 1.0];
        let target = vec![DVec3::ZERO, DVec3::new(1.2, 0.3, 0.0)];
        let prox = [1e-6, 1e-6];
        let fam = || RowFamily {
            set: &set,
            role: RowRole::Proximal(&prox),
            linear: false,
            scale: StrainScale::PerRow(&set.rest),
        };
        let run = |filter: SelfStressFilter| {
            let settings = ProjectionSettings {
                tolerance: 1e-9,
                max_iterations: 50,
                self_stress_filter: filter,
                ..ProjectionSettings::default()
            };
            let mut proj = GaussNewtonProjection::new(2, &[&set], 0);
            let mut x = target.clone();
            let first = proj.project(&[fam()], &target, &inv_mass, &settings, &mut x, &mut || {
                false
            });
            assert!(first.converged, "{first:?}");
            proj.z[0] += 0.5;
            proj.z[1] -= 0.5;
            // From the prediction again, so that the projection solves (a start that meets
            // the tolerance ends without a solve, and without the filter).
            x.copy_from_slice(&target);
            let rep = proj.project(&[fam()], &target, &inv_mass, &settings, &mut x, &mut || {
                false
            });
            assert!(rep.converged, "{filter:?}: {rep:?}");
            assert_eq!(rep.self_stress_filtered, filter != SelfStressFilter::Off);
            (proj.z[0], proj.z[1], x[1])
        };
        let (a0, a1, xa) = run(SelfStressFilter::Off);
        let (b0, b1, xb) = run(SelfStressFilter::AfterConvergence);
        assert!((a0 - a1 - 1.0).abs() < 1e-9, "kept: {a0} {a1}");
        assert!(
            (b0 - b1).abs() < 1e-9 * (b0 + b1).abs(),
            "filtered: {b0} {b1}"
        );
        assert!(
            ((a0 + a1) - (b0 + b1)).abs() < 1e-5 * (a0 + a1).abs(),
            "force: {} vs {}",
            a0 + a1,
            b0 + b1
        );
        assert!((a0 + a1).abs() > 0.1, "the rows carry a load: {}", a0 + a1);
        assert!((xa - xb).length() < 1e-8, "{xa} vs {xb}");
    }

    #[test]
    fn curvature_majorizer_converges_under_heavy_tension() {
        let (x0, edges, inv_mass, target) = heavy_chain(40);
        let set = EdgeLengths::new(&edges, &x0);
        let run = |majorizer: bool| {
            let mut proj = GaussNewtonProjection::new(x0.len(), &[&set], 0);
            let settings = ProjectionSettings {
                tolerance: 1e-6,
                max_iterations: 30,
                curvature_majorizer: majorizer,
                cg: PcgSettings {
                    max_iterations: 1000,
                    tolerance: 1e-10,
                },
                gauss_newton_iterations: u32::MAX,
                ..ProjectionSettings::default()
            };
            // Two steps' worth: the second starts with the multipliers of the first.
            project_hard(&mut proj, &set, &target, &inv_mass, &settings);
            project_hard(&mut proj, &set, &target, &inv_mass, &settings).0
        };
        let plain = run(false);
        let majorized = run(true);
        eprintln!("plain {plain:?}\nmajorized {majorized:?}");
        assert!(majorized.converged, "{majorized:?}");
        assert!(
            !plain.converged || plain.iterations > majorized.iterations,
            "{plain:?} vs {majorized:?}"
        );
    }

    /// The two-phase iteration on the heavy chain (the hardest case for either phase: strains
    /// of 100 % at the start): it converges, and to a point close to the minimiser of
    /// eq. 3.13 — fast projection is not the closest point, only near it.
    #[test]
    fn two_phase_iteration_converges_near_the_minimiser() {
        let (x0, edges, inv_mass, target) = heavy_chain(40);
        let set = EdgeLengths::new(&edges, &x0);
        let run = |gauss_newton_iterations: u32, tolerance: f64, cap: u32| {
            let mut proj = GaussNewtonProjection::new(x0.len(), &[&set], 0);
            let settings = ProjectionSettings {
                tolerance,
                max_iterations: cap,
                cg: PcgSettings {
                    max_iterations: 1000,
                    tolerance: 1e-12,
                },
                gauss_newton_iterations,
                ..ProjectionSettings::default()
            };
            project_hard(&mut proj, &set, &target, &inv_mass, &settings)
        };
        let (gn, _) = run(u32::MAX, 1e-6, 30);
        let (hybrid, xh) = run(2, 1e-6, 30);
        // The minimiser itself: the thesis iteration run to a fixed point.
        let (exact, xe) = run(u32::MAX, 0.0, 400);
        eprintln!("Gauss–Newton {gn:?}\nhybrid {hybrid:?}\nexact {exact:?}");
        assert!(
            hybrid.converged && hybrid.fast_projection_iterations > 0,
            "{hybrid:?}"
        );
        // Closeness: the distance to the minimiser against the size of the projection.
        let moved = xe
            .iter()
            .zip(&target)
            .fold(0.0f64, |m, (a, b)| m.max((*a - *b).length()));
        let off = xh
            .iter()
            .zip(&xe)
            .fold(0.0f64, |m, (a, b)| m.max((*a - *b).length()));
        eprintln!(
            "projection moved nodes by up to {moved:.3e}, hybrid off the minimiser by {off:.3e}"
        );
        assert!(off <= 0.1 * moved, "{off} vs {moved}");
    }

    #[test]
    fn grid_converges_to_the_constraint_manifold_and_pins_hold() {
        let n = 8;
        // A net (no diagonals: like the red-node rows of Wang 2012 it does not lock), pinned at
        // two opposite corners. (Two pins joined by a straight row of edges at its rest length
        // would make that row taut: a self-stress, rank-deficient hard rows, isometric-model.md
        // §A12.)
        let (x0, edges) = grid(n, 0.05, false);
        let set = EdgeLengths::new(&edges, &x0);
        let last = n * n - 1;
        let mut inv_mass = vec![1.0; x0.len()];
        inv_mass[0] = 0.0;
        inv_mass[last] = 0.0;
        // Prediction of one step of a falling sheet: a uniform drop plus a few % of noise.
        let mut rng = SplitMix64::new(3);
        let x_target: Vec<DVec3> = x0
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if inv_mass[i] == 0.0 {
                    *p
                } else {
                    *p + DVec3::new(0.0, -0.01, 0.0) + rng.vec3(0.002)
                }
            })
            .collect();
        let mut proj = GaussNewtonProjection::new(x0.len(), &[&set], 0);
        let settings = ProjectionSettings {
            tolerance: 1e-6,
            max_iterations: 30,
            ..ProjectionSettings::default()
        };
        let mut x = x_target.clone();
        let rep = proj.project(
            &[hard(&set)],
            &x_target,
            &inv_mass,
            &settings,
            &mut x,
            &mut || false,
        );
        assert!(rep.converged, "{rep:?}");
        assert!(rep.iterations <= 10, "{rep:?}");
        // The default solver: every iteration solved by the sparse Cholesky.
        assert!(
            rep.direct_solves == rep.iterations && rep.direct_fallbacks == 0,
            "{rep:?}"
        );
        let mut c = vec![0.0; set.len()];
        set.evaluate(&x, &mut c);
        for (ce, d) in c.iter().zip(&set.rest) {
            assert!(ce.abs() / d <= 1e-6, "strain {}", ce / d);
        }
        assert_eq!(x[0], x_target[0]);
        assert_eq!(x[last], x_target[last]);
        // The projection is mass-weighted closest: it moved the sheet, but not by more than
        // the prediction's violation scale.
        let moved = x
            .iter()
            .zip(&x_target)
            .map(|(a, b)| (*a - *b).length())
            .fold(0.0, f64::max);
        assert!(moved > 1e-4 && moved < 0.05, "moved {moved}");
        // Projecting the result again is a no-op (it is feasible to the tolerance).
        let x1 = x.clone();
        let rep2 = proj.project(
            &[hard(&set)],
            &x1,
            &inv_mass,
            &settings,
            &mut x,
            &mut || false,
        );
        assert!(rep2.converged && rep2.iterations == 0, "{rep2:?}");
        assert_eq!(x, x1);
    }

    #[test]
    fn rigidly_moved_rest_state_is_a_no_op() {
        let (x0, edges) = grid(5, 0.1, true);
        let set = EdgeLengths::new(&edges, &x0);
        let r = glam::DMat3::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 0.7);
        let target: Vec<DVec3> = x0
            .iter()
            .map(|p| r * *p + DVec3::new(1.0, 2.0, 3.0))
            .collect();
        let inv_mass = vec![1.0; x0.len()];
        let mut proj = GaussNewtonProjection::new(x0.len(), &[&set], 0);
        let mut x = target.clone();
        let rep = proj.project(
            &[hard(&set)],
            &target,
            &inv_mass,
            &ProjectionSettings::default(),
            &mut x,
            &mut || false,
        );
        assert!(rep.converged && rep.iterations == 0 && rep.max_violation < 1e-12);
        assert_eq!(x, target);
    }

    #[test]
    fn residual_rows_give_the_implicit_euler_minimiser() {
        // Springs only, no constraints: one Gauss–Newton iteration must solve
        // (M + h² k Lₛ) x = M x̃ exactly (eq. 3.11 for a quadratic potential, eq. 3.25 with
        // J empty), one pinned vertex.
        let (x0, edges) = grid(3, 0.1, true);
        let (h, k) = (0.01, 2.0e3);
        let spring = SpringResidual::new(&edges, h, k);
        let nv = x0.len();
        let mut rng = SplitMix64::new(11);
        let mass: Vec<f64> = (0..nv).map(|_| rng.uniform(0.5, 2.0)).collect();
        let mut inv_mass: Vec<f64> = mass.iter().map(|m| 1.0 / m).collect();
        inv_mass[4] = 0.0;
        let target: Vec<DVec3> = x0.iter().map(|p| *p + rng.vec3(0.05)).collect();
        // Dense reference per coordinate: free vertices solve, the pin stays at x̃.
        let mut a = faer::Mat::<f64>::zeros(nv, nv);
        for i in 0..nv {
            a[(i, i)] = mass[i];
        }
        for &[i, j] in &edges {
            let (i, j) = (i as usize, j as usize);
            let s = h * h * k;
            a[(i, i)] += s;
            a[(j, j)] += s;
            a[(i, j)] -= s;
            a[(j, i)] -= s;
        }
        let free: Vec<usize> = (0..nv).filter(|&i| inv_mass[i] > 0.0).collect();
        let af = faer::Mat::<f64>::from_fn(free.len(), free.len(), |r, c| a[(free[r], free[c])]);
        let lu = af.partial_piv_lu();
        let mut proj = GaussNewtonProjection::new(nv, &[&spring], 0);
        let fam = RowFamily {
            set: &spring,
            role: RowRole::Residual,
            linear: true,
            scale: StrainScale::Untested,
        };
        let settings = ProjectionSettings {
            cg: PcgSettings {
                max_iterations: 500,
                tolerance: 1e-13,
            },
            ..ProjectionSettings::default()
        };
        let mut x = target.clone();
        let rep = proj.project(&[fam], &target, &inv_mass, &settings, &mut x, &mut || false);
        assert!(rep.converged && rep.iterations == 1, "{rep:?}");
        for c in 0..3 {
            let b = faer::Mat::<f64>::from_fn(free.len(), 1, |r, _| {
                let i = free[r];
                let mut v = mass[i] * target[i][c];
                for &[p, q] in &edges {
                    let s = h * h * k;
                    if p as usize == i && inv_mass[q as usize] == 0.0 {
                        v += s * target[q as usize][c];
                    }
                    if q as usize == i && inv_mass[p as usize] == 0.0 {
                        v += s * target[p as usize][c];
                    }
                }
                v
            });
            let sol = lu.solve(&b);
            for (r, &i) in free.iter().enumerate() {
                assert!(
                    (x[i][c] - sol[(r, 0)]).abs() <= 1e-10,
                    "vertex {i} coord {c}: {} vs {}",
                    x[i][c],
                    sol[(r, 0)]
                );
            }
        }
        assert_eq!(x[4], target[4]);
    }

    /// A straight chain of 5 vertices 0.1 m apart along x, its 4 edges, and inverse masses 1
    /// with vertex 0 pinned: the contact tests' rig.
    fn pinned_chain() -> (Vec<DVec3>, Vec<[u32; 2]>, Vec<f64>) {
        let x0 = (0..5)
            .map(|i| DVec3::new(0.1 * f64::from(i), 0.0, 0.0))
            .collect();
        let edges = (0..4).map(|i| [i, i + 1]).collect();
        let mut inv_mass = vec![1.0; 5];
        inv_mass[0] = 0.0;
        (x0, edges, inv_mass)
    }

    #[test]
    fn contact_rows_hold_normal_and_pool_overflow_is_counted() {
        // A chain of 4 edges pinned at vertex 0, predicted to fall through y = 0; hard normal
        // rows (eq. 3.26) at the two last vertices keep them on y = 0.
        let (x0, edges, inv_mass) = pinned_chain();
        let set = EdgeLengths::new(&edges, &x0);
        let target: Vec<DVec3> = x0
            .iter()
            .enumerate()
            .map(|(i, p)| *p - DVec3::Y * 0.01 * i as f64)
            .collect();
        let mut proj = GaussNewtonProjection::new(5, &[&set], 1);
        for v in [3u32, 4] {
            proj.push_contact(ContactRow {
                vertex: v,
                direction: DVec3::Y,
                target: 0.0,
                compliance: 0.0,
                unilateral: false,
                speculative: false,
            });
        }
        assert_eq!(proj.contact_overflows(), 1);
        // The inner solve must be tighter than the outer tolerance: the linearised violation
        // after an update is the PCG residual of the hard rows.
        let settings = ProjectionSettings {
            tolerance: 1e-8,
            contact_length: 0.1,
            cg: PcgSettings {
                max_iterations: 1000,
                tolerance: 1e-12,
            },
            ..ProjectionSettings::default()
        };
        let (rep, x) = project_hard(&mut proj, &set, &target, &inv_mass, &settings);
        assert!(rep.converged, "{rep:?}");
        assert!(x[3].y.abs() < 1e-9 && x[4].y.abs() < 1e-9);
        assert_eq!(proj.multipliers().len(), 6);
        // The deadline stops it before any solve.
        proj.reset_warm_start();
        let mut x = target.clone();
        let rep = proj.project(
            &[hard(&set)],
            &target,
            &inv_mass,
            &settings,
            &mut x,
            &mut || true,
        );
        assert!(rep.interrupted && rep.iterations == 0);
    }

    #[test]
    fn unilateral_contact_rows_release_when_they_would_pull() {
        // A chain of 4 springs (residual rows, eq. 3.19) pinned at vertex 0, predicted to dip
        // through y = 0 at vertex 3 and to rise above it at vertex 4; both carry a normal row
        // `n · x ≥ 0` (n = +y), vertex 4 also a soft tangent row pulling it along x.
        let (x0, edges, inv_mass) = pinned_chain();
        let springs = SpringResidual::new(&edges, 0.01, 1e3);
        let dip = [0.0, -0.005, -0.01, -0.02, 0.03];
        let target: Vec<DVec3> = x0.iter().zip(dip).map(|(p, y)| *p + DVec3::Y * y).collect();
        let settings = ProjectionSettings {
            tolerance: 1e-9,
            contact_length: 0.1,
            cg: PcgSettings {
                max_iterations: 1000,
                tolerance: 1e-12,
            },
            ..ProjectionSettings::default()
        };
        let normal = |v: u32, unilateral: bool| ContactRow {
            vertex: v,
            direction: DVec3::Y,
            target: 0.0,
            compliance: 0.0,
            unilateral,
            speculative: false,
        };
        let tangent = ContactRow {
            vertex: 4,
            direction: DVec3::X,
            target: 0.35,
            compliance: 1e-3,
            unilateral: false,
            speculative: false,
        };
        let solve = |rows: &[ContactRow]| {
            let family = RowFamily {
                set: &springs,
                role: RowRole::Residual,
                linear: true,
                scale: StrainScale::Untested,
            };
            let mut proj = GaussNewtonProjection::new(5, &[&springs], 8);
            for &r in rows {
                proj.push_contact(r);
            }
            let mut x = target.clone();
            let rep = proj.project(
                &[family],
                &target,
                &inv_mass,
                &settings,
                &mut x,
                &mut || false,
            );
            assert!(rep.converged, "{rep:?}");
            (rep, x, proj.multipliers()[springs.len()..].to_vec())
        };
        // Reference: only vertex 3's row, which pushes (λ < 0: force −λ n along +y).
        let (_, reference, lambda) = solve(&[normal(3, true)]);
        assert!(lambda[0] < 0.0 && reference[3].y.abs() < 1e-9, "{lambda:?}");
        assert!(reference[4].y > 1e-3, "{:?}", reference[4]);
        // Unilateral: vertex 4's row and its tangent are released; the result is the reference.
        let (rep, x, lambda) = solve(&[normal(3, true), normal(4, true), tangent]);
        assert_eq!(rep.released_contacts, 1, "{rep:?}");
        assert_eq!(&lambda[1..], &[0.0, 0.0]);
        for (a, b) in x.iter().zip(&reference) {
            assert!((*a - *b).length() < 1e-9, "{a} vs {b}");
        }
        // Equality rows (eq. 3.26 as printed) hold vertex 4 on y = 0 and pull it there.
        let (rep, x, lambda) = solve(&[normal(3, false), normal(4, false), tangent]);
        assert_eq!(rep.released_contacts, 0);
        assert!(
            x[4].y.abs() < 1e-9 && lambda[1] > 0.0,
            "{:?} {lambda:?}",
            x[4]
        );
    }

    #[test]
    fn projection_bits_independent_of_threads() {
        let n = 40;
        let (x0, edges) = grid(n, 0.025, true);
        let set = EdgeLengths::new(&edges, &x0);
        let mut inv_mass = vec![1.0; x0.len()];
        inv_mass[0] = 0.0;
        let mut rng = SplitMix64::new(5);
        let target: Vec<DVec3> = x0.iter().map(|p| *p + rng.vec3(0.003)).collect();
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool")
                .install(|| {
                    let mut proj = GaussNewtonProjection::new(x0.len(), &[&set], 0);
                    let mut x = target.clone();
                    let rep = proj.project(
                        &[hard(&set)],
                        &target,
                        &inv_mass,
                        &ProjectionSettings::default(),
                        &mut x,
                        &mut || false,
                    );
                    (x, rep)
                })
        };
        let (a, ra) = run(1);
        let (b, rb) = run(2);
        assert_eq!(ra, rb);
        assert!(
            a.iter()
                .zip(&b)
                .all(|(p, q)| p.to_array().map(f64::to_bits) == q.to_array().map(f64::to_bits))
        );
    }
}

#[cfg(test)]
impl GaussNewtonProjection {
    /// Test hook: the cloth block of `K` at `x` (gradients and `D` as [`Self::project`] sets
    /// them), assembled on the [`SymCsr`] pattern and applied matrix-free, both dense row-major.
    pub(crate) fn dense_k_at(
        &mut self,
        families: &[RowFamily<'_>],
        x: &[DVec3],
        inv_mass: &[f64],
    ) -> (usize, Vec<f64>, Vec<f64>) {
        let rows = self.num_cloth_rows();
        for (i, f) in families.iter().enumerate() {
            f.role.fill_diagonal(
                &mut self.diag[self.topo.family_rows[i]..self.topo.family_rows[i + 1]],
            );
            let g =
                &mut self.gradients[self.topo.family_entries[i]..self.topo.family_entries[i + 1]];
            f.set.gradients(x, g);
        }
        self.k_cloth
            .assemble(&self.gradients, inv_mass, &self.diag[..rows]);
        let assembled = self.k_cloth.to_dense();
        let mut op = KOperator {
            topo: &self.topo,
            gradients: &self.gradients,
            diag: &self.diag[..rows],
            contacts: &[],
            active: &[],
            selfs: &[],
            self_active: &[],
            edges: None,
            inv_mass,
            u: &mut self.u,
        };
        let mut free = vec![0.0; rows * rows];
        let mut e = vec![0.0; rows];
        let mut col = vec![0.0; rows];
        for b in 0..rows {
            e[b] = 1.0;
            op.apply(&e, &mut col);
            e[b] = 0.0;
            for a in 0..rows {
                free[a * rows + b] = col[a];
            }
        }
        (rows, assembled, free)
    }
}
