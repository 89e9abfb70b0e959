//! A z-buffered software rasteriser for preview frames.
//!
//! Pipeline per frame, all on the CPU and deterministic (every sample sees
//! the surfaces and triangles in the order given, whatever the thread count;
//! see [`Renderer`]):
//!
//! 1. per surface, vertex normals: the area-weighted sum of the incident
//!    triangle normals `(x1 − x0) × (x2 − x0)`; a triangle corner whose vertex
//!    normal deviates from its face normal by more than [`Style::crease_deg`]
//!    uses the face normal instead, so box edges stay sharp while a sphere
//!    or a draped sheet shades smoothly;
//! 2. vertices go to clip space ([`Camera::view_projection`]); triangles are
//!    clipped (Sutherland–Hodgman) against the near plane and the four side
//!    planes, so nothing behind the eye or far outside the image reaches the
//!    edge functions;
//! 3. each triangle is scan-converted with edge functions at the sample
//!    centres of a supersampled grid ([`Style::supersample`]² samples per
//!    pixel); the z-buffer keeps the largest 1/w (w = view depth), which is
//!    affine in screen space; position and normal are interpolated
//!    perspective-correctly (divided by w, then by the interpolated 1/w);
//! 4. shading ([`Style`]): two-sided Lambert, `base · (ambient + key·max(0,
//!    n·l) + headlight·max(0, n·v))` with n turned towards the viewer; the
//!    side is that of the triangle's winding normal, and cloth has distinct
//!    front and back colours; the ground gets a procedural grid, darkens
//!    under what is above it (`shadow.rs`) and fades into the background with
//!    distance;
//! 5. the samples of each pixel are averaged (box filter) into 8-bit RGB.
//!
//! Colours are treated as display values (no gamma conversion).

use std::io::Write;
use std::path::Path;

use glam::{Mat4, Vec3, Vec4};
use rayon::prelude::*;

use super::RenderError;
use super::camera::Camera;
use super::shadow::ShadowMap;

/// What a surface is, which picks its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceKind {
    /// Cloth: [`Style::cloth_front`] on the side its winding normal points
    /// to, [`Style::cloth_back`] on the other.
    Cloth,
    /// An obstacle or tessellated collider.
    Obstacle,
    /// The ground: a grid in world x and z, fading with distance.
    Ground,
}

/// A triangle mesh to draw, in world coordinates.
#[derive(Clone, Copy, Debug)]
pub struct Surface<'a> {
    /// What it is.
    pub kind: SurfaceKind,
    /// Vertex positions (m).
    pub positions: &'a [Vec3],
    /// Triangles (vertex indices; counter-clockwise seen from the front).
    pub triangles: &'a [[u32; 3]],
}

/// Colours, lights and quality settings. Colours are RGB in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// Where nothing is drawn.
    pub background: [f32; 3],
    /// Cloth seen from the side its winding normal points to.
    pub cloth_front: [f32; 3],
    /// Cloth seen from the other side.
    pub cloth_back: [f32; 3],
    /// Obstacles.
    pub obstacle: [f32; 3],
    /// The ground between grid lines.
    pub ground: [f32; 3],
    /// Grid lines on the ground.
    pub ground_line: [f32; 3],
    /// Direction towards the key light (world; any length).
    pub light_dir: Vec3,
    /// Ambient term (fraction of the base colour always shown).
    pub ambient: f32,
    /// Weight of the key light's Lambert term.
    pub key: f32,
    /// Weight of a light at the eye (keeps undersides readable).
    pub headlight: f32,
    /// Minor grid spacing on the ground (m).
    pub grid_spacing: f32,
    /// Every how many minor lines a major line is drawn.
    pub grid_major: u32,
    /// Samples per pixel along each axis (1 = no anti-aliasing; 1..=4).
    pub supersample: u32,
    /// Crease angle (degrees) beyond which a corner uses its face normal.
    pub crease_deg: f32,
}

