#![allow(clippy::unwrap_used)]

use super::*;

fn sources(
    env: &[(&str, &str)],
    flags: FlagOverrides,
    file: Option<&str>,
) -> (ConfigSources, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config_path = file.map(|text| {
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        p
    });
    let src = ConfigSources {
        config_path,
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        flags,
        home: Some(PathBuf::from("/home/ada")),
        cwd: PathBuf::from("/work"),
    };
    (src, dir)
}

#[test]
fn defaults() {
    let (src, _d) = sources(&[], FlagOverrides::default(), None);
    let s = load(&src).unwrap();
    assert_eq!(s.platform_url, "wss://platform.autogpt.net");
    assert_eq!(s.ws_base(), "wss://platform.autogpt.net/ws/local-executor");
    assert_eq!(s.http_base(), "https://platform.autogpt.net");
    assert_eq!(
        s.deployment_id(),
        "autogpt-local-executor@https://platform.autogpt.net"
    );
    assert_eq!(s.allowed_root, PathBuf::from("/home/ada/autogpt-workspace"));
    assert_eq!(
        s.audit_log_path,
        PathBuf::from("/home/ada/.local/state/autogpt-local-executor/audit.log")
    );
    assert!(!s.enable_shell);
    assert_eq!(
        (
            s.max_concurrent,
            s.command_timeout_seconds,
            s.max_file_size_bytes
        ),
        (4, 30, 10_485_760)
    );
    assert_eq!(s.tuning, Tuning::default());
    assert!(!s.is_legacy());
}

#[test]
fn precedence_flags_over_env_over_file() {
    let file = "platform_url = \"https://file.example\"\nmax_concurrent = 2\nsession_id = \"from-file\"\nenable_shell = true\n";
    let (src, _d) = sources(
        &[
            ("AUTOGPT_SHIM_PLATFORM_URL", "https://env.example"),
            ("autogpt_shim_max_concurrent", "3"),
        ],
        FlagOverrides {
            platform_url: Some("https://flag.example/".into()),
            ..FlagOverrides::default()
        },
        Some(file),
    );
    let s = load(&src).unwrap();
    assert_eq!(s.platform_url, "https://flag.example/");
    assert_eq!(s.ws_base(), "wss://flag.example/ws/local-executor");
    assert_eq!(s.max_concurrent, 3);
    assert_eq!(s.session_id.as_deref(), Some("from-file"));
    // A flag can only turn a capability on; the file's `true` stays.
    assert!(s.enable_shell);
}

#[test]
fn strict_types_in_toml_and_env() {
    let (src, _d) = sources(
        &[],
        FlagOverrides::default(),
        Some("max_concurrent = \"4\"\n"),
    );
    let e = load(&src).unwrap_err();
    assert_eq!(e.location, "max_concurrent");
    let (src, _d) = sources(
        &[],
        FlagOverrides::default(),
        Some("max_concurrent = 4.0\n"),
    );
    assert!(load(&src).is_err());
    // An integer is accepted for a float key.
    let (src, _d) = sources(
        &[],
        FlagOverrides::default(),
        Some("reconnect_base_delay = 2\n"),
    );
    assert_eq!(load(&src).unwrap().reconnect_base_delay, 2.0);
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_ENABLE_SHELL", "maybe")],
        FlagOverrides::default(),
        None,
    );
    assert_eq!(
        load(&src).unwrap_err().location,
        "AUTOGPT_SHIM_ENABLE_SHELL"
    );
    for (v, want) in [("yes", true), ("T", true), ("off", false), ("0", false)] {
        let (src, _d) = sources(
            &[("AUTOGPT_SHIM_ENABLE_SHELL", v)],
            FlagOverrides::default(),
            None,
        );
        assert_eq!(load(&src).unwrap().enable_shell, want, "{v}");
    }
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_MAX_CONCURRENT", "0")],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_err());
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_RECORDING_CHANNELS", "[\"floor\"]")],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_ok());
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_RECORDING_CHANNELS", "floor")],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_err());
}

#[test]
fn syntax_errors_name_the_line() {
    let (src, _d) = sources(&[], FlagOverrides::default(), Some("a = 1\nb = = 2\n"));
    let e = load(&src).unwrap_err();
    assert!(e.location.ends_with("line 2"), "{e}");
}

#[test]
fn unknown_keys_and_reserved_env_are_ignored() {
    let (src, _d) = sources(
        &[
            ("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "x"),
            ("AUTOGPT_SHIM_SOMETHING", "y"),
        ],
        FlagOverrides::default(),
        Some("unknown = 1\n[table]\nx = 1\n"),
    );
    assert!(load(&src).is_ok());
}

#[test]
fn paths_expand_tilde_and_must_be_absolute() {
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_ALLOWED_ROOT", "~/work")],
        FlagOverrides::default(),
        None,
    );
    assert_eq!(
        load(&src).unwrap().allowed_root,
        PathBuf::from("/home/ada/work")
    );
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_ALLOWED_ROOT", "relative/dir")],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_err());
    let (src, _d) = sources(
        &[],
        FlagOverrides {
            allowed_root: Some(PathBuf::from("rel")),
            ..FlagOverrides::default()
        },
        None,
    );
    assert_eq!(load(&src).unwrap().allowed_root, PathBuf::from("/work/rel"));
}

