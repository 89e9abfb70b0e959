//! The simulation world: cloths, colliders, settings, and the frame entry point.
//!
//! A [`World`] owns everything a frame touches. Cloths are created from a
//! [`ClothDesc`] (validated, then every buffer a step needs is sized once);
//! colliders from a [`ColliderDesc`]. [`World::step`] advances one frame by
//! running the substep pipeline of [`crate::pipeline`] over every cloth.
#![deny(unsafe_code)]

mod bodies;
mod cloth;
mod edit;
mod frame;
pub(crate) mod ids;
pub(crate) mod layers;
mod output;
mod undo;

pub use bodies::{Animated, Collider, ColliderDesc, Obstacle, ObstacleDesc, motion_between};
pub(crate) use bodies::{check_motion, check_pose, check_shape, tessellate};
pub use cloth::{Cloth, ClothDesc, ClothError};
pub use edit::EditError;
pub use ids::{ClothId, ColliderId, ObstacleId};

use std::sync::Arc;

use glam::Vec3;

use crate::collide::shapes::Motion;
use crate::collide::track::Track;
use crate::integrate::contact::ColliderView;
use crate::integrate::isometric_cloth::{IsometricCloth, IsometricDesc};
use crate::limits::{self, RangeError};
use crate::mesh::MeshError;
use crate::pipeline::StepEnv;
use crate::runtime::arena::FrameArena;
use crate::runtime::budget::{Budget, Clock, Governor, SystemClock};
use crate::runtime::executor::{Executor, TaskDispatcher, TaskError};
use crate::runtime::stats::FrameStats;
use crate::state::StateHasher;
use bodies::Body;
use ids::Ids;

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

impl WorldSettings {
    /// What a substep reads of these settings.
    pub(crate) fn step_env(&self) -> StepEnv<'_> {
        StepEnv {
            gravity: self.gravity,
            wind: self.wind.as_ref(),
            budget: self.budget,
            step_control: self.step_control,
        }
    }
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

pub use crate::pipeline::StepControl;

