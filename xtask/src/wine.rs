//! `cargo xtask wine-test`: builds the Windows target (`x86_64-pc-windows-gnu`, linked by
//! mingw-w64) and runs its tests and the demo under Wine, so the Windows code is exercised,
//! not only compiled (issue 13).
//!
//! Wine 8 cannot start a Rust 1.95 Windows program: std imports `ProcessPrng` from
//! `bcryptprimitives.dll`, which Wine 8 does not ship. A one-function stub DLL that fills
//! the buffer with `SystemFunction036` (RtlGenRandom) is built with mingw and put into the
//! Wine prefix (MACHINE.md). The prefix lives in the target directory and is made once.
//!
//! Every test that runs on Windows runs; a test that cannot run under Wine (a gap of Wine,
//! not of our code) is skipped by name in [`WINE_SKIPS`] with the reason, and the output
//! says per crate how many ran and how many were skipped.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;

use crate::cargo_bin;
use crate::check;
use crate::ensure_packages;

const TARGET: &str = "x86_64-pc-windows-gnu";

/// Debian packages: the Wine loader (`wine` brings `/usr/bin/wine`), and the mingw-w64 C
/// compiler (for ring and the stub DLL; it also links the Rust programs).
pub(crate) const WINE_PACKAGES: &[&str] = &["wine", "wine64", "gcc-mingw-w64-x86-64"];

/// `ProcessPrng` for Wine 8 (see the module documentation).
const PRNG_STUB_C: &str = r#"#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG len);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
"#;

/// What runs under Wine: (package, cargo test selector). All are built by one `cargo test
/// --no-run` ([`build_tests`]); each selected binary then runs under Wine.
const RUNS: &[(&str, &[&str])] = &[
    ("shim-jail", &["--lib", "--test", "windows"]),
    ("shim-exec", &["--lib", "--test", "windows"]),
    ("shim-audit", &["--lib", "--test", "all"]),
    ("shim-auth", &["--lib"]),
    // The computer-use rules, and what the Windows backend advertises (only what answers).
    ("shim-cu", &["--lib"]),
    // The daemon's integration suite against the loopback platform peer: every module
    // that compiles for Windows, minus WINE_SKIPS.
    ("autogpt-shim", &["--test", "all"]),
];

/// Why the tests that start the OpenID provider (a Node.js program) are skipped: under
/// Wine a Windows program can start a Linux one but gets no handle to it.
const NO_LINUX_CHILD: &str = "Wine gap: Wine starts a Linux program (node, which runs the OpenID provider) but returns no process handle, so the test can neither pipe nor wait on it; the OpenID code is the same on Windows, and the Windows parts (loopback callback, Credential Manager) run in suite::oauth::login_against_the_peer_stores_tokens_and_start_connects_with_them";

/// Tests that change a setting every program of the prefix sees (the user's system proxy):
/// skipped in their package's run, then run after it alone (`--exact`, one thread) with the
/// variable that lets them run: (package, test, variable).
const WINE_ALONE: &[(&str, &str, &str)] = &[(
    "autogpt-shim",
    "suite::net::the_windows_system_proxy_carries_oauth_and_websocket",
    "SHIM_TEST_SYSTEM_PROXY",
)];

