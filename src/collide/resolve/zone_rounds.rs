//! Step 4 of the collision stage: rigid impact zones (Bridson et al. 2002 §6.5; Provot 1997),
//! merged round by round while collisions remain, within their cap and the frame's deadline,
//! then the bounded last resort ([`super::super::last_resort`]).
#![deny(unsafe_code)]

use super::*;

impl ClothCollision {
    /// Rigid impact zones until nothing collides: at most `max_zone_rounds` rounds and none once
    /// `stop` says so; collisions left then go to the last resort.
    pub(super) fn zone_rounds(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        h: f32,
        stats: &mut CollisionStats,
        stop: &mut dyn FnMut() -> bool,
    ) {
        let eta_c = f64::from(settings.thickness) * CCD_TOLERANCE_FRACTION;
        self.zones.zones().reset();
        loop {
            let (hits, _) = self.merge_colliding(candidates, found, settings, h, eta_c, stats);
            if hits == 0 {
                return;
            }
            let capped = stats.zone_rounds >= settings.max_zone_rounds;
            if capped || stop() {
                stats.rounds_cut |= !capped;
                self.last_resort(candidates, found, settings, h, eta_c, stats);
                return;
            }
            stats.zone_rounds += 1;
            let zs =
                self.zones
                    .apply_rigid_motion(h, &self.x0, &mut self.v, &self.mass, &self.inv_mass);
            stats.impact_zones = zs.zones;
            stats.largest_zone = zs.largest;
        }
    }

    /// Detects collisions under the current velocities and merges the zones
    /// of every colliding stencil. Returns the number of collisions and the
    /// number of merges that joined two different zones.
    fn merge_colliding(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        h: f32,
        eta_c: f64,
        stats: &mut CollisionStats,
    ) -> (u32, u32) {
        self.update_end_positions(h);
        let hits = self.detect_collisions(candidates, found, settings, eta_c, stats);
        // The merges follow serially in candidate order.
        let mut merges = 0;
        for (c, _) in candidates.iter().zip(found.iter()).filter(|(_, f)| **f) {
            let z = self.zones.zones();
            for k in 1..4 {
                merges += u32::from(z.union(c.verts[0], c.verts[k]));
            }
        }
        (hits, merges)
    }

    /// One detection pass from x^n to the end positions `x1`: the swept candidates, and per
    /// candidate whether CCD finds a collision. Returns the number of collisions.
    fn detect_collisions(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        eta_c: f64,
        stats: &mut CollisionStats,
    ) -> u32 {
        self.find_candidates(candidates, settings, Reach::Swept, stats);
        // Detection reads x^n and x1 only: parallel.
        let (x0, x1) = (&self.x0, &self.x1);
        stats.pool_grew |= detect_parallel(candidates, found, |c| {
            if c.layers & SWEPT == 0 {
                return false;
            }
            let start = c.verts.map(|i| x0[i as usize]);
            let end = c.verts.map(|i| x1[i as usize]);
            collides(c.kind, &start, &end, eta_c)
        });
        found.iter().filter(|f| **f).count() as u32
    }

