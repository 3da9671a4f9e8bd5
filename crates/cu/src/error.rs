//! The one error type of this crate: a wire code, a short message for the model and the
//! structured `details` of COMPUTER_USE_HW.md section 5.

use serde_json::Map;
use serde_json::Value;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::error::ClipboardConcealedDetails;
use shim_protocol::error::DisplayBounds;
use shim_protocol::error::ErrorDetails;
use shim_protocol::error::FeatureNotSupportedDetails;
use shim_protocol::error::InputOutOfBoundsDetails;
use shim_protocol::error::PermissionPendingDetails;
use shim_protocol::error::WindowStaleDetails;

/// A refusal or failure of one computer-use operation, ready for the wire.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct CuError {
    /// The wire code.
    pub code: ErrorCode,
    /// Short text the model sees.
    pub message: String,
    /// `details`, or `None` for null.
    pub details: Option<Map<String, Value>>,
}

fn map<D: ErrorDetails>(d: &D) -> Option<Map<String, Value>> {
    Some(d.to_map())
}

impl CuError {
    /// An error without details.
    pub fn plain(code: ErrorCode, message: impl Into<String>) -> Self {
        CuError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// `FEATURE_NOT_SUPPORTED {feature, reason}`.
    pub fn unsupported(feature: impl Into<String>, reason: impl Into<String>) -> Self {
        let feature = feature.into();
        let reason = reason.into();
        CuError {
            code: ErrorCode::FeatureNotSupported,
            message: format!("{feature} is not supported: {reason}"),
            details: map(&FeatureNotSupportedDetails {
                feature,
                reason: Some(reason),
            }),
        }
    }

    /// The feature gate's refusal (2.3).
    pub fn not_advertised(feature: &str) -> Self {
        CuError::unsupported(feature, "not advertised on this host")
    }

    /// `INPUT_OUT_OF_BOUNDS` for `p` with every display echoed.
    pub fn out_of_bounds(p: [i64; 2], displays: Vec<DisplayBounds>) -> Self {
        CuError {
            code: ErrorCode::InputOutOfBounds,
            message: format!(
                "coordinate ({}, {}) is outside the union of connected display bounds",
                p[0], p[1]
            ),
            details: map(&InputOutOfBoundsDetails {
                requested_coordinate: p,
                displays,
            }),
        }
    }

    /// `WINDOW_STALE` for an id never minted (or already replaced).
    pub fn unknown_window(id: &str) -> Self {
        CuError::stale(id, format!("unknown window_id '{id}'"))
    }

    /// `WINDOW_STALE` for an id whose window is gone or changed.
    pub fn gone_window(id: &str) -> Self {
        CuError::stale(
            id,
            format!("window_id {id} no longer maps to a live window"),
        )
    }

    fn stale(id: &str, message: String) -> Self {
        CuError {
            code: ErrorCode::WindowStale,
            message,
            details: map(&WindowStaleDetails {
                window_id: id.to_owned(),
                hint: "re-list windows".to_owned(),
            }),
        }
    }

    /// `PERMISSION_PENDING`.
    pub fn permission(permission: &str, platform: &str, hint: Option<&str>) -> Self {
        CuError {
            code: ErrorCode::PermissionPending,
            message: format!("the OS has not granted the {permission} permission"),
            details: map(&PermissionPendingDetails {
                permission: permission.to_owned(),
                platform: platform.to_owned(),
                hint: hint.map(str::to_owned),
            }),
        }
    }

    /// `CLIPBOARD_CONCEALED`.
    pub fn concealed(reason: &str, marker: Option<String>, age: Option<f64>) -> Self {
        CuError {
            code: ErrorCode::ClipboardConcealed,
            message: format!("clipboard contents not readable: {reason}"),
            details: map(&ClipboardConcealedDetails {
                reason: reason.to_owned(),
                marker,
                writeback_age_seconds: age,
            }),
        }
    }

    /// `DEPENDENCY_MISSING {dep, op}`.
    pub fn dependency(dep: &str, op: &str) -> Self {
        let mut m = Map::new();
        m.insert("dep".into(), Value::from(dep));
        m.insert("op".into(), Value::from(op));
        CuError {
            code: ErrorCode::DependencyMissing,
            message: format!("{dep} is not available"),
            details: Some(m),
        }
    }

    /// `INTERNAL_ERROR` with the OS text.
    pub fn internal(message: impl Into<String>) -> Self {
        CuError::plain(ErrorCode::InternalError, message)
    }

    /// The `ERROR` payload.
    pub fn to_payload(&self) -> ErrorPayload {
        ErrorPayload {
            code: self.code.clone(),
            message: self.message.clone(),
            fatal: false,
            details: self.details.clone(),
        }
    }
}

/// Results of this crate.
pub type CuResult<T> = Result<T, CuError>;