impl Default for Style {
    fn default() -> Self {
        Self {
            background: [0.90, 0.92, 0.95],
            cloth_front: [0.90, 0.45, 0.15],
            cloth_back: [0.20, 0.45, 0.85],
            obstacle: [0.62, 0.62, 0.60],
            ground: [0.80, 0.80, 0.78],
            ground_line: [0.45, 0.45, 0.45],
            light_dir: Vec3::new(0.35, 1.0, 0.45),
            ambient: 0.2,
            key: 0.55,
            headlight: 0.3,
            grid_spacing: 0.1,
            grid_major: 10,
            supersample: 2,
            crease_deg: 40.0,
        }
    }
}

/// An 8-bit RGB image, rows from the top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Image {
    /// Width (pixels).
    #[must_use]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height (pixels).
    #[must_use]
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The pixel at column `x`, row `y` (row 0 at the top).
    ///
    /// # Panics
    /// If `x >= width` or `y >= height`.
    #[must_use]
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        assert!(
            x < self.width && y < self.height,
            "pixel ({x}, {y}) outside the image"
        );
        let i = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// The raw RGB bytes, row-major.
    #[must_use]
    pub fn rgb(&self) -> &[u8] {
        &self.rgb
    }

    /// Encodes the image as PNG (8-bit RGB) into `w`.
    pub fn write_png(&self, w: impl Write) -> Result<(), png::EncodingError> {
        let mut enc = png::Encoder::new(w, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // Default deflate level: Best costs ~3x the time for a few % less.
        enc.set_compression(png::Compression::Default);
        enc.set_filter(png::FilterType::Paeth);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&self.rgb)?;
        writer.finish()
    }

    /// Writes the image to a PNG file.
    pub fn save_png(&self, path: &Path) -> Result<(), RenderError> {
        let err = |message: String| RenderError::Write {
            path: path.display().to_string(),
            message,
        };
        let f = std::fs::File::create(path).map_err(|e| err(e.to_string()))?;
        let mut w = std::io::BufWriter::new(f);
        self.write_png(&mut w).map_err(|e| err(e.to_string()))?;
        w.flush().map_err(|e| err(e.to_string()))
    }
}

/// A vertex during clipping: clip-space position and the attributes
/// interpolated across the triangle.
#[derive(Clone, Copy, Debug, Default)]
struct ClipVertex {
    clip: Vec4,
    world: Vec3,
    normal: Vec3,
}

impl ClipVertex {
    fn lerp(&self, o: &ClipVertex, t: f32) -> ClipVertex {
        ClipVertex {
            clip: self.clip.lerp(o.clip, t),
            world: self.world.lerp(o.world, t),
            normal: self.normal.lerp(o.normal, t),
        }
    }
}

/// The most vertices a triangle can have after clipping by five planes.
const MAX_CLIPPED: usize = 8;

/// A clipped, screen-space triangle ready for scan conversion: vertex
/// positions in samples, 1/w, attributes divided by w, its sample-grid
/// bounding box and the edge functions of its barycentrics.
#[derive(Clone, Copy, Debug)]
struct Prepared {
    kind: SurfaceKind,
    front: bool,
    iw: [f32; 3],
    world: [Vec3; 3],
    normal: [Vec3; 3],
    /// Sample-grid box: columns `x0..x1`, rows `y0..y1`.
    x0: usize,
    x1: usize,
    y0: usize,
    y1: usize,
    /// Barycentric k is b_k(x, y) = ex_k·x + ey_k·y + e0_k.
    ex: [f32; 3],
    ey: [f32; 3],
    e0: [f32; 3],
}

/// What shading needs, apart from the buffers (so bands of rows can be
/// drawn in parallel while sharing it).
#[derive(Clone, Copy, Debug)]
struct Shader {
    eye: Vec3,
    style: Style,
    /// View-space size of one sample at depth 1 (m per m).
    sample_angle: f32,
    /// Ground fog: starts and ends at these distances from the eye (m).
    fog: (f32, f32),
    /// Unit direction towards the key light.
    light: Vec3,
}

/// Rows of samples per band of the parallel scan conversion.
const BAND_ROWS: usize = 16;

