//! Keyframed pin targets: a set of pinned vertices that moves rigidly along a
//! keyframe [`Track`] (a wrung edge, a hand carrying a hem).
//!
//! A track's pose `(R(t), T(t))` moves the region away from where it was when the
//! track was set: with `p` the pivot and `x_i` the vertex positions then, the
//! target of vertex `i` at time `t` is
//!
//! ```text
//! target_i(t) = p + T(t) + R(t) (x_i − p)
//! ```
//!
//! so a key with zero position and zero rotation is the region at rest, and
//! rotations turn it about the pivot.
//!
//! **Motion within a frame.** Pins are Baraff–Witkin filters (S = 0) whose target
//! moves at a constant velocity over a substep (`PinTarget::velocity`; the
//! pipeline's kinematics stage adds `velocity · h`). Every substep the world sets
//! that velocity to `(target_i(t_end) − target) / h`, where `t_end` is the substep's
//! end on the track, and after the substep puts the target, and the vertex, exactly
//! on `target_i(t_end)` ([`PinTrack::land`]): the accumulated `target + velocity · h`
//! differs from it by rounding only. So pinned vertices sit on the track at every
//! substep end, and move along a straight chord within a substep (a turn of θ per
//! substep shortens the distance between two pinned vertices by at most a factor
//! cos(θ/2) halfway along the chord; 2° a substep: 0.015 %).
#![deny(unsafe_code)]

use glam::Vec3;

use super::contact::PinTarget;
use crate::collide::track::Track;

/// A rigid set of pinned vertices of one cloth following a keyframe track.
#[derive(Clone, Debug, PartialEq)]
pub struct PinTrack {
    track: Track,
    pivot: Vec3,
    /// Tracked vertices.
    vertices: Vec<u32>,
    /// `x_i − p` at set-up, per tracked vertex.
    local: Vec<Vec3>,
    /// Index of each tracked vertex's entry in the cloth's pin list.
    slots: Vec<u32>,
}

impl PinTrack {
    /// A track for `vertices` whose rest placement is `positions[v]` (the cloth's
    /// positions when the track is set), turning about `pivot`. The slots are filled
    /// by [`PinTrack::reslot`].
    #[must_use]
    pub fn new(track: Track, pivot: Vec3, vertices: &[u32], positions: &[Vec3]) -> Self {
        Self {
            track,
            pivot,
            vertices: vertices.to_vec(),
            local: vertices
                .iter()
                .map(|&v| positions[v as usize] - pivot)
                .collect(),
            slots: vec![0; vertices.len()],
        }
    }

    /// The keyframe track.
    #[must_use]
    pub fn track(&self) -> &Track {
        &self.track
    }

    /// The tracked vertices.
    #[must_use]
    pub fn vertices(&self) -> &[u32] {
        &self.vertices
    }

    /// Where the track puts tracked vertex number `k` (of [`PinTrack::vertices`]) at
    /// time `t` (s).
    #[must_use]
    pub fn target_at(&self, k: usize, t: f64) -> Vec3 {
        let pose = self.track.pose_at(t);
        self.pivot + pose.transform_point(self.local[k])
    }

    /// Points each tracked vertex's slot at its entry of `pins`.
    ///
    /// # Panics
    /// If a tracked vertex has no entry (the world removes a vertex from its track
    /// when it is unpinned).
    pub fn reslot(&mut self, pins: &[PinTarget]) {
        for (slot, &v) in self.slots.iter_mut().zip(&self.vertices) {
            let k = pins
                .iter()
                .position(|p| p.vertex == v)
                .expect("a tracked vertex is pinned: unpinning removes it from its track");
            *slot = k as u32;
        }
    }

    /// Stops tracking `vertex` (the host took it over or freed it); true if it was
    /// tracked. The slots must be refreshed afterwards.
    pub fn forget(&mut self, vertex: u32) -> bool {
        let Some(k) = self.vertices.iter().position(|&v| v == vertex) else {
            return false;
        };
        self.vertices.remove(k);
        self.local.remove(k);
        self.slots.remove(k);
        true
    }

    /// True when no vertex is tracked any more.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// Sets each tracked pin's velocity so that its target reaches the track's
    /// position at `t_end` over a substep of length `h`.
    pub fn drive(&self, pins: &mut [PinTarget], t_end: f64, h: f32) {
        let pose = self.track.pose_at(t_end);
        for (&slot, &local) in self.slots.iter().zip(&self.local) {
            let pin = &mut pins[slot as usize];
            let goal = self.pivot + pose.transform_point(local);
            pin.velocity = (goal - pin.target) / h;
        }
    }

