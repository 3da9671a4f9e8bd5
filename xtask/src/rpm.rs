//! The RPM package `dist` writes beside each Linux archive (Fedora, RHEL, openSUSE):
//! `autogpt-shim-<version>-1.<arch>.rpm` with the same files as the .deb
//! ([`crate::deb::PACKAGE_FILES`]), built by `rpmbuild` from a generated spec (no strip, no
//! debuginfo, build time and file times from `SOURCE_DATE_EPOCH`, gzip payload). Its
//! `.sha256` joins the signed `SHA256SUMS`. `cargo xtask rpm-test` checks it with `rpm -qip`
//! and `rpm -qlp`: the right name, version and architecture, and exactly the .deb's files.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;

use crate::deb::PACKAGE_FILES;

/// The RPM architecture of a Linux triple.
pub(crate) fn rpm_arch(triple: &str) -> Option<&'static str> {
    match triple {
        "x86_64-unknown-linux-gnu" => Some("x86_64"),
        "aarch64-unknown-linux-gnu" => Some("aarch64"),
        _ => None,
    }
}

/// RPM's `Version` cannot hold `-`; a pre-release `1.2.0-rc.1` sorts before `1.2.0` as
/// `1.2.0~rc.1`.
pub(crate) fn rpm_version(version: &str) -> String {
    version.replacen('-', "~", 1)
}

/// The spec `rpmbuild` builds from: `%install` copies the staged tree `stage`.
pub(crate) fn spec(version: &str, stage: &Path) -> String {
    let mut files = String::new();
    for (path, mode) in PACKAGE_FILES {
        files.push_str(&format!("%attr({mode:04o},root,root) /{path}\n"));
    }
    format!(
        "%define debug_package %{{nil}}\n\
         %define __os_install_post %{{nil}}\n\
         %define _build_id_links none\n\
         Name: autogpt-shim\n\
         Version: {v}\n\
         Release: 1\n\
         Summary: AutoGPT local executor: lets the AutoGPT platform use this computer\n\
         License: MIT OR Apache-2.0\n\
         URL: https://github.com/Significant-Gravitas/autogpt-local-executor\n\
         AutoReqProv: no\n\
         Requires: glibc, libgcc\n\
         \n\
         %description\n\
         A daemon that opens an outbound WebSocket to the AutoGPT platform and, when asked,\n\
         works on files in a folder you picked, runs commands if you enabled that, operates\n\
         the desktop and reaches local hardware; every operation goes into an HMAC-chained\n\
         audit log (shim-audit verifies it). Dangerous by design: read the README first.\n\
         \n\
         %install\n\
         mkdir -p %{{buildroot}}\n\
         cp -a '{stage}/.' %{{buildroot}}/\n\
         \n\
         %files\n\
         {files}",
        v = rpm_version(version),
        stage = stage.display(),
    )
}

/// Builds `out/autogpt-shim-<version>-1.<arch>.rpm`; `Ok(Err(why))` when the target is not
/// Linux or `rpmbuild` is missing.
pub(crate) fn build_rpm(
    root: &Path,
    bin_dir: &Path,
    out: &Path,
    triple: &str,
    version: &str,
    epoch: u64,
) -> Result<std::result::Result<PathBuf, String>> {
    let Some(arch) = rpm_arch(triple) else {
        return Ok(Err("not a Linux target".to_owned()));
    };
    if Command::new("rpmbuild").arg("--version").output().is_err() {
        return Ok(Err(
            "rpmbuild is not installed (Debian package rpm)".to_owned()
        ));
    }
    let top = out.join(format!(".rpm-{arch}"));
    let _ = std::fs::remove_dir_all(&top);
    let stage = top.join("stage");
    crate::deb::stage_files(root, bin_dir, &stage)?;
    let spec_path = top.join("autogpt-shim.spec");
    std::fs::write(&spec_path, spec(version, &stage))?;
    let define = |k: &str, v: &str| format!("{k} {v}");
    let status = Command::new("rpmbuild")
        .arg("-bb")
        .args(["--target", arch])
        .args(["--define", &define("_topdir", &top.to_string_lossy())])
        .args(["--define", &define("_buildhost", "reproducible")])
        .args(["--define", "use_source_date_epoch_as_buildtime 1"])
        .args(["--define", "clamp_mtime_to_source_date_epoch 1"])
        .args(["--define", "_binary_payload w9.gzdio"])
        .args(["--define", "_source_payload w9.gzdio"])
        .arg(&spec_path)
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .context("cannot run rpmbuild")?;
    if !status.status.success() {
        bail!(
            "rpmbuild failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    let name = format!("autogpt-shim-{}-1.{arch}.rpm", rpm_version(version));
    let built = top.join("RPMS").join(arch).join(&name);
    let rpm = out.join(&name);
    std::fs::rename(&built, &rpm)
        .with_context(|| format!("rpmbuild wrote no {}", built.display()))?;
    std::fs::remove_dir_all(&top)?;
    Ok(Ok(rpm))
}

/// `cargo xtask rpm-test`: the last dist run's host .rpm, read with `rpm -qip` (name,
/// version, architecture) and `rpm -qlp` (exactly the files the .deb installs).
pub(crate) fn rpm_test(root: &Path) -> Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("autogpt-shim-{}-1.x86_64.rpm", rpm_version(version));
    let rpm = crate::dist::default_target_dir(root)
        .join("dist")
        .join(&name);
    if !rpm.is_file() {
        bail!(
            "no {}\nhint: cargo xtask dist --target x86_64-unknown-linux-gnu --profile dist-ci --throwaway-key",
            rpm.display()
        );
    }
    let summary = check_rpm(&rpm, version)?;
    println!("xtask: {name}: {summary}");
    Ok(())
}

/// Reads `rpm` with `rpm -qip` and `rpm -qlp`: autogpt-shim at `version` for x86_64 with
/// exactly [`PACKAGE_FILES`]; returns what was checked, in words.
pub(crate) fn check_rpm(rpm: &Path, version: &str) -> Result<String> {
    let name = rpm.file_name().unwrap_or_default().to_string_lossy();
    let query = |flags: &str| -> Result<String> {
        let out = Command::new("rpm")
            .arg(flags)
            .arg(rpm)
            .output()
            .context("cannot run rpm (Debian package rpm)")?;
        if !out.status.success() {
            bail!(
                "rpm {flags} {name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let info = query("-qip")?;
    let field = |k: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim_start_matches([' ', ':']).trim().to_owned())
            .unwrap_or_default()
    };
    if field("Name") != "autogpt-shim"
        || field("Version") != rpm_version(version)
        || field("Architecture") != "x86_64"
    {
        bail!("rpm -qip shows another package:\n{info}");
    }
    let listed: Vec<String> = query("-qlp")?.lines().map(str::to_owned).collect();
    let want: Vec<String> = PACKAGE_FILES.iter().map(|(p, _)| format!("/{p}")).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    if sorted != want_sorted {
        bail!("rpm -qlp lists {listed:?}, the .deb installs {want:?}");
    }
    Ok(format!(
        "rpm -qip shows autogpt-shim {} x86_64, rpm -qlp lists the .deb's {} files",
        rpm_version(version),
        want.len()
    ))
}

#[cfg(test)]
#[path = "rpm_tests.rs"]
mod tests;
