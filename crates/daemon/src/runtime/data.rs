//! Data-plane handlers: every `FILE_*` request goes to `shim-jail`, `EXECUTE_COMMAND` to
//! `shim-exec`; each is audited (AUDIT_AUTH_CLI.md 1.7) before its response is returned.

use std::sync::Arc;
use std::time::Instant;

use shim_audit::AuditResult;
use shim_audit::Map;
use shim_exec::CwdError;
use shim_exec::ExecError;
use shim_exec::Executor;
use shim_exec::WorkDir;
use shim_jail::ContentEncoding as JailEncoding;
use shim_jail::DeleteOptions;
use shim_jail::JailError;
use shim_jail::JailRoot;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
use shim_jail::ReadFormat as JailReadFormat;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::Message;
use shim_protocol::error::MovePathDetails;
use shim_protocol::error::PathDetails;
use shim_protocol::error::PermissionPendingDetails;
use shim_protocol::messages::exec::CommandResult;
use shim_protocol::messages::exec::ExecuteCommand;
use shim_protocol::messages::files::ContentEncoding;
use shim_protocol::messages::files::FileContents;
use shim_protocol::messages::files::FileDelete;
use shim_protocol::messages::files::FileList;
use shim_protocol::messages::files::FileListEntry;
use shim_protocol::messages::files::FileListResponse;
use shim_protocol::messages::files::FileMove;
use shim_protocol::messages::files::FileRead;
use shim_protocol::messages::files::FileStat;
use shim_protocol::messages::files::FileStatResponse;
use shim_protocol::messages::files::FileWrite;
use shim_protocol::messages::handshake::Ack;

use crate::policy::Decision;
use crate::policy::Subject;
use crate::policy::amend::SharedPolicy;
use crate::runtime::approvals::Answer;
use crate::runtime::approvals::Approvals;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;
use tokio_util::sync::CancellationToken;

/// The end of one file request, handed to the blocking thread that runs it, which answers
/// from there (the connection implements it).
pub(crate) trait Finish: Send + 'static {
    /// The request's id.
    fn id(&self) -> &str;
    /// Whether the request was cancelled (its connection ended): its operation is recorded
    /// `cancelled` and not answered.
    fn cancelled(&self) -> bool;
    /// Finishes the request on this blocking-pool thread (never a runtime worker):
    /// `Ok(Some)` answers, `Ok(None)` only frees its slot, `Err` (the audit writer failed)
    /// sends nothing.
    fn answer_blocking(self, result: Result<Option<Message>, AuditFailed>);
}

/// A `FILE_*` request: what [`DataPlane::start_file_op`] runs.
#[derive(Debug)]
pub(crate) enum FileOp {
    /// `FILE_READ`.
    Read(FileRead),
    /// `FILE_WRITE`.
    Write(FileWrite),
    /// `FILE_STAT`.
    Stat(FileStat),
    /// `FILE_LIST`.
    List(FileList),
    /// `FILE_DELETE`.
    Delete(FileDelete),
    /// `FILE_MOVE`.
    Move(FileMove),
}

impl TryFrom<Message> for FileOp {
    /// Any other message, given back.
    type Error = Message;

    fn try_from(m: Message) -> Result<Self, Message> {
        Ok(match m {
            Message::FileRead(p) => FileOp::Read(p),
            Message::FileWrite(p) => FileOp::Write(p),
            Message::FileStat(p) => FileOp::Stat(p),
            Message::FileList(p) => FileOp::List(p),
            Message::FileDelete(p) => FileOp::Delete(p),
            Message::FileMove(p) => FileOp::Move(p),
            other => return Err(other),
        })
    }
}

