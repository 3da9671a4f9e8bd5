//! `cargo xtask dist`: release archives with SHA-256 sums in `target/dist/`:
//! `autogpt-shim-<version>-<target>.tar.gz` for Linux (x86_64, aarch64) and macOS (on a
//! Mac only) and `.zip` for Windows, each holding `autogpt-shim`, `shim-audit`, the README and the install page, with
//! `<archive>.sha256` beside it and one `SHA256SUMS` for all (`sha256sum -c SHA256SUMS`).
//!
//! Every archive is unpacked again and refused if a file in it contains a build path; where
//! it can run here, its `autogpt-shim --version` is run from the unpacked copy (aarch64
//! under qemu-user, Windows under Wine), so a broken archive fails the command.
//! A target that does not compile is reported as skipped with the compiler's first error,
//! and the others are still built; the command fails only if no archive could be built.
//!
//! `SHA256SUMS` is signed with an Ed25519 key in the minisign format (`SHA256SUMS.minisig`,
//! checked by `minisign -Vm SHA256SUMS -P KEY` and by `shim_release::verify`). The secret key
//! comes from `--key-file`, `AUTOGPT_SHIM_SIGNING_KEY_FILE` or `AUTOGPT_SHIM_SIGNING_KEY` (the
//! file's text), never from the repository; `--throwaway-key` makes a new one for tests and CI
//! (kept in `target/dist-key/`). The binaries are built with `AUTOGPT_SHIM_RELEASE_KEY` set to
//! its public half (see crates/release/README.md); `--release-key` refuses any key but the
//! release key built into shim-release.
//!
//! Reproducible: the archives hold their files in a fixed order with fixed times and modes,
//! the source, registry and target paths in the binaries are remapped
//! (`--remap-path-prefix`), and `SOURCE_DATE_EPOCH` is the commit's time, which is also the
//! signature's timestamp; so two runs of one commit in different folders give the same bytes
//! (`cargo xtask repro` checks it for the host target).

use std::io::Read;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use sha2::Digest;
use shim_release::PublicKey;
use shim_release::SecretKey;

use crate::targets;
use crate::targets::Toolchain;

/// The archive formats.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Format {
    /// gzip-compressed tar, file modes kept.
    TarGz,
    /// zip (deflate).
    Zip,
}

/// One release target: (triple, toolchain, archive format, binary suffix).
pub(crate) const DIST_TARGETS: &[(&str, Toolchain, Format, &str)] = &[
    (
        "x86_64-unknown-linux-gnu",
        Toolchain::Cargo(""),
        Format::TarGz,
        "",
    ),
    (
        "aarch64-unknown-linux-gnu",
        Toolchain::Zig,
        Format::TarGz,
        "",
    ),
    (
        "x86_64-pc-windows-gnu",
        Toolchain::Cargo("gcc-mingw-w64-x86-64"),
        Format::Zip,
        ".exe",
    ),
    // macOS links only on a Mac (no SDK elsewhere): built natively by
    // .github/workflows/release.yml, skipped with the reason on other hosts.
    (
        "aarch64-apple-darwin",
        Toolchain::Cargo(""),
        Format::TarGz,
        "",
    ),
    (
        "x86_64-apple-darwin",
        Toolchain::Cargo(""),
        Format::TarGz,
        "",
    ),
];

/// The binaries every archive holds: (package, binary).
const BINARIES: &[(&str, &str)] = &[
    ("autogpt-shim", "autogpt-shim"),
    ("shim-audit-cli", "shim-audit"),
];

/// Documents every archive holds: (path in the workspace, name in the archive).
const DOCS: &[(&str, &str)] = &[("README.md", "README.md")];

/// The install page for a target's OS.
fn install_page(triple: &str) -> &'static str {
    if triple.contains("windows") {
        "docs/install-windows.md"
    } else if triple.contains("apple") {
        "docs/install-macos.md"
    } else {
        "docs/install-linux.md"
    }
}

/// What happened to one target.
enum Built {
    Archive { path: PathBuf, verified: String },
    Skipped(String),
}

