//! Where the commands' private temporary directories live: one directory per daemon
//! process (`$TMPDIR/autogpt-shim-cmds-XXXXXX`, mode 0700), in it one directory per chat
//! folder (`f-XXXXXX`), and each command's own directory inside that.
//!
//! Why one per folder: the Landlock ruleset grants write access to the folder's directory,
//! so it is built once per folder and reused by every command (`confine.rs`); building it
//! per command cost about 0.3 ms. Commands of one folder can reach each other's temporary
//! directories while they run, which gives them nothing new: they can already write the
//! folder they share. Commands of another folder cannot.
//!
//! Why not straight in `/tmp`: the sandbox caches its rules until one of the directories
//! it lists to hide the home changes (`confine.rs`). With the home below `/tmp`, a
//! directory made and removed there for every command changed `/tmp` every time, and each
//! command paid for listing and opening all of `/tmp` again (about 30 ms with 2,800
//! entries). Inside a per-daemon parent, `/tmp` itself does not change.
//!
//! The parent holds an exclusive lock on its `.lock` file for as long as the daemon lives.
//! A daemon that was killed cannot remove its parent; the next one to make a parent removes
//! every parent of this user whose lock is free.

use std::fs::File;
use std::io;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

const PARENT_PREFIX: &str = "autogpt-shim-cmds-";
const LOCK_FILE: &str = ".lock";

/// A parent younger than this is never swept: its daemon may not hold the lock yet.
const SWEEP_MIN_AGE: Duration = Duration::from_secs(60);

struct Parent {
    path: PathBuf,
    /// Locked while this process lives (the lock ends with the descriptor).
    _lock: File,
}

static PARENT: Mutex<Option<Parent>> = Mutex::new(None);

/// A new directory (mode 0700) for one chat folder's commands, inside this process's
/// parent; it lives until the parent is removed.
pub(crate) fn folder_root() -> io::Result<PathBuf> {
    let mut guard = PARENT.lock().unwrap_or_else(|p| p.into_inner());
    let parent = match guard.take() {
        // Someone removed it (a /tmp cleaner): make a new one.
        Some(p) if p.path.is_dir() => p,
        _ => make_parent(&std::env::temp_dir())?,
    };
    let made = tempfile::Builder::new()
        .prefix("f-")
        .permissions(owner_only())
        .tempdir_in(&parent.path)
        .map(tempfile::TempDir::keep);
    *guard = Some(parent);
    made
}

/// A new private temporary directory for one command (mode 0700) in `root` (a
/// [`folder_root`]), removed when the returned value is dropped.
pub(crate) fn create_in(root: &Path) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("cmd-")
        .permissions(owner_only())
        .tempdir_in(root)
}

/// Removes this process's parent directory (a clean stop, after every command ended).
pub(crate) fn remove_parent() {
    let taken = PARENT.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(p) = taken {
        let _ = std::fs::remove_dir_all(&p.path);
    }
}

fn make_parent(tmp: &Path) -> io::Result<Parent> {
    sweep(tmp);
    let dir = tempfile::Builder::new()
        .prefix(PARENT_PREFIX)
        .permissions(owner_only())
        .tempdir_in(tmp)?;
    let lock = File::create(dir.path().join(LOCK_FILE))?;
    lock.try_lock().map_err(|e| match e {
        std::fs::TryLockError::Error(e) => e,
        std::fs::TryLockError::WouldBlock => io::Error::other("the new lock is already held"),
    })?;
    Ok(Parent {
        path: dir.keep(),
        _lock: lock,
    })
}

fn owner_only() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o700)
}

/// Removes the parents in `tmp` that belong to this user and no live process holds.
fn sweep(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(PARENT_PREFIX) {
            continue;
        }
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age >= SWEEP_MIN_AGE);
        if !meta.is_dir() || meta.uid() != me || !old {
            continue;
        }
        let Ok(lock) = File::open(path.join(LOCK_FILE)) else {
            continue;
        };
        if lock.try_lock().is_ok() {
            tracing::debug!(path = %path.display(), "removing a killed daemon's command temporary directories");
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_whose_lock_is_free_is_swept_and_a_held_one_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let held = make_parent(tmp.path()).unwrap();
        let dead = make_parent(tmp.path()).unwrap();
        let dead_path = dead.path.clone();
        drop(dead);
        // Both are younger than the minimum age: nothing is swept yet.
        sweep(tmp.path());
        assert!(dead_path.is_dir() && held.path.is_dir());
        let long_ago = std::time::SystemTime::now() - 2 * SWEEP_MIN_AGE;
        for p in [&dead_path, &held.path] {
            File::open(p).unwrap().set_modified(long_ago).unwrap();
        }
        sweep(tmp.path());
        assert!(!dead_path.exists(), "the killed daemon's parent stays");
        assert!(held.path.is_dir(), "a live daemon's parent was removed");
    }

    #[test]
    fn command_directories_are_private_and_go_with_their_value() {
        let root = folder_root().unwrap();
        let dir = create_in(&root).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let parent = root.parent().unwrap().to_owned();
        assert_eq!(dir.path().parent(), Some(root.as_path()));
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&parent), 0o700);
        assert!(
            parent
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(PARENT_PREFIX)
        );
        let path = dir.path().to_owned();
        drop(dir);
        assert!(!path.exists());
        assert!(
            root.is_dir(),
            "the folder's directory is kept for the next command"
        );
    }
}
