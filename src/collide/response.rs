//! Velocity responses of a close or colliding pair: impulse distribution, repulsion, friction and
//! inelastic collision impulses with a minimum separation.
//!
//! Bridson, Fedkiw & Anderson 2002 (`docs/methods/bridson-collisions.md` §3.6–§3.9). Every response is
//! stated as a target change Δ of the relative velocity along a direction and applied with one formula,
//! `docs/methods/bridson-collisions.md` (3.10) ([`apply_velocity_change`]). Velocities are the step-average `v^{n+1/2}` (f32, m/s);
//! the arithmetic that decides the outcome is `f64`.
//!
//! # Stencils and the sign convention (`docs/methods/bridson-collisions.md` §3.6)
//!
//! A [`Stencil`] is the four vertices of a point–triangle pair (triangle `x1 x2 x3` = *first side*, point
//! `x4` = *second side*) or an edge–edge pair (edge `x1 x2` = first side, edge `x3 x4` = second side), the
//! weights that interpolate each side's contact point (first side `α`, second side `β`, each summing to 1),
//! and the unit normal `n̂` pointing **from the first side to the second**. Written as signed coefficients
//! `c = (−α, +β)` over the four vertices, the relative velocity of the second side w.r.t. the first is
//! `v_rel = Σ_i c_i v_i`, its normal part `v_N = n̂ · v_rel`; `v_N < 0` means approaching. These are exactly
//! the signed weights of [`CcdHit::weights`] (which lists the second side first), and the normal orientation
//! of [`super::proximity`] and [`super::ccd`] (from the triangle / edge `q` toward the point / edge `p`).
//!
//! # Derivation of eq. 3.10
//!
//! Give vertex `i` the velocity change `c_i J w_i d̂` (`w_i = 1/m_i`, `J` a scalar impulse, `d̂` a unit
//! direction). The change of `v_rel` is `Σ c_i · c_i J w_i d̂ = J (Σ c_i² w_i) d̂`, so `J = Δ / Σ c_i² w_i`
//! changes `v_rel` by exactly `Δ d̂` — along `d̂` and nowhere else. The momentum change is
//! `Σ m_i c_i J w_i d̂ = J (Σ c_i) d̂ = 0` because `Σ c_i = −Σ α + Σ β = 0`. This is `docs/methods/bridson-collisions.md` (3.10) with
//! `α_k = −c_k`, `β_l = c_l`. With equal masses `m`, `Δ = −2I/m` and `J = −Ĩ` it reproduces eq. 3.8–3.9.
//! Vertices with `w_i = 0` (pinned cloth vertices, obstacles) receive nothing; if `Σ c_i² w_i = 0` the pair
//! is skipped.
//!
//! # Repulsion (eq. 3.11–3.12)
//!
//! (a) inelastic: if `v_N < 0`, `Δ_a = −v_N`; then `v_N` is recomputed from the updated velocities.
//! (b) spring: with overlap `d = η − n̂·(x_second − x_first) > 0` (eq. 3.11, positions at `x^n`), if
//! `v_N < 0.1 d/h`, `Δ_b = min(2hkd/m̄, 0.1 d/h − v_N)` — `docs/methods/bridson-collisions.md`'s adopted form, which fixes the factor-2
//! overshoot of the source's cap under the eq. 3.8 convention. For `m̄` `docs/methods/bridson-collisions.md` suggests
//! `2 / (1/Σα_k m_k + 1/Σβ_l m_l)`; weft uses the **inverse-mass average** instead,
//! `2/m̄ = w̄_first + w̄_second` with `w̄_side = Σ α⁺_k w_k / Σ α⁺_k` (`α⁺ = max(α, 0)`). Both equal `m` when
//! each side's masses are equal, so they agree on cloth of uniform density; the inverse-mass form is
//! continuous when the contact point slides onto an infinite-mass (pinned) vertex, where `Σ α_k m_k`
//! jumps to infinity, and it needs no mass array. The clamp `α⁺` keeps `m̄ > 0` for the slightly negative
//! weights the proximity test accepts within its δ band. A side of infinite mass gives `2hkd/m̄ = hkd w̄_other`,
//! the spring impulse `hkd` delivered to the free side alone.
//!
//! # Friction (eq. 3.13)
//!
//! With `Δv_N` the total normal change just applied and `v_T` the tangential relative velocity, remove
//! `min(μ Δv_N, |v_T|)` along `−v̂_T` with eq. 3.10: the pair sticks when `μ Δv_N ≥ |v_T|` and otherwise slides
//! with `|v_T|` reduced by `μ Δv_N`. `μ` appears once (the source's built-in second `μ` is dropped).
//!
//! # Collision impulses and the minimum separation (`docs/methods/bridson-collisions.md` §3.9)
//!
//! Target `v_N^new = max(0, (s_min − d0)/h)`, applied when the linearised end-of-step separation
//! `d0 + h v_N` is below `s_min`. The new velocities are rounded to `f32` when stored, which can lose a few
//! ulps of `v_N`; the target is therefore raised by a bound on that rounding,
//! `ε_f32 · Σ_i |c_i| |v_i^new|` (twice the worst case), so that `d0 + h v_N ≥ s_min` holds for the *stored*
//! velocities, evaluated in `f64`. The margin is a relative `1e-7` of the velocities involved: physically
//! nothing. Friction (eq. 3.13) may be applied to collision impulses too (`mu > 0`), an option `docs/methods/bridson-collisions.md`
//! leaves open.
#![deny(unsafe_code)]

use glam::{DVec3, Vec3};

use super::ccd::CcdHit;
use super::proximity::{EdgeEdgeProximity, PointTriangleProximity};

/// Fraction of the overlap `d` that the spring repulsion may remove in one step: the cap `0.1 d / h` of
/// Bridson 2002, `docs/methods/bridson-collisions.md` (3.12).
pub const REPULSION_OVERLAP_FRACTION: f64 = 0.1;

/// Which primitives a [`Stencil`] couples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StencilKind {
    /// Triangle `x1 x2 x3` (first side) and point `x4` (second side).
    PointTriangle,
    /// Edge `x1 x2` (first side) and edge `x3 x4` (second side).
    EdgeEdge,
}

impl StencilKind {
    /// Number of first-side vertices: 3 for point–triangle, 2 for edge–edge. The rest of the four are the
    /// second side.
    #[must_use]
    #[inline]
    pub const fn first_count(self) -> usize {
        match self {
            StencilKind::PointTriangle => 3,
            StencilKind::EdgeEdge => 2,
        }
    }
}

/// The four vertices of a close or colliding pair, their interpolation weights and the contact normal
/// (`docs/methods/bridson-collisions.md` §3.6; conventions in the module doc).
///
/// Invariant: `verts` lists the first side, then the second (3 + 1 or 2 + 2); `weights` are the matching
/// side weights (`α`, then `β`), each side summing to 1; `normal` is unit (or zero for a stencil built from a
/// zero normal, which then changes nothing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stencil {
    verts: [u32; 4],
    weights: [f64; 4],
    kind: StencilKind,
    normal: DVec3,
}

