//! Collision-aware Loop subdivision of an output mesh (Bridson, Fedkiw & Anderson 2002,
//! "Collision-aware subdivision"; `docs/methods/bridson-collisions.md` §3.11).
//!
//! Loop subdivision ([`LoopSubdivision`]) smooths the shown mesh, and smoothing can pull a fold
//! through a nearby layer or an obstacle. Per level, the sources' three steps:
//!
//! 1. the *linear* refinement `x_lin` (edge midpoints, nothing moves): the same surface as the
//!    coarse mesh, so intersection-free whenever it is;
//! 2. the Loop positions `x_loop` of the refined mesh;
//! 3. the move `x_lin → x_loop` as a motion over one pseudo-step of unit length, velocity
//!    `v = x_loop − x_lin`, handed to the cloth's own collision stage ([`ClothCollision`],
//!    `docs/methods/bridson-collisions.md` §3.4–3.10) against the refined mesh itself and the obstacle meshes: inelastic
//!    impulses for close approaching pairs, CCD rounds, and the rigid impact zones as the
//!    fail-safe. The level's output is `x_lin + v` with the corrected `v`.
//!
//! Each level starts from the previous level's *collision-aware* output (`docs/methods/bridson-collisions.md` §3.11 runs the
//! steps once per level), so every motion starts intersection-free and is one level's smoothing,
//! which is small.
//!
//! **Fail-safe of the fail-safe (a departure).** When the zone loop reaches its cap, the
//! collision stage's last resort moves the whole cloth rigidly, with no check against the
//! obstacles afterwards. A level that ends that way keeps its linear refinement instead
//! (`v = 0`): the same surface as its input, so intersection-free whenever the input is, only
//! not smoothed at that level. Counted in [`SubdivisionStats::linear_levels`].
//!
//! **Settings of the pseudo-step** ([`pseudo_step_settings`]), derived from the cloth's:
//! - thickness η: the cloth's own collision thickness, unchanged (so the shown mesh keeps the
//!   simulation's layer separation; CCD keeps its minimum separation 0.1 η and tolerance 0.01 η);
//! - self-collision always on (smoothing creates self-intersections even where the simulation
//!   never met itself); the obstacle meshes (tessellated colliders and triangle obstacles) as
//!   obstacles, frozen at the frame's pose (their pseudo-velocity is 0), with their own thickness;
//! - no repulsion spring (`k = 0`) and no friction: the pseudo-step has no physics. Only the
//!   inelastic part of the repulsion remains: a pair already closer than η does not approach.
//!   A *departure*: with a spring, pairs closer than η would be pushed apart, and the output would
//!   differ from Loop where nothing collides;
//! - no strain limiting and no velocity smoothing; the cloth's CCD round count; its zone cap,
//!   lowered to [`PSEUDO_STEP_ZONE_ROUNDS`];
//! - unit masses: impact zones move rigidly with the mean displacement of their vertices
//!   (every vertex of the refined mesh counts alike; the pseudo-step conserves nothing physical).
//!
//! **Limitation.** When the refined edges approach η (many levels on a fine cloth), non-adjacent
//! triangles of one flat sheet come within η of each other and the inelastic part starts to damp
//! in-plane smoothing; with 33 × 33 or 65 × 65 cloths and η = 4 mm this needs more than 2 levels.
#![deny(unsafe_code)]

use glam::Vec3;

use super::resolve::{ClothCollision, CollisionSettings, CollisionStats, ObstacleMeshes};
use crate::mesh::{LoopSubdivision, MeshError};

/// Cap on the impact-zone rounds of the pseudo-step (the cloth's cap if lower). Past it a level
/// keeps its linear refinement ([`SubdivisionStats::linear_levels`]). On pile-33 the zone loop
/// either settled within a few rounds or not at all (it ran into the cloth's cap of 256 at some
/// frames, at 30–50 s a frame), so a low cap loses no smoothing that would have come, and bounds
/// the time.
pub const PSEUDO_STEP_ZONE_ROUNDS: u32 = 32;

