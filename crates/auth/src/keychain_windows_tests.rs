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