#[test]
fn plaintext_urls_only_for_loopback() {
    for (url, ok) in [
        ("http://127.0.0.1:8000", true),
        ("ws://localhost:1", true),
        ("http://[::1]:80", true),
        ("http://example.com", false),
        ("ftp://example.com", false),
        ("not a url", false),
        ("https://example.com", true),
    ] {
        let (src, _d) = sources(
            &[("AUTOGPT_SHIM_PLATFORM_URL", url)],
            FlagOverrides::default(),
            None,
        );
        assert_eq!(load(&src).is_ok(), ok, "{url}");
    }
    let (src, _d) = sources(
        &[
            ("AUTOGPT_SHIM_PLATFORM_URL", "http://lan.example"),
            ("AUTOGPT_SHIM_ALLOW_INSECURE_PLATFORM_URL", "1"),
        ],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_ok());
}

#[test]
fn blank_session_id_means_control_mode() {
    for v in ["", "   "] {
        let (src, _d) = sources(
            &[],
            FlagOverrides {
                session_id: Some(v.into()),
                ..FlagOverrides::default()
            },
            None,
        );
        assert!(!load(&src).unwrap().is_legacy());
    }
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_SESSION_ID", " abc ")],
        FlagOverrides::default(),
        None,
    );
    assert_eq!(load(&src).unwrap().session_id.as_deref(), Some("abc"));
}

#[test]
fn reconnect_delays_are_validated() {
    let (src, _d) = sources(
        &[
            ("AUTOGPT_SHIM_RECONNECT_BASE_DELAY", "5"),
            ("AUTOGPT_SHIM_RECONNECT_MAX_DELAY", "1"),
        ],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_err());
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_RECONNECT_JITTER_SECONDS", "-1")],
        FlagOverrides::default(),
        None,
    );
    assert!(load(&src).is_err());
}

#[test]
fn deployment_id_normalisation() {
    assert_eq!(
        normalize_http_base("HTTPS://Platform.AutoGPT.net:443/"),
        "https://platform.autogpt.net"
    );
    assert_eq!(
        normalize_http_base("http://127.0.0.1:8080/base/?q=1#f"),
        "http://127.0.0.1:8080/base"
    );
}

#[test]
fn computer_use_display_and_masked_regions() {
    let (src, _d) = sources(
        &[
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", ":77"),
            (
                "AUTOGPT_SHIM_COMPUTER_USE_MASKED_REGIONS",
                r#"["0,0,100,50", " 10 , 20 , 30 , 40 "]"#,
            ),
        ],
        FlagOverrides::default(),
        None,
    );
    let s = load(&src).unwrap();
    assert_eq!(
        s.computer_use_display,
        crate::config::DisplayMode::Named(":77".into())
    );
    assert_eq!(
        s.computer_use_masked_regions,
        vec![[0, 0, 100, 50], [10, 20, 30, 40]]
    );
    for bad in [r#"["1,2,3"]"#, r#"["5,0,1,9"]"#, r#"["a,b,c,d"]"#] {
        let (src, _d) = sources(
            &[("AUTOGPT_SHIM_COMPUTER_USE_MASKED_REGIONS", bad)],
            FlagOverrides::default(),
            None,
        );
        assert!(load(&src).is_err(), "{bad}");
    }
}

/// Found by the `config_toml` fuzz target: a huge interval or delay passed validation and then
/// panicked when converted to a `Duration` (at load for the tuning keys, at the first
/// reconnect for the reconnect delays). It must be a typed error naming the key.
#[test]
fn huge_seconds_are_a_typed_error_not_a_panic() {
    for (key, text) in [
        (
            "status_interval_seconds",
            "status_interval_seconds = 1e300\n",
        ),
        (
            "ws_pong_timeout_seconds",
            "ws_pong_timeout_seconds = 2e19\n",
        ),
        (
            "reconnect_max_delay",
            "reconnect_max_delay = 1.7976931348623157e308\n",
        ),
        (
            "reconnect_jitter_seconds",
            "reconnect_jitter_seconds = 1e10\n",
        ),
    ] {
        let (src, _d) = sources(&[], FlagOverrides::default(), Some(text));
        let e = load(&src).unwrap_err();
        assert_eq!(e.location, key, "{text}");
        assert!(e.reason.contains("at most"), "{e}");
    }
    let (src, _d) = sources(
        &[("AUTOGPT_SHIM_IDLE_TIMEOUT_SECONDS", "1e300")],
        FlagOverrides::default(),
        None,
    );
    assert_eq!(
        load(&src).unwrap_err().location,
        "AUTOGPT_SHIM_IDLE_TIMEOUT_SECONDS"
    );
    // The bound itself is accepted.
    let (src, _d) = sources(
        &[],
        FlagOverrides::default(),
        Some("reconnect_max_delay = 1e9\nidle_timeout_seconds = 1000000000\n"),
    );
    let s = load(&src).unwrap();
    assert_eq!(s.tuning.idle_timeout, Duration::from_secs(1_000_000_000));
}

