//! Cloths that meet each other: the groups whose collision stage is shared in a substep
//! (`docs/methods/cloth-layers.md`).
//!
//! At the start of every substep each cloth gets a *reach box*: the box of its
//! vertices at x^n and at x^n + h v^n, grown by its thickness and by how far a vertex could
//! stray from that straight path in the substep (`REACH_SAFETY` × (h |v|_max + h² |g|)). Cloths
//! whose reach boxes overlap, and that may collide (neither was told not to collide with the
//! other), are joined; the connected sets of two or more cloths are the substep's groups, each
//! with its members in creation order. A group's collision stage is one
//! [`ClothCollision::new_shared`] over its members' vertices; the rest of every member's
//! substep is its own. Cloths in no group step exactly as if alone.
//!
//! A group's collision data is built the first time its member set appears and kept for later
//! substeps (an allocation, counted as a pool overflow in that frame); it is dropped when
//! cloths or obstacles are added or removed.
#![deny(unsafe_code)]

use glam::Vec3;

use crate::collide::bvh::Aabb;
use crate::collide::resolve::{
    ClothCollision, CollisionSettings, MemberMesh, MemberSettings, ObstacleMeshes,
};
use crate::collide::strain_limit::StrainLimit;
use crate::pipeline::SharedStage;
use crate::runtime::arena::FrameArena;

use super::cloth::{ARENA_BYTES_PER_TRIANGLE, Cloth};

/// How many times the straight-path estimate of a substep's motion a reach box allows: the
/// solve may bend a vertex's path (gravity, stiffness, pins); twice the estimate plus the
/// thickness is the margin kept. The independent checker tests that no contact is missed on
/// the layered samples.
const REACH_SAFETY: f32 = 2.0;

/// Marks a cloth in no group this substep.
pub(crate) const ALONE: u32 = u32::MAX;

/// The shared collision stage of one set of cloths, and the buffers it gathers their state into.
#[derive(Debug)]
pub(crate) struct Group {
    /// The members' cloth indices, ascending (creation order).
    pub(crate) members: Vec<u32>,
    /// The members are isometric (a group holds one model only).
    pub(crate) isometric: bool,
    /// The shared stage the pipeline runs; its settings are [`stage_settings`] of the
    /// members', set every substep.
    pub(crate) stage: SharedStage,
    member_settings: Vec<MemberSettings>,
    /// The group's frame arena (collider poses of pieces and halves, candidate lists).
    pub(crate) arena: FrameArena,
}

impl Group {
    fn new(
        members: &[u32],
        cloths: &[Cloth],
        obstacle_tris: &[[u32; 3]],
        obstacle_x: &[Vec3],
        obstacle_thickness: &[f32],
    ) -> Self {
        let meshes: Vec<MemberMesh<'_>> = members
            .iter()
            .map(|&i| {
                let c = &cloths[i as usize];
                MemberMesh {
                    triangles: &c.sim.triangles,
                    edges: &c.sim.edges,
                    rest_lengths: &c.sim.rest_lengths,
                    positions: c.sim.state.positions(),
                }
            })
            .collect();
        let mut collision = ClothCollision::new_shared(&meshes);
        collision.set_obstacles(obstacle_tris, obstacle_x);
        collision.set_obstacle_thickness(obstacle_thickness);
        let n: usize = meshes.iter().map(|m| m.positions.len()).sum();
        let ntri: usize = meshes.iter().map(|m| m.triangles.len()).sum();
        Self {
            members: members.to_vec(),
            isometric: cloths[members[0] as usize].sim.model.isometric().is_some(),
            stage: SharedStage {
                collision,
                settings: CollisionSettings::default(),
                x0: vec![Vec3::ZERO; n],
                v: vec![Vec3::ZERO; n],
                mass: vec![0.0; n],
                inv_mass: vec![0.0; n],
            },
            member_settings: Vec::with_capacity(members.len()),
            arena: FrameArena::with_capacity(ntri * ARENA_BYTES_PER_TRIANGLE),
        }
    }

