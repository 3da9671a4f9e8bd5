//! The command line: version, usage errors, configuration errors, preflight refusals.

use shim_platform_peer::PeerConfig;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::finish;
use crate::suite::harness::ops;

#[tokio::test]
async fn version_prints_name_and_version() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.command(&["--version"]).spawn().unwrap();
    let (code, out, _) = finish(child, T).await;
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        format!("autogpt-shim {}", env!("CARGO_PKG_VERSION"))
    );
}

#[tokio::test]
async fn help_describes_every_command_as_built() {
    let env = Env::new(PeerConfig::default()).await;
    for args in [vec!["--help"], vec!["start", "--help"]] {
        let child = env.command(&args).spawn().unwrap();
        let (code, out, _) = finish(child, T).await;
        assert_eq!(code, 0, "args {args:?}");
        assert!(!out.contains("not available"), "args {args:?}: {out}");
    }
    let child = env.command(&["--help"]).spawn().unwrap();
    let (_, out, _) = finish(child, T).await;
    let doctor = out
        .lines()
        .find(|l| l.trim_start().starts_with("doctor"))
        .unwrap_or_default();
    assert!(doctor.contains("Check the machine"), "{out}");
}

#[tokio::test]
async fn usage_errors_exit_2() {
    let env = Env::new(PeerConfig::default()).await;
    for args in [
        vec![],
        vec!["bogus"],
        vec!["--log-level", "LOUD", "status"],
        vec!["audit", "show", "x"],
    ] {
        let child = env.command(&args).spawn().unwrap();
        let (code, _, _) = finish(child, T).await;
        assert_eq!(code, 2, "args {args:?}");
    }
}

#[tokio::test]
async fn invalid_configuration_exits_78() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.command(&["start"]);
    c.env("AUTOGPT_SHIM_MAX_CONCURRENT", "four");
    let (code, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 78);
    assert!(
        err.contains("Invalid configuration: AUTOGPT_SHIM_MAX_CONCURRENT"),
        "{err}"
    );

    let cfg = env.dir.path().join("bad.toml");
    std::fs::write(&cfg, "max_concurrent = \"4\"\n").unwrap();
    let mut c = env.command(&["--config", cfg.to_str().unwrap(), "start"]);
    let (code, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 78);
    assert!(
        err.contains("Invalid configuration: max_concurrent"),
        "{err}"
    );

    // Plaintext to a non-loopback host is refused.
    let mut c = env.command(&["start"]);
    c.env("AUTOGPT_SHIM_PLATFORM_URL", "http://example.com");
    let (code, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{err}");
}

#[tokio::test]
async fn recording_preview_is_refused_and_audited() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.command(&["start", "--enable-recording"]);
    let (code, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("Preflight failed:"), "{err}");
    assert!(err.contains("design preview"), "{err}");
    assert!(
        err.contains("capture and interpretation are incomplete"),
        "{err}"
    );
    let records = env.audit_records();
    assert_eq!(ops(&records), vec!["DAEMON_PREFLIGHT_FAILED"]);
    let r = &records[0];
    assert_eq!(r["result"]["exit_code"], 78);
    assert_eq!(r["result"]["error_code"], "CAPABILITY_NOT_GRANTED");
    assert_eq!(
        r["details"]["missing_permissions"][0],
        "recording_preview_disabled"
    );
    env.verify_audit();
    env.assert_no_connection(std::time::Duration::from_millis(200))
        .await;
}

#[tokio::test]
async fn recording_preview_is_refused_even_when_the_audit_log_cannot_be_written() {
    // 10.1 item 1: exit 78 and the recording message, also when the audit write fails.
    let env = Env::new(PeerConfig::default()).await;
    let blocker = env.dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let mut c = env.command(&["start", "--enable-recording"]);
    c.env("AUTOGPT_SHIM_AUDIT_LOG_PATH", blocker.join("audit.log"));
    let (code, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("design preview"), "{err}");
    assert!(err.contains("could not be written"), "{err}");
    env.assert_no_connection(std::time::Duration::from_millis(200))
        .await;
}

#[tokio::test]
async fn no_credentials_exits_77_without_connecting() {
    let env = Env::with_tokens(PeerConfig::default(), false).await;
    let mut c = env.command(&["start"]);
    let (code, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 77, "{err}");
    assert!(
        err.contains("Authentication failed: not authenticated for"),
        "{err}"
    );
    env.assert_no_connection(std::time::Duration::from_millis(200))
        .await;
}

