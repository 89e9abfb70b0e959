//! The constraint families of Wang 2012's isometric cloth on the 4:1 subdivided mesh
//! (§3.1.1–3.1.2): inextensibility (eq. 3.1), conforming (eq. 3.3) and boundary (eq. 3.4)
//! constraints, gathered in one [`IsometricConstraints`] that implements [`ConstraintSet`].
//!
//! # Nodes and rows
//!
//! Node numbering is that of [`Subdivision`]: black nodes `0..V` (base vertices), red node `V + e`
//! on base edge `e`. Scalar rows come family after family:
//!
//! | rows | family | per | count |
//! |---|---|---|---|
//! | [`Family::Inextensibility`] | `‖x_i − x_j‖ − d_ij` (eq. 3.1) | red–red edge of each middle triangle | `3F` |
//! | [`Family::Conforming`] | `x_k − (1/m_k) Σ_t E_t(k)` (eq. 3.3), x, y, z | black node `k` | `3V` |
//! | [`Family::Boundary`] | `E_{t1}(k) − E_{t2}(k)` (eq. 3.4), x, y, z | boundary black node with `m_k ≥ 2` | `3B₂` |
//!
//! Inextensibility row `3t + k` of base triangle `t` (red nodes `[m_pq, m_qr, m_rp]`, see
//! [`Subdivision::red_nodes`]) joins red nodes `k` and `k + 1 (mod 3)`. Vector rows store x, y, z
//! consecutively; conforming constraint `k` belongs to black node `k`, boundary constraints follow
//! [`IsometricConstraints::boundary_vertices`].
//!
//! `E_t(k) = x_a + x_b − x_c` is the extrapolation of vertex `k` from triangle `t`: `a`, `b` the red
//! nodes of the two base edges through `k`, `c` the red node of the edge opposite (the summand
//! of eq. 3.3). It is an affine combination (weights `1 + 1 − 1`), so it reproduces `k` whenever
//! the red nodes are the midpoints of any affine image of the rest triangle
//! (`docs/methods/isometric-model.md §A2`).
//!
//! # Choices (`docs/methods/isometric-model.md` §A4, §A5)
//!
//! - `d_ij` is measured in the rest configuration handed to [`IsometricConstraints::new`] (the
//!   flat pattern for cloth, the rest 3D mesh for shells); with exact midpoints it is half the rest
//!   length of the base edge opposite the pair.
//! - (3.2) is printed without `− x_j`; the gradient used is `±(x_i − x_j)/‖x_i − x_j‖` (§A4).
//! - (3.4) is read with the brackets restored: `E_{t1}(k) − E_{t2}(k)` (§A5). `t1`, `t2` are
//!   the triangles of the two boundary edges at `k`, `t1` that of the boundary edge whose other end
//!   has the smaller index. For `m_k = 2` the shared interior edge cancels out of the stencil.
//!   Corners with `m_k = 1` get no boundary row (eq. 3.3 already pins them to `E_t(k)`), and interior
//!   triangles of a `m_k ≥ 3` boundary vertex get none either (Fig. 3.2, vertex B).
//! - Boundary vertices with more than two boundary edges (non-manifold vertices) are rejected:
//!   (3.4) has no reading for them (§A5).
//! - Coincident nodes: a (3.1) row whose two nodes coincide gets a zero gradient (no direction).
//!
//! # Degrees of freedom (Wang 2012 §3.1.1, made exact: `docs/methods/isometric-model.md §A3`)
//!
//! With `N = V + E` nodes, `3N` coordinates and `3F + 3V + 3B₂` rows, the count is
//! `3N − rows = 3(E − F − B₂) = 3(V − χ − B₂)` by Euler's `V − E + F = χ`. For a disc (`χ = 1`) that
//! is `3(V_interior + c₁ − 1)`, `c₁` the corners with a single triangle; for a closed surface
//! `3(V − 2)`: the same order as an unconstrained mesh of the base vertices, which is the thesis's
//! non-locking argument (`12V − 6V − 3V = 3V` for large meshes). The count is exact when the rows
//! are independent, which the tests check at generic (non-planar) states; at exactly planar states
//! the three families are redundant (§A3), a singularity the solver must regularise.
//!
//! # Cost
//!
//! Everything is built once. [`ConstraintSet::evaluate`] and [`ConstraintSet::gradients`] are tight
//! loops over precomputed stencils, allocation-free, pure functions of `x` (safe to call from many
//! threads). Only the `3F` inextensibility rows depend on `x` in their gradients; the linear rows'
//! gradients are a precomputed constant block copied into place.
#![deny(unsafe_code)]

use std::ops::Range;

use glam::DVec3;

use super::constraint::ConstraintSet;
use crate::mesh::{NO_TRIANGLE, Subdivision};

/// What is wrong with the input to [`IsometricConstraints::new`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IsometricError {
    /// The rest positions do not match the subdivided mesh.
    #[error("rest positions: {got} given, the subdivided mesh has {expected} nodes")]
    RestLength {
        /// Nodes of the subdivided mesh.
        expected: usize,
        /// Rest positions given.
        got: usize,
    },
    /// A rest position is NaN or infinite.
    #[error("node {node}: non-finite rest position")]
    NonFiniteRest {
        /// Node index.
        node: u32,
    },
    /// Two red nodes of one base triangle coincide at rest: the (3.1) row has no rest length.
    #[error("base triangle {triangle}: red nodes {a} and {b} coincide at rest (zero rest length)")]
    DegenerateRest {
        /// Base triangle index.
        triangle: u32,
        /// First red node.
        a: u32,
        /// Second red node.
        b: u32,
    },
    /// A base vertex belongs to no triangle: eq. 3.3 averages over an empty set.
    #[error("base vertex {vertex} belongs to no triangle (eq. 3.3 needs at least one)")]
    IsolatedVertex {
        /// Base vertex index.
        vertex: u32,
    },
    /// A boundary vertex where more than two boundary edges meet (two fans touching).
    #[error(
        "base vertex {vertex}: {boundary_edges} boundary edges meet (eq. 3.4 needs a manifold boundary vertex with exactly 2)"
    )]
    NonManifoldBoundaryVertex {
        /// Base vertex index.
        vertex: u32,
        /// Number of boundary edges at it.
        boundary_edges: u32,
    },
}