    /// The last resort (module doc, *a bounded stage*), after a detection pass whose collisions
    /// are merged into the zones: every cloth vertex joins one zone, and every obstacle body that
    /// a collision touches joins it whole ([`LastResort::join_hit_bodies`]); the zone moves
    /// rigidly, following the best-fit motion of its kinematic vertices when it has any. At most
    /// [`LAST_RESORT_PASSES`] detection passes check the move, each joining the bodies its
    /// collisions touch. When collisions are left, the free vertices stop if nothing kinematic
    /// moves; otherwise they follow the bodies nearest them ([`LastResort::follow_nearest`]) and
    /// a pass checks the move; if it finds collisions, they follow the nearest bodies again with
    /// that pass's candidates added to the seeds, at most [`GIVE_WAY_PASSES`] times. Stencils
    /// the last of these checks still finds have their vertices moved over to the stencil's body
    /// or slid along their own ([`LastResort::slide_pinched`]), at most [`SLIDE_PASSES`] rounds,
    /// each checked by a pass. The last pass's collisions are what is left
    /// ([`CollisionStats::last_resort_hits`]).
    fn last_resort(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        found: &mut ArenaVec<'_, bool>,
        settings: &CollisionSettings,
        h: f32,
        eta_c: f64,
        stats: &mut CollisionStats,
    ) {
        stats.last_resort = true;
        let n = self.n;
        let zones = self.zones.zones();
        for i in 1..n as u32 {
            zones.union(0, i);
        }
        self.last.begin();
        fn hit<'c>((c, f): (&'c Candidate, &bool)) -> Option<&'c [u32; 4]> {
            f.then_some(&c.verts)
        }
        self.last
            .join_hit_bodies(candidates.iter().zip(found.iter()).filter_map(hit), zones);
        for _ in 0..LAST_RESORT_PASSES {
            let zs =
                self.zones
                    .apply_rigid_motion(h, &self.x0, &mut self.v, &self.mass, &self.inv_mass);
            stats.impact_zones = zs.zones;
            stats.largest_zone = zs.largest;
            let (hits, _) = self.merge_colliding(candidates, found, settings, h, eta_c, stats);
            if hits == 0 {
                return;
            }
            let joined = self.last.join_hit_bodies(
                candidates.iter().zip(found.iter()).filter_map(hit),
                self.zones.zones(),
            );
            if joined == 0 {
                break;
            }
        }
        let moving = self
            .v
            .iter()
            .zip(&self.inv_mass)
            .any(|(w, &im)| im <= 0.0 && *w != Vec3::ZERO);
        if !moving {
            // No rigid move of the zone clears these hits and nothing kinematic moves. The one
            // move that keeps a clean x^n clean exactly is none: the free vertices keep x^n
            // (zero velocity, `x^n + h · 0` is exact). Found by the drape-33 soak
            // (`tests/soak.rs`): a crossing left at frame 5,117 when the zone's own move was kept.
            for (w, &im) in self.v[..n].iter_mut().zip(&self.inv_mass[..n]) {
                if im > 0.0 {
                    *w = Vec3::ZERO;
                }
            }
            stats.last_resort_stopped = true;
            return;
        }
        // Bodies that move differently: the cloth gives way, each free vertex following the
        // body nearest it, seeded by the candidates of every pass so far; each move is checked,
        // and the last check's collisions are what is left.
        stats.last_resort_gave_way = true;
        for _ in 0..GIVE_WAY_PASSES {
            self.last.follow_nearest(
                candidates.iter().map(|c| &c.verts),
                h,
                &self.x0,
                &mut self.v,
                &self.inv_mass,
            );
            self.update_end_positions(h);
            stats.last_resort_hits =
                self.detect_collisions(candidates, found, settings, eta_c, stats);
            if stats.last_resort_hits == 0 {
                return;
            }
        }
        // Stencils still colliding: their vertices that follow another body than the stencil's
        // go over to it or slide along their own (`LastResort::slide_pinched`), each round
        // checked by a pass.
        let margin = f64::from(settings.thickness);
        for _ in 0..SLIDE_PASSES {
            let (x0, eta) = (&self.x0, eta_c);
            let slid = self.last.slide_pinched(
                candidates
                    .iter()
                    .zip(found.iter())
                    .filter(|(_, f)| **f)
                    .map(|(c, _)| (&c.verts, c.kind)),
                |kind, verts, v| {
                    let start = verts.map(|i| x0[i as usize]);
                    let end = verts.map(|i| x0[i as usize] + h * v[i as usize]);
                    !collides(kind, &start, &end, eta)
                },
                h,
                margin,
                eta_c,
                x0,
                &mut self.v,
                &self.inv_mass,
            );
            if slid == 0 {
                return;
            }
            self.update_end_positions(h);
            stats.last_resort_hits =
                self.detect_collisions(candidates, found, settings, eta_c, stats);
            if stats.last_resort_hits == 0 {
                return;
            }
        }
    }
}

/// Detection passes the last resort may run to check its move, each joining the obstacle
/// bodies its collisions touch (`ClothCollision::last_resort`).
pub(super) const LAST_RESORT_PASSES: u32 = 3;

/// Moves of the cloth giving way that the last resort may make and check, each seeded by the
/// candidates of every pass before it (`ClothCollision::last_resort`, `collide::last_resort`).
/// A third move cleared nothing the second had left on the pinch sample's nearby trajectories
/// (`docs/methods/last-resort.md`, *The pinch*).
pub(super) const GIVE_WAY_PASSES: u32 = 2;

/// Rounds of moving the vertices of stencils still colliding after the cloth gave way, each
/// checked by a detection pass (`LastResort::slide_pinched`, `docs/methods/last-resort.md`,
/// *Pinched vertices*). A third round cleared nothing the second had left on the pinch sample's
/// nearby trajectories.
pub(super) const SLIDE_PASSES: u32 = 2;
