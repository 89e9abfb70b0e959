//! A scalar sparse symmetric matrix `K = G W Gᵀ + D` on a pattern built once from row stencils.
//!
//! `G` stacks scalar rows (constraint gradients `∇C_a`, or rows of a residual's Jacobian) whose
//! non-zeros sit on a fixed stencil of vertices, one `DVec3` per stencil entry; `W = M⁻¹ ⊗ I₃`
//! is the diagonal inverse mass (0 for pinned vertices); `D` is a non-negative diagonal
//! (compliance, or the identity of the bending-residual block). This is the matrix of
//! Wang 2012 eq. 3.25 (`D = diag(I, 0)`) and eq. 3.30 (`D` on the friction rows):
//!
//! `K_ab = Σ_{v ∈ stencil(a) ∩ stencil(b)} w_v ∇_v C_a · ∇_v C_b + δ_ab D_a`.
//!
//! Rows `a`, `b` are coupled when their stencils share a vertex. [`SymCsr::from_stencils`]
//! builds the pattern (both triangles, so that `y = K z` is a row-parallel gather) and, for
//! every stored entry, the list of stencil-entry pairs that contribute to it, so that numeric
//! assembly ([`SymCsr::assemble`]) is a fixed loop writing each entry once: no search, no
//! hashing, no allocation, bit-identical for any thread count.
//!
//! Memory grows with `Σ_v |rows(v)|²`; for the large cloth systems the projection applies the
//! same `K` without forming it (`integrate::projection`), and this assembled form is the
//! reference it is tested against and the matrix for small systems.
#![deny(unsafe_code)]

use glam::{DMat3, DVec3};

use super::reduce;
use super::scalar_pcg::SymOperator;

/// Scalar symmetric CSR matrix with a fixed pattern and precomputed assembly lists.
#[derive(Clone, Debug)]
pub struct SymCsr {
    /// CSR row offsets into `cols` / `values` (`n + 1` entries).
    row_offsets: Vec<u32>,
    /// Column of each stored entry; sorted within a row.
    cols: Vec<u32>,
    /// Values, filled by [`SymCsr::assemble`].
    values: Vec<f64>,
    /// Slot of the diagonal entry of each row.
    diag_slots: Vec<u32>,
    /// For entry `s`: `contribs[contrib_offsets[s]..contrib_offsets[s + 1]]`.
    contrib_offsets: Vec<u32>,
    /// `(stencil entry of the row, stencil entry of the column)` pairs on a shared vertex.
    contribs: Vec<[u32; 2]>,
    /// The vertex of every stencil entry (a copy of the stencils the pattern was built from).
    entry_vertex: Vec<u32>,
}