/// The three constraint families, in row order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Wang 2012 eq. 3.1: red–red distances of each middle triangle keep their rest values.
    Inextensibility,
    /// Wang 2012 eq. 3.3: each black node equals the mean of its triangles' extrapolations.
    Conforming,
    /// Wang 2012 eq. 3.4: at a boundary vertex with two or more triangles, the two boundary
    /// triangles' extrapolations agree.
    Boundary,
}

/// Maximum strain of the base (original) mesh edges, measured two ways (Wang 2012 Fig. 4.2 does
/// not define it, so both are reported: `docs/methods/isometric-model.md §A16`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BaseEdgeStrain {
    /// `max |(‖x_p − x_m‖ + ‖x_m − x_q‖)/ℓ_pq − 1|`, through the edge's red node `m`.
    pub through_midpoint: f64,
    /// `max |‖x_p − x_q‖/ℓ_pq − 1|`, end to end.
    pub end_to_end: f64,
}

/// The linear stencil of one extrapolation `E_t(k) = x_a + x_b − x_c` (Wang 2012 eq. 3.3):
/// `[(a, 1), (b, 1), (c, −1)]`, where `corner` is the position of `k` in base triangle `t`.
fn extrapolation_stencil(sub: &Subdivision, t: usize, corner: usize) -> [(u32, f64); 3] {
    let red = sub.red_nodes(t);
    // Edge i joins corners i and i+1: edges `corner` and `corner + 2` contain the vertex, edge
    // `corner + 1` is opposite it.
    [
        (red[corner], 1.0),
        (red[(corner + 2) % 3], 1.0),
        (red[(corner + 1) % 3], -1.0),
    ]
}

/// `E_t(k) = x_a + x_b − x_c`: the position of vertex `base_triangles()[t][corner]` extrapolated
/// from the red nodes of base triangle `t` (Wang 2012 eq. 3.3, the summand).
///
/// `x` holds the positions of all nodes of `sub`.
///
/// # Panics
/// If `t` or `corner` (< 3) is out of range, or `x` is shorter than `sub.num_nodes()`.
#[must_use]
pub fn extrapolate_vertex(sub: &Subdivision, t: usize, corner: usize, x: &[DVec3]) -> DVec3 {
    assert!(corner < 3, "a triangle has three corners");
    extrapolation_stencil(sub, t, corner)
        .iter()
        .map(|&(n, w)| w * x[n as usize])
        .sum()
}

/// Sorts `(node, coefficient)` terms by node, merges duplicates and drops exact zeros.
fn merge_terms(terms: &mut Vec<(u32, f64)>) {
    terms.sort_by_key(|&(n, _)| n);
    let mut out: Vec<(u32, f64)> = Vec::with_capacity(terms.len());
    for &(n, w) in terms.iter() {
        match out.last_mut() {
            Some(last) if last.0 == n => last.1 += w,
            _ => out.push((n, w)),
        }
    }
    out.retain(|&(_, w)| w != 0.0);
    *terms = out;
}

/// Wang 2012's inextensibility, conforming and boundary constraints on one subdivided mesh, with
/// their stencils and rest data (see the module doc for rows, choices and the DOF count).
#[derive(Clone, Debug)]
pub struct IsometricConstraints {
    num_nodes: usize,
    pub(crate) num_black: usize,
    /// (3.1): red node pairs and rest lengths, row `r` = `pairs[r]`.
    pairs: Vec<[u32; 2]>,
    rest_lengths: Vec<f64>,
    /// (3.3) then (3.4): one linear vector constraint `Σ w_l x_l` each, CSR.
    linear_offsets: Vec<u32>,
    linear_nodes: Vec<u32>,
    linear_weights: Vec<f64>,
    /// The black node of each boundary constraint, ascending.
    boundary_vertices: Vec<u32>,
    /// `ConstraintSet` stencils of all scalar rows.
    stencil_offsets: Vec<u32>,
    stencil_vertices: Vec<u32>,
    /// The constant gradients of the linear rows, in stencil order.
    linear_gradients: Vec<DVec3>,
    /// Base edges (black nodes) and their rest lengths, for the base-edge strain.
    pub(crate) base_edges: Vec<[u32; 2]>,
    pub(crate) base_rest_lengths: Vec<f64>,
}