impl Stencil {
    /// Point–triangle stencil: triangle `tri = [x1, x2, x3]` with barycentric weights `w` (`Σ w = 1`) is the
    /// first side, vertex `point = x4` the second; `normal` points from the triangle toward the point and is
    /// normalised here.
    #[must_use]
    pub fn point_triangle(tri: [u32; 3], point: u32, w: [f64; 3], normal: DVec3) -> Self {
        Self {
            verts: [tri[0], tri[1], tri[2], point],
            weights: [w[0], w[1], w[2], 1.0],
            kind: StencilKind::PointTriangle,
            normal: normal.normalize_or_zero(),
        }
    }

    /// Edge–edge stencil: edge `first = [x1, x2]` with contact point `(1 − a) x1 + a x2` is the first side,
    /// edge `second = [x3, x4]` with contact point `(1 − b) x3 + b x4` the second; `normal` points from the
    /// first edge toward the second and is normalised here.
    #[must_use]
    pub fn edge_edge(first: [u32; 2], a: f64, second: [u32; 2], b: f64, normal: DVec3) -> Self {
        Self {
            verts: [first[0], first[1], second[0], second[1]],
            weights: [1.0 - a, a, 1.0 - b, b],
            kind: StencilKind::EdgeEdge,
            normal: normal.normalize_or_zero(),
        }
    }

    /// Stencil of a repulsion proximity ([`super::proximity::proximity_point_triangle`]) between vertex
    /// `point` and triangle `tri`, found at `x^n`.
    #[must_use]
    pub fn from_point_triangle(point: u32, tri: [u32; 3], prox: &PointTriangleProximity) -> Self {
        Self::point_triangle(tri, point, prox.weights, prox.normal)
    }

    /// Stencil of a repulsion proximity ([`super::proximity::proximity_edge_edge`]) between edge `p` (its
    /// first argument) and edge `q`. The proximity's normal points from `q` toward `p`, so `q` is the first
    /// side (parameter `prox.b`) and `p` the second (parameter `prox.a`).
    #[must_use]
    pub fn from_edge_edge(p: [u32; 2], q: [u32; 2], prox: &EdgeEdgeProximity) -> Self {
        Self::edge_edge(q, prox.b, p, prox.a, prox.normal)
    }

    /// Stencil of a CCD hit ([`super::ccd::ccd_point_triangle`]) between vertex `point` (the CCD's `x0`) and
    /// triangle `tri` (`x1, x2, x3`): weights and normal at the contact instant, normal oriented as the pair
    /// stood at the start of the step.
    #[must_use]
    pub fn from_point_triangle_hit(point: u32, tri: [u32; 3], hit: &CcdHit) -> Self {
        let w = hit.weights;
        Self::point_triangle(tri, point, [-w[1], -w[2], -w[3]], hit.normal)
    }

    /// Stencil of a CCD hit ([`super::ccd::ccd_edge_edge`]) between edge `p` (the CCD's `x0, x1`) and edge `q`
    /// (`x2, x3`). As for proximities, `q` is the first side and `p` the second.
    #[must_use]
    pub fn from_edge_edge_hit(p: [u32; 2], q: [u32; 2], hit: &CcdHit) -> Self {
        // CCD signed weights: [1 − a, a, −(1 − b), −b] with a on p and b on q.
        Self::edge_edge(q, -hit.weights[3], p, hit.weights[1], hit.normal)
    }

    /// Point–triangle or edge–edge.
    #[must_use]
    #[inline]
    pub fn kind(&self) -> StencilKind {
        self.kind
    }

    /// Vertex indices: first side, then second side.
    #[must_use]
    #[inline]
    pub fn verts(&self) -> [u32; 4] {
        self.verts
    }

    /// Side weights in vertex order: `α` of the first side, then `β` of the second (eq. 3.10).
    #[must_use]
    #[inline]
    pub fn side_weights(&self) -> [f64; 4] {
        self.weights
    }

    /// Signed coefficients `c = (−α, +β)`: `Σ c_i x_i` is the second side's contact point minus the first's.
    #[must_use]
    #[inline]
    pub fn coefficients(&self) -> [f64; 4] {
        let first = self.kind.first_count();
        let mut c = self.weights;
        for ci in c.iter_mut().take(first) {
            *ci = -*ci;
        }
        c
    }

    /// Unit normal, from the first side toward the second.
    #[must_use]
    #[inline]
    pub fn normal(&self) -> DVec3 {
        self.normal
    }

    /// Signed separation `n̂ · Σ c_i x_i` of the two contact points along the normal (m), evaluated in `f64`.
    /// At the start-of-step positions this is `d0` of [`collision_impulse`].
    ///
    /// # Panics
    /// If a vertex index is out of range of `x`.
    #[must_use]
    pub fn separation(&self, x: &[Vec3]) -> f64 {
        self.normal.dot(gather(self, x))
    }

    /// Overlap `d = η − n̂ · Σ c_i x_i` of the pair for thickness `eta` (m); positive when the pair is closer
    /// than η. Bridson 2002, `docs/methods/bridson-collisions.md` (3.11) (with positions, not velocities:).
    ///
    /// # Panics
    /// If a vertex index is out of range of `x`.
    #[must_use]
    pub fn overlap(&self, x: &[Vec3], eta: f32) -> f32 {
        (f64::from(eta) - self.separation(x)) as f32
    }
}

/// `Σ c_i y_i` over the stencil, in `f64`.
#[inline]
fn gather(s: &Stencil, y: &[Vec3]) -> DVec3 {
    let c = s.coefficients();
    let mut sum = DVec3::ZERO;
    for (ci, &vi) in c.iter().zip(s.verts.iter()) {
        sum += *ci * y[vi as usize].as_dvec3();
    }
    sum
}

/// Inverse mass of vertex `i` as used by the responses: non-positive (and NaN) inverse masses are infinite
/// masses.
#[inline]
fn inverse_mass(inv_mass: &[f32], i: u32) -> f64 {
    let w = f64::from(inv_mass[i as usize]);
    if w > 0.0 { w } else { 0.0 }
}

/// `Σ c_i² w_i`, the denominator of eq. 3.10.
#[inline]
fn response_denominator(s: &Stencil, inv_mass: &[f32]) -> f64 {
    let c = s.coefficients();
    let mut den = 0.0;
    for (ci, &vi) in c.iter().zip(s.verts.iter()) {
        den += ci * ci * inverse_mass(inv_mass, vi);
    }
    den
}

/// Eq. 3.10 in `f64` along a unit direction `dir`; `None` (and no change) when the denominator is 0.
fn apply_change(
    s: &Stencil,
    dir: DVec3,
    delta: f64,
    v: &mut [Vec3],
    inv_mass: &[f32],
) -> Option<f64> {
    let den = response_denominator(s, inv_mass);
    if !exceeds(den, 0.0) || !delta.is_finite() {
        return None;
    }
    let j = delta / den;
    let c = s.coefficients();
    for (ci, &vi) in c.iter().zip(s.verts.iter()) {
        let w = inverse_mass(inv_mass, vi);
        if w > 0.0 && *ci != 0.0 {
            let slot = &mut v[vi as usize];
            *slot = (slot.as_dvec3() + (ci * j * w) * dir).as_vec3();
        }
    }
    Some(j)
}

