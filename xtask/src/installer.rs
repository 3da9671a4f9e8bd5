//! `cargo xtask installer-test` (a `ci` step after `dist --throwaway-key`): `install.sh`
//! against a real HTTP server on 127.0.0.1 (`python3 -m http.server`) that serves copies of
//! the real `target/dist`. The genuine release installs into a throw-away HOME and the
//! installed `autogpt-shim --version` and `doctor` run; each attack is refused with a clear
//! message, nothing installed and no temporary file left. Signature cases run with both of
//! the script's checkers (`minisign` and OpenSSL 3).

use std::io::BufRead;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use shim_release::PublicKey;
use shim_release::SecretKey;

use crate::dist;

/// One served release and what the installer must do with it.
struct Case {
    name: &'static str,
    /// `None`: installs; `Some(text)`: refused with `text` in its message.
    refused: Option<&'static str>,
    /// Run with both signature checkers (the case is about the signature).
    both_checkers: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "genuine",
        refused: None,
        both_checkers: true,
    },
    Case {
        name: "archive-one-byte-changed",
        refused: Some("does not match its signed SHA-256"),
        both_checkers: false,
    },
    Case {
        name: "sums-changed-to-match",
        refused: Some("signature of SHA256SUMS is not valid"),
        both_checkers: true,
    },
    Case {
        name: "signed-by-another-key",
        refused: Some("signature of SHA256SUMS is not valid"),
        both_checkers: true,
    },
    Case {
        name: "signature-truncated",
        refused: Some("signature of SHA256SUMS is not valid"),
        both_checkers: true,
    },
    Case {
        name: "archive-truncated",
        refused: Some("does not match its signed SHA-256"),
        both_checkers: false,
    },
    Case {
        name: "archive-of-another-platform",
        refused: Some("does not match its signed SHA-256"),
        both_checkers: false,
    },
    Case {
        name: "no-archive-for-this-platform",
        refused: Some("this release has no archive for"),
        both_checkers: false,
    },
];

/// The platform `install.sh` picks on this machine (Linux x86_64 here and in CI).
const HOST: &str = "x86_64-unknown-linux-gnu";
/// A platform whose archive is served in its place.
const OTHER: &str = "aarch64-unknown-linux-gnu";

/// Runs every case; fails on the first installer that does not do what it must.
pub(crate) fn installer_test(root: &Path) -> Result<()> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        bail!("the installer test runs on x86_64 Linux");
    }
    let target_dir = dist::default_target_dir(root);
    let dist_dir = target_dir.join("dist");
    let version = env!("CARGO_PKG_VERSION");
    let archive = format!("autogpt-shim-{version}-{HOST}.tar.gz");
    let key_dir = dist::throwaway_key_dir(&target_dir);
    let key_text = std::fs::read_to_string(key_dir.join("throwaway.key")).with_context(|| {
        format!(
            "no throw-away key in {}\nhint: cargo xtask dist --target {HOST} --profile dist-ci --throwaway-key",
            key_dir.display()
        )
    })?;
    let key = SecretKey::parse(&key_text)?;
    let genuine = std::fs::read(dist_dir.join(&archive))
        .with_context(|| format!("no {archive} in {}", dist_dir.display()))?;
    let work = dist::tempdir_in(&target_dir, "installer-test")?;
    let srv = work.join("srv");
    prepare(&srv, &archive, &genuine, &key, version)?;

    let mut server = Command::new("python3")
        .args([
            "-u",
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            "0",
            "--directory",
        ])
        .arg(&srv)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start python3 -m http.server")?;
    let result = (|| -> Result<Vec<String>> {
        let port = server_port(&mut server)?;
        let mut lines = Vec::new();
        for case in CASES {
            let checkers: &[&str] = if case.both_checkers {
                &["minisign", "openssl"]
            } else {
                &[""]
            };
            for checker in checkers {
                let url = format!("http://127.0.0.1:{port}/{}", case.name);
                lines.push(run_case(
                    root,
                    &work,
                    case,
                    checker,
                    &url,
                    &key.public(),
                    version,
                )?);
            }
        }
        Ok(lines)
    })();
    let _ = server.kill();
    let _ = server.wait();
    let lines = result?;
    let _ = std::fs::remove_dir_all(&work);
    for l in &lines {
        println!("xtask:   {l}");
    }
    println!("xtask: install.sh: {} runs as expected", lines.len());
    Ok(())
}

