//! Step 2 of the collision stage: repulsion and friction for every pair closer than the
//! thickness at x^n (Bridson et al. 2002 §6.2–6.3), and against the exact surfaces of the curved
//! analytic colliders.
#![deny(unsafe_code)]

use super::*;
use crate::linalg::reduce::sum_chunks_mut;

impl ClothCollision {
    /// Repulsion and friction: every test of `candidates` (the substep's list) close at x^n gets
    /// Bridson et al. 2002's repulsion (an inelastic impulse, a capped spring, Coulomb friction;
    /// §6.1–6.3, [`response::repel`]), serially in list order; then the curved analytic
    /// colliders' exact surfaces ([`ClothCollision::repel_analytic`]). Detection reads x^n only,
    /// so it runs in parallel. Tests of the tessellations the cloth meets through the exact surface
    /// ([`ClothCollision::set_proximity_leave_out`], set before the substep's search) are skipped.
    pub(super) fn repulsion(
        &mut self,
        candidates: &[Candidate],
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        h: f32,
        obstacles: &ObstacleMeshes<'_>,
        stats: &mut CollisionStats,
    ) {
        let eta = settings.thickness;
        {
            let n = self.n;
            let (x0, extra, leave_out) = (&self.x0, &self.extra_thickness, &self.leave_out);
            let left_out = |c: &Candidate| {
                !leave_out.is_empty()
                    && c.verts
                        .iter()
                        .any(|&i| i as usize >= n && leave_out[i as usize - n])
            };
            stats.pool_grew |= detect_parallel(candidates, found, |c| {
                if c.layers & AT_START == 0 || left_out(c) {
                    return false;
                }
                let eta = f64::from(pair_eta(extra, n, c, eta));
                let q = c.verts.map(|i| x0[i as usize]);
                let split = c.kind.split();
                if !near(&q[..split], &q[split..], margin(c.kind, eta)) {
                    return false;
                }
                let p = q.map(Vec3::as_dvec3);
                if surely_far(c.kind, &p, eta) {
                    return false;
                }
                match c.kind {
                    Kind::PointTriangle => {
                        proximity_point_triangle(p[0], [p[1], p[2], p[3]], eta).is_some()
                    }
                    Kind::EdgeEdge => {
                        proximity_edge_edge([p[0], p[1]], [p[2], p[3]], eta).is_some()
                    }
                }
            });
        }
        for (c, _) in candidates.iter().zip(found.iter()).filter(|(_, f)| **f) {
            if self.repel(c, settings, h) {
                stats.proximity_pairs += 1;
            }
        }
        // The curved analytic colliders' exact surfaces, after the pairs above.
        if !obstacles.colliders.is_empty() {
            let t0 = obstacles.collider_time(h);
            stats.proximity_pairs += self.repel_analytic(obstacles.colliders, t0, settings, h);
        }
    }

