//! 12.1: the order of checks and every bad input; no process is started for any of them.

use std::cell::Cell;

use super::common::*;
use shim_exec::AuditEvent;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::CommandRequest;
use shim_exec::CwdError;
use shim_exec::ExecError;
use shim_exec::Executor;
use shim_exec::Rejection;
use shim_protocol::ErrorCode;

/// A command that would leave a marker file if it ever ran.
fn marker_req(root: &Root) -> CommandRequest {
    argv(&["touch", root.path().join("RAN").to_str().unwrap()])
}

fn assert_not_run(root: &Root) {
    assert!(!root.path().join("RAN").exists(), "a process was started");
}

/// prepare() must fail; returns the rejection and whether the cwd resolver was called.
fn reject(ex: &Executor, root: &Root, req: &CommandRequest) -> (Rejection, bool) {
    let called = Cell::new(false);
    let r = ex.prepare(req, "/the/root", |c| {
        called.set(true);
        root.resolver()(c)
    });
    let rej = *r.expect_err("must be refused");
    assert_not_run(root);
    (rej, called.get())
}

fn audit_code(rej: &Rejection) -> Option<ErrorCode> {
    match rej.audit.as_ref()? {
        AuditEvent::ExecuteCommand { result, .. } => result.error_code.clone(),
        AuditEvent::JailViolation { code, .. } => Some(code.clone()),
    }
}

#[test]
fn step1_shell_disabled_is_capability_not_granted_and_not_audited() {
    let root = Root::new();
    let mut cfg = config();
    cfg.enable_shell = false;
    let (rej, called) = reject(&executor_with(cfg), &root, &marker_req(&root));
    assert!(matches!(rej.error, ExecError::ShellDisabled));
    assert_eq!(rej.error.code(), ErrorCode::CapabilityNotGranted);
    assert!(rej.audit.is_none());
    assert!(!called);
}

