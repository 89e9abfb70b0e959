//! weft: an embedded, fixed-budget cloth simulation runtime.
//!
//! Priorities, in order: correct (every equation cited and tested), within
//! budget (iteration caps, a frame deadline, no allocation in steady-state
//! frames), deterministic (the same `state_hash` for every run and thread
//! count), fast (measured in benches).
//!
//! # The step
//!
//! ```text
//! World::step(dt)                       one frame
//!  └ substep(h = dt / substeps)         pipeline::substep, repeated
//!     kinematics   pins move to their targets at t + h; gravity
//!     contacts     pins and collider contacts -> filters S, changes z, offsets y
//!     assemble     A = M − hD − h²K, b = h(f0 + K(h v0 + y))     (Baraff–Witkin 1998 eq. 2.14, 2.17)
//!     solve        filtered PCG within the iteration cap and deadline
//!     finish       contact release, friction, x = x0 + h v1 + y
//!     control      undo and retry as two half steps when stretch jumps
//!  colliders move to t + h
//!  └ stats         FrameStats: per-stage ms, CG iterations, contacts, strain
//! ```
//!
//! # Modules
//!
//! [`mesh`] (topology, OBJ, generators), [`state`] (SoA state, state hash),
//! [`model`] (element energies, forces, Jacobians), [`linalg`] (fixed-pattern
//! block matrix, filtered PCG), [`integrate`] (the implicit step, constraints),
//! [`collide`] (collider shapes, proximity, CCD), [`pipeline`] (stage order),
//! [`runtime`] (budget, clock, timers, stats), [`world`] (the world and its
//! cloths), [`scene`] (TOML scene files; an adapter the core never names).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod collide;
pub mod ffi;
pub mod integrate;
pub mod limits;
pub mod linalg;
pub mod mesh;
pub mod model;
pub mod pipeline;
#[cfg(feature = "render")]
pub mod render;
pub mod runtime;
#[cfg(feature = "scene")]
pub mod scene;
pub mod state;
pub mod world;

#[cfg(test)]
mod testing;

/// The README's Rust example, compiled and run as a doctest.
#[cfg(all(doctest, feature = "scene"))]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use world::{ClothDesc, ColliderDesc, StepError, World, WorldSettings};
