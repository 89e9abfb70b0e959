//! Time integration: the Baraff–Witkin implicit step and its constraints; the Gauss–Newton
//! projection of Wang 2012 ([`projection`]) with its backward Euler / BDF2 schemes ([`bdf2`]) and the
//! step of its Table 3.1 ([`isometric`]).
#![deny(unsafe_code)]

pub mod base_edge_rows;
pub mod bdf2;
pub mod contact;
mod element_batches;
pub mod implicit_euler;
pub mod isometric;
pub mod isometric_cloth;
pub mod mesh_obstacles;
pub mod pin_track;
pub mod projection;
pub mod self_contact;
