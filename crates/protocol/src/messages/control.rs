//! The machine control plane (section 9).

use serde::Deserialize;
use serde::Serialize;

use super::Invalid;
use super::Validate;
use crate::ErrorCode;
use crate::values::BrowseToken;
use crate::values::Fingerprint;
use crate::values::RootGrant;
use crate::values::SessionId;

/// `DIRECTORY_LIST_REQUEST` (section 9.2). The initial request is `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The rules of `validate` below: a reference counts when it is a string (null is absent).
#[cfg_attr(feature = "schema", schemars(extend("allOf" = [
    {
        "if": { "required": ["browse_id"], "properties": { "browse_id": { "type": "string" } } },
        "then": { "required": ["directory_ref"], "properties": { "directory_ref": { "type": "string" } } }
    },
    {
        "if": { "required": ["directory_ref"], "properties": { "directory_ref": { "type": "string" } } },
        "then": { "required": ["browse_id"], "properties": { "browse_id": { "type": "string" } } }
    },
    {
        "if": { "required": ["cursor"], "properties": { "cursor": { "type": "string" } } },
        "then": {
            "required": ["browse_id", "directory_ref"],
            "properties": { "browse_id": { "type": "string" }, "directory_ref": { "type": "string" } }
        }
    }
])))]
pub struct DirectoryListRequest {
    /// The browse session; set together with `directory_ref`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browse_id: Option<BrowseToken>,
    /// The directory to list; set together with `browse_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_ref: Option<BrowseToken>,
    /// A page cursor; requires both references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<BrowseToken>,
}

impl Validate for DirectoryListRequest {
    fn validate(&self) -> Result<(), Invalid> {
        let bad = |reason| Err(Invalid::new(ErrorCode::DirectoryReferenceInvalid, reason));
        match (&self.browse_id, &self.directory_ref, &self.cursor) {
            (Some(_), None, _) | (None, Some(_), _) => {
                bad("browse_id and directory_ref must be set together")
            }
            (None, None, Some(_)) => bad("cursor requires browse_id and directory_ref"),
            _ => Ok(()),
        }
    }
}

/// A directory as shown to the platform: an opaque reference, a name and a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct DirectoryReference {
    /// Opaque reference for navigation and attach.
    pub directory_ref: BrowseToken,
    /// Final path component (or the whole path for a drive root).
    pub name: String,
    /// Absolute canonical host path.
    pub path: String,
}

/// `DIRECTORY_LIST_RESPONSE` (section 9.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct DirectoryListResponse {
    /// The browse session.
    pub browse_id: BrowseToken,
    /// The listed directory; null for the root listing.
    pub current: Option<DirectoryReference>,
    /// The reference through which `current` was reached.
    pub parent_ref: Option<BrowseToken>,
    /// At most 200 entries.
    pub entries: Vec<DirectoryReference>,
    /// Set when another page exists.
    pub next_cursor: Option<BrowseToken>,
    /// True only when a hard bound omitted entries.
    pub truncated: bool,
    /// Epoch seconds when the browse session dies.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub expires_at: f64,
}

/// `ATTACH_SESSION` (section 9.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct AttachSession {
    /// The chat session to bind.
    pub session_id: SessionId,
    /// The browse session holding the reference.
    pub browse_id: BrowseToken,
    /// The chosen directory.
    pub directory_ref: BrowseToken,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_connection_id: Option<BrowseToken>,
}

/// `SESSION_ATTACHED` (section 9.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SessionAttached {
    /// The bound session.
    pub session_id: SessionId,
    /// Canonical root; this exact string appears in the child's `HELLO`.
    pub allowed_root: String,
    /// Filesystem fingerprint of the root.
    pub fingerprint: Fingerprint,
    /// Binding revision, ≥ 1.
    pub revision: u64,
    /// The signed root grant.
    pub root_grant: RootGrant,
}

/// `ACTIVATE_SESSION` (section 9.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ActivateSession {
    /// The session to start.
    pub session_id: SessionId,
    /// Expected binding revision, ≥ 1.
    #[serde(deserialize_with = "crate::values::positive")]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "1u64..1_000_000")
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub revision: u64,
}

/// `SESSION_ACTIVATED` (section 9.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SessionActivated {
    /// The session.
    pub session_id: SessionId,
    /// Canonical root.
    pub allowed_root: String,
    /// Fingerprint.
    pub fingerprint: Fingerprint,
    /// Revision.
    pub revision: u64,
}

/// `RESTORE_SESSION` (section 9.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct RestoreSession {
    /// The session to restore.
    pub session_id: SessionId,
    /// The grant the platform stored.
    pub root_grant: RootGrant,
}

/// `SESSION_RESTORED` (section 9.7); `root_grant` is byte-identical to the request's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SessionRestored {
    /// The session.
    pub session_id: SessionId,
    /// Canonical root.
    pub allowed_root: String,
    /// Fingerprint.
    pub fingerprint: Fingerprint,
    /// Revision.
    pub revision: u64,
    /// The request's grant, unchanged.
    pub root_grant: RootGrant,
}

/// `DETACH_SESSION` (section 9.10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct DetachSession {
    /// The session to detach.
    pub session_id: SessionId,
}
