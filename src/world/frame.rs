//! The frame loop: one [`World::step`] runs every cloth's substeps and folds their stats.

use bumpalo::Bump;
use bumpalo::collections::Vec as BumpVec;

use crate::collide::resolve::ObstacleMeshes;
use crate::integrate::contact::ColliderView;
use crate::limits;
use crate::pipeline::{self, StepEnv};
use crate::runtime::budget::Deadline;
use crate::runtime::executor::{Executor, Task};
use crate::runtime::stats::FrameStats;

use super::Cloth;
use super::bodies::Collider;
use super::layers::{ALONE, Group, Layers};
use super::{StepError, World};

/// Bytes of a world's schedule arena (a substep's units and the members of its groups) for
/// `num_cloths` cloths: a unit, its task and a member slot per cloth, with room to spare.
pub(super) fn schedule_bytes(num_cloths: usize) -> usize {
    256 * (num_cloths + 1)
}

/// A cloth of a substep's unit and its statistics.
type Member<'a> = (&'a mut Cloth, &'a mut FrameStats);

/// One unit of a substep's parallel work: a cloth in no group, or a group of cloths sharing
/// the substep's collision stage (`layers.rs`), its members in creation order.
enum Unit<'a> {
    Alone(Member<'a>),
    Group {
        group: &'a mut Group,
        members: &'a mut [Member<'a>],
    },
}

/// The substep's units: the active groups (by group index), then the cloths in no group
/// (creation order), as tasks in `bump`.
fn units<'a>(
    cloths: &'a mut [Cloth],
    cloth_stats: &'a mut [FrameStats],
    layers: &'a mut Layers,
    bump: &'a Bump,
) -> BumpVec<'a, Task<Unit<'a>>> {
    let Layers {
        group_of,
        active,
        groups,
        ..
    } = layers;
    let mut grouped = BumpVec::with_capacity_in(active.len(), bump);
    for (g, group) in groups.iter_mut().enumerate() {
        if active.contains(&(g as u32)) {
            let members = BumpVec::with_capacity_in(group.members.len(), bump);
            grouped.push((g as u32, group, members));
        }
    }
    let mut alone = BumpVec::with_capacity_in(cloths.len(), bump);
    for (i, member) in cloths.iter_mut().zip(cloth_stats.iter_mut()).enumerate() {
        let g = group_of[i];
        if g == ALONE {
            alone.push(member);
        } else if let Some((_, _, members)) = grouped.iter_mut().find(|(index, ..)| *index == g) {
            members.push(member);
        }
    }
    let grouped = grouped.into_iter().map(|(_, group, members)| Unit::Group {
        group,
        members: members.into_bump_slice_mut(),
    });
    let alone = alone.into_iter().map(Unit::Alone);
    BumpVec::from_iter_in(grouped.chain(alone).map(Task::new), bump)
}

/// What every unit of a substep reads.
struct UnitContext<'a> {
    views: &'a [ColliderView],
    obstacles: &'a ObstacleMeshes<'a>,
    obstacles_isometric: &'a ObstacleMeshes<'a>,
    env: &'a StepEnv<'a>,
    h: f32,
    deadline: &'a Deadline,
    t_substep_end: f64,
}

