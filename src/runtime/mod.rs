//! What makes weft a runtime: the frame budget and clock, stage timers, per-frame statistics.
#![deny(unsafe_code)]

pub mod budget;
pub mod profile;
pub mod stats;