/// Relative velocity `Σ_l β_l v_l − Σ_k α_k v_k` of the second side w.r.t. the first at the interpolated
/// contact points (m/s). Bridson 2002, `docs/methods/bridson-collisions.md` (3.10) (the interpolation of §3.6).
///
/// # Panics
/// If a vertex index is out of range of `v`.
#[must_use]
pub fn relative_velocity(s: &Stencil, v: &[Vec3]) -> Vec3 {
    gather(s, v).as_vec3()
}

/// Changes the interpolated relative velocity along `dir` by `delta` (m/s) with unequal masses and returns
/// the impulse `J` (kg·m/s). Bridson 2002, `docs/methods/bridson-collisions.md` (3.10).
///
/// Symbols: `J = Δ / (Σ_k α_k² w_k + Σ_l β_l² w_l)`, `v_k −= α_k J w_k d̂` on the first side,
/// `v_l += β_l J w_l d̂` on the second; `w = inv_mass` (1/kg, 0 = infinite mass), `d̂ = dir` normalised
/// (any non-zero length; a zero `dir` changes nothing). The change of the relative velocity is exactly
/// `delta · d̂` (up to the final `f32` rounding); linear momentum is conserved; infinite-mass vertices are
/// not written. Skips the pair and returns 0 when the denominator is 0, i.e. when every vertex with a
/// non-zero weight has infinite mass. Computed in `f64`.
///
/// # Panics
/// If a vertex index is out of range of `v` or `inv_mass`.
pub fn apply_velocity_change(
    s: &Stencil,
    dir: Vec3,
    delta: f32,
    v: &mut [Vec3],
    inv_mass: &[f32],
) -> f32 {
    let dir = dir.as_dvec3().normalize_or_zero();
    if dir == DVec3::ZERO {
        return 0.0;
    }
    apply_change(s, dir, f64::from(delta), v, inv_mass).map_or(0.0, |j| j as f32)
}

/// What [`repel`] did to one pair, for statistics. All changes are of the relative velocity (m/s).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RepulsionOutcome {
    /// Normal change of the inelastic part (a), `−v_N` when the pair approached, else 0.
    pub inelastic: f32,
    /// Normal change of the spring part (b), `min(2hkd/m̄, 0.1 d/h − v_N)`, else 0.
    pub spring: f32,
    /// Tangential speed removed by friction, `min(μ Δv_N, |v_T|)`.
    pub friction: f32,
    /// True when friction stopped the tangential motion (static friction, `μ Δv_N ≥ |v_T| > 0`).
    pub sticking: bool,
}

impl RepulsionOutcome {
    /// Total normal velocity change `Δv_N` (m/s).
    #[must_use]
    #[inline]
    pub fn normal_change(&self) -> f32 {
        self.inelastic + self.spring
    }

    /// True when any impulse was applied.
    #[must_use]
    #[inline]
    pub fn is_active(&self) -> bool {
        self.inelastic > 0.0 || self.spring > 0.0 || self.friction > 0.0
    }
}

/// Repulsion of one close pair, then Coulomb friction. Bridson 2002, `docs/methods/bridson-collisions.md` (3.11–3.12)
/// (adopted form) and eq. 3.13, applied through eq. 3.10.
///
/// Symbols: `overlap_d = d` of eq. 3.11 (m, [`Stencil::overlap`] at `x^n`), `h` step (s), `stiffness = k`
/// (N/m), `mu = μ` (dimensionless), `v = v^{n+1/2}` (m/s), `inv_mass` (1/kg, 0 = infinite mass).
///
/// 1. Inelastic: if `v_N < 0`, change `v_N` by `−v_N` (the approach stops).
/// 2. Spring, only for `d > 0`: recompute `v_N`; if `v_N < 0.1 d/h`, change it by
///    `min(2hkd/m̄, 0.1 d/h − v_N)`, so one step removes at most a tenth of the overlap.
/// 3. Friction with `Δv_N` = the total normal change of 1 and 2.
///
/// Departure (`docs/methods/bridson-collisions.md`'s choice of `m̄`, see the module doc): `2/m̄ = w̄_first + w̄_second`, the
/// inverse-mass averages of the two sides, instead of `Σ α_k m_k` averages. A separating pair
/// (`v_N ≥ 0`) without overlap is left untouched. Infinite-mass-only pairs are skipped.
///
/// # Panics
/// If a vertex index is out of range of `v` or `inv_mass`.
pub fn repel(
    s: &Stencil,
    overlap_d: f32,
    h: f32,
    stiffness: f32,
    mu: f32,
    v: &mut [Vec3],
    inv_mass: &[f32],
) -> RepulsionOutcome {
    let mut out = RepulsionOutcome::default();
    let n = s.normal;
    if n == DVec3::ZERO {
        return out;
    }
    let mut dvn = 0.0;
    // (a) Inelastic part.
    let vn = n.dot(gather(s, v));
    if vn < 0.0 && apply_change(s, n, -vn, v, inv_mass).is_some() {
        dvn -= vn;
        out.inelastic = (-vn) as f32;
    }
    // (b) Capped spring part.
    let d = f64::from(overlap_d);
    let h = f64::from(h);
    if d > 0.0 && h > 0.0 {
        let vn = n.dot(gather(s, v));
        let limit = REPULSION_OVERLAP_FRACTION * d / h;
        if vn < limit {
            // 2hkd/m̄ = hkd (w̄_first + w̄_second).
            let spring = h
                * f64::from(stiffness)
                * d
                * (side_inverse_mass(s, inv_mass, true) + side_inverse_mass(s, inv_mass, false));
            let delta = spring.min(limit - vn);
            if delta > 0.0 && apply_change(s, n, delta, v, inv_mass).is_some() {
                dvn += delta;
                out.spring = delta as f32;
            }
        }
    }
    // Friction with the total normal change.
    if dvn > 0.0 {
        (out.friction, out.sticking) = apply_friction(s, f64::from(mu) * dvn, v, inv_mass);
    }
    out
}

/// Inverse-mass average `w̄ = Σ α⁺_k w_k / Σ α⁺_k` of one side (`first` selects it), `α⁺ = max(α, 0)`;
/// 0 for a side without positive weight.
fn side_inverse_mass(s: &Stencil, inv_mass: &[f32], first: bool) -> f64 {
    let split = s.kind.first_count();
    let range = if first { 0..split } else { split..4 };
    let mut weight = 0.0;
    let mut sum = 0.0;
    for i in range {
        let a = s.weights[i].max(0.0);
        weight += a;
        sum += a * inverse_mass(inv_mass, s.verts[i]);
    }
    if weight > 0.0 { sum / weight } else { 0.0 }
}

