//! `doctor` (AUDIT_AUTH_CLI.md 5.5): every check of what `start` needs, one line each, exit
//! 78 when a check is blocking. It never creates credentials. It contacts the network in two
//! places only: the local model's URL (`local_llm`, when enabled) and, when a proxy applies
//! to the platform, one `CONNECT` (or SOCKS5 connect) through it to the platform's host,
//! with no TLS and no request on top (`proxy`).
//!
//! One deliberate difference from the incumbent: on Linux the window-list and clipboard checks
//! ask the X11 backend itself (it speaks EWMH and the selection protocol natively) instead of
//! looking for `wmctrl`, `xclip` or `wl-copy` on `PATH`, which this daemon never runs.

use std::io::Write;
use std::path::Path;

use shim_auth::CredentialStore;
use shim_protocol::messages::handshake::Platform;

use crate::config::Settings;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Fine.
    Ok,
    /// Works, with a caveat.
    Warn,
    /// Does not work.
    Fail,
    /// For information.
    Info,
}

impl Marker {
    fn as_str(self) -> &'static str {
        match self {
            Marker::Ok => "OK",
            Marker::Warn => "WARN",
            Marker::Fail => "FAIL",
            Marker::Info => "INFO",
        }
    }
}

/// The local-model route: off, or what the Ollama probe of every HELLO finds now
/// (COMPUTER_USE_HW.md 8.2; a loopback or user-chosen URL, never the platform).
fn local_llm_check(settings: &Settings) -> Check {
    if !settings.enable_local_llm {
        return check("local_llm", Marker::Info, "not enabled");
    }
    let machine = crate::runtime::llm::LlmMachine::new(settings);
    let probed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(machine.probe()));
    match probed {
        Ok(models) => check(
            "local_llm",
            Marker::Ok,
            format!(
                "{} offers {} model(s): {}",
                settings.ollama_url,
                models.len(),
                models.join(", ")
            ),
        ),
        Err(why) => check(
            "local_llm",
            Marker::Warn,
            format!("local_llm will not be advertised: {why}"),
        ),
    }
}

/// The trust store (`trust_store`) and the proxy the platform's WebSocket would use
/// (`proxy`), with one tunnel through it when there is one.
fn network_checks(settings: &Settings) -> Vec<Check> {
    let net = match shim_auth::net::Net::new(&settings.net_options()) {
        Ok(n) => n,
        Err(e) => {
            return vec![
                blocking("trust_store", Marker::Fail, e.to_string()),
                check("proxy", Marker::Info, "not checked (no TLS configuration)"),
            ];
        }
    };
    let roots = net.roots();
    let mut detail = format!("{} certificate authorities from the system", roots.system);
    if let Some(p) = &settings.tls_ca_file {
        detail.push_str(&format!(
            ", {} from tls_ca_file {}",
            roots.extra,
            p.display()
        ));
    }
    let trust = if roots.builtin {
        check(
            "trust_store",
            Marker::Warn,
            format!(
                "{detail}; the system store is empty, the built-in Mozilla roots are used (install ca-certificates or set SSL_CERT_FILE)"
            ),
        )
    } else {
        check("trust_store", Marker::Ok, detail)
    };
    let ws = settings.ws_base();
    let proxy = match url::Url::parse(&ws) {
        Err(e) => check(
            "proxy",
            Marker::Warn,
            format!("bad WebSocket URL {ws}: {e}"),
        ),
        Ok(url) => match net.proxy().route(&url) {
            None => check(
                "proxy",
                Marker::Info,
                format!(
                    "none: the platform ({}) is reached directly (rules from {})",
                    url.host_str().unwrap_or_default(),
                    net.proxy().source()
                ),
            ),
            Some(route) => {
                let target = format!(
                    "{}:{}",
                    url.host_str().unwrap_or_default(),
                    url.port_or_known_default().unwrap_or(443)
                );
                let tried = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| {
                        rt.block_on(async {
                            match tokio::time::timeout(
                                std::time::Duration::from_secs(10),
                                net.connect(&url),
                            )
                            .await
                            {
                                Ok(Ok(_)) => Ok(()),
                                Ok(Err(e)) => Err(e.to_string()),
                                Err(_) => Err("no answer within 10 s".to_owned()),
                            }
                        })
                    });
                let via = format!(
                    "{} (from {}) for the platform",
                    route.display(),
                    net.proxy().source()
                );
                match tried {
                    Ok(()) => check(
                        "proxy",
                        Marker::Ok,
                        format!("{via}: a tunnel to {target} opened"),
                    ),
                    Err(e) => check(
                        "proxy",
                        Marker::Warn,
                        format!("{via}: a tunnel to {target} failed: {e}"),
                    ),
                }
            }
        },
    };
    vec![trust, proxy]
}

