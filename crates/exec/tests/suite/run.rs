//! 12.2, 12.4, 12.6, 12.8: what runs, where, with which status.

use super::common::*;
use shim_exec::AuditEvent;

#[tokio::test]
async fn argv_runs_exactly_the_vector_without_shell_parsing() {
    let root = Root::new();
    let e = run(
        &executor(),
        &root,
        argv(&["printf", "%s|", "a b", "$HOME", "*"]),
    )
    .await;
    let r = e.result.unwrap();
    assert_eq!(r.stdout, "a b|$HOME|*|");
    assert_eq!(r.exit_code, 0);
    assert!(!r.timed_out && !r.output_truncated);
}

#[tokio::test]
async fn non_zero_exit_is_a_result_and_signal_death_is_negative() {
    let root = Root::new();
    let ex = executor();
    let r = run(&ex, &root, sh("exit 3")).await.result.unwrap();
    assert_eq!(r.exit_code, 3);
    let r = run(&ex, &root, sh("kill -TERM $$")).await.result.unwrap();
    assert_eq!(r.exit_code, -15);
    let r = run(&ex, &root, sh("kill -KILL $$")).await.result.unwrap();
    assert_eq!(r.exit_code, -9);
}

#[tokio::test]
async fn child_starts_in_the_jailed_directory_handle_even_after_a_rename() {
    let root = Root::new();
    std::fs::create_dir(root.path().join("sub")).unwrap();
    let wd = open_workdir(&root.path().join("sub")).unwrap();
    // Swap the path after the jail opened the handle: the child must follow the handle.
    std::fs::rename(root.path().join("sub"), root.path().join("moved")).unwrap();
    std::fs::create_dir(root.path().join("sub")).unwrap();
    let req = argv(&["pwd", "-P"]);
    let e = executor().execute(&req, "/root", move |_| Ok(wd)).await;
    let r = e.result.unwrap();
    let want = std::fs::canonicalize(root.path().join("moved")).unwrap();
    assert_eq!(r.stdout.trim_end(), want.to_str().unwrap());
}

#[tokio::test]
async fn cwd_absent_is_the_root_and_relative_argv0_resolves_against_cwd() {
    let root = Root::new();
    std::fs::create_dir(root.path().join("d")).unwrap();
    let script = root.path().join("d/run.sh");
    std::fs::write(&script, "#!/bin/sh\necho from-script\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut req = argv(&["./run.sh"]);
    req.cwd = Some("d".into());
    let r = run(&executor(), &root, req).await.result.unwrap();
    assert_eq!(r.stdout, "from-script\n");
    let r = run(&executor(), &root, argv(&["pwd", "-P"]))
        .await
        .result
        .unwrap();
    assert_eq!(
        r.stdout.trim_end(),
        std::fs::canonicalize(root.path())
            .unwrap()
            .to_str()
            .unwrap()
    );
}

#[tokio::test]
async fn argv0_is_searched_on_the_merged_path_never_in_cwd() {
    let root = Root::new();
    let bin = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    for dir in [bin.path(), root.path()] {
        let p = dir.join("only-here");
        std::fs::write(&p, format!("#!/bin/sh\necho {}\n", dir.display())).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Not on PATH: the copy in cwd is not found.
    let e = run(&executor(), &root, argv(&["only-here"])).await;
    let err = e.result.unwrap_err();
    assert_eq!(err.code(), shim_protocol::ErrorCode::ShellNotAvailable);
    assert_eq!(err.to_string(), "Executable not found: only-here");
    // The wire PATH is the one searched.
    let mut req = argv(&["only-here"]);
    req.env = vec![(
        "PATH".into(),
        format!("{}:/usr/bin:/bin", bin.path().display()),
    )];
    let r = run(&executor(), &root, req).await.result.unwrap();
    assert_eq!(r.stdout.trim_end(), bin.path().display().to_string());
}

#[tokio::test]
async fn stdin_is_the_null_device() {
    let root = Root::new();
    let r = run(&executor(), &root, sh("cat; readlink /proc/self/fd/0"))
        .await
        .result
        .unwrap();
    assert_eq!(r.stdout, "/dev/null\n");
}

#[tokio::test]
async fn child_is_in_its_own_session_and_group() {
    let root = Root::new();
    let r = run(
        &executor(),
        &root,
        sh("ps -o pid=,pgid=,sid= -p $$ 2>/dev/null || cat /proc/$$/stat"),
    )
    .await
    .result
    .unwrap();
    let out = r.stdout;
    let nums: Vec<i64> = if out.contains('(') {
        let rest = &out[out.rfind(')').unwrap() + 2..];
        rest.split(' ')
            .skip(1)
            .take(3)
            .map(|s| s.parse().unwrap())
            .collect::<Vec<_>>()[1..]
            .to_vec()
    } else {
        out.split_whitespace()
            .map(|s| s.parse().unwrap())
            .collect::<Vec<_>>()[1..]
            .to_vec()
    };
    // pgid == sid == pid of the shell
    assert_eq!(nums[0], nums[1], "{out}");
}

#[tokio::test]
async fn result_reports_duration_and_audit_records_env_keys_not_values() {
    let root = Root::new();
    let mut req = sh("sleep 0.2");
    req.env = vec![("ZED".into(), "secret-value".into())];
    let e = run(&executor(), &root, req).await;
    let r = e.result.unwrap();
    assert!(
        r.duration_seconds >= 0.2 && r.duration_seconds < 5.0,
        "{}",
        r.duration_seconds
    );
    assert_eq!(
        (r.duration_seconds * 1000.0).round() / 1000.0,
        r.duration_seconds
    );
    match e.audit.unwrap() {
        AuditEvent::ExecuteCommand {
            details,
            result,
            cancelled,
        } => {
            assert!(!cancelled);
            assert!(result.ok);
            assert_eq!(result.exit_code, Some(0));
            assert_eq!(
                details.env_keys,
                ["HOME", "PATH", "PYTHONIOENCODING", "ZED"]
            );
            assert_eq!(details.shell, "sh");
            assert_eq!(details.timeout_seconds, 30);
            assert_eq!(details.cwd, root.path().display().to_string());
            assert!(!format!("{details:?}").contains("secret-value"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn environment_is_baseline_plus_wire_plus_pythonioencoding_only() {
    let root = Root::new();
    let mut req = argv(&["env"]);
    req.env = vec![
        ("FOO".into(), "bar".into()),
        ("PYTHONIOENCODING".into(), "latin-1".into()),
    ];
    let r = run(&executor(), &root, req).await.result.unwrap();
    let mut lines: Vec<&str> = r.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "FOO=bar",
            "HOME=/nonexistent-home",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "PYTHONIOENCODING=utf-8",
        ]
    );
}

#[tokio::test]
async fn other_spawn_failures_are_internal_error_and_audited() {
    let root = Root::new();
    std::fs::write(root.path().join("noexec"), "#!/bin/sh\necho ran\n").unwrap();
    let e = run(&executor(), &root, argv(&["./noexec"])).await;
    let err = e.result.unwrap_err();
    assert_eq!(err.code(), shim_protocol::ErrorCode::InternalError);
    match e.audit.unwrap() {
        AuditEvent::ExecuteCommand { result, .. } => {
            assert!(!result.ok);
            assert_eq!(result.exit_code, None);
            assert_eq!(
                result.error_code,
                Some(shim_protocol::ErrorCode::InternalError)
            );
        }
        other => panic!("{other:?}"),
    }
}