/// Tests that do not run under Wine, by name, with the reason: (package, test, reason).
/// Two kinds: a gap of Wine, and a test of Unix behaviour (POSIX tools, /proc, systemd,
/// the Linux sandbox or display checks) whose Windows counterpart is named.
const WINE_SKIPS: &[(&str, &str, &str)] = &[
    (
        "autogpt-shim",
        "suite::cli::the_daemon_runs_without_core_dumps",
        "Unix: reads /proc/<pid>/limits; Windows has no core dumps to disable",
    ),
    (
        "autogpt-shim",
        "suite::cli::install_status_uninstall_round_trip",
        "Unix: checks the systemd unit; Windows: suite::windows::install_writes_task_scheduler_xml_that_schtasks_registers",
    ),
    (
        "autogpt-shim",
        "suite::doctor::legacy_mode_with_everything_in_place_passes_and_creates_the_root",
        "Linux: expects the X11 display checks (display_server, window_list, display), which Windows does not have",
    ),
    (
        "autogpt-shim",
        "suite::doctor::the_sandbox_lines_follow_the_settings",
        "Linux: expects the Landlock sandbox lines; on Windows doctor says no command sandbox exists (docs/sandbox.md)",
    ),
    (
        "autogpt-shim",
        "suite::doctor::each_blocking_problem_exits_78",
        "Linux: includes the Wayland display-server and sandbox refusals, which are Linux checks",
    ),
    (
        "autogpt-shim",
        "suite::doctor::local_model_and_hardware_state_are_reported",
        "Linux: the GPIO character-device double (gpiocdev); Windows has no GPIO backend",
    ),
    (
        "autogpt-shim",
        "suite::edge::commands_never_inherit_the_daemons_loader_or_secret_variables",
        "Unix: runs `env` and checks LD_*/DYLD_*; Windows baseline: shim-exec environment_is_the_windows_baseline_plus_the_wire",
    ),
    (
        "autogpt-shim",
        "suite::edge::nul_heavy_command_output_is_bounded_below_the_frame_limit",
        "Unix: `head -c N /dev/zero`; Windows: suite::windows::commands_through_the_daemon_time_out_overload_and_keep_the_output_budget",
    ),
    (
        "autogpt-shim",
        "suite::legacy::an_audit_write_failure_stops_the_daemon_with_78",
        "Unix: `sh -c 'ulimit -f 8'` (RLIMIT_FSIZE), which Windows does not have",
    ),
    (
        "autogpt-shim",
        "suite::legacy::commands_run_in_the_root_and_report_results",
        "Unix: `pwd`, `true`, `sh` quoting; Windows: suite::windows::the_windows_attack_list_through_the_daemon (cmd.exe, cwd, exit code)",
    ),
    (
        "autogpt-shim",
        "suite::legacy::files_end_to_end_with_audit_before_response",
        "Unix: expects `/`-separated paths echoed; Windows answers with `\\` (JAIL_FILES_EXEC.md 4.8: the native separator); Windows: the_windows_attack_list_through_the_daemon",
    ),
    (
        "autogpt-shim",
        "suite::legacy::ping_capabilities_malformed_and_status",
        "Linux: expects computer use withheld without an X display; a Windows session always has a desktop, so it is advertised",
    ),
    (
        "autogpt-shim",
        "suite::legacy::sigkill_during_a_long_command_leaves_no_descendant",
        "Unix: `sleep` and /proc; Windows: suite::windows::a_daemon_ended_with_taskkill_f_leaves_no_process_of_its_commands",
    ),
    (
        "autogpt-shim",
        "suite::legacy::a_command_cancelled_by_a_lost_connection_is_killed_and_audited",
        "Unix: `sleep 300; echo` and /proc; Windows: suite::windows::a_command_cancelled_by_a_lost_connection_ends_its_job_and_shim_audit_verifies_the_log",
    ),
    (
        "autogpt-shim",
        "suite::oauth::login_refresh_and_revoke_against_a_real_openid_provider",
        NO_LINUX_CHILD,
    ),
    (
        "autogpt-shim",
        "suite::oauth::id_tokens_with_a_bad_signature_or_audience_are_refused",
        NO_LINUX_CHILD,
    ),
    (
        "autogpt-shim",
        "suite::oauth::a_wrong_or_unreachable_discovery_document_fails_cleanly",
        NO_LINUX_CHILD,
    ),
];

/// The Wine prefix (in the target directory) and the environment for running Windows
/// programs in it.
pub(crate) struct Wine {
    prefix: PathBuf,
}