/// Hardware: what would be advertised, how many devices are present, and whether the
/// PROPOSED operations are opted into (COMPUTER_USE_HW.md 9).
fn hardware_check(settings: &Settings) -> Check {
    let machine = crate::runtime::hw::HwMachine::new(settings);
    let marker = if settings.enable_hardware {
        Marker::Ok
    } else {
        Marker::Info
    };
    check("hardware", marker, machine.summary())
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub label: &'static str,
    /// The verdict.
    pub marker: Marker,
    /// What was found.
    pub detail: String,
    /// Whether this result stops `start` (exit 78).
    pub blocking: bool,
}

fn check(label: &'static str, marker: Marker, detail: impl Into<String>) -> Check {
    Check {
        label,
        marker,
        detail: detail.into(),
        blocking: false,
    }
}

fn blocking(label: &'static str, marker: Marker, detail: impl Into<String>) -> Check {
    Check {
        blocking: true,
        ..check(label, marker, detail)
    }
}

/// Which credential store the environment selects (3.8), as `doctor` reports it.
#[derive(Debug, Clone)]
pub struct StoreEnv {
    /// `AUTOGPT_SHIM_CREDENTIAL_STORE` (empty: auto).
    pub choice: String,
    /// Whether `AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE` is set (the file fallback is usable).
    pub passphrase_set: bool,
}

impl StoreEnv {
    /// From the process environment.
    pub fn from_process() -> StoreEnv {
        StoreEnv {
            choice: std::env::var("AUTOGPT_SHIM_CREDENTIAL_STORE")
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase(),
            passphrase_set: std::env::var_os("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE")
                .is_some_and(|v| !v.is_empty()),
        }
    }
}

/// Runs every check of 5.5 in order.
pub fn checks(settings: &Settings, store_env: &StoreEnv) -> Vec<Check> {
    let mut out = vec![mode_check(settings), keychain_check(store_env)];
    out.push(audit_log_check(&settings.audit_log_path));
    let store = shim_auth::open_store_from_env();
    match &store {
        Ok(s) => {
            out.push(audit_key_check(s.as_ref()));
            out.push(credentials_check(s.as_ref(), &settings.deployment_id()));
        }
        Err(e) => {
            out.push(blocking(
                "audit_key",
                Marker::Fail,
                format!("cannot open the credential store: {e}"),
            ));
            out.push(check(
                "credentials",
                Marker::Warn,
                format!("cannot open the credential store: {e}"),
            ));
        }
    }
    out.extend(network_checks(settings));
    out.push(if settings.enable_recording {
        blocking(
            "recording",
            Marker::Fail,
            "enable_recording is set: `start` refuses to run (recording is a design preview)",
        )
    } else {
        check("recording", Marker::Ok, "not enabled")
    });
    out.push(local_llm_check(settings));
    out.push(hardware_check(settings));
    out.extend(confinement_checks(settings));
    // One connection to the display server serves the platform and display checks.
    let desktop = shim_cu::open(&shim_cu::OpenOptions {
        display: settings.computer_use_display.named(),
        ..Default::default()
    });
    out.extend(platform_checks(settings, &desktop));
    out.push(display_check(&desktop));
    out.extend(limits_check(&desktop));
    out.push(isolated_display_check(settings));
    out
}

