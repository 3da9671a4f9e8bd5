//! Credential Manager names of AUDIT_AUTH_CLI.md 3.8, against the real Credential Manager
//! API (run under Wine by `cargo xtask wine-test`).

use std::collections::HashMap;

use super::*;

/// A service name of this test run, so runs never see each other's items.
fn service(tag: &str) -> String {
    format!("autogpt-shim-test-{tag}-{}", std::process::id())
}

/// The credential with exactly this target name, whatever its service and user.
fn by_target(service: &str, target: &str) -> keyring_core::Entry {
    let m = HashMap::from([("target", target)]);
    keyring_core::Entry::new_in_store_with_modifiers(
        windows::store().unwrap_or_else(|e| panic!("store: {e}")),
        service,
        "ignored",
        &m,
    )
    .unwrap_or_else(|e| panic!("entry: {e}"))
}

#[test]
fn written_with_target_account_at_service_and_username_account() {
    let svc = service("names");
    let store = KeychainStore::with_service(&svc);
    store.set("audit_key", &Secret::new("k1")).unwrap();

    let raw = by_target(&svc, &format!("audit_key@{svc}"));
    assert_eq!(raw.get_password().unwrap(), "k1");
    assert_eq!(raw.get_attributes().unwrap()["username"], "audit_key");
    // Not keyring's default name.
    assert!(matches!(
        by_target(&svc, &format!("audit_key.{svc}")).get_password(),
        Err(keyring_core::Error::NoEntry)
    ));
    assert!(store.delete("audit_key").unwrap());
    assert!(store.get("audit_key").unwrap().is_none());
}

#[test]
fn reads_a_legacy_item_whose_target_is_the_service_with_a_matching_username() {
    let svc = service("legacy");
    let legacy = by_target(&svc, &svc);
    legacy.set_password("old-refresh").unwrap();
    legacy
        .update_attributes(&HashMap::from([("username", "refresh_token")]))
        .unwrap();
    let store = KeychainStore::with_service(&svc);

    let got = store.get("refresh_token").unwrap().unwrap();
    assert_eq!(got.expose(), "old-refresh");
    // Another account does not match the legacy item's UserName.
    assert!(store.get("access_token").unwrap().is_none());
    // The new name wins over the legacy one.
    store.set("refresh_token", &Secret::new("new")).unwrap();
    assert_eq!(store.get("refresh_token").unwrap().unwrap().expose(), "new");
    // Deleting removes both.
    assert!(store.delete("refresh_token").unwrap());
    assert!(store.get("refresh_token").unwrap().is_none());
    assert!(matches!(
        by_target(&svc, &svc).get_password(),
        Err(keyring_core::Error::NoEntry)
    ));
}

/// A 3,000-character token: 6,000 bytes as UTF-16, three 2,560-byte credential blobs.
fn long_token() -> Secret {
    Secret::new("x".repeat(3000))
}

/// Beyond 16 parts of 1,280 UTF-16 code units.
fn too_long_token() -> Secret {
    Secret::new("y".repeat(16 * 1280 + 1))
}

/// The raw value of credential `target`, `None` when there is none.
fn raw(svc: &str, target: &str) -> Option<String> {
    match by_target(svc, target).get_password() {
        Ok(v) => Some(v),
        Err(keyring_core::Error::NoEntry) => None,
        Err(e) => panic!("{target}: {e}"),
    }
}

#[test]
fn a_secret_longer_than_a_credential_blob_is_stored_in_parts_and_read_back_whole() {
    let svc = service("long");
    let store = KeychainStore::with_service(&svc);
    let at = |t: &str| format!("{t}@{svc}");
    store.set("access_token", &Secret::new("old")).unwrap();
    store.set("access_token", &long_token()).unwrap();
    assert_eq!(
        store.get("access_token").unwrap().unwrap().expose(),
        long_token().expose()
    );
    // The spec's item holds the header, the parts hold the token, each within one blob.
    let head = raw(&svc, &at("access_token")).unwrap();
    assert!(head.starts_with("\0autogpt-shim-parts:v1:3:"), "{head:?}");
    let pieces: Vec<String> = (1..=3)
        .map(|i| raw(&svc, &at(&format!("access_token#part{i}"))).unwrap())
        .collect();
    assert!(pieces.iter().all(|p| p.encode_utf16().count() <= 1280));
    assert_eq!(pieces.concat(), long_token().expose());
    assert_eq!(raw(&svc, &at("access_token#part4")), None);

    // Surrogate pairs are never cut: 1,500 emoji are 3,000 UTF-16 code units.
    let emoji = "😀".repeat(1500);
    store
        .set("access_token", &Secret::new(emoji.as_str()))
        .unwrap();
    assert_eq!(store.get("access_token").unwrap().unwrap().expose(), emoji);

    // The boundary: 1,280 UTF-16 code units are one plain item; one more makes two parts.
    let edge = "é".repeat(1280);
    store
        .set("access_token", &Secret::new(edge.as_str()))
        .unwrap();
    assert_eq!(
        raw(&svc, &at("access_token")).as_deref(),
        Some(edge.as_str())
    );
    assert_eq!(
        raw(&svc, &at("access_token#part1")),
        None,
        "stale parts left"
    );
    let over = "é".repeat(1281);
    store
        .set("access_token", &Secret::new(over.as_str()))
        .unwrap();
    assert!(
        raw(&svc, &at("access_token"))
            .unwrap()
            .starts_with("\0autogpt-shim-parts:v1:2:")
    );
    assert_eq!(store.get("access_token").unwrap().unwrap().expose(), over);

    // Delete removes the header and every part.
    assert!(store.delete("access_token").unwrap());
    assert!(store.get("access_token").unwrap().is_none());
    for t in ["access_token", "access_token#part1", "access_token#part2"] {
        assert_eq!(raw(&svc, &at(t)), None, "{t} left behind");
    }
}

