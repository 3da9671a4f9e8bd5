//! Fuzzes the decision on a request to the OAuth loopback listener (AUDIT_AUTH_CLI.md 3.3
//! step 6, `shim_auth::oauth::decide_callback`): any local process or web page can send
//! requests to that port.
//!
//! Input: the first line is the expected `state`; the rest is the request target, split at
//! the first `?` into path and raw query.
//!
//! Invariants: never panics; anything but `/callback` is ignored (`None`); a code is returned
//! only when the first `state` parameter equals the expected one, no `error` parameter is
//! present, and it is the first `code` parameter, non-empty; an `error` is reported only after
//! the state matched, and its text is safe to print and put in HTML (printable ASCII without
//! `<>&"'`, at most 200 characters); a wrong or missing state is always `StateMismatch`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_auth::Secret;
use shim_auth::oauth::OAuthError;
use shim_auth::oauth::decide_callback;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (state, target) = text.split_once('\n').unwrap_or((&text, ""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let expected = Secret::new(state.to_owned());
    let decision = decide_callback(path, query, &expected);
    if path != "/callback" {
        assert!(decision.is_none(), "a request to {path:?} was not ignored");
        return;
    }
    let Some(decision) = decision else {
        panic!("the callback path was ignored");
    };
    let first = |name: &str| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let state_ok = first("state").as_deref() == Some(state);
    match decision {
        Ok(code) => {
            assert!(state_ok, "code accepted without the right state");
            assert!(first("error").is_none(), "code accepted despite an error");
            assert!(!code.expose().is_empty());
            assert_eq!(first("code").as_deref(), Some(code.expose()));
        }
        Err(OAuthError::StateMismatch) => assert!(!state_ok, "right state refused"),
        Err(OAuthError::Denied(msg)) => {
            assert!(state_ok, "error reported before the state was checked");
            assert!(first("error").is_some());
            assert!(msg.chars().count() <= 200, "error text too long");
            assert!(
                msg.chars()
                    .all(|c| (c.is_ascii_graphic() || c == ' ') && !"<>&\"'".contains(c)),
                "unsafe error text {msg:?}"
            );
        }
        Err(OAuthError::NoCode) => {
            assert!(state_ok && first("error").is_none());
            assert!(first("code").is_none_or(|c| c.is_empty()));
        }
        Err(other) => panic!("unexpected decision {other:?}"),
    }
});
