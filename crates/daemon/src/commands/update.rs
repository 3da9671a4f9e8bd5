//! `autogpt-shim update`: replaces this installation's binaries with the newest signed release
//! (docs/update.md).
//!
//! The release manifest is the one `cargo xtask dist` already publishes: `SHA256SUMS` and its
//! minisign signature `SHA256SUMS.minisig`. The signature is checked against the binary's
//! release key ([`shim_release::release_public_key`]) before the sums are read; the archive
//! for this platform is the one line named `autogpt-shim-VERSION-TARGET.(tar.gz|zip)`, so the
//! version offered is signed too. The archive is downloaded (size-limited), its SHA-256
//! compared with the signed sum, and only then unpacked, into a folder beside the installed
//! binaries; each binary is then renamed over the old one (on Windows the running exe is
//! renamed aside first, as Windows allows for a running image).

use std::io::Read;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use shim_release::PublicKey;

/// The default release location (the same as `install.sh`'s).
pub const DEFAULT_BASE_URL: &str =
    "https://github.com/Significant-Gravitas/autogpt-local-executor/releases/latest/download";

/// The target triple this binary was built for (its archive's name carries it).
pub const TARGET: &str = env!("SHIM_TARGET_TRIPLE");

/// The largest `SHA256SUMS` accepted.
const MAX_SUMS: u64 = 64 * 1024;
/// The largest archive accepted.
const MAX_ARCHIVE: u64 = 256 * 1024 * 1024;
/// The largest unpacked binary accepted (a larger one is refused, never cut short).
const MAX_BINARY: u64 = 1024 * 1024 * 1024;
/// The timeout of each request (connect and whole transfer).
const TIMEOUT: Duration = Duration::from_secs(300);

#[cfg(windows)]
const EXT: &str = ".zip";
#[cfg(not(windows))]
const EXT: &str = ".tar.gz";
#[cfg(windows)]
const EXE: &str = ".exe";
#[cfg(not(windows))]
const EXE: &str = "";

/// The binaries an update replaces, in this order.
const BINARIES: [&str; 2] = ["shim-audit", "autogpt-shim"];

/// Why an update was refused or failed; nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateError {
    /// This binary has no release key built in (fail closed).
    #[error(
        "this build trusts no release key, so it cannot check an update; install a release with the installer instead ({0})"
    )]
    NoKey(shim_release::SigError),
    /// A download failed.
    #[error("cannot download {url}: {why}")]
    Download {
        /// What was fetched.
        url: String,
        /// Why it failed.
        why: String,
    },
    /// The signature of `SHA256SUMS` is not valid for the release key.
    #[error("the signature of SHA256SUMS is not valid: {0}")]
    Signature(shim_release::SigError),
    /// The signed sums name no archive for this platform.
    #[error("this release has no archive for {0}")]
    NoArchive(String),
    /// `SHA256SUMS` is not in the expected form.
    #[error("malformed SHA256SUMS: {0}")]
    Malformed(String),
    /// The release is older than this binary and `--allow-downgrade` was not given.
    #[error(
        "the release offers {offered}, older than this {current}; refused (use --allow-downgrade to install it)"
    )]
    Downgrade {
        /// The version offered.
        offered: String,
        /// This binary's version.
        current: String,
    },
    /// The archive's SHA-256 is not the signed one.
    #[error(
        "the archive {archive} does not match its signed SHA-256 (damaged or changed download)"
    )]
    SumMismatch {
        /// The archive's name.
        archive: String,
    },
    /// The archive cannot be unpacked or lacks a binary.
    #[error("cannot unpack {archive}: {why}")]
    Archive {
        /// The archive's name.
        archive: String,
        /// Why.
        why: String,
    },
    /// The update record cannot be written to the audit log.
    #[error(
        "cannot write the update's audit record: {0}\nhint: if the daemon is running, stop it, update, then start it again"
    )]
    Audit(String),
    /// A local file operation failed.
    #[error("{0}")]
    Io(String),
}

