//! The collision stage of Bridson, Fedkiw & Anderson 2002 for one cloth (or several sharing it).
//!
//! Given start positions x^n and candidate velocities v^{n+1/2} from the internal dynamics, it
//! changes velocities only (Bridson et al. 2002 §4), as a sequence of stages, each in its own
//! file under `resolve/`:
//!
//! 1. strain limiting (§3), optional — and again before every CCD round;
//! 2. the substep's one search (`broad_phase.rs`): the point–triangle and edge–edge tests
//!    that can be close at x^n or collide over the substep, from boxes swept through the
//!    substep; topological neighbours from a list built once;
//! 3. repulsion and friction (`repulsion.rs`, §6.2–6.3) for every test closer than the
//!    thickness η at x^n, and against the exact surface of every curved analytic collider;
//! 4. up to `ccd_rounds` rounds of continuous collision detection (`ccd_rounds.rs`, §6.4) with
//!    inelastic impulses that keep a minimum separation, each on the list brought up to its
//!    velocities by re-querying only what changed, and vertex CCD against the exact surfaces
//!    of the curved colliders (`analytic_ccd.rs`);
//! 5. rigid impact zones (`zone_rounds.rs`, §6.5; Provot 1997), merged round by round while
//!    collisions remain, within their cap and the frame's deadline, then the bounded last
//!    resort (*a bounded stage* below).
//!
//! `docs/methods/collision-detection.md` derives the search and the analytic CCD.
//!
//! **One vertex space.** Cloth vertices come first, then the vertices of every
//! obstacle mesh; obstacle (and pinned) vertices have inverse mass 0 and their
//! prescribed velocity, so every stencil, impulse and impact zone treats both
//! alike.
//!
//! **Several cloths.** A stage may serve several cloths of a world at once
//! ([`ClothCollision::new_shared`], `resolve/members.rs`, `docs/methods/cloth-layers.md`):
//! their vertices come first, member after member, and every stage below treats their
//! triangles alike.
//!
//! **Thickness.** A pair is close within η, the cloth's thickness, plus the
//! largest own thickness of its obstacle vertices
//! ([`ClothCollision::set_obstacle_thickness`]; 0 for cloth–cloth pairs), so
//! an obstacle mesh's thickness adds to the cloth's. In a shared stage η is the
//! thinnest member's and each member's excess is added per vertex like an
//! obstacle's thickness, so a pair of two cloths keeps the larger of theirs. CCD keeps its tolerance
//! and minimum separation from η alone: thickness is a repulsion distance,
//! and CCD only has to keep the two sides from crossing.
//!
//! **Stencils and impulses** come from [`super::response`]: a pair's two sides,
//! their interpolation weights and the normal between them, and the impulses
//! of Bridson et al. 2002 §6.1–6.4 applied through them.
//!
//! **Candidate lists.** The tests and their detection flags are lists in the caller's frame
//! arena (`runtime::arena`, [`ClothCollision::resolve_in`]); the triangle pair lists are
//! preallocated pools ([`PoolSizes`]), filled in parallel chunks, and each chunk's tests are
//! emitted in parallel into a preallocated buffer of its own, then appended to the list in
//! chunk order (the serial order for any thread count).
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
//! alike). At most `LAST_RESORT_PASSES` (3) detection passes check that move, each
//! joining the bodies its collisions touch. Collisions still left mean no rigid
//! motion clears them: with nothing kinematic moving the free vertices stop
//! (x^{n+1} = x^n exactly, clean against everything at rest); otherwise the cloth
//! gives way, each free vertex following the body nearest it, each such move checked by a
//! pass (at most `GIVE_WAY_PASSES` (2), the second seeded by the first's check too); the
//! vertices of stencils still colliding then go over to the stencil's body or slide along their
//! own, each round checked by a pass (at most `SLIDE_PASSES` (2)), and the last check's
//! collisions are what is left (`CollisionStats::last_resort_hits`). Past the deadline a
//! substep therefore costs at most the round in flight, one detection pass (the zone loop's,
//! whose collisions start the last resort), and the last resort: `LAST_RESORT_PASSES` +
//! `GIVE_WAY_PASSES` + `SLIDE_PASSES` detection passes, linear work and at most five CCD tests
//! per stencil still colliding in a slide round.
#![deny(unsafe_code)]

