//! The frame loop: one [`World::step`] runs every cloth's substeps and folds their stats.

use rayon::prelude::*;

use crate::collide::resolve::ObstacleMeshes;
use crate::limits;
use crate::pipeline;
use crate::runtime::budget::Deadline;
use crate::runtime::stats::FrameStats;

use super::bodies::Collider;
use super::layers::{ALONE, Layers};
use super::{StepError, World};

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
        for group in &mut self.layers.groups {
            group.arena.reset();
        }
        self.layers.unsupported = 0;
        let mut groups_built = 0;
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
            // Cloths that may touch in this substep share its collision stage (`layers.rs`).
            groups_built += self.layers.find_groups(
                &self.cloths,
                h,
                settings.gravity,
                &obstacles,
                &self.obstacle_tris,
                &self.obstacle_thickness,
            );
            // The other cloths are independent within the substep, so they step in parallel,
            // each with its own statistics and its own copy of the deadline; the result of
            // each cloth does not depend on the thread count.
            let group_of = &self.layers.group_of;
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
                .enumerate()
                .filter(|(i, _)| group_of[*i] == ALONE)
                .for_each(|(_, (cloth, cloth_stats))| {
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
            // Each group in turn (by its first cloth), its members' own stages in parallel.
            let Layers {
                group_of,
                active,
                groups,
                ..
            } = &mut self.layers;
            for &g in active.iter() {
                let group = &mut groups[g as usize];
                let arena = std::mem::take(&mut group.arena);
                let mut members =
                    bumpalo::collections::Vec::with_capacity_in(group.members.len(), arena.bump());
                for (i, (cloth, cloth_stats)) in self
                    .cloths
                    .iter_mut()
                    .zip(self.cloth_stats.iter_mut())
                    .enumerate()
                {
                    if group_of[i] == g {
                        cloth.drive_pin_tracks(t_substep_end, h);
                        members.push((cloth, cloth_stats));
                    }
                }
                let mut deadline = frame_deadline.clone();
                let step_group = if group.isometric {
                    pipeline::substep_isometric_group
                } else {
                    pipeline::substep_group
                };
                step_group(
                    &mut members,
                    group,
                    arena.bump(),
                    views,
                    if group.isometric {
                        &obstacles_isometric
                    } else {
                        &obstacles
                    },
                    &settings,
                    h,
                    &mut deadline,
                );
                for (cloth, cloth_stats) in members.iter_mut() {
                    cloth.land_pin_tracks(t_substep_end);
                    cloth_stats.deadline_hit |= deadline.was_hit();
                }
                drop(members);
                group.arena = arena;
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
        stats.pool_overflows += groups_built;
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
