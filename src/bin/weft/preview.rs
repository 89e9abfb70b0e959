//! `weft run --preview` and `--plot`: the glue between a [`World`] and the
//! physics-free `weft::render` module.

use std::path::Path;
use std::time::Instant;

use glam::Vec3;

use weft::collide::shapes::Shape;
use weft::render::camera::DEFAULT_FOV_DEG;
use weft::render::plot::{Plot, Series};
use weft::render::raster::ground_quad;
use weft::render::{Bounds, Camera, Image, RenderError, Renderer, Style, Surface, SurfaceKind};
use weft::runtime::profile::Stage;
use weft::runtime::stats::FrameStats;
use weft::scene::Scene;
use weft::scene::file::CameraSection;
use weft::world::World;

/// A cloth mesh to draw instead of a cloth's simulated one: (positions, triangles).
pub type ClothMesh<'a> = (&'a [Vec3], &'a [[u32; 3]]);

/// Which frames get a preview picture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameSet {
    /// Frame 0, every `every`-th frame, and the last.
    Every { every: u32, last: u32 },
    /// Exactly these frames.
    List(Vec<u32>),
}

impl FrameSet {
    /// True when frame `f` (0 = the initial state) is in the set.
    pub fn contains(&self, f: u32) -> bool {
        match self {
            FrameSet::Every { every, last } => f == 0 || f % every == 0 || f == *last,
            FrameSet::List(v) => v.contains(&f),
        }
    }
}

