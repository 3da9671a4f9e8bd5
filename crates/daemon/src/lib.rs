//! shim-daemon: the AutoGPT local executor daemon. See README.md.
//!
//! The crate has two halves and a few shared pieces:
//!
//! * [`runtime`]: the daemon while it runs: the process-wide machine state
//!   (`runtime::machine`), connections (`runtime::conn`), the machine control plane
//!   (`runtime::control`), dispatch of data requests (`runtime::data`, `runtime::cu`),
//!   limits, and the pure protocol pieces ([`runtime::handshake`], [`runtime::grant`]).
//!   [`runtime::start::start`] is its one way in. (The crate-private modules are named in
//!   code font: `cargo doc --document-private-items` shows them.)
//! * [`commands`]: the user's commands besides `start`: `demo`, `doctor`, `install` /
//!   `uninstall` (autostart entries), `auth` / `revoke`. They use the runtime; the runtime
//!   never uses them.
//! * Shared: [`cli`] (the command line), [`config`] (file, environment and flags resolved into
//!   [`config::Settings`]), [`error`] (errors and exit codes), [`host`] (host identity),
//!   [`policy`] (the command policy), [`ipc`] (the local control socket's protocol).
//!
//! [`run`] is what the `autogpt-shim` binary calls with its parsed [`cli::Cli`]; it returns the
//! process exit code of AUDIT_AUTH_CLI.md 5.2.

pub mod cli;
pub mod commands;
pub mod config;
pub mod confinement;
pub mod desktop;
pub mod error;
pub mod host;
pub mod ipc;
pub mod paths;
pub mod policy;
pub mod runtime;

use std::io::IsTerminal;
use std::io::Write;

use shim_protocol::messages::handshake::Platform;

pub use error::ConfigError;
pub use error::DaemonError;

use crate::cli::Cli;
use crate::cli::Command;
use crate::config::ConfigSources;
use crate::config::FlagOverrides;
use crate::error::EXIT_CONFIG;
use crate::error::EXIT_FAIL;
use crate::error::EXIT_OK;

fn flags(cli: &Cli) -> FlagOverrides {
    let mut f = FlagOverrides {
        allowed_root: cli.allowed_root.clone(),
        platform_url: cli.platform_url.clone(),
        session_id: cli.session_id.clone(),
        ..FlagOverrides::default()
    };
    if let Command::Start(s) = &cli.command {
        if s.session_id.is_some() {
            f.session_id = s.session_id.clone();
        }
        f.enable_shell = s.enable_shell;
        f.enable_computer_use = s.enable_computer_use;
        f.enable_clipboard = s.enable_clipboard;
        f.enable_clipboard_read_foreign = s.enable_clipboard_read_foreign;
        f.enable_recording = s.enable_recording;
        f.shell_sandbox = s.shell_sandbox.clone();
        f.shell_network = s.shell_network.clone();
        f.computer_use_display = s.computer_use_display.clone();
    }
    f
}

fn init_tracing(cli: &Cli) {
    let default = if matches!(cli.command, Command::Demo(_)) {
        "error"
    } else {
        "info"
    };
    let level = cli.log_level.map_or(default, |l| l.directive());
    let filter = tracing_subscriber::EnvFilter::try_new(format!(
        "{level},tokio_tungstenite=warn,tungstenite=warn"
    ))
    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Installs the process-wide rustls crypto provider (ring) used for `wss://`.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The local control socket of this user's daemon.
fn socket() -> std::path::PathBuf {
    #[cfg(any(unix, windows))]
    return ipc::socket_path_from_process();
    #[cfg(not(any(unix, windows)))]
    return std::env::temp_dir()
        .join("autogpt-shim")
        .join("control.sock");
}

fn tokio_runtime() -> Result<tokio::runtime::Runtime, DaemonError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| DaemonError::Other(format!("cannot start the async runtime: {e}")))
}