/// Writes one folder per case under `srv`.
fn prepare(
    srv: &Path,
    archive: &str,
    genuine: &[u8],
    key: &SecretKey,
    version: &str,
) -> Result<()> {
    let sums_line = |name: &str, bytes: &[u8]| {
        use sha2::Digest;
        format!("{}  {name}\n", hex::encode(sha2::Sha256::digest(bytes)))
    };
    let genuine_sums = sums_line(archive, genuine);
    let sign =
        |k: &SecretKey, sums: &str| k.sign(sums.as_bytes(), "timestamp:0\tfile:SHA256SUMS\thashed");
    let write =
        |case: &str, sums: &str, sig: &str, served: &[u8], extra: &[(&str, &[u8])]| -> Result<()> {
            let dir = srv.join(case);
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("SHA256SUMS"), sums)?;
            std::fs::write(dir.join("SHA256SUMS.minisig"), sig)?;
            std::fs::write(dir.join(archive), served)?;
            for (n, b) in extra {
                std::fs::write(dir.join(n), b)?;
            }
            Ok(())
        };
    let genuine_sig = sign(key, &genuine_sums)?;
    write("genuine", &genuine_sums, &genuine_sig, genuine, &[])?;

    let mut changed = genuine.to_vec();
    let mid = changed.len() / 2;
    changed[mid] ^= 0x01;
    write(
        "archive-one-byte-changed",
        &genuine_sums,
        &genuine_sig,
        &changed,
        &[],
    )?;
    // The attacker recomputes the sum of the changed archive; the signature is the old one.
    let changed_sums = sums_line(archive, &changed);
    write(
        "sums-changed-to-match",
        &changed_sums,
        &genuine_sig,
        &changed,
        &[],
    )?;
    // ... or signs the new sums with a key of their own.
    let other = SecretKey::generate()?;
    write(
        "signed-by-another-key",
        &changed_sums,
        &sign(&other, &changed_sums)?,
        &changed,
        &[],
    )?;
    write(
        "signature-truncated",
        &genuine_sums,
        &genuine_sig[..genuine_sig.len() / 2],
        genuine,
        &[],
    )?;
    write(
        "archive-truncated",
        &genuine_sums,
        &genuine_sig,
        &genuine[..genuine.len() / 2],
        &[],
    )?;
    // A genuinely signed release that also has another platform's archive; the server hands
    // that archive out under this platform's name.
    let other_name = format!("autogpt-shim-{version}-{OTHER}.tar.gz");
    let other_archive = other_platform_archive(srv, version)?;
    let both_sums = format!("{}{}", sums_line(&other_name, &other_archive), genuine_sums);
    write(
        "archive-of-another-platform",
        &both_sums,
        &sign(key, &both_sums)?,
        &other_archive,
        &[(&other_name, &other_archive)],
    )?;
    let only_other = sums_line(&other_name, &other_archive);
    write(
        "no-archive-for-this-platform",
        &only_other,
        &sign(key, &only_other)?,
        genuine,
        &[(&other_name, &other_archive)],
    )?;
    Ok(())
}

/// A tar.gz laid out like the aarch64 release (`autogpt-shim-VERSION-aarch64.../...`).
fn other_platform_archive(srv: &Path, version: &str) -> Result<Vec<u8>> {
    let name = format!("autogpt-shim-{version}-{OTHER}");
    let files = vec![
        (
            "autogpt-shim".to_owned(),
            b"#!/bin/sh\necho aarch64 build\n".to_vec(),
            true,
        ),
        (
            "shim-audit".to_owned(),
            b"#!/bin/sh\necho aarch64 build\n".to_vec(),
            true,
        ),
    ];
    let dir = srv.join(".other");
    std::fs::create_dir_all(&dir)?;
    let path = dist::write_archive(&dir, &name, dist::Format::TarGz, &files)?;
    let bytes = std::fs::read(&path)?;
    std::fs::remove_dir_all(&dir)?;
    Ok(bytes)
}

