//! The command policy and approvals through the real binary and the platform peer: forbid,
//! prompt answered with `approve` / `deny` / nothing, pause and resume, `policy check`, a bad
//! policy file, and the local control socket's bad input.

use std::io::Read;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::finish;
use crate::suite::harness::pgrep;
use crate::suite::harness::start_marked_command;
use crate::suite::harness::wait_until;
use crate::suite::harness::with_op;

const SID: &str = "policy-session";

const POLICY: &str = r#"default = "allow"

[[rule]]
decision = "forbid"
program = "rm"
match = ["rm -rf /", "sudo rm x"]
not_match = ["rmdir x"]
justification = "deleting is for people"

[[rule]]
decision = "prompt"
prefix = ["touch"]
"#;

fn write_policy(env: &Env, text: &str) -> PathBuf {
    let p = env.dir.path().join("policy.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn shell(cmd: &str) -> Message {
    Message::ExecuteCommand(ExecuteCommand {
        command: Some(cmd.into()),
        ..ExecuteCommand::default()
    })
}

fn socket(env: &Env) -> PathBuf {
    env.dir.path().join("run/autogpt-shim/control.sock")
}

/// Runs `autogpt-shim ARGS` to the end.
async fn cli(env: &Env, args: &[&str]) -> (i32, String, String) {
    finish(env.command(args).spawn().unwrap(), T).await
}

/// Waits until `autogpt-shim approvals --json` lists one command; returns its id.
async fn pending_id(env: &Env) -> u64 {
    for _ in 0..100 {
        let (code, out, err) = cli(env, &["approvals", "--json"]).await;
        assert_eq!(code, 0, "{out}{err}");
        let list: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        if let Some(p) = list.first() {
            return p["id"].as_u64().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no command waited for approval");
}

#[tokio::test]
async fn forbidden_and_prompted_commands_through_the_daemon() {
    let env = Env::new(PeerConfig::default()).await;
    let policy = write_policy(&env, POLICY);
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy)
        .env("AUTOGPT_SHIM_APPROVAL_TIMEOUT_SECONDS", "2");
    let child = c.spawn().unwrap();
    let conn = std::sync::Arc::new(env.next().await);
    let victim = env.root.join("victim");
    std::fs::write(&victim, "x").unwrap();

    // Forbidden, also hidden in a list and a substitution: refused, nothing runs.
    for cmd in ["rm victim", "true; rm victim", "echo $(rm victim)"] {
        let r = conn.request(shell(cmd), T).await.unwrap();
        assert_eq!(error_code(&r.frame.message), "PERMISSION_PENDING", "{cmd}");
        let Message::Error(e) = &r.frame.message else {
            unreachable!()
        };
        assert!(
            e.message.contains("deleting is for people"),
            "{}",
            e.message
        );
        let details = e.details.as_ref().unwrap();
        assert_eq!(details["permission"], "command_policy");
        assert!(victim.exists(), "{cmd} ran");
    }
    // Allowed by default.
    let r = conn.request(shell("echo fine"), T).await.unwrap();
    assert!(matches!(r.frame.message, Message::CommandResult(_)));

    // Prompt, approved with `autogpt-shim approve`: it runs and the peer gets its result.
    let ask = {
        let conn = conn.clone();
        tokio::spawn(async move { conn.request(shell("touch approved"), T).await })
    };
    let id = pending_id(&env).await;
    let (code, out, err) = cli(&env, &["approve", &id.to_string()]).await;
    assert_eq!(code, 0, "{out}{err}");
    let r = ask.await.unwrap().unwrap();
    assert!(
        matches!(r.frame.message, Message::CommandResult(_)),
        "{:?}",
        r.frame.message
    );
    assert!(env.root.join("approved").exists());
    // A second answer for the same id is refused with a clear message.
    let (code, _, err) = cli(&env, &["deny", &id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("already decided"), "{err}");
    let (code, _, err) = cli(&env, &["approve", "987654"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("no command waits for approval 987654"),
        "{err}"
    );

    // Denied: refused, and never run later.
    let ask = {
        let conn = conn.clone();
        tokio::spawn(async move { conn.request(shell("touch denied"), T).await })
    };
    let id = pending_id(&env).await;
    let (code, out, err) = cli(&env, &["deny", &id.to_string()]).await;
    assert_eq!(code, 0, "{out}{err}");
    let r = ask.await.unwrap().unwrap();
    assert_eq!(error_code(&r.frame.message), "PERMISSION_PENDING");

    // Nobody answers: denied after approval_timeout_seconds (2 s here).
    let started = std::time::Instant::now();
    let r = conn.request(shell("touch timed-out"), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "PERMISSION_PENDING");
    assert!(started.elapsed() >= Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!env.root.join("denied").exists());
    assert!(!env.root.join("timed-out").exists());

    // Every decision is an audit record: what, which rule, who and how long.
    let records = env.audit_records();
    let decisions = with_op(&records, "COMMAND_POLICY");
    let answers: Vec<(&str, &str)> = decisions
        .iter()
        .map(|r| {
            (
                r["details"]["decision"].as_str().unwrap(),
                r["details"]["decided_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("forbid", "policy"),
            ("forbid", "policy"),
            ("forbid", "policy"),
            ("prompt", "cli"),
            ("prompt", "cli"),
            ("prompt", "timeout"),
        ]
    );
    assert_eq!(decisions[3]["details"]["answer"], "approved");
    assert_eq!(decisions[4]["details"]["answer"], "denied");
    assert_eq!(decisions[5]["details"]["answer"], "timed_out");
    assert!(decisions[5]["details"]["waited_ms"].as_u64().unwrap() >= 2000);
    assert_eq!(decisions[0]["details"]["rule_line"], 3);
    env.stop(child).await;
    env.verify_audit();
}

#[tokio::test]
async fn pause_refuses_new_operations_until_resume() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = env.next().await;
    let (code, out, _) = cli(&env, &["status"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Daemon: running"), "{out}");

    let (code, out, err) = cli(&env, &["pause"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (_, out, _) = cli(&env, &["status"]).await;
    assert!(out.contains("PAUSED"), "{out}");
    let r = conn.request(shell("touch during-pause"), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    assert!(!env.root.join("during-pause").exists());

    let (code, _, _) = cli(&env, &["resume"]).await;
    assert_eq!(code, 0);
    let actions: Vec<String> = with_op(&env.audit_records(), "LOCAL_CONTROL")
        .iter()
        .map(|r| r["details"]["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actions, ["pause", "resume"]);
    let r = conn.request(shell("touch after-resume"), T).await.unwrap();
    assert!(matches!(r.frame.message, Message::CommandResult(_)));
    assert!(env.root.join("after-resume").exists());
    env.stop(child).await;
    // The socket file is gone with the daemon.
    assert!(!socket(&env).exists());
    let (code, out, err) = cli(&env, &["approvals"]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("no daemon is running"), "{err}");
}

#[tokio::test]
async fn kill_ends_every_running_command_and_its_children() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = std::sync::Arc::new(env.next().await);
    // A command with a child of its own, and a second command.
    let marker = "kill-switch-marker-4f2a";
    let tree = {
        let conn = conn.clone();
        let cmd = format!("sleep 3171 & sleep 3172; echo {marker}");
        tokio::spawn(async move { conn.request(shell(&cmd), T).await })
    };
    let other = start_marked_command(&conn, "kill-switch-other-9c1d").await;
    wait_until("both run", || pgrep("sleep 3172") && pgrep("sleep 3171")).await;
    let started = std::time::Instant::now();
    let (code, out, err) = cli(&env, &["kill"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Ended 2 running command(s)"), "{out}");
    let r = tree.await.unwrap().unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert_eq!(c.exit_code, -9);
            assert!(
                c.stderr.contains("the local user ended this command"),
                "{c:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    other.await.unwrap();
    wait_until("no process is left", || {
        !pgrep("sleep 3171") && !pgrep("sleep 3172") && !pgrep("kill-switch-other-9c1d")
    })
    .await;
    // The daemon goes on serving.
    let r = conn.request(shell("echo after"), T).await.unwrap();
    assert!(matches!(r.frame.message, Message::CommandResult(_)));
    env.stop(child).await;
    let records = env.audit_records();
    let local = with_op(&records, "LOCAL_CONTROL");
    assert_eq!(local.len(), 1);
    assert_eq!(local[0]["details"]["action"], "kill");
    assert_eq!(with_op(&records, "COMMAND_KILLED").len(), 2);
    env.verify_audit();
}

#[tokio::test]
async fn a_bad_policy_file_stops_start_with_78_and_the_line() {
    let env = Env::new(PeerConfig::default()).await;
    let policy = write_policy(
        &env,
        "default = \"allow\"\n\n[[rule]]\ndecision = \"forbid\"\npattern = \"curl (\"\n",
    );
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy);
    let (code, out, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("policy.toml:3: bad pattern"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    env.assert_no_connection(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn policy_check_prints_the_decision_and_the_rule() {
    let env = Env::new(PeerConfig::default()).await;
    let policy = write_policy(&env, POLICY);
    let p = policy.to_str().unwrap();
    let (code, out, err) = cli(
        &env,
        &[
            "policy",
            "check",
            "--policy",
            p,
            "--command",
            "ls; rm -rf /",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("forbid\nrule: line 3: program = \"rm\"\n"),
        "{out}"
    );
    let (code, out, _) = cli(
        &env,
        &[
            "policy", "check", "--json", "--policy", p, "--", "touch", "a b",
        ],
    )
    .await;
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "prompt");
    assert_eq!(v["rule_line"], 10);
    // The configured file is the default.
    let mut c = env.command(&["policy", "check", "--command", "rm x"]);
    c.env("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy);
    let (_, out, _) = finish(c.spawn().unwrap(), T).await;
    assert!(out.starts_with("forbid"), "{out}");
    // Neither or both of --command and ARGV: usage error.
    let (code, _, err) = cli(&env, &["policy", "check", "--policy", p]).await;
    assert_eq!(code, 2);
    assert!(err.contains("hint:"), "{err}");
    // A bad file: 78 with its line.
    std::fs::write(&policy, "[[rule]]\ndecision = \"nope\"\nprogram = \"x\"\n").unwrap();
    let (code, _, err) = cli(&env, &["policy", "check", "--policy", p, "--command", "x"]).await;
    assert_eq!(code, 78);
    assert!(err.contains("policy.toml:2"), "{err}");
}

/// Sends raw bytes on the control socket; returns the reply frame's body.
fn raw_frame(sock: &std::path::Path, bytes: &[u8]) -> Vec<u8> {
    let mut s = std::os::unix::net::UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.write_all(bytes).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    body
}

#[tokio::test]
async fn the_control_socket_refuses_bad_frames_and_other_versions_and_keeps_serving() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = env.next().await;
    let sock = socket(&env);
    wait_until("the control socket", || sock.exists()).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sock), 0o600);
    assert_eq!(mode(sock.parent().unwrap()), 0o700);

    use shim_daemon::ipc::Decoded;
    use shim_daemon::ipc::IpcErrorKind;
    use shim_daemon::ipc::Response;
    let error_kind = |body: Vec<u8>| match shim_daemon::ipc::decode::<Response>(&body) {
        Decoded::Message(Response::Error { kind, message }) => (kind, message),
        other => panic!("{other:?}"),
    };
    // A body that is not a request.
    let (kind, _) = error_kind(raw_frame(&sock, &[0, 0, 0, 2, 1, 0xee]));
    assert_eq!(kind, IpcErrorKind::Malformed);
    // A newer client's frame: a clear answer, not a hang-up.
    let mut newer = postcard::to_stdvec(&9u16).unwrap();
    newer.extend([3, 1, 2]);
    let mut frame = u32::try_from(newer.len()).unwrap().to_be_bytes().to_vec();
    frame.extend(&newer);
    let (kind, message) = error_kind(raw_frame(&sock, &frame));
    assert_eq!(kind, IpcErrorKind::UnsupportedVersion);
    assert!(message.contains("protocol 1, the client 9"), "{message}");
    // A huge length: refused without reading it.
    let (kind, _) = error_kind(raw_frame(&sock, &u32::MAX.to_be_bytes()));
    assert_eq!(kind, IpcErrorKind::Malformed);

    // Still serving, and a second daemon is refused while the first answers.
    let (code, out, _) = cli(&env, &["status"]).await;
    assert_eq!(code, 0, "{out}");
    let mut second = env.legacy_command("second", &[]);
    second.env(
        "AUTOGPT_SHIM_AUDIT_LOG_PATH",
        env.dir.path().join("second-audit.jsonl"),
    );
    let (code, out, err) = finish(second.spawn().unwrap(), T).await;
    assert_eq!(code, 78, "{out}{err}");
    assert!(
        err.contains("another autogpt-shim daemon is running"),
        "{err}"
    );
    let r = conn.request(shell("echo still"), T).await.unwrap();
    assert!(matches!(r.frame.message, Message::CommandResult(_)));
    env.stop(child).await;

    // A stale socket file (the daemon was killed) is replaced at the next start.
    std::os::unix::net::UnixListener::bind(&sock).ok();
    assert!(sock.exists());
    let child = env.start_legacy(SID, &[]);
    let _conn = env.next().await;
    let (code, out, _) = cli(&env, &["status"]).await;
    assert_eq!(code, 0, "{out}");
    env.stop(child).await;
}

const ASKING: &str = r#"# Ask before anything runs, except echo.
default = "prompt"   # everything else waits for a yes

[[rule]]
decision = "allow"
program = "echo"

[[rule]]
decision = "prompt"
prefix = ["git"]     # always ask for git, even after "always allow"
"#;

#[tokio::test]
async fn always_allow_adds_a_rule_and_the_same_command_then_runs_without_asking() {
    let env = Env::new(PeerConfig::default()).await;
    let policy = write_policy(&env, ASKING);
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy)
        .env("AUTOGPT_SHIM_APPROVAL_TIMEOUT_SECONDS", "8");
    let child = c.spawn().unwrap();
    let conn = std::sync::Arc::new(env.next().await);
    let ask = |cmd: &'static str| {
        let conn = conn.clone();
        tokio::spawn(async move { conn.request(shell(cmd), T).await })
    };

    // Answered with "always allow": it runs, and the rule is in the file.
    let r = ask("touch always-1 && echo done");
    let id = pending_id(&env).await;
    let (code, out, err) = cli(&env, &["approve", "--always", &id.to_string()]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("policy.toml:13: allow argv = [\"touch\", \"always-1\"]"),
        "{out}"
    );
    let r = r.await.unwrap().unwrap();
    assert!(
        matches!(&r.frame.message, Message::CommandResult(c) if c.stdout == "done\n"),
        "{:?}",
        r.frame.message
    );
    assert!(env.root.join("always-1").exists());
    let text = std::fs::read_to_string(&policy).unwrap();
    assert!(
        text.starts_with(ASKING),
        "the old text was changed:\n{text}"
    );
    assert!(
        text.contains("[[rule]]\ndecision = \"allow\"\nargv = [\"touch\", \"always-1\"]\nmatch = [\"touch always-1\"]\n"),
        "{text}"
    );

    // The same command again: it runs at once, nobody is asked (the daemon uses the new
    // file without a restart).
    std::fs::remove_file(env.root.join("always-1")).unwrap();
    let started = std::time::Instant::now();
    let r = conn
        .request(shell("touch always-1 && echo done"), T)
        .await
        .unwrap();
    assert!(
        matches!(r.frame.message, Message::CommandResult(_)),
        "{:?}",
        r.frame.message
    );
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(env.root.join("always-1").exists());
    // `policy check` reads the amended file, its new examples included.
    let (code, out, err) = cli(
        &env,
        &[
            "policy",
            "check",
            "--policy",
            policy.to_str().unwrap(),
            "--command",
            "touch always-1",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("allow\nrule: line 13: argv = "), "{out}");

    // Exactly that command: one more word still asks (denied here).
    let r = ask("touch always-1 extra");
    let id = pending_id(&env).await;
    let (code, _, _) = cli(&env, &["deny", &id.to_string()]).await;
    assert_eq!(code, 0);
    assert_eq!(
        error_code(&r.await.unwrap().unwrap().frame.message),
        "PERMISSION_PENDING"
    );
    assert!(!env.root.join("extra").exists());

    // A rule that asks wins over any allow rule: "always" is refused with the reason, the
    // file is unchanged, and the command still waits for a plain answer.
    let r = ask("git --version");
    let id = pending_id(&env).await;
    let before = std::fs::read_to_string(&policy).unwrap();
    let (code, _, err) = cli(&env, &["approve", "--always", &id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("line 8"), "{err}");
    assert!(err.contains("strictest decision wins"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), before);
    let (code, out, err) = cli(&env, &["deny", &id.to_string()]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        error_code(&r.await.unwrap().unwrap().frame.message),
        "PERMISSION_PENDING"
    );
    // Unknown and already decided ids.
    let (code, _, err) = cli(&env, &["approve", "--always", &id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("already decided"), "{err}");
    let (code, _, err) = cli(&env, &["approve", "--always", "424242"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("no command waits for approval 424242"),
        "{err}"
    );
    env.stop(child).await;

    // Audited: who decided, how long it waited, and what was written where.
    let records = env.audit_records();
    let decisions = with_op(&records, "COMMAND_POLICY");
    assert_eq!(decisions[0]["details"]["answer"], "always_allowed");
    assert_eq!(decisions[0]["details"]["decided_by"], "cli");
    assert!(decisions[0]["details"]["waited_ms"].is_u64());
    // The second `touch always-1` was allowed by the rule: no decision record.
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    let local = with_op(&records, "LOCAL_CONTROL");
    assert_eq!(local.len(), 1);
    let d = &local[0]["details"];
    assert_eq!(d["action"], "always_allow");
    assert_eq!(d["decided_by"], "cli");
    assert_eq!(d["approval_id"], decisions[0]["details"]["approval_id"]);
    assert_eq!(d["policy_file"], policy.to_str().unwrap());
    assert_eq!(d["rules"][0], "argv = [\"touch\", \"always-1\"]");
    assert_eq!(d["rule_lines"][0], 13);
    env.verify_audit();
}

#[tokio::test]
async fn always_allow_without_a_policy_file_is_a_clear_error() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let _conn = env.next().await;
    let (code, out, err) = cli(&env, &["approve", "--always", "1"]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("no command_policy_file is configured"),
        "{err}"
    );
    assert!(err.contains("hint: set command_policy_file"), "{err}");
    env.stop(child).await;
    assert!(with_op(&env.audit_records(), "LOCAL_CONTROL").is_empty());
}

#[tokio::test]
async fn detach_through_the_control_socket_ends_the_chat_like_the_platform_s_detach() {
    use crate::suite::control;
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["Projects"]);
    let (child, conn) = control::start(&env, &[]).await;
    let a = control::browse_and_attach(&conn, control::SID, "Projects").await;
    let data = control::activate_child(&env, &conn, control::SID).await;

    let (code, out, err) = cli(&env, &["detach", control::SID]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Detached chat"), "{out}");
    // The chat's runtime ends, and its binding is gone as after DETACH_SESSION.
    data.closed(T).await.unwrap();
    let r = conn
        .request(
            Message::ActivateSession(shim_protocol::messages::control::ActivateSession {
                session_id: shim_protocol::values::SessionId::new(control::SID).unwrap(),
                revision: 1,
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "SESSION_NOT_ATTACHED");
    // A chat that is not there: a clear error.
    let (code, _, err) = cli(&env, &["detach", control::SID]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no chat has the session id"), "{err}");
    // The control connection goes on serving.
    let r = conn.request(control::detach("other"), T).await.unwrap();
    assert_eq!(r.frame.message_type(), shim_protocol::MessageType::Ack);
    env.stop(child).await;

    let records = env.audit_records();
    let local = with_op(&records, "LOCAL_CONTROL");
    assert_eq!(local.len(), 1, "{local:?}");
    assert_eq!(local[0]["details"]["action"], "detach");
    assert_eq!(local[0]["details"]["decided_by"], "cli");
    assert_eq!(local[0]["details"]["allowed_root"], a.allowed_root.as_str());
    assert_eq!(local[0]["session_id"], control::SID);
    env.verify_audit();

    // A legacy daemon has one session and no chats to detach.
    let child = env.start_legacy(SID, &[]);
    let _conn = env.next().await;
    let (code, _, err) = cli(&env, &["detach", SID]).await;
    assert_eq!(code, 1);
    assert!(err.contains("single legacy session"), "{err}");
    env.stop(child).await;
}

/// Connects to `sock` as uid/gid 65534 (`setpriv`), sends `frame` and reports what happened:
/// `EACCES` (the connect was refused), `EOF` (the daemon closed, or reset, the connection
/// without answering) or `REPLY` (it answered).
async fn as_nobody(sock: &std::path::Path, frame: &[u8]) -> String {
    let script = "import socket, sys\n\
s = socket.socket(socket.AF_UNIX)\n\
s.settimeout(10)\n\
try:\n    s.connect(sys.argv[1])\n\
except PermissionError:\n    print('EACCES'); sys.exit(0)\n\
try:\n    s.sendall(bytes.fromhex(sys.argv[2]))\n    print('REPLY' if s.recv(4) else 'EOF')\n\
except (ConnectionResetError, BrokenPipeError):\n    print('EOF')\n";
    let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
    let out = tokio::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        // Debian's python3 (a python3 earlier on PATH may live where 65534 cannot read).
        .args(["/usr/bin/python3", "-c", script])
        .arg(sock)
        .arg(hex)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn another_user_cannot_steer_the_daemon_even_when_the_socket_is_opened_up() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP: needs root to act as another user (setpriv)");
        return;
    }
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let _conn = env.next().await;
    let sock = socket(&env);
    wait_until("the control socket", || sock.exists()).await;
    let pause = shim_daemon::ipc::encode_frame(&shim_daemon::ipc::Request::Pause).unwrap();

    // First wall: the private directory (0700) keeps another user from the socket.
    assert_eq!(as_nobody(&sock, &pause).await, "EACCES");

    // Second wall: with every directory and the socket opened to all (as a careless admin
    // or a hostile process running as the user might), the daemon still checks the peer's
    // uid and closes the connection without acting on it.
    let set = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };
    set(env.dir.path(), 0o711);
    set(&env.dir.path().join("run"), 0o711);
    set(sock.parent().unwrap(), 0o711);
    set(&sock, 0o666);
    assert_eq!(as_nobody(&sock, &pause).await, "EOF");

    let (code, out, _) = cli(&env, &["status", "--json"]).await;
    assert_eq!(code, 0, "{out}");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["paused"], false, "another user's pause took effect: {s}");
    env.stop(child).await;
    assert!(
        with_op(&env.audit_records(), "LOCAL_CONTROL").is_empty(),
        "another user's request was acted on"
    );
}
