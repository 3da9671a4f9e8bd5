//! shim-exec on Windows with real processes (run under Wine in CI, `cargo xtask
//! wine-test`): cmd.exe's raw command line (12.3), the environment baseline and merge
//! (12.5), the output budget (12.7), and the Job Object: a timeout ends the whole tree
//! even when the command ignores CTRL_BREAK (12.9), so does cancellation (12.10), and a
//! daemon killed with TerminateProcess (`taskkill /F`) leaves no process of its commands.
//!
//! The long-running command is this test binary itself (`sleeper_entry` below), so the
//! tests do not depend on what Wine ships.
#![cfg(windows)]
#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code, missing_docs)]

use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use shim_exec::BaseEnv;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::CommandRequest;
use shim_exec::CwdError;
use shim_exec::ExecConfig;
use shim_exec::Execution;
use shim_exec::Executor;
use shim_exec::HostOs;
use shim_exec::Shell;
use shim_exec::WorkDir;

const SLEEPER: &str = "SHIM_EXEC_SLEEPER";
const SLEEPER_CHILD: &str = "SHIM_EXEC_SLEEPER_CHILD";
const HELPER: &str = "SHIM_EXEC_HELPER";

fn open_workdir(p: &Path) -> Result<WorkDir, CwdError> {
    let dir = cap_std::fs::Dir::open_ambient_dir(p, cap_std::ambient_authority())
        .map_err(|_| CwdError::new(shim_protocol::ErrorCode::PathNotFound, "Path not found"))?;
    WorkDir::new(dir, p.display().to_string()).map_err(|e| CwdError::new(e.code(), e.to_string()))
}

fn base_env() -> BaseEnv {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    vars.push(("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE".into(), "secret".into()));
    vars.push(("HTTPS_PROXY".into(), "http://proxy".into()));
    BaseEnv::filter(HostOs::Windows, vars)
}

fn executor(max_file_size_bytes: u64) -> Executor {
    Executor::new(
        {
            let mut c = ExecConfig::from_process(true);
            c.max_file_size_bytes = max_file_size_bytes;
            c.base_env = base_env();
            c.os = HostOs::Windows;
            c
        },
        CommandLimiter::new(CommandLimits {
            max_commands_per_minute: 10_000,
            max_concurrent_commands: 100,
            window: Duration::from_secs(60),
        }),
    )
}

async fn run(exec: &Executor, dir: &Path, req: CommandRequest) -> Execution {
    exec.execute(&req, &dir.display().to_string(), |_| open_workdir(dir))
        .await
}

fn cmd(c: &str) -> CommandRequest {
    CommandRequest {
        command: Some(c.to_owned()),
        shell: Shell::Cmd,
        ..Default::default()
    }
}

/// argv that runs this binary as the sleeper, writing its pid (and its child's) to `dir`.
fn sleeper(dir: &Path, with_child: bool) -> CommandRequest {
    let exe = std::env::current_exe().unwrap();
    let mut env = vec![(SLEEPER.to_owned(), dir.display().to_string())];
    if with_child {
        env.push((SLEEPER_CHILD.to_owned(), "1".to_owned()));
    }
    CommandRequest {
        argv: Some(vec![
            exe.display().to_string(),
            "--exact".into(),
            "sleeper_entry".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ]),
        env,
        ..Default::default()
    }
}

