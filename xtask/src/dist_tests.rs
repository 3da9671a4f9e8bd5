#![allow(clippy::unwrap_used)]

use super::*;

/// Test double for the release binary: a shell script that answers `--version` like
/// `autogpt-shim` does (the real binary is checked by `dist` itself, which runs the
/// unpacked release build).
const FAKE_SHIM: &[u8] = b"#!/bin/sh\necho \"autogpt-shim 9.9.9 $1\"\n";

fn files() -> Vec<(String, Vec<u8>, bool)> {
    vec![
        ("autogpt-shim".into(), FAKE_SHIM.to_vec(), true),
        (
            "README.md".into(),
            "# Zoë & <co>\n".as_bytes().to_vec(),
            false,
        ),
    ]
}

#[cfg(unix)]
#[test]
fn tar_gz_round_trip_keeps_contents_and_the_executable_bit() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let archive = write_archive(dir.path(), "pkg-1", Format::TarGz, &files()).unwrap();
    assert_eq!(archive.file_name().unwrap(), "pkg-1.tar.gz");
    let dest = dir.path().join("unpacked");
    std::fs::create_dir(&dest).unwrap();
    unpack(&archive, Format::TarGz, &dest).unwrap();
    let bin = dest.join("pkg-1/autogpt-shim");
    assert_eq!(std::fs::read(&bin).unwrap(), FAKE_SHIM);
    assert_eq!(
        std::fs::metadata(&bin).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let out = Command::new(&bin).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "autogpt-shim 9.9.9 --version\n"
    );
    assert_eq!(
        std::fs::read_to_string(dest.join("pkg-1/README.md")).unwrap(),
        "# Zoë & <co>\n"
    );
    // No partial file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.to_string_lossy().contains("partial"))
    );
}

#[test]
fn zip_round_trip_and_identical_inputs_give_identical_archives() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_archive(dir.path(), "pkg-1", Format::Zip, &files()).unwrap();
    let first = std::fs::read(&a).unwrap();
    let a = write_archive(dir.path(), "pkg-1", Format::Zip, &files()).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), first, "reproducible zip");
    let dest = dir.path().join("unpacked");
    std::fs::create_dir(&dest).unwrap();
    unpack(&a, Format::Zip, &dest).unwrap();
    assert_eq!(
        std::fs::read(dest.join("pkg-1/autogpt-shim")).unwrap(),
        FAKE_SHIM
    );
    let t1 = write_archive(dir.path(), "pkg-2", Format::TarGz, &files()).unwrap();
    let b1 = std::fs::read(&t1).unwrap();
    let t2 = write_archive(dir.path(), "pkg-2", Format::TarGz, &files()).unwrap();
    assert_eq!(std::fs::read(&t2).unwrap(), b1, "reproducible tar.gz");
}

#[test]
fn sums_are_sha256sum_compatible() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_archive(dir.path(), "pkg", Format::TarGz, &files()).unwrap();
    write_sum(&a).unwrap();
    let line = std::fs::read_to_string(dir.path().join("pkg.tar.gz.sha256")).unwrap();
    assert_eq!(line, format!("{}  pkg.tar.gz\n", sha256_hex(&a).unwrap()));
    // The known SHA-256 of "abc" (FIPS 180-2), so the hex is the real digest.
    let abc = dir.path().join("abc");
    std::fs::write(&abc, "abc").unwrap();
    assert_eq!(
        sha256_hex(&abc).unwrap(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    // And sha256sum itself accepts the file, where it exists.
    if let Ok(out) = Command::new("sha256sum")
        .args(["-c", "pkg.tar.gz.sha256"])
        .current_dir(dir.path())
        .output()
    {
        assert!(out.status.success(), "{out:?}");
    }
}

#[test]
fn each_target_ships_its_own_install_page() {
    assert_eq!(
        install_page("x86_64-pc-windows-gnu"),
        "docs/install-windows.md"
    );
    assert_eq!(
        install_page("aarch64-apple-darwin"),
        "docs/install-macos.md"
    );
    assert_eq!(
        install_page("aarch64-unknown-linux-gnu"),
        "docs/install-linux.md"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for (t, ..) in DIST_TARGETS {
        assert!(root.join(install_page(t)).is_file(), "{t}");
    }
}

#[test]
fn the_checker_source_is_cut_out_of_install_ps1() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let script = std::fs::read_to_string(root.join("install.ps1")).unwrap();
    let source = crate::installer::ps1_checker_source(&script).unwrap();
    assert!(source.starts_with("using System;"), "{source:.40}");
    assert!(source.contains("public static string Verify("));
    assert!(source.trim_end().ends_with('}'));
    assert!(crate::installer::ps1_checker_source("no here-string").is_err());
    assert!(crate::installer::ps1_checker_source("$VerifierSource = @'\nusing System;").is_err());
}

#[test]
fn the_installers_trust_the_release_key_of_shim_release() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for (file, prefix, quote) in [
        ("install.sh", "RELEASE_KEY=", '"'),
        ("install.ps1", "$ReleaseKey = ", '\''),
    ] {
        let script = std::fs::read_to_string(root.join(file)).unwrap();
        let line = script
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{file} sets {prefix}"));
        let key = line.trim_start_matches(prefix).trim_matches(quote);
        assert_eq!(
            key,
            shim_release::RELEASE_PUBLIC_KEY.unwrap_or(""),
            "{file} and shim_release::RELEASE_PUBLIC_KEY must name the same key"
        );
    }
}

#[test]
fn signed_sums_verify_and_a_changed_byte_does_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("SHA256SUMS"), "00  a.tar.gz\n").unwrap();
    let key = SecretKey::generate().unwrap();
    let checked = sign_sums(dir.path(), &key, 1_700_000_000).unwrap();
    let sig = std::fs::read_to_string(dir.path().join("SHA256SUMS.minisig")).unwrap();
    assert_eq!(
        shim_release::verify(&key.public(), b"00  a.tar.gz\n", &sig).unwrap(),
        "timestamp:1700000000\tfile:SHA256SUMS\thashed"
    );
    assert!(shim_release::verify(&key.public(), b"01  a.tar.gz\n", &sig).is_err());
    // Where minisign is installed, sign_sums had it check the file too.
    if checked.contains("minisign -V") {
        std::fs::write(dir.path().join("SHA256SUMS"), "01  a.tar.gz\n").unwrap();
        assert!(minisign_verify(dir.path(), &key.public()).is_err());
    }
}

#[test]
fn the_remap_flags_hide_the_workspace_and_target_paths() {
    let flags = remap_flags(Path::new("/home/u/src/shim"), Path::new("/tmp/t"));
    assert!(flags.contains(&"--remap-path-prefix=/home/u/src/shim=/build".to_owned()));
    // The more specific target folder comes after the workspace (the last match wins).
    assert_eq!(
        flags.last().unwrap(),
        "--remap-path-prefix=/tmp/t=/build/target"
    );
}

#[test]
fn build_paths_inside_shipped_files_are_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bin"),
        b"\x7fELF..panicked at /home/u/src/shim/crates/x.rs\0",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), b"/build/crates/x.rs").unwrap();
    let paths = ["/home/u/src/shim".to_owned(), "/root/.cargo".to_owned()];
    assert_eq!(
        build_paths_in(dir.path(), &paths).unwrap(),
        [("bin".to_owned(), "/home/u/src/shim".to_owned())]
    );
}
