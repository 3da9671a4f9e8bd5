//! The writer: record shape, tail recovery (1.12), exclusivity (1.20), session views (1.6).

use super::common::*;
use shim_audit::AuditEvent;
use shim_audit::AuditLog;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_audit::verify_all;
use shim_audit::verify_file;

#[test]
fn records_have_the_shape_and_order_of_1_3() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/dir/audit.log");
    let log = open(&p);
    let seq = log
        .append_blocking(
            AuditEvent::new("EXECUTE_COMMAND")
                .request_id("r1")
                .details(
                    Map::new()
                        .with("command", "ls -la")
                        .with("argv", shim_audit::Value::Null),
                )
                .result(AuditResult {
                    ok: false,
                    exit_code: Some(2),
                    duration_ms: 15,
                    error_code: Some("COMMAND_TIMEOUT".into()),
                }),
        )
        .unwrap();
    assert_eq!(seq, 1);
    assert_eq!(log.log_bytes(), std::fs::metadata(&p).unwrap().len());
    drop(log);
    let l = lines(&p);
    assert_eq!(l.len(), 1);
    let line = &l[0];
    assert!(
        line.starts_with("{\"ts\": 17") || line.starts_with("{\"ts\": 18"),
        "{line}"
    );
    let rest = line.split_once(", \"session_id\"").unwrap().1;
    assert!(rest.starts_with(
        ": \"-\", \"machine_id\": \"3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f\", \"shim_version\": \"0.2.0-test\", \"request_id\": \"r1\", \"op\": \"EXECUTE_COMMAND\", \"details\": {\"command\": \"ls -la\", \"argv\": null}, \"result\": {\"ok\": false, \"exit_code\": 2, \"duration_ms\": 15, \"error_code\": \"COMMAND_TIMEOUT\"}, \"seq\": 1, \"prev_hmac\": null, \"hmac\": \""
    ), "{rest}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(p.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
    }
}

#[test]
fn result_normalisation_keeps_four_keys() {
    let v = shim_audit::Value::Object(
        Map::new()
            .with("ok", false)
            .with("truncated", true)
            .with("duration_ms", 12.9),
    );
    let r = AuditResult::normalize(&v);
    assert_eq!(
        r,
        AuditResult {
            ok: false,
            exit_code: None,
            duration_ms: 12,
            error_code: None
        }
    );
    assert_eq!(
        AuditResult::normalize(&shim_audit::Value::Null),
        AuditResult::default()
    );
}

#[test]
fn nan_in_details_fails_that_write_only() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let bad =
        AuditEvent::new("IDLE_SESSION_DETACH").details(Map::new().with("idle_seconds", f64::NAN));
    assert!(matches!(
        log.append_blocking(bad),
        Err(shim_audit::AuditError::InvalidRecord(_))
    ));
    assert_eq!(log.append_blocking(event(1)).unwrap(), 1);
}

#[test]
fn restart_continues_the_chain_in_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 3);
    let log = open(&p);
    assert_eq!(log.append_blocking(event(9)).unwrap(), 4);
    drop(log);
    assert!(verify_file(&p, &key()).unwrap().is_clean());
    assert_eq!(shim_audit::files::list_rotated(&p).unwrap().len(), 0);
}

fn assert_recovered(p: &std::path::Path, prev: Option<(i64, bool)>) {
    let rotated = shim_audit::files::list_rotated(p).unwrap();
    assert_eq!(rotated.len(), 1);
    let l = lines(p);
    assert_eq!(l.len(), 2, "head + the new record");
    assert!(l[0].contains("\"op\": \"AUDIT_ROTATED\""));
    assert!(l[0].contains("\"reason\": \"recovery\""));
    let name = shim_audit::files::file_name(&rotated[0]);
    assert!(l[0].contains(&format!("\"previous_file\": \"{name}\"")));
    match prev {
        Some((seq, _)) => assert!(l[0].contains(&format!("\"previous_last_seq\": {seq}"))),
        None => assert!(l[0].contains("\"previous_last_seq\": null, \"previous_last_hmac\": null")),
    }
    assert!(verify_file(p, &key()).unwrap().is_clean());
}

