//! Implicit velocity smoothing: one backward-Euler step of edge damping, solved by a few conjugate-gradient
//! iterations, that spreads a discontinuous velocity change (a collision bounce) to the surrounding cloth.
//!
//! Bridson's course notes (`docs/methods/dihedral-bending.md` §4.10, eq. 4.12; §4.11). The stage is optional and runs after
//! the collision corrections. `docs/methods/bridson-collisions.md` §3.1 notes that the end-velocity update (3.3)/(4.13)
//! already applies damping implicitly to the corrected velocities; this stage is for pipelines without
//! that update, or for extra smoothing. It only changes velocities.
//!
//! # The system (`docs/methods/dihedral-bending.md` (4.12))
//!
//! eq. 4.12 is `(M − h D_damp) v⁺ = M v⁻` with `D_damp = ∂F_damp/∂v` symmetric negative semi-definite.
//! weft takes `F_damp` to be a linear damper on every mesh edge, `F_i = Σ_{j∈N(i)} c_ij (v_j − v_i)` with
//! coefficient `c_ij = s μ_ij / h` (N·s/m), where `s` is the dimensionless `strength` and `μ_ij` the edge's
//! *reduced mass*: `m_i m_j / (m_i + m_j)` between free vertices and `m_i` (the limit `m_j → ∞`) toward a
//! pinned neighbour `j`. Then `−h D_damp = s L_μ` with `L_μ` the mass-weighted graph Laplacian, and for
//! every **free** vertex `i`, independently per axis:
//!
//! ```text
//! m_i v⁺_i + s Σ_{j∈N(i)} μ_ij (v⁺_i − v⁺_j) = m_i v⁻_i,      v⁺_j = v⁻_j for pinned j.
//! ```
//!
//! Pinned and kinematic vertices (`inv_mass == 0`, or a non-positive mass) are Dirichlet rows: their
//! velocity is kept, and it drags their free neighbours. With uniform masses `μ = m/2` and the system is
//! `(I + (s/2) L) v⁺ = v⁻` with `L` the plain graph Laplacian, so `s/2` is the diffusion number of the
//! step (the heat-equation model of §4.10): independent of density and of the mass scale. The matrix
//! `A = M + s L_μ` restricted to the free vertices is symmetric positive definite (and strictly diagonally
//! dominant).
//!
//! **Momentum** (`docs/methods/dihedral-bending.md` §4.10, *derived*): the Laplacian's rows sum to zero, so with no pinned vertex the
//! exact solution keeps `Σ m_i v_i`. Pins exert forces, so then it is not conserved (nor should it be).
//!
//! # The iterative method: mass-preconditioned CG
//!
//! Conjugate gradients on `A v⁺ = M v⁻`, started from `v⁺ = v⁻`, preconditioned by `M⁻¹` (not by the
//! Jacobi diagonal `M + s D`), run independently per axis (the scalars `α`, `β` are per component, which is
//! three scalar CGs at once). **Choice**: with this preconditioner *every iterate* conserves momentum, not
//! only the converged solution, so a truncated solve within the caller's iteration cap still conserves it.
//! Proof (all vertices free): `1ᵀA = 1ᵀM` because `1ᵀL_μ = 0`, so `1ᵀM x_k = 1ᵀA x_k = 1ᵀM v⁻ − 1ᵀr_k`;
//! `1ᵀr_0 = −s 1ᵀL_μ v⁻ = 0`, and if `1ᵀr_k = 0` then `1ᵀM z_k = 1ᵀr_k = 0` for `z_k = M⁻¹r_k`, hence
//! `1ᵀM p_k = 0` by induction, `1ᵀA p_k = 1ᵀM p_k = 0` and `1ᵀr_{k+1} = 1ᵀr_k − α 1ᵀA p_k = 0`.
//! Plain Jacobi iterations and Jacobi-preconditioned CG lack this property (their iterates drift where the
//! vertex degrees differ, e.g. at the boundary). The iteration stops early when every axis' residual
//! `rᵀM⁻¹r` has dropped by [`RELATIVE_TOLERANCE`]² from its initial value.
//!
//! Arithmetic is `f64`; the result is rounded to the `f32` velocities once at the end.
//!
//! # Determinism and allocation
//!
//! Vertex loops run over fixed chunks of [`CHUNK`] vertices, in parallel from [`PARALLEL_MIN`] vertices
//! (below that on the calling thread, without rayon). Each chunk writes its own rows and its own partial
//! dot product; the partials are added serially in chunk order, so results are bit-identical for any rayon
//! thread count. Loops run in the caller's rayon pool. All buffers are sized in [`VelocitySmoother::new`];
//! [`VelocitySmoother::apply`] does not allocate.
#![deny(unsafe_code)]

