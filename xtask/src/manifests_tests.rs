use std::collections::BTreeMap;

use super::*;

fn sums(triples: &[(&str, &str)]) -> BTreeMap<String, String> {
    triples
        .iter()
        .enumerate()
        .map(|(i, (t, ext))| {
            (
                format!("autogpt-shim-1.2.0-{t}.{ext}"),
                format!("{i}").repeat(64),
            )
        })
        .collect()
}

fn find<'a>(files: &'a [(String, String)], name: &str) -> Option<&'a str> {
    files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
}

#[test]
fn every_platform_gets_its_url_and_sum() {
    let s = sums(&[
        ("aarch64-apple-darwin", "tar.gz"),
        ("x86_64-apple-darwin", "tar.gz"),
        ("aarch64-unknown-linux-gnu", "tar.gz"),
        ("x86_64-unknown-linux-gnu", "tar.gz"),
        ("x86_64-pc-windows-gnu", "zip"),
    ]);
    let files = render("1.2.0", &s);
    assert_eq!(files.len(), FILES.len());
    let rb = find(&files, "autogpt-shim.rb").unwrap();
    for (name, sum) in &s {
        if name.ends_with(".tar.gz") {
            assert!(
                rb.contains(&format!(
                    "url \"{DOWNLOAD_BASE}/v1.2.0/{name}\"\n      sha256 \"{sum}\""
                )),
                "{name} in\n{rb}"
            );
        }
    }
    assert!(rb.contains("version \"1.2.0\""), "{rb}");
    assert!(
        rb.contains("on_macos do") && rb.contains("on_linux do"),
        "{rb}"
    );
    // Every `do` has its `end` (the class's own `end` closes the class).
    assert_eq!(
        rb.matches(" do\n").count() + 3,
        rb.lines().filter(|l| l.trim() == "end").count(),
        "{rb}"
    );

    let scoop: serde_json::Value =
        serde_json::from_str(find(&files, "autogpt-shim.scoop.json").unwrap()).unwrap();
    assert_eq!(scoop["version"], "1.2.0");
    let x64 = &scoop["architecture"]["64bit"];
    assert_eq!(x64["hash"], "4".repeat(64));
    assert_eq!(
        x64["url"],
        format!("{DOWNLOAD_BASE}/v1.2.0/autogpt-shim-1.2.0-x86_64-pc-windows-gnu.zip")
    );
    assert_eq!(
        x64["extract_dir"],
        "autogpt-shim-1.2.0-x86_64-pc-windows-gnu"
    );

    let inst = find(&files, "AutoGPT.LocalExecutor.installer.yaml").unwrap();
    assert!(
        inst.contains(&format!("InstallerSha256: {}\n", "4".repeat(64))),
        "{inst}"
    );
    assert!(inst.contains("PackageVersion: 1.2.0\n"), "{inst}");
    assert!(
        inst.contains("autogpt-shim-1.2.0-x86_64-pc-windows-gnu\\autogpt-shim.exe"),
        "{inst}"
    );
    for f in &files {
        if f.0.ends_with(".yaml") {
            assert!(
                f.1.contains("PackageIdentifier: AutoGPT.LocalExecutor\n"),
                "{}",
                f.0
            );
            assert!(f.1.contains("ManifestVersion: 1.6.0\n"), "{}", f.0);
        }
    }
}

#[test]
fn platforms_without_an_archive_are_left_out() {
    // What CI's dist run builds: Linux x86_64 only.
    let files = render("1.2.0", &sums(&[("x86_64-unknown-linux-gnu", "tar.gz")]));
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["autogpt-shim.rb"]);
    let rb = &files[0].1;
    assert!(!rb.contains("on_macos") && !rb.contains("on_arm"), "{rb}");
    assert!(rb.contains("on_intel do"), "{rb}");
    assert!(render("1.2.0", &BTreeMap::new()).is_empty());
}

#[test]
fn sums_come_from_the_sha256_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path()
            .join("autogpt-shim-1.2.0-x86_64-unknown-linux-gnu.tar.gz.sha256"),
        format!(
            "{}  autogpt-shim-1.2.0-x86_64-unknown-linux-gnu.tar.gz\n",
            "a".repeat(64)
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("autogpt-shim.scoop.json"), "stale").unwrap();
    let written = write(dir.path(), "1.2.0").unwrap();
    assert_eq!(written, ["autogpt-shim.rb"]);
    assert!(
        !dir.path().join("autogpt-shim.scoop.json").exists(),
        "stale manifest removed"
    );
    let rb = std::fs::read_to_string(dir.path().join("autogpt-shim.rb")).unwrap();
    assert!(rb.contains(&"a".repeat(64)), "{rb}");
}
