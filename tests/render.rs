//! The preview rasteriser and the SVG plots, checked by stated properties of
//! their output (colours where surfaces must be, background elsewhere,
//! lighting direction, well-formed SVG holding its series), not by hashes.

use std::path::Path;

use glam::Vec3;

use weft::mesh::{Diagonals, GridSpec, TriMesh, grid, icosphere};
use weft::render::plot::{Plot, Series};
use weft::render::raster::ground_quad;
use weft::render::{Camera, Image, Renderer, Style, Surface, SurfaceKind};
use weft::scene::{Scene, SceneError};

const SIZE: u32 = 64;

/// A 1 m square cloth in the xz plane at y = 0, winding normal +y.
fn flat_cloth() -> TriMesh {
    grid(&GridSpec {
        nx: 5,
        ny: 5,
        size: glam::Vec2::ONE,
        centre: Vec3::ZERO,
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: Diagonals::Alternating,
    })
    .expect("valid grid")
}

/// Looks at the origin from `eye` (3 m away on an axis), 40° field of view.
fn camera(eye: Vec3, up: Vec3) -> Camera {
    Camera {
        eye,
        target: Vec3::ZERO,
        up,
        fov_deg: 40.0,
        width: SIZE,
        height: SIZE,
    }
}

fn draw(cam: Camera, surfaces: &[Surface<'_>]) -> Image {
    Renderer::new(cam, Style::default())
        .expect("valid camera")
        .render(surfaces)
        .expect("valid surfaces")
}

fn cloth_surface(m: &TriMesh) -> Surface<'_> {
    Surface {
        kind: SurfaceKind::Cloth,
        positions: &m.positions,
        triangles: &m.triangles,
    }
}

fn background() -> [u8; 3] {
    Style::default()
        .background
        .map(|c| (c * 255.0).round() as u8)
}

fn luminance(c: [u8; 3]) -> f32 {
    0.3 * f32::from(c[0]) + 0.59 * f32::from(c[1]) + 0.11 * f32::from(c[2])
}

/// Half-width in pixels of a centred object of half-size `half` at distance
/// 3 m under the 40° camera.
fn projected_half(half: f32) -> f32 {
    half / (3.0 * 20f32.to_radians().tan()) * (SIZE as f32 / 2.0)
}

#[test]
fn cloth_seen_from_above_shows_its_front_colour_and_background_around() {
    let m = flat_cloth();
    let img = draw(
        camera(Vec3::new(0.0, 3.0, 0.0), Vec3::NEG_Z),
        &[cloth_surface(&m)],
    );
    let half = projected_half(0.5); // ≈ 13.7 px
    let c = SIZE / 2;
    let inside = (0.7 * half) as u32;
    let outside = (1.3 * half).ceil() as u32;
    for (x, y) in [
        (c, c),
        (c - inside, c - inside),
        (c + inside, c + inside - 1),
    ] {
        let p = img.pixel(x, y);
        // Orange front: red well above blue.
        assert!(
            p[0] > p[2] + 100,
            "front colour expected at ({x}, {y}), got {p:?}"
        );
    }
    for (x, y) in [(0, 0), (c - outside, c), (c + outside, c), (c, c + outside)] {
        assert_eq!(img.pixel(x, y), background(), "background at ({x}, {y})");
    }
}

#[test]
fn cloth_seen_from_below_shows_its_back_colour() {
    let m = flat_cloth();
    let above = draw(
        camera(Vec3::new(0.0, 3.0, 0.0), Vec3::NEG_Z),
        &[cloth_surface(&m)],
    );
    let below = draw(
        camera(Vec3::new(0.0, -3.0, 0.0), Vec3::NEG_Z),
        &[cloth_surface(&m)],
    );
    let c = SIZE / 2;
    let (f, b) = (above.pixel(c, c), below.pixel(c, c));
    // Blue back: blue well above red; the two sides clearly differ.
    assert!(b[2] > b[0] + 50, "back colour expected, got {b:?}");
    assert!(
        (0..3)
            .map(|k| (i32::from(f[k]) - i32::from(b[k])).abs())
            .sum::<i32>()
            > 150,
        "front {f:?} and back {b:?} must differ"
    );
    assert_ne!(b, background());
}