    /// Vertex–surface proximity against the curved analytic `colliders`
    /// ([`Shape::repels_from_surface`](super::shapes::Shape::repels_from_surface)), placed at `t0` seconds into their substep:
    /// repulsion and friction for every free cloth vertex closer than η to a
    /// collider's surface at x^n, or farther but arriving within η by the end of
    /// the substep at its velocity. Bridson et al. 2002 §6.2–6.3
    /// through the impulse distribution of §6.1 ([`response::repel_point_surface`], which also
    /// states the arrival rule). Returns the number of vertex–collider pairs
    /// repelled.
    ///
    /// Choices the sources leave open:
    /// - **The surface, not its tessellation.** Distance and normal come from
    ///   the shape ([`Shape::surface_point`](super::shapes::Shape::surface_point)); the obstacle side is the
    ///   surface point nearest the vertex, of infinite mass, moving with the
    ///   collider's velocity there ([`super::shapes::Motion::velocity_at`]).
    ///   The overlap is `d = η − dist` with η the cloth's thickness: the
    ///   offset the solve's contact filters hold the cloth at. A vertex the
    ///   filters did not engage (it was not approaching at the start of the
    ///   substep) can still be carried inward by the solve: it is stopped at η
    ///   (`d < 0`, the arrival rule), not at the tessellation the CCD meets. The
    ///   tessellation lies inside the surface (up to 0.34 mm for a 0.3 m
    ///   sphere), so its own repulsion acted up to that much closer.
    /// - **Vertices only.** For a sphere or capsule of radius r, an edge of
    ///   length L whose ends are at the offset sags at most L²/(8r) closer
    ///   (0.4 mm for drape-33's 3.1 cm edges on r = 0.3 m, a tenth of
    ///   η = 4 mm), so edge–surface and face–surface tests are left out;
    ///   the CCD rounds against the tessellation still keep every edge and
    ///   face from crossing it. Planes and boxes keep their (exact)
    ///   tessellation in the repulsion (see `Shape::repels_from_surface`).
    /// - **Friction** with the pair coefficient √(μ_cloth μ_collider), as the
    ///   contact filters use, on the repulsion's own normal change (eq. 3.13):
    ///   a normal impulse the solve did not apply, so its Coulomb bound is not
    ///   counted twice. (The tessellation's repulsion had no friction.)
    /// - **Order.** After the cloth–cloth and obstacle-mesh pairs; each vertex
    ///   meets the colliders in their order and changes only its own velocity,
    ///   so fixed chunks of vertices run in parallel and the result is the same
    ///   for any thread count.
    fn repel_analytic(
        &mut self,
        colliders: &[ColliderView],
        t0: f32,
        settings: &CollisionSettings,
        h: f32,
    ) -> u32 {
        let eta = settings.thickness;
        let n = self.n;
        let longest = self.longest_rest_edge;
        let (x0, inv_mass) = (&self.x0[..n], &self.inv_mass[..n]);
        let (thickness, surface_friction) =
            (&self.extra_thickness[..n], &self.surface_friction[..n]);
        // Each vertex meets the colliders in order on its own velocity alone, so fixed chunks of
        // vertices run in parallel and the counts add up exactly.
        let chunk_close = |first: usize, v: &mut [Vec3]| -> f64 {
            let mut close = 0u32;
            for col in colliders {
                if !meets_exact_surface(longest, &col.shape, settings) {
                    continue;
                }
                let pose = if t0 > 0.0 {
                    col.motion.advance(&col.pose, t0)
                } else {
                    col.pose
                };
                // Per vertex its own cloth's thickness and friction (one cloth: the settings';
                // a shared stage: the member's, `Members`).
                for ((((x, v), &w), &extra), &friction) in x0[first..]
                    .iter()
                    .zip(v.iter_mut())
                    .zip(&inv_mass[first..])
                    .zip(&thickness[first..])
                    .zip(&surface_friction[first..])
                {
                    let eta = eta + extra;
                    let mu = (friction.max(0.0) * col.friction.max(0.0)).sqrt();
                    // A vertex certainly beyond η over the substep fails both tests below
                    // (`Shape::out_of_reach`): skipped before the exact surface point.
                    if col.shape.out_of_reach(&pose, &col.motion, h, *x, *v, eta) {
                        continue;
                    }
                    // Pinned vertices (w = 0) are skipped, as eq. 3.10 skips a
                    // pair of infinite masses.
                    let sp = col.shape.surface_point(&pose, *x);
                    if w.is_nan() || w <= 0.0 || sp.distance.is_nan() {
                        continue;
                    }
                    let contact = *x - sp.distance * sp.normal;
                    let vs = col.motion.velocity_at(pose.translation, contact);
                    let arrives = sp.distance + h * (*v - vs).dot(sp.normal) < eta;
                    if sp.distance >= eta && !arrives {
                        continue;
                    }
                    close += 1;
                    response::repel_point_surface(
                        v,
                        w,
                        vs,
                        sp.normal,
                        eta - sp.distance,
                        h,
                        settings.repulsion_stiffness,
                        mu,
                    );
                }
            }
            f64::from(close)
        };
        // The per-chunk counts are integers below 2^53: their f64 sum is exact.
        sum_chunks_mut(&mut self.v[..n], chunk_close) as u32
    }