/// Parses `--preview-frames 0,60,179`: frame numbers in 0..=`frames`.
pub fn parse_frames(text: &str, frames: u32) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let f: u32 = part
            .parse()
            .map_err(|_| format!("--preview-frames: `{part}` is not a frame number"))?;
        if f > frames {
            return Err(format!(
                "--preview-frames: frame {f} is past the last frame ({frames})"
            ));
        }
        out.push(f);
    }
    if out.is_empty() {
        return Err("--preview-frames: no frame given".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses `--preview-size 320x240`.
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--preview-size: `{text}` is not WIDTHxHEIGHT (e.g. 320x240)");
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    Ok((w, h))
}

/// The preview renderer of one run: a fixed camera and the ground.
pub struct Preview {
    renderer: Renderer,
    /// The surface kind of each obstacle of the world, in order.
    obstacle_kinds: Vec<SurfaceKind>,
    /// A ground quad drawn when the scene has no plane collider.
    ground: Option<([Vec3; 4], [[u32; 3]; 2])>,
}

/// The height of a plane collider whose normal points up, if it is one.
fn floor_height(shape: &Shape, pose_y: f32, normal: Vec3) -> Option<f32> {
    (matches!(shape, Shape::Plane) && normal.y > 0.999).then_some(pose_y)
}

impl Preview {
    /// A preview of `world` (in its initial state) seen by the scene's
    /// `[camera]`, whose missing keys come from [`Camera::framing`] of the
    /// scene bounds: the cloths, the obstacles other than ground planes, the
    /// floor, and below each pinned cloth as much room as the cloth is wide
    /// (so a cloth that swings down from its pins stays in the picture).
    /// `size` (width, height) overrides the section's image size.
    pub fn new(
        scene: &Scene,
        world: &World,
        size: Option<(u32, u32)>,
    ) -> Result<Self, RenderError> {
        // Obstacles: one per collider (a scene makes no other), so planes
        // can be told apart and drawn as ground.
        let colliders = world.colliders();
        let obstacles = world.obstacles();
        let mut floor: Option<f32> = None;
        let obstacle_kinds: Vec<SurfaceKind> = if colliders.len() == obstacles.len() {
            colliders
                .iter()
                .map(|c| {
                    let pose = c.pose();
                    match floor_height(&c.desc().shape, pose.translation.y, pose.rotation * Vec3::Y)
                    {
                        Some(y) => {
                            floor = Some(floor.map_or(y, |f: f32| f.max(y)));
                            SurfaceKind::Ground
                        }
                        None => SurfaceKind::Obstacle,
                    }
                })
                .collect()
        } else {
            vec![SurfaceKind::Obstacle; obstacles.len()]
        };
        let mut bounds = Bounds::EMPTY;
        let mut hang = 0.0f32;
        for cloth in world.cloths() {
            let mut b = Bounds::EMPTY;
            b.extend(cloth.state().positions());
            if !cloth.pins().is_empty() && !b.is_empty() {
                let size = b.max - b.min;
                hang = hang.max(size.x.max(size.z).max(size.y));
                bounds.extend(&[Vec3::new(b.min.x, b.max.y - hang, b.min.z)]);
            }
            bounds.extend(&[b.min, b.max]);
        }
        let (soup, _) = world.obstacle_soup();
        let mut offset = 0;
        for (o, kind) in obstacles.iter().zip(&obstacle_kinds) {
            let n = o.mesh().positions.len();
            if *kind == SurfaceKind::Obstacle {
                bounds.extend(&soup[offset..offset + n]);
            }
            offset += n;
        }
        if bounds.is_empty() {
            bounds.extend(&[Vec3::splat(-0.5), Vec3::splat(0.5)]);
        }
        let ground_y = match floor {
            Some(y) => {
                bounds.min.y = bounds.min.y.max(y);
                bounds.extend(&[Vec3::new(bounds.min.x, y, bounds.min.z)]);
                y
            }
            None => bounds.min.y - 0.05 * bounds.radius(),
        };
        let mut c = scene.camera.clone().unwrap_or_default();
        if let Some((w, h)) = size {
            (c.width, c.height) = (w, h);
        }
        let framed = Camera::framing(&bounds, c.width, c.height);
        let camera = camera_from(&c, &framed);
        let renderer = Renderer::new(camera, Style::default())?;
        let ground = floor.is_none().then(|| {
            let centre = bounds.centre();
            ground_quad(
                ground_y,
                centre.x,
                centre.z,
                50.0 * bounds.radius().max(0.1),
            )
        });
        Ok(Self {
            renderer,
            obstacle_kinds,
            ground,
        })
    }

    /// The camera in use.
    pub fn camera(&self) -> &Camera {
        self.renderer.camera()
    }

    /// Renders the world as it is now; `cloths`, when given, replaces each cloth's
    /// simulated mesh by (positions, triangles) — the `--subdivide` output, one per cloth.
    pub fn render(
        &mut self,
        world: &World,
        cloths: Option<&[ClothMesh<'_>]>,
    ) -> Result<Image, RenderError> {
        let (soup, _) = world.obstacle_soup();
        let mut surfaces = Vec::with_capacity(world.cloths().len() + world.obstacles().len() + 1);
        let mut offset = 0;
        for (o, kind) in world.obstacles().iter().zip(&self.obstacle_kinds) {
            let n = o.mesh().positions.len();
            surfaces.push(Surface {
                kind: *kind,
                positions: &soup[offset..offset + n],
                triangles: &o.mesh().triangles,
            });
            offset += n;
        }
        match cloths {
            Some(meshes) => {
                for &(positions, triangles) in meshes {
                    surfaces.push(Surface {
                        kind: SurfaceKind::Cloth,
                        positions,
                        triangles,
                    });
                }
            }
            None => {
                for cloth in world.cloths() {
                    surfaces.push(Surface {
                        kind: SurfaceKind::Cloth,
                        positions: cloth.state().positions(),
                        triangles: cloth.triangles(),
                    });
                }
            }
        }
        if let Some((p, t)) = &self.ground {
            surfaces.push(Surface {
                kind: SurfaceKind::Ground,
                positions: p,
                triangles: t,
            });
        }
        // The ground last (stable sort): the z-buffer then skips shading it
        // where something nearer was drawn already.
        surfaces.sort_by_key(|s| s.kind == SurfaceKind::Ground);
        self.renderer.render(&surfaces)
    }

    /// Renders the world (with `cloths` as in [`Preview::render`]) and writes
    /// `preview_<frame:05>.png` into `dir`;
    /// returns the milliseconds spent rendering and encoding + writing.
    pub fn save(
        &mut self,
        world: &World,
        cloths: Option<&[ClothMesh<'_>]>,
        dir: &Path,
        frame: u32,
    ) -> Result<(f64, f64), RenderError> {
        let t0 = Instant::now();
        let image = self.render(world, cloths)?;
        let t1 = Instant::now();
        image.save_png(&dir.join(format!("preview_{frame:05}.png")))?;
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        Ok((ms(t0, t1), ms(t1, Instant::now())))
    }
}

/// The camera of a `[camera]` section, its missing eye or target taken from
/// `framed`. When only the target is given, the eye keeps the framed view
/// direction and distance; when only the eye is given, it looks at the
/// framed target.
fn camera_from(c: &CameraSection, framed: &Camera) -> Camera {
    let target = c.target.map_or(framed.target, Vec3::from_array);
    let eye = match c.eye {
        Some(e) => Vec3::from_array(e),
        None => target + (framed.eye - framed.target),
    };
    let fov_deg = c.fov_deg;
    // The framed distance assumed the default fov; keep the scene in view
    // when a narrower or wider one is asked for and the eye is not given.
    let eye = if c.eye.is_none() && fov_deg != DEFAULT_FOV_DEG {
        let scale = (0.5 * DEFAULT_FOV_DEG.to_radians()).tan() / (0.5 * fov_deg.to_radians()).tan();
        target + (eye - target) * scale
    } else {
        eye
    };
    Camera {
        eye,
        target,
        up: Vec3::from_array(c.up),
        fov_deg,
        width: c.width,
        height: c.height,
    }
}

/// Per-frame series for `--plot`.
#[derive(Default)]
pub struct PlotData {
    frames: Vec<f64>,
    max_strain: Vec<f64>,
    energy: Vec<f64>,
    kinetic: Vec<f64>,
    frame_ms: Vec<f64>,
    stage_ms: Vec<[f64; Stage::COUNT]>,
}

impl PlotData {
    /// Records frame `frame` (its stats, and the kinetic energy of `world`
    /// after it).
    pub fn push(&mut self, frame: u32, stats: &FrameStats, world: &World) {
        self.frames.push(f64::from(frame));
        self.max_strain.push(100.0 * f64::from(stats.max_strain));
        self.energy.push(stats.energy);
        self.kinetic.push(
            world
                .cloths()
                .iter()
                .map(|c| c.state().kinetic_energy())
                .sum(),
        );
        self.frame_ms.push(stats.frame_ms);
        self.stage_ms
            .push(std::array::from_fn(|i| stats.stage_ms.get(Stage::ALL[i])));
    }

    fn xy(&self, ys: &[f64]) -> Vec<(f64, f64)> {
        self.frames
            .iter()
            .copied()
            .zip(ys.iter().copied())
            .collect()
    }

    /// The three plots: (file name, plot).
    pub fn plots(&self, scene: &str, budget_ms: f64) -> Vec<(&'static str, Plot)> {
        let (x0, x1) = (
            self.frames.first().copied().unwrap_or(0.0),
            self.frames.last().copied().unwrap_or(1.0),
        );
        let mut strain = Plot::new(format!("{scene}: max strain"), "frame", "max strain (%)");
        strain.y_from_zero = true;
        strain.series.push(Series::line(
            "max |strain| over edges",
            self.xy(&self.max_strain),
        ));

        let mut energy = Plot::new(format!("{scene}: energy"), "frame", "energy (J)");
        energy.y_from_zero = true;
        energy.series.push(Series::line(
            "total (kinetic + gravity + elastic)",
            self.xy(&self.energy),
        ));
        energy
            .series
            .push(Series::line("kinetic", self.xy(&self.kinetic)));

        let mut times = Plot::new(format!("{scene}: frame time"), "frame", "time (ms)");
        times.y_from_zero = true;
        times
            .series
            .push(Series::line("frame", self.xy(&self.frame_ms)));
        for (i, s) in Stage::ALL.iter().enumerate() {
            let v: Vec<f64> = self.stage_ms.iter().map(|st| st[i]).collect();
            times.series.push(Series::line(s.column(), self.xy(&v)));
        }
        times.series.push(Series::level(
            format!("budget {budget_ms:.2} ms"),
            budget_ms,
            x0,
            x1,
        ));
        vec![
            ("plot_strain.svg", strain),
            ("plot_energy.svg", energy),
            ("plot_times.svg", times),
        ]
    }
}
