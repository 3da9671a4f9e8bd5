use super::*;

#[test]
fn records_read_as_sentences() {
    let v: Value = serde_json::from_str(
        r#"{"seq":7,"ts":3723.5,"op":"EXECUTE_COMMAND","session_id":"s1","details":{"argv":["ls","-l"]},"result":{"ok":true,"exit_code":0,"duration_ms":3,"error_code":null}}"#,
    )
    .unwrap();
    let l = line(&v);
    assert_eq!(l.seq, 7);
    assert_eq!(l.time, "01:02:03");
    assert_eq!(l.session_id.as_deref(), Some("s1"));
    assert_eq!(l.text, "Ran the command `ls -l`, exit code 0.");
    let v: Value = serde_json::from_str(
        r#"{"seq":8,"ts":1,"op":"FILE_READ","details":{"path":"a.txt"},"result":{"ok":false,"error_code":"PATH_NOT_FOUND"}}"#,
    )
    .unwrap();
    let l = line(&v);
    assert!(!l.ok);
    assert_eq!(
        l.text,
        "Read the file a.txt. Refused or failed: PATH_NOT_FOUND."
    );
    let v: Value = serde_json::from_str(
        r#"{"seq":9,"ts":1,"op":"COMMAND_POLICY","details":{"decision":"prompt","answer":"approved","decided_by":"console"},"result":{"ok":true}}"#,
    )
    .unwrap();
    assert_eq!(line(&v).text, "A command was approved (by console).");
    let v: Value = serde_json::from_str(
        r#"{"seq":10,"ts":1,"op":"EXECUTE_COMMAND","details":{},"result":{"ok":false,"error_code":"SHIM_OVERLOADED"}}"#,
    )
    .unwrap();
    assert_eq!(
        line(&v).text,
        "A command was asked for. Refused or failed: SHIM_OVERLOADED."
    );
}

#[test]
fn the_tail_keeps_the_last_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let mut text = String::new();
    for i in 0..(SHOWN + 50) {
        text.push_str(&format!(
            "{{\"seq\":{i},\"ts\":1,\"op\":\"SHIM_START\",\"details\":{{}},\"result\":{{\"ok\":true}}}}\n"
        ));
    }
    std::fs::write(&p, text).unwrap();
    let t = tail(&p);
    assert_eq!(t.len(), SHOWN);
    assert_eq!(t[0].seq, 50);
    assert_eq!(t.last().unwrap().seq, (SHOWN + 49) as i64);
    assert!(tail(&dir.path().join("missing")).is_empty());
}