/// Runs one command of the command line and returns the process exit code (5.2).
pub fn run(cli: Cli) -> u8 {
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "{}", shim_audit::cli::EXPERIMENTAL_WARNING);
    init_tracing(&cli);
    install_tls_provider();
    let sources = ConfigSources::from_process(cli.config.clone(), flags(&cli));
    match &cli.command {
        Command::Start(_) => {
            let settings = match config::load(&sources) {
                Ok(s) => s,
                Err(e) => {
                    let _ = writeln!(stderr, "Invalid configuration: {e}");
                    return EXIT_CONFIG;
                }
            };
            let rt = match tokio_runtime() {
                Ok(r) => r,
                Err(e) => {
                    let _ = writeln!(stderr, "{e}");
                    return EXIT_FAIL;
                }
            };
            // The daemon runs as a task on the runtime's workers, not on this thread: a
            // connection's reader then spawns each request's task onto its own worker
            // (tokio's LIFO slot) instead of waking another thread for it (issue 17).
            let daemon = async move {
                let shutdown = tokio_util::sync::CancellationToken::new();
                spawn_signal_handler(shutdown.clone());
                let store = match shim_auth::open_store_from_env() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = writeln!(
                            std::io::stderr(),
                            "Preflight failed: cannot initialise the mandatory audit log: credential store: {e}"
                        );
                        return EXIT_CONFIG;
                    }
                };
                let deps = runtime::start::StartDeps {
                    store,
                    legacy_key: runtime::start::legacy_key_from_env(),
                    shutdown,
                    out: Box::new(std::io::stdout()),
                    #[cfg(any(unix, windows))]
                    control_socket: Some(ipc::socket_path_from_process()),
                    #[cfg(not(any(unix, windows)))]
                    control_socket: None,
                };
                match runtime::start::start(settings, deps).await {
                    Ok(()) => EXIT_OK,
                    Err(e) => {
                        let _ = writeln!(std::io::stderr(), "{e}");
                        e.exit_code()
                    }
                }
            };
            rt.block_on(async move {
                match tokio::spawn(daemon).await {
                    Ok(code) => code,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(e) => {
                        let _ = writeln!(std::io::stderr(), "the daemon's task ended: {e}");
                        EXIT_FAIL
                    }
                }
            })
        }
        Command::Approve { id, always: false } => {
            commands::local::decide(&socket(), *id, true, &mut std::io::stdout(), &mut stderr)
        }
        Command::Approve { id, always: true } => {
            commands::local::always_allow(&socket(), *id, &mut std::io::stdout(), &mut stderr)
        }
        Command::Detach { session_id } => {
            commands::local::detach(&socket(), session_id, &mut std::io::stdout(), &mut stderr)
        }
        Command::Deny { id } => {
            commands::local::decide(&socket(), *id, false, &mut std::io::stdout(), &mut stderr)
        }
        Command::Approvals { json } => {
            commands::local::list(&socket(), *json, &mut std::io::stdout(), &mut stderr)
        }
        Command::Pause => {
            commands::local::pause(&socket(), true, &mut std::io::stdout(), &mut stderr)
        }
        Command::Resume => {
            commands::local::pause(&socket(), false, &mut std::io::stdout(), &mut stderr)
        }
        Command::Kill => commands::local::kill(&socket(), &mut std::io::stdout(), &mut stderr),
        Command::Takeover { timeout } => commands::local::takeover(
            &socket(),
            Some(*timeout),
            &mut std::io::stdout(),
            &mut stderr,
        ),
        Command::Handback => {
            commands::local::takeover(&socket(), None, &mut std::io::stdout(), &mut stderr)
        }
        Command::Console { no_open } => {
            commands::local::console(&socket(), !*no_open, &mut std::io::stdout(), &mut stderr)
        }
        Command::Policy(cli::PolicyCommand::Check {
            json,
            policy,
            command,
            argv,
        }) => {
            let file = match policy {
                Some(p) => Some(p.clone()),
                None => match config::load(&sources) {
                    Ok(s) => s.command_policy_file,
                    Err(e) => {
                        let _ = writeln!(stderr, "Invalid configuration: {e}");
                        return EXIT_CONFIG;
                    }
                },
            };
            commands::local::policy_check(
                file.as_deref(),
                command.as_deref(),
                argv,
                *json,
                &mut std::io::stdout(),
                &mut stderr,
            )
        }
        Command::Status { json } => {
            let settings = match config::load(&sources) {
                Ok(s) => s,
                Err(e) => {
                    let _ = writeln!(stderr, "Invalid configuration: {e}");
                    return EXIT_CONFIG;
                }
            };
            let mut out = std::io::stdout();
            let live = commands::local::live_status(&socket());
            if *json {
                return commands::local::status_json(live.as_ref(), &mut out);
            }
            match &live {
                Some(s) => commands::local::print_status(s, &mut out),
                None => {
                    let _ = writeln!(out, "Daemon: not running");
                }
            }
            let _ = writeln!(out, "Configured platform: {}", settings.platform_url);
            match &settings.session_id {
                Some(sid) => {
                    let _ = writeln!(out, "Mode: legacy session {sid}");
                    let _ = writeln!(out, "Allowed root: {}", settings.allowed_root.display());
                }
                None => {
                    let _ = writeln!(
                        out,
                        "Mode: machine control (folders are chosen per chat in the platform)"
                    );
                }
            }
            match autostart_entry(&sources) {
                Some((platform, _, a)) => {
                    let state = if a.file.is_file() {
                        "installed"
                    } else {
                        "not installed"
                    };
                    let _ = writeln!(out, "Autostart entry ({platform}): {state}");
                    let _ = writeln!(out, "  path: {}", a.file.display());
                    let _ = writeln!(out, "  enable: {}", a.enable);
                    let _ = writeln!(out, "  disable: {}", a.disable);
                    for n in &a.notes {
                        let _ = writeln!(out, "  note: {n}");
                    }
                }
                None => {
                    let _ = writeln!(
                        out,
                        "Autostart entry: not supported on this platform by this build"
                    );
                }
            }
            if live.is_some() {
                EXIT_OK
            } else {
                commands::local::EXIT_NOT_RUNNING
            }
        }
        Command::Install { .. } => install(&sources),
        Command::Uninstall => {
            let Some((_, _, a)) = autostart_entry(&sources) else {
                let _ = writeln!(
                    stderr,
                    "Unsupported platform for autostart uninstall: {}",
                    std::env::consts::OS
                );
                return EXIT_FAIL;
            };
            if a.file.is_file()
                && let Err(e) = std::fs::remove_file(&a.file)
            {
                let _ = writeln!(stderr, "Cannot remove {}: {e}", a.file.display());
                return EXIT_FAIL;
            }
            let mut out = std::io::stdout();
            let _ = writeln!(
                out,
                "Removed autostart entry (or it was already absent): {}",
                a.file.display()
            );
            let _ = writeln!(
                out,
                "If the service manager had registered it, run: {}",
                a.disable
            );
            EXIT_OK
        }
        Command::Audit(cmd) => {
            let settings = match config::load(&sources) {
                Ok(s) => s,
                Err(e) => {
                    let _ = writeln!(stderr, "Invalid configuration: {e}");
                    return EXIT_CONFIG;
                }
            };
            let machine_id = settings
                .machine_id
                .clone()
                .unwrap_or_else(|| shim_audit::NO_ID.to_owned());
            let ctx = shim_audit::cli::Context {
                log_path: settings.audit_log_path.clone(),
                keys: &shim_auth::audit_key::StoreKeyLoader,
                machine_id,
                shim_version: env!("CARGO_PKG_VERSION").to_owned(),
                color: shim_audit::cli::color_wanted(std::io::stdout().is_terminal()),
            };
            let mut stdout = std::io::stdout().lock();
            let mut stderr = std::io::stderr().lock();
            let mut stdin = std::io::stdin().lock();
            let mut io = shim_audit::cli::Io {
                stdout: &mut stdout,
                stderr: &mut stderr,
                stdin: &mut stdin,
            };
            shim_audit::cli::run(cmd, &ctx, &mut io)
        }
        Command::Demo(args) => {
            let rt = match tokio_runtime() {
                Ok(r) => r,
                Err(e) => {
                    let _ = writeln!(stderr, "{e}");
                    return EXIT_FAIL;
                }
            };
            let mut out = std::io::stdout();
            match rt.block_on(commands::demo::run(args.enable_shell, &mut out)) {
                Ok(()) => EXIT_OK,
                Err(e) => {
                    let _ = writeln!(stderr, "demo failed: {e}");
                    EXIT_FAIL
                }
            }
        }
        Command::Auth { no_browser } => commands::auth::auth(&sources, !*no_browser),
        Command::Revoke => commands::auth::revoke(&sources),
        Command::Update {
            check,
            allow_downgrade,
            base_url,
        } => update(&sources, *check, *allow_downgrade, base_url.as_deref()),
        Command::Doctor => {
            let settings = match config::load(&sources) {
                Ok(s) => s,
                Err(e) => {
                    let _ = writeln!(stderr, "Invalid configuration: {e}");
                    return EXIT_CONFIG;
                }
            };
            let checks =
                commands::doctor::checks(&settings, &commands::doctor::StoreEnv::from_process());
            commands::doctor::report(&checks, &mut std::io::stdout())
        }
    }
}