/// The rasteriser: a camera, a style and the buffers reused across frames.
///
/// A frame is drawn in two passes: triangle setup (normals, transform,
/// clipping, edge functions) runs once, in surface and triangle order, into
/// a list reused across frames; scan conversion then runs in parallel over
/// bands of [`BAND_ROWS`] sample rows, each band visiting the whole list in
/// order. Every sample thus sees the same triangles in the same order
/// whatever the thread count, and the image is bit-identical to a serial
/// draw.
#[derive(Debug)]
pub struct Renderer {
    camera: Camera,
    view_projection: Mat4,
    near: f32,
    /// Samples per side of a pixel.
    ss: usize,
    /// Sample-grid size.
    sw: usize,
    sh: usize,
    shader: Shader,
    colour: Vec<[f32; 3]>,
    /// 1/w per sample; 0 = empty.
    depth: Vec<f32>,
    vertex_normals: Vec<Vec3>,
    clip: Vec<Vec4>,
    prepared: Vec<Prepared>,
    /// The ground's contact shadow, rebuilt every frame.
    shadow: ShadowMap,
}

impl Renderer {
    /// A renderer for `camera`; fails if the camera or the style cannot form
    /// an image.
    pub fn new(camera: Camera, style: Style) -> Result<Self, RenderError> {
        camera.validate()?;
        if !(1..=4).contains(&style.supersample) {
            return Err(RenderError::Camera(format!(
                "supersample must be in 1..=4, got {}",
                style.supersample
            )));
        }
        let distance = (camera.target - camera.eye).length();
        let near = 1e-3 * distance;
        let ss = style.supersample as usize;
        let (sw, sh) = (camera.width as usize * ss, camera.height as usize * ss);
        Ok(Self {
            camera,
            view_projection: camera.view_projection(),
            near,
            ss,
            sw,
            sh,
            shader: Shader {
                eye: camera.eye,
                style,
                sample_angle: camera.pixel_angle() / ss as f32,
                fog: (3.0 * distance, 10.0 * distance),
                light: style.light_dir.normalize_or_zero(),
            },
            colour: vec![[0.0; 3]; sw * sh],
            depth: vec![0.0; sw * sh],
            vertex_normals: Vec::new(),
            clip: Vec::new(),
            prepared: Vec::new(),
            shadow: ShadowMap::default(),
        })
    }

