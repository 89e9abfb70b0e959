//! The pinhole camera and the default framing of a scene.
//!
//! Conventions: right-handed world, y up; the camera looks from `eye` at
//! `target`; `fov_deg` is the vertical field of view; the image has `width` ×
//! `height` pixels, row 0 at the top.

use glam::{Mat4, Vec3, Vec4};

use super::RenderError;

/// Largest image side accepted (pixels), so a typo cannot allocate gigabytes.
pub const MAX_SIDE: u32 = 8192;

/// A pinhole camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Eye position (m).
    pub eye: Vec3,
    /// The point looked at (m).
    pub target: Vec3,
    /// Up direction (any length, not parallel to the view direction).
    pub up: Vec3,
    /// Vertical field of view (degrees, in (0, 180)).
    pub fov_deg: f32,
    /// Image width (pixels).
    pub width: u32,
    /// Image height (pixels).
    pub height: u32,
}

/// Default vertical field of view of [`Camera::framing`] (degrees).
pub const DEFAULT_FOV_DEG: f32 = 35.0;

/// Direction from the target to the eye in [`Camera::framing`]: in front
/// (+z), to the right (+x) and above (+y), so that horizontal sheets show
/// their top, vertical `xy` sheets their front, and spheres their shape.
pub const DEFAULT_VIEW_DIR: Vec3 = Vec3::new(0.55, 0.65, 1.0);

/// An axis-aligned box (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Lower corner.
    pub min: Vec3,
    /// Upper corner.
    pub max: Vec3,
}

impl Bounds {
    /// The empty box (`min` = +∞, `max` = −∞); [`Bounds::is_empty`] holds.
    pub const EMPTY: Bounds = Bounds {
        min: Vec3::splat(f32::INFINITY),
        max: Vec3::splat(f32::NEG_INFINITY),
    };

    /// Grows the box to hold every finite point of `points`.
    pub fn extend(&mut self, points: &[Vec3]) {
        for p in points.iter().filter(|p| p.is_finite()) {
            self.min = self.min.min(*p);
            self.max = self.max.max(*p);
        }
    }

    /// True when no point was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        !(self.min.cmple(self.max).all())
    }

    /// Centre of the box.
    #[must_use]
    pub fn centre(&self) -> Vec3 {
        0.5 * (self.min + self.max)
    }

    /// Half the diagonal: the radius of a sphere around [`Bounds::centre`]
    /// holding the box.
    #[must_use]
    pub fn radius(&self) -> f32 {
        0.5 * (self.max - self.min).length()
    }
}

impl Camera {
    /// A camera that sees all of `bounds`: it looks at the box centre along
    /// [`DEFAULT_VIEW_DIR`] from the smallest distance at which every corner
    /// of the box projects inside the central 90 % of the image (both
    /// axes). An empty box frames the unit box around the origin.
    ///
    /// For a corner at offset c from the centre, with the camera basis
    /// (right r, up u, forward f) and eye distance d, the view depth is
    /// d + c·f, and the corner is inside when |c·r| ≤ tan(h/2)·(d + c·f)
    /// (likewise for u with the vertical half-angle): each corner gives a
    /// lower bound on d, and d is the largest.
    #[must_use]
    pub fn framing(bounds: &Bounds, width: u32, height: u32) -> Camera {
        let b = if bounds.is_empty() {
            Bounds {
                min: Vec3::splat(-0.5),
                max: Vec3::splat(0.5),
            }
        } else {
            *bounds
        };
        let aspect = width.max(1) as f32 / height.max(1) as f32;
        let tan_v = 0.9 * (0.5 * DEFAULT_FOV_DEG.to_radians()).tan();
        let tan_h = tan_v * aspect;
        let target = b.centre();
        let back = DEFAULT_VIEW_DIR.normalize();
        let fwd = -back;
        let right = fwd.cross(Vec3::Y).normalize();
        let up = right.cross(fwd);
        // At least a little in front of the nearest corner.
        let mut distance = 1e-3f32.max(1.01 * b.radius());
        for i in 0..8 {
            let corner = Vec3::new(
                if i & 1 == 0 { b.min.x } else { b.max.x },
                if i & 2 == 0 { b.min.y } else { b.max.y },
                if i & 4 == 0 { b.min.z } else { b.max.z },
            );
            let c = corner - target;
            let depth_offset = c.dot(fwd);
            distance = distance
                .max(c.dot(right).abs() / tan_h - depth_offset)
                .max(c.dot(up).abs() / tan_v - depth_offset);
        }
        Camera {
            eye: target + distance * back,
            target,
            up: Vec3::Y,
            fov_deg: DEFAULT_FOV_DEG,
            width,
            height,
        }
    }

