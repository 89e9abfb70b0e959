//! The simulation world: cloths, colliders, settings, and the frame entry point.
//!
//! A [`World`] owns everything a frame touches. Cloths are created from a
//! [`ClothDesc`] (validated, then every buffer a step needs is sized once);
//! colliders from a [`ColliderDesc`]. [`World::step`] advances one frame by
//! running the substep pipeline of [`crate::pipeline`] over every cloth.
#![deny(unsafe_code)]

use std::sync::Arc;

use glam::{Vec2, Vec3};
use rayon::prelude::*;

use crate::collide::resolve::{ClothCollision, CollisionSettings, ObstacleMeshes, PoolSizes};
use crate::collide::shapes::{Motion, Pose, Shape};
use crate::collide::strain_limit::EdgeDrive;
use crate::collide::subdivision::{
    CollisionAwareSubdivision, SubdivisionStats, pseudo_step_settings,
};
use crate::collide::track::{Track, TrackError};
use crate::integrate::contact::{ColliderView, Constraints, PinTarget};
use crate::integrate::implicit_euler::{BwBuildError, BwSettings, ImplicitEuler};
use crate::integrate::isometric_cloth::{IsometricCloth, IsometricClothError, IsometricDesc};
use crate::integrate::pin_track::PinTrack;
use crate::limits::{self, RangeError};
use crate::mesh::{MeshError, Topology, TriMesh};
use crate::pipeline;
use crate::runtime::arena::FrameArena;
use crate::runtime::budget::{Budget, Clock, Deadline, Governor, SystemClock};
use crate::runtime::stats::FrameStats;

/// A cloth's frame arena starts with this many bytes per triangle: room for
/// the collision stage's first candidate list (16 tests of 21 bytes per
/// triangle) grown twice. It grows to what the frames need (reported as a pool
/// overflow) and keeps that size; drape-33 settles near 1,300 bytes per
/// triangle, most of it the lists of the CCD rounds' swept boxes.
const ARENA_BYTES_PER_TRIANGLE: usize = 1024;
use crate::state::{ClothState, StateHasher, lumped_masses};

/// World-wide settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldSettings {
    /// Gravity (m/s²).
    pub gravity: Vec3,
    /// Substeps per frame.
    pub substeps: u32,
    /// The frame budget.
    pub budget: Budget,
    /// Adaptive step control.
    pub step_control: StepControl,
    /// Compute the total energy into the frame stats (one extra element pass).
    pub energy_stats: bool,
    /// Wind on every cloth (`model::wind`); `None` = still air.
    pub wind: Option<crate::model::wind::Wind>,
}

impl Default for WorldSettings {
    fn default() -> Self {
        Self {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            substeps: 2,
            budget: Budget::default(),
            step_control: StepControl::default(),
            energy_stats: false,
            wind: None,
        }
    }
}

/// Step rejection (Baraff & Witkin 1998, *Adaptive time stepping*): a substep whose per-triangle
/// stretch changes by more than `max_stretch_change` (relative) is undone and
/// retried as two half steps, at most `max_halvings` times deep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepControl {
    /// Largest accepted relative change of max(|w_u|, |w_v|) in one substep.
    pub max_stretch_change: f32,
    /// Largest number of successive halvings (0 disables step control).
    pub max_halvings: u32,
}

impl Default for StepControl {
    fn default() -> Self {
        Self {
            max_stretch_change: 0.1,
            max_halvings: 3,
        }
    }
}

/// Everything needed to create a cloth.
#[derive(Clone, Debug)]
pub struct ClothDesc {
    /// Name used in outputs.
    pub name: String,
    /// The mesh (positions are the initial state).
    pub mesh: TriMesh,
    /// Areal density ρ (kg/m²).
    pub density: f32,
    /// Thickness η: contact offset from colliders (m).
    pub thickness: f32,
    /// Coulomb friction coefficient of the cloth's surface.
    pub friction: f32,
    /// Air damping c (1/s): a drag force −c m v on every vertex.
    pub air_damping: f32,
    /// The Baraff–Witkin material and solver settings.
    pub model: BwSettings,
    /// Pinned vertices.
    pub pins: Vec<u32>,
    /// Velocity of every pin (m/s): pins move rigidly with it.
    pub pin_velocity: Vec3,
    /// Initial velocity of every vertex (m/s).
    pub initial_velocity: Vec3,
    /// The collision stage (self-collision, obstacle meshes, strain limiting).
    pub collision: CollisionSettings,
}

/// Why a cloth could not be created.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClothError {
    /// The mesh is invalid.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// The rest state is degenerate.
    #[error(transparent)]
    Rest(#[from] BwBuildError),
    /// A parameter is out of range.
    #[error("cloth parameter `{name}`: {message}")]
    Parameter {
        /// The parameter.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A vertex belongs to no triangle, so it has no mass.
    #[error("vertex {vertex} belongs to no triangle")]
    IsolatedVertex {
        /// The vertex.
        vertex: u32,
    },
    /// The isometric model (Wang 2012) cannot be built on this mesh or with these settings.
    #[error(transparent)]
    Isometric(#[from] IsometricClothError),
    /// A value is outside its range ([`crate::limits`]).
    #[error(transparent)]
    Range(#[from] RangeError),
}

/// A simulation failure: a lost invariant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    /// A position or velocity became NaN or infinite.
    #[error("cloth {cloth} ({name}): non-finite state after frame {frame}")]
    NonFinite {
        /// Cloth index.
        cloth: usize,
        /// Cloth name.
        name: String,
        /// Frame number.
        frame: u64,
    },
    /// The frame length, or its substep, is outside its range ([`limits::check_frame_dt`]).
    #[error("frame time step {dt:e} s refused: {message}")]
    BadTimeStep {
        /// The rejected dt.
        dt: f32,
        /// The range it missed.
        message: String,
    },
    /// A world setting changed through [`World::settings_mut`] is outside its range.
    #[error("world settings: {0}")]
    Settings(RangeError),
}

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
    desc: ObstacleDesc,
    pose: Pose,
    /// First vertex of this obstacle in the world's obstacle soup.
    offset: usize,
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
    fn place(&self, pose: &Pose, out: &mut [Vec3]) {
        for (o, p) in out.iter_mut().zip(&self.desc.mesh.positions) {
            *o = pose.transform_point(*p);
        }
    }
}

/// A body a keyframe [`Track`] can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Animated {
    /// An analytic collider (and its tessellation), by index.
    Collider(usize),
    /// A triangle-mesh obstacle, by index.
    Obstacle(usize),
}