/// The collision settings of the pseudo-step derived from a cloth's `cloth` settings (module
/// doc): same thickness, CCD rounds and zone cap; self-collision on; no repulsion spring, no
/// friction, no strain limiting, no velocity smoothing.
#[must_use]
pub fn pseudo_step_settings(cloth: &CollisionSettings) -> CollisionSettings {
    CollisionSettings {
        self_collision: true,
        thickness: cloth.thickness,
        repulsion_stiffness: 0.0,
        friction: 0.0,
        strain_limit: None,
        ccd_rounds: cloth.ccd_rounds,
        max_zone_rounds: cloth.max_zone_rounds.min(PSEUDO_STEP_ZONE_ROUNDS),
        velocity_smoothing: None,
        response_passes: 0,
    }
}

/// What the collision-aware step did, summed over the levels of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SubdivisionStats {
    /// Close pairs at the linear positions (their approach was stopped).
    pub proximity_pairs: u32,
    /// Collisions found by CCD (all rounds, all levels).
    pub ccd_hits: u32,
    /// Impact-zone rounds run (all levels).
    pub zone_rounds: u32,
    /// Vertices in the largest impact zone of any level.
    pub largest_zone: u32,
    /// Levels whose zone loop hit its cap and that kept their linear refinement (module doc).
    pub linear_levels: u32,
    /// Largest distance (m) between a vertex's output and its plain Loop position, over the
    /// levels: how much the collision step changed the smoothing.
    pub max_correction: f32,
}

impl SubdivisionStats {
    fn add(&mut self, s: &CollisionStats) {
        self.proximity_pairs += s.proximity_pairs;
        self.ccd_hits += s.ccd_hits;
        self.zone_rounds += s.zone_rounds;
        self.largest_zone = self.largest_zone.max(s.largest_zone);
        self.linear_levels += u32::from(s.last_resort);
    }
}

/// One level's collision data and buffers.
#[derive(Debug)]
struct Level {
    collision: ClothCollision,
    /// Linear refinement of the level's input.
    lin: Vec<Vec3>,
    /// Loop positions, then the pseudo-velocity `x_loop − x_lin`.
    v: Vec<Vec3>,
    /// The level's output `x_lin + v`.
    out: Vec<Vec3>,
    /// Unit masses of the refined vertices.
    ones: Vec<f32>,
}

/// Collision-aware Loop subdivision of one cloth's output mesh (module doc): stencils, collision
/// data and buffers of every level built once; [`CollisionAwareSubdivision::apply`] runs per
/// frame without allocating (the collision stage's pools aside: they are sized at creation and
/// report growth in [`CollisionStats::pool_grew`]).
#[derive(Debug)]
pub struct CollisionAwareSubdivision {
    loop_subdivision: LoopSubdivision,
    levels: Vec<Level>,
    /// Zero friction per obstacle vertex.
    obstacle_friction: Vec<f32>,
}

impl CollisionAwareSubdivision {
    /// Builds `levels` levels for a cloth with `triangles` at positions `x` (the positions only
    /// seed each level's triangle tree; any later positions are accepted). No obstacles yet.
    ///
    /// Errors: those of [`LoopSubdivision::new`] (among them `levels` outside
    /// `1..=`[`MAX_LOOP_LEVELS`](crate::mesh::MAX_LOOP_LEVELS), named `levels`).
    pub fn new(triangles: &[[u32; 3]], x: &[Vec3], levels: u32) -> Result<Self, MeshError> {
        let mut loop_subdivision = LoopSubdivision::new(x.len(), triangles, levels)?;
        let mut out = Vec::with_capacity(levels as usize);
        let mut input = x.to_vec();
        for level in loop_subdivision.levels() {
            let n = level.num_fine_vertices();
            let mut seed = vec![Vec3::ZERO; n];
            level.smooth_into(&input, &mut seed);
            let edges = level.fine_edges();
            // Rest lengths feed only strain limiting, which the pseudo-step never runs.
            let rest_lengths = vec![0.0; edges.len()];
            out.push(Level {
                collision: ClothCollision::new(level.fine_triangles(), edges, &rest_lengths, &seed),
                lin: vec![Vec3::ZERO; n],
                v: vec![Vec3::ZERO; n],
                out: vec![Vec3::ZERO; n],
                ones: vec![1.0; n],
            });
            input = seed;
        }
        // Warm the plain-Loop buffers too, so the first `plain_loop` call does not allocate.
        let _ = loop_subdivision.apply(x);
        Ok(Self {
            loop_subdivision,
            levels: out,
            obstacle_friction: Vec::new(),
        })
    }

