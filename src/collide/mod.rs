//! Collision detection and response.
#![deny(unsafe_code)]

pub mod shapes;
