//! The audit commands through the real binary, with snapshots of human and JSON output.

use super::common::*;
use crate::snap;

#[test]
fn verify_clean_text_and_json() {
    let s = Sandbox::new();
    s.write_sample();
    let k = s.key_file.display().to_string();
    let o = s.run(&["verify", "--key-file", &k]);
    assert_eq!(o.code, 0);
    snap!(s, "verify_clean_text", render(&o));
    let o = s.run(&["verify", "--key-file", &k, "--json"]);
    assert_eq!(o.code, 0);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["last_seq"], 5);
    snap!(s, "verify_clean_json", o.stdout);
}

#[test]
fn verify_reports_violations_text_and_json() {
    let s = Sandbox::new();
    s.write_sample();
    let mut l = s.lines(&s.log);
    l[2] = l[2].replace("\"size_bytes_returned\": 42", "\"size_bytes_returned\": 43");
    l.remove(3);
    s.write_lines(&s.log, &l);
    let k = s.key_file.display().to_string();
    let o = s.run(&["verify", "--key-file", &k]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("[hmac_mismatch] seq=3 line=3"),
        "{}",
        o.stdout
    );
    snap!(s, "verify_violations_text", render(&o));
    let o = s.run(&["verify", "--key-file", &k, "--json"]);
    assert_eq!(o.code, 1);
    snap!(s, "verify_violations_json", o.stdout);
}

#[test]
fn verify_key_from_stdin_and_other_file() {
    let s = Sandbox::new();
    s.write_sample();
    let other = s.dir.path().join("other.log");
    std::fs::copy(&s.log, &other).unwrap();
    let o = s.run_with_stdin(
        &[
            "verify",
            "--file",
            &other.display().to_string(),
            "--key-file",
            "-",
        ],
        &format!("\n{KEY_HEX}  \n"),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "other.log: OK\n");
}

#[test]
fn verify_all_with_rotation_and_a_missing_segment() {
    let s = Sandbox::new();
    let log = s.writer();
    for _ in 0..3 {
        log.append_blocking(shim_audit::AuditEvent::new("TOKEN_REFRESHED"))
            .unwrap();
        log.rotate_blocking(shim_audit::RotateReason::Explicit)
            .unwrap();
    }
    drop(log);
    let k = s.key_file.display().to_string();
    let o = s.run(&["verify-all", "--key-file", &k]);
    assert_eq!(o.code, 0, "{}", render(&o));
    snap!(s, "verify_all_clean", render(&o));
    let rotated = shim_audit::files::list_rotated(&s.log).unwrap();
    std::fs::remove_file(&rotated[1]).unwrap();
    let o = s.run(&["verify-all", "--key-file", &k]);
    assert_eq!(o.code, 1);
    snap!(s, "verify_all_missing_segment", render(&o));
    let o = s.run(&["verify-all", "--key-file", &k, "--json"]);
    assert_eq!(o.code, 1);
    snap!(s, "verify_all_missing_segment_json", o.stdout);
}

#[test]
fn verify_all_without_logs() {
    let s = Sandbox::new();
    let o = s.run(&[
        "verify-all",
        "--key-file",
        &s.key_file.display().to_string(),
    ]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, "No audit logs found.\n");
}

#[test]
fn tail_and_show() {
    let s = Sandbox::new();
    s.write_sample();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&s.log)
        .unwrap();
    std::io::Write::write_all(&mut f, b"\nthis is not json\n").unwrap();
    drop(f);
    let o = s.run(&["tail", "--no-follow"]);
    assert_eq!(o.code, 0);
    snap!(s, "tail_no_follow", render(&o));
    let o = s.run(&["show", "3"]);
    assert_eq!(o.code, 0);
    snap!(s, "show_3", render(&o));
    let o = s.run(&["show", "99"]);
    assert_eq!(o.code, 1);
    snap!(s, "show_missing", render(&o));
}

