//! `spawn_pty`: the same handle over a pseudo-terminal.

use std::time::Duration;

use super::common::*;
use super::process::spec;
use shim_exec::ProcessHandle;
use shim_exec::TermSize;

/// Reads until the accumulated output contains `needle` (10 s at most).
async fn read_until(h: &mut ProcessHandle, needle: &str) -> String {
    let mut acc = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !acc.contains(needle) {
        match tokio::time::timeout_at(deadline, h.next_output()).await {
            Ok(Some(c)) => acc.push_str(&String::from_utf8_lossy(&c.data)),
            Ok(None) => panic!("EOF before {needle:?}; got {acc:?}"),
            Err(_) => panic!("timed out waiting for {needle:?}; got {acc:?}"),
        }
    }
    acc
}

#[tokio::test]
async fn cat_on_a_pty_echoes_input_and_exits_on_eof() {
    let root = Root::new();
    let mut h =
        shim_exec::spawn_pty(spec(&root, &["cat"]), TermSize { rows: 24, cols: 80 }).unwrap();
    h.write(b"ping\n".to_vec()).await.unwrap();
    // The terminal echoes the line, then cat writes it back.
    let out = read_until(&mut h, "ping\r\nping\r\n").await;
    assert!(out.starts_with("ping"), "{out:?}");
    h.write(vec![4u8]).await.unwrap(); // ^D
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), h.wait())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn interactive_shell_sees_the_new_size_after_resize() {
    let root = Root::new();
    let mut h =
        shim_exec::spawn_pty(spec(&root, &["sh", "-i"]), TermSize { rows: 24, cols: 80 }).unwrap();
    // The marker is computed by the shell so that the terminal's echo of the input line
    // cannot match it.
    h.write(b"stty size; echo END$((1+1))\n".to_vec())
        .await
        .unwrap();
    let out = read_until(&mut h, "END2\r\n").await;
    assert!(out.contains("24 80\r\n"), "{out:?}");
    h.resize(TermSize {
        rows: 40,
        cols: 120,
    })
    .unwrap();
    h.write(b"stty size; echo END$((2+2))\n".to_vec())
        .await
        .unwrap();
    let out = read_until(&mut h, "END4\r\n").await;
    assert!(out.contains("40 120\r\n"), "{out:?}");
    h.write(b"pwd -P; exit 5\n".to_vec()).await.unwrap();
    let out = read_until(&mut h, "\n").await;
    let _ = out;
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), h.wait())
            .await
            .unwrap(),
        5
    );
}

#[tokio::test]
async fn pty_child_starts_in_the_workdir_and_drop_kills_it() {
    let root = Root::new();
    let mut h = shim_exec::spawn_pty(
        spec(&root, &["sh", "-c", "pwd -P; echo $$; sleep 1000"]),
        TermSize { rows: 24, cols: 80 },
    )
    .unwrap();
    let want = std::fs::canonicalize(root.path()).unwrap();
    let out = read_until(&mut h, &format!("{}\r\n", want.display())).await;
    let _ = out;
    let pgid = i32::try_from(h.pid()).unwrap();
    assert!(!group_members(pgid).is_empty());
    drop(h);
    assert!(eventually(5, || group_members(pgid).is_empty()).await);
}
