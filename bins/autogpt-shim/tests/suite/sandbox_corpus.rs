//! Ordinary agent work still works under `workspace-write` (issue 14): a corpus of
//! everyday commands, run in order in one chat folder through the real binary, as root
//! and as an unprivileged user. Each must exit 0. The list says which entries needed a
//! `shell_sandbox_writable` / `shell_sandbox_readable` entry (see docs/sandbox.md).

#![cfg(target_os = "linux")]

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::suite::harness::Env;
use crate::suite::harness::stop_cleanly;
use crate::suite::sandbox::NOBODY;
use crate::suite::sandbox::PY;
use crate::suite::sandbox::chown_all;

/// `(what, command)`, run in this order in the same folder. `{py}` is Debian's Python.
const CORPUS: &[(&str, &str)] = &[
    ("echo to a file", "echo hello > a.txt"),
    ("cat", "cat a.txt"),
    (
        "mkdir -p and touch",
        "mkdir -p src/sub && touch src/sub/x.txt",
    ),
    ("ls -la", "ls -la"),
    ("cp, mv, rm", "cp a.txt b.txt && mv b.txt c.txt && rm c.txt"),
    (
        "sed -i",
        "sed -i 's/hello/world/' a.txt && grep -q world a.txt",
    ),
    (
        "sort | uniq pipeline",
        "printf 'b\\na\\nb\\nc\\n' | sort | uniq -c | sort -rn | head -1 | grep -q '2 b'",
    ),
    ("find | wc", "find . -name '*.txt' | wc -l"),
    ("awk", "awk '{print $1}' a.txt"),
    ("tar czf", "tar czf arch.tgz src && tar tzf arch.tgz"),
    (
        "tar xzf",
        "mkdir ex && tar xzf arch.tgz -C ex && ls ex/src/sub",
    ),
    ("zip", "zip -qr z.zip src && unzip -l z.zip"),
    ("unzip", "mkdir uz && unzip -q z.zip -d uz && ls uz/src/sub"),
    (
        "gzip / gunzip",
        "gzip -k a.txt && gunzip -c a.txt.gz | grep -q world",
    ),
    ("git init", "git init -q repo"),
    (
        "git add and commit",
        "cd repo && git config user.email agent@example.com && git config user.name Agent && echo x > f && git add f && git commit -qm first",
    ),
    ("git log", "cd repo && git log --oneline | grep -q first"),
    (
        "git status and diff",
        "cd repo && echo y >> f && git status --short && git diff --stat",
    ),
    (
        "git branch",
        "cd repo && git checkout -qb feature && git branch | grep -q feature",
    ),
    ("python -c", "{py} -c 'print(2 + 2)'"),
    (
        "python writes json",
        "{py} -c 'import json; json.dump({\"a\": 1}, open(\"d.json\", \"w\"))' && grep -q '\"a\"' d.json",
    ),
    (
        "python sqlite",
        "{py} -c \"import sqlite3; c = sqlite3.connect('db.sqlite'); c.execute('create table t(x)'); c.commit()\"",
    ),
    (
        "python tempfile",
        "{py} -c 'import tempfile; tempfile.NamedTemporaryFile().write(b\"x\")'",
    ),
    (
        "python venv",
        "{py} -m venv venv && venv/bin/python -c 'import sys; print(sys.prefix)'",
    ),
    ("pip in the venv", "venv/bin/python -m pip --version"),
    (
        "make",
        "printf 'all:\\n\\techo built > out.txt\\n' > Makefile && make -s && grep -q built out.txt",
    ),
    (
        "cc",
        "printf '#include <stdio.h>\\nint main(void){puts(\"hi\");return 0;}\\n' > hello.c && cc -o hello hello.c && ./hello",
    ),
    (
        "npm init and a script",
        "npm init -y >/dev/null && npm pkg set scripts.hi='node -e \"console.log(42)\"' && npm run -s hi | grep -q 42",
    ),
    (
        "node writes a file",
        "node -e 'require(\"fs\").writeFileSync(\"n.txt\", \"ok\")' && grep -q ok n.txt",
    ),
    (
        "symlink inside the folder",
        "ln -s a.txt link.txt && cat link.txt",
    ),
    (
        "a script made executable",
        "printf '#!/bin/sh\\necho ran\\n' > s.sh && chmod +x s.sh && ./s.sh",
    ),
    (
        "sha256sum of urandom",
        "head -c 1000 /dev/urandom | sha256sum",
    ),
    ("uname, date, id", "uname -a && date && id"),
    ("env | sort", "env | sort | head -3"),
    (
        "mktemp",
        "f=$(mktemp) && d=$(mktemp -d) && echo x > \"$f\" && touch \"$d/y\"",
    ),
    (
        "read /etc",
        "head -1 /etc/os-release && wc -l < /etc/passwd",
    ),
    ("ps", "ps -e | head -2"),
    ("du and df", "du -sh . && df -h . | tail -1"),
    ("xargs", "ls | xargs -n1 echo | head -2"),
    (
        "bash process substitution",
        "bash -c 'diff <(echo a) <(echo a)'",
    ),
    ("tee", "echo hi | tee t.txt >/dev/null && cat t.txt"),
    (
        "touch -d and stat",
        "touch -d 2020-01-01 a.txt && stat -c %Y a.txt",
    ),
    (
        "heredoc",
        "cat > h.txt <<'EOF'\nline\nEOF\ngrep -q line h.txt",
    ),
    ("rm -rf", "rm -rf ex uz"),
    ("background job waited", "sleep 0.1 & wait"),
    (
        "/dev/null and stderr",
        "ls /nonexistent 2>/dev/null; echo done",
    ),
];

