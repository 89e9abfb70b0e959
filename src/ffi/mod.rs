//! The C ABI (`include/weft.h`, generated from this module by cbindgen).
//!
//! An adapter, like `scene/`: the core never names C types. Shape after
//! rustls-ffi:
//!
//! - every export is `weft_<object>_<verb>`, returns a [`weft_status`] with a
//!   fixed value and runs its body in [`boundary::ffi_boundary!`], which
//!   catches panics (`WEFT_STATUS_PANIC`); `weft_last_error()` gives the
//!   message of the last failure on the calling thread. The three exceptions,
//!   `weft_version`, `weft_version_number` and `weft_last_error`, cannot fail
//!   and return their value;
//! - the world is an opaque pointer; cloths and colliders are
//!   `{world, index, generation}` handles ([`handles`]): stale or foreign ones
//!   give `WEFT_STATUS_STALE_HANDLE`;
//! - descriptors are `#[repr(C)]`, begin with their own size (an older
//!   header's smaller size is accepted, the fields it lacks take their defaults),
//!   and carry enumerations as `uint32_t` constants ([`desc`]); the header's
//!   `WEFT_VERSION_*` and `weft_version_number()` say which version a host was
//!   built against and runs with ([`version`]);
//! - arrays cross as pointer + count; counts, indices and finiteness are
//!   checked before anything changes, so after any error the world is as it
//!   was (a step that loses its invariants restores the cloths).
//!
//! Threading: a world is used from one thread at a time; its steps run on its
//! own rayon pool (`worker_threads`) or the global one, with bit-identical
//! results for every thread count.
#![allow(unsafe_code)]

pub mod boundary;
pub mod cloth;
pub mod collider;
pub mod desc;
pub mod edit;
pub mod handles;
pub mod status;
pub mod tasks;
pub mod version;
pub mod world;

pub use cloth::*;
pub use collider::*;
pub use desc::*;
pub use edit::*;
pub use handles::{weft_cloth, weft_collider};
pub use status::weft_status;
pub use tasks::*;
pub use version::*;
pub use world::*;