    /// Sets the obstacle meshes (one soup: `triangles` index `x`, its positions now) and the
    /// own thickness of each obstacle vertex (m; `thickness.len() == x.len()`). Called when the
    /// obstacles change, never per frame.
    ///
    /// # Panics
    /// If `thickness.len() != x.len()`.
    pub fn set_obstacles(&mut self, triangles: &[[u32; 3]], x: &[Vec3], thickness: &[f32]) {
        for level in &mut self.levels {
            level.collision.set_obstacles(triangles, x);
            level.collision.set_obstacle_thickness(thickness);
        }
        self.obstacle_friction.clear();
        self.obstacle_friction.resize(x.len(), 0.0);
    }

    /// Number of obstacle vertices set by [`CollisionAwareSubdivision::set_obstacles`].
    #[must_use]
    pub fn num_obstacle_vertices(&self) -> usize {
        self.obstacle_friction.len()
    }

    /// The Loop stencils.
    #[must_use]
    pub fn loop_subdivision(&self) -> &LoopSubdivision {
        &self.loop_subdivision
    }

    /// Number of base (cloth) vertices.
    #[must_use]
    pub fn num_base_vertices(&self) -> usize {
        self.loop_subdivision.num_base_vertices()
    }

    /// Triangles of the subdivided mesh.
    #[must_use]
    pub fn triangles(&self) -> &[[u32; 3]] {
        self.loop_subdivision.triangles()
    }

    /// The collision-aware subdivided positions of base positions `x` (module doc), with the
    /// obstacle soup at positions `obstacle_x`, under `settings` (use [`pseudo_step_settings`]
    /// of the cloth's). Without allocating.
    ///
    /// If `x` is intersection-free (against itself and the obstacles), so is the output: every
    /// level's motion ends in the collision stage's impact zones, or, past their cap, the level
    /// keeps its linear refinement (module doc). Cloth–cloth contact between *different* cloths
    /// is not considered (as in the simulation).
    ///
    /// # Panics
    /// If `x.len() != num_base_vertices()` or `obstacle_x.len() != num_obstacle_vertices()`.
    pub fn apply(
        &mut self,
        settings: &CollisionSettings,
        x: &[Vec3],
        obstacle_x: &[Vec3],
    ) -> (&[Vec3], SubdivisionStats) {
        assert_eq!(
            x.len(),
            self.num_base_vertices(),
            "one position per base vertex"
        );
        assert_eq!(
            obstacle_x.len(),
            self.obstacle_friction.len(),
            "one position per obstacle vertex"
        );
        let mut stats = SubdivisionStats::default();
        let obstacles = ObstacleMeshes {
            x0: obstacle_x,
            x1: obstacle_x,
            friction: &self.obstacle_friction,
            analytic: &[],
            colliders: &[],
            collider_vertices: &[],
            s0: 0.0,
            s1: 1.0,
        };
        for (l, stencils) in self.loop_subdivision.levels().iter().enumerate() {
            let (done, rest) = self.levels.split_at_mut(l);
            let input = if l == 0 { x } else { &done[l - 1].out };
            let level = &mut rest[0];
            stencils.linear_into(input, &mut level.lin);
            stencils.smooth_into(input, &mut level.v);
            for (v, lin) in level.v.iter_mut().zip(&level.lin) {
                *v -= *lin;
            }
            let cs = level.collision.resolve(
                settings,
                1.0,
                &level.lin,
                &mut level.v,
                &level.ones,
                &level.ones,
                &obstacles,
            );
            stats.add(&cs);
            if cs.last_resort {
                level.v.fill(Vec3::ZERO);
            }
            // Output x_lin + v; the correction is measured against x_lin + v_loop, recomputed
            // from the stencils (the Loop velocity was overwritten in place).
            for (i, ((o, lin), v)) in level
                .out
                .iter_mut()
                .zip(&level.lin)
                .zip(&level.v)
                .enumerate()
            {
                *o = *lin + *v;
                let plain = stencils
                    .stencil(i)
                    .fold(glam::DVec3::ZERO, |acc, (s, w)| {
                        acc + w * input[s as usize].as_dvec3()
                    })
                    .as_vec3();
                stats.max_correction = stats.max_correction.max((*o - plain).length());
            }
        }
        (&self.levels[self.levels.len() - 1].out, stats)
    }

