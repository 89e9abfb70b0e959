//! The C ABI's handles: `(world, index, generation)`, a slot of the C world's table of entries
//! (each holds the Rust world's id of its object and the ABI's own per-object data) with its
//! generation (`world::ids::SlotTable`, the table the Rust world's ids use too), and the
//! creating world's id, so a handle from another world never matches and a handle to a removed
//! object never matches again. Generations start at 1: an all-zero handle is never valid.

/// A cloth in a world, as C sees it. Compare all three fields for equality.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct weft_cloth {
    /// Id of the world that created it.
    pub world: u32,
    /// Slot in the world's cloth table.
    pub index: u32,
    /// Generation of the slot when the cloth was created.
    pub generation: u32,
}

/// A collider (analytic or triangle mesh) in a world, as C sees it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct weft_collider {
    /// Id of the world that created it.
    pub world: u32,
    /// Slot in the world's collider table.
    pub index: u32,
    /// Generation of the slot when the collider was created.
    pub generation: u32,
}
