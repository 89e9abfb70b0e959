//! A failed step is undone in full: [`World::step`](super::World::step) saves what a frame
//! changes and the next frame reads, and puts it back when the frame fails (a unit's error, a
//! lost invariant, a dispatcher that broke its contract, a panic). Retrying the step, or going
//! on, then gives the same `state_hash` as a world in which the failed call never happened.
//!
//! What a frame carries over, and so what is saved:
//! - the world's time and frame number, every collider's and obstacle mesh's pose and motion
//!   (tracks set the motion from the pose);
//! - per cloth: positions, velocities and pin targets;
//! - per Baraff–Witkin cloth: the warm start `Δv`, the contact history (which vertices were
//!   in unreleased contact) and the IC(0) factor's shift levels.
//!
//! Everything else a frame writes is rebuilt by the next one from the above: filters,
//! the assembled system, candidate lists, the BVHs' boxes (refitted, never rebuilt), the
//! neighbour bounds kept from a reference (they only decide which bounds are recomputed, not
//! any result), the strain limiter's kept collisions (forgotten at the start of every
//! collision stage), the groups of cloths that may touch (found again every substep). An
//! isometric cloth keeps its BDF2 history and warm starts in `f64` beside the world's state;
//! a failed step drops them ([`IsometricCloth::reset`]), so its next step starts over from the
//! restored state, as after a teleport.
//!
//! The buffers are sized when a cloth is created (and when an edit changes a count), so
//! saving allocates nothing in steady frames.
#![deny(unsafe_code)]

use glam::Vec3;

use crate::collide::shapes::{Motion, Pose};
use crate::integrate::contact::PinTarget;
use crate::linalg::block_ldl::ShiftLevels;
use crate::pipeline::SimCloth;

#[cfg(doc)]
use crate::integrate::isometric_cloth::IsometricCloth;

/// What one cloth carries from a frame into the next.
#[derive(Debug, Default)]
pub(crate) struct ClothUndo {
    x: Vec<Vec3>,
    v: Vec<Vec3>,
    pins: Vec<PinTarget>,
    /// Baraff–Witkin only (empty otherwise): the warm start and the contact history.
    dv: Vec<Vec3>,
    engaged: Vec<bool>,
    shift: ShiftLevels,
}

impl ClothUndo {
    /// Buffers for `sim`, sized now (`pins` up to one a vertex).
    pub(crate) fn for_cloth(sim: &SimCloth) -> Self {
        let n = sim.state.positions().len();
        let bw = sim.model.baraff_witkin().is_some();
        Self {
            x: vec![Vec3::ZERO; n],
            v: vec![Vec3::ZERO; n],
            pins: Vec::with_capacity(n),
            dv: vec![Vec3::ZERO; if bw { n } else { 0 }],
            engaged: vec![false; if bw { n } else { 0 }],
            shift: ShiftLevels::default(),
        }
    }

    /// Saves what `sim` carries into the next frame.
    pub(crate) fn save(&mut self, sim: &SimCloth) {
        self.x.copy_from_slice(sim.state.positions());
        self.v.copy_from_slice(sim.state.velocities());
        self.pins.clear();
        self.pins.extend_from_slice(&sim.pins);
        if let Some(bw) = sim.model.baraff_witkin() {
            self.dv.copy_from_slice(bw.system.warm_start());
            self.engaged.copy_from_slice(bw.constraints.history());
            self.shift = bw.system.shift_levels();
        }
    }

    /// Puts back what [`ClothUndo::save`] saved; an isometric cloth forgets its history.
    pub(crate) fn restore(&self, sim: &mut SimCloth) {
        let (x, v) = sim.state.positions_velocities_mut();
        x.copy_from_slice(&self.x);
        v.copy_from_slice(&self.v);
        sim.pins.clear();
        sim.pins.extend_from_slice(&self.pins);
        if let Some(bw) = sim.model.baraff_witkin_mut() {
            bw.system.restore_warm_start(&self.dv);
            bw.constraints.restore_history(&self.engaged);
            bw.system.set_shift_levels(self.shift);
        }
        if let Some(iso) = sim.model.isometric_mut() {
            iso.reset();
        }
    }
}

/// What the world itself carries from a frame into the next (its cloths' parts are in each
/// cloth's [`ClothUndo`]).
#[derive(Debug, Default)]
pub(crate) struct WorldUndo {
    time: f64,
    frame: u64,
    colliders: Vec<(Pose, Motion)>,
    obstacles: Vec<(Pose, Motion)>,
}

impl WorldUndo {
    /// Saves the clock and the bodies' poses and motions.
    pub(crate) fn save(
        &mut self,
        time: f64,
        frame: u64,
        colliders: impl Iterator<Item = (Pose, Motion)>,
        obstacles: impl Iterator<Item = (Pose, Motion)>,
    ) {
        self.time = time;
        self.frame = frame;
        self.colliders.clear();
        self.colliders.extend(colliders);
        self.obstacles.clear();
        self.obstacles.extend(obstacles);
    }

    /// The saved time and frame number.
    pub(crate) fn clock(&self) -> (f64, u64) {
        (self.time, self.frame)
    }

    /// The saved pose and motion of every collider, in order.
    pub(crate) fn colliders(&self) -> &[(Pose, Motion)] {
        &self.colliders
    }

    /// The saved pose and motion of every obstacle mesh, in order.
    pub(crate) fn obstacles(&self) -> &[(Pose, Motion)] {
        &self.obstacles
    }
}