/// What a data connection needs to serve requests.
#[derive(Debug, Clone)]
pub(crate) struct DataPlane {
    /// The opened root.
    pub(crate) jail: Arc<JailRoot>,
    /// The executor with this connection's effective limits.
    pub(crate) executor: Executor,
    /// The session-bound audit view.
    pub(crate) audit: Auditor,
    /// The machine's command policy.
    pub(crate) policy: Arc<SharedPolicy>,
    /// Where `prompt` commands wait for the local user.
    pub(crate) approvals: Arc<Approvals>,
    /// The chat's session (shown with a waiting command).
    pub(crate) session_id: String,
    /// Changes when the local user ends every running command (`autogpt-shim kill`).
    pub(crate) kill: tokio::sync::watch::Receiver<u64>,
    /// Who asked for a kill (the audit record's `decided_by`).
    pub(crate) board: Arc<crate::runtime::board::Board>,
}

fn error(code: ErrorCode, message: impl Into<String>) -> Message {
    Message::Error(ErrorPayload::new(code, message))
}

/// What a failed jail operation names: the path the request gave, or both paths of a move.
#[derive(Debug, Clone)]
enum Target {
    /// One requested path.
    Path(String),
    /// `FILE_MOVE`'s `src` and `dst`.
    Move { src: String, dst: String },
}

impl Target {
    /// The raw path recorded in a `JAIL_VIOLATION` record.
    fn audit_path(&self) -> String {
        match self {
            Target::Path(p) => p.clone(),
            Target::Move { src, dst } => format!("{src} -> {dst}"),
        }
    }

    /// The wire `ERROR`; `PATH_*` codes carry the requested path(s) in `details`.
    fn error(&self, code: ErrorCode, text: String) -> Message {
        if !code.as_str().starts_with("PATH_") {
            return error(code, text);
        }
        let payload = match self {
            Target::Path(path) => {
                ErrorPayload::with_details(code, text, &PathDetails { path: path.clone() })
            }
            Target::Move { src, dst } => ErrorPayload::with_details(
                code,
                text,
                &MovePathDetails {
                    src: src.clone(),
                    dst: dst.clone(),
                },
            ),
        };
        Message::Error(payload)
    }
}

/// The audit record (op, details, result) of a finished jail operation (AUDIT_AUTH_CLI.md
/// 1.7): `op` with `details()` and its result, or `JAIL_VIOLATION` naming `path()` instead
/// (1.8).
fn jail_record(
    op: &'static str,
    started: Instant,
    err: Option<&JailError>,
    path: impl FnOnce() -> String,
    details: impl FnOnce() -> Map,
) -> (&'static str, Map, AuditResult) {
    match err {
        None => (op, details(), AuditResult::ok_after(started.elapsed())),
        Some(e) if e.is_jail_violation() => (
            "JAIL_VIOLATION",
            Map::new()
                .with("code", e.code().as_str())
                .with("path", path())
                .with("attempted_op", op),
            AuditResult::failed(&e.code()),
        ),
        Some(e) => {
            let mut r = AuditResult::failed(&e.code());
            r.duration_ms = millis(started);
            (op, details(), r)
        }
    }
}

fn internal(e: impl std::fmt::Display) -> JailError {
    JailError::Internal(format!("file operation failed: {e}"))
}

fn wire_encoding(e: JailEncoding) -> ContentEncoding {
    match e {
        JailEncoding::Utf8 => ContentEncoding::Utf8,
        JailEncoding::Base64 => ContentEncoding::Base64,
    }
}

impl DataPlane {
    /// Starts file request `op`; the blocking thread that runs it answers it through
    /// `reply`.
    pub(crate) fn start_file_op(&self, op: FileOp, reply: impl Finish) {
        match op {
            FileOp::Read(p) => self.read(p, reply),
            FileOp::Write(p) => self.write(p, reply),
            FileOp::Stat(p) => self.stat(p, reply),
            FileOp::List(p) => self.list(p, reply),
            FileOp::Delete(p) => self.delete(p, reply),
            FileOp::Move(p) => self.rename(p, reply),
        }
    }

