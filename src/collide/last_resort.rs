//! The last resort of the collision stage, for what its bounded rounds leave: the cloth's
//! obstacle *bodies* and the move that makes free cloth vertices follow the bodies nearest them.
//!
//! The stage (`resolve.rs`, *a bounded stage*) first makes the whole cloth one impact zone and
//! joins to it, whole, every body that a collision touches ([`LastResort::join_hit_bodies`]):
//! the zone then follows the best-fit rigid motion of its kinematic vertices (`impact_zones`),
//! which is exactly the motion of a body that moves rigidly, so a cloth carried by one body (or
//! by several that move together) ends as clean as it started. When the check of that move
//! still finds collisions and no new body to join, either nothing kinematic moves — the stage
//! then stops the free vertices, exact against everything at rest — or bodies move differently
//! (cloth hung on two pegs on separate tracks, pinched between two boxes). No rigid motion of
//! the cloth clears the second case, so the cloth gives way:
//! [`LastResort::follow_nearest`] gives every free cloth vertex the rigid motion of the body
//! nearest it.
//!
//! # Following the nearest body
//!
//! 1. **Seeds.** Every candidate stencil of a detection pass (a pair whose swept boxes
//!    overlap) that holds obstacle vertices seeds each of its free cloth vertices with that
//!    stencil's body, at the vertex's distance at `x^n` to the stencil's obstacle feature
//!    (triangle, edge or vertex). A vertex keeps its nearest seed (ties to the earlier stencil,
//!    in the list's fixed order). Seeds are kept from one call to the next within a last resort
//!    ([`LastResort::begin`] clears them), so a second call adds the candidates of the pass that
//!    checked the first call's move to those of the pass before it.
//! 2. **Spread.** A breadth-first search over the cloth's edges from the seeds, in seed order
//!    (vertex index order), gives every free vertex it reaches the body of the seed fewest
//!    edges away. Where the searches of two bodies meet, the edges across stretch: the cloth
//!    gives way there rather than being carried through either body. The search's labels are
//!    not kept from one call to the next: only seeds are.
//! 3. **Motion.** A labelled free vertex takes its body's secant velocity at its position
//!    (`impact_zones::kinematic_motion`: exact for a body that moves rigidly); a free vertex
//!    no search reaches keeps the zone's motion; kinematic vertices keep theirs.
//!
//! A stencil whose cloth vertices follow the body it holds moves rigidly with that body and
//! cannot collide (an affine map with positive determinant keeps disjoint features disjoint).
//!
//! **Why a second call.** The first call's seeds are the candidates of the pass that checked
//! the zone's rigid move, whose swept boxes follow that move, not the bodies: a vertex a few
//! millimetres from one body can be no candidate of it, and take the other body from the
//! search (`docs/methods/last-resort.md`, *The pinch*). The pass that checks the first call's
//! move sweeps every vertex along the body it follows, so every vertex that move brings to
//! another body is a candidate of that body there, and seeded with its true distance to it; the
//! second call gives it the nearer of the two.
//!
//! # Pinched vertices
//!
//! A vertex pinched between two bodies that close on each other by more than its clearance to
//! one of them, while a stencil of it is stretched over the other body's edge or corner, has no
//! body's motion that clears it (`docs/methods/last-resort.md`, *The pinch*). For the stencils
//! the give-way's check still finds, [`LastResort::slide_pinched`] moves each free vertex that
//! follows another body `B` than the stencil's `A`: with no seed, or when `B` does not come
//! within a thickness of it over the substep (its seed's distance less `B`'s approach along the
//! seed's normal), it follows `A`; otherwise it slides along `B` (normal to that normal)
//! towards and past the stencil's obstacle feature, by the least of five fractions of the way
//! that clears the stencil (one CCD test each). The stage checks each round with a detection
//! pass, at most two rounds.
//!
//! What is not guaranteed: stencils across the line where two searches meet, and pinched
//! vertices whose local move clears their stencil but not its neighbours, or whose seed's
//! normal is oblique (just inside the rim of a face) or missing (touching the body) — the doc
//! says which runs end so. The stage counts what its final check still finds
//! (`CollisionStats::last_resort_hits`).
//!
//! # Cost
//!
//! Linear per call: the bodies' vertices (one fit per body seeded), the candidate stencils
//! (seeds), the cloth's vertices and edges (search, velocities); [`LastResort::slide_pinched`]:
//! per colliding stencil at most five CCD tests of that stencil. Every buffer is sized when the
//! cloth and its obstacles are set; nothing allocates in a step.
#![deny(unsafe_code)]