/// A `MAJOR.MINOR.PATCH` version; pre-releases are not offered by `update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u64, pub u64, pub u64);

impl Version {
    /// Parses `MAJOR.MINOR.PATCH` (digits only).
    pub fn parse(text: &str) -> Option<Version> {
        let mut it = text.split('.');
        let mut part = || -> Option<u64> {
            let p = it.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                return None;
            }
            p.parse().ok()
        };
        let v = Version(part()?, part()?, part()?);
        it.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The release this platform is offered, read from a verified `SHA256SUMS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The version in the archive's name.
    pub version: Version,
    /// The archive's file name.
    pub archive: String,
    /// Its SHA-256 (lower-case hex).
    pub sha256: String,
}

/// Finds this target's archive in verified `SHA256SUMS` text.
pub fn offer(sums: &str, target: &str) -> Result<Offer, UpdateError> {
    let suffix = format!("-{target}{EXT}");
    let mut found = None;
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let (sum, name) = line
            .split_once("  ")
            .ok_or_else(|| UpdateError::Malformed(format!("line {line:?}")))?;
        if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(UpdateError::Malformed(format!("sum in line {line:?}")));
        }
        let Some(version) = name
            .strip_prefix("autogpt-shim-")
            .and_then(|rest| rest.strip_suffix(&suffix))
        else {
            continue;
        };
        let version = Version::parse(version)
            .ok_or_else(|| UpdateError::Malformed(format!("version in {name:?}")))?;
        if found.is_some() {
            return Err(UpdateError::Malformed(format!("two archives for {target}")));
        }
        found = Some(Offer {
            version,
            archive: name.to_owned(),
            sha256: sum.to_ascii_lowercase(),
        });
    }
    found.ok_or_else(|| UpdateError::NoArchive(target.to_owned()))
}

/// What `update` was asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The release folder's URL (`SHA256SUMS` is fetched from `BASE/SHA256SUMS`).
    pub base_url: String,
    /// Only report.
    pub check: bool,
    /// Install an older release if offered.
    pub allow_downgrade: bool,
    /// The folder whose binaries are replaced (the running executable's).
    pub install_dir: PathBuf,
}

/// The key updates are checked against: the release key, or in debug builds only the key in
/// `AUTOGPT_SHIM_UPDATE_TEST_KEY` (the integration tests'). Release builds ignore that
/// variable entirely: it is compiled out.
pub fn trusted_key() -> Result<PublicKey, UpdateError> {
    #[cfg(debug_assertions)]
    if let Some(text) = std::env::var_os("AUTOGPT_SHIM_UPDATE_TEST_KEY") {
        return PublicKey::parse(&text.to_string_lossy()).map_err(UpdateError::NoKey);
    }
    shim_release::release_public_key().map_err(UpdateError::NoKey)
}

/// This binary's version, or in debug builds only `AUTOGPT_SHIM_UPDATE_TEST_VERSION` (so the
/// tests can offer an upgrade with a copy of the same binary).
pub fn current_version() -> Option<Version> {
    #[cfg(debug_assertions)]
    if let Some(v) = std::env::var_os("AUTOGPT_SHIM_UPDATE_TEST_VERSION") {
        return Version::parse(&v.to_string_lossy());
    }
    Version::parse(env!("CARGO_PKG_VERSION"))
}

fn get(
    client: &reqwest::Client,
    url: &str,
    limit: u64,
) -> impl Future<Output = Result<Vec<u8>, UpdateError>> {
    let client = client.clone();
    let url = url.to_owned();
    async move {
        let err = |why: String| UpdateError::Download {
            url: url.clone(),
            why,
        };
        let mut resp = client
            .get(&url)
            .send()
            .await
            .map_err(|e| err(error_chain(&e)))?;
        if !resp.status().is_success() {
            return Err(err(format!("HTTP {}", resp.status())));
        }
        if resp.content_length().is_some_and(|n| n > limit) {
            return Err(err(format!("larger than {limit} bytes")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| err(error_chain(&e)))? {
            if body.len() as u64 + chunk.len() as u64 > limit {
                return Err(err(format!("larger than {limit} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// The outcome of a successful `update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `--check`: what is installed and what is offered.
    Checked {
        /// This binary's version.
        current: Version,
        /// The offer.
        offered: Offer,
    },
    /// Already at the offered version.
    UpToDate(Version),
    /// Replaced.
    Updated {
        /// The old version.
        from: Version,
        /// The new one.
        to: Version,
    },
}

