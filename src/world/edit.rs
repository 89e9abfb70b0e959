//! Edits between frames: removal, pins, per-vertex masses, collider and obstacle poses and motions,
//! teleports (a cloth's state set outright) and material changes.

use glam::Vec3;

use crate::collide::resolve::PoolSizes;
use crate::collide::shapes::{Motion, Pose};
use crate::collide::track::Track;
use crate::integrate::contact::PinTarget;
use crate::integrate::pin_track::PinTrack;
use crate::limits::{self, RangeError};
use crate::model::baraff_witkin::{BendParams, MembraneParams};
use crate::pipeline::ClothModel;
use crate::state::ClothState;

use super::World;
use super::bodies::{Body, check_motion, check_pose};
use super::cloth::Cloth;
use super::frame;
use super::ids::{ClothId, ColliderId, ObstacleId};
use crate::runtime::arena::FrameArena;

/// Why an edit of a world's contents (removal, pins, masses, poses) failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// No cloth of this world has this id (removed, or never issued by it).
    #[error("no {cloth} in this world")]
    NoCloth {
        /// The id given.
        cloth: ClothId,
    },
    /// A cloth pair setting names one cloth twice (a cloth's own collisions are its
    /// self-collision setting).
    #[error("{cloth} paired with itself")]
    SameCloth {
        /// The cloth.
        cloth: ClothId,
    },
    /// No collider of this world has this id (removed, or never issued by it).
    #[error("no {collider} in this world")]
    NoCollider {
        /// The id given.
        collider: ColliderId,
    },
    /// No obstacle of this world has this id (removed, or never issued by it).
    #[error("no {obstacle} in this world")]
    NoObstacle {
        /// The id given.
        obstacle: ObstacleId,
    },
    /// The obstacle is an analytic collider's tessellation: remove or move the collider.
    #[error("{obstacle} belongs to {collider}; edit the collider instead")]
    OwnedByCollider {
        /// The obstacle.
        obstacle: ObstacleId,
        /// Its collider.
        collider: ColliderId,
    },
    /// A vertex index is out of range.
    #[error("vertex {vertex} out of range ({cloth} has {count} vertices)")]
    VertexOutOfRange {
        /// The cloth.
        cloth: ClothId,
        /// The vertex asked for.
        vertex: u32,
        /// Vertices of the cloth.
        count: usize,
    },
    /// The vertex is not pinned.
    #[error("vertex {vertex} of {cloth} is not pinned")]
    NotPinned {
        /// The cloth.
        cloth: ClothId,
        /// The vertex.
        vertex: u32,
    },
    /// The edit does not apply to the cloth's model (a Baraff–Witkin material on an isometric
    /// cloth).
    #[error("{cloth}: {message}")]
    WrongModel {
        /// The cloth.
        cloth: ClothId,
        /// What does not apply, and what to use instead.
        message: &'static str,
    },
    /// A value is NaN, infinite or out of its range.
    #[error("{what}: {message}")]
    Value {
        /// The argument.
        what: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Edits after creation: removal, pins with moving targets, per-vertex masses,
/// collider and obstacle poses and motions. All of them run between frames and
/// may allocate; none is called by [`World::step`].
impl World {
    /// The place of cloth `id` in [`World::cloths`].
    pub(crate) fn cloth_place(&self, id: ClothId) -> Result<usize, EditError> {
        self.cloth_ids
            .place(id)
            .ok_or(EditError::NoCloth { cloth: id })
    }

    fn cloth_mut(&mut self, id: ClothId) -> Result<&mut Cloth, EditError> {
        let i = self.cloth_place(id)?;
        Ok(&mut self.cloths[i])
    }

    /// The place of collider `id` in [`World::colliders`].
    pub(crate) fn collider_place(&self, id: ColliderId) -> Result<usize, EditError> {
        self.collider_ids
            .place(id)
            .ok_or(EditError::NoCollider { collider: id })
    }

    /// The place of obstacle `id` in [`World::obstacles`].
    pub(crate) fn obstacle_place(&self, id: ObstacleId) -> Result<usize, EditError> {
        self.obstacle_ids
            .place(id)
            .ok_or(EditError::NoObstacle { obstacle: id })
    }

    /// The place of obstacle `id`, refused when it is a collider's tessellation.
    fn free_obstacle_place(&self, id: ObstacleId) -> Result<usize, EditError> {
        let index = self.obstacle_place(id)?;
        match self.colliders.iter().position(|c| c.obstacle == index) {
            Some(c) => Err(EditError::OwnedByCollider {
                obstacle: id,
                collider: self.collider_ids.as_slice()[c],
            }),
            None => Ok(index),
        }
    }

    /// Removes cloth `id`; the other cloths keep their ids and their order.
    pub fn remove_cloth(&mut self, id: ClothId) -> Result<Cloth, EditError> {
        let index = self.cloth_place(id)?;
        self.cloth_ids.remove(id);
        let cloth = self.cloths.remove(index);
        self.layers.remove_cloth(index as u32);
        self.layers.reset(self.cloths.len());
        self.schedule = FrameArena::with_capacity(frame::schedule_bytes(self.cloths.len()));
        Ok(cloth)
    }

    /// Sets whether cloths `a` and `b` collide with each other (by default every two cloths
    /// of a world do; `docs/methods/cloth-layers.md`): `false` for a lining sewn to its shell,
    /// whose layers may touch and cross where the seams hold them. Symmetric; each cloth's
    /// self-collision is its own setting (`CollisionSettings::self_collision`). Refused, changing
    /// nothing, when either id names no cloth of this world or `a == b`.
    ///
    /// The pair is kept by the cloths' places in [`World::cloths`], which removals renumber.
    pub fn set_cloths_collide(
        &mut self,
        a: ClothId,
        b: ClothId,
        collide: bool,
    ) -> Result<(), EditError> {
        let (ia, ib) = (self.cloth_place(a)?, self.cloth_place(b)?);
        if a == b {
            return Err(EditError::SameCloth { cloth: a });
        }
        let (a, b) = (ia, ib);
        let key = [a.min(b) as u32, a.max(b) as u32];
        let apart = &mut self.layers.apart;
        match (apart.binary_search(&key), collide) {
            (Ok(k), true) => {
                apart.remove(k);
            }
            (Err(k), false) => apart.insert(k, key),
            _ => {}
        }
        Ok(())
    }

    /// Whether cloths `a` and `b` collide with each other ([`World::set_cloths_collide`]);
    /// `None` when either id names no cloth of this world.
    #[must_use]
    pub fn cloths_collide(&self, a: ClothId, b: ClothId) -> Option<bool> {
        let (ia, ib) = (self.cloth_ids.place(a)?, self.cloth_ids.place(b)?);
        Some(ia != ib && !self.layers.kept_apart(ia as u32, ib as u32))
    }

    /// Removes analytic collider `id` and its tessellated obstacle; the other colliders and
    /// obstacles keep their ids and their order.
    pub fn remove_collider(&mut self, id: ColliderId) -> Result<(), EditError> {
        let index = self.collider_place(id)?;
        self.collider_ids.remove(id);
        let collider = self.colliders.remove(index);
        self.renumber_tracks(Body::Collider(index));
        self.remove_obstacle_at(collider.obstacle);
        self.collider_views = Vec::with_capacity(self.colliders.len());
        self.collider_vertices = Vec::with_capacity(self.colliders.len());
        Ok(())
    }

    /// Removes triangle-mesh obstacle `id` (not one owned by a collider); the other obstacles
    /// keep their ids and their order.
    pub fn remove_obstacle(&mut self, id: ObstacleId) -> Result<(), EditError> {
        let index = self.free_obstacle_place(id)?;
        self.remove_obstacle_at(index);
        Ok(())
    }

    /// Cuts obstacle `index` out of the soup, renumbers what follows and
    /// rebuilds every cloth's obstacle data (as [`World::add_obstacle`] does).
    fn remove_obstacle_at(&mut self, index: usize) {
        let first_tri: usize = self.obstacles[..index]
            .iter()
            .map(|o| o.desc.mesh.num_triangles())
            .sum();
        let o = self.obstacles.remove(index);
        let id = self.obstacle_ids.as_slice()[index];
        self.obstacle_ids.remove(id);
        self.renumber_tracks(Body::Obstacle(index));
        let n = o.desc.mesh.num_vertices();
        let range = o.offset..o.offset + n;
        self.obstacle_x0.drain(range.clone());
        self.obstacle_x1.drain(range.clone());
        self.obstacle_friction.drain(range.clone());
        self.obstacle_thickness.drain(range.clone());
        self.obstacle_contact_friction.drain(range.clone());
        self.obstacle_analytic.drain(range);
        let tris = first_tri..first_tri + o.desc.mesh.num_triangles();
        self.obstacle_tris.drain(tris);
        let shift = n as u32;
        for t in &mut self.obstacle_tris[first_tri..] {
            *t = t.map(|i| i - shift);
        }
        for later in &mut self.obstacles[index..] {
            later.offset -= n;
        }
        for c in &mut self.colliders {
            if c.obstacle > index {
                c.obstacle -= 1;
            }
        }
        self.share_obstacles_with_cloths();
    }

    /// Forgets the keyframe track of a removed body and moves the tracks of
    /// the bodies after it (of the same kind) down one index.
    fn renumber_tracks(&mut self, removed: Body) {
        self.tracks.retain(|(b, _)| *b != removed);
        for (b, _) in &mut self.tracks {
            match (b, removed) {
                (Body::Collider(i), Body::Collider(r)) | (Body::Obstacle(i), Body::Obstacle(r))
                    if *i > r =>
                {
                    *i -= 1;
                }
                _ => {}
            }
        }
    }

    /// The host takes over a body's motion: its keyframe track, if any, stops.
    fn untrack(&mut self, body: Body) {
        self.tracks.retain(|(b, _)| *b != body);
    }

    /// Moves collider `id` (and its tessellation) to `pose` at once.
    ///
    /// A jump, not a motion: the cloth sees no velocity. Use
    /// [`World::set_collider_motion`] (see [`motion_between`]) to drive a
    /// collider to a pose over a frame; use this for placement and to remove
    /// round-off after such a frame.
    pub fn set_collider_pose(&mut self, id: ColliderId, pose: Pose) -> Result<(), EditError> {
        let index = self.collider_place(id)?;
        check_pose(&pose)?;
        self.untrack(Body::Collider(index));
        self.colliders[index].pose = pose;
        let o = self.colliders[index].obstacle;
        self.place_obstacle(o, pose);
        Ok(())
    }

    /// Sets the rigid motion of collider `id` (and of its tessellation)
    /// for the frames that follow.
    pub fn set_collider_motion(&mut self, id: ColliderId, motion: Motion) -> Result<(), EditError> {
        let index = self.collider_place(id)?;
        check_motion(&motion)?;
        self.untrack(Body::Collider(index));
        self.colliders[index].desc.motion = motion;
        let o = self.colliders[index].obstacle;
        self.obstacles[o].desc.motion = motion;
        Ok(())
    }

    /// Moves triangle-mesh obstacle `id` to `pose` at once (a jump; see
    /// [`World::set_collider_pose`]).
    pub fn set_obstacle_pose(&mut self, id: ObstacleId, pose: Pose) -> Result<(), EditError> {
        let index = self.free_obstacle_place(id)?;
        check_pose(&pose)?;
        self.untrack(Body::Obstacle(index));
        self.place_obstacle(index, pose);
        Ok(())
    }

    /// Sets the rigid motion of triangle-mesh obstacle `id`.
    pub fn set_obstacle_motion(&mut self, id: ObstacleId, motion: Motion) -> Result<(), EditError> {
        let index = self.free_obstacle_place(id)?;
        check_motion(&motion)?;
        self.untrack(Body::Obstacle(index));
        self.obstacles[index].desc.motion = motion;
        Ok(())
    }

    fn place_obstacle(&mut self, index: usize, pose: Pose) {
        let o = &mut self.obstacles[index];
        o.pose = pose;
        let range = o.offset..o.offset + o.desc.mesh.num_vertices();
        o.place(&pose, &mut self.obstacle_x0[range]);
    }

    /// Pins `vertex` of cloth `cloth` with its target now at `target`, moving
    /// at `velocity` (m/s) during the frames that follow: at the end of every
    /// substep of length h the target has moved by `velocity * h` and the
    /// vertex sits exactly on it. An already pinned vertex keeps its place in
    /// the pin list and gets the new target and velocity.
    pub fn pin_vertex(
        &mut self,
        cloth: ClothId,
        vertex: u32,
        target: Vec3,
        velocity: Vec3,
    ) -> Result<(), EditError> {
        limits::check_point("pin target", target)?;
        limits::check_speed("pin velocity", velocity)?;
        let c = self.cloth_mut(cloth)?;
        let count = c.sim.state.len();
        if vertex as usize >= count {
            return Err(EditError::VertexOutOfRange {
                cloth,
                vertex,
                count,
            });
        }
        // The host takes the vertex over from a keyframed pin track, if any.
        c.forget_tracked_pin(vertex);
        match c.sim.pins.iter_mut().find(|p| p.vertex == vertex) {
            Some(p) => {
                p.target = target;
                p.velocity = velocity;
            }
            None => {
                c.sim.state.set_pinned(vertex as usize, true);
                c.sim.pins.push(PinTarget {
                    vertex,
                    target,
                    velocity,
                });
            }
        }
        Ok(())
    }

    /// Frees pinned `vertex` of cloth `cloth`; it keeps its position and velocity.
    pub fn unpin_vertex(&mut self, cloth: ClothId, vertex: u32) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        let count = c.sim.state.len();
        if vertex as usize >= count {
            return Err(EditError::VertexOutOfRange {
                cloth,
                vertex,
                count,
            });
        }
        let k = c
            .sim
            .pins
            .iter()
            .position(|p| p.vertex == vertex)
            .ok_or(EditError::NotPinned { cloth, vertex })?;
        c.sim.pins.remove(k);
        c.sim.state.set_pinned(vertex as usize, false);
        c.forget_tracked_pin(vertex);
        Ok(())
    }

    /// Frees every pinned vertex of cloth `cloth`.
    pub fn clear_pins(&mut self, cloth: ClothId) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        for p in &c.sim.pins {
            c.sim.state.set_pinned(p.vertex as usize, false);
        }
        c.sim.pins.clear();
        c.pin_tracks.clear();
        Ok(())
    }

    /// Pins `vertices` of cloth `cloth` to a keyframed track from now on: with `p`
    /// the pivot and `x_i` each vertex's position now, its target at time `t` is
    /// `p + T(t) + R(t) (x_i − p)` for the track's pose `(R, T)` at `t`
    /// ([`PinTrack`]). The vertices are pinned (those already pinned keep their place
    /// in the pin list, leaving any earlier track) and placed on the track's
    /// position for the current time at once (a set-up call, not a step). Every
    /// substep then moves them to the track's position at the substep's end, where
    /// they land exactly.
    ///
    /// # Errors
    /// No such cloth, a vertex out of range, an empty list or a non-finite pivot.
    pub fn set_pin_track(
        &mut self,
        cloth: ClothId,
        vertices: &[u32],
        pivot: Vec3,
        track: Track,
    ) -> Result<(), EditError> {
        if !pivot.is_finite() {
            return Err(EditError::Value {
                what: "pin track",
                message: format!("pivot {pivot} must be finite"),
            });
        }
        if vertices.is_empty() {
            return Err(EditError::Value {
                what: "pin track",
                message: "no vertex to pin".into(),
            });
        }
        let time = self.time;
        let c = self.cloth_mut(cloth)?;
        let count = c.sim.state.len();
        if let Some(&vertex) = vertices.iter().find(|&&v| v as usize >= count) {
            return Err(EditError::VertexOutOfRange {
                cloth,
                vertex,
                count,
            });
        }
        let mut vertices = vertices.to_vec();
        vertices.sort_unstable();
        vertices.dedup();
        for &v in &vertices {
            c.forget_tracked_pin(v);
            if !c.sim.state.is_pinned(v as usize) {
                c.sim.state.set_pinned(v as usize, true);
                c.sim.pins.push(PinTarget {
                    vertex: v,
                    target: c.sim.state.positions()[v as usize],
                    velocity: Vec3::ZERO,
                });
            }
        }
        for p in &mut c.sim.pins {
            if vertices.binary_search(&p.vertex).is_ok() {
                p.velocity = Vec3::ZERO;
            }
        }
        let mut pin_track = PinTrack::new(track, pivot, &vertices, c.sim.state.positions());
        pin_track.reslot(&c.sim.pins);
        pin_track.land(&mut c.sim.pins, c.sim.state.positions_mut(), time);
        c.pin_tracks.push(pin_track);
        Ok(())
    }

    /// Replaces the collision pools of cloth `cloth` by pools of `sizes`
    /// (emptied; for an isometric cloth, those of its collision stage too). A
    /// host that knows its scenes can size them up front, or down to save
    /// memory: a pool that turns out too small grows once, and the growth is
    /// counted in [`FrameStats::pool_overflows`] (the results do not change).
    pub fn set_collision_pool_sizes(
        &mut self,
        cloth: ClothId,
        sizes: PoolSizes,
    ) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        c.sim.model.collision_mut().set_pool_sizes(sizes);
        Ok(())
    }

    /// Replaces the lumped masses of cloth `cloth` by `masses` (kg, one per
    /// vertex, finite and positive). Positions, velocities and pins are kept.
    pub fn set_cloth_masses(&mut self, cloth: ClothId, masses: &[f32]) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        if masses.len() != c.sim.state.len() {
            return Err(EditError::Value {
                what: "masses",
                message: format!("{} masses for {} vertices", masses.len(), c.sim.state.len()),
            });
        }
        limits::check_vertex_masses("masses", masses)?;
        let mut state = ClothState::new(c.sim.state.positions().to_vec(), masses.to_vec());
        state
            .velocities_mut()
            .copy_from_slice(c.sim.state.velocities());
        for p in &c.sim.pins {
            state.set_pinned(p.vertex as usize, true);
        }
        if let Some(bw) = c.sim.model.baraff_witkin_mut() {
            bw.backup = state.clone();
        }
        c.sim.state = state;
        Ok(())
    }
}

