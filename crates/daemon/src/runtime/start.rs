//! `start` (AUDIT_AUTH_CLI.md 5.3.2): construct the daemon fail-closed, preflight, run the
//! runtime(s) until a signal or a terminal condition, stop cleanly.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use shim_audit::AuditEvent;
use shim_audit::AuditLog;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_audit::WriterConfig;
use shim_auth::CredentialStore;
use shim_auth::Secret;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_protocol::ErrorCode;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::error::ConfigError;
use crate::error::DaemonError;
use crate::policy::Policy;
use crate::runtime::approvals::Approvals;
use crate::runtime::auditor::Auditor;
use crate::runtime::conn::Outcome;
use crate::runtime::conn::Runtime;
use crate::runtime::control::Control;
use crate::runtime::handshake::Identity;
use crate::runtime::handshake::Role;
use crate::runtime::machine::Machine;
use crate::runtime::machine::Tokens;

/// What `start` needs besides the settings.
pub struct StartDeps {
    /// Where tokens and the audit key live.
    pub store: Box<dyn CredentialStore>,
    /// The \[compat\] legacy audit-key file and its passphrase, if any.
    pub legacy_key: Option<(std::path::PathBuf, Secret)>,
    /// Cancelled to stop the daemon (signals).
    pub shutdown: CancellationToken,
    /// Where start-up lines go (stdout for the CLI).
    pub out: Box<dyn Write + Send>,
    /// The local control socket to serve (`approve`, `deny`, `pause`, ...); `None` serves
    /// none. The CLI passes [`crate::ipc::socket_path_from_process`].
    pub control_socket: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for StartDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartDeps").finish_non_exhaustive()
    }
}

/// The machine's identity: configured or detected machine id, display name, normalised
/// platform and architecture. Unsupported hosts refuse to start (5.1.2).
pub fn identity(settings: &Settings) -> Result<Identity, DaemonError> {
    let platform = crate::host::platform()
        .ok_or_else(|| DaemonError::Preflight("unsupported operating system".into()))?;
    let arch = crate::host::arch()
        .ok_or_else(|| DaemonError::Preflight("unsupported machine architecture".into()))?;
    let machine_id = match &settings.machine_id {
        Some(m) => m.clone(),
        None => crate::host::detect_machine_id(settings.home.as_deref())
            .map_err(|e| DaemonError::Preflight(format!("cannot determine the machine id: {e}")))?,
    };
    let display_name = settings
        .display_name
        .clone()
        .unwrap_or_else(|| crate::host::hostname().chars().take(128).collect());
    Ok(Identity {
        machine_id,
        display_name,
        platform,
        arch,
    })
}

/// The start-up refusal of the recording preview (COMPUTER_USE_HW.md 10.1 item 1).
fn recording_refused(suffix: String) -> DaemonError {
    DaemonError::Preflight(format!(
        "workflow recording is a design preview: capture and interpretation are incomplete, so --enable-recording / enable_recording cannot be used{suffix}"
    ))
}

/// An audit set-up failure; with the recording preview enabled the refusal still names
/// recording (10.1 item 1: exit 78 with that message also when the audit write fails).
fn recording_first(settings: &Settings, audit_error: String) -> DaemonError {
    if settings.enable_recording {
        recording_refused(format!(
            " (and the DAEMON_PREFLIGHT_FAILED audit record could not be written: {audit_error})"
        ))
    } else {
        DaemonError::Preflight(audit_error)
    }
}

/// Writes `DAEMON_PREFLIGHT_FAILED` for the macOS preflight (1.5) and returns the error
/// that exits 78, also when the audit write fails.
async fn macos_preflight_failed(audit: &Auditor, missing: &str, code: ErrorCode) -> DaemonError {
    let hint = "Run `autogpt-shim doctor` and grant Accessibility to autogpt-shim in System Settings > Privacy & Security > Accessibility.";
    let d = Map::new()
        .with("missing_permissions", vec![missing])
        .with("platform", "darwin")
        .with("hint", hint);
    let mut r = AuditResult::failed(&code);
    r.exit_code = Some(78);
    let ev = AuditEvent::new("DAEMON_PREFLIGHT_FAILED")
        .details(d)
        .result(r)
        .request_id(uuid::Uuid::new_v4().to_string());
    let written = if audit.write(ev).await.is_ok() {
        ""
    } else {
        " (and the DAEMON_PREFLIGHT_FAILED audit record could not be written)"
    };
    DaemonError::Preflight(format!(
        "computer use is enabled but macOS has not granted {missing}: {hint}{written}"
    ))
}

