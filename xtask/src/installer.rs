//! `cargo xtask installer-test` (a `ci` step after `dist --throwaway-key`): `install.sh`
//! against a real HTTP server on 127.0.0.1 (`python3 -m http.server`) that serves copies of
//! the real `target/dist`. The genuine release installs into a throw-away HOME and the
//! installed `autogpt-shim --version` and `doctor` run; each attack is refused with a clear
//! message, nothing installed and no temporary file left. Signature cases run with both of
//! the script's checkers (`minisign` and OpenSSL 3). Then install.ps1's own checker (its C#
//! source, compiled with Mono) meets the same signature attacks and a few more.
//!
//! `cargo xtask installer-test --ps1` (on Windows: the windows job of
//! `.github/workflows/native-tests.yml`) runs install.ps1 itself with Windows PowerShell
//! through the same cases, against a release folder made from this checkout's debug build.

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

/// One installer script: how it is run and where it puts the binaries.
struct Script {
    /// Its file at the root of the repository.
    file: &'static str,
    /// The platform it picks on the machine that runs the test.
    host: &'static str,
    /// The archive format of that platform's release.
    format: dist::Format,
    /// The signature checkers a signature case runs with (`AUTOGPT_SHIM_VERIFIER`).
    checkers: &'static [&'static str],
    /// The binaries' file name suffix.
    exe: &'static str,
}

/// `install.sh` on Linux x86_64 (here and in CI).
const INSTALL_SH: Script = Script {
    file: "install.sh",
    host: "x86_64-unknown-linux-gnu",
    format: dist::Format::TarGz,
    checkers: &["minisign", "openssl"],
    exe: "",
};

/// `install.ps1` on Windows x86_64 (the native workflow's runner).
const INSTALL_PS1: Script = Script {
    file: "install.ps1",
    host: "x86_64-pc-windows-gnu",
    format: dist::Format::Zip,
    checkers: &["builtin"],
    exe: ".exe",
};

impl Script {
    /// The release archive's file name for this script's platform.
    fn archive(&self, version: &str) -> String {
        let ext = match self.format {
            dist::Format::TarGz => "tar.gz",
            dist::Format::Zip => "zip",
        };
        format!("autogpt-shim-{version}-{}.{ext}", self.host)
    }

    /// Where the script installs for a user whose home (and local app data) is `home`.
    fn bin_dir(&self, home: &Path) -> PathBuf {
        match self.format {
            dist::Format::TarGz => home.join(".local/bin"),
            dist::Format::Zip => home.join("Programs").join("autogpt-shim").join("bin"),
        }
    }

    /// The command that runs the script for a user whose home is `home`, with `tmp` as the
    /// temporary folder.
    fn command(&self, root: &Path, home: &Path, tmp: &Path) -> Command {
        let script = root.join(self.file);
        match self.format {
            dist::Format::TarGz => {
                let mut cmd = Command::new("timeout");
                cmd.args(["120", "sh"])
                    .arg(script)
                    .env("HOME", home)
                    .env("TMPDIR", tmp);
                cmd
            }
            dist::Format::Zip => {
                // Windows PowerShell 5.1, which every Windows 10 and 11 has.
                let mut cmd = Command::new("powershell.exe");
                cmd.args([
                    "-NoProfile",
                    "-NonInteractive",
                    "-ExecutionPolicy",
                    "Bypass",
                    "-File",
                ])
                .arg(script)
                .env("LOCALAPPDATA", home)
                .env("TEMP", tmp)
                .env("TMP", tmp);
                cmd
            }
        }
    }
}

/// A platform whose archive is served in this one's place.
const OTHER: &str = "aarch64-unknown-linux-gnu";

