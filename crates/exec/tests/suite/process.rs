//! `spawn_pipe`: the handle API over pipes.

use super::common::*;
use shim_exec::Channel;
use shim_exec::ChildEnv;
use shim_exec::ExecError;
use shim_exec::HostOs;
use shim_exec::SpawnSpec;
use shim_exec::TermSize;
use shim_exec::WireEnv;

pub(crate) fn spec(root: &Root, argv: &[&str]) -> SpawnSpec {
    SpawnSpec {
        program: argv[0].into(),
        argv: argv.iter().map(Into::into).collect(),
        env: ChildEnv::merge(HostOs::Posix, &test_base_env(), &WireEnv::default()),
        cwd: open_workdir(root.path()).unwrap(),
    }
}

#[tokio::test]
async fn pipe_handle_writes_reads_and_exits() {
    let root = Root::new();
    let mut h =
        shim_exec::spawn_pipe(spec(&root, &["/bin/sh", "-c", "cat; echo done >&2"]), true).unwrap();
    h.write(b"hello\n".to_vec()).await.unwrap();
    h.close_input();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    while let Some(c) = h.next_output().await {
        match c.channel {
            Channel::Stdout => out.extend(c.data),
            Channel::Stderr => err.extend(c.data),
        }
    }
    assert_eq!(out, b"hello\n");
    assert_eq!(err, b"done\n");
    assert_eq!(h.wait().await, 0);
    assert!(h.has_exited());
    assert!(matches!(
        h.resize(TermSize { rows: 1, cols: 1 }),
        Err(ExecError::NotATerminal)
    ));
}

#[tokio::test]
async fn dropping_a_pipe_handle_kills_its_group() {
    let root = Root::new();
    let h = shim_exec::spawn_pipe(
        spec(&root, &["/bin/sh", "-c", "sleep 1000 & sleep 1000"]),
        false,
    )
    .unwrap();
    let pgid = i32::try_from(h.pid()).unwrap();
    assert!(eventually(5, || group_members(pgid).len() >= 2).await);
    drop(h);
    assert!(eventually(5, || group_members(pgid).is_empty()).await);
}

#[test]
fn sentinel_starts_once_and_lives_outside_the_daemon_session() {
    shim_exec::start_sentinel().unwrap();
    shim_exec::start_sentinel().unwrap();
    // The sentinel is our child, leads its own session/group and sits in "/" (commands
    // of parallel tests start in temporary directories).
    let me = i32::try_from(std::process::id()).unwrap();
    let sentinels: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            stat(pid).is_some_and(|(_, ppid, pgid)| ppid == me && pgid == pid)
                && std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .is_ok_and(|c| c == std::path::Path::new("/"))
        })
        .collect();
    assert_eq!(sentinels.len(), 1, "{sentinels:?}");
}