/// Why an id can always be issued: every id holds buffers, so a world runs out of memory long
/// before it has 2^32 live objects of a kind.
const ID_SPACE: &str = "fewer than 2^32 live objects of a kind";

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
    /// An isometric and a Baraff–Witkin cloth may touch in this frame, and nothing tells them
    /// not to collide: the two models' steps cannot share a collision stage (two isometric
    /// cloths can, as can two Baraff–Witkin ones; `docs/methods/cloth-layers.md`). Refused
    /// before anything changes.
    #[error(
        "cloths {first} ({first_name}) and {second} ({second_name}) may touch in this frame, and \
         one is isometric, the other Baraff–Witkin: collisions between cloths of the two models \
         are not supported; keep them apart, tell them not to collide (`no_collide_with`), or \
         give both the same model"
    )]
    UnsupportedLayers {
        /// The first cloth (creation order).
        first: usize,
        /// Its name.
        first_name: String,
        /// The second cloth.
        second: usize,
        /// Its name.
        second_name: String,
    },
    /// The host's task dispatcher ([`World::set_task_dispatcher`]) broke its contract, or a
    /// task panicked (caught inside the task). The cloths whose tasks ran have taken the
    /// substep; the frame is not counted.
    #[error("frame {frame}: {error}")]
    Tasks {
        /// The frame that failed.
        frame: u64,
        /// What went wrong.
        error: TaskError,
    },
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
    tracks: Vec<(Body, Track)>,
    cloth_ids: Ids<ClothId>,
    collider_ids: Ids<ColliderId>,
    obstacle_ids: Ids<ObstacleId>,
    clock: Arc<dyn Clock>,
    /// The host's rayon pool; `None` runs in whatever pool calls `step`.
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Who runs the substeps' independent units: rayon, or the host's dispatcher.
    executor: Executor,
    /// The substep's units of work (`frame.rs`), reset every substep.
    schedule: FrameArena,
    /// Adapts the CG cap across frames (`Budget::governor`).
    governor: Governor,
    /// One frame's statistics per cloth, filled while the cloths step in
    /// parallel and folded into the frame's in cloth order (scratch: its
    /// capacity is kept, so steady frames do not allocate).
    cloth_stats: Vec<FrameStats>,
    /// Which cloths meet each other: the groups sharing a collision stage, the pairs kept
    /// apart (`layers.rs`).
    pub(crate) layers: layers::Layers,
    time: f64,
    frame: u64,
    /// What the world carried into the current step, put back if it fails (`undo.rs`).
    undo: undo::WorldUndo,
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
            cloth_ids: Ids::default(),
            collider_ids: Ids::default(),
            obstacle_ids: Ids::default(),
            clock: Arc::new(SystemClock::new()),
            pool: None,
            executor: Executor::Rayon,
            schedule: FrameArena::default(),
            governor: Governor::new(&settings.budget),
            cloth_stats: Vec::new(),
            layers: layers::Layers::default(),
            time: 0.0,
            frame: 0,
            undo: undo::WorldUndo::default(),
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

    /// Runs the independent units of every later [`World::step`] (the cloths and groups of
    /// cloths that cannot touch in a substep) as tasks of the host's job system; `None`
    /// returns to rayon (the pool of [`World::set_thread_pool`]). Under a dispatcher the whole
    /// step runs on the calling thread and the dispatcher's: every parallel loop inside a
    /// cloth runs inline in its task, in the same chunks, so `state_hash` is the same as with
    /// any pool (`runtime::executor`, `docs/methods/threading.md`).
    pub fn set_task_dispatcher(&mut self, dispatcher: Option<Arc<dyn TaskDispatcher>>) {
        self.executor = dispatcher.map_or(Executor::Rayon, Executor::Host);
    }

    /// Whether a host's task dispatcher runs the steps.
    #[must_use]
    pub fn has_task_dispatcher(&self) -> bool {
        matches!(self.executor, Executor::Host(_))
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

    /// Adds a cloth; returns its id.
    pub fn add_cloth(&mut self, desc: ClothDesc) -> Result<ClothId, ClothError> {
        let cloth = Cloth::new(desc)?;
        Ok(self.push_cloth(cloth))
    }

    /// Adds a cloth integrated by the isometric model of Wang 2012 ([`Cloth::new_isometric`]);
    /// returns its id.
    pub fn add_isometric_cloth(
        &mut self,
        desc: ClothDesc,
        iso: IsometricDesc,
    ) -> Result<ClothId, ClothError> {
        let cloth = Cloth::new_isometric(desc, iso)?;
        Ok(self.push_cloth(cloth))
    }

    fn push_cloth(&mut self, mut cloth: Cloth) -> ClothId {
        let collision = cloth.sim.model.collision_mut();
        collision.set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
        collision.set_obstacle_thickness(&self.obstacle_thickness);
        if let Some(iso) = cloth.sim.model.isometric_mut() {
            let mesh = self.mesh_obstacle_vertices();
            self.set_mesh_obstacles(iso, &mesh);
        }
        self.cloths.push(cloth);
        self.layers.reset(self.cloths.len());
        self.schedule = FrameArena::with_capacity(frame::schedule_bytes(self.cloths.len()));
        self.cloth_ids.push().expect(ID_SPACE)
    }

    /// Adds a triangle-mesh obstacle; returns its id. Every cloth's
    /// collision data is rebuilt for the new obstacle soup (creation time).
    pub fn add_obstacle(&mut self, desc: ObstacleDesc) -> Result<ObstacleId, MeshError> {
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
        self.share_obstacles_with_cloths();
        Ok(self.obstacle_ids.push().expect(ID_SPACE))
    }

    /// The triangle-mesh obstacles.
    #[must_use]
    pub fn obstacles(&self) -> &[Obstacle] {
        &self.obstacles
    }

    /// Whether obstacle `i` (a mesh obstacle or a collider's tessellation) moves as the world is
    /// set up now: it, or the collider it tessellates, has a nonzero prescribed motion or is
    /// driven by a keyframe track. False for an index out of range. (A host that sets poses
    /// between steps moves bodies this cannot foresee.)
    #[must_use]
    pub fn obstacle_moves(&self, i: usize) -> bool {
        let Some(o) = self.obstacles.get(i) else {
            return false;
        };
        let collider_of = |c: usize| self.colliders.get(c).is_some_and(|c| c.obstacle == i);
        !o.desc.motion.is_static()
            || self
                .colliders
                .iter()
                .any(|c| c.obstacle == i && !c.desc.motion.is_static())
            || self.tracks.iter().any(|(b, _)| match *b {
                Body::Obstacle(j) => j == i,
                Body::Collider(c) => collider_of(c),
            })
    }

    /// World positions of every obstacle vertex now, and the soup's triangles.
    #[must_use]
    pub fn obstacle_soup(&self) -> (&[Vec3], &[[u32; 3]]) {
        (&self.obstacle_x0, &self.obstacle_tris)
    }

    /// Adds an analytic collider; returns its id.
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
    pub fn add_collider(&mut self, desc: ColliderDesc) -> Result<ColliderId, MeshError> {
        check_shape(&desc.shape)?;
        check_pose(&desc.pose)?;
        check_motion(&desc.motion)?;
        let mesh = tessellate(&desc.shape)?;
        // Friction 0 on the tessellation: the solve's contact filters apply
        // this collider's friction already.
        let obstacle_id = self.add_obstacle(ObstacleDesc {
            mesh,
            pose: desc.pose,
            motion: desc.motion,
            friction: 0.0,
            // The analytic contact keeps the cloth's thickness from the
            // surface; its tessellation adds nothing.
            thickness: 0.0,
        })?;
        let obstacle = self.obstacles.len() - 1;
        debug_assert_eq!(self.obstacle_ids.place(obstacle_id), Some(obstacle));
        let range = self.obstacles[obstacle].offset..self.obstacle_x0.len();
        self.obstacle_contact_friction[range.clone()].fill(desc.friction.max(0.0));
        self.obstacle_analytic[range].fill(desc.shape.repels_from_surface());
        self.colliders.push(Collider {
            desc,
            pose: desc.pose,
            obstacle,
        });
        // The new tessellation is a collider's, not a mesh obstacle.
        self.share_mesh_obstacles();
        self.collider_views = Vec::with_capacity(self.colliders.len());
        self.collider_vertices = Vec::with_capacity(self.colliders.len());
        Ok(self.collider_ids.push().expect(ID_SPACE))
    }

    /// Makes a collider or obstacle mesh follow keyframed poses from now on
    /// (replacing its prescribed velocities and any earlier track). The body
    /// is placed at the track's pose for the current time at once (this is a
    /// set-up call, not a step); every frame then moves it at the constant
    /// velocities that reach the track's pose at the frame's end
    /// ([`Track::motion_to`]).
    ///
    /// # Errors
    /// [`EditError::NoCollider`] or [`EditError::NoObstacle`] if the id names no body of this
    /// world.
    pub fn set_track(&mut self, body: Animated, track: Track) -> Result<(), EditError> {
        let pose = track.pose_at(self.time);
        let (body, obstacle) = match body {
            Animated::Collider(id) => {
                let i = self.collider_place(id)?;
                let c = &mut self.colliders[i];
                c.pose = pose;
                c.desc.motion = Motion::default();
                (Body::Collider(i), c.obstacle)
            }
            Animated::Obstacle(id) => {
                let i = self.obstacle_place(id)?;
                (Body::Obstacle(i), i)
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

    /// Hands every cloth's collision stage (and an isometric cloth's own) the world's
    /// obstacle soup and its per-vertex thickness, after the soup changed.
    fn share_obstacles_with_cloths(&mut self) {
        // The groups' shared stages hold the old obstacle soup.
        self.layers.reset(self.cloths.len());
        self.schedule = FrameArena::with_capacity(frame::schedule_bytes(self.cloths.len()));
        for c in &mut self.cloths {
            let collision = c.sim.model.collision_mut();
            collision.set_obstacles(&self.obstacle_tris, &self.obstacle_x0);
            collision.set_obstacle_thickness(&self.obstacle_thickness);
        }
        self.share_mesh_obstacles();
    }

    /// Hands every isometric cloth the mesh obstacles its contact rows follow, after the soup
    /// or the set of colliders changed.
    fn share_mesh_obstacles(&mut self) {
        let mesh = self.mesh_obstacle_vertices();
        let mut cloths = std::mem::take(&mut self.cloths);
        for c in &mut cloths {
            if let Some(iso) = c.sim.model.isometric_mut() {
                self.set_mesh_obstacles(iso, &mesh);
            }
        }
        self.cloths = cloths;
    }

    /// Per vertex of the obstacle soup: whether it belongs to an obstacle given as a mesh (not
    /// to the tessellation of an analytic collider).
    fn mesh_obstacle_vertices(&self) -> Vec<bool> {
        let mut mesh = vec![true; self.obstacle_x0.len()];
        for c in &self.colliders {
            let o = &self.obstacles[c.obstacle];
            mesh[o.offset..o.offset + o.desc.mesh.num_vertices()].fill(false);
        }
        mesh
    }

    /// Hands an isometric cloth the mesh obstacles its contact rows follow
    /// ([`IsometricCloth::set_mesh_obstacles`]); `mesh` from
    /// [`World::mesh_obstacle_vertices`].
    fn set_mesh_obstacles(&self, iso: &mut IsometricCloth, mesh: &[bool]) {
        iso.set_mesh_obstacles(
            &self.obstacle_tris,
            mesh,
            &self.obstacle_thickness,
            &self.obstacle_contact_friction,
            &self.obstacle_x0,
        );
    }

    /// Sets this frame's velocities of every keyframed body: those reaching
    /// its track's pose at `t_end` from where it is now, in `dt`.
    fn drive_tracks(&mut self, t_end: f64, dt: f32) {
        for (body, track) in &self.tracks {
            let obstacle = match *body {
                Body::Collider(i) => {
                    let c = &mut self.colliders[i];
                    c.desc.motion = track.motion_to(&c.pose, t_end, dt);
                    c.obstacle
                }
                Body::Obstacle(i) => i,
            };
            let o = &mut self.obstacles[obstacle];
            o.desc.motion = track.motion_to(&o.pose, t_end, dt);
        }
    }

    /// The cloths, in creation order (the order of every stage, output and `state_hash`).
    #[must_use]
    pub fn cloths(&self) -> &[Cloth] {
        &self.cloths
    }

    /// The ids of [`World::cloths`], in the same order.
    #[must_use]
    pub fn cloth_ids(&self) -> &[ClothId] {
        self.cloth_ids.as_slice()
    }

    /// Cloth `id`, if this world has it.
    #[must_use]
    pub fn cloth(&self, id: ClothId) -> Option<&Cloth> {
        self.cloth_ids.place(id).map(|i| &self.cloths[i])
    }

    /// The analytic colliders, in creation order.
    #[must_use]
    pub fn colliders(&self) -> &[Collider] {
        &self.colliders
    }

    /// The ids of [`World::colliders`], in the same order.
    #[must_use]
    pub fn collider_ids(&self) -> &[ColliderId] {
        self.collider_ids.as_slice()
    }

    /// Collider `id`, if this world has it.
    #[must_use]
    pub fn collider(&self, id: ColliderId) -> Option<&Collider> {
        self.collider_ids.place(id).map(|i| &self.colliders[i])
    }

    /// The ids of [`World::obstacles`], in the same order.
    #[must_use]
    pub fn obstacle_ids(&self) -> &[ObstacleId] {
        self.obstacle_ids.as_slice()
    }

    /// Obstacle `id`, if this world has it.
    #[must_use]
    pub fn obstacle(&self, id: ObstacleId) -> Option<&Obstacle> {
        self.obstacle_ids.place(id).map(|i| &self.obstacles[i])
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
            h.write_vec3s(c.sim.state.positions());
            h.write_vec3s(c.sim.state.velocities());
        }
        h.finish()
    }
}
