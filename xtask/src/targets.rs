//! `cargo xtask check-targets`: the workspace for every supported target, as far as this
//! machine can take it. Each target is *checked* (clippy with `-D warnings`, which
//! type-checks every target like `cargo check --all-targets`), and where linking works it is
//! also *built* and its unit tests *run* (aarch64 under qemu-user). The summary says, per
//! target, which of these happened and why not more.
//!
//! The tools come from [`setup`]: rustup targets, zig and cargo-zigbuild from PyPI (zig is
//! the C compiler and linker for Apple and ARM targets), qemu-user and the arm64 C library.
//! Each is best effort: a refused download skips the targets that need it, with the reason.

use std::process::Command;

use anyhow::Result;
use anyhow::bail;

/// Packages checked for Windows: the whole workspace (an empty list), now that `shim-jail`
/// and `shim-exec` have Windows implementations (`cargo xtask wine-test` runs their tests).
pub(crate) const WINDOWS_CHECK_PACKAGES: &[&str] = &[];

/// The headless crates whose unit tests run on aarch64 (no display, no keyring).
pub(crate) const AARCH64_TEST_PACKAGES: &[&str] =
    &["shim-protocol", "shim-jail", "shim-audit", "shim-exec"];

/// Unit tests that cannot pass under qemu-user, skipped by name: (test, reason). Not our
/// bugs: gaps of the emulator, and each test still runs natively in `cargo xtask ci`.
pub(crate) const AARCH64_SKIPPED_TESTS: &[(&str, &str)] = &[
    (
        "walk::tests::the_openat2_fast_path_serves_link_free_paths",
        "qemu-user 7.2 (Debian 12) has no openat2 syscall (ENOSYS), so the jail takes its full walk, correctly; the test asserts the fast path",
    ),
    (
        "vfork::tests::a_command_started_without_fork_has_the_set_up_of_the_fork_path",
        "qemu-user 7.2 emulates clone(CLONE_VM) with a fork and now and then leaves its own host signal mask on the program it execs (SigBlk fffffffe7ffbfeff in about 1 run of 5); the rest of the vfork tests run here, this one natively",
    ),
];

/// The runner for aarch64 Linux test binaries (binfmt is not mounted on our machines).
pub(crate) const AARCH64_RUNNER: &str = "qemu-aarch64 -L /usr/aarch64-linux-gnu";

/// How a target's C code is compiled and its binaries linked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Toolchain {
    /// Plain cargo with a Debian cross C compiler (the package named).
    Cargo(&'static str),
    /// cargo-zigbuild (zig from PyPI).
    Zig,
}

/// One target of `check-targets`.
pub(crate) struct CrossTarget {
    /// The Rust target triple.
    pub(crate) triple: &'static str,
    /// How it is compiled.
    pub(crate) toolchain: Toolchain,
    /// Packages to check; empty = `--workspace`.
    pub(crate) check: &'static [&'static str],
    /// Run clippy (`-D warnings`) rather than plain `cargo check`.
    pub(crate) clippy: bool,
    /// Check tests, examples and benches too (`--all-targets`).
    pub(crate) all_targets: bool,
    /// Packages built whose unit tests run (with `runner`); empty = check only.
    pub(crate) test: &'static [&'static str],
    /// The test runner and the Debian packages it needs.
    pub(crate) runner: Option<(&'static str, &'static [&'static str])>,
    /// Tests skipped under the runner, by name, with the reason.
    pub(crate) skip: &'static [(&'static str, &'static str)],
    /// Why the target is not checked whole, or not built: printed in the summary.
    pub(crate) why: &'static str,
}

/// The targets, in the order they run.
pub(crate) const TARGETS: &[CrossTarget] = &[
    CrossTarget {
        triple: "x86_64-pc-windows-gnu",
        toolchain: Toolchain::Cargo("gcc-mingw-w64-x86-64"),
        check: WINDOWS_CHECK_PACKAGES,
        clippy: true,
        all_targets: true,
        test: &[],
        runner: None,
        skip: &[],
        why: "checked here (clippy, all targets); built and tested under Wine by the wine-test step",
    },
    CrossTarget {
        triple: "aarch64-apple-darwin",
        toolchain: Toolchain::Zig,
        check: &[],
        clippy: true,
        all_targets: true,
        test: &[],
        runner: None,
        skip: &[],
        why: "checked only: linking needs the macOS SDK (Security, CoreFoundation frameworks), which a Debian machine does not have; x86_64-apple-darwin is the same code (no target_arch cfg outside Linux), clippy-checked by native-tests.yml on a Mac",
    },
    CrossTarget {
        triple: "aarch64-unknown-linux-gnu",
        toolchain: Toolchain::Zig,
        check: &[],
        clippy: true,
        all_targets: true,
        test: AARCH64_TEST_PACKAGES,
        runner: Some((AARCH64_RUNNER, &["qemu-user", "libc6-arm64-cross"])),
        skip: AARCH64_SKIPPED_TESTS,
        why: "built and unit-tested: the headless crates under qemu-aarch64; the others need a display or a keyring qemu-user cannot give them",
    },
];

/// What happened to one target.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Checked, built and its unit tests run.
    Tested(String),
    /// Checked only.
    Checked(String),
    /// Not checked: a tool could not be installed.
    Skipped(String),
}