use glam::{DVec3, Vec3};

use super::impact_zones::{StepMotion, ZoneSet, is_kinematic, kinematic_motion};
use super::proximity::{closest_point_segment, closest_point_triangle};

/// No body.
const NONE: u32 = u32::MAX;

/// What [`LastResort::follow_nearest`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FollowReport {
    /// Bodies that some free vertex follows.
    pub bodies: u32,
    /// Free cloth vertices given a body's motion.
    pub following: u32,
}

/// The obstacle bodies of one cloth's collision stage and the last resort's workspace, sized
/// when the cloth and its obstacles are set.
#[derive(Clone, Debug)]
pub struct LastResort {
    /// Cloth vertices (the shared vertex space's first `n`).
    n: usize,
    /// Per cloth vertex its neighbours over the cloth's edges:
    /// `adjacency[adjacency_start[i]..adjacency_start[i + 1]]`.
    adjacency_start: Vec<u32>,
    adjacency: Vec<u32>,
    /// Per obstacle vertex its body (a connected part of the obstacle edges).
    body_of: Vec<u32>,
    /// Each body's vertices (shared-space indices): `body_vertices[body_start[b]..body_start[b + 1]]`.
    body_start: Vec<u32>,
    body_vertices: Vec<u32>,
    /// Per body: joined to the last resort's zone in this substep.
    joined: Vec<bool>,
    /// Per body: its motion over the substep, once computed in this call (`motion_ready`).
    motion: Vec<StepMotion>,
    motion_ready: Vec<bool>,
    /// Per cloth vertex: the body it follows ([`NONE`]: none) and its seed distance.
    label: Vec<u32>,
    distance: Vec<f64>,
    /// Per cloth vertex: the unit direction from its seed's obstacle feature to it at `x^n`
    /// (zero when it has no seed or touches the feature): the normal of the body it follows
    /// there, across which [`LastResort::slide_pinched`] does not move it.
    away: Vec<DVec3>,
    /// Per cloth vertex: [`LastResort::slide_pinched`] has sent it over to another body than
    /// its seed's since [`LastResort::begin`].
    switched: Vec<bool>,
    /// Breadth-first queue (each cloth vertex enters it at most once per call).
    queue: Vec<u32>,
}

impl LastResort {
    /// The workspace of a cloth with `num_vertices` vertices and unique `edges`, no obstacles.
    #[must_use]
    pub fn new(num_vertices: usize, edges: &[[u32; 2]]) -> Self {
        let mut adjacency_start = vec![0u32; num_vertices + 1];
        for e in edges {
            adjacency_start[e[0] as usize + 1] += 1;
            adjacency_start[e[1] as usize + 1] += 1;
        }
        for i in 0..num_vertices {
            adjacency_start[i + 1] += adjacency_start[i];
        }
        let mut cursor = adjacency_start.clone();
        let mut adjacency = vec![0u32; 2 * edges.len()];
        for e in edges {
            for (a, b) in [(e[0], e[1]), (e[1], e[0])] {
                adjacency[cursor[a as usize] as usize] = b;
                cursor[a as usize] += 1;
            }
        }
        let mut me = Self {
            n: num_vertices,
            adjacency_start,
            adjacency,
            body_of: Vec::new(),
            body_start: vec![0],
            body_vertices: Vec::new(),
            joined: Vec::new(),
            motion: Vec::new(),
            motion_ready: Vec::new(),
            label: vec![NONE; num_vertices],
            distance: vec![f64::INFINITY; num_vertices],
            away: vec![DVec3::ZERO; num_vertices],
            switched: vec![false; num_vertices],
            queue: Vec::with_capacity(num_vertices),
        };
        me.set_obstacles(0, &[]);
        me
    }

