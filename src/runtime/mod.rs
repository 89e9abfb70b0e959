//! What makes weft a runtime: the frame budget and clock, the frame arena, stage timers,
//! per-frame statistics.
#![deny(unsafe_code)]

pub mod arena;
pub mod budget;
pub mod profile;
pub mod stats;
