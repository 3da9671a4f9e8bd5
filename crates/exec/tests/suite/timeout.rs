//! 12.9 (timeout and termination) and 12.10 (cancellation): the whole group goes.

use super::common::*;
use shim_exec::AuditEvent;

fn first_line_pid(s: &str) -> i32 {
    s.lines().next().unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn timeout_kills_the_whole_group_including_background_children() {
    let root = Root::new();
    let mut req = sh("echo $$; sleep 1000 & sleep 1000");
    req.timeout_seconds = Some(1);
    let e = run(&executor(), &root, req).await;
    let r = e.result.unwrap();
    assert!(r.timed_out);
    // The status after our SIGTERM is reported, not -1 (12.8).
    assert_eq!(r.exit_code, -15);
    assert!(
        r.duration_seconds >= 1.0 && r.duration_seconds < 4.0,
        "{}",
        r.duration_seconds
    );
    let pgid = first_line_pid(&r.stdout);
    // After the result, no process of that group exists.
    assert_eq!(group_members(pgid), Vec::<i32>::new());
    match e.audit.unwrap() {
        AuditEvent::ExecuteCommand {
            result, details, ..
        } => {
            assert!(!result.ok);
            assert_eq!(result.exit_code, Some(-15));
            assert_eq!(
                result.error_code,
                Some(shim_protocol::ErrorCode::CommandTimeout)
            );
            assert_eq!(details.timeout_seconds, 1);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sigterm_ignored_escalates_to_sigkill_after_the_grace_period() {
    let root = Root::new();
    let mut req = sh("trap '' TERM; echo $$; sleep 1000 & sleep 1000");
    req.timeout_seconds = Some(1);
    let r = run(&executor(), &root, req).await.result.unwrap();
    assert!(r.timed_out);
    assert_eq!(r.exit_code, -9);
    assert!(
        r.duration_seconds >= 3.0 && r.duration_seconds < 6.0,
        "{}",
        r.duration_seconds
    );
    assert_eq!(group_members(first_line_pid(&r.stdout)), Vec::<i32>::new());
}

#[tokio::test]
async fn early_exit_after_sigterm_does_not_wait_the_full_grace() {
    let root = Root::new();
    let mut req = sh("trap 'exit 7' TERM; while :; do sleep 0.05; done");
    req.timeout_seconds = Some(1);
    let r = run(&executor(), &root, req).await.result.unwrap();
    assert!(r.timed_out);
    assert_eq!(r.exit_code, 7);
    assert!(r.duration_seconds < 2.5, "{}", r.duration_seconds);
}

#[tokio::test]
async fn timeout_request_above_the_ceiling_is_lowered() {
    let root = Root::new();
    let mut cfg = config();
    cfg.command_timeout_seconds = 1;
    let mut req = sh("sleep 1000");
    req.timeout_seconds = Some(3600);
    let e = run(&executor_with(cfg), &root, req).await;
    assert!(e.result.unwrap().timed_out);
    match e.audit.unwrap() {
        AuditEvent::ExecuteCommand { details, .. } => assert_eq!(details.timeout_seconds, 1),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn stragglers_of_a_normal_exit_are_left_running_and_pipes_closed_after_two_seconds() {
    let root = Root::new();
    let r = run(&executor(), &root, sh("echo $$; sleep 30 & echo started"))
        .await
        .result
        .unwrap();
    assert!(!r.timed_out);
    assert_eq!(r.exit_code, 0);
    assert!(r.stdout.ends_with("started\n"));
    // The background sleep holds stdout open: collection stops 2 s after the exit.
    assert!(
        r.duration_seconds >= 1.9 && r.duration_seconds < 4.0,
        "{}",
        r.duration_seconds
    );
    let pgid = first_line_pid(&r.stdout);
    let left = group_members(pgid);
    assert_eq!(left.len(), 1, "the straggler keeps running (12.7 step 3)");
    for pid in left {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
}

#[tokio::test]
async fn dropping_the_future_kills_the_whole_tree() {
    let root = Root::new();
    let ex = executor();
    let req = sh("echo $$ > pgid; sleep 1000 & sleep 1000");
    let fut = run(&ex, &root, req);
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(700), fut)
            .await
            .is_err()
    );
    let pgid: i32 = std::fs::read_to_string(root.path().join("pgid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        eventually(4, || group_members(pgid).is_empty()).await,
        "left: {:?}",
        group_members(pgid)
    );
}

#[tokio::test]
async fn cancellation_is_audited_from_prepare_and_run() {
    let root = Root::new();
    let ex = executor();
    let prepared = ex
        .prepare(&sh("echo $$ > pgid; sleep 1000"), "/r", root.resolver())
        .unwrap();
    let details = prepared.audit_details().clone();
    let started = prepared.started_at();
    let cancelled = tokio::time::timeout(std::time::Duration::from_millis(500), prepared.run())
        .await
        .is_err();
    assert!(cancelled);
    let audit = AuditEvent::cancelled(details, started.elapsed().as_millis() as u64);
    match audit {
        AuditEvent::ExecuteCommand {
            details,
            result,
            cancelled,
        } => {
            assert!(cancelled);
            assert!(!result.ok);
            assert_eq!(result.exit_code, None);
            assert_eq!(
                result.error_code,
                Some(shim_protocol::ErrorCode::InternalError)
            );
            assert_eq!(
                details.command.as_deref(),
                Some("echo $$ > pgid; sleep 1000")
            );
        }
        other => panic!("{other:?}"),
    }
    let pgid: i32 = std::fs::read_to_string(root.path().join("pgid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually(4, || group_members(pgid).is_empty()).await);
}