#[test]
fn missing_log_usage_errors_and_prune() {
    let s = Sandbox::new();
    for args in [
        vec!["tail", "--no-follow"],
        vec!["verify", "--key-file", "x"],
        vec!["rotate"],
    ] {
        let o = s.run(&args);
        assert_eq!(o.code, 1, "{args:?}");
        assert!(o.stderr.contains("Audit log not found: "), "{}", o.stderr);
    }
    let o = s.run(&["show", "abc"]);
    assert_eq!(o.code, 2);
    let o = s.run(&["frobnicate"]);
    assert_eq!(o.code, 2);
    let o = s.run(&["prune", "--older-than", "1.5d"]);
    assert_eq!(o.code, 2);
    snap!(s, "prune_bad_duration", render(&o));
    let o = s.run(&["prune"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, "No rotated audit files to prune.\n");
}

#[test]
fn prune_deletes_only_old_rotated_files() {
    let s = Sandbox::new();
    let log = s.writer();
    log.append_blocking(shim_audit::AuditEvent::new("TOKEN_REFRESHED"))
        .unwrap();
    log.rotate_blocking(shim_audit::RotateReason::Explicit)
        .unwrap();
    log.append_blocking(shim_audit::AuditEvent::new("TOKEN_REFRESHED"))
        .unwrap();
    drop(log);
    let o = s.run(&["prune", "--older-than", "1d"]);
    assert_eq!(o.stdout, "Pruned 0 of 1 rotated files.\n");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let o = s.run(&["prune", "--older-than", "1S"]);
    assert_eq!(o.code, 0);
    snap!(s, "prune_one", render(&o));
    assert!(s.log.exists());
    assert!(shim_audit::files::list_rotated(&s.log).unwrap().is_empty());
}

#[test]
fn rotate_empty_locked_and_done() {
    let mut s = Sandbox::new();
    // The key comes from the store for rotate: put it in the encrypted file.
    let state = s.dir.path().join("state");
    let store = shim_auth::EncryptedFileStore::with_params(
        &state,
        shim_auth::Secret::new("pass phrase"),
        shim_auth::KdfParams::MIN_ACCEPTED,
    )
    .unwrap();
    shim_auth::CredentialStore::set(&store, "audit_key", &shim_auth::Secret::new(KEY_HEX)).unwrap();
    s.set_env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "pass phrase");
    std::fs::create_dir_all(s.log.parent().unwrap()).unwrap();
    std::fs::write(&s.log, b"").unwrap();
    let o = s.run(&["rotate"]);
    assert_eq!(o.code, 0, "{}", render(&o));
    assert_eq!(o.stdout, "Audit log was empty; nothing to rotate.\n");
    let log = s.writer();
    log.append_blocking(shim_audit::AuditEvent::new("TOKEN_REFRESHED"))
        .unwrap();
    let o = s.run(&["rotate"]);
    assert_eq!(o.code, 1);
    snap!(s, "rotate_locked", render(&o));
    drop(log);
    let o = s.run(&["rotate"]);
    assert_eq!(o.code, 0, "{}", render(&o));
    snap!(s, "rotate_done", render(&o));
    let o = s.run(&["verify-all"]);
    assert_eq!(o.code, 0, "{}", render(&o));
}

#[test]
fn export_and_export_key() {
    let mut s = Sandbox::new();
    let state = s.dir.path().join("state");
    let store = shim_auth::EncryptedFileStore::with_params(
        &state,
        shim_auth::Secret::new("pw"),
        shim_auth::KdfParams::MIN_ACCEPTED,
    )
    .unwrap();
    shim_auth::CredentialStore::set(&store, "audit_key", &shim_auth::Secret::new(KEY_HEX)).unwrap();
    s.set_env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "pw");
    let o = s.run(&["export"]);
    assert_eq!(o.code, 1);
    snap!(s, "export_nothing", render(&o));
    s.write_sample();
    let out = s.dir.path().join("bundle.zip");
    let o = s.run(&["export", "--output", &out.display().to_string()]);
    assert_eq!(o.code, 0, "{}", render(&o));
    snap!(s, "export_done", render(&o));
    assert!(std::fs::read(&out).unwrap().starts_with(b"PK\x03\x04"));
    let o = s.run(&["export-key"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout.trim(), KEY_HEX);
    assert!(o.stderr.contains("forge"));
    let kf = s.dir.path().join("exported.key");
    let o = s.run(&["export-key", "--output", &kf.display().to_string()]);
    assert_eq!(o.code, 0);
    assert!(!o.stdout.contains(KEY_HEX));
    assert_eq!(std::fs::read_to_string(&kf).unwrap().trim(), KEY_HEX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&kf).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let o = s.run(&["export-key", "--output", &kf.display().to_string()]);
    assert_eq!(o.code, 1);
}

#[test]
fn colour_is_off_when_not_a_terminal() {
    let mut s = Sandbox::new();
    s.env.retain(|(k, _)| k != "NO_COLOR");
    s.write_sample();
    let o = s.run(&["verify", "--key-file", &s.key_file.display().to_string()]);
    assert!(!o.stdout.contains('\x1b'));
}

#[test]
fn tail_follows_appends_and_rotation() {
    use std::io::BufRead;
    use std::time::Duration;
    let s = Sandbox::new();
    let log = s.writer();
    log.append_blocking(shim_audit::AuditEvent::new("SHIM_START"))
        .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_shim-audit"))
        .env_clear()
        .env("NO_COLOR", "1")
        .arg("--log-path")
        .arg(&s.log)
        .arg("tail")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let op = line.split_whitespace().nth(2).unwrap_or("").to_owned();
            if tx.send(op).is_err() {
                break;
            }
        }
    });
    let wait = |want: &str| {
        let got = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        assert_eq!(got, want);
    };
    wait("SHIM_START");
    log.append_blocking(shim_audit::AuditEvent::new("WS_CONNECTED"))
        .unwrap();
    wait("WS_CONNECTED");
    // [H-18]: after a rotation tail continues with the new current file.
    log.rotate_blocking(shim_audit::RotateReason::Explicit)
        .unwrap();
    log.append_blocking(shim_audit::AuditEvent::new("TOKEN_REFRESHED"))
        .unwrap();
    wait("AUDIT_ROTATED");
    wait("TOKEN_REFRESHED");
    child.kill().unwrap();
    let _ = child.wait();
}