    /// Groups the `m` obstacle vertices (shared-space indices `n..n + m`) into bodies: the
    /// connected parts of the obstacle soup's `edges` (soup indices). Called when the obstacles
    /// change, never in a step; it allocates.
    pub fn set_obstacles(&mut self, m: usize, edges: &[[u32; 2]]) {
        let mut parts = ZoneSet::new(m);
        for e in edges {
            parts.union(e[0], e[1]);
        }
        let mut body_of_root = vec![NONE; m];
        self.body_of = vec![0; m];
        let mut bodies = 0u32;
        for k in 0..m {
            let root = parts.find(k as u32) as usize;
            if body_of_root[root] == NONE {
                body_of_root[root] = bodies;
                bodies += 1;
            }
            self.body_of[k] = body_of_root[root];
        }
        let bodies = bodies as usize;
        self.body_start = vec![0; bodies + 1];
        for &b in &self.body_of {
            self.body_start[b as usize + 1] += 1;
        }
        for b in 0..bodies {
            self.body_start[b + 1] += self.body_start[b];
        }
        let mut cursor = self.body_start.clone();
        self.body_vertices = vec![0; m];
        for (k, &b) in self.body_of.iter().enumerate() {
            self.body_vertices[cursor[b as usize] as usize] = (self.n + k) as u32;
            cursor[b as usize] += 1;
        }
        self.joined = vec![false; bodies];
        self.motion = vec![StepMotion::Rest; bodies];
        self.motion_ready = vec![false; bodies];
    }

    /// Number of obstacle bodies.
    #[must_use]
    pub fn bodies(&self) -> usize {
        self.joined.len()
    }

    /// Starts a last resort: no body joined yet, no cloth vertex seeded.
    pub fn begin(&mut self) {
        self.joined.fill(false);
        self.label.fill(NONE);
        self.distance.fill(f64::INFINITY);
        self.away.fill(DVec3::ZERO);
        self.switched.fill(false);
    }