    /// The camera.
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    /// Draws `surfaces` (in order; the z-buffer decides visibility) and
    /// returns the image.
    pub fn render(&mut self, surfaces: &[Surface<'_>]) -> Result<Image, RenderError> {
        for (s, surface) in surfaces.iter().enumerate() {
            let count = surface.positions.len();
            for (t, tri) in surface.triangles.iter().enumerate() {
                if let Some(&vertex) = tri.iter().find(|&&i| i as usize >= count) {
                    return Err(RenderError::BadIndex {
                        surface: s,
                        triangle: t,
                        vertex,
                        count,
                    });
                }
            }
        }
        self.prepared.clear();
        for surface in surfaces {
            self.prepare_surface(surface);
        }
        self.shadow.build(surfaces);
        let background = self.shader.style.background;
        let (sw, prepared, shader, shadow) = (self.sw, &self.prepared, &self.shader, &self.shadow);
        self.colour
            .par_chunks_mut(BAND_ROWS * sw)
            .zip(self.depth.par_chunks_mut(BAND_ROWS * sw))
            .enumerate()
            .for_each(|(band, (colour, depth))| {
                colour.fill(background);
                depth.fill(0.0);
                let rows = band * BAND_ROWS..band * BAND_ROWS + colour.len() / sw;
                for tri in prepared {
                    raster_rows(tri, rows.clone(), sw, colour, depth, shader, shadow);
                }
            });
        Ok(self.resolve())
    }

    /// Triangle setup of one surface into `self.prepared`.
    fn prepare_surface(&mut self, surface: &Surface<'_>) {
        let xs = surface.positions;
        self.vertex_normals.clear();
        self.vertex_normals.resize(xs.len(), Vec3::ZERO);
        for tri in surface.triangles {
            let [a, b, c] = tri.map(|i| xs[i as usize]);
            let n = (b - a).cross(c - a);
            if n.is_finite() {
                for &i in tri {
                    self.vertex_normals[i as usize] += n;
                }
            }
        }
        for n in &mut self.vertex_normals {
            *n = n.normalize_or_zero();
        }
        self.clip.clear();
        let vp = self.view_projection;
        self.clip.extend(xs.iter().map(|p| vp * p.extend(1.0)));
        let cos_crease = self.shader.style.crease_deg.to_radians().cos();
        for tri in surface.triangles {
            let [a, b, c] = tri.map(|i| xs[i as usize]);
            let face = (b - a).cross(c - a);
            let Some(face_n) = face.try_normalize() else {
                continue;
            };
            if !(a.is_finite() && b.is_finite() && c.is_finite()) {
                continue;
            }
            let front = face.dot(self.camera.eye - a) >= 0.0;
            let mut poly = [ClipVertex::default(); MAX_CLIPPED];
            for (k, &i) in tri.iter().enumerate() {
                let vn = self.vertex_normals[i as usize];
                poly[k] = ClipVertex {
                    clip: self.clip[i as usize],
                    world: xs[i as usize],
                    normal: if vn.dot(face_n) >= cos_crease {
                        vn
                    } else {
                        face_n
                    },
                };
            }
            let n = clip_polygon(&mut poly, 3, self.near);
            for k in 1..n.saturating_sub(1) {
                if let Some(t) = self.setup([&poly[0], &poly[k], &poly[k + 1]], surface.kind, front)
                {
                    self.prepared.push(t);
                }
            }
        }
    }

    /// Screen-space setup of one clipped triangle; `None` when it is
    /// degenerate on screen or covers no sample row or column.
    fn setup(&self, v: [&ClipVertex; 3], kind: SurfaceKind, front: bool) -> Option<Prepared> {
        let (sw, sh) = (self.sw as f32, self.sh as f32);
        // Screen position (samples), 1/w, and attributes divided by w.
        let mut sx = [0.0f32; 3];
        let mut sy = [0.0f32; 3];
        let mut iw = [0.0f32; 3];
        let mut world = [Vec3::ZERO; 3];
        let mut normal = [Vec3::ZERO; 3];
        for k in 0..3 {
            let c = v[k].clip;
            iw[k] = 1.0 / c.w;
            sx[k] = (0.5 + 0.5 * c.x * iw[k]) * sw;
            sy[k] = (0.5 - 0.5 * c.y * iw[k]) * sh;
            world[k] = v[k].world * iw[k];
            normal[k] = v[k].normal * iw[k];
        }
        let area = (sx[1] - sx[0]) * (sy[2] - sy[0]) - (sy[1] - sy[0]) * (sx[2] - sx[0]);
        if area.is_nan() || area.abs() <= 1e-12 {
            return None;
        }
        let inv_area = 1.0 / area;
        let x0 = sx
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min)
            .floor()
            .max(0.0) as usize;
        let y0 = sy
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min)
            .floor()
            .max(0.0) as usize;
        let x1 =
            (sx.iter().copied().fold(f32::NEG_INFINITY, f32::max).ceil() as usize).min(self.sw);
        let y1 =
            (sy.iter().copied().fold(f32::NEG_INFINITY, f32::max).ceil() as usize).min(self.sh);
        if x0 >= x1 || y0 >= y1 {
            return None;
        }
        // Barycentric k is the edge function of the edge opposite vertex k,
        // scaled by 1/area.
        let mut ex = [0.0f32; 3];
        let mut ey = [0.0f32; 3];
        let mut e0 = [0.0f32; 3];
        for k in 0..3 {
            let (i, j) = ((k + 1) % 3, (k + 2) % 3);
            ex[k] = -(sy[j] - sy[i]) * inv_area;
            ey[k] = (sx[j] - sx[i]) * inv_area;
            e0[k] = -(ex[k] * sx[i] + ey[k] * sy[i]);
        }
        Some(Prepared {
            kind,
            front,
            iw,
            world,
            normal,
            x0,
            x1,
            y0,
            y1,
            ex,
            ey,
            e0,
        })
    }

    /// Averages each pixel's samples into 8-bit RGB (rows in parallel).
    fn resolve(&self) -> Image {
        let (w, h, ss, sw) = (
            self.camera.width as usize,
            self.camera.height as usize,
            self.ss,
            self.sw,
        );
        let mut rgb = vec![0u8; 3 * w * h];
        let scale = 255.0 / (ss * ss) as f32;
        let colour = &self.colour;
        rgb.par_chunks_mut(3 * w).enumerate().for_each(|(y, row)| {
            for (x, out) in row.chunks_exact_mut(3).enumerate() {
                let mut sum = [0.0f32; 3];
                for sy in 0..ss {
                    let start = (y * ss + sy) * sw + x * ss;
                    for c in &colour[start..start + ss] {
                        for k in 0..3 {
                            sum[k] += c[k];
                        }
                    }
                }
                for k in 0..3 {
                    out[k] = (sum[k] * scale).round().clamp(0.0, 255.0) as u8;
                }
            }
        });
        Image {
            width: w as u32,
            height: h as u32,
            rgb,
        }
    }
}

