//! A soft contact shadow on the ground: where a cloth or an obstacle is above the
//! ground, the ground darkens, most where the surface is close to it.
//!
//! The light is taken straight above (the cue that tells a viewer where a body
//! touches the floor, not a cast shadow of the key light). Every non-ground
//! triangle is scan-converted in x–z into a square occupancy grid over the
//! surfaces' footprint, weighted by how close the triangle is to the ground; two
//! passes of a separable box blur make it soft (close to a Gaussian). Shading a
//! ground sample then reads the grid bilinearly. Everything is serial and in
//! surface order, so the picture is the same for any thread count.

use glam::{Vec2, Vec3};

use super::raster::{Surface, SurfaceKind};

/// Cells per side of the occupancy grid.
const CELLS: usize = 192;
/// Darkening under a surface lying on the ground (fraction of the colour).
const STRENGTH: f32 = 0.5;
/// Margin around the surfaces' footprint, as a fraction of its larger side.
const MARGIN: f32 = 0.3;

/// The blurred occupancy of the ground, reused across frames.
#[derive(Debug, Default)]
pub(crate) struct ShadowMap {
    /// World x and z of the grid's corner (m).
    origin: Vec2,
    /// Cell size (m); 0 when there is no ground or nothing above it.
    cell: f32,
    occupancy: Vec<f32>,
    scratch: Vec<f32>,
}

