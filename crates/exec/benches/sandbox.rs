//! What the command sandbox costs: `true` by argv through the executor with the sandbox
//! off, `workspace-write`, and `workspace-write` + network `deny` (namespace, and the
//! seccomp fallback), as paired medians (the variants alternate each round, so load from
//! other processes hits all alike). The same `true` on a pseudo-terminal
//! (`PreparedCommand::spawn_pty`), off and workspace-write + deny, shows what the
//! confinement costs on the PTY path (reported, no target).
//!
//! `cargo bench -p shim-exec --bench sandbox` (Linux). Target (issue 14): workspace-write +
//! deny within 0.5 ms of off at p50; prints PASS or FAIL.

#![allow(missing_docs, clippy::print_stderr, clippy::print_stdout)]

#[cfg(target_os = "linux")]
fn main() {
    use std::time::Duration;
    use std::time::Instant;

    use shim_exec::BaseEnv;
    use shim_exec::CommandLimiter;
    use shim_exec::CommandLimits;
    use shim_exec::CommandRequest;
    use shim_exec::ExecConfig;
    use shim_exec::Executor;
    use shim_exec::HostOs;
    use shim_exec::WorkDir;
    use shim_exec::sandbox::NetMechanism;
    use shim_exec::sandbox::NetworkMode;
    use shim_exec::sandbox::SandboxMode;
    use shim_exec::sandbox::SandboxPolicy;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    // Not under /tmp: a home there would make every command list /tmp, whose entries
    // change all the time (each command's private TMPDIR is made there). A real home sits
    // in /home, whose listing is small and stable, so the rules come from the cache.
    let top = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap_or_else(|e| panic!("tempdir: {e}"));
    let home = top.path().join("home");
    let folder = top.path().join("folder");
    for d in [&home, &folder] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    let path: std::ffi::OsString = "/usr/local/bin:/usr/bin:/bin".into();
    let exec_for = |mode, network, net_mechanism| {
        Executor::new(
            {
                let mut c = ExecConfig::from_process(true);
                c.base_env = BaseEnv::filter(HostOs::Posix, [("PATH".into(), path.clone())]);
                c.shell_search_path = Some(path.clone());
                c.os = HostOs::Posix;
                c.sandbox = SandboxPolicy {
                    mode,
                    network,
                    net_mechanism,
                    folder: folder.clone(),
                    home: Some(home.clone()),
                    writable: Vec::new(),
                    readable: Vec::new(),
                };
                c
            },
            CommandLimiter::new(CommandLimits {
                max_commands_per_minute: u32::MAX,
                max_concurrent_commands: 16,
                window: Duration::from_secs(60),
            }),
        )
    };
    let variants = [
        (
            "off",
            exec_for(
                SandboxMode::Off,
                NetworkMode::Allow,
                NetMechanism::Namespace,
            ),
        ),
        (
            "workspace-write",
            exec_for(
                SandboxMode::WorkspaceWrite,
                NetworkMode::Allow,
                NetMechanism::Namespace,
            ),
        ),
        (
            "workspace-write + deny (namespace)",
            exec_for(
                SandboxMode::WorkspaceWrite,
                NetworkMode::Deny,
                NetMechanism::Namespace,
            ),
        ),
        (
            "workspace-write + deny (seccomp)",
            exec_for(
                SandboxMode::WorkspaceWrite,
                NetworkMode::Deny,
                NetMechanism::Seccomp,
            ),
        ),
    ];
    let req = CommandRequest {
        argv: Some(vec!["true".into()]),
        ..Default::default()
    };
    let run = |exec: &Executor| {
        let exec = exec.clone();
        let req = req.clone();
        let p = folder.clone();
        let task = rt.spawn(async move {
            let e = exec
                .execute(&req, "/", |_| {
                    let d = cap_std::fs::Dir::open_ambient_dir(&p, cap_std::ambient_authority())
                        .map_err(|e| {
                            shim_exec::CwdError::new(
                                shim_protocol::ErrorCode::PathNotFound,
                                e.to_string(),
                            )
                        })?;
                    WorkDir::new(d, "/")
                        .map_err(|e| shim_exec::CwdError::new(e.code(), e.to_string()))
                })
                .await;
            e.result.is_ok_and(|r| r.exit_code == 0)
        });
        assert!(rt.block_on(task).unwrap_or(false));
    };
    // The PTY path: prepare, spawn on a terminal, read to EOF, wait.
    let run_pty = |exec: &Executor| {
        let exec = exec.clone();
        let req = req.clone();
        let p = folder.clone();
        let task = rt.spawn(async move {
            let prepared = exec.prepare(&req, "/", |_| {
                let d = cap_std::fs::Dir::open_ambient_dir(&p, cap_std::ambient_authority())
                    .map_err(|e| {
                        shim_exec::CwdError::new(
                            shim_protocol::ErrorCode::PathNotFound,
                            e.to_string(),
                        )
                    })?;
                WorkDir::new(d, "/").map_err(|e| shim_exec::CwdError::new(e.code(), e.to_string()))
            });
            let Ok(prepared) = prepared else {
                return false;
            };
            let Ok(mut h) = prepared.spawn_pty(shim_exec::TermSize { rows: 24, cols: 80 }) else {
                return false;
            };
            while h.next_output().await.is_some() {}
            h.wait().await == 0
        });
        assert!(rt.block_on(task).unwrap_or(false));
    };
    let pty_variants = [
        ("pty: off", &variants[0].1),
        ("pty: workspace-write", &variants[1].1),
        ("pty: workspace-write + deny (namespace)", &variants[2].1),
        ("pty: workspace-write + deny (seccomp)", &variants[3].1),
    ];
    let rounds: usize = std::env::var("BENCH_SANDBOX_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    for (_, e) in &variants {
        run(e); // warm-up (the kernel probe, the seccomp program)
    }
    for (_, e) in &pty_variants {
        run_pty(e);
    }
    let n = variants.len();
    let mut t = vec![Vec::with_capacity(rounds); n + pty_variants.len()];
    for _ in 0..rounds {
        for (i, (_, e)) in variants.iter().enumerate() {
            let s = Instant::now();
            run(e);
            t[i].push(s.elapsed());
        }
        for (i, (_, e)) in pty_variants.iter().enumerate() {
            let s = Instant::now();
            run_pty(e);
            t[n + i].push(s.elapsed());
        }
    }
    let p50: Vec<Duration> = t
        .iter_mut()
        .map(|v| {
            v.sort();
            v[v.len() / 2]
        })
        .collect();
    println!("EXECUTE_COMMAND-like `true` by argv, paired p50 over {rounds} rounds:");
    for ((name, _), p) in variants.iter().zip(&p50) {
        println!(
            "  {name:<40} {:>8.3} ms  (+{:.3} ms over off)",
            p.as_secs_f64() * 1e3,
            p.saturating_sub(p50[0]).as_secs_f64() * 1e3
        );
    }
    for ((name, _), p) in pty_variants.iter().zip(&p50[n..]) {
        println!(
            "  {name:<40} {:>8.3} ms  (+{:.3} ms over pty: off)",
            p.as_secs_f64() * 1e3,
            p.saturating_sub(p50[n]).as_secs_f64() * 1e3
        );
    }
    // The parent's share of the confinement, alone: what `Confinement::prepare` and its
    // drop cost per command (private TMPDIR, Landlock ruleset), without the spawn.
    let policy = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkMode::Allow,
        net_mechanism: NetMechanism::Namespace,
        folder: folder.clone(),
        home: Some(home.clone()),
        writable: Vec::new(),
        readable: Vec::new(),
    };
    let mut prep: Vec<Duration> = (0..rounds)
        .map(|_| {
            let s = Instant::now();
            let c = shim_exec::confine::Confinement::prepare(&policy)
                .unwrap_or_else(|e| panic!("prepare: {e}"));
            drop(c);
            s.elapsed()
        })
        .collect();
    prep.sort();
    println!(
        "  confinement prepare + drop alone (workspace-write) {:>8.3} ms",
        prep[prep.len() / 2].as_secs_f64() * 1e3
    );
    let delta = p50[2].saturating_sub(p50[0]);
    println!(
        "  workspace-write + deny within 0.5 ms of off: {} ({:.3} ms)",
        if delta <= Duration::from_micros(500) {
            "PASS"
        } else {
            "FAIL"
        },
        delta.as_secs_f64() * 1e3
    );
}

#[cfg(not(target_os = "linux"))]
fn main() {}