/// The tiny Cargo build (root only: the toolchain lives in /root, which the unprivileged
/// user cannot read whatever the sandbox says).
const CARGO: &str = "cargo new -q --vcs none tiny && cd tiny && cargo build -q --offline && ./target/debug/tiny | grep -q Hello";

async fn run_env(
    conn: &shim_platform_peer::Connection,
    command: &str,
    env: BTreeMap<String, String>,
) -> (i64, String, String) {
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some(command.to_owned()),
                timeout_seconds: Some(120),
                env,
                ..ExecuteCommand::default()
            }),
            Duration::from_secs(130),
        )
        .await
        .unwrap();
    match r.frame.message {
        Message::CommandResult(c) => (c.exit_code, c.stdout, c.stderr),
        other => panic!("{command}: {other:?}"),
    }
}

async fn corpus_run(uid: Option<u32>) {
    let env = Env::new(PeerConfig::default()).await;
    // A user's git configuration in the home, which git insists on reading.
    let home = env.dir.path().join("home");
    std::fs::write(home.join(".gitconfig"), "[init]\n\tdefaultBranch = main\n").unwrap();
    if let Some(uid) = uid {
        chown_all(env.dir.path(), uid);
    }
    let readable = format!("[\"{}\"]", home.join(".gitconfig").display());
    let mut c = crate::suite::sandbox::daemon_command(
        &env,
        &[
            "--allowed-root",
            env.root_str(),
            "start",
            "--session-id",
            "0e0c2b7a-55c1-4f7e-9a52-4c8d1b2a3f40",
            "--enable-shell",
            "--shell-sandbox",
            "workspace-write",
        ],
        uid,
    );
    // Needed: without it git refuses to start ("unable to access ~/.gitconfig").
    c.env("AUTOGPT_SHIM_SHELL_SANDBOX_READABLE", readable);
    let child = c.spawn().unwrap();
    let conn = env.next().await;
    let mut failed = Vec::new();
    for (what, cmd) in CORPUS {
        let cmd = cmd.replace("{py}", PY);
        let (code, out, err) = run_env(&conn, &cmd, BTreeMap::new()).await;
        if code != 0 {
            failed.push(format!(
                "{what}: exit {code}\n  stdout: {out}\n  stderr: {err}"
            ));
        }
    }
    if uid.is_none() {
        let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| "/root/.rustup".into());
        let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| "/root/.cargo".into());
        let vars = BTreeMap::from([
            ("RUSTUP_HOME".to_owned(), rustup),
            ("CARGO_HOME".to_owned(), cargo_home),
        ]);
        let (code, out, err) = run_env(&conn, CARGO, vars).await;
        if code != 0 {
            failed.push(format!(
                "tiny cargo build: exit {code}\n  stdout: {out}\n  stderr: {err}"
            ));
        }
    }
    stop_cleanly(child).await;
    assert!(
        failed.is_empty(),
        "{} of {} corpus commands failed under workspace-write (uid {uid:?}):\n{}",
        failed.len(),
        CORPUS.len() + usize::from(uid.is_none()),
        failed.join("\n")
    );
    let records = env.audit_records();
    assert!(
        records
            .iter()
            .filter(|r| r["op"] == "EXECUTE_COMMAND")
            .all(|r| r["details"]["sandbox"] == "workspace-write")
    );
}

#[test]
fn the_corpus_has_at_least_forty_commands() {
    assert!(CORPUS.len() >= 40, "{}", CORPUS.len());
}

#[tokio::test]
async fn ordinary_commands_work_under_workspace_write() {
    corpus_run(None).await;
}

#[tokio::test]
async fn ordinary_commands_work_under_workspace_write_for_an_unprivileged_daemon() {
    corpus_run(Some(NOBODY)).await;
}
