//! The collision stage of Bridson, Fedkiw & Anderson 2002 for one cloth.
//!
//! Given start positions x^n and candidate velocities v^{n+1/2} from the
//! internal dynamics, it changes velocities only (METHODS-bw-bridson §3.1), in
//! this order:
//!
//! 1. strain limiting (§3.2), optional — and again before every CCD round
//!    (a departure: impulses stop some vertices while their neighbours move on,
//!    and limiting the strain inside the rounds lets the neighbours feel it
//!    before CCD checks the result, as ARCSim does; on pile-33 with
//!    self-collision it lowered the largest strain from 59% to 33%);
//! 2. repulsion and friction for every pair closer than the thickness η at x^n
//!    (§3.4–3.8): an inelastic impulse, a capped spring impulse, Coulomb friction;
//!    against a curved analytic collider (sphere, capsule), for every cloth vertex closer than η
//!    to its exact surface, or arriving within η during the substep, instead of its tessellation's pairs
//!    ([`ObstacleMeshes::analytic`], `ClothCollision::repel_analytic`);
//! 3. up to `ccd_rounds` rounds of continuous collision detection (§3.9) with
//!    inelastic impulses that keep a minimum separation;
//! 4. rigid impact zones (§3.10), merged round by round while collisions
//!    remain, within their cap and the frame's deadline;
//! 5. when the rounds end with collisions left, the bounded last resort
//!    (*a bounded stage* below).
//!
//! **One vertex space.** Cloth vertices come first, then the vertices of every
//! obstacle mesh; obstacle (and pinned) vertices have inverse mass 0 and their
//! prescribed velocity, so every stencil, impulse and impact zone treats both
//! alike.
//!
//! **Thickness.** A pair is close within η, the cloth's thickness, plus the
//! largest own thickness of its obstacle vertices
//! ([`ClothCollision::set_obstacle_thickness`]; 0 for cloth–cloth pairs), so
//! an obstacle mesh's thickness adds to the cloth's. CCD keeps its tolerance
//! and minimum separation from η alone: thickness is a repulsion distance,
//! and CCD only has to keep the two sides from crossing.
//!
//! **Stencils and impulses** come from [`super::response`]: a pair's two sides,
//! their interpolation weights and the normal between them, and the impulses
//! of METHODS-bw-bridson eq. 3.10–3.13 applied through them.
//!
//! **Candidate pairs.** The cloth's triangle tree (and the obstacles' tree) give
//! overlapping triangle pairs; each vertex and each edge is *owned* by one of its
//! triangles, and a triangle pair only emits the vertex–face and edge–edge tests
//! of the vertices and edges its triangles own, so every test appears once.
//! Tests whose elements share a vertex are skipped (adjacent elements), and so
//! are tests whose features' boxes fail detection's own box pre-test (a point
//! far from the other triangle's box, edges whose boxes are apart): most
//! overlapping triangle pairs emit only a few of their up to 15 tests.
//! The tests and their detection flags are lists in the caller's frame arena
//! (`runtime::arena`, [`ClothCollision::resolve_in`]); the triangle pair lists
//! are preallocated pools ([`PoolSizes`]), filled in parallel chunks, and each
//! chunk's tests are emitted in parallel into a preallocated buffer of its own,
//! then appended to the list in chunk order (the serial order for any thread
//! count).
//!
//! **A bounded stage.** Each impact-zone round that still finds a collision
//! merges zones (a zone moves rigidly, so it cannot collide with itself), so
//! rounds could go on until everything colliding is one zone, each a detection
//! pass over the swept candidates, whose CCD root finding dominates on hard
//! inputs. The rounds are therefore capped: at most `ccd_rounds` CCD rounds,
//! then at most `max_zone_rounds` zone rounds, and no round starts once the
//! frame's deadline has passed (`stop`, asked between rounds on the calling
//! thread; the first CCD round always runs). Collisions left then go to the
//! last resort ([`super::last_resort`]): the whole cloth becomes one zone, and
//! every obstacle body a collision touches joins it whole, so the zone follows
//! the bodies' best-fit rigid motion (exact for one body, or several moving
//! alike). At most [`LAST_RESORT_PASSES`] detection passes check that move, each
//! joining the bodies its collisions touch. Collisions still left mean no rigid
//! motion clears them: with nothing kinematic moving the free vertices stop
//! (x^{n+1} = x^n exactly, clean against everything at rest); otherwise the cloth
//! gives way, each free vertex following the body nearest it, and one more pass
//! counts what is left (`CollisionStats::last_resort_hits`). Past the deadline a
//! substep therefore costs at most the round in flight, one detection pass (the
//! zone loop's, whose collisions start the last resort), and the last resort:
//! [`LAST_RESORT_PASSES`] + 1 detection passes and linear work.
#![deny(unsafe_code)]

use std::time::Instant;

use bumpalo::Bump;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

use super::bvh::{
    Aabb, Bvh, PAIR_CHUNK, PairWorkspace, cross_pairs, self_pairs, swept_triangle_boxes,
    triangle_boxes,
};
use super::ccd::{
    CCD_TOLERANCE_FRACTION, CcdHit, ccd_edge_edge, ccd_point_triangle, min_separation,
};
use super::impact_zones::ImpactZones;
use super::last_resort::LastResort;
use super::proximity::{proximity_edge_edge, proximity_point_triangle};
use super::response::{self, Stencil};
use super::shapes::{ColliderView, Shape};
use super::smoothing::{SmoothingReport, VelocitySmoother};
use super::strain_limit::{StrainLimit, StrainLimiter};

/// Largest [`CollisionSettings::response_passes`] a scene file or the C ABI may ask for: each
/// pass is a PCG solve and a collision stage per substep.
pub const MAX_RESPONSE_PASSES: u32 = 16;

/// Settings of the collision stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollisionSettings {
    /// Cloth–cloth collisions on or off.
    pub self_collision: bool,
    /// Thickness η (m): repulsion acts on pairs closer than this.
    pub thickness: f32,
    /// Repulsion spring stiffness k (N/m) of eq. 3.12.
    pub repulsion_stiffness: f32,
    /// Coulomb coefficient for cloth–cloth and cloth–obstacle-mesh pairs.
    pub friction: f32,
    /// Strain limiting, if any.
    pub strain_limit: Option<StrainLimit>,
    /// Rounds of CCD impulses before impact zones.
    pub ccd_rounds: u32,
    /// Cap on impact-zone rounds before the last resort.
    pub max_zone_rounds: u32,
    /// Implicit velocity smoothing of the end velocities (course notes
    /// §4.10, eq. 4.12), if any: `(strength, CG iterations)`.
    pub velocity_smoothing: Option<(f32, u32)>,
    /// Baraff–Witkin cloths: rounds of *response solve + collision stage again* after the
    /// first collision stage of a substep (`ImplicitEuler::respond`, run by the pipeline); 0 =
    /// off. The last stage of a substep is always a full collision stage, so the guarantee is
    /// unchanged. (Not read by this stage itself.) At most [`MAX_RESPONSE_PASSES`].
    pub response_passes: u32,
}

impl Default for CollisionSettings {
    fn default() -> Self {
        Self {
            self_collision: true,
            thickness: 0.004,
            repulsion_stiffness: 100.0,
            friction: 0.3,
            strain_limit: None,
            ccd_rounds: 3,
            max_zone_rounds: 256,
            velocity_smoothing: None,
            response_passes: 0,
        }
    }
}

/// What the collision stage did in one substep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CollisionStats {
    /// Close pairs found at x^n.
    pub proximity_pairs: u32,
    /// Collisions found by CCD (all rounds).
    pub ccd_hits: u32,
    /// CCD rounds run.
    pub ccd_rounds: u32,
    /// Impact-zone rounds run.
    pub zone_rounds: u32,
    /// Multi-vertex impact zones of the last zone round.
    pub impact_zones: u32,
    /// Vertices in the largest zone.
    pub largest_zone: u32,
    /// The stage took its last resort: the zone rounds reached their cap, or the deadline
    /// passed, with collisions left.
    pub last_resort: bool,
    /// The frame's deadline stopped the CCD or zone rounds before their caps.
    pub rounds_cut: bool,
    /// Collisions the last resort's final detection pass still found (0 when it cleared them).
    pub last_resort_hits: u32,
    /// The last resort found bodies moving differently and the cloth gave way, each free vertex
    /// following the body nearest it (`collide::last_resort`).
    pub last_resort_gave_way: bool,
    /// The last resort could not clear its hits and stopped the cloth's free vertices (they
    /// keep x^n for this substep).
    pub last_resort_stopped: bool,
    /// A pair buffer had to grow (pool overflow).
    pub pool_grew: bool,
    /// Bytes of the arena in use when the stage's candidate lists were at
    /// their largest (everything the arena held at the end of the stage, the
    /// caller's earlier allocations of the frame included).
    pub arena_bytes: usize,
    /// Strain limiting sweeps.
    pub strain_sweeps: u32,
    /// Wall-clock time of each sub-stage.
    pub times: CollideTimes,
}

/// Milliseconds spent in each sub-stage of the collision stage (wall clock,
/// summed over substeps and cloths when folded into frame statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CollideTimes {
    /// Strain limiting (the first pass and the passes inside CCD rounds).
    pub strain_ms: f64,
    /// Candidate pairs at x^n, proximity tests, repulsion and friction.
    pub proximity_ms: f64,
    /// CCD rounds (swept candidates, tests and impulses).
    pub ccd_ms: f64,
    /// Rigid impact zones (detection, merging, rigid motion).
    pub zones_ms: f64,
    /// Implicit velocity smoothing after the stage.
    pub smoothing_ms: f64,
}

impl CollisionStats {
    /// Folds in another pass of the stage over the same substep: counts and times add, the
    /// largest zone and the arena peak take the maximum, the flags or.
    pub fn accumulate(&mut self, o: &CollisionStats) {
        self.proximity_pairs += o.proximity_pairs;
        self.ccd_hits += o.ccd_hits;
        self.ccd_rounds += o.ccd_rounds;
        self.zone_rounds += o.zone_rounds;
        self.impact_zones = self.impact_zones.max(o.impact_zones);
        self.largest_zone = self.largest_zone.max(o.largest_zone);
        self.last_resort |= o.last_resort;
        self.rounds_cut |= o.rounds_cut;
        self.last_resort_hits += o.last_resort_hits;
        self.last_resort_gave_way |= o.last_resort_gave_way;
        self.last_resort_stopped |= o.last_resort_stopped;
        self.pool_grew |= o.pool_grew;
        self.arena_bytes = self.arena_bytes.max(o.arena_bytes);
        self.strain_sweeps += o.strain_sweeps;
        self.times.add(&o.times);
    }
}

