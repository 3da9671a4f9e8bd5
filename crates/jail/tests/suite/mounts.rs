//! 4.9, 10.2, 11.3 with a real mount point inside the root (tmpfs). Needs permission to
//! mount (root in a container); skipped with a message otherwise.

use shim_jail::DeleteOptions;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[allow(clippy::print_stderr)]
fn mount_tmpfs(at: &std::path::Path) -> Option<Mount> {
    std::fs::create_dir_all(at).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "none"])
        .arg(at)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(Mount(at.to_path_buf()))
    } else {
        eprintln!("skipped: cannot mount tmpfs here");
        None
    }
}

#[test]
fn cross_device_move_copies_then_deletes() {
    let fx = Fx::new();
    let Some(_m) = mount_tmpfs(&fx.at("mnt")) else {
        return;
    };
    fx.file("tree/sub/f.txt", "hello");
    fx.link("tree/sub/l", "../../outside");
    std::fs::set_permissions(
        fx.at("tree/sub/f.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    let mtime = std::fs::metadata(fx.at("tree/sub/f.txt"))
        .unwrap()
        .modified()
        .unwrap();
    fx.jail
        .rename(&fx.p("tree"), &fx.p("mnt/tree"), &MoveOptions::default())
        .unwrap();
    assert!(!fx.at("tree").exists());
    let f = fx.at("mnt/tree/sub/f.txt");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "hello");
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777,
        0o640
    );
    assert_eq!(m.modified().unwrap(), mtime);
    assert_eq!(
        std::fs::read_link(fx.at("mnt/tree/sub/l")).unwrap(),
        std::path::PathBuf::from("../../outside")
    );
    // A single file across, over an existing destination (set-aside path).
    fx.file("g.txt", "G");
    fx.file("mnt/g.txt", "old");
    fx.jail
        .rename(
            &fx.p("g.txt"),
            &fx.p("mnt/g.txt"),
            &MoveOptions { overwrite: true },
        )
        .unwrap();
    assert_eq!(std::fs::read_to_string(fx.at("mnt/g.txt")).unwrap(), "G");
    assert!(!fx.at("g.txt").exists());
    let leftovers = std::fs::read_dir(fx.at("mnt"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".~agpt")
        })
        .count();
    assert_eq!(leftovers, 0);
    fx.assert_outside_untouched();
}

// mknodat is Linux-only in rustix.
#[cfg(target_os = "linux")]
#[test]
fn cross_device_move_of_a_fifo_fails_and_leaves_src() {
    let fx = Fx::new();
    let Some(_m) = mount_tmpfs(&fx.at("mnt")) else {
        return;
    };
    fx.file("t/a.txt", "a");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.at("t/zz"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert_eq!(
        code(
            fx.jail
                .rename(&fx.p("t"), &fx.p("mnt/t"), &MoveOptions::default())
        ),
        ErrorCode::InternalError
    );
    assert!(fx.at("t/a.txt").exists());
    assert!(!fx.at("mnt/t").exists());
}

#[test]
fn recursive_delete_does_not_cross_into_another_device() {
    let fx = Fx::new();
    fx.file("d/a.txt", "a");
    let Some(_m) = mount_tmpfs(&fx.at("d/zmnt")) else {
        return;
    };
    std::fs::write(fx.at("d/zmnt/kept.txt"), b"k").unwrap();
    let e = fx
        .jail
        .delete(
            &fx.p("d"),
            &DeleteOptions {
                recursive: true,
                missing_ok: false,
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InternalError);
    assert!(
        !fx.at("d/a.txt").exists(),
        "entries already removed stay removed"
    );
    assert!(fx.at("d/zmnt/kept.txt").exists());
    // Listing descends mount points (incumbent parity).
    let r = fx
        .jail
        .list(
            &fx.p("d"),
            &ListOptions {
                recursive: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(r.entries.iter().any(|e| e.name == "kept.txt"));
}