use std::time::Instant;

use bumpalo::Bump;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

use super::bvh::{
    Aabb, Bvh, PAIR_CHUNK, PairWorkspace, WideBvh, cross_pairs, cross_pairs_of, self_pairs_of,
    self_pairs_wide, triangle_boxes,
};
use super::ccd::{
    CCD_TOLERANCE_FRACTION, CcdHit, ccd_edge_edge, ccd_point_triangle, min_separation,
};
use super::impact_zones::ImpactZones;
use super::last_resort::LastResort;
use super::proximity::{
    closest_point_triangle, closest_points_edge_edge, proximity_edge_edge, proximity_point_triangle,
};
use super::response::{self, Stencil};
use super::shapes::{ColliderView, Shape};
use super::smoothing::{SmoothingReport, VelocitySmoother};
use super::strain_limit::{StrainLimit, StrainLimiter};

mod analytic_ccd;
mod broad_phase;
mod ccd_rounds;
mod detect;
mod members;
mod reference_bounds;
mod repulsion;
#[cfg(test)]
mod tests;
mod zone_rounds;

use broad_phase::{
    EitherLayer, EmitBuffer, LayerBoxes, NeighbourTests, Owned, Reach, emit_chunks, owned_features,
    unique_edges,
};
use detect::{
    apart_by_bound, ccd, collides, detect_parallel, distance_lower_bound, far_by_bound, margin,
    near, pair_eta, surely_far,
};
use members::Members;
pub use members::{MemberMesh, MemberSettings};
use reference_bounds::ReferenceBounds;

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

    /// Seconds into the world's substep `h` at which the covered part starts (the analytic
    /// colliders' poses there follow from their motions).
    #[must_use]
    pub fn collider_time(&self, h: f32) -> f32 {
        let span = self.s1 - self.s0;
        if self.s0 > 0.0 && span > 0.0 {
            self.s0 * h / span
        } else {
            0.0
        }
    }

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

