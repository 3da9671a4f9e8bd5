//! The real daemon on Windows (run under Wine by `cargo xtask wine-test`): legacy direct
//! mode against the real loopback peer, the Windows attack list of JAIL_FILES_EXEC.md 4.2
//! through the daemon (each answered with the spec's code, audited as JAIL_VIOLATION,
//! nothing outside the root touched), files end to end, and a command through cmd.exe in
//! its own Job Object.

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::messages::exec::ExecuteCommand;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::read;
use crate::suite::harness::stat;
use crate::suite::harness::with_op;
use crate::suite::harness::write;

const SID: &str = "7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0ab";

/// Windows needs `SystemRoot` (Winsock) and friends; the harness clears the environment.
/// `USERNAME` names the control pipe (`\\.\pipe\autogpt-shim-<domain>.<user>-control`):
/// one per test, so that the daemons of parallel tests do not take each other for a second
/// daemon (the pipe's security descriptor still names the real account's SID).
fn windows_env(env: &Env, c: &mut tokio::process::Command) {
    let name = env.dir.path().file_name().unwrap().to_string_lossy();
    c.env("USERNAME", format!("test-{name}"));
    for k in [
        "SYSTEMROOT",
        "WINDIR",
        "TEMP",
        "TMP",
        "USERPROFILE",
        "LOCALAPPDATA",
        "APPDATA",
    ] {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
}

#[tokio::test]
async fn the_windows_attack_list_through_the_daemon() {
    let env = Env::new(PeerConfig::default()).await;
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    windows_env(&env, &mut c);
    let mut child = c.spawn().unwrap();
    let conn = env.next().await;
    let root = conn.hello.allowed_root.clone().unwrap();
    assert!(!root.starts_with(r"\\?\"), "{root}");
    let p = |name: &str| format!("{root}\\{name}");

    // Files end to end.
    let r = conn
        .request(write(&p("notes\\a.txt"), "hello"), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    let r = conn.request(read(&p("NOTES\\A.TXT")), T).await.unwrap();
    match &r.frame.message {
        Message::FileContents(c) => assert_eq!(c.content, "hello"),
        other => panic!("{other:?}"),
    }

    let drive = root.chars().next().unwrap();
    let secret = outside.join("secret.txt").display().to_string();
    let attacks: Vec<(String, &str)> = vec![
        (secret.clone(), "PATH_OUTSIDE_ALLOWED_ROOT"),
        (p("..\\outside\\secret.txt"), "PATH_OUTSIDE_ALLOWED_ROOT"),
        (
            p("notes\\..\\..\\outside\\secret.txt"),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        (
            format!("{drive}:outside\\secret.txt"),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        (
            "\\outside\\secret.txt".to_owned(),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        ("notes\\a.txt".to_owned(), "PATH_OUTSIDE_ALLOWED_ROOT"),
        (
            r"\\no-such-server-i13\share\secret.txt".to_owned(),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        (format!(r"\\?\{secret}"), "PATH_INVALID_CHARS"),
        (format!(r"\\.\{secret}"), "PATH_INVALID_CHARS"),
        (p("notes\\a.txt:hidden"), "PATH_INVALID_CHARS"),
        (p("notes\\a.txt::$DATA"), "PATH_INVALID_CHARS"),
        (p("x.txt."), "PATH_INVALID_CHARS"),
        (p("dir \\x.txt"), "PATH_INVALID_CHARS"),
        (p("a|b"), "PATH_INVALID_CHARS"),
        (p("CON"), "PATH_RESERVED_NAME"),
        (p("nul.txt"), "PATH_RESERVED_NAME"),
        (p("COM1\\x"), "PATH_RESERVED_NAME"),
        (p("lpt9.tar.gz"), "PATH_RESERVED_NAME"),
        (p("CONOUT$"), "PATH_RESERVED_NAME"),
    ];
    for (path, code) in &attacks {
        let r = conn.request(write(path, "pwned"), T).await.unwrap();
        assert_eq!(error_code(&r.frame.message), *code, "write {path}");
        let r = conn.request(stat(path), T).await.unwrap();
        assert_eq!(error_code(&r.frame.message), *code, "stat {path}");
    }
    assert_eq!(
        std::fs::read(outside.join("secret.txt")).unwrap(),
        b"secret"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

    // A command in cmd.exe, its cwd from the jail; a cwd outside is a jail violation.
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("cd & echo \"quoted  arg\" & exit /b 7".into()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert!(
                c.stdout.to_lowercase().contains(&root.to_lowercase()),
                "{c:?}"
            );
            assert!(c.stdout.contains("\"quoted  arg\""), "{c:?}");
            assert_eq!(c.exit_code, 7);
        }
        other => panic!("{other:?}"),
    }
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("echo x".into()),
                cwd: Some(outside.display().to_string()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_OUTSIDE_ALLOWED_ROOT");

    let _ = child.start_kill();
    let _ = child.wait().await;
    let records = env.audit_records();
    let violations = with_op(&records, "JAIL_VIOLATION");
    // Two per attack (write, stat) and the command's cwd.
    assert_eq!(violations.len(), attacks.len() * 2 + 1, "{violations:#?}");
    env.verify_audit();
}

/// `autogpt-shim ARGS` with the test's Windows environment, to the end.
async fn cli(env: &Env, args: &[&str]) -> (i32, String, String) {
    let mut c = env.command(args);
    windows_env(env, &mut c);
    eprintln!("windows: autogpt-shim {args:?}");
    let r = crate::suite::harness::finish(c.spawn().unwrap(), T).await;
    eprintln!("windows: autogpt-shim {args:?} -> {r:?}");
    r
}

#[tokio::test]
async fn the_control_pipe_serves_status_pause_and_resume_and_refuses_a_second_daemon() {
    let env = Env::new(PeerConfig::default()).await;
    // No daemon: "not running", exit 3.
    let (code, out, err) = cli(&env, &["status"]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("not running"), "{out}");
    let (code, _, err) = cli(&env, &["pause"]).await;
    assert_eq!(code, 3);
    assert!(err.contains("no daemon is running"), "{err}");

    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    windows_env(&env, &mut c);
    let mut child = c.spawn().unwrap();
    let conn = env.next().await;
    let (code, out, err) = cli(&env, &["status"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Daemon: running"), "{out}");

    // Pause through the pipe refuses the next request; resume restores it.
    let (code, out, err) = cli(&env, &["pause"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let echo = || {
        Message::ExecuteCommand(ExecuteCommand {
            command: Some("echo x".into()),
            ..ExecuteCommand::default()
        })
    };
    let r = conn.request(echo(), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    let (code, _, _) = cli(&env, &["resume"]).await;
    assert_eq!(code, 0);
    let r = conn.request(echo(), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::CommandResult);

    // A second daemon finds the pipe taken and stops with 78.
    let mut second = env.legacy_command("second", &[]);
    windows_env(&env, &mut second);
    second.env(
        "AUTOGPT_SHIM_AUDIT_LOG_PATH",
        env.dir.path().join("second-audit.jsonl"),
    );
    eprintln!("windows: a second daemon");
    let (code, out, err) = crate::suite::harness::finish(second.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{out}{err}");
    assert!(
        err.contains("another autogpt-shim daemon is running"),
        "{err}"
    );

    let _ = child.start_kill();
    let _ = child.wait().await;
    let actions: Vec<String> = with_op(&env.audit_records(), "LOCAL_CONTROL")
        .iter()
        .map(|r| r["details"]["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actions, ["pause", "resume"]);
}
