//! 12.3 on this machine: every shell of the POSIX column, found or not.

use super::common::*;
use shim_exec::CommandRequest;
use shim_exec::Shell;
use shim_protocol::ErrorCode;

fn req(shell: Shell, cmd: &str) -> CommandRequest {
    CommandRequest {
        command: Some(cmd.into()),
        shell,
        ..Default::default()
    }
}

fn which(name: &str) -> bool {
    ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| std::path::Path::new(d).join(name).exists())
}

#[tokio::test]
async fn auto_and_bash_run_bash() {
    let root = Root::new();
    let ex = executor();
    for shell in [Shell::Auto, Shell::Bash] {
        let r = run(&ex, &root, req(shell, "echo ${BASH_VERSION:+bash} $0"))
            .await
            .result
            .unwrap();
        assert!(r.stdout.starts_with("bash "), "{shell}: {}", r.stdout);
        assert!(r.stdout.trim_end().ends_with("/bash"), "{}", r.stdout);
    }
}

#[tokio::test]
async fn auto_falls_back_to_sh_when_bash_is_not_on_the_daemon_path() {
    let root = Root::new();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/sh", dir.path().join("sh")).unwrap();
    let mut cfg = config();
    cfg.shell_search_path = Some(dir.path().as_os_str().to_owned());
    let ex = executor_with(cfg.clone());
    let r = run(
        &ex,
        &root,
        req(Shell::Auto, "echo ${BASH_VERSION:-nobash} $0"),
    )
    .await
    .result
    .unwrap();
    assert_eq!(
        r.stdout,
        format!("nobash {}\n", dir.path().join("sh").display())
    );
    // Neither bash nor sh: SHELL_NOT_AVAILABLE.
    cfg.shell_search_path = Some("/nonexistent".into());
    let e = run(&executor_with(cfg), &root, req(Shell::Auto, "true")).await;
    assert_eq!(e.result.unwrap_err().code(), ErrorCode::ShellNotAvailable);
}

#[tokio::test]
async fn shells_are_looked_up_on_the_daemon_path_not_the_wire_path() {
    let root = Root::new();
    let mut cfg = config();
    cfg.shell_search_path = Some("/nonexistent".into());
    let mut r = req(Shell::Bash, "true");
    r.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let e = run(&executor_with(cfg), &root, r).await;
    assert_eq!(e.result.unwrap_err().code(), ErrorCode::ShellNotAvailable);
}

#[tokio::test]
async fn sh_runs_sh() {
    let root = Root::new();
    let r = run(&executor(), &root, req(Shell::Sh, "echo $0"))
        .await
        .result
        .unwrap();
    assert!(r.stdout.trim_end().ends_with("/sh"), "{}", r.stdout);
}

#[tokio::test]
async fn zsh_and_pwsh_run_if_installed_else_shell_not_available() {
    let root = Root::new();
    // Each command prints "<shell>-ok" only when that shell really ran it.
    for (shell, exe, cmd) in [
        (Shell::Zsh, "zsh", "echo ${ZSH_VERSION:+zsh-}ok"),
        (Shell::Pwsh, "pwsh", "if ($PSVersionTable) { 'pwsh-ok' }"),
    ] {
        let e = run(&executor(), &root, req(shell, cmd)).await;
        if which(exe) {
            assert_eq!(e.result.unwrap().stdout.trim_end(), format!("{exe}-ok"));
        } else {
            let err = e.result.unwrap_err();
            assert_eq!(err.code(), ErrorCode::ShellNotAvailable);
            assert_eq!(
                err.to_string(),
                format!("Shell '{exe}' is not available on this OS.")
            );
        }
    }
}

/// CI installs zsh (MACHINE.md test packages): there it must really run.
#[tokio::test]
async fn zsh_runs_when_required() {
    if std::env::var_os("SHIM_EXEC_REQUIRE_ZSH").is_none() && !which("zsh") {
        return;
    }
    let root = Root::new();
    let r = run(&executor(), &root, req(Shell::Zsh, "echo $ZSH_NAME"))
        .await
        .result
        .unwrap();
    assert_eq!(r.stdout, "zsh\n");
}

#[tokio::test]
async fn powershell_and_cmd_are_not_available_on_posix() {
    let root = Root::new();
    for shell in [Shell::Powershell, Shell::Cmd] {
        let e = run(&executor(), &root, req(shell, "echo ok")).await;
        assert_eq!(e.result.unwrap_err().code(), ErrorCode::ShellNotAvailable);
    }
}

#[tokio::test]
async fn shell_is_ignored_for_argv() {
    let root = Root::new();
    let mut r = argv(&["echo", "direct"]);
    r.shell = Shell::Cmd;
    let out = run(&executor(), &root, r).await.result.unwrap();
    assert_eq!(out.stdout, "direct\n");
}

#[tokio::test]
async fn every_shell_missing_from_the_daemon_path_is_shell_not_available_and_nothing_runs() {
    let root = Root::new();
    let empty = tempfile::tempdir().unwrap();
    let mut cfg = config();
    cfg.shell_search_path = Some(empty.path().as_os_str().to_owned());
    let ex = executor_with(cfg);
    for shell in Shell::ALL {
        let e = run(&ex, &root, req(shell, "touch RAN")).await;
        let err = e.result.unwrap_err();
        assert_eq!(err.code(), ErrorCode::ShellNotAvailable, "{shell}");
        assert_eq!(
            err.to_string(),
            format!("Shell '{shell}' is not available on this OS.")
        );
    }
    assert!(!root.path().join("RAN").exists());
}