    /// Joins to the zone of cloth vertex 0 in `zones`, whole, every body with a vertex in one of
    /// the `stencils` that has not joined yet in this substep. Returns the bodies joined.
    pub fn join_hit_bodies<'a>(
        &mut self,
        stencils: impl Iterator<Item = &'a [u32; 4]>,
        zones: &mut ZoneSet,
    ) -> u32 {
        let n = self.n as u32;
        let mut joined = 0;
        for verts in stencils {
            for &k in verts.iter().filter(|&&k| k >= n) {
                let body = self.body_of[(k - n) as usize] as usize;
                if self.joined[body] {
                    continue;
                }
                self.joined[body] = true;
                joined += 1;
                let members = self.body_start[body] as usize..self.body_start[body + 1] as usize;
                for &i in &self.body_vertices[members] {
                    zones.union(0, i);
                }
            }
        }
        joined
    }

    /// Gives every free cloth vertex the rigid motion of the body nearest it (module doc) and
    /// writes its velocity into `v`. `stencils` are the candidate stencils of the last detection
    /// pass, whose seeds join those of the earlier calls since [`LastResort::begin`]; `x` the
    /// shared space's positions at `x^n`, `v` its velocities (kinematic ones are read, free cloth
    /// ones written), `h` the substep.
    pub fn follow_nearest<'a>(
        &mut self,
        stencils: impl Iterator<Item = &'a [u32; 4]>,
        h: f32,
        x: &[Vec3],
        v: &mut [Vec3],
        inv_mass: &[f32],
    ) -> FollowReport {
        let n = self.n;
        let h = f64::from(h);
        // The last call's search labels go; its seeds (finite distance) stay.
        for (label, &d) in self.label.iter_mut().zip(&self.distance) {
            if d == f64::INFINITY {
                *label = NONE;
            }
        }
        self.motion_ready.fill(false);
        let free = |i: u32| (i as usize) < n && !is_kinematic(inv_mass[i as usize]);
        // 1. Seeds: the nearest body feature over the candidate stencils.
        for verts in stencils {
            let obstacle: smallvec::SmallVec<[DVec3; 3]> = verts
                .iter()
                .filter(|&&k| k as usize >= n)
                .map(|&k| x[k as usize].as_dvec3())
                .collect();
            let Some(&first) = verts.iter().find(|&&k| k as usize >= n) else {
                continue;
            };
            let body = self.body_of[first as usize - n];
            for &i in verts.iter().filter(|&&i| free(i)) {
                let p = x[i as usize].as_dvec3();
                let Some(q) = closest_point_feature(p, &obstacle) else {
                    continue;
                };
                let d = q.distance(p);
                let i = i as usize;
                if d < self.distance[i] {
                    self.distance[i] = d;
                    self.label[i] = body;
                    self.away[i] = (p - q).normalize_or_zero();
                }
            }
        }
        // 2. Spread: breadth-first over the cloth's edges from the seeds, in vertex order.
        self.queue.clear();
        self.queue
            .extend((0..n as u32).filter(|&i| self.label[i as usize] != NONE));
        let mut head = 0;
        while head < self.queue.len() {
            let i = self.queue[head] as usize;
            head += 1;
            let body = self.label[i];
            let around = self.adjacency_start[i] as usize..self.adjacency_start[i + 1] as usize;
            for k in around {
                let j = self.adjacency[k];
                if free(j) && self.label[j as usize] == NONE {
                    self.label[j as usize] = body;
                    self.queue.push(j);
                }
            }
        }
        // 3. Motion: each labelled free vertex takes its body's secant velocity.
        let mut report = FollowReport::default();
        for i in 0..n {
            let body = self.label[i];
            if body == NONE || !free(i as u32) {
                continue;
            }
            let b = body as usize;
            report.bodies += u32::from(!self.motion_ready[b]);
            v[i] = self.body_motion(b, h, x, v, inv_mass).velocity_at(x[i], h);
            report.following += 1;
        }
        report
    }

    /// Body `b`'s motion over the substep, computed once per call.
    fn body_motion(
        &mut self,
        b: usize,
        h: f64,
        x: &[Vec3],
        v: &[Vec3],
        inv_mass: &[f32],
    ) -> StepMotion {
        if !self.motion_ready[b] {
            let members = self.body_start[b] as usize..self.body_start[b + 1] as usize;
            self.motion[b] = kinematic_motion(&self.body_vertices[members], h, x, v, inv_mass)
                .unwrap_or(StepMotion::Rest);
            self.motion_ready[b] = true;
        }
        self.motion[b]
    }

    /// Moves the free cloth vertices of the stencils the give-way's check still found colliding
    /// (module doc, *Pinched vertices*), stencil by stencil in `stencils`' order: each vertex that
    /// follows another body than the stencil's either follows the stencil's body (when its own
    /// does not reach it over the substep) or slides along its own body towards and past the
    /// stencil's obstacle feature, by the least of [`SLIDE_STEPS`] fractions of that way that
    /// clears the stencil. `clear(kind, verts, v)` says whether a stencil is clear under the
    /// velocities `v`; `margin` is the cloth's thickness η (m), `tolerance` the CCD's (m). `x`
    /// are the shared space's positions at `x^n`, `v` its velocities (free cloth ones
    /// written), `h` the substep. Returns the vertices it moved.
    #[allow(clippy::too_many_arguments)]
    pub fn slide_pinched<'a, K: Copy>(
        &mut self,
        stencils: impl Iterator<Item = (&'a [u32; 4], K)>,
        clear: impl Fn(K, &[u32; 4], &[Vec3]) -> bool,
        h: f32,
        margin: f64,
        tolerance: f64,
        x: &[Vec3],
        v: &mut [Vec3],
        inv_mass: &[f32],
    ) -> u32 {
        let n = self.n;
        let h = f64::from(h);
        let free = |i: u32| (i as usize) < n && !is_kinematic(inv_mass[i as usize]);
        let mut moved = 0;
        for (verts, kind) in stencils {
            let obstacle: smallvec::SmallVec<[DVec3; 3]> = verts
                .iter()
                .filter(|&&k| k as usize >= n)
                .map(|&k| x[k as usize].as_dvec3())
                .collect();
            let Some(body) = self.stencil_body(verts, &free) else {
                continue;
            };
            // The stencil's vertices that slide: (vertex, its velocity so far, the full slide).
            let mut sliding: smallvec::SmallVec<[(usize, DVec3, DVec3); 4]> =
                smallvec::SmallVec::new();
            for &i in verts.iter().filter(|&&i| free(i)) {
                let i = i as usize;
                let follows = self.label[i];
                let seeded = self.distance[i] != f64::INFINITY;
                // A seeded vertex that went over to another body is not moved again: its seed
                // describes the body it left.
                if follows == body || (seeded && self.switched[i]) {
                    continue;
                }
                let va = self
                    .body_motion(body as usize, h, x, v, inv_mass)
                    .velocity_at(x[i], h);
                if follows == NONE || !seeded {
                    // No body's stencil was ever near it: it follows the stencil's body.
                    self.label[i] = body;
                    v[i] = va;
                    moved += 1;
                    continue;
                }
                let vb = self
                    .body_motion(follows as usize, h, x, v, inv_mass)
                    .velocity_at(x[i], h);
                // How far its own body comes towards it, relative to the stencil's body, over the
                // substep (along the normal from its seed feature; 0 when it moves away).
                let normal = self.away[i];
                let closing = h * (vb - va).as_dvec3().dot(normal).max(0.0);
                // Left by a body that closes on it, it keeps a thickness' clearance; a body that
                // does not close on it keeps the distance it had.
                let keep = if closing > 0.0 { margin } else { tolerance };
                if normal != DVec3::ZERO && self.distance[i] - closing > keep {
                    self.label[i] = body;
                    self.switched[i] = true;
                    v[i] = va;
                    moved += 1;
                    continue;
                }
                // Pinched: its body closes on it. It slides along that body (normal to `away`)
                // towards and past the stencil's feature; a cloth–cloth stencil has none.
                let Some(q) = closest_point_feature(x[i].as_dvec3(), &obstacle) else {
                    continue;
                };
                if closing <= 0.0 {
                    continue;
                }
                let to = q - x[i].as_dvec3();
                let tangent = to - normal * normal.dot(to);
                let length = tangent.length();
                if length > 0.0 {
                    sliding.push((i, v[i].as_dvec3(), tangent * ((length + margin) / length)));
                }
            }
            if sliding.is_empty() {
                continue;
            }
            // The least fraction of the slide that clears the stencil (none when the moves above
            // already did), if any.
            let step = (0..=SLIDE_STEPS).find(|&step| {
                let alpha = f64::from(step) / f64::from(SLIDE_STEPS);
                for &(i, before, slide) in &sliding {
                    v[i] = (before + slide * (alpha / h)).as_vec3();
                }
                clear(kind, verts, v)
            });
            match step {
                Some(0) => {}
                Some(_) => moved += sliding.len() as u32,
                None => {
                    // No fraction clears it: the vertices keep the velocities they came with.
                    for &(i, before, _) in &sliding {
                        v[i] = before.as_vec3();
                    }
                }
            }
        }
        moved
    }

    /// The body a colliding stencil's vertices go over to: its obstacle feature's, or for a
    /// cloth–cloth stencil the body of its free vertex with the nearest seed (the earlier on
    /// ties, then the first labelled one). `None`: no vertex follows a body.
    fn stencil_body(&self, verts: &[u32; 4], free: &impl Fn(u32) -> bool) -> Option<u32> {
        let n = self.n;
        if let Some(&k) = verts.iter().find(|&&k| k as usize >= n) {
            return Some(self.body_of[k as usize - n]);
        }
        let mut best = (NONE, f64::INFINITY);
        for &i in verts.iter().filter(|&&i| free(i)) {
            let (label, d) = (self.label[i as usize], self.distance[i as usize]);
            if label != NONE && (best.0 == NONE || d < best.1) {
                best = (label, d);
            }
        }
        (best.0 != NONE).then_some(best.0)
    }
}