    /// Runs one jail operation, writes its audit record (AUDIT_AUTH_CLI.md 1.7) and answers
    /// the request, all on one blocking-pool thread: the request crosses one hand-off, the
    /// record is durable before the response exists, and the response leaves from the
    /// thread that made it so.
    ///
    /// `details(Some(&out))` gives the record of a success, `details(None)` that of a failure;
    /// a jail violation is recorded as `JAIL_VIOLATION` instead of `op` (1.8). If the request
    /// is cancelled while the operation runs, the operation still happens, its record is
    /// marked `cancelled`, and nothing is answered (PROTOCOL.md 2.6).
    fn run_jail_op<T: Send + 'static>(
        &self,
        op: &'static str,
        target: Target,
        reply: impl Finish,
        run: impl FnOnce(&JailRoot) -> Result<T, JailError> + Send + 'static,
        details: impl FnOnce(Option<&T>) -> Map + Send + 'static,
        respond: impl FnOnce(T) -> Message + Send + 'static,
    ) {
        let started = Instant::now();
        let (jail, audit) = (self.jail.clone(), self.audit.clone());
        // Detached: the thread finishes the request whatever happens to its task.
        drop(tokio::task::spawn_blocking(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&jail)))
                .unwrap_or_else(|_| Err(internal("the operation panicked")));
            let (rec_op, mut d, r) = jail_record(
                op,
                started,
                outcome.as_ref().err(),
                || target.audit_path(),
                || details(outcome.as_ref().ok()),
            );
            let cancelled = reply.cancelled();
            if cancelled {
                // The request is gone but the operation happened: record it as cancelled.
                d.insert("cancelled", true);
            }
            let audited = audit.op_blocking(rec_op, Some(reply.id()), d, r);
            // The response is built only when it will be sent.
            let answer = audited.map(|()| {
                (!cancelled).then(|| match outcome {
                    Ok(out) => respond(out),
                    Err(e) => target.error(e.code(), e.to_string()),
                })
            });
            reply.answer_blocking(answer);
        }));
    }

    /// `FILE_READ` → `FILE_CONTENTS`.
    fn read(&self, p: FileRead, reply: impl Finish) {
        let opts = ReadOptions {
            format: if p.is_text() {
                JailReadFormat::Text
            } else {
                JailReadFormat::Bytes
            },
            offset: p.offset,
            length: p.length,
        };
        let (path, asked) = (p.path.clone(), p.clone());
        self.run_jail_op(
            "FILE_READ",
            Target::Path(p.path.clone()),
            reply,
            move |jail| jail.read(&path, &opts),
            move |res| {
                Map::new()
                    .with("path", res.map_or(asked.path.as_str(), |r| r.path.as_str()))
                    .with("encoding", asked.encoding.as_str())
                    .with("offset", asked.offset)
                    .with("length", asked.length)
                    .with("size_bytes_returned", res.map(|r| r.size_bytes))
            },
            |res| {
                Message::FileContents(FileContents {
                    content: res.content,
                    encoding: wire_encoding(res.encoding),
                    size_bytes: res.size_bytes,
                    truncated: res.truncated,
                })
            },
        );
    }

    /// `FILE_WRITE` → `ACK`.
    fn write(&self, p: FileWrite, reply: impl Finish) {
        let opts = WriteOptions {
            encoding: match p.encoding {
                ContentEncoding::Base64 => JailEncoding::Base64,
                _ => JailEncoding::Utf8,
            },
            create_parents: p.create_parents,
        };
        let (path, content) = (p.path.clone(), p.content);
        let (asked, encoding, create_parents) = (p.path.clone(), p.encoding, p.create_parents);
        self.run_jail_op(
            "FILE_WRITE",
            Target::Path(p.path.clone()),
            reply,
            move |jail| jail.write(&path, &content, &opts),
            move |res| {
                Map::new()
                    .with("path", res.map_or(asked.as_str(), |r| r.path.as_str()))
                    .with("encoding", encoding.as_str())
                    .with("create_parents", create_parents)
                    .with("size_bytes_written", res.map(|r| r.size_bytes_written))
            },
            |_| Message::Ack(Ack::OK),
        );
    }

    /// `FILE_STAT` → `FILE_STAT_RESPONSE`.
    fn stat(&self, p: FileStat, reply: impl Finish) {
        let (path, follow) = (p.path.clone(), p.follow_symlinks);
        let asked = p.path.clone();
        self.run_jail_op(
            "FILE_STAT",
            Target::Path(p.path.clone()),
            reply,
            move |jail| jail.stat(&path, follow),
            move |info| {
                let shown = info
                    .and_then(Option::as_ref)
                    .map_or(asked.as_str(), |i| i.path.as_str());
                Map::new()
                    .with("path", shown)
                    .with("follow_symlinks", follow)
            },
            |info| {
                Message::FileStatResponse(match info {
                    None => FileStatResponse::default(),
                    Some(i) => FileStatResponse {
                        exists: true,
                        is_file: Some(i.is_file),
                        is_dir: Some(i.is_dir),
                        is_symlink: Some(i.is_symlink),
                        size_bytes: Some(i.size_bytes),
                        mtime: Some(i.mtime),
                        ctime: Some(i.ctime),
                        mode: Some(i.mode),
                        owner_uid: i.owner_uid,
                        owner_gid: i.owner_gid,
                        mime_type: i.mime_type.map(str::to_owned),
                        path: Some(i.path),
                    },
                })
            },
        );
    }

    /// `FILE_LIST` → `FILE_LIST_RESPONSE`.
    fn list(&self, p: FileList, reply: impl Finish) {
        let opts = ListOptions {
            glob: p.glob.clone(),
            recursive: p.recursive,
            include_hidden: p.include_hidden,
            max_entries: usize::try_from(p.max_entries).unwrap_or(usize::MAX).max(1),
        };
        let (path, asked) = (p.path.clone(), p.clone());
        self.run_jail_op(
            "FILE_LIST",
            Target::Path(p.path.clone()),
            reply,
            move |jail| jail.list(&path, &opts),
            move |res| {
                Map::new()
                    .with("path", res.map_or(asked.path.as_str(), |r| r.path.as_str()))
                    .with("glob", asked.glob)
                    .with("recursive", asked.recursive)
                    .with("include_hidden", asked.include_hidden)
                    .with("max_entries", asked.max_entries)
                    .with("entries_returned", res.map(|r| r.entries.len()))
            },
            |res| {
                Message::FileListResponse(FileListResponse {
                    entries: res
                        .entries
                        .into_iter()
                        .map(|e| FileListEntry {
                            name: e.name,
                            path: e.path,
                            is_file: e.is_file,
                            is_dir: e.is_dir,
                            is_symlink: e.is_symlink,
                            size_bytes: Some(e.size_bytes),
                            mtime: Some(e.mtime),
                        })
                        .collect(),
                    truncated: res.truncated,
                })
            },
        );
    }

    /// `FILE_DELETE` → `ACK`.
    fn delete(&self, p: FileDelete, reply: impl Finish) {
        let opts = DeleteOptions {
            recursive: p.recursive,
            missing_ok: p.missing_ok,
        };
        let (path, asked) = (p.path.clone(), p.clone());
        self.run_jail_op(
            "FILE_DELETE",
            Target::Path(p.path.clone()),
            reply,
            move |jail| jail.delete(&path, &opts),
            move |res| {
                let shown = res
                    .and_then(|r| r.path.as_deref())
                    .unwrap_or(asked.path.as_str());
                Map::new()
                    .with("path", shown)
                    .with("recursive", asked.recursive)
                    .with("missing_ok", asked.missing_ok)
            },
            |_| Message::Ack(Ack::OK),
        );
    }

    /// `FILE_MOVE` → `ACK`.
    fn rename(&self, p: FileMove, reply: impl Finish) {
        let opts = MoveOptions {
            overwrite: p.overwrite,
        };
        let (src, dst, asked) = (p.src.clone(), p.dst.clone(), p.clone());
        self.run_jail_op(
            "FILE_MOVE",
            Target::Move {
                src: p.src.clone(),
                dst: p.dst.clone(),
            },
            reply,
            move |jail| jail.rename(&src, &dst, &opts),
            move |res| {
                let (src, dst) = res.map_or((asked.src.as_str(), asked.dst.as_str()), |r| {
                    (r.src.as_str(), r.dst.as_str())
                });
                Map::new()
                    .with("src", src)
                    .with("dst", dst)
                    .with("overwrite", asked.overwrite)
            },
            |_| Message::Ack(Ack::OK),
        );
    }

    /// `EXECUTE_COMMAND` → `COMMAND_RESULT`. Dropping the future kills the process tree.
    pub(crate) async fn execute(
        &self,
        id: &str,
        p: ExecuteCommand,
        cancel: &CancellationToken,
    ) -> Result<Message, AuditFailed> {
        let req = shim_exec::CommandRequest {
            command: p.command.clone(),
            argv: p.argv.clone(),
            shell: shim_exec::Shell::from_wire(p.shell.as_str()).unwrap_or_default(),
            cwd: p.cwd.clone(),
            timeout_seconds: p
                .timeout_seconds
                .map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
            env: p.env.clone().into_iter().collect(),
        };
        let jail = self.jail.clone();
        let root = jail.root_path().to_owned();
        let resolve = move |cwd: Option<&str>| -> Result<WorkDir, CwdError> {
            let (dir, display) = jail.open_dir(cwd).map_err(|e| {
                let mut c = CwdError::new(e.code(), e.to_string());
                c.jail_violation = e.is_jail_violation();
                c
            })?;
            WorkDir::new(dir, display).map_err(|e| CwdError::new(e.code(), e.to_string()))
        };
        let prepared = match self.executor.prepare(&req, &root, resolve) {
            Ok(p) => p,
            Err(rejection) => {
                match rejection.audit {
                    Some(ev) => self.write_exec_event(id, ev).await?,
                    // The disabled-shell refusal is not audited by the executor ([H-4]).
                    None => {
                        self.audit
                            .refusal("EXECUTE_COMMAND", id, &rejection.error.code())
                            .await?;
                    }
                }
                return Ok(exec_error(&rejection.error, p.cwd.as_deref().unwrap_or("")));
            }
        };
        if let Some(refusal) = self.judge(id, &p).await? {
            return Ok(refusal);
        }
        let details = prepared.audit_details().clone();
        let started = prepared.started_at();
        // 12.10: a cancelled command (connection gone) is still audited.
        let mut guard = CancelGuard {
            audit: self.audit.clone(),
            id: id.to_owned(),
            details: Some(details.clone()),
            started,
        };
        let mut kill = self.kill.clone();
        kill.mark_unchanged();
        let result = tokio::select! {
            r = prepared.run() => r,
            // Dropping the run future kills the process tree; the guard audits it as
            // cancelled, and the platform is told the local user ended it (every command,
            // or this one alone from the console).
            by = async {
                tokio::select! {
                    _ = kill.changed() => self.board.kill_by(),
                    () = cancel.cancelled() => "console".to_owned(),
                }
            } => {
                drop(guard);
                let ms = millis(started);
                self.audit
                    .op(
                        "COMMAND_KILLED",
                        Some(id),
                        Map::new().with("decided_by", by),
                        AuditResult {
                            duration_ms: ms,
                            ..AuditResult::default()
                        },
                    )
                    .await?;
                return Ok(Message::CommandResult(CommandResult {
                    stdout: String::new(),
                    stderr: "[the local user ended this command]\n".to_owned(),
                    exit_code: -9,
                    timed_out: false,
                    duration_seconds: ms as f64 / 1000.0,
                    output_truncated: false,
                }));
            }
        };
        guard.details = None;
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.write_exec_event(
            id,
            shim_exec::AuditEvent::finished(details, &result, elapsed),
        )
        .await?;
        Ok(match result {
            Ok(r) => Message::CommandResult(CommandResult {
                stdout: r.stdout,
                stderr: r.stderr,
                exit_code: r.exit_code,
                timed_out: r.timed_out,
                duration_seconds: r.duration_seconds,
                output_truncated: r.output_truncated,
            }),
            Err(e) => exec_error(&e, p.cwd.as_deref().unwrap_or("")),
        })
    }

    /// The command policy for one command (docs/policy.md): `None` to run it, or the
    /// refusal to answer with. A `forbid`, and a `prompt` that was not approved, are audited
    /// (`COMMAND_POLICY`: the decision, the rule, who decided and how long it took) and
    /// answered with `PERMISSION_PENDING` naming the permission (`command_policy` or
    /// `command_approval`): the command needs a yes this machine's user did not give.
    async fn judge(&self, id: &str, p: &ExecuteCommand) -> Result<Option<Message>, AuditFailed> {
        let subject = match (&p.command, &p.argv) {
            (_, Some(argv)) => Subject::Argv(argv.clone()),
            (Some(c), None) => Subject::Command(c.clone()),
            (None, None) => return Ok(None),
        };
        let verdict = self.policy.current().check(&subject);
        let mut d = Map::new()
            .with("decision", verdict.decision.as_str())
            .with("rule", verdict.rule.clone())
            .with("rule_line", verdict.rule_line);
        let (permission, message) = match verdict.decision {
            Decision::Allow => return Ok(None),
            Decision::Forbid => {
                d.insert("decided_by", "policy");
                (
                    "command_policy",
                    format!(
                        "The local user's command policy forbids this command{}.",
                        verdict
                            .justification
                            .as_deref()
                            .map(|j| format!(": {j}"))
                            .unwrap_or_default()
                    ),
                )
            }
            Decision::Prompt => {
                let out = self
                    .approvals
                    .ask(
                        &self.session_id,
                        subject,
                        &verdict.reason,
                        verdict.rule.clone(),
                    )
                    .await;
                d.insert("approval_id", out.id);
                d.insert("answer", out.answer.as_str());
                d.insert("decided_by", out.by.as_str());
                d.insert(
                    "waited_ms",
                    u64::try_from(out.waited.as_millis()).unwrap_or(u64::MAX),
                );
                match out.answer {
                    Answer::Approved | Answer::AlwaysAllowed => {
                        self.audit
                            .op("COMMAND_POLICY", Some(id), d, AuditResult::default())
                            .await?;
                        return Ok(None);
                    }
                    Answer::Denied => (
                        "command_approval",
                        "The local user denied this command.".to_owned(),
                    ),
                    Answer::TimedOut => (
                        "command_approval",
                        "The local user did not approve this command in time.".to_owned(),
                    ),
                }
            }
        };
        self.audit
            .op(
                "COMMAND_POLICY",
                Some(id),
                d,
                AuditResult::failed(&ErrorCode::PermissionPending),
            )
            .await?;
        Ok(Some(Message::Error(ErrorPayload::with_details(
            ErrorCode::PermissionPending,
            message,
            &PermissionPendingDetails {
                permission: permission.to_owned(),
                platform: std::env::consts::OS.to_owned(),
                hint: Some(
                    "The command was not run. Do not retry it unchanged; ask the user or use another way."
                        .to_owned(),
                ),
            },
        ))))
    }

    async fn write_exec_event(
        &self,
        id: &str,
        ev: shim_exec::AuditEvent,
    ) -> Result<(), AuditFailed> {
        self.audit
            .write(shim_audit::AuditEvent::from(ev).request_id(id))
            .await
    }
}

/// Audits a command whose request was cancelled before it finished (the future was
/// dropped when its connection ended; the executor has already killed the process tree).
struct CancelGuard {
    audit: Auditor,
    id: String,
    details: Option<shim_exec::ExecAuditDetails>,
    started: Instant,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some(details) = self.details.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let record = shim_audit::AuditEvent::from(shim_exec::AuditEvent::cancelled(details, ms))
            .request_id(std::mem::take(&mut self.id));
        let audit = self.audit.clone();
        handle.spawn(async move {
            let _ = audit.write(record).await;
        });
    }
}

fn exec_error(e: &ExecError, cwd: &str) -> Message {
    Target::Path(cwd.to_owned()).error(e.code(), e.to_string())
}

fn millis(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
