//! Rows that hold the base-edge strain through the red node within a band (opt-in,
//! [`BaseEdgeRowsKind::Band`]; `docs/methods/isometric-contact.md` §7).
//!
//! # The row
//!
//! Base edge `pq` of Wang 2012's 4:1 mesh has its red node `m`; the strain Fig. 4.2 plots, read
//! through the red node (`docs/methods/isometric-model.md` §A16), is `s(x) / ℓ` with
//!
//! `s(x) = ‖x_p − x_m‖ + ‖x_m − x_q‖ − ℓ`,   `ℓ = ℓ_pq` the rest length.
//!
//! One row per base edge on the measure itself (not one per half edge): the measure is what
//! the tolerance bounds, and a half-edge row would bound each half by the band, which lets the
//! sum move by twice the band and holds a half edge that the other half could have given way
//! to. The gradient (Gauss–Newton drops the curvature, as for the distance rows of eq. 3.1) is
//!
//! `∂s/∂x_p = u_p`,  `∂s/∂x_q = u_q`,  `∂s/∂x_m = −(u_p + u_q)`,
//!
//! `u_p = (x_p − x_m)/‖x_p − x_m‖`, `u_q = (x_q − x_m)/‖x_q − x_m‖`.
//!
//! # The band and the active set
//!
//! The rows are two-sided inequalities `−b ℓ ≤ s(x) ≤ b ℓ` with `b = BAND_FRACTION · ε` (`ε`
//! the projection's tolerance). Held as equalities they would lock the mesh (`3F + 3V + E = 3N`
//! rows on `3N` coordinates), so each row acts only where its edge reaches the band: it is
//! then the equality `C = s − σ b ℓ = 0` with `σ = ±1` the side it reached, and otherwise
//! released (zero gradient, `D = 1`, value 0: its row of `K` reads `z = 0`, as a released
//! self-contact row's does). Half the tolerance: the stopping test asks `|s| / ℓ ≤ ε` of every
//! held row, which leaves the linearisation of a held row room `(ε − b) ℓ`; a band at `ε`
//! itself would need every held row to converge from the inside.
//!
//! Sign: the solve moves `x = x̃ − W Gᵀ z`, so a row held at `+b` (stretch) shortens the edge
//! when its multiplier `λ > 0`, and one held at `−b` lengthens it when `λ < 0`. A held row with
//! `σ λ < 0` holds the edge out at the band against where the cloth wants it: it is released,
//! as a contact row that pulls is (`docs/methods/isometric-contact.md` §2). The set changes at
//! every Gauss–Newton iteration, with the bounds that keep it from cycling:
//!
//! - a row starts the projection held when its edge is at or beyond the band;
//! - a released row that has not changed yet is taken at the first iterate where its edge
//!   reaches the band;
//! - a row released for pushing the wrong way is taken back only when its edge goes beyond the
//!   stopping test's band `ε ℓ` (inside it the test would call it met), even when its changes are
//!   spent; it then stays held;
//! - a held row is released at most `MAX_TOGGLES` times a projection.
//!
//! Each row changes at most `MAX_TOGGLES + 1` times, so the set cannot cycle. A projection
//! converges once every tested row and every base edge is within `ε`, whether or not the set
//! would still change (it then changes only inside the band; requiring it to settle too was
//! measured worse, `docs/methods/isometric-contact.md` §7). The rows enter
//! the system only while one of them is held (`GaussNewtonProjection`): a projection in which
//! none is held solves exactly the system without them.
//!
//! A tiny compliance `D = COMPLIANCE · (w_p + w_m + w_q)` (Wang 2012 eq. 3.30) keeps `K`
//! positive definite when held rows become dependent on the cloth's rows; the violation it
//! leaves, `D λ`, is about `10⁻⁸` of a node's move.
#![deny(unsafe_code)]

use glam::DVec3;

