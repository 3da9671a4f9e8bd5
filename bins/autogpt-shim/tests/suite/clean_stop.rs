//! A clean stop leaves nothing behind: the exec sentinel (a fork of the daemon that kills
//! command trees if the daemon dies) is ended and reaped before the daemon exits, and while it
//! runs it names itself, so `ps` and `pgrep autogpt-shim` never show it as a second daemon.

use std::time::Instant;

use shim_platform_peer::PeerConfig;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::argv;
use crate::suite::harness::finish;
use crate::suite::harness::sigterm;
use crate::suite::harness::start_marked_command;

const SID: &str = "0e9d4c3b-7a6f-4b2e-8c1d-5f4e3d2c1b0a";

/// `(pid, comm, cmdline with NULs as spaces)` of every child of `parent`.
fn children(parent: u32) -> Vec<(u32, String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = stat[stat.find('(').unwrap() + 1..close].to_owned();
        let ppid: u32 = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if ppid == parent {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            out.push((pid, comm, cmdline.trim().to_owned()));
        }
    }
    out
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_sentinel_names_itself_and_is_reaped_before_the_daemon_exits() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let daemon = child.id().unwrap();
    let conn = std::sync::Arc::new(env.next().await);
    conn.request(argv(&["true"]), T).await.unwrap();
    // A command still running at the stop must not outlive it either.
    let marker = "clean-stop-marker-4f1a";
    let pending = start_marked_command(&conn, marker).await;

    let kids = children(daemon);
    let sentinel: Vec<_> = kids
        .iter()
        .filter(|(_, comm, _)| comm == "shim-sentinel")
        .collect();
    assert_eq!(sentinel.len(), 1, "no sentinel among {kids:?}");
    let (sentinel_pid, _, cmdline) = sentinel[0].clone();
    assert_eq!(cmdline, "shim-sentinel", "{kids:?}");
    for (pid, comm, cmdline) in &kids {
        assert!(
            !comm.contains("autogpt-shim") && !cmdline.contains("autogpt-shim"),
            "child {pid} of the daemon looks like a second daemon: {comm:?} {cmdline:?}"
        );
    }

    let stopping = Instant::now();
    sigterm(&child);
    let (code, _, err) = finish(child, T).await;
    assert_eq!(code, 0, "{err}");
    eprintln!("the daemon stopped in {:?}", stopping.elapsed());
    // Gone, not merely dying: no /proc entry (a zombie would still have one).
    assert!(
        !std::path::Path::new(&format!("/proc/{sentinel_pid}")).exists(),
        "the sentinel {sentinel_pid} outlived the daemon"
    );
    assert!(
        !crate::suite::harness::pgrep(marker),
        "a command outlived the daemon"
    );
    pending.abort();
}
