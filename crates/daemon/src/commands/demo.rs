//! `autogpt-shim demo`: the embedded loopback platform peer plus the real daemon in
//! machine control mode, with a throw-away home, state and credential store, playing one
//! chat as the platform would and verifying the audit log it produced. No account, no
//! network beyond 127.0.0.1.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use shim_audit::AuditKey;
use shim_auth::CredentialStore;
use shim_auth::MemoryStore;
use shim_auth::Secret;
use shim_platform_peer::Connection;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::control::ActivateSession;
use shim_protocol::messages::control::AttachSession;
use shim_protocol::messages::control::DirectoryListRequest;
use shim_protocol::messages::control::RestoreSession;
use shim_protocol::messages::exec::ExecuteCommand;
use shim_protocol::messages::files::ContentEncoding;
use shim_protocol::messages::files::FileDelete;
use shim_protocol::messages::files::FileList;
use shim_protocol::messages::files::FileMove;
use shim_protocol::messages::files::FileRead;
use shim_protocol::messages::files::FileStat;
use shim_protocol::messages::files::FileWrite;
use shim_protocol::messages::files::ReadFormat;
use shim_protocol::values::SessionId;
use tokio_util::sync::CancellationToken;

use crate::config::ConfigSources;
use crate::config::FlagOverrides;

const T: Duration = Duration::from_secs(20);
const SESSION: &str = "5f0c2a8e-demo-4c1d-9e7a-chat00000001";

type DemoResult<T> = Result<T, String>;

fn e<E: std::fmt::Display>(context: &str) -> impl FnOnce(E) -> String + '_ {
    move |err| format!("{context}: {err}")
}

struct Script<'a> {
    out: &'a mut (dyn Write + Send),
}

impl Script<'_> {
    fn say(&mut self, line: impl AsRef<str>) {
        let _ = writeln!(self.out, "{}", line.as_ref());
        let _ = self.out.flush();
    }

    async fn ask(&mut self, conn: &Connection, what: &str, msg: Message) -> DemoResult<Message> {
        self.say(format!("platform -> {} {what}", msg.message_type()));
        let r = conn
            .request(msg, T)
            .await
            .map_err(e("the daemon did not answer"))?;
        let m = r.frame.message;
        let summary = summarize(&m);
        self.say(format!(
            "daemon   <- {} {summary} (pending_capacity {})",
            m.message_type(),
            r.frame
                .pending_capacity
                .map_or_else(|| "null".to_owned(), |c| c.to_string())
        ));
        Ok(m)
    }
}