/// A collider in the world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collider {
    desc: ColliderDesc,
    pose: Pose,
    /// Index of its tessellation in [`World::obstacles`].
    obstacle: usize,
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

/// One cloth: its state, rest data and every scratch buffer its step needs.
#[derive(Debug)]
pub struct Cloth {
    pub(crate) name: String,
    pub(crate) triangles: Vec<[u32; 3]>,
    pub(crate) edges: Vec<[u32; 2]>,
    pub(crate) rest_lengths: Vec<f32>,
    pub(crate) state: ClothState,
    pub(crate) backup: ClothState,
    pub(crate) system: ImplicitEuler,
    pub(crate) constraints: Constraints,
    pub(crate) pins: Vec<PinTarget>,
    /// Keyframed pin targets ([`World::set_pin_track`]); each tracked vertex is pinned.
    pub(crate) pin_tracks: Vec<PinTrack>,
    pub(crate) external: Vec<Vec3>,
    pub(crate) measure_before: Vec<f32>,
    pub(crate) measure_after: Vec<f32>,
    pub(crate) thickness: f32,
    pub(crate) friction: f32,
    pub(crate) air_damping: f32,
    pub(crate) collision_settings: CollisionSettings,
    pub(crate) collision: ClothCollision,
    /// The isometric model (Wang 2012) when the cloth uses it: the state is then its subdivided
    /// mesh, and `system` is only the Baraff–Witkin rest data of that mesh (unused by the step).
    pub(crate) isometric: Option<Box<IsometricCloth>>,
    /// The cloth's frame arena (`runtime::arena`): reset by `World::step` at the start of every
    /// frame, the scratch of the cloth's substeps comes from it.
    pub(crate) arena: FrameArena,
}

impl Cloth {
    /// Validates `desc` ([`Cloth::check_desc`]) and builds the cloth with every buffer sized.
    pub fn new(desc: ClothDesc) -> Result<Self, ClothError> {
        let topology = Cloth::check_desc(&desc)?;
        let mesh = desc.mesh;
        let n = mesh.num_vertices();
        let system = ImplicitEuler::new(&mesh, &topology, desc.model)?;
        let areas: Vec<f64> = system.triangle_rest().iter().map(|r| r.area).collect();
        let mass = lumped_masses(n, &mesh.triangles, &areas, f64::from(desc.density));
        // `ClothState::new` requires finite positive masses: a density and rest areas in range
        // can still multiply out of it.
        limits::check_vertex_masses("density", &mass)?;
        let mut state = ClothState::new(mesh.positions.clone(), mass);
        state.velocities_mut().fill(desc.initial_velocity);
        let mut pins = Vec::with_capacity(desc.pins.len());
        for &p in &desc.pins {
            if p as usize >= n {
                return Err(ClothError::Parameter {
                    name: "pins",
                    message: format!("pinned vertex {p} out of range (the cloth has {n} vertices)"),
                });
            }
            if state.is_pinned(p as usize) {
                continue;
            }
            state.set_pinned(p as usize, true);
            state.velocities_mut()[p as usize] = desc.pin_velocity;
            pins.push(PinTarget {
                vertex: p,
                target: mesh.positions[p as usize],
                velocity: desc.pin_velocity,
            });
        }
        let edges = topology.edges().to_vec();
        let rest_lengths = rest_edge_lengths(&mesh, &topology);
        let c = desc.collision;
        check_non_negative("collision.repulsion_stiffness", c.repulsion_stiffness)?;
        check_non_negative("collision.friction", c.friction)?;
        let collision =
            ClothCollision::new(&mesh.triangles, &edges, &rest_lengths, &mesh.positions);
        let ntri = mesh.num_triangles();
        Ok(Self {
            name: desc.name,
            triangles: mesh.triangles,
            edges,
            rest_lengths,
            backup: state.clone(),
            state,
            system,
            constraints: Constraints::new(n),
            pins,
            pin_tracks: Vec::new(),
            external: vec![Vec3::ZERO; n],
            measure_before: vec![0.0; ntri],
            measure_after: vec![0.0; ntri],
            thickness: desc.thickness,
            friction: desc.friction,
            air_damping: desc.air_damping,
            collision_settings: desc.collision,
            collision,
            isometric: None,
            arena: FrameArena::with_capacity(ntri * ARENA_BYTES_PER_TRIANGLE),
        })
    }