/// The update's audit record (op `SHIM_UPDATED`, docs/update.md): `ok` is whether every binary
/// was replaced.
pub fn audit_event(offer: &Offer, from: Version, ok: bool) -> shim_audit::AuditEvent {
    let mut ev = shim_audit::AuditEvent::new("SHIM_UPDATED");
    ev.details.insert("from_version", from.to_string());
    ev.details.insert("to_version", offer.version.to_string());
    ev.details.insert("archive", offer.archive.clone());
    ev.details.insert("sha256", offer.sha256.clone());
    ev.result.ok = ok;
    ev
}

/// Runs `update`. `audit` is the opened audit log (the caller opens it before, so that an
/// update that cannot be recorded is refused before anything is downloaded; `None` only with
/// `--check`).
pub async fn update(
    req: &Request,
    net: &shim_auth::net::Net,
    audit: Option<&shim_audit::AuditLog>,
) -> Result<Outcome, UpdateError> {
    let key = trusted_key()?;
    let current = current_version()
        .ok_or_else(|| UpdateError::Io("this binary's version is not MAJOR.MINOR.PATCH".into()))?;
    let client = net
        .http_client()
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| UpdateError::Io(format!("HTTP client: {}", error_chain(&e))))?;
    let base = req.base_url.trim_end_matches('/');
    let sums = get(&client, &format!("{base}/SHA256SUMS"), MAX_SUMS).await?;
    let sig = get(
        &client,
        &format!("{base}/SHA256SUMS.minisig"),
        shim_release::MAX_TEXT_LEN as u64,
    )
    .await?;
    let sig = String::from_utf8(sig).map_err(|_| {
        UpdateError::Signature(shim_release::SigError::Malformed {
            what: "signature",
            why: "not UTF-8",
        })
    })?;
    shim_release::verify(&key, &sums, &sig).map_err(UpdateError::Signature)?;
    let sums = String::from_utf8(sums).map_err(|_| UpdateError::Malformed("not UTF-8".into()))?;
    let offered = offer(&sums, TARGET)?;
    if req.check {
        return Ok(Outcome::Checked { current, offered });
    }
    if offered.version == current {
        return Ok(Outcome::UpToDate(current));
    }
    if offered.version < current && !req.allow_downgrade {
        return Err(UpdateError::Downgrade {
            offered: offered.version.to_string(),
            current: current.to_string(),
        });
    }
    let archive = get(&client, &format!("{base}/{}", offered.archive), MAX_ARCHIVE).await?;
    let sum = hex::encode(ring::digest::digest(&ring::digest::SHA256, &archive));
    if sum != offered.sha256 {
        return Err(UpdateError::SumMismatch {
            archive: offered.archive.clone(),
        });
    }
    let staging = tempfile::Builder::new()
        .prefix(".autogpt-shim-update-")
        .tempdir_in(&req.install_dir)
        .map_err(|e| {
            UpdateError::Io(format!(
                "cannot write in {}: {e}",
                req.install_dir.display()
            ))
        })?;
    let stem = offered.archive.trim_end_matches(EXT).to_owned();
    let unpacked = unpack(&archive, &stem, staging.path()).map_err(|why| UpdateError::Archive {
        archive: offered.archive.clone(),
        why,
    })?;
    let Some(audit) = audit else {
        return Err(UpdateError::Audit("no audit log".into()));
    };
    let result = replace(&unpacked, &req.install_dir);
    let written = audit
        .append_blocking(audit_event(&offered, current, result.is_ok()))
        .map_err(|e| UpdateError::Audit(e.to_string()));
    result?;
    written?;
    Ok(Outcome::Updated {
        from: current,
        to: offered.version,
    })
}

