//! Collision detection and response.
#![deny(unsafe_code)]

pub mod bvh;
pub mod ccd;
pub mod impact_zones;
pub mod last_resort;
pub mod proximity;
pub mod resolve;
pub mod response;
pub mod shapes;
pub mod smoothing;
pub mod strain_limit;
pub mod subdivision;
pub mod track;