    /// Every check of [`Cloth::new`] that needs no solver data, in its order; returns the
    /// mesh's topology. The mesh: [`TriMesh::validate`], [`Topology::build`],
    /// [`TriMesh::check_slivers`], no isolated vertex, [`limits::check_cloth_geometry`]; then
    /// `density` (positive), `thickness` (the cloth's and the collision stage's, against
    /// the size and the median edge length, [`limits::check_thickness`]), `friction` and `air_damping` (non-negative), `velocity`
    /// and `pin_velocity` ([`limits::check_speed`]), and the lumped masses from the rest areas
    /// (material coordinates, else positions; [`limits::check_vertex_masses`], named
    /// `density`). Scene files run it when they load, to name the line of what it refuses.
    pub fn check_desc(desc: &ClothDesc) -> Result<Topology, ClothError> {
        let mesh = &desc.mesh;
        mesh.validate()?;
        let topology = Topology::build(mesh)?;
        mesh.check_slivers(&topology)?;
        let n = mesh.num_vertices();
        if let Some(v) = (0..n).find(|&v| topology.vertex_triangles(v).is_empty()) {
            return Err(ClothError::IsolatedVertex { vertex: v as u32 });
        }
        limits::check_cloth_geometry(&mesh.positions, mesh.corner_uvs.as_deref())?;
        check_positive("density", desc.density)?;
        let size = limits::cloth_size(&mesh.positions);
        let median_edge = mesh.median_edge_length(&topology) as f32;
        limits::check_thickness(desc.thickness, size, median_edge)?;
        limits::check_thickness(desc.collision.thickness, size, median_edge)?;
        check_non_negative("friction", desc.friction)?;
        check_non_negative("air_damping", desc.air_damping)?;
        limits::check_speed("velocity", desc.initial_velocity)?;
        limits::check_speed("pin_velocity", desc.pin_velocity)?;
        let areas: Vec<f64> = match &mesh.corner_uvs {
            Some(uvs) => uvs
                .iter()
                .map(|[a, b, c]| 0.5 * f64::from((*b - *a).perp_dot(*c - *a)).abs())
                .collect(),
            None => mesh
                .triangles
                .iter()
                .map(|t| {
                    let [a, b, c] = t.map(|i| mesh.positions[i as usize].as_dvec3());
                    0.5 * (b - a).cross(c - a).length()
                })
                .collect(),
        };
        let mass = lumped_masses(n, &mesh.triangles, &areas, f64::from(desc.density));
        limits::check_vertex_masses("density", &mass)?;
        Ok(topology)
    }

    /// Builds a cloth integrated by the isometric model of Wang 2012 (`crate::integrate::
    /// isometric_cloth`): `desc.mesh` is the input (base) mesh; the cloth's state, triangles,
    /// edges and every output are its 4:1 subdivision, black nodes first with the input's vertex
    /// indices (so `desc.pins`, given on the input mesh, pin black nodes). Masses are the areal
    /// density times ⅓ of the incident subdivided triangles' rest areas (Wang 2012 §3.1; `docs/methods/references.md`).
    /// `desc.model` (Baraff–Witkin) is not used by the step.
    pub fn new_isometric(desc: ClothDesc, iso: IsometricDesc) -> Result<Self, ClothError> {
        desc.mesh.validate()?;
        let nv = desc.mesh.num_vertices();
        if let Some(&p) = desc.pins.iter().find(|&&p| p as usize >= nv) {
            return Err(ClothError::Parameter {
                name: "pins",
                message: format!("pinned vertex {p} out of range (the cloth has {nv} vertices)"),
            });
        }
        let model = IsometricCloth::new(&desc.mesh, iso).map_err(|e| match e {
            IsometricClothError::Mesh(m) => ClothError::Mesh(m),
            other => ClothError::Isometric(other),
        })?;
        let mut cloth = Cloth::new(ClothDesc {
            mesh: model.mesh().clone(),
            ..desc
        })?;
        cloth.isometric = Some(Box::new(model));
        Ok(cloth)
    }

    /// The isometric model, when this cloth uses it.
    #[must_use]
    pub fn isometric(&self) -> Option<&IsometricCloth> {
        self.isometric.as_deref()
    }

    /// Name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state.
    #[must_use]
    pub fn state(&self) -> &ClothState {
        &self.state
    }

    /// Thickness η (m): the distance the cloth keeps from colliders, obstacles and itself.
    #[must_use]
    pub fn thickness(&self) -> f32 {
        self.thickness
    }

    /// Triangles (vertex indices) of the simulated and rendered mesh.
    #[must_use]
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Unique edges and their rest lengths (m).
    #[must_use]
    pub fn edges(&self) -> (&[[u32; 2]], &[f32]) {
        (&self.edges, &self.rest_lengths)
    }

    /// The Baraff–Witkin system (rest data, settings).
    #[must_use]
    pub fn system(&self) -> &ImplicitEuler {
        &self.system
    }

    /// Pinned vertices and their current targets.
    #[must_use]
    pub fn pins(&self) -> &[PinTarget] {
        &self.pins
    }

    /// The keyframed pin targets of this cloth ([`World::set_pin_track`]).
    #[must_use]
    pub fn pin_tracks(&self) -> &[PinTrack] {
        &self.pin_tracks
    }

    /// Stops tracking `vertex` in every pin track (the host took it over or freed
    /// it), drops emptied tracks and refreshes the slots into the pin list.
    fn forget_tracked_pin(&mut self, vertex: u32) {
        let mut changed = false;
        for t in &mut self.pin_tracks {
            changed |= t.forget(vertex);
        }
        if changed {
            self.pin_tracks.retain(|t| !t.is_empty());
        }
        for t in &mut self.pin_tracks {
            t.reslot(&self.pins);
        }
    }