/// Not a test of its own: the long-running command. Ignores CTRL_BREAK and CTRL_C, starts
/// a child sleeper if asked, writes its pid and sleeps for a minute.
#[test]
fn sleeper_entry() {
    let Some(dir) = std::env::var_os(SLEEPER) else {
        return;
    };
    unsafe extern "system" fn ignore(_: u32) -> windows_sys::core::BOOL {
        1
    }
    // SAFETY: installs a handler that only returns TRUE.
    unsafe { windows_sys::Win32::System::Console::SetConsoleCtrlHandler(Some(ignore), 1) };
    let dir = PathBuf::from(dir);
    if std::env::var_os(SLEEPER_CHILD).is_some() {
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args([
            "--exact",
            "sleeper_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove(SLEEPER_CHILD)
        .env(SLEEPER, dir.join("child"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        std::fs::create_dir_all(dir.join("child")).unwrap();
        // Meant to outlive this process: the job (or the test) ends it.
        #[allow(clippy::zombie_processes)]
        let _child = c.spawn().unwrap();
    }
    std::fs::write(dir.join("pid.tmp"), std::process::id().to_string()).unwrap();
    std::fs::rename(dir.join("pid.tmp"), dir.join("pid")).unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

/// Not a test of its own: a "daemon" that runs the sleeper through the executor and waits.
#[test]
fn helper_entry() {
    let Some(dir) = std::env::var_os(HELPER) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let exec = executor(10_485_760);
        let _ = run(&exec, &dir, sleeper(&dir, true)).await;
    });
}

fn read_pid(p: &Path) -> Option<u32> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

async fn wait_pid(p: &Path) -> u32 {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = read_pid(p) {
            return pid;
        }
        assert!(Instant::now() < end, "no pid at {}", p.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::Foundation::WAIT_TIMEOUT;
    use windows_sys::Win32::System::Threading::OpenProcess;
    use windows_sys::Win32::System::Threading::PROCESS_QUERY_LIMITED_INFORMATION;
    use windows_sys::Win32::System::Threading::PROCESS_SYNCHRONIZE;
    use windows_sys::Win32::System::Threading::WaitForSingleObject;
    // SAFETY: plain calls; the handle is closed before returning.
    unsafe {
        let h = OpenProcess(
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
            0,
            pid,
        );
        if h.is_null() {
            return false;
        }
        let running = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
        CloseHandle(h);
        running
    }
}

async fn gone_within(pid: u32, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !alive(pid)
}

#[tokio::test]
async fn cmd_gets_the_raw_command_line_and_exit_codes() {
    let t = tempfile::tempdir().unwrap();
    let exec = executor(10_485_760);
    let e = run(&exec, t.path(), cmd("echo \"a  b\"& echo done")).await;
    let r = e.result.unwrap();
    assert!(r.stdout.contains("\"a  b\""), "{r:?}");
    assert!(r.stdout.contains("done"), "{r:?}");
    assert_eq!(r.exit_code, 0);
    let r = run(&exec, t.path(), cmd("exit /b 3")).await.result.unwrap();
    assert_eq!(r.exit_code, 3);
    // The working directory is the one the jail handed over.
    std::fs::create_dir(t.path().join("sub")).unwrap();
    std::fs::write(t.path().join("sub").join("marker.txt"), "m").unwrap();
    let sub = t.path().join("sub");
    let e = exec
        .execute(&cmd("dir /b"), &t.path().display().to_string(), |_| {
            open_workdir(&sub)
        })
        .await;
    assert!(e.result.unwrap().stdout.contains("marker.txt"));
    // Shells the table refuses on Windows.
    for s in [Shell::Sh, Shell::Zsh] {
        let req = CommandRequest {
            shell: s,
            ..cmd("echo x")
        };
        let e = run(&exec, t.path(), req).await;
        assert_eq!(
            e.result.unwrap_err().code(),
            shim_protocol::ErrorCode::ShellNotAvailable
        );
    }
    // argv[0] is searched on PATH with PATHEXT (cmd → cmd.exe).
    let req = CommandRequest {
        argv: Some(vec!["cmd".into(), "/c".into(), "echo argv-form".into()]),
        ..Default::default()
    };
    let r = run(&exec, t.path(), req).await.result.unwrap();
    assert!(r.stdout.contains("argv-form"), "{r:?}");
    let req = CommandRequest {
        argv: Some(vec!["no-such-program-i13".into()]),
        ..Default::default()
    };
    let e = run(&exec, t.path(), req).await;
    assert_eq!(
        e.result.unwrap_err().code(),
        shim_protocol::ErrorCode::ShellNotAvailable
    );
}

#[tokio::test]
async fn environment_is_the_windows_baseline_plus_the_wire() {
    let t = tempfile::tempdir().unwrap();
    let exec = executor(10_485_760);
    let req = CommandRequest {
        env: vec![
            ("Foo_Var".into(), "first".into()),
            ("FOO_VAR".into(), "last".into()),
            ("pythonioencoding".into(), "latin-1".into()),
        ],
        ..cmd("set")
    };
    let e = run(&exec, t.path(), req).await;
    let r = e.result.unwrap();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines.contains(&"FOO_VAR=last"), "{lines:?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.to_ascii_uppercase().starts_with("FOO_VAR=FIRST"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.eq_ignore_ascii_case("PYTHONIOENCODING=utf-8")),
        "{lines:?}"
    );
    assert!(!r.stdout.contains("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE"));
    assert!(!r.stdout.to_ascii_uppercase().contains("HTTPS_PROXY"));
    assert!(
        lines
            .iter()
            .any(|l| l.to_ascii_uppercase().starts_with("PATH=")),
        "{lines:?}"
    );
    let Some(shim_exec::AuditEvent::ExecuteCommand { details, .. }) = e.audit else {
        panic!("no audit record");
    };
    assert!(details.env_keys.iter().any(|k| k == "FOO_VAR"));
    assert!(!details.env_keys.iter().any(|k| k == "Foo_Var"));
}

#[tokio::test]
async fn output_beyond_the_budget_is_truncated_and_drained() {
    let t = tempfile::tempdir().unwrap();
    let exec = executor(100);
    let r = run(
        &exec,
        t.path(),
        cmd("for /L %i in (1,1,300) do @echo xxxxxxxxxxxxxxxxxxxx"),
    )
    .await
    .result
    .unwrap();
    assert!(r.output_truncated);
    assert_eq!(r.stdout.len() + r.stderr.len(), 100);
    assert!(r.stderr.ends_with("[command output truncated]\n"));
    assert_eq!(r.exit_code, 0);
}

#[tokio::test]
async fn a_timeout_ends_the_whole_job_even_when_ctrl_break_is_ignored() {
    let t = tempfile::tempdir().unwrap();
    let exec = executor(10_485_760);
    let req = CommandRequest {
        timeout_seconds: Some(3),
        ..sleeper(t.path(), true)
    };
    let started = Instant::now();
    let run_fut = run(&exec, t.path(), req);
    let (e, pids) = tokio::join!(run_fut, async {
        (
            wait_pid(&t.path().join("pid")).await,
            wait_pid(&t.path().join("child").join("pid")).await,
        )
    });
    let r = e.result.unwrap();
    assert!(r.timed_out);
    assert!(
        started.elapsed() < Duration::from_secs(3 + 7),
        "{:?}",
        started.elapsed()
    );
    assert!(
        gone_within(pids.0, 3).await,
        "the command survived its timeout"
    );
    assert!(
        gone_within(pids.1, 3).await,
        "the command's child survived the timeout"
    );
}

#[tokio::test]
async fn cancellation_ends_the_whole_job() {
    let t = tempfile::tempdir().unwrap();
    let exec = executor(10_485_760);
    let req = sleeper(t.path(), true);
    let dir = t.path().to_owned();
    let task = tokio::spawn(async move {
        let _ = exec
            .execute(&req, &dir.display().to_string(), |_| open_workdir(&dir))
            .await;
    });
    let main = wait_pid(&t.path().join("pid")).await;
    let child = wait_pid(&t.path().join("child").join("pid")).await;
    task.abort();
    let _ = task.await;
    assert!(
        gone_within(main, 5).await,
        "the command survived cancellation"
    );
    assert!(
        gone_within(child, 5).await,
        "the command's child survived cancellation"
    );
}

#[tokio::test]
async fn a_daemon_killed_with_taskkill_f_leaves_no_command_behind() {
    let t = tempfile::tempdir().unwrap();
    let mut helper = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_entry", "--nocapture", "--test-threads=1"])
        .env(HELPER, t.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let main = wait_pid(&t.path().join("pid")).await;
    let child = wait_pid(&t.path().join("child").join("pid")).await;
    assert!(alive(main) && alive(child));
    // `taskkill /F` (TerminateProcess); Wine ships taskkill.exe.
    let killed = std::process::Command::new("taskkill")
        .args(["/F", "/PID", &helper.id().to_string()])
        .output()
        .unwrap();
    assert!(killed.status.success(), "taskkill /F failed: {killed:?}");
    let _ = helper.wait();
    assert!(
        gone_within(main, 5).await,
        "the command outlived its daemon"
    );
    assert!(
        gone_within(child, 5).await,
        "the command's child outlived its daemon"
    );
}

#[test]
fn limiter_is_shared_and_refuses_beyond_its_limits() {
    let limiter: Arc<CommandLimiter> = CommandLimiter::new(CommandLimits {
        max_commands_per_minute: 3,
        max_concurrent_commands: 1,
        window: Duration::from_secs(60),
    });
    // A refusal for concurrency still uses a slot of the window (12.1 step 3).
    let a = limiter.admit().unwrap();
    assert_eq!(
        limiter.admit().unwrap_err().code(),
        shim_protocol::ErrorCode::ShimOverloaded
    );
    drop(a);
    let _b = limiter.admit().unwrap();
    drop(_b);
    assert_eq!(
        limiter.admit().unwrap_err().code(),
        shim_protocol::ErrorCode::ShimOverloaded
    );
}