/// Where `dist` takes the signing key from.
#[derive(Default, Clone, Debug)]
pub(crate) struct Signing {
    /// `--key-file`: an unencrypted minisign secret key file.
    pub(crate) key_file: Option<PathBuf>,
    /// `--throwaway-key`: make a new key (tests, CI) when no other is given.
    pub(crate) throwaway: bool,
    /// `--release-key`: refuse any key but [`shim_release::RELEASE_PUBLIC_KEY`].
    pub(crate) release_key: bool,
    /// `--no-sign`: write the sums unsigned and build binaries that trust only
    /// [`shim_release::RELEASE_PUBLIC_KEY`] (release.yml's build jobs; `cargo xtask sign`
    /// signs the collected sums in one job that holds the key).
    pub(crate) no_sign: bool,
}

/// The folder of the throw-away key (`throwaway.key`, `throwaway.pub`), beside target/dist
/// so that it is never uploaded with the archives.
pub(crate) fn throwaway_key_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("dist-key")
}

/// The secret key to sign with, and a sentence saying where it came from.
fn signing_key(target_dir: &Path, signing: &Signing) -> Result<(SecretKey, String)> {
    let from_file = |path: &Path| -> Result<(SecretKey, String)> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the signing key {}", path.display()))?;
        let key = SecretKey::parse(&text)
            .with_context(|| format!("the signing key {}", path.display()))?;
        Ok((key, format!("the key in {}", path.display())))
    };
    let (key, whence) = if let Some(path) = &signing.key_file {
        from_file(path)?
    } else if let Some(path) = std::env::var_os("AUTOGPT_SHIM_SIGNING_KEY_FILE") {
        from_file(Path::new(&path))?
    } else if let Ok(text) = std::env::var("AUTOGPT_SHIM_SIGNING_KEY") {
        let key = SecretKey::parse(&text).context("AUTOGPT_SHIM_SIGNING_KEY")?;
        (key, "the key in AUTOGPT_SHIM_SIGNING_KEY".to_owned())
    } else if signing.throwaway {
        let key = SecretKey::generate()?;
        let dir = throwaway_key_dir(target_dir);
        std::fs::create_dir_all(&dir)?;
        write_private(&dir.join("throwaway.key"), &key.to_file())?;
        std::fs::write(dir.join("throwaway.pub"), key.public().to_file())?;
        let whence = format!(
            "a THROW-AWAY key made now ({}), not the release key",
            dir.join("throwaway.key").display()
        );
        (key, whence)
    } else {
        bail!(
            "no signing key: pass --key-file FILE or set AUTOGPT_SHIM_SIGNING_KEY_FILE or \
             AUTOGPT_SHIM_SIGNING_KEY (an unencrypted minisign secret key, `minisign -G -W`)\n\
             hint: for a test build, `cargo xtask dist --throwaway-key`"
        );
    };
    if signing.release_key {
        let release = shim_release::RELEASE_PUBLIC_KEY
            .context("--release-key: shim-release has no RELEASE_PUBLIC_KEY yet")?;
        let release = PublicKey::parse(release).context("shim_release::RELEASE_PUBLIC_KEY")?;
        if release != key.public() {
            bail!(
                "--release-key: {whence} is key {}, not the release key {}",
                key.public().key_id_hex(),
                release.key_id_hex()
            );
        }
    }
    Ok((key, whence))
}