/// Installs what the targets need; returns the reasons a toolchain is missing.
pub(crate) fn setup() -> ToolState {
    let zig = ensure_zig();
    if let Err(e) = &zig {
        println!("xtask: cross-builds with zig are skipped: {e}");
    }
    ToolState { zig: zig.err() }
}

/// Which tools are missing, and why.
pub(crate) struct ToolState {
    /// Why zig / cargo-zigbuild is unavailable, if it is.
    pub(crate) zig: Option<String>,
}

/// `cargo xtask setup`'s part: everything [`TARGETS`] use, best effort (each failure is
/// printed with what is skipped because of it; `check-targets` tries again).
pub(crate) fn install_cross_tools() {
    let _ = setup();
    for t in TARGETS {
        if !rustup_target(t.triple) {
            println!(
                "xtask: cannot add the Rust target {}; check-targets will skip it",
                t.triple
            );
        }
        let mut packages: Vec<&str> = Vec::new();
        if let Toolchain::Cargo(p) = t.toolchain
            && !p.is_empty()
        {
            packages.push(p);
        }
        if let Some((_, runner_packages)) = t.runner {
            packages.extend_from_slice(runner_packages);
        }
        if !packages.is_empty()
            && let Err(e) = super::ensure_packages(&packages)
        {
            println!(
                "xtask: cannot install {} for {}: {e}",
                packages.join(" "),
                t.triple
            );
        }
    }
}

/// zig (PyPI `ziglang`) and cargo-zigbuild (PyPI `cargo-zigbuild`), installed with pip if
/// `cargo-zigbuild` is not on PATH.
fn ensure_zig() -> Result<(), String> {
    let have = |c: &str| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if have("cargo-zigbuild") && zig_runs() {
        return Ok(());
    }
    println!("xtask: installing zig and cargo-zigbuild from PyPI (pip)");
    let pip = ["pip3", "pip"]
        .into_iter()
        .find(|p| have(p))
        .ok_or("neither pip3 nor pip is installed")?;
    let status = Command::new(pip)
        .args(["install", "--quiet", "ziglang", "cargo-zigbuild"])
        .status()
        .map_err(|e| format!("cannot run {pip}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`{pip} install ziglang cargo-zigbuild` failed ({status}; PyPI unreachable?)"
        ));
    }
    if !have("cargo-zigbuild") {
        return Err("cargo-zigbuild is installed but not on PATH".into());
    }
    Ok(())
}

/// cargo-zigbuild finds zig itself (a `zig` on PATH, or `python3 -m ziglang`).
fn zig_runs() -> bool {
    let ok = |c: &mut Command| c.output().is_ok_and(|o| o.status.success());
    ok(Command::new("zig").arg("version"))
        || ok(Command::new("python3").args(["-m", "ziglang", "version"]))
}

fn rustup_target(triple: &str) -> bool {
    Command::new("rustup")
        .args(["target", "add", triple])
        .status()
        .is_ok_and(|s| s.success())
}

/// `cargo SUB` or `cargo-zigbuild SUB` for `toolchain`.
pub(crate) fn cargo_for(toolchain: Toolchain, sub: &str) -> Command {
    match toolchain {
        Toolchain::Cargo(_) => {
            let mut c = Command::new(super::cargo_bin());
            c.arg(sub);
            c
        }
        Toolchain::Zig => {
            let mut c = Command::new("cargo-zigbuild");
            // cargo-zigbuild's build command is `zigbuild`.
            c.arg(if sub == "build" { "zigbuild" } else { sub });
            c
        }
    }
}

