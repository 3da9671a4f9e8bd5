use super::*;

/// Issue 27 point 1, COMPUTER_USE_HW.md 1.5: the macOS preflight's audit record and error
/// (exit 78), for each refusal `shim_cu::mac::preflight_refusal` gives (its trust probe
/// cannot run here; the mapping from the probe is tested in shim-cu's `mac_tests.rs`).
#[tokio::test]
async fn the_macos_preflight_writes_daemon_preflight_failed_and_exits_78() {
    for trusted in [Some(false), None] {
        let (missing, code) = shim_cu::mac::preflight_refusal(trusted).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let key = shim_audit::AuditKey::from_bytes(&[7u8; 32]).unwrap();
        let log = AuditLog::open(WriterConfig::new(path.clone(), "machine", "0"), key).unwrap();
        let audit = Auditor::new(log, CancellationToken::new());
        let err = macos_preflight_failed(&audit, missing, code.clone()).await;
        assert!(matches!(err, DaemonError::Preflight(_)));
        assert_eq!(err.exit_code(), crate::error::EXIT_CONFIG);
        assert!(err.to_string().contains("autogpt-shim doctor"), "{err}");
        let text = std::fs::read_to_string(&path).unwrap();
        let records: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records.len(), 1, "{text}");
        let r = &records[0];
        assert_eq!(r["op"], "DAEMON_PREFLIGHT_FAILED");
        assert_eq!(r["details"]["missing_permissions"][0], missing);
        assert_eq!(r["details"]["platform"], "darwin");
        assert_eq!(r["result"]["ok"], false);
        assert_eq!(r["result"]["exit_code"], 78);
        assert_eq!(r["result"]["duration_ms"], 0);
        assert_eq!(r["result"]["error_code"], code.as_str());
    }
}