impl CollideTimes {
    /// Adds another set of times.
    pub fn add(&mut self, o: &CollideTimes) {
        self.strain_ms += o.strain_ms;
        self.proximity_ms += o.proximity_ms;
        self.ccd_ms += o.ccd_ms;
        self.zones_ms += o.zones_ms;
        self.smoothing_ms += o.smoothing_ms;
    }

    /// Column names for statistics files, in [`CollideTimes::values`] order.
    pub const COLUMNS: [&'static str; 5] = [
        "collide_strain_ms",
        "collide_proximity_ms",
        "collide_ccd_ms",
        "collide_zones_ms",
        "collide_smoothing_ms",
    ];

    /// The times in [`CollideTimes::COLUMNS`] order.
    #[must_use]
    pub fn values(&self) -> [f64; 5] {
        [
            self.strain_ms,
            self.proximity_ms,
            self.ccd_ms,
            self.zones_ms,
            self.smoothing_ms,
        ]
    }
}

/// Milliseconds since `t`, and restarts `t`.
fn lap_ms(t: &mut Instant) -> f64 {
    let now = Instant::now();
    let ms = now.duration_since(*t).as_secs_f64() * 1e3;
    *t = now;
    ms
}

/// Obstacle mesh vertices over a substep, in world space: at the start and
/// end of the world's substep, and the part [s0, s1] of it this call covers
/// (step control may split a substep; positions in between are interpolated
/// linearly, exact for translations).
#[derive(Clone, Copy, Debug)]
pub struct ObstacleMeshes<'a> {
    /// Vertex positions at the start of the world's substep.
    pub x0: &'a [Vec3],
    /// Vertex positions at its end.
    pub x1: &'a [Vec3],
    /// Coulomb coefficient of each obstacle vertex's surface (0 for the
    /// tessellation of an analytic collider, whose friction the solve's
    /// contact filters already apply: counting it here too would double it).
    pub friction: &'a [f32],
    /// Per obstacle vertex: true when it belongs to the tessellation of one of
    /// `colliders` with a curved shape ([`Shape::repels_from_surface`](super::shapes::Shape::repels_from_surface)). Such triangles
    /// take part in the CCD rounds and impact zones only; the repulsion meets
    /// the collider's exact surface instead (vertex–surface proximity, see
    /// [`ClothCollision::resolve_in`]). Empty: every triangle is repelled.
    pub analytic: &'a [bool],
    /// The analytic colliders at the start of the world's substep (their
    /// poses at `s0` follow from their motions).
    pub colliders: &'a [ColliderView],
    /// Per collider: the obstacle vertices `[start, end)` of its tessellation.
    pub collider_vertices: &'a [[u32; 2]],
    /// Start of the covered part, as a fraction of the substep.
    pub s0: f32,
    /// End of the covered part.
    pub s1: f32,
}

impl ObstacleMeshes<'_> {
    /// No obstacle meshes.
    pub const NONE: ObstacleMeshes<'static> = ObstacleMeshes {
        x0: &[],
        x1: &[],
        friction: &[],
        analytic: &[],
        colliders: &[],
        collider_vertices: &[],
        s0: 0.0,
        s1: 1.0,
    };

    /// The same meshes over the part [a, b] of the covered part.
    #[must_use]
    pub fn part(&self, a: f32, b: f32) -> Self {
        let span = self.s1 - self.s0;
        Self {
            s0: self.s0 + a * span,
            s1: self.s0 + b * span,
            ..*self
        }
    }
}

/// Preallocated overlapping cloth–cloth triangle pairs per triangle: a flat
/// regular grid has about 6 (pairs are counted once, `i < j`); drape-65 and
/// pile-65 reach 24 in their densest chunks (measured with tests/no_alloc.rs).
const SELF_PAIRS_PER_TRIANGLE: usize = 24;
/// Preallocated cloth–obstacle triangle pairs per cloth triangle: drape-65 on
/// the tessellated sphere reaches 16 in a chunk; twice that for margin.
const OBSTACLE_PAIRS_PER_TRIANGLE: usize = 32;
/// Point–triangle and edge–edge tests per cloth triangle the first candidate
/// list is sized for (later lists start at the largest count seen so far; most
/// overlapping pairs share vertices and emit few tests).
const INITIAL_TESTS_PER_TRIANGLE: usize = 16;

/// A list of candidate tests (or their flags) in the frame arena.
type ArenaVec<'a, T> = bumpalo::collections::Vec<'a, T>;

/// Capacities of a cloth's collision pools, per cloth triangle: sized at
/// creation ([`PoolSizes::default`]) so that steady frames allocate nothing. A
/// query that finds more grows its pool once (to at least what it needed;
/// the pair lists and the candidate list double) and is reported in
/// [`CollisionStats::pool_grew`] (`FrameStats::pool_overflows`); the pool then
/// keeps its new size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSizes {
    /// Overlapping cloth–cloth triangle pairs (the self-collision pair list).
    pub self_pairs_per_triangle: usize,
    /// Overlapping cloth–obstacle triangle pairs.
    pub obstacle_pairs_per_triangle: usize,
    /// Point–triangle and edge–edge tests the candidate list (in the frame
    /// arena) starts with, before any query has been seen.
    pub tests_per_triangle: usize,
}