impl Kind {
    /// How many of a test's four vertices are on its first side: the point (1) or the first
    /// edge (2); the rest are the triangle or the second edge.
    #[inline]
    fn split(self) -> usize {
        match self {
            Kind::PointTriangle => 1,
            Kind::EdgeEdge => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    kind: Kind,
    verts: [u32; 4],
    /// The layers of the search whose cull passed the test, bit `l` for layer `l`
    /// ([`LayerBoxes`]: [`SWEPT`] for CCD, [`AT_START`] for proximity). Each layer's cull is a
    /// necessary condition of its detection at the velocities the test was listed with, and a
    /// listed test keeps those velocities (a search drops and lists again every test with a
    /// changed vertex), so a detection skips the tests its layer did not pass.
    layers: u8,
}

/// [`Candidate::layers`] bit of the swept layer (CCD from x^n to x^n + h v).
const SWEPT: u8 = 1;
/// [`Candidate::layers`] bit of the layer at x^n (proximity).
const AT_START: u8 = 2;

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
    /// The four-wide copy of `bvh` the full search queries ([`self_pairs_wide`]).
    wide: WideBvh,
    boxes: Vec<Aabb>,
    /// The boxes of the current search, per layer ([`LayerBoxes`]).
    layers: [LayerBoxes; 2],
    /// Layer 0 of `layers` holds every cloth vertex's, triangle's and edge's swept boxes at the
    /// stage's x^n and the velocities searched with (`v_searched`): set by every search, cleared
    /// when a stage loads new positions or obstacles are set. An update relies on it to
    /// recompute only the changed boxes ([`ClothCollision::update_candidates`]).
    swept_boxes_current: bool,
    /// Boxes holding both layers' cloth boxes in a search with two layers ([`EitherLayer`]).
    either: EitherLayer,
    /// The tests of triangle pairs that share a vertex, built once ([`NeighbourTests`]): the
    /// tree search leaves such pairs out.
    neighbours: NeighbourTests,
    /// The neighbour tests' bounds kept from a reference configuration ([`ReferenceBounds`]).
    reference_bounds: ReferenceBounds,
    obstacle_bvh: Option<Bvh>,
    obstacle_boxes: Vec<Aabb>,
    obstacle_tris: Vec<[u32; 3]>,
    /// Per obstacle triangle the vertices and edges it owns.
    obstacle_owned: Vec<Owned>,
    obstacle_edges: Vec<[u32; 2]>,
    self_ws: PairWorkspace,
    cross_ws: PairWorkspace,
    /// Per chunk of triangle pairs (the chunks of [`PairWorkspace`]) the
    /// tests it emits, filled in parallel and concatenated in chunk order
    /// ([`emit_chunked`]); preallocated like the pair pools.
    emit_chunks: Vec<EmitBuffer>,
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
    /// Per vertex of the shared space: its velocity differs from the one the candidate list's
    /// boxes were built with (`v_searched`), so its tests are searched again
    /// ([`ClothCollision::update_candidates`]).
    changed: Vec<bool>,
    /// Per cloth triangle: it holds a `changed` vertex.
    tri_changed: Vec<bool>,
    /// The cloth triangles holding a `changed` vertex, ascending (capacity: every triangle).
    changed_tris: Vec<u32>,
    /// The velocities the candidate list's boxes were built with.
    v_searched: Vec<Vec3>,
    x0: Vec<Vec3>,
    v: Vec<Vec3>,
    x1: Vec<Vec3>,
    inv_mass: Vec<f32>,
    mass: Vec<f32>,
    /// Coulomb coefficient per vertex of the shared space: the cloth's for
    /// cloth vertices, the obstacle surface's for obstacle vertices.
    surface_friction: Vec<f32>,
    /// Thickness added to η by each vertex of the shared space: 0 for cloth
    /// vertices, the obstacle's own thickness for obstacle vertices.
    extra_thickness: Vec<f32>,
    /// Largest entry of `extra_thickness` over the obstacle vertices.
    max_extra_thickness: f32,
    /// Largest entry of `extra_thickness` over the cloth vertices (0 for one cloth).
    max_cloth_extra: f32,
    /// The cloths of a stage shared by several ([`ClothCollision::new_shared`]); `None` for
    /// one cloth's own stage.
    members: Option<Members>,
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
    /// Whether [`ClothCollision::resolve_in`] keeps the cloth–cloth pairs its repulsion
    /// pushed apart ([`ClothCollision::repelled`]); off unless a caller asks.
    record_repelled: bool,
    /// The cloth–cloth pairs the last repulsion pushed apart, in the order it met them
    /// (empty unless `record_repelled`).
    repelled: Vec<RepelledPair>,
}

/// A cloth–cloth pair the repulsion of a collision pass pushed apart (Bridson et al. 2002
/// §6.2): the stencil `Σ c_i x_i` (the second side's contact point minus the first's, both at
/// `x^n`), its unit normal and separation at `x^n`, and the overlap `d = η − separation`. The
/// repulsion leaves the pair alone when its normal velocity `n · Σ c_i v_i` is at least
/// `0.1 d / h` (`response::repel`), so a position `x` at the end of the substep with
/// `n · Σ c_i x_i ≥ separation + 0.1 d` gives it nothing to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepelledPair {
    /// The pair's cloth vertices: first side, then second.
    pub verts: [u32; 4],
    /// The signed coefficients `c_i` ([`Stencil::coefficients`]).
    pub coefficients: [f64; 4],
    /// Unit normal from the first side towards the second.
    pub normal: DVec3,
    /// `n · Σ c_i x_i` at `x^n` (m).
    pub separation: f64,
    /// `η − separation` (m).
    pub overlap: f64,
}