    /// Whether this cloth's repulsion meets `shape` through its exact surface (vertex–surface
    /// proximity, `repel_analytic`) rather than its tessellation. **Choice**: only for a
    /// sphere or capsule whose radius `r` keeps the sag of the cloth's longest edge `L`
    /// (stretched by 10 %) below a quarter of the thickness `η`, `(1.1 L)² / (8 r) ≤ η / 4`:
    /// the vertex test cannot see an edge or face of the cloth closer to the surface than its
    /// vertices, and that gap is at most the sag. On a thin rod the sag exceeds `η` (the
    /// curtain's 3 cm tie-backs under 3.3 cm edges: 4.5 mm against 4 mm): the rod slips
    /// between the vertices into the cloth's faces, and only the CCD rounds and impact zones
    /// stop it (measured: the curtain reached 72 % strain where the tessellation's repulsion
    /// keeps it at its 10 % limit), so such colliders keep their tessellation here.
    pub(super) fn meets_exact_surface(&self, shape: &Shape, settings: &CollisionSettings) -> bool {
        meets_exact_surface(self.longest_rest_edge, shape, settings)
    }

    /// The obstacle triangles the proximity search leaves out (by their first vertex): those
    /// of `obstacles.analytic`, less the tessellations of the colliders this cloth does not
    /// meet through their exact surface ([`ClothCollision::meets_exact_surface`]). Reuses the
    /// cloth's buffer (sized with its obstacles): no allocation.
    pub(super) fn set_proximity_leave_out(
        &mut self,
        obstacles: &ObstacleMeshes<'_>,
        settings: &CollisionSettings,
    ) {
        let mut mask = std::mem::take(&mut self.leave_out);
        if obstacles.analytic.len() == mask.len() {
            mask.copy_from_slice(obstacles.analytic);
            for (col, range) in obstacles.colliders.iter().zip(obstacles.collider_vertices) {
                if !self.meets_exact_surface(&col.shape, settings) {
                    mask[range[0] as usize..range[1] as usize].fill(false);
                }
            }
        } else {
            // Only the unit rigs that pass no mask (or a mask of other obstacles) get here.
            mask.clear();
            mask.extend_from_slice(obstacles.analytic);
        }
        self.leave_out = mask;
    }

    /// Repulsion + friction for one candidate if it is close at x^n
    /// (Bridson et al. 2002 §6.2–6.3, [`response::repel`]). True if close.
    fn repel(&mut self, c: &Candidate, settings: &CollisionSettings, h: f32) -> bool {
        let p = self.positions(c, &self.x0);
        let eta_pair = self.pair_eta(c, settings.thickness);
        let eta = f64::from(eta_pair);
        let stencil = match c.kind {
            Kind::PointTriangle => {
                let Some(prox) = proximity_point_triangle(p[0], [p[1], p[2], p[3]], eta) else {
                    return false;
                };
                Stencil::from_point_triangle(
                    c.verts[0],
                    [c.verts[1], c.verts[2], c.verts[3]],
                    &prox,
                )
            }
            Kind::EdgeEdge => {
                let Some(prox) = proximity_edge_edge([p[0], p[1]], [p[2], p[3]], eta) else {
                    return false;
                };
                Stencil::from_edge_edge([c.verts[0], c.verts[1]], [c.verts[2], c.verts[3]], &prox)
            }
        };
        let d = stencil.overlap(&self.x0, eta_pair);
        let outcome = response::repel(
            &stencil,
            d,
            h,
            settings.repulsion_stiffness,
            self.pair_friction(c),
            &mut self.v,
            &self.inv_mass,
        );
        if self.record_repelled
            && self.members.is_none()
            && outcome.normal_change() > 0.0
            && stencil.verts().iter().all(|&v| (v as usize) < self.n)
        {
            let separation = stencil.separation(&self.x0);
            self.repelled.push(RepelledPair {
                verts: stencil.verts(),
                coefficients: stencil.coefficients(),
                normal: stencil.normal(),
                separation,
                overlap: f64::from(eta_pair) - separation,
            });
        }
        true
    }
}

/// [`ClothCollision::meets_exact_surface`] for a cloth whose longest rest edge is `longest`.
fn meets_exact_surface(longest: f32, shape: &Shape, settings: &CollisionSettings) -> bool {
    let Some(r) = shape.curvature_radius() else {
        return false;
    };
    let l = 1.1 * longest;
    l * l / (8.0 * r) <= 0.25 * settings.thickness
}
