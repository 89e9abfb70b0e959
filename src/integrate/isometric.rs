//! The step of Wang 2012 Table 3.1 (METHODS-wang §8.2): predict, project, collide, add the
//! contacts as constraints, project again, collide again, velocity.
//!
//! ```text
//! 1  x̃   ← prediction (backward Euler or BDF2, [`super::bdf2`])
//! 2  x_p ← project(x̃)                       Gauss–Newton, eq. 3.25, from x⁽⁰⁾ = x̃
//! 3  x_c ← collide(xⁿ → x_p)                 the Bridson stage, collide::resolve
//! 4  C'  ← C ∪ contact rows at x_c           eq. 3.26 (normal, hard), eq. 3.28 (tangents, soft, eq. 3.30)
//! 5  x_p ← project(x̃ or x_c; C')             from x⁽⁰⁾ = x_c
//! 6  x^{n+1} ← collide(xⁿ → x_p)             the fail-safe
//! 7  v^{n+1} from the positions (scheme of line 1)
//! ```
//!
//! [`Coupling::Staggered`] is lines 1–3 then 7 with `x^{n+1} = x_c` (the baseline of
//! Figs. 4.1–4.4); [`Coupling::Simultaneous`] runs all lines, and skips 4–6 when line 3 changed
//! nothing.
//!
//! # Choices
//!
//! - **Contacts from the collision stage.** `collide::resolve` changes velocities and does not
//!   report its pairs. A cloth node is taken to be in contact when the stage moved it
//!   (`x_c ≠ x_p`), with the normal `n = (x_c − x_p)/‖x_c − x_p‖`, the direction of its
//!   correction. When friction acted on the node this direction is tilted from the geometric
//!   normal by the friction impulse; the tangential rows hold the node at `x_c` in the other
//!   two directions anyway, so the row set `{n, t₁, t₂}` still pins the collided position, only
//!   the split between the hard and the soft rows differs (**choice**, documented in the
//!   report; a stage that reports its normals would remove it).
//! - **Tangential rows** (eq. 3.28) with compliance `D = β w_p` (METHODS-wang §9.3 advice),
//!   `β` = [`IsometricSettings::friction_compliance`]; `t₁, t₂` any orthonormal completion of
//!   `n` (with equal `D` the choice does not matter, METHODS-wang §9.2). `β = None`: normal rows
//!   only.
//! - **Target of line 5** (METHODS-wang §8.3): [`SecondTarget::Prediction`] (default: the same
//!   backward-Euler/BDF2 problem as line 2, coupled with the contact rows) or
//!   [`SecondTarget::Collided`] (the literal reading, target `x_c`).
//! - Pinned nodes (`w = 0`) get no contact rows (they would be zero rows of `K`).
//! - The collision stage works in `f32`; nodes it did not touch keep their `f64` positions
//!   bit for bit.
#![deny(unsafe_code)]
// Per-node loops index several parallel arrays by the node number.
#![allow(clippy::needless_range_loop)]

use glam::{DVec3, Vec3};

use super::bdf2::{Integrator, TimeIntegrator};
use super::projection::{
    ContactRow, GaussNewtonProjection, ProjectionReport, ProjectionSettings, RowFamily,
};
use crate::collide::resolve::{ClothCollision, CollisionSettings, CollisionStats, ObstacleMeshes};
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

/// The target of the second projection (Table 3.1 line 5; METHODS-wang §8.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecondTarget {
    /// Target `x̃`, start `x_c`: the step's own implicit problem with contact rows (default).
    #[default]
    Prediction,
    /// Target `x_c` (the literal reading of the table).
    Collided,
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
}