#[test]
fn shell_sandbox_settings_follow_the_usual_precedence() {
    use shim_exec::sandbox::NetworkMode;
    use shim_exec::sandbox::SandboxMode;
    let (src, _d) = sources(&[], FlagOverrides::default(), None);
    let s = load(&src).unwrap();
    assert_eq!((s.shell_sandbox, s.shell_network), (None, None));
    assert!(s.shell_sandbox_writable.is_empty() && s.shell_sandbox_readable.is_empty());

    let file = "shell_sandbox = \"read-only\"\nshell_network = \"allow\"\nshell_sandbox_writable = [\"~/.cache/pip\", \"/opt/x\"]\nshell_sandbox_readable = [\"~/.gitconfig\"]\n";
    let (src, _d) = sources(&[], FlagOverrides::default(), Some(file));
    let s = load(&src).unwrap();
    assert_eq!(s.shell_sandbox, Some(SandboxMode::ReadOnly));
    assert_eq!(s.shell_network, Some(NetworkMode::Allow));
    assert_eq!(
        s.shell_sandbox_writable,
        [
            PathBuf::from("/home/ada/.cache/pip"),
            PathBuf::from("/opt/x")
        ]
    );
    assert_eq!(
        s.shell_sandbox_readable,
        [PathBuf::from("/home/ada/.gitconfig")]
    );

    // The environment beats the file, the flag beats both.
    let env = [
        ("AUTOGPT_SHIM_SHELL_SANDBOX", "off"),
        ("AUTOGPT_SHIM_SHELL_NETWORK", "deny"),
    ];
    let (src, _d) = sources(&env, FlagOverrides::default(), Some(file));
    let s = load(&src).unwrap();
    assert_eq!(s.shell_sandbox, Some(SandboxMode::Off));
    assert_eq!(s.shell_network, Some(NetworkMode::Deny));
    let flags = FlagOverrides {
        shell_sandbox: Some("workspace-write".into()),
        shell_network: Some("allow".into()),
        ..FlagOverrides::default()
    };
    let (src, _d) = sources(&env, flags, Some(file));
    let s = load(&src).unwrap();
    assert_eq!(s.shell_sandbox, Some(SandboxMode::WorkspaceWrite));
    assert_eq!(s.shell_network, Some(NetworkMode::Allow));
}

#[test]
fn bad_shell_sandbox_values_are_refused_with_a_hint() {
    for (env, loc) in [
        (
            ("AUTOGPT_SHIM_SHELL_SANDBOX", "on"),
            "AUTOGPT_SHIM_SHELL_SANDBOX",
        ),
        (
            ("AUTOGPT_SHIM_SHELL_NETWORK", "none"),
            "AUTOGPT_SHIM_SHELL_NETWORK",
        ),
        (
            ("AUTOGPT_SHIM_SHELL_SANDBOX_WRITABLE", "[\"relative/dir\"]"),
            "AUTOGPT_SHIM_SHELL_SANDBOX_WRITABLE",
        ),
    ] {
        let (src, _d) = sources(&[env], FlagOverrides::default(), None);
        let e = load(&src).unwrap_err();
        assert_eq!(e.location, loc);
    }
    let flags = FlagOverrides {
        shell_sandbox: Some("Workspace-Write".into()),
        ..FlagOverrides::default()
    };
    let (src, _d) = sources(&[], flags, None);
    let e = load(&src).unwrap_err();
    assert_eq!(e.location, "--shell-sandbox");
    assert!(e.reason.contains("off, workspace-write, read-only") && e.reason.contains("hint:"));
}

#[test]
fn computer_use_display_modes_and_size() {
    use crate::config::DisplayMode;
    let load_env = |vars: &[(&str, &str)], flags: FlagOverrides| {
        let (src, _d) = sources(vars, flags, None);
        load(&src)
    };
    let s = load_env(&[], FlagOverrides::default()).unwrap();
    assert_eq!(s.computer_use_display, DisplayMode::User);
    assert_eq!(s.computer_use_display_size, [1280, 800]);
    let s = load_env(
        &[
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated"),
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY_SIZE", "1024x768"),
        ],
        FlagOverrides::default(),
    )
    .unwrap();
    assert_eq!(s.computer_use_display, DisplayMode::Isolated);
    assert_eq!(s.computer_use_display_size, [1024, 768]);
    // The flag wins over the environment.
    let s = load_env(
        &[("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", "isolated")],
        FlagOverrides {
            computer_use_display: Some("user".into()),
            ..FlagOverrides::default()
        },
    )
    .unwrap();
    assert_eq!(s.computer_use_display, DisplayMode::User);
    for bad in ["isolate", "USER", "foo bar:1"] {
        let e = load_env(
            &[("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", bad)],
            FlagOverrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY"), "{e}");
        assert!(e.contains("user, isolated"), "{e}");
    }
    for bad in ["1280", "0x800", "1280x99999", "axb", "1280x800x24"] {
        let e = load_env(
            &[("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY_SIZE", bad)],
            FlagOverrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("WIDTHxHEIGHT"), "{e}");
    }
}