/// Fractions of the full slide [`LastResort::slide_pinched`] tries, `k / SLIDE_STEPS` for
/// `k = 0..=SLIDE_STEPS`: each is one CCD test of one stencil.
const SLIDE_STEPS: u32 = 4;

/// The nearest point to `p` of an obstacle feature given by its vertices (a vertex, an edge or
/// a triangle); `None` for any other count.
fn closest_point_feature(p: DVec3, feature: &[DVec3]) -> Option<DVec3> {
    match *feature {
        [a] => Some(a),
        [a, b] => Some(closest_point_segment(p, [a, b]).0),
        [a, b, c] => Some(closest_point_triangle(p, [a, b, c]).0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two separate obstacle triangles are two bodies; joining one joins all its vertices.
    #[test]
    fn bodies_are_the_connected_parts_of_the_obstacles() {
        let mut lr = LastResort::new(2, &[[0, 1]]);
        // Obstacle soup: triangles (0,1,2) and (3,4,5).
        lr.set_obstacles(6, &[[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [3, 5]]);
        assert_eq!(lr.bodies(), 2);
        let mut zones = ZoneSet::new(8);
        lr.begin();
        let stencil = [1, 2 + 3, 2 + 4, 2 + 5];
        assert_eq!(lr.join_hit_bodies([stencil].iter(), &mut zones), 1);
        assert_eq!(lr.join_hit_bodies([stencil].iter(), &mut zones), 0);
        for k in 5..8 {
            assert!(zones.same_zone(0, k));
        }
        for k in 2..5 {
            assert!(!zones.same_zone(0, k));
        }
    }

    /// A strip of cloth between two bodies that move apart: each end follows the body it is
    /// near exactly (the body's own velocity, here a translation), the middle splits between
    /// them by edge distance, and a kinematic cloth vertex keeps its velocity.
    #[test]
    fn free_vertices_follow_the_nearest_body() {
        // Cloth: a chain 0-1-2-3-4 along x at y = 0; vertex 2 is pinned.
        let edges = [[0, 1], [1, 2], [2, 3], [3, 4]];
        let mut lr = LastResort::new(5, &edges);
        // Bodies: triangle A (5,6,7) near vertex 0, triangle B (8,9,10) near vertex 4.
        lr.set_obstacles(6, &[[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [3, 5]]);
        let mut x: Vec<Vec3> = (0..5).map(|i| Vec3::new(i as f32, 0.0, 0.0)).collect();
        let a = [
            Vec3::new(-0.5, 0.01, -0.5),
            Vec3::new(0.5, 0.01, -0.5),
            Vec3::new(0.0, 0.01, 0.5),
        ];
        let b = a.map(|p| p + Vec3::new(4.0, 0.0, 0.0));
        x.extend(a);
        x.extend(b);
        let va = Vec3::new(0.0, 1.0, 0.0);
        let vb = Vec3::new(0.0, -2.0, 0.0);
        let mut v = vec![Vec3::new(9.0, 9.0, 9.0); 5];
        v.extend([va; 3]);
        v.extend([vb; 3]);
        let mut inv_mass = vec![1.0f32; 5];
        inv_mass[2] = 0.0;
        inv_mass.extend([0.0; 6]);
        let stencils = [[0, 5, 6, 7], [4, 8, 9, 10]];
        let report = lr.follow_nearest(stencils.iter(), 0.01, &x, &mut v, &inv_mass);
        assert_eq!(report.bodies, 2);
        // Vertex 2 is pinned: the search stops there, vertices 1 and 3 follow their ends.
        assert_eq!(report.following, 4);
        for (i, want) in [(0, va), (1, va), (3, vb), (4, vb)] {
            assert!((v[i] - want).length() < 1e-5, "vertex {i}: {}", v[i]);
        }
        assert_eq!(v[2], Vec3::new(9.0, 9.0, 9.0));
    }

    /// A vertex in stencils with two bodies follows the nearer one.
    #[test]
    fn a_vertex_between_two_bodies_follows_the_nearer() {
        let mut lr = LastResort::new(1, &[]);
        lr.set_obstacles(2, &[]);
        let x = vec![
            Vec3::ZERO,
            Vec3::new(0.0, 0.3, 0.0),
            Vec3::new(0.0, -0.1, 0.0),
        ];
        let mut v = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
        let inv_mass = [1.0, 0.0, 0.0];
        let stencils = [[0, 1, NONE, NONE], [0, 2, NONE, NONE]];
        // Stencils of one obstacle vertex each (a vertex–vertex distance).
        let stencils = stencils.map(|s| [s[0], s[1], s[1], s[1]]);
        lr.follow_nearest(stencils.iter(), 0.01, &x, &mut v, &inv_mass);
        assert!((v[0] - Vec3::Y).length() < 1e-6, "{}", v[0]);
    }

    /// A vertex labelled by the search in one call, then seeded by a nearer body's stencil in
    /// the next, follows that body; a seed of the first call stays, and `begin` clears them.
    #[test]
    fn seeds_are_kept_across_calls_and_search_labels_are_not() {
        // Cloth: a chain 0-1-2 along x; body A (vertex 3) near vertex 0, body B (vertex 4)
        // 1 mm under vertex 2.
        let mut lr = LastResort::new(3, &[[0, 1], [1, 2]]);
        lr.set_obstacles(2, &[]);
        let x = vec![
            Vec3::ZERO,
            Vec3::X,
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(0.0, 0.1, 0.0),
            Vec3::new(2.0, -0.001, 0.0),
        ];
        let (va, vb) = (Vec3::Y, Vec3::NEG_Y);
        let mut v = vec![Vec3::ZERO, Vec3::ZERO, Vec3::ZERO, va, vb];
        let inv_mass = [1.0, 1.0, 1.0, 0.0, 0.0];
        let near_a = [[0, 3, 3, 3]];
        let near_b = [[2, 4, 4, 4]];
        lr.begin();
        // First call: only A's stencil; the search gives all three vertices A.
        lr.follow_nearest(near_a.iter(), 0.01, &x, &mut v, &inv_mass);
        for (i, w) in v[..3].iter().enumerate() {
            assert!((*w - va).length() < 1e-6, "vertex {i}: {w}");
        }
        // Second call: B's stencil seeds vertex 2, which the search had given A; vertex 0
        // keeps its seed from the first call.
        lr.follow_nearest(near_b.iter(), 0.01, &x, &mut v, &inv_mass);
        assert!((v[0] - va).length() < 1e-6, "{}", v[0]);
        assert!((v[2] - vb).length() < 1e-6, "{}", v[2]);
        // After `begin`, a call with B's stencil alone gives every vertex B.
        lr.begin();
        lr.follow_nearest(near_b.iter(), 0.01, &x, &mut v, &inv_mass);
        for (i, w) in v[..3].iter().enumerate() {
            assert!((*w - vb).length() < 1e-6, "vertex {i}: {w}");
        }
    }

    /// A cloth vertex 3 mm under body 1 (a triangle coming down 6 mm in the substep) in a
    /// stencil with an edge of body 0 (rising 1 mm, 10 mm to its side): body 1 reaches it, so it
    /// slides along body 1 towards the edge and past it, by the least fraction of the way that
    /// clears the stencil; 50 mm under body 1 it goes over to body 0 instead.
    #[test]
    fn a_pinched_vertex_slides_along_its_body_and_a_free_one_goes_over() {
        for (gap, slides) in [(0.003f32, true), (0.05, false)] {
            let mut lr = LastResort::new(1, &[]);
            // Body 0: the edge (1, 2); body 1: the triangle (3, 4, 5).
            lr.set_obstacles(5, &[[0, 1], [2, 3], [3, 4], [2, 4]]);
            let x = vec![
                Vec3::ZERO,
                Vec3::new(0.01, -0.002, -1.0),
                Vec3::new(0.01, -0.002, 1.0),
                Vec3::new(-1.0, gap, -1.0),
                Vec3::new(1.0, gap, -1.0),
                Vec3::new(0.0, gap, 1.0),
            ];
            let (va, vb) = (Vec3::new(0.0, 0.1, 0.0), Vec3::new(0.0, -0.6, 0.0));
            let mut v = vec![Vec3::ZERO, va, va, vb, vb, vb];
            let inv_mass = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
            let h = 0.01;
            lr.begin();
            lr.follow_nearest([[0, 3, 4, 5]].iter(), h, &x, &mut v, &inv_mass);
            assert!((v[0] - vb).length() < 1e-6, "{}", v[0]);
            // The stencil clears once the vertex has moved past the edge's x.
            let clear = |_: (), _: &[u32; 4], v: &[Vec3]| v[0].x * h >= 0.01;
            let moved = lr.slide_pinched(
                [(&[0, 0, 1, 2], ())].into_iter(),
                clear,
                h,
                0.004,
                4e-5,
                &x,
                &mut v,
                &inv_mass,
            );
            // (The stencil lists the vertex twice, as a degenerate edge.)
            assert!(moved > 0);
            let want = if slides {
                // The full slide is 10 mm + η = 14 mm; 3/4 of it is the least that clears.
                vb + Vec3::new(0.0105 / h, 0.0, 0.0)
            } else {
                va
            };
            assert!(
                (v[0] - want).length() < 1e-4,
                "gap {gap}: {} != {want}",
                v[0]
            );
        }
    }
}