fn env_lookup(sources: &ConfigSources) -> impl Fn(&str) -> Option<String> + '_ {
    |name| {
        sources
            .env
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
    }
}

fn autostart_entry(
    sources: &ConfigSources,
) -> Option<(&'static str, Platform, commands::autostart::Autostart)> {
    let platform = host::platform()?;
    let home = sources.home.clone()?;
    commands::autostart::for_platform(platform, &home, &env_lookup(sources))
        .map(|a| (platform.as_str(), platform, a))
}

/// `update` (docs/update.md): the signed self-update of the running executable's folder.
fn update(
    sources: &ConfigSources,
    check: bool,
    allow_downgrade: bool,
    base_url: Option<&str>,
) -> u8 {
    let mut stderr = std::io::stderr();
    let fail = |stderr: &mut std::io::Stderr, e: &dyn std::fmt::Display| {
        let _ = writeln!(stderr, "update refused: {e}\nnothing was changed");
        EXIT_FAIL
    };
    // Fail closed before anything else: no trusted key, no update.
    if let Err(e) = commands::update::trusted_key() {
        return fail(&mut stderr, &e);
    }
    let settings = match config::load(sources) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(stderr, "Invalid configuration: {e}");
            return EXIT_CONFIG;
        }
    };
    let install_dir = match std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map(|p| p.parent().map(std::path::Path::to_path_buf))
    {
        Ok(Some(d)) => d,
        Ok(None) | Err(_) => {
            let _ = writeln!(stderr, "Cannot locate the running executable");
            return EXIT_FAIL;
        }
    };
    let net = match shim_auth::net::Net::new(&settings.net_options()) {
        Ok(n) => n,
        Err(e) => return fail(&mut stderr, &e),
    };
    // The audit log is opened first: an update that cannot be recorded is refused.
    let audit = if check {
        None
    } else {
        match open_audit_log(&settings) {
            Ok(log) => Some(log),
            Err(e) => return fail(&mut stderr, &commands::update::UpdateError::Audit(e)),
        }
    };
    let rt = match tokio_runtime() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(stderr, "{e}");
            return EXIT_FAIL;
        }
    };
    let req = commands::update::Request {
        base_url: base_url
            .unwrap_or(commands::update::DEFAULT_BASE_URL)
            .to_owned(),
        check,
        allow_downgrade,
        install_dir,
    };
    match rt.block_on(commands::update::update(&req, &net, audit.as_ref())) {
        Ok(outcome) => {
            let service = autostart_entry(sources)
                .filter(|(_, _, a)| a.file.exists())
                .map(|(_, platform, _)| restart_hint(platform));
            let _ = commands::update::report(&outcome, service, &mut std::io::stdout());
            EXIT_OK
        }
        Err(e) => fail(&mut stderr, &e),
    }
}