    /// Sets the velocities of the tracked pins for a substep of length `h` ending at
    /// `t_end` on their tracks.
    fn drive_pin_tracks(&mut self, t_end: f64, h: f32) {
        for t in &self.pin_tracks {
            t.drive(&mut self.pins, t_end, h);
        }
    }

    /// Puts the tracked pins and their vertices exactly on their tracks at `t`.
    fn land_pin_tracks(&mut self, t: f64) {
        let x = self.state.positions_mut();
        for track in &self.pin_tracks {
            track.land(&mut self.pins, x, t);
        }
    }

    /// Largest edge strain |l / l0 − 1| now.
    #[must_use]
    pub fn max_strain(&self) -> f32 {
        let x = self.state.positions();
        self.edges
            .iter()
            .zip(&self.rest_lengths)
            .map(|(e, l0)| ((x[e[0] as usize] - x[e[1] as usize]).length() / l0 - 1.0).abs())
            .fold(0.0, f32::max)
    }

    /// Largest edge strain |l / l0 − 1| now over the free edges, the edges forced by pins and
    /// those forced by bodies (0 for a class without edges), as [`crate::collide::strain_limit::StrainLimiter::drive`] classifies
    /// them after the last collision stage (`collide::strain_limit`, "Forced edges").
    #[must_use]
    pub fn max_strain_by_drive(&self) -> [f32; 3] {
        let x = self.state.positions();
        let inv_mass = self.state.inv_masses();
        let limiter = self.collision.strain_limiter();
        let mut out = [0.0f32; 3];
        for (&e, l0) in self.edges.iter().zip(&self.rest_lengths) {
            let s = ((x[e[0] as usize] - x[e[1] as usize]).length() / l0 - 1.0).abs();
            let k = match limiter.drive(e, inv_mass) {
                EdgeDrive::Free => 0,
                EdgeDrive::Pins => 1,
                EdgeDrive::Bodies => 2,
            };
            out[k] = out[k].max(s);
        }
        out
    }

    /// Kinetic + gravitational + elastic energy (J); air drag and damping
    /// only ever remove it.
    #[must_use]
    pub fn total_energy(&self, gravity: Vec3) -> f64 {
        let x = self.state.positions();
        let potential: f64 = x
            .iter()
            .zip(self.state.masses())
            .map(|(p, m)| -f64::from(*m) * f64::from(gravity.dot(*p)))
            .sum();
        let elastic = match &self.isometric {
            Some(iso) => iso.bending_energy(),
            None => self.system.elastic_energy(x),
        };
        self.state.kinetic_energy() + potential + elastic
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

/// Rest lengths from the material coordinates when present (the first
/// triangle holding the edge), else from the initial positions.
fn rest_edge_lengths(mesh: &TriMesh, topology: &Topology) -> Vec<f32> {
    topology
        .edges()
        .iter()
        .enumerate()
        .map(|(e, &[a, b])| {
            if let Some(uvs) = &mesh.corner_uvs {
                let t = topology.edge_triangles(e)[0] as usize;
                let tri = mesh.triangles[t];
                let uv_of = |v: u32| -> Vec2 {
                    let k = tri
                        .iter()
                        .position(|&c| c == v)
                        .expect("edge vertex is a corner of its triangle");
                    uvs[t][k]
                };
                (uv_of(a) - uv_of(b)).length()
            } else {
                (mesh.positions[a as usize] - mesh.positions[b as usize]).length()
            }
        })
        .collect()
}

fn check_positive(name: &'static str, v: f32) -> Result<(), ClothError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ClothError::Parameter {
            name,
            message: format!("must be positive and finite, got {v}"),
        })
    }
}

fn check_non_negative(name: &'static str, v: f32) -> Result<(), ClothError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ClothError::Parameter {
            name,
            message: format!("must be non-negative and finite, got {v}"),
        })
    }
}

/// The world: cloths, colliders, settings and time.
#[derive(Debug)]
pub struct World {
    pub(crate) settings: WorldSettings,
    pub(crate) cloths: Vec<Cloth>,
    pub(crate) colliders: Vec<Collider>,
    pub(crate) collider_views: Vec<ColliderView>,
    /// Per collider: the obstacle vertices of its tessellation (`ObstacleMeshes`).
    collider_vertices: Vec<[u32; 2]>,
    pub(crate) obstacles: Vec<Obstacle>,
    obstacle_tris: Vec<[u32; 3]>,
    obstacle_x0: Vec<Vec3>,
    obstacle_x1: Vec<Vec3>,
    obstacle_friction: Vec<f32>,
    obstacle_thickness: Vec<f32>,
    /// Per obstacle vertex, the Coulomb coefficient the collision stage applies to isometric
    /// cloths: `obstacle_friction`, except on analytic colliders' tessellations, which carry the
    /// collider's own coefficient (an isometric cloth has no analytic contact filters to apply it).
    obstacle_contact_friction: Vec<f32>,
    /// Per obstacle vertex: it belongs to the tessellation of a curved analytic collider
    /// ([`Shape::repels_from_surface`]), whose repulsion the collision stage takes from the exact surface
    /// ([`ObstacleMeshes::analytic`]).
    obstacle_analytic: Vec<bool>,
    /// Keyframe tracks driving colliders and obstacle meshes.
    tracks: Vec<(Animated, Track)>,
    clock: Arc<dyn Clock>,
    /// The host's rayon pool; `None` runs in whatever pool calls `step`.
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Adapts the CG cap across frames (`Budget::governor`).
    governor: Governor,
    /// One frame's statistics per cloth, filled while the cloths step in
    /// parallel and folded into the frame's in cloth order (scratch: its
    /// capacity is kept, so steady frames do not allocate).
    cloth_stats: Vec<FrameStats>,
    time: f64,
    frame: u64,
}