/// Scan-converts the rows `rows` of triangle `t` into a band of the sample
/// grid (`colour` and `depth` hold exactly the band's rows, `sw` samples
/// each). Per row, the columns are first narrowed to where every
/// barycentric can be non-negative (with a one-sample margin, so round-off
/// cannot lose a sample); each sample is then tested exactly as in a plain
/// bounding-box loop.
fn raster_rows(
    t: &Prepared,
    rows: std::ops::Range<usize>,
    sw: usize,
    colour: &mut [[f32; 3]],
    depth: &mut [f32],
    shader: &Shader,
    shadow: &ShadowMap,
) {
    let (r0, r1) = (t.y0.max(rows.start), t.y1.min(rows.end));
    let (ex, ey, e0, iw) = (&t.ex, &t.ey, &t.e0, &t.iw);
    for y in r0..r1 {
        let py = y as f32 + 0.5;
        let (mut lo, mut hi) = (t.x0 as f32, t.x1 as f32);
        for k in 0..3 {
            // b_k ≥ 0 ⇔ ex_k·px ≥ −(ey_k·py + e0_k); skip near-zero slopes.
            let c = ey[k] * py + e0[k];
            if ex[k] > 1e-4 {
                lo = lo.max(floor_fast(-c / ex[k] - 0.5) - 1.0);
            } else if ex[k] < -1e-4 {
                hi = hi.min(floor_fast(-c / ex[k] - 0.5) + 3.0);
            }
        }
        if hi <= lo {
            continue;
        }
        let (xa, xb) = (lo.max(t.x0 as f32) as usize, (hi as usize).min(t.x1));
        let row = (y - rows.start) * sw;
        for x in xa..xb {
            let px = x as f32 + 0.5;
            let b = [
                ex[0] * px + ey[0] * py + e0[0],
                ex[1] * px + ey[1] * py + e0[1],
                ex[2] * px + ey[2] * py + e0[2],
            ];
            if b[0] < 0.0 || b[1] < 0.0 || b[2] < 0.0 {
                continue;
            }
            let inv_w = b[0] * iw[0] + b[1] * iw[1] + b[2] * iw[2];
            let idx = row + x;
            if inv_w <= depth[idx] {
                continue;
            }
            depth[idx] = inv_w;
            let w = 1.0 / inv_w;
            let p = (b[0] * t.world[0] + b[1] * t.world[1] + b[2] * t.world[2]) * w;
            let n = (b[0] * t.normal[0] + b[1] * t.normal[1] + b[2] * t.normal[2]) * w;
            colour[idx] = shader.shade(t.kind, t.front, p, n, shadow);
        }
    }
}

impl Shader {
    /// The colour of a surface sample at world position `p` with
    /// interpolated normal `n` (module doc, step 4).
    fn shade(
        &self,
        kind: SurfaceKind,
        front: bool,
        p: Vec3,
        n: Vec3,
        shadow: &ShadowMap,
    ) -> [f32; 3] {
        let st = &self.style;
        let to_eye = self.eye - p;
        let dist = to_eye.length();
        let v = to_eye / dist.max(1e-12);
        let n = n.normalize_or_zero() * if front { 1.0 } else { -1.0 };
        let l = self.light;
        let light = st.ambient + st.key * n.dot(l).max(0.0) + st.headlight * n.dot(v).max(0.0);
        let base = match kind {
            SurfaceKind::Cloth if front => st.cloth_front,
            SurfaceKind::Cloth => st.cloth_back,
            SurfaceKind::Obstacle => st.obstacle,
            SurfaceKind::Ground => self.ground_colour(p, dist),
        };
        let mut c = base.map(|b| (b * light).min(1.0));
        if kind == SurfaceKind::Ground {
            let dim = 1.0 - shadow.darkening(p.x, p.z);
            for ci in &mut c {
                *ci *= dim;
            }
            let (f0, f1) = self.fog;
            let t = ((dist - f0) / (f1 - f0)).clamp(0.0, 1.0);
            let t = t * t * (3.0 - 2.0 * t);
            for (ci, bg) in c.iter_mut().zip(st.background) {
                *ci += (bg - *ci) * t;
            }
        }
        c
    }

