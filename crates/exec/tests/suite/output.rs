//! 12.7: concurrent draining, one shared budget, marker, UTF-8 replacement.

use super::common::*;
use shim_exec::output::TRUNCATION_MARKER;

#[tokio::test]
async fn fifty_mb_each_on_stdout_and_stderr_interleaved_keeps_exactly_the_budget() {
    let root = Root::new();
    let req = sh("yes o | head -c 50000000 & yes e | head -c 50000000 >&2; wait");
    let r = run(&executor(), &root, req).await.result.unwrap();
    assert!(!r.timed_out, "deadlock: the child blocked on a full pipe");
    assert_eq!(r.exit_code, 0);
    assert!(r.output_truncated);
    assert_eq!(r.stdout.len() + r.stderr.len(), 2_785_280);
    let marker = std::str::from_utf8(TRUNCATION_MARKER).unwrap();
    assert!(r.stderr.ends_with(marker));
    let err_body = &r.stderr[..r.stderr.len() - marker.len()];
    assert!(r.stdout.bytes().all(|b| b == b'o' || b == b'\n'));
    assert!(err_body.bytes().all(|b| b == b'e' || b == b'\n'));
    assert!(r.duration_seconds < 20.0, "{}", r.duration_seconds);
}

#[tokio::test]
async fn small_max_file_size_is_the_budget_and_output_under_it_is_untouched() {
    let root = Root::new();
    let mut cfg = config();
    cfg.max_file_size_bytes = 100;
    let ex = executor_with(cfg);
    let r = run(&ex, &root, sh("head -c 1000 /dev/zero | tr '\\0' a"))
        .await
        .result
        .unwrap();
    assert!(r.output_truncated);
    assert_eq!(r.stdout.len(), 100 - 28);
    assert_eq!(r.stderr, "\n[command output truncated]\n");
    let r = run(&ex, &root, sh("printf 12345; printf abc >&2"))
        .await
        .result
        .unwrap();
    assert!(!r.output_truncated);
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("12345", "abc"));
}

#[tokio::test]
async fn invalid_utf8_is_replaced_per_maximal_subpart() {
    let root = Root::new();
    let r = run(&executor(), &root, sh("printf 'a\\360\\237\\230b\\377'"))
        .await
        .result
        .unwrap();
    assert_eq!(r.stdout, "a\u{FFFD}b\u{FFFD}");
}