impl World {
    /// An empty world.
    #[must_use]
    pub fn new(settings: WorldSettings) -> Self {
        Self {
            settings,
            cloths: Vec::new(),
            colliders: Vec::new(),
            collider_views: Vec::new(),
            collider_vertices: Vec::new(),
            obstacles: Vec::new(),
            obstacle_tris: Vec::new(),
            obstacle_x0: Vec::new(),
            obstacle_x1: Vec::new(),
            obstacle_friction: Vec::new(),
            obstacle_thickness: Vec::new(),
            obstacle_contact_friction: Vec::new(),
            obstacle_analytic: Vec::new(),
            tracks: Vec::new(),
            clock: Arc::new(SystemClock::new()),
            pool: None,
            governor: Governor::new(&settings.budget),
            cloth_stats: Vec::new(),
            time: 0.0,
            frame: 0,
        }
    }

    /// Replaces the clock that measures the frame deadline (tests inject one).
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// Runs every later [`World::step`] inside `pool` (the host's own rayon
    /// pool); `None` runs in the pool of the caller (rayon's global pool
    /// outside any). Results do not depend on the pool's thread count.
    pub fn set_thread_pool(&mut self, pool: Option<Arc<rayon::ThreadPool>>) {
        self.pool = pool;
    }

    /// Builds a pool of `threads` workers for this world (see
    /// [`World::set_thread_pool`]).
    pub fn set_threads(&mut self, threads: usize) -> Result<(), rayon::ThreadPoolBuildError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()?;
        self.pool = Some(Arc::new(pool));
        Ok(())
    }

    /// The pool `step` runs in, if the host set one.
    #[must_use]
    pub fn thread_pool(&self) -> Option<&Arc<rayon::ThreadPool>> {
        self.pool.as_ref()
    }

    /// Settings.
    #[must_use]
    pub fn settings(&self) -> &WorldSettings {
        &self.settings
    }

    /// Mutable settings (take effect at the next frame).
    pub fn settings_mut(&mut self) -> &mut WorldSettings {
        &mut self.settings
    }

    /// Adds a cloth; returns its index.
    pub fn add_cloth(&mut self, desc: ClothDesc) -> Result<usize, ClothError> {
        let cloth = Cloth::new(desc)?;
        Ok(self.push_cloth(cloth))
    }

    /// Adds a cloth integrated by the isometric model of Wang 2012 ([`Cloth::new_isometric`]);
    /// returns its index.
    pub fn add_isometric_cloth(
        &mut self,
        desc: ClothDesc,
        iso: IsometricDesc,
    ) -> Result<usize, ClothError> {
        let cloth = Cloth::new_isometric(desc, iso)?;
        Ok(self.push_cloth(cloth))
    }

    fn push_cloth(&mut self, mut cloth: Cloth) -> usize {
        if let Some(iso) = cloth.isometric.as_mut() {
            iso.collision_mut()
                .set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
            iso.collision_mut()
                .set_obstacle_thickness(&self.obstacle_thickness);
        }
        cloth
            .collision
            .set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
        cloth
            .collision
            .set_obstacle_thickness(&self.obstacle_thickness);
        self.cloths.push(cloth);
        self.cloths.len() - 1
    }

    /// Adds a triangle-mesh obstacle; returns its index. Every cloth's
    /// collision data is rebuilt for the new obstacle soup (creation time).
    pub fn add_obstacle(&mut self, desc: ObstacleDesc) -> Result<usize, MeshError> {
        // Coordinates first: one vertex far out makes every other triangle degenerate at the
        // mesh's scale, and the range is the real fault.
        limits::check_points("positions", &desc.mesh.positions)?;
        desc.mesh.validate()?;
        check_pose(&desc.pose)?;
        check_motion(&desc.motion)?;
        limits::check_obstacle_thickness(desc.thickness, limits::cloth_size(&desc.mesh.positions))?;
        let offset = self.obstacle_x0.len();
        let base = offset as u32;
        self.obstacle_tris
            .extend(desc.mesh.triangles.iter().map(|t| t.map(|i| i + base)));
        let obstacle = Obstacle {
            pose: desc.pose,
            offset,
            desc,
        };
        let n = obstacle.desc.mesh.num_vertices();
        self.obstacle_x0.resize(offset + n, Vec3::ZERO);
        self.obstacle_x1.resize(offset + n, Vec3::ZERO);
        self.obstacle_friction
            .resize(offset + n, obstacle.desc.friction.max(0.0));
        self.obstacle_thickness
            .resize(offset + n, obstacle.desc.thickness);
        self.obstacle_contact_friction
            .resize(offset + n, obstacle.desc.friction.max(0.0));
        self.obstacle_analytic.resize(offset + n, false);
        obstacle.place(&obstacle.pose, &mut self.obstacle_x0[offset..]);
        self.obstacles.push(obstacle);
        for c in &mut self.cloths {
            c.collision
                .set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
            c.collision.set_obstacle_thickness(&self.obstacle_thickness);
            if let Some(iso) = c.isometric.as_mut() {
                iso.collision_mut()
                    .set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
                iso.collision_mut()
                    .set_obstacle_thickness(&self.obstacle_thickness);
            }
        }
        Ok(self.obstacles.len() - 1)
    }

    /// The triangle-mesh obstacles.
    #[must_use]
    pub fn obstacles(&self) -> &[Obstacle] {
        &self.obstacles
    }

    /// World positions of every obstacle vertex now, and the soup's triangles.
    #[must_use]
    pub fn obstacle_soup(&self) -> (&[Vec3], &[[u32; 3]]) {
        (&self.obstacle_x0, &self.obstacle_tris)
    }

    /// Adds an analytic collider; returns its index.
    ///
    /// The shape acts twice: analytically, as velocity filters inside the
    /// cloth solve (smooth resting contact and friction), and tessellated, as
    /// an obstacle mesh moving with it in the collision stage (so CCD and
    /// impact zones guarantee the cloth never passes through it, and cloth–cloth
    /// impulses never push a layer into it). The tessellation lies inside the
    /// analytic surface (by at most about 0.34 mm for a 0.3 m sphere: the largest
    /// face-centre gap of the level-4 icosphere, growing with the radius), so the two
    /// agree on which side the cloth is. For a Baraff–Witkin cloth whose edges
    /// are short against its radius (`ClothCollision::meets_exact_surface`), the
    /// collision stage's repulsion and friction meet a sphere or capsule
    /// ([`Shape::repels_from_surface`]) through its exact surface, vertex by vertex
    /// (`ObstacleMeshes::analytic`), and its tessellation only in the CCD rounds
    /// and impact zones; otherwise (a thin rod, an isometric cloth, a plane or a
    /// box) the tessellation takes part in all three.
    pub fn add_collider(&mut self, desc: ColliderDesc) -> Result<usize, MeshError> {
        check_shape(&desc.shape)?;
        check_pose(&desc.pose)?;
        check_motion(&desc.motion)?;
        let mesh = tessellate(&desc.shape)?;
        // Friction 0 on the tessellation: the solve's contact filters apply
        // this collider's friction already.
        let obstacle = self.add_obstacle(ObstacleDesc {
            mesh,
            pose: desc.pose,
            motion: desc.motion,
            friction: 0.0,
            // The analytic contact keeps the cloth's thickness from the
            // surface; its tessellation adds nothing.
            thickness: 0.0,
        })?;
        let range = self.obstacles[obstacle].offset..self.obstacle_x0.len();
        self.obstacle_contact_friction[range.clone()].fill(desc.friction.max(0.0));
        self.obstacle_analytic[range].fill(desc.shape.repels_from_surface());
        self.colliders.push(Collider {
            desc,
            pose: desc.pose,
            obstacle,
        });
        self.collider_views = Vec::with_capacity(self.colliders.len());
        self.collider_vertices = Vec::with_capacity(self.colliders.len());
        Ok(self.colliders.len() - 1)
    }

    /// Makes a collider or obstacle mesh follow keyframed poses from now on
    /// (replacing its prescribed velocities and any earlier track). The body
    /// is placed at the track's pose for the current time at once (this is a
    /// set-up call, not a step); every frame then moves it at the constant
    /// velocities that reach the track's pose at the frame's end
    /// ([`Track::motion_to`]).
    ///
    /// # Errors
    /// [`TrackError::NoBody`] if the index names no collider or obstacle.
    pub fn set_track(&mut self, body: Animated, track: Track) -> Result<(), TrackError> {
        let pose = track.pose_at(self.time);
        let obstacle = match body {
            Animated::Collider(i) => {
                let count = self.colliders.len();
                let c = self.colliders.get_mut(i).ok_or(TrackError::NoBody {
                    what: "collider",
                    index: i,
                    count,
                })?;
                c.pose = pose;
                c.desc.motion = Motion::default();
                c.obstacle
            }
            Animated::Obstacle(i) => {
                if i >= self.obstacles.len() {
                    return Err(TrackError::NoBody {
                        what: "obstacle",
                        index: i,
                        count: self.obstacles.len(),
                    });
                }
                i
            }
        };
        let o = &mut self.obstacles[obstacle];
        o.pose = pose;
        o.desc.motion = Motion::default();
        let range = o.offset..o.offset + o.desc.mesh.num_vertices();
        o.place(&pose, &mut self.obstacle_x0[range]);
        self.tracks.retain(|(b, _)| *b != body);
        self.tracks.push((body, track));
        Ok(())
    }

    /// Sets this frame's velocities of every keyframed body: those reaching
    /// its track's pose at `t_end` from where it is now, in `dt`.
    fn drive_tracks(&mut self, t_end: f64, dt: f32) {
        for (body, track) in &self.tracks {
            let obstacle = match *body {
                Animated::Collider(i) => {
                    let c = &mut self.colliders[i];
                    c.desc.motion = track.motion_to(&c.pose, t_end, dt);
                    c.obstacle
                }
                Animated::Obstacle(i) => i,
            };
            let o = &mut self.obstacles[obstacle];
            o.desc.motion = track.motion_to(&o.pose, t_end, dt);
        }
    }

    /// The cloths.
    #[must_use]
    pub fn cloths(&self) -> &[Cloth] {
        &self.cloths
    }

    /// The colliders.
    #[must_use]
    pub fn colliders(&self) -> &[Collider] {
        &self.colliders
    }

    /// Simulated time (s).
    #[must_use]
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Frames stepped so far.
    #[must_use]
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Hash of every cloth's positions and velocities, in cloth order.
    #[must_use]
    pub fn state_hash(&self) -> u64 {
        let mut h = StateHasher::new();
        for c in &self.cloths {
            h.write_vec3s(c.state.positions());
            h.write_vec3s(c.state.velocities());
        }
        h.finish()
    }

    /// What [`World::step`] checks before it changes anything: `dt` and its substeps in their
    /// ranges ([`limits::check_frame_dt`]) and the gravity ([`limits::check_gravity`], which
    /// [`World::settings_mut`] may have changed).
    pub fn check_step(&self, dt: f32) -> Result<(), StepError> {
        limits::check_frame_dt(dt, self.settings.substeps).map_err(|e| StepError::BadTimeStep {
            dt,
            message: e.message,
        })?;
        limits::check_gravity(self.settings.gravity).map_err(StepError::Settings)
    }

    /// Advances one frame of length `dt` (s), inside the world's thread pool
    /// when one is set. A refused `dt` ([`World::check_step`]) changes nothing.
    pub fn step(&mut self, dt: f32) -> Result<FrameStats, StepError> {
        match self.pool.clone() {
            Some(pool) => pool.install(|| self.step_frame(dt)),
            None => self.step_frame(dt),
        }
    }

    fn step_frame(&mut self, dt: f32) -> Result<FrameStats, StepError> {
        // Checked before anything moves: a refused frame leaves the world as it was.
        self.check_step(dt)?;
        let t0 = self.clock.now();
        let mut deadline = Deadline::start(self.clock.clone(), self.settings.budget.frame_ms);
        let mut stats = FrameStats::default();
        // The governor's CG cap for this frame (the budget's in fixed mode).
        let mut settings = self.settings;
        settings.budget.cg_max_iterations = self.governor.cg_cap(&self.settings.budget);
        let substeps = self.settings.substeps.max(1);
        let h = dt / substeps as f32;
        self.cloth_stats.clear();
        self.cloth_stats
            .resize(self.cloths.len(), FrameStats::default());
        self.drive_tracks(self.time + f64::from(dt), dt);
        // Last frame's scratch is freed; each arena keeps its largest chunk.
        for cloth in &mut self.cloths {
            cloth.arena.reset();
        }
        for k in 0..substeps {
            // The gusting wind is sampled at the start of each substep and
            // held steady through it.
            let mut settings = settings;
            if let Some(w) = settings.wind.as_mut() {
                w.velocity = w.velocity_at(self.time + f64::from(h) * f64::from(k));
                w.gust = 0.0;
            }
            self.collider_views.clear();
            self.collider_views
                .extend(self.colliders.iter().map(Collider::view));
            self.collider_vertices.clear();
            self.collider_vertices
                .extend(self.colliders.iter().map(|c| {
                    let o = &self.obstacles[c.obstacle];
                    [
                        o.offset as u32,
                        (o.offset + o.desc.mesh.num_vertices()) as u32,
                    ]
                }));
            for o in &mut self.obstacles {
                let next = o.desc.motion.advance(&o.pose, h);
                let range = o.offset..o.offset + o.desc.mesh.num_vertices();
                o.place(&o.pose, &mut self.obstacle_x0[range.clone()]);
                o.place(&next, &mut self.obstacle_x1[range]);
                o.pose = next;
            }
            let obstacles = ObstacleMeshes {
                x0: &self.obstacle_x0,
                x1: &self.obstacle_x1,
                friction: &self.obstacle_friction,
                analytic: &self.obstacle_analytic,
                colliders: &self.collider_views,
                collider_vertices: &self.collider_vertices,
                s0: 0.0,
                s1: 1.0,
            };
            // Isometric cloths have no analytic contact filters: the collision stage applies
            // the colliders' friction on their tessellations.
            // They also repel from the tessellations (no vertex–surface proximity).
            let obstacles_isometric = ObstacleMeshes {
                friction: &self.obstacle_contact_friction,
                analytic: &[],
                colliders: &[],
                collider_vertices: &[],
                ..obstacles
            };
            // The cloths are independent within a substep (no contact
            // between different cloths), so they step in parallel, each
            // with its own statistics and its own copy of the deadline; the
            // result of each cloth does not depend on the thread count.
            let views = &self.collider_views;
            let frame_deadline = &deadline;
            // Where keyframed pins must be at the end of this substep (the last one
            // ends exactly at the frame's end).
            let t_substep_end = if k + 1 == substeps {
                self.time + f64::from(dt)
            } else {
                self.time + f64::from(h) * f64::from(k + 1)
            };
            self.cloths
                .par_iter_mut()
                .zip(self.cloth_stats.par_iter_mut())
                .for_each(|(cloth, cloth_stats)| {
                    let obstacles = if cloth.isometric.is_some() {
                        &obstacles_isometric
                    } else {
                        &obstacles
                    };
                    let mut deadline = frame_deadline.clone();
                    // Moved out for the substep so the pipeline can borrow the
                    // cloth mutably and its arena shared (an empty `Bump` in its
                    // place allocates nothing).
                    let arena = std::mem::take(&mut cloth.arena);
                    cloth.drive_pin_tracks(t_substep_end, h);
                    pipeline::substep(
                        cloth,
                        arena.bump(),
                        views,
                        obstacles,
                        &settings,
                        h,
                        &mut deadline,
                        cloth_stats,
                    );
                    cloth.arena = arena;
                    cloth.land_pin_tracks(t_substep_end);
                    cloth_stats.deadline_hit |= deadline.was_hit();
                });
            if self.cloth_stats.iter().any(|s| s.deadline_hit) {
                deadline.latch();
            }
            for c in &mut self.colliders {
                c.advance(h);
            }
        }
        // Fixed (cloth) order, whatever thread stepped which cloth.
        for (cloth, cloth_stats) in self.cloths.iter().zip(&mut self.cloth_stats) {
            cloth_stats.arena_bytes = cloth_stats.arena_bytes.max(cloth.arena.used_bytes() as u64);
            cloth_stats.pool_overflows += u32::from(cloth.arena.grew());
            stats.merge(cloth_stats);
        }
        // Obstacle positions now (the end of the last substep).
        self.obstacle_x0.copy_from_slice(&self.obstacle_x1);
        self.time += f64::from(dt);
        self.frame += 1;
        for (i, c) in self.cloths.iter().enumerate() {
            if !c.state.is_finite() {
                return Err(StepError::NonFinite {
                    cloth: i,
                    name: c.name.clone(),
                    frame: self.frame,
                });
            }
            stats.max_strain = stats.max_strain.max(c.max_strain());
            let [free, pins, bodies] = c.max_strain_by_drive();
            stats.max_strain_free = stats.max_strain_free.max(free);
            stats.max_strain_pins = stats.max_strain_pins.max(pins);
            stats.max_strain_bodies = stats.max_strain_bodies.max(bodies);
            let [free, pins, bodies] = c.max_strain_by_drive();
            stats.max_strain_free = stats.max_strain_free.max(free);
            stats.max_strain_pins = stats.max_strain_pins.max(pins);
            stats.max_strain_bodies = stats.max_strain_bodies.max(bodies);
            if let Some(iso) = &c.isometric {
                let strain = iso.base_edge_strain();
                stats.base_strain_midpoint =
                    stats.base_strain_midpoint.max(strain.through_midpoint);
                stats.base_strain_end_to_end = stats.base_strain_end_to_end.max(strain.end_to_end);
                stats.bending_energy += iso.bending_energy();
                stats.row_strain = stats.row_strain.max(iso.row_strain());
            }
            if self.settings.energy_stats {
                stats.energy += c.total_energy(self.settings.gravity);
            }
        }
        stats.deadline_hit = deadline.was_hit();
        stats.frame_ms = (self.clock.now() - t0) * 1e3;
        stats.cg_cap = settings.budget.cg_max_iterations;
        self.governor.observe(
            &self.settings.budget,
            stats.frame_ms,
            stats.stage_ms.get(crate::runtime::profile::Stage::Solve),
            stats.cg_iterations,
            stats.substeps + stats.rejected_substeps,
        );
        crate::runtime::profile::frame_end(&stats, self.settings.budget.frame_ms);
        Ok(stats)
    }
}

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
        Ok(self.cloths.remove(index))
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
        for c in &mut self.cloths {
            c.collision
                .set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
            c.collision.set_obstacle_thickness(&self.obstacle_thickness);
            if let Some(iso) = c.isometric.as_mut() {
                iso.collision_mut()
                    .set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
                iso.collision_mut()
                    .set_obstacle_thickness(&self.obstacle_thickness);
            }
        }
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

