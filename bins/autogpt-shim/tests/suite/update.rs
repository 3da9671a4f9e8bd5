//! `autogpt-shim update` through a copy of the real binary, against a small HTTP server on
//! 127.0.0.1 (in this test) serving a signed dist-like folder this test makes (a real
//! tar.gz, or zip on Windows, and a real minisign signature made with a throw-away key
//! through `shim-release`).
//!
//! The debug binary trusts that key through `AUTOGPT_SHIM_UPDATE_TEST_KEY` and pretends an
//! older version through `AUTOGPT_SHIM_UPDATE_TEST_VERSION`; both variables are compiled out
//! of release builds (`#[cfg(debug_assertions)]` in `commands/update.rs`). On Windows (under
//! Wine in CI) the running-exe rename of the Windows path runs too.

use std::path::Path;
use std::path::PathBuf;

use shim_platform_peer::PeerConfig;
use shim_release::SecretKey;

use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use super::harness::Env;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MARKER: &[u8] = b"\nautogpt-shim update test: the new binary\n";

/// The binaries' file names on this OS.
fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

/// The release archive of `files` under `stem/`: a zip on Windows.
#[cfg(windows)]
fn archive_of(stem: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in files {
        zip.start_file(
            format!("{stem}/{name}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        std::io::Write::write_all(&mut zip, data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// The release archive of `files` under `stem/`: a tar.gz elsewhere.
#[cfg(not(windows))]
fn archive_of(stem: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
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

/// The folder the test's HTTP server serves (GET of a file name; 404 otherwise).
struct Served {
    dir: PathBuf,
}

/// A one-request-per-connection HTTP/1.0 file server on 127.0.0.1 for `dir`; its port.
async fn serve(dir: PathBuf) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let dir = dir.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&req);
                let path = text.split_whitespace().nth(1).unwrap_or("/");
                let name = path.trim_start_matches('/');
                let body = (!name.contains('/') && !name.contains(".."))
                    .then(|| std::fs::read(dir.join(name)).ok())
                    .flatten();
                let head = match &body {
                    Some(b) => format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        b.len()
                    ),
                    None => {
                        "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_owned()
                    }
                };
                let _ = s.write_all(head.as_bytes()).await;
                if let Some(b) = body {
                    let _ = s.write_all(&b).await;
                }
                let _ = s.shutdown().await;
            });
        }
    });
    port
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

async fn run_update(
    env: &Env,
    inst: &Path,
    key: &str,
    pretend: &str,
    args: &[&str],
) -> (bool, String) {
    let mut all = vec!["update"];
    all.extend_from_slice(args);
    let out = env
        .command_of(&inst.join(exe("autogpt-shim")), &all)
        .env("AUTOGPT_SHIM_UPDATE_TEST_KEY", key)
        .env("AUTOGPT_SHIM_UPDATE_TEST_VERSION", pretend)
        .output()
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn version_runs(inst: &Path) -> String {
    let out = std::process::Command::new(inst.join(exe("autogpt-shim")))
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
    let target = shim_daemon::commands::update::TARGET;
    let (shim, audit) = (exe("autogpt-shim"), exe("shim-audit"));
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
        std::fs::write(inst.join(&shim), &old).unwrap();
        std::fs::write(inst.join(&audit), old_audit).unwrap();
        #[cfg(unix)]
        for b in [&shim, &audit] {
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
    let ext = if cfg!(windows) { "zip" } else { "tar.gz" };
    let archive = format!("{stem}.{ext}");
    let genuine = archive_of(&stem, &[(&shim, &new), (&audit, new_audit)]);
    let sums = sum_line(&archive, &genuine);

    let port = serve(srv.dir.clone()).await;
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--base-url", url.as_str()];

    // The attacks: (name, sums, signature, served files, pretended version, expected message).
    // They serve a small archive (a stand-in binary that is never run): each refusal comes
    // before anything is installed, and the real binary is hundreds of MB in a debug build
    // (under Wine each download and check of it took 15 s).
    let small_new: &[u8] = b"a stand-in autogpt-shim that is never run\n";
    let genuine_full = genuine;
    let genuine = archive_of(&stem, &[(&shim, small_new), (&audit, new_audit)]);
    let full_sums = sums;
    let sums = sum_line(&archive, &genuine);
    let mut changed = genuine.clone();
    let mid = changed.len() / 2;
    changed[mid] ^= 1;
    let changed_sums = sum_line(&archive, &changed);
    let other_key = SecretKey::generate().unwrap();
    let truncated = genuine[..genuine.len() / 2].to_vec();
    let other_stem = format!("autogpt-shim-{VERSION}-aarch64-apple-darwin");
    let foreign = archive_of(&other_stem, &[(&shim, small_new), (&audit, new_audit)]);
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
        let (ok, text) = run_update(&env, &inst, &key_text, pretend, &args).await;
        assert!(!ok, "{name}: accepted:\n{text}");
        assert!(text.contains(expected), "{name}: {text}");
        assert_eq!(std::fs::read(inst.join(&shim)).unwrap(), old, "{name}");
        assert_eq!(
            std::fs::read(inst.join(&audit)).unwrap(),
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

    let (genuine, sums) = (genuine_full, full_sums);

    // A build that trusts no key refuses (fail closed): an empty override is not a key.
    srv.put(&sums, &sign(&key, &sums), &[(&archive, &genuine)]);
    let (ok, text) = run_update(&env, &inst, "", "0.0.1", &args).await;
    assert!(!ok && text.contains("trusts no release key"), "{text}");
    assert!(std::fs::read(inst.join(&shim)).unwrap() == old);

    // --check only reports.
    let (ok, text) = run_update(
        &env,
        &inst,
        &key_text,
        "0.0.1",
        &["--check", "--base-url", &url],
    )
    .await;
    assert!(ok, "{text}");
    assert!(text.contains(&format!("available: {VERSION}")), "{text}");
    assert!(std::fs::read(inst.join(&shim)).unwrap() == old);

    // The happy path.
    let (ok, text) = run_update(&env, &inst, &key_text, "0.0.1", &args).await;
    assert!(ok, "{text}");
    assert!(text.contains(&format!("0.0.1 -> {VERSION}")), "{text}");
    let installed = std::fs::read(inst.join(&shim)).unwrap();
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
    assert!(std::fs::read(inst.join(&audit)).unwrap() == new_audit);
    assert!(version_runs(&inst).contains(VERSION));
    let log = String::from_utf8(std::fs::read(env.audit_log()).unwrap()).unwrap();
    assert!(log.contains("SHIM_UPDATED"), "{log}");
}