    /// Reads the members' collision settings for this substep ([`stage_settings`],
    /// [`ClothCollision::set_members`]); `apart(a, b)` tells whether cloths `a < b` must not
    /// collide.
    fn configure(&mut self, cloths: &[Cloth], apart: impl Fn(u32, u32) -> bool) {
        self.member_settings.clear();
        self.member_settings.extend(self.members.iter().map(|&i| {
            let c = &cloths[i as usize];
            MemberSettings {
                thickness: c.sim.collision_settings.thickness,
                friction: c.sim.collision_settings.friction,
                self_collision: c.sim.collision_settings.self_collision,
            }
        }));
        self.stage.settings = stage_settings(
            self.members
                .iter()
                .map(|&i| &cloths[i as usize].sim.collision_settings),
        );
        if self.isometric {
            // The isometric step runs its passes without the strain limiter (its rows are the
            // strain limit, `integrate::isometric_cloth`).
            self.stage.settings.strain_limit = None;
        }
        let members = &self.members;
        self.stage
            .collision
            .set_members(&self.member_settings, |a, b| apart(members[a], members[b]));
    }
}

/// The settings of a stage shared by cloths with `settings` (at least one): the smallest
/// thickness (each member's excess is added per vertex, [`ClothCollision::set_members`]); the
/// largest repulsion stiffness, CCD rounds and zone-round cap; the fewest response passes;
/// strain limiting when any member limits, with the tightest limits and the most sweeps (the
/// first limiting member's method).
pub(crate) fn stage_settings<'a>(
    mut settings: impl Iterator<Item = &'a CollisionSettings>,
) -> CollisionSettings {
    let Some(first) = settings.next() else {
        return CollisionSettings::default();
    };
    let mut s = *first;
    s.self_collision = true;
    for o in settings {
        s.thickness = s.thickness.min(o.thickness);
        s.repulsion_stiffness = s.repulsion_stiffness.max(o.repulsion_stiffness);
        s.ccd_rounds = s.ccd_rounds.max(o.ccd_rounds);
        s.max_zone_rounds = s.max_zone_rounds.max(o.max_zone_rounds);
        s.response_passes = s.response_passes.min(o.response_passes);
        s.strain_limit = match (s.strain_limit, o.strain_limit) {
            (Some(a), Some(b)) => Some(StrainLimit {
                max_stretch: a.max_stretch.min(b.max_stretch),
                max_compress: a.max_compress.min(b.max_compress),
                iterations: a.iterations.max(b.iterations),
                method: a.method,
            }),
            (a, b) => a.or(b),
        };
    }
    s
}

/// The world's layering state: per cloth its reach box and group this substep, the groups
/// met so far, and the cloth pairs told not to collide.
#[derive(Debug, Default)]
pub(crate) struct Layers {
    /// Cloth pairs `[a, b]`, `a < b`, that never collide, sorted.
    pub(crate) apart: Vec<[u32; 2]>,
    reach: Vec<Aabb>,
    /// Per cloth the smallest cloth index of its connected set (union–find, roots are minima).
    root: Vec<u32>,
    /// Per cloth its group this substep (an index into `groups`) or [`ALONE`].
    pub(crate) group_of: Vec<u32>,
    /// The groups of this substep (indices into `groups`), by their first member.
    pub(crate) active: Vec<u32>,
    /// Every group met so far.
    pub(crate) groups: Vec<Group>,
    scratch: Vec<u32>,
    /// Pairs of an isometric and a Baraff–Witkin cloth whose reach boxes met, this frame.
    pub(crate) unsupported: u32,
}

impl Layers {
    /// Sizes the per-cloth buffers for `num_cloths` and forgets every group (cloths or
    /// obstacles changed). Creation time only.
    pub(crate) fn reset(&mut self, num_cloths: usize) {
        self.groups.clear();
        self.active.clear();
        self.reach = vec![Aabb::EMPTY; num_cloths];
        self.root = vec![0; num_cloths];
        self.group_of = vec![ALONE; num_cloths];
        self.active = Vec::with_capacity(num_cloths);
        self.scratch = Vec::with_capacity(num_cloths);
    }

    /// Whether cloths `a` and `b` were told not to collide.
    pub(crate) fn kept_apart(&self, a: u32, b: u32) -> bool {
        let key = [a.min(b), a.max(b)];
        self.apart.binary_search(&key).is_ok()
    }

    /// Forgets cloth `index` (removed) and renumbers the pairs of the cloths after it.
    pub(crate) fn remove_cloth(&mut self, index: u32) {
        self.apart.retain(|p| !p.contains(&index));
        for p in &mut self.apart {
            for c in p.iter_mut() {
                if *c > index {
                    *c -= 1;
                }
            }
        }
    }

