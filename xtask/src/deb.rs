//! The Debian package `dist` writes beside each Linux archive (the .rpm, [`crate::rpm`], has
//! the same files, [`PACKAGE_FILES`]):
//! `autogpt-shim_<version>_<arch>.deb` with the two binaries in /usr/bin, the systemd user
//! unit in /usr/lib/systemd/user and the docs in /usr/share/doc/autogpt-shim, built by
//! `dpkg-deb` (owner root, times clamped to `SOURCE_DATE_EPOCH`, so reproducible too). Its
//! `.sha256` joins the signed `SHA256SUMS`. `cargo xtask deb-test` installs it with `dpkg -i`
//! (root only), runs the installed binaries and removes it again.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;

/// The Debian architecture of a Linux triple.
pub(crate) fn debian_arch(triple: &str) -> Option<&'static str> {
    match triple {
        "x86_64-unknown-linux-gnu" => Some("amd64"),
        "aarch64-unknown-linux-gnu" => Some("arm64"),
        _ => None,
    }
}

/// The packaged systemd user unit: the daemon from /usr/bin with its default configuration
/// (the same restart rules as the unit `autogpt-shim install` writes; a unit that command
/// writes into ~/.config/systemd/user takes precedence over this one).
pub(crate) const USER_UNIT: &str = "[Unit]
Description=AutoGPT Local PC Executor shim
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=/usr/bin/autogpt-shim start
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=77 78

[Install]
WantedBy=default.target
";

/// The highest `GLIBC_2.N` symbol version `binary` needs (for `Depends: libc6 (>= 2.N)`).
pub(crate) fn glibc_needed(binary: &[u8]) -> Option<u32> {
    let needle = b"GLIBC_2.";
    let mut best = None;
    let mut at = 0;
    while let Some(i) = memchr::memmem::find(&binary[at..], needle) {
        let start = at + i + needle.len();
        let digits: String = binary[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .map(|&b| char::from(b))
            .collect();
        if let Ok(minor) = digits.parse::<u32>() {
            best = best.max(Some(minor));
        }
        at = start;
    }
    best
}

/// The `DEBIAN/control` file.
pub(crate) fn control(
    version: &str,
    arch: &str,
    glibc_minor: Option<u32>,
    size_kib: u64,
) -> String {
    let libc = glibc_minor.map_or_else(|| "libc6".to_owned(), |m| format!("libc6 (>= 2.{m})"));
    format!(
        "Package: autogpt-shim\n\
         Version: {version}\n\
         Architecture: {arch}\n\
         Maintainer: AutoGPT local executor maintainers <https://github.com/Significant-Gravitas/autogpt-local-executor>\n\
         Installed-Size: {size_kib}\n\
         Depends: {libc}, libgcc-s1\n\
         Section: utils\n\
         Priority: optional\n\
         Homepage: https://github.com/Significant-Gravitas/autogpt-local-executor\n\
         Description: AutoGPT local executor: lets the AutoGPT platform use this computer\n \
         A daemon that opens an outbound WebSocket to the AutoGPT platform and, when asked,\n \
         works on files in a folder you picked, runs commands if you enabled that, operates\n \
         the desktop and reaches local hardware; every operation goes into an HMAC-chained\n \
         audit log (shim-audit verifies it). Dangerous by design: read the README first.\n"
    )
}

/// Builds `out/autogpt-shim_<version>_<arch>.deb` from the built binaries; `Ok(None)` when
/// the target is not Linux or dpkg-deb is missing (with the reason).
pub(crate) fn build_deb(
    root: &Path,
    bin_dir: &Path,
    out: &Path,
    triple: &str,
    version: &str,
    epoch: u64,
) -> Result<std::result::Result<PathBuf, String>> {
    let Some(arch) = debian_arch(triple) else {
        return Ok(Err("not a Linux target".to_owned()));
    };
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        return Ok(Err("dpkg-deb is not installed".to_owned()));
    }
    let stage = out.join(format!(".deb-{arch}"));
    let _ = std::fs::remove_dir_all(&stage);
    let size = stage_files(root, bin_dir, &stage)?;
    let binary = std::fs::read(bin_dir.join("autogpt-shim"))?;
    std::fs::create_dir_all(stage.join("DEBIAN"))?;
    std::fs::write(
        stage.join("DEBIAN/control"),
        control(version, arch, glibc_needed(&binary), size.div_ceil(1024)),
    )?;
    // Directories too get fixed modes (the umask must not leak into the package).
    for dir in [
        "",
        "DEBIAN",
        "usr",
        "usr/bin",
        "usr/lib",
        "usr/lib/systemd",
        "usr/lib/systemd/user",
        "usr/share",
        "usr/share/doc",
        "usr/share/doc/autogpt-shim",
    ] {
        set_mode(&stage.join(dir), 0o755)?;
    }
    let deb = out.join(format!("autogpt-shim_{version}_{arch}.deb"));
    // gzip, not xz: dpkg-deb compresses xz with as many threads as the machine has cores,
    // and the output may then differ between machines; gzip has one stream everywhere.
    let status = Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Zgzip", "--build"])
        .arg(&stage)
        .arg(&deb)
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .context("cannot run dpkg-deb")?;
    crate::check(status, "dpkg-deb --build")?;
    std::fs::remove_dir_all(&stage)?;
    Ok(Ok(deb))
}

