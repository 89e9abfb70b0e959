//! The substep: the stages of `ARCHITECTURE.md`'s "The step", in order, and nothing else.
//!
//! ```text
//! substep(h)
//!   kinematics   pins move to their targets at t + h
//!   contacts     pins and collider contacts become filters S, changes z, offsets y
//!   assemble     forces and Jacobians into A, b           (integrate::implicit_euler)
//!   solve        filtered PCG within the iteration cap and the deadline
//!   finish       x, v written back; contact release; friction
//!   control      the substep is undone and retried as two half steps when the
//!                stretch changed too much (Baraff & Witkin 1998, *Adaptive time stepping*)
//! ```
//! Colliders are advanced by the world after every cloth has taken the substep.
#![deny(unsafe_code)]

use std::time::Instant;

use crate::runtime::executor::for_each;
use bumpalo::Bump;
use rayon::prelude::*;

use glam::Vec3;

use crate::collide::resolve::{ClothCollision, CollisionSettings, CollisionStats, ObstacleMeshes};
use crate::collide::strain_limit::StrainLimiter;
use crate::integrate::contact::{ColliderView, Constraints, PinTarget};
use crate::integrate::implicit_euler::{ImplicitEuler, ReactionSpan};
use crate::integrate::isometric_cloth::{IsometricCloth, IsometricStepStats};
use crate::integrate::projection::DirectSolveTimes;
use crate::linalg::pcg::PcgSettings;
use crate::model::wind::Wind;
use crate::runtime::budget::{Budget, Deadline};
use crate::runtime::profile::{self, Stage};
use crate::runtime::stats::FrameStats;
use crate::state::ClothState;

/// A cloth as the substep sees it: its state, its model and every buffer its stages use,
/// sized when the cloth is created. This is all of a cloth the pipeline reads or writes; the
/// world keeps one inside each of its cloths, next to what only the world needs (name, frame
/// arena, keyframed pins).
#[derive(Debug)]
pub(crate) struct SimCloth {
    pub(crate) triangles: Vec<[u32; 3]>,
    pub(crate) edges: Vec<[u32; 2]>,
    pub(crate) rest_lengths: Vec<f32>,
    pub(crate) state: ClothState,
    pub(crate) pins: Vec<PinTarget>,
    /// External forces of the substep (gravity, wind).
    pub(crate) external: Vec<Vec3>,
    pub(crate) thickness: f32,
    pub(crate) friction: f32,
    pub(crate) air_damping: f32,
    pub(crate) collision_settings: CollisionSettings,
    /// The model and the step data only it uses.
    pub(crate) model: ClothModel,
}

/// The model that integrates a cloth, with the step data only that model reads: a cloth is
/// one or the other, and builds nothing of the model it does not use.
#[derive(Debug)]
pub(crate) enum ClothModel {
    /// Baraff & Witkin 1998 with the Bridson et al. 2002 collision stage.
    BaraffWitkin(Box<BwStep>),
    /// Wang 2012 (`integrate::isometric_cloth`): the cloth's state is its subdivided mesh, and
    /// the model holds its own collision stage.
    Isometric(Box<IsometricCloth>),
}

impl ClothModel {
    /// The Baraff–Witkin step data, when the cloth uses that model.
    #[must_use]
    pub(crate) fn baraff_witkin(&self) -> Option<&BwStep> {
        match self {
            ClothModel::BaraffWitkin(bw) => Some(bw),
            ClothModel::Isometric(_) => None,
        }
    }

    /// [`ClothModel::baraff_witkin`], mutable.
    pub(crate) fn baraff_witkin_mut(&mut self) -> Option<&mut BwStep> {
        match self {
            ClothModel::BaraffWitkin(bw) => Some(bw),
            ClothModel::Isometric(_) => None,
        }
    }

    /// The isometric model, when the cloth uses it.
    #[must_use]
    pub(crate) fn isometric(&self) -> Option<&IsometricCloth> {
        match self {
            ClothModel::Isometric(iso) => Some(iso),
            ClothModel::BaraffWitkin(_) => None,
        }
    }

    /// [`ClothModel::isometric`], mutable.
    pub(crate) fn isometric_mut(&mut self) -> Option<&mut IsometricCloth> {
        match self {
            ClothModel::Isometric(iso) => Some(iso),
            ClothModel::BaraffWitkin(_) => None,
        }
    }