impl IsometricConstraints {
    /// Builds all three families for `sub` with rest node positions `rest` (`sub.num_nodes()`
    /// entries; [`Subdivision::node_positions`] gives exact midpoints from base rest positions).
    ///
    /// Errors: see [`IsometricError`]; checked in the order rest length, finiteness, isolated and
    /// non-manifold boundary vertices (ascending), degenerate rest pairs (in row order).
    pub fn new(sub: &Subdivision, rest: &[DVec3]) -> Result<Self, IsometricError> {
        let (num_nodes, num_black) = (sub.num_nodes(), sub.num_black_nodes());
        if rest.len() != num_nodes {
            return Err(IsometricError::RestLength {
                expected: num_nodes,
                got: rest.len(),
            });
        }
        if let Some(n) = rest.iter().position(|p| !p.is_finite()) {
            return Err(IsometricError::NonFiniteRest { node: n as u32 });
        }
        let topo = sub.base_topology();
        let tris = sub.base_triangles();
        let corner_of = |t: u32, k: u32| -> usize {
            tris[t as usize]
                .iter()
                .position(|&v| v == k)
                .expect("vertex_triangles(k) lists triangles containing k")
        };

        // (3.3) and (3.4) stencils, one vector constraint at a time.
        let mut linear_offsets = vec![0u32];
        let mut linear_nodes = Vec::new();
        let mut linear_weights = Vec::new();
        let mut terms: Vec<(u32, f64)> = Vec::new();
        let mut push = |terms: &mut Vec<(u32, f64)>| {
            merge_terms(terms);
            for &(n, w) in terms.iter() {
                linear_nodes.push(n);
                linear_weights.push(w);
            }
            linear_offsets.push(linear_nodes.len() as u32);
        };
        for k in 0..num_black {
            let incident = topo.vertex_triangles(k);
            if incident.is_empty() {
                return Err(IsometricError::IsolatedVertex { vertex: k as u32 });
            }
            let inv_m = 1.0 / incident.len() as f64;
            terms.clear();
            terms.push((k as u32, 1.0));
            for &t in incident {
                for (n, w) in extrapolation_stencil(sub, t as usize, corner_of(t, k as u32)) {
                    terms.push((n, -inv_m * w));
                }
            }
            push(&mut terms);
        }
        let mut boundary_vertices = Vec::new();
        for &k in topo.boundary_vertices() {
            let boundary_edges: Vec<u32> = topo
                .vertex_edges(k as usize)
                .iter()
                .copied()
                .filter(|&e| topo.edge_triangles(e as usize)[1] == NO_TRIANGLE)
                .collect();
            let &[e1, e2] = boundary_edges.as_slice() else {
                return Err(IsometricError::NonManifoldBoundaryVertex {
                    vertex: k,
                    boundary_edges: boundary_edges.len() as u32,
                });
            };
            let m_k = topo.vertex_triangles(k as usize).len();
            let (t1, t2) = (
                topo.edge_triangles(e1 as usize)[0],
                topo.edge_triangles(e2 as usize)[0],
            );
            if m_k < 2 {
                continue;
            }
            if t1 == t2 {
                // Both boundary edges in one triangle but other triangles at k: two fans.
                return Err(IsometricError::NonManifoldBoundaryVertex {
                    vertex: k,
                    boundary_edges: 2,
                });
            }
            terms.clear();
            for (t, sign) in [(t1, 1.0), (t2, -1.0)] {
                for (n, w) in extrapolation_stencil(sub, t as usize, corner_of(t, k)) {
                    terms.push((n, sign * w));
                }
            }
            push(&mut terms);
            boundary_vertices.push(k);
        }

        // (3.1): the three edges of every middle triangle.
        let nf = tris.len();
        let mut pairs = Vec::with_capacity(3 * nf);
        let mut rest_lengths = Vec::with_capacity(3 * nf);
        for t in 0..nf {
            let red = sub.red_nodes(t);
            for k in 0..3 {
                let (a, b) = (red[k], red[(k + 1) % 3]);
                let d = (rest[a as usize] - rest[b as usize]).length();
                if d <= 0.0 {
                    return Err(IsometricError::DegenerateRest {
                        triangle: t as u32,
                        a,
                        b,
                    });
                }
                pairs.push([a, b]);
                rest_lengths.push(d);
            }
        }

        // Scalar-row stencils for the ConstraintSet interface, and the constant linear gradients.
        let num_linear = linear_offsets.len() - 1;
        let mut stencil_offsets = Vec::with_capacity(pairs.len() + 3 * num_linear + 1);
        let mut stencil_vertices = Vec::with_capacity(2 * pairs.len() + 3 * linear_nodes.len());
        let mut linear_gradients = Vec::with_capacity(3 * linear_nodes.len());
        stencil_offsets.push(0u32);
        for &[a, b] in &pairs {
            stencil_vertices.extend_from_slice(&[a, b]);
            stencil_offsets.push(stencil_vertices.len() as u32);
        }
        for c in 0..num_linear {
            let range = linear_offsets[c] as usize..linear_offsets[c + 1] as usize;
            for axis in 0..3 {
                for l in range.clone() {
                    stencil_vertices.push(linear_nodes[l]);
                    let mut g = DVec3::ZERO;
                    g[axis] = linear_weights[l];
                    linear_gradients.push(g);
                }
                stencil_offsets.push(stencil_vertices.len() as u32);
            }
        }

        let base_edges = topo.edges().to_vec();
        let base_rest_lengths = base_edges
            .iter()
            .map(|&[a, b]| (rest[a as usize] - rest[b as usize]).length())
            .collect();

        Ok(IsometricConstraints {
            num_nodes,
            num_black,
            pairs,
            rest_lengths,
            linear_offsets,
            linear_nodes,
            linear_weights,
            boundary_vertices,
            stencil_offsets,
            stencil_vertices,
            linear_gradients,
            base_edges,
            base_rest_lengths,
        })
    }

    /// Number of nodes of the subdivided mesh the constraints act on (`x.len()` everywhere).
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// Scalar rows of one family.
    #[must_use]
    pub fn count(&self, family: Family) -> usize {
        self.range(family).len()
    }

    /// The scalar rows of one family (families are contiguous, in [`Family`] order).
    #[must_use]
    pub fn range(&self, family: Family) -> Range<usize> {
        let (n_in, n_conf) = (self.pairs.len(), 3 * self.num_black);
        let n_bnd = 3 * self.boundary_vertices.len();
        match family {
            Family::Inextensibility => 0..n_in,
            Family::Conforming => n_in..n_in + n_conf,
            Family::Boundary => n_in + n_conf..n_in + n_conf + n_bnd,
        }
    }

    /// Whether the gradients of row `row` depend on `x`: only the inextensibility rows (eq. 3.1) do;
    /// conforming and boundary rows are linear with constant gradients (Wang 2012 eq. 3.3, 3.4).
    #[must_use]
    pub fn is_nonlinear(&self, row: usize) -> bool {
        row < self.pairs.len()
    }

    /// The red node pair of each inextensibility row.
    #[must_use]
    pub fn pairs(&self) -> &[[u32; 2]] {
        &self.pairs
    }

    /// The rest length `d_ij` of each inextensibility row, metres.
    #[must_use]
    pub fn rest_lengths(&self) -> &[f64] {
        &self.rest_lengths
    }

    /// The black node of each boundary constraint (boundary vertices with `m_k ≥ 2`), ascending;
    /// boundary constraint `b` owns rows `range(Boundary).start + 3b + (0, 1, 2)`.
    #[must_use]
    pub fn boundary_vertices(&self) -> &[u32] {
        &self.boundary_vertices
    }

