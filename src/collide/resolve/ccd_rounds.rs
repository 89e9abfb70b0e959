//! Step 3 of the collision stage: rounds of continuous collision detection with inelastic
//! impulses that keep a minimum separation (Bridson et al. 2002 §6.4).
#![deny(unsafe_code)]

use super::*;
use crate::linalg::reduce::sum_chunks_mut;

impl ClothCollision {
    /// Up to `ccd_rounds` CCD rounds on the substep's list (and, after each round's list, the
    /// vertices against the exact surfaces of the curved `colliders` at their time offset,
    /// [`ClothCollision::analytic_ccd`]), each brought up to the velocities
    /// it tests by [`ClothCollision::update_candidates`]; no round after the first starts once
    /// `stop` says so. Strain limiting runs again before every round (a departure: impulses stop
    /// some vertices while their neighbours move on, and limiting the strain inside the rounds
    /// lets the neighbours feel it before CCD checks the result, as ARCSim does; on pile-33 with
    /// self-collision it lowered the largest strain from 59 % to 33 %). True when the last round
    /// still found collisions.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ccd_rounds(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        h: f32,
        colliders: (&[ColliderView], f32),
        clock: &mut Instant,
        stats: &mut CollisionStats,
        stop: &mut dyn FnMut() -> bool,
    ) -> bool {
        let n = self.n;
        let eta = settings.thickness;
        let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
        let s_min = min_separation(f64::from(eta)) as f32;
        self.touched.fill(false);
        for round in 0..settings.ccd_rounds {
            if round > 0 && stop() {
                stats.rounds_cut = true;
                return true;
            }
            stats.ccd_rounds += 1;
            if let Some(limit) = &settings.strain_limit {
                let report = self.strain.apply(
                    limit,
                    h,
                    &self.x0[..n],
                    &mut self.v[..n],
                    &self.inv_mass[..n],
                    &self.edges,
                    &self.rest_lengths,
                );
                stats.strain_sweeps += report.sweeps;
            }
            stats.times.strain_ms += lap_ms(clock);
            let mut hits = self.ccd_round(
                candidates,
                found,
                settings,
                h,
                eta_c,
                s_min,
                round > 0,
                stats,
            );
            hits += self.analytic_ccd(colliders.0, colliders.1, settings, h, s_min);
            stats.times.ccd_ms += lap_ms(clock);
            stats.ccd_hits += hits;
            if hits == 0 {
                return false;
            }
        }
        true
    }

    /// One CCD round: every candidate, in order, tested under the current
    /// velocities; each hit gets an inelastic impulse with minimum separation
    /// (Bridson et al. 2002 §6.4). Returns the number of hits.
    #[allow(clippy::too_many_arguments)]
    fn ccd_round(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        h: f32,
        eta_c: f64,
        s_min: f32,
        after_a_round: bool,
        stats: &mut CollisionStats,
    ) -> u32 {
        // Vertices whose velocity changed since the list was searched (impulses, strain
        // limiting): their tests are searched again. Vertices whose candidates need testing
        // again: after the first round, the changed ones and those of the previous round's hits
        // (a candidate with none of them has exactly the inputs it had then, when it did not hit,
        // so it cannot hit now); in the first round, all.
        // One pass in fixed chunks (each vertex's flags, searched velocity and end position are
        // its own): the count of changed vertices is a sum of integers, exact in any order.
        let (v, x0, touched) = (&self.v, &self.x0, &self.touched);
        let outputs = (
            (&mut self.changed[..], &mut self.dirty[..]),
            (&mut self.v_searched[..], &mut self.x1[..]),
        );
        let num_changed = sum_chunks_mut(outputs, |first, ((changed, dirty), (searched, x1))| {
            let mut count = 0u32;
            for (k, ((c, d), (w, e))) in changed
                .iter_mut()
                .zip(dirty.iter_mut())
                .zip(searched.iter_mut().zip(x1.iter_mut()))
                .enumerate()
            {
                let i = first + k;
                *c = v[i].to_array().map(f32::to_bits) != w.to_array().map(f32::to_bits);
                count += u32::from(*c);
                *d = !after_a_round || *c || touched[i];
                *w = v[i];
                *e = x0[i] + h * v[i];
            }
            f64::from(count)
        });
        if num_changed > 0.0 {
            self.update_candidates(candidates, found, settings, Reach::Swept, stats);
        }
        // All candidates are tested in parallel against the velocities at the
        // start of the round; the serial pass then visits them in order and
        // re-tests a candidate only if an earlier impulse of this round
        // touched one of its vertices — exactly the serial Gauss–Seidel round
        // (Bridson et al. 2002 §6.4), for any thread count.
        {
            let (x0, v, dirty) = (&self.x0, &self.v, &self.dirty);
            stats.pool_grew |= detect_parallel(candidates, found, |c| {
                if c.layers & SWEPT == 0 || !c.verts.iter().any(|&i| dirty[i as usize]) {
                    return false;
                }
                let start = c.verts.map(|i| x0[i as usize]);
                let end = c.verts.map(|i| x0[i as usize] + h * v[i as usize]);
                collides(c.kind, &start, &end, eta_c)
            });
        }
        self.touched.fill(false);
        let mut hits = 0;
        for (c, &found) in candidates.iter().zip(found.iter()) {
            // No vertex is touched before the pass's first hit.
            if !found && (hits == 0 || !c.verts.iter().any(|&i| self.touched[i as usize])) {
                continue;
            }
            let start = self.positions(c, &self.x0);
            let end: [DVec3; 4] = std::array::from_fn(|k| {
                let i = c.verts[k] as usize;
                (self.x0[i] + h * self.v[i]).as_dvec3()
            });
            let Some(hit) = ccd(c.kind, start, end, eta_c) else {
                continue;
            };
            hits += 1;
            for &i in &c.verts {
                self.touched[i as usize] = true;
            }
            let stencil = match c.kind {
                Kind::PointTriangle => Stencil::from_point_triangle_hit(
                    c.verts[0],
                    [c.verts[1], c.verts[2], c.verts[3]],
                    &hit,
                ),
                Kind::EdgeEdge => Stencil::from_edge_edge_hit(
                    [c.verts[0], c.verts[1]],
                    [c.verts[2], c.verts[3]],
                    &hit,
                ),
            };
            let d0 = stencil.separation(&self.x0) as f32;
            let mu = self.pair_friction(c);
            response::collision_impulse(&stencil, d0, s_min, h, mu, &mut self.v, &self.inv_mass);
            // The limiter keeps this collision resolved in its next sweeps (strain_limit, "Contacts").
            if settings.strain_limit.is_some() {
                stats.pool_grew |= self.strain.keep_contact(
                    &stencil,
                    f64::from(d0),
                    f64::from(s_min),
                    h,
                    &self.v,
                    &self.inv_mass,
                );
            }
        }
        hits
    }
}