/// What a Linux package installs, as (path in the package, mode); the systemd user unit is
/// [`USER_UNIT`]. The .deb and the .rpm carry the same files.
pub(crate) const PACKAGE_FILES: &[(&str, u32)] = &[
    ("usr/bin/autogpt-shim", 0o755),
    ("usr/bin/shim-audit", 0o755),
    ("usr/lib/systemd/user/autogpt-shim.service", 0o644),
    ("usr/share/doc/autogpt-shim/README.md", 0o644),
    ("usr/share/doc/autogpt-shim/INSTALL.md", 0o644),
];

/// Copies [`PACKAGE_FILES`] into `stage` with their modes; returns their total size.
pub(crate) fn stage_files(root: &Path, bin_dir: &Path, stage: &Path) -> Result<u64> {
    let mut size = 0;
    for (dest, mode) in PACKAGE_FILES {
        let path = stage.join(dest);
        std::fs::create_dir_all(path.parent().context("no parent")?)?;
        match *dest {
            "usr/lib/systemd/user/autogpt-shim.service" => std::fs::write(&path, USER_UNIT)?,
            _ => {
                let src = match *dest {
                    "usr/share/doc/autogpt-shim/README.md" => root.join("README.md"),
                    "usr/share/doc/autogpt-shim/INSTALL.md" => root.join("docs/install-linux.md"),
                    bin => bin_dir.join(bin.trim_start_matches("usr/bin/")),
                };
                std::fs::copy(&src, &path)
                    .with_context(|| format!("cannot copy {}", src.display()))?;
            }
        }
        set_mode(&path, *mode)?;
        size += std::fs::metadata(&path)?.len();
    }
    Ok(size)
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

/// `cargo xtask deb-test`: `dpkg -i` of the last dist run's host .deb (root only), the
/// installed `--version` and `doctor` (throw-away HOME, encrypted file store), the unit in
/// place, then `dpkg -r` and nothing of the package left.
pub(crate) fn deb_test(root: &Path) -> Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let deb = crate::dist::default_target_dir(root)
        .join("dist")
        .join(format!("autogpt-shim_{version}_amd64.deb"));
    if !deb.is_file() {
        bail!(
            "no {}\nhint: cargo xtask dist --target x86_64-unknown-linux-gnu --profile dist-ci --throwaway-key",
            deb.display()
        );
    }
    let uid = Command::new("id").arg("-u").output()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        bail!("dpkg -i needs root (CI runs as root)");
    }
    if Path::new("/usr/bin/autogpt-shim").exists() {
        bail!("/usr/bin/autogpt-shim exists already; remove it (dpkg -r autogpt-shim) first");
    }
    let run = |args: &[&str]| -> Result<std::process::Output> {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .with_context(|| format!("cannot run {}", args.join(" ")))
    };
    let deb_s = deb.to_string_lossy().into_owned();
    let out = run(&["dpkg", "-i", &deb_s])?;
    let result = (|| -> Result<()> {
        if !out.status.success() {
            bail!("dpkg -i failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v = run(&["/usr/bin/autogpt-shim", "--version"])?;
        if !String::from_utf8_lossy(&v.stdout).contains(version) {
            bail!("the installed autogpt-shim --version printed {v:?}");
        }
        let home = tempfile::tempdir()?;
        let d = Command::new("/usr/bin/autogpt-shim")
            .arg("doctor")
            .env("HOME", home.path())
            .env("AUTOGPT_SHIM_CREDENTIAL_STORE", "file")
            .env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "deb-test")
            .output()?;
        drop(home);
        if !d.status.success() {
            bail!(
                "the installed autogpt-shim doctor failed: {}",
                String::from_utf8_lossy(&d.stdout)
            );
        }
        let a = run(&["/usr/bin/shim-audit", "--help"])?;
        if !a.status.success() {
            bail!("the installed shim-audit --help failed");
        }
        let unit = std::fs::read_to_string("/usr/lib/systemd/user/autogpt-shim.service")?;
        if unit != USER_UNIT {
            bail!("the installed unit differs from the packaged one");
        }
        Ok(())
    })();
    let removed = run(&["dpkg", "-r", "autogpt-shim"])?;
    result?;
    if !removed.status.success() {
        bail!(
            "dpkg -r failed: {}",
            String::from_utf8_lossy(&removed.stderr)
        );
    }
    for p in [
        "/usr/bin/autogpt-shim",
        "/usr/bin/shim-audit",
        "/usr/lib/systemd/user/autogpt-shim.service",
        "/usr/share/doc/autogpt-shim",
    ] {
        if Path::new(p).exists() {
            bail!("dpkg -r left {p} behind");
        }
    }
    println!(
        "xtask: {} installs (dpkg -i), --version, doctor and shim-audit run, the user unit is in place, dpkg -r removes it all",
        deb.file_name().unwrap_or_default().to_string_lossy()
    );
    Ok(())
}

#[cfg(test)]
#[path = "deb_tests.rs"]
mod tests;