    /// The ground's base colour at `p`: grid lines along world x and z,
    /// about two samples wide, faded out where their spacing shrinks below
    /// a few samples (so distant lines do not alias into moiré).
    fn ground_colour(&self, p: Vec3, dist: f32) -> [f32; 3] {
        let st = &self.style;
        let footprint = dist * self.sample_angle;
        let mut strength = 0.0f32;
        let minor = st.grid_spacing.max(1e-6);
        for (spacing, weight) in [(minor, 0.35), (minor * st.grid_major.max(1) as f32, 1.0)] {
            let fade = ((spacing / footprint - 6.0) / 10.0).clamp(0.0, 1.0);
            if fade == 0.0 {
                continue;
            }
            let half_width = footprint;
            let on = [p.x, p.z].iter().any(|&c| {
                // Distance to the nearest line (`floor_fast`, not
                // `rem_euclid`: fmodf and floorf are library calls on the
                // baseline x86-64 target, on this hot path).
                let r = c - spacing * floor_fast(c / spacing);
                r.min(spacing - r) < half_width
            });
            if on {
                strength = strength.max(weight * fade);
            }
        }
        let (g, l) = (st.ground, st.ground_line);
        [0, 1, 2].map(|i| g[i] + (l[i] - g[i]) * strength)
    }
}

/// ⌊x⌋ by integer truncation, exact for |x| < 2²³ (where every f32 with a
/// fraction lies); larger values are integers already and returned as they
/// are, as is NaN.
#[inline]
fn floor_fast(x: f32) -> f32 {
    if x.abs() < 8_388_608.0 {
        let t = x as i32 as f32;
        if t > x { t - 1.0 } else { t }
    } else {
        x
    }
}

/// Clips the convex polygon `poly[..n]` against w ≥ `near` and the four side
/// planes |x| ≤ w, |y| ≤ w (Sutherland–Hodgman, in clip space, where the
/// attributes are affine); returns the new vertex count (0 when nothing
/// is left).
fn clip_polygon(poly: &mut [ClipVertex; MAX_CLIPPED], mut n: usize, near: f32) -> usize {
    let planes: [fn(Vec4, f32) -> f32; 5] = [
        |c, near| c.w - near,
        |c, _| c.w + c.x,
        |c, _| c.w - c.x,
        |c, _| c.w + c.y,
        |c, _| c.w - c.y,
    ];
    for plane in planes {
        if n == 0 {
            return 0;
        }
        let d: [f32; MAX_CLIPPED] = std::array::from_fn(|k| {
            if k < n {
                plane(poly[k].clip, near)
            } else {
                0.0
            }
        });
        if d[..n].iter().all(|&x| x >= 0.0) {
            continue;
        }
        let mut out = [ClipVertex::default(); MAX_CLIPPED];
        let mut m = 0;
        for k in 0..n {
            let j = (k + 1) % n;
            let (dk, dj) = (d[k], d[j]);
            if dk >= 0.0 && m < MAX_CLIPPED {
                out[m] = poly[k];
                m += 1;
            }
            if (dk >= 0.0) != (dj >= 0.0) && m < MAX_CLIPPED {
                out[m] = poly[k].lerp(&poly[j], dk / (dk - dj));
                m += 1;
            }
        }
        *poly = out;
        n = m;
    }
    if n < 3 { 0 } else { n }
}

