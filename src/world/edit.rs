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
use crate::state::ClothState;

use super::World;
use super::bodies::{Animated, check_motion, check_pose};
use super::cloth::Cloth;
use super::frame;
use crate::runtime::arena::FrameArena;

/// Why an edit of a world's contents (removal, pins, masses, poses) failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// No cloth has this index.
    #[error("no cloth {index} (the world has {count})")]
    NoCloth {
        /// The index asked for.
        index: usize,
        /// Cloths in the world.
        count: usize,
    },
    /// A cloth pair setting names one cloth twice (a cloth's own collisions are its
    /// self-collision setting).
    #[error("cloth {index} paired with itself")]
    SameCloth {
        /// The cloth.
        index: usize,
    },
    /// No collider has this index.
    #[error("no collider {index} (the world has {count})")]
    NoCollider {
        /// The index asked for.
        index: usize,
        /// Colliders in the world.
        count: usize,
    },
    /// No obstacle has this index.
    #[error("no obstacle {index} (the world has {count})")]
    NoObstacle {
        /// The index asked for.
        index: usize,
        /// Obstacles in the world.
        count: usize,
    },
    /// The obstacle is an analytic collider's tessellation: remove or move the collider.
    #[error("obstacle {index} belongs to collider {collider}; edit the collider instead")]
    OwnedByCollider {
        /// The obstacle.
        index: usize,
        /// Its collider.
        collider: usize,
    },
    /// A vertex index is out of range.
    #[error("vertex {vertex} out of range (cloth {cloth} has {count} vertices)")]
    VertexOutOfRange {
        /// The cloth.
        cloth: usize,
        /// The vertex asked for.
        vertex: u32,
        /// Vertices of the cloth.
        count: usize,
    },
    /// The vertex is not pinned.
    #[error("vertex {vertex} of cloth {cloth} is not pinned")]
    NotPinned {
        /// The cloth.
        cloth: usize,
        /// The vertex.
        vertex: u32,
    },
    /// The edit does not apply to the cloth's model (a Baraff–Witkin material on an isometric
    /// cloth).
    #[error("cloth {cloth}: {message}")]
    WrongModel {
        /// The cloth.
        cloth: usize,
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
    fn cloth_mut(&mut self, index: usize) -> Result<&mut Cloth, EditError> {
        let count = self.cloths.len();
        self.cloths
            .get_mut(index)
            .ok_or(EditError::NoCloth { index, count })
    }

    fn check_collider(&self, index: usize) -> Result<(), EditError> {
        if index < self.colliders.len() {
            Ok(())
        } else {
            Err(EditError::NoCollider {
                index,
                count: self.colliders.len(),
            })
        }
    }

    fn check_free_obstacle(&self, index: usize) -> Result<(), EditError> {
        if index >= self.obstacles.len() {
            return Err(EditError::NoObstacle {
                index,
                count: self.obstacles.len(),
            });
        }
        match self.colliders.iter().position(|c| c.obstacle == index) {
            Some(collider) => Err(EditError::OwnedByCollider { index, collider }),
            None => Ok(()),
        }
    }

    /// Removes cloth `index`; later cloths move down one index.
    pub fn remove_cloth(&mut self, index: usize) -> Result<Cloth, EditError> {
        self.cloth_mut(index)?;
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
    /// nothing, when either index is out of range or `a == b`.
    pub fn set_cloths_collide(
        &mut self,
        a: usize,
        b: usize,
        collide: bool,
    ) -> Result<(), EditError> {
        self.cloth_mut(a)?;
        self.cloth_mut(b)?;
        if a == b {
            return Err(EditError::SameCloth { index: a });
        }
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
    /// `None` when either index is out of range.
    #[must_use]
    pub fn cloths_collide(&self, a: usize, b: usize) -> Option<bool> {
        (a < self.cloths.len() && b < self.cloths.len())
            .then(|| a != b && !self.layers.kept_apart(a as u32, b as u32))
    }

    /// Removes analytic collider `index` and its tessellated obstacle; later
    /// colliders and obstacles move down one index.
    pub fn remove_collider(&mut self, index: usize) -> Result<(), EditError> {
        self.check_collider(index)?;
        let collider = self.colliders.remove(index);
        self.renumber_tracks(Animated::Collider(index));
        self.remove_obstacle_at(collider.obstacle);
        self.collider_views = Vec::with_capacity(self.colliders.len());
        self.collider_vertices = Vec::with_capacity(self.colliders.len());
        Ok(())
    }

    /// Removes triangle-mesh obstacle `index` (not one owned by a collider);
    /// later obstacles move down one index.
    pub fn remove_obstacle(&mut self, index: usize) -> Result<(), EditError> {
        self.check_free_obstacle(index)?;
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
        self.renumber_tracks(Animated::Obstacle(index));
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
    fn renumber_tracks(&mut self, removed: Animated) {
        self.tracks.retain(|(b, _)| *b != removed);
        for (b, _) in &mut self.tracks {
            match (b, removed) {
                (Animated::Collider(i), Animated::Collider(r))
                | (Animated::Obstacle(i), Animated::Obstacle(r))
                    if *i > r =>
                {
                    *i -= 1;
                }
                _ => {}
            }
        }
    }

    /// The host takes over a body's motion: its keyframe track, if any, stops.
    fn untrack(&mut self, body: Animated) {
        self.tracks.retain(|(b, _)| *b != body);
    }

    /// Moves collider `index` (and its tessellation) to `pose` at once.
    ///
    /// A jump, not a motion: the cloth sees no velocity. Use
    /// [`World::set_collider_motion`] (see [`motion_between`]) to drive a
    /// collider to a pose over a frame; use this for placement and to remove
    /// round-off after such a frame.
    pub fn set_collider_pose(&mut self, index: usize, pose: Pose) -> Result<(), EditError> {
        self.check_collider(index)?;
        check_pose(&pose)?;
        self.untrack(Animated::Collider(index));
        self.colliders[index].pose = pose;
        let o = self.colliders[index].obstacle;
        self.place_obstacle(o, pose);
        Ok(())
    }

    /// Sets the rigid motion of collider `index` (and of its tessellation)
    /// for the frames that follow.
    pub fn set_collider_motion(&mut self, index: usize, motion: Motion) -> Result<(), EditError> {
        self.check_collider(index)?;
        check_motion(&motion)?;
        self.untrack(Animated::Collider(index));
        self.colliders[index].desc.motion = motion;
        let o = self.colliders[index].obstacle;
        self.obstacles[o].desc.motion = motion;
        Ok(())
    }

    /// Moves triangle-mesh obstacle `index` to `pose` at once (a jump; see
    /// [`World::set_collider_pose`]).
    pub fn set_obstacle_pose(&mut self, index: usize, pose: Pose) -> Result<(), EditError> {
        self.check_free_obstacle(index)?;
        check_pose(&pose)?;
        self.untrack(Animated::Obstacle(index));
        self.place_obstacle(index, pose);
        Ok(())
    }

    /// Sets the rigid motion of triangle-mesh obstacle `index`.
    pub fn set_obstacle_motion(&mut self, index: usize, motion: Motion) -> Result<(), EditError> {
        self.check_free_obstacle(index)?;
        check_motion(&motion)?;
        self.untrack(Animated::Obstacle(index));
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
        cloth: usize,
        vertex: u32,
        target: Vec3,
        velocity: Vec3,
    ) -> Result<(), EditError> {
        limits::check_point("pin target", target)?;
        limits::check_speed("pin velocity", velocity)?;
        let c = self.cloth_mut(cloth)?;
        let count = c.state.len();
        if vertex as usize >= count {
            return Err(EditError::VertexOutOfRange {
                cloth,
                vertex,
                count,
            });
        }
        // The host takes the vertex over from a keyframed pin track, if any.
        c.forget_tracked_pin(vertex);
        match c.pins.iter_mut().find(|p| p.vertex == vertex) {
            Some(p) => {
                p.target = target;
                p.velocity = velocity;
            }
            None => {
                c.state.set_pinned(vertex as usize, true);
                c.pins.push(PinTarget {
                    vertex,
                    target,
                    velocity,
                });
            }
        }
        Ok(())
    }

    /// Frees pinned `vertex` of cloth `cloth`; it keeps its position and velocity.
    pub fn unpin_vertex(&mut self, cloth: usize, vertex: u32) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        let count = c.state.len();
        if vertex as usize >= count {
            return Err(EditError::VertexOutOfRange {
                cloth,
                vertex,
                count,
            });
        }
        let k = c
            .pins
            .iter()
            .position(|p| p.vertex == vertex)
            .ok_or(EditError::NotPinned { cloth, vertex })?;
        c.pins.remove(k);
        c.state.set_pinned(vertex as usize, false);
        c.forget_tracked_pin(vertex);
        Ok(())
    }

    /// Frees every pinned vertex of cloth `cloth`.
    pub fn clear_pins(&mut self, cloth: usize) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        for p in &c.pins {
            c.state.set_pinned(p.vertex as usize, false);
        }
        c.pins.clear();
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
        cloth: usize,
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
        let count = c.state.len();
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
            if !c.state.is_pinned(v as usize) {
                c.state.set_pinned(v as usize, true);
                c.pins.push(PinTarget {
                    vertex: v,
                    target: c.state.positions()[v as usize],
                    velocity: Vec3::ZERO,
                });
            }
        }
        for p in &mut c.pins {
            if vertices.binary_search(&p.vertex).is_ok() {
                p.velocity = Vec3::ZERO;
            }
        }
        let mut pin_track = PinTrack::new(track, pivot, &vertices, c.state.positions());
        pin_track.reslot(&c.pins);
        pin_track.land(&mut c.pins, c.state.positions_mut(), time);
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
        cloth: usize,
        sizes: PoolSizes,
    ) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        c.collision.set_pool_sizes(sizes);
        if let Some(iso) = c.isometric.as_mut() {
            iso.collision_mut().set_pool_sizes(sizes);
        }
        Ok(())
    }

    /// Replaces the lumped masses of cloth `cloth` by `masses` (kg, one per
    /// vertex, finite and positive). Positions, velocities and pins are kept.
    pub fn set_cloth_masses(&mut self, cloth: usize, masses: &[f32]) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        if masses.len() != c.state.len() {
            return Err(EditError::Value {
                what: "masses",
                message: format!("{} masses for {} vertices", masses.len(), c.state.len()),
            });
        }
        limits::check_vertex_masses("masses", masses)?;
        let mut state = ClothState::new(c.state.positions().to_vec(), masses.to_vec());
        state.velocities_mut().copy_from_slice(c.state.velocities());
        for p in &c.pins {
            state.set_pinned(p.vertex as usize, true);
        }
        c.backup = state.clone();
        c.state = state;
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
        cloth: usize,
        positions: Option<&[Vec3]>,
        velocities: Option<&[Vec3]>,
    ) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        let n = c.state.len();
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
            c.state.positions_mut().copy_from_slice(x);
            for p in &mut c.pins {
                p.target = x[p.vertex as usize];
            }
        }
        if let Some(v) = velocities {
            c.state.velocities_mut().copy_from_slice(v);
        }
        c.constraints.reset_history();
        c.system.forget_warm_start();
        if let Some(iso) = c.isometric.as_mut() {
            iso.reset();
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
        cloth: usize,
        membrane: MembraneParams,
        bend: BendParams,
    ) -> Result<(), EditError> {
        let c = self.cloth_mut(cloth)?;
        if c.isometric.is_some() {
            return Err(EditError::WrongModel {
                cloth,
                message: "an isometric cloth has no Baraff–Witkin material (its bending is \
                          set at creation)",
            });
        }
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
        c.system.set_material(membrane, bend);
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