/// `[solver.isometric] base_edge_rows`: whether rows hold the base-edge strain through the
/// red node ([`BaseEdgeRows`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BaseEdgeRowsKind {
    /// No such rows: the model of Wang 2012 as printed (the default).
    #[default]
    Off,
    /// Two-sided rows at `±BAND_FRACTION · tolerance`, held only where an edge reaches the
    /// band.
    Band,
}

/// The band is this fraction of the projection's tolerance (module doc).
pub const BAND_FRACTION: f64 = 0.5;

/// A held row is released at most this many times a projection.
const MAX_TOGGLES: u8 = 2;

/// The compliance of a held row over the sum of its nodes' inverse masses.
const COMPLIANCE: f64 = 1e-8;

/// The base-edge rows of one cloth: stencils and rest lengths fixed at creation, the active
/// set and the gradients of the current projection.
#[derive(Clone, Debug, Default)]
pub struct BaseEdgeRows {
    /// `[p, m, q]` per row: black, red, black.
    stencils: Vec<[u32; 3]>,
    /// `ℓ_pq` per row (> 0).
    rest: Vec<f64>,
    /// Per row: 0 released, `±1` held at `±b ℓ`.
    side: Vec<i8>,
    /// Changes of state in this projection.
    toggles: Vec<u8>,
    /// `∇C` per row and node (zero while released).
    gradients: Vec<[DVec3; 3]>,
    /// Held rows.
    held: usize,
    /// The band `b` (strain) of this projection.
    band: f64,
    /// The stopping test's tolerance `ε` (strain) of this projection.
    tolerance: f64,
}

impl BaseEdgeRows {
    /// Rows on base edges `stencils[k] = [p, m, q]` (`m` the red node) of rest length
    /// `rest[k]`; edges of zero or non-finite rest length get no row.
    ///
    /// # Panics
    /// If the slices differ in length.
    #[must_use]
    pub fn new(stencils: &[[u32; 3]], rest: &[f64]) -> Self {
        assert_eq!(stencils.len(), rest.len(), "one rest length per base edge");
        let (stencils, rest): (Vec<[u32; 3]>, Vec<f64>) = stencils
            .iter()
            .zip(rest)
            .filter(|&(_, &l)| l.is_finite() && l > 0.0)
            .map(|(&s, &l)| (s, l))
            .unzip();
        let n = stencils.len();
        BaseEdgeRows {
            stencils,
            rest,
            side: vec![0; n],
            toggles: vec![0; n],
            gradients: vec![[DVec3::ZERO; 3]; n],
            held: 0,
            band: 0.0,
            tolerance: 0.0,
        }
    }