    /// The collision stage the cloth runs when it steps alone (the isometric model's own).
    #[must_use]
    pub(crate) fn collision(&self) -> &ClothCollision {
        match self {
            ClothModel::BaraffWitkin(bw) => &bw.collision,
            ClothModel::Isometric(iso) => iso.collision(),
        }
    }

    /// [`ClothModel::collision`], mutable.
    pub(crate) fn collision_mut(&mut self) -> &mut ClothCollision {
        match self {
            ClothModel::BaraffWitkin(bw) => &mut bw.collision,
            ClothModel::Isometric(iso) => iso.collision_mut(),
        }
    }
}

/// What only a Baraff–Witkin cloth's substep uses: the implicit Euler system (rest data,
/// pattern, matrix, PCG workspace), the pin and contact filters, step control's backup and
/// stretch measures, and the collision stage.
#[derive(Debug)]
pub(crate) struct BwStep {
    pub(crate) system: ImplicitEuler,
    pub(crate) constraints: Constraints,
    /// The state at the start of a substep that step control may undo.
    pub(crate) backup: ClothState,
    /// Step control's stretch measures before and after a substep, one a triangle.
    pub(crate) measure_before: Vec<f32>,
    pub(crate) measure_after: Vec<f32>,
    pub(crate) collision: ClothCollision,
}

impl BwStep {
    /// The PCG settings of the cloth's solves: its own, with at most `cg_cap` iterations (the
    /// frame's cap).
    #[must_use]
    pub(crate) fn pcg_settings(&self, cg_cap: u32) -> PcgSettings {
        let mut pcg = self.system.settings().pcg;
        pcg.max_iterations = pcg.max_iterations.min(cg_cap);
        pcg
    }
}

/// The collision stage a group of cloths shares, and the buffers it gathers their state into
/// (members in order, each member's vertices contiguous).
#[derive(Debug)]
pub(crate) struct SharedStage {
    pub(crate) collision: ClothCollision,
    /// The stage's own settings, from its members' (set by the world every substep).
    pub(crate) settings: CollisionSettings,
    pub(crate) x0: Vec<Vec3>,
    pub(crate) v: Vec<Vec3>,
    pub(crate) mass: Vec<f32>,
    pub(crate) inv_mass: Vec<f32>,
}

impl SharedStage {
    /// Runs the shared collision stage on the gathered state (`x0`, `v`, masses), the
    /// velocities corrected in place.
    fn resolve(
        &mut self,
        arena: &Bump,
        h: f32,
        obstacles: &ObstacleMeshes<'_>,
        should_stop: &mut dyn FnMut() -> bool,
    ) -> CollisionStats {
        self.collision.resolve_in(
            arena,
            &self.settings,
            h,
            &self.x0,
            &mut self.v,
            &self.mass,
            &self.inv_mass,
            obstacles,
            should_stop,
        )
    }
}

/// What a substep reads of the world: gravity, wind, the frame's budget and step control.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepEnv<'a> {
    pub(crate) gravity: Vec3,
    /// The wind, its gusts sampled for this frame.
    pub(crate) wind: Option<&'a Wind>,
    pub(crate) budget: Budget,
    pub(crate) step_control: StepControl,
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

/// Largest number of pieces an IMEX substep is split into (2^10).
const MAX_IMEX_PIECES: u32 = 1024;

/// Advances `cloth` by `h` with step control: a rejected substep is retried
/// as two substeps of h/2, recursively, at most `max_halvings` deep.
///
/// IMEX step limit (Bridson's course notes, the bending step limit of *Interlude*): with explicit elastic bending
/// a substep longer than the cloth's limit
/// ([`crate::integrate::implicit_euler::ImplicitEuler::explicit_bending_step_limit`],
/// at the positions now) is first split into `2^k` equal pieces, the fewest
/// that respect the limit, with `k <= 10` (beyond that the pieces are
/// h/1024 and may be unstable). Each piece counts as a substep in the stats
/// and gets its own step control.
///
/// `arena` is the cloth's frame arena (`runtime::arena`, reset by the world at
/// the start of the frame): the collider poses of pieces and halves and the
/// collision stage's candidate lists are allocated there.
#[allow(clippy::too_many_arguments)]
pub(crate) fn substep(
    cloth: &mut SimCloth,
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
    stats: &mut FrameStats,
) {
    if cloth.model.isometric().is_some() {
        advance_isometric(cloth, colliders, obstacles, settings, h, deadline, stats);
        return;
    }
    schedule(
        &mut [(cloth, stats)],
        arena,
        colliders,
        obstacles,
        settings,
        h,
        deadline,
        &mut |members, arena, colliders, obstacles, h, deadline| {
            let (cloth, stats) = &mut members[0];
            advance(
                cloth, arena, colliders, obstacles, settings, h, deadline, stats,
            );
        },
    );
}

