//! Pictures and plots of a run: a software rasteriser for preview frames and
//! hand-written SVG plots of the per-frame statistics.
//!
//! This module is an output adapter, independent of the physics: it takes
//! plain vertex and triangle slices ([`Surface`]) and numbers ([`plot::Plot`]),
//! never a `World`. Only the `weft` binary wires the two together.
//!
//! - [`camera`]: the pinhole camera (`[camera]` in a scene file) and the
//!   default framing of a bounding box;
//! - [`raster`]: the z-buffered, supersampled triangle rasteriser with
//!   two-sided Lambert shading, a procedural ground grid and a soft contact
//!   shadow under cloths and obstacles (`shadow.rs`);
//! - [`plot`]: line plots with axes, ticks, labels and a legend, as SVG.
//!
//! No GPU, no external programs; PNG encoding uses the `png` crate.
#![deny(unsafe_code)]

pub mod camera;
pub mod plot;
pub mod raster;
mod shadow;

pub use camera::{Bounds, Camera};
pub use raster::{Image, Renderer, Style, Surface, SurfaceKind};

/// A rendering error: what is wrong, and with which value or file.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The camera cannot form an image.
    #[error("camera: {0}")]
    Camera(String),
    /// A surface refers to a vertex it does not have.
    #[error("surface {surface}: triangle {triangle} names vertex {vertex}, but there are {count}")]
    BadIndex {
        /// Index of the surface in the list given to the renderer.
        surface: usize,
        /// Triangle index within the surface.
        triangle: usize,
        /// The out-of-range vertex index.
        vertex: u32,
        /// Number of vertices of the surface.
        count: usize,
    },
    /// Writing the image failed.
    #[error("{path}: {message}")]
    Write {
        /// The output file.
        path: String,
        /// The OS or encoder message.
        message: String,
    },
}