/// Coulomb friction, eq. 3.13: removes `min(budget, |v_T|)` of the tangential relative velocity with eq.
/// 3.10 along `−v̂_T`, where `budget = μ Δv_N`. Returns the speed removed and whether the pair sticks.
fn apply_friction(s: &Stencil, budget: f64, v: &mut [Vec3], inv_mass: &[f32]) -> (f32, bool) {
    if !exceeds(budget, 0.0) {
        return (0.0, false);
    }
    let n = s.normal;
    let rel = gather(s, v);
    let vt = rel - n * n.dot(rel);
    let speed = vt.length();
    if !exceeds(speed, 0.0) {
        return (0.0, false);
    }
    let removed = budget.min(speed);
    match apply_change(s, vt / speed, -removed, v, inv_mass) {
        Some(_) => (removed as f32, budget >= speed),
        None => (0.0, false),
    }
}

/// Repulsion of one vertex close to an immovable surface, then Coulomb friction: [`repel`] for a pair
/// whose first side is a point of an analytic collider's surface (infinite mass, moving with the
/// collider) and whose second side is the vertex. Bridson 2002, `docs/methods/bridson-collisions.md` (3.11–3.12) (adopted
/// form) and eq. 3.13, applied through eq. 3.10.
///
/// Symbols: `vi` the vertex's `v^{n+1/2}` (m/s), `inv_mass = w` (1/kg; `w ≤ 0` or NaN: infinite mass, the
/// pair is skipped as eq. 3.10 prescribes), `surface_velocity = v_s` the velocity of the surface point
/// nearest the vertex (m/s), `normal = n̂` the outward unit normal there (from the surface toward the
/// vertex), `overlap_d = d = η − dist` (m, eq. 3.11 with the signed distance of the vertex at `x^n`;
/// negative for a vertex farther than η), `h`, `stiffness = k`, `mu = μ` as in [`repel`].
///
/// With the first side's inverse mass 0, eq. 3.10 reduces to `J = Δ / w` and `v_i += Δ n̂`: the relative
/// velocity `v_i − v_s` changes by exactly `Δ`, and `2hkd/m̄ = hkd w` (the spring impulse `hkd` on the
/// vertex alone). So, with `v_N = n̂ · (v_i − v_s)`:
///
/// 1. inelastic: if `v_N < min(0, d)/h`, `v_i += (min(0, d)/h − v_N) n̂`;
/// 2. spring, for `d > 0`: recompute `v_N`; if `v_N < 0.1 d/h`, `v_i += min(hkdw, 0.1 d/h − v_N) n̂`;
/// 3. friction with `Δv_N` = the total normal change: remove `min(μ Δv_N, |v_T|)` of the tangential
///    relative velocity `v_T`.
///
/// For a vertex within η (`d ≥ 0`) these are the same changes [`repel`] makes for a vertex against a
/// triangle of infinite-mass vertices that all move at `v_s` (a unit test checks it).
///
/// Departure (**arrival within the step**): eq. 3.11–3.12 act on pairs closer than η at `x^n` only, so a
/// vertex just outside η that the step carries inward is not repelled; against the exact surface nothing
/// else keeps it at η (the CCD rounds meet the tessellation, which lies inside the surface, and keep only
/// a tenth of η from it), and drape-65 ended vertices up to 0.07 mm *inside* its sphere. For `d < 0` the
/// inelastic part therefore limits the approach to `v_N ≥ d/h`: the linearised end distance
/// `dist + h v_N` is at least η, and the vertex arrives at the thickness as the inelastic impulse of a
/// pair that becomes close inside the step. For a convex shape (sphere, capsule) the distance is a convex
/// function of position, so the true end distance is at least the linearised one. The spring part needs
/// an overlap and stays off; friction acts on the change as for any repulsion.
#[allow(clippy::too_many_arguments)]
pub fn repel_point_surface(
    vi: &mut Vec3,
    inv_mass: f32,
    surface_velocity: Vec3,
    normal: Vec3,
    overlap_d: f32,
    h: f32,
    stiffness: f32,
    mu: f32,
) -> RepulsionOutcome {
    let mut out = RepulsionOutcome::default();
    let n = normal.as_dvec3().normalize_or_zero();
    let w = f64::from(inv_mass);
    if n == DVec3::ZERO || !exceeds(w, 0.0) {
        return out;
    }
    let vs = surface_velocity.as_dvec3();
    let add = |vi: &mut Vec3, delta: DVec3| *vi = (vi.as_dvec3() + delta).as_vec3();
    let mut dvn = 0.0;
    let d = f64::from(overlap_d);
    let h = f64::from(h);
    // (a) Inelastic part: no approach within η, and from farther away none past η within the step.
    let vn = n.dot(vi.as_dvec3() - vs);
    let floor = if d < 0.0 && h > 0.0 { d / h } else { 0.0 };
    if vn < floor {
        add(vi, (floor - vn) * n);
        dvn += floor - vn;
        out.inelastic = (floor - vn) as f32;
    }
    // (b) Capped spring part.
    if d > 0.0 && h > 0.0 {
        let vn = n.dot(vi.as_dvec3() - vs);
        let limit = REPULSION_OVERLAP_FRACTION * d / h;
        if vn < limit {
            let delta = (h * f64::from(stiffness) * d * w).min(limit - vn);
            if delta > 0.0 && delta.is_finite() {
                add(vi, delta * n);
                dvn += delta;
                out.spring = delta as f32;
            }
        }
    }
    // Friction with the total normal change.
    let budget = f64::from(mu) * dvn;
    if exceeds(budget, 0.0) {
        let rel = vi.as_dvec3() - vs;
        let vt = rel - n * n.dot(rel);
        let speed = vt.length();
        if exceeds(speed, 0.0) {
            let removed = budget.min(speed);
            add(vi, -removed / speed * vt);
            out.friction = removed as f32;
            out.sticking = budget >= speed;
        }
    }
    out
}

/// Inelastic collision impulse with minimum separation, then optional friction. Bridson 2002,
/// `docs/methods/bridson-collisions.md` §3.9 (collision impulse, minimum separation; *derived* form), applied with eq. 3.10;
/// friction eq. 3.13.
///
/// Symbols: `d0` signed start separation along the stencil normal (m, [`Stencil::separation`] of `x^n`,
/// or [`CcdHit::signed_separation`]), `s_min` (m, [`super::ccd::min_separation`]), `h` (s), `mu = μ`.
/// When `d0 + h v_N < s_min`, the relative normal velocity is raised to
/// `max(0, (s_min − d0)/h)` plus the `f32` rounding margin of the module doc, so that after the call
/// `d0 + h v_N ≥ s_min` holds for the stored velocities. Returns the normal impulse `J` (kg·m/s, ≥ 0), 0
/// when nothing was applied: the pair already separates enough, `h ≤ 0`, a zero normal, or every weighted
/// vertex has infinite mass (then the guarantee cannot hold; rigid impact zones take over).
///
/// # Panics
/// If a vertex index is out of range of `v` or `inv_mass`.
pub fn collision_impulse(
    s: &Stencil,
    d0: f32,
    s_min: f32,
    h: f32,
    mu: f32,
    v: &mut [Vec3],
    inv_mass: &[f32],
) -> f32 {
    let n = s.normal;
    let (d0, s_min, h) = (f64::from(d0), f64::from(s_min), f64::from(h));
    if n == DVec3::ZERO || !exceeds(h, 0.0) {
        return 0.0;
    }
    let vn = n.dot(gather(s, v));
    if d0 + h * vn >= s_min {
        return 0.0;
    }
    let den = response_denominator(s, inv_mass);
    if !exceeds(den, 0.0) {
        return 0.0;
    }
    let target = ((s_min - d0) / h).max(0.0);
    let delta = target - vn;
    let delta = delta + rounding_margin(s, n, delta / den, v, inv_mass);
    let Some(j) = apply_change(s, n, delta, v, inv_mass) else {
        return 0.0;
    };
    if mu > 0.0 {
        apply_friction(s, f64::from(mu) * delta, v, inv_mass);
    }
    j as f32
}

