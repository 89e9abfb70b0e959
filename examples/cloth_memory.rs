//! Heap bytes a scene's world holds after loading, and what the Baraff–Witkin step data (the
//! implicit Euler system with its pattern, matrix and PCG workspace, the contact filters, step
//! control's backup state and stretch measures, the collision stage with its strain limiter)
//! would add on each isometric cloth's mesh: what an isometric cloth held when every cloth
//! carried both models' data.
//!
//! `cargo run --release --example cloth_memory [scene.toml ...]` (default
//! `samples/cape-isometric.toml`). Live bytes: allocated minus freed, counted by a wrapping
//! global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use weft::collide::resolve::ClothCollision;
use weft::integrate::contact::Constraints;
use weft::integrate::implicit_euler::{BwSettings, ImplicitEuler};
use weft::mesh::Topology;

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// `System`, keeping the live byte count.
struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is `System`'s; the counting touches one atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        paths.push("samples/cape-isometric.toml".into());
    }
    for path in paths {
        let scene = weft::scene::load(std::path::Path::new(&path))?;
        let before = live();
        let world = scene.instantiate()?;
        let world_bytes = live() - before;
        let mut bw_bytes = 0isize;
        for cloth in world.cloths() {
            let Some(iso) = cloth.isometric() else {
                continue;
            };
            let mesh = iso.mesh();
            let start = live();
            let parts = {
                let topology = Topology::build(mesh)?;
                let system = ImplicitEuler::new(mesh, &topology, BwSettings::default())?;
                let (edges, rest) = cloth.edges();
                let collision = ClothCollision::new(&mesh.triangles, edges, rest, &mesh.positions);
                let n = mesh.num_vertices();
                let ntri = mesh.num_triangles();
                (
                    system,
                    Constraints::new(n),
                    collision,
                    cloth.state().clone(),
                    vec![0.0f32; ntri],
                    vec![0.0f32; ntri],
                )
            };
            bw_bytes += live() - start;
            drop(parts);
        }
        println!(
            "{path}: the world holds {:.2} MB; the Baraff–Witkin step data on its isometric \
             cloths' meshes would add {:.2} MB ({:.2} MB in all)",
            world_bytes as f64 / 1e6,
            bw_bytes as f64 / 1e6,
            (world_bytes + bw_bytes) as f64 / 1e6
        );
    }
    Ok(())
}