/// Runs every case of install.sh, then install.ps1's checker under Mono; fails on the first
/// that does not do what it must.
pub(crate) fn installer_test(root: &Path) -> Result<()> {
    let script = &INSTALL_SH;
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        bail!("the installer test runs on x86_64 Linux (install.ps1: --ps1, on Windows)");
    }
    let target_dir = dist::default_target_dir(root);
    let dist_dir = target_dir.join("dist");
    let version = env!("CARGO_PKG_VERSION");
    let archive = script.archive(version);
    let key_dir = dist::throwaway_key_dir(&target_dir);
    let key_text = std::fs::read_to_string(key_dir.join("throwaway.key")).with_context(|| {
        format!(
            "no throw-away key in {}\nhint: cargo xtask dist --target {} --profile dist-ci --throwaway-key",
            key_dir.display(),
            script.host
        )
    })?;
    let key = SecretKey::parse(&key_text)?;
    let genuine = std::fs::read(dist_dir.join(&archive))
        .with_context(|| format!("no {archive} in {}", dist_dir.display()))?;
    let work = dist::tempdir_in(&target_dir, "installer-test")?;
    serve_and_run(root, script, &work, &archive, &genuine, &key, version)?;
    let lines = ps1_checker_test(root, &work.join("srv"), &key)?;
    let _ = std::fs::remove_dir_all(&work);
    for l in &lines {
        println!("xtask:   {l}");
    }
    println!(
        "xtask: install.ps1's signature checker (C# under Mono): {} cases as expected",
        lines.len()
    );
    Ok(())
}

/// `installer-test --ps1`: install.ps1 through every case, on Windows, from a release folder
/// made of this checkout's debug build (zipped as the release is) and a key made here.
pub(crate) fn installer_test_ps1(root: &Path) -> Result<()> {
    let script = &INSTALL_PS1;
    if !cfg!(windows) {
        bail!("install.ps1 is tested on Windows (the native workflow's windows job)");
    }
    let status = Command::new(crate::cargo_bin())
        .args(["build", "-p", "autogpt-shim", "-p", "shim-audit-cli"])
        .current_dir(root)
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!("cargo build of the binaries failed ({status})");
    }
    let target_dir = dist::default_target_dir(root);
    let version = env!("CARGO_PKG_VERSION");
    let archive = script.archive(version);
    let work = dist::tempdir_in(&target_dir, "installer-test-ps1")?;
    let mut files = Vec::new();
    for bin in ["autogpt-shim", "shim-audit"] {
        let exe = format!("{bin}{}", script.exe);
        let path = target_dir.join("debug").join(&exe);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        files.push((exe, bytes, true));
    }
    let stem = archive.trim_end_matches(".zip");
    let zip = dist::write_archive(&work, stem, script.format, &files)?;
    let genuine = std::fs::read(&zip)?;
    let key = SecretKey::generate()?;
    serve_and_run(root, script, &work, &archive, &genuine, &key, version)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Serves one folder per case from `work/srv` and runs `script` on each.