use crate::runtime::executor::parallel_here;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

use crate::mesh::VertexEdges;

/// Vertices per chunk: the unit of parallel work and of the fixed summation order.
pub const CHUNK: usize = 256;

/// Loops over fewer vertices than this run on the calling thread (same chunks, same bits).
pub const PARALLEL_MIN: usize = 2048;

/// CG stops once `√(rᵀM⁻¹r / r₀ᵀM⁻¹r₀) ≤` this on every axis: below the `f32` precision of the result.
pub const RELATIVE_TOLERANCE: f64 = 1e-7;

/// What one smoothing call did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SmoothingReport {
    /// CG iterations run (`≤` the cap; 0 when there was nothing to smooth).
    pub iterations: u32,
    /// `√(rᵀM⁻¹r / r₀ᵀM⁻¹r₀)` at exit, the worst axis (0 when the system was solved exactly).
    pub relative_residual: f32,
}

/// Per-vertex CG state other than the search direction: the iterate `x`, the residual `r` and `q = A p`.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    x: DVec3,
    r: DVec3,
    q: DVec3,
}

/// The inputs of one `apply` call, shared by the passes.
#[derive(Clone, Copy)]
struct System<'a> {
    strength: f64,
    mass: &'a [f32],
    inv_mass: &'a [f32],
    adjacency: &'a VertexEdges,
}

impl System<'_> {
    /// Whether vertex `k` is an unknown (not pinned or kinematic).
    #[inline]
    fn is_free(&self, k: usize) -> bool {
        self.inv_mass[k] > 0.0 && self.mass[k] > 0.0
    }

    /// The neighbours of vertex `k`.
    #[inline]
    fn neighbours(&self, k: usize) -> &[u32] {
        self.adjacency.neighbors(k)
    }

    /// `s Σ_j μ_ij (u_i − u_j)` for free vertex `i`, with `u_j` of a pinned neighbour given by `pinned`.
    #[inline]
    fn laplacian_row(
        &self,
        i: usize,
        u: impl Fn(usize) -> DVec3,
        pinned: impl Fn(usize) -> DVec3,
    ) -> DVec3 {
        let mi = f64::from(self.mass[i]);
        let ui = u(i);
        let mut sum = DVec3::ZERO;
        for &j in self.neighbours(i) {
            let j = j as usize;
            sum += if self.is_free(j) {
                let mj = f64::from(self.mass[j]);
                (ui - u(j)) * (mi * mj / (mi + mj))
            } else {
                (ui - pinned(j)) * mi
            };
        }
        sum * self.strength
    }
}

/// Component-wise `a / b`, 0 where `b` is not positive (an axis that has converged or has nothing to do).
#[inline]
fn ratio(a: DVec3, b: DVec3) -> DVec3 {
    let f = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    DVec3::new(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z))
}

/// Runs `f(first_index, chunk)` over the fixed chunks of `out`, in parallel from [`PARALLEL_MIN`] items.
fn for_chunks<T: Send, F: Fn(usize, &mut [T]) + Sync>(out: &mut [T], f: F) {
    if out.len() < PARALLEL_MIN || !parallel_here() {
        for (k, chunk) in out.chunks_mut(CHUNK).enumerate() {
            f(k * CHUNK, chunk);
        }
    } else {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, chunk)| f(k * CHUNK, chunk));
    }
}

