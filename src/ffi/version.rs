//! The library's version as numbers: `WEFT_VERSION_*` in the header, checked at compile
//! time against Cargo.toml's version, and `weft_version_number()` for what a host links.
//!
//! Compatibility: within one major version, a host built against an older `weft.h` links
//! a newer library and works unchanged (functions are only added, structs only grow at
//! their end and older sizes are accepted, `desc`); a new major version may break both.

/// Major version of this header (Cargo.toml's `version`).
pub const WEFT_VERSION_MAJOR: u32 = 0;
/// Minor version of this header.
pub const WEFT_VERSION_MINOR: u32 = 2;
/// Patch version of this header.
pub const WEFT_VERSION_PATCH: u32 = 0;
/// This header's version as one number, `MAJOR * 1000000 + MINOR * 1000 + PATCH`: compare it
/// with `weft_version_number()` (the library a host runs with) to refuse an older library
/// than the header it was built against.
pub const WEFT_VERSION_NUMBER: u32 = 2000;

/// Parses a decimal version component at compile time.
const fn parse(s: &str) -> u32 {
    let bytes = s.as_bytes();
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version component is a number");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

// The header's numbers are Cargo.toml's (cbindgen needs literals; a release that bumps one
// and not the other does not build).
const _: () = {
    assert!(WEFT_VERSION_MAJOR == parse(env!("CARGO_PKG_VERSION_MAJOR")));
    assert!(WEFT_VERSION_MINOR == parse(env!("CARGO_PKG_VERSION_MINOR")));
    assert!(WEFT_VERSION_PATCH == parse(env!("CARGO_PKG_VERSION_PATCH")));
    assert!(
        WEFT_VERSION_NUMBER
            == WEFT_VERSION_MAJOR * 1_000_000 + WEFT_VERSION_MINOR * 1_000 + WEFT_VERSION_PATCH
    );
    assert!(WEFT_VERSION_MINOR < 1000 && WEFT_VERSION_PATCH < 1000);
};

/// The version of the library linked, as `WEFT_VERSION_NUMBER` counts it (never fails). A
/// host built against header version H runs with library L when they share the major
/// version (`L / 1000000 == H / 1000000`) and `L >= H`.
#[unsafe(no_mangle)]
pub extern "C" fn weft_version_number() -> u32 {
    WEFT_VERSION_NUMBER
}