fn platform_name(i: &Identity) -> &'static str {
    i.platform.as_str()
}

/// Runs the daemon until a signal or a terminal condition. Returns the process exit code
/// (5.2); messages go to stderr via tracing and to `deps.out`.
pub async fn start(settings: Settings, deps: StartDeps) -> Result<(), DaemonError> {
    let StartDeps {
        store,
        legacy_key,
        shutdown,
        mut out,
        control_socket,
    } = deps;
    // The command policy: a file that cannot be used stops the start (exit 78) with its line.
    let policy = match &settings.command_policy_file {
        Some(p) => Policy::load(p).map_err(|e| {
            DaemonError::Config(ConfigError::new(
                "command_policy_file",
                format!("{e}\nhint: fix the file (`autogpt-shim policy check` shows what each rule decides) or remove command_policy_file"),
            ))
        })?,
        None => Policy::allow_all(),
    };
    // Step 1.
    let identity = identity(&settings)?;
    let _ = writeln!(
        out,
        "Starting shim daemon (machine_id={})",
        identity.machine_id
    );
    match &settings.session_id {
        Some(sid) => {
            let _ = writeln!(out, "Legacy session mode: session {sid}");
            let _ = writeln!(out, "Allowed root: {}", settings.allowed_root.display());
        }
        None => {
            let _ = writeln!(
                out,
                "Machine control mode: folders are chosen per chat in the AutoGPT platform."
            );
        }
    }
    // The command sandbox: an explicit request this machine cannot enforce refuses to
    // start (exit 78); never run commands unconfined silently.
    let confinement = crate::confinement::effective(&settings).map_err(DaemonError::Preflight)?;
    // The isolated desktop: refused where it cannot exist (exit 78), never replaced by the
    // user's own display.
    if settings.computer_use_display == crate::config::DisplayMode::Isolated {
        crate::desktop::supported().map_err(DaemonError::Preflight)?;
        #[cfg(target_os = "linux")]
        if settings.enable_computer_use {
            match crate::desktop::plan_here() {
                Ok(p) => {
                    let _ = writeln!(
                        out,
                        "Computer use runs on an isolated display ({} {}x{}, started at the first request).",
                        p.server.program(),
                        settings.computer_use_display_size[0],
                        settings.computer_use_display_size[1]
                    );
                }
                Err(m) => tracing::warn!(
                    "computer use cannot start its isolated display: {m}; computer-use requests will fail"
                ),
            }
        }
    }
    if settings.enable_shell {
        if confinement.mode.confines() {
            let _ = writeln!(
                out,
                "Shell execution is enabled: {}.",
                confinement.describe()
            );
        } else {
            let _ = writeln!(
                out,
                "WARNING: shell execution is enabled. Shell commands can do anything your user account can do ({}).",
                confinement.describe()
            );
        }
        if let Some(w) = &confinement.warning {
            tracing::warn!("{w}");
        }
    }
    let _ = out.flush();

    // Step 2: the audit writer (fail closed, 1.19).
    let legacy = legacy_key.as_ref().map(|(p, s)| (p.as_path(), s));
    let (key, created) =
        shim_auth::audit_key::load_or_create(store.as_ref(), legacy).map_err(|e| {
            recording_first(
                &settings,
                format!("cannot initialise the mandatory audit log: audit key: {e}"),
            )
        })?;
    if created {
        tracing::info!("created a new audit key");
    }
    let mut wcfg = WriterConfig::new(
        settings.audit_log_path.clone(),
        &identity.machine_id,
        env!("CARGO_PKG_VERSION"),
    );
    if let Some(sid) = &settings.session_id {
        wcfg.default_session = sid.clone();
    }
    let log = AuditLog::open(wcfg, key.clone())
        .map_err(|e| recording_first(&settings, format!("{e} (mandatory audit log)")))?;
    let failed = CancellationToken::new();
    let audit = Auditor::new(log, failed);

    // Step 3: preflight.
    if settings.enable_recording {
        let d = Map::new()
            .with("missing_permissions", vec!["recording_preview_disabled"])
            .with("platform", platform_name(&identity))
            .with("hint", "Run `autogpt-shim doctor` and grant the required access; workflow recording is not available yet.");
        let mut r = AuditResult::failed(&ErrorCode::CapabilityNotGranted);
        r.exit_code = Some(78);
        let ev = AuditEvent::new("DAEMON_PREFLIGHT_FAILED")
            .details(d)
            .result(r)
            .request_id(uuid::Uuid::new_v4().to_string());
        let written = audit.write(ev).await.is_ok();
        return Err(recording_refused(if written {
            String::new()
        } else {
            " (and the DAEMON_PREFLIGHT_FAILED audit record could not be written)".to_owned()
        }));
    }

    // Step 3b: the macOS Accessibility preflight (COMPUTER_USE_HW.md 1.5): without trust
    // macOS drops our input silently, so the daemon does not start (exit 78); the
    // autostart definition relaunches it once the permission is granted.
    if settings.enable_computer_use
        && let Some((missing, code)) = shim_cu::macos_preflight()
    {
        return Err(macos_preflight_failed(&audit, missing, code).await);
    }

    // Step 4: credentials ([H-12]).
    // One trust store and one set of proxy rules for the WebSocket and OAuth (fail closed:
    // an unreadable tls_ca_file stops the start).
    let net = Arc::new(
        shim_auth::net::Net::new(&settings.net_options())
            .map_err(|e| DaemonError::Preflight(e.to_string()))?,
    );
    let oauth =
        shim_auth::oauth::OAuthClient::new(&settings.oauth_client_id, settings.oauth_source())
            .map_err(|e| DaemonError::Other(e.to_string()))?
            .with_net(net.clone());
    let tokens = Tokens::load(store, &settings.deployment_id(), oauth)?;

    // Legacy mode: the jail root must open (fail closed).
    let jail = match &settings.session_id {
        Some(_) => {
            let j = JailRoot::open(
                &settings.allowed_root,
                JailConfig {
                    max_file_size_bytes: settings.max_file_size_bytes,
                    home: settings
                        .home
                        .as_deref()
                        .and_then(|h| h.to_str().map(str::to_owned)),
                    refuse_symlink_root: false,
                    trash_dir: None,
                },
                shim_jail::ambient_authority(),
            )
            .map_err(|e| {
                DaemonError::Preflight(format!(
                    "the allowed root {} cannot be opened: {e}",
                    settings.allowed_root.display()
                ))
            })?;
            Some(Arc::new(j))
        }
        None => None,
    };

    // The local control socket: bound before SHIM_START, so that a second daemon stops here.
    #[cfg(any(unix, windows))]
    let ipc = match &control_socket {
        Some(p) => Some(crate::runtime::ipc_server::IpcServer::bind(p)?),
        None => None,
    };
    #[cfg(not(any(unix, windows)))]
    let _ = control_socket;

    // Step 5: SHIM_START before any connection.
    audit
        .write(
            AuditEvent::new("SHIM_START").details(
                Map::new()
                    .with("shim_version", env!("CARGO_PKG_VERSION"))
                    .with(
                        "computer_use_display",
                        settings.computer_use_display.as_str(),
                    )
                    .with("shell_sandbox", confinement.mode.as_str())
                    .with("shell_network", confinement.network.as_str())
                    .with(
                        "sandbox_mechanism",
                        if confinement.mode.confines() {
                            confinement.fs_mechanism.as_str()
                        } else {
                            "none"
                        },
                    )
                    .with(
                        "network_mechanism",
                        match confinement.network {
                            shim_exec::sandbox::NetworkMode::Deny => {
                                confinement.net_mechanism.as_str()
                            }
                            shim_exec::sandbox::NetworkMode::Allow => "none",
                        },
                    ),
            ),
        )
        .await
        .map_err(|e| {
            DaemonError::Preflight(format!("cannot write the initial SHIM_START record: {e}"))
        })?;

    let limiter = CommandLimiter::new(CommandLimits {
        max_commands_per_minute: settings.max_commands_per_minute,
        max_concurrent_commands: settings.max_concurrent_commands,
        ..CommandLimits::default()
    });
    let machine = Arc::new(Machine {
        settings: settings.clone(),
        net,
        net_changed: {
            let (tx, _) = tokio::sync::watch::channel(0);
            crate::runtime::netwatch::spawn(tx.clone());
            tx
        },
        identity,
        audit: audit.clone(),
        audit_key: key,
        limiter,
        tokens,
        shutdown: shutdown.clone(),
        work_sem: Mutex::new(None),
        cu: Arc::new(crate::runtime::cu::CuMachine::new(&settings)),
        policy: Arc::new(crate::policy::amend::SharedPolicy::new(policy)),
        approvals: Arc::new(Approvals::new(settings.approval_timeout)),
        paused: std::sync::atomic::AtomicBool::new(false),
        kill: tokio::sync::watch::Sender::new(0),
        llm: Arc::new(crate::runtime::llm::LlmMachine::new(&settings)),
        hw: Arc::new(crate::runtime::hw::HwMachine::new(&settings)),
        status: crate::runtime::board::Board::new(crate::ipc::SandboxStatus {
            mode: confinement.mode.as_str().to_owned(),
            network: confinement.network.as_str().to_owned(),
            description: confinement.describe(),
        }),
    });
    // Machine control mode's control plane, made before the control socket serves so that
    // `autogpt-shim detach` reaches it.
    let control = match (&settings.session_id, &jail) {
        (Some(_), Some(_)) => None,
        _ => Some(Control::new(machine.clone(), audit.clone())),
    };
    let ipc_stop = CancellationToken::new();
    let console = crate::runtime::console::ConsoleSlot::new(machine.clone(), ipc_stop.clone());
    if settings.console {
        match console.get_or_start().await {
            Ok(c) => {
                let _ = writeln!(
                    out,
                    "Web console on {} (log in with `autogpt-shim console`).",
                    c.origin()
                );
                let _ = out.flush();
            }
            Err(e) => tracing::error!("the web console could not start: {e}"),
        }
    }
    let notify_task = tokio::spawn(crate::runtime::notify::run(
        machine.approvals.clone(),
        ipc_stop.clone(),
    ));
    #[cfg(any(unix, windows))]
    let ipc_task = ipc.map(|s| {
        tokio::spawn(s.serve(
            machine.clone(),
            console.clone(),
            control.clone(),
            ipc_stop.clone(),
        ))
    });

    let outcome = match (&settings.session_id, jail, control) {
        (Some(sid), Some(jail), _) => {
            let rt = Runtime {
                machine: machine.clone(),
                role: Role::Data {
                    session_id: sid.clone(),
                    allowed_root: jail.root_path().to_owned(),
                },
                jail: Some(jail),
                audit: audit.for_session(sid),
                stop: CancellationToken::new(),
                activity: Arc::new(Mutex::new(Instant::now())),
                control: None,
                uses_work_limit: false,
                cu: Default::default(),
                llm: Default::default(),
                hw: Default::default(),
            };
            rt.run().await
        }
        (_, _, control) => {
            let control = control.unwrap_or_else(|| Control::new(machine.clone(), audit.clone()));
            let reaper_stop = CancellationToken::new();
            let reaper = tokio::spawn(control.clone().reaper(reaper_stop.clone()));
            let rt = Runtime {
                machine: machine.clone(),
                role: Role::Control,
                jail: None,
                audit: audit.clone(),
                stop: CancellationToken::new(),
                activity: Arc::new(Mutex::new(Instant::now())),
                control: Some(control.clone()),
                uses_work_limit: false,
                cu: Default::default(),
                llm: Default::default(),
                hw: Default::default(),
            };
            let o = rt.run().await;
            reaper_stop.cancel();
            let _ = reaper.await;
            control.stop_all().await;
            o
        }
    };

    ipc_stop.cancel();
    #[cfg(any(unix, windows))]
    if let Some(t) = ipc_task {
        let _ = t.await;
    }
    console.stopped().await;
    let _ = notify_task.await;
    // Nothing of ours outlives the daemon: end and reap the exec sentinel (it kills any
    // command group still registered on the way out).
    #[cfg(unix)]
    let _ = tokio::task::spawn_blocking(shim_exec::stop_sentinel).await;

    // Step 6: SHIM_STOP best effort.
    if audit.failure().is_none() {
        let _ = audit
            .write(AuditEvent::new("SHIM_STOP").details(Map::new().with("reason", "graceful")))
            .await;
    }
    let _ = writeln!(out, "Shim stopped.");
    let _ = out.flush();
    match outcome {
        Outcome::Stopped | Outcome::Revoked => Ok(()),
        Outcome::Failed(e) => Err(e),
    }
}

/// The legacy audit-key file and the passphrase from the environment, when both exist.
pub fn legacy_key_from_env() -> Option<(std::path::PathBuf, Secret)> {
    let pass = std::env::var("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE")
        .ok()
        .filter(|v| !v.is_empty())
        .map(Secret::new)?;
    let path = shim_auth::audit_key::legacy_key_path()?;
    if Path::new(&path).exists() {
        Some((path, pass))
    } else {
        None
    }
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;
