#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn tokens_are_32_url_safe_characters_and_unique() {
    let a = token();
    assert_eq!(a.len(), 32);
    assert!(
        a.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );
    assert_ne!(a, token());
}

#[test]
fn names_the_browser_skips() {
    assert!(acceptable_name("Projects"));
    assert!(acceptable_name("Résumé 2024"));
    for bad in [
        "",
        "a\u{0}b",
        "tab\there",
        "zero\u{200b}width",
        "a<b",
        "a>b",
        "\u{e000}private",
    ] {
        assert!(!acceptable_name(bad), "{bad:?}");
    }
}

#[cfg(unix)]
#[test]
fn scan_lists_real_directories_sorted_case_insensitively() {
    let dir = tempfile::tempdir().unwrap();
    for d in ["beta", "Alpha", "gamma"] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
    }
    std::fs::write(dir.path().join("file"), "x").unwrap();
    std::os::unix::fs::symlink(dir.path().join("beta"), dir.path().join("link")).unwrap();
    std::fs::create_dir_all(dir.path().join("gamma").join("grandchild")).unwrap();
    let (items, truncated) = scan(dir.path()).unwrap();
    let names: Vec<String> = items.iter().map(|p| display_name(p)).collect();
    assert_eq!(names, vec!["Alpha", "beta", "gamma"]);
    assert!(!truncated);
    assert!(scan(&dir.path().join("missing")).is_none());
}

#[cfg(unix)]
#[test]
fn special_roots_and_symlinks_are_not_usable() {
    assert!(usable_dir(Path::new("/proc")).is_none());
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
    assert!(usable_dir(&dir.path().join("link")).is_none());
    assert_eq!(
        usable_dir(&real),
        Some(std::fs::canonicalize(&real).unwrap())
    );
}

#[test]
fn virtual_roots_start_with_home() {
    let dir = tempfile::tempdir().unwrap();
    let roots = virtual_roots(Some(dir.path()));
    assert_eq!(roots[0], std::fs::canonicalize(dir.path()).unwrap());
    assert!(virtual_roots(None).is_empty() || virtual_roots(None).len() <= PAGE);
}

/// Issue 27 point 6: the volumes under a mount parent (`/Volumes` on macOS) are roots: the
/// directories, sorted and canonical; the boot volume's link to `/`, hidden entries and
/// plain files are not.
#[cfg(unix)]
#[test]
fn the_volumes_under_a_mount_parent_are_roots_without_links_and_hidden_entries() {
    let parent = tempfile::tempdir().unwrap();
    for name in ["Backup", "Archive 2024", ".timemachine"] {
        std::fs::create_dir(parent.path().join(name)).unwrap();
    }
    std::os::unix::fs::symlink("/", parent.path().join("Macintosh HD")).unwrap();
    std::fs::write(parent.path().join("file"), b"x").unwrap();
    let canon = std::fs::canonicalize(parent.path()).unwrap();
    assert_eq!(
        mounts_under(parent.path()),
        [canon.join("Archive 2024"), canon.join("Backup")]
    );
    assert!(mounts_under(&parent.path().join("absent")).is_empty());
}

#[test]
fn a_reference_used_at_exactly_expires_at_is_expired() {
    // 13.11: `expires_at` itself is already past the deadline.
    let mut st = State::default();
    let browse = |expires_at| Browse {
        expires_at,
        used: 0,
        refs: HashMap::new(),
        cursors: HashMap::new(),
    };
    st.browses.insert("at".to_owned(), browse(100.0));
    st.browses.insert("later".to_owned(), browse(100.5));
    st.evict_expired(100.0);
    assert!(!st.browses.contains_key("at"));
    assert!(st.browses.contains_key("later"));
}

#[test]
fn windows_system_folders_are_recognised_in_any_case() {
    for n in [
        "Windows",
        "PROGRAM FILES",
        "Program Files (x86)",
        "ProgramData",
        "$Recycle.Bin",
    ] {
        assert!(windows_system_name(n), "{n}");
    }
    for n in ["Users", "Windows2", "Programs", "data"] {
        assert!(!windows_system_name(n), "{n}");
    }
}