/// How to restart the installed service.
fn restart_hint(platform: Platform) -> &'static str {
    match platform {
        Platform::Linux | Platform::Wsl2 => "systemctl --user restart autogpt-shim.service",
        Platform::Darwin => "launchctl kickstart -k gui/$(id -u)/net.autogpt.shim",
        _ => r"schtasks /End /TN \AutoGPT\Shim, then schtasks /Run /TN \AutoGPT\Shim",
    }
}

/// Opens the audit log as the daemon does (its key from the credential store).
fn open_audit_log(settings: &config::Settings) -> Result<shim_audit::AuditLog, String> {
    let store = shim_auth::open_store_from_env().map_err(|e| format!("credential store: {e}"))?;
    let legacy = runtime::start::legacy_key_from_env();
    let legacy = legacy.as_ref().map(|(p, s)| (p.as_path(), s));
    let (key, _) = shim_auth::audit_key::load_or_create(store.as_ref(), legacy)
        .map_err(|e| format!("audit key: {e}"))?;
    let identity = runtime::start::identity(settings).map_err(|e| e.to_string())?;
    let cfg = shim_audit::WriterConfig::new(
        settings.audit_log_path.clone(),
        &identity.machine_id,
        env!("CARGO_PKG_VERSION"),
    );
    shim_audit::AuditLog::open(cfg, key).map_err(|e| e.to_string())
}

