//! Root canonicalisation, the filesystem fingerprint (PROTOCOL.md 9.4) and root grants
//! (9.5), byte-compatible with the incumbent's format.

#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::path::PathBuf;

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::GeneralPurpose;
use base64::engine::GeneralPurposeConfig;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use shim_audit::AuditKey;

/// Why a root cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    /// The selected path is itself a symbolic link.
    #[error("Selected root cannot be a symbolic link")]
    Symlink,
    /// Missing, not a directory, or not readable+writable+traversable.
    #[error("Selected root is unavailable")]
    Unavailable,
}

/// A canonical root and its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalRoot {
    /// The canonical path string.
    pub path: String,
    /// Device id.
    pub device: u64,
    /// Inode number.
    pub inode: u64,
}

/// Whether the daemon user can read, write and traverse `p`.
#[cfg(unix)]
pub fn accessible(p: &Path) -> bool {
    rustix::fs::access(
        p,
        rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

/// Whether the daemon user can list `p` and it is not read-only (Windows has no `access`
/// for directories; the ACL decides at use).
#[cfg(windows)]
pub fn accessible(p: &Path) -> bool {
    std::fs::read_dir(p).is_ok() && std::fs::metadata(p).is_ok_and(|m| !m.permissions().readonly())
}

/// 9.4 step 1-2: refuse a symlink, resolve, require an accessible directory, `lstat` it.
pub fn canonicalize_root(p: &Path) -> Result<CanonicalRoot, RootError> {
    let meta = std::fs::symlink_metadata(p).map_err(|_| RootError::Unavailable)?;
    if meta.file_type().is_symlink() {
        return Err(RootError::Symlink);
    }
    let canon: PathBuf = std::fs::canonicalize(p).map_err(|_| RootError::Unavailable)?;
    let m = std::fs::symlink_metadata(&canon).map_err(|_| RootError::Unavailable)?;
    if !m.is_dir() || !accessible(&canon) {
        return Err(RootError::Unavailable);
    }
    let path = canon.to_str().ok_or(RootError::Unavailable)?.to_owned();
    #[cfg(unix)]
    let (device, inode) = (m.dev(), m.ino());
    #[cfg(windows)]
    let path = plain_windows_path(&path);
    #[cfg(windows)]
    let (device, inode) =
        crate::runtime::file_id::identity(&canon).map_err(|_| RootError::Unavailable)?;
    Ok(CanonicalRoot {
        path,
        device,
        inode,
    })
}

/// Windows: `std::fs::canonicalize` gives the verbatim form `\\?\C:\x`; the platform and
/// the incumbent use the plain one (PROTOCOL.md 9.5.4): `C:\x`, and `\\srv\share` for
/// `\\?\UNC\srv\share`. Any other path is returned as it is. A pure string rule, tested on
/// every OS.
pub fn plain_windows_path(path: &str) -> String {
    match path.strip_prefix(r"\\?\UNC\") {
        Some(unc) => format!(r"\\{unc}"),
        None => path.strip_prefix(r"\\?\").unwrap_or(path).to_owned(),
    }
}

/// `canonicalize`, then on Windows the plain form of [`plain_windows_path`].
pub fn canonical_plain(p: &Path) -> std::io::Result<PathBuf> {
    let c = std::fs::canonicalize(p)?;
    #[cfg(windows)]
    if let Some(s) = c.to_str() {
        return Ok(PathBuf::from(plain_windows_path(s)));
    }
    Ok(c)
}

/// JSON string escaping of 9.4 step 3 (Python `json.dumps` with `ensure_ascii`).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) >= 0x80 => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `normcase` of 9.4 step 3: identity on POSIX (`windows` false); on Windows every `/`
/// becomes `\` and the path is lower-cased (Python's `ntpath.normcase`, which the incumbent
/// hashed), so grants verify across both daemons.
pub fn normcase(path: &str, windows: bool) -> std::borrow::Cow<'_, str> {
    if windows {
        std::borrow::Cow::Owned(path.replace('/', "\\").to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// The JSON that 9.4 hashes, for a root on Windows (`windows` true) or POSIX: keys sorted,
/// no whitespace, the path in `normcase` form.
pub fn fingerprint_json(root: &CanonicalRoot, windows: bool) -> String {
    format!(
        "{{\"device\":{},\"inode\":{},\"path\":{}}}",
        root.device,
        root.inode,
        json_string(&normcase(&root.path, windows))
    )
}

/// The fingerprint of 9.4 on this OS: lowercase hex SHA-256 of [`fingerprint_json`].
pub fn fingerprint(root: &CanonicalRoot) -> String {
    let json = fingerprint_json(root, cfg!(windows));
    hex::encode(ring::digest::digest(&ring::digest::SHA256, json.as_bytes()))
}

/// The claims of a grant (9.5.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// Canonical root path.
    pub allowed_root: String,
    /// Fingerprint.
    pub fingerprint: String,
    /// Epoch seconds (informational).
    pub issued_at: f64,
    /// This machine's id.
    pub machine_id: String,
    /// Revision ≥ 1.
    pub revision: u64,
    /// The session.
    pub session_id: String,
}

fn sign(key: &AuditKey, encoded: &str) -> String {
    let gk = key.grant_key();
    let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, gk.as_ref());
    URL_SAFE_NO_PAD.encode(ring::hmac::sign(&k, encoded.as_bytes()).as_ref())
}

fn json_number(f: f64) -> String {
    serde_json::to_string(&f).unwrap_or_else(|_| "0.0".to_owned())
}

/// Issues `v1.<claims>.<signature>` (9.5.2).
pub fn issue(key: &AuditKey, c: &Claims) -> String {
    let claims = format!(
        "{{\"allowed_root\":{},\"fingerprint\":{},\"issued_at\":{},\"machine_id\":{},\"revision\":{},\"session_id\":{}}}",
        json_string(&c.allowed_root),
        json_string(&c.fingerprint),
        json_number(c.issued_at),
        json_string(&c.machine_id),
        c.revision,
        json_string(&c.session_id)
    );
    let encoded = URL_SAFE_NO_PAD.encode(claims.as_bytes());
    let sig = sign(key, &encoded);
    format!("v1.{encoded}.{sig}")
}

/// Why a grant is refused (all are `ROOT_GRANT_INVALID`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// Fewer than three parts.
    #[error("Root grant is malformed")]
    Malformed,
    /// Not `v1`.
    #[error("Unsupported root grant version")]
    Version,
    /// Signature mismatch.
    #[error("Root grant signature is invalid")]
    Signature,
    /// Another session.
    #[error("Root grant belongs to another session")]
    OtherSession,
    /// Another machine.
    #[error("Root grant belongs to another machine")]
    OtherMachine,
    /// Bad revision.
    #[error("Root grant revision is invalid")]
    Revision,
    /// Root problem.
    #[error("{0}")]
    Root(#[from] RootError),
    /// Fingerprint changed.
    #[error("The selected directory changed after the grant was issued")]
    Changed,
}

/// A verified binding (9.5.3 step 7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The session.
    pub session_id: String,
    /// Freshly canonicalised root.
    pub allowed_root: String,
    /// Claimed fingerprint.
    pub fingerprint: String,
    /// Claimed revision.
    pub revision: u64,
    /// The grant, unchanged.
    pub root_grant: String,
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Verifies a grant for `session_id` on `machine_id` (9.5.3).
pub fn verify(
    key: &AuditKey,
    grant: &str,
    session_id: &str,
    machine_id: &str,
) -> Result<Verified, GrantError> {
    let mut parts = grant.splitn(3, '.');
    let (Some(version), Some(encoded), Some(signature)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(GrantError::Malformed);
    };
    if version != "v1" {
        return Err(GrantError::Version);
    }
    if !ct_eq(sign(key, encoded).as_bytes(), signature.as_bytes()) {
        return Err(GrantError::Signature);
    }
    let lenient = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let bytes = lenient.decode(encoded).map_err(|_| GrantError::Malformed)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| GrantError::Malformed)?;
    let obj = v.as_object().ok_or(GrantError::Malformed)?;
    let get = |k: &str| obj.get(k).ok_or(GrantError::Malformed);
    let sid = get("session_id")?;
    if sid.as_str() != Some(session_id) {
        return Err(GrantError::OtherSession);
    }
    if get("machine_id")?.as_str() != Some(machine_id) {
        return Err(GrantError::OtherMachine);
    }
    let revision = get("revision")?
        .as_u64()
        .filter(|r| *r >= 1)
        .ok_or(GrantError::Revision)?;
    let root = get("allowed_root")?.as_str().ok_or(GrantError::Malformed)?;
    let fp = get("fingerprint")?.as_str().ok_or(GrantError::Malformed)?;
    let canon = canonicalize_root(Path::new(root))?;
    if fingerprint(&canon) != fp {
        return Err(GrantError::Changed);
    }
    Ok(Verified {
        session_id: session_id.to_owned(),
        allowed_root: canon.path,
        fingerprint: fp.to_owned(),
        revision,
        root_grant: grant.to_owned(),
    })
}

#[cfg(test)]
#[path = "grant_tests.rs"]
mod tests;