impl Default for IsometricSettings {
    fn default() -> Self {
        IsometricSettings {
            projection: ProjectionSettings::default(),
            coupling: Coupling::Simultaneous,
            second_target: SecondTarget::Prediction,
            friction_compliance: Some(1e-3),
            contact_threshold: 1e-9,
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
    /// Nodes given contact rows in line 4.
    pub contact_nodes: u32,
    /// Line 3.
    pub collide_first: CollisionStats,
    /// Line 6, when it ran.
    pub collide_second: Option<CollisionStats>,
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
    x32: Vec<Vec3>,
    v32: Vec<Vec3>,
    v32_before: Vec<Vec3>,
    mass32: Vec<f32>,
    inv_mass32: Vec<f32>,
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
            x32,
            v32: vec![Vec3::ZERO; n],
            v32_before: vec![Vec3::ZERO; n],
            mass32: vec![0.0; n],
            inv_mass32: vec![0.0; n],
        }
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
        mass: &[f64],
        inv_mass: &[f64],
        x: &mut [DVec3],
        v: &mut [DVec3],
        should_stop: &mut dyn FnMut() -> bool,
    ) -> IsometricReport {
        let n = x.len();
        assert!(v.len() == n && mass.len() == n && inv_mass.len() == n);
        let mut report = IsometricReport {
            integrator: self.time.current(),
            ..IsometricReport::default()
        };
        for i in 0..n {
            self.mass32[i] = mass[i] as f32;
            self.inv_mass32[i] = inv_mass[i] as f32;
        }

        // Line 2: project x̃ without contacts, from x⁽⁰⁾ = x̃ (METHODS-wang §8.2).
        self.projection.clear_contacts();
        self.x_p.copy_from_slice(&self.x_tilde);
        report.first = self.projection.project(
            families,
            &self.x_tilde,
            inv_mass,
            &settings.projection,
            &mut self.x_p,
            should_stop,
        );

        // Line 3: collide on xⁿ → x_p.
        let moved;
        (report.collide_first, moved) = self.collide(h, collision, obstacles, x);

        if settings.coupling == Coupling::Simultaneous && moved {
            // Line 4: contact rows at x_c (eq. 3.26, eq. 3.28).
            self.projection.clear_contacts();
            for i in 0..n {
                let d = self.x_c[i] - self.x_p[i];
                let len = d.length();
                if inv_mass[i] <= 0.0 || len <= settings.contact_threshold {
                    continue;
                }
                let normal = d / len;
                let xc = self.x_c[i];
                self.projection.push_contact(ContactRow {
                    vertex: i as u32,
                    direction: normal,
                    target: normal.dot(xc),
                    compliance: 0.0,
                });
                if let Some(beta) = settings.friction_compliance {
                    let (t1, t2) = normal.any_orthonormal_pair();
                    for t in [t1, t2] {
                        self.projection.push_contact(ContactRow {
                            vertex: i as u32,
                            direction: t,
                            target: t.dot(xc),
                            compliance: beta * inv_mass[i],
                        });
                    }
                }
                report.contact_nodes += 1;
            }
            // Line 5: project again, from x⁽⁰⁾ = x_c.
            self.x_p.copy_from_slice(&self.x_c);
            let target = match settings.second_target {
                SecondTarget::Prediction => &self.x_tilde,
                SecondTarget::Collided => &self.x_c,
            };
            report.second = Some(self.projection.project(
                families,
                target,
                inv_mass,
                &settings.projection,
                &mut self.x_p,
                should_stop,
            ));
            // Line 6: collide again, the fail-safe: the same stage as line 3 (Table 3.1).
            // (Tried: a pass without repulsion and friction, since line 3's already acted; on
            // the net-on-sphere test it raised the largest strain from 8.7 % to 26 %.)
            let (stats, _) = self.collide(h, collision, obstacles, x);
            report.collide_second = Some(stats);
        }

        // Line 7: velocity by the scheme of line 1; x ← x^{n+1}.
        self.time.finish(h, &self.x_c, x, v);
        report
    }

