//! Keyframed rigid motion: a collider or obstacle mesh that follows a list of
//! poses in time (an animated arm, a door, a table pulled away).
//!
//! A [`Track`] interpolates its keyframes — positions linearly, orientations
//! by spherical interpolation (the shortest arc) — and holds the first pose
//! before the first key and the last pose after the last. The world turns a
//! track into the constant-velocity [`Motion`] of each frame: the velocities
//! that carry the body from the pose it *has* to the track's pose at the end
//! of the frame ([`Track::motion_to`]). Starting from the actual pose, not
//! from the track's pose at the frame start, keeps the motion continuous (the
//! collision stage's obstacle trajectory of one frame starts where the last
//! one ended) and lets round-off never accumulate: each frame lands on the
//! track again.
//!
//! **Choice**: within one frame the body moves at constant linear and angular
//! velocity (a screw-free chord of the track). A key that falls inside a
//! frame is therefore cut like a corner; frames are short against any motion
//! a keyframed obstacle is meant to show, and the collision stage needs exact
//! straight-line (for translation) trajectories over a substep anyway
//! (`docs/methods/bridson-collisions.md` §3.9: CCD assumes linear motion over the step).
#![deny(unsafe_code)]

use glam::{Quat, Vec3};

use super::shapes::{Motion, Pose};

/// One keyframe: where the body is at `time`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    /// Time (s) from the start of the simulation.
    pub time: f64,
    /// The pose at that time.
    pub pose: Pose,
}

/// A keyframe list that cannot be a track.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TrackError {
    /// No keyframe at all.
    #[error("a keyframe track needs at least one keyframe")]
    Empty,
    /// A time, position or rotation is NaN or infinite.
    #[error("keyframe {index}: time, position and rotation must be finite")]
    NotFinite {
        /// Index of the keyframe.
        index: usize,
    },
    /// Times do not strictly increase.
    #[error("keyframe {index}: time {time} s is not after the previous keyframe's {previous} s")]
    NotIncreasing {
        /// Index of the keyframe.
        index: usize,
        /// Its time (s).
        time: f64,
        /// The previous keyframe's time (s).
        previous: f64,
    },
    /// A position beyond the coordinate range, or the motion from the previous keyframe
    /// beyond the speed ranges (`crate::limits`).
    #[error("keyframe {index}: {what} {message}")]
    OutOfRange {
        /// Index of the keyframe.
        index: usize,
        /// `position` or `rotation_deg` (the scene keys).
        what: &'static str,
        /// The value and the range.
        message: String,
    },
}

/// Keyframed poses, sorted by time.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    keys: Vec<Keyframe>,
}

impl Track {
    /// A track through `keys`, whose times must strictly increase. Rotations
    /// are normalised; a zero quaternion counts as not finite. Positions must lie
    /// within the coordinate range and the motion between consecutive keyframes
    /// within the linear and angular speed ranges (`crate::limits`).
    ///
    /// # Errors
    /// [`TrackError`] says which keyframe is wrong and why.
    pub fn new(mut keys: Vec<Keyframe>) -> Result<Self, TrackError> {
        if keys.is_empty() {
            return Err(TrackError::Empty);
        }
        for (index, k) in keys.iter_mut().enumerate() {
            let finite = k.time.is_finite()
                && k.pose.translation.is_finite()
                && k.pose.rotation.is_finite()
                && k.pose.rotation.length_squared() > 0.0;
            if !finite {
                return Err(TrackError::NotFinite { index });
            }
            k.pose.rotation = k.pose.rotation.normalize();
        }
        for (index, pair) in keys.windows(2).enumerate() {
            if pair[1].time <= pair[0].time {
                return Err(TrackError::NotIncreasing {
                    index: index + 1,
                    time: pair[1].time,
                    previous: pair[0].time,
                });
            }
        }
        for (index, k) in keys.iter().enumerate() {
            crate::limits::check_point("position", k.pose.translation).map_err(|e| {
                TrackError::OutOfRange {
                    index,
                    what: "position",
                    message: e.message,
                }
            })?;
        }
        for (index, pair) in keys.windows(2).enumerate() {
            let span = (pair[1].time - pair[0].time) as f32;
            let (a, b) = (pair[0].pose, pair[1].pose);
            let speed = (b.translation - a.translation) / span;
            let turn = Vec3::X * a.rotation.angle_between(b.rotation) / span;
            let out_of_range = |what, e: crate::limits::RangeError| TrackError::OutOfRange {
                index: index + 1,
                what,
                message: format!("reached from keyframe {index} in {span} s: {}", e.message),
            };
            crate::limits::check_speed("speed", speed).map_err(|e| out_of_range("position", e))?;
            crate::limits::check_angular_speed("angular speed", turn)
                .map_err(|e| out_of_range("rotation_deg", e))?;
        }
        Ok(Self { keys })
    }