impl SymCsr {
    /// Builds the pattern of `G W Gᵀ + D` from CSR row stencils: row `a` touches
    /// `vertices[offsets[a]..offsets[a + 1]]`, every vertex `< num_vertices`.
    ///
    /// # Panics
    /// If the offsets are not a valid CSR offset array for `vertices`, or a vertex is out of
    /// range (the stencils come from a validated constraint family).
    #[must_use]
    pub fn from_stencils(num_vertices: usize, offsets: &[u32], vertices: &[u32]) -> SymCsr {
        assert!(
            !offsets.is_empty() && offsets[0] == 0,
            "SymCsr: bad offsets"
        );
        assert_eq!(
            *offsets.last().expect("non-empty") as usize,
            vertices.len(),
            "SymCsr: offsets do not cover the stencils"
        );
        let n = offsets.len() - 1;
        // Transpose: vertex -> stencil entries touching it, in entry order.
        let mut vert_offsets = vec![0u32; num_vertices + 1];
        for &v in vertices {
            assert!(
                (v as usize) < num_vertices,
                "SymCsr: vertex {v} out of range"
            );
            vert_offsets[v as usize + 1] += 1;
        }
        for i in 0..num_vertices {
            vert_offsets[i + 1] += vert_offsets[i];
        }
        let mut fill = vert_offsets.clone();
        let mut vert_entries = vec![0u32; vertices.len()];
        let mut entry_row = vec![0u32; vertices.len()];
        for a in 0..n {
            for k in offsets[a]..offsets[a + 1] {
                entry_row[k as usize] = a as u32;
                let v = vertices[k as usize] as usize;
                vert_entries[fill[v] as usize] = k;
                fill[v] += 1;
            }
        }

        let mut row_offsets = Vec::with_capacity(n + 1);
        row_offsets.push(0u32);
        let mut cols = Vec::new();
        let mut diag_slots = Vec::with_capacity(n);
        let mut contrib_offsets = vec![0u32];
        let mut contribs = Vec::new();
        // (column, order key, own entry, other entry), gathered per row then sorted. The key is
        // the entry of the lower-numbered of the two rows, so that `K_ab` and `K_ba` add their
        // shared-vertex terms in the same order and come out bit-identical (exact symmetry).
        let mut scratch: Vec<(u32, u32, u32, u32)> = Vec::new();
        for a in 0..n {
            scratch.clear();
            for ka in offsets[a]..offsets[a + 1] {
                let v = vertices[ka as usize] as usize;
                for &kb in &vert_entries[vert_offsets[v] as usize..vert_offsets[v + 1] as usize] {
                    let b = entry_row[kb as usize];
                    let key = if (a as u32) <= b { ka } else { kb };
                    scratch.push((b, key, ka, kb));
                }
            }
            scratch.sort_unstable();
            let mut diag = None;
            let mut i = 0;
            while i < scratch.len() {
                let b = scratch[i].0;
                if b as usize == a {
                    diag = Some(cols.len() as u32);
                }
                cols.push(b);
                while i < scratch.len() && scratch[i].0 == b {
                    contribs.push([scratch[i].2, scratch[i].3]);
                    i += 1;
                }
                contrib_offsets.push(contribs.len() as u32);
            }
            if diag.is_none() {
                // An empty stencil: keep a diagonal slot for D (a pure compliance row).
                let pos = cols[row_offsets[a] as usize..]
                    .iter()
                    .position(|&c| c as usize > a)
                    .map_or(cols.len(), |p| row_offsets[a] as usize + p);
                cols.insert(pos, a as u32);
                contrib_offsets.insert(pos + 1, contrib_offsets[pos]);
                diag = Some(pos as u32);
            }
            diag_slots.push(diag.expect("set above"));
            row_offsets.push(cols.len() as u32);
        }
        let nnz = cols.len();
        SymCsr {
            row_offsets,
            cols,
            values: vec![0.0; nnz],
            diag_slots,
            contrib_offsets,
            contribs,
            entry_vertex: vertices.to_vec(),
        }
    }

