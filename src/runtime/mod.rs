//! What makes weft a runtime: the frame budget and clock, the frame arena, who runs the
//! step's parallel work (weft's pool or the host's job system), stage timers, per-frame
//! statistics.
#![deny(unsafe_code)]

pub mod arena;
pub mod budget;
pub mod executor;
pub mod profile;
pub mod stats;
