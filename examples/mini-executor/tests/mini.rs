//! Runs the real `mini-executor` binary over real pipes and verifies the audit log it wrote.

use std::io::Write;
use std::process::Command;
use std::process::Stdio;

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

#[test]
fn answers_over_stdin_stdout_and_audits_every_request() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let log = tmp.path().join("audit").join("audit.log");

    let mut child = Command::new(env!("CARGO_BIN_EXE_mini-executor"))
        .arg(&root)
        .arg(&log)
        .env("MINI_EXECUTOR_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        "write notes/todo.txt buy milk",
        "read notes/todo.txt",
        "list notes",
        "run cat notes/todo.txt",
        "run sh -c exit\\ 3",
        "read ../outside.txt",
        "write ../outside.txt should never exist",
        "read missing.txt",
        "run no-such-program-xyz",
        "frobnicate x",
    ];
    {
        let mut stdin = child.stdin.take().unwrap();
        for r in requests {
            writeln!(stdin, "{r}").unwrap();
        }
    } // closing stdin ends the session
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {stderr}",
        out.status
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<&str> = stdout.lines().collect();
    assert_eq!(answers.len(), requests.len(), "{stdout}");

    assert!(
        answers[0].starts_with("ok wrote 9 bytes to "),
        "{}",
        answers[0]
    );
    assert_eq!(answers[1], r#"ok "buy milk\n""#);
    assert_eq!(answers[2], r#"ok ["todo.txt"]"#);
    assert_eq!(answers[3], r#"ok exit=0 "buy milk\n""#);
    // `sh -c exit\ 3` is split on whitespace into ["sh", "-c", "exit\", "3"]: not a
    // shell command line, so the shell reports an error; any non-zero exit will do.
    assert!(answers[4].starts_with("ok exit="), "{}", answers[4]);
    assert!(!answers[4].starts_with("ok exit=0 "), "{}", answers[4]);
    assert!(
        answers[5].starts_with("err PATH_OUTSIDE_ALLOWED_ROOT "),
        "{}",
        answers[5]
    );
    assert!(
        answers[6].starts_with("err PATH_OUTSIDE_ALLOWED_ROOT "),
        "{}",
        answers[6]
    );
    assert!(
        answers[7].starts_with("err PATH_NOT_FOUND "),
        "{}",
        answers[7]
    );
    assert!(answers[8].starts_with("err "), "{}", answers[8]);
    assert!(
        answers[9].starts_with("err FEATURE_NOT_SUPPORTED "),
        "{}",
        answers[9]
    );
    assert!(!tmp.path().join("outside.txt").exists());

    // One record per request, in order, with an intact HMAC chain.
    let key = shim_audit::AuditKey::from_hex(KEY).unwrap();
    let report = shim_audit::verify_file(&log, &key).unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(report.records, requests.len() as u64);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ops: Vec<&str> = records.iter().map(|r| r["op"].as_str().unwrap()).collect();
    assert_eq!(
        ops,
        [
            "FILE_WRITE",
            "FILE_READ",
            "FILE_LIST",
            "EXECUTE_COMMAND",
            "EXECUTE_COMMAND",
            "JAIL_VIOLATION",
            "JAIL_VIOLATION",
            "FILE_READ",
            "EXECUTE_COMMAND",
            "UNKNOWN_REQUEST",
        ]
    );
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["request_id"], format!("req-{}", i + 1));
    }
    assert_eq!(records[3]["details"]["argv"][0], "cat");
    assert_eq!(records[3]["result"]["exit_code"], 0);
    assert_eq!(records[5]["details"]["attempted_op"], "FILE_READ");
    assert_eq!(records[7]["result"]["error_code"], "PATH_NOT_FOUND");
    // Contents never reach the log.
    assert!(!std::fs::read_to_string(&log).unwrap().contains("buy milk"));

    // The same key detects any edit of what the executor wrote.
    let edited = std::fs::read_to_string(&log)
        .unwrap()
        .replace("FILE_LIST", "FILE_LYST");
    std::fs::write(&log, edited).unwrap();
    assert!(!shim_audit::verify_file(&log, &key).unwrap().is_clean());
}

#[test]
fn refuses_to_start_without_a_key() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mini-executor"))
        .arg(tmp.path())
        .arg(tmp.path().join("audit.log"))
        .env_remove("MINI_EXECUTOR_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MINI_EXECUTOR_KEY"));
    assert!(!tmp.path().join("audit.log").exists());
}