    /// Stencil `(nodes, weights)` of linear vector constraint `c`: conforming constraint `k` is
    /// `c = k`, boundary constraint `b` is `c = V + b`. The constraint is `Σ w_l x_l = 0`, and its
    /// x, y, z rows have the gradient `w_l e_axis` on node `l`.
    ///
    /// # Panics
    /// If `c` is out of range.
    #[must_use]
    pub fn linear_stencil(&self, c: usize) -> (&[u32], &[f64]) {
        let r = self.linear_offsets[c] as usize..self.linear_offsets[c + 1] as usize;
        (&self.linear_nodes[r.clone()], &self.linear_weights[r])
    }

    /// `max |‖x_i − x_j‖/d_ij − 1|` over the inextensibility pairs: the Gauss–Newton stopping
    /// test (`docs/methods/isometric-model.md §A15`; the strain of §A4). 0 when there are no rows.
    #[must_use]
    pub fn max_strain(&self, x: &[DVec3]) -> f64 {
        self.pairs
            .iter()
            .zip(&self.rest_lengths)
            .map(|(&[i, j], &d)| ((x[i as usize] - x[j as usize]).length() / d - 1.0).abs())
            .fold(0.0, f64::max)
    }

    /// One stopping-test length per row (`docs/methods/isometric-model.md §A15`): `d_ij`
    /// for an inextensibility row, so `|C|/d_ij` is its strain; `ℓ_min`, the shortest rest red–red
    /// distance, for the conforming (eq. 3.3) and boundary (eq. 3.4) rows, whose values are
    /// displacements in metres. **Choice**: the thesis tests only the strain; a linear row left out
    /// of the test is only as exact as the last truncated linear solve, and its drift accumulates
    /// over steps, so `|C|/ℓ_min ≤ ε` holds it to the same relative accuracy as the (3.1) rows.
    /// Allocates (call once, at creation).
    #[must_use]
    pub fn stopping_scales(&self) -> Vec<f64> {
        let l_min = self
            .rest_lengths
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let l_min = if l_min.is_finite() { l_min } else { 1.0 };
        let mut s = self.rest_lengths.clone();
        let total = self.range(Family::Boundary).end;
        s.resize(total, l_min);
        s
    }

    /// Per-row regularisation `D` of Wang 2012 eq. 3.30, written into `out` (one entry per row of
    /// the set): `D_a = β_f (J W Jᵀ)_aa`, with `β_f` = `beta[0]` on the (3.1) rows (where
    /// `(J W Jᵀ)_aa = w_i + w_j`), `beta[1]` on the (3.3) rows and `beta[2]` on the (3.4) rows
    /// (`Σ_l w_l c_l²` over the stencil `(l, c_l)`).
    ///
    /// This is the `D = β w_p` of one-node contact rows (Wang 2012 eq. 3.30) generalised (where
    /// `(J W Jᵀ)_aa = w_p`) to stencil rows: dimensionless `β`, independent of density and
    /// resolution, `K_aa = (1 + β)(J W Jᵀ)_aa`, and the eigenvalues of the Jacobi-scaled `K`
    /// are bounded below by about `β / (1 + β)` on the constraint rows whatever the redundancy
    /// of the rows (`docs/methods/isometric-model.md §A14`, §A3). Rows whose nodes are all pinned
    /// get 0 (the solver drops them, §A12). Used as a compliance ([`RowRole::PerRow`]) the row
    /// keeps a violation `D λ`; used as a proximal weight ([`RowRole::Proximal`]) it is hard at
    /// convergence. Allocates nothing.
    ///
    /// [`RowRole::PerRow`]: crate::integrate::projection::RowRole::PerRow
    /// [`RowRole::Proximal`]: crate::integrate::projection::RowRole::Proximal
    ///
    /// # Panics
    /// If `inv_mass` is not one entry per node or `out` not one entry per row.
    pub fn row_regularisation(&self, inv_mass: &[f64], beta: [f64; 3], out: &mut [f64]) {
        assert_eq!(inv_mass.len(), self.num_nodes, "one inverse mass per node");
        assert_eq!(out.len(), self.len(), "one regularisation per row");
        for (o, &[i, j]) in out.iter_mut().zip(&self.pairs) {
            *o = beta[0].max(0.0) * (inv_mass[i as usize] + inv_mass[j as usize]);
        }
        let n_in = self.pairs.len();
        for c in 0..self.linear_offsets.len() - 1 {
            let b = if c < self.num_black { beta[1] } else { beta[2] };
            let r = self.linear_offsets[c] as usize..self.linear_offsets[c + 1] as usize;
            let kaa: f64 = self.linear_nodes[r.clone()]
                .iter()
                .zip(&self.linear_weights[r])
                .map(|(&l, &w)| inv_mass[l as usize] * w * w)
                .sum();
            out[n_in + 3 * c..n_in + 3 * c + 3].fill(b.max(0.0) * kaa);
        }
    }

    /// The base edges as `[p, m, q]` (black, red, black) with their rest lengths: the stencils
    /// of the base-edge rows (`crate::integrate::base_edge_rows`).
    #[must_use]
    pub fn base_edge_stencils(&self) -> (Vec<[u32; 3]>, Vec<f64>) {
        let stencils = self
            .base_edges
            .iter()
            .enumerate()
            .map(|(e, &[p, q])| [p, (self.num_black + e) as u32, q])
            .collect();
        (stencils, self.base_rest_lengths.clone())
    }

    /// Maximum strain of the base mesh edges, through the red node and end to end (Wang 2012
    /// Fig. 4.2; `docs/methods/isometric-model.md §A16`). Base edges of zero rest length are
    /// skipped.
    #[must_use]
    pub fn max_base_edge_strain(&self, x: &[DVec3]) -> BaseEdgeStrain {
        let mut s = BaseEdgeStrain::default();
        for (e, (&[p, q], &l)) in self
            .base_edges
            .iter()
            .zip(&self.base_rest_lengths)
            .enumerate()
        {
            if l <= 0.0 {
                continue;
            }
            let (xp, xq, xm) = (x[p as usize], x[q as usize], x[self.num_black + e]);
            let through = ((xp - xm).length() + (xm - xq).length()) / l - 1.0;
            let direct = (xp - xq).length() / l - 1.0;
            s.through_midpoint = s.through_midpoint.max(through.abs());
            s.end_to_end = s.end_to_end.max(direct.abs());
        }
        s
    }

