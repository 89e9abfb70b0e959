//! Status codes and the error every export turns into one.

use crate::runtime::executor::TaskError;
use crate::world::{ClothError, EditError, StepError};

/// The outcome of every `weft_*` call. Values are fixed: new codes are only
/// ever appended.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_status {
    /// Success.
    WEFT_STATUS_OK = 0,
    /// A required pointer argument was NULL.
    WEFT_STATUS_NULL_ARGUMENT = 1,
    /// An argument is out of its valid range or inconsistent.
    WEFT_STATUS_INVALID_ARGUMENT = 2,
    /// A cloth or collider handle was removed, never existed, or belongs to
    /// another world.
    WEFT_STATUS_STALE_HANDLE = 3,
    /// An index (vertex, triangle corner) is out of range.
    WEFT_STATUS_OUT_OF_RANGE = 4,
    /// A coordinate or parameter is NaN or infinite.
    WEFT_STATUS_NON_FINITE = 5,
    /// A descriptor's `size` field does not match this library's struct.
    WEFT_STATUS_DESCRIPTOR_SIZE = 6,
    /// The request is valid but not supported by this version (e.g. a cloth
    /// model not built in yet).
    WEFT_STATUS_UNSUPPORTED = 7,
    /// A mesh is invalid (empty, degenerate, non-manifold, inconsistent).
    WEFT_STATUS_INVALID_MESH = 8,
    /// A scene file could not be read or is invalid.
    WEFT_STATUS_SCENE = 9,
    /// The simulation lost an invariant (non-finite state); the step was undone
    /// (`weft_world_step`).
    WEFT_STATUS_SIMULATION_FAILED = 10,
    /// The caller's buffer is too small.
    WEFT_STATUS_BUFFER_TOO_SMALL = 11,
    /// A worker thread pool could not be created, or the host's task dispatcher
    /// did not run every task exactly once (`weft_world_set_task_dispatcher`;
    /// the step was undone, `weft_world_step`).
    WEFT_STATUS_THREADS = 12,
    /// weft panicked (a bug); the panic was caught at the boundary, or inside
    /// the task that panicked (a step that panicked was undone, `weft_world_step`).
    WEFT_STATUS_PANIC = 99,
}

use weft_status as S;

/// An error on its way to the boundary: a status and a message for
/// `weft_last_error`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FfiError {
    pub(crate) status: weft_status,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn new(status: weft_status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &str) -> Self {
        Self::new(S::WEFT_STATUS_NULL_ARGUMENT, format!("`{what}` is NULL"))
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(S::WEFT_STATUS_INVALID_ARGUMENT, message)
    }

    pub(crate) fn non_finite(what: &str) -> Self {
        Self::new(
            S::WEFT_STATUS_NON_FINITE,
            format!("`{what}` is NaN or infinite"),
        )
    }

    pub(crate) fn out_of_range(message: impl Into<String>) -> Self {
        Self::new(S::WEFT_STATUS_OUT_OF_RANGE, message)
    }
}

impl From<ClothError> for FfiError {
    fn from(e: ClothError) -> Self {
        let status = match e {
            ClothError::Mesh(_) | ClothError::Rest(_) | ClothError::IsolatedVertex { .. } => {
                S::WEFT_STATUS_INVALID_MESH
            }
            ClothError::Parameter { .. } => S::WEFT_STATUS_INVALID_ARGUMENT,
            ClothError::Isometric(_) | ClothError::Range(_) => S::WEFT_STATUS_INVALID_ARGUMENT,
        };
        Self::new(status, e.to_string())
    }
}

impl From<EditError> for FfiError {
    fn from(e: EditError) -> Self {
        let status = match e {
            // The handle tables keep world ids valid: reaching one of these
            // means a handle outlived its object.
            EditError::NoCloth { .. }
            | EditError::NoCollider { .. }
            | EditError::NoObstacle { .. }
            | EditError::OwnedByCollider { .. } => S::WEFT_STATUS_STALE_HANDLE,
            EditError::VertexOutOfRange { .. } => S::WEFT_STATUS_OUT_OF_RANGE,
            EditError::WrongModel { .. } => S::WEFT_STATUS_UNSUPPORTED,
            EditError::NotPinned { .. } | EditError::Value { .. } | EditError::SameCloth { .. } => {
                S::WEFT_STATUS_INVALID_ARGUMENT
            }
        };
        Self::new(status, e.to_string())
    }
}

impl From<StepError> for FfiError {
    fn from(e: StepError) -> Self {
        let status = match e {
            StepError::NonFinite { .. } => S::WEFT_STATUS_SIMULATION_FAILED,
            StepError::Tasks {
                error: TaskError::Panicked,
                ..
            } => S::WEFT_STATUS_PANIC,
            StepError::Tasks {
                error: TaskError::BadDispatch,
                ..
            } => S::WEFT_STATUS_THREADS,
            StepError::BadTimeStep { .. }
            | StepError::Settings(_)
            | StepError::UnsupportedLayers { .. } => S::WEFT_STATUS_INVALID_ARGUMENT,
        };
        Self::new(status, e.to_string())
    }
}