/// The port `python3 -m http.server` printed ("Serving HTTP on 127.0.0.1 port N ...").
fn server_port(server: &mut std::process::Child) -> Result<u16> {
    let stdout = server.stdout.take().context("no stdout from http.server")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    line.split(" port ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("http.server printed {line:?}"))
}

/// Runs `install.sh` for one case and checks the outcome; returns a summary line.
fn run_case(
    root: &Path,
    work: &Path,
    case: &Case,
    checker: &str,
    url: &str,
    key: &PublicKey,
    version: &str,
) -> Result<String> {
    let label = if checker.is_empty() {
        case.name.to_owned()
    } else {
        format!("{} ({checker})", case.name)
    };
    let slug = label.replace([' ', '(', ')'], "");
    let home = work.join(format!("home-{slug}"));
    let tmp = work.join(format!("tmp-{slug}"));
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&tmp)?;
    let mut cmd = Command::new("timeout");
    cmd.args(["120", "sh"])
        .arg(root.join("install.sh"))
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env("AUTOGPT_SHIM_BASE_URL", url)
        .env("AUTOGPT_SHIM_PUBKEY", key.to_base64())
        .env_remove("AUTOGPT_SHIM_INSTALL_DIR")
        .env_remove("AUTOGPT_SHIM_VERSION")
        .stdin(Stdio::null());
    if checker.is_empty() {
        cmd.env_remove("AUTOGPT_SHIM_VERIFIER");
    } else {
        cmd.env("AUTOGPT_SHIM_VERIFIER", checker);
    }
    let out = cmd.output().context("cannot run sh install.sh")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let leftovers: Vec<PathBuf> = std::fs::read_dir(&tmp)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if !leftovers.is_empty() {
        bail!("{label}: install.sh left {leftovers:?} behind\n{stdout}{stderr}");
    }
    let bin = home.join(".local/bin");
    match case.refused {
        None => {
            if !out.status.success() {
                bail!(
                    "{label}: install.sh failed ({})\n{stdout}{stderr}",
                    out.status
                );
            }
            let shim = bin.join("autogpt-shim");
            let v = Command::new(&shim)
                .arg("--version")
                .output()
                .with_context(|| format!("cannot run the installed {}", shim.display()))?;
            let printed = String::from_utf8_lossy(&v.stdout);
            if !v.status.success() || !printed.contains(version) {
                bail!("{label}: the installed autogpt-shim --version printed {printed:?}");
            }
            // `doctor` from the installed binary, in the throw-away HOME, with the encrypted
            // file store (no keychain on a build machine).
            let d = Command::new(&shim)
                .arg("doctor")
                .env("HOME", &home)
                .env("AUTOGPT_SHIM_CREDENTIAL_STORE", "file")
                .env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "installer-test")
                .output()
                .with_context(|| format!("cannot run the installed {} doctor", shim.display()))?;
            let report = String::from_utf8_lossy(&d.stdout);
            if !d.status.success() || !report.contains("audit_log") {
                bail!(
                    "{label}: the installed autogpt-shim doctor failed ({}):\n{report}{}",
                    d.status,
                    String::from_utf8_lossy(&d.stderr)
                );
            }
            if !bin.join("shim-audit").is_file() {
                bail!("{label}: shim-audit was not installed");
            }
            if !stdout.contains("autogpt-shim auth") {
                bail!("{label}: install.sh did not print the next step\n{stdout}");
            }
            Ok(format!(
                "{label:<44} installed; `autogpt-shim --version` = {}; `doctor` passed",
                printed.trim()
            ))
        }
        Some(expected) => {
            if out.status.success() {
                bail!("{label}: install.sh accepted it\n{stdout}{stderr}");
            }
            if !stderr.contains(expected) || !stderr.contains("nothing was installed") {
                bail!("{label}: install.sh failed without saying {expected:?}:\n{stdout}{stderr}");
            }
            if home.join(".local").exists() {
                bail!("{label}: install.sh refused but created {}", bin.display());
            }
            let first = stderr.lines().next().unwrap_or_default();
            Ok(format!("{label:<44} refused: {first}"))
        }
    }
}