    /// Puts each tracked pin's target and vertex exactly on the track's position at
    /// `t` (after a substep ending at `t`, and at set-up).
    pub fn land(&self, pins: &mut [PinTarget], x: &mut [Vec3], t: f64) {
        let pose = self.track.pose_at(t);
        for (&slot, &local) in self.slots.iter().zip(&self.local) {
            let pin = &mut pins[slot as usize];
            let goal = self.pivot + pose.transform_point(local);
            pin.target = goal;
            x[pin.vertex as usize] = goal;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::track::{Keyframe, pose_from_euler_deg};

    fn turn_track() -> Track {
        Track::new(vec![
            Keyframe {
                time: 0.0,
                pose: pose_from_euler_deg([0.0; 3], [0.0; 3]),
            },
            Keyframe {
                time: 1.0,
                pose: pose_from_euler_deg([0.0, 0.5, 0.0], [0.0, 90.0, 0.0]),
            },
        ])
        .expect("valid keys")
    }

    #[test]
    fn targets_turn_about_the_pivot_and_translate() {
        let positions = [Vec3::new(1.0, 0.0, 0.0), Vec3::new(2.0, 0.0, 0.0)];
        let pt = PinTrack::new(turn_track(), Vec3::new(1.0, 0.0, 0.0), &[0, 1], &positions);
        // At rest at t = 0.
        assert_eq!(pt.target_at(0, 0.0), positions[0]);
        assert!((pt.target_at(1, 0.0) - positions[1]).length() < 1e-6);
        // At t = 1: the pivot vertex only rises; the other turned 90° about y (x → −z).
        assert!((pt.target_at(0, 1.0) - Vec3::new(1.0, 0.5, 0.0)).length() < 1e-6);
        assert!((pt.target_at(1, 1.0) - Vec3::new(1.0, 0.5, -1.0)).length() < 1e-6);
    }

    #[test]
    fn drive_then_advance_then_land_reaches_the_track_exactly() {
        let positions = [Vec3::new(0.3, 0.0, 0.0), Vec3::new(-0.2, 0.1, 0.4)];
        let mut pt = PinTrack::new(turn_track(), Vec3::ZERO, &[1, 0], &positions);
        let mut pins = vec![
            PinTarget {
                vertex: 0,
                target: positions[0],
                velocity: Vec3::ZERO,
            },
            PinTarget {
                vertex: 1,
                target: positions[1],
                velocity: Vec3::ZERO,
            },
        ];
        pt.reslot(&pins);
        let mut x = positions.to_vec();
        let h = 1.0 / 120.0;
        for k in 1..=10 {
            let t = f64::from(h) * f64::from(k);
            pt.drive(&mut pins, t, h);
            // What the kinematics stage does.
            for p in &mut pins {
                p.target += p.velocity * h;
            }
            // Within rounding of the goal before landing ...
            for (j, &v) in pt.vertices().iter().enumerate() {
                let p = pins.iter().find(|p| p.vertex == v).expect("pinned");
                assert!((p.target - pt.target_at(j, t)).length() < 1e-6);
            }
            pt.land(&mut pins, &mut x, t);
            // ... and exactly on it after.
            for (j, &v) in pt.vertices().iter().enumerate() {
                assert_eq!(x[v as usize], pt.target_at(j, t));
            }
        }
    }

    #[test]
    fn landing_removes_the_rounding_of_target_plus_velocity_times_h() {
        // A target near zero that moves far in one substep: target + ((goal − target)/h)·h
        // rounds away from the goal (about one case in eleven for targets within 1 cm of zero
        // moving up to 0.5 m), so the world lands the pins after each substep. Here the goal is
        // −0.055302545 m and the accumulated target one unit in the last place off.
        let h = 1.0f32 / 120.0;
        let (start, shift) = (-0.005_350_523f32, -0.049_952_023f32);
        let track = Track::new(vec![
            Keyframe {
                time: 0.0,
                pose: pose_from_euler_deg([0.0; 3], [0.0; 3]),
            },
            Keyframe {
                time: f64::from(h),
                pose: pose_from_euler_deg([shift, 0.0, 0.0], [0.0; 3]),
            },
        ])
        .expect("valid keys");
        let positions = [Vec3::new(start, 0.0, 0.0)];
        let mut pt = PinTrack::new(track, Vec3::ZERO, &[0], &positions);
        let mut pins = vec![PinTarget {
            vertex: 0,
            target: positions[0],
            velocity: Vec3::ZERO,
        }];
        pt.reslot(&pins);
        let goal = pt.target_at(0, f64::from(h));
        pt.drive(&mut pins, f64::from(h), h);
        let step = pins[0].velocity * h;
        pins[0].target += step;
        assert_ne!(pins[0].target, goal, "this case must round away");
        let mut x = positions.to_vec();
        pt.land(&mut pins, &mut x, f64::from(h));
        assert_eq!(pins[0].target, goal);
        assert_eq!(x[0], goal);
    }

    #[test]
    fn forgotten_vertices_are_no_longer_driven() {
        let positions = [Vec3::X, Vec3::Y];
        let mut pt = PinTrack::new(turn_track(), Vec3::ZERO, &[0, 1], &positions);
        assert!(pt.forget(0));
        assert!(!pt.forget(0));
        let mut pins = vec![PinTarget {
            vertex: 1,
            target: Vec3::Y,
            velocity: Vec3::ZERO,
        }];
        pt.reslot(&pins);
        pt.drive(&mut pins, 1.0, 0.5);
        // Vertex 1 rises 0.5 m (the turn about y leaves a point on the axis in place).
        assert!((pins[0].velocity - Vec3::new(0.0, 1.0, 0.0)).length() < 1e-5);
        assert!(pt.forget(1));
        assert!(pt.is_empty());
    }
}