/// `computer_use_display`: the mode, and for `isolated` the X server and window manager
/// it would start.
fn isolated_display_check(settings: &Settings) -> Check {
    use crate::config::DisplayMode;
    let label = "isolated_display";
    match &settings.computer_use_display {
        DisplayMode::User => check(
            label,
            Marker::Info,
            "off: computer use drives your own desktop (computer_use_display = \"user\")",
        ),
        DisplayMode::Named(d) => check(
            label,
            Marker::Info,
            format!("off: computer use drives the display {d} you named"),
        ),
        DisplayMode::Isolated => match crate::desktop::supported() {
            Err(why) => blocking(label, Marker::Fail, why.replace('\n', "; ")),
            Ok(()) => isolated_plan_check(settings, label),
        },
    }
}

/// The X server and window manager an isolated desktop would start here.
#[cfg(target_os = "linux")]
fn isolated_plan_check(settings: &Settings, label: &'static str) -> Check {
    let [w, h] = settings.computer_use_display_size;
    match crate::desktop::plan_here() {
        Ok(p) => check(
            label,
            Marker::Ok,
            format!(
                "{} ({}) {w}x{h} with {}, started at the first computer-use request{}",
                p.server.program(),
                p.server_path.display(),
                crate::desktop::WINDOW_MANAGER,
                match &p.server {
                    crate::desktop::Server::Xephyr { parent } => {
                        format!("; shown as a window on {parent}")
                    }
                    crate::desktop::Server::Xvfb => String::new(),
                }
            ),
        ),
        Err(m) => check(
            label,
            Marker::Warn,
            format!("{m}: computer-use requests will fail"),
        ),
    }
}

/// Never reached: [`crate::desktop::supported`] refuses every OS but Linux.
#[cfg(not(target_os = "linux"))]
fn isolated_plan_check(_settings: &Settings, label: &'static str) -> Check {
    blocking(label, Marker::Fail, "not available on this OS")
}

/// `shell_sandbox` and `shell_network`: the mode in force, the mechanism and its state.
fn confinement_checks(settings: &Settings) -> Vec<Check> {
    confinement_lines(
        settings.shell_sandbox,
        settings.shell_network,
        &crate::confinement::Platform::current(),
    )
}

/// The two confinement lines for the requested modes on `platform` (pure).
fn confinement_lines(
    mode: Option<shim_exec::sandbox::SandboxMode>,
    network: Option<shim_exec::sandbox::NetworkMode>,
    platform: &crate::confinement::Platform,
) -> Vec<Check> {
    use shim_exec::sandbox::NetMechanism;
    use shim_exec::sandbox::NetworkMode;
    let net_state = match &platform.network {
        Ok(NetMechanism::Namespace) => {
            "deny uses a fresh user and network namespace (loopback only) plus a seccomp filter on Unix sockets".to_owned()
        }
        Ok(NetMechanism::Seccomp) => "unprivileged user namespaces are not available here: deny refuses every socket with seccomp and TCP with Landlock".to_owned(),
        Ok(NetMechanism::Seatbelt) => "deny is a Seatbelt rule (sandbox-exec): no network except Unix sockets inside the folder".to_owned(),
        Err(why) => format!("deny is not available: {why}"),
    };
    match crate::confinement::resolve(mode, network, platform) {
        Err(e) => {
            let (label, other) = if e.starts_with("shell_network") {
                ("shell_network", "shell_sandbox")
            } else {
                ("shell_sandbox", "shell_network")
            };
            vec![
                blocking(label, Marker::Fail, e.replace('\n', "; ")),
                check(other, Marker::Info, "not checked"),
            ]
        }
        Ok(eff) => {
            let fs = match (&eff.warning, eff.mode.confines(), &platform.file_system) {
                (Some(w), _, _) => check("shell_sandbox", Marker::Warn, format!("off: {w}")),
                (None, true, _) => check(
                    "shell_sandbox",
                    Marker::Ok,
                    format!("{} via {}", eff.mode.as_str(), eff.fs_mechanism),
                ),
                (None, false, Ok(m)) => check(
                    "shell_sandbox",
                    Marker::Warn,
                    format!("off by setting: commands are not confined ({m} is available)"),
                ),
                (None, false, Err(why)) => check(
                    "shell_sandbox",
                    Marker::Info,
                    format!("off by setting ({why})"),
                ),
            };
            let net = match eff.network {
                NetworkMode::Allow => {
                    check("shell_network", Marker::Info, format!("allow; {net_state}"))
                }
                NetworkMode::Deny => check(
                    "shell_network",
                    Marker::Ok,
                    format!("deny via {}; {net_state}", eff.net_mechanism.as_str()),
                ),
            };
            vec![fs, net]
        }
    }
}

