use std::path::Path;

use super::*;

#[test]
fn versions_and_architectures_map_to_rpm_names() {
    assert_eq!(rpm_version("0.3.0"), "0.3.0");
    assert_eq!(rpm_version("1.2.0-rc.1"), "1.2.0~rc.1");
    assert_eq!(rpm_arch("x86_64-unknown-linux-gnu"), Some("x86_64"));
    assert_eq!(rpm_arch("aarch64-unknown-linux-gnu"), Some("aarch64"));
    assert_eq!(rpm_arch("x86_64-pc-windows-gnu"), None);
}

#[test]
fn the_spec_lists_every_packaged_file_with_its_mode() {
    let s = spec("0.3.0", Path::new("/tmp/stage"));
    assert!(s.contains("Version: 0.3.0\n"), "{s}");
    assert!(
        s.contains("%attr(0755,root,root) /usr/bin/autogpt-shim\n"),
        "{s}"
    );
    assert!(
        s.contains("%attr(0644,root,root) /usr/lib/systemd/user/autogpt-shim.service\n"),
        "{s}"
    );
    assert_eq!(s.matches("%attr(").count(), crate::deb::PACKAGE_FILES.len());
    assert!(s.contains("cp -a '/tmp/stage/.'"), "{s}");
}

/// Two builds of the same files at different paths give the same bytes (dist's `repro`
/// compares the .rpm too). Needs rpmbuild (Debian package rpm), else skipped with a message.
#[test]
fn the_rpm_is_the_same_from_two_folders() {
    if Command::new("rpmbuild").arg("--version").output().is_err() {
        eprintln!("SKIP the_rpm_is_the_same_from_two_folders: rpmbuild is not installed");
        return;
    }
    let build = |name: &str| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(name);
        let bins = root.join("bins");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(&bins).unwrap();
        std::fs::write(root.join("README.md"), "readme\n").unwrap();
        std::fs::write(root.join("docs/install-linux.md"), "install\n").unwrap();
        std::fs::write(bins.join("autogpt-shim"), "daemon\n").unwrap();
        std::fs::write(bins.join("shim-audit"), "audit\n").unwrap();
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let rpm = build_rpm(
            &root,
            &bins,
            &out,
            "x86_64-unknown-linux-gnu",
            "0.3.0",
            1_700_000_000,
        )
        .unwrap()
        .unwrap();
        let summary = check_rpm(&rpm, "0.3.0").unwrap();
        assert!(summary.contains("5 files"), "{summary}");
        (dir, std::fs::read(rpm).unwrap())
    };
    let (_a, first) = build("a");
    let (_b, second) = build("a-longer-folder-name");
    assert!(first == second, "the two .rpm files differ");
}