#[test]
fn a_sphere_is_round_grey_and_lit_from_above() {
    let s = icosphere(0.3, 3).expect("valid sphere");
    let surf = Surface {
        kind: SurfaceKind::Obstacle,
        positions: &s.positions,
        triangles: &s.triangles,
    };
    let img = draw(camera(Vec3::new(0.0, 0.0, 3.0), Vec3::Y), &[surf]);
    // The silhouette of a sphere of radius r at distance d subtends
    // asin(r/d); its image radius is tan(asin(r/d)) · f in pixels.
    let r_px = (0.3f32 / 3.0).asin().tan() / 20f32.to_radians().tan() * (SIZE as f32 / 2.0);
    let c = SIZE / 2;
    for k in 0..8 {
        let a = k as f32 * std::f32::consts::FRAC_PI_4;
        let at = |s: f32| {
            let x = (c as f32 + s * r_px * a.cos()).round() as u32;
            let y = (c as f32 + s * r_px * a.sin()).round() as u32;
            img.pixel(x, y)
        };
        let p = at(0.75);
        assert_ne!(p, background(), "sphere inside its silhouette, angle {k}");
        // Grey: the channels agree.
        assert!(
            p.iter().max().expect("3") - p.iter().min().expect("3") < 12,
            "grey expected, got {p:?}"
        );
        assert_eq!(at(1.3), background(), "background outside, angle {k}");
    }
    // The key light comes from above: the upper half is brighter.
    let top = luminance(img.pixel(c, c - (0.6 * r_px) as u32));
    let bottom = luminance(img.pixel(c, c + (0.6 * r_px) as u32));
    assert!(top > bottom + 20.0, "top {top} vs bottom {bottom}");
}

#[test]
fn cloth_over_a_sphere_hides_it_from_above_and_not_from_below() {
    let m = flat_cloth();
    let lifted: Vec<Vec3> = m.positions.iter().map(|p| *p + Vec3::Y * 0.5).collect();
    let s = icosphere(0.3, 3).expect("valid sphere");
    let surfaces = [
        Surface {
            kind: SurfaceKind::Cloth,
            positions: &lifted,
            triangles: &m.triangles,
        },
        Surface {
            kind: SurfaceKind::Obstacle,
            positions: &s.positions,
            triangles: &s.triangles,
        },
    ];
    let c = SIZE / 2;
    let above = draw(camera(Vec3::new(0.0, 3.0, 0.0), Vec3::NEG_Z), &surfaces);
    let p = above.pixel(c, c);
    assert!(p[0] > p[2] + 100, "cloth front on top, got {p:?}");
    let below = draw(camera(Vec3::new(0.0, -3.0, 0.0), Vec3::NEG_Z), &surfaces);
    let p = below.pixel(c, c);
    assert!(
        p.iter().max().expect("3") - p.iter().min().expect("3") < 12,
        "the grey sphere hides the cloth from below, got {p:?}"
    );
}

#[test]
fn the_ground_shows_grid_lines() {
    let (p, t) = ground_quad(0.0, 0.0, 0.0, 5.0);
    let g = Surface {
        kind: SurfaceKind::Ground,
        positions: &p,
        triangles: &t,
    };
    let cam = Camera {
        width: 128,
        height: 128,
        ..camera(Vec3::new(0.0, 3.0, 0.0), Vec3::NEG_Z)
    };
    let img = draw(cam, &[g]);
    let ground = luminance(Style::default().ground.map(|c| (c * 255.0).round() as u8));
    let mut line = 0;
    let mut plain = 0;
    for y in 0..128 {
        for x in 0..128 {
            let l = luminance(img.pixel(x, y));
            if l < ground - 15.0 {
                line += 1;
            } else if (l - ground).abs() < 15.0 {
                plain += 1;
            }
        }
    }
    // 2.2 m of ground in view at 0.1 m spacing: ~22 lines each way, each
    // about a pixel wide, on a mostly plain ground.
    assert!(line > 128 * 20, "grid lines: {line} pixels");
    assert!(plain > line, "plain ground: {plain} pixels, lines {line}");
}

#[test]
fn png_round_trips() {
    let m = flat_cloth();
    let img = draw(
        camera(Vec3::new(0.0, 3.0, 0.0), Vec3::NEG_Z),
        &[cloth_surface(&m)],
    );
    let mut bytes = Vec::new();
    img.write_png(&mut bytes).expect("encodes");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("frame");
    assert_eq!((info.width, info.height), (SIZE, SIZE));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(&buf[..info.buffer_size()], img.rgb());
}