/// Like [`for_chunks`], each chunk returning a partial sum; the partials are stored in `partials` (one per
/// chunk) and added in chunk order, so the sum does not depend on the schedule.
fn sum_chunks<T: Send, F: Fn(usize, &mut [T]) -> DVec3 + Sync>(
    out: &mut [T],
    partials: &mut [DVec3],
    f: F,
) -> DVec3 {
    let chunks = out.len().div_ceil(CHUNK);
    let partials = &mut partials[..chunks];
    if out.len() < PARALLEL_MIN || !parallel_here() {
        for ((k, chunk), p) in out.chunks_mut(CHUNK).enumerate().zip(partials.iter_mut()) {
            *p = f(k * CHUNK, chunk);
        }
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(partials.par_iter_mut())
            .enumerate()
            .for_each(|(k, (chunk, p))| *p = f(k * CHUNK, chunk));
    }
    partials.iter().fold(DVec3::ZERO, |acc, &p| acc + p)
}

/// Implicit velocity smoothing workspace of one cloth: the vertex adjacency and the CG vectors, sized once
/// in [`VelocitySmoother::new`].
#[derive(Clone, Debug)]
pub struct VelocitySmoother {
    /// Each vertex's neighbours, in ascending edge order.
    adjacency: VertexEdges,
    /// Number of edges the adjacency was built from.
    num_edges: usize,
    /// CG iterate, residual and `A p`.
    rows: Vec<Row>,
    /// CG search direction.
    p: Vec<DVec3>,
    /// One partial dot product per chunk.
    partials: Vec<DVec3>,
}

impl VelocitySmoother {
    /// Builds the workspace for a cloth with `num_vertices` vertices and the unique edges `edges`.
    ///
    /// # Panics
    /// As [`VertexEdges::build`]: an edge index out of range, an edge joining a vertex to
    /// itself, or more than `u32::MAX` vertices or edge ends.
    #[must_use]
    pub fn new(num_vertices: usize, edges: &[[u32; 2]]) -> Self {
        Self {
            adjacency: VertexEdges::build(num_vertices, edges),
            num_edges: edges.len(),
            rows: vec![Row::default(); num_vertices],
            p: vec![DVec3::ZERO; num_vertices],
            partials: vec![DVec3::ZERO; num_vertices.div_ceil(CHUNK)],
        }
    }