/// A cloth of a group and its statistics.
pub(crate) type Member<'a> = (&'a mut SimCloth, &'a mut FrameStats);

/// What [`schedule`] and [`controlled`] run for every (sub)step they settle on: the members'
/// stages by `h` with these colliders and obstacles, under this deadline.
trait AdvanceMembers:
    FnMut(&mut [Member<'_>], &Bump, &[ColliderView], &ObstacleMeshes<'_>, f32, &mut Deadline)
{
}

impl<F> AdvanceMembers for F where
    F: FnMut(&mut [Member<'_>], &Bump, &[ColliderView], &ObstacleMeshes<'_>, f32, &mut Deadline)
{
}

/// The signature shared by [`substep_group`] and [`substep_isometric_group`]: the world picks
/// one by the group's model.
pub(crate) type GroupStep = fn(
    &mut [Member<'_>],
    &mut SharedStage,
    &Bump,
    &[ColliderView],
    &ObstacleMeshes<'_>,
    &StepEnv<'_>,
    f32,
    &mut Deadline,
);

/// Advances the cloths of a group (formed by the world: `world::layers`) by `h` together: each member's own stages
/// in parallel, one collision stage over all their vertices (the group's shared
/// `ClothCollision`), then each member's end of the substep.
///
/// Step control is the group's (`docs/methods/cloth-layers.md`): the IMEX split takes the most
/// pieces any member needs, and when any member's stretch changes too much the whole group
/// is undone and retried as two half steps, so the members always share a substep schedule.
/// The shared stage's statistics and time go to the first member's statistics.
#[allow(clippy::too_many_arguments)]
pub(crate) fn substep_group(
    members: &mut [Member<'_>],
    group: &mut SharedStage,
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
) {
    schedule(
        members,
        arena,
        colliders,
        obstacles,
        settings,
        h,
        deadline,
        &mut |members, arena, colliders, obstacles, h, deadline| {
            advance_group(
                members, group, arena, colliders, obstacles, settings, h, deadline,
            );
        },
    );
}

/// The schedule of a substep of `members` (one cloth, or a group that shares a collision
/// stage): the IMEX split into the most pieces any member needs, each piece under step control
/// ([`controlled`]); `advance` takes one unconditional step of all members.
///
/// This and every stage below it are the Baraff–Witkin path: the members are Baraff–Witkin
/// cloths (a group holds one model, `world::layers`, and [`substep`] sends an isometric cloth to
/// [`advance_isometric`]); they read the model's data through
/// [`ClothModel::baraff_witkin_mut`] and leave a cloth of the other model alone.
#[allow(clippy::too_many_arguments)]
fn schedule(
    members: &mut [Member<'_>],
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
    advance: &mut impl AdvanceMembers,
) {
    let mut pieces = 1u32;
    for (cloth, _) in members.iter_mut() {
        let Some(bw) = cloth.model.baraff_witkin_mut() else {
            continue;
        };
        let limit = bw
            .system
            .explicit_bending_step_limit(cloth.state.positions(), cloth.state.masses());
        while f64::from(h) / f64::from(pieces) > limit && pieces < MAX_IMEX_PIECES {
            pieces *= 2;
        }
    }
    let control = settings.step_control;
    if pieces == 1 {
        controlled(
            members, arena, colliders, obstacles, control, h, 0, deadline, advance,
        );
        return;
    }
    let hp = h / pieces as f32;
    for k in 0..pieces {
        let (a, b) = (k as f32 / pieces as f32, (k + 1) as f32 / pieces as f32);
        // Colliders at the start of the piece, in the frame arena.
        let views = arena.alloc_slice_fill_iter(colliders.iter().map(|c| ColliderView {
            pose: c.motion.advance(&c.pose, hp * k as f32),
            ..*c
        }));
        controlled(
            members,
            arena,
            views,
            &obstacles.part(a, b),
            control,
            hp,
            0,
            deadline,
            advance,
        );
    }
}

/// One step of `members` by `h` under step control, `depth` halvings deep: when any member's
/// stretch changes too much, every member is undone (pins too) and the step retried as two
/// half steps, so the members always share a substep schedule. Colliders are only read here,
/// at their pose at the start of the step; within the halves they are treated as moving with
/// their velocity from that pose.
#[allow(clippy::too_many_arguments)]
fn controlled(
    members: &mut [Member<'_>],
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    control: StepControl,
    h: f32,
    depth: u32,
    deadline: &mut Deadline,
    advance: &mut impl AdvanceMembers,
) {
    let may_reject = depth < control.max_halvings && !deadline.passed();
    if may_reject {
        for_each(members.par_iter_mut(), |(cloth, _)| {
            if let Some(bw) = cloth.model.baraff_witkin_mut() {
                bw.backup.copy_from(&cloth.state);
                // Marked positions are those `measure_before` was taken at (below): the last
                // accepted step's end, or the start a rejected step was undone to.
                if !cloth.state.positions_marked() {
                    bw.system
                        .stretch_measures(cloth.state.positions(), &mut bw.measure_before);
                }
            }
        });
    }
    advance(members, arena, colliders, obstacles, h, deadline);
    if !may_reject {
        return;
    }
    let mut rejected = false;
    for (cloth, _) in members.iter_mut() {
        let Some(bw) = cloth.model.baraff_witkin_mut() else {
            continue;
        };
        bw.system
            .stretch_measures(cloth.state.positions(), &mut bw.measure_after);
        let change = bw
            .measure_before
            .iter()
            .zip(&bw.measure_after)
            .map(|(b, a)| (a / b - 1.0).abs())
            .fold(0.0f32, f32::max);
        rejected |= !(change.is_finite() && change <= control.max_stretch_change);
    }
    if !rejected {
        // The next step starts where this one ended: its measures are these.
        for (cloth, _) in members.iter_mut() {
            if let Some(bw) = cloth.model.baraff_witkin_mut() {
                std::mem::swap(&mut bw.measure_before, &mut bw.measure_after);
                cloth.state.mark_positions();
            }
        }
        return;
    }
    for (cloth, stats) in members.iter_mut() {
        let Some(bw) = cloth.model.baraff_witkin() else {
            continue;
        };
        stats.rejected_substeps += 1;
        stats.substeps -= 1;
        cloth.state.copy_from(&bw.backup);
        // Back at the positions `measure_before` was taken at.
        cloth.state.mark_positions();
        for pin in &mut cloth.pins {
            pin.target -= pin.velocity * h;
        }
    }
    let half = 0.5 * h;
    controlled(
        members,
        arena,
        colliders,
        &obstacles.part(0.0, 0.5),
        control,
        half,
        depth + 1,
        deadline,
        advance,
    );
    // Colliders at the midpoint, in the frame arena.
    let mid = arena.alloc_slice_fill_iter(colliders.iter().map(|c| ColliderView {
        pose: c.motion.advance(&c.pose, half),
        ..*c
    }));
    controlled(
        members,
        arena,
        mid,
        &obstacles.part(0.5, 1.0),
        control,
        half,
        depth + 1,
        deadline,
        advance,
    );
}

/// [`advance`] for a group: the members' dynamics in parallel, the shared collision stage (and
/// its response rounds: each member's response solve, in parallel, then the stage again), the
/// members' ends of the substep in parallel.
#[allow(clippy::too_many_arguments)]
fn advance_group(
    members: &mut [Member<'_>],
    group: &mut SharedStage,
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
) {
    let frame_deadline = &*deadline;
    for_each(members.par_iter_mut(), |(cloth, stats)| {
        let mut deadline = frame_deadline.clone();
        dynamics(cloth, colliders, settings, h, &mut deadline, stats);
    });
    let t = Instant::now();
    let z = profile::zone(Stage::Collide);
    let mut rounds = 0;
    loop {
        let mut start = 0;
        for (cloth, _) in members.iter_mut() {
            let n = cloth.state.positions().len();
            let range = start..start + n;
            group.x0[range.clone()].copy_from_slice(cloth.state.positions());
            group.v[range.clone()].copy_from_slice(cloth.state.velocities());
            group.mass[range.clone()].copy_from_slice(cloth.state.masses());
            group.inv_mass[range].copy_from_slice(cloth.state.inv_masses());
            if let Some(bw) = cloth.model.baraff_witkin_mut() {
                bw.system.remember_velocities(cloth.state.velocities());
            }
            start += n;
        }
        let cs = group.resolve(arena, h, obstacles, &mut || deadline.passed());
        let mut start = 0;
        for (cloth, _) in members.iter_mut() {
            let v = cloth.state.velocities_mut();
            let n = v.len();
            v.copy_from_slice(&group.v[start..start + n]);
            start += n;
        }
        if let Some((_, stats)) = members.first_mut() {
            stats.add_collisions(&cs);
        }
        if rounds == group.settings.response_passes || deadline.passed() {
            break;
        }
        rounds += 1;
        let frame_deadline = &*deadline;
        // One span for the group: a body that holds one member pushes, through the stage's
        // contacts, on the members against it.
        let limiter = group.collision.strain_limiter();
        let bodies = body_normals(limiter, limiter.num_vertices());
        for_each(members.par_iter_mut(), |(cloth, stats)| {
            let Some(bw) = cloth.model.baraff_witkin_mut() else {
                return;
            };
            let mut deadline = frame_deadline.clone();
            let pcg = bw.pcg_settings(settings.budget.cg_max_iterations);
            let mut should_stop = |_iteration: u32| deadline.passed();
            let (_, v, mass, _) = cloth.state.split_mut();
            if let Some(r) = bw.system.respond(
                h,
                v,
                bw.constraints.filters(),
                mass,
                &bodies,
                &cloth.edges,
                &cloth.rest_lengths,
                &pcg,
                &mut should_stop,
            ) {
                stats.add_solve(r.iterations, r.relative_residual, r.converged, r.indefinite);
                stats.add_preconditioner(r.preconditioner_shift > 0.0, r.preconditioner_fallback);
            }
        });
    }
    for_each(members.par_iter_mut(), |(cloth, stats)| {
        end_substep(cloth, h, stats);
        stats.substeps += 1;
    });
    if let Some((_, stats)) = members.first_mut() {
        lap(stats, Stage::Collide, t);
    }
    z.end();
}

/// One substep of an isometric cloth (Wang 2012 Table 3.1, `integrate::isometric_cloth`):
///
/// ```text
/// kinematics   pins move to their targets at t + h; gravity, wind
/// solve        predict, project, collide, contact rows, project, collide, velocity
///              (the collision sub-stage times go to `collide_ms` as for Baraff–Witkin)
/// ```
///
/// No step control (the thesis has none; the strain tolerance is the projection's stopping
/// test) and no analytic contact filters: colliders act through their tessellations in the
/// collision stage, with their own friction (the world passes those coefficients), and,
/// with `contact_margin > 0`, through the speculative contact rows of line 4, which read
/// the analytic shapes (`integrate::isometric`).
fn advance_isometric(
    cloth: &mut SimCloth,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
    stats: &mut FrameStats,
) {
    let t = kinematics(cloth, settings, h, stats);
    let z = profile::zone(Stage::Solve);
    let Some(model) = cloth.model.isometric_mut() else {
        return;
    };
    let (x, v, mass, inv_mass) = cloth.state.split_mut();
    let budget = settings.budget;
    let before = IsometricCounters::of(model);
    let mut should_stop = || deadline.passed();
    let report = model.step(
        h,
        x,
        v,
        mass,
        inv_mass,
        &cloth.external,
        cloth.air_damping,
        &cloth.pins,
        &cloth.collision_settings,
        obstacles,
        colliders,
        budget.newton_max_iterations,
        budget.cg_max_iterations,
        &mut should_stop,
    );
    add_isometric_step(stats, model, before, &report);
    lap(stats, Stage::Solve, t);
    z.end();
    stats.substeps += 1;
}

/// The isometric model's running counters, read before a step ([`add_isometric_step`]).
#[derive(Clone, Copy)]
struct IsometricCounters {
    overflows: u32,
    direct: DirectSolveTimes,
}

impl IsometricCounters {
    fn of(model: &IsometricCloth) -> Self {
        IsometricCounters {
            overflows: model.contact_overflows(),
            direct: model.direct_solve_times(),
        }
    }
}

/// Folds one isometric step (`report`; the model's counters were `before` it) into `stats`.
fn add_isometric_step(
    stats: &mut FrameStats,
    model: &IsometricCloth,
    before: IsometricCounters,
    report: &IsometricStepStats,
) {
    // The contact-row pool grows on overflow (each growth counted by the projector).
    stats.pool_overflows += model.contact_overflows() - before.overflows;
    let direct = model.direct_solve_times();
    let direct_before = before.direct;
    stats.direct_assemble_ms += 1e3 * (direct.assemble_seconds - direct_before.assemble_seconds);
    stats.factor_ms += 1e3 * (direct.factor_seconds - direct_before.factor_seconds);
    stats.direct_solve_ms += 1e3 * (direct.solve_seconds - direct_before.solve_seconds);
    stats.direct_fallbacks += report.projections.direct_fallbacks;
    stats.failsafe_moved += report.fail_safe_moved;
    stats.kept_best += report.projections.kept_best;
    stats.base_rows_held = stats.base_rows_held.max(report.projections.held_base_edges);
    stats.add_collisions(&report.collide_first);
    if let Some(c) = &report.collide_second {
        stats.add_collisions(c);
    }
    // One PCG solve per Gauss–Newton iteration; a failed linear solve (non-positive curvature
    // or a non-finite value) counts as indefinite.
    let p = &report.projections;
    stats.cg_iterations += p.cg_iterations;
    stats.cg_max_iterations = stats.cg_max_iterations.max(p.cg_max_iterations);
    stats.cg_unconverged += p.cg_unconverged;
    stats.cg_residual = stats.cg_residual.max(p.cg_max_residual);
    stats.cg_indefinite += p.linear_failures;
    stats.newton_iterations += p.iterations;
    stats.newton_max_iterations = stats.newton_max_iterations.max(p.iterations);
    stats.newton_unconverged += p.unconverged;
    stats.contact_rows += report.contact_nodes;
}

/// One substep of a group of isometric cloths (`world::layers`) that share the collision
/// stage of Wang 2012 Table 3.1 (`docs/methods/cloth-layers.md`): each member's kinematics,
/// prediction and first projection (line 2) in parallel; then passes of the shared stage over
/// every member's `xⁿ → x_p`, each followed by every member's lines 4–5 in parallel (contact
/// rows for the nodes the pass moved, wherever the collision came from, and the projection
/// again), while any member projected again; the last pass, which saw every member, gives
/// `x^{n+1}`; then each member's line 7. The shared stage's statistics go to the first
/// member's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn substep_isometric_group(
    members: &mut [Member<'_>],
    group: &mut SharedStage,
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
) {
    let budget = settings.budget;
    let starts = arena.alloc_slice_fill_copy(members.len() + 1, 0usize);
    for (k, (cloth, _)) in members.iter().enumerate() {
        starts[k + 1] = starts[k] + cloth.state.positions().len();
    }
    let before = arena.alloc_slice_fill_iter(members.iter().map(|(cloth, _)| {
        cloth
            .model
            .isometric()
            .map(IsometricCounters::of)
            .expect("the members of an isometric group are isometric (world::layers)")
    }));
    let frame_deadline = &*deadline;
    for_each(members.par_iter_mut(), |(cloth, stats)| {
        let t = kinematics(cloth, settings, h, stats);
        let z = profile::zone(Stage::Solve);
        let mut deadline = frame_deadline.clone();
        let SimCloth {
            model,
            state,
            external,
            air_damping,
            pins,
            collision_settings,
            ..
        } = &mut **cloth;
        if let Some(model) = model.isometric_mut() {
            model.begin_shared_step(
                h,
                state.positions(),
                state.velocities(),
                state.masses(),
                state.inv_masses(),
                external,
                *air_damping,
                pins,
                collision_settings,
                obstacles,
                colliders,
                budget.newton_max_iterations,
                budget.cg_max_iterations,
                &mut || deadline.passed(),
            );
        }
        lap(stats, Stage::Solve, t);
        z.end();
    });
    let none = CollisionStats::default();
    loop {
        for (k, (cloth, _)) in members.iter_mut().enumerate() {
            let r = starts[k]..starts[k + 1];
            if let Some(model) = cloth.model.isometric_mut() {
                model.shared_pass_input(
                    &mut group.x0[r.clone()],
                    &mut group.v[r.clone()],
                    &mut group.mass[r.clone()],
                    &mut group.inv_mass[r],
                );
            }
        }
        let cs = group.resolve(arena, h, obstacles, &mut || deadline.passed());
        if let Some((_, stats)) = members.first_mut() {
            stats.add_collisions(&cs);
        }
        let frame_deadline = &*deadline;
        let v = &group.v;
        let starts = &*starts;
        let again = arena.alloc_slice_fill_copy(members.len(), false);
        for_each(
            members.par_iter_mut().zip(again.par_iter_mut()).enumerate(),
            |(k, ((cloth, stats), again))| {
                let t = Instant::now();
                let mut deadline = frame_deadline.clone();
                *again = cloth.model.isometric_mut().is_some_and(|model| {
                    model.after_shared_pass(
                        &v[starts[k]..starts[k + 1]],
                        &none,
                        colliders,
                        &mut || deadline.passed(),
                    )
                });
                lap(stats, Stage::Solve, t);
            },
        );
        let again = again.iter().any(|&a| a);
        if !again {
            break;
        }
    }
    let before = &*before;
    for_each(members.par_iter_mut().enumerate(), |(k, (cloth, stats))| {
        let t = Instant::now();
        let SimCloth {
            model, state, pins, ..
        } = &mut **cloth;
        if let Some(model) = model.isometric_mut() {
            let (x, v, _, _) = state.split_mut();
            let report = model.end_shared_step(pins, x, v);
            add_isometric_step(stats, model, before[k], &report);
        }
        lap(stats, Stage::Solve, t);
        stats.substeps += 1;
    });
}

/// One unconditional substep of length `h`.
#[allow(clippy::too_many_arguments)]
fn advance(
    cloth: &mut SimCloth,
    arena: &Bump,
    colliders: &[ColliderView],
    obstacles: &ObstacleMeshes<'_>,
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
    stats: &mut FrameStats,
) {
    let t = dynamics(cloth, colliders, settings, h, deadline, stats);
    let Some(bw) = cloth.model.baraff_witkin_mut() else {
        return;
    };
    let z = profile::zone(Stage::Collide);
    let pcg = bw.pcg_settings(settings.budget.cg_max_iterations);
    let (x, v, mass, inv_mass) = cloth.state.split_mut();
    // The collision stage, then up to `response_passes` rounds of response solve
    // (ImplicitEuler::respond: the stage's velocity change passed through the cloth's
    // stiffness) and the stage again on the result; the last stage run decides x. The
    // rounds are optional work: none once the frame's deadline has passed.
    let mut rounds = 0;
    loop {
        bw.system.remember_velocities(v);
        let cs = bw.collision.resolve_in(
            arena,
            &cloth.collision_settings,
            h,
            x,
            v,
            mass,
            inv_mass,
            obstacles,
            &mut || deadline.passed(),
        );
        stats.add_collisions(&cs);
        if rounds == cloth.collision_settings.response_passes || deadline.passed() {
            break;
        }
        rounds += 1;
        let mut should_stop = |_iteration: u32| deadline.passed();
        let bodies = body_normals(bw.collision.strain_limiter(), mass.len());
        let Some(r) = bw.system.respond(
            h,
            v,
            bw.constraints.filters(),
            mass,
            &bodies,
            &cloth.edges,
            &cloth.rest_lengths,
            &pcg,
            &mut should_stop,
        ) else {
            break;
        };
        stats.add_solve(r.iterations, r.relative_residual, r.converged, r.indefinite);
        stats.add_preconditioner(r.preconditioner_shift > 0.0, r.preconditioner_fallback);
    }
    end_substep(cloth, h, stats);
    lap(stats, Stage::Collide, t);
    z.end();
    stats.substeps += 1;
}

/// The stages of a substep before the collision stage: kinematics, contacts, assemble, solve,
/// finish; leaves the candidate velocities v½ = v1 + y/h the collision stage starts from in the
/// cloth's state. Returns the time it ended.
fn dynamics(
    cloth: &mut SimCloth,
    colliders: &[ColliderView],
    settings: &StepEnv<'_>,
    h: f32,
    deadline: &mut Deadline,
    stats: &mut FrameStats,
) -> Instant {
    let t = kinematics(cloth, settings, h, stats);
    let Some(bw) = cloth.model.baraff_witkin_mut() else {
        return t;
    };
    let z = profile::zone(Stage::Contacts);

    let pcg = bw.pcg_settings(settings.budget.cg_max_iterations);
    let (x, v, mass, _) = cloth.state.split_mut();
    bw.constraints
        .build(h, x, v, &cloth.pins, colliders, cloth.thickness);
    let t = lap(stats, Stage::Contacts, t);
    z.end();
    let z = profile::zone(Stage::Assemble);

    bw.system.assemble(
        h,
        x,
        v,
        mass,
        &cloth.external,
        bw.constraints.y(),
        cloth.air_damping,
    );
    let t = lap(stats, Stage::Assemble, t);
    z.end();
    let z = profile::zone(Stage::Solve);
    let mut should_stop = |_iteration: u32| deadline.passed();
    let report = bw.system.solve(
        v,
        &pcg,
        bw.constraints.filters(),
        bw.constraints.z(),
        &mut should_stop,
    );
    stats.add_solve(
        report.iterations,
        report.relative_residual,
        report.converged,
        report.indefinite,
    );
    stats.add_preconditioner(
        report.preconditioner_shift > 0.0,
        report.preconditioner_fallback,
    );
    let t = lap(stats, Stage::Solve, t);
    z.end();
    let z = profile::zone(Stage::Finish);

    bw.constraints.resolve_after_solve(
        bw.system.constraint_impulses(),
        v,
        mass,
        colliders,
        cloth.friction,
    );
    let t = lap(stats, Stage::Finish, t);
    z.end();

    // Collisions on v½ = (x* − x0)/h = v1 + y/h (Bridson et al. 2002 §4); the
    // end velocity keeps BW's v1 plus the collision corrections:
    // v = v1 + (v½_corrected − v½) = v½_corrected − y/h ([`end_substep`]).
    let inv_h = 1.0 / h;
    for (vi, yi) in v.iter_mut().zip(bw.constraints.y()) {
        *vi += *yi * inv_h;
    }
    t
}

/// The end of a substep after its last collision stage: x = x0 + h v½, v = v½ − y/h, the
/// optional velocity smoothing, pins exactly on their targets, the contact counts.
fn end_substep(cloth: &mut SimCloth, h: f32, stats: &mut FrameStats) {
    let Some(bw) = cloth.model.baraff_witkin_mut() else {
        return;
    };
    let inv_h = 1.0 / h;
    let (x, v, mass, inv_mass) = cloth.state.split_mut();
    let y = bw.constraints.y();
    for ((xi, vi), yi) in x.iter_mut().zip(v.iter_mut()).zip(y) {
        *xi += h * *vi;
        *vi -= *yi * inv_h;
    }
    // Optional implicit velocity smoothing of the end velocities (course
    // notes §4.10): positions are final, so the guarantee above stands.
    let smoothing = Instant::now();
    bw.collision
        .smooth(&cloth.collision_settings, v, mass, inv_mass);
    stats.collide_ms.smoothing_ms += smoothing.elapsed().as_secs_f64() * 1e3;
    for pin in &cloth.pins {
        // Exactly on target, whatever the rounding of x0 + h v1.
        x[pin.vertex as usize] = pin.target;
    }
    stats.contacts = bw.constraints.active_contacts();
    stats.contacts_released += bw.constraints.released_contacts();
}

/// The span of the normals along which the collision stage's collisions with kinematic bodies
/// hold the cloth's `n` vertices (the strain limiter keeps them; none when strain limiting is
/// off): the directions in which a body can push back on the response solve.
fn body_normals(limiter: &StrainLimiter, n: usize) -> ReactionSpan {
    let mut span = ReactionSpan::default();
    for i in 0..n {
        if span.is_full() {
            break;
        }
        match limiter.held_normals(i) {
            None => span = ReactionSpan::ALL,
            Some(normals) => normals.iter().for_each(|&d| span.add(d)),
        }
    }
    span
}

/// The kinematics stage of both models: pins move to their targets at t + h,
/// external forces are gravity plus the wind (steady within the substep:
/// `World::step` samples the gusts). Returns the time it ended.
fn kinematics(
    cloth: &mut SimCloth,
    settings: &StepEnv<'_>,
    h: f32,
    stats: &mut FrameStats,
) -> Instant {
    let t = Instant::now();
    let z = profile::zone(Stage::Kinematics);
    for pin in &mut cloth.pins {
        pin.target += pin.velocity * h;
    }
    let gravity = settings.gravity;
    for (f, m) in cloth.external.iter_mut().zip(cloth.state.masses()) {
        *f = *m * gravity;
    }
    if let Some(wind) = &settings.wind {
        let (x, v) = (cloth.state.positions(), cloth.state.velocities());
        wind.add_forces(0.0, x, v, &cloth.triangles, &mut cloth.external);
    }
    let t = lap(stats, Stage::Kinematics, t);
    z.end();
    t
}

fn lap(stats: &mut FrameStats, stage: Stage, since: Instant) -> Instant {
    let now = Instant::now();
    stats
        .stage_ms
        .add(stage, now.duration_since(since).as_secs_f64() * 1e3);
    now
}