impl From<RangeError> for EditError {
    fn from(e: RangeError) -> Self {
        EditError::Value {
            what: e.what,
            message: e.message,
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

/// Collision-aware Loop subdivision of the cloths' output meshes (Bridson 2002,
/// Bridson et al. 2002 §7; [`crate::collide::subdivision`]): what `weft run
/// --subdivide K` writes and draws. Output only: the simulated state is not touched.
impl World {
    /// One [`CollisionAwareSubdivision`] of `levels` Loop levels per cloth, in cloth order,
    /// with the obstacle soup as it is now. Built once per run.
    ///
    /// Errors: `levels` outside `1..=`[`MAX_LOOP_LEVELS`](crate::mesh::MAX_LOOP_LEVELS)
    /// ([`MeshError::InvalidParameter`] named `levels`), or a level past the `u32` index range.
    pub fn output_subdivisions(
        &self,
        levels: u32,
    ) -> Result<Vec<CollisionAwareSubdivision>, MeshError> {
        self.cloths
            .iter()
            .map(|c| {
                let mut sub =
                    CollisionAwareSubdivision::new(&c.triangles, c.state.positions(), levels)?;
                sub.set_obstacles(
                    &self.obstacle_tris,
                    &self.obstacle_x0,
                    &self.obstacle_thickness,
                );
                Ok(sub)
            })
            .collect()
    }

    /// The collision-aware subdivided positions of cloth `cloth` now (triangles:
    /// [`CollisionAwareSubdivision::triangles`]), against itself and the obstacle meshes at
    /// their current pose, with the cloth's thickness ([`pseudo_step_settings`]). `sub` must
    /// come from [`World::output_subdivisions`] for this cloth; if obstacles were added or
    /// removed since, it takes the new soup first (a rebuild of its obstacle trees).
    ///
    /// # Panics
    /// If `cloth` is out of range or `sub` was built for a cloth of another vertex count.
    pub fn subdivide_output<'a>(
        &self,
        cloth: usize,
        sub: &'a mut CollisionAwareSubdivision,
    ) -> (&'a [Vec3], SubdivisionStats) {
        let c = &self.cloths[cloth];
        if sub.num_obstacle_vertices() != self.obstacle_x0.len() {
            sub.set_obstacles(
                &self.obstacle_tris,
                &self.obstacle_x0,
                &self.obstacle_thickness,
            );
        }
        let settings = pseudo_step_settings(&c.collision_settings);
        sub.apply(&settings, c.state.positions(), &self.obstacle_x0)
    }
}
