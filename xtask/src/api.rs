//! The library API check (`cargo xtask library api`): `cargo semver-checks` of the library
//! crates against a git baseline, fed with rustdoc JSON this module builds in the
//! workspace's own target directory.
//!
//! Left to itself, `cargo semver-checks --baseline-rev` builds every crate's rustdoc twice
//! in placeholder projects of its own, each with `RUSTFLAGS=--cap-lints=allow` and
//! `RUSTC_BOOTSTRAP=1`, so each of the five crates type-checks its whole dependency tree
//! twice: 5 minutes of CI. Here the rustdoc runs reuse the dependency metadata clippy
//! already checked: only `rustdoc` is told it may use its unstable JSON output (through
//! [`RUSTDOC_WRAPPER_ENV`]), because build scripts such as proc-macro2's re-run, and
//! everything above them rebuilds, when `RUSTC_BOOTSTRAP` changes for the whole build.
//! The flags are the ones cargo-semver-checks uses itself (its `EXTRA_RUSTDOCFLAGS`).

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;

use crate::API_BASELINE_REV;
use crate::LIBRARY_CRATES;
use crate::cargo_bin;
use crate::check;
use crate::ensure_cargo_tool;

/// Set on the `cargo doc` runs below, with `RUSTDOC` pointing at xtask itself: xtask then
/// acts as rustdoc ([`run_as_rustdoc`]), adding `RUSTC_BOOTSTRAP=1` for rustdoc alone.
pub(crate) const RUSTDOC_WRAPPER_ENV: &str = "XTASK_RUSTDOC_JSON";

/// What cargo-semver-checks passes to rustdoc (0.51, `data_generation/generate.rs`).
const JSON_RUSTDOCFLAGS: &str = "-Z unstable-options --document-private-items \
     --document-hidden-items --output-format=json --cap-lints=allow";

/// Runs the real rustdoc with the arguments cargo gave xtask, allowed its unstable options;
/// returns rustdoc's exit code.
pub(crate) fn run_as_rustdoc() -> Result<i32> {
    let status = Command::new("rustdoc")
        .args(std::env::args_os().skip(1))
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove(RUSTDOC_WRAPPER_ENV)
        .status()
        .context("cannot run rustdoc")?;
    Ok(status.code().unwrap_or(1))
}

/// `cargo semver-checks` of [`LIBRARY_CRATES`] against [`API_BASELINE_REV`].
pub(crate) fn library_api(root: &Path) -> Result<()> {
    ensure_cargo_tool("semver-checks", "cargo-semver-checks")?;
    let work = root.join("target").join("api");
    let baseline_src = work.join("baseline-src");
    export_tree(root, API_BASELINE_REV, &baseline_src)?;
    for krate in LIBRARY_CRATES {
        let current = rustdoc_json(root, &root.join("Cargo.toml"), krate, &work.join("current"))?;
        let baseline = rustdoc_json(
            root,
            &baseline_src.join("Cargo.toml"),
            krate,
            &work.join("baseline"),
        )?;
        println!("xtask: {krate}: API against {API_BASELINE_REV}");
        let status = semver_checks(&baseline, &current)
            .status()
            .context("cannot run cargo semver-checks")?;
        check(
            status,
            &format!("cargo semver-checks of {krate}: a breaking change needs a version bump"),
        )?;
    }
    let _ = std::fs::remove_dir_all(&baseline_src);
    Ok(())
}

/// The check of the check: a copy of HEAD with one public item of shim-jail removed must
/// fail `cargo semver-checks` against the working tree, naming that item.
pub(crate) fn library_api_self_test(root: &Path) -> Result<()> {
    let work = root.join("target").join("api");
    let copy = work.join("self-test-src");
    export_tree(root, "HEAD", &copy)?;
    let lib = copy.join("crates/jail/src/lib.rs");
    let text = std::fs::read_to_string(&lib)?;
    let removed = "pub use mime::mime_for_name;";
    if !text.contains(removed) {
        bail!("shim-jail no longer has `{removed}`: pick another public item for this test");
    }
    std::fs::write(&lib, text.replace(removed, "use mime::mime_for_name as _;"))?;
    let current = rustdoc_json(
        root,
        &root.join("Cargo.toml"),
        "shim-jail",
        &work.join("current"),
    )?;
    let changed = rustdoc_json(
        root,
        &copy.join("Cargo.toml"),
        "shim-jail",
        &work.join("self-test"),
    )?;
    let out = semver_checks(&current, &changed)
        .output()
        .context("cannot run cargo semver-checks")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        bail!("cargo semver-checks accepted the removal of shim_jail::mime_for_name:\n{text}");
    }
    if !text.contains("mime_for_name") {
        bail!("cargo semver-checks failed, but not on the removed mime_for_name:\n{text}");
    }
    println!("xtask: removing shim_jail::mime_for_name fails the API check, as it must");
    let _ = std::fs::remove_dir_all(&copy);
    Ok(())
}

/// `git archive REV` unpacked into `dest` (emptied first).
fn export_tree(root: &Path, rev: &str, dest: &Path) -> Result<()> {
    if dest.exists() {
        std::fs::remove_dir_all(dest)
            .with_context(|| format!("cannot clear {}", dest.display()))?;
    }
    std::fs::create_dir_all(dest)?;
    let status = Command::new("sh")
        .arg("-c")
        .arg("git archive --format=tar \"$1\" | tar -x -C \"$0\"")
        .arg(dest)
        .arg(rev)
        .current_dir(root)
        .status()
        .context("cannot run git archive")?;
    check(status, &format!("git archive {rev} | tar -x"))
}

/// The rustdoc JSON of `krate` (its library, default features) in the workspace of
/// `manifest`, built in `root`'s target directory and copied into `out_dir`.
fn rustdoc_json(root: &Path, manifest: &Path, krate: &str, out_dir: &Path) -> Result<PathBuf> {
    let xtask = std::env::current_exe().context("cannot find the xtask executable")?;
    let target = crate::dist::default_target_dir(root);
    let status = Command::new(cargo_bin())
        .args(["doc", "--quiet", "--no-deps", "--lib", "-p", krate])
        .arg("--manifest-path")
        .arg(manifest)
        .env("CARGO_TARGET_DIR", &target)
        .env("RUSTDOC", &xtask)
        .env(RUSTDOC_WRAPPER_ENV, "1")
        .env("RUSTDOCFLAGS", JSON_RUSTDOCFLAGS)
        .status()
        .context("cannot run cargo doc")?;
    check(
        status,
        &format!(
            "cargo doc (rustdoc JSON) of {krate} in {}",
            manifest.display()
        ),
    )?;
    let name = format!("{}.json", krate.replace('-', "_"));
    std::fs::create_dir_all(out_dir)?;
    let out = out_dir.join(&name);
    std::fs::copy(target.join("doc").join(&name), &out)
        .with_context(|| format!("rustdoc wrote no {name}"))?;
    Ok(out)
}

/// `cargo semver-checks` of one crate's rustdoc JSON against a baseline's.
fn semver_checks(baseline: &Path, current: &Path) -> Command {
    let mut cmd = Command::new(cargo_bin());
    cmd.args(["semver-checks", "check-release", "--baseline-rustdoc"])
        .arg(baseline)
        .arg("--current-rustdoc")
        .arg(current);
    cmd
}
