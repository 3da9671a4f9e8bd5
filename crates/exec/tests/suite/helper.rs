//! A stand-in daemon: this test binary re-executed with `SHIM_EXEC_TEST_HELPER` set.
//!
//! `helper_entry` is a no-op in a normal run. With the variable set it builds an executor
//! from the real process environment (as the daemon does) and runs one command in
//! `SHIM_EXEC_TEST_DIR`, writing the child's stdout to `out` there.

use std::path::PathBuf;
use std::process::Child;
use std::process::Command;

use super::common::*;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::ExecConfig;
use shim_exec::Executor;

const MODE: &str = "SHIM_EXEC_TEST_HELPER";
const DIR: &str = "SHIM_EXEC_TEST_DIR";

#[test]
fn helper_entry() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ex = Executor::new(
            ExecConfig::from_process(true),
            CommandLimiter::new(CommandLimits::default()),
        );
        if mode == "pty" {
            let spec = shim_exec::SpawnSpec {
                program: "sh".into(),
                argv: [
                    "sh",
                    "-c",
                    "trap '' HUP; echo $$ > pgid.tmp && mv pgid.tmp pgid; \
                        sleep 1000 & sleep 1000",
                ]
                .iter()
                .map(Into::into)
                .collect(),
                env: shim_exec::ChildEnv::merge(
                    shim_exec::HostOs::Posix,
                    &test_base_env(),
                    &shim_exec::WireEnv::default(),
                ),
                cwd: open_workdir(&dir).unwrap(),
            };
            let mut h =
                shim_exec::spawn_pty(spec, shim_exec::TermSize { rows: 24, cols: 80 }).unwrap();
            h.wait().await;
            return;
        }
        let req = match mode.as_str() {
            "env" => argv(&["env"]),
            _ => sh("echo $$ > pgid.tmp && mv pgid.tmp pgid; \
                     sleep 1000 & (sleep 1000 &) ; sh -c 'sleep 1000' & sleep 1000"),
        };
        let wd = open_workdir(&dir).unwrap();
        let e = ex.execute(&req, "", |_| Ok(wd)).await;
        std::fs::write(dir.join("out"), e.result.unwrap().stdout).unwrap();
    });
}

fn spawn_helper(mode: &str, dir: &std::path::Path, extra_env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "suite::helper::helper_entry",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(MODE, mode)
    .env(DIR, dir)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

#[tokio::test]
async fn daemon_secrets_never_reach_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = [
        ("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "pass-S3CRET"),
        ("AUTOGPT_SHIM_ACCESS_TOKEN", "tok-S3CRET"),
        ("AUTOGPT_SHIM_ENABLE_SHELL", "true"),
        ("GITHUB_TOKEN", "gh-S3CRET"),
        ("OPENAI_API_KEY", "sk-S3CRET"),
        ("AWS_SECRET_ACCESS_KEY", "aws-S3CRET"),
        ("HTTPS_PROXY", "http://proxy.invalid"),
        ("LD_PRELOAD", "/nonexistent.so"),
        ("LC_ALL", "C"),
    ];
    let mut child = spawn_helper("env", dir.path(), &secrets);
    assert!(child.wait().unwrap().success());
    let out = std::fs::read_to_string(dir.path().join("out")).unwrap();
    assert!(!out.contains("S3CRET"), "{out}");
    let allowed = [
        "HOME",
        "PATH",
        "LANG",
        "TZ",
        "TMPDIR",
        "USER",
        "SHELL",
        "PYTHONIOENCODING",
    ];
    for line in out.lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            allowed.contains(&name) || name.starts_with("LC_"),
            "leaked {name}"
        );
    }
    assert!(out.lines().any(|l| l == "LC_ALL=C"));
    assert!(out.lines().any(|l| l == "PYTHONIOENCODING=utf-8"));
}

/// Every live descendant of `root` (by ppid links in /proc).
fn descendants(root: i32) -> Vec<i32> {
    let mut all = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>()
            && let Some((_, ppid, _)) = stat(pid)
        {
            all.push((pid, ppid));
        }
    }
    let mut out = vec![];
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid) in &all {
            if ppid == p && !out.contains(&pid) {
                out.push(pid);
                frontier.push(pid);
            }
        }
    }
    out
}

#[tokio::test]
async fn sigkill_of_the_daemon_leaves_no_descendant_alive() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = spawn_helper("tree", dir.path(), &[]);
    let daemon_pid = i32::try_from(daemon.id()).unwrap();
    let pgid_file = dir.path().join("pgid");
    assert!(
        eventually(20, || pgid_file.exists()).await,
        "helper never started the command"
    );
    let pgid: i32 = std::fs::read_to_string(&pgid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // sh, three sleeps, one inner sh, all in the command's group.
    assert!(
        eventually(5, || group_members(pgid).len() >= 5).await,
        "{:?}",
        group_members(pgid)
    );
    let before = descendants(daemon_pid);
    // supervisor + sh + 3 sleeps + inner sh (+ its sleep, unless sh exec'd it)
    assert!(before.len() >= 6, "{before:?}");

    daemon.kill().unwrap(); // SIGKILL
    daemon.wait().unwrap();

    let alive = || {
        before
            .iter()
            .copied()
            .filter(|p| stat(*p).is_some())
            .collect::<Vec<_>>()
    };
    assert!(
        eventually(5, || alive().is_empty() && group_members(pgid).is_empty()).await,
        "survivors: {:?} group: {:?}",
        alive(),
        group_members(pgid)
    );
}

#[tokio::test]
async fn sigkill_of_the_daemon_kills_a_pty_tree_that_ignores_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = spawn_helper("pty", dir.path(), &[]);
    let pgid_file = dir.path().join("pgid");
    assert!(
        eventually(20, || pgid_file.exists()).await,
        "helper never started the pty"
    );
    let pgid: i32 = std::fs::read_to_string(&pgid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually(5, || group_members(pgid).len() >= 2).await);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert!(
        eventually(5, || group_members(pgid).is_empty()).await,
        "group {pgid} survived: {:?}",
        group_members(pgid)
    );
}