/// `install` (5.4): writes the per-user service definition; never activates it.
fn install(sources: &ConfigSources) -> u8 {
    let mut stderr = std::io::stderr();
    let Some((name, platform, a)) = autostart_entry(sources) else {
        let _ = writeln!(
            stderr,
            "Unsupported platform for autostart install: {}",
            std::env::consts::OS
        );
        return EXIT_FAIL;
    };
    let program = match std::env::current_exe().and_then(std::fs::canonicalize) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(stderr, "Cannot locate the running executable: {e}");
            return EXIT_FAIL;
        }
    };
    let config = match &sources.config_path {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => sources.cwd.join(p),
        None => match config::default_config_path(sources.home.as_deref(), sources) {
            Some(p) => p,
            None => {
                let _ = writeln!(stderr, "Cannot determine the configuration file path.");
                return EXIT_FAIL;
            }
        },
    };
    let subst = commands::autostart::Substitutions {
        program,
        config,
        out_log: a.log_dir.join("shim.out.log"),
        err_log: a.log_dir.join("shim.err.log"),
    };
    let contents = match commands::autostart::definition(platform, &subst) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(stderr, "Cannot write the autostart entry: {e}");
            let _ = writeln!(
                stderr,
                "hint: move the program or pass --config with a path without control characters"
            );
            return EXIT_FAIL;
        }
    };
    let written = std::fs::create_dir_all(&a.log_dir)
        .and_then(|()| match a.file.parent() {
            Some(d) => std::fs::create_dir_all(d),
            None => Ok(()),
        })
        .and_then(|()| std::fs::write(&a.file, contents));
    if let Err(e) = written {
        let _ = writeln!(stderr, "Cannot write {}: {e}", a.file.display());
        return EXIT_FAIL;
    }
    let mut out = std::io::stdout();
    let _ = writeln!(out, "Wrote autostart entry: {}", a.file.display());
    let _ = writeln!(out, "Platform: {name}");
    let _ = writeln!(out, "Enable: {}", a.enable);
    let _ = writeln!(out, "Disable: {}", a.disable);
    for n in &a.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    EXIT_OK
}

fn spawn_signal_handler(shutdown: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        #[cfg(unix)]
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        // Windows: CTRL_BREAK and closing the console stop the daemon like SIGTERM.
        #[cfg(windows)]
        let term = tokio::signal::windows::ctrl_break();
        #[cfg(windows)]
        let close = tokio::signal::windows::ctrl_close();
        #[cfg(windows)]
        let close_recv = async move {
            match close {
                Ok(mut c) => {
                    c.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        #[cfg(unix)]
        let close_recv = std::future::pending::<()>();
        match term {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                    () = close_recv => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        tracing::info!("stop requested by signal");
        shutdown.cancel();
    });
}