/// Writes a secret: readable by its owner only where the OS has modes.
fn write_private(path: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// `SOURCE_DATE_EPOCH`: the environment's if set, else the time of the commit checked out.
pub(crate) fn source_date_epoch(root: &Path) -> Result<u64> {
    if let Ok(v) = std::env::var("SOURCE_DATE_EPOCH") {
        return v
            .trim()
            .parse()
            .with_context(|| format!("SOURCE_DATE_EPOCH={v:?} is not a number"));
    }
    let out = Command::new("git")
        .args(["log", "-1", "--format=%ct"])
        .current_dir(root)
        .output()
        .context("cannot run git log (set SOURCE_DATE_EPOCH outside a git checkout)")?;
    if !out.status.success() {
        bail!("git log failed (set SOURCE_DATE_EPOCH outside a git checkout)");
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .context("git log printed no commit time")
}

/// Signs `out/SHA256SUMS` into `out/SHA256SUMS.minisig` and checks the result with our own
/// verifier and, where it is installed, with `minisign -V`. Returns what was checked.
pub(crate) fn sign_sums(out: &Path, key: &SecretKey, epoch: u64) -> Result<String> {
    let sums = std::fs::read(out.join("SHA256SUMS"))?;
    // minisign's own trusted comment, with the commit's time for reproducibility.
    let comment = format!("timestamp:{epoch}\tfile:SHA256SUMS\thashed");
    let sig = key.sign(&sums, &comment)?;
    std::fs::write(out.join("SHA256SUMS.minisig"), &sig)?;
    shim_release::verify(&key.public(), &sums, &sig)
        .context("our own verifier refused the signature dist just made")?;
    let checked = match minisign_verify(out, &key.public())? {
        Some(()) => "checked by shim_release::verify and `minisign -V`",
        None => "checked by shim_release::verify (minisign not installed)",
    };
    Ok(checked.to_owned())
}

/// `minisign -Vm SHA256SUMS -P KEY` in `dir`: `Ok(None)` if minisign is not installed, an
/// error if it refuses the signature.
pub(crate) fn minisign_verify(dir: &Path, key: &PublicKey) -> Result<Option<()>> {
    let out = match Command::new("minisign")
        .args(["-Vm", "SHA256SUMS", "-P"])
        .arg(key.to_base64())
        .current_dir(dir)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context("cannot run minisign"),
    };
    if !out.status.success() {
        bail!(
            "`minisign -Vm SHA256SUMS` refused the signature: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(Some(()))
}

/// The CI check of the last `dist --throwaway-key` run: the stock `minisign -V` accepts
/// `target/dist/SHA256SUMS.minisig` with the throw-away public key, and refuses it for a copy
/// of `SHA256SUMS` with one byte changed (so the check can fail).
pub(crate) fn check_signature_with_minisign(root: &Path) -> Result<()> {
    let target_dir = default_target_dir(root);
    let out = target_dir.join("dist");
    let key_path = throwaway_key_dir(&target_dir).join("throwaway.pub");
    let key = PublicKey::parse(&std::fs::read_to_string(&key_path)?)
        .with_context(|| format!("{}", key_path.display()))?;
    if minisign_verify(&out, &key)?.is_none() {
        bail!("minisign is not installed (Debian package `minisign`; `cargo xtask setup`)");
    }
    let tmp = tempdir_in(&target_dir, "minisign-check")?;
    let mut sums = std::fs::read(out.join("SHA256SUMS"))?;
    let last = sums.len().checked_sub(2).context("empty SHA256SUMS")?;
    sums[last] ^= 1;
    std::fs::write(tmp.join("SHA256SUMS"), &sums)?;
    std::fs::copy(
        out.join("SHA256SUMS.minisig"),
        tmp.join("SHA256SUMS.minisig"),
    )?;
    let refused = minisign_verify(&tmp, &key).is_err();
    let _ = std::fs::remove_dir_all(&tmp);
    if !refused {
        bail!("minisign -V accepted a SHA256SUMS with a changed byte");
    }
    println!(
        "xtask: minisign -V accepts target/dist/SHA256SUMS.minisig (key {}) and refuses a changed SHA256SUMS",
        key.key_id_hex()
    );
    Ok(())
}

/// `cargo xtask repro`: builds the host's archive again from a clone of HEAD in another
/// folder (with its own target folder, the same throw-away key and the same commit time) and
/// checks that the archive, its sum and the signed `SHA256SUMS` are byte-identical to the
/// last `dist --throwaway-key` run's. Costs one more cold build of the host target.
pub(crate) fn repro(root: &Path, profile: &str) -> Result<()> {
    let host = host_triple();
    let (_, _, format, _) = DIST_TARGETS
        .iter()
        .find(|d| d.0 == host)
        .with_context(|| format!("no dist target for this host ({host})"))?;
    let target_dir = default_target_dir(root);
    let version = env!("CARGO_PKG_VERSION");
    let ext = if *format == Format::Zip {
        "zip"
    } else {
        "tar.gz"
    };
    let archive = format!("autogpt-shim-{version}-{host}.{ext}");
    let first = target_dir.join("dist");
    let key_file = throwaway_key_dir(&target_dir).join("throwaway.key");
    if !first.join(&archive).is_file() || !key_file.is_file() {
        bail!(
            "no archive from a throw-away-key dist run to compare with\n\
             hint: cargo xtask dist --target {host} --profile {profile} --throwaway-key"
        );
    }
    let dirty = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(root)
        .output()
        .context("cannot run git status")?;
    if !dirty.stdout.is_empty() {
        bail!(
            "the checkout has uncommitted changes; the second build is a clone of HEAD, so \
             commit first:\n{}",
            String::from_utf8_lossy(&dirty.stdout)
        );
    }
    // Another folder, of another length, outside the first build's workspace path.
    let base = target_dir.join("repro");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base)?;
    let clone = base.join("a-second-checkout");
    let status = Command::new("git")
        .args(["clone", "--quiet", "--shared"])
        .arg(root)
        .arg(&clone)
        .status()
        .context("cannot run git clone")?;
    crate::check(status, "git clone")?;
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()?;
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    let status = Command::new("git")
        .args(["checkout", "--quiet", "--detach", &head])
        .current_dir(&clone)
        .status()?;
    crate::check(status, "git checkout")?;
    let started = std::time::Instant::now();
    let signing = Signing {
        key_file: Some(key_file),
        ..Signing::default()
    };
    let second_target = clone.join("target");
    dist_in(
        &clone,
        &second_target,
        &[host.to_owned()],
        profile,
        &signing,
    )?;
    let second = second_target.join("dist");
    let mut differ = Vec::new();
    // Everything the second run wrote (archive, .deb, sums, installers); SHA256SUMS and its
    // signature only when the first run, too, built only the host's files.
    let read_sums = |d: &Path| std::fs::read_to_string(d.join("SHA256SUMS")).unwrap_or_default();
    let same_set = read_sums(&first).lines().count() == read_sums(&second).lines().count();
    let mut names: Vec<String> = std::fs::read_dir(&second)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && (same_set || !n.starts_with("SHA256SUMS")))
        .collect();
    names.sort();
    for n in &names {
        if std::fs::read(first.join(n))? != std::fs::read(second.join(n))? {
            differ.push(n.to_string());
        }
    }
    if !differ.is_empty() {
        let inner = differing_members(&first.join(&archive), &second.join(&archive), *format)
            .unwrap_or_else(|e| format!("(cannot compare the contents: {e:#})"));
        bail!(
            "not reproducible: {} differ between {} and {} ({inner}); the second build is kept in {}",
            differ.join(", "),
            first.display(),
            second.display(),
            clone.display()
        );
    }
    let _ = std::fs::remove_dir_all(&base);
    println!(
        "xtask: reproducible: {} identical from {} and a clone at another path (second build {:.0} s)",
        names.join(", "),
        root.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Which files inside two archives differ.
fn differing_members(a: &Path, b: &Path, format: Format) -> Result<String> {
    let dir = tempdir_in(&std::env::temp_dir(), "xtask-repro-diff")?;
    let (da, db) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&da)?;
    std::fs::create_dir_all(&db)?;
    unpack(a, format, &da)?;
    unpack(b, format, &db)?;
    let mut differ = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(da.join(&rel))? {
            let e = e?;
            let r = rel.join(e.file_name());
            if e.file_type()?.is_dir() {
                stack.push(r);
            } else if std::fs::read(da.join(&r)).ok() != std::fs::read(db.join(&r)).ok() {
                differ.push(r.display().to_string());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(if differ.is_empty() {
        "same files, different archive bytes".to_owned()
    } else {
        format!("files that differ: {}", differ.join(", "))
    })
}

/// A fresh empty folder `target_dir/<name>-<pid>`.
pub(crate) fn tempdir_in(target_dir: &Path, name: &str) -> Result<PathBuf> {
    let dir = target_dir.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// Writes `out/SHA256SUMS`: every `*.sha256` in `out` (this run's archives and earlier
/// ones'), sorted by name.
fn write_sums(out: &Path) -> Result<()> {
    let mut sums = String::new();
    let mut names: Vec<String> = std::fs::read_dir(out)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sha256"))
        .collect();
    names.sort();
    if names.is_empty() {
        bail!("no *.sha256 in {}", out.display());
    }
    for n in names {
        sums.push_str(&std::fs::read_to_string(out.join(n))?);
    }
    std::fs::write(out.join("SHA256SUMS"), sums)?;
    Ok(())
}

fn print_signed(key: &SecretKey, whence: &str, checked: &str) {
    println!(
        "xtask:   SHA256SUMS.minisig: signed with {whence}, key {} ({checked})\nxtask:   public key: {}",
        key.public().key_id_hex(),
        key.public().to_base64()
    );
}

/// `cargo xtask sign DIR`: writes `DIR/SHA256SUMS` from the `*.sha256` files there (the
/// archives of every build job, collected) and signs it, as `dist` does.
pub(crate) fn sign_dir(root: &Path, dir: &Path, signing: &Signing) -> Result<()> {
    let target_dir = default_target_dir(root);
    let (key, whence) = signing_key(&target_dir, signing)?;
    let manifests = crate::manifests::write(dir, env!("CARGO_PKG_VERSION"))?;
    write_sums(dir)?;
    let checked = sign_sums(dir, &key, source_date_epoch(root)?)?;
    println!("xtask: package manifests: {}", manifests.join(", "));
    println!("xtask: {}:", dir.join("SHA256SUMS").display());
    print!("{}", std::fs::read_to_string(dir.join("SHA256SUMS"))?);
    print_signed(&key, &whence, &checked);
    Ok(())
}

/// `cargo xtask dist`: builds `targets` (all of [`DIST_TARGETS`] if empty) with `profile`,
/// and signs the sums with the key `signing` names.
pub(crate) fn dist(root: &Path, only: &[String], profile: &str, signing: &Signing) -> Result<()> {
    dist_in(root, &default_target_dir(root), only, profile, signing)
}

/// The target folder cargo uses for `root`.
pub(crate) fn default_target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// [`dist`] of the workspace at `root` into `target_dir`.
fn dist_in(
    root: &Path,
    target_dir: &Path,
    only: &[String],
    profile: &str,
    signing: &Signing,
) -> Result<()> {
    for t in only {
        if !DIST_TARGETS.iter().any(|d| d.0 == t) {
            let known: Vec<&str> = DIST_TARGETS.iter().map(|d| d.0).collect();
            bail!("unknown dist target {t:?}; known: {known:?}");
        }
    }
    let tools = if DIST_TARGETS
        .iter()
        .any(|d| d.1 == Toolchain::Zig && (only.is_empty() || only.iter().any(|o| o == d.0)))
    {
        targets::setup()
    } else {
        targets::ToolState { zig: None }
    };
    let target_dir = target_dir.to_path_buf();
    let out = target_dir.join("dist");
    std::fs::create_dir_all(&out).context("cannot create target/dist")?;
    let key = if signing.no_sign {
        None
    } else {
        Some(signing_key(&target_dir, signing)?)
    };
    let epoch = source_date_epoch(root)?;
    let repro = Reproducible {
        epoch,
        release_key: key.as_ref().map(|(k, _)| k.public().to_base64()),
    };
    let version = env!("CARGO_PKG_VERSION");
    let mut results = Vec::new();
    for &(triple, toolchain, format, exe) in DIST_TARGETS {
        if !only.is_empty() && !only.iter().any(|o| o == triple) {
            continue;
        }
        let started = std::time::Instant::now();
        if triple.contains("apple") && !host_triple().contains("apple") {
            let why = "macOS links only on a Mac (release.yml builds it on a macOS runner)";
            results.push((triple, Built::Skipped(why.to_owned()), started.elapsed()));
            continue;
        }
        let toolchain = if triple == host_triple() {
            Toolchain::Cargo("")
        } else {
            toolchain
        };
        let built = match build(
            root,
            &target_dir,
            triple,
            toolchain,
            profile,
            &tools,
            &repro,
        )? {
            Err(why) => Built::Skipped(why),
            Ok(bin_dir) => {
                let name = format!("autogpt-shim-{version}-{triple}");
                let path = package(root, &bin_dir, &out, &name, triple, format, exe)?;
                let verified = verify(
                    root,
                    &target_dir,
                    &path,
                    &name,
                    format,
                    triple,
                    exe,
                    version,
                )?;
                let verified =
                    match crate::deb::build_deb(root, &bin_dir, &out, triple, version, epoch)? {
                        Ok(deb) => {
                            write_sum(&deb)?;
                            format!(
                                "{verified}; {}",
                                deb.file_name().unwrap_or_default().to_string_lossy()
                            )
                        }
                        Err(why) if triple.contains("linux") => {
                            format!("{verified}; no .deb: {why}")
                        }
                        Err(_) => verified,
                    };
                let verified =
                    match crate::rpm::build_rpm(root, &bin_dir, &out, triple, version, epoch)? {
                        Ok(rpm) => {
                            write_sum(&rpm)?;
                            format!(
                                "{verified}; {}",
                                rpm.file_name().unwrap_or_default().to_string_lossy()
                            )
                        }
                        Err(why) if triple.contains("linux") => {
                            format!("{verified}; no .rpm: {why}")
                        }
                        Err(_) => verified,
                    };
                Built::Archive { path, verified }
            }
        };
        results.push((triple, built, started.elapsed()));
    }
    // Homebrew, Scoop and winget manifests for the archives built (not in SHA256SUMS: they
    // are made from it, and the package managers check the archives' sums themselves).
    let manifests = crate::manifests::write(&out, version)?;
    write_sums(&out)?;
    // The installers are published beside the archives (their default base URL is theirs).
    for script in ["install.sh", "install.ps1"] {
        std::fs::copy(root.join(script), out.join(script))
            .with_context(|| format!("cannot copy {script} into target/dist"))?;
    }
    println!("xtask: dist (profile {profile}) in {}:", out.display());
    println!("xtask:   package manifests: {}", manifests.join(", "));
    match key {
        Some((key, whence)) => {
            let checked = sign_sums(&out, &key, epoch)?;
            print_signed(&key, &whence, &checked);
        }
        None => {
            println!("xtask:   SHA256SUMS is NOT signed (--no-sign); sign with `cargo xtask sign`")
        }
    }
    let mut any = false;
    for (triple, built, took) in &results {
        match built {
            Built::Archive { path, verified } => {
                any = true;
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                println!(
                    "xtask:   {triple:<28} built    {:>5.0} s  {} ({:.1} MiB; {verified})",
                    took.as_secs_f64(),
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    size as f64 / 1048576.0
                );
            }
            Built::Skipped(why) => println!("xtask:   {triple:<28} SKIPPED  {why}"),
        }
    }
    if !any {
        bail!("no archive could be built");
    }
    Ok(())
}

/// What makes a build reproducible and names its release key.
struct Reproducible {
    /// `SOURCE_DATE_EPOCH`.
    epoch: u64,
    /// The public key the binaries trust (`AUTOGPT_SHIM_RELEASE_KEY`); `None`: only the one
    /// built into shim-release.
    release_key: Option<String>,
}

/// The rustc flags that keep the build's folders out of the binaries: the workspace, the
/// target folder and cargo's home (registry sources) become fixed names. Any `RUSTFLAGS` the
/// caller set come first.
pub(crate) fn remap_flags(root: &Path, target_dir: &Path) -> Vec<String> {
    let mut flags: Vec<String> = std::env::var("RUSTFLAGS")
        .map(|f| f.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let cargo_home = cargo_home();
    // The last matching prefix wins, so the more specific ones come later.
    if let Some(home) = cargo_home {
        flags.push(format!("--remap-path-prefix={}=/cargo", home.display()));
    }
    flags.push(format!("--remap-path-prefix={}=/build", root.display()));
    flags.push(format!(
        "--remap-path-prefix={}=/build/target",
        target_dir.display()
    ));
    flags
}

/// Builds the binaries; `Ok(Err(why))` = skip the target.
fn build(
    root: &Path,
    target_dir: &Path,
    triple: &str,
    toolchain: Toolchain,
    profile: &str,
    tools: &targets::ToolState,
    repro: &Reproducible,
) -> Result<std::result::Result<PathBuf, String>> {
    let native = matches!(toolchain, Toolchain::Cargo(""));
    if !native && let Err(why) = targets::prepare(triple, toolchain, tools) {
        return Ok(Err(why));
    }
    let mut cmd = targets::cargo_for(toolchain, "build");
    cmd.args(["--profile", profile, "--target", triple])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target_dir)
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            remap_flags(root, target_dir).join("\x1f"),
        )
        .env_remove("RUSTFLAGS")
        .env("SOURCE_DATE_EPOCH", repro.epoch.to_string());
    match &repro.release_key {
        Some(k) => cmd.env("AUTOGPT_SHIM_RELEASE_KEY", k),
        None => cmd.env_remove("AUTOGPT_SHIM_RELEASE_KEY"),
    };
    for (package, bin) in BINARIES {
        cmd.args(["-p", package, "--bin", bin]);
    }
    let names: Vec<&str> = BINARIES.iter().map(|b| b.1).collect();
    println!(
        "xtask: building {} for {triple} ({profile})",
        names.join(", ")
    );
    // Show the compiler's output as it comes, and keep its first error for the summary.
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot run cargo build")?;
    let mut first_error = None;
    if let Some(stderr) = child.stderr.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line?;
            eprintln!("{line}");
            if first_error.is_none() && line.starts_with("error") {
                first_error = Some(line);
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        let first = first_error.unwrap_or_else(|| format!("the build failed ({status})"));
        return Ok(Err(format!("does not compile for {triple}: {first}")));
    }
    let dir = if profile == "dev" { "debug" } else { profile };
    Ok(Ok(target_dir.join(triple).join(dir)))
}

/// The files of an archive: (name inside, bytes, executable).
fn contents(
    root: &Path,
    bin_dir: &Path,
    triple: &str,
    exe: &str,
) -> Result<Vec<(String, Vec<u8>, bool)>> {
    let mut files = Vec::new();
    for (_, b) in BINARIES {
        let name = format!("{b}{exe}");
        let bytes = std::fs::read(bin_dir.join(&name))
            .with_context(|| format!("cannot read {}", bin_dir.join(&name).display()))?;
        files.push((name, bytes, true));
    }
    let page = install_page(triple);
    let docs = DOCS.iter().copied().chain([(page, "INSTALL.md")]);
    for (src, name) in docs {
        let bytes = std::fs::read(root.join(src)).with_context(|| format!("cannot read {src}"))?;
        files.push((name.to_owned(), bytes, false));
    }
    Ok(files)
}

/// Writes the archive `name.<ext>` (one top folder `name/`) and its `.sha256` file.
pub(crate) fn package(
    root: &Path,
    bin_dir: &Path,
    out: &Path,
    name: &str,
    triple: &str,
    format: Format,
    exe: &str,
) -> Result<PathBuf> {
    let files = contents(root, bin_dir, triple, exe)?;
    let archive = write_archive(out, name, format, &files)?;
    write_sum(&archive)?;
    Ok(archive)
}

/// Writes `files` into `out/name.tar.gz` or `out/name.zip` under the folder `name/`, with
/// fixed timestamps so that the same inputs give the same archive.
pub(crate) fn write_archive(
    out: &Path,
    name: &str,
    format: Format,
    files: &[(String, Vec<u8>, bool)],
) -> Result<PathBuf> {
    let ext = match format {
        Format::TarGz => "tar.gz",
        Format::Zip => "zip",
    };
    let path = out.join(format!("{name}.{ext}"));
    let partial = out.join(format!(".{name}.{ext}.partial"));
    let file = std::fs::File::create(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    match format {
        Format::TarGz => {
            let gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
            let mut tar = tar::Builder::new(gz);
            for (n, bytes, exec) in files {
                let mut h = tar::Header::new_gnu();
                h.set_size(bytes.len() as u64);
                h.set_mode(if *exec { 0o755 } else { 0o644 });
                h.set_mtime(0);
                h.set_cksum();
                tar.append_data(&mut h, format!("{name}/{n}"), bytes.as_slice())?;
            }
            tar.into_inner()?.finish()?.sync_all()?;
        }
        Format::Zip => {
            let mut zip = zip::ZipWriter::new(file);
            for (n, bytes, exec) in files {
                let options = zip::write::SimpleFileOptions::default()
                    .last_modified_time(zip::DateTime::default())
                    .compression_method(zip::CompressionMethod::Deflated)
                    .unix_permissions(if *exec { 0o755 } else { 0o644 });
                zip.start_file(format!("{name}/{n}"), options)?;
                zip.write_all(bytes)?;
            }
            zip.finish()?.sync_all()?;
        }
    }
    std::fs::rename(&partial, &path)?;
    Ok(path)
}

/// The SHA-256 of a file, lower-case hex.
pub(crate) fn sha256_hex(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(hex::encode(sha2::Sha256::digest(&bytes)))
}

/// Writes `<archive>.sha256` in `sha256sum` format.
pub(crate) fn write_sum(archive: &Path) -> Result<()> {
    let file_name = archive
        .file_name()
        .context("archive without a name")?
        .to_string_lossy()
        .into_owned();
    let line = format!("{}  {file_name}\n", sha256_hex(archive)?);
    let mut sum = archive.as_os_str().to_owned();
    sum.push(".sha256");
    std::fs::write(PathBuf::from(sum), line)?;
    Ok(())
}

/// Unpacks `archive` into `dest` (which must exist).
pub(crate) fn unpack(archive: &Path, format: Format, dest: &Path) -> Result<()> {
    let file = std::fs::File::open(archive)?;
    match format {
        Format::TarGz => tar::Archive::new(flate2::read::GzDecoder::new(file)).unpack(dest)?,
        Format::Zip => zip::ZipArchive::new(file)?.extract(dest)?,
    }
    Ok(())
}

/// Checks the archive against its `.sha256`, unpacks it and runs `autogpt-shim --version`
/// from the unpacked copy where this machine can run the target (aarch64 under qemu-user,
/// Windows under Wine). Returns what was checked.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site, each argument named"
)]
fn verify(
    root: &Path,
    target_dir: &Path,
    archive: &Path,
    name: &str,
    format: Format,
    triple: &str,
    exe: &str,
    version: &str,
) -> Result<String> {
    let mut sum_path = archive.as_os_str().to_owned();
    sum_path.push(".sha256");
    let recorded = std::fs::read_to_string(PathBuf::from(sum_path))?;
    if !recorded.starts_with(&sha256_hex(archive)?) {
        bail!("{} does not match its .sha256", archive.display());
    }
    let tmp = std::env::temp_dir().join(format!("xtask-dist-{}-{triple}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let result = (|| -> Result<String> {
        unpack(archive, format, &tmp)?;
        let paths = build_paths(root, target_dir);
        if let Some((file, path)) = build_paths_in(&tmp.join(name), &paths)?.first() {
            bail!(
                "{file} in {} contains the build path {path}: the path remapping failed, so \
                 the build is not reproducible from another folder",
                archive.display()
            );
        }
        let bin = tmp.join(name).join(format!("autogpt-shim{exe}"));
        let mut cmd = if triple == host_triple() {
            Command::new(&bin)
        } else if triple == "aarch64-unknown-linux-gnu" && have("qemu-aarch64") {
            let mut c = Command::new("qemu-aarch64");
            c.args(["-L", "/usr/aarch64-linux-gnu"]).arg(&bin);
            c
        } else if triple == "x86_64-pc-windows-gnu" {
            // Under Wine, in the prefix `wine-test` uses (with its ProcessPrng stub DLL).
            let Some(wine) = crate::wine::prepare(root)? else {
                return Ok("sum checked; not runnable here (no Wine)".to_owned());
            };
            let mut c = Command::new("wine");
            wine.env(&mut c);
            c.arg(&bin);
            c
        } else {
            return Ok("sum checked; not runnable here".to_owned());
        };
        let out = cmd
            .arg("--version")
            .output()
            .with_context(|| format!("cannot run {}", bin.display()))?;
        let mut text = String::new();
        out.stdout.as_slice().read_to_string(&mut text)?;
        if !out.status.success() || !text.contains(version) {
            bail!(
                "`autogpt-shim --version` from the unpacked {} printed {text:?} ({})",
                archive.display(),
                out.status
            );
        }
        Ok(format!(
            "sum checked, unpacked `--version` = {}",
            text.trim()
        ))
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result.map(|r| format!("no build path inside, {r}"))
}

/// The folders of this build that must not appear in what it ships: the workspace, the
/// target folder and cargo's home.
fn build_paths(root: &Path, target_dir: &Path) -> Vec<String> {
    let mut paths = vec![root.display().to_string(), target_dir.display().to_string()];
    paths.extend(cargo_home().map(|h| h.display().to_string()));
    paths.retain(|p| p.len() > 1);
    paths
}

/// Which files under `dir` contain which of `paths` (as bytes): (file name, path).
pub(crate) fn build_paths_in(dir: &Path, paths: &[String]) -> Result<Vec<(String, String)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let bytes = std::fs::read(entry.path())?;
        for p in paths {
            if memchr::memmem::find(&bytes, p.as_bytes()).is_some() {
                found.push((entry.file_name().to_string_lossy().into_owned(), p.clone()));
            }
        }
    }
    Ok(found)
}

/// Cargo's home (registry sources live below it).
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The triple of the machine xtask runs on (for which archives run natively).
fn host_triple() -> &'static str {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        "x86_64-unknown-linux-gnu"
    } else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
        "aarch64-unknown-linux-gnu"
    } else if cfg!(all(windows, target_arch = "x86_64")) {
        "x86_64-pc-windows-gnu"
    } else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        "aarch64-apple-darwin"
    } else if cfg!(all(target_os = "macos", target_arch = "x86_64")) {
        "x86_64-apple-darwin"
    } else {
        "unknown"
    }
}

#[cfg(test)]
#[path = "dist_tests.rs"]
mod tests;
