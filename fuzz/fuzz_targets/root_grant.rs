//! Fuzzes root-grant verification (PROTOCOL.md 9.5.3, `shim_daemon::runtime::grant::verify`) with a
//! fixed key. Grants name roots under a private temporary folder: a real directory, a
//! symbolic link to it, a regular file and a missing path.
//!
//! The first input byte picks the mode:
//! * even: the rest is the grant text, verified for a fixed session and machine. Whatever it
//!   is, verification never panics; and if it is accepted, its signature part is the
//!   HMAC-SHA256 (grant key) of its claims part, recomputed here independently, its claims
//!   name this session and machine, and the root it returns is the real directory. The seed
//!   corpus holds real grants from `grant::issue` with the same key.
//! * odd: the rest builds claims (strings may hold any character; the root, fingerprint and
//!   revision are picked from the input), which are issued with `grant::issue` and then
//!   verified: a well-formed grant for the right session, machine and root must be accepted
//!   with its claims intact (so the JSON escaping of `issue` round-trips through the parser
//!   of `verify`); a revision of 0, a foreign session or machine, a wrong root or
//!   fingerprint, another key, and any one-byte change of the grant must be refused.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::arbitrary::Arbitrary;
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use shim_audit::AuditKey;
use shim_daemon::runtime::grant;
use shim_daemon::runtime::grant::Claims;
use shim_daemon::runtime::grant::GrantError;

const SESSION: &str = "fuzz-session";
const MACHINE: &str = "fuzz-machine";

struct Fx {
    key: AuditKey,
    other_key: AuditKey,
    /// The directory, a symlink to it, a regular file, a missing path.
    paths: [String; 4],
    canonical: grant::CanonicalRoot,
    fingerprint: String,
}

fn fx() -> &'static Fx {
    static FX: OnceLock<Fx> = OnceLock::new();
    FX.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("grant-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("root");
        std::fs::create_dir_all(&dir).expect("create root");
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).expect("symlink");
        let file = base.join("file");
        std::fs::write(&file, b"x").expect("file");
        let missing: PathBuf = base.join("missing");
        let canonical = grant::canonicalize_root(&dir).expect("canonical root");
        let fingerprint = grant::fingerprint(&canonical);
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        Fx {
            key: AuditKey::from_bytes(&[7u8; 32]).expect("key"),
            other_key: AuditKey::from_bytes(&[8u8; 32]).expect("key"),
            paths: [canonical.path.clone(), s(link), s(file), s(missing)],
            canonical,
            fingerprint,
        }
    })
}

/// The signature `verify` must have checked, computed without the daemon's code.
fn expected_signature(key: &AuditKey, encoded: &str) -> String {
    let gk = key.grant_key();
    let mac = AuditKey::from_bytes(gk.as_ref()).expect("32-byte grant key");
    URL_SAFE_NO_PAD.encode(mac.mac(encoded.as_bytes()))
}

fn raw_mode(fx: &Fx, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(v) = grant::verify(&fx.key, &text, SESSION, MACHINE) else {
        return;
    };
    let mut parts = text.splitn(3, '.');
    let (Some("v1"), Some(encoded), Some(sig)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("accepted a grant without three parts: {text:?}");
    };
    assert_eq!(
        sig,
        expected_signature(&fx.key, encoded),
        "accepted a bad signature"
    );
    assert_eq!(v.session_id, SESSION);
    assert_eq!(v.allowed_root, fx.canonical.path);
    assert_eq!(v.fingerprint, fx.fingerprint);
    assert!(v.revision >= 1);
    assert_eq!(v.root_grant, text);
}

fn issued_mode(fx: &Fx, data: &[u8]) -> libfuzzer_sys::arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let right_session = bool::arbitrary(&mut u)?;
    let right_machine = bool::arbitrary(&mut u)?;
    let session: String = if right_session {
        SESSION.into()
    } else {
        String::arbitrary(&mut u)?
    };
    let machine: String = if right_machine {
        MACHINE.into()
    } else {
        String::arbitrary(&mut u)?
    };
    let root_pick = u8::arbitrary(&mut u)? % 5;
    let allowed_root = match root_pick {
        4 => String::arbitrary(&mut u)?,
        i => fx.paths[usize::from(i)].clone(),
    };
    let right_fp = bool::arbitrary(&mut u)?;
    let fingerprint = if right_fp {
        fx.fingerprint.clone()
    } else {
        String::arbitrary(&mut u)?
    };
    let revision = if bool::arbitrary(&mut u)? {
        u64::arbitrary(&mut u)?
    } else {
        1
    };
    let issued_at = f64::arbitrary(&mut u)?;
    let claims = Claims {
        allowed_root,
        fingerprint: fingerprint.clone(),
        issued_at,
        machine_id: machine.clone(),
        revision,
        session_id: session.clone(),
    };
    let g = grant::issue(&fx.key, &claims);
    let res = grant::verify(&fx.key, &g, SESSION, MACHINE);
    let should_pass = session == SESSION
        && machine == MACHINE
        && revision >= 1
        && fingerprint == fx.fingerprint
        && (root_pick == 0 || claims.allowed_root == fx.paths[0]);
    match &res {
        Ok(v) => {
            assert!(should_pass, "accepted {claims:?}");
            assert_eq!(v.allowed_root, fx.canonical.path);
            assert_eq!(v.revision, revision);
            assert_eq!(v.fingerprint, fingerprint);
            assert_eq!(v.root_grant, g);
        }
        Err(e) => {
            assert!(!should_pass, "refused a valid grant for {claims:?}: {e:?}");
            if revision == 0 && session == SESSION && machine == MACHINE {
                assert_eq!(*e, GrantError::Revision);
            }
        }
    }
    // The same grant under another key: always a signature error.
    assert_eq!(
        grant::verify(&fx.other_key, &g, SESSION, MACHINE),
        Err(GrantError::Signature)
    );
    // Any one-byte change is refused (unless it leaves the text unchanged).
    if !g.is_empty() {
        let pos = usize::from(u16::arbitrary(&mut u)?) % g.len();
        let byte = u8::arbitrary(&mut u)?;
        let mut bytes = g.clone().into_bytes();
        bytes[pos] = byte;
        let changed = String::from_utf8_lossy(&bytes).into_owned();
        if changed != g {
            assert!(
                grant::verify(&fx.key, &changed, SESSION, MACHINE).is_err(),
                "accepted a tampered grant {changed:?}"
            );
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let fx = fx();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        raw_mode(fx, rest);
    } else {
        let _ = issued_mode(fx, rest);
    }
});
