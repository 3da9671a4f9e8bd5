//! Fuzzes configuration loading (AUDIT_AUTH_CLI.md 4, `shim_daemon::config::load`) from a
//! hostile config file and environment.
//!
//! Input: the bytes up to the first NUL are the TOML file (written to a private temporary
//! file, so invalid UTF-8 is exercised too); each later line `NAME=VALUE` becomes the
//! environment variable `AUTOGPT_SHIM_NAME`.
//!
//! Invariants: `load` returns settings or a `ConfigError`, never panics. An error names
//! where the problem is: a known setting key, one of the given environment variables, or the
//! file (its path, with a line number for syntax errors), and says why (non-empty reason).
//! Accepted settings respect the documented bounds (positive limits and intervals,
//! `reconnect_max_delay >= reconnect_base_delay`, absolute paths, masked regions with
//! x1 < x2 and y1 < y2).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shim_daemon::config;
use shim_daemon::config::ConfigSources;
use shim_daemon::config::FlagOverrides;

/// The keys of AUDIT_AUTH_CLI.md 4.3 plus this implementation's additions (config.rs).
const KEYS: &[&str] = &[
    "platform_url",
    "platform_ws_url",
    "platform_oauth_url",
    "allow_insecure_platform_url",
    "oauth_client_id",
    "oauth_redirect_port",
    "oauth_issuer",
    "session_id",
    "machine_id",
    "display_name",
    "allowed_root",
    "audit_log_path",
    "enable_shell",
    "enable_computer_use",
    "enable_local_llm",
    "enable_hardware",
    "enable_clipboard",
    "enable_clipboard_read_foreign",
    "enable_recording",
    "max_concurrent",
    "max_concurrent_commands",
    "command_timeout_seconds",
    "max_file_size_bytes",
    "max_commands_per_minute",
    "max_screenshots_per_minute",
    "computer_use_display",
    "computer_use_display_size",
    "computer_use_masked_regions",
    "reconnect_base_delay",
    "reconnect_max_delay",
    "reconnect_jitter_seconds",
    "ollama_url",
    "recording_buffer_dir",
    "recording_default_interpretation_route",
    "recording_channels",
    "recording_retention_limit",
    "status_interval_seconds",
    "idle_timeout_seconds",
    "idle_check_interval_seconds",
    "ws_ping_interval_seconds",
    "ws_pong_timeout_seconds",
    "handshake_timeout_seconds",
    "oauth_callback_timeout_seconds",
    "command_policy_file",
    "approval_timeout_seconds",
    "console",
    "shell_sandbox",
    "shell_network",
    "shell_sandbox_writable",
    "shell_sandbox_readable",
    "local_llm_timeout_seconds",
    "hardware_protocol",
    "hardware_serial_allow",
    "hardware_gpio_writable",
    "hardware_sysfs_root",
    "hardware_devfs_root",
    "hardware_handle_expiry_seconds",
];

fn file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("config-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir.join("config.toml")
    })
}

fuzz_target!(|data: &[u8]| {
    let (toml, env) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let path = file();
    std::fs::write(path, toml).expect("write the config file");
    let env: Vec<(String, String)> = String::from_utf8_lossy(env)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (format!("AUTOGPT_SHIM_{k}"), v.to_owned()))
        .collect();
    let src = ConfigSources {
        config_path: Some(path.clone()),
        env: env.clone(),
        flags: FlagOverrides::default(),
        home: Some(PathBuf::from("/home/ada")),
        cwd: PathBuf::from("/work"),
    };
    match config::load(&src) {
        Err(e) => {
            let loc = e.location.as_str();
            assert!(
                KEYS.contains(&loc)
                    || env.iter().any(|(k, _)| k == loc)
                    || loc.starts_with(&*path.to_string_lossy()),
                "error location {loc:?} names no key, variable or file ({e})"
            );
            assert!(!e.reason.is_empty(), "error without a reason at {loc:?}");
        }
        Ok(s) => {
            assert!(s.max_concurrent >= 1 && s.max_concurrent_commands >= 1);
            assert!(s.command_timeout_seconds >= 1 && s.max_file_size_bytes >= 1);
            assert!(s.max_commands_per_minute >= 1 && s.max_screenshots_per_minute >= 1);
            assert!(s.oauth_redirect_port >= 1);
            assert!(s.reconnect_base_delay > 0.0 && s.reconnect_base_delay.is_finite());
            assert!(s.reconnect_max_delay >= s.reconnect_base_delay);
            assert!(s.reconnect_jitter_seconds >= 0.0 && s.reconnect_jitter_seconds.is_finite());
            assert!(s.allowed_root.is_absolute() && s.audit_log_path.is_absolute());
            assert!(!s.oauth_client_id.is_empty());
            for [x1, y1, x2, y2] in &s.computer_use_masked_regions {
                assert!(x1 < x2 && y1 < y2, "region {x1},{y1},{x2},{y2}");
            }
            let t = s.tuning;
            for d in [
                t.status_interval,
                t.idle_timeout,
                t.idle_check_interval,
                t.ws_ping_interval,
                t.ws_pong_timeout,
                t.handshake_timeout,
                t.oauth_callback_timeout,
            ] {
                assert!(!d.is_zero(), "zero interval in {t:?}");
            }
        }
    }
});
