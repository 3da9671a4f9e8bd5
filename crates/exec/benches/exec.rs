//! Spawn-to-result latency of `true` through the crate, beside `std::process::Command`
//! doing the same (pipes for stdout/stderr, stdin null) in the same run.
//!
//! `cargo bench -p shim-exec`. Target: the crate within 1.3x of std.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::ffi::OsString;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;

use criterion::Criterion;
use criterion::criterion_group;
use criterion::criterion_main;
use shim_exec::BaseEnv;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::CommandRequest;
use shim_exec::ExecConfig;
use shim_exec::Executor;
use shim_exec::HostOs;
use shim_exec::Shell;
use shim_exec::WorkDir;

fn std_output(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output();
    assert!(out.is_ok_and(|o| o.status.success()));
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let path: OsString = "/usr/local/bin:/usr/bin:/bin".into();
    let exec = Executor::new(
        ExecConfig {
            enable_shell: true,
            command_timeout_seconds: 30,
            max_file_size_bytes: 10_485_760,
            base_env: BaseEnv::filter(HostOs::Posix, [("PATH".into(), path.clone())]),
            shell_search_path: Some(path),
            os: HostOs::Posix,
        },
        CommandLimiter::new(CommandLimits {
            max_commands_per_minute: u32::MAX,
            max_concurrent_commands: 16,
            window: Duration::from_secs(60),
        }),
    );
    let argv_req = CommandRequest {
        argv: Some(vec!["true".into()]),
        ..Default::default()
    };
    let sh_req = CommandRequest {
        command: Some("true".into()),
        shell: Shell::Sh,
        ..Default::default()
    };
    let run = |req: &CommandRequest| {
        rt.block_on(async {
            let e = exec
                .execute(req, "/", |_| {
                    let d = cap_std::fs::Dir::open_ambient_dir(
                        dir.path(),
                        cap_std::ambient_authority(),
                    )
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
            assert!(e.result.is_ok_and(|r| r.exit_code == 0));
        });
    };

    let mut g = c.benchmark_group("spawn_to_result_true");
    g.sample_size(200);
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("std_argv", |b| b.iter(|| std_output("true", &[])));
    g.bench_function("crate_argv", |b| b.iter(|| run(&argv_req)));
    g.bench_function("std_sh_c", |b| b.iter(|| std_output("sh", &["-c", "true"])));
    g.bench_function("crate_sh_c", |b| b.iter(|| run(&sh_req)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