#[test]
fn step2_rate_limit_comes_before_payload_checks_and_is_audited_with_duration_zero() {
    let root = Root::new();
    let ex = Executor::new(
        config(),
        CommandLimiter::new(CommandLimits {
            max_commands_per_minute: 0,
            ..CommandLimits::default()
        }),
    );
    // Invalid payload (both forms) still gets SHIM_OVERLOADED: the limiter is step 2.
    let mut req = marker_req(&root);
    req.command = Some("x".into());
    let (rej, called) = reject(&ex, &root, &req);
    assert!(matches!(
        rej.error,
        ExecError::RateLimited { per_minute: 0 }
    ));
    assert_eq!(rej.error.code(), ErrorCode::ShimOverloaded);
    assert!(!called);
    match rej.audit.unwrap() {
        AuditEvent::ExecuteCommand {
            result, details, ..
        } => {
            assert_eq!(result.duration_ms, 0);
            assert_eq!(result.error_code, Some(ErrorCode::ShimOverloaded));
            assert_eq!(details.cwd, "/the/root");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn step4_both_or_neither_of_command_and_argv() {
    let root = Root::new();
    let ex = executor();
    let mut both = marker_req(&root);
    both.command = Some("true".into());
    for req in [both, CommandRequest::default()] {
        let (rej, called) = reject(&ex, &root, &req);
        assert!(matches!(rej.error, ExecError::CommandOrArgv));
        assert_eq!(
            rej.error.to_string(),
            "Exactly one of `command` or `argv` must be set."
        );
        assert_eq!(rej.error.code(), ErrorCode::InternalError);
        assert_eq!(audit_code(&rej), Some(ErrorCode::InternalError));
        assert!(!called);
    }
}

#[test]
fn step4_empty_argv_and_nul_bytes() {
    let root = Root::new();
    let ex = executor();
    let (rej, _) = reject(&ex, &root, &argv(&[]));
    assert!(matches!(rej.error, ExecError::EmptyArgv));
    assert_eq!(rej.error.code(), ErrorCode::InternalError);
    let (rej, _) = reject(&ex, &root, &argv(&["touch", "a\0b"]));
    assert!(matches!(
        rej.error,
        ExecError::NulInArgument { field: "argv" }
    ));
    assert_eq!(rej.error.code(), ErrorCode::InternalError);
    let (rej, _) = reject(&ex, &root, &sh("touch RAN\0"));
    assert!(matches!(
        rej.error,
        ExecError::NulInArgument { field: "command" }
    ));
}

#[test]
fn step5_invalid_env_before_cwd() {
    let root = Root::new();
    let ex = executor();
    for (k, v) in [("", "x"), ("A=B", "x"), ("A\0", "x"), ("OK", "v\0")] {
        let mut req = marker_req(&root);
        req.env = vec![(k.into(), v.into())];
        req.cwd = Some("missing".into());
        let (rej, called) = reject(&ex, &root, &req);
        assert!(matches!(rej.error, ExecError::InvalidEnv { .. }), "{k:?}");
        assert_eq!(rej.error.code(), ErrorCode::InternalError);
        assert!(!called, "cwd is step 6");
        assert!(!rej.error.to_string().contains('\0'));
    }
}

#[test]
fn step6_jail_violation_is_audited_as_jail_violation_with_raw_cwd() {
    let root = Root::new();
    let ex = executor();
    let mut req = marker_req(&root);
    req.cwd = Some("../outside".into());
    req.timeout_seconds = Some(0); // step 7 would refuse too: step 6 comes first
    let r = ex.prepare(&req, "/the/root", |_| {
        Err(CwdError::new(
            ErrorCode::PathOutsideAllowedRoot,
            "Path is outside the allowed root",
        ))
    });
    let rej = *r.unwrap_err();
    assert_not_run(&root);
    assert_eq!(rej.error.code(), ErrorCode::PathOutsideAllowedRoot);
    assert_eq!(
        rej.audit,
        Some(AuditEvent::JailViolation {
            code: ErrorCode::PathOutsideAllowedRoot,
            path: "../outside".into()
        })
    );
}

#[test]
fn step6_missing_cwd_is_path_not_found_and_a_file_is_internal_error() {
    let root = Root::new();
    let ex = executor();
    let mut req = marker_req(&root);
    req.cwd = Some("missing".into());
    let (rej, called) = reject(&ex, &root, &req);
    assert!(called);
    assert_eq!(rej.error.code(), ErrorCode::PathNotFound);
    assert_eq!(audit_code(&rej), Some(ErrorCode::PathNotFound));

    std::fs::write(root.path().join("file"), "x").unwrap();
    let f = std::fs::File::open(root.path().join("file")).unwrap();
    let e = shim_exec::WorkDir::from_fd(f.into(), "file").unwrap_err();
    assert!(matches!(e, ExecError::CwdNotDirectory));
    assert_eq!(e.code(), ErrorCode::InternalError);
}

#[test]
fn step7_timeout_zero_or_negative_after_cwd() {
    let root = Root::new();
    let ex = executor();
    for t in [0, -5] {
        let mut req = marker_req(&root);
        req.timeout_seconds = Some(t);
        let (rej, called) = reject(&ex, &root, &req);
        assert!(
            called,
            "cwd (step 6) is checked before the timeout (step 7)"
        );
        assert!(matches!(rej.error, ExecError::InvalidTimeout));
        assert_eq!(rej.error.code(), ErrorCode::InternalError);
    }
}

#[test]
fn step7_unavailable_shell_and_missing_executable_are_shell_not_available_and_audited() {
    let root = Root::new();
    let ex = executor();
    let mut req = sh("touch RAN");
    req.shell = shim_exec::Shell::Cmd;
    let (rej, called) = reject(&ex, &root, &req);
    assert!(called);
    assert_eq!(rej.error.code(), ErrorCode::ShellNotAvailable);
    assert_eq!(
        rej.error.to_string(),
        "Shell 'cmd' is not available on this OS."
    );
    match rej.audit.unwrap() {
        AuditEvent::ExecuteCommand {
            details, result, ..
        } => {
            assert_eq!(result.error_code, Some(ErrorCode::ShellNotAvailable));
            assert_eq!(details.env_keys, ["HOME", "PATH", "PYTHONIOENCODING"]);
            assert_eq!(details.shell, "cmd");
        }
        other => panic!("{other:?}"),
    }
    let (rej, _) = reject(&ex, &root, &argv(&["definitely-not-a-program-xyz"]));
    assert_eq!(rej.error.code(), ErrorCode::ShellNotAvailable);
    let (rej, _) = reject(&ex, &root, &argv(&["/nonexistent/prog"]));
    assert_eq!(rej.error.code(), ErrorCode::ShellNotAvailable);
    let (rej, _) = reject(&ex, &root, &argv(&["./nope"]));
    assert_eq!(rej.error.code(), ErrorCode::ShellNotAvailable);
}

#[test]
fn rejections_before_the_merge_record_sorted_wire_env_names() {
    let root = Root::new();
    let ex = executor();
    let mut req = argv(&[]);
    req.env = vec![("ZZ".into(), "1".into()), ("AA".into(), "2".into())];
    let (rej, _) = reject(&ex, &root, &req);
    match rej.audit.unwrap() {
        AuditEvent::ExecuteCommand { details, .. } => {
            assert_eq!(details.env_keys, ["AA", "ZZ"]);
            assert_eq!(details.argv, Some(vec![]));
            assert_eq!(details.shell, "auto");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn empty_command_is_valid() {
    let root = Root::new();
    let r = run(&executor(), &root, sh("")).await.result.unwrap();
    assert_eq!((r.exit_code, r.stdout.as_str()), (0, ""));
}
