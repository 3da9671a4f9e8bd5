//! The platform's validation of `HELLO` (sections 5.1 and 5.2), as pure functions so the
//! daemon can check its own `HELLO` and the test peer can enforce it exactly.

use crate::messages::handshake::Hello;
use crate::version::ProtocolVersion;

/// Which route a `HELLO` arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The control connection (`allowed_root` must be null).
    Control,
    /// A per-session data connection (`allowed_root` required).
    Data,
}

/// A `HELLO` the platform refuses with close 4400 `Invalid HELLO payload`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid HELLO field {field}: {rule}")]
pub struct HelloViolation {
    /// The offending field.
    pub field: &'static str,
    /// The rule it breaks.
    pub rule: &'static str,
}

fn violation(field: &'static str, rule: &'static str) -> Result<(), HelloViolation> {
    Err(HelloViolation { field, rule })
}

fn has_angle_or_control(s: &str) -> bool {
    s.chars().any(|c| c == '<' || c == '>' || c.is_control())
}

/// Unicode general category C* (control, format, surrogate, private use, unassigned)
/// for the characters the platform checks, plus the line and paragraph separators.
fn is_control_or_format(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{0600}'..='\u{0605}' | '\u{061C}' | '\u{06DD}' | '\u{070F}'
            | '\u{0890}'..='\u{0891}' | '\u{08E2}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{110BD}' | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}' | '\u{E0020}'..='\u{E007F}'
            | '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFD}' | '\u{100000}'..='\u{10FFFD}'
            | '\u{2028}' | '\u{2029}')
}

fn is_id_like(s: &str, extra: &[char]) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

fn check_feature_list(field: &'static str, list: &[String]) -> Result<(), HelloViolation> {
    if list.len() > 128 {
        return violation(field, "at most 128 entries");
    }
    for f in list {
        if f.chars().count() > 128 {
            return violation(field, "entries of at most 128 characters");
        }
        if f.trim() != f {
            return violation(field, "no surrounding whitespace");
        }
        if has_angle_or_control(f) {
            return violation(field, "no '<', '>' or control characters");
        }
    }
    Ok(())
}

/// Checks every field rule of section 5.1 for `route`.
pub fn validate(hello: &Hello, route: Route) -> Result<(), HelloViolation> {
    let v = &hello.shim_version;
    if !v.is_empty()
        && (v.chars().count() > 64
            || !is_id_like(v, &['.', '_', '+', '-'])
            || has_angle_or_control(v))
    {
        return violation(
            "shim_version",
            "^[A-Za-z0-9][A-Za-z0-9._+-]*$, at most 64 characters",
        );
    }
    let m = &hello.machine_id;
    if m.is_empty() || m.chars().count() > 128 || !is_id_like(m, &['.', '_', ':', '-']) {
        return violation(
            "machine_id",
            "^[A-Za-z0-9][A-Za-z0-9._:-]*$, 1-128 characters",
        );
    }
    let d = &hello.display_name;
    if d.chars().count() > 128 || d.contains(['<', '>']) || d.chars().any(is_control_or_format) {
        return violation(
            "display_name",
            "at most 128 characters, no '<', '>' or C* characters",
        );
    }
    match route {
        Route::Control => {
            if hello.allowed_root.is_some() {
                return violation("allowed_root", "must be null on the control connection");
            }
        }
        Route::Data => match &hello.allowed_root {
            None => return violation("allowed_root", "required on a data connection"),
            Some(r) => {
                if r.trim().is_empty() || r.chars().count() > 4096 || has_angle_or_control(r) {
                    return violation(
                        "allowed_root",
                        "non-blank, at most 4096 characters, no '<', '>' or control characters",
                    );
                }
            }
        },
    }
    check_feature_list("computer_use_features", &hello.computer_use_features)?;
    check_feature_list(
        "computer_use_features_coarse",
        &hello.computer_use_features_coarse,
    )?;
    if hello
        .recording_channels
        .iter()
        .any(|c| !matches!(c.as_str(), "floor" | "browser" | "desktop_ax"))
    {
        return violation("recording_channels", "values in floor, browser, desktop_ax");
    }
    if hello.recording_routes.iter().any(|c| {
        !matches!(
            c.as_str(),
            "extract_then_cloud" | "local_vlm" | "screenshots_to_cloud"
        )
    }) {
        return violation(
            "recording_routes",
            "values in extract_then_cloud, local_vlm, screenshots_to_cloud",
        );
    }
    if ProtocolVersion::parse(&hello.protocol_version).is_err() {
        return violation("protocol_version", "^\\d+\\.\\d+$");
    }
    Ok(())
}