    /// Number of rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.stencils.len()
    }

    /// No rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.stencils.is_empty()
    }

    /// Rows held now.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held
    }

    /// Per row: 0 released, `±1` held at the upper or lower bound.
    #[must_use]
    pub fn sides(&self) -> &[i8] {
        &self.side
    }

    /// The nodes `[p, m, q]` of row `k`.
    pub(crate) fn stencil(&self, k: usize) -> [u32; 3] {
        self.stencils[k]
    }

    /// `∇C` of row `k` per node of its stencil (zero while released).
    pub(crate) fn gradient(&self, k: usize) -> [DVec3; 3] {
        self.gradients[k]
    }

    /// `s(x)`: the base edge's length through its red node minus its rest length (metres).
    #[must_use]
    pub fn measure(&self, k: usize, x: &[DVec3]) -> f64 {
        let [p, m, q] = self.stencils[k].map(|v| x[v as usize]);
        (p - m).length() + (m - q).length() - self.rest[k]
    }

    /// `∂s/∂(x_p, x_m, x_q)` at `x` (module doc); a half edge of zero length contributes 0.
    #[must_use]
    pub fn measure_gradient(&self, k: usize, x: &[DVec3]) -> [DVec3; 3] {
        let [p, m, q] = self.stencils[k].map(|v| x[v as usize]);
        let (up, uq) = ((p - m).normalize_or_zero(), (q - m).normalize_or_zero());
        [up, -(up + uq), uq]
    }

    /// Starts a projection with tolerance `tolerance` at its start iterate `x`: a row is held
    /// when its edge is at or beyond the band, on that side; no row has changed yet.
    pub(crate) fn start(&mut self, x: &[DVec3], tolerance: f64) {
        self.tolerance = tolerance;
        self.band = BAND_FRACTION * tolerance;
        self.held = 0;
        for k in 0..self.len() {
            let s = self.measure(k, x);
            let side = if s.abs() >= self.band * self.rest[k] {
                if s > 0.0 { 1 } else { -1 }
            } else {
                0
            };
            self.side[k] = side;
            self.toggles[k] = 0;
            self.held += usize::from(side != 0);
        }
    }

    /// Updates the active set at iterate `x` with multipliers `lambda` (one per row, those of
    /// the last solve; 0 for a released row), by the rules of the module doc. `frozen`: no
    /// change (the fast-projection phase). Returns the rows that changed, and zeroes the
    /// multiplier of each (in `lambda` and in `lambda_total`).
    pub(crate) fn update(
        &mut self,
        x: &[DVec3],
        lambda: &mut [f64],
        lambda_total: &mut [f64],
        frozen: bool,
    ) -> usize {
        if frozen {
            return 0;
        }
        let mut changed = 0;
        for k in 0..self.len() {
            let was = self.side[k];
            let toggles = self.toggles[k];
            let now = if was != 0 {
                if toggles < MAX_TOGGLES && f64::from(was) * lambda[k] < 0.0 {
                    0
                } else {
                    was
                }
            } else {
                let s = self.measure(k, x);
                let over = if toggles == 0 {
                    s.abs() >= self.band * self.rest[k]
                } else {
                    s.abs() > self.tolerance * self.rest[k]
                };
                if !over {
                    0
                } else if s > 0.0 {
                    1
                } else {
                    -1
                }
            };
            if now != was {
                self.side[k] = now;
                self.toggles[k] = toggles.saturating_add(1);
                lambda[k] = 0.0;
                lambda_total[k] = 0.0;
                changed += 1;
                if was == 0 {
                    self.held += 1;
                } else if now == 0 {
                    self.held -= 1;
                }
            }
        }
        changed
    }

    /// The gradients of the held rows at `x` (re-linearised every Gauss–Newton iteration);
    /// zero for released rows.
    pub(crate) fn relinearise(&mut self, x: &[DVec3]) {
        for k in 0..self.len() {
            self.gradients[k] = if self.side[k] != 0 {
                self.measure_gradient(k, x)
            } else {
                [DVec3::ZERO; 3]
            };
        }
    }

    /// `C = s − σ b ℓ` of each held row at `x`, 0 for a released one.
    pub(crate) fn values(&self, x: &[DVec3], out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate() {
            let side = self.side[k];
            *o = if side != 0 {
                self.measure(k, x) - f64::from(side) * self.band * self.rest[k]
            } else {
                0.0
            };
        }
    }

    /// `D` of each row: the tiny compliance while held, 1 while released.
    pub(crate) fn diagonal(&self, inv_mass: &[f64], out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate() {
            *o = if self.side[k] != 0 {
                COMPLIANCE
                    * self.stencils[k]
                        .iter()
                        .map(|&v| inv_mass[v as usize])
                        .sum::<f64>()
            } else {
                1.0
            };
        }
    }

    /// `Σ_v w_v |∇_v C_k|²`, row `k`'s entry of `G W Gᵀ`.
    pub(crate) fn kaa(&self, k: usize, inv_mass: &[f64]) -> f64 {
        self.stencils[k]
            .iter()
            .zip(&self.gradients[k])
            .map(|(&v, g)| inv_mass[v as usize] * g.length_squared())
            .sum()
    }

    /// Largest `|s| / ℓ` over the held rows at `x` (the stopping test's reading of them).
    pub(crate) fn max_held_strain(&self, x: &[DVec3]) -> f64 {
        let mut worst = 0.0f64;
        for k in 0..self.len() {
            if self.side[k] != 0 {
                let v = self.measure(k, x).abs() / self.rest[k];
                if v.is_nan() || v > worst {
                    worst = v;
                }
            }
        }
        worst
    }

    /// Largest `|s| / ℓ` over every row at `x`.
    #[must_use]
    pub fn max_strain(&self, x: &[DVec3]) -> f64 {
        (0..self.len())
            .map(|k| self.measure(k, x).abs() / self.rest[k])
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_matches_finite_differences() {
        let rows = BaseEdgeRows::new(&[[0, 1, 2]], &[2.0]);
        let x = [
            DVec3::new(0.0, 0.1, -0.2),
            DVec3::new(1.05, 0.3, 0.1),
            DVec3::new(2.1, -0.2, 0.25),
        ];
        let g = rows.measure_gradient(0, &x);
        let h = 1e-6;
        for node in 0..3 {
            for axis in 0..3 {
                let (mut xp, mut xm) = (x, x);
                xp[node][axis] += h;
                xm[node][axis] -= h;
                let fd = (rows.measure(0, &xp) - rows.measure(0, &xm)) / (2.0 * h);
                assert!(
                    (fd - g[node][axis]).abs() < 1e-8,
                    "node {node} axis {axis}: fd {fd} vs {}",
                    g[node][axis]
                );
            }
        }
    }

    #[test]
    fn rows_are_taken_at_the_band_and_released_when_they_hold_the_wrong_way() {
        let mut rows = BaseEdgeRows::new(&[[0, 1, 2], [2, 3, 4]], &[2.0, 2.0]);
        let tol = 1e-3;
        // Edge 0 stretched by 0.06 % (beyond the band 0.05 %), edge 1 by 0.01 %.
        let x = [
            DVec3::ZERO,
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(2.0012, 0.0, 0.0),
            DVec3::new(3.0012, 0.0, 0.0),
            DVec3::new(4.0014, 0.0, 0.0),
        ];
        rows.start(&x, tol);
        assert_eq!(rows.sides(), &[1, 0]);
        assert_eq!(rows.held(), 1);
        let mut v = [0.0; 2];
        rows.values(&x, &mut v);
        assert!((v[0] - (0.0012 - 0.5e-3 * 2.0)).abs() < 1e-12 && v[1] == 0.0);
        // A multiplier that lengthens a stretched edge: released.
        let (mut lambda, mut total) = ([-1.0, 0.0], [-1.0, 0.0]);
        assert_eq!(rows.update(&x, &mut lambda, &mut total, false), 1);
        assert_eq!(rows.sides(), &[0, 0]);
        assert_eq!((lambda[0], total[0]), (0.0, 0.0));
        // Released for holding the wrong way: back only beyond the tolerance, not at the band.
        assert_eq!(rows.update(&x, &mut lambda, &mut total, false), 0);
        let mut y = x;
        y[2].x = 2.0025;
        y[3].x = 3.0025;
        y[4].x = 4.0025;
        assert_eq!(rows.update(&y, &mut lambda, &mut total, false), 1);
        assert_eq!(rows.sides(), &[1, 0]);
        // Frozen: nothing changes.
        let mut z = y;
        z[4].x = 4.01;
        assert_eq!(rows.update(&z, &mut lambda, &mut total, true), 0);
        // Edge 1 compressed beyond the band: held at the lower bound.
        z[4].x = 4.0025 - 0.003;
        assert_eq!(rows.update(&z, &mut lambda, &mut total, false), 1);
        assert_eq!(rows.sides(), &[1, -1]);
        assert_eq!(rows.held(), 2);
    }
}