/// Checks that every `<tag …>` has its `</tag>` in nesting order (self-closed
/// tags aside) and returns the opening tag names in order.
fn balanced_tags(svg: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut opened = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("every tag closes") + start;
        let tag = &rest[start + 1..end];
        assert!(!tag.contains('<'), "`<` inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else {
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            assert!(!name.is_empty(), "empty tag name in <{tag}>");
            opened.push(name.clone());
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        // Text between tags holds no raw `>` either.
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    opened
}

#[test]
fn plot_svg_is_well_formed_and_holds_its_series() {
    let mut p = Plot::new("drape: frame time", "frame", "time (ms)");
    p.y_from_zero = true;
    let a: Vec<(f64, f64)> = (1..=120)
        .map(|f| (f64::from(f), 3.0 + (f64::from(f) * 0.1).sin()))
        .collect();
    let b: Vec<(f64, f64)> = (1..=120)
        .map(|f| (f64::from(f), 1.0 + 0.01 * f64::from(f)))
        .collect();
    p.series.push(Series::line("frame", a));
    p.series.push(Series::line("solve", b));
    p.series
        .push(Series::level("budget 16.67 ms", 16.67, 1.0, 120.0));
    let svg = p.to_svg();
    let tags = balanced_tags(&svg);
    assert_eq!(tags[0], "svg");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    // One group per series, named; one legend entry per series.
    for name in ["frame", "solve", "budget 16.67 ms"] {
        assert!(
            svg.contains(&format!("data-name=\"{name}\"")),
            "series {name}"
        );
        assert!(svg.contains(&format!(">{name}</text>")), "legend {name}");
    }
    assert_eq!(svg.matches("class=\"series\"").count(), 3);
    assert!(svg.contains("class=\"legend\""));
    // Title, axis labels, and tick labels on both axes.
    for text in ["drape: frame time", ">frame</text>", "time (ms)"] {
        assert!(svg.contains(text), "{text}");
    }
    assert!(tags.iter().filter(|t| *t == "text").count() >= 3 + 3 + 5);
    // The budget (16.67) is inside the y range: a tick at 18 or 20 exists.
    assert!(svg.contains(">20</text>") || svg.contains(">18</text>"));
    // The first series' polyline holds all 120 points.
    let g = svg.find("data-name=\"frame\"").expect("group");
    let poly = &svg[g..];
    let pts = &poly[poly.find("points=\"").expect("polyline") + 8..];
    let pts = &pts[..pts.find('"').expect("closing quote")];
    assert_eq!(pts.split_whitespace().count(), 120);
}

const CAMERA_SCENE: &str = r#"
name = "cam"

[[cloth]]
[cloth.grid]
vertices = [5, 5]

[camera]
eye = [0.0, 3.0, 0.5]
target = [0.0, 0.0, 0.0]
width = 320
height = 240
"#;

fn load(text: &str) -> Result<Scene, SceneError> {
    Scene::from_toml(text, Path::new("scene.toml"))
}

#[test]
fn scene_camera_section_parses_and_checks() {
    let s = load(CAMERA_SCENE).expect("valid");
    let c = s.camera.expect("camera given");
    assert_eq!(c.eye, Some([0.0, 3.0, 0.5]));
    assert_eq!((c.width, c.height, c.fov_deg), (320, 240, 35.0));
    assert!(
        load("[[cloth]]\n[cloth.grid]\nvertices = [5, 5]\n")
            .expect("valid")
            .camera
            .is_none()
    );

    let e = load(&CAMERA_SCENE.replace("width = 320", "widht = 320")).expect_err("unknown key");
    let m = e.to_string();
    assert!(m.contains("scene.toml:") && m.contains("widht"), "{m}");

    let e = load(&CAMERA_SCENE.replace("height = 240", "height = 240\nfov_deg = 180.0"))
        .expect_err("fov out of range");
    let m = e.to_string();
    assert!(matches!(e, SceneError::Value { line: 13, .. }), "{m}");
    assert!(m.contains("camera.fov_deg"), "{m}");

    let e = load(&CAMERA_SCENE.replace("[0.0, 3.0, 0.5]", "[0.0, 0.0, 0.0]"))
        .expect_err("eye = target");
    assert!(e.to_string().contains("camera.target"), "{e}");
    let e =
        load(&CAMERA_SCENE.replace("[0.0, 3.0, 0.5]", "[0.0, 3.0, 0.0]")).expect_err("up ∥ view");
    assert!(e.to_string().contains("camera.up"), "{e}");
    let e = load(&CAMERA_SCENE.replace("width = 320", "width = 0")).expect_err("zero width");
    assert!(e.to_string().contains("camera.width"), "{e}");
}

#[test]
fn weft_run_writes_previews_and_plots() {
    let out = std::env::temp_dir().join(format!("weft-render-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/hanging.toml");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("run")
        .arg(&scene)
        .args([
            "--frames",
            "3",
            "--preview-frames",
            "0,3",
            "--preview-size",
            "64x48",
            "--plot",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("weft runs");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    for f in [0, 3] {
        let bytes =
            std::fs::read(out.join(format!("preview_{f:05}.png"))).expect("preview written");
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("frame");
        assert_eq!((info.width, info.height), (64, 48));
        // Some cloth (orange or blue) in view, not only ground and sky.
        let cloth = buf[..info.buffer_size()]
            .chunks_exact(3)
            .filter(|p| (i32::from(p[0]) - i32::from(p[2])).abs() > 60)
            .count();
        assert!(cloth > 20, "frame {f}: {cloth} cloth pixels");
    }
    assert!(!out.join("preview_00001.png").exists());
    for (name, series) in [
        ("plot_strain.svg", "max |strain| over edges"),
        ("plot_energy.svg", "kinetic"),
        ("plot_times.svg", "solve"),
    ] {
        let svg = std::fs::read_to_string(out.join(name)).expect("plot written");
        balanced_tags(&svg);
        assert!(
            svg.contains(&format!("data-name=\"{series}\"")),
            "{name}: {series}"
        );
    }
    // A frame past the run is bad input (exit code 2).
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("run")
        .arg(&scene)
        .args(["--frames", "3", "--preview-frames", "4"])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("weft runs");
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&out);
}