    /// The keyframes.
    #[must_use]
    pub fn keys(&self) -> &[Keyframe] {
        &self.keys
    }

    /// The pose at time `t` (s): linear in position, shortest-arc slerp in
    /// orientation between the keys around `t`; clamped outside the keys.
    #[must_use]
    pub fn pose_at(&self, t: f64) -> Pose {
        let first = self.keys[0];
        let last = self.keys[self.keys.len() - 1];
        if t <= first.time {
            return first.pose;
        }
        if t >= last.time {
            return last.pose;
        }
        // First key strictly after t; t lies in [keys[i-1].time, keys[i].time).
        let i = self.keys.partition_point(|k| k.time <= t);
        let (a, b) = (self.keys[i - 1], self.keys[i]);
        let s = ((t - a.time) / (b.time - a.time)) as f32;
        Pose {
            translation: a.pose.translation.lerp(b.pose.translation, s),
            rotation: a.pose.rotation.slerp(b.pose.rotation, s).normalize(),
        }
    }

    /// The constant velocities that move a body from `current` to the track's
    /// pose at time `t_end` in `dt` seconds ([`Motion::advance`] inverts it).
    #[must_use]
    pub fn motion_to(&self, current: &Pose, t_end: f64, dt: f32) -> Motion {
        let target = self.pose_at(t_end);
        motion_between(current, &target, dt)
    }
}

/// The constant linear and angular velocity carrying pose `a` to pose `b` in
/// `dt` seconds: `v = Δp / dt`, `ω = log(q_b q_a⁻¹) / dt` (the shortest arc).
#[must_use]
pub fn motion_between(a: &Pose, b: &Pose, dt: f32) -> Motion {
    let mut delta = b.rotation * a.rotation.inverse();
    if delta.w < 0.0 {
        // q and −q are the same rotation; take the short way round.
        delta = -delta;
    }
    let delta: Quat = delta.normalize();
    Motion {
        linear_velocity: (b.translation - a.translation) / dt,
        angular_velocity: delta.to_scaled_axis() / dt,
    }
}