/// Bound (with a factor 2 of safety) on how much `n̂ · Σ c_i v_i` can lose when the velocities after the
/// impulse `j` along `n` are rounded to `f32`: `ε_f32 · Σ_i |c_i| |v_i^new|` over the vertices that change.
/// Rounding each component of `v_i` to nearest moves it by at most `|v_i| ε/2` per component, hence
/// `n̂ · δv_i ≤ |v_i| ε/2` by Cauchy–Schwarz.
fn rounding_margin(s: &Stencil, n: DVec3, j: f64, v: &[Vec3], inv_mass: &[f32]) -> f64 {
    let c = s.coefficients();
    let mut margin = 0.0;
    for (ci, &vi) in c.iter().zip(s.verts.iter()) {
        let w = inverse_mass(inv_mass, vi);
        if w > 0.0 && *ci != 0.0 {
            let new = v[vi as usize].as_dvec3() + (ci * j * w) * n;
            margin += ci.abs() * new.length();
        }
    }
    margin * f64::from(f32::EPSILON)
}

/// `a > b`, false when either is NaN (so `!exceeds(..)` also catches NaN).
#[inline]
fn exceeds(a: f64, b: f64) -> bool {
    a > b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::ccd::{ccd_edge_edge, ccd_point_triangle};
    use crate::collide::proximity::{proximity_edge_edge, proximity_point_triangle};

    use crate::testing::SplitMix64 as Rng;

    /// A random stencil over vertices 0..4 in a shuffled order, of either kind.
    fn random_stencil(rng: &mut Rng, kind: StencilKind) -> Stencil {
        let mut ids = [0u32, 1, 2, 3];
        for i in (1..4).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            ids.swap(i, j);
        }
        let n = rng.unit();
        match kind {
            StencilKind::PointTriangle => {
                let w1 = rng.range(-0.05, 1.0);
                let w2 = rng.range(-0.05, 1.0 - w1);
                Stencil::point_triangle(
                    [ids[0], ids[1], ids[2]],
                    ids[3],
                    [w1, w2, 1.0 - w1 - w2],
                    n,
                )
            }
            StencilKind::EdgeEdge => Stencil::edge_edge(
                [ids[0], ids[1]],
                rng.range(0.0, 1.0),
                [ids[2], ids[3]],
                rng.range(0.0, 1.0),
                n,
            ),
        }
    }

    fn momentum(v: &[Vec3], mass: &[f64]) -> DVec3 {
        v.iter().zip(mass).map(|(vi, m)| vi.as_dvec3() * *m).sum()
    }

    fn normal_velocity(s: &Stencil, v: &[Vec3]) -> f64 {
        s.normal().dot(relative_velocity(s, v).as_dvec3())
    }

    const KINDS: [StencilKind; 2] = [StencilKind::PointTriangle, StencilKind::EdgeEdge];

    #[test]
    fn velocity_change_hits_delta_and_conserves_momentum() {
        let mut rng = Rng(1);
        for case in 0..400 {
            let kind = KINDS[case % 2];
            let s = random_stencil(&mut rng, kind);
            let equal = case % 4 < 2;
            let mass: Vec<f64> = (0..4)
                .map(|_| if equal { 0.02 } else { rng.range(0.001, 0.1) })
                .collect();
            let inv_mass: Vec<f32> = mass.iter().map(|m| (1.0 / m) as f32).collect();
            // Momentum with the masses the response actually uses (1 / inv_mass).
            let used: Vec<f64> = inv_mass.iter().map(|w| 1.0 / f64::from(*w)).collect();
            let mut v: Vec<Vec3> = (0..4).map(|_| rng.vec3_f32(2.0)).collect();
            let dir = if case % 3 == 0 {
                rng.unit()
            } else {
                s.normal()
            };
            let delta = rng.range(-3.0, 3.0);
            let before = relative_velocity(&s, &v).as_dvec3();
            let p0 = momentum(&v, &used);
            let j = apply_velocity_change(&s, dir.as_vec3(), delta as f32, &mut v, &inv_mass);
            assert!(j != 0.0);
            let change = relative_velocity(&s, &v).as_dvec3() - before;
            // Exactly delta along dir, nothing across it (f32 storage of velocities ~ 1e-7 · |v|).
            assert!(
                (change.dot(dir) - delta).abs() < 2e-6,
                "{case}: {change} vs {delta}"
            );
            assert!((change - change.dot(dir) * dir).length() < 2e-6, "{case}");
            let p1 = momentum(&v, &used);
            assert!(
                (p1 - p0).length() < 1e-6 * (1.0 + p0.length()),
                "{case}: {p0} {p1}"
            );
        }
    }

    #[test]
    fn infinite_mass_vertices_are_untouched() {
        let mut rng = Rng(2);
        for case in 0..200 {
            let s = random_stencil(&mut rng, KINDS[case % 2]);
            let pinned = (rng.next_u64() % 4) as usize;
            let mut inv_mass = vec![50.0_f32; 4];
            inv_mass[pinned] = 0.0;
            let mut v: Vec<Vec3> = (0..4).map(|_| rng.vec3_f32(1.0)).collect();
            let before = v.clone();
            let vn0 = normal_velocity(&s, &v);
            apply_velocity_change(&s, s.normal().as_vec3(), 0.7, &mut v, &inv_mass);
            assert_eq!(v[pinned], before[pinned], "pinned vertex written");
            assert!((normal_velocity(&s, &v) - vn0 - 0.7).abs() < 1e-6);
        }
        // Every vertex infinite: skipped, J = 0, nothing written.
        let s = random_stencil(&mut rng, StencilKind::EdgeEdge);
        let mut v: Vec<Vec3> = (0..4).map(|_| rng.vec3_f32(1.0)).collect();
        let before = v.clone();
        let j = apply_velocity_change(&s, s.normal().as_vec3(), 1.0, &mut v, &[0.0; 4]);
        assert_eq!(j, 0.0);
        assert_eq!(v, before);
        // Only a zero-weight vertex is free: still nothing can move the contact points.
        let s = Stencil::edge_edge([0, 1], 0.0, [2, 3], 0.5, DVec3::Z);
        let j = apply_velocity_change(&s, Vec3::Z, 1.0, &mut v, &[0.0, 3.0, 0.0, 0.0]);
        assert_eq!(j, 0.0);
        assert_eq!(v, before);
    }

    #[test]
    fn equal_masses_reproduce_eq_3_8_and_3_9() {
        let m = 0.05_f64;
        let inv_mass = [(1.0 / m) as f32; 4];
        let m = 1.0 / f64::from(inv_mass[0]);
        let n = DVec3::new(0.0, 0.6, 0.8);
        let big_i = -0.013; // I < 0 separates.
        // Point–triangle, eq. 3.8: Ĩ = 2I / (1 + Σ w²); v_k += w_k Ĩ/m n; v4 −= Ĩ/m n.
        let w = [0.2, 0.5, 0.3];
        let s = Stencil::point_triangle([0, 1, 2], 3, w, n);
        let mut v = vec![Vec3::ZERO; 4];
        let delta = -2.0 * big_i / m;
        apply_velocity_change(&s, n.as_vec3(), delta as f32, &mut v, &inv_mass);
        let i_tilde = 2.0 * big_i / (1.0 + w.iter().map(|x| x * x).sum::<f64>());
        for k in 0..3 {
            let expect = w[k] * i_tilde / m * n;
            assert!((v[k].as_dvec3() - expect).length() < 1e-6, "{k}");
        }
        assert!((v[3].as_dvec3() + i_tilde / m * n).length() < 1e-6);
        // Edge–edge, eq. 3.9: Ĩ = 2I / (a² + (1−a)² + b² + (1−b)²).
        let (a, b) = (0.3, 0.8);
        let s = Stencil::edge_edge([0, 1], a, [2, 3], b, n);
        let mut v = vec![Vec3::ZERO; 4];
        apply_velocity_change(&s, n.as_vec3(), delta as f32, &mut v, &inv_mass);
        let i_tilde = 2.0 * big_i / (a * a + (1.0 - a) * (1.0 - a) + b * b + (1.0 - b) * (1.0 - b));
        let expect = [
            (1.0 - a) * i_tilde / m,
            a * i_tilde / m,
            -(1.0 - b) * i_tilde / m,
            -b * i_tilde / m,
        ];
        for k in 0..4 {
            assert!((v[k].as_dvec3() - expect[k] * n).length() < 1e-6, "{k}");
        }
    }

    #[test]
    fn approaching_pair_stops_approaching() {
        let mut rng = Rng(3);
        for case in 0..200 {
            let s = random_stencil(&mut rng, KINDS[case % 2]);
            let inv_mass: Vec<f32> = (0..4).map(|_| rng.range(5.0, 100.0) as f32).collect();
            let mut v: Vec<Vec3> = (0..4).map(|_| rng.vec3_f32(1.0)).collect();
            // Make the pair approach.
            let vn = normal_velocity(&s, &v);
            if vn >= 0.0 {
                apply_velocity_change(
                    &s,
                    s.normal().as_vec3(),
                    (-vn - 0.5) as f32,
                    &mut v,
                    &inv_mass,
                );
            }
            let vn = normal_velocity(&s, &v);
            assert!(vn < 0.0);
            let overlap = if case % 3 == 0 {
                0.0
            } else {
                rng.range(0.0, 0.002) as f32
            };
            let out = repel(&s, overlap, 0.01, 1000.0, 0.0, &mut v, &inv_mass);
            assert!((f64::from(out.inelastic) + vn).abs() < 1e-6);
            let after = normal_velocity(&s, &v);
            assert!(after > -1e-6, "{case}: still approaching at {after}");
            if overlap == 0.0 {
                assert!(after.abs() < 1e-6 && out.spring == 0.0);
            }
        }
    }

    #[test]
    fn resting_overlap_is_pushed_apart_by_at_most_a_tenth_per_step() {
        let h = 0.01_f32;
        let d = 0.001_f32;
        let limit = 0.1 * f64::from(d) / f64::from(h);
        for kind in KINDS {
            let mut rng = Rng(4);
            let s = random_stencil(&mut rng, kind);
            let inv_mass = [40.0_f32; 4];
            // Stiff spring: the cap 0.1 d / h binds.
            let mut v = vec![Vec3::ZERO; 4];
            let out = repel(&s, d, h, 1.0e6, 0.0, &mut v, &inv_mass);
            let vn = normal_velocity(&s, &v);
            assert!((vn - limit).abs() < 1e-6, "{vn} vs {limit}");
            assert!((f64::from(out.spring) - limit).abs() < 1e-7);
            // Soft spring: 2hkd/m̄ with equal masses m̄ = m.
            let k = 2.0_f32;
            let mut v = vec![Vec3::ZERO; 4];
            repel(&s, d, h, k, 0.0, &mut v, &inv_mass);
            let expect = 2.0 * f64::from(h * k * d) * f64::from(inv_mass[0]);
            assert!(expect < limit);
            assert!((normal_velocity(&s, &v) - expect).abs() < 1e-8);
            // Already separating at 0.1 d / h: no spring impulse.
            let mut v = vec![Vec3::ZERO; 4];
            apply_velocity_change(
                &s,
                s.normal().as_vec3(),
                (1.01 * limit) as f32,
                &mut v,
                &inv_mass,
            );
            let before = v.clone();
            let out = repel(&s, d, h, 1.0e6, 0.3, &mut v, &inv_mass);
            assert_eq!(out, RepulsionOutcome::default());
            assert_eq!(v, before);
        }
    }

    #[test]
    fn spring_mass_average_is_the_inverse_mass_average() {
        // Point (free) against an obstacle triangle (infinite mass): 2hkd/m̄ = hkd w_point.
        let (h, k, d) = (0.01_f32, 3.0_f32, 0.002_f32);
        let s = Stencil::point_triangle([0, 1, 2], 3, [0.2, 0.3, 0.5], DVec3::Y);
        let inv_mass = [0.0, 0.0, 0.0, 25.0];
        let mut v = vec![Vec3::ZERO; 4];
        repel(&s, d, h, k, 0.0, &mut v, &inv_mass);
        let expect = f64::from(h) * f64::from(k) * f64::from(d) * 25.0;
        assert!((normal_velocity(&s, &v) - expect).abs() < 1e-9);
        assert_eq!(&v[..3], &[Vec3::ZERO; 3]);
        // Unequal masses: w̄ = Σ α w / Σ α per side; a negative δ-band weight counts as 0.
        let s = Stencil::point_triangle([0, 1, 2], 3, [-0.02, 0.52, 0.5], DVec3::Y);
        let inv_mass = [1000.0, 10.0, 30.0, 25.0];
        let mut v = vec![Vec3::ZERO; 4];
        repel(&s, d, h, k, 0.0, &mut v, &inv_mass);
        let w_first = (0.52 * 10.0 + 0.5 * 30.0) / 1.02;
        let expect = f64::from(h) * f64::from(k) * f64::from(d) * (w_first + 25.0);
        assert!((normal_velocity(&s, &v) - expect).abs() < 1e-8);
        // Continuity: a pinned corner with a vanishing weight barely changes the impulse.
        let s = Stencil::point_triangle([0, 1, 2], 3, [1e-6, 0.5, 0.5 - 1e-6], DVec3::Y);
        let mut v = vec![Vec3::ZERO; 4];
        repel(&s, d, h, k, 0.0, &mut v, &[0.0, 20.0, 20.0, 20.0]);
        let expect = 2.0 * f64::from(h) * f64::from(k) * f64::from(d) * 20.0;
        assert!((normal_velocity(&s, &v) - expect).abs() < 1e-6 * expect);
    }

    #[test]
    fn friction_sticks_or_slides_by_mu_dvn() {
        let n = DVec3::new(0.0, 0.0, 1.0);
        let s = Stencil::edge_edge([0, 1], 0.25, [2, 3], 0.6, n);
        let inv_mass = [20.0_f32, 35.0, 15.0, 50.0];
        let tangent = DVec3::new(0.6, 0.8, 0.0);
        let mu = 0.4_f32;
        for (vt, vn) in [(0.1, -0.5), (0.5, -0.5), (2.0, -0.5), (0.3, -1.0)] {
            let mut v = vec![Vec3::ZERO; 4];
            // Relative velocity: vt along the tangent, vn along the normal, applied to the second side.
            apply_velocity_change(&s, tangent.as_vec3(), vt as f32, &mut v, &inv_mass);
            apply_velocity_change(&s, n.as_vec3(), vn as f32, &mut v, &inv_mass);
            let out = repel(&s, 0.0, 0.01, 0.0, mu, &mut v, &inv_mass);
            let dvn = -vn;
            assert!((f64::from(out.normal_change()) - dvn).abs() < 1e-6);
            let rel = relative_velocity(&s, &v).as_dvec3();
            let vt_after = rel - n * n.dot(rel);
            let budget = f64::from(mu) * dvn;
            if budget >= vt {
                assert!(out.sticking);
                assert!(vt_after.length() < 1e-6, "should stick: {vt_after}");
            } else {
                assert!(!out.sticking);
                assert!((vt_after.length() - (vt - budget)).abs() < 1e-6);
                // Direction kept.
                assert!(vt_after.normalize().dot(tangent) > 1.0 - 1e-9);
            }
            assert!((f64::from(out.friction) - budget.min(vt)).abs() < 1e-6);
        }
    }

    #[test]
    fn separating_pair_without_overlap_is_untouched() {
        let mut rng = Rng(5);
        for case in 0..100 {
            let s = random_stencil(&mut rng, KINDS[case % 2]);
            let inv_mass = [10.0_f32; 4];
            let mut v: Vec<Vec3> = (0..4).map(|_| rng.vec3_f32(1.0)).collect();
            let vn = normal_velocity(&s, &v);
            if vn <= 0.0 {
                apply_velocity_change(
                    &s,
                    s.normal().as_vec3(),
                    (-vn + 0.1) as f32,
                    &mut v,
                    &inv_mass,
                );
            }
            let before = v.clone();
            let overlap = -rng.range(0.0, 0.01) as f32;
            let out = repel(&s, overlap, 0.01, 100.0, 0.5, &mut v, &inv_mass);
            assert_eq!(out, RepulsionOutcome::default());
            assert!(!out.is_active());
            assert_eq!(v, before);
        }
    }

    #[test]
    fn collision_impulse_reaches_the_minimum_separation() {
        let mut rng = Rng(6);
        let mut applied = 0;
        for case in 0..2000 {
            let s = random_stencil(&mut rng, KINDS[case % 2]);
            let inv_mass: Vec<f32> = (0..4)
                .map(|_| {
                    if rng.range(0.0, 1.0) < 0.2 {
                        0.0
                    } else {
                        rng.range(1.0, 1000.0) as f32
                    }
                })
                .collect();
            let scale = [0.01, 1.0, 30.0][case % 3];
            let mut v: Vec<Vec3> = (0..4).map(|_| rng.vec3_f32(scale)).collect();
            let h = [1.0 / 60.0, 1.0 / 600.0, 0.002][case % 3] as f32;
            let s_min = rng.range(1e-5, 1e-3) as f32;
            let d0 = rng.range(-1e-3, 2e-3) as f32;
            let mu = [0.0, 0.3][case % 2];
            let free = response_denominator(&s, &inv_mass) > 0.0;
            let before = v.clone();
            let j = collision_impulse(&s, d0, s_min, h, mu, &mut v, &inv_mass);
            let vn = normal_velocity(&s, &v);
            let end = f64::from(d0) + f64::from(h) * vn;
            if free {
                assert!(end >= f64::from(s_min), "{case}: {end} < {s_min}");
            }
            if j > 0.0 {
                applied += 1;
                // The target is max(0, (s_min − d0)/h), reached up to the tiny rounding margin.
                let target = ((f64::from(s_min) - f64::from(d0)) / f64::from(h)).max(0.0);
                assert!(
                    vn - target < 1e-5 * (1.0 + scale),
                    "{case}: overshoot {vn} vs {target}"
                );
            } else {
                assert_eq!(v, before, "{case}: untouched when no impulse");
            }
        }
        assert!(applied > 500);
    }

    #[test]
    fn collision_impulse_skips_well_separated_pairs() {
        let s = Stencil::point_triangle([0, 1, 2], 3, [0.3, 0.3, 0.4], DVec3::Y);
        let inv_mass = [10.0_f32; 4];
        let mut v = vec![
            Vec3::ZERO,
            Vec3::ZERO,
            Vec3::ZERO,
            Vec3::new(0.0, -0.01, 0.0),
        ];
        let before = v.clone();
        // d0 + h v_N = 0.01 − 0.0001 ≥ s_min.
        assert_eq!(
            collision_impulse(&s, 0.01, 0.001, 0.01, 0.5, &mut v, &inv_mass),
            0.0
        );
        assert_eq!(v, before);
    }

    #[test]
    fn stencils_from_proximities_and_hits_follow_the_convention() {
        let x_tri = [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
        ];
        let p = DVec3::new(0.2, 0.3, 0.004);
        let prox = proximity_point_triangle(p, x_tri, 0.01).expect("point is within eta");
        // Vertex ids: point 7, triangle 2, 5, 9.
        let s = Stencil::from_point_triangle(7, [2, 5, 9], &prox);
        let mut x = vec![Vec3::ZERO; 10];
        x[7] = p.as_vec3();
        for (id, xi) in [2usize, 5, 9].iter().zip(x_tri) {
            x[*id] = xi.as_vec3();
        }
        assert!((s.separation(&x) - 0.004).abs() < 1e-7);
        assert!((f64::from(s.overlap(&x, 0.01)) - 0.006).abs() < 1e-7);
        assert_eq!(s.kind(), StencilKind::PointTriangle);
        assert_eq!(s.verts(), [2, 5, 9, 7]);
        let c = s.coefficients();
        assert!((c.iter().sum::<f64>()).abs() < 1e-12);

        // Edges p = (0, 1), q = (2, 3): q is the first side; separation positive along q → p.
        let ep = [DVec3::new(-1.0, 0.3, 0.002), DVec3::new(1.0, 0.3, 0.002)];
        let eq = [DVec3::new(0.4, -1.0, 0.0), DVec3::new(0.4, 1.0, 0.0)];
        let prox = proximity_edge_edge(ep, eq, 0.01).expect("edges are within eta");
        let s = Stencil::from_edge_edge([0, 1], [2, 3], &prox);
        let x: Vec<Vec3> = ep.iter().chain(eq.iter()).map(|p| p.as_vec3()).collect();
        assert!((s.separation(&x) - 0.002).abs() < 1e-7);
        assert_eq!(s.verts(), [2, 3, 0, 1]);

        // CCD: a vertex falling through a triangle, and an edge falling across another.
        let start = [DVec3::new(0.2, 0.3, 0.01), x_tri[0], x_tri[1], x_tri[2]];
        let mut end = start;
        end[0].z = -0.01;
        let hit = ccd_point_triangle(start, end, 1e-4).expect("the vertex crosses");
        let s = Stencil::from_point_triangle_hit(0, [1, 2, 3], &hit);
        let xs: Vec<Vec3> = start.iter().map(|p| p.as_vec3()).collect();
        assert!((s.separation(&xs) - hit.signed_separation(&start)).abs() < 1e-7);
        let v: Vec<Vec3> = start
            .iter()
            .zip(end)
            .map(|(a, b)| ((b - *a) * 100.0).as_vec3())
            .collect();
        assert!(normal_velocity(&s, &v) < 0.0, "a real crossing approaches");

        let start = [ep[0], ep[1], eq[0], eq[1]];
        let mut end = start;
        end[0].z = -0.01;
        end[1].z = -0.01;
        let hit = ccd_edge_edge(start, end, 1e-4).expect("the edges cross");
        let s = Stencil::from_edge_edge_hit([0, 1], [2, 3], &hit);
        let xs: Vec<Vec3> = start.iter().map(|p| p.as_vec3()).collect();
        assert!((s.separation(&xs) - hit.signed_separation(&start)).abs() < 1e-7);
        let cs = s.coefficients();
        let signed = [cs[2], cs[3], cs[0], cs[1]];
        for (a, b) in signed.iter().zip(hit.weights) {
            assert!((a - b).abs() < 1e-12);
        }
        let v: Vec<Vec3> = start
            .iter()
            .zip(end)
            .map(|(a, b)| ((b - *a) * 100.0).as_vec3())
            .collect();
        assert!(normal_velocity(&s, &v) < 0.0);
        // Resolving the collision leaves the end separation at s_min.
        let mut v = v;
        let d0 = s.separation(&xs) as f32;
        collision_impulse(&s, d0, 1e-4, 0.01, 0.0, &mut v, &[1.0; 4]);
        assert!(f64::from(d0) + 0.01 * normal_velocity(&s, &v) >= 1e-4 - 1e-12);
    }

    #[test]
    fn zero_normal_stencil_changes_nothing() {
        let s = Stencil::edge_edge([0, 1], 0.5, [2, 3], 0.5, DVec3::ZERO);
        let mut v = vec![Vec3::X, Vec3::Y, -Vec3::X, -Vec3::Y];
        let before = v.clone();
        assert_eq!(
            repel(&s, 0.01, 0.01, 10.0, 0.5, &mut v, &[1.0; 4]),
            RepulsionOutcome::default()
        );
        assert_eq!(
            collision_impulse(&s, 0.0, 0.001, 0.01, 0.5, &mut v, &[1.0; 4]),
            0.0
        );
        assert_eq!(
            apply_velocity_change(&s, Vec3::ZERO, 1.0, &mut v, &[1.0; 4]),
            0.0
        );
        assert_eq!(v, before);
    }

    /// [`repel_point_surface`] is [`repel`] for a vertex against a triangle of infinite-mass vertices all
    /// moving at the surface velocity (random velocities, normals, weights, overlaps and masses) when the
    /// vertex is within η (`d ≥ 0`); farther away it limits the approach to `v_N ≥ d/h` (arrival at η
    /// within the step) and applies friction on that change.
    #[test]
    fn point_surface_repulsion_is_repel_against_an_immovable_moving_triangle() {
        let mut rng = Rng::new(0x05ee_da11);
        for case in 0..2000 {
            let normal = rng.unit().as_vec3();
            let vs = (rng.unit() * rng.range(0.0, 2.0)).as_vec3();
            let v0 = (rng.unit() * rng.range(0.0, 2.0)).as_vec3();
            let w = rng.range(0.1, 500.0) as f32;
            let d = rng.range(-0.002, 0.004) as f32;
            let h = rng.range(0.001, 0.02) as f32;
            let mu = rng.range(0.0, 1.0) as f32;
            let w1 = rng.range(0.0, 1.0);
            let w2 = rng.range(0.0, 1.0 - w1);
            let s =
                Stencil::point_triangle([0, 1, 2], 3, [w1, w2, 1.0 - w1 - w2], normal.as_dvec3());
            let mut v = [vs, vs, vs, v0];
            let inv_mass = [0.0, 0.0, 0.0, w];
            let mut vi = v0;
            let got = repel_point_surface(&mut vi, w, vs, normal, d, h, 100.0, mu);
            if d < 0.0 {
                let (n, rel0, rel) = (
                    normal.as_dvec3(),
                    (v0 - vs).as_dvec3(),
                    (vi - vs).as_dvec3(),
                );
                let floor = f64::from(d) / f64::from(h);
                let vn0 = n.dot(rel0);
                assert!((n.dot(rel) - vn0.max(floor)).abs() < 1e-5, "case {case}");
                let dvn = (floor - vn0).max(0.0);
                let vt0 = (rel0 - n * vn0).length();
                let vt = (rel - n * n.dot(rel)).length();
                assert!(
                    (vt - (vt0 - f64::from(mu) * dvn).max(0.0)).abs() < 1e-5,
                    "case {case}"
                );
                assert!(
                    (f64::from(got.normal_change()) - dvn).abs() < 1e-5,
                    "case {case}"
                );
                continue;
            }
            let expected = repel(&s, d, h, 100.0, mu, &mut v, &inv_mass);
            assert!(vi.abs_diff_eq(v[3], 1e-5), "case {case}: {vi} != {}", v[3]);
            assert!(
                (got.normal_change() - expected.normal_change()).abs() < 1e-5,
                "case {case}"
            );
            assert!(
                (got.friction - expected.friction).abs() < 1e-5,
                "case {case}"
            );
        }
        // 5 mm from the surface (η = 4 mm, d = −1 mm), falling at 1 m/s for h = 10 ms: slowed to 0.1 m/s,
        // so it arrives at η at the end of the step.
        let mut vi = Vec3::new(0.0, -1.0, 0.0);
        repel_point_surface(&mut vi, 1.0, Vec3::ZERO, Vec3::Y, -0.001, 0.01, 100.0, 0.0);
        assert!((vi.y + 0.1).abs() < 1e-6, "{vi}");
        // An infinite-mass vertex is skipped.
        let mut vi = Vec3::new(0.0, -1.0, 0.0);
        let out = repel_point_surface(&mut vi, 0.0, Vec3::ZERO, Vec3::Y, 0.003, 0.01, 100.0, 0.3);
        assert_eq!((vi, out.is_active()), (Vec3::new(0.0, -1.0, 0.0), false));
    }
}
