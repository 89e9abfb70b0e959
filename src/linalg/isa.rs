//! The solver's hot loops compiled twice, for the build's target and with AVX, the copy chosen
//! at run time ([`with_best_isa`]).
//!
//! weft is built for x86-64's baseline (SSE2), where every SIMD instruction overwrites one of
//! its operands and takes memory operands only when aligned: the 3×3 block products of the
//! SpMV, the triangular sweeps and the IC(0) factorisation spend a good part of their
//! instructions copying registers and loading unaligned columns before using them. The same
//! code compiled with AVX enabled (three-operand VEX forms, unaligned memory operands) does the
//! same arithmetic in fewer instructions.
//!
//! **The bits do not change.** Enabling AVX changes how the operations are encoded, not which
//! ones run: every `f32`/`f64` addition, subtraction, multiplication, division and square
//! root is the same IEEE operation on the same operands in the same order (Rust never contracts
//! a multiplication and an addition into a fused multiply-add, and FMA is not enabled here), so
//! the results are bit-identical to the baseline build's on any machine, with or without AVX.
//! The kernels' tests compare the two copies bit for bit on a CPU with AVX (`pcg`: the
//! product pass against its baseline copy; `block_ldl`: the factor against a reference loop
//! compiled for the baseline), and drape-65's `state_hash` is the same.
//!
//! Used by the product pass (`pcg::product_rows`: about 0.7 of the baseline's CPU time), the
//! residual pass of a solve's set-up (`pcg::residual_rows`, the same row products) and the
//! IC(0) factorisation (`block_ldl::ic0_rows`: about 0.9). The triangular sweeps are left on
//! the baseline: compiled with AVX they measured no faster.
//!
//! On other architectures, or on an x86-64 CPU without AVX, the closure runs as compiled.
#![allow(unsafe_code)]

/// Runs `f` compiled with AVX when the CPU has it, else as compiled (module doc). Meant for
/// an `#[inline(always)]` closure around a hot loop that is itself `#[inline(always)]`: a
/// closure called from both copies is otherwise compiled once, for the baseline, and called
/// from the AVX copy. Whatever else the loop must reach in its AVX copy should be `#[inline]`.
#[inline(always)]
pub(crate) fn with_best_isa<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above), which is all that calling a function
        // compiled with `target_feature(enable = "avx")` requires.
        return unsafe { with_avx(f) };
    }
    f()
}

/// `f()`, compiled with AVX.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn with_avx<R>(f: impl FnOnce() -> R) -> R {
    f()
}
