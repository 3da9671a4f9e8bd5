//! The Secret Service backend for real: the test re-executes this binary under
//! `dbus-run-session` with an unlocked `gnome-keyring-daemon` and a fresh HOME.
//! Without those programs it is skipped with a message, unless SHIM_REQUIRE_KEYRING=1 (CI),
//! which turns their absence into a failure.

use std::process::Command;

use shim_auth::CredentialStore;
use shim_auth::KeychainStore;
use shim_auth::Secret;

const INNER: &str = "SHIM_AUTH_INSIDE_DBUS";

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

#[allow(clippy::print_stderr)] // the skip message is the point
/// Runs `test` in a child of this binary inside a private D-Bus session with an unlocked keyring.
fn run_inside_dbus(test: &str) {
    let missing: Vec<&str> = ["dbus-run-session", "gnome-keyring-daemon"]
        .into_iter()
        .filter(|p| !have(p))
        .collect();
    if !missing.is_empty() {
        let required = std::env::var("SHIM_REQUIRE_KEYRING").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "SHIM_REQUIRE_KEYRING=1 but {missing:?} are not installed"
        );
        eprintln!(
            "skipping {test}: {missing:?} not installed (apt-get install dbus gnome-keyring)"
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("dbus-run-session")
        .args([
            "--",
            "sh",
            "-c",
            "echo -n pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; exec \"$0\" \"$@\"",
        ])
        .arg(&exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(INNER, "1")
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_RUNTIME_DIR", home.path())
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "inner test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn secret_service_round_trip() {
    if std::env::var_os(INNER).is_none() {
        return run_inside_dbus("suite::keychain::secret_service_round_trip");
    }
    let store = KeychainStore::new();
    store.probe().unwrap();
    let dep = "autogpt-local-executor@https://platform.autogpt.net";
    let acct = shim_auth::account::access_token(dep);
    assert!(
        store.get(&acct).unwrap().is_none(),
        "item not found is Ok(None)"
    );
    store.set(&acct, &Secret::new("at-123")).unwrap();
    store.set(&acct, &Secret::new("at-456")).unwrap();
    assert_eq!(store.get(&acct).unwrap().unwrap().expose(), "at-456");
    assert!(store.delete(&acct).unwrap());
    assert!(!store.delete(&acct).unwrap());

    // Auto selection picks the OS store here, and the audit key lives in it.
    let auto = shim_auth::open_store(shim_auth::StoreChoice::Auto, None, None).unwrap();
    assert_eq!(auto.backend(), shim_auth::Backend::Keychain);
    let (k1, created) = shim_auth::audit_key::load_or_create(auto.as_ref(), None).unwrap();
    assert!(created);
    let (k2, created) = shim_auth::audit_key::load_or_create(auto.as_ref(), None).unwrap();
    assert!(!created);
    assert_eq!(k1.as_bytes(), k2.as_bytes());
    let stored = store.get("audit_key").unwrap().unwrap();
    assert_eq!(stored.expose().len(), 64);
    assert!(
        stored
            .expose()
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    );
}

#[test]
fn secret_service_items_are_found_by_service_and_username() {
    if std::env::var_os(INNER).is_none() {
        return run_inside_dbus(
            "suite::keychain::secret_service_items_are_found_by_service_and_username",
        );
    }
    // An item written by another client (secret-tool style, with an extra attribute) is found:
    // lookups match on service and username only.
    if !have("secret-tool") {
        eprintln!("secret-tool not installed; checking only our own round trip");
        return;
    }
    let status = Command::new("sh")
        .args([
            "-c",
            "printf %s legacy-token | secret-tool store --label=x service autogpt-local-executor username access_token application other",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let store = KeychainStore::new();
    assert_eq!(
        store.get("access_token").unwrap().unwrap().expose(),
        "legacy-token"
    );
}

#[test]
fn auto_falls_back_to_the_file_without_a_session_bus() {
    if std::env::var_os(INNER).is_some() {
        return;
    }
    // Run in a child without any D-Bus session so the OS store is unavailable.
    let exe = std::env::current_exe().unwrap();
    if std::env::var_os("SHIM_AUTH_NO_BUS").is_none() {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(exe)
            .args([
                "--exact",
                "suite::keychain::auto_falls_back_to_the_file_without_a_session_bus",
                "--nocapture",
            ])
            .env("SHIM_AUTH_NO_BUS", "1")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("HOME", dir.path())
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let none = shim_auth::open_store(
        shim_auth::StoreChoice::Auto,
        Some(dir.path().to_path_buf()),
        None,
    );
    assert!(matches!(
        none,
        Err(shim_auth::CredentialError::PassphraseMissing)
    ));
    let keychain_only = shim_auth::open_store(shim_auth::StoreChoice::Keychain, None, None);
    assert!(matches!(
        keychain_only,
        Err(shim_auth::CredentialError::Unavailable(_))
    ));
    let s = shim_auth::open_store(
        shim_auth::StoreChoice::Auto,
        Some(dir.path().to_path_buf()),
        Some(Secret::new("pw")),
    )
    .unwrap();
    assert_eq!(s.backend(), shim_auth::Backend::File);
}