/// Prints `checks` as 5.5 lays them out and returns the exit code (78 if one blocks).
pub fn report(checks: &[Check], out: &mut dyn Write) -> u8 {
    let width = checks.iter().map(|c| c.label.len()).max().unwrap_or(0);
    for c in checks {
        let _ = writeln!(
            out,
            "[{:<4}] {:<width$}  {}",
            c.marker.as_str(),
            c.label,
            c.detail
        );
    }
    if checks.iter().any(|c| c.blocking) {
        crate::error::EXIT_CONFIG
    } else {
        crate::error::EXIT_OK
    }
}

fn mode_check(settings: &Settings) -> Check {
    if settings.is_legacy() {
        let root = &settings.allowed_root;
        if let Err(e) = std::fs::create_dir_all(root) {
            return blocking(
                "allowed_root",
                Marker::Fail,
                format!("cannot create {}: {e}", root.display()),
            );
        }
        match writable(root) {
            Ok(()) => check(
                "allowed_root",
                Marker::Ok,
                format!("{} exists, writable", root.display()),
            ),
            Err(e) => blocking(
                "allowed_root",
                Marker::Fail,
                format!("{} is not writable: {e}", root.display()),
            ),
        }
    } else {
        // Control mode never creates `allowed_root`: folders are chosen per chat.
        let roots = crate::runtime::control::virtual_roots(settings.home.as_deref());
        if roots.is_empty() {
            blocking(
                "folder_browser",
                Marker::Fail,
                "no accessible host directory roots found",
            )
        } else {
            check(
                "folder_browser",
                Marker::Ok,
                format!("{} accessible host root(s)", roots.len()),
            )
        }
    }
}

/// Creates and removes a probe file in `dir`.
fn writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".autogpt-shim-doctor-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

fn keychain_check(env: &StoreEnv) -> Check {
    if env.choice == "file" {
        return check("keychain", Marker::Info, "file backend selected");
    }
    match shim_auth::KeychainStore::new().probe() {
        Ok(()) => check("keychain", Marker::Ok, "OS credential store available"),
        Err(e) if env.choice != "keychain" && env.passphrase_set => check(
            "keychain",
            Marker::Warn,
            format!("unavailable: {e} (encrypted-file fallback will be used)"),
        ),
        Err(e) => blocking(
            "keychain",
            Marker::Fail,
            format!(
                "unavailable: {e}; set AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE to use the encrypted-file fallback"
            ),
        ),
    }
}

fn audit_log_check(path: &Path) -> Check {
    let open = || -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        // Opening for append creates nothing that `start` would not create itself.
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map(drop)
    };
    match open() {
        Ok(()) => check(
            "audit_log",
            Marker::Ok,
            format!("{} can be appended to", path.display()),
        ),
        Err(e) => blocking(
            "audit_log",
            Marker::Fail,
            format!("cannot open {} for append: {e}", path.display()),
        ),
    }
}

fn audit_key_check(store: &dyn CredentialStore) -> Check {
    match store.get(shim_auth::account::AUDIT_KEY) {
        // H-6: a corrupt key is never replaced, so every existing log stays verifiable.
        Ok(Some(s)) => match shim_auth::audit_key::parse_stored(&s) {
            Ok(_) => check("audit_key", Marker::Ok, "present and valid"),
            Err(e) => blocking("audit_key", Marker::Fail, e.to_string()),
        },
        Ok(None) => check("audit_key", Marker::Info, "will be created on first start"),
        Err(e) => blocking("audit_key", Marker::Fail, format!("cannot read: {e}")),
    }
}