    /// The plain Loop positions of base positions `x`, without the collision step (what
    /// [`CollisionAwareSubdivision::apply`] would give if nothing collided). For comparison.
    ///
    /// # Panics
    /// If `x.len() != num_base_vertices()`.
    pub fn plain_loop(&mut self, x: &[Vec3]) -> &[Vec3] {
        self.loop_subdivision.apply(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{Diagonals, GridSpec, MAX_LOOP_LEVELS, grid};
    use glam::Vec2;

    fn sheet(nx: u32, centre: Vec3) -> crate::mesh::TriMesh {
        grid(&GridSpec {
            nx,
            ny: nx,
            size: Vec2::ONE,
            centre,
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: Diagonals::Alternating,
        })
        .expect("valid grid")
    }

    #[test]
    fn nothing_to_resolve_gives_plain_loop() {
        // A gently curved sheet far from everything: the collision step changes nothing.
        let mut mesh = sheet(9, Vec3::ZERO);
        for p in &mut mesh.positions {
            p.y = 0.1 * (p.x * 3.0).sin() * (p.z * 2.0).cos();
        }
        let mut sub =
            CollisionAwareSubdivision::new(&mesh.triangles, &mesh.positions, 2).expect("valid");
        sub.set_obstacles(&[], &[], &[]);
        let settings = pseudo_step_settings(&CollisionSettings::default());
        let (out, stats) = sub.apply(&settings, &mesh.positions, &[]);
        let out = out.to_vec();
        assert_eq!(stats.ccd_hits, 0);
        assert!(stats.max_correction < 1e-6, "{stats:?}");
        let plain = sub.plain_loop(&mesh.positions);
        let worst = out
            .iter()
            .zip(plain)
            .map(|(a, b)| (*a - *b).length())
            .fold(0.0, f32::max);
        assert!(worst < 1e-6, "differs from Loop by {worst}");
    }

    #[test]
    fn smoothing_is_stopped_at_an_obstacle() {
        // A flat sheet with one vertex lifted 10 cm into a spike. Loop pulls the spike's apex
        // down to about 5–7 cm (1 − kβ of it stays, k = 4 or 8). A small plate at y = 8 cm on
        // the spike's axis lies inside the spike, clear of its faces (at that height they are
        // 2.5 cm from the axis; the plate is 1 cm across), so the plain Loop motion of the apex
        // passes through the plate and the collision-aware one must not.
        let mut flat = sheet(9, Vec3::ZERO);
        let centre = flat
            .positions
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.length().total_cmp(&b.1.length()))
            .map(|(i, _)| i)
            .expect("non-empty");
        flat.positions[centre].y = 0.1;
        let mut sub =
            CollisionAwareSubdivision::new(&flat.triangles, &flat.positions, 1).expect("valid");
        let plain = sub.plain_loop(&flat.positions)[centre];
        assert!(plain.y < 0.07 && plain.y > 0.05, "{plain}");
        let c = flat.positions[centre];
        let plate: Vec<Vec3> = [
            Vec3::new(-0.005, 0.08, -0.005),
            Vec3::new(0.005, 0.08, -0.005),
            Vec3::new(0.0, 0.08, 0.006),
        ]
        .iter()
        .map(|p| *p + Vec3::new(c.x, 0.0, c.z))
        .collect();
        sub.set_obstacles(&[[0, 2, 1]], &plate, &[0.0; 3]);
        let settings = pseudo_step_settings(&CollisionSettings {
            thickness: 0.001,
            ..CollisionSettings::default()
        });
        let (out, stats) = sub.apply(&settings, &flat.positions, &plate);
        assert!(stats.ccd_hits > 0, "{stats:?}");
        assert_eq!(stats.linear_levels, 0, "{stats:?}");
        // The apex stays above the plate, far from its plain Loop position.
        assert!(out[centre].y > 0.08, "{}", out[centre]);
        assert!(stats.max_correction > 0.01, "{stats:?}");
    }

    #[test]
    fn absurd_levels_are_typed_errors() {
        let mesh = sheet(3, Vec3::ZERO);
        for levels in [0, MAX_LOOP_LEVELS + 1] {
            assert!(matches!(
                CollisionAwareSubdivision::new(&mesh.triangles, &mesh.positions, levels),
                Err(MeshError::InvalidParameter { name: "levels", .. })
            ));
        }
    }
}