    /// Checks that the camera forms an image: finite vectors, eye ≠ target,
    /// up not parallel to the view, fov in (0°, 180°), sides in 1..=[`MAX_SIDE`].
    pub fn validate(&self) -> Result<(), RenderError> {
        if !(self.eye.is_finite() && self.target.is_finite() && self.up.is_finite()) {
            return Err(RenderError::Camera(
                "eye, target and up must be finite".into(),
            ));
        }
        let view = self.target - self.eye;
        if view.length() <= 1e-6 {
            return Err(RenderError::Camera("eye and target coincide".into()));
        }
        if view.normalize().cross(self.up.normalize_or_zero()).length() <= 1e-4 {
            return Err(RenderError::Camera(
                "up is zero or parallel to the view direction".into(),
            ));
        }
        if !(self.fov_deg.is_finite() && self.fov_deg > 0.0 && self.fov_deg < 180.0) {
            return Err(RenderError::Camera(format!(
                "fov_deg must be in (0, 180), got {}",
                self.fov_deg
            )));
        }
        for (name, v) in [("width", self.width), ("height", self.height)] {
            if v == 0 || v > MAX_SIDE {
                return Err(RenderError::Camera(format!(
                    "{name} must be in 1..={MAX_SIDE}, got {v}"
                )));
            }
        }
        Ok(())
    }

    /// The world → clip transform: x and y scaled by the focal length f =
    /// 1/tan(fov/2) (x also by 1/aspect), w = view depth along the view
    /// direction, so 1/w interpolates linearly across the screen (the
    /// rasteriser's z-buffer stores it) and a point is in the image when
    /// |x|, |y| ≤ w. There is no z row (no far plane); clipping against the
    /// near plane uses w.
    #[must_use]
    pub fn view_projection(&self) -> Mat4 {
        let fwd = (self.target - self.eye).normalize();
        let right = fwd.cross(self.up).normalize();
        let up = right.cross(fwd);
        let f = 1.0 / (0.5 * self.fov_deg.to_radians()).tan();
        let aspect = self.width as f32 / self.height as f32;
        let row = |axis: Vec3, scale: f32| (scale * axis).extend(-scale * axis.dot(self.eye));
        Mat4::from_cols(
            row(right, f / aspect),
            row(up, f),
            Vec4::ZERO,
            row(fwd, 1.0),
        )
        .transpose()
    }

    /// World size of one pixel at view depth 1 (m per m of depth).
    #[must_use]
    pub fn pixel_angle(&self) -> f32 {
        2.0 * (0.5 * self.fov_deg.to_radians()).tan() / self.height as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_sees_every_corner() {
        let b = Bounds {
            min: Vec3::new(-0.5, -0.3, -0.5),
            max: Vec3::new(0.5, 0.45, 0.5),
        };
        for (w, h) in [(320, 240), (240, 320), (100, 100)] {
            let cam = Camera::framing(&b, w, h);
            cam.validate().expect("framing gives a valid camera");
            let vp = cam.view_projection();
            let mut widest = 0.0f32;
            for i in 0..8 {
                let c = Vec3::new(
                    if i & 1 == 0 { b.min.x } else { b.max.x },
                    if i & 2 == 0 { b.min.y } else { b.max.y },
                    if i & 4 == 0 { b.min.z } else { b.max.z },
                );
                let p = vp * c.extend(1.0);
                assert!(p.w > 0.0);
                let ndc = p / p.w;
                assert!(
                    ndc.x.abs() < 0.9 + 1e-4 && ndc.y.abs() < 0.9 + 1e-4,
                    "{w}x{h}: {c} -> {ndc}"
                );
                widest = widest.max(ndc.x.abs()).max(ndc.y.abs());
            }
            // Tight: some corner touches the 90 % frame.
            assert!(widest > 0.9 - 1e-3, "{w}x{h}: widest {widest}");
        }
    }

    #[test]
    fn clip_w_is_view_depth() {
        let cam = Camera {
            eye: Vec3::new(0.0, 2.0, 0.0),
            target: Vec3::ZERO,
            up: Vec3::Z,
            fov_deg: 60.0,
            width: 10,
            height: 10,
        };
        let p = cam.view_projection() * Vec4::new(0.3, 0.5, 0.2, 1.0);
        assert!((p.w - 1.5).abs() < 1e-5);
    }

    #[test]
    fn bad_cameras_are_rejected() {
        let ok = Camera::framing(&Bounds::EMPTY, 64, 48);
        assert!(ok.validate().is_ok());
        let bad = [
            Camera { fov_deg: 0.0, ..ok },
            Camera {
                fov_deg: 180.0,
                ..ok
            },
            Camera { width: 0, ..ok },
            Camera {
                height: MAX_SIDE + 1,
                ..ok
            },
            Camera {
                target: ok.eye,
                ..ok
            },
            Camera {
                up: ok.target - ok.eye,
                ..ok
            },
            Camera {
                eye: Vec3::NAN,
                ..ok
            },
        ];
        for c in bad {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
