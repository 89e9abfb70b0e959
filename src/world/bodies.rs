//! Colliders (analytic shapes, tessellated for the collision stage) and triangle-mesh obstacles,
//! their descriptors and the range checks of poses, motions and shapes.

use super::ids::{ColliderId, ObstacleId};
use glam::{Vec2, Vec3};

use crate::collide::shapes::{Motion, Pose, Shape};
use crate::integrate::contact::ColliderView;
use crate::limits::{self, RangeError};
use crate::mesh::{MeshError, TriMesh};

/// A collider to create.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColliderDesc {
    /// Shape in its local frame.
    pub shape: Shape,
    /// Initial pose.
    pub pose: Pose,
    /// Prescribed rigid motion.
    pub motion: Motion,
    /// Coulomb friction coefficient.
    pub friction: f32,
}

/// A triangle-mesh obstacle to create: static, or moving rigidly.
#[derive(Clone, Debug, PartialEq)]
pub struct ObstacleDesc {
    /// The mesh in its local frame.
    pub mesh: TriMesh,
    /// Initial pose.
    pub pose: Pose,
    /// Prescribed rigid motion.
    pub motion: Motion,
    /// Coulomb coefficient of its surface, applied by the collision stage.
    pub friction: f32,
    /// Its own thickness (m, ≥ 0): the collision stage keeps cloth this
    /// much farther away than the cloth's thickness alone.
    pub thickness: f32,
}

/// A triangle-mesh obstacle in the world.
#[derive(Clone, Debug, PartialEq)]
pub struct Obstacle {
    pub(super) desc: ObstacleDesc,
    pub(super) pose: Pose,
    /// First vertex of this obstacle in the world's obstacle soup.
    pub(super) offset: usize,
}

impl Obstacle {
    /// Current pose.
    #[must_use]
    pub fn pose(&self) -> Pose {
        self.pose
    }

    /// The mesh in its local frame.
    #[must_use]
    pub fn mesh(&self) -> &TriMesh {
        &self.desc.mesh
    }

    /// World positions of the mesh at pose `pose`, into `out`.
    pub(super) fn place(&self, pose: &Pose, out: &mut [Vec3]) {
        for (o, p) in out.iter_mut().zip(&self.desc.mesh.positions) {
            *o = pose.transform_point(*p);
        }
    }
}

/// A body a keyframe [`Track`] can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Animated {
    /// An analytic collider (and its tessellation).
    Collider(ColliderId),
    /// A triangle-mesh obstacle.
    Obstacle(ObstacleId),
}

/// A keyframed body by its place in the world's lists (renumbered on removal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Body {
    Collider(usize),
    Obstacle(usize),
}

/// A collider in the world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collider {
    pub(super) desc: ColliderDesc,
    pub(super) pose: Pose,
    /// Index of its tessellation in [`World::obstacles`].
    pub(super) obstacle: usize,
}

impl Collider {
    /// Current pose.
    #[must_use]
    pub fn pose(&self) -> Pose {
        self.pose
    }

    /// Shape, motion and friction.
    #[must_use]
    pub fn desc(&self) -> &ColliderDesc {
        &self.desc
    }

    pub(crate) fn view(&self) -> ColliderView {
        ColliderView {
            shape: self.desc.shape,
            pose: self.pose,
            motion: self.desc.motion,
            friction: self.desc.friction,
        }
    }

    pub(crate) fn advance(&mut self, dt: f32) {
        self.pose = self.desc.motion.advance(&self.pose, dt);
    }
}

/// The collision-stage mesh of an analytic shape, in its local frame: a
/// 20 m square of the plane, an icosphere (4 subdivisions), a capsule, a box.
pub(crate) fn tessellate(shape: &Shape) -> Result<TriMesh, MeshError> {
    match *shape {
        Shape::Plane => crate::mesh::grid(&crate::mesh::GridSpec {
            nx: 17,
            ny: 17,
            size: Vec2::splat(20.0),
            centre: Vec3::ZERO,
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: crate::mesh::Diagonals::Alternating,
        })
        .map(|mut m| {
            m.corner_uvs = None;
            m
        }),
        Shape::Sphere { radius } => crate::mesh::icosphere(radius, 4),
        Shape::Capsule {
            radius,
            half_length,
        } => crate::mesh::capsule(radius, half_length, 48, 12),
        Shape::Cuboid { half_extents } => crate::mesh::cuboid(half_extents),
    }
}

impl Collider {
    /// Index of this collider's tessellation in [`World::obstacles`].
    #[must_use]
    pub fn obstacle(&self) -> usize {
        self.obstacle
    }
}

/// The constant rigid motion that carries one pose to another in a frame:
/// how an engine hands weft animated colliders (one pose per frame), and how
/// keyframe tracks move their bodies.
pub use crate::collide::track::motion_between;

/// A body's pose: its position within [`limits::MAX_COORDINATE`], its rotation a unit quaternion.
pub(crate) fn check_pose(pose: &Pose) -> Result<(), RangeError> {
    limits::check_point("pose.position", pose.translation)?;
    if pose.rotation.is_finite() && pose.rotation.is_normalized() {
        Ok(())
    } else {
        Err(RangeError {
            what: "pose.rotation",
            message: format!("must be a unit quaternion, got {}", pose.rotation),
        })
    }
}

/// A body's rigid motion: within [`limits::MAX_SPEED`] and [`limits::MAX_ANGULAR_SPEED`].
pub(crate) fn check_motion(motion: &Motion) -> Result<(), RangeError> {
    limits::check_speed("linear_velocity", motion.linear_velocity)?;
    limits::check_angular_speed("angular_velocity", motion.angular_velocity)
}

/// An analytic shape's sizes within the collider range ([`limits::check_collider_size`]).
pub(crate) fn check_shape(shape: &Shape) -> Result<(), RangeError> {
    match *shape {
        Shape::Plane => Ok(()),
        Shape::Sphere { radius } => limits::check_collider_size("radius", radius),
        Shape::Capsule {
            radius,
            half_length,
        } => {
            limits::check_collider_size("radius", radius)?;
            limits::check_collider_size("half_length", half_length)
        }
        Shape::Cuboid { half_extents } => {
            limits::check_box_half_extents("half_extents", half_extents.to_array())
        }
    }
}

impl From<RangeError> for MeshError {
    fn from(e: RangeError) -> Self {
        MeshError::InvalidParameter {
            name: e.what,
            message: e.message,
        }
    }
}
