//! Shared support code for weft's integration tests.
//!
//! Each integration test binary includes this module with `mod support;`. Test binaries use
//! different subsets of it, so unused items are allowed here rather than in every caller.
//! The module has no `#[cfg(test)] mod tests` of its own: anything placed there would run once
//! per including binary. The checker's own tests live in `tests/intersection_checker.rs`.
#![deny(unsafe_code)]
// Every test binary compiles this module but uses only part of it.
#![allow(dead_code)]

pub mod intersection;

// Re-exported for the callers that use them; a binary that uses none would warn.
#[allow(unused_imports)]
pub use intersection::{
    IntersectionReport, Solid, TriSoup, find_intersections, find_intersections_brute_force,
    orient3d,
};