impl ShadowMap {
    /// Rebuilds the map for `surfaces`. Without a ground surface, the map is empty
    /// and darkens nothing.
    pub(crate) fn build(&mut self, surfaces: &[Surface<'_>]) {
        self.cell = 0.0;
        let ground_y = surfaces
            .iter()
            .filter(|s| s.kind == SurfaceKind::Ground)
            .flat_map(|s| s.positions.iter().map(|p| p.y))
            .fold(f32::NEG_INFINITY, f32::max);
        if !ground_y.is_finite() {
            return;
        }
        let (mut lo, mut hi) = (Vec2::splat(f32::INFINITY), Vec2::splat(f32::NEG_INFINITY));
        for s in surfaces.iter().filter(|s| s.kind != SurfaceKind::Ground) {
            for p in s.positions.iter().filter(|p| p.is_finite()) {
                lo = lo.min(Vec2::new(p.x, p.z));
                hi = hi.max(Vec2::new(p.x, p.z));
            }
        }
        let side = (hi - lo).max_element();
        if !(side.is_finite() && side > 0.0) {
            return;
        }
        let side = side * (1.0 + 2.0 * MARGIN);
        self.cell = side / CELLS as f32;
        self.origin = 0.5 * (lo + hi) - Vec2::splat(0.5 * side);
        self.occupancy.clear();
        self.occupancy.resize(CELLS * CELLS, 0.0);
        // A surface this high above the ground casts almost nothing.
        let fade = 0.6 * side;
        for s in surfaces.iter().filter(|s| s.kind != SurfaceKind::Ground) {
            for tri in s.triangles {
                let v = tri.map(|i| s.positions[i as usize]);
                if v.iter().all(|p| p.is_finite()) {
                    let h = (v[0].y + v[1].y + v[2].y) / 3.0 - ground_y;
                    let weight = (1.0 - h / fade).clamp(0.15, 1.0);
                    self.cover(v, weight);
                }
            }
        }
        let radius = (CELLS / 24).max(2);
        for _ in 0..2 {
            box_blur(&mut self.occupancy, &mut self.scratch, CELLS, radius);
        }
    }

    /// Marks the cells whose centres lie in the x–z projection of triangle `v`.
    fn cover(&mut self, v: [Vec3; 3], weight: f32) {
        let q = v.map(|p| (Vec2::new(p.x, p.z) - self.origin) / self.cell);
        let lo = q[0].min(q[1]).min(q[2]).floor().max(Vec2::ZERO);
        let hi = q[0]
            .max(q[1])
            .max(q[2])
            .ceil()
            .min(Vec2::splat(CELLS as f32));
        let area = (q[1] - q[0]).perp_dot(q[2] - q[0]);
        if area.abs() < 1e-12 {
            return;
        }
        for j in lo.y as usize..hi.y as usize {
            for i in lo.x as usize..hi.x as usize {
                let c = Vec2::new(i as f32 + 0.5, j as f32 + 0.5);
                let b0 = (q[1] - c).perp_dot(q[2] - c) / area;
                let b1 = (q[2] - c).perp_dot(q[0] - c) / area;
                let b2 = 1.0 - b0 - b1;
                if b0 >= 0.0 && b1 >= 0.0 && b2 >= 0.0 {
                    let o = &mut self.occupancy[j * CELLS + i];
                    *o = o.max(weight);
                }
            }
        }
    }

    /// The fraction by which the ground's colour at world (x, z) darkens.
    pub(crate) fn darkening(&self, x: f32, z: f32) -> f32 {
        if self.cell == 0.0 {
            return 0.0;
        }
        let u = (x - self.origin.x) / self.cell - 0.5;
        let v = (z - self.origin.y) / self.cell - 0.5;
        let max = (CELLS - 1) as f32;
        if !(u > -1.0 && v > -1.0 && u < max + 1.0 && v < max + 1.0) {
            return 0.0;
        }
        let (u, v) = (u.clamp(0.0, max), v.clamp(0.0, max));
        let (i, j) = (u as usize, v as usize);
        let (i1, j1) = ((i + 1).min(CELLS - 1), (j + 1).min(CELLS - 1));
        let (fu, fv) = (u - i as f32, v - j as f32);
        let at = |i: usize, j: usize| self.occupancy[j * CELLS + i];
        let top = at(i, j) + (at(i1, j) - at(i, j)) * fu;
        let bottom = at(i, j1) + (at(i1, j1) - at(i, j1)) * fu;
        STRENGTH * (top + (bottom - top) * fv)
    }
}

/// One separable box blur of radius `r` over an `n`×`n` grid (edges clamp).
fn box_blur(grid: &mut [f32], scratch: &mut Vec<f32>, n: usize, r: usize) {
    scratch.clear();
    scratch.resize(n * n, 0.0);
    let scale = 1.0 / (2 * r + 1) as f32;
    for pass in 0..2 {
        let (src, dst): (&[f32], &mut [f32]) = if pass == 0 {
            (grid, scratch)
        } else {
            (scratch, grid)
        };
        for line in 0..n {
            // Pass 0 runs along rows (x), pass 1 along columns (z).
            let at = |k: usize| {
                let k = k.min(n - 1);
                if pass == 0 {
                    src[line * n + k]
                } else {
                    src[k * n + line]
                }
            };
            let mut sum: f32 = (0..=r).map(at).sum::<f32>() + r as f32 * at(0);
            for k in 0..n {
                let out = if pass == 0 {
                    line * n + k
                } else {
                    k * n + line
                };
                dst[out] = sum * scale;
                sum += at(k + r + 1) - at(k.saturating_sub(r));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ground() -> ([Vec3; 4], [[u32; 3]; 2]) {
        super::super::raster::ground_quad(0.0, 0.0, 0.0, 10.0)
    }

    #[test]
    fn the_ground_darkens_under_a_low_surface_and_not_far_from_it() {
        let (gp, gt) = ground();
        let square = [
            Vec3::new(-0.5, 0.01, -0.5),
            Vec3::new(0.5, 0.01, -0.5),
            Vec3::new(0.5, 0.01, 0.5),
            Vec3::new(-0.5, 0.01, 0.5),
        ];
        let tris = [[0, 1, 2], [0, 2, 3]];
        let surfaces = [
            Surface {
                kind: SurfaceKind::Ground,
                positions: &gp,
                triangles: &gt,
            },
            Surface {
                kind: SurfaceKind::Cloth,
                positions: &square,
                triangles: &tris,
            },
        ];
        let mut map = ShadowMap::default();
        map.build(&surfaces);
        let under = map.darkening(0.0, 0.0);
        assert!(under > 0.8 * STRENGTH && under <= STRENGTH, "{under}");
        assert!(map.darkening(0.75, 0.0) < under, "softens beyond the edge");
        assert_eq!(map.darkening(5.0, 5.0), 0.0, "nothing far away");

        // Raised by most of its size, the same square casts a lighter shadow.
        let high = square.map(|p| p + Vec3::Y * 0.8);
        let surfaces = [
            surfaces[0],
            Surface {
                positions: &high,
                ..surfaces[1]
            },
        ];
        map.build(&surfaces);
        assert!(map.darkening(0.0, 0.0) < 0.6 * under);
    }

    #[test]
    fn without_a_ground_nothing_darkens() {
        let square = [Vec3::ZERO, Vec3::X, Vec3::Z];
        let mut map = ShadowMap::default();
        map.build(&[Surface {
            kind: SurfaceKind::Obstacle,
            positions: &square,
            triangles: &[[0, 1, 2]],
        }]);
        assert_eq!(map.darkening(0.2, 0.2), 0.0);
    }
}
