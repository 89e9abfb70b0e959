//! The frame arena: scratch whose size varies frame to frame, bump-allocated and freed all at
//! once when the next frame starts, so a steady-state stage never allocates.
//!
//! Each cloth owns one [`FrameArena`] (cloths step in parallel; a `bumpalo::Bump` is `Send` but
//! not `Sync`, so an arena is never shared between threads: parallel kernels write into slices
//! carved from it before they start). `World::step` resets every cloth's arena at the start of
//! the frame; its borrows cannot outlive the frame because `reset` takes `&mut self`.
//!
//! What lives here: lists whose length depends on the frame's geometry — the collision stage's
//! candidate tests and their detection flags (`collide::resolve`), the collider poses of IMEX
//! pieces and step-control halves (`pipeline`). What does not: fixed-size SoA buffers (one entry
//! per vertex, edge or element), which are sized at creation and kept in their structs.
//!
//! **Why a warmed-up frame allocates nothing.** `Bump` hands out memory from chunks it obtained
//! from the global allocator; a full chunk is followed by a new one of at least twice its size
//! (bumpalo 3.x), and `reset` frees every chunk but the newest, i.e. the largest, and rewinds it.
//! So once one frame's total use fits in that kept chunk, every frame that uses no more is served
//! from it without touching the heap. A frame that needs more takes a new chunk — an allocation,
//! which [`FrameArena::grew`] reports (the world counts it in `FrameStats::pool_overflows`) —
//! after which the larger chunk is the one kept. `tests/no_alloc.rs` and `tests/soak.rs` check
//! the steady state with a counting allocator; [`FrameArena::used_bytes`] is the per-frame
//! high-water mark the world reports as `FrameStats::arena_bytes`.
#![deny(unsafe_code)]

use bumpalo::Bump;

/// A bump allocator reset once per frame (see the module doc).
#[derive(Debug, Default)]
pub struct FrameArena {
    bump: Bump,
    /// Bytes the arena held when it was last reset (its kept chunk).
    capacity_at_reset: usize,
}

impl FrameArena {
    /// An arena whose first chunk holds at least `bytes` (no allocation for `bytes == 0`).
    #[must_use]
    pub fn with_capacity(bytes: usize) -> Self {
        let bump = Bump::with_capacity(bytes);
        let capacity_at_reset = bump.allocated_bytes();
        Self {
            bump,
            capacity_at_reset,
        }
    }

    /// Frees everything allocated since the last reset, keeping the largest chunk for the next
    /// frame (no call to the global allocator other than freeing the smaller chunks).
    pub fn reset(&mut self) {
        self.bump.reset();
        self.capacity_at_reset = self.bump.allocated_bytes();
    }

    /// The allocator to carve this frame's scratch from.
    #[must_use]
    pub fn bump(&self) -> &Bump {
        &self.bump
    }

    /// Bytes handed out since the last reset (including alignment padding and the unused tail
    /// of a chunk that was followed by a new one). Nothing is freed within a frame, so at the
    /// end of a frame this is the frame's high-water mark.
    #[must_use]
    pub fn used_bytes(&self) -> usize {
        self.bump.allocated_bytes() - self.bump.chunk_capacity()
    }

    /// Bytes of chunk memory the arena holds now.
    #[must_use]
    pub fn capacity_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }

    /// True if the arena took a new chunk from the heap since the last reset: this frame needed
    /// more scratch than any frame before (an overflow, reported in the statistics).
    #[must_use]
    pub fn grew(&self) -> bool {
        self.bump.allocated_bytes() > self.capacity_at_reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills the arena with `n` slices of `len` u64s (a frame's scratch).
    fn frame(arena: &FrameArena, n: usize, len: usize) {
        for k in 0..n {
            let s = arena.bump().alloc_slice_fill_copy(len, k as u64);
            assert_eq!(s.len(), len);
        }
    }

    #[test]
    fn a_repeated_frame_reuses_the_kept_chunk() {
        let mut arena = FrameArena::with_capacity(1024);
        // Warm-up: a frame of 64 × 512 × 8 = 256 KiB grows the arena.
        arena.reset();
        frame(&arena, 64, 512);
        assert!(arena.grew(), "256 KiB does not fit in 1 KiB");
        assert!(arena.used_bytes() >= 64 * 512 * 8);
        // The growth converges: chunks double, so after a few equal frames the kept chunk holds
        // a whole frame and the arena stops growing for good.
        let mut grown = 0;
        for _ in 0..4 {
            arena.reset();
            frame(&arena, 64, 512);
            grown += u32::from(arena.grew());
        }
        assert!(grown <= 2, "grew in {grown} of 4 equal frames");
        let capacity = arena.capacity_bytes();
        for _ in 0..10 {
            arena.reset();
            frame(&arena, 64, 512);
            assert!(!arena.grew());
            assert_eq!(arena.capacity_bytes(), capacity, "no new chunk");
            // A smaller frame fits too.
            arena.reset();
            frame(&arena, 10, 100);
            assert!(!arena.grew());
        }
    }

    #[test]
    fn used_bytes_counts_this_frame_only() {
        let mut arena = FrameArena::with_capacity(1 << 16);
        assert_eq!(arena.used_bytes(), 0);
        frame(&arena, 4, 100);
        let used = arena.used_bytes();
        assert!((4 * 100 * 8..4 * 100 * 8 + 64).contains(&used), "{used}");
        arena.reset();
        assert_eq!(arena.used_bytes(), 0);
        assert!(!arena.grew());
    }

    #[test]
    fn the_default_arena_is_empty_and_grows_on_first_use() {
        let mut arena = FrameArena::default();
        assert_eq!(arena.capacity_bytes(), 0);
        arena.reset();
        frame(&arena, 1, 10);
        assert!(arena.grew());
    }
}
