//! The panic boundary and the thread-local last error.
//!
//! Every export body runs inside [`ffi_boundary!`]: a `catch_unwind` that turns
//! `Ok` into `WEFT_STATUS_OK`, an [`FfiError`] into its status (the message
//! goes to `weft_last_error`), and a panic into `WEFT_STATUS_PANIC` — no
//! unwinding ever crosses into the host (rustls-ffi `panic.rs`). This relies
//! on `panic = "unwind"`, which every profile in Cargo.toml keeps.

use std::any::Any;
use std::cell::RefCell;
#[cfg(test)]
use std::ffi::CStr;
use std::ffi::CString;
use std::os::raw::c_char;

use super::status::{FfiError, weft_status};

thread_local! {
    /// The message of the most recent failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Stores `message` (prefixed by the function name) as this thread's last error.
pub(crate) fn set_last_error(function: &str, message: &str) {
    let text = format!("{function}: {message}").replace('\0', " ");
    let c = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Pointer to this thread's last error message; valid until the next failing
/// call on this thread.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The last error as a Rust string (tests).
#[cfg(test)]
pub(crate) fn last_error() -> String {
    // SAFETY: `last_error_ptr` points at the NUL-terminated buffer owned by
    // this thread's `LAST_ERROR`, which nothing replaces during this call.
    unsafe { CStr::from_ptr(last_error_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Maps the outcome of an export body to its status, recording errors.
pub(crate) fn finish(
    function: &str,
    outcome: std::thread::Result<Result<(), FfiError>>,
) -> weft_status {
    match outcome {
        Ok(Ok(())) => weft_status::WEFT_STATUS_OK,
        Ok(Err(e)) => {
            set_last_error(function, &e.message);
            e.status
        }
        Err(payload) => {
            set_last_error(
                function,
                &format!(
                    "internal panic (a bug in weft): {}",
                    panic_message(&*payload)
                ),
            );
            weft_status::WEFT_STATUS_PANIC
        }
    }
}

/// Runs an export body (a block evaluating to `Result<(), FfiError>`) behind
/// `catch_unwind` and returns a `weft_status`.
macro_rules! ffi_boundary {
    ($function:literal, $body:block) => {{
        let outcome = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(
            || -> ::std::result::Result<(), $crate::ffi::status::FfiError> { $body },
        ));
        $crate::ffi::boundary::finish($function, outcome)
    }};
}
pub(crate) use ffi_boundary;

/// Dereferences a required `*const T` argument or returns `NULL_ARGUMENT`.
macro_rules! try_ref {
    ($ptr:expr, $name:literal) => {{
        let p = $ptr;
        if p.is_null() {
            return Err($crate::ffi::status::FfiError::null($name));
        }
        // SAFETY: non-null; the export's `# Safety` section requires the
        // caller to pass a valid, aligned pointer that outlives the call.
        unsafe { &*p }
    }};
}
pub(crate) use try_ref;

/// Dereferences a required `*mut T` argument or returns `NULL_ARGUMENT`.
macro_rules! try_mut {
    ($ptr:expr, $name:literal) => {{
        let p = $ptr;
        if p.is_null() {
            return Err($crate::ffi::status::FfiError::null($name));
        }
        // SAFETY: non-null; the export's `# Safety` section requires the
        // caller to pass a valid, aligned, exclusive pointer for the call.
        unsafe { &mut *p }
    }};
}
pub(crate) use try_mut;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = ffi_boundary!("weft_test", {
            if last_error().len() < usize::MAX {
                panic!("boom");
            }
            Ok(())
        });
        assert_eq!(status, weft_status::WEFT_STATUS_PANIC);
        assert!(last_error().contains("boom"), "{}", last_error());
        assert!(last_error().starts_with("weft_test:"));
    }

    #[test]
    fn an_error_keeps_its_status_and_a_success_keeps_the_message() {
        let status = ffi_boundary!("weft_test", { Err(FfiError::invalid("bad thing at 3")) });
        assert_eq!(status, weft_status::WEFT_STATUS_INVALID_ARGUMENT);
        assert_eq!(last_error(), "weft_test: bad thing at 3");
        let ok = ffi_boundary!("weft_test", { Ok(()) });
        assert_eq!(ok, weft_status::WEFT_STATUS_OK);
        assert_eq!(last_error(), "weft_test: bad thing at 3");
    }
}