    /// `x_c ← collide(xⁿ → x_p)` through `collide::resolve` on `v½ = (x_p − xⁿ)/h`; nodes the
    /// stage did not touch keep `x_p` exactly. Returns the stage's statistics and whether it
    /// moved any node.
    fn collide(
        &mut self,
        h: f64,
        settings: &CollisionSettings,
        obstacles: &ObstacleMeshes<'_>,
        x: &[DVec3],
    ) -> (CollisionStats, bool) {
        let n = x.len();
        for i in 0..n {
            self.x32[i] = x[i].as_vec3();
            self.v32[i] = ((self.x_p[i] - x[i]) / h).as_vec3();
        }
        self.v32_before.copy_from_slice(&self.v32);
        let stats = self.collision.resolve(
            settings,
            h as f32,
            &self.x32,
            &mut self.v32,
            &self.mass32,
            &self.inv_mass32,
            obstacles,
        );
        let mut moved = false;
        for i in 0..n {
            if self.v32[i] == self.v32_before[i] {
                self.x_c[i] = self.x_p[i];
            } else {
                self.x_c[i] = x[i] + h * self.v32[i].as_dvec3();
                moved = true;
            }
        }
        (stats, moved)
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
    /// `(M_cr)_ii^{-1/2}` per red node.
    inv_sqrt_mass: Vec<f64>,
}

impl BendingRows {
    /// The row structure of `bending` (its `L` and `M_cr` never change).
    #[must_use]
    pub fn new(bending: &QuadraticBending) -> Self {
        let l = bending.laplacian();
        let nb = bending.first_red_node() as u32;
        let inv_sqrt_mass: Vec<f64> = bending.cr_mass().iter().map(|m| 1.0 / m.sqrt()).collect();
        let mut offsets = vec![0u32];
        let mut vertices = Vec::new();
        let mut coeff = Vec::new();
        for (i, &s) in inv_sqrt_mass.iter().enumerate() {
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
            inv_sqrt_mass,
        }
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
/// eq. 3.19 with the corrections of METHODS-wang §7.1), for [`RowRole::Residual`]: affine in
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
        let r = self.rows;
        let t_delta = self.bending.rotated_rest_curvature();
        for (a, ca) in c.iter_mut().enumerate() {
            let (i, axis) = (a / 3, a % 3);
            let ly: f64 = (r.offsets[a] as usize..r.offsets[a + 1] as usize)
                .map(|e| r.coeff[e] * x[r.vertices[e] as usize][axis])
                .sum();
            *ca = self.scale * (ly - r.inv_sqrt_mass[i] * t_delta[i][axis]);
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
    use crate::integrate::projection::test_sets::{EdgeLengths, grid};
    use crate::integrate::projection::{RowRole, StrainScale};
    use crate::mesh::generate::icosphere;

    const R: f64 = 0.15;

    struct Run {
        max_strain: f64,
        deepest: f64,
        steps_with_contacts: u32,
        max_newton: u32,
        second_solves: u32,
        second_converged: u32,
    }

    /// A 12 × 12 net of inextensible edges (spacing 5 cm) dropped onto a sphere obstacle of
    /// radius 15 cm; 60 steps of 5 ms.
    fn drop_on_sphere(coupling: Coupling, integrator: Integrator) -> Run {
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
            ..IsometricSettings::default()
        };
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
                &mass,
                &inv_mass,
                &mut x,
                &mut v,
                &mut || false,
            );
            if let Some(s) = rep.second {
                run.second_solves += 1;
                run.second_converged += u32::from(s.converged);
            }
            run.max_newton = run.max_newton.max(rep.first.iterations);
            if let Some(s) = rep.second {
                run.max_newton = run.max_newton.max(s.iterations);
            }
            if rep.contact_nodes > 0 || rep.collide_first.proximity_pairs > 0 {
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
        // held by hard contact rows over a sphere is nearly taut, METHODS-wang §7.5).
        assert!(
            sim.second_solves > 10 && sim.second_converged * 4 >= sim.second_solves * 3,
            "{} of {} converged",
            sim.second_converged,
            sim.second_solves
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

    /// A 1 m sheet (base grid `n × n`), pinned along one edge, hanging under gravity with the
    /// full model: inextensibility, conforming and boundary rows plus bending `k_b`.
    fn hang(
        n: u32,
        k_b: f64,
        steps: usize,
    ) -> (f64, f64, crate::model::isometric::BaseEdgeStrain, u32) {
        let sub = sheet(n);
        let rest = sub.rest_positions();
        let cons = IsometricConstraints::new(&sub, &rest).expect("constraints");
        let mut bending = QuadraticBending::new(&sub, &rest, k_b).expect("bending");
        let rows = BendingRows::new(&bending);
        let nn = rest.len();
        // Masses: 0.1 kg/m² × ⅓ of the incident subdivided triangle areas (METHODS-wang §0).
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
        // A tiny compliance on the boundary rows (3.4) only: the flat start is exactly the
        // planar redundancy of METHODS-wang §3.4 (advice of §9.3), D = 1e-4 · w of the node.
        let mut compliance = vec![0.0; cons.len()];
        let b = cons.range(Family::Boundary);
        for (k, &node) in cons.boundary_vertices().iter().enumerate() {
            for axis in 0..3 {
                compliance[b.start + 3 * k + axis] = 1e-4 * inv_mass[node as usize];
            }
        }
        let res0 = rows.residual(&bending, 0.0);
        let mut stepper = IsometricStepper::new(
            &rest,
            &mesh.triangles,
            &edges,
            &rest32,
            &[&cons, &res0],
            Integrator::BackwardEuler,
            64,
        );
        let settings = IsometricSettings {
            projection: ProjectionSettings {
                tolerance: 1e-3,
                max_iterations: 30,
                ..ProjectionSettings::default()
            },
            ..IsometricSettings::default()
        };
        let collision = CollisionSettings {
            self_collision: false,
            ..CollisionSettings::default()
        };
        let accel = vec![DVec3::new(0.0, -9.81, 0.0); nn];
        let mut x = rest.clone();
        let mut v = vec![DVec3::ZERO; nn];
        let h = 0.01;
        let mut max_newton = 0;
        for step in 0..steps {
            let h_phi = stepper.predict(h, &x, &v, &accel, &pins);
            bending.freeze_rotation(stepper.prediction());
            let res = rows.residual(&bending, h_phi);
            let fams = [
                RowFamily {
                    set: &cons,
                    role: RowRole::PerRow(&compliance),
                    linear: false,
                    scale: StrainScale::PerRow(&scale),
                },
                RowFamily {
                    set: &res,
                    role: RowRole::Residual,
                    linear: true,
                    scale: StrainScale::Untested,
                },
            ];
            let rep = stepper.finish_step(
                h,
                &fams,
                &settings,
                &collision,
                &ObstacleMeshes::NONE,
                &mass,
                &inv_mass,
                &mut x,
                &mut v,
                &mut || false,
            );
            max_newton = max_newton.max(rep.first.iterations);
            if step < 4 {
                eprintln!("step {step}: {:?}", rep.first);
            }
        }
        let top = rest[pins[0].0 as usize].y;
        let lowest_free_edge = (0..nn)
            .filter(|&i| rest[i].z <= -z_max + 1e-9)
            .map(|i| x[i].y)
            .fold(f64::MIN, f64::max);
        (
            top,
            lowest_free_edge,
            cons.max_base_edge_strain(&x),
            max_newton,
        )
    }

    #[test]
    // Diagnosis so far: from step 0 every PCG solve stops at its 1000-iteration cap, and the
    // error accumulates until the sheet blows up. Done: every hard row (3.1), (3.3), (3.4) is
    // in the stopping test (`IsometricConstraints::stopping_scales`), and the PCG uses IC(0)
    // of the assembled K (METHODS-wang §11.2). Measured at step 0 (WIP instrumentation,
    // not committed): base 3×3, 123 rows: IC(0)-PCG 89 iterations; base 9×9, 1347 rows:
    // 1000 iterations, relative residual 3.1e-4 with D = 1e-4·w on the (3.4) rows only; with
    // D = 1e-4·max w on every (3.3) and (3.4) row, 629 iterations (converged, 8.6e-7). So K is
    // nearly singular at the flat start (the planar redundancy of METHODS-wang §3.4), and
    // IC(0) iterations grow about like the number of rows. Next: regularise the (3.3) rows as
    // well and find why even then the condition number is so large (bending block
    // I + h²k_b A M⁻¹ Aᵀ? pinned-edge rows?), before a stronger preconditioner.
    #[ignore = "known failure: PCG hits its cap (IC(0) included) on the nearly singular flat \
                start and the pinned sheet blows up; see the comment above"]
    fn pinned_sheet_hangs_down_without_locking() {
        let (top, free_edge, strain, newton) = hang(9, 1e-4, 150);
        eprintln!(
            "hanging sheet: free edge {:.3} m below the pinned edge, base-edge strain {:.2e} (through midpoint) {:.2e} (end to end), max Newton {newton}",
            top - free_edge,
            strain.through_midpoint,
            strain.end_to_end
        );
        assert!(
            top - free_edge >= 0.8,
            "free edge only {} m below",
            top - free_edge
        );
        assert!(strain.through_midpoint <= 1e-3 * 1.05, "{strain:?}");
    }
}