    /// Writes only the `x`-dependent gradients, those of the inextensibility rows (Wang 2012 eq. 3.2
    /// corrected, `docs/methods/isometric-model.md §A4`), into `g[..2 · count(Inextensibility)]`
    /// and leaves the rest of `g` alone.
    ///
    /// The conforming and boundary gradients are constant (eq. 3.3, 3.4 are linear), and make up
    /// most of the stencil entries (about 80% on a grid). A solver that keeps its gradient buffer
    /// calls [`ConstraintSet::gradients`] once and this every Gauss–Newton iteration instead of
    /// copying the constant block again.
    ///
    /// # Panics
    /// If `g.len() != stencil_vertices().len()` or `x` is shorter than
    /// [`IsometricConstraints::num_nodes`].
    pub fn inextensibility_gradients(&self, x: &[DVec3], g: &mut [DVec3]) {
        assert_eq!(
            g.len(),
            self.stencil_vertices.len(),
            "one gradient per stencil entry"
        );
        for (out, &[i, j]) in g[..2 * self.pairs.len()]
            .chunks_exact_mut(2)
            .zip(&self.pairs)
        {
            let u = (x[i as usize] - x[j as usize]).normalize_or_zero();
            out[0] = u;
            out[1] = -u;
        }
    }

    /// Evaluates the linear vector constraints `Σ w_l x_l` into `c` (3 rows each).
    fn evaluate_linear(&self, x: &[DVec3], c: &mut [f64]) {
        let offsets = &self.linear_offsets;
        for (k, out) in c.chunks_exact_mut(3).enumerate() {
            let (lo, hi) = (offsets[k] as usize, offsets[k + 1] as usize);
            let mut s = DVec3::ZERO;
            for (&n, &w) in self.linear_nodes[lo..hi]
                .iter()
                .zip(&self.linear_weights[lo..hi])
            {
                s += w * x[n as usize];
            }
            out.copy_from_slice(&s.to_array());
        }
    }
}

impl ConstraintSet for IsometricConstraints {
    fn len(&self) -> usize {
        self.pairs.len() + 3 * (self.linear_offsets.len() - 1)
    }

    fn stencil_offsets(&self) -> &[u32] {
        &self.stencil_offsets
    }

    fn stencil_vertices(&self) -> &[u32] {
        &self.stencil_vertices
    }

    /// Wang 2012 eq. 3.1 (`‖x_i − x_j‖ − d_ij`), eq. 3.3 and eq. 3.4 (linear), row order of the
    /// module doc.
    ///
    /// # Panics
    /// If `c.len() != len()` or `x` is shorter than [`IsometricConstraints::num_nodes`].
    fn evaluate(&self, x: &[DVec3], c: &mut [f64]) {
        assert_eq!(c.len(), self.len(), "one value per constraint");
        let (c_in, c_lin) = c.split_at_mut(self.pairs.len());
        for ((out, &[i, j]), &d) in c_in.iter_mut().zip(&self.pairs).zip(&self.rest_lengths) {
            *out = (x[i as usize] - x[j as usize]).length() - d;
        }
        self.evaluate_linear(x, c_lin);
    }

    /// Wang 2012 eq. 3.2 corrected (`docs/methods/isometric-model.md §A4`:
    /// `±(x_i − x_j)/‖x_i − x_j‖`) for the inextensibility rows; the constant linear-row gradients
    /// copied for eq. 3.3 and 3.4.
    ///
    /// # Panics
    /// If `g.len() != stencil_vertices().len()` or `x` is shorter than
    /// [`IsometricConstraints::num_nodes`].
    fn gradients(&self, x: &[DVec3], g: &mut [DVec3]) {
        assert_eq!(
            g.len(),
            self.stencil_vertices.len(),
            "one gradient per stencil entry"
        );
        self.inextensibility_gradients(x, g);
        g[2 * self.pairs.len()..].copy_from_slice(&self.linear_gradients);
    }

    /// The base-edge strain through the red node, `(‖x_p − x_m‖ + ‖x_m − x_q‖)/ℓ_pq − 1` in
    /// absolute value (Wang 2012 Fig. 4.2; `docs/methods/isometric-model.md §A16`: of the two
    /// readings, this is the larger when stretched). **Choice**: the rows of eq. 3.1 hold the
    /// middle triangles, and the black nodes follow the mean extrapolation of eq. 3.3, so a base
    /// edge's half through its black node can stretch while every (3.1) row is within the
    /// tolerance: measured on the hanging sheet settled at rest, 0.1 % on the (3.1) rows gave
    /// 0.11–0.23 % on the base edges. With this in the stopping test, "converged" means the edges a
    /// user sees are within the strain tolerance. In a fold one element wide the extrapolations of
    /// a black node's triangles disagree by O((κh)²) whatever the rows do; there the projection
    /// runs to its cap and says so.
    fn monitored_strain(&self, x: &[DVec3]) -> f64 {
        self.max_base_edge_strain(x).through_midpoint
    }
}

#[cfg(test)]
#[allow(
    clippy::needless_range_loop,
    reason = "dense test matrices are indexed by (row, column) on purpose"
)]
mod tests {
    use super::*;
    use crate::mesh::{Diagonals, GridSpec, Topology, TriMesh, grid, icosphere, subdivide};
    use crate::model::test_support::SplitMix64;
    use glam::{DMat3, Vec2, Vec3};

    fn grid_mesh(nx: u32, ny: u32, diagonals: Diagonals) -> TriMesh {
        grid(&GridSpec {
            nx,
            ny,
            size: Vec2::new(1.0, 0.8),
            centre: Vec3::new(0.1, 0.45, -0.2),
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals,
        })
        .expect("valid grid")
    }