    /// Number of vertices the workspace was built for.
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.rows.len()
    }

    /// Smooths the velocities `v` in place by solving `(M + s L_μ) v⁺ = M v⁻` (module doc) with at most
    /// `iterations` iterations of mass-preconditioned CG. Bridson course notes, `docs/methods/dihedral-bending.md` (4.12).
    ///
    /// `strength` is `s` (dimensionless, `h c_ij / μ_ij` of the edge dampers; with uniform masses `s/2` is
    /// the step's diffusion number); `v` the velocities (m/s), `mass` the lumped masses (kg) and `inv_mass`
    /// the inverse masses (1/kg; a vertex with `inv_mass == 0` or `mass <= 0` is pinned and keeps its
    /// velocity); `edges` the cloth's unique edges, the same as given to [`VelocitySmoother::new`]. A
    /// non-positive or non-finite `strength` or `iterations == 0` leaves `v` unchanged. Every iterate
    /// conserves `Σ m v` when no vertex is pinned. Does not allocate.
    ///
    /// # Panics
    /// If the slice lengths disagree with the workspace.
    pub fn apply(
        &mut self,
        strength: f32,
        iterations: u32,
        v: &mut [Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        edges: &[[u32; 2]],
    ) -> SmoothingReport {
        let n = self.rows.len();
        assert!(
            v.len() == n && mass.len() == n && inv_mass.len() == n,
            "VelocitySmoother::apply: v, mass and inv_mass must have {n} entries"
        );
        assert_eq!(
            edges.len(),
            self.num_edges,
            "VelocitySmoother::apply: edges must be those given to new"
        );
        if !(strength.is_finite() && strength > 0.0) || iterations == 0 {
            return SmoothingReport::default();
        }
        let Self {
            adjacency,
            rows,
            p,
            partials,
            ..
        } = self;
        let sys = System {
            strength: f64::from(strength),
            mass,
            inv_mass,
            adjacency,
        };
        let vin: &[Vec3] = v;

        // x0 = v⁻; r0 = M v⁻ − A v⁻ = −s L_μ v⁻ (pinned rows 0); z0 = M⁻¹ r0.
        let rz0 = sum_chunks(rows, partials, |first, chunk| {
            let mut rz = DVec3::ZERO;
            for (o, row) in chunk.iter_mut().enumerate() {
                let i = first + o;
                row.x = vin[i].as_dvec3();
                row.q = DVec3::ZERO;
                row.r = DVec3::ZERO;
                if sys.is_free(i) {
                    let u = |k: usize| vin[k].as_dvec3();
                    row.r = -sys.laplacian_row(i, u, u);
                    rz += row.r * row.r / f64::from(mass[i]);
                }
            }
            rz
        });
        let threshold = rz0 * (RELATIVE_TOLERANCE * RELATIVE_TOLERANCE);
        let converged = |rz: DVec3| rz.cmple(threshold).all();
        if converged(rz0) {
            // Nothing to smooth (e.g. a uniform field): v is already the exact solution.
            return SmoothingReport::default();
        }
        {
            let rows = &*rows;
            for_chunks(p, |first, chunk| {
                for (o, pk) in chunk.iter_mut().enumerate() {
                    let i = first + o;
                    *pk = if sys.is_free(i) {
                        rows[i].r / f64::from(mass[i])
                    } else {
                        DVec3::ZERO
                    };
                }
            });
        }

        let mut rz = rz0;
        let mut done = 0u32;
        while done < iterations && !converged(rz) {
            // q = A p and pᵀq (pinned rows: p = 0, q = 0).
            let pq = {
                let pr = &*p;
                sum_chunks(rows, partials, |first, chunk| {
                    let mut pq = DVec3::ZERO;
                    for (o, row) in chunk.iter_mut().enumerate() {
                        let i = first + o;
                        row.q = if sys.is_free(i) {
                            let u = |k: usize| pr[k];
                            pr[i] * f64::from(mass[i]) + sys.laplacian_row(i, u, |_| DVec3::ZERO)
                        } else {
                            DVec3::ZERO
                        };
                        pq += pr[i] * row.q;
                    }
                    pq
                })
            };
            let alpha = ratio(rz, pq);
            // x += α p, r −= α q, and rᵀM⁻¹r.
            let rz_next = {
                let pr = &*p;
                sum_chunks(rows, partials, |first, chunk| {
                    let mut rz = DVec3::ZERO;
                    for (o, row) in chunk.iter_mut().enumerate() {
                        let i = first + o;
                        if !sys.is_free(i) {
                            continue;
                        }
                        row.x += alpha * pr[i];
                        row.r -= alpha * row.q;
                        rz += row.r * row.r / f64::from(mass[i]);
                    }
                    rz
                })
            };
            let beta = ratio(rz_next, rz);
            // p = M⁻¹ r + β p.
            {
                let rows = &*rows;
                for_chunks(p, |first, chunk| {
                    for (o, pk) in chunk.iter_mut().enumerate() {
                        let i = first + o;
                        if sys.is_free(i) {
                            *pk = rows[i].r / f64::from(mass[i]) + beta * *pk;
                        }
                    }
                });
            }
            rz = rz_next;
            done += 1;
        }

        // Write back the free vertices.
        {
            let rows = &*rows;
            for_chunks(v, |first, chunk| {
                for (o, vk) in chunk.iter_mut().enumerate() {
                    let i = first + o;
                    if sys.is_free(i) {
                        *vk = rows[i].x.as_vec3();
                    }
                }
            });
        }
        let worst = ratio(rz, rz0).max_element().max(0.0).sqrt();
        SmoothingReport {
            iterations: done,
            relative_residual: worst as f32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::strain_limit::tests::{Lcg, grid};

    /// A grid cloth with masses in [0.5, 1.5] (kg) and random velocities (m/s).
    struct Cloth {
        v: Vec<Vec3>,
        mass: Vec<f32>,
        inv_mass: Vec<f32>,
        edges: Vec<[u32; 2]>,
    }

    fn cloth(nx: usize, ny: usize, seed: u64) -> Cloth {
        let (x, edges) = grid(nx, ny, 0.02);
        let mut rng = Lcg(seed);
        let v = (0..x.len()).map(|_| rng.vec3()).collect();
        let mass: Vec<f32> = (0..x.len()).map(|_| 1.0 + 0.5 * rng.next()).collect();
        let inv_mass = mass.iter().map(|m| 1.0 / m).collect();
        Cloth {
            v,
            mass,
            inv_mass,
            edges,
        }
    }

    fn smooth(c: &Cloth, strength: f32, iterations: u32) -> (Vec<Vec3>, SmoothingReport) {
        let mut smoother = VelocitySmoother::new(c.v.len(), &c.edges);
        let mut v = c.v.clone();
        let report = smoother.apply(strength, iterations, &mut v, &c.mass, &c.inv_mass, &c.edges);
        (v, report)
    }

    fn momentum(v: &[Vec3], mass: &[f32]) -> DVec3 {
        v.iter()
            .zip(mass)
            .map(|(v, &m)| v.as_dvec3() * f64::from(m))
            .sum()
    }

    /// `max_i |m_i v⁺_i + s Σ μ_ij (v⁺_i − v⁺_j) − m_i v⁻_i|` over free vertices `i`, divided by
    /// `max_k |m_k v⁻_k|` over all vertices: the residual of the documented system, evaluated independently
    /// of the solver.
    fn system_residual(c: &Cloth, strength: f32, out: &[Vec3]) -> f64 {
        let n = c.v.len();
        let free = |k: usize| c.inv_mass[k] > 0.0;
        let mut lap = vec![DVec3::ZERO; n];
        for &[i, j] in &c.edges {
            let (i, j) = (i as usize, j as usize);
            let (mi, mj) = (f64::from(c.mass[i]), f64::from(c.mass[j]));
            let diff = out[i].as_dvec3() - out[j].as_dvec3();
            match (free(i), free(j)) {
                (true, true) => {
                    let mu = mi * mj / (mi + mj);
                    lap[i] += diff * mu;
                    lap[j] -= diff * mu;
                }
                (true, false) => lap[i] += diff * mi,
                (false, true) => lap[j] -= diff * mj,
                (false, false) => {}
            }
        }
        let scale = (0..n)
            .map(|k| (c.v[k].as_dvec3() * f64::from(c.mass[k])).length())
            .fold(0.0, f64::max);
        let worst = (0..n)
            .filter(|&i| free(i))
            .map(|i| {
                let m = f64::from(c.mass[i]);
                let lhs = out[i].as_dvec3() * m + lap[i] * f64::from(strength);
                (lhs - c.v[i].as_dvec3() * m).length()
            })
            .fold(0.0, f64::max);
        worst / scale
    }

    #[test]
    fn converged_solution_satisfies_the_documented_system() {
        let mut c = cloth(9, 8, 1);
        c.inv_mass[0] = 0.0;
        c.inv_mass[40] = 0.0;
        for strength in [0.3f32, 3.0, 30.0] {
            let (v, report) = smooth(&c, strength, 500);
            assert!(
                report.iterations > 0 && report.iterations < 500,
                "{report:?}"
            );
            assert!(f64::from(report.relative_residual) <= RELATIVE_TOLERANCE);
            let residual = system_residual(&c, strength, &v);
            assert!(residual < 1e-5, "strength {strength}: residual {residual}");
        }
    }

    #[test]
    fn momentum_is_conserved_by_every_iterate() {
        let c = cloth(11, 9, 2);
        let p0 = momentum(&c.v, &c.mass);
        let scale: f64 =
            c.v.iter()
                .zip(&c.mass)
                .map(|(v, &m)| f64::from(v.length() * m))
                .sum();
        for iterations in [1u32, 2, 3, 10, 200] {
            let (v, report) = smooth(&c, 5.0, iterations);
            assert!(report.iterations <= iterations);
            let p1 = momentum(&v, &c.mass);
            assert!(
                (p1 - p0).length() < 1e-6 * scale,
                "{iterations} iterations: {p0} -> {p1}"
            );
            assert!(v != c.v);
        }
    }

    #[test]
    fn a_velocity_spike_spreads_and_its_peak_drops() {
        let mut c = cloth(9, 9, 3);
        c.v.iter_mut().for_each(|v| *v = Vec3::ZERO);
        let spike = 4 * 9 + 4;
        c.v[spike] = Vec3::new(0.0, 2.0, 0.0);
        let (v, _) = smooth(&c, 2.0, 50);
        assert!(v[spike].y < 2.0 && v[spike].y > 0.0, "{}", v[spike].y);
        let neighbours: Vec<usize> = c
            .edges
            .iter()
            .filter_map(|&[i, j]| {
                let (i, j) = (i as usize, j as usize);
                (i == spike).then_some(j).or((j == spike).then_some(i))
            })
            .collect();
        assert!(neighbours.len() >= 4);
        let far = 0; // a corner, four rings away
        for &k in &neighbours {
            assert!(v[k].y > 0.0, "neighbour {k} did not move");
            assert!(v[k].y < v[spike].y);
            assert!(v[k].y > v[far].y);
        }
        assert!(v[far].y > 0.0, "one implicit step smooths globally");
        assert!(v.iter().all(|p| p.x.abs() < 1e-7 && p.z.abs() < 1e-7));
        let p = momentum(&v, &c.mass);
        let p0 = momentum(&c.v, &c.mass);
        assert!((p - p0).length() < 1e-6 * p0.length());
    }

    #[test]
    fn a_uniform_field_is_unchanged() {
        let mut c = cloth(7, 6, 4);
        let u = Vec3::new(0.3, -1.2, 0.7);
        c.v.iter_mut().for_each(|v| *v = u);
        c.inv_mass[3] = 0.0;
        let (v, report) = smooth(&c, 10.0, 20);
        assert_eq!(v, c.v);
        assert_eq!(report.iterations, 0);
    }

    #[test]
    fn pinned_vertices_keep_their_velocity_and_drag_neighbours() {
        let mut c = cloth(7, 6, 5);
        c.v.iter_mut().for_each(|v| *v = Vec3::ZERO);
        let pins = [0usize, 6, 20];
        for &k in &pins {
            c.inv_mass[k] = 0.0;
            c.v[k] = Vec3::new(1.0, 0.0, 0.0);
        }
        let (v, _) = smooth(&c, 3.0, 100);
        for &k in &pins {
            assert_eq!(v[k], c.v[k]);
        }
        // Every free vertex is pulled toward the pins' velocity, none past it.
        for (k, p) in v.iter().enumerate().filter(|(k, _)| !pins.contains(k)) {
            assert!(p.x > 0.0 && p.x < 1.0, "vertex {k}: {p}");
        }
        assert!(system_residual(&c, 3.0, &v) < 1e-5);
    }

    #[test]
    fn zero_strength_or_no_iterations_is_the_identity() {
        let c = cloth(6, 5, 6);
        for (strength, iterations) in [(0.0, 10), (-1.0, 10), (f32::NAN, 10), (2.0, 0)] {
            let (v, report) = smooth(&c, strength, iterations);
            assert_eq!(v, c.v, "strength {strength}, {iterations} iterations");
            assert_eq!(report, SmoothingReport::default());
        }
    }

    #[test]
    fn results_are_bit_identical_for_1_and_4_threads() {
        let c = cloth(64, 64, 7);
        assert!(c.v.len() >= PARALLEL_MIN);
        let results: Vec<_> = [1usize, 4]
            .into_iter()
            .map(|threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("building a rayon pool");
                pool.install(|| smooth(&c, 4.0, 12))
            })
            .collect();
        let bits = |v: &[Vec3]| -> Vec<[u32; 3]> {
            v.iter()
                .map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()])
                .collect()
        };
        assert_eq!(results[0].1, results[1].1);
        assert_eq!(results[0].1.iterations, 12);
        assert!(bits(&results[0].0) == bits(&results[1].0));
    }
    // `apply_does_not_allocate` lives in tests/no_alloc.rs (a counting global allocator there).
}