    /// Number of rows (= columns).
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.diag_slots.len()
    }

    /// Number of stored entries (both triangles).
    #[inline]
    #[must_use]
    pub fn num_entries(&self) -> usize {
        self.cols.len()
    }

    /// Numeric assembly of `K = G W Gᵀ + D` (Wang 2012 eq. 3.25 / 3.30) into the fixed slots.
    ///
    /// `gradients[k]` is the stencil entry `k` of `G` (stencil order, as in
    /// `ConstraintSet::gradients`), `inv_mass[v]` = `w_v` per vertex, `diag[a]` = `D_a`.
    /// Allocates nothing; bit-identical for any thread count.
    ///
    /// # Panics
    /// If a slice has the wrong length.
    pub fn assemble(&mut self, gradients: &[DVec3], inv_mass: &[f64], diag: &[f64]) {
        self.assemble_reduced(gradients, inv_mass, None, diag);
    }

    /// Numeric assembly of `K̄ = G W̄ Gᵀ + D` with a per-vertex metric `W̄_v = w_v I − S_v`
    /// (`reduction[v] = S_v`, symmetric; `None`: `S = 0`, i.e. [`SymCsr::assemble`]). This is
    /// the Schur complement of `K` after one-vertex rows (contacts) are eliminated: with rows
    /// `N_v` on vertex `v` and their `D_v`, `S_v = w_v² N_vᵀ (w_v N_v N_vᵀ + D_v)⁻¹ N_v`.
    /// Same fixed slots, allocates nothing, bit-identical for any thread count.
    ///
    /// # Panics
    /// If a slice has the wrong length.
    pub fn assemble_reduced(
        &mut self,
        gradients: &[DVec3],
        inv_mass: &[f64],
        reduction: Option<&[DMat3]>,
        diag: &[f64],
    ) {
        assert_eq!(
            gradients.len(),
            self.entry_vertex.len(),
            "SymCsr: gradients"
        );
        assert_eq!(diag.len(), self.num_rows(), "SymCsr: diag");
        let contrib_offsets = &self.contrib_offsets;
        let contribs = &self.contribs;
        let entry_vertex = &self.entry_vertex;
        // Entries are independent: chunk over the stored entries.
        reduce::for_each_chunk(&mut self.values[..], |first, chunk: &mut [f64]| {
            for (j, val) in chunk.iter_mut().enumerate() {
                let s = first + j;
                let mut acc = 0.0;
                for &[ka, kb] in
                    &contribs[contrib_offsets[s] as usize..contrib_offsets[s + 1] as usize]
                {
                    let v = entry_vertex[ka as usize] as usize;
                    let (ga, gb) = (gradients[ka as usize], gradients[kb as usize]);
                    acc += inv_mass[v] * ga.dot(gb);
                    if let Some(s) = reduction {
                        acc -= ga.dot(s[v] * gb);
                    }
                }
                *val = acc;
            }
        });
        for (&s, &d) in self.diag_slots.iter().zip(diag) {
            self.values[s as usize] += d;
        }
    }

    /// `y = K z`, rows in parallel over fixed chunks (bit-identical for any thread count).
    ///
    /// # Panics
    /// If the lengths differ from the matrix size.
    pub fn mul_vec(&self, z: &[f64], y: &mut [f64]) {
        assert!(z.len() == self.num_rows() && y.len() == self.num_rows());
        reduce::for_each_chunk(y, |first, chunk: &mut [f64]| {
            for (k, yi) in chunk.iter_mut().enumerate() {
                let a = first + k;
                let r = self.row_offsets[a] as usize..self.row_offsets[a + 1] as usize;
                *yi = self.cols[r.clone()]
                    .iter()
                    .zip(&self.values[r])
                    .fold(0.0, |acc, (&c, &v)| acc + v * z[c as usize]);
            }
        });
    }

    /// The stored diagonal entry `K_aa`, writable (a row fixed up after assembly).
    ///
    /// # Panics
    /// If `a` is out of range.
    pub fn diagonal_mut(&mut self, a: usize) -> &mut f64 {
        &mut self.values[self.diag_slots[a] as usize]
    }

    /// The diagonal `K_aa`.
    ///
    /// # Panics
    /// If `out` does not have one entry per row.
    pub fn diagonal(&self, out: &mut [f64]) {
        assert_eq!(out.len(), self.num_rows());
        for (o, &s) in out.iter_mut().zip(&self.diag_slots) {
            *o = self.values[s as usize];
        }
    }

    /// Entry `(a, b)`, 0 outside the pattern (a binary search: for tests and tools).
    #[must_use]
    pub fn get(&self, a: usize, b: usize) -> f64 {
        let r = self.row_offsets[a] as usize..self.row_offsets[a + 1] as usize;
        match self.cols[r.clone()].binary_search(&(b as u32)) {
            Ok(j) => self.values[r.start + j],
            Err(_) => 0.0,
        }
    }

    /// The raw CSR arrays `(row_offsets, cols, values)` (both triangles, columns sorted within a
    /// row), for factorisations built on the same pattern ([`super::ic0`]).
    #[must_use]
    pub fn raw(&self) -> (&[u32], &[u32], &[f64]) {
        (&self.row_offsets, &self.cols, &self.values)
    }

    /// Dense row-major copy (tests and small tools only; allocates).
    #[must_use]
    pub fn to_dense(&self) -> Vec<f64> {
        let n = self.num_rows();
        let mut d = vec![0.0; n * n];
        for a in 0..n {
            for s in self.row_offsets[a] as usize..self.row_offsets[a + 1] as usize {
                d[a * n + self.cols[s] as usize] = self.values[s];
            }
        }
        d
    }
}