    /// Subdivision, exact f64 rest node positions, constraints.
    fn build(base: &TriMesh) -> (Subdivision, Vec<DVec3>, IsometricConstraints) {
        let topo = Topology::build(base).expect("manifold");
        let sub = subdivide(base, &topo).expect("subdivides");
        let b: Vec<DVec3> = base.positions.iter().map(|p| p.as_dvec3()).collect();
        let rest = sub.node_positions(&b);
        let cons = IsometricConstraints::new(&sub, &rest).expect("valid rest");
        (sub, rest, cons)
    }

    fn test_meshes() -> Vec<(TriMesh, i64)> {
        let mut out = Vec::new();
        for d in [Diagonals::Regular, Diagonals::Alternating] {
            for (nx, ny) in [(2, 2), (3, 3), (5, 4)] {
                out.push((grid_mesh(nx, ny, d), 1));
            }
        }
        out.push((icosphere(0.4, 1).expect("valid"), 2));
        out
    }

    fn eval(c: &IsometricConstraints, x: &[DVec3]) -> Vec<f64> {
        let mut out = vec![0.0; c.len()];
        c.evaluate(x, &mut out);
        out
    }

    /// Dense `rows × 3N` Jacobian from the stencils and gradients.
    fn dense_jacobian(c: &IsometricConstraints, x: &[DVec3]) -> Vec<Vec<f64>> {
        let mut g = vec![DVec3::ZERO; c.stencil_vertices().len()];
        c.gradients(x, &mut g);
        let o = c.stencil_offsets();
        (0..c.len())
            .map(|i| {
                let mut row = vec![0.0; 3 * c.num_nodes()];
                for k in o[i] as usize..o[i + 1] as usize {
                    let v = c.stencil_vertices()[k] as usize;
                    for a in 0..3 {
                        row[3 * v + a] += g[k][a];
                    }
                }
                row
            })
            .collect()
    }

    /// Rank of a dense matrix from the eigenvalues of `J Jᵀ` (relative threshold).
    fn rank(j: &[Vec<f64>]) -> usize {
        let n = j.len();
        let jjt = faer::Mat::<f64>::from_fn(n, n, |r, c| {
            j[r].iter().zip(&j[c]).map(|(a, b)| a * b).sum()
        });
        let ev = jjt
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .expect("symmetric eigen-solver converges");
        let max = ev.iter().copied().fold(0.0, f64::max);
        ev.iter().filter(|&&e| e > 1e-10 * max).count()
    }

    /// Out-of-plane bump plus small random noise: a generic, non-planar, nearly isometric state.
    fn perturbed(rest: &[DVec3], rng: &mut SplitMix64, noise: f64) -> Vec<DVec3> {
        rest.iter()
            .map(|p| {
                *p + DVec3::new(0.0, 0.2 * (3.0 * p.x).sin() * (2.0 * p.z).cos(), 0.0)
                    + rng.vec3(noise)
            })
            .collect()
    }

    #[test]
    fn counts_and_dof_formula_on_grids_and_spheres() {
        for (base, chi) in test_meshes() {
            let (sub, _, c) = build(&base);
            let topo = sub.base_topology();
            let (v, e, f) = (
                sub.num_black_nodes(),
                sub.num_red_nodes(),
                sub.num_base_triangles(),
            );
            // B₂ counted independently: boundary vertices minus the single-triangle corners.
            let b2 = topo
                .boundary_vertices()
                .iter()
                .filter(|&&k| topo.vertex_triangles(k as usize).len() >= 2)
                .count();
            assert_eq!(c.count(Family::Inextensibility), 3 * f);
            assert_eq!(c.count(Family::Conforming), 3 * v);
            assert_eq!(c.count(Family::Boundary), 3 * b2);
            assert_eq!(c.len(), 3 * f + 3 * v + 3 * b2);
            assert_eq!(c.stencil_offsets().len(), c.len() + 1);
            // The module doc's count: 3N − rows = 3(V − χ − B₂).
            let free = 3 * (v + e) as i64 - c.len() as i64;
            assert_eq!(free, 3 * (v as i64 - chi - b2 as i64));
        }
        // Closed form for an nx × ny regular grid: corners (nx−1, 0) and (0, ny−1) have one
        // triangle, the other two corners two; so B₂ = 2nx + 2ny − 6 and
        // 3N − rows = 3((nx − 2)(ny − 2) + 2 − 1).
        for (nx, ny) in [(3u32, 3u32), (6, 4), (9, 7)] {
            let (_, _, c) = build(&grid_mesh(nx, ny, Diagonals::Regular));
            assert_eq!(c.count(Family::Boundary) as u32, 3 * (2 * nx + 2 * ny - 6));
            let n = nx * ny + (nx - 1) * ny + nx * (ny - 1) + (nx - 1) * (ny - 1);
            assert_eq!(3 * n - c.len() as u32, 3 * ((nx - 2) * (ny - 2) + 1));
        }
    }

    #[test]
    fn rows_are_independent_at_generic_states_and_redundant_when_flat() {
        // docs/methods/isometric-model.md §A3: on a 4 × 4-cell regular grid, (3.1)+(3.3)+(3.4) have
        // 213 rows, rank 198 when flat and full rank after a generic out-of-plane perturbation;
        // (3.1)+(3.3) alone are full rank even when flat.
        let mut rng = SplitMix64::new(7);
        let (_, rest, c) = build(&grid_mesh(5, 5, Diagonals::Regular));
        assert_eq!(c.len(), 213);
        let flat = dense_jacobian(&c, &rest);
        assert_eq!(rank(&flat), 198);
        let no_boundary = &flat[..c.range(Family::Conforming).end];
        assert_eq!(rank(no_boundary), no_boundary.len());
        let x = perturbed(&rest, &mut rng, 0.01);
        assert_eq!(rank(&dense_jacobian(&c, &x)), 213);
        // The count of the module doc is then exact: the constraint manifold has dimension
        // 3N − rows > 0 (no locking). Also on the checkerboard grid of the canonical scenes and on
        // a closed sphere.
        for base in [
            grid_mesh(5, 4, Diagonals::Alternating),
            icosphere(0.4, 1).expect("valid"),
        ] {
            let (_, rest, c) = build(&base);
            let x = perturbed(&rest, &mut rng, 0.01);
            assert_eq!(rank(&dense_jacobian(&c, &x)), c.len());
            assert!(3 * c.num_nodes() > c.len());
        }
    }

