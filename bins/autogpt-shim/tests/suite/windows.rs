//! The real daemon on Windows (run under Wine by `cargo xtask wine-test`): legacy direct
//! mode against the real loopback peer, the Windows attack list of JAIL_FILES_EXEC.md 4.2
//! through the daemon (each answered with the spec's code, audited as JAIL_VIOLATION,
//! nothing outside the root touched), files end to end, a command through cmd.exe in its
//! own Job Object, timeouts, cancellation, the output budget, overload, the audit log
//! verified by `shim-audit.exe`, and a daemon ended with `taskkill /F` that leaves no
//! process of its commands.

// Process liveness and a console control handler need the Win32 API (each block says why
// it is sound).
#![allow(unsafe_code)]

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::messages::exec::ExecuteCommand;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::read;
use crate::suite::harness::stat;
use crate::suite::harness::with_op;
use crate::suite::harness::write;

const SID: &str = "7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0ab";

#[tokio::test]
async fn the_windows_attack_list_through_the_daemon() {
    let env = Env::new(PeerConfig::default()).await;
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    let mut child = c.spawn().unwrap();
    let conn = env.next().await;
    let root = conn.hello.allowed_root.clone().unwrap();
    assert!(!root.starts_with(r"\\?\"), "{root}");
    let p = |name: &str| format!("{root}\\{name}");

    // Files end to end.
    let r = conn
        .request(write(&p("notes\\a.txt"), "hello"), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    let r = conn.request(read(&p("NOTES\\A.TXT")), T).await.unwrap();
    match &r.frame.message {
        Message::FileContents(c) => assert_eq!(c.content, "hello"),
        other => panic!("{other:?}"),
    }

    let drive = root.chars().next().unwrap();
    let secret = outside.join("secret.txt").display().to_string();
    let attacks: Vec<(String, &str)> = vec![
        (secret.clone(), "PATH_OUTSIDE_ALLOWED_ROOT"),
        (p("..\\outside\\secret.txt"), "PATH_OUTSIDE_ALLOWED_ROOT"),
        (
            p("notes\\..\\..\\outside\\secret.txt"),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        (
            format!("{drive}:outside\\secret.txt"),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        (
            "\\outside\\secret.txt".to_owned(),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        ("notes\\a.txt".to_owned(), "PATH_OUTSIDE_ALLOWED_ROOT"),
        (
            r"\\no-such-server-i13\share\secret.txt".to_owned(),
            "PATH_OUTSIDE_ALLOWED_ROOT",
        ),
        (format!(r"\\?\{secret}"), "PATH_INVALID_CHARS"),
        (format!(r"\\.\{secret}"), "PATH_INVALID_CHARS"),
        (p("notes\\a.txt:hidden"), "PATH_INVALID_CHARS"),
        (p("notes\\a.txt::$DATA"), "PATH_INVALID_CHARS"),
        (p("x.txt."), "PATH_INVALID_CHARS"),
        (p("dir \\x.txt"), "PATH_INVALID_CHARS"),
        (p("a|b"), "PATH_INVALID_CHARS"),
        (p("CON"), "PATH_RESERVED_NAME"),
        (p("nul.txt"), "PATH_RESERVED_NAME"),
        (p("COM1\\x"), "PATH_RESERVED_NAME"),
        (p("lpt9.tar.gz"), "PATH_RESERVED_NAME"),
        (p("CONOUT$"), "PATH_RESERVED_NAME"),
    ];
    for (path, code) in &attacks {
        let r = conn.request(write(path, "pwned"), T).await.unwrap();
        assert_eq!(error_code(&r.frame.message), *code, "write {path}");
        let r = conn.request(stat(path), T).await.unwrap();
        assert_eq!(error_code(&r.frame.message), *code, "stat {path}");
    }
    assert_eq!(
        std::fs::read(outside.join("secret.txt")).unwrap(),
        b"secret"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

    // A command in cmd.exe, its cwd from the jail; a cwd outside is a jail violation.
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("cd & echo \"quoted  arg\" & exit /b 7".into()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert!(
                c.stdout.to_lowercase().contains(&root.to_lowercase()),
                "{c:?}"
            );
            assert!(c.stdout.contains("\"quoted  arg\""), "{c:?}");
            assert_eq!(c.exit_code, 7);
        }
        other => panic!("{other:?}"),
    }
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("echo x".into()),
                cwd: Some(outside.display().to_string()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_OUTSIDE_ALLOWED_ROOT");

    let _ = child.start_kill();
    let _ = child.wait().await;
    let records = env.audit_records();
    let violations = with_op(&records, "JAIL_VIOLATION");
    // Two per attack (write, stat) and the command's cwd.
    assert_eq!(violations.len(), attacks.len() * 2 + 1, "{violations:#?}");
    env.verify_audit();
}

/// `autogpt-shim ARGS` with the test's Windows environment, to the end.
async fn cli(env: &Env, args: &[&str]) -> (i32, String, String) {
    let mut c = env.command(args);
    eprintln!("windows: autogpt-shim {args:?}");
    let r = crate::suite::harness::finish(c.spawn().unwrap(), T).await;
    eprintln!("windows: autogpt-shim {args:?} -> {r:?}");
    r
}

#[tokio::test]
async fn the_control_pipe_serves_status_pause_and_resume_and_refuses_a_second_daemon() {
    let env = Env::new(PeerConfig::default()).await;
    // No daemon: "not running", exit 3.
    let (code, out, err) = cli(&env, &["status"]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("not running"), "{out}");
    let (code, _, err) = cli(&env, &["pause"]).await;
    assert_eq!(code, 3);
    assert!(err.contains("no daemon is running"), "{err}");

    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    let mut child = c.spawn().unwrap();
    let conn = env.next().await;
    let (code, out, err) = cli(&env, &["status"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Daemon: running"), "{out}");

    // Pause through the pipe refuses the next request; resume restores it.
    let (code, out, err) = cli(&env, &["pause"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let echo = || {
        Message::ExecuteCommand(ExecuteCommand {
            command: Some("echo x".into()),
            ..ExecuteCommand::default()
        })
    };
    let r = conn.request(echo(), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    let (code, _, _) = cli(&env, &["resume"]).await;
    assert_eq!(code, 0);
    let r = conn.request(echo(), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::CommandResult);

    // A second daemon finds the pipe taken and stops with 78.
    let mut second = env.legacy_command("second", &[]);
    second.env(
        "AUTOGPT_SHIM_AUDIT_LOG_PATH",
        env.dir.path().join("second-audit.jsonl"),
    );
    eprintln!("windows: a second daemon");
    let (code, out, err) = crate::suite::harness::finish(second.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{out}{err}");
    assert!(
        err.contains("another autogpt-shim daemon is running"),
        "{err}"
    );

    let _ = child.start_kill();
    let _ = child.wait().await;
    let actions: Vec<String> = with_op(&env.audit_records(), "LOCAL_CONTROL")
        .iter()
        .map(|r| r["details"]["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actions, ["pause", "resume"]);
}

// ---------------------------------------------------------------------------------------
// Commands through the real daemon: timeout, cancellation, output budget, overload, and a
// daemon ended with TerminateProcess. The long-running command is this test binary itself
// (`sleeper_entry`), which ignores CTRL_BREAK and CTRL_C, starts a child of its own and
// writes both pids, so the tests can see whether the whole Job Object ended.

/// The environment variable (set through the wire's `env`) that makes `sleeper_entry` run:
/// the folder to write its pid into.
const SLEEPER: &str = "SHIM_WINDOWS_SLEEPER_DIR";
/// Set with [`SLEEPER`]: the sleeper starts a child sleeper (pid in `<dir>\child\pid`).
const SLEEPER_CHILD: &str = "SHIM_WINDOWS_SLEEPER_CHILD";

/// Not a test of its own: the long-running command (see above).
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
    let dir = std::path::PathBuf::from(dir);
    if std::env::var_os(SLEEPER_CHILD).is_some() {
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args(sleeper_args())
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
    std::thread::sleep(std::time::Duration::from_secs(120));
}

fn sleeper_args() -> [&'static str; 4] {
    [
        "--exact",
        "suite::windows::sleeper_entry",
        "--nocapture",
        "--test-threads=1",
    ]
}

/// `EXECUTE_COMMAND` of the sleeper (with a child), writing its pids under `dir`.
fn sleeper(dir: &std::path::Path, timeout_seconds: Option<u64>) -> Message {
    let exe = std::env::current_exe().unwrap();
    let mut argv = vec![exe.display().to_string()];
    argv.extend(sleeper_args().iter().map(|s| (*s).to_owned()));
    let mut env = std::collections::BTreeMap::new();
    env.insert(SLEEPER.to_owned(), dir.display().to_string());
    env.insert(SLEEPER_CHILD.to_owned(), "1".to_owned());
    Message::ExecuteCommand(ExecuteCommand {
        argv: Some(argv),
        env,
        timeout_seconds,
        ..ExecuteCommand::default()
    })
}

/// Waits (up to 30 s) for the pid the sleeper writes to `dir\pid`.
async fn wait_pid(dir: &std::path::Path) -> u32 {
    let p = dir.join("pid");
    for _ in 0..600 {
        if let Some(pid) = std::fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no pid at {}", p.display());
}

/// Whether process `pid` still runs.
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

/// Asserts that both sleepers under `dir` (the command and its child) end within 10 s.
async fn assert_tree_gone(dir: &std::path::Path, what: &str) {
    let main = wait_pid(dir).await;
    let child = wait_pid(&dir.join("child")).await;
    for _ in 0..200 {
        if !alive(main) && !alive(child) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "{what}: command alive {}, its child alive {}",
        alive(main),
        alive(child)
    );
}

#[tokio::test]
async fn commands_through_the_daemon_time_out_overload_and_keep_the_output_budget() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_MAX_FILE_SIZE_BYTES", "100")
        .env("AUTOGPT_SHIM_MAX_CONCURRENT", "1");
    let mut child = c.spawn().unwrap();
    let conn = std::sync::Arc::new(env.next().await);

    // The output budget (12.7): min(max_file_size_bytes, ...) = 100 bytes, the rest drained.
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("for /L %i in (1,1,300) do @echo xxxxxxxxxxxxxxxxxxxx".into()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert!(c.output_truncated, "{c:?}");
            assert_eq!(c.stdout.len() + c.stderr.len(), 100, "{c:?}");
            assert_eq!(c.exit_code, 0);
        }
        other => panic!("{other:?}"),
    }

    // A command (and its child) that ignore CTRL_BREAK still end at the timeout; while it
    // runs, max_concurrent = 1 refuses another request at once.
    let dir = env.dir.path().join("timeout");
    let c2 = conn.clone();
    let m = sleeper(&dir, Some(3));
    let slow = tokio::spawn(async move { c2.request(m, T).await.unwrap() });
    wait_pid(&dir.join("child")).await;
    let r = conn.request(stat(env.root_str()), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    assert_eq!(r.frame.pending_capacity, Some(0));
    let r = slow.await.unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => assert!(c.timed_out, "{c:?}"),
        other => panic!("{other:?}"),
    }
    assert_tree_gone(&dir, "after the timeout").await;
    let r = conn.request(stat(env.root_str()), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::FileStatResponse);

    let _ = child.start_kill();
    let _ = child.wait().await;
    env.assert_no_violations();
    env.verify_audit();
}

/// Runs `shim-audit.exe ARGS` (built beside `autogpt-shim.exe`) with the daemon's
/// environment; `None` when it is not there (`cargo xtask wine-test` builds it and sets
/// `SHIM_REQUIRE_SHIM_AUDIT=1`, so there it must be).
pub(crate) async fn shim_audit(env: &Env, args: &[&str]) -> Option<(i32, String, String)> {
    let exe =
        std::path::Path::new(env!("CARGO_BIN_EXE_autogpt-shim")).with_file_name("shim-audit.exe");
    if !exe.is_file() {
        assert!(
            std::env::var("SHIM_REQUIRE_SHIM_AUDIT").map_or(true, |v| v != "1"),
            "SHIM_REQUIRE_SHIM_AUDIT=1 but {} is missing",
            exe.display()
        );
        eprintln!("skipping shim-audit.exe: {} is not built", exe.display());
        return None;
    }
    let like = env.command(&[]);
    let mut c = tokio::process::Command::new(&exe);
    c.args(args).env_clear();
    for (k, v) in like.as_std().get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    Some(crate::suite::harness::finish(c.spawn().unwrap(), T).await)
}

#[tokio::test]
async fn a_command_cancelled_by_a_lost_connection_ends_its_job_and_shim_audit_verifies_the_log() {
    let env = Env::new(PeerConfig::default()).await;
    let mut child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = std::sync::Arc::new(env.next().await);
    let dir = env.dir.path().join("cancel");
    let c2 = conn.clone();
    let m = sleeper(&dir, None);
    let _pending = tokio::spawn(async move {
        let _ = c2.request(m, std::time::Duration::from_secs(60)).await;
    });
    wait_pid(&dir.join("child")).await;
    conn.close(1011, "server error");
    let _again = env.next().await;
    assert_tree_gone(&dir, "after the connection was lost").await;
    let cancelled =
        |r: &serde_json::Value| r["op"] == "EXECUTE_COMMAND" && r["details"]["cancelled"] == true;
    crate::suite::harness::wait_until("the cancellation is audited", || {
        env.audit_records().iter().any(cancelled)
    })
    .await;
    let _ = child.start_kill();
    let _ = child.wait().await;

    // The log verifies with shim-audit.exe and with `autogpt-shim audit verify`, which
    // read the audit key from the credential store (the encrypted file here).
    if let Some((code, out, err)) = shim_audit(&env, &["verify"]).await {
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, out, err) = cli(&env, &["audit", "verify"]).await;
    assert_eq!(code, 0, "{out}{err}");
    // A record changed afterwards makes both fail.
    let original = std::fs::read_to_string(env.audit_log()).unwrap();
    let text = original.replacen("\"cancelled\": true", "\"cancelled\": false", 1);
    assert_ne!(text, original, "no cancelled record to change");
    std::fs::write(env.audit_log(), text).unwrap();
    if let Some((code, out, err)) = shim_audit(&env, &["verify"]).await {
        assert_eq!(code, 1, "{out}{err}");
    }
    let (code, out, err) = cli(&env, &["audit", "verify"]).await;
    assert_eq!(code, 1, "{out}{err}");
}

#[tokio::test]
async fn a_daemon_ended_with_taskkill_f_leaves_no_process_of_its_commands() {
    let env = Env::new(PeerConfig::default()).await;
    let mut child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = std::sync::Arc::new(env.next().await);
    let dir = env.dir.path().join("killed");
    let c2 = conn.clone();
    let m = sleeper(&dir, None);
    let _pending = tokio::spawn(async move {
        let _ = c2.request(m, std::time::Duration::from_secs(60)).await;
    });
    let main = wait_pid(&dir).await;
    let grandchild = wait_pid(&dir.join("child")).await;
    assert!(alive(main) && alive(grandchild));
    // `taskkill /F` is TerminateProcess: no handler of the daemon runs; only the kernel's
    // closing of the Job Object handle (KILL_ON_JOB_CLOSE) can end the command.
    let pid = child.id().unwrap();
    let killed = std::process::Command::new("taskkill")
        .args(["/F", "/PID", &pid.to_string()])
        .output()
        .unwrap();
    assert!(killed.status.success(), "taskkill /F failed: {killed:?}");
    let _ = child.wait().await;
    assert_tree_gone(&dir, "after taskkill /F of the daemon").await;
}

/// The text of the first `<tag>` element in `xml`, with the five XML entities decoded
/// (enough for the task files Wine writes; the generated XML is parsed strictly in
/// shim-daemon's autostart tests).
fn element(xml: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let start = xml
        .find(&open)
        .unwrap_or_else(|| panic!("no <{tag}> in {xml}"))
        + open.len();
    let end = start + xml[start..].find(&format!("</{tag}>")).unwrap();
    xml[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// `schtasks ARGS` (Wine ships a schtasks.exe that registers tasks from XML).
fn schtasks(args: &[&str]) -> std::process::Output {
    std::process::Command::new("schtasks")
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test]
async fn install_writes_task_scheduler_xml_that_schtasks_registers() {
    let env = Env::new(PeerConfig::default()).await;
    // Per-user folders with a space, an ampersand, an apostrophe and non-ASCII letters.
    let awkward = env.dir.path().join("Zoë & O'Brien (ü)");
    let local = awkward.join("Local");
    let roaming = awkward.join("Roaming");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::create_dir_all(&roaming).unwrap();
    let run = |args: &'static [&'static str]| {
        let mut c = env.command(args);
        c.env("LOCALAPPDATA", &local).env("APPDATA", &roaming);
        crate::suite::harness::finish(c.spawn().unwrap(), T)
    };
    let file = local
        .join("autogpt-local-executor")
        .join("autogpt-shim.xml");
    let (code, out, _) = run(&["status"]).await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("Autostart entry (windows): not installed"),
        "{out}"
    );
    assert!(
        out.contains(&format!("  path: {}", file.display())),
        "{out}"
    );

    let (code, out, err) = run(&["install", "--at-login"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("Wrote autostart entry: {}", file.display())),
        "{out}"
    );
    // UTF-16LE with a byte-order mark, CRLF lines.
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(&bytes[..2], &[0xFF, 0xFE]);
    let units: Vec<u16> = bytes[2..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let text = String::from_utf16(&units).unwrap();
    assert!(text.contains("\r\n<Task "), "{text}");
    let (_, out, _) = run(&["status"]).await;
    assert!(
        out.contains("Autostart entry (windows): installed"),
        "{out}"
    );

    // The exact program and arguments, read back from the file as written.
    let config = roaming.join("autogpt-local-executor").join("config.toml");
    assert_eq!(
        element(&text, "Arguments"),
        format!("--config \"{}\" start", config.display()),
        "{text}"
    );
    let program = element(&text, "Command");
    assert_eq!(
        std::fs::canonicalize(&program).unwrap(),
        std::fs::canonicalize(env!("CARGO_BIN_EXE_autogpt-shim")).unwrap(),
        "{program}"
    );

    // Wine's Task Scheduler parses the file and registers the task. It refuses malformed
    // XML and unknown elements (checked with a broken copy), so acceptance means the file
    // is a valid task definition. Wine 8 keeps the registration info and the settings it
    // read, but never stores the Exec action's command, the triggers, the principal or
    // RestartOnFailure (a Wine gap; those are checked in the file above and parsed strictly
    // in shim-daemon's autostart tests).
    let _ = schtasks(&["/Delete", "/TN", r"\AutoGPT\Shim", "/F"]);
    let broken = env.dir.path().join("broken.xml");
    let mut bad = vec![0xFF, 0xFE];
    for u in text.replace("</Actions>", "</Actionz>").encode_utf16() {
        bad.extend_from_slice(&u.to_le_bytes());
    }
    std::fs::write(&broken, bad).unwrap();
    let broken_arg = broken.display().to_string();
    let refused = schtasks(&["/Create", "/TN", r"\AutoGPT\Broken", "/XML", &broken_arg]);
    assert!(!refused.status.success(), "a broken task XML was accepted");
    let file_arg = file.display().to_string();
    let created = schtasks(&["/Create", "/TN", r"\AutoGPT\Shim", "/XML", &file_arg]);
    assert!(created.status.success(), "schtasks /Create: {created:?}");
    let stored = std::path::Path::new(&std::env::var("SYSTEMROOT").unwrap())
        .join(r"system32\tasks\AutoGPT\Shim");
    let stored_text = String::from_utf8_lossy(&std::fs::read(&stored).unwrap()).into_owned();
    for (tag, value) in [
        ("URI", r"\AutoGPT\Shim"),
        ("Description", "AutoGPT Local PC Executor shim"),
        ("MultipleInstancesPolicy", "IgnoreNew"),
        ("StartWhenAvailable", "true"),
        ("DisallowStartIfOnBatteries", "false"),
        ("ExecutionTimeLimit", "PT0S"),
    ] {
        assert_eq!(element(&stored_text, tag), value, "{stored_text}");
    }
    let deleted = schtasks(&["/Delete", "/TN", r"\AutoGPT\Shim", "/F"]);
    assert!(deleted.status.success(), "schtasks /Delete: {deleted:?}");
    assert!(!stored.exists());

    for _ in 0..2 {
        let (code, out, _) = run(&["uninstall"]).await;
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("Removed autostart entry (or it was already absent)"),
            "{out}"
        );
        assert!(!file.exists());
    }
}

/// PROTOCOL.md 9.4 on Windows: the fingerprint hashes the `normcase` (lower-cased) path, as
/// the incumbent did, so the case of the root's spelling does not change it; the root is a
/// plain drive-letter path (9.5.4).
#[test]
fn the_root_fingerprint_hashes_the_lower_cased_path() {
    use shim_daemon::runtime::grant;
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("MixedCase Root");
    std::fs::create_dir(&raw).unwrap();
    let root = grant::canonicalize_root(&raw).unwrap();
    assert!(!root.path.starts_with(r"\\?\"), "{}", root.path);
    assert!(root.path.ends_with(r"\MixedCase Root"), "{}", root.path);
    assert!(
        grant::fingerprint_json(&root, true).contains(r#"\\mixedcase root""#),
        "{}",
        grant::fingerprint_json(&root, true)
    );
    for respelled in [root.path.to_uppercase(), root.path.to_lowercase()] {
        let other = grant::CanonicalRoot {
            path: respelled,
            ..root.clone()
        };
        assert_eq!(grant::fingerprint(&other), grant::fingerprint(&root));
    }
}

/// PROTOCOL.md 9.2 and 9.5.4 on Windows: the folder browser lists the home folder first and
/// then the fixed and removable drive roots (`C:\`, named by its full path), every path a
/// plain drive-letter path, never `\\?\C:\...`, in the root list and in `current.path`.
#[tokio::test]
async fn the_folder_browser_offers_the_drives_by_plain_drive_letter_paths() {
    use crate::suite::control::list;
    use crate::suite::control::listing;
    let env = Env::new(PeerConfig::default()).await;
    let home = env.home_dirs(&["Projects"]);
    let (mut child, conn) = crate::suite::control::start(&env, &[]).await;
    let top = listing(&conn.request(list(None, None, None), T).await.unwrap());
    let plain_home = crate::suite::harness::canonical(&home);
    let paths: Vec<&str> = top.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths[0], plain_home.to_str().unwrap(), "{paths:?}");
    assert!(paths.iter().all(|p| !p.starts_with(r"\\")), "{paths:?}");
    let c = top
        .entries
        .iter()
        .find(|e| e.path == r"C:\")
        .unwrap_or_else(|| panic!("no C:\\ root in {paths:?}"));
    assert_eq!(c.name, r"C:\");
    let bid = top.browse_id.as_str();
    let in_home = listing(
        &conn
            .request(
                list(Some(bid), Some(top.entries[0].directory_ref.as_str()), None),
                T,
            )
            .await
            .unwrap(),
    );
    let current = in_home.current.unwrap();
    assert_eq!(current.path, plain_home.to_str().unwrap());
    assert_eq!(
        in_home.entries[0].path,
        plain_home.join("Projects").to_str().unwrap()
    );
    let in_c = listing(
        &conn
            .request(list(Some(bid), Some(c.directory_ref.as_str()), None), T)
            .await
            .unwrap(),
    );
    assert_eq!(in_c.current.unwrap().path, r"C:\");
    assert!(in_c.parent_ref.is_none());
    assert!(
        in_c.entries
            .iter()
            .all(|e| e.path.starts_with(r"C:\") && !e.name.eq_ignore_ascii_case("windows")),
        "{:?}",
        in_c.entries
    );
    child.kill().await.ok();
}