impl Default for PoolSizes {
    fn default() -> Self {
        Self {
            self_pairs_per_triangle: SELF_PAIRS_PER_TRIANGLE,
            obstacle_pairs_per_triangle: OBSTACLE_PAIRS_PER_TRIANGLE,
            tests_per_triangle: INITIAL_TESTS_PER_TRIANGLE,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// verts = [point, tri0, tri1, tri2].
    PointTriangle,
    /// verts = [p0, p1, q0, q1].
    EdgeEdge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    kind: Kind,
    verts: [u32; 4],
}

/// Per-cloth collision data: topology, trees, workspaces; sized at creation.
#[derive(Debug)]
pub struct ClothCollision {
    n: usize,
    tris: Vec<[u32; 3]>,
    /// Per triangle the vertices and edges it owns ([`Owned`]).
    owned: Vec<Owned>,
    edges: Vec<[u32; 2]>,
    rest_lengths: Vec<f32>,
    bvh: Bvh,
    boxes: Vec<Aabb>,
    /// Per cloth edge its box of the current search ([`edge_boxes`]).
    edge_boxes: Vec<Aabb>,
    obstacle_bvh: Option<Bvh>,
    obstacle_boxes: Vec<Aabb>,
    obstacle_tris: Vec<[u32; 3]>,
    /// Per obstacle triangle the vertices and edges it owns.
    obstacle_owned: Vec<Owned>,
    obstacle_edges: Vec<[u32; 2]>,
    /// Per obstacle edge its box of the current search.
    obstacle_edge_boxes: Vec<Aabb>,
    self_ws: PairWorkspace,
    cross_ws: PairWorkspace,
    /// Per chunk of triangle pairs (the chunks of [`PairWorkspace`]) the
    /// tests it emits, filled in parallel and concatenated in chunk order
    /// ([`emit_chunked`]); preallocated like the pair pools.
    emit_chunks: Vec<Vec<Candidate>>,
    /// The most candidate tests one query has produced: the capacity each
    /// stage's candidate list starts with in the frame arena.
    candidates_high_water: usize,
    /// The arena of [`ClothCollision::resolve`], for callers without a frame
    /// arena (reset at every call).
    own_arena: Bump,
    /// Per vertex of the shared space: changed by an impulse earlier in
    /// this CCD round (its candidates are re-tested serially).
    touched: Vec<bool>,
    /// Per vertex: its candidates must be tested in this CCD round.
    dirty: Vec<bool>,
    /// The velocities the previous CCD round tested.
    v_tested: Vec<Vec3>,
    x0: Vec<Vec3>,
    v: Vec<Vec3>,
    x1: Vec<Vec3>,
    /// Per vertex of the shared space its box of the current search (its position at x^n,
    /// and for a swept search its segment to the end of the substep): computed once per
    /// search, read by every edge box and every point test of emission.
    vertex_boxes: Vec<Aabb>,
    inv_mass: Vec<f32>,
    mass: Vec<f32>,
    /// Coulomb coefficient per vertex of the shared space: the cloth's for
    /// cloth vertices, the obstacle surface's for obstacle vertices.
    surface_friction: Vec<f32>,
    /// Thickness added to η by each vertex of the shared space: 0 for cloth
    /// vertices, the obstacle's own thickness for obstacle vertices.
    extra_thickness: Vec<f32>,
    /// Largest entry of `extra_thickness`.
    max_extra_thickness: f32,
    zones: ImpactZones,
    /// The obstacles' bodies and the last resort's workspace.
    last: LastResort,
    strain: StrainLimiter,
    smoother: VelocitySmoother,
    /// Longest rest edge of the cloth (m), for [`ClothCollision::meets_exact_surface`].
    longest_rest_edge: f32,
    /// Per obstacle vertex: the triangles the proximity search leaves out this substep
    /// (`ObstacleMeshes::analytic`, less the colliders this cloth does not meet through their
    /// exact surface); sized with the obstacles.
    leave_out: Vec<bool>,
}

impl ClothCollision {
    /// Builds the collision data of a cloth with `num_vertices` vertices at
    /// positions `x`, its `triangles`, and its unique sorted `edges` with
    /// `rest_lengths` (for strain limiting). No obstacle meshes yet.
    #[must_use]
    pub fn new(
        triangles: &[[u32; 3]],
        edges: &[[u32; 2]],
        rest_lengths: &[f32],
        x: &[Vec3],
    ) -> Self {
        let num_vertices = x.len();
        let owned = owned_features(num_vertices, triangles, edges);
        let mut boxes = vec![Aabb::EMPTY; triangles.len()];
        triangle_boxes(x, triangles, 0.0, &mut boxes);
        let bvh = Bvh::build(&boxes);
        Self {
            n: num_vertices,
            tris: triangles.to_vec(),
            owned,
            edges: edges.to_vec(),
            rest_lengths: rest_lengths.to_vec(),
            bvh,
            boxes,
            edge_boxes: vec![Aabb::EMPTY; edges.len()],
            obstacle_bvh: None,
            obstacle_boxes: Vec::new(),
            obstacle_tris: Vec::new(),
            obstacle_owned: Vec::new(),
            obstacle_edges: Vec::new(),
            obstacle_edge_boxes: Vec::new(),
            // Pools sized at creation (no allocation per step); a
            // larger result grows them once and is reported as an overflow.
            self_ws: PairWorkspace::with_capacity(triangles.len(), SELF_PAIRS_PER_TRIANGLE),
            cross_ws: PairWorkspace::with_capacity(triangles.len(), OBSTACLE_PAIRS_PER_TRIANGLE),
            emit_chunks: emit_chunks(triangles.len(), PoolSizes::default().tests_per_triangle),
            candidates_high_water: triangles.len() * PoolSizes::default().tests_per_triangle,
            own_arena: Bump::new(),
            touched: vec![false; num_vertices],
            dirty: vec![true; num_vertices],
            v_tested: vec![Vec3::ZERO; num_vertices],
            x0: vec![Vec3::ZERO; num_vertices],
            v: vec![Vec3::ZERO; num_vertices],
            x1: vec![Vec3::ZERO; num_vertices],
            vertex_boxes: vec![Aabb::EMPTY; num_vertices],
            inv_mass: vec![0.0; num_vertices],
            mass: vec![0.0; num_vertices],
            surface_friction: vec![0.0; num_vertices],
            extra_thickness: vec![0.0; num_vertices],
            max_extra_thickness: 0.0,
            zones: ImpactZones::new(num_vertices),
            last: LastResort::new(num_vertices, edges),
            strain: StrainLimiter::new(num_vertices, edges),
            smoother: VelocitySmoother::new(num_vertices, edges),
            longest_rest_edge: rest_lengths.iter().copied().fold(0.0, f32::max),
            leave_out: Vec::new(),
        }
    }

    /// Replaces the collision pools by pools of `sizes` (emptied: the next
    /// queries refill them, growing them if they are too small). Called
    /// between frames, never in a step; it allocates.
    pub fn set_pool_sizes(&mut self, sizes: PoolSizes) {
        let ntri = self.tris.len();
        self.self_ws = PairWorkspace::with_capacity(ntri, sizes.self_pairs_per_triangle);
        self.cross_ws = PairWorkspace::with_capacity(ntri, sizes.obstacle_pairs_per_triangle);
        self.emit_chunks = emit_chunks(ntri, sizes.tests_per_triangle);
        self.candidates_high_water = ntri * sizes.tests_per_triangle;
    }

    /// Sets the obstacle meshes this cloth meets (all of them as one soup:
    /// `triangles` index `x`, the soup's positions now). Called when
    /// obstacles are added, never in a step.
    pub fn set_obstacles(&mut self, triangles: &[[u32; 3]], x: &[Vec3]) {
        let m = x.len();
        self.obstacle_edges = unique_edges(triangles);
        self.obstacle_edge_boxes = vec![Aabb::EMPTY; self.obstacle_edges.len()];
        self.obstacle_owned = owned_features(m, triangles, &self.obstacle_edges);
        self.obstacle_tris = triangles.to_vec();
        self.obstacle_boxes = vec![Aabb::EMPTY; triangles.len()];
        self.obstacle_bvh = if triangles.is_empty() {
            None
        } else {
            triangle_boxes(x, triangles, 0.0, &mut self.obstacle_boxes);
            Some(Bvh::build(&self.obstacle_boxes))
        };
        let total = self.n + m;
        for buf in [&mut self.x0, &mut self.v, &mut self.x1] {
            buf.resize(total, Vec3::ZERO);
        }
        self.vertex_boxes.resize(total, Aabb::EMPTY);
        self.inv_mass.resize(total, 0.0);
        self.mass.resize(total, 0.0);
        self.surface_friction.resize(total, 0.0);
        // Obstacle thickness comes from set_obstacle_thickness; 0 until then.
        self.extra_thickness.clear();
        self.extra_thickness.resize(total, 0.0);
        self.max_extra_thickness = 0.0;
        self.touched.resize(total, false);
        self.leave_out.resize(m, false);
        self.dirty.resize(total, true);
        self.v_tested.resize(total, Vec3::ZERO);
        self.zones = ImpactZones::new(total);
        self.last.set_obstacles(m, &self.obstacle_edges);
    }

    /// Sets the thickness of each obstacle vertex (m, ≥ 0; the soup's order,
    /// as in [`ClothCollision::set_obstacles`]). A cloth–obstacle pair is
    /// *close*, and repelled, within η + the largest thickness among its
    /// obstacle vertices, so an obstacle's thickness adds to the cloth's.
    /// Called when obstacles change, never in a step.
    pub fn set_obstacle_thickness(&mut self, thickness: &[f32]) {
        let n = self.n;
        let m = self.extra_thickness.len() - n;
        assert_eq!(
            thickness.len(),
            m,
            "set_obstacle_thickness: one thickness per obstacle vertex"
        );
        self.extra_thickness[n..].copy_from_slice(thickness);
        self.max_extra_thickness = thickness.iter().copied().fold(0.0, f32::max);
    }

    /// η of a pair: the cloth's thickness plus the largest thickness of the
    /// pair's obstacle vertices (0 for a cloth–cloth pair).
    fn pair_eta(&self, c: &Candidate, eta: f32) -> f32 {
        pair_eta(&self.extra_thickness, c, eta)
    }

    /// Runs the stage on the cloth's start positions `x0`, changing the
    /// velocities `v` (v^{n+1/2}) in place. `obstacles` are the obstacle meshes
    /// at the start and end of the substep.
    ///
    /// The candidate lists come from the collision data's own arena, reset at
    /// every call (for callers without a frame arena; see
    /// [`ClothCollision::resolve_in`]). After warm-up it allocates nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn resolve(
        &mut self,
        settings: &CollisionSettings,
        h: f32,
        x0: &[Vec3],
        v: &mut [Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        obstacles: &ObstacleMeshes<'_>,
    ) -> CollisionStats {
        let mut arena = std::mem::take(&mut self.own_arena);
        arena.reset();
        let capacity = arena.allocated_bytes();
        let mut stats = self.resolve_in(
            &arena,
            settings,
            h,
            x0,
            v,
            mass,
            inv_mass,
            obstacles,
            &mut || false,
        );
        // A new chunk is an allocation: reported like a grown list.
        stats.pool_grew |= arena.allocated_bytes() != capacity;
        self.own_arena = arena;
        stats
    }

    /// [`ClothCollision::resolve`] with the candidate tests and their
    /// detection flags allocated in `arena` (the cloth's frame arena,
    /// `runtime::arena`). Each list starts with the largest capacity any
    /// earlier list reached; a query that produces more tests grows it (in the
    /// arena, doubling, so a growing contact set overflows once rather than
    /// every frame) and sets [`CollisionStats::pool_grew`]. The lists are
    /// freed when the stage returns (`bumpalo` rewinds its last allocations),
    /// so the next substep of the frame reuses their bytes.
    ///
    /// `stop` is asked between rounds, on the calling thread only (never inside a parallel
    /// loop, so the thread count cannot change its answers): once it says true, no further CCD
    /// or zone round starts and collisions left go to the last resort
    /// ([`CollisionStats::rounds_cut`]; the pipeline passes the frame's deadline).
    #[allow(clippy::too_many_arguments)]
    pub fn resolve_in(
        &mut self,
        arena: &Bump,
        settings: &CollisionSettings,
        h: f32,
        x0: &[Vec3],
        v: &mut [Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        obstacles: &ObstacleMeshes<'_>,
        stop: &mut dyn FnMut() -> bool,
    ) -> CollisionStats {
        let mut stats = CollisionStats::default();
        let mut clock = Instant::now();
        let n = self.n;
        self.strain.forget_contacts();
        if let Some(limit) = &settings.strain_limit {
            let report =
                self.strain
                    .apply(limit, h, x0, v, inv_mass, &self.edges, &self.rest_lengths);
            stats.strain_sweeps = report.sweeps;
        }
        stats.times.strain_ms += lap_ms(&mut clock);
        self.x0[..n].copy_from_slice(x0);
        self.v[..n].copy_from_slice(v);
        self.inv_mass[..n].copy_from_slice(inv_mass);
        self.mass[..n].copy_from_slice(mass);
        let inv_h = 1.0 / h;
        for (k, (a, b)) in obstacles.x0.iter().zip(obstacles.x1).enumerate() {
            let start = a.lerp(*b, obstacles.s0);
            let end = a.lerp(*b, obstacles.s1);
            self.x0[n + k] = start;
            self.v[n + k] = (end - start) * inv_h;
            self.inv_mass[n + k] = 0.0;
            self.mass[n + k] = f32::INFINITY;
            self.surface_friction[n + k] = obstacles.friction.get(k).copied().unwrap_or(0.0);
        }
        self.surface_friction[..n].fill(settings.friction);

        let eta = settings.thickness;
        let mut candidates = ArenaVec::with_capacity_in(self.candidates_high_water, arena);
        let mut found = ArenaVec::with_capacity_in(self.candidates_high_water, arena);
        // 2. Repulsion and friction at x^n.
        let leave_out = self.proximity_leave_out(obstacles, settings);
        self.find_candidates(
            &mut candidates,
            settings,
            Reach::Proximity,
            &leave_out,
            &mut stats,
        );
        self.leave_out = leave_out;
        // Detection reads x^n only, so it runs in parallel; the impulses are
        // applied serially in candidate order, as before (same result).
        {
            let x0 = &self.x0;
            let extra = &self.extra_thickness;
            stats.pool_grew |= detect_parallel(&candidates, &mut found, |c| {
                let eta = f64::from(pair_eta(extra, c, eta));
                let q = c.verts.map(|i| x0[i as usize]);
                if c.kind == Kind::EdgeEdge && !near(&q[..2], &q[2..], margin(c.kind, eta)) {
                    return false;
                }
                let p = q.map(Vec3::as_dvec3);
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
        for (c, _) in candidates.iter().zip(&found).filter(|(_, f)| **f) {
            if self.repel(c, settings, h) {
                stats.proximity_pairs += 1;
            }
        }
        // The curved analytic colliders' exact surfaces, after the pairs above
        // (as their tessellations' pairs came after the cloth–cloth ones).
        if !obstacles.colliders.is_empty() {
            let span = obstacles.s1 - obstacles.s0;
            let t0 = if obstacles.s0 > 0.0 && span > 0.0 {
                obstacles.s0 * h / span
            } else {
                0.0
            };
            stats.proximity_pairs += self.repel_analytic(obstacles.colliders, t0, settings, h);
        }
        stats.times.proximity_ms += lap_ms(&mut clock);

        // 3. CCD rounds with collision impulses.
        let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
        let s_min = min_separation(f64::from(eta)) as f32;
        let mut remaining = true;
        for round in 0..settings.ccd_rounds {
            if round > 0 && stop() {
                stats.rounds_cut = true;
                break;
            }
            stats.ccd_rounds += 1;
            // Strain limiting inside every round: impacts resolved by impulses
            // stop some vertices while their neighbours move on; limiting the
            // strain again lets the neighbours feel it before CCD checks the
            // result (the round ends only when both agree).
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
            stats.times.strain_ms += lap_ms(&mut clock);
            let hits = self.ccd_round(
                &mut candidates,
                &mut found,
                settings,
                h,
                eta_c,
                s_min,
                round > 0,
                &mut stats,
            );
            stats.times.ccd_ms += lap_ms(&mut clock);
            stats.ccd_hits += hits;
            if hits == 0 {
                remaining = false;
                break;
            }
        }

        // 4. Rigid impact zones until nothing collides, at most `max_zone_rounds` rounds and
        // none once `stop` says so; then the last resort.
        if remaining {
            self.zones.zones().reset();
            loop {
                let (hits, _) = self.merge_colliding(
                    &mut candidates,
                    &mut found,
                    settings,
                    h,
                    eta_c,
                    &mut stats,
                );
                if hits == 0 {
                    break;
                }
                let capped = stats.zone_rounds >= settings.max_zone_rounds;
                if capped || stop() {
                    stats.rounds_cut |= !capped;
                    self.last_resort(&mut candidates, &mut found, settings, h, eta_c, &mut stats);
                    break;
                }
                stats.zone_rounds += 1;
                let zs = self.zones.apply_rigid_motion(
                    h,
                    &self.x0,
                    &mut self.v,
                    &self.mass,
                    &self.inv_mass,
                );
                stats.impact_zones = zs.zones;
                stats.largest_zone = zs.largest;
            }
        }
        stats.times.zones_ms += lap_ms(&mut clock);
        v.copy_from_slice(&self.v[..n]);
        stats.arena_bytes = arena.allocated_bytes() - arena.chunk_capacity();
        self.candidates_high_water = self.candidates_high_water.max(candidates.capacity());
        stats
    }

    /// The strain limiter, with what the last stage's kept collisions hold
    /// ([`StrainLimiter::holds`]).
    #[must_use]
    pub fn strain_limiter(&self) -> &StrainLimiter {
        &self.strain
    }

    /// Implicit velocity smoothing of the cloth's end velocities `v`, when the
    /// settings ask for it (course notes §4.10, eq. 4.12; [`VelocitySmoother`]).
    ///
    /// It runs after the positions of the substep are final, so it cannot
    /// undo the collision stage's guarantee: it only shapes the velocities the
    /// next substep starts from (and the next collision stage checks).
    pub fn smooth(
        &mut self,
        settings: &CollisionSettings,
        v: &mut [Vec3],
        mass: &[f32],
        inv_mass: &[f32],
    ) -> SmoothingReport {
        match settings.velocity_smoothing {
            Some((strength, iterations)) => {
                self.smoother
                    .apply(strength, iterations, v, mass, inv_mass, &self.edges)
            }
            None => SmoothingReport::default(),
        }
    }

    /// Fills `candidates` with the point–triangle and edge–edge tests of
    /// overlapping triangle pairs that can pass detection at `reach`.
    ///
    /// Triangle pairs come from the trees over triangle boxes: at x^n
    /// inflated by η ([`Reach::Proximity`]), or swept from x^n to
    /// x^n + h v and inflated by η_c / 2 ([`Reach::Swept`]). A pair's tests are
    /// then culled feature by feature with the same box bounds detection
    /// starts from ([`margin`], [`near`], [`swept_near`]): a point–triangle
    /// test only if the point's box (swept, for CCD) meets the triangle's box
    /// grown by the point–triangle margin, an edge–edge test only if the two
    /// edges' boxes are within the edge–edge margin. Both bounds are
    /// necessary for detection, so the culled tests are exactly tests that
    /// could not have been found at the velocities this list is built from.
    /// (A CCD round re-tests a listed candidate whose vertices an earlier
    /// impulse of the same round touched; a culled one is not re-tested in
    /// that round, as a pair of disjoint triangle boxes never was: the next
    /// round, or the impact zones, find it from its new velocities.)
    ///
    /// `leave_out` (per obstacle vertex, or empty) marks obstacle triangles
    /// (by their first vertex) this search skips: the curved analytic
    /// colliders' tessellations in the proximity search
    /// ([`ObstacleMeshes::analytic`]).
    fn find_candidates(
        &mut self,
        candidates: &mut ArenaVec<'_, Candidate>,
        settings: &CollisionSettings,
        reach: Reach,
        leave_out: &[bool],
        stats: &mut CollisionStats,
    ) {
        let n = self.n;
        let eta = settings.thickness;
        // Inflation of the triangle boxes, and the margins of detection's
        // pre-tests for cloth–cloth and cloth–obstacle pairs.
        let (inflate, self_margins, cross_margins) = match reach {
            Reach::Proximity => (
                eta,
                FeatureMargins::of(f64::from(eta)),
                FeatureMargins::of(f64::from(eta + self.max_extra_thickness)),
            ),
            Reach::Swept => {
                let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
                let m = FeatureMargins::of(eta_c);
                (0.5 * eta * CCD_TOLERANCE_FRACTION as f32, m, m)
            }
        };
        let swept = matches!(reach, Reach::Swept);
        vertex_boxes(
            &self.x0,
            swept.then_some(self.x1.as_slice()),
            &mut self.vertex_boxes,
        );
        let points = &self.vertex_boxes[..];
        if swept {
            swept_triangle_boxes(
                &self.x0[..n],
                &self.x1[..n],
                &self.tris,
                inflate,
                &mut self.boxes,
            );
        } else {
            triangle_boxes(&self.x0[..n], &self.tris, inflate, &mut self.boxes);
        }
        // Edge boxes grown by half the cloth–cloth margin: two overlap iff
        // the edges are within the margin. Obstacle edges take the rest of
        // the (larger) cloth–obstacle margin.
        edge_boxes(
            points,
            &self.edges,
            0,
            0.5 * self_margins.edge_edge,
            &mut self.edge_boxes,
        );
        self.bvh.refit(&self.boxes);
        let cloth = MeshView {
            tris: &self.tris,
            owned: &self.owned,
            tri_boxes: &self.boxes,
            edge_boxes: &self.edge_boxes,
            offset: 0,
        };
        let capacity = candidates.capacity();
        candidates.clear();
        if settings.self_collision {
            let tris = &self.tris;
            let keep = |a: u32, b: u32| !shares_all(&tris[a as usize], &tris[b as usize]);
            self_pairs(&self.bvh, &keep, &mut self.self_ws);
            stats.pool_grew |= self.self_ws.grew();
            stats.pool_grew |= emit_chunked(
                &self.self_ws,
                &mut self.emit_chunks,
                candidates,
                (&cloth, &cloth),
                points,
                self_margins.point_triangle,
            );
        }
        if let Some(obvh) = &mut self.obstacle_bvh {
            let m = n as u32;
            // Obstacle boxes also grow by the obstacles' own thickness.
            let eta_o = inflate + self.max_extra_thickness;
            if swept {
                swept_triangle_boxes(
                    &self.x0[n..],
                    &self.x1[n..],
                    &self.obstacle_tris,
                    eta_o,
                    &mut self.obstacle_boxes,
                );
            } else {
                triangle_boxes(
                    &self.x0[n..],
                    &self.obstacle_tris,
                    eta_o,
                    &mut self.obstacle_boxes,
                );
                // Left-out triangles get empty boxes: the refit tree skips
                // them (a subtree of empty boxes has an empty box).
                if !leave_out.is_empty() {
                    for (b, t) in self.obstacle_boxes.iter_mut().zip(&self.obstacle_tris) {
                        if leave_out[t[0] as usize] {
                            *b = Aabb::EMPTY;
                        }
                    }
                }
            }
            edge_boxes(
                points,
                &self.obstacle_edges,
                m,
                cross_margins.edge_edge - 0.5 * self_margins.edge_edge,
                &mut self.obstacle_edge_boxes,
            );
            obvh.refit(&self.obstacle_boxes);
            cross_pairs(&self.bvh, obvh, &mut self.cross_ws);
            stats.pool_grew |= self.cross_ws.grew();
            let obstacle = MeshView {
                tris: &self.obstacle_tris,
                owned: &self.obstacle_owned,
                tri_boxes: &self.obstacle_boxes,
                edge_boxes: &self.obstacle_edge_boxes,
                offset: m,
            };
            stats.pool_grew |= emit_chunked(
                &self.cross_ws,
                &mut self.emit_chunks,
                candidates,
                (&cloth, &obstacle),
                points,
                cross_margins.point_triangle,
            );
        }
        stats.pool_grew |= candidates.capacity() != capacity;
    }

    /// One Coulomb coefficient per pair from both sides' surfaces: the
    /// geometric mean √(μ_a μ_b) (cloth–cloth pairs: the cloth's own μ).
    fn pair_friction(&self, c: &Candidate) -> f32 {
        let first = self.surface_friction[c.verts[0] as usize];
        let second = self.surface_friction[c.verts[3] as usize];
        (first.max(0.0) * second.max(0.0)).sqrt()
    }

    fn positions(&self, c: &Candidate, x: &[Vec3]) -> [DVec3; 4] {
        c.verts.map(|i| x[i as usize].as_dvec3())
    }

    /// Vertex–surface proximity against the curved analytic `colliders`
    /// ([`Shape::repels_from_surface`](super::shapes::Shape::repels_from_surface)), placed at `t0` seconds into their substep:
    /// repulsion and friction for every free cloth vertex closer than η to a
    /// collider's surface at x^n, or farther but arriving within η by the end of
    /// the substep at its velocity. Bridson 2002, METHODS-bw-bridson eq.
    /// 3.11–3.13 through eq. 3.10 ([`response::repel_point_surface`], which also
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
    /// - **Order.** After the cloth–cloth and obstacle-mesh pairs, collider by
    ///   collider, vertex by vertex: fixed, so the result is deterministic.
    fn repel_analytic(
        &mut self,
        colliders: &[ColliderView],
        t0: f32,
        settings: &CollisionSettings,
        h: f32,
    ) -> u32 {
        let eta = settings.thickness;
        let mut close = 0;
        for col in colliders {
            if !self.meets_exact_surface(&col.shape, settings) {
                continue;
            }
            let pose = if t0 > 0.0 {
                col.motion.advance(&col.pose, t0)
            } else {
                col.pose
            };
            let mu = (settings.friction.max(0.0) * col.friction.max(0.0)).sqrt();
            for ((x, v), &w) in self.x0[..self.n]
                .iter()
                .zip(&mut self.v[..self.n])
                .zip(&self.inv_mass[..self.n])
            {
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
        close
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
    fn meets_exact_surface(&self, shape: &Shape, settings: &CollisionSettings) -> bool {
        let Some(r) = shape.curvature_radius() else {
            return false;
        };
        let l = 1.1 * self.longest_rest_edge;
        l * l / (8.0 * r) <= 0.25 * settings.thickness
    }

    /// The obstacle triangles the proximity search leaves out (by their first vertex): those
    /// of `obstacles.analytic`, less the tessellations of the colliders this cloth does not
    /// meet through their exact surface ([`ClothCollision::meets_exact_surface`]). Reuses the
    /// cloth's buffer (sized with its obstacles): no allocation.
    fn proximity_leave_out(
        &mut self,
        obstacles: &ObstacleMeshes<'_>,
        settings: &CollisionSettings,
    ) -> Vec<bool> {
        let mut mask = std::mem::take(&mut self.leave_out);
        if obstacles.analytic.len() != mask.len() {
            // Only the unit rigs that pass no mask (or a mask of other obstacles) get here.
            mask.clear();
            mask.extend_from_slice(obstacles.analytic);
            return mask;
        }
        mask.copy_from_slice(obstacles.analytic);
        for (col, range) in obstacles.colliders.iter().zip(obstacles.collider_vertices) {
            if !self.meets_exact_surface(&col.shape, settings) {
                mask[range[0] as usize..range[1] as usize].fill(false);
            }
        }
        mask
    }

    /// Repulsion + friction for one candidate if it is close at x^n
    /// (METHODS-bw-bridson eq. 3.11–3.13, [`response::repel`]). True if close.
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
        response::repel(
            &stencil,
            d,
            h,
            settings.repulsion_stiffness,
            self.pair_friction(c),
            &mut self.v,
            &self.inv_mass,
        );
        true
    }

    /// One CCD round: every candidate, in order, tested under the current
    /// velocities; each hit gets an inelastic impulse with minimum separation
    /// (METHODS-bw-bridson §3.9). Returns the number of hits.
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
        // Vertices whose candidates need testing again: those whose velocity
        // changed since the previous round's tests (impulses, strain limiting)
        // and those of the previous round's hits. A candidate with none of
        // them has exactly the inputs it had then, when it did not hit, so it
        // cannot hit now (a candidate new to this round overlaps only because
        // a box grew, i.e. some vertex changed).
        if after_a_round {
            for ((d, (v, w)), t) in self
                .dirty
                .iter_mut()
                .zip(self.v.iter().zip(&self.v_tested))
                .zip(&self.touched)
            {
                *d = *t || v.to_array().map(f32::to_bits) != w.to_array().map(f32::to_bits);
            }
        } else {
            self.dirty.fill(true);
        }
        self.v_tested.copy_from_slice(&self.v);
        self.update_end_positions(h);
        self.find_candidates(candidates, settings, Reach::Swept, &[], stats);
        // All candidates are tested in parallel against the velocities at the
        // start of the round; the serial pass then visits them in order and
        // re-tests a candidate only if an earlier impulse of this round
        // touched one of its vertices — exactly the serial Gauss–Seidel round
        // (METHODS-bw-bridson §3.9), for any thread count.
        {
            let (x0, v, dirty) = (&self.x0, &self.v, &self.dirty);
            stats.pool_grew |= detect_parallel(candidates, found, |c| {
                if !c.verts.iter().any(|&i| dirty[i as usize]) {
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
            let touched = c.verts.iter().any(|&i| self.touched[i as usize]);
            if !found && !touched {
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
        self.find_candidates(candidates, settings, Reach::Swept, &[], stats);
        // Detection reads x^n and x1 only: parallel.
        let (x0, x1) = (&self.x0, &self.x1);
        stats.pool_grew |= detect_parallel(candidates, found, |c| {
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
    /// one more pass counts what is left ([`CollisionStats::last_resort_hits`]).
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
        // body nearest it; one more pass counts what is left.
        stats.last_resort_gave_way = true;
        self.last.follow_nearest(
            candidates.iter().map(|c| &c.verts),
            h,
            &self.x0,
            &mut self.v,
            &self.inv_mass,
        );
        self.update_end_positions(h);
        stats.last_resort_hits = self.detect_collisions(candidates, found, settings, eta_c, stats);
    }

    fn update_end_positions(&mut self, h: f32) {
        for ((x1, x0), v) in self.x1.iter_mut().zip(&self.x0).zip(&self.v) {
            *x1 = *x0 + h * *v;
        }
    }
}

/// Detection passes the last resort may run to check its move, each joining the obstacle
/// bodies its collisions touch (`ClothCollision::last_resort`).
const LAST_RESORT_PASSES: u32 = 3;

/// Candidates per parallel detection task (fixed, so the work split does not
/// depend on the thread count; each flag depends on its candidate alone).
const DETECT_CHUNK: usize = 1024;
/// Below this many candidates detection runs on the calling thread.
const DETECT_PARALLEL_MIN: usize = 4096;

/// Sets `found[k] = test(&candidates[k])` for every candidate, in parallel
/// chunks from [`DETECT_PARALLEL_MIN`] candidates. True if `found` had to grow
/// (a pool overflow).
fn detect_parallel(
    candidates: &[Candidate],
    found: &mut ArenaVec<'_, bool>,
    test: impl Fn(&Candidate) -> bool + Sync,
) -> bool {
    let capacity = found.capacity();
    found.clear();
    found.resize(candidates.len(), false);
    let run = |(out, cs): (&mut [bool], &[Candidate])| {
        for (f, c) in out.iter_mut().zip(cs) {
            *f = test(c);
        }
    };
    if candidates.len() >= DETECT_PARALLEL_MIN {
        found
            .as_mut_slice()
            .par_chunks_mut(DETECT_CHUNK)
            .zip(candidates.par_chunks(DETECT_CHUNK))
            .for_each(run);
    } else {
        run((found.as_mut_slice(), candidates));
    }
    found.capacity() != capacity
}

/// The box margin that makes [`near`] a conservative pre-test of a contact
/// closer than `eta` (m). Edge–edge: the segments' closest points are within
/// `eta`, so their boxes grown by `eta` overlap. Point–triangle
/// ([`proximity_point_triangle`]): the point is within `eta` of the plane and
/// its projection has barycentric weights in `[−δ, 1 + δ]`, `δ = eta / L`
/// (L the longest edge), i.e. lies within `3 δ L = 3 eta` of the triangle's
/// box on every axis — `4 eta` in all. Grown by 1 % and 1 µm for f32/f64
/// rounding.
fn margin(kind: Kind, eta: f64) -> f32 {
    let k = match kind {
        Kind::PointTriangle => 4.0,
        Kind::EdgeEdge => 1.0,
    };
    (k * 1.01 * eta + 1e-6) as f32
}

/// True unless the axis-aligned boxes of the points `a` and of the points `b`
/// are more than `margin` apart on some axis.
#[inline]
fn near(a: &[Vec3], b: &[Vec3], margin: f32) -> bool {
    let bounds = |p: &[Vec3]| {
        p.iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), x| (lo.min(*x), hi.max(*x)),
        )
    };
    let (alo, ahi) = bounds(a);
    let (blo, bhi) = bounds(b);
    (alo - margin).cmple(bhi).all() && (blo - margin).cmple(ahi).all()
}

/// η of candidate `c`: `eta` plus the largest `extra` thickness of its
/// vertices ([`ClothCollision::set_obstacle_thickness`]).
fn pair_eta(extra: &[f32], c: &Candidate, eta: f32) -> f32 {
    eta + c
        .verts
        .iter()
        .map(|&v| extra[v as usize])
        .fold(0.0, f32::max)
}

/// Conservative pre-test of [`ccd`]: a contact within `eta_c` at an instant
/// of the linear motion `start → end` lies inside both sides' swept boxes
/// (every position along a linear motion is inside the box of its ends), so
/// disjoint swept boxes grown by [`margin`] mean no hit. Skips the coplanarity
/// cubic for most candidates without changing any result.
#[inline]
fn swept_near(kind: Kind, start: &[Vec3; 4], end: &[Vec3; 4], eta_c: f64) -> bool {
    let split = match kind {
        Kind::PointTriangle => 1,
        Kind::EdgeEdge => 2,
    };
    let a = [start[0], end[0], start[1], end[1]];
    let b = [start[1], end[1], start[2], end[2], start[3], end[3]];
    let m = margin(kind, eta_c);
    if split == 1 {
        near(&a[..2], &b, m)
    } else {
        near(&a, &b[2..], m)
    }
}

/// Whether a stencil moving from `start` to `end` collides within `eta_c`: the cheap swept-box
/// test, then CCD.
fn collides(kind: Kind, start: &[Vec3; 4], end: &[Vec3; 4], eta_c: f64) -> bool {
    swept_near(kind, start, end, eta_c)
        && ccd(
            kind,
            start.map(Vec3::as_dvec3),
            end.map(Vec3::as_dvec3),
            eta_c,
        )
        .is_some()
}

fn ccd(kind: Kind, start: [DVec3; 4], end: [DVec3; 4], eta_c: f64) -> Option<CcdHit> {
    match kind {
        Kind::PointTriangle => ccd_point_triangle(start, end, eta_c),
        Kind::EdgeEdge => ccd_edge_edge(start, end, eta_c),
    }
}

/// True when two triangles are the same triangle (all three vertices shared).
fn shares_all(a: &[u32; 3], b: &[u32; 3]) -> bool {
    a.iter().all(|x| b.contains(x))
}

/// What a candidate search looks for: contacts at x^n within η (repulsion
/// and friction), or collisions over the substep within the CCD tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// Close pairs at x^n (step 2 of the stage).
    Proximity,
    /// Collisions from x^n to x^n + h v (CCD rounds and impact zones).
    Swept,
}

/// The box margins of detection's pre-tests at one η ([`margin`]).
#[derive(Clone, Copy, Debug)]
struct FeatureMargins {
    point_triangle: f32,
    edge_edge: f32,
}

impl FeatureMargins {
    fn of(eta: f64) -> Self {
        Self {
            point_triangle: margin(Kind::PointTriangle, eta),
            edge_edge: margin(Kind::EdgeEdge, eta),
        }
    }
}

/// `out[i]`: the box of vertex `i` of the shared space for a search: the point `x0[i]`, or for
/// a swept search its segment from `x0[i]` to `x1[i]`.
fn vertex_boxes(x0: &[Vec3], x1: Option<&[Vec3]>, out: &mut [Aabb]) {
    match x1 {
        Some(x1) => {
            for ((o, &a), &b) in out.iter_mut().zip(x0).zip(x1) {
                *o = Aabb::from_points(&[a, b]);
            }
        }
        None => {
            for (o, &a) in out.iter_mut().zip(x0) {
                *o = Aabb::from_points(&[a]);
            }
        }
    }
}

/// `out[e]`: the box of edge `edges[e]` (vertex indices offset by `offset`
/// into the shared space) grown by `grow`.
fn edge_boxes(points: &[Aabb], edges: &[[u32; 2]], offset: u32, grow: f32, out: &mut [Aabb]) {
    for (o, e) in out.iter_mut().zip(edges) {
        *o = points[(e[0] + offset) as usize]
            .union(&points[(e[1] + offset) as usize])
            .inflate(grow);
    }
}

/// The vertices and edges one triangle owns ([`ownership`]): the features
/// [`emit_tests`] emits for it, in corner order (vertex `k` before `k + 1`,
/// edge `k` joining corners `k` and `k + 1`), so a triangle pair needs no
/// ownership look-ups of its own.
#[derive(Clone, Copy, Debug, Default)]
struct Owned {
    /// Owned vertices (mesh-local indices), the first `num_verts`.
    verts: [u32; 3],
    /// Owned edges (indices into the mesh's edge list), the first `num_edges`.
    edges: [u32; 3],
    /// Their end vertices (mesh-local).
    edge_verts: [[u32; 2]; 3],
    num_verts: u8,
    num_edges: u8,
}

/// Per triangle of `tris` (whose sorted unique `edges` are given) its
/// [`Owned`] features.
fn owned_features(num_vertices: usize, tris: &[[u32; 3]], edges: &[[u32; 2]]) -> Vec<Owned> {
    let (tri_edges, vertex_owner, edge_owner) = ownership(num_vertices, tris, edges);
    tris.iter()
        .zip(&tri_edges)
        .enumerate()
        .map(|(t, (tri, te))| {
            let mut o = Owned::default();
            for &p in tri {
                if vertex_owner[p as usize] == t as u32 {
                    o.verts[usize::from(o.num_verts)] = p;
                    o.num_verts += 1;
                }
            }
            for &e in te {
                if edge_owner[e as usize] == t as u32 {
                    o.edges[usize::from(o.num_edges)] = e;
                    o.edge_verts[usize::from(o.num_edges)] = edges[e as usize];
                    o.num_edges += 1;
                }
            }
            o
        })
        .collect()
}

/// One mesh of a candidate search: its topology, its boxes for this search,
/// and where its vertices sit in the shared vertex space.
#[derive(Clone, Copy)]
struct MeshView<'a> {
    tris: &'a [[u32; 3]],
    owned: &'a [Owned],
    tri_boxes: &'a [Aabb],
    edge_boxes: &'a [Aabb],
    offset: u32,
}

/// Candidate tests per chunk of triangle pairs each emission buffer starts
/// with, per triangle of the chunk: twice the candidate list's start.
const EMIT_TESTS_PER_TRIANGLE_FACTOR: usize = 2;

/// Emission buffers for the pair chunks of a mesh of `num_triangles`
/// triangles, each with room for `tests_per_triangle` (times
/// [`EMIT_TESTS_PER_TRIANGLE_FACTOR`]) tests per triangle of its chunk.
fn emit_chunks(num_triangles: usize, tests_per_triangle: usize) -> Vec<Vec<Candidate>> {
    let per_chunk =
        PAIR_CHUNK.min(num_triangles) * tests_per_triangle.max(1) * EMIT_TESTS_PER_TRIANGLE_FACTOR;
    (0..num_triangles.div_ceil(PAIR_CHUNK))
        .map(|_| Vec::with_capacity(per_chunk))
        .collect()
}

/// Below this many triangle pairs, emission runs on the calling thread.
const EMIT_PARALLEL_MIN: usize = 2048;

/// Appends to `out` the tests of every pair `(a, b)` of the last query of
/// `ws` (`a` a triangle of `meshes.0`, `b` of `meshes.1`), in pair order
/// ([`emit_tests`]). Each chunk of the query emits into its own buffer of
/// `bufs` (in parallel from [`EMIT_PARALLEL_MIN`] pairs); the buffers are
/// appended in chunk order, so `out` is the serial emission's list for any
/// thread count. True if a buffer or `out` had to grow.
fn emit_chunked(
    ws: &PairWorkspace,
    bufs: &mut Vec<Vec<Candidate>>,
    out: &mut ArenaVec<'_, Candidate>,
    meshes: (&MeshView<'_>, &MeshView<'_>),
    points: &[Aabb],
    point_margin: f32,
) -> bool {
    let chunks = ws.num_chunks();
    let mut grew = false;
    if bufs.len() < chunks {
        bufs.resize_with(chunks, Vec::new);
        grew = true;
    }
    let work = |(c, buf): (usize, &mut Vec<Candidate>)| -> bool {
        let capacity = buf.capacity();
        buf.clear();
        for &(a, b) in ws.chunk_pairs(c) {
            emit_tests(buf, (meshes.0, a), (meshes.1, b), points, point_margin);
        }
        buf.capacity() != capacity
    };
    let active = &mut bufs[..chunks];
    grew |= if ws.pairs().len() >= EMIT_PARALLEL_MIN {
        active
            .par_iter_mut()
            .enumerate()
            .map(work)
            .reduce(|| false, |a, b| a || b)
    } else {
        active
            .iter_mut()
            .enumerate()
            .map(work)
            .filter(|&g| g)
            .count()
            > 0
    };
    let capacity = out.capacity();
    for buf in active.iter() {
        out.extend_from_slice(buf);
    }
    grew || out.capacity() != capacity
}

/// Emits the tests between triangle `a.1` of mesh `a.0` and triangle `b.1`
/// of mesh `b.0` (possibly the same mesh): owned vertices of each against the
/// other triangle, owned edges against owned edges, each kept only if its
/// boxes pass ([`ClothCollision::find_candidates`]): a point's box within
/// `point_margin` of the other triangle's box, edge boxes overlapping.
#[inline]
fn emit_tests(
    out: &mut Vec<Candidate>,
    a: (&MeshView<'_>, u32),
    b: (&MeshView<'_>, u32),
    points: &[Aabb],
    point_margin: f32,
) {
    for ((mesh, t), (omesh, u)) in [(a, b), (b, a)] {
        let own = &mesh.owned[t as usize];
        if own.num_verts == 0 {
            continue;
        }
        let other = omesh.tris[u as usize].map(|i| i + omesh.offset);
        let reach = omesh.tri_boxes[u as usize].inflate(point_margin);
        for &p in &own.verts[..usize::from(own.num_verts)] {
            let pg = p + mesh.offset;
            if other.contains(&pg) || !points[pg as usize].overlaps(&reach) {
                continue;
            }
            out.push(Candidate {
                kind: Kind::PointTriangle,
                verts: [pg, other[0], other[1], other[2]],
            });
        }
    }
    let ((am, ta), (bm, tb)) = (a, b);
    let (oa, ob) = (&am.owned[ta as usize], &bm.owned[tb as usize]);
    let nb = usize::from(ob.num_edges);
    if nb == 0 {
        return;
    }
    for k in 0..usize::from(oa.num_edges) {
        let [p0, p1] = oa.edge_verts[k].map(|i| i + am.offset);
        let abox = am.edge_boxes[oa.edges[k] as usize];
        for l in 0..nb {
            let [q0, q1] = ob.edge_verts[l].map(|i| i + bm.offset);
            if p0 == q0 || p0 == q1 || p1 == q0 || p1 == q1 {
                continue;
            }
            if !abox.overlaps(&bm.edge_boxes[ob.edges[l] as usize]) {
                continue;
            }
            out.push(Candidate {
                kind: Kind::EdgeEdge,
                verts: [p0, p1, q0, q1],
            });
        }
    }
}

/// Per triangle its three edge indices (edge k joins corners k and k+1), and
/// the owner triangle of every vertex and edge (the lowest-index triangle
/// holding it).
fn ownership(
    num_vertices: usize,
    tris: &[[u32; 3]],
    edges: &[[u32; 2]],
) -> (Vec<[u32; 3]>, Vec<u32>, Vec<u32>) {
    let mut vowner = vec![u32::MAX; num_vertices];
    let mut eowner = vec![u32::MAX; edges.len()];
    let mut tri_edges = Vec::with_capacity(tris.len());
    for (t, tri) in tris.iter().enumerate() {
        let mut te = [0u32; 3];
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            let key = [a.min(b), a.max(b)];
            let e = edges
                .binary_search(&key)
                .expect("every triangle edge is in the sorted edge list")
                as u32;
            te[k] = e;
            if eowner[e as usize] == u32::MAX {
                eowner[e as usize] = t as u32;
            }
            if vowner[a as usize] == u32::MAX {
                vowner[a as usize] = t as u32;
            }
        }
        tri_edges.push(te);
    }
    (tri_edges, vowner, eowner)
}

/// Unique sorted edges of a triangle list.
fn unique_edges(tris: &[[u32; 3]]) -> Vec<[u32; 2]> {
    let mut e: Vec<[u32; 2]> = tris
        .iter()
        .flat_map(|t| (0..3).map(move |k| [t[k].min(t[(k + 1) % 3]), t[k].max(t[(k + 1) % 3])]))
        .collect();
    e.sort_unstable();
    e.dedup();
    e
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use glam::Vec2;

    use super::*;
    use crate::collide::shapes::{Motion, Pose, Shape};
    use crate::mesh::generate::{GridSpec, grid};

    /// A small deterministic generator in [-1, 1).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        }

        fn vec(&mut self, scale: f32) -> Vec3 {
            Vec3::new(self.next(), self.next(), self.next()) * scale
        }
    }

    fn sheet(n: u32, size: f32, y: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let mesh = grid(&GridSpec {
            nx: n,
            ny: n,
            size: Vec2::splat(size),
            centre: Vec3::new(0.0, y, 0.0),
            ..GridSpec::default()
        })
        .unwrap();
        (mesh.positions, mesh.triangles)
    }

    /// An order-free key of a test: the point and the sorted triangle, or the
    /// two sorted edges in sorted order.
    fn key(kind: Kind, v: [u32; 4]) -> (Kind, [u32; 4]) {
        match kind {
            Kind::PointTriangle => {
                let mut t = [v[1], v[2], v[3]];
                t.sort_unstable();
                (kind, [v[0], t[0], t[1], t[2]])
            }
            Kind::EdgeEdge => {
                let a = [v[0].min(v[1]), v[0].max(v[1])];
                let b = [v[2].min(v[3]), v[2].max(v[3])];
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                (kind, [a[0], a[1], b[0], b[1]])
            }
        }
    }

    /// Every point–triangle and edge–edge test between non-adjacent features
    /// of the cloth (with itself) and of the cloth against the obstacle, in
    /// the shared vertex space (obstacle vertices from `n`).
    fn every_test(
        n: u32,
        tris: &[[u32; 3]],
        edges: &[[u32; 2]],
        otris: &[[u32; 3]],
        oedges: &[[u32; 2]],
    ) -> Vec<Candidate> {
        let shift = |t: &[u32; 3]| t.map(|i| i + n);
        let oshift = |e: &[u32; 2]| e.map(|i| i + n);
        let mut all = Vec::new();
        let mut pt = |p: u32, t: [u32; 3]| {
            if !t.contains(&p) {
                all.push(Candidate {
                    kind: Kind::PointTriangle,
                    verts: [p, t[0], t[1], t[2]],
                });
            }
        };
        for p in 0..n {
            for t in tris {
                pt(p, *t);
            }
            for t in otris {
                pt(p, shift(t));
            }
        }
        let m = otris.iter().flatten().copied().max().map_or(0, |k| k + 1);
        for p in n..n + m {
            for t in tris {
                pt(p, *t);
            }
        }
        let mut ee = |a: [u32; 2], b: [u32; 2]| {
            if !(a.contains(&b[0]) || a.contains(&b[1])) {
                all.push(Candidate {
                    kind: Kind::EdgeEdge,
                    verts: [a[0], a[1], b[0], b[1]],
                });
            }
        };
        for (i, a) in edges.iter().enumerate() {
            for b in &edges[i + 1..] {
                ee(*a, *b);
            }
            for b in oedges {
                ee(*a, oshift(b));
            }
        }
        all
    }

    /// The feature-level cull of `find_candidates` drops no test that
    /// detection would find: on a crumpled sheet over a thick obstacle sheet
    /// with random velocities, every test of the brute-force list that
    /// proximity (at x^n, pair η) or CCD (over the substep, η_c) detects is
    /// in the candidate list of that reach, and the list holds each test once.
    #[test]
    fn feature_cull_keeps_every_detectable_test() {
        let mut rng = Lcg(7);
        let (mut x, tris) = sheet(10, 0.08, 0.0);
        for p in &mut x {
            *p += rng.vec(0.004);
        }
        let v: Vec<Vec3> = x.iter().map(|_| rng.vec(0.6)).collect();
        let (ox, otris) = sheet(6, 0.1, -0.005);
        let ov: Vec<Vec3> = ox.iter().map(|_| rng.vec(0.2)).collect();
        let edges = unique_edges(&tris);
        let oedges = unique_edges(&otris);
        let n = x.len();
        let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
        cc.set_obstacles(&otris, &ox);
        let thickness: Vec<f32> = (0..ox.len()).map(|k| 0.001 * (k % 3) as f32).collect();
        cc.set_obstacle_thickness(&thickness);
        let h = 0.01;
        cc.x0[..n].copy_from_slice(&x);
        cc.v[..n].copy_from_slice(&v);
        cc.x0[n..].copy_from_slice(&ox);
        cc.v[n..].copy_from_slice(&ov);
        cc.update_end_positions(h);
        let settings = CollisionSettings::default();
        let eta = settings.thickness;
        let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
        let all = every_test(n as u32, &tris, &edges, &otris, &oedges);
        let arena = Bump::new();
        for reach in [Reach::Proximity, Reach::Swept] {
            let detected = |c: &Candidate| {
                let p = cc.positions(c, &cc.x0);
                match reach {
                    Reach::Proximity => {
                        let eta = f64::from(pair_eta(&cc.extra_thickness, c, eta));
                        match c.kind {
                            Kind::PointTriangle => {
                                proximity_point_triangle(p[0], [p[1], p[2], p[3]], eta).is_some()
                            }
                            Kind::EdgeEdge => {
                                proximity_edge_edge([p[0], p[1]], [p[2], p[3]], eta).is_some()
                            }
                        }
                    }
                    Reach::Swept => ccd(c.kind, p, cc.positions(c, &cc.x1), eta_c).is_some(),
                }
            };
            let expected: Vec<_> = all.iter().filter(|c| detected(c)).collect();
            let mut stats = CollisionStats::default();
            let mut list = ArenaVec::new_in(&arena);
            cc.find_candidates(&mut list, &settings, reach, &[], &mut stats);
            let listed: HashSet<_> = list.iter().map(|c| key(c.kind, c.verts)).collect();
            assert_eq!(listed.len(), list.len(), "{reach:?}: a test listed twice");
            for kind in [Kind::PointTriangle, Kind::EdgeEdge] {
                let found = expected.iter().filter(|c| c.kind == kind).count();
                assert!(found >= 20, "{reach:?} {kind:?}: only {found} detections");
            }
            for c in &expected {
                assert!(
                    listed.contains(&key(c.kind, c.verts)),
                    "{reach:?}: detectable {c:?} culled"
                );
            }
            assert!(
                list.len() < all.len() / 10,
                "{reach:?}: {} of {} tests listed",
                list.len(),
                all.len()
            );
        }
    }

    /// Bridson 2002 §3.10 step 4: the last-resort zone keeps being checked.
    /// A heavy patch falls through a light patch resting 1 cm above a floor,
    /// stopping 5 mm short of the floor itself. With no CCD rounds and a zone
    /// cap of 0, the first zone round takes the last resort, and the whole
    /// cloth moves rigidly with its mean velocity (≈ −2.5 m/s, 2.5 cm over the
    /// step) — through the floor, unless the next round merges the floor
    /// vertices it hits, so that the zone follows the floor. (Without the
    /// rounds after the last resort the light patch ends 14.75 mm below.)
    #[test]
    fn last_resort_zone_stops_at_the_obstacle_it_hits() {
        let (a, tris_a) = sheet(4, 0.2, 0.01);
        let (b, tris_b) = sheet(4, 0.2, 0.03);
        let na = a.len() as u32;
        let x: Vec<Vec3> = a.iter().chain(&b).copied().collect();
        let tris: Vec<[u32; 3]> = tris_a
            .iter()
            .copied()
            .chain(tris_b.iter().map(|t| t.map(|i| i + na)))
            .collect();
        let mut v = vec![Vec3::ZERO; x.len()];
        v[a.len()..].fill(Vec3::new(0.0, -2.5, 0.0));
        let (floor, floor_tris) = sheet(3, 1.0, 0.0);
        let edges = unique_edges(&tris);
        let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
        cc.set_obstacles(&floor_tris, &floor);
        let settings = CollisionSettings {
            ccd_rounds: 0,
            max_zone_rounds: 0,
            ..CollisionSettings::default()
        };
        let mass: Vec<f32> = (0..x.len())
            .map(|i| if i < a.len() { 0.001 } else { 0.1 })
            .collect();
        let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
        let h = 0.01;
        let obstacles = ObstacleMeshes {
            x0: &floor,
            x1: &floor,
            friction: &[],
            analytic: &[],
            colliders: &[],
            collider_vertices: &[],
            s0: 0.0,
            s1: 1.0,
        };
        let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
        assert!(stats.last_resort, "{stats:?}");
        let lowest = x
            .iter()
            .zip(&v)
            .map(|(p, w)| p.y + h * w.y)
            .fold(f32::INFINITY, f32::min);
        assert!(
            lowest >= 0.0,
            "a vertex ends {:.2} mm below the floor",
            -1e3 * lowest
        );
    }

    /// The last resort against bodies that move differently: two resting floors 0.6 m apart
    /// with patches A and C falling into them at 2 m/s, and between them a ceiling coming down
    /// at 2 m/s onto patch B, which rises into it at 2 m/s. With no rounds, the first detection
    /// pass takes the last resort; the cloth and the three bodies form one zone, whose best fit
    /// (no rigid motion rests at both ends and goes down in the middle) carries A and C into
    /// their floors. No new body is left to join, so the cloth gives way: A and C follow their
    /// floors (they stop) and B the ceiling, and the check finds nothing left.
    #[test]
    fn last_resort_gives_way_between_bodies_that_move_differently() {
        let shift = |(x, t): (Vec<Vec3>, Vec<[u32; 3]>), dx: f32| {
            (
                x.iter()
                    .map(|p| *p + Vec3::new(dx, 0.0, 0.0))
                    .collect::<Vec<_>>(),
                t,
            )
        };
        let join = |parts: &[&(Vec<Vec3>, Vec<[u32; 3]>)]| {
            let (mut x, mut t) = (Vec::new(), Vec::new());
            for (px, pt) in parts {
                let base = x.len() as u32;
                x.extend_from_slice(px);
                t.extend(pt.iter().map(|tri| tri.map(|i| i + base)));
            }
            (x, t)
        };
        let a = shift(sheet(4, 0.1, 0.005), -0.3);
        let b = shift(sheet(4, 0.1, 0.02), 0.0);
        let c = shift(sheet(4, 0.1, 0.005), 0.3);
        let (x, tris) = join(&[&a, &b, &c]);
        let falling = Vec3::new(0.0, -2.0, 0.0);
        let mut v = vec![falling; x.len()];
        v[a.0.len()..a.0.len() + b.0.len()].fill(-falling);
        let left = shift(sheet(3, 0.3, 0.0), -0.3);
        let right = shift(sheet(3, 0.3, 0.0), 0.3);
        let ceiling = sheet(3, 0.2, 0.03);
        let (soup, soup_tris) = join(&[&left, &ceiling, &right]);
        let h = 0.01;
        let ceiling_range = left.0.len()..left.0.len() + ceiling.0.len();
        let soup_end: Vec<Vec3> = soup
            .iter()
            .enumerate()
            .map(|(k, p)| {
                if ceiling_range.contains(&k) {
                    *p + h * falling
                } else {
                    *p
                }
            })
            .collect();
        let edges = unique_edges(&tris);
        let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
        cc.set_obstacles(&soup_tris, &soup);
        let settings = CollisionSettings {
            ccd_rounds: 0,
            max_zone_rounds: 0,
            ..CollisionSettings::default()
        };
        let mass = vec![0.01f32; x.len()];
        let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
        let obstacles = ObstacleMeshes {
            x0: &soup,
            x1: &soup_end,
            friction: &[],
            analytic: &[],
            colliders: &[],
            collider_vertices: &[],
            s0: 0.0,
            s1: 1.0,
        };
        let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
        assert!(stats.last_resort && stats.last_resort_gave_way, "{stats:?}");
        assert!(!stats.last_resort_stopped, "{stats:?}");
        assert_eq!(stats.last_resort_hits, 0, "{stats:?}");
        let in_b = a.0.len()..a.0.len() + b.0.len();
        for (i, w) in v.iter().enumerate() {
            let want = if in_b.contains(&i) {
                falling
            } else {
                Vec3::ZERO
            };
            assert!((*w - want).length() < 1e-4, "vertex {i}: {w}");
        }
    }

    /// A last resort that cannot clear its hits stops the cloth (`last_resort_stopped`): two
    /// triangles of one cloth, a vertex of one lying on the other (distance 0), moving together
    /// at 1 m/s. Every zone move is a translation that keeps them touching, so CCD reports the
    /// pair in every round; with a zone cap of 0 the first round takes the last resort, the next
    /// finds the same hit with nothing left to merge, and the free vertices keep x^n (their
    /// velocity is zero) instead of taking a move the stage could not check. Without the stop
    /// they would end with the zone's velocity.
    #[test]
    fn last_resort_that_cannot_clear_its_hits_stops_the_cloth() {
        let x = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.1, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 0.1),
            Vec3::new(0.02, 0.0, 0.02),
            Vec3::new(0.12, 0.05, 0.02),
            Vec3::new(0.02, 0.05, 0.12),
        ];
        let tris = vec![[0, 2, 1], [3, 5, 4]];
        let edges = unique_edges(&tris);
        let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
        let settings = CollisionSettings {
            ccd_rounds: 0,
            max_zone_rounds: 0,
            ..CollisionSettings::default()
        };
        let mass = vec![0.01f32; x.len()];
        let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
        let mut v = vec![Vec3::new(1.0, 0.0, 0.0); x.len()];
        let obstacles = ObstacleMeshes {
            x0: &[],
            x1: &[],
            friction: &[],
            analytic: &[],
            colliders: &[],
            collider_vertices: &[],
            s0: 0.0,
            s1: 1.0,
        };
        let stats = cc.resolve(&settings, 0.01, &x, &mut v, &mass, &inv_mass, &obstacles);
        assert!(stats.last_resort, "{stats:?}");
        assert!(stats.last_resort_stopped, "{stats:?}");
        assert!(v.iter().all(|w| *w == Vec3::ZERO), "{v:?}");
    }

    /// One free triangle: vertex 0 at `p`, the others 0.5 m farther out along
    /// `normal` (never close to anything), masses 0.01 kg.
    fn lone_triangle(p: Vec3, normal: Vec3, tangent: Vec3) -> (ClothCollision, Vec<Vec3>) {
        let x = vec![p, p + 0.5 * normal, p + 0.5 * normal + 0.1 * tangent];
        let tris = [[0, 1, 2]];
        let edges = unique_edges(&tris);
        let cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
        (cc, x)
    }

    /// Runs the stage (no CCD rounds needed: nothing crosses) on the lone
    /// triangle against `colliders` over the part `[s0, 1]` of a substep;
    /// returns vertex 0's new velocity and the close pairs.
    fn repel_vertex(
        p: Vec3,
        normal: Vec3,
        tangent: Vec3,
        v0: Vec3,
        colliders: &[ColliderView],
        h: f32,
        s0: f32,
    ) -> (Vec3, u32) {
        let (mut cc, x) = lone_triangle(p, normal, tangent);
        let mass = [0.01; 3];
        let inv_mass = [100.0; 3];
        let mut v = vec![v0, Vec3::ZERO, Vec3::ZERO];
        let obstacles = ObstacleMeshes {
            colliders,
            s0,
            ..ObstacleMeshes::NONE
        };
        let settings = CollisionSettings::default();
        let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
        assert_eq!(v[1], Vec3::ZERO);
        assert_eq!(v[2], Vec3::ZERO);
        (v[0], stats.proximity_pairs)
    }

    fn collider(shape: Shape, pose: Pose, motion: Motion) -> ColliderView {
        ColliderView {
            shape,
            pose,
            motion,
            friction: 0.3,
        }
    }

    /// A vertex 1 mm off a plane, sphere, capsule or box (η = 4 mm, so the overlap
    /// is d = 3 mm), approaching at 1 m/s and sliding at 0.5 m/s, m = 0.01 kg,
    /// h = 0.01 s, k = 100 N/m, μ = √(0.3 · 0.3): Bridson 2002 (METHODS eq.
    /// 3.11–3.13) prescribes (a) the approach cancelled, (b) the spring change
    /// min(hkd/m, 0.1 d/h) = min(0.3, 0.03) = 0.03 m/s outwards, then friction
    /// removing μ Δv_N = 0.3 · 1.03 = 0.309 m/s of the slide. The stage applies
    /// it for the sphere and the capsule; the plane and the box are left to
    /// their tessellations (the vertex keeps its velocity), and
    /// [`response::repel_point_surface`] with their surface points gives the
    /// same prescribed change.
    #[test]
    fn vertex_near_a_smooth_collider_gets_bridsons_repulsion_and_friction() {
        let pose = Pose {
            translation: Vec3::new(0.1, 0.2, 0.3),
            rotation: glam::Quat::from_rotation_z(0.3),
        };
        let cases = [
            (Shape::Plane, Vec3::new(0.2, 0.0, -0.1), Vec3::Y, Vec3::X),
            (
                Shape::Sphere { radius: 0.3 },
                0.3 * Vec3::new(1.0, 1.0, 0.0).normalize(),
                Vec3::new(1.0, 1.0, 0.0).normalize(),
                Vec3::Z,
            ),
            (
                Shape::Capsule {
                    radius: 0.1,
                    half_length: 0.5,
                },
                Vec3::new(0.1, 0.2, 0.0),
                Vec3::X,
                Vec3::Y,
            ),
            (
                Shape::Cuboid {
                    half_extents: Vec3::new(0.2, 0.1, 0.3),
                },
                Vec3::new(0.05, 0.1, 0.1),
                Vec3::Y,
                Vec3::X,
            ),
        ];
        for (shape, local_p, local_n, local_t) in cases {
            let n = pose.rotation * local_n;
            let t = pose.rotation * local_t;
            let p = pose.transform_point(local_p) + 0.001 * n;
            let v0 = -1.0 * n + 0.5 * t;
            let col = collider(shape, pose, Motion::default());
            let (v, close) = repel_vertex(p, n, t, v0, &[col], 0.01, 0.0);
            let expected = 0.03 * n + (0.5 - 0.309) * t;
            if shape.repels_from_surface() {
                assert_eq!(close, 1, "{shape:?}");
                assert!(
                    v.abs_diff_eq(expected, 1e-5),
                    "{shape:?}: {v} != {expected}"
                );
            } else {
                assert_eq!((v, close), (v0, 0), "{shape:?}");
            }
            let sp = shape.surface_point(&pose, p);
            let mut w = v0;
            response::repel_point_surface(
                &mut w,
                100.0,
                Vec3::ZERO,
                sp.normal,
                0.004 - sp.distance,
                0.01,
                100.0,
                0.3,
            );
            assert!(
                w.abs_diff_eq(expected, 1e-5),
                "{shape:?}: {w} != {expected}"
            );
        }
    }

    /// Moving colliders: the obstacle side moves with the surface point
    /// nearest the vertex. A sphere rising at 0.5 m/s under a resting vertex
    /// 1 mm above its top: (a) 0.5 m/s, (b) + 0.03 m/s. A sphere (r = 0.3 m)
    /// spinning at 0.02 rad/s about y under a resting vertex 1 mm off its
    /// equator, whose surface slides at 6 mm/s there: (b) 0.03 m/s outwards,
    /// and friction μ Δv_N = 9 mm/s ≥ 6 mm/s, so the vertex sticks (static
    /// friction: it takes the surface's tangential velocity).
    #[test]
    fn moving_collider_pushes_and_drags_the_vertex() {
        let rising = Motion {
            linear_velocity: Vec3::new(0.0, 0.5, 0.0),
            angular_velocity: Vec3::ZERO,
        };
        let ball = collider(Shape::Sphere { radius: 0.3 }, Pose::IDENTITY, rising);
        let p = Vec3::new(0.0, 0.301, 0.0);
        let (v, _) = repel_vertex(p, Vec3::Y, Vec3::X, Vec3::ZERO, &[ball], 0.01, 0.0);
        assert!(v.abs_diff_eq(Vec3::new(0.0, 0.53, 0.0), 1e-6), "{v}");

        let spin = Motion {
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::new(0.0, 0.02, 0.0),
        };
        let ball = collider(Shape::Sphere { radius: 0.3 }, Pose::IDENTITY, spin);
        let p = Vec3::new(0.301, 0.0, 0.0);
        let (v, close) = repel_vertex(p, Vec3::X, Vec3::Z, Vec3::ZERO, &[ball], 0.01, 0.0);
        assert_eq!(close, 1);
        assert!(v.abs_diff_eq(Vec3::new(0.03, 0.0, -0.006), 1e-6), "{v}");
    }

    /// Over the part [s0, 1] of a substep (step control, IMEX pieces) the
    /// collider stands where its motion has taken it at s0: a sphere rising at
    /// 1 m/s over a 10 ms substep is 5 mm up at s0 = 0.5 (the part lasts
    /// h = 5 ms), so a vertex 7.5 mm above its top is 2.5 mm off it, within η; at the
    /// start of the substep it is 7.5 mm off, out of reach.
    #[test]
    fn collider_pose_follows_the_covered_part_of_the_substep() {
        let rising = Motion {
            linear_velocity: Vec3::new(0.0, 1.0, 0.0),
            angular_velocity: Vec3::ZERO,
        };
        let ball = collider(Shape::Sphere { radius: 0.3 }, Pose::IDENTITY, rising);
        let p = Vec3::new(0.0, 0.3075, 0.0);
        let v0 = Vec3::new(0.0, 1.0, 0.0);
        let (_, close) = repel_vertex(p, Vec3::Y, Vec3::X, v0, &[ball], 0.01, 0.0);
        assert_eq!(close, 0);
        let (v, close) = repel_vertex(p, Vec3::Y, Vec3::X, v0, &[ball], 0.005, 0.5);
        assert_eq!(close, 1);
        // Moving with the sphere: no inelastic part; the spring adds
        // min(hkd/m, 0.1 d/h) = min(0.075, 0.03) with d = 1.5 mm, h = 5 ms.
        assert!(v.abs_diff_eq(Vec3::new(0.0, 1.03, 0.0), 1e-5), "{v}");
    }

    /// With the sphere's tessellation flagged as the collider's, the proximity
    /// search leaves it out: a small sheet resting 2 mm above the sphere's top
    /// has exactly one close pair per vertex (the vertex–surface pairs), not
    /// the vertex–triangle and edge–edge pairs of the tessellation, and every
    /// vertex gets the capped spring 0.1 d/h along its own normal.
    #[test]
    fn curved_collider_tessellation_is_left_out_of_the_proximity_search() {
        let r = 0.3;
        let (x, tris) = sheet(4, 0.02, r + 0.002);
        let ball = crate::mesh::icosphere(r, 4).unwrap();
        let edges = unique_edges(&tris);
        let mass = vec![0.01; x.len()];
        let inv_mass = vec![100.0; x.len()];
        let shape = Shape::Sphere { radius: r };
        let sphere = collider(shape, Pose::IDENTITY, Motion::default());
        let flags = vec![true; ball.positions.len()];
        let settings = CollisionSettings::default();
        let h = 0.01;
        let run = |analytic: &[bool], colliders: &[ColliderView]| {
            let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
            cc.set_obstacles(&ball.triangles, &ball.positions);
            let mut v = vec![Vec3::ZERO; x.len()];
            let obstacles = ObstacleMeshes {
                x0: &ball.positions,
                x1: &ball.positions,
                friction: &[],
                analytic,
                colliders,
                collider_vertices: &[[0, ball.positions.len() as u32]],
                s0: 0.0,
                s1: 1.0,
            };
            let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
            (v, stats.proximity_pairs)
        };
        let (v, close) = run(&flags, &[sphere]);
        assert_eq!(close as usize, x.len());
        for (p, w) in x.iter().zip(&v) {
            let sp = shape.surface_point(&Pose::IDENTITY, *p);
            let expected = (0.1 * (0.004 - sp.distance) / h) * sp.normal;
            assert!(w.abs_diff_eq(expected, 1e-5), "{w} != {expected}");
        }
        let (_, tessellation_pairs) = run(&[], &[]);
        assert!(
            tessellation_pairs as usize > x.len(),
            "{tessellation_pairs}"
        );
    }
}
