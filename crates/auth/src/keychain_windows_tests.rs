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

/// A 3,000-byte token (6,000 bytes as UTF-16) against the 2,560-byte credential blob.
fn long_token() -> Secret {
    Secret::new("x".repeat(3000))
}

#[test]
fn a_secret_longer_than_a_credential_blob_is_a_typed_error_and_nothing_is_written() {
    let svc = service("long");
    let store = KeychainStore::with_service(&svc);
    store.set("access_token", &Secret::new("old")).unwrap();
    let e = store.set("access_token", &long_token()).unwrap_err();
    match &e {
        CredentialError::TooLong {
            account,
            bytes,
            limit,
        } => {
            assert_eq!(account, "access_token");
            assert_eq!(*bytes, 6000);
            assert_eq!(*limit, 2560);
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("AUTOGPT_SHIM_CREDENTIAL_STORE=file"),
        "no hint: {text}"
    );
    assert!(!text.contains("xxxx"), "the secret leaked: {text}");
    // Not truncated, not replaced: the old value is still there.
    assert_eq!(store.get("access_token").unwrap().unwrap().expose(), "old");
    // The boundary: 1,280 UTF-16 units fit exactly and read back whole; one more does not.
    let edge = "é".repeat(1280);
    store
        .set("access_token", &Secret::new(edge.as_str()))
        .unwrap();
    assert_eq!(store.get("access_token").unwrap().unwrap().expose(), edge);
    assert!(matches!(
        store.set("access_token", &Secret::new("é".repeat(1281))),
        Err(CredentialError::TooLong { bytes: 2562, .. })
    ));
    assert!(store.delete("access_token").unwrap());
}

#[test]
fn tokens_are_saved_whole_or_not_at_all() {
    let svc = service("pair");
    let store = KeychainStore::with_service(&svc);
    let pair = crate::tokens::Tokens {
        access: Some(long_token()),
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
fn auto_mode_reports_the_long_secret_instead_of_splitting_the_tokens_across_stores() {
    // AUDIT_AUTH_CLI.md 3.8: in `auto` the backend is chosen by whether the OS store is
    // available. Credential Manager is (the probe succeeds), so `auto` selects it, and a
    // secret it cannot hold is the typed error with the hint. Writing that one token to the
    // encrypted file instead would split the pair: the next reader selects the OS store
    // again and "item not found" is never a reason to switch (reported as a spec question).
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
    let e = crate::tokens::save(store.as_ref(), &deployment, &pair).unwrap_err();
    assert!(matches!(e, CredentialError::TooLong { .. }), "{e:?}");
    assert!(!dir.join(crate::FILE_NAME).exists(), "written to the file");
    assert!(
        crate::tokens::load(store.as_ref(), &deployment)
            .unwrap()
            .refresh
            .is_none()
    );
}