    #[test]
    fn rest_and_rigid_motions_satisfy_every_row() {
        let mut rng = SplitMix64::new(11);
        for (base, _) in test_meshes() {
            let (_, rest, c) = build(&base);
            let tol = 1e-14;
            assert!(eval(&c, &rest).iter().all(|v| v.abs() < tol), "rest");
            assert!(c.max_strain(&rest) < tol);
            let s = c.max_base_edge_strain(&rest);
            assert!(s.through_midpoint < tol && s.end_to_end < tol);
            for _ in 0..5 {
                let (r, t) = (rng.rotation(), rng.vec3(3.0));
                let x: Vec<DVec3> = rest.iter().map(|p| r * *p + t).collect();
                let v = eval(&c, &x);
                let worst = v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
                assert!(worst < 1e-13, "rigid motion: residual {worst}");
                assert!(c.max_strain(&x) < 1e-13);
            }
        }
    }

    #[test]
    fn extrapolation_reproduces_affine_images() {
        // docs/methods/isometric-model.md §A2: E_t(k) is exactly φ(X_k) for any affine φ, so (3.3)
        // and (3.4) vanish on affine images of the rest mesh while (3.1) in general does not.
        let mut rng = SplitMix64::new(3);
        for (base, _) in test_meshes() {
            let (sub, _, c) = build(&base);
            let b: Vec<DVec3> = base.positions.iter().map(|p| p.as_dvec3()).collect();
            for _ in 0..4 {
                let f = DMat3::from_cols(rng.vec3(2.0), rng.vec3(2.0), rng.vec3(2.0));
                let t = rng.vec3(1.0);
                let mapped: Vec<DVec3> = b.iter().map(|p| f * *p + t).collect();
                let x = sub.node_positions(&mapped);
                for (ti, tri) in sub.base_triangles().iter().enumerate() {
                    for (corner, &k) in tri.iter().enumerate() {
                        let e = extrapolate_vertex(&sub, ti, corner, &x);
                        assert!((e - mapped[k as usize]).length() < 1e-13, "t {ti} k {k}");
                    }
                }
                let v = eval(&c, &x);
                let lin = c.range(Family::Conforming).start..c.len();
                assert!(v[lin].iter().all(|a| a.abs() < 1e-13));
            }
        }
    }

