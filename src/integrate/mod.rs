//! Time integration: the Baraff–Witkin implicit step and its constraints.
#![deny(unsafe_code)]

pub mod contact;
pub mod implicit_euler;