#[test]
fn parts_that_do_not_belong_together_are_a_damaged_credential_not_a_wrong_token() {
    let svc = service("damaged");
    let store = KeychainStore::with_service(&svc);
    let part = |i: usize| by_target(&svc, &format!("access_token#part{i}@{svc}"));
    store.set("access_token", &long_token()).unwrap();
    // A part from another save (what an interrupted save leaves).
    part(2).set_password(&"z".repeat(1280)).unwrap();
    let e = store.get("access_token").unwrap_err();
    assert!(matches!(e, CredentialError::Damaged { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("autogpt-shim auth"), "no hint: {text}");
    assert!(
        !text.contains("xxxx") && !text.contains("zzzz"),
        "leaked: {text}"
    );
    // A missing part.
    store.set("access_token", &long_token()).unwrap();
    part(3).delete_credential().unwrap();
    let e = store.get("access_token").unwrap_err();
    assert!(e.to_string().contains("a part is missing"), "{e}");
    // Saving again repairs it.
    store.set("access_token", &long_token()).unwrap();
    assert_eq!(
        store.get("access_token").unwrap().unwrap().expose(),
        long_token().expose()
    );
    assert!(store.delete("access_token").unwrap());
}

#[test]
fn a_secret_beyond_sixteen_parts_is_a_typed_error_and_nothing_is_written() {
    let svc = service("toolong");
    let store = KeychainStore::with_service(&svc);
    store.set("access_token", &Secret::new("old")).unwrap();
    let e = store.set("access_token", &too_long_token()).unwrap_err();
    match &e {
        CredentialError::TooLong {
            account,
            bytes,
            limit,
        } => {
            assert_eq!(account, "access_token");
            assert_eq!(*bytes, (16 * 1280 + 1) * 2);
            assert_eq!(*limit, 16 * 2560);
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("AUTOGPT_SHIM_CREDENTIAL_STORE=file"),
        "no hint: {text}"
    );
    assert!(!text.contains("yyyy"), "the secret leaked: {text}");
    // Not truncated, not replaced, no part written.
    assert_eq!(store.get("access_token").unwrap().unwrap().expose(), "old");
    assert_eq!(raw(&svc, &format!("access_token#part1@{svc}")), None);
    assert!(store.delete("access_token").unwrap());
}

#[test]
fn tokens_are_saved_whole_or_not_at_all() {
    let svc = service("pair");
    let store = KeychainStore::with_service(&svc);
    let pair = crate::tokens::Tokens {
        access: Some(too_long_token()),
        refresh: Some(Secret::new("short-refresh")),
    };
    let e = crate::tokens::save(&store, "dep@http://x", &pair).unwrap_err();
    assert!(matches!(e, CredentialError::TooLong { .. }), "{e:?}");
    // The short refresh token was not written either.
    assert!(
        store
            .get(&crate::account::refresh_token("dep@http://x"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn auto_mode_keeps_a_long_token_in_credential_manager() {
    // AUDIT_AUTH_CLI.md 3.8: in `auto` the backend is chosen by whether the OS store is
    // available. Credential Manager is (the probe succeeds), so `auto` selects it; a token
    // longer than one blob is kept there in parts, and nothing goes to the encrypted file
    // (splitting the pair across stores would lose it: the next reader selects the OS store).
    let dir = std::env::temp_dir().join(format!("shim-auth-auto-{}", std::process::id()));
    let store = crate::open_store(
        crate::StoreChoice::Auto,
        Some(dir.clone()),
        Some(Secret::new("pw")),
    )
    .unwrap();
    assert_eq!(store.backend(), crate::Backend::Keychain);
    let pair = crate::tokens::Tokens {
        access: Some(long_token()),
        refresh: Some(Secret::new("short-refresh")),
    };
    let deployment = format!("autogpt-local-executor@http://long-{}", std::process::id());
    crate::tokens::save(store.as_ref(), &deployment, &pair).unwrap();
    let back = crate::tokens::load(store.as_ref(), &deployment).unwrap();
    assert_eq!(back.access.unwrap().expose(), long_token().expose());
    assert_eq!(back.refresh.unwrap().expose(), "short-refresh");
    assert!(!dir.join(crate::FILE_NAME).exists(), "written to the file");
    crate::tokens::clear(store.as_ref(), &deployment).unwrap();
    assert!(
        crate::tokens::load(store.as_ref(), &deployment)
            .unwrap()
            .access
            .is_none()
    );
    // Too long even in parts: the typed error, still nothing in the file.
    let pair = crate::tokens::Tokens {
        access: Some(too_long_token()),
        refresh: None,
    };
    let e = crate::tokens::save(store.as_ref(), &deployment, &pair).unwrap_err();
    assert!(matches!(e, CredentialError::TooLong { .. }), "{e:?}");
    assert!(!dir.join(crate::FILE_NAME).exists(), "written to the file");
}