/// Makes `toolchain` usable for `triple`; `Err` = skip with this reason.
pub(crate) fn prepare(triple: &str, toolchain: Toolchain, tools: &ToolState) -> Result<(), String> {
    if !rustup_target(triple) {
        return Err(format!("`rustup target add {triple}` failed (offline?)"));
    }
    match toolchain {
        Toolchain::Cargo(compiler) => super::ensure_packages(&[compiler])
            .map_err(|e| format!("cannot install its C cross-compiler {compiler}: {e}")),
        Toolchain::Zig => match &tools.zig {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        },
    }
}

fn run(mut cmd: Command, what: &str) -> Result<()> {
    println!("xtask: {what}");
    let status = cmd.status()?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

fn package_args(cmd: &mut Command, packages: &[&str]) {
    if packages.is_empty() {
        cmd.arg("--workspace");
    }
    for p in packages {
        cmd.args(["-p", p]);
    }
}

/// The environment variable that sets `triple`'s test runner.
pub(crate) fn runner_var(triple: &str) -> String {
    format!(
        "CARGO_TARGET_{}_RUNNER",
        triple.to_ascii_uppercase().replace('-', "_")
    )
}

/// Checks (and where it can, builds and tests) one target.
fn one(t: &CrossTarget, tools: &ToolState) -> Result<Outcome> {
    if let Err(why) = prepare(t.triple, t.toolchain, tools) {
        return Ok(Outcome::Skipped(why));
    }
    let mut cmd = cargo_for(t.toolchain, if t.clippy { "clippy" } else { "check" });
    cmd.args(["--target", t.triple]);
    if t.all_targets {
        cmd.arg("--all-targets");
    }
    package_args(&mut cmd, t.check);
    if t.clippy {
        cmd.args(["--", "-D", "warnings"]);
    }
    let scope = if t.check.is_empty() {
        "the workspace".to_owned()
    } else {
        t.check.join(", ")
    };
    run(
        cmd,
        &format!(
            "{} {} for {}",
            if t.clippy { "clippy" } else { "check" },
            scope,
            t.triple
        ),
    )?;
    if t.test.is_empty() {
        return Ok(Outcome::Checked(t.why.to_owned()));
    }
    let Some((runner, packages)) = t.runner else {
        return Ok(Outcome::Checked(t.why.to_owned()));
    };
    if let Err(e) = super::ensure_packages(packages) {
        return Ok(Outcome::Checked(format!(
            "its test runner could not be installed ({e}); {}",
            t.why
        )));
    }
    let mut cmd = cargo_for(t.toolchain, "test");
    cmd.args(["--target", t.triple, "--lib", "--no-fail-fast"])
        .env(runner_var(t.triple), runner)
        // The protocol's round-trip property test: 1000 cases instead of 3000 under the
        // emulator (88 s there at 3000); it runs in full natively in the tests step.
        .env("SHIM_PROTOCOL_ROUNDTRIP_CASES", "1000");
    package_args(&mut cmd, t.test);
    if !t.skip.is_empty() {
        cmd.arg("--");
        for (name, why) in t.skip {
            println!("xtask: {}: skipping {name}: {why}", t.triple);
            cmd.args(["--skip", name]);
        }
    }
    run(
        cmd,
        &format!(
            "unit tests of {} for {} under `{runner}`",
            t.test.join(", "),
            t.triple
        ),
    )?;
    Ok(Outcome::Tested(format!(
        "{}; {} test(s) skipped by name",
        t.why,
        t.skip.len()
    )))
}

/// `cargo xtask check-targets`: every target of [`TARGETS`], then a summary. A compile
/// error or a failing test fails; a missing tool skips its targets with the reason.
pub(crate) fn check_targets() -> Result<()> {
    let tools = setup();
    let mut results = Vec::new();
    for t in TARGETS {
        let started = std::time::Instant::now();
        let outcome = one(t, &tools)?;
        results.push((t.triple, outcome, started.elapsed()));
    }
    println!("xtask: other targets:");
    for (triple, outcome, took) in &results {
        let (what, why) = match outcome {
            Outcome::Tested(w) => ("built and tested", w),
            Outcome::Checked(w) => ("checked", w),
            Outcome::Skipped(w) => ("SKIPPED", w),
        };
        println!(
            "xtask:   {triple:<28} {what:<17} {:>5.0} s  {why}",
            took.as_secs_f64()
        );
    }
    Ok(())
}

#[cfg(test)]
#[path = "targets_tests.rs"]
mod tests;