fn serve_and_run(
    root: &Path,
    script: &Script,
    work: &Path,
    archive: &str,
    genuine: &[u8],
    key: &SecretKey,
    version: &str,
) -> Result<()> {
    let srv = work.join("srv");
    prepare(&srv, archive, genuine, key, version)?;

    let python = if cfg!(windows) { "python" } else { "python3" };
    let mut server = Command::new(python)
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
                script.checkers
            } else {
                &[""]
            };
            for checker in checkers {
                let url = format!("http://127.0.0.1:{port}/{}", case.name);
                lines.push(run_case(
                    root,
                    script,
                    work,
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
    for l in &lines {
        println!("xtask:   {l}");
    }
    println!("xtask: {}: {} runs as expected", script.file, lines.len());
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

/// Runs `script` for one case and checks the outcome; returns a summary line.
#[allow(clippy::too_many_arguments)]
fn run_case(
    root: &Path,
    script: &Script,
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
    let file = script.file;
    let mut cmd = script.command(root, &home, &tmp);
    cmd.env("AUTOGPT_SHIM_BASE_URL", url)
        .env("AUTOGPT_SHIM_PUBKEY", key.to_base64())
        .env_remove("AUTOGPT_SHIM_INSTALL_DIR")
        .env_remove("AUTOGPT_SHIM_VERSION")
        .stdin(Stdio::null());
    if checker.is_empty() {
        cmd.env_remove("AUTOGPT_SHIM_VERIFIER");
    } else {
        cmd.env("AUTOGPT_SHIM_VERIFIER", checker);
    }
    let out = cmd.output().with_context(|| format!("cannot run {file}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let leftovers: Vec<PathBuf> = std::fs::read_dir(&tmp)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if !leftovers.is_empty() {
        bail!("{label}: {file} left {leftovers:?} behind\n{stdout}{stderr}");
    }
    let bin = script.bin_dir(&home);
    match case.refused {
        None => {
            if !out.status.success() {
                bail!("{label}: {file} failed ({})\n{stdout}{stderr}", out.status);
            }
            let shim = bin.join(format!("autogpt-shim{}", script.exe));
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
            if !bin.join(format!("shim-audit{}", script.exe)).is_file() {
                bail!("{label}: shim-audit was not installed");
            }
            if !stdout.contains("autogpt-shim auth") {
                bail!("{label}: {file} did not print the next step\n{stdout}");
            }
            Ok(format!(
                "{label:<44} installed; `autogpt-shim --version` = {}; `doctor` passed",
                printed.trim()
            ))
        }
        Some(expected) => {
            if out.status.success() {
                bail!("{label}: {file} accepted it\n{stdout}{stderr}");
            }
            if !stderr.contains(expected) || !stderr.contains("nothing was installed") {
                bail!("{label}: {file} failed without saying {expected:?}:\n{stdout}{stderr}");
            }
            let first_made = match script.format {
                dist::Format::TarGz => home.join(".local"),
                dist::Format::Zip => home.join("Programs"),
            };
            if first_made.exists() {
                bail!("{label}: {file} refused but created {}", bin.display());
            }
            let first = stderr.lines().next().unwrap_or_default();
            Ok(format!("{label:<44} refused: {first}"))
        }
    }
}

/// What install.ps1's checker must answer for each signed folder served to the scripts
/// (`None`: verified; `Some(text)`: refused with `text` in its reason).
const CHECKER_CASES: &[(&str, Option<&str>)] = &[
    ("genuine", None),
    // Two lines of sums: more than one BLAKE2b block.
    ("archive-of-another-platform", None),
    (
        "sums-changed-to-match",
        Some("signature verification failed"),
    ),
    ("signed-by-another-key", Some("signed by another key")),
    ("signature-truncated", Some("malformed")),
];

/// The C# source of install.ps1's signature checker: the lines between `$VerifierSource =
/// @'` and `'@`.
pub(crate) fn ps1_checker_source(script: &str) -> Result<String> {
    let mut lines = script.lines();
    lines
        .by_ref()
        .find(|l| l.trim_end() == "$VerifierSource = @'")
        .context("install.ps1 has no `$VerifierSource = @'` line")?;
    let mut source = String::new();
    for l in lines {
        if l.trim_end() == "'@" {
            return Ok(source);
        }
        source.push_str(l);
        source.push('\n');
    }
    bail!("install.ps1's `$VerifierSource` here-string has no closing `'@`")
}

/// The program the checker is compiled into: `verify.exe KEY FILE SIGNATURE` prints
/// `verified` or the reason, as install.ps1 would report it.
const CHECKER_HARNESS: &str = r#"
public static class Harness
{
    public static int Main(string[] args)
    {
        string why = AutogptShimInstall.Minisign.Verify(args[0],
            System.IO.File.ReadAllBytes(args[1]), System.IO.File.ReadAllText(args[2]));
        System.Console.WriteLine(why ?? "verified");
        return why == null ? 0 : 1;
    }
}
"#;

/// install.ps1's checker, compiled from the script with Mono's C# compiler at the language
/// version of Windows PowerShell 5.1's `Add-Type` (C# 5), on the signature cases served in
/// `srv` and on more made here: a changed trusted comment, a changed signature byte, and
/// files of 0, 128 (one block exactly) and 1,000 bytes.
fn ps1_checker_test(root: &Path, srv: &Path, key: &SecretKey) -> Result<Vec<String>> {
    let script =
        std::fs::read_to_string(root.join("install.ps1")).context("cannot read install.ps1")?;
    let dir = srv.with_file_name("ps1-checker");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("checker.cs"), ps1_checker_source(&script)?)?;
    std::fs::write(dir.join("harness.cs"), CHECKER_HARNESS)?;
    let out = Command::new("mcs")
        .args([
            "-langversion:5",
            "-r:System.Numerics.dll",
            "-out:verify.exe",
            "checker.cs",
            "harness.cs",
        ])
        .current_dir(&dir)
        .output()
        .context("cannot run mcs\nhint: apt-get install mono-mcs libmono-system-numerics4.0-cil (cargo xtask setup)")?;
    if !out.status.success() {
        bail!(
            "mcs cannot compile install.ps1's checker:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let mut cases: Vec<(String, PathBuf, PathBuf, Option<&str>)> = CHECKER_CASES
        .iter()
        .map(|(name, want)| {
            let d = srv.join(name);
            (
                (*name).to_owned(),
                d.join("SHA256SUMS"),
                d.join("SHA256SUMS.minisig"),
                *want,
            )
        })
        .collect();
    let comment = "timestamp:0\tfile:SHA256SUMS\thashed";
    let mut made = |name: &str, data: &[u8], sig: String, want: Option<&'static str>| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join("data"), data)?;
        std::fs::write(d.join("data.minisig"), sig)?;
        cases.push((
            name.to_owned(),
            d.join("data"),
            d.join("data.minisig"),
            want,
        ));
        anyhow::Ok(())
    };
    for size in [0, 128, 1000] {
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        made(
            &format!("{size}-bytes"),
            &data,
            key.sign(&data, comment)?,
            None,
        )?;
    }
    let data = b"0123456789abcdef  autogpt-shim-0.0.0-x86_64-pc-windows-gnu.zip\n";
    let genuine = key.sign(data, comment)?;
    made(
        "trusted-comment-changed",
        data,
        genuine.replace("file:SHA256SUMS", "file:SHA256SUMX"),
        Some("trusted comment verification failed"),
    )?;
    let mut lines: Vec<String> = genuine.lines().map(str::to_owned).collect();
    let sig = lines.get_mut(1).context("a signature has four lines")?;
    // A character in the middle of the base64 signature line: a byte of R, not of the key id.
    let mid = sig.len() / 2;
    let swapped = if sig.as_bytes()[mid] == b'A' {
        "B"
    } else {
        "A"
    };
    sig.replace_range(mid..=mid, swapped);
    made(
        "signature-byte-changed",
        data,
        lines.join("\n") + "\n",
        Some("signature verification failed"),
    )?;

    let public = key.public().to_base64();
    let mut results = Vec::new();
    for (name, file, sig, want) in &cases {
        let out = Command::new("mono")
            .arg(dir.join("verify.exe"))
            .arg(&public)
            .arg(file)
            .arg(sig)
            .output()
            .context("cannot run mono")?;
        let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        match want {
            None if out.status.success() && said == "verified" => {}
            Some(reason) if !out.status.success() && said.contains(reason) => {}
            _ => bail!(
                "install.ps1's checker on {name}: expected {}, got {said:?} ({}){}",
                want.map_or("verified".to_owned(), |r| format!("a refusal with {r:?}")),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
        results.push(format!("{name:<44} {said}"));
    }
    Ok(results)
}