/// A square ground quad (two triangles facing +y) at height `y`, centred on
/// (`centre_x`, `centre_z`), of half side `half` (m): the ground of a scene
/// that has no plane collider.
#[must_use]
pub fn ground_quad(y: f32, centre_x: f32, centre_z: f32, half: f32) -> ([Vec3; 4], [[u32; 3]; 2]) {
    let (x0, x1) = (centre_x - half, centre_x + half);
    let (z0, z1) = (centre_z - half, centre_z + half);
    (
        [
            Vec3::new(x0, y, z0),
            Vec3::new(x0, y, z1),
            Vec3::new(x1, y, z1),
            Vec3::new(x1, y, z0),
        ],
        [[0, 1, 2], [0, 2, 3]],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down_camera(size: u32) -> Camera {
        Camera {
            eye: Vec3::new(0.0, 3.0, 0.0),
            target: Vec3::ZERO,
            up: Vec3::NEG_Z,
            fov_deg: 40.0,
            width: size,
            height: size,
        }
    }

    #[test]
    fn floor_fast_is_floor() {
        for x in [
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            2.999,
            -2.999,
            1e7 + 0.5,
            -1e7,
            3e9,
            -3e9,
        ] {
            assert_eq!(floor_fast(x), x.floor(), "{x}");
        }
        assert!(floor_fast(f32::NAN).is_nan());
    }

    #[test]
    fn ground_quad_faces_up() {
        let (p, t) = ground_quad(-1.0, 0.0, 0.0, 2.0);
        for tri in t {
            let [a, b, c] = tri.map(|i| p[i as usize]);
            assert!((b - a).cross(c - a).y > 0.0);
        }
    }

    #[test]
    fn clipping_keeps_a_triangle_through_the_eye_plane_finite() {
        // A huge ground quad under a low camera crosses the near plane and
        // all four sides; every drawn sample must be finite and the half of
        // the image below the horizon covered.
        let cam = Camera {
            eye: Vec3::new(0.0, 0.5, 3.0),
            target: Vec3::new(0.0, 0.5, 0.0),
            up: Vec3::Y,
            fov_deg: 60.0,
            width: 40,
            height: 30,
        };
        let mut r = Renderer::new(cam, Style::default()).expect("valid camera");
        let (p, t) = ground_quad(0.0, 0.0, 0.0, 1000.0);
        let img = r
            .render(&[Surface {
                kind: SurfaceKind::Ground,
                positions: &p,
                triangles: &t,
            }])
            .expect("valid surface");
        let bg = Style::default()
            .background
            .map(|c| (c * 255.0).round() as u8);
        assert_eq!(img.pixel(20, 0), bg, "sky above the horizon");
        assert_ne!(img.pixel(20, 29), bg, "ground at the bottom");
        assert!(r.colour.iter().all(|c| c.iter().all(|v| v.is_finite())));
        assert!(!r.prepared.is_empty());
    }

    #[test]
    fn nearer_surface_wins() {
        let cam = down_camera(16);
        let mut r = Renderer::new(cam, Style::default()).expect("valid camera");
        let (lo, t) = ground_quad(0.0, 0.0, 0.0, 0.5);
        let (hi, _) = ground_quad(0.5, 0.0, 0.0, 0.5);
        for order in [[0, 1], [1, 0]] {
            let s = [
                Surface {
                    kind: SurfaceKind::Obstacle,
                    positions: &lo,
                    triangles: &t,
                },
                Surface {
                    kind: SurfaceKind::Cloth,
                    positions: &hi,
                    triangles: &t,
                },
            ];
            let img = r.render(&[s[order[0]], s[order[1]]]).expect("valid");
            let c = img.pixel(8, 8);
            // Orange cloth on top: red channel above blue.
            assert!(c[0] > c[2] + 60, "order {order:?}: {c:?}");
        }
    }

    #[test]
    fn bad_index_is_an_error() {
        let mut r = Renderer::new(down_camera(8), Style::default()).expect("valid camera");
        let p = [Vec3::ZERO, Vec3::X];
        let e = r.render(&[Surface {
            kind: SurfaceKind::Cloth,
            positions: &p,
            triangles: &[[0, 1, 2]],
        }]);
        assert!(matches!(e, Err(RenderError::BadIndex { vertex: 2, .. })));
    }
}
