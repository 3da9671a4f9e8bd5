//! Protocol versions and their negotiation (section 4).

use std::fmt;

/// A `"major.minor"` protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolVersion {
    /// Major; both sides must agree on it.
    pub major: u32,
    /// Minor; the effective minor is the smaller of the two.
    pub minor: u32,
}

/// The daemon's maximum (and only) wire version.
pub const SHIM_VERSION: ProtocolVersion = ProtocolVersion { major: 1, minor: 1 };
/// [`SHIM_VERSION`] as its wire string.
pub const SHIM_VERSION_STR: &str = "1.1";

/// A version string that is not two decimal integers joined by one dot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed protocol version {0:?}: expected \"major.minor\"")]
pub struct MalformedVersion(pub String);

/// The outcome of a failed negotiation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiationError {
    /// The peer's version string is malformed (close 4426 `Invalid platform protocol version`).
    #[error(transparent)]
    Malformed(#[from] MalformedVersion),
    /// Majors differ (close 4426 with the JSON reason).
    #[error("protocol major version mismatch: ours {ours}, theirs {theirs}")]
    MajorMismatch {
        /// Our version.
        ours: ProtocolVersion,
        /// The peer's version.
        theirs: ProtocolVersion,
    },
}

impl ProtocolVersion {
    /// Parses `^\d+\.\d+$`. `"1"`, `"v1.0"` and `"1.0.1"` are malformed.
    pub fn parse(s: &str) -> Result<ProtocolVersion, MalformedVersion> {
        let bad = || MalformedVersion(s.to_owned());
        let (major, minor) = s.split_once('.').ok_or_else(bad)?;
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) {
            return Err(bad());
        }
        Ok(ProtocolVersion {
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
        })
    }

    /// `major.min(ours, theirs)` when majors agree.
    pub fn negotiate(self, theirs: ProtocolVersion) -> Result<ProtocolVersion, NegotiationError> {
        if self.major != theirs.major {
            return Err(NegotiationError::MajorMismatch { ours: self, theirs });
        }
        Ok(ProtocolVersion {
            major: self.major,
            minor: self.minor.min(theirs.minor),
        })
    }
}

/// Negotiates our version against the peer's optional version string; a missing string
/// counts as `default` (`"1.1"` on `HELLO_ACK`, `"1.0"` on `HELLO`).
pub fn negotiate(
    ours: ProtocolVersion,
    theirs: Option<&str>,
    default: ProtocolVersion,
) -> Result<ProtocolVersion, NegotiationError> {
    let theirs = match theirs {
        Some(s) => ProtocolVersion::parse(s)?,
        None => default,
    };
    ours.negotiate(theirs)
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
#[path = "version_tests.rs"]
mod tests;