    /// Finds this substep's groups among `cloths` (substep length `h`, gravity `g`) and
    /// configures each; builds the collision data of a set met for the first time. Returns
    /// how many groups were built (each an allocation).
    pub(crate) fn find_groups(
        &mut self,
        cloths: &[Cloth],
        h: f32,
        g: Vec3,
        obstacles: &ObstacleMeshes<'_>,
        obstacle_tris: &[[u32; 3]],
        obstacle_thickness: &[f32],
    ) -> u32 {
        let n = cloths.len();
        self.active.clear();
        self.group_of.fill(ALONE);
        if n < 2 {
            return 0;
        }
        for (b, c) in self.reach.iter_mut().zip(cloths) {
            *b = reach_box(c, h, g);
        }
        for (i, r) in self.root.iter_mut().enumerate() {
            *r = i as u32;
        }
        for i in 0..n {
            for j in i + 1..n {
                if !self.reach[i].overlaps(&self.reach[j]) || self.kept_apart(i as u32, j as u32) {
                    continue;
                }
                if cloths[i].sim.model.isometric().is_some()
                    != cloths[j].sim.model.isometric().is_some()
                {
                    self.unsupported += 1;
                    continue;
                }
                let (ri, rj) = (
                    find(&mut self.root, i as u32),
                    find(&mut self.root, j as u32),
                );
                let (lo, hi) = (ri.min(rj), ri.max(rj));
                self.root[hi as usize] = lo;
            }
        }
        let mut built = 0;
        for first in 0..n as u32 {
            if find(&mut self.root, first) != first {
                continue;
            }
            self.scratch.clear();
            for i in first..n as u32 {
                if find(&mut self.root, i) == first {
                    self.scratch.push(i);
                }
            }
            if self.scratch.len() < 2 {
                continue;
            }
            let g = match self
                .groups
                .iter()
                .position(|grp| grp.members == self.scratch)
            {
                Some(g) => g,
                None => {
                    self.groups.push(Group::new(
                        &self.scratch,
                        cloths,
                        obstacle_tris,
                        obstacles.x0,
                        obstacle_thickness,
                    ));
                    built += 1;
                    self.groups.len() - 1
                }
            };
            for &i in &self.scratch {
                self.group_of[i as usize] = g as u32;
            }
            self.active.push(g as u32);
        }
        let apart = &self.apart;
        for &g in &self.active {
            self.groups[g as usize].configure(cloths, |a, b| {
                apart.binary_search(&[a.min(b), a.max(b)]).is_ok()
            });
        }
        built
    }
}

/// The root of `i`'s set (roots are the sets' smallest indices; paths are halved).
fn find(root: &mut [u32], mut i: u32) -> u32 {
    while root[i as usize] != i {
        let up = root[root[i as usize] as usize];
        root[i as usize] = up;
        i = up;
    }
    i
}

/// The box a cloth may occupy during a substep of length `h` under gravity `g`: its vertices
/// at x^n and x^n + h v^n, grown by its thickness and [`REACH_SAFETY`] × (h |v|_max + h² |g|).
fn reach_box(cloth: &Cloth, h: f32, g: Vec3) -> Aabb {
    let mut b = Aabb::EMPTY;
    let mut speed = 0.0f32;
    for (x, v) in cloth
        .sim
        .state
        .positions()
        .iter()
        .zip(cloth.sim.state.velocities())
    {
        b.grow(*x);
        b.grow(*x + h * *v);
        speed = speed.max(v.length());
    }
    let thickness = cloth
        .sim
        .collision_settings
        .thickness
        .max(cloth.sim.thickness);
    b.inflate(thickness + REACH_SAFETY * (h * speed + h * h * g.length()))
}

impl Layers {
    /// The first pair (creation order) of an isometric and a Baraff–Witkin cloth that may touch
    /// during a frame of length `dt` under gravity `g` and were not told not to collide.
    pub(crate) fn unsupported_pair(
        &self,
        cloths: &[Cloth],
        dt: f32,
        g: Vec3,
    ) -> Option<(usize, usize)> {
        if cloths.len() < 2 || cloths.iter().all(|c| c.sim.model.isometric().is_none()) {
            return None;
        }
        for (i, a) in cloths.iter().enumerate() {
            for (j, b) in cloths.iter().enumerate().skip(i + 1) {
                if a.sim.model.isometric().is_some() == b.sim.model.isometric().is_some()
                    || self.kept_apart(i as u32, j as u32)
                {
                    continue;
                }
                if reach_box(a, dt, g).overlaps(&reach_box(b, dt, g)) {
                    return Some((i, j));
                }
            }
        }
        None
    }
}