#[test]
fn torn_tail_is_rotated_aside_never_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 3);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 30]).unwrap();
    let log = open(&p);
    assert_eq!(log.append_blocking(event(1)).unwrap(), 2);
    drop(log);
    assert_recovered(&p, None);
    // The torn file was kept byte for byte.
    let rotated = shim_audit::files::list_rotated(&p).unwrap();
    assert_eq!(
        std::fs::read(&rotated[0]).unwrap(),
        &bytes[..bytes.len() - 30]
    );
}

#[test]
fn tail_under_another_key_is_rotated_aside() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = AuditLog::open(cfg(&p), other_key()).unwrap();
    log.append_blocking(event(1)).unwrap();
    log.append_blocking(event(2)).unwrap();
    drop(log);
    let log = open(&p);
    log.append_blocking(event(3)).unwrap();
    drop(log);
    assert_recovered(&p, Some((2, true)));
}

#[test]
fn unparseable_tail_and_missing_fields_are_rotated_aside() {
    for tail in ["not json at all\n", "{\"seq\": 1}\n", "[1, 2]\n"] {
        let dir = tempfile::tempdir().unwrap();
        let p = write_log(dir.path(), 2);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, tail.as_bytes()).unwrap();
        drop(f);
        let log = open(&p);
        log.append_blocking(event(1)).unwrap();
        drop(log);
        assert_recovered(&p, None);
    }
}

#[test]
fn a_multi_megabyte_last_record_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let big = "x".repeat(5 * 1024 * 1024);
    log.append_blocking(
        AuditEvent::new("EXECUTE_COMMAND").details(Map::new().with("command", big)),
    )
    .unwrap();
    drop(log);
    let log = open(&p);
    assert_eq!(log.append_blocking(event(1)).unwrap(), 2);
    drop(log);
    assert!(shim_audit::files::list_rotated(&p).unwrap().is_empty());
    let r = verify_file(&p, &key()).unwrap();
    assert!(r.is_clean(), "{:?}", r.violations);
}

#[test]
fn second_writer_is_refused_while_the_first_holds_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let err = AuditLog::open(cfg(&p), key()).unwrap_err();
    assert!(matches!(err, shim_audit::AuditError::Locked { .. }));
    assert!(err.to_string().contains("mandatory audit log"));
    assert!(err.to_string().contains("in use by another shim process"));
    assert!(dir.path().join(".audit.log.lock").exists());
    drop(log);
    let _again = open(&p);
    // The lock file is not a rotated file.
    assert!(shim_audit::files::list_rotated(&p).unwrap().is_empty());
}

#[test]
fn session_view_binds_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let view = log.session("chat-1");
    view.append_blocking(event(1)).unwrap();
    view.append_blocking(event(2).session("chat-1")).unwrap();
    let err = view
        .append_blocking(event(3).session("chat-2"))
        .unwrap_err();
    assert!(matches!(
        err,
        shim_audit::AuditError::SessionMismatch { .. }
    ));
    log.set_default_session("legacy-9");
    log.append_blocking(event(4)).unwrap();
    drop((view, log));
    let l = lines(&p);
    assert_eq!(l.len(), 3);
    assert!(l[0].contains("\"session_id\": \"chat-1\""));
    assert!(l[1].contains("\"session_id\": \"chat-1\""));
    assert!(l[2].contains("\"session_id\": \"legacy-9\""));
    assert!(verify_all(&p, &key()).unwrap().is_clean());
}

#[test]
fn async_appends_work_from_tokio() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let seqs: Vec<u64> = rt.block_on(async {
        let mut v = Vec::new();
        for i in 0..3 {
            v.push(log.append(event(i)).await.unwrap());
        }
        v
    });
    assert_eq!(seqs, vec![1, 2, 3]);
}