impl UnitContext<'_> {
    /// Advances one unit by the substep.
    fn step(&self, unit: &mut Unit<'_>) {
        let h = self.h;
        let mut deadline = self.deadline.clone();
        match unit {
            Unit::Alone((cloth, cloth_stats)) => {
                // Isometric cloths have no analytic contact filters: the collision stage
                // applies the colliders' friction on their tessellations.
                let obstacles = if cloth.sim.model.isometric().is_some() {
                    self.obstacles_isometric
                } else {
                    self.obstacles
                };
                // Moved out for the substep so the pipeline can borrow the cloth mutably and
                // its arena shared (an empty `Bump` in its place allocates nothing).
                let arena = std::mem::take(&mut cloth.arena);
                cloth.drive_pin_tracks(self.t_substep_end, h);
                pipeline::substep(
                    &mut cloth.sim,
                    arena.bump(),
                    self.views,
                    obstacles,
                    self.env,
                    h,
                    &mut deadline,
                    cloth_stats,
                );
                cloth.arena = arena;
                cloth.land_pin_tracks(self.t_substep_end);
                cloth_stats.deadline_hit |= deadline.was_hit();
            }
            Unit::Group { group, members } => {
                let arena = std::mem::take(&mut group.arena);
                for (cloth, _) in members.iter_mut() {
                    cloth.drive_pin_tracks(self.t_substep_end, h);
                }
                // What the pipeline sees of the members, in the group's frame arena.
                let mut sims = BumpVec::with_capacity_in(members.len(), arena.bump());
                for (cloth, cloth_stats) in members.iter_mut() {
                    sims.push((&mut cloth.sim, &mut **cloth_stats));
                }
                let (step_group, obstacles) = if group.isometric {
                    (
                        pipeline::substep_isometric_group as pipeline::GroupStep,
                        self.obstacles_isometric,
                    )
                } else {
                    (
                        pipeline::substep_group as pipeline::GroupStep,
                        self.obstacles,
                    )
                };
                step_group(
                    &mut sims,
                    &mut group.stage,
                    arena.bump(),
                    self.views,
                    obstacles,
                    self.env,
                    h,
                    &mut deadline,
                );
                drop(sims);
                for (cloth, cloth_stats) in members.iter_mut() {
                    cloth.land_pin_tracks(self.t_substep_end);
                    cloth_stats.deadline_hit |= deadline.was_hit();
                }
                group.arena = arena;
            }
        }
    }
}