impl RepelledPair {
    /// The separation `n · Σ c_i x_i` at the end of the substep at which the repulsion leaves
    /// the pair alone: its separation at `x^n` plus the fraction of its overlap the repulsion
    /// asks for (`response::REPULSION_OVERLAP_FRACTION`).
    #[must_use]
    pub fn left_alone_separation(&self) -> f64 {
        self.separation + response::REPULSION_OVERLAP_FRACTION * self.overlap
    }
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
        let neighbours = NeighbourTests::new(num_vertices, triangles, &owned);
        let mut emit_chunks = emit_chunks(triangles.len(), PoolSizes::default().tests_per_triangle);
        neighbours.reserve_in(&mut emit_chunks);
        let mut boxes = vec![Aabb::EMPTY; triangles.len()];
        triangle_boxes(x, triangles, 0.0, &mut boxes);
        let bvh = Bvh::build(&boxes);
        let wide = WideBvh::from_tree(&bvh);
        Self {
            n: num_vertices,
            tris: triangles.to_vec(),
            owned,
            edges: edges.to_vec(),
            rest_lengths: rest_lengths.to_vec(),
            bvh,
            wide,
            boxes,
            reference_bounds: ReferenceBounds::new(neighbours.len(), num_vertices),
            neighbours,
            layers: [
                LayerBoxes::new(num_vertices, triangles.len(), edges.len()),
                LayerBoxes::new(num_vertices, triangles.len(), edges.len()),
            ],
            either: EitherLayer::new(triangles.len(), edges.len()),
            obstacle_bvh: None,
            obstacle_boxes: Vec::new(),
            obstacle_tris: Vec::new(),
            obstacle_owned: Vec::new(),
            obstacle_edges: Vec::new(),
            // Pools sized at creation (no allocation per step); a
            // larger result grows them once and is reported as an overflow.
            self_ws: PairWorkspace::with_capacity(triangles.len(), SELF_PAIRS_PER_TRIANGLE),
            cross_ws: PairWorkspace::with_capacity(triangles.len(), OBSTACLE_PAIRS_PER_TRIANGLE),
            emit_chunks,
            candidates_high_water: triangles.len() * PoolSizes::default().tests_per_triangle,
            swept_boxes_current: false,
            own_arena: Bump::new(),
            touched: vec![false; num_vertices],
            dirty: vec![true; num_vertices],
            changed: vec![false; num_vertices],
            tri_changed: vec![false; triangles.len()],
            changed_tris: Vec::with_capacity(triangles.len()),
            v_searched: vec![Vec3::ZERO; num_vertices],
            x0: vec![Vec3::ZERO; num_vertices],
            v: vec![Vec3::ZERO; num_vertices],
            x1: vec![Vec3::ZERO; num_vertices],
            inv_mass: vec![0.0; num_vertices],
            mass: vec![0.0; num_vertices],
            surface_friction: vec![0.0; num_vertices],
            extra_thickness: vec![0.0; num_vertices],
            max_extra_thickness: 0.0,
            max_cloth_extra: 0.0,
            members: None,
            zones: ImpactZones::new(num_vertices),
            last: LastResort::new(num_vertices, edges),
            strain: StrainLimiter::new(num_vertices, edges),
            smoother: VelocitySmoother::new(num_vertices, edges),
            longest_rest_edge: rest_lengths.iter().copied().fold(0.0, f32::max),
            leave_out: Vec::new(),
            record_repelled: false,
            repelled: Vec::new(),
        }
    }

    /// Whether the next passes keep the cloth–cloth pairs their repulsion pushes apart
    /// ([`ClothCollision::repelled`]). Off by default; a stage shared by several cloths never
    /// keeps them. The list grows to the most pairs a pass has repelled and then stays.
    pub fn record_repelled(&mut self, on: bool) {
        self.record_repelled = on;
        self.repelled.clear();
    }

    /// The cloth–cloth pairs the repulsion of the last pass pushed apart, in its order
    /// (empty unless [`ClothCollision::record_repelled`] is on).
    #[must_use]
    pub fn repelled(&self) -> &[RepelledPair] {
        &self.repelled
    }

    /// Replaces the collision pools by pools of `sizes` (emptied: the next
    /// queries refill them, growing them if they are too small). Called
    /// between frames, never in a step; it allocates.
    pub fn set_pool_sizes(&mut self, sizes: PoolSizes) {
        let ntri = self.tris.len();
        self.self_ws = PairWorkspace::with_capacity(ntri, sizes.self_pairs_per_triangle);
        self.cross_ws = PairWorkspace::with_capacity(ntri, sizes.obstacle_pairs_per_triangle);
        self.emit_chunks = emit_chunks(ntri, sizes.tests_per_triangle);
        self.neighbours.reserve_in(&mut self.emit_chunks);
        self.candidates_high_water = ntri * sizes.tests_per_triangle;
    }

    /// Sets the obstacle meshes this cloth meets (all of them as one soup:
    /// `triangles` index `x`, the soup's positions now). Called when
    /// obstacles are added, never in a step.
    pub fn set_obstacles(&mut self, triangles: &[[u32; 3]], x: &[Vec3]) {
        let m = x.len();
        self.obstacle_edges = unique_edges(triangles);
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
        self.swept_boxes_current = false;
        for buf in [&mut self.x0, &mut self.v, &mut self.x1] {
            buf.resize(total, Vec3::ZERO);
        }
        for layer in &mut self.layers {
            layer.set_obstacles(total, triangles.len(), self.obstacle_edges.len());
        }
        self.inv_mass.resize(total, 0.0);
        self.mass.resize(total, 0.0);
        self.surface_friction.resize(total, 0.0);
        // Obstacle thickness comes from set_obstacle_thickness; 0 until then.
        self.extra_thickness.clear();
        self.extra_thickness.resize(total, 0.0);
        self.max_extra_thickness = 0.0;
        self.max_cloth_extra = 0.0;
        self.touched.resize(total, false);
        self.leave_out.resize(m, false);
        self.dirty.resize(total, true);
        self.changed.resize(total, false);
        self.v_searched.resize(total, Vec3::ZERO);
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
        pair_eta(&self.extra_thickness, self.n, c, eta)
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
        self.repelled.clear();
        self.strain.forget_contacts();
        // 1. Strain limiting on the velocities the internal dynamics gave.
        if let Some(limit) = &settings.strain_limit {
            let report =
                self.strain
                    .apply(limit, h, x0, v, inv_mass, &self.edges, &self.rest_lengths);
            stats.strain_sweeps = report.sweeps;
        }
        stats.times.strain_ms += lap_ms(&mut clock);
        self.load(h, x0, v, mass, inv_mass, obstacles, settings.friction);
        let mut candidates = ArenaVec::with_capacity_in(self.candidates_high_water, arena);
        let mut found = ArenaVec::with_capacity_in(self.candidates_high_water, arena);
        // The substep's one full search, at the velocities it starts from.
        self.update_end_positions(h);
        self.v_searched.copy_from_slice(&self.v);
        self.set_proximity_leave_out(obstacles, settings);
        self.find_candidates(&mut candidates, settings, Reach::Substep, &mut stats);
        // 2. Repulsion and friction at x^n.
        self.repulsion(&candidates, &mut found, settings, h, obstacles, &mut stats);
        stats.times.proximity_ms += lap_ms(&mut clock);
        // 3. CCD rounds with collision impulses.
        let t0 = obstacles.collider_time(h);
        let remaining = self.ccd_rounds(
            &mut candidates,
            &mut found,
            settings,
            h,
            (obstacles.colliders, t0),
            &mut clock,
            &mut stats,
            stop,
        );
        // 4. Rigid impact zones, then the last resort.
        if remaining {
            self.zone_rounds(&mut candidates, &mut found, settings, h, &mut stats, stop);
        }
        stats.times.zones_ms += lap_ms(&mut clock);
        v.copy_from_slice(&self.v[..n]);
        stats.arena_bytes = arena.allocated_bytes() - arena.chunk_capacity();
        self.candidates_high_water = self.candidates_high_water.max(candidates.capacity());
        stats
    }

    /// Copies the cloth's state into the shared vertex space, then the obstacle vertices over
    /// the covered part of the substep (inverse mass 0, their prescribed velocity).
    #[allow(clippy::too_many_arguments)]
    fn load(
        &mut self,
        h: f32,
        x0: &[Vec3],
        v: &[Vec3],
        mass: &[f32],
        inv_mass: &[f32],
        obstacles: &ObstacleMeshes<'_>,
        friction: f32,
    ) {
        let n = self.n;
        self.swept_boxes_current = false;
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
        // A shared stage keeps each member's coefficient ([`ClothCollision::set_members`]).
        if self.members.is_none() {
            self.surface_friction[..n].fill(friction);
        }
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

    fn update_end_positions(&mut self, h: f32) {
        for ((x1, x0), v) in self.x1.iter_mut().zip(&self.x0).zip(&self.v) {
            *x1 = *x0 + h * *v;
        }
    }
}