impl Wine {
    /// Sets the Wine environment (prefix, quiet debug output, no Mono/Gecko prompts, and
    /// Wine as cargo's runner for the Windows target) on `cmd`.
    pub(crate) fn env(&self, cmd: &mut Command) {
        cmd.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env(
                format!(
                    "CARGO_TARGET_{}_RUNNER",
                    TARGET.to_uppercase().replace('-', "_")
                ),
                "wine",
            );
    }
}

/// Installs Wine and mingw, adds the Rust target, and prepares the prefix with the stub
/// DLL. `Ok(None)` when the target cannot be added (offline): skipped with a message.
pub(crate) fn prepare(root: &Path) -> Result<Option<Wine>> {
    ensure_packages(WINE_PACKAGES)?;
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    if !added {
        println!(
            "xtask: skipping Windows under Wine: `rustup target add {TARGET}` failed (offline?)"
        );
        return Ok(None);
    }
    let target_dir = crate::dist::default_target_dir(root);
    let wine = Wine {
        prefix: target_dir.join("wine-prefix"),
    };
    let system32 = wine.prefix.join("drive_c/windows/system32");
    if !system32.join("kernel32.dll").exists() {
        let t = Instant::now();
        let mut boot = Command::new("wine");
        boot.args(["wineboot", "-i"]);
        wine.env(&mut boot);
        let out = boot.output().context("cannot run wine wineboot")?;
        if !system32.join("kernel32.dll").exists() {
            bail!(
                "wineboot did not create the prefix {}: {}",
                wine.prefix.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        println!(
            "xtask: Wine prefix created in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let stub = system32.join("bcryptprimitives.dll");
    if !stub.exists() {
        let dir = target_dir.join("wine-stub");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("prng.c"), PRNG_STUB_C)?;
        let status = Command::new("x86_64-w64-mingw32-gcc")
            .args(["-shared", "-O2", "-o"])
            .arg(dir.join("bcryptprimitives.dll"))
            .arg(dir.join("prng.c"))
            .arg("-ladvapi32")
            .status()
            .context("cannot run x86_64-w64-mingw32-gcc")?;
        check(status, "building the ProcessPrng stub DLL")?;
        std::fs::copy(dir.join("bcryptprimitives.dll"), &stub)
            .context("cannot copy the stub DLL into the Wine prefix")?;
    }
    Ok(Some(wine))
}

/// A fresh tree with Unix symlinks for the jail's Wine test (`links_seen_through_wine_*`):
/// `root/out` → `../outside`, `root/in` → `sub`. Wine follows Unix symlinks but cannot
/// create junctions or symlinks itself.
fn link_fixture(root: &Path) -> Result<PathBuf> {
    let target_dir = crate::dist::default_target_dir(root);
    let dir = std::path::absolute(target_dir.join("wine-link-fixture"))?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("root").join("sub"))?;
    std::fs::create_dir_all(dir.join("outside"))?;
    std::fs::write(dir.join("outside").join("secret.txt"), "secret")?;
    std::fs::write(dir.join("root").join("sub").join("b.txt"), "bee")?;
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("../outside", dir.join("root").join("out"))?;
        std::os::unix::fs::symlink("sub", dir.join("root").join("in"))?;
    }
    Ok(dir)
}

/// One test executable of the Windows build.
#[derive(Debug, PartialEq)]
struct TestBinary {
    /// The package it tests.
    package: String,
    /// The cargo target: the library's name, or the integration test's (`--test NAME`).
    name: String,
    /// Whether it is the library's unit tests (`--lib`).
    lib: bool,
    /// The `.exe`.
    executable: PathBuf,
    /// The package's folder, where `cargo test` would run it.
    dir: PathBuf,
}

/// Builds the test binaries of every package in [`RUNS`] with one `cargo test --no-run`
/// and lists them from cargo's JSON messages.
fn build_tests(root: &Path) -> Result<Vec<TestBinary>> {
    let mut cmd = Command::new(cargo_bin());
    cmd.args([
        "test",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])
    .args(["--target", TARGET])
    .current_dir(root)
    .stderr(std::process::Stdio::inherit());
    let mut groups: Vec<Vec<&str>> = Vec::new();
    for (package, selector) in RUNS {
        cmd.args(["-p", package]);
        for g in selector_groups(selector) {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    for g in &groups {
        cmd.args(g);
    }
    let out = cmd.output().context("cannot run cargo test --no-run")?;
    check(
        out.status,
        "cargo test --no-run --target x86_64-pc-windows-gnu",
    )?;
    Ok(test_binaries(&String::from_utf8_lossy(&out.stdout)))
}

/// The test executables in cargo's `--message-format=json` output.
fn test_binaries(json_lines: &str) -> Vec<TestBinary> {
    json_lines
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| {
            let executable = PathBuf::from(m["executable"].as_str()?);
            let dir = Path::new(m["manifest_path"].as_str()?).parent()?.to_owned();
            let kinds = m["target"]["kind"].as_array()?;
            Some(TestBinary {
                package: package_name(m["package_id"].as_str()?)?,
                name: m["target"]["name"].as_str()?.to_owned(),
                lib: !kinds.iter().any(|k| k == "test" || k == "bin"),
                executable,
                dir,
            })
        })
        .collect()
}

/// The package name in a cargo package ID: `path+file:///w/crates/jail#shim-jail@0.3.0`,
/// or `path+file:///w/bins/autogpt-shim#0.3.0` when the folder has the package's name.
fn package_name(id: &str) -> Option<String> {
    let (url, fragment) = id.split_once('#')?;
    match fragment.split_once('@') {
        Some((name, _)) => Some(name.to_owned()),
        None => Some(url.rsplit('/').next()?.to_owned()),
    }
}

/// A cargo test selector split into its parts: `--lib`, or `--test NAME`.
fn selector_groups<'a>(selector: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut groups = Vec::new();
    let mut args = selector.iter();
    while let Some(a) = args.next() {
        match (*a, args.clone().next()) {
            ("--test", Some(name)) => {
                groups.push(vec!["--test", *name]);
                args.next();
            }
            _ => groups.push(vec![*a]),
        }
    }
    groups
}

/// Whether `t` is one of the binaries `selector` (`--lib`, `--test NAME`) names.
fn selector_matches(selector: &[&str], t: &TestBinary) -> bool {
    selector_groups(selector)
        .iter()
        .any(|g| match g.as_slice() {
            ["--lib"] => t.lib,
            ["--test", name] => !t.lib && t.name == *name,
            _ => false,
        })
}

/// How many binaries `selector` names (each `--lib` and each `--test NAME` is one).
fn selected_count(selector: &[&str]) -> usize {
    selector_groups(selector).len()
}

/// The longest one test binary may take under Wine: a hung Wine program must fail the
/// step, not run into CI's overall limit.
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// `cmd.output()`, but after `limit` the command is killed, every Wine process of the
/// prefix is ended (`wineserver -k`), and the error says so.
fn output_within(
    wine: &Wine,
    mut cmd: Command,
    limit: std::time::Duration,
) -> Result<std::process::Output> {
    use std::io::Read;
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn()?;
    let mut out_pipe = child.stdout.take().context("no stdout pipe")?;
    let mut err_pipe = child.stderr.take().context("no stderr pipe")?;
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let mut k = Command::new("wineserver");
            k.arg("-k");
            wine.env(&mut k);
            let _ = k.status();
            bail!(
                "still running after {} s; killed it and every Wine process of the prefix",
                limit.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(std::process::Output {
        status,
        stdout,
        stderr,
    })
}

/// Counts from libtest output: passed tests and runtime `SKIP <name>: <reason>` lines.
fn counts(output: &str) -> (u64, Vec<String>) {
    let mut passed = 0;
    let mut skipped = Vec::new();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("test result: ok. ") {
            passed += rest
                .split(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
        if let Some(rest) = line.strip_prefix("SKIP ") {
            skipped.push(rest.to_owned());
        }
    }
    (passed, skipped)
}

/// The size of the X screen Wine draws on in `wine-test`.
#[cfg(target_os = "linux")]
const DISPLAY_SIZE: [u32; 2] = [1024, 768];

/// One Xvfb for the whole Wine run (the tests' own fixture, `shim_cu::testing::Xvfb`):
/// Wine's X11 driver draws there, so the Windows computer-use backend (screenshots,
/// input, clipboard) runs for real (`suite::windows_cu` of the daemon's tests). Stopped on
/// drop. Where it cannot start (Xvfb missing on a non-CI machine), the run goes on without
/// a display and that test skips itself, saying why.
struct WineDisplay {
    #[cfg(target_os = "linux")]
    xvfb: Option<shim_cu::testing::Xvfb>,
}

impl WineDisplay {
    fn start() -> Result<WineDisplay> {
        #[cfg(target_os = "linux")]
        {
            ensure_packages(&["xvfb"])?;
            let t = Instant::now();
            let [w, h] = DISPLAY_SIZE;
            let xvfb = match shim_cu::testing::Xvfb::try_start(w, h) {
                Ok(x) => {
                    println!(
                        "xtask: Xvfb {} ({w}x{h}) for Wine, started in {:.1} s",
                        x.display,
                        t.elapsed().as_secs_f64()
                    );
                    Some(x)
                }
                Err(e) => {
                    println!("xtask: no X display for Wine ({e}); computer use is not tested");
                    None
                }
            };
            Ok(WineDisplay { xvfb })
        }
        #[cfg(not(target_os = "linux"))]
        Ok(WineDisplay {})
    }

    /// Stops the X server (after the Wine processes that used it).
    fn stop(self) {
        #[cfg(target_os = "linux")]
        drop(self.xvfb);
    }

    /// `DISPLAY` and `SHIM_WINE_DISPLAY_SIZE` (`WxH`) for a command that runs Wine.
    fn env(&self, cmd: &mut Command) {
        #[cfg(target_os = "linux")]
        if let Some(x) = &self.xvfb {
            let [w, h] = DISPLAY_SIZE;
            cmd.env("DISPLAY", &x.display)
                .env("SHIM_WINE_DISPLAY_SIZE", format!("{w}x{h}"));
            return;
        }
        cmd.env_remove("DISPLAY");
    }
}

/// `cargo xtask wine-test`.
pub(crate) fn wine_test(root: &Path) -> Result<()> {
    let started = Instant::now();
    let Some(wine) = prepare(root)? else {
        return Ok(());
    };
    let links = link_fixture(root)?;
    let display = WineDisplay::start()?;
    // One build of every test binary in RUNS, with one feature resolution: a `cargo test
    // -p X` per package resolved features per package and built much of the dependency
    // tree again for each (595 libraries for 328 crates; the step took 700 s, now 555 s).
    let tests = build_tests(root)?;
    // shim-audit.exe beside autogpt-shim.exe: the daemon suite verifies logs with it.
    // Built after the tests, it reuses what their build made with the same features.
    let mut build = Command::new(cargo_bin());
    build.args(["build", "--target", TARGET, "-p", "shim-audit-cli"]);
    check(
        build.status()?,
        "cargo build --target x86_64-pc-windows-gnu -p shim-audit-cli",
    )?;
    let mut summary = Vec::new();
    for (package, selector) in RUNS {
        let mut skipped: Vec<String> = Vec::new();
        let mut skip_args: Vec<&str> = Vec::new();
        for (p, name, reason) in WINE_SKIPS {
            if p == package {
                skip_args.extend(["--skip", name]);
                skipped.push(format!("{name}: {reason}"));
            }
        }
        let alone: Vec<(&str, &str)> = WINE_ALONE
            .iter()
            .filter(|(p, _, _)| p == package)
            .map(|(_, name, var)| (*name, *var))
            .collect();
        for (name, _) in &alone {
            skip_args.extend(["--skip", name]);
        }
        let mine: Vec<&TestBinary> = tests
            .iter()
            .filter(|t| t.package == *package && selector_matches(selector, t))
            .collect();
        if mine.len() != selected_count(selector) {
            bail!(
                "{package}: expected {} test binaries for {selector:?}, the build made {}",
                selected_count(selector),
                mine.len()
            );
        }
        let mut text = String::new();
        let test_cmd = |t: &TestBinary| {
            let mut cmd = Command::new("wine");
            cmd.arg(&t.executable)
                .arg("--nocapture")
                .current_dir(&t.dir)
                .env("CARGO_MANIFEST_DIR", &t.dir)
                .env("CARGO_PKG_NAME", &t.package);
            wine.env(&mut cmd);
            display.env(&mut cmd);
            cmd.env("SHIM_REQUIRE_SHIM_AUDIT", "1");
            cmd.env(
                "SHIM_JAIL_WINE_LINK_FIXTURE",
                format!("Z:{}", links.display()),
            );
            cmd
        };
        for t in &mine {
            let mut cmd = test_cmd(t);
            cmd.args(&skip_args);
            let out = output_within(&wine, cmd, RUN_LIMIT)
                .with_context(|| format!("cannot run {} under Wine", t.executable.display()))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                println!("{stdout}");
                eprintln!("{stderr}");
                bail!(
                    "{package}: tests of {} failed under Wine ({})",
                    t.name,
                    out.status
                );
            }
            text.push_str(&stdout);
            text.push('\n');
            text.push_str(&stderr);
            text.push('\n');
        }
        for (name, var) in &alone {
            let t = mine
                .iter()
                .find(|t| t.name == "all")
                .with_context(|| format!("{package}: no `all` test binary for {name}"))?;
            let mut cmd = test_cmd(t);
            cmd.args(["--exact", name, "--test-threads=1"])
                .env(var, "1");
            let out = output_within(&wine, cmd, RUN_LIMIT)
                .with_context(|| format!("cannot run {name} under Wine"))?;
            let both = format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            // It must have run: passed, and not skipped itself for want of the variable.
            if !out.status.success() || counts(&both) != (1, Vec::new()) {
                println!("{both}");
                bail!("{package}: {name} failed or did not run under Wine, alone with {var}=1");
            }
            println!("xtask: wine {package}: {name} passed, alone with {var}=1");
            text.push_str(&both);
        }
        // A test that skips itself at run time (SKIP line) returned early: it passed
        // without running, so it counts as skipped, not as run.
        let (passed, mut runtime_skips) = counts(&text);
        let passed = passed.saturating_sub(runtime_skips.len() as u64);
        skipped.append(&mut runtime_skips);
        println!(
            "xtask: wine {package}: {passed} passed, {} skipped",
            skipped.len()
        );
        for s in &skipped {
            println!("xtask: wine {package}:   skipped {s}");
        }
        summary.push((package, passed, skipped.len()));
    }
    // The demo: the real daemon (built for autogpt-shim's integration suite above) against
    // the embedded loopback peer, with shell execution.
    let target_dir = crate::dist::default_target_dir(root);
    let exe = target_dir
        .join(TARGET)
        .join("debug")
        .join("autogpt-shim.exe");
    let mut demo = Command::new("wine");
    demo.arg(&exe).args(["demo", "--enable-shell"]);
    wine.env(&mut demo);
    display.env(&mut demo);
    let out = demo.output().context("cannot run the demo under Wine")?;
    // Every Wine process of the prefix ends before its X server does.
    let mut k = Command::new("wineserver");
    k.arg("-k");
    wine.env(&mut k);
    let _ = k.status();
    display.stop();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    if !out.status.success() || !text.contains("demo finished: OK") {
        bail!("the demo did not finish OK under Wine ({})", out.status);
    }
    for (p, passed, skipped) in &summary {
        println!("xtask: wine summary {p}: {passed} ran, {skipped} skipped");
    }
    println!(
        "xtask: Windows under Wine took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
#[path = "wine_tests.rs"]
mod tests;