impl World {
    /// What [`World::step`] checks before it changes anything: `dt` and its substeps in their
    /// ranges ([`limits::check_frame_dt`]) and the gravity ([`limits::check_gravity`], which
    /// [`World::settings_mut`] may have changed).
    pub fn check_step(&self, dt: f32) -> Result<(), StepError> {
        limits::check_frame_dt(dt, self.settings.substeps).map_err(|e| StepError::BadTimeStep {
            dt,
            message: e.message,
        })?;
        limits::check_gravity(self.settings.gravity).map_err(StepError::Settings)?;
        match self
            .layers
            .unsupported_pair(&self.cloths, dt, self.settings.gravity)
        {
            Some((first, second)) => Err(StepError::UnsupportedLayers {
                first,
                first_name: self.cloths[first].name.clone(),
                second,
                second_name: self.cloths[second].name.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Advances one frame of length `dt` (s), inside the world's thread pool
    /// when one is set. A refused `dt` ([`World::check_step`]) changes nothing, and a step
    /// that fails (an error, or a panic, which is passed on) is undone: the world is as it was
    /// before the call (`undo.rs`), so a retry or the next frame gives the same `state_hash`
    /// as if the call had not been made. An isometric cloth forgets its BDF2 history then.
    ///
    /// Under a host's task dispatcher ([`World::set_task_dispatcher`]) it runs on the calling
    /// thread and the dispatcher's, and never in a pool.
    pub fn step(&mut self, dt: f32) -> Result<FrameStats, StepError> {
        self.check_step(dt)?;
        self.save_undo();
        self.step_saved(dt)
    }

    /// [`World::step`] after [`World::check_step`] and [`World::save_undo`]: a failed step puts
    /// back what was saved (the C API saves before it sets the pending pin targets and poses,
    /// so that a failed step undoes those too).
    pub(crate) fn step_saved(&mut self, dt: f32) -> Result<FrameStats, StepError> {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match (self.pool.clone(), &self.executor) {
                (_, Executor::Host(_)) => self.executor.clone().enter(|| self.step_frame(dt)),
                (Some(pool), Executor::Rayon) => pool.install(|| self.step_frame(dt)),
                (None, Executor::Rayon) => self.step_frame(dt),
            }
        }));
        match run {
            Ok(Ok(stats)) => Ok(stats),
            Ok(Err(e)) => {
                self.restore_undo();
                Err(e)
            }
            Err(panic) => {
                self.restore_undo();
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Saves what the world and its cloths carry into the next frame (`undo.rs`).
    pub(crate) fn save_undo(&mut self) {
        self.undo.save(
            self.time,
            self.frame,
            self.colliders.iter().map(|c| (c.pose, c.desc.motion)),
            self.obstacles.iter().map(|o| (o.pose, o.desc.motion)),
        );
        for c in &mut self.cloths {
            c.undo.save(&c.sim);
        }
    }

    /// Puts back what [`World::save_undo`] saved.
    fn restore_undo(&mut self) {
        (self.time, self.frame) = self.undo.clock();
        for (c, &(pose, motion)) in self.colliders.iter_mut().zip(self.undo.colliders()) {
            c.pose = pose;
            c.desc.motion = motion;
        }
        for (o, &(pose, motion)) in self.obstacles.iter_mut().zip(self.undo.obstacles()) {
            o.pose = pose;
            o.desc.motion = motion;
        }
        for c in &mut self.cloths {
            c.undo.restore(&mut c.sim);
        }
    }

    /// One frame, `dt` already passed by [`World::check_step`] (its callers check before they
    /// save, so a refused frame leaves the world as it was and is checked once).
    fn step_frame(&mut self, dt: f32) -> Result<FrameStats, StepError> {
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
        for group in &mut self.layers.groups {
            group.arena.reset();
        }
        self.layers.unsupported = 0;
        let mut groups_built = 0;
        let mut schedule_grew = false;
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
            let env = settings.step_env();
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
            // Cloths that may touch in this substep share its collision stage (`layers.rs`).
            groups_built += self.layers.find_groups(
                &self.cloths,
                h,
                settings.gravity,
                &obstacles,
                &self.obstacle_tris,
                &self.obstacle_thickness,
            );
            // Where keyframed pins must be at the end of this substep (the last one
            // ends exactly at the frame's end).
            let t_substep_end = if k + 1 == substeps {
                self.time + f64::from(dt)
            } else {
                self.time + f64::from(h) * f64::from(k + 1)
            };
            // The substep's units (each cloth in no group, each group) cannot touch each other,
            // so they run in parallel through the executor, each with its own statistics and
            // its own copy of the deadline: nothing depends on which thread runs which unit.
            self.schedule.reset();
            let schedule = std::mem::take(&mut self.schedule);
            let context = UnitContext {
                views: &self.collider_views,
                obstacles: &obstacles,
                obstacles_isometric: &obstacles_isometric,
                env: &env,
                h,
                deadline: &deadline,
                t_substep_end,
            };
            let tasks = units(
                &mut self.cloths,
                &mut self.cloth_stats,
                &mut self.layers,
                schedule.bump(),
            );
            let outcome = self.executor.run(&tasks, |unit| context.step(unit));
            drop(tasks);
            schedule_grew |= schedule.grew();
            self.schedule = schedule;
            if let Err(error) = outcome {
                return Err(StepError::Tasks {
                    frame: self.frame + 1,
                    error,
                });
            }
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
        // The groups' shared stages: their data built this frame and their arenas.
        stats.pool_overflows += groups_built + u32::from(schedule_grew);
        for group in &self.layers.groups {
            stats.arena_bytes += group.arena.used_bytes() as u64;
            stats.pool_overflows += u32::from(group.arena.grew());
        }
        stats.layer_pairs_unsupported = self.layers.unsupported;
        // Obstacle positions now (the end of the last substep).
        self.obstacle_x0.copy_from_slice(&self.obstacle_x1);
        self.time += f64::from(dt);
        self.frame += 1;
        for (i, c) in self.cloths.iter().enumerate() {
            if !c.sim.state.is_finite() {
                return Err(StepError::NonFinite {
                    cloth: i,
                    name: c.name.clone(),
                    frame: self.frame,
                });
            }
            // One pass over the edges: the largest strain is the largest of the three classes'
            // (`Cloth::max_strain` is that maximum, folded the same way).
            let [free, pins, bodies] = c.max_strain_by_drive();
            stats.max_strain = stats.max_strain.max(free.max(pins).max(bodies));
            stats.max_strain_free = stats.max_strain_free.max(free);
            stats.max_strain_pins = stats.max_strain_pins.max(pins);
            stats.max_strain_bodies = stats.max_strain_bodies.max(bodies);
            match c.sim.model.isometric() {
                Some(_) => stats.isometric_cloths += 1,
                None => stats.baraff_witkin_cloths += 1,
            }
            if let Some(iso) = c.sim.model.isometric() {
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