/// Unpacks the binaries (only) into `dir`; returns (name, path) per binary.
fn unpack(archive: &[u8], stem: &str, dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let wanted: Vec<String> = BINARIES
        .iter()
        .map(|b| format!("{stem}/{b}{EXE}"))
        .collect();
    let mut out = Vec::new();
    let mut take = |name: &str, reader: &mut dyn Read| -> Result<(), String> {
        let Some(i) = wanted.iter().position(|w| w == name) else {
            return Ok(());
        };
        let file_name = format!("{}{EXE}", BINARIES[i]);
        let path = dir.join(&file_name);
        let mut f = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let copied = std::io::copy(&mut reader.take(MAX_BINARY + 1), &mut f)
            .map_err(|e| format!("{name}: {e}"))?;
        if copied > MAX_BINARY {
            return Err(format!("{name} is larger than {MAX_BINARY} bytes"));
        }
        f.sync_all()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        out.push((file_name, path));
        Ok(())
    };
    #[cfg(not(windows))]
    {
        let gz = flate2::read::GzDecoder::new(archive);
        let mut tar = tar::Archive::new(gz);
        for entry in tar.entries().map_err(|e| e.to_string())? {
            let mut entry = entry.map_err(|e| e.to_string())?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = entry
                .path()
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .into_owned();
            take(&name, &mut entry)?;
        }
    }
    #[cfg(windows)]
    {
        let mut zip =
            zip::ZipArchive::new(std::io::Cursor::new(archive)).map_err(|e| e.to_string())?;
        for i in 0..zip.len() {
            let mut entry = zip.by_index(i).map_err(|e| e.to_string())?;
            if !entry.is_file() {
                continue;
            }
            let name = entry.name().map_err(|e| e.to_string())?.into_owned();
            take(&name, &mut entry)?;
        }
    }
    for b in BINARIES {
        let file_name = format!("{b}{EXE}");
        if !out.iter().any(|(n, _)| *n == file_name) {
            return Err(format!("no {stem}/{file_name} in it"));
        }
    }
    Ok(out)
}

/// Renames each unpacked binary over the installed one.
fn replace(unpacked: &[(String, PathBuf)], dir: &Path) -> Result<(), UpdateError> {
    for (name, new) in unpacked {
        let target = dir.join(name);
        #[cfg(windows)]
        {
            // A running exe cannot be replaced but can be renamed: move it aside first.
            let aside = dir.join(format!("{name}.old"));
            let _ = std::fs::remove_file(&aside);
            if target.exists() {
                std::fs::rename(&target, &aside).map_err(|e| {
                    UpdateError::Io(format!("cannot move {} aside: {e}", target.display()))
                })?;
            }
        }
        std::fs::rename(new, &target)
            .map_err(|e| UpdateError::Io(format!("cannot replace {}: {e}", target.display())))?;
    }
    Ok(())
}

/// Prints an outcome.
pub fn report(
    outcome: &Outcome,
    service: Option<&str>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match outcome {
        Outcome::Checked { current, offered } => {
            writeln!(out, "installed: {current}")?;
            writeln!(out, "available: {} ({})", offered.version, offered.archive)?;
            if offered.version > *current {
                writeln!(out, "run `autogpt-shim update` to install it")?;
            } else {
                writeln!(out, "up to date")?;
            }
        }
        Outcome::UpToDate(v) => writeln!(out, "already up to date ({v})")?,
        Outcome::Updated { from, to } => {
            writeln!(out, "updated autogpt-shim {from} -> {to}")?;
            if let Some(restart) = service {
                writeln!(out, "restart the service to run the new version: {restart}")?;
            }
        }
    }
    Ok(())
}