    #[test]
    fn jacobians_match_finite_differences() {
        let mut rng = SplitMix64::new(5);
        for (base, _) in test_meshes() {
            let (_, rest, c) = build(&base);
            for _ in 0..3 {
                let x = perturbed(&rest, &mut rng, 0.05);
                let j = dense_jacobian(&c, &x);
                let h = 1e-6;
                let mut xp = x.clone();
                for v in 0..x.len() {
                    for a in 0..3 {
                        xp[v][a] = x[v][a] + h;
                        let cp = eval(&c, &xp);
                        xp[v][a] = x[v][a] - h;
                        let cm = eval(&c, &xp);
                        xp[v][a] = x[v][a];
                        for r in 0..c.len() {
                            let fd = (cp[r] - cm[r]) / (2.0 * h);
                            // Covers stencil completeness too: off-stencil entries are 0 in J.
                            assert!(
                                (fd - j[r][3 * v + a]).abs() < 1e-7,
                                "row {r} node {v} axis {a}: fd {fd} vs {}",
                                j[r][3 * v + a]
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn stencils_are_unique_and_linear_rows_constant() {
        let (_, rest, c) = build(&grid_mesh(5, 4, Diagonals::Alternating));
        let o = c.stencil_offsets();
        for i in 0..c.len() {
            let s = &c.stencil_vertices()[o[i] as usize..o[i + 1] as usize];
            let mut sorted = s.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), s.len(), "row {i} repeats a node");
            assert_eq!(c.is_nonlinear(i), i < c.count(Family::Inextensibility));
        }
        // Conforming weights sum to zero (translation invariance) with +1 on the black node.
        for k in 0..c.range(Family::Conforming).len() / 3 {
            let (nodes, w) = c.linear_stencil(k);
            assert!(w.iter().sum::<f64>().abs() < 1e-15);
            let at_k = nodes
                .iter()
                .position(|&n| n as usize == k)
                .expect("own node");
            assert_eq!(w[at_k], 1.0);
        }
        let mut rng = SplitMix64::new(9);
        let x = perturbed(&rest, &mut rng, 0.1);
        let (ja, jb) = (dense_jacobian(&c, &rest), dense_jacobian(&c, &x));
        let lin = c.range(Family::Conforming).start..c.len();
        assert_eq!(ja[lin.clone()], jb[lin]);
        // Refreshing only the nonlinear gradients over a buffer filled at another state gives
        // the full gradients at the new state.
        let mut full = vec![DVec3::ZERO; c.stencil_vertices().len()];
        c.gradients(&x, &mut full);
        let mut partial = vec![DVec3::ZERO; full.len()];
        c.gradients(&rest, &mut partial);
        c.inextensibility_gradients(&x, &mut partial);
        assert_eq!(partial, full);
    }

    #[test]
    fn boundary_stencils_follow_fig_3_2() {
        // Regular 3 × 3 grid: corner 2 = (2, 0) has one triangle (vertex A: no boundary row);
        // corner 0 has two (vertex C: the shared interior edge cancels, 4 red nodes remain);
        // edge-midpoint vertex 1 = (1, 0) has three (vertex B: 6 red nodes).
        let (sub, _, c) = build(&grid_mesh(3, 3, Diagonals::Regular));
        let bv = c.boundary_vertices();
        assert!(!bv.contains(&2) && !bv.contains(&6));
        assert_eq!(bv, &[0, 1, 3, 5, 7, 8]);
        let v = sub.num_black_nodes();
        let (n0, w0) = c.linear_stencil(v);
        assert_eq!((n0.len(), w0.iter().sum::<f64>()), (4, 0.0));
        let (n1, _) = c.linear_stencil(v + 1);
        assert_eq!(n1.len(), 6);
        // Every boundary stencil acts on red nodes only.
        for b in 0..bv.len() {
            assert!(c.linear_stencil(v + b).0.iter().all(|&n| n as usize >= v));
        }
    }

    #[test]
    fn base_edge_strain_measures_both_ways() {
        let (sub, rest, c) = build(&grid_mesh(3, 3, Diagonals::Regular));
        // Stretch uniformly by 2% in x: end-to-end strain of x-aligned edges is 2%; with red
        // nodes on the midpoints both measures agree.
        let x: Vec<DVec3> = rest
            .iter()
            .map(|p| DVec3::new(1.02 * p.x, p.y, p.z))
            .collect();
        let s = c.max_base_edge_strain(&x);
        assert!((s.end_to_end - 0.02).abs() < 1e-12 && (s.through_midpoint - 0.02).abs() < 1e-12);
        // Kinking one red node sideways changes only the through-midpoint measure.
        let mut y = rest.clone();
        let e0 = sub.red_node_of_edge(0) as usize;
        let [a, b] = sub.base_topology().edges()[0];
        let l = (rest[a as usize] - rest[b as usize]).length();
        let dir = (rest[b as usize] - rest[a as usize]).normalize();
        y[e0] += 0.5 * l * dir.any_orthonormal_vector();
        let s = c.max_base_edge_strain(&y);
        assert!(s.end_to_end < 1e-14);
        assert!((s.through_midpoint - (2f64.sqrt() - 1.0)).abs() < 1e-12);
    }

    #[test]
    fn row_regularisation_is_beta_times_the_diagonal_of_jwjt() {
        let (_, rest, c) = build(&grid_mesh(3, 4, Diagonals::Regular));
        let mut rng = SplitMix64::new(21);
        let x: Vec<DVec3> = rest.iter().map(|p| *p + rng.vec3(0.01)).collect();
        let mut w: Vec<f64> = (0..x.len()).map(|_| rng.uniform(0.5, 2.0)).collect();
        w[0] = 0.0;
        let mut g = vec![DVec3::ZERO; c.stencil_vertices().len()];
        c.gradients(&x, &mut g);
        let beta = [1e-2, 3e-3, 7e-4];
        let mut d = vec![0.0; c.len()];
        c.row_regularisation(&w, beta, &mut d);
        let o = c.stencil_offsets();
        let v = c.stencil_vertices();
        for (f, b) in [
            (Family::Inextensibility, beta[0]),
            (Family::Conforming, beta[1]),
            (Family::Boundary, beta[2]),
        ] {
            for a in c.range(f) {
                let kaa: f64 = (o[a] as usize..o[a + 1] as usize)
                    .map(|e| w[v[e] as usize] * g[e].length_squared())
                    .sum();
                assert!((d[a] - b * kaa).abs() <= 1e-12 * kaa.max(1.0), "row {a}");
            }
        }
    }

    #[test]
    fn stopping_scales_are_rest_lengths_then_shortest_red_distance() {
        let (_, _, c) = build(&grid_mesh(3, 4, Diagonals::Regular));
        let s = c.stopping_scales();
        assert_eq!(s.len(), c.len());
        let inext = c.range(Family::Inextensibility);
        assert_eq!(&s[inext.clone()], c.rest_lengths());
        let l_min = c
            .rest_lengths()
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        assert!(l_min > 0.0);
        assert!(s[inext.end..].iter().all(|&v| v == l_min));
        assert!(c.count(Family::Conforming) > 0 && c.count(Family::Boundary) > 0);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let base = grid_mesh(3, 3, Diagonals::Regular);
        let (sub, rest, _) = build(&base);
        assert_eq!(
            IsometricConstraints::new(&sub, &rest[1..]).unwrap_err(),
            IsometricError::RestLength {
                expected: rest.len(),
                got: rest.len() - 1
            }
        );
        let mut bad = rest.clone();
        bad[4].y = f64::NAN;
        assert_eq!(
            IsometricConstraints::new(&sub, &bad).unwrap_err(),
            IsometricError::NonFiniteRest { node: 4 }
        );
        let mut bad = rest.clone();
        let [a, b] = [sub.red_nodes(0)[0], sub.red_nodes(0)[1]];
        bad[b as usize] = bad[a as usize];
        assert!(matches!(
            IsometricConstraints::new(&sub, &bad).unwrap_err(),
            IsometricError::DegenerateRest { triangle: 0, .. }
        ));
        // Two fans touching at vertex 0 (a bow tie): four boundary edges meet there.
        let bow = TriMesh {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::NEG_X, Vec3::NEG_Y],
            triangles: vec![[0, 1, 2], [0, 3, 4]],
            corner_uvs: None,
        };
        let topo = Topology::build(&bow).expect("edge-manifold");
        let sub = subdivide(&bow, &topo).expect("subdivides");
        let b: Vec<DVec3> = bow.positions.iter().map(|p| p.as_dvec3()).collect();
        assert_eq!(
            IsometricConstraints::new(&sub, &sub.node_positions(&b)).unwrap_err(),
            IsometricError::NonManifoldBoundaryVertex {
                vertex: 0,
                boundary_edges: 4
            }
        );
        // An unreferenced vertex.
        let mut lone = base.clone();
        lone.positions.push(Vec3::ONE);
        let topo = Topology::build(&lone).expect("ok");
        let sub = subdivide(&lone, &topo).expect("ok");
        let b: Vec<DVec3> = lone.positions.iter().map(|p| p.as_dvec3()).collect();
        assert_eq!(
            IsometricConstraints::new(&sub, &sub.node_positions(&b)).unwrap_err(),
            IsometricError::IsolatedVertex { vertex: 9 }
        );
    }
}
