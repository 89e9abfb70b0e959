//! Benches for `weft::render`: one 640×480 preview frame (2×2 supersampling)
//! of `samples/drape-101.toml` in its initial state (20 000 cloth triangles
//! over a 5 120-triangle sphere, on the ground grid), framed as
//! `weft run --preview` frames it.
//!
//! - `render/drape-101_640x480`: rasterise and resolve (buffers reused);
//! - `render/png_640x480`: encode that image as PNG into memory.
//!
//! Requires the `[[bench]] name = "render", harness = false` entry in Cargo.toml.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use weft::render::raster::ground_quad;
use weft::render::{Bounds, Camera, Renderer, Style, Surface, SurfaceKind};

fn bench(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/drape-101.toml");
    let world = weft::scene::load(&path)
        .and_then(|s| s.instantiate())
        .expect("drape-101 loads");
    let cloth = &world.cloths()[0];
    let (soup, soup_tris) = world.obstacle_soup();
    let mut bounds = Bounds::EMPTY;
    bounds.extend(cloth.state().positions());
    bounds.extend(soup);
    let floor = bounds.min.y - 0.05 * bounds.radius();
    let centre = bounds.centre();
    let (gp, gt) = ground_quad(floor, centre.x, centre.z, 50.0 * bounds.radius());
    let surfaces = [
        Surface {
            kind: SurfaceKind::Obstacle,
            positions: soup,
            triangles: soup_tris,
        },
        Surface {
            kind: SurfaceKind::Cloth,
            positions: cloth.state().positions(),
            triangles: cloth.triangles(),
        },
        Surface {
            kind: SurfaceKind::Ground,
            positions: &gp,
            triangles: &gt,
        },
    ];
    let camera = Camera::framing(&bounds, 640, 480);
    let mut renderer = Renderer::new(camera, Style::default()).expect("valid camera");
    let mut g = c.benchmark_group("render");
    g.sample_size(20);
    g.bench_function("drape-101_640x480", |b| {
        b.iter(|| black_box(renderer.render(black_box(&surfaces)).expect("renders")));
    });
    let image = renderer.render(&surfaces).expect("renders");
    let mut bytes = Vec::with_capacity(1 << 20);
    g.bench_function("png_640x480", |b| {
        b.iter(|| {
            bytes.clear();
            image.write_png(&mut bytes).expect("encodes");
            black_box(bytes.len())
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
