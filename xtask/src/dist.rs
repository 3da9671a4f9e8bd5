//! `cargo xtask dist`: release archives with SHA-256 sums in `target/dist/`:
//! `autogpt-shim-<version>-<target>.tar.gz` for Linux (x86_64, aarch64) and `.zip` for
//! Windows, each holding `autogpt-shim`, `shim-audit`, the README and the install page, with
//! `<archive>.sha256` beside it and one `SHA256SUMS` for all (`sha256sum -c SHA256SUMS`).
//!
//! Every archive that can run here is unpacked again and its `autogpt-shim --version` run
//! from the unpacked copy (aarch64 under qemu-user, Windows under Wine), so a broken
//! archive fails the command.
//! A target that does not compile is reported as skipped with the compiler's first error,
//! and the others are still built; the command fails only if no archive could be built.

use std::io::Read;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use sha2::Digest;

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

/// `cargo xtask dist`: builds `targets` (all of [`DIST_TARGETS`] if empty) with `profile`.
pub(crate) fn dist(root: &Path, only: &[String], profile: &str) -> Result<()> {
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
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let out = target_dir.join("dist");
    std::fs::create_dir_all(&out).context("cannot create target/dist")?;
    let version = env!("CARGO_PKG_VERSION");
    let mut results = Vec::new();
    for &(triple, toolchain, format, exe) in DIST_TARGETS {
        if !only.is_empty() && !only.iter().any(|o| o == triple) {
            continue;
        }
        let started = std::time::Instant::now();
        let built = match build(root, &target_dir, triple, toolchain, profile, &tools)? {
            Err(why) => Built::Skipped(why),
            Ok(bin_dir) => {
                let name = format!("autogpt-shim-{version}-{triple}");
                let path = package(root, &bin_dir, &out, &name, triple, format, exe)?;
                let verified = verify(root, &path, &name, format, triple, exe, version)?;
                Built::Archive { path, verified }
            }
        };
        results.push((triple, built, started.elapsed()));
    }
    // SHA256SUMS covers every archive now in target/dist (this run's and earlier ones').
    let mut sums = String::new();
    let mut names: Vec<String> = std::fs::read_dir(&out)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sha256"))
        .collect();
    names.sort();
    for n in names {
        sums.push_str(&std::fs::read_to_string(out.join(n))?);
    }
    std::fs::write(out.join("SHA256SUMS"), sums)?;
    println!("xtask: dist (profile {profile}) in {}:", out.display());
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

/// Builds the binaries; `Ok(Err(why))` = skip the target.
fn build(
    root: &Path,
    target_dir: &Path,
    triple: &str,
    toolchain: Toolchain,
    profile: &str,
    tools: &targets::ToolState,
) -> Result<std::result::Result<PathBuf, String>> {
    let native = matches!(toolchain, Toolchain::Cargo(""));
    if !native && let Err(why) = targets::prepare(triple, toolchain, tools) {
        return Ok(Err(why));
    }
    let mut cmd = targets::cargo_for(toolchain, "build");
    cmd.args(["--profile", profile, "--target", triple])
        .current_dir(root);
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
fn write_sum(archive: &Path) -> Result<()> {
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
fn verify(
    root: &Path,
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
    result
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
    } else {
        "unknown"
    }
}

#[cfg(test)]
#[path = "dist_tests.rs"]
mod tests;