#[tokio::test]
async fn status_prints_the_configuration_summary() {
    let env = Env::new(PeerConfig::default()).await;
    let (code, out, err) = finish(env.command(&["status"]).spawn().unwrap(), T).await;
    // No daemon runs: the summary, "not running" and exit status 3.
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("Daemon: not running"), "{out}");
    assert!(
        out.contains(&format!(
            "Configured platform: {}",
            crate::suite::harness::PLATFORM_URL
        )),
        "{out}"
    );
    assert!(out.contains("Mode: machine control"), "{out}");
    assert!(err.contains("experimental"), "{err}");
}

#[tokio::test]
async fn audit_subcommand_delegates_to_the_audit_library() {
    let env = Env::new(PeerConfig::default()).await;
    let (code, _, err) = finish(env.command(&["audit", "verify"]).spawn().unwrap(), T).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Audit log not found"), "{err}");
}

#[tokio::test]
async fn demo_plays_a_chat_and_verifies_its_audit_log() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.command(&["demo", "--enable-shell"]).spawn().unwrap();
    let (code, out, err) = finish(child, std::time::Duration::from_secs(60)).await;
    assert_eq!(code, 0, "{out}\n{err}");
    for needle in [
        "SESSION_ATTACHED",
        "PATH_OUTSIDE_ALLOWED_ROOT",
        "COMMAND_RESULT exit 0",
        "SESSION_RESTORED",
        "Protocol violations recorded by the platform peer: 0",
        "HMAC chain verified",
        "demo finished: OK",
    ] {
        assert!(out.contains(needle), "{needle} missing in:\n{out}");
    }
}

#[tokio::test]
async fn the_daemon_runs_without_core_dumps() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.command(&["start"]).spawn().unwrap();
    let _conn = env.next().await;
    let pid = child.id().unwrap();
    match std::fs::read_to_string(format!("/proc/{pid}/limits")) {
        Ok(limits) => {
            let core = limits
                .lines()
                .find(|l| l.starts_with("Max core file size"))
                .unwrap();
            let fields: Vec<&str> = core.split_whitespace().collect();
            assert_eq!(&fields[4..6], &["0", "0"], "{core}");
        }
        // Not root: a non-dumpable process's /proc files belong to root, which is itself
        // the hardening at work.
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}"),
    }
}

#[tokio::test]
async fn install_status_uninstall_round_trip() {
    let env = Env::new(PeerConfig::default()).await;
    let unit = env
        .dir
        .path()
        .join("config/systemd/user/autogpt-shim.service");
    let (code, out, _) = finish(env.command(&["status"]).spawn().unwrap(), T).await;
    assert_eq!(code, 3);
    assert!(
        out.contains("Autostart entry (linux): not installed"),
        "{out}"
    );
    assert!(
        out.contains(&format!("  path: {}", unit.display())),
        "{out}"
    );
    assert!(out.contains("  enable: systemctl --user enable --now autogpt-shim.service"));
    assert!(out.contains("  note: "), "{out}");

    let (code, out, err) =
        finish(env.command(&["install", "--at-login"]).spawn().unwrap(), T).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("Wrote autostart entry: {}", unit.display())),
        "{out}"
    );
    let text = std::fs::read_to_string(&unit).unwrap();
    let program = std::fs::canonicalize(env!("CARGO_BIN_EXE_autogpt-shim")).unwrap();
    let config = env
        .dir
        .path()
        .join("config/autogpt-local-executor/config.toml");
    assert!(
        text.contains(&format!(
            "ExecStart=\"{}\" --config \"{}\" start",
            program.display(),
            config.display()
        )),
        "{text}"
    );
    assert!(text.contains("RestartPreventExitStatus=77 78"));
    assert!(env.dir.path().join("state/autogpt-local-executor").is_dir());
    let (_, out, _) = finish(env.command(&["status"]).spawn().unwrap(), T).await;
    assert!(
        out.contains("Autostart entry (linux): installed")
            || out.contains("Autostart entry (wsl2): installed"),
        "{out}"
    );

    for _ in 0..2 {
        let (code, out, _) = finish(env.command(&["uninstall"]).spawn().unwrap(), T).await;
        assert_eq!(code, 0);
        assert!(
            out.contains("Removed autostart entry (or it was already absent)"),
            "{out}"
        );
        assert!(!unit.exists());
    }
}