fn summarize(m: &Message) -> String {
    match m {
        Message::DirectoryListResponse(l) => format!(
            "{} entr{}: [{}]",
            l.entries.len(),
            if l.entries.len() == 1 { "y" } else { "ies" },
            l.entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Message::SessionAttached(a) => format!(
            "root {} revision {} (grant {} chars)",
            a.allowed_root,
            a.revision,
            a.root_grant.as_str().len()
        ),
        Message::SessionActivated(a) => format!("root {} revision {}", a.allowed_root, a.revision),
        Message::SessionRestored(a) => format!("root {} revision {}", a.allowed_root, a.revision),
        Message::FileContents(c) => format!("{:?} ({} bytes)", c.content, c.size_bytes),
        Message::FileListResponse(l) => format!(
            "[{}]",
            l.entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Message::FileStatResponse(s) => format!(
            "exists={} size={:?} mode={:?}",
            s.exists, s.size_bytes, s.mode
        ),
        Message::CommandResult(c) => format!("exit {} stdout {:?}", c.exit_code, c.stdout),
        Message::Error(err) => format!("{}: {}", err.code.as_str(), err.message),
        Message::Ack(_) => "ok".to_owned(),
        _ => String::new(),
    }
}

fn read(path: &str) -> Message {
    Message::FileRead(FileRead {
        path: path.to_owned(),
        encoding: ContentEncoding::Utf8,
        format: ReadFormat::Text,
        offset: 0,
        length: None,
    })
}

fn session() -> DemoResult<SessionId> {
    SessionId::new(SESSION).map_err(e("session id"))
}

/// Runs the demo, printing the transcript to `out`.
pub async fn run(enable_shell: bool, out: &mut (dyn Write + Send)) -> DemoResult<()> {
    let mut s = Script { out };
    let dir = tempfile::tempdir().map_err(e("temp dir"))?;
    let home = dir.path().join("home");
    let project = home.join("demo-project");
    std::fs::create_dir_all(&project).map_err(e("demo folder"))?;
    std::fs::create_dir_all(home.join("Documents")).map_err(e("demo folder"))?;
    std::fs::write(project.join("README.md"), "# Demo project\n").map_err(e("demo file"))?;

    let peer = Peer::start(PeerConfig::default())
        .await
        .map_err(e("platform peer"))?;
    s.say(format!(
        "Embedded platform peer listening at {} (loopback only)",
        peer.ws_base()
    ));
    s.say(format!(
        "Throw-away home, state and credentials in {}\n",
        dir.path().display()
    ));

    // Credentials: a fresh audit key and a token pair the peer accepts.
    let store = MemoryStore::new();
    let key = AuditKey::generate().map_err(e("audit key"))?;
    store
        .set(
            shim_auth::account::AUDIT_KEY,
            &Secret::new(key.to_hex().as_str()),
        )
        .map_err(e("store"))?;
    let (access, refresh) = peer.issue_tokens();
    let deployment = format!("autogpt-local-executor@{}", peer.http_base());
    store
        .set(
            &shim_auth::account::refresh_token(&deployment),
            &Secret::new(refresh),
        )
        .map_err(e("store"))?;
    store
        .set(
            &shim_auth::account::access_token(&deployment),
            &Secret::new(access),
        )
        .map_err(e("store"))?;

    let audit_path = dir.path().join("state").join("audit.log");
    let mut env = vec![
        ("AUTOGPT_SHIM_PLATFORM_URL".to_owned(), peer.http_base()),
        (
            "AUTOGPT_SHIM_AUDIT_LOG_PATH".to_owned(),
            audit_path.to_string_lossy().into_owned(),
        ),
        (
            "AUTOGPT_SHIM_MACHINE_ID".to_owned(),
            "demo-machine-0001".to_owned(),
        ),
        (
            "AUTOGPT_SHIM_DISPLAY_NAME".to_owned(),
            "demo-machine".to_owned(),
        ),
        (
            "AUTOGPT_SHIM_RECONNECT_BASE_DELAY".to_owned(),
            "0.2".to_owned(),
        ),
        (
            "AUTOGPT_SHIM_RECONNECT_JITTER_SECONDS".to_owned(),
            "0".to_owned(),
        ),
    ];
    if enable_shell {
        env.push(("AUTOGPT_SHIM_ENABLE_SHELL".to_owned(), "true".to_owned()));
    }
    let settings = crate::config::load(&ConfigSources {
        config_path: Some(dir.path().join("no-config.toml")),
        env,
        flags: FlagOverrides::default(),
        home: Some(home.clone()),
        cwd: dir.path().to_path_buf(),
    })
    .map_err(e("configuration"))?;

    let shutdown = CancellationToken::new();
    let deps = crate::runtime::start::StartDeps {
        store: Box::new(store),
        legacy_key: None,
        shutdown: shutdown.clone(),
        out: Box::new(std::io::sink()),
        // The demo's own socket (Windows: its own named pipe), so that it runs beside a
        // real daemon.
        control_socket: Some(if cfg!(windows) {
            crate::ipc::pipe_name(&format!("demo-{}", std::process::id()))
        } else {
            dir.path().join("run").join("control.sock")
        }),
    };
    let daemon = tokio::spawn(crate::runtime::start::start(settings, deps));
    let result = play(&mut s, &peer, &home, &project, enable_shell).await;
    shutdown.cancel();
    let stopped = tokio::time::timeout(T, daemon)
        .await
        .map_err(e("the daemon did not stop"))?
        .map_err(e("daemon task"))?;
    if let Err(r) = result {
        // Say why the daemon gave up (a preflight failure reads "did not connect" above).
        return Err(match stopped {
            Err(d) => format!("{r}; the daemon stopped with: {d}"),
            Ok(_) => r,
        });
    }
    stopped.map_err(e("daemon"))?;
    s.say("\nDaemon stopped (SIGINT/SIGTERM would do the same).");

    let violations = peer.violations();
    s.say(format!(
        "Protocol violations recorded by the platform peer: {}",
        violations.len()
    ));
    if !violations.is_empty() {
        return Err(format!("protocol violations: {violations:?}"));
    }
    verify_audit(&mut s, &audit_path, &key)?;
    s.say("demo finished: OK");
    Ok(())
}

fn verify_audit(s: &mut Script<'_>, path: &Path, key: &AuditKey) -> DemoResult<()> {
    let report = shim_audit::verify_file(path, key).map_err(e("audit log"))?;
    let text = std::fs::read_to_string(path).map_err(e("audit log"))?;
    let ops: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["op"].as_str().unwrap_or("?").to_owned())
        .collect();
    s.say(format!(
        "Audit log {}: {} records, HMAC chain {}",
        path.display(),
        report.records,
        if report.violations.is_empty() {
            "verified".to_owned()
        } else {
            format!("BROKEN: {:?}", report.violations)
        }
    ));
    s.say(format!("  ops: {}", ops.join(" ")));
    if report.violations.is_empty() {
        Ok(())
    } else {
        Err("the audit log does not verify".to_owned())
    }
}

async fn play(
    s: &mut Script<'_>,
    peer: &Peer,
    home: &Path,
    project: &Path,
    enable_shell: bool,
) -> DemoResult<()> {
    let control = peer
        .next_connection(T)
        .await
        .ok_or("the daemon did not connect")?;
    s.say(format!(
        "daemon connected: control connection, machine {} advertises [{}]\n",
        control.hello.machine_id,
        control
            .hello
            .capabilities
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));

    s.say("-- The user picks a folder for the chat --");
    let top = match s
        .ask(
            &control,
            "{} (start browsing)",
            Message::DirectoryListRequest(DirectoryListRequest::default()),
        )
        .await?
    {
        Message::DirectoryListResponse(l) => l,
        other => return Err(format!("unexpected {other:?}")),
    };
    let root = top.entries.first().ok_or("no browse root")?;
    let listing = match s
        .ask(
            &control,
            &format!("(open {})", root.name),
            Message::DirectoryListRequest(DirectoryListRequest {
                browse_id: Some(top.browse_id.clone()),
                directory_ref: Some(root.directory_ref.clone()),
                cursor: None,
            }),
        )
        .await?
    {
        Message::DirectoryListResponse(l) => l,
        other => return Err(format!("unexpected {other:?}")),
    };
    let folder = listing
        .entries
        .iter()
        .find(|e| e.name == "demo-project")
        .ok_or("demo-project not listed")?;
    let attached = match s
        .ask(
            &control,
            "(bind the chat to demo-project)",
            Message::AttachSession(AttachSession {
                session_id: session()?,
                browse_id: listing.browse_id.clone(),
                directory_ref: folder.directory_ref.clone(),
                expected_connection_id: None,
            }),
        )
        .await?
    {
        Message::SessionAttached(a) => a,
        other => return Err(format!("unexpected {other:?}")),
    };
    s.ask(
        &control,
        "(start the chat's runtime)",
        Message::ActivateSession(ActivateSession {
            session_id: session()?,
            revision: attached.revision,
        }),
    )
    .await?;
    let data = peer
        .next_connection(T)
        .await
        .ok_or("the child runtime did not connect")?;
    s.say(format!(
        "daemon connected: data connection for session {} with allowed_root {}\n",
        SESSION,
        data.hello.allowed_root.as_deref().unwrap_or("?")
    ));

    s.say("-- The model works in the folder --");
    let root_path = attached.allowed_root.clone();
    let p = |name: &str| format!("{root_path}/{name}");
    s.ask(
        &data,
        "notes/todo.txt",
        Message::FileWrite(FileWrite {
            path: p("notes/todo.txt"),
            content: "1. try the local executor\n".into(),
            encoding: ContentEncoding::Utf8,
            create_parents: true,
        }),
    )
    .await?;
    s.ask(&data, "notes/todo.txt", read(&p("notes/todo.txt")))
        .await?;
    s.ask(
        &data,
        ".",
        Message::FileList(FileList {
            path: root_path.clone(),
            glob: None,
            recursive: true,
            include_hidden: false,
            max_entries: 1000,
        }),
    )
    .await?;
    s.ask(
        &data,
        "README.md",
        Message::FileStat(FileStat {
            path: p("README.md"),
            follow_symlinks: true,
        }),
    )
    .await?;
    s.ask(
        &data,
        "notes/todo.txt -> done.txt",
        Message::FileMove(FileMove {
            src: p("notes/todo.txt"),
            dst: p("done.txt"),
            overwrite: false,
        }),
    )
    .await?;
    s.ask(
        &data,
        "done.txt",
        Message::FileDelete(FileDelete {
            path: p("done.txt"),
            recursive: false,
            missing_ok: false,
        }),
    )
    .await?;
    let escape = s
        .ask(
            &data,
            "/etc/passwd (an escape attempt)",
            read("/etc/passwd"),
        )
        .await?;
    if !matches!(&escape, Message::Error(err) if err.code.as_str() == "PATH_OUTSIDE_ALLOWED_ROOT") {
        return Err("the escape attempt was not refused".into());
    }
    let outside = home.join("Documents");
    s.ask(
        &data,
        "(another folder of the user)",
        read(&format!("{}/secret.txt", outside.display())),
    )
    .await?;
    // The default shell is cmd.exe on Windows (JAIL_FILES_EXEC.md 12.3).
    let (line, shown) = if cfg!(windows) {
        (
            "dir /b & echo running in %CD%",
            "dir /b & echo running in %CD%",
        )
    } else {
        (
            "ls; echo \"running in $(pwd)\"",
            "ls; echo running in $(pwd)",
        )
    };
    let command = Message::ExecuteCommand(ExecuteCommand {
        command: Some(line.into()),
        ..ExecuteCommand::default()
    });
    if enable_shell {
        s.ask(&data, shown, command).await?;
    } else {
        s.ask(
            &data,
            "(shell not enabled: run the demo with --enable-shell)",
            command,
        )
        .await?;
    }

    s.say("\n-- The platform restarts its side: the control connection drops --");
    control.close(1011, "server restart");
    let control2 = peer
        .next_connection(T)
        .await
        .ok_or("the daemon did not reconnect")?;
    let _ = data.closed(T).await;
    s.say("daemon reconnected with a fresh HELLO; the old chat runtime was stopped");
    s.ask(
        &control2,
        "(resume the chat with its stored grant)",
        Message::RestoreSession(RestoreSession {
            session_id: session()?,
            root_grant: attached.root_grant.clone(),
        }),
    )
    .await?;
    let data2 = peer
        .next_connection(T)
        .await
        .ok_or("the restored runtime did not connect")?;
    s.say("daemon connected: data connection restored");
    s.ask(&data2, "README.md", read(&p("README.md"))).await?;
    let _ = project;
    Ok(())
}
