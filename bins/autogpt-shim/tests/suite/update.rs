//! `autogpt-shim update` through a copy of the real binary, against `python3 -m http.server`
//! on 127.0.0.1 serving a signed dist-like folder this test makes (a real tar.gz, a real
//! minisign signature made with a throw-away key through `shim-release`).
//!
//! The debug binary trusts that key through `AUTOGPT_SHIM_UPDATE_TEST_KEY` and pretends an
//! older version through `AUTOGPT_SHIM_UPDATE_TEST_VERSION`; both variables are compiled out
//! of release builds (`#[cfg(debug_assertions)]` in `commands/update.rs`).
//! Unix only: the Windows path (zip, rename aside) did not run here.

use std::io::BufRead;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;

use shim_platform_peer::PeerConfig;
use shim_release::SecretKey;

use super::harness::Env;
use super::harness::MACHINE_ID;
use super::harness::PASSPHRASE;
use super::harness::PLATFORM_URL;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MARKER: &[u8] = b"\nautogpt-shim update test: the new binary\n";

fn target() -> String {
    // The debug binary was built for the host; the test asks it which triple it looks for.
    let out = Command::new("rustc").args(["-vV"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_owned()
}

fn tar_gz(stem: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        tar.append_data(&mut h, format!("{stem}/{name}"), *data)
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

fn sum_line(name: &str, data: &[u8]) -> String {
    let sum = hex::encode(ring::digest::digest(&ring::digest::SHA256, data));
    format!("{sum}  {name}\n")
}

struct Served {
    dir: PathBuf,
}

impl Served {
    fn put(&self, sums: &str, sig: &str, files: &[(&str, &[u8])]) {
        for e in std::fs::read_dir(&self.dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        std::fs::write(self.dir.join("SHA256SUMS"), sums).unwrap();
        std::fs::write(self.dir.join("SHA256SUMS.minisig"), sig).unwrap();
        for (name, data) in files {
            std::fs::write(self.dir.join(name), data).unwrap();
        }
    }
}

fn sign(k: &SecretKey, sums: &str) -> String {
    k.sign(sums.as_bytes(), "timestamp:0\tfile:SHA256SUMS\thashed")
        .unwrap()
}

fn run_update(env: &Env, inst: &Path, key: &str, pretend: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(inst.join("autogpt-shim"))
        .arg("update")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"))
        .env("XDG_STATE_HOME", env.dir.path().join("state"))
        .env("XDG_RUNTIME_DIR", env.dir.path().join("run"))
        .env("AUTOGPT_SHIM_CREDENTIAL_STORE", "file")
        .env("AUTOGPT_SHIM_FALLBACK_DIR", env.dir.path().join("creds"))
        .env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASSPHRASE)
        .env("AUTOGPT_SHIM_PLATFORM_URL", PLATFORM_URL)
        .env("AUTOGPT_SHIM_AUDIT_LOG_PATH", env.audit_log())
        .env("AUTOGPT_SHIM_MACHINE_ID", MACHINE_ID)
        .env("AUTOGPT_SHIM_UPDATE_TEST_KEY", key)
        .env("AUTOGPT_SHIM_UPDATE_TEST_VERSION", pretend)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn version_runs(inst: &Path) -> String {
    let out = Command::new(inst.join("autogpt-shim"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The happy path, then each attack refused with the old binaries intact and nothing written.
#[tokio::test]
async fn update_verifies_before_it_replaces() {
    let env = Env::with_tokens(PeerConfig::default(), false).await;
    let target = target();
    let root = env.dir.path().join("update");
    let inst = root.join("inst");
    let srv = Served {
        dir: root.join("srv"),
    };
    std::fs::create_dir_all(&inst).unwrap();
    std::fs::create_dir_all(&srv.dir).unwrap();
    let old = std::fs::read(env!("CARGO_BIN_EXE_autogpt-shim")).unwrap();
    let old_audit: &[u8] = b"#!/bin/sh\necho old shim-audit\n";
    let install_old = || {
        std::fs::write(inst.join("autogpt-shim"), &old).unwrap();
        std::fs::write(inst.join("shim-audit"), old_audit).unwrap();
        for b in ["autogpt-shim", "shim-audit"] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(inst.join(b), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    };
    install_old();
    let mut new = old.clone();
    new.extend_from_slice(MARKER);
    let new_audit: &[u8] = b"#!/bin/sh\necho new shim-audit\n";

    let key = SecretKey::generate().unwrap();
    let key_text = key.public().to_base64();
    let stem = format!("autogpt-shim-{VERSION}-{target}");
    let archive = format!("{stem}.tar.gz");
    let genuine = tar_gz(&stem, &[("autogpt-shim", &new), ("shim-audit", new_audit)]);
    let sums = sum_line(&archive, &genuine);

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
        .arg(&srv.dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .split(" port ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--base-url", url.as_str()];

    // The attacks: (name, sums, signature, served files, pretended version, expected message).
    let mut changed = genuine.clone();
    let mid = changed.len() / 2;
    changed[mid] ^= 1;
    let changed_sums = sum_line(&archive, &changed);
    let other_key = SecretKey::generate().unwrap();
    let truncated = genuine[..genuine.len() / 2].to_vec();
    let other_stem = format!("autogpt-shim-{VERSION}-aarch64-apple-darwin");
    let foreign = tar_gz(
        &other_stem,
        &[("autogpt-shim", &new), ("shim-audit", new_audit)],
    );
    let foreign_sums = sum_line(&archive, &foreign);
    let only_other = sum_line(&format!("{other_stem}.tar.gz"), &foreign);
    type Case<'a> = (
        &'a str,
        String,
        String,
        Vec<(&'a str, Vec<u8>)>,
        &'a str,
        &'a str,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "archive-one-byte-changed",
            sums.clone(),
            sign(&key, &sums),
            vec![(archive.as_str(), changed.clone())],
            "0.0.1",
            "does not match its signed SHA-256",
        ),
        (
            "sums-changed-to-match",
            changed_sums.clone(),
            sign(&key, &sums),
            vec![(archive.as_str(), changed.clone())],
            "0.0.1",
            "signature of SHA256SUMS is not valid",
        ),
        (
            "signed-by-another-key",
            changed_sums.clone(),
            sign(&other_key, &changed_sums),
            vec![(archive.as_str(), changed.clone())],
            "0.0.1",
            "signature of SHA256SUMS is not valid",
        ),
        (
            "truncated-download",
            sums.clone(),
            sign(&key, &sums),
            vec![(archive.as_str(), truncated)],
            "0.0.1",
            "does not match its signed SHA-256",
        ),
        (
            "older-version-offered",
            sums.clone(),
            sign(&key, &sums),
            vec![(archive.as_str(), genuine.clone())],
            "999.0.0",
            "older than this 999.0.0",
        ),
        (
            "archive-of-another-platform-signed",
            foreign_sums.clone(),
            sign(&key, &foreign_sums),
            vec![(archive.as_str(), foreign.clone())],
            "0.0.1",
            "cannot unpack",
        ),
        (
            "no-archive-for-this-platform",
            only_other.clone(),
            sign(&key, &only_other),
            vec![],
            "0.0.1",
            "this release has no archive for",
        ),
    ];
    let audit_before = std::fs::read(env.audit_log()).unwrap_or_default();
    for (name, s, sig, files, pretend, expected) in &cases {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(n, d)| (*n, d.as_slice())).collect();
        srv.put(s, sig, &files);
        let (ok, text) = run_update(&env, &inst, &key_text, pretend, &args);
        assert!(!ok, "{name}: accepted:\n{text}");
        assert!(text.contains(expected), "{name}: {text}");
        assert_eq!(
            std::fs::read(inst.join("autogpt-shim")).unwrap(),
            old,
            "{name}"
        );
        assert_eq!(
            std::fs::read(inst.join("shim-audit")).unwrap(),
            old_audit,
            "{name}"
        );
        let left: Vec<_> = std::fs::read_dir(&inst).unwrap().collect();
        assert_eq!(left.len(), 2, "{name}: something left behind");
        assert!(version_runs(&inst).contains(VERSION), "{name}");
        assert_eq!(
            std::fs::read(env.audit_log()).unwrap_or_default(),
            audit_before,
            "{name}: audit log changed"
        );
        eprintln!("{name}: refused");
    }

    // A build that trusts no key refuses (fail closed): an empty override is not a key.
    srv.put(&sums, &sign(&key, &sums), &[(&archive, &genuine)]);
    let (ok, text) = run_update(&env, &inst, "", "0.0.1", &args);
    assert!(!ok && text.contains("trusts no release key"), "{text}");
    assert!(std::fs::read(inst.join("autogpt-shim")).unwrap() == old);

    // --check only reports.
    let (ok, text) = run_update(
        &env,
        &inst,
        &key_text,
        "0.0.1",
        &["--check", "--base-url", &url],
    );
    assert!(ok, "{text}");
    assert!(text.contains(&format!("available: {VERSION}")), "{text}");
    assert!(std::fs::read(inst.join("autogpt-shim")).unwrap() == old);

    // The happy path.
    let (ok, text) = run_update(&env, &inst, &key_text, "0.0.1", &args);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("0.0.1 -> {VERSION}")), "{text}");
    let installed = std::fs::read(inst.join("autogpt-shim")).unwrap();
    assert!(
        installed == new,
        "installed {} bytes, new {} bytes, old {} bytes; {:?}",
        installed.len(),
        new.len(),
        old.len(),
        std::fs::read_dir(&inst)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect::<Vec<_>>()
    );
    assert!(std::fs::read(inst.join("shim-audit")).unwrap() == new_audit);
    assert!(version_runs(&inst).contains(VERSION));
    let log = String::from_utf8(std::fs::read(env.audit_log()).unwrap()).unwrap();
    assert!(log.contains("SHIM_UPDATED"), "{log}");
    let _ = server.kill();
    let _ = server.wait();
}