/// Teleports and material changes.
impl World {
    /// Sets the state of cloth `cloth` outright: `positions` (m) and/or `velocities` (m/s), one
    /// per vertex (for an isometric cloth, per vertex of its subdivided mesh); `None` keeps
    /// that half of the state. A teleport, not a motion: the step that follows starts from the
    /// new state with no velocity implied by the jump.
    ///
    /// Pinned vertices move with it: a moved pin's target becomes the vertex's new position
    /// (its target velocity is kept). Vertices of a keyframed pin track
    /// ([`World::set_pin_track`]) are put back on their track by the next substep; set the
    /// track again after a teleport that moves them. History that belongs to the old state
    /// is dropped: the collider contacts engaged before (they re-engage from the new
    /// geometry), the warm start of the next linear solve and, for an isometric cloth, its
    /// BDF2 history and warm starts. The cloth's future then depends only on the state given.
    ///
    /// What the collision stage then guarantees (`docs/methods/teleport.md`): it never creates
    /// a crossing between the cloth and a collider's surface (analytic colliders take part
    /// through their tessellation) or the cloth itself, and it does not undo one. A teleport
    /// that leaves the cloth outside every collider and free of self-crossings keeps the
    /// guarantees of any other step; one that puts vertices inside a collider leaves the cloth
    /// caught on it: the vertices inside stay inside (neighbours may be drawn in), positions stay finite, and the cloth is
    /// freed by the next teleport that puts it outside. The host places a teleported cloth
    /// outside the colliders.
    ///
    /// # Errors
    /// No such cloth, a slice of the wrong length, a position beyond
    /// `limits::MAX_COORDINATE` or a velocity beyond `limits::MAX_SPEED` (NaN and infinities
    /// included): nothing changes.
    pub fn set_cloth_state(
        &mut self,
        cloth: ClothId,
        positions: Option<&[Vec3]>,
        velocities: Option<&[Vec3]>,
    ) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        let n = c.sim.state.len();
        for (what, values) in [("positions", positions), ("velocities", velocities)] {
            if let Some(values) = values.filter(|v| v.len() != n) {
                return Err(EditError::Value {
                    what,
                    message: format!("{} values for {n} vertices", values.len()),
                });
            }
        }
        if let Some(x) = positions {
            limits::check_points("positions", x)?;
        }
        if let Some(v) = velocities {
            for (i, v) in v.iter().enumerate() {
                limits::check_speed("velocities", *v).map_err(|e| EditError::Value {
                    what: "velocities",
                    message: format!("vertex {i}: {}", e.message),
                })?;
            }
        }
        if let Some(x) = positions {
            c.sim.state.positions_mut().copy_from_slice(x);
            for p in &mut c.sim.pins {
                p.target = x[p.vertex as usize];
            }
        }
        if let Some(v) = velocities {
            c.sim.state.velocities_mut().copy_from_slice(v);
        }
        match &mut c.sim.model {
            ClothModel::BaraffWitkin(bw) => {
                bw.constraints.reset_history();
                bw.system.forget_warm_start();
            }
            ClothModel::Isometric(iso) => iso.reset(),
        }
        Ok(())
    }

    /// Replaces the Baraff–Witkin material of cloth `cloth`: stretch, shear and their damping
    /// and rest stretch (`membrane`), bending stiffness and damping (`bend`), from the next
    /// step on. The rest shape, rest angles and solver settings are those of creation.
    ///
    /// # Errors
    /// No such cloth, an isometric cloth ([`EditError::WrongModel`]: its material is set at
    /// creation), or a stiffness or damping that is negative or not finite, or a rest stretch
    /// that is not positive: nothing changes.
    pub fn set_cloth_material(
        &mut self,
        cloth: ClothId,
        membrane: MembraneParams,
        bend: BendParams,
    ) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        let Some(bw) = c.sim.model.baraff_witkin_mut() else {
            return Err(EditError::WrongModel {
                cloth,
                message: "an isometric cloth has no Baraff–Witkin material (its bending is \
                          set at creation)",
            });
        };
        for (value, what) in [
            (membrane.stretch_u, "material.stretch_u"),
            (membrane.stretch_v, "material.stretch_v"),
            (membrane.shear, "material.shear"),
            (membrane.stretch_damping, "material.stretch_damping"),
            (membrane.shear_damping, "material.shear_damping"),
            (bend.stiffness, "material.bend"),
            (bend.damping, "material.bend_damping"),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(EditError::Value {
                    what,
                    message: format!("must be finite and non-negative, got {value}"),
                });
            }
        }
        for (value, what) in [
            (membrane.rest_stretch_u, "material.rest_stretch_u"),
            (membrane.rest_stretch_v, "material.rest_stretch_v"),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(EditError::Value {
                    what,
                    message: format!("must be finite and positive, got {value}"),
                });
            }
        }
        bw.system.set_material(membrane, bend);
        Ok(())
    }
}

impl From<RangeError> for EditError {
    fn from(e: RangeError) -> Self {
        EditError::Value {
            what: e.what,
            message: e.message,
        }
    }
}
