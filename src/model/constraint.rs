//! Scalar equality constraints `C_i(x) = 0` over fixed vertex stencils: the interface between a constraint
//! family (Wang 2012's inextensibility, conforming and boundary constraints; contact rows) and the solvers
//! that project onto it (the Gauss–Newton projection of Wang 2012 eq. 3.25).
//!
//! The stencils are fixed when the family is built, so the solver can preallocate the sparse pattern of
//! `∇C M⁻¹ ∇Cᵀ` once. Positions are `f64`: a 0.1% strain tolerance is decided at round-off scale.

use glam::DVec3;

/// A family of scalar constraints, each touching a fixed, small set of vertices.
///
/// Constraint `i` touches `stencil_vertices()[o[i]..o[i + 1]]` where `o = stencil_offsets()`
/// (`o.len() == len() + 1`, `o[0] == 0`). A vertex may appear at most once per stencil.
pub trait ConstraintSet {
    /// Number of constraints.
    fn len(&self) -> usize;

    /// True when there are no constraints.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// CSR offsets of each constraint's stencil into [`ConstraintSet::stencil_vertices`].
    fn stencil_offsets(&self) -> &[u32];

    /// The vertices of all stencils, constraint after constraint.
    fn stencil_vertices(&self) -> &[u32];

    /// `c[i] = C_i(x)` for every constraint (`c.len() == len()`).
    fn evaluate(&self, x: &[DVec3], c: &mut [f64]);

    /// `g[k] = ∂C_i/∂x_v` for the `k`-th stencil entry `(i, v)`, in stencil order
    /// (`g.len() == stencil_vertices().len()`).
    fn gradients(&self, x: &[DVec3], g: &mut [DVec3]);

    /// A strain the family's rows do not hold by themselves but that the stopping test of a
    /// projection must also bring within its tolerance (dimensionless, ≥ 0); 0 by default.
    /// Wang's black nodes, for one, follow the mean extrapolation (eq. 3.3), so the base edges
    /// through them can stretch while every row of eq. 3.1 is within the tolerance
    /// (`IsometricConstraints`). Must not allocate.
    fn monitored_strain(&self, _x: &[DVec3]) -> f64 {
        0.0
    }
}