/// What `start` would load (`shim_auth::tokens::load`, which also moves [compat] legacy
/// keychain items to the deployment's accounts, as `start` would).
fn credentials_check(store: &dyn CredentialStore, deployment: &str) -> Check {
    match shim_auth::tokens::load(store, deployment) {
        Ok(t) if !t.is_empty() => check(
            "credentials",
            Marker::Ok,
            format!("tokens stored for {deployment}"),
        ),
        Ok(_) => check("credentials", Marker::Warn, "run autogpt-shim auth"),
        Err(e) => check(
            "credentials",
            Marker::Warn,
            format!("cannot read the tokens: {e}"),
        ),
    }
}

/// "Blocking iff CU" of 5.5 step 6.
fn iff(cu: bool, label: &'static str, marker: Marker, detail: impl Into<String>) -> Check {
    Check {
        blocking: cu,
        ..check(label, marker, detail)
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The Linux session type of 5.5 step 6.
pub fn linux_session_type(
    xdg_session_type: Option<&str>,
    wayland_display: Option<&str>,
    display: Option<&str>,
) -> Option<String> {
    match xdg_session_type {
        Some(t) => Some(t.to_ascii_lowercase()),
        None if wayland_display.is_some() => Some("wayland".to_owned()),
        None if display.is_some() => Some("x11".to_owned()),
        None => None,
    }
}

/// What [`shim_cu::open`] gave.
type Opened = Result<shim_cu::Desktop, shim_cu::Unavailable>;

fn platform_checks(settings: &Settings, desktop: &Opened) -> Vec<Check> {
    let cu = settings.enable_computer_use;
    match crate::host::platform() {
        Some(Platform::Linux) => {
            let session = linux_session_type(
                env("XDG_SESSION_TYPE").as_deref(),
                env("WAYLAND_DISPLAY").as_deref(),
                env("DISPLAY").as_deref(),
            );
            let mut out = vec![match session.as_deref() {
                Some("wayland") => iff(
                    cu,
                    "display_server",
                    Marker::Warn,
                    "wayland: input injection is blocked; computer use is not offered",
                ),
                Some("x11") => check("display_server", Marker::Ok, "x11"),
                other => check(
                    "display_server",
                    Marker::Warn,
                    format!("unknown session type ({})", other.unwrap_or("none")),
                ),
            }];
            if session.as_deref() != Some("wayland") {
                out.extend(x11_feature_checks(settings, desktop));
            }
            out
        }
        Some(Platform::Wsl2) => vec![iff(
            cu,
            "display_server",
            Marker::Warn,
            "no display server reachable under WSL2; computer use unavailable",
        )],
        // The trust check with the prompt, so the consent dialog appears once (5.5).
        Some(Platform::Darwin) => darwin_checks(cu, shim_cu::macos_permissions(true)),
        Some(Platform::Windows) => vec![uac_check(shim_cu::process_elevated())],
        _ => vec![check(
            "platform",
            Marker::Warn,
            format!("{} is not supported", std::env::consts::OS),
        )],
    }
}

/// The darwin checks of AUDIT_AUTH_CLI.md 5.5 step 6 from the probes (`None`: cannot
/// probe): `Accessibility` and `Screen Recording` OK when granted, FAIL when not, WARN when
/// the probe cannot be called, each blocking iff CU; then `computer_use`.
pub fn darwin_checks(cu: bool, probes: Option<shim_cu::mac::MacPermissions>) -> Vec<Check> {
    let (ax, screen) = match probes {
        Some(p) => (p.accessibility, Some(p.screen_recording)),
        None => (None, None),
    };
    let one = |label: &'static str, state: Option<bool>, pane: &str| match state {
        Some(true) => check(label, Marker::Ok, "granted"),
        Some(false) => iff(
            cu,
            label,
            Marker::Fail,
            format!("not granted: System Settings > Privacy & Security > {pane}, add autogpt-shim"),
        ),
        None => iff(
            cu,
            label,
            Marker::Warn,
            "cannot probe; check System Settings > Privacy & Security",
        ),
    };
    let mut missing = Vec::new();
    if ax != Some(true) {
        missing.push("Accessibility");
    }
    if screen != Some(true) {
        missing.push("Screen Recording");
    }
    vec![
        one("Accessibility", ax, "Accessibility"),
        one("Screen Recording", screen, "Screen Recording"),
        if !cu {
            check("computer_use", Marker::Info, "not requested in config")
        } else if missing.is_empty() {
            check("computer_use", Marker::Ok, "ready")
        } else {
            check(
                "computer_use",
                Marker::Warn,
                format!("degraded - missing: {}", missing.join(", ")),
            )
        },
    ]
}

/// `UAC` (AUDIT_AUTH_CLI.md 5.5): elevated is OK, not elevated INFO (UIPI drops input into
/// elevated windows), unreadable INFO too.
fn uac_check(elevated: Option<bool>) -> Check {
    match elevated {
        Some(true) => check("UAC", Marker::Ok, "elevated (can drive elevated windows)"),
        Some(false) => check(
            "UAC",
            Marker::Info,
            "not elevated (cannot drive elevated windows)",
        ),
        None => check(
            "UAC",
            Marker::Info,
            "elevation unknown: the process token cannot be read (cannot drive elevated windows unless elevated)",
        ),
    }
}

/// Window list and clipboard, as the X11 backend can serve them.
fn x11_feature_checks(settings: &Settings, desktop: &Opened) -> Vec<Check> {
    let engine = desktop.as_ref().map(|desktop| {
        shim_cu::Engine::new(
            desktop.clone(),
            shim_cu::EngineConfig {
                enable_clipboard: settings.enable_clipboard,
                enable_clipboard_read_foreign: false,
                max_screenshots_per_minute: settings.max_screenshots_per_minute,
                masked_regions: Vec::new(),
            },
            std::sync::Arc::new(shim_cu::policy::SystemClock::default()),
        )
    });
    let features = engine.as_ref().ok().map(shim_cu::Engine::features);
    let has = |name: &str| features.as_ref().is_some_and(|f| f.has(name));
    let mut out = vec![if has("window.list") {
        check("window_list", Marker::Ok, "EWMH window manager found")
    } else {
        check(
            "window_list",
            Marker::Warn,
            "no EWMH window manager reachable: window list/focus unavailable",
        )
    }];
    if settings.enable_clipboard {
        out.push(if has("clipboard.write") {
            check("clipboard", Marker::Ok, "X11 selections (built in)")
        } else {
            check(
                "clipboard",
                Marker::Warn,
                "no X server reachable: clipboard unavailable",
            )
        });
    }
    out
}

fn display_check(desktop: &Opened) -> Check {
    let desktop = match desktop {
        Ok(d) => d,
        Err(shim_cu::Unavailable::NoDisplay(_)) => {
            return check("display", Marker::Warn, "no displays detected");
        }
        Err(e) => return check("display", Marker::Warn, format!("could not enumerate: {e}")),
    };
    match desktop.displays.monitors() {
        Ok(m) if m.is_empty() => check("display", Marker::Warn, "no displays detected"),
        Ok(m) => {
            let sizes: Vec<String> = m
                .iter()
                .map(|d| format!("{}x{}", d.logical_size[0], d.logical_size[1]))
                .collect();
            check(
                "display",
                Marker::Ok,
                format!("{} display(s): {}", m.len(), sizes.join(" + ")),
            )
        }
        Err(e) => check("display", Marker::Warn, format!("could not enumerate: {e}")),
    }
}

/// What computer use cannot do on this OS in this build (macOS, Windows); nothing on X11.
fn limits_check(desktop: &Opened) -> Option<Check> {
    let missing = shim_cu::features::not_available(desktop.as_ref().ok()?.kind);
    (!missing.is_empty()).then(|| {
        check(
            "cu_unavailable",
            Marker::Info,
            format!(
                "not available on this OS in this build: {}",
                missing.join("; ")
            ),
        )
    })
}

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;