impl SymOperator for SymCsr {
    fn len(&self) -> usize {
        self.num_rows()
    }
    fn apply(&mut self, z: &[f64], y: &mut [f64]) {
        self.mul_vec(z, y);
    }
    fn diagonal(&self, out: &mut [f64]) {
        SymCsr::diagonal(self, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::pcg::PcgSettings;
    use crate::linalg::scalar_pcg::{ScalarPcgWorkspace, solve_scalar_pcg};
    use faer::linalg::solvers::Solve;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
        fn below(&mut self, n: usize) -> usize {
            ((self.next() * n as f64) as usize).min(n - 1)
        }
    }

    /// Offsets, vertices, gradients, inverse masses, diagonal.
    type RandomSystem = (Vec<u32>, Vec<u32>, Vec<DVec3>, Vec<f64>, Vec<f64>);

    /// Random rows of 1–4 distinct vertices, random gradients, some pinned vertices.
    fn random_system(rows: usize, verts: usize, seed: u64) -> RandomSystem {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut offsets = vec![0u32];
        let mut vertices = Vec::new();
        for _ in 0..rows {
            let k = 1 + rng.below(4);
            let start = vertices.len();
            while vertices.len() < start + k {
                let v = rng.below(verts) as u32;
                if !vertices[start..].contains(&v) {
                    vertices.push(v);
                }
            }
            offsets.push(vertices.len() as u32);
        }
        let g = (0..vertices.len())
            .map(|_| DVec3::new(rng.next() - 0.5, rng.next() - 0.5, rng.next() - 0.5))
            .collect();
        let w = (0..verts)
            .map(|i| if i % 7 == 3 { 0.0 } else { 0.5 + rng.next() })
            .collect();
        let d = (0..rows)
            .map(|a| if a % 3 == 0 { 1.0 } else { 0.0 })
            .collect();
        (offsets, vertices, g, w, d)
    }

    fn dense_reference(
        n: usize,
        offsets: &[u32],
        vertices: &[u32],
        g: &[DVec3],
        w: &[f64],
        d: &[f64],
    ) -> Vec<f64> {
        let mut k = vec![0.0; n * n];
        for a in 0..n {
            for b in 0..n {
                let mut acc = 0.0;
                for ka in offsets[a]..offsets[a + 1] {
                    for kb in offsets[b]..offsets[b + 1] {
                        let (va, vb) = (vertices[ka as usize], vertices[kb as usize]);
                        if va == vb {
                            acc += w[va as usize] * g[ka as usize].dot(g[kb as usize]);
                        }
                    }
                }
                k[a * n + b] = acc + if a == b { d[a] } else { 0.0 };
            }
        }
        k
    }

    #[test]
    fn assembly_matches_dense_product() {
        for seed in 1..6 {
            let n = 40;
            let (o, v, g, w, d) = random_system(n, 25, seed);
            let mut k = SymCsr::from_stencils(25, &o, &v);
            k.assemble(&g, &w, &d);
            let dense = k.to_dense();
            let reference = dense_reference(n, &o, &v, &g, &w, &d);
            for (x, y) in dense.iter().zip(&reference) {
                assert!((x - y).abs() <= 1e-14, "{x} vs {y}");
            }
            for a in 0..n {
                for b in 0..n {
                    assert_eq!(k.get(a, b), dense[a * n + b]);
                    assert_eq!(dense[a * n + b], dense[b * n + a], "symmetric");
                }
            }
        }
    }

    #[test]
    fn pcg_matches_faer_cholesky() {
        let n = 60;
        let (o, v, g, mut w, mut d) = random_system(n, 200, 11);
        // Full row rank of G W^½ holds generically with few rows on many free vertices;
        // pinned vertices are removed so that no row is empty.
        w.iter_mut().for_each(|x| *x = x.max(0.25));
        d.iter_mut().for_each(|x| *x *= 0.1);
        let mut k = SymCsr::from_stencils(200, &o, &v);
        k.assemble(&g, &w, &d);
        let dense = k.to_dense();
        let mat = faer::Mat::<f64>::from_fn(n, n, |r, c| dense[r * n + c]);
        let chol = mat.llt(faer::Side::Lower).expect("K is SPD");
        let b: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64) - 5.0).collect();
        let rhs = faer::Mat::<f64>::from_fn(n, 1, |r, _| b[r]);
        let x_ref = chol.solve(&rhs);
        let mut z = vec![0.0; n];
        let mut ws = ScalarPcgWorkspace::new(n);
        let settings = PcgSettings {
            max_iterations: 500,
            tolerance: 1e-12,
        };
        let rep = solve_scalar_pcg(&mut k, &b, &settings, &mut ws, &mut z, &mut |_| false);
        assert!(rep.converged, "{rep:?}");
        let scale = (0..n).fold(0.0f64, |m, i| m.max(x_ref[(i, 0)].abs()));
        for i in 0..n {
            assert!(
                (z[i] - x_ref[(i, 0)]).abs() <= 1e-9 * scale,
                "row {i}: {} vs {}",
                z[i],
                x_ref[(i, 0)]
            );
        }
        // A warm start at the solution converges without iterating.
        let rep2 = solve_scalar_pcg(&mut k, &b, &settings, &mut ws, &mut z, &mut |_| false);
        assert_eq!(rep2.iterations, 0);
        // The deadline stops it.
        let mut z0 = vec![0.0; n];
        let rep3 = solve_scalar_pcg(&mut k, &b, &settings, &mut ws, &mut z0, &mut |it| it >= 3);
        assert!(rep3.interrupted && rep3.iterations == 3);
    }

    #[test]
    fn assembly_and_solve_bits_independent_of_threads() {
        let n = 9000;
        let (o, v, g, w, d) = random_system(n, 12_000, 5);
        let d: Vec<f64> = d.iter().map(|x| x + 1e-3).collect();
        let b: Vec<f64> = (0..n).map(|i| (i % 13) as f64 - 6.0).collect();
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool")
                .install(|| {
                    let mut k = SymCsr::from_stencils(12_000, &o, &v);
                    k.assemble(&g, &w, &d);
                    let mut z = vec![0.0; n];
                    let mut ws = ScalarPcgWorkspace::new(n);
                    let s = PcgSettings {
                        max_iterations: 50,
                        tolerance: 1e-10,
                    };
                    solve_scalar_pcg(&mut k, &b, &s, &mut ws, &mut z, &mut |_| false);
                    z
                })
        };
        let a = run(1);
        let c = run(3);
        assert!(a.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()));
    }

    #[test]
    fn pinned_only_row_is_inert() {
        // Row 1 touches only vertex 2, which is pinned: a zero row of K.
        let o = [0u32, 2, 3];
        let v = [0u32, 1, 2];
        let g = [DVec3::X, -DVec3::X, DVec3::Y];
        let w = [1.0, 1.0, 0.0];
        let mut k = SymCsr::from_stencils(3, &o, &v);
        k.assemble(&g, &w, &[0.0, 0.0]);
        assert_eq!(k.get(1, 1), 0.0);
        let mut z = [0.0, 0.0];
        let mut ws = ScalarPcgWorkspace::new(2);
        let s = PcgSettings {
            max_iterations: 10,
            tolerance: 1e-12,
        };
        let rep = solve_scalar_pcg(&mut k, &[1.0, 0.0], &s, &mut ws, &mut z, &mut |_| false);
        assert!(rep.converged);
        assert!((z[0] - 0.5).abs() < 1e-14 && z[1] == 0.0);
    }
}
