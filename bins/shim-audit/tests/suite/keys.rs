//! Key loading through the credential store: missing, corrupt, wrong passphrase. Each gets a
//! clear message and exit 2, nothing is overwritten, and no output contains a secret.

use super::common::*;
use crate::snap;

const PASS: &str = "correct horse battery staple";
const TOKEN_A: &str = "at-SECRET-e2b9d1c3";
const TOKEN_R: &str = "rt-SECRET-77aa0b91";

fn store(s: &Sandbox, pass: &str) -> shim_auth::EncryptedFileStore {
    shim_auth::EncryptedFileStore::with_params(
        &s.dir.path().join("state"),
        shim_auth::Secret::new(pass),
        shim_auth::KdfParams::MIN_ACCEPTED,
    )
    .unwrap()
}

#[test]
fn no_key_stored_is_exit_2_and_nothing_is_created() {
    let mut s = Sandbox::new();
    s.write_sample();
    s.set_env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASS);
    let o = s.run(&["verify"]);
    assert_eq!(o.code, 2);
    snap!(s, "verify_no_key", render(&o));
    assert!(!s.dir.path().join("state").join("tokens.enc").exists());
    // Without the passphrase the file backend cannot even be opened.
    s.env
        .retain(|(k, _)| k != "AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE");
    let o = s.run(&["verify-all"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr
            .contains("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE is not set"),
        "{}",
        o.stderr
    );
}

#[test]
fn wrong_passphrase_leaves_tokens_enc_byte_identical_and_leaks_nothing() {
    let mut s = Sandbox::new();
    s.write_sample();
    let st = store(&s, PASS);
    use shim_auth::CredentialStore;
    st.set("audit_key", &shim_auth::Secret::new(KEY_HEX))
        .unwrap();
    st.set(
        "access_token/autogpt-local-executor@https://platform.autogpt.net",
        &shim_auth::Secret::new(TOKEN_A),
    )
    .unwrap();
    st.set(
        "refresh_token/autogpt-local-executor@https://platform.autogpt.net",
        &shim_auth::Secret::new(TOKEN_R),
    )
    .unwrap();
    let file = s.dir.path().join("state").join("tokens.enc");
    let before = std::fs::read(&file).unwrap();

    let mut outputs = Vec::new();
    s.set_env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "wrong passphrase");
    for args in [
        vec!["verify"],
        vec!["verify-all", "--json"],
        vec!["export"],
        vec!["export-key"],
        vec!["rotate"],
    ] {
        let o = s.run(&args);
        assert_eq!(o.code, 2, "{args:?}: {}", render(&o));
        assert!(o.stderr.contains("could not decrypt the credential file (wrong AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE or corrupted file)"));
        outputs.push(o);
    }
    snap!(s, "verify_wrong_passphrase", render(&outputs[0]));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "tokens.enc must be byte-identical"
    );

    // With the right passphrase everything works; still nothing secret in the output
    // (export-key prints the key by design and is left out).
    s.set_env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASS);
    for args in [
        vec!["verify"],
        vec!["verify-all"],
        vec!["verify", "--json"],
        vec!["tail", "--no-follow"],
        vec!["show", "1"],
        vec!["rotate"],
        vec!["prune"],
    ] {
        let o = s.run(&args);
        assert!(o.code == 0, "{args:?}: {}", render(&o));
        outputs.push(o);
    }
    // A corrupted file: the same message, and it is not rewritten.
    let mut bad = before.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x01;
    std::fs::write(&file, &bad).unwrap();
    let o = s.run(&["verify"]);
    assert_eq!(o.code, 2);
    assert_eq!(std::fs::read(&file).unwrap(), bad);
    outputs.push(o);

    for o in &outputs {
        for secret in [KEY_HEX, TOKEN_A, TOKEN_R, PASS] {
            assert!(
                !o.stdout.contains(secret) && !o.stderr.contains(secret),
                "secret leaked in {}",
                render(o)
            );
        }
    }
}

#[test]
fn corrupt_stored_key_is_refused_and_kept() {
    let mut s = Sandbox::new();
    s.write_sample();
    use shim_auth::CredentialStore;
    let st = store(&s, PASS);
    st.set("audit_key", &shim_auth::Secret::new("not-hex-at-all"))
        .unwrap();
    s.set_env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASS);
    let o = s.run(&["verify"]);
    assert_eq!(o.code, 2);
    snap!(s, "verify_corrupt_key", render(&o));
    st.set("audit_key", &shim_auth::Secret::new("00112233"))
        .unwrap();
    let o = s.run(&["verify-all"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("at least 16 are required"),
        "{}",
        o.stderr
    );
    assert_eq!(st.get("audit_key").unwrap().unwrap().expose(), "00112233");
}

#[test]
fn unreadable_or_bad_key_file_is_exit_2() {
    let s = Sandbox::new();
    s.write_sample();
    let o = s.run(&["verify", "--key-file", "/nonexistent/key"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with(shim_audit::cli::EXPERIMENTAL_WARNING));
    assert!(
        o.stderr
            .contains("Could not load audit key: cannot read /nonexistent/key")
    );
    assert!(o.stderr.contains("\nhint: "));
    let bad = s.dir.path().join("bad.key");
    std::fs::write(&bad, "zz").unwrap();
    let o = s.run(&["verify", "--key-file", &bad.display().to_string()]);
    assert_eq!(o.code, 2);
}

#[test]
fn huge_record_and_non_jsonl_file() {
    let s = Sandbox::new();
    let log = s.writer();
    log.append_blocking(
        shim_audit::AuditEvent::new("EXECUTE_COMMAND")
            .details(shim_audit::Map::new().with("command", "y".repeat(6 * 1024 * 1024))),
    )
    .unwrap();
    drop(log);
    let k = s.key_file.display().to_string();
    let o = s.run(&["verify", "--key-file", &k]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let junk = s.dir.path().join("junk.bin");
    std::fs::write(&junk, [0u8, 159, 146, 150, 10, 1, 2]).unwrap();
    let o = s.run(&[
        "verify",
        "--file",
        &junk.display().to_string(),
        "--key-file",
        &k,
    ]);
    assert_eq!(o.code, 1);
    snap!(s, "verify_not_jsonl", render(&o));
}