/// A pose from a position and XYZ Euler angles in degrees (the scene files'
/// convention).
#[must_use]
pub fn pose_from_euler_deg(position: [f32; 3], rotation_deg: [f32; 3]) -> Pose {
    let [rx, ry, rz] = rotation_deg.map(f32::to_radians);
    Pose {
        translation: Vec3::from_array(position),
        rotation: Quat::from_euler(glam::EulerRot::XYZ, rx, ry, rz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(time: f64, x: f32, yaw_deg: f32) -> Keyframe {
        Keyframe {
            time,
            pose: pose_from_euler_deg([x, 0.0, 0.0], [0.0, yaw_deg, 0.0]),
        }
    }

    /// A keyframe beyond the coordinate range, or reached too fast, is refused with its index.
    #[test]
    fn keyframes_out_of_range_are_refused() {
        let far = Track::new(vec![key(0.0, 0.0, 0.0), key(1.0, 2e4, 0.0)]);
        assert!(
            matches!(
                far,
                Err(TrackError::OutOfRange {
                    index: 1,
                    what: "position",
                    ..
                })
            ),
            "{far:?}"
        );
        // 101 m in one second, and 180° in a millisecond (3,142 rad/s).
        let fast = Track::new(vec![key(0.0, 0.0, 0.0), key(1.0, 101.0, 0.0)]);
        assert!(
            matches!(
                fast,
                Err(TrackError::OutOfRange {
                    index: 1,
                    what: "position",
                    ..
                })
            ),
            "{fast:?}"
        );
        let spin = Track::new(vec![key(0.0, 0.0, 0.0), key(1e-3, 0.0, 180.0)]);
        assert!(
            matches!(
                spin,
                Err(TrackError::OutOfRange {
                    index: 1,
                    what: "rotation_deg",
                    ..
                })
            ),
            "{spin:?}"
        );
        // Just within: 99 m/s and 180° in 0.02 s (157 rad/s).
        assert!(Track::new(vec![key(0.0, 0.0, 0.0), key(1.0, 99.0, 0.0)]).is_ok());
        assert!(Track::new(vec![key(0.0, 0.0, 0.0), key(0.02, 0.0, 180.0)]).is_ok());
    }

    fn close(a: &Pose, b: &Pose, tol: f32) -> bool {
        (a.translation - b.translation).length() <= tol
            && a.rotation.dot(b.rotation).abs() >= 1.0 - tol
    }

    #[test]
    fn interpolates_between_keys_and_clamps_outside() {
        let track = Track::new(vec![key(1.0, 0.0, 0.0), key(3.0, 2.0, 90.0)]).expect("valid");
        assert!(close(&track.pose_at(0.0), &track.keys()[0].pose, 1e-6));
        assert!(close(&track.pose_at(5.0), &track.keys()[1].pose, 1e-6));
        let mid = track.pose_at(2.0);
        assert!(close(
            &mid,
            &pose_from_euler_deg([1.0, 0.0, 0.0], [0.0, 45.0, 0.0]),
            1e-6
        ));
        // On a key exactly, the key's pose.
        assert!(close(&track.pose_at(3.0), &track.keys()[1].pose, 1e-6));
    }

    #[test]
    fn motion_to_lands_on_the_track_after_advance() {
        let track = Track::new(vec![
            key(0.0, 0.0, 0.0),
            key(0.5, 0.3, 170.0),
            key(1.0, -0.2, -60.0),
        ])
        .expect("valid");
        let dt = 1.0 / 60.0;
        let substeps = 3;
        let mut pose = track.pose_at(0.0);
        for frame in 0..60 {
            let t_end = f64::from(frame + 1) * f64::from(dt);
            let motion = track.motion_to(&pose, t_end, dt);
            for _ in 0..substeps {
                pose = motion.advance(&pose, dt / substeps as f32);
            }
            assert!(
                close(&pose, &track.pose_at(t_end), 1e-5),
                "frame {frame}: {pose:?} vs {:?}",
                track.pose_at(t_end)
            );
        }
    }

    #[test]
    fn motion_between_takes_the_short_way_round() {
        let a = pose_from_euler_deg([0.0; 3], [0.0, 170.0, 0.0]);
        let b = pose_from_euler_deg([0.0; 3], [0.0, -170.0, 0.0]);
        let m = motion_between(&a, &b, 1.0);
        // 20 degrees, not 340.
        assert!((m.angular_velocity.length() - 20f32.to_radians()).abs() < 1e-4);
    }

    #[test]
    fn bad_keyframes_are_rejected_with_their_index() {
        assert_eq!(Track::new(Vec::new()), Err(TrackError::Empty));
        let err = Track::new(vec![key(0.0, 0.0, 0.0), key(0.0, 1.0, 0.0)]);
        assert!(matches!(
            err,
            Err(TrackError::NotIncreasing { index: 1, .. })
        ));
        let mut bad = key(1.0, 0.0, 0.0);
        bad.pose.translation.x = f32::NAN;
        assert_eq!(
            Track::new(vec![key(0.0, 0.0, 0.0), bad]),
            Err(TrackError::NotFinite { index: 1 })
        );
    }
}
